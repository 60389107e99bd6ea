"""Small-matrix linear algebra (acl.teachers.linalg): the unrolled path against LAPACK's,
and the LAPACK path above the unrolling limit."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from acl.teachers.linalg import (
    UNROLL_MAX_DIM,
    cholesky_with_inverse,
    lower_triangular_apply,
    lower_triangular_inverse,
)

DIMS = [1, 2, 4, 7, UNROLL_MAX_DIM + 2]


def spd(dim: int, batch: int = 6) -> np.ndarray:
    a = np.random.default_rng(dim).normal(size=(batch, dim, dim))
    return (a @ np.swapaxes(a, -1, -2) + 0.1 * np.eye(dim)).astype(np.float32)


@pytest.mark.parametrize("dim", DIMS)
def test_cholesky_with_inverse_matches_lapack(dim):
    a = spd(dim)
    low, inv = jax.jit(cholesky_with_inverse)(a)  # jitted, as in EM: one compile, not dozens
    np.testing.assert_allclose(low, np.linalg.cholesky(a), atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(inv @ low, np.broadcast_to(np.eye(dim), a.shape), atol=1e-4)


@pytest.mark.parametrize("dim", DIMS)
def test_triangular_inverse_and_product(dim):
    low = np.linalg.cholesky(spd(dim)).astype(np.float32)
    # Entries above the diagonal are ignored, as the factor's zeros are.
    noisy = low + np.triu(np.ones((dim, dim), np.float32), 1)
    inv = np.asarray(jax.jit(lower_triangular_inverse)(noisy))
    np.testing.assert_allclose(inv, np.linalg.inv(low), atol=1e-3, rtol=1e-3)
    assert np.all(np.triu(inv, 1) == 0)
    v = np.random.default_rng(0).normal(size=(dim, 5)).astype(np.float32)
    np.testing.assert_allclose(
        jax.jit(lower_triangular_apply)(noisy[0], v), low[0] @ v, atol=1e-4, rtol=1e-4
    )
    np.testing.assert_allclose(lower_triangular_apply(low[0], v[:, 0]), low[0] @ v[:, 0], atol=1e-4)
