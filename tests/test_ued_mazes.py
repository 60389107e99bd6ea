"""experiments/ued_mazes.py's table and notebooks/ued_mazes.ipynb, on tiny runs of all five
teachers (tests/fixtures/ued_mazes: `acl ued-mazes --preset cpu --seeds 2
--set loop.total_env_steps=16384 --set loop.eval_every=8192 --set eval.sampled_attempts=2
--set loop.task_log_size=8`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import numpy as np
import pytest

from acl.agents.base import AGENTS
from envs.maze_levels import EVALUATION, PLR_EVALUATION
from experiments.papers import ued_mazes
from tests.notebooks import count_images, execute, stored_parameters_cell, streams

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "ued_mazes"
NOTEBOOK = ROOT / "notebooks" / "ued_mazes.ipynb"


def test_every_method_has_a_config_that_builds():
    from acl.build import build_components
    from acl.config import load_config

    for method in ued_mazes.METHODS:
        config = load_config(ued_mazes.config_path(method), preset="cpu")
        assert config.teacher.name == method
        build_components(config)


def test_cpu_preset_anneals_on_the_published_horizon():
    from acl.agents.ppo import annealed_learning_rate
    from acl.build import agent_kwargs
    from acl.config import load_config

    def learning_rates(config, updates):
        agent = AGENTS.get(config.agent.name)(**agent_kwargs(config))
        return [
            float(
                annealed_learning_rate(
                    agent.hyper, k, agent.config.anneal_lr, agent.config.total_updates
                )
            )
            for k in updates
        ]

    for method in ued_mazes.METHODS:
        published = load_config(ued_mazes.config_path(method))
        cpu = load_config(ued_mazes.config_path(method), preset="cpu")
        short = cpu.loop.total_env_steps // (cpu.loop.num_envs * cpu.loop.num_steps)
        assert short == 80 < cpu.loop.lr_schedule_updates == 30_000
        first = range(short)
        assert learning_rates(cpu, first) == learning_rates(published, first)
        # Annealed over its own 80 updates it would be half the published rate by 40.
        own = load_config(
            ued_mazes.config_path(method), ["loop.lr_schedule_updates=0"], preset="cpu"
        )
        assert learning_rates(own, [40])[0] == pytest.approx(0.5e-4)
        assert learning_rates(cpu, [40])[0] == pytest.approx(1e-4 * (1 - 40 / 30_000))


def test_table_reads_the_final_evaluation_of_each_run(tmp_path):
    out = tmp_path / "runs"
    shutil.copytree(FIXTURE, out)
    assert ued_mazes.main(["--table-only", "--out", str(out)]) == 0
    records = json.loads((out / "results.json").read_text())["results"]
    assert [r["method"] for r in records] == list(ued_mazes.METHODS)
    for r in records:
        rates = np.asarray(r["solve_sampled"])
        assert r["mazes"] == list(EVALUATION) and rates.shape == (2, len(EVALUATION))
        assert r["published_seven"] == list(PLR_EVALUATION)
        seven = [r["mazes"].index(n) for n in PLR_EVALUATION]
        np.testing.assert_allclose(r["mean_seven"], rates[:, seven].mean(axis=1))
    table = (out / "table.md").read_text()
    assert "0.68" in table and "robust_plr" in table  # the published figure beside it
    assert (out / "solve_rates.png").stat().st_size > 0


def test_readme_table_is_the_results_as_markdown(tmp_path):
    out = tmp_path / "runs"
    shutil.copytree(FIXTURE, out)
    assert ued_mazes.main(["--table-only", "--out", str(out)]) == 0
    records = json.loads((out / "results.json").read_text())["results"]
    lines = (out / "readme_table.md").read_text().splitlines()
    assert lines[0] == "| maze | " + " | ".join(ued_mazes.METHODS) + " |"
    assert len(lines) == 2 + len(EVALUATION) + 3
    cells = [line.strip("|").split("|") for line in lines[2:]]
    assert all(len(row) == 1 + len(records) for row in cells)
    for j, r in enumerate(records):
        rates = np.asarray(r["solve_sampled"])
        for i, name in enumerate(EVALUATION):
            assert cells[i][0].strip().rstrip(" *") == name
            assert cells[i][1 + j].strip().startswith(f"{rates[:, i].mean():.2f} ± ")
        mean = cells[len(EVALUATION)][1 + j].strip().strip("*")
        assert mean.startswith(f"{np.mean(r['mean_seven']):.2f} ± ")


def test_table_without_runs_fails_clearly(tmp_path, capsys):
    assert ued_mazes.main(["--table-only", "--out", str(tmp_path)]) == 1
    assert "no run with metrics" in capsys.readouterr().err


def test_notebook_is_stored_with_the_outputs_of_the_committed_mini_suite():
    params = stored_parameters_cell(NOTEBOOK)
    assert '"experiments/results/ued_mini")' in params.source
    shown = streams(nbformat.read(NOTEBOOK, as_version=4))
    assert "mini suite, 8 held-out mazes" in shown
    assert f"ok: {len(ued_mazes.SUITE_METHODS['mini'])} teachers, 8 held-out mazes" in shown


@pytest.mark.slow  # a kernel, matplotlib and five runs' levels: about 30 s
def test_notebook_executes_on_fixture(monkeypatch):
    monkeypatch.setenv("ACL_RESULTS_DIR", str(FIXTURE))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = execute(NOTEBOOK, ROOT / "notebooks", timeout=300, reads=FIXTURE)
    shown = streams(nb)
    assert "published suite" in shown
    assert f"ok: 5 teachers, {len(EVALUATION)} held-out mazes" in shown
    pngs = count_images(nb)
    assert pngs == 3 + len(ued_mazes.METHODS)  # curves, per-maze, level stats; levels each


@pytest.mark.slow  # a kernel, matplotlib and seven runs' levels: about a minute
def test_notebook_executes_on_the_committed_mini_suite(monkeypatch):
    monkeypatch.delenv("ACL_RESULTS_DIR", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    mini = ROOT / "experiments" / "results" / "ued_mini"
    nb = execute(NOTEBOOK, ROOT, timeout=600, reads=mini)
    methods = ued_mazes.SUITE_METHODS["mini"]
    assert f"ok: {len(methods)} teachers, 8 held-out mazes" in streams(nb)
    assert count_images(nb) == 3 + len(methods)


def _mini_metrics(path: Path, finals: dict[int, list[float]]) -> None:
    """A metrics.csv of 4 evaluations of 2 mini mazes; seed s scores finals[s] at the
    last three and 0.9 at the first (which "final" must leave out)."""
    import pandas as pd

    rows = []
    for seed, last_three in finals.items():
        for i, value in enumerate([0.9] + last_three):
            rows.append(
                {
                    "chunk": i,
                    "seed": seed,
                    "env_steps": 1000 * (i + 1),
                    f"{ued_mazes.METRIC}/MiniMaze": value,
                    f"{ued_mazes.METRIC}/MiniCorridor": value / 2,
                }
            )
    path.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(path / "metrics.csv", index=False)


def test_mini_suite_final_is_the_mean_of_the_last_three_with_welch_p_against_dr(tmp_path):
    from acl.benchmark.stats import welch_p

    _mini_metrics(tmp_path / "dr", {0: [0.1, 0.2, 0.3], 1: [0.0, 0.1, 0.2]})
    _mini_metrics(
        tmp_path / "robust_plr", {0: [0.5, 0.6, 0.7], 1: [0.6, 0.6, 0.6], 2: [0.4, 0.5, 0.6]}
    )
    argv = [
        "--suite",
        "mini",
        "--table-only",
        "--out",
        str(tmp_path),
        "--methods",
        "dr",
        "robust_plr",
    ]
    assert ued_mazes.main(argv) == 0
    dr, robust = json.loads((tmp_path / "results.json").read_text())["results"]
    assert dr["final_evaluations"] == 3 and dr["env_steps"] == 4000
    np.testing.assert_allclose(dr["solve_sampled"], [[0.2, 0.1], [0.1, 0.05]])
    np.testing.assert_allclose(robust["mean_all"], [0.45, 0.45, 0.375])
    assert dr["welch_p_vs_dr"] is None and robust["published_mean_seven"] is None
    assert robust["welch_p_vs_dr"] == pytest.approx(welch_p(robust["mean_all"], dr["mean_all"]))
    lines = (tmp_path / "readme_table.md").read_text().splitlines()
    assert lines[0] == "| maze | dr | robust_plr |" and len(lines) == 2 + 2 + 3
    assert lines[4].startswith("| **mean of the 2** | **0.11 ± 0.04** |")
    assert "Welch p vs dr" in lines[5] and "published" not in "".join(lines)
    assert ued_mazes.config_path("accel", "mini").name == "ued_mini_accel.yaml"


def test_mini_configs_build_and_share_every_setting_but_the_teacher():
    from acl.build import build_components
    from acl.config import load_config

    configs = {m: load_config(ued_mazes.config_path(m, "mini")) for m in ued_mazes.METHODS}
    for method, config in configs.items():
        assert config.teacher.name == method and config.eval.test_set == "maze_mini_held_out"
        assert config.env.kwargs["height"] == config.env.kwargs["width"] == 9
        build_components(config)
    same = {m: (c.env, c.agent, c.loop, c.eval, c.seed) for m, c in configs.items()}
    assert all(v == same["dr"] for v in same.values())


def test_mini_suite_tables_add_the_risk_over_sampled_mazes(tmp_path):
    from acl.benchmark.stats import welch_p

    _mini_metrics(tmp_path / "dr", {0: [0.1, 0.2, 0.3], 1: [0.0, 0.1, 0.2]})
    _mini_metrics(tmp_path / "sfl", {0: [0.5, 0.6, 0.7], 1: [0.6, 0.6, 0.6]})

    def seed(mean, cvar_10, cvar_1):
        return {"mean_success": mean, "cvar": {"0.01": cvar_1, "0.1": cvar_10, "0.5": mean}}

    runs = {
        "dr": [seed(0.9, 0.4, 0.0), seed(0.8, 0.3, 0.1)],
        "sfl": [seed(0.95, 0.6, 0.2), seed(0.97, 0.7, 0.3)],
    }
    (tmp_path / "risk").mkdir()
    (tmp_path / "risk" / "risk.json").write_text(json.dumps({"runs": runs}))
    argv = ["--suite", "mini", "--table-only", "--out", str(tmp_path), "--methods", "dr", "sfl"]
    assert ued_mazes.main(argv) == 0
    dr, sfl = json.loads((tmp_path / "results.json").read_text())["results"]
    assert sfl["risk"]["CVaR 0.1"] == [0.6, 0.7] and dr["risk"]["sampled mean"] == [0.9, 0.8]
    assert sfl["risk_p_vs_dr"]["CVaR 0.01"] == pytest.approx(welch_p([0.2, 0.3], [0.0, 0.1]))
    assert dr["risk_p_vs_dr"]["CVaR 0.01"] is None
    text = (tmp_path / "readme_table.md").read_text()
    assert "| sampled mazes: CVaR 0.1 | 0.350 ± 0.050 | 0.650 ± 0.050 (p " in text


def test_the_sfl_arms_differ_from_dr_in_the_teacher_and_arm_b_in_its_budget():
    from acl.build import build_components
    from acl.config import load_config

    dr, sfl, equal = (
        load_config(ued_mazes.config_path(m, "mini")) for m in ("dr", *ued_mazes.SFL_ARMS)
    )
    assert (sfl.teacher.name, sfl.teacher.kwargs["preset"]) == ("sfl", "cpu")
    assert (sfl.env, sfl.agent, sfl.loop, sfl.eval, sfl.seed) == (
        dr.env,
        dr.agent,
        dr.loop,
        dr.eval,
        dr.seed,
    )
    assert (equal.env, equal.agent, equal.eval, equal.teacher) == (
        dr.env,
        dr.agent,
        dr.eval,
        sfl.teacher,
    )
    teacher = build_components(equal).teacher
    updates = equal.loop.total_env_steps // (equal.loop.num_envs * equal.loop.num_steps)
    refreshes = -(-updates // teacher.buffer_update_frequency)  # at updates 0, 16, ...
    total = equal.loop.total_env_steps + refreshes * teacher.env_steps_per_refresh
    # The same total env steps as DR's training, as near as whole refreshes allow.
    assert updates == 128 and 0.95 * dr.loop.total_env_steps <= total <= dr.loop.total_env_steps
