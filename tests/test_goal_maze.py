"""Goal maze (envs/goal_maze.py): env contract, walls, goal reward and termination, HER
protocol, task mapping, the U layout's discontinuous goal set, and the BFS oracle.

Every rollout goes through one jitted `rollout` per layout (a scan over a fixed action
sequence, or the oracle's actions), so the file compiles little.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from acl.core.errors import ConfigError
from envs.base import GoalTaskEnv
from envs.goal_maze import GoalMaze, GoalMazeParams
from envs.registry import make_env

UP, DOWN, LEFT, RIGHT = 0, 1, 2, 3
HORIZON = 20
BATCH = 16
"""Batched rollouts are padded to this many rows, so each layout compiles one program."""


def _compile(env: GoalMaze) -> SimpleNamespace:
    def rollout(task, actions, use_oracle):
        """task [4], actions [T] -> obs, reward, terminated, truncated [T], cells [T, 2]."""
        params = env.task_to_params(task, env.default_params())
        obs, state = env.reset(jax.random.PRNGKey(0), params)

        def body(carry, action):
            obs, state = carry
            action = jnp.where(use_oracle, env.oracle_action(obs), action)
            obs, state, reward, terminated, truncated, _ = env.step(
                jax.random.PRNGKey(1), state, action, params
            )
            return (obs, state), (obs, reward, terminated, truncated, state.cell)

        _, out = jax.lax.scan(body, (obs, state), actions)
        return out

    batched_jit = jax.jit(jax.vmap(rollout, in_axes=(0, 0, None)))

    def batched(tasks, actions, use_oracle):
        """tasks [B, 4], actions [B, T] with B <= BATCH (padded with the default task)."""
        num = len(tasks)
        padded_tasks = np.tile(np.asarray(env.task_space.default, np.float32), (BATCH, 1))
        padded_tasks[:num] = np.asarray(tasks)
        padded = np.zeros((BATCH, np.shape(actions)[1]), np.int32)
        padded[:num] = np.asarray(actions)
        out = batched_jit(padded_tasks, padded, use_oracle)
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

    return SimpleNamespace(
        env=env,
        reset=jax.jit(env.reset),
        step=jax.jit(env.step),
        batched=batched,
        protocol=jax.jit(protocol),
        params_for_tasks=jax.jit(env.params_for_tasks),
        valid_cell=jax.jit(env.valid_cell),
        is_free=jax.jit(env.is_free),
    )


@pytest.fixture(scope="module")
def maze():
    return _compile(make_env("goal_maze"))


def test_registered_goal_env_with_documented_spaces(maze):
    env = maze.env
    assert isinstance(env, GoalTaskEnv) and env.name == "goal_maze"
    assert "goal_maze" in envs.ENVS.names()
    assert env.observation_space().shape == (4,) and env.action_space().n == 4
    assert env.task_space.dim == 4 and bool(env.task_space.contains(env.task_space.default_task))
    assert env.return_bounds[0] < env.success_threshold < env.return_bounds[1]
    params = env.default_params()
    assert params.start.tolist() == [1, 1] and params.goal.tolist() == [5, 1]
    obs, state = maze.reset(jax.random.PRNGKey(0), params)
    np.testing.assert_allclose(obs, [1 / 8, 1 / 8, 1 / 8, 5 / 8])
    assert obs.dtype == jnp.float32 and bool(env.observation_space().contains(obs))
    out = maze.step(jax.random.PRNGKey(0), state, jnp.int32(RIGHT), params)
    obs, state, reward, terminated, truncated, info = out
    assert state.cell.tolist() == [1, 2] and int(state.time) == 1
    assert reward.dtype == jnp.float32 and float(reward) == -1.0
    assert terminated.dtype == jnp.bool_ and truncated.dtype == jnp.bool_
    assert int(info["distance"]) == 13


def test_bad_static_config_is_a_config_error():
    with pytest.raises(ConfigError, match="no free cell"):
        GoalMaze(layout="###\n###")
    with pytest.raises(ConfigError, match="did you mean 'u_maze'"):
        make_env("goal_maze", layout="u_maz")
    with pytest.raises(ConfigError, match="same width"):
        GoalMaze(layout="#####\n#..#\n#####")
    with pytest.raises(ConfigError, match="connected"):
        GoalMaze(layout="#####\n#.#.#\n#####")
    with pytest.raises(ConfigError, match="at most one"):
        GoalMaze(layout="#####\n#SS.#\n#####")
    with pytest.raises(ConfigError, match="may only use"):
        GoalMaze(layout="#####\n#.x.#\n#####")
    with pytest.raises(ConfigError, match="max_episode_steps"):
        make_env("goal_maze", max_episode_steps=0)


def test_walls_block_moves(maze):
    env = maze.env
    # From the top-left corner (1, 1): up and left bump the outer wall; then down twice
    # to (3, 1), where down bumps the inner wall; right along row 3 to the end.
    actions = [UP, LEFT, DOWN, DOWN, DOWN, DOWN] + [RIGHT] * 7 + [RIGHT]
    actions += [UP] * (HORIZON - len(actions))
    task = env.task_for([1, 1], [7, 7])
    _, reward, terminated, _, cells = maze.batched(task[None], [actions], False)
    cells = np.asarray(cells[0])
    assert cells[:6].tolist() == [[1, 1], [1, 1], [2, 1], [3, 1], [3, 1], [3, 1]]
    assert cells[12].tolist() == [3, 7] and cells[13].tolist() == [3, 7]  # east wall
    assert not bool(terminated.any()) and np.all(np.asarray(reward) == -1.0)
    # Every move changed the cell by at most one step, and never into a wall.
    assert np.all(env.free[cells[:, 0], cells[:, 1]])


def test_reaching_the_goal_terminates_with_reward_zero_and_no_auto_reset(maze):
    env = maze.env
    # Goal two cells right of the start: -1, then 0 and terminated; later steps go on
    # from where the agent is (the loop owns resets).
    task = env.task_for([2, 2], [2, 4])
    actions = [RIGHT, RIGHT, RIGHT, LEFT] + [UP] * (HORIZON - 4)
    out = maze.batched(task[None], [actions], False)
    obs, reward, terminated, truncated, cells = (x[0] for x in out)
    assert np.asarray(reward)[:4].tolist() == [-1.0, 0.0, -1.0, 0.0]
    assert np.asarray(terminated)[:4].tolist() == [False, True, False, True]
    assert not bool(truncated.any())
    assert np.asarray(cells)[:4].tolist() == [[2, 3], [2, 4], [2, 5], [2, 4]]
    # Return of an episode that ends on its k-th step is -(k - 1): a success.
    assert env.is_success(-1.0) and not env.is_success(-env.max_episode_steps)


def test_truncation_exactly_at_max_episode_steps():
    env = make_env("goal_maze", max_episode_steps=7)
    assert env.success_threshold == -6.5 and env.return_bounds == (-7.0, 0.0)
    params = env.default_params()
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    step = jax.jit(env.step)
    truncs = []
    for _ in range(8):
        obs, state, reward, terminated, truncated, _ = step(
            jax.random.PRNGKey(0), state, jnp.int32(UP), params
        )
        truncs.append(bool(truncated))
        assert not bool(terminated)
    assert truncs == [False] * 6 + [True, True]


def test_vmap_over_different_tasks(maze):
    env = maze.env
    cells = np.array([[[1, 1], [5, 1]], [[7, 7], [1, 7]], [[2, 3], [6, 2]], [[5, 5], [5, 6]]])
    tasks = env.task_for(cells[:, 0], cells[:, 1])
    actions = np.random.default_rng(2).integers(0, 4, (4, HORIZON)).astype(np.int32)
    obs, reward, terminated, truncated, _ = maze.batched(tasks, actions, False)
    assert obs.shape == (4, HORIZON, 4)
    np.testing.assert_allclose(obs[:, 0, 2:], env.cell_to_coords(cells[:, 1]))
    # Row 2 is exactly the unbatched episode on its task.
    params = GoalMazeParams(start=jnp.asarray(cells[2, 0]), goal=jnp.asarray(cells[2, 1]))
    single_obs, state = maze.reset(jax.random.PRNGKey(0), params)
    for t in range(HORIZON):
        single_obs, state, reward_t, terminated_t, truncated_t, _ = maze.step(
            jax.random.PRNGKey(1), state, actions[2, t], params
        )
        np.testing.assert_array_equal(obs[2, t], single_obs)
        assert float(reward[2, t]) == float(reward_t)
        assert bool(terminated[2, t]) == bool(terminated_t)
        assert bool(truncated[2, t]) == bool(truncated_t)


def test_compute_reward_matches_step_and_goal_round_trip(maze):
    env = maze.env
    rng = np.random.default_rng(3)
    free = env.goal_grid()
    pick = rng.integers(0, len(free), (16, 2))
    tasks = np.concatenate([free[pick[:, 0]], free[pick[:, 1]]], axis=-1)
    actions = rng.integers(0, 4, (16, HORIZON)).astype(np.int32)
    obs, reward, terminated, _, _ = maze.batched(tasks, actions, False)
    step_reward, reached, relabelled, relabelled_reward, restored = maze.protocol(obs)
    np.testing.assert_array_equal(step_reward, reward)
    np.testing.assert_array_equal(reached, terminated)
    assert bool(terminated.any()) and not bool(terminated.all())
    # Relabel every observation with the goal it achieved: reward 0, and back again.
    np.testing.assert_array_equal(relabelled[..., 2:], obs[..., :2])
    np.testing.assert_array_equal(relabelled[..., :2], obs[..., :2])
    assert bool(jnp.all(relabelled_reward == 0.0))
    np.testing.assert_array_equal(restored, obs)
    # One goal broadcast over every leading axis.
    assert env.with_goal(obs, free[0]).shape == obs.shape


def test_invalid_task_coordinates_map_to_documented_free_cells(maze):
    env = maze.env
    points = jnp.asarray(np.random.default_rng(0).uniform(-0.5, 1.5, (500, 4)), jnp.float32)
    params = maze.params_for_tasks(points)
    for cells in (params.start, params.goal):
        assert bool(maze.is_free(cells).all())
    # A free cell's own coordinates map to it; a wall cell to its nearest free cell.
    free = env.free_cells()
    np.testing.assert_array_equal(maze.valid_cell(env.cell_to_coords(free)), free)
    wall_points = jnp.array(
        [
            [3 / 8, 4 / 8],  # wall (4, 3): (3, 3) and (5, 3) tie, row-major -> (3, 3)
            [0.0, 0.0],  # corner (0, 0): nearest free (1, 1)
            [-3.0, 0.62],  # clipped to (5, 0) (wall), nearest free (5, 1)
            [5 / 8, 4 / 8 + 0.01],  # wall (4, 5): (3, 5)/(5, 5) tie -> (3, 5)
            [6 / 8, 4 / 8],  # (4, 6): the opening, free
        ]
    )
    want = [[3, 3], [1, 1], [5, 1], [3, 5], [4, 6]]
    assert maze.valid_cell(wall_points).tolist() == want


def test_u_maze_goal_set_is_discontinuous_in_coordinates(maze):
    env = maze.env
    goals = env.goal_grid()
    assert len(goals) == 44 and env.free.sum() == 44
    # In every column left of the opening, the free cells above and below the inner wall
    # are two rows apart (one row of walls between them) but far apart by path.
    for col in range(1, 6):
        ys = np.sort(goals[np.isclose(goals[:, 0], col / 8), 1])
        gaps = np.diff(ys)
        assert np.isclose(gaps.max(), 2 / 8) and np.sum(np.isclose(gaps, 2 / 8)) == 1
        steps = int(env.shortest_path_distance([3, col], [5, col]))
        assert steps == 2 + 2 * (6 - col)
    # The opening's columns are contiguous.
    for col in (6, 7):
        ys = np.sort(goals[np.isclose(goals[:, 0], col / 8), 1])
        assert np.allclose(np.diff(ys), 1 / 8)
    assert int(env.shortest_path_distance([1, 1], [5, 1])) == 14


@pytest.mark.parametrize("layout", ["u_maze", "corridors"])
def test_oracle_reaches_the_goal_in_the_bfs_distance(layout, maze):
    if layout == "u_maze":
        compiled = maze
    else:
        compiled = _compile(make_env("goal_maze", layout=layout, max_episode_steps=60))
    env = compiled.env
    free = env.free_cells()
    rng = np.random.default_rng(1)
    pairs = free[rng.integers(0, len(free), (12, 2))]
    pairs[0] = [free[0], free[-1]]  # the farthest-apart cells of both layouts
    pairs[1] = [free[3], free[3]]  # start on the goal: one (blocked) step, reward 0
    tasks = env.task_for(pairs[:, 0], pairs[:, 1])
    steps = HORIZON if layout == "u_maze" else 60  # u_maze: reuse the compiled rollout
    actions = np.zeros((len(pairs), steps), np.int32)
    obs, reward, terminated, _, _ = compiled.batched(tasks, actions, True)
    distance = env.shortest_path_distance(pairs[:, 0], pairs[:, 1])
    first = np.argmax(np.asarray(terminated), axis=1)
    assert np.asarray(terminated).any(axis=1).all()
    np.testing.assert_array_equal(first + 1, np.maximum(distance, 1))
    # Reward -1 on every step before arrival, so the episode return is -(d - 1).
    returns = np.array([np.asarray(reward)[i, : first[i] + 1].sum() for i in range(len(pairs))])
    np.testing.assert_array_equal(returns, -(np.maximum(distance, 1) - 1))
    if layout == "corridors":
        assert distance[0] == 48  # the serpentine: five rows of 8 and four drops of 2


def test_distance_table_is_a_metric_on_free_cells(maze):
    env = maze.env
    flat = env.free_cells() @ np.array([env.width, 1])
    table = env.distance_table[np.ix_(flat, flat)]
    assert np.all(table >= 0) and np.all(np.diag(table) == 0)
    np.testing.assert_array_equal(table, table.T)
    assert np.all(env.distance_table[0] == -1)  # (0, 0) is a wall


def test_render_is_an_rgb_image(maze):
    env = maze.env
    params = env.default_params()
    _, state = env.reset(jax.random.PRNGKey(0), params)
    image = env.render(state, params, cell_pixels=8)
    assert image.shape == (9 * 8, 9 * 8, 3) and image.dtype == np.uint8
    assert tuple(image[5 * 8 + 1, 1 * 8 + 1]) == (60, 180, 75)  # goal cell, green
    assert tuple(image[1 * 8 + 4, 1 * 8 + 4]) == (30, 60, 200)  # agent, blue
    assert tuple(image[0, 0]) == (60, 60, 60)  # wall
