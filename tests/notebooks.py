"""Shared checks for the notebooks the tests execute."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest


def stored_parameters_cell(path: Path):
    """Assert the notebook is stored without outputs and return its `parameters` cell."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
    params = nb.cells[1]
    assert "parameters" in params.metadata.get("tags", [])
    return params


def execute(path: Path, cwd: Path, timeout: int, parameters: dict | None = None):
    """Run the notebook in a kernel whose working directory is `cwd`; fail on any error.
    `parameters` overrides values of its parameters cell, in a cell run right after it
    (as papermill injects them).

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
