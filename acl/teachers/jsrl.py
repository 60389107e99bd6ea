"""Jump-Start RL (Uchendu et al. 2023, "Jump-Start Reinforcement Learning"): a guide
policy acts for the first h steps of every episode and the learning policy after, and a
curriculum lowers h toward 0 as the learner becomes able to take over from earlier on.

The teacher (registered as `jsrl`) hands out one fixed base task (`base_task`, default
the task space's default task) with the episode's guide horizon h appended as one more
task column, [n, D + 1]: the env reads the first D (acl.teachers.base), and the student's
actor wrapper (`GuidedActor`, which `wrap_student` puts around the agent when the run is
built) reads h at each reset and lets the guide act for the episode's first h steps. The
wrapper's `update` narrows the batch's per-step `loss_mask` to the learner's own steps for
on-policy agents (PPO: the guide's actions are off-policy for it; GAE still runs through
them, and they precede the learner's steps, so its advantages do not depend on them);
agents with `off_policy = True` (DQN) learn from the guide's steps too. Evaluation resets
without tasks, so the test set is played by the learner alone, exactly as unwrapped.

Variants (`variant`):
- `curriculum` (the paper's JSRL): stages s = 0..n_stages with horizons
  h_s = round(H (n_stages - s) / n_stages), from the guide horizon H down to 0. A stage's
  evaluated return is the mean return of the last `window` episodes that ran with its h
  (episodes started under an earlier stage and finishing under this one do not count:
  the h column of `Feedback.task` tells them apart). Once the window is full and that mean
  reaches best - tolerance, the next stage starts with an empty window and
  best = max(best, mean). The first stage has no best yet: it advances as soon as its
  window is full, and its mean (the guide-led return) becomes the first best.
- `random` (the paper's random-switching variant): h uniform in {0, ..., H}, drawn per
  episode.

Guides (`guide`):
- "oracle": goal_maze's shortest-path action (`env.oracle_action`); with probability
  `guide_epsilon` a uniform random action instead. Default H: the shortest-path length
  from the base task's start to its goal, the oracle's own episode length.
- "saved": a trained agent from a run directory (`guide_run`: `agent_params.msgpack` and
  `config.yaml`, as `acl.run.experiment.run_experiment` writes them), read by the run's
  `RunContext.load_agent` (acl.build.load_run_agent_state): seed `guide_seed`'s final
  parameters, greedy unless `guide_deterministic` is false. Default H: the env's
  episode-length limit.
- any `Guide`: a jittable `act(obs [N, O], key) -> actions [N, ...]` in the agent's
  action space (then `guide_horizon` is required unless an env gives its episode-length
  limit).

Where this departs from the paper, and why:
- The paper evaluates the combined policy in separate evaluation rollouts; here the
  evaluated return is a moving window over the current stage's training episodes: no
  extra env steps, one code path for episode and batch mode, and it stays a pure
  function of the feedback. With a stochastic learner it scores the sampled policy.
- The tolerance is a fraction of the env's return range (`return_bounds`, from the run's
  context; (0, 1) without them): advance when mean >= best - tolerance * (high - low).
  Third-party ports scale it by |best| instead, which misbehaves for negative returns
  such as goal_maze's -1-per-step.
- n_stages = 10, window = 100 episodes and tolerance = 0.05 are this module's defaults;
  the paper's per-task settings were not at hand to copy.
- The horizons are rounded to whole steps, so with n_stages > H some consecutive stages
  share an h; each still needs a full window.

Stage changes depend on per-seed returns, so under a vmap over seeds they are selects
on a few scalars and a [window] array (the original design, "vmap and control flow"): nothing
expensive runs on either side.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.agents.base import Agent
from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.hparams import hparam, nested
from acl.core.ring import Ring, ring_init, ring_push
from acl.core.spaces import Box
from acl.core.types import Feedback, SampleInfo
from acl.teachers import checks
from acl.teachers.base import (
    TEACHERS,
    AgentLoader,
    RunContext,
    Teacher,
    UpdateContext,
    require_return_bounds,
    run_default,
)

VARIANTS = ("curriculum", "random")


# -- guides -------------------------------------------------------------------------------


class Guide(abc.ABC):
    """The policy that acts for the first h steps of an episode."""

    @abc.abstractmethod
    def act(self, obs: jax.Array, key: jax.Array) -> jax.Array:
        """obs [N, O] -> actions [N, ...] in the student's action space (jittable)."""


@dataclass(frozen=True, eq=False)
class OracleGuide(Guide):
    """Shortest-path actions of an env with `oracle_action(obs)` (goal_maze); with
    probability `epsilon` a uniform random action instead."""

    env: Any
    epsilon: float = 0.0
    """Static: 0 traces no noise at all."""

    def act(self, obs: jax.Array, key: jax.Array) -> jax.Array:
        """obs [N, O] -> actions [N] int32."""
        action = self.env.oracle_action(obs)
        if self.epsilon > 0:
            flip_key, action_key = jax.random.split(key)
            num_actions = int(self.env.action_space().n)
            noise = jax.random.randint(action_key, action.shape, 0, num_actions, dtype=action.dtype)
            flip = jax.random.uniform(flip_key, action.shape) < self.epsilon
            action = jnp.where(flip, noise, action)
        return action

    def episode_length(self, task) -> int:
        """Steps the noiseless oracle takes from the task's start to its goal (host side)."""
        task = jnp.asarray(task, jnp.float32)
        start, goal = self.env.valid_cell(task[:2]), self.env.valid_cell(task[2:4])
        return int(self.env.shortest_path_distance(start, goal))


@dataclass(frozen=True, eq=False)
class AgentGuide(Guide):
    """A trained feed-forward agent as a guide: `agent.act` with fixed parameters."""

    agent: Any
    agent_state: Any
    """One seed's agent state, numpy leaves (closed over as constants when traced)."""
    deterministic: bool = True

    def act(self, obs: jax.Array, key: jax.Array) -> jax.Array:
        """obs [N, O] -> the agent's actions [N, ...]."""
        state = jax.tree.map(jnp.asarray, self.agent_state)
        carry = self.agent.initial_carry(obs.shape[0])
        action, _, _ = self.agent.act(state, obs, carry, key, self.deterministic)
        return action


def load_agent_guide(
    load_agent: AgentLoader, run_dir, env, seed_index: int = 0, deterministic: bool = True
) -> AgentGuide:
    """The final agent of seed `seed_index` of a run directory, acting on `env`, the
    learner's env; `load_agent` is the run's reader of run directories
    (`RunContext.load_agent`), which refuses an agent whose parameter shapes differ from
    one built on `env`'s spaces. Recurrent agents are refused: a guide keeps no carry."""
    try:
        agent, state = load_agent(Path(run_dir), env, seed_index)
    except ConfigError as error:
        raise ConfigError(f"teacher.guide_run / teacher.guide_seed: {error}") from None
    carry = agent.initial_carry(1)
    if any(np.size(leaf) for leaf in jax.tree.leaves(carry)):
        raise ConfigError("teacher.guide_run: recurrent agents are not supported as guides")
    return AgentGuide(agent, state, bool(deterministic))


# -- the student's actor wrapper ----------------------------------------------------------


@struct.dataclass
class GuidedCarry:
    inner: Any
    """The agent's own carry."""
    steps_left: jax.Array | None
    """[N] int32 steps the guide still acts this episode; None: no horizon was handed out
    (evaluation), and the agent acts alone."""


@struct.dataclass
class GuidedExtras:
    inner: Any
    """The agent's own extras."""
    guided: jax.Array
    """[N] bool: the guide chose the executed action."""


@dataclass(frozen=True, eq=False)
class GuidedActor(Agent):
    """An agent whose first h steps of each episode are the guide's; h is the task column
    `horizon_column` it reads at reset. See the module docstring. Every declared
    capability (acl.agents.base) is the wrapped agent's."""

    agent: Agent
    guide: Guide
    horizon_column: int
    """The index of h in the task: the env's task dimension D."""
    mask_guided: bool
    """Leave the guide's steps out of the agent's loss (on-policy agents)."""

    @property
    def off_policy(self) -> bool:
        return self.agent.off_policy

    @property
    def averages_gradients(self) -> bool:
        return self.agent.averages_gradients

    @property
    def needs_bind(self) -> bool:
        return self.agent.needs_bind

    @property
    def hyper(self) -> Any:
        return self.agent.hyper

    @property
    def num_minibatches(self) -> int:
        return self.agent.num_minibatches

    def bind(self, env: Any, num_envs: int) -> None:
        self.agent.bind(env, num_envs)

    def init(self, key: jax.Array, obs_space, action_space):
        return self.agent.init(key, obs_space, action_space)

    def env_action(self, action: jax.Array) -> jax.Array:
        return self.agent.env_action(action)

    def initial_carry(self, n: int, tasks: jax.Array | None = None) -> GuidedCarry:
        inner = self.agent.initial_carry(n, tasks)
        if tasks is None or tasks.shape[-1] <= self.horizon_column:
            return GuidedCarry(inner, None)
        return GuidedCarry(inner, jnp.round(tasks[:, self.horizon_column]).astype(jnp.int32))

    def act(self, state, obs: jax.Array, carry: GuidedCarry, key: jax.Array, deterministic=False):
        """The guide's action while `carry.steps_left` > 0, else the agent's. The agent
        acts everywhere: its extras (PPO's value) feed GAE on the guide's steps too, and
        its recurrent carry keeps following the observations."""
        if carry.steps_left is None:
            action, inner, extras = self.agent.act(state, obs, carry.inner, key, deterministic)
            return action, GuidedCarry(inner, None), extras
        act_key, guide_key = jax.random.split(key)
        action, inner, extras = self.agent.act(state, obs, carry.inner, act_key, deterministic)
        guided = carry.steps_left > 0
        guide_action = self.guide.act(obs, guide_key).astype(action.dtype)
        mask = guided.reshape(guided.shape + (1,) * (action.ndim - 1))
        action = jnp.where(mask, guide_action, action)
        steps_left = jnp.maximum(carry.steps_left - 1, 0)
        return action, GuidedCarry(inner, steps_left), GuidedExtras(extras, guided)

    def update(self, state, batch, key: jax.Array, axis_name: str | None = None):
        """The agent's update on its own extras; with `mask_guided`, the guide's steps
        leave the per-step `loss_mask`."""
        extras = batch.extras
        if isinstance(extras, GuidedExtras):
            loss_mask = batch.loss_mask
            if self.mask_guided:
                loss_mask = loss_mask & ~extras.guided
            batch = batch.replace(extras=extras.inner, loss_mask=loss_mask)
        return self.agent.update(state, batch, key, axis_name)


# -- the teacher ----------------------------------------------------------------------------


@struct.dataclass
class JSRLParams:
    """Numeric hyperparameters (pytree leaves, vmappable): as configured on the teacher
    (`hyper`), as arrays in `default_params()`, where `tolerance` is in return units."""

    tolerance: jax.Array = hparam(
        0.05,
        low=0.0,
        doc="Fraction of the return range (return_bounds) the evaluated return may fall "
        "below the best for the next stage to start.",
    )
    base_task: jax.Array = hparam(
        None,
        kind="floats",
        doc="[D] the one task handed out; default: the task space's default task.",
    )


@struct.dataclass
class JSRLState:
    params: JSRLParams
    stage: jax.Array
    """int32 curriculum stage in [0, n_stages]; h = horizon(stage)."""
    best: jax.Array
    """Best evaluated (window-mean) return at a stage change; 0 until has_best."""
    has_best: jax.Array
    """bool: the first stage has ended, so `best` is set."""
    window: Ring
    """[W, 1] returns of the current stage's last episodes (emptied at a stage change)."""
    episodes_seen: jax.Array
    """int32 valid feedback records so far (all stages)."""
    last_guide_steps: jax.Array
    """Mean h of the last `sample` call."""


@dataclass(frozen=True)
class JSRLTeacher(Teacher):
    """Jump-Start RL's guide-horizon curriculum; see the module docstring."""

    task_space: Box
    """The env's task space; tasks handed out have one more column, h."""
    guide: Guide = hparam(
        "oracle",
        kind="any",
        doc='"oracle", "saved" (make_jsrl builds them; module docstring) or a Guide, with a '
        "jittable act(obs, key) (static).",
    )
    guide_horizon: int | None = hparam(
        None,
        kind="int",
        low=0,
        doc="H: the first stage's h, and the top of the random variant's range; default: "
        "the oracle's path length from the base task's start to its goal, else the env's "
        "episode-length limit.",
    )
    variant: str = hparam(
        "curriculum",
        choices=VARIANTS,
        doc="curriculum (h from H down to 0 by stages) or random (h uniform per episode).",
    )
    n_stages: int = hparam(10, low=1, doc="Stages from h = H to h = 0 (n_stages + 1 horizons).")
    window: int = hparam(100, low=1, doc="Episodes averaged into a stage's evaluated return.")
    return_bounds: tuple[float, float] | None = hparam(
        None,
        kind="floats",
        size=2,
        doc="The env's (low, high) returns, which scale tolerance; default: the run's, "
        "else (0, 1).",
    )
    hyper: JSRLParams = nested(JSRLParams)

    def __post_init__(self):
        checks.check(
            isinstance(self.guide, Guide),
            f"teacher.guide: needs a Guide, with act(obs, key), got {self.guide!r}",
        )
        hparams.validate_fields(self, "teacher")
        checks.check(
            self.guide_horizon is not None,
            "teacher.guide_horizon: needed when neither the guide nor an env gives one",
        )
        if self.return_bounds is not None:
            checks.check(
                self.return_bounds[0] < self.return_bounds[1],
                f"teacher.return_bounds needs low < high, got {self.return_bounds}",
            )
        base = checks.base_task(self.task_space, self.hyper.base_task)
        object.__setattr__(self, "hyper", self.hyper.replace(base_task=base))

    # -- parameters and state ----------------------------------------------------------

    def default_params(self) -> JSRLParams:
        lo, hi = self.return_bounds or (0.0, 1.0)
        hyper = self.hyper.replace(tolerance=self.hyper.tolerance * (hi - lo))
        if hyper.base_task is None:
            hyper = hyper.replace(base_task=self.task_space.default_task)
        return hparams.leaves(hyper)

    def init(self, key: jax.Array, params: JSRLParams) -> JSRLState:
        del key
        zero = jnp.zeros((), jnp.int32)
        return JSRLState(
            params=params,
            stage=zero,
            best=jnp.zeros((), jnp.float32),
            has_best=jnp.zeros((), bool),
            window=ring_init(self.window, 1),
            episodes_seen=zero,
            last_guide_steps=jnp.zeros((), jnp.float32),
        )

    def horizon(self, stage: jax.Array) -> jax.Array:
        """int32 h of a curriculum stage: round(H (n - stage) / n), H at 0, 0 at n."""
        n = self.n_stages
        stage = jnp.asarray(stage, jnp.int32)
        return ((self.guide_horizon * (n - stage) + n // 2) // n).astype(jnp.int32)

    # -- tasks -------------------------------------------------------------------------

    def sample(self, state: JSRLState, key: jax.Array, n: int):
        """n copies of the base task, each with its episode's h: [n, D + 1]."""
        base = jnp.broadcast_to(state.params.base_task, (n, self.task_space.dim))
        if self.variant == "random":
            h = jax.random.randint(key, (n,), 0, self.guide_horizon + 1, dtype=jnp.int32)
        else:
            h = jnp.full((n,), self.horizon(state.stage), jnp.int32)
        tasks = jnp.concatenate([base, h[:, None].astype(jnp.float32)], axis=-1)
        info = SampleInfo(train_on=jnp.ones((n,), bool))
        return state.replace(last_guide_steps=h.mean(dtype=jnp.float32)), tasks, info

    def wrap_student(self, agent: Agent) -> GuidedActor:
        """The student as the guide's `GuidedActor` (applied by acl.build)."""
        return GuidedActor(agent, self.guide, self.task_space.dim, not agent.off_policy)

    # -- update ------------------------------------------------------------------------

    def update(
        self,
        state: JSRLState,
        key,
        tasks,
        feedback: Feedback,
        step,
        context: UpdateContext = UpdateContext(),
    ) -> JSRLState:
        """Adds the returns of the current stage's finished episodes to the window; the
        curriculum then moves to the next stage if the window's mean is good enough."""
        valid = feedback.mask.astype(bool)
        episodes_seen = state.episodes_seen + valid.sum(dtype=jnp.int32)
        if self.variant == "curriculum":
            # An episode that began under an earlier stage says nothing about this one.
            h = feedback.task[:, self.task_space.dim]
            valid = valid & (h == self.horizon(state.stage).astype(h.dtype))
        state = state.replace(
            window=ring_push(state.window, feedback.episode_return[:, None], valid)
        )
        if self.variant == "curriculum":
            state = self._advance(state)
        return state.replace(episodes_seen=episodes_seen)

    def window_mean(self, state: JSRLState) -> jax.Array:
        window = state.window
        total = jnp.where(window.valid, window.data[:, 0], 0.0).sum()
        return total / jnp.maximum(window.count, 1)

    def _advance(self, state: JSRLState) -> JSRLState:
        mean = self.window_mean(state)
        window = state.window
        full = window.count >= self.window
        good = ~state.has_best | (mean >= state.best - state.params.tolerance)
        advance = full & good & (state.stage < self.n_stages)
        best = jnp.where(state.has_best, jnp.maximum(state.best, mean), mean)
        zero = jnp.zeros((), jnp.int32)
        return state.replace(
            stage=state.stage + advance.astype(jnp.int32),
            best=jnp.where(advance, best, state.best),
            has_best=state.has_best | advance,
            # The next stage starts with an empty window.
            window=window.replace(
                valid=window.valid & ~advance, head=jnp.where(advance, zero, window.head)
            ),
        )

    # -- records -------------------------------------------------------------------------

    def guide_steps(self, state: JSRLState) -> jax.Array:
        """The h the next sample hands out (curriculum), or the last sample's mean h."""
        if self.variant == "random":
            return state.last_guide_steps
        return self.horizon(state.stage).astype(jnp.float32)

    def snapshot(self, state: JSRLState) -> dict:
        return {
            "guide_steps": self.guide_steps(state),
            "stage": state.stage,
            "best_return": state.best,
            "has_best": state.has_best,
            "window_return": self.window_mean(state),
            "window_count": state.window.count,
            "episodes_seen": state.episodes_seen,
        }


@dataclass(frozen=True)
class GuideOptions:
    """The keys `make_jsrl` builds a named guide ("oracle", "saved") from."""

    guide_epsilon: float = hparam(
        0.0, low=0.0, high=1.0, doc="The oracle guide's probability of a uniform random action."
    )
    guide_run: str | None = hparam(
        None,
        kind="any",
        doc="The saved guide's run directory (agent_params.msgpack and config.yaml).",
    )
    guide_seed: int = hparam(
        0, low=0, doc="The seed of guide_run whose final agent is the saved guide."
    )
    guide_deterministic: bool = hparam(True, doc="The saved guide acts greedily.")

    def __post_init__(self):
        hparams.validate_fields(self, "teacher")


def make_jsrl(
    task_space: Box,
    context: RunContext | None = None,
    env=None,
    load_agent: AgentLoader | None = None,
    **config,
) -> JSRLTeacher:
    """JSRLTeacher with its guide built from config keys (module docstring). The env (the
    oracle guide reads it; H defaults to its limit), the reader of run directories (the
    saved guide; acl.build.load_run_agent_state outside a run) and the return bounds come
    from the run's `context` unless given."""
    args, options = hparams.split(config, JSRLTeacher, GuideOptions, field_name="teacher")
    options = GuideOptions(**options)
    env = run_default(context, "env", env)
    load_agent = run_default(context, "load_agent", load_agent)
    args["return_bounds"] = require_return_bounds(context, args.get("return_bounds"), "jsrl")
    # The guide's default horizon starts from the base task: check it before building.
    hyper = hparams.validated(args["hyper"], "teacher")
    base = checks.base_task(task_space, hyper.base_task)
    base = task_space.default_task if base is None else base
    default_horizon = None if env is None else int(env.max_episode_steps)
    guide = args.get("guide", JSRLTeacher.guide)
    if isinstance(guide, str):
        if guide == "oracle":
            checks.check(
                env is not None and env.has_oracle_action,
                "teacher.guide: the oracle guide needs an env with oracle_action "
                "(has_oracle_action: goal_maze); got "
                f"{type(env).__name__ if env is not None else 'no env'}",
            )
            guide = OracleGuide(env, options.guide_epsilon)
            default_horizon = guide.episode_length(np.asarray(base, np.float32))
        elif guide == "saved":
            checks.check(
                options.guide_run is not None, "teacher.guide_run: the saved guide needs a run dir"
            )
            checks.check(env is not None, "teacher.guide_run: the saved guide needs the env")
            checks.check(
                load_agent is not None,
                "teacher.guide_run: the saved guide needs the run's reader of run "
                "directories (RunContext.load_agent; acl.build.load_run_agent_state "
                "outside a run)",
            )
            guide = load_agent_guide(
                load_agent,
                options.guide_run,
                env,
                options.guide_seed,
                options.guide_deterministic,
            )
        else:
            raise ConfigError(
                f"teacher.guide must be oracle or saved (or a guide object), got {guide!r}"
            )
    args["guide"] = guide
    if args.get("guide_horizon") is None:
        checks.check(
            default_horizon is not None,
            "teacher.guide_horizon: needed when neither the guide nor an env gives one",
        )
        args["guide_horizon"] = default_horizon
    return JSRLTeacher(task_space=task_space, **args)


hparams.declare(make_jsrl, JSRLTeacher, GuideOptions)
TEACHERS.register("jsrl")(make_jsrl)

__all__ = [
    "AgentGuide",
    "Guide",
    "GuideOptions",
    "GuidedActor",
    "GuidedCarry",
    "GuidedExtras",
    "JSRLParams",
    "JSRLState",
    "JSRLTeacher",
    "OracleGuide",
    "load_agent_guide",
    "make_jsrl",
]
