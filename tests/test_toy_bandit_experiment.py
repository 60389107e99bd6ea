"""experiments/toy_bandit.py: per-teacher option overrides (ablations) and their errors."""

from __future__ import annotations

import json

import pytest

from experiments.papers import toy_bandit


def test_teacher_options_are_scoped_by_teacher():
    options = toy_bandit.teacher_options(
        ["riac.min_split_score=0.05", "alp_gmm.criterion=bic"], ["riac", "alp_gmm"]
    )
    assert options == {"riac": {"min_split_score": 0.05}, "alp_gmm": {"criterion": "bic"}}


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["covar_gmm.k_max=4"], "TEACHER in --teachers"),  # not among the teachers run
        (["min_split_score=0.05"], "TEACHER.OPTION=VALUE"),  # no teacher named
        (["riac.no_such_option=1"], "no_such_option"),
        (["riac.min_split_score=-1"], "min_split_score must be >= 0"),
    ],
)
def test_bad_options_fail_before_running(tmp_path, capsys, overrides, message):
    argv = ["--teachers", "riac", "--out", str(tmp_path)]
    for item in overrides:
        argv += ["--set", item]
    assert toy_bandit.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
    assert not (tmp_path / "results.json").exists()


@pytest.mark.slow
def test_an_ablation_run_records_and_labels_its_options(tmp_path):
    argv = ["--settings", "d2", "--teachers", "random", "riac", "--seeds", "2"]
    argv += ["--episodes", "300", "--score-every", "100", "--out", str(tmp_path)]
    argv += ["--set", "riac.min_split_score=0.05"]
    assert toy_bandit.main(argv) == 0
    results = json.loads((tmp_path / "results.json").read_text())["results"]
    assert [r["options"] for r in results] == [{}, {"min_split_score": 0.05}]
    table = (tmp_path / "table.md").read_text()
    assert "| d2 | riac (min_split_score=0.05) |" in table
    # The reference column is for the default options only: Random's 4.0, not RIAC's 52.0.
    assert "| 4.0 |" in table and "52.0" not in table
