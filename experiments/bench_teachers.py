"""Teacher overhead: training throughput with each teacher on the same config, as a ratio
to Random's, measured in the same run.

    python -m experiments.bench_teachers
        [--config experiments/configs/cartpole_unfeasible_alp_gmm.yaml]
        [--teachers random alp_gmm covar_gmm riac] [--iterations 40] [--out FILE.json]

overhead = 1 - (steps/s with the teacher) / (steps/s with Random). Teacher keys of the
config (fit_every, preset...) are kept for the teachers that accept them.
"""

from __future__ import annotations

import argparse
import dataclasses

from acl.benchmark.timing import report, training_throughput
from acl.config import ComponentConfig, load_config
from acl.teachers import TEACHERS
from acl.train import Trainer, _accepted_keys


def with_teacher(config, name: str):
    accepted = _accepted_keys(TEACHERS.get(name))
    kwargs = {k: v for k, v in config.teacher.kwargs.items() if k in accepted}
    return dataclasses.replace(config, teacher=ComponentConfig(name, kwargs))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.bench_teachers", description=__doc__
    )
    parser.add_argument("--config", default="experiments/configs/cartpole_unfeasible_alp_gmm.yaml")
    parser.add_argument("--teachers", nargs="+", default=["random", "alp_gmm"])
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--out", default="runs/bench_teachers.json")
    args = parser.parse_args(argv)
    base = load_config(args.config, num_seeds=args.seeds)
    if "random" not in args.teachers:
        args.teachers.insert(0, "random")

    results = {}
    for name in args.teachers:
        results[name] = training_throughput(Trainer(with_teacher(base, name)), args.iterations)
    reference = results["random"]["steps_per_second"]
    rows = [
        {
            "teacher": name,
            "steps/s": f"{r['steps_per_second']:,.0f}",
            "overhead vs random": f"{1 - r['steps_per_second'] / reference:+.1%}",
            "compile s": f"{r['compile_seconds']:.1f}",
        }
        for name, r in results.items()
    ]
    overheads = {
        k: {**v, "overhead": 1 - v["steps_per_second"] / reference} for k, v in results.items()
    }
    report(
        "bench_teachers",
        rows,
        args.out,
        list(range(base.num_seeds)),
        config=base.to_dict(),
        iterations=args.iterations,
        results=overheads,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
