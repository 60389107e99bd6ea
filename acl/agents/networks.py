"""Actor-critic MLPs with orthogonal initialisation (PPO-style)."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}


def _orthogonal(scale: float):
    """flax's orthogonal init, run one key at a time under vmap.

    jaxlib 0.10.2's CPU batched QR (LAPACK geqrf through ParallelBatchMap) can wait
    forever on its thread pool when a vmap over seeds batches the init; unbatched QRs do
    not, and give the same values."""
    base = nn.initializers.orthogonal(scale)

    def init(key, shape, dtype=jnp.float32):
        return jax.custom_batching.sequential_vmap(lambda k: base(k, shape, dtype))(key)

    return init


def dense(features: int, scale: float) -> nn.Dense:
    return nn.Dense(features, kernel_init=_orthogonal(scale), bias_init=nn.initializers.zeros)


class MLP(nn.Module):
    """Hidden layers of `hidden_sizes`, then a linear head of `out_size` scaled by `out_scale`."""

    hidden_sizes: Sequence[int]
    out_size: int
    out_scale: float
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            x = act(dense(size, np.sqrt(2))(x))
        return dense(self.out_size, self.out_scale)(x)


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs.

    Discrete: returns (logits [..., A], value [...]).
    Continuous: returns (mean [..., A], value [...]); the log std is a free parameter [A].
    """

    action_dim: int
    discrete: bool
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"

    @nn.compact
    def __call__(self, obs: jax.Array):
        actor_out = MLP(self.hidden_sizes, self.action_dim, 0.01, self.activation, name="actor")(
            obs
        )
        value = MLP(self.hidden_sizes, 1, 1.0, self.activation, name="critic")(obs)[..., 0]
        if self.discrete:
            return actor_out, value, None
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_dim,))
        return actor_out, value, jnp.broadcast_to(log_std, actor_out.shape)


def categorical_log_prob(logits: jax.Array, action: jax.Array) -> jax.Array:
    """log pi(a) for logits [..., A] and integer actions [...]."""
    log_p = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(log_p, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def categorical_entropy(logits: jax.Array) -> jax.Array:
    log_p = jax.nn.log_softmax(logits)
    return -(jnp.exp(log_p) * log_p).sum(-1)


def gaussian_log_prob(mean: jax.Array, log_std: jax.Array, action: jax.Array) -> jax.Array:
    """Diagonal Gaussian log density, summed over the last axis."""
    z = (action - mean) * jnp.exp(-log_std)
    return (-0.5 * z**2 - log_std - 0.5 * jnp.log(2 * jnp.pi)).sum(-1)


def gaussian_entropy(log_std: jax.Array) -> jax.Array:
    return (log_std + 0.5 * jnp.log(2 * jnp.pi * jnp.e)).sum(-1)
