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

The loop knows no teacher: it calls every teacher through the one contract of
acl.teachers.base, and what varies between runs of one compiled program (a challenge's
teacher params, the forgetting period) comes in as `RunData`. Components are built from
a config by acl.build (`make_train`), which also applies teacher and student wrappers.

Periodic work (student re-initialisation) is keyed on the iteration counter, which is not
part of the per-seed state: under `vmap` over seeds it stays a scalar, so `lax.cond`
stays a real branch instead of becoming a select that runs both sides.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from acl.config import ExperimentConfig
from acl.core.errors import ConfigError
from acl.core.types import compact_feedback
from acl.loop.evaluation import eval_test_set, evaluate, solve_rate
from acl.loop.rollout import Slots, TaskPool, collect, start_slots

LEARNER, TEACHER = 0, 1
"""The devices of `Trainer.with_teacher_beside`'s role axis."""


class IterationKeys(NamedTuple):
    """The keys one iteration splits from its seed's loop key."""

    following: jax.Array
    """The next iteration's loop key."""
    sample: jax.Array
    rollout: jax.Array
    update: jax.Array
    reinit: jax.Array

    @classmethod
    def split(cls, key: jax.Array) -> IterationKeys:
        return cls(*jax.random.split(key, 5))


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


@struct.dataclass
class SeedCarry:
    """Everything one seed carries between iterations."""

    agent_state: Any
    teacher_state: Any
    slots: Slots
    key: jax.Array
    reinit_every: jax.Array | None = None
    """int32 iterations between re-initialisations of the student (0: never), when the
    run gives it as data (`RunData`); constant over the run."""
    drawn: Any = None
    """With `loop.overlap_teacher`: the next iteration's (tasks, SampleInfo), drawn on the
    teacher's device right after its update; None on the one-device loop, which draws
    at the start of each iteration. The teacher's state then already includes that draw:
    a teacher whose `sample` advances its state (PLR) shows it in its snapshots."""


@struct.dataclass
class RunData:
    """What one compiled loop takes as data, so that a vmap or a second call can vary it
    without a recompile (TeachMyAgent's challenges, acl.benchmark.challenges)."""

    teacher_params: Any = None
    """The teacher's params for `init`; None: `teacher.default_params()`."""
    reinit_every: jax.Array | None = None
    """int32 iterations between re-initialisations of the student, 0 = never; None: the
    config's static `loop.reinit_every`."""
    agent_hyper: Any = None
    """The agent's numeric hyperparameters, a struct of leaves that replaces the `hyper`
    of the state its `init` returns (a sweep, acl.run.sweep), and that a re-initialised student
    keeps; None: the agent's own."""


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
    eval_success_sampled: jax.Array | None
    """[M, A]: whether each sampled-action episode succeeded (task, attempt), for the
    test set's CVaR (`acl.core.risk.test_set_cvar`); None without sampled attempts."""
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


class Trainer:
    """The jittable curriculum loop for one seed, plus helpers to vmap it over seeds."""

    def __init__(self, config: ExperimentConfig, components: Components):
        """The loop of `config` over built components (acl.build.make_train builds both)."""
        self.config = config
        self.env, self.teacher, self.agent = components.env, components.teacher, components.agent
        loop = config.loop
        bind = getattr(self.agent, "bind", None)
        if bind is not None:
            # Agents with per-instance state or env-defined rewards (DQN's staging rows
            # and HER relabelling) learn the env and the instance count here.
            bind(self.env, loop.num_envs)
        self.env_task_dim = self.env.task_space.dim
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
        self.env_axis: str | None = None
        """Set by `with_env_shards`: the named axis this seed's instances are split over."""
        self.local_envs = self.num_envs
        """Instances this device steps: num_envs, or its share with `env_axis`."""
        self.role_axis: str | None = None
        """Set by `with_teacher_beside`: the two-device axis whose device LEARNER rolls out
        and updates the agent while device TEACHER updates the teacher."""

    def with_env_shards(self, axis: str, shards: int) -> Trainer:
        """This loop with each seed's `num_envs` instances split `shards` ways over the
        named axis `axis` (`loop.shard_envs`; acl.loop.devices maps it onto devices). Every
        shard holds the same agent and teacher state: the teacher hands out tasks for
        all instances and each shard plays its own; the agent's update averages its
        gradients over `axis`; the teacher reads every shard's feedback, gathered."""
        if self.task_pool is not None:
            raise ConfigError(
                "loop.shard_envs does not take loop.task_pool: the pool hands out tasks "
                "in the order of all instances' resets, which no shard sees"
            )
        if "axis_name" not in inspect.signature(self.agent.update).parameters:
            raise ConfigError(
                f"loop.shard_envs needs an agent whose update averages gradients over "
                f"devices (an `axis_name` argument, as PPO's); "
                f"{type(self.agent).__name__} has none"
            )
        if self.num_envs % shards:
            raise ConfigError(
                f"loop.shard_envs: loop.num_envs ({self.num_envs}) must be a multiple of "
                f"the devices ({shards})"
            )
        sharded = copy.copy(self)
        sharded.env_axis, sharded.local_envs = axis, self.num_envs // shards
        return sharded

    def with_teacher_beside(self, axis: str) -> Trainer:
        """This loop with the teacher's update on a second device, beside the agent's
        (`loop.overlap_teacher`; acl.loop.devices maps `axis`, of size 2, onto two devices).

        Within an iteration the agent's update and the teacher's read the same rollout and
        not each other's result, so they can run at once: device LEARNER rolls out and
        updates the agent while device TEACHER updates the teacher (on CPU, a second host
        device is a second core, where a GMM teacher's fits then run). The rollout goes to
        the teacher's device, which updates the teacher and at once draws the next
        iteration's tasks (`SeedCarry.drawn`), with the key that iteration would draw
        them with; only the tasks come back, so the learner never waits on `sample`. The
        teacher's state reaches the learner's device at the end of `run_iterations`, the
        agent state the teacher's device at each evaluation. Each seed computes what the
        one-device loop computes, in a program XLA fuses differently: equal up to float32
        round-off (tests/test_overlap_teacher.py).
        The teacher's update gets no `student` (it runs beside the agent's update, not
        after it)."""
        if self.env_axis is not None:
            raise ConfigError("loop.overlap_teacher does not take loop.shard_envs")
        overlapped = copy.copy(self)
        overlapped.role_axis = axis
        return overlapped

    def _on_device(self, device: int, compute, otherwise: Any = None):
        """compute() on one device of the role axis; the other skips it and returns
        `otherwise` (default: zeros of compute's result), which the caller overwrites or
        never reads."""
        if otherwise is None:
            shapes = jax.eval_shape(compute)
            otherwise = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
        here = jax.lax.axis_index(self.role_axis) == device
        return jax.lax.cond(here, compute, lambda: otherwise)

    def _from_device(self, tree: Any, device: int) -> Any:
        """Device `device`'s values of `tree` on both devices of the role axis, sent as
        one byte buffer: each collective is a rendezvous of the two devices, which costs
        more than the copy on XLA's CPU backend."""
        leaves, treedef = jax.tree.flatten(tree)
        parts = [_to_bytes(x) for x in leaves]
        received = jax.lax.all_gather(jnp.concatenate(parts), self.role_axis)[device]
        out, start = [], 0
        for x, part in zip(leaves, parts, strict=True):
            out.append(_from_bytes(received[start : start + part.shape[0]], x))
            start += part.shape[0]
        return jax.tree.unflatten(treedef, out)

    def _my_instances(self, x: jax.Array, axis: int = 0) -> jax.Array:
        """This shard's slice of a per-instance array ([..., N, ...] on `axis`)."""
        if self.env_axis is None:
            return x
        start = jax.lax.axis_index(self.env_axis) * self.local_envs
        return jax.lax.dynamic_slice_in_dim(x, start, self.local_envs, axis)

    def _shard_key(self, key: jax.Array) -> jax.Array:
        """A key of this shard's own: its instances must not replay another shard's."""
        if self.env_axis is None:
            return key
        return jax.random.fold_in(key, jax.lax.axis_index(self.env_axis))

    def _start_slots(self, key: jax.Array, tasks: jax.Array, info) -> Slots:
        """This shard's instances reset onto their share of `tasks` [num_envs, D]."""
        return start_slots(
            self.env,
            self.agent,
            self._shard_key(key),
            self._my_instances(tasks),
            self._my_instances(info.train_on),
        )

    def _all_instances(self, x: jax.Array, axis: int) -> jax.Array:
        """Every shard's instances of a per-instance array, in instance order."""
        if self.env_axis is None:
            return x
        return jax.lax.all_gather(x, self.env_axis, axis=axis, tiled=True)

    @property
    def eval_key(self) -> jax.Array:
        """Fixed evaluation key: every evaluation plays the same starts."""
        return jax.random.PRNGKey(self.config.eval.seed)

    # -- the loop --------------------------------------------------------------------

    def init_agent(self, key, hyper: Any = None):
        """The agent's initial state, with `hyper` as its numeric hyperparameters (None:
        the agent's own)."""
        state = self.agent.init(key, self.env.observation_space(), self.env.action_space())
        return state if hyper is None else state.replace(hyper=hyper)

    def init(self, key: jax.Array, data: RunData | None = None) -> LoopCarry:
        data = RunData() if data is None else data
        if data.reinit_every is not None and self.config.loop.reinit_every:
            raise ConfigError(
                "loop.reinit_every and the run's data both set the forgetting period; "
                "give one of them"
            )
        agent_key, teacher_key, sample_key, reset_key, loop_key = jax.random.split(key, 5)
        agent_state = self.init_agent(agent_key, data.agent_hyper)
        params = data.teacher_params
        if params is None:
            params = self.teacher.default_params()
        teacher_state = self.teacher.init(teacher_key, params)
        teacher_state, tasks, info = self.teacher.sample(teacher_state, sample_key, self.num_envs)
        slots = self._start_slots(reset_key, tasks, info)
        reinit_every = data.reinit_every
        if reinit_every is not None:
            reinit_every = jnp.asarray(reinit_every, jnp.int32)
        drawn = None
        if self.role_axis is not None:
            # Iteration 0's draw, with its key, as every later one is drawn: ahead.
            first_sample_key = IterationKeys.split(loop_key).sample
            teacher_state, tasks, info = self._draw(teacher_state, first_sample_key)
            drawn = (tasks, info)
        return LoopCarry(
            iteration=jnp.zeros((), jnp.int32),
            seed=SeedCarry(agent_state, teacher_state, slots, loop_key, reinit_every, drawn),
        )

    @property
    def tasks_per_draw(self) -> int:
        """Tasks the teacher draws per iteration: the pool; one per (step, instance) slot
        in episode mode; one per instance in batch mode."""
        if self.task_pool is not None:
            return self.task_pool
        if self.config.loop.mode == "episode":
            return self.steps_per_iteration
        return self.num_envs

    def _draw(self, teacher_state, sample_key: jax.Array):
        """(teacher state, tasks [tasks_per_draw, D], SampleInfo) of one iteration."""
        return self.teacher.sample(teacher_state, sample_key, self.tasks_per_draw)

    def _reinit_due(self, seed: SeedCarry, iteration: jax.Array) -> jax.Array | None:
        """bool: the student is re-initialised after `iteration`; None: never (static)."""
        if seed.reinit_every is not None:
            period = jnp.maximum(seed.reinit_every, 1)
            return (seed.reinit_every > 0) & ((iteration + 1) % period == 0)
        if self.reinit_iterations:
            return (iteration + 1) % self.reinit_iterations == 0
        return None

    def _iteration(self, seed: SeedCarry, iteration: jax.Array):
        key, sample_key, rollout_key, update_key, reinit_key = IterationKeys.split(seed.key)
        teacher_state, slots = seed.teacher_state, seed.slots
        if seed.drawn is None:
            teacher_state, tasks, info = self._draw(teacher_state, sample_key)
        else:
            tasks, info = seed.drawn
        pool = next_tasks = next_train_on = None
        if self.task_pool is not None:
            # The k-th reset of the iteration takes pool entry k (acl.loop.rollout.take_from_pool).
            pool = TaskPool(tasks, info.train_on)
        elif self.config.loop.mode == "episode":
            # One task per (step, instance): an instance that resets at step t takes [t, i].
            next_tasks = self._my_instances(tasks.reshape(self.num_steps, self.num_envs, -1), 1)
            next_train_on = self._my_instances(
                info.train_on.reshape(self.num_steps, self.num_envs), 1
            )
        else:
            reset_key, rollout_key = jax.random.split(rollout_key)
            slots = self._start_slots(reset_key, tasks, info)

        def rollout():
            return collect(
                self.env,
                self.agent,
                seed.agent_state,
                slots,
                self._shard_key(rollout_key),
                next_tasks,
                next_train_on,
                self.num_steps,
                pool=pool,
            )

        if self.role_axis is None:
            slots, batch, feedback = rollout()
        else:
            # The teacher's device keeps stale slots: it never steps the envs.
            slots, batch, feedback = self._on_device(LEARNER, rollout)
            batch, feedback = self._from_device((batch, feedback), LEARNER)
        teacher_batch = batch
        if self.env_axis is not None:
            # The teacher sees the iteration as one device would: [T, N], step-major.
            teacher_batch = jax.tree.map(lambda x: self._all_instances(x, 1), batch)
            feedback = jax.tree.map(
                lambda x: self._all_instances(
                    x.reshape((self.num_steps, self.local_envs) + x.shape[1:]), 1
                ).reshape((-1,) + x.shape[1:]),
                feedback,
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

        def update_agent():
            if self.env_axis is None:
                return self.agent.update(seed.agent_state, batch, update_key)
            return self.agent.update(seed.agent_state, batch, update_key, axis_name=self.env_axis)

        # A key of its own, so the agent's stream is the same with any teacher.
        teacher_key = jax.random.fold_in(update_key, 1)

        def update_teacher(student):
            return self.teacher.update(
                teacher_state, teacher_key, tasks, feedback, teacher_batch, iteration, student
            )

        drawn = None
        if self.role_axis is None:
            agent_state, agent_metrics = update_agent()
            # The student after this update, for teachers that evaluate it (SFL).
            teacher_state = update_teacher(agent_state)
        else:
            agent_state, agent_metrics = self._on_device(LEARNER, update_agent)

            def update_and_draw():
                # The next iteration's draw, with the key it would take there: off the
                # learner's path, which only waits for the tasks.
                return self._draw(update_teacher(None), IterationKeys.split(key).sample)

            # The learner's copy of the teacher's state goes stale until the chunk ends.
            teacher_state, drawn_tasks, drawn_info = self._on_device(
                TEACHER, update_and_draw, otherwise=(teacher_state, tasks, info)
            )
            # Both updates finish before the exchange: otherwise XLA may schedule the
            # learner's wait for the tasks before the agent's update, in turn.
            agent_state, teacher_state, drawn = jax.lax.optimization_barrier(
                (agent_state, teacher_state, (drawn_tasks, drawn_info))
            )
            drawn = self._from_device(drawn, TEACHER)
        # A real branch unless runs with different periods share a vmap.
        due = self._reinit_due(seed, iteration)
        if due is not None:
            # The new student keeps the hyperparameters of the one it replaces (a sweep's).
            hyper = getattr(seed.agent_state, "hyper", None)
            agent_state = jax.lax.cond(
                due, lambda: self.init_agent(reinit_key, hyper), lambda: agent_state
            )
        stats = {
            **episode_stats,
            "dropped": dropped,
            "pool_overflow": jnp.zeros((), jnp.int32) if overflow is None else overflow,
            "agent": agent_metrics,
            # The env's own columns: what the instances ran.
            "tasks": tasks[: self.tasks_per_iteration, : self.env_task_dim],
        }
        carry = SeedCarry(agent_state, teacher_state, slots, key, seed.reinit_every, drawn)
        return carry, stats

    def run_iterations(self, carry: LoopCarry, count: int) -> tuple[LoopCarry, dict]:
        """`count` loop iterations (rollout, teacher, agent update), no evaluation.

        Returns the carry and per-iteration stats with a leading [count] axis."""
        iterations = carry.iteration + jnp.arange(count, dtype=jnp.int32)
        seed, stats = jax.lax.scan(self._iteration, carry.seed, iterations)
        if self.role_axis is not None:
            seed = seed.replace(teacher_state=self._from_device(seed.teacher_state, TEACHER))
        return LoopCarry(iteration=carry.iteration + count, seed=seed), stats

    def run_chunk(self, carry: LoopCarry) -> tuple[LoopCarry, ChunkMetrics]:
        """`iterations_per_chunk` iterations, then an evaluation on the test set."""
        after, stats = self.run_iterations(carry, self.iterations_per_chunk)
        ev = self.config.eval

        def evaluation():
            return evaluate(
                self.env,
                self.agent,
                after.seed.agent_state,
                self.test_tasks,
                self.eval_key,
                ev.episodes_per_task,
                ev.sampled_attempts,
            )

        if self.role_axis is None:
            result = evaluation()
        else:
            # The learner's evaluation, student, slots and metrics, on both devices again.
            result, agent_state, slots, stats["agent"] = self._from_device(
                (
                    self._on_device(LEARNER, evaluation),
                    after.seed.agent_state,
                    after.seed.slots,
                    stats["agent"],
                ),
                LEARNER,
            )
            after = after.replace(seed=after.seed.replace(agent_state=agent_state, slots=slots))
        seed = after.seed
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
        return after, metrics

    def train(self, key: jax.Array, data: RunData | None = None) -> tuple[LoopCarry, ChunkMetrics]:
        """The whole run; metrics have a leading [num_chunks] axis."""

        def chunk(carry, _):
            return self.run_chunk(carry)

        return jax.lax.scan(chunk, self.init(key, data), None, length=self.num_chunks)

    # -- many seeds ------------------------------------------------------------------

    @property
    def carry_axes(self) -> LoopCarry:
        """vmap axes of LoopCarry: the iteration counter and the run's data are shared, the
        rest per seed."""
        return self.carry_axes_for(None)

    def carry_axes_for(self, data_axis: int | None) -> LoopCarry:
        """vmap axes with the run's `RunData` batched (0) or shared (None)."""
        drawn = 0 if self.role_axis is not None else None
        return LoopCarry(iteration=None, seed=SeedCarry(0, 0, 0, 0, data_axis, drawn))

    def seed_keys(self, count: int | None = None) -> jax.Array:
        """Keys of seeds `config.seed`, `+ 1`, ...: `count` of them (None: num_seeds)."""
        c = self.config
        count = c.num_seeds if count is None else count
        return jnp.stack([jax.random.PRNGKey(c.seed + i) for i in range(count)])

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
