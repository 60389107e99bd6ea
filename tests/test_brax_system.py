"""Brax system parameters as the task (envs/brax_system.py): the task space, the System
leaves a task sets and bad input (fast: nothing here compiles a Brax step), then the
dynamics (slow: one jitted, vmapped rollout compiled once): a heavier pole falls
differently, each vmapped instance steps with its own System, and a time limit is a
truncation while a fallen pole is a termination.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.core.errors import ConfigError
from envs.base import TaskEnv
from envs.brax_system import (
    PARAMETERS,
    BraxSystem,
    SystemDimension,
    parse_dimension,
)
from envs.registry import make_env

HORIZON = 40
"""Steps of every physics rollout, and the fixture env's time limit."""
POLE_MASS = 5.0185914
"""inverted_pendulum's loaded pole mass (MuJoCo's capsule of density 1000), kg."""
GRAVITY = 9.81


@pytest.fixture(scope="module")
def env() -> BraxSystem:
    return make_env("brax_system", max_episode_steps=HORIZON)


def _leaf(tree, path: str):
    node = tree
    for part in path.split("."):
        node = getattr(node, part)
    return np.asarray(node)


# -- fast: no Brax compilation -------------------------------------------------------------


def test_registered_with_the_loaded_systems_defaults(env):
    assert isinstance(env, TaskEnv) and env.name == "brax_system"
    assert env.brax_env == "inverted_pendulum" and env.backend == "spring"
    space = env.task_space
    assert space.names == ("pole_mass", "gravity", "actuator_strength")
    assert space.units == ("kg", "m/s^2", "x gear")
    np.testing.assert_allclose(space.default, (POLE_MASS, GRAVITY, 1.0), rtol=1e-6)
    assert bool(space.contains(space.default_task))
    assert [str(limit) for limit in space.limits] == ["> 0", ">= 0", ">= 0"]
    # brax's inverted_pendulum pays 1 per step, the terminal step included.
    assert env.max_episode_steps == HORIZON
    assert env.return_bounds == (0.0, float(HORIZON))
    assert env.success_threshold == pytest.approx(0.95 * HORIZON)
    assert env.observation_space().shape == (4,) and env.action_space().shape == (1,)
    # spring: brax's env runs 4 physics steps of 0.005 s per env step.
    assert env.n_frames == 4 and float(env.system.opt.timestep) == pytest.approx(0.005)
    assert env.unfeasible_bounds is None and env.trivial_bounds is None


def test_the_default_task_puts_back_the_loaded_system(env):
    system = env.task_to_params(env.task_space.default_task, env.default_params())
    assert type(system) is type(env.system)
    for path in ("gravity", "opt.gravity", "link.inertia.mass", "link.inertia.i", "body_mass"):
        np.testing.assert_allclose(_leaf(system, path), _leaf(env.system, path), rtol=1e-6)
    np.testing.assert_allclose(system.actuator.gear, env.system.actuator.gear)
    np.testing.assert_allclose(system.actuator_gear, env.system.actuator_gear)


def test_a_task_sets_the_leaves_each_pipeline_reads(env):
    system = env.task_to_params(jnp.array([20.0, 3.0, 0.5]), env.default_params())
    cart, pole = env.bodies.index("cart"), env.bodies.index("pole")
    loaded_mass = _leaf(env.system, "link.inertia.mass")
    loaded_inertia = _leaf(env.system, "link.inertia.i")
    # brax's pipelines (spring reads these at init and in every step)
    np.testing.assert_allclose(_leaf(system, "gravity"), [0.0, 0.0, -3.0])
    np.testing.assert_allclose(_leaf(system, "link.inertia.mass")[pole], 20.0)
    np.testing.assert_allclose(_leaf(system, "link.inertia.mass")[cart], loaded_mass[cart])
    np.testing.assert_allclose(
        _leaf(system, "link.inertia.i")[pole],
        loaded_inertia[pole] * 20.0 / loaded_mass[pole],
        rtol=1e-5,
    )
    np.testing.assert_allclose(_leaf(system, "actuator.gear"), [50.0])
    # MuJoCo's (the mjx pipeline): body 0 is the world
    np.testing.assert_allclose(_leaf(system, "opt.gravity"), [0.0, 0.0, -3.0])
    np.testing.assert_allclose(_leaf(system, "body_mass")[1:], _leaf(system, "link.inertia.mass"))
    np.testing.assert_allclose(
        _leaf(system, "body_inertia")[pole + 1],
        np.diagonal(_leaf(system, "link.inertia.i")[pole]),
        rtol=1e-6,
    )
    np.testing.assert_allclose(_leaf(system, "actuator_gear")[:, 0], [50.0])
    # the loaded System itself is left alone
    np.testing.assert_allclose(_leaf(env.system, "link.inertia.mass")[pole], POLE_MASS, rtol=1e-6)


def _changed_leaves(before, after) -> set[str]:
    """The dotted paths of the System leaves that differ between two Systems."""
    changed = set()
    pairs = zip(jax.tree_util.tree_leaves_with_path(before), jax.tree.leaves(after), strict=True)
    for (path, old), new in pairs:
        if not np.array_equal(np.asarray(old), np.asarray(new)):
            changed.add(".".join(str(key.name) for key in path))
    return changed


@pytest.mark.parametrize("parameter", sorted(PARAMETERS))
def test_each_parameter_sets_exactly_the_leaves_it_declares(env, parameter):
    body = "pole" if PARAMETERS[parameter].needs_body else ""
    one = BraxSystem(dimensions=[SystemDimension(parameter, 0.5, 3.0, body=body)])
    system = one.task_to_params(jnp.array([2.5]), one.default_params())
    assert _changed_leaves(one.system, system) == set(PARAMETERS[parameter].leaves)


def test_params_for_tasks_give_each_instance_its_own_leaves(env):
    tasks = jnp.array([[1.0, 9.81, 1.0], [40.0, 9.81, 1.0], [5.0, 25.0, 0.1]])
    params = env.params_for_tasks(tasks)  # one System, every leaf [3, ...]
    assert type(params) is type(env.system)
    for batched, loaded in zip(jax.tree.leaves(params), jax.tree.leaves(env.system), strict=True):
        assert batched.shape == (3, *np.shape(loaded))
    mass = _leaf(params, "link.inertia.mass")
    np.testing.assert_allclose(mass[:, env.bodies.index("pole")], [1.0, 40.0, 5.0])
    np.testing.assert_allclose(_leaf(params, "gravity")[:, 2], [-9.81, -9.81, -25.0])
    np.testing.assert_allclose(_leaf(params, "actuator.gear")[:, 0], [100.0, 100.0, 10.0])


def test_mass_scale_multiplies_after_the_body_masses(env):
    dims = [
        {"parameter": "mass", "body": "cart", "low": 1.0, "high": 30.0},
        {"parameter": "mass_scale", "low": 0.5, "high": 3.0},
    ]
    scaled = BraxSystem(dimensions=dims)
    assert scaled.task_space.names == ("cart_mass", "mass_scale")
    np.testing.assert_allclose(scaled.task_space.default, (10.471975, 1.0), rtol=1e-6)
    system = scaled.task_to_params(jnp.array([4.0, 2.0]), scaled.default_params())
    loaded = _leaf(env.system, "link.inertia.mass")
    np.testing.assert_allclose(
        _leaf(system, "link.inertia.mass"), [8.0, 2.0 * loaded[1]], rtol=1e-6
    )
    np.testing.assert_allclose(
        _leaf(system, "link.inertia.i")[1], 2.0 * _leaf(env.system, "link.inertia.i")[1], rtol=1e-6
    )
    np.testing.assert_allclose(_leaf(system, "body_mass")[1:], [8.0, 2.0 * loaded[1]], rtol=1e-6)


def test_bad_dimensions_are_one_line_config_errors():
    bodies = ("cart", "pole")
    cases = {
        "did you mean 'gravity'": {"parameter": "gravty", "low": 1, "high": 2},
        r"mass must be > 0 \(its physical limit\), got -1": {
            "parameter": "mass",
            "body": "pole",
            "low": -1.0,
            "high": 2.0,
        },
        r"actuator_strength must be >= 0": {
            "parameter": "actuator_strength",
            "low": -0.5,
            "high": 1,
        },
        "did you mean 'pole'": {"parameter": "mass", "body": "pol", "low": 1, "high": 2},
        "sets no single body": {"parameter": "gravity", "body": "pole", "low": 1, "high": 2},
        "low must be < high": {"parameter": "gravity", "low": 5.0, "high": 5.0},
        "must be a finite number": {"parameter": "gravity", "low": 1.0, "high": float("inf")},
        "did you mean 'high'": {"parameter": "gravity", "low": 1.0, "hgh": 2.0},
    }
    for message, item in cases.items():
        with pytest.raises(ConfigError, match=message) as caught:
            parse_dimension(item, "env.dimensions[0]", bodies)
        assert "\n" not in str(caught.value) and str(caught.value).startswith("env.dimensions[0]")
    parsed = parse_dimension(
        {"parameter": "mass", "body": "pole", "low": 1, "high": 2}, "d", bodies
    )
    assert parsed == SystemDimension("mass", 1.0, 2.0, body="pole") and parsed.name == "pole_mass"
    assert set(PARAMETERS) == {"gravity", "mass", "mass_scale", "actuator_strength"}


def test_bad_static_config_is_a_config_error():
    # Refused before Brax loads anything.
    with pytest.raises(ConfigError, match="did you mean 'inverted_pendulum'"):
        make_env("brax_system", brax_env="inverted_pendulm")
    with pytest.raises(ConfigError, match="env.backend.*did you mean 'spring'"):
        make_env("brax_system", backend="springs")
    with pytest.raises(ConfigError, match="max_episode_steps"):
        make_env("brax_system", max_episode_steps=0)
    with pytest.raises(ConfigError, match="accepted"):
        make_env("brax_system", pipeline="spring")


def test_bad_dimension_lists_are_config_errors():
    with pytest.raises(ConfigError, match=r"env.dimensions\[1\].parameter.*did you mean 'mass'"):
        BraxSystem(dimensions=[{"parameter": "gravity", "low": 1, "high": 2}, {"parameter": "mas"}])
    with pytest.raises(ConfigError, match="'gravity' is set twice"):
        BraxSystem(dimensions=[{"parameter": "gravity", "low": 1, "high": 2}] * 2)
    with pytest.raises(ConfigError, match="at least one"):
        BraxSystem(dimensions=[])
    with pytest.raises(ConfigError, match="must be a list"):
        BraxSystem(dimensions={"parameter": "gravity", "low": 1, "high": 2})


# -- slow: one jitted Brax rollout -----------------------------------------------------------


def make_rollout(env):
    """(keys [N], params [N], actions [HORIZON, N, 1]) -> the reset obs [N, 4], per step
    obs [T, N, 4], reward, terminated, truncated [T, N], and the final states; jitted."""

    def run(keys, params, actions):
        obs, state = jax.vmap(env.reset)(keys, params)

        def body(state, action):
            obs, state, reward, terminated, truncated, _ = jax.vmap(env.step)(
                keys, state, action, params
            )
            return state, (obs, reward, terminated, truncated)

        state, steps = jax.lax.scan(body, state, actions)
        return (obs, *steps, state)

    return jax.jit(run)


@pytest.fixture(scope="module")
def rollout(env):
    return make_rollout(env)


def _run(env, rollout, tasks, key=0, action=0.0):
    """Every task from the same start, the same constant action (0 = ctrl 0: no push)."""
    tasks = jnp.asarray(tasks, jnp.float32)
    n = tasks.shape[0]
    keys = jnp.broadcast_to(jax.random.PRNGKey(key), (n, 2))
    actions = jnp.full((HORIZON, n, 1), action)
    return rollout(keys, env.params_for_tasks(tasks), actions)


@pytest.mark.slow
def test_a_heavier_pole_falls_differently_and_instances_keep_their_systems(env, rollout):
    default = (POLE_MASS, GRAVITY, 1.0)
    tasks = [default, (40.0, GRAVITY, 1.0), (POLE_MASS, 2.0, 1.0), default]
    reset_obs, obs, reward, terminated, truncated, state = _run(env, rollout, tasks)
    assert reset_obs.shape == (4, 4) and obs.shape == (HORIZON, 4, 4)
    assert reward.shape == terminated.shape == truncated.shape == (HORIZON, 4)
    assert reward.dtype == jnp.float32 and terminated.dtype == truncated.dtype == jnp.bool_
    np.testing.assert_array_equal(reset_obs[0], reset_obs[1])  # one start for all
    angle = np.abs(np.asarray(obs[..., 1]))
    # Same start, no push: the 40 kg pole leaves the 0.2 rad window first, the pole
    # under 2 m/s^2 falls slowest, and identical tasks stay identical.
    first_out = [
        int(np.argmax(angle[:, i] > 0.2)) if angle[:, i].max() > 0.2 else HORIZON for i in range(4)
    ]
    assert first_out[1] < first_out[0], first_out
    assert angle[10, 1] > angle[10, 0] > angle[10, 2], angle[10]
    np.testing.assert_array_equal(obs[:, 0], obs[:, 3])
    # Each instance of the batch steps as it does alone.
    alone = _run(env, rollout, [tasks[1]] * 4)[1]
    np.testing.assert_allclose(alone[:, 0], obs[:, 1], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_a_fallen_pole_terminates_and_the_time_limit_truncates(env, rollout):
    heavy, light = (40.0, 30.0, 1.0), (1.0, 1.0, 1.0)
    # Four rows, as in the test above: one compiled rollout.
    _, obs, reward, terminated, truncated, state = _run(env, rollout, [heavy, light] * 2)
    terminated, truncated = np.asarray(terminated), np.asarray(truncated)
    # The heavy pole under 30 m/s^2 falls out of the window: terminated, never truncated.
    fell = int(np.argmax(terminated[:, 0]))
    assert terminated[fell, 0] and not terminated[:fell, 0].any() and not truncated[:, 0].any()
    assert abs(float(obs[fell, 0, 1])) > 0.2 >= abs(float(obs[fell - 1, 0, 1]))
    # The light pole under 1 m/s^2 is still up at the time limit: truncated, on that step only.
    assert not terminated[:, 1].any()
    np.testing.assert_array_equal(truncated[:, 1], np.arange(HORIZON) == HORIZON - 1)
    assert int(state.time[1]) == HORIZON
    np.testing.assert_array_equal(reward, 1.0)  # 1 per step, the terminal one included


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["positional", "generalized", "mjx"])
def test_every_backend_reads_the_leaves_a_task_sets(backend):
    env = make_env("brax_system", backend=backend, max_episode_steps=HORIZON)
    default = (POLE_MASS, GRAVITY, 1.0)
    tasks = [default, (40.0, GRAVITY, 1.0), (POLE_MASS, 2.0, 1.0), (POLE_MASS, GRAVITY, 0.2)]
    # A steady push to +x: action 0.1 = ctrl 0.3, x gear 100 = 30 N at full strength.
    _, obs, *_ = _run(env, make_rollout(env), tasks, action=0.1)
    obs = np.asarray(obs)
    cart, angle = obs[..., 0], obs[..., 1]
    assert cart[10, 0] > cart[10, 3] > 0.0, cart[10]
    for changed in (1, 2):  # the pole's mass, gravity
        assert np.abs(angle[:, changed] - angle[:, 0]).max() > 1e-3, (changed, angle[:, changed])
