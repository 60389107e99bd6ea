"""What the loop carries and returns: a seed's state between iterations, the run's data,
and a chunk's metrics.

Shapes are one seed's; under the seed vmap every leaf but `LoopCarry.iteration` and a
shared `RunData` gains a leading [S] axis (`Trainer.carry_axes`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
from flax import struct

from acl.loop.rollout import Slots


class IterationKeys(NamedTuple):
    """The keys one iteration splits from its seed's loop key."""

    following: jax.Array
    """The next iteration's loop key."""
    sample: jax.Array
    rollout: jax.Array
    update: jax.Array
    reinit: jax.Array

    @classmethod
    def split(cls, key: jax.Array) -> IterationKeys:
        return cls(*jax.random.split(key, 5))


@struct.dataclass
class SeedCarry:
    """Everything one seed carries between iterations."""

    agent_state: Any
    teacher_state: Any
    slots: Slots
    key: jax.Array
    reinit_every: jax.Array | None = None
    """int32 iterations between re-initialisations of the student (0: never), when the
    run gives it as data (`RunData`); constant over the run."""
    drawn: Any = None
    """With `loop.overlap_teacher`: the next iteration's (tasks, SampleInfo), drawn on the
    teacher's device right after its update; None on the one-device loop, which draws
    at the start of each iteration. The teacher's state then already includes that draw:
    a teacher whose `sample` advances its state (PLR) shows it in its snapshots."""


@struct.dataclass
class RunData:
    """What one compiled loop takes as data, so that a vmap or a second call can vary it
    without a recompile (TeachMyAgent's challenges, acl.teachers.challenge)."""

    teacher_params: Any = None
    """The teacher's params for `init`; None: `teacher.default_params()`."""
    reinit_every: jax.Array | None = None
    """int32 iterations between re-initialisations of the student, 0 = never; None: the
    config's static `loop.reinit_every`."""
    agent_hyper: Any = None
    """The agent's numeric hyperparameters, a struct of leaves that replaces the `hyper`
    of the state its `init` returns (a sweep, acl.run.sweep), and that a re-initialised student
    keeps; None: the agent's own."""


@struct.dataclass
class LoopCarry:
    iteration: jax.Array
    """Iterations done so far; shared by all seeds (never batched)."""
    seed: SeedCarry


@struct.dataclass
class ChunkMetrics:
    """Metrics of one chunk (evaluation period) of one seed."""

    env_steps: jax.Array
    """Env steps done by the end of the chunk, per seed."""
    eval_pct_mastered: jax.Array
    """Percentage of test tasks mastered: the mean return of a task's greedy episodes
    beats the env's success threshold."""
    eval_mean_return: jax.Array
    """Mean return over every greedy episode on the test set."""
    eval_solve_greedy: jax.Array
    """Per test task, [M]: share of its greedy episodes that succeed (`env.is_success`)."""
    eval_return: jax.Array
    """Per test task, [M]: mean return of its greedy episodes."""
    eval_solve_sampled: jax.Array | None
    """Per test task, [M]: share of its `eval.sampled_attempts` sampled-action episodes
    that succeed. None without sampled attempts."""
    eval_return_sampled: jax.Array | None
    """Per test task, [M]: mean return of its sampled-action episodes. None without
    sampled attempts."""
    eval_success_sampled: jax.Array | None
    """[M, A]: whether each sampled-action episode succeeded (task, attempt), for the
    test set's CVaR (`acl.core.risk.test_set_cvar`); None without sampled attempts."""
    train_return: jax.Array
    """Mean return of the episodes completed in the chunk."""
    train_success: jax.Array
    """Share of the episodes completed in the chunk that beat the success threshold."""
    episodes: jax.Array
    """Episodes completed in the chunk."""
    feedback_dropped: jax.Array
    """Completed episodes the teacher did not see (beyond `loop.max_feedback`)."""
    task_pool_overflow: jax.Array
    """Resets beyond `loop.task_pool` in the chunk's iterations: those instances restarted
    on the task they had just run. Always 0 without a pool."""
    loss: jax.Array
    """Total agent loss of every iteration, [iterations_per_chunk]."""
    agent_metrics: dict
    """Agent update metrics averaged over the chunk."""
    tasks: jax.Array
    """A subsample of the tasks handed out in the chunk, [task_log_size, D]."""
    teacher_snapshot: dict
    """The teacher's internals at the evaluation (mixture, regions, buffer...)."""
