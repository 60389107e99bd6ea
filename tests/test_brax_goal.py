"""Brax goal maze (envs/brax_goal.py): spaces, valid positions, goal and start protocols
and rendering (fast: nothing here compiles Brax), then the physics (slow: one jitted,
vmapped Brax rollout, compiled once, about a minute on 2 busy cores): walls stop the
ball, the goal is reached round the wall, vmapped tasks are independent, and PPO trains.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.config import load_yaml, parse_config
from acl.core.errors import ConfigError
from envs.base import GoalTaskEnv, StartTaskEnv
from envs.brax_goal import RADIUS, WALL_HALF_THICKNESS, BraxGoal, box_distance
from envs.registry import make_env
from tests.conftest import tiny_config

HORIZON = 50
"""Steps of every physics rollout, and the fixture env's time limit."""
BATCH = 16
"""Every rollout batch is padded to this many rows, so `rollout` compiles once."""
UP, RIGHT, UP_RIGHT = (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)
WALL_Y = 0.5 - WALL_HALF_THICKNESS
"""The inner wall's lower face (u_maze: the box [-0.01, 0.71] x [0.49, 0.51])."""
PENETRATION = 0.02
"""How far the ball may sink into a wall during a contact: spring contacts act once the
ball overlaps a wall, so at full speed (1 cm per physics step) it sinks ~1.5 cm."""
CONFIG = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "brax_goal_ppo.yaml"


@pytest.fixture(scope="module")
def env():
    return make_env("brax_goal", max_episode_steps=HORIZON)


# -- fast: no Brax compilation -------------------------------------------------------------


@pytest.mark.slow
def test_registered_goal_env_with_documented_spaces(env):
    assert isinstance(env, GoalTaskEnv) and isinstance(env, StartTaskEnv)
    assert env.name == "brax_goal" and env.terminates_on_goal
    assert env.observation_space().shape == (6,)
    action_space = env.action_space()
    assert action_space.shape == (2,) and action_space.dtype == jnp.float32
    np.testing.assert_array_equal(action_space.low, -1.0)
    np.testing.assert_array_equal(action_space.high, 1.0)
    assert bool(env.task_space.contains(env.task_space.default_task))
    assert env.return_bounds == (-float(HORIZON), 0.0)
    assert env.return_bounds[0] < env.success_threshold < env.return_bounds[1]
    params = env.default_params()
    np.testing.assert_allclose(params.start, [0.15, 0.25])
    np.testing.assert_allclose(params.goal, [0.15, 0.75])
    obs, state = jax.jit(env.reset)(jax.random.PRNGKey(0), params)
    np.testing.assert_allclose(obs, [0.15, 0.25, 0.0, 0.0, 0.15, 0.75])
    assert obs.dtype == jnp.float32 and bool(env.observation_space().contains(obs))
    assert int(state.time) == 0
    np.testing.assert_allclose(env.start_from_state(state), params.start)


def test_bad_static_config_is_a_config_error():
    with pytest.raises(ConfigError, match="did you mean 'u_maze'"):
        make_env("brax_goal", layout="umaze")
    for bad in (RADIUS / 2, True, 0.5):
        with pytest.raises(ConfigError, match="goal_tolerance"):
            BraxGoal(goal_tolerance=bad)
    with pytest.raises(ConfigError, match="max_episode_steps"):
        make_env("brax_goal", max_episode_steps=0)
    with pytest.raises(ConfigError, match="pipeline"):
        make_env("brax_goal", pipeline="springs")
    with pytest.raises(ConfigError, match="accepted"):
        make_env("brax_goal", walls=[])
    with pytest.raises(ConfigError, match="solid blocks"):
        make_env("brax_goal", layout="florensa_u")


def test_valid_positions_keep_the_tolerance_from_every_wall_box(env):
    tol = env.goal_tolerance
    points = jnp.array(
        [
            [0.15, 0.25],  # free
            [0.15, 0.5],  # inside the inner wall
            [0.15, WALL_Y - tol],  # exactly the tolerance below the wall
            [0.15, WALL_Y - tol + 0.005],  # a bit closer
            [0.85, 0.5],  # past the wall's tip (0.71): free
            [0.71 + tol - 0.005, 0.5],  # too close to the tip
            [0.5, 0.01 + tol],  # exactly the tolerance above the bottom side's box
            [0.5, 1.2],  # outside the square
        ]
    )
    grid = env.goal_grid(10)

    @jax.jit
    def check(points, grid):  # one compile: eager calls dispatch many small ops
        samples = env.sample_valid_goals(jax.random.PRNGKey(0), 500)
        valid = env.is_valid_position
        return valid(points), valid(grid), samples, valid(samples)

    valid, grid_valid, samples, samples_valid = jax.device_get(check(points, grid))
    np.testing.assert_array_equal(valid, [1, 0, 1, 0, 1, 0, 1, 0])
    assert 0 < len(grid) < 100 and grid_valid.all()
    assert np.all(box_distance(grid, env.boxes.astype(np.float64)).min(-1) >= tol - 1e-6)
    assert samples.shape == (500, 2) and samples_valid.all()
    # Both arms of the U are sampled.
    assert np.any(samples[:, 1] < 0.5) and np.any(samples[:, 1] > 0.5)


def test_task_to_params_keeps_valid_points_and_snaps_invalid_ones(env):
    tasks = jnp.array([[0.2, 0.2, 0.8, 0.8], [0.15, 0.5, 0.0, 0.0], [0.3, 0.3, 0.3, 0.3]])
    params = jax.jit(env.params_for_tasks)(tasks)
    np.testing.assert_allclose(params.start[0], [0.2, 0.2])
    np.testing.assert_allclose(params.goal[0], [0.8, 0.8])
    np.testing.assert_allclose(params.start[2], params.goal[2])
    for points in (params.start, params.goal):
        assert bool(jnp.all(jax.jit(env.is_valid_position)(points)))
    # Snapped to a nearby valid point: below or above the wall, near the bottom-left corner.
    assert abs(float(params.start[1, 1]) - 0.5) < 0.1
    assert float(jnp.linalg.norm(params.goal[1])) < 0.15


def test_goal_and_start_protocols(env):
    @jax.jit
    def protocol(obs, tasks, point):
        """One compile for every protocol call (eager calls dispatch many small ops)."""
        achieved, desired = env.achieved_goal(obs), env.desired_goal(obs)
        relabelled = env.with_goal(obs, achieved)
        return dict(
            achieved=achieved,
            desired=desired,
            reached=env.goal_reached(achieved, desired),
            reward=env.compute_reward(achieved, desired),
            relabelled=relabelled,
            relabelled_reward=env.compute_reward(
                env.achieved_goal(relabelled), env.desired_goal(relabelled)
            ),
            restored=env.with_goal(relabelled, desired),
            goal=env.goal_from_task(tasks),
            with_goal=env.task_with_goal(tasks, point),  # broadcasts over the batch
            round_trip=env.goal_from_task(env.task_with_goal(tasks, tasks[:, :2])),
            with_start=env.task_with_start(tasks, point),
            goal_start=jax.vmap(env.goal_start)(tasks),
        )

    obs = jnp.array([[0.2, 0.3, 0.5, -0.5, 0.2, 0.34], [0.2, 0.3, 0.0, 0.0, 0.2, 0.36]])
    # The second task's goal (0.15, 0.5) is inside the inner wall.
    tasks = jnp.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.15, 0.5]])
    point = jnp.array([0.9, 0.1])
    out = SimpleNamespace(**jax.device_get(protocol(obs, tasks, point)))
    np.testing.assert_allclose(out.achieved, [[0.2, 0.3]] * 2)
    np.testing.assert_allclose(out.desired, [[0.2, 0.34], [0.2, 0.36]])
    # Within the tolerance (0.05, inclusive) is reached, beyond it not.
    np.testing.assert_array_equal(out.reached, [True, False])
    np.testing.assert_array_equal(out.reward, [0.0, -1.0])
    np.testing.assert_allclose(out.relabelled[:, :4], obs[:, :4])
    np.testing.assert_array_equal(out.relabelled_reward, 0.0)
    np.testing.assert_allclose(out.restored, obs)
    np.testing.assert_allclose(out.goal, tasks[:, 2:])
    np.testing.assert_allclose(out.with_goal, [[0.1, 0.2, 0.9, 0.1], [0.5, 0.6, 0.9, 0.1]])
    np.testing.assert_allclose(out.round_trip, tasks[:, :2])
    np.testing.assert_allclose(out.with_start, [[0.9, 0.1, 0.3, 0.4], [0.9, 0.1, 0.15, 0.5]])
    # goal_start: the goal, mapped to a valid position.
    np.testing.assert_allclose(out.goal_start[0], [0.3, 0.4])
    assert abs(out.goal_start[1, 1] - 0.5) < 0.1
    assert bool(np.all(jax.jit(env.is_valid_position)(out.goal_start)))


def test_render_draws_walls_goal_and_ball(env):
    params = env.default_params()
    _, state = env.reset(jax.random.PRNGKey(0), params)
    image = env.render(state, params, pixels=100)
    assert image.shape == (100, 100, 3) and image.dtype == np.uint8

    def pixel(x, y):
        return tuple(image[int((1 - y) * 100), int(x * 100)])

    assert pixel(0.3, 0.5) == (0, 0, 0)  # inner wall
    assert pixel(0.995, 0.3) == (0, 0, 0)  # east side
    assert pixel(0.15, 0.77) == (60, 180, 75)  # goal disc
    assert pixel(0.15 + 0.02, 0.25) == (30, 60, 200)  # the ball (radius 0.03)
    assert pixel(0.85, 0.5) == (255, 255, 255)  # free, past the wall's tip


def test_ppo_config_parses_with_continuous_actions():
    config = parse_config(load_yaml(CONFIG))
    assert config.env.name == "brax_goal" and config.agent.name == "ppo"
    env = make_env(config.env.name, **config.env.kwargs)
    assert env.action_space().shape == (2,)


# -- slow: the Brax physics ----------------------------------------------------------------


@pytest.fixture(scope="module")
def physics(env):
    def rollout(task, actions):
        """task [4], actions [T, 2] -> first obs [6], then obs [T, 6], reward,
        terminated, truncated [T] (steps go on after the episode ends: no reset)."""
        params = env.task_to_params(task, env.default_params())
        obs, state = env.reset(jax.random.PRNGKey(0), params)

        def body(state, action):
            obs, state, reward, terminated, truncated, _ = env.step(
                jax.random.PRNGKey(1), state, action, params
            )
            return state, (obs, reward, terminated, truncated)

        _, out = jax.lax.scan(body, state, actions)
        return (obs,) + out

    batched = jax.jit(jax.vmap(rollout))

    def run(tasks, actions):
        """tasks [B, 4], actions: B rows, each [<= HORIZON, 2] or a list of (action,
        repeats) pieces, padded with zero force; B <= BATCH. Numpy arrays with leading B."""
        num = len(tasks)
        padded_tasks = np.tile(np.asarray(env.task_space.default), (BATCH, 1))
        padded_tasks[:num] = np.asarray(tasks)
        padded = np.zeros((BATCH, HORIZON, 2), np.float32)
        for i, row in enumerate(actions):
            if not isinstance(row, np.ndarray):
                row = np.concatenate([np.tile(a, (n, 1)) for a, n in row])[:HORIZON]
            padded[i, : len(row)] = row
        out = batched(jnp.asarray(padded_tasks, jnp.float32), jnp.asarray(padded))
        return jax.tree.map(lambda x: np.asarray(x)[:num], out)

    return SimpleNamespace(run=run)


@pytest.mark.slow
def test_step_matches_the_spaces_and_scores_from_the_observation(env, physics):
    rng = np.random.default_rng(0)
    starts = np.asarray(env.sample_valid_goals(jax.random.PRNGKey(2), BATCH))
    goals = np.asarray(env.sample_valid_goals(jax.random.PRNGKey(3), BATCH))
    # Random directions at full force, each held for 10 steps: fast runs into walls.
    blocks = rng.uniform(-1, 1, (BATCH, HORIZON // 10, 2))
    blocks /= np.abs(blocks).max(-1, keepdims=True)
    actions = np.repeat(blocks, 10, axis=1).astype(np.float32)
    first, obs, reward, terminated, truncated = physics.run(
        np.concatenate([starts, goals], -1), list(actions)
    )
    space = env.observation_space()
    assert obs.dtype == np.float32 and reward.dtype == np.float32
    assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
    assert bool(space.contains(jnp.asarray(obs))) and bool(space.contains(jnp.asarray(first)))
    np.testing.assert_array_equal(obs[..., 4:], np.broadcast_to(goals[:, None], obs[..., 4:].shape))
    # Rewards and terminations are those of the goal protocol on the observation (HER).
    achieved, desired = env.achieved_goal(obs), env.desired_goal(obs)
    np.testing.assert_array_equal(reward, np.asarray(env.compute_reward(achieved, desired)))
    np.testing.assert_array_equal(terminated, np.asarray(env.goal_reached(achieved, desired)))
    # The ball never sinks into a wall by more than the contact tolerance, and passes
    # from one arm of the U to the other only round the inner wall's tip (x = 0.71).
    position = np.concatenate([first[:, None, :2], obs[..., :2]], axis=1)
    clearance = box_distance(position.astype(np.float64), env.boxes.astype(np.float64))
    assert clearance.min() >= RADIUS - PENETRATION, clearance.min()
    side = position[..., 1] > 0.5
    switched = side[:, 1:] != side[:, :-1]
    assert np.all(position[:, 1:, 0][switched] > 0.71) and np.all(
        position[:, :-1, 0][switched] > 0.71
    )
    # It moved: full force for 10 steps covers more than a few cm unless walled in.
    assert np.median(np.linalg.norm(obs[:, 9, :2] - first[:, :2], axis=-1)) > 0.1


@pytest.mark.slow
def test_walls_stop_the_ball_on_the_near_side(physics):
    tasks = [
        [0.15, 0.25, 0.85, 0.85],  # up into the inner wall
        [0.5, 0.25, 0.15, 0.75],  # right into the east side
        [0.15, 0.25, 0.85, 0.85],  # diagonally into the inner wall: slides along it
    ]
    actions = [[(UP, HORIZON)], [(RIGHT, HORIZON)], [(UP_RIGHT, 15)]]
    _, obs, *_ = physics.run(tasks, actions)
    y = obs[0, :, 1]
    assert y.max() < WALL_Y - RADIUS + PENETRATION, y.max()
    np.testing.assert_allclose(y[-10:], WALL_Y - RADIUS, atol=2e-3)  # resting on the wall
    np.testing.assert_allclose(obs[0, -10:, 3], 0.0, atol=0.05)  # and at rest
    np.testing.assert_allclose(obs[0, :, 0], 0.15, atol=1e-5)  # no sideways drift
    x = obs[1, :, 0]
    assert x.max() < 0.99 - RADIUS + PENETRATION and x[-1] > 0.99 - RADIUS - 2e-3
    # The diagonal push keeps the ball under the wall while x grows (frictionless slide),
    # then the ball stops (no force from step 15 on, velocity damped).
    assert obs[2, :15, 1].max() < WALL_Y - RADIUS + PENETRATION
    assert obs[2, 14, 0] > 0.45 and np.abs(obs[2, -1, 2:4]).max() < 0.01


@pytest.mark.slow
def test_the_goal_is_reached_round_the_wall_and_not_through_it(env, physics):
    # Right to the east side, then up along it: the ball passes the goal at (0.93, 0.75)
    # on the far side of the inner wall. A goal straight up is never reached.
    tasks = [[0.15, 0.25, 0.93, 0.75], [0.85, 0.25, 0.85, 0.35], [0.15, 0.25, 0.15, 0.75]]
    actions = [[(RIGHT, 20), (UP, HORIZON)], [(UP, HORIZON)], [(UP, HORIZON)]]
    _, obs, reward, terminated, truncated = physics.run(tasks, actions)
    for row in (0, 1):
        first = int(np.argmax(terminated[row]))
        assert terminated[row, first] and not truncated[row, : first + 1].any()
        distance = np.linalg.norm(obs[row, first, :2] - obs[row, first, 4:])
        assert distance <= env.goal_tolerance
        np.testing.assert_array_equal(reward[row, :first], -1.0)
        assert reward[row, first] == 0.0
        assert reward[row, : first + 1].sum() > env.success_threshold  # success
    assert int(np.argmax(terminated[0])) > 20  # round the wall: after the push right
    assert int(np.argmax(terminated[1])) < 10  # a 0.1 straight line
    assert not terminated[2].any() and (reward[2] == -1.0).all()
    np.testing.assert_array_equal(truncated[2], np.arange(1, HORIZON + 1) == HORIZON)
    assert reward[2].sum() < env.success_threshold


@pytest.mark.slow
def test_vmap_rows_are_independent_tasks(physics):
    task_a, task_b = [0.2, 0.2, 0.8, 0.9], [0.8, 0.8, 0.2, 0.2]
    actions_a, actions_b = [(UP_RIGHT, HORIZON)], [(RIGHT, 10), (UP, HORIZON)]
    _, ab, *_ = physics.run([task_a, task_b], [actions_a, actions_b])
    _, ba, *_ = physics.run([task_b, task_a, task_a], [actions_b, actions_a, actions_b])
    np.testing.assert_allclose(ab[0], ba[1], atol=1e-6)
    np.testing.assert_allclose(ab[1], ba[0], atol=1e-6)
    # Different tasks (or actions) give different trajectories.
    assert not np.allclose(ba[1, :, :4], ba[2, :, :4])
    assert not np.allclose(ab[0, :, :2], ab[1, :, :2])


@pytest.mark.slow
def test_ppo_trains_on_it():
    from acl.build import make_train

    config = tiny_config(
        env={"name": "brax_goal", "max_episode_steps": 20},
        num_seeds=1,
        loop={"num_envs": 4, "num_steps": 16, "total_env_steps": 256, "eval_every": 128},
    )
    trainer = make_train(config)
    _, metrics = jax.jit(jax.vmap(trainer.train))(trainer.seed_keys())
    metrics = jax.device_get(metrics)
    assert np.all(np.isfinite(np.asarray(metrics.loss)))
    returns = np.asarray(metrics.eval_mean_return)
    assert np.all((returns >= -20.0) & (returns <= 0.0)), returns
    assert int(np.asarray(metrics.episodes).sum()) > 0
