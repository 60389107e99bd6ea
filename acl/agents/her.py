"""Hindsight experience replay (Andrychowicz et al. 2017): relabelled minibatches, in jit.

A minibatch is drawn from the episode buffer (`acl.agents.replay`): a stored episode
uniformly, then a step t uniformly within it (the sampling of OpenAI baselines' HER;
with equal-length episodes, as in bit flipping, it is uniform over transitions). With
probability `relabel_prob` = k / (k + 1) the transition's goal is replaced by a goal the
episode actually achieved, the state s' read from the stored observations
(s_0 = reset, s_{t+1} = the state after step t, L = episode length):

- "future":  s' = s_{t'}, t' uniform in {t + 1, ..., L}: a state reached at or after
  this transition's next state (baselines' `future_t = t + 1 + floor(u (T - t))`), so
  every transition can be relabelled and exactly k / (k + 1) of them are (k = 4: 80%).
- "final":   s' = s_L, the episode's last state.
- "episode": s' = s_{t'}, t' uniform in {1, ..., L}: any state the episode reached.
- "none":    no relabelling (plain experience replay).

A relabelled transition gets the goal written into obs and next_obs (`with_goal`) and
the reward `compute_reward(achieved_goal(next_obs), goal)`, which is exactly what the
env's `step` would have paid. Its `terminated` flag is kept, unless the env declares
`terminates_on_goal = True` (`envs.base.GoalTaskEnv`), in which case it becomes
`goal_reached(achieved_goal(next_obs), goal)` for the new goal. All shapes are static;
the strategy is static, the probability a traced scalar.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from acl.agents.replay import EpisodeBuffer, sample_slots
from acl.core.errors import ConfigError

STRATEGIES = ("none", "future", "final", "episode")


def check_strategy(strategy: str, field: str = "agent.her_strategy") -> str:
    if strategy not in STRATEGIES:
        raise ConfigError(f"{field} must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    return strategy


def relabel_probability(k: jax.Array) -> jax.Array:
    """k relabelled goals per real one: a sampled transition is relabelled w.p. k / (k + 1)."""
    return k / (k + 1.0)


@struct.dataclass
class HERBatch:
    """A minibatch of (possibly relabelled) transitions; leaves lead with [B]."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array
    terminated: jax.Array
    relabelled: jax.Array
    """[B] bool: the goal was replaced."""
    slot: jax.Array
    """[B] buffer slot (episode) each transition came from."""
    step: jax.Array
    """[B] step t of the transition within its episode."""
    goal_state: jax.Array
    """[B] index t' of the state s_{t'} whose achieved goal was used; -1 if not relabelled."""


def sample_her(
    env,
    buffer: EpisodeBuffer,
    key: jax.Array,
    batch_size: int,
    strategy: str,
    relabel_prob: jax.Array,
) -> HERBatch:
    """A [batch_size] minibatch from `buffer`, relabelled with `strategy` (see module doc).

    `env` is a `GoalTaskEnv` (only its goal functions are used).
    """
    check_strategy(strategy)
    slot_key, coin_key, goal_key = jax.random.split(key, 3)
    slot, step = sample_slots(buffer, slot_key, batch_size)
    data = buffer.data
    length = jnp.maximum(buffer.length[slot], 1)
    obs = data.obs[slot, step]
    next_obs = data.obs[slot, step + 1]
    reward = data.reward[slot, step]
    terminated = data.terminated[slot, step]
    action = data.action[slot, step]
    if strategy == "none":
        return HERBatch(
            obs=obs,
            action=action,
            reward=reward,
            next_obs=next_obs,
            terminated=terminated,
            relabelled=jnp.zeros((batch_size,), bool),
            slot=slot,
            step=step,
            goal_state=jnp.full((batch_size,), -1, jnp.int32),
        )
    u = jax.random.uniform(goal_key, (batch_size,))
    if strategy == "future":
        goal_state = step + 1 + jnp.floor(u * (length - step)).astype(jnp.int32)
    elif strategy == "final":
        goal_state = length
    else:  # episode
        goal_state = 1 + jnp.floor(u * length).astype(jnp.int32)
    goal_state = jnp.minimum(goal_state, length)  # guards u -> 1 rounding
    relabel = jax.random.uniform(coin_key, (batch_size,)) < relabel_prob
    new_goal = env.achieved_goal(data.obs[slot, goal_state])
    achieved = env.achieved_goal(next_obs)
    relabelled_reward = env.compute_reward(achieved, new_goal)
    if env.terminates_on_goal:
        relabelled_terminated = env.goal_reached(achieved, new_goal)
    else:
        relabelled_terminated = terminated
    mask = relabel.reshape((batch_size,) + (1,) * (obs.ndim - 1))
    return HERBatch(
        obs=jnp.where(mask, env.with_goal(obs, new_goal), obs),
        action=action,
        reward=jnp.where(relabel, relabelled_reward, reward),
        next_obs=jnp.where(mask, env.with_goal(next_obs, new_goal), next_obs),
        terminated=jnp.where(relabel, relabelled_terminated, terminated),
        relabelled=relabel,
        slot=slot,
        step=step,
        goal_state=jnp.where(relabel, goal_state, -1),
    )
