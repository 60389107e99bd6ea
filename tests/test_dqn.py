"""DQN (+HER) through the curriculum loop: a probe it must solve, determinism, bit flipping."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.agents import AGENTS
from acl.agents.dqn import DQN, greedy_success_rate, make_dqn
from acl.build import make_train
from acl.config import parse_config
from acl.core.errors import ConfigError
from acl.loop.train import Components
from acl.teachers.random import RandomTeacher
from envs.bit_flip import BitFlip
from tests.conftest import tiny_config
from tests.probe_envs import MatchTargetDiscrete, MatchTargetOneHot

PROBE_LOOP = {"num_envs": 8, "num_steps": 4, "total_env_steps": 2048, "eval_every": 512}
PROBE_AGENT = {
    "hidden_sizes": [32],
    "batch_size": 32,
    "gradient_steps": 8,
    "target_update_every": 8,
    "learning_rate": 3e-3,
    "buffer_capacity": 256,
    "her_strategy": "none",
    "epsilon_decay_steps": 512,
    "tau": 0.0,
}


@pytest.fixture(scope="module")
def probe():
    """DQN without HER on the one-step six-action probe, 3 seeds, compiled once."""
    env = MatchTargetOneHot()
    config = tiny_config(num_seeds=3, loop=PROBE_LOOP, eval={"num_test_tasks": 16})
    agent = make_dqn(**PROBE_AGENT)
    trainer = make_train(config, Components(env, RandomTeacher(env.task_space), agent))
    train = jax.jit(jax.vmap(trainer.train)).lower(trainer.seed_keys()).compile()
    carry, metrics = train(trainer.seed_keys())
    return trainer, train, carry, metrics


@pytest.mark.slow
def test_dqn_solves_the_discrete_probe_that_an_untrained_agent_fails(probe):
    trainer, _, carry, metrics = probe
    # An untrained greedy policy gets some of the 6 targets right by chance, all of them
    # almost never ((1/6)^6 for a random net), so 100% on the test set needs learning.
    obs = jnp.eye(6)  # the observation of each target

    def greedy_correct(state):
        action, _, _ = trainer.agent.act(state, obs, None, jax.random.PRNGKey(0), True)
        return (action == jnp.arange(6)).sum()

    correct = jax.jit(jax.vmap(greedy_correct))
    untrained = np.asarray(correct(jax.jit(jax.vmap(trainer.init_agent))(trainer.seed_keys())))
    assert (untrained < 6).all(), untrained
    np.testing.assert_array_equal(correct(carry.seed.agent_state), 6)
    targets = np.floor(np.asarray(trainer.evaluation.test_tasks[:, 0]) * 6)
    assert len(set(targets.tolist())) >= 4
    np.testing.assert_array_equal(metrics.eval_pct_mastered[:, -1], 100.0)
    # HER off: nothing relabelled; epsilon decayed to its end value.
    np.testing.assert_array_equal(metrics.agent_metrics["relabelled"], 0.0)
    np.testing.assert_allclose(metrics.agent_metrics["epsilon"][:, -1], 0.05, atol=1e-6)


@pytest.mark.slow
def test_dqn_is_deterministic_per_seed(probe):
    trainer, train, _, metrics = probe
    _, again = train(trainer.seed_keys())
    for a, b in zip(jax.tree.leaves(metrics), jax.tree.leaves(again)):
        np.testing.assert_array_equal(a, b)
    # Different seeds learn differently (losses are not copies of each other).
    assert not np.array_equal(metrics.loss[0], metrics.loss[1])


def test_dqn_is_registered_and_checks_its_config():
    assert "dqn" in AGENTS.names()
    assert isinstance(AGENTS.get("dqn")(her_strategy="none"), DQN)
    with pytest.raises(ConfigError, match="her_strategy"):
        make_dqn(her_strategy="futur")
    with pytest.raises(ConfigError, match="batch_size"):
        make_dqn(batch_size=0)
    with pytest.raises(ConfigError, match="learning_rate"):
        make_dqn(learning_rate="fast")
    # HER needs a goal env; the probe is not one.
    config = tiny_config(loop=PROBE_LOOP)
    env = MatchTargetDiscrete()
    with pytest.raises(ConfigError, match="GoalTaskEnv"):
        make_train(config, Components(env, RandomTeacher(env.task_space), make_dqn()))
    with pytest.raises(ConfigError, match="buffer_capacity"):
        make_train(
            config,
            Components(
                env, RandomTeacher(env.task_space), make_dqn(her_strategy="none", buffer_capacity=2)
            ),
        )


@pytest.mark.slow
def test_dqn_her_solves_bit_flipping_10_bits_on_3_of_3_seeds():
    """>= 90% greedy success on 100 evaluation goals within 100k env steps per seed."""
    config = parse_config(
        {
            "name": "bit_flip_10_her",
            "env": {"name": "bit_flip", "num_bits": 10},
            "teacher": "random",
            "agent": {"name": "dqn", "epsilon_start": 0.2, "epsilon_end": 0.02},
            "loop": {
                "num_envs": 16,
                "num_steps": 10,
                "total_env_steps": 96_000,
                "eval_every": 9_600,
            },
            "eval": {"num_test_tasks": 100},
            "num_seeds": 3,
        }
    )
    trainer = make_train(config)
    carry, metrics = jax.jit(jax.vmap(trainer.train))(trainer.seed_keys())
    final = np.asarray(metrics.eval_pct_mastered[:, -1])
    assert (final >= 90.0).all(), metrics.eval_pct_mastered
    assert int(metrics.env_steps[0, -1]) <= 100_000
    # The helper agrees with the loop's evaluation on the same goals and starts.
    state = jax.tree.map(lambda x: x[0], carry.seed.agent_state)
    rate = greedy_success_rate(
        trainer.env,
        trainer.agent,
        state,
        jnp.asarray(trainer.evaluation.test_tasks),
        trainer.evaluation.key,
    )
    assert float(rate) * 100 == pytest.approx(final[0])
    assert isinstance(trainer.env, BitFlip)
