"""experiments/profile_maze_student.py: the student's time split and the cpu student
beside the published one, on a tiny loop (--quick)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from acl.agents.recurrent_ppo import CPU_STUDENT
from experiments.bench import profile_maze_student

ROOT = Path(__file__).resolve().parents[1]


def test_the_cpu_student_changes_only_the_network():
    assert profile_maze_student.student_overrides("published") == []
    overrides = profile_maze_student.student_overrides("cpu")
    assert overrides == [f"agent.{k}={v}" for k, v in CPU_STUDENT.items()]
    network = {"conv_features", "conv_kernel_size", "direction_features", "lstm_size", "head_sizes"}
    assert set(CPU_STUDENT) <= network  # no PPO setting changes with the student
    with pytest.raises(SystemExit):
        profile_maze_student.parse_args(["--students", "gpu"])


@pytest.mark.slow
def test_quick_profile_writes_both_students_split_and_ratio(tmp_path):
    out = tmp_path / "profile.json"
    assert profile_maze_student.main(["--quick", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    published, cpu = document["table"]
    assert (published["student"], published["lstm"]) == ("published", 256)
    assert (cpu["student"], cpu["lstm"]) == ("cpu", 32)
    for row in (published, cpu):
        assert row["rollout %"] + row["update %"] == pytest.approx(100, abs=0.2)
        assert row["loop steps/s"] > 0 and row["backward ms"] > 0
    assert published["ratio"] == 1.0 and cpu["ratio"] > 1.0
    assert document["config"] == "maze_dr.yaml"


def test_the_gpu_script_parses():
    subprocess.run(["bash", "-n", str(ROOT / "experiments" / "gpu_ued_check.sh")], check=True)
