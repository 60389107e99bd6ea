"""Small-matrix linear algebra for teachers' Gaussians, unrolled into elementwise ops.

XLA's CPU backend runs `jnp.linalg.cholesky` and `solve_triangular` as a LAPACK call per
tiny matrix, which neither fuses with the arithmetic around it nor batches well: GMM
fits' EM and SPDL's trust-region solver, with matrices of a few rows, cost far more
than their arithmetic through them. Up to `UNROLL_MAX_DIM` rows the factorisation, the
triangular inverse and the triangular product are written out entry by entry, and XLA
fuses them; larger matrices take the LAPACK path.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

UNROLL_MAX_DIM = 8
"""Largest matrix side unrolled (a task of a few dimensions plus its ALP or return)."""


def _stack(rows: list[list[jax.Array]]) -> jax.Array:
    return jnp.stack([jnp.stack(row, axis=-1) for row in rows], axis=-2)


def _unrolled_inverse(low: list[list[jax.Array]], zero: jax.Array) -> list[list[jax.Array]]:
    """Forward substitution on the columns of I; `low[i][j]` are entries [...] (i >= j)."""
    d = len(low)
    inv = [[zero] * d for _ in range(d)]
    for i in range(d):
        inv[i][i] = 1.0 / low[i][i]
        for j in range(i):
            acc = sum((low[i][k] * inv[k][j] for k in range(j, i)), zero)
            inv[i][j] = -acc * inv[i][i]
    return inv


def lower_triangular_inverse(low: jax.Array) -> jax.Array:
    """L^-1 of lower-triangular matrices with a nonzero diagonal.

    Args:
      low: [..., D, D] lower triangular (entries above the diagonal are ignored).
    Returns:
      [..., D, D] lower triangular.
    """
    d = low.shape[-1]
    if d > UNROLL_MAX_DIM:
        eye = jnp.broadcast_to(jnp.eye(d, dtype=low.dtype), low.shape)
        return jax.scipy.linalg.solve_triangular(low, eye, lower=True)
    zero = jnp.zeros(low.shape[:-2], low.dtype)
    entries = [[low[..., i, j] for j in range(d)] for i in range(d)]
    return _stack(_unrolled_inverse(entries, zero))


def cholesky_with_inverse(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Lower Cholesky factor L of SPD matrices and its inverse L^-1.

    Args:
      a: [..., D, D] symmetric positive definite.
    Returns:
      L [..., D, D], L^-1 [..., D, D], both lower triangular.
    """
    d = a.shape[-1]
    if d > UNROLL_MAX_DIM:
        chol = jnp.linalg.cholesky(a)
        return chol, lower_triangular_inverse(chol)
    zero = jnp.zeros(a.shape[:-2], a.dtype)
    low = [[zero] * d for _ in range(d)]
    for i in range(d):
        for j in range(i + 1):
            partial = sum((low[i][k] * low[j][k] for k in range(j)), zero)
            if i == j:
                low[i][i] = jnp.sqrt(a[..., i, i] - partial)
            else:
                low[i][j] = (a[..., i, j] - partial) / low[j][j]
    return _stack(low), _stack(_unrolled_inverse(low, zero))


def lower_triangular_apply(low: jax.Array, v: jax.Array) -> jax.Array:
    """L v for one lower-triangular L, the zeros above its diagonal skipped.

    Args:
      low: [D, D] lower triangular.
      v: [D, ...] (a vector, or D rows of points or of a matrix).
    Returns:
      [D, ...]
    """
    d = low.shape[-1]
    if d > UNROLL_MAX_DIM:
        return jnp.tensordot(jnp.tril(low), v, axes=1)
    # D multiply-adds per row over v's trailing axes, one fused loop (a small dot is not).
    return jnp.stack([sum(low[i, j] * v[j] for j in range(i + 1)) for i in range(d)])
