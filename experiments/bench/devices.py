"""Training throughput against the number of devices the seeds are split over.

    acl bench-devices [--devices 1 2 3 4] [--seeds 8] [--set KEY=VALUE]
        [--repeats 3] [--out runs/bench_devices.json]

Each device count runs in a process of its own, compiling and timing the loop's chunks
(`iterations_per_chunk` iterations and an evaluation) of all seeds split over that many
devices (acl.loop.devices, as `acl run --devices`). On a CPU-only machine the devices
are XLA host devices (`--xla_force_host_platform_device_count`, read when JAX starts,
hence the processes): they share the machine's cores, so the figures show the cost of
the split more than a speed-up. On a GPU machine they are the real GPUs (the counts
default to 1, 2, 4, ... up to all of them). The table gives env steps/s (all seeds) and
the ratio to one device; the JSON adds compile times and the config.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from experiments.cli import CommandParser

CONFIG = {
    "name": "bench_devices_cartpole",
    "env": "cartpole",
    "teacher": "random",
    "agent": {"name": "ppo"},
    "loop": {"num_envs": 16, "num_steps": 64, "total_env_steps": 4096, "eval_every": 4096},
    "eval": {"num_test_tasks": 16},
    "num_seeds": 8,
}
"""CartPole, 8 seeds x 16 instances, one chunk of 4 PPO iterations and a 16-task
evaluation: seconds per device count on a CPU."""

HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"


def worker(devices: int, overrides: list[str], seeds: int | None, repeats: int) -> dict:
    """Compile and time one chunk of the loop with its seeds over `devices` devices."""
    import time

    import jax

    from acl.benchmark.timing import time_call
    from acl.build import make_train, run_data
    from acl.config import apply_overrides, parse_config
    from acl.loop.devices import DeviceLayout

    data = apply_overrides(CONFIG, overrides)
    if seeds is not None:
        data["num_seeds"] = seeds
    config = parse_config(data)
    trainer = make_train(config)
    sharding = DeviceLayout.create(trainer, devices)
    start = time.perf_counter()
    keys, run = sharding.seed_keys(), run_data(config, trainer)
    carry = sharding.jit_init_seeds().lower(keys, run).compile()(keys, run)
    run_chunk = sharding.jit_run_chunk_seeds().lower(carry).compile()
    compile_seconds = time.perf_counter() - start
    seconds = time_call(run_chunk, carry, repeats=repeats)
    # Padding seeds run but are not counted: they are not the run's work.
    env_steps = trainer.schedule.steps_per_chunk * trainer.seeds.count
    return {
        "devices": devices,
        "platform": jax.devices()[0].platform,
        "device_kind": jax.devices()[0].device_kind,
        "seeds": trainer.seeds.count,
        "padded_seeds": sharding.padded_seeds,
        "env_steps": env_steps,
        "seconds": seconds,
        "steps_per_second": env_steps / seconds,
        "compile_seconds": compile_seconds,
    }


def run_worker(devices: int, host: bool, args: argparse.Namespace) -> dict:
    """`worker` in a fresh process; with `host`, XLA's CPU split into `devices` devices."""
    env = dict(os.environ)
    if host:
        flags = [f for f in env.get("XLA_FLAGS", "").split() if HOST_DEVICES_FLAG not in f]
        env["XLA_FLAGS"] = " ".join([*flags, f"{HOST_DEVICES_FLAG}={devices}"])
        env["JAX_PLATFORMS"] = "cpu"
    command = [sys.executable, "-m", "experiments.bench.devices", "--worker", str(devices)]
    command += ["--repeats", str(args.repeats)]
    command += [f"--set={item}" for item in args.overrides]
    if args.seeds is not None:
        command += ["--seeds", str(args.seeds)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{devices} device(s) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def default_counts(available: int) -> list[int]:
    """1, 2, 4, ... up to `available`, and `available` itself."""
    counts, n = [], 1
    while n < available:
        counts.append(n)
        n *= 2
    return [*counts, available]


def parser() -> CommandParser:
    parser = CommandParser("bench-devices", __doc__, examples=("--devices 1 2 --seeds 8",))
    parser.add_devices(
        nargs="+", help="device counts (default: 1 to 4 host devices on a CPU, 1, 2, 4... GPUs)"
    )
    parser.add_seeds(help="seeds (default: the bench config's 8)")
    parser.add_overrides()
    parser.add_argument("--repeats", type=int, default=3, help="timed chunks; the best counts")
    parser.add_out(default="runs/bench_devices.json", help="the JSON")
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    return parser


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.overrides, args.seeds, args.repeats)))
        return 0

    import jax

    from acl.benchmark.timing import report

    accelerators = [d for d in jax.devices() if d.platform != "cpu"]
    host = not accelerators
    counts = args.devices or ([1, 2, 3, 4] if host else default_counts(len(accelerators)))
    results = [run_worker(n, host, args) for n in counts]
    base = next((r for r in results if r["devices"] == 1), results[0])
    rows = [
        {
            "devices": r["devices"],
            "kind": r["device_kind"],
            "seeds": f"{r['seeds']} (+{r['padded_seeds'] - r['seeds']} padding)"
            if r["padded_seeds"] > r["seeds"]
            else str(r["seeds"]),
            "env steps/s": f"{r['steps_per_second']:,.0f}",
            f"ratio to {base['devices']} device(s)": (
                f"{r['steps_per_second'] / base['steps_per_second']:.2f}"
            ),
            "compile s": f"{r['compile_seconds']:.1f}",
        }
        for r in results
    ]
    report(
        "bench_devices",
        rows,
        str(Path(args.out)),
        [],
        config=CONFIG,
        overrides=args.overrides,
        host_devices=host,
        results=results,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
