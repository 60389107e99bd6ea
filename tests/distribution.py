"""A Python distribution written into a folder, as `pip install` would leave it in
site-packages: a package beside its `*.dist-info` with METADATA and entry_points.txt. On
sys.path (or PYTHONPATH) it is installed as far as importlib.metadata can tell, with no
pip: how the plug-in tests meet packages from outside the repository."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path


def write_distribution(
    root: Path, package: str, version: str, entry_points: str, modules: dict[str, str]
) -> Path:
    """Package `package` of `modules` (file name -> source) beside its
    `package-version.dist-info`, in `root`; returns `root`."""
    folder = root / package
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    for file, source in modules.items():
        (folder / file).write_text(textwrap.dedent(source))
    info = root / f"{package}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    return root


def forget_modules(*packages: str) -> None:
    """Drop the packages' modules from sys.modules, so that the next import reads the
    files again (each test writes its own)."""
    for module in [m for m in sys.modules if m.split(".")[0] in packages]:
        del sys.modules[module]


def unlisted_plugins(monkeypatch) -> None:
    """ENVS, TEACHERS and AGENTS as before any plug-in was listed or imported, restored
    when `monkeypatch` undoes: the shared registries, as a user's fresh process has them
    (a registry lists its group's entry points once per process)."""
    from acl.agents import AGENTS
    from acl.teachers import TEACHERS
    from envs import ENVS

    for registry in (ENVS, TEACHERS, AGENTS):
        monkeypatch.setattr(registry, "_entry_points", None)
        monkeypatch.setattr(registry, "_loaded", {})
        monkeypatch.setattr(registry, "_sources", {})
