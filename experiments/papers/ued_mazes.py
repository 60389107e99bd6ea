"""The UED maze comparison: DR, PLR, robust PLR, ACCEL, PAIRED on held-out mazes.

Zero-shot solve rates on the held-out mazes, beside the published ones.

    acl ued-mazes --preset cpu [--methods dr plr ...] [--seeds N]
        [--set KEY=VALUE ...] [--out runs/ued_mazes] [--no-progress]
    acl ued-mazes --table-only [--out runs/ued_mazes]
    acl ued-mazes --methods plr --max-minutes 8   # published scale, sampled
    acl ued-mazes --suite mini [--methods dr ...] [--out runs/ued_mini]
    acl ued-mazes --suite mini --methods sfl sfl_equal_steps

`--suite mini` is the CPU-sized mini-UED protocol (docs/results/ued_mini.md): the configs
`experiments/configs/ued_mini_<method>.yaml` (9 x 9 mazes, the `cpu` student) and their
8 hand-made 9 x 9 held-out mazes. Its "final" solve rate is each seed's mean over the
last 3 evaluations (the published suite's is the last evaluation), its table has the
mean over all eight mazes and Welch's p of each method against DR, and no published
figure (there is none at this size). It adds two SFL arms (`sfl`: the same 200 PPO
updates; `sfl_equal_steps`: the same total env steps, SFL's evaluation rollouts
included). Each method can also be run, and resumed, on its
own: `acl run --config experiments/configs/ued_mini_<method>.yaml --out
runs/ued_mini/<method>` (`--resume runs/ued_mini/<method>`).

`--max-minutes` gives each method a wall-clock budget (compile included): no evaluation
starts after it, and the method's line reports the env steps reached, the steps/s and the
projected time of the full run (30,000 updates, 245.76M env steps per seed): the GPU
check of the published setting.

Each method runs its own config, `experiments/configs/maze_<method>.yaml` (with the
preset and `--set` overrides), into `<out>/<method>/`, a normal run directory
(`acl.run.results`). The table is the final evaluation's solve rate with *sampled* actions
(10 attempts per maze, the literature's protocol) on each held-out maze, mean ± SE over
seeds, and the mean over the published seven (dcd's SixteenRooms, Labyrinth, Labyrinth2,
Maze, Maze2, SimpleCrossing, SmallCorridor), beside the published means (25 walls,
250M steps, 10 seeds). `notebooks/ued_mazes.ipynb` shows the runs over training.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from acl.core.errors import ConfigError
from acl.run.results import format_table, mean_se
from envs.maze_levels import PLR_EVALUATION
from experiments.cli import CONFIGS, CommandParser, minutes_budget, one_line_errors

METHODS = ("dr", "plr", "robust_plr", "accel", "paired")
SFL_ARMS = ("sfl", "sfl_equal_steps")
"""The mini suite's SFL arms (its addendum): the same 200 PPO updates as the others, and
the same total env steps (training plus SFL's evaluation rollouts)."""
PUBLISHED = {"dr": 0.43, "paired": 0.33, "plr": 0.59, "robust_plr": 0.68}
"""Mean sampled solve rate over the published seven (dcd's result files: 25 walls, 250M
env steps, 10 seeds). ACCEL's published figure (0.875) is on 60 walls and 12 mazes: not
comparable, so not shown beside our 25-wall runs."""
METRIC = "eval_solve_sampled"


SUITES = {"published": "maze_{method}.yaml", "mini": "ued_mini_{method}.yaml"}
"""Each suite's config file per method."""
SUITE_METHODS = {"published": METHODS, "mini": METHODS + SFL_ARMS}
FINAL_EVALUATIONS = {"published": 1, "mini": 3}
"""How many of the last evaluations each seed's final solve rate averages."""


def config_path(method: str, suite: str = "published") -> Path:
    return CONFIGS / SUITES[suite].format(method=method)


def final_solve_rates(run_dir: Path, last: int = 1) -> tuple[list[str], np.ndarray, int]:
    """(maze names, sampled solve rates [S, M], env steps/seed): each seed's mean over its
    `last` evaluations."""
    import pandas as pd

    frame = pd.read_csv(run_dir / "metrics.csv")
    prefix = f"{METRIC}/"
    names = [c[len(prefix) :] for c in frame.columns if c.startswith(prefix)]
    if not names:
        raise ConfigError(f"{run_dir}: metrics.csv has no {prefix}<maze> columns")
    evaluated = np.sort(frame["env_steps"].unique())
    if len(evaluated) < last:
        raise ConfigError(
            f"{run_dir}: {len(evaluated)} evaluations, the final solve rate needs the last {last}"
        )
    final = frame[frame["env_steps"].isin(evaluated[-last:])]
    rates = final.groupby("seed")[[prefix + n for n in names]].mean().sort_index()
    return names, rates.to_numpy(float), int(evaluated[-1])


def summarise(out: Path, methods: tuple[str, ...], suite: str = "published") -> list[dict]:
    """One record per method whose run directory holds metrics."""
    from acl.benchmark.stats import welch_p

    records = []
    for method in methods:
        run_dir = out / method
        if not (run_dir / "metrics.csv").is_file():
            continue
        names, rates, steps = final_solve_rates(run_dir, FINAL_EVALUATIONS[suite])
        seven = [names.index(n) for n in PLR_EVALUATION if n in names]
        records.append(
            {
                "method": method,
                "seeds": int(rates.shape[0]),
                "env_steps": steps,
                "final_evaluations": FINAL_EVALUATIONS[suite],
                "mazes": names,
                "solve_sampled": rates.tolist(),  # [S, M]
                "mean_all": rates.mean(axis=1).tolist(),
                "published_seven": [names[i] for i in seven],
                "mean_seven": rates[:, seven].mean(axis=1).tolist() if seven else None,
                "published_mean_seven": PUBLISHED.get(method) if suite == "published" else None,
            }
        )
    baseline = next((r for r in records if r["method"] == "dr"), None)
    for r in records:
        r["welch_p_vs_dr"] = (
            None
            if baseline is None or r is baseline
            else welch_p(r["mean_all"], baseline["mean_all"])
        )
    attach_risk(records, out / RISK_FILE)
    return records


RISK_FILE = "risk/risk.json"
"""Where `acl risk --out <out>/risk` writes; the tables add its figures."""
RISK_MEASURES = {"sampled mean": "mean", "CVaR 0.1": "0.1", "CVaR 0.01": "0.01"}
"""Table label -> the measure in risk.json (the mean success, or CVaR at that alpha)."""


def attach_risk(records: list[dict], path: Path) -> None:
    """Each record gains `risk` ({label: per-seed values}) and `risk_p_vs_dr` ({label:
    Welch's p}) from `acl risk`'s risk.json, when it has the method."""
    from acl.benchmark.stats import welch_p

    if not path.is_file():
        return
    runs = json.loads(path.read_text())["runs"]

    def values(records_of_run, measure):
        return [
            r["mean_success"] if measure == "mean" else r["cvar"][measure] for r in records_of_run
        ]

    for r in records:
        if r["method"] in runs:
            r["risk"] = {
                label: values(runs[r["method"]], measure)
                for label, measure in RISK_MEASURES.items()
            }
    base = next((r.get("risk") for r in records if r["method"] == "dr"), None)
    for r in records:
        if "risk" in r:
            r["risk_p_vs_dr"] = {
                label: None if base is None or r["method"] == "dr" else welch_p(v, base[label])
                for label, v in r["risk"].items()
            }


def diagnose(run_dir: Path) -> dict:
    """What a run's teacher handed out and how the student did on it, in the last
    evaluation period: the student's training success, the share of updates that
    applied a gradient (robust PLR and ACCEL learn from replay batches only; from the
    teacher's snapshot), and the logged levels' walls, share solvable and shortest path
    (forward moves; solvable ones). Means over seeds."""
    import jax
    import pandas as pd

    from acl.build import build_env
    from acl.config import load_config
    from envs.maze import shortest_path_length

    frame = pd.read_csv(run_dir / "metrics.csv")
    last = frame[frame["env_steps"] == frame["env_steps"].max()]
    out = {}
    if "train_success" in last:
        out["train_success"] = float(last["train_success"].mean())
    snapshots = sorted((run_dir / "teacher").glob("eval_*.npz"))
    if snapshots:
        snapshot = np.load(snapshots[-1])
        if "batches_replay" in snapshot.files:
            kinds = {k: snapshot[f"batches_{k}"].astype(float) for k in ("new", "replay", "edit")}
            total = sum(kinds.values())
            out["replay_share"] = float((kinds["replay"] / total).mean())
            out["edit_share"] = float((kinds["edit"] / total).mean())
            out["buffer_mean_score"] = float(snapshot["mean_score"].mean())
        if "learnable_share" in snapshot.files:  # SFL: the buffer's p and its cost
            out["buffer_mean_success"] = float(snapshot["mean_success"].mean())
            out["buffer_mean_score"] = float(snapshot["mean_learnability"].mean())
            out["buffer_learnable_share"] = float(snapshot["learnable_share"].mean())
            out["eval_env_steps"] = float(snapshot["eval_env_steps"].mean())
    if not ((run_dir / "tasks.csv").is_file() and (run_dir / "config.yaml").is_file()):
        return out
    tasks = pd.read_csv(run_dir / "tasks.csv")
    tasks = tasks[tasks["chunk"] == tasks["chunk"].max()]
    env = build_env(load_config(run_dir / "config.yaml"))
    params = env.params_for_tasks(tasks.drop(columns=["chunk", "seed"]).to_numpy(np.float32))
    length = np.asarray(jax.vmap(shortest_path_length)(params))
    out["level_walls"] = float(np.asarray(params.wall_map).sum(axis=(1, 2)).mean())
    out["level_solvable"] = float((length >= 0).mean())
    out["level_path"] = float(length[length >= 0].mean()) if (length >= 0).any() else None
    return out


def table(records: list[dict]) -> str:
    """Methods as rows; each maze, then the mean over the published seven beside the
    published figure."""
    if not records:
        return "no runs"
    mazes = records[0]["mazes"]
    rows = []
    for r in records:
        rates = np.asarray(r["solve_sampled"])
        row = {"method": r["method"], "seeds": r["seeds"], "env steps/seed": f"{r['env_steps']:,}"}
        for i, name in enumerate(mazes):
            m, se = mean_se(rates[:, i])
            row[name] = f"{m:.2f} ± {se:.2f}"
        if r["mean_seven"] is not None:
            m, se = mean_se(r["mean_seven"])
            row["mean of the seven"] = f"{m:.2f} ± {se:.2f}"
            published = r["published_mean_seven"]
            row["published (250M steps)"] = "n/a" if published is None else f"{published:.2f}"
        else:
            m, se = mean_se(r["mean_all"])
            row["mean"] = f"{m:.2f} ± {se:.2f}"
            row["Welch p vs dr"] = _p_text(r["welch_p_vs_dr"])
            for label in r.get("risk", {}):
                row[label] = _risk_cell(r, label)
        rows.append(row)
    return format_table(rows, list(rows[0]))


def _short(value) -> str:
    return "" if value is None else f"{value:.2f}"


def _p_text(p: float | None) -> str:
    return "" if p is None else f"{p:.2g}"


def _risk_cell(record: dict, label: str) -> str:
    """ "mean ± SE (p P)" of one risk measure of a method (`attach_risk`)."""
    m, se = mean_se(record["risk"][label])
    p = _p_text(record["risk_p_vs_dr"][label])
    return f"{m:.3f} ± {se:.3f}" + (f" (p {p})" if p else "")


def readme_table(records: list[dict]) -> str:
    """The README's form: a markdown table with mazes as rows and methods as columns
    (mean ± SE over seeds; * marks the published seven), then their mean beside the
    published one, and the env steps per seed."""
    mazes = records[0]["mazes"]
    seven = set(records[0]["published_seven"])

    def cell(values) -> str:
        m, se = mean_se(values)
        return f"{m:.2f} ± {se:.2f}"

    def row(label: str, cells) -> str:
        return f"| {label} | " + " | ".join(cells) + " |"

    lines = [row("maze", [r["method"] for r in records]), "|---" * (len(records) + 1) + "|"]
    for i, name in enumerate(mazes):
        label = name + (" *" if name in seven else "")
        lines.append(row(label, [cell(np.asarray(r["solve_sampled"])[:, i]) for r in records]))
    if not seven:  # the mini suite: no published figures, Welch's p against DR instead
        lines.append(
            row(f"**mean of the {len(mazes)}**", [f"**{cell(r['mean_all'])}**" for r in records])
        )
        lines.append(row("Welch p vs dr", [_p_text(r["welch_p_vs_dr"]) or "–" for r in records]))
        for label in RISK_MEASURES if any("risk" in r for r in records) else ():
            cells = [_risk_cell(r, label) if "risk" in r else "–" for r in records]
            lines.append(row(f"sampled mazes: {label}".replace(": sampled", ":"), cells))
        lines.append(row("env steps per seed", [f"{r['env_steps']:,}" for r in records]))
        return "\n".join(lines)
    lines.append(
        row(
            "**mean of the seven ***",
            ["n/a" if r["mean_seven"] is None else f"**{cell(r['mean_seven'])}**" for r in records],
        )
    )
    published = [
        "n/a" if r["published_mean_seven"] is None else f"{r['published_mean_seven']:.2f}"
        for r in records
    ]
    lines.append(row("published mean of the seven (250M steps, 10 seeds)", published))
    lines.append(row("env steps per seed", [f"{r['env_steps']:,}" for r in records]))
    return "\n".join(lines)


def plot(records: list[dict], path: Path) -> None:
    """Per-maze sampled solve rate, one bar group per maze, mean ± SE over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from acl.core.plot_style import legend_outside, save, seed_count_text, with_seed_counts

    mazes = records[0]["mazes"]
    width = 0.8 / len(records)
    x = np.arange(len(mazes))
    fig, ax = plt.subplots(figsize=(max(7, 0.9 * len(mazes)), 3.4))
    labels = with_seed_counts([r["method"] for r in records], [r["seeds"] for r in records])
    for i, (r, label) in enumerate(zip(records, labels, strict=True)):
        rates = np.asarray(r["solve_sampled"])
        mean, se = mean_se(rates, axis=0)
        ax.bar(x + i * width, mean, width, yerr=se, label=label, capsize=2)
    ax.set_xticks(x + 0.4 - width / 2, mazes, rotation=30, ha="right")
    ax.set(ylabel="solve rate (sampled, 10 attempts)", ylim=(0, 1.02))
    ax.grid(alpha=0.3, axis="y")
    steps = {r["env_steps"] for r in records}
    budget = f", {steps.pop():,} env steps per seed" if len(steps) == 1 else ""
    last = records[0]["final_evaluations"]
    ax.set_title(
        f"maze, {len(mazes)} held-out mazes: solve rate over the last {last} evaluations{budget}",
        fontsize=9,
    )
    seeds = seed_count_text(r["seeds"] for r in records)
    legend_outside(fig, ax, title=f"method\n(error bars: ± 1 SE\nover {seeds} seeds)")
    fig.tight_layout()
    save(fig, path)


def run_method(method: str, args: argparse.Namespace, out: Path, max_seconds: float | None) -> None:
    from acl.build import make_train
    from acl.config import load_config
    from acl.run.experiment import run_experiment, time_limit_line

    config = load_config(config_path(method, args.suite), args.overrides, args.seeds, args.preset)
    trainer = make_train(config)
    print(f"== {method}: {config.num_seeds} seeds, {config.loop.total_env_steps:,} steps/seed")
    summary = run_experiment(
        config,
        out / method,
        progress=not args.no_progress,
        trainer=trainer,
        max_seconds=max_seconds,
    )
    line = time_limit_line(summary)
    if line:
        print(f"{method}: {line}")


def parser() -> CommandParser:
    parser = CommandParser(
        "ued-mazes",
        __doc__,
        examples=("--suite mini", "--preset cpu --methods dr plr --seeds 2", "--table-only"),
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=None,
        choices=METHODS + SFL_ARMS,
        help="default: the suite's (the mini suite adds the SFL arms)",
    )
    parser.add_argument(
        "--suite",
        default="published",
        choices=tuple(SUITES),
        help="published: maze_<method>.yaml (13 x 13); mini: ued_mini_<method>.yaml (9 x 9)",
    )
    parser.add_preset(help="apply the configs' presets.NAME section (listed below)")
    parser.add_overrides(help="override a key of every method's config")
    parser.add_seeds(help="vmapped seeds per method (default: the configs')")
    parser.add_out(help="default: runs/ued_mazes or runs/ued_mini")
    parser.add_argument("--table-only", action="store_true", help="only rebuild the table")
    parser.add_no_progress()
    parser.add_max_minutes(
        help="wall-clock budget per method, compile included (e.g. a GPU's lent time at "
        "published scale): no evaluation starts after it; the full run's time is projected",
    )
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    parser_ = parser()
    args = parser_.parse_args(argv)
    if args.out is None:
        args.out = "runs/ued_mini" if args.suite == "mini" else "runs/ued_mazes"
    if args.methods is None:
        args.methods = list(SUITE_METHODS[args.suite])
    elsewhere = sorted(set(args.methods) - set(SUITE_METHODS[args.suite]))
    if elsewhere:
        parser_.error(f"--suite {args.suite} has no config for {elsewhere}")
    return args


@one_line_errors  # a bad config, override or budget (before any compilation), a bad run
def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    methods = tuple(args.methods)
    max_seconds = minutes_budget(args.max_minutes)
    if not args.table_only:
        from acl.build import build_components
        from acl.config import load_config
        from acl.run.results import enable_compilation_cache

        for method in methods:  # every config error before any compilation
            build_components(
                load_config(
                    config_path(method, args.suite), args.overrides, args.seeds, args.preset
                )
            )
        enable_compilation_cache()
        for method in methods:
            run_method(method, args, out, max_seconds)
    records = summarise(out, methods, args.suite)
    if not records:
        print(f"error: no run with metrics under {out}", file=sys.stderr)
        return 1
    text = table(records)
    if args.suite == "mini":
        for r in records:
            r["diagnosis"] = diagnose(out / r["method"])
        columns = list(dict.fromkeys(k for r in records for k in r["diagnosis"]))
        rows = [
            {"method": r["method"], **{k: _short(r["diagnosis"].get(k)) for k in columns}}
            for r in records
        ]
        text += "\n\nlast evaluation period (means over seeds):\n" + format_table(
            rows, ["method", *columns]
        )
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"results": records}, indent=1))
    (out / "table.md").write_text(text + "\n")
    (out / "readme_table.md").write_text(readme_table(records) + "\n")
    plot(records, out / "solve_rates.png")
    written = ", ".join(str(out / f) for f in ("results.json", "table.md", "readme_table.md"))
    print(f"wrote {written}, {out / 'solve_rates.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
