"""Recurrent PPO: sequence replay against the rollout, the maze's conv encoder, the no-op on
batches without anything to learn from (PPO's too), and a memory probe feed-forward PPO
cannot solve."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces

from acl.agents import AGENTS
from acl.agents.ppo import PPOExtras, make_ppo
from acl.agents.recurrent_ppo import episode_starts, make_recurrent_ppo
from acl.build import make_train
from acl.core.errors import ConfigError
from acl.core.types import Transition
from acl.loop.rollout import collect, start_slots
from acl.loop.train import Components
from acl.teachers.random import RandomTeacher
from envs.maze import Maze
from tests.conftest import tiny_config
from tests.probe_envs import RecallCue

NUM_ENVS, NUM_STEPS = 4, 7  # 7 steps of 3-step episodes: ends inside, a start mid-episode


@pytest.fixture(scope="module")
def maze_student():
    """The maze student, small, with its jitted rollout and update: one compile each."""
    env = Maze(max_episode_steps=3)
    agent = AGENTS.get("recurrent_ppo")(
        lstm_size=8, head_sizes=(), update_epochs=1, num_minibatches=1
    )
    agent.bind(env, NUM_ENVS)
    state = agent.init(jax.random.PRNGKey(0), env.observation_space(), env.action_space())

    @jax.jit
    def second_batch(state, train_on):
        """The second of two consecutive rollouts, which starts mid-episode."""
        tasks = jax.random.uniform(jax.random.PRNGKey(1), (NUM_ENVS, env.task_space.dim))
        slots = start_slots(env, agent, jax.random.PRNGKey(2), tasks, jnp.full(NUM_ENVS, train_on))

        def rollout(slots, key):
            slots, batch, _ = collect(env, agent, state, slots, key, None, None, NUM_STEPS)
            return slots, batch

        _, batches = jax.lax.scan(rollout, slots, jax.random.split(jax.random.PRNGKey(3)))
        return jax.tree.map(lambda x: x[1], batches)

    return agent, state, second_batch, jax.jit(agent.update)


def leaves_equal(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.mark.slow
def test_the_maze_student_has_a_conv_encoder_and_direction_embedding(maze_student):
    agent, state, second_batch, update = maze_student
    encoder = state.params["params"]["encoder"]
    assert encoder["Conv_0"]["kernel"].shape == (3, 3, 3, 16)
    assert encoder["Embed_0"]["embedding"].shape == (4, 5)
    batch = second_batch(state, True)
    assert batch.extras.value.shape == (NUM_STEPS, NUM_ENVS)
    assert batch.extras.carry[0].shape == (NUM_STEPS, NUM_ENVS, 8)
    new_state, metrics = update(state, batch, jax.random.PRNGKey(1))
    assert all(np.isfinite(v) for v in jax.tree.leaves(metrics))
    assert not leaves_equal(new_state.params, state.params)


def test_patch_conv_is_nn_conv_with_its_parameters_and_values():
    import flax.linen as nn

    from acl.agents.recurrent_ppo import PatchConv

    image = jax.random.normal(jax.random.PRNGKey(0), (2, 5, 7, 3))
    ours = PatchConv(4, 3)
    params = ours.init(jax.random.PRNGKey(1), image)
    reference = nn.Conv(4, (3, 3), padding="VALID")
    assert jax.tree.map(jnp.shape, params) == jax.tree.map(
        jnp.shape, reference.init(jax.random.PRNGKey(1), image)
    )
    params = jax.tree.map(lambda p: p + 0.1, params)  # a bias that is not zero
    out = ours.apply(params, image)
    assert out.shape == (2, 3, 5, 4)
    np.testing.assert_allclose(out, reference.apply(params, image), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_replay_gives_the_rollouts_log_probs_across_episode_ends(maze_student):
    agent, state, second_batch, update = maze_student
    batch = second_batch(state, True)
    first_carry = jax.tree.map(lambda c: c[0], batch.extras.carry)
    assert batch.done[:-1].any() and np.abs(first_carry[0]).max() > 0

    replay = jax.jit(agent.replay)
    starts = episode_starts(batch.done)
    _, out, value, _ = replay(state.params, first_carry, batch.obs, starts)
    log_prob, _ = agent.actions.log_prob_entropy(out, None, batch.action)
    np.testing.assert_allclose(log_prob, batch.extras.log_prob, atol=1e-6)
    np.testing.assert_allclose(value, batch.extras.value, atol=1e-6)
    # Carrying memory across an episode end would not reproduce the rollout.
    _, _, value, _ = replay(state.params, first_carry, batch.obs, jnp.zeros_like(starts))
    assert np.abs(value - batch.extras.value).max() > 1e-3

    # With a zero step size the shuffled sequences replay to ratio 1 from their carries.
    frozen = state.replace(hyper=state.hyper.replace(learning_rate=0.0))
    _, metrics = update(frozen, batch, jax.random.PRNGKey(7))
    assert float(metrics["approx_kl"]) < 1e-7
    assert float(metrics["clip_frac"]) == 0.0
    assert float(metrics["grad_norm"]) > 0


def test_recurrent_ppo_learns_nothing_from_a_batch_without_loss_mask(maze_student):
    agent, state, second_batch, update = maze_student
    new_state, _ = update(state, second_batch(state, False), jax.random.PRNGKey(1))
    assert leaves_equal(new_state.params, state.params)
    assert leaves_equal(new_state.opt_state, state.opt_state)
    # No gradient applied, so the annealing schedule's clock stays (JaxUED's count).
    assert int(new_state.update_count) == 0
    learnt, _ = update(state, second_batch(state, True), jax.random.PRNGKey(1))
    assert int(learnt.update_count) == 1


def test_ppo_learns_nothing_from_a_batch_without_loss_mask():
    # The maze student's head shapes (8 -> 3, 8 -> 1): their initialisers compile once.
    agent = make_ppo(hidden_sizes=(), update_epochs=1, num_minibatches=1, total_updates=4)
    state = agent.init(jax.random.PRNGKey(0), spaces.Box(0.0, 1.0, (8,)), spaces.Discrete(3))
    rng = np.random.default_rng(0)
    steps = (2, 4)
    batch = Transition(
        obs=rng.random(steps + (8,), np.float32),
        action=rng.integers(0, 3, steps),
        reward=rng.random(steps, np.float32),
        terminated=np.ones(steps, bool),
        done=np.ones(steps, bool),
        next_obs=np.zeros(steps + (8,), np.float32),
        loss_mask=np.zeros(steps, bool),
        extras=PPOExtras(log_prob=np.full(steps, -0.69, np.float32), value=np.zeros(steps)),
    )
    update = jax.jit(agent.update)
    for train_on in (False, True):
        masked = batch.replace(loss_mask=np.full(steps, train_on))
        new_state, _ = update(state, masked, jax.random.PRNGKey(1))
        assert leaves_equal(new_state.params, state.params) == (not train_on)
        assert leaves_equal(new_state.opt_state, state.opt_state) == (not train_on)
        assert int(new_state.update_count) == int(train_on)


def test_recurrent_ppo_config_errors():
    agent = make_recurrent_ppo(num_minibatches=3)
    with pytest.raises(ConfigError, match="whole sequences"):
        agent.bind(RecallCue(), 4)
    with pytest.raises(ConfigError, match="image observation"):
        make_recurrent_ppo(encoder="conv").bind(RecallCue(), 4)
    with pytest.raises(ConfigError, match="encoder must be"):
        make_recurrent_ppo(encoder="cnn")
    assert make_recurrent_ppo().hyper.learning_rate == pytest.approx(1e-4)
    assert make_recurrent_ppo(gamma=0.9).hyper.gae_lambda == pytest.approx(0.98)


def train_recall(agent_name: str, agent_kwargs: dict):
    loop = {"num_envs": 16, "num_steps": 8, "total_env_steps": 4096, "eval_every": 2048}
    config = tiny_config(num_seeds=2, loop=loop, eval={"num_test_tasks": 16})
    env = RecallCue()
    updates = loop["total_env_steps"] // (loop["num_envs"] * loop["num_steps"])
    agent = AGENTS.get(agent_name)(total_updates=updates, **agent_kwargs)
    trainer = make_train(config, Components(env, RandomTeacher(env.task_space), agent))
    _, metrics = jax.jit(jax.vmap(trainer.train))(trainer.seed_keys())
    cues = trainer.evaluation.test_tasks[:, 0] > 0.5
    return metrics, max(cues.mean(), 1 - cues.mean())


@pytest.mark.slow
def test_recurrent_ppo_remembers_a_cue_feed_forward_ppo_cannot():
    common = {"learning_rate": 3e-3, "update_epochs": 4, "num_minibatches": 2, "ent_coef": 0.0}
    small = {"lstm_size": 16, "mlp_sizes": (16,), "head_sizes": (16,)}
    recurrent, _ = train_recall("recurrent_ppo", {**small, **common})
    np.testing.assert_array_equal(recurrent.eval_pct_mastered[:, -1], 100.0)
    feed_forward, best_guess = train_recall("ppo", {"hidden_sizes": (16,), **common})
    # At the answer step its observation is the same for both cues: one answer for all.
    assert (feed_forward.eval_pct_mastered[:, -1] <= 100.0 * best_guess).all()
