"""`acl bench-overhead`'s rounds and ratios, on a stand-in for `acl run` (a real round is
two whole runs with a cold compile cache: minutes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.bench import overhead


def test_each_round_runs_the_baseline_then_each_config_and_the_ratios_are_per_round(tmp_path):
    calls = []
    # Round 2 is slow for every run alike (a load on the machine): its ratio is unchanged.
    seconds = {("random", 0): 10.0, ("alp_gmm", 0): 11.0, ("random", 1): 20.0, ("alp_gmm", 1): 22.0}
    seconds |= {("random", 2): 10.0, ("alp_gmm", 2): 13.0}

    def fake_run(config: Path, out: Path, overrides) -> dict:
        round_index = int(out.parent.name.removeprefix("round"))
        calls.append((config.stem, round_index, tuple(overrides)))
        wall = seconds[(config.stem, round_index)]
        return {"wall_seconds": wall, "summary": {"env_steps_per_second": 1000.0 / wall}}

    records = overhead.rounds(
        Path("random.yaml"),
        [Path("alp_gmm.yaml")],
        3,
        tmp_path,
        ["loop.num_envs=8"],
        run=fake_run,
        progress=False,
    )
    assert [c[:2] for c in calls] == [
        ("random", 0),
        ("alp_gmm", 0),
        ("random", 1),
        ("alp_gmm", 1),
        ("random", 2),
        ("alp_gmm", 2),
    ]
    assert all(c[2] == ("loop.num_envs=8",) for c in calls)

    summary = overhead.ratios(records, "random")
    assert summary["alp_gmm"]["wall_ratio_per_round"] == pytest.approx([1.1, 1.1, 1.3])
    assert summary["alp_gmm"]["median_wall_ratio"] == pytest.approx(1.1)
    assert summary["alp_gmm"]["median_throughput_ratio"] == pytest.approx(1 / 1.1)
    assert summary["random"]["median_wall_ratio"] == 1.0
    assert "1.100" in overhead.table(summary)


def test_bad_rounds_and_twin_config_names_are_one_line_errors(capsys):
    assert overhead.main(["--baseline", "cartpole_random", "--configs", "cartpole_random"]) == 2
    assert "distinct names" in capsys.readouterr().err
    assert overhead.main(["--baseline", "cartpole_random", "--configs", "x", "--rounds", "0"]) == 2
    assert "--rounds" in capsys.readouterr().err


def test_the_json_holds_the_rule_every_round_and_the_provenance(tmp_path, monkeypatch):
    def fake_rounds(baseline, configs, count, runs_dir, overrides, progress=True):
        run = {"wall_seconds": 10.0, "summary": {"env_steps_per_second": 100.0}}
        return [{"cartpole_random": run, "cartpole_unfeasible_alp_gmm": run}] * count

    monkeypatch.setattr(overhead, "rounds", fake_rounds)
    out = tmp_path / "overhead.json"
    args = ["--baseline", "cartpole_random", "--configs", "cartpole_unfeasible_alp_gmm"]
    assert overhead.main([*args, "--rounds", "2", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["rule"] == overhead.RULE and len(document["rounds"]) == 2
    assert document["summary"]["cartpole_unfeasible_alp_gmm"]["median_wall_ratio"] == 1.0
    assert document["configs"]["cartpole_random"] == "experiments/configs/cartpole_random.yaml"
    assert "git_commit" in document["provenance"] and document["machine"]["processor"]
