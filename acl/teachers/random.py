"""Baselines: Random (uniform over the task space) and Fixed (the env's default task)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

from acl.core.spaces import Box
from acl.core.types import Feedback, SampleInfo, default_info
from acl.teachers.base import TEACHERS, class_factory


@struct.dataclass
class NoParams:
    """These teachers have no numeric hyperparameters."""


@struct.dataclass
class CountingState:
    """Number of episodes reported so far; the teacher is otherwise stateless."""

    params: NoParams
    episodes_seen: jax.Array


@dataclass(frozen=True)
class _StatelessTeacher:
    task_space: Box

    def default_params(self) -> NoParams:
        return NoParams()

    def init(self, key: jax.Array, params: NoParams) -> CountingState:
        del key
        return CountingState(params=params, episodes_seen=jnp.zeros((), jnp.int32))

    def update(
        self, state: CountingState, key, tasks, feedback: Feedback, rollout, step, student=None
    ):
        return state.replace(episodes_seen=state.episodes_seen + feedback.count.astype(jnp.int32))

    def snapshot(self, state: CountingState) -> dict:
        return {"episodes_seen": state.episodes_seen}


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
