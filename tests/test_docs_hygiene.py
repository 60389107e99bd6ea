"""The user pages of docs/ say what is true now, not how it came to be.

Dated process notes, commit hashes and issue numbers belong in docs/history/ (and the
changelog); a user page, every docs/*.md and docs/results/*.md but the changelog, holds
none of them. One exception: a results page may hold one provenance line, a line that
starts with `Provenance:`, naming the commits of its protocol and of its run; it may name
commits, and nothing else on the page may. Also here: figures that one page states and
the code or a committed result file decides (the golden-run count of docs/testing.md,
the toy bandit's d = 2 rows)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from acl.teachers.base import TEACHERS
from tests.test_golden import FAST

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"
NOT_USER_PAGES = {DOCS / "changelog.md"}
"""Pages that are history by design (docs/history/ is not globbed below)."""

DATE = re.compile(r"(?<!\d)20\d\d-\d\d-\d\d(?!\d)")
"""A date stamp, e.g. 2026-12-03, also inside a file name or an anchor."""
COMMIT = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
"""What looks like a commit hash: 7 to 40 lowercase hex digits, word-bounded, with at
least one digit and one letter (so neither a number nor a word like "deadbeef")."""
ISSUE = re.compile(r"\b[Ii]ssues? \d+")
"""An issue number ("issue 28", "issues 25 and 26")."""
PROVENANCE = "Provenance:"
"""The start of a results page's one provenance line, the only line that may name commits."""


def user_pages() -> list[Path]:
    pages = sorted(DOCS.glob("*.md")) + sorted(RESULTS.glob("*.md"))
    return [page for page in pages if page not in NOT_USER_PAGES]


def findings(page: Path, results: Path = RESULTS) -> list[str]:
    """Every date stamp, issue number and stray commit hash of `page`, one per line; a
    page in `results` may hold one provenance line."""
    found = []
    provenance_lines = 0
    name = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
    for number, line in enumerate(page.read_text().splitlines(), 1):
        where = f"{name}:{number}"
        found += [f"{where}: date stamp {m.group(0)!r}" for m in DATE.finditer(line)]
        found += [f"{where}: issue number {m.group(0)!r}" for m in ISSUE.finditer(line)]
        is_provenance = line.startswith(PROVENANCE) and page.parent == results
        provenance_lines += is_provenance
        if not is_provenance:
            found += [f"{where}: commit hash {m.group(0)!r}" for m in COMMIT.finditer(line)]
    if provenance_lines > 1:
        found.append(f"{name}: {provenance_lines} provenance lines (at most 1)")
    return found


def test_the_checks_catch_what_they_are_for(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Moved from the README on 2026-12-03.\n"
        "Provenance: protocol commit 0219c23, run commit 62dec93.\n"
        "See bench_teachers_2026-12-04.json, commit 8a00e98, and issue 20.\n"
        "Numbers are not commits: 1234567, 11,796,480; nor words: deadbeef, facade.\n"
    )
    assert [f.split(": ", 1)[1] for f in findings(page, tmp_path)] == [
        "date stamp '2026-12-03'",
        "date stamp '2026-12-04'",
        "issue number 'issue 20'",
        "commit hash '8a00e98'",
    ]
    page.write_text(page.read_text() + "Provenance: another line, 0b5a431.\n")
    assert findings(page, tmp_path)[-1].endswith("2 provenance lines (at most 1)")
    # Outside docs/results/ no line may name a commit.
    assert "commit hash '0219c23'" in " ".join(findings(page, tmp_path / "elsewhere"))


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_a_user_page_holds_no_dated_process_history(page):
    found = findings(page)
    assert not found, (
        "dated process history on a user page (move it to docs/history/; a results page "
        f"keeps one line starting with {PROVENANCE!r} for its commits):\n" + "\n".join(found)
    )


def test_the_history_folder_indexes_its_files():
    index = (DOCS / "history" / "README.md").read_text()
    files = sorted(p.name for p in (DOCS / "history").iterdir() if p.name != "README.md")
    missing = [name for name in files if f"({name})" not in index]
    assert not missing, f"docs/history/README.md links none of {missing}"


def test_the_testing_page_counts_the_slow_golden_runs():
    text = (DOCS / "testing.md").read_text()
    match = re.search(r"the other (\d+) of the (\d+) registered teachers", " ".join(text.split()))
    assert match, "docs/testing.md no longer states how many golden runs are slow"
    registered = len(TEACHERS.names())
    assert (int(match.group(1)), int(match.group(2))) == (registered - len(FAST), registered)


TOY_BANDIT_LABELS = {
    "random": "Random",
    "riac": "RIAC",
    "alp_gmm": "ALP-GMM",
    "covar_gmm": "Covar-GMM",
}


def test_the_toy_bandit_page_gives_the_committed_d2_scores():
    results = json.loads((ROOT / "experiments/results/toy_bandit/results.json").read_text())
    text = (RESULTS / "toy_bandit.md").read_text()
    section = text[text.index("**d = 2.**") : text.index("**d = 2 with 3 distractor")]
    rows = {
        cells[0]: cells
        for line in section.splitlines()
        if line.startswith("| ")
        for cells in [[cell.strip().strip("*") for cell in line.strip("|").split("|")]]
    }
    d2 = [r for r in results["results"] if r["setting"] == "d2" and not r["options"]]
    assert sorted(r["teacher"] for r in d2) == sorted(TOY_BANDIT_LABELS)
    for record in d2:
        cells = rows[TOY_BANDIT_LABELS[record["teacher"]]]
        score = f"{record['final_mean']:.1f} ± {record['final_se']:.1f}"
        assert cells[1] == score, f"toy_bandit.md, {record['teacher']}: {cells[1]} != {score}"
