"""point_reach: the feasibility map, expensive infeasible tasks, the goal protocol, and a
test set that no challenge moves."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.build import make_train
from acl.config import parse_config
from acl.core.errors import ConfigError
from acl.teachers.challenge import ChallengedTeacher
from envs import make_env
from envs.scripted import episode_return


@pytest.fixture(scope="module")
def env():
    return make_env("point_reach")


def _greedy_returns(env, tasks: np.ndarray) -> np.ndarray:
    def greedy(ctrl, obs, params):
        return env.greedy_action(obs)

    params = env.params_for_tasks(jnp.asarray(tasks, jnp.float32))
    run = jax.vmap(lambda p: episode_return(env, greedy, jnp.zeros(1), p, jax.random.PRNGKey(0)))
    return np.asarray(jax.jit(run)(params))


def test_reachable_matches_the_greedy_controller(env):
    """The analytic boundary agrees with the scripted controller on both sides of it;
    within one step of it the coarse moves may fall short of the tolerance."""
    distances = np.linspace(0.0, 4.0, 81)
    bearings = (np.arange(32) + 0.5) * 2 * np.pi / 32
    grid = np.stack(np.meshgrid(distances, bearings, indexing="ij"), -1).reshape(-1, 2)
    solved = np.asarray(env.is_success(jnp.asarray(_greedy_returns(env, grid))))
    reachable = env.reachable(grid)
    near = env.reachable(grid + [env.step_size, 0]) != env.reachable(grid - [env.step_size, 0])
    np.testing.assert_array_equal(solved[~near], reachable[~near])
    assert (solved == reachable).mean() > 0.99
    assert 0.0 < solved.mean() < 1.0  # both sides of the boundary are on the grid


def test_default_space_is_feasible_and_the_unfeasible_space_mostly_not(env):
    rng = np.random.default_rng(0)
    low, high = np.asarray(env.task_space.low), np.asarray(env.task_space.high)
    assert env.reachable(rng.uniform(low, high, (4000, 2))).all()
    wide_low, wide_high = np.asarray(env.unfeasible_bounds.low), env.unfeasible_bounds.high
    share = 1.0 - env.reachable(rng.uniform(wide_low, wide_high, (20000, 2))).mean()
    assert 0.86 < share < 0.89
    trivial = rng.uniform(env.trivial_bounds.low, env.trivial_bounds.high, (20000, 2))
    assert 0.73 < (trivial[:, 0] <= 0).mean() < 0.77


def test_an_infeasible_task_costs_the_whole_time_limit(env):
    """Even heading straight for it, an episode on an infeasible goal runs every step to
    the time limit, is truncated (not terminated) and returns the lowest return."""
    task = jnp.asarray([3.0, 0.3])
    assert not env.reachable(np.asarray(task))
    params = env.task_to_params(task, None)
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    for t in range(env.max_episode_steps):
        obs, state, reward, terminated, truncated, _ = env.step(
            jax.random.PRNGKey(t), state, env.greedy_action(obs), params
        )
        assert reward == -1.0 and not terminated
        assert bool(truncated) == (t == env.max_episode_steps - 1)
    assert int(state.time) == env.max_episode_steps
    assert _greedy_returns(env, np.asarray([[3.0, 0.3]]))[0] == env.return_bounds[0]


def test_goal_on_the_start_is_met_by_staying(env):
    """Distance <= 0 (the trivial challenge's bulk) puts the goal on the start: staying
    put meets it on the first step; a move of 0.15 leaves the 0.1 disc."""
    params = env.task_to_params(jnp.asarray([-2.5, 1.0]), None)
    np.testing.assert_allclose(params.goal, 0.0)
    for action in range(9):
        obs, state = env.reset(jax.random.PRNGKey(0), params)
        _, _, reward, terminated, _, _ = env.step(jax.random.PRNGKey(0), state, action, params)
        assert bool(terminated) == (action == 0) and reward == (0.0 if action == 0 else -1.0)


def test_goal_protocol_round_trips(env):
    tasks = jnp.asarray([[1.5, 0.4], [0.7, 5.9]])
    goals = env.goal_from_task(tasks)
    np.testing.assert_allclose(env.task_with_goal(tasks, goals), tasks, atol=1e-5)
    obs, _ = env.reset(jax.random.PRNGKey(0), env.task_to_params(tasks[0], None))
    np.testing.assert_allclose(env.desired_goal(obs), goals[0], atol=1e-6)
    moved = env.with_goal(obs, goals[1])
    np.testing.assert_allclose(env.desired_goal(moved), goals[1], atol=1e-6)
    np.testing.assert_allclose(env.achieved_goal(moved), env.achieved_goal(obs))


def test_bad_static_config(env):
    with pytest.raises(ConfigError, match="step_size"):
        make_env("point_reach", step_size=0)
    with pytest.raises(ConfigError, match="max_episode_steps"):
        make_env("point_reach", max_episode_steps=-3)
    with pytest.raises(ConfigError, match="unfeasible_max_distance"):
        make_env("point_reach", unfeasible_max_distance=1.5)
    with pytest.raises(ConfigError, match="env.unfeasible_max_distance must be a finite"):
        make_env("point_reach", unfeasible_max_distance=float("inf"))


@pytest.mark.parametrize("env_name", ["point_reach", "cartpole"])
def test_the_test_set_is_the_same_under_every_challenge(env_name):
    """TeachMyAgent's protocol: challenges change what the teacher may hand out, never
    the test set, which stays on the env's default space."""
    sets = []
    for challenge in ("", "default", "unfeasible", "trivial", "rugged", "forgetting"):
        config = parse_config(
            {"env": env_name, "teacher": "random", "challenge": {"name": challenge}}
        )
        trainer = make_train(config)
        assert isinstance(trainer.teacher, ChallengedTeacher) == bool(challenge)
        sets.append(trainer.evaluation.test_tasks)
    for tasks in sets[1:]:
        np.testing.assert_array_equal(tasks, sets[0])
    env = make_env(env_name)
    assert np.all(env.task_space.contains(jnp.asarray(sets[0])))


@pytest.mark.parametrize(
    "section, match",
    [
        ({"challenge": {"name": "unfeasable"}}, "challenge.name must be one of"),
        ({"challenge": {"name": "students"}}, "experiments.benchmark"),
        ({"challenge": {"expert": "high"}}, "needs a challenge.name"),
        ({"challenge": {"name": "forgetting", "forgetting_period": 1.5}}, "forgetting_period"),
        ({"challenge": {"name": "default"}, "loop": {"reinit_every": 1000}}, "reinit_every"),
    ],
)
def test_challenge_config_errors(section, match):
    with pytest.raises(ConfigError, match=match):
        parse_config({"env": "point_reach", **section})


@pytest.mark.parametrize(
    "box, match",
    [
        ({"task_low": [1.8]}, "list of 2 finite numbers"),
        ({"task_low": [1.8, "x"]}, "list of 2 finite numbers"),
        ({"task_high": [3.0, 1.0]}, "inside the env's task space"),
        ({"task_low": [1.8, 2.0], "task_high": [1.0, 3.0]}, "low must be < high"),
        ({"task_low": [1.8, 0.0], "test_set": "x"}, "exclude each other"),
    ],
)
def test_test_box_errors(box, match):
    config = parse_config({"env": "point_reach", "eval": box})
    with pytest.raises(ConfigError, match=match):
        make_train(config)


def test_test_box_sets_the_grid():
    config = parse_config({"env": "point_reach", "eval": {"task_low": [1.8, 0.0]}})
    tasks = make_train(config).evaluation.test_tasks
    assert tasks.shape == (100, 2)
    np.testing.assert_allclose(np.unique(tasks[:, 0]), 1.81 + 0.02 * np.arange(10), atol=1e-5)
