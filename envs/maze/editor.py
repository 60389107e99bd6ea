"""PAIRED's level editor for the maze: a policy builds a level step by step.

The level editor contract of envs/base.py (`LevelEditorEnv`: reset / step, no
auto-reset), for an adversary:

- Actions: Discrete(H * W), a cell index, row-major (row = a // W, col = a % W).
- Step 0 places the goal on the chosen cell; step 1 the agent (on the goal's cell it goes
  to a uniformly random other cell instead, as in dcd); steps 2 .. 1 + `num_wall_steps`
  each put a wall on the chosen cell, unless it holds the goal, the agent or a wall
  already (then nothing happens, as in dcd: so a level has at most `num_wall_steps`
  walls). The agent's direction is drawn at reset (dcd draws it at reset too); the
  adversary does not choose it.
- The episode is `num_wall_steps + 2` steps (`max_episode_steps`); the last one is
  terminated (a real end). Steps after that change nothing. Reward is always 0: the
  adversary's reward (regret) is computed by the teacher from the students' returns.
- Observation [H * W * 4 + 1 + noise_dim] float32, what PAIRED's adversary sees:
  the full map [H, W, 4] one-hot (wall, empty, goal, agent; the goal and agent channels
  are empty until they are placed), the time step (the number of steps taken so far, a
  raw count in 0..num_wall_steps + 2), and a noise vector, uniform in [0, 1), drawn
  afresh from the key of every reset and step (dcd's random_z, dimension 50).
  `split_observation` undoes the flattening into (map, time, noise), for an adversary
  with a conv over the map and an embedding of the time step (acl.agents.recurrent_ppo's
  GridTimeEncoder, dcd's adversary): `grid_shape` is the map's shape and
  `num_time_steps` the number of time values (0 .. max_episode_steps).
- `level(state)` -> the level built so far as the maze's `MazeParams` (complete, and
  well-formed, once terminated).

Everything is jittable, so a batch of adversaries is one vmap.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from envs._checks import non_negative_int, positive_int
from envs.base import LevelEditorEnv, LevelTaskEnv
from envs.maze.levels import MazeParams

DEFAULT_WALL_STEPS = 50
"""dcd's PAIRED adversary places up to 50 walls (n_clutter) in a 13 x 13 maze."""
DEFAULT_NOISE_DIM = 50
"""dcd's random_z dimension."""
MAP_CHANNELS = ("wall", "empty", "goal", "agent")


@struct.dataclass
class MazeEditorParams:
    """The editor has nothing a teacher may change: an empty pytree."""


@struct.dataclass
class MazeEditorState:
    wall_map: jax.Array
    """[H, W] bool."""
    goal_pos: jax.Array
    """[2] int32 (row, col); meaningful from time 1."""
    agent_pos: jax.Array
    """[2] int32 (row, col); meaningful from time 2."""
    agent_dir: jax.Array
    """int32 in 0..3, drawn at reset."""
    time: jax.Array
    """Steps taken (placements made)."""


class MazeEditor(LevelEditorEnv):
    """Builds `maze`'s levels one cell per step; see the module docstring.

    Static config: `maze` (the Maze env whose levels it builds; `Maze.level_editor`
    passes itself), `num_wall_steps` (50), `noise_dim` (50).
    """

    name = "maze_editor"

    def __init__(
        self,
        maze: LevelTaskEnv,
        num_wall_steps: int = DEFAULT_WALL_STEPS,
        noise_dim: int = DEFAULT_NOISE_DIM,
    ):
        if not (isinstance(maze, LevelTaskEnv) and maze.has_level_editor):
            raise ConfigError(f"maze_editor.maze must be a Maze env, got {type(maze).__name__}")
        self.maze = maze
        self.height, self.width = maze.height, maze.width
        self.num_wall_steps = non_negative_int(num_wall_steps, "maze_editor.num_wall_steps")
        self.noise_dim = positive_int(noise_dim, "maze_editor.noise_dim", allow_none=False)
        self.max_episode_steps = self.num_wall_steps + 2

    @property
    def num_cells(self) -> int:
        return self.height * self.width

    def default_params(self) -> MazeEditorParams:
        return MazeEditorParams()

    def observation_space(self) -> spaces.Box:
        size = self.num_cells * len(MAP_CHANNELS) + 1 + self.noise_dim
        return spaces.Box(
            low=0.0, high=float(self.max_episode_steps), shape=(size,), dtype=jnp.float32
        )

    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(self.num_cells)

    @property
    def grid_shape(self) -> tuple[int, int, int]:
        """(H, W, 4): the shape of the observation's map."""
        return (self.height, self.width, len(MAP_CHANNELS))

    @property
    def num_time_steps(self) -> int:
        """How many values the observation's time step takes: 0 .. max_episode_steps."""
        return self.max_episode_steps + 1

    def split_observation(self, obs: jax.Array):
        """[..., O] -> (map [..., H, W, 4], time [...] int32, noise [..., noise_dim])."""
        map_size = self.num_cells * len(MAP_CHANNELS)
        grid = obs[..., :map_size].reshape(
            obs.shape[:-1] + (self.height, self.width, len(MAP_CHANNELS))
        )
        time = jnp.round(obs[..., map_size]).astype(jnp.int32)
        return grid, time, obs[..., map_size + 1 :]

    def level(self, state: MazeEditorState) -> MazeParams:
        """The level built so far as maze params (complete once terminated)."""
        return MazeParams(
            wall_map=state.wall_map,
            agent_pos=state.agent_pos,
            agent_dir=state.agent_dir,
            goal_pos=state.goal_pos,
        )

    def _draw(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """One uniform draw per reset / step (a single PRNG call keeps compiles small):
        (noise [noise_dim], one more uniform in [0, 1) for the step's own use)."""
        draw = jax.random.uniform(key, (self.noise_dim + 1,), jnp.float32)
        return draw[: self.noise_dim], draw[self.noise_dim]

    def _observation(self, state: MazeEditorState, noise: jax.Array) -> jax.Array:
        cells = jnp.zeros((self.height, self.width), bool)
        goal = cells.at[state.goal_pos[0], state.goal_pos[1]].set(state.time >= 1)
        agent = cells.at[state.agent_pos[0], state.agent_pos[1]].set(state.time >= 2)
        empty = ~state.wall_map & ~goal & ~agent
        grid = jnp.stack([state.wall_map, empty, goal, agent], axis=-1).astype(jnp.float32)
        time = state.time.astype(jnp.float32)[None]
        return jnp.concatenate([grid.reshape(-1), time, noise])

    def reset(self, key: jax.Array, params: MazeEditorParams | None = None):
        del params
        noise, extra = self._draw(key)
        state = MazeEditorState(
            wall_map=jnp.zeros((self.height, self.width), bool),
            goal_pos=jnp.zeros(2, jnp.int32),
            agent_pos=jnp.zeros(2, jnp.int32),
            agent_dir=jnp.minimum(jnp.floor(extra * 4), 3).astype(jnp.int32),
            time=jnp.int32(0),
        )
        return self._observation(state, noise), state

    def step(
        self,
        key: jax.Array,
        state: MazeEditorState,
        action: jax.Array,
        params: MazeEditorParams | None = None,
    ):
        """`action` int: the cell index (clipped into the grid)."""
        del params
        noise, extra = self._draw(key)
        cell = jnp.clip(jnp.asarray(action, jnp.int32), 0, self.num_cells - 1)
        time = state.time
        active = time < self.max_episode_steps
        goal_flat = state.goal_pos[0] * self.width + state.goal_pos[1]
        agent_flat = state.agent_pos[0] * self.width + state.agent_pos[1]

        def unflat(flat):
            return jnp.stack([flat // self.width, flat % self.width]).astype(jnp.int32)

        goal_pos = jnp.where(active & (time == 0), unflat(cell), state.goal_pos)
        # On the goal's cell the agent goes to a uniformly random other cell.
        offset = jnp.minimum(jnp.floor(extra * (self.num_cells - 1)), self.num_cells - 2)
        other = (goal_flat + 1 + offset.astype(jnp.int32)) % self.num_cells
        agent_cell = jnp.where(cell == goal_flat, other, cell)
        agent_pos = jnp.where(active & (time == 1), unflat(agent_cell), state.agent_pos)
        walls = state.wall_map.reshape(-1)
        puts_wall = active & (time >= 2) & (cell != goal_flat) & (cell != agent_flat)
        walls = walls.at[cell].set(walls[cell] | puts_wall)
        time = jnp.where(active, time + 1, time)
        state = MazeEditorState(
            wall_map=walls.reshape(self.height, self.width),
            goal_pos=goal_pos,
            agent_pos=agent_pos,
            agent_dir=state.agent_dir,
            time=time,
        )
        terminated = time >= self.max_episode_steps
        obs = self._observation(state, noise)
        return obs, state, jnp.float32(0.0), terminated, jnp.bool_(False), {}
