"""The `gymnax` env entry (envs/gymnax_space.py): every gymnax id as a task space, derived
fields, integer and boolean fields, ties, refusals, the level generator and the teachers
that draw from it, and the presets built on it."""

from __future__ import annotations

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments.classic_control import acrobot, cartpole

from acl.core.errors import ConfigError
from acl.core.spaces import NON_NEGATIVE, POSITIVE, Box
from acl.teachers import TEACHERS
from acl.teachers.base import RunContext
from envs.gymnax_space import (
    DOCS_EXAMPLE,
    FIELD_RULES,
    GYMNAX_IDS,
    PARAMS_MODULES,
    GymnaxSpace,
    declared_fields,
    docs_section,
    env_fields,
)
from envs.registry import make_env

KEY = jax.random.PRNGKey(0)


def gymnax_env(**config) -> GymnaxSpace:
    return make_env("gymnax", **{"success_threshold": 0.0, **config})


def corner_levels(key, n, space):
    """A user's level generator (`generator: tests.test_gymnax_space:corner_levels`): the
    box's corners only, [n, D]."""
    high = jax.random.bernoulli(key, 0.5, (n, space.dim))
    return jnp.where(high, space.high_array, space.low_array)


def wrong_shape_levels(key, n, space):
    return jnp.zeros((n, space.dim + 1))


# -- every id --------------------------------------------------------------------------------

FIELD_FOR_ID = {
    "CartPole-v1": ("masspole", 0.05, 2.0),  # float, with derived fields
    "Pendulum-v1": ("g", 5.0, 15.0),
    "Acrobot-v1": ("link_length_1", 0.5, 2.0),
    "MountainCar-v0": ("goal_position", 0.3, 0.55),  # ordered under max_position 0.6
    "MountainCarContinuous-v0": ("min_action", -2.0, -0.5),
    "Asterix-MinAtar": ("ramping", 0.0, 1.0),  # bool
    "Breakout-MinAtar": ("max_steps_in_episode", 100.0, 1000.0),  # its only field
    "Freeway-MinAtar": ("player_speed", 0.0, 6.0),
    "Seaquest-MinAtar": ("max_oxygen", 50.0, 300.0),  # int: float32 breaks tracing
    "SpaceInvaders-MinAtar": ("shot_cool_down", 0.0, 10.0),  # int: the same
    "Catch-bsuite": ("max_steps_in_episode", 10.0, 1000.0),
    "DeepSea-bsuite": ("deterministic", 0.0, 1.0),
    "MemoryChain-bsuite": ("memory_length", 1.0, 10.0),
    "UmbrellaChain-bsuite": ("chain_length", 2.0, 20.0),
    "DiscountingChain-bsuite": ("optimal_return", 0.5, 2.0),
    "SimpleBandit-bsuite": ("max_steps_in_episode", 10.0, 200.0),
    "FourRooms-misc": ("fail_prob", 0.0, 0.75),
    "MetaMaze-misc": ("reward", 1.0, 20.0),
    "PointRobot-misc": ("goal_radius", 0.05, 0.5),
    "BernoulliBandit-misc": ("max_steps_in_episode", 20.0, 200.0),  # derived t_max
    "GaussianBandit-misc": ("sigma_p", 0.0, 2.0),
    "Reacher-misc": ("torque_scale", 0.5, 2.0),
    "Swimmer-misc": ("dt", 0.01, 0.1),
    "Pong-misc": ("paddle_y_speed", 0.0, 3.0),  # int: float32 breaks tracing
    "FrozenLake-misc": ("max_steps_in_episode", 10.0, 100.0),
}
"""The field each id's smoke run varies: a numeric field of its own where it has one."""


def test_the_table_covers_every_gymnax_id_and_declares_its_fields_as_built():
    assert len(GYMNAX_IDS) == 26 and set(FIELD_RULES) == set(GYMNAX_IDS)
    assert set(PARAMS_MODULES) == set(GYMNAX_IDS)
    assert set(FIELD_FOR_ID) == set(GYMNAX_IDS) - {"MNISTBandit-bsuite"}
    for gymnax_id in FIELD_FOR_ID:
        rules = FIELD_RULES[gymnax_id]
        declared = declared_fields(gymnax_id, rules)
        built = env_fields(gymnax.make(gymnax_id)[1], rules)
        assert list(declared) == list(built), gymnax_id
        assert {n: f.kind for n, f in declared.items()} == {n: f.kind for n, f in built.items()}, (
            gymnax_id
        )
        for rule_field in [*rules.fields, *rules.inert, *(d.name for d in rules.derived)]:
            assert rule_field in built, (gymnax_id, rule_field)


MINATAR = sorted(i for i in FIELD_FOR_ID if i.endswith("-MinAtar"))
"""Their programs take seconds each to compile: the fast suite traces them (which is
where a float32 integer breaks), the slow one runs them too."""


def _space_and_tasks(gymnax_id):
    """The id's space over its FIELD_FOR_ID field, two tasks drawn from its generator and
    their params; checks that the field holds each task's value as its own kind."""
    name, low, high = FIELD_FOR_ID[gymnax_id]
    env = gymnax_env(id=gymnax_id, task={name: [low, high]})
    info = env.param_fields[name]
    tasks = env.sample_tasks(jax.random.PRNGKey(1), 2)
    params = env.params_for_tasks(tasks)
    # The field holds the task value as its own kind: rounded ints, thresholded bools.
    value = np.asarray(getattr(params, name))
    expected = np.asarray(jax.vmap(info.cast)(tasks[:, 0]))
    np.testing.assert_array_equal(value, expected)
    assert value.dtype == expected.dtype
    if info.kind == "int":
        assert value.dtype == np.int32
    return env, params


def _steps(env, num_steps=3):
    """(params [2, ...], keys [2]) -> (obs, reward, terminated, truncated) [2, T, ...]: a
    few random-action steps per instance, in a scan as the loop takes them."""
    action_space = env.action_space()

    def run(params, key):
        obs, state = env.reset(key, params)

        def body(state, key):
            obs, state, reward, terminated, truncated, _ = env.step(
                key, state, action_space.sample(key), params
            )
            return state, (obs, reward, terminated, truncated)

        return jax.lax.scan(body, state, jax.random.split(key, num_steps))[1]

    return jax.vmap(run)


def _check_steps(env, out, num_steps=3):
    obs, reward, terminated, truncated = out
    assert obs.shape == (2, num_steps) + env.observation_space().shape
    assert reward.shape == terminated.shape == truncated.shape == (2, num_steps)
    assert reward.dtype == jnp.float32
    assert terminated.dtype == jnp.bool_ and truncated.dtype == jnp.bool_


@pytest.mark.parametrize(
    "gymnax_id",
    [pytest.param(i, marks=pytest.mark.slow) if i in MINATAR else i for i in sorted(FIELD_FOR_ID)],
)
def test_every_id_runs_a_few_steps_at_a_drawn_task(gymnax_id):
    env, params = _space_and_tasks(gymnax_id)
    out = jax.jit(_steps(env))(params, jax.random.split(KEY, 2))
    _check_steps(env, out)
    obs, reward, terminated, truncated = out
    assert bool(jnp.all(jnp.isfinite(reward))) and not bool(jnp.any(terminated & truncated))


@pytest.mark.parametrize("gymnax_id", MINATAR)
def test_the_minatar_ids_trace_a_few_steps_at_a_drawn_task(gymnax_id):
    env, params = _space_and_tasks(gymnax_id)
    _check_steps(env, jax.eval_shape(_steps(env), params, jax.random.split(KEY, 2)))


# -- derived fields, integers, booleans, ties ---------------------------------------------------


def _rollout(step, reset, params, steps=30):
    """Observations [T, ...] of an alternating-action rollout, from key 0."""
    obs, state = reset(KEY, params)
    out = []
    for t in range(steps):
        obs, state, *_ = step(jax.random.PRNGKey(t), state, t % 2, params)
        out.append(np.asarray(obs))
    return np.stack(out)


def test_derived_fields_are_recomputed_as_gymnax_would_from_hand_computed_params():
    # gymnax keeps a stored derived field as it was: the bug the entry guards against.
    assert cartpole.EnvParams(masspole=5.0).total_mass == pytest.approx(1.1)
    env = gymnax_env(id="CartPole-v1", task={"length": [0.1, 3.0], "masspole": [0.05, 6.0]})
    params = env.task_to_params(jnp.array([1.3, 5.0]), env.default_params())
    by_hand = cartpole.EnvParams(
        length=1.3, masspole=5.0, total_mass=1.0 + 5.0, polemass_length=5.0 * 1.3
    )
    np.testing.assert_allclose(params.total_mass, 6.0, rtol=1e-6)
    np.testing.assert_allclose(params.polemass_length, 6.5, rtol=1e-6)
    gymnax_cartpole = cartpole.CartPole()
    ours = _rollout(jax.jit(env.step), jax.jit(env.reset), params)
    theirs = _rollout(
        jax.jit(lambda k, s, a, p: gymnax_cartpole.step_env(k, s, a, p)),
        jax.jit(gymnax_cartpole.reset_env),
        by_hand,
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    stale = cartpole.EnvParams(length=1.3, masspole=5.0)  # total_mass 1.1: other dynamics
    assert not np.allclose(ours, _rollout(jax.jit(env.step), jax.jit(env.reset), stale), rtol=1e-3)


def test_a_task_over_the_episode_length_truncates_at_its_own_limit():
    env = gymnax_env(id="CartPole-v1", task={"max_steps_in_episode": [5.0, 20.0]})
    assert env.max_episode_steps == 20  # evaluation plays the longest episode
    params = env.task_to_params(jnp.array([7.2]), env.default_params())
    step = jax.jit(env.step)
    _, state = env.reset(KEY, params)
    ends = []
    for t in range(7):  # alternating pushes keep the pole up for 7 steps
        _, state, _, terminated, truncated, _ = step(jax.random.PRNGKey(t), state, t % 2, params)
        ends.append((bool(terminated), bool(truncated)))
    assert ends == [(False, False)] * 6 + [(False, True)]


def test_the_bandits_time_horizon_follows_its_episode_length():
    env = gymnax_env(id="BernoulliBandit-misc", task={"max_steps_in_episode": [20.0, 60.0]})
    assert env.max_episode_steps == 60
    params = env.params_for_tasks(jnp.array([[20.4], [44.6]]))
    np.testing.assert_array_equal(params.max_steps_in_episode, [20, 45])
    np.testing.assert_array_equal(params.t_max, [20, 45])
    # A static episode length moves the horizon too.
    fixed = gymnax_env(id="BernoulliBandit-misc", task={"reward_prob": [0.1, 0.9]})
    short = make_env(
        "gymnax",
        id="BernoulliBandit-misc",
        task={"reward_prob": [0.1, 0.9]},
        success_threshold=0.0,
        max_episode_steps=30,
    )
    assert fixed.default_params().t_max == 100 and short.default_params().t_max == 30


def test_integer_fields_are_rounded_int32_and_boolean_fields_thresholded():
    env = gymnax_env(
        id="Seaquest-MinAtar",
        task={"max_oxygen": [10.0, 300.0], "ramping": [0.0, 1.0]},
    )
    params = env.params_for_tasks(jnp.array([[7.4, 0.49], [7.6, 0.51], [250.5, 1.0]]))
    np.testing.assert_array_equal(params.max_oxygen, [7, 8, 250])  # half to even
    assert params.max_oxygen.dtype == jnp.int32
    np.testing.assert_array_equal(params.ramping, [False, True, True])
    assert params.ramping.dtype == jnp.bool_
    with pytest.raises(ConfigError, match=r"dimension 'ramping' must be in \[0, 1\]"):
        gymnax_env(id="Seaquest-MinAtar", task={"ramping": [0.0, 2.0]})
    with pytest.raises(ConfigError, match="dimension 'max_oxygen' must be >= 1"):
        gymnax_env(id="Seaquest-MinAtar", task={"max_oxygen": [0.2, 10.0]})


@pytest.mark.parametrize(
    "gymnax_id,name",
    [
        ("Seaquest-MinAtar", "max_oxygen"),
        ("SpaceInvaders-MinAtar", "shot_cool_down"),
        ("Pong-misc", "paddle_y_speed"),
    ],
)
def test_a_float32_integer_field_breaks_the_tracing_so_the_entry_casts_it(gymnax_id, name):
    env = gymnax_env(id=gymnax_id, task={name: [1.0, 9.0]})
    tasks = jnp.array([[2.4], [6.6]])
    cast = env.params_for_tasks(tasks)
    keys = jax.random.split(KEY, 2)
    _check_steps(env, jax.eval_shape(_steps(env), cast, keys))
    as_float = cast.replace(**{name: tasks[:, 0]})  # what a task column is: float32
    with pytest.raises(TypeError):
        jax.eval_shape(_steps(env), as_float, keys)


def test_a_tied_dimension_sets_every_field_it_names():
    # JaxUED's Acrobot: one length for both links, one mass for both.
    task = {
        "link_length": {"fields": ["link_length_1", "link_length_2"], "bounds": [0.01, 10.01]},
        "link_mass": {"fields": ["link_mass_1", "link_mass_2"], "bounds": [0.01, 10.01]},
    }
    env = gymnax_env(id="Acrobot-v1", task=task, success_threshold=-100.0)
    assert env.task_space.names == ("link_length", "link_mass")
    assert env.task_space.units == ("m", "kg") and env.task_space.default == (1.0, 1.0)
    assert env.task_space.limits == (POSITIVE, POSITIVE)
    assert env.return_bounds == (-500.0, 0.0)
    params = env.task_to_params(jnp.array([2.5, 0.3]), env.default_params())
    assert float(params.link_length_1) == float(params.link_length_2) == pytest.approx(2.5)
    assert float(params.link_mass_1) == float(params.link_mass_2) == pytest.approx(0.3)
    by_hand = acrobot.EnvParams(
        link_length_1=2.5, link_length_2=2.5, link_mass_1=0.3, link_mass_2=0.3
    )
    gymnax_acrobot = acrobot.Acrobot()
    ours = _rollout(jax.jit(env.step), jax.jit(env.reset), params, steps=10)
    theirs = _rollout(
        jax.jit(lambda k, s, a, p: gymnax_acrobot.step_env(k, s, a, p)),
        jax.jit(gymnax_acrobot.reset_env),
        by_hand,
        steps=10,
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_the_jaxued_configs_express_their_spaces():
    from acl.build import build_env
    from acl.config import load_config

    cases = {
        "gymnax_acrobot_jaxued": ("Acrobot-v1", ("link_length", "link_mass")),
        "gymnax_pendulum_jaxued": ("Pendulum-v1", ("l", "m")),
        "gymnax_cartpole_jaxued_random": ("CartPole-v1", ("length", "masspole")),
    }
    for name, (gymnax_id, names) in cases.items():
        env = build_env(load_config(f"experiments/configs/{name}.yaml"))
        assert env.gymnax_id == gymnax_id and env.task_space.names == names, name
        assert env.task_space.low == (0.01, 0.01) and env.task_space.high == (10.01, 10.01)
    acrobot_env = build_env(load_config("experiments/configs/gymnax_acrobot_jaxued.yaml"))
    assert [d.fields for d in acrobot_env.dimensions] == [
        ("link_length_1", "link_length_2"),
        ("link_mass_1", "link_mass_2"),
    ]


# -- refusals, each one line ---------------------------------------------------------------------

REFUSALS = [
    ({"id": "CartPole-v2", "task": {"length": [0.1, 1.0]}}, "did you mean 'CartPole-v1'"),
    ({"id": "MNISTBandit-bsuite", "task": {"max_steps_in_episode": [1, 2]}}, "downloads MNIST"),
    ({"id": "CartPole-v1", "task": {"lenght": [0.1, 1.0]}}, "did you mean 'length'"),
    (
        {"id": "Acrobot-v1", "task": {"available_torque": [0.1, 1.0]}},
        "available_torque is refused: an array: a task value is a scalar",
    ),
    (
        {"id": "DiscountingChain-bsuite", "task": {"reward_timestep": [1, 10]}},
        "reward_timestep is refused: an array",
    ),
    (
        {"id": "CartPole-v1", "task": {"total_mass": [1.0, 2.0]}},
        "total_mass is refused: derived, masscart + masspole",
    ),
    (
        {"id": "Asterix-MinAtar", "task": {"shot_cool_down": [1, 5]}},
        "shot_cool_down is refused: no effect on the dynamics",
    ),
    ({"id": "CartPole-v1", "task": {"length": "long"}}, "env.task.length must be [low, high]"),
    ({"id": "CartPole-v1", "task": {"length": [0.1]}}, "env.task.length must be [low, high]"),
    (
        {"id": "CartPole-v1", "task": {"length": [-1.0, 1.0]}},
        "env.task.low: dimension 'length' must be > 0 (its physical limit), got -1",
    ),
    (
        {"id": "CartPole-v1", "task": {"length": [2.0, 1.0]}},
        "dimension 'length' has low=2.0 >= high=1.0",
    ),
    (
        {"id": "MountainCar-v0", "task": {"goal_position": [0.4, 0.7]}},
        "MountainCar-v0 needs goal_position <= max_position for every task",
    ),
    (
        {"id": "MountainCarContinuous-v0", "task": {"min_action": [-1.0, 1.5]}},
        "needs min_action < max_action",
    ),
    (
        {
            "id": "CartPole-v1",
            "task": {
                "a": {"fields": ["length"], "bounds": [0.1, 1]},
                "b": {"fields": ["length"], "bounds": [0.1, 1]},
            },
        },
        "field length is set by dimension 'a' already",
    ),
    ({"id": "CartPole-v1", "task": {}}, "env.task: name at least one task dimension"),
    (
        {"id": "CartPole-v1", "task": {"length": [0.1, 1.0]}, "success_threshold": None},
        "env.success_threshold: the gymnax entry needs one",
    ),
    (
        {"id": "CartPole-v1", "task": {"length": [0.1, 1.0]}, "return_bounds": [5, 1]},
        "env.return_bounds needs low < high",
    ),
    (
        {"id": "CartPole-v1", "task": {"max_steps_in_episode": [10, 200]}, "max_episode_steps": 50},
        "env.max_episode_steps (50) is below the task's longest episode",
    ),
    (
        {"id": "CartPole-v1", "task": {"length": [0.1, 1.0]}, "generator": "nowhere_at_all:fn"},
        "env.generator: cannot import 'nowhere_at_all'",
    ),
    (
        {"id": "CartPole-v1", "task": {"length": [0.1, 1.0]}, "generator": "levels"},
        "env.generator must be 'package.module:function'",
    ),
    (
        {
            "id": "CartPole-v1",
            "task": {"length": [0.1, 1.0]},
            "generator": "tests.test_gymnax_space:wrong_shape_levels",
        },
        "env.generator must return tasks [n, 1]; for n = 3 it returned shape (3, 2)",
    ),
]


@pytest.mark.parametrize("config,message", REFUSALS, ids=[m[:40] for _, m in REFUSALS])
def test_bad_input_is_one_config_error_line(config, message):
    config = {"success_threshold": 1.0, **config}
    with pytest.raises(ConfigError) as error:
        make_env("gymnax", **config)
    text = str(error.value)
    assert message in text and len(text.splitlines()) == 1, text


def test_narrowing_or_widening_the_box_keeps_the_orderings():
    env = gymnax_env(id="MountainCar-v0", task={"goal_position": [0.3, 0.5]})
    space = env.task_space
    env.task_space = space.replace(high=(0.6,))  # goal_position <= max_position: allowed
    with pytest.raises(ConfigError, match="needs goal_position <= max_position"):
        env.task_space = space.replace(high=(0.65,))
    with pytest.raises(ConfigError, match="needs min_position < goal_position"):
        env.task_space = space.replace(low=(-1.2,))


RESCALING_TEACHERS = ["alp_gmm", "covar_gmm", "adr", "spdl", "jsrl"]


@pytest.mark.parametrize("teacher", RESCALING_TEACHERS)
def test_a_teacher_that_rescales_returns_refuses_a_space_without_return_bounds(teacher):
    task = {"max_steps_in_episode": [10.0, 100.0]}
    env = gymnax_env(id="Catch-bsuite", task=task)
    assert env.return_bounds is None
    factory = TEACHERS.get(teacher)
    context = RunContext(env=env, return_bounds=None, num_envs=4)
    with pytest.raises(ConfigError) as error:
        factory(task_space=env.task_space, context=context)
    text = str(error.value)
    assert len(text.splitlines()) == 1
    assert text.startswith("teacher.return_bounds: ") and "env 'gymnax' declares none" in text
    if teacher == "jsrl":
        return  # its guide (an oracle or a saved run) needs more than this env
    # Bounds from the config (the env's, or the teacher's own) let it build.
    bounded = gymnax_env(id="Catch-bsuite", task=task, return_bounds=[-1, 1])
    assert bounded.return_bounds == (-1.0, 1.0)
    factory(
        task_space=bounded.task_space,
        context=RunContext(env=bounded, return_bounds=bounded.return_bounds, num_envs=4),
    )
    factory(task_space=env.task_space, context=context, return_bounds=[-1.0, 1.0])


def test_known_return_bounds_follow_the_box_and_episode_length():
    pendulum = gymnax_env(id="Pendulum-v1", task={"max_torque": [0.5, 6.0]})
    worst = np.pi**2 + 0.1 * 8.0**2 + 0.001 * 6.0**2
    assert pendulum.return_bounds == pytest.approx((-200 * worst, 0.0))
    pendulum.task_space = pendulum.task_space.replace(high=(3.0,))
    worst = np.pi**2 + 0.1 * 8.0**2 + 0.001 * 3.0**2
    assert pendulum.return_bounds == pytest.approx((-200 * worst, 0.0))
    steps = gymnax_env(id="CartPole-v1", task={"max_steps_in_episode": [50.0, 300.0]})
    assert steps.max_episode_steps == 300 and steps.return_bounds == (0.0, 300.0)
    car = gymnax_env(id="MountainCarContinuous-v0", task={"max_action": [0.5, 2.0]})
    assert car.return_bounds == pytest.approx((-0.1 * 4.0 * 999, 100.0))
    given = gymnax_env(id="CartPole-v1", task={"length": [0.1, 1.0]}, return_bounds=[0, 1])
    assert given.return_bounds == (0.0, 1.0)


# -- the level generator and the UED teachers ----------------------------------------------------


def _corner_env(**config):
    return gymnax_env(
        id="CartPole-v1",
        task={"length": [0.2, 2.0], "masspole": [0.1, 3.0]},
        generator="tests.test_gymnax_space:corner_levels",
        **config,
    )


def _on_corners(tasks, space) -> bool:
    tasks = np.asarray(tasks)
    low, high = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
    return bool(np.all((tasks == low) | (tasks == high)))


def test_the_generator_is_uniform_by_default_or_the_users_function():
    uniform = gymnax_env(id="CartPole-v1", task={"length": [0.2, 2.0], "masspole": [0.1, 3.0]})
    np.testing.assert_array_equal(
        uniform.sample_tasks(KEY, 64), uniform.task_space.sample_uniform(KEY, 64)
    )
    assert not _on_corners(uniform.sample_tasks(KEY, 64), uniform.task_space)
    env = _corner_env()
    tasks = jax.jit(env.sample_tasks, static_argnums=1)(KEY, 64)
    assert tasks.shape == (64, 2) and tasks.dtype == jnp.float32
    assert _on_corners(tasks, env.task_space)
    np.testing.assert_array_equal(tasks, corner_levels(KEY, 64, env.task_space))


@pytest.mark.parametrize("teacher", ["dr", "plr", "robust_plr"])
def test_the_ued_teachers_draw_fresh_levels_from_the_generator(teacher):
    env = _corner_env()
    context = RunContext(env=env, loop_mode="batch", num_envs=16)
    config = {} if teacher == "dr" else {"capacity": 8}
    made = TEACHERS.get(teacher)(task_space=env.task_space, context=context, **config)
    state = made.init(KEY, made.default_params())
    _, tasks, _ = made.sample(state, jax.random.PRNGKey(2), 16)
    assert tasks.shape == (16, 2) and _on_corners(tasks, env.task_space)


def test_sfl_draws_its_random_levels_from_the_generator():
    env = _corner_env(max_episode_steps=5)
    context = RunContext(env=env, agent=object(), play=lambda *args: None)
    sfl = TEACHERS.get("sfl")(
        task_space=env.task_space,
        context=context,
        num_batches=1,
        batch_size=8,
        rollout_steps=6,
        num_to_save=4,
    )
    assert sfl.generates
    state = sfl.init(KEY, sfl.default_params())
    _, tasks, _ = sfl.sample(state, jax.random.PRNGKey(3), 16)
    assert _on_corners(tasks, env.task_space)


# -- the presets ----------------------------------------------------------------------------------

SHIPPED_SPACES = {
    "cartpole": Box(
        low=(0.05, 0.05, 1.0),
        high=(2.0, 2.0, 1000.0),
        names=("pole_half_length", "pole_mass", "force_mag"),
        units=("m", "kg", "N"),
        default=(0.5, 0.1, 10.0),
        limits=(POSITIVE, POSITIVE, NON_NEGATIVE),
    ),
    "acrobot": Box(
        low=(0.1, 0.1, 0.2),
        high=(3.0, 3.0, 3.0),
        names=("link_mass_1", "link_mass_2", "torque"),
        units=("kg", "kg", "N m"),
        default=(1.0, 1.0, 1.0),
        limits=(POSITIVE, POSITIVE, NON_NEGATIVE),
    ),
    "pendulum": Box(
        low=(0.2, 0.2, 0.2),
        high=(3.0, 3.0, 6.0),
        names=("mass", "length", "max_torque"),
        units=("kg", "m", "N m"),
        default=(1.0, 1.0, 2.0),
        limits=(POSITIVE, POSITIVE, NON_NEGATIVE),
    ),
    "mountain_car_continuous": Box(
        low=(0.0002, 0.0005),
        high=(0.004, 0.006),
        names=("power", "gravity"),
        units=("position units / step^2",) * 2,
        default=(0.0015, 0.0025),
        limits=(NON_NEGATIVE, NON_NEGATIVE),
    ),
}
"""The task spaces the shipped classes declared before they became presets."""


@pytest.mark.parametrize("name", sorted(SHIPPED_SPACES))
def test_the_presets_keep_the_shipped_task_spaces(name):
    env = make_env(name)
    assert isinstance(env, GymnaxSpace) and env.task_space == SHIPPED_SPACES[name]
    # Their uniform generator is the box's: random levels are the tasks they were.
    np.testing.assert_array_equal(env.sample_tasks(KEY, 8), env.task_space.sample_uniform(KEY, 8))


def test_the_docs_table_lists_every_id_and_the_example_builds():
    text = docs_section()
    for gymnax_id in GYMNAX_IDS:
        assert f"| `{gymnax_id}` |" in text
    env = make_env("gymnax", **DOCS_EXAMPLE)
    assert env.task_space.names == ("length", "masspole") and env.return_bounds == (0.0, 500.0)
    params = env.default_params()
    fields = env_fields(params, FIELD_RULES["CartPole-v1"])
    assert fields["max_steps_in_episode"].kind == "int" and fields["length"].kind == "float"


def test_named_test_sets_join_jaxued_levels_and_uniform_tasks_in_groups():
    from envs.registry import TEST_SETS

    env = make_env(
        "gymnax",
        id="CartPole-v1",
        task={"length": [0.01, 10.01], "masspole": [0.01, 10.01]},
        success_threshold=475,
    )
    provider = TEST_SETS.get("gymnax")
    names, tasks = provider(env, "jaxued_eval+uniform(100)", 0)
    assert tasks.shape == (201, 2) and len(names) == 201
    # JaxUED's grid: logspace(log10 0.05, log10 10, 10) per dimension, then the default.
    np.testing.assert_allclose(sorted(set(tasks[:100, 0])), np.geomspace(0.05, 10, 10), rtol=1e-6)
    assert names[100] == "jaxued_eval/default"
    np.testing.assert_allclose(tasks[100], [0.5, 0.1], rtol=1e-6)
    assert all(n.startswith("uniform/") for n in names[101:])
    again = provider(env, "jaxued_eval+uniform(100)", 0)[1]
    np.testing.assert_array_equal(again, tasks)  # a fixed test set
    assert provider(env, "default", 0)[0] == ("default/task",)
    with pytest.raises(ConfigError, match="cannot read 'grid"):
        provider(env, "jaxued_eval+grid(3)", 0)
    with pytest.raises(ConfigError, match="leaves the task space"):
        provider(env, "log_grid(0.001,10,3)", 0)
