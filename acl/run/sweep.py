"""Hyperparameter sweeps as one compiled program.

    sweep = parse_sweep(["agent.learning_rate=1e-4,3e-4,1e-3", "teacher.mutation_std=0.1,0.2"])
    table = run_sweep(config, sweep, "runs/lr_sweep")

Numeric hyperparameters are pytree leaves (acl.core.hparams): the agent's `hyper` struct in its
state and the teacher's params (`RunData.teacher_params`). A sweep builds them once per
combination of the swept values (the values of several keys are crossed), stacks them
over combination x seed, and runs every combination's seeds as one vmap of the loop
(`RunData.agent_hyper`, `RunData.teacher_params`, `data_axis=0`): one compile for the
whole sweep. Keys that set shapes or the program's structure (loop sizes, network widths,
anything but a numeric leaf) cannot share a program and are refused.

Each combination gets a run directory of its own under the output directory, laid out as
`run_experiment`'s (its config.yaml holds its values); the output directory also gets
sweep.csv (one row per combination) and sweep.json (the spec and the sweep's timings).
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
import yaml
from tqdm.auto import tqdm

from acl.agents import AGENTS
from acl.build import build_components, make_train, run_data
from acl.config import ExperimentConfig, config_keys, parse_config
from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.hparams import HParam
from acl.loop.train import Components, RunData, Trainer
from acl.run.experiment import (
    TrainingDiverged,
    check_finite,
    run_summary,
    task_names,
    write_chunk,
    write_summary_and_plot,
)
from acl.run.loggers import close_all, make_loggers
from acl.run.results import RunDir, format_mean_se, format_table
from acl.teachers import TEACHERS

SWEEP_FILE = "sweep.csv"
SWEEP_SPEC_FILE = "sweep.json"
_NUMBER_KINDS = ("float", "int")
_STATIC = (
    "not a numeric hyperparameter (pytree leaf) of the agent or teacher: it changes array "
    "shapes or the compiled program, so it cannot share one compiled program; run one "
    "config per value"
)


def parse_sweep(items: Sequence[str]) -> dict[str, list[Any]]:
    """`KEY=V1,V2,...` strings (the `--sweep` flag) as key -> values, each value read as
    a YAML scalar; ConfigError for a malformed item, an empty value or a repeated key."""
    sweep: dict[str, list[Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--sweep: expected key=value,value,..., got '{item}'")
        texts = [text.strip() for text in raw.split(",")]
        if not raw.strip() or any(not text for text in texts):
            raise ConfigError(f"--sweep {key}: empty value in '{raw}'; give value,value,...")
        if key in sweep:
            raise ConfigError(f"--sweep {key}: given twice; list all its values in one flag")
        sweep[key] = [yaml.safe_load(text) for text in texts]
    return sweep


def _leaf_specs(components: Components, section: str) -> dict[str, HParam]:
    """Sweepable key -> declaration of the built agent (its `hyper` struct) or teacher
    (its `nested` params; those of its `configured_teacher`, the one the config's
    `teacher` section sets, not a challenge wrapped around it)."""
    if section == "agent":
        hyper = components.agent.hyper
        return hparams.leaf_specs(hyper) if dataclasses.is_dataclass(hyper) else {}
    teacher = components.teacher.configured_teacher
    return hparams.leaf_specs(teacher) if dataclasses.is_dataclass(teacher) else {}


def check_sweep(config: ExperimentConfig, sweep: Mapping[str, Sequence[Any]]) -> dict:
    """The sweep with its values validated (their declared normal form, e.g. "1e-3" ->
    0.001); ConfigError naming the key when it is unknown, not a numeric leaf, has no or
    repeated values, or a value its declaration refuses."""
    if not sweep:
        raise ConfigError("--sweep: give at least one key=value,value,...")
    components = None
    checked = {}
    for key, values in sweep.items():
        section, _, name = key.partition(".")
        if section not in ("agent", "teacher") or not name or "." in name:
            if section in ("seed", "num_seeds"):
                raise ConfigError(f"--sweep {key}: the seeds are vmapped already; use --seeds")
            top = {f.name for f in dataclasses.fields(ExperimentConfig)}
            if section not in top:
                raise hparams.unknown_key("--sweep", section, top)
            raise ConfigError(f"--sweep {key}: {_STATIC}")
        registry = AGENTS if section == "agent" else TEACHERS
        factory = registry.get(getattr(config, section).name, f"{section}.name")
        allowed = config_keys(factory)
        if name not in allowed:
            raise hparams.unknown_key(f"--sweep {section}", name, allowed)
        components = components or build_components(config)
        spec = _leaf_specs(components, section).get(name)
        if spec is None:
            raise ConfigError(f"--sweep {key}: {_STATIC}")
        if spec.kind not in _NUMBER_KINDS:
            raise ConfigError(
                f"--sweep {key}: a {spec.kind} hyperparameter; a sweep takes numbers "
                "(run one config per value)"
            )
        values = list(values)
        if not values:
            raise ConfigError(f"--sweep {key}: no values")
        normal = [spec.check(value, key) for value in values]
        if None in normal:
            raise ConfigError(f"--sweep {key}: null derives the value; give numbers")
        if len(set(normal)) != len(normal):
            raise ConfigError(f"--sweep {key}: a value is given twice in {values}")
        checked[key] = normal
    return checked


def combinations(sweep: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the swept values (the last key varies fastest)."""
    keys = list(sweep)
    return [dict(zip(keys, values)) for values in itertools.product(*sweep.values())]


def combination_config(config: ExperimentConfig, values: Mapping[str, Any]) -> ExperimentConfig:
    """`config` with `values` (dotted agent/teacher keys) set, validated as a config."""
    data = config.to_dict()
    for key, value in values.items():
        section, _, name = key.partition(".")
        data[section][name] = value
    return parse_config(data)


def combination_name(values: Mapping[str, Any]) -> str:
    """The run directory name of a combination, e.g. "agent.learning_rate=0.0003"."""
    return ",".join(f"{key}={value:g}" for key, value in values.items())


@dataclass(frozen=True)
class SweepPlan:
    """A checked sweep: one config and run data per combination, and the one program."""

    configs: list[ExperimentConfig]
    values: list[dict[str, Any]]
    trainer: Trainer
    """The loop all combinations share (built from the first combination's config)."""
    data: RunData
    """Every combination's run data for each of its seeds, stacked [C * S, ...]."""


def plan_sweep(config: ExperimentConfig, sweep: Mapping[str, Sequence[Any]]) -> SweepPlan:
    """Check the sweep, build every combination's components (their own checks run) and
    stack their numeric leaves; no compile."""
    checked = check_sweep(config, sweep)
    values = combinations(checked)
    configs = [combination_config(config, v) for v in values]
    sweeps_agent = any(key.startswith("agent.") for key in checked)
    sweeps_teacher = any(key.startswith("teacher.") for key in checked)
    trainers, datas = [], []
    for combo in configs:
        trainer = make_train(combo)
        data = run_data(combo, trainer) or RunData()
        if sweeps_agent:
            data = data.replace(agent_hyper=hparams.leaves(trainer.agent.hyper))
        if sweeps_teacher and data.teacher_params is None:
            data = data.replace(teacher_params=trainer.teacher.default_params())
        trainers.append(trainer)
        datas.append(data)
    shapes = [jax.tree.map(lambda x: (np.shape(x), np.asarray(x).dtype), d) for d in datas]
    for combo, shape in zip(values[1:], shapes[1:]):
        if shape != shapes[0]:
            raise ConfigError(
                f"--sweep {combination_name(combo)}: changes the shapes of the run's "
                "data, so it cannot share one compiled program; run one config per value"
            )
    seeds = config.num_seeds

    def stack(*leaves):
        # Combination-major: element c * S + s is seed s of combination c.
        return np.repeat(np.stack([np.asarray(x) for x in leaves]), seeds, axis=0)

    data = jax.tree.map(stack, *datas)
    return SweepPlan(configs, values, trainers[0], data)


def _split(tree: Any, index: int, seeds: int) -> Any:
    return jax.tree.map(lambda x: x[index * seeds : (index + 1) * seeds], tree)


def run_sweep(
    config: ExperimentConfig,
    sweep: Mapping[str, Sequence[Any]],
    out: str | Path,
    progress: bool = True,
    log: Sequence[str] = (),
) -> list[dict]:
    """Run every combination of `sweep` (key -> values) x the config's seeds as one vmap.

    Writes one run directory per combination under `out` (named by `combination_name`),
    sweep.csv and sweep.json; `log` names acl.run.loggers backends, one logger per
    combination. A combination whose loss or return becomes non-finite is recorded as
    diverged (its metrics are still written); the others run on. Returns sweep.csv's rows.
    """
    plan = plan_sweep(config, sweep)
    trainer, seeds_count = plan.trainer, config.num_seeds
    out = Path(out)
    seeds = [config.seed + i for i in range(seeds_count)]
    run_dirs = [RunDir(out / combination_name(v)) for v in plan.values]
    for run_dir, combo in zip(run_dirs, plan.configs):
        run_dir.write_config(combo.to_dict(), seeds)
    names = task_names(trainer)
    loggers = [make_loggers(log, d.path, c, names) for d, c in zip(run_dirs, plan.configs)]
    try:
        carry, finals, diverged, timing = _run(plan, run_dirs, seeds, loggers, progress)
    finally:
        for group in loggers:
            close_all(group)

    rows = []
    states = jax.device_get(carry.seed.agent_state)
    for index, (run_dir, combo, values) in enumerate(zip(run_dirs, plan.configs, plan.values)):
        run_dir.save_agent(_split(states, index, seeds_count))
        summary = run_summary(combo, trainer, finals[index], seeds, *timing)
        summary["sweep"] = {"index": index, "values": values}
        if diverged[index]:
            summary["diverged"] = diverged[index]
        write_summary_and_plot(run_dir, combo, summary)
        rows.append(
            {
                **values,
                "final_pct_mastered_mean": summary["final_pct_mastered_mean"],
                "final_pct_mastered_se": summary["final_pct_mastered_se"],
                "final_mean_return_mean": summary["final_mean_return_mean"],
                "final_mean_return_se": summary["final_mean_return_se"],
                "env_steps": summary["env_steps"],
                "diverged": diverged[index] or "",
                "run_dir": run_dir.path.name,
            }
        )
    _write_table(out / SWEEP_FILE, rows)
    wall_seconds, compile_seconds = timing
    env_steps = rows[0]["env_steps"] * seeds_count * len(rows)
    spec = {
        "sweep": {key: [v[key] for v in plan.values] for key in plan.values[0]},
        "combinations": len(rows),
        "seeds": seeds,
        "wall_seconds": wall_seconds,
        "compile_seconds": compile_seconds,
        "env_steps_per_second": env_steps / max(wall_seconds - compile_seconds, 1e-9),
    }
    (out / SWEEP_SPEC_FILE).write_text(json.dumps(spec, indent=2))
    return rows


def _run(plan: SweepPlan, run_dirs: list[RunDir], seeds: list[int], loggers, progress: bool):
    """Compile once, run the chunks, write each combination's share of every chunk."""
    trainer, count = plan.trainer, len(seeds)
    start = time.perf_counter()
    keys = np.tile(np.asarray(trainer.seed_keys()), (len(plan.configs), 1))
    init = trainer.jit_init_seeds(data_axis=0).lower(keys, plan.data).compile()
    carry = init(keys, plan.data)
    run_chunk = trainer.jit_run_chunk_seeds(data_axis=0).lower(carry).compile()
    compile_seconds = time.perf_counter() - start
    finals: list[Any] = [None] * len(run_dirs)
    diverged: list[str | None] = [None] * len(run_dirs)
    bar = tqdm(
        range(trainer.schedule.num_chunks),
        desc=f"{plan.configs[0].name} sweep",
        unit="eval",
        disable=not progress,
        dynamic_ncols=True,
    )
    for chunk in bar:
        first_iteration = int(carry.iteration)
        carry, metrics = run_chunk(carry)
        metrics = jax.device_get(metrics)
        for index, run_dir in enumerate(run_dirs):
            share = _split(metrics, index, count)
            rows = write_chunk(run_dir, trainer, share, chunk, seeds)
            for logger in loggers[index]:
                logger.log_chunk(chunk, rows, share)
            finals[index] = share
            if diverged[index] is None:
                try:
                    check_finite(share, first_iteration, seeds)
                except TrainingDiverged as err:
                    diverged[index] = str(err)
        best = np.nanmax([np.mean(f.eval_pct_mastered) for f in finals])
        bar.set_postfix(best_mastered=f"{best:.1f}%", steps=int(metrics.env_steps[0]))
    bar.close()
    return carry, finals, diverged, (time.perf_counter() - start, compile_seconds)


def _write_table(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def format_sweep(rows: list[dict]) -> str:
    """sweep.csv's rows as a terminal table: the swept values, % mastered and the test
    return (mean ± SE over seeds)."""
    keys = [k for k in rows[0] if "." in k]
    table = []
    for row in rows:
        line = {key: f"{row[key]:g}" for key in keys}
        line["% mastered"] = format_mean_se(
            row["final_pct_mastered_mean"], row["final_pct_mastered_se"]
        )
        line["test return"] = format_mean_se(
            row["final_mean_return_mean"], row["final_mean_return_se"]
        )
        line["env steps/seed"] = row["env_steps"]
        line["diverged"] = "yes" if row["diverged"] else ""
        table.append(line)
    columns = list(table[0])
    if not any(row["diverged"] for row in rows):
        columns.remove("diverged")
    return format_table(table, columns)


__all__ = [
    "SWEEP_FILE",
    "SweepPlan",
    "check_sweep",
    "combination_config",
    "combination_name",
    "combinations",
    "format_sweep",
    "parse_sweep",
    "plan_sweep",
    "run_sweep",
]
