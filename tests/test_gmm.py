"""EM mixtures in acl.teachers.gmm against sklearn's GaussianMixture as the oracle."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import linalg as sla
from scipy.stats import multivariate_normal
from sklearn.mixture import GaussianMixture

from acl.teachers.gmm import (
    DEFAULT_TOL,
    GMM,
    em_from_init,
    em_packed,
    fit_gmms,
    fit_slots,
    gmm_log_prob,
    n_parameters,
    sample_gmm,
    select_best,
)
from tests.gmm_oracle import ours_from_init, sklearn_from_init

# Jitted once here: eager calls compile each primitive at each shape, dozens per test.
EM = jax.jit(em_from_init)
SAMPLE = jax.jit(sample_gmm, static_argnums=2)

K_MIN, K_MAX, INITS, ITERS = 1, 7, 3, 100
"""Most fits share these settings and ROWS rows of 2-D points, so one compiled fit_gmms
serves them; k in 1..7 packs one (k, 0) slot, k = 4 alone (fit_slots)."""
PER_BLOB, NUM_MASKED = 100, 60
ROWS = 3 * PER_BLOB + NUM_MASKED
CENTRES_2D = np.array([[0.0, 0.0], [6.0, 6.0], [-6.0, 6.0]])
CENTRES_3D = np.array([[0.0, 0.0, 0.0], [6.0, 6.0, 6.0], [-6.0, 6.0, 6.0]])


def blobs(centres, seed, std=0.7):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(c, std, (PER_BLOB, len(c))) for c in centres]).astype(
        np.float32
    )


def with_garbage(x, fill, rows=None):
    """x followed by masked rows holding `fill`: NUM_MASKED, or up to `rows` rows."""
    num_masked = NUM_MASKED if rows is None else rows - len(x)
    garbage = np.full((num_masked, x.shape[1]), fill, np.float32)
    mask = np.r_[np.ones(len(x), bool), np.zeros(num_masked, bool)]
    return jnp.asarray(np.concatenate([x, garbage])), jnp.asarray(mask)


def fit(x, mask, reg_covar=1e-6, seed=1, k_min=K_MIN, k_max=K_MAX, max_iter=ITERS, tol=None):
    """fit_gmms, every argument passed the same way: equal shapes share one compiled fit.
    Seed 1: each k = 3 init of the blobs starts with a mean in every blob (seed 0 starts
    one on a plateau, where early stopping rightly stops elsewhere than the capped run)."""
    key = jax.random.key(seed) if isinstance(seed, int) else seed
    tol = DEFAULT_TOL if tol is None else tol
    return fit_gmms(key, x, mask, k_min, k_max, INITS, max_iter, reg_covar, tol)


def best_of_k(fits, k, k_min=K_MIN):
    """Highest-likelihood init for k components, trimmed to its k active components."""
    i = int(np.argmax(fits.log_likelihood[k - k_min]))
    w, m, c = (
        np.asarray(a[k - k_min, i], np.float64)
        for a in (fits.weights, fits.means, fits.covariances)
    )
    return w[:k], m[:k], c[:k], float(fits.log_likelihood[k - k_min, i])


def sklearn_with(w, m, c):
    """A 'fitted' sklearn mixture carrying our parameters, to score them with sklearn's code."""
    gm = GaussianMixture(len(w), covariance_type="full")
    gm.weights_, gm.means_, gm.covariances_ = w, m, c
    eye = np.eye(m.shape[1])
    gm.precisions_cholesky_ = np.stack(
        [sla.solve_triangular(np.linalg.cholesky(ci), eye, lower=True).T for ci in c]
    )
    return gm


def assert_centres(means, centres, atol=0.3):
    best = min(
        np.abs(means[list(p)] - centres).max() for p in itertools.permutations(range(len(means)))
    )
    assert best < atol, (means, centres)


@pytest.fixture(scope="module")
def data2():
    return blobs(CENTRES_2D, seed=1)


def on_host(fits):
    """Fits as numpy arrays: indexing a jax array eagerly compiles a program per shape."""
    return jax.tree.map(np.asarray, fits)


@pytest.fixture(scope="module")
def fits2(data2):
    # NaN in the masked rows: any leak poisons the whole fit.
    return on_host(fit(*with_garbage(data2, np.nan)))


@pytest.fixture(scope="module")
def fits3():
    x = blobs(CENTRES_3D, seed=2)
    return x, on_host(fit(jnp.asarray(x), jnp.ones(len(x), bool), k_min=3, k_max=3))


def sklearn_reference(k):
    """sklearn with our stopping rule (tol, max_iter) and as many inits."""
    return GaussianMixture(
        k,
        covariance_type="full",
        reg_covar=1e-6,
        n_init=INITS,
        tol=DEFAULT_TOL,
        max_iter=ITERS,
        random_state=0,
    )


def test_matches_sklearn_2d(data2, fits2):
    w, m, c, ll = best_of_k(fits2, 3)
    ref = sklearn_reference(3)
    ref.fit(data2.astype(np.float64))
    assert ll / len(data2) == pytest.approx(ref.score(data2), abs=2e-3)
    # Our reported likelihood is that of our parameters, as sklearn computes it.
    assert ll / len(data2) == pytest.approx(sklearn_with(w, m, c).score(data2), abs=1e-4)
    assert_centres(m, CENTRES_2D)


def test_matches_sklearn_3d(fits3):
    x, fits = fits3
    w, m, c, ll = best_of_k(fits, 3, k_min=3)
    ref = sklearn_reference(3)
    ref.fit(x.astype(np.float64))
    assert ll / len(x) == pytest.approx(ref.score(x), abs=2e-3)
    assert_centres(m, CENTRES_3D)


# -- early stopping ----------------------------------------------------------------------


@pytest.mark.parametrize("num_features", [2, 3])
def test_early_stop_matches_running_to_the_cap(num_features, data2, fits2, fits3):
    # Well-separated blobs and the true k (3): EM converges in a few iterations, and stopping
    # there gives what the full max_iter iterations give.
    if num_features == 2:
        (x, mask), stopped, k_min, k_max = with_garbage(data2, np.nan), fits2, K_MIN, K_MAX
    else:
        (x, stopped), k_min, k_max = fits3, 3, 3
        x, mask = jnp.asarray(x), jnp.ones(len(x), bool)
    capped = on_host(fit(x, mask, k_min=k_min, k_max=k_max, tol=0.0))
    true_k = lambda fits: jax.tree.map(lambda a: a[3 - k_min], fits)  # noqa: E731
    stopped, capped = true_k(stopped), true_k(capped)
    assert (capped.n_iter == ITERS).all()
    assert (stopped.n_iter < ITERS // 2).all(), stopped.n_iter
    per_point = np.abs(stopped.log_likelihood - capped.log_likelihood) / int(mask.sum())
    assert per_point.max() < 1e-4
    for a, b in zip(jax.tree.leaves(stopped), jax.tree.leaves(capped), strict=True):
        if a.dtype != np.int32:
            np.testing.assert_allclose(a, b, atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("num_features", [2, 6, 10])
def test_em_from_init_matches_sklearn_small_and_large_f(num_features):
    # F <= 8 runs the unrolled E and M steps, F = 10 the einsum ones; each is sklearn's EM
    # with the same stopping rule.
    rng = np.random.default_rng(num_features)
    centres = rng.uniform(-4, 4, (3, num_features))
    # PER_BLOB points per centre: at F = 2 the shape of the other EM tests (one compile).
    x = np.concatenate([rng.normal(c, 0.5, (PER_BLOB, num_features)) for c in centres])
    x = x.astype(np.float32)
    m0 = centres + rng.normal(0, 0.5, centres.shape)
    c0 = np.stack([np.eye(num_features)] * 3)
    w0 = np.full(3, 1 / 3)
    mask = np.ones(len(x), bool)
    w, m, c, ll, n_iter = ours_from_init(x, mask, w0, m0, c0, ITERS, 1e-3, DEFAULT_TOL)
    ref = sklearn_from_init(x, w0, m0, c0, ITERS, 1e-3, DEFAULT_TOL)
    assert int(n_iter) == ref.n_iter_ < ITERS
    np.testing.assert_allclose(m, ref.means_, atol=1e-3)
    np.testing.assert_allclose(c, ref.covariances_, atol=1e-3)
    assert float(ll) / len(x) == pytest.approx(ref.score(x), abs=1e-4)


# Two inits of 3 components on the 2-D blobs: two means in one blob (EM slows down on a
# plateau and stops after ~7 iterations, though the means still drift), and a line through
# the middle (~25 iterations to the optimum).
FAST_MEANS = np.array([[0.0, 0.0], [0.5, 0.5], [0.0, 6.0]])
SLOW_MEANS = np.array([[-3.0, 3.0], [0.0, 3.0], [3.0, 3.0]])


def em_inits(x):
    cov = np.cov(np.asarray(x).T)
    means = jnp.asarray(np.stack([FAST_MEANS, SLOW_MEANS]), jnp.float32)
    weights = jnp.full((2, 3), 1 / 3, jnp.float32)
    covs = jnp.asarray(np.broadcast_to(cov, (2, 3, 2, 2)), jnp.float32)
    return weights, means, covs


@pytest.fixture(scope="module")
def em_over_seeds(data2):
    """Two "seeds" (data2, and data2 reversed and shifted with the means) x the two inits
    of em_inits, EM in one jitted vmap over seeds of a vmap over inits: (data [2, N, 2],
    mask, weights [2, 3], means [2, 2, 3, 2], covariances [2, 3, 2, 2], EM's results with
    leading axes [2, 2])."""
    xs = jnp.asarray(np.stack([data2, data2[::-1] + 1.0]))
    mask = jnp.ones(len(data2), bool)
    weights, means, covs = em_inits(xs[0])
    means = jnp.stack([means, means + 1.0])
    over_inits = jax.vmap(em_from_init, in_axes=(None, None, 0, 0, 0, None, None, None))
    over_seeds = jax.jit(jax.vmap(over_inits, in_axes=(0, None, None, 0, None, None, None, None)))
    out = over_seeds(xs, mask, weights, means, covs, ITERS, 1e-6, DEFAULT_TOL)
    return xs, mask, weights, means, covs, on_host(out)


def test_converged_fit_is_frozen_while_another_continues(em_over_seeds):
    # The data2 seed: both inits in one EM loop (with the other seed's).
    xs, mask, weights, means, covs, out = em_over_seeds
    x, means = xs[0], means[0]
    *params, ll, n_iter = (a[0] for a in out)
    fast, slow = (int(n) for n in n_iter)
    assert fast < 10 < slow < ITERS, (fast, slow)
    for i in range(2):
        # Each fit of the batch is what it is alone...
        alone = EM(x, mask, weights[i], means[i], covs[i], ITERS, 1e-6, DEFAULT_TOL)
        assert int(alone[-1]) == int(n_iter[i])
        for a, b in zip((*params, ll), alone[:-1], strict=True):
            np.testing.assert_allclose(a[i], b, rtol=1e-5, atol=1e-5)
    # ... so the fast one kept its parameters of iteration `fast` while the slow one ran on:
    # exactly `fast` iterations of plain EM.
    frozen = EM(x, mask, weights[0], means[0], covs[0], fast, 1e-6, 0.0)
    assert int(frozen[-1]) == fast
    for a, b in zip((*params, ll), frozen[:-1], strict=True):
        np.testing.assert_allclose(a[0], b, rtol=1e-5, atol=1e-5)
    one_more = EM(x, mask, weights[0], means[0], covs[0], fast + 1, 1e-6, 0.0)
    assert np.abs(one_more[1] - frozen[1]).max() > 1e-3  # it had not stopped by itself


def test_packed_mixtures_each_fit_as_alone(data2):
    """Two mixtures packed on one component axis (how fit_gmms pairs k with k_min + k_max -
    k): each gets what em_from_init gives it alone, including its own stopping iteration
    while the other runs on; an empty second mixture leaves the first unchanged."""
    x, mask = jnp.asarray(data2), jnp.ones(len(data2), bool)
    weights, means, covs = em_inits(x)
    packed = jax.jit(em_packed, static_argnums=(6,))
    groups = jnp.repeat(jnp.arange(2, dtype=jnp.int32), 3)
    flat = lambda a: a.reshape(6, *a.shape[2:])  # noqa: E731
    *params, ll, n_iter = packed(
        x, mask, flat(weights), flat(means), flat(covs), groups, 2, ITERS, 1e-6, DEFAULT_TOL
    )
    assert int(n_iter[0]) < 10 < int(n_iter[1]) < ITERS
    for g in range(2):
        alone = EM(x, mask, weights[g], means[g], covs[g], ITERS, 1e-6, DEFAULT_TOL)
        assert int(alone[-1]) == int(n_iter[g])
        np.testing.assert_allclose(ll[g], alone[3], rtol=1e-5)
        for a, b in zip(params, alone[:3], strict=True):
            np.testing.assert_allclose(a[3 * g : 3 * g + 3], b, rtol=1e-5, atol=1e-5)
    # The second mixture without components: the first is fitted as alone.
    lone_w = flat(weights).at[3:].set(0.0)
    *params, ll, n_iter = packed(
        x, mask, lone_w, flat(means), flat(covs), groups, 2, ITERS, 1e-6, DEFAULT_TOL
    )
    alone = EM(x, mask, weights[0], means[0], covs[0], ITERS, 1e-6, DEFAULT_TOL)
    assert int(n_iter[0]) == int(alone[-1]) and int(n_iter[1]) == 0
    np.testing.assert_allclose(params[1][:3], alone[1], rtol=1e-5, atol=1e-5)
    assert all(np.isfinite(a).all() for a in params)


@pytest.mark.parametrize("k_min,k_max", [(1, 1), (2, 3), (2, 9), (3, 7), (2, 10)])
def test_fit_slots_cover_every_k_once(k_min, k_max):
    slots = fit_slots(k_min, k_max)
    ks = sorted(k for pair in slots for k in pair if k)
    assert ks == list(range(k_min, k_max + 1))
    width = max(a + b for a, b in slots)
    assert width * len(slots) <= (k_max - k_min + 1) * k_max


def test_early_stop_under_vmap_over_seeds_and_jit(em_over_seeds):
    # Two "seeds" (data sets) x two inits: the loop runs until the slowest of the four has
    # stopped; every fit equals its own unbatched run.
    xs, mask, weights, means, covs, out = em_over_seeds
    n_iter = out[-1]
    assert n_iter.min() < n_iter.max() < ITERS
    for s, i in itertools.product(range(2), range(2)):
        alone = EM(xs[s], mask, weights[i], means[s, i], covs[i], ITERS, 1e-6, DEFAULT_TOL)
        assert int(alone[-1]) == n_iter[s, i]
        for a, b in zip(out[:-1], alone[:-1], strict=True):
            np.testing.assert_allclose(a[s, i], b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("k", range(1, 7))
@pytest.mark.parametrize("f", range(1, 5))
def test_n_parameters_matches_sklearn(k, f):
    gm = GaussianMixture(k, covariance_type="full")
    gm.means_ = np.zeros((k, f))
    assert int(n_parameters(k, f)) == gm._n_parameters()


def test_criteria_match_sklearn(data2, fits2):
    n = len(data2)
    for k in range(K_MIN, K_MAX + 1):
        i = int(np.argmax(fits2.log_likelihood[k - K_MIN]))
        gm = sklearn_with(*best_of_k(fits2, k)[:3])
        p = gm._n_parameters()
        aic, bic = (float(a[k - K_MIN, i]) for a in (fits2.aic, fits2.bic))
        assert aic == pytest.approx(gm.aic(data2), rel=1e-4)
        assert bic == pytest.approx(gm.bic(data2), rel=1e-4)
        expected_aicc = gm.aic(data2) + 2 * p * (p + 1) / (n - p - 1)
        assert float(fits2.aicc[k - K_MIN, i]) == pytest.approx(expected_aicc, rel=1e-4)


def test_aicc_guarded_when_too_few_points():
    # 15 valid points among ROWS: k = 2 in 2-D has 11 parameters, k = 3 has 17.
    x = blobs(CENTRES_2D, seed=3)[::20]
    fits = on_host(fit(*with_garbage(x, np.nan, rows=ROWS), max_iter=20))
    assert np.isinf(fits.aicc[3 - K_MIN :]).all() and np.isfinite(fits.aicc[: 3 - K_MIN]).all()
    assert not np.isnan(fits.aicc).any()
    assert int((select_best(fits, "aicc").weights > 0).sum()) < 3


def test_bic_selects_true_k(fits2):
    best = select_best(fits2, "bic")
    assert int((best.weights > 0).sum()) == 3
    assert_centres(np.asarray(best.means[:3]), CENTRES_2D)


def test_aic_selects_true_k(data2):
    # With reg_covar 1e-6 the full-covariance likelihood rewards near-degenerate extra
    # components more than AIC's penalty (sklearn's own fits do too); a floor on the
    # covariance bounds that gain, as a teacher would use on noisy task data.
    fits = fit(*with_garbage(data2, np.nan), reg_covar=0.05)
    for criterion in ("aic", "aicc", "bic"):
        assert int((select_best(fits, criterion).weights > 0).sum()) == 3, criterion


def test_select_best_is_argmin(fits2):
    for criterion in ("aic", "bic", "aicc"):
        scores = np.asarray(getattr(fits2, criterion))
        k, i = np.unravel_index(np.argmin(scores), scores.shape)
        best = select_best(fits2, criterion)
        np.testing.assert_array_equal(best.weights, fits2.weights[k, i])
        np.testing.assert_array_equal(best.covariances, fits2.covariances[k, i])
    with pytest.raises(ValueError):
        select_best(fits2, "likelihood")


@pytest.mark.parametrize("fill", [0.0, 1e6, -3.0])
def test_masked_points_ignored(data2, fits2, fill):
    other = fit(*with_garbage(data2, fill))
    for a, b in zip(jax.tree.leaves(fits2), jax.tree.leaves(other), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_bic_uses_valid_count(data2, fits2):
    k, i = 0, 0
    p = n_parameters(K_MIN, 2)
    expected = p * np.log(len(data2)) - 2 * float(fits2.log_likelihood[k, i])
    assert float(fits2.bic[k, i]) == pytest.approx(expected, rel=1e-5)


def test_padding_zero_weight_and_finite(fits2):
    for leaf in jax.tree.leaves(fits2):
        assert np.isfinite(leaf).all()
    for j, k in enumerate(range(K_MIN, K_MAX + 1)):
        w = np.asarray(fits2.weights[j])  # [I, k_max]
        assert (w[:, k:] == 0).all()
        assert (w[:, :k] > 0).all()
        np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)


def test_jit_and_vmap_over_datasets():
    shifts = np.array([[0.0, 0.0], [10.0, -4.0], [-3.0, 20.0]], np.float32)
    data = [
        with_garbage(blobs(CENTRES_2D, seed=10 + s) + sh, np.nan) for s, sh in enumerate(shifts)
    ]
    xs, masks = (jnp.stack(a) for a in zip(*data))
    keys = jax.random.split(jax.random.key(5), len(xs))

    def one(key, x, mask):
        return select_best(fit(x, mask, seed=key), "bic")

    batched = jax.jit(jax.vmap(one))(keys, xs, masks)
    for d in range(len(xs)):
        single = one(keys[d], xs[d], masks[d])
        np.testing.assert_allclose(batched.means[d], single.means, atol=1e-4)
        assert int((batched.weights[d] > 0).sum()) == 3
        assert_centres(np.asarray(batched.means[d, :3]), CENTRES_2D + shifts[d])


def test_log_prob_matches_scipy_and_ignores_zero_weights(fits2, data2):
    w, m, c, _ = best_of_k(fits2, 3)
    expected = np.log(
        sum(wi * multivariate_normal(mi, ci).pdf(data2) for wi, mi, ci in zip(w, m, c))
    )
    # A zero-weight padded component with a singular covariance must not matter.
    gmm = GMM(
        weights=jnp.asarray(np.r_[w, 0.0], jnp.float32),
        means=jnp.asarray(np.r_[m, [[1e3, 1e3]]], jnp.float32),
        covariances=jnp.asarray(np.r_[c, np.zeros((1, 2, 2))], jnp.float32),
    )
    got = jax.jit(gmm_log_prob)(gmm, jnp.asarray(data2))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_sampling_recovers_single_gaussian():
    rng = np.random.default_rng(7)
    true_cov = np.array([[2.0, 0.8], [0.8, 0.5]])
    x = rng.multivariate_normal([1.0, -2.0], true_cov, ROWS).astype(np.float32)
    fits = on_host(fit(jnp.asarray(x), jnp.ones(len(x), bool), max_iter=5))
    gmm = GMM(*(a[1 - K_MIN, 0] for a in (fits.weights, fits.means, fits.covariances)))
    assert int((gmm.weights > 0).sum()) == 1  # the k = 1 fit
    np.testing.assert_allclose(gmm.means[0], x.mean(0), atol=1e-4)
    np.testing.assert_allclose(gmm.covariances[0], np.cov(x.T, bias=True), atol=1e-3)
    s = np.asarray(SAMPLE(jax.random.key(1), gmm, 20000))
    assert s.shape == (20000, 2)
    np.testing.assert_allclose(s.mean(0), gmm.means[0], atol=0.05)
    np.testing.assert_allclose(np.cov(s.T), gmm.covariances[0], atol=0.06)


def test_sampling_follows_component_probs():
    gmm = GMM(
        weights=jnp.array([0.5, 0.5, 0.0]),
        means=jnp.array([[-10.0, 0.0], [10.0, 0.0], [0.0, 50.0]]),
        covariances=jnp.broadcast_to(jnp.eye(2) * 0.01, (3, 2, 2)),
    )
    key = jax.random.key(2)
    default = np.asarray(SAMPLE(key, gmm, 4000))
    assert abs((default[:, 0] > 0).mean() - 0.5) < 0.05 and (np.abs(default[:, 1]) < 1).all()
    forced = np.asarray(SAMPLE(key, gmm, 1000, component_probs=jnp.array([0.0, 0.0, 3.0])))
    np.testing.assert_allclose(forced.mean(0), [0.0, 50.0], atol=0.05)


def test_sampling_never_draws_zero_probability_components():
    # Zero probabilities first, in the middle and last; components 100 apart on the line.
    probs = jnp.array([0.0, 0.2, 0.0, 0.5, 0.3, 0.0])
    gmm = GMM(
        weights=jnp.full((6,), 1 / 6),
        means=jnp.arange(6, dtype=jnp.float32)[:, None] * 100.0,
        covariances=jnp.full((6, 1, 1), 1e-4),
    )
    draws = np.asarray(SAMPLE(jax.random.key(3), gmm, 20000, component_probs=probs))
    counts = np.bincount(np.rint(draws[:, 0] / 100).astype(int), minlength=6)
    assert counts[[0, 2, 5]].sum() == 0
    np.testing.assert_allclose(counts / len(draws), probs, atol=0.015)
    # Unnormalised probabilities are normalised.
    scaled = np.asarray(SAMPLE(jax.random.key(3), gmm, 20000, component_probs=probs * 7))
    np.testing.assert_allclose(scaled, draws, rtol=1e-5, atol=1e-3)


def test_slot_phases_halve_down_to_two():
    from acl.teachers.gmm import _slot_counts

    assert _slot_counts(12) == [12, 6, 3, 2]
    assert _slot_counts(5) == [5, 3, 2]
    assert _slot_counts(2) == [2]
    assert _slot_counts(1) == [1]


def test_phased_slots_fit_as_one_loop_over_all(data2):
    """Gathering the slots still running into smaller loops changes no fit: the same
    iterations, the same parameters up to float rounding."""
    from acl.teachers import gmm

    x, mask = with_garbage(data2, 0.0)
    args = (jax.random.PRNGKey(3), x, mask, 1, 9, 2, 100, 1e-6, DEFAULT_TOL, True)
    # A fresh jit each time, so each traces with the _slot_counts in place then.
    phased = jax.jit(gmm.fit_gmms.__wrapped__, static_argnums=(3, 4, 5, 9))(*args)
    single = jax.jit(gmm.fit_gmms.__wrapped__, static_argnums=(3, 4, 5, 9))(*args[:-1], False)
    np.testing.assert_array_equal(phased.n_iter, single.n_iter)
    assert len(set(np.asarray(phased.n_iter).ravel().tolist())) > 1  # the phases mattered
    for a, b in zip(jax.tree.leaves(phased), jax.tree.leaves(single), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
