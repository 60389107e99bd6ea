"""SPDL: Self-Paced Deep RL (Klink et al. 2020), as TeachMyAgent runs it
(flowersteam/TeachMyAgent, `teachers/algos/self_paced_teacher.py`, itself from
psclklnk/spdl).

The teacher samples tasks from a Gaussian context distribution p (mean, full covariance
held as its Cholesky factor) over the task space normalised to [0, 1]^D by its bounds, and
clips the draws to the bounds. Each completed episode adds (context, performance, return)
to a buffer of the last `buffer_size` episodes. Every `update_frequency` env steps, once
`update_offset` have been taken, and if the buffer holds an episode, p is replaced by the
solution q of SPDL's trust-region problem

    max_q  mean_i [q(c_i) / p(c_i)] V_i  -  alpha * KL(q || target)
    s.t.   KL(p || q) <= max_kl

over the buffered contexts c_i and performances V_i; the buffer is then emptied
(TeachMyAgent's `reset_contexts`). alpha follows TeachMyAgent's `PercentageAlphaFunction`:
0 for the first `alpha_offset` updates, then zeta * max(perf, 0) / max(KL(p || target),
1e-10), capped at 1e5, where perf is the mean buffered V (or, with `use_avg_performance`,
the mean buffered return). After the step, while KL(q || target) > `kl_threshold`, the
diagonal of q's Cholesky factor is floored at `std_lower_bound` (so every std is at least
that). The target is TeachMyAgent's default, a Gaussian spanning the space (mean at its
centre, std a quarter of each range), or an expert's (`target_mean`, `target_std`); the
initial distribution is TeachMyAgent's random sub-space (a uniformly drawn mean, std 10% of
each range), or an expert's (`initial_mean`, `initial_std`, or a challenge's prior through
`with_prior`).

Defaults (TeachMyAgent's `run_utils/teacher_args_handler.py`, the values a run gets
without flags): max_kl 0.8, alpha_offset 0, zeta 0.05, update_frequency 100000,
update_offset 200000 (env steps), use_avg_performance off, std_lower_bound and
kl_threshold None (here 0: no floor). The `benchmark` preset holds the settings of
TeachMyAgent's benchmark runs (`benchmark_scripts/full_benchmark_Self-Paced.txt`):
update_frequency 50000, alpha_offset 10, zeta 0.25, max_kl 0.1, use_avg_performance.
buffer_size 1000 is TeachMyAgent's `max_context_buffer_size`.

Where this differs from TeachMyAgent, and why:
- The performance V_i of an episode is the agent's value estimate of its first state, read
  from the rollout the loop hands to every teacher (`rollout.extras.value` at the episode's
  first step; for an episode that began in an earlier rollout, the value this teacher
  kept from that rollout, per instance, when it knows the run's `num_envs`). TeachMyAgent
  calls the student's value function on the buffered initial states at update time; here
  the estimate is the one the agent made when the episode started, so that the teacher
  imports no agent. Where no value is available (an agent whose extras declare no
  values, acl.core.types.ValueEstimates; no rollout, as in the toy bandit; feedback that
  cannot be matched to the rollout's episode ends; or an episode begun before a rollout
  the teacher did not keep a value from) the episode's return stands in for it; the
  snapshot's `value_share` says what share of the last update's episodes had a value.
- The trust-region problem is solved to convergence by an augmented Lagrangian (Adam on
  (mean, Cholesky factor) in `solver_rounds` x `solver_steps` steps with a decaying step,
  the multiplier updated after each round; within 0.1% of SLSQP on tests/test_spdl.py's
  problems), then pulled back along the line to the old parameters, by bisection,
  until KL(p || q) <= max_kl holds exactly; a result that is not finite or that scores
  below p itself is dropped. TeachMyAgent takes one natural-gradient step (10 conjugate-
  gradient iterations, a 10-step backtracking line search accepting KL <= 1.5 max_kl).
- Everything lives in the normalised space [0, 1]^D (TeachMyAgent works in task units), so
  `std_lower_bound`, `kl_threshold` and the expert's means and stds (given in task units)
  mean the same in every task space.
- `use_avg_performance` averages undiscounted episode returns (TeachMyAgent: returns
  discounted by the student's gamma).
- Returns and value estimates are rescaled to [0, 1] by the env's return bounds
  (`return_bounds`, TeachMyAgent's `--scale_reward`, which its benchmark did not pass).
  alpha grows with max(performance, 0): on an env whose returns are all negative (a
  penalty per step, as point_reach's) raw returns keep alpha at 0, and the distribution
  would never move towards the target. Stump Tracks' returns, in [-150, 350], are mostly
  positive once the walker walks, which is where TeachMyAgent ran it raw.
- The update is keyed on env steps counted as the loop's `step` times the rollout's
  T x N (all instances of a seed; TeachMyAgent counts one env's steps), so it is a real
  `lax.cond` under a vmap over seeds; without a rollout, valid episodes' lengths are summed.
- The constraint is TeachMyAgent's KL(p_old || q) (its `_compute_context_kl`); the paper
  writes KL(q || p_old).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.hparams import hparam, nested
from acl.core.ring import Ring, ring_init, ring_push
from acl.core.spaces import Box
from acl.core.types import Feedback, Transition, ValueEstimates, default_info
from acl.teachers import checks
from acl.teachers.base import TEACHERS, Teacher, UpdateContext, class_factory
from acl.teachers.linalg import lower_triangular_apply, lower_triangular_inverse

ALPHA_CAP = 1e5
"""TeachMyAgent's cap on alpha (`PercentageAlphaFunction`)."""
KL_FLOOR = 1e-10
"""TeachMyAgent's floor on KL(p || target) in alpha's denominator."""
INITIAL_STD = 0.1
"""TeachMyAgent's random sub-space: std 10% of each range."""
UNKNOWN, KNOWN, STARTS_NEXT = 0, 1, 2
"""Codes of `SPDLState.carry_known`: what is known of the value at the start of each
instance's unfinished episode."""
TARGET_STD = 0.25
"""TeachMyAgent's whole-space Gaussian: std a quarter of each range."""


# -- Gaussians in Cholesky form --------------------------------------------------------


@struct.dataclass
class Gaussian:
    mean: jax.Array
    """[D]"""
    chol: jax.Array
    """[D, D] lower-triangular, positive diagonal: covariance = chol @ chol.T."""

    @property
    def covariance(self) -> jax.Array:
        return self.chol @ self.chol.T

    @property
    def std(self) -> jax.Array:
        return jnp.sqrt(jnp.sum(self.chol**2, axis=-1))


def diagonal_gaussian(mean: jax.Array, std: jax.Array) -> Gaussian:
    return Gaussian(
        mean=jnp.asarray(mean, jnp.float32), chol=jnp.diag(jnp.asarray(std, jnp.float32))
    )


def log_prob(g: Gaussian, x: jax.Array) -> jax.Array:
    """log N(x; mean, chol chol^T) of points x [K, D], [K]."""
    dim = g.mean.shape[-1]
    z = lower_triangular_apply(lower_triangular_inverse(g.chol), (x - g.mean).T)  # [D, K]
    log_det = jnp.sum(jnp.log(jnp.diagonal(g.chol)))
    return -0.5 * jnp.sum(z**2, axis=0) - log_det - 0.5 * dim * jnp.log(2 * jnp.pi)


def kl(p: Gaussian, q: Gaussian) -> jax.Array:
    """KL(p || q) of two Gaussians."""
    dim = p.mean.shape[-1]
    q_inverse = lower_triangular_inverse(q.chol)
    m = lower_triangular_apply(q_inverse, p.chol)
    z = lower_triangular_apply(q_inverse, q.mean - p.mean)
    log_det = jnp.sum(jnp.log(jnp.diagonal(q.chol))) - jnp.sum(jnp.log(jnp.diagonal(p.chol)))
    return 0.5 * (jnp.sum(m**2) + jnp.sum(z**2) - dim) + log_det


def to_raw(g: Gaussian) -> tuple[jax.Array, jax.Array]:
    """The solver's free parameters: (mean, strictly lower factor + log diagonal)."""
    diag = jnp.log(jnp.diagonal(g.chol))
    return g.mean, jnp.tril(g.chol, -1) + jnp.diag(diag)


def from_raw(raw: tuple[jax.Array, jax.Array]) -> Gaussian:
    mean, factor = raw
    return Gaussian(mean=mean, chol=jnp.tril(factor, -1) + jnp.diag(jnp.exp(jnp.diagonal(factor))))


# -- SPDL's trust-region step ----------------------------------------------------------


@struct.dataclass
class Problem:
    """One SPDL update's data; contexts [K, D] normalised, weights [K] (0: padding)."""

    old: Gaussian
    target: Gaussian
    contexts: jax.Array
    performance: jax.Array
    weights: jax.Array
    alpha: jax.Array
    max_kl: jax.Array

    def objective(self, q: Gaussian, old_log_prob: jax.Array | None = None) -> jax.Array:
        """mean_i [q(c_i) / p_old(c_i)] V_i - alpha KL(q || target): to maximise.
        `old_log_prob` [K]: log p_old(c_i), if computed already."""
        if old_log_prob is None:
            old_log_prob = log_prob(self.old, self.contexts)
        ratio = jnp.exp(log_prob(q, self.contexts) - old_log_prob)
        total = jnp.maximum(self.weights.sum(), 1.0)
        return jnp.sum(self.weights * ratio * self.performance) / total - self.alpha * kl(
            q, self.target
        )

    def constraint(self, q: Gaussian) -> jax.Array:
        """KL(p_old || q): must stay <= max_kl."""
        return kl(self.old, q)


def solve(problem: Problem, learning_rate, rounds: int, steps: int, bisections: int = 30):
    """SPDL's constrained step: an augmented Lagrangian (Adam inside, `rounds` x `steps`
    gradient steps, the penalty doubling each round from 1), then bisection on the line
    from the old parameters until the KL constraint holds. Returns the new Gaussian (the
    old one if the solution is not finite or does worse than it)."""
    old_raw = to_raw(problem.old)
    # Constant through the solve: computed once, not at each of its hundreds of steps.
    objective = functools.partial(
        problem.objective, old_log_prob=log_prob(problem.old, problem.contexts)
    )
    old_value = objective(problem.old)
    # Scale-free: the objective divided by the size of its terms at the old distribution.
    scale = (
        jnp.sum(problem.weights * jnp.abs(problem.performance))
        / jnp.maximum(problem.weights.sum(), 1.0)
        + problem.alpha * kl(problem.old, problem.target)
        + 1e-8
    )
    # The step decays (cosine, to 1%) so the iterates settle on the constraint's boundary.
    optimiser = optax.adam(optax.cosine_decay_schedule(learning_rate, rounds * steps, alpha=0.01))

    def loss(raw, multiplier, penalty):
        q = from_raw(raw)
        gap = problem.constraint(q) - problem.max_kl
        # Inequality constraint: Rockafellar's augmented Lagrangian.
        shifted = jnp.maximum(0.0, multiplier + penalty * gap)
        return -objective(q) / scale + (shifted**2 - multiplier**2) / (2 * penalty)

    grad = jax.grad(loss)

    def inner(carry, _):
        raw, opt_state, multiplier, penalty = carry
        updates, opt_state = optimiser.update(grad(raw, multiplier, penalty), opt_state)
        return (optax.apply_updates(raw, updates), opt_state, multiplier, penalty), None

    def outer(carry, _):
        carry, _ = jax.lax.scan(inner, carry, None, length=steps)
        raw, opt_state, multiplier, penalty = carry
        gap = problem.constraint(from_raw(raw)) - problem.max_kl
        multiplier = jnp.maximum(0.0, multiplier + penalty * gap)
        return (raw, opt_state, multiplier, penalty * 2.0), None

    start = (old_raw, optimiser.init(old_raw), jnp.float32(0.0), jnp.float32(1.0))
    (raw, _, _, _), _ = jax.lax.scan(outer, start, None, length=rounds)

    def along(t):
        return from_raw(jax.tree.map(lambda a, b: a + t * (b - a), old_raw, raw))

    def feasible(t):
        return problem.constraint(along(t)) <= problem.max_kl

    def halve(_, bounds):
        low, high = bounds
        mid = 0.5 * (low + high)
        ok = feasible(mid)
        return jnp.where(ok, mid, low), jnp.where(ok, high, mid)

    low, _ = jax.lax.fori_loop(0, bisections, halve, (jnp.float32(0.0), jnp.float32(1.0)))
    t = jnp.where(feasible(1.0), 1.0, low)
    new = along(t)
    value = objective(new)
    ok = jnp.isfinite(value) & jnp.all(jnp.isfinite(new.chol)) & jnp.all(jnp.isfinite(new.mean))
    ok = ok & (value >= old_value)
    return jax.tree.map(lambda a, b: jnp.where(ok, a, b), new, problem.old)


def alpha_rule(iteration, performance, kl_to_target, alpha_offset, zeta):
    """TeachMyAgent's `PercentageAlphaFunction`: 0 for the first `alpha_offset` updates
    (iteration counts from 1), then zeta * max(perf, 0) / max(KL, 1e-10), capped."""
    alpha = zeta * jnp.maximum(performance, 0.0) / jnp.maximum(kl_to_target, KL_FLOOR)
    return jnp.where(iteration < alpha_offset, 0.0, jnp.minimum(alpha, ALPHA_CAP))


def floor_std(g: Gaussian, lower_bound) -> Gaussian:
    """The Cholesky diagonal floored at `lower_bound` (TeachMyAgent's), so every std is at
    least that."""
    diag = jnp.diagonal(g.chol)
    floored = jnp.maximum(diag, lower_bound)
    return g.replace(chol=g.chol + jnp.diag(floored - diag))


# -- performance of each episode from the rollout --------------------------------------


def episode_values(feedback: Feedback, rollout: Transition | None, carry_value, carry_known):
    """V(s0) of each feedback record from the rollout's `extras.value` [T, N] (none
    without a rollout, or when the agent's extras declare none: `ValueEstimates`).

    The j-th valid record is the j-th episode end of the rollout in step-major order (the
    loop's record order, kept by `compact_feedback`); an episode that ends at step t after
    L steps started at step t - L + 1, or, if that is < 0, in an earlier rollout, whose
    value at that start the caller keeps per instance (`carry_value` [N], and
    `carry_known` [N]: UNKNOWN, KNOWN, or STARTS_NEXT: the episode starts with the next
    rollout; both [0]: none kept). Returns (values [K], has_value [K], carry_value,
    carry_known)."""
    declared = rollout is not None and isinstance(rollout.extras, ValueEstimates)
    values = rollout.extras.value if declared else None
    k = feedback.mask.shape[0]
    if values is None:
        return jnp.zeros((k,)), jnp.zeros((k,), bool), carry_value, carry_known
    done = rollout.done.astype(bool)
    num_steps, n = done.shape
    values = values.astype(jnp.float32)
    ends = jnp.argsort(~done.reshape(-1), stable=True)
    ends = jnp.pad(ends, (0, max(k - ends.shape[0], 0)))[:k]  # slot of the j-th episode end
    records = jnp.argsort(~feedback.mask, stable=True)  # index of the j-th valid record
    count = feedback.mask.sum()
    num_ends = done.sum()
    consistent = (num_ends == count) | ((count == k) & (num_ends >= k))
    t, instance = ends // n, ends % n
    length = feedback.length[records]
    start = t - length + 1
    inside = start >= 0
    kept = carry_value.shape[0] == n
    value = values[jnp.clip(start, 0, num_steps - 1), instance]
    has = inside
    if kept:
        value = jnp.where(inside, value, carry_value[instance])
        has = inside | (carry_known[instance] == KNOWN)
    j = jnp.arange(k)
    has = has & consistent & (j < count) & (length >= 1)
    per_record = jnp.zeros((k,)).at[records].set(jnp.where(has, value, 0.0))
    has_record = jnp.zeros((k,), bool).at[records].set(has)
    if kept:
        # The start of each instance's unfinished episode: the step after its last end
        # (one at step T starts the next rollout: KNOWN_NEXT), else the carried one.
        steps = jnp.arange(num_steps)[:, None]
        last_end = jnp.max(jnp.where(done, steps, -1), axis=0)  # [N]
        ended = last_end >= 0
        start = jnp.where(ended, last_end + 1, 0)
        within = start < num_steps
        take = jnp.where(ended, within, carry_known == STARTS_NEXT)
        new_value = values[jnp.clip(start, 0, num_steps - 1), jnp.arange(n)]
        carry_value = jnp.where(take, new_value, jnp.where(ended, 0.0, carry_value))
        code = jnp.where(take, KNOWN, jnp.where(ended, STARTS_NEXT, carry_known))
        carry_known = code.astype(carry_known.dtype)
    return per_record, has_record, carry_value, carry_known


# -- the teacher -----------------------------------------------------------------------


@struct.dataclass
class SPDLParams:
    """Numeric hyperparameters (pytree leaves, vmappable); defaults: module docstring."""

    max_kl: jax.Array = hparam(
        0.8,
        low=0.0,
        low_open=True,
        doc="Trust region: KL(old || new) of one update (TeachMyAgent's default 0.8).",
    )
    alpha_offset: jax.Array = hparam(
        0, low=0, doc="Updates with alpha 0 before the target counts (TeachMyAgent's 0)."
    )
    zeta: jax.Array = hparam(
        0.05, low=0.0, doc="alpha = zeta * performance / KL to the target (TeachMyAgent's 0.05)."
    )
    std_lower_bound: jax.Array = hparam(
        0.0,
        low=0.0,
        doc="Floor of the Cholesky diagonal (normalised units) while KL to the target > "
        "kl_threshold; 0: none (TeachMyAgent's None).",
    )
    kl_threshold: jax.Array = hparam(
        0.0, low=0.0, doc="The std floor holds while KL(p || target) exceeds this."
    )
    use_avg_performance: jax.Array = hparam(
        False, doc="alpha from the mean episode return instead of the mean value estimate."
    )
    learning_rate: jax.Array = hparam(
        0.05, low=0.0, low_open=True, doc="First Adam step of the trust-region solver."
    )
    initial_mean: jax.Array = None
    """[D] initial mean, normalised (if `use_prior`; else drawn at init)."""
    initial_std: jax.Array = None
    """[D] initial std, normalised."""
    use_prior: jax.Array = None
    """bool: start from (initial_mean, initial_std) instead of a random sub-space."""
    target_mean: jax.Array = None
    """[D] target mean, normalised."""
    target_std: jax.Array = None
    """[D] target std, normalised."""


@struct.dataclass
class SPDLState:
    params: SPDLParams
    dist: Gaussian
    """The context distribution, normalised space."""
    buffer: Ring
    """Rows (normalised context [D], performance, return) since the last update."""
    env_steps: jax.Array
    """int32: env steps counted without a rollout (episode lengths)."""
    iterations: jax.Array
    """int32: SPDL updates done."""
    alpha: jax.Array
    kl_old: jax.Array
    """KL(previous || current) of the last update."""
    kl_target: jax.Array
    """KL(current || target)."""
    value_share: jax.Array
    """Share of the last update's episodes whose performance was a value estimate."""
    carry_value: jax.Array
    """[num_envs] value at the start of each instance's unfinished episode ([0]: none)."""
    carry_known: jax.Array
    """[num_envs] int32 codes: UNKNOWN, KNOWN (carry_value holds it), STARTS_NEXT."""


@dataclass(frozen=True)
class SPDLTeacher(Teacher):
    """SPDL (Klink et al. 2020), TeachMyAgent's version: a Gaussian over the normalised task
    space moved towards a target by trust-region steps on the agent's value estimates."""

    takes_prior = True
    """Starts from the expert prior (`with_prior`)."""
    task_space: Box
    buffer_size: int = hparam(
        1000, low=1, doc="Most recent episodes an update uses (TeachMyAgent's 1000)."
    )
    solver_rounds: int = hparam(
        10, low=1, doc="Augmented-Lagrangian multiplier updates per SPDL update."
    )
    solver_steps: int = hparam(100, low=1, doc="Adam steps per multiplier update.")
    # Static, not params leaves: a leaf may be batched over seeds, and the update's
    # `lax.cond` would then run the solver at every update as a select.
    update_frequency: int = hparam(
        100000, low=1, doc="Env steps between updates (TeachMyAgent's 100000)."
    )
    update_offset: int = hparam(
        200000, low=0, doc="Env steps before the first update (TeachMyAgent's 200000)."
    )
    num_envs: int | None = hparam(
        None,
        kind="int",
        low=1,
        doc="Instances per seed, to keep values of episodes spanning rollouts; default: the run's.",
    )
    return_bounds: tuple[float, float] | None = hparam(
        None,
        kind="floats",
        size=2,
        doc="(low, high): episode returns and value estimates are rescaled to [0, 1] by "
        "them (and clipped), TeachMyAgent's --scale_reward; default: the env's.",
    )
    initial_mean: tuple[float, ...] | None = hparam(
        None, kind="floats", doc="[D] expert's initial mean (task units); needs initial_std."
    )
    initial_std: tuple[float, ...] | None = hparam(
        None, kind="floats", low=0.0, low_open=True, doc="[D] its std (task units)."
    )
    target_mean: tuple[float, ...] | None = hparam(
        None,
        kind="floats",
        doc="[D] expert's target mean (task units); default the centre. Needs target_std.",
    )
    target_std: tuple[float, ...] | None = hparam(
        None,
        kind="floats",
        low=0.0,
        low_open=True,
        doc="[D] its std (task units); default a quarter of each range.",
    )
    hyper: SPDLParams = nested(SPDLParams)

    def __post_init__(self):
        hparams.validate_fields(self, "teacher")
        if self.return_bounds is not None and not self.return_bounds[0] < self.return_bounds[1]:
            raise ConfigError(f"teacher.return_bounds needs low < high, got {self.return_bounds}")
        dim = self.task_space.dim
        gaussians = (
            (("initial_mean", self.initial_mean), ("initial_std", self.initial_std)),
            (("target_mean", self.target_mean), ("target_std", self.target_std)),
        )
        for (mean_name, mean), (std_name, std) in gaussians:
            if (mean is None) != (std is None):
                raise ConfigError(f"teacher.{mean_name} and teacher.{std_name} go together")
            for name, values in ((mean_name, mean), (std_name, std)):
                if values is not None:
                    object.__setattr__(self, name, checks.per_dimension(values, dim, name))

    # -- coordinates ----------------------------------------------------------------------

    @property
    def _range(self) -> jax.Array:
        return self.task_space.high_array - self.task_space.low_array

    def to_unit(self, tasks: jax.Array) -> jax.Array:
        return (tasks - self.task_space.low_array) / self._range

    def from_unit(self, unit: jax.Array) -> jax.Array:
        return self.task_space.low_array + unit * self._range

    # -- parameters and state -------------------------------------------------------------

    def default_params(self) -> SPDLParams:
        dim = self.task_space.dim
        low = np.asarray(self.task_space.low, np.float64)
        span = np.asarray(self.task_space.high, np.float64) - low
        use_prior = self.initial_mean is not None
        if use_prior:
            initial_mean = (np.asarray(self.initial_mean) - low) / span
            initial_std = np.asarray(self.initial_std) / span
        else:
            initial_mean, initial_std = np.full(dim, 0.5), np.full(dim, INITIAL_STD)
        if self.target_mean is not None:
            target_mean = (np.asarray(self.target_mean) - low) / span
            target_std = np.asarray(self.target_std) / span
        else:
            target_mean, target_std = np.full(dim, 0.5), np.full(dim, TARGET_STD)
        f32 = jnp.float32
        return hparams.leaves(self.hyper).replace(
            initial_mean=jnp.asarray(initial_mean, f32),
            initial_std=jnp.asarray(initial_std, f32),
            use_prior=jnp.asarray(use_prior),
            target_mean=jnp.asarray(target_mean, f32),
            target_std=jnp.asarray(target_std, f32),
        )

    def with_prior(self, params: SPDLParams, mean, std, enabled) -> SPDLParams:
        """Expert knowledge: start from N(mean, std^2) ([D] each, task units) where
        `enabled`; traced values are fine (acl.teachers.challenge)."""
        mean = self.to_unit(jnp.asarray(mean, jnp.float32))
        std = jnp.asarray(std, jnp.float32) / self._range
        return params.replace(
            initial_mean=jnp.where(enabled, mean, params.initial_mean),
            initial_std=jnp.where(enabled, std, params.initial_std),
            use_prior=jnp.asarray(enabled) | params.use_prior,
        )

    def target(self, params: SPDLParams) -> Gaussian:
        return diagonal_gaussian(params.target_mean, params.target_std)

    def init(self, key, params: SPDLParams) -> SPDLState:
        dim = self.task_space.dim
        random_mean = jax.random.uniform(key, (dim,))
        mean = jnp.where(params.use_prior, params.initial_mean, random_mean)
        # TeachMyAgent's guard against a null variance.
        std = jnp.maximum(params.initial_std, 1e-3)
        dist = diagonal_gaussian(mean, std)
        carried = self.num_envs or 0
        zero = jnp.zeros((), jnp.float32)
        return SPDLState(
            params=params,
            dist=dist,
            buffer=ring_init(self.buffer_size, dim + 2),
            env_steps=jnp.zeros((), jnp.int32),
            iterations=jnp.zeros((), jnp.int32),
            alpha=zero,
            kl_old=zero,
            kl_target=kl(dist, self.target(params)),
            value_share=zero,
            carry_value=jnp.zeros((carried,), jnp.float32),
            # The first rollout starts every episode at its step 0.
            carry_known=jnp.full((carried,), STARTS_NEXT, jnp.int32),
        )

    # -- protocol -------------------------------------------------------------------------

    def sample(self, state: SPDLState, key, n: int):
        z = jax.random.normal(key, (n, self.task_space.dim))
        unit = jnp.clip(state.dist.mean + z @ state.dist.chol.T, 0.0, 1.0)
        tasks = jnp.clip(
            self.from_unit(unit), self.task_space.low_array, self.task_space.high_array
        )
        return state, tasks, default_info(n)

    def update(
        self,
        state: SPDLState,
        key,
        tasks,
        feedback: Feedback,
        step,
        context: UpdateContext = UpdateContext(),
    ):
        rollout = context.rollout
        dim = self.task_space.dim
        mask = feedback.mask.astype(bool)
        returns = jnp.where(mask, feedback.episode_return, 0.0).astype(jnp.float32)
        values, has_value, carry_value, carry_known = episode_values(
            feedback, rollout, state.carry_value, state.carry_known
        )
        performance = jnp.where(has_value, values, returns)
        if self.return_bounds is not None:
            low, high = self.return_bounds
            returns, performance = (
                jnp.clip((x - low) / (high - low), 0.0, 1.0) for x in (returns, performance)
            )
        unit = jnp.where(mask[:, None], self.to_unit(feedback.task[:, :dim]), 0.0)
        rows = jnp.concatenate([unit, performance[:, None], returns[:, None]], 1)
        buffer = ring_push(state.buffer, rows, mask)
        share = jnp.where(mask.any(), (has_value & mask).sum() / jnp.maximum(mask.sum(), 1), 0.0)
        lengths = jnp.where(mask, feedback.length, 0).sum().astype(jnp.int32)
        state = state.replace(
            buffer=buffer,
            env_steps=state.env_steps + lengths,
            carry_value=carry_value,
            carry_known=carry_known,
            value_share=jnp.where(mask.any(), share, state.value_share).astype(jnp.float32),
        )
        if rollout is not None:
            done = rollout.done
            # Env steps after this update, from the shared counter: the same for every
            # seed, so the branch below stays a real branch under a vmap over seeds.
            per_update = int(np.prod(done.shape))
            after = (jnp.asarray(step, jnp.int32) + 1) * per_update
            before = after - per_update
        else:
            after, before = state.env_steps, state.env_steps - lengths
        crossed = after // self.update_frequency > before // self.update_frequency
        due = crossed & (after >= self.update_offset)
        # Whether the buffer holds an episode differs between seeds: it stays out of the
        # branch's predicate, or a vmap over seeds would run the solver at every update.
        updated = jax.lax.cond(due, self._spdl_update, lambda s: s, state)
        return jax.tree.map(
            lambda new, old: jnp.where(buffer.valid.any(), new, old), updated, state
        )

    def _spdl_update(self, state: SPDLState) -> SPDLState:
        dim = self.task_space.dim
        params = state.params
        data, weights = state.buffer.data, state.buffer.valid.astype(jnp.float32)
        contexts, performance, returns = data[:, :dim], data[:, dim], data[:, dim + 1]
        count = jnp.maximum(weights.sum(), 1.0)
        mean_value = jnp.sum(weights * performance) / count
        mean_return = jnp.sum(weights * returns) / count
        iteration = state.iterations + 1
        target = self.target(params)
        old = state.dist
        alpha = alpha_rule(
            iteration,
            jnp.where(params.use_avg_performance, mean_return, mean_value),
            kl(old, target),
            params.alpha_offset,
            params.zeta,
        )
        problem = Problem(
            old=old,
            target=target,
            # Padding rows sit at the mean: finite densities, weight 0.
            contexts=jnp.where(weights[:, None] > 0, contexts, old.mean),
            performance=performance,
            weights=weights,
            alpha=alpha,
            max_kl=params.max_kl,
        )
        new = solve(problem, params.learning_rate, self.solver_rounds, self.solver_steps)
        floored = floor_std(new, params.std_lower_bound)
        new = jax.tree.map(
            lambda a, b: jnp.where(kl(new, target) > params.kl_threshold, a, b), floored, new
        )
        return state.replace(
            dist=new,
            buffer=state.buffer.replace(valid=jnp.zeros_like(state.buffer.valid)),
            iterations=iteration,
            alpha=jnp.asarray(alpha, jnp.float32),
            kl_old=kl(old, new),
            kl_target=kl(new, target),
        )

    def snapshot(self, state: SPDLState) -> dict:
        """Mean, std and covariance (normalised space), alpha, the last update's KL to the
        previous distribution and the current KL to the target."""
        return {
            "mean": state.dist.mean,
            "std": state.dist.std,
            "covariance": state.dist.covariance,
            "alpha": state.alpha,
            "kl_previous": state.kl_old,
            "kl_target": state.kl_target,
            "iterations": state.iterations,
            "value_share": state.value_share,
        }


SPDL_PRESETS: dict[str, dict] = {
    # TeachMyAgent's argument defaults (run_utils/teacher_args_handler.py).
    "teachmyagent": {},
    # TeachMyAgent's benchmark runs (benchmark_scripts/full_benchmark_Self-Paced.txt).
    "benchmark": dict(
        update_offset=200000,
        update_frequency=50000,
        alpha_offset=10,
        zeta=0.25,
        max_kl=0.1,
        use_avg_performance=True,
    ),
}
"""Named settings of the SPDL teacher."""

make_spdl = class_factory(
    SPDLTeacher,
    presets=SPDL_PRESETS,
    preset="teachmyagent",
    run_fields=("num_envs", "return_bounds"),
    name="make_spdl",
)
TEACHERS.register("spdl")(make_spdl)

__all__ = [
    "SPDL_PRESETS",
    "Gaussian",
    "Problem",
    "SPDLParams",
    "SPDLState",
    "SPDLTeacher",
    "make_spdl",
    "solve",
]
