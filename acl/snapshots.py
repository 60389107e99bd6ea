"""A teacher's internals over a run: the snapshots a run directory records, read and drawn.

    snaps = load_teacher_snapshots("runs/my_run")   # {name: array [E, S, ...]}
    fig = plot_teacher_snapshots(snaps, task_names=task_names("runs/my_run"), seed=0)

Every teacher's `snapshot(state)` is written at each evaluation as
`teacher/eval_<chunk>.npz`, arrays with a leading seed axis. Here they are stacked over
evaluations (E) and drawn by shape, whatever the teacher, for one seed:

- a scalar per evaluation (a count, a loss, alpha): a line over evaluations;
- up to `max_lines` numbers per evaluation (ADR's box sides [D], SPDL's mean [D]):
  one line each;
- points in the task space, [K, D] with D the task dimension and K above `max_lines`
  (GoalGAN's or Setter-Solver's samples, a GMM's means, SVGG's particles): a scatter of
  the first two task dimensions at the first, middle and last evaluation.

Anything else (a GMM's covariances, a level buffer) is listed in the figure's title as
not drawn; read it from the dict.
"""

from __future__ import annotations

import csv
import math
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


def _kind(per_eval_shape: tuple[int, ...], task_dim: int | None, max_lines: int) -> str:
    size = math.prod(per_eval_shape)
    if len(per_eval_shape) == 2 and per_eval_shape[1] == task_dim and per_eval_shape[0] > max_lines:
        return "points"
    if 1 <= size <= max_lines:
        return "lines"
    return "skip"


def plot_teacher_snapshots(
    snapshots: dict[str, np.ndarray],
    task_names: tuple[str, ...] | None = None,
    seed: int = 0,
    max_lines: int = 8,
    title: str = "",
):
    """One panel per drawable snapshot array of seed index `seed` (see the module
    docstring); returns the matplotlib figure. `task_names` (e.g. `task_names(run_dir)`)
    gives the task dimension that marks point clouds and labels their axes."""
    import matplotlib.pyplot as plt

    task_dim = len(task_names) if task_names else None
    kinds = {}
    for name, value in snapshots.items():
        if value.ndim < 2 or not np.issubdtype(value.dtype, np.number):
            kinds[name] = "skip"
        else:
            kinds[name] = _kind(value.shape[2:], task_dim, max_lines)
    drawn = [name for name, kind in kinds.items() if kind != "skip"]
    skipped = [name for name, kind in kinds.items() if kind == "skip"]
    cols = min(3, max(1, len(drawn)))
    rows = max(1, math.ceil(len(drawn) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(drawn) :]:
        ax.axis("off")
    for ax, name in zip(axes.flat, drawn, strict=False):
        value = snapshots[name][:, seed].astype(float)
        evals = np.arange(len(value))
        if kinds[name] == "lines":
            flat = value.reshape(len(value), -1)
            for j in range(flat.shape[1]):
                label = str(np.unravel_index(j, value.shape[1:])) if flat.shape[1] > 1 else None
                ax.plot(evals, flat[:, j], marker=".", label=label)
            if flat.shape[1] > 1:
                ax.legend(fontsize=6, ncol=2)
            ax.set_xlabel("evaluation")
        else:
            for e, alpha in zip(sorted({0, len(value) // 2, len(value) - 1}), (0.3, 0.6, 1.0)):
                points = value[e]
                points = points[np.isfinite(points).all(axis=1)]
                y = points[:, 1] if points.shape[1] > 1 else np.zeros(len(points))
                ax.scatter(points[:, 0], y, s=6, alpha=alpha, label=f"eval {e}")
            ax.legend(fontsize=6)
            ax.set_xlabel(task_names[0])
            if task_dim and task_dim > 1:
                ax.set_ylabel(task_names[1])
        ax.set_title(name, fontsize=9)
    heading = title or "teacher snapshots"
    if skipped:
        heading += f" (not drawn: {', '.join(skipped)})"
    fig.suptitle(heading, fontsize=10)
    fig.tight_layout()
    return fig
