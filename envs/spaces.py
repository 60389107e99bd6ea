"""Task spaces: what a teacher may choose for each environment instance."""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from envs.errors import ConfigError


@dataclass(frozen=True)
class Box:
    """A continuous task space: a box [low, high] in R^D.

    Attributes are plain tuples so the space is hashable and can be a static field.
    """

    low: tuple[float, ...]
    """Lower bound of each task dimension."""
    high: tuple[float, ...]
    """Upper bound of each task dimension."""
    names: tuple[str, ...] = ()
    """Name of each dimension, e.g. ("pole_length", "pole_mass")."""
    units: tuple[str, ...] = ()
    """Physical unit of each dimension, for docs and plots."""
    default: tuple[float, ...] | None = None
    """The env's standard task (the Fixed teacher's task); the centre if None."""
    field_name: str = field(default="task_space", compare=False)
    """Config field this space came from, used in error messages."""

    def __post_init__(self):
        low, high = tuple(map(float, self.low)), tuple(map(float, self.high))
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        if len(low) != len(high) or not low:
            raise ConfigError(
                f"{self.field_name}: low and high need the same non-zero length, "
                f"got {len(low)} and {len(high)}"
            )
        for i, (lo, hi) in enumerate(zip(low, high)):
            if not lo < hi:
                name = self.names[i] if i < len(self.names) else str(i)
                raise ConfigError(
                    f"{self.field_name}.low must be < high in every dimension; "
                    f"dimension {name!r} has low={lo} >= high={hi}"
                )
        if self.names and len(self.names) != len(low):
            raise ConfigError(
                f"{self.field_name}.names has {len(self.names)} entries, expected {len(low)}"
            )
        if self.default is not None:
            default = tuple(map(float, self.default))
            object.__setattr__(self, "default", default)
            if len(default) != len(low):
                raise ConfigError(
                    f"{self.field_name}.default has {len(default)} entries, expected {len(low)}"
                )

    @property
    def dim(self) -> int:
        return len(self.low)

    @property
    def low_array(self) -> jax.Array:
        return jnp.asarray(self.low, jnp.float32)

    @property
    def high_array(self) -> jax.Array:
        return jnp.asarray(self.high, jnp.float32)

    @property
    def default_task(self) -> jax.Array:
        if self.default is None:
            return (self.low_array + self.high_array) / 2
        return jnp.asarray(self.default, jnp.float32)

    def sample_uniform(self, key: jax.Array, n: int) -> jax.Array:
        """Uniform tasks, shape [n, D]."""
        return jax.random.uniform(key, (n, self.dim), minval=self.low_array, maxval=self.high_array)

    def clip(self, tasks: jax.Array) -> jax.Array:
        return jnp.clip(tasks, self.low_array, self.high_array)

    def contains(self, tasks: jax.Array) -> jax.Array:
        """Whether each task of shape [..., D] lies in the box, shape [...]."""
        return jnp.all((tasks >= self.low_array) & (tasks <= self.high_array), axis=-1)

    def grid(self, per_dim: int) -> np.ndarray:
        """A regular grid of cell centres, shape [per_dim**D, D], row-major."""
        axes = [
            lo + (np.arange(per_dim) + 0.5) * (hi - lo) / per_dim
            for lo, hi in zip(self.low, self.high)
        ]
        mesh = np.meshgrid(*axes, indexing="ij")
        return np.stack([m.reshape(-1) for m in mesh], axis=-1).astype(np.float32)

    def replace(self, **changes) -> Box:
        from dataclasses import replace

        return replace(self, **changes)
