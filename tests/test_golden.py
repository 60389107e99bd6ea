"""Every registered teacher reproduces its golden fixture bit for bit (tests/golden.py:
what the fixtures hold, and when and how to re-record them).

Each teacher costs a compile of the whole loop, 7 to 26 s on 2 cores, about 3.5 minutes
for all of them, so the fast suite checks four (`FAST`), which between them take the
main ways the loop talks to a teacher, and the rest are marked slow. Run this file by
name before and after a change to the teacher contract or the loop: that runs them all.
"""

from __future__ import annotations

import pytest

from acl.teachers.base import TEACHERS
from tests import golden

FAST = ("random", "jsrl", "reverse", "plr")
"""The slot layout (random), a guide (jsrl), a task pool with `handed_out` (reverse),
batch mode with a rollout reader (plr)."""


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
    problems = golden.check(name)
    assert not problems, f"{name} no longer reproduces its golden run:\n" + "\n".join(problems)
