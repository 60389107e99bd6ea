"""What the maze's agent sees: the egocentric V x V view in MiniGrid's agent-view
convention, with or without MiniGrid's occlusion by walls (`process_vis`), flattened
with a one-hot direction into the observation (envs/maze/__init__.py says the layout).

`MazeObservation` is the mixin that gives `Maze` its observation; the module's
functions precompute the view's geometry per view size.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from envs.base import ImageDirectionObservation
from envs.maze.levels import DIR_TO_DELTA, MazeParams

CHANNELS = ("wall", "empty", "goal")
"""Channels of the observation image; an unseen cell is all zeros."""
DEFAULT_VIEW = 5
"""V: the side of the default view."""
MAX_OPAQUE_VIEW = 7
"""Largest view_size with see_through_walls=False (its row table has 4^V rows)."""


class MazeObservation(ImageDirectionObservation):
    """The maze's observation, mixed into an env with these static fields."""

    height: int
    width: int
    view_size: int
    see_through_walls: bool

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(V, V, 3): the observation image's shape."""
        return (self.view_size, self.view_size, len(CHANNELS))

    def observation_space(self) -> spaces.Box:
        size = self.view_size * self.view_size * len(CHANNELS) + 4
        return spaces.Box(low=0.0, high=1.0, shape=(size,), dtype=jnp.float32)

    def split_observation(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """[..., V * V * 3 + 4] -> (image [..., V, V, 3], direction [...] int32)."""
        image_size = self.view_size * self.view_size * len(CHANNELS)
        image = obs[..., :image_size].reshape(obs.shape[:-1] + self.image_shape)
        return image, jnp.argmax(obs[..., image_size:], axis=-1).astype(jnp.int32)

    def view_cells(self, agent_pos: jax.Array, agent_dir: jax.Array, params: MazeParams):
        """The agent's view: world (rows, cols) [V, V] int32 of each view cell, and its
        wall, goal and visible masks [V, V] bool (envs/maze/__init__.py's convention)."""
        size = self.view_size
        row_offsets, col_offsets = _view_offsets(size)
        rows = agent_pos[0] + jnp.asarray(row_offsets)[agent_dir]
        cols = agent_pos[1] + jnp.asarray(col_offsets)[agent_dir]
        inside = (rows >= 0) & (rows < self.height) & (cols >= 0) & (cols < self.width)
        wall_here = params.wall_map[
            jnp.clip(rows, 0, self.height - 1), jnp.clip(cols, 0, self.width - 1)
        ]
        wall = ~inside | wall_here
        goal = inside & (rows == params.goal_pos[0]) & (cols == params.goal_pos[1])
        if self.see_through_walls:
            visible = jnp.ones((size, size), bool)
        else:
            visible = _visibility(wall)
        return rows, cols, wall, goal, visible

    def observation(self, agent_pos: jax.Array, agent_dir: jax.Array, params: MazeParams):
        """[V * V * 3 + 4] float32 observation of an agent at (agent_pos, agent_dir)."""
        return self._observe(agent_pos, agent_dir, self.padded_cells(params))

    def padded_cells(self, params: MazeParams) -> jax.Array:
        """`MazeState.cells` of a level: [H + 2(V - 1), W + 2(V - 1), 3] uint8."""
        border = self.view_size - 1
        wall = jnp.pad(params.wall_map, border, constant_values=True)
        goal = jnp.zeros(wall.shape, bool)
        goal = goal.at[params.goal_pos[0] + border, params.goal_pos[1] + border].set(True)
        return jnp.stack([wall, ~wall & ~goal, goal], axis=-1).astype(jnp.uint8)

    def _observe(self, agent_pos: jax.Array, agent_dir: jax.Array, cells: jax.Array):
        """The observation from `MazeState.cells`: the view's window, turned to face up.
        Equal to the cell-by-cell `observation_from_view_cells` (tested)."""
        size = self.view_size
        corners, window_turns = _view_windows(size)
        corner = agent_pos + (size - 1) + jnp.asarray(corners)[agent_dir]
        window = jax.lax.dynamic_slice(cells, (corner[0], corner[1], 0), (size, size, 3))
        # uint8 storage (4x less memory to read at large batch), float arithmetic (XLA's CPU
        # code is slower on bool and uint8 arrays).
        window = window.astype(jnp.float32)
        turned = [jnp.rot90(window, turns) for turns in window_turns]
        image = jnp.select([agent_dir == d for d in range(3)], turned[:3], turned[3])
        if not self.see_through_walls:
            image = image * _visibility(image[..., 0] > 0.5)[..., None]
        own = _own_cell(size)[..., None]
        image = jnp.where(own, jnp.array([0.0, 1.0, 0.0]), image)  # shows empty, as in MiniGrid
        direction = jax.nn.one_hot(agent_dir, 4, dtype=jnp.float32)
        return jnp.concatenate([image.reshape(-1), direction])

    def observation_from_view_cells(self, agent_pos, agent_dir, params: MazeParams):
        """`observation` computed cell by cell from `view_cells`: the reference that the
        windowed fast path is tested against."""
        _, _, wall, goal, visible = self.view_cells(agent_pos, agent_dir, params)
        own = _own_cell(self.view_size)
        wall, goal = wall & ~own, goal & ~own  # the agent's cell shows empty, as in MiniGrid
        image = jnp.stack([wall, ~wall & ~goal, goal], axis=-1) & visible[..., None]
        direction = jax.nn.one_hot(agent_dir, 4, dtype=jnp.float32)
        return jnp.concatenate([image.astype(jnp.float32).reshape(-1), direction])


def _view_offsets(size: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) offsets [4, V, V] int32 from the agent's cell to each cell of its view,
    per direction: view row r is V - 1 - r cells ahead, column c is c - V // 2 to the
    right (envs/maze/__init__.py's convention)."""
    steps_ahead = (size - 1 - np.arange(size))[:, None]
    steps_right = (np.arange(size) - size // 2)[None, :]
    ahead = DIR_TO_DELTA[:, :, None, None]
    right = np.roll(DIR_TO_DELTA, -1, axis=0)[:, :, None, None]
    offsets = ahead * steps_ahead + right * steps_right  # [4, 2, V, V]
    return offsets[:, 0].astype(np.int32), offsets[:, 1].astype(np.int32)


def _own_cell(size: int) -> np.ndarray:
    """[V, V] bool, True on the agent's own cell (bottom centre) of its view."""
    own = np.zeros((size, size), bool)
    own[size - 1, size // 2] = True
    return own


@functools.cache
def _view_windows(size: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """For each direction: the top-left corner of the V x V window the agent sees,
    relative to the agent's cell ([4, 2] int32), and the quarter turns (`np.rot90`) that
    put the window in the view's layout (`view_cells`: facing up, row 0 the farthest)."""
    row_offsets, col_offsets = _view_offsets(size)
    corners, turns = [], []
    for rows, cols in zip(row_offsets, col_offsets):
        corner = (rows.min(), cols.min())
        window_index = (rows - corner[0]) * size + (cols - corner[1])
        grid = np.arange(size * size).reshape(size, size)
        turns.append(next(k for k in range(4) if np.array_equal(np.rot90(grid, k), window_index)))
        corners.append(corner)
    return np.asarray(corners, np.int32), tuple(turns)


@functools.cache
def _row_sweep_table(size: int) -> np.ndarray:
    """[4^V, V] bool: one row of MiniGrid's `process_vis` sweep, for every (seen-before
    bits, see-through bits) of the row: the row's cells seen after MiniGrid's left-to-right
    and right-to-left passes. Row index = seen bits + 2^V * see-through bits (bit c is
    column c). Built by running MiniGrid's loops literally."""
    table = np.zeros((4**size, size), bool)
    for index in range(4**size):
        seen = [(index >> c) & 1 == 1 for c in range(size)]
        clear = [(index >> (size + c)) & 1 == 1 for c in range(size)]
        for c in range(size - 1):
            if seen[c] and clear[c]:
                seen[c + 1] = True
        for c in reversed(range(1, size)):
            if seen[c] and clear[c]:
                seen[c - 1] = True
        table[index] = seen
    return table


def _visibility(wall: jax.Array) -> jax.Array:
    """MiniGrid's `Grid.process_vis` on a V x V view ([row, col], agent at the bottom
    centre): which cells the agent sees when walls block sight. [V, V] bool -> [V, V] bool.

    MiniGrid sweeps each row from the agent's up: left to right, a seen cell that is not a
    wall shows its right neighbour; then right to left, its left neighbour; and every
    seen non-wall cell shows the three cells above it (up-left, up, up-right). A row's
    two passes are a lookup in `_row_sweep_table` (cheap to compile); MiniGrid indexes
    [x, y], here [row, col].
    """
    size = wall.shape[0]
    table = jnp.asarray(_row_sweep_table(size))
    weights = jnp.asarray(1 << np.arange(size), jnp.int32)
    see_through = ~wall
    none = jnp.zeros((1,), bool)
    rows = [None] * size
    seen = jnp.zeros(size, bool).at[size // 2].set(True)
    for r in reversed(range(size)):
        index = jnp.sum(seen * weights) + jnp.sum(see_through[r] * weights) * (1 << size)
        rows[r] = table[index]
        spread = rows[r] & see_through[r]
        left, right = jnp.concatenate([spread[1:], none]), jnp.concatenate([none, spread[:-1]])
        seen = spread | left | right
    return jnp.stack(rows)
