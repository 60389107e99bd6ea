"""Reverse curriculum generation (Florensa et al. 2017, "Reverse Curriculum Generation for
Reinforcement Learning", Algorithm 1), and a uniform-start baseline.

The teacher hands out *start states* as tasks: `base_task` (the goal the whole run is
about) with its start part replaced (`StartTaskEnv.task_with_start`). It works with any
env implementing `envs.base.StartTaskEnv` (goal_maze, point_maze, brax_goal); the env is
a static field, and its `reset` / `step` drive the Brownian expansion inside jit. The
factory takes the run's env from its `RunContext`.

One *round* is `updates_per_round` calls of `update` (the paper's inner training
iterations) on a fixed batch of B = n_new + n_old starts:

1. Seed: the start at the goal, `env.goal_start(base_task)` (the paper's s^g). It is
   the first entry of the good-start buffer, and the first batch is expanded from it.
2. Expansion (the paper's SampleNearby): `num_walks` random-action walks of
   `brownian_horizon` (T_B) steps of the env's own dynamics from seeds drawn uniformly
   from the *good set* (the last round's good starts); every visited state (and the
   seeds) joins a pool of num_walks * (T_B + 1) starts; the n_new new starts are drawn
   uniformly from it. Actions are uniform draws from the env's action space (the paper
   adds Gaussian noise N(0, Sigma) to continuous actions; for discrete actions a
   uniform action is the random walk).
3. Replay: n_old starts drawn uniformly from the good-start buffer (all good starts so
   far, seeded with s^g), so the student does not forget the easier starts.
4. Labelling: every feedback record whose task equals a batch task (within
   `match_tolerance`, every coordinate) counts as an attempt of that start, and of every
   identical copy of it in the batch; its success flag counts as a success. The records
   are the training episodes, run by the student's *stochastic* policy (sampled
   actions), so they are the paper's rollouts of pi_i from each start and count toward
   the env-step budget like every training step. At the end of the round each start
   with at least `num_rollouts` (N) finished episodes gets its success rate; "good"
   starts are those with a rate in [r_min, r_max]. Episodes of tasks from an earlier
   batch (episodes run across batch boundaries in `episode` mode) match nothing and are
   ignored.
5. The distinct good starts (one per set of identical copies) join the buffer and
   become the good set that seeds the next expansion.
6. A round with no good start (no rule in the paper's Algorithm 1): the good set stays
   the last round's that had one, the walks start from it with the same horizon T_B,
   and only walk states at least as far from the goal as the set's mean distance less
   one step (`StartTaskEnv.start_distance`) are candidates, so the candidates' mean
   distance is at least that too: the frontier neither drifts back to the goal nor
   jumps out of reach. Such rounds are counted (`fallback_rounds` in the snapshot,
   hence in the run's metrics). If no walk state qualifies, every one is a candidate.

Batch tasks are handed out in order, cycling through the batch from a cursor that
carries over between `sample` calls, so the n_new : n_old mix of the handed-out tasks
is the batch's and every start gets about the same share of episodes.
With a task pool (`loop.task_pool`) the pool's first entries are the ones handed out,
so `update` moves the cursor back by the entries that were not (`feedback.handed_out`): the
next pool continues right after the last start handed out.

Where this departs from the paper, and why:
- Fixed-size arrays throughout. The good-start buffer has `buffer_capacity` slots; when
  it is full, new good starts enter by reservoir sampling (Vitter's algorithm R): after
  `seen` good starts have been offered, each one is in the buffer with probability
  capacity / seen, so replay stays uniform over the whole history as the paper's
  unbounded list is (a ring would forget the early, easy starts first, which replay
  exists to keep). The paper's list also starts with s^g; here s^g can be evicted once
  the buffer is full.
- The paper's expansion loops until M = 10000 states are collected; here it is a fixed
  `num_walks` walks (default 200 x 50 steps: the same 10000 states), and the walks do not
  stop at termination (the dynamics are stepped on; done flags are ignored).
- No good start in a round: step 6 above. The authors' code (rllab-curriculum,
  `maze_brownian_algo.py`) re-seeds from the replay buffer when most labelled starts
  were too hard and otherwise walks 10 x T_B steps (with 10 x the action noise) from
  the too-easy starts; the first drifts back towards the goal and the second
  overshoots into starts that are all too hard, so this rule replaces both.
- A round in which no batch start got N finished episodes is extended instead (the
  batch and its counts are kept until the next round boundary).
- N: the authors label with 3 rollouts per start (`n_traj`), or from the training
  paths of starts with at least 2. Here N (default 3) applies to the training
  episodes; size a round (`updates_per_round` times the episodes per update) so that
  the batch's starts get about N episodes each.
- The round boundary is `(step + 1) % updates_per_round == 0` on the loop's update
  counter, the same for every seed, so under `vmap` over seeds the expansion is a real
  `lax.cond` branch (the original design, "vmap and control flow"); all per-seed choices inside it
  are selects.
- The paper's start collection skips states within a distance threshold of stored ones;
  here only identical copies within one batch are merged, so the buffer can hold a
  start once per round in which it was good (a start that stays good is replayed more).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.hparams import hparam, nested
from acl.core.spaces import Box
from acl.core.types import Feedback, default_info
from acl.teachers import checks
from acl.teachers.base import TEACHERS, Teacher, UpdateContext, class_factory
from acl.teachers.counting import CountingState, CountingTeacher
from envs.base import StartTaskEnv

START_ENV = dict(
    uses="walks the env's dynamics",
    build="make_reverse(task_space, env=...) (experiments/reverse_curriculum.py does)",
    protocol=StartTaskEnv,
    methods=("start_from_state", "task_with_start", "goal_start", "start_distance"),
)
"""`checks.check_env`'s wording for the start-state teachers."""


BASE_TASK_DOC = (
    "[D] the task whose start part is replaced: it fixes the goal; default: the task "
    "space's default task."
)


@struct.dataclass
class ReverseParams:
    """Numeric hyperparameters (pytree leaves, vmappable): as configured on the teacher
    (`hyper`), as arrays in `default_params()`."""

    r_min: jax.Array = hparam(
        0.1, low=0.0, high=1.0, doc="Lowest success rate of a good start (paper: 0.1)."
    )
    r_max: jax.Array = hparam(
        0.9, low=0.0, high=1.0, doc="Highest success rate of a good start (paper: 0.9)."
    )
    base_task: jax.Array = hparam(None, kind="floats", doc=BASE_TASK_DOC)


@struct.dataclass
class ReverseState:
    params: ReverseParams
    key: jax.Array
    """Round keys are fold_in(key, step); never split, so a no-op update changes nothing."""
    batch: jax.Array
    """[B, S] starts of the current round: n_new new, then n_old replayed."""
    is_new: jax.Array
    """[B] bool: the start came from this round's expansion (else from the buffer)."""
    attempts: jax.Array
    """[B] int32: finished episodes from each start this round."""
    successes: jax.Array
    """[B] int32: successful ones among them."""
    cursor: jax.Array
    """int32: the batch index the next `sample` starts at."""
    buffer: jax.Array
    """[C, S] good starts (slot 0 starts as the seed s^g)."""
    buffer_count: jax.Array
    """int32: filled slots of the buffer (<= C)."""
    buffer_seen: jax.Array
    """int32: starts ever offered to the buffer (the reservoir's counter)."""
    good_set: jax.Array
    """[B, S] the good starts of the last round that had any (at first: s^g alone)."""
    good_set_mask: jax.Array
    """[B] bool: which rows of good_set are good starts."""
    rounds: jax.Array
    """int32: rounds completed."""
    fallback_rounds: jax.Array
    """int32: rounds completed without a good start (module docstring, step 6)."""
    last_good: jax.Array
    """int32: good starts found at the last round's labelling."""
    episodes_seen: jax.Array
    """int32: valid feedback records so far."""


@dataclass(frozen=True)
class ReverseTeacher(Teacher):
    """Reverse curriculum generation; see the module docstring."""

    task_space: Box
    env: StartTaskEnv | None = hparam(
        None, kind="any", doc="The env whose starts are handed out (static); default: the run's."
    )
    n_new: int = hparam(
        200, low=1, doc="New starts per round, drawn from the Brownian expansion (paper: 200)."
    )
    n_old: int = hparam(
        100, low=1, doc="Replayed starts per round, drawn from the good-start buffer (paper: 100)."
    )
    brownian_horizon: int = hparam(
        50, low=1, doc="T_B: steps of each random-action walk (paper: T_B = 50)."
    )
    num_walks: int = hparam(
        200, low=1, doc="Walks per expansion (paper: walks until M = 10000 states = 200 x T_B)."
    )
    num_rollouts: int = hparam(
        3,
        low=1,
        doc="N: finished episodes of the stochastic policy a start needs in a round to be "
        "labelled (authors' code: n_traj = 3).",
    )
    updates_per_round: int = hparam(
        5, low=1, doc="`update` calls per round: training iterations on one batch (paper: 5)."
    )
    buffer_capacity: int = hparam(
        10_000, low=1, doc="Slots of the good-start buffer; reservoir sampling when full."
    )
    match_tolerance: float = hparam(
        1e-5,
        low=0.0,
        doc="A feedback task matches a batch task when every coordinate is within this.",
    )
    hyper: ReverseParams = nested(ReverseParams)

    def __post_init__(self):
        checks.check_env(self.env, self.task_space, "reverse", **START_ENV)
        hparams.validate_fields(self, "teacher")
        lo, hi = self.hyper.r_min, self.hyper.r_max
        checks.check(
            lo <= hi,
            f"teacher.r_min and teacher.r_max need 0 <= r_min <= r_max <= 1, got {lo}, {hi}",
        )
        base = checks.base_task(self.task_space, self.hyper.base_task)
        object.__setattr__(self, "hyper", self.hyper.replace(base_task=base))

    @property
    def batch_size(self) -> int:
        return self.n_new + self.n_old

    @property
    def start_dim(self) -> int:
        return int(self.env.start_dim)

    # -- parameters and state ----------------------------------------------------------

    def default_params(self) -> ReverseParams:
        return hparams.leaves(checks.with_base_task(self.hyper, self.task_space))

    def init(self, key: jax.Array, params: ReverseParams) -> ReverseState:
        """Buffer = [s^g]; the first batch is expanded from s^g (Algorithm 1, line 1)."""
        round_key, first_key = jax.random.split(key)
        seed = self.env.goal_start(params.base_task).astype(jnp.float32)
        buffer = jnp.zeros((self.buffer_capacity, self.start_dim), jnp.float32).at[0].set(seed)
        b = self.batch_size
        state = ReverseState(
            params=params,
            key=round_key,
            batch=jnp.broadcast_to(seed, (b, self.start_dim)),
            good_set=jnp.broadcast_to(seed, (b, self.start_dim)),
            good_set_mask=jnp.arange(b) == 0,
            is_new=jnp.arange(b) < self.n_new,
            attempts=jnp.zeros((b,), jnp.int32),
            successes=jnp.zeros((b,), jnp.int32),
            cursor=jnp.zeros((), jnp.int32),
            buffer=buffer,
            buffer_count=jnp.ones((), jnp.int32),
            buffer_seen=jnp.ones((), jnp.int32),
            rounds=jnp.zeros((), jnp.int32),
            fallback_rounds=jnp.zeros((), jnp.int32),
            last_good=jnp.zeros((), jnp.int32),
            episodes_seen=jnp.zeros((), jnp.int32),
        )
        return self._new_batch(state, first_key, -jnp.inf)

    # -- tasks ---------------------------------------------------------------------------

    def batch_tasks(self, state: ReverseState) -> jax.Array:
        """[B, D] the current batch as tasks."""
        tasks = self.env.task_with_start(
            jnp.broadcast_to(state.params.base_task, (self.batch_size, self.task_space.dim)),
            state.batch,
        )
        return self.task_space.clip(tasks)

    def sample(self, state: ReverseState, key: jax.Array, n: int):
        """n tasks [n, D], cycling through the batch from the cursor."""
        del key  # the batch is random already; cycling spreads episodes evenly over it
        index = (state.cursor + jnp.arange(n)) % self.batch_size
        tasks = self.batch_tasks(state)[index]
        cursor = ((state.cursor + n) % self.batch_size).astype(jnp.int32)
        return state.replace(cursor=cursor), tasks, default_info(n)

    # -- update --------------------------------------------------------------------------

    def match(self, state: ReverseState, feedback: Feedback) -> jax.Array:
        """[K, B] bool: valid record k ran batch start b (or an identical copy of it)."""
        diff = jnp.abs(feedback.task[:, None, :] - self.batch_tasks(state)[None, :, :])
        same = jnp.all(diff <= self.match_tolerance, axis=-1)  # NaN compares False
        return same & feedback.mask.astype(bool)[:, None]

    def update(
        self,
        state: ReverseState,
        key: jax.Array,
        tasks: jax.Array,
        feedback: Feedback,
        step: jax.Array,
        context: UpdateContext = UpdateContext(),
    ) -> ReverseState:
        """Counts attempts and successes per batch start; at a round boundary
        ((step + 1) % updates_per_round == 0) labels, fills the buffer and expands.

        With a task pool (`feedback.handed_out`), only tasks[:handed_out] were used, so the
        cursor moves back over the rest; the next `sample` hands those starts out first."""
        if feedback.handed_out is not None:
            unused = tasks.shape[0] - jnp.clip(feedback.handed_out, 0, tasks.shape[0])
            cursor = (state.cursor - unused) % self.batch_size
            state = state.replace(cursor=cursor.astype(jnp.int32))
        hits = self.match(state, feedback)
        wins = hits & feedback.success.astype(bool)[:, None]
        state = state.replace(
            attempts=state.attempts + hits.sum(0).astype(jnp.int32),
            successes=state.successes + wins.sum(0).astype(jnp.int32),
            episodes_seen=state.episodes_seen + feedback.mask.astype(jnp.int32).sum(),
        )
        # The predicate depends on `step` only, the same for every seed: a real branch.
        due = (jnp.asarray(step) + 1) % self.updates_per_round == 0
        return jax.lax.cond(due, self._end_round, lambda s, _: s, state, step)

    def labels(self, state: ReverseState) -> dict[str, jax.Array]:
        """Per batch start [B]: success rate, and whether it is good / too easy / too hard
        (all False for a start with fewer than `num_rollouts` finished episodes)."""
        p = state.params
        tried = state.attempts >= self.num_rollouts
        rate = state.successes / jnp.maximum(state.attempts, 1)
        return {
            "rate": jnp.where(state.attempts > 0, rate, 0.0),
            "good": tried & (rate >= p.r_min) & (rate <= p.r_max),
            "too_easy": tried & (rate > p.r_max),
            "too_hard": tried & (rate < p.r_min),
        }

    def first_copies(self, state: ReverseState) -> jax.Array:
        """[B] bool: the batch start is the first of its identical copies (walks on a grid
        revisit cells, and a replayed start can equal a new one)."""
        tasks = self.batch_tasks(state)
        same = jnp.all(jnp.abs(tasks[:, None] - tasks[None]) <= self.match_tolerance, axis=-1)
        earlier = jnp.arange(self.batch_size)[None, :] < jnp.arange(self.batch_size)[:, None]
        return ~jnp.any(same & earlier, axis=1)

    def set_distance(self, state: ReverseState) -> jax.Array:
        """Mean distance to the goal (env steps) of the good set's starts."""
        distance = self.env.start_distance(state.good_set, state.params.base_task)
        mask = state.good_set_mask
        return jnp.sum(jnp.where(mask, distance, 0.0)) / jnp.maximum(mask.sum(), 1)

    def _end_round(self, state: ReverseState, step: jax.Array) -> ReverseState:
        label = self.labels(state)
        # One vote per distinct start: copies share their label, and would otherwise
        # enter the buffer (and seed walks) once per copy.
        good = label["good"] & self.first_copies(state)
        reservoir_key, batch_key = jax.random.split(jax.random.fold_in(state.key, step))
        buffer, count, seen = self._reservoir_add(reservoir_key, state, good)
        any_good = jnp.any(good)
        # No good start: walks from the last good set, kept at most one step nearer.
        threshold = jnp.where(any_good, -jnp.inf, self.set_distance(state) - 1.0)
        advanced = state.replace(
            good_set=jnp.where(any_good, state.batch, state.good_set),
            good_set_mask=jnp.where(any_good, good, state.good_set_mask),
            buffer=buffer,
            buffer_count=count,
            buffer_seen=seen,
            rounds=state.rounds + 1,
            fallback_rounds=state.fallback_rounds + (~any_good).astype(jnp.int32),
            last_good=good.sum().astype(jnp.int32),  # distinct good starts
        )
        advanced = self._new_batch(advanced, batch_key, threshold)
        # No start has N finished episodes yet: keep the round going (nothing to label).
        labelled = jnp.any(state.attempts >= self.num_rollouts)
        return jax.tree.map(lambda new, old: jnp.where(labelled, new, old), advanced, state)

    def _reservoir_add(self, key: jax.Array, state: ReverseState, good: jax.Array):
        """Offers the batch starts where `good` [B] to the buffer (algorithm R)."""
        capacity = self.buffer_capacity
        # One draw for the whole batch (random ops are costly to compile inside a scan).
        u = jax.random.uniform(key, (self.batch_size,))

        def offer(carry, xs):
            buffer, count, seen = carry
            start, keep, u = xs
            # Full: a slot uniform in [0, seen]; only slots < capacity are real.
            slot_if_full = jnp.minimum(jnp.floor(u * (seen + 1)).astype(jnp.int32), seen)
            slot = jnp.where(count < capacity, count, slot_if_full)
            write = keep & (slot < capacity)
            row = jnp.where(write, start, buffer[jnp.minimum(slot, capacity - 1)])
            buffer = buffer.at[jnp.minimum(slot, capacity - 1)].set(row)
            count = jnp.where(keep, jnp.minimum(count + 1, capacity), count)
            return (buffer, count, seen + keep.astype(jnp.int32)), None

        carry = (state.buffer, state.buffer_count, state.buffer_seen)
        (buffer, count, seen), _ = jax.lax.scan(offer, carry, (state.batch, good, u))
        return buffer, count, seen

    def _new_batch(self, state: ReverseState, key: jax.Array, min_distance: jax.Array):
        """A fresh batch: n_new from walks seeded uniformly by the good set, among the
        visited states at least `min_distance` env steps from the goal (all of them if
        none is), and n_old uniform from the buffer; counts and cursor reset."""
        w, horizon = self.num_walks, self.brownian_horizon
        # Two random ops in all: random ops are slow to compile, and this runs in a cond.
        keys = jax.random.split(key, 1 + w + horizon * w)
        action_shape = self.env.action_space().shape
        num_action_u = horizon * w * int(np.prod(action_shape))
        u = jax.random.uniform(keys[0], (w + self.n_new + self.n_old + num_action_u,))
        seed_u, new_u, old_u, action_u = jnp.split(
            u, np.cumsum([w, self.n_new, self.n_old]).tolist()
        )
        seeds = state.good_set[_weighted_index(seed_u, state.good_set_mask)]
        visited = self.brownian_walks(
            state.params.base_task,
            seeds,
            reset_keys=keys[1 : 1 + w],
            step_keys=keys[1 + w :].reshape(horizon, w, -1),
            action_u=action_u.reshape((horizon, w) + tuple(action_shape)),
        ).reshape(w * (horizon + 1), self.start_dim)
        distance = self.env.start_distance(visited, state.params.base_task)
        far = distance >= min_distance
        candidates = jnp.where(jnp.any(far), far, True)
        new = visited[_weighted_index(new_u, candidates)]
        old = state.buffer[_uniform_index(old_u, state.buffer_count)]
        b = self.batch_size
        return state.replace(
            batch=jnp.concatenate([new, old]).astype(jnp.float32),
            is_new=jnp.arange(b) < self.n_new,
            attempts=jnp.zeros((b,), jnp.int32),
            successes=jnp.zeros((b,), jnp.int32),
            cursor=jnp.zeros((), jnp.int32),
        )

    def brownian_walks(
        self,
        base_task: jax.Array,
        seeds: jax.Array,
        reset_keys: jax.Array,
        step_keys: jax.Array,
        action_u: jax.Array,
    ) -> jax.Array:
        """Random-action walks of L steps from seeds [W, S] -> visited starts
        [W, L + 1, S] (the seed's reset state first).

        reset_keys [W], step_keys [L, W] (PRNG keys), action_u [L, W, *action shape]
        uniform in [0, 1): the actions, uniform over the env's action space. Done flags
        are ignored: the walk follows the dynamics, not an episode.
        """
        env = self.env
        num = seeds.shape[0]
        base = env.default_params()
        tasks = env.task_with_start(jnp.broadcast_to(base_task, (num, base_task.shape[-1])), seeds)
        params = jax.vmap(lambda task: env.task_to_params(task, base))(tasks)
        _, states = jax.vmap(env.reset)(reset_keys, params)
        actions = _uniform_actions(env.action_space(), action_u)

        def one(states, xs):
            action, keys = xs
            _, states, *_ = jax.vmap(env.step)(keys, states, action, params)
            return states, jax.vmap(env.start_from_state)(states)

        _, path = jax.lax.scan(one, states, (actions, step_keys))  # [L, W, S]
        first = jax.vmap(env.start_from_state)(states)
        visited = jnp.concatenate([first[None], path]).astype(jnp.float32)
        return jnp.swapaxes(visited, 0, 1)

    # -- records -------------------------------------------------------------------------

    def snapshot(self, state: ReverseState) -> dict:
        label = self.labels(state)
        return {
            "batch": state.batch,
            "batch_is_new": state.is_new,
            "batch_rate": label["rate"],
            "batch_attempts": state.attempts,
            "buffer": state.buffer,
            "buffer_count": state.buffer_count,
            "buffer_seen": state.buffer_seen,
            "good_set": state.good_set,
            "good_set_mask": state.good_set_mask,
            "frontier_distance": self.set_distance(state),
            "rounds": state.rounds,
            "fallback_rounds": state.fallback_rounds,
            "last_good": state.last_good,
            "episodes_seen": state.episodes_seen,
        }


def _weighted_index(u: jax.Array, weights: jax.Array) -> jax.Array:
    """Uniform numbers u [n] in [0, 1) -> n indices drawn in proportion to `weights`
    [M] (zero weights are never drawn), by inverse CDF."""
    cdf = jnp.cumsum(weights.astype(jnp.float32))
    index = jnp.searchsorted(cdf, u * cdf[-1], side="right")
    return jnp.minimum(index, weights.shape[0] - 1)


def _uniform_index(u: jax.Array, size: jax.Array) -> jax.Array:
    """Uniform numbers u in [0, 1) -> indices in [0, size)."""
    return jnp.minimum(jnp.floor(u * size).astype(jnp.int32), jnp.maximum(size - 1, 0))


def _uniform_actions(space, u: jax.Array) -> jax.Array:
    """Uniform numbers [..., *action shape] in [0, 1) -> uniform actions of a gymnax
    Discrete or Box space."""
    if isinstance(space, spaces.Discrete):
        return jnp.minimum(jnp.floor(u * space.n), space.n - 1).astype(space.dtype)
    if isinstance(space, spaces.Box):
        low = jnp.broadcast_to(jnp.asarray(space.low, jnp.float32), space.shape)
        high = jnp.broadcast_to(jnp.asarray(space.high, jnp.float32), space.shape)
        return low + u * (high - low)
    raise ConfigError(
        f"teacher.env: random walks need a Discrete or Box action space, got {type(space)}"
    )


@struct.dataclass
class UniformStartParams:
    """Numeric hyperparameters (pytree leaves, vmappable)."""

    base_task: jax.Array = hparam(None, kind="floats", doc=BASE_TASK_DOC)


@dataclass(frozen=True)
class UniformStartTeacher(CountingTeacher):
    """Baseline: starts uniform over the task space's start part, goal fixed.

    A uniform task is mapped to the env's params and reset (so a start in a wall lands
    where the env puts it: goal_maze's nearest free cell), and the start read back from
    that state; the goal part comes from `base_task`.
    """

    task_space: Box
    env: StartTaskEnv | None = hparam(
        None, kind="any", doc="The env whose starts are handed out (static); default: the run's."
    )
    hyper: UniformStartParams = nested(UniformStartParams)

    def __post_init__(self):
        checks.check_env(self.env, self.task_space, "uniform_start", **START_ENV)
        hparams.validate_fields(self, "teacher")
        base = checks.base_task(self.task_space, self.hyper.base_task)
        object.__setattr__(self, "hyper", self.hyper.replace(base_task=base))

    def default_params(self) -> UniformStartParams:
        return hparams.leaves(checks.with_base_task(self.hyper, self.task_space))

    def sample(self, state: CountingState, key: jax.Array, n: int):
        env = self.env
        task_key, reset_key = jax.random.split(key)
        uniform = self.task_space.sample_uniform(task_key, n)
        _, env_states = jax.vmap(env.reset)(
            jax.random.split(reset_key, n), env.params_for_tasks(uniform)
        )
        starts = jax.vmap(env.start_from_state)(env_states)
        base = jnp.broadcast_to(state.params.base_task, (n, self.task_space.dim))
        tasks = self.task_space.clip(env.task_with_start(base, starts))
        return state, tasks, default_info(n)


REVERSE_PRESETS: dict[str, dict] = {
    # Florensa et al. 2017: N_new 200, N_old 100, T_B 50, M = 10000 expansion states,
    # 5 training iterations per outer iteration, good starts in [0.1, 0.9].
    "florensa2017": dict(
        n_new=200,
        n_old=100,
        brownian_horizon=50,
        num_walks=200,
        updates_per_round=5,
        r_min=0.1,
        r_max=0.9,
    ),
    # Small grids and CPU runs: short walks (a u_maze is 16 steps across at most).
    "small": dict(
        n_new=64,
        n_old=32,
        brownian_horizon=5,
        num_walks=64,
        updates_per_round=2,
        buffer_capacity=1024,
        r_min=0.1,
        r_max=0.9,
    ),
}
"""Named settings of the reverse teacher."""


make_reverse = class_factory(
    ReverseTeacher,
    run_env=True,
    presets=REVERSE_PRESETS,
    preset="florensa2017",
    name="make_reverse",
)
make_reverse.__doc__ = """ReverseTeacher from a named preset plus keyword overrides, on the run's
env (or env=..., a StartTaskEnv)."""

TEACHERS.register("reverse")(make_reverse)
TEACHERS.register("uniform_start")(class_factory(UniformStartTeacher, run_env=True))

__all__ = [
    "REVERSE_PRESETS",
    "ReverseParams",
    "ReverseState",
    "ReverseTeacher",
    "UniformStartParams",
    "UniformStartTeacher",
    "make_reverse",
]
