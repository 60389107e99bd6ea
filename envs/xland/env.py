"""The xland env: XLand-MiniGrid's own reset and step, a ruleset as the task
(envs/xland/__init__.py)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import xminigrid
from gymnax.environments import spaces
from xminigrid.core.constants import NUM_ACTIONS, NUM_COLORS, NUM_TILES, Colors, Tiles
from xminigrid.envs.xland import XLandEnvParams, XLandMiniGrid
from xminigrid.types import StepType, TimeStep

from acl.core.errors import ConfigError
from envs._checks import non_negative_int, positive_int
from envs.base import LevelTaskEnv, TokenObservation
from envs.registry import ENVS
from envs.xland.docs import DOCS_SECTION
from envs.xland.generator import PRESETS, edit_ruleset, sample_ruleset
from envs.xland.held_out import (
    MAX_HELD_OUT,
    committed_held_out,
    draw_avoiding,
    held_out_identities,
    matches,
)
from envs.xland.rulesets import AGENT_NEAR_GOAL, NUM_GOAL_IDS, NUM_RULE_IDS

DEFAULT_PRESET = "trivial"
DEFAULT_GRID_TYPE = "R1"
DEFAULT_SIZE = 9
"""The smallest grid XLand-MiniGrid registers (R1, R2 and R4 at 9 x 9)."""
DEFAULT_VIEW = 5
"""xminigrid's XLand view (its `XLandMiniGrid.default_params`)."""
DEFAULT_HELD_OUT = 128
NUM_DIRECTIONS = 4
_REGISTERED = re.compile(r"XLand-MiniGrid-(R\d)-(\d+)x(\d+)$")


NUM_TILE_CODES = NUM_TILES * NUM_COLORS
"""Values of `tile_code`: 156."""


def tile_code(pairs: jax.Array) -> jax.Array:
    """(tile, colour) codes [..., 2] -> one code per tile [...], tile * 12 + colour, in
    0..155: the observation names an object (a red ball) by one code, so that its
    embedding is the object's, not the sum of a shape's and a colour's. A position goal's
    (row, column) pair (never generated) maps the same way, clipped into 0..155."""
    pairs = jnp.asarray(pairs, jnp.int32)
    return jnp.clip(pairs[..., 0] * NUM_COLORS + pairs[..., 1], 0, NUM_TILE_CODES - 1)


def registered_sizes() -> dict[str, tuple[int, ...]]:
    """Grid type ("R1", "R2", "R4", "R6", "R9": rooms) -> the square sizes xminigrid
    registers for it."""
    sizes: dict[str, list[int]] = {}
    for name in xminigrid.registered_environments():
        found = _REGISTERED.match(name)
        if found and found.group(2) == found.group(3):
            sizes.setdefault(found.group(1), []).append(int(found.group(2)))
    return {grid_type: tuple(sorted(s)) for grid_type, s in sorted(sizes.items())}


@ENVS.register("xland")
class XLand(TokenObservation, LevelTaskEnv):
    """XLand-MiniGrid, task = a ruleset (goal, rules, initial tiles); see
    envs/xland/__init__.py.

    Static config: `preset` (the generator's benchmark: trivial, small, medium or high;
    default trivial), `grid_type` (xminigrid's R1, R2, R4, R6 or R9 rooms; default R1, one
    room), `grid_size` (a size xminigrid registers for it, 9 by default, the smallest),
    `max_episode_steps` (T, default 3 x grid_size^2 = 243, xminigrid's), `view_size` (5,
    odd, >= 3), `num_held_out` (128: the held-out rulesets, `eval.test_set:
    xland_held_out`, that training never hands out).
    """

    name = "xland"
    has_level_edits = True

    @staticmethod
    def docs_extra() -> str:
        """docs/envs.md's "XLand-MiniGrid rulesets" (`acl hparams-docs`)."""
        return DOCS_SECTION

    def __init__(
        self,
        preset: str = DEFAULT_PRESET,
        grid_type: str = DEFAULT_GRID_TYPE,
        grid_size: int = DEFAULT_SIZE,
        max_episode_steps: int | None = None,
        view_size: int = DEFAULT_VIEW,
        num_held_out: int = DEFAULT_HELD_OUT,
    ):
        if preset not in PRESETS:
            raise ConfigError(
                f"env.preset: unknown XLand-MiniGrid preset {preset!r}; presets: "
                f"{', '.join(PRESETS)}"
            )
        sizes = registered_sizes()
        if grid_type not in sizes:
            raise ConfigError(
                f"env.grid_type: unknown XLand-MiniGrid grid type {grid_type!r}; grid types: "
                f"{', '.join(sizes)}"
            )
        grid_size = positive_int(grid_size, "env.grid_size", allow_none=False)
        if grid_size not in sizes[grid_type]:
            smaller = " (none smaller)" if grid_size < min(sizes[grid_type]) else ""
            raise ConfigError(
                f"env.grid_size: XLand-MiniGrid registers {grid_type} at "
                f"{', '.join(map(str, sizes[grid_type]))}{smaller}, got {grid_size}"
            )
        self.view_size = positive_int(view_size, "env.view_size", allow_none=False)
        if self.view_size < 3 or self.view_size % 2 == 0:
            raise ConfigError(f"env.view_size must be odd and >= 3, got {view_size}")
        self.preset = preset
        self.generator = PRESETS[preset]
        self.grid_type = grid_type
        self.grid_size = grid_size
        self.max_episode_steps = positive_int(max_episode_steps, "env.max_episode_steps") or 3 * (
            grid_size * grid_size
        )
        self.num_held_out = non_negative_int(num_held_out, "env.num_held_out")
        if self.num_held_out > MAX_HELD_OUT:
            raise ConfigError(
                f"env.num_held_out must be <= {MAX_HELD_OUT} (the committed held-out "
                f"rulesets per preset), got {num_held_out}"
            )
        self.layout = self.generator.layout(grid_size)
        self._xland = XLandMiniGrid()
        default = np.zeros(self.layout.dim)
        # Be near the red ball, alone on the grid: a goal and one initial tile.
        default[:3] = (AGENT_NEAR_GOAL, Tiles.BALL, Colors.RED)
        default[self.layout.tiles_start : self.layout.tiles_start + 2] = (Tiles.BALL, Colors.RED)
        self.task_space = self.layout.task_space(default)
        self.success_threshold = 0.0
        self.return_bounds = (0.0, 1.0)
        self.token_sizes = (
            (NUM_TILE_CODES,) * (self.view_size * self.view_size)
            + (NUM_DIRECTIONS, NUM_GOAL_IDS, NUM_TILE_CODES, NUM_TILE_CODES)
            + (NUM_RULE_IDS, NUM_TILE_CODES, NUM_TILE_CODES, NUM_TILE_CODES) * self.layout.num_rules
        )

    # -- tasks and levels ------------------------------------------------------------

    def default_params(self) -> XLandEnvParams:
        params = self._xland.default_params(
            grid_type=self.grid_type,
            height=self.grid_size,
            width=self.grid_size,
            view_size=self.view_size,
            max_steps=self.max_episode_steps,
        )
        return params.replace(ruleset=self.layout.decode(self.task_space.default_task))

    def task_to_params(self, task: jax.Array, base_params: XLandEnvParams | None = None):
        """task [D] -> xminigrid's XLandEnvParams with the task's ruleset (codes rounded
        and clipped to their bounds)."""
        base = self.default_params() if base_params is None else base_params
        return base.replace(ruleset=self.layout.decode(jnp.asarray(task, jnp.float32)))

    def held_out_tasks(self) -> np.ndarray:
        """[num_held_out, D] float32: the held-out rulesets (envs/xland/held_out.py)."""
        return committed_held_out(self.preset, self.num_held_out).astype(np.float32)

    def is_held_out(self, tasks: jax.Array) -> jax.Array:
        """tasks [n, D] -> [n] bool: which are a held-out ruleset, up to order."""
        held_out = held_out_identities(self.preset, self.num_held_out)
        return matches(jax.vmap(self.layout.identity)(tasks), held_out)

    def sample_tasks(
        self, key: jax.Array, n: int, num_walls: jax.Array | int | None = None
    ) -> jax.Array:
        """n rulesets of the preset's generator as tasks [n, D], none of them held out
        (those are redrawn); `num_walls` is unused."""
        del num_walls
        draw = jax.vmap(lambda k: sample_ruleset(k, self.generator))
        codes = draw_avoiding(draw, key, n, self.layout.dim, self.is_held_out)
        return codes.astype(jnp.float32)

    def edit_tasks(self, key: jax.Array, tasks: jax.Array, num_edits: int) -> jax.Array:
        """ACCEL's edits of rulesets tasks [n, D] -> [n, D]: `num_edits` (static)
        in-distribution edits each (`generator.edit_ruleset`: one distractor re-drawn), an
        edit that would make a held-out ruleset undone. Tasks in the generator's slot
        layout (the generator's own) only."""
        codes = self.layout.codes(tasks)

        def edit(codes, edit_key):
            keys = jax.random.split(edit_key, codes.shape[0])
            edited = jax.vmap(lambda k, c: edit_ruleset(k, c, self.generator))(keys, codes)
            return jnp.where(self.is_held_out(edited)[:, None], codes, edited), None

        if int(num_edits) > 0:
            codes, _ = jax.lax.scan(edit, codes, jax.random.split(key, int(num_edits)))
        return codes.astype(jnp.float32)

    # -- dynamics ------------------------------------------------------------------------

    def observation_space(self) -> spaces.Box:
        high = np.asarray(self.token_sizes, np.float32) - 1
        return spaces.Box(0.0, high, (len(self.token_sizes),), jnp.float32)

    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(NUM_ACTIONS)

    def split_observation(self, obs: jax.Array):
        """obs [..., O] -> (view [..., V, V], direction [...], goal [..., 3],
        rules [..., R, 4]) as float32 codes: the goal and each rule its id, then its
        tiles; a tile (or a cell of the view) as `tile_code`."""
        lead = obs.shape[:-1]
        cells = self.view_size * self.view_size
        view = obs[..., :cells].reshape(lead + (self.view_size, self.view_size))
        goal = obs[..., cells + 1 : cells + 4]
        rules = obs[..., cells + 4 :].reshape(lead + (self.layout.num_rules, 4))
        return view, obs[..., cells], goal, rules

    def _observe(self, timestep: TimeStep) -> jax.Array:
        state = timestep.state
        goal = jnp.asarray(state.goal_encoding, jnp.int32)
        rules = jnp.asarray(state.rule_encoding, jnp.int32)
        pairs = rules[:, 1:].reshape(-1, 3, 2)
        return jnp.concatenate(
            [
                tile_code(timestep.observation).reshape(-1),
                jnp.asarray(state.agent.direction, jnp.int32)[None],
                goal[:1],
                tile_code(goal[1:].reshape(2, 2)),
                jnp.concatenate([rules[:, :1], tile_code(pairs)], axis=1).reshape(-1),
            ]
        ).astype(jnp.float32)

    def reset(self, key: jax.Array, params: XLandEnvParams):
        """xminigrid's reset: the grid type's walls (doors for R2 and up) and every initial
        tile and the agent at distinct random free cells, a random direction."""
        timestep = self._xland.reset(params, key)
        return self._observe(timestep), timestep

    def step(self, key: jax.Array, state: TimeStep, action: jax.Array, params: XLandEnvParams):
        """xminigrid's step; `key` unused (its steps are deterministic). Terminated: the
        goal is reached (xminigrid's discount 0); truncated: step T without it."""
        del key
        timestep = self._xland.step(params, state, jnp.asarray(action, jnp.int32))
        last = timestep.step_type == StepType.LAST
        terminated = last & (timestep.discount == 0.0)
        truncated = last & ~terminated
        reward = jnp.asarray(timestep.reward, jnp.float32)
        return self._observe(timestep), timestep, reward, terminated, truncated, {}
