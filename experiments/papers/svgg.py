"""SVGG (Castanet, Sigaud, Lamprier 2023) against goal baselines on point_maze.

Success coverage against env steps, several vmapped seeds per method, the same budget and
seeds for all.

    acl svgg [--config experiments/configs/svgg_point_maze.yaml]
        [--set base.loop.total_env_steps=100000 ...] [--methods svgg random_goal]
        [--seeds N] [--recovery] [--out runs/svgg] [--no-progress]

Every method hands out tasks with the env's default start and its own goals: `svgg`
goals from its particles (acl.teachers.svgg); `uniform_box` goals uniform over the whole
goal box, invalid ones included (with point_maze's `invalid_goal: keep` such a goal costs
a full episode); `random_goal` goals uniform over the valid goals (an oracle: it knows
which goals exist); `alp_gmm` ALP-GMM over the goal dimensions (`goal_dims`, through the
`subspace` teacher). The table gives Welch's p of each method's final coverage against
uniform_box and its difference from random_goal in standard errors.

The metric, every `eval_every` env steps, is *success coverage*: the share
of a fixed grid of valid goals (`PointMaze.goal_grid(coverage_grid)`) that the greedy
policy reaches, one deterministic episode each from the default start
(`acl.loop.evaluation.success_coverage`). Per goal successes are kept too, for the map.

`--recovery`: after `recovery.at` of the run's evaluation periods the maze changes to
`recovery.walls` (by default a wall is added across the U's lower corridor, leaving a
gap under the U's wall, so the straight way from the start to the lower right, which
the agent has mastered by then, is blocked) and training goes on in the new maze with
the same agent and teacher states; coverage is measured in the maze of the moment (its
own grid of valid goals). The change swaps two compiled chunk programs built on two
envs (walls are static config, compiled in as constants); nothing in the carry depends
on the walls, so their number may change too.

Writes results.json, table.md and curves.png to --out and prints the table: final
coverage (mean ± standard error over seeds) per method, and for each pair of methods
the difference and whether it exceeds twice its standard error.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from acl.config import ComponentConfig, ExperimentConfig
from acl.core.errors import ConfigError
from acl.run.results import format_table, mean_se
from experiments.cli import CONFIGS, CommandParser, one_line_errors
from experiments.papers.comparison import (
    Comparison,
    ComparisonCommand,
    comparison_data,
    comparison_fields,
    plot_mean_se,
    positive_int,
    run_comparison,
    teacher_options,
)

METHODS = ("svgg", "uniform_box", "random_goal", "alp_gmm")
BASELINE = "uniform_box"
"""The method Welch's p compares every other against."""
ORACLE = "random_goal"
"""Uniform over the valid goals: it knows which goals exist."""
EXAMPLES = ("--config svgg_s_maze --set base.seed=100", "--config svgg_s_maze --recovery")
COMMAND = ComparisonCommand("svgg", __doc__, CONFIGS / "svgg_point_maze.yaml", METHODS, EXAMPLES)
DEFAULT_RECOVERY_WALLS = (((0.0, 0.5), (0.7, 0.5)), ((0.45, 0.0), (0.45, 0.38)))
"""u_maze's wall plus one across its lower corridor at x = 0.45, open for y in
(0.38, 0.5): the start's straight way to the lower right is blocked."""


@dataclass(frozen=True)
class RecoveryConfig:
    """The mid-run maze change of --recovery."""

    walls: tuple = DEFAULT_RECOVERY_WALLS
    """Inner walls of the maze after the change."""
    at: float = 0.5
    """Share of the run's evaluation periods before the change."""


@dataclass(frozen=True)
class SVGGExperimentConfig(Comparison):
    """The comparison on point_maze, measured by success coverage: `methods` of svgg,
    uniform_box, random_goal, alp_gmm."""

    svgg: dict = field(default_factory=dict)
    """Keyword arguments of `make_svgg` (checked by it)."""
    alp_gmm: dict = field(default_factory=dict)
    """Keyword arguments of the `alp_gmm` teacher over the goal dimensions."""
    goal_dims: tuple[str, ...] = ("goal_x", "goal_y")
    """The task dimensions uniform_box and alp_gmm choose (`subspace` teacher); the
    others (the start) stay the default task's."""
    coverage_grid: int = 10
    """Coverage goals: the valid centres of a coverage_grid x coverage_grid grid."""
    recovery: RecoveryConfig = RecoveryConfig()


def parse(data: dict) -> SVGGExperimentConfig:
    base, methods = comparison_fields(data, SVGGExperimentConfig, METHODS)
    if base.env.name != "point_maze":
        raise ConfigError(f"base.env.name must be point_maze, got {base.env.name}")
    if base.loop.mode != "episode":
        raise ConfigError("base.loop.mode must be episode (goals are taken at each reset)")
    svgg, alp = teacher_options(data, "svgg"), teacher_options(data, "alp_gmm")
    goal_dims = data.get("goal_dims", SVGGExperimentConfig.goal_dims)
    if isinstance(goal_dims, str) or not goal_dims:
        raise ConfigError(f"goal_dims: expected a list of task dimensions, got {goal_dims!r}")
    grid = positive_int(data, "coverage_grid", SVGGExperimentConfig.coverage_grid)
    rec = data.get("recovery") or {}
    if not isinstance(rec, dict) or set(rec) - {"walls", "at"}:
        raise ConfigError(f"recovery: expected a mapping with walls and at, got {rec!r}")
    at = rec.get("at", 0.5)
    if isinstance(at, bool) or not isinstance(at, int | float) or not 0 < at < 1:
        raise ConfigError(f"recovery.at must be a number in (0, 1), got {at!r}")
    walls = rec.get("walls", DEFAULT_RECOVERY_WALLS)
    walls = tuple(tuple(tuple(float(v) for v in end) for end in seg) for seg in walls)
    recovery = RecoveryConfig(walls=walls, at=float(at))
    return SVGGExperimentConfig(
        base=base,
        methods=methods,
        svgg=svgg,
        alp_gmm=alp,
        goal_dims=tuple(goal_dims),
        coverage_grid=grid,
        recovery=recovery,
    )


def _env_config(config: SVGGExperimentConfig, walls) -> ExperimentConfig:
    from acl.config import replace_config

    base = replace_config(config.base, teacher=ComponentConfig("fixed"))
    if walls is None:
        return base
    kwargs = {**base.env.kwargs, "walls": [list(map(list, seg)) for seg in walls]}
    kwargs.pop("layout", None)
    return replace_config(base, env=ComponentConfig(base.env.name, kwargs))


def make_trainer(config: SVGGExperimentConfig, method: str, walls=None):
    """(Trainer, env) for one method, in the base maze or with inner `walls` (the base
    maze's default task kept: same start, and the same coverage episodes); no
    compilation."""
    from acl.build import build_components, make_train, run_context
    from acl.loop.train import Components
    from acl.teachers import TEACHERS

    base = _env_config(config, walls)
    components = build_components(base)
    env = components.env
    if walls is not None:
        # PointMaze(walls=...) would default to the "open" layout's start and goal.
        default = build_components(_env_config(config, None)).env.task_space.default
        env.task_space = env.task_space.replace(default=default)
    name, options = teacher_config(config, method)
    teacher = TEACHERS.get(name)(
        task_space=env.task_space, context=run_context(base, env), **options
    )
    return make_train(base, Components(env, teacher, components.agent)), env


def teacher_config(config: SVGGExperimentConfig, method: str) -> tuple[str, dict]:
    """(registered teacher, its keys) of a method: uniform_box and alp_gmm choose the goal
    dimensions only (`subspace`), the start fixed at the default task's."""
    if method == "svgg":
        return "svgg", dict(config.svgg)
    if method == "uniform_box":
        return "subspace", {"teacher": "random", "dims": list(config.goal_dims)}
    if method == "alp_gmm":
        inner = {"teacher": "alp_gmm", "dims": list(config.goal_dims), "inner": config.alp_gmm}
        return "subspace", inner
    return method, {}


def chunk_fn(trainer, env):
    """jit(vmap(chunk)) over seeds, called as chunk(carry, goals [M, 2]):
    `iterations_per_chunk` iterations, then success on every coverage goal (greedy, one
    episode each from the default start; `acl.loop.evaluation.goal_success`, whose mean is
    the success coverage). The goals are an argument, not a constant: XLA would
    otherwise spend seconds constant-folding their mapping onto valid positions."""
    import jax
    import jax.numpy as jnp

    from acl.loop.evaluation import goal_success

    agent = trainer.agent
    base = np.asarray(env.task_space.default_task)

    def chunk(carry, goals):
        carry, stats = trainer.run_iterations(carry, trainer.schedule.iterations_per_chunk)
        state = carry.seed.agent_state
        key = trainer.evaluation.key
        success = goal_success(env, agent, state, base, goals, key)
        episodes = jnp.maximum(stats["episodes"].sum(), 1)
        snapshot = trainer.teacher.snapshot(carry.seed.teacher_state)
        metrics = {
            "coverage": success.mean(),
            "goal_success": success,
            "train_success": stats["success_sum"].sum() / episodes,
            "teacher": {k: v for k, v in snapshot.items() if jnp.ndim(v) == 0},
            "particles": snapshot.get("particles", jnp.zeros((0, 2))),
        }
        return carry, metrics

    axes = trainer.carry_axes
    return jax.jit(jax.vmap(chunk, in_axes=(axes, None), out_axes=(axes, 0)))


def run_method(config: SVGGExperimentConfig, method: str, recovery: bool, progress: bool) -> dict:
    import jax
    from tqdm.auto import tqdm

    trainer, env = make_trainer(config, method)
    phases = [(trainer, env)]
    change = trainer.schedule.num_chunks
    if recovery:
        trainer_b, env_b = make_trainer(config, method, config.recovery.walls)
        # Its agent takes over trainer's agent state; an abstract init sets what an
        # agent builds in `init` (DQN's network) without computing anything.
        jax.eval_shape(trainer_b.init_agent, jax.random.PRNGKey(0))
        phases.append((trainer_b, env_b))
        change = min(
            max(1, round(config.recovery.at * trainer.schedule.num_chunks)),
            trainer.schedule.num_chunks - 1,
        )
    t0 = time.perf_counter()
    carry = trainer.jit_init_seeds()(trainer.seed_keys())
    compiled = []
    for tr, e in phases:
        goals = e.goal_grid(config.coverage_grid)
        goals = jax.numpy.asarray(goals)
        compiled.append(
            (tr.schedule.num_chunks, goals, chunk_fn(tr, e).lower(carry, goals).compile())
        )
    compile_s = time.perf_counter() - t0
    curves = {k: [] for k in ("coverage", "train_success", "goal_success")}
    steps, particles = [], []
    t1 = time.perf_counter()
    bar = tqdm(range(trainer.schedule.num_chunks), desc=method, unit="eval", disable=not progress)
    for i in bar:
        _, goals, run = compiled[1 if i >= change else 0]
        carry, metrics = run(carry, goals)
        metrics = jax.device_get(metrics)
        for name in ("coverage", "train_success"):
            curves[name].append(np.asarray(metrics[name], np.float64))
        curves["goal_success"].append(np.asarray(metrics["goal_success"], bool))
        for name, value in metrics["teacher"].items():
            curves.setdefault(f"teacher_{name}", []).append(np.asarray(value, np.float64))
        particles.append(np.asarray(metrics["particles"], np.float32))
        steps.append((i + 1) * trainer.schedule.steps_per_chunk)
        bar.set_postfix(coverage=f"{curves['coverage'][-1].mean():.2f}")
    wall = time.perf_counter() - t1
    total_steps = trainer.schedule.env_steps * trainer.seeds.count
    goal_success = curves.pop("goal_success")
    out = {k: np.stack(v, axis=1).tolist() for k, v in curves.items()}  # [S, chunks]
    return {
        "method": method,
        "env_steps": steps,
        "change_index": change if recovery else None,
        "change_step": change * trainer.schedule.steps_per_chunk if recovery else None,
        "coverage_goals": [np.asarray(g).tolist() for _, g, _ in compiled],
        # [S, M] per phase: per-goal success at the last evaluation before the change
        # (recovery only) and at the end.
        "goal_success_before_change": goal_success[change - 1].astype(int).tolist()
        if recovery
        else None,
        "goal_success_final": goal_success[-1].astype(int).tolist(),
        "particles_final": particles[-1].tolist(),  # [S, P, 2]; empty for random_goal
        "particles_before_change": particles[change - 1].tolist() if recovery else None,
        # The teacher snapshot of every evaluation: [chunks, S, P, 2] (P = 0: random_goal).
        "particles": np.round(np.stack(particles), 4).tolist(),
        "compile_seconds": compile_s,
        "wall_seconds": wall,
        "env_steps_per_second": total_steps / wall,
        **out,
    }


def compare(results: list[dict], index: int = -1) -> list[dict]:
    """Every pair of methods: difference of mean coverage at evaluation `index`, its
    standard error (independent seeds: the two SEs in quadrature), and whether the
    difference exceeds twice it."""
    rows = []
    for i, a in enumerate(results):
        for b in results[i + 1 :]:
            ma, sa = mean_se(np.asarray(a["coverage"])[:, index])
            mb, sb = mean_se(np.asarray(b["coverage"])[:, index])
            diff, se = ma - mb, float(np.hypot(sa, sb))
            rows.append(
                {
                    "comparison": f"{a['method']} - {b['method']}",
                    "difference": f"{diff:+.3f}",
                    "SE": f"{se:.3f}",
                    "> 2 SE": "yes" if abs(diff) > 2 * se else "no",
                }
            )
    return rows


def final_coverage(result: dict) -> np.ndarray:
    """[S] coverage at the last evaluation (the run's "final")."""
    return np.asarray(result["coverage"])[:, -1]


def table(results: list[dict]) -> str:
    from acl.benchmark.stats import welch_p

    rows = []
    recovery = results[0]["change_index"] is not None
    by_method = {r["method"]: final_coverage(r) for r in results}
    base, oracle = by_method.get(BASELINE), by_method.get(ORACLE)
    for r in results:
        coverage = np.asarray(r["coverage"])
        final = final_coverage(r)
        m, se = mean_se(final)
        row = {
            "method": r["method"],
            "seeds": len(coverage),
            "env steps/seed": f"{r['env_steps'][-1]:,}",
            "final coverage": f"{m:.3f} ± {se:.3f}",
        }
        if base is not None:
            p = welch_p(final, base) if r["method"] != BASELINE else float("nan")
            row[f"Welch p vs {BASELINE}"] = "" if np.isnan(p) else f"{p:.2g}"
        if oracle is not None:
            mo, so = mean_se(oracle)
            diff_se = float(np.hypot(se, so))
            row[f"- {ORACLE} (in SE)"] = (
                "" if r["method"] == ORACLE else f"{m - mo:+.3f} ({(m - mo) / diff_se:+.1f})"
            )
        if recovery:
            c = r["change_index"]
            b, bse = mean_se(coverage[:, c - 1])
            low, lse = mean_se(coverage[:, c:].min(axis=1))
            row["before change"] = f"{b:.3f} ± {bse:.3f}"
            row["lowest after"] = f"{low:.3f} ± {lse:.3f}"
        row["train success"] = f"{np.asarray(r['train_success'])[:, -1].mean():.2f}"
        row["compile s"] = f"{r['compile_seconds']:.0f}"
        row["wall s"] = f"{r['wall_seconds']:.0f}"
        rows.append(row)
    text = format_table(rows, list(rows[0]))
    pairs = compare(results)
    if pairs:
        text += "\n\nfinal coverage, pairwise\n" + format_table(pairs, list(pairs[0]))
    return text


def draw_walls(ax, env) -> None:
    """point_maze's walls (the square's sides included) as black segments on `ax`."""
    for (x0, y0), (x1, y1) in np.asarray(env.walls):
        ax.plot([x0, x1], [y0, y1], color="black", lw=2)


def plot(results: list[dict], config: SVGGExperimentConfig, path: Path, title: str = "") -> None:
    """Success coverage against env steps (mean ± SE over seeds), then per method the
    final success rate of every coverage goal over the maze, on one colour scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from acl.core.plot_style import legend_outside, save, se_band_label, steps_axis

    recovery = results[0]["change_index"] is not None
    # The maze of the last evaluation (after the change, with --recovery).
    walls = config.recovery.walls if recovery else None
    env = make_trainer(config, results[0]["method"], walls)[1]
    fig, axes = plt.subplots(
        1, 1 + len(results), figsize=(3.3 * (1 + len(results)) + 1, 3.4), layout="constrained"
    )
    ax = axes[0]
    for r in results:
        plot_mean_se(ax, np.asarray(r["env_steps"]), np.asarray(r["coverage"]), r["method"])
    if recovery:
        ax.axvline(results[0]["change_step"], color="grey", ls="--", label="maze changes")
    ax.set(xlabel="env steps per seed", ylabel="success coverage", ylim=(-0.02, 1.02))
    steps_axis(ax.xaxis)
    ax.grid(alpha=0.3)
    ax.set_title("coverage", fontsize=9)
    for ax, r in zip(axes[1:], results):
        goals = np.asarray(r["coverage_goals"][-1])
        hit = np.asarray(r["goal_success_final"]).mean(0)
        sc = ax.scatter(goals[:, 0], goals[:, 1], c=hit, cmap="RdYlGn", vmin=0, vmax=1, s=22)
        parts = np.asarray(r["particles_final"])
        if parts.size:
            ax.scatter(
                parts[0, :, 0], parts[0, :, 1], s=5, color="navy", label="particles (seed 0)"
            )
        draw_walls(ax, env)
        start = np.asarray(env.task_space.default)[:2]
        ax.plot(*start, marker="*", color="blue", ms=10, ls="")
        ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", xticks=[0, 0.5, 1], yticks=[0, 0.5, 1])
        ax.set_title(f"{r['method']}: final success", fontsize=9)
    fig.colorbar(sc, ax=list(axes[1:]), shrink=0.8, label="success rate, mean over seeds")
    extra = [
        (Line2D([], [], color="black", lw=2), "wall"),
        (Line2D([], [], marker="*", color="blue", ms=10, ls=""), "start"),
    ]
    seeds = [len(r["coverage"]) for r in results]
    legend_outside(fig, list(axes), band=se_band_label(seeds), extra=extra)
    fig.suptitle(title or "SVGG comparison", fontsize=10)
    save(fig, path)


def parser() -> CommandParser:
    parser = COMMAND.parser()
    parser.add_argument(
        "--recovery", action="store_true", help="change the maze halfway (recovery.walls)"
    )
    return parser


@one_line_errors
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    data = comparison_data(args)
    config = parse(data)
    for method in config.methods:  # every config error before any compilation
        trainer, _ = make_trainer(config, method)
        if args.recovery:
            if trainer.schedule.num_chunks < 2:
                raise ConfigError(
                    "--recovery needs at least two evaluation periods "
                    "(loop.total_env_steps >= 2 * loop.eval_every)"
                )
            make_trainer(config, method, config.recovery.walls)  # checks the walls
    out = Path(args.out or ("runs/svgg_recovery" if args.recovery else "runs/svgg"))
    run_comparison(
        out,
        data,
        config,
        lambda m: run_method(config, m, args.recovery, not args.no_progress),
        table,
        lambda results, path, title: plot(results, config, path, title),
        recovery=args.recovery,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
