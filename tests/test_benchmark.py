"""The benchmark runner: tidy table, resume after an interruption, students, errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from acl.benchmark import runner
from acl.benchmark.runner import (
    RESULT_COLUMNS,
    _merge_students,
    is_complete,
    parse_suite,
    run_suite,
)
from acl.core.errors import ConfigError
from acl.run.checkpoint import RunCheckpoints
from tests.compile_effort import compile_effort
from tests.conftest import TINY

ROOT = Path(__file__).resolve().parent.parent


def tiny_suite(**changes) -> dict:
    base = {k: (dict(v) if isinstance(v, dict) else v) for k, v in TINY.items()}
    base.pop("teacher")
    base.pop("name")
    data = {
        "suite": "tiny",
        "base": base,
        "teachers": {"random": {}, "fixed": {}},
        "settings": ["default", "rugged", {"challenge": "unfeasible", "expert": "high"}],
        "forgetting_period": 0.5,
    }
    data.update(changes)
    return data


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole")
    # The slow resume test compares its table with this one bit for bit: both compile at
    # low effort, whichever test sets the fixture up.
    with compile_effort(low=True):
        table = run_suite(parse_suite(tiny_suite()), out, progress=False)
    return out, table


@pytest.mark.slow
def test_the_table_is_tidy_and_complete(uninterrupted):
    out, table = uninterrupted
    assert list(table.columns) == list(RESULT_COLUMNS)
    # 2 teachers x 3 settings x 2 seeds x 3 evaluations.
    assert len(table) == 2 * 3 * 2 * 3
    runs = table.groupby(["teacher", "challenge", "expert", "seed"]).size()
    assert len(runs) == 12 and (runs == 3).all()
    assert set(table.expert) == {"none", "high"}
    assert table.pct_mastered.between(0, 100).all()
    pd.testing.assert_frame_equal(pd.read_csv(out / "results.csv"), table)
    prov = json.loads((out / "provenance.json").read_text())
    assert {"versions", "git_commit", "seeds", "cells"} <= set(prov)
    assert prov["seeds"] == [0, 1] and len(prov["cells"]) == 6
    assert json.loads((out / "suite.json").read_text())["suite"] == "tiny"
    # Same challenge and seed, different teachers: different curricula, so different runs.
    default = table[(table.challenge == "default") & (table.env_steps == table.env_steps.max())]
    assert default.set_index(["teacher", "seed"]).train_return.nunique() > 1


@pytest.mark.slow  # two benchmark runs compiled: about 70 s
def test_an_interrupted_benchmark_resumes_without_recomputing_finished_cells(
    uninterrupted, tmp_path, monkeypatch
):
    suite = parse_suite(tiny_suite())
    real_run = runner._Program.run
    calls = []

    def killed_in_second_cell(self, spec, *args, **kwargs):
        calls.append(spec.key)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process dies in the middle of cell 2
        return real_run(self, spec, *args, **kwargs)

    monkeypatch.setattr(runner._Program, "run", killed_in_second_cell)
    # The fixture's effort: runs repeat bit for bit only under the same compile options.
    with pytest.raises(KeyboardInterrupt), compile_effort(low=True):
        run_suite(suite, tmp_path, progress=False)
    cells = sorted(p.name for p in (tmp_path / "cells").iterdir())
    assert cells == ["random__default.csv", "random__default.npz"], (
        "only the finished cell is on disk"
    )
    first = (tmp_path / "cells" / "random__default.csv").stat().st_mtime_ns

    calls.clear()

    def counting(self, spec, *args, **kwargs):
        calls.append((self.config.teacher.name, spec.key))
        return real_run(self, spec, *args, **kwargs)

    monkeypatch.setattr(runner._Program, "run", counting)
    with compile_effort(low=True):
        table = run_suite(suite, tmp_path, progress=False)
    assert ("random", "default") not in calls and len(calls) == 5
    assert (tmp_path / "cells" / "random__default.csv").stat().st_mtime_ns == first
    assert is_complete(suite, tmp_path)
    pd.testing.assert_frame_equal(table, uninterrupted[1])


@pytest.mark.slow
def test_a_results_directory_refuses_a_different_suite(uninterrupted):
    out, _ = uninterrupted
    changed = parse_suite(tiny_suite(teachers={"random": {}}))
    with pytest.raises(ConfigError, match="different suite config"):
        run_suite(changed, out, progress=False)


@pytest.mark.slow
def test_a_suite_that_only_adds_teachers_keeps_the_finished_cells(uninterrupted, tmp_path):
    out, table = uninterrupted
    grown_dir = tmp_path / "grown"
    shutil.copytree(out, grown_dir)
    teachers = {"random": {}, "fixed": {}, "alp_gmm": {"fit_every": 2}}
    grown = parse_suite(tiny_suite(teachers=teachers))
    assert runner.grows(json.loads((out / "suite.json").read_text()), grown)
    kept = run_suite(grown, grown_dir, progress=False, stop_after=0)
    pd.testing.assert_frame_equal(kept, table)
    assert not is_complete(grown, grown_dir), "alp_gmm's cells are still to run"
    assert json.loads((grown_dir / "suite.json").read_text())["teachers"].keys() == teachers.keys()
    # Grown from there: an earlier teacher's config changed, or the base, is refused.
    for changed in (
        tiny_suite(teachers={**teachers, "alp_gmm": {"fit_every": 3}}),
        tiny_suite(teachers={**teachers, "riac": {}}, forgetting_period=0.4),
    ):
        with pytest.raises(ConfigError, match="different suite config"):
            run_suite(parse_suite(changed), grown_dir, progress=False, stop_after=0)


@pytest.mark.slow
def test_a_directory_without_its_cells_is_resumed_from_results_csv(uninterrupted, tmp_path):
    # As committed: results.csv, suite.json and provenance.json, no cells/.
    out, table = uninterrupted
    kept = tmp_path / "committed"
    shutil.copytree(out, kept)
    shutil.rmtree(kept / "cells")
    before = (kept / "results.csv").read_text()
    suite = parse_suite(tiny_suite())
    assert is_complete(suite, kept) is False
    again = run_suite(suite, kept, progress=False, stop_after=0)
    assert is_complete(suite, kept), "every cell restored, none recomputed"
    assert (kept / "results.csv").read_text() == before
    pd.testing.assert_frame_equal(again, table)


def test_suite_config_errors_name_the_field():
    with pytest.raises(ConfigError, match="unknown suite key"):
        parse_suite(tiny_suite(extra=1))
    with pytest.raises(ConfigError, match="did you mean"):
        parse_suite(tiny_suite(teachers={"alp_gm": {}}))
    with pytest.raises(ConfigError, match="challenge must be one of"):
        parse_suite(tiny_suite(settings=["rugd"]))
    with pytest.raises(ConfigError, match="twice"):
        parse_suite(tiny_suite(settings=["default", "default"]))
    with pytest.raises(ConfigError, match="students"):
        parse_suite(tiny_suite(settings=["students"]))
    with pytest.raises(ConfigError, match="forgetting_period"):
        parse_suite(tiny_suite(forgetting_period=1.5))


def test_students_scores_are_the_mean_over_students():
    row = {c: 0 for c in RESULT_COLUMNS}
    a = pd.DataFrame([{**row, "seed": s, "pct_mastered": 10.0 * s} for s in range(2)])
    b = pd.DataFrame([{**row, "seed": s, "pct_mastered": 30.0 + s} for s in range(2)])
    merged = _merge_students([a, b])
    np.testing.assert_allclose(merged.pct_mastered, [15.0, 20.5])
    assert len(merged) == 2


@pytest.mark.slow  # a compiled benchmark cell per student: ~30-50 s on 2 cores
def test_students_setting_runs_every_student(tmp_path):
    data = tiny_suite(
        teachers={"random": {}},
        settings=["students", "forgetting"],
        students={"small": {"hidden_sizes": [8]}, "wide": {"hidden_sizes": [32]}},
    )
    table = run_suite(parse_suite(data), tmp_path, progress=False)
    assert set(table.challenge) == {"students", "forgetting"}
    assert len(table[table.challenge == "students"]) == 2 * 3


@pytest.mark.slow  # the benchmark CLI twice, compiled cells: ~30-45 s on 2 cores
def test_cli_resumes_and_writes_the_report(tmp_path):
    config = tmp_path / "suite.yaml"
    config.write_text(yaml.safe_dump(tiny_suite(teachers={"random": {}})))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments.benchmark", "--config", str(config)]
    command += ["--out", str(out), "--no-progress"]
    first = subprocess.run(
        command + ["--stop-after", "1"], capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    assert first.returncode == 0, first.stderr
    assert "re-run the same command to resume" in first.stdout
    second = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert second.returncode == 0, second.stderr
    assert "random" in second.stdout and (out / "report" / "summary.md").exists()
    assert (out / "report" / "curves.png").stat().st_size > 0
    bad = subprocess.run(
        [sys.executable, "-m", "experiments.benchmark", "--config", str(tmp_path / "none.yaml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert bad.returncode == 2 and "error" in bad.stderr


def test_random_action_throughput_counts_every_instance_step():
    import jax.numpy as jnp

    from acl.benchmark.timing import random_action_throughput
    from envs import make_env

    env = make_env("cartpole")
    tasks = jnp.broadcast_to(env.task_space.default_task, (4, env.task_space.dim))
    params = env.params_for_tasks(tasks)
    result = random_action_throughput(env, params, steps=300)
    assert result["env_steps"] == 4 * 300
    assert result["steps_per_second"] == pytest.approx(1200 / result["seconds"])


@pytest.mark.slow
def test_expert_cells_of_a_teacher_without_prior_are_copied_and_equal_a_real_run(
    tmp_path, monkeypatch
):
    """Random takes no prior, so its expert-high cell is its no-expert cell by
    construction: the runner copies it instead of running it, and running it anyway
    gives the same table."""
    settings = ["default", {"challenge": "default", "expert": "high"}]
    suite = parse_suite(tiny_suite(teachers={"random": {}}, settings=settings))
    assert not runner.takes_prior(suite, "random")
    real_run = runner._Program.run
    calls = []

    def counting(self, spec, *args, **kwargs):
        calls.append(spec.key)
        return real_run(self, spec, *args, **kwargs)

    monkeypatch.setattr(runner._Program, "run", counting)
    copied = run_suite(suite, tmp_path / "copied", progress=False)
    assert calls == ["default"]
    prov = json.loads((tmp_path / "copied" / "provenance.json").read_text())
    assert prov["cells"]["random__default+expert_high"] == {"copied_from": "random__default"}

    monkeypatch.setattr(runner, "_prior_free_source", lambda *args: None)
    ran = run_suite(suite, tmp_path / "ran", progress=False)
    assert calls == ["default", "default", "default+expert_high"]
    pd.testing.assert_frame_equal(copied, ran)
    assert set(ran.expert) == {"none", "high"}


@pytest.mark.slow
def test_a_half_finished_cell_resumes_from_its_checkpoint(uninterrupted, tmp_path, monkeypatch):
    suite = parse_suite(tiny_suite())
    save = RunCheckpoints.save

    class Killed(Exception):
        """Stands for the process dying after the cell's second evaluation was saved."""

    def save_then_die(self, carry, metrics, progress):
        save(self, carry, metrics, progress)
        if progress.chunks_done == 2:
            self.wait()
            raise Killed

    monkeypatch.setattr(RunCheckpoints, "save", save_then_die)
    with pytest.raises(Killed), compile_effort(low=True):
        run_suite(suite, tmp_path, progress=False, stop_after=1)
    assert not list((tmp_path / "cells").glob("*.csv"))
    monkeypatch.undo()

    chunks_run = []
    real_run = runner._Program.run

    class Counter:
        def update(self, n):
            chunks_run.append(n)

    def counting(self, spec, seed, period, progress, checkpoint_dir=None):
        return real_run(self, spec, seed, period, Counter(), checkpoint_dir)

    monkeypatch.setattr(runner._Program, "run", counting)
    with compile_effort(low=True):
        run_suite(suite, tmp_path, progress=False, stop_after=1)
    # Restored 2 evaluations, ran the third.
    assert chunks_run == [2, 1]
    cell = "cells/random__default.csv"
    assert (tmp_path / cell).read_text() == (uninterrupted[0] / cell).read_text()
    assert not (tmp_path / "checkpoints" / "random__default").exists()
    # Its wall time covers the third evaluation only, and the provenance says so.
    prov = json.loads((tmp_path / "provenance.json").read_text())
    assert prov["cells"]["random__default"]["resumed"] is True
    whole = json.loads((uninterrupted[0] / "provenance.json").read_text())
    assert "resumed" not in whole["cells"]["random__default"]


def test_rows_carry_the_test_sets_cvar_where_the_chunk_has_it():
    suite = parse_suite(tiny_suite())
    spec = suite.settings[0]
    chunk = {"env_steps": [256, 256], "pct_mastered": [50.0, 25.0]}
    chunk |= {"mean_return": [1.0, 2.0], "train_return": [3.0, 4.0]}
    without = runner._rows(suite, "random", spec, [chunk])
    assert without[["cvar_0.01", "cvar_0.1", "cvar_0.5"]].isna().all().all()
    cvar = {"cvar_0.01": [0.0, 0.1], "cvar_0.1": [0.2, 0.3], "cvar_0.5": [0.4, 0.5]}
    rows = runner._rows(suite, "random", spec, [chunk | cvar])
    assert list(rows.columns) == list(RESULT_COLUMNS)
    np.testing.assert_allclose(rows["cvar_0.1"], [0.2, 0.3])
