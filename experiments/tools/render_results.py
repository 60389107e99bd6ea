"""Renderers of the results pages' headline tables, for `acl render-docs`
(experiments.tools.render_docs).

Each renderer reads one kind of committed result file. Where the command that wrote the
file has a table of its own (`acl benchmark`'s report, `acl risk`, `acl ued-mazes`,
`acl xland-generator`, the goal-curricula comparisons), the renderer builds it with that
command's code, so the page shows what the command prints. Most take, after the file:

    --rows KEY[=LABEL] ...        these rows, in this order, the first cell relabelled
    --columns FIELD[=HEADER] ...  these columns, in this order, the header relabelled

so one renderer serves every page that shows some of a file's rows and columns:

    <!-- render comparison experiments/results/make_run --rows random=Random alp_gmm=ALP-GMM -->

An unknown row, column or flag is a `ConfigError` naming the ones there are.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acl.core.errors import ConfigError

MINUS = "−"
"""Negative numbers on the pages take the typographic minus."""
NEGATIVE = re.compile(r"(?<![\w.])-(?=\d)")
"""A hyphen-minus that signs a number (not one inside a name or a range)."""
MISSING = "–"
"""A cell with no value (a p-value against itself, a one-sided comparison)."""

# ----------------------------------------------------------------------------- block arguments


@dataclass(frozen=True)
class Choice:
    """A row or column named in a block: `key` in the data, `label` on the page."""

    key: str
    label: str
    text: str = ""
    """As written in the block: `key=label`, or `key` alone."""

    @classmethod
    def parse(cls, text: str) -> Choice:
        key, _, label = text.partition("=")
        return cls(key, label or key, text)

    def within(self, known: Sequence[str]) -> Choice:
        """This choice read against the data's names: a key may hold "=" itself (a column
        "seeds >= 90%"), so the split is at the first "=" whose left side is a name."""
        if not self.text or self.key in known:
            return self
        if self.text in known:
            return Choice(self.text, self.text, self.text)
        for index, character in enumerate(self.text):
            if character == "=" and self.text[:index] in known:
                return Choice(self.text[:index], self.text[index + 1 :] or self.text[:index])
        return self


@dataclass(frozen=True)
class BlockArguments:
    """A block's arguments: the files before the first flag, then each flag's values."""

    sources: tuple[str, ...]
    flags: dict[str, tuple[str, ...]]

    def choices(self, flag: str) -> list[Choice] | None:
        values = self.flags.get(flag)
        return None if values is None else [Choice.parse(v) for v in values]

    def one(self, flag: str, default: str) -> str:
        values = self.flags.get(flag, (default,))
        if len(values) != 1:
            raise ConfigError(f"--{flag} takes one value, got {list(values)}")
        return values[0]

    def source(self, count: int = 1) -> tuple[str, ...]:
        if len(self.sources) != count:
            raise ConfigError(f"expected {count} file(s) before the flags, got {self.sources}")
        return self.sources


TABLE_FLAGS = ("rows", "columns")


def parse_block(arguments: Sequence[str], flags: Sequence[str] = TABLE_FLAGS) -> BlockArguments:
    """`arguments` as files, then `--flag value ...` groups; a flag without values is a
    switch (present: an empty tuple)."""
    sources: list[str] = []
    parsed: dict[str, list[str]] = {}
    current: list[str] | None = None
    for argument in arguments:
        if argument.startswith("--"):
            name = argument[2:]
            if name not in flags:
                raise ConfigError(f"unknown flag {argument} (flags: --{', --'.join(flags)})")
            current = parsed.setdefault(name, [])
        elif current is None:
            sources.append(argument)
        else:
            current.append(argument)
    return BlockArguments(tuple(sources), {k: tuple(v) for k, v in parsed.items()})


# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Table:
    """Rows of formatted cells; `key` is the field that names a row (its first column)."""

    key: str
    rows: list[dict[str, str]]

    def markdown(self, rows: list[Choice] | None, columns: list[Choice] | None) -> str:
        by_key = {row[self.key]: row for row in self.rows}
        fields = list(dict.fromkeys(field for row in self.rows for field in row))
        chosen_rows = [c.within(list(by_key)) for c in rows or [Choice(k, k) for k in by_key]]
        chosen_columns = [c.within(fields) for c in columns or [Choice(f, f) for f in fields]]
        unknown = [c.key for c in chosen_rows if c.key not in by_key]
        if unknown:
            raise ConfigError(f"unknown row(s) {unknown}; the file has {list(by_key)}")
        unknown = [c.key for c in chosen_columns if c.key not in fields]
        if unknown:
            raise ConfigError(f"unknown column(s) {unknown}; the file has {fields}")
        lines = [
            "| " + " | ".join(c.label for c in chosen_columns) + " |",
            "|" + "---|" * len(chosen_columns),
        ]
        for choice in chosen_rows:
            row = {**by_key[choice.key], self.key: choice.label}
            lines.append("| " + " | ".join(row.get(c.key, "") for c in chosen_columns) + " |")
        return "\n".join(lines) + "\n"


def table_block(load: Callable[[Path, BlockArguments], Table], flags: Sequence[str] = ()):
    """A renderer: `load` reads the block's file into a Table, `--rows` and `--columns`
    choose from it."""

    def render(root: Path, *arguments: str) -> str:
        block = parse_block(arguments, (*TABLE_FLAGS, *flags))
        return load(root, block).markdown(block.choices("rows"), block.choices("columns"))

    render.__doc__ = load.__doc__
    return render


# ----------------------------------------------------------------------------- formatting


def signed(text: str) -> str:
    """`text` with a leading hyphen-minus as the typographic minus."""
    return MINUS + text[1:] if text.startswith("-") else text


def percent(share: float, digits: int = 1) -> str:
    return signed(f"{100 * share:.{digits}f}%")


def p_value(p: float | None) -> str:
    """Two significant digits; "–" where there is no test."""
    return MISSING if p is None or math.isnan(p) else f"{p:.2g}"


def mean_se_text(values: Sequence[float], digits: int) -> str:
    from acl.run.results import format_mean_se, mean_se

    return signed(format_mean_se(*mean_se(values), digits=digits))


def plain(value: Any, spec: str = "") -> str:
    """A JSON value as a cell: numbers with thousands separators (or `spec`), None as "–"."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return signed(format(value, spec or ","))
    if isinstance(value, list):
        return ", ".join(plain(v, spec) for v in value)
    return str(value)


def read_json(root: Path, path: str) -> Any:
    file = root / path
    if not file.is_file():
        raise ConfigError(f"no result file {path}")
    return json.loads(file.read_text())


def flatten(record: dict, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one level of dotted keys."""
    out = {}
    for key, value in record.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# ----------------------------------------------------------------------------- records


def records_table(root: Path, block: BlockArguments) -> Table:
    """`records FILE [FILE ...] PATH [--key FIELD] [--format FIELD=SPEC ...]`: the list of
    records at the dotted PATH of each JSON file, one row each, the files' rows in turn;
    nested fields are dotted (`diagnosis.walls`); a cell is the value with thousands
    separators, or formatted by its SPEC (Python's format mini-language, e.g. `.2f`)."""
    if len(block.sources) < 2:
        raise ConfigError(f"expected file(s) then a dotted path, got {list(block.sources)}")
    *files, path = block.sources
    records: list = []
    for file in files:
        found: Any = read_json(root, file)
        for part in path.split("."):
            found = found[part]
        records.extend(found)
    specs = {}
    for spec in block.flags.get("format", ()):
        field, equals, form = spec.partition("=")
        if not equals:
            raise ConfigError(f"--format takes FIELD=SPEC, got {spec!r}")
        specs[field] = form
    rows = [flatten(record) for record in records]
    key = block.one("key", next(iter(rows[0])))
    names = [plain(row.get(key), specs.get(key, "")) for row in rows]
    if len(set(names)) < len(names):
        raise ConfigError(
            f"rows share a {key!r} ({names}): name a field that tells them apart with --key"
        )
    return Table(key, [{f: plain(v, specs.get(f, "")) for f, v in row.items()} for row in rows])


# ----------------------------------------------------------------------------- acl compare


def comparison_table(root: Path, block: BlockArguments) -> Table:
    """`comparison RUN_DIR`: `acl compare`'s comparison.json, a row per teacher. Columns:
    teacher, seeds, env steps/seed, % mastered (mean ± SE), per seed, infeasible handed
    out (the share of tasks), wall s, and `p vs T` (Welch's p against teacher T, from the
    per-seed scores) for every teacher T."""
    from acl.benchmark.stats import welch_p

    (folder,) = block.source()
    document = read_json(root, f"{folder}/comparison.json")
    runs = {name: run for name, run in document.items() if isinstance(run, dict)}
    rows = []
    for name, run in runs.items():
        scores = run["final_pct_mastered_per_seed"]
        same = len(set(scores)) == 1
        row = {
            "teacher": name,
            "seeds": str(len(scores)),
            "env steps/seed": f"{run['env_steps']:,}",
            "% mastered": mean_se_text(scores, 1),
            "per seed": f"{scores[0]:.0f} in every seed"
            if same
            else ", ".join(f"{s:.0f}" for s in scores),
            "infeasible handed out": percent(run["infeasible_share"], 0),
            "wall s": f"{run['wall_seconds']:.0f}",
        }
        for other, versus in runs.items():
            p = None if other == name else welch_p(scores, versus["final_pct_mastered_per_seed"])
            row[f"p vs {other}"] = p_value(p)
        rows.append(row)
    return Table("teacher", rows)


# ----------------------------------------------------------------------------- acl bench-teachers


@dataclass(frozen=True)
class Rounds:
    """A teacher's seconds per call, round by round, beside its baseline's in the same
    rounds, pooled over one or more `acl bench-teachers` files."""

    env_steps: int
    seconds: list[float]
    baseline_seconds: list[float]
    compile_seconds: list[float]
    is_baseline: bool

    @property
    def overheads(self) -> list[float]:
        # 1 - steps/s ÷ the baseline's steps/s in the same round (same env steps per call).
        return [1 - b / s for s, b in zip(self.seconds, self.baseline_seconds)]

    @property
    def time_ratios(self) -> list[float]:
        return [s / b for s, b in zip(self.seconds, self.baseline_seconds)]


def read_rounds(root: Path, files: list[str], teacher: str, baseline: str) -> Rounds:
    seconds, baseline_seconds, compile_seconds, env_steps = [], [], [], set()
    for file in files:
        results = read_json(root, file)["results"]
        for name in (teacher, baseline):
            if name not in results:
                raise ConfigError(f"{file} has no teacher {name!r}; it has {list(results)}")
        seconds += results[teacher]["seconds"]
        baseline_seconds += results[baseline]["seconds"]
        compile_seconds.append(results[teacher]["compile_seconds"])
        env_steps.add(results[teacher]["env_steps"])
    if len(env_steps) != 1:
        raise ConfigError(f"{files}: the runs differ in env steps per call: {sorted(env_steps)}")
    return Rounds(env_steps.pop(), seconds, baseline_seconds, compile_seconds, teacher == baseline)


def median_interval(
    values: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """The narrowest distribution-free interval for the median between two order statistics
    symmetric about it that covers it with at least `confidence`: (low, high, coverage).
    NaN bounds when no such interval exists (fewer than 6 values at 95%)."""
    ordered = sorted(values)
    n = len(ordered)
    below = 0.0
    best = (math.nan, math.nan, math.nan)
    for k in range(1, n // 2 + 1):
        # P(Binomial(n, 1/2) <= k - 1): the chance that the k-th value lies above the median.
        below += math.comb(n, k - 1) / 2**n
        coverage = 1 - 2 * below
        if coverage < confidence:
            break
        best = (ordered[k - 1], ordered[n - k], coverage)
    return best


def rounds_row(label: str, rounds: Rounds) -> dict[str, str]:
    """Every column the overhead tables show, from one teacher's rounds."""
    overheads, ratios = rounds.overheads, rounds.time_ratios
    mean = statistics.mean(overheads)
    se = statistics.stdev(overheads) / math.sqrt(len(overheads)) if len(overheads) > 1 else 0.0
    low, high, coverage = median_interval(overheads)
    against = not rounds.is_baseline
    return {
        "teacher": label,
        "rounds": str(len(rounds.seconds)),
        "steps/s": f"{rounds.env_steps / statistics.median(rounds.seconds):,.0f}",
        "overhead": percent(statistics.median(overheads)) if against else "0",
        "time ratio": f"{statistics.median(ratios):.2f}" if against else "1.00",
        "range": f"{percent(min(overheads))} to {percent(max(overheads))}" if against else "",
        "mean ± SE": signed(f"{100 * mean:.1f} ± {100 * se:.1f}%") if against else "",
        "interval": (
            f"{percent(low)} to {percent(high)} ({coverage:.0%})"
            if against and not math.isnan(low)
            else ""
        ),
        "per round": ", ".join(signed(f"{100 * o:.1f}") for o in overheads) + "%"
        if against
        else "",
        "time ratio per round": ", ".join(f"{r:.2f}" for r in ratios)
        + f" (median {statistics.median(ratios):.2f})"
        if against
        else "",
        "seconds": ", ".join(f"{s:.1f}" for s in rounds.seconds),
        "seconds range": f"{min(rounds.seconds):.0f}–{max(rounds.seconds):.0f}",
        "baseline seconds range": (
            f"{min(rounds.baseline_seconds):.0f}–{max(rounds.baseline_seconds):.0f}"
        ),
        "compile s": ", ".join(f"{c:.1f}" for c in rounds.compile_seconds),
    }


def overhead_block(root: Path, *arguments: str) -> str:
    """`overhead [FILE[+FILE...]] --rows [FILES:]TEACHER[/BASELINE][=LABEL] ... [--columns
    ...]`: teachers' wall-time overhead from `acl bench-teachers` JSON, each row pooling
    the rounds of its files (the block's files unless the row names its own) against its
    baseline's in the same rounds (default random). Columns: teacher, rounds, steps/s
    (env steps ÷ median seconds a call), overhead (median over rounds of 1 − the
    baseline's seconds ÷ the teacher's), time ratio (median of the teacher's seconds ÷
    the baseline's), range, mean ± SE and interval (the distribution-free interval for
    the median, `median_interval`) of the overheads, per round, time ratio per round,
    seconds, seconds range, baseline seconds range, compile s. A teacher against itself
    reads 0 and 1.00."""
    block = parse_block(arguments)
    default_files = "+".join(block.sources)
    rows, choices = [], block.choices("rows") or []
    if not choices:
        raise ConfigError("overhead: name the rows (--rows TEACHER ...)")
    for choice in choices:
        files, _, spec = choice.key.rpartition(":")
        teacher, _, baseline = spec.partition("/")
        paths = (files or default_files).split("+")
        if paths == [""]:
            raise ConfigError(f"overhead: row {choice.key!r} names no file, nor does the block")
        rows.append(rounds_row(choice.key, read_rounds(root, paths, teacher, baseline or "random")))
    return Table("teacher", rows).markdown(choices, block.choices("columns"))


# ----------------------------------------------------------------------------- acl toy-bandit


def toy_bandit_table(root: Path, block: BlockArguments) -> Table:
    """`toy_bandit RESULTS_JSON [--setting NAME]`: `acl toy-bandit`'s results.json, a row
    per teacher (with its options) of one setting. Columns: teacher, setting, final %
    mastered, reference (teachDeepRL's, d = 2 and default options only), episodes to 25%,
    episodes to 50% (mean over the seeds that got there, and how many), s/seed (ours),
    s/seed (reference), compile s."""
    from experiments.papers.toy_bandit import summarise_reach, teacher_label

    (file,) = block.source()
    document = read_json(root, file)
    setting = block.one("setting", "d2")
    rows = []
    for record in document["results"]:
        if record["setting"] != setting:
            continue
        default = not record["options"]
        reference = document["reference_d2"].get(record["teacher"]) if setting == "d2" else None
        reference = reference if default else None
        rows.append(
            {
                "teacher": teacher_label(record["teacher"], record["options"]),
                "setting": record["setting"],
                "final % mastered": mean_se_text(record["final_per_seed"], 1),
                "reference": MISSING if reference is None else f"{reference['final']:.1f}",
                "episodes to 25%": summarise_reach(record["episodes_to_25"]),
                "episodes to 50%": summarise_reach(record["episodes_to_50"]),
                "s/seed (ours)": f"{record['seconds_per_seed']:.3f}",
                "s/seed (reference)": MISSING
                if reference is None
                else reference["seconds_per_seed"],
                "compile s": f"{record['compile_seconds']:.1f}",
            }
        )
    if not rows:
        raise ConfigError(f"{file} has no setting {setting!r}")
    return Table("teacher", rows)


def toy_bandit_speed_table(root: Path, block: BlockArguments) -> Table:
    """`toy_bandit_speed REFERENCE_JSON OURS_JSON`: seconds per seed side by side, a row per
    (setting, teacher) that `acl bench-teachdeeprl` measured (REFERENCE_JSON, teachDeepRL's
    code, one process per seed) beside `acl toy-bandit`'s results.json (OURS_JSON, 16 seeds
    vmapped, run time / 16, default options). Columns: setting, teacher, reference seeds,
    s/seed (reference: mean, min-max), s/seed (ours), speed-up (the fastest reference seed
    over ours, the least favourable ratio)."""
    from experiments.bench.teachdeeprl import ours_seconds
    from experiments.papers.toy_bandit import teacher_label

    reference_file, ours_file = block.source(2)
    reference = read_json(root, reference_file)
    ours = ours_seconds(root / ours_file)
    rows = []
    for s in reference["summary"]:
        mine = ours.get((s["setting"], s["teacher"]))
        timed = s["seconds_per_seed"] is not None
        rows.append(
            {
                "row": f"{s['setting']} {s['teacher']}",
                "setting": s["setting"],
                "teacher": teacher_label(s["teacher"], {}),
                "reference seeds": str(s["seeds_done"])
                + (f" ({s['seeds_failed']} failed)" if s["seeds_failed"] else ""),
                "s/seed (reference)": (
                    f"{s['seconds_per_seed']:.1f} ({s['seconds_min']:.1f}-{s['seconds_max']:.1f})"
                    if timed
                    else MISSING
                ),
                "s/seed (ours)": MISSING if mine is None else f"{mine:.3f}",
                "speed-up": (
                    f"{s['seconds_min'] / mine:.0f}x" if timed and mine is not None else MISSING
                ),
            }
        )
    if not rows:
        raise ConfigError(f"{reference_file} has no summary rows")
    return Table("row", rows)


# ----------------------------------------------------------------------------- goal curricula


def _method_tables() -> dict[str, Callable[[list[dict]], str]]:
    from experiments.papers import jsrl, reverse_curriculum, svgg

    return {"reverse_curriculum": reverse_curriculum.table, "svgg": svgg.table, "jsrl": jsrl.table}


def terminal_rows(text: str) -> list[dict[str, str]]:
    """The rows of the first table of `acl.run.results.format_table`'s text: its rule of
    dashes gives each column's span."""
    header, rule, *body = text.split("\n\n")[0].splitlines()
    spans, start = [], 0
    for dashes in rule.split("  "):
        spans.append((start, start + len(dashes)))
        start += len(dashes) + 2
    names = [header[a:b].strip() for a, b in spans]
    return [{n: line[a:b].strip() for n, (a, b) in zip(names, spans)} for line in body]


def method_table(root: Path, block: BlockArguments) -> Table:
    """`methods EXPERIMENT RESULTS_JSON`: the table the comparison command prints (the
    `table` of experiments/papers/EXPERIMENT.py: reverse_curriculum, svgg or jsrl) from its
    results.json, a row per method; the columns are the printed ones."""
    experiment, file = block.source(2)
    tables = _method_tables()
    if experiment not in tables:
        raise ConfigError(f"unknown experiment {experiment!r} (experiments: {list(tables)})")
    rows = terminal_rows(tables[experiment](read_json(root, file)["results"]))
    return Table("method", [{k: NEGATIVE.sub(MINUS, v) for k, v in row.items()} for row in rows])


# ----------------------------------------------------------------------------- acl risk


def risk_table(root: Path, block: BlockArguments) -> Table:
    """`risk RISK_JSON --baseline RUN [--regret]`: `acl risk`'s risk.json, a row per run:
    its seeds, mean success and CVaR at each alpha (mean ± SE over seeds) and their Welch
    p against the baseline (`p_mean`, `p_cvar_0.1`, ...); with `--regret`, the regret
    scores' rank correlations instead, a row per run and one for all students."""
    from experiments.tools.risk import regret_rows, summary_rows

    (file,) = block.source()
    runs = read_json(root, file)["runs"]
    if "regret" in block.flags:
        raw = regret_rows(runs)
    else:
        raw = summary_rows(runs, block.one("baseline", "random"))

    def cell(value: Any) -> str:
        if isinstance(value, tuple):
            return signed(f"{value[0]:.3f} ± {value[1]:.3f}")
        if isinstance(value, float):
            return p_value(value)
        return str(value)

    return Table("run", [{k: cell(v) for k, v in row.items()} for row in raw])


# ----------------------------------------------------------------------------- acl benchmark


def benchmark_block(root: Path, *arguments: str) -> str:
    """`benchmark RESULTS_DIR [--metric final|mean] [--teachers T ...] [--experts E ...]
    [--ranks]`: `acl report`'s table of a suite's results.csv, the chosen teachers and
    expert levels: mean ± SE over seeds per teacher and setting, `*` where Welch's p <
    0.05 against Random, and its note; with `--ranks`, the ranks per setting instead."""
    from acl.benchmark import stats, tables

    block = parse_block(arguments, ("metric", "teachers", "experts", "ranks"))
    (folder,) = block.source()
    results = stats.select(
        stats.load_results(root / folder),
        teachers=block.flags.get("teachers"),
        experts=block.flags.get("experts"),
    )
    if "ranks" in block.flags:
        return tables.ranks_markdown(stats.ranks(results)).lstrip("\n")
    return tables.markdown_table(
        stats.summary(stats.as_metric(results, block.one("metric", "final")))
    )


def iqm_block(root: Path, *arguments: str) -> str:
    """`report_iqm SUMMARY_JSON [--teachers T ...]`: the IQMs of `acl report`'s
    summary.json with their bootstrap CIs, highest first, as one line."""
    block = parse_block(arguments, ("teachers",))
    (file,) = block.source()
    iqm = read_json(root, file)["iqm"]
    wanted = block.flags.get("teachers")
    rows = [r for r in iqm["teachers"] if wanted is None or r["teacher"] in wanted]
    rows.sort(key=lambda r: -r["iqm"])
    listed = ", ".join(
        f"{r['teacher']} {r['iqm']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]" for r in rows
    )
    return (
        f"IQM over all settings ({iqm['metric']}; {iqm['confidence']:.0%} CI, {iqm['ci']}, "
        f"{iqm['reps']:,} resamples): {listed}.\n"
    )


def rerun_block(root: Path, *arguments: str) -> str:
    """`benchmark_rerun REGISTERED_CSV RERUN_CSV --teacher T [--metric final|mean]`: a
    teacher's registered cells beside a re-run's, per setting: both mean ± SE, the
    difference, the bound 2·√(SE₁² + SE₂²) and whether the difference is within it
    ("identical" where both runs are one constant)."""
    from acl.benchmark import stats
    from acl.run.results import format_mean_se

    def cell(row: Any) -> str:
        return signed(format_mean_se(row["mean"], row["se"]))

    block = parse_block(arguments, ("teacher", "metric"))
    registered, rerun = block.source(2)
    teacher = block.one("teacher", "")
    metric = block.one("metric", "final")
    summaries = [
        stats.summary(
            stats.as_metric(stats.select(stats.load_results(root / f), teachers=teacher), metric),
            baseline=teacher,
        ).set_index("setting")
        for f in (registered, rerun)
    ]
    before, after = summaries
    lines = [
        "| setting | registered run | re-run | difference | bound | within |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for setting in before.index:
        a, b = before.loc[setting], after.loc[setting]
        difference, bound = b["mean"] - a["mean"], 2 * math.hypot(a["se"], b["se"])
        if bound == 0 and math.isclose(difference, 0, abs_tol=1e-9):
            verdict = "0 | 0 | identical"
        else:
            within = "yes" if abs(difference) < bound else "no"
            verdict = f"{signed(f'{difference:+.1f}')} | {bound:.1f} | {within}"
        lines.append(f"| {setting} | {cell(a)} | {cell(b)} | {verdict} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- acl ued-mazes


def ued_block(root: Path, *arguments: str) -> str:
    """`ued_mazes RESULTS_JSON [--methods M ...] [--no-risk]`: `acl ued-mazes`' table of
    held-out solve rates (mazes as rows, methods as columns, the mean and Welch's p
    against DR, the sampled mazes' risk when risk.json was there), then the seeds and, for
    SFL, its evaluation env steps per seed."""
    from experiments.papers.ued_mazes import readme_table

    block = parse_block(arguments, ("methods", "no-risk"))
    (file,) = block.source()
    records = read_json(root, file)["results"]
    methods = block.flags.get("methods")
    if methods:
        known = [r["method"] for r in records]
        unknown = [m for m in methods if m not in known]
        if unknown:
            raise ConfigError(f"unknown method(s) {unknown}; {file} has {known}")
        records = [next(r for r in records if r["method"] == m) for m in methods]
    if "no-risk" in block.flags:
        records = [{k: v for k, v in r.items() if k != "risk"} for r in records]
    lines = [readme_table(records), "| seeds | " + " | ".join(str(r["seeds"]) for r in records)]
    lines[-1] += " |"
    evaluation = [r.get("diagnosis", {}).get("eval_env_steps") for r in records]
    if any(v is not None for v in evaluation):
        cells = [MISSING if v is None else f"{v:,.0f}" for v in evaluation]
        lines.append("| SFL evaluation env steps per seed | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def maze_budget_block(root: Path, *arguments: str) -> str:
    """`maze_budget PROFILE_JSON CONFIG`: the published budget's wall time on this CPU,
    from `acl profile-maze-student`'s loop steps/s of the published student and the
    config's env steps per seed."""
    from acl.config import load_config

    profile, config = parse_block(arguments, ()).source(2)
    rows = {row["student"]: row for row in read_json(root, profile)["table"]}
    steps_per_second = rows["published"]["loop steps/s"]
    env_steps = load_config(root / config).loop.total_env_steps
    seconds = env_steps / steps_per_second
    return (
        f"The published budget, {env_steps:,} env steps per seed, at the published "
        f"student's {steps_per_second:,} env steps/s on this project's CPU (`acl "
        f"profile-maze-student`, `{profile}`): about {seconds / 3600:.0f} hours per seed "
        f"({seconds:,.0f} s).\n"
    )


# ----------------------------------------------------------------------------- the rest


def xland_block(root: Path, *arguments: str) -> str:
    """`xland_generator COMPARISON_JSON`: `acl xland-generator`'s table of total variation
    per reference set and histogram, against the sampling noise."""
    from experiments.bench.xland_generator import markdown

    (file,) = parse_block(arguments, ()).source()
    return markdown(read_json(root, file)["rows"]) + "\n"


def stump_tracks_block(root: Path, *arguments: str) -> str:
    """`stump_tracks_ppo SUMMARY_JSON`: `acl stump-tracks-ppo`'s learning check per seed
    (the mean training return of the first and last 10% of updates, their difference, the
    deterministic return after training), then the mean ± SE over seeds."""
    (file,) = parse_block(arguments, ()).source()
    summary = read_json(root, file)
    learning = summary["learning"]
    returns = [statistics.mean(r) for r in summary["final_eval_returns"]]
    lines = [
        "| seed | first 10% of updates | last 10% | difference | deterministic return "
        "after training |",
        "|---|---|---|---|---|",
    ]
    for seed, (first, last, diff, final) in enumerate(
        zip(learning["first"], learning["last"], learning["diff"], returns)
    ):
        cells = [signed(f"{v:.1f}") for v in (first, last, diff, final)]
        lines.append(f"| {seed} | " + " | ".join(cells) + " |")
    lines.append(
        f"| mean ± SE | {mean_se_text(learning['first'], 1)} | "
        f"{mean_se_text(learning['last'], 1)} | **{mean_se_text(learning['diff'], 1)}** | "
        f"{mean_se_text(returns, 1)} |"
    )
    return "\n".join(lines) + "\n"


RESULTS_RENDERERS: dict[str, Callable[..., str]] = {
    "records": table_block(records_table, ("key", "format")),
    "comparison": table_block(comparison_table),
    "overhead": overhead_block,
    "toy_bandit": table_block(toy_bandit_table, ("setting",)),
    "toy_bandit_speed": table_block(toy_bandit_speed_table),
    "methods": table_block(method_table),
    "risk": table_block(risk_table, ("baseline", "regret")),
    "benchmark": benchmark_block,
    "benchmark_rerun": rerun_block,
    "report_iqm": iqm_block,
    "ued_mazes": ued_block,
    "maze_budget": maze_budget_block,
    "xland_generator": xland_block,
    "stump_tracks_ppo": stump_tracks_block,
}
"""Renderer name -> renderer(root, *arguments) -> Markdown."""
