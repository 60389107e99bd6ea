"""The CLI end to end: run directory, summary schema, plot, re-evaluation, bad input."""

from __future__ import annotations

import importlib
import json
from contextlib import contextmanager
from pathlib import Path

import jax
import matplotlib.image
import numpy as np
import pandas as pd
import pytest
import yaml

# The CLI imports the library lazily; importing it here keeps gymnax's import-time
# constants (it builds jnp arrays at import) out of the compile counts below.
import acl.loop.train  # noqa: F401
from acl.config import load_config
from acl.run.results import SUMMARY_KEYS
from experiments import commands
from experiments.tools import evaluate as evaluate_cli
from experiments.tools import run as run_cli
from tests.conftest import TINY


def write_tiny(folder) -> str:
    """The tiny config as a YAML file in `folder`; returns its path."""
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    return str(path)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    config = write_tiny(root)
    out = root / "run"
    code = run_cli.main(
        [
            "--config",
            config,
            "--out",
            str(out),
            "--no-progress",
            "--set",
            "loop.total_env_steps=512",
        ]
    )
    assert code == 0
    return out


def test_run_directory_has_everything_a_researcher_needs(finished_run):
    summary = json.loads((finished_run / "summary.json").read_text())
    for key in SUMMARY_KEYS:
        assert key in summary, key
    assert summary["env"] == "cartpole" and summary["teacher"] == "random"
    assert summary["seeds"] == [0, 1] and summary["env_steps"] == 512
    assert 0.0 <= summary["final_pct_mastered_mean"] <= 100.0
    assert summary["env_steps_per_second"] > 0 and summary["compile_seconds"] > 0
    metrics = pd.read_csv(finished_run / "metrics.csv")
    assert len(metrics[metrics.seed == 0]) >= 2, "need at least two evaluation rows"
    assert set(metrics.env_steps) == {256, 512}
    tasks = pd.read_csv(finished_run / "tasks.csv")
    assert {"chunk", "seed", "pole_half_length"} <= set(tasks.columns) and len(tasks) > 0
    snapshot = np.load(finished_run / "teacher" / "eval_0001.npz")
    assert snapshot["episodes_seen"].shape == (2,) and (snapshot["episodes_seen"] > 0).all()
    image = matplotlib.image.imread(finished_run / "learning_curve.png")
    assert image.ndim == 3 and image.shape[0] > 100
    provenance = json.loads((finished_run / "provenance.json").read_text())
    assert provenance["versions"]["jax"] and provenance["git_commit"] and provenance["device"]
    resolved = yaml.safe_load((finished_run / "config.yaml").read_text())
    assert resolved["loop"]["total_env_steps"] == 512
    assert (finished_run / "agent_params.msgpack").stat().st_size > 0


def test_evaluate_reproduces_the_final_figure(finished_run):
    summary = json.loads((finished_run / "summary.json").read_text())
    figures = evaluate_cli.evaluate_run(str(finished_run))
    assert figures["pct_mastered_per_seed"] == summary["final_pct_mastered_per_seed"]
    assert figures["mean_return_per_seed"] == pytest.approx(
        summary["final_mean_return_per_seed"], rel=1e-5
    )


def test_run_dir_loads_the_saved_agents_and_refuses_other_spaces(finished_run, tmp_path):
    from acl.core.errors import ConfigError
    from acl.run.results import RunDir
    from envs import make_env

    run = RunDir(finished_run)
    env = make_env("cartpole", max_episode_steps=50)
    agent, states = run.load_agents(env)  # the agent rebuilt from config.yaml
    assert all(leaf.shape[0] == 2 for leaf in jax.tree.leaves(states))
    _, one = run.load_agent_state(env, 1, agent)
    for every, seed_1 in zip(jax.tree.leaves(states), jax.tree.leaves(one), strict=True):
        np.testing.assert_array_equal(every[1], seed_1)
    with pytest.raises(ConfigError, match=r"seed index must be in \[0, 2\)"):
        run.load_agent_state(env, 2)
    with pytest.raises(ConfigError, match="other parameter shapes"):
        run.load_agents(make_env("acrobot"))  # 6 observations, 3 actions
    with pytest.raises(ConfigError, match="not a finished run"):
        RunDir(tmp_path).load_agents(env)


@contextmanager
def count_compilations():
    events = []

    def listener(event, duration, **kwargs):
        if event.startswith("/jax/core/compile/"):
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


BAD_INPUTS = [
    (["--set", "env.name=cartpol"], "env.name: unknown env 'cartpol'; did you mean 'cartpole'"),
    (["--set", "teacher.name=randm"], "unknown teacher 'randm'; did you mean 'random'"),
    (["--set", "agent.name=ppp"], "unknown agent 'ppp'; did you mean 'ppo'"),
    (
        ["--set", "env.task_low=[1.0, 0.05, 1.0]", "--set", "env.task_high=[0.5, 2.0, 40.0]"],
        "low=1.0 >= high=0.5",
    ),
    (["--set", "loop.num_envs=0"], "loop.num_envs must be a positive integer, got 0"),
    (["--set", "loop.total_env_steps=-5"], "loop.total_env_steps must be a positive integer"),
    (["--seeds", "0"], "num_seeds must be a positive integer, got 0"),
    (["--set", "loop.num_enms=4"], "loop: unknown config key 'num_enms'; did you mean 'num_envs'"),
    (["--set", "agent.learning_rte=0.1"], "agent: unknown config key 'learning_rte'"),
    (["--set", "colour=blue"], "config: unknown config key 'colour'"),
    (["--max-minutes", "-1"], "--max-minutes must be a finite number >= 0, got -1.0"),
]


@pytest.mark.parametrize("args,message", BAD_INPUTS, ids=[m[:30] for _, m in BAD_INPUTS])
def test_bad_input_fails_before_compiling_with_a_one_line_error(tmp_path, capsys, args, message):
    config = write_tiny(tmp_path)
    with count_compilations() as compiled:
        code = run_cli.main(["--config", config, "--out", str(tmp_path / "run"), *args])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert message in err
    assert len(err.splitlines()) == 1
    assert compiled == [], "nothing may be compiled before a config error"
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "content,message",
    [
        (None, "cannot read"),
        ("loop: [unclosed", "is not valid YAML"),
        ("- just\n- a list\n", "must hold a mapping"),
    ],
)
def test_unreadable_config_file(tmp_path, capsys, content, message):
    path = tmp_path / "config.yaml"
    if content is not None:
        path.write_text(content)
    with count_compilations() as compiled:
        code = run_cli.main(["--config", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1
    assert compiled == []


@pytest.mark.slow
def test_nan_stops_the_run_naming_the_iteration_and_keeps_metrics(tmp_path, capsys):
    config = write_tiny(tmp_path)
    out = tmp_path / "run"
    # A NaN step size is refused before compiling now; a finite reward scale this large
    # still overflows float32 returns (1e38 per step), so the loss goes NaN in the loop.
    code = run_cli.main(
        [
            "--config",
            config,
            "--out",
            str(out),
            "--no-progress",
            "--set",
            "agent.reward_scale=1.0e+38",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 1
    assert "non-finite loss at iteration" in err and len(err.splitlines()) == 1
    assert (out / "metrics.csv").exists() and (out / "config.yaml").exists()
    assert not (out / "summary.json").exists()


OLD_SCRIPTS = sorted(
    path.stem
    for path in (Path(__file__).parents[1] / "experiments").glob("*.py")
    if "__main__" in path.read_text() and path.stem != "commands"
)


@pytest.mark.parametrize("script", OLD_SCRIPTS)
def test_every_old_script_path_runs_its_command(script, capsys):
    # `python -m experiments.X` keeps working: its shim runs the moved module's main, the
    # one `acl` runs. (Each command's --help: tests/test_cli_commands.py.)
    module = importlib.import_module(f"experiments.{script}")
    moved = {commands.load(c.name).main for c in commands.COMMANDS}
    assert module.main in moved, f"experiments/{script}.py runs no acl command"
    with pytest.raises(SystemExit) as exited:
        module.main(["--help"])
    assert exited.value.code == 0
    assert "usage: acl " in capsys.readouterr().out


RUN_CONFIGS = sorted(
    path
    for path in (Path(__file__).parents[1] / "experiments" / "configs").glob("*.yaml")
    # Benchmark suites (`suite:`) and method comparisons (`base:`) have their own schemas,
    # checked by their scripts' tests.
    if not {"suite", "base"} & set(yaml.safe_load(path.read_text()))
)


@pytest.mark.parametrize(
    "path",
    # Stump Tracks' physics compiles for over 10 s on 2 cores.
    [
        pytest.param(p, marks=pytest.mark.slow if p.stem.startswith("stump_tracks") else ())
        for p in RUN_CONFIGS
    ],
    ids=lambda path: path.stem,
)
def test_every_run_config_builds_its_trainer(path):
    from acl.build import make_train

    config = load_config(path)
    trainer = make_train(config)
    assert config.name == path.stem
    assert trainer.schedule == config.loop.schedule


@pytest.mark.slow
def test_sampled_risk_reevaluates_saved_students(finished_run, tmp_path):
    from experiments.tools import risk as sampled_risk

    out = tmp_path / "risk"
    argv = [str(finished_run), "--out", str(out), "--levels", "20", "--episodes", "2"]
    argv += ["--regret-levels", "20", "--regret-steps", "60", "--no-progress"]
    assert sampled_risk.main(argv) == 0
    data = json.loads((out / "risk.json").read_text())
    records = data["runs"]["run"]
    assert [r["seed"] for r in records] == [0, 1]
    for r in records:
        cvar = [r["cvar"][a] for a in ("0.01", "0.1", "0.5")]
        # CVaR grows with alpha up to the mean, all of them success rates.
        assert 0.0 <= cvar[0] <= cvar[1] <= cvar[2] <= r["mean_success"] + 1e-9 <= 1.0 + 1e-9
        assert (
            np.all(np.diff(r["curve"]) >= -1e-9) and abs(r["curve"][-1] - r["mean_success"]) < 1e-6
        )
        for key, rho in r["regret"].items():
            assert rho is None or -1.0 <= rho <= 1.0, key
    assert matplotlib.image.imread(out / "cvar_curves.png").shape[0] > 100
    # The same students and key give the same figures.
    again = tmp_path / "again"
    assert sampled_risk.main([*argv[:1], "--out", str(again), *argv[3:]]) == 0
    assert json.loads((again / "risk.json").read_text())["runs"] == data["runs"]


def test_sampled_risk_refuses_bad_sizes(finished_run, tmp_path):
    from experiments.tools import risk as sampled_risk

    with pytest.raises(SystemExit):
        sampled_risk.main([str(finished_run), "--out", str(tmp_path), "--levels", "0"])


@pytest.mark.slow
def test_sampled_attempts_give_the_test_sets_cvar(tmp_path):
    config = write_tiny(tmp_path)
    out = tmp_path / "run"
    argv = ["--config", config, "--out", str(out), "--no-progress"]
    argv += ["--set", "loop.total_env_steps=512", "--set", "eval.sampled_attempts=4"]
    assert run_cli.main(argv) == 0
    metrics = pd.read_csv(out / "metrics.csv")
    columns = ["eval_cvar_0.01", "eval_cvar_0.1", "eval_cvar_0.5"]
    assert set(columns) <= set(metrics.columns)
    values = metrics[columns].to_numpy()
    assert np.isfinite(values).all() and ((values >= 0) & (values <= 1)).all()
    # A smaller share of worse tasks never measures better.
    assert (np.diff(values, axis=1) >= -1e-9).all()
    summary = json.loads((out / "summary.json").read_text())
    final = metrics[metrics.env_steps == 512]["eval_cvar_0.1"]
    assert summary["final_cvar_0.1_mean"] == pytest.approx(final.mean())
