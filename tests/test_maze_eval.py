"""Zero-shot evaluation on named mazes (`eval.test_set`, `eval.sampled_attempts`): one
entry per maze, exact solve rates and returns of a scripted policy, metrics in the run
directory (metrics.csv, summary.json).

The policy is scripted (it ignores the observation), so nothing learns and the loop
compiles no network: the maze rollout and the evaluation only. Its test set is three
corridors (a test-only named set) where going forward solves or cannot solve.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import yaml

from acl.agents.base import Agent
from acl.build import build_components, make_train
from acl.config import apply_preset, load_config, parse_config
from acl.core.errors import ConfigError
from acl.loop.evaluation import TEST_SETS, named_test_set
from acl.loop.train import Components
from acl.run.experiment import run_experiment
from acl.teachers.random import FixedTeacher
from envs.maze import FORWARD, LEFT, Level, Maze
from envs.maze_levels import EVALUATION, PLR_EVALUATION, make_level
from experiments import run as run_cli

CONFIGS = Path(__file__).resolve().parent.parent / "experiments" / "configs"


@dataclass(frozen=True)
class ScriptedAgent(Agent):
    """Ignores the observation: `greedy` when acting deterministically, `sampled` when
    sampling. Learns nothing (the loop's agent protocol, no parameters)."""

    greedy: int = FORWARD
    sampled: int = FORWARD

    def init(self, key, obs_space, action_space):
        return jnp.zeros(())

    def initial_carry(self, n: int, tasks=None):
        return jnp.zeros((n, 0))

    def env_action(self, action):
        return action

    def act(self, state, obs, carry, key, deterministic=False):
        action = self.greedy if deterministic else self.sampled
        return jnp.full(obs.shape[0], action, jnp.int32), carry, {}

    def update(self, state, batch, key, axis_name=None):
        return state, {"loss": jnp.zeros(())}


def corridor(goal_col: int, wall_col: int | None = None) -> Level:
    """A 13 x 13 maze: the agent at (0, 0) facing right, the goal at (0, goal_col), a wall
    at (0, wall_col) if given."""
    walls = np.zeros((13, 13), bool)
    if wall_col is not None:
        walls[0, wall_col] = True
    return Level(walls, (0, 0), 0, (0, goal_col))


CORRIDORS = {"open5": corridor(5), "blocked": corridor(5, wall_col=3), "open12": corridor(12)}
"""Forward-only solves open5 in 5 steps and open12 in 12, never blocked."""


class CorridorMaze(Maze):
    """The maze with a test-only named test set of the three corridors."""

    name = "maze_corridors"


@TEST_SETS.register(CorridorMaze.name)
def corridor_test_set(env, spec, seed):
    names = tuple(CORRIDORS) if spec == "corridors" else tuple(spec)
    tasks = [env.params_to_task(env.level_to_params(CORRIDORS[n])) for n in names]
    return names, np.stack(tasks)


def maze_config(**eval_section):
    return parse_config(
        {
            "name": "maze_eval",
            "env": "maze",
            "loop": {"num_envs": 2, "num_steps": 8, "total_env_steps": 32, "eval_every": 16},
            "eval": {"test_set": "corridors", "sampled_attempts": 3, **eval_section},
            "num_seeds": 2,
        }
    )


def test_named_sets_give_one_task_per_maze():
    env = Maze()
    names, tasks = named_test_set(env, "maze_held_out")
    assert names == EVALUATION and tasks.shape == (len(EVALUATION), env.task_dim)
    assert named_test_set(env, "maze_plr")[0] == PLR_EVALUATION
    names, tasks = named_test_set(env, ["SixteenRooms", "SmallCorridor"], seed=1)
    assert names == ("SixteenRooms", "SmallCorridor")
    level = make_level("SmallCorridor", seed=1)  # procedural: drawn with eval.seed
    np.testing.assert_array_equal(tasks[1], env.params_to_task(env.level_to_params(level)))
    with pytest.raises(ConfigError, match="eval.test_set: unknown maze set 'maze_held'"):
        named_test_set(env, "maze_held")
    with pytest.raises(ConfigError, match="eval.test_set: unknown maze 'Labyrinht'"):
        named_test_set(env, ["Labyrinht"])


def test_config_keys_and_errors():
    config = maze_config(test_set=["SixteenRooms", "Labyrinth"])
    assert config.eval.test_set == ["SixteenRooms", "Labyrinth"]
    assert config.eval.sampled_attempts == 3
    assert make_train(config).evaluation.test_task_names == ("SixteenRooms", "Labyrinth")
    assert parse_config({}).eval.test_set == "" and parse_config({}).eval.sampled_attempts == 0
    for bad, match in (
        ({"test_set": 3}, "eval.test_set: expected a name or a list of names"),
        ({"test_set": ["SixteenRooms", ""]}, "eval.test_set: expected a name or a list"),
        ({"sampled_attempts": -1}, "eval.sampled_attempts must be >= 0"),
    ):
        with pytest.raises(ConfigError, match=match):
            parse_config({"eval": bad})
    cartpole = parse_config({"eval": {"test_set": "maze_held_out"}})
    with pytest.raises(ConfigError, match="env 'cartpole' provides no named test sets"):
        make_train(cartpole)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """The loop, evaluating an agent that goes forward when greedy and turns when
    sampling, on the three corridors (2 greedy episodes and 3 sampled attempts each)."""
    config = maze_config(episodes_per_task=2)
    env = CorridorMaze()
    agent = ScriptedAgent(greedy=FORWARD, sampled=LEFT)
    trainer = make_train(config, Components(env, FixedTeacher(env.task_space), agent))
    out = tmp_path_factory.mktemp("maze_eval") / "run"
    summary = run_experiment(config, out, progress=False, trainer=trainer)
    return config, trainer, out, summary


@pytest.mark.slow
def test_solve_rates_and_returns_per_maze_are_exact(finished_run):
    """Every evaluation (chunk and seed): the greedy episodes solve the open corridors,
    with the goal reward of their step count, the sampled attempts nothing."""
    _, trainer, out, _ = finished_run
    assert trainer.evaluation.test_task_names == tuple(CORRIDORS)
    metrics = pd.read_csv(out / "metrics.csv")
    assert len(metrics) == 2 * trainer.schedule.num_chunks == 4

    def per_maze(column):
        return metrics[[f"{column}/{n}" for n in CORRIDORS]].to_numpy()

    for column in ("eval_solve_sampled", "eval_solve_greedy", "eval_return", "eval_return_sampled"):
        np.testing.assert_allclose(metrics[column], per_maze(column).mean(axis=1), err_msg=column)
    solved = 1.0 - 0.9 * np.array([5, 0, 12]) / 250  # the goal reward at step t, T = 250
    solved[1] = 0.0
    np.testing.assert_allclose(per_maze("eval_return"), np.tile(solved, (4, 1)), rtol=1e-6)
    np.testing.assert_array_equal(per_maze("eval_solve_greedy"), np.tile([1, 0, 1], (4, 1)))
    np.testing.assert_array_equal(per_maze("eval_solve_sampled"), 0.0)
    np.testing.assert_array_equal(per_maze("eval_return_sampled"), 0.0)
    np.testing.assert_allclose(metrics["eval_pct_mastered"], 200 / 3)
    np.testing.assert_allclose(metrics["eval_mean_return"], solved.mean(), rtol=1e-6)


def test_metrics_land_in_the_run_directory(finished_run):
    _, trainer, out, summary = finished_run
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    assert on_disk["test_set"] == {
        "spec": "corridors",
        "names": list(CORRIDORS),
        "episode_steps": 250,
        "greedy_episodes": 2,
        "sampled_attempts": 3,
    }
    per_task = on_disk["final_per_test_task"]
    assert list(per_task) == list(CORRIDORS)
    for metric in ("solve_sampled", "solve_greedy", "return", "return_sampled"):
        assert f"final_{metric}_mean" in on_disk and f"final_{metric}_se" in on_disk
        for name in CORRIDORS:
            assert {f"{metric}_mean", f"{metric}_se"} <= set(per_task[name])
    assert on_disk["final_solve_greedy_mean"] == pytest.approx(2 / 3)
    assert on_disk["final_solve_greedy_se"] == 0.0
    assert per_task["open12"]["return_mean"] == pytest.approx(1 - 0.9 * 12 / 250)
    assert per_task["blocked"]["solve_greedy_mean"] == 0.0


def test_a_time_limit_stops_between_evaluations_and_projects_the_full_run(finished_run, tmp_path):
    config, trainer, _, full = finished_run
    assert "stopped_at_time_limit" not in full
    out = tmp_path / "limited"
    summary = run_experiment(config, out, progress=False, trainer=trainer, max_seconds=0)
    # The first evaluation always runs; a spent budget starts no other.
    assert len(pd.read_csv(out / "metrics.csv")) == len(summary["seeds"]) == 2
    assert summary["stopped_at_time_limit"] is True
    assert summary["env_steps"] == trainer.schedule.steps_per_chunk
    assert summary["planned_env_steps"] == trainer.schedule.env_steps
    steps = summary["planned_env_steps"] * len(summary["seeds"])
    projected = summary["compile_seconds"] + steps / summary["env_steps_per_second"]
    assert summary["projected_seconds_full_run"] == pytest.approx(projected)
    with pytest.raises(ValueError, match="max_seconds must be >= 0"):
        run_experiment(config, out, progress=False, trainer=trainer, max_seconds=-1)


MAZE_CONFIGS = ("dr", "plr", "robust_plr", "accel", "paired")


@pytest.mark.parametrize("method", MAZE_CONFIGS)
def test_maze_configs_build_with_and_without_the_cpu_preset(method):
    path = CONFIGS / f"maze_{method}.yaml"
    full, cpu = load_config(path), load_config(path, preset="cpu")
    assert full.teacher.name == cpu.teacher.name == method
    assert full.agent.name == "recurrent_ppo" and full.loop.mode == "batch"
    assert full.loop.total_env_steps == 30_000 * 32 * 256
    assert full.eval.test_set == "maze_held_out" and full.eval.sampled_attempts == 10
    assert cpu.name == f"maze_{method}_cpu" and cpu.num_seeds == 3
    assert cpu.loop.total_env_steps < full.loop.total_env_steps
    # The preset changes the budget, and the level buffer of the replay teachers with it:
    # each reaches its minimum fill (new levels only until then) in the first tenth of
    # its updates.
    kwargs = dict(cpu.teacher.kwargs)
    for config in (full, cpu):
        if "capacity" in config.teacher.kwargs:
            teacher = config.teacher.kwargs
            updates = config.loop.total_env_steps // (config.loop.num_envs * config.loop.num_steps)
            updates_to_fill = (
                teacher["capacity"] * teacher["minimum_fill_ratio"] / config.loop.num_envs
            )
            assert updates_to_fill <= 0.1 * updates
            kwargs["capacity"] = full.teacher.kwargs["capacity"]
    teacher = dataclasses.replace(cpu.teacher, kwargs=kwargs)
    same = dataclasses.replace(
        cpu, name=full.name, num_seeds=full.num_seeds, loop=full.loop, teacher=teacher
    )
    assert same == full
    build_components(cpu)


def test_presets_merge_before_overrides(tmp_path):
    data = {
        "teacher": "random",
        "loop": {"num_envs": 4, "num_steps": 16},
        "presets": {"small": {"teacher": {"name": "fixed"}, "loop": {"num_envs": 2}}},
    }
    merged = apply_preset(data, "small")
    assert merged["teacher"] == {"name": "fixed"}
    assert merged["loop"] == {"num_envs": 2, "num_steps": 16}
    assert apply_preset(data, None) is data
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    config = load_config(path, ["loop.num_envs=8"], preset="small")
    assert (config.teacher.name, config.loop.num_envs) == ("fixed", 8)
    assert load_config(path).loop.num_envs == 4  # parse_config skips `presets`
    with pytest.raises(ConfigError, match=r"no preset .gpu. in the config \(known: small"):
        load_config(path, preset="gpu")
    assert run_cli.main(["--config", str(path), "--preset", "gpu"]) == 2
