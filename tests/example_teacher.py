"""A teacher written in one file, against the public contract only (acl.teachers.base):
the test that adds a teacher without editing anything else (tests/test_new_teacher.py).

Easy-first: tasks uniform over the lower `share` of each dimension's range, the share
growing by `growth` after every update whose episodes mostly succeeded.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

from acl.spaces import Box
from acl.teachers.base import Feedback, class_factory, default_info


@struct.dataclass
class EasyFirstParams:
    growth: jax.Array


@struct.dataclass
class EasyFirstState:
    params: EasyFirstParams
    share: jax.Array
    """Share of each dimension's range handed out, from its low end."""


@dataclass(frozen=True)
class EasyFirstTeacher:
    task_space: Box
    start_share: float = 0.2
    growth: float = 0.1

    def default_params(self) -> EasyFirstParams:
        return EasyFirstParams(growth=jnp.float32(self.growth))

    def init(self, key: jax.Array, params: EasyFirstParams) -> EasyFirstState:
        return EasyFirstState(params=params, share=jnp.float32(self.start_share))

    def sample(self, state: EasyFirstState, key: jax.Array, n: int):
        low, high = self.task_space.low_array, self.task_space.high_array
        top = low + state.share * (high - low)
        tasks = jax.random.uniform(key, (n, self.task_space.dim), minval=low, maxval=top)
        return state, tasks, default_info(n)

    def update(self, state: EasyFirstState, key, tasks, feedback: Feedback, rollout, step):
        valid = feedback.mask.astype(jnp.float32)
        success = jnp.sum(feedback.success * valid) / jnp.maximum(valid.sum(), 1.0)
        grow = jnp.where(success > 0.5, state.params.growth, 0.0)
        return state.replace(share=jnp.minimum(state.share + grow, 1.0))

    def snapshot(self, state: EasyFirstState) -> dict:
        return {"share": state.share}


make_easy_first = class_factory(EasyFirstTeacher)
