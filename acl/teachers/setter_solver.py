"""Setter-Solver (Racanière, Lampinen et al. 2020, *Automated curricula through
setter-solver interactions*, ICLR), as TeachMyAgent runs it (flowersteam/TeachMyAgent,
`teachers/algos/setter_solver.py` and `teachers/utils/setter_solver_utils.py`, itself
from the paper's released building blocks).

Everything lives in the task space normalised to the unit cube [0, 1]^D by its bounds;
tasks are mapped back to task units when handed out.

- The setter is a conditional RealNVP flow: latent noise z ~ N(0, I) [D] and a desired
  feasibility f [1] go through `num_blocks` blocks of three affine coupling layers (the
  first half of the coordinates conditioning the second, the second the first, the odd
  ones the even ones; each layer's nets see the untouched coordinates and f), with scale
  0.01 + softplus(.), then through a sigmoid into the unit cube. The flow's log-det gives
  the exact log density of any task under the setter, for any f.
- The judge is an MLP (ReLU) giving the logit of the probability that the student
  succeeds on a task.
- Sampling: each task draws f ~ U(0, 1) and z ~ N(0, I) and is setter(z, f).
- Each completed episode adds (task, success) to a ring buffer of the last
  `buffer_size` records (masked records never enter it). On updates whose `step` is a
  multiple of `train_every` (a real `lax.cond`: `step` is never vmapped) the networks
  take `train_steps` Adam steps, each one on the judge and then one on the setter:
  - judge: sigmoid cross-entropy of its logit against the buffer's successes;
  - setter: validity + feasibility + coverage, each weighted (1 by default):
    validity = -log p_setter(x + noise | f_x) over the buffer's successful tasks x
    (noise ~ U(0, loss_noise_ub) per coordinate, as the reference adds it, clipped to
    the open cube); feasibility = how far the judge's prediction on setter(z, f), fresh
    z and f ~ U(0, 1), is from f (the judge held fixed, its gradient flowing into the
    setter): TeachMyAgent's squared difference of the judge's logit and logit(f) (f
    clipped to [0.01, 0.99]), or with `feasibility_loss: cross_entropy` the paper's
    cross-entropy between f and the judge's probability; coverage = the mean log density
    of those samples (minimising it maximises the setter's entropy).

Defaults, from TeachMyAgent's benchmark settings (`benchmark_scripts/
full_benchmark_Setter-Solver.txt`: every line runs `--ss_update_frequency 50
--setter_loss_noise_ub 0.1 --setter_hidden_size 64`) and its code:
- `setter_hidden` 64 (`--setter_hidden_size 64`; the argument default, `run_utils/
  teacher_args_handler.py`, is 128: the `teachmyagent` preset), `loss_noise_ub` 0.1
  (`--setter_loss_noise_ub 0.1`; argument default 0.05).
- `num_blocks` 3 (`FlatRnvp(num_blocks=3)`), the sigmoid output (`ClippedSigmoid`), the
  scale floor 0.01 (`_MIN_SCALE`).
- `judge_hidden` (64, 64): TeachMyAgent builds `Judge(hidden_sizes=[64, 64, 64])`, whose
  MLP takes `layer_sizes[1:]` of [64, 64, 64, 1], so two hidden layers of 64.
- `setter_learning_rate` and `judge_learning_rate` 3e-4 (both `AdamOptimizer(3e-4)`).
- `feasibility_loss` logit_mse: TeachMyAgent's `FlatRnvp._set_loss`. The paper's
  cross-entropy is weaker (the cost of a task of feasibility 0.4 asked at 0.2 is a KL of
  0.09 against a squared logit gap of 1), and with unit weights the coverage term then
  pulls the setter towards the middle: on tests/test_setter_solver.py's toy it settled at
  success rates 0.31 / 0.51 / 0.77 for f 0.2 / 0.5 / 0.8 (logit_mse: 0.20 / 0.45 / 0.78).
- Training: TeachMyAgent takes one Adam step on each network every 50 episodes
  (`--ss_update_frequency 50`), on those 50. Here `train_steps` 2 Adam steps every
  `train_every` 8 updates on the last `buffer_size` 256 records, with `setter_batch` 128
  fresh samples: this module's choices, to keep the teacher within 25% of the random
  teacher's wall time on experiments/configs/benchmark_quick.yaml (a training of 8 seeds
  costs about as much as a whole loop iteration on CPU). The quick benchmark ends 60-200
  episodes per update and seed, so this is 8-32 times fewer steps per episode than the
  reference; raise `train_steps` or lower `train_every` where time allows.

Simplifications and deviations from TeachMyAgent, and why:
- The coupling nets are plain MLPs (`coupling_layers` tanh layers of `setter_hidden`,
  the last layer zero-initialised, so the flow starts as the identity), one net per
  layer giving both scale and shift; TeachMyAgent uses two Highway nets (3 highway
  blocks) per layer, not zero-initialised. The scale is 0.01 + softplus shifted to 1 at
  0 (the reference's 0.01 + an arctan-based softplus). Cheaper, and identity at start.
- Validity conditions each successful task on the judge's current (fixed) prediction of
  its feasibility, clipped to [0.01, 0.99]; TeachMyAgent conditions it on the f the task
  was sampled with. Feedback carries only the task, and an extra f column would not
  pass through a challenge's map (acl.teachers.challenge).
- logit(f) is taken of f clipped to [0.01, 0.99] (TeachMyAgent: of f in [1e-8, 1)).
- Coverage and feasibility use fresh noise z ~ N(0, I) and f ~ U(0, 1); TeachMyAgent
  feeds the latents its flow infers for the buffered tasks (and their f's).
- The buffer is a ring of recent records kept across trainings; TeachMyAgent empties it
  at each training.
- f is drawn from U(0, 1) (the reference: U(1e-8, 1), kept away from 0 for its logit).
- Expert knowledge: TeachMyAgent hands Setter-Solver no `initial_dist` (its expert
  knowledge is only the success definition; `teacher_args_handler.py` passes none). Here,
  with `with_prior(mean, std)` enabled, a fixed affine map in logit space sits between
  the flow and the sigmoid, logit(m) + s / (m (1 - m)) * x per coordinate (m, s the
  prior's mean and std in the unit cube, m clipped to [0.01, 0.99]): since the flow
  starts as the identity, the initial setter is sigmoid(N(logit(m), (s / m(1-m))^2)),
  whose mean and std match the prior's to first order; training moves the flow from
  there. Without the prior the map is the identity (the reference's plain sigmoid).
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

MIN_SCALE = 0.01
"""Floor of a coupling layer's scale (TeachMyAgent's `_MIN_SCALE`)."""
_SCALE_SHIFT = float(np.log(np.expm1(1.0 - MIN_SCALE)))
"""softplus(0 + shift) + MIN_SCALE = 1: a zero net output is the identity."""
OPEN_CUBE = 1e-4
"""Achieved tasks are clipped to [1e-4, 1 - 1e-4] before the logit (the reference's)."""
FEASIBILITY_CLIP = 0.01
"""The judge's feasibility of an achieved task, as the setter's condition, is clipped to
[0.01, 0.99]."""
SNAPSHOT_FEASIBILITIES = (0.2, 0.5, 0.8)
SNAPSHOT_NOISE = 16
"""Setter samples the snapshot shows per feasibility, from a fixed noise batch."""


# -- networks --------------------------------------------------------------------------


def coupling_masks(dim: int, num_blocks: int) -> np.ndarray:
    """[3 * num_blocks, D] 1 where a coupling layer's coordinate conditions (is left
    unchanged), 0 where it is transformed: first half -> second, second -> first, odd ->
    even, as the reference's blocks. With D = 1 the middle layer transforms nothing."""
    half = dim // 2
    first = (np.arange(dim) < half).astype(np.float32)
    odd = (np.arange(dim) % 2 == 1).astype(np.float32)
    block = np.stack([first, 1.0 - first, odd])
    return np.tile(block, (num_blocks, 1))


class CouplingNet(nn.Module):
    """(log-scale pre-activation, shift) [n, D] each, from the conditioning input."""

    dim: int
    hidden: int
    layers: int

    @nn.compact
    def __call__(self, x):
        for _ in range(self.layers):
            x = jnp.tanh(nn.Dense(self.hidden)(x))
        out = nn.Dense(2 * self.dim, kernel_init=nn.initializers.zeros)(x)
        return out[..., : self.dim], out[..., self.dim :]


class ConditionalFlow(nn.Module):
    """A conditional RealNVP on R^D: `forward(z, f)` and `inverse(x, f)`, each returning
    its output [n, D] and log |det d x / d z| [n]."""

    dim: int
    num_blocks: int
    hidden: int
    layers: int

    def setup(self):
        count = 3 * self.num_blocks
        self.nets = [CouplingNet(self.dim, self.hidden, self.layers) for _ in range(count)]

    def _coupling(self, i, mask, x, f):
        s, t = self.nets[i](jnp.concatenate([x * mask, f], axis=-1))
        scale = MIN_SCALE + jax.nn.softplus(s + _SCALE_SHIFT)
        return scale, t

    def forward(self, z, f):
        masks = coupling_masks(self.dim, self.num_blocks)
        log_det = jnp.zeros(z.shape[:-1])
        for i, mask in enumerate(masks):
            scale, t = self._coupling(i, mask, z, f)
            z = mask * z + (1.0 - mask) * (z * scale + t)
            log_det = log_det + jnp.sum((1.0 - mask) * jnp.log(scale), axis=-1)
        return z, log_det

    def inverse(self, x, f):
        masks = coupling_masks(self.dim, self.num_blocks)
        log_det = jnp.zeros(x.shape[:-1])
        for i in reversed(range(len(masks))):
            mask = masks[i]
            scale, t = self._coupling(i, mask, x, f)
            x = mask * x + (1.0 - mask) * (x - t) / scale
            log_det = log_det + jnp.sum((1.0 - mask) * jnp.log(scale), axis=-1)
        return x, log_det

    def __call__(self, z, f):
        return self.forward(z, f)


class Judge(nn.Module):
    """Logit [n] of the probability of success on unit-cube tasks [n, D]."""

    hidden: tuple[int, ...]

    @nn.compact
    def __call__(self, x):
        for width in self.hidden:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(1)(x)[..., 0]


def _log_normal(z):
    return -0.5 * jnp.sum(z**2, axis=-1) - 0.5 * z.shape[-1] * jnp.log(2 * jnp.pi)


def _log_sigmoid_derivative(y):
    # sigmoid'(y) = sigmoid(y) sigmoid(-y)
    return jax.nn.log_sigmoid(y) + jax.nn.log_sigmoid(-y)


# -- the teacher -----------------------------------------------------------------------


@struct.dataclass
class SetterSolverParams:
    """Numeric hyperparameters (pytree leaves, vmappable); defaults: module docstring."""

    setter_learning_rate: jax.Array = hparam(
        3e-4, low=0.0, low_open=True, doc="Adam step of the setter (TeachMyAgent's 3e-4)."
    )
    judge_learning_rate: jax.Array = hparam(
        3e-4, low=0.0, low_open=True, doc="Adam step of the judge (TeachMyAgent's 3e-4)."
    )
    loss_noise_ub: jax.Array = hparam(
        0.1,
        low=0.0,
        doc="Achieved tasks get U(0, this) noise per coordinate (unit cube) in the "
        "validity loss (TeachMyAgent's benchmark --setter_loss_noise_ub 0.1).",
    )
    validity_weight: jax.Array = hparam(1.0, low=0.0, doc="Weight of the validity loss.")
    feasibility_weight: jax.Array = hparam(1.0, low=0.0, doc="Weight of the feasibility loss.")
    coverage_weight: jax.Array = hparam(1.0, low=0.0, doc="Weight of the coverage loss.")
    prior_loc: jax.Array = None
    """[D] logit-space offset between the flow and the sigmoid (0: no prior)."""
    prior_scale: jax.Array = None
    """[D] logit-space scale between the flow and the sigmoid (1: no prior)."""


@struct.dataclass
class SetterSolverState:
    params: SetterSolverParams
    setter: Any
    """The flow's flax params."""
    judge: Any
    """The judge's flax params."""
    setter_opt: Any
    """optax Adam state of the setter."""
    judge_opt: Any
    buffer: Ring
    """[buffer_size, D + 1] rows (unit-cube task, success)."""
    trainings: jax.Array
    """int32: trainings done (each `train_steps` Adam steps)."""
    losses: jax.Array
    """[4] the last training step's judge, validity, feasibility and coverage losses."""
    episodes_seen: jax.Array


@dataclass(frozen=True)
class SetterSolverTeacher(Teacher):
    """Setter-Solver (Racanière et al. 2020), TeachMyAgent's version: a conditional flow
    sets tasks of a desired feasibility, as a judge trained on the student's successes
    predicts it; see the module docstring."""

    takes_prior = True
    """The initial setter is the expert prior (`with_prior`)."""
    task_space: Box
    setter_hidden: int = hparam(
        64, low=1, doc="Units of the setter's coupling nets (TeachMyAgent's benchmark 64)."
    )
    coupling_layers: int = hparam(1, low=1, doc="Hidden layers of each coupling net.")
    num_blocks: int = hparam(
        3, low=1, doc="Flow blocks of three coupling layers (TeachMyAgent's 3)."
    )
    judge_hidden: tuple[int, ...] = hparam(
        (64, 64), low=1, min_size=1, doc="Hidden layers of the judge (TeachMyAgent's 64, 64)."
    )
    buffer_size: int = hparam(256, low=1, doc="Most recent (task, success) records trained on.")
    train_every: int = hparam(8, low=1, doc="Updates between trainings (on the loop's step).")
    train_steps: int = hparam(2, low=1, doc="Adam steps of each network per training.")
    setter_batch: int = hparam(
        128, low=1, doc="Fresh setter samples of the feasibility and coverage losses."
    )
    feasibility_loss: str = hparam(
        "logit_mse",
        choices=("logit_mse", "cross_entropy"),
        doc="logit_mse: (judge logit - logit f)^2 (TeachMyAgent's); cross_entropy: "
        "the paper's CE(f, judge).",
    )
    hyper: SetterSolverParams = nested(SetterSolverParams)

    def __post_init__(self):
        hparams.validate_fields(self, "teacher")
        object.__setattr__(self, "judge_hidden", tuple(int(w) for w in self.judge_hidden))

    # -- coordinates and networks ---------------------------------------------------------

    @property
    def dim(self) -> int:
        return self.task_space.dim

    @property
    def _range(self) -> jax.Array:
        return self.task_space.high_array - self.task_space.low_array

    def to_unit(self, tasks: jax.Array) -> jax.Array:
        return (tasks - self.task_space.low_array) / self._range

    def from_unit(self, unit: jax.Array) -> jax.Array:
        return self.task_space.low_array + unit * self._range

    @property
    def flow(self) -> ConditionalFlow:
        return ConditionalFlow(self.dim, self.num_blocks, self.setter_hidden, self.coupling_layers)

    @property
    def judge(self) -> Judge:
        return Judge(self.judge_hidden)

    def set_tasks(self, setter, params: SetterSolverParams, z, f):
        """Unit-cube tasks [n, D] and their log density [n] from noise z [n, D] and
        feasibilities f [n]."""
        x, log_det = self.flow.apply(setter, z, f[:, None], method=ConditionalFlow.forward)
        y = params.prior_loc + params.prior_scale * x
        log_p = (
            _log_normal(z)
            - log_det
            - jnp.sum(jnp.log(params.prior_scale))
            - jnp.sum(_log_sigmoid_derivative(y), axis=-1)
        )
        return jax.nn.sigmoid(y), log_p

    def log_density(self, setter, params: SetterSolverParams, unit, f):
        """log p_setter(unit | f) [n] of unit-cube tasks [n, D] (in the open cube)."""
        y = jnp.log(unit) - jnp.log1p(-unit)
        x = (y - params.prior_loc) / params.prior_scale
        z, log_det = self.flow.apply(setter, x, f[:, None], method=ConditionalFlow.inverse)
        return (
            _log_normal(z)
            - log_det
            - jnp.sum(jnp.log(params.prior_scale))
            - jnp.sum(_log_sigmoid_derivative(y), axis=-1)
        )

    # -- parameters and state -------------------------------------------------------------

    def default_params(self) -> SetterSolverParams:
        return hparams.leaves(self.hyper).replace(
            prior_loc=jnp.zeros((self.dim,), jnp.float32),
            prior_scale=jnp.ones((self.dim,), jnp.float32),
        )

    def with_prior(self, params: SetterSolverParams, mean, std, enabled) -> SetterSolverParams:
        """Expert knowledge: the initial setter approximates N(mean, std^2) ([D] each, task
        units) where `enabled` (module docstring); traced values are fine."""
        m = jnp.clip(self.to_unit(jnp.asarray(mean, jnp.float32)), 0.01, 0.99)
        s = jnp.asarray(std, jnp.float32) / self._range
        loc = jnp.log(m) - jnp.log1p(-m)
        scale = jnp.clip(s / (m * (1.0 - m)), 1e-2, 1e2)
        return params.replace(
            prior_loc=jnp.where(enabled, loc, params.prior_loc),
            prior_scale=jnp.where(enabled, scale, params.prior_scale),
        )

    def _optimisers(self, params: SetterSolverParams):
        return optax.adam(params.setter_learning_rate), optax.adam(params.judge_learning_rate)

    def init(self, key: jax.Array, params: SetterSolverParams) -> SetterSolverState:
        k_setter, k_judge = jax.random.split(key)
        dim = self.dim
        setter = self.flow.init(k_setter, jnp.zeros((1, dim)), jnp.zeros((1, 1)))
        judge = self.judge.init(k_judge, jnp.zeros((1, dim)))
        setter_opt, judge_opt = self._optimisers(params)
        return SetterSolverState(
            params=params,
            setter=setter,
            judge=judge,
            setter_opt=setter_opt.init(setter),
            judge_opt=judge_opt.init(judge),
            buffer=ring_init(self.buffer_size, dim + 1),
            trainings=jnp.zeros((), jnp.int32),
            losses=jnp.zeros((4,), jnp.float32),
            episodes_seen=jnp.zeros((), jnp.int32),
        )

    # -- protocol -------------------------------------------------------------------------

    def sample(self, state: SetterSolverState, key, n: int):
        k_z, k_f = jax.random.split(key)
        z = jax.random.normal(k_z, (n, self.dim))
        f = jax.random.uniform(k_f, (n,))
        unit, _ = self.set_tasks(state.setter, state.params, z, f)
        tasks = jnp.clip(
            self.from_unit(jnp.clip(unit, 0.0, 1.0)),
            self.task_space.low_array,
            self.task_space.high_array,
        )
        return state, tasks, default_info(n)

    def update(
        self,
        state: SetterSolverState,
        key,
        tasks,
        feedback: Feedback,
        step,
        context: UpdateContext = UpdateContext(),
    ):
        del tasks, context
        task = feedback.task[:, : self.dim]
        valid = feedback.mask.astype(bool) & jnp.all(jnp.isfinite(task), axis=-1)
        unit = jnp.where(valid[:, None], jnp.clip(self.to_unit(task), 0.0, 1.0), 0.0)
        success = jnp.where(valid, feedback.success, False).astype(jnp.float32)
        rows = jnp.concatenate([unit, success[:, None]], axis=-1)
        state = state.replace(
            buffer=ring_push(state.buffer, rows, valid),
            episodes_seen=state.episodes_seen + valid.sum().astype(jnp.int32),
        )
        # `step` is the same for every seed: a real branch under a vmap over seeds.
        due = jnp.asarray(step) % self.train_every == 0
        return jax.lax.cond(due, self._train, lambda s, k: s, state, key)

    def losses(self, setter, judge, params: SetterSolverParams, buffer: Ring, key):
        """(setter loss, (validity, feasibility, coverage)) of one training step."""
        dim = self.dim
        k_noise, k_z, k_f = jax.random.split(key, 3)
        unit, success = buffer.data[:, :dim], buffer.data[:, dim]
        achieved = buffer.valid.astype(jnp.float32) * success
        noise = jax.random.uniform(k_noise, unit.shape) * params.loss_noise_ub
        noisy = jnp.clip(unit + noise, OPEN_CUBE, 1.0 - OPEN_CUBE)
        judged = jax.nn.sigmoid(self.judge.apply(judge, unit))
        condition = jnp.clip(judged, FEASIBILITY_CLIP, 1.0 - FEASIBILITY_CLIP)
        log_p = self.log_density(setter, params, noisy, jax.lax.stop_gradient(condition))
        validity = -jnp.sum(achieved * log_p) / jnp.maximum(achieved.sum(), 1.0)

        z = jax.random.normal(k_z, (self.setter_batch, dim))
        f = jax.random.uniform(k_f, (self.setter_batch,))
        samples, sample_log_p = self.set_tasks(setter, params, z, f)
        logit = self.judge.apply(judge, samples)
        if self.feasibility_loss == "logit_mse":
            clipped = jnp.clip(f, FEASIBILITY_CLIP, 1.0 - FEASIBILITY_CLIP)
            target = jnp.log(clipped) - jnp.log1p(-clipped)
            feasibility = jnp.mean((logit - target) ** 2)
        else:
            feasibility = jnp.mean(jax.nn.softplus(logit) - f * logit)
        coverage = jnp.mean(sample_log_p)
        total = (
            params.validity_weight * validity
            + params.feasibility_weight * feasibility
            + params.coverage_weight * coverage
        )
        return total, (validity, feasibility, coverage)

    def judge_loss(self, judge, buffer: Ring):
        """Mean sigmoid cross-entropy of the judge on the buffer's records."""
        dim = self.dim
        weights = buffer.valid.astype(jnp.float32)
        logit = self.judge.apply(judge, buffer.data[:, :dim])
        label = buffer.data[:, dim]
        per_record = jax.nn.softplus(logit) - label * logit
        return jnp.sum(weights * per_record) / jnp.maximum(weights.sum(), 1.0)

    def _train(self, state: SetterSolverState, key) -> SetterSolverState:
        params, buffer = state.params, state.buffer
        setter_tx, judge_tx = self._optimisers(params)

        def one_step(carry, step_key):
            setter, judge, setter_opt, judge_opt = carry
            judge_loss, grads = jax.value_and_grad(self.judge_loss)(judge, buffer)
            updates, judge_opt = judge_tx.update(grads, judge_opt, judge)
            judge = optax.apply_updates(judge, updates)
            # The judge is held fixed in the setter's step (only the setter is trained).
            (_, parts), grads = jax.value_and_grad(self.losses, has_aux=True)(
                setter, jax.lax.stop_gradient(judge), params, buffer, step_key
            )
            updates, setter_opt = setter_tx.update(grads, setter_opt, setter)
            setter = optax.apply_updates(setter, updates)
            losses = jnp.stack([judge_loss, *parts]).astype(jnp.float32)
            return (setter, judge, setter_opt, judge_opt), losses

        carry = (state.setter, state.judge, state.setter_opt, state.judge_opt)
        keys = jax.random.split(key, self.train_steps)
        (setter, judge, setter_opt, judge_opt), losses = jax.lax.scan(one_step, carry, keys)
        return state.replace(
            setter=setter,
            judge=judge,
            setter_opt=setter_opt,
            judge_opt=judge_opt,
            trainings=state.trainings + 1,
            losses=losses[-1],
        )

    def snapshot(self, state: SetterSolverState) -> dict:
        """Setter samples [3, 16, D] (task units) at f = 0.2, 0.5, 0.8 from a fixed noise
        batch and the judge's mean prediction on them [3], the judge's accuracy on the
        buffer, the last training step's losses, trainings and buffer fill."""
        dim = self.dim
        z = jax.random.normal(jax.random.PRNGKey(0), (SNAPSHOT_NOISE, dim))
        per_f, judged = [], []
        for f in SNAPSHOT_FEASIBILITIES:
            unit, _ = self.set_tasks(
                state.setter, state.params, z, jnp.full((SNAPSHOT_NOISE,), f, jnp.float32)
            )
            per_f.append(self.from_unit(jnp.clip(unit, 0.0, 1.0)))
            judged.append(jnp.mean(jax.nn.sigmoid(self.judge.apply(state.judge, unit))))
        buffer = state.buffer
        weights = buffer.valid.astype(jnp.float32)
        predicted = self.judge.apply(state.judge, buffer.data[:, :dim]) > 0.0
        correct = (predicted == (buffer.data[:, dim] > 0.5)).astype(jnp.float32)
        accuracy = jnp.sum(weights * correct) / jnp.maximum(weights.sum(), 1.0)
        return {
            "setter_samples": jnp.stack(per_f),
            "judge_on_samples": jnp.stack(judged),
            "judge_accuracy": accuracy,
            "judge_loss": state.losses[0],
            "validity_loss": state.losses[1],
            "feasibility_loss": state.losses[2],
            "coverage_loss": state.losses[3],
            "trainings": state.trainings,
            "buffer_count": buffer.count,
            "episodes_seen": state.episodes_seen,
        }


SETTER_SOLVER_PRESETS: dict[str, dict] = {
    # TeachMyAgent's benchmark runs (benchmark_scripts/full_benchmark_Setter-Solver.txt).
    "benchmark": {},
    # TeachMyAgent's argument defaults (run_utils/teacher_args_handler.py).
    "teachmyagent": dict(setter_hidden=128, loss_noise_ub=0.05),
}
"""Named settings of the Setter-Solver teacher."""

make_setter_solver = class_factory(
    SetterSolverTeacher,
    presets=SETTER_SOLVER_PRESETS,
    preset="benchmark",
    name="make_setter_solver",
)
TEACHERS.register("setter_solver")(make_setter_solver)

__all__ = [
    "SETTER_SOLVER_PRESETS",
    "ConditionalFlow",
    "Judge",
    "SetterSolverParams",
    "SetterSolverState",
    "SetterSolverTeacher",
    "coupling_masks",
    "make_setter_solver",
]
