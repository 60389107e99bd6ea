"""DR, PLR, robust PLR and ACCEL (acl/teachers/plr.py) on a small maze."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.build import make_train
from acl.core.errors import ConfigError
from acl.core.types import Transition, ValueSpec
from acl.teachers import TEACHERS
from acl.teachers.plr import EDIT, NEW, REPLAY, LevelStats, level_stats
from envs.base import LevelTaskEnv
from envs.maze import Maze
from tests.conftest import tiny_config
from tests.teacher_harness import RolloutExtras, check_teacher

KEY = jax.random.PRNGKey(0)
"""Teachers' update key: these teachers keep their own keys and ignore it."""

ENV = Maze(6, 6, max_episode_steps=16, num_walls=5)
SPACE = ENV.task_space
CELLS = ENV.height * ENV.width


def make(name: str, **kwargs):
    return TEACHERS.get(name)(task_space=SPACE, env=ENV, **kwargs)


def levels(n: int, seed: int = 0) -> jax.Array:
    """n distinct random levels as canonical tasks [n, D] (numpy: no compile)."""
    rng = np.random.default_rng(seed)
    walls = rng.random((n, CELLS)) < 0.2
    cells = np.stack([rng.choice(CELLS, 2, replace=False) for _ in range(n)])
    walls[np.arange(n)[:, None], cells] = False
    side, direction = ENV.height, rng.integers(0, 4, n)
    place = np.stack(
        [
            cells[:, 0] // side,
            cells[:, 0] % side,
            direction,
            cells[:, 1] // side,
            cells[:, 1] % side,
        ],
        axis=1,
    )
    tasks = np.concatenate([walls, (place + 0.5) / np.array([side, side, 4, side, side])], axis=1)
    assert len(np.unique(tasks, axis=0)) == n
    return jnp.asarray(tasks, jnp.float32)


def buffer(teacher, tasks, scores, timestamps, episode_count, **params):
    """A state whose first len(scores) slots hold `tasks` with these scores (numpy: no
    compile)."""
    p = teacher.default_params()
    # Same dtypes as the defaults (no weak types), so jitted calls compile once.
    p = p.replace(**{k: jnp.asarray(v, getattr(p, k).dtype) for k, v in params.items()})
    state = teacher.init(jax.random.PRNGKey(0), p)
    k, c = len(scores), teacher.capacity

    def head(values, dtype):
        out = np.zeros((c,) + np.shape(values)[1:], dtype)
        out[:k] = values
        return jnp.asarray(out)

    return state.replace(
        levels=head(tasks, np.float32),
        scores=head(scores, np.float32),
        timestamps=head(timestamps, np.int32),
        size=jnp.int32(k),
        episode_count=jnp.int32(episode_count),
    )


def decode(tasks) -> dict:
    """Canonical maze tasks [n, D] -> numpy walls [n, H * W] and agent / goal cells [n]."""
    tasks = np.asarray(tasks)
    side = ENV.height
    index = np.floor(tasks[:, CELLS:] * np.array([side, side, 4, side, side])).astype(int)
    return {
        "walls": tasks[:, :CELLS] > 0.5,
        "agent": index[:, 0] * side + index[:, 1],
        "dir": index[:, 2],
        "goal": index[:, 3] * side + index[:, 4],
    }


# -- replay weights --------------------------------------------------------------------


def test_rank_topk_and_staleness_weights_match_hand_computation():
    scores, timestamps = [0.5, 2.0, -1.0, 1.0], [1, 3, 0, 2]
    rank = make("plr", capacity=6)
    state = buffer(rank, levels(4), scores, timestamps, 5, temperature=0.5)
    both = jax.jit(lambda s: (rank.score_weights(s), rank.level_weights(s)))
    # Ranks 3, 1, 4, 2; h = (1 / rank)^(1 / 0.5).
    h = np.array([1 / 9, 1, 1 / 16, 1 / 4, 0, 0])
    stale = np.array([4, 2, 5, 3, 0, 0]) / 14
    score_w, level_w = both(state)
    np.testing.assert_allclose(score_w, h / h.sum(), rtol=1e-6)
    np.testing.assert_allclose(level_w, 0.7 * h / h.sum() + 0.3 * stale, rtol=1e-6)

    topk = make("plr", capacity=6, prioritization="topk")
    both = jax.jit(lambda s: (topk.score_weights(s), topk.level_weights(s)))
    state = state.replace(params=state.params.replace(topk_k=jnp.int32(2)))
    # Nothing stale: staleness is uniform over the filled slots.
    fresh = state.replace(timestamps=jnp.full(6, 5, jnp.int32))
    e = np.e
    expected = np.array([0, e / (e + 1), 0, 1 / (e + 1), 0, 0])
    score_w, level_w = both(fresh)
    np.testing.assert_allclose(score_w, expected, rtol=1e-6, atol=1e-7)
    uniform = np.r_[np.full(4, 0.25), 0, 0]
    np.testing.assert_allclose(level_w, 0.7 * expected + 0.3 * uniform, rtol=1e-6, atol=1e-7)


# -- buffer writes ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorder():
    teacher = make("plr", capacity=3)  # maxmc: score = max_return - mean_value
    return teacher, jax.jit(teacher.record)


def stats(max_returns, mean_values=None) -> LevelStats:
    r = jnp.asarray(max_returns, jnp.float32)
    v = jnp.zeros_like(r) if mean_values is None else jnp.asarray(mean_values, jnp.float32)
    return LevelStats(pvl=jnp.zeros_like(r), mean_value=v, max_return=r)


def test_new_level_replaces_the_lowest_weight_entry_only_if_it_scores_higher(recorder):
    teacher, record = recorder
    tasks = levels(5)
    # Staleness all zero (uniform): weights follow the ranks, so slot 0 (score 1) weighs
    # least.
    state = buffer(teacher, tasks[:3], [1.0, 3.0, 2.0], [4, 4, 4], 4)
    state = state.replace(max_returns=jnp.asarray([1.0, 3.0, 2.0]))

    lower = record(state, tasks[3:4], stats([0.5]))
    np.testing.assert_array_equal(lower.levels, state.levels)
    np.testing.assert_array_equal(lower.scores, state.scores)
    assert int(lower.episode_count) == 4 and int(lower.size) == 3

    higher = record(state, tasks[3:4], stats([1.5]))
    np.testing.assert_array_equal(higher.levels[0], tasks[3])
    np.testing.assert_allclose(higher.scores, [1.5, 3.0, 2.0])
    assert int(higher.timestamps[0]) == 5 and int(higher.episode_count) == 5
    np.testing.assert_array_equal(higher.levels[1:], state.levels[1:])
    assert int(higher.batches[NEW]) == 1

    # Not full: any level takes the next free slot, whatever its score.
    partial = buffer(teacher, tasks[:1], [1.0], [0], 0)
    partial = record(partial, tasks[1:2], stats([-2.0]))
    partial = record(partial, tasks[2:3], stats([0.5]))
    assert int(partial.size) == 3
    np.testing.assert_array_equal(partial.levels, tasks[:3])
    np.testing.assert_allclose(partial.scores, [1.0, -2.0, 0.5])


def test_duplicates_update_their_entry_in_place(recorder):
    teacher, record = recorder
    tasks = levels(3)
    state = buffer(teacher, tasks, [1.0, 3.0, 2.0], [1, 2, 3], 4)
    state = state.replace(max_returns=jnp.asarray([1.0, 0.9, 2.0]))
    # maxmc keeps the best return ever seen: max(0.9, 0.5) - 0.3.
    dup = record(state, tasks[1:2], stats([0.5], [0.3]))
    np.testing.assert_array_equal(dup.levels, state.levels)
    np.testing.assert_allclose(dup.scores, [1.0, 0.6, 2.0], rtol=1e-6)
    np.testing.assert_allclose(dup.max_returns, [1.0, 0.9, 2.0])
    assert int(dup.size) == 3
    # In a new batch a duplicate counts as a fresh play (JaxUED) ...
    assert int(dup.timestamps[1]) == 5 and int(dup.episode_count) == 5
    # ... in a replay batch its draw already did.
    replayed = record(state.replace(kind=jnp.int32(REPLAY)), tasks[1:2], stats([1.5], [0.3]))
    np.testing.assert_allclose(replayed.scores, [1.0, 1.2, 2.0], rtol=1e-6)
    np.testing.assert_allclose(replayed.max_returns, [1.0, 1.5, 2.0])
    assert int(replayed.timestamps[1]) == 2 and int(replayed.episode_count) == 4
    assert int(replayed.batches[REPLAY]) == 1


# -- scores ----------------------------------------------------------------------------


def reference_stats(reward, value, done, gamma, lam):
    """Per instance, by the definitions: (pvl, mean over finished episodes of the mean of
    R_max - V, R_max); whole rollout as one episode where none finished."""
    num_steps, n = reward.shape
    out = []
    for i in range(n):
        ends = [t for t in range(num_steps) if done[t, i]]
        bounds = list(zip([0] + [e + 1 for e in ends[:-1]], ends)) or [(0, num_steps - 1)]
        pvls, gaps, returns = [], [], []
        for start, end in bounds:
            r, v = reward[start : end + 1, i], value[start : end + 1, i]
            # The next step's value, none after a finished episode, own value at the end.
            if done[end, i]:
                nxt = np.r_[v[1:], 0.0]
            else:
                nxt = np.r_[v[1:], v[-1]]
            delta = r + gamma * nxt - v
            adv = np.zeros_like(delta)
            for t in reversed(range(len(delta))):
                later = adv[t + 1] if t + 1 < len(delta) else 0.0
                adv[t] = delta[t] + gamma * lam * later
            pvls.append(np.maximum(adv, 0).mean())
            returns.append(r.sum())
            gaps.append(v.mean())
        best = max(returns)
        out.append((np.mean(pvls), best - np.mean(gaps), best))
    return np.array(out)


def test_pvl_and_maxmc_match_hand_computation():
    # Instance 0: an episode of 3 steps (R = 1), one of 2 (R = 0.5), an unfinished step.
    # Instance 1: no episode ends (the whole rollout scores as one).
    reward = np.array([[0, 0], [0, 0], [1, 0], [0, 0], [0.5, 0], [0.7, 1.0]], np.float32)
    value = np.array(
        [[0.2, 0.5], [0.4, 0.5], [0.6, 0.5], [0.1, 0.5], [0.3, 0.5], [0.9, 0.5]], np.float32
    )
    done = np.zeros((6, 2), bool)
    done[2, 0] = done[4, 0] = True
    rollout = Transition(
        obs=jnp.zeros((6, 2, 1)),
        action=jnp.zeros((6, 2), jnp.int32),
        reward=jnp.asarray(reward),
        terminated=jnp.asarray(done),
        done=jnp.asarray(done),
        next_obs=jnp.zeros((6, 2, 1)),
        loss_mask=jnp.ones((6, 2)),
        extras=RolloutExtras(value=jnp.asarray(value), value_spec=student_spec(0.9, 0.8, (6, 2))),
    )
    stats = jax.jit(level_stats)
    got = stats(rollout)
    # Episode 1 of instance 0 by hand: deltas 0.16, 0.14, 0.4; A = 0.46816, 0.428, 0.4.
    ep1_pvl = (0.46816 + 0.428 + 0.4) / 3
    ep2 = reference_stats(reward[3:5, :1], value[3:5, :1], done[3:5, :1], 0.9, 0.8)[0]
    np.testing.assert_allclose(got.pvl[0], (ep1_pvl + ep2[0]) / 2, rtol=1e-5)
    np.testing.assert_allclose(got.max_return[0], 1.0)
    # maxmc = R_max - mean over episodes of the mean value: 1 - (0.4 + 0.2) / 2.
    np.testing.assert_allclose(got.max_return[0] - got.mean_value[0], 0.7, rtol=1e-6)
    expected = reference_stats(reward, value, done, 0.9, 0.8)
    np.testing.assert_allclose(got.pvl, expected[:, 0], rtol=1e-5)
    np.testing.assert_allclose(got.max_return - got.mean_value, expected[:, 1], rtol=1e-5)
    np.testing.assert_allclose(got.max_return, expected[:, 2], rtol=1e-6)
    # The student's gamma is a traced leaf: another value reuses the program, moves the scores.
    other = rollout.replace(
        extras=rollout.extras.replace(value_spec=student_spec(0.5, 0.8, (6, 2)))
    )
    assert not np.allclose(stats(other).pvl, got.pvl)
    assert stats._cache_size() == 1
    expected = reference_stats(reward, value, done, 0.5, 0.8)
    np.testing.assert_allclose(stats(other).pvl, expected[:, 0], rtol=1e-5)


def student_spec(gamma, lam, shape, reward_scale=1.0) -> ValueSpec:
    """The student's ValueSpec as an agent's extras carry it, [T, N] each."""
    return ValueSpec(*(jnp.full(shape, x, jnp.float32) for x in (gamma, lam, reward_scale)))


# -- batches ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def accel():
    teacher = make("accel", capacity=8, num_edits=3)
    return teacher, jax.jit(teacher.sample, static_argnums=2)


def test_replay_only_after_minimum_fill_and_robust_train_on(accel):
    teacher, sample = accel
    tasks = levels(8)
    below = buffer(teacher, tasks[:3], [0.1, 0.2, 0.3], [0, 0, 0], 3, replay_prob=1.0)
    for seed in range(4):
        state, _, info = sample(below, jax.random.PRNGKey(seed), 6)
        assert int(state.kind) == NEW
        assert not np.asarray(info.train_on).any(), "robust: no learning on new levels"
    filled = buffer(teacher, tasks[:4], [0.1, 0.2, 0.3, 0.4], [0, 0, 0, 0], 3, replay_prob=1.0)
    state, replay, info = sample(filled, jax.random.PRNGKey(0), 6)
    assert int(state.kind) == REPLAY and np.asarray(info.train_on).all()
    buffered = {tuple(t) for t in np.asarray(tasks[:4])}
    assert all(tuple(t) in buffered for t in np.asarray(replay))
    assert int(state.replayed.sum()) == 6 and int(state.episode_count) == 9
    never = buffer(teacher, tasks[:8], np.ones(8), np.zeros(8), 8, replay_prob=0.0)
    assert int(sample(never, jax.random.PRNGKey(0), 6)[0].kind) == NEW


def test_accel_edits_the_replayed_levels_after_a_replay(accel):
    teacher, sample = accel
    tasks = levels(8, seed=1)
    full = buffer(teacher, tasks, np.arange(8.0), np.zeros(8), 8, replay_prob=1.0)
    replayed, _, _ = sample(full, jax.random.PRNGKey(3), 6)
    assert int(replayed.kind) == REPLAY
    state, edited, info = sample(replayed, jax.random.PRNGKey(4), 6)
    assert int(state.kind) == EDIT and not np.asarray(info.train_on).any()
    slots = np.repeat(np.arange(8), np.asarray(replayed.replayed))
    parents, children = decode(np.asarray(tasks)[slots]), decode(edited)
    # Each of the 3 edits a no-op, a wall flip or a goal move (envs.maze.mutate_level):
    # at most 3 cells change, the agent stays, the edits differ from their parents.
    moved = parents["goal"] != children["goal"]
    changed = (parents["walls"] != children["walls"]).sum(-1) + moved
    assert changed.max() <= 3 and changed.max() > 0
    for field in ("agent", "dir"):
        np.testing.assert_array_equal(parents[field], children[field])
    assert (children["agent"] != children["goal"]).all()
    rows = np.arange(6)
    assert not children["walls"][rows, children["agent"]].any()
    assert not children["walls"][rows, children["goal"]].any()


# -- config ----------------------------------------------------------------------------


class _NoEdits(LevelTaskEnv):
    """A level env with a generator but no level edits (`has_level_edits` left False)."""

    name = "no_edits"
    task_space = SPACE
    num_walls = ENV.num_walls

    def sample_tasks(self, key, n, num_walls=None):
        return ENV.sample_tasks(key, n, num_walls)


@pytest.mark.parametrize(
    "name, kwargs, match",
    [
        ("plr", dict(temperature=0.0), "temperature"),
        ("plr", dict(prioritization="softmax"), "prioritization"),
        ("robust_plr", dict(score_function="l1"), "score_function"),
        ("plr", dict(staleness_coeff=1.5), "staleness_coeff"),
        ("plr", dict(capacity=0), "capacity"),
        ("plr", dict(buffer_size=10), "buffer_size"),
        ("accel", dict(num_edits=0), "num_edits"),
        ("accel", dict(env=_NoEdits()), "edit_tasks"),
        ("dr", dict(env=None), "env"),
        ("dr", dict(num_walls=-1), "num_walls"),
    ],
)
def test_bad_config_is_a_config_error(name, kwargs, match):
    kwargs = {"env": ENV, **kwargs}
    with pytest.raises(ConfigError, match=match):
        TEACHERS.get(name)(task_space=SPACE, **kwargs)


def test_update_without_rollout_is_a_config_error():
    teacher = make("plr", capacity=4)
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    with pytest.raises(ConfigError, match="rollout"):
        teacher.update(state, KEY, levels(2), None, 0)


# -- the shared harness (slow: each teacher compiles its own sample and update) --------


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("dr", {}),
        ("plr", dict(capacity=48)),
        ("robust_plr", dict(capacity=48, score_function="pvl", prioritization="topk")),
        ("accel", dict(capacity=48)),
    ],
)
def test_teacher_harness(name, kwargs):
    check_teacher(lambda space: make(name, **kwargs), space=SPACE)
    if name == "plr":  # not robust: the student learns from every level
        teacher = make(name, **kwargs)
        state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
        assert np.asarray(teacher.sample(state, jax.random.PRNGKey(1), 4)[2].train_on).all()


def loop_config(mode: str, teacher: dict):
    return tiny_config(
        env={"name": "maze", "height": 6, "width": 6, "max_episode_steps": 16, "num_walls": 5},
        teacher=teacher,
        loop={"mode": mode, "num_envs": 4, "num_steps": 16, "eval_every": 256},
        num_seeds=1,
    )


def test_rollout_readers_need_batch_mode():
    with pytest.raises(ConfigError, match="batch"):
        make_train(loop_config("episode", {"name": "plr", "capacity": 16}))


@pytest.mark.slow
def test_accel_runs_in_the_loop():
    teacher = {"name": "accel", "capacity": 16, "minimum_fill_ratio": 0.25, "num_edits": 2}
    trainer = make_train(loop_config("batch", teacher))
    carry = trainer.jit_init_seeds()(trainer.seed_keys())
    carry, metrics = trainer.jit_run_chunk_seeds()(carry)
    snapshot = jax.tree.map(np.asarray, metrics.teacher_snapshot)
    batches = [int(snapshot[f"batches_{kind}"][0]) for kind in ("new", "replay", "edit")]
    assert sum(batches) == trainer.schedule.iterations_per_chunk and batches[0] >= 1
    assert 0 < int(snapshot["size"][0]) <= 16
    assert all(np.isfinite(np.asarray(v, np.float64)).all() for v in snapshot.values())


def test_level_teachers_under_a_challenge_draw_the_envs_levels_or_refuse():
    """acl benchmark and acl shootout wrap teachers in a challenge, whose unit cube is not
    the env's box: a uniform generator's levels are then drawn uniformly in the cube (the
    same levels), never the env's coordinates read as the cube's (which piled every level
    on the box's upper faces); a non-uniform generator is refused in one line."""
    import dataclasses

    from acl.build import build_components
    from acl.config import ComponentConfig, load_config

    peer = load_config("experiments/configs/peer_cartpole.yaml")
    for name in ("dr", "plr", "robust_plr"):
        config = dataclasses.replace(peer, teacher=ComponentConfig(name, {}))
        teacher = build_components(config, challenged=True).teacher
        state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
        _, tasks, _ = teacher.sample(state, jax.random.PRNGKey(1), 512)
        levels = np.asarray(tasks[:, :2])
        assert levels.min() >= 0.01 and levels.max() <= 10.01
        assert (levels < 10.0).mean() > 0.99 and abs(levels.mean() - 5.01) < 0.5, name
    xland = load_config("experiments/configs/xland_dr.yaml")
    with pytest.raises(ConfigError, match="levels are not uniform: run it without a challenge"):
        build_components(xland, challenged=True)
