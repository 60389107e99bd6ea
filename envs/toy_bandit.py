"""The toy "continuous bandit" of teachDeepRL (Portelas et al. 2019), in pure JAX.

A student simulator for testing teachers quickly, with no RL inside. It follows the
reference `teachDRL/toy_env/toy_env.py` (`ToyEnv.episode` / `get_score`):

- [0, 1]^d is cut into `cubes_per_dim` cubes per dimension; a task is a point of
  [0, 1]^(d + num_distractors) and only its first d coordinates matter (distractors).
- Cube k along a dimension covers [k/n, (k+1)/n); a coordinate equal to 1 belongs to
  the last cube (the reference bins with `binned_statistic_dd` on the edges
  `np.arange(0, 1 + 1/n, 1/n)`; the comparison is done exactly as float64 would for
  float32 tasks). Tasks outside [0, 1] are clipped; the reference exits instead.
- An episode on a task finds its cube. The cube is learnable if it is the origin cube,
  or if one of its "previous" neighbours (each index equal or one less, clamped at 0,
  not the cube itself) has competence >= 75. A learnable cube gains 1 competence,
  capped at 100.
- The reward is the cube's competence *after* that update, divided by 100 (the
  reference's `np.interp(competence, (0, 100), (0, 1))`), so a first episode on the
  origin cube returns 0.01, and an episode on a locked cube returns its (unchanged)
  competence / 100.
- Score: `pct_mastered` = 100 * share of cubes with competence > 75 (strictly; the
  unlock test is >= 75).

Deviation: for `cubes_per_dim` in {6, 9} numpy's float `arange` returns one edge too
many and the reference breaks; here the edges are always k/n.

Why not reset/step: the thing being trained, the student, lives inside this simulator.
Its state (the competence grid) is the student, and one call of `episode` is one whole
training episode of that student on one task. So the interface is
`episode(state, task) -> (state, reward)`, plus a sequential `episodes` (each episode
changes the competence the next one sees), instead of an env that an agent steps.
Everything is jittable, and independent students are a `jax.vmap` over (state, tasks).
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.core.spaces import UNIT, Box
from envs._checks import non_negative_int, positive_int
from envs.registry import ENVS


@struct.dataclass
class ToyBanditState:
    """One simulated student."""

    competence: jax.Array
    """[cubes_per_dim ** num_dims] int32 in [0, 100], row-major over cube indices."""


def _edges_for_float32(n: int) -> np.ndarray:
    """Interior edges k/n (k = 1..n-1) as float32 values e with x >= e <=> x >= k/n.

    For a float32 x, comparing with the float64 edge k * (1/n) (what the reference does)
    equals comparing with the smallest float32 not below it.
    """
    exact = np.arange(1, n, dtype=np.float64) * (1.0 / n)
    edges = exact.astype(np.float32)
    low = edges.astype(np.float64) < exact
    edges[low] = np.nextafter(edges[low], np.float32(np.inf))
    return edges


@ENVS.register("toy_bandit")
class ToyBandit:
    """teachDeepRL's toy continuous bandit: a simulated student over [0, 1]^D tasks.

    Static config (shapes): `num_dims` d, `num_distractors`, `cubes_per_dim` n. The task
    space is [0, 1]^(d + num_distractors); the state holds n^d competences.
    """

    name = "toy_bandit"
    success_threshold = 75.0
    """A cube is mastered when its competence is strictly above this (of 100)."""
    return_bounds = (0.0, 1.0)
    """Rewards are competence / 100."""
    max_competence = 100
    unlock_competence = 75
    """A neighbour with competence >= this makes a cube learnable."""

    def __init__(self, num_dims: int = 2, num_distractors: int = 0, cubes_per_dim: int = 10):
        self.num_dims = positive_int(num_dims, "env.num_dims", allow_none=False)
        self.num_distractors = non_negative_int(num_distractors, "env.num_distractors")
        self.cubes_per_dim = positive_int(cubes_per_dim, "env.cubes_per_dim", allow_none=False)
        dim = self.num_dims + self.num_distractors
        names = tuple(f"x{i}" for i in range(self.num_dims)) + tuple(
            f"distractor{i}" for i in range(self.num_distractors)
        )
        self.task_space = Box(
            low=(0.0,) * dim,
            high=(1.0,) * dim,
            names=names,
            units=("",) * dim,
            limits=(UNIT,) * dim,
        )
        self.num_cubes = self.cubes_per_dim**self.num_dims
        self._edges = _edges_for_float32(self.cubes_per_dim)
        self._strides = np.array(
            [self.cubes_per_dim ** (self.num_dims - 1 - i) for i in range(self.num_dims)], np.int32
        )
        offsets = [s for s in itertools.product((0, 1), repeat=self.num_dims) if any(s)]
        self._offsets = np.array(offsets, np.int32)  # [2^d - 1, d]

    def init(self) -> ToyBanditState:
        """A fresh student: every competence 0."""
        return ToyBanditState(competence=jnp.zeros((self.num_cubes,), jnp.int32))

    def cube_index(self, task: jax.Array) -> jax.Array:
        """Cube coordinates of `task` [D] (distractors dropped), int32 [num_dims]."""
        x = jnp.clip(jnp.asarray(task, jnp.float32)[: self.num_dims], 0.0, 1.0)
        return jnp.sum(x[:, None] >= jnp.asarray(self._edges)[None, :], axis=-1).astype(jnp.int32)

    def flat_index(self, cube: jax.Array) -> jax.Array:
        """Row-major index into `competence` of cube coordinates [..., num_dims]."""
        return jnp.sum(cube * jnp.asarray(self._strides), axis=-1)

    def is_learnable(self, state: ToyBanditState, cube: jax.Array) -> jax.Array:
        """Whether cube [num_dims] is the origin or has a previous neighbour at >= 75."""
        neighbours = jnp.maximum(cube[None, :] - jnp.asarray(self._offsets), 0)
        proper = jnp.any(neighbours != cube[None, :], axis=-1)
        strong = state.competence[self.flat_index(neighbours)] >= self.unlock_competence
        return jnp.all(cube == 0) | jnp.any(proper & strong)

    def episode(self, state: ToyBanditState, task: jax.Array) -> tuple[ToyBanditState, jax.Array]:
        """One episode on `task` [D]: (new state, reward in [0, 1] read after the update)."""
        cube = self.cube_index(task)
        flat = self.flat_index(cube)
        old = state.competence[flat]
        new = jnp.where(
            self.is_learnable(state, cube), jnp.minimum(old + 1, self.max_competence), old
        )
        state = state.replace(competence=state.competence.at[flat].set(new))
        return state, new.astype(jnp.float32) / self.max_competence

    def episodes(self, state: ToyBanditState, tasks: jax.Array) -> tuple[ToyBanditState, jax.Array]:
        """Episodes on tasks [N, D] in order (lax.scan): (state, rewards [N])."""
        return jax.lax.scan(self.episode, state, tasks)

    def pct_mastered(self, state: ToyBanditState) -> jax.Array:
        """100 * share of cubes with competence > 75, float32 scalar."""
        mastered = state.competence > self.success_threshold
        return 100.0 * jnp.mean(mastered.astype(jnp.float32))

    def is_success(self, reward: jax.Array) -> jax.Array:
        """Whether an episode's reward (competence / 100 after it) means a mastered cube."""
        return reward * self.max_competence > self.success_threshold
