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
from flax import struct

from acl.core import hparams
from acl.core.hparams import hparam, nested
from acl.core.spaces import Box
from acl.core.types import Feedback, default_info
from acl.teachers.base import TEACHERS, Teacher, UpdateContext, class_factory
from acl.teachers.checks import check


@struct.dataclass
class ScheduleParams:
    """Numeric hyperparameters (pytree leaves, vmappable): as configured on the teacher
    (`hyper`), as arrays in `default_params()`."""

    start_low: jax.Array = hparam(
        None,
        kind="floats",
        low=0.0,
        high=1.0,
        doc="[D] lower corner of the first box, as a fraction of each dimension's range "
        "(default 0 in every dimension).",
    )
    start_high: jax.Array = hparam(
        None,
        kind="floats",
        low=0.0,
        high=1.0,
        doc="[D] upper corner of the first box, likewise (default 0.1 in every dimension).",
    )
    ramp_iterations: jax.Array = hparam(
        100, low=1, doc="Updates until the box covers the whole space (int32)."
    )


@struct.dataclass
class ScheduleState:
    params: ScheduleParams
    updates: jax.Array
    """Updates so far (the schedule's clock)."""
    episodes_seen: jax.Array


@dataclass(frozen=True)
class ScheduleTeacher(Teacher):
    """Uniform over a box growing linearly from a start box to the whole space; its keys
    are those of `ScheduleParams`."""

    task_space: Box
    hyper: ScheduleParams = nested(ScheduleParams)

    def __post_init__(self):
        hparams.validate_fields(self, "teacher")
        hyper, dim = self.hyper, self.task_space.dim
        low = (0.0,) * dim if hyper.start_low is None else hyper.start_low
        high = (0.1,) * dim if hyper.start_high is None else hyper.start_high
        for name, values in (("start_low", low), ("start_high", high)):
            check(
                len(values) == dim,
                f"teacher.{name} has {len(values)} entries, the task space {dim}",
            )
        check(
            all(lo <= hi for lo, hi in zip(low, high)),
            f"teacher.start_low {low} must be <= teacher.start_high {high} in every dimension",
        )
        object.__setattr__(self, "hyper", hyper.replace(start_low=low, start_high=high))

    def default_params(self) -> ScheduleParams:
        return hparams.leaves(self.hyper)

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

    def update(
        self,
        state: ScheduleState,
        key,
        tasks,
        feedback: Feedback,
        step,
        context: UpdateContext = UpdateContext(),
    ):
        return state.replace(
            updates=state.updates + 1,
            episodes_seen=state.episodes_seen + feedback.count.astype(jnp.int32),
        )

    def snapshot(self, state: ScheduleState) -> dict:
        low, high = self.box(state)
        return {"box_low": low, "box_high": high, "episodes_seen": state.episodes_seen}


TEACHERS.register("schedule")(class_factory(ScheduleTeacher))
