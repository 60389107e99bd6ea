"""Fixed test sets, deterministic and sampled evaluation, "% mastered" and solve rates.

A run's test set is either made from the task space (`make_test_set`: a grid of cell
centres in 2-D, else uniform tasks) or, with `eval.test_set`, a named set of levels the
env provides (`TEST_SETS`, e.g. the maze's held-out mazes in envs/maze_levels.py), whose
names label the per-test-task metrics. `TEST_SETS` is declared on the env side
(envs/registry.py) so that env modules register their sets without importing acl.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.agents.episodes import run_episodes
from acl.core.errors import ConfigError
from acl.core.risk import CVAR_ALPHAS, cvar
from acl.core.spaces import Box
from envs.base import random_tasks
from envs.registry import TEST_SETS


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


def named_test_set(env, spec: str | list[str], seed: int = 0) -> tuple[tuple[str, ...], np.ndarray]:
    """The env's named test set `spec` (a set name or a list of level names): names [M]
    and tasks [M, D] float32. Raises ConfigError if the env has none or `spec` is unknown."""
    if env.name not in TEST_SETS:
        raise ConfigError(
            f"eval.test_set: env {env.name!r} provides no named test sets "
            f"(envs that do: {', '.join(TEST_SETS.names()) or 'none'})"
        )
    names, tasks = TEST_SETS.get(env.name)(env, spec, seed)
    return tuple(names), np.asarray(tasks, np.float32)


def eval_test_set(env, eval_config) -> tuple[tuple[str, ...], np.ndarray]:
    """The test set of `eval_config` (acl.config.EvalConfig): `eval.test_set`'s named
    levels, or the task-space set of `make_test_set` with no names ()."""
    ev = eval_config
    if ev.test_set:
        if ev.task_low is not None or ev.task_high is not None:
            raise ConfigError("eval.task_low/task_high and eval.test_set exclude each other")
        return named_test_set(env, ev.test_set, ev.seed)
    return (), make_test_set(test_space(env, ev), ev.num_test_tasks, ev.grid_per_dim, ev.seed)


@dataclass(frozen=True, eq=False)
class EvalPlan:
    """The fixed test set and how each chunk's evaluation plays it."""

    test_tasks: np.ndarray
    """[M, D] float32, numpy: closed-over jax arrays become hidden arguments of AOT calls."""
    test_task_names: tuple[str, ...] = ()
    """[M] names of a named test set (`eval.test_set`); () for a task-space test set."""
    seed: int = 0
    """Seeds the evaluation's resets: every evaluation plays the same starts."""
    episodes_per_task: int = 1
    """Greedy episodes per test task."""
    sampled_attempts: int = 0
    """Episodes per test task with actions sampled from the policy; 0 plays none."""

    @property
    def key(self) -> jax.Array:
        return jax.random.PRNGKey(self.seed)

    @classmethod
    def create(cls, env, eval_config) -> EvalPlan:
        """The plan of `eval_config` (acl.config.EvalConfig) on `env`."""
        names, tasks = eval_test_set(env, eval_config)
        return cls(
            tasks,
            names,
            eval_config.seed,
            eval_config.episodes_per_task,
            eval_config.sampled_attempts,
        )


def test_space(env, eval_config) -> Box:
    """The box the task-space test set covers: the env's task space, or the part of it
    that `eval.task_low` / `eval.task_high` give (e.g. its hardest tasks)."""
    space = env.task_space
    low, high = eval_config.task_low, eval_config.task_high
    if low is None and high is None:
        return space
    box = []
    for values, default, name in ((low, space.low, "task_low"), (high, space.high, "task_high")):
        values = default if values is None else values
        ok = isinstance(values, list | tuple) and len(values) == space.dim
        ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        if not ok or not np.all(np.isfinite(values)):
            raise ConfigError(
                f"eval.{name} must be a list of {space.dim} finite numbers, got {values!r}"
            )
        box.append(tuple(float(v) for v in values))
    test = space.replace(low=box[0], high=box[1], field_name="eval.task_low/eval.task_high")
    if not (
        np.all(np.asarray(test.low) >= space.low) and np.all(np.asarray(test.high) <= space.high)
    ):
        raise ConfigError(
            f"eval.task_low/task_high {test.low}..{test.high} must lie inside the env's task "
            f"space {space.low}..{space.high}"
        )
    return test


@struct.dataclass
class EvalResult:
    returns: jax.Array
    """Greedy (deterministic) episode returns, [M, E] (test task, episode)."""
    pct_mastered: jax.Array
    """100 x share of test tasks whose mean greedy return beats the success threshold."""
    mean_return: jax.Array
    """Mean return over all greedy test episodes."""
    sampled_returns: jax.Array | None = None
    """Returns of the episodes with actions sampled from the policy, [M, A] (test task,
    attempt); None without sampled attempts."""


def solve_rate(env, returns: jax.Array) -> jax.Array:
    """Share of episodes that succeed (`env.is_success`), [..., E] -> [...]."""
    return env.is_success(returns).mean(axis=-1)


def repeated_returns(
    env,
    agent,
    agent_state: Any,
    tasks: jax.Array,
    count: int,
    key: jax.Array,
    deterministic: bool,
) -> jax.Array:
    """`count` episodes on each task [M, D] -> returns [M, count]. Jittable."""
    repeated = jnp.repeat(tasks, count, axis=0)
    returns = run_episodes(env, agent, agent_state, repeated, key, deterministic)
    return returns.reshape(tasks.shape[0], count)


def evaluate(
    env,
    agent,
    agent_state: Any,
    test_tasks: jax.Array,
    key: jax.Array,
    episodes_per_task: int = 1,
    sampled_attempts: int = 0,
) -> EvalResult:
    """Every test task [M, D]: `episodes_per_task` episodes of the deterministic policy
    ("% mastered" uses the mean return per task) and `sampled_attempts` episodes with
    actions sampled from it (the UED literature's solve rate). Episodes last the env's
    `max_episode_steps`. The same key plays the same episodes; jittable."""
    returns = repeated_returns(env, agent, agent_state, test_tasks, episodes_per_task, key, True)
    sampled = None
    if sampled_attempts:
        sampled = repeated_returns(
            env, agent, agent_state, test_tasks, sampled_attempts, jax.random.fold_in(key, 1), False
        )
    mastered = env.is_success(returns.mean(axis=1))
    return EvalResult(
        returns=returns,
        pct_mastered=100.0 * mastered.mean(),
        mean_return=returns.mean(),
        sampled_returns=sampled,
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


# -- risk over sampled levels -------------------------------------------------------------


def level_success(
    env,
    agent,
    agent_state: Any,
    levels: jax.Array,
    key: jax.Array,
    episodes: int,
    deterministic: bool = False,
    batch_size: int | None = None,
) -> jax.Array:
    """Success rate of each level [M, D] -> [M] over `episodes` episodes, played
    `batch_size` levels at a time (memory: one batch's episodes). Jittable."""
    m = levels.shape[0]
    batch = min(batch_size or m, m)
    if m % batch:
        raise ConfigError(f"levels ({m}) must be a multiple of batch_size ({batch})")

    def play(xs):
        chunk, chunk_key = xs
        returns = repeated_returns(
            env, agent, agent_state, chunk, episodes, chunk_key, deterministic
        )
        return solve_rate(env, returns)

    chunks = levels.reshape((m // batch, batch) + levels.shape[1:])
    keys = jax.random.split(key, m // batch)
    return jax.lax.map(play, (chunks, keys)).reshape(m)


jit_level_success = jax.jit(
    level_success, static_argnames=("env", "agent", "episodes", "deterministic", "batch_size")
)
"""`level_success` compiled, called with keywords: the agent state is an argument, not a
constant, so the students of one env and agent share one program."""


@dataclass(frozen=True)
class RiskResult:
    """`sampled_risk`'s outcome; shapes [M] per level."""

    levels: jax.Array
    """[M, D] the sampled levels."""
    ranked_success: jax.Array
    """Success rate per level on the ranking seed."""
    measured_success: jax.Array
    """Success rate per level on the independent measuring seed."""
    mean_success: float
    """Mean measured success over the levels (CVaR at alpha = 1)."""
    cvar: dict
    """{alpha: CVaR of success}, acl.core.risk.cvar."""


def sampled_risk(
    env,
    agent,
    agent_state: Any,
    key: jax.Array,
    num_levels: int = 10_000,
    episodes: int = 10,
    alphas=None,
    deterministic: bool = False,
    batch_size: int = 1000,
) -> RiskResult:
    """Risk over levels as in "No Regrets" (Rutherford et al. 2024): sample `num_levels`
    levels (`envs.base.random_tasks`), play `episodes` episodes on each with actions sampled from
    the policy (the authors' evaluation: 10 episodes per level), rank the levels by
    success on one evaluation seed and measure them on an independent one; CVaR at each
    alpha of `alphas` (default acl.core.risk.CVAR_ALPHAS: 0.01, 0.1, 0.5) is the measured mean
    success on the worst alpha share by rank (acl.core.risk.cvar). The same key gives the same
    result."""
    if num_levels < 1 or episodes < 1:
        raise ConfigError(f"num_levels ({num_levels}) and episodes ({episodes}) must be >= 1")
    level_key, rank_key, measure_key = jax.random.split(key, 3)
    levels = random_tasks(env, level_key, num_levels)

    def success(levels, key):
        return jit_level_success(
            env=env,
            agent=agent,
            agent_state=agent_state,
            levels=levels,
            key=key,
            episodes=episodes,
            deterministic=deterministic,
            batch_size=batch_size,
        )

    ranked = np.asarray(success(levels, rank_key))
    measured = np.asarray(success(levels, measure_key))
    return RiskResult(
        levels=levels,
        ranked_success=ranked,
        measured_success=measured,
        mean_success=float(measured.mean()),
        cvar=cvar(ranked, measured, alphas or CVAR_ALPHAS),
    )
