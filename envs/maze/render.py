"""Pictures of the maze (numpy, MiniGrid's palette): `MazeRendering` gives `Maze` its
`render`, `render_level` and `episode_frames`; PNG and GIF files through
`envs.images.save_png` / `save_gif`."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs.maze.levels import MazeParams, MazeState

FLOOR = (0, 0, 0)
GRID_LINE = (100, 100, 100)
WALL = (100, 100, 100)
GOAL = (0, 255, 0)
AGENT = (255, 0, 0)
"""MiniGrid's colours."""


class MazeRendering:
    """Rendering, mixed into an env with the maze's `reset`, `step` and `view_cells`."""

    def render(
        self,
        state: MazeState,
        params: MazeParams,
        cell_pixels: int = 16,
        show_view: bool = True,
    ) -> np.ndarray:
        """RGB uint8 [(H + 2) * p, (W + 2) * p, 3] (numpy, not jittable), p = cell_pixels.

        MiniGrid's look: a ring of grey walls around the grid, black floor with grey
        grid lines, grey walls, a green goal, the agent a red triangle pointing its way;
        with `show_view`, the cells the agent sees are lightened.
        """
        walls = np.pad(np.asarray(params.wall_map, bool), 1, constant_values=True)
        agent = tuple(np.asarray(state.agent_pos) + 1)
        goal = tuple(np.asarray(params.goal_pos) + 1)
        highlight = np.zeros_like(walls)
        if show_view:
            view = self._jitted("view", self.view_cells)
            rows, cols, _, _, visible = (
                np.asarray(x) for x in view(state.agent_pos, state.agent_dir, params)
            )
            rows, cols = rows[visible] + 1, cols[visible] + 1
            keep = (rows >= 0) & (rows < walls.shape[0]) & (cols >= 0) & (cols < walls.shape[1])
            highlight[rows[keep], cols[keep]] = True
        return _draw(walls, goal, agent, int(state.agent_dir), highlight, cell_pixels)

    @functools.cached_property
    def _render_jits(self) -> dict[str, Any]:
        return {}

    def _jitted(self, name: str, fn):
        """`fn` jitted once per env (rendering helpers; params are arguments)."""
        if name not in self._render_jits:
            self._render_jits[name] = jax.jit(fn)
        return self._render_jits[name]

    def render_level(self, params: MazeParams, cell_pixels: int = 16) -> np.ndarray:
        """The level at its start (no view highlight)."""
        _, state = self._jitted("reset", self.reset)(jax.random.PRNGKey(0), params)
        return self.render(state, params, cell_pixels, show_view=False)

    def episode_frames(
        self, params: MazeParams, actions, cell_pixels: int = 16, show_view: bool = True
    ) -> list[np.ndarray]:
        """Frames of one episode replaying `actions` [T] (host loop over one jitted scan):
        the start, then one per step up to and including the first done step."""
        actions = jnp.asarray(actions, jnp.int32)

        def run(params, actions):
            _, start = self.reset(jax.random.PRNGKey(0), params)

            def body(state, action):
                _, state, _, terminated, truncated, _ = self.step(
                    jax.random.PRNGKey(0), state, action, params
                )
                return state, (state, terminated | truncated)

            return start, jax.lax.scan(body, start, actions)[1]

        start, (states, done) = jax.tree.map(
            np.asarray, self._jitted("episode", run)(params, actions)
        )
        last = int(np.argmax(done)) if done.any() else len(done) - 1
        frames = [self.render(start, params, cell_pixels, show_view)]
        for t in range(last + 1):
            state = jax.tree.map(lambda x, t=t: x[t], states)
            frames.append(self.render(state, params, cell_pixels, show_view))
        return frames


def _triangle_mask(pixels: int, direction: int) -> np.ndarray:
    """[p, p] bool: MiniGrid's agent triangle, pointing right, turned to `direction`."""
    centre = (np.arange(pixels) + 0.5) / pixels
    y, x = np.meshgrid(centre, centre, indexing="ij")
    for _ in range(direction):  # undo one clockwise quarter turn (y grows downwards)
        x, y = y, 1.0 - x
    corners = np.array([(0.12, 0.19), (0.87, 0.50), (0.12, 0.81)])
    inside = np.ones_like(x, bool)
    for i in range(3):
        (x0, y0), (x1, y1) = corners[i], corners[(i + 1) % 3]
        inside &= (x1 - x0) * (y - y0) - (y1 - y0) * (x - x0) >= 0
    return inside


def _draw(walls, goal, agent, agent_dir, highlight, pixels: int) -> np.ndarray:
    if pixels < 4:
        raise ValueError(f"cell_pixels must be >= 4, got {pixels}")
    height, width = walls.shape
    image = np.zeros((height * pixels, width * pixels, 3), np.uint8)
    image[:] = FLOOR
    image[::pixels, :] = GRID_LINE
    image[:, ::pixels] = GRID_LINE
    for (row, col), colour in [(tuple(c), WALL) for c in np.argwhere(walls)] + [(goal, GOAL)]:
        image[row * pixels : (row + 1) * pixels, col * pixels : (col + 1) * pixels] = colour
    top, left = agent[0] * pixels, agent[1] * pixels
    cell = image[top : top + pixels, left : left + pixels]
    cell[_triangle_mask(pixels, agent_dir)] = AGENT
    lit = np.repeat(np.repeat(highlight, pixels, 0), pixels, 1)
    image[lit] = image[lit] + ((255 - image[lit].astype(np.int32)) * 3 // 10).astype(np.uint8)
    return image
