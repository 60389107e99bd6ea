"""Fixed test sets, deterministic evaluation and "% mastered"."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.spaces import Box


def make_test_set(
    task_space: Box, num_tasks: int = 100, grid_per_dim: int = 10, seed: int = 0
) -> np.ndarray:
    """The fixed test set: a grid of cell centres for 2-D spaces, else uniform tasks.

    Returns [M, D] float32; the same arguments always give the same tasks.
    """
    if task_space.dim == 2:
        return task_space.grid(grid_per_dim)
    rng = np.random.default_rng(seed)
    low, high = np.asarray(task_space.low), np.asarray(task_space.high)
    return (low + rng.random((num_tasks, task_space.dim)) * (high - low)).astype(np.float32)


@struct.dataclass
class EvalResult:
    returns: jax.Array
    """Episode returns, [M, E] (test task, episode)."""
    pct_mastered: jax.Array
    """100 x share of test tasks whose mean return beats the success threshold."""
    mean_return: jax.Array
    """Mean return over all test episodes."""


def run_episodes(
    env, agent, agent_state: Any, tasks: jax.Array, key: jax.Array, deterministic: bool = True
) -> jax.Array:
    """One full episode per task, [K, D] -> returns [K].

    Runs exactly `env.max_episode_steps` steps and counts rewards until each episode's
    first end, so the cost is fixed and nothing branches per instance.
    """
    n = tasks.shape[0]
    params = env.params_for_tasks(tasks)
    reset_key, loop_key = jax.random.split(key)
    obs, state = jax.vmap(env.reset)(jax.random.split(reset_key, n), params)

    def step(carry, step_key):
        obs, state, recurrent, total, alive = carry
        act_key, env_key = jax.random.split(step_key)
        action, recurrent, _ = agent.act(agent_state, obs, recurrent, act_key, deterministic)
        obs, state, reward, terminated, truncated, _ = jax.vmap(env.step, in_axes=(0, 0, 0, 0))(
            jax.random.split(env_key, n), state, agent.env_action(action), params
        )
        total = total + reward * alive
        alive = alive & ~(terminated | truncated)
        return (obs, state, recurrent, total, alive), None

    init = (obs, state, agent.initial_carry(n), jnp.zeros(n), jnp.ones(n, bool))
    (_, _, _, total, _), _ = jax.lax.scan(
        step, init, jax.random.split(loop_key, env.max_episode_steps)
    )
    return total


def evaluate(
    env, agent, agent_state: Any, test_tasks: jax.Array, key: jax.Array, episodes_per_task: int = 1
) -> EvalResult:
    """Deterministic policy on every test task; "% mastered" uses the mean return per task."""
    m = test_tasks.shape[0]
    tasks = jnp.repeat(test_tasks, episodes_per_task, axis=0)
    returns = run_episodes(env, agent, agent_state, tasks, key).reshape(m, episodes_per_task)
    mastered = env.is_success(returns.mean(axis=1))
    return EvalResult(
        returns=returns,
        pct_mastered=100.0 * mastered.mean(),
        mean_return=returns.mean(),
    )


def goal_success(
    env,
    agent,
    agent_state: Any,
    base_task: jax.Array,
    goals: jax.Array,
    key: jax.Array,
    deterministic: bool = True,
) -> jax.Array:
    """Whether the agent reaches each goal [M, G] -> [M] bool: one episode per goal from
    `base_task` [D] (its start) with the goal replaced
    (`envs.base.GoalTaskEnv.task_with_goal`). The same key gives the same episodes.
    Jittable."""
    goals = jnp.asarray(goals, jnp.float32)
    base_task = jnp.asarray(base_task, jnp.float32)
    base = jnp.broadcast_to(base_task, (goals.shape[0],) + base_task.shape)
    tasks = env.task_with_goal(base, goals)
    returns = run_episodes(env, agent, agent_state, tasks, key, deterministic)
    return env.is_success(returns)


def success_coverage(
    env,
    agent,
    agent_state: Any,
    base_task: jax.Array,
    goals: jax.Array,
    key: jax.Array,
    deterministic: bool = True,
) -> jax.Array:
    """Success coverage (SVGG's metric): the share of goals [M, G] the agent reaches
    (`goal_success`). Pass a fixed set of valid goals, e.g. point_maze's `goal_grid()`."""
    return goal_success(env, agent, agent_state, base_task, goals, key, deterministic).mean()
