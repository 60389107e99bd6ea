"""The teacher-overhead benchmark end to end on a tiny budget."""

from __future__ import annotations

import json

import pytest
import yaml

from acl.config import load_config
from experiments.bench import teachers as bench_teachers
from tests.conftest import TINY


@pytest.mark.slow
def test_overhead_per_round_and_median(tmp_path):
    # TINY with Fixed: each teacher's training compiles apart (~7 s on 2 cores; ALP-GMM's
    # twice that), and Random's is the very program test_bench_maze's warm-up test times,
    # so one of the two reads it from the compile cache.
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY, "teacher": {"name": "alp_gmm", "fit_every": 23}}))
    out = tmp_path / "bench.json"
    code = bench_teachers.main(
        ["--config", str(config), "--teachers", "fixed", "--iterations", "2", "--rounds", "3"]
        + ["--out", str(out)]
    )
    assert code == 0
    document = json.loads(out.read_text())
    results = document["results"]
    assert list(results) == ["random", "fixed"]  # Random first: the reference
    assert document["rounds"] == 3
    for r in results.values():
        assert len(r["seconds"]) == 3 and all(s > 0 for s in r["seconds"])
        ratios = [a / b for a, b in zip(results["random"]["seconds"], r["seconds"])]
        assert sorted(r["overhead_per_round"]) == sorted(1 - x for x in ratios)
        assert r["overhead"] == sorted(r["overhead_per_round"])[1]  # the median of 3
    assert results["random"]["overhead"] == 0
    assert document["table"][1]["teacher"] == "fixed"
    # The config's teacher keys reach the teachers that take them, and only those.
    assert document["config"]["teacher"]["fit_every"] == 23
    base = load_config(config)
    assert bench_teachers.with_teacher(base, "alp_gmm").teacher.kwargs == {"fit_every": 23}
    assert bench_teachers.with_teacher(base, "fixed").teacher.kwargs == {}


@pytest.mark.slow  # two teachers compiled on a challenged config: about a minute
def test_a_challenged_config_with_overrides(tmp_path):
    """The make run config trains under a challenge; `--set` reaches the loop. On one
    device: this process has one, and the config's two-device layout is tested by
    tests/test_overlap_teacher.py."""
    out = tmp_path / "bench.json"
    config = "experiments/configs/point_reach_unfeasible_alp_gmm.yaml"
    code = bench_teachers.main(
        ["--config", config, "--seeds", "1", "--iterations", "2", "--rounds", "1"]
        + ["--set", "loop.task_pool=64", "--set", "loop.overlap_teacher=false", "--out", str(out)]
    )
    assert code == 0
    document = json.loads(out.read_text())
    assert document["config"]["challenge"]["name"] == "unfeasible"
    assert document["config"]["loop"]["task_pool"] == 64
    assert not document["results"]["alp_gmm"]["overlap_teacher"]


@pytest.mark.slow  # two teachers compiled on a challenged tiny suite: about 30 s
def test_a_suite_gives_each_labelled_teacher_its_own_keys(tmp_path):
    from tests.test_benchmark import tiny_suite

    suite = tmp_path / "suite.yaml"
    teachers = {"random": {}, "slow_schedule": {"name": "schedule", "ramp_iterations": 50}}
    suite.write_text(yaml.safe_dump(tiny_suite(teachers=teachers)))
    out = tmp_path / "bench.json"
    args = ["--suite", str(suite), "--setting", "rugged", "--iterations", "2", "--rounds", "1"]
    assert bench_teachers.main([*args, "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    results = document["results"]
    assert list(results) == ["random", "slow_schedule"]
    assert results["slow_schedule"]["config"] == {"ramp_iterations": 50}
    assert results["random"]["time_ratio"] == 1.0
    assert document["config"]["challenge"]["name"] == "rugged"
    with pytest.raises(SystemExit):
        bench_teachers.main(["--suite", str(suite), "--teachers", "alp_gmm"])
