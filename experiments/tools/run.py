"""Run one experiment: train a config's seeds (vmapped) into a run directory.

    acl run --config NAME_OR_PATH [--preset NAME] [--set key=value ...] [--seeds N]
        [--out DIR] [--sweep key=v1,v2,... ...] [--log tensorboard|wandb]

`--preset NAME` merges the config's `presets: {NAME: {...}}` section (e.g. a `cpu`
budget) before the `--set` overrides. `--sweep` runs every combination of the swept
numeric hyperparameters x seeds as one compiled program (acl.run.sweep); `--log` mirrors the
run directory to TensorBoard or offline Weights & Biases (acl.run.loggers).

Continue a run that was killed or stopped by --max-minutes: acl run --resume RUN_DIR (its
config is the run's own; only loop.checkpoint_every and loop.keep_checkpoints may be
--set).

Over several processes (hosts), each runs the same command with `--coordinator
HOST:PORT --num-processes P --process-id I`, or with `--distributed` where JAX detects the
cluster itself (SLURM...): docs/scaling.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Nothing of acl but its errors at the top: importing an env starts JAX's backend, which
# must wait for --coordinator's jax.distributed.initialize (main imports the library after).
from acl.core.errors import ConfigError
from experiments.cli import (
    CommandParser,
    minutes_budget,
    one_line_errors,
    restart_with_host_devices,
)


def parser() -> CommandParser:
    parser = CommandParser(
        "run",
        __doc__,
        examples=(
            "--config cartpole_random --seeds 2 --out runs/try",
            "--config maze_dr --preset cpu --set loop.total_env_steps=100000",
            "--resume runs/try",
        ),
    )
    parser.add_config()
    parser.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR from its newest checkpoint, with its own config",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="with --resume: resume even under other package versions than the run's",
    )
    parser.add_overrides()
    parser.add_preset()
    parser.add_seeds()
    parser.add_out(help="run directory (default runs/<name>)")
    parser.add_no_progress()
    parser.add_devices(
        help="split the seeds over this many devices (default: all); seeds that do not "
        "divide evenly are padded with extra seeds whose results are dropped "
        "(docs/scaling.md)",
    )
    parser.add_argument(
        "--coordinator", default=None, metavar="HOST:PORT", help="process 0's address"
    )
    parser.add_argument("--num-processes", type=int, default=None, help="processes in all")
    parser.add_argument("--process-id", type=int, default=None, help="this process, from 0")
    parser.add_argument(
        "--distributed",
        action="store_true",
        help="one of several processes, found by JAX's detection of the cluster (SLURM...)",
    )
    parser.add_max_minutes(
        help="wall-clock budget, compile included: no evaluation chunk starts after it; "
        "the summary then projects the full run's time",
    )
    parser.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="KEY=V1,V2,...",
        help="sweep a numeric agent or teacher hyperparameter, e.g. "
        "agent.learning_rate=1e-4,3e-4,1e-3; repeat to cross several; all combinations x "
        "seeds run as one program, each into OUT/<key=value>",
    )
    parser.add_argument(
        "--log",
        action="append",
        default=[],
        choices=("tensorboard", "wandb"),
        help="also log to TensorBoard (RUN_DIR/tensorboard) or offline W&B (RUN_DIR/wandb)",
    )
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    parser_ = parser()
    args = parser_.parse_args(argv)
    if (args.config is None) == (args.resume is None):
        parser_.error("give one of --config and --resume")
    if args.resume is not None:
        given = [
            flag
            for flag, value in (
                ("--preset", args.preset),
                ("--seeds", args.seeds),
                ("--out", args.out),
                ("--sweep", args.sweep or None),
            )
            if value is not None
        ]
        if given:
            parser_.error(f"{given[0]} cannot change a resumed run (its config is in RUN_DIR)")
    elif args.force:
        parser_.error("--force applies to --resume only")
    return args


def sweep_main(args: argparse.Namespace) -> int:
    """`--sweep`: run_sweep, then its table."""
    from acl.config import load_config
    from acl.run.results import check_run_dir, enable_compilation_cache
    from acl.run.sweep import SWEEP_FILE, format_sweep, parse_sweep, run_sweep

    if args.max_minutes is not None:
        raise ConfigError("--max-minutes applies to single runs, not to --sweep")
    if args.devices not in (None, 1):
        raise ConfigError("--devices applies to single runs: a sweep runs on one device")
    config = load_config(args.config, args.overrides, args.seeds, args.preset)
    out = Path(args.out or Path("runs") / f"{config.name}-sweep")
    check_run_dir(out)
    sweep = parse_sweep(args.sweep)
    enable_compilation_cache()
    rows = run_sweep(config, sweep, out, progress=not args.no_progress, log=args.log)
    print(format_sweep(rows))
    for row in rows:
        if row["diverged"]:
            print(f"{row['run_dir']} diverged: {row['diverged']}")
    print(f"sweep table: {out / SWEEP_FILE}")
    return 0


@one_line_errors  # a bad config, flag or run directory; a resume under another layout
def main(argv=None) -> int:
    args = parse_args(argv)
    distributed = (args.coordinator, args.num_processes, args.process_id)
    if args.distributed or any(x is not None for x in distributed):
        from acl.run.distributed import initialize_processes

        try:
            initialize_processes(*distributed)
        except (ValueError, RuntimeError) as err:  # a bad flag (ConfigError) or no cluster
            print(f"error: {err}", file=sys.stderr)
            return 2
    if args.sweep:
        return sweep_main(args)
    from acl.build import make_train
    from acl.config import load_config
    from acl.loop.devices import device_mesh
    from acl.run.distributed import writes_run_dir as is_writer
    from acl.run.experiment import task_names
    from acl.run.loggers import close_all, make_loggers
    from acl.run.results import check_run_dir, format_mean_se, format_table

    max_seconds = minutes_budget(args.max_minutes)
    if args.resume is not None:
        from acl.run.checkpoint import resume_config

        out = Path(args.resume)
        config, warnings = resume_config(out, args.overrides, args.force)
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
    else:
        config = load_config(args.config, args.overrides, args.seeds, args.preset)
        out = Path(args.out or Path("runs") / config.name)
        check_run_dir(out)
    if config.loop.overlap_teacher and argv is None:
        restart_with_host_devices()  # returns if JAX has two devices
    trainer = make_train(config)  # builds the test set too
    device_mesh(args.devices)  # more --devices than JAX sees fails here, before the run
    # Process 0 alone writes the run directory, so it alone mirrors it.
    loggers = make_loggers(args.log, out, config, task_names(trainer)) if is_writer() else []

    from acl.run.checkpoint import RunInterrupted
    from acl.run.experiment import TrainingDiverged, run_experiment, time_limit_line
    from acl.run.results import enable_compilation_cache

    enable_compilation_cache()
    try:
        summary = run_experiment(
            config,
            out,
            progress=not args.no_progress,
            trainer=trainer,
            max_seconds=max_seconds,
            resume=args.resume is not None,
            loggers=loggers,
            devices=args.devices,
        )
    except TrainingDiverged as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except RunInterrupted as stop:
        print(f"{stop}\nresume with: acl run --resume {out}", file=sys.stderr)
        return 128 + stop.signum
    finally:
        close_all(loggers)
    if not is_writer():
        return 0  # process 0 wrote the run directory and prints its table
    row = {
        "env": summary["env"],
        "teacher": summary["teacher"],
        "seeds": len(summary["seeds"]),
        "env steps/seed": summary["env_steps"],
        "% mastered": format_mean_se(
            summary["final_pct_mastered_mean"], summary["final_pct_mastered_se"]
        ),
        "test return": format_mean_se(
            summary["final_mean_return_mean"], summary["final_mean_return_se"]
        ),
    }
    for metric, label in (("solve_sampled", "solve (sampled)"), ("solve_greedy", "solve (greedy)")):
        if f"final_{metric}_mean" in summary:
            row[label] = format_mean_se(
                summary[f"final_{metric}_mean"], summary[f"final_{metric}_se"], digits=2
            )
    row |= {
        "compile s": f"{summary['compile_seconds']:.1f}",
        "wall s": f"{summary['wall_seconds']:.1f}",
        "steps/s": f"{summary['env_steps_per_second']:,.0f}",
    }
    print(format_table([row], list(row)))
    line = time_limit_line(summary)
    if line:
        print(line)
        print(f"resume with: acl run --resume {out}")
    print(f"run directory: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
