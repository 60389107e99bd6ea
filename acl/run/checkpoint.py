"""Checkpoints of a run, with orbax: the whole loop carry and where the run directory stood.

A checkpoint is saved under `RUN_DIR/checkpoints/<evaluations done>/` after the run
directory's files for that evaluation are written. It holds:

- `carry`: every array of the loop carry (agent and optimiser, teacher state, env states,
  PRNG keys, the iteration counter), so the next chunk starts bit for bit where it would
  have;
- `last_eval`: the last evaluation's metrics, for the summary of a run resumed after its
  last chunk;
- `progress` (JSON): evaluations done, the byte sizes of metrics.csv and tasks.csv at that
  point, and the wall, compile and running seconds spent so far.

A resumed run truncates metrics.csv and tasks.csv to those sizes and deletes the teacher
snapshots of later evaluations, so that rows written after the checkpoint (by a run
killed before its next save) are neither duplicated nor missing.

Saves are asynchronous (orbax writes in a background thread while the next chunk runs)
and atomic: orbax writes into a temporary directory and renames it when complete, and a
directory that was never renamed is ignored, so a kill during a save leaves the previous
checkpoint usable. The last `keep` checkpoints are kept. CHECKPOINT_ITEMS documents
them for docs/outputs.md.

orbax refuses zero-size arrays (e.g. an empty recurrent state), so those leaves are not
saved: they are taken from the template on restore, where they hold no value anyway.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
import yaml

from acl.config import ExperimentConfig, apply_overrides, parse_config
from acl.core.errors import ConfigError
from acl.run.results import (
    CHECKPOINTS,
    OutputField,
    attribute_docs,
    git_commit,
    package_versions,
)

SUMMARY_TIME_FIELDS = (
    "wall_seconds",
    "compile_seconds",
    "env_steps_per_second",
    "projected_seconds_full_run",
)
"""summary.json fields that depend on the machine's speed, not on the run's results: the
ones a resumed run may differ in from an uninterrupted one."""


@dataclass
class Progress:
    """Where a run stood at a checkpoint (JSON in the checkpoint)."""

    chunks_done: int
    """Evaluations whose files are written."""
    file_sizes: dict[str, int]
    """Byte size of each appended file of the run directory (metrics.csv, tasks.csv)."""
    wall_seconds: float
    """Seconds spent so far, compile included, over every session of the run."""
    compile_seconds: float
    """Of which compiling."""
    extra: dict = field(default_factory=dict)
    """Whatever else the caller needs to continue (JSON), e.g. a benchmark cell's rows."""


_PROGRESS = attribute_docs(Progress)

CHECKPOINT_ITEMS = (
    OutputField(
        "carry",
        "Every non-empty array of the loop carry: agent and optimiser, teacher state, env "
        "states, PRNG keys, the iteration counter (orbax, keyed by leaf index).",
    ),
    OutputField(
        "last_eval",
        "The last evaluation's chunk metrics, for the summary of a run resumed after its "
        "last chunk.",
    ),
    OutputField(
        "progress",
        "Where the run stood (JSON).",
        fields=tuple(
            OutputField(f.name, _PROGRESS.get(f.name, "")) for f in dataclasses.fields(Progress)
        ),
    ),
)
"""The items of a checkpoint, RUN_DIR/checkpoints/<evaluations done>/ (`RunCheckpoints.save`)."""


def _pack(tree: Any) -> dict[str, Any]:
    """The non-empty leaves of `tree`, keyed by their index in its flattening."""
    return {f"{i:05d}": leaf for i, leaf in enumerate(jax.tree.leaves(tree)) if np.size(leaf)}


def _unpack(template: Any, packed: dict[str, Any]) -> Any:
    """`template`'s tree with its non-empty leaves from `packed`, its empty ones zeros."""
    leaves, treedef = jax.tree.flatten(template)
    return jax.tree.unflatten(
        treedef,
        [
            packed[f"{i:05d}"] if np.size(leaf) else np.zeros(leaf.shape, leaf.dtype)
            for i, leaf in enumerate(leaves)
        ],
    )


def _abstract(tree: Any) -> dict[str, Any]:
    return jax.tree.map(ocp.utils.to_shape_dtype_struct, _pack(tree))


class RunCheckpoints:
    """The checkpoints of one run directory (orbax's CheckpointManager)."""

    def __init__(self, run_dir: str | Path, keep: int = 2):
        """`keep`: how many of the newest checkpoints to keep (>= 1)."""
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self.path = Path(run_dir).absolute() / CHECKPOINTS
        self._manager = ocp.CheckpointManager(
            self.path,
            options=ocp.CheckpointManagerOptions(
                max_to_keep=keep,
                enable_async_checkpointing=True,
                create=True,
                # A save that a kill interrupted leaves a temporary directory: not a
                # checkpoint, and in the way of saving that step again.
                cleanup_tmp_directories=True,
            ),
        )

    def latest(self) -> int | None:
        """Evaluations done at the newest complete checkpoint; None if there is none."""
        return self._manager.latest_step()

    def save(self, carry: Any, metrics: Any, progress: Progress) -> None:
        """Starts saving; returns once the arrays are copied, while the write goes on."""
        self._manager.save(
            progress.chunks_done,
            args=ocp.args.Composite(
                carry=ocp.args.StandardSave(_pack(carry)),
                last_eval=ocp.args.StandardSave(_pack(metrics)),
                progress=ocp.args.JsonSave(progress.__dict__),
            ),
        )

    def restore(self, carry_template: Any, metrics_template: Any) -> tuple[Any, Any, Progress]:
        """(carry, metrics, progress) of the newest checkpoint, shaped and placed as the
        templates (arrays or ShapeDtypeStructs of the same tree, with their shardings)."""
        step = self.latest()
        if step is None:
            raise FileNotFoundError(f"no complete checkpoint in {self.path}")
        restored = self._manager.restore(
            step,
            args=ocp.args.Composite(
                carry=ocp.args.StandardRestore(_abstract(carry_template)),
                last_eval=ocp.args.StandardRestore(_abstract(metrics_template)),
                progress=ocp.args.JsonRestore(),
            ),
        )
        return (
            _unpack(carry_template, restored.carry),
            _unpack(metrics_template, restored.last_eval),
            Progress(**restored.progress),
        )

    def latest_progress(self) -> Progress | None:
        """The newest checkpoint's progress record alone (no arrays read); None if none."""
        step = self.latest()
        if step is None:
            return None
        restored = self._manager.restore(
            step, args=ocp.args.Composite(progress=ocp.args.JsonRestore())
        )
        return Progress(**restored.progress)

    def wait(self) -> None:
        """Blocks until the last save is complete on disk."""
        self._manager.wait_until_finished()

    def close(self) -> None:
        self._manager.close()


def truncate_run_files(run_dir: Path, progress: Progress | None) -> None:
    """Cuts the run directory back to the checkpoint: appended files to their sizes then,
    teacher snapshots of later evaluations deleted. None: back to no evaluation at all."""
    sizes = progress.file_sizes if progress is not None else {}
    for name in ("metrics.csv", "tasks.csv"):
        file = run_dir / name
        if not file.exists():
            continue
        size = sizes.get(name, 0)
        if size == 0:
            file.unlink()
        else:
            with file.open("r+b") as f:
                f.truncate(size)
    done = progress.chunks_done if progress is not None else 0
    for snapshot in (run_dir / "teacher").glob("eval_*.npz"):
        if int(snapshot.stem.removeprefix("eval_")) >= done:
            snapshot.unlink()


def file_sizes(run_dir: Path) -> dict[str, int]:
    return {
        name: (run_dir / name).stat().st_size if (run_dir / name).exists() else 0
        for name in ("metrics.csv", "tasks.csv")
    }


class StopRequest:
    """Set by SIGINT or SIGTERM while a run is inside `stop_requests()`."""

    def __init__(self):
        self.signal: int | None = None

    def __bool__(self) -> bool:
        return self.signal is not None


@contextmanager
def stop_requests() -> Iterator[StopRequest]:
    """SIGINT and SIGTERM set the yielded request instead of stopping the process, so the
    run can finish its chunk and save a checkpoint; a second SIGINT stops at once
    (KeyboardInterrupt), leaving the previous checkpoint. Outside the main thread, where
    Python cannot take signals, nothing is installed."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def handle(signum, frame):
        if request and signum == signal.SIGINT:
            raise KeyboardInterrupt
        request.signal = signum

    previous = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield request
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class RunInterrupted(Exception):
    """A run stopped by SIGINT or SIGTERM after saving a checkpoint."""

    def __init__(self, run_dir: Path, chunks_done: int, signum: int):
        self.run_dir, self.chunks_done, self.signum = run_dir, chunks_done, signum
        name = signal.Signals(signum).name
        super().__init__(
            f"{name}: stopped after evaluation {chunks_done}, checkpoint saved in {run_dir}"
        )


RESUME_SAFE_KEYS = ("loop.checkpoint_every", "loop.keep_checkpoints")
"""Config keys a resumed run may change (`--set`): they change how it is saved, not what it
computes."""


def resume_config(
    run_dir: str | Path, overrides: list[str] = (), force: bool = False
) -> tuple[ExperimentConfig, list[str]]:
    """The config of the run in `run_dir` with `overrides` (only `RESUME_SAFE_KEYS`), and
    warnings to print. ConfigError when there is no run, when an override would change
    what the run computes, or when the installed packages differ from the run's (unless
    `force`): a resumed run then would not match an uninterrupted one."""
    run_dir = Path(run_dir)
    if not (run_dir / "config.yaml").is_file():
        raise ConfigError(f"--resume: {run_dir} holds no run (no config.yaml)")
    for item in overrides:
        key = item.partition("=")[0].strip()
        if key not in RESUME_SAFE_KEYS:
            raise ConfigError(
                f"--set {key}: a resumed run keeps its config, so that it computes what the "
                f"uninterrupted run would; only {', '.join(RESUME_SAFE_KEYS)} may change"
            )
    data = yaml.safe_load((run_dir / "config.yaml").read_text())
    config = parse_config(apply_overrides(data, list(overrides)))
    record_file = run_dir / "provenance.json"
    record = json.loads(record_file.read_text()) if record_file.exists() else {}
    then = record.get("versions", {})
    now = package_versions(then)
    changed = [f"{name} {then[name]} -> {now[name]}" for name in then if then[name] != now[name]]
    warnings = []
    if changed and not force:
        raise ConfigError(
            f"--resume: installed packages differ from the run's ({'; '.join(changed)}), so "
            "it would not continue as it started; install the run's versions, or pass --force"
        )
    if changed:
        warnings.append(f"resuming under other package versions: {'; '.join(changed)}")
    started_at, here = record.get("git_commit"), git_commit()
    if started_at and started_at != here:
        warnings.append(
            f"the run started at commit {started_at[:12]}, this checkout is at {here[:12]}"
        )
    return config, warnings
