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

PAIRED's level editor is `MazeEditor` (`Maze.level_editor`), an env whose episodes build a
level. `Maze` is a `LevelTaskEnv` (envs/base.py): a level generator, level edits and a
level editor, declared.

The package, one concern a module: `levels` (MazeParams, MazeState, the host `Level` and
its text form, `is_valid_level`, `shortest_path_length`), `generation` (`sample_level`,
`mutate_level`), `view` (the observation), `render` (pictures), `editor` (`MazeEditor`)
and `env` (`Maze`: task mapping and dynamics). Every public name is importable from
`envs.maze`.
"""

from envs.maze.editor import (
    DEFAULT_NOISE_DIM,
    DEFAULT_WALL_STEPS,
    MAP_CHANNELS,
    MazeEditor,
    MazeEditorParams,
    MazeEditorState,
)
from envs.maze.env import DEFAULT_STEPS, FORWARD, LEFT, NUM_ACTIONS, RIGHT, Maze
from envs.maze.generation import (
    DEFAULT_WALLS,
    FLIP_WALL,
    MOVE_GOAL,
    NO_OP,
    mutate_level,
    sample_level,
)
from envs.maze.levels import (
    AGENT_CHARS,
    DEFAULT_SIZE,
    DIR_TO_DELTA,
    Level,
    MazeParams,
    MazeState,
    is_valid_level,
    level_to_params,
    params_to_level,
    shortest_path_length,
    stack_params,
)
from envs.maze.render import AGENT, FLOOR, GOAL, GRID_LINE, WALL
from envs.maze.view import CHANNELS, DEFAULT_VIEW, MAX_OPAQUE_VIEW

__all__ = [
    "AGENT",
    "AGENT_CHARS",
    "CHANNELS",
    "DEFAULT_NOISE_DIM",
    "DEFAULT_SIZE",
    "DEFAULT_STEPS",
    "DEFAULT_VIEW",
    "DEFAULT_WALLS",
    "DEFAULT_WALL_STEPS",
    "DIR_TO_DELTA",
    "FLIP_WALL",
    "FLOOR",
    "FORWARD",
    "GOAL",
    "GRID_LINE",
    "LEFT",
    "MAP_CHANNELS",
    "MAX_OPAQUE_VIEW",
    "MOVE_GOAL",
    "NO_OP",
    "NUM_ACTIONS",
    "RIGHT",
    "WALL",
    "Level",
    "Maze",
    "MazeEditor",
    "MazeEditorParams",
    "MazeEditorState",
    "MazeParams",
    "MazeState",
    "is_valid_level",
    "level_to_params",
    "mutate_level",
    "params_to_level",
    "sample_level",
    "shortest_path_length",
    "stack_params",
]
