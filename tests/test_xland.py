"""XLand-MiniGrid's rulesets as levels (envs/xland/): xminigrid's ids, the generator's
rulesets (shapes, bounds, solvable by construction, the reference's "used" rules), the
held-out set (committed, regenerated, never handed out by training), benchmark files,
transition parity with xminigrid's own step, ACCEL's edits, bad input, the student's
encoder, and (slow) DR, PLR and SFL training without network access."""

from __future__ import annotations

import socket

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from xminigrid.core import goals as xgoals
from xminigrid.core import rules as xrules
from xminigrid.envs.xland import XLandMiniGrid
from xminigrid.types import RuleSet
from xminigrid.wrappers import DirectionObservationWrapper, RulesAndGoalsObservationWrapper

from acl.core.errors import ConfigError
from envs.registry import make_env
from envs.xland import PRESETS, held_out
from envs.xland.env import tile_code
from envs.xland.generator import edit_ruleset, sample_ruleset
from envs.xland.rulesets import (
    GENERATED_GOALS,
    GENERATED_RULES,
    NEAR_LHS,
    PICKABLE,
    PRODUCTS,
    TILE_CATALOGUE,
    TWO_INPUT_RULES,
    TWO_TILE_GOALS,
    count_rules,
    count_tiles,
)

# -- helpers ---------------------------------------------------------------------------


def _catalogue(tile) -> int:
    """(tile, colour) -> catalogue index; -1 outside."""
    hits = np.flatnonzero((TILE_CATALOGUE == np.asarray(tile)).all(axis=1))
    return int(hits[0]) if hits.size else -1


def check_ruleset(codes: np.ndarray, preset) -> None:
    """Assert what the reference generator guarantees of one ruleset codes [D] (slot
    layout): ids it draws, tiles from the right sets, the chain's inputs drawn among
    unused tiles, distractors avoiding the goal's and the chain's tiles, and the goal
    reachable from the initial tiles through the rules."""
    layout = preset.layout()
    goal, rules, tiles = (np.asarray(x) for x in layout.split(jnp.asarray(codes)))
    assert goal[0] in GENERATED_GOALS
    two_tile_goal = goal[0] in TWO_TILE_GOALS
    goal_tiles = [tuple(goal[1:3])] + ([tuple(goal[3:5])] if two_tile_goal else [])
    if not two_tile_goal:
        assert tuple(goal[3:5]) == (0, 0)
    first_allowed = PICKABLE if goal[0] == GENERATED_GOALS[0] else NEAR_LHS
    assert first_allowed[_catalogue(goal_tiles[0])]
    if two_tile_goal:
        assert PICKABLE[_catalogue(goal_tiles[1])]

    used = {_catalogue(t) for t in goal_tiles}
    chain = rules[: preset.chain_rules]
    distractors = rules[preset.chain_rules :]
    for rule in chain[chain[:, 0] != 0]:
        assert rule[0] in GENERATED_RULES
        two = rule[0] in TWO_INPUT_RULES
        inputs = [tuple(rule[1:3])] + ([tuple(rule[3:5])] if two else [])
        product = tuple(rule[5:7]) if two else tuple(rule[3:5])
        assert _catalogue(product) in used, "a chain rule makes a goal or chain tile"
        fresh = {_catalogue(t) for t in inputs}
        assert not fresh & used, "chain inputs are drawn among unused tiles"
        allowed = (NEAR_LHS, PICKABLE) if two else (PICKABLE,)
        assert all(a[_catalogue(t)] for a, t in zip(allowed, inputs, strict=True))
        used |= fresh
    objects = tiles[preset.chain_leaves : preset.chain_leaves + preset.num_distractor_objects]
    for tile in objects:
        index = _catalogue(tile)
        assert NEAR_LHS[index] and index not in used
    assert (distractors[:, 0] != 0).sum() <= preset.num_distractor_rules
    for rule in distractors[distractors[:, 0] != 0]:
        two = rule[0] in TWO_INPUT_RULES
        product = _catalogue(rule[5:7] if two else rule[3:5])
        assert PRODUCTS[product] and product not in used

    # Solvable by construction: the goal's tiles are initial tiles or made by rules
    # whose inputs are, recursively.
    available = {tuple(t) for t in tiles if tuple(t) != (0, 0)}
    present = [r for r in rules if r[0] != 0]
    grew = True
    while grew:
        grew = False
        for rule in present:
            two = rule[0] in TWO_INPUT_RULES
            inputs = [tuple(rule[1:3])] + ([tuple(rule[3:5])] if two else [])
            product = tuple(rule[5:7]) if two else tuple(rule[3:5])
            if all(t in available for t in inputs) and product not in available:
                available.add(product)
                grew = True
    assert set(goal_tiles) <= available


def draws(preset_name: str, n: int, seed: int = 0) -> np.ndarray:
    preset = PRESETS[preset_name]
    keys = jax.random.split(jax.random.PRNGKey(seed), n)
    return np.asarray(jax.jit(jax.vmap(lambda k: sample_ruleset(k, preset)))(keys))


# -- xminigrid's codes -----------------------------------------------------------------


def test_our_goal_and_rule_ids_are_xminigrids():
    tile = jnp.array([3, 1])
    goal_classes = {
        1: xgoals.AgentHoldGoal(tile=tile),
        3: xgoals.AgentNearGoal(tile=tile),
        4: xgoals.TileNearGoal(tile_a=tile, tile_b=tile),
        7: xgoals.TileNearUpGoal(tile_a=tile, tile_b=tile),
        8: xgoals.TileNearRightGoal(tile_a=tile, tile_b=tile),
        9: xgoals.TileNearDownGoal(tile_a=tile, tile_b=tile),
        10: xgoals.TileNearLeftGoal(tile_a=tile, tile_b=tile),
        11: xgoals.AgentNearUpGoal(tile=tile),
        12: xgoals.AgentNearRightGoal(tile=tile),
        13: xgoals.AgentNearDownGoal(tile=tile),
        14: xgoals.AgentNearLeftGoal(tile=tile),
    }
    for goal_id, goal in goal_classes.items():
        assert int(goal.encode()[0]) == goal_id
    assert set(GENERATED_GOALS) == set(goal_classes)
    rule_classes = {
        1: xrules.AgentHoldRule(tile=tile, prod_tile=tile),
        2: xrules.AgentNearRule(tile=tile, prod_tile=tile),
        3: xrules.TileNearRule(tile_a=tile, tile_b=tile, prod_tile=tile),
        4: xrules.TileNearUpRule(tile_a=tile, tile_b=tile, prod_tile=tile),
        5: xrules.TileNearRightRule(tile_a=tile, tile_b=tile, prod_tile=tile),
        6: xrules.TileNearDownRule(tile_a=tile, tile_b=tile, prod_tile=tile),
        7: xrules.TileNearLeftRule(tile_a=tile, tile_b=tile, prod_tile=tile),
        8: xrules.AgentNearUpRule(tile=tile, prod_tile=tile),
        9: xrules.AgentNearRightRule(tile=tile, prod_tile=tile),
        10: xrules.AgentNearDownRule(tile=tile, prod_tile=tile),
        11: xrules.AgentNearLeftRule(tile=tile, prod_tile=tile),
    }
    for rule_id, rule in rule_classes.items():
        assert int(rule.encode()[0]) == rule_id
    assert set(GENERATED_RULES) == set(rule_classes)
    assert set(TWO_INPUT_RULES) == {3, 4, 5, 6, 7}


# -- the generator ---------------------------------------------------------------------


@pytest.mark.slow
def test_small_rulesets_have_the_layouts_shape_bounds_and_the_references_guarantees():
    preset = PRESETS["small"]
    env = make_env("xland", preset="small")
    codes = draws("small", 400)
    assert codes.shape == (400, env.task_space.dim) == (400, 5 + 7 * 4 + 2 * 10)
    assert np.all(env.task_space.contains(jnp.asarray(codes, jnp.float32)))
    for row in codes:
        check_ruleset(row, preset)
    # Pruning and the sampled distractor count show: 0 to 4 rules, 3 to 10 tiles.
    rule_counts = np.asarray(count_rules(jnp.asarray(codes), preset.layout()))
    tile_counts = np.asarray(count_tiles(jnp.asarray(codes), preset.layout()))
    assert set(rule_counts) == {0, 1, 2, 3, 4}
    assert tile_counts.min() >= 3 and tile_counts.max() <= 10


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_presets_rulesets_keep_the_references_guarantees(name):
    preset = PRESETS[name]
    for row in draws(name, 1000, seed=1):
        check_ruleset(row, preset)


def test_the_checker_can_fail():
    preset = PRESETS["small"]
    row = draws("small", 1)[0].copy()
    layout = preset.layout()
    broken = row.copy()
    broken[0] = 2  # AgentOnTile: never generated
    with pytest.raises(AssertionError):
        check_ruleset(broken, preset)
    unreachable = row.copy()
    unreachable[layout.tiles_start :] = 0  # no initial tiles at all
    with pytest.raises(AssertionError):
        check_ruleset(unreachable, preset)


# -- held-out rulesets -----------------------------------------------------------------


def test_the_committed_held_out_set_is_distinct_and_fixed():
    for name, preset in PRESETS.items():
        codes = held_out.committed_held_out(name, held_out.MAX_HELD_OUT)
        assert codes.shape == (held_out.MAX_HELD_OUT, preset.layout().dim)
        identities = held_out.held_out_identities(name, held_out.MAX_HELD_OUT)
        assert len({row.tobytes() for row in identities}) == len(identities)
        assert np.array_equal(held_out.committed_held_out(name, 7), codes[:7])


@pytest.mark.slow
def test_the_committed_held_out_set_is_what_the_fixed_key_generates_trivial():
    regenerated = held_out.held_out_codes("trivial", 64)
    assert np.array_equal(regenerated, held_out.committed_held_out("trivial", 64))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_the_committed_held_out_set_is_what_the_fixed_key_generates(name):
    regenerated = held_out.held_out_codes(name, held_out.MAX_HELD_OUT)
    assert np.array_equal(regenerated, held_out.committed_held_out(name, held_out.MAX_HELD_OUT))
    for row in regenerated[:200]:
        check_ruleset(row, PRESETS[name])


@pytest.mark.slow
def test_a_held_out_ruleset_is_recognised_in_any_order():
    env = make_env("xland", preset="small", num_held_out=32)
    layout = env.layout
    tasks = jnp.asarray(env.held_out_tasks())
    goal, rules, tiles = layout.split(tasks)
    shuffled = layout.join(goal, rules[:, ::-1], tiles[:, ::-1])
    fresh = jnp.asarray(draws("small", 32, seed=3), jnp.float32)
    found = jax.jit(env.is_held_out)(jnp.concatenate([tasks, shuffled, fresh]))
    assert np.all(found[:64]) and not np.any(found[64:])


def test_draws_that_hit_the_held_out_set_are_drawn_again():
    env = make_env("xland", preset="trivial", num_held_out=16)
    held = jnp.asarray(env.held_out_tasks(), jnp.int32)
    fresh = jnp.asarray(draws("trivial", 8, seed=4))
    key = jax.random.PRNGKey(0)
    first_keys = jax.random.split(jax.random.fold_in(key, 0), 8)

    def draw(keys):
        # The first attempt gives four held-out rulesets and four others; later ones
        # give fresh rulesets only.
        first = jnp.all(keys == first_keys)
        return jnp.where(first, jnp.concatenate([held[:4], fresh[4:]]), fresh)

    excluded = jax.jit(env.is_held_out)
    assert np.all(excluded(draw(first_keys))[:4]), "the first attempt hits them"
    out = jax.jit(lambda k: held_out.draw_avoiding(draw, k, 8, env.layout.dim, env.is_held_out))(
        key
    )
    assert not np.any(excluded(out))
    assert np.array_equal(out[:4], fresh[:4]), "held-out draws are drawn again"
    assert np.array_equal(out[4:], fresh[4:]), "draws that were not held out stay"


@pytest.mark.slow
def test_training_draws_and_edits_avoid_the_held_out_set():
    env = make_env("xland", preset="trivial", num_held_out=512)
    tasks = jax.jit(lambda k: env.sample_tasks(k, 4096))(jax.random.PRNGKey(5))
    assert not np.any(env.is_held_out(tasks))
    for row in np.asarray(tasks[:500], np.int32):
        check_ruleset(row, env.generator)


@pytest.mark.slow
def test_edits_never_make_a_held_out_ruleset():
    env = make_env("xland", preset="trivial", num_held_out=16)
    layout = env.layout
    target = jnp.asarray(env.held_out_tasks()[0], jnp.int32)
    # One distractor object away from a held-out ruleset: re-drawing that object gives
    # the held-out ruleset back about once in 3 x 66 edits.
    start = target.at[layout.tiles_start + 2 * env.generator.chain_leaves].set(0)
    start = start.at[layout.tiles_start + 2 * env.generator.chain_leaves + 1].set(0)
    starts = jnp.broadcast_to(start, (2000, layout.dim))
    keys = jax.random.split(jax.random.PRNGKey(6), 2000)
    raw = jax.vmap(lambda k, c: edit_ruleset(k, c, env.generator))(keys, starts)
    assert np.any(env.is_held_out(raw)), "the unfiltered edit reaches it"
    edited = env.edit_tasks(jax.random.PRNGKey(6), starts.astype(jnp.float32), 1)
    assert not np.any(env.is_held_out(edited))


# -- benchmark files -------------------------------------------------------------------


def test_an_xminigrid_benchmark_file_loads_offline_with_the_same_adapter(tmp_path, monkeypatch):
    from xminigrid.benchmarks import save_bz2_pickle

    env = make_env("xland", preset="small", num_held_out=8)
    codes = held_out.committed_held_out("small", 8)
    goal, rules, tiles = (np.asarray(x) for x in env.layout.split(jnp.asarray(codes)))

    # As xminigrid's files hold them: each ruleset compacted, padded to the file's width.
    def compacted(rows, present, width):
        out = np.zeros((rows.shape[0], width, rows.shape[2]), np.uint8)
        for i, (row, keep) in enumerate(zip(rows, present, strict=True)):
            out[i, : keep.sum()] = row[keep]
        return out

    path = tmp_path / "small_test"
    save_bz2_pickle(
        {
            "goals": goal.astype(np.uint8),
            "rules": compacted(rules, rules[..., 0] != 0, 6),
            "init_tiles": compacted(tiles, np.any(tiles != 0, -1), 12),
            "num_rules": (rules[..., 0] != 0).sum(-1).astype(np.uint8),
        },
        str(path),
    )
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    indices, tasks = held_out.load_benchmark_tasks(env, path)
    assert list(indices) == list(range(8))
    assert np.all(jax.jit(env.is_held_out)(jnp.asarray(tasks)))
    names, named = held_out.xland_test_set(env, f"benchmark:{path}", seed=0)
    assert len(names) == 8 and np.array_equal(named, tasks)
    small_env = make_env("xland", preset="trivial")
    with pytest.raises(ConfigError, match="preset holds 1"):
        held_out.load_benchmark_tasks(small_env, path)
    with pytest.raises(ConfigError, match="no xminigrid benchmark file"):
        held_out.load_benchmark_tasks(env, tmp_path / "missing")


def _no_network(*args, **kwargs):
    raise OSError("network access in a test")


# -- transitions -----------------------------------------------------------------------


@pytest.mark.slow
def test_transitions_are_xminigrids_own():
    """Rulesets played through our adapter and through xminigrid's own reset and step
    (with its direction and rules-and-goals observation wrappers), from the same keys
    and actions, give the same observations, rewards, ends and grids."""
    steps, n = 48, 64
    env = make_env("xland", preset="small", max_episode_steps=steps, num_held_out=n)
    tasks = jnp.asarray(env.held_out_tasks())
    reference = DirectionObservationWrapper(RulesAndGoalsObservationWrapper(XLandMiniGrid()))
    base = reference.default_params(grid_type="R1", height=9, width=9, max_steps=steps)
    goal, rules, tiles = env.layout.split(env.layout.codes(tasks))
    rulesets = RuleSet(
        goal=goal.astype(jnp.uint8),
        rules=rules.astype(jnp.uint8),
        init_tiles=tiles.astype(jnp.uint8),
    )
    keys = jax.random.split(jax.random.PRNGKey(7), n)
    actions = jax.random.randint(jax.random.PRNGKey(8), (steps, n), 0, 6)

    def ours(task, key, actions):
        params = env.task_to_params(task)
        obs, state = env.reset(key, params)

        def step(state, action):
            obs, state, reward, terminated, truncated, _ = env.step(key, state, action, params)
            return state, (obs, reward, terminated, truncated, state.state.grid)

        return obs, jax.lax.scan(step, state, actions)[1]

    def theirs(ruleset, key, actions):
        params = base.replace(ruleset=ruleset)
        timestep = reference.reset(params, key)

        def step(timestep, action):
            timestep = reference.step(params, timestep, action)
            return timestep, (
                timestep.observation,
                timestep.reward,
                timestep.step_type,
                timestep.discount,
                timestep.state.grid,
            )

        return timestep.observation, jax.lax.scan(step, timestep, actions)[1]

    first, (obs, reward, terminated, truncated, grid) = jax.jit(jax.vmap(ours, (0, 0, 1)))(
        tasks, keys, actions
    )
    ref_first, (ref_obs, ref_reward, step_type, discount, ref_grid) = jax.jit(
        jax.vmap(theirs, (0, 0, 1))
    )(rulesets, keys, actions)

    def same_observation(ours_obs, ref):
        view, direction, goal_codes, rule_codes = env.split_observation(ours_obs)
        assert np.array_equal(view, tile_code(ref["img"]))
        assert np.array_equal(direction, np.argmax(ref["direction"], -1))
        ref_goal = np.asarray(ref["goal_encoding"], np.int32)
        assert np.array_equal(goal_codes[..., 0], ref_goal[..., 0])
        assert np.array_equal(
            goal_codes[..., 1:], tile_code(ref_goal[..., 1:].reshape(ref_goal.shape[:-1] + (2, 2)))
        )
        ref_rules = np.asarray(ref["rule_encoding"], np.int32)
        assert np.array_equal(rule_codes[..., 0], ref_rules[..., 0])
        pairs = ref_rules[..., 1:].reshape(ref_rules.shape[:-1] + (3, 2))
        assert np.array_equal(rule_codes[..., 1:], tile_code(pairs))

    same_observation(first, ref_first)
    same_observation(obs, ref_obs)
    assert np.array_equal(grid, ref_grid)
    assert np.array_equal(reward, np.asarray(ref_reward, np.float32))
    last = np.asarray(step_type) == 2
    ref_terminated = last & (np.asarray(discount) == 0)
    assert np.array_equal(terminated, ref_terminated)
    assert np.array_equal(truncated, last & ~ref_terminated)
    assert not np.any(np.asarray(terminated) & np.asarray(truncated))
    # The data hold what is worth comparing: goals met, and rules that fired (a tile
    # changed on a step that moved forward, which no action changes by itself).
    assert np.asarray(terminated).sum() > 0
    moved = np.asarray(actions).T == 0
    changed = np.any(grid[:, 1:] != grid[:, :-1], axis=(2, 3, 4))
    assert np.any(changed & moved[:, 1:])


# -- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config, message",
    [
        ({"preset": "hard"}, "unknown XLand-MiniGrid preset 'hard'; presets: trivial"),
        ({"grid_size": 7}, "registers R1 at 9, 11, 13, 15, 17 \\(none smaller\\), got 7"),
        ({"grid_size": 10}, "registers R1 at 9, 11, 13, 15, 17, got 10"),
        ({"grid_type": "R3"}, "unknown XLand-MiniGrid grid type 'R3'"),
        ({"grid_type": "R9", "grid_size": 9}, "registers R9 at 16, 19, 25 \\(none smaller\\)"),
        ({"num_held_out": 513}, "num_held_out must be <= 512"),
        ({"view_size": 4}, "view_size must be odd and >= 3"),
    ],
)
def test_bad_static_config_is_one_line(config, message):
    with pytest.raises(ConfigError, match=message) as raised:
        make_env("xland", **config)
    assert "\n" not in str(raised.value)


def test_an_unknown_test_set_is_one_line():
    env = make_env("xland")
    with pytest.raises(ConfigError, match="unknown xland set 'held'") as raised:
        held_out.xland_test_set(env, "held")
    assert "\n" not in str(raised.value)


# -- the student -----------------------------------------------------------------------


def test_recurrent_ppo_embeds_the_codes():
    from acl.agents import AGENTS
    from acl.agents.recurrent_ppo import TokenEncoder

    env = make_env("xland", preset="small")
    agent = AGENTS.get("recurrent_ppo")(lstm_size=8, mlp_sizes=[16], head_sizes=[8])
    agent.bind(env, 4)
    assert agent.token_env is env and agent.image_env is None
    with pytest.raises(ConfigError, match="needs at least one layer"):
        AGENTS.get("recurrent_ppo")(mlp_sizes=[]).bind(env, 4)
    # The encoder is the MLP on the one-hot of each code.
    sizes = (3, 2, 4)
    encoder = TokenEncoder(sizes, (5,), "relu")
    codes = jnp.asarray([[2.0, 0.0, 3.0], [1.0, 1.0, 0.0]])
    params = encoder.init(jax.random.PRNGKey(0), codes)
    table = params["params"]["embedding"]
    bias = params["params"]["bias"]
    one_hot = jnp.concatenate(
        [jax.nn.one_hot(codes[:, i].astype(int), size) for i, size in enumerate(sizes)], -1
    )
    expected = jax.nn.relu(one_hot @ table + bias)
    assert np.allclose(encoder.apply(params, codes), expected, atol=1e-6)


@pytest.mark.slow
def test_recurrent_ppo_acts_on_xland():
    from acl.agents import AGENTS

    env = make_env("xland", preset="small")
    agent = AGENTS.get("recurrent_ppo")(lstm_size=8, mlp_sizes=[16], head_sizes=[8])
    agent.bind(env, 4)
    state = agent.init(jax.random.PRNGKey(0), env.observation_space(), env.action_space())
    embedding = state.params["params"]["encoder"]["embedding"]
    assert embedding.shape == (sum(env.token_sizes), 16)
    obs = jnp.asarray(np.stack([env.observation_space().high] * 4))
    action, _, extras = agent.act(state, obs, agent.initial_carry(4), jax.random.PRNGKey(1))
    assert action.shape == (4,) and np.all(np.isfinite(extras.value))


# -- training (slow) -------------------------------------------------------------------


TINY_XLAND = {
    "env": {"name": "xland", "preset": "small", "max_episode_steps": 32, "num_held_out": 8},
    "agent": {
        "name": "recurrent_ppo",
        "lstm_size": 8,
        "mlp_sizes": [16],
        "head_sizes": [8],
        "update_epochs": 1,
    },
    "loop": {
        "num_envs": 8,
        "num_steps": 32,
        "total_env_steps": 768,
        "eval_every": 256,
        "mode": "batch",
    },
    "eval": {"test_set": "xland_held_out", "sampled_attempts": 2, "episodes_per_task": 1},
    "num_seeds": 2,
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "teacher",
    [
        {"name": "dr"},
        {"name": "plr", "capacity": 16, "minimum_fill_ratio": 0.5},
        {
            "name": "sfl",
            "num_batches": 1,
            "batch_size": 16,
            "rollout_steps": 64,  # more than T: two episodes per ruleset
            "num_to_save": 8,
            "buffer_update_frequency": 2,
        },
        {"name": "accel", "capacity": 16, "minimum_fill_ratio": 0.25, "num_edits": 2},
    ],
    ids=lambda t: t["name"],
)
def test_teachers_train_on_generated_rulesets_without_network(teacher, tmp_path, monkeypatch):
    import csv

    import xminigrid.benchmarks
    import yaml

    from experiments.tools import run

    monkeypatch.setattr(socket.socket, "connect", _no_network)
    monkeypatch.setattr(xminigrid.benchmarks, "_download_from_hf", _no_network)
    config = {"name": f"xland_{teacher['name']}", **TINY_XLAND, "teacher": teacher}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "run"
    assert run.main(["--config", str(path), "--out", str(out), "--no-progress"]) == 0
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert len(rows) == 3 * 2
    for row in rows:
        assert np.isfinite(float(row["eval_solve_sampled"]))
        assert np.isfinite(float(row["eval_cvar_0.1"]))
        assert 0.0 <= float(row["train_success"]) <= 1.0
    env = make_env("xland", preset="small", num_held_out=8)
    columns = range(2, 2 + env.task_space.dim)
    tasks = np.loadtxt(out / "tasks.csv", delimiter=",", skiprows=1, usecols=columns)
    assert tasks.shape[1] == env.task_space.dim
    assert not np.any(env.is_held_out(jnp.asarray(tasks, jnp.float32)))
