"""experiments/tools/legacy_policy.py: the committed Stump Tracks policy (policy.msgpack, the
format before run directories) becomes a one-seed run directory whose params and
observation normalisation are the file's, read back by the usual loaders."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest
from flax import serialization

from experiments.papers.stump_tracks_ppo import load_agent
from experiments.tools import legacy_policy
from tests.notebooks import files_under

ROOT = Path(__file__).resolve().parents[1]
LEGACY = ROOT / "experiments" / "results" / "stump_tracks_ppo"


@pytest.mark.slow  # builds the walker env and PPO, and reads git for provenance: ~20 s
def test_the_committed_policy_becomes_a_run_directory_of_its_params(tmp_path):
    before = files_under(LEGACY)
    out = legacy_policy.convert(LEGACY, tmp_path / "converted")
    assert files_under(LEGACY) == before  # it reads the committed directory only
    env, agent, state = load_agent(out, seed_index=0)
    assert env.body.name == "classic_bipedal"
    saved = serialization.msgpack_restore((LEGACY / legacy_policy.LEGACY_FILE).read_bytes())
    restored = serialization.to_state_dict(state)
    for part in ("params", "obs_norm"):
        leaves = jax.tree.leaves(restored[part])
        assert leaves and len(leaves) == len(jax.tree.leaves(saved[part]))
        for got, expected in zip(leaves, jax.tree.leaves(saved[part]), strict=True):
            np.testing.assert_array_equal(got, expected)
    updates = json.loads((LEGACY / "summary.json").read_text())["updates"]
    assert int(state.update_count) == updates


def test_main_needs_the_legacy_and_the_output_directory(capsys):
    assert legacy_policy.main([]) == 2
    assert "python -m experiments.tools.legacy_policy" in capsys.readouterr().err
