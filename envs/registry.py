"""The env registry: `make_env("cartpole", max_episode_steps=200)`.

Every env module registers its class (or a factory) with `@ENVS.register(name)`;
`envs/__init__.py` imports them all. Keyword arguments are static config (they set
shapes or episode lengths, not what a teacher may change).
"""

from __future__ import annotations

import inspect
from typing import Any

from acl.errors import ConfigError
from acl.registry import Registry

ENVS: Registry[Any] = Registry("env")


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
