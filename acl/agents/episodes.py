"""Whole episodes of an agent in an env outside the training rollout: what evaluation
(acl.loop.evaluation, which re-exports `run_episodes`) and an agent's own success checks play.

It lives with the agents because agents may not import the evaluation module.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def run_episodes(
    env, agent, agent_state: Any, tasks: jax.Array, key: jax.Array, deterministic: bool = True
) -> jax.Array:
    """One full episode per task, [K, D] -> returns [K].

    Runs exactly `env.max_episode_steps` steps and counts rewards until each episode's
    first end, so the cost is fixed and nothing branches per instance.
    """
    n = tasks.shape[0]
    params = env.params_for_tasks(tasks)
    reset_key, loop_key = jax.random.split(key)
    obs, state = jax.vmap(env.reset)(jax.random.split(reset_key, n), params)

    def step(carry, step_key):
        obs, state, recurrent, total, alive = carry
        act_key, env_key = jax.random.split(step_key)
        action, recurrent, _ = agent.act(agent_state, obs, recurrent, act_key, deterministic)
        obs, state, reward, terminated, truncated, _ = jax.vmap(env.step, in_axes=(0, 0, 0, 0))(
            jax.random.split(env_key, n), state, agent.env_action(action), params
        )
        total = total + reward * alive
        alive = alive & ~(terminated | truncated)
        return (obs, state, recurrent, total, alive), None

    init = (obs, state, agent.initial_carry(n), jnp.zeros(n), jnp.ones(n, bool))
    (_, _, _, total, _), _ = jax.lax.scan(
        step, init, jax.random.split(loop_key, env.max_episode_steps)
    )
    return total
