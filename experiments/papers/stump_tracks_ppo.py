"""Does PPO learn to walk on Stump Tracks? Its training return, early against late.

Train on the easiest task for several vmapped seeds and compare the training return early
and late in the run.

    acl stump-tracks-ppo                                   # GPU-sized
    acl stump-tracks-ppo --out runs/stump_tracks_ppo_cpu \\
        --config experiments/configs/stump_tracks_ppo_cpu.yaml --seeds 3 \\
        --total-env-steps 250000 --max-minutes 8      # 2 CPU cores: ~9 minutes in all
    acl stump-tracks-ppo --set agent.ent_coef=0.001 --total-env-steps 1e6

The run uses the library's curriculum loop (`acl.loop.train.Trainer`, Fixed teacher on the
env's default task (0, 6), all seeds in one vmap) but skips the test-set evaluations: it
records, per PPO update and seed, the mean return of the episodes that ended during the
update's rollout. It reports, per seed, the mean training return over the first and the
last 10% of updates (episode-weighted), the difference's mean +- SE over seeds, and
whether last > first by more than 2 SE. After training, each seed's deterministic policy
plays `--final-eval-episodes` episodes of the easy task.

OUT (default runs/stump_tracks_ppo):
  summary.json        statistics, timings, throughput, projection, per-update curves
  learning_curve.png  per-update training return per seed, and the mean
  config.yaml, provenance.json, agent_params.msgpack
                      the run directory's checkpoint (acl.run.results.RunDir): the resolved
                      config and the final agent state of every seed

`load_policy(OUT)` rebuilds the deterministic policy `policy(obs, key) -> action` of the best
seed (summary.json's best_seed_index) from a run directory, for notebooks.
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from experiments.cli import CONFIGS, CommandParser, minutes_budget, one_line_errors

DEFAULT_CONFIG = "experiments/configs/stump_tracks_ppo.yaml"
DEFAULT_OUT = "runs/stump_tracks_ppo"
SUITE_FOR_PROJECTION = CONFIGS / "benchmark_stump_tracks.yaml"


# -- statistics -----------------------------------------------------------------------------


def _window_mean(returns: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted mean over the last axis, ignoring entries with zero weight or NaN."""
    ok = (weights > 0) & np.isfinite(returns)
    total = np.where(ok, returns * weights, 0.0).sum(-1)
    count = np.where(ok, weights, 0.0).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1e-12), np.nan)


def learning_statistics(
    curve: np.ndarray, weights: np.ndarray | None = None, fraction: float = 0.1
) -> dict:
    """First vs last `fraction` of updates of per-seed learning curves.

    Args:
      curve: [S, U] per-update mean training return of each seed (NaN where no episode
        ended during that update).
      weights: [S, U] episodes behind each entry (default: 1 where the curve is finite), so
        a window's mean is the mean over its episodes.
      fraction: share of the updates in each window (at least one update).

    A seed's window that holds no episode at all (2000-step episodes and short runs) is
    widened, the first forwards and the last backwards, to its first / last update with
    one; `first_updates` and `last_updates` say how many updates each window spans.

    Returns a dict: window (updates per window before any widening), first and last [S],
    diff [S] = last - first, diff_mean, diff_se (standard error over seeds, ddof 1; 0 for
    one seed) and improved: diff_mean > 2 SE (needs >= 2 seeds with a finite difference).
    """
    curve = np.atleast_2d(np.asarray(curve, np.float64))
    if weights is None:
        weights = np.isfinite(curve).astype(np.float64)
    weights = np.where(np.isfinite(curve), np.broadcast_to(weights, curve.shape), 0.0)
    seeds, updates = curve.shape
    window = max(1, int(round(fraction * updates)))
    has = weights > 0
    first_n = np.full(seeds, window)
    last_n = np.full(seeds, window)
    for i in range(seeds):
        if has[i].any():
            first_n[i] = max(window, int(np.argmax(has[i])) + 1)
            last_n[i] = max(window, int(np.argmax(has[i, ::-1])) + 1)
    first = np.array(
        [_window_mean(curve[i, : first_n[i]], weights[i, : first_n[i]]) for i in range(seeds)]
    )
    last = np.array(
        [
            _window_mean(curve[i, updates - last_n[i] :], weights[i, updates - last_n[i] :])
            for i in range(seeds)
        ]
    )
    from acl.run.results import mean_se

    diff = last - first
    finite = diff[np.isfinite(diff)]
    mean, se = mean_se(finite) if finite.size else (float("nan"), 0.0)
    return {
        "window": window,
        "first_updates": first_n.tolist(),
        "last_updates": last_n.tolist(),
        "first": first.tolist(),
        "last": last.tolist(),
        "diff": diff.tolist(),
        "diff_mean": mean,
        "diff_se": se,
        "improved": bool(finite.size > 1 and mean > 2.0 * se),
    }


# -- configuration ---------------------------------------------------------------------------


def resolve_config(
    path: str | Path,
    overrides: list[str] = (),
    num_seeds: int | None = None,
    total_env_steps: int | None = None,
    updates_per_call: int | None = None,
):
    """The experiment config with the run's length fixed to whole calls of updates.

    Returns (config, updates_per_call, calls). Evaluations on the test set are not used:
    `loop.eval_every` is set to the whole run."""
    from acl.config import load_config, replace_config
    from acl.core.errors import ConfigError

    config = load_config(path, overrides, num_seeds)
    loop = config.loop
    total = int(total_env_steps or loop.total_env_steps)
    per_update = loop.num_envs * loop.num_steps
    updates = total // per_update
    if updates < 1:
        raise ConfigError(
            f"--total-env-steps ({total}) is less than one update (num_envs * num_steps = "
            f"{per_update})"
        )
    per_call = int(updates_per_call or max(1, math.ceil(updates / 40)))
    calls = math.ceil(updates / per_call)
    total = calls * per_call * per_update
    config = replace_config(config, loop={"total_env_steps": total, "eval_every": total})
    return config, per_call, calls


# -- training --------------------------------------------------------------------------------


def make_block(trainer, updates: int):
    """jit(vmap over seeds) of `updates` loop iterations without evaluation.

    Returns carry -> (carry, stats) with stats leaves [S, updates]."""
    import jax

    def block(carry):
        carry, stats = trainer.run_iterations(carry, updates)
        agent = stats["agent"]
        out = {
            "return_sum": stats["return_sum"],
            "episodes": stats["episodes"],
            "success_sum": stats["success_sum"],
            "loss": agent["loss"],
            "entropy": agent["entropy"],
            "approx_kl": agent["approx_kl"],
            "value_loss": agent["value_loss"],
        }
        return carry, out

    axes = trainer.carry_axes
    return jax.jit(jax.vmap(block, in_axes=(axes,), out_axes=(axes, 0)))


def final_evaluation(trainer, agent_state, episodes: int, seed: int = 0) -> np.ndarray:
    """[S, episodes] deterministic returns of every seed's policy on the env's default task."""
    import jax
    import jax.numpy as jnp

    from acl.loop.evaluation import run_episodes

    env, agent = trainer.env, trainer.agent
    tasks = jnp.broadcast_to(env.task_space.default_task, (episodes, env.task_space.dim))

    def one(state):
        return run_episodes(env, agent, state, tasks, jax.random.PRNGKey(seed))

    return np.asarray(jax.jit(jax.vmap(one))(agent_state))


def projection(steps_per_second: float, suite_path: Path = SUITE_FOR_PROJECTION) -> dict:
    """GPU time of the full TeachMyAgent protocol on Stump Tracks at the measured speed.

    Assumes the benchmark's programs (16 seeds x its num_envs) run as fast per env step as
    this run's (seeds x num_envs), and counts the test-set evaluations as env steps."""
    from acl.config import load_yaml

    data = load_yaml(suite_path)
    base = data["base"]
    seeds = int(base["num_seeds"])
    steps = int(base["loop"]["total_env_steps"])
    evals = steps // int(base["loop"]["eval_every"])
    grid = int(base.get("eval", {}).get("grid_per_dim", 10))
    episode = int(base["env"].get("max_episode_steps", 2000))
    eval_steps = evals * grid**2 * episode
    programs_per_teacher = sum(
        len(data.get("students") or {}) if _challenge(s) == "students" else 1
        for s in data["settings"]
    )
    runs = len(data["teachers"]) * programs_per_teacher
    total = runs * seeds * (steps + eval_steps)
    return {
        "assumption": (
            f"{len(data['teachers'])} teachers x {programs_per_teacher} programs per teacher "
            f"(settings, students counted per body) x {seeds} seeds x ({steps:,} training + "
            f"{eval_steps:,} evaluation env steps), at the measured env steps/s"
        ),
        "env_steps": total,
        "hours": total / max(steps_per_second, 1e-9) / 3600.0,
    }


def _challenge(setting) -> str:
    return setting if isinstance(setting, str) else setting.get("challenge", "default")


def train(
    config,
    updates_per_call: int,
    calls: int,
    max_seconds: float | None = None,
    progress: bool = True,
) -> dict:
    """Run the seeds; returns the trainer, final carry, per-update stats and timings. No
    call starts that would end past `max_seconds` from the start of compilation."""
    import jax
    from tqdm.auto import tqdm

    from acl.build import make_train

    trainer = make_train(config)
    start = time.perf_counter()
    carry = trainer.jit_init_seeds()(trainer.seed_keys())
    block = make_block(trainer, updates_per_call).lower(carry).compile()
    compile_seconds = time.perf_counter() - start

    per_update = trainer.schedule.steps_per_iteration
    chunks: list[dict] = []
    bar = tqdm(total=calls * updates_per_call, unit="update", disable=not progress)
    train_start = time.perf_counter()
    stopped_by_budget = False
    for call in range(calls):
        call_start = time.perf_counter()
        carry, stats = block(carry)
        stats = jax.device_get(stats)
        chunks.append(stats)
        bar.update(updates_per_call)
        episodes = stats["episodes"].sum()
        mean_return = stats["return_sum"].sum() / max(episodes, 1)
        bar.set_postfix(ret=f"{mean_return:.1f}", eps=int(episodes))
        if not progress:
            done = (call + 1) * updates_per_call
            print(
                f"update {done}/{calls * updates_per_call}: mean training return "
                f"{mean_return:.1f} over {int(episodes)} episodes",
                flush=True,
            )
        if not np.all(np.isfinite(stats["loss"])):
            raise FloatingPointError(f"non-finite loss in call {call}")
        if max_seconds is not None and call + 1 < calls:
            elapsed = time.perf_counter() - start
            if elapsed + (time.perf_counter() - call_start) > max_seconds:
                stopped_by_budget = True
                break
    bar.close()
    train_seconds = time.perf_counter() - train_start
    stats = {k: np.concatenate([c[k] for c in chunks], axis=1) for k in chunks[0]}
    updates = stats["loss"].shape[1]
    return {
        "trainer": trainer,
        "carry": carry,
        "stats": stats,
        "updates": updates,
        "env_steps_per_seed": updates * per_update,
        "compile_seconds": compile_seconds,
        "train_seconds": train_seconds,
        "steps_per_second": updates * per_update * config.num_seeds / max(train_seconds, 1e-9),
        "stopped_by_budget": stopped_by_budget,
    }


# -- checkpoint and policy -------------------------------------------------------------------


def save_checkpoint(out: Path, config, agent_state) -> None:
    """The run directory's checkpoint: config.yaml (+ provenance.json) and every seed's final
    agent state, the format `acl.run.results.RunDir` reads back."""
    import jax

    from acl.run.results import RunDir

    run_dir = RunDir(out)
    run_dir.write_config(config.to_dict(), [config.seed + i for i in range(config.num_seeds)])
    run_dir.save_agent(jax.device_get(agent_state))


def load_agent(run_dir: str | Path, seed_index: int | None = None):
    """(env, agent, agent_state) of seed `seed_index` of a run directory written by this
    script; None: the best seed (summary.json's best_seed_index)."""
    from acl.build import build_components
    from acl.config import parse_config
    from acl.run.results import RunDir

    run = RunDir(run_dir)
    config = parse_config(run.read_config_dict())
    components = build_components(config)
    if seed_index is None:
        seed_index = int(run.read_summary()["best_seed_index"])
    agent, state = run.load_agent_state(components.env, seed_index, components.agent)
    return components.env, agent, state


def load_policy(run_dir: str | Path, seed_index: int | None = None):
    """The saved deterministic policy of seed `seed_index` (None: the best seed):
    `policy(obs, key) -> action`.

    obs [obs_size] or [N, obs_size]; the action is the Gaussian mean of the saved
    params after the saved observation normalisation, clipped to the action bounds (the
    env clips too), shaped like obs's batch. `key` is unused (kept for the usual policy
    signature). Jittable. `policy.env` is the env it was trained on."""
    import jax
    import jax.numpy as jnp

    env, agent, state = load_agent(run_dir, seed_index)

    def policy(obs, key=None):
        key = jax.random.PRNGKey(0) if key is None else key  # unused by the deterministic act
        obs = jnp.asarray(obs, jnp.float32)
        batch = obs.reshape((-1,) + obs.shape[-1:])
        action, _, _ = agent.act(state, batch, agent.initial_carry(batch.shape[0]), key, True)
        action = agent.env_action(action)
        return action.reshape(obs.shape[:-1] + action.shape[-1:])

    policy.env = env
    policy.agent = agent
    return policy


# -- outputs ---------------------------------------------------------------------------------


def curve_title(num_seeds: int) -> str:
    """The learning curve's title."""
    return f"PPO on stump_tracks, task (0, 6), {num_seeds} seeds"


def plot_curves(curve: np.ndarray, out: Path, title: str, steps_per_update: int) -> None:
    """Per-seed training-return curves (NaN gaps bridged) and their mean."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from acl.core.plot_style import legend_outside, save, steps_axis

    steps = (np.arange(curve.shape[1]) + 1) * steps_per_update
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for i, seed_curve in enumerate(curve):
        ok = np.isfinite(seed_curve)
        ax.plot(steps[ok], seed_curve[ok], lw=0.8, alpha=0.6, label=f"seed {i}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # updates where no seed had an episode
        mean = np.nanmean(curve, axis=0)
    ok = np.isfinite(mean)
    ax.plot(steps[ok], mean[ok], color="black", lw=1.6, label=f"mean over {len(curve)} seeds")
    ax.set_xlabel("env steps per seed")
    steps_axis(ax.xaxis)
    ax.set_ylabel("training return (episodes ended in the update)")
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    legend_outside(fig, ax)
    fig.tight_layout()
    save(fig, out)


def parser() -> CommandParser:
    parser = CommandParser(
        "stump-tracks-ppo",
        __doc__,
        examples=(
            "--config stump_tracks_ppo_cpu --seeds 3 --total-env-steps 250000 --max-minutes 8",
        ),
    )
    parser.add_config(default=DEFAULT_CONFIG, catalogue="stump_tracks_ppo*.yaml")
    parser.add_overrides()
    parser.add_seeds()
    parser.add_argument("--total-env-steps", type=float, default=None, help="env steps per seed")
    parser.add_max_minutes(
        aliases=("--budget-minutes",),
        help="stop training (after the current call) when the next call would end past this "
        "much wall time from the start of compilation; the final evaluation comes after",
    )
    parser.add_argument(
        "--updates-per-call",
        type=int,
        default=None,
        help="updates per jitted call (default ~2.5%%)",
    )
    parser.add_argument("--final-eval-episodes", type=int, default=8, help="0 to skip")
    parser.add_out(default=DEFAULT_OUT)
    parser.add_no_progress(help="periodic prints instead of the progress bar")
    return parser


@one_line_errors  # a bad config, override or budget, before any compilation
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from acl.run.results import enable_compilation_cache, format_table, mean_se, provenance

    max_seconds = minutes_budget(args.max_minutes)
    config, per_call, calls = resolve_config(
        args.config,
        args.overrides,
        args.seeds,
        int(args.total_env_steps) if args.total_env_steps else None,
        args.updates_per_call,
    )
    import jax

    enable_compilation_cache()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    loop = config.loop
    print(
        f"{config.num_seeds} seeds x {loop.num_envs} envs x {loop.num_steps} steps per update, "
        f"{calls * per_call} updates ({loop.total_env_steps:,} env steps per seed) on "
        f"{jax.default_backend()}",
        flush=True,
    )
    run = train(config, per_call, calls, max_seconds, progress=not args.no_progress)
    trainer, stats = run["trainer"], run["stats"]
    with np.errstate(invalid="ignore", divide="ignore"):
        curve = np.where(
            stats["episodes"] > 0, stats["return_sum"] / np.maximum(stats["episodes"], 1), np.nan
        )
    learning = learning_statistics(curve, stats["episodes"])
    last = np.asarray(learning["last"], np.float64)
    best = int(np.nanargmax(last)) if np.isfinite(last).any() else 0

    agent_state = run["carry"].seed.agent_state
    eval_returns = None
    if args.final_eval_episodes > 0:
        eval_returns = final_evaluation(trainer, agent_state, args.final_eval_episodes)
    proj = projection(run["steps_per_second"])
    summary = {
        "config": str(args.config),
        "overrides": args.overrides,
        "num_seeds": config.num_seeds,
        "num_envs": loop.num_envs,
        "num_steps": loop.num_steps,
        "updates": run["updates"],
        "env_steps_per_seed": run["env_steps_per_seed"],
        "stopped_by_budget": run["stopped_by_budget"],
        "compile_seconds": run["compile_seconds"],
        "train_seconds": run["train_seconds"],
        "env_steps_per_second": run["steps_per_second"],
        "backend": jax.default_backend(),
        "learning": learning,
        "best_seed_index": best,
        "final_eval_returns": None if eval_returns is None else eval_returns.tolist(),
        "final_eval_success": None,
        "protocol_projection": proj,
        "curves": {
            "train_return": np.where(np.isfinite(curve), curve, None).tolist(),
            "episodes": stats["episodes"].tolist(),
            "entropy": stats["entropy"].tolist(),
            "approx_kl": stats["approx_kl"].tolist(),
        },
        "provenance": provenance([config.seed + i for i in range(config.num_seeds)]),
    }
    if eval_returns is not None:
        summary["final_eval_success"] = (eval_returns > trainer.env.success_threshold).tolist()
    (out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=True))
    plot_curves(
        curve,
        out / "learning_curve.png",
        curve_title(config.num_seeds),
        trainer.schedule.steps_per_iteration,
    )
    save_checkpoint(out, config, agent_state)

    rows = []
    for i in range(config.num_seeds):
        row = {
            "seed": config.seed + i,
            "first 10%": f"{learning['first'][i]:.1f}",
            "last 10%": f"{learning['last'][i]:.1f}",
            "diff": f"{learning['diff'][i]:.1f}",
            "episodes": int(stats["episodes"][i].sum()),
        }
        if eval_returns is not None:
            row["det. return"] = f"{eval_returns[i].mean():.1f}"
        rows.append(row)
    print(format_table(rows, list(rows[0])))
    verdict = "yes" if learning["improved"] else "no"
    print(
        f"last - first 10% of {run['updates']} updates: {learning['diff_mean']:.1f} ± "
        f"{learning['diff_se']:.1f} (SE over {config.num_seeds} seeds); > 2 SE: {verdict}"
    )
    if eval_returns is not None:
        mean, se = mean_se(eval_returns.mean(axis=1))
        print(f"deterministic return on (0, 6): {mean:.1f} ± {se:.1f}")
    print(
        f"compile {run['compile_seconds']:.0f} s, training {run['train_seconds']:.0f} s, "
        f"{run['steps_per_second']:,.0f} env steps/s ({jax.default_backend()})"
        + (" — stopped by the budget" if run["stopped_by_budget"] else "")
    )
    if jax.default_backend() == "gpu":
        print(f"full protocol projection: {proj['hours']:.1f} GPU hours ({proj['assumption']})")
    print(f"outputs in {out} (best seed {config.seed + best}: load_policy's default)")
    return 0


__all__: list[Any] = ["learning_statistics", "load_policy", "load_agent", "resolve_config"]

if __name__ == "__main__":
    sys.exit(main())
