"""SVGD (Liu & Wang 2016) for SVGG's goal particles: the RBF kernel with the median
heuristic, one Adam-driven step, and the steps in a box rescaled to [-1, 1]^G."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

adam = optax.scale_by_adam()
"""Adam's moment scaling, without a step size (the caller multiplies by its own): the
particles' and the success predictor's optimiser."""


def median_bandwidth(x: jax.Array) -> jax.Array:
    """The median heuristic of Liu & Wang (2016): h = med(|x_i - x_j|^2, i < j) / log(P + 1)
    for particles x [P, G]; floored at 1e-8."""
    p = x.shape[0]
    sq = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    rows, cols = np.triu_indices(p, k=1)
    med = jnp.median(sq[rows, cols]) if p > 1 else jnp.float32(1.0)
    return jnp.maximum(med / np.log(p + 1.0), 1e-8)


def svgd_direction(x: jax.Array, grad_logp: jax.Array) -> jax.Array:
    """SVGD's phi [P, G] for particles x [P, G] and grad log p at them [P, G]: RBF kernel
    k(x, y) = exp(-|x - y|^2 / h), h by the median heuristic (no gradient through h)."""
    p = x.shape[0]
    h = jax.lax.stop_gradient(median_bandwidth(x))
    diff = x[:, None, :] - x[None, :, :]  # [i, j, G] = x_i - x_j
    k = jnp.exp(-jnp.sum(diff**2, axis=-1) / h)  # symmetric
    drive = k @ grad_logp  # sum_j k(x_j, x_i) grad log p(x_j)
    # grad_{x_j} k(x_j, x_i) = 2 (x_i - x_j) / h * k: repulsion between particles.
    repulse = 2.0 / h * jnp.sum(k[:, :, None] * diff, axis=1)
    return (drive + repulse) / p


def svgd_step(x: jax.Array, opt_state, log_prob, lr, low=None, high=None):
    """One SVGD step with Adam: x [P, G] moves along phi (ascent), then clipped into
    [low, high] when given. log_prob maps [P, G] -> [P]. Returns (x, opt_state)."""
    grad = jax.grad(lambda z: jnp.sum(log_prob(z)))(x)
    grad = jnp.where(jnp.isfinite(grad), grad, 0.0)
    phi = svgd_direction(x, grad)
    step, opt_state = adam.update(phi, opt_state)
    x = x + lr * step
    if low is not None:
        x = jnp.clip(x, low, high)
    return x, opt_state


def to_unit_box(x: jax.Array, low: jax.Array, high: jax.Array) -> jax.Array:
    """Points [..., G] of the box [low, high] -> [-1, 1]^G."""
    return 2.0 * (x - low) / jnp.maximum(high - low, 1e-8) - 1.0


def svgd_in_box(x: jax.Array, opt_state, log_prob, lr, low: jax.Array, high: jax.Array, steps: int):
    """`steps` SVGD steps of particles x [P, G] of the box [low, high], taken in the box
    rescaled to [-1, 1]^G (so a step is the same share of the box in every env) and
    clipped into it after each; log_prob maps [P, G] box points -> [P]. Returns
    (x [P, G] in the box, opt_state)."""
    half = jnp.maximum(high - low, 1e-8) / 2.0

    def unit_log_prob(z):
        return log_prob(low + (z + 1.0) * half)

    def one(carry, _):
        z, opt = carry
        z, opt = svgd_step(z, opt, unit_log_prob, lr, -1.0, 1.0)
        return (z, opt), None

    z0 = to_unit_box(x, low, high)
    (z, opt_state), _ = jax.lax.scan(one, (z0, opt_state), None, length=steps)
    return jnp.clip(low + (z + 1.0) * half, low, high), opt_state
