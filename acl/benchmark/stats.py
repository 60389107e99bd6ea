"""Benchmark statistics from a tidy results table: loading and slicing it, final scores,
Welch's t-test, the per-setting summary, ranks, and rliable's IQM and performance profiles
(through the adapter that imports rliable under pandas 3).

TeachMyAgent-style (Romac et al. 2021): teachers x challenge settings x seeds, scored by the
final "% mastered" of a fixed test set, reported as mean +- standard error over seeds with
Welch's t-test against the Random teacher, plus rliable's IQM with stratified-bootstrap CIs.

Input, RESULTS_DIR/results.csv: one row per (teacher, challenge, expert, seed, evaluation) with
the columns in COLUMNS. A *run* is (teacher, challenge, expert, seed) and its final score is its
row with the largest env_steps. A *setting* is (challenge, expert), labelled "default",
"unfeasible", "default / expert high", ... (expert "none" gives just the challenge).
Tables of these are in acl.benchmark.tables, figures in acl.benchmark.figures, the report
files in acl.benchmark.report; `acl report RESULTS_DIR` prints and writes them.
"""

from __future__ import annotations

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

from acl.config import CHALLENGES
from acl.config import EXPERT_LEVELS as EXPERTS
from acl.core.errors import ConfigError
from acl.core.risk import CVAR_ALPHAS
from acl.run.results import OutputField, mean_se

CVAR_COLUMNS = tuple(f"cvar_{a}" for a in CVAR_ALPHAS)
"""CVaR of per-task success over the test set at each alpha (acl.core.risk.test_set_cvar), per
run and evaluation; NaN without at least 2 sampled attempts per test task."""
RESULT_FIELDS = (
    OutputField("suite", "The suite's name (`suite:`; a shoot-out's: its env config's name)."),
    OutputField("env", "The env's registered name."),
    OutputField("teacher", "The teacher's label: its key in the suite's `teachers:`."),
    OutputField(
        "challenge",
        f"The challenge: one of {', '.join(CHALLENGES)} (acl.teachers.challenge; a "
        "shoot-out's: default).",
    ),
    OutputField(
        "expert", f"The expert knowledge the teacher is given: one of {', '.join(EXPERTS)}."
    ),
    OutputField("seed", "The seed."),
    OutputField("env_steps", "Training env steps per seed at the evaluation."),
    OutputField(
        "pct_mastered",
        "% of test tasks mastered (metrics.csv's eval_pct_mastered); the students setting: "
        "the mean over its students.",
    ),
    OutputField("mean_return", "Mean greedy return over the test set (eval_mean_return)."),
    OutputField("train_return", "Mean return of the training episodes of the evaluation period."),
    *(
        OutputField(
            column,
            f"CVaR at {alpha} of per-test-task success (metrics.csv's eval_{column}); empty "
            "(NaN) with fewer than 2 sampled attempts per test task, or in files written "
            "before the column existed.",
        )
        for alpha, column in zip(CVAR_ALPHAS, CVAR_COLUMNS, strict=True)
    ),
)
"""results.csv's columns, one row per (teacher, challenge, expert, seed, evaluation): the
schema every cell's table is built with (acl.benchmark.runner) and the report reads."""
COLUMNS = tuple(field.name for field in RESULT_FIELDS)
"""results.csv's columns; the CVaR ones may be absent from older files (read as NaN)."""
STRING_COLUMNS = ("suite", "env", "teacher", "challenge", "expert")
RUN_KEYS = ["teacher", "challenge", "expert", "seed"]
# Settings are displayed in the order of challenges.CHALLENGES and EXPERT_LEVELS; names
# outside those lists go last, alphabetically.
ALPHA = 0.05


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


def with_setting(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with a `setting` label column (`setting_label`)."""
    df = df.copy()
    df["setting"] = [setting_label(c, e) for c, e in zip(df["challenge"], df["expert"])]
    return df


def rows_of(df: pd.DataFrame, teacher: str, challenge: str, expert: str) -> pd.DataFrame:
    """The rows of one teacher in one setting."""
    chosen = (df["teacher"] == teacher) & (df["challenge"] == challenge)
    return df[chosen & (df["expert"] == expert)]


def _check_baseline(df: pd.DataFrame, baseline: str) -> None:
    if baseline not in set(df["teacher"]):
        raise ConfigError(
            f"baseline teacher {baseline!r} is not in the results; "
            f"teachers: {sorted(set(df['teacher']))}"
        )


def summary_axes(summ: pd.DataFrame) -> tuple[list[str], list[str]]:
    """A `summary` table's row order (teachers, the baseline first) and column order
    (setting labels, `settings` order): the layout of its tables and its radar."""
    rows = list(dict.fromkeys(summ["teacher"]))
    columns = [setting_label(c, e) for c, e in settings(summ)]
    return rows, columns


# ----------------------------------------------------------------------------- statistics


def final_scores(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run (teacher, challenge, expert, seed): its row with the largest env_steps,
    plus a `setting` label column. Sorted by teacher, challenge, expert, seed."""
    last = df.loc[df.groupby(RUN_KEYS, sort=False)["env_steps"].idxmax()]
    return with_setting(last).sort_values(RUN_KEYS).reset_index(drop=True)


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
            cell = rows_of(final, teacher, challenge, expert)
            if cell.empty:
                continue
            base = rows_of(final, baseline, challenge, expert)[column]
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


def final_of(final: pd.DataFrame, teacher: str, challenge: str, expert: str = "none"):
    """The final % mastered [runs] of one teacher in one setting of `final_scores(...)`."""
    return rows_of(final, teacher, challenge, expert)["pct_mastered"].to_numpy(np.float64)


# ----------------------------------------------------------------------------- rliable


def rliable_modules():
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
    library, metrics, _ = rliable_modules()
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
    library, _, _ = rliable_modules()
    matrices, _, _ = score_matrices(df, baseline)
    taus = np.linspace(0.0, 1.0, 51) if taus is None else np.asarray(taus, np.float64)
    with _numpy_seed(seed):
        profiles, cis = library.create_performance_profile(matrices, taus, reps=reps)
    return taus, profiles, cis
