"""The curriculum loop: a nest of scans over one seed, vmapped over seeds.

    trainer = acl.build.make_train(config)
    carry = trainer.init(key)
    carry, metrics = trainer.run_chunk(carry)      # jittable; one evaluation period
    carry, metrics = trainer.train(key)            # all chunks in one jittable call

    train       = scan(run_chunk)                  over the run's chunks
    run_chunk   = scan(_iteration), then evaluate  over a chunk's iterations
    _iteration  = draw -> rollout -> agent and teacher updates

An iteration: the teacher draws tasks, the instances roll `num_steps` steps taking new
tasks at their resets, the agent updates on the rollout, the teacher reads one feedback
record per completed episode. Each chunk ends with an evaluation on the fixed test set.

Two pieces are composed around this core, and it never asks which it has:
- the task layout (acl.loop.tasks): one task per (step, instance) slot, a pool handed
  out in reset order, or one level per instance in batch mode;
- the placement (acl.loop.placement): one device, each seed's instances over devices,
  or the teacher's update on a second device.
The counts come precomputed in a `Schedule` (acl.loop.schedule); the loop never sees
the config. Components and pieces are built from a config by acl.build (`make_train`).

The loop knows no teacher: it calls every teacher through the contract of
acl.teachers.base, and what varies between runs of one compiled program (a challenge's
teacher params, the forgetting period, a sweep's hyperparameters) comes in as `RunData`.

Periodic work (student re-initialisation) is keyed on the iteration counter, which is not
part of the per-seed state: under `vmap` over seeds it stays a scalar, so `lax.cond`
stays a real branch instead of becoming a select that runs both sides.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from acl.agents.base import Agent
from acl.core.errors import ConfigError
from acl.core.types import Feedback, compact_feedback
from acl.loop.carry import ChunkMetrics, IterationKeys, LoopCarry, RunData, SeedCarry
from acl.loop.evaluation import EvalPlan, evaluate, solve_rate
from acl.loop.placement import DeviceSplit, OneDevice, Placement
from acl.loop.rollout import Slots, collect, start_slots
from acl.loop.schedule import Schedule
from acl.loop.tasks import RolloutPlan, TaskLayout
from acl.teachers.base import Teacher, UpdateContext


@dataclass(frozen=True)
class Components:
    env: Any
    teacher: Teacher
    agent: Agent


@dataclass(frozen=True)
class Seeds:
    """The run's seeds: `first`, `first + 1`, ... `count` of them."""

    first: int = 0
    count: int = 1

    def keys(self, count: int | None = None) -> jax.Array:
        """[count] keys of seeds first, first + 1, ... (None: `self.count`)."""
        count = self.count if count is None else count
        return jnp.stack([jax.random.PRNGKey(self.first + i) for i in range(count)])


@dataclass(frozen=True, eq=False)
class Trainer:
    """The jittable curriculum loop for one seed, plus its vmaps over seeds."""

    components: Components
    schedule: Schedule
    task_layout: TaskLayout
    evaluation: EvalPlan
    seeds: Seeds = Seeds()
    max_feedback: int = 0
    """Completed episodes passed to the teacher per update (0: all)."""
    placement: Placement = OneDevice()
    """Where the iteration's parts run (acl.loop.devices sets it for a mesh)."""
    device_split: DeviceSplit = DeviceSplit.SEEDS
    """How the run asks to use several devices (acl.loop.devices)."""

    def __post_init__(self):
        # Agents with per-instance state or env-defined rewards (DQN's staging rows
        # and HER relabelling) learn the env and the instance count here.
        self.agent.bind(self.env, self.schedule.num_envs)

    @property
    def env(self) -> Any:
        return self.components.env

    @property
    def teacher(self) -> Teacher:
        return self.components.teacher

    @property
    def agent(self) -> Agent:
        return self.components.agent

    def placed(self, placement: Placement) -> Trainer:
        """This loop with its iterations laid out by `placement` (acl.loop.devices)."""
        return dataclasses.replace(self, placement=placement)

    def init_agent(self, key: jax.Array, hyper: Any = None) -> Any:
        """The agent's initial state, with `hyper` as its numeric hyperparameters (None:
        the agent's own)."""
        state = self.agent.init(key, self.env.observation_space(), self.env.action_space())
        return state if hyper is None else state.replace(hyper=hyper)

    def init(self, key: jax.Array, data: RunData | None = None) -> LoopCarry:
        data = RunData() if data is None else data
        if data.reinit_every is not None and self.schedule.reinit_iterations:
            raise ConfigError(
                "loop.reinit_every and the run's data both set the forgetting period; "
                "give one of them"
            )
        agent_key, teacher_key, sample_key, reset_key, loop_key = jax.random.split(key, 5)
        agent_state = self.init_agent(agent_key, data.agent_hyper)
        params = (
            self.teacher.default_params() if data.teacher_params is None else data.teacher_params
        )
        teacher_state = self.teacher.init(teacher_key, params)
        teacher_state, tasks, info = self.teacher.sample(
            teacher_state, sample_key, self.schedule.num_envs
        )
        slots = self._start_slots(reset_key, tasks, info)
        reinit_every = data.reinit_every
        if reinit_every is not None:
            reinit_every = jnp.asarray(reinit_every, jnp.int32)
        teacher_state, drawn = self.placement.first_draw(self._draw, teacher_state, loop_key)
        return LoopCarry(
            iteration=jnp.zeros((), jnp.int32),
            seed=SeedCarry(agent_state, teacher_state, slots, loop_key, reinit_every, drawn),
        )

    def _draw(self, teacher_state: Any, sample_key: jax.Array):
        """(teacher state, tasks [tasks_per_draw, D'], SampleInfo) of one iteration."""
        return self.teacher.sample(teacher_state, sample_key, self.task_layout.tasks_per_draw)

    def _start_slots(self, key: jax.Array, tasks: jax.Array, info) -> Slots:
        """This device's instances reset onto their share of tasks [num_envs, D']."""
        instances = self.placement.instances
        return start_slots(
            self.env,
            self.agent,
            instances.key(key),
            instances.mine(tasks),
            instances.mine(info.train_on),
        )

    def _iteration(self, seed: SeedCarry, iteration: jax.Array) -> tuple[SeedCarry, dict]:
        keys = IterationKeys.split(seed.key)
        place = self.placement
        teacher_state, tasks, info = place.this_draw(
            seed.teacher_state, seed.drawn, self._draw, keys.sample
        )
        plan = self.task_layout.plan(
            place.instances, self._start_slots, seed.slots, tasks, info, keys.rollout
        )

        slots, batch, feedback = place.rollout(lambda: self._collect(seed.agent_state, plan))
        teacher_batch, feedback = place.for_teacher(batch, feedback)
        feedback, overflow = self.task_layout.handed_out(feedback)
        episode_stats = _episode_sums(feedback)
        feedback, dropped = self._limit_feedback(feedback)

        def update_agent():
            return self.agent.update(
                seed.agent_state, batch, keys.update, axis_name=place.gradient_axis
            )

        # A key of its own, so the agent's stream is the same with any teacher.
        teacher_key = jax.random.fold_in(keys.update, 1)

        def update_teacher(student):
            context = UpdateContext(rollout=teacher_batch, student=student)
            return self.teacher.update(
                teacher_state, teacher_key, tasks, feedback, iteration, context
            )

        def draw_next(state):
            return self._draw(state, IterationKeys.split(keys.following).sample)

        agent_state, agent_metrics, teacher_state, drawn = place.updates(
            update_agent, update_teacher, draw_next, (teacher_state, tasks, info)
        )
        agent_state = self._forget(seed, iteration, agent_state, keys.reinit)
        stats = {
            **episode_stats,
            "dropped": dropped,
            "pool_overflow": overflow,
            "agent": agent_metrics,
            # The env's own columns: what the instances ran.
            "tasks": tasks[: self.schedule.tasks_logged_per_iteration, : self.env.task_space.dim],
        }
        carry = SeedCarry(
            agent_state, teacher_state, slots, keys.following, seed.reinit_every, drawn
        )
        return carry, stats

    def _collect(self, agent_state: Any, plan: RolloutPlan) -> tuple:
        """(slots, Transition [T, N], Feedback [T * N]) of the rollout `plan` describes."""
        return collect(
            self.env,
            self.agent,
            agent_state,
            plan.slots,
            self.placement.instances.key(plan.key),
            plan.next_tasks,
            plan.next_train_on,
            self.schedule.num_steps,
            pool=plan.pool,
        )

    def _limit_feedback(self, feedback: Feedback) -> tuple[Feedback, jax.Array]:
        """At most `max_feedback` records (the valid first), and how many did not fit."""
        if not self.max_feedback:
            return feedback, jnp.zeros((), jnp.int32)
        return compact_feedback(feedback, self.max_feedback)

    def _forget(self, seed: SeedCarry, iteration: jax.Array, agent_state: Any, key: jax.Array):
        """The student, re-initialised where the forgetting period ends after `iteration`:
        a real branch unless runs with different periods share a vmap."""
        if seed.reinit_every is not None:
            period = jnp.maximum(seed.reinit_every, 1)
            due = (seed.reinit_every > 0) & ((iteration + 1) % period == 0)
        elif self.schedule.reinit_iterations:
            due = (iteration + 1) % self.schedule.reinit_iterations == 0
        else:
            return agent_state
        # The new student keeps the hyperparameters of the one it replaces (a sweep's).
        hyper = seed.agent_state.hyper
        return jax.lax.cond(due, lambda: self.init_agent(key, hyper), lambda: agent_state)

    def run_iterations(self, carry: LoopCarry, count: int) -> tuple[LoopCarry, dict]:
        """`count` loop iterations (rollout, teacher, agent update), no evaluation.

        Returns the carry and per-iteration stats with a leading [count] axis."""
        iterations = carry.iteration + jnp.arange(count, dtype=jnp.int32)
        seed, stats = jax.lax.scan(self._iteration, carry.seed, iterations)
        seed = self.placement.after_iterations(seed)
        return LoopCarry(iteration=carry.iteration + count, seed=seed), stats

    def run_chunk(self, carry: LoopCarry) -> tuple[LoopCarry, ChunkMetrics]:
        """`iterations_per_chunk` iterations, then an evaluation on the test set."""
        after, stats = self.run_iterations(carry, self.schedule.iterations_per_chunk)
        plan = self.evaluation

        def evaluation():
            return evaluate(
                self.env,
                self.agent,
                after.seed.agent_state,
                plan.test_tasks,
                plan.key,
                plan.episodes_per_task,
                plan.sampled_attempts,
            )

        result, seed, stats["agent"] = self.placement.evaluated(
            evaluation, after.seed, stats["agent"]
        )
        sampled = result.sampled_returns
        episodes = stats["episodes"].sum()
        metrics = ChunkMetrics(
            env_steps=after.iteration * self.schedule.steps_per_iteration,
            eval_pct_mastered=result.pct_mastered,
            eval_mean_return=result.mean_return,
            eval_solve_greedy=solve_rate(self.env, result.returns),
            eval_return=result.returns.mean(axis=1),
            eval_solve_sampled=None if sampled is None else solve_rate(self.env, sampled),
            eval_return_sampled=None if sampled is None else sampled.mean(axis=1),
            eval_success_sampled=None if sampled is None else self.env.is_success(sampled),
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
        return after.replace(seed=seed), metrics

    def train(self, key: jax.Array, data: RunData | None = None) -> tuple[LoopCarry, ChunkMetrics]:
        """The whole run; metrics have a leading [num_chunks] axis."""

        def chunk(carry, _):
            return self.run_chunk(carry)

        return jax.lax.scan(chunk, self.init(key, data), None, length=self.schedule.num_chunks)

    # -- many seeds ------------------------------------------------------------------

    @property
    def carry_axes(self) -> LoopCarry:
        """vmap axes of LoopCarry: the iteration counter and the run's data are shared, the
        rest per seed."""
        return self.carry_axes_for(None)

    def carry_axes_for(self, data_axis: int | None) -> LoopCarry:
        """vmap axes with the run's `RunData` batched (0) or shared (None)."""
        drawn = self.placement.drawn_axis
        return LoopCarry(iteration=None, seed=SeedCarry(0, 0, 0, 0, data_axis, drawn))

    def seed_keys(self, count: int | None = None) -> jax.Array:
        """Keys of the run's seeds: `count` of them (None: the run's)."""
        return self.seeds.keys(count)

    def jit_init_seeds(self, data_axis: int | None = None):
        """jit(vmap(init)) over seed keys [S] and an optional `RunData`, shared by all
        seeds (data_axis None) or batched [S, ...] (data_axis 0)."""
        axes = self.carry_axes_for(data_axis)

        def init_seeds(keys: jax.Array, data: RunData | None = None) -> LoopCarry:
            return jax.vmap(self.init, in_axes=(0, data_axis), out_axes=axes)(keys, data)

        return jax.jit(init_seeds)

    def jit_run_chunk_seeds(self, data_axis: int | None = None):
        axes = self.carry_axes_for(data_axis)
        return jax.jit(jax.vmap(self.run_chunk, in_axes=(axes,), out_axes=(axes, 0)))


def _episode_sums(feedback: Feedback) -> dict:
    """The iteration's completed episodes: their count, summed returns and successes."""
    return {
        "return_sum": (feedback.episode_return * feedback.mask).sum(),
        "success_sum": (feedback.success & feedback.mask).sum(),
        "episodes": feedback.mask.sum(),
    }
