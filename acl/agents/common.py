"""Pieces every agent shares: GAE, minibatching, observation norm, the `ValueSpec` of an
actor-critic's extras (the transition batch, `Transition`, and `ValueSpec` itself are
acl.core.types')."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from acl.core.types import ValueSpec


def value_spec(hyper: Any, n: int) -> ValueSpec:
    """The `ValueSpec` [n] of hyperparameters with gamma, gae_lambda and reward_scale."""
    return ValueSpec(
        *(
            jnp.broadcast_to(jnp.asarray(x, jnp.float32), (n,))
            for x in (hyper.gamma, hyper.gae_lambda, hyper.reward_scale)
        )
    )


def gae(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    done: jax.Array,
    gamma: jax.Array,
    lam: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimation over a [T, N] rollout.

    `next_values[t]` is V(next_obs[t]), the state after step t before any reset, so a
    time-limit truncation bootstraps from the true final state and a termination does not.
    The recursion is cut at every episode end.

    Returns (advantages [T, N], value targets [T, N]).
    """
    not_terminated = 1.0 - terminated.astype(jnp.float32)
    not_done = 1.0 - done.astype(jnp.float32)
    deltas = rewards + gamma * next_values * not_terminated - values

    def backward(next_adv, xs):
        delta, cont = xs
        adv = delta + gamma * lam * cont * next_adv
        return adv, adv

    _, advantages = jax.lax.scan(
        backward, jnp.zeros_like(deltas[0]), (deltas, not_done), reverse=True
    )
    return advantages, advantages + values


def shuffled_minibatches(key: jax.Array, data: Any, num_minibatches: int) -> Any:
    """Shuffle along the leading axis and split it: [B, ...] -> [M, B // M, ...].

    For recurrent agents pass whole sequences with the sequence index leading, so each
    minibatch holds complete sequences.
    """
    batch_size = jax.tree.leaves(data)[0].shape[0]
    if batch_size % num_minibatches:
        raise ValueError(f"batch of {batch_size} does not split into {num_minibatches} minibatches")
    perm = jax.random.permutation(key, batch_size)
    return jax.tree.map(lambda x: x[perm].reshape((num_minibatches, -1) + x.shape[1:]), data)


def minibatch_epochs(
    key: jax.Array,
    train_state: Any,
    data: Any,
    num_epochs: int,
    num_minibatches: int,
    step_fn: Callable[[Any, Any], tuple[Any, Any]],
) -> tuple[Any, Any]:
    """Run `step_fn(train_state, minibatch)` over shuffled minibatches for several epochs.

    Returns the final train state and the metrics of every step, shape [E, M, ...].
    """

    def epoch(state, epoch_key):
        batches = shuffled_minibatches(epoch_key, data, num_minibatches)
        return jax.lax.scan(step_fn, state, batches)

    return jax.lax.scan(epoch, train_state, jax.random.split(key, num_epochs))


@struct.dataclass
class RunningMeanStd:
    """Running mean and variance of observations (parallel Welford update)."""

    mean: jax.Array
    var: jax.Array
    count: jax.Array

    @classmethod
    def create(cls, shape: tuple[int, ...]) -> RunningMeanStd:
        return cls(jnp.zeros(shape), jnp.ones(shape), jnp.asarray(1e-4))

    def update(self, x: jax.Array) -> RunningMeanStd:
        """x has shape [B, *shape]."""
        batch_mean, batch_var, batch_count = x.mean(0), x.var(0), x.shape[0]
        delta = batch_mean - self.mean
        total = self.count + batch_count
        mean = self.mean + delta * batch_count / total
        m2 = (
            self.var * self.count
            + batch_var * batch_count
            + delta**2 * self.count * batch_count / total
        )
        return RunningMeanStd(mean, m2 / total, total)

    def normalize(self, x: jax.Array, clip: float = 10.0) -> jax.Array:
        return jnp.clip((x - self.mean) / jnp.sqrt(self.var + 1e-8), -clip, clip)
