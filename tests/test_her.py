"""HER relabelling on a hand-built bit-flipping episode, with hand-computed rewards."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.agents.her import sample_her
from acl.agents.replay import buffer_init, buffer_insert, empty_episode
from acl.core.errors import ConfigError
from envs.bit_flip import BitFlip

# n = 3, goal 111, start 000, actions flip bit 0, 1, 1:
#   s0 = 000 -> s1 = 100 -> s2 = 110 -> s3 = 100 (back to s1).
# The real goal is never reached, so every stored reward is -1.
STATES = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 0, 0]]
GOAL = [1, 1, 1]
ACTIONS = [0, 1, 1]
# Reward of transition t (s_t -> s_{t+1}) relabelled with the goal s_{t'}: 0 iff
# s_{t+1} == s_{t'}, worked out by hand from the states above.
EXPECTED = {
    (0, 1): 0.0,  # s1 = 100 vs 100
    (0, 2): -1.0,  # s1 = 100 vs 110
    (0, 3): 0.0,  # s1 = 100 vs s3 = 100: the same state reached again
    (1, 1): -1.0,  # s2 = 110 vs 100
    (1, 2): 0.0,
    (1, 3): -1.0,
    (2, 1): 0.0,  # s3 = 100 vs s1 = 100 ("episode" may pick a past state)
    (2, 2): -1.0,
    (2, 3): 0.0,
}


ENV = BitFlip(num_bits=3)  # one instance: it is a static (hashed by identity) jit argument


def hand_built_buffer(extra_short_episode: bool = False):
    env = ENV
    obs = jnp.array([s + GOAL for s in STATES], jnp.float32)  # [4, 6]
    ep = empty_episode(3, (6,), jnp.float32, (), jnp.int32).replace(
        obs=obs,
        action=jnp.array(ACTIONS, jnp.int32),
        reward=jnp.full((3,), -1.0),
    )
    episodes, lengths = [ep], [3]
    if extra_short_episode:
        # A 1-step episode 111 -> 011 with goal 000, in slot 1.
        short = empty_episode(3, (6,), jnp.float32, (), jnp.int32).replace(
            obs=jnp.array([[1, 1, 1, 0, 0, 0], [0, 1, 1, 0, 0, 0], [0] * 6, [0] * 6], jnp.float32),
            reward=jnp.array([-1.0, 0.0, 0.0]),
        )
        episodes.append(short)
        lengths.append(1)
    buffer = buffer_init(episodes[0], capacity=4)
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *episodes)
    buffer = _insert(buffer, stacked, jnp.array(lengths), jnp.ones(len(lengths), bool))
    return env, buffer


# One compiled function per (strategy, batch size), shared by the tests.
_insert = jax.jit(buffer_insert)
_sample = jax.jit(sample_her, static_argnums=(0, 3, 4))


def sample(strategy, batch_size=1024, k=4.0, seed=0, extra=False):
    env, buffer = hand_built_buffer(extra)
    batch = _sample(env, buffer, jax.random.PRNGKey(seed), batch_size, strategy, k / (k + 1))
    return jax.tree.map(np.asarray, batch)


def check_rewards_and_goals(batch):
    for i in range(batch.step.shape[0]):
        t, tp = int(batch.step[i]), int(batch.goal_state[i])
        np.testing.assert_array_equal(batch.obs[i, :3], STATES[t])
        np.testing.assert_array_equal(batch.next_obs[i, :3], STATES[t + 1])
        assert batch.action[i] == ACTIONS[t]
        if batch.relabelled[i]:
            assert batch.reward[i] == EXPECTED[(t, tp)]
            np.testing.assert_array_equal(batch.obs[i, 3:], STATES[tp])
            np.testing.assert_array_equal(batch.next_obs[i, 3:], STATES[tp])
        else:
            assert tp == -1 and batch.reward[i] == -1.0
            np.testing.assert_array_equal(batch.obs[i, 3:], GOAL)


def test_future_relabels_with_later_states_and_hand_computed_rewards():
    batch = sample("future")
    check_rewards_and_goals(batch)
    relabelled = batch.relabelled
    # Later in time: the goal state s_{t'} has t' >= t + 1 (at least the next state).
    assert (batch.goal_state[relabelled] > batch.step[relabelled]).all()
    assert (batch.goal_state[relabelled] <= 3).all()
    seen = set(zip(batch.step[relabelled].tolist(), batch.goal_state[relabelled].tolist()))
    assert seen == {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)}


def test_future_with_k4_relabels_four_fifths():
    batch = sample("future", batch_size=20_000, seed=1)
    share = batch.relabelled.mean()
    # Binomial(20000, 0.8): sd 0.0028; 5 sd either side.
    assert abs(share - 0.8) < 0.015, share
    # t' uniform on {t+1, ..., 3}: for t = 0 each of 1, 2, 3 about a third.
    first = batch.goal_state[batch.relabelled & (batch.step == 0)]
    for tp in (1, 2, 3):
        assert abs((first == tp).mean() - 1 / 3) < 0.04


def test_k_zero_relabels_nothing():
    batch = sample("future", k=0.0)
    assert not batch.relabelled.any()
    np.testing.assert_array_equal(batch.reward, -1.0)


def test_final_uses_the_last_state():
    batch = sample("final")
    check_rewards_and_goals(batch)
    assert (batch.goal_state[batch.relabelled] == 3).all()
    # s3 = 100: transitions 0 and 2 end there (reward 0), transition 1 does not.
    expected_final = {0: 0.0, 1: -1.0, 2: 0.0}
    for t, reward in expected_final.items():
        picked = batch.relabelled & (batch.step == t)
        assert picked.any() and (batch.reward[picked] == reward).all()


def test_episode_uses_any_state_of_the_episode_past_included():
    batch = sample("episode")
    check_rewards_and_goals(batch)
    relabelled = batch.relabelled
    seen = set(zip(batch.step[relabelled].tolist(), batch.goal_state[relabelled].tolist()))
    assert seen == set(EXPECTED)  # includes past states, e.g. (2, 1)


def test_none_keeps_the_stored_transitions():
    batch = sample("none")
    check_rewards_and_goals(batch)
    assert not batch.relabelled.any()


def test_goals_come_from_the_sampled_episode():
    """With two episodes in the buffer, a relabelled goal is a state of its own episode."""
    batch = sample("future", extra=True, seed=3)
    short = batch.slot == 1
    assert short.any() and (~short).any()
    relabelled = batch.relabelled & short
    # The 1-step episode: t = 0 only, goal s1 = 011, reward 0 (its achieved state).
    assert (batch.step[short] == 0).all() and (batch.goal_state[relabelled] == 1).all()
    np.testing.assert_array_equal(
        batch.obs[relabelled][:, 3:], np.tile([0, 1, 1], (relabelled.sum(), 1))
    )
    np.testing.assert_array_equal(batch.reward[relabelled], 0.0)
    np.testing.assert_array_equal(batch.reward[short & ~batch.relabelled], -1.0)


def test_unknown_strategy_is_a_config_error():
    env, buffer = hand_built_buffer()
    with pytest.raises(ConfigError, match="her_strategy"):
        sample_her(env, buffer, jax.random.PRNGKey(0), 4, "futur", 0.8)


class TerminatingBitFlip(BitFlip):
    """Bit flipping as if it ended on the goal (like the mazes): HER must then mark a
    relabelled transition terminal exactly where it reaches its new goal."""

    terminates_on_goal = True


def test_relabelled_termination_follows_the_new_goal_when_the_env_ends_on_goals():
    env = TerminatingBitFlip(num_bits=3)
    _, buffer = hand_built_buffer()
    batch = jax.tree.map(
        np.asarray,
        jax.jit(sample_her, static_argnums=(0, 3, 4))(
            env, buffer, jax.random.PRNGKey(5), 256, "future", 0.8
        ),
    )
    relabelled = batch.relabelled
    assert relabelled.any() and (~relabelled).any()
    # Reward 0 <=> the new goal reached <=> terminal; stored transitions stay non-terminal.
    np.testing.assert_array_equal(batch.terminated[relabelled], batch.reward[relabelled] == 0.0)
    assert (batch.terminated[relabelled]).any()
    assert not batch.terminated[~relabelled].any()
