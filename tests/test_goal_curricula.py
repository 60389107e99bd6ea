"""experiments.papers.goal_curricula (`acl goal-curricula`) hands each comparison its own
script's arguments."""

from __future__ import annotations

import importlib

import pytest

from experiments.cli import CONFIGS
from experiments.papers import goal_curricula


@pytest.fixture
def calls(monkeypatch):
    seen = []
    for module, _ in goal_curricula.COMPARISONS.values():
        mod = importlib.import_module(module)
        monkeypatch.setattr(mod, "main", lambda argv, m=module: seen.append((m, argv)) or 0)
    return seen


def test_one_comparison_gets_its_arguments_unchanged(calls):
    assert goal_curricula.main(["recovery", "--seeds", "2"]) == 0
    assert calls == [("experiments.papers.svgg", ["--recovery", "--seeds", "2"])]


def test_all_runs_every_comparison_into_its_own_folder(calls):
    assert goal_curricula.main(["all", "--out", "out", "--no-progress"]) == 0
    assert [argv[:2] for _, argv in calls] == [
        ["--out", "out/svgg"],
        ["--recovery", "--out"],
        ["--out", "out/reverse"],
        ["--config", str(CONFIGS / "reverse_point_maze.yaml")],
        ["--out", "out/jsrl"],
    ]
    assert calls[3][1][2:4] == ["--out", "out/reverse_point"]
    assert all(argv[-1] == "--no-progress" for _, argv in calls)


def test_unknown_comparison_is_an_argparse_error():
    with pytest.raises(SystemExit):
        goal_curricula.main(["nope"])
