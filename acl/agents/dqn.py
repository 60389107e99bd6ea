"""Double DQN with an episode replay buffer and hindsight relabelling (HER), as a pure agent.

Agent contract:
    bind(env, num_envs)                      (host side, once; the loop calls it)
    init(key, obs_space, action_space) -> DQNState
    act(state, obs, carry, key, deterministic=False) -> (action, carry, ())
    update(state, batch, key, axis_name=None) -> (state, metrics)   (no device axis)

It collects with the shared `acl.loop.rollout.collect`, like PPO. The replay buffer and the
per-instance staging rows of unfinished episodes live in `DQNState`, so the curriculum
loop (`acl.loop.train`) runs it unchanged and teachers choose the goals. `update` takes the
[T, N] rollout batch, appends it to the staging rows, moves finished episodes into the
buffer (`acl.agents.replay`), then does `gradient_steps` Adam steps on minibatches
sampled (and, with a `her_strategy`, relabelled) by `acl.agents.her`.

- Q-network: an MLP on the observation, which already holds the goal for a
  `GoalTaskEnv` (goal-conditioned Q(s, g, a)); one output per discrete action.
- Targets: double Q-learning (van Hasselt et al. 2016): the online net picks the next
  action, the target net values it; a time-limit truncation bootstraps, a termination
  does not. Huber loss.
- Target network: every `target_update_every` gradient steps,
  target <- tau * target + (1 - tau) * online; tau = 0 is a hard copy, tau = 0.95 HER's
  Polyak averaging.
- Exploration: epsilon-greedy, epsilon linear from `epsilon_start` to `epsilon_end` over
  `epsilon_decay_steps` env steps of this agent's own experience.

Defaults follow the HER paper's bit-flipping setup (Andrychowicz et al. 2017, appendix:
one hidden layer of 256 units; the robotics values for the rest: Adam lr 1e-3, batch
128, gamma 0.98, Polyak 0.95, target updated once per cycle of 40 optimisation steps,
buffer of 10^6 transitions, k = 4 "future" goals).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct
from gymnax.environments import spaces

from acl.agents.base import AGENTS, Agent, refuse_axis
from acl.agents.episodes import run_episodes
from acl.agents.her import STRATEGIES, HERBatch, relabel_probability, sample_her
from acl.agents.networks import MLP
from acl.agents.replay import (
    EpisodeBuffer,
    Staging,
    buffer_init,
    empty_episode,
    stage_rollout,
    staging_init,
)
from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.hparams import hparam
from acl.core.types import Transition
from envs.base import GoalTaskEnv


@struct.dataclass
class DQNHyperparams:
    """Numeric hyperparameters; pytree leaves, so a sweep is a vmap."""

    learning_rate: float = hparam(1e-3, low=0.0, low_open=True, doc="Adam step size (HER: 1e-3).")
    gamma: float = hparam(
        0.98, low=0.0, low_open=True, high=1.0, doc="Discount factor (HER: 0.98)."
    )
    tau: float = hparam(
        0.95,
        low=0.0,
        high=1.0,
        doc="Share of the old target kept at each target update (HER's Polyak 0.95; 0: hard copy).",
    )
    epsilon_start: float = hparam(
        1.0, low=0.0, high=1.0, doc="Exploration rate at the first env step."
    )
    epsilon_end: float = hparam(
        0.05, low=0.0, high=1.0, doc="Exploration rate after epsilon_decay_steps env steps."
    )
    epsilon_decay_steps: float = hparam(
        10_000.0,
        low=0.0,
        doc="Env steps (of this agent, all instances) over which epsilon decays linearly.",
    )
    her_k: float = hparam(
        4.0,
        low=0.0,
        doc="HER relabels a sampled transition with probability k / (k + 1) (HER: k = 4).",
    )
    huber_delta: float = hparam(
        1.0, low=0.0, low_open=True, doc="Huber loss threshold on the TD error."
    )
    max_grad_norm: float = hparam(10.0, low=0.0, low_open=True, doc="Global gradient-norm clip.")


@dataclass(frozen=True)
class DQNConfig:
    """Shape-setting and structural options (static)."""

    hidden_sizes: tuple[int, ...] = hparam(
        (256,),
        low=1,
        min_size=1,
        doc="Hidden layer widths of the Q-network (HER bit flipping: one layer of 256).",
    )
    activation: str = hparam("relu", choices=("relu", "tanh"), doc="Hidden activation.")
    batch_size: int = hparam(128, low=1, doc="Transitions per gradient step (HER: 128).")
    gradient_steps: int = hparam(
        40,
        low=1,
        doc="Gradient steps per update call, i.e. per [T, N] rollout (HER: 40 per cycle).",
    )
    target_update_every: int = hparam(
        40, low=1, doc="Gradient steps between target-network updates."
    )
    buffer_capacity: int = hparam(
        10_000, low=1, doc="Episodes the replay buffer holds (a ring; the oldest is overwritten)."
    )
    learning_starts: int = hparam(
        1, low=0, doc="Episodes in the buffer before gradient steps begin."
    )
    her_strategy: str = hparam(
        "future", choices=STRATEGIES, doc="Goal relabelling (none: plain DQN)."
    )
    double_q: bool = hparam(True, doc="Double Q-learning targets (else the target net's max).")


@struct.dataclass
class DQNState:
    params: Any
    target_params: Any
    opt_state: optax.OptState
    buffer: EpisodeBuffer
    staging: Staging
    env_steps: jax.Array
    """Env steps this agent has collected (drives epsilon), int32."""
    grad_steps: jax.Array
    """Gradient steps done (drives target updates), int32."""
    hyper: DQNHyperparams


_adam = optax.scale_by_adam()


class DQN(Agent):
    """Double DQN (+HER) over a discrete action space."""

    off_policy = True
    """Q-learning learns from steps another policy chose (a JSRL guide's) as well."""
    needs_bind = True
    """`bind` sizes the staging rows (one per instance) and gives HER the env."""

    def __init__(self, config: DQNConfig = DQNConfig(), hyper: DQNHyperparams = DQNHyperparams()):
        self.config = hparams.validated(config, "agent")
        self.hyper = hparams.validated(hyper, "agent")
        self.env = None
        self.num_envs: int | None = None
        self.network: MLP | None = None

    # -- set-up (host side) --------------------------------------------------------------

    def bind(self, env, num_envs: int) -> None:
        """Tell the agent the env (HER reads its goal functions; its episode length sizes
        the buffer rows) and how many instances step together (the staging rows)."""
        c = self.config
        if c.her_strategy != "none" and not isinstance(env, GoalTaskEnv):
            raise ConfigError(
                f"agent.her_strategy={c.her_strategy!r} needs a goal env (GoalTaskEnv); "
                f"'{env.name or type(env).__name__}' is not one. "
                "Use her_strategy: none"
            )
        if num_envs > c.buffer_capacity:
            raise ConfigError(
                f"agent.buffer_capacity ({c.buffer_capacity}) must be >= loop.num_envs ({num_envs})"
            )
        self.env = env
        self.num_envs = int(num_envs)
        self.t_max = int(env.max_episode_steps)

    def init(self, key: jax.Array, obs_space, action_space) -> DQNState:
        if self.env is None:
            raise ValueError("DQN.init: call agent.bind(env, num_envs) first")
        if not isinstance(action_space, spaces.Discrete):
            raise ConfigError(
                f"agent dqn needs a discrete action space, got {type(action_space).__name__}"
            )
        self.num_actions = int(action_space.n)
        self.network = MLP(self.config.hidden_sizes, self.num_actions, 1.0, self.config.activation)
        obs_shape = tuple(obs_space.shape)
        params = self.network.init(key, jnp.zeros(obs_shape))
        episode = empty_episode(self.t_max, obs_shape, jnp.float32, (), jnp.int32)
        return DQNState(
            params=params,
            target_params=params,
            opt_state=_adam.init(params),
            buffer=buffer_init(episode, self.config.buffer_capacity),
            staging=staging_init(self.num_envs, episode),
            env_steps=jnp.zeros((), jnp.int32),
            grad_steps=jnp.zeros((), jnp.int32),
            hyper=self.hyper,
        )

    def initial_carry(self, n: int, tasks: jax.Array | None = None) -> jax.Array:
        """Feed-forward: no recurrent state (`tasks`, the episodes' tasks, unused)."""
        return jnp.zeros((n, 0))

    def env_action(self, action: jax.Array) -> jax.Array:
        return action

    # -- acting --------------------------------------------------------------------------

    def q_values(self, params, obs: jax.Array) -> jax.Array:
        """obs [..., O] -> Q [..., A]."""
        return self.network.apply(params, obs)

    def epsilon(self, state: DQNState) -> jax.Array:
        h = state.hyper
        frac = jnp.clip(state.env_steps / jnp.maximum(h.epsilon_decay_steps, 1.0), 0.0, 1.0)
        return h.epsilon_start + frac * (h.epsilon_end - h.epsilon_start)

    def act(self, state: DQNState, obs: jax.Array, carry, key: jax.Array, deterministic=False):
        """obs [N, O] -> epsilon-greedy (or greedy) actions [N], carry, no extras."""
        greedy = jnp.argmax(self.q_values(state.params, obs), axis=-1).astype(jnp.int32)
        if deterministic:
            return greedy, carry, ()
        coin_key, action_key = jax.random.split(key)
        n = obs.shape[0]
        explore = jax.random.uniform(coin_key, (n,)) < self.epsilon(state)
        random_action = jax.random.randint(action_key, (n,), 0, self.num_actions)
        return jnp.where(explore, random_action, greedy), carry, ()

    # -- learning ------------------------------------------------------------------------

    def _loss(self, params, target_params, mb: HERBatch, h: DQNHyperparams):
        q = self.q_values(params, mb.obs)
        q_taken = jnp.take_along_axis(q, mb.action[:, None].astype(jnp.int32), axis=-1)[:, 0]
        next_target = self.q_values(target_params, mb.next_obs)
        if self.config.double_q:
            next_action = jnp.argmax(self.q_values(params, mb.next_obs), axis=-1)
            next_value = jnp.take_along_axis(next_target, next_action[:, None], axis=-1)[:, 0]
        else:
            next_value = next_target.max(axis=-1)
        not_terminated = 1.0 - mb.terminated.astype(jnp.float32)
        target = jax.lax.stop_gradient(mb.reward + h.gamma * not_terminated * next_value)
        td = q_taken - target
        loss = optax.huber_loss(q_taken, target, delta=h.huber_delta).mean()
        return loss, {"loss": loss, "q_mean": q_taken.mean(), "td_abs": jnp.abs(td).mean()}

    def sample_batch(self, state: DQNState, buffer: EpisodeBuffer, key: jax.Array) -> HERBatch:
        return sample_her(
            self.env,
            buffer,
            key,
            self.config.batch_size,
            self.config.her_strategy,
            relabel_probability(state.hyper.her_k),
        )

    def update(
        self, state: DQNState, batch: Transition, key: jax.Array, axis_name: str | None = None
    ):
        """Store a [T, N] rollout, then `gradient_steps` steps. Returns (state, scalar metrics).
        No device axis (`averages_gradients` is False)."""
        refuse_axis(self, axis_name)
        c, h = self.config, state.hyper
        staging, buffer = stage_rollout(state.staging, state.buffer, batch)
        steps_collected = batch.reward.shape[0] * batch.reward.shape[1]
        ready = buffer.count >= c.learning_starts

        def grad_step(carry, step_key):
            params, target_params, opt_state, grad_steps = carry
            mb = self.sample_batch(state, buffer, step_key)
            grads, metrics = jax.grad(self._loss, has_aux=True)(params, target_params, mb, h)
            grad_norm = optax.tree.norm(grads)
            scale = jnp.minimum(1.0, h.max_grad_norm / (grad_norm + 1e-6))
            grads = jax.tree.map(lambda g: g * scale, grads)
            updates, new_opt_state = _adam.update(grads, opt_state, params)
            new_params = jax.tree.map(lambda p, u: p - h.learning_rate * u, params, updates)
            # Before `learning_starts` the step is computed and discarded: a select, not a
            # cond, since under a vmap over seeds a cond would run both sides anyway.
            params, opt_state = jax.tree.map(
                lambda new, old: jnp.where(ready, new, old),
                (new_params, new_opt_state),
                (params, opt_state),
            )
            grad_steps = grad_steps + ready.astype(jnp.int32)
            due = ready & (grad_steps % c.target_update_every == 0)
            target_params = jax.tree.map(
                lambda t, p: jnp.where(due, h.tau * t + (1.0 - h.tau) * p, t),
                target_params,
                params,
            )
            metrics = {
                **metrics,
                "grad_norm": grad_norm,
                "relabelled": mb.relabelled.mean(),
                "batch_reward": mb.reward.mean(),
            }
            return (params, target_params, opt_state, grad_steps), metrics

        (params, target_params, opt_state, grad_steps), metrics = jax.lax.scan(
            grad_step,
            (state.params, state.target_params, state.opt_state, state.grad_steps),
            jax.random.split(key, c.gradient_steps),
        )
        new_state = state.replace(
            params=params,
            target_params=target_params,
            opt_state=opt_state,
            buffer=buffer,
            staging=staging,
            env_steps=state.env_steps + steps_collected,
            grad_steps=grad_steps,
        )
        metrics = jax.tree.map(jnp.mean, metrics)
        metrics["epsilon"] = self.epsilon(new_state)
        metrics["buffer_episodes"] = buffer.count.astype(jnp.float32)
        return new_state, metrics


def greedy_success_rate(
    env, agent: DQN, state: DQNState, tasks: jax.Array, key: jax.Array
) -> jax.Array:
    """Share of greedy episodes, one per task [K, D], that the env counts as successful."""
    returns = run_episodes(env, agent, state, tasks, key, deterministic=True)
    return env.is_success(returns).mean()


def make_dqn(**kwargs) -> DQN:
    """Build DQN from flat config keys: DQNConfig fields and DQNHyperparams fields.

    `total_updates`, which the loop passes to every agent, is not used."""
    kwargs.pop("total_updates", None)
    config, hyper = hparams.split(kwargs, DQNConfig, DQNHyperparams, field_name="agent")
    return DQN(DQNConfig(**config), DQNHyperparams(**hyper))


AGENTS.register("dqn")(hparams.declare(make_dqn, DQNConfig, DQNHyperparams))
