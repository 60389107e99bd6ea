"""Benchmark and run figures: rliable's IQM intervals and performance profiles, the
TeachMyAgent-style radar and the learning curves of a benchmark's results
(acl.benchmark.stats), and a run's teacher snapshots drawn by shape.

Teacher snapshots (`load_teacher_snapshots` of acl.run.snapshots, {name: [E, S, ...]}) are
drawn for one seed whatever the teacher:

- a scalar per evaluation (a count, a loss, alpha): a line over evaluations;
- up to `max_lines` numbers per evaluation (ADR's box sides [D], SPDL's mean [D]):
  one line each;
- points in the task space, [K, D] with D the task dimension and K above `max_lines`
  (GoalGAN's or Setter-Solver's samples, a GMM's means, SVGG's particles): a scatter of
  the first two task dimensions at the first, middle and last evaluation.

Anything else (a GMM's covariances, a level buffer) is listed in the figure's title as
not drawn; read it from the dict.

Every function returns its matplotlib Figure; matplotlib is imported when one is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from acl.benchmark.stats import (
    rliable_modules,
    rows_of,
    setting_label,
    settings,
    summary_axes,
    teachers,
    with_setting,
)
from acl.run.results import mean_se_by_step

# ----------------------------------------------------------------------------- benchmark


def teacher_colors(names: Iterable[str]) -> dict[str, tuple]:
    """One tab10 colour per teacher, in the given order, so every figure agrees."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {name: cmap(i % 10) for i, name in enumerate(names)}


def plot_iqm(iqm: pd.DataFrame):
    """IQM point estimates with their bootstrap CIs (rliable's interval plot). Returns the
    matplotlib Figure."""
    _, _, plot_utils = rliable_modules()
    names = list(iqm["teacher"])
    points = {r["teacher"]: np.array([r["iqm"]]) for _, r in iqm.iterrows()}
    intervals = {r["teacher"]: np.array([[r["ci_low"]], [r["ci_high"]]]) for _, r in iqm.iterrows()}
    fig, ax = plot_utils.plot_interval_estimates(
        points,
        intervals,
        metric_names=["IQM"],
        algorithms=names,
        colors=teacher_colors(names),
        subfigure_width=5.0,
        row_height=0.6,
        xlabel="",
    )
    # rliable places its x label at a fixed figure height, over the ticks of a short figure.
    ax.set_xlabel("final fraction of the test set mastered (95% CI)", fontsize="x-large")
    return fig


def plot_profiles(taus: np.ndarray, profiles: dict, cis: dict):
    """Performance profiles with their bootstrap bands (rliable). Returns the Figure."""
    import matplotlib.pyplot as plt

    _, _, plot_utils = rliable_modules()
    fig, ax = plt.subplots(figsize=(6, 4))
    plot_utils.plot_performance_profiles(
        profiles,
        taus,
        performance_profile_cis=cis,
        colors=teacher_colors(profiles),
        ax=ax,
        xlabel=r"fraction of the test set mastered ($\tau$)",
        ylabel=r"fraction of runs with score $> \tau$",
        labelsize="medium",
        ticklabelsize="medium",
    )
    from acl.core.plot_style import legend_outside

    legend_outside(fig, ax, band="shaded: 95% stratified-bootstrap CI")
    fig.tight_layout()
    return fig


def plot_radar(summ: pd.DataFrame, title: str = ""):
    """TeachMyAgent-style radar: each teacher's mean / baseline mean, one axis per setting.

    With fewer than 3 settings a polygon says nothing, so it falls back to grouped bars. A
    NaN ratio (zero baseline, see `summary`) leaves a gap. `title` (e.g. `suite_title`)
    heads the figure. Returns the Figure.
    """
    import matplotlib.pyplot as plt

    from acl.core.plot_style import legend_outside

    rows, columns = summary_axes(summ)
    values = summ.pivot(index="teacher", columns="setting", values="normalised")
    values = values.reindex(index=rows, columns=columns)
    colors = teacher_colors(rows)
    baseline = summ["baseline"].iloc[0]
    label = f"mean % mastered / {baseline}'s"
    if len(columns) < 3:
        fig, ax = plt.subplots(figsize=(6, 4))
        width = 0.8 / len(rows)
        x = np.arange(len(columns))
        for i, teacher in enumerate(rows):
            ax.bar(x + i * width, values.loc[teacher], width, label=teacher, color=colors[teacher])
        ax.set_xticks(x + width * (len(rows) - 1) / 2, columns)
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_ylabel(label)
        ax.set_title(title, fontsize=10)
    else:
        fig, ax = plt.subplots(figsize=(6, 6), subplot_kw={"projection": "polar"})
        angles = np.linspace(0, 2 * np.pi, len(columns), endpoint=False)
        closed = np.append(angles, angles[0])
        for teacher in rows:
            v = values.loc[teacher].to_numpy(np.float64)
            ax.plot(closed, np.append(v, v[0]), label=teacher, color=colors[teacher], lw=2)
            ax.fill(closed, np.nan_to_num(np.append(v, v[0])), color=colors[teacher], alpha=0.1)
        ax.set_xticks(angles, columns)
        ax.set_rlabel_position(90 / len(columns))
        finite = values.to_numpy(np.float64)
        top = np.nanmax(finite) if np.isfinite(finite).any() else 1.0
        ax.set_ylim(0, max(1.0, top) * 1.1)
        fig.suptitle(f"{title}: {label}" if title else label, fontsize=10)
    legend_outside(fig, ax, title="teacher")
    fig.tight_layout()
    return fig


def suite_title(df: pd.DataFrame) -> str:
    """ "quick suite on point_reach": a results table's suite and env(s)."""
    envs = ", ".join(dict.fromkeys(df["env"])) if "env" in df else ""
    suites = ", ".join(dict.fromkeys(df["suite"])) if "suite" in df else ""
    return " on ".join(part for part in (f"{suites} suite" if suites else "", envs) if part)


def plot_curves(df: pd.DataFrame, baseline: str = "random"):
    """% mastered vs env steps, mean ± SE band over seeds: one panel per setting (its
    challenge and expert), one line per teacher, every panel on the same axes. Returns the
    Figure."""
    import matplotlib.pyplot as plt

    from acl.core.plot_style import BAND_ALPHA, legend_outside, se_band_label, steps_axis

    data = with_setting(df)
    pairs = settings(data)
    names = teachers(data, baseline)
    colors = teacher_colors(names)
    ncols = min(3, len(pairs))
    nrows = math.ceil(len(pairs) / ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(3.6 * ncols, 2.7 * nrows),
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    seeds = []
    for ax, (challenge, expert) in zip(axes.flat, pairs):
        for teacher in names:
            runs = rows_of(data, teacher, challenge, expert)
            if runs.empty:
                continue
            steps, mean, se = mean_se_by_step(runs, "pct_mastered")
            ax.plot(steps, mean, label=teacher, color=colors[teacher])
            ax.fill_between(
                steps, mean - se, mean + se, color=colors[teacher], alpha=BAND_ALPHA, lw=0
            )
            seeds.append(runs["seed"].nunique())
        ax.set_title(f"challenge: {setting_label(challenge, expert)}", fontsize=9)
        steps_axis(ax.xaxis)
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.xaxis.set_tick_params(labelbottom=True)
    for ax in axes[:, 0]:
        ax.set_ylabel("% mastered (test set)")
    for ax in list(axes.flat)[len(pairs) :]:
        ax.set_visible(False)
    for column in range(ncols):  # under the lowest panel drawn in each column
        drawn = [ax for ax in axes[:, column] if ax.get_visible()]
        drawn[-1].set_xlabel("env steps per seed")
    fig.suptitle(f"% mastered: {suite_title(df)}", fontsize=10)
    legend_outside(fig, list(axes.flat), band=se_band_label(seeds), title="teacher")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- teacher snapshots


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
                index = np.unravel_index(j, value.shape[1:])
                label = str(tuple(int(i) for i in index)) if flat.shape[1] > 1 else None
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
