"""A grid maze with a settable start and goal: the discrete host of goal curricula.

Host env for SVGG (goals), reverse curriculum (starts) and JSRL (a shortest-path guide),
and a GoalTaskEnv for DQN + HER.

Layout (static config): a text grid, `#` a wall, `.` (or a space) a free cell, `S` and
`G` the default start and goal (free cells). Cells outside the grid count as walls.
Named layouts are in `LAYOUTS`; the default is `u_maze`:

    #########
    #S......#
    #.......#
    #.......#
    ######..#     <- the inner wall: the maze is a U lying on its side
    #G......#
    #.......#
    #.......#
    #########

The free cells are the reachable goals (a layout must be one connected region). In
coordinates that set is discontinuous: the inner wall row splits it, so in every
column left of the opening the free cells above and below the wall are two rows apart
yet (up to) 14 steps apart by path; the default start and goal are 4 rows apart and 14
steps apart. A teacher that models goal difficulty in coordinates has to learn that.

Other layouts: `open` (3 x 3 room), `four_rooms` (11 x 11, four rooms joined by
one-cell doors), `corridors` (11 x 11 serpentine). Longest shortest paths: u_maze 16,
open 4, four_rooms 16, corridors 48 steps, all under the default limit of 50. A custom
text grid must contain a newline or a `#` (otherwise it is taken for a layout name).

Coordinates: a cell is (row, col), row 0 at the top. Observations and tasks use
normalised coordinates (x, y) = (col / (W - 1), row / (H - 1)) in [0, 1], so x grows to
the right and y grows downwards (image order) and the grid's corners are 0 and 1.

Task [4] = (start x, start y, goal x, goal y) in [0, 1]^4 (default: the layout's S and
G). `task_to_params` rounds each point to the nearest cell (clipped into the grid); a
wall cell maps to the nearest free cell by Euclidean distance in cells, ties broken by
row-major order (precomputed at construction).

Actions: Discrete(4): 0 up (row - 1), 1 down (row + 1), 2 left (col - 1), 3 right
(col + 1). A move into a wall (or off the grid) leaves the agent where it was.

Observation [4] float32 = (x, y, goal x, goal y): `achieved_goal` is obs[..., :2],
`desired_goal` obs[..., 2:].

Reward (HER-style, -1/0): after each step, 0 if the agent is on the goal cell, else -1.
The episode terminates on the step that reaches the goal (a reward of 0). A start on the
goal is not terminal at reset: the first step is scored like any other (staying there,
e.g. by bumping a wall, gives 0 and terminates). Truncation after `max_episode_steps`.
So an episode that reaches the goal on its k-th step returns -(k - 1), and one that
never does returns -max_episode_steps: success = return > -max_episode_steps (the
threshold is -max_episode_steps + 0.5), return bounds (-max_episode_steps, 0).

Helpers for teachers: `free_cells()`, `goal_grid()` (every valid goal, for the "success
coverage" metric), `distance_table` (all-pairs BFS distances in steps, numpy),
`shortest_path_distance` and `oracle_action` (a shortest-path action, jittable, from a
precomputed all-pairs next-action table), `render`.
"""

from __future__ import annotations

import difflib
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from envs._checks import positive_int
from envs.base import PositionGoalObservation
from envs.registry import ENVS
from envs.start_goal import StartGoalTasks, start_goal_box

LAYOUTS: dict[str, str] = {
    "u_maze": """
#########
#S......#
#.......#
#.......#
######..#
#G......#
#.......#
#.......#
#########
""",
    "open": """
#####
#S..#
#...#
#..G#
#####
""",
    "four_rooms": """
###########
#S...#....#
#....#....#
#.........#
#....#....#
##.#####.##
#....#....#
#....#....#
#.........#
#....#...G#
###########
""",
    "corridors": """
###########
#S........#
#########.#
#.........#
#.#########
#.........#
#########.#
#.........#
#.#########
#........G#
###########
""",
}
"""Built-in layouts by name (the default is `u_maze`)."""

MAX_CELLS = 2500
"""Largest grid (H * W) accepted: the all-pairs tables hold (H * W)^2 entries."""

ACTION_DELTAS = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]], np.int32)
"""[4, 2] (d_row, d_col) of the actions up, down, left, right."""

UNREACHABLE = -1
"""Entry of `distance_table` for a wall cell or an unreachable pair."""


@struct.dataclass
class GoalMazeParams:
    """What a teacher may change: the start and the goal (both free cells)."""

    start: jax.Array
    """[2] int32 (row, col) of the start cell."""
    goal: jax.Array
    """[2] int32 (row, col) of the goal cell."""


@struct.dataclass
class GoalMazeState:
    cell: jax.Array
    """[2] int32 (row, col) of the agent."""
    time: jax.Array
    """Steps taken in this episode."""


def parse_layout(layout: str) -> tuple[np.ndarray, tuple[int, int] | None, tuple[int, int] | None]:
    """Text layout -> (free [H, W] bool, S cell or None, G cell or None).

    Blank lines around the grid are ignored, and so is trailing whitespace (write a
    free cell at the end of a row as '.'); rows are not dedented, and must all have the
    same width. Raises ConfigError naming `env.layout`.
    """
    rows = [line.rstrip() for line in layout.split("\n")]
    while rows and not rows[-1]:
        rows.pop()
    while rows and not rows[0]:
        rows.pop(0)
    if not rows:
        raise ConfigError("env.layout is empty")
    width = max(len(r) for r in rows)
    if any(len(r) != width for r in rows):
        widths = sorted({len(r) for r in rows})
        raise ConfigError(f"env.layout rows must all have the same width, got widths {widths}")
    bad = sorted({c for r in rows for c in r} - set("#. SG"))
    if bad:
        raise ConfigError(f"env.layout may only use '#', '.', ' ', 'S', 'G'; got {bad}")
    grid = np.array([list(r) for r in rows])
    marks = {}
    for mark in "SG":
        where = np.argwhere(grid == mark)
        if len(where) > 1:
            raise ConfigError(f"env.layout has {len(where)} '{mark}' cells; at most one allowed")
        marks[mark] = tuple(int(v) for v in where[0]) if len(where) else None
    return grid != "#", marks["S"], marks["G"]


def _bfs(free: np.ndarray, source: int) -> np.ndarray:
    """Steps from flat cell `source` to every cell, [H * W] int32 (UNREACHABLE for none)."""
    height, width = free.shape
    dist = np.full(height * width, UNREACHABLE, np.int32)
    dist[source] = 0
    queue = deque([source])
    while queue:
        here = queue.popleft()
        row, col = divmod(here, width)
        for d_row, d_col in ACTION_DELTAS:
            r, c = row + d_row, col + d_col
            if 0 <= r < height and 0 <= c < width and free[r, c]:
                there = r * width + c
                if dist[there] == UNREACHABLE:
                    dist[there] = dist[here] + 1
                    queue.append(there)
    return dist


@ENVS.register("goal_maze")
class GoalMaze(PositionGoalObservation, StartGoalTasks):
    """Grid maze, task = (start, goal) in normalised coordinates; see the module docstring.

    Static config: `layout` (a name in LAYOUTS or a text grid; default `u_maze`),
    `max_episode_steps` (default 50).
    """

    name = "goal_maze"
    goal_dim = 2
    start_dim = 2
    has_valid_goals = True
    has_oracle_action = True

    def __init__(self, layout: str = "u_maze", max_episode_steps: int | None = None):
        if not isinstance(layout, str):
            raise ConfigError(f"env.layout must be a layout name or a text grid, got {layout!r}")
        text = LAYOUTS.get(layout, layout)
        if layout not in LAYOUTS and "\n" not in layout.strip("\n") and "#" not in layout:
            close = difflib.get_close_matches(layout, sorted(LAYOUTS), n=1, cutoff=0.4)
            hint = f"did you mean {close[0]!r}? " if close else ""
            names = ", ".join(sorted(LAYOUTS))
            raise ConfigError(
                f"env.layout: unknown layout {layout!r}; {hint}named layouts: {names} "
                "(a text grid needs a newline or a '#')"
            )
        self.layout_name = layout if layout in LAYOUTS else "custom"
        self.max_episode_steps = positive_int(max_episode_steps, "env.max_episode_steps") or 50
        free, start, goal = parse_layout(text)
        self.free = free
        """[H, W] bool: free cells."""
        self.height, self.width = free.shape
        num_cells = self.height * self.width
        if num_cells > MAX_CELLS:
            raise ConfigError(
                f"env.layout is {self.height} x {self.width} = {num_cells} cells; "
                f"at most {MAX_CELLS} (the all-pairs tables are quadratic)"
            )
        cells = np.argwhere(free).astype(np.int32)
        if len(cells) == 0:
            raise ConfigError("env.layout has no free cell ('.', ' ', 'S' or 'G')")
        self._free_cells = cells
        flat_free = cells[:, 0] * self.width + cells[:, 1]

        # All-pairs BFS: distance_table[a, b] = steps from flat cell a to flat cell b.
        table = np.full((num_cells, num_cells), UNREACHABLE, np.int32)
        for source in flat_free:
            table[source] = _bfs(free, int(source))
        self.distance_table = table
        """[H * W, H * W] int32 steps between flat cells (row * W + col); -1 if none."""
        reach = table[flat_free[0]][flat_free]
        if np.any(reach == UNREACHABLE):
            raise ConfigError(
                f"env.layout: {int(np.sum(reach == UNREACHABLE))} of {len(cells)} free cells "
                f"cannot be reached from cell {tuple(cells[0].tolist())}; a layout must be "
                "one connected region"
            )

        # moves[flat, action] = flat cell after the move (itself when blocked).
        rows, cols = np.divmod(np.arange(num_cells), self.width)
        target_r = rows[:, None] + ACTION_DELTAS[None, :, 0]
        target_c = cols[:, None] + ACTION_DELTAS[None, :, 1]
        inside = (target_r >= 0) & (target_r < self.height) & (target_c >= 0)
        inside &= target_c < self.width
        open_ = (
            inside
            & free[np.clip(target_r, 0, self.height - 1), np.clip(target_c, 0, self.width - 1)]
        )
        moves = np.where(open_, target_r * self.width + target_c, np.arange(num_cells)[:, None])
        self._moves = moves.astype(np.int32)

        # next_action[pos, goal]: the first action (in action order) that lowers the BFS
        # distance; on the goal, a blocked action if there is one (staying ends the
        # episode with reward 0), else 0.
        after = table[self._moves]  # [N, 4, N]: distance to each goal after each action
        here = table[:, None, :]
        better = (after == here - 1) & (here > 0) & (after != UNREACHABLE)
        stay = (self._moves == np.arange(num_cells)[:, None])[:, :, None] & (here == 0)
        choice = np.where(better.any(1), better.argmax(1), stay.argmax(1))
        self._next_action = choice.astype(np.int32)  # [N, N]

        # nearest_free[flat]: the flat cell a task point on that cell maps to.
        d2 = (rows[:, None] - cells[None, :, 0]) ** 2 + (cols[:, None] - cells[None, :, 1]) ** 2
        self._nearest_free = flat_free[np.argmin(d2, axis=1)].astype(np.int32)

        self._scale = np.array(
            [max(self.width - 1, 1), max(self.height - 1, 1)], np.float32
        )  # (x, y) per cell unit
        start = start if start is not None else tuple(cells[0].tolist())
        goal = goal if goal is not None else tuple(cells[-1].tolist())
        self._default_cells = np.array([start, goal], np.int32)
        default = tuple(self.cell_to_coords(np.array(start)).tolist()) + tuple(
            self.cell_to_coords(np.array(goal)).tolist()
        )
        self.task_space = start_goal_box(default, ("col / (W - 1)", "row / (H - 1)"))

    # -- coordinates and helpers (numpy or jax) -----------------------------------------

    def cell_to_coords(self, cell):
        """[..., 2] int (row, col) -> [..., 2] float32 normalised (x, y)."""
        xp = jnp if isinstance(cell, jax.Array) else np
        cell = xp.asarray(cell)
        return (cell[..., ::-1] / self._scale).astype(xp.float32)

    def coords_to_cell(self, coords: jax.Array) -> jax.Array:
        """[..., 2] normalised (x, y) -> [..., 2] int32 (row, col): nearest cell, clipped.

        Not mapped to a free cell; see `valid_cell`.
        """
        scaled = jnp.round(jnp.asarray(coords, jnp.float32) * self._scale).astype(jnp.int32)
        col = jnp.clip(scaled[..., 0], 0, self.width - 1)
        row = jnp.clip(scaled[..., 1], 0, self.height - 1)
        return jnp.stack([row, col], axis=-1)

    def valid_cell(self, coords: jax.Array) -> jax.Array:
        """[..., 2] normalised (x, y) -> [..., 2] int32 (row, col) of a free cell.

        The nearest cell, or for a wall the nearest free cell (module docstring).
        """
        flat = self._flat(self.coords_to_cell(coords))
        return self._unflat(jnp.asarray(self._nearest_free)[flat])

    def free_cells(self) -> np.ndarray:
        """[F, 2] int32 (row, col) of every free cell, row-major."""
        return self._free_cells.copy()

    def goal_grid(self) -> np.ndarray:
        """[F, 2] float32 normalised (x, y) of every free cell: all valid goals."""
        return self.cell_to_coords(self._free_cells)

    def sample_valid_goals(self, key: jax.Array, n: int) -> jax.Array:
        """[n, 2] goals drawn uniformly from `goal_grid` (the free cells). Jittable."""
        goals = self.goal_grid()
        return jnp.asarray(goals)[jax.random.randint(key, (n,), 0, goals.shape[0])]

    def is_free(self, cell: jax.Array) -> jax.Array:
        """[..., 2] int (row, col) -> [...] bool: inside the grid and not a wall."""
        cell = jnp.asarray(cell, jnp.int32)
        inside = (cell[..., 0] >= 0) & (cell[..., 0] < self.height)
        inside &= (cell[..., 1] >= 0) & (cell[..., 1] < self.width)
        row = jnp.clip(cell[..., 0], 0, self.height - 1)
        col = jnp.clip(cell[..., 1], 0, self.width - 1)
        return inside & jnp.asarray(self.free)[row, col]

    def task_for(self, start_cell, goal_cell):
        """(row, col) start and goal, [..., 2] each -> task [..., 4] (numpy in, numpy out)."""
        xp = jnp if isinstance(start_cell, jax.Array) or isinstance(goal_cell, jax.Array) else np
        start = self.cell_to_coords(xp.asarray(start_cell, xp.int32))
        goal = self.cell_to_coords(xp.asarray(goal_cell, xp.int32))
        return xp.concatenate([start, goal], axis=-1)

    def shortest_path_distance(self, cell_a, cell_b):
        """[..., 2], [..., 2] (row, col) -> [...] int32 BFS steps from a to b (-1 if a wall).

        Jittable; numpy in, numpy out.
        """
        if isinstance(cell_a, jax.Array) or isinstance(cell_b, jax.Array):
            table = jnp.asarray(self.distance_table)
            return table[self._flat(cell_a), self._flat(cell_b)]
        a, b = np.asarray(cell_a, np.int32), np.asarray(cell_b, np.int32)
        flat_a, flat_b = a[..., 0] * self.width + a[..., 1], b[..., 0] * self.width + b[..., 1]
        return self.distance_table[flat_a, flat_b]

    def oracle_action(self, obs: jax.Array) -> jax.Array:
        """[..., 4] observation -> [...] int32: an action on a shortest path to its goal.

        Jittable (a lookup in the precomputed all-pairs table). On the goal it returns a
        blocked action where the goal cell has a wall next to it (staying ends the
        episode), else 0.
        """
        here = self._flat(self.coords_to_cell(obs[..., :2]))
        goal = self._flat(self.coords_to_cell(obs[..., 2:4]))
        return jnp.asarray(self._next_action)[here, goal]

    def _flat(self, cell: jax.Array) -> jax.Array:
        cell = jnp.asarray(cell, jnp.int32)
        return cell[..., 0] * self.width + cell[..., 1]

    def _unflat(self, flat: jax.Array) -> jax.Array:
        return jnp.stack([flat // self.width, flat % self.width], axis=-1).astype(jnp.int32)

    # -- task and spaces ----------------------------------------------------------------

    def default_params(self) -> GoalMazeParams:
        """The layout's S and G cells (the default task's params)."""
        return GoalMazeParams(
            start=jnp.asarray(self._default_cells[0]), goal=jnp.asarray(self._default_cells[1])
        )

    def task_to_params(self, task: jax.Array, base_params: GoalMazeParams | None) -> GoalMazeParams:
        """task [4] = (start x, start y, goal x, goal y), normalised -> params (free cells).

        The params hold nothing but the task, so `base_params` is not read.
        """
        del base_params
        task = jnp.asarray(task, jnp.float32)
        return GoalMazeParams(start=self.valid_cell(task[:2]), goal=self.valid_cell(task[2:4]))

    def observation_space(self) -> spaces.Box:
        return spaces.Box(low=0.0, high=1.0, shape=(4,), dtype=jnp.float32)

    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(4)

    # -- goal protocol ------------------------------------------------------------------

    def goal_reached(self, achieved: jax.Array, goal: jax.Array) -> jax.Array:
        """Same cell: every coordinate within half a cell."""
        return jnp.all(jnp.abs(achieved - goal) * self._scale < 0.5, axis=-1)

    # -- start protocol (reverse curriculum) --------------------------------------------

    def start_from_state(self, state: GoalMazeState) -> jax.Array:
        """State -> [2] normalised (x, y) of the agent's cell."""
        return self.cell_to_coords(state.cell)

    def start_distance(self, starts: jax.Array, task: jax.Array) -> jax.Array:
        """starts [..., 2], task [4] -> [...] float32: BFS steps from each start's cell
        to the task's goal cell (both mapped to free cells). Jittable."""
        goal = self.valid_cell(jnp.asarray(task, jnp.float32)[2:4])
        cells = self.valid_cell(starts)
        return self.shortest_path_distance(cells, jnp.broadcast_to(goal, cells.shape)).astype(
            jnp.float32
        )

    def goal_start(self, task: jax.Array) -> jax.Array:
        """[4] -> [2]: the goal's cell as a start."""
        return self.cell_to_coords(self.valid_cell(jnp.asarray(task, jnp.float32)[2:4]))

    # -- dynamics -----------------------------------------------------------------------

    def _observation(self, cell: jax.Array, params: GoalMazeParams) -> jax.Array:
        return jnp.concatenate([self.cell_to_coords(cell), self.cell_to_coords(params.goal)])

    def reset(self, key: jax.Array, params: GoalMazeParams):
        del key  # deterministic: the start is part of the task
        state = GoalMazeState(cell=jnp.asarray(params.start, jnp.int32), time=jnp.int32(0))
        return self._observation(state.cell, params), state

    def step(self, key: jax.Array, state: GoalMazeState, action: jax.Array, params: GoalMazeParams):
        """`action` int in {0, 1, 2, 3} (clipped): up, down, left, right."""
        del key
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, 3)
        flat = jnp.asarray(self._moves)[self._flat(state.cell), action]
        cell = self._unflat(flat)
        time = state.time + 1
        obs = self._observation(cell, params)
        reward, reached, truncated = self.score_step(obs, time)
        state = GoalMazeState(cell=cell, time=time)
        info = {"reached": reached, "distance": self.shortest_path_distance(cell, params.goal)}
        return obs, state, reward, reached, truncated, info

    # -- rendering ----------------------------------------------------------------------

    def render(
        self, state: GoalMazeState, params: GoalMazeParams, cell_pixels: int = 16
    ) -> np.ndarray:
        """RGB image [H * cell_pixels, W * cell_pixels, 3] uint8 (numpy, not jittable).

        Walls dark grey, free cells white, the start light blue, the goal green, the
        agent a dark blue square inside its cell.
        """
        image = np.where(self.free[..., None], 255, 60).astype(np.uint8)
        image = np.repeat(image, 3, axis=-1)
        start, goal = np.asarray(params.start), np.asarray(params.goal)
        image[start[0], start[1]] = (170, 200, 255)
        image[goal[0], goal[1]] = (60, 180, 75)
        image = np.repeat(np.repeat(image, cell_pixels, 0), cell_pixels, 1)
        row, col = (int(v) for v in np.asarray(state.cell))
        pad = max(cell_pixels // 5, 1)
        top, left = row * cell_pixels + pad, col * cell_pixels + pad
        size = cell_pixels - 2 * pad
        image[top : top + size, left : left + size] = (30, 60, 200)
        return image
