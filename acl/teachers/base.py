"""The teacher protocol and the per-episode feedback record.

A teacher object holds only shape-setting fields; everything numeric lives in the
`TeacherParams` pytree (vmappable) and the typed `TeacherState`:

    init(key, params) -> state
    sample(state, key, n) -> (state, tasks [n, D], info)
    update(state, key, tasks, feedback, rollout, step, student=None) -> state
    snapshot(state) -> dict of arrays        (what a run directory records at each evaluation)

`update` has this one signature for every teacher, and the loop calls it the same way for
all of them:
- `key`: a PRNG key of this update (the loop derives it with `fold_in` from its update key;
  a teacher that keeps its own key in its state may ignore it).
- `tasks`: what the last `sample` returned. In `episode` mode with a task pool
  (`loop.task_pool`, P) that is the pool [P, D], of which the first
  `feedback.handed_out` = min(resets, P) were used; without a pool, one task per (step,
  instance) slot [T * N, D]; in `batch` mode, one per instance [N, D].
- `feedback`: one record per completed episode, carrying the task it actually ran on.
- `rollout`: the batch's transitions, `acl.agents.common.Transition` [T, N] (rewards,
  dones and the agent's `extras`, e.g. PPO's values). Teachers that score whole levels
  from the student's experience (PLR, PAIRED) read it, and require `batch` mode, where
  instance i plays `tasks[i]` for the whole rollout; the others ignore it.
- `step`: the number of `update` calls before this one. It is the same for every seed and
  never vmapped, so periodic work keyed on it (a GMM fit every `fit_every` updates) stays
  a real `lax.cond` under a vmap over seeds instead of a select that runs every time.
- `student`: the student's agent state (its parameters) after this iteration's agent
  update, the one the next rollout acts with; per seed under a vmap over seeds. Teachers
  that evaluate the current student on levels of their own (SFL's learnability rollouts)
  act with it through `RunContext.agent` and `RunContext.play`; the others ignore it.
  It defaults to None, for calls outside the loop.

What a teacher needs from the run (the env, the env's return bounds, the loop mode, the
student's agent and the rollout that plays it) is handed over once, at construction:
every registered factory takes `context: RunContext` besides the task space and its
config keys.

A teacher's tasks may be wider than the env's task space (D' >= D columns): the env reads
the first D, and the columns after them ride along with the instance. They reach the
agent at each reset (`initial_carry(n, tasks)`, acl.agents.base) and come back in
`Feedback.task`, so a teacher can hand out per-episode data an actor wrapper reads (JSRL's
guide horizon) or keep its own coordinates beside the env's (`with_challenge`,
acl.benchmark.challenges). A teacher whose tasks need such a wrapper on the student says
so with `wrap_student(agent) -> agent`, which the composition root (acl.build) applies
when it builds the run; the loop never asks.

Per-episode data that one teacher needs (the goal an episode achieved, visited states)
that teacher derives from `rollout`; `Feedback` and `SampleInfo` hold only what every
teacher can use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import jax

from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.registry import Registry
from acl.core.spaces import Box
from acl.core.types import (
    Feedback,
    SampleInfo,
)


@dataclass(frozen=True)
class StudentSpec:
    """The student's agent, for teachers that train agents of the same kind (PAIRED's
    antagonist)."""

    agent: str
    """Registered agent name."""
    kwargs: Mapping[str, Any]
    """Its config keys, as the loop built it."""


@dataclass(frozen=True)
class RunContext:
    """What a teacher may know about the run it serves; handed to every teacher factory
    once, at construction. Fields are None when unknown (a teacher built outside a run)."""

    env: Any = None
    """The run's env (`envs.base` protocol): start and goal curricula walk its dynamics,
    UED teachers edit its levels."""
    return_bounds: tuple[float, float] | None = None
    """The env's declared (lowest, highest) episode return, for teachers that rescale
    returns to [0, 1]. A teacher's own `return_bounds` key overrides it."""
    loop_mode: str | None = None
    """"episode" or "batch" (`loop.mode`)."""
    num_envs: int | None = None
    """Instances per seed (`loop.num_envs`)."""
    shard_envs: bool | None = None
    """Each seed's instances split over devices (`loop.shard_envs`): every device then
    runs the teacher's update on the same state."""
    overlap_teacher: bool | None = None
    """The teacher's update runs beside the agent's (`loop.overlap_teacher`), so it gets
    no `student`."""
    student: StudentSpec | None = None
    agent: Any = None
    """The student's agent object as the run built it (before any teacher's
    `wrap_student`): with `play` and the agent state `update` receives as `student`, a
    teacher can roll the current student on levels of its own (SFL)."""
    play: Any = None
    """The run's rollout, for teachers that roll agents of their own (PAIRED's adversary
    and antagonist): `play(env, agent, agent_state, tasks [N, D'], num_steps, reset_key,
    rollout_key) -> (slots, Transition [T, N])`, each instance restarting on its own task
    (acl.loop.rollout.play). Handed over so that teachers need not import the loop."""


def run_default(context: RunContext | None, name: str, given: Any) -> Any:
    """`given`, or, when it is None, the run's value of the `RunContext` field `name`:
    what a factory's own argument leaves open, the run fills in."""
    if given is None and context is not None:
        return getattr(context, name)
    return given


def require_batch_mode(context: RunContext | None, name: str) -> None:
    """For teachers that score whole levels from `rollout`: instance i must play tasks[i]
    for the whole rollout."""
    if context is not None and context.loop_mode not in (None, "batch"):
        raise ConfigError(
            f"teacher {name!r} scores whole levels from the rollout: it needs loop.mode: batch"
        )


def class_factory(
    cls,
    run_env: bool = False,
    *,
    presets: Mapping[str, Mapping[str, Any]] | None = None,
    preset: str | None = None,
    run_fields: tuple[str, ...] = (),
    name: str | None = None,
):
    """A registry factory for a teacher class configured by its dataclass fields:
    `factory(task_space, context=None, **config) -> cls(task_space, **config)`.

    A class that declares its keys with `acl.core.hparams` (its fields and its `nested` params
    struct) takes exactly those, plus `preset` with `presets`: the named settings, with
    `config` over them (`preset` the default one). `run_fields` name `RunContext` fields
    that fill the same-named keys left unset; `run_env` is `run_fields=("env",)`. A class
    that declares nothing takes its dataclass fields. Unknown keys raise ConfigError."""
    run_fields = (*run_fields, "env") if run_env else tuple(run_fields)
    fields = {f.name for f in dataclasses.fields(cls)} - {"task_space"}
    # With no field but task_space (random, fixed) there is nothing to declare.
    declared = bool(hparams.specs(cls)) or not fields
    extra = {}
    if presets is not None:
        extra["preset"] = hparams.spec(
            preset, choices=tuple(presets), doc="Named settings; the keys given override them."
        )

    def factory(task_space: Box, context: RunContext | None = None, **config):
        hparams.check_keys(config, factory.config_keys, "teacher")
        if presets is not None:
            chosen = extra["preset"].check(config.pop("preset", preset), "teacher.preset")
            config = {**presets[chosen], **config}
        for field in run_fields:
            config[field] = run_default(context, field, config.get(field))
        if declared:
            (config,) = hparams.split(config, cls, field_name="teacher")
        return cls(task_space=task_space, **config)

    if declared:
        hparams.declare(factory, cls, extra=extra, defaults=presets[preset] if presets else None)
    else:
        factory.config_keys = frozenset(fields)
    if presets is not None:
        factory.presets = presets
    factory.__name__ = name or f"make_{cls.__name__}"
    factory.__doc__ = cls.__doc__
    factory.teacher_class = cls
    return factory


@runtime_checkable
class Teacher(Protocol):
    task_space: Box

    def default_params(self) -> Any: ...

    def init(self, key: jax.Array, params: Any) -> Any: ...

    def sample(self, state: Any, key: jax.Array, n: int) -> tuple[Any, jax.Array, SampleInfo]: ...

    def update(
        self,
        state: Any,
        key: jax.Array,
        tasks: jax.Array,
        feedback: Feedback,
        rollout: Any,
        step: jax.Array,
        student: Any = None,
    ) -> Any: ...

    def snapshot(self, state: Any) -> dict: ...


TEACHERS: Registry[Teacher] = Registry("teacher")
"""Teacher factories, called as factory(task_space=..., context=RunContext(...), **config)."""
