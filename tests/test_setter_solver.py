"""Setter-Solver: the judge learns feasibility, the setter hits the feasibility it is asked
for, training keeps its period, masked records stay out, the expert prior."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.core.spaces import Box
from acl.teachers.setter_solver import SetterSolverTeacher
from tests.teacher_harness import feedback, jitted

UNIT = Box(low=(0.0, 0.0), high=(1.0, 1.0), names=("x", "y"))
# Faster learning than TeachMyAgent's 3e-4, so that a test trains in seconds.
LEARNING = dict(setter_learning_rate=1e-3, judge_learning_rate=3e-3)
BATCH = 128


def toy_teacher() -> SetterSolverTeacher:
    return SetterSolverTeacher(UNIT, train_every=1, train_steps=50)


def toy_params(teacher):
    return teacher.default_params().replace(**{k: jnp.float32(v) for k, v in LEARNING.items()})


def records(tasks, success, mask=None):
    return feedback(tasks, success.astype(jnp.float32), mask).replace(success=success)


@pytest.mark.slow
def test_judge_learns_a_separable_feasibility():
    # Success iff x > 0.5: the judge, trained through update, classifies unseen tasks.
    teacher = toy_teacher()
    init, _, update = jitted(teacher)
    state = init(jax.random.PRNGKey(0), toy_params(teacher))
    key = jax.random.PRNGKey(1)
    for step in range(6):
        key, k_tasks, k_update = jax.random.split(key, 3)
        tasks = jax.random.uniform(k_tasks, (BATCH, 2))
        state = update(state, k_update, tasks, records(tasks, tasks[:, 0] > 0.5), step)
    held_out = jax.random.uniform(jax.random.PRNGKey(99), (4000, 2))
    predicted = np.asarray(teacher.judge.apply(state.judge, held_out)) > 0.0
    accuracy = np.mean(predicted == (np.asarray(held_out[:, 0]) > 0.5))
    assert accuracy >= 0.9, accuracy


@pytest.mark.slow
def test_setter_sets_tasks_of_the_asked_feasibility():
    # P(success | task) = x: asked for f, the setter's tasks must succeed at rate ~f.
    teacher = toy_teacher()
    init, sample, update = jitted(teacher)
    state = init(jax.random.PRNGKey(0), toy_params(teacher))
    key = jax.random.PRNGKey(1)
    for step in range(30):
        key, k_sample, k_uniform, k_success, k_update = jax.random.split(key, 5)
        _, tasks, _ = sample(state, k_sample, BATCH)
        # Half the setter's own tasks, half uniform ones, so the judge sees the whole box.
        tasks = jnp.concatenate([tasks[: BATCH // 2], jax.random.uniform(k_uniform, (64, 2))])
        success = jax.random.uniform(k_success, (BATCH,)) < tasks[:, 0]
        state = update(state, k_update, tasks, records(tasks, success), step)
    z = jax.random.normal(jax.random.PRNGKey(7), (4000, 2))
    set_tasks = jax.jit(teacher.set_tasks)
    for f in (0.2, 0.5, 0.8):
        unit, _ = set_tasks(state.setter, state.params, z, jnp.full((4000,), f))
        rate = float(jnp.mean(unit[:, 0]))  # the expected success rate of these tasks
        assert abs(rate - f) <= 0.1, (f, rate)


def small_teacher() -> SetterSolverTeacher:
    return SetterSolverTeacher(
        UNIT, train_every=3, train_steps=2, buffer_size=16, setter_batch=8, setter_hidden=8
    )


@pytest.mark.slow
def test_trains_only_on_its_period():
    teacher = small_teacher()
    init, sample, update = jitted(teacher)
    state = init(jax.random.PRNGKey(0), teacher.default_params())
    for step in range(7):
        _, tasks, _ = sample(state, jax.random.PRNGKey(step), 8)
        before = state
        state = update(
            state,
            jax.random.PRNGKey(50 + step),
            tasks,
            records(tasks, tasks[:, 0] > 0.5),
            step,
        )
        trained = step % 3 == 0
        assert int(state.trainings) == step // 3 + 1
        for net in ("setter", "judge"):
            pairs = zip(jax.tree.leaves(getattr(before, net)), jax.tree.leaves(getattr(state, net)))
            changed = any(not np.array_equal(old, new) for old, new in pairs)
            assert changed == trained, (net, step)


@pytest.mark.slow
def test_masked_records_stay_out_of_the_buffer():
    teacher = small_teacher()
    init, _, update = jitted(teacher)
    state = init(jax.random.PRNGKey(0), teacher.default_params())
    tasks = jax.random.uniform(jax.random.PRNGKey(1), (8, 2))
    mask = jnp.array([True, False, True, False, False, True, False, True])
    tasks = jnp.where(mask[:, None], tasks, jnp.nan)  # garbage in the masked records
    success = jnp.array([True, True, False, True, True, True, False, False])
    state = update(state, jax.random.PRNGKey(2), tasks, records(tasks, success, mask), 1)
    buffer = state.buffer
    assert int(buffer.count) == 4 and int(state.episodes_seen) == 4
    np.testing.assert_allclose(buffer.data[:4, :2], tasks[np.asarray(mask)])
    np.testing.assert_array_equal(buffer.data[:4, 2], success[np.asarray(mask)])
    assert np.isfinite(np.asarray(buffer.data)).all()


@pytest.mark.slow
@pytest.mark.parametrize("enabled", [True, False])
def test_expert_prior_is_the_initial_setter(enabled):
    space = Box(low=(-1.0, 0.0), high=(1.0, 10.0))
    teacher = SetterSolverTeacher(space, setter_hidden=8)
    params = teacher.with_prior(
        teacher.default_params(), jnp.array([0.5, 2.0]), jnp.array([0.1, 1.0]), enabled
    )
    state = teacher.init(jax.random.PRNGKey(0), params)
    _, tasks, _ = jax.jit(teacher.sample, static_argnums=2)(state, jax.random.PRNGKey(1), 8000)
    tasks = np.asarray(tasks)
    if enabled:
        # First order: the logit-normal's mean and std are the prior's within 3% of the range.
        np.testing.assert_array_less(np.abs(tasks.mean(0) - [0.5, 2.0]), [0.06, 0.3])
        np.testing.assert_allclose(tasks.std(0), [0.1, 1.0], rtol=0.25)
    else:
        # The identity flow: sigmoid(N(0, 1)) per coordinate, centred in the space.
        np.testing.assert_allclose(tasks.mean(0), [0.0, 5.0], atol=0.1)
