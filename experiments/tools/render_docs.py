"""Render the generated blocks of the README and docs/ from committed result files.

    acl render-docs             # rewrite every block
    acl render-docs --check     # exit 1 if a block differs from what its results say

A block is the text between two comment lines of a Markdown page:

    <!-- render shootout experiments/results/shootout/peer_cartpole -->
    ...generated text...
    <!-- /render -->

The opening line names a renderer of `RENDERERS` and its arguments (paths relative to
the repository root); the text in between is the renderer's output, never typed by hand,
so a page cannot disagree with the results it shows: `--check` fails where it does.

The figure images the pages show are redrawn from committed result files too
(experiments.tools.render_figures): a figure is stale when its data or the image changed
since `experiments/figures/manifest.json` recorded them.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from experiments.cli import ROOT, CommandParser, one_line_errors

BLOCK = re.compile(
    r"(?P<open><!-- render (?P<spec>[^\n]*?) -->\n)(?P<body>.*?)(?P<close><!-- /render -->)",
    re.DOTALL,
)


def shootout_block(root: Path, results: str) -> str:
    """A shoot-out's tables from its committed report (report/report.json): per test
    group the teachers' table, the decision under the registered rule, and the measured
    infeasible and trivial shares; "pending" with the finished cells until the report
    exists."""
    import pandas as pd

    from acl.benchmark import shootout as so

    folder = root / results
    report = folder / "report" / "report.json"
    if not report.is_file():
        suite = folder / "suite.json"
        if not suite.is_file():
            return f"Pending: no cell of `{results}` has finished.\n"
        teachers = list(json.loads(suite.read_text())["teachers"])
        done = [t for t in teachers if (folder / "cells" / f"{t}__default.csv").is_file()]
        return (
            f"Pending: {len(done)} of {len(teachers)} cells finished "
            f"({', '.join(done) or 'none'}); the table appears with the last.\n"
        )
    document = json.loads(report.read_text())
    rule = document["decision_rule"]
    lines = []
    for group, rows in document["groups"].items():
        table = pd.DataFrame(rows).fillna(float("nan"))
        table.attrs["metric"] = rule["metric"]
        lines += [f"**Test group `{group}`**", "", so.table_markdown(table)]
        if group == rule["test_group"] and document["decisions"] is not None:
            verdicts = ", ".join(
                f"{t}: {'helps' if v else 'no difference claimed'}"
                for t, v in document["decisions"].items()
            )
            lines += [f"Decision ({rule['metric']} on `{group}`, Holm-corrected): {verdicts}.", ""]
    lines += [
        "Measured shares of the test tasks (%): solved by no final student, infeasible "
        "(no student and no scripted controller), solved by the scripted controller, "
        "trivial (every final student):",
        "",
        "| group | tasks | no student | infeasible | scripted controller | trivial |",
        "|---|---|---|---|---|---|",
    ]
    for row in document["feasibility"]:
        cells = [
            "–" if row[c] is None else f"{row[c]:.0f}"
            for c in ("no_student", "infeasible", "scripted_solves", "trivial")
        ]
        lines.append(f"| {row['group']} | {row['tasks']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _renderers() -> dict[str, Callable[..., str]]:
    # The README's and the results pages' renderers live beside their pages' concerns.
    from experiments.tools.render_readme import README_RENDERERS
    from experiments.tools.render_results import RESULTS_RENDERERS

    return {"shootout": shootout_block, **README_RENDERERS, **RESULTS_RENDERERS}


RENDERERS: dict[str, Callable[..., str]] = _renderers()
"""Renderer name -> renderer(root, *arguments) -> Markdown."""


def pages(root: Path) -> list[Path]:
    """The README and every page under docs/ (docs/history/ is a record, not rendered)."""
    docs = sorted(p for p in (root / "docs").rglob("*.md") if "history" not in p.parts)
    return [root / "README.md", *docs]


def render_page(root: Path, text: str, where: str) -> str:
    """`text` with every block re-rendered."""
    from acl.core.errors import ConfigError

    def fill(match: re.Match) -> str:
        name, *arguments = shlex.split(match["spec"])
        if name not in RENDERERS:
            raise ConfigError(
                f"{where}: unknown renderer {name!r} (renderers: {', '.join(RENDERERS)})"
            )
        return match["open"] + RENDERERS[name](root, *arguments) + match["close"]

    return BLOCK.sub(fill, text)


def parser() -> CommandParser:
    parser = CommandParser("render-docs", __doc__, examples=("--check",))
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a block is out of date; write nothing"
    )
    parser.add_argument(
        "--redraw-figures",
        action="store_true",
        help="redraw every registered figure, not only the stale ones (after a plotting change)",
    )
    parser.add_argument(
        "--root", default=str(ROOT), help="the repository root whose pages and results to read"
    )
    return parser


@one_line_errors
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    root = Path(args.root)
    stale = []
    for page in pages(root):
        text = page.read_text()
        if "<!-- render " not in text:
            continue
        where = str(page.relative_to(root))
        rendered = render_page(root, text, where)
        if rendered == text:
            continue
        stale.append(where)
        if not args.check:
            page.write_text(rendered)
            print(f"rendered {where}")
    from experiments.tools.render_figures import render_figures

    stale += render_figures(root, check=args.check, redraw=args.redraw_figures)
    if args.check and stale:
        print(f"out of date: {', '.join(stale)}; run acl render-docs", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
