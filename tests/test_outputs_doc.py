"""docs/outputs.md stays true to the writers: it is up to date with the tables beside them
(acl.run.results.METRICS_COLUMNS, SUMMARY_FIELDS..., acl.benchmark.runner.CELL_ARRAYS...),
`acl hparams-docs` writes and checks it, the writers refuse what the tables do not
document, and a real run's files hold exactly what the tables describe."""

from __future__ import annotations

import csv
import importlib
import json
import re

import pytest
import yaml

from acl.benchmark import runner, stats
from acl.run import results
from acl.run.checkpoint import CHECKPOINT_ITEMS
from acl.run.results import (
    METRICS_COLUMNS,
    PROVENANCE_FIELDS,
    RUN_FILES,
    SUMMARY_FIELDS,
    SUMMARY_KEYS,
    TASKS_COLUMNS,
    OutputField,
    RunDir,
    undocumented,
)
from envs import ENVS
from experiments.tools import hparams_docs
from experiments.tools import run as run_cli
from tests.conftest import TINY

FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")

RUN = {
    **TINY,
    "name": "outputs",
    # The gymnax entry has named test sets: the per-test-task columns are written too.
    "env": {
        "name": "gymnax",
        "id": "CartPole-v1",
        "task": {"length": [0.1, 2.0]},
        "success_threshold": 475,
        "max_episode_steps": 50,
    },
    "eval": {"test_set": "default+uniform(2)", "sampled_attempts": 2},
}
"""The tiny PPO run with a named test set and two sampled attempts per test task: every
conditional metrics.csv column and summary.json key but the time limit's and a sweep's."""


def test_the_outputs_page_is_up_to_date():
    assert (hparams_docs.DOCS / "outputs.md").read_text() == hparams_docs.outputs_page(), (
        "docs/outputs.md is out of date: run acl hparams-docs"
    )


def test_hparams_docs_writes_and_checks_the_outputs_page(tmp_path, monkeypatch, capsys):
    # One env: building every env for the envs page takes seconds.
    monkeypatch.setattr(ENVS, "_factories", {"cartpole": ENVS.get("cartpole")})
    assert hparams_docs.main(["--out", str(tmp_path)]) == 0
    page = tmp_path / "outputs.md"
    assert page.read_text() == hparams_docs.outputs_page()
    assert hparams_docs.main(["--check", "--out", str(tmp_path)]) == 0
    page.write_text(page.read_text().replace("| `eval_pct_mastered` |", "| `eval_pct` |"))
    assert hparams_docs.main(["--check", "--out", str(tmp_path)]) == 1
    assert "outputs.md is out of date" in capsys.readouterr().err


def test_the_page_has_a_table_per_file_and_no_bare_placeholder():
    page = hparams_docs.outputs_page()
    for section in (*hparams_docs.RUN_SECTIONS, *hparams_docs.RESULTS_SECTIONS):
        fields = getattr(importlib.import_module(section.module), section.table)
        for field in fields:
            assert f"| `{field.name}` |" in page, (section.table, field.name)
    for file in (*RUN_FILES, *runner.RESULTS_DIR_FILES):
        assert f"  {file.name} " in page, file.name  # its line in the layout tree
    # Outside code, Markdown would take `<test task>` for an HTML tag and hide it.
    prose = CODE_SPAN.sub("", FENCE.sub("", page))
    assert not re.search(r"<[A-Za-z]", prose), re.search(r".{30}<[A-Za-z].{30}", prose)


def test_patterns_match_names_and_nothing_else():
    field = OutputField("eval_return/<test task>", "")
    assert field.matches("eval_return/maze/SixteenRooms") and field.matches("eval_return/a")
    assert not field.matches("eval_return/") and not field.matches("eval_returns/a")
    assert OutputField("final_cvar_0.1_mean", "").matches("final_cvar_0.1_mean")
    assert not OutputField("final_cvar_0.1_mean", "").matches("final_cvar_0x1_mean")
    assert undocumented(["agent_loss", "eval_cvar_0.1", "agent"], METRICS_COLUMNS) == ["agent"]


def test_the_writers_refuse_what_is_not_documented(tmp_path):
    run_dir = RunDir(tmp_path)
    with pytest.raises(ValueError, match=r"metrics.csv: 'mystery' not documented"):
        run_dir.append_metrics([{"chunk": 0, "seed": 0, "mystery": 1.0}])
    assert not (tmp_path / "metrics.csv").exists()
    summary = dict.fromkeys(SUMMARY_KEYS, 0) | {"surprise": 1}
    with pytest.raises(ValueError, match=r"summary.json: 'surprise' not documented"):
        run_dir.write_summary(summary)
    assert not (tmp_path / "summary.json").exists()


def test_the_tables_name_what_the_schemas_require():
    assert undocumented(SUMMARY_KEYS, SUMMARY_FIELDS) == []
    assert stats.COLUMNS == tuple(f.name for f in stats.RESULT_FIELDS)
    assert runner.RESULT_COLUMNS == stats.COLUMNS
    assert runner.PER_TASK_FIELDS == tuple(f.name for f in runner.PER_TASK_ARRAYS)
    suite_keys = {f.name for f in runner.SUITE_FIELDS}
    assert suite_keys == set(runner._SUITE_KEYS)
    for fields in (METRICS_COLUMNS, SUMMARY_FIELDS, PROVENANCE_FIELDS, stats.RESULT_FIELDS):
        assert all(f.meaning for f in fields), [f.name for f in fields if not f.meaning]
    progress = next(f for f in CHECKPOINT_ITEMS if f.name == "progress")
    assert all(f.meaning for f in progress.fields), progress.fields


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("outputs")
    config = root / "outputs.yaml"
    config.write_text(yaml.safe_dump(RUN))
    out = root / "run"
    argv = ["--config", str(config), "--out", str(out), "--no-progress"]
    assert run_cli.main([*argv, "--set", "loop.total_env_steps=512"]) == 0
    return out


def _header(path) -> list[str]:
    with path.open(newline="") as f:
        return next(csv.reader(f))


@pytest.mark.slow
def test_a_runs_metrics_columns_are_the_documented_ones(finished_run):
    columns = _header(finished_run / "metrics.csv")
    assert undocumented(columns, METRICS_COLUMNS) == []
    # The run writes every documented column (no stale entry in the table) ...
    for field in METRICS_COLUMNS:
        assert any(field.matches(c) for c in columns), field.name
    # ... and PPO's agent metrics are the ones the table names.
    agent = next(f for f in METRICS_COLUMNS if f.name == "agent_<metric>")
    ppo = agent.meaning.split("PPO's (acl/agents/ppo.py): ")[1].split(";")[0].split(", ")
    assert [c.removeprefix("agent_") for c in columns if c.startswith("agent_")] == ppo
    names = json.loads((finished_run / "summary.json").read_text())["test_set"]["names"]
    for metric in results.PER_TASK_METRICS:
        assert [c for c in columns if c.startswith(f"eval_{metric}/")] == [
            f"eval_{metric}/{n}" for n in names
        ]
    assert undocumented(_header(finished_run / "tasks.csv"), TASKS_COLUMNS) == []


@pytest.mark.slow
def test_a_runs_summary_and_provenance_keys_are_the_documented_ones(finished_run):
    summary = json.loads((finished_run / "summary.json").read_text())
    assert undocumented(summary, SUMMARY_FIELDS) == []
    not_here = ("stopped_at_time_limit", "planned_env_steps", "projected_seconds_full_run")
    for field in SUMMARY_FIELDS:
        if field.name not in (*not_here, "sweep", "diverged"):
            assert field.name in summary, field.name
    test_set = next(f for f in SUMMARY_FIELDS if f.name == "test_set")
    assert list(summary["test_set"]) == [f.name for f in test_set.fields]
    per_task = next(f for f in SUMMARY_FIELDS if f.name == "final_per_test_task")
    for name, figures in summary["final_per_test_task"].items():
        assert undocumented([f"{name}.{key}" for key in figures], per_task.fields) == []

    provenance = json.loads((finished_run / "provenance.json").read_text())
    assert undocumented(provenance, PROVENANCE_FIELDS) == []
    assert all(f.name in provenance for f in PROVENANCE_FIELDS if f.when == "always")
    versions = next(f for f in PROVENANCE_FIELDS if f.name == "versions")
    assert list(provenance["versions"]) == [f.name for f in versions.fields]


@pytest.mark.slow
def test_a_run_directory_holds_the_documented_files(finished_run):
    def documented(path: str) -> bool:
        return any(f.matches(path) for f in RUN_FILES)

    folders = {f.name.split("/")[0] for f in RUN_FILES if "/" in f.name.rstrip("/")}
    for entry in sorted(finished_run.iterdir()):
        if entry.name in folders:  # teacher/, checkpoints/: their entries are documented
            for child in entry.iterdir():
                path = f"{entry.name}/{child.name}" + ("/" if child.is_dir() else "")
                assert documented(path), path
        else:
            assert documented(entry.name + ("/" if entry.is_dir() else "")), entry.name
    checkpoint = sorted((finished_run / "checkpoints").iterdir())[-1]
    assert {f.name for f in CHECKPOINT_ITEMS} <= {p.name for p in checkpoint.iterdir()}
