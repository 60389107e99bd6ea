"""The maze env: its static config, the map between tasks and levels, the level
generator's entry points, and the dynamics (MiniGrid's; envs/maze/__init__.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from acl.core.spaces import UNIT, Box
from envs._checks import non_negative_int, positive_int
from envs.base import LevelTaskEnv
from envs.maze.editor import DEFAULT_NOISE_DIM, DEFAULT_WALL_STEPS, MazeEditor
from envs.maze.generation import DEFAULT_WALLS, mutate_level, sample_level
from envs.maze.levels import (
    DEFAULT_SIZE,
    DIR_TO_DELTA,
    Level,
    MazeParams,
    MazeState,
    level_to_params,
    shortest_path_length,
)
from envs.maze.render import MazeRendering
from envs.maze.view import DEFAULT_VIEW, MAX_OPAQUE_VIEW, MazeObservation
from envs.registry import ENVS

LEFT, RIGHT, FORWARD = 0, 1, 2
"""The actions: MiniGrid's turn left, turn right, move forward."""
NUM_ACTIONS = 3
DEFAULT_STEPS = 250
"""T: the episode length of dcd's and JaxUED's mazes."""


def _bool_config(value, field: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{field} must be true or false, got {value!r}")
    return value


@ENVS.register("maze")
class Maze(MazeObservation, MazeRendering, LevelTaskEnv):
    """MiniGrid-style maze, task = a level; see envs/maze/__init__.py.

    Static config: `height`, `width` (interior cells, 13 x 13 by default),
    `max_episode_steps` (T = 250), `num_walls` (walls of `sample_level`'s domain
    randomisation, 25; the literature's other setting is 60), `see_through_walls`
    (True), `view_size` (5, odd, >= 3).
    """

    name = "maze"
    has_level_edits = True
    has_level_editor = True

    def __init__(
        self,
        height: int = DEFAULT_SIZE,
        width: int = DEFAULT_SIZE,
        max_episode_steps: int | None = None,
        num_walls: int = DEFAULT_WALLS,
        see_through_walls: bool = True,
        view_size: int = DEFAULT_VIEW,
    ):
        self.height = positive_int(height, "env.height", allow_none=False)
        self.width = positive_int(width, "env.width", allow_none=False)
        num_cells = self.height * self.width
        if num_cells < 2:
            raise ConfigError(
                f"env.height * env.width must be >= 2 (an agent and a goal), got {num_cells}"
            )
        self.max_episode_steps = (
            positive_int(max_episode_steps, "env.max_episode_steps") or DEFAULT_STEPS
        )
        self.num_walls = non_negative_int(num_walls, "env.num_walls")
        if self.num_walls > num_cells - 2:
            raise ConfigError(
                f"env.num_walls must be <= height * width - 2 = {num_cells - 2} "
                f"(the agent and the goal need free cells), got {self.num_walls}"
            )
        self.see_through_walls = _bool_config(see_through_walls, "env.see_through_walls")
        self.view_size = positive_int(view_size, "env.view_size", allow_none=False)
        if self.view_size < 3 or self.view_size % 2 == 0:
            raise ConfigError(
                f"env.view_size must be odd and >= 3 (MiniGrid's rule), got {view_size}"
            )
        if not self.see_through_walls and self.view_size > MAX_OPAQUE_VIEW:
            raise ConfigError(
                f"env.view_size must be <= {MAX_OPAQUE_VIEW} with see_through_walls=false, "
                f"got {view_size}"
            )

        names, units = [], []
        for row in range(self.height):
            for col in range(self.width):
                names.append(f"wall_{row}_{col}")
                units.append("wall if > 0.5")
        names += ["agent_row", "agent_col", "agent_dir", "goal_row", "goal_col"]
        units += ["row = floor(x H)", "col = floor(x W)", "dir = floor(4 x)"]
        units += ["row = floor(x H)", "col = floor(x W)"]
        # The default level's task (numpy: constructing an env runs no JAX op).
        default = np.zeros(num_cells + 5)
        default[num_cells : num_cells + 3] = (0.5 / self.height, 0.5 / self.width, 0.5 / 4)
        default[num_cells + 3 :] = (1 - 0.5 / self.height, 1 - 0.5 / self.width)
        self.task_space = Box(
            low=(0.0,) * len(names),
            high=(1.0,) * len(names),
            names=tuple(names),
            units=tuple(units),
            default=tuple(default.tolist()),
            limits=(UNIT,) * len(names),
        )
        self.success_threshold = 0.0
        self.return_bounds = (0.0, 1.0)

    # -- task and levels ----------------------------------------------------------------

    def default_params(self) -> MazeParams:
        """An empty maze: the agent top-left facing right, the goal bottom-right."""
        return MazeParams(
            wall_map=jnp.zeros((self.height, self.width), bool),
            agent_pos=jnp.zeros(2, jnp.int32),
            agent_dir=jnp.int32(0),
            goal_pos=jnp.asarray([self.height - 1, self.width - 1], jnp.int32),
        )

    def level_editor(
        self, num_wall_steps: int | None = None, noise_dim: int | None = None
    ) -> MazeEditor:
        """The UED level editor of this maze (envs.maze.editor.MazeEditor): an env whose
        episodes place the goal, the agent and then walls; None keeps the editor's
        defaults (dcd's 50 wall steps, a 50-dim noise vector)."""
        return MazeEditor(
            self,
            num_wall_steps=DEFAULT_WALL_STEPS if num_wall_steps is None else num_wall_steps,
            noise_dim=DEFAULT_NOISE_DIM if noise_dim is None else noise_dim,
        )

    def shortest_path_length(self, params: MazeParams) -> jax.Array:
        """Fewest forward moves from the agent to the goal of one level; -1 if unreachable."""
        return shortest_path_length(params)

    def task_to_params(self, task: jax.Array, base_params: MazeParams | None = None) -> MazeParams:
        """task [H * W + 5] in [0, 1] -> a well-formed level (envs/maze/__init__.py).

        The params hold nothing but the task, so `base_params` is not read.
        """
        del base_params
        task = jnp.asarray(task, jnp.float32)
        num_cells = self.height * self.width

        def index(x, n):
            return jnp.clip(jnp.floor(x * n), 0, n - 1).astype(jnp.int32)

        agent_row, agent_col = (
            index(task[num_cells], self.height),
            index(task[num_cells + 1], self.width),
        )
        agent_dir = index(task[num_cells + 2], 4)
        goal_row, goal_col = (
            index(task[num_cells + 3], self.height),
            index(task[num_cells + 4], self.width),
        )
        agent = agent_row * self.width + agent_col
        goal = goal_row * self.width + goal_col
        goal = jnp.where(goal == agent, (agent + 1) % num_cells, goal)
        walls = (task[:num_cells] > 0.5).at[agent].set(False).at[goal].set(False)
        return MazeParams(
            wall_map=walls.reshape(self.height, self.width),
            agent_pos=jnp.stack([agent_row, agent_col]),
            agent_dir=agent_dir,
            goal_pos=jnp.stack([goal // self.width, goal % self.width]).astype(jnp.int32),
        )

    def params_to_task(self, params: MazeParams) -> jax.Array:
        """MazeParams -> task [H * W + 5] (cell centres); broadcasts over leading axes."""
        walls = jnp.asarray(params.wall_map, jnp.float32)
        walls = walls.reshape(walls.shape[:-2] + (self.height * self.width,))

        def centre(i, n):
            return ((jnp.asarray(i, jnp.float32) + 0.5) / n)[..., None]

        return jnp.concatenate(
            [
                walls,
                centre(params.agent_pos[..., 0], self.height),
                centre(params.agent_pos[..., 1], self.width),
                centre(params.agent_dir, 4),
                centre(params.goal_pos[..., 0], self.height),
                centre(params.goal_pos[..., 1], self.width),
            ],
            axis=-1,
        )

    def level_to_params(self, level: Level) -> MazeParams:
        """A host Level (at most H x W; padded with walls) -> this env's params."""
        return level_to_params(level, self.height, self.width)

    def sample_params(self, key: jax.Array, num_walls: jax.Array | int | None = None) -> MazeParams:
        """`sample_level` at this env's size (default `self.num_walls`); jittable."""
        num_walls = self.num_walls if num_walls is None else num_walls
        return sample_level(key, self.height, self.width, num_walls)

    def sample_tasks(
        self, key: jax.Array, n: int, num_walls: jax.Array | int | None = None
    ) -> jax.Array:
        """n domain-randomised levels as tasks [n, H * W + 5]."""
        params = jax.vmap(lambda k: self.sample_params(k, num_walls))(jax.random.split(key, n))
        return self.params_to_task(params)

    def edit_tasks(self, key: jax.Array, tasks: jax.Array, num_edits: int) -> jax.Array:
        """ACCEL's edits of levels tasks [n, H * W + 5] -> tasks [n, H * W + 5], jittable.

        Each level gets `num_edits` (static) edits of `mutate_level`, one after another,
        each a no-op, a wall flip or a goal move, chosen uniformly (JaxUED's
        make_level_mutator_minimax (its maze level mutator), re-implemented). So at most
        `num_edits` cells change (a goal move counts as one) and the level stays
        well-formed. The result is in canonical form (`params_to_task`), so an edited
        level compares equal to the same level reached any other way.
        """
        params = self.params_for_tasks(tasks)
        if int(num_edits) > 0:
            keys = jax.random.split(key, tasks.shape[0])
            params = jax.vmap(lambda k, p: mutate_level(k, p, int(num_edits)))(keys, params)
        return self.params_to_task(params)

    # -- dynamics -----------------------------------------------------------------------

    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(NUM_ACTIONS)

    def reset(self, key: jax.Array, params: MazeParams):
        del key  # deterministic: the level is the task
        state = MazeState(
            agent_pos=jnp.asarray(params.agent_pos, jnp.int32),
            agent_dir=jnp.asarray(params.agent_dir, jnp.int32),
            time=jnp.int32(0),
            cells=self.padded_cells(params),
        )
        return self._observe(state.agent_pos, state.agent_dir, state.cells), state

    def step(self, key: jax.Array, state: MazeState, action: jax.Array, params: MazeParams):
        """`action`: 0 turn left, 1 turn right, 2 forward; other values are no-ops."""
        del key, params  # the level is in state.cells
        action = jnp.asarray(action, jnp.int32)
        turn = jnp.where(action == LEFT, 3, jnp.where(action == RIGHT, 1, 0))
        agent_dir = (state.agent_dir + turn) % 4
        front = state.agent_pos + jnp.asarray(DIR_TO_DELTA)[state.agent_dir]
        pad = self.view_size - 1
        front_cell = state.cells[front[0] + pad, front[1] + pad]  # the border is wall
        moves = (action == FORWARD) & (front_cell[0] == 0)
        agent_pos = jnp.where(moves, front, state.agent_pos).astype(jnp.int32)
        time = state.time + 1
        reached = moves & (front_cell[2] == 1)
        reward = jnp.where(reached, 1.0 - 0.9 * (time / self.max_episode_steps), 0.0)
        terminated = reached
        truncated = (time >= self.max_episode_steps) & ~terminated
        state = state.replace(agent_pos=agent_pos, agent_dir=agent_dir, time=time)
        obs = self._observe(agent_pos, agent_dir, state.cells)
        return obs, state, reward.astype(jnp.float32), terminated, truncated, {"reached": reached}
