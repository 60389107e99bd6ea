"""The toy continuous bandit against the rules of teachDeepRL's `toy_env.py`."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import binned_statistic_dd

from acl.core.errors import ConfigError
from envs import make_env
from envs.toy_bandit import ToyBandit, ToyBanditState


@pytest.fixture(scope="module")
def bandit():
    env = ToyBandit()  # d = 2, 10 cubes per dimension
    env.jit_episode = jax.jit(env.episode)
    env.jit_episodes = jax.jit(env.episodes)
    return env


def centre(cube, n=10):
    """A task in the middle of cube `cube` (tuple of indices)."""
    return jnp.array([(i + 0.5) / n for i in cube], jnp.float32)


def with_competence(env, values: dict) -> ToyBanditState:
    """A student whose competence is `values[cube]` on the given cubes, 0 elsewhere."""
    comp = np.zeros((env.cubes_per_dim,) * env.num_dims, np.int32)
    for cube, value in values.items():
        comp[cube] = value
    return ToyBanditState(competence=jnp.asarray(comp.reshape(-1)))


def competence_grid(env, state):
    return np.asarray(state.competence).reshape((env.cubes_per_dim,) * env.num_dims)


def test_registered_with_its_interface():
    env = make_env("toy_bandit", num_dims=3, num_distractors=2, cubes_per_dim=4)
    assert isinstance(env, ToyBandit) and env.name == "toy_bandit"
    assert env.task_space.dim == 5 and env.task_space.low == (0.0,) * 5
    assert env.task_space.high == (1.0,) * 5
    assert env.success_threshold == 75 and env.return_bounds == (0.0, 1.0)
    state = env.init()
    assert state.competence.shape == (64,) and state.competence.dtype == jnp.int32
    for bad in (dict(num_dims=0), dict(num_distractors=-1), dict(cubes_per_dim=1.5)):
        with pytest.raises(ConfigError):
            ToyBandit(**bad)


def test_origin_cube_is_learnable_from_the_start(bandit):
    state, reward = bandit.jit_episode(bandit.init(), centre((0, 0)))
    assert float(reward) == pytest.approx(0.01)  # read after the increment
    assert competence_grid(bandit, state)[0, 0] == 1


@pytest.mark.parametrize("cube", [(5, 5), (1, 0), (0, 1), (1, 1), (9, 9)])
def test_other_cubes_are_locked_on_a_fresh_student(bandit, cube):
    state, reward = bandit.jit_episode(bandit.init(), centre(cube))
    assert float(reward) == 0.0
    assert int(state.competence.sum()) == 0


def test_competence_caps_at_100(bandit):
    tasks = jnp.tile(centre((0, 0)), (130, 1))
    state, rewards = bandit.jit_episodes(bandit.init(), tasks)
    assert competence_grid(bandit, state)[0, 0] == 100
    np.testing.assert_allclose(rewards[:100], np.arange(1, 101) / 100, rtol=1e-6)
    np.testing.assert_allclose(rewards[100:], 1.0)


def test_a_previous_neighbour_at_75_unlocks_a_cube(bandit):
    for cube in [(1, 0), (0, 1), (1, 1)]:  # previous neighbour (0, 0), diagonal included
        locked = with_competence(bandit, {(0, 0): 74})
        _, reward = bandit.jit_episode(locked, centre(cube))
        assert float(reward) == 0.0, cube
        unlocked = with_competence(bandit, {(0, 0): 75})  # the unlock test is >= 75
        state, reward = bandit.jit_episode(unlocked, centre(cube))
        assert float(reward) == pytest.approx(0.01), cube
        assert competence_grid(bandit, state)[cube] == 1
    # Deeper in the grid, any one previous neighbour suffices ...
    for neighbour in [(3, 4), (4, 3), (3, 3)]:
        state = with_competence(bandit, {neighbour: 80, (4, 4): 10})
        _, reward = bandit.jit_episode(state, centre((4, 4)))
        assert float(reward) == pytest.approx(0.11), neighbour
    # ... but not a later neighbour, nor a cube two steps back.
    for other in [(5, 4), (4, 5), (5, 5), (2, 4), (2, 2)]:
        state = with_competence(bandit, {other: 100, (4, 4): 10})
        _, reward = bandit.jit_episode(state, centre((4, 4)))
        assert float(reward) == pytest.approx(0.10), other  # unchanged competence / 100


def test_distractor_dimensions_do_not_matter():
    plain, distracted = ToyBandit(num_dims=2), ToyBandit(num_dims=2, num_distractors=3)
    key_a, key_b = jax.random.split(jax.random.PRNGKey(0))
    tasks = jax.random.uniform(key_a, (600, 2), maxval=0.2)
    noise = jax.random.uniform(key_b, (600, 3))
    state_a, rewards_a = jax.jit(plain.episodes)(plain.init(), tasks)
    state_b, rewards_b = jax.jit(distracted.episodes)(
        distracted.init(), jnp.concatenate([tasks, noise], axis=1)
    )
    np.testing.assert_array_equal(rewards_a, rewards_b)
    np.testing.assert_array_equal(state_a.competence, state_b.competence)
    grid = np.asarray(state_a.competence).reshape(10, 10)
    assert grid[0, 0] == 100 and grid[1, 1] > 0  # the sequence unlocked cubes beyond the origin


def test_pct_mastered_counts_cubes_strictly_above_75(bandit):
    state = with_competence(bandit, {(0, 0): 76, (0, 1): 75, (3, 7): 100, (9, 9): 99, (2, 2): 0})
    assert float(jax.jit(bandit.pct_mastered)(state)) == pytest.approx(3.0)
    assert float(bandit.pct_mastered(bandit.init())) == 0.0
    full = ToyBanditState(competence=jnp.full((100,), 100, jnp.int32))
    assert float(bandit.pct_mastered(full)) == pytest.approx(100.0)
    assert bool(bandit.is_success(jnp.float32(0.76)))
    assert not bool(bandit.is_success(jnp.float32(0.75)))


def test_jit_vmap_over_students_gives_per_student_results(bandit):
    origin, near, far = centre((0, 0)), centre((1, 1)), centre((8, 8))
    tasks = jnp.stack(
        [
            jnp.tile(origin, (90, 1)),  # student 0 masters the origin
            jnp.concatenate(
                [jnp.tile(origin, (80, 1)), jnp.tile(near, (10, 1))]
            ),  # and unlocks (1, 1)
            jnp.tile(far, (90, 1)),  # student 2 never learns anything
        ]
    )
    states = jax.vmap(lambda _: bandit.init())(jnp.arange(3))
    run = jax.jit(jax.vmap(bandit.episodes))
    states, rewards = run(states, tasks)
    assert rewards.shape == (3, 90) and states.competence.shape == (3, 100)
    grids = [competence_grid(bandit, states.replace(competence=c)) for c in states.competence]
    assert grids[0][0, 0] == 90 and grids[0].sum() == 90
    assert grids[1][0, 0] == 80 and grids[1][1, 1] == 10 and grids[1].sum() == 90
    assert grids[2].sum() == 0 and float(rewards[2].max()) == 0.0
    np.testing.assert_allclose(jax.vmap(bandit.pct_mastered)(states), [1.0, 1.0, 0.0])
    for i in range(3):  # each row equals the same student run alone
        alone, alone_rewards = bandit.jit_episodes(bandit.init(), tasks[i])
        np.testing.assert_array_equal(states.competence[i], alone.competence)
        np.testing.assert_array_equal(rewards[i], alone_rewards)


# An independent numpy implementation of the reference's rules (bins from scipy's
# binned_statistic_dd on the reference's edges), for a long random sequence.
def reference_run(tasks: np.ndarray, num_dims: int, n: int):
    edges = [np.arange(0, 1 + 1 / n, 1 / n)] * num_dims
    points = tasks[:, :num_dims].astype(np.float64)
    bins = (
        binned_statistic_dd(
            points, np.ones(len(points)), "count", bins=edges, expand_binnumbers=True
        ).binnumber.T
        - 1
    )  # [N, d] cube indices
    comp = np.zeros((n,) * num_dims)
    rewards, scores = [], []
    for cube in map(tuple, bins):
        learnable = all(i == 0 for i in cube)
        for prev in itertools.product(*[(i, max(0, i - 1)) for i in cube]):
            if prev != cube and comp[prev] >= 75:
                learnable = True
        if learnable:
            comp[cube] = min(comp[cube] + 1, 100)
        rewards.append(np.interp(comp[cube], (0, 100), (0, 1)))
        scores.append(100 * np.count_nonzero(comp > 75) / comp.size)
    return np.array(rewards), comp.reshape(-1), np.array(scores)


@pytest.mark.parametrize("num_dims, n, high", [(2, 10, 0.45), (3, 4, 0.8)])
def test_matches_the_reference_rules(num_dims, n, high):
    env = ToyBandit(num_dims=num_dims, cubes_per_dim=n)
    tasks = jax.random.uniform(jax.random.PRNGKey(1), (3000, num_dims), maxval=high)
    # Put some tasks exactly on cube edges and on 1.0 to pin the binning.
    edge_values = jnp.array([k / n for k in range(n + 1)], jnp.float32)
    tasks = tasks.at[::7, 0].set(jnp.resize(edge_values, tasks[::7, 0].shape))
    state, rewards = jax.jit(env.episodes)(env.init(), tasks)
    ref_rewards, ref_comp, ref_scores = reference_run(np.asarray(tasks), num_dims, n)
    np.testing.assert_allclose(rewards, ref_rewards, rtol=0, atol=1e-7)
    np.testing.assert_array_equal(state.competence, ref_comp)
    assert float(env.pct_mastered(state)) == pytest.approx(ref_scores[-1])
    assert ref_scores[-1] > 0  # the sequence was long enough to master cubes


def test_cube_index_matches_the_reference_binning_on_edges():
    for n in (3, 7, 10):
        env = ToyBandit(num_dims=1, cubes_per_dim=n)
        exact = np.array([k / n for k in range(n + 1)], np.float32)
        xs = np.concatenate(
            [
                exact,
                np.nextafter(exact, np.float32(-1)).clip(0, 1),
                np.nextafter(exact, np.float32(2)).clip(0, 1),
            ]
        ).astype(np.float32)
        ours = np.asarray(jax.vmap(env.cube_index)(jnp.asarray(xs)[:, None]))[:, 0]
        ref = (
            binned_statistic_dd(
                xs.astype(np.float64)[:, None],
                np.ones(len(xs)),
                "count",
                bins=[np.arange(0, 1 + 1 / n, 1 / n)],
                expand_binnumbers=True,
            ).binnumber.reshape(-1)
            - 1
        )
        np.testing.assert_array_equal(ours, ref)
        assert ours.max() == n - 1  # 1.0 falls in the last cube
