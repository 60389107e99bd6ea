"""Reverse curriculum (Florensa et al. 2017) against uniform and fixed far starts.

PPO on goal_maze or point_maze, several vmapped seeds per method.

    acl reverse-curriculum [--config experiments/configs/reverse_curriculum.yaml]
        [--set base.loop.total_env_steps=100000 ...] [--methods reverse uniform_start fixed]
        [--seeds N] [--out runs/reverse_curriculum] [--no-progress]

The goal is the env's default goal. The hard start is `hard_start` if the config gives
one, else the env's default start on point_maze and the free cell farthest from the
goal on goal_maze. All methods hand out tasks with that goal: `reverse` starts near the
goal and grows outwards, `uniform_start` draws starts uniformly, `fixed` always starts
at the hard start. The metric, every `eval_every` env steps, is success *from the hard
start*: the greedy policy's (one deterministic episode; 0 or 1 per seed) and the sampled
policy's success rate over `eval_episodes` episodes. *Final* success is the sampled
success averaged over the last `final_evaluations` evaluations. Also recorded: the mean
distance to the goal (env steps along the shortest path, `start_distance`) of the starts
handed out (the curriculum's reach), and the reverse teacher's scalars (rounds, rounds
without a good start, the good set's distance). Writes results.json, table.md and
curves.png to --out and prints the table, with Welch's p of each method's final success
against `fixed`'s.
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

METHODS = ("reverse", "uniform_start", "fixed")
EXAMPLES = ("--set base.seed=100", "--config reverse_point_maze --methods reverse fixed")
COMMAND = comparison.ComparisonCommand(
    "reverse-curriculum",
    __doc__,
    CONFIGS / "reverse_curriculum.yaml",
    METHODS,
    EXAMPLES,
    default_out="runs/reverse_curriculum",
)
parser = COMMAND.parser


@dataclass(frozen=True)
class ReverseCurriculumConfig(comparison.FixedTaskComparison):
    """The comparison on goal_maze or point_maze, measured from the hard start: `methods`
    of reverse, uniform_start, fixed."""

    reverse: dict = field(default_factory=dict)
    """Keyword arguments of `make_reverse` (preset and overrides; checked by it)."""
    hard_start: tuple[float, float] | None = None
    """The start success is measured from; None: see the module docstring."""
    final_evaluations: int = 3
    """Final success: the mean over this many last evaluations."""


def parse(data: dict) -> ReverseCurriculumConfig:
    base, methods = comparison.comparison_fields(data, ReverseCurriculumConfig, METHODS)
    if base.env.name not in ("goal_maze", "point_maze"):
        raise ConfigError(f"base.env.name must be goal_maze or point_maze, got {base.env.name}")
    if base.loop.mode != "episode":
        raise ConfigError("base.loop.mode must be episode (starts are taken at each reset)")
    hard = data.get("hard_start")
    if hard is not None:
        if not isinstance(hard, list | tuple) or len(hard) != 2:
            raise ConfigError(f"hard_start must be [x, y], got {hard!r}")
        hard = (float(hard[0]), float(hard[1]))
    return ReverseCurriculumConfig(
        base=base,
        methods=methods,
        eval_episodes=comparison.positive_int(
            data, "eval_episodes", comparison.FixedTaskComparison.eval_episodes
        ),
        reverse=comparison.teacher_options(data, "reverse"),
        hard_start=hard,
        final_evaluations=comparison.positive_int(
            data, "final_evaluations", ReverseCurriculumConfig.final_evaluations
        ),
    )


def hard_task(env, hard_start=None) -> tuple[np.ndarray, float]:
    """(task [4] from the hard start to the env's default goal, its distance in env
    steps): `hard_start` if given, else point_maze's default start or goal_maze's free
    cell farthest from the goal."""
    import jax.numpy as jnp

    default = np.asarray(env.task_space.default, np.float32)
    if hard_start is not None:
        start = np.asarray(hard_start, np.float32)
    elif hasattr(env, "free_cells"):
        starts = env.goal_grid()  # every free cell
        start = starts[int(np.argmax(env.start_distance(jnp.asarray(starts), default)))]
    else:
        start = default[:2]
    task = np.concatenate([start, default[2:]]).astype(np.float32)
    # The start as the env resets it (goal_maze: its cell's coordinates).
    task = np.asarray(env.task_with_start(task, start_of(env, task)), np.float32)
    return task, float(env.start_distance(jnp.asarray(task[:2]), task))


def start_of(env, task: np.ndarray) -> np.ndarray:
    """[2]: the start an episode of `task` begins at."""
    import jax

    _, state = env.reset(jax.random.PRNGKey(0), env.task_to_params(task, None))
    return np.asarray(env.start_from_state(state))


def make_trainer(config: ReverseCurriculumConfig, method: str):
    """(Trainer, env, hard task, its distance) for one method; no compilation."""
    from acl.build import build_components, make_train
    from acl.config import replace_config
    from acl.loop.train import Components
    from acl.teachers import TEACHERS

    base = replace_config(config.base, teacher=ComponentConfig("fixed"))
    components = build_components(base)
    env = components.env
    task, distance = hard_task(env, config.hard_start)
    # Every teacher's default task is the hard one: the fixed start and the shared goal.
    space = env.task_space.replace(default=tuple(task.tolist()))
    if method == "reverse":
        teacher = TEACHERS.get("reverse")(task_space=space, env=env, **config.reverse)
    elif method == "uniform_start":
        teacher = TEACHERS.get("uniform_start")(task_space=space, env=env)
    else:
        teacher = TEACHERS.get("fixed")(task_space=space)
    trainer = make_train(base, Components(env, teacher, components.agent))
    return trainer, env, task, distance


MAP_BINS = 24
"""Bins per side of the good-start map on point_maze (goal_maze maps its cells)."""


def map_cells(env, starts):
    """starts [..., 2] -> ((rows, cols) [..., 2] int32, (H, W)): the map cell of each
    start, row 0 at y = 0; goal_maze's own cells, else MAP_BINS bins per side."""
    import jax.numpy as jnp

    if hasattr(env, "coords_to_cell"):
        return env.coords_to_cell(starts), (env.height, env.width)
    ij = jnp.clip(jnp.floor(starts * MAP_BINS), 0, MAP_BINS - 1).astype(jnp.int32)
    return ij[..., ::-1], (MAP_BINS, MAP_BINS)


def good_start_map(env, snapshot: dict):
    """The reverse teacher's good-start buffer as counts per map cell, [H, W] int32."""
    import jax.numpy as jnp

    filled = jnp.arange(snapshot["buffer"].shape[0]) < snapshot["buffer_count"]
    cells, shape = map_cells(env, snapshot["buffer"][:, :2])
    counts = jnp.zeros(shape, jnp.int32)
    return counts.at[cells[:, 0], cells[:, 1]].add(filled.astype(jnp.int32))


def start_metrics(env, stats: dict, snapshot: dict) -> dict:
    """Per seed: the tasks handed out in the chunk [n, 4], the teacher's scalars (the
    reverse teacher's rounds, good starts at the last labelling...) and, for the reverse
    teacher, its good starts per cell [H, W]."""
    import jax.numpy as jnp

    metrics = {
        "tasks": stats["tasks"].reshape(-1, stats["tasks"].shape[-1]),
        "teacher": {k: v for k, v in snapshot.items() if jnp.ndim(v) == 0},
    }
    if "buffer" in snapshot:
        metrics["good_starts"] = good_start_map(env, snapshot)
    return metrics


def run_method(config: ReverseCurriculumConfig, method: str, progress: bool) -> dict:
    import jax

    trainer, env, task, distance = make_trainer(config, method)
    good_starts: list[np.ndarray] = []  # [S, H, W] per evaluation (reverse only)
    start_distance = jax.jit(env.start_distance)

    def record(metrics: dict) -> dict[str, np.ndarray]:
        tasks = np.asarray(metrics["tasks"])  # [S, n, 4]
        reach = np.asarray(start_distance(jax.numpy.asarray(tasks[..., :2]), task))
        if "good_starts" in metrics:
            good_starts.append(np.asarray(metrics["good_starts"]))
        return {
            "greedy_success": metrics["greedy_success"],
            "sampled_success": metrics["sampled_success"],
            "train_success": metrics["train_success"],
            "reach": reach.mean(axis=-1),
            **{f"teacher_{name}": value for name, value in metrics["teacher"].items()},
        }

    run = comparison.run_chunks(
        trainer,
        comparison.fixed_task_chunk(trainer, task, config.eval_episodes, start_metrics),
        method,
        progress,
        record,
        postfix=lambda values: {"sampled": f"{values['sampled_success'].mean():.2f}"},
    )
    return run.result(
        method,
        hard_task=task.tolist(),
        hard_distance=distance,
        final_evaluations=config.final_evaluations,
        # The teacher snapshot of every evaluation: good starts per cell, [chunks, S, H, W]
        # (reverse only; None for the baselines).
        good_starts=np.stack(good_starts).tolist() if good_starts else None,
    )


def steps_to(curve: np.ndarray, steps: list[int], level: float) -> str:
    """Median over seeds of the env steps until the curve first reaches `level`."""
    hits = [steps[int(np.nonzero(c >= level)[0][0])] for c in curve if (c >= level).any()]
    if not hits:
        return "never"
    return f"{int(np.median(hits)):,} ({len(hits)}/{len(curve)})"


def final_success(result: dict, evaluations: int) -> np.ndarray:
    """[S] sampled success from the hard start, mean over the last `evaluations`."""
    return np.asarray(result["sampled_success"])[:, -evaluations:].mean(axis=1)


plot = comparison.CurvesFigure(
    panels=(
        comparison.CurvePanel("sampled_success", "success from the hard start", (-0.02, 1.02)),
        comparison.CurvePanel("reach", "mean BFS distance of starts handed out"),
    ),
    figsize=(10, 3.6),
)


def table(results: list[dict]) -> str:
    from acl.benchmark.stats import welch_p

    final_evaluations = int(results[0].get("final_evaluations", 1))
    baseline = {r["method"]: r for r in results}.get("fixed")
    rows = []
    for r in results:
        sampled = np.asarray(r["sampled_success"])
        greedy = np.asarray(r["greedy_success"])
        final = final_success(r, final_evaluations)
        m, se = mean_se(final)
        g, gse = mean_se(greedy[:, -final_evaluations:].mean(axis=1))
        p = ""
        if baseline is not None and r is not baseline:
            p = f"{welch_p(final, final_success(baseline, final_evaluations)):.2g}"
        fallback = np.asarray(r.get("teacher_fallback_rounds", np.zeros((1, 1))))[:, -1]
        rounds = np.asarray(r.get("teacher_rounds", np.zeros((1, 1))))[:, -1]
        rows.append(
            {
                "method": r["method"],
                "seeds": len(sampled),
                "env steps/seed": f"{r['env_steps'][-1]:,}",
                f"final success (sampled, last {final_evaluations})": f"{m:.2f} ± {se:.2f}",
                "Welch p vs fixed": p,
                "final success (greedy)": f"{g:.2f} ± {gse:.2f}",
                "steps to 0.5 (sampled)": steps_to(sampled, r["env_steps"], 0.5),
                "final reach": f"{np.mean(np.asarray(r['reach'])[:, -1]):.1f}",
                "rounds (fallback)": (
                    f"{rounds.mean():.0f} ({fallback.mean():.0f})" if "teacher_rounds" in r else ""
                ),
                **comparison.timing_cells(r),
            }
        )
    return format_table(rows, list(rows[0]))


main = comparison.comparison_main(COMMAND, parse, make_trainer, run_method, table, plot)

if __name__ == "__main__":
    sys.exit(main())
