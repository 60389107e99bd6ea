"""`Registry`: a name -> factory map with "did you mean" errors, which the envs, teachers
and agents registries share."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Generic, TypeVar

from acl.core.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to factories; `get` suggests the closest names for a typo."""

    def __init__(self, kind: str):
        self.kind = kind
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorator(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._factories[name] = factory
            return factory

        return decorator

    def names(self) -> list[str]:
        return sorted(self._factories)

    def check(self, name: str, field: str | None = None) -> None:
        """Raise ConfigError if `name` is unknown, naming the config field and close matches."""
        if name in self._factories:
            return
        close = difflib.get_close_matches(str(name), self.names(), n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        where = f"{field}: " if field else ""
        raise ConfigError(
            f"{where}unknown {self.kind} '{name}'{hint} (known: {', '.join(self.names())})"
        )

    def get(self, name: str, field: str | None = None) -> Callable[..., T]:
        self.check(name, field)
        return self._factories[name]

    def make(self, name: str, **kwargs) -> T:
        return self.get(name)(**kwargs)

    def __contains__(self, name: str) -> bool:
        return name in self._factories
