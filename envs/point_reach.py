"""Sparse-reward reaching on an open plane: the goal's distance and bearing are the task.

The CPU-scale TeachMyAgent-style space of `make run`. It is built so that a curriculum
can matter, on three points Stump Tracks has and CartPole's space lacks:

- **An infeasible task costs a whole episode.** A goal farther than the time limit lets
  the point travel cannot be reached, and the episode runs to the time limit.
- **Hard tasks are learnt by transfer.** The reward is sparse: a random walk reaches
  goals near the start and never reaches far ones. A policy that has learnt to head for
  near goals carries over, step by step, to farther ones.
- **The challenge spaces widen the distance,** as TeachMyAgent widens the stump height:
  far beyond the reachable ring (mostly unfeasible) or below 0, where the goal sits on
  the start (mostly trivial: stay put). The test set stays on the default space.

World: a point starts at the origin of an unbounded plane. Actions: Discrete(9): 0
stays, k in 1..8 moves `step_size` (0.15) along (k - 1) * 45 degrees. Task [2] =
(distance, bearing): the goal is `max(distance, 0) * (cos bearing, sin bearing)`.
Observation [4] float32 = (x, y, goal x - x, goal y - y): the position and the goal
relative to it, so that "head for the goal" is the same function of the observation
everywhere on the plane. Reward -1 per step, 0 on the step that ends within
`goal_tolerance` (0.1) of the goal, which terminates the episode; the episode is
truncated after `max_episode_steps` (17). Success: return > -17 (the goal reached);
return bounds (-17, 0). `achieved_goal`, `desired_goal` and `with_goal` read and write
the goal inside an observation, so HER can relabel.

Task space (default dims, `task_space`):

| dim | name | low | high | default | unit |
|---|---|---|---|---|---|
| 0 | distance | 0 | 2 | 1 | plane units |
| 1 | bearing | 0 | 2 pi | 0 | rad |

Regions. King moves of length s = 0.15 for T = 17 steps reach 2.55 along an axis or a
diagonal and about 2.36 at bearings 22.5 degrees off them (two move directions must be
mixed); `reachable` gives this boundary, widened by the tolerance. `greedy_action` (the
move that ends nearest to the goal) agrees with it on 99.8% of a 160 x 64 grid over
distance [0, 8]; the disagreements sit on the boundary, where the coarse moves cannot
land within the tolerance (`tests/test_point_reach.py` checks the agreement away from
it).

- Default space: every task is feasible (distance <= 2 < 2.36). A random walk of 17
  steps seldom ends more than about 0.6 from the origin, so only the nearest tasks are
  met by chance; the far ring, distance > 1.8, needs 12 or more of the 17 steps spent
  heading straight for the goal.
- `unfeasible_bounds`: distance up to 20 (`unfeasible_max_distance`). 87% of it is
  beyond reach (see envs/README.md for the measurement).
- `trivial_bounds`: distance from -6. 75% of it puts the goal on the start (distance
  <= 0), met by staying put on the first step (a random first action does so with
  probability 1/9; a move of 0.15 leaves the 0.1 disc).

Parameters were chosen in a pilot (docs/results/point_reach.md): with steps of 0.05
and 50 steps per episode, Random on the mostly unfeasible space learnt nothing in 1M
steps (3-7% mastered, only the goals on the start), too far from the "room both ways"
the benchmark needs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from acl.core.spaces import Box
from envs._checks import positive_int
from envs.registry import ENVS
from envs.start_goal import SparseGoalReward

NUM_ACTIONS = 9
MAX_DISTANCE = 2.0
"""Upper bound of the default space's distance."""
UNFEASIBLE_MAX_DISTANCE = 20.0
TRIVIAL_MIN_DISTANCE = -6.0


@struct.dataclass
class PointReachParams:
    goal: jax.Array
    """[2] float32 (x, y) of the goal."""


@struct.dataclass
class PointReachState:
    position: jax.Array
    """[2] float32 (x, y)."""
    time: jax.Array
    """Steps taken in this episode."""


@ENVS.register("point_reach")
class PointReach(SparseGoalReward):
    """A point reaching a goal at (distance, bearing) from the origin; see the module
    docstring.

    Static config: `step_size` (0.15), `goal_tolerance` (0.1), `max_episode_steps` (17),
    `unfeasible_max_distance` (the mostly unfeasible challenge's farthest goal).
    """

    name = "point_reach"
    goal_dim = 2

    def __init__(
        self,
        step_size: float = 0.15,
        goal_tolerance: float = 0.1,
        max_episode_steps: int | None = None,
        unfeasible_max_distance: float = UNFEASIBLE_MAX_DISTANCE,
    ):
        for value, field in ((step_size, "env.step_size"), (goal_tolerance, "env.goal_tolerance")):
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
                raise ConfigError(f"{field} must be a number in (0, 1), got {value!r}")
        self.step_size = float(step_size)
        self.goal_tolerance = float(goal_tolerance)
        self.max_episode_steps = positive_int(max_episode_steps, "env.max_episode_steps") or 17
        if (
            isinstance(unfeasible_max_distance, bool)
            or not isinstance(unfeasible_max_distance, int | float)
            or not MAX_DISTANCE < unfeasible_max_distance < np.inf
        ):
            raise ConfigError(
                f"env.unfeasible_max_distance must be a finite number > {MAX_DISTANCE}, "
                f"got {unfeasible_max_distance!r}"
            )
        angles = np.arange(NUM_ACTIONS - 1) * (np.pi / 4)
        directions = np.stack([np.cos(angles), np.sin(angles)], -1)
        self._moves = np.concatenate([np.zeros((1, 2)), directions * self.step_size]).astype(
            np.float32
        )  # [9, 2]
        names, units = ("distance", "bearing"), ("plane units", "rad")
        self.task_space = Box(
            low=(0.0, 0.0),
            high=(MAX_DISTANCE, 2 * np.pi),
            names=names,
            units=units,
            default=(1.0, 0.0),
        )
        self.unfeasible_bounds = self.task_space.replace(
            high=(float(unfeasible_max_distance), 2 * np.pi), field_name="unfeasible_bounds"
        )
        self.trivial_bounds = self.task_space.replace(
            low=(TRIVIAL_MIN_DISTANCE, 0.0), field_name="trivial_bounds"
        )
        self.easy_task = (0.2, np.pi)
        """The expert's easy task (`TaskEnv.easy_task`, read by acl.build.make_challenge):
        a goal a few steps away."""

    # -- tasks ---------------------------------------------------------------------------

    def goal_of(self, task: jax.Array) -> jax.Array:
        """[..., 2] (distance, bearing) -> [..., 2] goal (x, y); distance <= 0 is the origin."""
        task = jnp.asarray(task, jnp.float32)
        distance = jnp.maximum(task[..., 0], 0.0)
        return distance[..., None] * jnp.stack([jnp.cos(task[..., 1]), jnp.sin(task[..., 1])], -1)

    def default_params(self) -> PointReachParams:
        return PointReachParams(goal=self.goal_of(self.task_space.default_task))

    def task_to_params(self, task: jax.Array, base_params: PointReachParams | None):
        """task [2] -> params; the params hold nothing but the goal."""
        del base_params
        return PointReachParams(goal=self.goal_of(task))

    def reachable(self, task) -> np.ndarray:
        """[..., 2] tasks -> [...] bool: the goal can be reached within the time limit.

        King moves of equal length cover, in k steps, the octagon with vertices k s along
        the 8 move directions; a goal at bearing phi (folded into [0, 45] degrees) is
        within it when its distance (cos phi + (sqrt 2 - 1) sin phi) <= k s, and it is
        met once the octagon comes within the tolerance of it. numpy, host side.
        """
        task = np.asarray(task, np.float64)
        distance = np.maximum(task[..., 0], 0.0)
        phi = np.mod(task[..., 1], np.pi / 4)
        phi = np.minimum(phi, np.pi / 4 - phi)
        octagon = distance * (np.cos(phi) + (np.sqrt(2.0) - 1.0) * np.sin(phi))
        # Distance from the octagon's edge to the goal, measured along the edge normal.
        gap = (octagon - self.max_episode_steps * self.step_size) * np.cos(np.pi / 8)
        return gap <= self.goal_tolerance

    # -- goal protocol ---------------------------------------------------------------------

    def achieved_goal(self, obs: jax.Array) -> jax.Array:
        return obs[..., :2]

    def desired_goal(self, obs: jax.Array) -> jax.Array:
        return obs[..., :2] + obs[..., 2:4]

    def with_goal(self, obs: jax.Array, goal: jax.Array) -> jax.Array:
        goal = jnp.broadcast_to(goal, obs.shape[:-1] + (2,)).astype(obs.dtype)
        return jnp.concatenate([obs[..., :2], goal - obs[..., :2]], axis=-1)

    def goal_reached(self, achieved: jax.Array, goal: jax.Array) -> jax.Array:
        return jnp.linalg.norm(achieved - goal, axis=-1) <= self.goal_tolerance

    def goal_from_task(self, task: jax.Array) -> jax.Array:
        """[..., 2] -> [..., 2]: the goal (x, y) of a task."""
        return self.goal_of(task)

    def task_with_goal(self, task: jax.Array, goal: jax.Array) -> jax.Array:
        """[..., 2], [..., 2] goal (x, y) -> [..., 2] (distance, bearing in [0, 2 pi))."""
        goal = jnp.broadcast_to(jnp.asarray(goal, jnp.float32), jnp.shape(task))
        bearing = jnp.mod(jnp.arctan2(goal[..., 1], goal[..., 0]), 2 * jnp.pi)
        return jnp.stack([jnp.linalg.norm(goal, axis=-1), bearing], -1)

    # -- spaces and dynamics -----------------------------------------------------------------

    def observation_space(self) -> spaces.Box:
        bound = 2 * self.unfeasible_bounds.high[0]
        return spaces.Box(low=-bound, high=bound, shape=(4,), dtype=jnp.float32)

    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(NUM_ACTIONS)

    def reset(self, key: jax.Array, params: PointReachParams):
        del key  # deterministic: the point always starts at the origin
        state = PointReachState(position=jnp.zeros(2, jnp.float32), time=jnp.int32(0))
        return self.observe(state.position, params.goal), state

    def observe(self, position: jax.Array, goal: jax.Array) -> jax.Array:
        """[2], [2] -> [4] (x, y, goal x - x, goal y - y)."""
        return jnp.concatenate([position, goal - position])

    def step(
        self, key: jax.Array, state: PointReachState, action: jax.Array, params: PointReachParams
    ):
        """`action` int in 0..8 (clipped): 0 stays, k moves along (k - 1) * 45 degrees."""
        del key
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, NUM_ACTIONS - 1)
        position = state.position + jnp.asarray(self._moves)[action]
        time = state.time + 1
        obs = self.observe(position, params.goal)
        reached = self.goal_reached(position, params.goal)
        reward = jnp.where(reached, 0.0, -1.0).astype(jnp.float32)
        truncated = (time >= self.max_episode_steps) & ~reached
        state = PointReachState(position=position, time=time)
        return obs, state, reward, reached, truncated, {"reached": reached}

    def greedy_action(self, obs: jax.Array) -> jax.Array:
        """[..., 4] -> [...] int32: the move that ends nearest to the goal (a scripted
        controller for the feasibility map, not a baseline)."""
        gap_after = obs[..., None, 2:4] - jnp.asarray(self._moves)
        return jnp.argmin(jnp.linalg.norm(gap_after, axis=-1), -1).astype(jnp.int32)
