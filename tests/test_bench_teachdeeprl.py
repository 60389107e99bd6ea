"""`acl bench-teachdeeprl`'s own logic, without teachDeepRL: one seed's process and what
is made of its result, on a stand-in driver that prints what the real one prints."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from acl.core.errors import ConfigError
from experiments.bench import teachdeeprl as bench

FAKE_DRIVER = """
import json, sys
source, dims, distractors, cubes, entry, episodes, every, seed = sys.argv[1:]
if entry == "test_riac" and seed == "2":
    sys.exit("the reference raised")
scores = [float(seed), 10.0 * int(dims)]
print("RESULT " + json.dumps({"seconds": 1.5 + int(seed), "cpu_seconds": 1.0, "scores": scores}))
"""


def test_a_seed_runs_in_its_own_process_and_a_failure_is_kept_as_its_error(tmp_path):
    driver = tmp_path / "driver.py"
    driver.write_text(FAKE_DRIVER)

    def seed(teacher, number):
        return bench.run_seed(
            Path(sys.executable), driver, tmp_path, "d3", teacher, number, 100, 10, 30
        )

    ok = seed("riac", 1)
    assert ok["seconds"] == 2.5 and ok["scores"] == [1.0, 30.0] and ok["process_seconds"] > 0
    failed = seed("riac", 2)
    assert failed["error"].startswith("exit 1") and "the reference raised" in failed["error"]

    summary = bench.summarise([ok, seed("riac", 0), failed])
    assert summary["seeds_done"] == 2 and summary["seeds_failed"] == 1
    assert summary["seconds_per_seed"] == 2.0
    assert (summary["seconds_min"], summary["seconds_max"]) == (1.5, 2.5)
    assert summary["final_mean"] == 30.0


def test_the_speed_up_is_the_fastest_reference_seed_over_ours(tmp_path):
    ours = tmp_path / "results.json"
    ours.write_text(
        json.dumps(
            {
                "results": [
                    {"setting": "d3", "teacher": "riac", "options": {}, "seconds_per_seed": 0.25},
                    # An ablation is not the teacher's default: left out.
                    {
                        "setting": "d3",
                        "teacher": "riac",
                        "options": {"min_split_score": 0.1},
                        "seconds_per_seed": 9.0,
                    },
                ]
            }
        )
    )
    seconds = bench.ours_seconds(ours)
    assert seconds == {("d3", "riac"): 0.25}
    summary = {
        "setting": "d3",
        "teacher": "riac",
        "seeds_done": 3,
        "seeds_failed": 0,
        "seconds_per_seed": 30.0,
        "seconds_min": 25.0,
        "seconds_max": 35.0,
        "final_mean": 4.0,
    }
    text = bench.table([summary], seconds)
    assert "30.0 (25.0-35.0)" in text and "0.250" in text and "100x" in text
    with pytest.raises(ConfigError, match="--ours"):
        bench.ours_seconds(tmp_path / "missing.json")
