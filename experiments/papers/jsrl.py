"""Jump-Start RL (Uchendu et al. 2023) vs learning from scratch, on goal_maze.

PPO on a sparse-reward goal_maze, several vmapped seeds per method, the same env-step
budget.

    acl jsrl [--config experiments/configs/jsrl_goal_maze.yaml]
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

import sys
from dataclasses import dataclass, field

import numpy as np

from acl.config import ComponentConfig
from acl.core.errors import ConfigError
from acl.run.results import format_table, mean_se
from experiments.cli import CONFIGS
from experiments.papers import comparison

METHODS = ("jsrl", "jsrl_random", "scratch")
EXAMPLES = ("--set base.loop.total_env_steps=300000 --seeds 8",)
COMMAND = comparison.ComparisonCommand(
    "jsrl", __doc__, CONFIGS / "jsrl_goal_maze.yaml", METHODS, EXAMPLES, default_out="runs/jsrl"
)
parser = COMMAND.parser


@dataclass(frozen=True)
class JSRLExperimentConfig(comparison.FixedTaskComparison):
    """The comparison on goal_maze (the oracle guide), measured from S: `methods` of jsrl,
    jsrl_random, scratch."""

    jsrl: dict = field(default_factory=dict)
    """Keyword arguments of the `jsrl` teacher (guide, n_stages, window, tolerance...);
    `variant` is set per method."""


def parse(data: dict) -> JSRLExperimentConfig:
    base, methods = comparison.comparison_fields(data, JSRLExperimentConfig, METHODS)
    if base.env.name != "goal_maze":
        raise ConfigError(
            f"base.env.name must be goal_maze (the oracle guide), got {base.env.name}"
        )
    jsrl = comparison.teacher_options(data, "jsrl")
    if "variant" in jsrl:
        raise ConfigError("jsrl.variant is set per method (jsrl: curriculum, jsrl_random: random)")
    episodes = comparison.positive_int(
        data, "eval_episodes", comparison.FixedTaskComparison.eval_episodes
    )
    return JSRLExperimentConfig(base=base, methods=methods, eval_episodes=episodes, jsrl=jsrl)


def make_trainer(config: JSRLExperimentConfig, method: str):
    """(Trainer, task [4], BFS distance of the task) for one method; no compilation."""
    from acl.build import build_components, make_train
    from acl.config import replace_config

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
    return make_train(base, components), task, distance


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
    run = comparison.run_chunks(
        trainer,
        comparison.fixed_task_chunk(trainer, task, config.eval_episodes, guide_metrics),
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


plot = comparison.CurvesFigure(
    panels=(
        comparison.CurvePanel("sampled_success", "learner-alone success from S", (-0.02, 1.02)),
        comparison.CurvePanel("sampled_return", "learner-alone return from S (sampled)"),
        comparison.CurvePanel("guide_steps", "guide horizon h (mean handed out)"),
    ),
    figsize=(14, 3.6),
)


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
                **comparison.timing_cells(r),
            }
        )
    return format_table(rows, list(rows[0]))


main = comparison.comparison_main(COMMAND, parse, make_trainer, run_method, table, plot)

if __name__ == "__main__":
    sys.exit(main())
