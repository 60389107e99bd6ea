"""docs/changelog.md is kept by version, Keep-a-Changelog style: its newest version is the
package's (setup.cfg's `version`), versions go newest first, each has only the standard
sections, and it names no issue or commit (dates only in a version's heading)."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from tests.test_docs_hygiene import COMMIT, DATE, ISSUE

ROOT = Path(__file__).resolve().parent.parent
CHANGELOG = ROOT / "docs" / "changelog.md"
VERSION_HEADING = re.compile(r"^## \[(\d+)\.(\d+)\.(\d+)\](?: - (\d{4}-\d\d-\d\d))?$")
"""`## [0.2.0] - 2026-12-07`: a version and, optionally, its release date."""
SECTIONS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
"""Keep a Changelog's sections of a version."""


def package_version() -> str:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return config["metadata"]["version"]


def versions(text: str) -> list[tuple[int, int, int]]:
    return [
        tuple(int(part) for part in match.groups()[:3])
        for line in text.splitlines()
        if (match := VERSION_HEADING.match(line))
    ]


def test_the_newest_version_is_the_package_version():
    found = versions(CHANGELOG.read_text())
    assert found, "docs/changelog.md has no '## [X.Y.Z]' heading"
    newest = ".".join(map(str, found[0]))
    assert newest == package_version(), (
        f"docs/changelog.md's newest version is {newest}, setup.cfg's version is "
        f"{package_version()}: bump one of them"
    )


def test_versions_go_newest_first_and_each_once():
    found = versions(CHANGELOG.read_text())
    assert found == sorted(set(found), reverse=True), found


def test_every_second_level_heading_is_a_version_and_its_sections_are_standard():
    for line in CHANGELOG.read_text().splitlines():
        if line.startswith("## "):
            assert VERSION_HEADING.match(line), f"not a version heading: {line!r}"
        elif line.startswith("### "):
            assert line[4:] in SECTIONS, f"not a Keep a Changelog section: {line!r}"


def test_no_issue_number_commit_hash_or_date_outside_the_version_headings():
    found = []
    for number, line in enumerate(CHANGELOG.read_text().splitlines(), 1):
        patterns = (ISSUE, COMMIT) if VERSION_HEADING.match(line) else (ISSUE, COMMIT, DATE)
        found += [f"{number}: {m.group(0)!r}" for p in patterns for m in p.finditer(line)]
    assert not found, "docs/changelog.md:\n" + "\n".join(found)
