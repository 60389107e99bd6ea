"""The maze of the unsupervised-environment-design literature (PAIRED, PLR, ACCEL), with
MiniGrid semantics: the level is a teacher's task, so a batch of levels is one vmap.

Same dynamics and observation as MiniGrid's MiniGridEnv (checked step by step against the
real `minigrid` package in tests/test_maze_minigrid.py), on which dcd's mazes are built
(JaxUED's maze differs only in leaving the agent in front of the goal it reaches), on a
grid of H x W interior cells (static config, 13 x 13 by default; larger is allowed).
Everything outside the grid is wall, so a level needs no border of walls
(MiniGrid's 15 x 15 grid with its outer wall ring is this 13 x 13 interior).

Coordinates: a cell is (row, col), row 0 at the top (MiniGrid's (x, y) = (col, row), plus
one for its outer wall). Directions are MiniGrid's: 0 right (col + 1), 1 down (row + 1),
2 left (col - 1), 3 up (row - 1).

Level = params (`MazeParams`, everything a teacher may change):
    wall_map [H, W] bool, agent_pos [2] int32 (row, col), agent_dir int32 in 0..3,
    goal_pos [2] int32 (row, col).
A well-formed level has the agent and the goal on distinct free cells (`is_valid_level`);
the goal need not be reachable (`shortest_path_length` says whether it is).
`Level` is the same on the host (numpy), with a text form ('#' wall, '.' free, 'G' goal,
'>' 'v' '<' '^' the agent facing right/down/left/up) and `level_to_params` (which pads a
smaller level with walls to the env's size: outside the grid is wall anyway, so that
changes nothing an agent sees or does) and `params_to_level` between the two.

Actions: Discrete(3), MiniGrid's first three: 0 turn left, 1 turn right, 2 move forward
(blocked by a wall or the grid's edge). Any other value is a no-op that still takes a
step, as MiniGrid's pickup / drop / toggle / done are in a maze with nothing to pick up.

Observation [V * V * 3 + 4] float32 (V = `view_size`, 5), `split_observation` undoes it:
- image [V, V, 3]: the agent's egocentric view in MiniGrid's agent-view convention (the
  agent at the bottom centre, row V - 1 and column V // 2, looking up: row 0 is the
  farthest row ahead, column 0 the agent's left). Stored [row, col, channel] (image
  order), i.e. the transpose of MiniGrid's `obs["image"]`, which is indexed [x, y].
  Channels one-hot (wall, empty, goal); a cell the agent cannot see is all zeros
  (MiniGrid's "unseen"). Cells outside the grid are walls. The agent's own cell shows
  empty (MiniGrid draws what the agent carries there: nothing).
- direction [4]: one-hot of agent_dir.
Seeing through walls (static config `see_through_walls`, default True, as in dcd's
adversarial maze and JaxUED, which never occludes): with True every cell of the view is
visible; with False a wall hides what is behind it, by MiniGrid's own `process_vis`
sweep (MiniGrid's default, and its crossing envs' setting).

Reward: reaching the goal (moving forward onto it) gives 1 - 0.9 * t / T, where t counts
the steps of the episode including this one and T = `max_episode_steps`, and terminates
the episode; every other step gives 0. This is MiniGrid's `_reward` exactly (its
step_count is incremented before the reward; JaxUED's `(time + 1) / T` is the same).
Episodes are truncated after T steps, T = 250 by default, for training and evaluation
alike (the length of dcd's and JaxUED's adversarial mazes and of JaxUED's evaluation;
dcd's held-out maze envs default to 2 * 15^2 = 450 steps). MiniGrid sets truncated on
step T even when that step also terminates; here a step is terminated or truncated,
never both (`done` is the same). Return = the one reward: success = return > 0 (the
lowest success reward is 0.1), return bounds (0, 1).

Task [H * W + 5] in [0, 1] (`task_to_params`, inverse `params_to_task`):
    task[:H * W]  the wall bitmap, row-major: a wall where > 0.5;
    then agent row, agent col, agent dir, goal row, goal col, each x -> floor(x * n)
    clipped to n - 1 (n = H, W, 4, H, W), so a uniform task is a random level: each
    cell a wall with probability 1/2, the agent, its direction and the goal uniform.
The agent's and the goal's cells are cleared of walls; a goal on the agent's cell moves
to the next cell in row-major order (wrapping), also cleared. `params_to_task` writes
cell centres ((i + 0.5) / n), so the round trip is exact. The literature's domain
randomisation is `sample_level` (`num_walls`
distinct walls, 25 by default, 60 in ACCEL's setting), also as `sample_params`,
`sample_tasks`; ACCEL's level edits are `edit_tasks` (`mutate_level`'s edits: each a no-op,
a wall flip or a goal move, as JaxUED's maze mutator).

Rendering (numpy, MiniGrid's palette): `render(state, params)` -> uint8 RGB with the
visible view highlighted, `render_level(params)`, `episode_frames(params, actions)`, and
PNG / GIF through `envs.images.save_png` / `save_gif`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from acl.core.spaces import UNIT, Box
from envs._checks import non_negative_int, positive_int
from envs.base import TaskEnv
from envs.registry import ENVS

LEFT, RIGHT, FORWARD = 0, 1, 2
"""The actions: MiniGrid's turn left, turn right, move forward."""
NUM_ACTIONS = 3
DIR_TO_DELTA = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]], np.int32)
"""[4, 2] (d_row, d_col) of the directions right, down, left, up (MiniGrid's order)."""
AGENT_CHARS = ">v<^"
"""Text-form character of the agent facing each direction."""
CHANNELS = ("wall", "empty", "goal")
"""Channels of the observation image; an unseen cell is all zeros."""
DEFAULT_SIZE = 13
DEFAULT_STEPS = 250
DEFAULT_WALLS = 25
DEFAULT_VIEW = 5


# -- levels --------------------------------------------------------------------------


@struct.dataclass
class MazeParams:
    """A level: everything a teacher may change (see the module docstring)."""

    wall_map: jax.Array
    """[H, W] bool: True where a wall is."""
    agent_pos: jax.Array
    """[2] int32 (row, col) of the agent's start cell."""
    agent_dir: jax.Array
    """int32 start direction: 0 right, 1 down, 2 left, 3 up."""
    goal_pos: jax.Array
    """[2] int32 (row, col) of the goal cell."""


@struct.dataclass
class MazeState:
    agent_pos: jax.Array
    """[2] int32 (row, col)."""
    agent_dir: jax.Array
    """int32 in 0..3."""
    time: jax.Array
    """Steps taken in this episode."""
    cells: jax.Array
    """[H + 2(V - 1), W + 2(V - 1), 3] uint8: the level drawn in the observation's
    one-hot channels (wall, empty, goal), inside a border of V - 1 walls; built at reset.
    A step's view is one V x V window of it, turned to face up (as in JaxUED), instead of
    V * V bounds-checked gathers and a one-hot encoding (see experiments/bench_maze.py)."""


@dataclass(frozen=True, eq=False)
class Level:
    """A level on the host: numpy wall map, Python ints. `to_params` / `level_to_params`
    turn it into `MazeParams`; `from_text` / `to_text` read and write the text form."""

    wall_map: np.ndarray
    """[h, w] bool."""
    agent_pos: tuple[int, int]
    """(row, col)."""
    agent_dir: int
    """0 right, 1 down, 2 left, 3 up."""
    goal_pos: tuple[int, int]
    """(row, col)."""
    name: str = ""
    """Where the level comes from (error messages, captions)."""

    def __post_init__(self):
        walls = np.asarray(self.wall_map)
        if walls.ndim != 2 or walls.size == 0:
            raise ConfigError(f"level {self.name!r}: wall_map must be 2-D, got {walls.shape}")
        object.__setattr__(self, "wall_map", walls.astype(bool))
        object.__setattr__(self, "agent_pos", tuple(int(v) for v in self.agent_pos))
        object.__setattr__(self, "goal_pos", tuple(int(v) for v in self.goal_pos))
        object.__setattr__(self, "agent_dir", int(self.agent_dir))
        height, width = walls.shape
        for what, (row, col) in (("agent", self.agent_pos), ("goal", self.goal_pos)):
            if not (0 <= row < height and 0 <= col < width):
                raise ConfigError(
                    f"level {self.name!r}: {what} cell {(row, col)} is outside the "
                    f"{height} x {width} grid"
                )
            if walls[row, col]:
                raise ConfigError(f"level {self.name!r}: {what} cell {(row, col)} is a wall")
        if self.agent_pos == self.goal_pos:
            raise ConfigError(f"level {self.name!r}: agent and goal share cell {self.agent_pos}")
        if not 0 <= self.agent_dir < 4:
            raise ConfigError(
                f"level {self.name!r}: agent_dir must be in 0..3, got {self.agent_dir}"
            )

    @property
    def shape(self) -> tuple[int, int]:
        return self.wall_map.shape

    @property
    def num_walls(self) -> int:
        return int(self.wall_map.sum())

    @classmethod
    def from_text(cls, text: str, name: str = "") -> Level:
        """Parse the text form: one row per line, '#' wall, '.' free, 'G' the goal, one of
        '>' 'v' '<' '^' the agent and its direction. Lines starting with ';' are comments;
        blank lines and surrounding whitespace are ignored. Raises ConfigError."""
        rows = [line.strip() for line in text.splitlines()]
        rows = [r for r in rows if r and not r.startswith(";")]
        if not rows:
            raise ConfigError(f"level {name!r}: no grid rows")
        widths = sorted({len(r) for r in rows})
        if len(widths) != 1:
            raise ConfigError(f"level {name!r}: rows must have the same width, got {widths}")
        grid = np.array([list(r) for r in rows])
        bad = sorted(set(grid.ravel()) - set("#.G" + AGENT_CHARS))
        if bad:
            raise ConfigError(
                f"level {name!r}: unknown characters {bad}; use '#', '.', 'G', '>', 'v', '<', '^'"
            )
        goals = np.argwhere(grid == "G")
        agents = np.argwhere(np.isin(grid, list(AGENT_CHARS)))
        if len(goals) != 1 or len(agents) != 1:
            raise ConfigError(
                f"level {name!r}: needs exactly one goal 'G' and one agent (>v<^), "
                f"got {len(goals)} goals and {len(agents)} agents"
            )
        agent = tuple(int(v) for v in agents[0])
        return cls(
            wall_map=grid == "#",
            agent_pos=agent,
            agent_dir=AGENT_CHARS.index(grid[agent]),
            goal_pos=tuple(int(v) for v in goals[0]),
            name=name,
        )

    def to_text(self) -> str:
        """The text form (no comments), rows joined by newlines."""
        grid = np.where(self.wall_map, "#", ".")
        grid[self.goal_pos] = "G"
        grid[self.agent_pos] = AGENT_CHARS[self.agent_dir]
        return "\n".join("".join(row) for row in grid)

    def padded(self, height: int, width: int) -> Level:
        """This level in a height x width grid: walls fill the new rows and columns (bottom
        and right). Outside the grid is wall anyway, so nothing an agent sees changes."""
        h, w = self.shape
        if h > height or w > width:
            raise ConfigError(
                f"level {self.name!r} is {h} x {w}; it does not fit a {height} x {width} maze "
                f"(make the env with height >= {h} and width >= {w})"
            )
        walls = np.ones((height, width), bool)
        walls[:h, :w] = self.wall_map
        return Level(walls, self.agent_pos, self.agent_dir, self.goal_pos, self.name)

    def to_params(self, height: int | None = None, width: int | None = None) -> MazeParams:
        return level_to_params(self, height, width)


def level_to_params(level: Level, height: int | None = None, width: int | None = None):
    """Level -> MazeParams, padded with walls to height x width (default: its own size)."""
    h, w = level.shape
    level = level.padded(height or h, width or w)
    return MazeParams(
        wall_map=jnp.asarray(level.wall_map),
        agent_pos=jnp.asarray(level.agent_pos, jnp.int32),
        agent_dir=jnp.asarray(level.agent_dir, jnp.int32),
        goal_pos=jnp.asarray(level.goal_pos, jnp.int32),
    )


def params_to_level(params: MazeParams, name: str = "") -> Level:
    """One (unbatched) MazeParams -> Level on the host. Raises ConfigError if malformed."""
    return Level(
        wall_map=np.asarray(params.wall_map, bool),
        agent_pos=tuple(np.asarray(params.agent_pos).tolist()),
        agent_dir=int(params.agent_dir),
        goal_pos=tuple(np.asarray(params.goal_pos).tolist()),
        name=name,
    )


def stack_params(levels: list[Level], height: int, width: int) -> MazeParams:
    """Levels -> MazeParams with a leading axis [N], each padded to height x width."""
    if not levels:
        raise ConfigError("stack_params needs at least one level")
    params = [level_to_params(level, height, width) for level in levels]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *params)


def is_valid_level(params: MazeParams) -> jax.Array:
    """Jittable: agent and goal inside the grid, on free cells, distinct; direction in 0..3."""
    height, width = params.wall_map.shape[-2:]

    def free(pos):
        inside = (pos[0] >= 0) & (pos[0] < height) & (pos[1] >= 0) & (pos[1] < width)
        row, col = jnp.clip(pos[0], 0, height - 1), jnp.clip(pos[1], 0, width - 1)
        return inside & ~params.wall_map[row, col]

    distinct = jnp.any(params.agent_pos != params.goal_pos)
    good_dir = (params.agent_dir >= 0) & (params.agent_dir < 4)
    return free(params.agent_pos) & free(params.goal_pos) & distinct & good_dir


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


def shortest_path_length(params: MazeParams) -> jax.Array:
    """Jittable BFS: fewest forward moves (turns not counted) from the agent's cell to the
    goal's, through free cells of the grid; -1 if the goal cannot be reached."""
    free = ~params.wall_map
    start = jnp.zeros_like(free).at[params.agent_pos[0], params.agent_pos[1]].set(True)
    goal_row, goal_col = params.goal_pos[0], params.goal_pos[1]

    def grow(reached):
        padded = jnp.pad(reached, 1)
        near = padded[:-2, 1:-1] | padded[2:, 1:-1] | padded[1:-1, :-2] | padded[1:-1, 2:]
        return reached | (near & free)

    def cond(carry):
        reached, _, changed = carry
        return changed & ~reached[goal_row, goal_col]

    def body(carry):
        reached, steps, _ = carry
        grown = grow(reached)
        return grown, steps + 1, jnp.any(grown != reached)

    reached, steps, _ = jax.lax.while_loop(cond, body, (start, jnp.int32(0), jnp.bool_(True)))
    return jnp.where(reached[goal_row, goal_col], steps, -1).astype(jnp.int32)


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


# -- the env -------------------------------------------------------------------------


def _bool_config(value, field: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{field} must be true or false, got {value!r}")
    return value


@ENVS.register("maze")
class Maze(TaskEnv):
    """MiniGrid-style maze, task = a level; see the module docstring.

    Static config: `height`, `width` (interior cells, 13 x 13 by default),
    `max_episode_steps` (T = 250), `num_walls` (walls of `sample_level`'s domain
    randomisation, 25; the literature's other setting is 60), `see_through_walls`
    (True), `view_size` (5, odd, >= 3).
    """

    name = "maze"

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
        self._jit_cache: dict[str, Any] = {}
        self._window_corner, self._window_turns = _view_windows(self.view_size)

    @property
    def task_dim(self) -> int:
        return self.height * self.width + 5

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(V, V, 3): the observation image's shape."""
        return (self.view_size, self.view_size, len(CHANNELS))

    # -- task and levels ----------------------------------------------------------------

    def default_params(self) -> MazeParams:
        """An empty maze: the agent top-left facing right, the goal bottom-right."""
        return MazeParams(
            wall_map=jnp.zeros((self.height, self.width), bool),
            agent_pos=jnp.zeros(2, jnp.int32),
            agent_dir=jnp.int32(0),
            goal_pos=jnp.asarray([self.height - 1, self.width - 1], jnp.int32),
        )

    def level_editor(self, num_wall_steps: int | None = None, noise_dim: int | None = None):
        """The UED level editor of this maze (envs.maze_editor.MazeEditor): an env whose
        episodes place the goal, the agent and then walls; None keeps the editor's
        defaults (dcd's 50 wall steps, a 50-dim noise vector)."""
        from envs.maze_editor import DEFAULT_NOISE_DIM, DEFAULT_WALL_STEPS, MazeEditor

        return MazeEditor(
            self,
            num_wall_steps=DEFAULT_WALL_STEPS if num_wall_steps is None else num_wall_steps,
            noise_dim=DEFAULT_NOISE_DIM if noise_dim is None else noise_dim,
        )

    def shortest_path_length(self, params: MazeParams) -> jax.Array:
        """Fewest forward moves from the agent to the goal of one level; -1 if unreachable."""
        return shortest_path_length(params)

    def task_to_params(self, task: jax.Array, base_params: MazeParams | None = None) -> MazeParams:
        """task [H * W + 5] in [0, 1] -> a well-formed level (module docstring).

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

    def sample_params(self, key: jax.Array, num_walls=None) -> MazeParams:
        """`sample_level` at this env's size (default `self.num_walls`); jittable."""
        num_walls = self.num_walls if num_walls is None else num_walls
        return sample_level(key, self.height, self.width, num_walls)

    def sample_tasks(self, key: jax.Array, n: int, num_walls=None) -> jax.Array:
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

    # -- spaces -------------------------------------------------------------------------

    def observation_space(self) -> spaces.Box:
        size = self.view_size * self.view_size * len(CHANNELS) + 4
        return spaces.Box(low=0.0, high=1.0, shape=(size,), dtype=jnp.float32)

    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(NUM_ACTIONS)

    def split_observation(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """[..., V * V * 3 + 4] -> (image [..., V, V, 3], direction [...] int32)."""
        image_size = self.view_size * self.view_size * len(CHANNELS)
        image = obs[..., :image_size].reshape(obs.shape[:-1] + self.image_shape)
        return image, jnp.argmax(obs[..., image_size:], axis=-1).astype(jnp.int32)

    # -- dynamics -----------------------------------------------------------------------

    def view_cells(self, agent_pos: jax.Array, agent_dir: jax.Array, params: MazeParams):
        """The agent's view: world (rows, cols) [V, V] int32 of each view cell, and its
        wall, goal and visible masks [V, V] bool (module docstring's convention)."""
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
        corner = agent_pos + (size - 1) + jnp.asarray(self._window_corner)[agent_dir]
        window = jax.lax.dynamic_slice(cells, (corner[0], corner[1], 0), (size, size, 3))
        # uint8 storage (4x less memory to read at large batch), float arithmetic (XLA's CPU
        # code is slower on bool and uint8 arrays).
        window = window.astype(jnp.float32)
        turned = [jnp.rot90(window, turns) for turns in self._window_turns]
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

    # -- rendering ----------------------------------------------------------------------

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

    def _jitted(self, name: str, fn):
        """`fn` jitted once per env (rendering helpers; params are arguments)."""
        if name not in self._jit_cache:
            self._jit_cache[name] = jax.jit(fn)
        return self._jit_cache[name]

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


MAX_OPAQUE_VIEW = 7
"""Largest view_size with see_through_walls=False (its row table has 4^V rows)."""


def _view_offsets(size: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) offsets [4, V, V] int32 from the agent's cell to each cell of its view,
    per direction: view row r is V - 1 - r cells ahead, column c is c - V // 2 to the
    right (the module docstring's convention)."""
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


# -- drawing (numpy) -------------------------------------------------------------------

FLOOR = (0, 0, 0)
GRID_LINE = (100, 100, 100)
WALL = (100, 100, 100)
GOAL = (0, 255, 0)
AGENT = (255, 0, 0)
"""MiniGrid's colours."""


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
