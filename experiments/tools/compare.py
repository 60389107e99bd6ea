"""Compare finished runs side by side: acl compare BASELINE_DIR RUN_DIR [RUN_DIR ...]
[--out DIR].

The first run is the baseline. Prints a table with each run's final % mastered (mean ±
SE over seeds), its difference from the baseline, that difference in units of the
combined SE √(SE_a² + SE_b²), and Welch's p. With `--out` it writes:

- comparison.json: per run, keyed by its teacher's registry name (`random`, `alp_gmm`;
  the run's name where two runs share a teacher), `final_pct_mastered_mean`, `_se`,
  `_per_seed`, `env_steps`, `wall_seconds` (and `infeasible_share` where the env has a
  feasibility map); and `welch_p_<run>_vs_<baseline>` for every other run;
- comparison.png: the learning curves;
- sampled_tasks.png: where each teacher sampled (its tasks.csv), over the env's
  feasibility map where it has one (`env.reachable`) and the test set's box.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from acl.run.results import RunDir, format_table, plot_learning_curves
from experiments.cli import CommandParser, one_line_errors


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


def plot_sampled_tasks(runs: dict[str, tuple], out: Path) -> None:
    """One panel per run: its sampled tasks (first two dimensions) over the feasibility
    map, with the test set's box outlined. `runs` maps label -> (env, tasks frame)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(runs), figsize=(4.5 * len(runs), 4), squeeze=False)
    for ax, (label, (env, frame)) in zip(axes[0], runs.items()):
        names = [c for c in frame.columns if c not in ("chunk", "seed")]
        tasks = frame[names].to_numpy(np.float64)
        if tasks.shape[1] < 2:
            tasks = np.concatenate([tasks, np.zeros_like(tasks)], axis=1)
            names = [*names, ""]
        lo, hi = tasks.min(0)[:2], tasks.max(0)[:2]
        reachable = getattr(env, "reachable", None)
        if reachable is not None and len(names) == 2:
            xs = np.linspace(min(lo[0], env.task_space.low[0]), hi[0], 300)
            ys = np.linspace(min(lo[1], env.task_space.low[1]), hi[1], 200)
            grid = np.stack(np.meshgrid(xs, ys, indexing="xy"), -1)
            ax.contourf(
                xs,
                ys,
                reachable(grid).astype(float),
                levels=[-0.5, 0.5, 1.5],
                colors=["#f4c7c3", "#d9ead3"],
            )
        late = frame["chunk"] >= frame["chunk"].max() / 2
        ax.scatter(
            tasks[~late, 0], tasks[~late, 1], s=2, alpha=0.3, c="tab:gray", label="first half"
        )
        ax.scatter(
            tasks[late, 0], tasks[late, 1], s=2, alpha=0.4, c="tab:blue", label="second half"
        )
        box_lo, box_hi = env.task_space.low, env.task_space.high
        ax.add_patch(
            plt.Rectangle(
                (box_lo[0], box_lo[1]),
                box_hi[0] - box_lo[0],
                box_hi[1] - box_lo[1],
                fill=False,
                lw=1.5,
                ls="--",
                label="test set's space",
            )
        )
        ax.set_xlabel(names[0])
        ax.set_ylabel(names[1])
        ax.set_title(label, fontsize=9)
    axes[0][0].legend(loc="upper right", fontsize=7, markerscale=4)
    fig.suptitle("tasks handed out (green: feasible, red: infeasible)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


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

    summaries, curves, sampled, result = [], {}, {}, {}
    for path in args.runs:
        run = RunDir(path)
        try:
            summary = run.read_summary()
        except FileNotFoundError:
            print(f"error: {path} has no summary.json (unfinished run?)", file=sys.stderr)
            return 2
        key = _key(summary, set(result))
        label = f"{summary['teacher']} ({summary['name']})"
        curves[label] = run.read_metrics()
        entry = {
            "run": summary["name"],
            "final_pct_mastered_mean": summary["final_pct_mastered_mean"],
            "final_pct_mastered_se": summary["final_pct_mastered_se"],
            "final_pct_mastered_per_seed": summary["final_pct_mastered_per_seed"],
            "env_steps": summary["env_steps"],
            "wall_seconds": summary["wall_seconds"],
        }
        if (run.path / "tasks.csv").exists():
            import pandas as pd

            env, frame = _env_of(run), pd.read_csv(run.path / "tasks.csv")
            sampled[label] = (env, frame)
            names = [c for c in frame.columns if c not in ("chunk", "seed")]
            share = infeasible_share(env, frame[names].to_numpy(np.float64))
            if share is not None:
                entry["infeasible_share"] = share
        result[key] = entry
        summaries.append((key, summary))

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
        plot_learning_curves(curves, out / "comparison.png", title="% mastered on the test set")
        if sampled:
            plot_sampled_tasks(sampled, out / "sampled_tasks.png")
        (out / "comparison.json").write_text(json.dumps(result, indent=2))
        print(f"written: {out / 'comparison.json'}, comparison.png, sampled_tasks.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
