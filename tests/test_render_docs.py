"""`acl render-docs`: the docs' generated blocks match the committed results, and a
changed result makes `--check` fail."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from experiments.cli import ROOT
from experiments.tools import render_docs

PAGE = """# A results page

<!-- render shootout experiments/results/shootout/space -->
<!-- /render -->
"""


def report(folder: Path, mastered: float) -> None:
    """A shoot-out results directory with a finished report of two teachers."""
    (folder / "report").mkdir(parents=True)
    (folder / "suite.json").write_text(json.dumps({"teachers": {"random": {}, "plr": {}}}))
    row = {"seeds": 2, "p": None, "p_holm": None, "pct_mastered_se": 1.0}
    document = {
        "decision_rule": {"metric": "pct_mastered", "test_group": "all"},
        "decisions": {"plr": False},
        "groups": {
            "all": [
                {**row, "teacher": "random", "pct_mastered": 40.0},
                {**row, "teacher": "plr", "pct_mastered": mastered, "p": 0.5, "p_holm": 0.5},
            ]
        },
        "feasibility": [
            {
                "group": "all",
                "tasks": 10,
                "no_student": 20.0,
                "infeasible": 10.0,
                "scripted_solves": 90.0,
                "trivial": 30.0,
            }
        ],
    }
    (folder / "report" / "report.json").write_text(json.dumps(document))


def test_the_committed_pages_match_their_results():
    assert render_docs.main(["--check"]) == 0


def test_a_changed_result_fails_the_check_until_rendered(tmp_path, capsys):
    page = tmp_path / "docs" / "results" / "page.md"
    page.parent.mkdir(parents=True)
    (tmp_path / "README.md").write_text("# nothing rendered here\n")
    page.write_text(PAGE)
    results = tmp_path / "experiments" / "results" / "shootout" / "space"
    results.mkdir(parents=True)
    (results / "suite.json").write_text(json.dumps({"teachers": {"random": {}, "plr": {}}}))
    assert render_docs.main(["--root", str(tmp_path)]) == 0
    assert "Pending: 0 of 2 cells finished" in page.read_text()

    shutil.rmtree(results)
    report(results, mastered=55.0)
    assert render_docs.main(["--root", str(tmp_path), "--check"]) == 1
    assert "docs/results/page.md" in capsys.readouterr().err
    assert render_docs.main(["--root", str(tmp_path)]) == 0
    text = page.read_text()
    assert "| plr | 2 | 55.0 ± 1.0 |" in text and "plr: no difference claimed" in text
    assert "| all | 10 | 20 | 10 | 90 | 30 |" in text
    assert render_docs.main(["--root", str(tmp_path), "--check"]) == 0

    # A copy of the committed result, altered: the page no longer says what it holds.
    document = json.loads((results / "report" / "report.json").read_text())
    document["groups"]["all"][1]["pct_mastered"] = 56.0
    (results / "report" / "report.json").write_text(json.dumps(document))
    assert render_docs.main(["--root", str(tmp_path), "--check"]) == 1


def test_an_unknown_renderer_is_one_line(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("<!-- render plot x -->\n<!-- /render -->\n")
    assert render_docs.main(["--root", str(tmp_path)]) == 2
    assert "unknown renderer 'plot'" in capsys.readouterr().err


def test_every_page_with_a_block_is_scanned():
    scanned = {p.relative_to(ROOT).as_posix() for p in render_docs.pages(ROOT)}
    assert "docs/results/peer_spaces.md" in scanned and "README.md" in scanned
    assert not any(p.startswith("docs/history/") for p in scanned)
