"""Every registered teacher reproduces its golden fixture bit for bit (tests/golden.py:
what the fixtures hold, and when and how to re-record them).

Each teacher costs a compile of the whole loop, 7 to 26 s on 2 cores, about 3.5 minutes
for all of them, so the fast suite checks one (`FAST`), the loop's common path, and the
rest are marked slow. Run this file by name before and after a change to the teacher
contract or the loop: that runs them all.
"""

from __future__ import annotations

import pytest

from acl.teachers.base import TEACHERS
from tests import golden

FAST = ("random",)
"""The slot layout (random): the loop's common path. The guide (jsrl), the task pool with
`handed_out` (reverse) and batch mode with a rollout reader (plr) compile for 15-25 s
each on 2 cores, and run with the others in `make test-slow`."""


def test_every_registered_teacher_has_a_golden_config_and_fixture():
    # A new teacher must bring its own fixture; a removed one must take its fixture along.
    names = TEACHERS.names()
    assert sorted(golden.CONFIGS) == names
    assert sorted(p.stem for p in golden.GOLDEN.glob("*.npz")) == names
    # Other CPUs' recordings (tests/cpu_recordings.py) of teachers that still exist.
    assert {p.stem for p in golden.GOLDEN.glob("cpus/*/*.npz")} <= set(names)
    for name, config in golden.CONFIGS.items():
        assert config["teacher"]["name"] == name, name
    assert set(FAST) <= set(names)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in TEACHERS.names()],
)
def test_teacher_reproduces_its_golden_fixture(name):
    path = golden.fixture_path(name)
    assert path.exists(), (
        f"no golden fixture for teacher {name!r}: add a config to tests/golden.py CONFIGS "
        f"and record it (python -m tests.golden --record {name})"
    )
    reason = golden.not_checkable_here(name)
    if reason:
        pytest.skip(f"{name}: {reason}")
    problems = golden.check(name)
    assert not problems, f"{name} no longer reproduces its golden run:\n" + "\n".join(problems)


def test_a_fixture_recorded_only_on_other_cpus_is_not_checkable_here(monkeypatch, tmp_path):
    # A recording's CPU: its stored tag, else its cpus/<tag>/ folder, else unknown.
    from tests import cpu_recordings

    monkeypatch.setattr(cpu_recordings, "cpu_tag", lambda: "this-cpu")
    folder = tmp_path / cpu_recordings.CPUS / "folder-cpu" / "x.npz"
    assert cpu_recordings.recorded_on(folder, None) == "folder-cpu"
    assert cpu_recordings.recorded_on(tmp_path / "x.npz", None) is None
    assert cpu_recordings.recorded_on(tmp_path / "x.npz", "stored-cpu") == "stored-cpu"

    reason = cpu_recordings.foreign_only(["stored-cpu", "folder-cpu"])
    assert "folder-cpu, stored-cpu" in reason and "this-cpu" in reason
    assert cpu_recordings.foreign_only(["stored-cpu", "this-cpu"]) is None
    # A reference of unknown CPU may be this CPU's: it is compared, as before.
    assert cpu_recordings.foreign_only(["stored-cpu", None]) is None
    assert cpu_recordings.foreign_only([]) is None
