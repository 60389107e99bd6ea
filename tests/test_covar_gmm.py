"""Covar-GMM: relative time, the fit branch under vmap, sampling where returns rise with
time, and the fit against teachDeepRL's logic (`experiments.reference_teachers`); the
conformance harness: tests/test_teachers.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.mixture import GaussianMixture

from acl.core.errors import ConfigError
from acl.core.spaces import Box
from acl.teachers import TEACHERS
from acl.teachers.covar_gmm import make_covar_gmm
from experiments.papers import reference_teachers as ref
from tests.gmm_oracle import ours_from_init, sklearn_from_init
from tests.teacher_harness import (
    SPACE,
    fit_once_without_random_tasks,
    harness_teacher,
    jitted,
    loop_update,
)
from tests.test_alp_gmm import abstract_seeds, contains_cond, feedback

KEY = jax.random.PRNGKey(0)
"""Teachers' update key: these teachers keep their own keys and ignore it."""

UNIT = Box((0.0, 0.0), (1.0, 1.0))


def test_presets_and_errors():
    t = TEACHERS.get("covar_gmm")(task_space=UNIT, preset="teachdeeprl")
    assert (t.fit_rate, t.k_min, t.k_max, t.hyper.random_task_ratio, t.criterion) == (
        250,
        2,
        10,
        0.2,
        "aic",
    )
    t = make_covar_gmm(UNIT)
    assert (t.k_min, t.k_max, t.hyper.random_task_ratio) == (2, 14, 0.1)
    assert {"preset", "return_bounds", "absolute_lp"} <= make_covar_gmm.config_keys
    with pytest.raises(ConfigError, match="teacher.preset"):
        make_covar_gmm(UNIT, preset="nope")


@pytest.fixture(scope="module")
def teacher():
    """The harness' Covar-GMM (tests/teacher_harness.py: SPACE, HARNESS_SETTINGS): fits
    within a few updates of 32 records. These tests run the programs check_teacher
    compiles for it (`jitted`, `loop_update`)."""
    return harness_teacher("covar_gmm")


def test_fit_is_a_real_cond_under_vmap(teacher):
    states, tasks, fb = abstract_seeds(teacher, 3, 8)
    vupdate = jax.vmap(teacher.update, in_axes=(0, None, 0, 0, None))
    jaxpr = jax.make_jaxpr(vupdate)(states, KEY, tasks, fb, jnp.int32(0)).jaxpr
    assert contains_cond(jaxpr)


def test_relative_time_follows_episode_order(teacher):
    init, _, _ = jitted(teacher)
    _, update = loop_update(teacher)
    state = init(jax.random.PRNGKey(0), teacher.default_params())
    index = np.arange(32)
    centre = (np.asarray(SPACE.low) + np.asarray(SPACE.high)) / 2
    # 24, 21, then 3 x 32 valid records: episodes 0..140, masked ones not counted.
    masks = [index % 4 != 1, index % 3 != 0] + [index >= 0] * 3
    for step, valid in enumerate(masks):
        t = np.tile(centre, (32, 1))
        state = update(state, t, feedback(t, np.zeros(32), valid), jnp.int32(step), KEY)
    assert int(state.episodes_seen) == 141 and teacher.fit_rate == 128
    # The ring holds episodes 13..140; relative times (index - 13) / 128.
    times = np.sort(np.asarray(jax.jit(teacher.fit_points)(state)[:, -2]))
    np.testing.assert_allclose(times, np.arange(128) / 128)


def test_samples_concentrate_where_returns_rise(teacher):
    # Two fit windows of 128 episodes, the fit on the second: the left share was
    # 0.91-0.97 for rng seeds 0-11.
    n = 2 * teacher.fit_rate
    rng = np.random.default_rng(0)
    unit = rng.uniform(size=(n, SPACE.dim)).astype(np.float32)
    time = np.arange(n) / n
    # Left half: returns rise with time (progress); right half: returns fall (forgetting).
    returns = np.where(unit[:, 0] < 0.5, time, 1.0 - time) + rng.normal(0, 0.05, n)
    tasks = np.asarray(teacher.from_unit(unit))
    state, samples = fit_once_without_random_tasks(teacher, tasks, returns.astype(np.float32))
    assert bool(state.has_fit)
    left = (np.asarray(teacher.to_unit(samples))[:, 0] < 0.5).mean()
    assert left > 0.85, left
    snap = teacher.snapshot(state)
    assert set(snap) >= {"weights", "means", "covariances", "lp", "active"}


def toy_bandit_history(num_dims: int, episodes: int, seed: int = 0):
    """Toy-bandit episodes (the reference's ToyEnv), half the tasks near the origin so that
    competence rises there and unlocks neighbours: (tasks [N, d] float32, rewards [N])."""
    rng = np.random.default_rng(seed)
    env = ref.ToyEnv(num_dims)
    tasks = rng.uniform(0.0, 1.0, (episodes, num_dims)).astype(np.float32)
    tasks[::2] *= np.float32(0.25)
    return tasks, np.array([env.episode(t) for t in tasks])


def hard_cluster_mixture(points: np.ndarray, labels: np.ndarray, reg_covar: float):
    """sklearn's init from hard labels: cluster weights, means, covariances (+ reg_covar)."""
    ks = np.unique(labels)
    w = np.array([np.mean(labels == k) for k in ks])
    m = np.stack([points[labels == k].mean(0) for k in ks])
    c = np.stack(
        [np.cov(points[labels == k].T, bias=True) + reg_covar * np.eye(points.shape[1]) for k in ks]
    )
    return w, m, c


@pytest.mark.slow
def test_fit_matches_the_reference_logic():
    """On one toy-bandit history at d = 3 and from one initial mixture, the teachdeeprl
    preset fits what teachDeepRL's Covar-GMM fits (sklearn, its defaults): same points
    (task, relative time, reward), same EM settings, same mixture and learning progress."""
    d = 3
    teacher = make_covar_gmm(Box((0.0,) * d, (1.0,) * d), preset="teachdeeprl")
    assert (teacher.fit_rate, teacher.hyper.random_task_ratio) == (
        ref.FIT_RATE,
        ref.RANDOM_TASK_RATIO,
    )
    assert tuple(range(teacher.k_min, teacher.k_max + 1)) == ref.POTENTIAL_KS
    tasks, rewards = toy_bandit_history(d, 2 * ref.FIT_RATE)
    # Jitted: eagerly, each op of init and fit_points would compile on its own.
    state = jax.jit(teacher.init)(jax.random.PRNGKey(0), teacher.default_params())
    update = jax.jit(teacher.update)
    # Two windows, one update each, neither a fit step: the buffer holds the second.
    for step, window in enumerate(np.split(np.arange(len(tasks)), 2)):
        fb = feedback(tasks[window], rewards[window])
        state = update(state, KEY, fb.task, fb, jnp.int32(step))
    ours = np.asarray(jax.jit(teacher.fit_points)(state), np.float64)
    ours = ours[np.argsort(ours[:, d])]  # ring order -> episode order (time column)
    points = ref.covar_gmm_points(tasks, rewards)
    np.testing.assert_allclose(ours, points, atol=1e-6)

    # The reference's EM is sklearn's GaussianMixture with its defaults.
    sk = GaussianMixture()
    # A start with a cluster of exactly-zero rewards (locked cubes): its reward variance
    # is the covariance floor, where a floor unlike sklearn's shows.
    labels = (points[:, -1] > 0) * 2 + (points[:, d] >= 0.5)
    w0, m0, c0 = hard_cluster_mixture(points, labels, sk.reg_covar)
    mask = np.ones(len(ours), bool)
    w, m, c, _, n_iter = ours_from_init(
        ours, mask, w0, m0, c0, teacher.em_iterations, teacher.hyper.reg_covar, teacher.em_tol
    )
    gm = sklearn_from_init(points, w0, m0, c0, sk.max_iter, sk.reg_covar, sk.tol)
    assert int(n_iter) == gm.n_iter_
    np.testing.assert_allclose(w, gm.weights_, atol=1e-4)
    np.testing.assert_allclose(m, gm.means_, atol=1e-4)
    # Relative on the diagonal, where the floor is (a 1e-3 floor against 1e-6 fails here).
    np.testing.assert_allclose(
        np.diagonal(c, axis1=1, axis2=2), np.diagonal(gm.covariances_, axis1=1, axis2=2), rtol=0.05
    )
    np.testing.assert_allclose(c, gm.covariances_, atol=1e-5)
    lp = np.asarray(teacher.component_scores(type(state.gmm)(w, m, c)))
    np.testing.assert_allclose(lp, np.maximum(gm.covariances_[:, -2, -1], 0.0), atol=1e-6)
