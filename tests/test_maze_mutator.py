"""ACCEL's level mutator (envs.maze.mutate_level, behind Maze.edit_tasks): each edit a
no-op, a wall flip or a goal move, drawn uniformly; levels stay well-formed and at most
`num_edits` cells change.

Every check runs on one jitted batch of LEVELS levels per `num_edits` (one compile each).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs.maze import Maze, MazeParams, is_valid_level, mutate_level

ENV = Maze(height=6, width=6, max_episode_steps=16)
CELLS = ENV.height * ENV.width
LEVELS = 1200
"""Levels per batch: many walls counts, each mutated with its own key."""


@functools.cache
def _mutate(num_edits: int):
    """(levels, keys) -> mutated levels, jitted and vmapped over levels."""
    return jax.jit(jax.vmap(lambda key, params: mutate_level(key, params, num_edits)))


def random_levels(seed: int = 0, n: int = LEVELS) -> MazeParams:
    """n random levels with 0 .. 30 walls (some crowded: few free cells)."""
    walls = jnp.arange(n) % 31
    keys = jax.random.split(jax.random.PRNGKey(seed), n)
    return jax.jit(jax.vmap(ENV.sample_params))(keys, walls)


def mutate(levels: MazeParams, num_edits: int, seed: int = 1) -> MazeParams:
    keys = jax.random.split(jax.random.PRNGKey(seed), levels.wall_map.shape[0])
    return _mutate(num_edits)(keys, levels)


def flat(pos) -> np.ndarray:
    pos = np.asarray(pos)
    return pos[..., 0] * ENV.width + pos[..., 1]


def changes(before: MazeParams, after: MazeParams):
    """Per level: (wall cells changed [n], goal moved [n] bool)."""
    walls = np.asarray(before.wall_map != after.wall_map).reshape(-1, CELLS).sum(-1)
    moved = flat(before.goal_pos) != flat(after.goal_pos)
    return walls, moved


@pytest.mark.parametrize("num_edits", [1, 3, 5])
def test_mutated_levels_are_legal_and_change_at_most_num_edits_cells(num_edits):
    levels = random_levels()
    edited = mutate(levels, num_edits)
    assert edited.wall_map.dtype == jnp.bool_ and edited.wall_map.shape == levels.wall_map.shape
    assert np.asarray(jax.vmap(is_valid_level)(edited)).all()
    agent, goal = flat(edited.agent_pos), flat(edited.goal_pos)
    walls = np.asarray(edited.wall_map).reshape(-1, CELLS)
    rows = np.arange(LEVELS)
    assert (agent != goal).all()
    assert not walls[rows, agent].any() and not walls[rows, goal].any()
    # The agent and its direction never change.
    np.testing.assert_array_equal(edited.agent_pos, levels.agent_pos)
    np.testing.assert_array_equal(edited.agent_dir, levels.agent_dir)
    wall_changes, moved = changes(levels, edited)
    total = wall_changes + moved
    assert total.max() <= num_edits
    # Edits are applied one after another: some levels take num_edits changes.
    assert total.max() == num_edits
    if num_edits > 1:
        # A wall flip and a goal move in the same level's edits.
        assert ((wall_changes > 0) & moved).any()


def test_one_edit_is_a_no_op_a_wall_flip_or_a_goal_move_each_a_third_of_the_time():
    # With 0 .. 30 walls there is always a cell to flip and a free cell to move the goal
    # to, so one edit changes nothing only when it is a no-op.
    levels = random_levels(seed=2)
    edited = mutate(levels, 1, seed=3)
    wall_changes, moved = changes(levels, edited)
    unchanged = (wall_changes == 0) & ~moved
    flipped = (wall_changes == 1) & ~moved
    goal_moved = (wall_changes == 0) & moved
    np.testing.assert_array_equal(unchanged | flipped | goal_moved, True)
    for kind, share in (("no-op", unchanged), ("wall flip", flipped), ("goal move", goal_moved)):
        # 1/3 each: 1200 draws put the share within 0.27 .. 0.40 (5 standard errors).
        assert 0.27 < share.mean() < 0.40, f"{kind}: share {share.mean():.3f}"


def test_flips_and_goal_moves_cover_the_allowed_cells_uniformly():
    # One level mutated many times: flips hit every cell but the agent's and the goal's;
    # goal moves land on every free cell but the agent's and the goal's, never a wall.
    one = jax.tree.map(lambda x: x[7], random_levels(seed=4))
    levels = jax.tree.map(lambda x: jnp.broadcast_to(x, (LEVELS,) + x.shape), one)
    edited = mutate(levels, 1, seed=5)
    wall_changes, moved = changes(levels, edited)
    agent, goal = int(flat(one.agent_pos)), int(flat(one.goal_pos))
    walls = np.asarray(one.wall_map).reshape(-1)
    diff = np.asarray(edited.wall_map != levels.wall_map).reshape(-1, CELLS)
    flipped_cells = np.argmax(diff[wall_changes == 1], -1)
    allowed = np.ones(CELLS, bool)
    allowed[[agent, goal]] = False
    assert set(flipped_cells.tolist()) == set(np.flatnonzero(allowed).tolist())
    new_goals = flat(edited.goal_pos)[moved]
    assert set(new_goals.tolist()) == set(np.flatnonzero(allowed & ~walls).tolist())
    # Uniform: no cell drawn more than three times as often as the expected count.
    for drawn, choices in ((flipped_cells, allowed), (new_goals, allowed & ~walls)):
        counts = np.bincount(drawn, minlength=CELLS)[choices]
        assert counts.max() < 3 * len(drawn) / choices.sum()


def test_a_goal_with_no_free_cell_to_go_to_stays():
    # Every cell a wall but the agent's and the goal's: a goal move finds no cell.
    walls = np.ones((ENV.height, ENV.width), bool)
    walls[0, 0] = walls[5, 5] = False
    one = MazeParams(
        wall_map=jnp.asarray(walls),
        agent_pos=jnp.asarray([0, 0], jnp.int32),
        agent_dir=jnp.int32(1),
        goal_pos=jnp.asarray([5, 5], jnp.int32),
    )
    levels = jax.tree.map(lambda x: jnp.broadcast_to(x, (LEVELS,) + x.shape), one)
    edited = mutate(levels, 1, seed=6)
    wall_changes, moved = changes(levels, edited)
    assert not moved.any() and (wall_changes == 1).any()
    assert np.asarray(jax.vmap(is_valid_level)(edited)).all()


def test_edit_tasks_is_the_mutator_on_tasks_in_canonical_form():
    levels = random_levels(seed=8, n=64)
    tasks = ENV.params_to_task(levels)
    edit = jax.jit(ENV.edit_tasks, static_argnums=2)
    edited = edit(jax.random.PRNGKey(9), tasks, 3)
    assert edited.shape == tasks.shape
    # Canonical and well-formed: decoding and re-encoding changes nothing (a wall on the
    # agent's or the goal's cell would be cleared).
    params = ENV.params_for_tasks(edited)
    np.testing.assert_array_equal(ENV.params_to_task(params), edited)
    wall_changes, moved = changes(levels, params)
    assert (wall_changes + moved).max() <= 3 and (wall_changes + moved).max() > 0
    np.testing.assert_array_equal(edit(jax.random.PRNGKey(9), tasks, 3), edited)
    assert not np.array_equal(edit(jax.random.PRNGKey(10), tasks, 3), edited)
