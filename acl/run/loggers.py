"""Experiment loggers: a run's chunks mirrored to TensorBoard or Weights & Biases.

The run directory (acl.run.results.RunDir) stays the source of truth; a logger is an optional
view of it, written from the host between chunks, after the run directory has the chunk:

    loggers = make_loggers(["tensorboard"], run_dir, config, task_names)
    run_experiment(config, run_dir, loggers=loggers)
    close_all(loggers)

Each takes, per evaluation (x axis: env steps per seed), the metrics.csv columns averaged
over seeds, the % mastered of every seed, and histograms of the tasks handed out and of
the teacher's snapshot arrays. Both backends are optional extras, installed from a clone
(`pip install -e '.[tensorboard]'`: tensorboardX; `pip install -e '.[wandb]'`), imported
only when asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from acl.core.errors import ConfigError

LOGGERS = ("tensorboard", "wandb")
TENSORBOARD_DIR = "tensorboard"
"""The event files' folder inside the run directory."""
MAX_HISTOGRAM_VALUES = 1_000_000
"""Snapshot arrays larger than this are left out of the histograms (cost, not interest)."""
_NOT_AVERAGED = ("chunk", "seed", "env_steps")


@runtime_checkable
class Logger(Protocol):
    def log_chunk(self, chunk: int, rows: list[dict], metrics: Any) -> None:
        """One evaluation: `rows` are its metrics.csv rows (one per seed), `metrics` its
        acl.loop.train.ChunkMetrics as host arrays with a leading seed axis."""

    def close(self) -> None:
        """Flush and close; a second call does nothing."""


def scalars(rows: list[dict]) -> dict[str, float]:
    """What a logger plots per evaluation: each numeric metrics.csv column averaged over
    seeds, and `eval_pct_mastered/seed_<seed>` per seed."""
    out = {}
    for column in rows[0]:
        values = [row[column] for row in rows]
        if column in _NOT_AVERAGED or not all(isinstance(v, int | float) for v in values):
            continue
        out[column] = float(np.mean(values))
    for row in rows:
        out[f"eval_pct_mastered/seed_{row['seed']}"] = float(row["eval_pct_mastered"])
    return out


def histograms(metrics: Any, task_names: Sequence[str]) -> dict[str, np.ndarray]:
    """Per evaluation: `tasks/<dimension>` over the tasks handed out (all seeds) and
    `teacher/<name>` over each numeric snapshot array; non-finite values dropped."""
    out = {}
    tasks = np.asarray(metrics.tasks)  # [S, K, D]
    for i, name in enumerate(task_names):
        out[f"tasks/{name}"] = tasks[..., i].ravel()
    for name, value in metrics.teacher_snapshot.items():
        value = np.asarray(value)
        if value.dtype.kind in "biuf" and 0 < value.size <= MAX_HISTOGRAM_VALUES:
            out[f"teacher/{name}"] = value.astype(np.float64).ravel()
    return {k: v[np.isfinite(v)] for k, v in out.items() if np.isfinite(v).any()}


class TensorBoardLogger:
    """Event files in RUN_DIR/tensorboard (tensorboardX)."""

    def __init__(self, run_dir: str | Path, task_names: Sequence[str]):
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            raise ConfigError(
                "logging to tensorboard needs tensorboardX: pip install -e '.[tensorboard]' "
                "in the clone"
            ) from None
        self.path = Path(run_dir) / TENSORBOARD_DIR
        self.task_names = tuple(task_names)
        self._writer = SummaryWriter(logdir=str(self.path))

    def log_chunk(self, chunk: int, rows: list[dict], metrics: Any) -> None:
        step = int(rows[0]["env_steps"])
        for tag, value in scalars(rows).items():
            self._writer.add_scalar(tag, value, step)
        for tag, values in histograms(metrics, self.task_names).items():
            self._writer.add_histogram(tag, values, step)
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class WandbLogger:
    """An offline Weights & Biases run in RUN_DIR/wandb (`wandb sync` uploads it)."""

    def __init__(self, run_dir: str | Path, config: dict, name: str, task_names: Sequence[str]):
        try:
            import wandb
        except ImportError:
            raise ConfigError(
                "logging to wandb needs wandb: pip install -e '.[wandb]' in the clone"
            ) from None
        self._wandb = wandb
        self.task_names = tuple(task_names)
        self._run = wandb.init(
            mode="offline", dir=str(run_dir), config=config, name=name, reinit="create_new"
        )

    def log_chunk(self, chunk: int, rows: list[dict], metrics: Any) -> None:
        data: dict[str, Any] = dict(scalars(rows))
        for tag, values in histograms(metrics, self.task_names).items():
            data[tag] = self._wandb.Histogram(values)
        self._run.log(data, step=int(rows[0]["env_steps"]))

    def close(self) -> None:
        if self._run is not None:
            self._run.finish()
            self._run = None


def make_loggers(
    kinds: Sequence[str], run_dir: str | Path, config: Any, task_names: Sequence[str]
) -> list[Logger]:
    """One logger per name in `kinds` (each of LOGGERS, once) for the run directory
    `run_dir` of `config` (an acl.config.ExperimentConfig); ConfigError for an unknown
    name or a backend that is not installed."""
    loggers: list[Logger] = []
    for kind in dict.fromkeys(kinds):
        if kind == "tensorboard":
            loggers.append(TensorBoardLogger(run_dir, task_names))
        elif kind == "wandb":
            loggers.append(WandbLogger(run_dir, config.to_dict(), config.name, task_names))
        else:
            close_all(loggers)
            raise ConfigError(f"unknown logger {kind!r}; choose from {', '.join(LOGGERS)}")
    return loggers


def close_all(loggers: Sequence[Logger]) -> None:
    for logger in loggers:
        logger.close()
