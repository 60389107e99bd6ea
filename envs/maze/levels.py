"""The maze's level representation: `MazeParams` (a level, everything a teacher may
change), `MazeState`, the host-side `Level` with its text form, the conversions between
them, and the level checks `is_valid_level` and `shortest_path_length`.

Coordinates and the text form: envs/maze/__init__.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.core.errors import ConfigError

DIR_TO_DELTA = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]], np.int32)
"""[4, 2] (d_row, d_col) of the directions right, down, left, up (MiniGrid's order)."""
AGENT_CHARS = ">v<^"
"""Text-form character of the agent facing each direction."""
DEFAULT_SIZE = 13
"""Rows and columns of the default maze's interior."""


@struct.dataclass
class MazeParams:
    """A level: everything a teacher may change (envs/maze/__init__.py)."""

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
