"""Gaussian mixtures fitted by EM in pure JAX, for the ALP-GMM teacher (Portelas et al. 2019).

`fit_gmms` fits every number of components k in [k_min, k_max] and every random init in one
batched, fixed-shape computation: each fit is padded to k_max components, and the components
>= k of a k-component fit are inactive (weight exactly 0, mean 0, covariance reg_covar * I).
`select_best` then picks the fit with the lowest AIC, BIC or AICc.

Init (per fit): k-means++ (D^2) seeding over the valid points gives the means, all components
start with the shared covariance of the valid data and uniform weights. This is sklearn's
"k-means++" init without the Lloyd refinement; EM does the refinement, and several inits per k
guard against a poor seed.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from flax import struct

CRITERIA = ("aic", "bic", "aicc")


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


_UNROLL_MAX_FEATURES = 8


def cholesky_with_inverse(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Lower Cholesky factor L of SPD matrices and its inverse L^-1.

    For small F (<= 8: a task plus its ALP or return) the factorisation is unrolled into
    elementwise ops over the batch: XLA's CPU backend runs a batched LAPACK call per tiny
    matrix, which made EM fits cost far more than their arithmetic.

    Args:
      a: [..., F, F] symmetric positive definite.
    Returns:
      L [..., F, F], L^-1 [..., F, F], both lower triangular.
    """
    f = a.shape[-1]
    if f > _UNROLL_MAX_FEATURES:
        chol = jnp.linalg.cholesky(a)
        eye = jnp.broadcast_to(jnp.eye(f, dtype=a.dtype), a.shape)
        return chol, jax.scipy.linalg.solve_triangular(chol, eye, lower=True)
    zero = jnp.zeros(a.shape[:-2], a.dtype)
    low = [[zero] * f for _ in range(f)]
    for i in range(f):
        for j in range(i + 1):
            partial = sum((low[i][k] * low[j][k] for k in range(j)), zero)
            if i == j:
                low[i][i] = jnp.sqrt(a[..., i, i] - partial)
            else:
                low[i][j] = (a[..., i, j] - partial) / low[j][j]
    inv = [[zero] * f for _ in range(f)]
    for i in range(f):
        inv[i][i] = 1.0 / low[i][i]
        for j in range(i):
            acc = sum((low[i][k] * inv[k][j] for k in range(j, i)), zero)
            inv[i][j] = -acc * inv[i][i]
    stack = lambda rows: jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)  # noqa: E731
    return stack(low), stack(inv)


def _component_log_pdf(x: jax.Array, means: jax.Array, covariances: jax.Array) -> jax.Array:
    """Gaussian log densities of each point under each component.

    Args:
      x: [N, F]
      means: [K, F]
      covariances: [K, F, F]
    Returns:
      [N, K]
    """
    num_features = x.shape[-1]
    chol, prec_chol = cholesky_with_inverse(covariances)  # [K, F, F] each; prec_chol = L^-1
    # sklearn's form: the Cholesky factor of the precision, L^-1 (an F x F triangular solve per
    # component), then one matmul for all points. Solving against the [F, N] residuals instead
    # is a batched triangular solve that XLA's CPU backend runs ~4x slower for small F. As in
    # sklearn, L^-1 x - L^-1 mu (not L^-1 (x - mu)): half the work, and the float32 rounding
    # (~1e-7 |x| / sigma) is negligible on normalised data.
    sol = (
        jnp.einsum("kfg,ng->knf", prec_chol, x)
        - jnp.einsum("kfg,kg->kf", prec_chol, means)[:, None, :]
    )
    maha = jnp.sum(sol**2, axis=-1)  # [K, N]
    log_det = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)  # [K] (half)
    log_pdf = -0.5 * (num_features * math.log(2.0 * math.pi) + maha) - log_det[:, None]
    return log_pdf.T


def _log_joint(x: jax.Array, weights: jax.Array, means, covariances, active) -> jax.Array:
    """log w_k + log N(x | mu_k, Sigma_k), -inf on inactive components.

    Args:
      x: [N, F]; weights: [K]; means: [K, F]; covariances: [K, F, F]; active: [K] bool.
    Returns:
      [N, K]
    """
    log_pdf = _component_log_pdf(x, means, covariances)
    # `where`, not arithmetic, so a NaN in an unused component cannot leak into the sum.
    safe_log_w = jnp.log(jnp.where(active, weights, 1.0))
    return jnp.where(active[None, :], log_pdf + safe_log_w[None, :], -jnp.inf)


def gmm_log_prob(gmm: GMM, x: jax.Array) -> jax.Array:
    """Log density of the mixture.

    Args:
      gmm: weights [K], means [K, F], covariances [K, F, F].
      x: [N, F]
    Returns:
      [N]
    """
    log_joint = _log_joint(x, gmm.weights, gmm.means, gmm.covariances, gmm.weights > 0)
    return jax.nn.logsumexp(log_joint, axis=-1)


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
    logits = jnp.log(jnp.where(probs > 0, probs, 1.0))
    logits = jnp.where(probs > 0, logits, -jnp.inf)
    comps = jax.random.categorical(comp_key, logits, shape=(n,))  # [n]
    chol, _ = cholesky_with_inverse(gmm.covariances)  # [K, F, F]
    z = jax.random.normal(noise_key, (n, gmm.means.shape[-1]), dtype=gmm.means.dtype)
    return gmm.means[comps] + jnp.einsum("nfg,ng->nf", chol[comps], z)


def _kmeans_pp_means(key: jax.Array, x: jax.Array, mask: jax.Array, k_max: int) -> jax.Array:
    """k-means++ (D^2) seeds drawn from the valid points.

    Args:
      key: PRNG key; x: [P, F] (masked rows already finite); mask: [P] bool; k_max: static.
    Returns:
      [k_max, F]
    """
    valid_logits = jnp.where(mask, 0.0, -jnp.inf)
    keys = jax.random.split(key, k_max)
    first = x[jax.random.categorical(keys[0], valid_logits)]
    centres = jnp.zeros((k_max, x.shape[-1]), x.dtype).at[0].set(first)
    d2 = jnp.sum((x - first) ** 2, axis=-1)

    def body(j, carry):
        centres, d2 = carry
        w = jnp.where(mask, d2, 0.0)
        # All valid points on the chosen centres (duplicates): fall back to uniform.
        logits = jnp.where(jnp.sum(w) > 0, jnp.log(w), valid_logits)
        c = x[jax.random.categorical(keys[j], logits)]
        d2 = jnp.minimum(d2, jnp.sum((x - c) ** 2, axis=-1))
        return centres.at[j].set(c), d2

    centres, _ = jax.lax.fori_loop(1, k_max, body, (centres, d2))
    return centres


def _m_step(x, mask, log_resp, active, reg_covar):
    """Weights, means and covariances from responsibilities.

    Args:
      x: [P, F]; mask: [P] bool; log_resp: [P, K]; active: [K] bool; reg_covar: scalar.
    Returns:
      weights [K], means [K, F], covariances [K, F, F]
    """
    resp = jnp.exp(log_resp) * mask[:, None] * active[None, :]  # [P, K]
    # Like sklearn: a tiny floor so an emptied component divides by > 0, not 0.
    nk = jnp.sum(resp, axis=0) + 10 * jnp.finfo(x.dtype).eps  # [K]
    weights = jnp.where(active, nk, 0.0)
    weights = weights / jnp.sum(weights)
    means = (resp.T @ x) / nk[:, None]  # [K, F]
    diff = x[:, None, :] - means[None, :, :]  # [P, K, F]
    # Centred outer products, not E[xx^T] - mu mu^T, which cancels badly in float32.
    cov = jnp.einsum("pk,pkf,pkg->kfg", resp, diff, diff) / nk[:, None, None]
    cov = cov + reg_covar * jnp.eye(x.shape[-1], dtype=x.dtype)
    return weights, means, cov


def em_from_init(
    points: jax.Array,
    mask: jax.Array,
    weights: jax.Array,
    means: jax.Array,
    covariances: jax.Array,
    num_iterations: int,
    reg_covar,
):
    """`num_iterations` EM steps (E then M, no early stop) from a given mixture.

    Components with weight 0 are inactive and stay so (weight 0; their mean and covariance are
    whatever the M-step makes of zero responsibility, so pass a valid covariance for them).
    This equals sklearn's `GaussianMixture(weights_init, means_init, precisions_init,
    max_iter=num_iterations, tol=0)`.

    Args:
      points: [P, F]; rows where mask is False are ignored (they may hold NaN).
      mask: [P] bool.
      weights: [K]; means: [K, F]; covariances: [K, F, F] (the initial mixture).
      num_iterations: number of EM iterations (static under jit).
      reg_covar: added to every covariance diagonal in each M-step.
    Returns:
      weights [K], means [K, F], covariances [K, F, F], total log-likelihood [] of the
      returned parameters over the valid points.
    """
    mask = mask.astype(bool)
    x = jnp.where(mask[:, None], points, 0.0)
    active = weights > 0

    def e_step(params):
        log_joint = _log_joint(x, *params, active)  # [P, K]
        log_norm = jax.nn.logsumexp(log_joint, axis=-1)  # [P]
        ll = jnp.sum(jnp.where(mask, log_norm, 0.0))
        return log_joint - log_norm[:, None], ll

    def step(params, _):
        log_resp, _ = e_step(params)
        return _m_step(x, mask, log_resp, active, reg_covar), None

    params, _ = jax.lax.scan(step, (weights, means, covariances), None, length=num_iterations)
    # Likelihood of the returned parameters, so the criteria score exactly what is returned.
    _, ll = e_step(params)
    return (*params, ll)


def _fit_one(key, k, x, mask, data_cov, k_max: int, num_iterations: int, reg_covar):
    """EM for one k and one init (k-means++ means, data covariance, uniform weights).

    Args:
      key: PRNG key; k: scalar int (traced); x: [P, F]; mask: [P] bool; data_cov: [F, F].
    Returns:
      weights [k_max], means [k_max, F], covariances [k_max, F, F], total log-likelihood []
    """
    active = jnp.arange(k_max) < k
    means = _kmeans_pp_means(key, x, mask, k_max)
    means = jnp.where(active[:, None], means, 0.0)
    eye = jnp.eye(x.shape[-1], dtype=x.dtype)
    covs = jnp.where(active[:, None, None], data_cov[None], reg_covar * eye[None])
    weights = jnp.where(active, 1.0, 0.0) / k
    return em_from_init(x, mask, weights, means, covs, num_iterations, reg_covar)


@functools.partial(jax.jit, static_argnames=("k_min", "k_max", "num_inits", "num_iterations"))
def fit_gmms(
    key: jax.Array,
    points: jax.Array,
    mask: jax.Array,
    k_min: int,
    k_max: int,
    num_inits: int,
    num_iterations: int,
    reg_covar: float = 1e-6,
) -> GMMFits:
    """Full-covariance mixtures for every k in [k_min, k_max] and every init, batched.

    Args:
      key: PRNG key.
      points: [P, F]; rows where mask is False are ignored (they may hold NaN).
      mask: [P] bool, True for valid points.
      k_min, k_max: component-count range (static), 1 <= k_min <= k_max.
      num_inits: random inits per k (static).
      num_iterations: EM iterations, fixed (static).
      reg_covar: added to every covariance diagonal, as sklearn's `reg_covar`.
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
    fit = functools.partial(
        _fit_one,
        x=x,
        mask=mask,
        data_cov=data_cov,
        k_max=k_max,
        num_iterations=num_iterations,
        reg_covar=reg_covar,
    )
    weights, means, covs, ll = jax.vmap(jax.vmap(fit, in_axes=(0, None)), in_axes=(0, 0))(keys, ks)

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
    scores = getattr(fits, criterion)
    scores = jnp.where(jnp.isnan(scores), jnp.inf, scores).reshape(-1)
    best = jnp.argmin(scores)

    def pick(a):
        return a.reshape(-1, *a.shape[2:])[best]

    return GMM(
        weights=pick(fits.weights), means=pick(fits.means), covariances=pick(fits.covariances)
    )
