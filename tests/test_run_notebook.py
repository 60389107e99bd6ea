"""notebooks/run.ipynb: one run directory of `acl run`, stored with its outputs on the
committed `make run` ALP-GMM run, and run top to bottom on committed runs without writing
into them."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tests.notebooks import count_images, execute, stored_parameters_cell, streams

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "run.ipynb"
RESULTS = ROOT / "experiments" / "results"


def test_notebook_is_stored_with_the_outputs_of_the_make_run_run():
    params = stored_parameters_cell(NOTEBOOK)
    assert 'RUN_DIR = "experiments/results/make_run/alp_gmm"' in params.source
    shown = streams(nbformat.read(NOTEBOOK, as_version=4))
    assert "run: experiments/results/make_run/alp_gmm\n" in shown
    assert "teacher alp_gmm" in shown and "ok: 16 seeds" in shown


@pytest.mark.slow  # a kernel and matplotlib: about 20 s each
@pytest.mark.parametrize(
    "cwd, run_dir, teacher",
    [
        (ROOT, "experiments/results/make_run/alp_gmm", "alp_gmm"),
        (ROOT / "notebooks", "experiments/results/point_reach_sfl/sfl", "sfl"),
    ],
    ids=["make-run", "sfl-from-notebooks-dir"],
)
def test_notebook_shows_a_committed_run_and_writes_nothing_into_it(
    monkeypatch, cwd, run_dir, teacher
):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = execute(NOTEBOOK, cwd, timeout=300, parameters={"RUN_DIR": run_dir}, reads=ROOT / run_dir)
    shown = streams(nb)
    assert f"run: {run_dir}\n" in shown and f"teacher {teacher}," in shown
    assert "ok: 16 seeds, 15 evaluations" in shown
    assert count_images(nb) == 3  # curves, sampled tasks, snapshots


@pytest.mark.slow  # a kernel: about 10 s
def test_notebook_refuses_a_folder_without_a_run(tmp_path):
    with pytest.raises(pytest.fail.Exception, match="has no metrics.csv"):
        execute(NOTEBOOK, ROOT, timeout=120, parameters={"RUN_DIR": str(tmp_path)}, reads=tmp_path)
