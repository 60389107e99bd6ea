"""The env registry (`make_env("cartpole", max_episode_steps=200)`), the envs' named test
sets (`TEST_SETS`), and `Registry`, the name -> factory map with "did you mean" errors
that acl's teachers and agents use too: it lives here because envs imports nothing from acl.

Every env module registers its class (or a factory) with `@ENVS.register(name)`;
`envs/__init__.py` imports them all. Keyword arguments are static config (they set
shapes or episode lengths, not what a teacher may change).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import numpy as np

from envs.errors import ConfigError

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


ENVS: Registry[Any] = Registry("env")

TEST_SETS: Registry[Callable[..., tuple[tuple[str, ...], np.ndarray]]] = Registry(
    "env with named test sets"
)
"""Env name -> provider(env, spec, seed) -> (names, tasks [M, D] float32 numpy), read by
acl.evaluation for `eval.test_set`.

`spec` is the config's `eval.test_set`: a set's name or a list of level names; `seed`
draws procedural levels. A provider raises ConfigError for a name it does not know.
Env modules register theirs (`@TEST_SETS.register("maze")`)."""


def make_env(name: str, **kwargs) -> Any:
    """Build the registered env `name` with static config `kwargs`.

    Raises ConfigError (before anything is compiled) for an unknown name, with the
    closest registered names, or for a keyword the env does not take.
    """
    factory = ENVS.get(name, field="env")
    try:
        inspect.signature(factory).bind(**kwargs)
    except TypeError as err:
        params = [
            p.name
            for p in inspect.signature(factory).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        raise ConfigError(
            f"env '{name}': bad config {sorted(kwargs)} ({err}); "
            f"accepted: {', '.join(params) or 'none'}"
        ) from None
    return factory(**kwargs)
