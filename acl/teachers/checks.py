"""Construction-time checks shared by the teachers: each failure is a `ConfigError` that
names the `teacher.*` key at fault. Host side only (call them in `__post_init__` or a
factory, never inside a trace)."""

from __future__ import annotations

import numpy as np

from acl.core.errors import ConfigError
from acl.core.spaces import Box


def check(cond: bool, message: str) -> None:
    if not cond:
        raise ConfigError(message)


def check_env(
    env,
    task_space: Box,
    name: str,
    *,
    uses: str,
    build: str,
    protocol: type | None = None,
    methods: tuple[str, ...] = (),
) -> None:
    """The env a teacher was handed: present, implementing `protocol` (an `envs.base`
    class) or else having each of `methods`, on the teacher's task space.

    `uses` says what the teacher does with the env, `build` how to hand it one.
    """
    check(
        env is not None,
        f"teacher.env: the {name} teacher {uses} and needs the env object: build it with {build}",
    )
    if protocol is not None:
        check(
            isinstance(env, protocol),
            f"teacher.env: the {name} teacher needs an env implementing "
            f"{protocol.__module__}.{protocol.__name__} ({', '.join(methods)}); "
            f"{type(env).__name__} does not",
        )
    else:
        for method in methods:
            check(
                callable(getattr(env, method, None)),
                f"teacher.env: the {name} teacher needs an env with `{method}`; "
                f"{type(env).__name__} has none",
            )
    check(
        env.task_space.dim == task_space.dim,
        f"teacher.env: its task space has {env.task_space.dim} dimensions, the "
        f"teacher's {task_space.dim}",
    )


def base_task(task_space: Box, values) -> tuple[float, ...] | None:
    """`teacher.base_task` (the task whose other coordinates a goal or start teacher
    keeps) as a tuple inside the task space, or None when not given."""
    if values is None:
        return None
    values = tuple(float(v) for v in np.ravel(values))
    check(
        len(values) == task_space.dim,
        f"teacher.base_task has {len(values)} entries, the task space {task_space.dim}",
    )
    low, high = np.asarray(task_space.low), np.asarray(task_space.high)
    check(
        bool(np.all((np.asarray(values) >= low) & (np.asarray(values) <= high))),
        f"teacher.base_task {values} lies outside the task space "
        f"[{task_space.low}, {task_space.high}]",
    )
    return values
