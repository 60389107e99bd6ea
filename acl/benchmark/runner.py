"""The benchmark runner: teachers x challenge settings x seeds, resumable, one tidy table.

    suite = load_suite("experiments/configs/benchmark_quick.yaml")
    table = run_suite(suite, "runs/benchmark_quick")     # pandas DataFrame, also results.csv

A *cell* is one (teacher, setting): all seeds of it run as one vmap. Each teacher compiles
once; its settings are `Challenge` data fed to the same program. A finished cell is written
atomically to `cells/TEACHER__SETTING.csv`, so an interrupted benchmark re-run skips the
finished cells and ends with the same table as an uninterrupted one (runs are
deterministic on CPU). The "students" setting runs one program per student configuration
(different network shapes) and merges them: each seed's score is the mean over students.

OUT_DIR/
  suite.json        the resolved suite config; a re-run with a different one is refused,
                    except one that only adds teachers (`grows`): the finished cells stay
  provenance.json   versions, git commit, device, seeds; each cell's wall time and commit
  cells/*.csv       finished cells (restored from results.csv where missing: a committed
                    results directory need only keep results.csv)
  cells/*.npz       per finished cell: per-test-task success and return, the tasks handed
                    out, the teacher's env steps outside training (`write_cell_arrays`; the
                    shoot-out's report reads them)
  results.csv       every finished cell, in suite order (schema: RESULT_COLUMNS)

What each file, column, array and key means is documented beside its writer
(RESULTS_DIR_FILES, acl.benchmark.stats.RESULT_FIELDS, CELL_ARRAYS, SUITE_FIELDS,
BENCHMARK_PROVENANCE_FIELDS) and rendered into docs/outputs.md by `acl hparams-docs`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from acl.benchmark.stats import COLUMNS, CVAR_COLUMNS
from acl.build import build_components, challenge_data, make_challenge, make_train
from acl.config import (
    ChallengeSpec,
    ComponentConfig,
    ExperimentConfig,
    load_yaml,
    parse_config,
)
from acl.core.errors import ConfigError
from acl.loop.train import RunData
from acl.run.checkpoint import Progress, RunCheckpoints
from acl.run.results import (
    CHECKPOINTS,
    PROVENANCE_FIELDS,
    OutputField,
    attribute_docs,
    provenance,
    require_documented,
    test_set_cvar_values,
)

RESULT_COLUMNS = COLUMNS
"""One row per (teacher, challenge, expert, seed, evaluation): the schema the report reads
(its meanings: acl.benchmark.stats.RESULT_FIELDS)."""


@dataclass(frozen=True)
class SuiteConfig:
    """A benchmark suite: what runs, and at which scale."""

    suite: str
    """Suite name, e.g. "quick"."""
    base: ExperimentConfig
    """Env, agent, loop, eval, seeds; its teacher is replaced by each of `teachers`."""
    teachers: tuple[tuple[str, ComponentConfig], ...]
    """(label, teacher config) pairs; the label names the teacher in tables."""
    settings: tuple[ChallengeSpec, ...]
    """Challenge settings, each run for every teacher."""
    challenge_seed: int = 0
    """Seeds the rugged permutation and the low expert's sub-space (shared by teachers)."""
    forgetting_period: float = 0.35
    """Fraction of the run between re-initialisations of the forgetting student
    (TeachMyAgent: every 7M of 20M steps)."""
    students: tuple[tuple[str, dict], ...] = ()
    """(label, agent overrides) for the "students" setting; an `env` mapping among the
    overrides changes env kwargs instead (a different body, for Stump Tracks)."""
    challenged: bool = True
    """Teachers work in a challenge's unit cube (TeachMyAgent's setting, which every
    setting but the default needs). False: on the env's own task space, with its level
    generator (DR, PLR) as it is; only the default setting then runs (`acl shootout
    --native-space`, for envs whose levels are not uniform over a box, such as XLand's)."""

    def to_dict(self) -> dict:
        return {
            "suite": self.suite,
            "base": self.base.to_dict(),
            "teachers": {label: {"name": c.name, **c.kwargs} for label, c in self.teachers},
            "settings": [{"challenge": s.challenge, "expert": s.expert} for s in self.settings],
            "challenge_seed": self.challenge_seed,
            "forgetting_period": self.forgetting_period,
            "students": {label: dict(kw) for label, kw in self.students},
            # Absent when True, so that suites written before the key compare equal.
            **({} if self.challenged else {"challenged": False}),
        }

    def teacher_config(self, label: str) -> ExperimentConfig:
        teacher = dict(self.teachers)[label]
        return dataclasses.replace(self.base, name=f"{self.suite}_{label}", teacher=teacher)


_SUITE_DOCS = attribute_docs(SuiteConfig)
_SUITE_FORMS = {
    "base": " A resolved config, as a run's config.yaml.",
    "teachers": " In the file: {label: {name, keys...}}.",
    "settings": " In the file: [{challenge, expert}].",
    "students": " In the file: {label: agent overrides}.",
}
SUITE_FIELDS = tuple(
    OutputField(f.name, _SUITE_DOCS.get(f.name, "") + _SUITE_FORMS.get(f.name, ""))
    for f in dataclasses.fields(SuiteConfig)
)
"""suite.json's keys: the resolved suite (`SuiteConfig.to_dict`), one per SuiteConfig field."""

_SUITE_KEYS = {
    "suite",
    "base",
    "teachers",
    "settings",
    "challenge_seed",
    "forgetting_period",
    "students",
    "challenged",
}


def parse_suite(data: dict, num_seeds: int | None = None) -> SuiteConfig:
    """A SuiteConfig from a plain dict (YAML contents); names and keys are checked."""
    unknown = sorted(set(data) - _SUITE_KEYS)
    if unknown:
        raise ConfigError(f"unknown suite key(s) {unknown}; allowed: {sorted(_SUITE_KEYS)}")
    for key in ("suite", "base", "teachers", "settings"):
        if key not in data:
            raise ConfigError(f"suite config needs {key!r}")
    base = dict(data["base"])
    base.setdefault("name", data["suite"])
    if num_seeds is not None:
        base["num_seeds"] = num_seeds
    base_config = parse_config(base)
    if not isinstance(data["teachers"], dict) or not data["teachers"]:
        raise ConfigError("suite.teachers must map labels to teacher configs")
    teachers = []
    for label, kwargs in data["teachers"].items():
        kwargs = dict(kwargs or {})
        name = kwargs.pop("name", label)
        teachers.append((str(label), ComponentConfig(name, kwargs)))
    settings = []
    for entry in data["settings"]:
        entry = {"challenge": entry} if isinstance(entry, str) else dict(entry)
        settings.append(ChallengeSpec(**entry))
    if len({s.key for s in settings}) != len(settings):
        raise ConfigError("suite.settings lists a setting twice")
    students = tuple((str(k), dict(v or {})) for k, v in (data.get("students") or {}).items())
    if any(s.challenge == "students" for s in settings) and len(students) < 2:
        raise ConfigError("the students setting needs suite.students with >= 2 entries")
    period = float(data.get("forgetting_period", 0.35))
    if not 0.0 < period < 1.0:
        raise ConfigError(f"suite.forgetting_period must be in (0, 1), got {period}")
    challenged = data.get("challenged", True)
    if not isinstance(challenged, bool):
        raise ConfigError(f"suite.challenged must be true or false, got {challenged!r}")
    if not challenged and any(s != ChallengeSpec() for s in settings):
        raise ConfigError(
            "suite.challenged: false runs teachers on the env's own space, where only the "
            f"default setting is defined; got settings {[s.label for s in settings]}"
        )
    suite = SuiteConfig(
        suite=str(data["suite"]),
        base=base_config,
        teachers=tuple(teachers),
        settings=tuple(settings),
        challenge_seed=int(data.get("challenge_seed", 0)),
        forgetting_period=period,
        students=students,
        challenged=challenged,
    )
    # Every name and key is checked before anything compiles.
    for label, _ in suite.teachers:
        build_components(suite.teacher_config(label), challenged=challenged)
    for _, overrides in suite.students:
        build_components(_student_config(suite.base, overrides), challenged=challenged)
    return suite


def load_suite(path: str | Path, num_seeds: int | None = None) -> SuiteConfig:
    return parse_suite(load_yaml(path), num_seeds)


def _student_config(config: ExperimentConfig, overrides: dict) -> ExperimentConfig:
    agent = dict(config.agent.kwargs)
    name = overrides.get("name", config.agent.name)
    agent.update({k: v for k, v in overrides.items() if k not in ("name", "env")})
    env = ComponentConfig(config.env.name, {**config.env.kwargs, **overrides.get("env", {})})
    return dataclasses.replace(config, agent=ComponentConfig(name, agent), env=env)


# -- running ------------------------------------------------------------------------------


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class _Program:
    """One teacher's compiled init and chunk, reused by every challenge of that teacher."""

    def __init__(self, config: ExperimentConfig, challenged: bool = True):
        self.config = config
        self.challenged = challenged
        self.trainer = make_train(config, challenged=challenged)
        self.keys = self.trainer.seed_keys()
        self._compiled = None

    def run(
        self,
        spec: ChallengeSpec,
        challenge_seed: int,
        period: float,
        progress,
        checkpoint_dir: Path | None = None,
    ) -> tuple[list[dict], float]:
        """All chunks of one setting; returns (per-chunk results, compile seconds spent in
        this call: 0 once the teacher's program is compiled).

        `checkpoint_dir`: the carry is saved there after every chunk, and a setting that
        was stopped half-way continues from its newest checkpoint there."""
        trainer = self.trainer
        total_iterations = trainer.schedule.iterations
        reset_every = max(1, round(period * total_iterations))
        if self.challenged:
            challenge = make_challenge(trainer.env, spec, challenge_seed, reset_every)
            data = challenge_data(trainer, challenge)
        else:
            data = RunData()
        compile_seconds = 0.0
        if self._compiled is None:
            start = time.perf_counter()
            init = trainer.jit_init_seeds().lower(self.keys, data).compile()
            lowered = trainer.jit_run_chunk_seeds().lower(init(self.keys, data))
            self._compiled = (init, lowered.compile(), lowered.out_info[1])
            compile_seconds = time.perf_counter() - start
        init, chunk, metrics_shape = self._compiled
        carry = init(self.keys, data)
        chunks: list[dict] = []
        checkpoints = None if checkpoint_dir is None else RunCheckpoints(checkpoint_dir, keep=1)
        if checkpoints is not None and checkpoints.latest() is not None:
            carry, _, saved = checkpoints.restore(carry, metrics_shape)
            chunks = saved.extra["chunks"]
            progress.update(len(chunks))
        for index in range(len(chunks), trainer.schedule.num_chunks):
            carry, metrics = chunk(carry)
            metrics = jax.device_get(metrics)
            if not np.all(np.isfinite(metrics.loss)):
                raise FloatingPointError(f"non-finite loss in setting {spec.label}")
            record = {
                name: np.asarray(getattr(metrics, field)).tolist()
                for name, field in _CHUNK_FIELDS.items()
            }
            record.update({k: v.tolist() for k, v in test_set_cvar_values(metrics).items()})
            record.update(per_task_record(trainer, metrics))
            chunks.append(record)
            if checkpoints is not None:
                checkpoints.save(
                    carry, metrics, Progress(index + 1, {}, 0.0, 0.0, {"chunks": chunks})
                )
            progress.update(1)
        if checkpoints is not None:
            checkpoints.wait()
            checkpoints.close()
        return chunks, compile_seconds


_CHUNK_FIELDS = {
    "env_steps": "env_steps",
    "pct_mastered": "eval_pct_mastered",
    "mean_return": "eval_mean_return",
    "train_return": "train_return",
}
"""Result column: the chunk metric it is read from, one value per seed."""


def per_task_record(trainer, metrics) -> dict:
    """One chunk's per-test-task results and training samples, for `cells/*.npz`:
    greedy success and return [S, M], sampled-action successes [S, M, A] (with sampled
    attempts), a subsample of the tasks handed out [S, L, D] and the env steps the teacher
    played outside training so far [S] (`Teacher.offline_env_steps`)."""
    record = {
        "task_success": np.asarray(metrics.eval_solve_greedy, np.float32).tolist(),
        "task_return": np.asarray(metrics.eval_return, np.float32).tolist(),
        "sampled_tasks": np.asarray(metrics.tasks, np.float32).tolist(),
        "offline_env_steps": np.broadcast_to(
            np.asarray(trainer.teacher.offline_env_steps(metrics.teacher_snapshot), np.float64),
            np.shape(metrics.env_steps),
        ).tolist(),
    }
    if metrics.eval_success_sampled is not None:
        record["task_success_sampled"] = np.asarray(
            metrics.eval_success_sampled, np.float32
        ).tolist()
    require_documented(record, PER_TASK_ARRAYS, "cells/*.npz")
    return record


PER_TASK_ARRAYS = (
    OutputField(
        "task_success",
        "[C, S, M] float16: share of each test task's greedy episodes that succeed.",
    ),
    OutputField("task_return", "[C, S, M]: mean return of each test task's greedy episodes."),
    OutputField(
        "task_success_sampled",
        "[C, S, M, A] float16: whether each sampled-action episode succeeded (test task, attempt).",
        "`eval.sampled_attempts` >= 1",
    ),
    OutputField(
        "sampled_tasks",
        "[C, S, L, D]: a subsample of the tasks handed out in each evaluation period "
        "(`loop.task_log_size` of them), as a run's tasks.csv.",
    ),
    OutputField(
        "offline_env_steps",
        "[C, S]: env steps the teacher played outside training so far "
        "(`Teacher.offline_env_steps`: SFL's evaluation rollouts; 0 for most teachers).",
    ),
)
"""The chunk fields `per_task_record` adds, as `cells/*.npz` stacks them over evaluations."""
PER_TASK_FIELDS = tuple(field.name for field in PER_TASK_ARRAYS)
"""The chunk fields `per_task_record` adds; `cells/*.npz` stacks them over chunks."""
CELL_ARRAYS = (
    *PER_TASK_ARRAYS,
    OutputField("env_steps", "[C, S] int64: training env steps per seed at each evaluation."),
    OutputField("test_tasks", "[M, D] float32: the test set."),
    OutputField(
        "test_names",
        "[M] str: the test tasks' names (a named test set's; \"\" for a task-space set). A "
        "name's part before \"/\" is its test group in the shoot-out's report.",
    ),
    OutputField("seeds", "[S]: the seeds."),
)
"""The arrays of cells/<teacher>__<setting>.npz (`write_cell_arrays`): C evaluations, S
seeds, M test tasks, A sampled attempts, L logged tasks, D task dimensions."""


def write_cell_arrays(path: Path, trainer, chunks: list[dict]) -> None:
    """`path` (.npz): the per-task fields of every chunk stacked [C, S, ...], with the
    evaluations' env steps [C, S], the test set (`test_tasks` [M, D], `test_names` [M]: ""
    for a task-space set) and the seeds [S]."""
    plan = trainer.evaluation
    arrays = {
        name: np.asarray([chunk[name] for chunk in chunks])
        for name in PER_TASK_FIELDS
        if name in chunks[0]
    }
    for name in ("task_success", "task_success_sampled"):
        if name in arrays:
            arrays[name] = arrays[name].astype(np.float16)
    arrays["env_steps"] = np.asarray([chunk["env_steps"] for chunk in chunks], np.int64)
    arrays["test_tasks"] = np.asarray(plan.test_tasks, np.float32)
    names = plan.test_task_names or ("",) * len(plan.test_tasks)
    arrays["test_names"] = np.asarray(names, dtype=str)
    arrays["seeds"] = np.asarray(trainer.seeds.first + np.arange(trainer.seeds.count))
    require_documented(arrays, CELL_ARRAYS, "cells/*.npz")
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, path)


def cell_arrays_path(out: Path, label: str, spec: ChallengeSpec) -> Path:
    return cell_path(out, label, spec).with_suffix(".npz")


def _rows(suite: SuiteConfig, label: str, spec: ChallengeSpec, chunks: list[dict]) -> pd.DataFrame:
    seeds = [suite.base.seed + i for i in range(suite.base.num_seeds)]
    rows = []
    for chunk in chunks:
        for i, seed in enumerate(seeds):
            rows.append(
                {
                    "suite": suite.suite,
                    "env": suite.base.env.name,
                    "teacher": label,
                    "challenge": spec.challenge,
                    "expert": spec.expert,
                    "seed": seed,
                    "env_steps": int(chunk["env_steps"][i]),
                    "pct_mastered": float(chunk["pct_mastered"][i]),
                    "mean_return": float(chunk["mean_return"][i]),
                    "train_return": float(chunk["train_return"][i]),
                    # Only with eval.sampled_attempts >= 2 (and in cells run since).
                    **{c: float(chunk[c][i]) if c in chunk else np.nan for c in CVAR_COLUMNS},
                }
            )
    return pd.DataFrame(rows, columns=list(RESULT_COLUMNS))


def _merge_students(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Mean over students of each (seed, evaluation)."""
    measured = ("pct_mastered", "mean_return", "train_return", *CVAR_COLUMNS)
    keys = [c for c in RESULT_COLUMNS if c not in measured]
    merged = pd.concat(tables).groupby(keys, sort=False, as_index=False).mean()
    return merged[list(RESULT_COLUMNS)]


def cell_path(out: Path, label: str, spec: ChallengeSpec) -> Path:
    return out / "cells" / f"{label}__{spec.key}.csv"


BENCHMARK_PROVENANCE_FIELDS = (
    *(field for field in PROVENANCE_FIELDS if field.name != "resumed"),
    OutputField("suite", "The suite's name."),
    OutputField(
        "cells",
        "Per cell (`<teacher>__<setting>`), the session that computed it.",
        fields=(
            OutputField("git_commit", "The commit it ran at."),
            OutputField("wall_seconds", "Its wall-clock seconds, compile included."),
            OutputField(
                "compile_seconds", "Of which compiling (0 once the teacher's program is compiled)."
            ),
            OutputField("finished", "When it finished (UTC, ISO 8601)."),
            OutputField(
                "resumed",
                "True: the cell resumed from a killed session's checkpoint, so its wall "
                "time covers only the rest (a shoot-out's report leaves it out).",
                "only for a resumed cell",
            ),
            OutputField(
                "copied_from",
                "The no-expert cell it copies: the teacher ignores expert priors, so the "
                "expert cell would run the same program on the same data.",
                "instead of the others, for a copied cell",
            ),
        ),
    ),
    OutputField(
        "earlier_sessions",
        "The sessions before the latest, when a later one ran at another commit: the "
        "finished cells keep the record of the session that ran them.",
        "the results grew over sessions at different commits",
        fields=tuple(
            OutputField(name, "As the top-level key, for that session.")
            for name in ("git_commit", "git_dirty", "argv", "versions")
        ),
    ),
    OutputField(
        "refused",
        "The teachers the env cannot serve, each with its one-line reason.",
        "`acl shootout`",
    ),
    OutputField(
        "warnings",
        "The teachers that cannot adapt within the budget, each with one line "
        "(`acl.benchmark.shootout.schedule_warnings`).",
        "`acl shootout`",
    ),
    OutputField(
        "protocol",
        "The pre-registered protocol the run follows (`acl.benchmark.shootout.check_protocol`).",
        "`acl shootout --confirm`",
        fields=(
            OutputField("file", "The protocol file's name."),
            OutputField("sha256", "Its hash."),
            OutputField("commit", "The commit that last changed it."),
            OutputField(
                "decision_rule",
                "The rule the report decides by (metric, test group, baseline, alpha, text).",
            ),
        ),
    ),
)
"""A results directory's provenance.json (`run_suite`): a run's keys, and its cells'."""

BENCHMARK_REPORT_FILES = (
    OutputField(
        "summary.md",
        "Mean ± SE per teacher and setting with Welch's p against the baseline, the CVaR "
        "tables, ranks, TeachMyAgent's findings (Markdown).",
    ),
    OutputField("summary.tex", "The mean ± SE table in LaTeX."),
    OutputField(
        "summary.json",
        "The long summary table, the IQM CIs (with the seeds and settings they use), CVaR, "
        "ranks, findings; provenance.json where `acl report` reads a results directory.",
    ),
    OutputField("iqm.png", "rliable's IQM per teacher with stratified-bootstrap CIs."),
    OutputField("profiles.png", "rliable's performance profiles."),
    OutputField("radar.png", "Each teacher's score per setting, as a radar."),
    OutputField("curves.png", "Learning curves: % mastered against env steps, mean ± SE."),
)
"""`acl benchmark`'s report/ (acl.benchmark.report.REPORT_FILES; `acl report` writes the
same files)."""
SHOOTOUT_REPORT_FILES = (
    OutputField(
        "report.md",
        "Per test group, each teacher's final % mastered, mean return, AUC, CVaR@0.1, "
        "sampled solve rate, Welch's p (Holm-corrected), IQM, wall time and env steps; the "
        "decision rule's verdicts; infeasible and trivial shares; the protocol check.",
    ),
    OutputField("report.json", "The same tables and decisions as JSON."),
    OutputField("curves.png", "% mastered against env steps per test group, mean ± SE."),
    OutputField("samples.png", "Where each teacher sampled, over the test tasks (2-D)."),
    OutputField("iqm.png", "IQM per teacher on the decision rule's test group."),
)
"""`acl shootout`'s report/ (acl.benchmark.shootout.REPORT_FILES)."""

RESULTS_DIR_FILES = (
    OutputField(
        "suite.json",
        "The resolved suite config. A re-run with a different one is refused, except one "
        "that only adds teachers (`grows`).",
    ),
    OutputField(
        "provenance.json",
        "What produced the results. Versions, git commit, devices, seeds, command line; each "
        "cell's commit and time.",
    ),
    OutputField(
        "results.csv",
        "Every finished cell, in suite order. One row per (teacher, challenge, expert, seed, "
        "evaluation).",
    ),
    OutputField(
        "cells/<teacher>__<setting>.csv",
        "One finished cell's rows. results.csv's columns; `<setting>` is the challenge, with "
        "`+expert_<level>` for an expert setting. Restored from results.csv where missing.",
    ),
    OutputField(
        "cells/<teacher>__<setting>.npz",
        "One finished cell's per-test-task arrays. Written by `write_cell_arrays`; the "
        "shoot-out's report reads them.",
        "every setting but students",
    ),
    OutputField(
        f"{CHECKPOINTS}/<teacher>__<setting>/",
        "The carry of a cell that is running. Saved after every evaluation so that an "
        "interrupted cell continues; deleted once the cell is written.",
        "while a cell runs",
    ),
    OutputField(
        "report/",
        "The report's tables, statistics and figures (below).",
        "the suite is complete (`acl benchmark`, `acl shootout` without --no-report)",
    ),
)
"""The files of a results directory (`acl benchmark`, `acl shootout`: `run_suite`)."""


def run_suite(
    suite: SuiteConfig,
    out: str | Path,
    progress: bool = True,
    stop_after: int | None = None,
    record: dict | None = None,
) -> pd.DataFrame:
    """Run every unfinished cell of `suite` into `out`; return the tidy results table.

    `stop_after`: stop once this many cells have been computed in this call (for tests and
    for spreading a long suite over sessions); the table then holds the finished cells.
    `record`: entries added to provenance.json (a confirmatory run's protocol).
    """
    out = Path(out)
    (out / "cells").mkdir(parents=True, exist_ok=True)
    require_documented(suite.to_dict(), SUITE_FIELDS, "suite.json")
    resolved = json.dumps(suite.to_dict(), indent=2, sort_keys=True, default=str)
    suite_file = out / "suite.json"
    if suite_file.exists() and suite_file.read_text() != resolved:
        if not grows(json.loads(suite_file.read_text()), suite):
            raise ConfigError(
                f"{out} holds results of a different suite config (see its suite.json); "
                "choose another --out or delete that directory (a suite that only adds "
                "teachers, the others' configs unchanged, may reuse it)"
            )
    _write_atomic(suite_file, resolved)
    restore_cells(suite, out)
    prov_file = out / "provenance.json"
    prov = json.loads(prov_file.read_text()) if prov_file.exists() else {"cells": {}}
    seeds = [suite.base.seed + i for i in range(suite.base.num_seeds)]
    current = provenance(seeds, output_dir=out)
    if "git_commit" in prov and prov["git_commit"] != current["git_commit"]:
        # The cells finished before keep the record of the session that ran them.
        earlier = {k: prov[k] for k in ("git_commit", "git_dirty", "argv", "versions")}
        prov.setdefault("earlier_sessions", []).append(earlier)
    require_documented(
        {**current, **(record or {})}, BENCHMARK_PROVENANCE_FIELDS, "provenance.json"
    )
    prov.update(current)
    prov.update(record or {})
    prov["suite"] = suite.suite

    todo = [
        (label, spec)
        for label, _ in suite.teachers
        for spec in suite.settings
        if not cell_path(out, label, spec).exists()
    ]
    if stop_after is not None:
        todo = todo[:stop_after]
    chunks_per_cell = suite.teacher_config(suite.teachers[0][0]).loop.schedule.num_chunks
    total = sum(
        chunks_per_cell * (len(suite.students) if spec.challenge == "students" else 1)
        for _, spec in todo
    )
    bar = tqdm(total=total, desc=f"benchmark {suite.suite}", unit="eval", disable=not progress)
    programs: dict[tuple[str, str], _Program] = {}

    def program(label: str, student: tuple[str, dict] | None) -> _Program:
        key = (label, student[0] if student else "")
        if key not in programs:
            config = suite.teacher_config(label)
            if student is not None:
                config = _student_config(config, student[1])
            if any(held != label for held, _ in programs):
                programs.clear()  # one teacher's programs at a time: keeps memory flat
            programs[key] = _Program(config, suite.challenged)
        return programs[key]

    for label, spec in todo:
        bar.set_postfix(teacher=label, setting=spec.label)
        source = _prior_free_source(suite, label, spec, out)
        if source is not None:
            # The teacher ignores the expert prior: the cell is the no-expert cell's run.
            table = pd.read_csv(source).assign(expert=spec.expert)
            if source.with_suffix(".npz").exists():
                shutil.copyfile(source.with_suffix(".npz"), cell_arrays_path(out, label, spec))
            _write_atomic(cell_path(out, label, spec), table.to_csv(index=False))
            prov["cells"][f"{label}__{spec.key}"] = {"copied_from": source.stem}
            bar.update(chunks_per_cell)
            collect_results(suite, out)
            continue
        start = time.perf_counter()
        compile_seconds = 0.0
        students = suite.students if spec.challenge == "students" else [None]
        tables = []
        checkpoint_dirs = [
            out / CHECKPOINTS / (f"{label}__{spec.key}" + (f"__{s[0]}" if s else ""))
            for s in students
        ]
        # A checkpoint left by a killed run: this cell's wall time will cover only the rest.
        resumed = any(d.is_dir() and any(d.iterdir()) for d in checkpoint_dirs)
        for student, checkpoint_dir in zip(students, checkpoint_dirs, strict=True):
            chunks, seconds = program(label, student).run(
                spec,
                suite.challenge_seed,
                suite.forgetting_period,
                bar,
                checkpoint_dir=checkpoint_dir,
            )
            compile_seconds += seconds
            tables.append(_rows(suite, label, spec, chunks))
        table = _merge_students(tables) if spec.challenge == "students" else tables[0]
        if spec.challenge != "students":
            trainer = program(label, None).trainer
            write_cell_arrays(cell_arrays_path(out, label, spec), trainer, chunks)
        _write_atomic(cell_path(out, label, spec), table.to_csv(index=False))
        for checkpoint_dir in checkpoint_dirs:
            shutil.rmtree(checkpoint_dir, ignore_errors=True)
        prov["cells"][f"{label}__{spec.key}"] = {
            "git_commit": current["git_commit"],
            "wall_seconds": round(time.perf_counter() - start, 2),
            "compile_seconds": round(compile_seconds, 2),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **({"resumed": True} if resumed else {}),
        }
        _write_atomic(prov_file, json.dumps(prov, indent=2, default=str))
        collect_results(suite, out)
    bar.close()
    _write_atomic(prov_file, json.dumps(prov, indent=2, default=str))
    return collect_results(suite, out)


def restore_cells(suite: SuiteConfig, out: Path) -> int:
    """Split OUT/results.csv back into the cells it holds that have no file under cells/
    (a committed results directory keeps results.csv, not the cells), so that a suite
    that grows it runs only the new cells. Returns how many were restored."""
    table_file = out / "results.csv"
    if not table_file.exists():
        return 0
    # "none" and the like stay strings; the rows go back byte for byte.
    table = pd.read_csv(table_file, keep_default_na=False)
    restored = 0
    for label, _ in suite.teachers:
        for spec in suite.settings:
            path = cell_path(out, label, spec)
            rows = table[
                (table.teacher == label)
                & (table.challenge == spec.challenge)
                & (table.expert.astype(str) == str(spec.expert))
            ]
            if len(rows) and not path.exists():
                _write_atomic(path, rows.to_csv(index=False))
                restored += 1
    return restored


def grows(previous: dict, suite: SuiteConfig) -> bool:
    """Whether `suite` is the suite of a results directory's `previous` suite.json with
    teachers added: every other key, and each earlier teacher's config, the same once
    both are resolved with today's defaults (so a config key added to the library since,
    at its default, is no change)."""
    before = parse_suite(previous).to_dict()
    now = suite.to_dict()
    old_teachers, new_teachers = before.pop("teachers"), now.pop("teachers")
    return before == now and all(new_teachers.get(k) == v for k, v in old_teachers.items())


def takes_prior(suite: SuiteConfig, label: str) -> bool:
    """Whether teacher `label` uses an expert prior (its `takes_prior`)."""
    teacher = build_components(suite.teacher_config(label), suite.challenged).teacher
    return teacher.configured_teacher.takes_prior


def _prior_free_source(
    suite: SuiteConfig, label: str, spec: ChallengeSpec, out: Path
) -> Path | None:
    """The finished no-expert cell that an expert cell of a teacher ignoring priors
    equals by construction (same seeds, same challenge, a prior it never reads), or
    None when the cell must run."""
    if spec.expert == "none" or spec.challenge == "students" or takes_prior(suite, label):
        return None
    source = cell_path(out, label, ChallengeSpec(spec.challenge))
    return source if source.exists() else None


def collect_results(suite: SuiteConfig, out: str | Path) -> pd.DataFrame:
    """Every finished cell, in suite order, written to OUT/results.csv."""
    out = Path(out)
    tables = [
        pd.read_csv(cell_path(out, label, spec))
        for label, _ in suite.teachers
        for spec in suite.settings
        if cell_path(out, label, spec).exists()
    ]
    table = (
        pd.concat(tables, ignore_index=True)
        if tables
        else pd.DataFrame(columns=list(RESULT_COLUMNS))
    )
    _write_atomic(out / "results.csv", table.to_csv(index=False))
    return table


def is_complete(suite: SuiteConfig, out: str | Path) -> bool:
    return all(
        cell_path(Path(out), label, spec).exists()
        for label, _ in suite.teachers
        for spec in suite.settings
    )


__all__: list[Any] = [
    "RESULT_COLUMNS",
    "SuiteConfig",
    "parse_suite",
    "load_suite",
    "run_suite",
    "collect_results",
    "is_complete",
]
