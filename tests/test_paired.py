"""PAIRED (acl.teachers.paired): the regret on hand-made batches, the adversary's levels,
the update of the adversary and the antagonist, config errors, the shared harness and
the curriculum loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from acl.agents.base import Agent
from acl.build import make_agent
from acl.core.errors import ConfigError
from acl.core.types import Transition
from acl.loop.rollout import play
from acl.teachers import TEACHERS
from acl.teachers.base import UpdateContext
from acl.teachers.paired import EpisodeReturns, episode_returns, make_paired, regret
from envs.maze import Maze, is_valid_level
from tests.teacher_harness import RolloutExtras, check_teacher

KEY = jax.random.PRNGKey(0)
"""Teachers' update key: these teachers keep their own keys and ignore it."""

MAZE = Maze(height=6, width=6, max_episode_steps=12, num_walls=5)
TINY = {"hidden_sizes": (16,), "update_epochs": 1, "num_minibatches": 1}
"""Tiny learners keep the compiles short."""
WALL_STEPS = 6


def tiny_paired(space=MAZE.task_space, **kwargs):
    options = {
        "adversary_agent": "ppo",
        "adversary_kwargs": TINY,
        "antagonist_kwargs": TINY,
        "num_wall_steps": WALL_STEPS,
        "noise_dim": 4,
        **kwargs,
    }
    return make_paired(space, env=MAZE, play=play, make_agent=make_agent, **options)


def hand_rollout(reward, done) -> Transition:
    """A protagonist rollout [T, N] with only what PAIRED reads (rewards and dones)."""
    reward = jnp.asarray(reward, jnp.float32)
    shape = reward.shape
    return Transition(
        obs=jnp.zeros(shape + (1,)),
        action=jnp.zeros(shape, jnp.int32),
        reward=reward,
        terminated=jnp.asarray(done, bool),
        done=jnp.asarray(done, bool),
        next_obs=jnp.zeros(shape + (1,)),
        loss_mask=jnp.ones(shape),
        extras=RolloutExtras(value=jnp.zeros(shape)),
    )


@struct.dataclass
class LinearExtras:
    value: jax.Array


class LinearAgent(Agent):
    """The agent contract at a fraction of PPO's compile cost: a linear softmax policy
    (uniform at init) taking one policy-gradient step per update. For the tests of the
    teacher's plumbing (sampling; the harness: jit, vmap over seeds, shapes, masked
    garbage); the PPO learners have the slow update tests and the loop test."""

    def init(self, key, obs_space, action_space):
        return jnp.zeros((obs_space.shape[0], action_space.n))

    def initial_carry(self, n, tasks=None):
        return jnp.zeros((n, 0))

    def env_action(self, action):
        return action

    def act(self, state, obs, carry, key, deterministic=False):
        action = jax.random.categorical(key, obs @ state)
        return action, carry, LinearExtras(value=jnp.zeros(obs.shape[:1]))

    def update(self, state, batch, key, axis_name=None):
        def loss(weights):
            log_p = jax.nn.log_softmax(batch.obs @ weights)
            taken = jnp.take_along_axis(log_p, batch.action[..., None], -1)[..., 0]
            return -(taken * batch.reward).mean()

        value, grad = jax.value_and_grad(loss)(state)
        return state - 0.1 * grad, {"loss": value}


# -- regret on hand-made batches -------------------------------------------------------------


def returns(values, mask) -> EpisodeReturns:
    return EpisodeReturns(jnp.asarray(values, jnp.float32), jnp.asarray(mask, bool))


def test_regret_is_max_antagonist_minus_mean_protagonist_per_level():
    # [K = 3 episode slots, N = 4 levels]; NaN in masked slots must not leak.
    nan = np.nan
    protagonist = returns(
        [[0.2, 0.9, nan, 0.5], [0.4, 0.7, nan, nan], [nan, 0.8, nan, nan]],
        [[1, 1, 0, 1], [1, 1, 0, 0], [0, 1, 0, 0]],
    )
    antagonist = returns(
        [[0.1, 0.3, 0.6, nan], [0.9, 0.2, nan, nan], [0.5, nan, 0.4, nan]],
        [[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 1, 0]],
    )
    # level 0: 0.9 - 0.3; level 1: 0.3 - 0.8 (< 0); level 2: no protagonist episode;
    # level 3: no antagonist episode.
    both = jax.jit(jax.vmap(regret, in_axes=(None, None, 0)))  # one compile, traced clip
    clipped, raw = both(protagonist, antagonist, jnp.asarray([True, False]))
    np.testing.assert_allclose(clipped, [0.6, 0.0, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(raw, [0.6, -0.5, 0.0, 0.0], atol=1e-6)


def test_episode_returns_sum_each_episode_since_the_previous_end():
    # Level 0: episodes end at t = 1 and t = 3; level 1: one unfinished episode.
    reward = [[0.0, 1.0], [0.5, 0.0], [0.25, 2.0], [0.25, 0.0]]
    done = [[0, 0], [1, 0], [0, 0], [1, 0]]
    episodes = jax.jit(episode_returns)(jnp.asarray(reward), jnp.asarray(done, bool))
    assert episodes.mask.shape == (4, 2)
    np.testing.assert_array_equal(episodes.mask[:, 1], False)
    np.testing.assert_allclose(episodes.returns[:, 0][np.asarray(episodes.mask[:, 0])], [0.5, 0.5])


# -- the teacher -------------------------------------------------------------------------------


def test_samples_well_formed_levels():
    # A uniform random adversary (LinearAgent's zero weights) also aims walls at the goal
    # and the agent, which the editor must refuse. PPO adversaries: the slow update tests.
    n = 8
    teacher = tiny_paired(
        adversary_agent=LinearAgent(),
        adversary_kwargs=None,
        antagonist_agent=LinearAgent(),
        antagonist_kwargs=None,
    )

    @jax.jit
    def run(key):
        state = teacher.init(key, teacher.default_params())
        return teacher.sample(state, jax.random.PRNGKey(1), n)

    state, tasks, info = run(jax.random.PRNGKey(0))
    assert tasks.shape == (n, MAZE.task_dim) and bool(info.train_on.all())
    levels = jax.vmap(MAZE.task_to_params)(tasks)
    assert bool(jax.vmap(is_valid_level)(levels).all())
    assert int(levels.wall_map.sum((1, 2)).max()) <= WALL_STEPS
    # The level handed out is the map the adversary saw after its last step: one goal,
    # one agent, on the cells of the level, and its walls.
    grid, time, _ = teacher.editor.split_observation(state.adversary_batch.next_obs[-1])
    np.testing.assert_array_equal(time, WALL_STEPS + 2)
    assert bool((grid[..., 2].sum((1, 2)) == 1).all() and (grid[..., 3].sum((1, 2)) == 1).all())
    np.testing.assert_array_equal(grid[..., 0] > 0, levels.wall_map)
    rows = jnp.arange(n)
    np.testing.assert_array_equal(grid[rows, levels.goal_pos[:, 0], levels.goal_pos[:, 1], 2], 1)
    np.testing.assert_array_equal(grid[rows, levels.agent_pos[:, 0], levels.agent_pos[:, 1], 3], 1)
    # The task round trip is exact (cell centres).
    np.testing.assert_allclose(MAZE.params_to_task(levels), tasks, atol=1e-6)
    # The trajectory ends in a terminal step, with no reward until the update.
    batch = state.adversary_batch
    assert batch.reward.shape == (WALL_STEPS + 2, n)
    assert bool(batch.terminated[-1].all()) and not bool(batch.done[:-1].any())
    np.testing.assert_array_equal(batch.reward, 0.0)


RECURRENT = {"mlp_sizes": (16,), "lstm_size": 16, "head_sizes": (16,), "update_epochs": 1}


@pytest.mark.slow  # compiles two rollouts and two PPO updates (30-70 s on 2 cores)
@pytest.mark.parametrize("adversary", ["ppo", "recurrent_ppo"])
def test_update_trains_adversary_and_antagonist_on_the_regret(adversary):
    kwargs = TINY if adversary == "ppo" else RECURRENT
    n, steps = 4, MAZE.max_episode_steps
    teacher = tiny_paired(adversary_agent=adversary, adversary_kwargs=kwargs, num_envs=n)
    # The protagonist never reaches the goal and ends one episode: regret = the
    # antagonist's best return >= 0.
    done = jnp.zeros((steps, n), bool).at[-1].set(True)
    rollout = hand_rollout(jnp.zeros((steps, n)), done)

    @jax.jit
    def run(key):
        state = teacher.init(key, teacher.default_params())
        state, tasks, _ = teacher.sample(state, jax.random.PRNGKey(1), n)
        after = teacher.update(
            state, key, tasks, None, jnp.int32(0), UpdateContext(rollout=rollout)
        )
        return state, after, teacher.snapshot(after)

    state, after, snapshot = run(jax.random.PRNGKey(0))
    # Regret is the adversary's only reward, at its terminal last step.
    reward = np.asarray(after.adversary_batch.reward)
    assert (reward[:-1] == 0).all() and (reward[-1] >= 0).all()
    np.testing.assert_allclose(reward[-1].mean(), snapshot["regret"], rtol=1e-5)
    np.testing.assert_allclose(snapshot["protagonist_return"], 0.0)
    np.testing.assert_allclose(snapshot["antagonist_max_return"], snapshot["regret"], rtol=1e-5)
    for name in ("adversary", "antagonist"):
        old, new = getattr(state, name).params, getattr(after, name).params
        changed = jax.tree.map(lambda a, b: bool((a != b).any()), old, new)
        assert any(jax.tree.leaves(changed)), f"{name} params did not change"
    assert int(after.updates) == 1 and float(snapshot["scored_share"]) == 1.0
    assert snapshot["levels"].shape == (4, MAZE.task_dim)
    assert 0.0 <= float(snapshot["num_walls"]) <= WALL_STEPS


def test_is_registered_and_builds_from_config_keys():
    teacher = TEACHERS.get("paired")(
        MAZE.task_space,
        env=MAZE,
        play=play,
        make_agent=make_agent,
        antagonist_kwargs=TINY,
        clip_regret=False,
        num_envs=4,
    )
    assert not bool(teacher.default_params().clip_regret)
    assert teacher.editor.num_wall_steps == 50  # dcd's default
    assert type(teacher.adversary).__name__ == "RecurrentPPO"  # dcd's LSTM adversary
    # The antagonist copies the protagonist when the loop names it.
    copy = make_paired(
        MAZE.task_space,
        env=MAZE,
        play=play,
        make_agent=make_agent,
        adversary_agent="ppo",
        student_agent="ppo",
        student_kwargs={**TINY, "total_updates": 7},
    )
    assert copy.antagonist.config.hidden_sizes == (16,)
    assert copy.antagonist.config.total_updates == 7 and copy.adversary.config.total_updates == 7
    assert copy.adversary.hyper.learning_rate == pytest.approx(1e-4)


@pytest.mark.slow
def test_recurrent_adversary_sees_the_map_through_a_conv_and_the_time_step_embedded():
    # dcd's adversary: a conv over the editor's map, an embedding of the time step t and
    # the noise, then the LSTM. Tiny sizes keep the compile short.
    kwargs = {"conv_features": 4, "lstm_size": 8, "head_sizes": (8,)}
    teacher = tiny_paired(adversary_agent="recurrent_ppo", adversary_kwargs=kwargs, num_envs=2)
    adversary, editor = teacher.adversary, teacher.editor
    state = adversary.init(KEY, editor.observation_space(), editor.action_space())
    assert type(adversary.network.encoder).__name__ == "GridTimeEncoder"
    leaves = jax.tree_util.tree_flatten_with_path(state.params)[0]
    named = {jax.tree_util.keystr(path): leaf for path, leaf in leaves}
    tables = [leaf for name, leaf in named.items() if name.endswith("['embedding']")]
    assert [t.shape for t in tables] == [(WALL_STEPS + 3, 10)]  # t in 0 .. WALL_STEPS + 2
    kernels = [leaf.shape for name, leaf in named.items() if leaf.ndim == 4]
    assert kernels == [(3, 3, 4, 4)]  # 3x3 over the map's 4 channels, 4 filters

    obs, _ = editor.reset(jax.random.PRNGKey(3))
    map_size = editor.num_cells * 4
    later = obs.at[map_size].set(3.0)  # the same map and noise at t = 3
    np.testing.assert_array_equal(editor.split_observation(later)[1], 3)

    def outputs(params, obs):
        """The adversary's next LSTM state and value on one observation."""
        carry = adversary.initial_carry(1)
        run = state.replace(params=params)
        _, carry, extras = adversary.act(run, obs[None], carry, KEY, deterministic=True)
        return np.concatenate([carry[0][0], carry[1][0], extras.value])

    assert not np.allclose(outputs(state.params, obs), outputs(state.params, later))
    zeroed = jax.tree_util.tree_map_with_path(
        lambda path, x: jnp.zeros_like(x) if "embedding" in jax.tree_util.keystr(path) else x,
        state.params,
    )
    np.testing.assert_array_equal(outputs(zeroed, obs), outputs(zeroed, later))
    # The noise still matters, as in dcd.
    noisier = obs.at[map_size + 1].set(0.9 - obs[map_size + 1])
    assert not np.allclose(outputs(zeroed, obs), outputs(zeroed, noisier))
    # Without kwargs the conv has dcd's 128 filters.
    default = tiny_paired(adversary_agent="recurrent_ppo", adversary_kwargs=None, num_envs=2)
    assert default.adversary.config.conv_features == 128


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"env": None}, "needs env maze"),
        ({"adversary_agent": "ppx"}, "did you mean 'ppo'"),
        ({"antagonist_kwargs": {"hiden_sizes": [8]}}, "hiden_sizes"),
        ({"adversary_kwargs": {"update_epochs": 0}}, "update_epochs"),
        ({"clip_regret": "yes"}, "clip_regret"),
        ({"snapshot_levels": -1}, "snapshot_levels"),
        ({"num_wall_steps": -2}, "num_wall_steps"),
        ({"antagonist_agent": "dqn", "adversary_agent": "ppo"}, "num_envs"),
        ({"adversary_agent": "recurrent_ppo"}, "num_envs"),
        ({"adversary_agent": object()}, "an agent name or an Agent"),
        ({"make_agent": None}, "RunContext.make_agent"),
        ({"adversary_agent": LinearAgent(), "adversary_kwargs": {"a": 1}}, "only for a named"),
    ],
)
def test_config_errors(kwargs, message):
    options = {"env": MAZE, "play": play, "make_agent": make_agent, **kwargs}
    with pytest.raises(ConfigError, match=message):
        make_paired(MAZE.task_space, **options)


def test_task_space_must_hold_the_mazes_levels():
    with pytest.raises(ConfigError, match="dimensions"):
        make_paired(Maze(height=5, width=5, num_walls=5).task_space, env=MAZE)


def test_update_without_a_rollout_is_an_error():
    with pytest.raises(ValueError, match="rollout"):
        tiny_paired().update(None, KEY, jnp.zeros((4, MAZE.task_dim)), None, jnp.int32(0))


@pytest.mark.slow  # compiles of init, sample and update, jitted and vmapped over seeds
def test_passes_teacher_harness():
    def make(space):
        # num_envs = batch: init sizes the state as sample does (one compile of sample).
        return tiny_paired(
            space,
            adversary_agent=LinearAgent(),
            adversary_kwargs=None,
            antagonist_agent=LinearAgent(),
            antagonist_kwargs=None,
            num_envs=4,
        )

    check_teacher(
        make,
        rounds=2,
        batch=4,
        num_seeds=2,
        space=MAZE.task_space,
    )


@pytest.mark.slow  # the whole loop with three learners: one compile of init and a chunk
def test_runs_in_the_loop_vmapped_over_seeds():
    from acl.build import make_train
    from acl.config import parse_config

    config = parse_config(
        {
            "name": "paired_tiny",
            "env": {"name": "maze", "height": 6, "width": 6, "max_episode_steps": 12},
            "teacher": {
                "name": "paired",
                "adversary_agent": "ppo",
                "adversary_kwargs": {"hidden_sizes": [16], "update_epochs": 1},
                "antagonist_kwargs": {**TINY, "hidden_sizes": [16]},
                "num_wall_steps": WALL_STEPS,
                "noise_dim": 4,
                "num_envs": 4,
            },
            "agent": {"name": "ppo", **TINY, "hidden_sizes": [16]},
            "loop": {
                "num_envs": 4,
                "num_steps": 12,
                "mode": "batch",
                "total_env_steps": 96,
                "eval_every": 96,
            },
            "eval": {"num_test_tasks": 2},
            "num_seeds": 2,
        }
    )
    trainer = make_train(config)
    carry = trainer.jit_init_seeds()(trainer.seed_keys())
    carry, metrics = trainer.jit_run_chunk_seeds()(carry)
    snapshot = metrics.teacher_snapshot
    assert snapshot["levels"].shape == (2, 4, MAZE.task_dim)
    assert np.isfinite(np.asarray(snapshot["regret"])).all()
    np.testing.assert_array_equal(carry.seed.teacher_state.updates, 2)
    np.testing.assert_array_equal(snapshot["scored_share"], 1.0)
