"""SPDL: the trust-region step against scipy's SLSQP, moving towards the target, the std
floor, and the value of each episode's first state read from the rollout (the conformance
harness: tests/test_teachers.py)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from acl.core.errors import ConfigError
from acl.core.spaces import Box
from acl.core.types import Feedback, Transition, compact_feedback
from acl.teachers import TEACHERS
from acl.teachers.base import RunContext, UpdateContext
from acl.teachers.spdl import (
    KNOWN,
    STARTS_NEXT,
    Gaussian,
    Problem,
    diagonal_gaussian,
    episode_values,
    from_raw,
    solve,
    to_raw,
)
from tests.teacher_harness import RolloutExtras, feedback

SQUARE = Box(low=(0.0, 0.0), high=(1.0, 1.0))


def problem(seed: int, dim: int, alpha: float, max_kl: float, n: int = 200) -> Problem:
    """Contexts from a tilted Gaussian; values peak near (0.8, ...), away from its mean."""
    rng = np.random.default_rng(seed)
    chol = np.diag(rng.uniform(0.05, 0.2, dim)) + np.tril(rng.normal(0, 0.02, (dim, dim)), -1)
    old = Gaussian(
        mean=jnp.asarray(rng.uniform(0.2, 0.8, dim), jnp.float32),
        chol=jnp.asarray(chol, jnp.float32),
    )
    contexts = np.asarray(old.mean) + rng.normal(size=(n, dim)) @ chol.T
    values = 10 * np.exp(-np.sum((contexts - 0.8) ** 2, 1) / 0.1) + rng.normal(0, 0.1, n)
    weights = np.ones(n)
    weights[-20:] = 0.0  # padding rows: they must not count
    values[-20:] = 1e3
    return Problem(
        old=old,
        target=diagonal_gaussian(jnp.full(dim, 0.5), jnp.full(dim, 0.25)),
        contexts=jnp.asarray(contexts, jnp.float32),
        performance=jnp.asarray(values, jnp.float32),
        weights=jnp.asarray(weights, jnp.float32),
        alpha=jnp.float32(alpha),
        max_kl=jnp.float32(max_kl),
    )


def slsqp(p: Problem) -> tuple[float, float]:
    """(objective, KL) of scipy's SLSQP on the same problem and parameterisation."""
    dim = p.old.mean.shape[0]
    lower = np.tril_indices(dim)
    mean, factor = to_raw(p.old)

    def unpack(x):
        return from_raw((x[:dim], jnp.zeros((dim, dim)).at[lower].set(x[dim:])))

    def minus_objective(x):
        return -p.objective(unpack(x))

    def slack(x):
        return p.max_kl - p.constraint(unpack(x))

    f, g = jax.jit(minus_objective), jax.jit(jax.grad(minus_objective))
    c, dc = jax.jit(slack), jax.jit(jax.grad(slack))
    x0 = np.concatenate([np.asarray(mean), np.asarray(factor)[lower]]).astype(np.float64)
    result = scipy.optimize.minimize(
        lambda x: float(f(jnp.asarray(x, jnp.float32))),
        x0,
        jac=lambda x: np.asarray(g(jnp.asarray(x, jnp.float32)), np.float64),
        method="SLSQP",
        constraints=[
            {
                "type": "ineq",
                "fun": lambda x: float(c(jnp.asarray(x, jnp.float32))),
                "jac": lambda x: np.asarray(dc(jnp.asarray(x, jnp.float32)), np.float64),
            }
        ],
        options=dict(maxiter=500, ftol=1e-10),
    )
    q = unpack(jnp.asarray(result.x, jnp.float32))
    return float(p.objective(q)), float(p.constraint(q))


@functools.cache
def jitted_solve():
    teacher = TEACHERS.get("spdl")(task_space=SQUARE)
    params = teacher.default_params()
    return jax.jit(
        functools.partial(
            solve,
            learning_rate=params.learning_rate,
            rounds=teacher.solver_rounds,
            steps=teacher.solver_steps,
        )
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed,dim,alpha,max_kl",
    [(0, 2, 0.5, 0.1), (1, 3, 2.0, 0.8), (2, 2, 0.0, 0.05), (3, 3, 2.0, 0.8)],
)
def test_step_matches_slsqp(seed, dim, alpha, max_kl):
    p = problem(seed, dim, alpha, max_kl)
    q = jitted_solve()(p)
    ours, ours_kl = float(p.objective(q)), float(p.constraint(q))
    theirs, theirs_kl = slsqp(p)
    assert theirs_kl <= max_kl + 1e-4
    assert ours_kl <= max_kl + 1e-4, ours_kl
    assert ours >= theirs - 0.01 * abs(theirs), (ours, theirs)
    assert ours > float(p.objective(p.old))  # the step did something


def make_teacher(**config):
    return TEACHERS.get("spdl")(
        task_space=SQUARE,
        context=RunContext(),
        update_offset=0,
        update_frequency=1,
        solver_rounds=6,
        solver_steps=50,
        initial_mean=[0.15, 0.15],
        initial_std=[0.05, 0.05],
        **config,
    )


def run_updates(teacher, value_of, updates: int, params=None, batch: int = 128):
    """`updates` SPDL updates (no rollout: each episode's return is its performance);
    returns the snapshots after each."""
    params = teacher.default_params() if params is None else params
    state = teacher.init(jax.random.PRNGKey(0), params)
    sample = jax.jit(teacher.sample, static_argnums=2)
    update = jax.jit(teacher.update)
    snapshots = []
    for i in range(updates):
        key = jax.random.PRNGKey(i + 1)
        state, tasks, _ = sample(state, key, batch)
        records = feedback(tasks, value_of(tasks), mask=np.arange(batch) % 4 != 0)
        # Masked records carry garbage, which must change nothing.
        records = records.replace(
            episode_return=jnp.where(records.mask, records.episode_return, jnp.nan)
        )
        state = update(state, key, tasks, records, jnp.int32(i))
        snapshots.append(jax.tree.map(np.asarray, teacher.snapshot(state)))
    return snapshots


def near_target(tasks):
    return jnp.exp(-jnp.sum((tasks - 0.5) ** 2, axis=1) / 0.05)


@pytest.mark.slow
def test_moves_towards_the_target():
    teacher = make_teacher(max_kl=0.2, zeta=0.05)
    snapshots = run_updates(teacher, near_target, updates=8)
    kls = [s["kl_target"] for s in snapshots]
    first, last = snapshots[0], snapshots[-1]
    assert last["iterations"] == 8
    assert kls[-1] < 0.5 * kls[0], kls
    assert np.all(np.abs(last["mean"] - 0.5) < np.abs(first["mean"] - 0.5)), last["mean"]
    for s in snapshots:
        assert s["kl_previous"] <= 0.2 + 1e-4
        assert np.isfinite(s["alpha"]) and s["alpha"] >= 0


def narrow_peak(tasks):
    return jnp.exp(-jnp.sum((tasks - 0.2) ** 2, axis=1) / 0.002)


@pytest.mark.slow
def test_negative_returns_are_rescaled_so_alpha_can_grow():
    # A penalty per step: every return is negative, higher near the target.
    def value_of(tasks):
        return -15.0 + 5.0 * near_target(tasks)

    settings = dict(use_avg_performance=True, zeta=0.25)
    raw = run_updates(make_teacher(**settings), value_of, updates=3)
    scaled = run_updates(make_teacher(return_bounds=(-20.0, 0.0), **settings), value_of, 3)
    assert all(s["alpha"] == 0 for s in raw), "max(mean return, 0) is 0"
    assert all(s["alpha"] > 0 for s in scaled)
    assert scaled[-1]["kl_target"] < raw[-1]["kl_target"]
    with pytest.raises(ConfigError, match="return_bounds"):
        make_teacher(return_bounds=(0.0, -20.0))


@pytest.mark.slow
def test_std_never_goes_below_its_lower_bound():
    bound = 0.04
    free = run_updates(make_teacher(max_kl=0.5), narrow_peak, updates=8)
    # Without the floor the peak pulls a std below the bound: the test can fail.
    assert min(s["std"].min() for s in free) < bound
    floored = run_updates(
        make_teacher(max_kl=0.5, std_lower_bound=bound, kl_threshold=0.0), narrow_peak, updates=8
    )
    for s in floored:
        assert s["std"].min() >= bound - 1e-6, s["std"]


@pytest.mark.slow
def test_floor_lifts_once_close_to_the_target():
    # TeachMyAgent's kl_threshold: the floor holds only while KL(p || target) exceeds it.
    teacher = make_teacher(max_kl=0.5, std_lower_bound=0.04, kl_threshold=1e6)
    snapshots = run_updates(teacher, narrow_peak, updates=8)
    assert min(s["std"].min() for s in snapshots) < 0.04


def rollout(done, value) -> Transition:
    shape = done.shape
    zeros = jnp.zeros(shape)
    return Transition(
        obs=zeros[..., None],
        action=zeros,
        reward=zeros,
        terminated=jnp.asarray(done),
        done=jnp.asarray(done),
        next_obs=zeros[..., None],
        loss_mask=zeros + 1,
        extras=RolloutExtras(value=jnp.asarray(value, jnp.float32)),
    )


def records(done, lengths) -> Feedback:
    """The loop's records: one per (step, instance) slot, step-major."""
    done = np.asarray(done)
    return Feedback(
        task=jnp.zeros((done.size, 1)),
        episode_return=jnp.full((done.size,), -7.0),
        success=jnp.zeros((done.size,), bool),
        length=jnp.asarray(np.asarray(lengths).reshape(-1), jnp.int32),
        mask=jnp.asarray(done.reshape(-1)),
    )


@pytest.mark.slow
def test_values_are_read_at_each_episode_start():
    # T = 4 steps, N = 2 instances; value[t, n] = 10 t + n.
    value = 10 * np.arange(4)[:, None] + np.arange(2)[None, :]
    done = np.zeros((4, 2), bool)
    lengths = np.zeros((4, 2), int)
    done[1, 0], lengths[1, 0] = True, 2  # started at step 0: value 0
    done[3, 0], lengths[3, 0] = True, 2  # started at step 2: value 20
    done[2, 1], lengths[2, 1] = True, 5  # started 2 steps before this rollout: carried
    carry_value = jnp.asarray([0.0, 99.0])
    carry_known = jnp.asarray([STARTS_NEXT, KNOWN], jnp.int32)
    fb = records(done, lengths)
    got, has, new_value, new_known = episode_values(
        fb, rollout(done, value), carry_value, carry_known
    )
    expected = {2: 0.0, 5: 99.0, 6: 20.0}  # record index t * N + n
    for k in range(8):
        assert bool(has[k]) == (k in expected)
        if k in expected:
            assert float(got[k]) == expected[k]
    # Instance 0 ended at the last step: its next episode starts the next rollout;
    # instance 1's unfinished episode started at step 3 (value 31).
    assert new_known.tolist() == [STARTS_NEXT, KNOWN] and float(new_value[1]) == 31.0

    # Compacted feedback (loop.max_feedback) keeps the valid records in order.
    compact, _ = compact_feedback(fb, 2)
    got, has, _, _ = episode_values(compact, rollout(done, value), carry_value, carry_known)
    assert has.tolist() == [True, True] and got.tolist() == [0.0, 99.0]

    # Without a kept value the episode begun earlier has none; without extras.value, none.
    _, has, _, _ = episode_values(fb, rollout(done, value), jnp.zeros(0), jnp.zeros(0, jnp.int32))
    assert int(has.sum()) == 2
    no_values = rollout(done, value).replace(extras=None)
    _, has, _, _ = episode_values(fb, no_values, carry_value, carry_known)
    assert not bool(has.any())


@pytest.mark.slow
def test_update_uses_rollout_values_and_counts_env_steps():
    teacher = TEACHERS.get("spdl")(
        task_space=Box(low=(0.0,), high=(1.0,)),
        context=RunContext(num_envs=2),
        update_offset=8,
        update_frequency=8,
    )
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    value = 10 * np.arange(4)[:, None] + np.arange(2)[None, :] + 1.0
    done = np.zeros((4, 2), bool)
    lengths = np.zeros((4, 2), int)
    done[1, 0], lengths[1, 0] = True, 2
    fb = records(done, lengths)
    update = jax.jit(teacher.update)
    # Step 0: 8 env steps after it, the offset reached: an update.
    context = UpdateContext(rollout=rollout(done, value))
    state = update(state, jax.random.PRNGKey(1), fb.task, fb, jnp.int32(0), context)
    assert int(state.iterations) == 1 and float(state.value_share) == 1.0
    # 12 env steps per update from the rollout's shape: the next multiple of 8 is at 16.
    done = np.zeros((6, 2), bool)
    state = update(
        state,
        jax.random.PRNGKey(1),
        fb.task,
        records(done, done),
        jnp.int32(1),
        UpdateContext(rollout=rollout(done, 0 * done)),
    )
    assert int(state.iterations) == 1  # empty buffer: skipped, as TeachMyAgent does
