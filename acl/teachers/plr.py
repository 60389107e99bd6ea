"""Level teachers of unsupervised environment design: domain randomisation, Prioritized
Level Replay (Jiang et al. 2021), robust PLR (Jiang et al. 2021, "Replay-Guided
Adversarial Environment Design") and ACCEL (Parker-Holder et al. 2022).

The tasks are levels of an env with a level generator, a `LevelTaskEnv`:
`env.sample_tasks(key, n, num_walls)` (envs.maze.Maze), and for ACCEL its level edits,
`env.edit_tasks(key, tasks, num_edits)` (where it declares `has_level_edits`). The
factories take the run's env from their `RunContext`.

DR ("dr") hands out fresh generator levels (the literature's 25 walls; `num_walls`).

PLR keeps a buffer of `capacity` levels with scores and last-seen timestamps; the
sampler is stateless and its state (`PLRState`) separate, as JaxUED's LevelSampler.
It reads the student's rollout (`update`'s `context.rollout`), so the loop runs in `batch`
mode: all instances reset onto the batch's levels, and instance i plays `tasks[i]` for the
whole rollout. Each batch is one of three kinds, decided in `sample`:

- new: `n` fresh generator levels. `update` scores them and inserts them: a level
  equal to a buffer entry updates that entry instead (duplicate check); otherwise it
  takes the next free slot, or, with the buffer full, replaces the lowest-weight entry
  if it scores higher than that entry.
- replay: `n` buffer levels drawn one after another by their replay weights (each draw
  marks its level as just seen, so the staleness weights change within the batch, as
  in JaxUED and dcd); `update` writes their new scores.
- edit (ACCEL only): the levels of the previous batch, a replay batch, each with
  `num_edits` edits (`env.edit_tasks`: each a no-op, a wall flip or a goal move, as
  JaxUED's maze mutator); `update` scores and inserts them as new levels.

Batch schedule. PLR and robust PLR (JaxUED's batched PLR): replay with
probability `replay_prob` once the buffer holds at least `minimum_fill_ratio *
capacity` levels, new levels otherwise. ACCEL, as JaxUED's `use_accel`: a replay batch
is always followed by an edit batch of its levels; after a new or edit batch the same
replay decision as PLR's. With replay_prob p the long-run shares are replay p / (1 + p),
edit p / (1 + p), new (1 - p) / (1 + p): 44%, 44%, 11% at p = 0.8. The ACCEL paper edits
each replayed level right after its replay, within one step; in batch mode a step
plays one batch, so the edits get the next step (JaxUED's split).

Robust PLR and ACCEL hand out new and edited levels with `SampleInfo.train_on = False`:
the student does not learn from them (only the teacher scores them), and learns from
replayed levels only. Those updates apply no gradient and do not advance the student's
learning-rate schedule either (acl.agents.ppo.ppo_epochs), as in JaxUED, whose
schedule counts applied gradient steps.

Replay weights (per filled buffer entry; empty slots weigh 0):
    P = (1 - c) P_score + c P_stale, c = `staleness_coeff`
    rank: P_score ∝ h(rank)^(1/T), h(rank) = 1 / rank, rank 1 the highest score,
        T = `temperature`;
    topk: P_score = softmax of the scores over the `topk_k` highest (JaxUED's; no
        temperature);
    P_stale ∝ episode_count - timestamp (uniform when all are 0), where the counter
    `episode_count` advances by one per level drawn and per level written fresh
    (JaxUED's bookkeeping: one "episode" per level play).

Scores, from the rollout [T, N] and the agent's value estimates `extras.value` (extras
that declare them: acl.core.types.ValueEstimates) (JaxUED's definitions, from minimax):
    GAE with the student's own gamma, GAE lambda and reward scale, which the agent records
    in its extras (`extras.value_spec`, acl.core.types.ValueSpec; traced, so a sweep
    over the agent's gamma moves the scores too) (JaxUED's bootstrapping: the value of
    the next step's observation, cut at every episode end, truncation included); the
    rollout holds no value of the state after its last step, so the last step bootstraps
    from its own value. That reaches only the unfinished tail, which the scores ignore;
    "pvl": positive value loss, mean over the level's finished episodes of each
        episode's mean over its steps of max(advantage, 0);
    "maxmc": mean over finished episodes of each episode's mean of (R_max - V), R_max
        the highest undiscounted return ever reached on the level (this rollout's
        finished episodes and, for a level already in the buffer, its stored best).
A level with no finished episode in the rollout (never the case in the loop, whose
batch rollouts are at least one episode long) counts its whole rollout as one episode.
Rewards are multiplied by the agent's reward scale first, so they are in the value's
units.

Departures from JaxUED, and why: JaxUED drops a level with no finished episode (score
-inf); here such a level is scored on its partial episode (scores stay finite, which
the run directory's records need). A duplicate of a buffer level keeps its best return
(max with the stored one; JaxUED overwrites it with the new rollout's).

Defaults are the literature's maze settings (JaxUED's maze_plr): buffer 4000, replay
probability 0.8, staleness 0.3, rank with temperature 0.3, minimum fill 0.5, "maxmc",
duplicate check on; ACCEL 5 edits. JaxUED's student uses gamma 0.995 and lambda 0.98,
which the maze configs give the agent (experiments/configs/maze_*.yaml).

Everything is fixed-size and jittable; under a vmap over seeds each seed decides its
own batch kind (the branches become selects, all cheap).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

from acl.agents.common import gae
from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.hparams import hparam, nested
from acl.core.spaces import Box
from acl.core.types import Feedback, Transition, ValueEstimates, default_info
from acl.teachers import checks
from acl.teachers.base import (
    TEACHERS,
    RunContext,
    Teacher,
    UpdateContext,
    class_factory,
    require_batch_mode,
    run_default,
)
from acl.teachers.counting import CountingState, CountingTeacher
from envs.base import LevelTaskEnv

PLR_USES = "draws levels from the env's generator"


def _build(name: str) -> str:
    return f"TEACHERS.get({name!r})(task_space, env=...) (envs.maze.Maze is such an env)"


NEW, REPLAY, EDIT = 0, 1, 2
"""Batch kinds (`PLRState.kind`)."""
BATCH_KINDS = ("new", "replay", "edit")
SCORE_FUNCTIONS = ("pvl", "maxmc")
PRIORITIZATIONS = ("rank", "topk")


ENV_DOC = "The env whose generator draws the levels (static); default: the run's."
NUM_WALLS_DOC = (
    "Walls of each generated level (int32); default: the env's own num_walls (the maze's 25)."
)


def _with_num_walls(hyper, env):
    """`hyper` with its num_walls filled in: the env's own (`env.num_walls`) if unset."""
    if hyper.num_walls is not None:
        return hyper
    return hyper.replace(num_walls=int(env.num_walls))


# -- domain randomisation --------------------------------------------------------------


@struct.dataclass
class DRParams:
    """Numeric hyperparameters (pytree leaves, vmappable): as configured on the teacher
    (`hyper`), as arrays in `default_params()`."""

    num_walls: jax.Array = hparam(None, kind="int", low=0, doc=NUM_WALLS_DOC)


def on_env_space(task_space: Box, env: LevelTaskEnv) -> bool:
    """Whether a teacher's task space is the env's, so that the env's levels are its
    tasks as they are (under a challenge it is the unit cube, which the wrapper maps)."""
    return (task_space.low, task_space.high) == (env.task_space.low, env.task_space.high)


def check_fresh_levels(name: str, task_space: Box, env: LevelTaskEnv, edits: bool) -> None:
    """ConfigError where `fresh_levels` cannot draw the env's levels: off the env's space
    (under a challenge) with a generator that is not uniform over the env's box, or with
    level edits, which act on the env's own coordinates."""
    if on_env_space(task_space, env):
        return
    checks.check(
        env.uniform_levels and not edits,
        f"teacher {name}: its task space is not the env's (a challenge's unit cube, as acl "
        f"benchmark runs teachers) and {type(env).__name__}'s "
        + ("level edits act on the env's own tasks" if edits else "levels are not uniform")
        + ": run it without a challenge (acl run, or acl shootout --native-space)",
    )


def fresh_levels(
    task_space: Box, env: LevelTaskEnv, key: jax.Array, n: int, num_walls: jax.Array
) -> jax.Array:
    """[n, D] new levels in the teacher's coordinates: the env's generator on the env's
    space; uniform over the teacher's space otherwise, where the env's generator is
    uniform too (`check_fresh_levels`), so the levels are the same in distribution."""
    if on_env_space(task_space, env):
        return env.sample_tasks(key, n, num_walls).astype(jnp.float32)
    return task_space.sample_uniform(key, n)


@dataclass(frozen=True)
class DRTeacher(CountingTeacher):
    """Domain randomisation: every level fresh from the env's generator."""

    task_space: Box
    env: LevelTaskEnv | None = hparam(None, kind="any", doc=ENV_DOC)
    hyper: DRParams = nested(DRParams)

    def __post_init__(self):
        checks.check_env(
            self.env,
            self.task_space,
            "dr",
            uses=PLR_USES,
            build=_build("dr"),
            protocol=LevelTaskEnv,
            methods=("sample_tasks",),
        )
        hparams.validate_fields(self, "teacher")
        check_fresh_levels("dr", self.task_space, self.env, edits=False)
        object.__setattr__(self, "hyper", _with_num_walls(self.hyper, self.env))

    def default_params(self) -> DRParams:
        return hparams.leaves(self.hyper)

    def sample(self, state: CountingState, key: jax.Array, n: int):
        tasks = fresh_levels(self.task_space, self.env, key, n, state.params.num_walls)
        return state, tasks, default_info(n)


# -- rollout scores --------------------------------------------------------------------


@struct.dataclass
class LevelStats:
    """What a rollout says of each instance's level; shapes [N]."""

    pvl: jax.Array
    """Positive value loss (the "pvl" score)."""
    mean_value: jax.Array
    """Mean over finished episodes of each episode's mean value estimate; the "maxmc"
    score is R_max - mean_value (the mean of R_max - V, R_max constant per level)."""
    max_return: jax.Array
    """Highest undiscounted (scaled) return of a finished episode."""


def episode_means(done: jax.Array, per_step: jax.Array, rewards: jax.Array):
    """Per-episode statistics of a rollout, per instance.

    done [T, N] bool, per_step [T, N, K], rewards [T, N] ->
    (mean over finished episodes of each episode's mean over its steps of per_step
    [N, K], best finished episode return [N]). An instance with no finished episode gets
    its whole rollout as one episode."""

    def step(carry, xs):
        acc, steps, ret, total, best, count = carry
        d, x, r = xs
        acc, steps, ret = acc + x, steps + 1, ret + r
        total = total + jnp.where(d[:, None], acc / steps[:, None], 0.0)
        best = jnp.where(d, jnp.maximum(best, ret), best)
        count = count + d
        # A finished episode's sums restart; the next step begins a new episode.
        acc = jnp.where(d[:, None], 0.0, acc)
        steps, ret = jnp.where(d, 0, steps), jnp.where(d, 0.0, ret)
        return (acc, steps, ret, total, best, count), None

    n = done.shape[1]
    zeros = jnp.zeros(per_step.shape[1:], jnp.float32)
    init = (zeros, jnp.zeros(n), jnp.zeros(n), zeros, jnp.full(n, -jnp.inf), jnp.zeros(n))
    (acc, steps, ret, total, best, count), _ = jax.lax.scan(
        step, init, (done, per_step.astype(jnp.float32), rewards.astype(jnp.float32))
    )
    finished = count > 0
    whole = acc / jnp.maximum(steps, 1)[:, None]
    mean = jnp.where(finished[:, None], total / jnp.maximum(count, 1)[:, None], whole)
    return mean, jnp.where(finished, best, ret)


def level_stats(rollout: Transition, gamma=None, gae_lambda=None, reward_scale=None) -> LevelStats:
    """Scores' ingredients from a rollout [T, N] with `extras.value` [T, N] (module
    docstring). gamma, gae_lambda and reward_scale default to the student's own
    (`extras.value_spec`)."""
    extras = rollout.extras
    given = all(x is not None for x in (gamma, gae_lambda, reward_scale))
    if not isinstance(extras, ValueEstimates) or (extras.value_spec is None and not given):
        raise ConfigError(
            "teacher: PLR scores levels by the agent's value estimates and its gamma, GAE "
            "lambda and reward scale, but the rollout's extras carry no `value` and "
            "`value_spec` (use an actor-critic agent such as ppo)"
        )
    values, spec = extras.value, extras.value_spec
    if spec is not None:
        # The same for every step and instance: the student's scalars.
        gamma = spec.gamma[0, 0] if gamma is None else gamma
        gae_lambda = spec.gae_lambda[0, 0] if gae_lambda is None else gae_lambda
        reward_scale = spec.reward_scale[0, 0] if reward_scale is None else reward_scale
    rewards = rollout.reward * reward_scale
    # JaxUED's GAE: the next value is the next step's (masked at episode ends).
    next_values = jnp.concatenate([values[1:], values[-1:]])
    advantages, _ = gae(rewards, values, next_values, rollout.done, rollout.done, gamma, gae_lambda)
    per_step = jnp.stack([jnp.maximum(advantages, 0.0), values], axis=-1)
    means, best = episode_means(rollout.done, per_step, rewards)
    return LevelStats(pvl=means[:, 0], mean_value=means[:, 1], max_return=best)


# -- prioritized level replay ----------------------------------------------------------


@struct.dataclass
class PLRParams:
    """Numeric hyperparameters (pytree leaves, vmappable), JaxUED's maze defaults: as
    configured on the teacher (`hyper`), as arrays in `default_params()`."""

    replay_prob: jax.Array = hparam(
        0.8,
        low=0.0,
        high=1.0,
        doc="Probability of a replay batch once the buffer is filled enough.",
    )
    staleness_coeff: jax.Array = hparam(
        0.3, low=0.0, high=1.0, doc="c: weight of the staleness distribution in the replay weights."
    )
    temperature: jax.Array = hparam(
        0.3, low=0.0, low_open=True, doc="T of rank prioritisation, h(rank)^(1/T)."
    )
    minimum_fill_ratio: jax.Array = hparam(
        0.5, low=0.0, high=1.0, doc="No replay until this share of the buffer is filled."
    )
    topk_k: jax.Array = hparam(4, low=1, doc="k of topk prioritisation (int32).")
    num_walls: jax.Array = hparam(None, kind="int", low=0, doc=NUM_WALLS_DOC)


@struct.dataclass
class PLRState:
    """The level buffer (JaxUED's sampler state) and the last batch's provenance.

    Entries fill slots 0 .. size - 1 in order and stay there until replaced."""

    params: PLRParams
    levels: jax.Array
    """[C, D] buffer levels (tasks)."""
    scores: jax.Array
    """[C] their latest scores (0 in empty slots)."""
    max_returns: jax.Array
    """[C] the best episode return seen on each level (the "maxmc" score's R_max)."""
    timestamps: jax.Array
    """[C] int32 `episode_count` when each level was last drawn or written."""
    size: jax.Array
    """int32 filled slots."""
    episode_count: jax.Array
    """int32 level plays counted so far (draws and fresh writes)."""
    kind: jax.Array
    """int32 kind of the last sampled batch: NEW, REPLAY or EDIT."""
    replayed: jax.Array
    """[C] int32 times each slot was drawn in the last replay batch (ACCEL edits them)."""
    batches: jax.Array
    """[3] int32 batches scored of each kind (new, replay, edit)."""

    @property
    def filled(self) -> jax.Array:
        """[C] bool: slots holding a level."""
        return jnp.arange(self.scores.shape[-1]) < self.size[..., None]


def _normalise(w: jax.Array) -> jax.Array:
    return w / jnp.maximum(w.sum(), 1e-30)


def staleness_weights(timestamps: jax.Array, episode_count, filled: jax.Array) -> jax.Array:
    """P_stale [C]: proportional to episode_count - timestamp over filled slots; uniform
    over them when every staleness is 0."""
    stale = jnp.where(filled, episode_count - timestamps, 0).astype(jnp.float32)
    return jnp.where(stale.sum() > 0, _normalise(stale), _normalise(filled.astype(jnp.float32)))


@dataclass(frozen=True)
class PLRTeacher(Teacher):
    """PLR, robust PLR (`robust`) and ACCEL (`num_edits` > 0); see the module docstring."""

    task_space: Box
    env: LevelTaskEnv | None = hparam(None, kind="any", doc=ENV_DOC)
    capacity: int = hparam(4000, low=1, doc="Buffer slots (JaxUED, dcd: 4000).")
    score_function: str = hparam(
        "maxmc",
        choices=SCORE_FUNCTIONS,
        doc='Level score: "maxmc" (JaxUED\'s maze default) or "pvl" (plr module docstring).',
    )
    prioritization: str = hparam(
        "rank", choices=PRIORITIZATIONS, doc="Replay prioritisation (plr module docstring)."
    )
    snapshot_size: int = hparam(16, low=1, doc="Highest-weight levels recorded by `snapshot`.")
    hyper: PLRParams = nested(PLRParams)
    robust: bool = False
    """No student learning on new and edited levels (robust PLR, ACCEL); set by the
    factory, not a config key."""
    num_edits: int = 0
    """ACCEL: edits per edited level, each a no-op, a wall flip or a goal move
    (make_accel's `num_edits`, checked there); 0: no edit batches (PLR)."""

    def __post_init__(self):
        name = self.name
        checks.check_env(
            self.env,
            self.task_space,
            name,
            uses=PLR_USES,
            build=_build(name),
            protocol=LevelTaskEnv,
            methods=("sample_tasks",),
        )
        if self.num_edits:
            checks.check(
                self.env.has_level_edits,
                f"teacher.env: the {name} teacher edits levels and needs an env with "
                f"`edit_tasks` (LevelTaskEnv.has_level_edits); {type(self.env).__name__} "
                "declares none",
            )
        hparams.validate_fields(self, "teacher")
        check_fresh_levels(name, self.task_space, self.env, edits=bool(self.num_edits))
        object.__setattr__(self, "hyper", _with_num_walls(self.hyper, self.env))

    @property
    def name(self) -> str:
        return "accel" if self.num_edits else "robust_plr" if self.robust else "plr"

    def default_params(self) -> PLRParams:
        return hparams.leaves(self.hyper)

    def init(self, key: jax.Array, params: PLRParams) -> PLRState:
        del key
        c = self.capacity
        return PLRState(
            params=params,
            levels=jnp.zeros((c, self.task_space.dim), jnp.float32),
            scores=jnp.zeros((c,), jnp.float32),
            max_returns=jnp.zeros((c,), jnp.float32),
            timestamps=jnp.zeros((c,), jnp.int32),
            size=jnp.zeros((), jnp.int32),
            episode_count=jnp.zeros((), jnp.int32),
            kind=jnp.int32(NEW),
            replayed=jnp.zeros((c,), jnp.int32),
            batches=jnp.zeros((len(BATCH_KINDS),), jnp.int32),
        )

    # -- weights --------------------------------------------------------------------------

    def score_weights(self, state: PLRState) -> jax.Array:
        """P_score [C] over the filled slots."""
        filled = state.filled
        order = jnp.argsort(-jnp.where(filled, state.scores, -jnp.inf))
        rank = jnp.zeros_like(order).at[order].set(jnp.arange(1, self.capacity + 1))
        if self.prioritization == "rank":
            h = jnp.where(filled, (1.0 / rank) ** (1.0 / state.params.temperature), 0.0)
            return _normalise(h)
        top = filled & (rank <= state.params.topk_k)
        best = jnp.max(jnp.where(top, state.scores, -jnp.inf))
        return _normalise(jnp.where(top, jnp.exp(state.scores - best), 0.0))

    def level_weights(self, state: PLRState) -> jax.Array:
        """P [C] = (1 - c) P_score + c P_stale, the replay distribution."""
        c = state.params.staleness_coeff
        stale = staleness_weights(state.timestamps, state.episode_count, state.filled)
        return (1 - c) * self.score_weights(state) + c * stale

    # -- sampling -------------------------------------------------------------------------

    def replay_allowed(self, state: PLRState) -> jax.Array:
        """bool: the buffer is filled enough for a replay batch."""
        fill = state.size / self.capacity
        return (state.size > 0) & (fill >= state.params.minimum_fill_ratio)

    def sample(self, state: PLRState, key: jax.Array, n: int):
        decide_key, level_key = jax.random.split(key)
        replay = self.replay_allowed(state) & (
            jax.random.uniform(decide_key) < state.params.replay_prob
        )
        kind = jnp.where(replay, REPLAY, NEW)
        branches = [self._new_batch, self._replay_batch]
        if self.num_edits:
            # JaxUED's ACCEL: a replay batch is always followed by the edits of its levels.
            kind = jnp.where(state.kind == REPLAY, EDIT, kind)
            branches.append(self._edit_batch)
        branches = [functools.partial(branch, n=n) for branch in branches]
        state, tasks = jax.lax.switch(kind, branches, state, level_key)
        info = default_info(n)
        if self.robust:
            info = info.replace(train_on=jnp.broadcast_to(kind == REPLAY, (n,)))
        return state.replace(kind=kind.astype(jnp.int32)), tasks, info

    def _new_batch(self, state: PLRState, key: jax.Array, n: int):
        return state, fresh_levels(self.task_space, self.env, key, n, state.params.num_walls)

    def _replay_batch(self, state: PLRState, key: jax.Array, n: int):
        """n draws by the replay weights, one after another: each draw marks its level as
        just seen, which changes the staleness weights of the next (JaxUED, dcd)."""
        score_w, filled = self.score_weights(state), state.filled
        c = state.params.staleness_coeff

        def draw(carry, u):
            timestamps, count = carry
            w = (1 - c) * score_w + c * staleness_weights(timestamps, count, filled)
            cdf = jnp.cumsum(w)
            index = jnp.searchsorted(cdf, u * cdf[-1], side="right")
            index = jnp.minimum(index, jnp.maximum(state.size - 1, 0))
            count = count + 1
            return (timestamps.at[index].set(count), count), index

        uniform = jax.random.uniform(key, (n,))
        carry = (state.timestamps, state.episode_count)
        (timestamps, count), index = jax.lax.scan(draw, carry, uniform)
        replayed = jnp.zeros_like(state.replayed).at[index].add(1)
        state = state.replace(timestamps=timestamps, episode_count=count, replayed=replayed)
        return state, state.levels[index]

    def _edit_batch(self, state: PLRState, key: jax.Array, n: int):
        """The last replay batch's levels, edited (their slots are unchanged since: a
        replay batch's update only rewrites scores)."""
        slots = jnp.repeat(jnp.arange(self.capacity), state.replayed, total_repeat_length=n)
        return state, self.env.edit_tasks(key, state.levels[slots], self.num_edits)

    # -- scoring --------------------------------------------------------------------------

    def update(
        self,
        state: PLRState,
        key: jax.Array,
        tasks: jax.Array,
        feedback: Feedback,
        step: jax.Array,
        context: UpdateContext = UpdateContext(),
    ) -> PLRState:
        """Scores the batch's levels tasks [N, D] from `context.rollout` [T, N] and records
        them (`record`). `feedback` is not read: the rollout has every step."""
        rollout = context.rollout
        if rollout is None:
            raise ConfigError(
                f"teacher {self.name!r} scores levels from the rollout: call "
                "update with the batch's rollout (the loop does, in loop.mode: batch)"
            )
        return self.record(state, tasks, level_stats(rollout))

    def record(self, state: PLRState, tasks: jax.Array, stats: LevelStats) -> PLRState:
        """Writes the scores of levels tasks [N, D] (`stats` [N]) into the buffer, one
        level after another (JaxUED's insert_batch with its duplicate check): a level
        equal to a buffer entry updates that entry's score; any other takes the next free
        slot, or replaces the lowest-weight entry if it scores higher."""
        replay = state.kind == REPLAY

        def one(state: PLRState, xs):
            level, pvl, mean_value, max_return = xs
            filled = state.filled
            match = filled & jnp.all(state.levels == level, axis=-1)
            found = jnp.any(match)
            best = jnp.where(
                found, jnp.maximum(state.max_returns[jnp.argmax(match)], max_return), max_return
            )
            score = pvl if self.score_function == "pvl" else best - mean_value
            free = state.size < self.capacity
            weakest = jnp.argmin(jnp.where(filled, self.level_weights(state), jnp.inf))
            slot = jnp.where(found, jnp.argmax(match), jnp.where(free, state.size, weakest))
            insert = ~found & (free | (score > state.scores[slot]))
            write = found | insert
            # A replayed level was marked seen when drawn; any other write is a fresh play.
            fresh = write & ~replay
            count = state.episode_count + fresh
            state = state.replace(
                levels=state.levels.at[slot].set(jnp.where(insert, level, state.levels[slot])),
                scores=state.scores.at[slot].set(jnp.where(write, score, state.scores[slot])),
                max_returns=state.max_returns.at[slot].set(
                    jnp.where(write, best, state.max_returns[slot])
                ),
                timestamps=state.timestamps.at[slot].set(
                    jnp.where(fresh, count, state.timestamps[slot])
                ),
                episode_count=count.astype(jnp.int32),
                size=state.size + (insert & free),
            )
            return state, None

        xs = (tasks.astype(jnp.float32), stats.pvl, stats.mean_value, stats.max_return)
        state, _ = jax.lax.scan(one, state, xs)
        return state.replace(batches=state.batches.at[state.kind].add(1))

    # -- records --------------------------------------------------------------------------

    def snapshot(self, state: PLRState) -> dict:
        """The `snapshot_size` highest-weight levels with their scores and weights, and
        buffer statistics."""
        filled = state.filled
        weights = jnp.where(filled, self.level_weights(state), 0.0)
        k = min(self.snapshot_size, self.capacity)
        top_weights, top = jax.lax.top_k(jnp.where(filled, weights, -1.0), k)
        count = jnp.maximum(state.size, 1)
        return {
            "levels": state.levels[top],
            "level_scores": state.scores[top],
            "level_weights": jnp.maximum(top_weights, 0.0),
            "level_filled": filled[top],
            "size": state.size,
            "episode_count": state.episode_count,
            "mean_score": jnp.where(filled, state.scores, 0.0).sum() / count,
            "max_score": jnp.where(
                state.size > 0, jnp.max(jnp.where(filled, state.scores, -jnp.inf)), 0.0
            ),
            "weighted_score": (weights * state.scores).sum(),
            **{f"batches_{name}": state.batches[i] for i, name in enumerate(BATCH_KINDS)},
        }


# -- registration ----------------------------------------------------------------------

NUM_EDITS = hparams.spec(
    5,
    low=1,
    doc="ACCEL: edits per edited level, each a no-op, a wall flip or a goal move.",
)
"""accel's one key besides PLR's."""


def _make(name: str, task_space: Box, context: RunContext | None, config: dict, **fixed):
    """A PLRTeacher from PLR's config keys, in batch mode, on the run's env unless given;
    `fixed`: the fields that make it robust PLR or ACCEL."""
    (args,) = hparams.split(config, PLRTeacher, field_name="teacher")
    require_batch_mode(context, name)
    args["env"] = run_default(context, "env", args.get("env"))
    return PLRTeacher(task_space=task_space, **args, **fixed)


def make_plr(task_space: Box, context: RunContext | None = None, **config) -> PLRTeacher:
    """Prioritized Level Replay (the run's env, or env=...)."""
    return _make("plr", task_space, context, config)


def make_robust_plr(task_space: Box, context: RunContext | None = None, **config) -> PLRTeacher:
    """Robust PLR: PLR without student learning on new levels (the run's env, or env=...)."""
    return _make("robust_plr", task_space, context, config, robust=True)


def make_accel(task_space: Box, context: RunContext | None = None, **config) -> PLRTeacher:
    """ACCEL: robust PLR that edits its replayed levels (an env with `edit_tasks`)."""
    hparams.check_keys(config, make_accel.config_keys, "teacher")
    num_edits = NUM_EDITS.check(config.pop("num_edits", NUM_EDITS.default), "teacher.num_edits")
    return _make("accel", task_space, context, config, robust=True, num_edits=num_edits)


hparams.declare(make_plr, PLRTeacher)
hparams.declare(make_robust_plr, PLRTeacher)
hparams.declare(make_accel, PLRTeacher, extra={"num_edits": NUM_EDITS})

TEACHERS.register("dr")(class_factory(DRTeacher, run_env=True))
TEACHERS.register("plr")(make_plr)
TEACHERS.register("robust_plr")(make_robust_plr)
TEACHERS.register("accel")(make_accel)

__all__ = [
    "BATCH_KINDS",
    "DRParams",
    "DRTeacher",
    "LevelStats",
    "PLRParams",
    "PLRState",
    "PLRTeacher",
    "episode_means",
    "level_stats",
    "make_accel",
    "make_plr",
    "make_robust_plr",
    "staleness_weights",
]
