"""The package graph contracts of setup.cfg ([importlinter]) hold, and they do catch a
forbidden import: a contract that no longer matches any module would pass silently."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "importlinter:contract:"
REQUIRED = (
    "envs-below-acl",
    "agents-below-loop",
    "teachers-below-loop",
    "loop-knows-no-teacher",
    "library-below-experiments",
)
"""Issue 21's contracts: removing one from setup.cfg fails here, not silently."""
VIOLATIONS = {
    "envs-below-acl": ("envs/toy_bandit.py", "import acl"),
    "agents-below-loop": ("acl/agents/replay.py", "import acl.evaluation"),
    "teachers-below-loop": ("acl/teachers/riac.py", "import envs.maze"),
    "loop-knows-no-teacher": ("acl/rollout.py", "import acl.teachers.plr"),
    "library-below-experiments": ("acl/results.py", "import experiments"),
}
"""One forbidden import per required contract, appended to a copy of the tree."""


def forbidden(setup_cfg: Path, contract: str) -> set[str]:
    config = configparser.ConfigParser()
    config.read(setup_cfg)
    return set(config[PREFIX + contract]["forbidden_modules"].split())


def modules(package: str, keep: tuple[str, ...] = ()) -> set[str]:
    """The package and its modules, as dotted names, less `keep` (module stems)."""
    folder = ROOT / package.replace(".", "/")
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} - set(keep)
    return {package} | {f"{package}.{name}" for name in names}


def test_module_by_module_contracts_list_every_module():
    # These contracts name modules one by one (as_packages = False, so that envs.base and
    # acl.teachers.base stay allowed): a new env, teacher or benchmark module must join them.
    setup_cfg = ROOT / "setup.cfg"
    shared = ("base", "spaces", "errors", "registry")
    assert modules("envs", shared) <= forbidden(setup_cfg, "teachers-below-loop")
    assert modules("acl.benchmark") <= forbidden(setup_cfg, "teachers-below-loop")
    assert modules("acl.teachers", ("base",)) <= forbidden(setup_cfg, "loop-knows-no-teacher")
    assert modules("acl.benchmark") <= forbidden(setup_cfg, "loop-knows-no-teacher")


def lint_imports() -> str:
    # The venv's entry point first: `make test` runs that one.
    path = Path(sys.executable).with_name("lint-imports")
    found = str(path) if path.exists() else shutil.which("lint-imports")
    if found is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[dev]' (make test does)")
    return found


def contracts(setup_cfg: Path) -> dict[str, str]:
    """Contract id -> name, as configured."""
    config = configparser.ConfigParser()
    config.read(setup_cfg)
    return {s[len(PREFIX) :]: config[s]["name"] for s in config.sections() if s.startswith(PREFIX)}


def run(cwd: Path) -> subprocess.CompletedProcess:
    # Wide enough that no contract's name wraps in the report; the cache stays out of the way.
    env = dict(os.environ, COLUMNS="250")
    command = [lint_imports(), "--no-cache"]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_contracts_hold():
    configured = contracts(ROOT / "setup.cfg")
    assert set(REQUIRED) <= set(configured), f"missing contracts: {set(REQUIRED) - set(configured)}"
    proc = run(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in configured.values():
        assert f"{name} KEPT" in proc.stdout, proc.stdout
    assert f"Contracts: {len(configured)} kept, 0 broken." in proc.stdout, proc.stdout


def test_contracts_catch_forbidden_imports(tmp_path):
    def not_source(folder, names):
        return [n for n in names if not (n.endswith(".py") or (Path(folder) / n).is_dir())]

    for package in ("acl", "envs", "experiments"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=not_source)
    shutil.copy(ROOT / "setup.cfg", tmp_path)
    for file, line in VIOLATIONS.values():
        with open(tmp_path / file, "a") as f:
            f.write(f"\n{line}  # noqa\n")
    proc = run(tmp_path)
    assert proc.returncode != 0, proc.stdout
    names = contracts(tmp_path / "setup.cfg")
    for contract, (file, _) in VIOLATIONS.items():
        module = file.removesuffix(".py").replace("/", ".")
        assert f"{names[contract]} BROKEN" in proc.stdout, proc.stdout
        assert f"{module} ->" in proc.stdout, proc.stdout
