"""The env registry (`make_env("cartpole", max_episode_steps=200)`) and the envs' named
test sets (`TEST_SETS`).

Every env module registers its class (or a factory) with `@ENVS.register(name)`;
`envs/__init__.py` imports them all. Keyword arguments are static config (they set
shapes or episode lengths, not what a teacher may change).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from acl.core.errors import ConfigError
from acl.core.registry import PluginGroup, Registry

ENVS: Registry[Any] = Registry(
    "env",
    PluginGroup(
        "acl_jax.envs",
        factory="an envs.base.TaskEnv class, or a callable building one, whose keyword "
        "arguments are its static config",
    ),
)
"""Env factories, called as factory(**static_config); plug-ins: entry points of the group
`acl_jax.envs` (acl.core.registry, docs/plugins.md)."""

TEST_SETS: Registry[Callable[..., tuple[tuple[str, ...], np.ndarray]]] = Registry(
    "env with named test sets"
)
"""Env name -> provider(env, spec, seed) -> (names, tasks [M, D] float32 numpy), read by
acl.loop.evaluation for `eval.test_set`.

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
