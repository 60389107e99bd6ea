"""Compare finished runs side by side: final % mastered, Welch's p, curves.

    acl compare BASELINE_DIR RUN_DIR [RUN_DIR ...] [--out DIR]

The first run is the baseline. Prints a table with each run's final % mastered (mean ±
SE over seeds), its difference from the baseline, that difference in units of the
combined SE √(SE_a² + SE_b²), and Welch's p. With `--out` it writes:

- comparison.json: per run, keyed by its teacher's registry name (`random`, `alp_gmm`;
  the run's name where two runs share a teacher), `final_pct_mastered_mean`, `_se`,
  `_per_seed`, `env_steps`, `wall_seconds` (and `infeasible_share` where the env has a
  feasibility map); and `welch_p_<run>_vs_<baseline>` for every other run;
- comparison.png: the learning curves, mean ± SE over seeds;
- sampled_tasks.png: where each teacher sampled (its tasks.csv; first half of training
  blue, second orange), over the env's feasibility map where it has one
  (`env.reachable`) and the test set's box, with the infeasible share per run.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from acl.run.results import RunDir, format_table, plot_learning_curves
from experiments.cli import CommandParser, one_line_errors

if TYPE_CHECKING:  # pandas loads with the first run read: `--help` stays fast
    import pandas as pd


def _key(summary: dict, taken: set[str]) -> str:
    return summary["teacher"] if summary["teacher"] not in taken else summary["name"]


def _env_of(run: RunDir):
    from envs import make_env

    env_config = dict(run.read_config_dict()["env"])
    name = env_config.pop("name")
    env_config.pop("task_low", None)
    env_config.pop("task_high", None)
    return make_env(name, **env_config)


def infeasible_share(env, tasks: np.ndarray) -> float | None:
    """Share of tasks [K, D] (env units) the env's feasibility map rules out, or None."""
    reachable = getattr(env, "reachable", None)
    if reachable is None or len(tasks) == 0:
        return None
    return float(1.0 - np.mean(reachable(tasks)))


def setting_title(config: dict) -> str:
    """ "point_reach, challenge unfeasible": a run's env and challenge, from its config (the
    env alone where the config sets no challenge)."""
    from acl.benchmark.stats import setting_label

    challenge = config.get("challenge") or {}
    if not challenge.get("name"):
        return config["env"]["name"]
    label = setting_label(challenge["name"], challenge.get("expert", "none"))
    return f"{config['env']['name']}, challenge {label}"


@dataclass(frozen=True)
class SampledTasks:
    """A run's logged training tasks (its tasks.csv) and the env they were drawn for."""

    env: Any
    frame: pd.DataFrame

    @property
    def names(self) -> list[str]:
        return [c for c in self.frame.columns if c not in ("chunk", "seed")]

    @property
    def tasks(self) -> np.ndarray:
        """[K, D] in env units."""
        return self.frame[self.names].to_numpy(np.float64)

    @cached_property
    def infeasible_share(self) -> float | None:
        # The table and the plot both read it; the feasibility map is not cheap.
        return infeasible_share(self.env, self.tasks)


def sampled_tasks_of(run: RunDir) -> SampledTasks | None:
    """The run's SampledTasks; None where it logged no tasks."""
    import pandas as pd

    if not (run.path / "tasks.csv").exists():
        return None
    return SampledTasks(_env_of(run), pd.read_csv(run.path / "tasks.csv"))


def _panel_limits(runs: dict[str, SampledTasks]) -> tuple[tuple[float, float], ...]:
    """The x and y limits every panel shares: every run's tasks and its env's task space
    (the test set's box), with a margin."""
    lows, highs = [], []
    for sampled in runs.values():
        tasks = _two_columns(sampled.tasks)
        box = np.stack([sampled.env.task_space.low, sampled.env.task_space.high])[:, :2]
        lows.append(np.minimum(tasks.min(0), box[0]) if len(tasks) else box[0])
        highs.append(np.maximum(tasks.max(0), box[1]) if len(tasks) else box[1])
    low, high = np.min(lows, axis=0), np.max(highs, axis=0)
    margin = 0.03 * np.where(high > low, high - low, 1.0)
    return tuple((float(lo), float(hi)) for lo, hi in zip(low - margin, high + margin))


def _two_columns(tasks: np.ndarray) -> np.ndarray:
    """The first two task dimensions; a 1-D space gets a zero second one."""
    if tasks.shape[1] < 2:
        return np.concatenate([tasks, np.zeros_like(tasks)], axis=1)
    return tasks[:, :2]


INFEASIBLE = "#f6d5d2"
MAX_POINTS = 4000
"""Tasks drawn per panel at most, a fixed random subset: more only blur into a PNG that
compresses badly."""


def _drawn(count: int) -> np.ndarray:
    """The indices of the tasks a panel draws (all up to MAX_POINTS; seeded)."""
    if count <= MAX_POINTS:
        return np.arange(count)
    return np.random.default_rng(0).choice(count, MAX_POINTS, replace=False)


def plot_sampled_tasks(runs: dict[str, SampledTasks], out: Path, title: str = "") -> None:
    """One panel per run, all on the same axes: its sampled tasks (first two dimensions),
    the first half of training in blue and the second in orange, over the env's feasibility
    map (infeasible tasks shaded, the feasible region's edge outlined above the points)
    where it has one, with the test set's box dashed. Each panel's title gives the share of
    its tasks that were infeasible."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from acl.core.plot_style import FIRST_HALF, SECOND_HALF, legend_outside, save

    (x_lo, x_hi), (y_lo, y_hi) = _panel_limits(runs)
    fig, axes = plt.subplots(
        1, len(runs), figsize=(3.8 * len(runs), 3.6), squeeze=False, sharex=True, sharey=True
    )
    has_map = False
    for ax, (label, sampled) in zip(axes[0], runs.items()):
        frame, env = sampled.frame, sampled.env
        names, tasks = sampled.names, _two_columns(sampled.tasks)
        reachable = getattr(env, "reachable", None)
        if reachable is not None and len(names) == 2:
            has_map = True
            xs, ys = np.linspace(x_lo, x_hi, 300), np.linspace(y_lo, y_hi, 200)
            feasible = reachable(np.stack(np.meshgrid(xs, ys, indexing="xy"), -1)).astype(float)
            ax.contourf(xs, ys, feasible, levels=[-0.5, 0.5], colors=[INFEASIBLE], zorder=0)
            ax.contour(
                xs, ys, feasible, levels=[0.5], colors=["darkgreen"], linewidths=1.5, zorder=3
            )
        late = (frame["chunk"] >= frame["chunk"].max() / 2).to_numpy()
        drawn = np.zeros(len(tasks), bool)
        drawn[_drawn(len(tasks))] = True
        for half, color in ((~late & drawn, FIRST_HALF), (late & drawn, SECOND_HALF)):
            ax.scatter(
                tasks[half, 0],
                tasks[half, 1],
                s=2.5,
                alpha=0.5,
                color=color,
                lw=0,
                zorder=2,
                rasterized=True,
            )
        box_lo, box_hi = env.task_space.low, env.task_space.high
        ax.add_patch(
            plt.Rectangle(
                (box_lo[0], box_lo[1]),
                box_hi[0] - box_lo[0],
                box_hi[1] - box_lo[1],
                fill=False,
                lw=1.2,
                ls="--",
                zorder=4,
                label="test set's space",
            )
        )
        share = sampled.infeasible_share
        handed = f"{len(tasks):,} tasks"
        if share is not None:
            handed = f"{100 * share:.0f}% of {handed} infeasible"
        ax.set_title(f"{label}\n{handed} ({drawn.sum():,} drawn)", fontsize=8)
        ax.set_xlabel(names[0])
        ax.set_xlim(x_lo, x_hi)
        ax.set_ylim(y_lo, y_hi)
    axes[0][0].set_ylabel(names[1] if len(names) > 1 else "")

    def dot(color: str) -> Line2D:
        return Line2D([], [], ls="", marker="o", ms=5, color=color)

    extra = [
        (dot(FIRST_HALF), "first half of training"),
        (dot(SECOND_HALF), "second half of training"),
    ]
    if has_map:
        extra += [
            (Line2D([], [], color="darkgreen", lw=1.5), "edge of the feasible region"),
            (Patch(facecolor=INFEASIBLE), "infeasible"),
        ]
    legend_outside(fig, list(axes[0]), extra=extra)
    fig.suptitle(f"Tasks handed out: {title}" if title else "Tasks handed out", fontsize=10)
    fig.tight_layout()
    save(fig, out)


def _label(run: RunDir) -> str:
    summary = run.read_summary()
    return f"{summary['teacher']} ({summary['name']})"


def draw_learning_curves(runs: Sequence[RunDir], path: Path) -> None:
    """comparison.png: the runs' learning curves, titled with the first run's env and
    challenge."""
    title = setting_title(runs[0].read_config_dict())
    curves = {_label(run): run.read_metrics() for run in runs}
    plot_learning_curves(curves, path, title=f"% mastered on the test set: {title}")


def read_sampled_tasks(runs: Sequence[RunDir]) -> dict[str, SampledTasks]:
    """Per run label, its SampledTasks, for the runs that logged tasks."""
    sampled = {_label(run): sampled_tasks_of(run) for run in runs}
    return {label: tasks for label, tasks in sampled.items() if tasks is not None}


def draw_sampled_tasks(
    runs: Sequence[RunDir], path: Path, sampled: dict[str, SampledTasks] | None = None
) -> bool:
    """sampled_tasks.png, where the runs logged tasks (`sampled`: as `read_sampled_tasks`
    gives them, when already read); whether it was drawn."""
    sampled = read_sampled_tasks(runs) if sampled is None else sampled
    if sampled:
        plot_sampled_tasks(sampled, path, setting_title(runs[0].read_config_dict()))
    return bool(sampled)


def parser() -> CommandParser:
    parser = CommandParser(
        "compare",
        __doc__,
        examples=("runs/make_run/random runs/make_run/alp_gmm --out runs/make_run",),
    )
    parser.add_argument("runs", nargs="+", help="run directories; the first is the baseline")
    parser.add_out(help="where to write the plots and JSON (default: print the table only)")
    return parser


@one_line_errors
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from acl.benchmark.stats import welch_p

    runs, summaries, result = [], [], {}
    sampled_by_label: dict[str, SampledTasks] = {}
    for path in args.runs:
        run = RunDir(path)
        try:
            summary = run.read_summary()
        except FileNotFoundError:
            print(f"error: {path} has no summary.json (unfinished run?)", file=sys.stderr)
            return 2
        key = _key(summary, set(result))
        entry = {
            "run": summary["name"],
            "final_pct_mastered_mean": summary["final_pct_mastered_mean"],
            "final_pct_mastered_se": summary["final_pct_mastered_se"],
            "final_pct_mastered_per_seed": summary["final_pct_mastered_per_seed"],
            "env_steps": summary["env_steps"],
            "wall_seconds": summary["wall_seconds"],
        }
        sampled = sampled_tasks_of(run)
        share = None if sampled is None else sampled.infeasible_share
        if sampled is not None:
            sampled_by_label[_label(run)] = sampled
        if share is not None:
            entry["infeasible_share"] = share
        result[key] = entry
        summaries.append((key, summary))
        runs.append(run)

    base_key, base = summaries[0]
    rows = []
    for key, summary in summaries:
        entry = result[key]
        row = {
            "run": summary["name"],
            "teacher": summary["teacher"],
            "seeds": len(summary["seeds"]),
            "env steps/seed": summary["env_steps"],
            "% mastered (mean ± SE)": f"{entry['final_pct_mastered_mean']:.1f} ± "
            f"{entry['final_pct_mastered_se']:.1f}",
            "diff": "",
            "diff / SE": "",
            "Welch p": "",
            "infeasible handed out": f"{100 * entry['infeasible_share']:.0f}%"
            if "infeasible_share" in entry
            else "",
            "wall s": f"{summary['wall_seconds']:.0f}",
        }
        if key != base_key:
            diff = entry["final_pct_mastered_mean"] - base["final_pct_mastered_mean"]
            se = math.hypot(entry["final_pct_mastered_se"], base["final_pct_mastered_se"])
            p = welch_p(entry["final_pct_mastered_per_seed"], base["final_pct_mastered_per_seed"])
            result[f"welch_p_{key}_vs_{base_key}"] = p
            row.update(
                {
                    "diff": f"{diff:+.1f}",
                    "diff / SE": f"{diff / se:.1f}" if se else "",
                    "Welch p": f"{p:.2g}",
                }
            )
        rows.append(row)
    print(format_table(rows, list(rows[0])))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        draw_learning_curves(runs, out / "comparison.png")
        sampled = draw_sampled_tasks(runs, out / "sampled_tasks.png", sampled_by_label)
        (out / "comparison.json").write_text(json.dumps(result, indent=2))
        print(
            f"written: {out / 'comparison.json'}, comparison.png"
            + (", sampled_tasks.png" if sampled else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
