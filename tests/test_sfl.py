"""Sampling For Learnability (acl/teachers/sfl.py): the learnability buffer, the
buffer/fresh split, the refresh period, the shared harness and a run through
experiments.run."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.agents import AGENTS
from acl.core.errors import ConfigError
from acl.core.spaces import Box
from acl.core.types import Transition
from acl.loop.rollout import play
from acl.teachers import TEACHERS
from acl.teachers.base import RunContext, UpdateContext
from acl.teachers.sfl import episode_successes, learnability, top_learnability
from envs import ENVS
from envs.base import TaskEnv
from tests.teacher_harness import check_teacher, feedback

# -- a fake env and a fake deterministic rollout ----------------------------------------

STEPS = 10
"""Rollout steps of the fake play: ten one-step episodes per level."""


class LevelEnv(TaskEnv):
    """A one-number level in [0, 1] (no generator: SFL draws uniform levels); an episode
    is one step and succeeds when its return beats 0.5."""

    name = "one_number_level"
    task_space = Box(low=(0.0,), high=(1.0,), names=("p",))
    success_threshold = 0.5
    max_episode_steps = 1


def true_rate(levels):
    """The fake play's success rate on levels [..., 1]: the level rounded to tenths."""
    return jnp.round(levels[..., 0] * STEPS) / STEPS


def fake_play(env, agent, agent_state, tasks, num_steps, reset_key, rollout_key):
    """Ten one-step episodes on level x, the first round(10 x) of them successes (reward
    1), the rest failures (reward 0); levels below 0.05 finish no episode at all."""
    del env, agent, agent_state, reset_key, rollout_key
    t = jnp.arange(num_steps)[:, None]
    wins = jnp.round(tasks[:, 0] * STEPS)[None, :]
    finishes = jnp.broadcast_to(tasks[None, :, 0] >= 0.05, (num_steps, tasks.shape[0]))
    shape = (num_steps, tasks.shape[0])
    zeros = jnp.zeros(shape)
    batch = Transition(
        obs=zeros,
        action=zeros,
        reward=(t < wins).astype(jnp.float32),
        terminated=finishes,
        done=finishes,
        next_obs=zeros,
        loss_mask=jnp.ones(shape),
        extras=None,
    )
    return None, batch


SMALL = dict(num_batches=2, batch_size=16, rollout_steps=STEPS, num_to_save=5)


def fake_sfl(**config):
    context = RunContext(env=LevelEnv(), agent=object(), play=fake_play)
    return TEACHERS.get("sfl")(task_space=LevelEnv.task_space, context=context, **config)


STUDENT = jnp.zeros(())
"""Any agent state: the fake play ignores it."""
KEY = jax.random.PRNGKey(0)


# -- 1. the buffer holds the most learnable levels ---------------------------------------


def test_episode_successes_count_finished_episodes_only():
    # Instance 0: episodes of returns 1 (success) and 0 (failure), then an unfinished 1.
    # Instance 1: one episode of return 2 (two rewards), a success.
    reward = jnp.array([[1.0, 1.0], [0.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    done = jnp.array([[True, False], [False, True], [True, False], [False, False]])
    successes, episodes = episode_successes(reward, done, LevelEnv().is_success)
    np.testing.assert_array_equal(successes, [1.0, 1.0])
    np.testing.assert_array_equal(episodes, [2.0, 1.0])


def test_top_learnability_keeps_the_levels_of_highest_p_times_one_minus_p():
    rates = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 0.3, 0.6, 0.45, 0.2, 0.8])
    episodes = np.full(10, 20.0)
    episodes[2] = 0.0  # the p = 0.5 level finished no episode: learnability 0
    levels = np.arange(10.0)[:, None]
    p, score = learnability(jnp.asarray(rates * episodes), jnp.asarray(episodes))
    kept, kept_p, kept_score = top_learnability(jnp.asarray(levels), p, score, 3)
    # p (1 - p): 0.6 -> 0.24, 0.45 -> 0.2475, 0.3 -> 0.21; 0.5 unfinished -> 0.
    assert sorted(kept[:, 0].tolist()) == [5.0, 6.0, 7.0]
    np.testing.assert_allclose(kept_score, [0.2475, 0.24, 0.21], rtol=1e-6)
    np.testing.assert_allclose(kept_p, [0.45, 0.6, 0.3], rtol=1e-6)
    assert float(score[2]) == 0.0 and float(p[2]) == 0.0


def test_a_refresh_keeps_the_top_levels_of_the_student_rollouts():
    teacher = fake_sfl(**SMALL)
    params = teacher.default_params()
    state = teacher.init(KEY, params)
    key = jax.random.PRNGKey(3)
    context = UpdateContext(student=STUDENT)
    state = jax.jit(teacher.update)(state, key, None, None, jnp.int32(0), context)
    # The levels the refresh drew (its convention: the first half of its key).
    drawn = teacher.random_levels(jax.random.split(key)[0], params, 32)
    rate = np.asarray(true_rate(drawn))
    score = np.where(np.asarray(drawn[:, 0]) >= 0.05, rate * (1 - rate), 0.0)
    expected = np.sort(score)[::-1][: SMALL["num_to_save"]]
    kept_rate = np.asarray(true_rate(state.levels))
    np.testing.assert_allclose(np.sort(np.asarray(state.score))[::-1], expected, atol=1e-6)
    np.testing.assert_allclose(np.asarray(state.success), kept_rate, atol=1e-6)
    # Each kept level is one of the drawn ones, none twice.
    index = [int(np.argmin(np.abs(np.asarray(drawn[:, 0]) - x))) for x in state.levels[:, 0]]
    np.testing.assert_allclose(np.asarray(drawn)[index], np.asarray(state.levels))
    assert len(set(index)) == SMALL["num_to_save"]
    assert bool(state.filled) and int(state.refreshes) == 1


# -- 2. the buffer/fresh split -------------------------------------------------------------


@pytest.mark.parametrize("ratio", [0.3, 0.8])
def test_buffer_levels_come_in_the_share_sampled_envs_ratio(ratio):
    teacher = fake_sfl(**SMALL, sampled_envs_ratio=ratio)
    state = teacher.init(KEY, teacher.default_params())
    sample = jax.jit(teacher.sample, static_argnums=2)
    n = 4000
    # Before the first refresh: every level fresh.
    _, tasks, _ = sample(state, jax.random.PRNGKey(1), n)
    assert (np.asarray(tasks) <= 1.0).all()
    # A buffer of levels outside the box (2.0): fresh ones lie inside it.
    state = state.replace(
        levels=jnp.full_like(state.levels, 2.0), refreshes=jnp.ones((), jnp.int32)
    )
    state, tasks, _ = sample(state, jax.random.PRNGKey(2), n)
    buffered = np.asarray(tasks[:, 0]) == 2.0
    fresh_inside = (np.asarray(tasks[~buffered, 0]) >= 0) & (np.asarray(tasks[~buffered, 0]) <= 1)
    assert fresh_inside.all()
    sigma = np.sqrt(ratio * (1 - ratio) / n)
    assert abs(buffered.mean() - ratio) < 4 * sigma, buffered.mean()
    assert float(state.buffer_share) == pytest.approx(buffered.mean())


# -- 3. the refresh period -----------------------------------------------------------------


def test_refreshes_happen_at_steps_zero_and_every_period():
    teacher = fake_sfl(**SMALL, buffer_update_frequency=4)
    state = teacher.init(KEY, teacher.default_params())
    update = jax.jit(teacher.update)
    counts = []
    for step in range(10):
        state = update(
            state,
            jax.random.PRNGKey(step),
            None,
            None,
            jnp.int32(step),
            UpdateContext(student=STUDENT),
        )
        counts.append(int(state.refreshes))
    # Refreshes at steps 0, 4 and 8.
    assert counts == [1, 1, 1, 1, 2, 2, 2, 2, 3, 3]
    per_refresh = SMALL["num_batches"] * SMALL["batch_size"] * SMALL["rollout_steps"]
    snapshot = teacher.snapshot(state)
    assert float(snapshot["eval_env_steps"]) == 3 * per_refresh
    assert int(snapshot["refreshes"]) == 3


def test_the_refresh_stays_a_branch_under_a_vmap_over_seeds():
    # The step is shared (unbatched): the vmapped update keeps a cond, not a select.
    teacher = fake_sfl(**SMALL)
    states = jax.vmap(teacher.init, in_axes=(0, None))(
        jax.random.split(KEY, 2), teacher.default_params()
    )

    def update(states, keys, step):
        context = UpdateContext(student=STUDENT)
        return jax.vmap(lambda s, k: teacher.update(s, k, None, None, step, context))(states, keys)

    jaxpr = jax.make_jaxpr(update)(states, jax.random.split(KEY, 2), jnp.int32(0))
    primitives = {eqn.primitive.name for eqn in jaxpr.jaxpr.eqns}
    assert "cond" in primitives, primitives


def test_update_without_a_student_is_an_error():
    teacher = fake_sfl(**SMALL)
    state = teacher.init(KEY, teacher.default_params())
    records = feedback(jnp.zeros((2, 1)), [0.0, 1.0])
    with pytest.raises(ConfigError, match="student"):
        teacher.update(state, KEY, records.task, records, jnp.int32(0))


@pytest.mark.parametrize(
    "context, config, message",
    [
        (RunContext(env=LevelEnv(), play=fake_play), {}, "agent"),
        (RunContext(env=LevelEnv(), agent=object(), play=fake_play, shard_envs=True), {}, "shard"),
        (RunContext(agent=object(), play=fake_play), {}, "env"),
        (
            RunContext(env=LevelEnv(), agent=object(), play=fake_play),
            dict(num_batches=1, batch_size=4, num_to_save=5),
            "num_to_save",
        ),
        (RunContext(env=LevelEnv(), agent=object(), play=fake_play), {"preset": "gpu"}, "preset"),
    ],
)
def test_config_errors(context, config, message):
    with pytest.raises(ConfigError, match=message):
        TEACHERS.get("sfl")(task_space=LevelEnv.task_space, context=context, **config)


def test_a_task_space_of_other_dimensions_is_refused():
    context = RunContext(env=LevelEnv(), agent=object(), play=fake_play)
    with pytest.raises(ConfigError, match="dimensions"):
        TEACHERS.get("sfl")(task_space=Box(low=(0.0, 0.0), high=(1.0, 1.0)), context=context)


def test_off_the_envs_space_update_needs_the_map_onto_env_tasks():
    context = RunContext(env=LevelEnv(), agent=object(), play=fake_play)
    teacher = TEACHERS.get("sfl")(task_space=Box(low=(0.0,), high=(2.0,)), context=context, **SMALL)
    state = teacher.init(KEY, teacher.default_params())
    with pytest.raises(ConfigError, match="env_tasks"):
        teacher.update(state, KEY, None, None, jnp.int32(0), UpdateContext(student=STUDENT))


def test_under_a_challenge_levels_are_played_through_its_map():
    from acl.teachers.challenge import identity_challenge, teacher_space, with_challenge

    context = RunContext(env=LevelEnv(), agent=object(), play=fake_play)
    inner = TEACHERS.get("sfl")(
        task_space=teacher_space(LevelEnv.task_space), context=context, **SMALL
    )
    teacher = with_challenge(inner, LevelEnv.task_space)
    # The challenge's box is the lower half of the env's: env level = u / 2.
    challenge = identity_challenge(Box(low=(0.0,), high=(0.5,)))
    state = teacher.init(KEY, teacher.params_for(challenge))
    tasks = jnp.zeros((4, 2))
    state = jax.jit(teacher.update)(
        state,
        KEY,
        tasks,
        feedback(tasks, jnp.zeros(4)),
        jnp.int32(0),
        UpdateContext(student=STUDENT),
    )
    kept = np.asarray(state.inner.levels[:, 0])
    # The buffer stays in the teacher's coordinates, each level's p is the env level's.
    np.testing.assert_allclose(state.inner.success, true_rate(kept[:, None] / 2), atol=1e-6)
    assert not np.allclose(state.inner.success, true_rate(kept[:, None]), atol=1e-6)
    # The levels it hands out are mapped like any challenged teacher's: [env | unit].
    _, handed, _ = teacher.sample(state, KEY, 64)
    np.testing.assert_allclose(handed[:, 0], handed[:, 1] / 2, atol=1e-6)


def test_presets_follow_the_sources():
    from acl.teachers.sfl import SFL_PRESETS

    maze = fake_sfl(num_batches=1, batch_size=1000)  # the default preset: the paper's maze
    assert (maze.rollout_steps, maze.num_to_save, maze.buffer_update_frequency) == (2000, 1000, 100)
    assert float(maze.hyper.sampled_envs_ratio) == 0.5
    kinetix = fake_sfl(preset="kinetix")
    assert (kinetix.num_batches, kinetix.batch_size, kinetix.rollout_steps) == (3, 4096, 512)
    assert (kinetix.num_to_save, kinetix.buffer_update_frequency) == (1024, 128)
    assert set(SFL_PRESETS) == {"maze", "kinetix", "cpu"}


# -- 4. the shared harness, with a real student ------------------------------------------


@pytest.mark.slow
def test_passes_teacher_harness_with_a_real_student():
    env = ENVS.get("point_reach")()
    agent = AGENTS.get("ppo")(hidden_sizes=(8,), update_epochs=1, num_minibatches=1)
    obs_space, action_space = env.observation_space(), env.action_space()
    context = RunContext(env=env, agent=agent, play=play)

    def make(space):
        return TEACHERS.get("sfl")(
            task_space=space,
            context=context,
            num_batches=2,
            batch_size=8,
            rollout_steps=20,
            num_to_save=4,
            buffer_update_frequency=3,
        )

    state = check_teacher(
        make,
        rounds=4,
        batch=8,
        num_seeds=2,
        space=env.task_space,
        make_student=lambda key: agent.init(key, obs_space, action_space),
    )
    assert int(state.refreshes) == 2  # steps 0 and 3
    assert float(state.eval_env_steps) == 2 * 2 * 8 * 20


# -- 5. a run through experiments.run ------------------------------------------------------


@pytest.mark.slow
def test_runs_through_experiments_run_and_reports_its_evaluation_steps(tmp_path):
    import yaml

    from acl.run.snapshots import load_teacher_snapshots
    from experiments import run

    config = yaml.safe_load(open("experiments/configs/point_reach_fixed_hard.yaml"))
    config.update(
        name="point_reach_sfl_tiny",
        num_seeds=2,
        teacher={"name": "sfl", "preset": "cpu"},
        agent={"name": "ppo", "hidden_sizes": [16], "update_epochs": 1, "num_minibatches": 2},
    )
    # 32 updates of 4 x 32 steps in two evaluations: refreshes at updates 0 and 16.
    config["loop"].update(num_envs=4, num_steps=32, total_env_steps=4096, eval_every=2048)
    config["eval"]["num_test_tasks"] = 4
    path = tmp_path / "sfl.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "run"
    assert run.main(["--config", str(path), "--out", str(out), "--no-progress"]) == 0
    snaps = load_teacher_snapshots(out)
    np.testing.assert_array_equal(snaps["refreshes"], [[1, 1], [2, 2]])
    per_refresh = 1 * 128 * 512  # the cpu preset
    np.testing.assert_array_equal(
        snaps["eval_env_steps"], [[per_refresh] * 2, [2 * per_refresh] * 2]
    )
    assert snaps["levels"].shape == (2, 2, 16, 2)
    assert np.isfinite(snaps["mean_learnability"]).all()


def test_a_rollout_no_longer_than_the_time_limit_is_refused():
    # The 9 x 9 maze's 128 steps: a rollout of 128 finishes one timed-out episode at most.
    env = ENVS.get("maze")(height=9, width=9, num_walls=12, max_episode_steps=128)
    context = RunContext(env=env, agent=object(), play=fake_play)
    with pytest.raises(ConfigError, match="must exceed the env's time limit"):
        TEACHERS.get("sfl")(task_space=env.task_space, context=context, rollout_steps=128)
    TEACHERS.get("sfl")(task_space=env.task_space, context=context, preset="cpu")
