"""`acl helps-where`: docs/results/helps_where.md is the page the committed result files
render, and a shoot-out's row turns from pending into numbers when its report appears."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from acl.benchmark.stats import welch_p
from experiments.tools import helps_where as hw

ROOT = hw.ROOT


def rows(text: str) -> dict[str, list[str]]:
    """The table's rows by their first cell's text, cells stripped."""
    out = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| space "):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            out[cells[0]] = cells
    return out


def row_of(text: str, key: str) -> list[str]:
    (found,) = [cells for first, cells in rows(text).items() if key in first]
    return found


def test_the_committed_page_is_up_to_date():
    assert hw.main(["--check"]) == 0


def test_check_fails_on_a_stale_page(tmp_path, capsys):
    page = tmp_path / "helps_where.md"
    page.write_text(hw.render() + "a hand edit\n")
    assert hw.main(["--check", "--out", str(page)]) == 1
    assert "out of date: run acl helps-where" in capsys.readouterr().err
    assert hw.main(["--out", str(page)]) == 0
    assert hw.main(["--check", "--out", str(page)]) == 0


def test_every_space_has_a_row_in_order():
    text = hw.render()
    table = rows(text)
    assert len(table) == len(hw.SPACES)
    assert [cells[0] for cells in table.values()] == [s.space for s in hw.SPACES]
    assert all(len(cells) == len(hw.COLUMNS) for cells in table.values())


def test_the_rows_agree_with_the_result_files():
    # The make-run comparison: ALP-GMM beats Random, with comparison.json's p.
    text = hw.render()
    make_run = row_of(text, "`make run`")
    assert make_run[4].startswith("**ALP-GMM**")
    comparison = json.loads((ROOT / "experiments/results/make_run/comparison.json").read_text())
    p = welch_p(
        comparison["alp_gmm"]["final_pct_mastered_per_seed"],
        comparison["random"]["final_pct_mastered_per_seed"],
    )
    assert math.isclose(p, comparison["welch_p_alp_gmm_vs_random"], rel_tol=1e-9)
    assert make_run[6] == hw._p(p)
    # The mini mazes: no teacher beats DR, and the p is results.json's.
    mazes = row_of(text, "mini mazes")
    assert mazes[4].startswith("none beats DR (best: PLR")
    records = json.loads((ROOT / "experiments/results/ued_mini/results.json").read_text())
    plr = next(r for r in records["results"] if r["method"] == "plr")
    assert mazes[6] == hw._p(plr["welch_p_vs_dr"])


def fake_report(path, teachers, rule_group="jaxued_eval"):
    """A report.json as write_shootout_report lays it out: a group the rule does not
    test, and the rule's group, where `teachers` gives each (mean, se, p, p_holm)."""

    def group(scale):
        return [
            {
                "teacher": teacher,
                "seeds": 16,
                "pct_mastered": scale * mean,
                "pct_mastered_se": se,
                "p": p,
                "p_holm": p_holm,
                "train_env_steps": 2097152.0,
                "extra_env_steps": 0.0,
            }
            for teacher, (mean, se, p, p_holm) in teachers.items()
        ]

    rule = {
        "metric": "pct_mastered",
        "test_group": rule_group,
        "baseline": "random",
        "alpha": 0.05,
    }
    decisions = {
        t: bool(v[0] > teachers["random"][0] and v[3] is not None and v[3] < 0.05)
        for t, v in teachers.items()
        if t != "random"
    }
    document = {
        "baseline": "random",
        "decision_rule": rule,
        "decisions": decisions,
        "groups": {"uniform": group(0.5), rule_group: group(1.0), "all": group(0.75)},
        "refused": [],
        "protocol_check": None,
    }
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(document))


@pytest.fixture
def root(tmp_path):
    """A root whose experiments/results holds the committed results (linked), but for
    the shoot-out of peer_pendulum, left pending for the tests to fill in."""
    results = tmp_path / "experiments" / "results"
    results.mkdir(parents=True)
    for entry in (ROOT / "experiments" / "results").iterdir():
        if entry.name != "shootout":
            (results / entry.name).symlink_to(entry)
    (results / "shootout").mkdir()
    # Copied, not linked: the tests write fake reports into these folders.
    for entry in (ROOT / "experiments" / "results" / "shootout").iterdir():
        if entry.name not in ("peer_pendulum", "xland"):
            shutil.copytree(entry, results / "shootout" / entry.name)
    return tmp_path


def test_a_pending_row_fills_in_when_its_report_appears(root, tmp_path):
    before = hw.render(root)
    # The same files give the same rows; the two left out of the root wait for a report.
    committed = rows(hw.render())
    left_out = [k for k in rows(before) if "peer_pendulum" in k or "`xland`" in k]
    assert len(left_out) == 2
    assert {k: v for k, v in rows(before).items() if k not in left_out} == {
        k: v for k, v in committed.items() if k in rows(before) and k not in left_out
    }
    assert row_of(before, "peer_pendulum")[2] == hw.PENDING

    report = root / "experiments/results/shootout/peer_pendulum/report/report.json"
    fake_report(
        report,
        {
            "random": (40.0, 5.0, None, None),
            "alp_gmm": (70.0, 4.0, 0.001, 0.002),
            "plr": (45.0, 6.0, 0.5, 0.5),
        },
    )
    after = hw.render(root)
    cells = row_of(after, "peer_pendulum")
    assert cells[2] == "2,097,152 env steps; 16 seeds"
    assert cells[3] == "final % mastered, test group `jaxued_eval`"  # the rule's group
    assert cells[4] == "**ALP-GMM**: 70.0 ± 4.0 vs Random 40.0 ± 5.0"
    assert cells[5] == f"+30.0 ± {math.hypot(4.0, 5.0):.1f}"
    assert cells[6] == "0.002 (Holm-corrected over 2 teachers; uncorrected 0.001)"
    assert "helping: ALP-GMM" in cells[7]
    # Only that row changed; the other pending rows still wait.
    changed = [k for k, v in rows(after).items() if rows(before)[k] != v]
    assert len(changed) == 1 and "peer_pendulum" in changed[0]
    assert row_of(after, "xland")[2] == hw.PENDING


def test_a_report_whose_best_teacher_does_not_pass_the_rule(root):
    report = root / "experiments/results/shootout/xland/report/report.json"
    # Above Random before the correction, not after it: the rule decides.
    fake_report(
        report,
        {"random": (40.0, 5.0, None, None), "plr": (55.0, 5.0, 0.04, 0.08)},
        rule_group="xland_held_out",
    )
    cells = row_of(hw.render(root), "xland")
    assert cells[4] == "none beats Random (best: PLR, 55.0 ± 5.0 vs Random 40.0 ± 5.0)"
    assert cells[6].startswith("0.08 (Holm-corrected over 1 teacher;")
    assert "helping: none" in cells[7]


def test_a_report_without_the_rules_group_is_one_line(root, capsys):
    report = root / "experiments/results/shootout/peer_pendulum/report/report.json"
    fake_report(report, {"random": (1.0, 1.0, None, None), "dr": (2.0, 1.0, 0.5, 0.5)})
    document = json.loads(report.read_text())
    document["decision_rule"]["test_group"] = "nowhere"
    report.write_text(json.dumps(document))
    assert hw.main(["--root", str(root), "--out", str(root / "page.md")]) == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and len(err.strip().splitlines()) == 1


def test_the_toy_bandit_row_reads_a_results_file_when_one_is_committed(root):
    # `acl toy-bandit`'s results.json: per setting and teacher the final per-seed scores.
    folder = root / "experiments/results/toy_bandit"
    folder.unlink(missing_ok=True)  # the committed one, linked: this test writes its own
    folder.mkdir()
    record = {"setting": "d2", "options": {}, "seeds": 4}
    results = [
        {**record, "teacher": "random", "final_per_seed": [4.0, 5.0, 4.0, 5.0]},
        {**record, "teacher": "covar_gmm", "final_per_seed": [70.0, 72.0, 71.0, 69.0]},
        {**record, "setting": "d3", "teacher": "riac", "final_per_seed": [90.0] * 4},
    ]
    document = {
        "protocol": {"episodes": 20000},
        "provenance": {"seeds": [0, 1, 2, 3]},
        "results": results,
    }
    (folder / "results.json").write_text(json.dumps(document))
    cells = row_of(hw.render(root), "toy bandit")
    assert cells[2] == "20,000 episodes; 4 seeds, 0–3"
    assert cells[4].startswith("**Covar-GMM**: 70.5 ± 0.6 vs Random 4.5 ± 0.3")
    p = welch_p([70.0, 72.0, 71.0, 69.0], [4.0, 5.0, 4.0, 5.0])
    assert cells[6] == hw._p(p)
