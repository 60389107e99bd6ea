"""Stump Tracks PPO and benchmark registration: the suite configs, the challenge bounds and
test grid on Stump Tracks, the learning statistics, and a saved policy that loads back."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import serialization

from acl.benchmark import runner
from acl.benchmark.runner import load_suite
from acl.build import build_components, challenge_bounds, make_challenge
from acl.config import ChallengeSpec
from acl.loop.evaluation import make_test_set
from envs import ENVS
from experiments.papers import stump_tracks_ppo
from experiments.papers.stump_tracks_ppo import learning_statistics, load_agent, load_policy
from experiments.tools import benchmark

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "experiments" / "configs"


@pytest.fixture(scope="module")
def env():
    return ENVS.get("stump_tracks", "env.name")()


@pytest.fixture(scope="module")
def suites():
    return {
        name: load_suite(CONFIGS / benchmark.SUITES[name])
        for name in ("stump_tracks", "stump_tracks_quick")
    }


@pytest.mark.slow
def test_the_stump_tracks_suites_are_registered_and_parse(suites):
    full, quick = suites["stump_tracks"], suites["stump_tracks_quick"]
    for suite in (full, quick):
        assert suite.base.env.name == "stump_tracks"
        assert [label for label, _ in suite.teachers] == ["random", "alp_gmm", "covar_gmm", "riac"]
        assert suite.base.agent.kwargs["normalize_obs"] is True
    # TeachMyAgent's protocol: 20M steps, 16 seeds, an evaluation every 500k steps on the grid.
    assert full.base.num_seeds == 16
    assert full.base.loop.total_env_steps == 20_000_000
    assert full.base.loop.eval_every == 500_000
    assert full.base.eval.grid_per_dim == 10
    assert full.forgetting_period == pytest.approx(7 / 20)
    keys = {s.key for s in full.settings}
    assert {"default", "unfeasible", "trivial", "rugged", "forgetting", "students"} <= keys
    assert {"default+expert_low", "default+expert_high", "forgetting+expert_high"} <= keys
    bodies = {
        label: runner._student_config(full.base, kw).env.kwargs["body"]
        for label, kw in full.students
    }
    assert bodies == {b: b for b in ("classic_bipedal", "small_bipedal", "spider")}
    # A student's env override reaches the env: the spider has four legs.
    spider = runner._student_config(full.base, dict(full.students)["spider"])
    assert build_components(spider, challenged=True).env.obs_size == 4 + 5 * 4 + 10
    assert quick.base.num_seeds <= 3 and quick.base.loop.total_env_steps <= 1_000_000


@pytest.mark.slow
def test_the_suite_json_round_trips(suites):
    data = suites["stump_tracks"].to_dict()
    assert json.loads(json.dumps(data))["students"]["spider"] == {"env": {"body": "spider"}}


def test_challenge_bounds_are_the_envs_declared_ones(env):
    expected = {
        "default": ((0.0, 0.0), (3.0, 6.0)),
        "unfeasible": ((0.0, 0.0), (9.0, 6.0)),
        "trivial": ((-3.0, 0.0), (3.0, 6.0)),
        "rugged": ((0.0, 0.0), (3.0, 6.0)),
    }
    declared = {
        "default": env.task_space,
        "unfeasible": env.unfeasible_bounds,
        "trivial": env.trivial_bounds,
        "rugged": env.task_space,
    }
    for challenge, (low, high) in expected.items():
        bounds = challenge_bounds(env, challenge)
        assert tuple(bounds.low) == low == tuple(declared[challenge].low)
        assert tuple(bounds.high) == high == tuple(declared[challenge].high)
        data = make_challenge(env, ChallengeSpec(challenge), reset_every=1)
        np.testing.assert_allclose(data.low, low)
        np.testing.assert_allclose(data.high, high)
    # The high expert's prior sits on the easy task (0, 6), in teacher coordinates.
    high = make_challenge(env, ChallengeSpec("default", "high"))
    np.testing.assert_allclose(high.prior_mean, [0.0, 1.0])


def test_the_test_set_is_the_10x10_grid_of_cell_centres(env):
    tasks = make_test_set(env.task_space, num_tasks=100, grid_per_dim=10)
    assert tasks.shape == (100, 2)
    np.testing.assert_allclose(np.unique(tasks[:, 0]), 0.15 + 0.3 * np.arange(10), atol=1e-6)
    np.testing.assert_allclose(np.unique(tasks[:, 1]), 0.3 + 0.6 * np.arange(10), atol=1e-6)
    assert len({tuple(t) for t in tasks.round(6)}) == 100


def test_learning_statistics_on_synthetic_curves():
    rng = np.random.default_rng(0)
    updates = 50
    ramp = np.linspace(-100.0, 50.0, updates)
    curve = ramp + rng.normal(0.0, 5.0, (4, updates))
    stats = learning_statistics(curve)
    assert stats["window"] == 5
    np.testing.assert_allclose(stats["first"], curve[:, :5].mean(1))
    np.testing.assert_allclose(stats["last"], curve[:, -5:].mean(1))
    diff = curve[:, -5:].mean(1) - curve[:, :5].mean(1)
    assert stats["diff_mean"] == pytest.approx(diff.mean())
    assert stats["diff_se"] == pytest.approx(diff.std(ddof=1) / 2.0)
    assert stats["improved"]

    flat = rng.normal(0.0, 5.0, (4, updates))
    assert not learning_statistics(flat)["improved"]
    assert not learning_statistics(-curve)["improved"]
    # One seed: no standard error, so no verdict.
    assert not learning_statistics(curve[:1])["improved"]

    # Episode weights: a window's mean is over its episodes; updates without any are skipped.
    weighted = np.array([[1.0, np.nan, 3.0, 0.0, 10.0, 20.0]])
    episodes = np.array([[1, 0, 3, 0, 1, 1]])
    stats = learning_statistics(weighted, episodes, fraction=0.5)
    assert stats["window"] == 3
    assert stats["first"][0] == pytest.approx((1.0 * 1 + 3.0 * 3) / 4)
    assert stats["last"][0] == pytest.approx(15.0)

    # A window without any ended episode widens to the nearest update that has one.
    sparse = np.full((1, 10), np.nan)
    sparse[0, [2, 3, 5]] = [5.0, 6.0, 7.0]
    stats = learning_statistics(sparse)
    assert stats["first_updates"] == [3] and stats["last_updates"] == [5]
    assert stats["first"] == [5.0] and stats["last"] == [7.0]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The script end to end: two updates of 2 seeds x 4 envs, 20-step episodes."""
    out = tmp_path_factory.mktemp("stump_tracks_ppo")
    code = stump_tracks_ppo.main(
        [
            "--config",
            str(CONFIGS / "stump_tracks_ppo_cpu.yaml"),
            "--seeds",
            "2",
            "--set",
            "env.max_episode_steps=20",
            "--set",
            "loop.num_envs=4",
            "--set",
            "loop.num_steps=8",
            "--set",
            "agent.hidden_sizes=[16]",
            "--set",
            "agent.num_minibatches=2",
            "--set",
            "agent.update_epochs=1",
            "--total-env-steps",
            "64",
            "--updates-per-call",
            "2",
            "--final-eval-episodes",
            "0",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    return out


@pytest.mark.slow  # the script end to end: a walker compile, 20-40 s on 2 cores
def test_the_script_writes_its_outputs(tiny_run):
    summary = json.loads((tiny_run / "summary.json").read_text())
    assert summary["updates"] == 2 and summary["env_steps_per_seed"] == 64
    assert len(summary["learning"]["first"]) == 2
    assert summary["protocol_projection"]["env_steps"] > 0
    for name in ("learning_curve.png", "agent_params.msgpack", "config.yaml", "provenance.json"):
        assert (tiny_run / name).exists(), name


@pytest.mark.slow  # the script end to end: a walker compile, 20-40 s on 2 cores
def test_load_policy_round_trips_the_saved_checkpoint(tiny_run):
    env, agent, state = load_agent(tiny_run)
    # The best seed's saved state comes back, leaf for leaf; the normaliser is the trained one.
    best = json.loads((tiny_run / "summary.json").read_text())["best_seed_index"]
    raw = serialization.msgpack_restore((tiny_run / "agent_params.msgpack").read_bytes())
    saved = jax.tree.leaves(raw["params"])
    assert len(saved) == len(jax.tree.leaves(state.params))
    for a, b in zip(saved, jax.tree.leaves(state.params)):
        np.testing.assert_array_equal(a[best], b)
    np.testing.assert_array_equal(raw["obs_norm"]["mean"][best], state.obs_norm.mean)
    other_seed = load_agent(tiny_run, 1 - best)[2]
    np.testing.assert_array_equal(raw["obs_norm"]["mean"][1 - best], other_seed.obs_norm.mean)
    assert float(state.obs_norm.count) > 1.0
    policy = load_policy(tiny_run)
    # Observation-shaped inputs (an env reset would cost a jax2d compile in this test).
    batch = jax.random.normal(jax.random.PRNGKey(1), (2, env.obs_size))
    obs = batch[0]
    action = jax.jit(policy)(batch, jax.random.PRNGKey(2))
    assert action.shape == (2, env.action_space().shape[0])
    mean, _, _ = agent.act(state, batch, agent.initial_carry(2), jax.random.PRNGKey(3), True)
    np.testing.assert_allclose(action, jnp.clip(mean, -1.0, 1.0), rtol=1e-5, atol=1e-6)
    # Deterministic, and a single observation gives a single action.
    np.testing.assert_allclose(policy(obs, jax.random.PRNGKey(4)), action[0], atol=1e-6)
    # The mean depends on the normaliser: a fresh one gives another action.
    fresh = state.replace(
        obs_norm=agent.init(
            jax.random.PRNGKey(0), env.observation_space(), env.action_space()
        ).obs_norm
    )
    other, _, _ = agent.act(fresh, batch, agent.initial_carry(2), jax.random.PRNGKey(3), True)
    assert not np.allclose(other, mean)
