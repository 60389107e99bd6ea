"""Teacher overhead: each teacher's training throughput as a ratio to Random's.

Every teacher runs the same config, measured in the same run.

    acl bench-teachers
        [--config experiments/configs/cartpole_unfeasible_alp_gmm.yaml]
        [--teachers random alp_gmm covar_gmm riac] [--iterations N] [--rounds 5]
        [--warmup 0] [--random-config FILE.yaml] [--out FILE.json]
    acl bench-teachers --suite experiments/configs/benchmark_quick.yaml
        [--setting unfeasible] [--teachers LABEL ...] ...

Each teacher's training iterations (all seeds vmapped, no evaluation; by default all of the
config's run, so early iterations with many short episodes and late ones with few weigh
as they do in training) are compiled as one call, then timed in `rounds` rounds, one call
per teacher per round, in turn: a
load that drifts on a shared machine then weighs on every teacher alike. Per round,
overhead = 1 - (steps/s with the teacher) / (steps/s with Random), and the time ratio =
(seconds with the teacher) / (seconds with Random); the table gives their medians over
rounds (and each teacher's median steps/s). Teacher keys of the config (fit_every,
preset...) are kept for the teachers that accept them. With `--suite`, each teacher is a
suite's labelled teacher with its own keys, on the suite's base config under the
challenge `--setting` (default: unfeasible), and `--teachers` picks labels (default: all).
`--random-config`: Random runs its own config instead (e.g. `make run`'s two configs, whose
loop layouts differ: ALP-GMM's teacher runs beside the agent, `loop.overlap_teacher`).
"""

from __future__ import annotations

import dataclasses
import statistics

from acl.benchmark.runner import load_suite
from acl.benchmark.timing import compile_training, report
from acl.build import make_train, run_data
from acl.config import ChallengeConfig, ComponentConfig, config_keys, load_config
from acl.teachers import TEACHERS
from experiments.cli import CommandParser, config_path, restart_with_host_devices


def with_teacher(config, name: str):
    accepted = config_keys(TEACHERS.get(name), skip=("task_space", "context"))
    kwargs = {k: v for k, v in config.teacher.kwargs.items() if k in accepted}
    return dataclasses.replace(config, teacher=ComponentConfig(name, kwargs))


def parser() -> CommandParser:
    parser = CommandParser(
        "bench-teachers",
        __doc__,
        examples=(
            "--config point_reach_unfeasible_alp_gmm "
            "--random-config point_reach_unfeasible_random --rounds 9",
            "--suite benchmark_quick",
        ),
    )
    parser.add_config(default="experiments/configs/cartpole_unfeasible_alp_gmm.yaml")
    parser.add_argument(
        "--suite", type=config_path, default=None, help="a benchmark suite YAML (see above)"
    )
    parser.add_argument("--setting", default="unfeasible", help="with --suite: the challenge")
    parser.add_argument(
        "--teachers", nargs="+", default=None, help="teachers, or with --suite its labels"
    )
    parser.add_seeds()
    parser.add_overrides()
    parser.add_argument(
        "--iterations", type=int, default=None, help="iterations per timed call (default: the run)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="timed calls per teacher")
    parser.add_argument(
        "--warmup", type=int, default=0, help="untimed iterations first (whole calls)"
    )
    parser.add_argument(
        "--random-config",
        type=config_path,
        default=None,
        help="Random's own config (default: --config's)",
    )
    parser.add_out(default="runs/bench_teachers.json", help="the JSON")
    return parser


def main(argv=None) -> int:
    parser_ = parser()
    args = parser_.parse_args(argv)
    if args.rounds < 1 or (args.iterations or 1) < 1 or args.warmup < 0:
        parser_.error("--rounds and --iterations must be >= 1, --warmup >= 0")
    if args.suite is not None:
        if args.overrides or args.random_config:
            parser_.error("--set and --random-config do not combine with --suite")
        suite = load_suite(args.suite, num_seeds=args.seeds)
        labels = [label for label, _ in suite.teachers]
        unknown = sorted(set(args.teachers or []) - set(labels))
        if unknown or "random" not in labels:
            parser_.error(f"--teachers {unknown} not among the suite's {labels} (random must be)")
        chosen = args.teachers or labels
        teachers = ["random"] + [t for t in chosen if t != "random"]
        challenge = ChallengeConfig(
            name=args.setting, seed=suite.challenge_seed, forgetting_period=suite.forgetting_period
        )
        configs = {
            name: dataclasses.replace(suite.teacher_config(name), challenge=challenge)
            for name in teachers
        }
        base = configs["random"]
    else:
        base = load_config(args.config, args.overrides, num_seeds=args.seeds)
        chosen = args.teachers or ["random", "alp_gmm"]
        teachers = ["random"] + [t for t in chosen if t != "random"]
        configs = {name: with_teacher(base, name) for name in teachers}
        if args.random_config is not None:
            random = load_config(args.random_config, args.overrides, num_seeds=args.seeds)
            if random.teacher.name != "random":
                parser_.error(f"--random-config runs teacher {random.teacher.name}, not random")
            configs["random"] = random
    if argv is None and any(c.loop.overlap_teacher for c in configs.values()):
        restart_with_host_devices()
    trainers = {name: make_train(config) for name, config in configs.items()}
    reference = trainers["random"]
    iterations = args.iterations or reference.schedule.iterations

    compiled = {
        name: compile_training(trainer, iterations, args.warmup, run_data(configs[name], trainer))
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
            "time_ratio": statistics.median(1 / r for r in ratios),
            "config": configs[name].teacher.kwargs,
            "overlap_teacher": configs[name].loop.overlap_teacher,
        }
    rows = [
        {
            "teacher": name,
            "steps/s": f"{r['steps_per_second']:,.0f}",
            "overhead vs random": f"{r['overhead']:+.1%}",
            "time / random's": f"{r['time_ratio']:.2f}",
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
