"""The random-valid-goal baseline of the goal curricula: goals uniform over the env's
valid goals (else over the goal box), the start fixed by `base_task`."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

from acl.core import hparams
from acl.core.hparams import hparam, nested
from acl.core.spaces import Box
from acl.core.types import default_info
from acl.teachers import checks
from acl.teachers.base import TEACHERS, class_factory
from acl.teachers.counting import CountingState, CountingTeacher
from acl.teachers.svgg.goals import (
    BASE_TASK_DOC,
    ENV_DOC,
    GOAL_ENV,
    goal_box,
    valid_goal_sampler,
)
from envs.base import GoalTaskEnv


@struct.dataclass
class RandomGoalParams:
    """Numeric hyperparameters (pytree leaves, vmappable)."""

    base_task: jax.Array = hparam(None, kind="floats", doc=BASE_TASK_DOC)


@dataclass(frozen=True)
class RandomGoalTeacher(CountingTeacher):
    """Baseline: goals uniform over the env's valid goals (point_maze's
    `sample_valid_goals`, goal_maze's free cells; else the goal box), start fixed by
    `base_task`."""

    task_space: Box
    env: GoalTaskEnv | None = hparam(None, kind="any", doc=ENV_DOC)
    hyper: RandomGoalParams = nested(RandomGoalParams)

    def __post_init__(self):
        checks.check_env(self.env, self.task_space, "random_goal", **GOAL_ENV)
        hparams.validate_fields(self, "teacher")
        base = checks.base_task(self.task_space, self.hyper.base_task)
        object.__setattr__(self, "hyper", self.hyper.replace(base_task=base))
        low, high = goal_box(self.env, self.task_space)
        # Not a field: derived once, and left out of the (static) hash and equality.
        object.__setattr__(self, "_goal_box", (low, high))

    def default_params(self) -> RandomGoalParams:
        return hparams.leaves(checks.with_base_task(self.hyper, self.task_space))

    def sample(self, state: CountingState, key: jax.Array, n: int):
        low, high = self._goal_box
        goals = jnp.asarray(valid_goal_sampler(self.env, low, high)(key, n), jnp.float32)
        base = jnp.broadcast_to(state.params.base_task, (n, self.task_space.dim))
        tasks = self.task_space.clip(self.env.task_with_goal(base, goals))
        return state, tasks, default_info(n)


TEACHERS.register("random_goal")(class_factory(RandomGoalTeacher, run_env=True))

__all__ = ["RandomGoalParams", "RandomGoalTeacher"]
