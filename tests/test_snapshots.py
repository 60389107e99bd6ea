"""acl.run.snapshots reads a run's teacher snapshots and acl.benchmark.figures draws them by
shape; the notebook notebooks/teacher_snapshots.ipynb renders a real run's (a committed
one, stored with its outputs, and a fresh ADR run) without writing into it."""

from __future__ import annotations

from pathlib import Path

import nbformat
import numpy as np
import pytest

from acl.benchmark.figures import plot_teacher_snapshots
from acl.run.results import write_npz
from acl.run.snapshots import load_teacher_snapshots, task_names
from tests.notebooks import count_images, execute, stored_parameters_cell, streams

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "teacher_snapshots.ipynb"


def fake_run(path: Path, evals: int = 4, seeds: int = 2) -> Path:
    (path / "teacher").mkdir(parents=True)
    for e in range(evals):
        write_npz(
            path / "teacher" / f"eval_{e:04d}.npz",
            {
                "count": np.full((seeds,), e),
                "bounds": np.full((seeds, 2, 2), float(e)),
                "samples": np.random.default_rng(e).random((seeds, 32, 2)),
                "covariances": np.zeros((seeds, 5, 2, 2)),
            },
        )
    (path / "tasks.csv").write_text("chunk,seed,distance,bearing\n0,0,0.5,0.1\n")
    return path


def test_snapshots_stack_over_evaluations_in_order(tmp_path):
    snaps = load_teacher_snapshots(fake_run(tmp_path))
    assert snaps["count"].shape == (4, 2)
    np.testing.assert_array_equal(snaps["count"][:, 0], [0, 1, 2, 3])
    assert snaps["samples"].shape == (4, 2, 32, 2)
    assert task_names(tmp_path) == ("distance", "bearing")
    with pytest.raises(FileNotFoundError, match="no teacher snapshots"):
        load_teacher_snapshots(tmp_path / "elsewhere")


def test_each_array_is_drawn_by_its_shape(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    snaps = load_teacher_snapshots(fake_run(tmp_path))
    fig = plot_teacher_snapshots(snaps, task_names=("distance", "bearing"))
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    assert set(panels) == {"count", "bounds", "samples"}
    assert len(panels["count"].lines) == 1 and len(panels["bounds"].lines) == 4
    assert len(panels["samples"].collections) == 3  # first, middle, last evaluation
    assert panels["samples"].get_xlabel() == "distance"
    assert "not drawn: covariances" in fig._suptitle.get_text()
    # Without the task dimension a [32, 2] array is no point cloud, and too big for lines.
    bare = plot_teacher_snapshots(snaps)
    assert "samples" in bare._suptitle.get_text()


COMMITTED_RUN = ROOT / "experiments" / "results" / "point_reach_sfl" / "sfl"


def test_notebook_is_stored_with_the_outputs_of_a_committed_run():
    params = stored_parameters_cell(NOTEBOOK)
    assert "RUN_DIR = " in params.source and "SEED = " in params.source
    assert '"experiments/results/point_reach_sfl/sfl")' in params.source
    shown = streams(nbformat.read(NOTEBOOK, as_version=4))
    assert "run: experiments/results/point_reach_sfl/sfl\nteacher: sfl" in shown


@pytest.mark.slow  # a kernel and matplotlib: about 20 s
def test_notebook_renders_the_committed_run(monkeypatch):
    monkeypatch.delenv("ACL_RUN_DIR", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = execute(NOTEBOOK, ROOT / "notebooks", timeout=180, reads=COMMITTED_RUN)
    assert "teacher: sfl" in streams(nb) and "levels " in streams(nb)
    assert count_images(nb) == 1


@pytest.mark.slow  # a short ADR run, then the notebook: about 40 s
def test_notebook_renders_an_adr_run(tmp_path, monkeypatch):
    from tests.conftest import run_tiny_with_teacher

    out, _ = run_tiny_with_teacher(tmp_path, {"name": "adr", "queue_len": 2})
    monkeypatch.setenv("ACL_RUN_DIR", str(out))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = execute(NOTEBOOK, ROOT, timeout=180, reads=out)
    printed = streams(nb)
    assert "teacher: adr" in printed and "box_high" in printed
    assert count_images(nb) == 1
