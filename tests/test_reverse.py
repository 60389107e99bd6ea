"""Reverse curriculum generation (acl.teachers.reverse) and the uniform-start baseline."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from acl.core.types import Feedback
from acl.teachers import TEACHERS
from acl.teachers.reverse import ReverseTeacher, UniformStartTeacher, make_reverse
from envs.base import StartTaskEnv
from envs.goal_maze import GoalMaze
from envs.point_maze import PointMaze
from tests.teacher_harness import check_teacher

KEY = jax.random.PRNGKey(0)
"""Teachers' update key: these teachers keep their own keys and ignore it."""

# -- a toy StartTaskEnv on the harness's 3-D task space ------------------------------------


@struct.dataclass
class ToyState:
    position: jax.Array


class ToyStartEnv(StartTaskEnv):
    """Start = the task's first two coordinates; a step moves 0.1 along an axis, clipped."""

    start_dim = 2
    max_episode_steps = 10

    def __init__(self, task_space):
        self.task_space = task_space
        self._low = np.asarray(task_space.low[:2], np.float32)
        self._high = np.asarray(task_space.high[:2], np.float32)

    def default_params(self):
        return self.task_space.default_task

    def task_to_params(self, task, base_params):
        return jnp.asarray(task, jnp.float32)

    def reset(self, key, params):
        position = jnp.clip(params[:2], self._low, self._high)
        return position, ToyState(position)

    def step(self, key, state, action, params):
        delta = jnp.array([[0.1, 0], [-0.1, 0], [0, 0.1], [0, -0.1]], jnp.float32)[action]
        position = jnp.clip(state.position + delta, self._low, self._high)
        done = jnp.zeros((), bool)
        return position, ToyState(position), jnp.float32(0), done, done, {}

    def action_space(self):
        return spaces.Discrete(4)

    def start_from_state(self, state):
        return state.position

    def task_with_start(self, task, start):
        start = jnp.broadcast_to(start, task.shape[:-1] + (2,))
        return jnp.concatenate([start, task[..., 2:]], axis=-1)

    def goal_start(self, task):
        return jnp.asarray(task, jnp.float32)[:2]

    def start_distance(self, starts, task):
        return jnp.abs(starts - self.goal_start(task)).sum(-1) / 0.1


SMALL = dict(
    n_new=16, n_old=8, brownian_horizon=4, num_walks=8, updates_per_round=2, buffer_capacity=32
)


@pytest.mark.slow  # seven compiled expansions: 30-60 s on 2 cores
def test_passes_teacher_harness():
    check_teacher(lambda space: make_reverse(space, env=ToyStartEnv(space), **SMALL))


@pytest.mark.slow
def test_uniform_start_passes_teacher_harness():
    check_teacher(lambda space: UniformStartTeacher(space, env=ToyStartEnv(space)))


# -- goal_maze -----------------------------------------------------------------------------

MAZE = GoalMaze("u_maze")


def distance(env: GoalMaze, starts, cells) -> np.ndarray:
    """BFS steps from every start [N, 2] (coords) to the nearest of cells [M, 2] -> [N]."""
    start_cells = np.asarray(env.coords_to_cell(jnp.asarray(starts)))
    table = env.shortest_path_distance(start_cells[:, None, :], np.asarray(cells)[None, :, :])
    return np.where(table < 0, 10**6, table).min(axis=1)


MAZE_CONFIG = dict(
    n_new=40, n_old=20, brownian_horizon=3, num_walks=30, updates_per_round=2, buffer_capacity=4
)
"""One shape for most maze tests, so their jitted functions compile once."""


def maze_teacher(**overrides) -> ReverseTeacher:
    return _maze_teacher(tuple(sorted({**MAZE_CONFIG, **overrides}.items())))


@functools.cache
def _maze_teacher(items) -> ReverseTeacher:
    return make_reverse(MAZE.task_space, env=MAZE, **dict(items))


@functools.cache
def jitted(teacher: ReverseTeacher):
    """(init, sample, update) of `teacher`, jitted once per teacher."""
    return (
        jax.jit(teacher.init),
        jax.jit(teacher.sample, static_argnums=2),
        jax.jit(teacher.update),
    )


def init(teacher: ReverseTeacher, seed: int = 0):
    return jitted(teacher)[0](jax.random.PRNGKey(seed), teacher.default_params())


def on_grid(env: GoalMaze, starts) -> None:
    """Starts sit exactly on free cells."""
    starts = np.asarray(starts)
    cells = np.asarray(env.coords_to_cell(jnp.asarray(starts)))
    assert np.allclose(env.cell_to_coords(cells), starts, atol=1e-6)
    assert np.asarray(env.is_free(jnp.asarray(cells))).all(), "a start in a wall"


def test_first_starts_are_near_the_goal():
    teacher = maze_teacher()
    state = init(teacher)
    goal_cell = MAZE.default_params().goal
    assert np.allclose(state.buffer[0], MAZE.cell_to_coords(np.asarray(goal_cell)))
    on_grid(MAZE, state.batch)
    steps = distance(MAZE, state.batch, np.asarray(goal_cell)[None])
    assert steps.max() <= teacher.brownian_horizon
    assert steps.max() >= 1, "the walks should leave the goal"
    # The goal is fixed: every handed-out task keeps the env's default goal.
    _, tasks, _ = teacher.sample(state, jax.random.PRNGKey(1), 100)
    assert np.allclose(tasks[:, 2:], MAZE.task_space.default_task[2:])
    assert np.allclose(tasks[:, :2], state.batch[np.arange(100) % teacher.batch_size])


CELLS = {  # (row, col), free cells of u_maze far from the goal (5, 1)
    "A": (1, 1),
    "B": (1, 7),
    "C": (3, 4),
    "D": (7, 7),
    "E": (2, 4),
    "F": (6, 4),
}
# (attempts, successes): A 0.5 keep, B 0.1 keep (edge), C 0.0 drop (too hard),
# D 1.0 drop (too easy), E 0.9 keep (edge), F never tried: drop.
RECORDS = {"A": (4, 2), "B": (10, 1), "C": (10, 0), "D": (10, 10), "E": (10, 9), "F": (0, 0)}
KEEP = ["A", "B", "E"]


K = 64
"""Records per hand-built feedback (padded with masked rows): one update shape."""


K_ROUND = 192
"""Records of a whole round's feedback (num_rollouts episodes of every batch start)."""


def padded(feedback: Feedback, size: int = K) -> Feedback:
    """`feedback` padded to `size` records with masked ones."""
    extra = size - feedback.mask.shape[0]
    return jax.tree.map(
        lambda x: jnp.concatenate([x, jnp.zeros((extra,) + x.shape[1:], x.dtype)]), feedback
    )


def hand_built_round(teacher: ReverseTeacher, key=0):
    """A state whose batch is the cells A-F (F repeated), and the feedback of RECORDS plus
    masked garbage and an episode of a start outside the batch."""
    state = init(teacher, key)
    names = list(CELLS)
    # A second copy of A: it shares A's records and label, but enters the buffer once.
    order = names + ["A"] + ["F"] * (teacher.batch_size - len(names) - 1)
    batch = MAZE.cell_to_coords(np.array([CELLS[n] for n in order], np.int32))
    state = state.replace(batch=jnp.asarray(batch))
    base = np.asarray(teacher.default_params().base_task)
    tasks, success = [], []
    for name, (tries, wins) in RECORDS.items():
        task = np.concatenate([MAZE.cell_to_coords(np.array(CELLS[name])), base[2:]])
        tasks += [task] * tries
        success += [True] * wins + [False] * (tries - wins)
    outside = np.concatenate([MAZE.cell_to_coords(np.array([1, 4])), base[2:]])
    tasks += [outside, np.full(4, np.nan)]
    success += [True, True]
    mask = [True] * (len(tasks) - 1) + [False]
    n = len(tasks)
    feedback = Feedback(
        task=jnp.asarray(np.stack(tasks), jnp.float32),
        episode_return=jnp.zeros(n),
        success=jnp.asarray(success),
        length=jnp.ones(n, jnp.int32),
        mask=jnp.asarray(mask),
    )
    return state, padded(feedback), order


@pytest.mark.slow
def test_labelling_keeps_starts_with_success_in_range():
    teacher = maze_teacher()
    state, feedback, order = hand_built_round(teacher)
    update = jitted(teacher)[2]
    # Step 0 is mid-round (updates_per_round = 2): counts only, no expansion.
    mid = update(state, KEY, None, feedback, jnp.int32(0))
    expected = np.array([RECORDS[n] for n in order])
    np.testing.assert_array_equal(mid.attempts, expected[:, 0])
    np.testing.assert_array_equal(mid.successes, expected[:, 1])
    np.testing.assert_array_equal(mid.batch, state.batch)
    label = teacher.labels(mid)
    good = [order[i] for i in np.flatnonzero(np.asarray(label["good"]))]
    assert good == KEEP + ["A"]
    assert np.asarray(teacher.first_copies(mid)).sum() == len(CELLS)
    # Step 1 ends the round: the good starts join the buffer after the seed.
    after = update(state, KEY, None, feedback, jnp.int32(1))
    assert int(after.rounds) == 1 and int(after.last_good) == 3
    assert int(after.buffer_count) == 4
    kept = MAZE.cell_to_coords(np.array([CELLS[n] for n in KEEP], np.int32))
    np.testing.assert_allclose(after.buffer[1:4], kept)
    assert int(after.attempts.sum()) == 0 and int(after.cursor) == 0


def test_expansion_stays_within_brownian_horizon_of_good_starts():
    teacher = maze_teacher()
    state, feedback, _ = hand_built_round(teacher)
    after = jitted(teacher)[2](state, KEY, None, feedback, jnp.int32(1))
    new = np.asarray(after.batch[: teacher.n_new])
    on_grid(MAZE, new)
    good_cells = np.array([CELLS[n] for n in KEEP])
    steps = distance(MAZE, new, good_cells)
    assert steps.max() <= teacher.brownian_horizon
    # Seeds are the good starts only: far from the goal, none of these is next to it.
    goal = np.asarray(MAZE.default_params().goal)[None]
    assert distance(MAZE, new, goal).min() > teacher.brownian_horizon
    # Replayed starts come from the buffer (seed + good starts).
    old = np.asarray(after.batch[teacher.n_new :])
    buffer = np.asarray(after.buffer[: int(after.buffer_count)])
    assert (np.abs(old[:, None] - buffer[None]).max(-1) < 1e-6).any(1).all()
    assert not np.asarray(after.is_new[teacher.n_new :]).any()


def all_same_outcome(teacher, state, success: bool) -> Feedback:
    """`num_rollouts` episodes per batch start, all with the same success flag."""
    tasks = jnp.tile(teacher.batch_tasks(state), (teacher.num_rollouts, 1))
    n = tasks.shape[0]
    return padded(
        Feedback(
            task=tasks,
            episode_return=jnp.zeros(n),
            success=jnp.full(n, success),
            length=jnp.ones(n, jnp.int32),
            mask=jnp.ones(n, bool),
        ),
        size=K_ROUND,
    )


@pytest.mark.parametrize("success", [True, False], ids=["too_easy", "too_hard"])
def test_a_round_without_good_start_walks_from_the_last_good_set(success):
    teacher = maze_teacher()
    state, feedback, _ = hand_built_round(teacher)
    _, _, update = jitted(teacher)
    first = update(state, KEY, None, feedback, jnp.int32(1))  # A, B, E are good
    good_cells = np.array([CELLS[n] for n in KEEP])
    kept = np.asarray(first.good_set)[np.asarray(first.good_set_mask)]
    np.testing.assert_allclose(np.sort(kept, 0), np.sort(MAZE.cell_to_coords(good_cells), 0))
    assert int(first.fallback_rounds) == 0
    # Every start of the next round is too easy (or too hard): no good start.
    after = update(first, KEY, None, all_same_outcome(teacher, first, success), 3)
    assert int(after.rounds) == 2 and int(after.last_good) == 0
    assert int(after.fallback_rounds) == 1
    np.testing.assert_array_equal(after.good_set_mask, first.good_set_mask)
    np.testing.assert_array_equal(after.good_set, first.good_set)
    # The candidates are walked from the last good set, with the same horizon T_B...
    new = np.asarray(after.batch[: teacher.n_new])
    on_grid(MAZE, new)
    assert distance(MAZE, new, good_cells).max() <= teacher.brownian_horizon
    # ... and are on average at least the set's mean distance to the goal less one step.
    goal = np.asarray(MAZE.default_params().goal)[None]
    set_mean = distance(MAZE, MAZE.cell_to_coords(good_cells), goal).mean()
    assert float(teacher.set_distance(first)) == pytest.approx(set_mean)
    assert distance(MAZE, new, goal).mean() >= set_mean - 1
    # Each candidate is: walk states nearer the goal than that are left out.
    assert distance(MAZE, new, goal).min() >= set_mean - 1


def test_fewer_than_n_rollouts_label_nothing():
    teacher = maze_teacher()
    state = init(teacher)
    tasks = teacher.batch_tasks(state)[:1]
    n = teacher.num_rollouts - 1
    feedback = padded(
        Feedback(
            task=jnp.tile(tasks, (n, 1)),
            episode_return=jnp.zeros(n),
            success=jnp.arange(n) == 0,  # a rate of 1 / (N - 1): in range if labelled
            length=jnp.ones(n, jnp.int32),
            mask=jnp.ones(n, bool),
        )
    )
    update = jitted(teacher)[2]
    # At the round boundary nothing can be labelled yet: the round is extended.
    extended = update(state, KEY, None, feedback, jnp.int32(1))
    assert not np.asarray(teacher.labels(extended)["good"]).any()
    assert int(extended.rounds) == 0
    np.testing.assert_array_equal(extended.batch, state.batch)
    # N - 1 more episodes: now N or more, a rate in range, a good start.
    after = update(extended, KEY, None, feedback, jnp.int32(3))
    assert int(after.rounds) == 1 and int(after.last_good) >= 1


def test_round_without_finished_episodes_is_extended():
    teacher = maze_teacher()
    state = init(teacher)
    empty = padded(
        Feedback(
            task=jnp.zeros((0, 4)),
            episode_return=jnp.zeros(0),
            success=jnp.zeros(0, bool),
            length=jnp.zeros(0, jnp.int32),
            mask=jnp.zeros(0, bool),
        )
    )
    after = jitted(teacher)[2](state, KEY, None, empty, jnp.int32(1))
    for a, b in zip(jax.tree.leaves(after), jax.tree.leaves(state)):
        np.testing.assert_array_equal(a, b)


def test_replay_mix_of_handed_out_tasks():
    teacher = maze_teacher()
    state = init(teacher)
    n_new, b = teacher.n_new, teacher.batch_size
    state = state.replace(batch=jnp.concatenate([jnp.zeros((n_new, 2)), jnp.ones((b - n_new, 2))]))
    share = []
    for i in range(4):
        state, tasks, _ = jitted(teacher)[1](state, jax.random.PRNGKey(i), 50)
        share.append(np.asarray(tasks[:, 0] == 0))
    # 200 tasks cycle through the batch of 40 new + 20 old from index 0: 3 whole batches
    # (120 new, 60 old) and then 20 new.
    share = np.concatenate(share)
    assert share.sum() == 140 and (~share).sum() == 60
    assert int(state.cursor) == 200 % b


def test_a_task_pool_moves_the_cursor_back_over_the_entries_not_handed_out():
    teacher = maze_teacher()
    state = init(teacher)
    _, sample, update = jitted(teacher)
    batch = np.asarray(teacher.batch_tasks(state))
    state, pool, _ = sample(state, jax.random.PRNGKey(0), 50)
    no_episodes = padded(
        Feedback(
            task=jnp.zeros((0, 4)),
            episode_return=jnp.zeros(0),
            success=jnp.zeros(0, bool),
            length=jnp.zeros(0, jnp.int32),
            mask=jnp.zeros(0, bool),
        )
    )
    # Step 0 ends no round (updates_per_round 2); 17 of the 50 entries were handed out.
    kept = update(state, KEY, pool, no_episodes, jnp.int32(0))
    assert int(kept.cursor) == 50 % teacher.batch_size
    handed_17 = no_episodes.replace(handed_out=jnp.int32(17))
    state = update(state, KEY, pool, handed_17, jnp.int32(0))
    assert int(state.cursor) == 17
    _, after, _ = sample(state, jax.random.PRNGKey(1), 5)
    np.testing.assert_array_equal(np.asarray(after), batch[17:22])


def test_reservoir_when_the_buffer_is_full():
    teacher = maze_teacher()
    assert teacher.buffer_capacity == 4
    state, feedback, _ = hand_built_round(teacher)
    update = jitted(teacher)[2]
    batch = state.batch
    for _ in range(3):  # 1 seed + 3 x 3 good starts offered to 4 slots
        state = update(state.replace(batch=batch), KEY, None, feedback, jnp.int32(1))
    assert int(state.buffer_count) == 4 and int(state.buffer_seen) == 10
    on_grid(MAZE, state.buffer)


def test_same_key_same_curriculum():
    teacher = maze_teacher()
    _, sample, update = jitted(teacher)

    def run(seed):
        state = init(teacher, seed)
        out = []
        for step in range(6):
            state, tasks, _ = sample(state, jax.random.PRNGKey(step), 60)
            ones = jnp.ones(60, jnp.int32)
            success = (jnp.arange(60) % 3) == 0
            feedback = padded(Feedback(tasks, jnp.zeros(60), success, ones, ones > 0))
            state = update(state, KEY, None, feedback, jnp.int32(step))
            out.append(np.asarray(tasks))
        return np.stack(out), state

    a, state_a = run(5)
    b, state_b = run(5)
    c, _ = run(6)
    np.testing.assert_array_equal(a, b)
    for x, y in zip(jax.tree.leaves(state_a), jax.tree.leaves(state_b)):
        np.testing.assert_array_equal(x, y)
    assert int(state_a.rounds) == 3
    assert not np.array_equal(a, c)


# -- point_maze and config -------------------------------------------------------------------


@pytest.mark.slow  # compiles point_maze walks: 10-20 s on 2 cores
def test_point_maze_starts_are_valid_and_near_the_goal():
    env = PointMaze("u_maze")
    teacher = make_reverse(
        env.task_space,
        env=env,
        n_new=30,
        n_old=10,
        brownian_horizon=4,
        num_walks=20,
        buffer_capacity=8,
    )
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    goal = np.asarray(env.default_params().goal)
    assert ((np.asarray(state.batch) >= 0) & (np.asarray(state.batch) <= 1)).all()
    reach = np.linalg.norm(np.asarray(state.batch) - goal, axis=-1)
    assert reach.max() <= 4 * env.step_size + 1e-5 and reach.max() > 0
    # Starts stay on the goal's side of the U's wall (y = 0.5, x < 0.7).
    assert (np.asarray(state.batch)[:, 1] > 0.5).all()


def test_uniform_start_keeps_the_goal_and_lands_on_free_cells():
    teacher = TEACHERS.get("uniform_start")(task_space=MAZE.task_space, env=MAZE)
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    _, tasks, _ = teacher.sample(state, jax.random.PRNGKey(1), 500)
    on_grid(MAZE, tasks[:, :2])
    assert np.allclose(tasks[:, 2:], MAZE.task_space.default_task[2:])
    assert len(np.unique(np.asarray(tasks[:, :2]), axis=0)) == len(MAZE.free_cells())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(), "needs the env"),
        (dict(env="goal_maze"), "StartTaskEnv"),
        (dict(env=MAZE, r_min=0.5, r_max=0.2), "r_min"),
        (dict(env=MAZE, n_new=0), "n_new"),
        (dict(env=MAZE, preset="nope"), "preset"),
        (dict(env=MAZE, horizon=3), "unknown config key 'horizon'"),
        (dict(env=MAZE, base_task=(0.5, 0.5)), "base_task"),
    ],
)
def test_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        make_reverse(MAZE.task_space, **kwargs)


def test_experiment_config_builds_every_method_without_compiling():
    from acl.config import load_yaml
    from experiments.papers.reverse_curriculum import COMMAND, make_trainer, parse

    config = parse(load_yaml(COMMAND.default_config))
    kinds = {}
    for method in config.methods:
        trainer, env, task, distance = make_trainer(config, method)
        kinds[method] = type(trainer.teacher).__name__
        np.testing.assert_allclose(trainer.teacher.task_space.default, task)
    assert kinds == {
        "reverse": "ReverseTeacher",
        "uniform_start": "UniformStartTeacher",
        "fixed": "FixedTeacher",
    }
    assert distance == 14  # u_maze: S is the free cell farthest from G
    with pytest.raises(ConfigError, match="unknown method"):
        parse({"methods": ["reverse", "nope"], "base": {"env": "goal_maze"}})
    with pytest.raises(ConfigError, match="goal_maze"):
        parse({"base": {"env": "cartpole"}})


@pytest.mark.slow  # compiles two methods' chunks: 20-40 s on 2 cores
def test_experiment_writes_curves_and_good_starts_per_evaluation(tmp_path):
    """The script end to end on a tiny budget: every curve is [S, evaluations] and the
    reverse teacher's good starts are kept per evaluation (None for a baseline)."""
    import json

    from experiments.papers.reverse_curriculum import main

    argv = ["--methods", "reverse", "fixed", "--seeds", "2", "--out", str(tmp_path)]
    argv += ["--set", "base.loop.total_env_steps=2048", "--set", "base.loop.eval_every=1024"]
    assert main([*argv, "--no-progress"]) == 0
    results = json.loads((tmp_path / "results.json").read_text())["results"]
    reverse, fixed = results
    assert list(reverse)[:9] == [
        "method",
        "env_steps",
        "hard_task",
        "hard_distance",
        "final_evaluations",
        "good_starts",
        "compile_seconds",
        "wall_seconds",
        "env_steps_per_second",
    ]
    assert reverse["env_steps"] == [1024, 2048]
    curves = ("greedy_success", "sampled_success", "train_success", "reach")
    curves += ("teacher_fallback_rounds", "teacher_frontier_distance")
    for name in curves:
        assert np.asarray(reverse[name]).shape == (2, 2), name
    # Good starts per cell, [evaluations, S, H, W]: as many as the buffer holds.
    good_starts = np.asarray(reverse["good_starts"])
    assert good_starts.shape[:2] == (2, 2)
    np.testing.assert_array_equal(
        good_starts.sum(axis=(2, 3)), np.asarray(reverse["teacher_buffer_count"]).T
    )
    assert fixed["good_starts"] is None
    np.testing.assert_array_equal(fixed["reach"], 14.0)  # always the hard start


@pytest.mark.parametrize("name", ["reverse", "uniform_start"])
def test_the_loop_hands_start_curricula_their_env(name):
    from acl.build import build_components
    from tests.conftest import tiny_config

    config = tiny_config(env={"name": "goal_maze"}, teacher={"name": name})
    components = build_components(config)
    assert components.teacher.env is components.env


@pytest.mark.slow  # compiles Brax walks (spring pipeline): about a minute on 2 cores
def test_brax_goal_starts_are_valid_and_near_the_goal():
    from envs.brax_goal import BraxGoal

    env = BraxGoal()
    horizon = 4
    teacher = make_reverse(
        env.task_space,
        env=env,
        n_new=30,
        n_old=10,
        brownian_horizon=horizon,
        num_walks=20,
        buffer_capacity=8,
    )
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    starts = np.asarray(state.batch)
    goal = np.asarray(env.goal_from_task(jnp.asarray(env.task_space.default)))
    assert np.asarray(env.is_valid_position(jnp.asarray(starts))).all()
    reach = np.linalg.norm(starts - goal, axis=-1)
    # The ball's top speed is 1 m/s, 0.05 per env step (with a little slack for the
    # pushes out of soft contacts).
    assert reach.max() <= horizon * 0.05 + 0.02 and reach.max() > 0
    # Every handed-out task keeps the run's goal.
    _, tasks, _ = teacher.sample(state, jax.random.PRNGKey(1), 16)
    goals = np.asarray(env.goal_from_task(tasks))
    np.testing.assert_allclose(goals, np.broadcast_to(goal, goals.shape), atol=1e-6)


def sampled_episodes(env: GoalMaze, task, key, n: int, noise: float) -> jax.Array:
    """[n] bool: success of n episodes from `task` of a policy that takes the
    shortest-path action, except with probability `noise` a uniform one (its greedy
    action is the shortest-path one)."""
    params = env.task_to_params(jnp.asarray(task), None)

    def episode(key):
        obs, state = env.reset(key, params)

        def step(carry, key):
            obs, state, done, success = carry
            pick, explore, step_key = jax.random.split(key, 3)
            uniform = jax.random.randint(pick, (), 0, 4)
            explores = jax.random.uniform(explore) < noise
            action = jnp.where(explores, uniform, env.oracle_action(obs))
            obs, state, _, terminated, truncated, _ = env.step(step_key, state, action, params)
            return (obs, state, done | terminated | truncated, success | (terminated & ~done)), None

        keys = jax.random.split(key, env.max_episode_steps)
        init = (obs, state, jnp.zeros((), bool), jnp.zeros((), bool))
        return jax.lax.scan(step, init, keys)[0][3]

    return jax.vmap(episode)(jax.random.split(key, n))


def test_stochastic_policy_rollouts_give_intermediate_rates_where_greedy_always_succeeds():
    # A start 6 steps from the goal with 8 steps to get there.
    env = GoalMaze("u_maze", max_episode_steps=8)
    cells = env.free_cells()
    goal = np.asarray(env.default_params().goal)
    steps = env.shortest_path_distance(cells, np.broadcast_to(goal, cells.shape))
    start = env.cell_to_coords(cells[int(np.flatnonzero(steps == 6)[0])])
    teacher = make_reverse(env.task_space, env=env, **MAZE_CONFIG)
    state = jax.jit(teacher.init)(KEY, teacher.default_params())
    state = state.replace(batch=jnp.broadcast_to(jnp.asarray(start), state.batch.shape))
    task = teacher.batch_tasks(state)[0]
    update = jax.jit(teacher.update)
    rates = {}
    for name, noise in (("greedy", 0.0), ("sampled", 0.3)):
        success = sampled_episodes(env, task, jax.random.PRNGKey(1), 60, noise)
        feedback = padded(
            Feedback(
                task=jnp.tile(task, (60, 1)),
                episode_return=jnp.zeros(60),
                success=success,
                length=jnp.ones(60, jnp.int32),
                mask=jnp.ones(60, bool),
            )
        )
        mid = update(state, KEY, None, feedback, jnp.int32(0))
        label = teacher.labels(mid)
        rates[name] = float(label["rate"][0])
        after = update(state, KEY, None, feedback, jnp.int32(1))
        rates[name + "_good"] = int(after.last_good)
    # The greedy policy always succeeds (too easy); sampled actions give a rate in range.
    assert rates["greedy"] == 1.0 and rates["greedy_good"] == 0
    assert 0.1 <= rates["sampled"] <= 0.9, rates
    assert rates["sampled_good"] == 1
