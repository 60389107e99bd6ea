"""Benchmark report: tables, statistics and figures from a tidy results table.

TeachMyAgent-style (Romac et al. 2021): teachers x challenge settings x seeds, scored by the
final "% mastered" of a fixed test set, reported as mean +- standard error over seeds with
Welch's t-test against the Random teacher, plus rliable's IQM with stratified-bootstrap CIs,
performance profiles, a radar chart normalised by Random, and learning curves.

Input, RESULTS_DIR/results.csv: one row per (teacher, challenge, expert, seed, evaluation) with
the columns in COLUMNS. A *run* is (teacher, challenge, expert, seed) and its final score is its
row with the largest env_steps. A *setting* is (challenge, expert), labelled "default",
"unfeasible", "default / expert high", ... (expert "none" gives just the challenge).

python -m acl.benchmark.report RESULTS_DIR [--out DIR] [--baseline random] [--reps 2000]
    [--metric final|mean]
prints the Markdown table and, with --out, writes the report files (see write_report).
`--metric mean` scores each run by its mean % mastered over all its evaluations (the area
under its learning curve, divided by the number of evaluations) instead of its final one:
it tells apart teachers that all reach a ceiling at different speeds.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import math
import sys
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from acl.benchmark.challenges import CHALLENGES
from acl.benchmark.challenges import EXPERT_LEVELS as EXPERTS
from acl.core.errors import ConfigError
from acl.core.risk import CVAR_ALPHAS
from acl.run.results import format_mean_se, mean_se, mean_se_by_step

CVAR_COLUMNS = tuple(f"cvar_{a}" for a in CVAR_ALPHAS)
"""CVaR of per-task success over the test set at each alpha (acl.core.risk.test_set_cvar), per
run and evaluation; NaN without at least 2 sampled attempts per test task."""
COLUMNS = (
    "suite",
    "env",
    "teacher",
    "challenge",
    "expert",
    "seed",
    "env_steps",
    "pct_mastered",
    "mean_return",
    "train_return",
    *CVAR_COLUMNS,
)
"""results.csv's columns; the CVaR ones may be absent from older files (read as NaN)."""
STRING_COLUMNS = ("suite", "env", "teacher", "challenge", "expert")
RUN_KEYS = ["teacher", "challenge", "expert", "seed"]
# Settings are displayed in the order of challenges.CHALLENGES and EXPERT_LEVELS; names
# outside those lists go last, alphabetically.
ALPHA = 0.05
REPORT_FILES = (
    "summary.md",
    "summary.tex",
    "summary.json",
    "iqm.png",
    "profiles.png",
    "radar.png",
    "curves.png",
)


# ----------------------------------------------------------------------------- loading, slicing


def load_results(results_dir: str | Path) -> pd.DataFrame:
    """RESULTS_DIR/results.csv (or that file itself) as a DataFrame with the COLUMNS.

    String columns stay strings ("none" is a value, not a missing one); seed and env_steps are
    int64; the score columns float64. Raises ConfigError if the file or a column is missing, a
    number does not parse, or a (run, env_steps) row appears twice.
    """
    path = Path(results_dir)
    file = path if path.suffix == ".csv" else path / "results.csv"
    if not file.is_file():
        raise ConfigError(f"results file not found: {file}")
    # keep_default_na=False: pandas would otherwise read a "None"/"NA" name as missing.
    df = pd.read_csv(
        file,
        dtype={c: str for c in STRING_COLUMNS},
        keep_default_na=False,
        na_values={c: [""] for c in CVAR_COLUMNS},
    )
    for column in CVAR_COLUMNS:  # results written before the CVaR columns existed
        if column not in df.columns:
            df[column] = np.nan
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ConfigError(f"{file} lacks column(s) {missing}; it has {list(df.columns)}")
    if df.empty:
        raise ConfigError(f"{file} has no rows")
    df = df[list(COLUMNS)].copy()
    for column, dtype in (
        ("seed", "int64"),
        ("env_steps", "int64"),
        ("pct_mastered", "float64"),
        ("mean_return", "float64"),
        ("train_return", "float64"),
        *((column, "float64") for column in CVAR_COLUMNS),
    ):
        try:
            df[column] = pd.to_numeric(df[column], errors="raise").astype(dtype)
        except (ValueError, TypeError) as err:
            raise ConfigError(f"{file}: column {column!r} is not numeric ({err})") from err
    duplicated = df.duplicated(RUN_KEYS + ["env_steps"])
    if duplicated.any():
        first = df.loc[duplicated, RUN_KEYS + ["env_steps"]].iloc[0].to_dict()
        raise ConfigError(
            f"{file}: {int(duplicated.sum())} duplicate (teacher, challenge, expert, seed, "
            f"env_steps) row(s), e.g. {first}; several suites or envs in one file?"
        )
    return df


def load_provenance(results_dir: str | Path) -> dict | None:
    """RESULTS_DIR/provenance.json, or None when there is none."""
    path = Path(results_dir)
    file = (path.parent if path.suffix == ".csv" else path) / "provenance.json"
    return json.loads(file.read_text()) if file.is_file() else None


def _as_list(values: Any) -> list | None:
    if values is None:
        return None
    if isinstance(values, str | int | np.integer):
        return [values]
    return list(values)


def select(
    df: pd.DataFrame,
    teachers: Iterable[str] | str | None = None,
    challenges: Iterable[str] | str | None = None,
    experts: Iterable[str] | str | None = None,
    seeds: Iterable[int] | int | None = None,
) -> pd.DataFrame:
    """The rows whose teacher/challenge/expert/seed are in the given lists (None = all).

    A single name is accepted for a list of one. Raises ConfigError naming the values that
    exist when a requested value is absent, or when the combination selects no row.
    """
    mask = pd.Series(True, index=df.index)
    for column, wanted in (
        ("teacher", teachers),
        ("challenge", challenges),
        ("expert", experts),
        ("seed", seeds),
    ):
        wanted = _as_list(wanted)
        if wanted is None:
            continue
        present = sorted(df[column].unique().tolist())
        if column == "seed":
            wanted = [int(s) for s in wanted]
        unknown = [w for w in wanted if w not in present]
        if unknown:
            raise ConfigError(f"unknown {column}(s) {unknown}; the results have {present}")
        mask &= df[column].isin(wanted)
    out = df[mask].reset_index(drop=True)
    if out.empty:
        raise ConfigError(
            "the selection matches no row: "
            f"teachers={teachers}, challenges={challenges}, experts={experts}, seeds={seeds}"
        )
    return out


# ----------------------------------------------------------------------------- ordering


def setting_label(challenge: str, expert: str) -> str:
    """'default', 'default / expert high', ...: expert 'none' gives just the challenge."""
    return challenge if expert == "none" else f"{challenge} / expert {expert}"


def _rank(value: str, order: tuple[str, ...]) -> tuple[int, str]:
    return (order.index(value), "") if value in order else (len(order), value)


def _setting_key(pair: tuple[str, str]) -> tuple:
    # Grouped by expert level first, as TeachMyAgent's tables are: default, unfeasible, ...,
    # then default / expert high, ...
    return (_rank(pair[1], EXPERTS), _rank(pair[0], CHALLENGES))


def settings(df: pd.DataFrame) -> list[tuple[str, str]]:
    """The (challenge, expert) pairs present: by expert (EXPERTS order), then challenge
    (CHALLENGES order); unknown names after known ones, alphabetically."""
    return sorted(set(zip(df["challenge"], df["expert"])), key=_setting_key)


def teachers(df: pd.DataFrame, baseline: str = "random") -> list[str]:
    """Teachers present: the baseline first, then the others alphabetically."""
    names = sorted(set(df["teacher"]))
    return ([baseline] if baseline in names else []) + [n for n in names if n != baseline]


def _with_setting(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["setting"] = [setting_label(c, e) for c, e in zip(df["challenge"], df["expert"])]
    return df


def _rows_of(df: pd.DataFrame, teacher: str, challenge: str, expert: str) -> pd.DataFrame:
    """The rows of one teacher in one setting."""
    chosen = (df["teacher"] == teacher) & (df["challenge"] == challenge)
    return df[chosen & (df["expert"] == expert)]


def _check_baseline(df: pd.DataFrame, baseline: str) -> None:
    if baseline not in set(df["teacher"]):
        raise ConfigError(
            f"baseline teacher {baseline!r} is not in the results; "
            f"teachers: {sorted(set(df['teacher']))}"
        )


# ----------------------------------------------------------------------------- statistics


def final_scores(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run (teacher, challenge, expert, seed): its row with the largest env_steps,
    plus a `setting` label column. Sorted by teacher, challenge, expert, seed."""
    last = df.loc[df.groupby(RUN_KEYS, sort=False)["env_steps"].idxmax()]
    return _with_setting(last).sort_values(RUN_KEYS).reset_index(drop=True)


METRICS = ("final", "mean")


def as_metric(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """`df` scored by `metric`: "final" leaves it as is; "mean" gives one row per run, at its
    last env_steps, whose pct_mastered is the run's mean over its evaluations."""
    if metric not in METRICS:
        raise ConfigError(f"metric must be one of {METRICS}, got {metric!r}")
    if metric == "final":
        return df
    last = df.loc[df.groupby(RUN_KEYS, sort=False)["env_steps"].idxmax()].copy()
    means = df.groupby(RUN_KEYS, sort=False)["pct_mastered"].mean()
    last["pct_mastered"] = means.loc[pd.MultiIndex.from_frame(last[RUN_KEYS])].to_numpy()
    last = last.reset_index(drop=True)
    last.attrs["metric"] = metric
    return last


def welch_p(a: Iterable[float], b: Iterable[float]) -> float:
    """Two-sided p-value of Welch's t-test (unequal variances); NaN when a side has < 2 values.

    Passed through from scipy: two constant samples give p = 0 when their values differ and
    NaN when they are equal (zero variance leaves the t statistic infinite or undefined).
    """
    from scipy import stats

    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.size < 2 or b.size < 2:
        return math.nan
    with np.errstate(all="ignore"), _quiet_runtime_warnings():
        return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


@contextlib.contextmanager
def _quiet_runtime_warnings() -> Iterator[None]:
    with warnings.catch_warnings():
        # scipy warns about precision loss on (nearly) constant samples: common at 0 or 100 %.
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def summary(
    df: pd.DataFrame, baseline: str = "random", column: str = "pct_mastered"
) -> pd.DataFrame:
    """Final % mastered (or another score `column`, e.g. "cvar_0.1") per (teacher,
    setting), one row each (the long table).

    Columns: teacher, setting, challenge, expert, n (runs), mean, se (std ddof=1 / sqrt(n);
    NaN for n = 1), p_value (Welch's t-test against the baseline's runs in the same setting;
    NaN for the baseline itself, when either side has n < 2, or when the baseline lacks the
    setting), significant (p_value < 0.05; False where NaN), baseline_mean, normalised
    (mean / baseline_mean) and baseline.

    A zero baseline mean leaves the ratio undefined: normalised is 1.0 when the teacher's mean
    is 0 too (it does as well as the baseline) and NaN otherwise. Rows are ordered baseline
    first, then teachers alphabetically, then settings (see `settings`). `df` may hold every
    evaluation; only each run's final one counts.
    """
    _check_baseline(df, baseline)
    final = final_scores(df)
    rows = []
    for teacher in teachers(final, baseline):
        for challenge, expert in settings(final):
            cell = _rows_of(final, teacher, challenge, expert)
            if cell.empty:
                continue
            base = _rows_of(final, baseline, challenge, expert)[column]
            base = base.to_numpy(np.float64)
            scores = cell[column].to_numpy(np.float64)
            n = scores.size
            mean, se = mean_se(scores)
            p = math.nan if teacher == baseline else welch_p(scores, base)
            base_mean = float(base.mean()) if base.size else math.nan
            if base_mean == 0.0:
                normalised = 1.0 if mean == 0.0 else math.nan
            else:
                normalised = mean / base_mean
            rows.append(
                {
                    "teacher": teacher,
                    "setting": setting_label(challenge, expert),
                    "challenge": challenge,
                    "expert": expert,
                    "n": n,
                    "mean": mean,
                    "se": se,
                    "p_value": p,
                    "significant": bool(p < ALPHA) if not math.isnan(p) else False,
                    "baseline_mean": base_mean,
                    "normalised": normalised,
                    "baseline": baseline,
                }
            )
    table = pd.DataFrame(rows)
    table.attrs["metric"] = df.attrs.get("metric", "final")
    return table


def ranks(df: pd.DataFrame, baseline: str = "random", tie: float = 0.05) -> pd.DataFrame:
    """Each teacher's rank per setting (1 = best): by the mean final % mastered, where
    teachers within `tie` points of the first of their group (taken in that order) are
    ordered by their mean % mastered over the evaluations (`as_metric(df, "mean")`);
    equal on both, equal rank. One row per teacher, one column per setting label, then
    "mean rank". `df` must hold every evaluation for the tie-break to see the curves."""
    primary = summary(df, baseline)
    secondary = summary(as_metric(df, "mean"), baseline).set_index(["teacher", "setting"])
    labels = list(dict.fromkeys(primary["setting"]))
    table = pd.DataFrame(index=teachers(final_scores(df), baseline), columns=labels, dtype=float)
    for label in labels:
        cell = primary[primary["setting"] == label].sort_values("mean", ascending=False)
        entries = [
            (row.teacher, row.mean, secondary.loc[(row.teacher, label), "mean"])
            for row in cell.itertuples()
        ]
        groups: list[list[tuple]] = []
        for entry in entries:
            if groups and groups[-1][0][1] - entry[1] <= tie:
                groups[-1].append(entry)
            else:
                groups.append([entry])
        ordered = [e for group in groups for e in sorted(group, key=lambda e: -e[2])]
        for position, (teacher, first, second) in enumerate(ordered):
            rank = position + 1
            if position:
                prev_teacher, prev_first, prev_second = ordered[position - 1]
                if abs(prev_first - first) <= tie and prev_second == second:
                    rank = table.loc[prev_teacher, label]
            table.loc[teacher, label] = rank
    table["mean rank"] = table[labels].mean(axis=1)
    return table


def ranks_markdown(table: pd.DataFrame) -> str:
    lines = [
        "",
        "Ranks per setting (1 = best; by final % mastered, ties within 0.05 points broken "
        "by the mean over the evaluations):",
        "",
        "| teacher | " + " | ".join(table.columns) + " |",
        "|---|" + "---:|" * len(table.columns),
    ]
    for teacher, row in table.iterrows():
        cells = [f"{v:.0f}" if c != "mean rank" else f"{v:.1f}" for c, v in row.items()]
        lines.append(f"| {teacher} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _final_of(final: pd.DataFrame, teacher: str, challenge: str, expert: str = "none"):
    return _rows_of(final, teacher, challenge, expert)["pct_mastered"].to_numpy(np.float64)


def _mean_se(values: np.ndarray) -> str:
    return format_mean_se(*mean_se(values))


def teachmyagent_findings(df: pd.DataFrame, baseline: str = "random") -> list[dict]:
    """TeachMyAgent's four qualitative findings on its challenges, checked on `df`.

    Each entry: `finding`, `verdict` ("holds", "fails" or "not measured": a cell it needs
    is missing) and `evidence` (the numbers, mean ± SE of final % mastered, and Welch's
    p). The rules, each a two-sided Welch test at ALPHA:

    1. ALP-GMM is robust to unfeasible spaces: under "unfeasible" it beats the baseline
       and is not significantly below its own "default" score.
    2. Expert knowledge helps most on mostly unfeasible spaces: for each teacher with an
       expert-high cell, the gain (expert high - none) under "unfeasible" is the largest
       over the challenges it ran, and positive.
    3. Random is hard to beat on trivial spaces: no teacher is significantly above the
       baseline under "trivial".
    4. RIAC and Covar-GMM suffer from rugged difficulty: each is significantly below its
       own "default" score under "rugged".

    Two more, checked only when the teachers they name are in `df`:

    5. ADR relies on expert knowledge: without it, ADR's mean is below its expert-high
       mean on every challenge that has both, significantly on at least one, and below
       the baseline's under "unfeasible".
    6. Teachers that use no expert knowledge are competitive: on the settings without an
       expert, the best IQM (interquartile mean of final scores over runs x settings) of
       ALP-GMM, Covar-GMM and RIAC is at least the best of ADR, SPDL, GoalGAN and
       Setter-Solver (TeachMyAgent's abstract).
    """
    final = final_scores(df)
    names = set(final["teacher"])
    results = []

    def add(finding: str, verdict: str, evidence: str) -> None:
        results.append({"finding": finding, "verdict": verdict, "evidence": evidence})

    alp_unf, alp_def = (
        _final_of(final, "alp_gmm", "unfeasible"),
        _final_of(final, "alp_gmm", "default"),
    )
    base_unf = _final_of(final, baseline, "unfeasible")
    finding = "ALP-GMM is robust to unfeasible spaces"
    if min(alp_unf.size, alp_def.size, base_unf.size) < 2:
        add(finding, "not measured", "needs alp_gmm and the baseline under default and unfeasible")
    else:
        p_base, p_own = welch_p(alp_unf, base_unf), welch_p(alp_unf, alp_def)
        beats = alp_unf.mean() > base_unf.mean() and p_base < ALPHA
        kept = alp_unf.mean() >= alp_def.mean() or not p_own < ALPHA
        add(
            finding,
            "holds" if beats and kept else "fails",
            f"unfeasible: alp_gmm {_mean_se(alp_unf)} vs {baseline} {_mean_se(base_unf)} "
            f"(p = {p_base:.2g}); alp_gmm default {_mean_se(alp_def)} (p = {p_own:.2g})",
        )

    finding = "Expert knowledge helps most on mostly unfeasible spaces"
    parts, verdicts, flat = [], [], []
    for teacher in sorted(names):
        gains = {}
        for challenge in CHALLENGES:
            high, none = (
                _final_of(final, teacher, challenge, "high"),
                _final_of(final, teacher, challenge),
            )
            if high.size and none.size:
                gains[challenge] = high.mean() - none.mean()
        if "unfeasible" not in gains or len(gains) < 2:
            continue
        listed = ", ".join(f"{c} {g:+.1f}" for c, g in gains.items())
        if max(abs(g) for g in gains.values()) == 0:
            flat.append(teacher)
            continue
        best = max(gains, key=gains.get)
        verdicts.append(best == "unfeasible" and gains["unfeasible"] > 0)
        parts.append(f"{teacher}: gain of expert high over none: {listed}")
    if not verdicts:
        add(
            finding,
            "not measured",
            f"the prior changes no score of {', '.join(flat)} (every gain is 0: scores at a "
            "ceiling or floor)"
            if flat
            else "needs expert-high cells under unfeasible and another challenge",
        )
    else:
        add(finding, "holds" if all(verdicts) else "fails", "; ".join(parts))

    finding = "Random is hard to beat on trivial spaces"
    base_triv = _final_of(final, baseline, "trivial")
    rows = []
    above = False
    for teacher in sorted(names - {baseline}):
        scores = _final_of(final, teacher, "trivial")
        if scores.size < 2 or base_triv.size < 2:
            continue
        p = welch_p(scores, base_triv)
        above |= scores.mean() > base_triv.mean() and p < ALPHA
        rows.append(f"{teacher} {_mean_se(scores)} (p = {p:.2g})")
    if not rows:
        add(finding, "not measured", "needs the baseline and a teacher under trivial")
    else:
        add(
            finding,
            "fails" if above else "holds",
            f"trivial: {baseline} {_mean_se(base_triv)}; " + ", ".join(rows),
        )

    finding = "RIAC and Covar-GMM suffer from rugged difficulty"
    rows, verdicts = [], []
    for teacher in sorted(names - {baseline}):
        rugged, default = _final_of(final, teacher, "rugged"), _final_of(final, teacher, "default")
        if min(rugged.size, default.size) < 2:
            continue
        p = welch_p(rugged, default)
        if teacher in ("riac", "covar_gmm"):
            verdicts.append(rugged.mean() < default.mean() and p < ALPHA)
        rows.append(
            f"{teacher} default {_mean_se(default)} -> rugged {_mean_se(rugged)} (p = {p:.2g})"
        )
    if not verdicts:
        add(finding, "not measured", "needs riac or covar_gmm under default and rugged")
    else:
        add(finding, "holds" if all(verdicts) else "fails", "; ".join(rows))

    if "adr" in names:
        finding = "ADR relies on expert knowledge"
        rows, below, significant = [], [], []
        for challenge in CHALLENGES:
            none, high = (
                _final_of(final, "adr", challenge),
                _final_of(final, "adr", challenge, "high"),
            )
            if min(none.size, high.size) < 2:
                continue
            p = welch_p(none, high)
            below.append(none.mean() < high.mean())
            significant.append(none.mean() < high.mean() and p < ALPHA)
            rows.append(f"{challenge}: none {_mean_se(none)}, high {_mean_se(high)} (p = {p:.2g})")
        adr_unf = _final_of(final, "adr", "unfeasible")
        if not rows or adr_unf.size < 2 or base_unf.size < 2:
            add(finding, "not measured", "needs adr with and without the expert, and unfeasible")
        else:
            p = welch_p(adr_unf, base_unf)
            worse = adr_unf.mean() < base_unf.mean()
            rows.append(f"unfeasible: adr {_mean_se(adr_unf)} vs {baseline} (p = {p:.2g})")
            holds = all(below) and any(significant) and worse
            add(finding, "holds" if holds else "fails", "; ".join(rows))

    no_prior = sorted(names & {"alp_gmm", "covar_gmm", "riac"})
    with_prior = sorted(names & {"adr", "spdl", "goal_gan", "setter_solver"})
    if no_prior and with_prior:
        from scipy import stats

        finding = "Teachers that use no expert knowledge are competitive"
        plain = final[final["expert"] == "none"]
        iqm = {
            t: float(stats.trim_mean(plain[plain["teacher"] == t]["pct_mastered"], 0.25))
            for t in no_prior + with_prior
        }
        best_plain, best_prior = (max(group, key=iqm.get) for group in (no_prior, with_prior))
        add(
            finding,
            "holds" if iqm[best_plain] >= iqm[best_prior] else "fails",
            "IQM of the runs' scores (% mastered) without an expert: "
            + ", ".join(f"{t} {iqm[t]:.1f}" for t in no_prior + with_prior),
        )
    return results


def findings_markdown(findings: list[dict]) -> str:
    lines = ["", "TeachMyAgent's findings, checked here (Welch's t-test, p < 0.05):", ""]
    for entry in findings:
        lines.append(f"- **{entry['finding']}: {entry['verdict']}.** {entry['evidence']}")
    return "\n".join(lines) + "\n"


def per_seed_table(df: pd.DataFrame, baseline: str = "random") -> pd.DataFrame:
    """Final % mastered of every run: index (teacher, seed), one column per setting; NaN where
    a (teacher, seed) has no run in that setting."""
    final = final_scores(df)
    table = final.pivot(index=["teacher", "seed"], columns="setting", values="pct_mastered")
    order = [setting_label(c, e) for c, e in settings(final)]
    rows = [(t, s) for t in teachers(final, baseline) for s in sorted(set(final["seed"]))]
    table = table.reindex(columns=order)
    return table.reindex([r for r in rows if r in table.index])


# ----------------------------------------------------------------------------- tables


def _fmt_cell(row: pd.Series, pm: str, star: str) -> str:
    return format_mean_se(row["mean"], row["se"], pm=pm) + (star if row["significant"] else "")


def _grid(summ: pd.DataFrame, pm: str, star: str) -> tuple[list[str], list[str], dict]:
    """Row order (teachers), column order (settings) and {(teacher, setting): cell text}."""
    rows = list(dict.fromkeys(summ["teacher"]))
    columns = [setting_label(c, e) for c, e in settings(summ)]
    cells = {(r["teacher"], r["setting"]): _fmt_cell(r, pm, star) for _, r in summ.iterrows()}
    return rows, columns, cells


def _note(summ: pd.DataFrame, latex: bool = False) -> str:
    counts = sorted(set(summ["n"]))
    n = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    baseline = summ["baseline"].iloc[0]
    score = summ.attrs.get("score") or (
        "Mean % mastered over the evaluations"
        if summ.attrs.get("metric") == "mean"
        else "Final % mastered"
    )
    if latex:
        return (
            f"{latex_escape(score)} of the test set, mean $\\pm$ SE over {n} seeds; "
            f"$^{{*}}$ $p < 0.05$, Welch's $t$-test against {latex_escape(baseline)} "
            "in the same setting."
        )
    return (
        f"{score} of the test set, mean ± SE over {n} seeds; * p < 0.05, "
        f"Welch's t-test against {baseline} in the same setting."
    )


def markdown_table(summ: pd.DataFrame) -> str:
    """A Markdown table of `summary(...)`: teachers as rows (baseline first), settings as
    columns, cells 'mean ± SE' with '*' when significant, followed by a one-line note."""
    rows, columns, cells = _grid(summ, "±", "*")
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    lines = [
        "| teacher | " + " | ".join(esc(c) for c in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for teacher in rows:
        values = [esc(cells.get((teacher, c), "–")) for c in columns]
        lines.append(f"| {esc(teacher)} | " + " | ".join(values) + " |")
    return "\n".join(lines) + "\n\n" + _note(summ) + "\n"


def risk_summaries(df: pd.DataFrame, baseline: str = "random") -> dict[float, pd.DataFrame]:
    """{alpha: `summary` of the final CVaR of per-task success over the test set, in %} for
    each alpha the results have (runs evaluated with >= 2 sampled attempts per task)."""
    tables = {}
    for alpha, column in zip(CVAR_ALPHAS, CVAR_COLUMNS, strict=True):
        measured = df.dropna(subset=[column])
        if measured.empty or baseline not in set(measured["teacher"]):
            continue
        summ = summary(measured.assign(**{column: 100.0 * measured[column]}), baseline, column)
        summ.attrs["score"] = f"Final CVaR at alpha = {alpha} of per-task success (%)"
        tables[alpha] = summ
    return tables


def risk_markdown(tables: dict[float, pd.DataFrame]) -> str:
    """The `risk_summaries` tables, one section per alpha; "" without any."""
    return "".join(
        f"\n### Risk: CVaR at alpha = {alpha}\n\n" + markdown_table(summ)
        for alpha, summ in tables.items()
    )


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters (_, %, &, ...) in plain text."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def latex_table(summ: pd.DataFrame) -> str:
    """The Markdown table's content as a booktabs LaTeX table (needs \\usepackage{booktabs})."""
    rows, columns, cells = _grid(summ, "$\\pm$", "$^{*}$")
    note = _note(summ, latex=True)
    lines = [
        "% Generated by acl.benchmark.report; needs \\usepackage{booktabs}.",
        "\\begin{table}[t]",
        "\\centering",
        "\\begin{tabular}{l" + "c" * len(columns) + "}",
        "\\toprule",
        "Teacher & " + " & ".join(latex_escape(c) for c in columns) + " \\\\",
        "\\midrule",
    ]
    for teacher in rows:
        # Cells are built from numbers and fixed markup, so only the names are escaped.
        values = [cells.get((teacher, c), "--") for c in columns]
        lines.append(latex_escape(teacher) + " & " + " & ".join(values) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{note}}}", "\\end{table}"]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- rliable


def _rliable():
    """rliable's (library, metrics, plot_utils) modules.

    rliable 1.2.0 needs arch < 8, and arch 7.x calls pandas' private `deprecate_kwarg` with its
    pandas-2 signature, which pandas 3 changed (a warning class comes first). Importing arch with
    an adapter in place, then restoring pandas' function, is enough for the bootstrap code used.
    """
    if "rliable.library" not in sys.modules:
        import pandas.util._decorators as decorators

        original = decorators.deprecate_kwarg
        params = list(inspect.signature(original).parameters)
        if params and params[0] == "klass":

            def compat(old_arg_name, new_arg_name, mapping=None, stacklevel=2):
                return original(FutureWarning, old_arg_name, new_arg_name, mapping, stacklevel)

            decorators.deprecate_kwarg = compat
        try:
            import rliable.library  # noqa: F401
        finally:
            decorators.deprecate_kwarg = original
    from rliable import library, metrics, plot_utils

    return library, metrics, plot_utils


@contextlib.contextmanager
def _numpy_seed(seed: int) -> Iterator[None]:
    """Seed numpy's global RNG for the block, then put the caller's state back.

    rliable 1.2.0's StratifiedBootstrap draws its resampling indices with np.random.choice
    (the global RNG) whatever random_state says, so this is what makes its CIs reproducible.
    """
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def score_matrices(
    df: pd.DataFrame, baseline: str = "random"
) -> tuple[dict[str, np.ndarray], list[str], list[int]]:
    """Final fraction mastered (pct / 100) per teacher as a [runs, settings] matrix for rliable.

    rliable needs the same rectangular shape for every teacher, so only the settings that every
    teacher has and the seeds that every such (teacher, setting) has are kept; row i of each
    matrix is seed seeds[i]. Returns (matrices, setting labels, seeds). Raises ConfigError when
    nothing is common to all.
    """
    final = final_scores(df)
    names = teachers(final, baseline)
    cell_seeds = final.groupby(["teacher", "challenge", "expert"])["seed"].agg(set).to_dict()
    common_settings = [p for p in settings(final) if all((t, *p) in cell_seeds for t in names)]
    seed_sets = [cell_seeds[(t, *p)] for t in names for p in common_settings]
    seeds = sorted(set.intersection(*seed_sets)) if seed_sets else []
    if not seeds:
        raise ConfigError(
            "no (setting, seed) is common to every teacher; rliable needs a rectangular "
            "[runs, settings] matrix per teacher"
        )
    indexed = final.set_index(["teacher", "challenge", "expert", "seed"])["pct_mastered"]
    matrices = {
        t: np.array(
            [[indexed[(t, c, e, s)] / 100.0 for c, e in common_settings] for s in seeds],
            dtype=np.float64,
        )
        for t in names
    }
    return matrices, [setting_label(c, e) for c, e in common_settings], seeds


def iqm_table(
    df: pd.DataFrame,
    baseline: str = "random",
    reps: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """IQM of the final fraction mastered over all runs and settings, per teacher, with a
    percentile stratified-bootstrap CI (rliable, resampling runs within each setting).

    Columns: teacher, iqm, ci_low, ci_high, runs (seeds used), settings (count). Uses
    `score_matrices`; `attrs` records the seeds and settings used, reps, seed and confidence.
    """
    library, metrics, _ = _rliable()
    matrices, labels, seeds = score_matrices(df, baseline)
    iqm = lambda scores: np.array([metrics.aggregate_iqm(scores)])  # noqa: E731
    with _numpy_seed(seed):
        points, intervals = library.get_interval_estimates(
            matrices, iqm, reps=reps, confidence_interval_size=confidence
        )
    table = pd.DataFrame(
        [
            {
                "teacher": t,
                "iqm": float(points[t][0]),
                "ci_low": float(intervals[t][0, 0]),
                "ci_high": float(intervals[t][1, 0]),
                "runs": len(seeds),
                "settings": len(labels),
            }
            for t in matrices
        ]
    )
    table.attrs.update(
        seeds=seeds, setting_labels=labels, reps=reps, bootstrap_seed=seed, confidence=confidence
    )
    return table


def performance_profiles(
    df: pd.DataFrame,
    baseline: str = "random",
    reps: int = 2000,
    seed: int = 0,
    taus: np.ndarray | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """rliable score-distribution profiles: fraction of (run, setting) scores above each tau.

    Returns (taus [T], {teacher: profile [T]}, {teacher: 95% CI [2, T]}); taus default to 51
    thresholds on [0, 1] (fraction of the test set mastered).
    """
    library, _, _ = _rliable()
    matrices, _, _ = score_matrices(df, baseline)
    taus = np.linspace(0.0, 1.0, 51) if taus is None else np.asarray(taus, np.float64)
    with _numpy_seed(seed):
        profiles, cis = library.create_performance_profile(matrices, taus, reps=reps)
    return taus, profiles, cis


# ----------------------------------------------------------------------------- figures


def teacher_colors(names: Iterable[str]) -> dict[str, tuple]:
    """One tab10 colour per teacher, in the given order, so every figure agrees."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {name: cmap(i % 10) for i, name in enumerate(names)}


def plot_iqm(iqm: pd.DataFrame):
    """IQM point estimates with their bootstrap CIs (rliable's interval plot). Returns the
    matplotlib Figure."""
    _, _, plot_utils = _rliable()
    names = list(iqm["teacher"])
    points = {r["teacher"]: np.array([r["iqm"]]) for _, r in iqm.iterrows()}
    intervals = {r["teacher"]: np.array([[r["ci_low"]], [r["ci_high"]]]) for _, r in iqm.iterrows()}
    fig, ax = plot_utils.plot_interval_estimates(
        points,
        intervals,
        metric_names=["IQM"],
        algorithms=names,
        colors=teacher_colors(names),
        subfigure_width=5.0,
        row_height=0.6,
        xlabel="",
    )
    # rliable places its x label at a fixed figure height, over the ticks of a short figure.
    ax.set_xlabel("final fraction of the test set mastered (95% CI)", fontsize="x-large")
    return fig


def plot_profiles(taus: np.ndarray, profiles: dict, cis: dict):
    """Performance profiles with their bootstrap bands (rliable). Returns the Figure."""
    import matplotlib.pyplot as plt

    _, _, plot_utils = _rliable()
    fig, ax = plt.subplots(figsize=(6, 4))
    plot_utils.plot_performance_profiles(
        profiles,
        taus,
        performance_profile_cis=cis,
        colors=teacher_colors(profiles),
        ax=ax,
        xlabel=r"fraction of the test set mastered ($\tau$)",
        ylabel=r"fraction of runs with score $> \tau$",
        labelsize="medium",
        ticklabelsize="medium",
    )
    ax.legend(loc="upper right")
    fig.tight_layout()
    return fig


def plot_radar(summ: pd.DataFrame):
    """TeachMyAgent-style radar: each teacher's mean / baseline mean, one axis per setting.

    With fewer than 3 settings a polygon says nothing, so it falls back to grouped bars. A
    NaN ratio (zero baseline, see `summary`) leaves a gap. Returns the Figure.
    """
    import matplotlib.pyplot as plt

    rows, columns, _ = _grid(summ, "±", "*")
    values = summ.pivot(index="teacher", columns="setting", values="normalised")
    values = values.reindex(index=rows, columns=columns)
    colors = teacher_colors(rows)
    baseline = summ["baseline"].iloc[0]
    label = f"mean % mastered / {baseline}'s"
    if len(columns) < 3:
        fig, ax = plt.subplots(figsize=(6, 4))
        width = 0.8 / len(rows)
        x = np.arange(len(columns))
        for i, teacher in enumerate(rows):
            ax.bar(x + i * width, values.loc[teacher], width, label=teacher, color=colors[teacher])
        ax.set_xticks(x + width * (len(rows) - 1) / 2, columns)
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_ylabel(label)
        ax.legend()
    else:
        fig, ax = plt.subplots(figsize=(6, 6), subplot_kw={"projection": "polar"})
        angles = np.linspace(0, 2 * np.pi, len(columns), endpoint=False)
        closed = np.append(angles, angles[0])
        for teacher in rows:
            v = values.loc[teacher].to_numpy(np.float64)
            ax.plot(closed, np.append(v, v[0]), label=teacher, color=colors[teacher], lw=2)
            ax.fill(closed, np.nan_to_num(np.append(v, v[0])), color=colors[teacher], alpha=0.1)
        ax.set_xticks(angles, columns)
        ax.set_rlabel_position(90 / len(columns))
        finite = values.to_numpy(np.float64)
        top = np.nanmax(finite) if np.isfinite(finite).any() else 1.0
        ax.set_ylim(0, max(1.0, top) * 1.1)
        ax.set_title(label, pad=20)
        ax.legend(loc="upper right", bbox_to_anchor=(1.3, 1.1))
    fig.tight_layout()
    return fig


def plot_curves(df: pd.DataFrame, baseline: str = "random"):
    """% mastered vs env steps, mean +- SE band over seeds: one panel per setting, one line per
    teacher. Returns the Figure."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter

    data = _with_setting(df)
    pairs = settings(data)
    names = teachers(data, baseline)
    colors = teacher_colors(names)
    ncols = min(3, len(pairs))
    nrows = math.ceil(len(pairs) / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(4.5 * ncols, 3.5 * nrows), squeeze=False, sharey=True
    )
    for ax, (challenge, expert) in zip(axes.flat, pairs):
        for teacher in names:
            runs = _rows_of(data, teacher, challenge, expert)
            if runs.empty:
                continue
            steps, mean, se = mean_se_by_step(runs, "pct_mastered")
            ax.plot(steps, mean, label=teacher, color=colors[teacher])
            ax.fill_between(steps, mean - se, mean + se, color=colors[teacher], alpha=0.2)
        ax.set_title(setting_label(challenge, expert))
        ax.set_xlabel("env steps per seed")
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 800k, not 800000
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("% mastered (test set)")
    for ax in list(axes.flat)[len(pairs) :]:
        ax.set_visible(False)
    axes.flat[0].legend()
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- report


def _jsonable(value: Any) -> Any:
    """Plain JSON values: numpy scalars unwrapped, NaN/inf as null (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_report(
    results: pd.DataFrame | str | Path,
    out_dir: str | Path,
    baseline: str = "random",
    reps: int = 2000,
    seed: int = 0,
    metric: str = "final",
) -> dict[str, Path]:
    """Write the report files (REPORT_FILES) into out_dir; returns {file name: path}.

    `results` is a results DataFrame (possibly a `select` slice) or a results directory.
    summary.md / summary.tex: the mean ± SE table; summary.json: the long summary table, the
    IQM CIs (with the seeds and settings they use) and provenance.json when present;
    iqm.png, profiles.png, radar.png, curves.png: the figures. `reps` bootstrap resamples with
    numpy seed `seed` keep the CIs reproducible. `metric` ("final" or "mean", `as_metric`)
    scores every table, statistic and figure but the learning curves.
    """
    import matplotlib.pyplot as plt

    provenance = None
    if not isinstance(results, pd.DataFrame):
        provenance = load_provenance(results)
        results = load_results(results)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in REPORT_FILES}

    curves = results
    results = as_metric(results, metric)
    summ = summary(results, baseline)
    iqm = iqm_table(results, baseline, reps=reps, seed=seed)
    taus, profiles, cis = performance_profiles(results, baseline, reps=reps, seed=seed)
    findings = teachmyagent_findings(results, baseline)
    ranked = ranks(curves, baseline) if metric == "final" else None
    risk = risk_summaries(results, baseline) if metric == "final" else {}
    paths["summary.md"].write_text(
        markdown_table(summ)
        + risk_markdown(risk)
        + (ranks_markdown(ranked) if ranked is not None else "")
        + findings_markdown(findings)
    )
    paths["summary.tex"].write_text(latex_table(summ))
    document = {
        "baseline": baseline,
        "metric": metric,
        "alpha": ALPHA,
        "summary": summ.to_dict(orient="records"),
        "iqm": {
            "metric": f"IQM of {metric} % mastered / 100 over runs x settings",
            "ci": "percentile stratified bootstrap over runs (rliable 1.2.0)",
            "seeds": iqm.attrs["seeds"],
            "settings": iqm.attrs["setting_labels"],
            "reps": reps,
            "bootstrap_seed": seed,
            "confidence": iqm.attrs["confidence"],
            "teachers": iqm.to_dict(orient="records"),
        },
        "risk": {str(a): t.to_dict(orient="records") for a, t in risk.items()},
        "teachmyagent_findings": findings,
        "ranks": None if ranked is None else ranked.reset_index(names="teacher").to_dict("records"),
        "provenance": provenance,
    }
    paths["summary.json"].write_text(json.dumps(_jsonable(document), indent=2))
    for name, fig in (
        ("iqm.png", plot_iqm(iqm)),
        ("profiles.png", plot_profiles(taus, profiles, cis)),
        ("radar.png", plot_radar(summ)),
        ("curves.png", plot_curves(curves, baseline)),
    ):
        # bbox "tight": rliable's interval plot puts its labels outside the axes.
        fig.savefig(paths[name], dpi=100, bbox_inches="tight")
        plt.close(fig)
    return paths


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acl.benchmark.report", description=__doc__)
    parser.add_argument("results_dir", help="folder holding results.csv")
    parser.add_argument("--out", default=None, help="write the report files here")
    parser.add_argument("--baseline", default="random", help="teacher to test and normalise by")
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap resamples for the CIs")
    parser.add_argument(
        "--metric",
        choices=METRICS,
        default="final",
        help="score of a run: its final %% mastered, or its mean over evaluations",
    )
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    try:
        results = load_results(args.results_dir)
        print(markdown_table(summary(as_metric(results, args.metric), args.baseline)), end="")
        if args.out:
            paths = write_report(
                args.results_dir, args.out, args.baseline, args.reps, metric=args.metric
            )
            print(f"\nreport: {Path(args.out)} ({', '.join(paths)})")
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
