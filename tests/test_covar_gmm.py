"""Covar-GMM: conformance, relative time, the fit branch under vmap, and sampling where
returns rise with time."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.errors import ConfigError
from acl.spaces import Box
from acl.teachers import TEACHERS
from acl.teachers.covar_gmm import make_covar_gmm
from tests.teacher_harness import check_teacher, fit_once_without_random_tasks
from tests.test_alp_gmm import contains_cond, feedback

SMALL = dict(fit_rate=64, fit_every=3, k_max=3, em_iterations=10)
UNIT = Box((0.0, 0.0), (1.0, 1.0))


def test_conforms_to_harness():
    check_teacher(lambda space: make_covar_gmm(space, **SMALL))


def test_presets_and_errors():
    t = TEACHERS.get("covar_gmm")(task_space=UNIT, preset="teachdeeprl")
    assert (t.fit_rate, t.k_min, t.k_max, t.random_task_ratio, t.criterion) == (
        250,
        2,
        10,
        0.2,
        "aic",
    )
    t = make_covar_gmm(UNIT)
    assert (t.k_min, t.k_max, t.random_task_ratio) == (2, 14, 0.1)
    assert {"preset", "return_bounds", "absolute_lp"} <= make_covar_gmm.config_keys
    with pytest.raises(ConfigError, match="teacher.preset"):
        make_covar_gmm(UNIT, preset="nope")


def test_fit_is_a_real_cond_under_vmap():
    teacher = make_covar_gmm(UNIT, **SMALL)
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    states = jax.vmap(teacher.init, in_axes=(0, None))(keys, teacher.default_params())
    tasks = jnp.zeros((3, 8, 2))
    fb = jax.vmap(lambda t: feedback(t, jnp.zeros(8)))(tasks)
    vupdate = jax.vmap(teacher.update, in_axes=(0, 0, 0, None))
    assert contains_cond(jax.make_jaxpr(vupdate)(states, tasks, fb, jnp.int32(0)).jaxpr)


def test_relative_time_follows_episode_order():
    teacher = make_covar_gmm(UNIT, fit_rate=8, fit_every=1000, k_max=3, em_iterations=5)
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    for step, valid in enumerate(([1, 0, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1])):
        t = jnp.full((4, 2), 0.5)
        state = teacher.update(state, t, feedback(t, jnp.zeros(4), valid), jnp.int32(step))
    assert int(state.episodes_seen) == 10
    # The ring holds episodes 2..9; relative times (index - 2) / 8.
    times = np.sort(np.asarray(teacher.fit_points(state)[:, -2]))
    np.testing.assert_allclose(times, np.arange(8) / 8)


def test_samples_concentrate_where_returns_rise():
    n = 400
    teacher = make_covar_gmm(UNIT, fit_rate=n, fit_every=1, k_max=6)
    rng = np.random.default_rng(0)
    tasks = rng.uniform(size=(n, 2)).astype(np.float32)
    time = np.arange(n) / n
    # Left half: returns rise with time (progress); right half: returns fall (forgetting).
    returns = np.where(tasks[:, 0] < 0.5, time, 1.0 - time) + rng.normal(0, 0.05, n)
    state, left = fit_once_without_random_tasks(teacher, tasks, returns)
    assert bool(state.has_fit)
    assert left > 0.85, left
    snap = teacher.snapshot(state)
    assert set(snap) >= {"weights", "means", "covariances", "lp", "active"}
