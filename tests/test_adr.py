"""ADR (acl/teachers/adr.py): boundaries judged on hand-made buffers, boundary probing,
the initial point and its expert prior. The shared harness runs it in test_teachers.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.core.errors import ConfigError
from acl.teachers import TEACHERS
from acl.teachers.adr import HIGH, LOW
from acl.teachers.base import RunContext
from tests.teacher_harness import SPACE, feedback, jitted, many_samples

# SPACE: a in [-1, 1], b in [0, 5], c in [10, 20]; the box grows from its centre here.
CENTRE = np.array([0.0, 2.5, 15.0], np.float32)
TEACHER = TEACHERS.get("adr")(task_space=SPACE, context=RunContext(), initial_task=CENTRE)
BOX_LOW = np.array([-0.5, 2.0, 12.0], np.float32)
BOX_HIGH = np.array([0.5, 3.0, 18.0], np.float32)


def make_state(low=BOX_LOW, high=BOX_HIGH, teacher=TEACHER, **params):
    """The teacher's state with the box [low, high] and `params` over the defaults."""
    init, _, _ = jitted(teacher)
    defaults = teacher.default_params()
    changes = {k: jnp.asarray(v, getattr(defaults, k).dtype) for k, v in params.items()}
    state = init(jax.random.PRNGKey(0), defaults.replace(**changes))
    bounds = jnp.stack([jnp.asarray(low, jnp.float32), jnp.asarray(high, jnp.float32)])
    return state.replace(bounds=bounds)


def run_records(state, tasks, returns, mask=None, teacher=TEACHER):
    _, _, update = jitted(teacher)
    records = feedback(tasks, returns, mask)
    return update(state, jax.random.PRNGKey(1), records.task, records, jnp.int32(0))


def on_boundary(dim: int, value: float, count: int) -> np.ndarray:
    """`count` tasks inside the box with dimension `dim` at `value`."""
    tasks = np.tile((BOX_LOW + BOX_HIGH) / 2, (count, 1))
    tasks[:, dim] = value
    return tasks


def test_full_buffer_above_threshold_high_expands_by_step_size():
    state = make_state()
    # One return short of a full buffer (queue_len 10): nothing moves yet.
    state = run_records(state, on_boundary(0, 0.5, 9), np.full(9, 0.9))
    np.testing.assert_array_equal(np.asarray(state.bounds), [BOX_LOW, BOX_HIGH])
    assert int(state.buffer_fill[HIGH, 0]) == 9
    state = run_records(state, on_boundary(0, 0.5, 1), [0.7])
    high = np.asarray(state.bounds[HIGH])
    np.testing.assert_allclose(high, [0.6, 3.0, 18.0], rtol=0, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(state.bounds[LOW]), BOX_LOW)
    assert int(state.buffer_fill[HIGH, 0]) == 0, "a judged buffer is cleared"
    assert int(state.expansions[HIGH, 0]) == 1 and int(state.expansions.sum()) == 1
    assert int(state.shrinks.sum()) == 0


def test_expansion_is_clipped_to_the_task_space():
    state = make_state(low=[-0.95, 2.0, 12.0], high=[0.5, 4.95, 18.0])
    state = run_records(state, on_boundary(0, -0.95, 10), np.ones(10))
    state = run_records(state, on_boundary(1, 4.95, 10), np.ones(10))
    np.testing.assert_array_equal(np.asarray(state.bounds[LOW]), [-1.0, 2.0, 12.0])
    np.testing.assert_array_equal(np.asarray(state.bounds[HIGH]), [0.5, 5.0, 18.0])
    # At the limit a boundary stays put (and counts no expansion).
    state = run_records(state, on_boundary(0, -1.0, 10), np.ones(10))
    assert float(state.bounds[LOW, 0]) == -1.0
    np.testing.assert_array_equal(np.asarray(state.expansions), [[1, 0, 0], [0, 1, 0]])


def test_full_buffer_below_threshold_low_shrinks_by_step_size():
    state = make_state()
    state = run_records(
        state, on_boundary(1, 2.0, 10), np.full(10, 0.25)
    )  # mean <= threshold_low 0.3
    np.testing.assert_allclose(np.asarray(state.bounds[LOW]), [-0.5, 2.1, 12.0], atol=1e-6)
    assert int(state.shrinks[LOW, 1]) == 1
    # Between the thresholds: judged and cleared, but the boundary stays.
    state = run_records(state, on_boundary(2, 18.0, 10), np.full(10, 0.5))
    assert float(state.bounds[HIGH, 2]) == 18.0 and int(state.buffer_fill[HIGH, 2]) == 0


def test_shrinking_stops_at_the_initial_task():
    state = make_state(low=[-0.05, 2.0, 12.0], high=[0.5, 2.55, 18.0])
    state = run_records(state, on_boundary(0, -0.05, 10), np.zeros(10))
    state = run_records(state, on_boundary(1, 2.55, 10), np.zeros(10))
    # The initial task is the centre (0, 2.5, 15): one step would pass it.
    assert float(state.bounds[LOW, 0]) == 0.0
    assert float(state.bounds[HIGH, 1]) == 2.5
    state = run_records(state, on_boundary(0, 0.0, 10), np.zeros(10))
    assert float(state.bounds[LOW, 0]) == 0.0, "never past the initial task"


def test_masked_and_off_boundary_records_fill_no_buffer():
    state = make_state()
    garbage = on_boundary(0, 0.5, 10)
    state = run_records(state, garbage, np.full(10, np.nan), mask=np.zeros(10, bool))
    # Inside the box, on no boundary.
    state = run_records(state, on_boundary(0, 0.25, 10), np.ones(10))
    assert int(state.buffer_fill.sum()) == 0
    np.testing.assert_array_equal(np.asarray(state.bounds), [BOX_LOW, BOX_HIGH])


def test_at_the_initial_point_every_episode_feeds_every_buffer():
    init, sample, _ = jitted(TEACHER)
    state = init(jax.random.PRNGKey(0), TEACHER.default_params())
    _, tasks, _ = sample(state, jax.random.PRNGKey(1), 32)
    np.testing.assert_array_equal(np.asarray(tasks), np.tile(CENTRE, (32, 1)))
    state = run_records(state, np.asarray(tasks)[:10], np.ones(10))
    np.testing.assert_allclose(
        np.asarray(state.bounds), [CENTRE - 0.1, CENTRE + 0.1], rtol=0, atol=1e-5
    )


def probes(tasks: np.ndarray, low, high) -> tuple[np.ndarray, np.ndarray]:
    """[n, D] bools: coordinates at the low and at the high boundary."""
    return tasks == np.asarray(low), tasks == np.asarray(high)


@pytest.mark.parametrize("p", [0.7, 0.2])
def test_boundaries_are_probed_at_boundary_sampling_p(p):
    state = make_state(boundary_sampling_p=p)
    tasks = many_samples(TEACHER, state, 6400)
    at_low, at_high = probes(tasks, BOX_LOW, BOX_HIGH)
    per_task = (at_low | at_high).sum(1)
    assert per_task.max() == 1, "one boundary per probed task"
    # std of the share: sqrt(0.7 * 0.3 / 6400) < 0.006
    assert abs(per_task.mean() - p) < 0.025
    # The dimension and the side are uniform among the probes.
    np.testing.assert_allclose(at_low.sum(0) / per_task.sum(), 1 / 6, atol=0.025)
    np.testing.assert_allclose(at_high.sum(0) / per_task.sum(), 1 / 6, atol=0.025)


def test_a_side_at_the_space_limit_is_not_probed():
    # Dimension a: low side at the limit, only its high side is probed; dimension b: both
    # at the limits, never probed (the reference's rule).
    low, high = [-1.0, 0.0, 12.0], [0.5, 5.0, 18.0]
    tasks = many_samples(TEACHER, make_state(low=low, high=high, boundary_sampling_p=1.0), 3200)
    at_low, at_high = probes(tasks, low, high)
    assert at_low[:, :2].sum() == 0 and at_high[:, 1].sum() == 0
    # A third of the draws pick b and stay unprobed.
    np.testing.assert_allclose(at_high[:, 0].mean(), 1 / 3, atol=0.03)
    np.testing.assert_allclose((at_low | at_high).any(1).mean(), 2 / 3, atol=0.03)


def test_tasks_without_probing_are_uniform_in_the_current_box():
    tasks = many_samples(TEACHER, make_state(boundary_sampling_p=0.0), 3200)
    assert (tasks >= BOX_LOW).all() and (tasks <= BOX_HIGH).all()
    at_low, at_high = probes(tasks, BOX_LOW, BOX_HIGH)
    assert not (at_low | at_high).any()
    unit = (tasks - BOX_LOW) / (BOX_HIGH - BOX_LOW)
    np.testing.assert_allclose(unit.mean(0), 0.5, atol=0.02)
    assert (unit.min(0) < 0.01).all() and (unit.max(0) > 0.99).all()


def test_expert_prior_sets_the_initial_task():
    init, sample, _ = jitted(TEACHER)
    params = TEACHER.default_params()
    mean = jnp.asarray([0.5, 1.0, 11.0])
    on = TEACHER.with_prior(params, mean, jnp.ones(3), jnp.asarray(True))
    off = TEACHER.with_prior(params, mean, jnp.ones(3), jnp.asarray(False))
    np.testing.assert_array_equal(np.asarray(init(jax.random.PRNGKey(0), on).bounds), [mean, mean])
    np.testing.assert_array_equal(
        np.asarray(init(jax.random.PRNGKey(0), off).bounds), [CENTRE, CENTRE]
    )
    state = init(jax.random.PRNGKey(0), on)
    _, tasks, _ = sample(state, jax.random.PRNGKey(1), 32)
    np.testing.assert_array_equal(np.asarray(tasks), np.tile(np.asarray(mean), (32, 1)))


def test_without_initial_task_or_prior_each_seed_starts_at_a_uniform_draw():
    teacher = TEACHERS.get("adr")(task_space=SPACE, context=RunContext())
    init, _, _ = jitted(teacher)
    params = teacher.default_params()
    keys = jax.random.split(jax.random.PRNGKey(0), 256)
    states = jax.vmap(init, in_axes=(0, None))(keys, params)
    points = np.asarray(states.bounds[:, LOW])
    np.testing.assert_array_equal(points, np.asarray(states.bounds[:, HIGH]))
    np.testing.assert_array_equal(points, np.asarray(states.params.initial_task))
    unit = (points - SPACE.low_array) / (SPACE.high_array - SPACE.low_array)
    assert (unit >= 0).all() and (unit <= 1).all()
    np.testing.assert_allclose(unit.mean(0), 0.5, atol=0.06)  # SE of a mean of 256: 0.018
    assert len(np.unique(points[:, 0])) == 256
    # A prior overrides the draw.
    mean = jnp.asarray([0.5, 1.0, 11.0])
    on = teacher.with_prior(params, mean, jnp.ones(3), jnp.asarray(True))
    np.testing.assert_array_equal(np.asarray(init(keys[0], on).bounds[LOW]), mean)


def test_returns_are_scaled_by_the_runs_return_bounds():
    # Returns in [-100, 0]: -10 is 0.9 on the [0, 1] scale, above threshold_high.
    teacher = TEACHERS.get("adr")(
        task_space=SPACE, context=RunContext(return_bounds=(-100, 0)), initial_task=CENTRE
    )
    state = make_state(teacher=teacher)
    state = run_records(state, on_boundary(0, 0.5, 10), np.full(10, -10.0), teacher=teacher)
    np.testing.assert_allclose(float(state.bounds[HIGH, 0]), 0.6, atol=1e-6)
    # -80 is 0.2: shrink.
    state = run_records(state, on_boundary(0, 0.6, 10), np.full(10, -80.0), teacher=teacher)
    np.testing.assert_allclose(float(state.bounds[HIGH, 0]), 0.5, atol=1e-6)


def test_snapshot_exposes_the_box_buffers_and_counts():
    state = run_records(make_state(), on_boundary(0, -0.5, 4), [0.2, 0.4, 0.6, 0.8])
    snap = jax.device_get(TEACHER.snapshot(state))
    np.testing.assert_array_equal(snap["box_low"], BOX_LOW)
    np.testing.assert_array_equal(snap["box_high"], BOX_HIGH)
    np.testing.assert_array_equal(snap["fill_low"], [4, 0, 0])
    np.testing.assert_allclose(snap["mean_low"], [0.5, 0.0, 0.0], atol=1e-6)
    for name in ("expansions_low", "expansions_high", "shrinks_low", "shrinks_high"):
        np.testing.assert_array_equal(snap[name], [0, 0, 0])
    assert int(snap["episodes_seen"]) == 4


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(threshold_low=0.8, threshold_high=0.5), "threshold_low"),
        (dict(initial_task=[0.0, 9.0, 15.0]), "outside the task space"),
        (dict(initial_task=[0.0, 1.0]), "initial_task has 2 entries"),
        (dict(boundary_sampling_p=1.5), "boundary_sampling_p"),
        (dict(step_siz=0.1), "step_size"),
    ],
)
def test_bad_settings_fail_at_construction(config, message):
    with pytest.raises(ConfigError, match=message):
        TEACHERS.get("adr")(task_space=SPACE, **config)
