"""Compile time and env steps/s of brax_goal's step under each Brax pipeline.

    acl bench-brax-goal [--pipelines spring positional generalized mjx]
        [--envs 64] [--steps 50] [--repeats 3] [--out runs/bench_brax_goal.json]

For each pipeline it compiles jit(vmap(env.step)) over `--envs` instances (each with its
own valid start and goal, full-force random actions), reports the compile time (wall
and process CPU seconds: the CPU time says more on a busy machine), then
times `--steps` consecutive calls (the median of `--repeats` runs) and prints env
steps/s. One env step is `envs.brax_goal.N_FRAMES` physics steps. A wall check is
printed beside it: the ball's y after being pushed up from (0.15, 0.25) into the
u_maze wall for those steps (at rest against the wall's face at 0.49: 0.46).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

from acl.benchmark.timing import median_call, report
from envs.brax_goal import PIPELINES
from envs.registry import make_env
from experiments.cli import CommandParser


def bench_pipeline(pipeline: str, num_envs: int, steps: int, repeats: int) -> dict:
    start = time.perf_counter()
    env = make_env("brax_goal", pipeline=pipeline)
    build_seconds = time.perf_counter() - start
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    tasks = env.task_for(
        env.sample_valid_goals(keys[0], num_envs), env.sample_valid_goals(keys[1], num_envs)
    )
    # Instance 0 pushes straight up into the inner wall: the printed wall check.
    tasks = tasks.at[0].set(jnp.array([0.15, 0.25, 0.85, 0.85]))
    params = env.params_for_tasks(tasks)
    _, state = jax.vmap(env.reset)(jax.random.split(keys[2], num_envs), params)
    actions = jax.random.uniform(keys[2], (num_envs, 2), minval=-1.0, maxval=1.0)
    actions = (actions / jnp.abs(actions).max(-1, keepdims=True)).at[0].set(jnp.array([0.0, 1.0]))
    step_keys = jax.random.split(keys[0], num_envs)

    step = jax.jit(jax.vmap(env.step))
    start, start_cpu = time.perf_counter(), time.process_time()
    compiled = step.lower(step_keys, state, actions, params).compile()
    compile_seconds = time.perf_counter() - start
    compile_cpu_seconds = time.process_time() - start_cpu  # less sensitive to a busy machine

    def run(state):
        for _ in range(steps):
            _, state, *_ = compiled(step_keys, state, actions, params)
        return state

    final = jax.block_until_ready(run(state))  # also the warm-up
    seconds = median_call(run, state, repeats=repeats)
    return {
        "pipeline": pipeline,
        "instances": num_envs,
        "build_s": round(build_seconds, 2),
        "compile_s": round(compile_seconds, 2),
        "compile_cpu_s": round(compile_cpu_seconds, 2),
        "env_steps_per_s": round(num_envs * steps / seconds),
        "wall_push_final_y": round(float(final.position[0, 1]), 4),
    }


def parser() -> CommandParser:
    parser = CommandParser(
        "bench-brax-goal", __doc__, examples=("--pipelines spring positional --envs 64",)
    )
    parser.add_argument(
        "--pipelines",
        nargs="+",
        default=list(PIPELINES),
        choices=PIPELINES,
        help="Brax pipelines (default: all)",
    )
    parser.add_argument("--envs", type=int, default=64, help="vmapped instances")
    parser.add_argument("--steps", type=int, default=50, help="consecutive steps per timed run")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs; the median counts")
    parser.add_out(default="runs/bench_brax_goal.json", help="the JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    rows = []
    for pipeline in args.pipelines:
        rows.append(bench_pipeline(pipeline, args.envs, args.steps, args.repeats))
        print(rows[-1], flush=True)
    report("bench_brax_goal", rows, args.out, seeds=[0], steps=args.steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
