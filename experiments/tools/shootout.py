"""Which teacher helps on my env? Every teacher on one env config, one report.

The same env, budget, test set and seeds for every teacher, resumable cell by cell
(acl.benchmark.shootout).

    acl shootout --config peer_cartpole --teachers random alp_gmm covar_gmm riac sfl:cpu plr
    acl shootout --config peer_cartpole --teachers ... --pilot        # seeds 0-7, logged
    acl shootout --config peer_cartpole --teachers ... --protocol P.yaml --first-seed 100 --seeds 16
    git add P.yaml && git commit -m "protocol"                        # before the run
    acl shootout --config peer_cartpole --teachers ... --confirm P.yaml

`--teachers`: NAME (its documented defaults) or NAME:PRESET (a named preset, e.g.
sfl:cpu); `--teacher-set NAME.KEY=VALUE` passes one teacher a setting. A teacher the env
cannot serve is refused with one line and the others run. The first of random, dr is the
baseline (`--baseline` to choose).

Pre-registration: `--pilot` runs seeds 0-7 into OUT/pilot and appends its settings and
results to the pilot log; `--protocol FILE` writes the protocol (the resolved configs and
budget, the metric and test group, the confirmatory seeds, the decision rule, and every
pilot of the log) and runs nothing; `--confirm FILE` runs the protocol's confirmatory seeds
and refuses to start if the configs differ from the protocol's, if the seeds overlap the
pilot's, or if the protocol is not committed; its provenance records the protocol's hash
and commit, and the report checks that commit is an ancestor of the run's.

OUT (default runs/shootout/<config name>, with /pilot or /confirm): results.csv,
cells/*.csv and *.npz, provenance.json, and report/ (report.md, report.json, curves.png,
samples.png, iqm.png). Re-running the same command skips finished cells; `acl shootout
--report OUT` rebuilds the report alone.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

from experiments.cli import CommandParser, one_line_errors


def parser() -> CommandParser:
    parser = CommandParser(
        "shootout",
        __doc__,
        examples=(
            "--config gymnax_cartpole_jaxued_random --teachers random alp_gmm plr --seeds 2",
            "--config peer_cartpole --teachers random alp_gmm sfl:cpu --pilot",
            "--report runs/shootout/peer_cartpole/confirm",
        ),
    )
    parser.add_config(help="the env config (its teacher is replaced by each of --teachers)")
    parser.add_argument(
        "--teachers", nargs="+", metavar="NAME[:PRESET]", help="the teachers compared"
    )
    parser.add_argument(
        "--teacher-set",
        action="append",
        default=[],
        metavar="NAME.KEY=VALUE",
        help="a setting of one teacher (repeatable), e.g. sfl.buffer_update_frequency=8",
    )
    parser.add_overrides(help="override an env config key for every teacher (repeatable)")
    parser.add_preset()
    parser.add_seeds()
    parser.add_argument(
        "--first-seed", type=int, default=None, help="the first seed (default: the config's)"
    )
    parser.add_out(help="results directory (default runs/shootout/<config name>[/pilot|/confirm])")
    parser.add_argument("--baseline", default=None, help="the teacher compared against")
    parser.add_argument(
        "--native-space",
        action="store_true",
        help="teachers work on the env's own task space and level generator, not in the "
        "unit cube of the benchmark's default challenge (for envs whose levels are not "
        "uniform over a box, e.g. XLand's rulesets)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--pilot", action="store_true", help="run seeds 0-7 and log the pilot")
    mode.add_argument(
        "--protocol", metavar="FILE", help="write the protocol of the confirmatory run; run nothing"
    )
    mode.add_argument("--confirm", metavar="FILE", help="the confirmatory run of a protocol")
    mode.add_argument("--report", metavar="OUT", help="rebuild the report of a finished shoot-out")
    parser.add_argument(
        "--pilot-log",
        default=None,
        help="the pilot log (default runs/shootout/<config name>/pilots.jsonl)",
    )
    parser.add_argument(
        "--metric", default="pct_mastered", help="--protocol: the decision's metric"
    )
    parser.add_argument(
        "--test-group", default="all", help="--protocol: the test group the decision reads"
    )
    parser.add_argument("--note", default="", help="--protocol: a note kept in the protocol")
    parser.add_argument(
        "--stop-after", type=int, default=None, metavar="N", help="stop after N new cells"
    )
    parser.add_argument("--no-report", action="store_true", help="skip the report")
    parser.add_no_progress()
    return parser


def _teacher_settings(items: list[str]) -> dict[str, dict]:
    from acl.config import apply_overrides
    from acl.core.errors import ConfigError

    settings: dict[str, dict] = {}
    for item in items:
        name, dot, rest = item.partition(".")
        if not dot or "=" not in rest:
            raise ConfigError(f"--teacher-set: expected NAME.KEY=VALUE, got {item!r}")
        settings[name] = apply_overrides(settings.get(name, {}), [rest])
    return settings


@one_line_errors
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from acl.benchmark import shootout as so
    from acl.core.errors import ConfigError

    if args.report:
        paths = so.write_shootout_report(Path(args.report), args.baseline)
        print(paths["report.md"].read_text())
        print(f"report: {paths['report.md'].parent}")
        return 0
    if not args.config or not args.teachers:
        raise ConfigError("acl shootout needs --config and --teachers (or --report OUT)")

    from acl.benchmark.runner import is_complete, run_suite
    from acl.config import load_config
    from acl.run.results import enable_compilation_cache

    config = load_config(args.config, args.overrides, None, args.preset)
    teachers = so.parse_teachers(args.teachers, _teacher_settings(args.teacher_set))
    protocol = so.load_protocol(Path(args.confirm)) if args.confirm else None
    if args.pilot:
        seeds = (so.PILOT_SEEDS[0], len(so.PILOT_SEEDS))
        if args.seeds is not None or args.first_seed is not None:
            raise ConfigError("--pilot runs seeds 0-7; drop --seeds and --first-seed")
    elif protocol is not None and args.seeds is None and args.first_seed is None:
        registered = protocol["confirmatory_seeds"]
        seeds = (registered[0], len(registered))
    else:
        seeds = (
            config.seed if args.first_seed is None else args.first_seed,
            config.num_seeds if args.seeds is None else args.seeds,
        )
    suite, refused = so.shootout_suite(config, teachers, seeds, not args.native_space)
    warnings = so.schedule_warnings(suite)
    for line in (*refused, *warnings):
        print(line)
    labels = [label for label, _ in suite.teachers]
    baseline = args.baseline or so.default_baseline(labels)
    root = Path("runs") / "shootout" / suite.suite
    pilot_log = Path(args.pilot_log) if args.pilot_log else root / "pilots.jsonl"

    if args.protocol:
        rule = so.DecisionRule(args.metric, args.test_group, baseline)
        command = "acl shootout " + " ".join(
            shlex.quote(a)
            for a in _confirm_argv(argv if argv is not None else sys.argv[1:], args.protocol)
        )
        so.write_protocol(
            Path(args.protocol), suite, command, rule, so.read_pilots(pilot_log), args.note
        )
        print(f"protocol written: {args.protocol}; commit it, then run: {command}")
        return 0

    record = None
    if args.confirm:
        record = so.check_protocol(Path(args.confirm), suite)
    mode = "pilot" if args.pilot else "confirm" if args.confirm else ""
    out = Path(args.out) if args.out else (root / mode if mode else root)
    enable_compilation_cache()
    start = time.perf_counter()
    table = run_suite(
        suite,
        out,
        progress=not args.no_progress,
        stop_after=args.stop_after,
        record={
            "refused": [str(r) for r in refused],
            "warnings": list(warnings),
            **({"protocol": record} if record else {}),
        },
    )
    seconds = time.perf_counter() - start
    print(f"{len(table)} result rows in {out / 'results.csv'} ({seconds:.0f} s this call)")
    if not is_complete(suite, out):
        print("some cells are not finished yet; re-run the same command to resume")
        return 0
    if args.pilot:
        so.record_pilot(pilot_log, suite, out, table)
        print(f"pilot logged in {pilot_log}")
    if not args.no_report:
        paths = so.write_shootout_report(out, args.baseline)
        print(paths["report.md"].read_text())
        print(f"report: {paths['report.md'].parent}")
    return 0


def _confirm_argv(argv: list[str], protocol: str) -> list[str]:
    """The command line of the confirmatory run: this one with --protocol FILE as
    --confirm FILE and without the protocol-only flags."""
    dropped = {
        "--protocol",
        "--seeds",
        "--first-seed",
        "--metric",
        "--test-group",
        "--note",
        "--pilot-log",
    }
    kept, skip = [], False
    for item in argv:
        if skip:
            skip = False
            continue
        flag = item.split("=", 1)[0]
        if flag in dropped:
            skip = "=" not in item
            continue
        kept.append(item)
    return [*kept, "--confirm", protocol]


if __name__ == "__main__":
    sys.exit(main())
