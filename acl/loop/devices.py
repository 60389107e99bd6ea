"""A run over several devices: its seeds, or each seed's env instances, split over a
one-axis device mesh (`jax.sharding.Mesh`) by `jax.shard_map`.

    layout = DeviceLayout.create(trainer, devices=4)
    keys = layout.seed_keys()                       # [S'] keys, S' a multiple of 4
    carry = layout.jit_init_seeds()(keys, data)
    carry, metrics = layout.jit_run_chunk_seeds()(carry)
    metrics = layout.real_seeds(jax.device_get(metrics))    # the first S seeds

Seeds (the default): each device runs the single-device loop's vmap over its S'/N
seeds; the iteration counter and a shared `RunData` are replicated. Seeds never talk to
each other, so the program holds no collective. When N does not divide S, the seed axis
is padded to the next multiple of N with the seeds a larger run would have
(`config.seed + S`, `+ S + 1`, ...), and `real_seeds` drops their results. A seed's
result does not depend on the seeds beside it except for float32 round-off: on XLA's
CPU backend a seed run alone and beside 7 others ends with params one ulp or so apart
(programs of other batch shapes reduce in other orders), while returns, episodes and
tasks of a short run stay equal (tests/test_devices.py).

Env instances (`loop.shard_envs`): each device runs all S seeds, each with num_envs / N
of its instances (`Trainer.with_env_shards`); agent and teacher state are replicated,
the agent's update averages gradients over the devices and the teacher reads every
device's feedback.

The teacher beside the agent (`loop.overlap_teacher`): two devices each hold all S
seeds; device 0 rolls out and updates the agent while device 1 updates the teacher
(`Trainer.with_teacher_beside`). On CPU the two are XLA host devices, which JAX creates
only when asked before it starts (`HOST_DEVICES_FLAG`, with one more intra-op thread:
`host_threads`; experiments.run restarts itself with both).

One device (the default on a one-device machine) takes the single-device path
unchanged: `Trainer.jit_init_seeds` and `jit_run_chunk_seeds`, no mesh.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from acl.core.errors import ConfigError
from acl.loop.train import LoopCarry, SeedCarry, Trainer

SEED_AXIS = "seeds"
"""The mesh axis the seeds are split over."""
ENV_AXIS = "envs"
"""The mesh axis each seed's instances are split over (`loop.shard_envs`)."""
ROLE_AXIS = "roles"
"""The two-device mesh axis of `loop.overlap_teacher`: the learner's device, the teacher's."""


HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"
"""The XLA flag that splits the CPU into host devices; read when JAX starts, which is
at the first import of an env (gymnax builds arrays on import)."""
HOST_THREADS_VARIABLE = "NPROC"
"""The environment variable XLA's CPU client sizes its intra-op thread pool by (default:
the cores), read when JAX starts."""


def host_threads(devices: int) -> int:
    """The intra-op threads for `devices` host devices: the cores, plus one for each
    device beyond the first. Measured with `loop.overlap_teacher` on 2 cores: with the
    pool at the core count the learner's device ran on 1.04 cores (one device: 1.34),
    with one thread more on 1.41, bit for bit the same results
    (docs/results/teacher_overhead.md). Our reading, not checked in XLA's source: a
    device waiting in a collective holds a thread of the pool."""
    return (os.cpu_count() or 1) + devices - 1


def device_mesh(devices: int | None = None, axis: str = SEED_AXIS) -> Mesh:
    """A one-axis mesh over the first `devices` devices (None: all of them; with several
    processes, `jax.devices()` lists every process's)."""
    available = jax.devices()
    count = len(available) if devices is None else devices
    if not 1 <= count <= len(available):
        kind = available[0].platform
        raise ConfigError(
            f"devices must be between 1 and the {len(available)} {kind} device(s) "
            f"JAX sees, got {count}"
        )
    return Mesh(np.asarray(available[:count]), (axis,))


def padded_count(count: int, devices: int) -> int:
    """`count` rounded up to a multiple of `devices`."""
    return -(-count // devices) * devices


def axes_to_specs(axes: Any, axis: str = SEED_AXIS) -> Any:
    """vmap axes (0: batched, None: shared) -> shard_map specs: batched leading axes split
    over `axis`, shared values replicated."""

    def spec(a: int | None) -> PartitionSpec:
        if a is None:
            return PartitionSpec()
        if a != 0:
            raise ValueError(f"only leading seed axes can be sharded, got axis {a}")
        return PartitionSpec(axis)

    return jax.tree.map(spec, axes, is_leaf=lambda a: a is None)


def env_specs(axis: str = ENV_AXIS) -> LoopCarry:
    """shard_map specs of a LoopCarry ([S, ...] leaves) with instances split over `axis`:
    the slots' [S, N, ...] on their instance axis, all else replicated."""
    shared = PartitionSpec()
    return LoopCarry(
        iteration=shared,
        seed=SeedCarry(shared, shared, PartitionSpec(None, axis), shared, shared),
    )


@dataclass(frozen=True)
class DeviceLayout:
    """How one run is laid out over devices; see the module docstring."""

    trainer: Trainer
    mesh: Mesh | None
    """None: one device, the single-device path."""
    num_seeds: int
    """The run's seeds (`config.num_seeds`)."""
    padded_seeds: int
    """Seeds actually run: with seeds split, `num_seeds` rounded up to a multiple of the
    devices."""
    shard_envs: bool = False
    """Instances split over the devices instead of seeds (`loop.shard_envs`)."""
    overlap_teacher: bool = False
    """The teacher's update on a second device (`loop.overlap_teacher`)."""

    @classmethod
    def create(cls, trainer: Trainer, devices: int | None = None) -> DeviceLayout:
        """The layout of `trainer`'s run over `devices` (None: every device)."""
        shard_envs = trainer.config.loop.shard_envs
        seeds = trainer.config.num_seeds
        if trainer.config.loop.overlap_teacher:
            if devices not in (None, 2) or len(jax.devices()) < 2:
                raise ConfigError(
                    f"loop.overlap_teacher takes two devices; asked for {devices}, JAX "
                    f"sees {len(jax.devices())}. On CPU, start Python with "
                    f"XLA_FLAGS={HOST_DEVICES_FLAG}=2 and {HOST_THREADS_VARIABLE}="
                    f"{host_threads(2)} (experiments.run does it itself)"
                )
            mesh = device_mesh(2, ROLE_AXIS)
            overlapped = trainer.with_teacher_beside(ROLE_AXIS)
            return cls(overlapped, mesh, seeds, seeds, overlap_teacher=True)
        mesh = device_mesh(devices, ENV_AXIS if shard_envs else SEED_AXIS)
        count = int(mesh.devices.size)
        if count == 1:
            return cls(trainer, None, seeds, seeds)
        if shard_envs:
            sharded = trainer.with_env_shards(ENV_AXIS, count)  # checks the split
            minibatches = getattr(trainer.agent, "config", None)
            minibatches = getattr(minibatches, "num_minibatches", 1)
            if (sharded.local_envs * trainer.num_steps) % minibatches:
                raise ConfigError(
                    f"loop.shard_envs: agent.num_minibatches ({minibatches}) must divide "
                    f"each device's num_envs / devices * num_steps "
                    f"({sharded.local_envs * trainer.num_steps})"
                )
            return cls(sharded, mesh, seeds, seeds, shard_envs=True)
        return cls(trainer, mesh, seeds, padded_count(seeds, count))

    @property
    def devices(self) -> int:
        return 1 if self.mesh is None else int(self.mesh.devices.size)

    def seed_keys(self) -> jax.Array:
        """Keys of the real seeds, then of the padding seeds."""
        return self.trainer.seed_keys(self.padded_seeds)

    def real_seeds(self, tree: Any) -> Any:
        """Per-seed results ([S', ...] leaves) without the padding seeds."""
        if self.padded_seeds == self.num_seeds:
            return tree
        return jax.tree.map(lambda x: x[: self.num_seeds], tree)

    def to_host(self, tree: Any) -> Any:
        """Per-seed results as numpy, every seed's on every process (with several
        processes a device's seeds live on its own process only), padding dropped."""
        if jax.process_count() > 1:
            from jax.experimental import multihost_utils

            tree = multihost_utils.process_allgather(tree, tiled=True)
        return self.real_seeds(jax.device_get(tree))

    def _sharded(self, fn, in_specs, out_specs, host_args: int = 0):
        mapped = jax.shard_map(
            fn,
            mesh=self.mesh,
            in_specs=in_specs,
            out_specs=out_specs,
            # The loop's scans carry values that start shared (zeros) and become
            # per-device; the check would reject them. Replicated outputs are equal on
            # every device by construction: they mix in no device's own data unless
            # through a psum or all_gather.
            check_vma=False,
        )
        if not host_args:
            return jax.jit(mapped)
        # The first `host_args` arguments come from the host (keys, RunData): they enter
        # replicated, the one sharding JAX takes for host arrays of several processes,
        # and shard_map slices them.
        shared = NamedSharding(self.mesh, PartitionSpec())
        return jax.jit(mapped, in_shardings=(shared,) * host_args)

    @property
    def _seeds_split(self) -> bool:
        return not (self.shard_envs or self.overlap_teacher)

    def _carry_specs(self, data_axis: int | None) -> LoopCarry:
        if self.shard_envs:
            return env_specs()
        if self.overlap_teacher:
            axes = self.trainer.carry_axes_for(data_axis)
            return jax.tree.map(lambda _: PartitionSpec(), axes, is_leaf=lambda a: a is None)
        return axes_to_specs(self.trainer.carry_axes_for(data_axis))

    def _data_spec(self, data_axis: int | None) -> Any:
        return axes_to_specs(data_axis) if self._seeds_split else PartitionSpec()

    def jit_init_seeds(self, data_axis: int | None = None):
        """`Trainer.jit_init_seeds` laid out over the mesh."""
        if self.mesh is None:
            return self.trainer.jit_init_seeds(data_axis)
        axes = self.trainer.carry_axes_for(data_axis)

        def init_seeds(keys: jax.Array, data=None):
            return jax.vmap(self.trainer.init, in_axes=(0, data_axis), out_axes=axes)(keys, data)

        keys_spec = PartitionSpec(SEED_AXIS) if self._seeds_split else PartitionSpec()
        return self._sharded(
            init_seeds,
            (keys_spec, self._data_spec(data_axis)),
            self._carry_specs(data_axis),
            host_args=2,
        )

    def jit_run_chunk_seeds(self, data_axis: int | None = None):
        """`Trainer.jit_run_chunk_seeds` laid out over the mesh."""
        if self.mesh is None:
            return self.trainer.jit_run_chunk_seeds(data_axis)
        axes = self.trainer.carry_axes_for(data_axis)
        run = jax.vmap(self.trainer.run_chunk, in_axes=(axes,), out_axes=(axes, 0))
        carry = self._carry_specs(data_axis)
        metrics = PartitionSpec(SEED_AXIS) if self._seeds_split else PartitionSpec()
        return self._sharded(run, (carry,), (carry, metrics))

    def jit_iterations_seeds(self, iterations: int):
        """(seed carry [S, ...], first iteration) -> the seed carry after `iterations` loop
        iterations, no evaluation, laid out over the mesh: what the bench_* scripts time
        (acl.benchmark.timing). With `overlap_teacher` the teacher's device returns stale
        agent state and slots (only an evaluation, `run_chunk`, sends it the learner's);
        it never reads them."""
        trainer = self.trainer

        def train_iterations(seed: SeedCarry, first: jax.Array) -> SeedCarry:
            return trainer.run_iterations(LoopCarry(first, seed), iterations)[0].seed

        axes = trainer.carry_axes.seed
        run = jax.vmap(train_iterations, in_axes=(axes, None), out_axes=axes)
        if self.mesh is None:
            return jax.jit(run)
        seed = self._carry_specs(None).seed
        return self._sharded(run, (seed, PartitionSpec()), seed)
