"""Every registered teacher through the shared harness (those built on an env, in their own
files), plus baseline behaviour."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.core.errors import ConfigError
from acl.teachers import TEACHERS
from acl.teachers.base import RunContext
from acl.teachers.random import FixedTeacher, RandomTeacher
from tests.teacher_harness import SPACE, check_teacher, harness_teacher, jitted, random_feedback

# Teachers built on the run's env (levels, goals, starts, a guide); their own test files
# run them through the harness with a suitable env.
NEEDS_ENV = {
    "dr",
    "plr",
    "robust_plr",
    "accel",
    "paired",
    "reverse",
    "uniform_start",
    "svgg",
    "random_goal",
    "jsrl",
    "sfl",
}


PERIODIC_WORK_DONE = {
    "adr": lambda state: int(state.expansions.sum()) > 0,
    "alp_gmm": lambda state: bool(state.has_fit),
    "covar_gmm": lambda state: bool(state.has_fit),
    "goal_gan": lambda state: int(state.gan_updates) > 0,
    "riac": lambda state: int(state.num_splits) > 0,
    "subspace": lambda state: bool(state.inner.has_fit),
    "spdl": lambda state: int(state.iterations) > 0,
    "setter_solver": lambda state: int(state.trainings) > 0,
}


HARNESS_SLOW = {"alp_gmm", "covar_gmm", "goal_gan", "riac", "setter_solver", "spdl", "subspace"}
"""Teachers whose harness run compiles for over 10 s on 2 cores (fits, splits, networks):
checked by `make test-slow`."""


# The one harness run of each teacher that needs no env (each compile costs seconds).
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow if n in HARNESS_SLOW else ())
        for n in TEACHERS.names()
        if n not in NEEDS_ENV
    ],
)
def test_teacher_conforms(name):
    # HARNESS_SETTINGS: keys under which a teacher fits or splits within the rounds.
    state = check_teacher(lambda space: harness_teacher(name, space))
    assert PERIODIC_WORK_DONE.get(name, lambda _: True)(state), f"{name} never fit or split"


@pytest.mark.parametrize("name", sorted(NEEDS_ENV))
def test_env_teachers_say_they_need_an_env(name):
    # Keeps NEEDS_ENV honest: a teacher listed here really cannot be built without one.
    with pytest.raises(ConfigError, match="env"):
        TEACHERS.get(name)(task_space=SPACE, context=RunContext())


def test_random_covers_the_box_uniformly():
    teacher = RandomTeacher(SPACE)
    _, sample, _ = jitted(teacher)
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    _, tasks, _ = sample(state, jax.random.PRNGKey(1), 20_000)
    tasks = np.asarray(tasks)
    width = np.asarray(SPACE.high) - np.asarray(SPACE.low)
    unit = (tasks - np.asarray(SPACE.low)) / width
    np.testing.assert_allclose(unit.mean(0), 0.5, atol=0.01)
    np.testing.assert_allclose(unit.std(0), 1 / np.sqrt(12), rtol=0.03)


def test_fixed_always_hands_out_the_default_task():
    space = SPACE.replace(default=(0.5, 1.0, 12.0))
    teacher = FixedTeacher(space)
    _, sample, update = jitted(teacher)
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    state, tasks, _ = sample(state, jax.random.PRNGKey(1), 7)
    np.testing.assert_array_equal(np.asarray(tasks), np.tile([0.5, 1.0, 12.0], (7, 1)))
    feedback = random_feedback(jax.random.PRNGKey(2), tasks)
    state = update(state, jax.random.PRNGKey(3), tasks, feedback, jnp.int32(0))
    assert int(state.episodes_seen) == int(feedback.mask.sum())


def test_unknown_teacher_suggests_the_closest_name():
    with pytest.raises(ConfigError, match="did you mean 'random'"):
        TEACHERS.get("randon")


def test_compact_feedback_keeps_valid_records_in_order_and_counts_the_rest():
    from acl.core.types import Feedback, compact_feedback

    mask = np.array([False, True, False, True, True, False, True])
    feedback = Feedback(
        task=np.arange(7.0, dtype=np.float32)[:, None],
        episode_return=np.arange(7.0, dtype=np.float32) * 10,
        success=mask,
        length=np.arange(7, dtype=np.int32),
        mask=mask,
    )
    compact_feedback = jax.jit(compact_feedback, static_argnums=1)  # one compile, not per op
    compact, dropped = compact_feedback(feedback, 3)
    np.testing.assert_array_equal(compact.task[:, 0], [1.0, 3.0, 4.0])
    np.testing.assert_array_equal(compact.episode_return, [10.0, 30.0, 40.0])
    assert compact.mask.all() and int(dropped) == 1
    roomy, none_dropped = compact_feedback(feedback, 6)
    np.testing.assert_array_equal(roomy.mask, [True, True, True, True, False, False])
    assert int(none_dropped) == 0
