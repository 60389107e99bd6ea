"""Risk over sampled levels for the saved final students of finished runs.

Also the regret scores' diagnostic ("No Regrets", Rutherford et al. 2024). No retraining.

    acl risk RUN_DIR [RUN_DIR ...] --out DIR
        [--levels 2000] [--episodes 10] [--key 0] [--baseline dr]
        [--regret-levels 1000] [--regret-steps 256] [--no-progress]

Each RUN_DIR is a run directory (`acl.run.results`: config.yaml and agent_params.msgpack);
its name labels it. For every seed's final student:

- **Risk** (`acl.loop.evaluation.sampled_risk`): `--levels` levels from the env's generator
  (or uniform over its task space), the same levels for every student (`--key`);
  `--episodes` episodes on each with sampled actions, ranked on one evaluation seed and
  measured on an independent one. Mean success and CVaR at 0.01, 0.1 and 0.5
  (`acl.core.risk.cvar`), and the CVaR curve over alpha.
- **Regret diagnostic** (with `--regret-levels` > 0): another fixed sample of levels,
  each played for `--regret-steps` steps by one instance (the training rollout's
  length), scored as PLR scores it (`acl.teachers.plr.level_stats`: positive value loss,
  and MaxMC = the best return of the rollout minus the mean value estimate), beside the
  student's success rate p on it (`--episodes` sampled episodes) and its learnability
  p (1 - p). Spearman's rank correlation of each score with p and with p (1 - p).

Writes DIR/risk.json (per seed: mean, CVaR, the curve, the correlations), DIR/risk.md
(means ± SE over seeds, Welch's p against `--baseline`) and DIR/cvar_curves.png.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import jax
import numpy as np

from acl.core.errors import ConfigError
from experiments.cli import CommandParser, one_line_errors

SCORES = ("maxmc", "pvl")
BATCH = 1000
"""Most levels played at once (memory); a divisor of the level count is used."""
CURVE_POINTS = 50


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman's rho; None when either side is constant (undefined)."""
    from scipy.stats import spearmanr

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(spearmanr(x, y).statistic)


def regret_scores(env, agent, agent_state, levels, key, steps: int) -> dict:
    """PLR's two regret approximations of each level [M, D] from one `steps`-step rollout
    per level: {"maxmc": [M], "pvl": [M]}. Jittable."""
    from acl.loop.rollout import play
    from acl.teachers.plr import level_stats

    reset_key, rollout_key = jax.random.split(key)
    _, rollout = play(env, agent, agent_state, levels, steps, reset_key, rollout_key)
    stats = level_stats(rollout)
    return {"maxmc": stats.max_return - stats.mean_value, "pvl": stats.pvl}


compiled_regret_scores = jax.jit(regret_scores, static_argnames=("env", "agent", "steps"))
"""`regret_scores` compiled, called with keywords: one program per env, agent and steps,
the agent state an argument."""


def regret_record(env, agent, state, levels, key, args) -> dict:
    """The diagnostic of one student: mean p, learnable share, and each score's rank
    correlation with p and with p (1 - p)."""
    from acl.loop.evaluation import jit_level_success

    score_key, success_key = jax.random.split(key)
    scores = compiled_regret_scores(
        env=env,
        agent=agent,
        agent_state=state,
        levels=levels,
        key=score_key,
        steps=args.regret_steps,
    )
    p = np.asarray(
        jit_level_success(
            env=env,
            agent=agent,
            agent_state=state,
            levels=levels,
            key=success_key,
            episodes=args.episodes,
            deterministic=False,
            batch_size=math.gcd(len(levels), BATCH),
        )
    )
    targets = {"p": p, "learnability": p * (1 - p)}
    return {
        "mean_p": float(p.mean()),
        "learnable_share": float(((p > 0) & (p < 1)).mean()),
        **{
            f"rho_{name}_{target}": spearman(np.asarray(scores[name]), values)
            for name in SCORES
            for target, values in targets.items()
        },
    }


def evaluate_run(run_dir: Path, args: argparse.Namespace, progress) -> list[dict]:
    """One record per seed of the run."""
    from acl.build import build_env
    from acl.config import parse_config
    from acl.core.risk import cvar_curve
    from acl.loop.evaluation import sampled_risk
    from acl.run.results import RunDir
    from envs.base import random_tasks

    run = RunDir(run_dir)
    config = parse_config(run.read_config_dict())
    env = build_env(config)
    agent, states = run.load_agents(env)
    risk_key, regret_key = jax.random.split(jax.random.PRNGKey(args.key))
    level_key, regret_key = jax.random.split(regret_key)
    regret_levels = random_tasks(env, level_key, args.regret_levels) if args.regret_levels else None
    records = []
    for index in range(config.num_seeds):
        state = jax.tree.map(lambda a, i=index: a[i], states)
        risk = sampled_risk(
            env,
            agent,
            state,
            risk_key,
            args.levels,
            args.episodes,
            batch_size=math.gcd(args.levels, BATCH),
        )
        alphas, curve = cvar_curve(risk.ranked_success, risk.measured_success, CURVE_POINTS)
        record = {
            "seed": config.seed + index,
            "mean_success": risk.mean_success,
            "cvar": {str(a): v for a, v in risk.cvar.items()},
            "curve_alphas": alphas.tolist(),
            "curve": curve.tolist(),
        }
        if regret_levels is not None:
            record["regret"] = regret_record(env, agent, state, regret_levels, regret_key, args)
        records.append(record)
        progress.update(1)
    return records


def summary_rows(results: dict[str, list[dict]], baseline: str | None) -> list[dict]:
    """Mean ± SE over seeds per run, Welch's p against the baseline run."""
    from acl.benchmark.stats import welch_p
    from acl.run.results import mean_se

    def measures(records):
        return {
            "mean": [r["mean_success"] for r in records],
            **{f"cvar_{a}": [r["cvar"][a] for r in records] for a in records[0]["cvar"]},
        }

    base = measures(results[baseline]) if baseline in results else None
    rows = []
    for label, records in results.items():
        row = {"run": label, "seeds": len(records)}
        for name, values in measures(records).items():
            row[name] = mean_se(values)
            if base is not None and label != baseline:
                row[f"p_{name}"] = welch_p(values, base[name])
        rows.append(row)
    return rows


def regret_rows(results: dict[str, list[dict]]) -> list[dict]:
    """Each correlation's mean ± SE over the students of each run, then over all."""
    from acl.run.results import mean_se

    keys = [f"rho_{s}_{t}" for s in SCORES for t in ("p", "learnability")]
    groups = {
        label: [r["regret"] for r in records if "regret" in r] for label, records in results.items()
    }
    groups["all"] = [r for records in groups.values() for r in records]
    rows = []
    for label, records in groups.items():
        if not records:
            continue
        row = {
            "run": label,
            "students": len(records),
            "mean_p": mean_se([r["mean_p"] for r in records]),
        }
        row["learnable_share"] = mean_se([r["learnable_share"] for r in records])
        for key in keys:
            values = [r[key] for r in records if r[key] is not None]
            row[key] = mean_se(values) if values else (float("nan"), float("nan"))
        rows.append(row)
    return rows


def _fmt(value) -> str:
    if isinstance(value, tuple):
        mean, se = value
        return f"{mean:.3f} ± {se:.3f}" if np.isfinite(se) else f"{mean:.3f}"
    if isinstance(value, float):
        return f"{value:.2g}" if value < 0.01 else f"{value:.3f}"
    return str(value)


def markdown(rows: list[dict]) -> str:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_fmt(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def plot(results: dict[str, list[dict]], path: Path, title: str) -> None:
    from acl.core.risk import plot_cvar_curves

    curves = {
        label: (np.asarray(records[0]["curve_alphas"]), np.asarray([r["curve"] for r in records]))
        for label, records in results.items()
    }
    plot_cvar_curves(curves, path, title)


def parser() -> CommandParser:
    parser = CommandParser(
        "risk",
        __doc__,
        examples=(
            "runs/ued_mini/dr runs/ued_mini/plr --levels 2000 --regret-levels 1000 "
            "--out runs/ued_mini/risk",
        ),
    )
    parser.add_argument(
        "runs", nargs="+", help="run directories (config.yaml, agent_params.msgpack)"
    )
    parser.add_out(required=True, help="where risk.json, risk.md and the figure go")
    parser.add_argument(
        "--levels", type=int, default=10_000, help="sampled levels (the paper's 10,000)"
    )
    parser.add_argument(
        "--episodes", type=int, default=10, help="episodes per level (the paper's 10)"
    )
    parser.add_argument("--key", type=int, default=0, help="PRNG key of the levels and episodes")
    parser.add_argument("--baseline", default="dr", help="run name Welch's p compares against")
    parser.add_argument(
        "--regret-levels", type=int, default=0, help="levels of the diagnostic (0: none)"
    )
    parser.add_argument("--regret-steps", type=int, default=256, help="rollout steps per level")
    parser.add_no_progress()
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    parser_ = parser()
    args = parser_.parse_args(argv)
    for name in ("levels", "episodes", "regret_steps"):
        if getattr(args, name) < 1:
            parser_.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.regret_levels < 0:
        parser_.error("--regret-levels must be >= 0")
    return args


@one_line_errors  # a run directory's config, or its students
def main(argv=None) -> int:
    from tqdm import tqdm

    from acl.config import parse_config
    from acl.run.results import RunDir

    args = parse_args(argv)
    runs = [Path(r) for r in args.runs]
    try:
        seeds = sum(parse_config(RunDir(r).read_config_dict()).num_seeds for r in runs)
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from err
    start = time.perf_counter()
    results: dict[str, list[dict]] = {}
    with tqdm(total=seeds, unit="student", disable=args.no_progress) as progress:
        for run in runs:
            progress.set_description(run.name)
            results[run.name] = evaluate_run(run, args, progress)
    seconds = time.perf_counter() - start
    rows = summary_rows(results, args.baseline)
    text = markdown(rows)
    if args.regret_levels:
        text += "\n\nRank correlations of the regret scores (Spearman):\n\n" + markdown(
            regret_rows(results)
        )
    text += f"\n\n{seeds} students, {seconds:.0f} s.\n"
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = {
        k: getattr(args, k) for k in ("levels", "episodes", "key", "regret_levels", "regret_steps")
    }
    (out / "risk.json").write_text(
        json.dumps({"settings": settings, "seconds": seconds, "runs": results}, indent=1)
    )
    (out / "risk.md").write_text(text)
    from experiments.tools.compare import setting_title

    plot(
        results,
        out / "cvar_curves.png",
        f"{setting_title(RunDir(runs[0]).read_config_dict())}: {args.levels:,} sampled levels, "
        f"{args.episodes} episodes each",
    )
    print(f"wrote {out / 'risk.json'}, {out / 'risk.md'}, {out / 'cvar_curves.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
