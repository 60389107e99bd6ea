"""A run over several devices: its seeds, or each seed's env instances, split over a
one-axis device mesh (`jax.sharding.Mesh`) by `jax.shard_map`.

    layout = DeviceLayout.create(trainer, devices=4)
    keys = layout.seed_keys()                       # [S'] keys, S' a multiple of 4
    carry = layout.jit_init_seeds()(keys, data)
    carry, metrics = layout.jit_run_chunk_seeds()(carry)
    metrics = layout.real_seeds(jax.device_get(metrics))    # the first S seeds

How the run wants its devices used is the trainer's `device_split` (acl.loop.placement,
set by acl.build from `loop.shard_envs` and `loop.overlap_teacher`):

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
of its instances (`acl.loop.placement.EnvShards`); agent and teacher state are
replicated, the agent's update averages gradients over the devices and the teacher reads
every device's feedback.

The teacher beside the agent (`loop.overlap_teacher`): two devices each hold all S
seeds; device 0 rolls out and updates the agent while device 1 updates the teacher
(`acl.loop.placement.TeacherBeside`). On CPU the two are XLA host devices, which JAX
creates only when asked before it starts (`HOST_DEVICES_FLAG`, with one more intra-op
thread: `host_threads`; experiments.run restarts itself with both).

One device (the default on a one-device machine) takes the single-device path
unchanged: `Trainer.jit_init_seeds` and `jit_run_chunk_seeds`, no mesh.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from acl.core.errors import ConfigError
from acl.loop.carry import LoopCarry, SeedCarry
from acl.loop.placement import DeviceSplit, EnvShards, TeacherBeside
from acl.loop.train import Trainer

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


def replicated(axes: Any) -> Any:
    """Every leaf of a tree of vmap axes as a replicated shard_map spec."""
    return jax.tree.map(lambda _: PartitionSpec(), axes, is_leaf=lambda a: a is None)


def env_specs(axis: str = ENV_AXIS) -> LoopCarry:
    """shard_map specs of a LoopCarry ([S, ...] leaves) with instances split over `axis`:
    the slots' [S, N, ...] on their instance axis, all else replicated."""
    shared = PartitionSpec()
    return LoopCarry(
        iteration=shared,
        seed=SeedCarry(shared, shared, PartitionSpec(None, axis), shared, shared),
    )


@dataclass(frozen=True)
class MeshSplit:
    """What a mesh splits and how the mapped function's inputs and outputs lie on it."""

    axis: str
    splits_seeds: bool
    """Each device holds its own seeds; else every device holds all of them."""
    carry_specs: Callable[[LoopCarry], LoopCarry]
    """The vmap axes of the carry -> its shard_map specs."""

    @property
    def seed_spec(self) -> PartitionSpec:
        """The spec of per-seed inputs and outputs ([S, ...] leaves)."""
        return PartitionSpec(self.axis) if self.splits_seeds else PartitionSpec()

    def data_spec(self, data_axis: int | None) -> Any:
        return axes_to_specs(data_axis) if self.splits_seeds else PartitionSpec()


SEEDS_SPLIT = MeshSplit(SEED_AXIS, True, axes_to_specs)
ENVS_SPLIT = MeshSplit(ENV_AXIS, False, lambda axes: env_specs())
ROLES_SPLIT = MeshSplit(ROLE_AXIS, False, replicated)


@dataclass(frozen=True)
class DeviceLayout:
    """How one run is laid out over devices; see the module docstring."""

    trainer: Trainer
    """The loop, with the placement of its iterations on the mesh's devices."""
    mesh: Mesh | None
    """None: one device, the single-device path."""
    num_seeds: int
    """The run's seeds."""
    padded_seeds: int
    """Seeds actually run: with seeds split, `num_seeds` rounded up to a multiple of the
    devices."""
    split: MeshSplit = SEEDS_SPLIT

    @classmethod
    def create(cls, trainer: Trainer, devices: int | None = None) -> DeviceLayout:
        """The layout of `trainer`'s run over `devices` (None: every device), as its
        `device_split` asks."""
        return _LAYOUTS[trainer.device_split](trainer, devices)

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

    def jit_init_seeds(self, data_axis: int | None = None):
        """`Trainer.jit_init_seeds` laid out over the mesh."""
        if self.mesh is None:
            return self.trainer.jit_init_seeds(data_axis)
        axes = self.trainer.carry_axes_for(data_axis)

        def init_seeds(keys: jax.Array, data=None):
            return jax.vmap(self.trainer.init, in_axes=(0, data_axis), out_axes=axes)(keys, data)

        return self._sharded(
            init_seeds,
            (self.split.seed_spec, self.split.data_spec(data_axis)),
            self.split.carry_specs(axes),
            host_args=2,
        )

    def jit_run_chunk_seeds(self, data_axis: int | None = None):
        """`Trainer.jit_run_chunk_seeds` laid out over the mesh."""
        if self.mesh is None:
            return self.trainer.jit_run_chunk_seeds(data_axis)
        axes = self.trainer.carry_axes_for(data_axis)
        run = jax.vmap(self.trainer.run_chunk, in_axes=(axes,), out_axes=(axes, 0))
        carry = self.split.carry_specs(axes)
        return self._sharded(run, (carry,), (carry, self.split.seed_spec))

    def jit_iterations_seeds(self, iterations: int):
        """(seed carry [S, ...], first iteration) -> the seed carry after `iterations` loop
        iterations, no evaluation, laid out over the mesh: what the bench_* scripts time
        (acl.benchmark.timing). With the teacher beside the agent the teacher's device
        returns stale agent state and slots (only an evaluation, `run_chunk`, sends it
        the learner's); it never reads them."""
        trainer = self.trainer

        def train_iterations(seed: SeedCarry, first: jax.Array) -> SeedCarry:
            return trainer.run_iterations(LoopCarry(first, seed), iterations)[0].seed

        axes = trainer.carry_axes.seed
        run = jax.vmap(train_iterations, in_axes=(axes, None), out_axes=axes)
        if self.mesh is None:
            return jax.jit(run)
        seed = self.split.carry_specs(trainer.carry_axes).seed
        return self._sharded(run, (seed, PartitionSpec()), seed)


def _seeds_over_devices(trainer: Trainer, devices: int | None) -> DeviceLayout:
    seeds = trainer.seeds.count
    mesh = device_mesh(devices, SEED_AXIS)
    count = int(mesh.devices.size)
    if count == 1:
        return DeviceLayout(trainer, None, seeds, seeds)
    return DeviceLayout(trainer, mesh, seeds, padded_count(seeds, count), SEEDS_SPLIT)


def _envs_over_devices(trainer: Trainer, devices: int | None) -> DeviceLayout:
    seeds = trainer.seeds.count
    mesh = device_mesh(devices, ENV_AXIS)
    count = int(mesh.devices.size)
    if count == 1:
        return DeviceLayout(trainer, None, seeds, seeds)
    return DeviceLayout(with_env_shards(trainer, count), mesh, seeds, seeds, ENVS_SPLIT)


def with_env_shards(trainer: Trainer, shards: int) -> Trainer:
    """`trainer` with each seed's instances split `shards` ways over `ENV_AXIS`
    (acl.loop.placement.EnvShards); ConfigError where the run cannot be split so."""
    schedule = trainer.schedule
    if not trainer.task_layout.splits_by_instance:
        raise ConfigError(
            "loop.shard_envs does not take loop.task_pool: the pool hands out tasks "
            "in the order of all instances' resets, which no shard sees"
        )
    if not trainer.agent.averages_gradients:
        raise ConfigError(
            f"loop.shard_envs needs an agent whose update averages gradients over "
            f"devices (as PPO's); {type(trainer.agent).__name__} does not"
        )
    if schedule.num_envs % shards:
        raise ConfigError(
            f"loop.shard_envs: loop.num_envs ({schedule.num_envs}) must be a multiple of "
            f"the devices ({shards})"
        )
    local_steps = schedule.num_envs // shards * schedule.num_steps
    minibatches = trainer.agent.num_minibatches
    if local_steps % minibatches:
        raise ConfigError(
            f"loop.shard_envs: agent.num_minibatches ({minibatches}) must divide "
            f"each device's num_envs / devices * num_steps ({local_steps})"
        )
    return trainer.placed(EnvShards.create(ENV_AXIS, shards, schedule.num_envs, schedule.num_steps))


def _teacher_beside(trainer: Trainer, devices: int | None) -> DeviceLayout:
    if devices not in (None, 2) or len(jax.devices()) < 2:
        raise ConfigError(
            f"loop.overlap_teacher takes two devices; asked for {devices}, JAX "
            f"sees {len(jax.devices())}. On CPU, start Python with "
            f"XLA_FLAGS={HOST_DEVICES_FLAG}=2 and {HOST_THREADS_VARIABLE}="
            f"{host_threads(2)} (experiments.run does it itself)"
        )
    seeds = trainer.seeds.count
    placed = trainer.placed(TeacherBeside(ROLE_AXIS))
    return DeviceLayout(placed, device_mesh(2, ROLE_AXIS), seeds, seeds, ROLES_SPLIT)


_LAYOUTS: dict[DeviceSplit, Callable[[Trainer, int | None], DeviceLayout]] = {
    DeviceSplit.SEEDS: _seeds_over_devices,
    DeviceSplit.ENVS: _envs_over_devices,
    DeviceSplit.TEACHER_BESIDE: _teacher_beside,
}
