"""The composition root: a config becomes env, teacher and agent, and then a loop.

    trainer = make_train(config)                  # acl.loop.train.Trainer over built components
    data = run_data(config, trainer)              # what the config gives as data, or None
    carry = trainer.jit_init_seeds()(trainer.seed_keys(), data)

Here, and only here, names are looked up in the registries and wrappers applied:
- a config `challenge` (or `challenged=True`) wraps the teacher with `with_challenge`
  (acl.teachers.challenge): it then works in the unit cube that the challenge's data
  (`make_challenge`) maps onto the env's tasks, and `run_data` hands that data (with the
  forgetting period and the expert prior) to the compiled loop;
- the teacher's `wrap_student(agent)` wraps the student it serves (JSRL's guide);
- a teacher's `RunContext` carries what it may need built or read: `make_agent` (a
  registered agent from its keys, PAIRED's learners) and `load_agent` (a finished run
  directory's agent, JSRL's saved guide; `load_run_agent`, the one function that rebuilds
  an agent from a run directory, which acl.run.results uses too).

A name is a built-in, an installed plug-in's entry point or a `package.module:Name`
(acl.core.registry); whatever a factory builds is checked against its contract (`TaskEnv`,
`Teacher`, `Agent`) here, so a plug-in that builds something else fails in one line
before anything compiles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from acl.agents import AGENTS
from acl.agents.base import Agent
from acl.config import (
    ChallengeSpec,
    ExperimentConfig,
    LoopConfig,
    check_kwargs,
    config_keys,
    parse_config,
)
from acl.core import run_files
from acl.core.errors import ConfigError
from acl.core.registry import Registry
from acl.core.spaces import Box, task_bound
from acl.loop.carry import RunData
from acl.loop.evaluation import EvalPlan
from acl.loop.placement import DeviceSplit
from acl.loop.rollout import play
from acl.loop.tasks import task_layout
from acl.loop.train import Components, Seeds, Trainer
from acl.teachers import TEACHERS
from acl.teachers.base import AgentRequest, RunContext, StudentSpec, Teacher
from acl.teachers.challenge import (
    Challenge,
    ChallengedTeacher,
    identity_challenge,
    rugged_permutation,
    teacher_space,
    to_teacher,
    with_challenge,
)
from envs import ENVS
from envs.base import TaskEnv

HIGH_EXPERT_STD = 0.1
"""Std of the high expert prior, as a fraction of each dimension's range."""


def checked_build(registry: Registry, name: str, field: str, built, contract: type):
    """`built`, what `registry`'s factory `name` made, if it keeps `contract`; else a
    ConfigError naming the config field and where the factory comes from (a plug-in's
    distribution and entry point)."""
    if not isinstance(built, contract):
        raise ConfigError(
            f"{field}: {registry.describe(name)} built a {type(built).__name__} object, not an "
            f"instance of {contract.__module__}.{contract.__qualname__}"
        )
    return built


def build_env(config: ExperimentConfig) -> TaskEnv:
    """The config's env, with `env.task_low/high` narrowing or widening its task space."""
    env_kwargs = dict(config.env.kwargs)
    low, high = env_kwargs.pop("task_low", None), env_kwargs.pop("task_high", None)
    env_factory = ENVS.get(config.env.name, "env.name")
    check_kwargs(env_factory, env_kwargs, "env")
    env = checked_build(ENVS, config.env.name, "env.name", env_factory(**env_kwargs), TaskEnv)
    if low is not None or high is not None:
        space = env.task_space
        env.task_space = space.replace(
            low=space.low if low is None else task_bound(low, space, "env.task_low"),
            high=space.high if high is None else task_bound(high, space, "env.task_high"),
            field_name="env.task_low/env.task_high",
        )
    return env


def agent_kwargs(config: ExperimentConfig) -> dict:
    """The agent's config keys, with the update count its schedules span."""
    schedule = config.loop.schedule
    steps_per_iteration = schedule.steps_per_iteration
    kwargs = {"total_updates": schedule.agent_updates, **config.agent.kwargs}
    counts = {}
    for key in ("update_epochs", "num_minibatches"):
        value = kwargs.get(key, 1)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            # Not a count at all: the agent's own declaration names the expected type.
            return kwargs
        if value <= 0:
            raise ConfigError(f"agent.{key} must be a positive integer, got {value}")
        counts[key] = value
    minibatches = counts["num_minibatches"]
    if steps_per_iteration % minibatches:
        raise ConfigError(
            f"agent.num_minibatches ({minibatches}) must divide num_envs * num_steps "
            f"({steps_per_iteration})"
        )
    return kwargs


def make_agent(request: AgentRequest) -> Agent:
    """A registered agent from `request` (unbound): its `defaults` where the agent takes
    the key, its `kwargs` over them; ConfigError naming the request's fields for an
    unknown name or key, or an update count that is not positive."""
    factory = AGENTS.get(request.name, request.name_field)
    kwargs = dict(request.kwargs)
    check_kwargs(factory, kwargs, request.kwargs_field)
    accepted = config_keys(factory)
    merged = {k: v for k, v in request.defaults.items() if k in accepted}
    merged.update(kwargs)
    for key in ("update_epochs", "num_minibatches"):
        if key in merged and int(merged[key]) <= 0:
            raise ConfigError(
                f"{request.kwargs_field}.{key} must be a positive integer, got {merged[key]}"
            )
    return checked_build(AGENTS, request.name, request.name_field, factory(**merged), Agent)


def load_run_agent(run_dir: str | Path, env, agent: Agent | None = None) -> tuple[Agent, Any]:
    """(agent, states): a finished run directory's agent and every seed's final state
    ([S, ...], host arrays), the one place an agent is rebuilt from a run directory.

    `agent`: the agent to read the states for (a rebuilt trainer's); None: the run's
    agent rebuilt from its config.yaml (registry name and keys) and bound to `env` as the
    run bound it. The states are read against the shapes the agent has on `env`'s spaces
    (only shapes: nothing is computed or compiled). ConfigError when config.yaml or the
    agent file is missing, or when the shapes differ (`env` has another observation or
    action space than the run's)."""
    path = Path(run_dir)
    run_files.require_finished(path)
    config = parse_config(run_files.read_config_dict(path))
    if agent is None:
        built = AGENTS.get(config.agent.name, "agent.name")(**config.agent.kwargs)
        agent = checked_build(AGENTS, config.agent.name, "agent.name", built, Agent)
        agent.bind(env, config.loop.num_envs)

    def init_seeds():
        keys = jax.random.split(jax.random.PRNGKey(0), config.num_seeds)
        return jax.vmap(lambda k: agent.init(k, env.observation_space(), env.action_space()))(keys)

    template = jax.eval_shape(init_seeds)
    states = run_files.read_agent_states(path, template)
    same = jax.tree.map(lambda a, b: np.shape(a) == np.shape(b), template, states)
    if not all(jax.tree.leaves(same)):
        raise ConfigError(
            f"the agent saved in {path} has other parameter shapes than an agent on "
            f"{type(env).__name__}: another observation or action space"
        )
    return agent, states


def load_run_agent_state(
    run_dir: str | Path, env, seed_index: int, agent: Agent | None = None
) -> tuple[Agent, Any]:
    """(agent, state): `load_run_agent`, the final state of seed `seed_index` alone (host
    arrays); ConfigError also for an index outside [0, num_seeds). The `RunContext`'s
    `load_agent`."""
    agent, states = load_run_agent(run_dir, env, agent)
    num_seeds = len(jax.tree.leaves(states)[0])
    if not 0 <= seed_index < num_seeds:
        raise ConfigError(f"seed index must be in [0, {num_seeds}) for {run_dir}, got {seed_index}")
    return agent, jax.tree.map(lambda x: np.asarray(x[seed_index]), states)


def run_context(
    config: ExperimentConfig, env, student_kwargs: dict | None = None, agent=None
) -> RunContext:
    """What a teacher factory may read of the run: `env` (the run's, or one a script
    built itself), the loop's mode and width, the student's name and keyword arguments
    (`agent_kwargs(config)` unless given), its agent object (`agent`, when built), the
    rollout, and the builder and loader of agents."""
    student_kwargs = agent_kwargs(config) if student_kwargs is None else student_kwargs
    return RunContext(
        env=env,
        return_bounds=None if env.return_bounds is None else tuple(env.return_bounds),
        loop_mode=config.loop.mode,
        num_envs=config.loop.num_envs,
        shard_envs=config.loop.shard_envs,
        overlap_teacher=config.loop.overlap_teacher,
        student=StudentSpec(config.agent.name, student_kwargs),
        agent=agent,
        play=play,
        make_agent=make_agent,
        load_agent=load_run_agent_state,
    )


def build_components(config: ExperimentConfig, challenged: bool | None = None) -> Components:
    """Construct env, teacher and agent from the config; validates names and keys, no JIT.

    `challenged`: wrap the teacher with `with_challenge`, so that it works in the unit cube
    a `Challenge` maps onto the env's tasks; None: when the config names a `challenge`."""
    if challenged is None:
        challenged = bool(config.challenge.name)
    env = build_env(config)
    agent_factory = AGENTS.get(config.agent.name, "agent.name")
    check_kwargs(agent_factory, config.agent.kwargs, "agent")
    student_kwargs = agent_kwargs(config)
    agent = checked_build(
        AGENTS, config.agent.name, "agent.name", agent_factory(**student_kwargs), Agent
    )

    loop = config.loop
    teacher_factory = TEACHERS.get(config.teacher.name, "teacher.name")
    check_kwargs(teacher_factory, config.teacher.kwargs, "teacher", skip=("task_space", "context"))
    context = run_context(config, env, student_kwargs, agent)
    space = teacher_space(env.task_space) if challenged else env.task_space
    teacher = checked_build(
        TEACHERS,
        config.teacher.name,
        "teacher.name",
        teacher_factory(task_space=space, context=context, **config.teacher.kwargs),
        Teacher,
    )
    if challenged:
        teacher = with_challenge(teacher, env.task_space)
    agent = teacher.wrap_student(agent)
    if loop.mode == "batch" and loop.num_steps < env.max_episode_steps:
        raise ConfigError(
            f"loop.num_steps ({loop.num_steps}) must be >= the episode length "
            f"({env.max_episode_steps}) in batch mode, so every rollout holds an episode"
        )
    return Components(env, teacher, agent)


def make_train(
    config: ExperimentConfig,
    components: Components | None = None,
    challenged: bool | None = None,
) -> Trainer:
    """The loop of `config`, over `components` or the ones the config names: its schedule,
    task layout, evaluation plan, seeds and device split, each read from the config here."""
    components = components or build_components(config, challenged)
    loop = config.loop
    schedule = loop.schedule
    return Trainer(
        components,
        schedule,
        task_layout(loop.mode, loop.task_pool, schedule),
        EvalPlan.create(components.env, config.eval),
        Seeds(config.seed, config.num_seeds),
        max_feedback=loop.max_feedback,
        device_split=device_split(loop),
    )


def device_split(loop: LoopConfig) -> DeviceSplit:
    """How `loop` asks to use several devices (acl.loop.devices)."""
    if loop.overlap_teacher:
        return DeviceSplit.TEACHER_BESIDE
    if loop.shard_envs:
        return DeviceSplit.ENVS
    return DeviceSplit.SEEDS


def challenge_bounds(env, challenge: str) -> Box:
    """The env-space box a named challenge's teacher space maps onto."""
    if challenge in ("unfeasible", "trivial"):
        attribute = f"{challenge}_bounds"
        bounds = env.unfeasible_bounds if challenge == "unfeasible" else env.trivial_bounds
        if bounds is None:
            raise ConfigError(
                f"env {env.name!r} declares no {attribute}, so the {challenge!r} challenge "
                "is undefined for it"
            )
        return bounds
    return env.task_space


def make_challenge(
    env,
    spec: ChallengeSpec,
    seed: int = 0,
    reset_every: int = 0,
) -> Challenge:
    """The data of `spec` for `env` (acl.teachers.challenge's table).

    Args:
      seed: seeds the rugged permutation and the low expert's sub-space (the same for
        every teacher and run seed, so teachers face the same challenge).
      reset_every: iterations between student re-initialisations for "forgetting".
    """
    bounds = challenge_bounds(env, spec.challenge)
    dim = bounds.dim
    if spec.challenge == "forgetting" and reset_every <= 0:
        raise ConfigError("the forgetting challenge needs reset_every > 0 iterations")
    identity_bounds = identity_challenge(bounds).replace(
        reset_every=jnp.asarray(reset_every if spec.challenge == "forgetting" else 0, jnp.int32),
    )
    if spec.challenge == "rugged":
        identity_bounds = identity_bounds.replace(
            interval_perm=jnp.asarray(rugged_permutation(dim, seed))
        )
    if spec.expert == "none":
        return identity_bounds
    if spec.expert == "high":
        easy = env.easy_task
        easy = np.asarray(env.task_space.default_task if easy is None else easy)
        mean = to_teacher(identity_bounds, jnp.asarray(easy, jnp.float32))
        std = jnp.full((dim,), HIGH_EXPERT_STD, jnp.float32)
    else:
        rng = np.random.default_rng([seed, 1])
        start = rng.uniform(0.0, 0.5, size=dim)
        mean = jnp.asarray(start + 0.25, jnp.float32)
        std = jnp.full((dim,), 0.25 / np.sqrt(3.0), jnp.float32)
    return identity_bounds.replace(prior_mean=mean, prior_std=std, use_prior=jnp.asarray(True))


def challenge_data(trainer: Trainer, challenge: Challenge) -> RunData:
    """The `RunData` of one challenge for a trainer whose teacher is challenged."""
    if not isinstance(trainer.teacher, ChallengedTeacher):
        raise ConfigError(
            "a challenge needs a challenged teacher: build with challenged=True or name a "
            "challenge in the config"
        )
    return RunData(
        teacher_params=trainer.teacher.params_for(challenge),
        reinit_every=challenge.reset_every,
    )


def config_challenge(config: ExperimentConfig, trainer: Trainer) -> Challenge | None:
    """The data of `config`'s `challenge` section for its `trainer`, or None when it
    names none."""
    spec = config.challenge
    if not spec.name:
        return None
    total_iterations = trainer.schedule.iterations
    return make_challenge(
        trainer.env,
        ChallengeSpec(spec.name, spec.expert),
        spec.seed,
        reset_every=max(1, round(spec.forgetting_period * total_iterations)),
    )


def run_data(config: ExperimentConfig, trainer: Trainer) -> RunData | None:
    """What `config` hands its trainer's compiled loop as data: the challenge's, or None."""
    challenge = config_challenge(config, trainer)
    return None if challenge is None else challenge_data(trainer, challenge)
