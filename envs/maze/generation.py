"""The maze's level generation: `sample_level`, the literature's domain randomisation,
and `mutate_level`, ACCEL's level edits. Both jittable, and vmapped over levels by the
env (`Maze.sample_tasks`, `Maze.edit_tasks`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from envs.maze.levels import MazeParams

DEFAULT_WALLS = 25
"""Walls of a generated level (the literature's; ACCEL's other setting is 60)."""


def sample_level(key: jax.Array, height: int, width: int, num_walls) -> MazeParams:
    """A random level, jittable: exactly `num_walls` walls on distinct cells, the agent and
    the goal on two other distinct cells, a uniform direction (domain randomisation).

    `num_walls` may be traced (e.g. vmapped); it is clipped to [0, H * W - 2]. The goal
    need not be reachable (as in dcd's, minimax's and JaxUED's generators).
    """
    num_cells = height * width
    key_cells, key_dir = jax.random.split(key)
    order = jax.random.permutation(key_cells, num_cells)
    rank = jnp.zeros(num_cells, jnp.int32).at[order].set(jnp.arange(num_cells, dtype=jnp.int32))
    num_walls = jnp.clip(jnp.asarray(num_walls, jnp.int32), 0, num_cells - 2)
    agent, goal = order[num_walls], order[num_walls + 1]
    return MazeParams(
        wall_map=(rank < num_walls).reshape(height, width),
        agent_pos=jnp.stack([agent // width, agent % width]).astype(jnp.int32),
        agent_dir=jax.random.randint(key_dir, (), 0, 4, jnp.int32),
        goal_pos=jnp.stack([goal // width, goal % width]).astype(jnp.int32),
    )


NO_OP, FLIP_WALL, MOVE_GOAL = 0, 1, 2
"""The kinds of `mutate_level`'s edits."""


def mutate_level(key: jax.Array, params: MazeParams, num_edits: int) -> MazeParams:
    """ACCEL's level mutator: `num_edits` (static) edits applied one after another,
    jittable (vmap it over levels). JaxUED's make_level_mutator_minimax (its maze level
    mutator), re-implemented.

    Each edit is one kind drawn uniformly: `NO_OP`; `FLIP_WALL`, the wall bit of one cell
    drawn uniformly among all cells but the agent's and the goal's is toggled; `MOVE_GOAL`,
    the goal moves to a cell drawn uniformly among the free cells other than the agent's
    and the goal's own (kept where there is none). The agent and its direction never
    change; agent and goal stay on distinct free cells, so a well-formed level stays
    well-formed, and at most `num_edits` cells differ from the original (a goal move
    counted as one cell).
    """
    height, width = params.wall_map.shape[-2:]
    cells = jnp.arange(height * width)

    def pick(key, allowed):
        """A cell drawn uniformly where `allowed` [H * W]; -1 where none is."""
        cell = jax.random.categorical(key, jnp.where(allowed, 0.0, -jnp.inf))
        return jnp.where(allowed.any(), cell, -1)

    def edit(params: MazeParams, key: jax.Array):
        kind_key, wall_key, goal_key = jax.random.split(key, 3)
        kind = jax.random.randint(kind_key, (), 0, 3)
        walls = params.wall_map.reshape(-1)
        agent = params.agent_pos[0] * width + params.agent_pos[1]
        goal = params.goal_pos[0] * width + params.goal_pos[1]
        others = (cells != agent) & (cells != goal)
        flip = pick(wall_key, others)
        walls = walls ^ ((kind == FLIP_WALL) & (cells == flip))
        target = pick(goal_key, others & ~walls)
        goal = jnp.where((kind == MOVE_GOAL) & (target >= 0), target, goal)
        return params.replace(
            wall_map=walls.reshape(height, width),
            goal_pos=jnp.stack([goal // width, goal % width]).astype(jnp.int32),
        ), None

    if num_edits <= 0:
        return params
    return jax.lax.scan(edit, params, jax.random.split(key, num_edits))[0]
