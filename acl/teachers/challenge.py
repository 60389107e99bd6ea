"""TeachMyAgent's challenge variants (Romac et al. 2021) as data, and the teacher wrapper
that works through them, for any env with a Box task space.

A challenge is a `Challenge` pytree, not a new program: `with_challenge(teacher)`, in the
spirit of optax's transformations, returns a teacher that works in the unit cube [0, 1]^D
(its *teacher space*) and takes the challenge as part of its params: how that cube maps
onto the env's true tasks, and which prior an expert gives. The student's
re-initialisation period (forgetting) is the loop's data (`acl.loop.train.RunData`), since a
teacher cannot reset the student. So one compiled program serves every challenge of a
teacher, and a vmap can batch them. The composition root makes a named challenge's data
(`acl.build.make_challenge` from a `ChallengeSpec`) and the loop's (`acl.build.challenge_data`).

| challenge | what changes | data |
|---|---|---|
| default | nothing | bounds = env.task_space |
| unfeasible | most of the space cannot be solved | bounds = env.unfeasible_bounds |
| trivial | most of the space is already solved | bounds = env.trivial_bounds |
| rugged | each dimension cut into 4 intervals, shuffled | a seeded permutation per dimension |
| forgetting | the student forgets | weights, optimiser (and replay) reset every N iterations |

Expert knowledge (`expert`), on top of any challenge, for teachers that can use a prior
(`takes_prior`, with `with_prior(params, mean, std, enabled)`: ALP-GMM and Covar-GMM
bootstrap from it; acl.teachers.base):

- none: no prior;
- low: a random sub-space prior: a seeded box covering half of each dimension's range,
  given as the Gaussian with its mean and standard deviation (half-width / sqrt(3));
- high: a Gaussian over easy tasks, centred on the env's easy task (`env.easy_task`,
  else its default task) with std 10% of each dimension's range.

The *variety of students* challenge changes the agent, which changes shapes, so it is
several programs; `experiments/benchmark.py` runs one per student and merges the scores.

Coordinates, all [..., D]: teacher space u in [0, 1]; the rugged map sends teacher
interval j of dimension d to true interval perm[d, j]; env task = low + true_u * (high - low).
The wrapped teacher hands out [env task | u], [n, 2D]: the env reads the first D columns
and the feedback brings u back bit for bit, so the inner teacher never sees an env task.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.agents.base import Agent
from acl.core.errors import ConfigError
from acl.core.spaces import Box
from acl.core.types import Feedback, SampleInfo
from acl.teachers.base import Teacher, UpdateContext

NUM_INTERVALS = 4
"""Intervals per dimension of the rugged map (TeachMyAgent's value)."""


@struct.dataclass
class Challenge:
    """One challenge variant, as pytree leaves (D task dimensions, I = NUM_INTERVALS)."""

    low: jax.Array
    """[D] true task at teacher coordinate 0 (env units)."""
    high: jax.Array
    """[D] true task at teacher coordinate 1 (env units)."""
    interval_perm: jax.Array
    """[D, I] int32: teacher interval j of dimension d is true interval interval_perm[d, j]."""
    reset_every: jax.Array
    """int32: iterations between re-initialisations of the student; 0 = never."""
    prior_mean: jax.Array
    """[D] expert prior mean, teacher space."""
    prior_std: jax.Array
    """[D] expert prior std, teacher space."""
    use_prior: jax.Array
    """bool: whether the expert prior is given."""


def teacher_space(env_space: Box) -> Box:
    """The unit cube every teacher works in, named like the env's dimensions."""
    dim = env_space.dim
    return Box(
        low=(0.0,) * dim,
        high=(1.0,) * dim,
        names=env_space.names,
        units=("fraction of range",) * dim if env_space.names else (),
        default=tuple(_to_unit_np(env_space, np.asarray(env_space.default_task))),
        field_name="teacher space",
    )


def _to_unit_np(space: Box, task: np.ndarray) -> np.ndarray:
    low, high = np.asarray(space.low), np.asarray(space.high)
    return np.clip((task - low) / (high - low), 0.0, 1.0)


def to_env(challenge: Challenge, unit: jax.Array) -> jax.Array:
    """Teacher-space tasks [..., D] -> env tasks [..., D] (the rugged map, then the bounds)."""
    intervals = challenge.interval_perm.shape[-1]
    scaled = jnp.clip(unit, 0.0, 1.0) * intervals
    index = jnp.clip(jnp.floor(scaled), 0, intervals - 1).astype(jnp.int32)
    within = scaled - index
    perm = challenge.interval_perm
    perm = jnp.broadcast_to(perm, index.shape[:-1] + perm.shape)
    true_index = jnp.take_along_axis(perm, index[..., None], axis=-1)[..., 0]
    true_unit = (true_index + within) / intervals
    return challenge.low + true_unit * (challenge.high - challenge.low)


def to_teacher(challenge: Challenge, task: jax.Array) -> jax.Array:
    """Env tasks [..., D] -> teacher space [..., D]; the inverse of `to_env` inside the box.

    The loop never needs it (the instances carry the teacher's coordinates beside the
    env's, see `ChallengedTeacher`); it is for priors, plots and tests."""
    intervals = challenge.interval_perm.shape[-1]
    true_unit = jnp.clip((task - challenge.low) / (challenge.high - challenge.low), 0.0, 1.0)
    scaled = true_unit * intervals
    true_index = jnp.clip(jnp.floor(scaled), 0, intervals - 1).astype(jnp.int32)
    within = scaled - true_index
    inverse = jnp.argsort(challenge.interval_perm, axis=-1)
    inverse = jnp.broadcast_to(inverse, true_index.shape[:-1] + inverse.shape)
    index = jnp.take_along_axis(inverse, true_index[..., None], axis=-1)[..., 0]
    return (index + within) / intervals


def rugged_permutation(dim: int, seed: int, intervals: int = NUM_INTERVALS) -> np.ndarray:
    """[dim, intervals] seeded permutations, none of them the identity."""
    rng = np.random.default_rng(seed)
    perms = []
    for _ in range(dim):
        perm = np.arange(intervals)
        while np.array_equal(perm, np.arange(intervals)):
            perm = rng.permutation(intervals)
        perms.append(perm)
    return np.stack(perms).astype(np.int32)


def identity_challenge(bounds: Box) -> Challenge:
    """The unit cube mapped straight onto `bounds`: no ruggedness, no prior, no forgetting."""
    dim = bounds.dim
    return Challenge(
        low=jnp.asarray(bounds.low, jnp.float32),
        high=jnp.asarray(bounds.high, jnp.float32),
        interval_perm=jnp.asarray(np.tile(np.arange(NUM_INTERVALS, dtype=np.int32), (dim, 1))),
        reset_every=jnp.zeros((), jnp.int32),
        prior_mean=jnp.full((dim,), 0.5, jnp.float32),
        prior_std=jnp.ones((dim,), jnp.float32),
        use_prior=jnp.asarray(False),
    )


# -- the teacher wrapper ---------------------------------------------------------------------


@struct.dataclass
class ChallengedParams:
    inner: Any
    """The wrapped teacher's params (with the expert prior applied)."""
    challenge: Challenge


@struct.dataclass
class ChallengedState:
    inner: Any
    challenge: Challenge


@dataclass(frozen=True)
class ChallengedTeacher(Teacher):
    """A teacher working in the unit cube, handed out through a challenge's map; see the
    module docstring. Build it with `with_challenge`."""

    inner: Teacher
    """The wrapped teacher; its task space is `teacher_space(env_space)`."""
    task_space: Box
    """The env's task space: the first D columns of every task handed out."""

    @property
    def dim(self) -> int:
        return self.task_space.dim

    @property
    def configured_teacher(self) -> Teacher:
        """The wrapped teacher: the config's `teacher` section configures it, the build
        adds the challenge."""
        return self.inner.configured_teacher

    def default_params(self) -> ChallengedParams:
        """The inner teacher's defaults under the identity challenge over the env's space."""
        return self.params_for(identity_challenge(self.task_space))

    def params_for(self, challenge: Challenge, params: Any = None) -> ChallengedParams:
        """Params (the inner teacher's, default when None) under `challenge`, with its
        expert prior applied (a teacher that takes none keeps its params)."""
        params = self.inner.default_params() if params is None else params
        with_prior = self.inner.with_prior(
            params, challenge.prior_mean, challenge.prior_std, challenge.use_prior
        )
        return ChallengedParams(with_prior, challenge)

    def init(self, key: jax.Array, params: ChallengedParams) -> ChallengedState:
        return ChallengedState(self.inner.init(key, params.inner), params.challenge)

    def sample(
        self, state: ChallengedState, key: jax.Array, n: int
    ) -> tuple[ChallengedState, jax.Array, SampleInfo]:
        """-> (state, [env task | teacher coordinates] [n, 2D], info)."""
        inner, unit, info = self.inner.sample(state.inner, key, n)
        tasks = jnp.concatenate([to_env(state.challenge, unit), unit], axis=-1)
        return state.replace(inner=inner), tasks, info

    def update(
        self,
        state: ChallengedState,
        key: jax.Array,
        tasks: jax.Array,
        feedback: Feedback,
        step: jax.Array,
        context: UpdateContext = UpdateContext(),
    ) -> ChallengedState:
        """The inner teacher's update, on its own coordinates. The rollout and the student
        pass through unchanged; `env_tasks` becomes the challenge's map from the inner
        teacher's coordinates to the env's tasks (after the one this wrapper was given,
        if any), for a teacher that plays levels of its own on the env (SFL)."""
        inner_feedback = feedback.replace(task=feedback.task[:, self.dim :])
        to_env_tasks = functools.partial(to_env, state.challenge)
        outer = context.env_tasks
        if outer is not None:
            to_env_tasks = _composed(outer, to_env_tasks)
        inner = self.inner.update(
            state.inner,
            key,
            tasks[:, self.dim :],
            inner_feedback,
            step,
            context.replace(env_tasks=to_env_tasks),
        )
        return state.replace(inner=inner)

    def snapshot(self, state: ChallengedState) -> dict:
        return self.inner.snapshot(state.inner)

    def offline_env_steps(self, snapshot: dict) -> Any:
        return self.inner.offline_env_steps(snapshot)

    def updates_before_adapting(self) -> int:
        return self.inner.updates_before_adapting()

    def wrap_student(self, agent: Agent) -> Agent:
        """The inner teacher's wrapper of the student (the challenge needs none)."""
        return self.inner.wrap_student(agent)


def _composed(outer, inner):
    """`outer(inner(x))`: a map after another, as one `env_tasks`."""

    def composed(tasks: jax.Array) -> jax.Array:
        return outer(inner(tasks))

    return composed


def with_challenge(teacher: Teacher, env_space: Box) -> ChallengedTeacher:
    """`teacher`, built on `teacher_space(env_space)`, as a teacher of the env's tasks
    whose params carry a `Challenge` (`params_for(challenge)`)."""
    if teacher.task_space.dim != env_space.dim:
        raise ConfigError(
            f"with_challenge: the teacher's task space has {teacher.task_space.dim} "
            f"dimensions, the env's {env_space.dim}"
        )
    return ChallengedTeacher(teacher, env_space)


__all__ = [
    "NUM_INTERVALS",
    "Challenge",
    "ChallengedParams",
    "ChallengedState",
    "ChallengedTeacher",
    "identity_challenge",
    "rugged_permutation",
    "teacher_space",
    "to_env",
    "to_teacher",
    "with_challenge",
]
