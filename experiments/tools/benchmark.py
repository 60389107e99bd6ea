"""TeachMyAgent-style benchmark: teachers x challenges x seeds, resumable.

    acl benchmark --suite quick          # point_reach, 2 CPU cores
    acl benchmark --suite quick_cartpole # the former quick suite
    acl benchmark --suite full           # published scale, for a GPU
    acl benchmark --suite stump_tracks   # TeachMyAgent's Stump Tracks, GPU
    acl benchmark --suite stump_tracks_quick   # its 2-CPU-core sketch
    acl benchmark --config my_suite.yaml --out runs/mine [--seeds N]

Writes OUT/results.csv (one row per teacher, challenge, expert, seed, evaluation), OUT/
provenance.json, and the report (tables as Markdown and LaTeX, plots) in OUT/report/
(`acl report OUT` rebuilds it). Re-running the same command skips the cells already
finished.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from experiments.cli import CONFIGS, CommandParser, one_line_errors

SUITES = {
    "quick": "benchmark_quick.yaml",
    "quick_cartpole": "benchmark_quick_cartpole.yaml",
    "full": "benchmark_full.yaml",
    "stump_tracks": "benchmark_stump_tracks.yaml",
    "stump_tracks_quick": "benchmark_stump_tracks_quick.yaml",
}
"""--suite NAME: its file in experiments/configs/."""


def parser() -> CommandParser:
    parser = CommandParser(
        "benchmark",
        __doc__,
        examples=("--config benchmark_quick_spdl_unfeasible --out runs/spdl", "--suite quick"),
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--suite", choices=sorted(SUITES), help="a named suite")
    parser.add_config(group=which, catalogue="benchmark_*.yaml", help="a suite YAML file")
    parser.add_out(help="results directory (default runs/benchmark_<suite>)")
    parser.add_seeds(help="override the suite's number of seeds")
    parser.add_argument(
        "--stop-after", type=int, default=None, metavar="N", help="stop after N new cells"
    )
    parser.add_argument("--no-report", action="store_true", help="skip tables and plots")
    parser.add_no_progress()
    return parser


@one_line_errors
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from acl.benchmark.runner import is_complete, load_suite, run_suite

    path = Path(args.config) if args.config else CONFIGS / SUITES[args.suite]
    suite = load_suite(path, args.seeds)
    from acl.run.results import enable_compilation_cache

    enable_compilation_cache()
    out = Path(args.out or Path("runs") / f"benchmark_{suite.suite}")
    start = time.perf_counter()
    table = run_suite(suite, out, progress=not args.no_progress, stop_after=args.stop_after)
    wall = time.perf_counter() - start
    print(f"{len(table)} result rows in {out / 'results.csv'} ({wall:.0f} s this call)")
    if not is_complete(suite, out):
        print("some cells are not finished yet; re-run the same command to resume")
        return 0
    if not args.no_report:
        from acl.benchmark.report import write_report
        from acl.benchmark.stats import load_results, summary
        from acl.benchmark.tables import findings_markdown, markdown_table, teachmyagent_findings

        results = load_results(out)
        paths = write_report(results, out / "report")
        print(markdown_table(summary(results)))
        print(findings_markdown(teachmyagent_findings(results)))
        print(f"report: {paths['summary.md'].parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
