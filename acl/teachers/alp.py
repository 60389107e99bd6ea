"""Empirical absolute learning progress (ALP), in pure JAX, over a ring buffer
(acl.core.ring) of earlier points.

ALP follows teachDeepRL's `EmpiricalALPComputer` (Portelas et al. 2019): the ALP of a new
(task, return) pair is |return - return of the nearest earlier task| (1-NN, L2), and 0 while
at most `MIN_POINTS` earlier points are stored (the reference tests `len(history) > 5`).
The reference keeps every point (a buffered kd-tree); here the history is a ring of static
capacity, so the neighbour is searched among the last `capacity` points only.

A feedback batch is handled in vectorised passes: each valid record's neighbour is sought
among the history *and* the earlier valid records of the same batch, which is exactly what a
record-by-record loop would do (as long as the batch fits in the ring). Passes over chunks of
the batch stop after its last valid record, so padding slots cost nothing.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from acl.core.ring import Ring, ring_push

MIN_POINTS = 6
"""ALP is 0 unless at least this many earlier points exist (reference: `len(knn) > 5`)."""


def _min_and_first_argmin(d: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Row minima of d [K, C] and the first column attaining each, like `jnp.argmin`.

    A plain min, then the smallest matching column: XLA's CPU backend runs argmin's
    value-index reduction about 4x slower, and it dominated the teacher's per-step cost.
    """
    best = jnp.min(d, axis=-1)
    columns = jnp.arange(d.shape[-1], dtype=jnp.int32)
    index = jnp.min(jnp.where(d == best[:, None], columns, d.shape[-1] - 1), axis=-1)
    return best, index


def _squared_distances(a: jax.Array, b: jax.Array) -> jax.Array:
    """Squared L2 distances between the rows of a [Ka, D] and of b [Kb, D], [Ka, Kb].

    A sum of D columnwise squared differences: one fused loop over [Ka, Kb]. Broadcasting to
    [Ka, Kb, D] and reducing the short minor axis ran ~10x slower on XLA's CPU backend (the
    per-update cost of ALP-GMM in the RL loop, with hundreds of records against the history).
    """
    b_cols = b.T  # [D, Kb]
    return sum((a[:, j, None] - b_cols[j][None, :]) ** 2 for j in range(a.shape[-1]))


def nearest_earlier(
    history_points: jax.Array, history_valid: jax.Array, points: jax.Array, mask: jax.Array
):
    """For each valid new point, its nearest earlier point among the history and the earlier
    valid points of the same batch.

    Args:
      history_points: [C, D]; history_valid: [C] bool.
      points: [K, D]; mask: [K] bool (masked rows may hold NaN).
    Returns:
      from_history [K] bool (the neighbour is in the history, else in the batch),
      index [K] int32 (into the history or the batch), num_earlier [K] int32 (how many
      earlier points there were to search).
    """
    mask = mask.astype(bool)
    points = jnp.where(mask[:, None], points, 0.0)
    d_hist = _squared_distances(points, history_points)  # [K, C]
    d_hist = jnp.where(history_valid[None, :], d_hist, jnp.inf)
    k = points.shape[0]
    d_batch = _squared_distances(points, points)  # [K, K]
    earlier = (jnp.arange(k)[None, :] < jnp.arange(k)[:, None]) & mask[None, :]
    d_batch = jnp.where(earlier, d_batch, jnp.inf)
    best_hist, i_hist = _min_and_first_argmin(d_hist)
    best_batch, i_batch = _min_and_first_argmin(d_batch)
    # Ties go to the history (the older point), as a sequential search would see it first.
    from_history = best_hist <= best_batch
    index = jnp.where(from_history, i_hist, i_batch).astype(jnp.int32)
    num_earlier = jnp.sum(history_valid) + jnp.sum(earlier, axis=-1)
    return from_history, index, num_earlier.astype(jnp.int32)


def _empirical_alp_batch(history: Ring, points, returns, mask):
    """`empirical_alp` in one pass over all K records (distances [K, C] and [K, K])."""
    returns = jnp.where(mask, returns, 0.0)
    from_history, index, num_earlier = nearest_earlier(
        history.data[:, :-1], history.valid, points, mask
    )
    neighbour_return = jnp.where(from_history, history.data[index, -1], returns[index])
    alp = jnp.abs(returns - neighbour_return)
    alp = jnp.where(mask & (num_earlier >= MIN_POINTS), alp, 0.0)
    rows = jnp.concatenate([points, returns[:, None]], axis=-1)
    return alp, ring_push(history, rows, mask)


def empirical_alp(
    history: Ring,
    points: jax.Array,
    returns: jax.Array,
    mask: jax.Array,
    chunk_size: int | None = None,
):
    """ALP of each new (point, return) and the history with the valid ones appended.

    With `chunk_size`, the records go through in chunks of that many, each chunk appended
    to the history before the next is searched (the same neighbours as one pass), and the
    passes stop after the chunk holding the last valid record. A feedback batch padded to
    hundreds of slots but holding a few dozen records (`acl.teachers.base.compact_feedback`
    puts them first) then costs one [chunk_size, C] search instead of [K, C].

    Args:
      history: ring of rows (point [D], return) -> data [C, D + 1].
      points: [K, D] (already in the space distances are measured in).
      returns: [K].
      mask: [K] bool.
      chunk_size: records per pass (static), or None for a single pass.
    Returns:
      alp [K] (0 on masked records and while fewer than MIN_POINTS earlier points exist),
      the updated history.
    """
    mask = mask.astype(bool)
    k = points.shape[0]
    if chunk_size is None or chunk_size >= k:
        return _empirical_alp_batch(history, points, returns, mask)
    num_chunks = -(-k // chunk_size)
    pad = num_chunks * chunk_size - k
    points = jnp.pad(points, ((0, pad), (0, 0)))
    returns = jnp.pad(returns, (0, pad))
    mask = jnp.pad(mask, (0, pad))
    last_valid = jnp.max(jnp.where(mask, jnp.arange(mask.shape[0]), -1))
    chunks_needed = (last_valid + chunk_size) // chunk_size

    def body(carry):
        i, history, alp = carry
        start = i * chunk_size
        take = lambda a: jax.lax.dynamic_slice_in_dim(a, start, chunk_size)  # noqa: E731
        chunk_alp, history = _empirical_alp_batch(history, take(points), take(returns), take(mask))
        return i + 1, history, jax.lax.dynamic_update_slice_in_dim(alp, chunk_alp, start, 0)

    init = (jnp.zeros((), jnp.int32), history, jnp.zeros(mask.shape, returns.dtype))
    _, history, alp = jax.lax.while_loop(lambda c: c[0] < chunks_needed, body, init)
    return alp[:k], history
