"""EM from a given initial mixture, ours and sklearn's (the oracle), for the GMM tests."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.mixture import GaussianMixture

from acl.teachers.gmm import em_from_init


def ours_from_init(x, mask, w0, m0, c0, max_iter: int, reg_covar: float, tol: float):
    """acl's EM from (w0 [k], m0 [k, F], c0 [k, F, F]) on x [N, F] with mask [N]:
    (weights, means, covariances, log_likelihood, n_iter)."""
    return jax.jit(em_from_init)(
        jnp.asarray(x),
        jnp.asarray(mask),
        *(jnp.asarray(a, jnp.float32) for a in (w0, m0, c0)),
        max_iter,
        reg_covar,
        tol,
    )


def sklearn_from_init(x, w0, m0, c0, max_iter: int, reg_covar: float, tol: float):
    """sklearn's GaussianMixture fitted on x [N, F] from the same initial mixture."""
    ref = GaussianMixture(
        len(w0),
        covariance_type="full",
        weights_init=w0,
        means_init=m0,
        precisions_init=np.linalg.inv(c0),
        max_iter=max_iter,
        tol=tol,
        reg_covar=reg_covar,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning when max_iter is reached
        ref.fit(np.asarray(x, np.float64))
    return ref
