"""Device layouts inside the loop: where an iteration's parts run, and what crosses
between devices.

    placement = OneDevice()            # the single-device loop
    placement = EnvShards("envs", 4, num_envs=16)   # each seed's instances over 4 devices
    placement = TeacherBeside("roles") # the teacher's update on a second device

The loop (acl.loop.train) runs its iteration through these methods and never asks
which placement it has:

    teacher_state, tasks, info = placement.this_draw(seed, draw, sample_key)
    slots, batch, feedback = placement.rollout(rollout)
    batch, feedback = placement.for_teacher(batch, feedback)
    agent_state, metrics, teacher_state, drawn = placement.updates(...)

`OneDevice` also serves seeds split over devices (acl.loop.devices): every device then
runs the one-device loop on its own seeds. The mesh, the `shard_map` and the seed
padding live in acl.loop.devices; here is only what runs inside the mapped function.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import jax
import jax.numpy as jnp

from acl.core.types import Feedback, SampleInfo
from acl.loop.carry import IterationKeys

Draw = Callable[[Any, jax.Array], tuple[Any, jax.Array, SampleInfo]]
"""draw(teacher_state, sample_key) -> (teacher_state, tasks [n, D'], info): one
iteration's `teacher.sample`."""
Updates = tuple[Any, dict, Any, Any]
"""(agent state, agent metrics, teacher state, the next iteration's draw or None)."""


class DeviceSplit(enum.Enum):
    """How a run asks to use several devices (acl.loop.devices lays it out)."""

    SEEDS = "seeds"
    """Each device runs its own seeds (the default)."""
    ENVS = "envs"
    """Each seed's instances split over the devices (`loop.shard_envs`)."""
    TEACHER_BESIDE = "teacher_beside"
    """The teacher's update on a second device (`loop.overlap_teacher`)."""


@dataclass(frozen=True)
class Instances:
    """A device's view of a seed's instances: all of them."""

    def mine(self, x: jax.Array, axis: int = 0) -> jax.Array:
        """This device's slice of a per-instance array ([..., N, ...] on `axis`)."""
        return x

    def key(self, key: jax.Array) -> jax.Array:
        """A key of this device's own: its instances must not replay another's."""
        return key

    def everyone(self, x: jax.Array, axis: int) -> jax.Array:
        """Every device's instances of a per-instance array, in instance order."""
        return x


@dataclass(frozen=True)
class ShardedInstances(Instances):
    """A device's `local` instances of a seed's instances split over the named `axis`."""

    axis: str
    local: int

    def mine(self, x: jax.Array, axis: int = 0) -> jax.Array:
        start = jax.lax.axis_index(self.axis) * self.local
        return jax.lax.dynamic_slice_in_dim(x, start, self.local, axis)

    def key(self, key: jax.Array) -> jax.Array:
        return jax.random.fold_in(key, jax.lax.axis_index(self.axis))

    def everyone(self, x: jax.Array, axis: int) -> jax.Array:
        return jax.lax.all_gather(x, self.axis, axis=axis, tiled=True)


@dataclass(frozen=True)
class OneDevice:
    """Every part of the iteration on one device, in order: draw, rollout, the agent's
    update, then the teacher's, which sees the updated student."""

    instances: Instances = Instances()
    gradient_axis: str | None = None
    """The named axis the agent's update averages its gradients over; None: none."""
    drawn_axis: int | None = None
    """The seed axis of `SeedCarry.drawn` under the seed vmap; None: it is None."""

    def first_draw(self, draw: Draw, teacher_state: Any, loop_key: jax.Array) -> tuple[Any, Any]:
        """(teacher state, `SeedCarry.drawn`) at init: each iteration draws for itself."""
        return teacher_state, None

    def this_draw(self, teacher_state: Any, drawn: Any, draw: Draw, key: jax.Array):
        """(teacher state, tasks, info) of the iteration whose sample key is `key`."""
        return draw(teacher_state, key)

    def rollout(self, rollout: Callable[[], tuple]) -> tuple:
        return rollout()

    def for_teacher(self, batch: Any, feedback: Feedback) -> tuple[Any, Feedback]:
        """The rollout and feedback as the teacher sees them."""
        return batch, feedback

    def updates(
        self,
        update_agent: Callable[[], tuple[Any, dict]],
        update_teacher: Callable[[Any], Any],
        draw_next: Callable[[Any], tuple],
        current: tuple,
    ) -> Updates:
        """Both updates; `current` is (teacher state, tasks, info) of this iteration."""
        agent_state, agent_metrics = update_agent()
        # The student after this update, for teachers that evaluate it (SFL).
        return agent_state, agent_metrics, update_teacher(agent_state), None

    def after_iterations(self, seed: Any) -> Any:
        """The seed carry at the end of a run of iterations."""
        return seed

    def evaluated(self, evaluation: Callable[[], Any], seed: Any, agent_metrics: dict):
        """(evaluation result, seed carry, agent metrics) at the end of a chunk."""
        return evaluation(), seed, agent_metrics


@dataclass(frozen=True)
class EnvShards(OneDevice):
    """Each seed's instances split over the named `axis` (`loop.shard_envs`): every
    shard holds the same agent and teacher state; the teacher hands out tasks for all
    instances and each shard plays its own; the agent's update averages its gradients
    over `axis`; the teacher reads every shard's feedback, gathered."""

    num_steps: int = 0

    @classmethod
    def create(cls, axis: str, shards: int, num_envs: int, num_steps: int) -> EnvShards:
        instances = ShardedInstances(axis, num_envs // shards)
        return cls(instances=instances, gradient_axis=axis, num_steps=num_steps)

    def for_teacher(self, batch: Any, feedback: Feedback) -> tuple[Any, Feedback]:
        # The teacher sees the iteration as one device would: [T, N], step-major.
        everyone = self.instances.everyone
        local = self.instances.local
        batch = jax.tree.map(lambda x: everyone(x, 1), batch)
        feedback = jax.tree.map(
            lambda x: everyone(x.reshape((self.num_steps, local) + x.shape[1:]), 1).reshape(
                (-1,) + x.shape[1:]
            ),
            feedback,
        )
        return batch, feedback


class Placement(Protocol):
    """Where an iteration's parts run; `OneDevice` documents each member."""

    instances: Instances
    gradient_axis: str | None
    drawn_axis: int | None

    def first_draw(
        self, draw: Draw, teacher_state: Any, loop_key: jax.Array
    ) -> tuple[Any, Any]: ...

    def this_draw(self, teacher_state: Any, drawn: Any, draw: Draw, key: jax.Array): ...

    def rollout(self, rollout: Callable[[], tuple]) -> tuple: ...

    def for_teacher(self, batch: Any, feedback: Feedback) -> tuple[Any, Feedback]: ...

    def updates(self, update_agent, update_teacher, draw_next, current) -> Updates: ...

    def after_iterations(self, seed: Any) -> Any: ...

    def evaluated(self, evaluation: Callable[[], Any], seed: Any, agent_metrics: dict): ...


LEARNER, TEACHER = 0, 1
"""The devices of `TeacherBeside`'s role axis."""


def _to_bytes(x: jax.Array) -> jax.Array:
    """x's bytes, flat ([x.size * itemsize] uint8)."""
    if x.dtype == jnp.bool_:
        return x.astype(jnp.uint8).reshape(-1)
    return jax.lax.bitcast_convert_type(x, jnp.uint8).reshape(-1)


def _from_bytes(data: jax.Array, like: jax.Array) -> jax.Array:
    """The inverse of `_to_bytes`: an array of like's shape and dtype."""
    if like.dtype == jnp.bool_:
        return data.reshape(like.shape) != 0
    if like.dtype.itemsize == 1:
        return jax.lax.bitcast_convert_type(data.reshape(like.shape), like.dtype)
    return jax.lax.bitcast_convert_type(data.reshape(*like.shape, like.dtype.itemsize), like.dtype)


@dataclass(frozen=True)
class TeacherBeside:
    """The teacher's update on a second device, beside the agent's (`loop.overlap_teacher`).

    Within an iteration the agent's update and the teacher's read the same rollout and
    not each other's result, so they can run at once: device LEARNER rolls out and
    updates the agent while device TEACHER updates the teacher (on CPU, a second host
    device is a second core, where a GMM teacher's fits then run). The rollout goes to
    the teacher's device, which updates the teacher and at once draws the next
    iteration's tasks (`SeedCarry.drawn`), with the key that iteration would draw them
    with; only the tasks come back, so the learner never waits on `sample`. The
    teacher's state reaches the learner's device at the end of a run of iterations, the
    agent state the teacher's device at each evaluation. Each seed computes what the
    one-device loop computes, in a program XLA fuses differently: equal up to float32
    round-off (tests/test_overlap_teacher.py). The teacher's update gets no `student`
    (it runs beside the agent's update, not after it)."""

    axis: str
    """The two-device axis: LEARNER, TEACHER."""
    instances: Instances = Instances()
    gradient_axis: str | None = None
    drawn_axis: int | None = 0

    def _on_device(self, device: int, compute: Callable[[], Any], otherwise: Any = None):
        """compute() on one device of the role axis; the other skips it and returns
        `otherwise` (default: zeros of compute's result), which the caller overwrites or
        never reads."""
        if otherwise is None:
            shapes = jax.eval_shape(compute)
            otherwise = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
        here = jax.lax.axis_index(self.axis) == device
        return jax.lax.cond(here, compute, lambda: otherwise)

    def _from_device(self, tree: Any, device: int) -> Any:
        """Device `device`'s values of `tree` on both devices of the role axis, sent as
        one byte buffer: each collective is a rendezvous of the two devices, which costs
        more than the copy on XLA's CPU backend."""
        leaves, treedef = jax.tree.flatten(tree)
        parts = [_to_bytes(x) for x in leaves]
        received = jax.lax.all_gather(jnp.concatenate(parts), self.axis)[device]
        out, start = [], 0
        for x, part in zip(leaves, parts, strict=True):
            out.append(_from_bytes(received[start : start + part.shape[0]], x))
            start += part.shape[0]
        return jax.tree.unflatten(treedef, out)

    def first_draw(self, draw: Draw, teacher_state: Any, loop_key: jax.Array) -> tuple[Any, Any]:
        # Iteration 0's draw, with its key, as every later one is drawn: ahead.
        teacher_state, tasks, info = draw(teacher_state, IterationKeys.split(loop_key).sample)
        return teacher_state, (tasks, info)

    def this_draw(self, teacher_state: Any, drawn: Any, draw: Draw, key: jax.Array):
        tasks, info = drawn
        return teacher_state, tasks, info

    def rollout(self, rollout: Callable[[], tuple]) -> tuple:
        # The teacher's device keeps stale slots: it never steps the envs.
        slots, batch, feedback = self._on_device(LEARNER, rollout)
        batch, feedback = self._from_device((batch, feedback), LEARNER)
        return slots, batch, feedback

    def for_teacher(self, batch: Any, feedback: Feedback) -> tuple[Any, Feedback]:
        return batch, feedback

    def updates(self, update_agent, update_teacher, draw_next, current) -> Updates:
        agent_state, agent_metrics = self._on_device(LEARNER, update_agent)

        def update_and_draw():
            # The next iteration's draw, with the key it would take there: off the
            # learner's path, which only waits for the tasks.
            return draw_next(update_teacher(None))

        # The learner's copy of the teacher's state goes stale until the chunk ends.
        teacher_state, drawn_tasks, drawn_info = self._on_device(
            TEACHER, update_and_draw, otherwise=current
        )
        # Both updates finish before the exchange: otherwise XLA may schedule the
        # learner's wait for the tasks before the agent's update, in turn.
        agent_state, teacher_state, drawn = jax.lax.optimization_barrier(
            (agent_state, teacher_state, (drawn_tasks, drawn_info))
        )
        return agent_state, agent_metrics, teacher_state, self._from_device(drawn, TEACHER)

    def after_iterations(self, seed: Any) -> Any:
        return seed.replace(teacher_state=self._from_device(seed.teacher_state, TEACHER))

    def evaluated(self, evaluation: Callable[[], Any], seed: Any, agent_metrics: dict):
        # The learner's evaluation, student, slots and metrics, on both devices again.
        result, agent_state, slots, agent_metrics = self._from_device(
            (self._on_device(LEARNER, evaluation), seed.agent_state, seed.slots, agent_metrics),
            LEARNER,
        )
        return result, seed.replace(agent_state=agent_state, slots=slots), agent_metrics
