"""Our ruleset generator: the distribution of XLand-MiniGrid's reference generator
(its repository's scripts/ruleset_generator.py, parameters per benchmark in
scripts/generate_benchmarks.sh), written in JAX and jittable, in a fixed slot layout.

What the reference does, and so what `sample_ruleset` draws (each draw independent):

1. A goal: one of 11 kinds with probability 1/11 each (`rulesets.GENERATED_GOALS`): hold
   a pickable object; be near an object or goal square (no side, or up, down, left,
   right); put object a next to object b (no side, or b above, below, left of, right of
   a), a an object or goal square, b an object (a may equal b). Its tiles are the first
   chain tiles, and "used".
2. A chain of `chain_depth` levels, a binary tree: each chain tile of a level is pruned
   with probability `prune_prob` (then it is an initial tile), otherwise it becomes the
   product of a new rule, one of 11 kinds with probability 1/11 each
   (`rulesets.GENERATED_RULES`: hold, agent-near in five ways, tile-near in five ways),
   whose input tiles (one, or a pair) are drawn uniformly among the tiles not yet used;
   they join "used" and are the next level's chain tiles. The last level's inputs, and
   with depth 0 the goal's tiles, are initial tiles.
3. `num_distractor_objects` distractor objects, each uniform (with replacement) among
   the objects and goal squares not used.
4. Distractor rules: `num_distractor_rules` of them, or with
   `sample_distractor_rules` a number uniform in 0..num_distractor_rules; each produces a
   tile uniform among the pickable objects and black floor not used, from inputs drawn
   without the "used" restriction (dead ends are allowed); its inputs are initial tiles.

So every goal is reachable by construction: each chain tile is an initial tile or the
product of a rule whose inputs are, recursively.

The slot layout (`GeneratorPreset.layout`): rules [chain slots 2^(d+1) - 2 | distractor
slots N], a chain tile's rule at (level offset 2^(l+1) - 2) + its node index, its inputs
the nodes 2 j and 2 j + 1 of the next level; initial tiles [chain leaves 2^(d+1) |
distractor objects O | distractor inputs 2 N], a tile pruned at level l in the leaf slot
j 2^(d-l) of its (otherwise empty) subtree. Empty rules and tiles fill the unused slots;
xminigrid skips both, so the slots only fix where each part lives (`edit_ruleset` needs
that), not what the agent meets. The reference appends the same parts in the same
order (chain rules level by level, then distractor rules), without gaps.

Where ours differs from the reference script, by design:
- Draws are independent: no rejection of repeats. The script (at its HEAD, 0d306d1)
  rejects a ruleset whose goal and rules repeat an earlier one's (initial tiles are not
  compared). That conditions each draw on the draws before it, and the distortion grows
  with the file's size: where few distinct rulesets carry much of the mass it is large.
  In 10,000 `small` rulesets, the ~410 rule-less rulesets of a one-tile goal (5.5% of
  independent draws) repeat, so rule-less rulesets fall from 6.8% to 4.2%; `trivial`
  (no rules; about 21,400 distinct goals) becomes nearly all distinct two-tile goals;
  `medium` and `high` show nothing measurable (docs/results/xland_generator.md). Before
  its #50 (commit af7a541 here, as in v0.9.1) the loop's test was inverted: on a repeat
  it drew until it met another repeat, which is distributed as the repeat was, so the
  `*_v2` benchmark files of v0.9.1 and older were independent draws, as ours; the files
  that 0.9.2 and 0.9.3 download (`trivial-21k`, `*_v3`) were made with the rejection. A
  level generator draws a stream, not a file of distinct rulesets, so ours keeps the
  per-draw distribution. The held-out rulesets are distinct (envs/xland/held_out.py).
- The reference counts non-empty rules in `num_rules` (its first version recorded the
  nominal chain depth there); we store no count: `rulesets.count_rules` counts.
- Within one chain level the reference pops its tiles from the end of a list; we visit
  the nodes from the last to the first too, but the tree slots fix the rules' order
  level by level, node by node. The order of rules on one level never matters to the
  draw's distribution (each draw sees the same "used" set up to a relabelling).
- `sample_depth` (a depth uniform in 0..chain_depth) is not offered: no benchmark uses it.

`edit_ruleset` is ACCEL's edit that stays inside this distribution: it re-draws one
distractor (an object, or a distractor rule with its inputs) from the very distribution
it was drawn from, given the rest of the ruleset. The distractors are independent of
each other given the goal and the chain, so this is a Gibbs step: a ruleset drawn by the
generator and edited any number of times is still distributed as the generator's.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from envs.xland.rulesets import (
    GENERATED_GOALS,
    GENERATED_RULES,
    NEAR_LHS,
    PICKABLE,
    PRODUCTS,
    RULE_LEN,
    TILE_CATALOGUE,
    TWO_INPUT_RULES,
    TWO_TILE_GOALS,
    RulesetLayout,
    goal_tiles,
    rule_inputs,
    tile_index,
)


@dataclass(frozen=True)
class GeneratorPreset:
    """One benchmark's generation config (the reference script's flags)."""

    name: str
    chain_depth: int
    """Levels of rules between the goal and the initial tiles (`--chain_depth`)."""
    prune_prob: float
    """Chance that a chain tile is an initial tile instead of a rule's product
    (`--prune_prob`, with `--prune_chain`; 0: no pruning)."""
    num_distractor_rules: int
    """`--num_distractor_rules`."""
    sample_distractor_rules: bool
    """`--sample_distractor_rules`: a number of distractor rules uniform in
    0..num_distractor_rules instead of exactly that many."""
    num_distractor_objects: int
    """`--num_distractor_objects`."""

    @property
    def chain_leaves(self) -> int:
        """Initial-tile slots of the chain: the tree's leaves, 2^(depth + 1)."""
        return 2 ** (self.chain_depth + 1)

    @property
    def chain_rules(self) -> int:
        """Rule slots of the chain: 2 + 4 + ... + 2^depth."""
        return 2 ** (self.chain_depth + 1) - 2

    def layout(self, grid_size: int = 9) -> RulesetLayout:
        """The preset's slot layout (R = chain + distractor rule slots, at least one;
        K = chain leaves + distractor objects + two per distractor rule)."""
        return RulesetLayout(
            num_rules=max(self.chain_rules + self.num_distractor_rules, 1),
            num_tiles=self.chain_leaves
            + self.num_distractor_objects
            + 2 * self.num_distractor_rules,
            grid_size=grid_size,
        )


PRESETS = {
    preset.name: preset
    for preset in (
        GeneratorPreset("trivial", 0, 0.0, 0, False, 3),
        GeneratorPreset("small", 1, 0.3, 2, True, 2),
        GeneratorPreset("medium", 2, 0.1, 3, True, 2),
        GeneratorPreset("high", 3, 0.1, 4, True, 1),
    )
}
"""The benchmarks of generate_benchmarks.sh (trivial-21k, small-1m, medium-1m and -3m,
high-1m and -3m; the 3m ones share the 1m ones' config)."""

_ZERO_TILE = jnp.zeros(2, jnp.int32)


class Uniforms:
    """The uniform numbers of one draw, used in a fixed order: one threefry call for the
    whole ruleset instead of one per choice (XLA's CPU compile time grows with each)."""

    def __init__(self, values: jax.Array):
        self.values = values
        self.used = 0

    @classmethod
    def draw(cls, key: jax.Array, count: int) -> Uniforms:
        return cls(jax.random.uniform(key, (count,)))

    def block(self, rows: int, per_row: int) -> jax.Array:
        """The next rows * per_row uniforms as [rows, per_row], one row per step of a scan
        (each row read through a `Uniforms` of its own)."""
        values = self.values[self.used : self.used + rows * per_row]
        self.used += rows * per_row
        return values.reshape(rows, per_row)

    def next(self) -> jax.Array:
        value = self.values[self.used]
        self.used += 1
        return value

    def integer(self, high: int) -> jax.Array:
        """Uniform in 0..high - 1."""
        return jnp.minimum(jnp.floor(self.next() * high).astype(jnp.int32), high - 1)

    def pick(self, allowed: jax.Array) -> jax.Array:
        """A catalogue index uniform where `allowed` [71] (at least one must be)."""
        rank = jnp.floor(self.next() * allowed.sum()).astype(jnp.int32)
        return jnp.argmax(jnp.cumsum(allowed) > rank).astype(jnp.int32)


RULE_DRAWS = 3
"""Uniforms of one rule: its kind and its two inputs."""


def _tile(index: jax.Array) -> jax.Array:
    return jnp.asarray(TILE_CATALOGUE)[index]


def _one_hot(index: jax.Array) -> jax.Array:
    return jnp.arange(len(TILE_CATALOGUE)) == index


def sample_rule(u: Uniforms, product: jax.Array, used: jax.Array):
    """One rule making `product` (a catalogue index) from inputs not in `used` [71].

    Returns (rule codes [7], input indices [2], which inputs exist [2] bool)."""
    rule_id = jnp.asarray(GENERATED_RULES)[u.integer(len(GENERATED_RULES))]
    two = jnp.isin(rule_id, jnp.asarray(TWO_INPUT_RULES))
    a = u.pick(jnp.where(two, jnp.asarray(NEAR_LHS), jnp.asarray(PICKABLE)) & ~used)
    b = u.pick(jnp.asarray(PICKABLE) & ~used)
    prod = _tile(product)
    codes = jnp.where(
        two,
        jnp.concatenate([rule_id[None], _tile(a), _tile(b), prod]),
        jnp.concatenate([rule_id[None], _tile(a), prod, _ZERO_TILE]),
    )
    return codes.astype(jnp.int32), jnp.stack([a, b]), jnp.stack([jnp.bool_(True), two])


def _sample_goal(u: Uniforms):
    """Returns (goal codes [5], tile indices [2], which exist [2] bool)."""
    kind = u.integer(len(GENERATED_GOALS))
    goal_id = jnp.asarray(GENERATED_GOALS)[kind]
    two = jnp.isin(goal_id, jnp.asarray(TWO_TILE_GOALS))
    a = u.pick(jnp.where(kind == 0, jnp.asarray(PICKABLE), jnp.asarray(NEAR_LHS)))
    b = u.pick(jnp.asarray(PICKABLE))
    codes = jnp.concatenate([goal_id[None], _tile(a), jnp.where(two, _tile(b), _ZERO_TILE)])
    return codes.astype(jnp.int32), jnp.stack([a, b]), jnp.stack([jnp.bool_(True), two])


def _distractor_rule(u: Uniforms, used: jax.Array):
    """A distractor rule: a product not in `used`, inputs drawn from everything. Returns
    (rule codes [7], input tiles [2, 2] with (0, 0) for a missing second input)."""
    product = u.pick(jnp.asarray(PRODUCTS) & ~used)
    codes, inputs, exists = sample_rule(u, product, jnp.zeros_like(used))
    return codes, jnp.where(exists[:, None], _tile(inputs), 0)


def draws_per_ruleset(preset: GeneratorPreset) -> int:
    """Uniforms `sample_ruleset` uses: the goal's 3, each chain node's prune and rule,
    each object's, the distractor count's and each distractor rule's product and rule."""
    return (
        3
        + preset.chain_rules * (1 + RULE_DRAWS)  # a rule drawn for every node, used or not
        + preset.num_distractor_objects
        + 1
        + preset.num_distractor_rules * (1 + RULE_DRAWS)
    )


def sample_ruleset(key: jax.Array, preset: GeneratorPreset) -> jax.Array:
    """One ruleset of `preset`'s distribution as codes [D] int32 in its slot layout
    (`preset.layout()`); jittable, vmap it over keys."""
    layout = preset.layout()
    depth = preset.chain_depth
    u = Uniforms.draw(key, draws_per_ruleset(preset))
    goal, nodes, valid = _sample_goal(u)
    used = _one_hot(nodes[0]) | (valid[1] & _one_hot(nodes[1]))
    rules = jnp.zeros((layout.num_rules, RULE_LEN), jnp.int32)
    tiles = jnp.zeros((layout.num_tiles, 2), jnp.int32)

    for level in range(depth):
        width = 2 ** (level + 1)
        leaf_stride = 2 ** (depth - level)  # leaves under one node of this level

        def grow(carry, xs, width=width, leaf_stride=leaf_stride):
            rules, tiles, used, nodes, valid, next_nodes, next_valid = carry
            node, row = xs
            node_u = Uniforms(row)
            pruned = node_u.next() < preset.prune_prob
            grows = valid[node] & ~pruned
            codes, inputs, exists = sample_rule(node_u, nodes[node], used)
            rules = rules.at[width - 2 + node].set(jnp.where(grows, codes, 0))
            slot = node * leaf_stride
            tiles = tiles.at[slot].set(
                jnp.where(valid[node] & pruned, _tile(nodes[node]), tiles[slot])
            )
            new = grows & exists
            used = used | (new[0] & _one_hot(inputs[0])) | (new[1] & _one_hot(inputs[1]))
            next_nodes = jax.lax.dynamic_update_slice(next_nodes, inputs, (2 * node,))
            next_valid = jax.lax.dynamic_update_slice(next_valid, new, (2 * node,))
            return (rules, tiles, used, nodes, valid, next_nodes, next_valid), None

        # The reference pops its list of chain tiles from the end: the last node first.
        order = jnp.arange(width - 1, -1, -1)
        start = (rules, tiles, used, nodes, valid)
        start += (jnp.zeros(2 * width, jnp.int32), jnp.zeros(2 * width, bool))
        carry, _ = jax.lax.scan(grow, start, (order, u.block(width, 1 + RULE_DRAWS)))
        rules, tiles, used, _, _, nodes, valid = carry

    # The last level's nodes (the goal's tiles at depth 0) are the chain's leaves; a
    # pruned node's slot lies in its own empty subtree, so the two never meet.
    leaves = preset.chain_leaves
    tiles = tiles.at[:leaves].set(jnp.where(valid[:, None], _tile(nodes), tiles[:leaves]))

    objects_at = preset.chain_leaves
    for i in range(preset.num_distractor_objects):
        tiles = tiles.at[objects_at + i].set(_tile(u.pick(jnp.asarray(NEAR_LHS) & ~used)))

    count = preset.num_distractor_rules
    if preset.sample_distractor_rules:
        count = u.integer(preset.num_distractor_rules + 1)
    else:
        u.next()  # keep the draws' positions independent of the flag
    inputs_at = objects_at + preset.num_distractor_objects

    def distract(carry, xs):
        rules, tiles = carry
        i, row = xs
        codes, inputs = _distractor_rule(Uniforms(row), used)
        active = i < count
        rules = rules.at[preset.chain_rules + i].set(jnp.where(active, codes, 0))
        tiles = jax.lax.dynamic_update_slice(
            tiles, jnp.where(active, inputs, 0), (inputs_at + 2 * i, 0)
        )
        return (rules, tiles), None

    if preset.num_distractor_rules:
        rows = u.block(preset.num_distractor_rules, 1 + RULE_DRAWS)
        (rules, tiles), _ = jax.lax.scan(
            distract, (rules, tiles), (jnp.arange(preset.num_distractor_rules), rows)
        )
    return layout.join(goal, rules, tiles)


def used_tiles(codes: jax.Array, preset: GeneratorPreset) -> jax.Array:
    """codes [D] (in the slot layout) -> [71] bool: the goal's tiles and the chain rules'
    inputs, which no distractor object or distractor product may be."""
    goal, rules, _ = preset.layout().split(codes)
    tiles, named = goal_tiles(goal)
    chain_inputs, exists = jax.vmap(rule_inputs)(rules[: preset.chain_rules])
    tiles = jnp.concatenate([tiles, chain_inputs.reshape(-1, 2)])
    named = jnp.concatenate([named, exists.reshape(-1)])
    index = tile_index(tiles)
    hits = (jnp.arange(len(TILE_CATALOGUE)) == index[:, None]) & (named & (index >= 0))[:, None]
    return hits.any(axis=0)


def edit_ruleset(key: jax.Array, codes: jax.Array, preset: GeneratorPreset) -> jax.Array:
    """ACCEL's in-distribution edit of one ruleset codes [D] (slot layout) -> [D]: one
    distractor, chosen uniformly among the distractor objects and the present distractor
    rules, re-drawn from its own distribution given the rest (module docstring). A
    ruleset with no distractor comes back unchanged. Jittable."""
    layout = preset.layout()
    goal, rules, tiles = layout.split(codes)
    used = used_tiles(codes, preset)
    num_objects, num_rules = preset.num_distractor_objects, preset.num_distractor_rules
    present = rules[preset.chain_rules : preset.chain_rules + num_rules, 0] != 0
    candidates = jnp.concatenate([jnp.ones(num_objects, bool), present])
    if candidates.size == 0:
        return codes
    u = Uniforms.draw(key, 2 + 1 + RULE_DRAWS)
    choice = u.pick(candidates)
    objects_at = preset.chain_leaves
    inputs_at = objects_at + num_objects

    new_object = _tile(u.pick(jnp.asarray(NEAR_LHS) & ~used))
    object_slot = objects_at + jnp.minimum(choice, max(num_objects - 1, 0))
    edited_objects = tiles.at[object_slot].set(new_object) if num_objects else tiles

    rule_slot = jnp.clip(choice - num_objects, 0, max(num_rules - 1, 0))
    if num_rules:
        new_rule, new_inputs = _distractor_rule(u, used)
        edited_rules = rules.at[preset.chain_rules + rule_slot].set(new_rule)
        edited_inputs = jax.lax.dynamic_update_slice(
            tiles, new_inputs, (inputs_at + 2 * rule_slot, 0)
        )
    else:
        edited_rules, edited_inputs = rules, tiles
    is_object = choice < num_objects
    edited = layout.join(
        goal,
        jnp.where(is_object, rules, edited_rules),
        jnp.where(is_object, edited_objects, edited_inputs),
    )
    return jnp.where(candidates.any(), edited, codes)
