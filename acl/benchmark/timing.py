"""Throughput timing shared by the bench_* scripts: compile apart, best of a few calls."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from acl.build import run_data
from acl.rollout import select_instances
from acl.train import Trainer


def time_call(fn, *args, repeats: int = 3) -> float:
    """Best wall time of `repeats` calls, blocking on the result."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - start)
    return best


def median_call(fn, *args, repeats: int = 3) -> float:
    """Median wall time of `repeats` calls, blocking on the result."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def random_action_throughput(env, params, steps: int, timer=time_call) -> dict:
    """Env steps/s of the raw env: `steps` steps of N instances (params [N, ...]) with
    uniform discrete actions, restarting ended instances as the loop does. `timer(fn,
    key)` gives the seconds of one run; compile time is measured apart."""
    n = jax.tree.leaves(params)[0].shape[0]
    num_actions = env.action_space().n

    def rollout(key):
        _, state = jax.vmap(env.reset)(jax.random.split(key, n), params)

        def step(state, key):
            k_act, k_step, k_reset = jax.random.split(key, 3)
            action = jax.random.randint(k_act, (n,), 0, num_actions)
            _, next_state, reward, terminated, truncated, _ = jax.vmap(env.step)(
                jax.random.split(k_step, n), state, action, params
            )
            _, fresh = jax.vmap(env.reset)(jax.random.split(k_reset, n), params)
            return select_instances(terminated | truncated, fresh, next_state), reward.sum()

        return jax.lax.scan(step, state, jax.random.split(key, steps))[1].sum()

    key = jax.random.PRNGKey(0)
    start = time.perf_counter()
    run = jax.jit(rollout).lower(key).compile()
    compile_seconds = time.perf_counter() - start
    seconds = timer(run, key)
    return {
        "compile_seconds": compile_seconds,
        "seconds": seconds,
        "env_steps": n * steps,
        "steps_per_second": n * steps / seconds,
    }


@dataclass
class CompiledTraining:
    """`iterations` loop iterations of every seed as one compiled call, with its inputs."""

    run: Callable
    seed_carry: Any
    first_iteration: jax.Array
    env_steps: int
    """Env steps one call runs, all seeds."""
    compile_seconds: float
    warmup_iterations: int

    def time(self) -> float:
        """Seconds of one call (same inputs every time: a fixed workload)."""
        return time_call(self.run, self.seed_carry, self.first_iteration, repeats=1)


def compile_training(
    trainer: Trainer, iterations: int, warmup_iterations: int = 0
) -> CompiledTraining:
    """Compiles `iterations` iterations (teacher, rollout, update; all seeds vmapped, no
    evaluation) and runs the `warmup_iterations` (rounded up to whole calls) untimed, so that
    the timed ones see a teacher past its start-up (a replay buffer at its minimum fill)."""

    def train_iterations(seed_carry, first_iteration):
        steps = first_iteration + jnp.arange(iterations, dtype=jnp.int32)
        return jax.lax.scan(trainer._iteration, seed_carry, steps)[0]

    keys = trainer.seed_keys()
    # A challenged trainer (the config's `challenge`) shares its challenge across seeds.
    carry = trainer.jit_init_seeds()(keys, run_data(trainer))
    first = jnp.int32(0)
    start = time.perf_counter()
    axes = trainer.carry_axes.seed
    vmapped = jax.vmap(train_iterations, in_axes=(axes, None), out_axes=axes)
    run = jax.jit(vmapped).lower(carry.seed, first).compile()
    compile_seconds = time.perf_counter() - start
    seed_carry, done = carry.seed, 0
    while done < warmup_iterations:
        seed_carry = run(seed_carry, jnp.int32(done))
        done += iterations
    # Dispatch is asynchronous: without the block, the warm-up would still be running when
    # the first timed call (of any teacher) starts, and be charged to it.
    seed_carry = jax.block_until_ready(seed_carry)
    return CompiledTraining(
        run=run,
        seed_carry=seed_carry,
        first_iteration=jnp.int32(done),
        env_steps=trainer.config.num_seeds * iterations * trainer.steps_per_iteration,
        compile_seconds=compile_seconds,
        warmup_iterations=done,
    )


def training_throughput(
    trainer: Trainer, iterations: int, repeats: int = 3, warmup_iterations: int = 0
) -> dict:
    """Env steps/s of `iterations` loop iterations (`compile_training`), the best of
    `repeats` calls. Compile time is measured apart."""
    compiled = compile_training(trainer, iterations, warmup_iterations)
    seconds = min(compiled.time() for _ in range(repeats))
    return {
        "warmup_iterations": compiled.warmup_iterations,
        "compile_seconds": compiled.compile_seconds,
        "seconds": seconds,
        "env_steps": compiled.env_steps,
        "steps_per_second": compiled.env_steps / seconds,
    }


def report(name: str, rows: list[dict], out: str, seeds: list[int], **payload) -> None:
    """Print the bench table and write it, with provenance, as JSON to `out`."""
    import json
    import platform
    from pathlib import Path

    from acl.results import format_table, provenance

    print(format_table(rows, list(rows[0])))
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "benchmark": name,
        **payload,
        "table": rows,
        "machine": {"cpus": jax.local_device_count(), "processor": platform.processor()},
        "provenance": provenance(seeds),
    }
    path.write_text(json.dumps(document, indent=2))
    print(f"written: {path}")
