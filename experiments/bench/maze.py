"""Maze throughput beside JaxUED's maze, and PLR's training overhead against DR.

    acl bench-maze [--num-envs 1 256 4096] [--repeats 5]
        [--env-steps-per-run 4194304] [--walls 25] [--teachers dr plr]
        [--train-iterations 2] [--seeds 1] [--preset NAME] [--set K=V]
        [--train-warmup N] [--no-train | --no-raw] [--no-obs] [--quick] [--out runs/bench_maze.json]

Raw env: for each batch size N, N levels of `--walls` walls (our `sample_level`, the
same levels for both envs, converted to JaxUED's (x, y) `Level`) are stepped by one jitted
`lax.scan` of `steps` vmapped steps with the same uniform random actions (turn left, turn
right, forward) for both: our `Maze.step` against JaxUED's `Maze.step_env` (jaxued 0.0.1,
MiniGrid-style, 5 x 5 view, no occlusion in either). Raw steps: no resets in either
(an episode past its end keeps stepping; the cost per step is the same). Rewards and
observations are summed into the output so no part of a step is dead code. Compile time
is measured apart; steps/s is the median of `--repeats` runs; ratio = ours / JaxUED's.
`--no-obs` leaves the observations out (XLA drops them): the dynamics alone.
Only JaxUED's env module is imported: its `level_sampler` uses the removed `jax.tree_map`.

Training: env steps/s of the curriculum loop's iterations (teacher, rollout, agent update;
no evaluation) of experiments/configs/maze_<teacher>.yaml (`--preset` applies a preset
of those files, `--set` overrides their keys), vmapped over `--seeds`, best of 2 timed
calls after compiling (acl.benchmark.timing.training_throughput). Before timing, every teacher runs
`--train-warmup` untimed iterations, by default as many as PLR's buffer needs to reach
its minimum fill, so the timed iterations replay levels (before that PLR hands out new
levels only, and its overhead would be understated). Teacher overhead of each teacher
against the first (dr): 1 - (its steps/s / DR's steps/s).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from acl.benchmark.timing import median_call, random_action_rollout, report, uniform_actions
from acl.run.results import format_table, package_versions
from envs.maze import NUM_ACTIONS, Maze
from experiments.cli import CONFIGS, CommandParser

FULL = {
    "num_envs": [1, 256, 4096],
    "repeats": 5,
    "env_steps_per_run": 1 << 22,  # runs of ~0.5 s at 4,096 envs: shorter ones are noisy
    "train_iterations": 2,
}
QUICK = {
    "num_envs": [1, 8],
    "repeats": 2,
    "env_steps_per_run": 256,
    "train_iterations": 1,
    "train_warmup": 0,
}
MIN_STEPS, MAX_STEPS = 32, 4096
"""Bounds on the steps of one run (--env-steps-per-run / num_envs)."""


def jaxued_maze():
    """JaxUED's maze env class, or None when jaxued is not installed."""
    try:
        from jaxued.environments.maze.env import Maze as JaxUEDMaze
        from jaxued.environments.maze.level import Level as JaxUEDLevel
    except ImportError:
        return None
    return JaxUEDMaze, JaxUEDLevel


def steps_per_run(num_envs: int, env_steps_per_run: int) -> int:
    return int(np.clip(env_steps_per_run // num_envs, MIN_STEPS, MAX_STEPS))


def sample_levels(env: Maze, num_envs: int, walls: int, seed: int = 0):
    """MazeParams [N] of `walls`-wall levels (the literature's domain randomisation)."""
    keys = jax.random.split(jax.random.PRNGKey(seed), num_envs)
    return jax.jit(jax.vmap(lambda k: env.sample_params(k, walls)))(keys)


def to_jaxued(params, level_cls, height: int, width: int):
    """Our MazeParams [N] as JaxUED Levels [N] (numpy): positions (row, col) -> (x, y) =
    (col, row); the directions are numbered alike (0 right, 1 down, 2 left, 3 up)."""
    params = jax.device_get(params)
    n = params.agent_dir.shape[0]
    return level_cls(
        wall_map=params.wall_map,
        goal_pos=params.goal_pos[:, ::-1].astype(np.uint32),
        agent_pos=params.agent_pos[:, ::-1].astype(np.uint32),
        agent_dir=params.agent_dir.astype(np.uint8),
        width=np.full(n, width, np.int32),
        height=np.full(n, height, np.int32),
    )


def raw_rollout(reset, step, levels, num_envs: int, steps: int, observe: bool = True):
    """Compiled run(key) -> checksum: `random_action_rollout` of `steps` vmapped
    `step(key, state, action, level)` (env.step's outputs) from `reset(key, level)` ->
    (obs, state), no resets, uniform random actions drawn the same way for every env.
    `observe=False` leaves the observations out of the checksum, so XLA drops their
    computation. Returns (run, compile seconds)."""
    actions = uniform_actions(spaces.Discrete(NUM_ACTIONS), num_envs)
    start_states, play = random_action_rollout(
        reset, step, levels, actions, steps, auto_reset=False, observe=observe
    )

    def run(key):
        reset_key, loop_key = jax.random.split(key)
        return play(start_states(reset_key), loop_key)[1]

    start = time.perf_counter()
    compiled = jax.jit(run).lower(jax.random.PRNGKey(1)).compile()
    return compiled, time.perf_counter() - start


def jaxued_fns(theirs, env_params):
    """JaxUED's maze as (reset, step) with our env's signatures."""

    def reset(key, level):
        return theirs.reset_env_to_level(key, level, env_params)

    def step(key, state, action, level):
        obs, state, reward, done, info = theirs.step_env(key, state, action, env_params)
        return obs, state, reward, done, jnp.zeros_like(done), info  # done: no truncation apart

    return reset, step


def bench_raw(num_envs: int, steps: int, repeats: int, walls: int, observe: bool = True) -> dict:
    """One row: ours and (if installed) JaxUED's steps/s at `num_envs` instances."""
    ours = Maze(num_walls=walls)
    levels = sample_levels(ours, num_envs, walls)
    result = {"num_envs": num_envs, "steps_per_run": steps, "env_steps": num_envs * steps}
    plans = {"ours": ((ours.reset, ours.step), levels)}
    jaxued = jaxued_maze()
    if jaxued is not None:
        maze_cls, level_cls = jaxued
        theirs = maze_cls(max_height=ours.height, max_width=ours.width, agent_view_size=5)
        env_params = theirs.default_params.replace(max_steps_in_episode=ours.max_episode_steps)
        plans["jaxued"] = (
            jaxued_fns(theirs, env_params),
            to_jaxued(levels, level_cls, ours.height, ours.width),
        )
    for name, ((reset, step), env_levels) in plans.items():
        run, compile_seconds = raw_rollout(reset, step, env_levels, num_envs, steps, observe)
        key = jax.random.PRNGKey(2)
        if not np.isfinite(float(run(key))):
            raise RuntimeError(f"{name}: non-finite rewards or observations")
        seconds = median_call(run, key, repeats=repeats)
        result[name] = {
            "compile_seconds": compile_seconds,
            "median_seconds": seconds,
            "steps_per_second": num_envs * steps / seconds,
        }
    if "jaxued" in result:
        result["ratio"] = result["ours"]["steps_per_second"] / result["jaxued"]["steps_per_second"]
    return result


def raw_row(result: dict) -> dict:
    theirs = result.get("jaxued")
    return {
        "envs": f"{result['num_envs']:,}",
        "steps/run": result["steps_per_run"],
        "ours steps/s": f"{result['ours']['steps_per_second']:,.0f}",
        "JaxUED steps/s": f"{theirs['steps_per_second']:,.0f}" if theirs else "n/a",
        "ours / JaxUED": f"{result['ratio']:.2f}" if theirs else "n/a",
        "compile s (ours, JaxUED)": f"{result['ours']['compile_seconds']:.1f}, "
        + (f"{theirs['compile_seconds']:.1f}" if theirs else "n/a"),
    }


def training_config(teacher: str, preset: str | None, seeds: int, overrides: list[str]):
    from acl.config import load_config

    path = CONFIGS / f"maze_{teacher}.yaml"
    return load_config(path, overrides, seeds, preset)


def iterations_to_minimum_fill(trainer) -> int:
    """Loop iterations before a replay teacher's buffer reaches its minimum fill (it hands
    out new levels only until then); 0 for a teacher without a buffer."""
    from acl.teachers.plr import PLRTeacher

    teacher = trainer.teacher
    if not isinstance(teacher, PLRTeacher):
        return 0
    levels = teacher.capacity * teacher.hyper.minimum_fill_ratio
    return math.ceil(levels / trainer.schedule.num_envs)


def bench_training(
    teachers: list[str],
    iterations: int,
    seeds: int,
    preset: str | None,
    overrides: list[str],
    warmup: int | None = None,
) -> list[dict]:
    """Loop iterations' steps/s per teacher; `overhead` against the first teacher. Every
    teacher first runs `warmup` untimed iterations; None: enough for every replay buffer
    to reach its minimum fill, so the timed iterations replay."""
    from acl.benchmark.timing import training_throughput
    from acl.build import make_train

    configs = [training_config(t, preset, seeds, overrides) for t in teachers]
    trainers = [make_train(config) for config in configs]
    if warmup is None:
        warmup = max(iterations_to_minimum_fill(trainer) for trainer in trainers)
    results = []
    for config, trainer in zip(configs, trainers, strict=True):
        print(f"# training: {config.name} ({config.teacher.name}, {config.agent.name}) ...")
        timing = training_throughput(trainer, iterations, repeats=2, warmup_iterations=warmup)
        results.append(
            {
                "teacher": config.teacher.name,
                "config": config.name,
                "agent": config.agent.name,
                "num_envs": config.loop.num_envs,
                "num_steps": config.loop.num_steps,
                "seeds": seeds,
                "iterations": iterations,
                **timing,
            }
        )
    base = results[0]["steps_per_second"]
    for result in results:
        result["overhead"] = 1.0 - result["steps_per_second"] / base
    return results


def training_row(result: dict) -> dict:
    return {
        "teacher": result["teacher"],
        "envs x steps x seeds": f"{result['num_envs']} x {result['num_steps']} x {result['seeds']}",
        "train steps/s": f"{result['steps_per_second']:,.0f}",
        "overhead vs first": f"{result['overhead']:.3f}",
        "untimed warm-up iterations": result["warmup_iterations"],
        "compile s": f"{result['compile_seconds']:.1f}",
    }


def parser() -> CommandParser:
    parser = CommandParser(
        "bench-maze", __doc__, examples=("--preset cpu --seeds 3", "--quick --out runs/maze.json")
    )
    parser.add_argument("--num-envs", type=int, nargs="+", default=None, help="raw env batch sizes")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs (median)")
    parser.add_argument(
        "--env-steps-per-run", type=int, default=None, help="raw env steps per timed run"
    )
    parser.add_argument("--walls", type=int, default=25, help="walls per level (ACCEL: 60)")
    parser.add_argument(
        "--teachers", nargs="+", default=["dr", "plr"], help="maze_<teacher>.yaml to train"
    )
    parser.add_argument(
        "--train-iterations", type=int, default=None, help="loop iterations per timed call"
    )
    parser.add_seeds(
        default=1, aliases=("--train-seeds",), help="vmapped seeds of the training rows"
    )
    parser.add_argument(
        "--train-warmup",
        type=int,
        default=None,
        help="untimed iterations first (default: until replay buffers reach their minimum fill)",
    )
    parser.add_preset(aliases=("--train-preset",), help="preset of the maze configs (below)")
    parser.add_overrides(aliases=("--train-set",), help="override a key of the maze configs")
    parser.add_argument("--no-train", action="store_true", help="raw env rows only")
    parser.add_argument("--no-raw", action="store_true", help="training rows only")
    parser.add_argument(
        "--no-obs", action="store_true", help="raw steps without observations (dynamics only)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the test)")
    parser.add_out(default="runs/bench_maze.json", help="the JSON")
    return parser


def parse_args(argv) -> argparse.Namespace:
    args = parser().parse_args(argv)
    defaults = QUICK if args.quick else FULL
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    results = []
    for num_envs in [] if args.no_raw else args.num_envs:
        steps = steps_per_run(num_envs, args.env_steps_per_run)
        print(f"# raw: {num_envs} envs x {steps} steps ...", flush=True)
        results.append(bench_raw(num_envs, steps, args.repeats, args.walls, not args.no_obs))
    notes = [
        "raw step only (no resets) in both envs; same levels and same random actions"
        + ("; observations not computed (--no-obs)" if args.no_obs else ""),
        f"levels: {args.walls} walls (our sample_level), 13 x 13, T = 250",
    ]
    if jaxued_maze() is None:
        notes.append("jaxued is not installed (pip install jaxued==0.0.1): ours only")
    training = []
    if not args.no_train:
        training = bench_training(
            args.teachers,
            args.train_iterations,
            args.seeds,
            args.preset,
            args.overrides,
            args.train_warmup,
        )
    raw_rows, training_rows = [raw_row(r) for r in results], [training_row(r) for r in training]
    if raw_rows and training_rows:  # `report` prints the first table
        print(format_table(training_rows, list(training_rows[0])) + "\n")
    for note in notes:
        print(f"note: {note}")
    report(
        "bench_maze",
        raw_rows or training_rows,
        args.out,
        [],
        settings={k: v for k, v in vars(args).items() if k != "out"},
        extra_versions=package_versions(("jaxued",)),
        notes=notes,
        results=results,
        raw_table=raw_rows,
        training=training,
        training_table=training_rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
