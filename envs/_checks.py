"""Config checks shared by the env constructors (raise before anything compiles)."""

from __future__ import annotations

from acl.core.errors import ConfigError


def positive_int(value, field: str, allow_none: bool = True) -> int | None:
    """`value` as an int > 0, or None when allowed; ConfigError naming `field` otherwise."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{field} must be a positive integer, got {value!r}")
    return value


def non_negative_int(value, field: str) -> int:
    """`value` as an int >= 0; ConfigError naming `field` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{field} must be an integer >= 0, got {value!r}")
    return value
