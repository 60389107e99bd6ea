"""A run's teacher snapshots, read back: every teacher's `snapshot(state)` is written at
each evaluation as `RUN_DIR/teacher/eval_<chunk>.npz`, arrays with a leading seed axis.

    snaps = load_teacher_snapshots("runs/my_run")   # {name: array [E, S, ...]}
    fig = plot_teacher_snapshots(snaps, task_names=task_names("runs/my_run"), seed=0)

`plot_teacher_snapshots` (acl.benchmark.figures) draws them by shape, whatever the teacher.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

SNAPSHOT_FOLDER = "teacher"


def load_teacher_snapshots(run_dir: str | Path) -> dict[str, np.ndarray]:
    """The run's teacher snapshots stacked over evaluations: {name: [E, S, ...]}, in
    evaluation order. Names missing from some evaluation are left out."""
    files = sorted((Path(run_dir) / SNAPSHOT_FOLDER).glob("eval_*.npz"))
    if not files:
        raise FileNotFoundError(f"no teacher snapshots under {Path(run_dir) / SNAPSHOT_FOLDER}")
    loaded = []
    for file in files:
        with np.load(file) as npz:
            loaded.append({name: npz[name] for name in npz.files})
    common = set.intersection(*(set(snap) for snap in loaded))
    return {
        name: np.stack([snap[name] for snap in loaded])
        for name in loaded[0]
        if name in common and len({snap[name].shape for snap in loaded}) == 1
    }


def task_names(run_dir: str | Path) -> tuple[str, ...] | None:
    """The task dimensions' names, from the header of the run's tasks.csv (None without)."""
    file = Path(run_dir) / "tasks.csv"
    if not file.exists():
        return None
    with file.open(newline="") as f:
        header = next(csv.reader(f), None)
    return tuple(header[2:]) if header else None  # after "chunk" and "seed"
