"""The shared rollout: agents act, envs step, and the loop resets instances onto tasks.

Every agent (PPO, DQN, recurrent PPO, or an actor wrapper around one) collects experience
through `collect`. A task may be wider than the env's task space: the env reads its first
`env.task_space.dim` columns, and the rest ride along with the instance, reach the agent
at each reset (`agent.initial_carry(n, tasks)`) and come back in the feedback records.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from acl.core.types import Feedback, Transition


@struct.dataclass
class Slots:
    """The per-instance env state the loop carries between batches; leaves lead with [N]."""

    env_state: Any
    obs: jax.Array
    params: Any
    """Env params of the task each instance is running."""
    task: jax.Array
    """[N, D'] task each instance is running, as the teacher handed it out."""
    train_on: jax.Array
    """[N] whether the student learns from this instance's current episode."""
    episode_return: jax.Array
    episode_length: jax.Array
    recurrent: Any
    """The agent's per-instance carry, [N, ...]."""


def select_instances(mask: jax.Array, new: Any, old: Any) -> Any:
    """Per instance: `new` where mask [N] is true, else `old`."""

    def pick(a, b):
        m = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
        return jnp.where(m, a, b)

    return jax.tree.map(pick, new, old)


@struct.dataclass
class TaskPool:
    """Tasks drawn for one iteration, handed out in reset order (`loop.task_pool`);
    leaves lead with [P]."""

    task: jax.Array
    """[P, D']"""
    train_on: jax.Array
    """[P]"""


def take_from_pool(pool: TaskPool, taken: jax.Array, done: jax.Array, slots: Slots):
    """What each instance restarts on at this step, and the pool entries taken after it.

    The instances that reset here (done [N]) take the next entries in instance order,
    from entry `taken` on; past the pool's end an instance keeps its own task (overflow).
    Returns (task [N, D'], train_on [N], taken)."""
    size = pool.task.shape[0]
    index = taken + jnp.cumsum(done) - done  # resets before this one, this iteration
    fits = done & (index < size)
    index = jnp.minimum(index, size - 1)
    task = select_instances(fits, pool.task[index], slots.task)
    train_on = jnp.where(fits, pool.train_on[index], slots.train_on)
    return task, train_on, taken + done.sum(dtype=jnp.int32)


def start_slots(env, agent, key: jax.Array, tasks: jax.Array, train_on: jax.Array) -> Slots:
    """Reset N instances onto tasks [N, D'] (the env reads the first D columns)."""
    n = tasks.shape[0]
    params = env.params_for_tasks(tasks[:, : env.task_space.dim])
    obs, state = jax.vmap(env.reset)(jax.random.split(key, n), params)
    return Slots(
        env_state=state,
        obs=obs,
        params=params,
        task=tasks,
        train_on=train_on,
        episode_return=jnp.zeros(n),
        episode_length=jnp.zeros(n, jnp.int32),
        recurrent=agent.initial_carry(n, tasks),
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
    pool: TaskPool | None = None,
):
    """Roll N instances for `num_steps` steps.

    An instance whose episode ends at step t restarts on `next_tasks[t]` ([T, N, D']), or
    on its own task again when `next_tasks` is None (batch mode). With a `pool` (and
    `next_tasks`, `next_train_on` None) the k-th reset of the call, in step then instance
    order, takes entry k of the pool, and resets beyond its size restart on their own
    task (`take_from_pool`).

    Returns (slots, Transition [T, N], Feedback with K = T * N records, mask = episode ended).
    """
    n = slots.task.shape[0]
    if pool is not None and not (next_tasks is None and next_train_on is None):
        raise ValueError("collect: a pool replaces next_tasks and next_train_on; pass None")

    def step(carry, xs):
        slots, taken = carry
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
        if pool is not None:
            new_task, new_train_on, taken = take_from_pool(pool, taken, done, slots)
        elif new_task is None:
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
        return (select_instances(done, fresh, continuing), taken), (transition, record)

    xs = (jax.random.split(key, num_steps), next_tasks, next_train_on)
    # Pool entries taken so far; None (no carry at all) in the slot layout.
    taken = None if pool is None else jnp.zeros((), jnp.int32)
    (slots, _), (transitions, records) = jax.lax.scan(step, (slots, taken), xs, length=num_steps)
    feedback = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), records)
    return slots, transitions, feedback


def play(
    env,
    agent,
    agent_state: Any,
    tasks: jax.Array,
    num_steps: int,
    reset_key: jax.Array,
    rollout_key: jax.Array,
) -> tuple[Slots, Transition]:
    """N instances of `agent` on tasks [N, D'] for `num_steps` steps, each restarting on its
    own task (batch mode), every step learnt from. Returns (slots, Transition [T, N])."""
    n = tasks.shape[0]
    slots = start_slots(env, agent, reset_key, tasks, jnp.ones((n,), bool))
    slots, batch, _ = collect(env, agent, agent_state, slots, rollout_key, None, None, num_steps)
    return slots, batch
