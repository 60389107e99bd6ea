"""The goal teachers' side of the env: what they check of a `GoalTaskEnv`, the box their
goals live in, the goals they draw without a model (valid goals, else the box), and the
goals an env actually ran, started from or visited."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from acl.core.spaces import Box
from acl.core.types import Transition
from envs.base import GoalTaskEnv

GOAL_ENV = dict(
    uses="writes goals into tasks",
    build="make_svgg(task_space, env=...) or through acl.build.build_components (it "
    "hands every teacher factory the run's env in its context)",
    protocol=GoalTaskEnv,
    methods=("goal_from_task", "task_with_goal", "achieved_goal"),
)
"""`checks.check_env`'s wording for the goal teachers."""

ENV_DOC = "The goal env whose goals are handed out (static); default: the run's."
BASE_TASK_DOC = (
    "[D] the task whose goal part is replaced: it fixes the start; default: the task "
    "space's default task."
)


def goal_box(env: GoalTaskEnv, task_space: Box) -> tuple[np.ndarray, np.ndarray]:
    """(low [G], high [G]): the task space's bounds on the goal coordinates. Host side
    (call it at construction, not inside a trace)."""
    with jax.ensure_compile_time_eval():
        low = np.asarray(env.goal_from_task(task_space.low_array), np.float32)
        high = np.asarray(env.goal_from_task(task_space.high_array), np.float32)
    return np.minimum(low, high), np.maximum(low, high)


def box_grid(goal_low: np.ndarray, goal_high: np.ndarray, per_dim: int) -> np.ndarray:
    """[per_dim^2, 2] float32 cell centres of a per_dim x per_dim grid over a 2-D goal box,
    row-major in (x, y) with x fastest."""
    axes = [
        lo + (np.arange(per_dim) + 0.5) * (hi - lo) / per_dim for lo, hi in zip(goal_low, goal_high)
    ]
    xs, ys = np.meshgrid(axes[0], axes[1], indexing="xy")
    return np.stack([xs.ravel(), ys.ravel()], -1).astype(np.float32)


def valid_goal_sampler(env: GoalTaskEnv, goal_low: np.ndarray, goal_high: np.ndarray):
    """key, n -> [n, G] goals uniform over the env's valid goals: its `sample_valid_goals`
    where it declares them (`has_valid_goals`: point_maze, goal_maze's free cells), else
    uniform over the goal box [goal_low, goal_high]."""
    if env.has_valid_goals:
        return env.sample_valid_goals
    low, high = jnp.asarray(goal_low), jnp.asarray(goal_high)

    def from_box(key, n):
        return jax.random.uniform(key, (n, low.shape[0]), minval=low, maxval=high)

    return from_box


def start_goal(env: GoalTaskEnv, key: jax.Array, base_task: jax.Array) -> jax.Array:
    """[G] the goal the base task's start achieves (its reset observation's)."""
    params = env.task_to_params(base_task, env.default_params())
    obs, _ = env.reset(key, params)
    return jnp.asarray(env.achieved_goal(obs), jnp.float32)


def used_goals(env: GoalTaskEnv, tasks: jax.Array, task_dim: int) -> jax.Array:
    """[K, D'] tasks -> [K, G] the goals the env actually ran them with: the desired goal
    of a reset under the task's params (point_maze's snapping of an invalid goal, say;
    under `invalid_goal: keep` the goal as handed out). The env reads the first
    `task_dim` columns of a wider task."""
    base = env.default_params()

    def one(task):
        obs, _ = env.reset(jax.random.PRNGKey(0), env.task_to_params(task, base))
        return env.desired_goal(obs)

    return jnp.asarray(jax.vmap(one)(tasks[:, :task_dim]), jnp.float32)


def visited_goals(
    env: GoalTaskEnv, rollout: Transition, key: jax.Array, count: int
) -> tuple[jax.Array, jax.Array]:
    """([V, G], [V] mask): `count` goals drawn uniformly without replacement from the
    achieved goals of every step of the rollout [T, N] (the states the episodes visited,
    the last of each included); all of them when there are no more than `count`."""
    next_obs = rollout.next_obs.reshape((-1,) + rollout.next_obs.shape[2:])
    reached = jnp.asarray(env.achieved_goal(next_obs), jnp.float32)
    total = reached.shape[0]
    if total <= count:
        return reached, jnp.ones((total,), bool)
    pick = jax.random.choice(key, total, (count,), replace=False)
    return reached[pick], jnp.ones((count,), bool)
