"""Teacher overhead as the user sees it: whole `acl run` commands, timed in turn.

    acl bench-overhead --baseline CONFIG --configs CONFIG [CONFIG ...] [--rounds 9]
        [--set KEY=VALUE ...] [--out FILE.json] [--keep-runs DIR]

Each round runs the baseline config (Random) and then every other config, each as its own
`acl run` process: the program a user runs, with its evaluations, checkpoints and
progress bar as the config sets them, and the compile included. Every run gets a fresh,
empty compile cache (`ACL_JAX_CACHE`), as a first run on a new machine has. A load that
drifts on a shared machine then weighs on the runs of one round alike.

The rule, fixed before any run: per round and config, the wall-time ratio is the run's
wall seconds over the baseline's in the same round, and the throughput ratio its env
steps per second (`summary.json`) over the baseline's; the figure is the median of each
ratio over the rounds. A user's `make run` is the pair of point_reach configs, whose loop
layouts differ (ALP-GMM's teacher runs beside the agent, `loop.overlap_teacher`), so each
config runs as shipped. The JSON holds every run's seconds and summary, the rule, the
machine and the provenance (`acl.benchmark.timing.report`).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from acl.benchmark.timing import report
from acl.core.errors import ConfigError
from acl.run.results import format_table
from experiments.cli import ROOT, CommandParser, config_path, one_line_errors

RULE = (
    "per round and config: wall seconds / the baseline's wall seconds in the same round, "
    "and env steps/s / the baseline's; the figure is the median of each over the rounds"
)

Runner = Callable[[Path, Path, Sequence[str]], dict]
"""(config, run directory, --set items) -> {"wall_seconds", "summary"}: one whole run."""


def run_once(config: Path, out: Path, overrides: Sequence[str]) -> dict:
    """`acl run --config CONFIG --out OUT`, in its own process with an empty compile cache;
    its wall seconds (process start included, as the user waits for it) and summary."""
    command = [sys.executable, "-m", "experiments", "run", "--config", str(config)]
    command += ["--out", str(out)] + [f"--set={item}" for item in overrides]
    with tempfile.TemporaryDirectory(prefix="acl_cold_cache_") as cache:
        env = {**os.environ, "ACL_JAX_CACHE": cache}
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    if done.returncode:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise ConfigError(f"acl run --config {config} failed (exit {done.returncode}): {tail}")
    return {"wall_seconds": seconds, "summary": json.loads((out / "summary.json").read_text())}


def rounds(
    baseline: Path,
    configs: Sequence[Path],
    count: int,
    runs_dir: Path,
    overrides: Sequence[str] = (),
    run: Runner = run_once,
    progress: bool = True,
) -> list[dict]:
    """`count` rounds of the baseline then each config; per round, every run's record."""
    names = _names([baseline, *configs])
    out = []
    for r in range(count):
        record = {}
        for name, config in zip(names, [baseline, *configs], strict=True):
            result = run(config, runs_dir / f"round{r}" / name, overrides)
            record[name] = result
            if progress:
                print(f"round {r + 1}/{count} {name}: {result['wall_seconds']:.1f} s", flush=True)
        out.append(record)
    return out


def _names(configs: Sequence[Path]) -> list[str]:
    names = [c.stem for c in configs]
    if len(set(names)) != len(names):
        raise ConfigError(f"configs must have distinct names, got {names}")
    return names


def _shown(path: Path) -> str:
    """A config's path relative to the repository (no machine path in the JSON)."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def ratios(records: Sequence[dict], baseline: str) -> dict[str, dict]:
    """Per config: each round's wall and throughput ratios to the baseline's in that
    round, and their medians (RULE)."""
    summary = {}
    for name in records[0]:
        wall = [r[name]["wall_seconds"] / r[baseline]["wall_seconds"] for r in records]
        speed = [
            r[name]["summary"]["env_steps_per_second"]
            / r[baseline]["summary"]["env_steps_per_second"]
            for r in records
        ]
        summary[name] = {
            "wall_ratio_per_round": wall,
            "throughput_ratio_per_round": speed,
            "median_wall_ratio": statistics.median(wall),
            "median_throughput_ratio": statistics.median(speed),
            "median_wall_seconds": statistics.median(r[name]["wall_seconds"] for r in records),
            "median_env_steps_per_second": statistics.median(
                r[name]["summary"]["env_steps_per_second"] for r in records
            ),
        }
    return summary


def table_rows(summary: dict[str, dict]) -> list[dict]:
    return [
        {
            "config": name,
            "wall s (median)": f"{s['median_wall_seconds']:.1f}",
            "wall / baseline": f"{s['median_wall_ratio']:.3f}",
            "env steps/s (median)": f"{s['median_env_steps_per_second']:,.0f}",
            "steps/s / baseline": f"{s['median_throughput_ratio']:.3f}",
            "rounds": str(len(s["wall_ratio_per_round"])),
        }
        for name, s in summary.items()
    ]


def table(summary: dict[str, dict]) -> str:
    rows = table_rows(summary)
    return format_table(rows, list(rows[0]))


def parser() -> CommandParser:
    parser = CommandParser(
        "bench-overhead",
        __doc__,
        examples=(
            "--baseline point_reach_unfeasible_random "
            "--configs point_reach_unfeasible_alp_gmm --rounds 9",
        ),
    )
    parser.add_argument(
        "--baseline", type=config_path, required=True, help="the Random config (a name or path)"
    )
    parser.add_argument(
        "--configs", type=config_path, nargs="+", required=True, help="the teachers' configs"
    )
    parser.add_argument("--rounds", type=int, default=9, help="rounds (default 9)")
    parser.add_overrides(help="override a config key of every run (repeatable)")
    parser.add_out(default="runs/bench_overhead.json", help="the JSON written")
    parser.add_argument(
        "--keep-runs", default=None, help="keep the run directories here (default: deleted)"
    )
    parser.add_no_progress(help="no line per run")
    return parser


@one_line_errors
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.rounds < 1:
        raise ConfigError(f"--rounds must be >= 1, got {args.rounds}")
    configs = [Path(c) for c in args.configs]
    baseline = Path(args.baseline)
    baseline_name = _names([baseline, *configs])[0]
    with tempfile.TemporaryDirectory(prefix="acl_bench_overhead_") as scratch:
        runs_dir = Path(args.keep_runs) if args.keep_runs else Path(scratch)
        records = rounds(
            baseline, configs, args.rounds, runs_dir, args.overrides, progress=not args.no_progress
        )
    summary = ratios(records, baseline_name)
    # The shared bench writer: the table, the machine and the provenance (commit, versions).
    report(
        "bench-overhead",
        table_rows(summary),
        args.out,
        [],
        rule=RULE,
        baseline=baseline_name,
        configs={c.stem: _shown(c) for c in [baseline, *configs]},
        overrides=list(args.overrides),
        summary=summary,
        rounds=records,
    )
    return 0
