"""MiniGrid interop for the maze (envs/maze/), both ways, with the real `minigrid` package.

From MiniGrid: `level_from_minigrid(env_or_id, seed)` resets one of minigrid's own envs and
reads its grid into a `Level` (the outer ring of walls dropped: outside the maze is wall
anyway). Only walls, one goal and the agent are modelled; a grid holding anything else
(lava, doors, keys, balls, boxes, floor tiles) is refused with `UnsupportedMiniGridLevel`
naming the objects and where they are. `LEVEL_ENV_IDS`
lists the registered minigrid envs whose grids are only that: the Empty rooms, FourRooms
and SimpleCrossing S9N1-S11N5. Pick a maze size they fit (`Level.padded`, or
`Maze.level_to_params`, pads with walls): SimpleCrossingS9* is 7 x 7, S11N5 9 x 9,
FourRooms 17 x 17, Empty-NxN (N - 2) x (N - 2).

To MiniGrid: `LevelMiniGridEnv(level)` is a real `minigrid.minigrid_env.MiniGridEnv`
(a Gymnasium env) whose grid is the level inside a ring of walls, with the maze's
settings (5 x 5 view, `see_through_walls`, max_steps = T). `observation_from_minigrid`
turns its dict observation into the maze's flat one ([x, y] image -> [row, col],
object types -> one-hot (wall, empty, goal), unseen -> zeros, direction -> one-hot).
Stepping both with the same actions gives identical positions, directions,
observations, rewards and done flags (tests/test_maze_minigrid.py). The one documented
difference: MiniGrid sets `truncated` on step T even when that step reaches the goal;
the maze then reports terminated only.
"""

from __future__ import annotations

import os

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # minigrid imports pygame

import gymnasium as gym  # noqa: E402
import minigrid  # noqa: E402, F401  (registers the MiniGrid-* ids)
import numpy as np  # noqa: E402
from minigrid.core.constants import OBJECT_TO_IDX  # noqa: E402
from minigrid.core.grid import Grid  # noqa: E402
from minigrid.core.mission import MissionSpace  # noqa: E402
from minigrid.core.world_object import Goal, Wall  # noqa: E402
from minigrid.minigrid_env import MiniGridEnv  # noqa: E402

from acl.core.errors import ConfigError  # noqa: E402
from envs.maze import CHANNELS, DEFAULT_STEPS, DEFAULT_VIEW, Level, params_to_level  # noqa: E402

LEVEL_ENV_IDS = (
    "MiniGrid-Empty-5x5-v0",
    "MiniGrid-Empty-Random-5x5-v0",
    "MiniGrid-Empty-6x6-v0",
    "MiniGrid-Empty-Random-6x6-v0",
    "MiniGrid-Empty-8x8-v0",
    "MiniGrid-Empty-16x16-v0",
    "MiniGrid-FourRooms-v0",
    "MiniGrid-SimpleCrossingS9N1-v0",
    "MiniGrid-SimpleCrossingS9N2-v0",
    "MiniGrid-SimpleCrossingS9N3-v0",
    "MiniGrid-SimpleCrossingS11N5-v0",
)
"""Registered minigrid envs whose grids hold only walls, one goal and the agent."""

_TYPE_TO_CHANNEL = {OBJECT_TO_IDX[name]: i for i, name in enumerate(CHANNELS)}
_UNSEEN = OBJECT_TO_IDX["unseen"]


class UnsupportedMiniGridLevel(ConfigError):
    """A MiniGrid grid holds something the maze does not model (lava, a door, a key...)."""


def _make(env_id: str, **kwargs) -> MiniGridEnv:
    if not isinstance(env_id, str):
        raise ConfigError(f"expected a minigrid env or a registered id, got {env_id!r}")
    try:
        env = gym.make(env_id, disable_env_checker=True, **kwargs).unwrapped
    except gym.error.Error as err:
        raise ConfigError(f"cannot make minigrid env {env_id!r}: {err}") from None
    if not isinstance(env, MiniGridEnv):
        raise ConfigError(f"{env_id!r} is not a MiniGrid env (got {type(env).__name__})")
    return env


def level_from_grid(grid: Grid, agent_pos, agent_dir: int, name: str = "") -> Level:
    """A minigrid `Grid` with the agent at (x, y) `agent_pos` -> Level.

    The outer ring is dropped when it is all walls (every minigrid env has one); (x, y)
    becomes (row, col) = (y - 1, x - 1). Raises UnsupportedMiniGridLevel for any object
    other than walls and one goal.
    """
    walls = np.zeros((grid.height, grid.width), bool)
    goals, unsupported = [], {}
    for y in range(grid.height):
        for x in range(grid.width):
            obj = grid.get(x, y)
            if obj is None:
                continue
            if obj.type == "wall":
                walls[y, x] = True
            elif obj.type == "goal":
                goals.append((y, x))
            else:
                unsupported.setdefault(obj.type, []).append((x, y))
    where = f"minigrid level {name!r}" if name else "minigrid level"
    if unsupported:
        found = "; ".join(
            f"{kind} at (x, y) {', '.join(map(str, cells[:4]))}"
            + (f" and {len(cells) - 4} more" if len(cells) > 4 else "")
            for kind, cells in sorted(unsupported.items())
        )
        raise UnsupportedMiniGridLevel(
            f"{where} holds objects the maze does not model: {found}. The maze has walls, "
            "one goal and the agent only (no lava, doors, keys, balls, boxes or floor)"
        )
    if len(goals) != 1:
        raise UnsupportedMiniGridLevel(f"{where} has {len(goals)} goals; the maze needs one")
    border = np.concatenate([walls[0], walls[-1], walls[:, 0], walls[:, -1]])
    offset = 1 if border.all() and min(walls.shape) > 2 else 0
    if offset:
        walls = walls[1:-1, 1:-1]
    x, y = (int(v) for v in agent_pos)
    return Level(
        wall_map=walls,
        agent_pos=(y - offset, x - offset),
        agent_dir=int(agent_dir),
        goal_pos=(goals[0][0] - offset, goals[0][1] - offset),
        name=name,
    )


def level_from_minigrid(env: MiniGridEnv | str, seed: int | None = None, name: str = "") -> Level:
    """Reset a minigrid env (an instance, or a registered id such as
    "MiniGrid-SimpleCrossingS11N5-v0") with `seed` and read its level.

    Raises UnsupportedMiniGridLevel if the grid holds objects other than walls and one
    goal (an agent never carries anything at reset).
    """
    env_id = env if isinstance(env, str) else type(env).__name__
    if isinstance(env, str):
        env = _make(env)
    if not isinstance(env, MiniGridEnv):
        raise ConfigError(f"expected a minigrid env or a registered id, got {type(env).__name__}")
    env.reset(seed=seed)
    name = name or (f"{env_id}(seed={seed})" if seed is not None else env_id)
    return level_from_grid(env.grid, env.agent_pos, env.agent_dir, name=name)


def levels_from_minigrid(env_id: str, seeds, name: str = "") -> list[Level]:
    """`level_from_minigrid` for each seed, one env instance."""
    env = _make(env_id)
    return [level_from_minigrid(env, int(s), name=f"{name or env_id}(seed={s})") for s in seeds]


def _mission() -> str:
    return "get to the green goal square"


class LevelMiniGridEnv(MiniGridEnv):
    """A real MiniGrid env whose grid is a maze level (a `Level`, or one unbatched
    `MazeParams`) inside a ring of walls; the agent starts where the level says.

    Defaults are the maze's: max_steps 250, a 5 x 5 view, walls that can be seen through.
    Other keyword arguments go to `MiniGridEnv` (e.g. render_mode).
    """

    def __init__(
        self,
        level,
        max_steps: int = DEFAULT_STEPS,
        agent_view_size: int = DEFAULT_VIEW,
        see_through_walls: bool = True,
        **kwargs,
    ):
        if not isinstance(level, Level):
            level = params_to_level(level)
        self.level = level
        height, width = level.shape
        super().__init__(
            mission_space=MissionSpace(mission_func=_mission),
            width=width + 2,
            height=height + 2,
            max_steps=max_steps,
            see_through_walls=see_through_walls,
            agent_view_size=agent_view_size,
            **kwargs,
        )

    def _gen_grid(self, width, height):
        self.grid = Grid(width, height)
        self.grid.wall_rect(0, 0, width, height)
        for row, col in np.argwhere(self.level.wall_map):
            self.grid.set(int(col) + 1, int(row) + 1, Wall())
        goal_row, goal_col = self.level.goal_pos
        self.put_obj(Goal(), goal_col + 1, goal_row + 1)
        agent_row, agent_col = self.level.agent_pos
        self.agent_pos = np.array((agent_col + 1, agent_row + 1))
        self.agent_dir = self.level.agent_dir
        self.mission = _mission()

    def maze_agent(self) -> tuple[tuple[int, int], int]:
        """The agent's (row, col) in the level's coordinates, and its direction."""
        x, y = (int(v) for v in self.agent_pos)
        return (y - 1, x - 1), int(self.agent_dir)


def observation_from_minigrid(obs: dict) -> np.ndarray:
    """A MiniGrid dict observation -> the maze's flat observation [V * V * 3 + 4] float32.

    Raises ValueError for an object type the maze does not observe.
    """
    types = np.asarray(obs["image"])[..., 0].T  # [x, y] -> [row, col]
    image = np.zeros(types.shape + (len(CHANNELS),), np.float32)
    for type_idx, channel in _TYPE_TO_CHANNEL.items():
        image[..., channel] = types == type_idx
    known = np.isin(types, list(_TYPE_TO_CHANNEL) + [_UNSEEN])
    if not known.all():
        raise ValueError(f"observation holds object types {sorted(set(types[~known]))}")
    direction = np.zeros(4, np.float32)
    direction[int(obs["direction"])] = 1.0
    return np.concatenate([image.reshape(-1), direction])
