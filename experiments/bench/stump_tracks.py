"""Stump Tracks' throughput (random actions) beside Gymnasium's Box2D walker.

    acl bench-stump-tracks [--num-envs 1 64 1024] [--repeats 5]
        [--steps N | --env-steps-per-run 65536] [--box2d-seconds S]
        [--device auto|cpu|gpu] [--gpu-num-envs 8192 16384 65536] [--gpu-steps 200]
        [--body classic_bipedal] [--solver-iterations 20] [--num-stump-slots 8]
        [--quick] [--out runs/bench_stump_tracks.json]

For each batch size N (vmapped instances, tasks spread over the task space by a
low-discrepancy sequence), one timed run is a `jax.lax.scan` of `steps` steps inside a
single jit: uniformly random actions over the action space ([-1, 1]), `env.step`, and an
auto-reset of the finished instances onto the same task, the way the training loop does it
(acl/loop/rollout.py): a fresh reset is computed for *every* instance at every step and picked
with `jnp.where`, so its cost is part of the figure. Observations are summed into the
output so none of the step is dead code. Compile time is measured apart; steps/s is the
median (min, max) of `--repeats` runs.

Beside each run, in the same process: Gymnasium's `BipedalWalker-v3` (hardcore=True, Box2D)
with random actions in a plain Python loop, resetting on terminated/truncated, for about
the same wall time (or `--box2d-seconds`). ratio = our median steps/s / Box2D's median.

With a GPU (auto-detected, or `--device gpu`) the rows also include large batches
(`--gpu-num-envs`) against the 1M steps/s target; on CPU those are skipped with a note.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from acl.benchmark.timing import processor_model, random_action_rollout, uniform_actions
from acl.run.results import package_versions, provenance
from envs.stump_tracks import SOLVER_ITERATIONS, StumpTracks
from experiments.cli import CommandParser

TARGET_STEPS_PER_SECOND = 1_000_000
BOX2D_ID = "BipedalWalker-v3"
EXTRA_PACKAGES = ("jax2d", "gymnasium", "box2d", "pygame-ce")

FULL = {
    "num_envs": [1, 64, 1024],
    "repeats": 5,
    "gpu_num_envs": [8192, 16384, 65536],
    "gpu_steps": 200,
}
QUICK = {
    "num_envs": [1, 4],
    "repeats": 2,
    "steps": 10,
    "box2d_seconds": 1.0,
    "gpu_num_envs": [1024],
    "gpu_steps": 10,
}
MIN_STEPS, MAX_STEPS = 32, 2000
"""Bounds on the auto steps per run (--env-steps-per-run / num_envs)."""
BOX2D_SECONDS_BOUNDS = (1.0, 60.0)
"""When matching a JAX run's wall time, Box2D runs at least / at most this long."""


# -- tasks and the JAX rollout ---------------------------------------------------------


def spread_tasks(low: np.ndarray, high: np.ndarray, n: int) -> np.ndarray:
    """n tasks [n, D] spread over the box: the R_d low-discrepancy sequence, the first at
    the centre (so one instance runs the middle task)."""
    dim = len(low)
    phi = 2.0
    for _ in range(64):  # root of x^(d+1) = x + 1
        phi = (1.0 + phi) ** (1.0 / (dim + 1))
    alpha = (1.0 / phi) ** np.arange(1, dim + 1)
    unit = (0.5 + np.arange(n)[:, None] * alpha[None, :]) % 1.0
    return (low + unit * (high - low)).astype(np.float32)


def make_rollout(env, num_envs: int, steps: int):
    """(start, run) of `random_action_rollout` on tasks spread over the task space, uniform
    random actions, auto-reset onto the same task and observations in the checksum:
    start(key) -> state; run(state, key) -> (episodes ended, checksum)."""
    space = env.task_space
    tasks = spread_tasks(np.asarray(space.low), np.asarray(space.high), num_envs)
    params = env.params_for_tasks(jnp.asarray(tasks))
    actions = uniform_actions(env.action_space(), num_envs)
    return random_action_rollout(env.reset, env.step, params, actions, steps, observe=True)


def compile_rollout(env, num_envs: int, steps: int, seed: int = 0) -> dict:
    """The initial states and the compiled run, with its compile time (lower + compile)."""
    start_fn, run_fn = make_rollout(env, num_envs, steps)
    key = jax.random.PRNGKey(seed)
    state = jax.block_until_ready(jax.jit(start_fn)(key))
    t0 = time.perf_counter()
    run = jax.jit(run_fn).lower(state, key).compile()
    compile_seconds = time.perf_counter() - t0
    return {"compile_seconds": compile_seconds, "run": run, "state": state}


def timed_run(compiled: dict, key: jax.Array) -> tuple[float, int, float]:
    t0 = time.perf_counter()
    episodes, checksum = jax.block_until_ready(compiled["run"](compiled["state"], key))
    return time.perf_counter() - t0, int(episodes), float(checksum)


# -- Box2D reference -------------------------------------------------------------------


class Box2DWalker:
    """Gymnasium's BipedalWalker-v3 (hardcore) stepped with random actions in Python."""

    def __init__(self, seed: int = 0):
        import gymnasium as gym

        self.env = gym.make(BOX2D_ID, hardcore=True)
        self.env.action_space.seed(seed)
        self.env.reset(seed=seed)
        spec = self.env.spec
        self.spec = {
            "id": BOX2D_ID,
            "hardcore": True,
            "max_episode_steps": spec.max_episode_steps if spec else None,
        }

    def run(self, seconds: float) -> dict:
        env, sample = self.env, self.env.action_space.sample
        steps = episodes = 0
        t0 = time.perf_counter()
        deadline = t0 + seconds
        while True:
            _, _, terminated, truncated, _ = env.step(sample())
            steps += 1
            if terminated or truncated:
                env.reset()
                episodes += 1
            if time.perf_counter() >= deadline:
                break
        elapsed = time.perf_counter() - t0
        return {"seconds": elapsed, "steps": steps, "episodes": episodes}

    def close(self) -> None:
        self.env.close()


# -- the benchmark ---------------------------------------------------------------------


def auto_steps(num_envs: int, env_steps_per_run: int) -> int:
    return int(np.clip(env_steps_per_run // num_envs, MIN_STEPS, MAX_STEPS))


def measure(env, box2d, num_envs, steps, repeats, box2d_seconds, device, seed) -> dict:
    """One row: compile, then per repeat a JAX run and a Box2D run of about its length."""
    with jax.default_device(device):
        compiled = compile_rollout(env, num_envs, steps, seed)
        keys = jax.random.split(jax.random.PRNGKey(seed + 1), repeats)
        runs, refs = [], []
        for r in range(repeats):
            seconds, episodes, checksum = timed_run(compiled, keys[r])
            if not np.isfinite(checksum):
                raise RuntimeError(f"non-finite rewards/observations at {num_envs} envs")
            runs.append({"seconds": seconds, "episodes_ended": episodes})
            wall = box2d_seconds or float(np.clip(seconds, *BOX2D_SECONDS_BOUNDS))
            refs.append(box2d.run(wall))
    env_steps = num_envs * steps
    rates = [env_steps / r["seconds"] for r in runs]
    ref_rates = [r["steps"] / r["seconds"] for r in refs]
    ours, theirs = statistics.median(rates), statistics.median(ref_rates)
    return {
        "device": device.platform,
        "num_envs": num_envs,
        "steps_per_run": steps,
        "env_steps_per_run": env_steps,
        "compile_seconds": compiled["compile_seconds"],
        "steps_per_second": {"median": ours, "min": min(rates), "max": max(rates)},
        "runs": runs,
        "box2d_steps_per_second": {
            "median": theirs,
            "min": min(ref_rates),
            "max": max(ref_rates),
        },
        "box2d_runs": refs,
        "ratio": ours / theirs,
        # random actions end episodes at different rates here and in Box2D; resets cost
        "steps_per_episode": _per_episode(
            env_steps * repeats, sum(r["episodes_ended"] for r in runs)
        ),
        "box2d_steps_per_episode": _per_episode(
            sum(r["steps"] for r in refs), sum(r["episodes"] for r in refs)
        ),
    }


def _per_episode(steps: int, episodes: int) -> float | None:
    return steps / episodes if episodes else None


def table_row(result: dict) -> dict:
    s = result["steps_per_second"]
    return {
        "device": result["device"],
        "num_envs": f"{result['num_envs']:,}",
        "steps/run": result["steps_per_run"],
        "compile s": f"{result['compile_seconds']:.1f}",
        "steps/s median [min-max]": f"{s['median']:,.0f} [{s['min']:,.0f}-{s['max']:,.0f}]",
        "Box2D steps/s": f"{result['box2d_steps_per_second']['median']:,.0f}",
        "ratio": f"{result['ratio']:.2f}",
    }


def markdown_table(rows: list[dict]) -> str:
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def pick_device(choice: str):
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if choice == "gpu" and not gpus:
        raise SystemExit("--device gpu: no GPU visible to JAX")
    if choice == "gpu" or (choice == "auto" and gpus):
        return gpus[0]
    return jax.devices("cpu")[0]


def machine(device) -> dict:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "processor": processor_model(),
        "device": str(device),
        "device_kind": getattr(device, "device_kind", device.platform),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def parser() -> CommandParser:
    parser = CommandParser(
        "bench-stump-tracks", __doc__, examples=("--num-envs 1 64 1024 --repeats 5", "--quick")
    )
    parser.add_argument("--num-envs", type=int, nargs="+", help="batch sizes (default 1 64 1024)")
    parser.add_argument("--repeats", type=int, help="timed runs per batch size (default 5)")
    parser.add_argument("--steps", type=int, help="scan steps per run (default: auto)")
    parser.add_argument(
        "--env-steps-per-run",
        type=int,
        default=65_536,
        help=f"auto steps = this / num_envs, clipped to [{MIN_STEPS}, {MAX_STEPS}] "
        "(65,536: ~20-30 s per run at 64-1,024 envs on 2 CPU cores)",
    )
    parser.add_argument(
        "--box2d-seconds",
        type=float,
        help="Box2D seconds per repeat (default: the JAX run's wall time, "
        f"clipped to [{BOX2D_SECONDS_BOUNDS[0]:g}, {BOX2D_SECONDS_BOUNDS[1]:g}])",
    )
    parser.add_argument(
        "--device", choices=("auto", "cpu", "gpu"), default="auto", help="where JAX runs"
    )
    parser.add_argument(
        "--gpu-num-envs",
        type=int,
        nargs="+",
        help="extra large batches on GPU (default 8192 16384 65536)",
    )
    parser.add_argument(
        "--gpu-steps", type=int, help="scan steps per run of the GPU batches (default 200)"
    )
    parser.add_argument("--body", default="classic_bipedal", help="the walker's body")
    parser.add_argument(
        "--solver-iterations",
        type=int,
        default=SOLVER_ITERATIONS,
        help=f"physics solver iterations (default {SOLVER_ITERATIONS}, the calibrated env's)",
    )
    parser.add_argument("--num-stump-slots", type=int, default=8, help="stumps per track")
    parser.add_argument("--seed", type=int, default=0, help="seed of the tasks and actions")
    parser.add_argument("--quick", action="store_true", help="smoke test: tiny sizes")
    parser.add_out(default="runs/bench_stump_tracks.json", help="the JSON")
    return parser


def parse_args(argv):
    parser_ = parser()
    args = parser_.parse_args(argv)
    defaults = {**FULL, **(QUICK if args.quick else {})}
    for name, value in defaults.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    for name in ("repeats", "env_steps_per_run"):
        if getattr(args, name) < 1:
            parser_.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def make_stump_tracks(args) -> StumpTracks:
    return StumpTracks(
        body=args.body,
        num_stump_slots=args.num_stump_slots,
        solver_iterations=args.solver_iterations,
    )


def main(argv=None, make_env=make_stump_tracks) -> int:
    """`make_env(args)` builds the env; tests pass a stand-in that compiles in seconds
    (Stump Tracks' step takes about a minute to compile on 2 CPU cores)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    device = pick_device(args.device)
    env = make_env(args)
    plan = [(n, args.steps or auto_steps(n, args.env_steps_per_run)) for n in args.num_envs]
    notes = [
        "auto-reset: a reset is computed for every instance at every step and selected "
        "with jnp.where (as the training loop), so its cost is included",
        "Box2D: gymnasium BipedalWalker-v3 hardcore=True, random actions, plain Python loop",
    ]
    if device.platform == "gpu":
        plan += [(n, args.gpu_steps) for n in args.gpu_num_envs]
    else:
        notes.append(
            "no GPU: the large-batch rows (--gpu-num-envs) towards the 1M steps/s target "
            "were skipped"
        )

    box2d = Box2DWalker(args.seed)
    results = []
    try:
        for num_envs, steps in plan:
            print(f"# {num_envs} envs x {steps} steps on {device} ...", flush=True)
            results.append(
                measure(
                    env,
                    box2d,
                    num_envs,
                    steps,
                    args.repeats,
                    args.box2d_seconds,
                    device,
                    args.seed,
                )
            )
            print(markdown_table([table_row(results[-1])]), flush=True)
    finally:
        box2d.close()

    rows = [table_row(r) for r in results]
    print()
    print(markdown_table(rows))
    for note in notes:
        print(f"note: {note}")

    document = {
        "benchmark": "bench_stump_tracks",
        "env": {
            "name": getattr(env, "name", type(env).__name__),
            "body": args.body,
            "solver_iterations": args.solver_iterations,
            "num_stump_slots": args.num_stump_slots,
            "max_episode_steps": env.max_episode_steps,
            "tasks": "R2 low-discrepancy spread over the task space, first at its centre",
        },
        "box2d": box2d.spec,
        "settings": {k: v for k, v in vars(args).items() if k not in ("out",)},
        "target_steps_per_second": TARGET_STEPS_PER_SECOND,
        "notes": notes,
        "table": rows,
        "results": results,
        "machine": machine(device),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "provenance": {
            **provenance([]),
            "argv": ["acl", "bench-stump-tracks", *argv],
            "extra_versions": package_versions(EXTRA_PACKAGES),
        },
    }
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2))
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
