"""RIAC: ALP formula, split rule, full region list, toy bandit (the conformance harness,
with splits: tests/test_teachers.py)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.core.errors import ConfigError
from acl.core.spaces import Box
from acl.teachers import TEACHERS
from acl.teachers.random import RandomTeacher
from acl.teachers.riac import make_riac
from tests.teacher_harness import (
    HARNESS_SETTINGS,
    SPACE,
    feedback,
    harness_teacher,
    jitted,
    loop_update,
)

KEY = jax.random.PRNGKey(0)
"""Teachers' update key: these teachers keep their own keys and ignore it."""

UNIT2 = Box(low=(0.0, 0.0), high=(1.0, 1.0))


def reference_alp(returns, window):
    """teachDeepRL RIAC.compute_alp on a list of returns, oldest first."""
    if len(returns) <= 2:
        return 0.0
    cpw = min(len(returns), window)
    half = int(cpw / 2)
    arr = np.asarray(returns, np.float64)
    return abs(arr[-cpw:-half].mean() - arr[-half:].mean())


@functools.partial(jax.jit, static_argnums=0)
def feed_one_by_one(teacher, state, tasks, returns):
    """One record per update, as the toy bandit does (one compiled scan per teacher and
    record count; teachers equal in their static keys share it)."""

    def body(state, xs):
        step, task, ret = xs
        records = feedback(task[None], ret[None])
        return teacher.update(state, KEY, task[None], records, step), None

    xs = (jnp.arange(len(returns), dtype=jnp.int32), jnp.asarray(tasks), jnp.asarray(returns))
    return jax.lax.scan(body, state, xs)[0]


SPLITTER = dict(task_space=UNIT2, max_region_size=60, max_regions=7)
"""A tree that a full root (61 records) splits once."""


def init_splitter(seed, **hyper):
    """The SPLITTER teacher and its initial state with numeric keys `hyper`: they live in
    the state, so every variant runs SPLITTER's one compiled feed."""
    teacher = make_riac(**SPLITTER)
    params = make_riac(**SPLITTER, **hyper).default_params()
    return teacher, teacher.init(jax.random.PRNGKey(seed), params)


# The harness' RIAC (tests/teacher_harness.py: 3-D SPACE, windows of 17 records, splits)
# for the ALP formula and masked records, through the programs check_teacher compiles for
# it: updates of 32 records, shorter batches padded with masked NaN ones.
HARNESS_RIAC = harness_teacher("riac")


def harness_riac_state(**hyper):
    """HARNESS_RIAC's initial state with numeric keys `hyper` (they live in the state)."""
    init, _, _ = jitted(HARNESS_RIAC)
    params = make_riac(task_space=SPACE, **HARNESS_SETTINGS["riac"], **hyper).default_params()
    return init(jax.random.PRNGKey(0), params)


def update_in_batches(state, tasks, returns, teacher=HARNESS_RIAC):
    """`teacher` (on SPACE) fed these records in order, 32 per update, the last batch
    padded with masked NaN records."""
    _, update = loop_update(teacher)
    for start in range(0, len(returns), 32):
        n = min(32, len(returns) - start)
        batch = np.full((32, SPACE.dim), np.nan, np.float32)
        batch[:n] = tasks[start : start + n]
        batch_returns = np.full(32, np.nan, np.float32)
        batch_returns[:n] = returns[start : start + n]
        records = feedback(batch, batch_returns, mask=np.arange(32) < n)
        state = update(state, batch, records, jnp.int32(0), KEY)
    return state


def uniform_tasks(rng, n):
    low, high = np.asarray(SPACE.low), np.asarray(SPACE.high)
    return (low + (high - low) * rng.uniform(size=(n, SPACE.dim))).astype(np.float32)


def test_alp_formula_matches_reference_on_sliding_windows():
    # The root's window holds every record, splits or not.
    state = harness_riac_state(alp_window=12)
    rng = np.random.default_rng(0)
    returns = rng.normal(size=40).cumsum()
    tasks = uniform_tasks(rng, 40)
    for i in range(40):
        state = update_in_batches(state, tasks[i : i + 1], returns[i : i + 1])
        window = list(returns[: i + 1][-HARNESS_RIAC.window_size :])  # deque(maxlen=window_size)
        np.testing.assert_allclose(float(state.alp[0]), reference_alp(window, 12), atol=1e-5)
    assert int(state.num_splits) > 0
    # A hand-made window: oldest [0, 0, 0, 0] then newest [1, 1, 1] (h = 3): ALP 1.
    state = harness_riac_state(alp_window=12)
    state = update_in_batches(state, tasks[:7], [0, 0, 0, 0, 1, 1, 1])
    assert float(state.alp[0]) == pytest.approx(1.0)
    state = update_in_batches(state, tasks[:1], [1])  # 0000|1111 -> 1
    assert float(state.alp[0]) == pytest.approx(1.0)
    state = update_in_batches(state, tasks[:1], [1])  # 0000|1 11111 -> 0.8
    assert float(state.alp[0]) == pytest.approx(0.8)


@pytest.mark.parametrize("min_split_score", [0.0, 0.2])
def test_split_separates_learning_half_from_flat_half(min_split_score):
    teacher, state = init_splitter(2, min_split_score=min_split_score)
    rng = np.random.default_rng(1)
    tasks = rng.uniform(size=(61, 2)).astype(np.float32)
    rising = tasks[:, 0] < 0.5
    returns = np.where(rising, np.arange(61) / 60.0, 0.5).astype(np.float32)
    state = feed_one_by_one(teacher, state, tasks, returns)
    assert int(state.num_splits) == 1 and int(state.active.sum()) == 3
    children = np.nonzero(np.asarray(state.leaf))[0]
    low, high = np.asarray(state.low)[children], np.asarray(state.high)[children]
    # The cut is on dimension 0 near 0.5: one child holds the rising returns, one the flat.
    assert np.allclose(low[:, 1], 0) and np.allclose(high[:, 1], 1)
    threshold = float(np.max(low[:, 0]))
    assert abs(threshold - 0.5) < 0.1, threshold
    alp = np.asarray(state.alp)[children]
    left = children[np.argmin(low[:, 0])]
    assert float(state.alp[left]) > 0.2 and alp.min() < 0.05
    counts = np.asarray(state.count)[children]
    assert counts.sum() == 61 and counts.min() >= 3


def test_flat_alp_still_splits_and_unsplittable_leaf_discards():
    # Reference rule: a full leaf splits if any candidate is wide enough, whatever the score.
    teacher, state = init_splitter(4)
    rng = np.random.default_rng(3)
    tasks = rng.uniform(size=(61, 2)).astype(np.float32)
    flat = np.full((61,), 0.3, np.float32)
    state = feed_one_by_one(teacher, state, tasks, flat)
    assert int(state.num_splits) == 1 and int(state.num_discards) == 0
    # No child may be 60% of the range wide on both sides: no split, oldest 15 dropped.
    teacher, state = init_splitter(4, min_dims_range_ratio=0.6)
    state = feed_one_by_one(teacher, state, tasks, flat)
    assert int(state.num_splits) == 0 and int(state.num_discards) == 1
    assert int(state.count[0]) == 61 - 15


def test_min_split_score_keeps_uniform_alp_regions_whole():
    rng = np.random.default_rng(5)
    tasks = rng.uniform(size=(61, 2)).astype(np.float32)
    # Uniform ALP: constant returns (every score exactly 0), or the same learning curve
    # everywhere (halves differ only by which time steps fell in them).
    constant = np.full((61,), 0.3, np.float32)
    rising = (np.arange(61) / 60.0).astype(np.float32)
    for returns, threshold in ((constant, 1e-6), (rising, 0.2)):
        teacher, state = init_splitter(6, min_split_score=threshold)
        state = feed_one_by_one(teacher, state, tasks, returns)
        assert int(state.num_splits) == 0 and int(state.num_discards) == 1
        assert int(state.count[0]) == 61 - 15 and int(state.active.sum()) == 1
        # The reference rule (min_split_score 0) cuts the same region anyway.
        reference, state = init_splitter(6)
        state = feed_one_by_one(reference, state, tasks, returns)
        assert int(state.num_splits) == 1
    with pytest.raises(ConfigError, match="min_split_score"):
        make_riac(task_space=UNIT2, min_split_score=-0.1)


def test_full_region_list_stops_splitting_and_windows_slide():
    teacher = make_riac(task_space=UNIT2, max_region_size=20, max_regions=3)
    rng = np.random.default_rng(5)
    tasks = rng.uniform(size=(400, 2)).astype(np.float32)
    returns = (tasks[:, 0] * np.arange(400) / 400).astype(np.float32)
    state = teacher.init(jax.random.PRNGKey(6), teacher.default_params())
    state = feed_one_by_one(teacher, state, tasks, returns)
    assert int(state.num_splits) == 1 and int(state.num_discards) == 0
    assert bool(state.active.all()) and int(state.leaf.sum()) == 2
    for node in range(3):
        low, high = np.asarray(state.low[node]), np.asarray(state.high[node])
        inside = np.all((tasks >= low) & (tasks <= high), axis=1)
        expected = returns[inside][-21:]  # the newest W = 21 points, oldest first
        assert int(state.count[node]) == 21
        ptr = int(state.ptr[node])
        ring = np.asarray(state.window_return[node])
        np.testing.assert_array_equal(np.roll(ring, -ptr), expected)
        np.testing.assert_allclose(
            float(state.alp[node]), reference_alp(list(expected), 20), atol=1e-5
        )


def test_masked_and_nan_records_are_ignored():
    state = harness_riac_state()
    # Masked, valid with a NaN task, valid with a NaN return, then masked NaN padding.
    tasks = np.full((32, SPACE.dim), np.nan, np.float32)
    tasks[:3] = [[0.2, 2.0, 12.0], [np.nan, 1.0, 11.0], [0.3, 3.0, 13.0]]
    returns = np.r_[1.0, 2.0, np.full(30, np.nan)]
    fb = feedback(tasks, returns, mask=np.isin(np.arange(32), [1, 2]))
    _, update = loop_update(HARNESS_RIAC)
    state = update(state, tasks, fb, jnp.int32(0), KEY)
    assert int(state.count[0]) == 0 and np.isfinite(np.asarray(state.window_task)).all()


def test_factory_config():
    assert TEACHERS.get("riac") is make_riac
    assert {"max_region_size", "num_split_attempts", "mutation_std"} <= make_riac.config_keys
    with pytest.raises(ConfigError, match="max_region_siz"):
        make_riac(task_space=UNIT2, max_region_siz=10)
    with pytest.raises(ConfigError, match="random_ratio"):
        make_riac(task_space=UNIT2, random_ratio=1.5)


@pytest.mark.slow  # a learning comparison over 16 seeds: ~25-35 s on 2 cores
def test_toy_bandit_riac_beats_random():
    from acl.benchmark.toy_bandit import run_toy_bandit
    from envs.toy_bandit import ToyBandit

    bandit = ToyBandit(num_dims=2)
    riac = make_riac(task_space=bandit.task_space, split_every=10)
    ours = run_toy_bandit(riac, bandit, 20_000, 1_000, num_seeds=16).scores[:, -1]
    random = run_toy_bandit(RandomTeacher(bandit.task_space), bandit, 20_000, 1_000, 16)
    random = random.scores[:, -1]
    # Reference: RIAC 52.0, Random 4.0 (published figures).
    assert ours.mean() >= 40.0, ours
    assert ours.min() > random.max() + 20, (ours, random)


@pytest.mark.slow
def test_small_max_depth_is_exact_and_reference_child_alp_option():
    # max_depth only sizes the first pass over changed nodes: more passes give the same
    # windows and ALPs as the default. The reference's child-ALP rule changes only ALPs.
    # The default is HARNESS_RIAC (its update compiled for the harness), 32 records per update.
    rng = np.random.default_rng(7)
    tasks = uniform_tasks(rng, 300)
    unit_x0 = (tasks[:, 0] - SPACE.low[0]) / (SPACE.high[0] - SPACE.low[0])
    returns = (unit_x0 * np.arange(300) / 300).astype(np.float32)
    states = []
    for config in ({}, {"max_depth": 1}, {"last_attempt_child_alp": True}):
        teacher = make_riac(task_space=SPACE, **HARNESS_SETTINGS["riac"], **config)
        state = teacher.init(jax.random.PRNGKey(8), teacher.default_params())
        states.append(update_in_batches(state, tasks, returns, teacher))
    base, shallow, reference = states
    assert int(base.num_splits) >= 3  # a tree deeper than max_depth = 1
    for name in ("low", "high", "active", "leaf", "window_return", "count", "ptr", "alp"):
        np.testing.assert_array_equal(getattr(base, name), getattr(shallow, name), name)
    for name in ("low", "high", "active", "leaf", "window_return", "count", "ptr"):
        np.testing.assert_array_equal(getattr(base, name), getattr(reference, name), name)
    assert np.isfinite(np.asarray(reference.alp)).all()


@pytest.mark.slow
def test_batched_updates_do_bounded_work_per_update():
    # The RL loop feeds up to 256 records per update (3-D CartPole space): each update
    # splits or discards at most one leaf, and every root-to-leaf path stays within
    # max_depth nodes, so the record writes need no fallback pass (its `while_loop` runs
    # zero times) and the per-update work does not grow with the history.
    space = Box(low=(0.05, 0.05, 1.0), high=(2.0, 2.0, 5000.0))
    teacher = make_riac(task_space=space)
    k = 256

    def body(state, step):
        key = jax.random.fold_in(jax.random.PRNGKey(10), step)
        k_task, k_ret = jax.random.split(key)
        task = space.sample_uniform(k_task, k)
        ret = jax.random.normal(k_ret, (k,)) + 0.01 * step * task[:, 0]
        new = teacher.update(state, KEY, task, feedback(task, ret), step)
        events = (new.num_splits + new.num_discards) - (state.num_splits + state.num_discards)
        # Depth of each node: the active nodes whose box contains its box.
        inside = jnp.all(
            (new.low[:, None] >= new.low[None]) & (new.high[:, None] <= new.high[None]), -1
        ) & (new.active[:, None] & new.active[None, :])
        depth = jnp.where(new.active, inside.sum(-1), 0).max()
        # (record, node) pairs written this update: one pass holds k * max_depth.
        hits = jnp.all((task[:, None] >= new.low[None]) & (task[:, None] <= new.high[None]), -1)
        pairs = (hits & new.active[None]).sum()
        return new, (events, depth, pairs)

    state = teacher.init(jax.random.PRNGKey(9), teacher.default_params())
    steps = jnp.arange(60, dtype=jnp.int32)
    state, (events, depth, pairs) = jax.jit(lambda s: jax.lax.scan(body, s, steps))(state)
    events, depth, pairs = np.asarray(events), np.asarray(depth), np.asarray(pairs)
    assert events.max() <= 1 and int(state.num_splits) >= 40
    assert depth.max() <= teacher.max_depth, depth
    assert pairs.max() <= k * teacher.max_depth, pairs
    assert int(state.count.max()) <= teacher.window_size
    assert np.isfinite(np.asarray(state.alp)).all()
