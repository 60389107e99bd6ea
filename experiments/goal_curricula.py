"""The goal and start-state curricula, one command each or all in a row.

    python -m experiments.goal_curricula svgg [ARGS...]      # SVGG vs random valid goals
    python -m experiments.goal_curricula recovery [ARGS...]  # SVGG, the maze changes halfway
    python -m experiments.goal_curricula reverse [ARGS...]   # reverse curriculum, grid maze
    python -m experiments.goal_curricula reverse_point [ARGS...]  # ... point-mass U-maze
    python -m experiments.goal_curricula jsrl [ARGS...]      # JSRL vs from scratch
    python -m experiments.goal_curricula all [--out runs/goal_curricula] [--no-progress]

Each comparison is its own script (`experiments.svgg`, `experiments.reverse_curriculum`,
`experiments.jsrl`); ARGS go to it unchanged (`--help` lists them). `all` runs them all
with their default configs, each into its own folder under --out, where
`notebooks/goal_curricula.ipynb` reads them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

COMPARISONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "svgg": ("experiments.svgg", ()),
    "recovery": ("experiments.svgg", ("--recovery",)),
    "reverse": ("experiments.reverse_curriculum", ()),
    "reverse_point": (
        "experiments.reverse_curriculum",
        ("--config", str(Path(__file__).parent / "configs" / "reverse_point_maze.yaml")),
    ),
    "jsrl": ("experiments.jsrl", ()),
}


def run(name: str, argv: list[str]) -> int:
    module, fixed = COMPARISONS[name]
    return importlib.import_module(module).main([*fixed, *argv])


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m experiments.goal_curricula",
        description="SVGG, SVGG recovery, reverse curriculum and JSRL comparisons",
    )
    parser.add_argument("comparison", choices=[*COMPARISONS, "all"])
    if argv and argv[0] in COMPARISONS:
        return run(argv[0], argv[1:])
    parser.add_argument("--out", default="runs/goal_curricula")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
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
