"""Task layouts: how the tasks a teacher draws in an iteration reach the instances.

    layout = task_layout(mode="episode", task_pool=None, schedule)   # SlotTasks
    n = layout.tasks_per_draw                # what `teacher.sample` draws per iteration
    plan = layout.plan(instances, start, slots, tasks, info, rollout_key)
    ... collect(..., plan.next_tasks, plan.next_train_on, pool=plan.pool) ...
    feedback, overflow = layout.handed_out(feedback)

- `SlotTasks` (episode mode): one task per (step, instance) slot, [T * N, D']; an
  instance whose episode ends at step t restarts on slot [t, i].
- `PoolTasks` (episode mode, `loop.task_pool` P): a pool of P tasks; the k-th reset of
  the iteration, in step then instance order, takes entry k (acl.loop.rollout).
- `BatchTasks` (batch mode, UED levels): one task per instance, [N, D']; every instance
  restarts on its new task at the start of the iteration and replays it all rollout.

The loop composes one of them around its iteration (acl.loop.train) and never asks
which it has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import jax
import jax.numpy as jnp

from acl.core.errors import ConfigError
from acl.core.types import Feedback, SampleInfo
from acl.loop.placement import Instances
from acl.loop.rollout import Slots, TaskPool
from acl.loop.schedule import Schedule

StartSlots = Callable[[jax.Array, jax.Array, SampleInfo], Slots]
"""start(reset_key, tasks [N, D'], info) -> this device's instances reset onto their
share of the tasks."""


@dataclass(frozen=True)
class RolloutPlan:
    """What one iteration's rollout starts from and hands out at its resets."""

    slots: Slots
    """The instances as the rollout finds them."""
    key: jax.Array
    """The rollout's key."""
    next_tasks: jax.Array | None = None
    """[T, N, D'] the task an instance resetting at step t takes; None: the pool's, or
    its own task again."""
    next_train_on: jax.Array | None = None
    """[T, N] the matching `SampleInfo.train_on`."""
    pool: TaskPool | None = None
    """Tasks handed out in reset order (`PoolTasks`)."""


class TaskLayout(Protocol):
    tasks_per_draw: int
    """Tasks the teacher draws per iteration."""
    splits_by_instance: bool
    """Each instance's tasks are its own, so devices that share a seed's instances
    (`EnvShards`) can each hand out their share; a pool is handed out in the order of
    all instances' resets, which no one device sees."""

    def plan(
        self,
        instances: Instances,
        start: StartSlots,
        slots: Slots,
        tasks: jax.Array,
        info: SampleInfo,
        key: jax.Array,
    ) -> RolloutPlan:
        """The rollout of an iteration whose draw is tasks [tasks_per_draw, D']."""
        ...

    def handed_out(self, feedback: Feedback) -> tuple[Feedback, jax.Array]:
        """The feedback with what the teacher must know of the hand-out, and the resets
        the draw could not serve (int32 [])."""
        ...


def _nothing_overflows(feedback: Feedback) -> tuple[Feedback, jax.Array]:
    return feedback, jnp.zeros((), jnp.int32)


@dataclass(frozen=True)
class SlotTasks:
    """One task per (step, instance) slot."""

    num_steps: int
    num_envs: int
    splits_by_instance = True

    @property
    def tasks_per_draw(self) -> int:
        return self.num_steps * self.num_envs

    def plan(self, instances, start, slots, tasks, info, key) -> RolloutPlan:
        per_slot = tasks.reshape(self.num_steps, self.num_envs, -1)
        train_on = info.train_on.reshape(self.num_steps, self.num_envs)
        return RolloutPlan(
            slots, key, instances.mine(per_slot, axis=1), instances.mine(train_on, axis=1)
        )

    handed_out = staticmethod(_nothing_overflows)


@dataclass(frozen=True)
class PoolTasks:
    """A pool of `size` tasks, handed out in reset order."""

    size: int
    splits_by_instance = False

    @property
    def tasks_per_draw(self) -> int:
        return self.size

    def plan(self, instances, start, slots, tasks, info, key) -> RolloutPlan:
        return RolloutPlan(slots, key, pool=TaskPool(tasks, info.train_on))

    def handed_out(self, feedback: Feedback) -> tuple[Feedback, jax.Array]:
        # Every completed episode is a reset: the first `size` took the pool's entries.
        handed_out = jnp.minimum(feedback.count, self.size).astype(jnp.int32)
        overflow = feedback.count.astype(jnp.int32) - handed_out
        return feedback.replace(handed_out=handed_out), overflow


@dataclass(frozen=True)
class BatchTasks:
    """One task per instance, every instance restarting on its own at the iteration's start."""

    num_envs: int
    splits_by_instance = True

    @property
    def tasks_per_draw(self) -> int:
        return self.num_envs

    def plan(self, instances, start, slots, tasks, info, key) -> RolloutPlan:
        reset_key, rollout_key = jax.random.split(key)
        return RolloutPlan(start(reset_key, tasks, info), rollout_key)

    handed_out = staticmethod(_nothing_overflows)


def task_layout(mode: str, task_pool: int | None, schedule: Schedule) -> TaskLayout:
    """The layout of `loop.mode` ("episode" or "batch") and `loop.task_pool` (episode
    mode only; None: one task per slot)."""
    if mode == "batch":
        return BatchTasks(schedule.num_envs)
    if mode != "episode":
        raise ConfigError(f"loop.mode must be episode or batch, got {mode!r}")
    if task_pool is not None:
        return PoolTasks(task_pool)
    return SlotTasks(schedule.num_steps, schedule.num_envs)
