"""The baselines' shared state: teachers that keep nothing but their params and a count of
the episodes reported (random, fixed, dr, uniform_start, random_goal). `CountingTeacher`
writes their `init`, `update` and `snapshot` once; a subclass gives `default_params` and
`sample`."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from acl.core.types import Feedback
from acl.teachers.base import Teacher, UpdateContext


@struct.dataclass
class CountingState:
    """A baseline's state: its params and the episodes reported so far."""

    params: Any
    episodes_seen: jax.Array
    """int32: valid feedback records so far."""


class CountingTeacher(Teacher):
    """A teacher whose tasks depend on its params and the sample key alone: its state
    counts the episodes reported, which is all its snapshot holds."""

    def init(self, key: jax.Array, params: Any) -> CountingState:
        del key
        return CountingState(params=params, episodes_seen=jnp.zeros((), jnp.int32))

    def update(
        self,
        state: CountingState,
        key: jax.Array,
        tasks: jax.Array,
        feedback: Feedback,
        step: jax.Array,
        context: UpdateContext = UpdateContext(),
    ) -> CountingState:
        return state.replace(episodes_seen=state.episodes_seen + feedback.count.astype(jnp.int32))

    def snapshot(self, state: CountingState) -> dict:
        return {"episodes_seen": state.episodes_seen}


__all__ = ["CountingState", "CountingTeacher"]
