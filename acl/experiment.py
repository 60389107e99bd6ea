"""The host side of a run: compile, run chunks with a progress bar, check for NaNs, and
write the run directory between chunks (outside jit)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from acl.build import make_train, run_data
from acl.config import ExperimentConfig
from acl.devices import DeviceLayout
from acl.distributed import SilentRunDir, writes_run_dir
from acl.results import (
    RunDir,
    format_mean_se,
    mean_se,
    per_task_columns,
    per_task_summary,
    plot_learning_curves,
)
from acl.train import ChunkMetrics, Trainer


class TrainingDiverged(RuntimeError):
    """A loss or return became NaN or infinite; the metrics so far are on disk."""


def _rows(
    metrics: ChunkMetrics, chunk: int, seeds: list[int], test_names: tuple[str, ...] = ()
) -> list[dict]:
    rows = []
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
        rows.append(row)
    return rows


def _check_finite(metrics: ChunkMetrics, first_iteration: int, seeds: list[int]) -> None:
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


def run_experiment(
    config: ExperimentConfig,
    out: str | Path,
    progress: bool = True,
    trainer: Trainer | None = None,
    max_seconds: float | None = None,
    devices: int | None = None,
) -> dict:
    """Train all seeds of `config` as one vmap; write the run directory; return the summary.

    `max_seconds`: a wall-clock budget (compile included): no chunk starts once it is
    spent, so a run at published scale can be sampled for the time a machine is lent;
    the summary then says so (`stopped_at_time_limit`) and projects the full run's time
    from the measured steps/s.

    `devices`: how many devices the seeds are split over (None: all; acl.devices, which
    says how seeds that do not divide evenly are padded).
    """
    if max_seconds is not None and not max_seconds >= 0:
        raise ValueError(f"max_seconds must be >= 0, got {max_seconds}")
    trainer = trainer or make_train(config)
    sharding = DeviceLayout.create(trainer, devices)  # a bad count fails before any write
    run_dir = RunDir(out) if writes_run_dir() else SilentRunDir(out)  # process 0 writes
    seeds = [config.seed + i for i in range(config.num_seeds)]
    run_dir.write_config(config.to_dict(), seeds)
    names = trainer.env.task_space.names or tuple(
        f"task_{i}" for i in range(trainer.env.task_space.dim)
    )

    start = time.perf_counter()
    keys = sharding.seed_keys()
    # A challenged run hands the challenge's data (shared by all seeds) to init.
    data = run_data(trainer)
    init = sharding.jit_init_seeds().lower(keys, data).compile()
    carry = init(keys, data)
    run_chunk = sharding.jit_run_chunk_seeds().lower(carry).compile()
    compile_seconds = time.perf_counter() - start

    bar = tqdm(
        range(trainer.num_chunks),
        desc=config.name,
        unit="eval",
        disable=not progress,
        dynamic_ncols=True,
    )
    final = None
    for chunk in bar:
        if final is not None and max_seconds is not None:
            if time.perf_counter() - start >= max_seconds:
                break
        first_iteration = int(carry.iteration)
        carry, metrics = run_chunk(carry)
        metrics = sharding.to_host(metrics)
        run_dir.append_metrics(_rows(metrics, chunk, seeds, trainer.test_task_names))
        run_dir.append_tasks(chunk, seeds, np.asarray(metrics.tasks), names)
        run_dir.write_teacher_snapshot(chunk, metrics.teacher_snapshot)
        try:
            _check_finite(metrics, first_iteration, seeds)
        except TrainingDiverged as err:
            raise TrainingDiverged(f"{err}; metrics so far are in {run_dir.path}") from None
        final = metrics
        mastered, se = mean_se(metrics.eval_pct_mastered)
        bar.set_postfix(
            mastered=f"{format_mean_se(mastered, se)}%", steps=int(metrics.env_steps[0])
        )
    bar.close()
    wall_seconds = time.perf_counter() - start
    run_dir.save_agent(sharding.to_host(carry.seed.agent_state))

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
        "test_tasks": int(trainer.test_tasks.shape[0]),
        "devices": sharding.devices,
    }
    planned_steps = trainer.num_chunks * trainer.steps_per_chunk
    if env_steps < planned_steps:
        summary["stopped_at_time_limit"] = True
        summary["planned_env_steps"] = planned_steps
        summary["projected_seconds_full_run"] = compile_seconds + planned_steps * len(seeds) / max(
            summary["env_steps_per_second"], 1e-9
        )
    if trainer.test_task_names:
        summary["test_set"] = {
            "spec": config.eval.test_set,
            "names": list(trainer.test_task_names),
            "episode_steps": int(trainer.env.max_episode_steps),
            "greedy_episodes": config.eval.episodes_per_task,
            "sampled_attempts": config.eval.sampled_attempts,
        }
        summary.update(per_task_summary(final, trainer.test_task_names))
    run_dir.write_summary(summary)
    if writes_run_dir():
        plot_learning_curves(
            {f"{config.teacher.name} ({len(seeds)} seeds)": run_dir.read_metrics()},
            run_dir.path / "learning_curve.png",
            title=f"{config.env.name}: {config.teacher.name} teacher, {config.agent.name}",
        )
    return summary
