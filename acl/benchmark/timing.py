"""Throughput timing shared by the bench_* scripts: compile apart, best of a few calls."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from gymnax.environments import spaces

from acl.loop.carry import RunData
from acl.loop.devices import DeviceLayout
from acl.loop.placement import DeviceSplit
from acl.loop.rollout import select_instances
from acl.loop.train import Trainer


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


def uniform_actions(space: Any, n: int) -> Callable[[jax.Array], jax.Array]:
    """sample(key) -> n uniform random actions of a gymnax Discrete space ([n] ints) or Box
    space ([n, *shape] floats within its bounds)."""
    if isinstance(space, spaces.Discrete):
        return lambda key: jax.random.randint(key, (n,), 0, space.n)
    shape = (n, *space.shape)
    low = jnp.broadcast_to(jnp.asarray(space.low, jnp.float32), shape)
    high = jnp.broadcast_to(jnp.asarray(space.high, jnp.float32), shape)
    return lambda key: jax.random.uniform(key, shape, minval=low, maxval=high)


def random_action_rollout(
    reset: Callable,
    step: Callable,
    params: Any,
    sample_action: Callable[[jax.Array], jax.Array],
    steps: int,
    *,
    auto_reset: bool = True,
    observe: bool = False,
) -> tuple[Callable, Callable]:
    """(start, run): the raw env loop the bench_* scripts time, N instances (params [N, ...])
    under random actions, no agent.

    start(key) -> states: every instance reset by `reset(key, params)` -> (obs, state).
    run(states, key) -> (episodes ended, checksum): `steps` vmapped `step(key, state,
    action, params)` (env.step's outputs) with actions `sample_action(key)` [N, ...], in one
    `lax.scan`. `auto_reset`: an instance whose episode ended restarts on its params as the
    training loop does it (acl.loop.rollout): a fresh reset is computed for every instance at
    every step and picked per instance, so its cost is part of the figure; without it an
    instance steps past its end. checksum: the rewards' sum, plus the observations' with
    `observe` (without, XLA drops their computation), so that no part of a step is dead code."""
    n = jax.tree.leaves(params)[0].shape[0]

    def start(key):
        return jax.vmap(reset)(jax.random.split(key, n), params)[1]

    def run(states, key):
        def body(carry, key):
            states, episodes, checksum = carry
            k_act, k_step, k_reset = jax.random.split(key, 3)
            obs, states, reward, terminated, truncated, _ = jax.vmap(step)(
                jax.random.split(k_step, n), states, sample_action(k_act), params
            )
            if auto_reset:
                fresh_obs, fresh = jax.vmap(reset)(jax.random.split(k_reset, n), params)
                done = terminated | truncated
                states = select_instances(done, fresh, states)
                if observe:
                    obs = select_instances(done, fresh_obs, obs)
                episodes = episodes + done.sum()
            checksum = checksum + reward.sum()
            if observe:
                checksum += sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree.leaves(obs))
            return (states, episodes, checksum), None

        carry = (states, jnp.int32(0), jnp.float32(0.0))
        (_, episodes, checksum), _ = jax.lax.scan(body, carry, jax.random.split(key, steps))
        return episodes, checksum

    return start, run


def random_action_throughput(env, params, steps: int, timer=time_call) -> dict:
    """Env steps/s of the raw env: `steps` steps of N instances (params [N, ...]) with
    uniform random actions, restarting ended instances as the loop does
    (`random_action_rollout`). `timer(fn, key)` gives the seconds of one run; compile time
    is measured apart."""
    n = jax.tree.leaves(params)[0].shape[0]
    actions = uniform_actions(env.action_space(), n)
    start, run = random_action_rollout(env.reset, env.step, params, actions, steps)

    def rollout(key):
        return run(start(key), key)

    key = jax.random.PRNGKey(0)
    start_time = time.perf_counter()
    compiled = jax.jit(rollout).lower(key).compile()
    compile_seconds = time.perf_counter() - start_time
    seconds = timer(compiled, key)
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
    trainer: Trainer, iterations: int, warmup_iterations: int = 0, data: RunData | None = None
) -> CompiledTraining:
    """Compiles `iterations` iterations (teacher, rollout, update; all seeds vmapped, no
    evaluation) and runs the `warmup_iterations` (rounded up to whole calls) untimed, so that
    the timed ones see a teacher past its start-up (a replay buffer at its minimum fill).
    One device, or the two of `loop.overlap_teacher` (acl.loop.devices). `data`: the run's
    data (`acl.build.run_data`), shared by all seeds."""
    beside = trainer.device_split is DeviceSplit.TEACHER_BESIDE
    layout = DeviceLayout.create(trainer, 2 if beside else 1)
    keys = layout.seed_keys()
    # A challenged run's data (the config's `challenge`) is shared across seeds.
    carry = layout.jit_init_seeds()(keys, data)
    first = jnp.int32(0)
    start = time.perf_counter()
    run = layout.jit_iterations_seeds(iterations).lower(carry.seed, first).compile()
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
        env_steps=trainer.seeds.count * iterations * trainer.schedule.steps_per_iteration,
        compile_seconds=compile_seconds,
        warmup_iterations=done,
    )


def training_throughput(
    trainer: Trainer,
    iterations: int,
    repeats: int = 3,
    warmup_iterations: int = 0,
    data: RunData | None = None,
) -> dict:
    """Env steps/s of `iterations` loop iterations (`compile_training`), the best of
    `repeats` calls. Compile time is measured apart."""
    compiled = compile_training(trainer, iterations, warmup_iterations, data)
    seconds = min(compiled.time() for _ in range(repeats))
    return {
        "warmup_iterations": compiled.warmup_iterations,
        "compile_seconds": compiled.compile_seconds,
        "seconds": seconds,
        "env_steps": compiled.env_steps,
        "steps_per_second": compiled.env_steps / seconds,
    }


def processor_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo; `platform.processor()` is empty there),
    else what `platform` knows."""
    import platform
    from pathlib import Path

    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def report(name: str, rows: list[dict], out: str, seeds: list[int], **payload) -> None:
    """Print the bench table and write it, with provenance, as JSON to `out`."""
    import json
    import os
    from pathlib import Path

    from acl.run.results import format_table, provenance

    print(format_table(rows, list(rows[0])))
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "benchmark": name,
        **payload,
        "table": rows,
        "machine": {
            "cpus": os.cpu_count(),
            "devices": jax.local_device_count(),
            "processor": processor_model(),
        },
        "provenance": provenance(seeds),
    }
    path.write_text(json.dumps(document, indent=2))
    print(f"written: {path}")
