"""The classic-control task envs: contract 1 (reset/step, params from tasks, vmap,
truncation); and every registered env's declared capabilities (envs/base.py)."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces

import envs
from acl.core.errors import ConfigError
from envs import scripted
from envs.base import (
    GoalTaskEnv,
    ImageDirectionObservation,
    LevelEditorEnv,
    LevelTaskEnv,
    StartTaskEnv,
    random_tasks,
)
from envs.gymnax_space import DOCS_EXAMPLE
from envs.registry import ENVS, make_env

# The envs that are not gymnax envs have their own test files.
NOT_GYMNAX = (
    "toy_bandit",
    "stump_tracks",
    "bit_flip",
    "goal_maze",
    "point_maze",
    "point_reach",
    "brax_goal",
    "brax_system",
    "maze",
    "gymnax",  # a config entry, tested in tests/test_gymnax_space.py
    "xland",  # tests/test_xland.py
)
CLASSIC = [name for name in ENVS.names() if name not in NOT_GYMNAX]
NUM_VMAP_STEPS = 12


def test_every_env_is_registered():
    assert set(ENVS.names()) >= {
        "cartpole",
        "pendulum",
        "mountain_car_continuous",
        "acrobot",
        "toy_bandit",
    }
    assert envs.make_env is make_env and envs.ENVS is ENVS
    for name in CLASSIC:
        env = make_env(name)
        assert isinstance(env, envs.TaskEnv) and env.name == name


def test_unknown_env_name_suggests_closest():
    with pytest.raises(ConfigError, match="did you mean 'cartpole'"):
        make_env("cartpol")
    with pytest.raises(ConfigError, match="mountain_car_continuous"):
        make_env("mountaincar_continuous")


def test_bad_static_config_is_a_config_error():
    with pytest.raises(ConfigError, match="num_distractors"):
        make_env("cartpole", num_distractors=2)
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ConfigError, match="max_episode_steps"):
            make_env("pendulum", max_episode_steps=bad)


def _alternating_actions(env, num_steps):
    """Extreme actions, alternating sign each step (keeps CartPole up for a while)."""
    space = env.action_space()
    high = jnp.arange(num_steps) % 2 == 0
    if isinstance(space, spaces.Discrete):
        return jnp.where(high, space.n - 1, 0).astype(space.dtype)
    return jnp.where(high, 1.0, -1.0)[:, None] * jnp.ones(space.shape, space.dtype)


@pytest.fixture(scope="module", params=CLASSIC)
def compiled(request):
    """One env with its jitted functions, shared by every test of that env."""
    env = make_env(request.param)

    def rollout(key, params, num_steps):
        """Same actions on every call: obs [T, ...], reward, terminated, truncated [T]."""
        obs, state = env.reset(key, params)

        def body(state, inputs):
            step_key, action = inputs
            obs, state, reward, terminated, truncated, _ = env.step(step_key, state, action, params)
            return state, (obs, reward, terminated, truncated)

        inputs = (jax.random.split(key, num_steps), _alternating_actions(env, num_steps))
        _, out = jax.lax.scan(body, state, inputs)
        return out

    return SimpleNamespace(
        env=env,
        reset=jax.jit(env.reset),
        step=jax.jit(env.step),
        rollout=jax.jit(rollout, static_argnums=2),
        batch_rollout=jax.jit(jax.vmap(rollout, in_axes=(None, 0, None)), static_argnums=2),
        params_for_tasks=jax.jit(env.params_for_tasks),
    )


def test_task_space_is_sane(compiled):
    env = compiled.env
    space = env.task_space
    low, high = np.array(space.low), np.array(space.high)
    assert np.all(low < high)
    assert bool(space.contains(space.default_task))
    assert len(space.names) == len(space.units) == space.dim
    assert env.return_bounds[0] < env.success_threshold < env.return_bounds[1]
    for extended in (env.unfeasible_bounds, env.trivial_bounds):
        # A challenge variant extends the task space: it contains it and is larger.
        assert np.all(np.array(extended.low) <= low) and np.all(np.array(extended.high) >= high)
        assert np.any(np.array(extended.low) < low) or np.any(np.array(extended.high) > high)
        assert extended.names == space.names
        assert bool(extended.contains(space.default_task))


@pytest.mark.parametrize(
    "low, high, message",
    [
        ((-1.0, 0.05, 1.0), None, "dimension 'pole_half_length' must be > 0"),
        ((0.05, 0.0, 1.0), None, "dimension 'pole_mass' must be > 0"),
        (None, (2.0, 2.0, -1.0), "dimension 'force_mag' must be >= 0"),
        (None, (2.0, 2.0, float("inf")), "dimension 'force_mag' must be finite"),
        ((float("nan"), 0.05, 1.0), None, "dimension 'pole_half_length' must be finite"),
    ],
)
def test_task_bounds_stay_inside_the_physical_limits(low, high, message):
    space = make_env("cartpole").task_space
    with pytest.raises(ConfigError, match=message):
        space.replace(low=low or space.low, high=high or space.high)


def test_every_task_space_declares_limits_its_variants_respect():
    for name in CLASSIC:
        env = make_env(name)
        # Built at import, so a variant outside a limit would already have failed.
        assert len(env.task_space.limits) == env.task_space.dim, name
        for variant in (env.unfeasible_bounds, env.trivial_bounds):
            assert variant.limits == env.task_space.limits, name


def test_default_task_gives_the_gymnax_default_params(compiled):
    env = compiled.env
    base = env.default_params()
    params = env.task_to_params(env.task_space.default_task, base)
    for leaf, ref in zip(jax.tree.leaves(params), jax.tree.leaves(env._env.default_params)):
        if isinstance(ref, int):
            continue  # max_steps_in_episode comes from the env's static config
        np.testing.assert_allclose(np.asarray(leaf), np.asarray(ref), rtol=1e-6)


TASK_FIELDS = {
    "cartpole": lambda p: (p.length, p.masspole, p.force_mag),
    "pendulum": lambda p: (p.m, p.l, p.max_torque),
    "mountain_car_continuous": lambda p: (p.power, p.gravity),
    "acrobot": lambda p: (p.link_mass_1, p.link_mass_2, p.available_torque[..., 2]),
}


def test_task_to_params_puts_the_task_into_params(compiled):
    env = compiled.env
    tasks = env.task_space.sample_uniform(jax.random.PRNGKey(0), 5)
    params = compiled.params_for_tasks(tasks)
    got = np.stack([np.asarray(f) for f in TASK_FIELDS[env.name](params)], axis=-1)
    np.testing.assert_allclose(got, np.asarray(tasks), rtol=1e-6)
    assert params.max_steps_in_episode.shape == (5,)
    if env.name == "cartpole":
        close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6)
        close(params.total_mass, params.masscart + params.masspole)
        close(params.polemass_length, params.masspole * params.length)
    if env.name == "acrobot":
        expected = np.asarray(tasks)[:, 2:3] * np.array([-1.0, 0.0, 1.0])
        np.testing.assert_allclose(params.available_torque, expected, rtol=1e-6)


def test_reset_and_step_match_the_spaces(compiled):
    env = compiled.env
    params = env.default_params()
    obs_space, action_space = env.observation_space(), env.action_space()
    obs, state = compiled.reset(jax.random.PRNGKey(0), params)
    assert obs.shape == obs_space.shape and obs.dtype == obs_space.dtype
    assert bool(obs_space.contains(obs))
    action = action_space.sample(jax.random.PRNGKey(1))
    assert action.shape == action_space.shape and action.dtype == action_space.dtype
    obs, state, reward, terminated, truncated, info = compiled.step(
        jax.random.PRNGKey(2), state, action, params
    )
    assert obs.shape == obs_space.shape and obs.dtype == obs_space.dtype
    assert reward.shape == () and reward.dtype == jnp.float32
    assert terminated.shape == () and terminated.dtype == jnp.bool_
    assert truncated.shape == () and truncated.dtype == jnp.bool_
    assert isinstance(info, dict)
    assert int(state.time) == 1


def test_vmap_over_different_tasks_gives_different_trajectories(compiled):
    env = compiled.env
    space = env.task_space
    tasks = jnp.stack(
        [
            space.default_task,
            space.low_array,
            space.high_array,
            (space.low_array + 3 * space.high_array) / 4,
        ]
    )
    params = compiled.params_for_tasks(tasks)
    key = jax.random.PRNGKey(3)
    obs, _, _, _ = compiled.batch_rollout(key, params, NUM_VMAP_STEPS)
    assert obs.shape == (4, NUM_VMAP_STEPS) + env.observation_space().shape
    final = np.asarray(obs[:, -1])
    for i in range(4):
        for j in range(i + 1, 4):
            assert not np.allclose(final[i], final[j]), (i, j)
    # Row 0 of the batch is exactly the unbatched rollout on the default task.
    single, _, _, _ = compiled.rollout(
        key, env.task_to_params(tasks[0], env.default_params()), NUM_VMAP_STEPS
    )
    np.testing.assert_allclose(obs[0], single, rtol=1e-5, atol=1e-6)


def test_truncation_exactly_at_max_episode_steps(compiled):
    short = make_env(compiled.env.name, max_episode_steps=7)
    assert short.max_episode_steps == 7
    params = short.default_params()
    assert params.max_steps_in_episode == 7
    # The compiled step reads the limit from params, so it serves `short` too.
    obs, reward, terminated, truncated = compiled.rollout(jax.random.PRNGKey(4), params, 9)
    assert not bool(jnp.any(terminated[:7]))
    assert np.asarray(truncated).tolist()[:7] == [False] * 6 + [True]


def test_termination_is_not_truncation():
    env = make_env("cartpole")
    params = env.default_params()
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    step = jax.jit(env.step)
    for t in range(100):  # always pushing right tips the pole over within ~30 steps
        obs, state, reward, terminated, truncated, _ = step(
            jax.random.PRNGKey(t), state, jnp.int32(1), params
        )
        if terminated:
            break
    assert bool(terminated) and not bool(truncated) and t < 99
    assert float(reward) == 1.0


def test_pendulum_actions_are_fractions_of_max_torque():
    env = make_env("pendulum")
    assert env.action_space().low == -1.0 and env.action_space().high == 1.0
    params = env.task_to_params(jnp.array([1.0, 1.0, 4.0]), env.default_params())
    _, state = env.reset(jax.random.PRNGKey(0), params)
    step = jax.jit(env.step)
    for action, torque in ((0.5, 2.0), (1.0, 4.0), (7.0, 4.0), (-3.0, -4.0)):
        _, new_state, *_ = step(jax.random.PRNGKey(1), state, jnp.array([action]), params)
        assert float(new_state.last_u) == pytest.approx(torque)


def test_mountain_car_clips_actions_before_the_cost():
    env = make_env("mountain_car_continuous")
    params = env.default_params()
    _, state = env.reset(jax.random.PRNGKey(0), params)
    _, _, reward, *_ = env.step(jax.random.PRNGKey(1), state, jnp.array([5.0]), params)
    assert float(reward) == pytest.approx(-0.1)
    assert env.return_bounds == pytest.approx((-99.9, 100.0))


def test_thresholds_follow_the_episode_length():
    assert make_env("cartpole", max_episode_steps=200).success_threshold == pytest.approx(190)
    assert make_env("cartpole").success_threshold == 475.0
    assert make_env("acrobot", max_episode_steps=200).return_bounds == (-200.0, 0.0)


# Cheap scripted checks that the documented regions are plausible: a fixed one-line
# policy solves a task of the trivial region, per-task experts solve the default task,
# and no controller of the family solves a task of the infeasible region.
REGIONS = {
    "cartpole": dict(
        expert=scripted.cartpole_linear,
        expert_ctrls=[
            (a, b, 1.0, c) for a in (0.02, 0.1) for b in (0.05, 0.6) for c in (0.05, 0.4)
        ],
        fixed=scripted.cartpole_linear,
        fixed_ctrl=(0.0, 0.0, 1.0, 0.5),
        trivial=(1.0, 0.5, 50.0),
        infeasible=(0.1, 0.25, 850.0),  # kappa ~ 2.4 rad per push
    ),
    "pendulum": dict(
        expert=scripted.pendulum_swing_up,
        expert_ctrls=[(s, w, k) for s in (0.6, 3.2) for w in (3.0, 10.0) for k in (1.0, 100.0)],
        fixed=scripted.pendulum_pd,
        fixed_ctrl=(1.0, 0.1),
        trivial=(0.5, 1.0, 5.0),  # rho = 2
        infeasible=(3.0, 3.0, 0.5),  # rho = 0.011
    ),
    "mountain_car_continuous": dict(
        expert=scripted.mountain_car_pump,
        expert_ctrls=[(c, d) for c in (0.5, 1.0) for d in (-1.0, 1.0)],
        fixed=scripted.mountain_car_constant,
        fixed_ctrl=(1.0,),
        trivial=(0.003, 0.001),  # power > gravity
        infeasible=(0.0015, 0.006),
    ),
    "acrobot": dict(
        expert=scripted.acrobot_rule,
        expert_ctrls=scripted.acrobot_rules(16),
        fixed=scripted.acrobot_rule,
        fixed_ctrl=scripted.ACROBOT_FIXED_RULE,
        trivial=(0.5, 0.5, 2.0),
        infeasible=(1.0, 1.0, 0.25),
    ),
}


def test_scripted_controllers_agree_with_the_documented_regions(compiled):
    env, spec = compiled.env, REGIONS[compiled.env.name]
    base = env.default_params()
    keys = jax.random.split(jax.random.PRNGKey(5), 4)

    def returns_fn(policy):
        def run(ctrls, task):  # -> returns [ctrl, start]
            params = env.task_to_params(task, base)
            one = lambda c, k: scripted.episode_return(env, policy, c, params, k)
            return jax.vmap(jax.vmap(one, (None, 0)), (0, None))(ctrls, keys)

        jitted = jax.jit(run)
        return lambda ctrls, task: np.asarray(
            jitted(jnp.asarray(ctrls, jnp.float32), jnp.asarray(task, jnp.float32))
        )

    fixed, expert = returns_fn(spec["fixed"]), returns_fn(spec["expert"])
    assert np.all(fixed([spec["fixed_ctrl"]], spec["trivial"]) > env.success_threshold)
    on_default = expert(spec["expert_ctrls"], env.task_space.default)
    assert np.any(np.all(on_default > env.success_threshold, axis=1))
    assert np.all(expert(spec["expert_ctrls"], spec["infeasible"]) <= env.success_threshold)
    assert bool(env.task_space.contains(jnp.array([spec["trivial"], spec["infeasible"]])).all())


# -- declared capabilities --------------------------------------------------------------

CAPABILITIES = {
    "maze": {"levels", "level_edits", "level_editor", "image"},
    "xland": {"levels", "level_edits"},
    "goal_maze": {"goals", "valid_goals", "starts", "oracle"},
    "point_maze": {"goals", "valid_goals", "starts"},
    "brax_goal": {"goals", "valid_goals", "starts"},
    "point_reach": {"goals", "challenges", "easy_task"},
    "bit_flip": {"goals"},
    "stump_tracks": {"challenges"},
    # presets over envs.gymnax_space: a level generator uniform over the box
    "cartpole": {"challenges", "levels"},
    "pendulum": {"challenges", "levels"},
    "mountain_car_continuous": {"challenges", "levels"},
    "acrobot": {"challenges", "levels"},
    "gymnax": {"levels"},
    "brax_system": set(),
    "toy_bandit": set(),
}
"""What each registered env declares (docs/envs.md's table of teacher families)."""


def _declared(env) -> set[str]:
    """The capability names `env` declares, read from the contract's members only."""
    kind = type(env)
    found = set()
    if issubclass(kind, LevelTaskEnv):
        found |= {"levels"}
        found |= {"level_edits"} if kind.has_level_edits else set()
        found |= {"level_editor"} if kind.has_level_editor else set()
    if issubclass(kind, ImageDirectionObservation):
        found.add("image")
    if issubclass(kind, GoalTaskEnv):
        found |= {"goals", "valid_goals"} if kind.has_valid_goals else {"goals"}
    if issubclass(kind, StartTaskEnv):
        found.add("starts")
    if issubclass(kind, envs.TaskEnv):
        found |= {"oracle"} if kind.has_oracle_action else set()
        if env.unfeasible_bounds is not None and env.trivial_bounds is not None:
            found.add("challenges")
        if env.easy_task is not None:
            found.add("easy_task")
    return found


def test_the_capability_table_lists_every_registered_env():
    assert set(ENVS.names()) == set(CAPABILITIES)


@pytest.mark.parametrize("name", sorted(CAPABILITIES))
def test_every_env_declares_its_capabilities(name):
    factory = ENVS.get(name)
    # brax_goal and brax_system declare everything on their classes; building them would
    # load Brax. The gymnax entry needs a config: the docs' example.
    if name in ("brax_goal", "brax_system"):
        env = object.__new__(factory)
    else:
        env = make_env(name, **(DOCS_EXAMPLE if name == "gymnax" else {}))
    assert _declared(env) == CAPABILITIES[name]


class _GeneratorOnly(LevelTaskEnv):
    """A level env with a generator and nothing else."""

    name = "generator_only"


def test_an_undeclared_capability_is_a_config_error_naming_the_env():
    key = jax.random.PRNGKey(0)
    with pytest.raises(ConfigError, match="'cartpole' has no oracle_action"):
        make_env("cartpole").oracle_action(jnp.zeros(4))
    with pytest.raises(ConfigError, match="'point_reach' has no sample_valid_goals"):
        make_env("point_reach").sample_valid_goals(key, 3)
    with pytest.raises(ConfigError, match="'bit_flip' has no goal_grid"):
        make_env("bit_flip").goal_grid()
    level_env = _GeneratorOnly()
    with pytest.raises(ConfigError, match="'generator_only' has no edit_tasks"):
        level_env.edit_tasks(key, jnp.zeros((2, 3)), 1)
    with pytest.raises(ConfigError, match="'generator_only' has no level_editor"):
        level_env.level_editor()


def test_the_mazes_level_editor_is_a_level_editor_env_of_that_maze():
    maze = make_env("maze", height=5, width=6)
    editor = maze.level_editor(num_wall_steps=3, noise_dim=2)
    assert isinstance(editor, LevelEditorEnv) and editor.maze is maze
    assert editor.grid_shape == (5, 6, 4) and editor.num_time_steps == 6
    assert maze.task_dim == maze.task_space.dim == 5 * 6 + 5
    with pytest.raises(ConfigError, match="maze_editor.maze must be a Maze env"):
        type(editor)(make_env("cartpole"))


def test_random_tasks_use_the_level_generator_where_there_is_one():
    key = jax.random.PRNGKey(3)
    maze = make_env("maze", height=5, width=5, num_walls=4)
    tasks = random_tasks(maze, key, 6)
    np.testing.assert_array_equal(tasks, maze.sample_tasks(key, 6))
    walls = np.asarray(maze.params_for_tasks(tasks).wall_map).sum((1, 2))
    np.testing.assert_array_equal(walls, 4)
    fewer = np.asarray(maze.params_for_tasks(random_tasks(maze, key, 6, num_walls=1)).wall_map)
    np.testing.assert_array_equal(fewer.sum((1, 2)), 1)
    cartpole = make_env("cartpole")
    np.testing.assert_array_equal(
        random_tasks(cartpole, key, 6, num_walls=1), cartpole.task_space.sample_uniform(key, 6)
    )


def test_goal_mazes_valid_goals_are_its_free_cells_drawn_uniformly():
    env = make_env("goal_maze")
    key = jax.random.PRNGKey(4)
    grid = env.goal_grid()
    goals = np.asarray(jax.jit(env.sample_valid_goals, static_argnums=1)(key, 500))
    # The same draw as a uniform index into the grid (the goal teachers' former fallback).
    expected = np.asarray(jnp.asarray(grid)[jax.random.randint(key, (500,), 0, grid.shape[0])])
    np.testing.assert_array_equal(goals, expected)
    on_grid = (goals[:, None] == grid[None]).all(-1).any(-1)
    assert on_grid.all() and len({tuple(g) for g in goals.tolist()}) == len(grid)


@pytest.mark.parametrize("name", ["goal_maze", "point_maze"])
def test_start_goal_tasks_read_and_write_their_halves(name):
    env = make_env(name, max_episode_steps=30)
    tasks = jnp.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]])
    goal, start = jnp.array([0.9, 0.95]), jnp.array([0.05, 0.15])
    with_goal = env.task_with_goal(tasks, goal)
    np.testing.assert_array_equal(env.goal_from_task(with_goal), jnp.broadcast_to(goal, (2, 2)))
    np.testing.assert_array_equal(with_goal[:, :2], tasks[:, :2])
    with_start = env.task_with_start(tasks, start)
    np.testing.assert_array_equal(with_start, tasks.at[:, :2].set(start))
    assert env.terminates_on_goal and env.success_threshold == -29.5
    assert env.return_bounds == (-30.0, 0.0)
    reward = env.compute_reward(jnp.array([[0.3, 0.4], [0.0, 1.0]]), jnp.array([0.3, 0.4]))
    np.testing.assert_array_equal(reward, [0.0, -1.0])
