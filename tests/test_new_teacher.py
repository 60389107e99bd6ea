"""A teacher in one file (tests/example_teacher.py), registered and nothing else edited,
runs through the shared harness and `experiments.run`."""

from __future__ import annotations

from acl.teachers import TEACHERS
from tests.conftest import run_tiny_with_teacher
from tests.example_teacher import make_easy_first
from tests.teacher_harness import check_teacher


def test_one_file_teacher_passes_the_harness():
    check_teacher(lambda space: make_easy_first(task_space=space), rounds=4, num_seeds=2)


def test_one_file_teacher_runs_through_experiments_run(tmp_path, monkeypatch):
    # Registered for this test only, so the registry-wide tests do not see it.
    monkeypatch.setitem(TEACHERS._factories, "easy_first", make_easy_first)
    out, rows = run_tiny_with_teacher(tmp_path, {"name": "easy_first", "growth": 0.2})
    assert rows and {row["seed"] for row in rows} == {"0", "1"}
