"""A jitted, fixed-capacity, episode-indexed replay buffer, and per-instance staging.

The buffer holds whole episodes: every leaf of `EpisodeBuffer.data` has leading axes
[C, L, ...] (slot, time), and `length[c]` says how many steps slot c holds. Finished
episodes go into the next free slot; at capacity the oldest slot is overwritten (a
ring). Filled slots are always [0, count), so sampling needs no search.

Why not flashbax (installable, 0.1.3): its buffers index time steps or fixed-length
trajectories, not variable-length episodes, and HER's "future"/"final"/"episode"
strategies need each sampled transition's episode and its end. It also pulls in
tensorstore for a structure that takes ~60 lines here.

The shared rollout (`acl.loop.rollout.collect`) yields [T, N] Transition batches whose
episodes cross batch boundaries, so each instance keeps a `Staging` row holding the
episode in progress; `stage_rollout` appends a batch step by step and flushes an
instance's row to the buffer when its episode ends.

Observations are stored once per state: `EpisodeData.obs[t]` is the observation the
action at step t was chosen from and `obs[t + 1]` its next observation (within an
episode they are the same array), so obs has T_max + 1 rows.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from acl.core.types import Transition


@struct.dataclass
class EpisodeData:
    """One episode (or, with leading axes, many); L = T_max time steps."""

    obs: jax.Array
    """[T_max + 1, *obs_shape]: obs[t] the state of step t, obs[t + 1] its successor."""
    action: jax.Array
    """[T_max, *action_shape]."""
    reward: jax.Array
    """[T_max] float32."""
    terminated: jax.Array
    """[T_max] bool: a real end at this step (no bootstrapping)."""


@struct.dataclass
class EpisodeBuffer:
    """Ring buffer of episodes; `data` leaves are [C, ...] (C = capacity)."""

    data: Any
    length: jax.Array
    """[C] int32 steps held by each slot (0 for an empty slot)."""
    position: jax.Array
    """Slot the next episode goes to, int32 scalar."""
    count: jax.Array
    """Filled slots (<= C), int32 scalar; they are slots [0, count)."""
    inserted: jax.Array
    """Episodes inserted over the buffer's life, int32 scalar."""

    @property
    def capacity(self) -> int:
        return int(self.length.shape[-1])


def buffer_init(example: Any, capacity: int) -> EpisodeBuffer:
    """An empty buffer of `capacity` episodes shaped like `example` (one episode)."""
    data = jax.tree.map(lambda x: jnp.zeros((capacity,) + x.shape, x.dtype), example)
    zero = jnp.zeros((), jnp.int32)
    return EpisodeBuffer(
        data=data,
        length=jnp.zeros((capacity,), jnp.int32),
        position=zero,
        count=zero,
        inserted=zero,
    )


def buffer_insert(
    buffer: EpisodeBuffer, episodes: Any, lengths: jax.Array, valid: jax.Array
) -> EpisodeBuffer:
    """Insert the episodes [M, ...] where valid [M] is true, in order, into the ring.

    lengths [M] int32. M must not exceed the capacity (one call never laps the ring).
    """
    capacity = buffer.capacity
    m = lengths.shape[0]
    if m > capacity:
        raise ValueError(f"inserting up to {m} episodes at once needs capacity >= {m}")
    valid = valid.astype(bool)
    offsets = jnp.cumsum(valid.astype(jnp.int32)) - 1
    # An out-of-range slot with mode="drop" skips the invalid rows without a branch.
    slot = jnp.where(valid, (buffer.position + offsets) % capacity, capacity)
    data = jax.tree.map(lambda b, e: b.at[slot].set(e, mode="drop"), buffer.data, episodes)
    length = buffer.length.at[slot].set(lengths.astype(jnp.int32), mode="drop")
    added = valid.sum().astype(jnp.int32)
    return EpisodeBuffer(
        data=data,
        length=length,
        position=(buffer.position + added) % capacity,
        count=jnp.minimum(buffer.count + added, capacity),
        inserted=buffer.inserted + added,
    )


def sample_slots(buffer: EpisodeBuffer, key: jax.Array, n: int) -> tuple[jax.Array, jax.Array]:
    """n (slot, step) pairs: slot uniform over the filled slots, step uniform in its length.

    Returns (slot [n], step [n]) int32. On an empty buffer every pair is (0, 0).
    """
    slot_key, step_key = jax.random.split(key)
    slot = jax.random.randint(slot_key, (n,), 0, jnp.maximum(buffer.count, 1))
    length = jnp.maximum(buffer.length[slot], 1)
    step = jnp.floor(jax.random.uniform(step_key, (n,)) * length).astype(jnp.int32)
    return slot, jnp.minimum(step, length - 1)


@struct.dataclass
class Staging:
    """The episode each of N instances is in the middle of; `episode` leaves are [N, ...]."""

    episode: EpisodeData
    length: jax.Array
    """[N] int32 steps staged so far."""


def staging_init(num_envs: int, example: EpisodeData) -> Staging:
    """Empty rows for `num_envs` instances, shaped like one `example` episode."""
    episode = jax.tree.map(lambda x: jnp.zeros((num_envs,) + x.shape, x.dtype), example)
    return Staging(episode=episode, length=jnp.zeros((num_envs,), jnp.int32))


def empty_episode(t_max: int, obs_shape, obs_dtype, action_shape, action_dtype) -> EpisodeData:
    """A zero episode of T_max steps (the shape template of buffer and staging)."""
    return EpisodeData(
        obs=jnp.zeros((t_max + 1,) + tuple(obs_shape), obs_dtype),
        action=jnp.zeros((t_max,) + tuple(action_shape), action_dtype),
        reward=jnp.zeros((t_max,), jnp.float32),
        terminated=jnp.zeros((t_max,), bool),
    )


def stage_step(
    staging: Staging, buffer: EpisodeBuffer, step: Transition
) -> tuple[Staging, EpisodeBuffer]:
    """Append one step ([N] leaves) to every instance's row; flush the rows that end.

    An ended episode enters the buffer only where `step.loss_mask` is set (the student
    learns from that instance's episode). Steps past T_max are dropped: an episode longer
    than the buffer's rows is stored as its first T_max steps. A row whose staged last
    observation differs from the step's observation was cut by a reset between batches
    (the loop's batch mode) and starts over, so no stored episode joins two episodes.
    """
    ep = staging.episode
    t_max = ep.reward.shape[1]
    n = staging.length.shape[0]
    rows = jnp.arange(n)
    pos = staging.length
    # A row whose staged last observation is not this step's observation was cut off by
    # a reset the loop made between batches (batch mode): drop it and start over.
    staged_last = ep.obs[rows, pos].reshape(n, -1)
    continues = jnp.all(staged_last == step.obs.reshape(n, -1).astype(ep.obs.dtype), axis=-1)
    # (A full row, pos == T_max, is past checking: its later steps are dropped anyway.)
    pos = jnp.where((pos > 0) & (pos < t_max) & ~continues, 0, pos)
    # Past T_max nothing is written (an out-of-range index with mode="drop").
    room = pos < t_max
    at = jnp.where(room, pos, t_max + 1)

    def write(arr, value, index):
        return arr.at[rows, index].set(value.astype(arr.dtype), mode="drop")

    episode = EpisodeData(
        # obs first at pos, then next_obs at pos + 1 (the next step overwrites it with
        # the same array, or the episode ends and it stays as the final state)
        obs=write(write(ep.obs, step.obs, at), step.next_obs, at + 1),
        action=write(ep.action, step.action, at),
        reward=write(ep.reward, step.reward, at),
        terminated=write(ep.terminated, step.terminated, at),
    )
    length = jnp.minimum(pos + 1, t_max)
    done = step.done.astype(bool)
    buffer = buffer_insert(buffer, episode, length, done & (step.loss_mask > 0))
    return Staging(episode=episode, length=jnp.where(done, 0, length)), buffer


def stage_rollout(
    staging: Staging, buffer: EpisodeBuffer, batch: Transition
) -> tuple[Staging, EpisodeBuffer]:
    """`stage_step` over a [T, N] rollout batch, in time order."""

    def body(carry, step):
        return stage_step(*carry, step), None

    (staging, buffer), _ = jax.lax.scan(body, (staging, buffer), batch)
    return staging, buffer
