"""DQN+HER training throughput on bit flipping, beside the raw env's ceiling.

    acl bench-dqn [--bits 10] [--seeds 1 16] [--iterations 20]
        [--repeats 5] [--out runs/bench_dqn.json]

For each seed count S it times (after compiling, reported separately), as the median
of `--repeats` calls:
  - dqn+her: the curriculum loop's iterations (Random teacher, rollout of num_envs x n
             steps, staging + replay insert, 40 HER-relabelled gradient steps),
             vmapped over S seeds (experiments/configs/bit_flip_her.yaml);
  - raw:     random actions through the same env with resets, S x num_envs
             instances, no learning: the ceiling.
and prints env steps/s, gradient updates/s (summed over seeds) and the ratio to raw.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

from acl.benchmark.timing import median_call, random_action_throughput
from experiments.cli import CommandParser

CONFIG_PATH = "experiments/configs/bit_flip_her.yaml"


def make_trainer(bits: int, seeds: int):
    from acl.build import make_train
    from acl.config import apply_overrides, load_yaml, parse_config

    data = apply_overrides(
        load_yaml(CONFIG_PATH),
        [f"env.num_bits={bits}", f"loop.num_steps={bits}", f"num_seeds={seeds}"],
    )
    steps = data["loop"]["num_envs"] * bits
    data["loop"].update(total_env_steps=steps, eval_every=steps)
    return make_train(parse_config(data))


def bench_dqn(bits: int, seeds: int, iterations: int, repeats: int) -> dict:
    trainer = make_trainer(bits, seeds)

    def train_iterations(seed_carry, first_iteration):
        steps = first_iteration + jnp.arange(iterations, dtype=jnp.int32)
        return jax.lax.scan(trainer._iteration, seed_carry, steps)[0]

    carry = jax.jit(jax.vmap(trainer.init, out_axes=trainer.carry_axes))(trainer.seed_keys())
    first = jnp.int32(0)
    start = time.perf_counter()
    run = jax.jit(jax.vmap(train_iterations, in_axes=(0, None))).lower(carry.seed, first).compile()
    compile_seconds = time.perf_counter() - start
    # One warm-up call, so the buffer the timed calls start from is not empty.
    seed_carry = jax.block_until_ready(run(carry.seed, first))
    seconds = median_call(run, seed_carry, first, repeats=repeats)
    env_steps = seeds * iterations * trainer.schedule.steps_per_iteration
    updates = seeds * iterations * trainer.agent.config.gradient_steps
    return {
        "instances": seeds * trainer.schedule.num_envs,
        "compile_seconds": compile_seconds,
        "seconds": seconds,
        "env_steps": env_steps,
        "gradient_updates": updates,
        "steps_per_second": env_steps / seconds,
        "updates_per_second": updates / seconds,
    }


def bench_raw(bits: int, seeds: int, iterations: int, repeats: int) -> dict:
    trainer = make_trainer(bits, 1)
    env = trainer.env
    n = seeds * trainer.schedule.num_envs
    tasks = jax.random.uniform(jax.random.PRNGKey(1), (n, env.task_space.dim))
    params = env.params_for_tasks(tasks)
    return random_action_throughput(
        env,
        params,
        iterations * trainer.schedule.num_steps,
        timer=lambda run, key: median_call(run, key, repeats=repeats),
    )


def parser() -> CommandParser:
    parser = CommandParser("bench-dqn", __doc__, examples=("--bits 10 --seeds 1 16",))
    parser.add_argument("--bits", type=int, default=10, help="bits of the bit-flipping env")
    parser.add_seeds(nargs="+", default=[1, 16], help="seed counts S (vmapped), one row each")
    parser.add_argument(
        "--iterations", type=int, default=20, help="loop iterations (HER cycles) per timed call"
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed calls; the median counts")
    parser.add_out(default="runs/bench_dqn.json", help="the JSON")
    return parser


def main(argv=None) -> int:
    args = parser().parse_args(argv)

    from acl.benchmark.timing import report

    results, rows = [], []
    for seeds in args.seeds:
        dqn = bench_dqn(args.bits, seeds, args.iterations, args.repeats)
        raw = bench_raw(args.bits, seeds, args.iterations, args.repeats)
        results.append({"seeds": seeds, "dqn_her": dqn, "raw_env": raw})
        rows.append(
            {
                "seeds": seeds,
                "envs": dqn["instances"],
                "DQN+HER steps/s": f"{dqn['steps_per_second']:,.0f}",
                "updates/s": f"{dqn['updates_per_second']:,.0f}",
                "raw env steps/s": f"{raw['steps_per_second']:,.0f}",
                "DQN+HER / raw": f"{dqn['steps_per_second'] / raw['steps_per_second']:.4f}",
                "DQN compile s": f"{dqn['compile_seconds']:.1f}",
                "raw compile s": f"{raw['compile_seconds']:.1f}",
            }
        )
    report(
        "bench_dqn",
        rows,
        args.out,
        [],
        config=CONFIG_PATH,
        bits=args.bits,
        iterations=args.iterations,
        repeats=args.repeats,
        results=results,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
