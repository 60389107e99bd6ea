"""GoalGAN: Automatic Goal Generation (Florensa et al. 2018), as TeachMyAgent runs it
(flowersteam/TeachMyAgent, `teachers/algos/goal_gan.py`, with the GAN of
`teachers/utils/gan/gan.py` and `gan/generator.py`, from rllab-curriculum via
psclklnk/spdl).

A generator G (an MLP from noise z ~ N(0, I_D) to tanh outputs g in [-1, 1]^D) proposes
goals; a discriminator D (an MLP to one linear output) learns which goals are of
intermediate difficulty (GOID). Everything lives in the unit cube of the task space:
a goal is u = clip(g + 1/2 + noise, 0, 1), the reference's mapping (its tanh range spans
twice the space around the centre; the data it trains on is (u - 1/2) in [-1/2, 1/2]^D).

- Sampling, per task: a goal handed out fewer than `n_rollouts` times so far is handed
  out again with probability (n - 1)(1 - p_old) / (1 + (n - 1)(1 - p_old)), n =
  `n_rollouts`; otherwise an old goal (uniform over the old-goal buffer, plus Gaussian
  noise of std `state_noise_level`) with probability `p_old` if there is one, else a
  generator goal plus Gaussian noise of std `state_noise_level`, clipped to the cube.
  Those are the shares the reference's queue gives (it hands each new generator goal out
  n times in a row, then draws old with p_old or new).
- Labels: each handed-out goal keeps a per-goal record (pending buffer, `pending_size`
  goals) of its completed episodes and successes; episodes are matched to it by the
  exact task, as the reference keys its pending goals on the task's bytes. Once a goal
  has >= `n_rollouts` episodes it is labelled GOID iff goid_lb <= mean success <= goid_ub
  (both inclusive, as in the reference), its (goal, label) row goes to the label buffer
  and the goal leaves the pending buffer; if its mean success > goid_ub it joins the
  old-goal buffer unless within `success_distance_threshold` * sqrt(D) (the unit cube's
  diagonal) of a goal there.
- The GAN (LSGAN, Mao et al.; the paper's Eq. 5-6) is trained every `update_every`
  teacher updates (a `lax.cond` on the loop's `step`), if the label buffer holds at least
  `update_size` labels, one of them GOID; the buffer is then emptied (emptied too, without
  training, when none is GOID, as in the reference). Each of `gan_iterations` steps takes
  a discriminator step on a batch of `batch_size` labelled goals (cycled in order) plus
  `batch_size` generator goals, loss mean((2y - 1 - D(x))^2) over the two (targets b = 1
  for GOID, a = -1 for the others and for generated goals), then a generator step on the
  same noise, loss mean((D(G(z)) - c)^2), c = `generator_target`.
- Pretraining (init): `pretrain_iterations` steps on `pretrain_samples` goals all
  labelled positive. They come from the expert's prior Gaussian (`with_prior`, in the
  cube: clip(mean + std * N(0, 1), 0, 1)) where it is enabled, else uniform over the cube.

Defaults, from TeachMyAgent's benchmark settings (`benchmark_scripts/
full_benchmark_GoalGAN.txt`: `--state_noise_level 0.1 --gg_update_size 100 --p_old 0.1
--n_rollouts 2 --use_pretrained_samples` on every line; the rest are the command-line
defaults of `run_utils/teacher_args_handler.py`): state_noise_level 0.1, update_size 100,
p_old 0.1, n_rollouts 2, goid_lb 0.25, goid_ub 0.75, success_distance_threshold 0.01.
From the reference's code: generator layers (256, 256) relu, discriminator layers
(128, 128) leaky relu (0.2), Xavier-uniform weights and zero biases, noise size D, batch
64, 250 GAN iterations per training (`goal_gan.py`'s `train(..., 250)`), pretraining 500
iterations on 1000 samples (`StateGAN.pretrain`), RMSProp with learning rate 1e-3 for both
networks (TF1's: decay 0.9, epsilon 1e-10, accumulator started at 1), generator target
c = 1 (`gan.py`'s LSGAN generator loss; the paper writes c = 0).

Simplifications and deviations:
- Training is periodic in teacher updates (`update_every`, a static field, default 1)
  instead of firing the moment `update_size` labels are in, so under the loop's vmap over
  seeds it is a real branch (a per-seed condition would run it every update).
- Every handed-out goal is labelled, old goals replayed too (the reference labels only
  generator goals; the paper labels all); telling them apart would need an extra task
  column, which a challenge's wrapper does not carry.
- A goal with more than `n_rollouts` episodes by the time it is labelled (several in one
  update) is labelled on the mean of all of them (the reference: of the first n).
- Fixed-size buffers: the pending buffer overwrites its oldest goals (the reference's
  queue never drops one), the label buffer keeps the last `label_buffer_size` labels and
  the old-goal buffer the last `old_buffer_size` goals; a new old goal is checked against
  the buffer and every earlier candidate of its update (the reference: the kept ones).
- Distances and noise are in the unit cube (the reference: task units, noise std
  `state_noise_level` times each range, the same; the distance threshold times the
  range's norm).
- Without a prior, pretraining samples are uniform (the reference: a Gaussian over a
  random sub-space, mean uniform and std 10% of each range).
- The `quick` preset (GOAL_GAN_PRESETS) trades fidelity for cost on the quick benchmark
  (point_reach, 8 seeds, 8 x 128 steps an update): networks (32, 32), 100 GAN steps every
  16 updates, 200 pretraining steps. With the reference's sizes and a training every
  update the teacher cost several times Random's run time on 2 CPU cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from acl.core import hparams
from acl.core.hparams import hparam, nested
from acl.core.ring import Ring, ring_init, ring_push
from acl.core.spaces import Box
from acl.core.types import Feedback, default_info
from acl.teachers.base import TEACHERS, Teacher, UpdateContext, class_factory
from acl.teachers.checks import check

SNAPSHOT_SAMPLES = 64
"""Generator goals (fixed noise) in each snapshot."""
SNAPSHOT_KEY = 12345
"""Seed of the snapshot's generator noise, the same at every evaluation."""


class MLP(nn.Module):
    """Dense layers with `activation` between them, Xavier-uniform weights, zero biases
    (the reference's TF defaults)."""

    hidden: tuple[int, ...]
    out: int
    activation: Any
    final: Any = None

    @nn.compact
    def __call__(self, x):
        init = nn.initializers.xavier_uniform()
        for width in self.hidden:
            x = self.activation(nn.Dense(width, kernel_init=init)(x))
        x = nn.Dense(self.out, kernel_init=init)(x)
        return x if self.final is None else self.final(x)


def uniform_rows(key, valid, n: int):
    """n indices [n] drawn uniformly among the True entries of valid [C] (0 if none).
    Cheaper than `jax.random.categorical`, which draws n x C Gumbel numbers."""
    order = jnp.argsort(~valid, stable=True)  # valid slots first
    count = jnp.maximum(valid.sum(), 1)
    pick = jnp.floor(jax.random.uniform(key, (n,)) * count).astype(jnp.int32)
    return order[jnp.minimum(pick, count - 1)]


def leaky_relu(x):
    return jnp.maximum(0.2 * x, x)


@struct.dataclass
class GoalGANParams:
    """Numeric hyperparameters (pytree leaves, vmappable); defaults: module docstring."""

    state_noise_level: jax.Array = hparam(
        0.1,
        low=0.0,
        doc="Std of the Gaussian noise on generator and old goals, a share of each range "
        "(TeachMyAgent's benchmark --state_noise_level).",
    )
    success_distance_threshold: jax.Array = hparam(
        0.01,
        low=0.0,
        doc="An old goal joins the buffer only farther than this times the cube's "
        "diagonal from the others (TeachMyAgent's --success_distance_threshold).",
    )
    update_size: jax.Array = hparam(
        100,
        low=1,
        doc="Labels the GAN needs to train (int32; TeachMyAgent's benchmark --gg_update_size).",
    )
    n_rollouts: jax.Array = hparam(
        2,
        low=1,
        doc="Episodes a goal is played before it is labelled (int32; TeachMyAgent's --n_rollouts).",
    )
    goid_lb: jax.Array = hparam(
        0.25, low=0.0, high=1.0, doc="GOID: mean success >= this (TeachMyAgent's --goid_lb)."
    )
    goid_ub: jax.Array = hparam(
        0.75, low=0.0, high=1.0, doc="GOID: mean success <= this (TeachMyAgent's --goid_ub)."
    )
    p_old: jax.Array = hparam(
        0.1,
        low=0.0,
        high=1.0,
        doc="Share of new goals drawn from the old-goal buffer (TeachMyAgent's benchmark --p_old).",
    )
    generator_lr: jax.Array = hparam(
        1e-3, low=0.0, low_open=True, doc="Generator RMSProp step (TeachMyAgent's gan.py)."
    )
    discriminator_lr: jax.Array = hparam(
        1e-3, low=0.0, low_open=True, doc="Discriminator RMSProp step (TeachMyAgent's gan.py)."
    )
    generator_target: jax.Array = hparam(
        1.0,
        doc="c of the LSGAN generator loss (D(G(z)) - c)^2 (TeachMyAgent's gan.py: 1; "
        "the paper: 0).",
    )
    prior_mean: jax.Array = None
    """[D] pretraining Gaussian's mean, unit cube (used where `use_prior`)."""
    prior_std: jax.Array = None
    """[D] its std, unit cube."""
    use_prior: jax.Array = None
    """bool: pretrain on the prior Gaussian instead of uniform goals."""


@struct.dataclass
class GAN:
    generator: Any
    """flax params of G."""
    discriminator: Any
    """flax params of D."""
    generator_opt: Any
    discriminator_opt: Any


@struct.dataclass
class GoalGANState:
    params: GoalGANParams
    gan: GAN
    key: jax.Array
    pending_task: jax.Array
    """[P, D] handed-out goals awaiting labels (task units, as handed out)."""
    pending_valid: jax.Array
    """[P] bool."""
    pending_episodes: jax.Array
    """[P] int32: completed episodes of each pending goal."""
    pending_successes: jax.Array
    """[P] int32: successes among them."""
    pending_head: jax.Array
    """int32: the pending slot the next new goal takes."""
    labels: Ring
    """Rows (goal [D] unit cube, GOID 0/1) labelled since the last training."""
    old_goals: Ring
    """Rows (goal [D] unit cube) mastered (mean success > goid_ub)."""
    gan_updates: jax.Array
    """int32: GAN trainings done (pretraining not counted)."""
    discriminator_loss: jax.Array
    generator_loss: jax.Array
    """Losses of the last GAN step (pretraining's until the first training)."""
    goid_share: jax.Array
    """Share of GOID among the labels of the last training."""
    labelled: jax.Array
    """int32: goals labelled so far."""


def _shares(goid, valid):
    return jnp.sum(goid * valid) / jnp.maximum(jnp.sum(valid), 1.0)


@dataclass(frozen=True)
class GoalGANTeacher(Teacher):
    """GoalGAN (Florensa et al. 2018), TeachMyAgent's version; see the module docstring."""

    takes_prior = True
    """Pretrains on samples of the expert prior (`with_prior`)."""
    task_space: Box
    generator_layers: tuple[int, ...] = hparam(
        (256, 256), kind="ints", low=1, doc="Generator hidden sizes (TeachMyAgent's)."
    )
    discriminator_layers: tuple[int, ...] = hparam(
        (128, 128), kind="ints", low=1, doc="Discriminator hidden sizes (TeachMyAgent's)."
    )
    batch_size: int = hparam(64, low=1, doc="GAN batch (TeachMyAgent's gan.py).")
    gan_iterations: int = hparam(
        250, low=1, doc="GAN steps per training (TeachMyAgent's goal_gan.py)."
    )
    update_every: int = hparam(
        1,
        low=1,
        doc="Teacher updates between GAN trainings (when update_size labels are in).",
    )
    pretrain_iterations: int = hparam(
        500, low=0, doc="GAN steps of pretraining at init; 0: none (TeachMyAgent's 500)."
    )
    pretrain_samples: int = hparam(1000, low=1, doc="Goals pretraining fits (TeachMyAgent's 1000).")
    pending_size: int = hparam(256, low=1, doc="Handed-out goals awaiting their labels.")
    label_buffer_size: int = hparam(512, low=1, doc="Labels kept between GAN trainings.")
    old_buffer_size: int = hparam(512, low=1, doc="Old (mastered) goals kept for replay.")
    hyper: GoalGANParams = nested(GoalGANParams)

    def __post_init__(self):
        hparams.validate_fields(self, "teacher")
        check(
            self.hyper.goid_lb <= self.hyper.goid_ub,
            f"teacher.goid_lb ({self.hyper.goid_lb}) must be <= teacher.goid_ub "
            f"({self.hyper.goid_ub})",
        )
        object.__setattr__(self, "generator_layers", tuple(int(v) for v in self.generator_layers))
        discriminator_layers = tuple(int(v) for v in self.discriminator_layers)
        object.__setattr__(self, "discriminator_layers", discriminator_layers)

    # -- coordinates and networks ---------------------------------------------------------

    @property
    def dim(self) -> int:
        return self.task_space.dim

    def to_unit(self, tasks):
        space = self.task_space
        return (tasks - space.low_array) / (space.high_array - space.low_array)

    def from_unit(self, unit):
        space = self.task_space
        tasks = space.low_array + unit * (space.high_array - space.low_array)
        return jnp.clip(tasks, space.low_array, space.high_array)

    @property
    def generator(self) -> MLP:
        return MLP(self.generator_layers, self.dim, nn.relu, jnp.tanh)

    @property
    def discriminator(self) -> MLP:
        return MLP(self.discriminator_layers, 1, leaky_relu)

    def _optimizers(self, params: GoalGANParams):
        # TF1's RMSProp: its accumulator starts at 1, epsilon 1e-10.
        return (
            optax.rmsprop(params.generator_lr, decay=0.9, eps=1e-10, initial_scale=1.0),
            optax.rmsprop(params.discriminator_lr, decay=0.9, eps=1e-10, initial_scale=1.0),
        )

    def generate(self, generator_params, key, n: int):
        """n generator goals [n, D] in the unit cube, before noise and clipping."""
        z = jax.random.normal(key, (n, self.dim))
        return self.generator.apply(generator_params, z) + 0.5

    # -- parameters and state -------------------------------------------------------------

    def default_params(self) -> GoalGANParams:
        dim = self.dim
        return hparams.leaves(self.hyper).replace(
            prior_mean=jnp.full((dim,), 0.5, jnp.float32),
            prior_std=jnp.full((dim,), 0.1, jnp.float32),
            use_prior=jnp.asarray(False),
        )

    def with_prior(self, params: GoalGANParams, mean, std, enabled) -> GoalGANParams:
        """Expert knowledge: pretrain on N(mean, std^2) ([D] each, task units) where
        `enabled` (the reference's `initial_dist`); traced values are fine."""
        span = self.task_space.high_array - self.task_space.low_array
        mean = self.to_unit(jnp.asarray(mean, jnp.float32))
        std = jnp.asarray(std, jnp.float32) / span
        return params.replace(
            prior_mean=jnp.where(enabled, mean, params.prior_mean),
            prior_std=jnp.where(enabled, std, params.prior_std),
            use_prior=jnp.asarray(enabled) | params.use_prior,
        )

    def pretraining_goals(self, key, params: GoalGANParams):
        """[pretrain_samples, D] unit-cube goals: the prior's where used, else uniform."""
        k_normal, k_uniform = jax.random.split(key)
        shape = (self.pretrain_samples, self.dim)
        normal = params.prior_mean + params.prior_std * jax.random.normal(k_normal, shape)
        uniform = jax.random.uniform(k_uniform, shape)
        return jnp.clip(jnp.where(params.use_prior, normal, uniform), 0.0, 1.0)

    def init(self, key: jax.Array, params: GoalGANParams) -> GoalGANState:
        k_gen, k_dis, k_pre, k_train, k_state = jax.random.split(key, 5)
        dim = self.dim
        generator = self.generator.init(k_gen, jnp.zeros((1, dim)))
        discriminator = self.discriminator.init(k_dis, jnp.zeros((1, dim)))
        gen_opt, dis_opt = self._optimizers(params)
        gan = GAN(generator, discriminator, gen_opt.init(generator), dis_opt.init(discriminator))
        zero = jnp.zeros((), jnp.float32)
        losses = (zero, zero)
        if self.pretrain_iterations > 0:
            goals = self.pretraining_goals(k_pre, params)
            ones = jnp.ones((self.pretrain_samples,), jnp.float32)
            gan, losses = self.train_gan(
                gan,
                params,
                k_train,
                goals,
                ones,
                jnp.int32(self.pretrain_samples),
                self.pretrain_iterations,
            )
        p = self.pending_size
        return GoalGANState(
            params=params,
            gan=gan,
            key=k_state,
            pending_task=jnp.zeros((p, dim), jnp.float32),
            pending_valid=jnp.zeros((p,), bool),
            pending_episodes=jnp.zeros((p,), jnp.int32),
            pending_successes=jnp.zeros((p,), jnp.int32),
            pending_head=jnp.zeros((), jnp.int32),
            labels=ring_init(self.label_buffer_size, dim + 1),
            old_goals=ring_init(self.old_buffer_size, dim),
            gan_updates=jnp.zeros((), jnp.int32),
            discriminator_loss=losses[0],
            generator_loss=losses[1],
            goid_share=zero,
            labelled=jnp.zeros((), jnp.int32),
        )

    # -- the GAN --------------------------------------------------------------------------

    def train_gan(self, gan: GAN, params, key, goals, labels, count, iterations: int):
        """`iterations` LSGAN steps on the first `count` rows of goals [C, D] (unit cube)
        and labels [C] (1: GOID), fed in order in batches of `batch_size`, cycling (all of
        them in every batch when count <= batch_size, as the reference). Returns (gan,
        (discriminator loss, generator loss) of the last step)."""
        batch = self.batch_size
        gen_opt, dis_opt = self._optimizers(params)
        generator, discriminator = self.generator, self.discriminator
        count = jnp.maximum(count, 1)
        data = goals - 0.5  # the reference's normalised coordinates
        targets = 2.0 * labels - 1.0
        offsets = jnp.arange(batch)

        def dis_loss(d_params, x, y, w, fake):
            real = discriminator.apply(d_params, x)[:, 0]
            made = discriminator.apply(d_params, fake)[:, 0]
            total = jnp.sum(w * (y - real) ** 2) + jnp.sum((-1.0 - made) ** 2)
            return total / (jnp.sum(w) + batch)

        def gen_loss(g_params, d_params, z):
            made = discriminator.apply(d_params, generator.apply(g_params, z))[:, 0]
            return jnp.mean((made - params.generator_target) ** 2)

        def one_step(carry, i):
            gan, key = carry
            key, k_z = jax.random.split(key)
            small = count <= batch
            rows = jnp.where(small, offsets, (i * batch + offsets) % count)
            weights = jnp.where(small, (offsets < count).astype(jnp.float32), 1.0)
            z = jax.random.normal(k_z, (batch, self.dim))
            fake = generator.apply(gan.generator, z)
            d_loss, d_grad = jax.value_and_grad(dis_loss)(
                gan.discriminator, data[rows], targets[rows], weights, fake
            )
            updates, d_opt = dis_opt.update(d_grad, gan.discriminator_opt)
            d_params = optax.apply_updates(gan.discriminator, updates)
            g_loss, g_grad = jax.value_and_grad(gen_loss)(gan.generator, d_params, z)
            updates, g_opt = gen_opt.update(g_grad, gan.generator_opt)
            g_params = optax.apply_updates(gan.generator, updates)
            return (GAN(g_params, d_params, g_opt, d_opt), key), (d_loss, g_loss)

        (gan, _), (d_losses, g_losses) = jax.lax.scan(one_step, (gan, key), jnp.arange(iterations))
        return gan, (d_losses[-1], g_losses[-1])

    # -- the protocol ---------------------------------------------------------------------

    def sample(self, state: GoalGANState, key: jax.Array, n: int):
        params = state.params
        dim = self.dim
        k_gen, k_noise, k_kind, k_old, k_pick, k_replay, k_old_noise = jax.random.split(key, 7)
        noise = params.state_noise_level
        fresh = self.generate(state.gan.generator, k_gen, n)
        fresh = fresh + noise * jax.random.normal(k_noise, (n, dim))

        old = state.old_goals
        old_rows = uniform_rows(k_pick, old.valid, n)
        replay = old.data[old_rows] + noise * jax.random.normal(k_old_noise, (n, dim))
        coin_old = jax.random.uniform(k_old, (n,)) < params.p_old
        use_old = coin_old & old.valid.any()
        unit = jnp.clip(jnp.where(use_old[:, None], replay, fresh), 0.0, 1.0)
        tasks = self.from_unit(unit)

        needing = state.pending_valid & (state.pending_episodes < params.n_rollouts)
        again = (params.n_rollouts - 1) * (1.0 - params.p_old)
        repeat = jax.random.uniform(k_kind, (n,)) < again / (1.0 + again)
        repeat = repeat & needing.any()
        rows = uniform_rows(k_replay, needing, n)
        tasks = jnp.where(repeat[:, None], state.pending_task[rows], tasks)
        return state, tasks, default_info(n)

    def update(
        self,
        state: GoalGANState,
        key,
        tasks,
        feedback: Feedback,
        step,
        context: UpdateContext = UpdateContext(),
    ):
        del key, tasks, context
        state = self._record(state, feedback)
        state = self._label(state)
        # On the shared step and a static period: a real branch under a vmap over seeds.
        due = (jnp.asarray(step, jnp.int32) + 1) % self.update_every == 0
        return jax.lax.cond(due, self._train, lambda s: s, state)

    def _record(self, state: GoalGANState, feedback: Feedback) -> GoalGANState:
        """Adds each valid episode to its goal's pending record; an unknown goal takes a
        new slot (episodes of one new goal in the same feedback share it)."""
        size = self.pending_size
        task = feedback.task[:, : self.dim]
        valid = feedback.mask.astype(bool) & jnp.all(jnp.isfinite(task), axis=-1)
        task = jnp.where(valid[:, None], task, 0.0)
        same = jnp.all(task[:, None, :] == state.pending_task[None, :, :], axis=-1)
        same = same & state.pending_valid[None, :] & valid[:, None]  # [K, P]
        known = same.any(axis=1)
        slot = jnp.argmax(same, axis=1)
        unknown = valid & ~known
        alike = jnp.all(task[:, None, :] == task[None, :, :], axis=-1) & unknown[None, :]
        first = jnp.argmax(alike, axis=1)  # [K] first unknown record with this task
        k = task.shape[0]
        is_first = unknown & (first == jnp.arange(k))
        rank = jnp.cumsum(is_first) - 1
        num_new = is_first.sum()
        # More new goals than slots: the last `size` of them are kept.
        kept = is_first & (rank >= num_new - size)
        new_slot = jnp.where(kept, (state.pending_head + rank) % size, size)
        new_slot = new_slot[first]
        slot = jnp.where(known, slot, new_slot)
        slot = jnp.where(valid, slot, size)  # size: dropped

        claimed = jnp.where(kept, new_slot, size)
        pending_task = state.pending_task.at[claimed].set(task, mode="drop")
        pending_valid = state.pending_valid.at[claimed].set(True, mode="drop")
        episodes = state.pending_episodes.at[claimed].set(0, mode="drop")
        successes = state.pending_successes.at[claimed].set(0, mode="drop")
        episodes = episodes.at[slot].add(1, mode="drop")
        success = (feedback.success.astype(bool) & valid).astype(jnp.int32)
        successes = successes.at[slot].add(success, mode="drop")
        return state.replace(
            pending_task=pending_task,
            pending_valid=pending_valid,
            pending_episodes=episodes,
            pending_successes=successes,
            pending_head=((state.pending_head + jnp.minimum(num_new, size)) % size).astype(
                jnp.int32
            ),
        )

    def _label(self, state: GoalGANState) -> GoalGANState:
        """Labels the pending goals with >= n_rollouts episodes and retires them; the
        mastered ones join the old-goal buffer."""
        params = state.params
        done = state.pending_valid & (state.pending_episodes >= params.n_rollouts)
        rate = state.pending_successes / jnp.maximum(state.pending_episodes, 1)
        goid = (rate >= params.goid_lb) & (rate <= params.goid_ub)
        unit = self.to_unit(state.pending_task)
        rows = jnp.concatenate([unit, goid[:, None].astype(jnp.float32)], axis=1)
        labels = ring_push(state.labels, rows, done)

        mastered = done & (rate > params.goid_ub)
        threshold = params.success_distance_threshold * np.sqrt(self.dim)
        old = state.old_goals
        to_old = jnp.linalg.norm(unit[:, None, :] - old.data[None, :, :], axis=-1)
        far = jnp.all((to_old > threshold) | ~old.valid[None, :], axis=1)
        between = jnp.linalg.norm(unit[:, None, :] - unit[None, :, :], axis=-1)
        p = self.pending_size
        earlier = (jnp.arange(p)[None, :] < jnp.arange(p)[:, None]) & mastered[None, :]
        far = far & jnp.all((between > threshold) | ~earlier, axis=1)
        old = ring_push(old, unit, mastered & far)
        return state.replace(
            labels=labels,
            old_goals=old,
            pending_valid=state.pending_valid & ~done,
            labelled=state.labelled + done.sum().astype(jnp.int32),
        )

    def _train(self, state: GoalGANState) -> GoalGANState:
        """A GAN training on the label buffer if it is full enough and holds a GOID goal;
        the buffer is emptied when full enough, trained on or not."""
        params = state.params
        labels = state.labels
        count = labels.count
        goals, goid = labels.data[:, : self.dim], labels.data[:, self.dim]
        key, k_train = jax.random.split(state.key)
        # A ring that overflowed holds its rows from `head` on, all valid.
        order = jnp.where(
            count >= labels.capacity,
            (labels.head + jnp.arange(labels.capacity)) % labels.capacity,
            jnp.arange(labels.capacity),
        )
        goals, goid = goals[order], goid[order]
        gan, (d_loss, g_loss) = self.train_gan(
            state.gan, params, k_train, goals, goid, count, self.gan_iterations
        )
        ready = count >= params.update_size
        trained = ready & jnp.any(labels.valid & (labels.data[:, self.dim] > 0.5))
        gan = jax.tree.map(lambda a, b: jnp.where(trained, a, b), gan, state.gan)
        emptied = ring_init(labels.capacity, self.dim + 1)
        labels = jax.tree.map(lambda a, b: jnp.where(ready, a, b), emptied, labels)
        share = _shares(state.labels.data[:, self.dim], state.labels.valid.astype(jnp.float32))
        return state.replace(
            gan=gan,
            key=key,
            labels=labels,
            gan_updates=state.gan_updates + trained.astype(jnp.int32),
            discriminator_loss=jnp.where(trained, d_loss, state.discriminator_loss),
            generator_loss=jnp.where(trained, g_loss, state.generator_loss),
            goid_share=jnp.where(ready, share, state.goid_share).astype(jnp.float32),
        )

    def snapshot(self, state: GoalGANState) -> dict:
        """Generator goals [64, D] (task units, fixed noise, no added noise), the label
        buffer (goals [L, D] task units, GOID [L], valid [L]), its GOID share, the old
        goals, the last losses and the number of GAN trainings."""
        goals = self.generate(
            state.gan.generator, jax.random.PRNGKey(SNAPSHOT_KEY), SNAPSHOT_SAMPLES
        )
        labels = state.labels
        return {
            "generator_goals": self.from_unit(jnp.clip(goals, 0.0, 1.0)),
            "label_goals": self.from_unit(labels.data[:, : self.dim]),
            "label_goid": labels.data[:, self.dim],
            "label_valid": labels.valid,
            "label_goid_share": _shares(labels.data[:, self.dim], labels.valid.astype(jnp.float32)),
            "trained_goid_share": state.goid_share,
            "old_goals": self.from_unit(state.old_goals.data),
            "old_valid": state.old_goals.valid,
            "pending": state.pending_valid.sum(),
            "labelled": state.labelled,
            "discriminator_loss": state.discriminator_loss,
            "generator_loss": state.generator_loss,
            "gan_updates": state.gan_updates,
        }


GOAL_GAN_PRESETS: dict[str, dict] = {
    # TeachMyAgent's benchmark settings (module docstring).
    "teachmyagent": {},
    # The quick benchmark (experiments/configs/benchmark_quick.yaml): smaller networks,
    # rarer trainings, so the teacher stays within a quarter of Random's run time.
    "quick": dict(
        generator_layers=(32, 32),
        discriminator_layers=(32, 32),
        gan_iterations=100,
        pretrain_iterations=200,
        update_every=16,
        old_buffer_size=128,
    ),
}
"""Named settings of the GoalGAN teacher."""

make_goal_gan = class_factory(
    GoalGANTeacher, presets=GOAL_GAN_PRESETS, preset="teachmyagent", name="make_goal_gan"
)
TEACHERS.register("goal_gan")(make_goal_gan)

__all__ = [
    "GOAL_GAN_PRESETS",
    "GoalGANParams",
    "GoalGANState",
    "GoalGANTeacher",
    "make_goal_gan",
]
