"""GoalGAN: GOID labels against a hand-computed set, the generator moving onto a toy
problem's GOID band, training only on its period, and pretraining on an expert's prior."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.core.spaces import Box
from acl.core.types import Feedback
from acl.teachers import TEACHERS
from acl.teachers.base import RunContext

UNIT_2D = Box(low=(0.0, 0.0), high=(1.0, 1.0), names=("x", "y"))
SMALL = dict(
    generator_layers=(32, 32),
    discriminator_layers=(32, 32),
    pending_size=128,
    label_buffer_size=256,
    old_buffer_size=64,
)


def make(space=UNIT_2D, **config):
    return TEACHERS.get("goal_gan")(task_space=space, context=RunContext(), **config)


def records(tasks, successes, mask=None) -> Feedback:
    tasks = jnp.asarray(tasks, jnp.float32)
    n = tasks.shape[0]
    return Feedback(
        task=tasks,
        episode_return=jnp.asarray(successes, jnp.float32),
        success=jnp.asarray(successes, bool),
        length=jnp.ones((n,), jnp.int32),
        mask=jnp.ones((n,), bool) if mask is None else jnp.asarray(mask, bool),
    )


@pytest.mark.slow
def test_labels_match_a_hand_computed_goid_set():
    teacher = make(
        Box(low=(-1.0, 0.0, 10.0), high=(1.0, 5.0, 20.0)),
        pretrain_iterations=0,
        update_every=1000,
        goid_lb=0.3,
        goid_ub=0.7,
        **SMALL,
    )
    params = teacher.default_params().replace(n_rollouts=jnp.int32(10))
    state = jax.jit(teacher.init)(jax.random.PRNGKey(0), params)
    # goal -> (episodes, successes); rates at and just outside [0.3, 0.7] over 10 episodes.
    goals = {
        (0.1, 1.0, 11.0): (10, 3),  # 0.3: GOID (bound included)
        (0.2, 1.0, 11.0): (10, 2),  # 0.2: no
        (0.3, 1.0, 11.0): (10, 7),  # 0.7: GOID (bound included)
        (0.4, 1.0, 11.0): (10, 8),  # 0.8: no, mastered: an old goal
        (0.5, 1.0, 11.0): (10, 5),  # 0.5: GOID
        (0.6, 1.0, 11.0): (12, 0),  # 0: no
        (0.7, 1.0, 11.0): (9, 5),  # 9 episodes: too few, not labelled
    }
    tasks, succ = [], []
    for goal, (episodes, successes) in goals.items():
        tasks += [goal] * episodes
        succ += [1] * successes + [0] * (episodes - successes)
    order = np.random.default_rng(0).permutation(len(tasks))
    tasks, succ = np.asarray(tasks)[order], np.asarray(succ)[order]
    half = len(tasks) // 2
    update = jax.jit(teacher.update)
    # Two updates (records accumulate across them), each with masked garbage among them.
    for part in (slice(0, half), slice(half, None)):
        part_tasks = np.concatenate([tasks[part], np.full((5, 3), np.nan)])
        part_succ = np.concatenate([succ[part], np.ones(5)])
        mask = np.arange(len(part_tasks)) < len(tasks[part])
        state = update(state, None, part_tasks, records(part_tasks, part_succ, mask), jnp.int32(0))

    labels = state.labels
    rows = np.asarray(labels.data)[np.asarray(labels.valid)]
    got = {
        tuple(np.round(np.asarray(teacher.from_unit(r[:3]), np.float64), 4).tolist()): bool(r[3])
        for r in rows
    }
    want = {
        (0.1, 1.0, 11.0): True,
        (0.2, 1.0, 11.0): False,
        (0.3, 1.0, 11.0): True,
        (0.4, 1.0, 11.0): False,
        (0.5, 1.0, 11.0): True,
        (0.6, 1.0, 11.0): False,
    }
    assert got == want
    assert int(state.labelled) == 6
    pending = np.asarray(state.pending_task)[np.asarray(state.pending_valid)]
    np.testing.assert_allclose(pending, [[0.7, 1.0, 11.0]], rtol=1e-6)
    assert int(state.pending_episodes[np.argmax(state.pending_valid)]) == 9
    old = np.asarray(state.old_goals.data)[np.asarray(state.old_goals.valid)]
    np.testing.assert_allclose(teacher.from_unit(old), [[0.4, 1.0, 11.0]], rtol=1e-5)


def in_band(x):
    return (x[..., 0] >= 0.8) & (x[..., 0] < 0.95)


def success_probability(x):
    """1 left of the band, 1/2 inside it (the GOID band: 15% of the square), 0 right."""
    return jnp.where(x[..., 0] < 0.8, 1.0, jnp.where(in_band(x), 0.5, 0.0))


@pytest.mark.slow
def test_generator_moves_onto_the_goid_band():
    teacher = make(
        gan_iterations=100,
        pretrain_iterations=300,
        pretrain_samples=512,
        update_size=32,
        update_every=1,
        **SMALL,
    )
    # Four episodes a goal: a band goal is GOID with probability 14/16.
    params = teacher.default_params().replace(n_rollouts=jnp.int32(4))
    state = jax.jit(teacher.init)(jax.random.PRNGKey(0), params)
    generate = jax.jit(functools.partial(teacher.generate, n=2000))

    def share(state):
        goals = np.clip(np.asarray(generate(state.gan.generator, jax.random.PRNGKey(7))), 0, 1)
        return float(np.mean(in_band(goals)))

    before = share(state)

    @jax.jit
    def round_(state, key):
        k_sample, k_success = jax.random.split(key)
        state, tasks, _ = teacher.sample(state, k_sample, 128)
        success = jax.random.uniform(k_success, (128,)) < success_probability(tasks)
        return teacher.update(state, None, tasks, records(tasks, success), jnp.int32(0))

    for i in range(40):
        state = round_(state, jax.random.PRNGKey(100 + i))
    after = share(state)
    assert int(state.gan_updates) > 0
    assert before <= 0.2, before
    assert after >= 0.5, (before, after)


@pytest.mark.slow
def test_gan_trains_only_on_its_period():
    teacher = make(gan_iterations=5, pretrain_iterations=0, update_size=1, update_every=3, **SMALL)
    # One episode a goal, every label GOID: each period has labels to train on.
    params = teacher.default_params().replace(
        n_rollouts=jnp.int32(1), goid_lb=jnp.float32(0.0), goid_ub=jnp.float32(1.0)
    )
    state = jax.jit(teacher.init)(jax.random.PRNGKey(0), params)
    sample = jax.jit(teacher.sample, static_argnums=2)
    update = jax.jit(teacher.update)
    counts = []
    for step in range(9):
        state, tasks, _ = sample(state, jax.random.PRNGKey(step), 16)
        success = np.arange(16) % 2 == 0
        state = update(state, None, tasks, records(tasks, success), jnp.int32(step))
        counts.append(int(state.gan_updates))
    assert counts == [0, 0, 1, 1, 1, 2, 2, 2, 3]
    assert int(state.labels.count) == 0  # emptied by the last training


def test_pretraining_on_the_prior_moves_the_generator_to_its_mean():
    space = Box(low=(0.0, -10.0), high=(2.0, 10.0))
    teacher = make(space, pretrain_iterations=300, pretrain_samples=512, **SMALL)
    params = teacher.default_params()
    mean, std = jnp.asarray([1.6, -6.0]), jnp.asarray([0.1, 1.0])
    init = jax.jit(teacher.init)
    generate = jax.jit(functools.partial(teacher.generate, n=2000))

    def generator_goals(p):
        state = init(jax.random.PRNGKey(0), p)
        return np.clip(np.asarray(generate(state.gan.generator, jax.random.PRNGKey(1))), 0, 1)

    prior = teacher.with_prior(params, mean, std, jnp.asarray(True))
    ignored = teacher.with_prior(params, mean, std, jnp.asarray(False))
    unit_mean = np.asarray([0.8, 0.2])
    with_prior, uniform = generator_goals(prior), generator_goals(ignored)
    # The prior (std 0.05 in the cube): the generator's goals gather at its mean.
    assert np.linalg.norm(with_prior.mean(0) - unit_mean) < 0.1, with_prior.mean(0)
    # Uniform goals (a GAN fits them loosely): spread wider, centred away from the prior.
    assert np.linalg.norm(uniform.mean(0) - unit_mean) > 0.3, uniform.mean(0)
    assert uniform.std(0).mean() > 2 * with_prior.std(0).mean()
