"""The SVGG teacher: goal particles moved by SVGD towards the goals of intermediate
predicted success that the agent can reach (the package docstring has the method, its
sources and where it departs from them). Its state holds the particles, D_phi, the
validity model's fit and two rings of records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.core import hparams
from acl.core.hparams import hparam, nested
from acl.core.ring import Ring, ring_init, ring_push
from acl.core.spaces import Box
from acl.core.types import Feedback, default_info
from acl.teachers import checks
from acl.teachers.base import TEACHERS, Teacher, UpdateContext, class_factory
from acl.teachers.svgg import goals, validity
from acl.teachers.svgg.goals import BASE_TASK_DOC, ENV_DOC, GOAL_ENV
from acl.teachers.svgg.particles import adam, svgd_in_box, to_unit_box
from acl.teachers.svgg.predictor import SuccessPredictor, log_beta_pdf, train_predictor
from envs.base import GoalTaskEnv

DIFFICULTIES: dict[str, tuple[float, float]] = {
    "very_easy": (5.0, 1.0),
    "easy": (3.0, 1.5),
    "medium": (2.0, 2.0),
    "hard": (1.5, 3.0),
    "very_hard": (1.0, 5.0),
}
"""(alpha, beta) of the Beta over predicted success, as the authors' published commands
set them (`--alpha_beta`): "medium" (2, 2), the default, peaks at D = 0.5."""


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
    attempts: Ring
    """[Cs, G + 1] the attempted goals, each with its success (1.0 or 0.0) last."""
    visited: Ring
    """[Cv, G] visited (achieved) goals, the validity model's data."""
    bandwidth: jax.Array
    """Validity KDE bandwidth h."""
    threshold: jax.Array
    """Validity support threshold tau (log density)."""
    fits: jax.Array
    """int32: predictor / SVGD rounds done."""
    episodes_seen: jax.Array
    """int32: valid feedback records so far."""


# -- the teacher -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SVGGTeacher(Teacher):
    """Stein Variational Goal Generation; see the package docstring (acl.teachers.svgg)."""

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
        low, high = goals.goal_box(self.env, self.task_space)
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

    def success_logit(self, predictor, goals: jax.Array) -> jax.Array:
        """Logit of D_phi at goals [..., G] -> [...]; its input is the goal box rescaled
        to [-1, 1]^G."""
        low, high = jnp.asarray(self.goal_low), jnp.asarray(self.goal_high)
        return self.network.apply(predictor, to_unit_box(goals, low, high))

    def predict_success(self, state: SVGGState, goals: jax.Array) -> jax.Array:
        """D_phi(g) in (0, 1) at goals [..., G] -> [...]."""
        return jax.nn.sigmoid(self.success_logit(state.predictor, goals))

    def log_valid(self, state: SVGGState, goals: jax.Array) -> jax.Array:
        """log p_valid(g) at goals [..., G] -> [...] (0 before any visited goal)."""
        return validity.log_valid(goals, state.visited, state.bandwidth, state.threshold)

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
        return hparams.leaves(checks.with_base_task(self.hyper, self.task_space))

    def init(self, key: jax.Array, params: SVGGParams) -> SVGGState:
        state_key, reset_key, noise_key, net_key = jax.random.split(key, 4)
        low, high = jnp.asarray(self.goal_low), jnp.asarray(self.goal_high)
        g = self.goal_dim
        centre = goals.start_goal(self.env, reset_key, params.base_task)
        noise = jax.random.normal(noise_key, (self.num_particles, g))
        particles = jnp.clip(centre + self.init_std * (high - low) * noise, low, high)
        predictor = self.network.init(net_key, jnp.zeros((1, g), jnp.float32))
        return SVGGState(
            params=params,
            key=state_key,
            particles=particles,
            particle_opt=adam.init(particles),
            predictor=predictor,
            predictor_opt=adam.init(predictor),
            attempts=ring_init(self.predictor_buffer, g + 1),
            visited=ring_init(self.validity_buffer, g),
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
        chosen = state.particles[jax.random.randint(pick_key, (n,), 0, self.num_particles)]
        sampler = goals.valid_goal_sampler(self.env, self.goal_low, self.goal_high)
        random_goals = jnp.asarray(sampler(random_key, n), jnp.float32)
        mix = jax.random.uniform(mix_key, (n,)) < state.params.random_goal_ratio
        chosen = jnp.where(mix[:, None], random_goals, chosen)
        base = jnp.broadcast_to(state.params.base_task, (n, self.task_space.dim))
        tasks = self.task_space.clip(self.env.task_with_goal(base, chosen))
        return state, tasks, default_info(n)

    # -- update --------------------------------------------------------------------------

    def update(
        self,
        state: SVGGState,
        key,
        tasks,
        feedback: Feedback,
        step: jax.Array,
        context: UpdateContext = UpdateContext(),
    ) -> SVGGState:
        """Buffers take the valid records; every `update_every` updates the validity
        model is refitted, D_phi trained and the particles moved (`fit`)."""
        record_key = jax.random.fold_in(jax.random.fold_in(state.key, 1), step)
        state = self.record(state, feedback, context.rollout, record_key)
        # The predicate depends on `step` only, the same for every seed: a real branch.
        due = jnp.asarray(step) % self.update_every == 0
        return jax.lax.cond(due, self.fit, lambda s, _: s, state, step)

    def record(
        self, state: SVGGState, feedback: Feedback, rollout=None, key: jax.Array | None = None
    ) -> SVGGState:
        """The valid records join the rings: (used goal, success) for D_phi
        (`goals.used_goals`), a uniform subsample of the rollout's visited goals (without
        a rollout: the goals of the successful episodes) for p_valid. `key` draws the
        subsample; default: from the state's key and the episodes seen so far."""
        mask = feedback.mask.astype(bool)
        used = goals.used_goals(self.env, feedback.task, self.task_space.dim)
        success = feedback.success.astype(bool) & mask
        attempt = jnp.concatenate([used, success.astype(jnp.float32)[:, None]], axis=-1)
        if rollout is None:
            # No visited states: a successful episode reached its goal.
            reached, reached_mask = used, success
        else:
            if key is None:
                key = jax.random.fold_in(jax.random.fold_in(state.key, 1), state.episodes_seen)
            reached, reached_mask = goals.visited_goals(
                self.env, rollout, key, self.validity_per_update
            )
        return state.replace(
            attempts=ring_push(state.attempts, attempt, mask),
            visited=ring_push(state.visited, reached, reached_mask),
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
        """Bandwidth and support threshold of p_valid from the visited-goal ring."""
        p = state.params
        min_std = 1e-3 * float(np.max(self.goal_high - self.goal_low))
        bandwidth, threshold = validity.fit_validity(
            state.visited.data, state.visited.valid, p.validity_quantile, p.bandwidth_scale, min_std
        )
        return state.replace(bandwidth=bandwidth, threshold=threshold)

    def train_predictor(self, state: SVGGState, key: jax.Array) -> SVGGState:
        """`predictor_steps` Adam steps of BCE on minibatches from the attempt ring."""
        attempts = state.attempts
        predictor, opt = train_predictor(
            self.success_logit,
            state.predictor,
            state.predictor_opt,
            attempts.data[:, : self.goal_dim],
            attempts.data[:, self.goal_dim],
            attempts.count,
            key,
            self.predictor_steps,
            self.predictor_batch,
            state.params.predictor_lr,
        )
        return state.replace(predictor=predictor, predictor_opt=opt)

    def move_particles(self, state: SVGGState) -> SVGGState:
        """`svgd_steps` SVGD steps towards log p_goals in the goal box rescaled to
        [-1, 1]^G."""
        low, high = jnp.asarray(self.goal_low), jnp.asarray(self.goal_high)
        particles, opt = svgd_in_box(
            state.particles,
            state.particle_opt,
            lambda x: self.log_target(state, x),
            state.params.svgd_lr,
            low,
            high,
            self.svgd_steps,
        )
        return state.replace(particles=particles, particle_opt=opt)

    # -- records -------------------------------------------------------------------------

    def grid(self) -> np.ndarray:
        """[plot_grid^2, 2] the snapshot's grid over the goal box (2-D goals), row-major
        in (x, y) with x fastest; [0, G] for other goal sizes."""
        if self.goal_dim != 2:
            return np.zeros((0, self.goal_dim), np.float32)
        return goals.box_grid(self.goal_low, self.goal_high, self.plot_grid)

    def predictor_accuracy(self, state: SVGGState) -> jax.Array:
        """Share of the buffered attempts D_phi classifies right (threshold 0.5)."""
        attempts = state.attempts
        guess = self.predict_success(state, attempts.data[:, : self.goal_dim]) > 0.5
        right = (guess == (attempts.data[:, self.goal_dim] > 0.5)) & attempts.valid
        return right.sum() / jnp.maximum(attempts.valid.sum(), 1)

    def snapshot(self, state: SVGGState) -> dict:
        attempts = state.attempts
        success, filled = attempts.data[:, self.goal_dim], attempts.valid
        out = {
            "particles": state.particles,
            "particle_success": self.predict_success(state, state.particles),
            "particle_log_valid": self.log_valid(state, state.particles),
            "predictor_accuracy": self.predictor_accuracy(state),
            "buffer_success": (success * filled).sum() / jnp.maximum(filled.sum(), 1),
            "attempt_count": attempts.count,
            "achieved_count": state.visited.count,
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


make_svgg = class_factory(SVGGTeacher, run_env=True, name="make_svgg")
make_svgg.__doc__ = """SVGGTeacher from its keys, on the run's env (or env=..., a GoalTaskEnv);
`difficulty` names an (alpha, beta) preset of DIFFICULTIES."""
make_svgg.presets = DIFFICULTIES

TEACHERS.register("svgg")(make_svgg)

__all__ = ["DIFFICULTIES", "SVGGParams", "SVGGState", "SVGGTeacher", "make_svgg"]
