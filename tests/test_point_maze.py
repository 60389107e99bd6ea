"""Point maze (envs/point_maze.py): env contract, segment walls that stop the point,
goal reward and termination, HER protocol, valid-position mapping and goal helpers.

Every rollout goes through one jitted, vmapped `rollout` (a scan over fixed actions).
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.core.errors import ConfigError
from envs.base import GoalTaskEnv
from envs.goal_maze import GoalMaze
from envs.point_maze import SKIN, PointMaze
from envs.registry import make_env

STAY, RIGHT, UP_RIGHT, UP, UP_LEFT, LEFT, DOWN_LEFT, DOWN, DOWN_RIGHT = range(9)
HORIZON = 40
BATCH = 32
"""Every rollout batch is padded to this many rows, so `rollout` compiles once."""
NUM_SAMPLES = 2000
"""Every call of the jitted sample_valid_goals draws this many (one compile)."""


@pytest.fixture(scope="module")
def maze():
    env = make_env("point_maze")

    def rollout(task, actions):
        """task [4], actions [T] -> obs [T, 4], reward, terminated, truncated [T]."""
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
        """tasks [B, 4], actions: B rows of up to HORIZON actions (padded with STAY):
        first obs [B, 4], then obs, reward, terminated, truncated [B, HORIZON, ...]."""
        num = len(tasks)
        padded_tasks = np.tile(np.asarray(env.task_space.default), (BATCH, 1))
        padded_tasks[:num] = np.asarray(tasks)
        padded = np.full((BATCH, HORIZON), STAY, np.int32)
        for i, row in enumerate(actions):
            padded[i, : len(row)] = np.asarray(row)
        out = batched(jnp.asarray(padded_tasks, jnp.float32), jnp.asarray(padded))
        return jax.tree.map(lambda x: x[:num], out)

    def protocol(obs):
        """obs [..., 4] -> (reward, reached, relabelled obs, relabelled reward, restored obs)."""
        achieved, desired = env.achieved_goal(obs), env.desired_goal(obs)
        relabelled = env.with_goal(obs, achieved)
        return (
            env.compute_reward(achieved, desired),
            env.goal_reached(achieved, desired),
            relabelled,
            env.compute_reward(env.achieved_goal(relabelled), env.desired_goal(relabelled)),
            env.with_goal(relabelled, desired),
        )

    # Jitted once each: eager vmaps of these dispatch many small ops.
    return SimpleNamespace(
        protocol=jax.jit(protocol),
        env=env,
        run=run,
        is_valid=jax.jit(env.is_valid_position),
        params_for_tasks=jax.jit(env.params_for_tasks),
        valid_position=jax.jit(env.valid_position),
        sample=jax.jit(env.sample_valid_goals, static_argnums=1),
    )


def test_registered_goal_env_with_documented_spaces(maze):
    env = maze.env
    assert isinstance(env, GoalTaskEnv) and env.name == "point_maze"
    assert env.observation_space().shape == (4,) and env.action_space().n == 9
    assert bool(env.task_space.contains(env.task_space.default_task))
    assert env.return_bounds[0] < env.success_threshold < env.return_bounds[1]
    params = env.default_params()
    np.testing.assert_allclose(params.start, [0.15, 0.25])
    np.testing.assert_allclose(params.goal, [0.15, 0.75])
    obs, state = jax.jit(env.reset)(jax.random.PRNGKey(0), params)
    assert obs.dtype == jnp.float32 and bool(env.observation_space().contains(obs))
    obs, state, reward, terminated, truncated, _ = jax.jit(env.step)(
        jax.random.PRNGKey(0), state, jnp.int32(UP_RIGHT), params
    )
    step = 0.05 / np.sqrt(2)
    np.testing.assert_allclose(state.position, [0.15 + step, 0.25 + step], rtol=1e-6)
    assert reward.dtype == jnp.float32 and float(reward) == -1.0
    assert terminated.dtype == jnp.bool_ and not bool(terminated | truncated)


def test_bad_static_config_is_a_config_error():
    with pytest.raises(ConfigError, match="did you mean 'u_maze'"):
        make_env("point_maze", layout="umaze")
    with pytest.raises(ConfigError, match="step_size"):
        PointMaze(step_size=0.0)
    with pytest.raises(ConfigError, match="goal_tolerance"):
        PointMaze(goal_tolerance=True)
    with pytest.raises(ConfigError, match="length 0"):
        PointMaze(walls=[((0.2, 0.2), (0.2, 0.2))])
    with pytest.raises(ConfigError, match="segments"):
        PointMaze(walls=[(0.2, 0.3, 0.4)])
    with pytest.raises(ConfigError, match="no valid position"):
        PointMaze(walls=[((x, 0.0), (x, 1.0)) for x in np.linspace(0.025, 0.975, 20)])


def test_walls_stop_the_point_before_the_segment(maze):
    # Straight up from (0.15, 0.25) towards the inner wall at y = 0.5: four free steps
    # to 0.45, then the fifth stops SKIN short of the wall, and further moves stay.
    # Straight right from (0.5, 0.25): stops SKIN short of the east side x = 1.
    # Left along the wall's own line from (0.85, 0.5): stops at the wall's tip x = 0.7,
    # then may go round it.
    tasks = [[0.15, 0.25, 0.85, 0.75], [0.5, 0.25, 0.15, 0.75], [0.85, 0.5, 0.15, 0.75]]
    actions = [[UP] * 8, [RIGHT] * 12, [LEFT] * 6 + [DOWN]]
    _, obs, reward, terminated, _ = maze.run(tasks, actions)
    x_tip = np.asarray(obs[2, 2:6, 0])
    assert np.all((x_tip >= 0.7 - 1e-6) & (x_tip <= 0.7 + SKIN + 1e-6)), x_tip
    np.testing.assert_allclose(obs[2, :6, 1], 0.5)
    np.testing.assert_allclose(obs[2, 6, :2], [x_tip[-1], 0.45], atol=1e-6)
    y = np.asarray(obs[0, :8, 1])
    np.testing.assert_allclose(y[:4], [0.3, 0.35, 0.4, 0.45], rtol=1e-5)
    np.testing.assert_allclose(y[4:], 0.5 - SKIN, atol=1e-6)
    np.testing.assert_allclose(obs[0, :8, 0], 0.15, rtol=1e-6)
    np.testing.assert_allclose(obs[1, 9:12, 0], 1.0 - SKIN, atol=1e-6)
    assert not bool(terminated.any()) and bool(jnp.all(reward == -1.0))


def test_random_walks_never_cross_a_wall(maze):
    starts = np.array(maze.sample(jax.random.PRNGKey(4), NUM_SAMPLES))[:32]
    # Random walks biased towards the inner wall, so many moves hit it.
    moves = np.array([UP, UP_LEFT, UP_RIGHT, DOWN, DOWN_LEFT, DOWN_RIGHT])
    actions = np.random.default_rng(4).choice(moves, (32, HORIZON))
    # A quarter start on the wall's line right of its tip and walk left and right too.
    starts[:8] = np.stack([np.linspace(0.75, 0.95, 8), np.full(8, 0.5)], -1)
    actions[:8] = np.random.default_rng(5).choice([LEFT, RIGHT, UP_LEFT, DOWN_LEFT], (8, HORIZON))
    tasks = np.concatenate([starts, np.full((32, 2), 0.95)], axis=-1)
    first, obs, *_ = maze.run(tasks, actions)
    path = np.concatenate([np.asarray(first)[:, None, :2], np.asarray(obs)[..., :2]], axis=1)
    assert np.all((path >= 0.0) & (path <= 1.0))
    p, q = path[:, :-1], path[:, 1:]
    switched = np.sign(p[..., 1] - 0.5) != np.sign(q[..., 1] - 0.5)
    # A move from one side of y = 0.5 to the other passes it right of the wall's end.
    frac = (0.5 - p[..., 1]) / np.where(switched, q[..., 1] - p[..., 1], 1.0)
    x_cross = p[..., 0] + frac * (q[..., 0] - p[..., 0])
    assert np.all(x_cross[switched] > 0.7)
    on_wall = (np.abs(path[..., 1] - 0.5) < 1e-6) & (path[..., 0] < 0.7 - 1e-6)
    assert not on_wall.any()
    assert switched.any()  # some walks do go round the wall
    blocked = np.abs(q[..., 1] - 0.5) < 2 * SKIN
    assert blocked.sum() > 10  # and many were stopped by it


def test_going_round_the_u_reaches_the_goal_and_terminates(maze):
    env = maze.env
    # Start (0.15, 0.25), goal (0.13, 0.75): right 14 steps (x 0.85), up 10 (y 0.75),
    # left 14 (x 0.15, 0.02 from the goal) and one more (x 0.10, 0.03 from it); x 0.2 is
    # 0.07 away, x 0.05 0.08: no step lands near the tolerance's edge.
    actions = [RIGHT] * 14 + [UP] * 10 + [LEFT] * 16
    _, obs, reward, terminated, truncated = maze.run([[0.15, 0.25, 0.13, 0.75]], [actions])
    reward, terminated = np.asarray(reward[0]), np.asarray(terminated[0])
    assert np.flatnonzero(terminated).tolist() == [37, 38]
    assert np.all(reward[:37] == -1.0) and reward[37] == 0.0 and reward[39] == -1.0
    assert reward[:38].sum() == -37.0 and env.is_success(-37.0)
    assert not bool(truncated.any())
    np.testing.assert_allclose(obs[0, 37, :2], [0.15, 0.75], atol=1e-5)


def test_truncation_exactly_at_max_episode_steps():
    env = make_env("point_maze", max_episode_steps=5)
    assert env.success_threshold == -4.5 and env.return_bounds == (-5.0, 0.0)
    params = env.default_params()
    _, state = env.reset(jax.random.PRNGKey(0), params)
    step = jax.jit(env.step)
    truncs = []
    for _ in range(6):
        _, state, _, terminated, truncated, _ = step(jax.random.PRNGKey(0), state, STAY, params)
        truncs.append(bool(truncated))
        assert not bool(terminated)
    assert truncs == [False] * 4 + [True, True]


def test_vmap_over_tasks_and_compute_reward_matches_step(maze):
    env = maze.env
    rng = np.random.default_rng(5)
    starts = np.asarray(maze.sample(jax.random.PRNGKey(5), NUM_SAMPLES))[:16]
    goals = starts + rng.uniform(-0.15, 0.15, (16, 2)).astype(np.float32)
    tasks = np.concatenate([starts, goals], axis=-1)
    actions = rng.integers(0, 9, (16, HORIZON))
    first, obs, reward, terminated, _ = maze.run(tasks, actions)
    np.testing.assert_array_equal(first[:, :2], starts)
    # The goal never changes within an episode; an invalid one was mapped to a valid one.
    np.testing.assert_array_equal(
        obs[:, :, 2:], np.broadcast_to(first[:, None, 2:], obs[..., 2:].shape)
    )
    assert bool(maze.is_valid(first[:, 2:]).all())
    assert len(np.unique(np.asarray(first[:, 2:]), axis=0)) == 16
    step_reward, reached, relabelled, relabelled_reward, restored = maze.protocol(obs)
    np.testing.assert_array_equal(step_reward, reward)
    np.testing.assert_array_equal(reached, terminated)
    assert bool(terminated.any()) and not bool(terminated.all())
    np.testing.assert_array_equal(relabelled[..., 2:], obs[..., :2])
    np.testing.assert_array_equal(relabelled[..., :2], obs[..., :2])
    assert bool(jnp.all(relabelled_reward == 0.0))
    np.testing.assert_array_equal(restored, obs)
    assert env.with_goal(obs, jnp.array([0.5, 0.5])).shape == obs.shape


def test_invalid_starts_and_goals_map_to_valid_points(maze):
    points = jnp.asarray(np.random.default_rng(0).uniform(-0.5, 1.5, (400, 4)), jnp.float32)
    params = maze.params_for_tasks(points)
    for mapped, raw in ((params.start, points[:, :2]), (params.goal, points[:, 2:])):
        assert bool(maze.is_valid(mapped).all())
        # Valid points are kept exactly.
        keep = np.asarray(maze.is_valid(raw))
        assert keep.any() and not keep.all()
        np.testing.assert_array_equal(np.asarray(mapped)[keep], np.asarray(raw)[keep])
    # Too close to the inner wall, on it, or outside: the nearest valid snap centre.
    bad = jnp.array([[0.3, 0.51], [0.3, 0.5], [1.4, -0.2], [0.02, 0.26]])
    assert not bool(maze.is_valid(bad).any())
    mapped = np.asarray(maze.valid_position(bad))
    assert bool(maze.is_valid(mapped).all())
    nearest = [[0.3046875, 0.5546875], None, [0.9453125, 0.0546875], [0.0546875, 0.2578125]]
    for got, want in zip(mapped, nearest):
        if want is not None:
            np.testing.assert_allclose(got, want)
    assert np.linalg.norm(mapped[3] - [0.02, 0.26]) < 0.05


def test_goal_grid_and_sampled_goals_are_valid_and_cover_both_arms(maze):
    env = maze.env
    grid = env.goal_grid(10)
    # Every centre of the 10 x 10 grid is at least 0.05 from every wall: the outer ring
    # and the rows y = 0.45, 0.55 left of the wall's end sit exactly 0.05 away, and count.
    assert grid.shape == (100, 2)
    grid = env.goal_grid(20)
    assert bool(maze.is_valid(grid).all()) and len(grid) < 400
    samples = np.asarray(maze.sample(jax.random.PRNGKey(6), NUM_SAMPLES))
    assert bool(maze.is_valid(samples).all())
    # Near-uniform: both arms of the U get about half (the wall is at y = 0.5).
    assert 0.4 < np.mean(samples[:, 1] > 0.5) < 0.6
    assert samples[:, 0].min() < 0.1 and samples[:, 0].max() > 0.9


def test_render_is_an_rgb_image(maze):
    env = maze.env
    params = env.default_params()
    _, state = env.reset(jax.random.PRNGKey(0), params)
    image = env.render(state, params, pixels=100)
    assert image.shape == (100, 100, 3) and image.dtype == np.uint8
    assert tuple(image[25, 15]) == (60, 180, 75)  # goal (0.15, 0.75): row 25, col 15
    assert tuple(image[75, 15]) == (30, 60, 200)  # the point at the start (0.15, 0.25)
    assert tuple(image[50, 30]) == (0, 0, 0)  # the inner wall y = 0.5
    assert tuple(image[50, 90]) == (255, 255, 255)  # the opening


def test_kept_invalid_goal_is_never_reached_and_costs_a_full_episode():
    # 0.02 above the u_maze wall: within goal_tolerance of the wall, so invalid. Snapped,
    # it moves clear of the wall; kept, the point can come within 0.02 of it from above
    # (and would reach it through the thin wall from below) but never scores it.
    task = jnp.array([0.3, 0.7, 0.3, 0.52])
    for mode in ("snap", "keep"):
        env = make_env("point_maze", max_episode_steps=10, invalid_goal=mode)
        params = env.task_to_params(task, None)
        kept = bool(jnp.all(params.goal == task[2:]))
        assert kept == (mode == "keep")
        _, state = env.reset(jax.random.PRNGKey(0), params)
        step = jax.jit(env.step)
        steps = 0
        while True:
            _, state, reward, terminated, truncated, _ = step(
                jax.random.PRNGKey(0), state, DOWN, params
            )
            steps += 1
            if terminated or truncated:
                break
        if mode == "keep":
            # It stands at the wall, 0.02 from the goal, and the episode times out.
            assert float(jnp.linalg.norm(state.position - task[2:])) < env.goal_tolerance
            assert bool(truncated) and not bool(terminated) and steps == env.max_episode_steps
            assert float(reward) == -1.0
        else:
            assert bool(terminated) and float(reward) == 0.0
    with pytest.raises(ConfigError, match="env.invalid_goal must be 'snap' or 'keep'"):
        make_env("point_maze", invalid_goal="drop")


def test_florensa_u_maze_is_the_papers_maze_scaled_to_the_unit_square():
    env = PointMaze(layout="florensa_u")
    np.testing.assert_allclose(env.task_space.default, (1 / 6, 1 / 6, 1 / 6, 5 / 6), atol=1e-6)
    # The inner block is solid: no valid point inside it, and none snaps into it.
    inside = jnp.array([[0.3, 0.5], [0.6, 0.4], [0.05, 0.6]])
    assert not np.asarray(env.is_valid_position(inside)).any()
    assert not env._valid_np(np.asarray(inside)).any()
    snapped = np.asarray(env.valid_position(inside))
    assert np.asarray(env.is_valid_position(jnp.asarray(snapped))).all()
    # Corridors 1/3 wide: their centre lines are valid.
    corridors = jnp.array([[0.5, 1 / 6], [5 / 6, 0.5], [0.5, 5 / 6]])
    assert np.asarray(env.is_valid_position(corridors)).all()


def test_start_distance_follows_the_maze_not_the_straight_line():
    env = PointMaze(layout="florensa_u")
    task = jnp.asarray(env.task_space.default)
    far = env.start_distance(task[:2], task)
    # Round the U: right 2/3, up 2/3, left 2/3, less the corners cut by diagonal moves.
    straight = np.linalg.norm(np.asarray(task[:2] - task[2:])) / env.step_size
    assert 1.5 / env.step_size < float(far) < 2.1 / env.step_size
    assert float(far) > 2 * straight
    # Along the U the distance falls monotonically towards the goal.
    path = jnp.array([[1 / 6, 1 / 6], [5 / 6, 1 / 6], [5 / 6, 5 / 6], [1 / 6, 5 / 6]])
    d = np.asarray(env.start_distance(path, task))
    assert np.all(np.diff(d) < 0) and d[-1] == 0
    # goal_maze: its BFS steps.
    grid = GoalMaze("u_maze")
    cells = grid.free_cells()
    goal = np.asarray(grid.default_params().goal)
    bfs = grid.shortest_path_distance(cells, np.broadcast_to(goal, cells.shape))
    got = grid.start_distance(jnp.asarray(grid.cell_to_coords(cells)), grid.task_space.default_task)
    np.testing.assert_array_equal(np.asarray(got), bfs)
