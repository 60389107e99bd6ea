"""What every method comparison shares (`acl jsrl`, `svgg`, `reverse-curriculum`): one
base experiment run once per method, from a YAML config with `--set` overrides, `--methods`
and `--seeds`, written as results.json, table.md and curves.png; its config's shared
fields and their checks. Also the fixed-task evaluation of jsrl and reverse_curriculum:
training in chunks, each followed by the learner alone on one task, and its curves' plot.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from acl.config import ExperimentConfig, apply_overrides, load_yaml, parse_config
from acl.core.errors import ConfigError
from acl.core.hparams import check_keys
from acl.run.results import mean_se, provenance
from experiments.cli import CommandParser, one_line_errors

if TYPE_CHECKING:  # jax, the trainer and matplotlib load lazily: `--help` stays fast
    import jax.stages
    from matplotlib.axes import Axes

    from acl.loop.train import Trainer


@dataclass(frozen=True)
class Comparison:
    """What every comparison's config holds; a script's config class adds its own fields
    (each a top-level key of the YAML)."""

    base: ExperimentConfig
    """Env, agent, loop and seeds shared by every method; its teacher is replaced per
    method."""
    methods: tuple[str, ...]
    """The methods to run, in order (`methods:` in the YAML, or `--methods`)."""


@dataclass(frozen=True)
class FixedTaskComparison(Comparison):
    """A comparison measured on one task by `fixed_task_chunk`."""

    eval_episodes: int = 32
    """Sampled-policy episodes from the measured task per evaluation."""


def comparison_fields(
    data: dict, config_class: type[Comparison], methods: tuple[str, ...]
) -> tuple[ExperimentConfig, tuple[str, ...]]:
    """(base, methods) of a comparison's config dict, after the check every comparison
    makes: each top-level key is a field of `config_class`, each method one of `methods`
    (the default when the config names none). Raises ConfigError."""
    check_keys(data, [f.name for f in dataclasses.fields(config_class)], "config")
    base = parse_config(data.get("base") or {})
    chosen = tuple(data.get("methods") or methods)
    for method in chosen:
        if method not in methods:
            raise ConfigError(f"methods: unknown method {method!r} (known: {', '.join(methods)})")
    return base, chosen


def positive_int(data: dict, key: str, default: int) -> int:
    """`data[key]` (`default` when absent); ConfigError unless a positive integer."""
    value = data.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{key} must be a positive integer, got {value!r}")
    return value


def teacher_options(data: dict, key: str) -> dict:
    """`data[key]`, a mapping of a teacher's options ({} when absent); ConfigError
    otherwise."""
    options = data.get(key) or {}
    if not isinstance(options, dict):
        raise ConfigError(f"{key}: expected a mapping of teacher options, got {options!r}")
    return dict(options)


@dataclass(frozen=True)
class ComparisonCommand:
    """A comparison as an `acl` command: the flags every comparison takes (`parser`); a
    script adds its own to the parser before parsing. Its configs, listed by --help, are
    those of experiments/configs/ named like `default_config` up to its first "_"."""

    name: str
    doc: str | None
    default_config: Path
    methods: tuple[str, ...]
    examples: tuple[str, ...]
    default_out: str | None = None
    """None: the script derives it from its flags."""

    def parser(self) -> CommandParser:
        parser = CommandParser(self.name, self.doc, examples=self.examples)
        parser.add_config(
            default=str(self.default_config),
            catalogue=f"{self.default_config.stem.split('_')[0]}_*.yaml",
            help="the comparison's YAML: base, methods and the methods' options",
        )
        parser.add_overrides(help="override a config key, e.g. base.loop.total_env_steps=100000")
        parser.add_argument(
            "--methods", nargs="+", default=None, choices=self.methods, help="default: the config's"
        )
        parser.add_seeds(help="vmapped seeds per method (default: the config's base.num_seeds)")
        parser.add_out(default=self.default_out)
        parser.add_no_progress()
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


def timing_cells(result: dict) -> dict[str, str]:
    """The last columns of a comparison's table row: a method's compile and wall seconds."""
    return {
        "compile s": f"{result['compile_seconds']:.0f}",
        "wall s": f"{result['wall_seconds']:.0f}",
    }


def run_comparison(out: Path, data: dict, config, run, table, plot, **extra) -> None:
    """Run every method of `config` (`run(method) -> result dict`), print `table(results)`
    and write the outputs (`plot(results, path, title)`, `comparison_title`)."""
    from acl.run.results import enable_compilation_cache

    enable_compilation_cache()
    results = [run(method) for method in config.methods]
    text = table(results)
    print(text)
    seeds = [config.base.seed + i for i in range(config.base.num_seeds)]
    title = comparison_title(data)
    write_comparison(
        out, data, seeds, results, text, lambda path: plot(results, path, title), **extra
    )


def comparison_main(
    command: ComparisonCommand, parse, make_trainer, run_method, table, plot
) -> Callable[..., int]:
    """A comparison script's `main(argv=None) -> int`: its flags (`command.parser()`), the
    config (`parse(data)`), every method's trainer built once so every config error comes
    before any compilation (a one-line error, exit 2), then `run_comparison` with
    `run_method(config, method, progress)`."""

    @one_line_errors
    def main(argv: list[str] | None = None) -> int:
        args = command.parser().parse_args(argv)
        data = comparison_data(args)
        config = parse(data)
        for method in config.methods:
            make_trainer(config, method)
        run_comparison(
            Path(args.out),
            data,
            config,
            lambda method: run_method(config, method, not args.no_progress),
            table,
            plot,
        )
        return 0

    return main


# -- fixed-task evaluation (experiments.papers.jsrl, .reverse_curriculum) -----------------

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
        carry, stats = trainer.run_iterations(carry, trainer.schedule.iterations_per_chunk)
        state = carry.seed.agent_state
        key = trainer.evaluation.key
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
    bar = tqdm(range(trainer.schedule.num_chunks), desc=method, unit="eval", disable=not progress)
    for i in bar:
        carry, metrics = compiled(carry)
        values = {k: np.asarray(v, np.float64) for k, v in record(jax.device_get(metrics)).items()}
        for name, value in values.items():
            curves.setdefault(name, []).append(value)
        env_steps.append((i + 1) * trainer.schedule.steps_per_chunk)
        bar.set_postfix(**postfix(values))
    wall = time.perf_counter() - t1
    total_steps = trainer.schedule.env_steps * trainer.seeds.count
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


class CurvesFigure(NamedTuple):
    """A comparison's `plot(results, path, title)`: `plot_curves` with these panels."""

    panels: tuple[CurvePanel, ...]
    figsize: tuple[float, float]

    def __call__(self, results: list[dict], path: Path, title: str = "") -> None:
        plot_curves(results, self.panels, self.figsize, path, title)


def comparison_title(data: dict) -> str:
    """ "goal_maze, layout u_maze": a comparison's env from its config (`data`, as in
    results.json), as a figure's title."""
    env = data.get("base", {}).get("env", {})
    layout = env.get("layout")
    return f"{env.get('name', '')}" + (f", layout {layout}" if layout else "")


def plot_mean_se(ax: Axes, steps: np.ndarray, curve: np.ndarray, label: str) -> None:
    """A curve [S, T] against steps [T]: its mean over seeds, and a band of ± its
    standard error (none with one seed)."""
    from acl.core.plot_style import BAND_ALPHA

    mean, se = mean_se(curve, axis=0)
    line = ax.plot(steps, mean, label=label)[0]
    ax.fill_between(steps, mean - se, mean + se, color=line.get_color(), alpha=BAND_ALPHA, lw=0)


def plot_curves(
    results: list[dict],
    panels: tuple[CurvePanel, ...],
    figsize: tuple[float, float],
    path: Path,
    title: str = "",
) -> None:
    """A row of panels against env steps per seed, every method's mean ± SE in each, on
    one env-steps axis; one legend beside them, naming the band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from acl.core.plot_style import legend_outside, save, se_band_label, steps_axis

    fig, axes = plt.subplots(1, len(panels), figsize=figsize, sharex=True)
    for r in results:
        steps = np.asarray(r["env_steps"])
        for ax, panel in zip(axes, panels):
            plot_mean_se(ax, steps, np.asarray(r[panel.curve]), r["method"])
    for ax, panel in zip(axes, panels):
        limits = {} if panel.ylim is None else {"ylim": panel.ylim}
        ax.set(xlabel="env steps per seed", ylabel=panel.ylabel, **limits)
        steps_axis(ax.xaxis)
        ax.grid(alpha=0.3)
    seeds = [len(r[panels[0].curve]) for r in results]
    legend_outside(fig, list(axes), band=se_band_label(seeds), title="method")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save(fig, path)
