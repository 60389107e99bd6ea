"""The documentation stays true to the code: docs/components.md's tables list exactly
the registered teachers, agents and envs, the README stays short, its quickstart builds,
the results index links every results page, every relative link resolves, no stale
reference is left, the teacher of
docs/writing-a-teacher.md passes the harness and runs through `experiments.run`, and
docs/writing-an-env.md's gymnax config and plug-in env run through it too."""

from __future__ import annotations

import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import yaml

from acl.agents import AGENTS
from acl.teachers import TEACHERS
from envs import ENVS
from tests.conftest import TINY, run_tiny_with_teacher
from tests.distribution import forget_modules, unlisted_plugins, write_distribution

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
COMPONENTS = DOCS / "components.md"
RESULTS_INDEX = DOCS / "results" / "README.md"
MAX_README_LINES = 120
MAX_QUICKSTART_LINES = 10
MAX_TEACHER_LINES = 80
MAX_GYMNAX_CONFIG_LINES = 12
STALE = re.compile(r"DESIGN\.md|REFERENCES\.md|\.\./shared")
"""Files and paths that no longer exist here (issue 22); a mention of one is a dead end."""

FENCE = re.compile(r"^(```|~~~)[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def prose(text: str) -> str:
    """`text` without fenced code blocks (a `#` comment there is no heading)."""
    return FENCE.sub("", text)


def code_blocks(text: str, language: str = "python") -> list[str]:
    pattern = re.compile(rf"^```{language}[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
    return pattern.findall(text)


def sections(text: str) -> dict[str, str]:
    """Heading title -> the text up to the next heading of any level."""
    text = prose(text)
    heads = list(HEADING.finditer(text))
    ends = [h.start() for h in heads[1:]] + [len(text)]
    return {h.group(2): text[h.end() : end] for h, end in zip(heads, ends, strict=True)}


def table_rows(body: str) -> list[list[str]]:
    """The cells of the first markdown table in `body`, header and separator left out."""
    lines = body.strip().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[2:]


def slug(title: str) -> str:
    """GitHub's anchor of a heading."""
    title = CODE_SPAN.sub(lambda m: m.group(0)[1:-1], title).strip().lower()
    return re.sub(r"[^\w\- ]", "", title).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(h.group(2)) for h in HEADING.finditer(prose(path.read_text()))}


def git_files(*options: str) -> list[str] | None:
    """Repository paths from `git ls-files`, or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", *options],
            cwd=ROOT,
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [name for name in out.decode().split("\0") if name]


@pytest.mark.parametrize(
    ("heading", "registry"),
    [("Teachers", TEACHERS), ("Agents", AGENTS), ("Environments", ENVS)],
    ids=["teachers", "agents", "envs"],
)
def test_components_table_lists_exactly_the_registered_names(heading, registry):
    rows = table_rows(sections(COMPONENTS.read_text())[heading])
    names = [row[0].strip("`") for row in rows]
    assert len(names) == len(set(names)), f"components.md's {heading} table repeats a name"
    assert sorted(names) == registry.names(), (
        f"components.md's {heading} table: missing {sorted(set(registry.names()) - set(names))}, "
        f"not registered {sorted(set(names) - set(registry.names()))}"
    )
    for row in rows:
        assert len(row) == 3 and all(row), f"{heading}: row {row} needs a description and a paper"


def test_readme_stays_short():
    lines = len(README.read_text().splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines (at most {MAX_README_LINES})"


def test_the_results_index_links_every_results_page():
    index = RESULTS_INDEX.read_text()
    pages = sorted(p.name for p in RESULTS_INDEX.parent.glob("*.md") if p != RESULTS_INDEX)
    missing = [name for name in pages if f"]({name})" not in index]
    assert not missing, f"docs/results/README.md links none of {missing}"


def test_readme_quickstart_builds_without_compiling(monkeypatch):
    text = README.read_text()
    after = text[re.search(r"^## Quickstart$", text, re.M).end() :]
    code = code_blocks(after)[0]
    lines = code.strip().splitlines()
    assert len(lines) <= MAX_QUICKSTART_LINES
    # Up to the first jitted call: loading and building are checked here, the compiled
    # run by the loop's own tests.
    build = lines[: next(i for i, line in enumerate(lines) if "jit_" in line)]
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile("\n".join(build), "README.md (quickstart)", "exec"), namespace)
    trainer = namespace["trainer"]
    assert trainer.schedule.num_chunks == 1
    assert namespace["run_data"](namespace["config"], trainer) is not None, (
        "the quickstart's config names a challenge"
    )


def test_every_relative_link_points_to_an_existing_file():
    listed = git_files("--cached", "--others", "--exclude-standard")
    known = None
    if listed is not None:
        known = set(listed) | {str(parent) for name in listed for parent in Path(name).parents}
    broken = []
    for path in markdown_files():
        text = CODE_SPAN.sub("", prose(path.read_text()))
        for target in LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # a URL
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            where = f"{path.relative_to(ROOT)}: {target}"
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(f"{where} (no such file)")
                continue
            relative = resolved.relative_to(ROOT).as_posix()
            if known is not None and relative not in known:
                broken.append(f"{where} (not in the repository)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{where} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def repository_files() -> list[str]:
    """Tracked files; outside a git checkout (an unpacked archive), every file but the
    virtualenv, run outputs and caches."""
    tracked = git_files()
    if tracked is not None:
        return tracked
    skip = {".venv", "runs", ".git", "__pycache__", ".pytest_cache", ".ruff_cache"}
    return [
        path.relative_to(ROOT).as_posix()
        for path in ROOT.rglob("*")
        if path.is_file() and not skip & set(path.relative_to(ROOT).parts)
    ]


def test_no_tracked_file_mentions_a_stale_path():
    found = []
    for name in repository_files():
        path = ROOT / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if STALE.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    assert not found, "stale references:\n" + "\n".join(found)


@pytest.mark.slow
def test_the_writing_a_teacher_page_runs(tmp_path, monkeypatch):
    # Also the library's one-file-teacher test: a teacher in one module, registered on
    # import with nothing else edited, passes the harness and runs through experiments.run.
    page = DOCS / "writing-a-teacher.md"
    teacher_code, check_code = code_blocks(page.read_text())
    assert len(teacher_code.splitlines()) <= MAX_TEACHER_LINES
    # The page registers its teacher on import; a copy of the registry, restored after
    # the test, keeps it out of the registry-wide tests (golden runs, the component tables).
    monkeypatch.setattr(TEACHERS, "_factories", dict(TEACHERS._factories))
    module = types.ModuleType("lp_bins")
    monkeypatch.setitem(sys.modules, "lp_bins", module)
    exec(compile(teacher_code, str(page), "exec"), module.__dict__)
    assert TEACHERS.get("lp_bins") is module.make_lp_bins

    # The page's own harness call.
    exec(compile(check_code, f"{page} (check)", "exec"), {})

    out, rows = run_tiny_with_teacher(tmp_path, {"name": "lp_bins", "num_bins": 4, "explore": 0.5})
    assert rows and {row["seed"] for row in rows} == {"0", "1"}
    # One progress value per bin and seed, as the page's `snapshot` writes it.
    assert np.load(out / "teacher" / "eval_0000.npz")["progress"].shape == (2, 4)


def run_at_tiny_budget(config: dict, tmp_path: Path, name: str) -> tuple[Path, list[dict]]:
    """A page's config through `experiments.run` with TINY's loop, eval, agent and seeds
    (its env and teacher as the page has them): the run directory and metrics rows."""
    import csv

    from experiments import run

    tiny = {key: TINY[key] for key in ("agent", "loop", "eval", "num_seeds")}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({**config, **tiny}))
    out = tmp_path / name
    assert run.main(["--config", str(path), "--out", str(out), "--no-progress"]) == 0
    return out, list(csv.DictReader((out / "metrics.csv").open()))


@pytest.mark.slow
def test_the_writing_an_env_page_runs(tmp_path, monkeypatch):
    import tomllib

    from acl.build import build_components
    from acl.config import parse_config
    from acl.core.errors import ConfigError

    page = DOCS / "writing-an-env.md"
    text = page.read_text()
    gymnax_block, windy_block = code_blocks(text, "yaml")
    (env_code,) = code_blocks(text)
    (toml_block,) = code_blocks(text, "toml")

    # A gymnax env by config, in about ten lines, through the `gymnax` entry.
    assert len(gymnax_block.strip().splitlines()) <= MAX_GYMNAX_CONFIG_LINES
    gymnax_config = yaml.safe_load(gymnax_block)
    assert gymnax_config["env"]["name"] == "gymnax"
    _, rows = run_at_tiny_budget(gymnax_config, tmp_path, "gymnax")
    assert rows and {row["seed"] for row in rows} == {"0", "1"}

    # The windy env: a package of its own, declared by the page's entry point, installed
    # as pip would leave it (tests/distribution.py), found as a user's process finds it.
    groups = tomllib.loads(toml_block)["project"]["entry-points"]
    entry_points = "".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in names.items())
        for group, names in groups.items()
    )
    package = groups["acl_jax.envs"]["windy_reach"].split(".")[0]
    site = write_distribution(
        tmp_path / "site", package, "0.1", entry_points, {"windy.py": env_code}
    )
    monkeypatch.syspath_prepend(str(site))
    unlisted_plugins(monkeypatch)
    try:
        windy_config = yaml.safe_load(windy_block)
        name = windy_config["env"]["name"]
        assert ENVS.get(name, "env.name").__name__ == "WindyReach"
        assert ENVS.source(name).distribution == f"{package} 0.1"
        out, rows = run_at_tiny_budget(windy_config, tmp_path, "windy")
        assert rows and all(-40.0 <= float(row["train_return"]) <= 0.0 for row in rows)
        # Its challenge bounds serve the benchmark's challenges.
        challenged = parse_config({**windy_config, "challenge": {"name": "unfeasible"}})
        assert build_components(challenged).teacher is not None
        # A level teacher on a space without a level generator: one line, naming the env.
        with pytest.raises(ConfigError, match="LevelTaskEnv.*WindyReach") as refused:
            build_components(parse_config({**windy_config, "teacher": "dr"}))
        assert "\n" not in str(refused.value)
    finally:
        forget_modules(package)
