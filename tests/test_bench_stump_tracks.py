"""experiments/bench_stump_tracks.py: the table and JSON it writes (no timed assertions).

The fast test runs the whole script on a stand-in env (Pendulum, which compiles in
seconds); Stump Tracks itself takes about a minute to compile on 2 CPU cores, so the run
on the real env is marked slow.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from envs import make_env
from experiments.bench import stump_tracks as bench

# Box2D's SWIG types warn on import (Python 3.11+); nothing of ours
pytestmark = pytest.mark.filterwarnings("ignore:builtin type:DeprecationWarning")


def _check_document(path, num_envs: list[int], steps: int, repeats: int) -> dict:
    doc = json.loads(path.read_text())
    assert doc["benchmark"] == "bench_stump_tracks"
    assert [r["num_envs"] for r in doc["results"]] == num_envs
    assert len(doc["table"]) == len(num_envs)
    for result, row in zip(doc["results"], doc["table"], strict=True):
        assert result["steps_per_run"] == steps
        assert len(result["runs"]) == len(result["box2d_runs"]) == repeats
        ours, theirs = result["steps_per_second"], result["box2d_steps_per_second"]
        for stats in (ours, theirs):
            assert 0 < stats["min"] <= stats["median"] <= stats["max"]
        assert result["compile_seconds"] > 0
        assert result["ratio"] == pytest.approx(ours["median"] / theirs["median"])
        assert all(r["steps"] > 0 and r["seconds"] > 0 for r in result["box2d_runs"])
        assert row["num_envs"] == f"{result['num_envs']:,}"
        assert row["ratio"] == f"{result['ratio']:.2f}"
    provenance = doc["provenance"]
    assert provenance["argv"][:2] == ["acl", "bench-stump-tracks"]
    assert provenance["extra_versions"]["gymnasium"]
    assert provenance["versions"]["jax"]
    assert doc["machine"]["cpu_count"] >= 1
    assert doc["box2d"]["hardcore"] is True
    return doc


@pytest.mark.slow
def test_bench_writes_rows_and_ratios(tmp_path, capsys):
    out = tmp_path / "bench.json"
    # Box2D runs 0.05 s per repeat: the checks need only steps and seconds above 0.
    argv = ["--quick", "--num-envs", "1", "3", "--box2d-seconds", "0.05", "--out", str(out)]
    assert bench.main(argv, make_env=lambda args: make_env("pendulum")) == 0
    doc = _check_document(out, [1, 3], steps=10, repeats=2)
    assert doc["env"]["name"] == "pendulum"
    assert doc["settings"]["quick"] is True
    printed = capsys.readouterr().out
    assert "| num_envs |" in printed and "Box2D steps/s" in printed
    if doc["machine"]["device"].startswith("cpu"):
        assert any("no GPU" in note for note in doc["notes"])


def test_spread_tasks_and_auto_steps():
    low, high = np.array([0.0, 0.0]), np.array([3.0, 6.0])
    tasks = bench.spread_tasks(low, high, 256)
    assert tasks.shape == (256, 2)
    assert np.all(tasks >= low) and np.all(tasks <= high)
    np.testing.assert_allclose(tasks[0], (low + high) / 2)
    # spread: every quarter of each axis gets about a quarter of the tasks
    for d in range(2):
        counts = np.histogram(tasks[:, d], bins=4, range=(low[d], high[d]))[0]
        assert counts.min() >= 60
    assert bench.auto_steps(1, 65_536) == bench.MAX_STEPS
    assert bench.auto_steps(64, 65_536) == 1024
    assert bench.auto_steps(65_536, 65_536) == bench.MIN_STEPS


@pytest.mark.slow
def test_bench_on_stump_tracks(tmp_path):
    out = tmp_path / "bench.json"
    argv = ["--quick", "--num-envs", "2", "--box2d-seconds", "0.2", "--out", str(out)]
    assert bench.main(argv) == 0
    doc = _check_document(out, [2], steps=10, repeats=2)
    assert doc["env"]["name"] == "stump_tracks" and doc["env"]["body"] == "classic_bipedal"
