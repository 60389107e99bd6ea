"""Teacher overhead: training throughput with each teacher on the same config, as a ratio
to Random's, measured in the same run.

    python -m experiments.bench_teachers
        [--config experiments/configs/cartpole_unfeasible_alp_gmm.yaml]
        [--teachers random alp_gmm covar_gmm riac] [--iterations N] [--rounds 5]
        [--warmup 0] [--out FILE.json]

Each teacher's training iterations (all seeds vmapped, no evaluation; by default all of the
config's run, so early iterations with many short episodes and late ones with few weigh
as they do in training) are compiled as one call, then timed in `rounds` rounds, one call
per teacher per round, in turn: a
load that drifts on a shared machine then weighs on every teacher alike. Per round,
overhead = 1 - (steps/s with the teacher) / (steps/s with Random); the table gives the
median over rounds (and each teacher's median steps/s). Teacher keys of the config
(fit_every, preset...) are kept for the teachers that accept them.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

from acl.benchmark.timing import compile_training, report
from acl.build import make_train
from acl.config import ComponentConfig, config_keys, load_config
from acl.teachers import TEACHERS
from experiments.cli import add_overrides_argument, add_seeds_argument


def with_teacher(config, name: str):
    accepted = config_keys(TEACHERS.get(name), skip=("task_space", "context"))
    kwargs = {k: v for k, v in config.teacher.kwargs.items() if k in accepted}
    return dataclasses.replace(config, teacher=ComponentConfig(name, kwargs))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.bench_teachers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", default="experiments/configs/cartpole_unfeasible_alp_gmm.yaml")
    parser.add_argument("--teachers", nargs="+", default=["random", "alp_gmm"])
    add_seeds_argument(parser, help=None)
    add_overrides_argument(parser)
    parser.add_argument(
        "--iterations", type=int, default=None, help="iterations per timed call (default: the run)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="timed calls per teacher")
    parser.add_argument(
        "--warmup", type=int, default=0, help="untimed iterations first (whole calls)"
    )
    parser.add_argument("--out", default="runs/bench_teachers.json")
    args = parser.parse_args(argv)
    if args.rounds < 1 or (args.iterations or 1) < 1 or args.warmup < 0:
        parser.error("--rounds and --iterations must be >= 1, --warmup >= 0")
    base = load_config(args.config, args.overrides, num_seeds=args.seeds)
    teachers = ["random"] + [t for t in args.teachers if t != "random"]
    trainers = {name: make_train(with_teacher(base, name)) for name in teachers}
    reference = trainers["random"]
    iterations = args.iterations or reference.num_chunks * reference.iterations_per_chunk

    compiled = {
        name: compile_training(trainer, iterations, args.warmup)
        for name, trainer in trainers.items()
    }
    seconds = {name: [] for name in teachers}
    for _ in range(args.rounds):
        for name in teachers:
            seconds[name].append(compiled[name].time())

    results = {}
    for name in teachers:
        run = compiled[name]
        ratios = [r / t for r, t in zip(seconds["random"], seconds[name], strict=True)]
        median_seconds = statistics.median(seconds[name])
        results[name] = {
            "compile_seconds": run.compile_seconds,
            "warmup_iterations": run.warmup_iterations,
            "env_steps": run.env_steps,
            "seconds": seconds[name],
            "steps_per_second": run.env_steps / median_seconds,
            "overhead": 1 - statistics.median(ratios),
            "overhead_per_round": [1 - r for r in ratios],
        }
    rows = [
        {
            "teacher": name,
            "steps/s": f"{r['steps_per_second']:,.0f}",
            "overhead vs random": f"{r['overhead']:+.1%}",
            "range over rounds": f"{min(r['overhead_per_round']):+.1%} to "
            f"{max(r['overhead_per_round']):+.1%}",
            "compile s": f"{r['compile_seconds']:.1f}",
        }
        for name, r in results.items()
    ]
    report(
        "bench_teachers",
        rows,
        args.out,
        list(range(base.num_seeds)),
        config=base.to_dict(),
        iterations=iterations,
        rounds=args.rounds,
        results=results,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
