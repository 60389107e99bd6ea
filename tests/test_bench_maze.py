"""experiments/bench_maze.py at tiny sizes: the table and JSON it writes (no timed
assertions). The raw-env part runs in the fast suite; the training part (the recurrent
PPO loop under DR and PLR, a minute of compiling on 2 CPU cores) is slow."""

from __future__ import annotations

import importlib.util
import json

import jax
import numpy as np
import pytest

from experiments.bench import maze as bench

HAS_JAXUED = importlib.util.find_spec("jaxued") is not None
NO_JAXUED = "jaxued is not installed (the `dev` extra pins jaxued==0.0.1): ours-only rows"


@pytest.fixture(scope="module")
def raw_document(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench_maze") / "bench.json"
    argv = ["--quick", "--num-envs", "2", "--repeats", "2", "--no-train", "--out", str(out)]
    assert bench.main(argv) == 0
    return json.loads(out.read_text())


@pytest.mark.slow
def test_raw_rows_of_our_maze(raw_document):
    doc = raw_document
    assert doc["benchmark"] == "bench_maze" and doc["training"] == []
    (result,) = doc["results"]
    assert result["num_envs"] == 2 and result["steps_per_run"] == bench.steps_per_run(2, 256)
    ours = result["ours"]
    assert ours["steps_per_second"] > 0 and ours["compile_seconds"] > 0
    assert ours["steps_per_second"] == pytest.approx(
        2 * result["steps_per_run"] / ours["median_seconds"]
    )
    assert doc["table"][0]["envs"] == "2"
    assert doc["provenance"]["versions"]["jax"]


def test_raw_rows_beside_jaxued(raw_document):
    if not HAS_JAXUED:
        pytest.skip(NO_JAXUED)
    (result,) = raw_document["results"]
    theirs = result["jaxued"]
    assert result["ratio"] == pytest.approx(
        result["ours"]["steps_per_second"] / theirs["steps_per_second"]
    )
    assert raw_document["extra_versions"]["jaxued"] == "0.0.1"
    assert raw_document["table"][0]["ours / JaxUED"] == f"{result['ratio']:.2f}"


@pytest.mark.slow
def test_levels_and_dynamics_match_jaxued():
    """The converted levels are the same mazes: the same random actions move both agents
    alike and pay the same rewards until they reach the goal."""
    if not HAS_JAXUED:
        pytest.skip(NO_JAXUED)
    maze_cls, level_cls = bench.jaxued_maze()
    ours, n = bench.Maze(), 16
    levels = bench.sample_levels(ours, n, 25)
    theirs = maze_cls(max_height=13, max_width=13, agent_view_size=5)
    reset_a, step_a = ours.reset, ours.step
    reset_b, step_b = bench.jaxued_fns(theirs, theirs.default_params)
    their_levels = bench.to_jaxued(levels, level_cls, 13, 13)

    @jax.jit
    def trajectories(key):
        keys = jax.random.split(key, n)
        _, a = jax.vmap(reset_a)(keys, levels)
        _, b = jax.vmap(reset_b)(keys, their_levels)

        def body(carry, key):
            a, b = carry
            action = jax.random.randint(key, (n,), 0, 3)
            _, a, reward_a, *_ = jax.vmap(step_a)(keys, a, action, levels)
            _, b, reward_b, *_ = jax.vmap(step_b)(keys, b, action, their_levels)
            return (a, b), (a.agent_pos, b.agent_pos[:, ::-1], reward_a, reward_b)

        return jax.lax.scan(body, (a, b), jax.random.split(key, 40))[1]

    pos_a, pos_b, reward_a, reward_b = jax.device_get(trajectories(jax.random.PRNGKey(0)))
    before_goal = np.cumsum(reward_a > 0, axis=0) - (reward_a > 0) == 0  # [T, N]
    np.testing.assert_array_equal(pos_a[before_goal], pos_b[before_goal].astype(np.int32))
    np.testing.assert_allclose(reward_a[before_goal], reward_b[before_goal], atol=1e-6)


@pytest.mark.slow
def test_training_section_reports_the_teacher_overhead(tmp_path):
    out = tmp_path / "bench.json"
    argv = ["--quick", "--no-raw", "--train-preset", "cpu", "--out", str(out)]
    argv += ["--train-set", "loop.num_envs=2"]
    assert bench.main(argv) == 0
    doc = json.loads(out.read_text())
    dr, plr = doc["training"]
    assert (dr["teacher"], plr["teacher"]) == ("dr", "plr")
    assert dr["overhead"] == 0.0
    assert plr["overhead"] == pytest.approx(1 - plr["steps_per_second"] / dr["steps_per_second"])
    assert dr["env_steps"] == dr["iterations"] * 2 * dr["num_steps"]


@pytest.mark.slow
def test_training_warm_up_reaches_plrs_minimum_fill_in_whole_calls(tiny):
    from acl.benchmark.timing import training_throughput
    from acl.build import make_train

    # The CPU preset's buffer: 512 levels x minimum fill 0.5 / 32 envs = 8 iterations.
    plr = make_train(bench.training_config("plr", "cpu", 1, []))
    assert bench.iterations_to_minimum_fill(plr) == 8
    assert (
        bench.iterations_to_minimum_fill(make_train(bench.training_config("dr", "cpu", 1, []))) == 0
    )
    timing = training_throughput(make_train(tiny), iterations=2, repeats=1, warmup_iterations=3)
    assert timing["warmup_iterations"] == 4  # rounded up to whole calls of 2
    assert timing["env_steps"] == 2 * 2 * 4 * 16  # seeds x timed iterations x envs x steps
