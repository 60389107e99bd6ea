"""The maze against the real `minigrid` package (envs/maze_minigrid.py): the same action
sequences replayed in both give identical agent positions, directions, 5 x 5
observations, rewards and done flags, on random levels (in minigrid through
`LevelMiniGridEnv`) and on minigrid's own envs (their levels read by
`level_from_minigrid`); minigrid grids with lava, doors or keys are refused; our
SimpleCrossing generator is minigrid's, seed for seed.

The one documented difference: minigrid also sets `truncated` when the goal is reached
on the last step; the maze reports terminated only (done is the same).
"""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from minigrid.core.grid import Grid
from minigrid.core.world_object import Floor, Goal, Wall

from acl.core.errors import ConfigError
from envs.maze import FORWARD, RIGHT, Level, Maze, params_to_level, stack_params
from envs.maze_levels import simple_crossing
from envs.maze_minigrid import (
    LEVEL_ENV_IDS,
    LevelMiniGridEnv,
    UnsupportedMiniGridLevel,
    level_from_grid,
    level_from_minigrid,
    levels_from_minigrid,
    observation_from_minigrid,
)
from tests.test_maze import _bfs

FORWARD_BIASED = [0.25, 0.25, 0.5]
"""Action probabilities of the random sequences (left, right, forward): more moving."""

_ROLLOUTS = {}


def _rollouts(env: Maze, params, actions: np.ndarray) -> dict[str, np.ndarray]:
    """Our env on params [N] with actions [N, T']: obs0 [N, O] and per step obs, pos,
    dir, reward, terminated, truncated [N, T', ...] (numpy). One compile per env config."""
    key = (env.height, env.width, env.max_episode_steps, env.see_through_walls)
    if key not in _ROLLOUTS:

        def rollout(params, actions):
            obs0, state = env.reset(jax.random.PRNGKey(0), params)

            def body(state, action):
                obs, state, reward, terminated, truncated, _ = env.step(
                    jax.random.PRNGKey(0), state, action, params
                )
                out = (obs, state.agent_pos, state.agent_dir, reward, terminated, truncated)
                return state, out

            return obs0, jax.lax.scan(body, state, actions)[1]

        _ROLLOUTS[key] = jax.jit(jax.vmap(rollout))
    obs0, out = _ROLLOUTS[key](params, jnp.asarray(actions, jnp.int32))
    names = ("obs", "pos", "dir", "reward", "terminated", "truncated")
    return {"obs0": np.asarray(obs0), **{n: np.asarray(x) for n, x in zip(names, out)}}


def _replay(minigrid_envs, ours: dict[str, np.ndarray], actions: np.ndarray) -> dict[str, int]:
    """Step each (minigrid env, reset seed) with its row of `actions` until done and
    compare every step with our rollout. Returns counts of goal reaches and time-outs."""
    counts = {"reached": 0, "timed_out": 0}
    for i, (env, seed) in enumerate(minigrid_envs):
        obs, _ = env.reset(seed=seed)
        np.testing.assert_array_equal(observation_from_minigrid(obs), ours["obs0"][i])
        for t, action in enumerate(actions[i]):
            obs, reward, terminated, truncated, _ = env.step(int(action))
            where = f"level {i}, step {t + 1}"
            x, y = (int(v) for v in env.agent_pos)
            assert [y - 1, x - 1] == ours["pos"][i, t].tolist(), where
            assert env.agent_dir == ours["dir"][i, t], where
            np.testing.assert_array_equal(
                observation_from_minigrid(obs), ours["obs"][i, t], err_msg=where
            )
            assert abs(reward - float(ours["reward"][i, t])) < 1e-6, where
            assert terminated == bool(ours["terminated"][i, t]), where
            done = bool(ours["terminated"][i, t] | ours["truncated"][i, t])
            assert (terminated or truncated) == done, where
            if done:
                counts["reached" if terminated else "timed_out"] += 1
                break
        else:
            raise AssertionError(f"level {i}: no done within {len(actions[i])} steps")
    return counts


def _random_actions(seed: int, shape) -> np.ndarray:
    return np.random.default_rng(seed).choice(3, shape, p=FORWARD_BIASED).astype(np.int32)


def _random_levels(env: Maze, seed: int, n: int):
    keys = jax.random.split(jax.random.PRNGKey(seed), n)
    params = jax.jit(jax.vmap(env.sample_params))(keys)
    host = jax.tree.map(np.asarray, params)
    return params, [params_to_level(jax.tree.map(lambda x, i=i: x[i], host)) for i in range(n)]


def _cross_check_random(env: Maze, seed: int, n: int, extra=()) -> dict[str, int]:
    """n random levels (plus `extra` minigrid env ids, reset with seeds 0, 1, ...) replayed
    in our env and in minigrid with the same random actions."""
    params, levels = _random_levels(env, seed, n)
    minigrid_envs = [
        (
            LevelMiniGridEnv(level, env.max_episode_steps, see_through_walls=env.see_through_walls),
            None,
        )
        for level in levels
    ]
    for env_id, seeds in extra:
        made = gym.make(
            env_id, agent_view_size=env.view_size, max_steps=env.max_episode_steps
        ).unwrapped
        # Some minigrid envs fix see_through_walls in their constructor; it is a plain
        # attribute that gen_obs reads, so set it to the maze's.
        made.see_through_walls = env.see_through_walls
        for s in seeds:
            levels.append(level_from_minigrid(made, s))
            minigrid_envs.append((made, s))
    params = stack_params(levels, env.height, env.width)
    actions = _random_actions(seed, (len(levels), env.max_episode_steps))
    return _replay(minigrid_envs, _rollouts(env, params, actions), actions)


# -- refusing what the maze does not model --------------------------------------------------


@pytest.mark.parametrize(
    "env_id, match",
    [
        ("MiniGrid-LavaCrossingS9N1-v0", "lava at"),
        ("MiniGrid-LavaGapS5-v0", "lava at"),
        ("MiniGrid-DoorKey-5x5-v0", "door at .*key at"),
        ("MiniGrid-KeyCorridorS3R1-v0", "ball at .*door at .*key at"),
        ("MiniGrid-MultiRoom-N2-S4-v0", "door at"),
    ],
)
def test_adapter_refuses_lava_doors_and_keys(env_id, match):
    with pytest.raises(UnsupportedMiniGridLevel, match=match):
        level_from_minigrid(env_id, seed=0)


def test_adapter_refuses_other_grids_and_bad_ids():
    grid = Grid(5, 5)
    grid.wall_rect(0, 0, 5, 5)
    grid.set(1, 1, Goal())
    grid.set(3, 3, Goal())
    with pytest.raises(UnsupportedMiniGridLevel, match="2 goals"):
        level_from_grid(grid, (2, 2), 0)
    grid.set(3, 3, Floor())
    with pytest.raises(UnsupportedMiniGridLevel, match="floor at"):
        level_from_grid(grid, (2, 2), 0)
    grid.set(3, 3, Wall())
    level = level_from_grid(grid, (2, 2), 1, name="hand-made")
    assert level.to_text() == "G..\n.v.\n..#"
    with pytest.raises(ConfigError, match="not a MiniGrid env"):
        level_from_minigrid("CartPole-v1")
    with pytest.raises(ConfigError, match="cannot make minigrid env"):
        level_from_minigrid("MiniGrid-NoSuchEnv-v0")


# -- reading minigrid's own levels ----------------------------------------------------------

SHAPES = {
    "MiniGrid-Empty-5x5-v0": (3, 3),
    "MiniGrid-Empty-Random-5x5-v0": (3, 3),
    "MiniGrid-Empty-6x6-v0": (4, 4),
    "MiniGrid-Empty-Random-6x6-v0": (4, 4),
    "MiniGrid-Empty-8x8-v0": (6, 6),
    "MiniGrid-Empty-16x16-v0": (14, 14),
    "MiniGrid-FourRooms-v0": (17, 17),
    "MiniGrid-SimpleCrossingS9N1-v0": (7, 7),
    "MiniGrid-SimpleCrossingS9N2-v0": (7, 7),
    "MiniGrid-SimpleCrossingS9N3-v0": (7, 7),
    "MiniGrid-SimpleCrossingS11N5-v0": (9, 9),
}


def test_level_env_ids_convert_at_their_documented_sizes():
    assert set(SHAPES) == set(LEVEL_ENV_IDS)
    for env_id in LEVEL_ENV_IDS:
        for level in levels_from_minigrid(env_id, [0, 1]):
            assert level.shape == SHAPES[env_id], env_id
            assert _bfs(level) > 0, env_id
            assert env_id in level.name
    rooms = level_from_minigrid("MiniGrid-FourRooms-v0", seed=3)
    assert rooms.wall_map[8].sum() >= 15 and rooms.wall_map[:, 8].sum() >= 15  # the cross
    with pytest.raises(ConfigError, match="does not fit"):
        Maze().level_to_params(rooms)
    assert Maze(height=17, width=17).level_to_params(rooms).wall_map.shape == (17, 17)


@pytest.mark.parametrize("size, crossings", [(9, 1), (9, 2), (9, 3), (11, 5)])
def test_simple_crossing_generator_is_minigrids(size, crossings):
    env_id = f"MiniGrid-SimpleCrossingS{size}N{crossings}-v0"
    for seed, theirs in enumerate(levels_from_minigrid(env_id, range(25))):
        assert simple_crossing(seed, size, crossings).to_text() == theirs.to_text(), seed


# -- stepping both: identical trajectories --------------------------------------------------


@pytest.mark.slow
def test_same_trajectories_on_random_levels_see_through_walls():
    # The literature's setting: 13 x 13, 25 walls, T = 250, walls seen through; plus
    # minigrid's own Empty rooms (padded with walls into the 13 x 13 maze).
    extra = [("MiniGrid-Empty-Random-6x6-v0", range(4)), ("MiniGrid-Empty-8x8-v0", [0])]
    counts = _cross_check_random(Maze(), seed=0, n=11, extra=extra)
    assert counts["reached"] >= 1 and counts["timed_out"] >= 1


@pytest.mark.slow
def test_same_trajectories_on_small_levels_opaque_walls():
    # A 6 x 6 maze with short episodes: many goal reaches and time-outs.
    env = Maze(height=6, width=6, num_walls=6, see_through_walls=False, max_episode_steps=40)
    counts = _cross_check_random(env, seed=1, n=48)
    assert counts["reached"] >= 8 and counts["timed_out"] >= 8


def test_same_trajectories_on_minigrids_own_crossings():
    # minigrid's SimpleCrossing envs (opaque walls, their own setting) with a 5 x 5 view,
    # against their levels read into a 13 x 13 maze.
    env = Maze(see_through_walls=False, max_episode_steps=100)
    minigrid_envs, levels = [], []
    for env_id in ("MiniGrid-SimpleCrossingS9N1-v0", "MiniGrid-SimpleCrossingS11N5-v0"):
        made = gym.make(env_id, agent_view_size=5, max_steps=100).unwrapped
        assert not made.see_through_walls
        for seed in range(6):
            levels.append(level_from_minigrid(made, seed))
            minigrid_envs.append((made, seed))
    actions = _random_actions(2, (len(levels), 100))
    ours = _rollouts(env, stack_params(levels, 13, 13), actions)
    counts = _replay(minigrid_envs, ours, actions)
    assert counts["reached"] + counts["timed_out"] == len(levels)


def test_goal_on_the_last_step_is_minigrids_reward_without_its_truncated_flag():
    level = Level.from_text(">G")
    env = Maze(height=1, width=2, num_walls=0, max_episode_steps=5)
    theirs = LevelMiniGridEnv(level, max_steps=5)
    theirs.reset()
    params = level.to_params()
    _, state = env.reset(jax.random.PRNGKey(0), params)
    for action in [RIGHT] * 4 + [FORWARD]:
        _, reward_theirs, term_theirs, trunc_theirs, _ = theirs.step(action)
        _, state, reward, terminated, truncated, _ = env.step(
            jax.random.PRNGKey(0), state, action, params
        )
    assert (term_theirs, trunc_theirs) == (True, True)
    assert (bool(terminated), bool(truncated)) == (True, False)
    assert abs(reward_theirs - 0.1) < 1e-9 and abs(float(reward) - 0.1) < 1e-6


@pytest.mark.slow
def test_same_trajectories_on_many_levels():
    for see_through in (True, False):
        for walls in (25, 60):
            env = Maze(see_through_walls=see_through, num_walls=walls)
            counts = _cross_check_random(env, seed=10 + walls, n=128)
            assert counts["reached"] >= 3 and counts["timed_out"] >= 60
    # FourRooms in a 17 x 17 maze, both visibility settings.
    for see_through in (True, False):
        env = Maze(height=17, width=17, see_through_walls=see_through)
        extra = [("MiniGrid-FourRooms-v0", range(24))]
        counts = _cross_check_random(env, seed=3, n=8, extra=extra)
        assert counts["reached"] + counts["timed_out"] == 32
