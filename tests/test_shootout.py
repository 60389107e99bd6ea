"""`acl shootout`: every teacher on one env config, its report, its resume, and the
pre-registration tool (protocol written, mismatches and seed overlaps refused).

The tests that train (the smoke shoot-out, its resume, the notebook on it) are `slow`; the
pre-registration checks need no training and are fast."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from acl.benchmark import shootout as so
from acl.benchmark.runner import parse_suite
from acl.config import load_config
from acl.core.errors import ConfigError
from experiments.tools import shootout as cli

# A gymnax config of the previous issue's adapter, at a smoke budget: two updates of
# 4 envs x 64 steps, evaluated twice on a named test set of two groups.
TINY = {
    "name": "tiny_shootout",
    "seed": 0,
    "num_seeds": 2,
    "env": {
        "name": "gymnax",
        "id": "CartPole-v1",
        "task": {"length": [0.05, 10.0], "masspole": [0.05, 10.0]},
        "success_threshold": 30,
        "max_episode_steps": 40,
    },
    "teacher": {"name": "random"},
    "agent": {"name": "ppo", "update_epochs": 1, "num_minibatches": 1},
    "loop": {
        "num_envs": 4,
        "num_steps": 64,
        "total_env_steps": 512,
        "eval_every": 256,
        "mode": "batch",
    },
    "eval": {"test_set": "log_grid(0.05,10,2)+default+uniform(4)", "sampled_attempts": 2},
}


def write_config(folder: Path, **changes) -> Path:
    data = json.loads(json.dumps(TINY))
    for key, value in changes.items():
        section, _, field = key.partition(".")
        data[section][field] = value
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished two-teacher shoot-out (ACCEL refused): its command line, its results
    directory and what it printed."""
    folder = tmp_path_factory.mktemp("shootout")
    out = folder / "out"
    argv = ["--config", str(write_config(folder)), "--teachers", "random", "alp_gmm", "accel"]
    argv += ["--out", str(out), "--no-progress"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli.main(argv) == 0
    return argv, out, printed.getvalue()


@pytest.mark.slow  # trains two teachers (about a minute, mostly compiling)
def test_the_shootout_reports_every_part(finished):
    _, out, printed = finished
    assert "accel: refused: " in printed and "edits levels" in printed
    report = (out / "report" / "report.md").read_text()
    for group in ("log_grid", "default", "uniform", "all"):
        assert f"## Test group: {group} " in report
    for column in ("final % mastered", "mean return", "AUC", "CVaR@0.1", "p (Holm)", "IQM"):
        assert column in report
    assert "wall × baseline" in report and "extra steps" in report
    for name in so.REPORT_FILES:
        assert (out / "report" / name).stat().st_size > 0
    document = json.loads((out / "report" / "report.json").read_text())
    rows = {r["teacher"]: r for r in document["groups"]["all"]}
    assert set(rows) == {"random", "alp_gmm"}
    assert rows["random"]["wall_x_baseline"] == 1.0
    assert rows["alp_gmm"]["wall_x_baseline"] > 0
    assert rows["alp_gmm"]["train_env_steps"] == 512
    assert rows["alp_gmm"]["extra_env_steps"] == 0
    assert set(document["decisions"]) == {"alp_gmm"}
    # The group of every task reproduces the run's own test-set results.
    results = pd.read_csv(out / "results.csv")
    final = results[results.env_steps == 512].set_index(["teacher", "seed"])
    table = so.group_results(out, ["random", "alp_gmm"], so.ALL)
    mine = table[table.env_steps == 512].set_index(["teacher", "seed"])
    np.testing.assert_allclose(mine["pct_mastered"], final.loc[mine.index, "pct_mastered"])
    np.testing.assert_allclose(mine["cvar_0.1"], final.loc[mine.index, "cvar_0.1"])


@pytest.mark.slow  # trains two teachers (about a minute, mostly compiling)
def test_a_rerun_skips_finished_cells_and_a_killed_one_resumes(finished, tmp_path):
    argv, out, _ = finished
    before = {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()}
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main([*argv, "--no-report"]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()} == before

    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    # Killed during alp_gmm's cell: random's is written, results.csv holds it alone.
    for suffix in (".csv", ".npz"):
        (copy / "cells" / f"alp_gmm__default{suffix}").unlink()
    table = pd.read_csv(copy / "results.csv")
    table[table.teacher == "random"].to_csv(copy / "results.csv", index=False)
    kept = (copy / "cells" / "random__default.csv").stat().st_mtime_ns
    resumed = [*argv[: argv.index("--out")], "--out", str(copy), "--no-progress", "--no-report"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(resumed) == 0
    assert (copy / "cells" / "random__default.csv").stat().st_mtime_ns == kept
    assert (copy / "cells" / "alp_gmm__default.npz").exists()
    # Deterministic on CPU: the re-run cell is the first run's.
    pd.testing.assert_frame_equal(
        pd.read_csv(copy / "results.csv"), pd.read_csv(out / "results.csv")
    )


def suite_of(config_path: Path, seeds=(100, 2)):
    teachers = so.parse_teachers(["random", "alp_gmm"])
    return so.shootout_suite(load_config(config_path), teachers, seeds)[0]


def test_a_protocol_refuses_a_changed_config_key_in_one_line(tmp_path):
    config = write_config(tmp_path)
    protocol = tmp_path / "protocol.yaml"
    so.write_protocol(protocol, suite_of(config), "acl shootout ...", so.DecisionRule())
    written = yaml.safe_load(protocol.read_text())
    assert written["confirmatory_seeds"] == [100, 101]
    assert written["pilot_seeds"] == list(range(8))
    assert "helps if" in written["decision_rule"]["text"]

    changed = write_config(tmp_path, **{"loop.total_env_steps": 1024})
    with pytest.raises(ConfigError) as err:
        so.check_protocol(protocol, suite_of(changed), require_commit=False)
    message = str(err.value)
    assert "\n" not in message
    assert "base.loop.total_env_steps: 512 (protocol) vs 1024 (now)" in message

    # The same command line gets one line from the CLI, before anything compiles.
    argv = ["--config", str(changed), "--teachers", "random", "alp_gmm", "--confirm"]
    assert cli.main([*argv, str(protocol), "--out", str(tmp_path / "never")]) == 2
    assert not (tmp_path / "never").exists()


def test_a_confirmatory_run_refuses_pilot_seeds_and_an_uncommitted_protocol(tmp_path):
    config = write_config(tmp_path)
    with pytest.raises(ConfigError, match="overlap the pilot"):
        so.write_protocol(
            tmp_path / "p.yaml", suite_of(config, (6, 4)), "acl shootout", so.DecisionRule()
        )
    protocol = tmp_path / "p.yaml"
    so.write_protocol(protocol, suite_of(config), "acl shootout", so.DecisionRule())
    with pytest.raises(ConfigError, match="seeds 6, 7 were the pilot's"):
        so.check_protocol(protocol, suite_of(config, (6, 4)), require_commit=False)
    with pytest.raises(ConfigError, match="not committed"):
        so.check_protocol(protocol, suite_of(config))
    with pytest.raises(ConfigError, match="written once"):
        so.write_protocol(protocol, suite_of(config), "acl shootout", so.DecisionRule())


def test_a_committed_protocol_gives_its_commit_and_hash(tmp_path):
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    config = write_config(tmp_path)
    protocol = tmp_path / "p.yaml"
    so.write_protocol(protocol, suite_of(config), "acl shootout", so.DecisionRule())
    subprocess.run([*git, "add", "p.yaml"], check=True)
    subprocess.run([*git, "commit", "-qm", "protocol"], check=True)
    record = so.check_protocol(protocol, suite_of(config))
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert record["commit"] == head.strip()
    assert len(record["sha256"]) == 64
    assert so.is_ancestor(record["commit"], head.strip(), tmp_path) is True
    protocol.write_text(protocol.read_text() + "# edited\n")
    assert so.protocol_commit(protocol) is None  # changed since its commit


def test_teacher_choices_presets_settings_and_holm():
    choices = so.parse_teachers(["random", "sfl:cpu"], {"sfl": {"buffer_update_frequency": 8}})
    assert choices[1].label == "sfl"
    assert choices[1].config.kwargs == {"preset": "cpu", "buffer_update_frequency": 8}
    with pytest.raises(ConfigError, match="twice"):
        so.parse_teachers(["plr", "plr"])
    with pytest.raises(ConfigError, match="not in --teachers"):
        so.parse_teachers(["random"], {"plr": {"capacity": 4}})
    corrected = so.holm({"a": 0.01, "b": 0.04, "c": float("nan")})
    assert corrected["a"] == pytest.approx(0.02) and corrected["b"] == pytest.approx(0.04)
    assert np.isnan(corrected["c"])


def test_first_difference_names_the_key_path():
    assert so.first_difference({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}) == (
        "a.b[1]: 2 (protocol) vs 3 (now)"
    )
    assert so.first_difference({"a": 1}, {"a": 1}) is None


@pytest.mark.slow  # trains two teachers (about a minute, mostly compiling)
def test_the_notebook_shows_a_shootout_and_writes_nothing_into_it(finished, monkeypatch, tmp_path):
    """notebooks/shootout.ipynb on the finished shoot-out, made confirmatory (a protocol
    record in its provenance, as `--confirm` writes): every group's table, the curves, the
    samples and the decision, without a file written into the results directory."""
    import dataclasses

    import nbformat

    from tests.notebooks import count_images, execute

    root = Path(__file__).resolve().parents[1]
    notebook = root / "notebooks" / "shootout.ipynb"
    params = nbformat.read(notebook, as_version=4).cells[1]
    assert "parameters" in params.metadata.get("tags", [])
    assert 'RESULTS = "experiments/results/shootout/' in params.source
    assert "BASELINE = None" in params.source

    _, out, _ = finished
    results = tmp_path / "confirm"
    shutil.copytree(out, results, ignore=shutil.ignore_patterns("report"))
    provenance = json.loads((results / "provenance.json").read_text())
    rule = so.DecisionRule()
    provenance["protocol"] = {
        "file": "tiny.protocol.yaml",
        "sha256": "0" * 64,
        "commit": None,
        "decision_rule": {**dataclasses.asdict(rule), "text": rule.text},
    }
    (results / "provenance.json").write_text(json.dumps(provenance))
    before = {p: p.stat().st_mtime_ns for p in results.rglob("*")}

    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = execute(notebook, cwd=root, timeout=300, parameters={"RESULTS": str(results)})
    shown = "\n".join(
        output["data"][mime]
        for cell in nb.cells
        for output in cell.get("outputs", [])
        for mime in ("text/markdown", "text/plain")
        if mime in output.get("data", {})
    )
    for group in ("log_grid", "default", "uniform", "all"):
        assert f"### Test group: {group}\n" in shown
    assert "| random | 2 |" in shown and "| alp_gmm | 2 |" in shown
    assert "IQM [95% CI]" in shown
    assert "Decision rule: a teacher helps if" in shown
    assert "- alp_gmm: " in shown  # helps, or no difference claimed
    assert "could not be checked" in shown  # the record names no commit
    assert count_images(nb) == 2  # the curves and the samples
    assert {p: p.stat().st_mtime_ns for p in results.rglob("*")} == before


def test_native_space_runs_level_teachers_on_a_generator_that_is_not_uniform():
    """XLand's rulesets are not uniform over a box, so DR and PLR cannot draw them in the
    default challenge's unit cube: refused there (pointing at --native-space), accepted on
    the env's own space, where the suite says so and a protocol of the other kind differs."""
    xland = load_config("experiments/configs/xland_dr.yaml")
    teachers = so.parse_teachers(["dr", "plr"])
    with pytest.raises(ConfigError, match="no teacher can run.*acl shootout --native-space"):
        so.shootout_suite(xland, teachers, (100, 2))
    suite, refused = so.shootout_suite(xland, so.parse_teachers(["random", "plr"]), (100, 2))
    assert [r.label for r in refused] == ["plr"]
    native, refused = so.shootout_suite(xland, teachers, (100, 2), challenged=False)
    assert refused == () and [label for label, _ in native.teachers] == ["dr", "plr"]
    assert native.to_dict()["challenged"] is False and "challenged" not in suite.to_dict()
    # The suite file reads back as it was written; other settings have no native space.
    assert parse_suite(native.to_dict()) == native
    with pytest.raises(ConfigError, match="only the default setting"):
        parse_suite({**native.to_dict(), "settings": ["default", "rugged"]})


def test_a_teacher_that_cannot_adapt_within_the_budget_is_warned_of():
    """JaxUED's CartPole budget has 64 updates; ALP-GMM's and Covar-GMM's first fit comes
    after 150 by default, so they would hand out uniform tasks throughout."""
    config = load_config("experiments/configs/peer_cartpole.yaml")
    teachers = so.parse_teachers(
        ["random", "alp_gmm", "covar_gmm", "riac"], {"covar_gmm": {"fit_every": 8}}
    )
    suite, _ = so.shootout_suite(config, teachers)
    assert suite.base.loop.schedule.iterations == 64
    (warning,) = so.schedule_warnings(suite)
    assert warning.startswith("alp_gmm: warning: it first adapts after 150 updates")
    assert "--teacher-set alp_gmm.fit_every=8" in warning


def test_a_resumed_cell_has_no_wall_time_multiple(tmp_path):
    # Its wall seconds cover only the part after the resume: no multiple of the baseline's.
    cells = {
        "random__default": {"wall_seconds": 100.0},
        "plr__default": {"wall_seconds": 150.0},
        "robust_plr__default": {"wall_seconds": 12.0, "resumed": True},
    }
    (tmp_path / "provenance.json").write_text(json.dumps({"cells": cells}))
    costs = so.teacher_costs(tmp_path, ["random", "plr", "robust_plr"], "random")
    assert costs["plr"]["wall_x_baseline"] == 1.5
    assert np.isnan(costs["robust_plr"]["wall_x_baseline"])
    assert np.isnan(costs["robust_plr"]["wall_seconds"])
