"""Proximal policy optimisation (Schulman et al. 2017), PureJaxRL-style, as a pure agent.

Agent contract (DESIGN.md contract 3):
    init(key, obs_space, action_space) -> PPOState
    act(state, obs, carry, key, deterministic) -> (action, carry, PPOExtras)
    update(state, batch, key) -> (state, metrics)
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from gymnax.environments import spaces

from acl.agents.base import AGENTS
from acl.agents.common import RunningMeanStd, Transition, gae, minibatch_epochs
from acl.agents.networks import (
    ActorCritic,
    categorical_entropy,
    categorical_log_prob,
    gaussian_entropy,
    gaussian_log_prob,
)


@struct.dataclass
class PPOHyperparams:
    """Numeric hyperparameters; pytree leaves, so a sweep is a vmap."""

    learning_rate: float = 2.5e-4
    """Adam step size at the start (annealed linearly to 0 if `anneal_lr`)."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_eps: float = 0.2
    """Policy ratio clip range."""
    value_clip_eps: float = 0.2
    """Value clip range around the old value prediction (<= 0 disables it)."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient."""
    vf_coef: float = 0.5
    """Value loss coefficient."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this before GAE (keeps value targets near unit scale)."""


@dataclass(frozen=True)
class PPOConfig:
    """Shape-setting and structural options (static)."""

    hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the hidden layers of both actor and critic."""
    activation: str = "tanh"
    """Hidden activation: tanh or relu."""
    update_epochs: int = 4
    """Passes over each rollout batch."""
    num_minibatches: int = 4
    """Minibatches per epoch."""
    anneal_lr: bool = True
    """Anneal the learning rate linearly to 0 over `total_updates`."""
    normalize_obs: bool = False
    """Normalise observations by running mean and variance."""
    normalize_advantages: bool = True
    """Standardise advantages within each minibatch."""
    total_updates: int = 1
    """Number of update calls the annealing schedule spans (set by the loop)."""


@struct.dataclass
class PPOExtras:
    """What `act` returns beside the action; stored in the rollout batch."""

    log_prob: jax.Array
    value: jax.Array


@struct.dataclass
class PPOState:
    params: dict
    opt_state: optax.OptState
    obs_norm: RunningMeanStd
    update_count: jax.Array
    hyper: PPOHyperparams


_adam = optax.scale_by_adam(eps=1e-5)


class PPO:
    """PPO with discrete (categorical) or continuous (diagonal Gaussian) actions."""

    def __init__(self, config: PPOConfig = PPOConfig(), hyper: PPOHyperparams = PPOHyperparams()):
        self.config = config
        self.hyper = hyper
        self.network: ActorCritic | None = None
        self.discrete: bool | None = None
        self.action_low = self.action_high = None

    def _build(self, obs_space: spaces.Box, action_space) -> None:
        self.discrete = isinstance(action_space, spaces.Discrete)
        action_dim = action_space.n if self.discrete else int(action_space.shape[0])
        if not self.discrete:
            # numpy, not jax: closed-over jax arrays become hidden arguments of AOT calls
            self.action_low = np.asarray(action_space.low, np.float32)
            self.action_high = np.asarray(action_space.high, np.float32)
        self.network = ActorCritic(
            action_dim, self.discrete, self.config.hidden_sizes, self.config.activation
        )
        self.obs_shape = tuple(obs_space.shape)

    def init(self, key: jax.Array, obs_space, action_space) -> PPOState:
        if self.network is None:
            self._build(obs_space, action_space)
        params = self.network.init(key, jnp.zeros(self.obs_shape))
        return PPOState(
            params=params,
            opt_state=_adam.init(params),
            obs_norm=RunningMeanStd.create(self.obs_shape),
            update_count=jnp.zeros((), jnp.int32),
            hyper=self.hyper,
        )

    def initial_carry(self, n: int) -> jax.Array:
        """Feed-forward: no recurrent state."""
        return jnp.zeros((n, 0))

    def _forward(self, params, obs_norm: RunningMeanStd, obs: jax.Array):
        if self.config.normalize_obs:
            obs = obs_norm.normalize(obs)
        return self.network.apply(params, obs)

    def env_action(self, action: jax.Array) -> jax.Array:
        """The action the env receives: Gaussian samples are clipped to its bounds."""
        if self.discrete:
            return action
        return jnp.clip(action, self.action_low, self.action_high)

    def act(self, state: PPOState, obs: jax.Array, carry, key: jax.Array, deterministic=False):
        """obs [N, *obs_shape] -> action [N] or [N, A], carry, PPOExtras [N]."""
        out, value, log_std = self._forward(state.params, state.obs_norm, obs)
        if self.discrete:
            action = jnp.argmax(out, -1) if deterministic else jax.random.categorical(key, out)
            log_prob = categorical_log_prob(out, action)
        else:
            noise = jax.random.normal(key, out.shape)
            action = out if deterministic else out + jnp.exp(log_std) * noise
            log_prob = gaussian_log_prob(out, log_std, action)
        return action, carry, PPOExtras(log_prob=log_prob, value=value)

    def value(self, state: PPOState, obs: jax.Array) -> jax.Array:
        return self._forward(state.params, state.obs_norm, obs)[1]

    def _loss(self, params, state: PPOState, mb):
        h = state.hyper
        out, value, log_std = self._forward(params, state.obs_norm, mb["obs"])
        if self.discrete:
            log_prob = categorical_log_prob(out, mb["action"])
            entropy = categorical_entropy(out)
        else:
            log_prob = gaussian_log_prob(out, log_std, mb["action"])
            entropy = gaussian_entropy(log_std)
        weight = mb["loss_mask"]
        denom = jnp.maximum(weight.sum(), 1.0)

        adv = mb["advantage"]
        if self.config.normalize_advantages:
            mean = (adv * weight).sum() / denom
            std = jnp.sqrt(((adv - mean) ** 2 * weight).sum() / denom)
            adv = (adv - mean) / (std + 1e-8)
        ratio = jnp.exp(log_prob - mb["old_log_prob"])
        surrogate = jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - h.clip_eps, 1 + h.clip_eps) * adv)
        policy_loss = -(surrogate * weight).sum() / denom

        value_err = (value - mb["target"]) ** 2
        clipped = mb["old_value"] + jnp.clip(
            value - mb["old_value"], -h.value_clip_eps, h.value_clip_eps
        )
        value_err = jnp.where(
            h.value_clip_eps > 0, jnp.maximum(value_err, (clipped - mb["target"]) ** 2), value_err
        )
        value_loss = 0.5 * (value_err * weight).sum() / denom
        entropy_mean = (entropy * weight).sum() / denom
        total = policy_loss + h.vf_coef * value_loss - h.ent_coef * entropy_mean
        approx_kl = (((ratio - 1) - jnp.log(ratio)) * weight).sum() / denom
        clip_frac = ((jnp.abs(ratio - 1) > h.clip_eps) * weight).sum() / denom
        return total, {
            "loss": total,
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy_mean,
            "approx_kl": approx_kl,
            "clip_frac": clip_frac,
        }

    def update(self, state: PPOState, batch: Transition, key: jax.Array):
        """One PPO update on a [T, N] rollout. Returns (state, metrics of scalars)."""
        h = state.hyper
        loss_mask = batch.loss_mask.astype(jnp.float32)
        if batch.guided is not None:
            # A guide's actions are off-policy for PPO (JSRL): out of the loss. GAE still
            # runs through them; they precede the agent's steps in an episode, so the
            # agent's advantages do not depend on them.
            loss_mask = loss_mask * (1.0 - batch.guided.astype(jnp.float32))
        next_values = self.value(state, batch.next_obs)
        advantages, targets = gae(
            batch.reward * h.reward_scale,
            batch.extras.value,
            next_values,
            batch.terminated,
            batch.done,
            h.gamma,
            h.gae_lambda,
        )
        flat = jax.tree.map(
            lambda x: x.reshape((-1,) + x.shape[2:]),
            {
                "obs": batch.obs,
                "action": batch.action,
                "loss_mask": loss_mask,
                "advantage": advantages,
                "target": targets,
                "old_log_prob": batch.extras.log_prob,
                "old_value": batch.extras.value,
            },
        )
        if self.config.anneal_lr:
            frac = 1.0 - state.update_count / self.config.total_updates
            lr = h.learning_rate * jnp.clip(frac, 0.0, 1.0)
        else:
            lr = h.learning_rate

        def sgd_step(carry, mb):
            params, opt_state = carry
            grads, metrics = jax.grad(self._loss, has_aux=True)(params, state, mb)
            grad_norm = optax.tree.norm(grads)
            scale = jnp.minimum(1.0, h.max_grad_norm / (grad_norm + 1e-6))
            grads = jax.tree.map(lambda g: g * scale, grads)
            updates, opt_state = _adam.update(grads, opt_state, params)
            params = jax.tree.map(lambda p, u: p - lr * u, params, updates)
            return (params, opt_state), {**metrics, "grad_norm": grad_norm}

        (params, opt_state), metrics = minibatch_epochs(
            key,
            (state.params, state.opt_state),
            flat,
            self.config.update_epochs,
            self.config.num_minibatches,
            sgd_step,
        )
        obs_norm = state.obs_norm
        if self.config.normalize_obs:
            obs_norm = obs_norm.update(flat["obs"])
        new_state = state.replace(
            params=params,
            opt_state=opt_state,
            obs_norm=obs_norm,
            update_count=state.update_count + 1,
        )
        metrics = jax.tree.map(jnp.mean, metrics)
        metrics["learning_rate"] = jnp.asarray(lr, jnp.float32)
        return new_state, metrics


def make_ppo(**kwargs) -> PPO:
    """Build PPO from flat config keys: PPOConfig fields and PPOHyperparams fields."""
    config_fields = set(PPOConfig.__dataclass_fields__)
    hyper_fields = set(PPOHyperparams.__dataclass_fields__)
    config = {k: v for k, v in kwargs.items() if k in config_fields}
    hyper = {k: float(v) for k, v in kwargs.items() if k in hyper_fields}
    if "hidden_sizes" in config:
        config["hidden_sizes"] = tuple(int(s) for s in config["hidden_sizes"])
    return PPO(PPOConfig(**config), PPOHyperparams(**hyper))


make_ppo.config_keys = frozenset(PPOConfig.__dataclass_fields__) | frozenset(
    PPOHyperparams.__dataclass_fields__
)
AGENTS.register("ppo")(make_ppo)
