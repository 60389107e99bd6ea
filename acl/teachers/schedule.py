"""A hand-written easy-to-hard schedule: the control that shows a task space has a
difficulty gradient with transfer.

Tasks are uniform over a box that grows linearly, with the update count, from a start
box (`start_low`, `start_high`, fractions of each dimension's range) to the whole task
space, reached after `ramp_iterations` updates. It knows nothing of the student: if it
beats training on the hardest tasks alone, easier tasks carried the student there.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.spaces import Box
from acl.teachers.base import TEACHERS, Feedback, class_factory, default_info
from acl.teachers.checks import check, positive_int


@struct.dataclass
class ScheduleParams:
    start_low: jax.Array
    """[D] lower corner of the first box, as a fraction of each dimension's range."""
    start_high: jax.Array
    """[D] upper corner of the first box, likewise."""
    ramp_iterations: jax.Array
    """int32: updates until the box covers the whole space."""


@struct.dataclass
class ScheduleState:
    params: ScheduleParams
    updates: jax.Array
    """Updates so far (the schedule's clock)."""
    episodes_seen: jax.Array


def _fractions(values, dim: int, name: str) -> tuple[float, ...]:
    values = tuple(float(v) for v in np.ravel(values))
    check(len(values) == dim, f"teacher.{name} has {len(values)} entries, the task space {dim}")
    check(
        all(0.0 <= v <= 1.0 for v in values),
        f"teacher.{name} holds fractions of each dimension's range, in [0, 1]; got {values}",
    )
    return values


@dataclass(frozen=True)
class ScheduleTeacher:
    """Uniform over a box growing linearly from a start box to the whole space.

    Config: `start_low` (default 0 in every dimension), `start_high` (default 0.1 in
    every dimension), fractions of each dimension's range; `ramp_iterations` (100).
    """

    task_space: Box
    start_low: tuple | None = None
    start_high: tuple | None = None
    ramp_iterations: int = 100

    def __post_init__(self):
        dim = self.task_space.dim
        low = _fractions(
            (0.0,) * dim if self.start_low is None else self.start_low, dim, "start_low"
        )
        high = _fractions(
            (0.1,) * dim if self.start_high is None else self.start_high, dim, "start_high"
        )
        check(
            all(lo <= hi for lo, hi in zip(low, high)),
            f"teacher.start_low {low} must be <= teacher.start_high {high} in every dimension",
        )
        object.__setattr__(self, "start_low", low)
        object.__setattr__(self, "start_high", high)
        positive_int(self.ramp_iterations, "ramp_iterations")

    def default_params(self) -> ScheduleParams:
        return ScheduleParams(
            start_low=jnp.asarray(self.start_low, jnp.float32),
            start_high=jnp.asarray(self.start_high, jnp.float32),
            ramp_iterations=jnp.asarray(self.ramp_iterations, jnp.int32),
        )

    def init(self, key: jax.Array, params: ScheduleParams) -> ScheduleState:
        del key
        zero = jnp.zeros((), jnp.int32)
        return ScheduleState(params=params, updates=zero, episodes_seen=zero)

    def box(self, state: ScheduleState) -> tuple[jax.Array, jax.Array]:
        """The current box's corners [D], [D], in task-space units."""
        p = state.params
        progress = jnp.minimum(state.updates / jnp.maximum(p.ramp_iterations, 1), 1.0)
        low = p.start_low * (1.0 - progress)
        high = p.start_high + (1.0 - p.start_high) * progress
        space_low, space_high = self.task_space.low_array, self.task_space.high_array
        width = space_high - space_low
        return space_low + low * width, space_low + high * width

    def sample(self, state: ScheduleState, key: jax.Array, n: int):
        low, high = self.box(state)
        tasks = jax.random.uniform(key, (n, self.task_space.dim), minval=low, maxval=high)
        return state, tasks, default_info(n)

    def update(self, state: ScheduleState, key, tasks, feedback: Feedback, rollout, step):
        return state.replace(
            updates=state.updates + 1,
            episodes_seen=state.episodes_seen + feedback.count.astype(jnp.int32),
        )

    def snapshot(self, state: ScheduleState) -> dict:
        low, high = self.box(state)
        return {"box_low": low, "box_high": high, "episodes_seen": state.episodes_seen}


TEACHERS.register("schedule")(class_factory(ScheduleTeacher))
