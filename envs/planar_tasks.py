"""The walled unit square that point_maze and brax_goal share: the wall layouts, tasks
(start x, start y, goal x, goal y) over valid positions with the snapping of invalid
ones, shortest paths on a grid (`start_distance`), and top-down pictures.

World: the unit square [0, 1]^2, x to the right and y upwards. An env says which
points are valid (clear of its walls by its goal tolerance); `PlanarStartGoalTasks`
does the rest.
"""

from __future__ import annotations

import abc
import difflib
import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.core.errors import ConfigError
from acl.core.spaces import Box
from envs._checks import positive_int
from envs.start_goal import StartGoalTasks, start_goal_box

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
"""The square's four sides, as wall segments."""
SNAP_GRID = 64
"""Resolution of the grid of valid points that invalid task points map to."""
MARGIN_SLACK = 1e-6
"""Rounding slack of the valid-margin test, so points exactly goal_tolerance away count."""


@struct.dataclass
class StartGoalParams:
    """What a teacher may change: the start and the goal (both valid positions)."""

    start: jax.Array
    """[2] float32 (x, y)."""
    goal: jax.Array
    """[2] float32 (x, y)."""


def check_layout(layout: str, alternative: str = "") -> None:
    """ConfigError naming the closest of `LAYOUTS` (and `alternative`, a hint appended
    to the message) when `layout` is none of them."""
    if layout in LAYOUTS:
        return
    close = difflib.get_close_matches(str(layout), sorted(LAYOUTS), n=1, cutoff=0.4)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ConfigError(
        f"env.layout: unknown layout {layout!r}; {hint}named layouts: "
        f"{', '.join(sorted(LAYOUTS))}{alternative}"
    )


def grid_centres(per_dim: int) -> np.ndarray:
    """[per_dim ** 2, 2] float64 (x, y) centres of a per_dim x per_dim grid over the
    square, row-major in y, then x."""
    centres = (np.arange(per_dim) + 0.5) / per_dim
    return np.stack(np.meshgrid(centres, centres, indexing="xy"), -1).reshape(-1, 2)


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

    grid = grid_centres(per_dim)
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


class PlanarStartGoalTasks(StartGoalTasks, abc.ABC):
    """Tasks (start x, start y, goal x, goal y) in the unit square with walls: the task,
    goal and start protocols every planar goal env shares (point_maze, brax_goal).

    The host class sets `goal_tolerance`, `walls` ([S, 2, 2] segments, for the path
    grid), `step_length` and `max_episode_steps`, implements `_valid_np` /
    `is_valid_position` (what counts as clear of its walls), then calls
    `_init_tasks`; its state has the body's `position` [2]."""

    goal_dim = 2
    start_dim = 2
    has_valid_goals = True
    task_space: Box
    goal_tolerance: float
    walls: np.ndarray
    _snap: np.ndarray
    """[M, 2] float32: the valid centres of a SNAP_GRID x SNAP_GRID grid."""
    invalid_goal: str = "snap"
    """What a task's invalid goal becomes: "snap", the nearest valid snap-grid centre (the
    default; SVGG relies on it); "keep", the goal as given, which no episode can reach, so
    that an infeasible goal costs a full episode (`max_episode_steps`)."""

    step_length: float
    """The farthest one env step moves the point: the unit of `start_distance`."""

    @abc.abstractmethod
    def _valid_np(self, points: np.ndarray) -> np.ndarray:
        """[..., 2] numpy -> [...] bool: `is_valid_position` on the host."""

    @abc.abstractmethod
    def is_valid_position(self, points: jax.Array) -> jax.Array:
        """[..., 2] -> [...] bool: a valid start or goal (clear of the walls)."""

    def _init_tasks(self, layout_name: str, units: str, nothing_valid: str) -> None:
        """Sets `_snap` and `task_space`, whose default is `DEFAULT_TASKS[layout_name]`
        ("open"'s for other names) with each invalid point snapped. ConfigError with
        `nothing_valid` when no snap-grid centre is valid."""
        snap = grid_centres(SNAP_GRID)
        snap = snap[self._valid_np(snap)].astype(np.float32)
        if len(snap) == 0:
            raise ConfigError(nothing_valid)
        self._snap = snap
        default = DEFAULT_TASKS.get(layout_name, DEFAULT_TASKS["open"])
        default = np.asarray(default, np.float32).reshape(2, 2)
        nearest = snap[np.argmin(((default[:, None] - snap) ** 2).sum(-1), axis=1)]
        default = np.where(self._valid_np(default)[:, None], default, nearest).reshape(-1)
        self.task_space = start_goal_box(tuple(default.tolist()), (units, units))

    def start_distance(self, starts: jax.Array, task: jax.Array) -> jax.Array:
        """starts [..., 2], task [4] -> [...] float32: the shortest path from each start
        to the task's goal, in env steps (of `step_length`). Jittable.

        Measured on the 8-connected graph of the valid centres of a PATH_GRID x
        PATH_GRID grid (a point counts as its cell's nearest valid centre), so it is
        within a grid cell or so of the true shortest path; inf where there is none."""
        table, nearest = (jnp.asarray(a) for a in self._path_tables)
        start_cells = nearest[_grid_index(jnp.asarray(starts, jnp.float32), PATH_GRID)]
        goal_cell = nearest[_grid_index(jnp.asarray(task, jnp.float32)[2:4], PATH_GRID)]
        return table[start_cells, goal_cell]

    @functools.cached_property
    def _path_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """(distances [V, V] float32 in env steps between the V valid grid centres, the
        nearest valid centre [PATH_GRID ** 2] int32 of every grid cell); built once, on
        first use (it takes a Dijkstra over the grid)."""
        return _grid_paths(self._valid_np, self.walls, PATH_GRID, self.step_length)

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
        grid = grid_centres(per_dim)
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

    # -- start protocol (reverse curriculum) ---------------------------------------------

    def start_from_state(self, state) -> jax.Array:
        """State -> [2] (x, y) of the body (a start is at rest: a velocity is dropped)."""
        return state.position

    def goal_start(self, task: jax.Array) -> jax.Array:
        """[4] -> [2]: the goal (mapped to a valid position) as a start."""
        return self.valid_position(jnp.asarray(task, jnp.float32)[2:4])

    # -- rendering -----------------------------------------------------------------------

    def _draw_points(
        self,
        params: StartGoalParams,
        position: jax.Array,
        pixels: int,
        start_radius: float,
        body_radius: float,
    ) -> tuple[np.ndarray, np.ndarray]:
        """A top-down RGB image [pixels, pixels, 3] uint8 (y upwards) of the goal's
        tolerance disc (green), the start (light blue) and the body (dark blue) on white,
        and the (x, y) [pixels, pixels, 2] of each pixel's centre, to draw walls with."""
        image = np.full((pixels, pixels, 3), 255, np.uint8)
        centres = (np.arange(pixels) + 0.5) / pixels
        xs, ys = np.meshgrid(centres, centres[::-1], indexing="xy")  # row 0 is y = 1
        grid = np.stack([xs, ys], -1)
        for centre, radius, colour in (
            (params.goal, self.goal_tolerance, (60, 180, 75)),
            (params.start, start_radius, (170, 200, 255)),
            (position, body_radius, (30, 60, 200)),
        ):
            mask = np.linalg.norm(grid - np.asarray(centre, np.float64), axis=-1) <= radius
            image[mask] = colour
        return image, grid
