"""notebooks/benchmark_results.ipynb runs top to bottom on the tiny fixture (its own assertion
cell checks that its tables hold every run and every (teacher, setting) of the data)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "benchmark_results.ipynb"
FIXTURE = ROOT / "tests" / "fixtures" / "benchmark_tiny"
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


def test_notebook_is_stored_clean():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
    params = nb.cells[1]
    assert "parameters" in params.metadata.get("tags", [])
    for name in ("RESULTS_DIR", "TEACHERS", "CHALLENGES", "EXPERTS", "SEEDS"):
        assert f"{name} = " in params.source


@pytest.mark.parametrize(
    "cwd, results_dir",
    [
        (ROOT, str(FIXTURE)),
        # from notebooks/, a relative RESULTS_DIR is found from the repository root
        (ROOT / "notebooks", "tests/fixtures/benchmark_tiny"),
    ],
    ids=["repo-root", "notebooks-dir"],
)
def test_notebook_executes_on_fixture(monkeypatch, cwd, results_dir):
    monkeypatch.setenv("ACL_RESULTS_DIR", results_dir)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",  # ipykernel's native kernel: the interpreter running pytest
        resources={"metadata": {"path": str(cwd)}},  # the kernel's working directory
    )
    try:
        client.execute()
    except Exception as err:  # CellExecutionError carries the failing cell's traceback
        pytest.fail(f"notebook failed:\n{err}")
    errors = [
        output
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors
    shown = _texts(nb)
    for teacher in TEACHERS:
        assert teacher in shown
    assert "55.0 ± 2.9*" in shown  # the summary table, rendered as Markdown
    assert "ok: 27 runs, 9 (teacher, setting) cells" in shown  # the assertion cell ran
    assert '"suite": "tiny"' in shown  # provenance
    pngs = sum(
        "image/png" in output.get("data", {})
        for cell in nb.cells
        for output in cell.get("outputs", [])
    )
    assert pngs == 4  # IQM, profiles, radar, curves
