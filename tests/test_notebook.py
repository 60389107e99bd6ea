"""notebooks/benchmark_results.ipynb is stored with its outputs on the committed quick suite,
and runs top to bottom on the tiny fixture and on that suite (its own assertion cell checks
that its tables hold every run and every (teacher, setting) of the data) without writing
into either."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pandas as pd
import pytest

from tests.notebooks import count_images, execute, stored_parameters_cell, streams

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "benchmark_results.ipynb"
FIXTURE = ROOT / "tests" / "fixtures" / "benchmark_tiny"
QUICK = ROOT / "experiments" / "results" / "benchmark_quick"
TEACHERS = ("random", "alp_gmm", "riac")


def _texts(nb) -> str:
    """Every text the executed notebook shows: streams, reprs, Markdown and HTML."""
    parts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                parts.append(output["text"])
            for mime in ("text/plain", "text/markdown", "text/html"):
                if mime in output.get("data", {}):
                    parts.append(output["data"][mime])
    return "\n".join(parts)


def test_notebook_is_stored_with_the_outputs_of_the_committed_quick_suite():
    params = stored_parameters_cell(NOTEBOOK)
    for name in ("RESULTS_DIR", "TEACHERS", "CHALLENGES", "EXPERTS", "SEEDS"):
        assert f"{name} = " in params.source
    assert '"experiments/results/benchmark_quick")' in params.source
    shown = streams(nbformat.read(NOTEBOOK, as_version=4))
    assert "results: experiments/results/benchmark_quick\n" in shown
    assert f"ok: {_runs(QUICK)} runs" in shown


@pytest.mark.parametrize(
    "cwd, results_dir",
    [
        (ROOT, str(FIXTURE)),
        # from notebooks/, a relative RESULTS_DIR is found from the repository root
        pytest.param(ROOT / "notebooks", "tests/fixtures/benchmark_tiny", marks=pytest.mark.slow),
    ],
    ids=["repo-root", "notebooks-dir"],
)
def test_notebook_executes_on_fixture(monkeypatch, cwd, results_dir):
    monkeypatch.setenv("ACL_RESULTS_DIR", results_dir)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # Resamples only narrow the CIs, which nothing here reads; the default 2000 take ~3 s.
    nb = execute(NOTEBOOK, cwd, timeout=120, parameters={"BOOTSTRAP_REPS": 200}, reads=FIXTURE)
    shown = _texts(nb)
    for teacher in TEACHERS:
        assert teacher in shown
    assert "55.0 ± 2.9*" in shown  # the summary table, rendered as Markdown
    assert "ok: 27 runs, 9 (teacher, setting) cells" in shown  # the assertion cell ran
    assert '"suite": "tiny"' in shown  # provenance
    assert count_images(nb) == 4  # IQM, profiles, radar, curves


def _runs(results: Path) -> int:
    """The (teacher, setting, seed) runs of a results directory."""
    rows = pd.read_csv(results / "results.csv")
    return len(rows.groupby(["teacher", "challenge", "expert", "seed"]))


@pytest.mark.slow  # eight teachers x ten settings x eight seeds: about a minute
def test_notebook_executes_on_the_committed_quick_suite(monkeypatch):
    monkeypatch.delenv("ACL_RESULTS_DIR", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = execute(NOTEBOOK, ROOT, timeout=600, parameters={"BOOTSTRAP_REPS": 200}, reads=QUICK)
    assert f"ok: {_runs(QUICK)} runs, " in streams(nb)
    assert count_images(nb) == 4
