"""The `acl` command: one subcommand per user-facing script of experiments/.

    acl --help                 # every subcommand, grouped
    acl COMMAND --help         # its flags, configs, presets and an example
    acl run --config cartpole_random --seeds 2 --out runs/try

A subcommand is one `Command` line in COMMANDS: its name, its module under experiments/
and the line `acl --help` shows. The module has `parser() -> cli.CommandParser` (its flags;
`prog` is `acl <name>`) and `main(argv=None) -> int`; `acl NAME ARGS...` runs
`main` as `python -m MODULE ARGS...` does, and a module is imported only when its
command runs. `python -m experiments` is `acl`.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from dataclasses import dataclass

from experiments.cli import SHARED_FLAGS, OneLineParser


@dataclass(frozen=True)
class Command:
    """One `acl` subcommand."""

    name: str
    module: str
    """The module holding its `parser()` and `main(argv)`, under experiments: its folder
    (tools, papers, bench) is its group in `acl --help`."""
    summary: str
    """Its line in `acl --help`."""

    @property
    def group(self) -> str:
        return self.module.split(".")[0]

    @property
    def import_path(self) -> str:
        return f"experiments.{self.module}"


GROUPS = {
    "tools": "run tools (experiments/tools/)",
    "papers": "paper reproductions (experiments/papers/)",
    "bench": "benchmarks and profiles (experiments/bench/)",
}

COMMANDS = (
    Command("run", "tools.run", "train one config (seeds vmapped) into a run directory"),
    Command("compare", "tools.compare", "finished runs side by side: table, Welch's p, curves"),
    Command("evaluate", "tools.evaluate", "re-run the test set with a run's saved policy"),
    Command(
        "benchmark", "tools.benchmark", "teachers x challenges x seeds, resumable, with its report"
    ),
    Command(
        "shootout",
        "tools.shootout",
        "which teacher helps on my env: every teacher, one report, pre-registered",
    ),
    Command(
        "report", "tools.report", "tables, statistics and figures of a benchmark's results.csv"
    ),
    Command(
        "helps-where",
        "tools.helps_where",
        "which teacher helps where: one table over every space, from committed results",
    ),
    Command("risk", "tools.risk", "CVaR over sampled levels of finished runs' students"),
    Command("render-maze-levels", "tools.render_maze_levels", "draw a named set of held-out mazes"),
    Command(
        "render-docs", "tools.render_docs", "re-render the docs' blocks from committed results"
    ),
    Command(
        "hparams-docs",
        "tools.hparams_docs",
        "regenerate docs/teachers.md, agents.md, envs.md, outputs.md",
    ),
    Command(
        "toy-bandit",
        "papers.toy_bandit",
        "teachDeepRL's toy bandit: Random, RIAC, ALP-GMM, Covar-GMM",
    ),
    Command(
        "reference-teachers",
        "papers.reference_teachers",
        "teachDeepRL's teacher logic in numpy on the toy bandit",
    ),
    Command("bit-flip", "papers.bit_flip", "HER's bit flipping: DQN and DQN+HER"),
    Command("goal-curricula", "papers.goal_curricula", "the goal and start curricula, one or all"),
    Command("jsrl", "papers.jsrl", "Jump-Start RL vs learning from scratch"),
    Command(
        "reverse-curriculum",
        "papers.reverse_curriculum",
        "reverse curriculum vs uniform and fixed starts",
    ),
    Command(
        "svgg", "papers.svgg", "SVGG vs uniform and valid goals (--recovery: the maze changes)"
    ),
    Command(
        "stump-tracks-ppo", "papers.stump_tracks_ppo", "does PPO learn to walk on Stump Tracks"
    ),
    Command(
        "ued-mazes",
        "papers.ued_mazes",
        "DR, PLR, robust PLR, ACCEL, PAIRED (SFL) on held-out mazes",
    ),
    Command("bench-ppo", "bench.ppo", "PPO training throughput beside the raw env"),
    Command("bench-dqn", "bench.dqn", "DQN+HER training throughput on bit flipping"),
    Command("bench-teachers", "bench.teachers", "each teacher's overhead against Random's steps/s"),
    Command(
        "bench-overhead",
        "bench.overhead",
        "whole acl run commands against Random's, cold cache, in rounds",
    ),
    Command("bench-devices", "bench.devices", "training throughput against the device count"),
    Command("bench-gmm-fit", "bench.gmm_fit", "what one ALP-GMM fit costs"),
    Command(
        "bench-teachdeeprl",
        "bench.teachdeeprl",
        "teachDeepRL's own teachers on its toy env, timed one process per seed",
    ),
    Command("bench-maze", "bench.maze", "the maze beside JaxUED's, and PLR's training overhead"),
    Command(
        "bench-stump-tracks", "bench.stump_tracks", "Stump Tracks' throughput beside Box2D's walker"
    ),
    Command(
        "bench-brax-goal", "bench.brax_goal", "brax_goal's compile time and steps/s per pipeline"
    ),
    Command(
        "profile-maze-student", "bench.profile_maze_student", "where the maze student's time goes"
    ),
    Command(
        "checkpoint-size", "bench.checkpoint_size", "the size of one checkpoint of a config's run"
    ),
    Command("gmm-k-range", "bench.gmm_k_range", "the mixture sizes a GMM teacher's fits choose"),
    Command(
        "xland-generator", "bench.xland_generator", "our XLand ruleset generator vs the reference's"
    ),
)
BY_NAME = {command.name: command for command in COMMANDS}


def overview() -> str:
    """`acl --help`'s list: the commands by group, then the shared flags and examples."""
    width = max(len(c.name) for c in COMMANDS) + 2
    lines = []
    for group, heading in GROUPS.items():
        lines += [f"{heading}:"]
        lines += [f"  {c.name:<{width}}{c.summary}" for c in COMMANDS if c.group == group]
        lines += [""]
    lines += [
        "shared flags, the same in every command that takes them (acl COMMAND --help):",
        f"  {' '.join(SHARED_FLAGS)}",
        "",
        "examples:",
        "  acl run --config cartpole_random --seeds 2 --out runs/try",
        "  acl compare runs/make_run/random runs/make_run/alp_gmm --out runs/make_run",
        "  acl benchmark --suite quick",
        "",
        "docs/cli.md describes every command.",
    ]
    return "\n".join(lines)


def top_parser() -> OneLineParser:
    import argparse

    parser = OneLineParser(
        prog="acl",
        usage="acl COMMAND [ARGS...]",
        description=(
            "Automatic curriculum learning in JAX: runs, reports, reproductions, benchmarks.\n"
            "`acl COMMAND --help` gives a command's flags, configs, presets and examples."
        ),
        epilog=overview(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", metavar="COMMAND", help="one of the commands below")
    return parser


def command(name: str) -> Command:
    """The command called `name`; SystemExit(2) with one line naming the closest."""
    if name in BY_NAME:
        return BY_NAME[name]
    close = difflib.get_close_matches(name, list(BY_NAME), n=2, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    top_parser().error(f"unknown command {name!r}{hint}")


def load(name: str):
    """The module of command `name`."""
    return importlib.import_module(command(name).import_path)


def main(argv: list[str] | None = None) -> int:
    """`acl COMMAND ARGS...`. Given argv (in-process), the command's `main` gets the rest of
    it; from the command line (argv None), the command runs as its own script would, with
    `sys.argv` = [acl, ARGS...] (so it may restart the process: cli.restart_with_host_devices)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help"):
        top_parser().parse_args(args[:1])  # the overview, or "COMMAND is required": exits
    module = load(args[0])
    if argv is None:
        sys.argv = [f"{sys.argv[0]} {args[0]}", *args[1:]]
        return module.main()
    return module.main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
