"""The results pages' renderers (experiments.tools.render_results): a committed result
file, copied and altered, makes `acl render-docs --check` fail until the page is
rendered again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from acl.core.errors import ConfigError
from experiments.cli import ROOT
from experiments.tools import render_docs
from experiments.tools.render_results import (
    RESULTS_RENDERERS,
    median_interval,
    terminal_rows,
)

TOY_BANDIT = "experiments/results/toy_bandit/results.json"
DRAWN = "experiments/results/bench_teachers_point_reach_drawn.json"
REPLICATION = "experiments/results/bench_teachers_point_reach_drawn_replication.json"


@pytest.fixture(autouse=True)
def _pages_only(monkeypatch):
    # A tmp root holds one page's data, not the figures' (tests/test_render_figures.py).
    monkeypatch.setattr(
        "experiments.tools.render_figures.render_figures", lambda root, check, redraw=False: []
    )


def results_root(tmp_path: Path, page: str, *files: str) -> Path:
    """A repository root holding `page` as a results page and copies of committed files."""
    (tmp_path / "README.md").write_text("# nothing rendered here\n")
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "page.md").write_text(page)
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def alter(root: Path, name: str, change) -> None:
    document = json.loads((root / name).read_text())
    change(document)
    (root / name).write_text(json.dumps(document))


def check(root: Path) -> int:
    return render_docs.main(["--check", "--root", str(root)])


def render(root: Path) -> str:
    assert render_docs.main(["--root", str(root)]) == 0
    return (root / "docs" / "results" / "page.md").read_text()


def test_an_altered_toy_bandit_score_fails_the_check_until_rendered(tmp_path):
    page = (
        f"<!-- render toy_bandit {TOY_BANDIT} --rows covar_gmm=Covar-GMM "
        '--columns teacher "final % mastered" -->\n<!-- /render -->\n'
    )
    root = results_root(tmp_path, page, TOY_BANDIT)
    document = json.loads((root / TOY_BANDIT).read_text())
    scores = next(
        r for r in document["results"] if r["setting"] == "d2" and r["teacher"] == "covar_gmm"
    )["final_per_seed"]
    assert f"| Covar-GMM | {np.mean(scores):.1f} ± " in render(root)
    assert check(root) == 0

    def raise_one_seed(document):
        for record in document["results"]:
            if record["teacher"] == "covar_gmm":
                record["final_per_seed"][0] += 16.0  # the mean over 16 seeds rises by 1.0

    alter(root, TOY_BANDIT, raise_one_seed)
    assert check(root) == 1
    assert f"| Covar-GMM | {np.mean(scores) + 1.0:.1f} ± " in render(root)
    assert check(root) == 0


def test_an_altered_round_moves_the_pooled_overhead(tmp_path):
    page = (
        f"<!-- render overhead {DRAWN}+{REPLICATION} --rows alp_gmm=ALP-GMM "
        "--columns teacher rounds overhead interval -->\n<!-- /render -->\n"
    )
    root = results_root(tmp_path, page, DRAWN, REPLICATION)
    assert "| ALP-GMM | 18 | 4.2% | 0.3% to 9.9% (97%) |" in render(root)

    def slow_every_round(document):
        document["results"]["alp_gmm"]["seconds"] = [
            s * 1.1 for s in document["results"]["alp_gmm"]["seconds"]
        ]

    alter(root, REPLICATION, slow_every_round)
    assert check(root) == 1
    text = render(root)
    assert "| ALP-GMM | 18 | 4.2% |" not in text and check(root) == 0


def test_an_altered_comparison_changes_its_welch_p(tmp_path):
    name = "experiments/results/make_run/comparison.json"
    page = (
        "<!-- render comparison experiments/results/make_run --rows alp_gmm "
        '--columns teacher "% mastered" "p vs random" -->\n<!-- /render -->\n'
    )
    root = results_root(tmp_path, page, name)
    assert "| alp_gmm | 100.0 ± 0.0 | 3.1e-05 |" in render(root)

    def one_seed_fails(document):
        document["alp_gmm"]["final_pct_mastered_per_seed"][0] = 20.0

    alter(root, name, one_seed_fails)
    assert check(root) == 1
    assert "| alp_gmm | 95.0 ± 5.0 |" in render(root) and check(root) == 0


def test_unknown_rows_and_columns_name_what_the_file_has(tmp_path):
    root = results_root(tmp_path, "", TOY_BANDIT)
    toy_bandit = RESULTS_RENDERERS["toy_bandit"]
    with pytest.raises(ConfigError, match=r"unknown row\(s\) \['plr'\].*'riac'"):
        toy_bandit(root, TOY_BANDIT, "--rows", "plr")
    with pytest.raises(ConfigError, match=r"unknown column\(s\) \['score'\]"):
        toy_bandit(root, TOY_BANDIT, "--columns", "score")
    with pytest.raises(ConfigError, match="unknown flag --row "):
        toy_bandit(root, TOY_BANDIT, "--row", "riac")


def test_the_median_interval_is_the_order_statistics_that_cover_it():
    # 18 values: the 5th and 14th cover the median with probability 1 - 2 P(B(18, .5) <= 4).
    low, high, coverage = median_interval(list(range(1, 19)))
    assert (low, high) == (5, 14) and coverage == pytest.approx(1 - 2 * 4048 / 2**18)
    low, high, coverage = median_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert low != low and high != high  # five values cannot give 95%


def test_a_terminal_table_reads_back_with_empty_cells():
    from acl.run.results import format_table

    rows = [{"method": "a b", "p": "", "steps": "1,024 (2/8)"}, {"method": "c", "p": "0.5"}]
    text = format_table(rows, ["method", "p", "steps"]) + "\n\nsecond table\nignored"
    assert terminal_rows(text) == [
        {"method": "a b", "p": "", "steps": "1,024 (2/8)"},
        {"method": "c", "p": "0.5", "steps": ""},
    ]


def test_the_speed_table_puts_the_fastest_reference_seed_over_ours(tmp_path):
    reference = tmp_path / "reference.json"
    reference.write_text(
        json.dumps(
            {
                "summary": [
                    {
                        "setting": "d3",
                        "teacher": "riac",
                        "seeds_done": 3,
                        "seeds_failed": 0,
                        "seconds_per_seed": 30.0,
                        "seconds_min": 25.0,
                        "seconds_max": 35.0,
                    },
                    {
                        "setting": "d4",
                        "teacher": "riac",
                        "seeds_done": 0,
                        "seeds_failed": 3,
                        "seconds_per_seed": None,
                        "seconds_min": None,
                        "seconds_max": None,
                    },
                ]
            }
        )
    )
    ours = tmp_path / "ours.json"
    result = {"setting": "d3", "teacher": "riac", "options": {}, "seconds_per_seed": 0.5}
    ours.write_text(json.dumps({"results": [result]}))
    text = RESULTS_RENDERERS["toy_bandit_speed"](tmp_path, "reference.json", "ours.json")
    rows = [line for line in text.splitlines() if "riac" in line]
    assert "30.0 (25.0-35.0)" in rows[0] and "0.500" in rows[0] and "50x" in rows[0]
    assert "3 failed" in rows[1] and "50x" not in rows[1]


def test_records_of_several_files_follow_one_another(tmp_path):
    for name, rows in (("a.json", [{"bits": 10, "s": 1.5}]), ("b.json", [{"bits": 20, "s": 2}])):
        (tmp_path / name).write_text(json.dumps({"run": {"table": rows}}))
    records = RESULTS_RENDERERS["records"]
    text = records(tmp_path, "a.json", "b.json", "run.table", "--format", "s=.1f")
    assert text.splitlines()[2:] == ["| 10 | 1.5 |", "| 20 | 2.0 |"]
    with pytest.raises(ConfigError, match="file\\(s\\) then a dotted path"):
        records(tmp_path, "a.json")


def test_a_column_whose_name_holds_an_equals_sign_can_be_chosen_and_labelled(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"table": [{"n": 1, "seeds >= 90%": "2/3"}]}))
    records = RESULTS_RENDERERS["records"]
    text = records(tmp_path, "a.json", "table", "--columns", "n", "seeds >= 90%=seeds, 90%+")
    assert text.splitlines()[0] == "| n | seeds, 90%+ |"
    assert text.splitlines()[2] == "| 1 | 2/3 |"
    assert "| seeds >= 90% |" in records(tmp_path, "a.json", "table", "--columns", "seeds >= 90%")


def test_records_whose_key_repeats_are_refused_not_merged(tmp_path):
    rows = [{"device": "cpu", "envs": 1}, {"device": "cpu", "envs": 64}]
    (tmp_path / "a.json").write_text(json.dumps({"table": rows}))
    records = RESULTS_RENDERERS["records"]
    with pytest.raises(ConfigError, match="rows share a 'device'.*--key"):
        records(tmp_path, "a.json", "table")
    assert records(tmp_path, "a.json", "table", "--key", "envs").count("| cpu |") == 2
