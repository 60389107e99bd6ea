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
REQUIRED = ("layers", "acl-layers-exhaustive", "no-cycles")
"""The architecture's contracts (docs/design.md): removing one from setup.cfg fails here."""
VIOLATIONS = {
    "layers": ("acl/agents/replay.py", "import acl.loop.evaluation", "acl.agents.replay ->"),
    "no-cycles": ("envs/base.py", "import envs.cartpole", "No cycles are allowed in envs."),
}
"""One forbidden import per contract, appended to a copy of the tree, and what the
report then names."""
STRAY = "acl/stray.py"
"""A module of acl in no layer, added to the copy: the exhaustive contract must fail."""


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
    for file, line, _ in VIOLATIONS.values():
        with open(tmp_path / file, "a") as f:
            f.write(f"\n{line}  # noqa\n")
    (tmp_path / STRAY).write_text("import acl.core.errors  # noqa\n")
    proc = run(tmp_path)
    assert proc.returncode != 0, proc.stdout
    names = contracts(tmp_path / "setup.cfg")
    for contract, (_, _, named) in VIOLATIONS.items():
        assert f"{names[contract]} BROKEN" in proc.stdout, proc.stdout
        assert named in proc.stdout, proc.stdout
    assert f"{names['acl-layers-exhaustive']} BROKEN" in proc.stdout, proc.stdout
    assert "acl.stray" in proc.stdout, proc.stdout
