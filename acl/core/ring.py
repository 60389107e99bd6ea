"""A fixed-capacity ring buffer of rows, in pure JAX: the history that teachers keep of
recent episodes (ALP's neighbours, GoalGAN's labels, Setter-Solver's and SPDL's buffers,
SVGG's attempts and visited goals, JSRL's window of returns...)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class Ring:
    """The last `capacity` valid rows pushed, oldest overwritten first."""

    data: jax.Array
    """[C, F] rows; slots with valid False hold zeros."""
    valid: jax.Array
    """[C] bool, True where a slot holds a pushed row."""
    head: jax.Array
    """int32 [], the slot the next row goes to."""

    @property
    def capacity(self) -> int:
        return self.data.shape[0]

    @property
    def count(self) -> jax.Array:
        return jnp.sum(self.valid).astype(jnp.int32)


def ring_init(capacity: int, num_features: int, dtype=jnp.float32) -> Ring:
    return Ring(
        data=jnp.zeros((capacity, num_features), dtype),
        valid=jnp.zeros((capacity,), bool),
        head=jnp.zeros((), jnp.int32),
    )


def ring_push(ring: Ring, rows: jax.Array, mask: jax.Array) -> Ring:
    """Appends the valid rows in order (positions by cumsum; no loop).

    If more than C rows are valid, only the last C are kept. Masked rows (may hold NaN)
    never reach the buffer; an all-masked batch returns the ring unchanged.

    Args:
      ring: data [C, F].
      rows: [K, F].
      mask: [K] bool.
    Returns:
      the updated ring.
    """
    capacity = ring.capacity
    mask = mask.astype(bool)
    rank = jnp.cumsum(mask) - 1  # [K] position among the valid rows
    num_valid = jnp.sum(mask)
    keep = mask & (rank >= num_valid - capacity)
    slots = jnp.where(keep, (ring.head + rank) % capacity, capacity)  # capacity: dropped
    rows = jnp.where(keep[:, None], rows, 0.0).astype(ring.data.dtype)
    data = ring.data.at[slots].set(rows, mode="drop")
    valid = ring.valid.at[slots].set(True, mode="drop")
    head = ((ring.head + num_valid) % capacity).astype(jnp.int32)
    return Ring(data=data, valid=valid, head=head)
