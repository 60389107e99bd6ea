"""Bit flipping: env contract, rewards, success, and the GoalTaskEnv functions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from envs import ENVS, make_env
from envs.base import GoalTaskEnv
from envs.bit_flip import BitFlip

ENV = BitFlip(num_bits=4)


def play(env, task, actions, key=0):
    """Reset onto `task` and play `actions`; returns (obs [T+1, 2n], rewards, term, trunc)."""
    params = env.task_to_params(jnp.asarray(task, jnp.float32), env.default_params())
    obs, state = env.reset(jax.random.PRNGKey(key), params)
    out = [obs]
    rewards, terminated, truncated = [], [], []
    for a in actions:
        obs, state, r, te, tr, _ = env.step(jax.random.PRNGKey(1), state, jnp.int32(a), params)
        out.append(obs)
        rewards.append(float(r))
        terminated.append(bool(te))
        truncated.append(bool(tr))
    return np.asarray(jnp.stack(out)), rewards, terminated, truncated


def test_registered_with_static_config_and_spaces():
    assert "bit_flip" in ENVS.names()
    env = make_env("bit_flip", num_bits=7)
    assert isinstance(env, GoalTaskEnv) and env.goal_dim == 7
    assert env.task_space.dim == 7 and env.max_episode_steps == 7
    assert env.observation_space().shape == (14,)
    assert isinstance(env.action_space(), spaces.Discrete) and env.action_space().n == 7
    assert make_env("bit_flip").num_bits == 10
    assert make_env("bit_flip", num_bits=3, teach_start=True).task_space.dim == 6
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="num_bits"):
            make_env("bit_flip", num_bits=bad)
    with pytest.raises(ConfigError, match="teach_start"):
        make_env("bit_flip", teach_start="yes")


def test_task_is_rounded_to_the_goal_bits():
    params = ENV.task_to_params(jnp.array([0.9, 0.2, 0.51, 0.5]), ENV.default_params())
    np.testing.assert_array_equal(params.goal, [1, 0, 1, 0])


def test_rewards_until_the_goal_then_no_termination_and_truncation_at_n():
    env = BitFlip(num_bits=4, teach_start=True)
    # start 0000, goal 1100: flip 0 (-1), flip 1 (on goal: 0), flip 3 (-1), flip 3 (0).
    obs, rewards, terminated, truncated = play(env, [1, 1, 0, 0, 0, 0, 0, 0], [0, 1, 3, 3])
    assert rewards == [-1.0, 0.0, -1.0, 0.0]
    assert terminated == [False] * 4  # reaching the goal does not end the episode
    assert truncated == [False, False, False, True]  # episode length n
    np.testing.assert_array_equal(
        obs[:, :4], [[0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 1], [1, 1, 0, 0]]
    )
    np.testing.assert_array_equal(obs[:, 4:], np.tile([1, 1, 0, 0], (5, 1)))


def test_success_is_reaching_the_goal_at_any_step():
    env = BitFlip(num_bits=4, teach_start=True)
    task = [1, 0, 0, 0, 0, 0, 0, 0]  # goal 1000 from 0000
    # Reaches it at step 1 and leaves it: return -3 > -4, a success.
    _, rewards, _, _ = play(env, task, [0, 1, 2, 3])
    assert sum(rewards) == -3.0 and bool(env.is_success(jnp.asarray(sum(rewards))))
    # Never on the goal: return -4, not a success.
    _, rewards, _, _ = play(env, task, [1, 2, 3, 1])
    assert sum(rewards) == -4.0 and not bool(env.is_success(jnp.asarray(sum(rewards))))
    assert env.success_threshold == -4.0 and env.return_bounds == (-4.0, 0.0)


def test_random_start_comes_from_the_key_and_goal_from_the_task():
    starts = set()
    for k in range(8):
        obs, _, _, _ = play(ENV, [1, 0, 1, 0], [], key=k)
        np.testing.assert_array_equal(obs[0, 4:], [1, 0, 1, 0])
        starts.add(tuple(obs[0, :4]))
    assert len(starts) > 1


def test_goal_functions_read_and_write_the_goal_and_broadcast():
    obs = jnp.array([[1, 0, 1, 1, 1, 0, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1]], jnp.float32)
    np.testing.assert_array_equal(ENV.achieved_goal(obs), [[1, 0, 1, 1], [0, 0, 0, 0]])
    np.testing.assert_array_equal(ENV.desired_goal(obs), [[1, 0, 1, 1], [1, 1, 1, 1]])
    np.testing.assert_array_equal(
        ENV.compute_reward(ENV.achieved_goal(obs), ENV.desired_goal(obs)), [0.0, -1.0]
    )
    np.testing.assert_array_equal(
        ENV.goal_reached(ENV.achieved_goal(obs), ENV.desired_goal(obs)), [True, False]
    )
    new = ENV.with_goal(obs, jnp.array([0, 1, 0, 1], jnp.float32))  # one goal, broadcast
    np.testing.assert_array_equal(new, [[1, 0, 1, 1, 0, 1, 0, 1], [0, 0, 0, 0, 0, 1, 0, 1]])
    # [T, N, O] leading axes work too.
    assert ENV.achieved_goal(jnp.zeros((3, 2, 8))).shape == (3, 2, 4)


def test_step_reward_equals_compute_reward_under_vmap():
    @jax.jit
    def one_step(key):
        task_key, reset_key, action_key, step_key = jax.random.split(key, 4)
        params = ENV.params_for_tasks(jax.random.uniform(task_key, (64, 4)))
        obs, state = jax.vmap(ENV.reset)(jax.random.split(reset_key, 64), params)
        actions = jax.random.randint(action_key, (64,), 0, 4)
        next_obs, _, reward, _, _, _ = jax.vmap(ENV.step)(
            jax.random.split(step_key, 64), state, actions, params
        )
        return obs, next_obs, reward

    obs, next_obs, reward = one_step(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(
        reward, ENV.compute_reward(ENV.achieved_goal(next_obs), ENV.desired_goal(next_obs))
    )
    # Exactly one bit changed per instance, and the goal part not at all.
    np.testing.assert_array_equal(jnp.abs(next_obs - obs)[:, :4].sum(-1), 1)
    np.testing.assert_array_equal(next_obs[:, 4:], obs[:, 4:])
