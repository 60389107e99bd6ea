"""A point in a 2-D maze of line-segment walls, with a settable start and goal.

The continuous host of goal curricula (SVGG's point mazes, reverse curriculum) and a
GoalTaskEnv for DQN + HER.

World: the unit square [0, 1]^2, x to the right and y upwards, closed by its four
sides. Inside walls are line segments of zero thickness (static config: a name in
`LAYOUTS` or a sequence of ((x0, y0), (x1, y1)) segments). The default `u_maze` has one
wall from (0, 0.5) to (0.7, 0.5): the free space is a U lying on its side, the default
start (0.15, 0.25) and goal (0.15, 0.75) are 0.5 apart in a straight line and about 1.6
apart by path (32+ steps of 0.05).

Actions: Discrete(9): 0 stays, action k in 1..8 moves `step_size` (default 0.05) in
direction (k - 1) * 45 degrees (1 right, 3 up, 5 left, 7 down). Collisions: a move that
would cross a wall (the arena's sides included) stops on the near side, `SKIN` = 1e-3
(measured along the move) before the first crossing; the point does not slide along
the wall. The crossing test compares on which side of each segment's line the two ends
of the move lie (a move along a wall's own line stops at the wall's end), so a point
never passes through a wall: it can only end up on a wall's line beyond the wall's
end, and the skin keeps it off the wall itself. For axis-aligned walls (all built-in
layouts) a side test is the sign of a coordinate difference, exact in float32; slanted
walls rely on float rounding very near their line.

Valid positions (for starts and goals): inside the square and at least
`goal_tolerance` away from every wall, sides included. That margin keeps a goal's
tolerance disc free of walls, so a goal is never "reached" from the other side of a
thin wall. Task [4] = (start x, start y, goal x, goal y); `task_to_params` keeps a valid
point as it is and maps an invalid one (outside, or too close to a wall) to the
nearest valid centre of a SNAP_GRID x SNAP_GRID grid over the square (precomputed).
With `invalid_goal="keep"` an invalid goal is kept instead and can never be reached: the
episode runs to its time limit, as an infeasible task does in TeachMyAgent.
A wall layout whose free space falls into pieces makes valid but unreachable points:
a layout's free space should be one region (not checked).

Observation [4] float32 = (x, y, goal x, goal y); `achieved_goal` is obs[..., :2],
`desired_goal` obs[..., 2:].

Reward (HER-style, -1/0): after each step, 0 if the point is within `goal_tolerance`
(Euclidean, inclusive) of the goal, else -1; the episode terminates on that step. A
start inside the goal's disc is not terminal at reset: the first step is scored like
any other. Truncation after `max_episode_steps` (default 100). Success = return >
-max_episode_steps (threshold -max_episode_steps + 0.5); return bounds
(-max_episode_steps, 0).

Helpers: `is_valid_position`, `valid_position` (the task mapping), `goal_grid` (valid
cell centres of a regular grid, for the "success coverage" metric),
`sample_valid_goals`, `render`.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from acl.core.spaces import UNIT, Box
from envs._checks import positive_int
from envs.base import GoalTaskEnv, PositionGoalObservation, StartTaskEnv
from envs.registry import ENVS

SOLIDS: dict[str, tuple[tuple[float, float, float, float], ...]] = {
    # Florensa et al. 2017's point-mass U-maze (rllab-curriculum, maze_id 0): a 5 x 5
    # block structure of 2-unit blocks whose free space is 3 x 3 blocks, a 6 x 6 unit
    # arena. Scaled to the unit square the inner wall is the solid block
    # [0, 2/3] x [1/3, 2/3], and the three corridors are 1/3 wide.
    "florensa_u": ((0.0, 1 / 3, 2 / 3, 2 / 3),),
}
"""Solid blocks (x0, y0, x1, y1) of the layouts that have them: their edges are walls,
and no point inside one is valid."""


def _block_edges(x0: float, y0: float, x1: float, y1: float):
    return (((x0, y0), (x1, y0)), ((x1, y0), (x1, y1)), ((x1, y1), (x0, y1)), ((x0, y1), (x0, y0)))


LAYOUTS: dict[str, tuple[tuple[tuple[float, float], tuple[float, float]], ...]] = {
    "u_maze": (((0.0, 0.5), (0.7, 0.5)),),
    "open": (),
    "s_maze": (((0.0, 1 / 3), (0.7, 1 / 3)), ((0.3, 2 / 3), (1.0, 2 / 3))),
    "florensa_u": tuple(edge for block in SOLIDS["florensa_u"] for edge in _block_edges(*block)),
}
"""Inner walls of the built-in layouts; the square's sides are always walls."""

DEFAULT_TASKS: dict[str, tuple[float, float, float, float]] = {
    "u_maze": (0.15, 0.25, 0.15, 0.75),
    "open": (0.2, 0.2, 0.8, 0.8),
    "s_maze": (0.15, 0.15, 0.85, 0.85),
    # rllab-curriculum's start (0, 0) and goal (0, 4) in its units, i.e. the centres of
    # the U's two arms' closed ends: 2.0 apart along the U, 0.67 straight.
    "florensa_u": (1 / 6, 1 / 6, 1 / 6, 5 / 6),
}
"""Default (start x, start y, goal x, goal y) per layout; custom walls use "open"'s."""

PATH_GRID = 32
"""Resolution of the grid on which `start_distance` measures shortest paths."""

BOUNDARY = (
    ((0.0, 0.0), (1.0, 0.0)),
    ((1.0, 0.0), (1.0, 1.0)),
    ((1.0, 1.0), (0.0, 1.0)),
    ((0.0, 1.0), (0.0, 0.0)),
)
SKIN = 1e-3
"""Distance (along the move) a blocked move stops before the wall."""
SNAP_GRID = 64
"""Resolution of the grid of valid points that invalid task points map to."""
NUM_ACTIONS = 9
MARGIN_SLACK = 1e-6
"""Rounding slack of the valid-margin test, so points exactly goal_tolerance away count."""


@struct.dataclass
class StartGoalParams:
    """What a teacher may change: the start and the goal (both valid positions)."""

    start: jax.Array
    """[2] float32 (x, y)."""
    goal: jax.Array
    """[2] float32 (x, y)."""


PointMazeParams = StartGoalParams


@struct.dataclass
class PointMazeState:
    position: jax.Array
    """[2] float32 (x, y)."""
    time: jax.Array
    """Steps taken in this episode."""


def _cross(u: jax.Array, v: jax.Array) -> jax.Array:
    return u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]


def segment_distance(points, a, b):
    """Distance of points [..., 2] to segments a, b [S, 2] -> [..., S] (numpy or jax)."""
    xp = jnp if isinstance(points, jax.Array) else np
    e = b - a  # [S, 2]
    rel = points[..., None, :] - a  # [..., S, 2]
    length2 = xp.maximum(xp.sum(e * e, axis=-1), 1e-12)
    t = xp.clip(xp.sum(rel * e, axis=-1) / length2, 0.0, 1.0)
    return xp.linalg.norm(rel - t[..., None] * e, axis=-1)


def first_crossing(start: jax.Array, move: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
    """Fraction t in [0, 1] of `move` [2] from `start` [2] at which it first crosses a
    segment (a, b [S, 2]), or inf if it crosses none. Jittable.

    A crossing needs the end of the move on the other side of (or on) the segment's line
    from its start, strictly off the line; the meeting point must lie on the segment,
    endpoints included. A move along the segment's own line (both ends exactly on it,
    as for a point beside a wall's tip moving parallel to it) hits where it reaches the
    segment's nearer end.
    """
    e = b - a  # [S, 2]
    length2 = jnp.maximum(jnp.sum(e * e, axis=-1), 1e-12)
    side0 = _cross(e, start - a)
    side1 = _cross(e, start + move - a)
    crosses = ((side0 > 0) & (side1 <= 0)) | ((side0 < 0) & (side1 >= 0))
    t = side0 / jnp.where(crosses, side0 - side1, 1.0)
    point = start + t[:, None] * move
    u = jnp.sum((point - a) * e, axis=-1) / length2
    hit = crosses & (u >= 0.0) & (u <= 1.0)
    # Collinear moves: positions along the segment, 0 at a and 1 at b.
    u0 = jnp.sum((start - a) * e, axis=-1) / length2
    u1 = jnp.sum((start + move - a) * e, axis=-1) / length2
    du = jnp.where(u1 != u0, u1 - u0, 1.0)
    t_along = jnp.where(
        (u0 < 0.0) & (u1 >= 0.0),
        -u0 / du,
        jnp.where((u0 > 1.0) & (u1 <= 1.0), (1.0 - u0) / du, jnp.inf),
    )
    collinear = (side0 == 0.0) & (side1 == 0.0)
    t_hit = jnp.where(hit, t, jnp.where(collinear, t_along, jnp.inf))
    return jnp.min(t_hit)


def _grid_index(points, per_dim: int):
    """[..., 2] points of the unit square -> [...] flat index (row-major in y, then x)
    of their cell in a per_dim x per_dim grid."""
    xp = jnp if isinstance(points, jax.Array) else np
    ij = xp.clip(xp.floor(points * per_dim), 0, per_dim - 1).astype(xp.int32)
    return ij[..., 1] * per_dim + ij[..., 0]


def _segments_cross(p, q, a, b) -> np.ndarray:
    """Moves p -> q [M, 2] against walls a -> b [S, 2] -> [M] bool: the move meets a
    wall (touching counts)."""

    def orient(u, v, w):
        return np.sign(
            (v[..., 0] - u[..., 0]) * (w[..., 1] - u[..., 1])
            - (v[..., 1] - u[..., 1]) * (w[..., 0] - u[..., 0])
        )

    p, q = p[:, None], q[:, None]
    proper = (orient(p, q, a) != orient(p, q, b)) & (orient(a, b, p) != orient(a, b, q))
    return proper.any(-1)


def _grid_paths(valid_np, walls: np.ndarray, per_dim: int, step_length: float):
    """All-pairs shortest paths over the valid centres of a per_dim grid, 8-connected,
    an edge wherever the straight move between two valid neighbours meets no wall."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import dijkstra

    centres = (np.arange(per_dim) + 0.5) / per_dim
    grid = np.stack(np.meshgrid(centres, centres, indexing="xy"), -1).reshape(-1, 2)
    valid = valid_np(grid)
    index = np.full(len(grid), -1, np.int64)
    index[valid] = np.arange(valid.sum())
    rows, cols, costs = [], [], []
    for dx, dy in ((1, 0), (0, 1), (1, 1), (1, -1)):
        ix, iy = np.meshgrid(np.arange(per_dim), np.arange(per_dim), indexing="xy")
        jx, jy = ix + dx, iy + dy
        inside = (jx >= 0) & (jx < per_dim) & (jy >= 0) & (jy < per_dim)
        a = (iy * per_dim + ix)[inside]
        b = (jy * per_dim + jx)[inside]
        both = valid[a] & valid[b]
        a, b = a[both], b[both]
        clear = ~_segments_cross(grid[a], grid[b], walls[:, 0], walls[:, 1])
        rows.append(index[a[clear]])
        cols.append(index[b[clear]])
        costs.append(np.full(clear.sum(), np.hypot(dx, dy)))
    n = int(valid.sum())
    graph = coo_matrix(
        (np.concatenate(costs), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
    )
    table = dijkstra(graph.tocsr(), directed=False) / per_dim / step_length
    valid_points = grid[valid]
    nearest = np.argmin(((grid[:, None] - valid_points[None]) ** 2).sum(-1), axis=1)
    return table.astype(np.float32), nearest.astype(np.int32)


def _in_solid(points, solids):
    """[..., 2] points, [K, 4] blocks (x0, y0, x1, y1) -> [...] bool: inside a block."""
    xp = jnp if isinstance(points, jax.Array) else np
    if solids.shape[0] == 0:
        return xp.zeros(points.shape[:-1], bool)
    x, y = points[..., None, 0], points[..., None, 1]
    inside = (x >= solids[:, 0]) & (x <= solids[:, 2]) & (y >= solids[:, 1]) & (y <= solids[:, 3])
    return inside.any(-1)


def _check_walls(walls) -> np.ndarray:
    try:
        array = np.asarray(walls, np.float64).reshape(-1, 2, 2)
    except (TypeError, ValueError):
        raise ConfigError(
            f"env.walls must be a sequence of ((x0, y0), (x1, y1)) segments, got {walls!r}"
        ) from None
    if not np.all(np.isfinite(array)):
        raise ConfigError("env.walls: every coordinate must be finite")
    lengths = np.linalg.norm(array[:, 1] - array[:, 0], axis=-1)
    if np.any(lengths <= 0):
        raise ConfigError(
            f"env.walls: segment(s) {np.flatnonzero(lengths <= 0).tolist()} have length 0"
        )
    return array


class PlanarStartGoalTasks:
    """Tasks (start x, start y, goal x, goal y) in the unit square with walls: the task,
    goal and start protocols every planar goal env shares (point_maze, brax_goal).

    The host class sets `task_space`, `goal_tolerance` and `_snap` (the valid centres of a
    SNAP_GRID x SNAP_GRID grid, [M, 2]) and implements `_valid_np` / `is_valid_position`
    (what counts as clear of its walls)."""

    task_space: Box
    goal_tolerance: float
    _snap: np.ndarray
    invalid_goal: str = "snap"
    """What a task's invalid goal becomes: "snap", the nearest valid snap-grid centre (the
    default; SVGG relies on it); "keep", the goal as given, which no episode can reach, so
    that an infeasible goal costs a full episode (`max_episode_steps`)."""

    step_length: float
    """The farthest one env step moves the point: the unit of `start_distance`."""

    def start_distance(self, starts: jax.Array, task: jax.Array) -> jax.Array:
        """starts [..., 2], task [4] -> [...] float32: the shortest path from each start
        to the task's goal, in env steps (of `step_length`). Jittable.

        Measured on the 8-connected graph of the valid centres of a PATH_GRID x
        PATH_GRID grid (a point counts as its cell's nearest valid centre), so it is
        within a grid cell or so of the true shortest path; inf where there is none."""
        table, nearest = (jnp.asarray(a) for a in self._path_tables())
        start_cells = nearest[_grid_index(jnp.asarray(starts, jnp.float32), PATH_GRID)]
        goal_cell = nearest[_grid_index(jnp.asarray(task, jnp.float32)[2:4], PATH_GRID)]
        return table[start_cells, goal_cell]

    def _path_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """(distances [V, V] float32 in env steps between the V valid grid centres, the
        nearest valid centre [PATH_GRID ** 2] int32 of every grid cell); built once."""
        if getattr(self, "_paths", None) is None:
            self._paths = _grid_paths(self._valid_np, self.walls, PATH_GRID, self.step_length)
        return self._paths

    def valid_position(self, points: jax.Array) -> jax.Array:
        """[..., 2] -> [..., 2]: the point if valid, else the nearest valid snap-grid centre."""
        points = jnp.asarray(points, jnp.float32)
        snap = jnp.asarray(self._snap)
        d2 = jnp.sum((points[..., None, :] - snap) ** 2, axis=-1)
        nearest = snap[jnp.argmin(d2, axis=-1)]
        return jnp.where(self.is_valid_position(points)[..., None], points, nearest)

    def goal_grid(self, per_dim: int = 10) -> np.ndarray:
        """[M, 2] float32: the valid centres of a per_dim x per_dim grid over the square.

        The fixed set of goals of the "success coverage" metric.
        """
        positive_int(per_dim, "per_dim", allow_none=False)
        centres = (np.arange(per_dim) + 0.5) / per_dim
        grid = np.stack(np.meshgrid(centres, centres, indexing="xy"), -1).reshape(-1, 2)
        return grid[self._valid_np(grid)].astype(np.float32)

    def sample_valid_goals(self, key: jax.Array, n: int) -> jax.Array:
        """[n, 2] valid points, near-uniform over the valid region. Jittable.

        A uniform snap-grid centre plus uniform jitter within its grid cell; a jittered
        point that is not valid falls back to the centre.
        """
        pick_key, jitter_key = jax.random.split(key)
        snap = jnp.asarray(self._snap)
        centre = snap[jax.random.randint(pick_key, (n,), 0, snap.shape[0])]
        half = 0.5 / SNAP_GRID
        point = centre + jax.random.uniform(jitter_key, (n, 2), minval=-half, maxval=half)
        return jnp.where(self.is_valid_position(point)[:, None], point, centre)

    def task_for(self, start: jax.Array, goal: jax.Array) -> jax.Array:
        """start [..., 2], goal [..., 2] -> task [..., 4]."""
        return jnp.concatenate(
            [jnp.asarray(start, jnp.float32), jnp.asarray(goal, jnp.float32)], -1
        )

    def default_params(self) -> StartGoalParams:
        """The default task's params (its points are valid already)."""
        default = np.asarray(self.task_space.default, np.float32)
        return StartGoalParams(start=jnp.asarray(default[:2]), goal=jnp.asarray(default[2:]))

    def task_to_params(
        self, task: jax.Array, base_params: StartGoalParams | None
    ) -> StartGoalParams:
        """task [4] = (start x, start y, goal x, goal y) -> params (valid positions).

        The params hold nothing but the task, so `base_params` is not read.
        """
        del base_params
        task = jnp.asarray(task, jnp.float32)
        goal = task[2:4] if self.invalid_goal == "keep" else self.valid_position(task[2:4])
        return StartGoalParams(start=self.valid_position(task[:2]), goal=goal)

    # -- goal protocol -------------------------------------------------------------------

    def goal_reached(self, achieved: jax.Array, goal: jax.Array) -> jax.Array:
        near = jnp.linalg.norm(achieved - goal, axis=-1) <= self.goal_tolerance
        if self.invalid_goal == "keep":
            # A kept invalid goal may lie within reach through a thin wall: never reached.
            return near & self.is_valid_position(goal)
        return near

    def compute_reward(self, achieved: jax.Array, goal: jax.Array) -> jax.Array:
        return jnp.where(self.goal_reached(achieved, goal), 0.0, -1.0).astype(jnp.float32)

    def goal_from_task(self, task: jax.Array) -> jax.Array:
        """[..., 4] -> [..., 2]: the task's goal (x, y), as handed out (not mapped)."""
        return jnp.asarray(task)[..., 2:4]

    def task_with_goal(self, task: jax.Array, goal: jax.Array) -> jax.Array:
        """[..., 4], [..., 2] -> [..., 4]: the task with goal (x, y) replaced."""
        task = jnp.asarray(task)
        goal = jnp.broadcast_to(goal, task.shape[:-1] + (2,)).astype(task.dtype)
        return jnp.concatenate([task[..., :2], goal], axis=-1)

    # -- start protocol (reverse curriculum) ---------------------------------------------

    def task_with_start(self, task: jax.Array, start: jax.Array) -> jax.Array:
        """[..., 4], [..., 2] -> [..., 4]: the task with start (x, y) replaced."""
        task = jnp.asarray(task)
        start = jnp.broadcast_to(start, task.shape[:-1] + (2,)).astype(task.dtype)
        return jnp.concatenate([start, task[..., 2:4]], axis=-1)

    def goal_start(self, task: jax.Array) -> jax.Array:
        """[4] -> [2]: the goal (mapped to a valid position) as a start."""
        return self.valid_position(jnp.asarray(task, jnp.float32)[2:4])


@ENVS.register("point_maze")
class PointMaze(PlanarStartGoalTasks, PositionGoalObservation, GoalTaskEnv, StartTaskEnv):
    """A point in a maze of segment walls in [0, 1]^2; see the module docstring.

    Static config: `layout` (a name in LAYOUTS, default `u_maze`) or `walls` (inner
    segments, overriding the layout), `step_size` (0.05), `goal_tolerance` (0.05, also
    the valid margin from walls), `max_episode_steps` (100), `invalid_goal` ("snap" or
    "keep": what a task's invalid goal becomes, `PlanarStartGoalTasks.invalid_goal`).
    """

    name = "point_maze"
    goal_dim = 2
    terminates_on_goal = True
    start_dim = 2

    def __init__(
        self,
        layout: str = "u_maze",
        walls: Sequence | None = None,
        step_size: float = 0.05,
        goal_tolerance: float = 0.05,
        max_episode_steps: int | None = None,
        invalid_goal: str = "snap",
    ):
        if invalid_goal not in ("snap", "keep"):
            raise ConfigError(f"env.invalid_goal must be 'snap' or 'keep', got {invalid_goal!r}")
        self.invalid_goal = invalid_goal
        if walls is None:
            if layout not in LAYOUTS:
                close = difflib.get_close_matches(str(layout), sorted(LAYOUTS), n=1, cutoff=0.4)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ConfigError(
                    f"env.layout: unknown layout {layout!r}; {hint}named layouts: "
                    f"{', '.join(sorted(LAYOUTS))} (or pass env.walls)"
                )
            inner = _check_walls(LAYOUTS[layout]) if LAYOUTS[layout] else np.zeros((0, 2, 2))
            self.layout_name = layout
            solids = SOLIDS.get(layout, ())
        else:
            inner = _check_walls(walls) if len(walls) else np.zeros((0, 2, 2))
            self.layout_name = "custom"
            solids = ()
        self.solids = np.asarray(solids, np.float32).reshape(-1, 4)
        """[K, 4] solid blocks (x0, y0, x1, y1): no valid point inside (`SOLIDS`)."""
        for value, field in ((step_size, "env.step_size"), (goal_tolerance, "env.goal_tolerance")):
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 0.5:
                raise ConfigError(f"{field} must be a number in (0, 0.5), got {value!r}")
        self.step_size = float(step_size)
        self.step_length = self.step_size
        self.goal_tolerance = float(goal_tolerance)
        self.max_episode_steps = positive_int(max_episode_steps, "env.max_episode_steps") or 100
        self.inner_walls = inner.astype(np.float32)
        """[S, 2, 2] inner wall segments ((x0, y0), (x1, y1))."""
        self.walls = np.concatenate([inner, np.asarray(BOUNDARY)]).astype(np.float32)
        """[S + 4, 2, 2] every wall segment, the square's sides last."""
        angles = np.arange(NUM_ACTIONS - 1) * (np.pi / 4)
        directions = np.stack([np.cos(angles), np.sin(angles)], -1)
        self._moves = np.concatenate([np.zeros((1, 2)), directions * self.step_size]).astype(
            np.float32
        )  # [9, 2]

        centres = (np.arange(SNAP_GRID) + 0.5) / SNAP_GRID
        snap = np.stack(np.meshgrid(centres, centres, indexing="xy"), -1).reshape(-1, 2)
        snap = snap[self._valid_np(snap)].astype(np.float32)
        if len(snap) == 0:
            raise ConfigError(
                f"env.walls leave no valid position (>= goal_tolerance {goal_tolerance} from "
                "every wall)"
            )
        self._snap = snap

        default = DEFAULT_TASKS.get(self.layout_name, DEFAULT_TASKS["open"])
        default = np.asarray(default, np.float32).reshape(2, 2)
        nearest = snap[np.argmin(((default[:, None] - snap) ** 2).sum(-1), axis=1)]
        default = np.where(self._valid_np(default)[:, None], default, nearest).reshape(-1)
        self.task_space = Box(
            low=(0.0,) * 4,
            high=(1.0,) * 4,
            names=("start_x", "start_y", "goal_x", "goal_y"),
            units=("",) * 4,
            default=tuple(default.tolist()),
            limits=(UNIT,) * 4,
        )
        self.success_threshold = -self.max_episode_steps + 0.5
        self.return_bounds = (-float(self.max_episode_steps), 0.0)

    # -- validity ------------------------------------------------------------------------

    def _valid_np(self, points: np.ndarray) -> np.ndarray:
        points = np.asarray(points, np.float64)
        inside = np.all((points >= 0.0) & (points <= 1.0), axis=-1)
        far = segment_distance(points, self.walls[:, 0], self.walls[:, 1]).min(-1)
        clear = far >= self.goal_tolerance - MARGIN_SLACK
        return inside & clear & ~_in_solid(points, self.solids)

    def is_valid_position(self, points: jax.Array) -> jax.Array:
        """[..., 2] -> [...] bool: inside the square, >= goal_tolerance from every wall,
        outside every solid block."""
        points = jnp.asarray(points, jnp.float32)
        inside = jnp.all((points >= 0.0) & (points <= 1.0), axis=-1)
        walls = jnp.asarray(self.walls)
        far = segment_distance(points, walls[:, 0], walls[:, 1]).min(-1)
        solid = _in_solid(points, jnp.asarray(self.solids))
        return inside & (far >= self.goal_tolerance - MARGIN_SLACK) & ~solid

    # -- task and spaces -------------------------------------------------------------------

    def observation_space(self) -> spaces.Box:
        return spaces.Box(low=0.0, high=1.0, shape=(4,), dtype=jnp.float32)

    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(NUM_ACTIONS)

    # -- goal protocol -------------------------------------------------------------------

    # -- start protocol (reverse curriculum) ---------------------------------------------

    def start_from_state(self, state: PointMazeState) -> jax.Array:
        """State -> [2] (x, y) of the point."""
        return state.position

    # -- dynamics ------------------------------------------------------------------------

    def move(self, position: jax.Array, action: jax.Array) -> jax.Array:
        """[2] position, int action -> [2] position after the move, stopped at walls."""
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, NUM_ACTIONS - 1)
        delta = jnp.asarray(self._moves)[action]
        walls = jnp.asarray(self.walls)
        t = first_crossing(position, delta, walls[:, 0], walls[:, 1])
        # Stop SKIN short of the first crossing (never backwards); no crossing: full move.
        frac = jnp.where(jnp.isinf(t), 1.0, jnp.clip(t - SKIN / self.step_size, 0.0, 1.0))
        return jnp.clip(position + frac * delta, 0.0, 1.0)

    def reset(self, key: jax.Array, params: PointMazeParams):
        del key  # deterministic: the start is part of the task
        state = PointMazeState(position=jnp.asarray(params.start, jnp.float32), time=jnp.int32(0))
        return jnp.concatenate([state.position, params.goal]), state

    def step(
        self, key: jax.Array, state: PointMazeState, action: jax.Array, params: PointMazeParams
    ):
        """`action` int in 0..8 (clipped): 0 stays, k moves along (k - 1) * 45 degrees."""
        del key
        position = self.move(state.position, action)
        time = state.time + 1
        obs = jnp.concatenate([position, jnp.asarray(params.goal, jnp.float32)])
        # Scored from the observation so that HER's relabelled rewards match exactly.
        reached = self.goal_reached(self.achieved_goal(obs), self.desired_goal(obs))
        reward = self.compute_reward(self.achieved_goal(obs), self.desired_goal(obs))
        truncated = (time >= self.max_episode_steps) & ~reached
        state = PointMazeState(position=position, time=time)
        info = {"reached": reached, "distance": jnp.linalg.norm(position - params.goal)}
        return obs, state, reward, reached, truncated, info

    # -- rendering -----------------------------------------------------------------------

    def render(
        self, state: PointMazeState, params: PointMazeParams, pixels: int = 128
    ) -> np.ndarray:
        """RGB image [pixels, pixels, 3] uint8, y upwards (numpy, not jittable).

        Walls black, the goal's tolerance disc green, the start a light blue dot, the
        point a dark blue dot.
        """
        image = np.full((pixels, pixels, 3), 255, np.uint8)
        centres = (np.arange(pixels) + 0.5) / pixels
        xs, ys = np.meshgrid(centres, centres[::-1], indexing="xy")  # row 0 is y = 1
        grid = np.stack([xs, ys], -1)

        def disc(centre, radius, colour):
            mask = np.linalg.norm(grid - np.asarray(centre, np.float64), axis=-1) <= radius
            image[mask] = colour

        disc(params.goal, self.goal_tolerance, (60, 180, 75))
        disc(params.start, 1.5 / pixels + 0.01, (170, 200, 255))
        disc(state.position, 1.5 / pixels + 0.01, (30, 60, 200))
        near = segment_distance(grid, self.walls[:, 0], self.walls[:, 1]).min(-1)
        image[near <= 1.5 / pixels] = (0, 0, 0)  # about 3 pixels thick
        return image
