"""The teacher contract, what a teacher knows of its run, and the per-episode feedback.

A teacher object holds only shape-setting fields; everything numeric lives in its params
pytree (vmappable) and its typed state. Every teacher subclasses `Teacher`:

    default_params() -> params
    init(key, params) -> state
    sample(state, key, n) -> (state, tasks [n, D'], info)
    update(state, key, tasks, feedback, step, context=UpdateContext()) -> state
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
- `step`: the number of `update` calls before this one. It is the same for every seed and
  never vmapped, so periodic work keyed on it (a GMM fit every `fit_every` updates) stays
  a real `lax.cond` under a vmap over seeds instead of a select that runs every time.
- `context`: an `UpdateContext`, what only some teachers read: the iteration's `rollout`
  (PLR and PAIRED score whole levels from it, in `batch` mode), the `student` after this
  iteration's agent update (SFL evaluates it) and `env_tasks`, the map onto the env's
  tasks when a wrapper (the challenge) puts the teacher in other coordinates. The others
  ignore it; its default, all None, serves calls outside the loop.

Optional capabilities are members of `Teacher` with defaults, so that nobody has to ask
a teacher what it can do:
- `wrap_student(agent) -> agent`: a teacher whose tasks need a wrapper on the student
  (JSRL's guide) returns it; the composition root (acl.build) applies it. Default: the
  agent unchanged.
- `takes_prior` and `with_prior(params, mean, std, enabled) -> params`: a teacher that
  can use an expert prior (ALP-GMM, Covar-GMM, ADR, SPDL, GoalGAN, Setter-Solver) sets
  `takes_prior = True` and puts the prior into its params; the challenge wrapper
  (acl.teachers.challenge) hands it the challenge's. Default: no prior, params unchanged.
- `updates_before_adapting() -> int`: `update` calls before the teacher's sampling can
  first depend on its feedback (ALP-GMM's and Covar-GMM's first fit). Default: 0.
- `configured_teacher`: the teacher whose declared keys the config's `teacher` section
  sets (a sweep reads their declarations): the teacher itself, or for a wrapper the build
  adds around it (the challenge), the wrapped one.

What a teacher needs from the run (the env, the env's return bounds, the loop mode, the
student's agent, the rollout that plays it, a builder and a loader of agents) is handed
over once, at construction: every registered factory takes `context: RunContext` besides
the task space and its config keys. Teachers neither read run directories nor build
agents from configs themselves.

A teacher's tasks may be wider than the env's task space (D' >= D columns): the env reads
the first D, and the columns after them ride along with the instance. They reach the
agent at each reset (`initial_carry(n, tasks)`, acl.agents.base) and come back in
`Feedback.task`, so a teacher can hand out per-episode data an actor wrapper reads (JSRL's
guide horizon) or keep its own coordinates beside the env's (`with_challenge`,
acl.teachers.challenge).

Per-episode data that one teacher needs (the goal an episode achieved, visited states)
that teacher derives from `context.rollout`; `Feedback` and `SampleInfo` hold only what
every teacher can use.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import jax
from flax import struct

from acl.agents.base import Agent
from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.registry import PluginGroup, Registry
from acl.core.spaces import Box
from acl.core.types import Feedback, SampleInfo, Transition


@dataclass(frozen=True)
class StudentSpec:
    """The student's agent, for teachers that train agents of the same kind (PAIRED's
    antagonist)."""

    agent: str
    """Registered agent name."""
    kwargs: Mapping[str, Any]
    """Its config keys, as the loop built it."""


@dataclass(frozen=True)
class AgentRequest:
    """A registered agent a teacher wants for a learner of its own (PAIRED's adversary and
    antagonist), built by the run's `RunContext.make_agent`."""

    name: str
    """Registered agent name (acl.agents.AGENTS)."""
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Its config keys; a key the agent does not take is a ConfigError."""
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Settings applied under `kwargs`, each only where the agent takes the key."""
    name_field: str = "agent.name"
    """The config field that named the agent, for errors."""
    kwargs_field: str = "agent"
    """The config field that holds `kwargs`, for errors."""


AgentMaker = Callable[[AgentRequest], Agent]
"""`make_agent(request) -> agent`, unbound (the caller binds it to the env it plays)."""

AgentLoader = Callable[[str | Path, Any, int], tuple[Agent, Any]]
"""`load_agent(run_dir, env, seed_index) -> (agent, state)`: a finished run directory's
agent, rebuilt from its config and bound to `env` as the run bound it, and seed
`seed_index`'s final agent state (host arrays). ConfigError when the directory holds no
finished run, its agent does not fit `env`'s spaces or the seed is out of range."""


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
    """The teacher's update runs beside the agent's (`loop.overlap_teacher`), so its
    `UpdateContext` has no `student`."""
    student: StudentSpec | None = None
    agent: Agent | None = None
    """The student's agent object as the run built it (before any teacher's
    `wrap_student`): with `play` and the agent state `update` receives as
    `context.student`, a teacher can roll the current student on levels of its own (SFL)."""
    play: Any = None
    """The run's rollout, for teachers that roll agents of their own (PAIRED's adversary
    and antagonist): `play(env, agent, agent_state, tasks [N, D'], num_steps, reset_key,
    rollout_key) -> (slots, Transition [T, N])`, each instance restarting on its own task
    (acl.loop.rollout.play). Handed over so that teachers need not import the loop."""
    make_agent: AgentMaker | None = None
    """Builds a registered agent from its name and keys (`AgentRequest`), as the run
    builds its student (acl.build.make_agent): PAIRED's adversary and antagonist."""
    load_agent: AgentLoader | None = None
    """Reads a trained agent from a finished run directory (`AgentLoader`;
    acl.build.load_run_agent_state): JSRL's saved guide."""


def run_default(context: RunContext | None, name: str, given: Any) -> Any:
    """`given`, or, when it is None, the run's value of the `RunContext` field `name`:
    what a factory's own argument leaves open, the run fills in."""
    if given is None and context is not None:
        return getattr(context, name)
    return given


def require_return_bounds(context: RunContext | None, given: Any, teacher: str) -> Any:
    """`given`, else the run's return bounds (`run_default`), for a teacher that rescales
    returns by them; a one-line ConfigError when neither gives any and the run's env
    declares none (a gymnax space of an id without known bounds, envs.gymnax_space).
    Outside a run (no env) None stands: the teacher compares raw returns."""
    bounds = run_default(context, "return_bounds", given)
    env = None if context is None else context.env
    if bounds is None and env is not None and env.return_bounds is None:
        raise ConfigError(
            f"teacher.return_bounds: teacher {teacher} rescales returns by the env's return "
            f"bounds, and env {env.name!r} declares none: give env.return_bounds: [low, high] "
            "(or teacher.return_bounds)"
        )
    return bounds


def require_batch_mode(context: RunContext | None, name: str) -> None:
    """For teachers that score whole levels from `context.rollout`: instance i must play tasks[i]
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
        if "return_bounds" in run_fields:
            label = (name or "").removeprefix("make_") or cls.__name__
            require_return_bounds(context, config["return_bounds"], label)
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


@struct.dataclass
class UpdateContext:
    """What only some teachers read in `update` (built fresh inside the traced loop); a
    pytree, so a jitted or vmapped `update` takes it as an argument (`env_tasks` static)."""

    rollout: Transition | None = None
    """The iteration's transitions [T, N] (PLR and PAIRED score whole levels from them)."""
    student: Any = None
    """The agent state after this iteration's agent update, the one the next rollout acts
    with (SFL evaluates it); None beside the agent's update (`loop.overlap_teacher`)."""
    env_tasks: Callable[[jax.Array], jax.Array] | None = struct.field(
        pytree_node=False, default=None
    )
    """The map from the teacher's task coordinates [n, D] to the env's tasks [n, D], when
    a wrapper (the challenge) puts the teacher in another space; None: the identity."""


class Teacher(abc.ABC):
    """The base every teacher subclasses: the required methods, and the optional
    capabilities with their defaults (module docstring)."""

    task_space: Box
    """The tasks the teacher hands out (their first D columns)."""
    takes_prior: ClassVar[bool] = False
    """`with_prior` puts an expert prior into the params (a challenge's expert knowledge)."""

    @abc.abstractmethod
    def default_params(self) -> Any: ...

    @abc.abstractmethod
    def init(self, key: jax.Array, params: Any) -> Any: ...

    @abc.abstractmethod
    def sample(self, state: Any, key: jax.Array, n: int) -> tuple[Any, jax.Array, SampleInfo]: ...

    @abc.abstractmethod
    def update(
        self,
        state: Any,
        key: jax.Array,
        tasks: jax.Array,
        feedback: Feedback,
        step: jax.Array,
        context: UpdateContext = UpdateContext(),
    ) -> Any: ...

    @abc.abstractmethod
    def snapshot(self, state: Any) -> dict: ...

    def wrap_student(self, agent: Agent) -> Agent:
        """The student as this teacher's tasks need it (JSRL's guided actor); by default
        the agent unchanged."""
        return agent

    def offline_env_steps(self, snapshot: dict) -> Any:
        """Env steps the teacher has played outside training (SFL's evaluation rollouts),
        read from its `snapshot`: results report them beside the training steps. By
        default 0: the teacher plays none."""
        del snapshot
        return 0.0

    def updates_before_adapting(self) -> int:
        """`update` calls before the teacher's sampling can first depend on its feedback
        (a periodic fit's first, as ALP-GMM's `fit_every`). A run with fewer updates sees
        the teacher's bootstrap only, and a shoot-out warns of it. By default 0: it adapts
        from the first update."""
        return 0

    def with_prior(self, params: Any, mean: jax.Array, std: jax.Array, enabled: jax.Array) -> Any:
        """`params` with the expert prior N(mean [D], std [D]) (in the teacher's task
        space) where `enabled` (a bool leaf, may be traced); by default unchanged."""
        del mean, std, enabled
        return params

    @property
    def configured_teacher(self) -> Teacher:
        """The teacher whose declared keys the config's `teacher` section sets: itself;
        a wrapper the build adds (the challenge) names the teacher it wraps."""
        return self


TEACHERS: Registry[Teacher] = Registry(
    "teacher",
    PluginGroup(
        "acl_jax.teachers",
        declares_keys=True,
        factory="factory(task_space, context=None, **config) declaring config_keys, e.g. "
        "acl.teachers.base.class_factory(YourTeacher)",
    ),
)
"""Teacher factories, called as factory(task_space=..., context=RunContext(...), **config);
plug-ins: entry points of the group `acl_jax.teachers` (docs/plugins.md)."""
