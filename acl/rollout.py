"""The shared rollout: agents act, envs step, and the loop resets instances onto tasks.

Every agent (PPO, DQN, recurrent PPO) collects experience through `collect`. With a
teacher's `guide` (JSRL), the guide acts for the first h steps of each episode and the
agent after; h is handed out per episode like the task.
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
    guide_steps: jax.Array | None = None
    """[N] int32 the guide acts while the episode's step count is below this (JSRL);
    None when no teacher has a guide."""


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
    """[P, D]"""
    train_on: jax.Array
    """[P]"""
    guide_steps: jax.Array | None = None
    """[P] int32 guide horizons; None: restarting instances keep their own (or have none)."""


def take_from_pool(pool: TaskPool, taken: jax.Array, done: jax.Array, slots: Slots):
    """What each instance restarts on at this step, and the pool entries taken after it.

    The instances that reset here (done [N]) take the next entries in instance order,
    from entry `taken` on; past the pool's end an instance keeps its own task (overflow).
    Returns (task [N, D], train_on [N], guide_steps [N] or None, taken)."""
    size = pool.task.shape[0]
    index = taken + jnp.cumsum(done) - done  # resets before this one, this iteration
    fits = done & (index < size)
    index = jnp.minimum(index, size - 1)
    task = select_instances(fits, pool.task[index], slots.task)
    train_on = jnp.where(fits, pool.train_on[index], slots.train_on)
    guide_steps = slots.guide_steps
    if pool.guide_steps is not None:
        guide_steps = jnp.where(fits, pool.guide_steps[index], slots.guide_steps)
    return task, train_on, guide_steps, taken + done.sum(dtype=jnp.int32)


def achieved_goal(env, obs: jax.Array) -> jax.Array | None:
    """[N, O] -> [N, G] for goal envs (envs.base.GoalTaskEnv), else None."""
    read = getattr(env, "achieved_goal", None)
    return None if read is None else read(obs)


def start_slots(
    env,
    agent,
    key: jax.Array,
    tasks: jax.Array,
    train_on: jax.Array,
    guide_steps: jax.Array | None = None,
) -> Slots:
    """Reset N instances onto tasks [N, D] (guide horizons [N] where a guide acts)."""
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
        guide_steps=guide_steps,
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
    guide=None,
    next_guide_steps: jax.Array | None = None,
    pool: TaskPool | None = None,
):
    """Roll N instances for `num_steps` steps.

    An instance whose episode ends at step t restarts on `next_tasks[t]` ([T, N, D]), or on
    its own task again when `next_tasks` is None (batch mode). With a `pool` (and
    `next_tasks`, `next_train_on`, `next_guide_steps` None) the k-th reset of the call, in
    step then instance order, takes entry k of the pool, and resets beyond its size
    restart on their own task (`take_from_pool`).

    `guide` (a teacher's, or None): while an episode has taken fewer than
    `slots.guide_steps` steps, the guide's action is executed instead of the agent's; a
    restarting episode takes its horizon from `next_guide_steps[t]` ([T, N]; None: keep
    the instance's own). With guide None nothing of this is traced.

    Returns (slots, Transition [T, N], Feedback with K = T * N records, mask = episode ended).
    """
    n = slots.task.shape[0]
    if guide is not None and slots.guide_steps is None:
        raise ValueError("collect: a guide needs slots with guide_steps (start_slots(...))")
    if pool is not None and not (next_tasks is None and next_train_on is None):
        raise ValueError("collect: a pool replaces next_tasks and next_train_on; pass None")

    def step(carry, xs):
        slots, taken = carry
        step_key, new_task, new_train_on, new_guide_steps = xs
        guided = None
        if guide is None:
            act_key, env_key, reset_key = jax.random.split(step_key, 3)
        else:
            act_key, env_key, reset_key, guide_key = jax.random.split(step_key, 4)
        action, recurrent, extras = agent.act(agent_state, slots.obs, slots.recurrent, act_key)
        if guide is not None:
            # The agent still acts everywhere: its extras (PPO's value) feed GAE on guide
            # steps too, and its recurrent carry keeps following the observations.
            guided = slots.episode_length < slots.guide_steps
            guide_action = guide.act(slots.obs, slots.env_state, slots.params, guide_key)
            action = select_instances(guided, guide_action.astype(action.dtype), action)
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
            guide_steps=slots.guide_steps,
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
            guided=guided,
        )
        if pool is not None:
            new_task, new_train_on, new_guide_steps, taken = take_from_pool(
                pool, taken, done, slots
            )
        elif new_task is None:
            new_task, new_train_on = slots.task, slots.train_on
        if new_guide_steps is None:
            new_guide_steps = slots.guide_steps
        fresh = start_slots(env, agent, reset_key, new_task, new_train_on, new_guide_steps)
        continuing = Slots(
            env_state=env_state,
            obs=next_obs,
            params=slots.params,
            task=slots.task,
            train_on=slots.train_on,
            episode_return=episode_return,
            episode_length=episode_length,
            recurrent=recurrent,
            guide_steps=slots.guide_steps,
        )
        return (select_instances(done, fresh, continuing), taken), (transition, record)

    xs = (jax.random.split(key, num_steps), next_tasks, next_train_on, next_guide_steps)
    # Pool entries taken so far; None (no carry at all) in the slot layout.
    taken = None if pool is None else jnp.zeros((), jnp.int32)
    (slots, _), (transitions, records) = jax.lax.scan(step, (slots, taken), xs, length=num_steps)
    feedback = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), records)
    return slots, transitions, feedback
