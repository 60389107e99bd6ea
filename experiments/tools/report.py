"""A benchmark's report from its tidy results table (acl.benchmark.report).

    acl report RESULTS_DIR [--out DIR] [--baseline random] [--reps 2000] [--metric final|mean]

Prints the Markdown table (final % mastered, mean ± SE over seeds, Welch's t-test against
the baseline) and, with --out, writes the report files: summary.md and summary.tex (the
table, the risk tables, the ranks and TeachMyAgent's findings), summary.json (the long
table, rliable's IQM with its stratified-bootstrap CIs, provenance), iqm.png,
profiles.png, radar.png and curves.png. `--metric mean` scores each run by its mean %
mastered over all its evaluations (the area under its learning curve, divided by the
number of evaluations) instead of its final one: it tells apart teachers that all reach a
ceiling at different speeds.
"""

from __future__ import annotations

import sys
from pathlib import Path

from experiments.cli import CommandParser, one_line_errors


def parser() -> CommandParser:
    from acl.benchmark.stats import METRICS

    parser = CommandParser(
        "report",
        __doc__,
        examples=(
            "runs/benchmark_quick --out runs/benchmark_quick/report",
            "tests/fixtures/benchmark_tiny --metric mean",
        ),
    )
    parser.add_argument("results_dir", help="folder holding results.csv (or the file)")
    parser.add_out(help="write the report files here (default: print the table only)")
    parser.add_argument("--baseline", default="random", help="teacher to test and normalise by")
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap resamples for the CIs")
    parser.add_argument(
        "--metric",
        choices=METRICS,
        default="final",
        help="score of a run: its final %% mastered, or its mean over evaluations",
    )
    return parser


@one_line_errors  # a missing or malformed results table, an absent baseline
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    from acl.benchmark.report import write_report
    from acl.benchmark.stats import as_metric, load_results, summary
    from acl.benchmark.tables import markdown_table

    results = load_results(args.results_dir)
    print(markdown_table(summary(as_metric(results, args.metric), args.baseline)), end="")
    if args.out:
        paths = write_report(
            args.results_dir, args.out, args.baseline, args.reps, metric=args.metric
        )
        print(f"\nreport: {Path(args.out)} ({', '.join(paths)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
