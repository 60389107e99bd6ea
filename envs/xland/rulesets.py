"""XLand-MiniGrid's ruleset codes and our task layout (envs/xland/__init__.py).

A ruleset is xminigrid's `RuleSet`: a goal encoding [5], rule encodings [R, 7] and
initial tiles [K, 2], all small integer codes (uint8). The codes are xminigrid's own
(`xminigrid.core.goals`, `xminigrid.core.rules`, `xminigrid.core.constants`): a goal or
rule row starts with its class id, then its tiles, each a (tile type, colour) pair; id 0
is the empty goal / rule (padding), tile (0, 0) the empty tile (padding).

`RulesetLayout` fixes R and K (static) and maps a ruleset to the flat task vector
[5 + 7 R + 2 K] and back; `TILE_CATALOGUE` lists the 71 tiles the generator draws from.
Everything here but the layout's numpy bounds is jittable.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from xminigrid.core.constants import NUM_COLORS, NUM_TILES, Colors, Tiles
from xminigrid.types import RuleSet

from acl.core.spaces import Box, Limit

GOAL_LEN = 5
"""Codes of a goal: its id, then up to two tiles (xminigrid's MAX_GOAL_ENCODING_LEN)."""
RULE_LEN = 7
"""Codes of a rule: its id, then up to three tiles (xminigrid's MAX_RULE_ENCODING_LEN)."""
NUM_GOAL_IDS = 15
"""Goal ids 0..14 (xminigrid.core.goals.check_goal's branches; 0 the empty goal)."""
NUM_RULE_IDS = 12
"""Rule ids 0..11 (xminigrid.core.rules.check_rule's branches; 0 the empty rule)."""

# xminigrid's class ids (each class's `encode()[0]`; tests/test_xland.py checks them).
AGENT_HOLD_GOAL, AGENT_NEAR_GOAL, TILE_NEAR_GOAL = 1, 3, 4
TILE_ON_POSITION_GOAL, AGENT_ON_POSITION_GOAL = 5, 6
TILE_NEAR_UP_GOAL, TILE_NEAR_RIGHT_GOAL, TILE_NEAR_DOWN_GOAL, TILE_NEAR_LEFT_GOAL = 7, 8, 9, 10
AGENT_NEAR_UP_GOAL, AGENT_NEAR_RIGHT_GOAL, AGENT_NEAR_DOWN_GOAL, AGENT_NEAR_LEFT_GOAL = (
    11,
    12,
    13,
    14,
)
EMPTY_RULE, AGENT_HOLD_RULE, AGENT_NEAR_RULE, TILE_NEAR_RULE = 0, 1, 2, 3
TILE_NEAR_UP_RULE, TILE_NEAR_RIGHT_RULE, TILE_NEAR_DOWN_RULE, TILE_NEAR_LEFT_RULE = 4, 5, 6, 7
AGENT_NEAR_UP_RULE, AGENT_NEAR_RIGHT_RULE, AGENT_NEAR_DOWN_RULE, AGENT_NEAR_LEFT_RULE = 8, 9, 10, 11

GOAL_NAMES = {
    AGENT_HOLD_GOAL: "AgentHold",
    2: "AgentOnTile",
    AGENT_NEAR_GOAL: "AgentNear",
    TILE_NEAR_GOAL: "TileNear",
    TILE_ON_POSITION_GOAL: "TileOnPosition",
    AGENT_ON_POSITION_GOAL: "AgentOnPosition",
    TILE_NEAR_UP_GOAL: "TileNearUp",
    TILE_NEAR_RIGHT_GOAL: "TileNearRight",
    TILE_NEAR_DOWN_GOAL: "TileNearDown",
    TILE_NEAR_LEFT_GOAL: "TileNearLeft",
    AGENT_NEAR_UP_GOAL: "AgentNearUp",
    AGENT_NEAR_RIGHT_GOAL: "AgentNearRight",
    AGENT_NEAR_DOWN_GOAL: "AgentNearDown",
    AGENT_NEAR_LEFT_GOAL: "AgentNearLeft",
}
"""Goal id -> xminigrid's class name without "Goal"."""
TWO_TILE_GOALS = (TILE_NEAR_GOAL,) + tuple(range(TILE_NEAR_UP_GOAL, TILE_NEAR_LEFT_GOAL + 1))
"""Goals on a pair of tiles (a, b); the others name one tile (or a position)."""
TWO_INPUT_RULES = tuple(range(TILE_NEAR_RULE, TILE_NEAR_LEFT_RULE + 1))
"""Rules with two input tiles (a, b) and a product; the others have one input."""

GENERATED_GOALS = (
    AGENT_HOLD_GOAL,
    AGENT_NEAR_GOAL,
    AGENT_NEAR_UP_GOAL,
    AGENT_NEAR_DOWN_GOAL,
    AGENT_NEAR_LEFT_GOAL,
    AGENT_NEAR_RIGHT_GOAL,
    TILE_NEAR_GOAL,
    TILE_NEAR_UP_GOAL,
    TILE_NEAR_DOWN_GOAL,
    TILE_NEAR_LEFT_GOAL,
    TILE_NEAR_RIGHT_GOAL,
)
"""The 11 goals the reference generator draws, each with probability 1/11, in its order:
the hold goal, five agent-near goals, five tile-near goals."""
GENERATED_RULES = (
    AGENT_HOLD_RULE,
    AGENT_NEAR_RULE,
    AGENT_NEAR_UP_RULE,
    AGENT_NEAR_DOWN_RULE,
    AGENT_NEAR_LEFT_RULE,
    AGENT_NEAR_RIGHT_RULE,
    TILE_NEAR_RULE,
    TILE_NEAR_UP_RULE,
    TILE_NEAR_DOWN_RULE,
    TILE_NEAR_LEFT_RULE,
    TILE_NEAR_RIGHT_RULE,
)
"""The 11 rules the reference generator draws, each with probability 1/11, in its order."""

GENERATOR_COLORS = (
    Colors.RED,
    Colors.GREEN,
    Colors.BLUE,
    Colors.PURPLE,
    Colors.YELLOW,
    Colors.GREY,
    Colors.WHITE,
    Colors.BROWN,
    Colors.PINK,
    Colors.ORANGE,
)
"""The ten colours of generated objects (no black: black floor is "nothing")."""
PICKABLE_TYPES = (Tiles.BALL, Tiles.SQUARE, Tiles.PYRAMID, Tiles.KEY, Tiles.STAR, Tiles.HEX)
"""Objects the agent can pick up."""

NUM_PICKABLE = len(PICKABLE_TYPES) * len(GENERATOR_COLORS)
TILE_CATALOGUE = np.array(
    [(t, c) for t in PICKABLE_TYPES for c in GENERATOR_COLORS]
    + [(Tiles.GOAL, c) for c in GENERATOR_COLORS]
    + [(Tiles.FLOOR, Colors.BLACK)],
    np.int32,
)
"""[71, 2] (tile, colour) of every tile the generator uses: indices 0..59 the 60
pickable objects (6 types x 10 colours), 60..69 the 10 goal squares, 70 black floor
(the product of a rule that makes its input disappear)."""
NUM_CATALOGUE = len(TILE_CATALOGUE)
PICKABLE = np.arange(NUM_CATALOGUE) < NUM_PICKABLE
"""[71] the tiles a hold goal or rule names, and a tile-near pair's second tile."""
NEAR_LHS = np.arange(NUM_CATALOGUE) < NUM_PICKABLE + len(GENERATOR_COLORS)
"""[71] the pickable objects and the goal squares: an agent-near goal's tile, a tile-near
pair's first tile, a distractor object."""
PRODUCTS = PICKABLE | (np.arange(NUM_CATALOGUE) == NUM_CATALOGUE - 1)
"""[71] what a distractor rule may produce: a pickable object or black floor."""
CATALOGUE_INDEX = np.full((NUM_TILES, NUM_COLORS), -1, np.int32)
CATALOGUE_INDEX[TILE_CATALOGUE[:, 0], TILE_CATALOGUE[:, 1]] = np.arange(NUM_CATALOGUE)
"""[13, 12] (tile, colour) -> catalogue index; -1 for tiles outside the catalogue."""

TILE_CODE_HIGH = NUM_TILES - 1
COLOR_CODE_HIGH = NUM_COLORS - 1


@dataclass(frozen=True)
class RulesetLayout:
    """Where a ruleset's codes sit in a flat task [5 + 7 R + 2 K]: the goal [5], then the
    rules row by row [R, 7], then the initial tiles row by row [K, 2]. Static."""

    num_rules: int
    """R: rule rows (empty rules pad)."""
    num_tiles: int
    """K: initial-tile rows (empty tiles pad)."""
    grid_size: int = 9
    """The grid's side: the highest position code of a position goal is grid_size - 1."""

    @property
    def rules_start(self) -> int:
        return GOAL_LEN

    @property
    def tiles_start(self) -> int:
        return GOAL_LEN + RULE_LEN * self.num_rules

    @property
    def dim(self) -> int:
        return self.tiles_start + 2 * self.num_tiles

    def code_high(self) -> np.ndarray:
        """[D] int: the highest value of each code. A goal's tile slots also carry a
        position goal's coordinates, so they reach grid_size - 1 where that is larger."""
        tile_pair = [TILE_CODE_HIGH, COLOR_CODE_HIGH]
        position = max(TILE_CODE_HIGH, COLOR_CODE_HIGH, self.grid_size - 1)
        goal = [NUM_GOAL_IDS - 1] + [max(h, position) for h in tile_pair * 2]
        rule = [NUM_RULE_IDS - 1] + tile_pair * 3
        return np.array(goal + rule * self.num_rules + tile_pair * self.num_tiles, np.int64)

    def names(self) -> tuple[str, ...]:
        names = ["goal_id", "goal_a_tile", "goal_a_color", "goal_b_tile", "goal_b_color"]
        for r in range(self.num_rules):
            names += [f"rule{r}_id"] + [
                f"rule{r}_{part}_{kind}" for part in "abc" for kind in ("tile", "color")
            ]
        for k in range(self.num_tiles):
            names += [f"tile{k}_tile", f"tile{k}_color"]
        return tuple(names)

    def task_space(self, default: np.ndarray) -> Box:
        """The Box of tasks: each code in [0, its highest value]; `default` [D] the fixed
        teacher's ruleset. Codes are integers stored as floats; `decode` rounds them."""
        high = self.code_high()
        names = self.names()
        units = tuple(
            "goal id"
            if n == "goal_id"
            else "rule id"
            if n.endswith("_id")
            else "colour code"
            if n.endswith("color")
            else "tile code"
            for n in names
        )
        return Box(
            low=(0.0,) * self.dim,
            high=tuple(float(h) for h in high),
            names=names,
            units=units,
            default=tuple(float(x) for x in default),
            limits=tuple(Limit(0.0, float(h)) for h in high),
        )

    def codes(self, task: jax.Array) -> jax.Array:
        """task [..., D] -> int32 codes [..., D], rounded and clipped to their bounds."""
        high = jnp.asarray(self.code_high(), jnp.float32)
        return jnp.clip(jnp.round(task), 0.0, high).astype(jnp.int32)

    def split(self, codes: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """codes [..., D] -> (goal [..., 5], rules [..., R, 7], tiles [..., K, 2])."""
        lead = codes.shape[:-1]
        goal = codes[..., : self.rules_start]
        rules = codes[..., self.rules_start : self.tiles_start].reshape(
            lead + (self.num_rules, RULE_LEN)
        )
        tiles = codes[..., self.tiles_start :].reshape(lead + (self.num_tiles, 2))
        return goal, rules, tiles

    def join(self, goal: jax.Array, rules: jax.Array, tiles: jax.Array) -> jax.Array:
        """(goal [..., 5], rules [..., R, 7], tiles [..., K, 2]) -> codes [..., D]."""
        lead = goal.shape[:-1]
        return jnp.concatenate(
            [goal, rules.reshape(lead + (-1,)), tiles.reshape(lead + (-1,))], axis=-1
        )

    def decode(self, task: jax.Array) -> RuleSet:
        """task [D] -> xminigrid's RuleSet (uint8 goal [5], rules [R, 7], tiles [K, 2])."""
        goal, rules, tiles = self.split(self.codes(task))
        return RuleSet(
            goal=goal.astype(jnp.uint8),
            rules=rules.astype(jnp.uint8),
            init_tiles=tiles.astype(jnp.uint8),
        )

    def identity(self, task: jax.Array) -> jax.Array:
        """task [D] -> int32 [D]: equal for two tasks iff they are the same ruleset up to
        the order of its rules and of its initial tiles, and up to the order of the pair of
        a TileNear goal or rule (the only symmetric ones). The held-out check compares
        these (envs/xland/held_out.py)."""
        goal, rules, tiles = self.split(self.codes(task))
        goal = jnp.where(goal[0] == TILE_NEAR_GOAL, _sorted_pair(goal, 1, GOAL_LEN), goal)
        symmetric = rules[:, 0] == TILE_NEAR_RULE
        rules = jnp.where(symmetric[:, None], jax.vmap(_sorted_rule_pair)(rules), rules)
        return self.join(goal, _sorted_rows(rules), _sorted_rows(tiles))


def _sorted_pair(row: jax.Array, start: int, end: int) -> jax.Array:
    """`row` with its two tiles at [start:start + 2] and [start + 2:start + 4] in
    lexicographic order (the rest of the row, up to `end`, kept)."""
    first, second = row[start : start + 2], row[start + 2 : start + 4]
    swap = (first[0] > second[0]) | ((first[0] == second[0]) & (first[1] > second[1]))
    pair = jnp.where(swap, jnp.concatenate([second, first]), jnp.concatenate([first, second]))
    return jnp.concatenate([row[:start], pair, row[start + 4 : end]])


def _sorted_rule_pair(rule: jax.Array) -> jax.Array:
    return _sorted_pair(rule, 1, RULE_LEN)


def _sorted_rows(rows: jax.Array) -> jax.Array:
    """rows [M, C] sorted lexicographically (column 0 first)."""
    order = jnp.lexsort(tuple(rows[:, c] for c in reversed(range(rows.shape[1]))))
    return rows[order]


def tile_index(tiles: jax.Array) -> jax.Array:
    """(tile, colour) codes [..., 2] -> catalogue index [...]; -1 outside the catalogue."""
    table = jnp.asarray(CATALOGUE_INDEX)
    tile = jnp.clip(tiles[..., 0], 0, NUM_TILES - 1)
    color = jnp.clip(tiles[..., 1], 0, NUM_COLORS - 1)
    return table[tile, color]


def goal_tiles(goal: jax.Array) -> tuple[jax.Array, jax.Array]:
    """goal codes [5] -> (tiles [2, 2], which of them the goal names [2] bool)."""
    two = jnp.isin(goal[0], jnp.asarray(TWO_TILE_GOALS))
    one = (goal[0] != 0) & (goal[0] != TILE_ON_POSITION_GOAL) & (goal[0] != AGENT_ON_POSITION_GOAL)
    return goal[1:5].reshape(2, 2), jnp.stack([one | two, two])


def rule_inputs(rule: jax.Array) -> tuple[jax.Array, jax.Array]:
    """rule codes [7] -> (input tiles [2, 2], which are inputs [2] bool); the product is
    `rule_product`."""
    two = jnp.isin(rule[0], jnp.asarray(TWO_INPUT_RULES))
    return rule[1:5].reshape(2, 2), jnp.stack([rule[0] != EMPTY_RULE, two])


def rule_product(rule: jax.Array) -> jax.Array:
    """rule codes [7] -> its product tile [2] (for an empty rule, (0, 0))."""
    two = jnp.isin(rule[0], jnp.asarray(TWO_INPUT_RULES))
    return jnp.where(two, rule[5:7], rule[3:5])


def count_rules(task_codes: jax.Array, layout: RulesetLayout) -> jax.Array:
    """codes [..., D] -> [...] int32: the rules that are not empty (the reference's
    `num_rules`)."""
    return (layout.split(task_codes)[1][..., 0] != EMPTY_RULE).sum(-1).astype(jnp.int32)


def count_tiles(task_codes: jax.Array, layout: RulesetLayout) -> jax.Array:
    """codes [..., D] -> [...] int32: the initial tiles that are not empty."""
    return jnp.any(layout.split(task_codes)[2] != 0, axis=-1).sum(-1).astype(jnp.int32)
