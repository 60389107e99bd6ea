"""Risk over sampled levels (acl.loop.evaluation.sampled_risk) with policies whose success per
level is known: the probe env's target is task > 0.5, reward 1 for the matching action."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.core.errors import ConfigError
from acl.core.risk import cvar
from acl.loop.evaluation import level_success, sampled_risk
from tests.probe_envs import MatchTargetDiscrete


class FixedAction:
    """Always action 0 (deterministic) or a fair coin (sampled), whatever it sees."""

    def __init__(self, coin: bool):
        self.coin = coin

    def initial_carry(self, n):
        return jnp.zeros((n,))

    def act(self, agent_state, obs, recurrent, key, deterministic):
        n = obs.shape[0]
        if self.coin:
            action = jax.random.bernoulli(key, 0.5, (n,)).astype(jnp.int32)
        else:
            action = jnp.zeros((n,), jnp.int32)
        return action, recurrent, None

    def env_action(self, action):
        return action


ENV = MatchTargetDiscrete()


def risk_of(coin: bool, seed: int, episodes: int, batch_size: int):
    """`sampled_risk` of a FixedAction policy on 2,000 levels of the probe env."""
    return sampled_risk(
        ENV,
        FixedAction(coin=coin),
        None,
        jax.random.PRNGKey(seed),
        num_levels=2000,
        episodes=episodes,
        batch_size=batch_size,
    )


def test_a_policy_that_solves_half_the_space_has_zero_risk_below_half():
    # Action 0 succeeds exactly on levels with task <= 0.5: the worst half all fail.
    risk = risk_of(coin=False, seed=0, episodes=2, batch_size=500)
    tasks = np.asarray(risk.levels[:, 0])
    np.testing.assert_array_equal(risk.measured_success, (tasks <= 0.5).astype(float))
    assert abs(risk.mean_success - 0.5) < 0.05
    assert risk.cvar[0.01] == 0.0 and risk.cvar[0.1] == 0.0
    assert risk.cvar[0.5] < 0.05


def test_ranking_and_measuring_seeds_are_independent():
    # A fair coin on every level: each level's true success is 0.5. Ranked and measured
    # on independent episodes, the worst-ranked levels measure about 0.5 again; ranked and
    # measured on the same episodes they would look far worse.
    risk = risk_of(coin=True, seed=1, episodes=4, batch_size=1000)
    assert not np.array_equal(risk.ranked_success, risk.measured_success)
    assert abs(risk.cvar[0.1] - 0.5) < 0.08
    same = cvar(risk.ranked_success, alphas=(0.1,), same_seed=True)[0.1]
    assert same < 0.2  # about 0.09: every level with 0 of 4, some with 1 of 4
    again = risk_of(coin=True, seed=1, episodes=4, batch_size=1000)
    np.testing.assert_array_equal(again.measured_success, risk.measured_success)


def test_batches_must_divide_the_levels():
    with pytest.raises(ConfigError, match="multiple of batch_size"):
        level_success(
            ENV,
            FixedAction(coin=False),
            None,
            jnp.zeros((10, 1)),
            jax.random.PRNGKey(0),
            episodes=1,
            batch_size=4,
        )
