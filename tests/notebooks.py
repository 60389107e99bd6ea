"""Shared checks for the notebooks the tests execute."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

MAX_NOTEBOOK_BYTES = 500_000
"""A saved notebook's size limit: its figures are PNGs at 60 dpi, small enough for GitHub."""

MACHINE_PATHS = ("/work/", "/tmp/", "/home/", "/root/", "/Users/")


def stored_parameters_cell(path: Path):
    """Assert the notebook is stored with the outputs of one run top to bottom (every code
    cell executed in order, no error, no machine path, the file under
    `MAX_NOTEBOOK_BYTES`) and return its `parameters` cell."""
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES, f"{path.name}: {path.stat().st_size} bytes"
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1)), path.name
    for cell in code:
        for output in cell.outputs:
            assert output.output_type != "error", cell.source[:60]
            shown = nbformat.writes(nbformat.v4.new_notebook(cells=[cell]))
            assert not any(prefix in shown for prefix in MACHINE_PATHS), cell.source[:60]
    params = nb.cells[1]
    assert "parameters" in params.metadata.get("tags", [])
    return params


def files_under(folder: Path) -> dict[Path, int]:
    """Every file and folder under `folder` with its modification time, to compare after
    a notebook has read it."""
    return {path: path.stat().st_mtime_ns for path in (folder, *folder.rglob("*"))}


def execute(
    path: Path,
    cwd: Path,
    timeout: int,
    parameters: dict | None = None,
    reads: Path | None = None,
):
    """Run the notebook in a kernel whose working directory is `cwd`; fail on any error.
    `parameters` overrides values of its parameters cell, in a cell run right after it
    (as papermill injects them). `reads`: the results directory it reads, which must come
    out unchanged (no file written, changed or removed).

    Returns the executed notebook."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    if parameters:
        cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(cells) == 1, f"{path.name} needs one cell tagged parameters"
        for name in parameters:
            assert f"{name} = " in cells[0].source, f"{name} is not a parameter of {path.name}"
        source = "\n".join(f"{name} = {value!r}" for name, value in parameters.items())
        nb.cells.insert(nb.cells.index(cells[0]) + 1, nbformat.v4.new_code_cell(source))
    before = files_under(reads) if reads is not None else None
    client = NotebookClient(
        nb,
        timeout=timeout,
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
    if reads is not None:
        assert files_under(reads) == before, f"the notebook wrote into {reads}"
    return nb


def streams(nb) -> str:
    """Everything the executed notebook printed."""
    return "\n".join(
        output.get("text", "")
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream"
    )


def count_images(nb) -> int:
    """How many PNG images the executed notebook displayed."""
    return sum(
        "image/png" in output.get("data", {})
        for cell in nb.cells
        for output in cell.get("outputs", [])
    )


def save_with_outputs(path: Path, timeout: int = 1800) -> int:
    """Run the notebook from the repository root and store it with its outputs (no timing
    metadata); returns the file's size in bytes. Run as `python -m tests.notebooks
    notebooks/NAME.ipynb...` after changing a notebook."""
    from nbclient import NotebookClient

    root = Path(__file__).resolve().parents[1]
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(root)}},
    )
    client.execute()
    nbformat.write(nb, path)
    return path.stat().st_size


if __name__ == "__main__":
    import os
    import sys

    for variable in [v for v in os.environ if v.startswith("ACL_")]:
        del os.environ[variable]  # they override the parameters cells: store the defaults
    os.environ["MPLBACKEND"] = "Agg"
    for name in sys.argv[1:]:
        print(f"{name}: {save_with_outputs(Path(name)):,} bytes", flush=True)
