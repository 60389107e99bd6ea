"""The records every layer above shares: the rollout's transitions (and what an agent's
per-step extras in them may declare), the per-episode feedback a teacher reads, and the
per-instance decisions a teacher hands the loop.

Shapes: a rollout `Transition` [T, N] (time, env instance); `Feedback` [K] (one record per
episode slot); `SampleInfo` [n] (one per task drawn).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class Transition:
    """A rollout batch; every leaf has leading axes [T, N] (time, env instance)."""

    obs: jax.Array
    """Observation the action was chosen from."""
    action: jax.Array
    """Action as sampled by the policy (before clipping to the env's bounds)."""
    reward: jax.Array
    terminated: jax.Array
    """A real end: no bootstrapping past this step."""
    done: jax.Array
    """Episode ended here (terminated or truncated); the next obs is a reset."""
    next_obs: jax.Array
    """Observation after the step, before any reset: bootstraps truncated episodes."""
    loss_mask: jax.Array
    """1.0 where the learner may learn from this step (robust PLR: 0)."""
    extras: Any
    """Agent-specific per-step outputs of `act` (e.g. log-prob and value); those with value
    estimates declare them by subclassing `ValueEstimates`."""


@struct.dataclass
class ValueSpec:
    """How an actor-critic agent turns rewards into value targets, as traced leaves: its
    `act` records them in its extras ([N], so [T, N] in a batch) so that a teacher scoring
    levels from the rollout (PLR's GAE) uses the student's own numbers, and a sweep over
    the agent's gamma moves the teacher too."""

    gamma: jax.Array
    gae_lambda: jax.Array
    reward_scale: jax.Array
    """Rewards are multiplied by this before GAE."""


class ValueEstimates:
    """What an agent's per-step extras declare when they carry the critic's value
    estimates: the extras class of an actor-critic agent (PPO's, recurrent PPO's)
    subclasses it and has these two fields. A teacher that scores episodes by the
    student's values (PLR's level scores, SPDL's V(s0)) checks
    `isinstance(rollout.extras, ValueEstimates)`, so extras without values (DQN's, a
    guided actor's) are told apart by their declared type, never by probing them."""

    value: jax.Array
    """[N] per step ([T, N] in a batch): the critic's value of the observation."""
    value_spec: ValueSpec | None
    """The agent's gamma, GAE lambda and reward scale ([N] per step, [T, N] in a batch);
    None in hand-built batches."""


@struct.dataclass
class Feedback:
    """One record per completed episode, in fixed-size arrays; `mask` marks real records.

    Shapes: task [K, D'], all others [K].
    """

    task: jax.Array
    """The task the episode actually ran on, as the teacher handed it out."""
    episode_return: jax.Array
    """Undiscounted return of the episode."""
    success: jax.Array
    """Whether the return beat the env's success threshold."""
    length: jax.Array
    """Episode length in env steps."""
    mask: jax.Array
    """True where the record is a completed episode."""
    handed_out: jax.Array | None = None
    """[] int32 with a task pool: how many of the sampled tasks (the first ones) resets
    took; the rest were never played. None without a pool, where `tasks` holds one task
    per slot and the records say which ran."""

    @property
    def count(self) -> jax.Array:
        return self.mask.sum()


@struct.dataclass
class EpisodeReturns:
    """Per-level episode returns in fixed-size arrays. Shapes [K, N] (K episode slots,
    N levels)."""

    returns: jax.Array
    """Undiscounted return of the episode in slot k on level n (garbage where masked)."""
    mask: jax.Array
    """bool: True where slot k holds a completed episode."""


def episode_returns(reward: jax.Array, done: jax.Array) -> EpisodeReturns:
    """Completed-episode returns of a batch-mode rollout: reward, done [T, N] ->
    EpisodeReturns [T, N], slot t holding the episode that ended at step t.

    Every instance's first episode starts at step 0 (batch mode)."""
    done = done.astype(bool)

    def step(running, xs):
        r, d = xs
        total = running + r
        return jnp.where(d, 0.0, total), total

    _, totals = jax.lax.scan(step, jnp.zeros(reward.shape[1:], jnp.float32), (reward, done))
    return EpisodeReturns(returns=totals, mask=done)


def compact_feedback(feedback: Feedback, size: int) -> tuple[Feedback, jax.Array]:
    """The valid records first, in their original order, cut to `size` records.

    Teachers whose update costs grow with the record count (nearest neighbours, windows)
    then see `size` records instead of one per (step, instance) slot.
    Returns (feedback with K = size, number of valid records that did not fit).
    """
    order = jnp.argsort(~feedback.mask, stable=True)[:size]
    per_record = feedback.replace(handed_out=None)
    compact = jax.tree.map(lambda x: x[order], per_record).replace(handed_out=feedback.handed_out)
    return compact, jnp.maximum(feedback.count - size, 0).astype(jnp.int32)


@struct.dataclass
class SampleInfo:
    """Per-instance decisions the loop must honour. Shapes [n]."""

    train_on: jax.Array
    """False: the student must not learn from this instance's episodes (robust PLR)."""


def default_info(n: int) -> SampleInfo:
    return SampleInfo(train_on=jnp.ones((n,), bool))
