"""notebooks/goal_curricula.ipynb is stored with its outputs on the committed confirmatory
runs, and runs top to bottom on tiny runs of the five comparisons (tests/fixtures/
goal_curricula, written by the scripts themselves at a few thousand steps), drawing every
curve and teacher snapshot without writing into them."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from tests.notebooks import count_images, execute, stored_parameters_cell, streams

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "goal_curricula.ipynb"
FIXTURE = ROOT / "tests" / "fixtures" / "goal_curricula"
COMPARISONS = ("svgg", "recovery", "reverse", "reverse_point", "jsrl")


def test_notebook_is_stored_with_the_outputs_of_the_committed_runs():
    params = stored_parameters_cell(NOTEBOOK)
    assert '"experiments/results/goal_curricula")' in params.source
    shown = streams(nbformat.read(NOTEBOOK, as_version=4))
    assert f"ok: {len(COMPARISONS)} comparisons" in shown


def test_fixture_holds_a_snapshot_per_evaluation():
    for name in COMPARISONS:
        run = json.loads((FIXTURE / name / "results.json").read_text())
        for result in run["results"]:
            evaluations = len(result["env_steps"])
            assert evaluations >= 3, (name, result["method"])
            if result["method"] == "svgg":
                assert len(result["particles"]) == evaluations
            if result["method"] == "reverse":
                assert len(result["good_starts"]) == evaluations


@pytest.mark.slow  # a kernel, matplotlib and five runs: about 30 s
def test_notebook_executes_on_fixture(monkeypatch):
    monkeypatch.setenv("ACL_RESULTS_DIR", str(FIXTURE))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = execute(NOTEBOOK, ROOT / "notebooks", timeout=180, reads=FIXTURE)
    shown = streams(nb)
    assert "ok: 5 comparisons, 13 methods" in shown
    pngs = count_images(nb)
    # svgg and recovery: curves + particles each; reverse and reverse_point: curves +
    # good starts each; jsrl.
    assert pngs == 9
