"""The host side of a run: compile, run chunks with a progress bar, check for NaNs, and
write the run directory between chunks (outside jit)."""

from __future__ import annotations

import contextlib
import signal
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from tqdm.auto import tqdm

from acl.build import make_train, run_data
from acl.config import ExperimentConfig
from acl.core.errors import ConfigError
from acl.loop.devices import DeviceLayout
from acl.loop.train import ChunkMetrics, Trainer
from acl.run.checkpoint import (
    Progress,
    RunCheckpoints,
    RunInterrupted,
    file_sizes,
    stop_requests,
    truncate_run_files,
)
from acl.run.distributed import SilentRunDir, agreed, writes_run_dir
from acl.run.loggers import Logger
from acl.run.results import (
    RunDir,
    format_mean_se,
    mean_se,
    per_task_columns,
    per_task_summary,
    plot_learning_curves,
    test_set_cvar_values,
)


class TrainingDiverged(RuntimeError):
    """A loss or return became NaN or infinite; the metrics so far are on disk."""


def _rows(
    metrics: ChunkMetrics, chunk: int, seeds: list[int], test_names: tuple[str, ...] = ()
) -> list[dict]:
    rows = []
    cvar = test_set_cvar_values(metrics)
    for i, seed in enumerate(seeds):
        row = {
            "chunk": chunk,
            "seed": seed,
            "env_steps": int(metrics.env_steps[i]),
            "eval_pct_mastered": float(metrics.eval_pct_mastered[i]),
            "eval_mean_return": float(metrics.eval_mean_return[i]),
            "train_return": float(metrics.train_return[i]),
            "train_success": float(metrics.train_success[i]),
            "episodes": int(metrics.episodes[i]),
            "feedback_dropped": int(metrics.feedback_dropped[i]),
            "task_pool_overflow": int(metrics.task_pool_overflow[i]),
        }
        for key, value in sorted(metrics.agent_metrics.items()):
            row[f"agent_{key}"] = float(value[i])
        row.update(per_task_columns(metrics, test_names, i))
        row.update({f"eval_{k}": float(v[i]) for k, v in cvar.items()})
        rows.append(row)
    return rows


def check_finite(metrics: ChunkMetrics, first_iteration: int, seeds: list[int]) -> None:
    loss = np.asarray(metrics.loss)  # [S, iterations]
    bad = ~np.isfinite(loss)
    if bad.any():
        seed_index, step = np.argwhere(bad)[0]
        raise TrainingDiverged(
            f"non-finite loss at iteration {first_iteration + int(step)} (seed {seeds[seed_index]})"
        )
    for name in ("train_return", "eval_mean_return"):
        values = np.asarray(getattr(metrics, name))
        if not np.isfinite(values).all():
            seed_index = int(np.argwhere(~np.isfinite(values))[0][0])
            raise TrainingDiverged(
                f"non-finite {name} in the iterations ending at "
                f"{first_iteration + metrics.loss.shape[-1] - 1} (seed {seeds[seed_index]})"
            )


def write_chunk(
    run_dir: RunDir, trainer: Trainer, metrics: ChunkMetrics, chunk: int, seeds: list[int]
) -> list[dict]:
    """Append one chunk (host arrays with a leading seed axis) to the run directory:
    metrics.csv rows, tasks.csv, the teacher snapshot. Returns the rows written."""
    rows = _rows(metrics, chunk, seeds, trainer.evaluation.test_task_names)
    run_dir.append_metrics(rows)
    run_dir.append_tasks(chunk, seeds, np.asarray(metrics.tasks), task_names(trainer))
    run_dir.write_teacher_snapshot(chunk, metrics.teacher_snapshot)
    return rows


def task_names(trainer: Trainer) -> tuple[str, ...]:
    """The env's task dimension names (tasks.csv's columns)."""
    space = trainer.env.task_space
    return space.names or tuple(f"task_{i}" for i in range(space.dim))


def time_limit_line(summary: dict) -> str | None:
    """One line on a run stopped by `max_seconds` (steps reached, steps/s, the projected
    full-run time), or None for a run that finished."""
    if not summary.get("stopped_at_time_limit"):
        return None
    return (
        f"stopped at the time limit: {summary['env_steps']:,} of "
        f"{summary['planned_env_steps']:,} env steps per seed, "
        f"{summary['env_steps_per_second']:,.0f} env steps/s; the full run would take "
        f"about {summary['projected_seconds_full_run'] / 3600:,.1f} h at this speed"
    )


_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _compiled(layout: DeviceLayout, keys: jax.Array, data: Any) -> tuple[Any, Any, Any]:
    """(init, run_chunk, the chunk metrics' shapes) of a trainer over all seeds, compiled
    once per trainer, device layout and argument shapes: a notebook or a test that runs
    one trainer again (a resume, another output directory) neither traces nor compiles
    it again."""
    signature = jax.tree.map(lambda x: (x.shape, x.dtype), (keys, data))
    cache = _COMPILED.setdefault(layout.trainer, {})
    key = (
        layout.devices,
        layout.padded_seeds,
        jax.tree.structure(signature),
        tuple(jax.tree.leaves(signature)),
    )
    if key not in cache:
        init = layout.jit_init_seeds().lower(keys, data).compile()
        lowered = layout.jit_run_chunk_seeds().lower(init(keys, data))
        cache[key] = (init, lowered.compile(), lowered.out_info[1])
    return cache[key]


def run_experiment(
    config: ExperimentConfig,
    out: str | Path,
    progress: bool = True,
    trainer: Trainer | None = None,
    max_seconds: float | None = None,
    resume: bool = False,
    loggers: Sequence[Logger] = (),
    devices: int | None = None,
) -> dict:
    """Train all seeds of `config` as one vmap; write the run directory; return the summary.

    `max_seconds`: a wall-clock budget (compile included): no chunk starts once it is
    spent, so a run at published scale can be sampled for the time a machine is lent;
    the summary then says so (`stopped_at_time_limit`) and projects the full run's time
    from the measured steps/s.

    Checkpoints (acl.run.checkpoint) are saved every `loop.checkpoint_every` evaluations, and
    whenever the run stops early. `resume`: continue the run in `out` from its newest
    checkpoint (from the start if it has none); `config` must be the run's own. SIGINT and
    SIGTERM stop the run after its current chunk with a checkpoint saved
    (`RunInterrupted`); a second SIGINT stops it at once.

    `loggers` (acl.run.loggers) are handed each chunk after the run directory has it; the
    caller closes them.

    `devices`: how many devices the seeds are split over (None: all; acl.loop.devices, which
    says how seeds that do not divide evenly are padded).
    """
    if max_seconds is not None and not max_seconds >= 0:
        raise ValueError(f"max_seconds must be >= 0, got {max_seconds}")
    trainer = trainer or make_train(config)
    sharding = DeviceLayout.create(trainer, devices)  # a bad count fails before any write
    run_dir = RunDir(out) if writes_run_dir() else SilentRunDir(out)  # process 0 writes
    seeds = [config.seed + i for i in range(config.num_seeds)]
    every = config.loop.checkpoint_every
    checkpoints = RunCheckpoints(run_dir.path, config.loop.keep_checkpoints) if every else None
    # The carry's seed axis holds the padding seeds too: a checkpoint fits a layout with
    # as many.
    layout_record = {"devices": sharding.devices, "padded_seeds": sharding.padded_seeds}
    newest = checkpoints.latest_progress() if resume and checkpoints is not None else None
    if newest is not None and newest.extra.get("padded_seeds", sharding.padded_seeds) != (
        sharding.padded_seeds
    ):
        raise ConfigError(
            f"--resume: the run ran {newest.extra['padded_seeds']} seeds (padded for "
            f"{newest.extra['devices']} devices), this layout {sharding.padded_seeds}: "
            f"resume with --devices {newest.extra['devices']}"
        )
    if resume:
        run_dir.record_resume()
    else:
        run_dir.write_config(config.to_dict(), seeds)
        run_dir.clear_outputs()

    start = time.perf_counter()
    keys = sharding.seed_keys()
    # A challenged run hands the challenge's data (shared by all seeds) to init.
    data = run_data(config, trainer)
    init, run_chunk, metrics_shape = _compiled(sharding, keys, data)
    carry = init(keys, data)
    compile_seconds = time.perf_counter() - start

    final, on_device, done, earlier = None, None, 0, Progress(0, {}, 0.0, 0.0)
    if resume:
        if newest is not None:
            carry, on_device, earlier = checkpoints.restore(carry, metrics_shape)
            final, done = sharding.to_host(on_device), earlier.chunks_done
        if writes_run_dir():
            truncate_run_files(run_dir.path, earlier if done else None)

    def spent() -> Progress:
        """Where the run stands after `done` evaluations, time over all sessions."""
        return Progress(
            chunks_done=done,
            file_sizes=file_sizes(run_dir.path),
            wall_seconds=earlier.wall_seconds + time.perf_counter() - start,
            compile_seconds=earlier.compile_seconds + compile_seconds,
            extra=layout_record,
        )

    bar = tqdm(
        range(trainer.schedule.num_chunks),
        initial=done,
        desc=config.name,
        unit="eval",
        disable=not progress,
        dynamic_ncols=True,
    )
    first, saved, stopping = done, done, False
    try:
        with stop_requests() as stop:
            for chunk in range(first, trainer.schedule.num_chunks):
                over_time = (
                    chunk > first
                    and max_seconds is not None
                    and time.perf_counter() - start >= max_seconds
                )
                if agreed(over_time):
                    break
                first_iteration = int(carry.iteration)
                carry, on_device = run_chunk(carry)
                metrics = sharding.to_host(on_device)
                rows = write_chunk(run_dir, trainer, metrics, chunk, seeds)
                for logger in loggers:
                    logger.log_chunk(chunk, rows, metrics)
                try:
                    check_finite(metrics, first_iteration, seeds)
                except TrainingDiverged as err:
                    raise TrainingDiverged(f"{err}; metrics so far are in {run_dir.path}") from None
                final, done = metrics, chunk + 1
                stopping = agreed(bool(stop))  # a signal to any process stops them all
                if checkpoints is not None and (done % every == 0 or stopping):
                    # Asynchronous: the write overlaps the next chunk.
                    checkpoints.save(carry, on_device, spent())
                    saved = done
                bar.update(1)
                mastered, se = mean_se(metrics.eval_pct_mastered)
                bar.set_postfix(
                    mastered=f"{format_mean_se(mastered, se)}%", steps=int(metrics.env_steps[0])
                )
                if stopping:
                    break
        if checkpoints is not None:
            if saved < done:  # stopped by the time limit between checkpoints
                checkpoints.save(carry, on_device, spent())
            checkpoints.wait()
    except BaseException:
        if checkpoints is not None:
            # Let the save in flight (a complete checkpoint) finish, without hiding the
            # error that stopped the run behind one of its own.
            with contextlib.suppress(Exception):
                checkpoints.close()
        raise
    finally:
        bar.close()
    if checkpoints is not None:
        checkpoints.close()
    if stopping and done < trainer.schedule.num_chunks:
        # A process that was not signalled itself stops as if terminated.
        raise RunInterrupted(run_dir.path, done, stop.signal or signal.SIGTERM)
    so_far = spent()
    wall_seconds, compile_seconds = so_far.wall_seconds, so_far.compile_seconds
    run_dir.save_agent(sharding.to_host(carry.seed.agent_state))

    summary = run_summary(
        config, trainer, final, seeds, wall_seconds, compile_seconds, sharding.devices
    )
    write_summary_and_plot(run_dir, config, summary)
    return summary


def run_summary(
    config: ExperimentConfig,
    trainer: Trainer,
    final: ChunkMetrics,
    seeds: list[int],
    wall_seconds: float,
    compile_seconds: float,
    devices: int = 1,
) -> dict:
    """summary.json of a run whose last chunk's metrics (host arrays [S, ...]) are `final`,
    its seeds split over `devices`."""
    mastered_mean, mastered_se = mean_se(final.eval_pct_mastered)
    return_mean, return_se = mean_se(final.eval_mean_return)
    env_steps = int(final.env_steps[0])
    summary = {
        "name": config.name,
        "env": config.env.name,
        "teacher": config.teacher.name,
        "agent": config.agent.name,
        "seeds": seeds,
        "env_steps": env_steps,
        "final_pct_mastered_mean": mastered_mean,
        "final_pct_mastered_se": mastered_se,
        "final_mean_return_mean": return_mean,
        "final_mean_return_se": return_se,
        "final_pct_mastered_per_seed": [float(x) for x in final.eval_pct_mastered],
        "final_mean_return_per_seed": [float(x) for x in final.eval_mean_return],
        "wall_seconds": wall_seconds,
        "compile_seconds": compile_seconds,
        "env_steps_per_second": env_steps * len(seeds) / max(wall_seconds - compile_seconds, 1e-9),
        "test_tasks": int(trainer.evaluation.test_tasks.shape[0]),
        "devices": devices,
    }
    planned_steps = trainer.schedule.env_steps
    if env_steps < planned_steps:
        summary["stopped_at_time_limit"] = True
        summary["planned_env_steps"] = planned_steps
        summary["projected_seconds_full_run"] = compile_seconds + planned_steps * len(seeds) / max(
            summary["env_steps_per_second"], 1e-9
        )
    if trainer.evaluation.test_task_names:
        summary["test_set"] = {
            "spec": config.eval.test_set,
            "names": list(trainer.evaluation.test_task_names),
            "episode_steps": int(trainer.env.max_episode_steps),
            "greedy_episodes": config.eval.episodes_per_task,
            "sampled_attempts": config.eval.sampled_attempts,
        }
        summary.update(per_task_summary(final, trainer.evaluation.test_task_names))
    for name, values in test_set_cvar_values(final).items():
        summary[f"final_{name}_mean"], summary[f"final_{name}_se"] = mean_se(values)
    return summary


def write_summary_and_plot(run_dir: RunDir, config: ExperimentConfig, summary: dict) -> None:
    """summary.json and learning_curve.png (from metrics.csv)."""
    seeds = summary["seeds"]
    run_dir.write_summary(summary)
    if writes_run_dir():
        plot_learning_curves(
            {f"{config.teacher.name} ({len(seeds)} seeds)": run_dir.read_metrics()},
            run_dir.path / "learning_curve.png",
            title=f"{config.env.name}: {config.teacher.name} teacher, {config.agent.name}",
        )
