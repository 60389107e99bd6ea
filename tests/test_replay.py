"""The episode replay buffer: ring wrap-around, lengths, masks, staging across batches."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.agents.replay import (
    buffer_init,
    buffer_insert,
    empty_episode,
    sample_slots,
    stage_rollout,
    staging_init,
)
from acl.core.types import Transition

T_MAX = 4
# Jitted once per module: eager JAX compiles every small op separately, which is slower.
_insert = jax.jit(buffer_insert)
_sample_slots = jax.jit(sample_slots, static_argnums=2)


def marked_episode(marker: float, length: int):
    """An episode whose obs rows are marker + t (t = 0..length) and actions t."""
    ep = empty_episode(T_MAX, (1,), jnp.float32, (), jnp.int32)
    rows = jnp.arange(T_MAX + 1, dtype=jnp.float32)
    obs = jnp.where(rows <= length, marker + rows, 0.0)[:, None]
    return ep.replace(obs=obs, action=jnp.arange(T_MAX, dtype=jnp.int32))


def stack(episodes):
    return jax.tree.map(lambda *x: jnp.stack(x), *episodes)


def test_buffer_wraps_around_at_capacity():
    buffer = buffer_init(empty_episode(T_MAX, (1,), jnp.float32, (), jnp.int32), capacity=3)
    for i in range(5):
        ep = stack([marked_episode(100.0 * i, i % T_MAX + 1)])
        buffer = _insert(buffer, ep, jnp.array([i % T_MAX + 1]), jnp.array([True]))
    # Episodes 0..4 went to slots 0, 1, 2, 0, 1: slots now hold episodes 3, 4, 2.
    np.testing.assert_array_equal(buffer.data.obs[:, 0, 0], [300.0, 400.0, 200.0])
    np.testing.assert_array_equal(buffer.length, [4, 1, 3])
    assert int(buffer.count) == 3 and int(buffer.position) == 2 and int(buffer.inserted) == 5
    # The overwritten slot holds the new episode's rows, not a mix.
    np.testing.assert_array_equal(buffer.data.obs[0, :, 0], [300.0, 301.0, 302.0, 303.0, 304.0])


def test_only_valid_episodes_are_inserted_in_order():
    buffer = buffer_init(empty_episode(T_MAX, (1,), jnp.float32, (), jnp.int32), capacity=4)
    eps = stack([marked_episode(m, 2) for m in (10.0, 20.0, 30.0)])
    buffer = _insert(buffer, eps, jnp.array([2, 3, 4]), jnp.array([True, False, True]))
    assert int(buffer.count) == 2 and int(buffer.position) == 2
    np.testing.assert_array_equal(buffer.data.obs[:2, 0, 0], [10.0, 30.0])
    np.testing.assert_array_equal(buffer.length, [2, 4, 0, 0])
    # A second batch continues at slot 2 and wraps to slot 0.
    buffer = _insert(buffer, eps, jnp.array([2, 3, 4]), jnp.array([True, True, True]))
    np.testing.assert_array_equal(buffer.data.obs[:, 0, 0], [30.0, 30.0, 10.0, 20.0])
    np.testing.assert_array_equal(buffer.length, [4, 4, 2, 3])
    assert int(buffer.count) == 4 and int(buffer.position) == 1


def test_insert_more_than_capacity_at_once_is_refused():
    buffer = buffer_init(empty_episode(T_MAX, (1,), jnp.float32, (), jnp.int32), capacity=2)
    eps = stack([marked_episode(m, 2) for m in (1.0, 2.0, 3.0)])
    with pytest.raises(ValueError, match="capacity"):
        buffer_insert(buffer, eps, jnp.array([2, 2, 2]), jnp.array([True] * 3))


def test_sampling_stays_inside_filled_slots_and_lengths():
    buffer = buffer_init(empty_episode(T_MAX, (1,), jnp.float32, (), jnp.int32), capacity=8)
    eps = stack([marked_episode(m, 2) for m in (1.0, 2.0, 3.0)])
    buffer = _insert(buffer, eps, jnp.array([1, 4, 2]), jnp.array([True] * 3))
    slot, step = _sample_slots(buffer, jax.random.PRNGKey(0), 4000)
    slot, step = np.asarray(slot), np.asarray(step)
    assert set(slot) == {0, 1, 2}
    lengths = np.array([1, 4, 2])
    assert (step < lengths[slot]).all() and (step >= 0).all()
    assert set(step[slot == 1]) == {0, 1, 2, 3}


def transitions(obs, next_obs, done, loss_mask=None):
    """A [T, N] Transition from [T, N] scalars (obs values are markers)."""
    obs, next_obs, done = (jnp.asarray(x, jnp.float32) for x in (obs, next_obs, done))
    t, n = done.shape
    return Transition(
        obs=obs[..., None],
        action=(obs * 10).astype(jnp.int32),
        reward=-obs,
        terminated=jnp.zeros((t, n), bool),
        done=done.astype(bool),
        next_obs=next_obs[..., None],
        loss_mask=jnp.ones((t, n)) if loss_mask is None else jnp.asarray(loss_mask, jnp.float32),
        extras=(),
    )


def test_staging_joins_episodes_across_batch_boundaries():
    """Instance 0 runs one 4-step episode across two batches of 3 steps; instance 1 ends
    an episode every 2 steps; instance 2's second episode is masked out of learning."""
    template = empty_episode(T_MAX, (1,), jnp.float32, (), jnp.int32)
    staging = staging_init(3, template)
    buffer = buffer_init(template, capacity=8)
    # obs markers: instance 0: 1.1 .. 1.4 (final 1.5), then 1.6..; instance 1: episodes
    # (2.1, 2.2 -> 2.3), (3.1, 3.2 -> 3.3), (4.1, 4.2 -> 4.3); instance 2: 5.1, 5.2, 5.3 (one
    # episode -> 5.4), then 6.1, 6.2 -> 6.3 with loss mask 0.
    batch1 = transitions(
        obs=[[1.1, 2.1, 5.1], [1.2, 2.2, 5.2], [1.3, 3.1, 5.3]],
        next_obs=[[1.2, 2.2, 5.2], [1.3, 2.3, 5.3], [1.4, 3.2, 5.4]],
        done=[[0, 0, 0], [0, 1, 0], [0, 0, 1]],
    )
    batch2 = transitions(
        obs=[[1.4, 3.2, 6.1], [1.6, 4.1, 6.2], [1.7, 4.2, 6.3]],
        next_obs=[[1.5, 3.3, 6.2], [1.7, 4.2, 6.3], [1.8, 4.3, 6.4]],
        done=[[1, 1, 0], [0, 0, 1], [0, 1, 0]],
        loss_mask=[[1, 1, 0], [1, 1, 0], [1, 1, 0]],
    )
    run = jax.jit(stage_rollout)
    staging, buffer = run(staging, buffer, batch1)
    assert int(buffer.count) == 2
    np.testing.assert_array_equal(staging.length, [3, 1, 0])
    staging, buffer = run(staging, buffer, batch2)
    # Inserted in time order: (t=1 of batch 1) 2.x; (t=2) 5.x; (batch 2, t=0) 1.x, 3.x;
    # (t=2) 4.x. 6.x ended with loss mask 0 and is not stored.
    assert int(buffer.count) == 5
    np.testing.assert_array_equal(buffer.length[:5], [2, 3, 4, 2, 2])
    obs = np.asarray(buffer.data.obs[:5, :, 0])
    np.testing.assert_allclose(obs[0, :3], [2.1, 2.2, 2.3], rtol=1e-6)
    np.testing.assert_allclose(obs[1, :4], [5.1, 5.2, 5.3, 5.4], rtol=1e-6)
    np.testing.assert_allclose(obs[2], [1.1, 1.2, 1.3, 1.4, 1.5], rtol=1e-6)
    np.testing.assert_allclose(obs[3, :3], [3.1, 3.2, 3.3], rtol=1e-6)
    np.testing.assert_allclose(obs[4, :3], [4.1, 4.2, 4.3], rtol=1e-6)
    np.testing.assert_array_equal(buffer.data.action[2], [11, 12, 13, 14])
    np.testing.assert_allclose(buffer.data.reward[2], [-1.1, -1.2, -1.3, -1.4], rtol=1e-6)
    # Instance 0 is 2 steps into its next episode; instance 2's masked one was cleared.
    np.testing.assert_array_equal(staging.length, [2, 0, 1])
    np.testing.assert_allclose(staging.episode.obs[0, :3, 0], [1.6, 1.7, 1.8], rtol=1e-6)


def test_a_reset_between_batches_drops_the_cut_episode():
    """Batch mode resets instances between batches: a staged row whose last next_obs is
    not the new batch's first obs is dropped, never glued to the next episode."""
    template = empty_episode(T_MAX, (1,), jnp.float32, (), jnp.int32)
    staging, buffer = staging_init(1, template), buffer_init(template, capacity=4)
    run = jax.jit(stage_rollout)
    cut = transitions(obs=[[1.1], [1.2]], next_obs=[[1.2], [1.3]], done=[[0], [0]])
    staging, buffer = run(staging, buffer, cut)
    fresh = transitions(obs=[[7.1], [7.2]], next_obs=[[7.2], [7.3]], done=[[0], [1]])
    staging, buffer = run(staging, buffer, fresh)
    assert int(buffer.count) == 1 and int(buffer.length[0]) == 2
    np.testing.assert_allclose(buffer.data.obs[0, :3, 0], [7.1, 7.2, 7.3], rtol=1e-6)


def test_steps_past_t_max_are_dropped():
    template = empty_episode(2, (1,), jnp.float32, (), jnp.int32)
    staging, buffer = staging_init(1, template), buffer_init(template, capacity=4)
    long = transitions(
        obs=[[1.0], [2.0], [3.0], [4.0]],
        next_obs=[[2.0], [3.0], [4.0], [5.0]],
        done=[[0], [0], [0], [1]],
    )
    staging, buffer = jax.jit(stage_rollout)(staging, buffer, long)
    assert int(buffer.length[0]) == 2
    np.testing.assert_allclose(buffer.data.obs[0, :, 0], [1.0, 2.0, 3.0])
