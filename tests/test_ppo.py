"""PPO pieces against references, and probe environments with known answers."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.agents.common import RunningMeanStd, gae, shuffled_minibatches
from acl.agents.ppo import make_ppo
from acl.build import make_train
from acl.loop.train import Components
from acl.teachers.random import RandomTeacher
from tests.conftest import tiny_config
from tests.probe_envs import ConstantRewardTruncated, MatchTargetContinuous, MatchTargetDiscrete


def reference_gae(rewards, values, next_values, terminated, done, gamma, lam):
    T, N = rewards.shape
    adv = np.zeros((T, N))
    for n in range(N):
        running = 0.0
        for t in reversed(range(T)):
            bootstrap = 0.0 if terminated[t, n] else gamma * next_values[t, n]
            delta = rewards[t, n] + bootstrap - values[t, n]
            running = delta + (0.0 if done[t, n] else gamma * lam * running)
            adv[t, n] = running
    return adv, adv + values


def test_gae_matches_a_loop_reference_with_truncation_and_termination():
    rng = np.random.default_rng(0)
    T, N = 12, 3
    rewards, values, next_values = (rng.normal(size=(T, N)) for _ in range(3))
    terminated = rng.random((T, N)) < 0.15
    truncated = (rng.random((T, N)) < 0.15) & ~terminated
    done = terminated | truncated
    adv, target = gae(
        *(jnp.asarray(x) for x in (rewards, values, next_values, terminated, done)), 0.97, 0.9
    )
    ref_adv, ref_target = reference_gae(rewards, values, next_values, terminated, done, 0.97, 0.9)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(target, ref_target, rtol=1e-5, atol=1e-5)
    # A truncated step bootstraps from its final state; a terminated one does not.
    assert truncated.any() and terminated.any()


def test_minibatches_are_a_partition_of_the_batch():
    data = {"x": jnp.arange(24), "y": jnp.arange(24) * 2}
    mb = shuffled_minibatches(jax.random.PRNGKey(0), data, 4)
    assert mb["x"].shape == (4, 6)
    np.testing.assert_array_equal(np.sort(np.asarray(mb["x"]).ravel()), np.arange(24))
    np.testing.assert_array_equal(mb["y"], mb["x"] * 2)
    with pytest.raises(ValueError, match="does not split"):
        shuffled_minibatches(jax.random.PRNGKey(0), data, 5)


def test_running_mean_std_matches_numpy():
    rng = np.random.default_rng(1)
    batches = [rng.normal(3.0, 2.0, size=(50, 4)) for _ in range(5)]
    stats = RunningMeanStd.create((4,))
    for b in batches:
        stats = stats.update(jnp.asarray(b))
    everything = np.concatenate(batches)
    np.testing.assert_allclose(stats.mean, everything.mean(0), rtol=1e-3)
    np.testing.assert_allclose(stats.var, everything.var(0), rtol=1e-3)


def train_probe(env, agent_kwargs, loop, num_seeds=2):
    config = tiny_config(num_seeds=num_seeds, loop=loop, eval={"num_test_tasks": 16})
    agent = make_ppo(
        total_updates=loop["total_env_steps"] // (loop["num_envs"] * loop["num_steps"]),
        **agent_kwargs,
    )
    trainer = make_train(config, Components(env, RandomTeacher(env.task_space), agent))
    carry, metrics = jax.jit(jax.vmap(trainer.train))(trainer.seed_keys())
    return trainer, carry, metrics


@pytest.mark.slow
def test_ppo_learns_a_task_conditioned_discrete_probe():
    loop = {"num_envs": 8, "num_steps": 8, "total_env_steps": 6144, "eval_every": 2048}
    _, _, metrics = train_probe(
        MatchTargetDiscrete(), {"learning_rate": 3e-3, "num_minibatches": 2}, loop
    )
    np.testing.assert_array_equal(metrics.eval_pct_mastered[:, -1], 100.0)
    assert (metrics.eval_pct_mastered[:, 0] <= 100.0).all()


@pytest.mark.slow
def test_ppo_learns_a_task_conditioned_continuous_probe():
    loop = {"num_envs": 16, "num_steps": 8, "total_env_steps": 24576, "eval_every": 8192}
    trainer, carry, metrics = train_probe(
        MatchTargetContinuous(), {"learning_rate": 3e-3, "num_minibatches": 4}, loop
    )
    assert (metrics.eval_mean_return[:, -1] > -0.01).all(), metrics.eval_mean_return
    assert (metrics.eval_mean_return[:, -1] > metrics.eval_mean_return[:, 0]).all()


@pytest.mark.slow
def test_value_bootstraps_through_time_limit_truncation():
    env = ConstantRewardTruncated()
    loop = {"num_envs": 8, "num_steps": 16, "total_env_steps": 16384, "eval_every": 8192}
    config = tiny_config(num_seeds=2, loop=loop, eval={"num_test_tasks": 16})
    agent = make_ppo(
        total_updates=128, learning_rate=3e-3, gamma=0.9, num_minibatches=2, anneal_lr=False
    )
    trainer = make_train(config, Components(env, RandomTeacher(env.task_space), agent))
    carry = trainer.jit_init_seeds()(trainer.seed_keys())
    # PPO's hyperparameters are leaves of its state: one program runs seed 0 with reward
    # scale 1 and seed 1 with 0.5.
    scales = jnp.array([1.0, 0.5])
    agent_state = carry.seed.agent_state
    agent_state = agent_state.replace(hyper=agent_state.hyper.replace(reward_scale=scales))
    carry = carry.replace(seed=carry.seed.replace(agent_state=agent_state))
    run_chunk = trainer.jit_run_chunk_seeds()
    for _ in range(trainer.schedule.num_chunks):
        carry, _ = run_chunk(carry)
    value = jax.vmap(lambda state: trainer.agent.value(state, jnp.ones((1, 1)))[0])
    # reward_scale / (1 - 0.9); a value that stopped at the time limit would be ~0.41 of it.
    np.testing.assert_allclose(value(carry.seed.agent_state), 10.0 * scales, rtol=0.1)
