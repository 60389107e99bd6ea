"""ALP-GMM (Portelas et al. 2019, teachDeepRL `alp_gmm.py`), and the machinery it shares
with Covar-GMM (`acl.teachers.covar_gmm`).

Per completed episode the teacher computes the absolute learning progress (ALP) of its task:
|return - return of the nearest earlier task| (`acl.teachers.alp`; tasks are normalised to
[0, 1]^D by the task-space bounds before distances are taken). It keeps the last `fit_rate`
(task ++ ALP) vectors, and every `fit_every` updates fits Gaussian mixtures with k in
[k_min, k_max] to them, keeping the best by AIC (or BIC, AICc). Sampling: with probability
`random_task_ratio` uniform; otherwise a Gaussian with probability proportional to its mean
ALP, a draw from it with the ALP coordinate dropped, clipped to the bounds. Until `fit_rate`
episodes have been seen (and a fit has happened) tasks are uniform, or drawn from an
expert's initial Gaussian (`initial_mean`, `initial_std`) when one is given.

Where this differs from the reference, and why:
- The mixture is fitted on tasks normalised to [0, 1]^D (the reference fits raw task
  units). This makes `reg_covar` mean the same thing in every task space; for a [0, 1]^D
  space (the toy bandit) it is the reference's computation.
- The ALP history is a ring of `history_size` points (the reference keeps all of them).
- The fit is triggered by the shared update counter: `(step + 1) % fit_every == 0`, as a
  `lax.cond` that stays a real branch under a vmap over seeds ("vmap and control
  flow"). `fit_every` defaults to `fit_rate`, which is the reference's schedule exactly when
  one episode arrives per update (the toy-bandit protocol). In the RL loop, where one update
  brings many episodes, set `fit_every` so that about `fit_rate` episodes arrive between
  fits (fit_every ~ fit_rate / episodes per update).
- A fit is kept only if new episodes arrived since the last one and it is finite, so an
  all-masked feedback batch leaves the state unchanged.
- EM stops as sklearn's does (mean log-likelihood change < `em_tol`, at most
  `em_iterations`), from k-means++ means (sklearn: Lloyd-refined k-means); all fits of a
  fit run in one loop until the last has converged; see `acl.teachers.gmm`.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.hparams import hparam, nested
from acl.core.ring import Ring, ring_init, ring_push
from acl.core.spaces import Box
from acl.core.types import Feedback, default_info
from acl.teachers import checks
from acl.teachers.alp import empirical_alp
from acl.teachers.base import TEACHERS, Teacher, UpdateContext, class_factory
from acl.teachers.gmm import CRITERIA, DEFAULT_TOL, GMM, fit_gmms, sample_gmm, select_best

DEFAULT_REG_COVAR = 1e-3
"""Default covariance floor, in normalised units (tasks in [0, 1], returns scaled to [0, 1]
when the env declares bounds). sklearn's 1e-6 lets AIC reward near-degenerate components on
the many tied ALP values (e.g. the exact zeros of unlearnable tasks) and over-select k (see
`tests/test_gmm.py::test_aic_selects_true_k`); 1e-3 is a standard deviation of ~0.03, a
few percent of each task range, well below the scale of any region worth a Gaussian."""


@struct.dataclass
class GMMTeacherParams:
    """Numeric hyperparameters (pytree leaves, vmappable): the two keys as configured on
    the teacher (`hyper`); all arrays in `default_params()`, which derives the others
    from the teacher's `return_bounds`, `initial_mean` and `initial_std`."""

    random_task_ratio: jax.Array = hparam(
        0.05, low=0.0, high=1.0, doc="Probability of a uniform task once the mixture is in use."
    )
    reg_covar: jax.Array = hparam(
        DEFAULT_REG_COVAR,
        low=0.0,
        low_open=True,
        doc="Added to every covariance diagonal in EM (normalised units).",
    )
    return_low: jax.Array = None
    """Returns are mapped to (r - return_low) / (return_high - return_low) (then clipped to
    [0, 1] if the teacher's `scale_returns`); 0 and 1 leave them raw."""
    return_high: jax.Array = None
    initial_mean: jax.Array = None
    """[D] mean of the expert's initial task distribution, task units (if `use_prior`)."""
    initial_std: jax.Array = None
    """[D] its standard deviation, task units."""
    use_prior: jax.Array = None
    """bool: the bootstrap draws from the expert Gaussian instead of uniformly. A leaf, so
    runs with and without expert knowledge share one program (acl.teachers.challenge)."""


@struct.dataclass
class ALPGMMState:
    params: GMMTeacherParams
    fit_key: jax.Array
    """Fits use fold_in(fit_key, step); never split, so a no-op update changes nothing."""
    history: Ring
    """ALP history: rows (normalised task [D], scaled return), capacity history_size."""
    fit_buffer: Ring
    """The last fit_rate (normalised task ++ ALP) vectors, [fit_rate, D + 1]."""
    gmm: GMM
    """The current best mixture over (normalised task ++ ALP), padded to k_max."""
    has_fit: jax.Array
    """bool: a mixture has been fitted."""
    episodes_seen: jax.Array
    """int32: valid feedback records so far."""
    new_since_fit: jax.Array
    """int32: valid records since the last kept fit."""


@dataclass(frozen=True)
class GMMTeacher(Teacher):
    """Shared machinery of the GMM teachers; subclasses define the fitted features."""

    takes_prior = True
    """Both bootstrap from the expert prior (`with_prior`)."""
    phased_em = False
    """Whether a fit runs EM in phases (`acl.teachers.gmm.fit_gmms`' `phased`)."""
    task_space: Box
    fit_rate: int = hparam(150, low=1, doc="Episodes in the fit window (and bootstrap length).")
    fit_every: int | None = hparam(
        None, kind="int", low=1, doc="Updates between fits (static); default fit_rate."
    )
    k_min: int = hparam(2, low=1, doc="Fewest Gaussians a fit tries.")
    k_max: int = hparam(9, low=1, doc="Most Gaussians a fit tries.")
    num_inits: int = hparam(1, low=1, doc="EM restarts per k.")
    em_iterations: int = hparam(
        100, low=1, doc="The most EM iterations per fit (sklearn's max_iter)."
    )
    em_tol: float = hparam(
        DEFAULT_TOL,
        low=0.0,
        doc="EM stops when the mean log-likelihood per point changes by less (sklearn's "
        "tol); 0 runs em_iterations every fit.",
    )
    criterion: str = hparam("aic", choices=CRITERIA, doc="Model selection.")
    scale_returns: bool = False
    """Whether returns are rescaled to [0, 1] by return_bounds (set when bounds are given)."""
    use_prior: bool = False
    """Whether the bootstrap draws from the expert Gaussian instead of uniformly."""
    return_bounds: tuple[float, float] | None = hparam(
        None,
        kind="floats",
        size=2,
        doc="(low, high): returns are rescaled to [0, 1] by them; default: the env's.",
    )
    initial_mean: tuple[float, ...] | None = hparam(
        None,
        kind="floats",
        doc="[D] mean of an expert's initial task distribution (task units); the bootstrap "
        "draws from it instead of uniformly. Needs initial_std.",
    )
    initial_std: tuple[float, ...] | None = hparam(
        None, kind="floats", low=0.0, low_open=True, doc="[D] its standard deviation."
    )
    hyper: GMMTeacherParams = nested(GMMTeacherParams)

    num_extra = 1
    """Feature coordinates after the task ones."""
    score_name = "alp"

    def __post_init__(self):
        hparams.validate_fields(self, "teacher")
        if self.fit_every is None:
            object.__setattr__(self, "fit_every", self.fit_rate)
        checks.check(
            self.k_min <= self.k_max,
            f"teacher.k_min ({self.k_min}) must be <= teacher.k_max ({self.k_max})",
        )
        if self.return_bounds is not None:
            checks.check(
                self.return_bounds[0] < self.return_bounds[1],
                f"teacher.return_bounds needs low < high, got {self.return_bounds}",
            )
        object.__setattr__(self, "scale_returns", self.return_bounds is not None)
        dim = self.task_space.dim
        if (self.initial_mean is None) != (self.initial_std is None):
            raise ConfigError("teacher.initial_mean and teacher.initial_std go together")
        if self.initial_mean is not None:
            mean = checks.per_dimension(self.initial_mean, dim, "initial_mean")
            std = checks.per_dimension(self.initial_std, dim, "initial_std")
            object.__setattr__(self, "initial_mean", mean)
            object.__setattr__(self, "initial_std", std)
        object.__setattr__(self, "use_prior", self.initial_mean is not None)

    # -- parameters and state -------------------------------------------------------------

    def default_params(self) -> GMMTeacherParams:
        lo, hi = self.return_bounds if self.return_bounds is not None else (0.0, 1.0)
        space = self.task_space
        mean = self.initial_mean if self.use_prior else space.default_task
        std = self.initial_std if self.use_prior else space.high_array - space.low_array
        f32 = jnp.float32
        return hparams.leaves(self.hyper).replace(
            return_low=jnp.asarray(lo, f32),
            return_high=jnp.asarray(hi, f32),
            initial_mean=jnp.asarray(mean, f32),
            initial_std=jnp.asarray(std, f32),
            use_prior=jnp.asarray(self.use_prior),
        )

    def with_prior(
        self, params: GMMTeacherParams, mean: jax.Array, std: jax.Array, enabled: jax.Array
    ) -> GMMTeacherParams:
        """Expert knowledge: bootstrap from N(mean, std^2) ([D] each, task units) where
        `enabled`; traced values are fine, so a vmap can mix runs with and without it."""
        return params.replace(
            initial_mean=jnp.where(enabled, jnp.asarray(mean, jnp.float32), params.initial_mean),
            initial_std=jnp.where(enabled, jnp.asarray(std, jnp.float32), params.initial_std),
            use_prior=jnp.asarray(enabled) | params.use_prior,
        )

    @property
    def num_features(self) -> int:
        return self.task_space.dim + self.num_extra

    def _init_common(self, key: jax.Array, params: GMMTeacherParams) -> dict:
        f = self.num_features
        return dict(
            params=params,
            fit_key=key,
            fit_buffer=ring_init(self.fit_rate, f),
            gmm=GMM(
                weights=jnp.zeros((self.k_max,), jnp.float32),
                means=jnp.zeros((self.k_max, f), jnp.float32),
                covariances=jnp.broadcast_to(jnp.eye(f, dtype=jnp.float32), (self.k_max, f, f)),
            ),
            has_fit=jnp.zeros((), bool),
            episodes_seen=jnp.zeros((), jnp.int32),
            new_since_fit=jnp.zeros((), jnp.int32),
        )

    # -- coordinates ----------------------------------------------------------------------

    def to_unit(self, tasks: jax.Array) -> jax.Array:
        """Task units [..., D] -> [0, 1]^D by the bounds."""
        space = self.task_space
        return (tasks - space.low_array) / (space.high_array - space.low_array)

    def from_unit(self, unit: jax.Array) -> jax.Array:
        space = self.task_space
        return space.low_array + unit * (space.high_array - space.low_array)

    def scaled_returns(self, params: GMMTeacherParams, returns: jax.Array) -> jax.Array:
        r = (returns - params.return_low) / (params.return_high - params.return_low)
        return jnp.clip(r, 0.0, 1.0) if self.scale_returns else r

    # -- hooks ----------------------------------------------------------------------------

    @abc.abstractmethod
    def features(self, state, unit_tasks, returns, mask):
        """(state, features [K, F]) of the records (masked rows are ignored later):
        (task, ALP) for ALP-GMM, (relative time, task, return) for Covar-GMM."""

    def fit_points(self, state) -> jax.Array:
        """The fit buffer as the points the mixture is fitted on, [fit_rate, F]."""
        return state.fit_buffer.data

    @abc.abstractmethod
    def component_scores(self, gmm: GMM) -> jax.Array:
        """Unnormalised probability of sampling each component, [k_max]: mean ALP for
        ALP-GMM, positive time-return covariance for Covar-GMM."""

    # -- protocol -------------------------------------------------------------------------

    def update(
        self,
        state,
        key,
        tasks,
        feedback: Feedback,
        step: jax.Array,
        context: UpdateContext = UpdateContext(),
    ):
        """Adds the valid records of `feedback` (the tasks they actually ran, [K, D]); fits
        when (step + 1) % fit_every == 0. `tasks` (the last sample) is not used; fits draw
        from the state's own `fit_key`."""
        mask = feedback.mask.astype(bool)
        unit = jnp.where(mask[:, None], self.to_unit(feedback.task), 0.0)
        returns = jnp.where(mask, self.scaled_returns(state.params, feedback.episode_return), 0.0)
        state, feats = self.features(state, unit, returns, mask)
        n_new = jnp.sum(mask).astype(jnp.int32)
        state = state.replace(
            fit_buffer=ring_push(state.fit_buffer, feats, mask),
            episodes_seen=state.episodes_seen + n_new,
            new_since_fit=state.new_since_fit + n_new,
        )
        # The predicate depends on `step` only, the same for every seed: a real branch.
        do_fit = (jnp.asarray(step) + 1) % self.fit_every == 0
        return jax.lax.cond(do_fit, self._fit, lambda s, _: s, state, step)

    def fit_key(self, state, step: jax.Array) -> jax.Array:
        """The PRNG key of the fit at update `step`."""
        return jax.random.fold_in(state.fit_key, step)

    def best_mixture(self, key, points, valid, reg_covar, k_max: int | None = None) -> GMM:
        """A fit's chosen mixture: every k in [k_min, k_max] (default: the teacher's), EM
        as configured, the lowest criterion.

        Args:
          key: PRNG key; points: [P, F]; valid: [P] bool; reg_covar: scalar.
          k_max: static; another upper end of the k range (experiments.gmm_k_range).
        Returns:
          GMM padded to k_max components.
        """
        fits = fit_gmms(
            key,
            points,
            valid,
            self.k_min,
            self.k_max if k_max is None else k_max,
            self.num_inits,
            self.em_iterations,
            reg_covar,
            self.em_tol,
            self.phased_em,
        )
        return select_best(fits, self.criterion)

    def _fit(self, state, step):
        buffer = state.fit_buffer
        gmm = self.best_mixture(
            self.fit_key(state, step), self.fit_points(state), buffer.valid, state.params.reg_covar
        )
        finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(gmm)]))
        keep = (state.new_since_fit > 0) & (buffer.count >= self.k_max) & finite
        gmm = jax.tree.map(lambda new, old: jnp.where(keep, new, old), gmm, state.gmm)
        return state.replace(
            gmm=gmm,
            has_fit=state.has_fit | keep,
            new_since_fit=jnp.where(keep, 0, state.new_since_fit),
        )

    def _probs(self, gmm: GMM) -> jax.Array:
        """Component probabilities: positive scores of active components; uniform over the
        active ones when no score is positive (the reference's `proportional_choice`)."""
        active = gmm.weights > 0
        scores = jnp.where(active, jnp.maximum(self.component_scores(gmm), 0.0), 0.0)
        scores = jnp.where(jnp.isfinite(scores), scores, 0.0)
        fallback = jnp.where(jnp.any(active), active, True).astype(jnp.float32)
        return jnp.where(jnp.sum(scores) > 0, scores, fallback)

    def sample(self, state, key: jax.Array, n: int):
        params = state.params
        space = self.task_space
        k_uniform, k_prior, k_gmm, k_coin = jax.random.split(key, 4)
        uniform = space.sample_uniform(k_uniform, n)
        z = jax.random.normal(k_prior, (n, space.dim))
        prior = space.clip(params.initial_mean + params.initial_std * z)
        bootstrap = jnp.where(params.use_prior, prior, uniform)
        draws = sample_gmm(k_gmm, state.gmm, n, component_probs=self._probs(state.gmm))
        from_gmm = space.clip(self.from_unit(draws[:, : space.dim]))
        from_gmm = jnp.where(jnp.isfinite(from_gmm), from_gmm, uniform)
        use_uniform = jax.random.uniform(k_coin, (n,)) < params.random_task_ratio
        bootstrapping = (state.episodes_seen < self.fit_rate) | ~state.has_fit
        tasks = jnp.where(use_uniform[:, None], uniform, from_gmm)
        tasks = jnp.where(bootstrapping, bootstrap, tasks)
        return state, tasks, default_info(n)

    def updates_before_adapting(self) -> int:
        """Its first fit ends the bootstrap, after `fit_every` updates."""
        return self.fit_every

    def snapshot(self, state) -> dict:
        """The mixture with task coordinates in task units (extra coordinates as fitted)."""
        gmm = state.gmm
        width = self.task_space.high_array - self.task_space.low_array
        scale = jnp.concatenate([width, jnp.ones((self.num_extra,), jnp.float32)])
        offset = jnp.concatenate([self.task_space.low_array, jnp.zeros((self.num_extra,))])
        active = gmm.weights > 0
        return {
            "weights": gmm.weights,
            "means": jnp.where(active[:, None], offset + gmm.means * scale, 0.0),
            "covariances": gmm.covariances * scale[:, None] * scale[None, :],
            self.score_name: jnp.where(active, self.component_scores(gmm), 0.0),
            "active": active,
            "has_fit": state.has_fit,
            "episodes_seen": state.episodes_seen,
        }


@dataclass(frozen=True)
class ALPGMMTeacher(GMMTeacher):
    """ALP-GMM: Gaussians over (task, ALP), sampled in proportion to their mean ALP."""

    history_size: int = hparam(
        2000, low=1, doc="Capacity of the ALP nearest-neighbour history (static)."
    )
    alp_chunk: int = hparam(
        32,
        low=1,
        doc="Feedback records per pass of the ALP's nearest-neighbour search (static); speed only.",
    )
    """Passes stop after the last valid record: an update padded to `loop.max_feedback`
    slots but holding a few dozen episodes searches the history once, not once per slot.
    Exact either way."""

    def init(self, key: jax.Array, params: GMMTeacherParams) -> ALPGMMState:
        return ALPGMMState(
            history=ring_init(self.history_size, self.task_space.dim + 1),
            **self._init_common(key, params),
        )

    def features(self, state, unit_tasks, returns, mask):
        """Task ++ ALP, the ALP from the nearest earlier task of the history."""
        alp, history = empirical_alp(state.history, unit_tasks, returns, mask, self.alp_chunk)
        return state.replace(history=history), jnp.concatenate([unit_tasks, alp[:, None]], -1)

    def component_scores(self, gmm: GMM) -> jax.Array:
        """The mean ALP of each Gaussian (the ALP coordinate of its mean)."""
        return gmm.means[:, -1]


def make_preset_factory(cls, presets: dict[str, dict], name: str):
    """A registry factory `factory(task_space, context=None, preset="teachmyagent",
    **overrides)` (`class_factory` with `presets`). Returns are rescaled by
    `return_bounds`, else by the run's (`context.return_bounds`)."""
    factory = class_factory(
        cls,
        presets=presets,
        preset="teachmyagent",
        run_fields=("return_bounds",),
        name=f"make_{name}",
    )
    factory.__doc__ = (
        f"{cls.__name__} from a named preset ({', '.join(presets)}) plus keyword overrides "
        "of its keys (docs/teachers.md); return_bounds=(lo, hi) rescales returns "
        "to [0, 1]."
    )
    return factory


ALP_GMM_PRESETS = {
    # teachDeepRL's ALPGMM defaults.
    "teachdeeprl": dict(fit_rate=250, k_min=2, k_max=10, random_task_ratio=0.2, num_inits=1),
    # TeachMyAgent's benchmark settings.
    "teachmyagent": dict(fit_rate=150, k_min=2, k_max=9, random_task_ratio=0.05, num_inits=1),
}

make_alp_gmm = TEACHERS.register("alp_gmm")(
    make_preset_factory(ALPGMMTeacher, ALP_GMM_PRESETS, "alp_gmm")
)

__all__ = [
    "ALPGMMState",
    "ALPGMMTeacher",
    "ALP_GMM_PRESETS",
    "DEFAULT_REG_COVAR",
    "GMMTeacher",
    "GMMTeacherParams",
    "make_alp_gmm",
    "make_preset_factory",
]
