"""Baselines: Random (uniform over the task space) and Fixed (the env's default task)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

from acl.core.spaces import Box
from acl.core.types import SampleInfo, default_info
from acl.teachers.base import TEACHERS, class_factory
from acl.teachers.counting import CountingState, CountingTeacher


@struct.dataclass
class NoParams:
    """These teachers have no numeric hyperparameters."""


@dataclass(frozen=True)
class _StatelessTeacher(CountingTeacher):
    task_space: Box

    def default_params(self) -> NoParams:
        return NoParams()


@dataclass(frozen=True)
class RandomTeacher(_StatelessTeacher):
    """Tasks uniform in the task space: domain randomisation."""

    def sample(self, state: CountingState, key: jax.Array, n: int):
        return state, self.task_space.sample_uniform(key, n), default_info(n)


@dataclass(frozen=True)
class FixedTeacher(_StatelessTeacher):
    """Always the env's default task: the no-curriculum baseline."""

    def sample(self, state: CountingState, key: jax.Array, n: int):
        del key
        tasks = jnp.broadcast_to(self.task_space.default_task, (n, self.task_space.dim))
        return state, tasks, default_info(n)


TEACHERS.register("random")(class_factory(RandomTeacher))
TEACHERS.register("fixed")(class_factory(FixedTeacher))

__all__ = ["RandomTeacher", "FixedTeacher", "SampleInfo"]
