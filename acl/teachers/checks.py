"""Construction-time checks shared by the teachers: each failure is a `ConfigError` that
names the `teacher.*` key at fault; and the defaults the checked keys leave to the task
space (`with_base_task`). Host side only (call them in `__post_init__`, `default_params`
or a factory, never inside a trace)."""

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
    protocol: type,
    methods: tuple[str, ...] = (),
) -> None:
    """The env a teacher was handed: present, implementing `protocol` (an `envs.base`
    class, checked with `isinstance`), on the teacher's task space.

    `uses` says what the teacher does with the env, `build` how to hand it one, `methods`
    which of the protocol's members it calls (named in the error).
    """
    check(
        env is not None,
        f"teacher.env: the {name} teacher {uses} and needs the env object: build it with {build}",
    )
    needs = f" ({', '.join(methods)})" if methods else ""
    check(
        isinstance(env, protocol),
        f"teacher.env: the {name} teacher needs an env implementing "
        f"{protocol.__module__}.{protocol.__name__}{needs}; {type(env).__name__} does not",
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


def per_dimension(values, dim: int, name: str) -> tuple[float, ...]:
    """`teacher.<name>` (a prior's mean or std: one entry, or one per task dimension) as
    `dim` floats, the one entry repeated."""
    check(
        len(values) in (1, dim),
        f"teacher.{name} has {len(values)} entries, the task space {dim}",
    )
    return tuple(np.broadcast_to(values, (dim,)).tolist())


def with_base_task(hyper, task_space: Box):
    """`hyper` (a params struct with a `base_task` leaf, checked by `base_task`) with its
    base_task filled in: the task space's default task where unset. The goal and start
    teachers' `default_params`."""
    if hyper.base_task is not None:
        return hyper
    return hyper.replace(base_task=task_space.default_task)
