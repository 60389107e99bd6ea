"""Stein Variational Goal Generation (Castanet, Sigaud, Lamprier 2023, "Stein Variational
Goal Generation for adaptive Exploration in Multi-Goal Reinforcement Learning"), and a
random-valid-goal baseline.

The teacher hands out *goals*: `base_task` (which fixes the start) with its goal part
replaced (`envs.base.GoalTaskEnv.task_with_goal`). It works with any GoalTaskEnv
(point_maze, goal_maze, bit_flip); the env is a static field. Goals live in the box the
task space gives the goal coordinates (`goal_from_task` of the task bounds).

The method, all inside the teacher state and jittable:

1. Goal particles: `num_particles` (100) points x_i in goal space; the training goals
   are drawn uniformly from them (`sample`).
2. Success predictor D_phi(g) in (0, 1): an MLP (flax; ReLU hidden layers, sigmoid
   output) trained with binary cross-entropy on (goal, success) records. The goal of a
   record is the one the env actually ran (`used_goal`: the desired goal of a reset under
   the task, e.g. point_maze's snapped goal; the handed-out goal under `invalid_goal:
   keep`), so D_phi learns where the attempts really were. The records come from
   `Feedback` and sit in a ring buffer of the `predictor_buffer` most recent episodes;
   each fit does `predictor_steps` Adam steps on minibatches of `predictor_batch` records
   drawn uniformly from the buffer. Parameters and Adam state live in the teacher state.
3. Validity model p_valid(g): a model of the goals the agent can reach, fitted on the
   states episodes visited: every step's achieved goal in the rollout the loop hands the
   teacher (`env.achieved_goal(rollout.next_obs)`), of which `validity_per_update` are
   drawn uniformly per update into a ring buffer of the `validity_buffer` most recent.
4. Target: log p_goals(g) = T * Beta(D_phi(g); alpha, beta) + log p_valid(g) (the Beta
   *density*, times the temperature T, as the authors' code computes it;
   `skill_term: log` uses T * log Beta instead). The Beta term puts the particles where
   the predicted success is intermediate; (alpha, beta) sets the difficulty (presets in
   `DIFFICULTIES`; (2, 2) "medium" peaks at D = 0.5), T how much it counts against
   validity.
5. SVGD (Liu & Wang 2016): `svgd_steps` steps per teacher update of
   phi(x_i) = 1/P sum_j [k(x_j, x_i) grad log p_goals(x_j) + grad_{x_j} k(x_j, x_i)],
   with an RBF kernel k(x, y) = exp(-|x - y|^2 / h) and the median heuristic
   h = med(|x_i - x_j|^2) / log(P + 1) recomputed at every step. The particles follow phi
   through Adam (lr `svgd_lr` = 0.1), whose moments persist across updates, and are
   clipped into the goal box after each step. The authors run one SVGD step every 20
   env steps: set `svgd_steps` to about (env steps per update) / 20. SVGD runs in the
   goal box rescaled to [-1, 1]^G (the predictor's input too), so the step size is the
   same share of the goal space in every env.
6. Particles start around the goal the start achieves (the achieved goal of the base
   task's reset observation), Gaussian with std `init_std` (0.1) times the goal box's
   width, clipped into the box.

Order of one update: the records join the buffers (`record`); then (`fit`) the
validity model is refitted, D_phi takes its Adam steps and the particles their SVGD
steps. With `update_every` > 1, `fit` runs every that many updates only, keyed on the
loop's update counter (the same for every seed, so a real `lax.cond` under a vmap over
seeds).

Sources. The paper (Castanet, Sigaud, Lamprier, ICML 2023; arXiv 2206.06719) for the
method; its defaults were read from the authors' public code
(github.com/nicolascastanet/Stein-Variational-Goal-Generation: `train_svgg.py`,
`mrl/modules/curiosity.py` `SvgdEntropy`, `mrl/utils/svgd.py` `Energy`,
`mrl/modules/density.py` `OCSVMdensity`), not from the paper's text, which was not
available here:
- target: `temp * Beta.pdf(D) + log prior`, temp = `--beta` = 10 (not overridden in
  the published point-maze commands), so `temperature` 10 and `skill_term` "density";
- difficulty (alpha, beta): medium (2, 2), easy (3, 1.5), hard (1.5, 3), very easy
  (5, 1), very hard (1, 5) (`--alpha_beta` in the published commands);
- 100 particles, Adam lr 0.1, one SVGD step every 20 env steps;
- particles initialised N(0, I) in the point maze's coordinates, whose origin is the
  start cell ("origin", the default start square) and whose cells are 1 unit wide:
  around the start, std one cell. `init_std` 0.1 of the goal box is this module's
  translation of "one cell", not a number of the authors'. (With `goal_predict`, their
  Fetch setting, every particle starts at the reset's achieved goal.)
- validity: a one-class SVM (nu = 0.01, RBF gamma = 0.5) refitted every 4000 steps on
  5000 achieved goals drawn from the replay buffer, i.e. visited states; log p_valid =
  log sigmoid(SVM decision function);
- the success predictor learns from the replay buffer's episodes with the goals they
  ran, in batches half successes and half failures.

Where this departs from the authors, and why:
- Validity model. A one-class SVM has no jittable fixed-cost solver here. It is a
  Gaussian kernel density estimate over the visited-goal buffer, turned into a soft
  *support* as the SVM's decision function is: with kde(g) the masked Gaussian KDE
  (Scott's rule bandwidth h = bandwidth_scale * sigma * n^(-1/(G + 4)), sigma the RMS
  per-coordinate standard deviation of the n buffered goals) and tau the
  `validity_quantile` (nu, 0.01 as the SVM's) quantile of the buffered goals'
  *leave-one-out* log kde (each point's density from the others),
      log p_valid(g) = log sigmoid(log kde(g) - tau).
  Inside the support log p_valid is about 0 and flat, so the skill term alone moves the
  particles there; outside it falls off like -|g - nearest visited goal|^2 / (2 h^2).
  Leave-one-out matters at the frontier: an isolated visited point's own kernel would
  lift its density above tau and keep it inside the support while its neighbourhood
  stays out; without its own kernel it counts as the outlier it is. The buffer is the
  most recent `validity_buffer` visited goals rather than a sample of the whole replay
  buffer, and the fit runs at every fit, not every 4000 steps.
- SVGD's kernel bandwidth: the median heuristic in the rescaled box, where the
  authors' default is a fixed sigma = 1 (about a tenth of their maze).
- Success predictor: a uniform minibatch of the most recent records, not balanced
  between successes and failures; its input is the goal alone (the start is fixed).
- An update without a rollout (`rollout` None: a hand-built record): the used goals of
  *successful* episodes stand in for the visited states, since a success reached its
  goal.
- Random-goal mix: `random_goal_ratio` (default 0, i.e. pure particle sampling) of the
  handed-out goals are replaced by uniform valid goals (the env's `sample_valid_goals`
  where it has one, else uniform over its `goal_grid`, else uniform over the goal box).
  It is not part of the method; it is a safety net against particles that collapse on
  a bad region.
- Fixed-size arrays throughout: both buffers are rings over the most recent records;
  with more valid records in one update than a buffer holds, the latest fill it.

`snapshot` returns the particles, D_phi and log p_valid on them, the predictor's
accuracy on its buffer, the buffer fills, the validity bandwidth and threshold, and, for
2-D goals, D_phi and log p_valid on a `plot_grid` x `plot_grid` grid over the goal box
(its points in `grid`), which is what a plot of the curriculum needs.
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
from acl.core.spaces import Box
from acl.core.types import Feedback, default_info
from acl.teachers import checks
from acl.teachers.base import TEACHERS, class_factory
from envs.base import GoalTaskEnv

GOAL_ENV = dict(
    uses="writes goals into tasks",
    build="make_svgg(task_space, env=...) or through acl.loop.train.build_components (it "
    "hands every teacher factory the run's env in its context)",
    protocol=GoalTaskEnv,
    methods=("goal_from_task", "task_with_goal", "achieved_goal"),
)
"""`checks.check_env`'s wording for the goal teachers."""

ENV_DOC = "The goal env whose goals are handed out (static); default: the run's."
BASE_TASK_DOC = (
    "[D] the task whose goal part is replaced: it fixes the start; default: the task "
    "space's default task."
)


DIFFICULTIES: dict[str, tuple[float, float]] = {
    "very_easy": (5.0, 1.0),
    "easy": (3.0, 1.5),
    "medium": (2.0, 2.0),
    "hard": (1.5, 3.0),
    "very_hard": (1.0, 5.0),
}
"""(alpha, beta) of the Beta over predicted success, as the authors' published commands
set them (`--alpha_beta`): "medium" (2, 2), the default, peaks at D = 0.5."""

_adam = optax.scale_by_adam()


class SuccessPredictor(nn.Module):
    """D_phi's logit: ReLU hidden layers, one linear output (flax's default init)."""

    hidden: tuple[int, ...]

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for width in self.hidden:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(1)(x)[..., 0]


@struct.dataclass
class SVGGParams:
    """Numeric hyperparameters (pytree leaves, vmappable): as configured on the teacher
    (`hyper`), as arrays in `default_params()`."""

    alpha: jax.Array = hparam(
        None,
        kind="float",
        low=1.0,
        doc="Beta's alpha over predicted success; default: the difficulty's.",
    )
    beta: jax.Array = hparam(
        None,
        kind="float",
        low=1.0,
        doc="Beta's beta over predicted success; default: the difficulty's.",
    )
    temperature: jax.Array = hparam(
        10.0,
        low=0.0,
        low_open=True,
        doc="T: weight of the skill term against log p_valid (authors' code: 10).",
    )
    svgd_lr: jax.Array = hparam(
        0.1, low=0.0, low_open=True, doc="Adam step size of the particles (paper: 0.1)."
    )
    predictor_lr: jax.Array = hparam(
        1e-3, low=0.0, low_open=True, doc="Adam step size of the success predictor."
    )
    random_goal_ratio: jax.Array = hparam(
        0.0,
        low=0.0,
        high=1.0,
        doc="Share of handed-out goals drawn uniformly from the valid goals (paper: none).",
    )
    validity_quantile: jax.Array = hparam(
        0.01,
        low=0.0,
        high=1.0,
        doc="nu: the quantile of the visited goals' leave-one-out log density that bounds "
        "the support (authors' code: the one-class SVM's nu = 0.01).",
    )
    bandwidth_scale: jax.Array = hparam(
        1.0, low=0.0, low_open=True, doc="Multiplies Scott's rule bandwidth of the validity KDE."
    )
    base_task: jax.Array = hparam(None, kind="floats", doc=BASE_TASK_DOC)


@struct.dataclass
class SVGGState:
    params: SVGGParams
    key: jax.Array
    """Update keys are fold_in(key, step); never split, so no-op updates change nothing."""
    particles: jax.Array
    """[P, G] goal particles."""
    particle_opt: Any
    """Adam moments of the particles."""
    predictor: Any
    """Flax parameters of D_phi."""
    predictor_opt: Any
    """Adam moments of D_phi."""
    attempt_goal: jax.Array
    """[Cs, G] attempted goals (ring buffer)."""
    attempt_success: jax.Array
    """[Cs] float32 success of each attempt."""
    attempt_count: jax.Array
    """int32: filled slots (<= Cs)."""
    attempt_head: jax.Array
    """int32: the next slot to write."""
    achieved: jax.Array
    """[Cv, G] achieved goals (ring buffer)."""
    achieved_count: jax.Array
    achieved_head: jax.Array
    bandwidth: jax.Array
    """Validity KDE bandwidth h."""
    threshold: jax.Array
    """Validity support threshold tau (log density)."""
    fits: jax.Array
    """int32: predictor / SVGD rounds done."""
    episodes_seen: jax.Array
    """int32: valid feedback records so far."""


# -- pure building blocks (tested on their own) ---------------------------------------------


def median_bandwidth(x: jax.Array) -> jax.Array:
    """The median heuristic of Liu & Wang (2016): h = med(|x_i - x_j|^2, i < j) / log(P + 1)
    for particles x [P, G]; floored at 1e-8."""
    p = x.shape[0]
    sq = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    rows, cols = np.triu_indices(p, k=1)
    med = jnp.median(sq[rows, cols]) if p > 1 else jnp.float32(1.0)
    return jnp.maximum(med / np.log(p + 1.0), 1e-8)


def svgd_direction(x: jax.Array, grad_logp: jax.Array) -> jax.Array:
    """SVGD's phi [P, G] for particles x [P, G] and grad log p at them [P, G]: RBF kernel
    k(x, y) = exp(-|x - y|^2 / h), h by the median heuristic (no gradient through h)."""
    p = x.shape[0]
    h = jax.lax.stop_gradient(median_bandwidth(x))
    diff = x[:, None, :] - x[None, :, :]  # [i, j, G] = x_i - x_j
    k = jnp.exp(-jnp.sum(diff**2, axis=-1) / h)  # symmetric
    drive = k @ grad_logp  # sum_j k(x_j, x_i) grad log p(x_j)
    # grad_{x_j} k(x_j, x_i) = 2 (x_i - x_j) / h * k: repulsion between particles.
    repulse = 2.0 / h * jnp.sum(k[:, :, None] * diff, axis=1)
    return (drive + repulse) / p


def svgd_step(x: jax.Array, opt_state, log_prob, lr, low=None, high=None):
    """One SVGD step with Adam: x [P, G] moves along phi (ascent), then clipped into
    [low, high] when given. log_prob maps [P, G] -> [P]. Returns (x, opt_state)."""
    grad = jax.grad(lambda z: jnp.sum(log_prob(z)))(x)
    grad = jnp.where(jnp.isfinite(grad), grad, 0.0)
    phi = svgd_direction(x, grad)
    step, opt_state = _adam.update(phi, opt_state)
    x = x + lr * step
    if low is not None:
        x = jnp.clip(x, low, high)
    return x, opt_state


def log_beta_pdf(d_logit: jax.Array, alpha, beta) -> jax.Array:
    """log Beta(D; alpha, beta) with D = sigmoid(d_logit), computed stably from the logit."""
    log_norm = (
        jax.scipy.special.gammaln(alpha)
        + jax.scipy.special.gammaln(beta)
        - jax.scipy.special.gammaln(alpha + beta)
    )
    return (
        (alpha - 1.0) * jax.nn.log_sigmoid(d_logit)
        + (beta - 1.0) * jax.nn.log_sigmoid(-d_logit)
        - log_norm
    )


def ring_write(buffer, head, count, values, valid):
    """Writes the rows of `values` [K, ...] where valid [K] into the ring `buffer`
    [C, ...] from `head` on, in order; with more than C valid rows the last C are
    kept. Returns (buffer, head, count)."""
    capacity = buffer.shape[0]
    valid = valid.astype(bool)
    rank = jnp.cumsum(valid.astype(jnp.int32)) - 1
    total = valid.sum().astype(jnp.int32)
    keep = valid & (rank >= total - capacity)
    index = jnp.where(keep, (head + rank) % capacity, capacity)  # capacity: dropped
    zero = jnp.zeros_like(values)
    values = jnp.where(valid.reshape((-1,) + (1,) * (values.ndim - 1)), values, zero)
    buffer = buffer.at[index].set(values.astype(buffer.dtype), mode="drop")
    head = ((head + total) % capacity).astype(jnp.int32)
    count = jnp.minimum(count + total, capacity).astype(jnp.int32)
    return buffer, head, count


def kde_log_density(goals: jax.Array, points: jax.Array, mask: jax.Array, bandwidth) -> jax.Array:
    """log of the Gaussian KDE over points [C, G] where mask [C], at goals [..., G] ->
    [...]. Bandwidth h: isotropic standard deviation."""
    d2 = jnp.sum((goals[..., None, :] - points) ** 2, axis=-1)  # [..., C]
    return _log_kde(d2, mask, jnp.maximum(mask.sum(), 1), points.shape[-1], bandwidth)


def kde_loo_log_density(points: jax.Array, mask: jax.Array, bandwidth) -> jax.Array:
    """Leave-one-out log KDE at each of points [C, G] where mask [C] -> [C]: point i's
    density from the n - 1 others. Its own kernel, the largest term at an isolated point,
    would otherwise lift exactly the sparse frontier points above the threshold."""
    c, g = points.shape
    d2 = jnp.sum((points[:, None, :] - points[None, :, :]) ** 2, axis=-1)  # [i, j]
    others = mask[None, :] & ~jnp.eye(c, dtype=bool)
    return _log_kde(d2, others, jnp.maximum(mask.sum() - 1, 1), g, bandwidth)


def _log_kde(d2: jax.Array, mask: jax.Array, n, g: int, bandwidth) -> jax.Array:
    """log of (1 / n) sum over the masked kernels N(0, h^2 I_g) at squared distances d2
    [..., C] -> [...]."""
    logits = jnp.where(mask, -d2 / (2.0 * bandwidth**2), -1e30)
    return jax.nn.logsumexp(logits, axis=-1) - jnp.log(n) - _log_kernel_peak(g, bandwidth)


def _log_kernel_peak(g: int, bandwidth) -> jax.Array:
    """-log of a g-dimensional Gaussian kernel's peak density with std `bandwidth`."""
    return 0.5 * g * jnp.log(2.0 * jnp.pi * bandwidth**2)


def fit_validity(points: jax.Array, mask: jax.Array, quantile, bandwidth_scale, min_std):
    """(bandwidth, threshold) of the validity model on points [C, G] where mask [C]:
    Scott's rule bandwidth and the `quantile` of the points' leave-one-out log kde."""
    g = points.shape[-1]
    n = jnp.maximum(mask.sum(), 1).astype(jnp.float32)
    w = mask.astype(jnp.float32)[:, None]
    mean = jnp.sum(points * w, axis=0) / n
    var = jnp.sum(((points - mean) ** 2) * w, axis=0) / n
    sigma = jnp.maximum(jnp.sqrt(jnp.mean(var)), min_std)
    bandwidth = bandwidth_scale * sigma * n ** (-1.0 / (g + 4.0))
    logp = kde_loo_log_density(points, mask, bandwidth)
    ordered = jnp.sort(jnp.where(mask, logp, jnp.inf))
    index = jnp.clip(jnp.floor(quantile * (n - 1)).astype(jnp.int32), 0, points.shape[0] - 1)
    # One point has no others: its support is the KDE around it, whose log density at
    # the point itself is the kernel's peak.
    threshold = jnp.where(mask.sum() > 1, ordered[index], -_log_kernel_peak(g, bandwidth))
    threshold = jnp.where(mask.any(), threshold, 0.0)
    return bandwidth, threshold


def valid_goal_sampler(env, goal_low: np.ndarray, goal_high: np.ndarray):
    """key, n -> [n, G] goals uniform over the env's valid goals: its
    `sample_valid_goals` (point_maze), else uniform over its `goal_grid()` (goal_maze's
    free cells), else uniform over the goal box."""
    sample = getattr(env, "sample_valid_goals", None)
    if sample is not None:
        return sample
    grid = getattr(env, "goal_grid", None)
    if grid is not None:
        points = np.asarray(grid(), np.float32)

        def from_grid(key, n):
            return jnp.asarray(points)[jax.random.randint(key, (n,), 0, points.shape[0])]

        return from_grid
    low, high = jnp.asarray(goal_low), jnp.asarray(goal_high)

    def from_box(key, n):
        return jax.random.uniform(key, (n, low.shape[0]), minval=low, maxval=high)

    return from_box


# -- configuration helpers --------------------------------------------------------------------


def goal_box(env, task_space: Box) -> tuple[np.ndarray, np.ndarray]:
    """(low [G], high [G]): the task space's bounds on the goal coordinates. Host side
    (call it at construction, not inside a trace)."""
    with jax.ensure_compile_time_eval():
        low = np.asarray(env.goal_from_task(task_space.low_array), np.float32)
        high = np.asarray(env.goal_from_task(task_space.high_array), np.float32)
    return np.minimum(low, high), np.maximum(low, high)


# -- the teacher -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SVGGTeacher:
    """Stein Variational Goal Generation; see the module docstring."""

    task_space: Box
    env: GoalTaskEnv | None = hparam(None, kind="any", doc=ENV_DOC)
    num_particles: int = hparam(
        100, low=2, doc="P: goal particles (paper: 100; SVGD's kernel needs two)."
    )
    svgd_steps: int = hparam(20, low=1, doc="SVGD steps per fit (paper: one per ~20 env steps).")
    predictor_steps: int = hparam(10, low=1, doc="Adam steps of the success predictor per fit.")
    predictor_batch: int = hparam(128, low=1, doc="Records per predictor minibatch.")
    predictor_hidden: tuple[int, ...] = hparam(
        (64, 64), low=1, doc="Hidden layer widths of the success predictor (ReLU)."
    )
    predictor_buffer: int = hparam(
        1000, low=1, doc="Most recent (goal, success) records the predictor trains on."
    )
    validity_buffer: int = hparam(
        1000, low=1, doc="Most recent visited goals the validity model is fitted on."
    )
    validity_per_update: int = hparam(
        100,
        low=1,
        doc="Visited goals (every step's achieved goal in the rollout) drawn uniformly per "
        "update into the validity buffer.",
    )
    update_every: int = hparam(
        1,
        low=1,
        doc="Teacher updates between fits (predictor, validity, SVGD); records join the "
        "buffers at every update.",
    )
    plot_grid: int = hparam(
        16, low=1, doc="Points per dimension of the snapshot's grid (2-D goals only)."
    )
    difficulty: str = hparam(
        "medium",
        choices=tuple(DIFFICULTIES),
        doc="Named (alpha, beta) of DIFFICULTIES (medium: the paper's (2, 2)); alpha and "
        "beta override it.",
    )
    init_std: float = hparam(
        0.1,
        low=0.0,
        low_open=True,
        doc="Initial particle spread (Gaussian std) around the start's achieved goal, as a "
        "share of the goal box's width in each coordinate (authors' code: N(start, 1) in a "
        "maze about 10 units wide).",
    )
    skill_term: str = hparam(
        "density",
        choices=("density", "log"),
        doc="The target's skill term: T * Beta(D; alpha, beta) (density, the authors' "
        "code) or T * log Beta(D; alpha, beta) (log).",
    )
    hyper: SVGGParams = nested(SVGGParams)

    def __post_init__(self):
        checks.check_env(self.env, self.task_space, "svgg", **GOAL_ENV)
        hparams.validate_fields(self, "teacher")
        hyper = self.hyper
        alpha, beta = DIFFICULTIES[self.difficulty]
        hyper = hyper.replace(
            alpha=alpha if hyper.alpha is None else hyper.alpha,
            beta=beta if hyper.beta is None else hyper.beta,
            base_task=checks.base_task(self.task_space, hyper.base_task),
        )
        object.__setattr__(self, "hyper", hyper)
        low, high = goal_box(self.env, self.task_space)
        # Not fields: derived once, and left out of the (static) hash and equality.
        object.__setattr__(self, "_goal_box", (tuple(low.tolist()), tuple(high.tolist())))

    # -- shapes and models ---------------------------------------------------------------

    @property
    def goal_dim(self) -> int:
        return len(self._goal_box[0])

    @property
    def goal_low(self) -> np.ndarray:
        """[G] lower bounds of the goal box."""
        return np.asarray(self._goal_box[0], np.float32)

    @property
    def goal_high(self) -> np.ndarray:
        """[G] upper bounds of the goal box."""
        return np.asarray(self._goal_box[1], np.float32)

    @property
    def network(self) -> SuccessPredictor:
        return SuccessPredictor(self.predictor_hidden)

    def _normalise(self, goals: jax.Array) -> jax.Array:
        """Goals -> [-1, 1] over the goal box (the predictor's input)."""
        low, high = jnp.asarray(self.goal_low), jnp.asarray(self.goal_high)
        return 2.0 * (goals - low) / jnp.maximum(high - low, 1e-8) - 1.0

    def success_logit(self, predictor, goals: jax.Array) -> jax.Array:
        """Logit of D_phi at goals [..., G] -> [...]."""
        return self.network.apply(predictor, self._normalise(goals))

    def predict_success(self, state: SVGGState, goals: jax.Array) -> jax.Array:
        """D_phi(g) in (0, 1) at goals [..., G] -> [...]."""
        return jax.nn.sigmoid(self.success_logit(state.predictor, goals))

    def log_valid(self, state: SVGGState, goals: jax.Array) -> jax.Array:
        """log p_valid(g) at goals [..., G] -> [...] (0 before any achieved goal)."""
        mask = jnp.arange(self.validity_buffer) < state.achieved_count
        log_kde = kde_log_density(goals, state.achieved, mask, state.bandwidth)
        value = jax.nn.log_sigmoid(log_kde - state.threshold)
        return jnp.where(state.achieved_count > 0, value, 0.0)

    def log_target(self, state: SVGGState, goals: jax.Array) -> jax.Array:
        """log p_goals(g) = T Beta(D_phi(g); alpha, beta) + log p_valid(g) (`skill_term`
        "density"; "log": T log Beta(...)), up to a constant, at goals [..., G] -> [...]."""
        p = state.params
        logit = self.success_logit(state.predictor, goals)
        log_skill = log_beta_pdf(logit, p.alpha, p.beta)
        skill = jnp.exp(log_skill) if self.skill_term == "density" else log_skill
        return p.temperature * skill + self.log_valid(state, goals)

    # -- parameters and state ------------------------------------------------------------

    def default_params(self) -> SVGGParams:
        return hparams.leaves(_with_base_task(self.hyper, self.task_space))

    def start_goal(self, key: jax.Array, base_task: jax.Array) -> jax.Array:
        """[G] the goal the base task's start achieves (its reset observation's)."""
        env = self.env
        params = env.task_to_params(base_task, env.default_params())
        obs, _ = env.reset(key, params)
        return jnp.asarray(env.achieved_goal(obs), jnp.float32)

    def init(self, key: jax.Array, params: SVGGParams) -> SVGGState:
        state_key, reset_key, noise_key, net_key = jax.random.split(key, 4)
        low, high = jnp.asarray(self.goal_low), jnp.asarray(self.goal_high)
        g = self.goal_dim
        centre = self.start_goal(reset_key, params.base_task)
        noise = jax.random.normal(noise_key, (self.num_particles, g))
        particles = jnp.clip(centre + self.init_std * (high - low) * noise, low, high)
        predictor = self.network.init(net_key, jnp.zeros((1, g), jnp.float32))
        return SVGGState(
            params=params,
            key=state_key,
            particles=particles,
            particle_opt=_adam.init(particles),
            predictor=predictor,
            predictor_opt=_adam.init(predictor),
            attempt_goal=jnp.zeros((self.predictor_buffer, g), jnp.float32),
            attempt_success=jnp.zeros((self.predictor_buffer,), jnp.float32),
            attempt_count=jnp.zeros((), jnp.int32),
            attempt_head=jnp.zeros((), jnp.int32),
            achieved=jnp.zeros((self.validity_buffer, g), jnp.float32),
            achieved_count=jnp.zeros((), jnp.int32),
            achieved_head=jnp.zeros((), jnp.int32),
            bandwidth=jnp.ones((), jnp.float32),
            threshold=jnp.zeros((), jnp.float32),
            fits=jnp.zeros((), jnp.int32),
            episodes_seen=jnp.zeros((), jnp.int32),
        )

    # -- tasks ---------------------------------------------------------------------------

    def sample(self, state: SVGGState, key: jax.Array, n: int):
        """n tasks [n, D]: goals uniform over the particles (a `random_goal_ratio` share
        uniform over the valid goals instead), written into the base task."""
        pick_key, mix_key, random_key = jax.random.split(key, 3)
        goals = state.particles[jax.random.randint(pick_key, (n,), 0, self.num_particles)]
        sampler = valid_goal_sampler(self.env, self.goal_low, self.goal_high)
        random_goals = jnp.asarray(sampler(random_key, n), jnp.float32)
        mix = jax.random.uniform(mix_key, (n,)) < state.params.random_goal_ratio
        goals = jnp.where(mix[:, None], random_goals, goals)
        base = jnp.broadcast_to(state.params.base_task, (n, self.task_space.dim))
        tasks = self.task_space.clip(self.env.task_with_goal(base, goals))
        return state, tasks, default_info(n)

    # -- update --------------------------------------------------------------------------

    def update(
        self,
        state: SVGGState,
        key,
        tasks,
        feedback: Feedback,
        rollout,
        step: jax.Array,
        student=None,
    ) -> SVGGState:
        """Buffers take the valid records; every `update_every` updates the validity
        model is refitted, D_phi trained and the particles moved (`fit`)."""
        record_key = jax.random.fold_in(jax.random.fold_in(state.key, 1), step)
        state = self.record(state, feedback, rollout, record_key)
        # The predicate depends on `step` only, the same for every seed: a real branch.
        due = jnp.asarray(step) % self.update_every == 0
        return jax.lax.cond(due, self.fit, lambda s, _: s, state, step)

    def used_goal(self, tasks: jax.Array) -> jax.Array:
        """[K, D] tasks -> [K, G] the goals the env actually ran them with: the desired goal
        of a reset under the task's params (point_maze's snapping of an invalid goal, say;
        under `invalid_goal: keep` the goal as handed out). Generic over GoalTaskEnv."""
        env = self.env
        base = env.default_params()

        def one(task):
            obs, _ = env.reset(jax.random.PRNGKey(0), env.task_to_params(task, base))
            return env.desired_goal(obs)

        dim = self.task_space.dim  # a wider teacher task: the env reads its first D columns
        return jnp.asarray(jax.vmap(one)(tasks[:, :dim]), jnp.float32)

    def visited_goals(self, rollout, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """([V, G], [V] mask): `validity_per_update` goals drawn uniformly without
        replacement from the achieved goals of every step of the rollout [T, N] (the
        states the episodes visited, the last of each included)."""
        next_obs = rollout.next_obs.reshape((-1,) + rollout.next_obs.shape[2:])
        reached = jnp.asarray(self.env.achieved_goal(next_obs), jnp.float32)
        total = reached.shape[0]
        if total <= self.validity_per_update:
            return reached, jnp.ones((total,), bool)
        pick = jax.random.choice(key, total, (self.validity_per_update,), replace=False)
        return reached[pick], jnp.ones((self.validity_per_update,), bool)

    def record(
        self, state: SVGGState, feedback: Feedback, rollout=None, key: jax.Array | None = None
    ) -> SVGGState:
        """The valid records join the buffers: (used goal, success) for D_phi, a uniform
        subsample of the rollout's visited goals (without a rollout: the goals of the
        successful episodes) for p_valid. `key` draws the subsample; default: from the
        state's key and the episodes seen so far."""
        mask = feedback.mask.astype(bool)
        used = self.used_goal(feedback.task)
        success = feedback.success.astype(bool) & mask
        goal_buf, goal_head, goal_count = ring_write(
            state.attempt_goal, state.attempt_head, state.attempt_count, used, mask
        )
        success_buf, _, _ = ring_write(
            state.attempt_success,
            state.attempt_head,
            state.attempt_count,
            success.astype(jnp.float32),
            mask,
        )
        if rollout is None:
            # No visited states: a successful episode reached its goal.
            reached, reached_mask = used, success
        else:
            if key is None:
                key = jax.random.fold_in(jax.random.fold_in(state.key, 1), state.episodes_seen)
            reached, reached_mask = self.visited_goals(rollout, key)
        achieved, achieved_head, achieved_count = ring_write(
            state.achieved, state.achieved_head, state.achieved_count, reached, reached_mask
        )
        return state.replace(
            attempt_goal=goal_buf,
            attempt_success=success_buf,
            attempt_head=goal_head,
            attempt_count=goal_count,
            achieved=achieved,
            achieved_head=achieved_head,
            achieved_count=achieved_count,
            episodes_seen=state.episodes_seen + mask.sum().astype(jnp.int32),
        )

    def fit(self, state: SVGGState, step: jax.Array) -> SVGGState:
        """Refit p_valid, train D_phi, move the particles (in that order)."""
        key = jax.random.fold_in(state.key, step)
        state = self.fit_validity(state)
        state = self.train_predictor(state, key)
        state = self.move_particles(state)
        return state.replace(fits=state.fits + 1)

    def fit_validity(self, state: SVGGState) -> SVGGState:
        """Bandwidth and support threshold of p_valid from the achieved-goal buffer."""
        p = state.params
        mask = jnp.arange(self.validity_buffer) < state.achieved_count
        min_std = 1e-3 * float(np.max(self.goal_high - self.goal_low))
        bandwidth, threshold = fit_validity(
            state.achieved, mask, p.validity_quantile, p.bandwidth_scale, min_std
        )
        return state.replace(bandwidth=bandwidth, threshold=threshold)

    def train_predictor(self, state: SVGGState, key: jax.Array) -> SVGGState:
        """`predictor_steps` Adam steps of BCE on minibatches from the attempt buffer."""
        count = state.attempt_count
        index = jax.random.randint(
            key, (self.predictor_steps, self.predictor_batch), 0, jnp.maximum(count, 1)
        )
        weight = (count > 0).astype(jnp.float32)
        lr = state.params.predictor_lr

        def loss_fn(predictor, goals, labels):
            logits = self.success_logit(predictor, goals)
            return weight * jnp.mean(optax.sigmoid_binary_cross_entropy(logits, labels))

        def one(carry, idx):
            predictor, opt = carry
            grads = jax.grad(loss_fn)(
                predictor, state.attempt_goal[idx], state.attempt_success[idx]
            )
            step, opt = _adam.update(grads, opt)
            predictor = jax.tree.map(lambda w, s: w - lr * s, predictor, step)
            return (predictor, opt), None

        (predictor, opt), _ = jax.lax.scan(one, (state.predictor, state.predictor_opt), index)
        # Nothing to learn from yet: keep the initial network (and its Adam moments).
        keep = count > 0
        predictor = jax.tree.map(lambda a, b: jnp.where(keep, a, b), predictor, state.predictor)
        opt = jax.tree.map(lambda a, b: jnp.where(keep, a, b), opt, state.predictor_opt)
        return state.replace(predictor=predictor, predictor_opt=opt)

    def move_particles(self, state: SVGGState) -> SVGGState:
        """`svgd_steps` SVGD steps in the goal box rescaled to [-1, 1]^G."""
        low, high = jnp.asarray(self.goal_low), jnp.asarray(self.goal_high)
        half = jnp.maximum(high - low, 1e-8) / 2.0

        def log_prob(z):
            return self.log_target(state, low + (z + 1.0) * half)

        def one(carry, _):
            z, opt = carry
            z, opt = svgd_step(z, opt, log_prob, state.params.svgd_lr, -1.0, 1.0)
            return (z, opt), None

        z0 = self._normalise(state.particles)
        (z, opt), _ = jax.lax.scan(one, (z0, state.particle_opt), None, length=self.svgd_steps)
        x = jnp.clip(low + (z + 1.0) * half, low, high)
        return state.replace(particles=x, particle_opt=opt)

    # -- records -------------------------------------------------------------------------

    def grid(self) -> np.ndarray:
        """[plot_grid^2, 2] the snapshot's grid over the goal box (2-D goals), row-major
        in (x, y) with x fastest; [0, G] for other goal sizes."""
        if self.goal_dim != 2:
            return np.zeros((0, self.goal_dim), np.float32)
        low, high = self.goal_low, self.goal_high
        axes = [
            lo + (np.arange(self.plot_grid) + 0.5) * (hi - lo) / self.plot_grid
            for lo, hi in zip(low, high)
        ]
        xs, ys = np.meshgrid(axes[0], axes[1], indexing="xy")
        return np.stack([xs.ravel(), ys.ravel()], -1).astype(np.float32)

    def predictor_accuracy(self, state: SVGGState) -> jax.Array:
        """Share of the buffered attempts D_phi classifies right (threshold 0.5)."""
        mask = jnp.arange(self.predictor_buffer) < state.attempt_count
        guess = self.predict_success(state, state.attempt_goal) > 0.5
        right = (guess == (state.attempt_success > 0.5)) & mask
        return right.sum() / jnp.maximum(mask.sum(), 1)

    def snapshot(self, state: SVGGState) -> dict:
        mask = jnp.arange(self.predictor_buffer) < state.attempt_count
        out = {
            "particles": state.particles,
            "particle_success": self.predict_success(state, state.particles),
            "particle_log_valid": self.log_valid(state, state.particles),
            "predictor_accuracy": self.predictor_accuracy(state),
            "buffer_success": (state.attempt_success * mask).sum() / jnp.maximum(mask.sum(), 1),
            "attempt_count": state.attempt_count,
            "achieved_count": state.achieved_count,
            "bandwidth": state.bandwidth,
            "threshold": state.threshold,
            "fits": state.fits,
            "episodes_seen": state.episodes_seen,
        }
        if self.goal_dim == 2:
            grid = jnp.asarray(self.grid())
            out["grid"] = grid
            out["grid_success"] = self.predict_success(state, grid)
            out["grid_log_valid"] = self.log_valid(state, grid)
        return out


def _with_base_task(hyper, task_space: Box):
    """`hyper` with its base_task filled in: the task space's default task if unset."""
    if hyper.base_task is not None:
        return hyper
    return hyper.replace(base_task=task_space.default_task)


# -- the random-valid-goal baseline ------------------------------------------------------------


@struct.dataclass
class RandomGoalParams:
    """Numeric hyperparameters (pytree leaves, vmappable)."""

    base_task: jax.Array = hparam(None, kind="floats", doc=BASE_TASK_DOC)


@struct.dataclass
class RandomGoalState:
    params: RandomGoalParams
    episodes_seen: jax.Array


@dataclass(frozen=True)
class RandomGoalTeacher:
    """Baseline: goals uniform over the env's valid goals (point_maze's
    `sample_valid_goals`, goal_maze's free cells; else the goal box), start fixed by
    `base_task`."""

    task_space: Box
    env: GoalTaskEnv | None = hparam(None, kind="any", doc=ENV_DOC)
    hyper: RandomGoalParams = nested(RandomGoalParams)

    def __post_init__(self):
        checks.check_env(self.env, self.task_space, "random_goal", **GOAL_ENV)
        hparams.validate_fields(self, "teacher")
        base = checks.base_task(self.task_space, self.hyper.base_task)
        object.__setattr__(self, "hyper", self.hyper.replace(base_task=base))
        low, high = goal_box(self.env, self.task_space)
        # Not a field: derived once, and left out of the (static) hash and equality.
        object.__setattr__(self, "_goal_box", (low, high))

    def default_params(self) -> RandomGoalParams:
        return hparams.leaves(_with_base_task(self.hyper, self.task_space))

    def init(self, key: jax.Array, params: RandomGoalParams) -> RandomGoalState:
        del key
        return RandomGoalState(params=params, episodes_seen=jnp.zeros((), jnp.int32))

    def sample(self, state: RandomGoalState, key: jax.Array, n: int):
        low, high = self._goal_box
        goals = jnp.asarray(valid_goal_sampler(self.env, low, high)(key, n), jnp.float32)
        base = jnp.broadcast_to(state.params.base_task, (n, self.task_space.dim))
        tasks = self.task_space.clip(self.env.task_with_goal(base, goals))
        return state, tasks, default_info(n)

    def update(self, state, key, tasks, feedback: Feedback, rollout, step, student=None):
        return state.replace(episodes_seen=state.episodes_seen + feedback.count.astype(jnp.int32))

    def snapshot(self, state) -> dict:
        return {"episodes_seen": state.episodes_seen}


make_svgg = class_factory(SVGGTeacher, run_env=True, name="make_svgg")
make_svgg.__doc__ = """SVGGTeacher from its keys, on the run's env (or env=..., a GoalTaskEnv);
`difficulty` names an (alpha, beta) preset of DIFFICULTIES."""
make_svgg.presets = DIFFICULTIES

TEACHERS.register("svgg")(make_svgg)
TEACHERS.register("random_goal")(class_factory(RandomGoalTeacher, run_env=True))

__all__ = [
    "DIFFICULTIES",
    "RandomGoalParams",
    "RandomGoalState",
    "RandomGoalTeacher",
    "SVGGParams",
    "SVGGState",
    "SVGGTeacher",
    "kde_log_density",
    "kde_loo_log_density",
    "log_beta_pdf",
    "make_svgg",
    "median_bandwidth",
    "ring_write",
    "svgd_direction",
    "svgd_step",
]
