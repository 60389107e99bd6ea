"""Compare finished runs side by side: python -m experiments.compare RUN_DIR [RUN_DIR ...]
[--out DIR]. Prints a table and writes comparison.png and comparison.json."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from acl.results import RunDir, format_table, plot_learning_curves


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.compare", description=__doc__)
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--out", default=None, help="where to write the plot and JSON")
    args = parser.parse_args(argv)
    rows, curves = [], {}
    for path in args.runs:
        run = RunDir(path)
        try:
            summary = run.read_summary()
        except FileNotFoundError:
            print(f"error: {path} has no summary.json (unfinished run?)", file=sys.stderr)
            return 2
        label = f"{summary['teacher']} ({summary['name']})"
        curves[label] = run.read_metrics()
        rows.append(
            {
                "run": summary["name"],
                "env": summary["env"],
                "teacher": summary["teacher"],
                "seeds": len(summary["seeds"]),
                "env steps/seed": summary["env_steps"],
                "% mastered (mean ± SE)": f"{summary['final_pct_mastered_mean']:.1f} ± "
                f"{summary['final_pct_mastered_se']:.1f}",
                "test return": f"{summary['final_mean_return_mean']:.1f} ± "
                f"{summary['final_mean_return_se']:.1f}",
                "wall s": f"{summary['wall_seconds']:.0f}",
            }
        )
    print(format_table(rows, list(rows[0])))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        plot_learning_curves(curves, out / "comparison.png", title="% mastered on the test set")
        (out / "comparison.json").write_text(json.dumps(rows, indent=2))
        print(f"plot: {out / 'comparison.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
