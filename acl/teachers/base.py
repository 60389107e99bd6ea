"""The teacher protocol and the per-episode feedback record.

A teacher object holds only shape-setting fields; everything numeric lives in the
`TeacherParams` pytree (vmappable) and the typed `TeacherState`:

    init(key, params) -> state
    sample(state, key, n) -> (state, tasks [n, D], info)
    update(state, tasks, feedback, step) -> state
    snapshot(state) -> dict of arrays        (what a run directory records at each evaluation)

A teacher may also own a `guide` attribute (JSRL): an object with a jittable
`act(obs [N, O], env_state, env_params, key) -> actions [N, ...]` in the agent's action
space (env_state and env_params batched over the N instances). The loop then runs the
guide for the first `SampleInfo.guide_steps` steps of each episode and the agent after.
Without one (`getattr(teacher, "guide", None) is None`) the loop is compiled as before.

A teacher that scores whole levels from the student's experience (PLR's value-loss
scores, PAIRED's protagonist returns) sets the class attribute `reads_rollout = True`.
The loop, which must then run in `batch` mode (instance i plays `tasks[i]` for the whole
rollout), calls `update(state, tasks, feedback, step, rollout=batch)` with the rollout's
`acl.agents.common.Transition` [T, N] (rewards, dones, and the agent's `extras`, e.g.
PPO's values).

In `episode` mode with a task pool (`loop.task_pool`, P), `sample` is called for P tasks
per iteration and the k-th reset of the iteration takes the k-th; `update` then gets the
pool as `tasks` [P, D], of which the first `handed_out` = min(resets, P) were used. A
teacher that needs that count sets the class attribute `reads_handed_out = True` and
takes `update(..., handed_out=None)`: an int32 scalar with a pool, None without one (the
slot layout, where `tasks` [T * N, D] holds one task per (step, instance) slot).
Feedback records carry the task each episode actually ran on in either layout.

`step` is the number of `update` calls before this one. It is the same for every seed
and never vmapped, so periodic work keyed on it (a GMM fit every `fit_every` updates)
stays a real `lax.cond` under a vmap over seeds instead of a select that runs every time.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
from flax import struct

from acl.registry import Registry
from acl.spaces import Box


@struct.dataclass
class Feedback:
    """One record per completed episode, in fixed-size arrays; `mask` marks real records.

    Shapes: task [K, D], achieved_goal [K, G], all others [K].
    """

    task: jax.Array
    """The task the episode actually ran on."""
    episode_return: jax.Array
    """Undiscounted return of the episode."""
    success: jax.Array
    """Whether the return beat the env's success threshold."""
    length: jax.Array
    """Episode length in env steps."""
    mask: jax.Array
    """True where the record is a completed episode."""
    achieved_goal: jax.Array | None = None
    """[K, G] the goal the episode's final state achieved, for goal envs
    (`envs.base.GoalTaskEnv.achieved_goal` of the last observation); None otherwise.
    Goal generators (SVGG) fit their model of reachable goals on it."""
    guide_steps: jax.Array | None = None
    """[K] int32 the guide horizon h the episode ran with (JSRL: a teacher-owned guide
    acted for its first h steps); None when no teacher has a guide."""

    @property
    def count(self) -> jax.Array:
        return self.mask.sum()


def compact_feedback(feedback: Feedback, size: int) -> tuple[Feedback, jax.Array]:
    """The valid records first, in their original order, cut to `size` records.

    Teachers whose update costs grow with the record count (nearest neighbours, windows)
    then see `size` records instead of one per (step, instance) slot.
    Returns (feedback with K = size, number of valid records that did not fit).
    """
    order = jnp.argsort(~feedback.mask, stable=True)[:size]
    compact = jax.tree.map(lambda x: x[order], feedback)
    return compact, jnp.maximum(feedback.count - size, 0).astype(jnp.int32)


@struct.dataclass
class SampleInfo:
    """Per-instance decisions the loop must honour. Shapes [n]."""

    train_on: jax.Array
    """False: the student must not learn from this instance's episodes (robust PLR)."""
    guide_steps: jax.Array
    """int32: the teacher's guide acts for the first h steps of the episode, the student
    after (JSRL). Read only when the teacher owns a `guide`."""


def default_info(n: int) -> SampleInfo:
    return SampleInfo(train_on=jnp.ones((n,), bool), guide_steps=jnp.zeros((n,), jnp.int32))


@runtime_checkable
class Teacher(Protocol):
    task_space: Box

    def default_params(self) -> Any: ...

    def init(self, key: jax.Array, params: Any) -> Any: ...

    def sample(self, state: Any, key: jax.Array, n: int) -> tuple[Any, jax.Array, SampleInfo]: ...

    def update(self, state: Any, tasks: jax.Array, feedback: Feedback, step: jax.Array) -> Any: ...

    def snapshot(self, state: Any) -> dict: ...


TEACHERS: Registry[Teacher] = Registry("teacher")
"""Teacher factories, called as factory(task_space=..., default_task=..., **config)."""
