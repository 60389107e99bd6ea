"""A teacher over some task dimensions only: any registered teacher chooses those, the
others stay those of a base task.

A `Box` task space cannot pin a dimension (low < high everywhere), so a teacher that
samples the whole box, ALP-GMM say, cannot be told "goals only, start fixed". This one
runs an inner teacher on the sub-box of `dims` and writes its choices into `base_task`:

    sample: inner tasks [n, d] -> base_task [D] with columns `dims` replaced -> [n, D]
    update: tasks and feedback tasks projected onto `dims` -> the inner teacher's update

Columns an inner teacher appends past its d (`Feedback.task` may be wider than the env's
task, acl.teachers.base) follow the D env columns and come back to it in its feedback.
The view composes like any wrapper: the inner teacher's `wrap_student` is the view's,
and its `update` gets the view's context with `env_tasks` mapping its coordinates
through `base_task` (and then through the map the view was given, if any), so a teacher
that plays levels of its own (SFL) plays them where the view puts them.
The inner teacher is built on the sub-box with the run's context, so it sees the run's
return bounds and loop mode; a teacher that needs the env's own task space (goal and
level teachers) cannot run inside it (its env check fails on the dimensions).

Config: `teacher` (the inner teacher's name), `dims` (names or indices of the task
dimensions it chooses), `base_task` (the task whose other dimensions are kept; default:
the task space's default task), and `inner` (a mapping of the inner teacher's own keys).
For point_maze goals with the start fixed:

    teacher: {name: subspace, teacher: alp_gmm, dims: [goal_x, goal_y]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.agents.base import Agent
from acl.core import hparams
from acl.core.spaces import Box
from acl.core.types import Feedback
from acl.teachers import checks
from acl.teachers.base import TEACHERS, RunContext, Teacher, UpdateContext


@struct.dataclass
class SubspaceParams:
    """Numeric hyperparameters (pytree leaves, vmappable)."""

    inner: Any
    """The inner teacher's params."""
    base_task: jax.Array
    """[D] the task whose other dimensions are kept."""


@struct.dataclass
class SubspaceState:
    params: SubspaceParams
    inner: Any
    """The inner teacher's state (its own params inside it, as it keeps them)."""


@dataclass(frozen=True)
class SubspaceTeacher(Teacher):
    """`inner` (a teacher on the sub-box of `dims`) chooses those dimensions; the others
    are `base_task`'s. See the module docstring."""

    task_space: Box
    inner: Teacher
    """The inner teacher, built on `sub_space(task_space, dims)`."""
    dims: tuple[int, ...]
    """Indices of the task dimensions the inner teacher chooses (no repeats)."""
    base_task: tuple[float, ...]
    """Default [D] base task (a leaf of the params, so a sweep may vmap it)."""

    @property
    def index(self) -> np.ndarray:
        return np.asarray(self.dims, np.int32)

    def default_params(self) -> SubspaceParams:
        return SubspaceParams(
            inner=self.inner.default_params(),
            base_task=jnp.asarray(self.base_task, jnp.float32),
        )

    def init(self, key: jax.Array, params: SubspaceParams) -> SubspaceState:
        return SubspaceState(params=params, inner=self.inner.init(key, params.inner))

    def lift(self, base_task: jax.Array, sub: jax.Array) -> jax.Array:
        """Inner tasks [n, d (+ extra)] -> tasks [n, D (+ extra)]: base_task with columns
        `dims` replaced; the inner teacher's extra columns appended."""
        n, d = sub.shape[0], len(self.dims)
        base = jnp.broadcast_to(base_task, (n, self.task_space.dim)).astype(sub.dtype)
        full = base.at[:, self.index].set(sub[:, :d])
        return jnp.concatenate([full, sub[:, d:]], axis=-1)

    def project(self, tasks: jax.Array) -> jax.Array:
        """Tasks [K, D (+ extra)] -> [K, d (+ extra)]: columns `dims`, then the extras."""
        return jnp.concatenate([tasks[:, self.index], tasks[:, self.task_space.dim :]], axis=-1)

    def sample(self, state: SubspaceState, key: jax.Array, n: int):
        inner, sub, info = self.inner.sample(state.inner, key, n)
        tasks = self.lift(state.params.base_task, sub)
        return state.replace(inner=inner), tasks, info

    def update(
        self,
        state: SubspaceState,
        key,
        tasks,
        feedback: Feedback,
        step,
        context: UpdateContext = UpdateContext(),
    ):
        """The inner teacher's update on the projected tasks and feedback. The rollout
        and the student pass through unchanged; `env_tasks` lifts the inner teacher's
        coordinates onto `base_task` first (module docstring)."""
        projected = feedback.replace(task=self.project(feedback.task))
        outer = context.env_tasks
        base_task = state.params.base_task

        def env_tasks(sub: jax.Array) -> jax.Array:
            """Inner tasks [n, d] -> the env's tasks [n, D]."""
            full = self.lift(base_task, sub)
            return full if outer is None else outer(full)

        inner = self.inner.update(
            state.inner,
            key,
            self.project(tasks),
            projected,
            step,
            context.replace(env_tasks=env_tasks),
        )
        return state.replace(inner=inner)

    def snapshot(self, state: SubspaceState) -> dict:
        return self.inner.snapshot(state.inner)

    def offline_env_steps(self, snapshot: dict) -> Any:
        return self.inner.offline_env_steps(snapshot)

    def updates_before_adapting(self) -> int:
        return self.inner.updates_before_adapting()

    def wrap_student(self, agent: Agent) -> Agent:
        """The inner teacher's wrapper of the student (the view needs none)."""
        return self.inner.wrap_student(agent)


def sub_space(task_space: Box, dims: Sequence[int]) -> Box:
    """The sub-box of `task_space` on dimensions `dims` (names, units, default and limits
    kept where the space has them)."""

    def pick(values):
        return tuple(values[i] for i in dims) if values else values

    default = None if task_space.default is None else pick(task_space.default)
    return Box(
        low=pick(task_space.low),
        high=pick(task_space.high),
        names=pick(task_space.names),
        units=pick(task_space.units),
        default=default,
        limits=pick(task_space.limits),
    )


def resolve_dims(task_space: Box, dims) -> tuple[int, ...]:
    """`teacher.dims` (names or indices) as indices; ConfigError on a bad entry."""
    checks.check(
        isinstance(dims, Sequence) and not isinstance(dims, str) and len(dims) > 0,
        f"teacher.dims: expected a non-empty list of task dimensions (names or indices), "
        f"got {dims!r}",
    )
    out = []
    for d in dims:
        if isinstance(d, str):
            checks.check(
                d in task_space.names,
                f"teacher.dims: no task dimension named {d!r} (names: "
                f"{', '.join(task_space.names) or 'none'})",
            )
            out.append(task_space.names.index(d))
        else:
            checks.check(
                isinstance(d, int | np.integer)
                and not isinstance(d, bool)
                and 0 <= d < task_space.dim,
                f"teacher.dims: {d!r} is not a dimension index in 0..{task_space.dim - 1}",
            )
            out.append(int(d))
    checks.check(len(set(out)) == len(out), f"teacher.dims repeats a dimension: {dims!r}")
    return tuple(out)


def make_subspace(
    task_space: Box,
    context: RunContext | None = None,
    teacher: str = "random",
    dims: Sequence[int | str] | None = None,
    base_task: Sequence[float] | None = None,
    inner: Mapping[str, Any] | None = None,
) -> SubspaceTeacher:
    """SubspaceTeacher: the registered teacher `teacher`, configured by `inner`, chooses
    the task dimensions `dims`; the others are `base_task`'s (default: the task space's
    default task)."""
    checks.check(
        isinstance(teacher, str) and teacher != "subspace",
        f"teacher.teacher: the inner teacher's registered name, got {teacher!r}",
    )
    checks.check(
        inner is None or isinstance(inner, Mapping),
        f"teacher.inner: expected a mapping of the inner teacher's keys, got {inner!r}",
    )
    index = resolve_dims(task_space, dims)
    base = checks.base_task(task_space, base_task)
    if base is None:
        base = tuple(float(v) for v in np.asarray(task_space.default_task))
    inner_teacher = TEACHERS.get(teacher)(
        task_space=sub_space(task_space, index), context=context, **dict(inner or {})
    )
    return SubspaceTeacher(task_space, inner_teacher, index, base)


hparams.declare(
    make_subspace,
    extra={
        "teacher": hparams.spec(
            "random", kind="any", doc="The inner teacher's registered name (not subspace)."
        ),
        "dims": hparams.spec(
            None,
            kind="any",
            doc="[d] the task dimensions (names or indices) the inner teacher chooses.",
        ),
        "base_task": hparams.spec(
            None,
            kind="floats",
            doc="[D] the task whose other dimensions are kept; default: the task space's "
            "default task.",
        ),
        "inner": hparams.spec(
            None, kind="any", doc="A mapping of the inner teacher's own config keys."
        ),
    },
)
TEACHERS.register("subspace")(make_subspace)

__all__ = ["SubspaceParams", "SubspaceState", "SubspaceTeacher", "make_subspace", "sub_space"]
