"""SVGG's success predictor D_phi(g) in (0, 1): an MLP's logit, its training by binary
cross-entropy on buffered (goal, success) records, and the Beta density over D that
makes intermediate success the particles' target."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from acl.teachers.svgg.particles import adam


class SuccessPredictor(nn.Module):
    """D_phi's logit: ReLU hidden layers, one linear output (flax's default init)."""

    hidden: tuple[int, ...]

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for width in self.hidden:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(1)(x)[..., 0]


def log_beta_pdf(d_logit: jax.Array, alpha, beta) -> jax.Array:
    """log Beta(D; alpha, beta) with D = sigmoid(d_logit), computed stably from the logit."""
    log_norm = (
        jax.scipy.special.gammaln(alpha)
        + jax.scipy.special.gammaln(beta)
        - jax.scipy.special.gammaln(alpha + beta)
    )
    return (
        (alpha - 1.0) * jax.nn.log_sigmoid(d_logit)
        + (beta - 1.0) * jax.nn.log_sigmoid(-d_logit)
        - log_norm
    )


def train_predictor(
    success_logit: Callable[[Any, jax.Array], jax.Array],
    predictor: Any,
    opt_state: Any,
    goals: jax.Array,
    labels: jax.Array,
    count: jax.Array,
    key: jax.Array,
    steps: int,
    batch: int,
    lr,
) -> tuple[Any, Any]:
    """`steps` Adam steps (step size `lr`) of binary cross-entropy on minibatches of
    `batch` records drawn uniformly from the first `count` of goals [C, G] and their
    labels [C] (1.0: a success); `success_logit(predictor, goals [..., G]) -> [...]`.
    With no record yet the network and its Adam moments are kept as they are.
    Returns (predictor, opt_state)."""
    index = jax.random.randint(key, (steps, batch), 0, jnp.maximum(count, 1))
    weight = (count > 0).astype(jnp.float32)

    def loss_fn(params, goals, labels):
        logits = success_logit(params, goals)
        return weight * jnp.mean(optax.sigmoid_binary_cross_entropy(logits, labels))

    def one(carry, idx):
        params, opt = carry
        grads = jax.grad(loss_fn)(params, goals[idx], labels[idx])
        step, opt = adam.update(grads, opt)
        params = jax.tree.map(lambda w, s: w - lr * s, params, step)
        return (params, opt), None

    (trained, opt), _ = jax.lax.scan(one, (predictor, opt_state), index)
    # Nothing to learn from yet: keep the initial network (and its Adam moments).
    keep = count > 0
    trained = jax.tree.map(lambda a, b: jnp.where(keep, a, b), trained, predictor)
    opt = jax.tree.map(lambda a, b: jnp.where(keep, a, b), opt, opt_state)
    return trained, opt
