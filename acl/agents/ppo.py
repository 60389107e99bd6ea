"""Proximal policy optimisation (Schulman et al. 2017), PureJaxRL-style, as a pure agent.

Agent contract (acl.agents.base.Agent):
    init(key, obs_space, action_space) -> PPOState
    initial_carry(n, tasks) -> [n, 0], no recurrent state
    act(state, obs, carry, key, deterministic) -> (action, carry, PPOExtras)
    update(state, batch, key, axis_name=None) -> (state, metrics)   (averages_gradients)

The pieces every PPO learner shares (recurrent PPO, acl.agents.recurrent_ppo, too) are
module functions here: `ActionDistribution` (categorical or diagonal Gaussian),
`ppo_loss_mask`, `ppo_loss_terms` (the clipped objective), `annealed_learning_rate` and
`ppo_epochs` (clipped Adam steps over shuffled minibatches).

A batch in which no step may be learnt from (every `loss_mask` 0, as robust PLR hands
out for new levels) leaves params and the optimiser state exactly as they were: Adam
would otherwise keep moving the params on its momentum with zero gradients. Nor does it
advance `update_count`, the annealing schedule's clock: as in JaxUED, where the schedule
is optax's count of applied gradient steps, robust PLR and ACCEL anneal over the updates
that learnt, and their learning rate has not reached 0 when the run ends.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from gymnax.environments import spaces

from acl.agents.base import AGENTS, Agent
from acl.agents.common import RunningMeanStd, gae, minibatch_epochs, value_spec
from acl.agents.networks import (
    ACTIVATIONS,
    ActorCritic,
    categorical_entropy,
    categorical_log_prob,
    gaussian_entropy,
    gaussian_log_prob,
)
from acl.core import hparams
from acl.core.hparams import hparam
from acl.core.types import Transition, ValueEstimates, ValueSpec


@struct.dataclass
class PPOHyperparams:
    """Numeric hyperparameters; pytree leaves, so a sweep is a vmap."""

    learning_rate: float = hparam(
        2.5e-4,
        low=0.0,
        low_open=True,
        doc="Adam step size at the start (annealed linearly to 0 if anneal_lr).",
    )
    # Open at 0: gamma = 0 ignores every later reward, lambda = 0 the whole GAE trace.
    gamma: float = hparam(0.99, low=0.0, low_open=True, high=1.0, doc="Discount factor.")
    gae_lambda: float = hparam(0.95, low=0.0, low_open=True, high=1.0, doc="GAE lambda.")
    # 0 would freeze the policy: every ratio is clipped at 1.
    clip_eps: float = hparam(0.2, low=0.0, low_open=True, doc="Policy ratio clip range.")
    value_clip_eps: float = hparam(
        0.2, doc="Value clip range around the old value prediction (<= 0 disables it)."
    )
    ent_coef: float = hparam(0.01, low=0.0, doc="Entropy bonus coefficient.")
    vf_coef: float = hparam(0.5, low=0.0, doc="Value loss coefficient.")
    max_grad_norm: float = hparam(0.5, low=0.0, low_open=True, doc="Global gradient-norm clip.")
    reward_scale: float = hparam(
        1.0,
        low=0.0,
        low_open=True,
        doc="Rewards are multiplied by this before GAE (keeps value targets near unit scale).",
    )


@dataclass(frozen=True)
class PPOUpdateConfig:
    """How a PPO update runs (static); shared by PPO and recurrent PPO."""

    update_epochs: int = hparam(4, low=1, doc="Passes over each rollout batch.")
    num_minibatches: int = hparam(4, low=1, doc="Minibatches per epoch.")
    anneal_lr: bool = hparam(True, doc="Anneal the learning rate linearly to 0 over total_updates.")
    normalize_advantages: bool = hparam(True, doc="Standardise advantages within each minibatch.")
    total_updates: int = hparam(
        1, low=1, doc="Update calls the annealing schedule spans (set by the loop)."
    )


@dataclass(frozen=True)
class PPOConfig(PPOUpdateConfig):
    """Shape-setting and structural options (static)."""

    hidden_sizes: tuple[int, ...] = hparam(
        (64, 64), low=1, doc="Widths of the hidden layers of both actor and critic."
    )
    activation: str = hparam("tanh", choices=tuple(ACTIVATIONS), doc="Hidden activation.")
    normalize_obs: bool = hparam(False, doc="Normalise observations by running mean and variance.")


@struct.dataclass
class PPOExtras(ValueEstimates):
    """What `act` returns beside the action; stored in the rollout batch. Its values are
    declared (`ValueEstimates`) for the teachers that score episodes by them."""

    log_prob: jax.Array
    value: jax.Array
    value_spec: ValueSpec | None = None
    """The agent's gamma, GAE lambda and reward scale ([N]), for teachers that score levels
    with them (PLR); None in hand-built batches."""


@struct.dataclass
class PPOState:
    params: dict
    opt_state: optax.OptState
    obs_norm: RunningMeanStd
    update_count: jax.Array
    hyper: PPOHyperparams


ppo_adam = optax.scale_by_adam(eps=1e-5)
"""The optimiser of every PPO learner; the step size is applied by `ppo_epochs`."""


class ActionDistribution:
    """The policy's distribution over an action space: categorical for Discrete (the
    head's output are logits [..., A]), diagonal Gaussian for Box (the output is the
    mean [..., A], beside a log std [..., A])."""

    def __init__(self, action_space):
        self.discrete = isinstance(action_space, spaces.Discrete)
        self.dim = action_space.n if self.discrete else int(action_space.shape[0])
        self.low = self.high = None
        if not self.discrete:
            # numpy, not jax: closed-over jax arrays become hidden arguments of AOT calls
            self.low = np.asarray(action_space.low, np.float32)
            self.high = np.asarray(action_space.high, np.float32)

    def sample(self, out, log_std, key: jax.Array, deterministic: bool):
        """-> (action [...] or [..., A], log_prob [...]); the mode when deterministic."""
        if self.discrete:
            action = jnp.argmax(out, -1) if deterministic else jax.random.categorical(key, out)
            return action, categorical_log_prob(out, action)
        noise = jax.random.normal(key, out.shape)
        action = out if deterministic else out + jnp.exp(log_std) * noise
        return action, gaussian_log_prob(out, log_std, action)

    def log_prob_entropy(self, out, log_std, action):
        """-> (log_prob [...], entropy [...]) of actions taken."""
        if self.discrete:
            return categorical_log_prob(out, action), categorical_entropy(out)
        return gaussian_log_prob(out, log_std, action), gaussian_entropy(log_std)

    def env_action(self, action: jax.Array) -> jax.Array:
        """The action the env receives: Gaussian samples are clipped to its bounds."""
        if self.discrete:
            return action
        return jnp.clip(action, self.low, self.high)


def ppo_loss_mask(batch: Transition) -> jax.Array:
    """[T, N] float32: 1 where the learner may learn from the step."""
    return batch.loss_mask.astype(jnp.float32)


def ppo_training_data(batch: Transition, next_values: jax.Array, hyper: PPOHyperparams) -> dict:
    """What the PPO loss reads of a [T, N] rollout, by name, each [T, N, ...]: GAE's
    advantages and targets (`next_values` [T, N] = V(next_obs)), the loss mask and the
    rollout's actions, log-probs and values."""
    advantages, targets = gae(
        batch.reward * hyper.reward_scale,
        batch.extras.value,
        next_values,
        batch.terminated,
        batch.done,
        hyper.gamma,
        hyper.gae_lambda,
    )
    return {
        "obs": batch.obs,
        "action": batch.action,
        "loss_mask": ppo_loss_mask(batch),
        "advantage": advantages,
        "target": targets,
        "old_log_prob": batch.extras.log_prob,
        "old_value": batch.extras.value,
    }


def ppo_loss_terms(
    log_prob: jax.Array,
    entropy: jax.Array,
    value: jax.Array,
    mb: dict,
    hyper: PPOHyperparams,
    normalize_advantages: bool,
    axis_name: str | None = None,
):
    """The clipped PPO objective, averaged over the steps where `mb["loss_mask"]` is 1.

    `log_prob`, `entropy` and `value` come from the current params; `mb` holds
    "loss_mask", "advantage", "target", "old_log_prob" and "old_value", all of the same
    shape as `log_prob` (any shape: [B] for PPO, [T, B] for recurrent PPO).

    `axis_name`: the minibatch is split over this named axis (devices): the step count
    and the advantage statistics are summed over it, so each shard returns its share of
    the whole minibatch's loss and metrics, to be summed over the axis (`ppo_epochs`).

    Returns (loss, metrics of scalars).
    """
    h = hyper

    def over_axis(x: jax.Array) -> jax.Array:
        if axis_name is None:
            return x
        # Sums of data, not of params: no gradient flows through the psum.
        return jax.lax.psum(jax.lax.stop_gradient(x), axis_name)

    weight = mb["loss_mask"]
    denom = jnp.maximum(over_axis(weight.sum()), 1.0)

    adv = mb["advantage"]
    if normalize_advantages:
        mean = over_axis((adv * weight).sum()) / denom
        std = jnp.sqrt(over_axis(((adv - mean) ** 2 * weight).sum()) / denom)
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


def annealed_learning_rate(
    hyper: PPOHyperparams, update_count: jax.Array, anneal: bool, total_updates: int
):
    """The step size of update call `update_count`: linear to 0 over `total_updates`."""
    if not anneal:
        return hyper.learning_rate
    frac = 1.0 - update_count / total_updates
    return hyper.learning_rate * jnp.clip(frac, 0.0, 1.0)


def ppo_epochs(
    key: jax.Array,
    params,
    opt_state: optax.OptState,
    data: dict,
    loss_fn,
    hyper: PPOHyperparams,
    update_count: jax.Array,
    config: PPOUpdateConfig,
    axis_name: str | None = None,
):
    """Adam steps with global-norm clipping at update call `update_count`'s step size,
    `config.update_epochs` passes over `data` split into `config.num_minibatches`
    shuffled minibatches along its leading axis.

    `loss_fn(params, minibatch) -> (loss, metrics)`; `data["loss_mask"]` says which steps
    may be learnt from: with none, params and opt_state come back unchanged.

    `axis_name`: `data` is this shard's part of a batch split over the named axis, and
    `loss_fn` returns its share of the loss (`ppo_loss_terms(..., axis_name)`): gradients
    and metrics are summed over the axis, i.e. averaged over the whole minibatch, before
    the Adam step, which every shard then takes alike. Each shard shuffles its own part,
    so a minibatch is the union of the shards' minibatches.

    Returns (params, opt_state, the next `update_count`, metrics averaged over all
    steps, with the step size). The count is the schedule's clock: it advances only when
    the update applied a gradient.
    """
    learning_rate = annealed_learning_rate(
        hyper, update_count, config.anneal_lr, config.total_updates
    )

    def sgd_step(carry, mb):
        params, opt_state = carry
        grads, metrics = jax.grad(loss_fn, has_aux=True)(params, mb)
        if axis_name is not None:
            grads, metrics = jax.lax.psum((grads, metrics), axis_name)
        grad_norm = optax.tree.norm(grads)
        scale = jnp.minimum(1.0, hyper.max_grad_norm / (grad_norm + 1e-6))
        grads = jax.tree.map(lambda g: g * scale, grads)
        updates, opt_state = ppo_adam.update(grads, opt_state, params)
        params = jax.tree.map(lambda p, u: p - learning_rate * u, params, updates)
        return (params, opt_state), {**metrics, "grad_norm": grad_norm}

    trained, metrics = minibatch_epochs(
        key, (params, opt_state), data, config.update_epochs, config.num_minibatches, sgd_step
    )
    # A select, not a cond: the loop vmaps seeds, where a cond runs both branches anyway.
    learn = data["loss_mask"].any()
    if axis_name is not None:
        learn = jax.lax.psum(learn.astype(jnp.int32), axis_name) > 0
    params, opt_state = jax.tree.map(
        lambda new, old: jnp.where(learn, new, old), trained, (params, opt_state)
    )
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics["learning_rate"] = jnp.asarray(learning_rate, jnp.float32)
    return params, opt_state, update_count + learn.astype(update_count.dtype), metrics


class PPO(Agent):
    """PPO with discrete (categorical) or continuous (diagonal Gaussian) actions."""

    averages_gradients = True
    """`update(..., axis_name)` averages over the instances split across devices."""

    def __init__(self, config: PPOConfig = PPOConfig(), hyper: PPOHyperparams = PPOHyperparams()):
        self.config = hparams.validated(config, "agent")
        self.hyper = hparams.validated(hyper, "agent")
        self.network: ActorCritic | None = None
        self.actions: ActionDistribution | None = None

    @property
    def num_minibatches(self) -> int:
        return self.config.num_minibatches

    def _build(self, obs_space: spaces.Box, action_space) -> None:
        self.actions = ActionDistribution(action_space)
        self.network = ActorCritic(
            self.actions.dim,
            self.actions.discrete,
            self.config.hidden_sizes,
            self.config.activation,
        )
        self.obs_shape = tuple(obs_space.shape)

    def init(self, key: jax.Array, obs_space, action_space) -> PPOState:
        if self.network is None:
            self._build(obs_space, action_space)
        params = self.network.init(key, jnp.zeros(self.obs_shape))
        return PPOState(
            params=params,
            opt_state=ppo_adam.init(params),
            obs_norm=RunningMeanStd.create(self.obs_shape),
            update_count=jnp.zeros((), jnp.int32),
            hyper=self.hyper,
        )

    def initial_carry(self, n: int, tasks: jax.Array | None = None) -> jax.Array:
        """Feed-forward: no recurrent state (`tasks`, the episodes' tasks, unused)."""
        return jnp.zeros((n, 0))

    def _forward(self, params, obs_norm: RunningMeanStd, obs: jax.Array):
        if self.config.normalize_obs:
            obs = obs_norm.normalize(obs)
        return self.network.apply(params, obs)

    def env_action(self, action: jax.Array) -> jax.Array:
        """The action the env receives: Gaussian samples are clipped to its bounds."""
        return self.actions.env_action(action)

    def act(self, state: PPOState, obs: jax.Array, carry, key: jax.Array, deterministic=False):
        """obs [N, *obs_shape] -> action [N] or [N, A], carry, PPOExtras [N]."""
        out, value, log_std = self._forward(state.params, state.obs_norm, obs)
        action, log_prob = self.actions.sample(out, log_std, key, deterministic)
        spec = value_spec(state.hyper, value.shape[0])
        return action, carry, PPOExtras(log_prob=log_prob, value=value, value_spec=spec)

    def value(self, state: PPOState, obs: jax.Array) -> jax.Array:
        return self._forward(state.params, state.obs_norm, obs)[1]

    def _loss(self, params, state: PPOState, mb, axis_name: str | None = None):
        out, value, log_std = self._forward(params, state.obs_norm, mb["obs"])
        log_prob, entropy = self.actions.log_prob_entropy(out, log_std, mb["action"])
        return ppo_loss_terms(
            log_prob, entropy, value, mb, state.hyper, self.config.normalize_advantages, axis_name
        )

    def update(
        self, state: PPOState, batch: Transition, key: jax.Array, axis_name: str | None = None
    ):
        """One PPO update on a [T, N] rollout. Returns (state, metrics of scalars).

        `axis_name`: the N instances are split over this named axis (devices, as
        PureJaxRL's pmean): gradients, statistics and metrics are those of all of them,
        and every shard ends with the same state."""
        h = state.hyper
        next_values = self.value(state, batch.next_obs)
        flat = jax.tree.map(
            lambda x: x.reshape((-1,) + x.shape[2:]), ppo_training_data(batch, next_values, h)
        )
        params, opt_state, update_count, metrics = ppo_epochs(
            key,
            state.params,
            state.opt_state,
            flat,
            lambda params, mb: self._loss(params, state, mb, axis_name),
            h,
            state.update_count,
            self.config,
            axis_name,
        )
        obs_norm = state.obs_norm
        if self.config.normalize_obs:
            # Observation statistics are no gradient step: kept even when nothing is learnt.
            obs = flat["obs"]
            if axis_name is not None:
                obs = jax.lax.all_gather(obs, axis_name, tiled=True)
            obs_norm = obs_norm.update(obs)
        new_state = state.replace(
            params=params,
            opt_state=opt_state,
            obs_norm=obs_norm,
            update_count=update_count,
        )
        return new_state, metrics


def make_ppo(**kwargs) -> PPO:
    """Build PPO from flat config keys: PPOConfig fields and PPOHyperparams fields."""
    config, hyper = hparams.split(kwargs, PPOConfig, PPOHyperparams, field_name="agent")
    return PPO(PPOConfig(**config), PPOHyperparams(**hyper))


AGENTS.register("ppo")(hparams.declare(make_ppo, PPOConfig, PPOHyperparams))
