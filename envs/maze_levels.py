"""Held-out mazes of the UED literature, for zero-shot evaluation of the maze (envs/maze/).

Fixed layouts (13 x 13), one text file each in envs/levels/ (the format of
`Level.from_text`; each file's header names where the layout comes from): SixteenRooms,
SixteenRooms2, Labyrinth, LabyrinthFlipped, Labyrinth2, StandardMaze ("Maze" in dcd),
StandardMaze2 ("Maze2"), StandardMaze3 ("Maze3").

Procedural, seeded (`make_level(name, seed)`):
- SimpleCrossing (by default MiniGrid's SimpleCrossingS11N5: an 11 x 11 grid, 9 x 9
  inside, with 5 wall "rivers" and one opening per crossing on the way from the top-left
  start to the bottom-right goal). `simple_crossing` runs MiniGrid's CrossingEnv
  generator with the same random calls, so a seed gives the level minigrid's own env
  gives for that seed (checked in tests/test_maze_minigrid.py).
- SmallCorridor / LargeCorridor (dcd's 13 x 13 and 19 x 19): a ring of corridors (the
  outer rows and columns) around a wall across the middle, with dead-end pockets
  hanging from the top and bottom corridors towards it; the start at the left end of
  the middle row, the goal at the far end of a random pocket, the start direction random.

Mini mazes (9 x 9, `MINI_EVALUATION`): the held-out set of the CPU-sized mini-UED
protocol (docs/results/ued_mini.md), hand-made for it before any of its training and
never changed after, one of each of the published set's kinds or two: rooms
(MiniNineRooms; MiniFourRooms, MiniGrid's FourRooms scaled), labyrinths (MiniLabyrinth,
MiniLabyrinthFlipped), standard mazes (MiniMaze, MiniMaze2), a crossing (MiniCrossing,
MiniGrid's SimpleCrossing kind) and a corridor (MiniCorridor, dcd's corridor at 9 x 9).

`EVALUATION` is the eight files plus SimpleCrossing and SmallCorridor; `PLR_EVALUATION`
the seven whose mean solve rate the robust-PLR results are usually quoted over
(SixteenRooms, Labyrinth, Labyrinth2, Maze, Maze2, SimpleCrossing, SmallCorridor).
`evaluation_params(height, width, names)` stacks levels into MazeParams [N] for one
vmapped evaluation (each padded with walls to the maze's size).

The curriculum loop's zero-shot evaluation reads them by name (`NAMED_SETS`, registered
with envs.registry.TEST_SETS): `eval.test_set: maze_held_out` (`EVALUATION`),
`maze_plr` (`PLR_EVALUATION`), `maze_mini_held_out` (`MINI_EVALUATION`) or a list of
maze names; procedural mazes are drawn with `eval.seed`. Evaluation episodes last the
env's T (250 steps by default).
"""

from __future__ import annotations

import difflib
from importlib import resources

import numpy as np

from acl.core.errors import ConfigError
from envs.maze import DEFAULT_SIZE, Level, MazeParams, stack_params
from envs.registry import TEST_SETS

HELD_OUT = (
    "SixteenRooms",
    "SixteenRooms2",
    "Labyrinth",
    "LabyrinthFlipped",
    "Labyrinth2",
    "StandardMaze",
    "StandardMaze2",
    "StandardMaze3",
)
"""The fixed held-out mazes of the UED literature (files in envs/levels/)."""
PROCEDURAL = ("SimpleCrossing", "SmallCorridor", "LargeCorridor")
"""Held-out mazes made by a seeded generator."""
EVALUATION = HELD_OUT + ("SimpleCrossing", "SmallCorridor")
"""Every held-out maze that fits 13 x 13."""
PLR_EVALUATION = (
    "SixteenRooms",
    "Labyrinth",
    "Labyrinth2",
    "StandardMaze",
    "StandardMaze2",
    "SimpleCrossing",
    "SmallCorridor",
)
"""The seven mazes of dcd's published mean solve rates (25 walls)."""
MINI_EVALUATION = (
    "MiniNineRooms",
    "MiniFourRooms",
    "MiniLabyrinth",
    "MiniLabyrinthFlipped",
    "MiniMaze",
    "MiniMaze2",
    "MiniCrossing",
    "MiniCorridor",
)
"""The 9 x 9 held-out mazes of the mini-UED protocol (files in envs/levels/)."""
NAMED_SETS = {
    "maze_held_out": EVALUATION,
    "maze_plr": PLR_EVALUATION,
    "maze_mini_held_out": MINI_EVALUATION,
}
"""Named sets of held-out mazes for `eval.test_set`."""


def _level_file(name: str):
    return resources.files("envs").joinpath("levels", f"{name}.txt")


def level_names() -> tuple[str, ...]:
    """Every held-out maze: the level files, then the procedural ones."""
    folder = resources.files("envs").joinpath("levels")
    files = sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))
    return tuple(files) + PROCEDURAL


def _unknown(name: str) -> ConfigError:
    names = level_names()
    close = difflib.get_close_matches(str(name), names, n=2, cutoff=0.4)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return ConfigError(f"unknown maze {name!r}; {hint}known: {', '.join(names)}")


def load_level(name: str) -> Level:
    """The fixed maze `name` from its file in envs/levels/."""
    path = _level_file(name)
    if not isinstance(name, str) or not path.is_file():
        raise _unknown(name)
    return Level.from_text(path.read_text(), name=name)


def simple_crossing(seed: int = 0, size: int = 11, num_crossings: int = 5) -> Level:
    """MiniGrid's SimpleCrossing: a size x size grid (odd; the level is its
    (size - 2)^2 inside) with `num_crossings` straight walls, each crossed by one opening
    on a monotone path from the top-left start (facing right) to the bottom-right goal.

    MiniGrid's `CrossingEnv._gen_grid` with the same random calls on a generator seeded
    with `seed` (gymnasium's seeding is numpy's default_rng), so the level equals
    minigrid's "MiniGrid-SimpleCrossingS{size}N{num_crossings}-v0" reset with that seed.
    """
    if not isinstance(size, int) or size < 5 or size % 2 == 0:
        raise ConfigError(f"simple_crossing: size must be an odd integer >= 5, got {size!r}")
    max_crossings = 2 * ((size - 3) // 2)
    if not isinstance(num_crossings, int) or not 0 <= num_crossings <= max_crossings:
        raise ConfigError(
            f"simple_crossing: num_crossings must be in 0..{max_crossings} for size {size}, "
            f"got {num_crossings!r}"
        )
    rng = np.random.default_rng(seed)
    # Names and order as in MiniGrid: a "v" river is a wall column at x, an "h" river a
    # wall row at y (grid coordinates, the outer wall at 0 and size - 1).
    rivers = [("v", i) for i in range(2, size - 2, 2)]
    rivers += [("h", j) for j in range(2, size - 2, 2)]
    rng.shuffle(rivers)
    rivers = rivers[:num_crossings]
    rivers_v = sorted(pos for kind, pos in rivers if kind == "v")
    rivers_h = sorted(pos for kind, pos in rivers if kind == "h")
    grid = np.zeros((size, size), bool)  # [y, x]
    grid[[0, -1], :] = True
    grid[:, [0, -1]] = True
    for y in rivers_h:
        grid[y, 1 : size - 1] = True
    for x in rivers_v:
        grid[1 : size - 1, x] = True
    path = ["h"] * len(rivers_v) + ["v"] * len(rivers_h)
    rng.shuffle(path)
    limits_v = [0] + rivers_v + [size - 1]
    limits_h = [0] + rivers_h + [size - 1]
    room_i = room_j = 0
    for kind in path:
        if kind == "h":
            x = limits_v[room_i + 1]
            y = rng.choice(range(limits_h[room_j] + 1, limits_h[room_j + 1]))
            room_i += 1
        else:
            x = rng.choice(range(limits_v[room_i] + 1, limits_v[room_i + 1]))
            y = limits_h[room_j + 1]
            room_j += 1
        grid[y, x] = False
    inner = size - 2
    return Level(
        wall_map=grid[1:-1, 1:-1],
        agent_pos=(0, 0),
        agent_dir=0,
        goal_pos=(inner - 1, inner - 1),
        name=f"SimpleCrossingS{size}N{num_crossings}(seed={seed})",
    )


def corridor(seed: int = 0, size: int = 13, name: str = "") -> Level:
    """dcd's corridor mazes: a size x size level (odd, >= 7). The middle row is a wall
    except at both ends, and every odd column a wall except in the top and bottom rows:
    the outer rows and columns form a ring of corridors, and the inner even columns are
    dead-end pockets hanging from the top and bottom rows down (up) to the middle wall.
    The agent starts at the left end of the middle row, facing a random way; the goal is
    at the far end of a random pocket (row middle +- 1, an even column in 2..size - 3).
    size 13 is SmallCorridor, 19 LargeCorridor.
    """
    if not isinstance(size, int) or size < 7 or size % 2 == 0:
        raise ConfigError(f"corridor: size must be an odd integer >= 7, got {size!r}")
    middle = size // 2
    walls = np.zeros((size, size), bool)
    walls[1:-1, 1 : size - 1 : 2] = True
    walls[middle, 1:-1] = True
    rng = np.random.default_rng(seed)
    goal_row = int(rng.choice([middle - 1, middle + 1]))
    goal_col = int(rng.choice(range(2, size - 2, 2)))
    agent_dir = int(rng.integers(0, 4))
    return Level(
        wall_map=walls,
        agent_pos=(middle, 0),
        agent_dir=agent_dir,
        goal_pos=(goal_row, goal_col),
        name=f"{name or f'Corridor{size}'}(seed={seed})",
    )


def make_level(name: str, seed: int = 0) -> Level:
    """A held-out maze by name: a file's layout (the seed is not used), or a procedural
    one drawn with `seed`."""
    if name == "SimpleCrossing":
        return simple_crossing(seed)
    if name == "SmallCorridor":
        return corridor(seed, 13, name)
    if name == "LargeCorridor":
        return corridor(seed, 19, name)
    return load_level(name)


def evaluation_params(
    height: int = DEFAULT_SIZE,
    width: int = DEFAULT_SIZE,
    names: tuple[str, ...] = EVALUATION,
    seed: int = 0,
) -> tuple[list[Level], MazeParams]:
    """The levels `names` (procedural ones drawn with `seed`) and their MazeParams [N],
    padded with walls to height x width. Raises ConfigError if one does not fit."""
    levels = [make_level(name, seed) for name in names]
    return levels, stack_params(levels, height, width)


@TEST_SETS.register("maze")
def maze_test_set(env, spec: str | list[str], seed: int = 0) -> tuple[tuple[str, ...], np.ndarray]:
    """`eval.test_set` of the maze: a `NAMED_SETS` name or a list of maze names -> (names
    [M], tasks [M, H * W + 5] float32) at `env`'s size, procedural mazes drawn with `seed`."""
    if isinstance(spec, str):
        if spec not in NAMED_SETS:
            close = difflib.get_close_matches(spec, NAMED_SETS, n=1, cutoff=0.4)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(
                f"eval.test_set: unknown maze set {spec!r}; {hint}sets: "
                f"{', '.join(NAMED_SETS)}, or a list of maze names"
            )
        names = NAMED_SETS[spec]
    else:
        names = tuple(spec)
    try:
        levels = [env.level_to_params(make_level(name, seed)) for name in names]
    except ConfigError as err:
        raise ConfigError(f"eval.test_set: {err}") from None
    # One level at a time: the eager ops compile for one shape, whatever the set's size.
    tasks = [np.asarray(env.params_to_task(params)) for params in levels]
    return names, np.stack(tasks).astype(np.float32)
