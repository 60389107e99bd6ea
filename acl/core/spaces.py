"""Task spaces: what a teacher may choose for each environment instance."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from acl.core.errors import ConfigError


@dataclass(frozen=True)
class Limit:
    """The values of one task dimension that mean something physical (a mass > 0, a
    coordinate in [0, 1]). Task bounds must stay inside it, so that a config cannot hand
    an env a negative pole length that would run to the end on meaningless physics."""

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    """`low` itself is excluded (> low)."""
    high_open: bool = False

    def __contains__(self, x: float) -> bool:
        # Written as `not (x >= low)` so that NaN is outside.
        if not (x > self.low if self.low_open else x >= self.low):
            return False
        return x < self.high if self.high_open else x <= self.high

    def __str__(self) -> str:
        """ "> 0", ">= 0", "in [0, 1]", or "any number"."""
        low, high = math.isfinite(self.low), math.isfinite(self.high)
        if low and high:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"in {left}{self.low:g}, {self.high:g}{right}"
        if low:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        if high:
            return f"{'<' if self.high_open else '<='} {self.high:g}"
        return "any number"


POSITIVE = Limit(0.0, low_open=True)
"""A mass, a length: zero or less breaks the dynamics (divisions, degenerate bodies)."""
NON_NEGATIVE = Limit(0.0)
"""A magnitude (a force, a torque, a gap): zero is a valid if useless task."""
UNIT = Limit(0.0, 1.0)
"""A normalised coordinate or bit: outside [0, 1] is off the grid or the map."""


def task_bound(value, space: Box, field_name: str) -> tuple[float, ...]:
    """A config's task bound (`env.task_low`, ...) as floats: a list of `space.dim`
    finite numbers, each inside its dimension's limit; ConfigError naming `field_name`."""
    ok = isinstance(value, list | tuple) and len(value) == space.dim
    ok = ok and all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value
    )
    if not ok:
        raise ConfigError(
            f"{field_name} must be a list of {space.dim} finite numbers, got {value!r}"
        )
    values = tuple(float(v) for v in value)
    space.check_limits(values, field_name)
    return values


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
    limits: tuple[Limit, ...] = ()
    """Physical limit of each dimension, which `low` and `high` must respect (kept by
    `replace`, so narrowed or widened spaces are checked too); (): any finite number."""

    def __post_init__(self):
        low, high = tuple(map(float, self.low)), tuple(map(float, self.high))
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        if len(low) != len(high) or not low:
            raise ConfigError(
                f"{self.field_name}: low and high need the same non-zero length, "
                f"got {len(low)} and {len(high)}"
            )
        if self.limits and len(self.limits) != len(low):
            raise ConfigError(
                f"{self.field_name}.limits has {len(self.limits)} entries, expected {len(low)}"
            )
        self.check_limits(low, f"{self.field_name}.low")
        self.check_limits(high, f"{self.field_name}.high")
        for i, (lo, hi) in enumerate(zip(low, high)):
            if not lo < hi:
                raise ConfigError(
                    f"{self.field_name}: low must be < high in every dimension; "
                    f"dimension {self._name(i)} has low={lo} >= high={hi}"
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

    def _name(self, i: int) -> str:
        return repr(self.names[i]) if i < len(self.names) else str(i)

    def check_limits(self, values: tuple[float, ...], field_name: str) -> None:
        """ConfigError naming `field_name` and the dimension unless every value is finite
        and inside its dimension's limit."""
        for i, x in enumerate(values):
            if not math.isfinite(x):
                raise ConfigError(
                    f"{field_name}: dimension {self._name(i)} must be finite, got {x}"
                )
            if self.limits and x not in self.limits[i]:
                raise ConfigError(
                    f"{field_name}: dimension {self._name(i)} must be {self.limits[i]} "
                    f"(its physical limit), got {x:g}"
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
