"""The teacher shoot-out: every teacher on one env config, one seed set, one budget, one
test set, with a pre-registration workflow (`acl shootout`, experiments/tools/shootout.py).

    suite, refused = shootout_suite(load_config("experiments/configs/peer_cartpole.yaml"),
                                    parse_teachers(["random", "alp_gmm", "sfl:cpu"]))
    run_suite(suite, out)                      # acl.benchmark.runner: resumable per cell
    write_shootout_report(out)                 # OUT/report/

A shoot-out is a benchmark suite (acl.benchmark.runner) with one setting, "default", and
the env config as its base: each teacher replaces the config's teacher with its documented
defaults, or a named preset (`sfl:cpu`), or the settings the user passes (`--set
sfl.buffer_update_frequency=8`): nothing else differs between teachers. A teacher the
env cannot serve (ACCEL without level edits, PAIRED without a level editor) is refused
with its one-line reason and the others run.

Pre-registration (docs/results/README.md's rules, as a tool):
- a pilot runs seeds 0-7 (`PILOT_SEEDS`) and appends its settings and results to a pilot
  log (`record_pilot`);
- `write_protocol` writes the protocol: the resolved suite (configs, budget), the metric
  and test group, the confirmatory seeds (disjoint from the pilot's) and the decision
  rule, with every pilot of the log;
- `check_protocol` refuses a confirmatory run whose suite differs from the protocol's (one
  line naming the first differing key) or whose seeds overlap the pilot's, or a
  protocol file that is not committed; it returns the protocol's hash and commit, which
  the run records in its provenance; the report checks that commit is an ancestor of
  each cell's commit.

The report (`write_shootout_report`) reads results.csv, provenance.json and the per-task
arrays of cells/*.npz. Each test group (a named test set's name prefix: JaxUED's
evaluation levels, uniform tasks...) gets its table: final % mastered, mean return, area
under the curve (mean % mastered over the evaluations), CVaR at 0.1 of sampled-action
success, Welch's p against the baseline with Holm's correction over the teachers
compared, rliable's IQM with a stratified-bootstrap CI, wall time as a multiple of the
baseline's, training and extra env steps (SFL's evaluation rollouts); figures: learning
curves per group, where each teacher sampled (2-D projections of the task space), IQM.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from acl.benchmark.report import jsonable
from acl.benchmark.runner import (
    RESULT_COLUMNS,
    SuiteConfig,
    cell_arrays_path,
    parse_suite,
)
from acl.benchmark.stats import ALPHA, iqm_table, load_provenance, load_results, welch_p
from acl.build import build_components
from acl.config import ChallengeSpec, ComponentConfig, ExperimentConfig
from acl.core.errors import ConfigError
from acl.core.risk import test_set_cvar
from acl.run.results import mean_se, mean_se_by_step

PILOT_SEEDS = tuple(range(8))
"""The pilot's seeds; a confirmatory run's must be disjoint from them."""
DEFAULT = ChallengeSpec("default")
CVAR_ALPHA = 0.1
ALL = "all"
"""The test group of every test task (the only one of a task-space test set)."""

TESTED_METRICS = ("pct_mastered", "mean_return", "auc", f"cvar_{CVAR_ALPHA}", "solve_sampled")
"""The per-seed scores of `group_table`; Welch's p is taken on one of them."""


# -- teachers -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TeacherChoice:
    """One teacher of a shoot-out: its label in tables and its config."""

    label: str
    config: ComponentConfig


def parse_teachers(
    entries: Sequence[str], settings: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[TeacherChoice, ...]:
    """`NAME` (documented defaults) or `NAME:PRESET` (a named preset) per entry, labelled
    NAME; `settings` {label: {key: value}} adds the user's per-teacher settings."""
    settings = dict(settings or {})
    choices = []
    for entry in entries:
        name, _, preset = entry.partition(":")
        if not name:
            raise ConfigError(f"--teachers: empty teacher name in {entry!r}")
        kwargs = {"preset": preset} if preset else {}
        kwargs.update(settings.pop(name, {}))
        choices.append(TeacherChoice(name, ComponentConfig(name, kwargs)))
    labels = [c.label for c in choices]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ConfigError(f"--teachers lists {', '.join(twice)} twice")
    if settings:
        raise ConfigError(
            f"--set names teacher(s) {', '.join(sorted(settings))} not in --teachers "
            f"({', '.join(labels)})"
        )
    return tuple(choices)


@dataclass(frozen=True)
class Refusal:
    """A teacher the env cannot serve, with the reason."""

    label: str
    reason: str

    def __str__(self) -> str:
        return f"{self.label}: refused: {self.reason}"


def shootout_suite(
    config: ExperimentConfig,
    teachers: Sequence[TeacherChoice],
    seeds: tuple[int, int] | None = None,
    challenged: bool = True,
) -> tuple[SuiteConfig, tuple[Refusal, ...]]:
    """The suite running `teachers` on `config` (its env, agent, loop, eval; its teacher is
    replaced) at `seeds` (first, count; None: the config's), and the teachers refused.

    `challenged`: teachers work in the default challenge's unit cube, as the benchmark runs
    them; False: on the env's own space and level generator (`SuiteConfig.challenged`).

    Every teacher is built (on the CPU, nothing compiled) so that one the env cannot serve
    is refused here, with its ConfigError's line, before any other runs."""
    if seeds is not None:
        config = dataclasses.replace(config, seed=seeds[0], num_seeds=seeds[1])
    accepted, refused = [], []
    for choice in teachers:
        trial = dataclasses.replace(config, teacher=choice.config)
        try:
            build_components(trial, challenged=challenged)
        except ConfigError as err:
            refused.append(Refusal(choice.label, str(err).splitlines()[0]))
            continue
        accepted.append((choice.label, choice.config))
    if not accepted:
        raise ConfigError("no teacher can run on this env: " + "; ".join(str(r) for r in refused))
    suite = SuiteConfig(
        suite=config.name,
        base=config,
        teachers=tuple(accepted),
        settings=(DEFAULT,),
        challenged=challenged,
    )
    return suite, tuple(refused)


def schedule_warnings(suite: SuiteConfig) -> tuple[str, ...]:
    """One line per teacher of `suite` whose first adaptation
    (`Teacher.updates_before_adapting`) comes after the run's last update: within the
    budget it hands out its bootstrap tasks only, and a comparison says nothing of it."""
    warnings = []
    for label, _ in suite.teachers:
        config = suite.teacher_config(label)
        teacher = build_components(config, challenged=suite.challenged).teacher
        before, updates = teacher.updates_before_adapting(), config.loop.schedule.iterations
        if before > updates:
            warnings.append(
                f"{label}: warning: it first adapts after {before} updates and the budget "
                f"has {updates}, so it hands out its bootstrap tasks throughout (a smaller "
                f"fit_every, e.g. --teacher-set {label}.fit_every={max(1, updates // 8)}, "
                "adapts sooner)"
            )
    return tuple(warnings)


def default_baseline(labels: Iterable[str]) -> str:
    """Random (uniform over the task space), else DR (the env's level generator)."""
    labels = list(labels)
    for name in ("random", "dr"):
        if name in labels:
            return name
    raise ConfigError(
        f"a shoot-out compares teachers with uniform sampling: add random (or dr) to "
        f"--teachers ({', '.join(labels)}), or name another with --baseline"
    )


# -- pre-registration ---------------------------------------------------------------------


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _git(path: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, cwd=path)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def record_pilot(log: Path, suite: SuiteConfig, out: Path, results: pd.DataFrame) -> dict:
    """Append one pilot to the pilot log (JSON lines): its settings (the resolved suite),
    its results directory and each teacher's final % mastered, mean ± SE."""
    final = _final_rows(results)
    entry = {
        "out": str(out),
        "suite": suite.to_dict(),
        "results": {
            teacher: dict(zip(("mean", "se"), map(jsonable, mean_se(rows["pct_mastered"]))))
            for teacher, rows in final.groupby("teacher", sort=False)
        },
    }
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")
    return entry


def read_pilots(log: Path | None) -> list[dict]:
    if log is None or not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


@dataclass(frozen=True)
class DecisionRule:
    """When a teacher counts as helping: its mean `metric` on `test_group` above the
    baseline's and Welch's p, Holm-corrected over the teachers compared, below `alpha`."""

    metric: str = "pct_mastered"
    test_group: str = ALL
    baseline: str = "random"
    alpha: float = ALPHA

    def __post_init__(self):
        if self.metric not in TESTED_METRICS:
            raise ConfigError(
                f"--metric must be one of {', '.join(TESTED_METRICS)}; got {self.metric!r}"
            )
        if not 0.0 < self.alpha < 1.0:
            raise ConfigError(f"the decision rule's alpha must be in (0, 1), got {self.alpha}")

    @property
    def text(self) -> str:
        return (
            f"a teacher helps if its final mean {self.metric} on test group "
            f"'{self.test_group}' exceeds {self.baseline}'s and Welch's p against "
            f"{self.baseline}, Holm-corrected over the teachers compared, is below "
            f"{self.alpha}; otherwise no difference is claimed"
        )


def write_protocol(
    path: Path,
    suite: SuiteConfig,
    command: str,
    rule: DecisionRule,
    pilots: Sequence[dict] = (),
    note: str = "",
) -> dict:
    """Write the protocol file (YAML) of a confirmatory run of `suite` (its seeds are the
    confirmatory seeds) and return it. Refuses seeds overlapping the pilot's, and an
    existing file: a protocol is written once."""
    if path.exists():
        raise ConfigError(f"--protocol: {path} exists; a protocol is written once")
    seeds = list(range(suite.base.seed, suite.base.seed + suite.base.num_seeds))
    pilot_seeds = sorted({*PILOT_SEEDS, *(s for p in pilots for s in _pilot_seeds(p))})
    overlap = sorted(set(seeds) & set(pilot_seeds))
    if overlap:
        raise ConfigError(
            f"--protocol: confirmatory seeds {seeds[0]}-{seeds[-1]} overlap the pilot's "
            f"({', '.join(map(str, overlap))}); choose --first-seed beyond {pilot_seeds[-1]}"
        )
    labels = [label for label, _ in suite.teachers]
    if rule.baseline not in labels:
        raise ConfigError(f"--protocol: baseline {rule.baseline} is not among {labels}")
    loop = suite.base.loop
    protocol = {
        "protocol": suite.suite,
        "command": command,
        "teachers": labels,
        "budget": {
            "env_steps_per_seed": loop.total_env_steps,
            "evaluations": loop.total_env_steps // loop.eval_every,
            "num_envs": loop.num_envs,
            "num_steps": loop.num_steps,
        },
        "metric": {"name": rule.metric, "test_group": rule.test_group, "when": "final"},
        "pilot_seeds": pilot_seeds,
        "confirmatory_seeds": seeds,
        "decision_rule": {**dataclasses.asdict(rule), "text": rule.text},
        "note": note,
        "pilots": list(pilots),
        "suite": suite.to_dict(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(jsonable(protocol), sort_keys=False, width=100))
    return protocol


def _pilot_seeds(pilot: dict) -> list[int]:
    base = pilot["suite"]["base"]
    return list(range(base["seed"], base["seed"] + base["num_seeds"]))


def load_protocol(path: Path) -> dict:
    if not path.exists():
        raise ConfigError(f"--confirm: no protocol file {path} (write it with --protocol)")
    data = yaml.safe_load(path.read_text())
    missing = [k for k in ("suite", "decision_rule", "confirmatory_seeds") if k not in data]
    if missing:
        raise ConfigError(f"--confirm: {path} is not a shoot-out protocol (no {missing[0]})")
    return data


def first_difference(expected: Any, actual: Any, where: str = "") -> str | None:
    """The first key path where two plain structures differ, with both values; None when
    equal."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in list(expected) + [k for k in actual if k not in expected]:
            path = f"{where}.{key}" if where else str(key)
            if key not in actual:
                return f"{path}: {expected[key]!r} (protocol) vs absent (now)"
            if key not in expected:
                return f"{path}: absent (protocol) vs {actual[key]!r} (now)"
            found = first_difference(expected[key], actual[key], path)
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            found = first_difference(e, a, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if expected == actual else f"{where}: {expected!r} (protocol) vs {actual!r} (now)"


def check_protocol(path: Path, suite: SuiteConfig, require_commit: bool = True) -> dict:
    """The provenance record of a confirmatory run of `suite` under protocol `path`
    ({file, sha256, commit, decision_rule}), or a one-line ConfigError: the suite differs
    from the protocol's, its seeds overlap the pilot's, or the protocol is not committed."""
    protocol = load_protocol(path)
    seeds = set(range(suite.base.seed, suite.base.seed + suite.base.num_seeds))
    overlap = sorted(seeds & set(protocol.get("pilot_seeds", PILOT_SEEDS)))
    if overlap:
        raise ConfigError(
            f"--confirm: seeds {', '.join(map(str, overlap))} were the pilot's; a "
            "confirmatory run uses unseen seeds"
        )
    # Both sides resolved with today's defaults: a key added to the library since, at its
    # default, is no change.
    registered = parse_suite(protocol["suite"]).to_dict()
    difference = first_difference(jsonable(registered), jsonable(suite.to_dict()))
    if difference:
        raise ConfigError(
            f"--confirm: the run differs from protocol {path} at {difference}; a protocol "
            "is not changed after its pilot (write a new one)"
        )
    commit = protocol_commit(path)
    if require_commit and commit is None:
        raise ConfigError(
            f"--confirm: protocol {path} is not committed (or differs from its commit): "
            "commit it before the confirmatory run, whose provenance then follows it"
        )
    return {
        "file": path.name,
        "sha256": _sha256(path),
        "commit": commit,
        "decision_rule": protocol["decision_rule"],
    }


def protocol_commit(path: Path) -> str | None:
    """The commit that last changed `path`, if the file is tracked and unchanged since;
    else None."""
    folder = path.resolve().parent
    if _git(folder, "ls-files", "--error-unmatch", path.name) is None:
        return None
    if _git(folder, "diff", "--quiet", "HEAD", "--", path.name) is None:
        return None
    return _git(folder, "log", "-1", "--format=%H", "--", path.name) or None


def is_ancestor(ancestor: str, commit: str, where: Path | None = None) -> bool | None:
    """Whether `ancestor` is an ancestor of (or is) `commit` in the repository at `where`
    (default: this package's); None when git cannot tell (an unknown commit, no git)."""
    where = where or Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "merge-base", "--is-ancestor", ancestor, commit],
            capture_output=True,
            timeout=10,
            cwd=where,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(out.returncode)


# -- per test group results ---------------------------------------------------------------


def test_groups(names: Sequence[str]) -> list[str]:
    """The groups of a test set's task names, in order of first appearance: each name's
    part before "/" ("jaxued_eval/default" is in "jaxued_eval"); ALL for names without
    one (unnamed tasks, a maze's or XLand's held-out levels)."""
    groups = []
    for name in names:
        group = _group_of(name)
        if group not in groups:
            groups.append(group)
    return groups


def load_cell_arrays(out: Path, label: str) -> dict[str, np.ndarray] | None:
    path = cell_arrays_path(out, label, DEFAULT)
    if not path.exists():
        return None
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def group_results(out: Path, suite_teachers: Sequence[str], group: str) -> pd.DataFrame:
    """The results table (RESULT_COLUMNS, one row per teacher, seed and evaluation) of the
    test tasks of `group` (ALL: every task), from cells/*.npz: % mastered is the share of
    the group's tasks whose greedy episodes succeed, CVaR that of `test_set_cvar`."""
    rows = []
    for label in suite_teachers:
        arrays = load_cell_arrays(out, label)
        if arrays is None:
            continue
        names = arrays["test_names"]
        mask = (
            np.ones(len(names), bool)
            if group == ALL
            else np.array([str(n).split("/")[0] == group for n in names])
        )
        success = arrays["task_success"][..., mask].astype(np.float64)
        returns = arrays["task_return"][..., mask].astype(np.float64)
        sampled = arrays.get("task_success_sampled")
        for c in range(success.shape[0]):
            for i, seed in enumerate(arrays["seeds"]):
                cvars = (
                    test_set_cvar(sampled[c, i][mask].astype(np.float64))
                    if sampled is not None
                    else {}
                )
                rows.append(
                    {
                        "suite": group,
                        "env": "",
                        "teacher": label,
                        "challenge": DEFAULT.challenge,
                        "expert": DEFAULT.expert,
                        "seed": int(seed),
                        "env_steps": int(arrays["env_steps"][c, i]),
                        "pct_mastered": 100.0 * float(success[c, i].mean()),
                        "mean_return": float(returns[c, i].mean()),
                        "train_return": math.nan,
                        **{f"cvar_{a}": float(v) for a, v in cvars.items()},
                        "solve_sampled": (
                            float(sampled[c, i][mask].mean()) if sampled is not None else math.nan
                        ),
                    }
                )
    columns = [*RESULT_COLUMNS, "solve_sampled"]
    return pd.DataFrame(rows, columns=columns)


def holm(p_values: Mapping[str, float]) -> dict[str, float]:
    """Holm-corrected p-values (statsmodels' multipletests); NaN stays NaN."""
    from statsmodels.stats.multitest import multipletests

    finite = {k: v for k, v in p_values.items() if np.isfinite(v)}
    corrected = dict.fromkeys(p_values, math.nan)
    if finite:
        adjusted = multipletests(list(finite.values()), method="holm")[1]
        corrected.update(zip(finite, map(float, adjusted), strict=True))
    return corrected


def _final_rows(table: pd.DataFrame) -> pd.DataFrame:
    keys = ["teacher", "seed"]
    return table.loc[table.groupby(keys, sort=False)["env_steps"].idxmax()]


def group_table(
    table: pd.DataFrame,
    baseline: str,
    costs: Mapping[str, Mapping[str, float]],
    reps: int = 2000,
    metric: str = "pct_mastered",
) -> pd.DataFrame:
    """One row per teacher: final % mastered, mean return, AUC (mean % mastered over the
    evaluations), CVaR at 0.1, sampled-action solve rate (each mean and SE over seeds),
    Welch's p against `baseline` on `metric` (one of TESTED_METRICS), Holm-corrected,
    rliable's IQM of final % mastered with its CI, and `costs` (wall time x baseline,
    training and extra env steps). `attrs["metric"]` names the tested metric."""
    if metric not in TESTED_METRICS:
        raise ConfigError(f"metric must be one of {', '.join(TESTED_METRICS)}; got {metric!r}")
    final = _final_rows(table).set_index(["teacher", "seed"])
    scores = pd.DataFrame(
        {
            "pct_mastered": final["pct_mastered"],
            "mean_return": final["mean_return"],
            "auc": table.groupby(["teacher", "seed"], sort=False)["pct_mastered"].mean(),
            f"cvar_{CVAR_ALPHA}": final[f"cvar_{CVAR_ALPHA}"],
            "solve_sampled": final["solve_sampled"],
        }
    )
    labels = list(dict.fromkeys(table["teacher"]))
    if baseline not in labels:
        raise ConfigError(f"baseline {baseline} has no finished results ({', '.join(labels)})")
    base = scores.loc[baseline, metric]
    p = {t: welch_p(scores.loc[t, metric], base) for t in labels if t != baseline}
    p_holm = holm(p)
    iqm = iqm_table(table[list(RESULT_COLUMNS)], baseline, reps=reps).set_index("teacher")
    rows = []
    for teacher in labels:
        runs = scores.loc[teacher]
        row = {"teacher": teacher, "seeds": len(runs)}
        for column in TESTED_METRICS:
            row[column], row[f"{column}_se"] = mean_se(runs[column])
        row["p"] = p.get(teacher, math.nan)
        row["p_holm"] = p_holm.get(teacher, math.nan)
        if teacher in iqm.index:
            row.update({k: 100 * iqm.loc[teacher, k] for k in ("iqm", "ci_low", "ci_high")})
        row.update(costs.get(teacher, {}))
        rows.append(row)
    summary = pd.DataFrame(rows)
    summary.attrs["metric"] = metric
    return summary


def task_feasibility(
    out: Path, labels: Sequence[str], scripted: np.ndarray | None = None
) -> pd.DataFrame:
    """Per test task: `best` (the highest final greedy success of any teacher's student),
    `solved_by` (the share of all final students that succeed), `scripted` (a scripted
    controller's success, NaN without one) and its test group. The measured shares of a
    space: infeasible where no student and no controller succeeds, trivial where every
    student does (the task cannot tell teachers apart)."""
    finals = []
    for label in labels:
        arrays = load_cell_arrays(out, label)
        finals.append(arrays["task_success"][-1].astype(np.float64))  # [S, M]
        names = arrays["test_names"]
    success = np.concatenate(finals)  # [all students, M]
    return pd.DataFrame(
        {
            "name": [str(n) for n in names],
            "group": [_group_of(n) for n in names],
            "best": success.max(axis=0),
            "solved_by": (success >= 0.5).mean(axis=0),
            "scripted": np.full(len(names), np.nan) if scripted is None else scripted,
        }
    )


def feasibility_shares(per_task: pd.DataFrame, groups: Sequence[str]) -> pd.DataFrame:
    """Per test group: the share of its tasks no final student solves, of those no
    scripted controller solves either (infeasible, as measured), solved by the scripted
    controller, and solved by every final student (trivial)."""
    rows = []
    for group in groups:
        tasks = per_task if group == ALL else per_task[per_task.group == group]
        no_student = tasks.best < 0.5
        has_script = bool(tasks.scripted.notna().all())
        scripted = tasks.scripted >= 0.5
        rows.append(
            {
                "group": group,
                "tasks": len(tasks),
                "no_student": 100 * float(no_student.mean()),
                "infeasible": 100 * float((no_student & ~scripted).mean())
                if has_script
                else math.nan,
                "scripted_solves": 100 * float(scripted.mean()) if has_script else math.nan,
                "trivial": 100 * float((tasks.solved_by >= 1.0).mean()),
            }
        )
    return pd.DataFrame(rows)


def scripted_success(suite: Mapping, tasks: np.ndarray) -> np.ndarray | None:
    """A scripted controller's success on `tasks` [M, D] for a results directory's env
    (`suite`: its suite.json), where envs.scripted has one for it; else None."""
    from envs.registry import make_env
    from envs.scripted import SCRIPTED
    from envs.scripted import scripted_success as play

    env_config = dict(suite["base"]["env"])
    if env_config.get("name") != "gymnax" or env_config.get("id") not in SCRIPTED:
        return None
    env = make_env(env_config.pop("name"), **env_config)
    return np.asarray(play(env, tasks), np.float64)


def teacher_costs(out: Path, labels: Sequence[str], baseline: str) -> dict[str, dict]:
    """Per teacher: wall seconds of its cell (compile included) and as a multiple of the
    baseline's, training env steps and extra env steps (outside training) per seed. A
    cell resumed from a checkpoint has no wall time: it would count only the rest."""
    provenance = load_provenance(out) or {}
    cells = {t: provenance.get("cells", {}).get(f"{t}__{DEFAULT.key}", {}) for t in labels}
    wall = {t: None if c.get("resumed") else c.get("wall_seconds") for t, c in cells.items()}
    costs = {}
    for teacher in labels:
        arrays = load_cell_arrays(out, teacher)
        seconds = wall.get(teacher)
        costs[teacher] = {
            "wall_seconds": math.nan if seconds is None else float(seconds),
            "wall_x_baseline": (
                float(seconds) / float(wall[baseline])
                if seconds is not None and wall.get(baseline)
                else math.nan
            ),
            "train_env_steps": (
                float(arrays["env_steps"][-1].mean()) if arrays is not None else math.nan
            ),
            "extra_env_steps": (
                float(arrays["offline_env_steps"][-1].mean()) if arrays is not None else math.nan
            ),
        }
    return costs


# -- the report ---------------------------------------------------------------------------

REPORT_FILES = ("report.md", "report.json", "curves.png", "samples.png", "iqm.png")


def _fmt(row: Mapping, column: str, digits: int = 1) -> str:
    mean, se = row.get(column, math.nan), row.get(f"{column}_se", math.nan)
    if mean is None or not np.isfinite(mean):
        return "–"
    return f"{mean:.{digits}f} ± {se:.{digits}f}" if np.isfinite(se) else f"{mean:.{digits}f}"


def _fmt_p(value: float) -> str:
    if not np.isfinite(value):
        return "–"
    return f"{value:.2g}" if value >= 1e-3 else f"{value:.1e}"


def _steps(value: float) -> str:
    if not np.isfinite(value):
        return "–"
    return f"{value / 1e6:.2f}M" if value >= 1e5 else f"{value:,.0f}"


def table_markdown(table: pd.DataFrame) -> str:
    """A `group_table` as Markdown; the p columns name the metric tested."""
    metric = table.attrs.get("metric", "pct_mastered")
    header = (
        "| teacher | seeds | final % mastered | mean return | AUC | CVaR@0.1 | solve rate "
        f"(sampled) | p vs baseline ({metric}) | p (Holm) | IQM [95% CI] | wall × baseline | "
        "training steps | extra steps |"
    )
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for _, row in table.iterrows():
        iqm = (
            f"{row['iqm']:.1f} [{row['ci_low']:.1f}, {row['ci_high']:.1f}]"
            if np.isfinite(row.get("iqm", math.nan))
            else "–"
        )
        wall = row.get("wall_x_baseline", math.nan)
        lines.append(
            f"| {row['teacher']} | {row['seeds']} | {_fmt(row, 'pct_mastered')} | "
            f"{_fmt(row, 'mean_return')} | {_fmt(row, 'auc')} | "
            f"{_fmt(row, f'cvar_{CVAR_ALPHA}', 2)} | {_fmt(row, 'solve_sampled', 2)} | "
            f"{_fmt_p(row['p'])} | {_fmt_p(row['p_holm'])} | {iqm} | "
            f"{'–' if not np.isfinite(wall) else f'{wall:.2f}'} | "
            f"{_steps(row.get('train_env_steps', math.nan))} | "
            f"{_steps(row.get('extra_env_steps', math.nan))} |"
        )
    return "\n".join(lines) + "\n"


def decisions(table: pd.DataFrame, rule: DecisionRule) -> dict[str, bool]:
    """Per teacher but the baseline: whether it helps under `rule` (on the group's table)."""
    base = table[table.teacher == rule.baseline].iloc[0]
    return {
        row["teacher"]: bool(
            row[rule.metric] > base[rule.metric]
            and np.isfinite(row["p_holm"])
            and row["p_holm"] < rule.alpha
        )
        for _, row in table.iterrows()
        if row["teacher"] != rule.baseline
    }


def protocol_check(provenance: Mapping) -> dict | None:
    """For a confirmatory run: its protocol record, and whether the protocol's commit is
    an ancestor of every cell's commit (`ancestor`: True, False, or None where git cannot
    tell)."""
    record = provenance.get("protocol")
    if not record:
        return None
    commits = {
        cell["git_commit"] for cell in provenance.get("cells", {}).values() if "git_commit" in cell
    } or {provenance.get("git_commit", "unknown")}
    verdicts = [is_ancestor(record["commit"], c) if record.get("commit") else None for c in commits]
    ancestor = False if False in verdicts else (None if None in verdicts else True)
    return {**record, "run_commits": sorted(commits), "ancestor": ancestor}


def plot_group_curves(tables: Mapping[str, pd.DataFrame], baseline: str, title: str = ""):
    """% mastered against env steps per seed, mean ± SE over seeds: one panel per test group,
    one line per teacher (the baseline dashed), every panel on the same axes."""
    import matplotlib.pyplot as plt

    from acl.benchmark.figures import teacher_colors
    from acl.core.plot_style import BAND_ALPHA, legend_outside, se_band_label, steps_axis

    groups = list(tables)
    fig, axes = plt.subplots(
        1, len(groups), figsize=(4.2 * len(groups), 3.4), squeeze=False, sharex=True, sharey=True
    )
    seeds = []
    for ax, group in zip(axes[0], groups, strict=True):
        table = tables[group]
        labels = list(dict.fromkeys(table["teacher"]))
        colors = teacher_colors(labels)
        for teacher in labels:
            rows = table[table.teacher == teacher]
            steps, mean, se = mean_se_by_step(rows, "pct_mastered")
            style = "--" if teacher == baseline else "-"
            ax.plot(steps, mean, style, marker=".", label=teacher, color=colors[teacher])
            ax.fill_between(
                steps, mean - se, mean + se, color=colors[teacher], alpha=BAND_ALPHA, lw=0
            )
            seeds.append(rows["seed"].nunique())
        ax.set_title(f"test group: {group}", fontsize=9)
        ax.set_xlabel("training env steps per seed")
        steps_axis(ax.xaxis)
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("% mastered")
    if title:
        fig.suptitle(title, fontsize=10)
    legend_outside(fig, list(axes[0]), band=se_band_label(seeds), title="teacher")
    fig.tight_layout()
    return fig


def sample_projection(samples: Mapping[str, np.ndarray], names: Sequence[str]):
    """(2-D points per teacher, axis labels): the task dimensions themselves in 2-D (the
    first two of a 1-D space padded with 0), else the first two principal components of
    every teacher's samples pooled."""
    pooled = np.concatenate([s for s in samples.values() if len(s)])
    dim = pooled.shape[1]
    if dim <= 2:
        pad = lambda x: np.pad(x, ((0, 0), (0, 2 - dim)))  # noqa: E731
        labels = [*names[:dim], ""][:2]
        return {t: pad(s) for t, s in samples.items()}, labels
    centre = pooled.mean(axis=0)
    scale = pooled.std(axis=0) + 1e-9
    _, _, vt = np.linalg.svd((pooled - centre) / scale, full_matrices=False)
    project = lambda x: ((x - centre) / scale) @ vt[:2].T  # noqa: E731
    return {t: project(s) for t, s in samples.items()}, ["PC 1", "PC 2"]


def plot_samples(summary: ShootoutSummary):
    """Where each teacher sampled: every seed's logged training tasks, the first half of
    the evaluation periods in blue and the second in orange, over the test tasks (grey
    crosses); one panel per teacher, in 2-D (`sample_projection`), all on the same axes."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from acl.core.plot_style import FIRST_HALF, SECOND_HALF, legend_outside

    out, labels = summary.out, summary.labels
    samples, late = {}, {}
    for teacher in labels:
        arrays = load_cell_arrays(out, teacher)
        tasks = arrays["sampled_tasks"]  # [C, S, L, D]
        c, s, n, d = tasks.shape
        samples[teacher] = tasks.reshape(-1, d)
        late[teacher] = np.repeat(np.arange(c) >= c / 2, s * n)
    samples["test set"] = summary.test_tasks
    projected, axis_labels = sample_projection(samples, summary.task_names)
    cols = min(4, len(labels))
    rows = math.ceil(len(labels) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.3 * cols, 3.0 * rows), squeeze=False, sharex=True, sharey=True
    )
    for ax in axes.flat[len(labels) :]:
        ax.axis("off")
    test = projected["test set"]
    pooled = np.concatenate([projected[t] for t in labels] + [test])
    for ax, teacher in zip(axes.flat, labels, strict=False):
        points = projected[teacher]
        for half, color in ((~late[teacher], FIRST_HALF), (late[teacher], SECOND_HALF)):
            ax.scatter(points[half, 0], points[half, 1], s=2, color=color, alpha=0.4, lw=0)
        # Above the samples, so that the test set stays visible.
        ax.scatter(test[:, 0], test[:, 1], marker="x", s=8, color="0.3", lw=0.6, zorder=3)
        ax.set_title(teacher, fontsize=9)
        ax.set_xlabel(axis_labels[0])
        ax.set_ylabel(axis_labels[1])
        ax.xaxis.set_tick_params(labelbottom=True)
        ax.yaxis.set_tick_params(labelleft=True)
    for axis, set_scale in enumerate((axes.flat[0].set_xscale, axes.flat[0].set_yscale)):
        if _spans_decades(pooled[:, axis]):
            set_scale("log")  # shared: every panel follows

    def dot(color: str, marker: str = "o") -> Line2D:
        return Line2D([], [], ls="", marker=marker, ms=5, color=color)

    extra = [
        (dot(FIRST_HALF), "first half of training"),
        (dot(SECOND_HALF), "second half of training"),
        (dot("0.3", "x"), "test tasks"),
    ]
    legend_outside(fig, [], extra=extra)
    fig.suptitle(f"tasks handed out: {summary.suite}", fontsize=10)
    fig.tight_layout()
    return fig


def _spans_decades(values: np.ndarray) -> bool:
    """Whether positive values span two decades or more (JaxUED's log-spaced test grid
    reads on log axes)."""
    return bool(len(values) and values.min() > 0 and values.max() / values.min() >= 100)


@dataclass(frozen=True)
class ShootoutSummary:
    """Everything the report shows of a shoot-out's results directory (`summarize`)."""

    out: Path
    baseline: str
    rule: DecisionRule
    labels: tuple[str, ...]
    seeds: tuple[int, ...]
    test_names: tuple[str, ...]
    test_tasks: np.ndarray
    """[M, D] the test set."""
    task_names: tuple[str, ...]
    """The task dimensions' names (a config's `env.task` keys), or ()."""
    tables: dict[str, pd.DataFrame]
    """Per test group: the results (`group_results`)."""
    summaries: dict[str, pd.DataFrame]
    """Per test group: one row per teacher (`group_table`) against `baseline`."""
    decisions: dict[str, bool] | None
    """Per teacher: whether it helps under `rule`, on the rule's test group against the
    rule's baseline; None where the run lacks either."""
    protocol: dict | None
    """A confirmatory run's protocol record and ancestry check (`protocol_check`)."""
    refused: tuple[str, ...]
    """The teachers refused, each with its reason."""
    warnings: tuple[str, ...]
    """The teachers that cannot adapt within the budget (`schedule_warnings`)."""
    suite: str
    feasibility: pd.DataFrame
    """Per test group: the measured infeasible and trivial shares (`feasibility_shares`)."""
    per_task: pd.DataFrame
    """Per test task: best and share of final students solving it, scripted success."""


def summarize(
    out: str | Path,
    baseline: str | None = None,
    rule: DecisionRule | None = None,
    reps: int = 2000,
) -> ShootoutSummary:
    """The tables, decisions and protocol check of a shoot-out's results directory.
    `baseline` None: the rule's, else `default_baseline`; `rule` None: the provenance's
    protocol's, else `DecisionRule` on every test task."""
    out = Path(out)
    results = load_results(out)
    provenance = load_provenance(out) or {}
    labels = list(dict.fromkeys(results["teacher"]))
    check = protocol_check(provenance)
    if rule is None and check is not None:
        registered = check["decision_rule"]
        fields = ("metric", "test_group", "baseline", "alpha")
        rule = DecisionRule(**{k: registered[k] for k in fields})
    baseline = baseline or (rule.baseline if rule else default_baseline(labels))
    rule = rule or DecisionRule(baseline=baseline)
    first = load_cell_arrays(out, labels[0])
    if first is None:
        raise ConfigError(f"{out}: no cells/*.npz; was it run by acl shootout (or acl benchmark)?")
    groups = test_groups(first["test_names"])
    if len(groups) > 1:
        groups.append(ALL)
    costs = teacher_costs(out, labels, baseline)
    tables = {g: group_results(out, labels, g) for g in groups}
    summaries = {
        g: group_table(t, baseline, costs, reps=reps, metric=rule.metric) for g, t in tables.items()
    }
    suite = json.loads((out / "suite.json").read_text())
    per_task = task_feasibility(out, labels, scripted_success(suite, first["test_tasks"]))
    verdict = None
    if rule.test_group in tables and rule.baseline in labels:
        decisive = summaries[rule.test_group]
        if rule.baseline != baseline:  # p-values against the rule's baseline
            decisive = group_table(
                tables[rule.test_group], rule.baseline, costs, reps=reps, metric=rule.metric
            )
        verdict = decisions(decisive, rule)
    return ShootoutSummary(
        out=out,
        baseline=baseline,
        rule=rule,
        labels=tuple(labels),
        seeds=tuple(int(s) for s in sorted(results["seed"].unique())),
        test_names=tuple(str(n) for n in first["test_names"]),
        test_tasks=first["test_tasks"],
        task_names=tuple(task_names(out)),
        tables=tables,
        summaries=summaries,
        decisions=verdict,
        protocol=check,
        refused=tuple(provenance.get("refused", ())),
        warnings=tuple(provenance.get("warnings", ())),
        suite=str(provenance.get("suite", out.name)),
        feasibility=feasibility_shares(per_task, groups),
        per_task=per_task,
    )


def report_markdown(summary: ShootoutSummary) -> str:
    """report.md: the note on the columns, the refusals, a table per test group, the
    decision and the protocol check."""
    seeds, baseline = summary.seeds, summary.baseline
    lines = [
        f"# Shoot-out: {summary.suite}",
        "",
        f"Seeds {seeds[0]}–{seeds[-1]} ({len(seeds)}), baseline **{baseline}**. Final = the "
        "last evaluation; AUC = mean % mastered over the evaluations; CVaR@0.1 = mean "
        "sampled-action success on the worst 10% of the group's test tasks (ranked on "
        "even attempts, measured on odd ones); p = Welch's t-test of the decision rule's "
        f"metric ({summary.rule.metric}) against {baseline}, Holm-corrected over the "
        f"{len(summary.labels) - 1} teachers compared; IQM over seeds with a "
        "stratified-bootstrap 95% CI (rliable). Wall time is each teacher's cell, compile "
        "included.",
        "",
    ]
    lines += [f"- {line}" for line in (*summary.refused, *summary.warnings)]
    if summary.refused or summary.warnings:
        lines.append("")
    for group, table in summary.summaries.items():
        size = sum(_group_of(n) == group or group == ALL for n in summary.test_names)
        lines += [f"## Test group: {group} ({size} tasks)", "", table_markdown(table)]
        if group == summary.rule.test_group and summary.decisions is not None:
            lines += ["", f"Decision rule: {summary.rule.text}.", ""]
            lines += [
                f"- {t}: {'helps' if v else 'no difference claimed'}"
                for t, v in summary.decisions.items()
            ]
        lines.append("")
    lines += [
        "## Infeasible and trivial shares",
        "",
        "Share of each group's test tasks (%) that no final student solves (greedy), of "
        "those that a scripted controller does not solve either (infeasible, as measured; "
        "– without a controller for this env), that the scripted controller solves, and "
        "that every final student solves (trivial: it cannot tell teachers apart).",
        "",
        "| group | tasks | no student | infeasible | scripted controller | trivial |",
        "|---|---|---|---|---|---|",
    ]
    for _, row in summary.feasibility.iterrows():
        cells = [
            "–" if not np.isfinite(row[c]) else f"{row[c]:.0f}"
            for c in ("no_student", "infeasible", "scripted_solves", "trivial")
        ]
        lines.append(f"| {row['group']} | {row['tasks']} | " + " | ".join(cells) + " |")
    lines.append("")
    check = summary.protocol
    if check is not None:
        ancestor = {True: "yes", False: "NO", None: "could not be checked"}[check["ancestor"]]
        lines += [
            "## Protocol",
            "",
            f"Protocol file {check['file']} (sha256 {check['sha256'][:12]}…), committed in "
            f"{str(check.get('commit'))[:12]}; its commit is an ancestor of every cell's "
            f"commit: **{ancestor}**.",
            "",
        ]
    return "\n".join(lines)


def write_shootout_report(
    out: str | Path,
    baseline: str | None = None,
    rule: DecisionRule | None = None,
    reps: int = 2000,
    report_dir: str | Path | None = None,
) -> dict[str, Path]:
    """Write REPORT_FILES into `report_dir` (default OUT/report) from a shoot-out's results
    directory OUT (`summarize`); returns {file name: path}."""
    from acl.benchmark.figures import plot_iqm
    from acl.core.plot_style import save

    summary = summarize(out, baseline, rule, reps)
    report_dir = Path(report_dir) if report_dir is not None else summary.out / "report"
    report_dir.mkdir(parents=True, exist_ok=True)
    paths = {name: report_dir / name for name in REPORT_FILES}
    paths["report.md"].write_text(report_markdown(summary))
    document = {
        "baseline": summary.baseline,
        "decision_rule": dataclasses.asdict(summary.rule),
        "decisions": summary.decisions,
        "groups": {g: t.to_dict(orient="records") for g, t in summary.summaries.items()},
        "refused": list(summary.refused),
        "warnings": list(summary.warnings),
        "protocol_check": summary.protocol,
        "feasibility": summary.feasibility.to_dict(orient="records"),
    }
    paths["report.json"].write_text(json.dumps(jsonable(document), indent=2))
    tables = summary.tables
    decisive = tables.get(summary.rule.test_group, tables[list(tables)[-1]])
    figures = (
        ("curves.png", plot_group_curves(tables, summary.baseline, f"% mastered: {summary.suite}")),
        ("samples.png", plot_samples(summary)),
        ("iqm.png", plot_iqm(iqm_table(decisive[list(RESULT_COLUMNS)], summary.baseline, reps))),
    )
    for name, fig in figures:
        save(fig, paths[name])
    return paths


def _group_of(name: str) -> str:
    """A test task's group: its name's part before "/"; ALL for a name without one."""
    name = str(name)
    return name.split("/")[0] if "/" in name else ALL


def task_names(out: Path) -> list[str]:
    """The task dimensions' names of a results directory's env config (its `env.task`
    keys), or [] where the config names none."""
    suite = json.loads((Path(out) / "suite.json").read_text())
    task = suite["base"]["env"].get("task")
    return list(task) if isinstance(task, dict) else []
