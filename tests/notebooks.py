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


def execute(path: Path, cwd: Path, timeout: int):
    """Run the notebook in a kernel whose working directory is `cwd`; fail on any error.

    Returns the executed notebook."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
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
