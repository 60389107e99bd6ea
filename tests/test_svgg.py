"""Stein Variational Goal Generation (acl.teachers.svgg), the random-valid-goal baseline,
success coverage, and the goal protocol's task_with_goal."""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from acl.core.types import Feedback, Transition
from acl.loop.evaluation import success_coverage
from acl.teachers import TEACHERS
from acl.teachers.base import UpdateContext
from acl.teachers.svgg import (
    RandomGoalTeacher,
    SVGGTeacher,
    fit_validity,
    kde_log_density,
    make_svgg,
    median_bandwidth,
    svgd_step,
)
from acl.teachers.svgg.particles import adam
from envs.base import GoalTaskEnv, PositionGoalObservation
from envs.bit_flip import BitFlip
from envs.goal_maze import GoalMaze
from envs.point_maze import PointMaze
from tests.teacher_harness import check_teacher

KEY = jax.random.PRNGKey(0)
"""Teachers' update key: these teachers keep their own keys and ignore it."""

# -- SVGD --------------------------------------------------------------------------------------

MEAN = np.array([1.0, -0.5])
COV = np.array([[1.0, 0.6], [0.6, 2.0]])


def gaussian_log_prob(x):
    prec = jnp.asarray(np.linalg.inv(COV), jnp.float32)
    d = x - jnp.asarray(MEAN, jnp.float32)
    return -0.5 * jnp.einsum("pi,ij,pj->p", d, prec, d)


def mmd2(x, y) -> float:
    """Squared MMD (biased), RBF kernel of bandwidth 1."""

    def k(a, b):
        return np.exp(-((a[:, None] - b[None]) ** 2).sum(-1) / 2.0).mean()

    return float(k(x, x) + k(y, y) - 2 * k(x, y))


@pytest.mark.slow
def test_svgd_moves_particles_to_a_gaussian():
    # 100 particles on a 10 x 10 grid in [-4, -3]^2, far from the target's mean.
    axis = np.linspace(-4.0, -3.0, 10)
    x0 = np.stack(np.meshgrid(axis, axis), -1).reshape(-1, 2).astype(np.float32)

    @jax.jit
    def run(x):
        def one(carry, _):
            x, opt = carry
            return svgd_step(x, opt, gaussian_log_prob, 0.1), None

        (x, _), _ = jax.lax.scan(one, (x, adam.init(x)), None, length=1000)
        return x

    x = np.asarray(run(jnp.asarray(x0)))
    target = np.random.default_rng(0).multivariate_normal(MEAN, COV, size=2000)
    np.testing.assert_allclose(x.mean(0), MEAN, atol=0.15)
    np.testing.assert_allclose(np.cov(x.T), COV, atol=0.35)
    before, after = mmd2(x0, target), mmd2(x, target)
    assert after < 0.1 * before and after < 0.01, (before, after)


def test_median_bandwidth():
    x = jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    # squared distances 1, 4, 5: median 4, over log(3 + 1)
    np.testing.assert_allclose(median_bandwidth(x), 4.0 / np.log(4.0), rtol=1e-6)


# -- the validity model ------------------------------------------------------------------------


def test_kde_matches_a_single_gaussian():
    points = jnp.array([[0.0, 0.0], [9.0, 9.0]])
    mask = jnp.array([True, False])
    h = 0.5
    value = kde_log_density(jnp.array([0.3, -0.4]), points, mask, h)
    expected = -0.25 / (2 * h**2) - np.log(2 * np.pi * h**2)
    np.testing.assert_allclose(value, expected, rtol=1e-5)


# -- a tiny goal env on the harness's task space -----------------------------------------------


@struct.dataclass
class ToyState:
    position: jax.Array


class ToyGoalEnv(PositionGoalObservation, GoalTaskEnv):
    """Task (a, b, c): goal (a, b); the point starts at (0, c - 10) clipped into the
    goal box, obs = (position, goal). Only what the teachers touch is implemented."""

    goal_dim = 2
    max_episode_steps = 5

    def __init__(self, task_space):
        self.task_space = task_space

    def default_params(self):
        return self.task_space.default_task

    def task_to_params(self, task, base_params):
        return jnp.asarray(task, jnp.float32)

    def reset(self, key, params):
        position = jnp.clip(jnp.array([0.0, params[2] - 10.0]), -1.0, 5.0)
        return jnp.concatenate([position, params[:2]]), ToyState(position)

    def action_space(self):
        return spaces.Discrete(2)

    def goal_from_task(self, task):
        return jnp.asarray(task)[..., :2]

    def task_with_goal(self, task, goal):
        goal = jnp.broadcast_to(goal, task.shape[:-1] + (2,)).astype(task.dtype)
        return jnp.concatenate([goal, task[..., 2:]], axis=-1)


SMALL = dict(
    num_particles=16,
    svgd_steps=2,
    predictor_steps=2,
    predictor_batch=16,
    predictor_hidden=(8,),
    predictor_buffer=64,
    validity_buffer=64,
    update_every=3,
    plot_grid=4,
)


@pytest.mark.slow  # compile-bound: jit and vmap of a full update, 30-90 s on 2 shared cores
def test_passes_teacher_harness():
    check_teacher(lambda space: make_svgg(space, env=ToyGoalEnv(space), **SMALL))


def test_random_goal_passes_teacher_harness():
    check_teacher(lambda space: RandomGoalTeacher(space, env=ToyGoalEnv(space)))


# -- point_maze -------------------------------------------------------------------------------

MAZE = PointMaze("u_maze")

MAZE_CONFIG = dict(
    num_particles=32,
    svgd_steps=50,
    predictor_steps=300,
    predictor_batch=128,
    predictor_hidden=(32, 32),
    predictor_buffer=512,
    validity_buffer=512,
    update_every=1,
    plot_grid=4,
)
"""One shape for the point_maze tests, so their update compiles once."""

SMALL_MAZE = dict(num_particles=8, predictor_hidden=(8,), predictor_buffer=64, validity_buffer=64)
"""Small buffers for the record-only tests (nothing there compiles an update)."""


@functools.cache
def maze_teacher() -> SVGGTeacher:
    return make_svgg(MAZE.task_space, env=MAZE, **MAZE_CONFIG)


@functools.cache
def jitted(teacher):
    """(record, train_predictor, fit_validity, update, init) of `teacher`, jitted once."""
    return (
        jax.jit(teacher.record),
        jax.jit(teacher.train_predictor),
        jax.jit(teacher.fit_validity),
        jax.jit(teacher.update),
        jax.jit(teacher.init),
    )


def feedback(goals, success) -> Feedback:
    goals = jnp.asarray(goals, jnp.float32)
    n = goals.shape[0]
    base = jnp.broadcast_to(MAZE.task_space.default_task, (n, 4))
    return Feedback(
        task=MAZE.task_with_goal(base, goals),
        episode_return=jnp.zeros(n),
        success=jnp.asarray(success, bool),
        length=jnp.ones(n, jnp.int32),
        mask=jnp.ones(n, bool),
    )


def rollout(achieved) -> Transition:
    """A [1, K] rollout whose K episodes all end with the goals `achieved` [K, G] reached
    (the maze's achieved goal is the observation's first G entries)."""
    achieved = jnp.asarray(achieved, jnp.float32)
    k = achieved.shape[0]
    obs_size = MAZE.observation_space().shape[0]
    next_obs = jnp.zeros((1, k, obs_size)).at[0, :, : achieved.shape[1]].set(achieved)
    done = jnp.ones((1, k), bool)
    return Transition(
        obs=next_obs,
        action=jnp.zeros((1, k), jnp.int32),
        reward=jnp.zeros((1, k)),
        terminated=done,
        done=done,
        next_obs=next_obs,
        loss_mask=done,
        extras=None,
    )


@pytest.mark.slow
def test_success_predictor_learns_a_separable_toy():
    teacher = maze_teacher()
    state = jitted(teacher)[4](jax.random.PRNGKey(0), teacher.default_params())
    goals = jax.random.uniform(jax.random.PRNGKey(1), (512, 2))
    labels = goals[:, 0] + goals[:, 1] > 1.0  # success on one side of a diagonal
    record, train, *_ = jitted(teacher)
    state = record(state, feedback(goals, labels), rollout(goals))
    for step in range(2):  # 2 x 300 Adam steps
        state = train(state, jax.random.PRNGKey(step))
    test = jax.random.uniform(jax.random.PRNGKey(2), (2000, 2))
    truth = np.asarray(test[:, 0] + test[:, 1] > 1.0)
    guess = np.asarray(teacher.predict_success(state, test)) > 0.5
    accuracy = (guess == truth).mean()
    assert accuracy >= 0.95, accuracy
    assert float(teacher.predictor_accuracy(state)) >= 0.95


@pytest.mark.slow
def test_validity_scores_the_reached_region_above_far_goals():
    teacher = maze_teacher()
    state = jitted(teacher)[4](jax.random.PRNGKey(0), teacher.default_params())
    # Before any achieved goal: every goal equally valid.
    np.testing.assert_array_equal(teacher.log_valid(state, jnp.array([[0.2, 0.2], [0.9, 0.9]])), 0)
    reached = jax.random.uniform(jax.random.PRNGKey(1), (512, 2), minval=0.1, maxval=0.3)
    goals = jnp.full((512, 2), 0.8)  # attempted far away, never reached
    record, _, fit_validity, *_ = jitted(teacher)
    state = fit_validity(record(state, feedback(goals, jnp.zeros(512)), rollout(reached)))
    inside = teacher.log_valid(state, jnp.array([[0.2, 0.2], [0.15, 0.25]]))
    far = teacher.log_valid(state, jnp.array([[0.8, 0.8], [0.2, 0.9], [0.9, 0.1]]))
    assert (np.asarray(inside) > -1.0).all(), inside
    assert (np.asarray(far) < -10.0).all(), far
    assert np.asarray(inside).min() > np.asarray(far).max()


def walk_rollout(path) -> Transition:
    """A [T, 1] rollout of one episode visiting the goals `path` [T, G] in turn, ending
    (done) at the last."""
    path = jnp.asarray(path, jnp.float32)
    t = path.shape[0]
    obs_size = MAZE.observation_space().shape[0]
    next_obs = jnp.zeros((t, 1, obs_size)).at[:, 0, : path.shape[1]].set(path)
    done = jnp.zeros((t, 1), bool).at[-1].set(True)
    return Transition(
        obs=next_obs,
        action=jnp.zeros((t, 1), jnp.int32),
        reward=jnp.zeros((t, 1)),
        terminated=done,
        done=done,
        next_obs=next_obs,
        loss_mask=jnp.ones((t, 1)),
        extras=None,
    )


@pytest.mark.slow
def test_validity_data_hold_the_states_visited_on_the_way():
    # One episode walks from the start to (0.9, 0.25) and back to (0.5, 0.25): the old
    # rule kept only where it ended; the validity buffer must hold the way there too.
    teacher = make_svgg(MAZE.task_space, env=MAZE, validity_per_update=20, **SMALL_MAZE)
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    xs = np.concatenate([np.linspace(0.15, 0.9, 10), np.linspace(0.85, 0.5, 10)])
    path = np.stack([xs, np.full_like(xs, 0.25)], -1)
    records = feedback([[0.9, 0.25]], [False])
    state = teacher.record(state, records, walk_rollout(path), jax.random.PRNGKey(1))
    stored = np.asarray(state.visited.data[: int(state.visited.count)])
    assert int(state.visited.count) == 20
    np.testing.assert_allclose(np.sort(stored[:, 0]), np.sort(xs), atol=1e-6)
    # Subsampled to fit: 5 of the 20 states, all from the walk.
    few = make_svgg(MAZE.task_space, env=MAZE, validity_per_update=5, **SMALL_MAZE)
    state = few.init(jax.random.PRNGKey(0), few.default_params())
    state = few.record(state, records, walk_rollout(path), jax.random.PRNGKey(1))
    picked = np.asarray(state.visited.data[:5, 0])
    assert int(state.visited.count) == 5 and len(np.unique(picked)) == 5
    assert (np.abs(picked[:, None] - xs[None]).min(axis=1) < 1e-5).all()


@pytest.mark.slow
def test_leave_one_out_support_keeps_isolated_frontier_points():
    # 95 visited goals in a tight cluster and 5 lone ones along the frontier.
    cluster = 0.2 + 0.05 * jax.random.normal(jax.random.PRNGKey(0), (95, 2))
    frontier = jnp.array([[0.6, 0.2], [0.7, 0.3], [0.8, 0.4], [0.6, 0.5], [0.2, 0.7]])
    points = jnp.concatenate([cluster, frontier])
    mask = jnp.ones(100, bool)
    quantile, min_std = 0.05, 1e-3
    bandwidth, tau = fit_validity(points, mask, quantile, 1.0, min_std)
    log_kde = kde_log_density(frontier, points, mask, bandwidth)
    kept = np.asarray(jax.nn.log_sigmoid(log_kde - tau))
    # The old rule: the quantile of each point's density with its own kernel included.
    own = kde_log_density(points, points, mask, bandwidth)
    old_tau = jnp.sort(own)[int(np.floor(quantile * 99))]
    old = np.asarray(jax.nn.log_sigmoid(log_kde - old_tau))
    assert (kept > np.log(0.9)).all(), kept  # leave-one-out: all five inside the support
    assert (old < np.log(0.5) + 1e-6).sum() >= 4, old  # self-included: four fall outside


@pytest.mark.slow
@pytest.mark.parametrize("invalid_goal", ["snap", "keep"])
def test_predictor_is_labelled_with_the_goal_the_env_used(invalid_goal):
    maze = PointMaze("u_maze", invalid_goal=invalid_goal)
    teacher = make_svgg(maze.task_space, env=maze, **SMALL_MAZE)
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    handed_out = jnp.array([[0.3, 0.5], [0.5, 0.99], [0.2, 0.2]])  # on the wall, at a side, valid
    base = jnp.broadcast_to(maze.task_space.default_task, (3, 4))
    records = Feedback(
        task=maze.task_with_goal(base, handed_out),
        episode_return=jnp.zeros(3),
        success=jnp.array([False, False, True]),
        length=jnp.ones(3, jnp.int32),
        mask=jnp.ones(3, bool),
    )
    state = teacher.record(state, records, None)
    stored = np.asarray(state.attempts.data[:3, :2])  # (goal [2], success) rows
    used = np.asarray(maze.task_to_params(records.task[0], None).goal)
    if invalid_goal == "snap":
        expected = np.asarray(maze.valid_position(handed_out))
        assert np.asarray(maze.is_valid_position(stored)).all()
        assert not np.allclose(stored[:2], handed_out[:2])
    else:
        expected = np.asarray(handed_out)
    np.testing.assert_allclose(stored, expected, atol=1e-6)
    np.testing.assert_allclose(stored[0], used, atol=1e-6)
    np.testing.assert_array_equal(state.attempts.data[:3, 2], [0.0, 0.0, 1.0])


@pytest.mark.slow  # compiles a full update (SVGD through D_phi and the KDE): 20-40 s
def test_particles_start_near_the_start_and_move_to_intermediate_success():
    teacher = maze_teacher()
    state = jitted(teacher)[4](jax.random.PRNGKey(0), teacher.default_params())
    start = np.asarray(MAZE.task_space.default[:2])
    assert np.linalg.norm(np.asarray(state.particles) - start, axis=-1).max() < 0.25
    # Success falls with the distance from the start; everything below y = 0.5 reached.
    goals = jax.random.uniform(jax.random.PRNGKey(1), (512, 2), maxval=jnp.array([1.0, 0.45]))
    distance = jnp.linalg.norm(goals - start, axis=-1)
    update = jitted(teacher)[3]
    for step in range(3):
        success = jax.random.uniform(jax.random.PRNGKey(10 + step), (512,)) < 1 - distance / 0.9
        records = feedback(goals, success)
        context = UpdateContext(rollout=rollout(goals))
        state = update(state, KEY, None, records, jnp.int32(step), context)
    d = np.asarray(teacher.predict_success(state, state.particles))
    # Particles gather where D is intermediate (the Beta(2, 2) mode is 0.5).
    assert 0.25 < np.median(d) < 0.75, d
    assert np.asarray(state.particles)[:, 1].max() < 0.7  # held near the reached region
    _, tasks, _ = teacher.sample(state, jax.random.PRNGKey(5), 64)
    np.testing.assert_allclose(tasks[:, :2], np.broadcast_to(start, (64, 2)))
    snap = teacher.snapshot(state)
    assert snap["grid"].shape == (16, 2) and snap["grid_success"].shape == (16,)


def test_random_goal_teacher_hands_out_valid_goals_from_the_start():
    teacher = TEACHERS.get("random_goal")(task_space=MAZE.task_space, env=MAZE)
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    _, tasks, _ = teacher.sample(state, jax.random.PRNGKey(1), 2000)
    assert np.asarray(MAZE.is_valid_position(tasks[:, 2:])).all()
    np.testing.assert_allclose(
        tasks[:, :2], np.broadcast_to(MAZE.task_space.default[:2], (2000, 2))
    )
    # Both halves of the U get goals.
    assert 0.3 < float((tasks[:, 3] > 0.5).mean()) < 0.7
    grid_maze = GoalMaze("u_maze")
    teacher = RandomGoalTeacher(grid_maze.task_space, env=grid_maze)
    _, tasks, _ = teacher.sample(
        teacher.init(None, teacher.default_params()), jax.random.PRNGKey(2), 500
    )
    cells = grid_maze.coords_to_cell(tasks[:, 2:])
    assert np.asarray(grid_maze.is_free(cells)).all()
    assert len(np.unique(np.asarray(cells), axis=0)) == len(grid_maze.free_cells())


# -- the goal protocol: task_with_goal --------------------------------------------------------


@pytest.mark.parametrize("env", [PointMaze("u_maze"), GoalMaze("u_maze"), BitFlip(4, True)])
def test_task_with_goal_round_trips(env):
    dim, g = env.task_space.dim, env.goal_dim
    tasks = jax.random.uniform(jax.random.PRNGKey(0), (3, 5, dim))
    goals = jax.random.uniform(jax.random.PRNGKey(1), (3, 5, g))
    new = env.task_with_goal(tasks, goals)
    assert new.shape == tasks.shape
    np.testing.assert_array_equal(env.goal_from_task(new), goals)
    # The rest of the task (the start) is kept, and writing the old goal back restores it.
    np.testing.assert_array_equal(env.task_with_goal(new, env.goal_from_task(tasks)), tasks)
    # One goal broadcasts over a batch of tasks.
    one = env.task_with_goal(tasks, goals[0, 0])
    np.testing.assert_array_equal(
        env.goal_from_task(one), jnp.broadcast_to(goals[0, 0], goals.shape)
    )


def test_task_with_goal_sets_the_env_goal():
    maze = GoalMaze("u_maze")
    task = maze.task_with_goal(maze.task_space.default_task, maze.cell_to_coords(np.array([1, 7])))
    params = maze.task_to_params(task, None)
    np.testing.assert_array_equal(params.goal, [1, 7])
    np.testing.assert_array_equal(params.start, maze.default_params().start)
    task = MAZE.task_with_goal(MAZE.task_space.default_task, jnp.array([0.8, 0.8]))
    np.testing.assert_allclose(MAZE.task_to_params(task, None).goal, [0.8, 0.8])


# -- success coverage ---------------------------------------------------------------------------


class OracleAgent:
    """goal_maze's shortest-path policy (or staying put) behind the agent interface."""

    def __init__(self, env, move: bool):
        self.env, self.move = env, move

    def act(self, state, obs, carry, key, deterministic=True):
        action = self.env.oracle_action(obs) if self.move else jnp.zeros(obs.shape[0], jnp.int32)
        return action, carry, ()

    def env_action(self, action):
        return action

    def initial_carry(self, n, tasks=None):
        return ()


def test_success_coverage():
    maze = GoalMaze("u_maze")
    goals = maze.goal_grid()
    base = maze.task_space.default_task
    key = jax.random.PRNGKey(0)
    # The oracle reaches every free cell within the limit; an agent that bumps into the
    # wall above the start (action 0 = up) only "reaches" the start cell.
    assert float(success_coverage(maze, OracleAgent(maze, True), None, base, goals, key)) == 1.0
    still = float(success_coverage(maze, OracleAgent(maze, False), None, base, goals, key))
    assert still == pytest.approx(1 / len(goals))


# -- configuration and the loop -----------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(), "needs the env"),
        (dict(env="point_maze"), "GoalTaskEnv"),
        (dict(env=MAZE, difficulty="medium_rare"), "difficulty"),
        (dict(env=MAZE, num_particles=1), "num_particles"),
        (dict(env=MAZE, svgd_steps=0), "svgd_steps"),
        (dict(env=MAZE, alpha=0.5), "alpha"),
        (dict(env=MAZE, random_goal_ratio=1.5), "random_goal_ratio"),
        (dict(env=MAZE, svgd_lr=0.0), "svgd_lr"),
        (dict(env=MAZE, particles=10), "unknown config key 'particles'"),
        (dict(env=MAZE, base_task=(0.5, 0.5)), "base_task"),
    ],
)
def test_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        make_svgg(MAZE.task_space, **kwargs)


def test_difficulty_presets_set_alpha_and_beta():
    assert make_svgg(MAZE.task_space, env=MAZE).default_params().alpha == 2.0
    hard = make_svgg(MAZE.task_space, env=MAZE, difficulty="hard")
    assert (hard.hyper.alpha, hard.hyper.beta) == (1.5, 3.0)
    custom = make_svgg(MAZE.task_space, env=MAZE, difficulty="hard", beta=4.0)
    assert (custom.hyper.alpha, custom.hyper.beta) == (1.5, 4.0)


@pytest.mark.parametrize("name", ["svgg", "random_goal"])
def test_the_loop_hands_goal_curricula_their_env(name):
    from acl.build import build_components
    from tests.conftest import tiny_config

    config = tiny_config(env={"name": "point_maze"}, teacher={"name": name})
    components = build_components(config)
    assert components.teacher.env is components.env


def test_experiment_config_builds_every_method_without_compiling():
    from acl.config import load_yaml
    from experiments.papers.svgg import COMMAND, make_trainer, parse

    config = parse(load_yaml(COMMAND.default_config))
    kinds = {}
    for method in config.methods:
        trainer, env = make_trainer(config, method)
        kinds[method] = type(trainer.teacher).__name__
        _, changed = make_trainer(config, method, config.recovery.walls)
        assert len(changed.walls) == len(env.walls) + 1  # a wall is added
        # The start (and the rest of the default task) stays the base maze's.
        assert changed.task_space.default == env.task_space.default
        np.testing.assert_array_equal(changed.default_params().start, env.default_params().start)
    assert kinds == {"svgg": "SVGGTeacher", "random_goal": "RandomGoalTeacher"}
    # The issue-24 comparison: uniform_box and alp_gmm choose goals only.
    config = parse(load_yaml(Path(COMMAND.default_config).parent / "svgg_s_maze.yaml"))
    for method in ("uniform_box", "alp_gmm"):
        trainer, env = make_trainer(config, method)
        assert type(trainer.teacher).__name__ == "SubspaceTeacher"
        assert trainer.teacher.dims == (2, 3)
        assert env.invalid_goal == "keep"
    with pytest.raises(ConfigError, match="unknown method"):
        parse({"methods": ["svgg", "nope"], "base": {"env": "point_maze"}})
    with pytest.raises(ConfigError, match="point_maze"):
        parse({"base": {"env": "goal_maze"}})
    with pytest.raises(ConfigError, match="recovery.at"):
        parse({"base": {"env": "point_maze"}, "recovery": {"at": 1.5}})


@pytest.mark.slow  # compiles DQN + HER twice per method and both chunk programs: minutes
def test_experiment_script_end_to_end(tmp_path):
    import json

    from experiments.papers.svgg import main

    args = [
        "--seeds",
        "2",
        "--recovery",
        "--set",
        "base.loop.total_env_steps=3200",
        "--set",
        "base.loop.eval_every=1600",
        "--set",
        "svgg.num_particles=16",
        "--set",
        "svgg.svgd_steps=2",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert main(args) == 0
    payload = json.loads((tmp_path / "results.json").read_text())
    assert payload["recovery"] is True
    for r in payload["results"]:
        assert np.asarray(r["coverage"]).shape == (2, 2)
        assert r["change_index"] == 1
    assert (tmp_path / "curves.png").stat().st_size > 0
