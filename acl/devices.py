"""Seeds over devices: the vmapped seed axis of the loop, split over a device mesh.

    sharding = SeedSharding.create(trainer, devices=4)
    keys = sharding.seed_keys()                      # [S'] keys, S' a multiple of 4
    carry = sharding.jit_init_seeds()(keys, data)
    carry, metrics = sharding.jit_run_chunk_seeds()(carry)
    metrics = sharding.real_seeds(jax.device_get(metrics))   # the first S seeds

Each device runs the same vmap the single-device loop runs, over its S'/N seeds
(`jax.shard_map` over a one-axis `jax.sharding.Mesh`); the iteration counter and a
shared `RunData` are replicated. Seeds never talk to each other, so the program holds
no collective. S seeds over N devices: when N does not divide S, the seed axis is
padded to the next multiple of N with the seeds that a larger run would have
(`config.seed + S`, `+ S + 1`, ...); their results are dropped by `real_seeds`. A
seed's result does not depend on the seeds beside it (tests/test_devices.py checks it
bit for bit on CPU), so a padded or sharded run gives every real seed the metrics of
the single-device run.

One device (the default on a one-device machine) takes the single-device path
unchanged: `Trainer.jit_init_seeds` and `jit_run_chunk_seeds`, no mesh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from acl.errors import ConfigError
from acl.train import Trainer

SEED_AXIS = "seeds"
"""The mesh axis the seed axis is split over."""


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


def pad_leading(tree: Any, size: int) -> Any:
    """Each leaf's leading axis padded to `size` by repeating its last row."""

    def pad(x):
        x = np.asarray(x)
        extra = size - x.shape[0]
        return x if extra == 0 else np.concatenate([x, np.repeat(x[-1:], extra, axis=0)])

    return jax.tree.map(pad, tree)


@dataclass(frozen=True)
class SeedSharding:
    """How one run's seeds are laid out over devices; see the module docstring."""

    trainer: Trainer
    mesh: Mesh | None
    """None: one device, the single-device path."""
    num_seeds: int
    """The run's seeds (`config.num_seeds`)."""
    padded_seeds: int
    """Seeds actually run: `num_seeds` rounded up to a multiple of the devices."""

    @classmethod
    def create(cls, trainer: Trainer, devices: int | None = None) -> SeedSharding:
        """The layout of `trainer`'s seeds over `devices` (None: every device)."""
        mesh = device_mesh(devices)
        count = mesh.devices.size
        seeds = trainer.config.num_seeds
        return cls(trainer, mesh if count > 1 else None, seeds, padded_count(seeds, count))

    @property
    def devices(self) -> int:
        return 1 if self.mesh is None else int(self.mesh.devices.size)

    def seed_keys(self) -> jax.Array:
        """Keys of the real seeds, then of the padding seeds."""
        return self.trainer.seed_keys(self.padded_seeds)

    def pad_data(self, data: Any) -> Any:
        """A per-seed `RunData` ([S, ...], data_axis 0) padded to the run's seed count."""
        return pad_leading(data, self.padded_seeds)

    def real_seeds(self, tree: Any) -> Any:
        """Per-seed results ([S', ...] leaves) without the padding seeds."""
        if self.padded_seeds == self.num_seeds:
            return tree
        return jax.tree.map(lambda x: x[: self.num_seeds], tree)

    def _sharded(self, fn, in_axes, out_axes):
        return jax.jit(
            jax.shard_map(
                fn,
                mesh=self.mesh,
                in_specs=axes_to_specs(in_axes),
                out_specs=axes_to_specs(out_axes),
                # The loop's scans carry values that start shared (zeros) and become
                # per-seed; the check would reject them. Nothing here is a collective, and
                # the only replicated outputs (iteration, RunData) never mix in a seed.
                check_vma=False,
            )
        )

    def jit_init_seeds(self, data_axis: int | None = None):
        """`Trainer.jit_init_seeds` with the seed axis split over the mesh."""
        if self.mesh is None:
            return self.trainer.jit_init_seeds(data_axis)
        axes = self.trainer.carry_axes_for(data_axis)

        def init_seeds(keys: jax.Array, data=None):
            return jax.vmap(self.trainer.init, in_axes=(0, data_axis), out_axes=axes)(keys, data)

        return self._sharded(init_seeds, (0, data_axis), axes)

    def jit_run_chunk_seeds(self, data_axis: int | None = None):
        """`Trainer.jit_run_chunk_seeds` with the seed axis split over the mesh."""
        if self.mesh is None:
            return self.trainer.jit_run_chunk_seeds(data_axis)
        axes = self.trainer.carry_axes_for(data_axis)
        run = jax.vmap(self.trainer.run_chunk, in_axes=(axes,), out_axes=(axes, 0))
        return self._sharded(run, (axes,), (axes, 0))
