"""The loop (acl/loop/) knows no teacher: it never asks a teacher what
it can do, imports nothing of the benchmark, and of the teachers only their contract."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

LOOP = sorted((Path(__file__).resolve().parent.parent / "acl" / "loop").glob("*.py"))
TEACHER_WORDS = re.compile(r"guide|reads_rollout|needs_env|needs_student|with_prior")
"""Names of the teacher capabilities the loop used to branch on."""


def imported_modules(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            # `from acl import teachers` imports the package too.
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def introspected(tree: ast.AST) -> list[str]:
    """The source of the first argument of every getattr/hasattr call."""
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("getattr", "hasattr") and node.args:
                calls.append(ast.unparse(node.args[0]))
    return calls


@pytest.mark.parametrize("path", LOOP, ids=lambda p: p.name)
def test_the_loop_asks_no_teacher_what_it_can_do(path):
    tree = ast.parse(path.read_text())
    asked = [arg for arg in introspected(tree) if "teacher" in arg]
    assert not asked, f"{path.name} inspects the teacher: getattr/hasattr on {asked}"


@pytest.mark.parametrize("path", LOOP, ids=lambda p: p.name)
def test_the_loop_imports_only_the_teacher_contract_and_no_benchmark(path):
    imports = imported_modules(ast.parse(path.read_text()))
    benchmark = sorted(m for m in imports if m == "acl.benchmark" or m.startswith("acl.benchmark."))
    assert not benchmark, f"{path.name} imports {benchmark}"
    teachers = sorted(
        m
        for m in imports
        if (m == "acl.teachers" or m.startswith("acl.teachers."))
        and not m.startswith("acl.teachers.base")
    )
    assert not teachers, f"{path.name} imports teacher modules {teachers}"


@pytest.mark.parametrize("path", LOOP, ids=lambda p: p.name)
def test_the_loop_names_no_teacher_capability(path):
    # The check: git grep -nE "guide|reads_rollout|needs_env|needs_student|with_prior"
    lines = [
        f"{i}: {line.strip()}"
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if TEACHER_WORDS.search(line)
    ]
    assert not lines, f"{path.name} still names teacher capabilities:\n" + "\n".join(lines)


def test_the_checks_would_catch_a_teacher_aware_loop():
    source = (
        "from acl.benchmark.challenges import to_env\n"
        "from acl.teachers import TEACHERS\n"
        "from acl.teachers.base import Feedback\n"
        "guide = getattr(self.teacher, 'guide', None)\n"
    )
    tree = ast.parse(source)
    assert introspected(tree) == ["self.teacher"]
    imports = imported_modules(tree)
    assert "acl.benchmark.challenges" in imports and "acl.teachers.TEACHERS" in imports
    assert TEACHER_WORDS.search(source)
