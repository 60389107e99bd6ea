"""acl.benchmark's statistics, tables and report (and `acl report`) on the hand-made
fixture tests/fixtures/benchmark_tiny.

The fixture: teachers random, alp_gmm, riac; settings default, unfeasible and default / expert
high; seeds 0-2; evaluations at 5000 and 10000 env steps. Final scores per seed:

    random   default 20 25 30   unfeasible 10 12 14   default/high 30 35 40
    alp_gmm  default 50 55 60   unfeasible 11 15 13   default/high 45 60 75
    riac     default 22 30 26   unfeasible 30 34 38   default/high 32.5 37.5 42.5

riac/default seed 1 scores 40 at its first evaluation (it forgets), and alp_gmm/default lists
its final evaluation before the first one.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from acl.benchmark import report, stats, tables
from acl.core.errors import ConfigError
from acl.run.results import format_mean_se, format_table, mean_se
from experiments import commands
from experiments.tools import report as report_cli

FIXTURE = Path(__file__).parent / "fixtures" / "benchmark_tiny"
FINAL = {
    ("random", "default", "none"): [20.0, 25.0, 30.0],
    ("random", "unfeasible", "none"): [10.0, 12.0, 14.0],
    ("random", "default", "high"): [30.0, 35.0, 40.0],
    ("alp_gmm", "default", "none"): [50.0, 55.0, 60.0],
    ("alp_gmm", "unfeasible", "none"): [11.0, 15.0, 13.0],
    ("alp_gmm", "default", "high"): [45.0, 60.0, 75.0],
    ("riac", "default", "none"): [22.0, 30.0, 26.0],
    ("riac", "unfeasible", "none"): [30.0, 34.0, 38.0],
    ("riac", "default", "high"): [32.5, 37.5, 42.5],
}
SETTINGS = ["default", "unfeasible", "default / expert high"]


@pytest.fixture(scope="module")
def df():
    return stats.load_results(FIXTURE)


@pytest.fixture(scope="module")
def summ(df):
    return stats.summary(df)


def _row(summ, teacher, setting):
    rows = summ[(summ["teacher"] == teacher) & (summ["setting"] == setting)]
    assert len(rows) == 1
    return rows.iloc[0]


# ----------------------------------------------------------------------------- loading


def test_load_results_types(df):
    assert list(df.columns) == list(stats.COLUMNS)
    assert len(df) == 9 * 3 * 2
    assert df["seed"].dtype == np.int64 and df["env_steps"].dtype == np.int64
    assert set(df["expert"]) == {"none", "high"}  # "none" is a value, not a missing one
    # the file itself is accepted too
    assert len(stats.load_results(FIXTURE / "results.csv")) == len(df)


def test_load_results_errors(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        stats.load_results(tmp_path)
    frame = pd.read_csv(FIXTURE / "results.csv").drop(columns=["pct_mastered"])
    frame.to_csv(tmp_path / "results.csv", index=False)
    with pytest.raises(ConfigError, match="pct_mastered"):
        stats.load_results(tmp_path)
    frame = pd.read_csv(FIXTURE / "results.csv")
    pd.concat([frame, frame.iloc[:1]]).to_csv(tmp_path / "results.csv", index=False)
    with pytest.raises(ConfigError, match="duplicate"):
        stats.load_results(tmp_path)


def test_select(df):
    part = stats.select(df, teachers=["random", "riac"], experts="none", seeds=[0, 2])
    assert set(part["teacher"]) == {"random", "riac"}
    assert set(part["expert"]) == {"none"}
    assert set(part["seed"]) == {0, 2}
    assert len(stats.select(df)) == len(df)


@pytest.mark.parametrize(
    "kwargs, named",
    [
        ({"teachers": ["random", "sagg_riac"]}, "alp_gmm"),
        ({"challenges": "rugged"}, "unfeasible"),
        ({"experts": ["low"]}, "high"),
        ({"seeds": [7]}, "[0, 1, 2]"),
    ],
)
def test_select_unknown_names_the_existing_ones(df, kwargs, named):
    with pytest.raises(ConfigError, match="unknown") as err:
        stats.select(df, **kwargs)
    assert named in str(err.value)


def test_select_empty_combination(df):
    # both names exist, but the fixture has no unfeasible / expert high setting
    with pytest.raises(ConfigError, match="no row"):
        stats.select(df, challenges="unfeasible", experts="high")


# ----------------------------------------------------------------------------- statistics


def test_final_scores_picks_largest_env_steps(df):
    final = stats.final_scores(df)
    assert len(final) == 9 * 3
    assert (final["env_steps"] == 10000).all()
    for (teacher, challenge, expert), values in FINAL.items():
        rows = final[
            (final["teacher"] == teacher)
            & (final["challenge"] == challenge)
            & (final["expert"] == expert)
        ].sort_values("seed")
        assert rows["pct_mastered"].tolist() == values
    # riac/default seed 1: 40 at 5000 steps, 30 at the end; the end counts, not the best.
    raw = df[(df["teacher"] == "riac") & (df["challenge"] == "default") & (df["expert"] == "none")]
    assert raw.loc[raw["seed"] == 1, "pct_mastered"].max() == 40.0
    forgot = final[(final["teacher"] == "riac") & (final["setting"] == "default")]
    assert forgot.loc[forgot["seed"] == 1, "pct_mastered"].item() == 30.0


def test_summary_matches_scipy(summ):
    assert len(summ) == 9
    assert list(dict.fromkeys(summ["teacher"])) == ["random", "alp_gmm", "riac"]
    for (teacher, challenge, expert), values in FINAL.items():
        row = _row(summ, teacher, stats.setting_label(challenge, expert))
        base = FINAL[("random", challenge, expert)]
        assert row["n"] == 3
        assert row["mean"] == pytest.approx(np.mean(values))
        assert row["se"] == pytest.approx(scipy_stats.sem(values))
        assert row["normalised"] == pytest.approx(np.mean(values) / np.mean(base))
        if teacher == "random":
            assert math.isnan(row["p_value"]) and not row["significant"]
        else:
            expected = scipy_stats.ttest_ind(values, base, equal_var=False).pvalue
            assert row["p_value"] == pytest.approx(expected, rel=1e-12)
            assert row["significant"] == (expected < 0.05)
    # the fixture has both outcomes
    assert _row(summ, "alp_gmm", "default")["significant"]
    assert _row(summ, "riac", "unfeasible")["significant"]
    assert not _row(summ, "alp_gmm", "default / expert high")["significant"]


def _student_t_sf(t: float, df: float, steps: int = 200_000) -> float:
    """P(T > t) for Student's t by Simpson's rule on its density: independent of scipy."""
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    pdf = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)  # noqa: E731
    upper = 1000.0  # the tail beyond is below 1e-9 for df ~ 6
    h = (upper - t) / steps
    total = pdf(t) + pdf(upper)
    total += sum((4 if i % 2 else 2) * pdf(t + i * h) for i in range(1, steps))
    return total * h / 3


def test_welch_against_hand_computation():
    # a = 1..5 (mean 3, var 2.5), b = 2,4,..,10 (mean 6, var 10), n = 5 each:
    # SE^2 = 2.5/5 + 10/5 = 2.5, t = -3 / sqrt(2.5) = -1.8974,
    # Welch-Satterthwaite df = 2.5^2 / (0.5^2/4 + 2^2/4) = 100/17 = 5.8824.
    a, b = [1, 2, 3, 4, 5], [2, 4, 6, 8, 10]
    res = scipy_stats.ttest_ind(a, b, equal_var=False)
    assert res.statistic == pytest.approx(-3 / math.sqrt(2.5), rel=1e-12)
    assert res.df == pytest.approx(100 / 17, rel=1e-12)
    hand_p = 2 * _student_t_sf(3 / math.sqrt(2.5), 100 / 17)
    assert hand_p == pytest.approx(0.1075, abs=5e-5)  # two-sided p = 0.1075
    assert stats.welch_p(a, b) == pytest.approx(hand_p, rel=1e-6)


def test_welch_edge_cases():
    assert math.isnan(stats.welch_p([1.0], [1.0, 2.0]))
    assert math.isnan(stats.welch_p([5.0, 5.0], [5.0, 5.0]))  # no variance, no difference
    assert stats.welch_p([100.0, 100.0], [0.0, 0.0]) == 0.0  # no variance, a difference


def test_zero_baseline_normalisation(df):
    zeroed = df.copy()
    base = (zeroed["teacher"] == "random") & (zeroed["challenge"] == "unfeasible")
    zeroed.loc[base, "pct_mastered"] = 0.0
    both = (zeroed["teacher"] == "riac") & (zeroed["challenge"] == "unfeasible")
    zeroed.loc[both, "pct_mastered"] = 0.0
    summ = stats.summary(zeroed)
    assert _row(summ, "random", "unfeasible")["normalised"] == 1.0
    assert _row(summ, "riac", "unfeasible")["normalised"] == 1.0
    assert math.isnan(_row(summ, "alp_gmm", "unfeasible")["normalised"])


def test_summary_needs_the_baseline(df):
    with pytest.raises(ConfigError, match="baseline"):
        stats.summary(stats.select(df, teachers=["alp_gmm", "riac"]))
    # any teacher can be the baseline
    other = stats.summary(df, baseline="riac")
    assert other["teacher"].iloc[0] == "riac"
    assert _row(other, "random", "unfeasible")["significant"]


def test_per_seed_table(df):
    table = tables.per_seed_table(df)
    assert list(table.columns) == SETTINGS
    assert table.shape == (9, 3)
    for (teacher, challenge, expert), values in FINAL.items():
        for seed, value in enumerate(values):
            assert table.loc[(teacher, seed), stats.setting_label(challenge, expert)] == value


# ----------------------------------------------------------------------------- tables


def _cell(teacher, challenge, expert, summ, pm, star):
    values = FINAL[(teacher, challenge, expert)]
    row = _row(summ, teacher, stats.setting_label(challenge, expert))
    text = f"{np.mean(values):.1f} {pm} {scipy_stats.sem(values):.1f}"
    return text + (star if row["p_value"] < 0.05 else "")


def test_markdown_table(summ):
    text = tables.markdown_table(summ)
    lines = text.splitlines()
    assert lines[0] == "| teacher | " + " | ".join(SETTINGS) + " |"
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:5]}
    assert list(rows) == ["random", "alp_gmm", "riac"]
    for teacher, challenge, expert in FINAL:
        cells = rows[teacher].strip("| ").split(" | ")[1:]
        column = SETTINGS.index(stats.setting_label(challenge, expert))
        assert cells[column] == _cell(teacher, challenge, expert, summ, "±", "*")
    # a star exactly where p < 0.05
    assert text.count("*") == 2 + 1  # two significant cells and the note's "* p < 0.05"
    assert "55.0 ± 2.9*" in text and "34.0 ± 2.3*" in text


def test_latex_table(summ):
    text = tables.latex_table(summ)
    assert "\\toprule" in text and "\\midrule" in text and "\\bottomrule" in text
    assert "alp\\_gmm &" in text and "alp_gmm" not in text
    assert "\\%" in text and " % mastered" not in text
    assert "default / expert high" in text
    body = [line for line in text.splitlines() if line.endswith("\\\\")][1:]
    assert len(body) == 3
    for teacher, challenge, expert in FINAL:
        line = next(b for b in body if b.startswith(tables.latex_escape(teacher) + " &"))
        cells = line.removesuffix(" \\\\").split(" & ")[1:]
        column = SETTINGS.index(stats.setting_label(challenge, expert))
        assert cells[column] == _cell(teacher, challenge, expert, summ, "$\\pm$", "$^{*}$")
    assert text.count("$^{*}$") == 2 + 1


def test_one_seed_has_no_se_and_every_table_says_n_a(df):
    # acl.run.results holds the one mean +- SE: an SE over one seed is NaN (not 0, which would
    # claim a perfectly reproducible result) and reads "n/a", never "nan".
    mean, se = mean_se([42.0])
    assert mean == 42.0 and math.isnan(se)
    assert format_mean_se(mean, se) == "42.0 ± n/a"
    assert format_mean_se(*mean_se([1.0, 3.0])) == "2.0 ± 1.0"
    table = format_table([{"run": "a", "se": se}, {"run": "b", "se": 0.5}], ["run", "se"])
    assert table.splitlines()[2].split() == ["a", "n/a"] and "nan" not in table
    one = stats.summary(df[df["seed"] == 0])
    assert (one["n"] == 1).all() and one["se"].isna().all()
    markdown = tables.markdown_table(one)
    assert "| 20.0 ± n/a | 10.0 ± n/a | 30.0 ± n/a |" in markdown
    assert "50.0 ± n/a" in markdown and "nan" not in markdown
    assert "50.0 $\\pm$ n/a" in tables.latex_table(one)
    findings = tables.findings_markdown(tables.teachmyagent_findings(df[df["seed"] == 0]))
    assert "nan" not in findings


def test_latex_escape():
    assert tables.latex_escape("a_b 50% & $x#") == "a\\_b 50\\% \\& \\$x\\#"


# ----------------------------------------------------------------------------- rliable


def test_iqm_ci_brackets_the_estimate_and_is_reproducible(df):
    first = stats.iqm_table(df, reps=500, seed=3)
    again = stats.iqm_table(df, reps=500, seed=3)
    pd.testing.assert_frame_equal(first, again)
    assert list(first["teacher"]) == ["random", "alp_gmm", "riac"]
    assert (first["ci_low"] <= first["iqm"]).all() and (first["iqm"] <= first["ci_high"]).all()
    assert (first["ci_low"] < first["ci_high"]).all()
    # IQM of random's 9 scores / 100: the middle half after trimming 25 % each end
    random = np.sort(np.concatenate([FINAL[k] for k in FINAL if k[0] == "random"])) / 100
    assert first.loc[0, "iqm"] == pytest.approx(scipy_stats.trim_mean(random, 0.25))
    assert first.attrs["seeds"] == [0, 1, 2]
    # the global numpy RNG is left as it was
    np.random.seed(123)
    expected = np.random.rand()
    np.random.seed(123)
    stats.iqm_table(df, reps=50)
    assert np.random.rand() == expected


def test_score_matrices_use_common_seeds(df):
    partial = df[~((df["teacher"] == "riac") & (df["seed"] == 2) & (df["expert"] == "high"))]
    matrices, labels, seeds = stats.score_matrices(partial)
    assert labels == SETTINGS and seeds == [0, 1]
    assert {m.shape for m in matrices.values()} == {(2, 3)}
    np.testing.assert_allclose(matrices["random"][:, 0], [0.20, 0.25])


def test_performance_profiles(df):
    taus, profiles, cis = stats.performance_profiles(df, reps=200)
    assert taus[0] == 0.0 and taus[-1] == 1.0
    for teacher, profile in profiles.items():
        assert profile[0] == 1.0 and profile[-1] == 0.0
        assert cis[teacher].shape == (2, len(taus))
        assert np.all(np.diff(profile) <= 0)


# ----------------------------------------------------------------------------- report, CLI


def test_write_report(tmp_path):
    paths = report.write_report(FIXTURE, tmp_path / "out", reps=200)
    assert set(paths) == set(report.REPORT_FILES)
    for name, path in paths.items():
        assert path.is_file() and path.stat().st_size > 0, name
        if name.endswith(".png"):
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert path.stat().st_size > 5000
    document = json.loads(paths["summary.json"].read_text())
    assert len(document["summary"]) == 9
    assert document["iqm"]["seeds"] == [0, 1, 2]
    assert document["provenance"]["suite"] == "tiny"
    random_row = next(r for r in document["summary"] if r["teacher"] == "random")
    assert random_row["p_value"] is None  # NaN is written as null
    results = stats.load_results(FIXTURE)
    assert paths["summary.md"].read_text() == tables.markdown_table(
        stats.summary(results)
    ) + tables.ranks_markdown(stats.ranks(results)) + tables.findings_markdown(
        tables.teachmyagent_findings(results)
    )
    assert document["teachmyagent_findings"] == tables.teachmyagent_findings(results)
    assert {row["teacher"] for row in document["ranks"]} == set(results["teacher"])


def test_write_report_slice_with_two_settings(tmp_path, df):
    # fewer than 3 settings: the radar falls back to bars
    part = stats.select(df, experts="none", seeds=[0, 1])
    paths = report.write_report(part, tmp_path, reps=100)
    assert paths["radar.png"].stat().st_size > 5000
    assert json.loads(paths["summary.json"].read_text())["provenance"] is None


@pytest.mark.slow
def test_cli(tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    out = tmp_path / "report"
    # `acl report ...` as the console script runs it (argv from the command line), but in
    # this process: a fresh interpreter spends seconds importing what this one holds already.
    argv = [str(results), "--out", str(out), "--reps", "200"]
    monkeypatch.setattr(sys, "argv", ["acl", "report", *argv])
    assert commands.main() == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith("| teacher | default | unfeasible | default / expert high |")
    assert "55.0 ± 2.9*" in stdout
    assert all((out / name).is_file() for name in report.REPORT_FILES)


def test_cli_errors(tmp_path, capsys):
    assert report_cli.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and len(err.strip().splitlines()) == 1
    assert report_cli.main([str(FIXTURE), "--baseline", "nobody"]) == 2
    assert "baseline" in capsys.readouterr().err


def test_cli_prints_without_writing(capsys):
    assert report_cli.main([str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert "| riac | 26.0 ± 2.3 | 34.0 ± 2.3* | 37.5 ± 2.9 |" in out


def _findings_table(scores: dict) -> pd.DataFrame:
    """A results table from {(teacher, challenge, expert): [final score per seed]}."""
    rows = []
    for (teacher, challenge, expert), values in scores.items():
        for seed, value in enumerate(values):
            rows.append(
                dict(
                    suite="t",
                    env="e",
                    teacher=teacher,
                    challenge=challenge,
                    expert=expert,
                    seed=seed,
                    env_steps=100,
                    pct_mastered=value,
                    mean_return=0.0,
                    train_return=0.0,
                )
            )
    return pd.DataFrame(rows, columns=list(stats.COLUMNS))


def test_teachmyagent_findings_verdicts():
    low, mid, high = [10.0, 12.0, 11.0, 9.0], [50.0, 52.0, 49.0, 51.0], [90.0, 92.0, 91.0, 89.0]
    scores = {
        ("random", "default", "none"): mid,
        ("random", "unfeasible", "none"): low,
        ("random", "trivial", "none"): mid,
        ("alp_gmm", "default", "none"): high,
        ("alp_gmm", "unfeasible", "none"): high,
        ("alp_gmm", "trivial", "none"): mid,
        ("alp_gmm", "rugged", "none"): high,
        ("alp_gmm", "default", "high"): high,
        ("alp_gmm", "unfeasible", "high"): [100.0, 99.0, 98.0, 100.0],
        ("riac", "default", "none"): high,
        ("riac", "rugged", "none"): low,
        ("riac", "trivial", "none"): high,  # beats Random on trivial
    }
    found = {f["finding"]: f for f in tables.teachmyagent_findings(_findings_table(scores))}
    verdicts = {name.split()[0]: f["verdict"] for name, f in found.items()}
    assert verdicts == {"ALP-GMM": "holds", "Expert": "holds", "Random": "fails", "RIAC": "holds"}
    assert "riac" in found["Random is hard to beat on trivial spaces"]["evidence"]

    scores[("alp_gmm", "unfeasible", "none")] = low  # no longer robust
    scores[("riac", "rugged", "none")] = high  # no longer hurt
    del scores[("alp_gmm", "unfeasible", "high")]
    found = tables.teachmyagent_findings(_findings_table(scores))
    assert [f["verdict"] for f in found] == ["fails", "not measured", "fails", "fails"]
    assert "RIAC and Covar-GMM suffer from rugged difficulty: fails" in tables.findings_markdown(
        found
    )
    assert "needs expert-high cells" in found[1]["evidence"]

    # Cells present but every score at the ceiling: not measured, and said why.
    scores[("alp_gmm", "unfeasible", "high")] = scores[("alp_gmm", "unfeasible", "none")]
    found = tables.teachmyagent_findings(_findings_table(scores))
    assert found[1]["verdict"] == "not measured"
    assert "changes no score of alp_gmm" in found[1]["evidence"]


def test_mean_metric_scores_runs_by_their_mean_over_evaluations():
    final = _findings_table({("random", "default", "none"): [100.0, 100.0]})
    early = final.assign(env_steps=final["env_steps"] // 2, pct_mastered=[20.0, 40.0])
    results = pd.concat([early, final], ignore_index=True)
    scored = stats.as_metric(results, "mean")
    assert sorted(scored["pct_mastered"]) == [60.0, 70.0]
    assert (scored["env_steps"] == final["env_steps"].max()).all()
    summ = stats.summary(scored)
    assert summ["mean"].iloc[0] == 65.0
    assert "Mean % mastered over the evaluations" in tables.markdown_table(summ)
    assert "Final % mastered" in tables.markdown_table(stats.summary(results))
    with pytest.raises(ConfigError, match="metric"):
        stats.as_metric(results, "auc")


def test_ranks_order_by_final_and_break_ties_by_the_curve():
    def runs(teacher, final, early):
        table = _findings_table({(teacher, "default", "none"): final})
        first = table.assign(env_steps=50, pct_mastered=early)
        return [first, table]

    parts = (
        runs("random", [100.0, 100.0], [20.0, 20.0])
        + runs("alp_gmm", [100.0, 100.0], [90.0, 90.0])
        + runs("riac", [100.0, 100.0], [90.0, 90.0])  # equal on both: shares alp_gmm's rank
        + runs("covar_gmm", [99.98, 99.98], [96.0, 96.0])  # within 0.05, better curve: first
        + runs("adr", [50.0, 60.0], [99.0, 99.0])  # best curve, worse final: last
    )
    table = stats.ranks(pd.concat(parts, ignore_index=True))
    expected = {"random": 4, "alp_gmm": 2, "riac": 2, "covar_gmm": 1, "adr": 5}
    assert table["default"].to_dict() == expected
    assert "| covar_gmm | 1 | 1.0 |" in tables.ranks_markdown(table)


def test_findings_on_adr_and_on_teachers_without_a_prior():
    low, mid, high = [10.0, 12.0, 11.0, 9.0], [50.0, 52.0, 49.0, 51.0], [90.0, 92.0, 91.0, 89.0]
    scores = {
        ("random", "default", "none"): mid,
        ("random", "unfeasible", "none"): mid,
        ("adr", "default", "none"): low,
        ("adr", "default", "high"): high,
        ("adr", "unfeasible", "none"): low,
        ("adr", "unfeasible", "high"): mid,
        ("alp_gmm", "default", "none"): high,
        ("alp_gmm", "unfeasible", "none"): high,
    }
    found = {
        f["finding"]: f["verdict"] for f in tables.teachmyagent_findings(_findings_table(scores))
    }
    assert found["ADR relies on expert knowledge"] == "holds"
    assert found["Teachers that use no expert knowledge are competitive"] == "holds"
    scores[("adr", "unfeasible", "none")] = high  # beats its expert and Random there
    scores[("alp_gmm", "default", "none")] = low
    scores[("alp_gmm", "unfeasible", "none")] = low
    found = {
        f["finding"]: f["verdict"] for f in tables.teachmyagent_findings(_findings_table(scores))
    }
    assert found["ADR relies on expert knowledge"] == "fails"
    assert found["Teachers that use no expert knowledge are competitive"] == "fails"


# ----------------------------------------------------------------------------- risk


def test_results_without_cvar_columns_read_as_nan_and_show_no_risk_table(df):
    # The fixture predates the CVaR columns.
    assert all(df[c].isna().all() for c in stats.CVAR_COLUMNS)
    assert stats.risk_summaries(df) == {}
    assert tables.risk_markdown({}) == ""


def test_risk_tables_summarise_the_final_cvar_in_percent(df, tmp_path):
    # A hand-made CVaR at 0.1 for every run: the final % mastered / 200 (so 100 x CVaR is
    # half the final score), at every evaluation.
    with_cvar = df.copy()
    with_cvar["cvar_0.1"] = with_cvar["pct_mastered"] / 200.0
    with_cvar.to_csv(tmp_path / "results.csv", index=False)
    loaded = stats.load_results(tmp_path)
    pd.testing.assert_series_equal(loaded["cvar_0.1"], with_cvar["cvar_0.1"])
    risk = stats.risk_summaries(loaded)
    assert list(risk) == [0.1]
    for (teacher, challenge, expert), scores in FINAL.items():
        row = risk[0.1][
            (risk[0.1].teacher == teacher)
            & (risk[0.1].challenge == challenge)
            & (risk[0.1].expert == expert)
        ].iloc[0]
        assert row["mean"] == pytest.approx(np.mean(scores) / 2)
        if teacher != "random":
            base = [s / 2 for s in FINAL[("random", challenge, expert)]]
            expected = scipy_stats.ttest_ind([s / 2 for s in scores], base, equal_var=False).pvalue
            assert row["p_value"] == pytest.approx(expected)
    text = tables.risk_markdown(risk)
    assert "CVaR at alpha = 0.1" in text and "27.5 ± 1.4" in text  # alp_gmm default / 2
    paths = report.write_report(loaded, tmp_path / "report", reps=50)
    assert "Risk: CVaR at alpha = 0.1" in paths["summary.md"].read_text()
    assert json.loads(paths["summary.json"].read_text())["risk"]["0.1"]
