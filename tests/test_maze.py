"""The UED maze (envs/maze/), its editor (envs/maze/editor.py) and held-out mazes
(envs/maze_levels.py): env contract over a vmap of levels, the egocentric view, the
MiniGrid reward, task encoding, the random-level generator, the BFS, the editor's levels,
the level files, rendering.

Rollouts go through one jitted batched `rollout` (padded to BATCH levels), so the file
compiles a handful of small programs. The step-by-step match with the real `minigrid`
package is tests/test_maze_minigrid.py.
"""

from __future__ import annotations

import io
from collections import deque
from importlib import resources
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

import envs
from acl.core.errors import ConfigError
from envs.images import save_gif, save_png
from envs.maze import (
    AGENT,
    FORWARD,
    GOAL,
    LEFT,
    RIGHT,
    WALL,
    Level,
    Maze,
    MazeEditor,
    MazeParams,
    is_valid_level,
    level_to_params,
    params_to_level,
    sample_level,
    shortest_path_length,
    stack_params,
)
from envs.maze_levels import (
    EVALUATION,
    HELD_OUT,
    MINI_EVALUATION,
    corridor,
    evaluation_params,
    level_names,
    load_level,
    make_level,
    simple_crossing,
)
from envs.registry import TEST_SETS, make_env

T = 32
"""Episode length of the rollout env (short, so truncation shows up)."""
HORIZON = 40
BATCH = 16
NOOP = 3
WALL_CH, EMPTY_CH, GOAL_CH = 0, 1, 2


_all_valid = jax.jit(lambda params: jax.vmap(is_valid_level)(params).all())
_path_lengths = jax.jit(jax.vmap(shortest_path_length))
"""[64] MazeParams -> [64] BFS distances."""


_sample_levels = jax.jit(jax.vmap(lambda key, n: sample_level(key, 13, 13, n)))
SAMPLES = 512


def _random_levels(seed: int, num_walls) -> MazeParams:
    """SAMPLES random 13 x 13 levels (`num_walls`: an int or [SAMPLES]); one compile."""
    keys = jax.random.split(jax.random.PRNGKey(seed), SAMPLES)
    return _sample_levels(keys, jnp.broadcast_to(jnp.asarray(num_walls, jnp.int32), (SAMPLES,)))


def _first(params: MazeParams, n: int) -> MazeParams:
    return jax.tree.map(lambda x: x[:n], params)


def _distances(levels: list[Level]) -> list[int]:
    """BFS distances of up to 64 levels (13 x 13 after padding) through one compile."""
    padded = list(levels) + [levels[0]] * (64 - len(levels))
    return np.asarray(_path_lengths(stack_params(padded, 13, 13)))[: len(levels)].tolist()


def _level(text: str) -> Level:
    return Level.from_text(text)


def _params(text: str, size: int = 13) -> MazeParams:
    return level_to_params(_level(text), size, size)


def _compile(env: Maze) -> SimpleNamespace:
    def rollout(params, actions):
        """actions [T'] -> obs [T', O], reward, terminated, truncated [T'], pos [T', 2], dir."""
        obs0, state = env.reset(jax.random.PRNGKey(0), params)

        def body(state, action):
            obs, state, reward, terminated, truncated, _ = env.step(
                jax.random.PRNGKey(1), state, action, params
            )
            return state, (obs, reward, terminated, truncated, state.agent_pos, state.agent_dir)

        return obs0, jax.lax.scan(body, state, actions)[1]

    batched_jit = jax.jit(jax.vmap(rollout))

    def batched(params: MazeParams, actions):
        """params [B], actions [B, HORIZON] with B <= BATCH (padded with the first level)."""
        num = len(actions)
        pad = BATCH - num
        params = jax.tree.map(lambda x: jnp.concatenate([x, jnp.repeat(x[:1], pad, 0)]), params)
        padded = np.full((BATCH, HORIZON), NOOP, np.int32)
        padded[:num] = np.asarray(actions)
        out = batched_jit(params, jnp.asarray(padded))
        return jax.tree.map(lambda x: np.asarray(x[:num]), out)

    return SimpleNamespace(
        env=env,
        batched=batched,
        reset=jax.jit(env.reset),
        step=jax.jit(env.step),
    )


@pytest.fixture(scope="module")
def maze():
    return _compile(make_env("maze", max_episode_steps=T))


def _one(params: MazeParams) -> MazeParams:
    return jax.tree.map(lambda x: x[None], params)


# -- registration, config, spaces ------------------------------------------------------


def test_registered_with_documented_spaces(maze):
    env = maze.env
    assert isinstance(env, envs.TaskEnv) and env.name == "maze" and "maze" in envs.ENVS.names()
    default = make_env("maze")
    assert (default.height, default.width, default.max_episode_steps) == (13, 13, 250)
    assert (default.num_walls, default.see_through_walls, default.view_size) == (25, True, 5)
    assert env.observation_space().shape == (5 * 5 * 3 + 4,) and env.action_space().n == 3
    space = env.task_space
    assert space.dim == 13 * 13 + 5 == len(space.names) == len(space.units)
    assert bool(space.contains(space.default_task))
    assert env.success_threshold == 0.0 and env.return_bounds == (0.0, 1.0)
    # The default task is the default level: empty, agent top-left facing right.
    params = env.task_to_params(space.default_task, None)
    assert params_to_level(params).to_text() == params_to_level(env.default_params()).to_text()
    text = params_to_level(params).to_text()
    assert text.startswith(">....") and text.endswith("....G") and text.count("#") == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"height": 0}, "env.height"),
        ({"width": 2.5}, "env.width"),
        ({"height": 1, "width": 1}, ">= 2"),
        ({"num_walls": 168}, "num_walls"),
        ({"num_walls": -1}, "num_walls"),
        ({"view_size": 4}, "view_size"),
        ({"view_size": 9, "see_through_walls": False}, "view_size"),
        ({"see_through_walls": 1}, "see_through_walls"),
        ({"max_episode_steps": 0}, "max_episode_steps"),
        ({"walls": 3}, "accepted"),
    ],
)
def test_bad_static_config_is_a_config_error(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        make_env("maze", **kwargs)


# -- dynamics and reward -----------------------------------------------------------------

CORRIDOR = """
>...G
#####
.....
"""


def test_reward_is_minigrids_and_terminates_on_the_goal(maze):
    env = maze.env
    # Straight ahead: three forwards, the fourth reaches the goal on step 4.
    plans = [[FORWARD] * 5, [LEFT, RIGHT] + [FORWARD] * 4, [NOOP] * (T - 4) + [FORWARD] * 4]
    plans = [p + [NOOP] * (HORIZON - len(p)) for p in plans]
    stacked = stack_params([_level(CORRIDOR)] * 3, 13, 13)
    _, (obs, reward, terminated, truncated, pos, _) = maze.batched(stacked, plans)
    for row, step in ((0, 4), (1, 6), (2, T)):
        expected = np.zeros(HORIZON, np.float32)
        expected[step - 1] = 1.0 - 0.9 * step / T
        np.testing.assert_allclose(reward[row][:step], expected[:step], rtol=1e-6)
        assert terminated[row].tolist()[:step] == [False] * (step - 1) + [True]
        assert not truncated[row][:step].any()  # reaching the goal on step T: terminated only
        assert pos[row][step - 1].tolist() == [0, 4]  # the agent stands on the goal
    assert abs(float(reward[2, T - 1]) - 0.1) < 1e-6 and env.is_success(0.1)
    assert not env.is_success(0.0)


def test_walls_and_edges_block_and_turns_cycle(maze):
    # The agent faces up at the top edge; walls right and below.
    text = """
^#...
##...
....G
"""
    actions = [FORWARD, RIGHT, FORWARD, RIGHT, FORWARD, RIGHT, FORWARD, RIGHT, LEFT, LEFT, NOOP]
    actions += [NOOP] * (HORIZON - len(actions))
    _, (_, reward, terminated, truncated, pos, direction) = maze.batched(
        _one(_params(text)), [actions]
    )
    assert (pos[0] == 0).all() and not reward[0].any() and not terminated[0].any()
    assert direction[0][:11].tolist() == [3, 0, 0, 1, 1, 2, 2, 3, 2, 1, 1]
    # Truncated exactly on step T, and only there within the episode.
    assert truncated[0].tolist()[:T] == [False] * (T - 1) + [True]


def test_vmap_over_different_levels_matches_unbatched_steps(maze):
    env = maze.env
    params = _first(_random_levels(0, env.num_walls), 6)
    rng = np.random.default_rng(1)
    actions = rng.choice(3, (6, HORIZON), p=[0.2, 0.2, 0.6]).astype(np.int32)
    obs0, (obs, reward, terminated, truncated, pos, direction) = maze.batched(params, actions)
    space = env.observation_space()
    assert obs.shape == (6, HORIZON, space.shape[0]) and obs.dtype == np.float32
    assert bool(jnp.all(space.contains(jnp.asarray(obs)))) and reward.dtype == np.float32
    # Different levels give different views.
    assert len({obs0[i].tobytes() for i in range(6)}) == 6
    # Each cell of every view is one-hot or unseen; the direction part is one-hot.
    image, facing = env.split_observation(jnp.asarray(obs))
    assert image.shape == (6, HORIZON, 5, 5, 3) and set(np.unique(image.sum(-1))) <= {0.0, 1.0}
    np.testing.assert_array_equal(np.asarray(facing), direction)
    # Row 3 is exactly the unbatched episode on its level.
    one = jax.tree.map(lambda x: x[3], params)
    single_obs, state = maze.reset(jax.random.PRNGKey(0), one)
    np.testing.assert_array_equal(single_obs, obs0[3])
    for t in range(HORIZON):
        single_obs, state, r, te, tr, _ = maze.step(
            jax.random.PRNGKey(1), state, actions[3, t], one
        )
        np.testing.assert_array_equal(single_obs, obs[3, t])
        assert (float(r), bool(te), bool(tr)) == (reward[3, t], terminated[3, t], truncated[3, t])
        assert state.agent_pos.tolist() == pos[3, t].tolist()
    # The agent only ever stands on free cells.
    walls = np.asarray(params.wall_map)
    assert not walls[np.arange(6)[:, None], pos[..., 0], pos[..., 1]].any()


# -- observation convention ----------------------------------------------------------------

VIEW_LEVEL = """
.............
.............
.............
.............
......#......
.......G.....
......^......
.............
.............
.............
.............
.............
.............
"""


_OBSERVATION = {}
"""see_through_walls -> a jitted Maze(...).observation (one compile per setting)."""


def _image(env: Maze, params: MazeParams, agent_pos=None, agent_dir=None) -> np.ndarray:
    pos = params.agent_pos if agent_pos is None else jnp.asarray(agent_pos, jnp.int32)
    facing = params.agent_dir if agent_dir is None else jnp.int32(agent_dir)
    if env.see_through_walls not in _OBSERVATION:
        _OBSERVATION[env.see_through_walls] = jax.jit(env.observation)
    obs = _OBSERVATION[env.see_through_walls](pos, facing, params)
    image, direction = env.split_observation(obs)
    assert int(direction) == int(facing)
    return np.asarray(image)


def test_view_is_minigrids_agent_view():
    env = Maze()
    params = _params(VIEW_LEVEL)
    # Facing up: the agent at the bottom centre (row 4, col 2); the wall 2 ahead is row 2,
    # the goal 1 ahead and 1 right is row 3, col 3; the agent's own cell shows empty.
    image = _image(env, params)
    assert image[2, 2].tolist() == [1, 0, 0] and image[3, 3].tolist() == [0, 0, 1]
    assert image[4, 2].tolist() == [0, 1, 0]
    assert image[..., WALL_CH].sum() == 1 and image[..., GOAL_CH].sum() == 1
    # Turned right: the wall is 2 to the left (row 4, col 0), the goal 1 ahead 1 left.
    image = _image(env, params, agent_dir=0)
    assert image[4, 0].tolist() == [1, 0, 0] and image[3, 1].tolist() == [0, 0, 1]
    # Turned around (down): the wall and goal are behind, out of view.
    image = _image(env, params, agent_dir=1)
    assert image[..., WALL_CH].sum() == 0 and image[..., GOAL_CH].sum() == 0
    # Outside the grid is wall: in the top-left corner facing up, rows 0-3 and the two
    # cells left of the agent are walls; the agent's row to its right is free.
    image = _image(env, params, agent_pos=[0, 0], agent_dir=3)
    assert image[:4, :, WALL_CH].all() and image[4, :2, WALL_CH].all()
    assert image[4, 2:, EMPTY_CH].all()
    # A goal on the agent's own cell shows empty (MiniGrid draws the carried object there).
    image = _image(env, params, agent_pos=[5, 7], agent_dir=3)
    assert image[4, 2].tolist() == [0, 1, 0]


def test_opaque_walls_hide_what_is_behind():
    text = """
.............
.............
......G......
.............
#############
......^......
"""
    params = _params(text)
    seen = _image(Maze(see_through_walls=True), params)
    hidden = _image(Maze(see_through_walls=False), params)
    # The full wall row one ahead is seen either way; behind it, the goal 3 ahead is seen
    # only through walls, and with opaque walls every cell behind is unseen (all zeros).
    assert seen[3, :, WALL_CH].all() and hidden[3, :, WALL_CH].all()
    assert seen[1, 2].tolist() == [0, 0, 1] and seen[:3].sum(-1).all()
    assert hidden[:3].sum() == 0 and hidden[4].sum(-1).all()


@pytest.mark.parametrize("see_through_walls", [True, False])
@pytest.mark.parametrize("view_size", [3, 5, 7])
def test_windowed_view_equals_the_cell_by_cell_view(see_through_walls, view_size):
    # The step reads its view as a turned window of MazeState.cells; the reference gathers
    # each view cell with bounds checks. Every cell, every direction, near every edge.
    env = Maze(
        height=6, width=9, num_walls=20, see_through_walls=see_through_walls, view_size=view_size
    )
    params = env.sample_params(jax.random.PRNGKey(view_size))
    rows, cols, dirs = np.meshgrid(np.arange(6), np.arange(9), np.arange(4), indexing="ij")
    positions = jnp.stack([rows.ravel(), cols.ravel()], -1).astype(jnp.int32)
    dirs = jnp.asarray(dirs.ravel(), jnp.int32)

    def both(pos, direction):
        _, state = env.reset(jax.random.PRNGKey(0), params)
        fast = env._observe(pos, direction, state.cells)
        return fast, env.observation_from_view_cells(pos, direction, params)

    fast, reference = jax.jit(jax.vmap(both))(positions, dirs)
    np.testing.assert_array_equal(fast, reference)
    # Not vacuous: through walls every cell shows one channel; opaque walls hide some.
    seen = reference[:, : view_size * view_size * 3].reshape(-1, 3).sum(-1)
    assert seen.min() == (1 if see_through_walls else 0) and seen.max() == 1


# -- tasks, levels and the generator --------------------------------------------------------


def test_task_round_trip_and_uniform_tasks_give_valid_levels(maze):
    env = maze.env
    params_to_task = jax.jit(env.params_to_task)
    tasks = params_to_task(_random_levels(2, 25))
    assert tasks.shape == (SAMPLES, env.task_dim) and bool(env.task_space.contains(tasks).all())
    params_for_tasks = jax.jit(env.params_for_tasks)
    params = params_for_tasks(tasks)
    np.testing.assert_allclose(params_to_task(params), tasks, atol=1e-6)
    uniform = env.task_space.sample_uniform(jax.random.PRNGKey(3), SAMPLES)
    params = params_for_tasks(uniform)
    assert bool(_all_valid(params))
    density = float(params.wall_map.mean())
    assert 0.45 < density < 0.55  # a uniform task is a level of ~50% walls
    # Agent and goal cells are uniform: both cover the whole grid.
    assert len({tuple(p) for p in np.asarray(params.goal_pos).tolist()}) > 100


def test_task_to_params_clears_and_separates_agent_and_goal(maze):
    env = maze.env
    task = np.ones(env.task_dim, np.float32)  # all walls; agent and goal both at (12, 12)
    task[-5:] = [0.99, 0.99, 0.6, 0.99, 0.99]
    params = env.task_to_params(jnp.asarray(task), None)
    assert params.agent_pos.tolist() == [12, 12] and int(params.agent_dir) == 2
    assert params.goal_pos.tolist() == [0, 0]  # the next cell, wrapping
    assert int(params.wall_map.sum()) == 13 * 13 - 2 and bool(is_valid_level(params))


def test_generator_wall_counts_and_distinct_agent_and_goal():
    counts = np.repeat([0, 25, 60, 167, 500], [64, 192, 192, 32, 32])
    params = _random_levels(4, counts)
    walls = np.asarray(params.wall_map.sum((1, 2)))
    np.testing.assert_array_equal(walls, np.minimum(counts, 13 * 13 - 2))
    assert bool(_all_valid(params))
    agent, goal = np.asarray(params.agent_pos), np.asarray(params.goal_pos)
    assert (agent != goal).any(1).all()
    assert set(np.asarray(params.agent_dir).tolist()) == {0, 1, 2, 3}
    # Positions spread over the grid (not a fixed corner).
    assert len({tuple(a) for a in agent.tolist()}) > 120
    env = Maze(num_walls=60)
    assert int(jax.jit(env.sample_params)(jax.random.PRNGKey(0)).wall_map.sum()) == 60


def _bfs(level: Level) -> int:
    """Reference BFS: moves from the agent's cell to the goal's, -1 if unreachable."""
    walls = level.wall_map
    height, width = walls.shape
    dist = {level.agent_pos: 0}
    queue = deque([level.agent_pos])
    while queue:
        row, col = queue.popleft()
        for d_row, d_col in ((0, 1), (1, 0), (0, -1), (-1, 0)):
            cell = (row + d_row, col + d_col)
            if 0 <= cell[0] < height and 0 <= cell[1] < width and not walls[cell]:
                if cell not in dist:
                    dist[cell] = dist[(row, col)] + 1
                    queue.append(cell)
    return dist.get(level.goal_pos, -1)


def test_shortest_path_length_is_a_bfs():
    params = _first(_random_levels(5, 60), 64)
    got = np.asarray(_path_lengths(params))
    host = jax.tree.map(np.asarray, params)
    expected = [_bfs(params_to_level(jax.tree.map(lambda x, i=i: x[i], host))) for i in range(64)]
    assert got.tolist() == expected
    assert -1 in expected and max(expected) > 10  # both cases occur at 60 walls
    corridor_params = stack_params([_level(CORRIDOR)] * 64, 13, 13)
    assert np.asarray(_path_lengths(corridor_params)).tolist() == [4] * 64


# -- host levels and the text form ----------------------------------------------------------


@pytest.mark.parametrize(
    "text, match",
    [
        (">..\n...", "one goal"),
        (">.G\n.<.", "one goal"),
        (">.G\n..", "same width"),
        (">.G\n.x.", "unknown characters"),
        ("; only a comment", "no grid rows"),
    ],
)
def test_bad_level_text_is_a_config_error(text, match):
    with pytest.raises(ConfigError, match=match):
        Level.from_text(text, name="bad")


def test_level_checks_and_padding():
    level = _level(CORRIDOR)
    assert level.shape == (3, 5) and level.num_walls == 5
    assert Level.from_text(level.to_text()).to_text() == level.to_text()
    padded = level.padded(13, 13)
    assert padded.wall_map[3:].all() and padded.wall_map[:, 5:].all()
    assert padded.wall_map[:3, :5].tolist() == level.wall_map.tolist()
    with pytest.raises(ConfigError, match="does not fit"):
        level.padded(2, 13)
    with pytest.raises(ConfigError, match="is a wall"):
        Level(np.ones((3, 3), bool), (0, 0), 0, (1, 1))
    with pytest.raises(ConfigError, match="share cell"):
        Level(np.zeros((3, 3), bool), (1, 1), 0, (1, 1))
    with pytest.raises(ConfigError, match="outside"):
        Level(np.zeros((3, 3), bool), (3, 0), 0, (1, 1))
    with pytest.raises(ConfigError, match="agent_dir"):
        Level(np.zeros((3, 3), bool), (0, 0), 4, (1, 1))


@pytest.mark.parametrize("name", HELD_OUT)
def test_level_files_parse_with_one_agent_one_reachable_goal(name):
    level = load_level(name)
    assert level.shape == (13, 13) and level.name == name
    text = level.to_text()
    assert text.count("G") == 1 and sum(text.count(c) for c in "><^v") == 1
    # The file's grid is exactly the level's text form; its header names the source.
    raw = resources.files("envs").joinpath("levels", f"{name}.txt").read_text()
    assert "\n".join(line for line in raw.splitlines() if not line.startswith(";")) == text
    assert "Source:" in raw and "jaxued" in raw
    distance = _bfs(level)
    assert distance > 0
    assert _distances([level]) == [distance]


MINI_SHA256 = "9511854920406353e203d3acbda34ba262dbc79d953336ff741c67bcdd4c099b"
"""The mini-UED held-out set as committed before its protocol's first training run
(docs/results/ued_mini.md): a pre-registered test set is never changed."""


def test_the_mini_held_out_set_is_the_committed_one_and_solvable():
    import hashlib

    digest = hashlib.sha256()
    for name in MINI_EVALUATION:
        digest.update(resources.files("envs").joinpath("levels", f"{name}.txt").read_bytes())
    assert digest.hexdigest() == MINI_SHA256
    env = make_env("maze", height=9, width=9)
    names, tasks = TEST_SETS.get("maze")(env, "maze_mini_held_out")
    assert names == MINI_EVALUATION and tasks.shape == (8, 9 * 9 + 5)
    for name in MINI_EVALUATION:
        level = load_level(name)
        assert level.shape == (9, 9)
        assert 0 < _bfs(level) <= 48  # moves; the longest (a spiral) well inside T = 128


def test_procedural_levels_and_the_evaluation_set():
    assert set(HELD_OUT) < set(level_names()) and set(EVALUATION) <= set(level_names())
    crossings = [simple_crossing(seed) for seed in range(20)]
    assert all(c.shape == (9, 9) and c.agent_pos == (0, 0) for c in crossings)
    assert all(c.goal_pos == (8, 8) and _bfs(c) > 0 for c in crossings)
    assert len({c.to_text() for c in crossings}) > 10
    # 5 wall lines of 9 (crossing each other 0, 4 or 6 times) with one gap each
    assert all(45 - 6 - 5 <= c.num_walls <= 45 - 5 for c in crossings)
    for size in (13, 19):
        levels = [corridor(seed, size) for seed in range(30)]
        middle = size // 2
        for level in levels:
            assert level.agent_pos == (middle, 0) and _bfs(level) > 0
            assert level.goal_pos[0] in (middle - 1, middle + 1) and level.goal_pos[1] % 2 == 0
            assert level.wall_map[middle, 1:-1].all()
        assert len({lv.goal_pos for lv in levels}) > 5 and len({lv.agent_dir for lv in levels}) == 4
    assert make_level("SmallCorridor", 3).to_text() == corridor(3, 13).to_text()
    assert make_level("LargeCorridor", 3).shape == (19, 19)
    assert make_level("Labyrinth", 7).to_text() == load_level("Labyrinth").to_text()
    levels, params = evaluation_params()
    assert [lv.name.split("(")[0].split("S11")[0] for lv in levels] == list(EVALUATION)
    assert params.wall_map.shape == (len(EVALUATION), 13, 13)
    assert bool(_all_valid(params))
    assert min(_distances(levels)) > 0
    with pytest.raises(ConfigError, match="does not fit"):
        evaluation_params(names=("LargeCorridor",))
    assert evaluation_params(19, 19, names=("LargeCorridor",))[1].wall_map.shape == (1, 19, 19)
    with pytest.raises(ConfigError, match="did you mean 'Labyrinth'"):
        load_level("Labyrinht")


# -- the editor -------------------------------------------------------------------------------


EDITS = 128
"""Editor episodes per batch (every editor test uses this batch: one compile)."""


@pytest.fixture(scope="module")
def editor():
    editor = MazeEditor(Maze(height=6, width=6), num_wall_steps=6, noise_dim=4)

    def build(key, actions):
        obs0, state = editor.reset(key)

        def body(state, inputs):
            step_key, action = inputs
            obs, state, reward, terminated, truncated, _ = editor.step(step_key, state, action)
            return state, (obs, reward, terminated, truncated)

        keys = jax.random.split(key, actions.shape[0])
        state, out = jax.lax.scan(body, state, (keys, actions))
        return obs0, editor.level(state), out

    editor.build = jax.jit(jax.vmap(build))
    return editor


def test_editor_builds_goal_then_agent_then_walls(editor):
    assert editor.max_episode_steps == 8 and editor.action_space().n == 36
    assert editor.observation_space().shape == (36 * 4 + 1 + 4,)
    # goal (1, 1); agent on the goal -> elsewhere; walls on the goal (no-op), on (0, 0)
    # twice (one wall), on (5, 5), (2, 3), (1, 2); two steps after the end change nothing.
    actions = np.zeros((EDITS, 10), np.int32)
    actions[0] = [7, 7, 7, 0, 0, 35, 15, 8, 9, 10]
    keys = jax.random.split(jax.random.PRNGKey(0), EDITS)
    obs0, level, (obs, reward, terminated, truncated) = editor.build(keys, jnp.asarray(actions))
    level = params_to_level(jax.tree.map(lambda x: x[0], level))
    assert level.goal_pos == (1, 1) and level.agent_pos != (1, 1)
    walls = {tuple(c) for c in np.argwhere(level.wall_map).tolist()}
    assert walls == {(0, 0), (5, 5), (2, 3), (1, 2)} - {level.agent_pos}
    assert terminated[0].tolist() == [False] * 7 + [True] * 3 and not truncated.any()
    assert not reward.any()
    grid, time, noise = editor.split_observation(jnp.asarray(obs[0]))
    assert np.asarray(time).tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 8, 8]
    grid = np.asarray(grid)
    assert grid[0, 1, 1].tolist() == [0, 0, 1, 0] and grid[0, ..., 3].sum() == 0
    assert grid[1, level.agent_pos[0], level.agent_pos[1]].tolist() == [0, 0, 0, 1]
    assert grid[-1, ..., 0].sum() == len(walls) and (grid.sum(-1) == 1).all()
    start, _, _ = editor.split_observation(jnp.asarray(obs0[0]))
    assert np.asarray(start)[..., 1].all()  # an empty map before the first step
    noise = np.asarray(noise)
    assert ((noise >= 0) & (noise < 1)).all() and len({n.tobytes() for n in noise}) == 10


def test_editor_random_policies_make_valid_levels(editor):
    keys = jax.random.split(jax.random.PRNGKey(1), EDITS)
    actions = jax.random.randint(jax.random.PRNGKey(2), (EDITS, 10), 0, 36)
    _, levels, (_, _, terminated, _) = editor.build(keys, actions)
    assert bool(_all_valid(levels)) and terminated[:, 7:].all()
    assert not terminated[:, :7].any()
    counts = np.asarray(levels.wall_map.sum((1, 2)))
    assert counts.max() <= 6 and counts.min() >= 2
    assert set(np.asarray(levels.agent_dir).tolist()) == {0, 1, 2, 3}
    # The maze accepts them as params.
    env = editor.maze
    obs, _ = jax.jit(jax.vmap(env.reset, in_axes=(None, 0)))(jax.random.PRNGKey(0), levels)
    assert obs.shape == (EDITS,) + env.observation_space().shape


# -- rendering ----------------------------------------------------------------------------------


def test_render_png_and_gif():
    env = Maze()
    params = load_level("Labyrinth").to_params()
    frame = env.render_level(params, cell_pixels=8)
    assert frame.shape == (15 * 8, 15 * 8, 3) and frame.dtype == np.uint8
    row, col = (np.asarray(params.goal_pos) + 1) * 8 + 4
    assert tuple(frame[row, col]) == GOAL
    assert tuple(frame[4, 4]) == WALL  # the wall ring
    agent_cell = frame[13 * 8 : 14 * 8, 1 * 8 : 2 * 8]
    assert (agent_cell == AGENT).all(-1).sum() > 8
    # The view highlight lightens the cells the agent sees.
    _, state = env.reset(jax.random.PRNGKey(0), params)
    lit = env.render(state, params, cell_pixels=8)
    assert (lit.astype(int) >= frame).all() and (lit != frame).any()
    frames = env.episode_frames(params, [FORWARD] * 3 + [LEFT] + [FORWARD] * 2, cell_pixels=8)
    assert len(frames) == 7  # the start and one per step (no done within 6 steps)
    buffer = io.BytesIO()
    save_gif(frames, buffer, fps=5)
    gif = Image.open(io.BytesIO(buffer.getvalue()))
    assert gif.size == (120, 120) and gif.n_frames >= 4
    buffer = io.BytesIO()
    save_png(frames[-1], buffer)
    assert Image.open(io.BytesIO(buffer.getvalue())).size == (120, 120)
    # An episode that ends early stops at its done step.
    short = env.episode_frames(_params(CORRIDOR), [FORWARD] * 10, cell_pixels=4)
    assert len(short) == 5
