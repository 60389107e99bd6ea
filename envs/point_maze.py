"""A point in a 2-D maze of line-segment walls, with a settable start and goal.

The continuous host of goal curricula (SVGG's point mazes, reverse curriculum) and a
GoalTaskEnv for DQN + HER.

World: the unit square [0, 1]^2, x to the right and y upwards, closed by its four
sides. Inside walls are line segments of zero thickness (static config: a name in
`LAYOUTS`, envs/planar_tasks.py, or a sequence of ((x0, y0), (x1, y1)) segments). The
default `u_maze` has one wall from (0, 0.5) to (0.7, 0.5): the free space is a U lying
on its side, the default start (0.15, 0.25) and goal (0.15, 0.75) are 0.5 apart in a
straight line and about 1.6 apart by path (32+ steps of 0.05).

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

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from envs._checks import positive_int
from envs.base import PositionGoalObservation
from envs.planar_tasks import (
    BOUNDARY,
    LAYOUTS,
    MARGIN_SLACK,
    SOLIDS,
    PlanarStartGoalTasks,
    StartGoalParams,
    check_layout,
)
from envs.registry import ENVS

SKIN = 1e-3
"""Distance (along the move) a blocked move stops before the wall."""
NUM_ACTIONS = 9

PointMazeParams = StartGoalParams
"""What a teacher may change: the start and the goal (both valid positions)."""


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


@ENVS.register("point_maze")
class PointMaze(PositionGoalObservation, PlanarStartGoalTasks):
    """A point in a maze of segment walls in [0, 1]^2; see the module docstring.

    Static config: `layout` (a name in LAYOUTS, default `u_maze`) or `walls` (inner
    segments, overriding the layout), `step_size` (0.05), `goal_tolerance` (0.05, also
    the valid margin from walls), `max_episode_steps` (100), `invalid_goal` ("snap" or
    "keep": what a task's invalid goal becomes, `PlanarStartGoalTasks.invalid_goal`).
    """

    name = "point_maze"

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
            check_layout(layout, alternative=" (or pass env.walls)")
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
        self._init_tasks(
            self.layout_name,
            units="",
            nothing_valid=f"env.walls leave no valid position (>= goal_tolerance "
            f"{goal_tolerance} from every wall)",
        )

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

    # -- spaces ----------------------------------------------------------------------------

    def observation_space(self) -> spaces.Box:
        return spaces.Box(low=0.0, high=1.0, shape=(4,), dtype=jnp.float32)

    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(NUM_ACTIONS)

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
        reward, reached, truncated = self.score_step(obs, time)
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
        dot = 1.5 / pixels + 0.01
        image, grid = self._draw_points(params, state.position, pixels, dot, dot)
        near = segment_distance(grid, self.walls[:, 0], self.walls[:, 1]).min(-1)
        image[near <= 1.5 / pixels] = (0, 0, 0)  # about 3 pixels thick
        return image
