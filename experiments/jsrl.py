"""Jump-Start RL (Uchendu et al. 2023) vs learning from scratch: PPO on a sparse-reward
goal_maze, several vmapped seeds per method, the same env-step budget.

    python -m experiments.jsrl [--config experiments/configs/jsrl_goal_maze.yaml]
        [--set base.loop.total_env_steps=100000 ...] [--methods jsrl jsrl_random scratch]
        [--seeds N] [--out runs/jsrl] [--no-progress]

Every method trains on one task, the layout's S -> G (`base.env`'s default task):
- `jsrl`: the `jsrl` teacher, curriculum variant: a guide (`jsrl.guide`, default the
  shortest-path oracle) plays the first h steps of each episode, h lowered from the
  guide's horizon to 0 by stages;
- `jsrl_random`: the same guide, h uniform in [0, H] per episode;
- `scratch`: the `fixed` teacher, no guide (h = 0 always; the loop runs as without JSRL).

The metric, every `eval_every` env steps, is the *learner alone* from S (the guide never
plays in evaluation): the greedy policy's success (one deterministic episode; 0 or 1 per
seed) and the sampled policy's success rate and mean return over `eval_episodes`
episodes. Also recorded: the teacher's h and stage. Writes results.json, table.md and
curves.png to --out and prints the table: mean ± SE over seeds per method, and each
method's difference from `scratch` with whether it exceeds 2 SE.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from acl.config import ComponentConfig, ExperimentConfig, parse_config
from acl.core.errors import ConfigError
from acl.run.results import format_table, mean_se
from experiments.comparison import (
    CurvePanel,
    comparison_main,
    comparison_parser,
    fixed_task_chunk,
    plot_curves,
    run_chunks,
)

METHODS = ("jsrl", "jsrl_random", "scratch")
DEFAULT_CONFIG = Path(__file__).parent / "configs" / "jsrl_goal_maze.yaml"


@dataclass(frozen=True)
class JSRLExperimentConfig:
    """The comparison: one base experiment, run once per method."""

    base: ExperimentConfig
    """Env (goal_maze), agent, loop and seeds shared by every method; its teacher is
    replaced per method."""
    methods: tuple[str, ...] = METHODS
    """Which of jsrl, jsrl_random, scratch to run."""
    jsrl: dict = field(default_factory=dict)
    """Keyword arguments of the `jsrl` teacher (guide, n_stages, window, tolerance...);
    `variant` is set per method."""
    eval_episodes: int = 32
    """Sampled-policy episodes from S per evaluation."""


def parse(data: dict) -> JSRLExperimentConfig:
    known = {"base", "methods", "jsrl", "eval_episodes"}
    for key in data:
        if key not in known:
            raise ConfigError(f"config: unknown key {key!r} (known: {', '.join(sorted(known))})")
    base = parse_config(data.get("base") or {})
    if base.env.name != "goal_maze":
        raise ConfigError(
            f"base.env.name must be goal_maze (the oracle guide), got {base.env.name}"
        )
    methods = tuple(data.get("methods") or METHODS)
    for m in methods:
        if m not in METHODS:
            raise ConfigError(f"methods: unknown method {m!r} (known: {', '.join(METHODS)})")
    jsrl = data.get("jsrl") or {}
    if not isinstance(jsrl, dict):
        raise ConfigError(f"jsrl: expected a mapping of teacher options, got {jsrl!r}")
    if "variant" in jsrl:
        raise ConfigError("jsrl.variant is set per method (jsrl: curriculum, jsrl_random: random)")
    episodes = data.get("eval_episodes", 32)
    if not isinstance(episodes, int) or isinstance(episodes, bool) or episodes < 1:
        raise ConfigError(f"eval_episodes must be a positive integer, got {episodes!r}")
    return JSRLExperimentConfig(base, methods, dict(jsrl), episodes)


def make_trainer(config: JSRLExperimentConfig, method: str):
    """(Trainer, task [4], BFS distance of the task) for one method; no compilation."""
    from acl.build import build_components
    from acl.loop.train import Trainer, replace_config

    if method == "scratch":
        teacher = ComponentConfig("fixed")
    else:
        variant = "curriculum" if method == "jsrl" else "random"
        teacher = ComponentConfig("jsrl", {**config.jsrl, "variant": variant})
    base = replace_config(config.base, teacher=teacher)
    components = build_components(base)
    env = components.env
    task = np.asarray(env.task_space.default_task, np.float32)
    cells = np.asarray(env.default_params().start), np.asarray(env.default_params().goal)
    distance = int(env.shortest_path_distance(*cells))
    return Trainer(base, components), task, distance


def guide_metrics(env, stats: dict, snapshot: dict) -> dict:
    """The jsrl teacher's h and stage, per seed (0 for `scratch`'s fixed teacher)."""
    import jax.numpy as jnp

    return {
        "guide_steps": snapshot.get("guide_steps", jnp.zeros(())).astype(jnp.float32),
        "stage": snapshot.get("stage", jnp.zeros((), jnp.int32)).astype(jnp.float32),
    }


CURVES = (
    "greedy_success",
    "sampled_success",
    "sampled_return",
    "train_success",
    "train_return",
    "guide_steps",
    "stage",
)


def run_method(config: JSRLExperimentConfig, method: str, progress: bool) -> dict:
    trainer, task, distance = make_trainer(config, method)
    run = run_chunks(
        trainer,
        fixed_task_chunk(trainer, task, config.eval_episodes, guide_metrics),
        method,
        progress,
        record=lambda metrics: {name: metrics[name] for name in CURVES},
        postfix=lambda values: {
            "sampled": f"{values['sampled_success'].mean():.2f}",
            "h": f"{values['guide_steps'].mean():.1f}",
        },
    )
    return run.result(
        method,
        task=task.tolist(),
        task_distance=distance,
        guide_horizon=getattr(trainer.teacher, "guide_horizon", 0),
    )


def _versus(values: np.ndarray, reference: np.ndarray | None) -> str:
    """Difference of means from the reference method, its SE, and whether > 2 SE."""
    if reference is None:
        return "-"
    m, se = mean_se(values)
    r, rse = mean_se(reference)
    diff, diff_se = m - r, float(np.hypot(se, rse))
    verdict = "yes" if abs(diff) > 2 * diff_se else "no"
    return f"{diff:+.2f} ± {diff_se:.2f} (> 2 SE: {verdict})"


def table(results: list[dict]) -> str:
    by_method = {r["method"]: r for r in results}
    scratch = by_method.get("scratch")
    ref_final = None if scratch is None else np.asarray(scratch["sampled_success"])[:, -1]
    ref_mean = None if scratch is None else np.asarray(scratch["sampled_success"]).mean(1)
    rows = []
    for r in results:
        sampled = np.asarray(r["sampled_success"])
        final, over_run = sampled[:, -1], sampled.mean(axis=1)
        is_ref = r["method"] == "scratch"
        fm, fse = mean_se(final)
        am, ase = mean_se(over_run)
        gm, gse = mean_se(np.asarray(r["greedy_success"])[:, -1])
        rm, rse = mean_se(np.asarray(r["sampled_return"])[:, -1])
        rows.append(
            {
                "method": r["method"],
                "seeds": len(sampled),
                "env steps/seed": f"{r['env_steps'][-1]:,}",
                "final success (sampled)": f"{fm:.2f} ± {fse:.2f}",
                "vs scratch": _versus(final, None if is_ref else ref_final),
                "mean success over run": f"{am:.2f} ± {ase:.2f}",
                "vs scratch (run mean)": _versus(over_run, None if is_ref else ref_mean),
                "final success (greedy)": f"{gm:.2f} ± {gse:.2f}",
                "final return (sampled)": f"{rm:.1f} ± {rse:.1f}",
                "final h": f"{np.mean(np.asarray(r['guide_steps'])[:, -1]):.1f}",
                "compile s": f"{r['compile_seconds']:.0f}",
                "wall s": f"{r['wall_seconds']:.0f}",
            }
        )
    return format_table(rows, list(rows[0]))


PANELS = (
    CurvePanel("sampled_success", "learner-alone success from S", (-0.02, 1.02)),
    CurvePanel("sampled_return", "learner-alone return from S (sampled)"),
    CurvePanel("guide_steps", "guide horizon h (mean handed out)"),
)


def plot(results: list[dict], path: Path) -> None:
    plot_curves(results, PANELS, (14, 3.6), path)


def parse_args(argv=None) -> argparse.Namespace:
    parser = comparison_parser("python -m experiments.jsrl", DEFAULT_CONFIG, METHODS, "runs/jsrl")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    return comparison_main(parse_args(argv), parse, make_trainer, run_method, table, plot)


if __name__ == "__main__":
    sys.exit(main())
