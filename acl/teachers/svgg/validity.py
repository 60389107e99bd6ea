"""SVGG's validity model p_valid(g): a masked Gaussian KDE over the visited goals, turned
into a soft support by a threshold on the visited goals' leave-one-out log density (the
package docstring says why it stands in for the authors' one-class SVM)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from acl.core.ring import Ring


def kde_log_density(goals: jax.Array, points: jax.Array, mask: jax.Array, bandwidth) -> jax.Array:
    """log of the Gaussian KDE over points [C, G] where mask [C], at goals [..., G] ->
    [...]. Bandwidth h: isotropic standard deviation."""
    d2 = jnp.sum((goals[..., None, :] - points) ** 2, axis=-1)  # [..., C]
    return _log_kde(d2, mask, jnp.maximum(mask.sum(), 1), points.shape[-1], bandwidth)


def kde_loo_log_density(points: jax.Array, mask: jax.Array, bandwidth) -> jax.Array:
    """Leave-one-out log KDE at each of points [C, G] where mask [C] -> [C]: point i's
    density from the n - 1 others. Its own kernel, the largest term at an isolated point,
    would otherwise lift exactly the sparse frontier points above the threshold."""
    c, g = points.shape
    d2 = jnp.sum((points[:, None, :] - points[None, :, :]) ** 2, axis=-1)  # [i, j]
    others = mask[None, :] & ~jnp.eye(c, dtype=bool)
    return _log_kde(d2, others, jnp.maximum(mask.sum() - 1, 1), g, bandwidth)


def _log_kde(d2: jax.Array, mask: jax.Array, n, g: int, bandwidth) -> jax.Array:
    """log of (1 / n) sum over the masked kernels N(0, h^2 I_g) at squared distances d2
    [..., C] -> [...]."""
    logits = jnp.where(mask, -d2 / (2.0 * bandwidth**2), -1e30)
    return jax.nn.logsumexp(logits, axis=-1) - jnp.log(n) - _log_kernel_peak(g, bandwidth)


def _log_kernel_peak(g: int, bandwidth) -> jax.Array:
    """-log of a g-dimensional Gaussian kernel's peak density with std `bandwidth`."""
    return 0.5 * g * jnp.log(2.0 * jnp.pi * bandwidth**2)


def fit_validity(points: jax.Array, mask: jax.Array, quantile, bandwidth_scale, min_std):
    """(bandwidth, threshold) of the validity model on points [C, G] where mask [C]:
    Scott's rule bandwidth and the `quantile` of the points' leave-one-out log kde."""
    g = points.shape[-1]
    n = jnp.maximum(mask.sum(), 1).astype(jnp.float32)
    w = mask.astype(jnp.float32)[:, None]
    mean = jnp.sum(points * w, axis=0) / n
    var = jnp.sum(((points - mean) ** 2) * w, axis=0) / n
    sigma = jnp.maximum(jnp.sqrt(jnp.mean(var)), min_std)
    bandwidth = bandwidth_scale * sigma * n ** (-1.0 / (g + 4.0))
    logp = kde_loo_log_density(points, mask, bandwidth)
    ordered = jnp.sort(jnp.where(mask, logp, jnp.inf))
    index = jnp.clip(jnp.floor(quantile * (n - 1)).astype(jnp.int32), 0, points.shape[0] - 1)
    # One point has no others: its support is the KDE around it, whose log density at
    # the point itself is the kernel's peak.
    threshold = jnp.where(mask.sum() > 1, ordered[index], -_log_kernel_peak(g, bandwidth))
    threshold = jnp.where(mask.any(), threshold, 0.0)
    return bandwidth, threshold


def log_valid(goals: jax.Array, visited: Ring, bandwidth, threshold) -> jax.Array:
    """log p_valid(g) = log sigmoid(log kde(g) - threshold) at goals [..., G] -> [...],
    the KDE over the visited goals [C, G] of the ring; 0 before any visited goal."""
    log_kde = kde_log_density(goals, visited.data, visited.valid, bandwidth)
    value = jax.nn.log_sigmoid(log_kde - threshold)
    return jnp.where(visited.count > 0, value, 0.0)
