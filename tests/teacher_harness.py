"""A conformance harness any teacher can be dropped into.

    check_teacher(make_teacher)   # make_teacher(task_space) -> teacher
    check_registered_teacher("my_teacher", {"rate": 0.2})   # by its config name

`check_registered_teacher` builds a teacher by the name a config gives it (a built-in, an
installed plug-in's entry point, or `package.module:Name`; docs/plugins.md) as the run
builds it, and runs `check_teacher` on it: the check a plug-in's author runs on their
teacher, from a checkout of ACL-JAX with the plug-in installed or on PYTHONPATH.

It checks the protocol, jit, vmap over seeds, a valid sample after every update, and
that an all-invalid feedback mask (with garbage in the masked records) changes nothing
that could poison later samples.

Keywords of `check_teacher` for teachers beyond the box tasks of `SPACE`:
- `space=`: the task space handed to `make_teacher` and checked against (an env's, e.g.
  `Maze(6, 6).task_space` for level teachers); default `SPACE`.
- `make_rollout=`: `make_rollout(key, tasks [n, D])` -> `acl.core.types.Transition`
  [T, n], the `UpdateContext.rollout` every `update` gets (teachers that score levels,
  PLR and PAIRED, read it); pure JAX (it is vmapped over seeds). Default:
  `fake_rollout(key, n)` (random rewards and dones, `extras.value`).
- `make_student=`: `make_student(key)` -> the agent state every `update` gets as
  `UpdateContext.student` (teachers that evaluate the student, SFL, act with it through
  their run's agent); pure JAX. Default: `tiny_student(key)`, a real agent state of a
  small PPO, which teachers that ignore the student only have to accept.

Every update's feedback carries a random task-pool count `handed_out` in [0, batch].

`harness_teacher(name)` is a registered teacher as the harness runs it (`HARNESS_SETTINGS`);
tests that drive it through `jitted` and `loop_update` reuse the harness' compiled programs.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from acl.agents import AGENTS
from acl.config import check_kwargs
from acl.core.errors import ConfigError
from acl.core.spaces import Box
from acl.core.types import Feedback, SampleInfo, Transition, ValueEstimates, ValueSpec
from acl.teachers import TEACHERS
from acl.teachers.base import RunContext, Teacher, UpdateContext
from envs import make_env

SPACE = Box(low=(-1.0, 0.0, 10.0), high=(1.0, 5.0, 20.0), names=("a", "b", "c"))

# A fit window of 128 episodes: enough for the concentration tests in 3-D.
GMM_SETTINGS = dict(fit_rate=128, fit_every=3, k_max=3, em_iterations=10)
HARNESS_SETTINGS = {
    # Returns near 0.5 at the initial task (the centre) clear threshold_high: the box grows.
    "adr": dict(threshold_high=0.45, step_size=0.25),
    # Return bounds, so scaling and clipping run too (random_feedback's returns lie in
    # about [-0.3, 1.3]); tests/test_alp_gmm.py checks them on this teacher.
    "alp_gmm": dict(GMM_SETTINGS, return_bounds=(-1.0, 2.0)),
    "covar_gmm": GMM_SETTINGS,
    # Small networks and buffers; labels (goals played twice) train the GAN every 2nd update.
    "goal_gan": dict(
        generator_layers=(16,),
        discriminator_layers=(16,),
        gan_iterations=10,
        pretrain_iterations=10,
        pretrain_samples=64,
        update_size=8,
        update_every=2,
        pending_size=64,
        label_buffer_size=64,
        old_buffer_size=32,
    ),
    "riac": dict(max_region_size=16, max_regions=31),
    # Updates within the rounds (fake rollouts of 16 x 32 steps; default offset 200000).
    "spdl": dict(update_offset=1024, update_frequency=1024),
    # Small nets; trainings on every third update, so both branches of the cond run.
    "setter_solver": dict(
        train_every=3, train_steps=2, buffer_size=64, setter_batch=32, setter_hidden=16
    ),
    # The box grows within the harness's updates (the default ramp is 100).
    "schedule": dict(ramp_iterations=3),
    # ALP-GMM on two of the three dimensions, fitting within the rounds.
    "subspace": dict(
        teacher="alp_gmm", dims=["a", "c"], inner=dict(GMM_SETTINGS, return_bounds=(-1.0, 2.0))
    ),
}
"""Keys under which a registered teacher's periodic work happens within check_teacher's
rounds (the defaults fit, split or grow too late to be checked); others run as configured."""


def harness_teacher(name: str, space: Box = SPACE):
    """Registered teacher `name` on `space` with its HARNESS_SETTINGS."""
    return registered_teacher(name, space, HARNESS_SETTINGS.get(name, {}))


def registered_teacher(
    name: str,
    space: Box = SPACE,
    config: Mapping[str, Any] | None = None,
    context: RunContext | None = None,
) -> Teacher:
    """The teacher a config's `teacher: {name: NAME, **config}` names, built on `space`
    as acl.build builds it (`factory(task_space=..., context=..., **config)`); `name` a
    built-in, a plug-in's entry point or `package.module:Name`. ConfigError, one line, for
    an unknown name or key, a plug-in that fails to import, or a factory that builds no
    `Teacher`. `context`: what the teacher knows of its run (None: nothing)."""
    config = dict(config or {})
    factory = TEACHERS.get(name, "teacher.name")
    check_kwargs(factory, config, "teacher", skip=("task_space", "context"))
    teacher = factory(task_space=space, context=context or RunContext(), **config)
    if not isinstance(teacher, Teacher):
        raise ConfigError(
            f"teacher.name: {TEACHERS.describe(name)} built a {type(teacher).__name__} object, "
            "not an instance of acl.teachers.base.Teacher"
        )
    return teacher


def check_registered_teacher(
    name: str,
    config: Mapping[str, Any] | None = None,
    *,
    env: str | None = None,
    env_config: Mapping[str, Any] | None = None,
    context: RunContext | None = None,
    rounds: int = 12,
    batch: int = 32,
    num_seeds: int = 3,
    make_rollout=None,
    make_student=None,
):
    """`check_teacher` on the teacher a config names `name` with keys `config` (a built-in,
    an installed plug-in's entry point or `package.module:Name`). Its task space is `SPACE`
    (3-D boxes), or with `env` the task space of that registered env (built with
    `env_config`), which its `RunContext` then carries, with its return bounds, for a
    teacher that reads the run's env; `context` replaces that `RunContext` (a teacher
    that builds or plays agents needs their builders, as tests/test_paired.py gives
    them). Pick `config` so that its periodic work (fits, splits) happens within
    `rounds`; the other arguments: `check_teacher`. Returns the unbatched run's last
    state."""
    space, run = SPACE, RunContext()
    if env is not None:
        built = make_env(env, **dict(env_config or {}))
        bounds = None if built.return_bounds is None else tuple(built.return_bounds)
        space, run = built.task_space, RunContext(env=built, return_bounds=bounds)
    context = run if context is None else context
    return check_teacher(
        lambda task_space: registered_teacher(name, task_space, config, context),
        rounds,
        batch,
        num_seeds,
        space=space,
        make_rollout=make_rollout,
        make_student=make_student,
    )


def feedback(tasks, returns, mask=None) -> Feedback:
    """Records of hand-made (task, return) episodes, all valid unless `mask` says not."""
    tasks = jnp.asarray(tasks, jnp.float32)
    n = tasks.shape[0]
    return Feedback(
        task=tasks,
        episode_return=jnp.asarray(returns, jnp.float32),
        success=jnp.zeros((n,), bool),
        length=jnp.ones((n,), jnp.int32),
        mask=jnp.ones((n,), bool) if mask is None else jnp.asarray(mask, bool),
    )


def random_feedback(
    key, tasks: jax.Array, valid_fraction: float = 0.7, space: Box = SPACE
) -> Feedback:
    """Feedback for tasks [K, D]: returns rise with the first coordinate, some masked."""
    k_mask, k_noise = jax.random.split(key)
    n = tasks.shape[0]
    ret = (tasks[:, 0] - space.low[0]) / (space.high[0] - space.low[0])
    ret = ret + 0.1 * jax.random.normal(k_noise, (n,))
    return Feedback(
        task=tasks,
        episode_return=ret,
        success=ret > 0.5,
        length=jnp.full((n,), 10, jnp.int32),
        mask=jax.random.uniform(k_mask, (n,)) < valid_fraction,
    )


@struct.dataclass
class RolloutExtras(ValueEstimates):
    """What a rollout reader needs of an agent's `extras`: its declared value estimates
    [T, N] and how it discounts (`ValueSpec`, each [T, N])."""

    value: jax.Array
    value_spec: ValueSpec | None = None


def fake_rollout(key, n: int, num_steps: int = 16) -> Transition:
    """A random rollout [T = num_steps, n]: sparse positive rewards, random episode ends
    (some terminated, the rest truncated), values in [0, 1) in `extras.value`."""
    k_reward, k_done, k_term, k_value = jax.random.split(key, 4)
    shape = (num_steps, n)
    done = jax.random.uniform(k_done, shape) < 0.2
    reward = jnp.where(done, jax.random.uniform(k_reward, shape), 0.0)
    return Transition(
        obs=jnp.zeros(shape + (1,)),
        action=jnp.zeros(shape, jnp.int32),
        reward=reward,
        terminated=done & (jax.random.uniform(k_term, shape) < 0.5),
        done=done,
        next_obs=jnp.zeros(shape + (1,)),
        loss_mask=jnp.ones(shape),
        extras=RolloutExtras(
            value=jax.random.uniform(k_value, shape),
            value_spec=ValueSpec(*(jnp.full(shape, x) for x in (0.995, 0.98, 1.0))),
        ),
    )


@functools.cache
def _tiny_agent():
    return AGENTS.get("ppo")(hidden_sizes=(4,))


def tiny_student(key) -> object:
    """A real agent state for `update`'s `student`: a PPO with 4 hidden units on a
    3-number observation and 2 actions, as a loop would hand over after its update."""
    from gymnax.environments import spaces

    obs_space = spaces.Box(low=-1.0, high=1.0, shape=(3,), dtype=jnp.float32)
    return _tiny_agent().init(key, obs_space, spaces.Discrete(2))


def garbage_feedback(tasks: jax.Array) -> Feedback:
    n = tasks.shape[0]
    # Dtypes as random_feedback's (float32, not weak): the jitted update is not compiled again.
    return Feedback(
        task=jnp.full_like(tasks, jnp.nan),
        episode_return=jnp.full((n,), jnp.nan, jnp.float32),
        success=jnp.ones((n,), bool),
        length=jnp.zeros((n,), jnp.int32),
        mask=jnp.zeros((n,), bool),
    )


def cache_if_hashable(make):
    """`make(...)` cached per equal arguments (teachers and spaces are frozen dataclasses);
    arguments that cannot be hashed (a teacher holding an unhashable env, say) get a fresh
    result."""
    cached = functools.cache(make)

    @functools.wraps(make)
    def lookup(*args):
        try:
            hash(args)
        except TypeError:
            return make(*args)
        return cached(*args)

    return lookup


@cache_if_hashable
def feedback_makers(space: Box):
    """random_feedback in `space`, for one seed and vmapped over seeds, jitted once per
    space: run eagerly, each of its ops compiles on its own, for every new shape."""
    one = jax.jit(functools.partial(random_feedback, space=space))
    return one, jax.jit(jax.vmap(one))


def assert_valid_tasks(tasks, n: int, space: Box = SPACE) -> None:
    """n tasks whose first D columns lie in `space`; columns after them (a teacher's own,
    acl.teachers.base) are only checked to be finite."""
    tasks = np.asarray(tasks)
    assert tasks.ndim == 2 and tasks.shape[0] == n and tasks.shape[1] >= space.dim, tasks.shape
    assert np.isfinite(tasks).all(), "non-finite task"
    tasks = tasks[:, : space.dim]
    assert np.isfinite(tasks).all(), "non-finite task"
    assert (tasks >= np.asarray(space.low) - 1e-6).all(), "task below the lower bound"
    assert (tasks <= np.asarray(space.high) + 1e-6).all(), "task above the upper bound"


def check_teacher(
    make_teacher,
    rounds: int = 12,
    batch: int = 32,
    num_seeds: int = 3,
    *,
    space: Box = SPACE,
    make_rollout=None,
    make_student=None,
):
    """`rounds` updates with `batch` records each; pick teacher settings whose periodic
    work (fits, splits) happens within them. `space`, `make_rollout`, `make_student`:
    module docstring.
    Returns the unbatched run's last state, to check that work happened."""
    teacher = make_teacher(space)
    assert isinstance(teacher, Teacher), "a teacher subclasses acl.teachers.base.Teacher"
    params = teacher.default_params()
    # Traced, not run: eagerly, each of init's ops would compile on its own.
    state = jax.eval_shape(teacher.init, jax.random.PRNGKey(0), params)
    assert dataclasses.is_dataclass(state) and not isinstance(state, dict), (
        "TeacherState must be a typed dataclass"
    )
    make_feedback, make_seed_feedbacks = feedback_makers(space)

    init, sample, _ = jitted(teacher)
    update_fn, update = loop_update(teacher, make_rollout, make_student)

    state = init(jax.random.PRNGKey(1), params)
    key = jax.random.PRNGKey(2)
    for step in range(rounds):
        key, k_sample, k_feedback = jax.random.split(key, 3)
        state, tasks, info = sample(state, k_sample, batch)
        assert isinstance(info, SampleInfo) and info.train_on.shape == (batch,)
        assert_valid_tasks(tasks, batch, space)
        feedback = make_feedback(k_feedback, tasks)
        state = update(state, tasks, feedback, jnp.int32(step), k_feedback)
        _, after, _ = sample(state, k_sample, batch)
        assert_valid_tasks(after, batch, space)

    # All-invalid feedback with NaN payload must not leak into the state.
    before = jax.tree.leaves(state)
    state = update(state, tasks, garbage_feedback(tasks), jnp.int32(rounds), key)
    for leaf in jax.tree.leaves(state):
        if jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating):
            assert np.isfinite(np.asarray(leaf)).all(), "masked garbage reached the state"
    assert len(before) == len(jax.tree.leaves(state))
    _, tasks, _ = sample(state, jax.random.PRNGKey(9), batch)
    assert_valid_tasks(tasks, batch, space)
    snapshot = jax.jit(teacher.snapshot)(state)
    assert isinstance(snapshot, dict)
    for name, value in snapshot.items():
        assert np.isfinite(np.asarray(value, dtype=np.float64)).all(), f"snapshot {name}"

    # vmap over seeds: one compiled program serves every seed.
    keys = jax.random.split(jax.random.PRNGKey(3), num_seeds)
    states = jax.jit(jax.vmap(teacher.init, in_axes=(0, None)))(keys, params)
    vsample = jax.jit(jax.vmap(teacher.sample, in_axes=(0, 0, None)), static_argnums=2)
    vupdate = jax.jit(jax.vmap(update_fn, in_axes=(0, 0, 0, None, 0)))
    for i in range(rounds):
        sample_keys = jax.random.split(jax.random.PRNGKey(10 + i), num_seeds)
        states, tasks, _ = vsample(states, sample_keys, batch)
        assert tasks.shape[:2] == (num_seeds, batch) and tasks.shape[2] >= space.dim
        for seed_tasks in tasks:
            assert_valid_tasks(seed_tasks, batch, space)
        feedback = make_seed_feedbacks(sample_keys, tasks)
        states = vupdate(states, tasks, feedback, jnp.int32(i), sample_keys)
    return state


@cache_if_hashable
def jitted(teacher):
    """(init, sample, update) of `teacher`, jitted once for every test handed an equal
    teacher (teachers are frozen dataclasses): each compiles once per shape, not per test."""
    return (
        jax.jit(teacher.init),
        jax.jit(teacher.sample, static_argnums=2),
        jax.jit(teacher.update),
    )


@cache_if_hashable
def loop_update(teacher, make_rollout=None, make_student=None):
    """`update_fn(state, tasks, feedback, step, key)`, teacher.update as the RL loop calls
    it: with an `UpdateContext` of a rollout (`make_rollout`, default `fake_rollout`) and
    the student's agent state (`make_student`, default `tiny_student`), and a task pool's
    handed-out count, drawn from `key`; and update_fn jitted, once per equal teacher."""
    make_rollout = make_rollout or (lambda key, tasks: fake_rollout(key, tasks.shape[0]))
    make_student = make_student or tiny_student

    def update_fn(state, tasks, feedback, step, key):
        rollout_key, count_key, update_key = jax.random.split(key, 3)
        # A task pool's count: some leading tasks were handed out, the rest not.
        count = jax.random.randint(count_key, (), 0, tasks.shape[0] + 1)
        feedback = feedback.replace(handed_out=count)
        rollout = make_rollout(rollout_key, tasks)
        # A key of its own: the other keys, and so every teacher's draws, stay as they were.
        student = make_student(jax.random.fold_in(key, 3))
        context = UpdateContext(rollout=rollout, student=student)
        return teacher.update(state, update_key, tasks, feedback, step, context)

    return update_fn, jax.jit(update_fn)


def many_samples(teacher, state, n: int, batch: int = 32) -> np.ndarray:
    """n tasks (a multiple of `batch`) from `batch`-task samples with keys 0, 1, ...: the
    program check_teacher compiles, instead of one more for n."""
    _, sample, _ = jitted(teacher)
    draws = [sample(state, jax.random.PRNGKey(i), batch)[1] for i in range(n // batch)]
    return np.concatenate([np.asarray(d) for d in draws])


def fit_once_without_random_tasks(teacher, tasks, returns, batch: int = 32):
    """A GMM teacher (random-task ratio 0) fed `tasks` [N, D] and their `returns` [N] in
    order, `batch` records per update (check_teacher's programs), the last update a fit
    step: (state, 4,000 samples)."""
    init, _, _ = jitted(teacher)
    _, update = loop_update(teacher)
    params = teacher.default_params().replace(random_task_ratio=jnp.float32(0.0))
    state = init(jax.random.PRNGKey(0), params)
    for start in range(0, len(tasks), batch):
        last = start + batch >= len(tasks)
        # A fit follows an update whose (step + 1) % fit_every == 0.
        step = jnp.int32(teacher.fit_every - 1 if last else 0)
        records = feedback(tasks[start : start + batch], returns[start : start + batch])
        state = update(state, records.task, records, step, jax.random.PRNGKey(2))
    return state, many_samples(teacher, state, 4000)
