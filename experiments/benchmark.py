"""TeachMyAgent-style benchmark: teachers x challenges x seeds, resumable.

    python -m experiments.benchmark --suite quick          # point_reach, 2 CPU cores
    python -m experiments.benchmark --suite quick_cartpole # the former quick suite
    python -m experiments.benchmark --suite full           # published scale, for a GPU
    python -m experiments.benchmark --suite stump_tracks   # TeachMyAgent's Stump Tracks, GPU
    python -m experiments.benchmark --suite stump_tracks_quick   # its 2-CPU-core sketch
    python -m experiments.benchmark --config my_suite.yaml --out runs/mine [--seeds N]

Writes OUT/results.csv (one row per teacher, challenge, expert, seed, evaluation), OUT/
provenance.json, and the report (tables as Markdown and LaTeX, plots) in OUT/report/.
Re-running the same command skips the cells already finished.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from acl.core.errors import ConfigError
from experiments.cli import add_seeds_argument

SUITES = {
    "quick": "experiments/configs/benchmark_quick.yaml",
    "quick_cartpole": "experiments/configs/benchmark_quick_cartpole.yaml",
    "full": "experiments/configs/benchmark_full.yaml",
    "stump_tracks": "experiments/configs/benchmark_stump_tracks.yaml",
    "stump_tracks_quick": "experiments/configs/benchmark_stump_tracks_quick.yaml",
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m experiments.benchmark", description=__doc__)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--suite", choices=sorted(SUITES), help="a named suite")
    which.add_argument("--config", help="a suite YAML file")
    parser.add_argument(
        "--out", default=None, help="results directory (default runs/benchmark_<suite>)"
    )
    add_seeds_argument(parser, help="override the number of seeds")
    parser.add_argument(
        "--stop-after", type=int, default=None, metavar="N", help="stop after N new cells"
    )
    parser.add_argument("--no-report", action="store_true", help="skip tables and plots")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from acl.benchmark.runner import is_complete, load_suite, run_suite

    path = (
        Path(args.config)
        if args.config
        else Path(__file__).resolve().parent.parent / SUITES[args.suite]
    )
    try:
        suite = load_suite(path, args.seeds)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    from acl.run.results import enable_compilation_cache

    enable_compilation_cache()
    out = Path(args.out or Path("runs") / f"benchmark_{suite.suite}")
    start = time.perf_counter()
    try:
        table = run_suite(suite, out, progress=not args.no_progress, stop_after=args.stop_after)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    wall = time.perf_counter() - start
    print(f"{len(table)} result rows in {out / 'results.csv'} ({wall:.0f} s this call)")
    if not is_complete(suite, out):
        print("some cells are not finished yet; re-run the same command to resume")
        return 0
    if not args.no_report:
        from acl.benchmark.report import (
            findings_markdown,
            load_results,
            markdown_table,
            summary,
            teachmyagent_findings,
            write_report,
        )

        results = load_results(out)
        paths = write_report(results, out / "report")
        print(markdown_table(summary(results)))
        print(findings_markdown(teachmyagent_findings(results)))
        print(f"report: {paths['summary.md'].parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
