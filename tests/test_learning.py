"""Learning tests (slow): PPO through the full curriculum loop reaches known returns."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.build import make_train
from acl.config import load_config, parse_config
from acl.loop.evaluation import run_episodes
from acl.loop.train import Trainer

pytestmark = pytest.mark.slow


def final_returns(trainer: Trainer, agent_states, episodes: int) -> np.ndarray:
    """Deterministic returns of each seed's final policy on the default task, [S, E]."""
    tasks = jnp.broadcast_to(
        trainer.env.task_space.default_task, (episodes, trainer.env.task_space.dim)
    )

    @jax.jit
    def per_seed(states):
        return jax.vmap(
            lambda s: run_episodes(trainer.env, trainer.agent, s, tasks, jax.random.PRNGKey(7))
        )(states)

    return np.asarray(per_seed(agent_states))


def test_ppo_solves_default_cartpole_in_500k_steps_on_4_of_5_seeds():
    # PureJaxRL's CartPole settings (PPO's defaults): 4 envs x 128 steps, lr 2.5e-4.
    config = parse_config(
        {
            "name": "cartpole_solve",
            "env": "cartpole",
            "teacher": "fixed",
            "agent": "ppo",
            "num_seeds": 5,
            "loop": {
                "num_envs": 4,
                "num_steps": 128,
                "total_env_steps": 500_000,
                "eval_every": 100_000,
            },
            "eval": {"num_test_tasks": 10},
        }
    )
    trainer = make_train(config)
    carry, _ = jax.jit(jax.vmap(trainer.train))(trainer.seed_keys())
    returns = final_returns(trainer, carry.seed.agent_state, episodes=16)
    means = returns.mean(axis=1)
    print("mean deterministic return per seed:", np.round(means, 1))
    assert (means >= 475).sum() >= 4, means


PENDULUM_UNTRAINED_BELOW = -1000.0
PENDULUM_TRAINED_ABOVE = -300.0


def test_ppo_learns_pendulum_swing_up():
    """Continuous actions: an untrained policy scores below -1000 on the default
    Pendulum task (it cannot swing up), the trained one above -300 (swings up and
    balances; a scripted energy-pumping controller averages about -150)."""
    config = load_config("experiments/configs/pendulum_fixed.yaml", num_seeds=3)
    trainer = make_train(config)
    keys = trainer.seed_keys()
    untrained = jax.jit(jax.vmap(trainer.init_agent))(keys)
    before = final_returns(trainer, untrained, episodes=16).mean(axis=1)
    carry, _ = jax.jit(jax.vmap(trainer.train))(keys)
    after = final_returns(trainer, carry.seed.agent_state, episodes=16).mean(axis=1)
    print(
        "pendulum return per seed, untrained:", np.round(before, 1), "trained:", np.round(after, 1)
    )
    assert (before < PENDULUM_UNTRAINED_BELOW).all(), before
    assert (after > PENDULUM_TRAINED_ABOVE).all(), after
