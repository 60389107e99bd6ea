"""Run directories: config, provenance, metrics, curriculum record, summary, plot, params.

RUN_DIR/
  config.yaml        resolved config
  provenance.json    package versions, git commit, device, seeds, command line
  metrics.csv        one row per (evaluation, seed); with a named test set
                     (`eval.test_set`) also each test task's solve rates and returns
  tasks.csv          a subsample of the tasks handed out in each evaluation period
  teacher/eval_0000.npz ...  the teacher's internals at each evaluation (leading seed axis)
  summary.json       final figures and timings (schema: SUMMARY_KEYS)
  learning_curve.png % mastered vs env steps, mean +- SE over seeds
  agent_params.msgpack  final agent state of every seed (flax serialization)

What each file, column and key means is documented here, beside its writer (RUN_FILES,
METRICS_COLUMNS, TASKS_COLUMNS, SUMMARY_FIELDS, PROVENANCE_FIELDS, SNAPSHOT_ARRAYS), and
rendered into docs/outputs.md by `acl hparams-docs`. The writers refuse a column or key
that is not documented (`require_documented`), so the page cannot fall behind them.
"""

from __future__ import annotations

import ast
import csv
import inspect
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import zipfile
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np
import yaml
from flax import serialization

from acl.core import run_files
from acl.core.errors import ConfigError
from acl.core.risk import CVAR_ALPHAS
from acl.loop.carry import ChunkMetrics

SUMMARY_KEYS = (
    "name",
    "env",
    "teacher",
    "agent",
    "seeds",
    "env_steps",
    "final_pct_mastered_mean",
    "final_pct_mastered_se",
    "final_mean_return_mean",
    "final_mean_return_se",
    "wall_seconds",
    "compile_seconds",
    "env_steps_per_second",
)
PER_TASK_METRICS = ("solve_sampled", "solve_greedy", "return", "return_sampled")
"""Per-test-task evaluation metrics (ChunkMetrics.eval_<name>, [M] per seed), written for
named test sets; solve_sampled and return_sampled only with `eval.sampled_attempts`."""
PACKAGES = (
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "gymnax",
    "chex",
    "numpy",
    "scipy",
    "rliable",
    "orbax-checkpoint",
)
AGENT_FILE = run_files.AGENT_FILE


def enable_compilation_cache() -> None:
    """JAX's persistent compilation cache, shared by every run on this machine."""
    cache = os.environ.get("ACL_JAX_CACHE", str(Path.home() / ".cache" / "acl_jax" / "xla"))
    jax.config.update("jax_compilation_cache_dir", cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def mean_se(values, axis: int | None = None) -> tuple[Any, Any]:
    """Mean and standard error over seeds: SE = std (ddof 1) / sqrt(n).

    One seed has no spread to estimate: its SE is NaN, not 0, which would claim a
    perfectly reproducible result. Tables show it as "n/a" (`format_mean_se`). axis None:
    over every value, as floats; an axis (0 for curves [S, T]): along it, as arrays."""
    values = np.asarray(values, dtype=np.float64)
    count = values.size if axis is None else values.shape[axis]
    mean = values.mean(axis=axis)
    if count < 2:
        se = np.full_like(mean, np.nan)
    else:
        se = values.std(axis=axis, ddof=1) / np.sqrt(count)
    if axis is None:
        return float(mean), float(se)
    return mean, se


def mean_se_by_step(frame: Any, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(env steps [T], mean [T], SE [T]) of `column` over the rows (seeds, runs) at each
    `env_steps` of a long metrics frame; missing values are skipped (as pandas does), and a
    step with one value has a band of width 0."""
    steps, stats = [], []
    for step, values in frame.groupby("env_steps")[column]:
        steps.append(step)
        stats.append(mean_se(values.dropna().to_numpy()))
    mean, se = np.asarray(stats, np.float64).reshape(-1, 2).T
    return np.asarray(steps), mean, np.nan_to_num(se)


NOT_AVAILABLE = "n/a"
"""How a table shows a NaN: an SE over one seed, a figure that does not apply."""


def format_number(value: Any, digits: int = 1) -> str:
    """`value` with `digits` decimals; NaN as "n/a"."""
    value = float(value)
    return NOT_AVAILABLE if math.isnan(value) else f"{value:.{digits}f}"


def format_mean_se(mean: float, se: float, digits: int = 1, pm: str = "±") -> str:
    """ "12.3 ± 4.5", or "12.3 ± n/a" when the SE is NaN (one seed)."""
    return f"{format_number(mean, digits)} {pm} {format_number(se, digits)}"


def per_task_values(metrics: Any) -> dict[str, np.ndarray]:
    """The per-test-task metrics a chunk has: name -> [S, M] (seed, test task)."""
    values = {}
    for name in PER_TASK_METRICS:
        value = getattr(metrics, f"eval_{name}", None)
        if value is not None:
            values[name] = np.asarray(value, np.float64)
    return values


def test_set_cvar_values(metrics: Any) -> dict[str, np.ndarray]:
    """CVaR of per-task success over the test set per seed, from a chunk's sampled-action
    episodes (`acl.core.risk.test_set_cvar`, at each of `acl.core.risk.CVAR_ALPHAS`):
    {"cvar_<alpha>": [S]}; {} with fewer than 2 sampled attempts per task."""
    from acl.core.risk import CVAR_ALPHAS, test_set_cvar

    success = getattr(metrics, "eval_success_sampled", None)
    if success is None or np.shape(success)[-1] < 2:
        return {}
    per_seed = [test_set_cvar(seed_success) for seed_success in np.asarray(success)]
    return {f"cvar_{a}": np.array([c[a] for c in per_seed]) for a in CVAR_ALPHAS}


def per_task_columns(metrics: Any, names: tuple[str, ...], seed_index: int) -> dict:
    """metrics.csv columns of one seed: `eval_<metric>` (the mean over test tasks) and
    `eval_<metric>/<test task>`; none without names (the task-space test set)."""
    columns = {}
    if not names:
        return columns
    for metric, value in per_task_values(metrics).items():
        row = value[seed_index]
        columns[f"eval_{metric}"] = float(row.mean())
        columns.update({f"eval_{metric}/{n}": float(v) for n, v in zip(names, row, strict=True)})
    return columns


def per_task_summary(metrics: Any, names: tuple[str, ...]) -> dict:
    """summary.json figures of a named test set from the final chunk: `final_<metric>_mean`
    / `_se` (the mean over test tasks; mean and SE over seeds) and `final_per_test_task`
    ({test task: {<metric>_mean, <metric>_se}}); {} without names."""
    if not names:
        return {}
    summary: dict[str, Any] = {"final_per_test_task": {n: {} for n in names}}
    for metric, value in per_task_values(metrics).items():
        mean, se = mean_se(value.mean(axis=1))
        summary[f"final_{metric}_mean"], summary[f"final_{metric}_se"] = mean, se
        for n, column in zip(names, value.T, strict=True):
            task_mean, task_se = mean_se(column)
            summary["final_per_test_task"][n].update(
                {f"{metric}_mean": task_mean, f"{metric}_se": task_se}
            )
    return summary


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_commit() -> str:
    """The checked-out commit, or "unknown" outside a git checkout."""
    return _git("rev-parse", "HEAD") or "unknown"


def git_dirty(output_dir: str | Path | None = None) -> bool | None:
    """Whether tracked files differ from `git_commit()`; None outside a git checkout.

    A pre-registered confirmatory run must record False: it ran the committed protocol.
    `output_dir`: the run's own results directory, left out of the check, since a run that
    grows or resumes committed results rewrites their tracked files before it records this.
    """
    pathspec = ["--", ":/", f":(exclude){Path(output_dir).resolve()}"] if output_dir else []
    status = _git("status", "--porcelain", "--untracked-files=no", *pathspec)
    return None if status is None else bool(status)


def package_versions(packages) -> dict[str, str | None]:
    """Installed version of each package, None where it is missing."""
    versions = {}
    for pkg in packages:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return versions


def provenance(seeds: list[int], output_dir: str | Path | None = None) -> dict:
    """What produced a run: versions, commit, whether the checkout was clean (`output_dir`,
    where the run writes, left out of that check), devices, seeds and command line."""
    return {
        "versions": package_versions(PACKAGES),
        "python": platform.python_version(),
        "git_commit": git_commit(),
        "git_dirty": git_dirty(output_dir),
        "device": [str(d) for d in jax.devices()],
        "platform": jax.default_backend(),
        "seeds": seeds,
        "argv": [_portable_path(sys.argv[0]), *sys.argv[1:]] if sys.argv else [],
    }


def _portable_path(path: str) -> str:
    """A script path relative to the repository (no machine paths in results)."""
    root = Path(__file__).resolve().parent.parent
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return Path(path).name


def check_run_dir(path: str | Path, field_name: str = "--out") -> None:
    """ConfigError naming `field_name` unless `path` can become a run directory: neither
    it nor a parent may be a file. Checked before compiling, so a bad path costs nothing."""
    path = Path(path)
    for part in (path, *path.parents):
        if part.exists() and not part.is_dir():
            what = "is" if part == path else f"lies under '{part}', which is"
            raise ConfigError(f"{field_name}: '{path}' {what} a file, not a directory")


CHECKPOINTS = "checkpoints"
"""The folder of a run directory that holds its checkpoints (acl.run.checkpoint)."""


# -- what each output means -------------------------------------------------------------
# The tables below are the documentation of the run directory: `acl hparams-docs` renders
# them into docs/outputs.md, and the writers check what they write against them.

ALWAYS = "always"
NAMED = "named test set (`eval.test_set`)"
NAMED_SAMPLED = "named test set and `eval.sampled_attempts` >= 1"
CVAR = "`eval.sampled_attempts` >= 2"
TIME_LIMIT = "the run stopped at its time limit (`--max-minutes`)"
SWEEP = "a run directory of `acl run --sweep`"


class OutputField(NamedTuple):
    """One documented file, column or key of an output, for docs/outputs.md."""

    name: str
    """The exact name, or a pattern whose `<placeholder>` parts stand for any text (a
    test task's name, an agent metric's)."""
    meaning: str
    when: str = ALWAYS
    """When the writer writes it."""
    fields: tuple = ()
    """The keys inside it (a JSON object, or each entry of a list of objects), documented
    the same way; rendered as `name.key`."""

    def matches(self, name: str) -> bool:
        return _name_pattern(self.name).fullmatch(name) is not None


@cache
def _name_pattern(name: str) -> re.Pattern:
    parts = re.split(r"<[^<>]+>", name)
    return re.compile(".+".join(re.escape(part) for part in parts))


def undocumented(names, fields) -> list[str]:
    """The names in `names` that no field of `fields` documents (exactly or as a pattern)."""
    return [name for name in names if not any(f.matches(name) for f in fields)]


def require_documented(names, fields, what: str) -> None:
    """ValueError naming the names that `fields` does not document: a writer calls it on
    what it is about to write, so that an output cannot outgrow docs/outputs.md."""
    missing = undocumented(names, fields)
    if missing:
        raise ValueError(
            f"{what}: {', '.join(map(repr, missing))} not documented; add them to the table "
            "beside its writer and run acl hparams-docs (docs/outputs.md)"
        )


def attribute_docs(cls) -> dict[str, str]:
    """The docstring under each annotated attribute of a class's source (the dataclass
    fields' docs), each on one line; {} where the source cannot be read."""
    try:
        tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs = {}
    for node, after in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


_CHUNK = attribute_docs(ChunkMetrics)
"""ChunkMetrics' field docs: the meaning of the metrics.csv columns read from them."""


def _per_task_doc(metric: str) -> str:
    """The first sentence of ChunkMetrics.eval_<metric>'s doc, for one test task."""
    doc = _CHUNK.get(f"eval_{metric}", "").removeprefix("Per test task, [M]: ")
    first = doc.split(". ")[0].rstrip(".").replace(" its ", " the test task's ", 1)
    return f"{first[:1].upper()}{first[1:]}."


SE = "standard error over seeds (std with ddof 1 / sqrt(seeds); null for one seed)"

METRICS_COLUMNS = (
    OutputField("chunk", "The evaluation's index, from 0 (`loop.eval_every` env steps apart)."),
    OutputField("seed", "The seed (`seed` + 0, 1, ... of the config)."),
    OutputField("env_steps", _CHUNK.get("env_steps", "")),
    OutputField("eval_pct_mastered", _CHUNK.get("eval_pct_mastered", "")),
    OutputField("eval_mean_return", _CHUNK.get("eval_mean_return", "")),
    OutputField("train_return", _CHUNK.get("train_return", "")),
    OutputField("train_success", _CHUNK.get("train_success", "")),
    OutputField("episodes", _CHUNK.get("episodes", "")),
    OutputField("feedback_dropped", _CHUNK.get("feedback_dropped", "")),
    OutputField("task_pool_overflow", _CHUNK.get("task_pool_overflow", "")),
    OutputField(
        "agent_<metric>",
        f"{_CHUNK.get('agent_metrics', '')} One column per key of the metrics the agent's `update` "
        "returns, in sorted order. PPO's and recurrent PPO's (acl/agents/ppo.py): approx_kl, "
        "clip_frac, entropy, grad_norm, learning_rate, loss, policy_loss, value_loss; DQN's "
        "(acl/agents/dqn.py): batch_reward, buffer_episodes, epsilon, grad_norm, loss, "
        "q_mean, relabelled, td_abs.",
    ),
    *(
        OutputField(
            f"eval_{metric}",
            f"The mean over the test tasks of `eval_{metric}/<test task>`.",
            NAMED_SAMPLED if "sampled" in metric else NAMED,
        )
        for metric in PER_TASK_METRICS
    ),
    *(
        OutputField(
            f"eval_{metric}/<test task>",
            f"{_per_task_doc(metric)} One column per test task, named by the test set "
            "(summary.json's `test_set.names`).",
            NAMED_SAMPLED if "sampled" in metric else NAMED,
        )
        for metric in PER_TASK_METRICS
    ),
    *(
        OutputField(
            f"eval_cvar_{alpha}",
            f"CVaR at {alpha} of per-test-task success: the mean sampled-action success on "
            f"the worst {alpha:.0%} of the test tasks, ranked on the even attempts and "
            "measured on the odd ones (`acl.core.risk.test_set_cvar`).",
            CVAR,
        )
        for alpha in CVAR_ALPHAS
    ),
)
"""metrics.csv's columns, in the order `acl.run.experiment` writes them: one row per
(evaluation, seed), appended after each evaluation."""

TASKS_COLUMNS = (
    OutputField("chunk", "The evaluation period the task was handed out in (metrics.csv's)."),
    OutputField("seed", "The seed."),
    OutputField(
        "<task dimension>",
        "The task's value in one dimension; the columns are named by the env's task space "
        "(`task_space.names`, else task_0, task_1, ...).",
    ),
)
"""tasks.csv's columns: `loop.task_log_size` tasks per seed and evaluation period, a
subsample of those handed out."""

SNAPSHOT_ARRAYS = (
    OutputField(
        "<key>",
        "One array per entry of the dict the teacher's `snapshot(state)` returns, with a "
        "leading seed axis [S, ...]; each teacher has its own (ALP-GMM: weights, means, "
        "covariances, alp, active, ...; random: episodes_seen). "
        "`acl.run.snapshots.load_teacher_snapshots` stacks them over evaluations.",
    ),
)
"""The arrays of teacher/eval_<chunk>.npz."""

PROVENANCE_FIELDS = (
    OutputField(
        "versions",
        "Installed version of each package that computes the results (null where missing).",
        fields=tuple(OutputField(name, f"{name}'s version.") for name in PACKAGES),
    ),
    OutputField("python", "Python's version."),
    OutputField("git_commit", 'The checked-out commit of the code, or "unknown".'),
    OutputField(
        "git_dirty",
        "Whether tracked files differed from that commit (the output directory left out); "
        "null outside a git checkout.",
    ),
    OutputField("device", 'JAX\'s devices, e.g. ["cpu:0"] or ["cuda:0"].'),
    OutputField("platform", "JAX's backend: cpu, gpu or tpu."),
    OutputField("seeds", "The seeds run."),
    OutputField("argv", "The command line (the script relative to the repository)."),
    OutputField(
        "resumed",
        "One entry per `acl run --resume` session.",
        "the run was resumed",
        fields=(
            OutputField("time", "When the session started (UTC, ISO 8601)."),
            OutputField("git_commit", "The session's commit."),
            OutputField("git_dirty", "Whether its checkout had changes."),
        ),
    ),
)
"""provenance.json's keys: what produced the run (`provenance`, `RunDir.record_resume`)."""

_PER_TASK_SUMMARY = {
    "solve_sampled": "solve rate of the sampled-action episodes",
    "solve_greedy": "solve rate of the greedy episodes",
    "return": "mean return of the greedy episodes",
    "return_sampled": "mean return of the sampled-action episodes",
}

SUMMARY_FIELDS = (
    OutputField("name", "The config's name."),
    OutputField("env", "The env's registered name."),
    OutputField("teacher", "The teacher's registered name."),
    OutputField("agent", "The agent's registered name."),
    OutputField("seeds", "The seeds run."),
    OutputField("env_steps", "Env steps per seed at the last evaluation."),
    OutputField(
        "final_pct_mastered_mean",
        "Final % mastered (metrics.csv's last evaluation), mean over seeds.",
    ),
    OutputField("final_pct_mastered_se", f"Its {SE}."),
    OutputField("final_mean_return_mean", "Final mean test return, mean over seeds."),
    OutputField("final_mean_return_se", f"Its {SE}."),
    OutputField("final_pct_mastered_per_seed", "Final % mastered of each seed, in `seeds` order."),
    OutputField("final_mean_return_per_seed", "Final mean test return of each seed."),
    OutputField("wall_seconds", "Wall-clock seconds, compile included, over every session."),
    OutputField("compile_seconds", "Of which compiling."),
    OutputField(
        "env_steps_per_second",
        "Env steps of all seeds per second of running (wall minus compile).",
    ),
    OutputField("test_tasks", "Number of test tasks."),
    OutputField("devices", "Devices the seeds were split over."),
    OutputField(
        "stopped_at_time_limit", "true: the run ended before its planned env steps.", TIME_LIMIT
    ),
    OutputField("planned_env_steps", "The env steps per seed the config asked for.", TIME_LIMIT),
    OutputField(
        "projected_seconds_full_run",
        "The full run's projected seconds at the measured speed, compile included.",
        TIME_LIMIT,
    ),
    OutputField(
        "test_set",
        "The named test set.",
        NAMED,
        fields=(
            OutputField("spec", "`eval.test_set` as configured."),
            OutputField("names", "The test tasks' names, in order."),
            OutputField("episode_steps", "Steps per evaluation episode (`max_episode_steps`)."),
            OutputField(
                "greedy_episodes", "Greedy episodes per test task (`eval.episodes_per_task`)."
            ),
            OutputField(
                "sampled_attempts",
                "Sampled-action episodes per test task (`eval.sampled_attempts`).",
            ),
        ),
    ),
    *(
        OutputField(
            f"final_{metric}_{stat}",
            f"Final {text}, mean over test tasks; "
            + ("mean over seeds." if stat == "mean" else f"its {SE}."),
            NAMED_SAMPLED if "sampled" in metric else NAMED,
        )
        for metric, text in _PER_TASK_SUMMARY.items()
        for stat in ("mean", "se")
    ),
    OutputField(
        "final_per_test_task",
        "Per test task (keyed by name), its final figures over seeds.",
        NAMED,
        fields=(
            OutputField(
                "<test task>.<metric>_mean",
                f"Mean over seeds of the task's metric ({', '.join(PER_TASK_METRICS)}: as "
                "the `final_<metric>_mean` keys).",
            ),
            OutputField("<test task>.<metric>_se", f"Its {SE}."),
        ),
    ),
    *(
        OutputField(
            f"final_cvar_{alpha}_{stat}",
            f"Final CVaR at {alpha} of per-test-task success (metrics.csv's "
            f"`eval_cvar_{alpha}`); " + ("mean over seeds." if stat == "mean" else f"its {SE}."),
            CVAR,
        )
        for alpha in CVAR_ALPHAS
        for stat in ("mean", "se")
    ),
    OutputField(
        "sweep",
        "The run's combination.",
        SWEEP,
        fields=(
            OutputField("index", "Its index among the sweep's combinations."),
            OutputField("values", "The swept keys' values, {key: value}."),
        ),
    ),
    OutputField(
        "diverged",
        "Why the combination's training diverged.",
        f"{SWEEP} whose loss or return became non-finite",
    ),
)
"""summary.json's keys (`acl.run.experiment.run_summary`); SUMMARY_KEYS must be there."""

RUN_FILES = (
    OutputField(
        "config.yaml",
        "The resolved config. Every section with its defaults filled in; `--resume` and "
        "`acl evaluate` read it back.",
    ),
    OutputField(
        "provenance.json",
        "What produced the run. Package versions, git commit, devices, seeds, command line.",
    ),
    OutputField(
        "metrics.csv",
        "One row per (evaluation, seed). Appended after each evaluation, so it grows while "
        "the run goes on.",
    ),
    OutputField(
        "tasks.csv",
        "Tasks handed out in each evaluation period. A subsample: `loop.task_log_size` per "
        "seed and period.",
    ),
    OutputField(
        "teacher/eval_<chunk>.npz",
        "The teacher's internals at each evaluation. One file per evaluation (eval_0000.npz, "
        "eval_0001.npz, ...), arrays with a leading seed axis.",
    ),
    OutputField("summary.json", "Final figures and timings.", "the run finished"),
    OutputField(
        "learning_curve.png",
        "% mastered against env steps. Mean ± SE over seeds.",
        "the run finished",
    ),
    OutputField(
        AGENT_FILE,
        "The final agent state of every seed. Flax serialization; `RunDir.load_agents` "
        "reads it back.",
        "the run finished",
    ),
    OutputField(
        f"{CHECKPOINTS}/<evaluations done>/",
        "The loop carry at an evaluation, for `--resume`. Saved with orbax "
        "(acl.run.checkpoint); the newest `loop.keep_checkpoints` are kept.",
        "`loop.checkpoint_every` > 0 (default 1), or the run stopped early",
    ),
    OutputField(
        "tensorboard/", "TensorBoard event files. They mirror metrics.csv.", "`--log tensorboard`"
    ),
    OutputField(
        "wandb/",
        "An offline Weights & Biases run. `wandb sync` uploads it.",
        "`--log wandb`",
    ),
)
"""The files of a run directory (`acl run`, `run_experiment`)."""

_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def write_npz(path: Path, arrays: dict) -> None:
    """`np.savez_compressed`, but byte-reproducible: numpy stamps each member with the
    time of writing, so two identical runs (or a resumed and an uninterrupted one) would
    differ in their files though not in their data."""
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, value in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(value))
    os.replace(tmp, path)


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_nan_to_none(v) for v in value]
    return value


def _se_null_to_nan(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: math.nan if v is None and k.endswith("_se") else _se_null_to_nan(v)
            for k, v in value.items()
        }
    return value


class RunDir:
    """Writes one run directory; every write goes straight to disk."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._metrics_header: list[str] | None = None

    def write_config(self, config_dict: dict, seeds: list[int]) -> None:
        (self.path / run_files.CONFIG_FILE).write_text(yaml.safe_dump(config_dict, sort_keys=False))
        record = provenance(seeds)
        require_documented(record, PROVENANCE_FIELDS, "provenance.json")
        (self.path / "provenance.json").write_text(json.dumps(record, indent=2))
        for name in ("metrics.csv", "tasks.csv"):
            (self.path / name).unlink(missing_ok=True)

    def clear_outputs(self) -> None:
        """Removes what an earlier run in this directory left that a new one would not
        overwrite: teacher snapshots, checkpoints and the summary."""
        for snapshot in (self.path / "teacher").glob("eval_*.npz"):
            snapshot.unlink()
        shutil.rmtree(self.path / CHECKPOINTS, ignore_errors=True)
        (self.path / "summary.json").unlink(missing_ok=True)

    def record_resume(self) -> None:
        """Appends this session's commit and time to provenance.json's `resumed` list."""
        file = self.path / "provenance.json"
        record = json.loads(file.read_text()) if file.exists() else {}
        record.setdefault("resumed", []).append(
            {
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "git_commit": git_commit(),
                "git_dirty": git_dirty(),
            }
        )
        file.write_text(json.dumps(record, indent=2))

    def append_metrics(self, rows: list[dict]) -> None:
        require_documented(rows[0], METRICS_COLUMNS, "metrics.csv")
        file = self.path / "metrics.csv"
        new = not file.exists()
        with file.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                writer.writeheader()
            writer.writerows(rows)

    def append_tasks(
        self, chunk: int, seeds: list[int], tasks: np.ndarray, names: tuple[str, ...]
    ) -> None:
        """tasks [S, K, D] handed out during evaluation period `chunk`."""
        header = ["chunk", "seed", *names]
        require_documented(header, TASKS_COLUMNS, "tasks.csv")
        file = self.path / "tasks.csv"
        new = not file.exists()
        with file.open("a", newline="") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(header)
            for seed, seed_tasks in zip(seeds, tasks):
                for task in seed_tasks:
                    writer.writerow([chunk, seed, *(f"{x:.6g}" for x in task)])

    def write_teacher_snapshot(self, chunk: int, snapshot: dict) -> None:
        """teacher/eval_<chunk:04d>.npz: teacher internals, arrays with a leading seed axis."""
        folder = self.path / "teacher"
        folder.mkdir(exist_ok=True)
        write_npz(folder / f"eval_{chunk:04d}.npz", snapshot)

    def write_summary(self, summary: dict) -> None:
        missing = [k for k in SUMMARY_KEYS if k not in summary]
        if missing:
            raise ValueError(f"summary lacks {missing}")
        require_documented(summary, SUMMARY_FIELDS, "summary.json")
        # Strict JSON: an SE over one seed is NaN, which json.dumps would write as the
        # non-standard token NaN that other readers reject; it is written as null.
        (self.path / "summary.json").write_text(
            json.dumps(_nan_to_none(summary), indent=2, allow_nan=False)
        )

    def save_agent(self, agent_state: Any) -> None:
        (self.path / AGENT_FILE).write_bytes(serialization.to_bytes(agent_state))

    def load_agent(self, template: Any) -> Any:
        return run_files.read_agent_states(self.path, template)

    def load_agents(self, env: Any, agent: Any = None) -> tuple[Any, Any]:
        """(agent, states): the run's agent and its final state of every seed ([S, ...]);
        `acl.build.load_run_agent` (`agent`: the agent to read them for; None: the run's,
        rebuilt from config.yaml and bound to `env`)."""
        # Imported here: writing a run directory needs none of the registries.
        from acl.build import load_run_agent

        return load_run_agent(self.path, env, agent)

    def load_agent_state(self, env: Any, seed_index: int, agent: Any = None) -> tuple[Any, Any]:
        """(agent, state): `load_agents`, the final state of seed `seed_index` alone (host
        arrays); `acl.build.load_run_agent_state`. ConfigError also for an index outside
        [0, num_seeds)."""
        from acl.build import load_run_agent_state

        return load_run_agent_state(self.path, env, seed_index, agent)

    def read_metrics(self):
        import pandas as pd

        return pd.read_csv(self.path / "metrics.csv")

    def read_summary(self) -> dict:
        """summary.json, with the null SEs of one-seed runs read back as NaN."""
        return _se_null_to_nan(json.loads((self.path / "summary.json").read_text()))

    def read_config_dict(self) -> dict:
        return run_files.read_config_dict(self.path)


def plot_learning_curves(runs: dict[str, Any], out: str | Path, title: str = "") -> None:
    """% mastered vs env steps, mean ± SE band over seeds per run. `runs` maps label ->
    metrics frame (one row per seed and evaluation)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from acl.core.plot_style import (
        BAND_ALPHA,
        legend_outside,
        save,
        se_band_label,
        steps_axis,
        with_seed_counts,
    )

    fig, ax = plt.subplots(figsize=(6, 4))
    seeds = [frame["seed"].nunique() for frame in runs.values()]
    for label, frame in zip(with_seed_counts(list(runs), seeds), runs.values(), strict=True):
        steps, mean, se = mean_se_by_step(frame, "eval_pct_mastered")
        line = ax.plot(steps, mean, label=label)[0]
        ax.fill_between(steps, mean - se, mean + se, color=line.get_color(), alpha=BAND_ALPHA)
    ax.set_xlabel("env steps per seed")
    ax.set_ylabel("% mastered (test set)")
    steps_axis(ax.xaxis)
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    legend_outside(fig, ax, band=se_band_label(seeds))
    fig.tight_layout()
    save(fig, out)


def _cell(value: Any) -> str:
    if isinstance(value, float | np.floating) and math.isnan(value):
        return NOT_AVAILABLE
    return str(value)


def format_table(rows: list[dict], columns: list[str]) -> str:
    """A plain fixed-width table for the terminal; a NaN cell reads "n/a"."""
    cells = [[_cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    line = lambda vals: "  ".join(v.ljust(w) for v, w in zip(vals, widths))  # noqa: E731
    out = [line(columns), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)
