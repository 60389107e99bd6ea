"""What every method-comparison script shares (experiments.jsrl, .svgg,
.reverse_curriculum): one base experiment run once per method, from a YAML config with
`--set` overrides, `--methods` and `--seeds`, written as results.json, table.md and
curves.png. Also the fixed-task evaluation of .jsrl and .reverse_curriculum: training in
chunks, each followed by the learner alone on one task, and its curves' plot.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from acl.config import apply_overrides, load_yaml
from acl.core.errors import ConfigError
from acl.run.results import mean_se, provenance
from experiments.cli import add_overrides_argument, add_seeds_argument

if TYPE_CHECKING:  # jax, the trainer and matplotlib load lazily: `--help` stays fast
    import jax.stages
    from matplotlib.axes import Axes

    from acl.loop.train import Trainer


def comparison_parser(
    prog: str, default_config: Path, methods: tuple[str, ...], default_out: str | None
) -> argparse.ArgumentParser:
    """The shared flags; a script adds its own before parsing."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--config", default=str(default_config), help="YAML config")
    add_overrides_argument(parser, metavar="K=V", help=None)
    parser.add_argument("--methods", nargs="+", default=None, choices=methods)
    add_seeds_argument(parser, help="vmapped seeds per method")
    parser.add_argument("--out", default=default_out)
    parser.add_argument("--no-progress", action="store_true")
    return parser


def comparison_data(args: argparse.Namespace) -> dict:
    """The config as a dict: the YAML, then `--set`, `--methods` and `--seeds`.

    Raises ConfigError on a bad file or override."""
    data = apply_overrides(load_yaml(args.config), args.overrides)
    if args.methods:
        data["methods"] = args.methods
    if args.seeds is not None:
        data.setdefault("base", {})["num_seeds"] = args.seeds
    return data


def write_comparison(
    out: Path, data: dict, seeds: list[int], results: list[dict], text: str, plot, **extra
) -> None:
    """results.json (config, provenance, `extra`, results), table.md and curves.png
    (`plot(path)`) in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    payload = {"config": data, **extra, "provenance": provenance(seeds), "results": results}
    (out / "results.json").write_text(json.dumps(payload, indent=1))
    (out / "table.md").write_text(text + "\n")
    plot(out / "curves.png")
    print(f"wrote {out / 'results.json'}, {out / 'table.md'}, {out / 'curves.png'}")


def run_comparison(out: Path, data: dict, config, run, table, plot, **extra) -> None:
    """Run every method of `config` (`run(method) -> result dict`), print `table(results)`
    and write the outputs (`plot(results, path)`)."""
    from acl.run.results import enable_compilation_cache

    enable_compilation_cache()
    results = [run(method) for method in config.methods]
    text = table(results)
    print(text)
    seeds = [config.base.seed + i for i in range(config.base.num_seeds)]
    write_comparison(out, data, seeds, results, text, lambda path: plot(results, path), **extra)


def comparison_main(args: argparse.Namespace, parse, make_trainer, run_method, table, plot) -> int:
    """A comparison script's whole `main` after its flags: the config (`parse(data)`),
    every method's trainer built once so every config error comes before any
    compilation (exit 2), then `run_comparison` with `run_method(config, method,
    progress)`."""
    try:
        data = comparison_data(args)
        config = parse(data)
        for method in config.methods:
            make_trainer(config, method)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    run_comparison(
        Path(args.out),
        data,
        config,
        lambda method: run_method(config, method, not args.no_progress),
        table,
        plot,
    )
    return 0


# -- fixed-task evaluation (experiments.jsrl, .reverse_curriculum) ----------------------

ExtraMetrics = Callable[[Any, dict, dict], dict]
"""(env, training stats of the chunk, teacher snapshot) -> a script's own metrics, per
seed, traced inside the chunk."""


def fixed_task_chunk(
    trainer: Trainer, task: np.ndarray, episodes: int, extra_metrics: ExtraMetrics | None = None
) -> jax.stages.Wrapped:
    """jit(vmap(chunk)) over seeds: `iterations_per_chunk` iterations, then the learner
    alone from `task` [D] (greedy: one episode; sampled: `episodes` episodes).

    chunk(carry) -> (carry, metrics); metrics per seed: greedy_success, sampled_success
    and sampled_return over the evaluation episodes, train_success and train_return over
    the chunk's training episodes, then `extra_metrics(env, stats, snapshot)`.
    """
    import jax
    import jax.numpy as jnp

    from acl.loop.evaluation import run_episodes

    env, agent = trainer.env, trainer.agent
    greedy_tasks = np.asarray(task)[None]
    sampled_tasks = np.repeat(np.asarray(task)[None], episodes, axis=0)

    def chunk(carry):
        carry, stats = trainer.run_iterations(carry, trainer.iterations_per_chunk)
        state = carry.seed.agent_state
        key = jax.random.PRNGKey(trainer.config.eval.seed)
        greedy = run_episodes(env, agent, state, jnp.asarray(greedy_tasks), key, True)
        sampled = run_episodes(env, agent, state, jnp.asarray(sampled_tasks), key, False)
        episodes_done = jnp.maximum(stats["episodes"].sum(), 1)
        metrics = {
            "greedy_success": env.is_success(greedy).mean(),
            "sampled_success": env.is_success(sampled).mean(),
            "sampled_return": sampled.mean(),
            "train_success": stats["success_sum"].sum() / episodes_done,
            "train_return": stats["return_sum"].sum() / episodes_done,
        }
        if extra_metrics is not None:
            snapshot = trainer.teacher.snapshot(carry.seed.teacher_state)
            metrics.update(extra_metrics(env, stats, snapshot))
        return carry, metrics

    axes = trainer.carry_axes
    return jax.jit(jax.vmap(chunk, in_axes=(axes,), out_axes=(axes, 0)))


@dataclass(frozen=True)
class ChunkRun:
    """One method's run by `run_chunks`."""

    env_steps: list[int]
    """Env steps per seed at each evaluation."""
    curves: dict[str, list]
    """Per curve, its values [S, chunks] (nested lists, for JSON)."""
    compile_seconds: float
    wall_seconds: float
    env_steps_per_second: float
    """Over all seeds."""

    def result(self, method: str, **details: Any) -> dict:
        """The method's entry of results.json, keys in this order: method, env_steps,
        `details`, the timings, the curves."""
        return {
            "method": method,
            "env_steps": self.env_steps,
            **details,
            "compile_seconds": self.compile_seconds,
            "wall_seconds": self.wall_seconds,
            "env_steps_per_second": self.env_steps_per_second,
            **self.curves,
        }


def run_chunks(
    trainer: Trainer,
    chunk: jax.stages.Wrapped,
    method: str,
    progress: bool,
    record: Callable[[dict], dict[str, np.ndarray]],
    postfix: Callable[[dict[str, np.ndarray]], dict[str, str]],
) -> ChunkRun:
    """Compile `chunk` (timed apart from the run), then call it `num_chunks` times from
    the seeds' initial carry. After each call `record(metrics on the host)` gives the
    evaluation's curve values, name -> [S], and `postfix(those values)` the progress
    bar's."""
    import jax
    from tqdm.auto import tqdm

    init = trainer.jit_init_seeds()
    t0 = time.perf_counter()
    carry = init(trainer.seed_keys())
    compiled = chunk.lower(carry).compile()
    compile_seconds = time.perf_counter() - t0
    curves: dict[str, list[np.ndarray]] = {}
    env_steps = []
    t1 = time.perf_counter()
    bar = tqdm(range(trainer.num_chunks), desc=method, unit="eval", disable=not progress)
    for i in bar:
        carry, metrics = compiled(carry)
        values = {k: np.asarray(v, np.float64) for k, v in record(jax.device_get(metrics)).items()}
        for name, value in values.items():
            curves.setdefault(name, []).append(value)
        env_steps.append((i + 1) * trainer.steps_per_chunk)
        bar.set_postfix(**postfix(values))
    wall = time.perf_counter() - t1
    total_steps = trainer.steps_per_chunk * trainer.num_chunks * trainer.config.num_seeds
    return ChunkRun(
        env_steps=env_steps,
        curves={k: np.stack(v, axis=1).tolist() for k, v in curves.items()},
        compile_seconds=compile_seconds,
        wall_seconds=wall,
        env_steps_per_second=total_steps / wall,
    )


class CurvePanel(NamedTuple):
    """One panel of `plot_curves`."""

    curve: str
    """A results key holding [S, evaluations]."""
    ylabel: str
    ylim: tuple[float, float] | None = None
    """None: matplotlib's own."""


def plot_mean_se(ax: Axes, steps: np.ndarray, curve: np.ndarray, label: str) -> None:
    """A curve [S, T] against steps [T]: its mean over seeds, and a band of ± its
    standard error (none with one seed)."""
    mean, se = mean_se(curve, axis=0)
    ax.plot(steps, mean, label=label)
    ax.fill_between(steps, mean - se, mean + se, alpha=0.2)


def plot_curves(
    results: list[dict], panels: tuple[CurvePanel, ...], figsize: tuple[float, float], path: Path
) -> None:
    """A row of panels against env steps per seed, every method's mean ± SE in each; the
    legend in the first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=figsize)
    for r in results:
        steps = np.asarray(r["env_steps"])
        for ax, panel in zip(axes, panels):
            plot_mean_se(ax, steps, np.asarray(r[panel.curve]), r["method"])
    for ax, panel in zip(axes, panels):
        limits = {} if panel.ylim is None else {"ylim": panel.ylim}
        ax.set(xlabel="env steps / seed", ylabel=panel.ylabel, **limits)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
