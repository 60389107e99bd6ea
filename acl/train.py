"""The curriculum loop.

    trainer = make_train(config)
    carry = trainer.init(key)
    carry, metrics = trainer.run_chunk(carry)      # jittable; one evaluation period
    metrics = trainer.train(key)                   # all chunks in one jittable call

A chunk is `iterations_per_chunk` iterations of: the teacher hands out tasks, the
instances roll `num_steps` steps (taking new tasks at their own resets in `episode` mode,
one drawn per (step, instance) slot or, with `loop.task_pool`, the next of a pool drawn
per iteration; or all resetting onto new levels in `batch` mode), the agent updates, the
teacher reads one feedback record per completed episode. Each chunk ends with an evaluation on the
fixed test set (`eval.test_set`: the env's named levels, e.g. the maze's held-out mazes,
with per-test-task solve rates; `eval.sampled_attempts`: episodes with sampled actions).

A teacher that owns a `guide` (JSRL) hands out a guide horizon h per instance
(`SampleInfo.guide_steps`); the guide then acts for the first h steps of each episode
(`acl.rollout.collect`). The test-set evaluation always plays the agent alone.

Periodic work (agent re-initialisation) is keyed on the iteration counter, which is not
part of the per-seed state: under `vmap` over seeds it stays a scalar, so `lax.cond`
stays a real branch instead of becoming a select that runs both sides.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from acl.agents import AGENTS
from acl.benchmark.challenges import (
    Challenge,
    ChallengeSpec,
    MappedEnv,
    apply_prior,
    make_challenge,
    student_due,
    teacher_space,
    to_env,
)
from acl.config import ExperimentConfig, check_kwargs
from acl.errors import ConfigError
from acl.evaluation import eval_test_set, evaluate, solve_rate
from acl.rollout import Slots, TaskPool, collect, start_slots
from acl.teachers import TEACHERS
from acl.teachers.base import RunContext, StudentSpec, compact_feedback
from envs import ENVS


@struct.dataclass
class SeedCarry:
    """Everything one seed carries between iterations."""

    agent_state: Any
    teacher_state: Any
    slots: Slots
    key: jax.Array
    challenge: Challenge | None = None
    """The run's challenge variant (acl.benchmark.challenges), when the trainer is
    `challenged`; constant over the run."""


@struct.dataclass
class LoopCarry:
    iteration: jax.Array
    """Iterations done so far; shared by all seeds (never batched)."""
    seed: SeedCarry


@struct.dataclass
class ChunkMetrics:
    """Metrics of one chunk (evaluation period) of one seed."""

    env_steps: jax.Array
    """Env steps done by the end of the chunk."""
    eval_pct_mastered: jax.Array
    eval_mean_return: jax.Array
    eval_solve_greedy: jax.Array
    """Per test task, [M]: share of its greedy episodes that succeed (`env.is_success`)."""
    eval_return: jax.Array
    """Per test task, [M]: mean return of its greedy episodes."""
    eval_solve_sampled: jax.Array | None
    """Per test task, [M]: share of its `eval.sampled_attempts` sampled-action episodes
    that succeed; None without sampled attempts."""
    eval_return_sampled: jax.Array | None
    """Per test task, [M]: mean return of its sampled-action episodes (or None)."""
    train_return: jax.Array
    """Mean return of the episodes completed in the chunk."""
    train_success: jax.Array
    """Share of those episodes beating the success threshold."""
    episodes: jax.Array
    """Episodes completed in the chunk."""
    feedback_dropped: jax.Array
    """Completed episodes the teacher did not see (beyond `loop.max_feedback`)."""
    task_pool_overflow: jax.Array
    """Resets beyond `loop.task_pool` in the chunk's iterations: those instances restarted
    on the task they had just run. Always 0 without a pool."""
    loss: jax.Array
    """Total agent loss of every iteration, [iterations_per_chunk]."""
    agent_metrics: dict
    """Agent update metrics averaged over the chunk."""
    tasks: jax.Array
    """A subsample of the tasks handed out in the chunk, [task_log_size, D]."""
    teacher_snapshot: dict
    """The teacher's internals at the evaluation (mixture, regions, buffer...)."""


@dataclass(frozen=True)
class Components:
    env: Any
    teacher: Any
    agent: Any


def build_components(config: ExperimentConfig, challenged: bool | None = None) -> Components:
    """Construct env, teacher and agent from the config; validates names and keys, no JIT.

    `challenged`: the teacher works in the unit cube that challenge data maps onto the
    env's tasks (acl.benchmark.challenges) instead of in the env's task space; None:
    when the config names a `challenge`."""
    if challenged is None:
        challenged = bool(config.challenge.name)
    env_kwargs = dict(config.env.kwargs)
    low, high = env_kwargs.pop("task_low", None), env_kwargs.pop("task_high", None)
    env_factory = ENVS.get(config.env.name, "env.name")
    check_kwargs(env_factory, env_kwargs, "env")
    env = env_factory(**env_kwargs)
    if low is not None or high is not None:
        space = env.task_space.replace(
            low=tuple(low if low is not None else env.task_space.low),
            high=tuple(high if high is not None else env.task_space.high),
            field_name="env.task_low/env.task_high",
        )
        env.task_space = space

    agent_factory = AGENTS.get(config.agent.name, "agent.name")
    check_kwargs(agent_factory, config.agent.kwargs, "agent")
    loop = config.loop
    steps_per_iteration = loop.num_envs * loop.num_steps
    num_updates = loop.total_env_steps // steps_per_iteration
    if loop.reinit_every:
        num_updates = max(1, loop.reinit_every // steps_per_iteration)
    agent_kwargs = {"total_updates": num_updates, **config.agent.kwargs}
    for key in ("update_epochs", "num_minibatches"):
        if key in agent_kwargs and int(agent_kwargs[key]) <= 0:
            raise ConfigError(f"agent.{key} must be a positive integer, got {agent_kwargs[key]}")
    minibatches = int(agent_kwargs.get("num_minibatches", 1))
    if steps_per_iteration % minibatches:
        raise ConfigError(
            f"agent.num_minibatches ({minibatches}) must divide num_envs * num_steps "
            f"({steps_per_iteration})"
        )
    agent = agent_factory(**agent_kwargs)

    teacher_factory = TEACHERS.get(config.teacher.name, "teacher.name")
    check_kwargs(teacher_factory, config.teacher.kwargs, "teacher", skip=("task_space", "context"))
    context = RunContext(
        env=env,
        return_bounds=tuple(env.return_bounds),
        loop_mode=loop.mode,
        num_envs=loop.num_envs,
        student=StudentSpec(config.agent.name, agent_kwargs),
    )
    space = teacher_space(env.task_space) if challenged else env.task_space
    teacher = teacher_factory(task_space=space, context=context, **config.teacher.kwargs)
    if loop.mode == "batch" and loop.num_steps < env.max_episode_steps:
        raise ConfigError(
            f"loop.num_steps ({loop.num_steps}) must be >= the episode length "
            f"({env.max_episode_steps}) in batch mode, so every rollout holds an episode"
        )
    return Components(env, teacher, agent)


class Trainer:
    """The jittable curriculum loop for one seed, plus helpers to vmap it over seeds."""

    def __init__(
        self,
        config: ExperimentConfig,
        components: Components | None = None,
        challenged: bool | None = None,
    ):
        """`challenged`: `init` takes a `Challenge` (acl.benchmark.challenges) that maps the
        teacher's unit cube onto env tasks, sets the student's re-initialisation period and
        the expert prior, as data. The test set stays on the env's own task space. None:
        when the config names a `challenge` (`config_challenge` builds its data)."""
        if challenged is None:
            challenged = bool(config.challenge.name)
        self.config = config
        self.challenged = challenged
        if challenged and config.loop.reinit_every:
            raise ConfigError(
                "loop.reinit_every and a challenge both set the forgetting period; "
                "use the challenge's reset_every"
            )
        c = components or build_components(config, challenged)
        self.env, self.teacher, self.agent = c.env, c.teacher, c.agent
        # Static: without a guide the rollout traces no guide code at all.
        self.guide = getattr(self.teacher, "guide", None)
        loop = config.loop
        bind = getattr(self.agent, "bind", None)
        if bind is not None:
            # Agents with per-instance state or env-defined rewards (DQN's staging rows
            # and HER relabelling) learn the env and the instance count here.
            bind(self.env, loop.num_envs)
        self.num_envs, self.num_steps = loop.num_envs, loop.num_steps
        self.task_pool = loop.task_pool if loop.mode == "episode" else None
        self.steps_per_iteration = loop.num_envs * loop.num_steps
        self.iterations_per_chunk = max(1, loop.eval_every // self.steps_per_iteration)
        self.steps_per_chunk = self.iterations_per_chunk * self.steps_per_iteration
        self.num_chunks = max(1, loop.total_env_steps // self.steps_per_chunk)
        self.reinit_iterations = (
            max(1, loop.reinit_every // self.steps_per_iteration) if loop.reinit_every else 0
        )
        # Names [M] of a named test set (`eval.test_set`), else (); tasks [M, D] in numpy,
        # not jax: closed-over jax arrays become hidden arguments of AOT calls.
        self.test_task_names, self.test_tasks = eval_test_set(self.env, config.eval)
        self.tasks_per_iteration = max(1, loop.task_log_size // self.iterations_per_chunk)

    def config_challenge(self) -> Challenge | None:
        """The data of the config's `challenge` section, or None when it names none."""
        spec = self.config.challenge
        if not spec.name:
            return None
        total_iterations = self.num_chunks * self.iterations_per_chunk
        return make_challenge(
            self.env,
            ChallengeSpec(spec.name, spec.expert),
            spec.seed,
            reset_every=max(1, round(spec.forgetting_period * total_iterations)),
        )

    @property
    def eval_key(self) -> jax.Array:
        """Fixed evaluation key: every evaluation plays the same starts."""
        return jax.random.PRNGKey(self.config.eval.seed)

    # -- the loop --------------------------------------------------------------------

    def init_agent(self, key):
        return self.agent.init(key, self.env.observation_space(), self.env.action_space())

    def init(self, key: jax.Array, challenge: Challenge | None = None) -> LoopCarry:
        if self.challenged != (challenge is not None):
            raise ValueError("a challenged Trainer's init takes a Challenge; others take none")
        agent_key, teacher_key, sample_key, reset_key, loop_key = jax.random.split(key, 5)
        agent_state = self.init_agent(agent_key)
        params = self.teacher.default_params()
        if challenge is not None:
            params = apply_prior(self.teacher, params, challenge)
        teacher_state = self.teacher.init(teacher_key, params)
        teacher_state, tasks, info = self.teacher.sample(teacher_state, sample_key, self.num_envs)
        env = self.rollout_env(challenge)
        slots = start_slots(
            env, self.agent, reset_key, tasks, info.train_on, self._guide_steps(info)
        )
        return LoopCarry(
            iteration=jnp.zeros((), jnp.int32),
            seed=SeedCarry(agent_state, teacher_state, slots, loop_key, challenge),
        )

    def rollout_env(self, challenge: Challenge | None):
        """The env the instances run: tasks in teacher coordinates when challenged."""
        return self.env if challenge is None else MappedEnv(self.env, challenge)

    def _guide_steps(self, info) -> jax.Array | None:
        """The guide horizons [n] of `info`, or None (not carried) without a guide."""
        return None if self.guide is None else info.guide_steps

    def env_tasks(self, tasks: jax.Array, challenge: Challenge | None) -> jax.Array:
        """Teacher tasks [..., D] as the env's tasks (for logs)."""
        return tasks if challenge is None else to_env(challenge, tasks)

    def _iteration(self, seed: SeedCarry, iteration: jax.Array):
        key, sample_key, rollout_key, update_key, reinit_key = jax.random.split(seed.key, 5)
        teacher_state, slots = seed.teacher_state, seed.slots
        env = self.rollout_env(seed.challenge)
        pool = next_tasks = next_train_on = next_guide_steps = None
        if self.task_pool is not None:
            # The k-th reset of the iteration takes pool entry k (acl.rollout.take_from_pool).
            teacher_state, tasks, info = self.teacher.sample(
                teacher_state, sample_key, self.task_pool
            )
            pool = TaskPool(tasks, info.train_on, self._guide_steps(info))
        elif self.config.loop.mode == "episode":
            # One task per (step, instance): an instance that resets at step t takes [t, i].
            n = self.num_steps * self.num_envs
            teacher_state, tasks, info = self.teacher.sample(teacher_state, sample_key, n)
            next_tasks = tasks.reshape(self.num_steps, self.num_envs, -1)
            next_train_on = info.train_on.reshape(self.num_steps, self.num_envs)
            next_guide_steps = self._guide_steps(info)
            if next_guide_steps is not None:
                next_guide_steps = next_guide_steps.reshape(self.num_steps, self.num_envs)
        else:
            teacher_state, tasks, info = self.teacher.sample(
                teacher_state, sample_key, self.num_envs
            )
            reset_key, rollout_key = jax.random.split(rollout_key)
            slots = start_slots(
                env, self.agent, reset_key, tasks, info.train_on, self._guide_steps(info)
            )
        slots, batch, feedback = collect(
            env,
            self.agent,
            seed.agent_state,
            slots,
            rollout_key,
            next_tasks,
            next_train_on,
            self.num_steps,
            guide=self.guide,
            next_guide_steps=next_guide_steps,
            pool=pool,
        )
        # Every completed episode is a reset: with a pool, the first P take its entries.
        overflow = None
        if pool is not None:
            handed_out = jnp.minimum(feedback.count, self.task_pool).astype(jnp.int32)
            overflow = feedback.count.astype(jnp.int32) - handed_out
            feedback = feedback.replace(handed_out=handed_out)
        episode_stats = {
            "return_sum": (feedback.episode_return * feedback.mask).sum(),
            "success_sum": (feedback.success & feedback.mask).sum(),
            "episodes": feedback.mask.sum(),
        }
        dropped = jnp.zeros((), jnp.int32)
        if self.config.loop.max_feedback:
            feedback, dropped = compact_feedback(feedback, self.config.loop.max_feedback)
        agent_state, agent_metrics = self.agent.update(seed.agent_state, batch, update_key)
        # A key of its own, so the agent's stream is the same with any teacher.
        teacher_key = jax.random.fold_in(update_key, 1)
        teacher_state = self.teacher.update(
            teacher_state, teacher_key, tasks, feedback, batch, iteration
        )
        due = None
        if seed.challenge is not None:
            # A real branch unless challenges with different periods share a vmap.
            due = student_due(seed.challenge, iteration)
        elif self.reinit_iterations:
            due = (iteration + 1) % self.reinit_iterations == 0
        if due is not None:
            agent_state = jax.lax.cond(
                due, lambda: self.init_agent(reinit_key), lambda: agent_state
            )
        stats = {
            **episode_stats,
            "dropped": dropped,
            "pool_overflow": jnp.zeros((), jnp.int32) if overflow is None else overflow,
            "agent": agent_metrics,
            "tasks": self.env_tasks(tasks[: self.tasks_per_iteration], seed.challenge),
        }
        return SeedCarry(agent_state, teacher_state, slots, key, seed.challenge), stats

    def run_iterations(self, carry: LoopCarry, count: int) -> tuple[LoopCarry, dict]:
        """`count` loop iterations (rollout, teacher, agent update), no evaluation.

        Returns the carry and per-iteration stats with a leading [count] axis."""
        iterations = carry.iteration + jnp.arange(count, dtype=jnp.int32)
        seed, stats = jax.lax.scan(self._iteration, carry.seed, iterations)
        return LoopCarry(iteration=carry.iteration + count, seed=seed), stats

    def run_chunk(self, carry: LoopCarry) -> tuple[LoopCarry, ChunkMetrics]:
        """`iterations_per_chunk` iterations, then an evaluation on the test set."""
        after, stats = self.run_iterations(carry, self.iterations_per_chunk)
        seed = after.seed
        ev = self.config.eval
        result = evaluate(
            self.env,
            self.agent,
            seed.agent_state,
            self.test_tasks,
            self.eval_key,
            ev.episodes_per_task,
            ev.sampled_attempts,
        )
        sampled = result.sampled_returns
        iteration = after.iteration
        episodes = stats["episodes"].sum()
        metrics = ChunkMetrics(
            env_steps=iteration * self.steps_per_iteration,
            eval_pct_mastered=result.pct_mastered,
            eval_mean_return=result.mean_return,
            eval_solve_greedy=solve_rate(self.env, result.returns),
            eval_return=result.returns.mean(axis=1),
            eval_solve_sampled=None if sampled is None else solve_rate(self.env, sampled),
            eval_return_sampled=None if sampled is None else sampled.mean(axis=1),
            train_return=stats["return_sum"].sum() / jnp.maximum(episodes, 1),
            train_success=stats["success_sum"].sum() / jnp.maximum(episodes, 1),
            episodes=episodes,
            feedback_dropped=stats["dropped"].sum(),
            task_pool_overflow=stats["pool_overflow"].sum(),
            loss=stats["agent"]["loss"],
            agent_metrics=jax.tree.map(jnp.mean, stats["agent"]),
            tasks=stats["tasks"].reshape(-1, stats["tasks"].shape[-1]),
            teacher_snapshot=self.teacher.snapshot(seed.teacher_state),
        )
        return after, metrics

    def train(
        self, key: jax.Array, challenge: Challenge | None = None
    ) -> tuple[LoopCarry, ChunkMetrics]:
        """The whole run; metrics have a leading [num_chunks] axis."""

        def chunk(carry, _):
            return self.run_chunk(carry)

        return jax.lax.scan(chunk, self.init(key, challenge), None, length=self.num_chunks)

    # -- many seeds ------------------------------------------------------------------

    @property
    def carry_axes(self) -> LoopCarry:
        """vmap axes of LoopCarry: the iteration counter and the challenge are shared, the
        rest per seed."""
        return self.carry_axes_for(None)

    def carry_axes_for(self, challenge_axis: int | None) -> LoopCarry:
        """vmap axes with the challenge batched (0) or shared (None)."""
        return LoopCarry(iteration=None, seed=SeedCarry(0, 0, 0, 0, challenge_axis))

    def seed_keys(self) -> jax.Array:
        c = self.config
        return jnp.stack([jax.random.PRNGKey(c.seed + i) for i in range(c.num_seeds)])

    def jit_init_seeds(self, challenge_axis: int | None = None):
        """jit(vmap(init)) over seed keys [S] (and, when challenged, a Challenge shared by
        all seeds, or batched [S, ...] with challenge_axis=0)."""
        axes = self.carry_axes_for(challenge_axis)
        if self.challenged:
            return jax.jit(jax.vmap(self.init, in_axes=(0, challenge_axis), out_axes=axes))
        return jax.jit(jax.vmap(self.init, out_axes=axes))

    def jit_run_chunk_seeds(self, challenge_axis: int | None = None):
        axes = self.carry_axes_for(challenge_axis)
        return jax.jit(jax.vmap(self.run_chunk, in_axes=(axes,), out_axes=(axes, 0)))


def make_train(config: ExperimentConfig) -> Trainer:
    return Trainer(config)


def replace_config(config: ExperimentConfig, **sections) -> ExperimentConfig:
    """Copy `config` with section fields changed, e.g. loop={"num_envs": 2}."""
    changes = {}
    for name, values in sections.items():
        current = getattr(config, name)
        if dataclasses.is_dataclass(current) and isinstance(values, dict):
            changes[name] = dataclasses.replace(current, **values)
        else:
            changes[name] = values
    return dataclasses.replace(config, **changes)
