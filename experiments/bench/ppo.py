"""PPO training throughput on CartPole, beside the raw env's ceiling.

    acl bench-ppo [--seeds 1 16] [--iterations 50] [--out FILE.json]

For each seed count S it times (after compiling, reported separately):
  - ppo:  the curriculum loop's training iterations (Fixed teacher, rollout of
          num_envs x num_steps, PPO update), vmapped over S seeds;
  - raw:  random actions through the same env with resets, S x num_envs instances,
          no learning: the ceiling.
and prints env steps/s for both and their ratio.
"""

from __future__ import annotations

import jax.numpy as jnp

from acl.benchmark.timing import random_action_throughput, report, training_throughput
from acl.build import make_train
from acl.config import parse_config
from experiments.cli import CommandParser

CONFIG = {
    "name": "bench_ppo_cartpole",
    "env": "cartpole",
    "teacher": "fixed",
    "agent": {"name": "ppo"},  # PureJaxRL's CartPole settings are PPO's defaults
    "loop": {"num_envs": 4, "num_steps": 128, "total_env_steps": 512, "eval_every": 512},
}


def bench_ppo(num_seeds: int, iterations: int) -> dict:
    return training_throughput(
        make_train(parse_config({**CONFIG, "num_seeds": num_seeds})), iterations
    )


def bench_raw(num_seeds: int, iterations: int) -> dict:
    trainer = make_train(parse_config({**CONFIG, "num_seeds": 1}))
    env = trainer.env
    n = num_seeds * trainer.schedule.num_envs
    params = env.params_for_tasks(
        jnp.broadcast_to(env.task_space.default_task, (n, env.task_space.dim))
    )
    return random_action_throughput(env, params, iterations * trainer.schedule.num_steps)


def parser() -> CommandParser:
    parser = CommandParser(
        "bench-ppo", __doc__, examples=("--seeds 1 16 --out runs/bench_ppo.json",)
    )
    parser.add_seeds(nargs="+", default=[1, 16], help="seed counts S (vmapped), one row each")
    parser.add_argument(
        "--iterations",
        type=int,
        default=50,
        help="PPO iterations (rollout + update) per timed call",
    )
    parser.add_out(default="runs/bench_ppo.json", help="the JSON")
    return parser


def main(argv=None) -> int:
    args = parser().parse_args(argv)

    results, rows = [], []
    for seeds in args.seeds:
        ppo = bench_ppo(seeds, args.iterations)
        raw = bench_raw(seeds, args.iterations)
        results.append(
            {
                "seeds": seeds,
                "instances": seeds * CONFIG["loop"]["num_envs"],
                "ppo": ppo,
                "raw_env": raw,
            }
        )
        rows.append(
            {
                "seeds": seeds,
                "envs": seeds * CONFIG["loop"]["num_envs"],
                "PPO steps/s": f"{ppo['steps_per_second']:,.0f}",
                "raw env steps/s": f"{raw['steps_per_second']:,.0f}",
                "PPO / raw": f"{ppo['steps_per_second'] / raw['steps_per_second']:.3f}",
                "PPO compile s": f"{ppo['compile_seconds']:.1f}",
                "raw compile s": f"{raw['compile_seconds']:.1f}",
            }
        )
    report(
        "bench_ppo", rows, args.out, [], config=CONFIG, iterations=args.iterations, results=results
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
