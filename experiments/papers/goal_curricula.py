"""The goal and start-state curricula, one comparison each or all in a row.

    acl goal-curricula svgg [ARGS...]           # SVGG vs random valid goals
    acl goal-curricula recovery [ARGS...]       # SVGG, the maze changes halfway
    acl goal-curricula reverse [ARGS...]        # reverse curriculum, grid maze
    acl goal-curricula reverse_point [ARGS...]  # ... point-mass U-maze
    acl goal-curricula jsrl [ARGS...]           # JSRL vs from scratch
    acl goal-curricula all [--out runs/goal_curricula] [--no-progress]

Each comparison is its own command (`acl svgg`, `acl reverse-curriculum`, `acl jsrl`);
ARGS go to it unchanged (`acl svgg --help` lists them). `all` runs them all with their
default configs, each into its own folder under --out, where
`notebooks/goal_curricula.ipynb` reads them.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from experiments.cli import CONFIGS, CommandParser

COMPARISONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "svgg": ("experiments.papers.svgg", ()),
    "recovery": ("experiments.papers.svgg", ("--recovery",)),
    "reverse": ("experiments.papers.reverse_curriculum", ()),
    "reverse_point": (
        "experiments.papers.reverse_curriculum",
        ("--config", str(CONFIGS / "reverse_point_maze.yaml")),
    ),
    "jsrl": ("experiments.papers.jsrl", ()),
}
"""Comparison -> (its script's module, the arguments it always gets)."""


def run(name: str, argv: list[str]) -> int:
    module, fixed = COMPARISONS[name]
    return importlib.import_module(module).main([*fixed, *argv])


def parser() -> CommandParser:
    parser = CommandParser(
        "goal-curricula",
        __doc__,
        examples=("all --out runs/goal_curricula --no-progress", "recovery --seeds 2"),
    )
    parser.add_argument(
        "comparison",
        choices=[*COMPARISONS, "all"],
        help="one comparison (its own flags follow), or all of them",
    )
    parser.add_out(default="runs/goal_curricula", help="with all: one folder per comparison in it")
    parser.add_no_progress()
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMPARISONS:
        return run(argv[0], argv[1:])
    args = parser().parse_args(argv)
    extra = ["--no-progress"] if args.no_progress else []
    failed = []
    for name in COMPARISONS:
        print(f"== {name}", flush=True)
        if run(name, ["--out", str(Path(args.out) / name), *extra]) != 0:
            failed.append(name)
    if failed:
        print(f"error: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
