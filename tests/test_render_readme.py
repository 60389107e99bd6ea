"""The README's rendered numbers (experiments/tools/render_readme.py): its blocks say what
the committed result files hold, and a changed result fails `acl render-docs --check`
until the README is re-rendered."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from experiments.cli import ROOT
from experiments.tools import render_docs

MAKE_RUN = "experiments/results/make_run"


def committed_block(name: str) -> str:
    """The committed README's block of renderer `name`, comment lines included."""
    blocks = [
        match.group(0)
        for match in render_docs.BLOCK.finditer((ROOT / "README.md").read_text())
        if match["spec"].split()[0] == name
    ]
    assert len(blocks) == 1, f"README.md has {len(blocks)} `{name}` blocks (expected 1)"
    return blocks[0]


def readme_root(tmp_path: Path, block: str) -> Path:
    """A repository root whose README holds `block` alone, and no docs pages."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(f"# README\n\n{block}\n")
    return tmp_path


def check(root: Path) -> int:
    return render_docs.main(["--root", str(root), "--check"])


def test_the_make_run_table_follows_its_comparison_file(tmp_path, capsys):
    root = readme_root(tmp_path, committed_block("make_run"))
    # The block's files only: the run directories beside them are the figures' data.
    (root / MAKE_RUN).mkdir(parents=True)
    for file in (ROOT / MAKE_RUN).glob("*.json"):
        shutil.copy(file, root / MAKE_RUN / file.name)
    assert check(root) == 0, "the README's make_run block differs from the committed files"

    comparison = root / MAKE_RUN / "comparison.json"
    document = json.loads(comparison.read_text())
    document["alp_gmm"]["final_pct_mastered_per_seed"][0] = 60.0
    comparison.write_text(json.dumps(document))
    assert check(root) == 1
    assert "README.md" in capsys.readouterr().err

    assert render_docs.main(["--root", str(root)]) == 0
    assert "| ALP-GMM | **97.5 ± 2.5** |" in (root / "README.md").read_text()
    assert check(root) == 0


def test_the_peer_spaces_line_follows_the_shootout_reports(tmp_path):
    block = committed_block("shootout_verdicts")
    root = readme_root(tmp_path, block)
    folders = render_docs.BLOCK.match(block)["spec"].split()[1:]
    for folder in folders:
        report = ROOT / folder / "report" / "report.json"
        if report.is_file():
            (root / folder / "report").mkdir(parents=True)
            shutil.copy(report, root / folder / "report" / "report.json")
    assert check(root) == 0, "the README's shoot-out line differs from the committed reports"

    finished = next(f for f in folders if (root / f / "report" / "report.json").is_file())
    report = root / finished / "report" / "report.json"
    document = json.loads(report.read_text())
    rule = document["decision_rule"]
    for row in document["groups"][rule["test_group"]]:
        row[rule["metric"]] += 1.0
    report.write_text(json.dumps(document))
    assert check(root) == 1
    assert render_docs.main(["--root", str(root)]) == 0
    assert check(root) == 0

    # A report withdrawn: its space reads as still running.
    shutil.rmtree(root / finished)
    assert render_docs.main(["--root", str(root)]) == 0
    assert f"`{Path(finished).name}`" in (root / "README.md").read_text().split("still running")[1]
