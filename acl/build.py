"""The composition root: a config becomes env, teacher and agent, and then a loop.

    trainer = make_train(config)                  # acl.loop.train.Trainer over built components
    data = run_data(trainer)                      # what the config gives as data, or None
    carry = trainer.jit_init_seeds()(trainer.seed_keys(), data)

Here, and only here, names are looked up in the registries and wrappers applied:
- a config `challenge` (or `challenged=True`) wraps the teacher with `with_challenge`
  (acl.benchmark.challenges): it then works in the unit cube that the challenge's data
  maps onto the env's tasks, and `run_data` hands that data (with the forgetting period
  and the expert prior) to the compiled loop;
- a teacher with `wrap_student(agent)` (JSRL's guide) wraps the student it serves.
"""

from __future__ import annotations

from acl.agents import AGENTS
from acl.benchmark.challenges import (
    Challenge,
    ChallengedTeacher,
    ChallengeSpec,
    make_challenge,
    teacher_space,
    with_challenge,
)
from acl.config import ExperimentConfig, check_kwargs
from acl.core.errors import ConfigError
from acl.core.spaces import task_bound
from acl.loop.rollout import play
from acl.loop.train import Components, RunData, Trainer
from acl.teachers import TEACHERS
from acl.teachers.base import RunContext, StudentSpec
from envs import ENVS


def build_env(config: ExperimentConfig):
    """The config's env, with `env.task_low/high` narrowing or widening its task space."""
    env_kwargs = dict(config.env.kwargs)
    low, high = env_kwargs.pop("task_low", None), env_kwargs.pop("task_high", None)
    env_factory = ENVS.get(config.env.name, "env.name")
    check_kwargs(env_factory, env_kwargs, "env")
    env = env_factory(**env_kwargs)
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
    loop = config.loop
    steps_per_iteration = loop.num_envs * loop.num_steps
    num_updates = loop.total_env_steps // steps_per_iteration
    if loop.reinit_every:
        num_updates = max(1, loop.reinit_every // steps_per_iteration)
    if loop.lr_schedule_updates:
        num_updates = loop.lr_schedule_updates
    kwargs = {"total_updates": num_updates, **config.agent.kwargs}
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


def run_context(
    config: ExperimentConfig, env, student_kwargs: dict | None = None, agent=None
) -> RunContext:
    """What a teacher factory may read of the run: `env` (the run's, or one a script
    built itself), the loop's mode and width, the student's name and keyword arguments
    (`agent_kwargs(config)` unless given) and its agent object (`agent`, when built)."""
    student_kwargs = agent_kwargs(config) if student_kwargs is None else student_kwargs
    return RunContext(
        env=env,
        return_bounds=tuple(env.return_bounds),
        loop_mode=config.loop.mode,
        num_envs=config.loop.num_envs,
        shard_envs=config.loop.shard_envs,
        overlap_teacher=config.loop.overlap_teacher,
        student=StudentSpec(config.agent.name, student_kwargs),
        agent=agent,
        play=play,
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
    agent = agent_factory(**student_kwargs)

    loop = config.loop
    teacher_factory = TEACHERS.get(config.teacher.name, "teacher.name")
    check_kwargs(teacher_factory, config.teacher.kwargs, "teacher", skip=("task_space", "context"))
    context = run_context(config, env, student_kwargs, agent)
    space = teacher_space(env.task_space) if challenged else env.task_space
    teacher = teacher_factory(task_space=space, context=context, **config.teacher.kwargs)
    if challenged:
        teacher = with_challenge(teacher, env.task_space)
    wrap_student = getattr(teacher, "wrap_student", None)
    if wrap_student is not None:
        agent = wrap_student(agent)
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
    """The loop of `config`, over `components` or the ones the config names."""
    return Trainer(config, components or build_components(config, challenged))


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


def config_challenge(trainer: Trainer) -> Challenge | None:
    """The data of the config's `challenge` section, or None when it names none."""
    spec = trainer.config.challenge
    if not spec.name:
        return None
    total_iterations = trainer.num_chunks * trainer.iterations_per_chunk
    return make_challenge(
        trainer.env,
        ChallengeSpec(spec.name, spec.expert),
        spec.seed,
        reset_every=max(1, round(spec.forgetting_period * total_iterations)),
    )


def run_data(trainer: Trainer) -> RunData | None:
    """What the trainer's config hands its compiled loop as data: the challenge's, or
    None."""
    challenge = config_challenge(trainer)
    return None if challenge is None else challenge_data(trainer, challenge)
