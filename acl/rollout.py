"""The shared rollout: agents act, envs step, and the loop resets instances onto tasks.

Every agent (PPO, DQN, recurrent PPO) collects experience through `collect`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from acl.agents.common import Transition
from acl.teachers.base import Feedback


@struct.dataclass
class Slots:
    """The per-instance env state the loop carries between batches; leaves lead with [N]."""

    env_state: Any
    obs: jax.Array
    params: Any
    """Env params of the task each instance is running."""
    task: jax.Array
    """[N, D] task each instance is running."""
    train_on: jax.Array
    """[N] whether the student learns from this instance's current episode."""
    episode_return: jax.Array
    episode_length: jax.Array
    recurrent: Any
    """The agent's recurrent carry, [N, ...]."""


def select_instances(mask: jax.Array, new: Any, old: Any) -> Any:
    """Per instance: `new` where mask [N] is true, else `old`."""

    def pick(a, b):
        m = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
        return jnp.where(m, a, b)

    return jax.tree.map(pick, new, old)


def achieved_goal(env, obs: jax.Array) -> jax.Array | None:
    """[N, O] -> [N, G] for goal envs (envs.base.GoalTaskEnv), else None."""
    read = getattr(env, "achieved_goal", None)
    return None if read is None else read(obs)


def start_slots(env, agent, key: jax.Array, tasks: jax.Array, train_on: jax.Array) -> Slots:
    """Reset N instances onto tasks [N, D]."""
    n = tasks.shape[0]
    params = env.params_for_tasks(tasks)
    obs, state = jax.vmap(env.reset)(jax.random.split(key, n), params)
    return Slots(
        env_state=state,
        obs=obs,
        params=params,
        task=tasks,
        train_on=train_on,
        episode_return=jnp.zeros(n),
        episode_length=jnp.zeros(n, jnp.int32),
        recurrent=agent.initial_carry(n),
    )


def collect(
    env,
    agent,
    agent_state: Any,
    slots: Slots,
    key: jax.Array,
    next_tasks: jax.Array | None,
    next_train_on: jax.Array | None,
    num_steps: int,
):
    """Roll N instances for `num_steps` steps.

    An instance whose episode ends at step t restarts on `next_tasks[t]` ([T, N, D]), or on
    its own task again when `next_tasks` is None (batch mode).

    Returns (slots, Transition [T, N], Feedback with K = T * N records, mask = episode ended).
    """
    n = slots.task.shape[0]

    def step(slots: Slots, xs):
        step_key, new_task, new_train_on = xs
        act_key, env_key, reset_key = jax.random.split(step_key, 3)
        action, recurrent, extras = agent.act(agent_state, slots.obs, slots.recurrent, act_key)
        next_obs, env_state, reward, terminated, truncated, _ = jax.vmap(env.step)(
            jax.random.split(env_key, n), slots.env_state, agent.env_action(action), slots.params
        )
        done = terminated | truncated
        episode_return = slots.episode_return + reward
        episode_length = slots.episode_length + 1
        record = Feedback(
            task=slots.task,
            episode_return=episode_return,
            success=env.is_success(episode_return),
            length=episode_length,
            mask=done,
            achieved_goal=achieved_goal(env, next_obs),
        )
        transition = Transition(
            obs=slots.obs,
            action=action,
            reward=reward,
            terminated=terminated,
            done=done,
            next_obs=next_obs,
            loss_mask=slots.train_on,
            extras=extras,
        )
        if new_task is None:
            new_task, new_train_on = slots.task, slots.train_on
        fresh = start_slots(env, agent, reset_key, new_task, new_train_on)
        continuing = Slots(
            env_state=env_state,
            obs=next_obs,
            params=slots.params,
            task=slots.task,
            train_on=slots.train_on,
            episode_return=episode_return,
            episode_length=episode_length,
            recurrent=recurrent,
        )
        return select_instances(done, fresh, continuing), (transition, record)

    xs = (jax.random.split(key, num_steps), next_tasks, next_train_on)
    slots, (transitions, records) = jax.lax.scan(step, slots, xs, length=num_steps)
    feedback = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), records)
    return slots, transitions, feedback
