"""Gaussian mixtures fitted by EM in pure JAX, for the ALP-GMM teacher (Portelas et al. 2019).

`fit_gmms` fits every number of components k in [k_min, k_max] and every random init in one
batched, fixed-shape computation. Fits run in pairs (k, k_min + k_max - k) packed on one
component axis of k_min + k_max (`em_packed`: each mixture normalised, scored and stopped on
its own), about a third less work than padding each to k_max. They are returned padded to
k_max: the components >= k of a k-component fit are inactive (weight exactly 0, mean 0,
covariance reg_covar * I). `select_best` then picks the fit with the lowest AIC, BIC or AICc.

Init (per fit): k-means++ (D^2) seeding over the valid points gives the means, all components
start with the shared covariance of the valid data and uniform weights. This is sklearn's
"k-means++" init without the Lloyd refinement; EM does the refinement, and several inits per k
guard against a poor seed.

EM stops as sklearn's does: after the iteration where the mean log-likelihood per valid point
changed by less than `tol` (default 1e-3), or after `max_iter` iterations. All fits share
one `lax.while_loop` that runs until the last of them has stopped (under a vmap over seeds,
the last of every seed's fits); with `phased`, once about half the slots have stopped in
every seed, the slots still running go on alone, and so on down to 2 (`_run_slots`). A
stopped fit is frozen, so each returns what it would alone.

Speed on XLA's CPU backend (these fits dominate the GMM teachers' cost): per-component arrays
are laid out [K, points] so reductions run over the minor axis, small-F linear algebra is
unrolled into elementwise ops (`acl.teachers.linalg`), and the fits form one flat vmap (a
size-1 axis, e.g. one init per k, made the fused loop body several times slower). With 8
fits of 150 points per seed, an EM iteration took 0.3 ms for 1 seed and 0.5 ms for 8
(kernel launches more than arithmetic); the packing paid from about 16 seeds on (2x per
iteration at 16, 1.65x at 64).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.teachers.linalg import UNROLL_MAX_DIM, cholesky_with_inverse

CRITERIA = ("aic", "bic", "aicc")
DEFAULT_TOL = 1e-3
"""sklearn's GaussianMixture tol: EM stops when the mean log-likelihood per point changes
by less."""


@struct.dataclass
class GMM:
    """One mixture, padded to k_max components (inactive ones have weight 0)."""

    weights: jax.Array  # [k_max]
    means: jax.Array  # [k_max, F]
    covariances: jax.Array  # [k_max, F, F]


@struct.dataclass
class GMMFits:
    """Every fit of `fit_gmms`: K_count = k_max - k_min + 1 sizes times I inits."""

    weights: jax.Array  # [K_count, I, k_max]
    means: jax.Array  # [K_count, I, k_max, F]
    covariances: jax.Array  # [K_count, I, k_max, F, F]
    log_likelihood: jax.Array  # [K_count, I], summed over valid points
    aic: jax.Array  # [K_count, I]
    bic: jax.Array  # [K_count, I]
    aicc: jax.Array  # [K_count, I]
    n_iter: jax.Array  # [K_count, I] int32, EM iterations run


def n_parameters(k, num_features: int):
    """Free parameters of a k-component full-covariance mixture in F = num_features dims.

    Args:
      k: int or integer array of component counts (any shape).
      num_features: F.
    Returns:
      (k - 1) mixing weights + k * F means + k * F (F + 1) / 2 covariance entries, same shape as k.
    """
    f = num_features
    return (k - 1) + k * f + k * (f * (f + 1) // 2)


def _component_log_pdf(x: jax.Array, means: jax.Array, covariances: jax.Array) -> jax.Array:
    """Gaussian log densities of each point under each component.

    Args:
      x: [N, F]
      means: [K, F]
      covariances: [K, F, F]
    Returns:
      [K, N] (components first: EM reduces over points, the minor axis, which XLA's CPU
      backend does far faster than over a minor axis of K)
    """
    num_features = x.shape[-1]
    chol, prec_chol = cholesky_with_inverse(covariances)  # [K, F, F] each; prec_chol = L^-1
    # sklearn's form: the Cholesky factor of the precision L^-1 (an F x F triangular solve per
    # component), applied to the points. As in sklearn, L^-1 x - L^-1 mu (not L^-1 (x - mu)):
    # half the work, and the float32 rounding (~1e-7 |x| / sigma) is negligible on normalised
    # data.
    prec_mean = jnp.einsum("kfg,kg->kf", prec_chol, means)  # [K, F]
    if num_features > UNROLL_MAX_DIM:
        sol = jnp.einsum("kfg,ng->kfn", prec_chol, x) - prec_mean[:, :, None]
        maha = jnp.sum(sol**2, axis=1)  # [K, N]
    else:
        # Small F: the triangular product as F (F + 1) / 2 multiply-adds over [K, N], one
        # fused loop; the previous [K, N, F] einsum made the E-step ~3x slower for F = 3.
        xt = x.T  # [F, N]
        maha = jnp.zeros((means.shape[0], x.shape[0]), x.dtype)
        for i in range(num_features):
            row = -prec_mean[:, i, None]
            for j in range(i + 1):
                row = row + prec_chol[:, i, j, None] * xt[None, j, :]
            maha = maha + row * row
    log_det = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)  # [K] (half)
    return -0.5 * (num_features * math.log(2.0 * math.pi) + maha) - log_det[:, None]


def _log_joint(x: jax.Array, weights: jax.Array, means, covariances, active) -> jax.Array:
    """log w_k + log N(x | mu_k, Sigma_k), -inf on inactive components.

    Args:
      x: [N, F]; weights: [K]; means: [K, F]; covariances: [K, F, F]; active: [K] bool.
    Returns:
      [K, N]
    """
    log_pdf = _component_log_pdf(x, means, covariances)
    # `where`, not arithmetic, so a NaN in an unused component cannot leak into the sum.
    safe_log_w = jnp.log(jnp.where(active, weights, 1.0))
    return jnp.where(active[:, None], log_pdf + safe_log_w[:, None], -jnp.inf)


def gmm_log_prob(gmm: GMM, x: jax.Array) -> jax.Array:
    """Log density of the mixture.

    Args:
      gmm: weights [K], means [K, F], covariances [K, F, F].
      x: [N, F]
    Returns:
      [N]
    """
    log_joint = _log_joint(x, gmm.weights, gmm.means, gmm.covariances, gmm.weights > 0)
    return jax.nn.logsumexp(log_joint, axis=0)


def _draw_index(key: jax.Array, probs: jax.Array, shape: tuple[int, ...] = ()) -> jax.Array:
    """Indices drawn with probability proportional to probs, by inverse CDF.

    One uniform per draw: `jax.random.categorical` draws a Gumbel per index and per draw,
    which cost more than everything else around it on CPU. Index j is drawn when u falls in
    [cdf_{j-1}, cdf_j), so never one of probability 0, except through rounding at the top:
    clamp to the last positive index.

    Args:
      key: PRNG key; probs: [K] >= 0, need not be normalised (all 0: the last index).
      shape: the shape of the draws (static).
    Returns:
      int32 indices, `shape`.
    """
    cdf = jnp.cumsum(probs)
    u = jax.random.uniform(key, shape, dtype=cdf.dtype) * cdf[-1]
    index = jnp.sum(u[..., None] >= cdf[:-1], axis=-1)
    last_positive = probs.shape[0] - 1 - jnp.argmax(probs[::-1] > 0)
    return jnp.minimum(index, last_positive).astype(jnp.int32)


def sample_gmm(
    key: jax.Array, gmm: GMM, n: int, component_probs: jax.Array | None = None
) -> jax.Array:
    """Draws n points: a component by `component_probs` (default: the weights), then its Gaussian.

    Args:
      key: PRNG key.
      gmm: weights [K], means [K, F], covariances [K, F, F].
      n: number of samples (static).
      component_probs: [K] nonnegative, need not be normalised; None means gmm.weights.
    Returns:
      [n, F]
    """
    probs = gmm.weights if component_probs is None else component_probs
    comp_key, noise_key = jax.random.split(key)
    comps = _draw_index(comp_key, jnp.where(probs > 0, probs, 0.0), (n,))  # [n]
    chol, _ = cholesky_with_inverse(gmm.covariances)  # [K, F, F]
    num_features = gmm.means.shape[-1]
    z = jax.random.normal(noise_key, (n, num_features), dtype=gmm.means.dtype)
    chol_n = chol[comps]  # [n, F, F]
    # L z as F multiply-adds over [n, F] (a batched F x F matvec is a slow dot on CPU).
    return gmm.means[comps] + sum(chol_n[:, :, g] * z[:, g, None] for g in range(num_features))


def _kmeans_pp_means(key: jax.Array, x: jax.Array, mask: jax.Array, k_max: int) -> jax.Array:
    """k-means++ (D^2) seeds drawn from the valid points.

    Args:
      key: PRNG key; x: [P, F] (masked rows already finite); mask: [P] bool; k_max: static.
    Returns:
      [k_max, F]
    """
    uniform = mask.astype(x.dtype)
    keys = jax.random.split(key, k_max)
    x_cols = x.T  # [F, P]

    def d2_to(centre):
        # Columnwise: reducing a short minor axis of [P, F] is slow on XLA's CPU backend.
        return sum((x_cols[f] - centre[f]) ** 2 for f in range(x.shape[-1]))

    first = x[_draw_index(keys[0], uniform)]
    centres = jnp.zeros((k_max, x.shape[-1]), x.dtype).at[0].set(first)
    d2 = d2_to(first)

    def body(j, carry):
        centres, d2 = carry
        w = jnp.where(mask, d2, 0.0)
        # All valid points on the chosen centres (duplicates): fall back to uniform.
        c = x[_draw_index(keys[j], jnp.where(jnp.sum(w) > 0, w, uniform))]
        d2 = jnp.minimum(d2, d2_to(c))
        return centres.at[j].set(c), d2

    centres, _ = jax.lax.fori_loop(1, k_max, body, (centres, d2))
    return centres


def _m_step(x, resp, active, reg_covar, groups=None):
    """Weights, means and covariances from responsibilities.

    Args:
      x: [P, F]; resp: [K, P], zero on masked points and inactive components; active: [K]
      bool; reg_covar: scalar; groups: None (one mixture), or [K] int32 the mixture of each
      component (`em_packed`), whose weights are normalised within it.
    Returns:
      weights [K], means [K, F], covariances [K, F, F]
    """
    num_features = x.shape[-1]
    # Like sklearn: a tiny floor so an emptied component divides by > 0, not 0.
    nk = jnp.sum(resp, axis=1) + 10 * jnp.finfo(x.dtype).eps  # [K]
    weights = jnp.where(active, nk, 0.0)
    if groups is None:
        weights = weights / jnp.sum(weights)
    else:
        same = groups[:, None] == groups[None, :]  # [K, K]
        weights = weights / jnp.sum(jnp.where(same, weights[None, :], 0.0), axis=1)
    means = (resp @ x) / nk[:, None]  # [K, F]
    # Centred outer products, not E[xx^T] - mu mu^T, which cancels badly in float32.
    diff = x.T[:, None, :] - means.T[:, :, None]  # [F, K, P]
    if num_features > UNROLL_MAX_DIM:
        cov = jnp.einsum("kp,fkp,gkp->kfg", resp, diff, diff)
    else:
        # Small F: F (F + 1) / 2 weighted sums over the points (the minor axis), fused.
        entries = [[None] * num_features for _ in range(num_features)]
        for i in range(num_features):
            weighted = resp * diff[i]
            for j in range(i + 1):
                entries[i][j] = entries[j][i] = jnp.sum(weighted * diff[j], axis=1)
        cov = jnp.stack([jnp.stack(row, axis=-1) for row in entries], axis=-2)
    cov = cov / nk[:, None, None] + reg_covar * jnp.eye(num_features, dtype=x.dtype)
    return weights, means, cov


def em_from_init(
    points: jax.Array,
    mask: jax.Array,
    weights: jax.Array,
    means: jax.Array,
    covariances: jax.Array,
    max_iter,
    reg_covar,
    tol=DEFAULT_TOL,
):
    """EM (E then M) from a given mixture until the lower bound converges, as sklearn does.

    Iteration n computes the mean log-likelihood per valid point of the current parameters
    (sklearn's lower bound) in the E-step, then the M-step; EM stops after the iteration whose
    bound changed by less than `tol` from the previous one, or after `max_iter` iterations, or
    when the bound is not finite (NaN or -inf cannot recover). This equals sklearn's
    `GaussianMixture(weights_init, means_init, precisions_init, max_iter=max_iter, tol=tol)`;
    tol=0 runs exactly max_iter iterations.

    Under `jax.vmap` (over inits, sizes or seeds) the loop runs until every fit in the batch
    has stopped, and a stopped fit is frozen: each fit returns what it would return alone.

    Components with weight 0 are inactive and stay so (weight 0; their mean and covariance are
    whatever the M-step makes of zero responsibility, so pass a valid covariance for them).

    Args:
      points: [P, F]; rows where mask is False are ignored (they may hold NaN).
      mask: [P] bool.
      weights: [K]; means: [K, F]; covariances: [K, F, F] (the initial mixture).
      max_iter: the most EM iterations (int, may be traced).
      reg_covar: added to every covariance diagonal in each M-step.
      tol: convergence threshold on the change of the mean log-likelihood per valid point.
    Returns:
      weights [K], means [K, F], covariances [K, F, F], total log-likelihood [] of the
      returned parameters over the valid points, and the number of iterations run [] (int32).
    """
    groups = jnp.zeros(weights.shape, jnp.int32)
    *params, ll, n_iter = em_packed(
        points, mask, weights, means, covariances, groups, 1, max_iter, reg_covar, tol
    )
    return (*params, ll[0], n_iter[0])


@struct.dataclass
class _EMCarry:
    """The loop state of one packed EM (`em_packed`): G mixtures on K components."""

    params: tuple  # weights [K], means [K, F], covariances [K, F, F]
    bound: jax.Array  # [G] mean log-likelihood per valid point, before the last M-step
    n_iter: jax.Array  # [G] int32
    done: jax.Array  # [G] bool


@struct.dataclass
class _EMProblem:
    """What one packed EM runs on: the points and which components form which mixture."""

    x: jax.Array  # [P, F], masked rows zero
    mask: jax.Array  # [P] bool
    active: jax.Array  # [K] bool
    groups: jax.Array  # [K] int32 in [0, num_groups)
    member: jax.Array  # [G, K] bool: component k is an active one of mixture g
    num_valid: jax.Array  # [] float, at least 1: the likelihood bound is per valid point
    num_groups: int = struct.field(pytree_node=False)

    @classmethod
    def of(cls, points, mask, weights, groups, num_groups: int) -> _EMProblem:
        mask = mask.astype(bool)
        active = weights > 0
        member = (groups[None, :] == jnp.arange(num_groups)[:, None]) & active[None, :]
        x = jnp.where(mask[:, None], points, 0.0)
        num_valid = jnp.maximum(jnp.sum(mask), 1).astype(x.dtype)
        return cls(x, mask, active, groups, member, num_valid, num_groups)

    def per_group(self, values, reduce, fill):
        """[K, P] -> [G, P], reduced over each mixture's components."""
        if self.num_groups == 1:
            return reduce(values, axis=0)[None]
        return jnp.stack(
            [
                reduce(jnp.where(self.member[g][:, None], values, fill), axis=0)
                for g in range(self.num_groups)
            ]
        )

    def spread(self, values):
        """[G, ...] -> [K, ...], each component's mixture's row."""
        if self.num_groups == 1:
            return values[0][None]
        # Selects, not `values[groups]`: the groups differ between packed slots, and the
        # gather they would batch into is slow on XLA's CPU backend.
        out = jnp.broadcast_to(values[0], (self.groups.shape[0],) + values.shape[1:])
        for g in range(1, self.num_groups):
            out = jnp.where(
                (self.groups == g).reshape(-1, *[1] * (values.ndim - 1)), values[g], out
            )
        return out

    def e_step(self, params):
        """Responsibilities [K, P] (zero on masked points) and the total log-likelihood [G]."""
        log_joint = _log_joint(self.x, *params, self.active)  # [K, P], -inf when inactive
        top = self.per_group(log_joint, jnp.max, -jnp.inf)  # [G, P]
        if self.num_groups > 1:
            top = jnp.where(jnp.isfinite(top), top, 0.0)  # a mixture without components
        # One exp serves both the log-likelihood and the responsibilities.
        joint = jnp.exp(log_joint - self.spread(top))
        total = self.per_group(joint, jnp.sum, 0.0)  # [G, P]
        log_norm = top + jnp.log(total)
        ll = jnp.sum(jnp.where(self.mask[None, :], log_norm, 0.0), axis=1)
        return joint * (self.mask[None, :] / self.spread(total)), ll

    def start(self, weights, means, covariances) -> _EMCarry:
        g = self.num_groups
        return _EMCarry(
            (weights, means, covariances),
            jnp.full((g,), -jnp.inf, self.x.dtype),
            jnp.zeros((g,), jnp.int32),
            ~jnp.any(self.member, axis=1),
        )

    def running(self, carry: _EMCarry, max_iter) -> jax.Array:
        return jnp.any((carry.n_iter < max_iter) & ~carry.done)

    def step(self, carry: _EMCarry, max_iter, reg_covar, tol) -> _EMCarry:
        """One E then M step of every mixture still running; a stopped one is unchanged."""
        resp, ll = self.e_step(carry.params)
        bound = ll / self.num_valid
        # sklearn's test (on the bound before this M-step); the first change is +inf.
        now_done = (jnp.abs(bound - carry.bound) < tol) | ~jnp.isfinite(bound)
        grouped = self.num_groups > 1
        new = _m_step(self.x, resp, self.active, reg_covar, self.groups if grouped else None)
        if not grouped:
            # The freeze comes from the while_loop (vmap's batching rule, or its exit).
            return _EMCarry(new, bound, carry.n_iter + 1, now_done)
        go = (carry.n_iter < max_iter) & ~carry.done  # [G]
        go_k = self.spread(go)
        new = tuple(
            jnp.where(go_k.reshape(-1, *[1] * (a.ndim - 1)), a, b)
            for a, b in zip(new, carry.params, strict=True)
        )
        return _EMCarry(
            new,
            jnp.where(go, bound, carry.bound),
            carry.n_iter + go,
            jnp.where(go, now_done, carry.done),
        )


def em_packed(
    points, mask, weights, means, covariances, groups, num_groups: int, max_iter, reg_covar, tol
):
    """`em_from_init` for `num_groups` independent mixtures sharing one component axis.

    Component k belongs to mixture `groups[k]`: responsibilities, weights, likelihood and
    convergence are per mixture, and a mixture that has stopped is frozen while the others
    run on, so each returns what `em_from_init` would on its components alone. Packing a
    k-component fit with a (k_min + k_max - k)-component one pads both to k_min + k_max
    components instead of each to k_max (`fit_gmms`).

    Args:
      as `em_from_init`, plus groups: [K] int32 in [0, num_groups); num_groups: static.
      A mixture with no active component is returned as is.
    Returns:
      weights [K], means [K, F], covariances [K, F, F], log-likelihood [G], iterations [G].
    """
    problem = _EMProblem.of(points, mask, weights, groups, num_groups)
    # A per-fit loop: vmap's batching rule for while_loop runs it until no element is
    # `running` and keeps each stopped element's carry unchanged (the freeze).
    carry = jax.lax.while_loop(
        lambda c: problem.running(c, max_iter),
        lambda c: problem.step(c, max_iter, reg_covar, tol),
        problem.start(weights, means, covariances),
    )
    # Likelihood of the returned parameters, so the criteria score exactly what is returned.
    _, ll = problem.e_step(carry.params)
    return (*carry.params, ll, carry.n_iter)


def fit_slots(k_min: int, k_max: int) -> list[tuple[int, int]]:
    """Component counts fitted together: (k, k_min + k_max - k) pairs, and the middle k of an
    odd range alone as (k, 0). Each pair fills k_min + k_max components; padding every k to
    k_max instead wastes about a third of EM's work (k in 2..9: 72 components vs 44)."""
    ks = list(range(k_min, k_max + 1))
    return [(ks[i], ks[-1 - i] if i < len(ks) - 1 - i else 0) for i in range((len(ks) + 1) // 2)]


def _fit_slot(
    key_a,
    key_b,
    k_a,
    k_b,
    x,
    mask,
    data_cov,
    width: int,
    k_max: int,
    reg_covar,
):
    """The start of EM for a k_a-component and a k_b-component mixture (k_b may be 0)
    packed in `width` components, each from its own init: k-means++ means, data covariance,
    uniform weights.

    Args:
      key_a, key_b: PRNG keys; k_a, k_b: scalar ints (traced); x: [P, F]; mask: [P] bool;
      data_cov: [F, F].
    Returns:
      the packed EM problem (components [0, k_a) are the first mixture, [k_a, k_a + k_b)
      the second) and its first loop state.
    """
    index = jnp.arange(width)
    in_a = index < k_a
    in_b = (index >= k_a) & (index < k_a + k_b)
    seeds_a = _kmeans_pp_means(key_a, x, mask, k_max)
    seeds_b = _kmeans_pp_means(key_b, x, mask, k_max)
    means = jnp.where(
        in_a[:, None],
        seeds_a[jnp.minimum(index, k_max - 1)],
        jnp.where(in_b[:, None], seeds_b[jnp.clip(index - k_a, 0, k_max - 1)], 0.0),
    )
    eye = jnp.eye(x.shape[-1], dtype=x.dtype)
    active = in_a | in_b
    groups = in_b.astype(jnp.int32)
    covs = jnp.where(active[:, None, None], data_cov[None], reg_covar * eye[None])
    weights = jnp.where(in_a, 1.0 / k_a, jnp.where(in_b, 1.0 / jnp.maximum(k_b, 1), 0.0))
    problem = _EMProblem.of(x, mask, weights, groups, 2)
    return problem, problem.start(weights, means, covs)


def _slot_counts(num_slots: int) -> list[int]:
    """The slots EM runs on, phase by phase: all, then about half as many each time, down to
    2 (a batch of 1 made XLA's CPU fusions of the loop body several times slower)."""
    counts = [num_slots]
    while counts[-1] > 2:
        counts.append(max(2, (counts[-1] + 1) // 2))
    return counts


def _run_slots(
    problems: _EMProblem, carry: _EMCarry, max_iter, reg_covar, tol, phased: bool
) -> _EMCarry:
    """EM on every slot (axis 0 of `problems` and `carry`) until each has stopped.

    One loop over all slots runs until its slowest slot has stopped, and EM's iteration
    counts vary several-fold between fits (under a vmap over seeds, the slowest of all
    seeds sets the count). So the loop runs in phases (`_slot_counts`): once no more slots
    run than the next phase holds, those are gathered and run on alone, and the stopped
    ones are not computed again. Each slot's steps are the same either way (a stopped
    mixture is frozen), up to float rounding in another batch shape.
    """
    step = jax.vmap(lambda problem, c: problem.step(c, max_iter, reg_covar, tol))
    running = jax.vmap(lambda problem, c: problem.running(c, max_iter))
    counts = _slot_counts(carry.n_iter.shape[0]) if phased else [carry.n_iter.shape[0]]
    if len(counts) == 1:
        return jax.lax.while_loop(
            lambda c: jnp.any(running(problems, c)), lambda c: step(problems, c), carry
        )
    carry = jax.lax.while_loop(
        lambda c: jnp.sum(running(problems, c)) > counts[1],
        lambda c: step(problems, c),
        carry,
    )
    # The running slots first, then stopped ones, which stay frozen.
    chosen = jnp.argsort(~running(problems, carry), stable=True)[: counts[1]]
    rest = _run_slots(
        jax.tree.map(lambda a: a[chosen], problems),
        jax.tree.map(lambda a: a[chosen], carry),
        max_iter,
        reg_covar,
        tol,
        phased,
    )
    return jax.tree.map(lambda a, b: a.at[chosen].set(b), carry, rest)


@functools.partial(jax.jit, static_argnames=("k_min", "k_max", "num_inits", "phased"))
def fit_gmms(
    key: jax.Array,
    points: jax.Array,
    mask: jax.Array,
    k_min: int,
    k_max: int,
    num_inits: int,
    max_iter: int,
    reg_covar: float = 1e-6,
    tol: float = DEFAULT_TOL,
    phased: bool = False,
) -> GMMFits:
    """Full-covariance mixtures for every k in [k_min, k_max] and every init, batched.

    Args:
      key: PRNG key.
      points: [P, F]; rows where mask is False are ignored (they may hold NaN).
      mask: [P] bool, True for valid points.
      k_min, k_max: component-count range (static), 1 <= k_min <= k_max.
      num_inits: random inits per k (static).
      max_iter: the most EM iterations per fit, as sklearn's `max_iter`.
      reg_covar: added to every covariance diagonal, as sklearn's `reg_covar`.
      tol: EM stops when the mean log-likelihood per valid point changes by less (sklearn's
        `tol`); 0 runs max_iter iterations. See `em_from_init`.
      phased: static; run EM in phases, the slots still running gathered into smaller
        loops (`_run_slots`). Worth it where fits' iteration counts spread widely
        (Covar-GMM); it costs compile time, and where fits stop together, run time too.
    Returns:
      GMMFits with leading axes [K_count, I], K_count = k_max - k_min + 1, I = num_inits.
    """
    if not 1 <= k_min <= k_max:
        raise ValueError(f"need 1 <= k_min <= k_max, got k_min={k_min}, k_max={k_max}")
    mask = mask.astype(bool)
    x = jnp.where(mask[:, None], points, 0.0)
    num_valid = jnp.sum(mask)
    n = jnp.maximum(num_valid, 1).astype(x.dtype)
    mean = jnp.sum(x, axis=0) / n
    centred = jnp.where(mask[:, None], x - mean, 0.0)
    num_features = x.shape[-1]
    data_cov = centred.T @ centred / n + reg_covar * jnp.eye(num_features, dtype=x.dtype)

    ks = jnp.arange(k_min, k_max + 1)
    keys = jax.random.split(key, (k_max - k_min + 1, num_inits))
    slots = fit_slots(k_min, k_max)
    width = max(k_a + k_b for k_a, k_b in slots)
    fit = functools.partial(
        _fit_slot,
        x=x,
        mask=mask,
        data_cov=data_cov,
        width=width,
        k_max=k_max,
        reg_covar=reg_covar,
    )
    # One vmap over the flattened (slot, init) grid, so one while_loop for the whole batch: it
    # runs until every fit has stopped, stopped fits frozen (`em_packed`). Flat, not nested: a
    # size-1 init axis made XLA's CPU fusions of the loop body several times slower.
    k_a = np.repeat([a for a, _ in slots], num_inits)
    k_b = np.repeat([b for _, b in slots], num_inits)
    inits = np.tile(np.arange(num_inits), len(slots))
    # The second mixture of a (k, 0) slot is empty: any key will do.
    key_b = keys[np.maximum(k_b, k_min) - k_min, inits]
    problems, carry = jax.vmap(fit)(
        keys[k_a - k_min, inits], key_b, jnp.asarray(k_a), jnp.asarray(k_b)
    )
    carry = _run_slots(problems, carry, max_iter, reg_covar, tol, phased)
    _, slot_ll = jax.vmap(lambda problem, params: problem.e_step(params))(problems, carry.params)
    (w, m, c), slot_iter = carry.params, carry.n_iter

    # Unpack to [K_count, I, k_max, ...]: fit (k, init) is mixture `group` of slot row `row`,
    # its components from `offset` on; components >= k inactive (weight 0, mean 0, reg * I).
    row, group, offset = np.zeros((3, k_max - k_min + 1, num_inits), np.int32)
    for s_index, (a, b) in enumerate(slots):
        for i in range(num_inits):
            flat = s_index * num_inits + i
            row[a - k_min, i], group[a - k_min, i], offset[a - k_min, i] = flat, 0, 0
            if b:
                row[b - k_min, i], group[b - k_min, i], offset[b - k_min, i] = flat, 1, a
    component = offset[..., None] + np.arange(k_max)  # [K_count, I, k_max]
    used = np.arange(k_max) < np.arange(k_min, k_max + 1)[:, None, None]
    component = np.where(used, component, 0)
    rows = row[..., None]
    eye = jnp.eye(num_features, dtype=x.dtype)
    weights = jnp.where(used, w[rows, component], 0.0)
    means = jnp.where(used[..., None], m[rows, component], 0.0)
    covs = jnp.where(used[..., None, None], c[rows, component], reg_covar * eye)
    ll = slot_ll[row, group]
    n_iter = slot_iter[row, group]

    n_params = n_parameters(ks, num_features).astype(x.dtype)[:, None]  # [K_count, 1]
    aic = 2 * n_params - 2 * ll
    bic = n_params * jnp.log(n) - 2 * ll
    denom = n - n_params - 1
    # Too few points for the model: AICc is undefined, rank it last.
    aicc = jnp.where(
        denom > 0, aic + 2 * n_params * (n_params + 1) / jnp.where(denom > 0, denom, 1.0), jnp.inf
    )
    aicc = jnp.broadcast_to(aicc, ll.shape)
    return GMMFits(
        weights=weights,
        means=means,
        covariances=covs,
        log_likelihood=ll,
        aic=aic,
        bic=bic,
        aicc=aicc,
        n_iter=n_iter,
    )


@functools.partial(jax.jit, static_argnames=("criterion",))
def select_best(fits: GMMFits, criterion: str) -> GMM:
    """The fit with the lowest criterion over all (k, init).

    Args:
      fits: GMMFits with leading axes [K_count, I].
      criterion: "aic", "bic" or "aicc" (static).
    Returns:
      GMM: weights [k_max], means [k_max, F], covariances [k_max, F, F].
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    scores = {"aic": fits.aic, "bic": fits.bic, "aicc": fits.aicc}[criterion]
    scores = jnp.where(jnp.isnan(scores), jnp.inf, scores).reshape(-1)
    best = jnp.argmin(scores)

    def pick(a):
        return a.reshape(-1, *a.shape[2:])[best]

    return GMM(
        weights=pick(fits.weights), means=pick(fits.means), covariances=pick(fits.covariances)
    )
