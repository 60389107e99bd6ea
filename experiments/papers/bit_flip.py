"""HER's bit flipping: greedy success rate vs env steps, DQN and DQN+HER.

    acl bit-flip [--bits 10 15 20 30 40 50] [--seeds 3]
        [--budget STEPS] [--variants her dqn] [--no-early-stop]
        [--config experiments/configs/bit_flip_her.yaml] [--set KEY=VALUE ...]
        [--out runs/bit_flip] [--no-progress]

For each n, both variants run through the curriculum loop (`acl.loop.train`, Random teacher:
uniform goals) from the base config (and its `--set` overrides), with num_bits = n and
episodes of n steps; one loop iteration is one HER cycle (16 episodes, then 40 gradient
steps). The seeds run as one vmap (`jit(vmap(run_chunk))`, chunk by chunk for the
progress bar and wall times; compile time is measured apart). Every `eval_every` env
steps the greedy policy plays the 100 fixed evaluation goals (random starts from the fixed
eval key); success = the goal reached at some step (envs/bit_flip.py).

The table gives, for each n: the env steps per seed and the wall time (all seeds
together, compile excluded) at which DQN+HER's seed-mean success first reaches 90%, and
plain DQN's best seed-mean success within the same budget. By default a DQN+HER run
stops at the evaluation where it reaches 90% (`--no-early-stop` runs it to the end);
plain DQN always uses the whole budget. Writes results.json, table.md and curves.png
to --out.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from experiments.cli import CommandParser, one_line_errors

DEFAULT_BITS = (10, 15, 20, 30, 40, 50)
# Env steps per seed. Reference points (published figures): HER-DQN converged in ~150k env
# steps at 15 bits and ~1.5M at 20 bits; the HER paper's own runs are far longer.
DEFAULT_BUDGET = {10: 48_000, 15: 192_000, 20: 1_500_000, 30: 3_000_000, 40: 5_000_000}
LEVEL = 90.0


def budget_for(n: int, override: int | None) -> int:
    if override is not None:
        return override
    return DEFAULT_BUDGET.get(n, 5_000_000)


def make_config(base: dict, n: int, variant: str, budget: int, seeds: int):
    """The base config for n bits and variant 'her' or 'dqn'; budget rounded to chunks."""
    from acl.config import parse_config

    data = json.loads(json.dumps(base))  # deep copy of plain YAML data
    num_envs = int(data.get("loop", {}).get("num_envs", 16))
    cycle = num_envs * n
    # ~30 evaluations per run, each after a whole number of cycles
    eval_every = cycle * max(1, budget // (cycle * 30))
    # 'her' keeps the base config's relabelling strategy (future unless it names another)
    her_strategy = data["agent"].get("her_strategy", "future")
    if her_strategy == "none":
        her_strategy = "future"
    data["name"] = f"bit_flip_{n}_{variant}"
    data["num_seeds"] = seeds
    data["env"] = {**data["env"], "num_bits": n}
    data["agent"] = {
        **data["agent"],
        "her_strategy": her_strategy if variant == "her" else "none",
        # the whole run fits (HER paper: 10^6 transitions), so nothing is overwritten
        "buffer_capacity": int(min(1_000_000 // n, budget // n + num_envs)),
    }
    data["loop"] = {
        **data["loop"],
        "num_steps": n,
        "eval_every": eval_every,
        "total_env_steps": eval_every * max(1, budget // eval_every),
    }
    return parse_config(data)


def run_one(config, progress: bool, early_stop: bool) -> dict:
    """Run the vmapped seeds chunk by chunk; returns curves and timings."""
    import jax
    from tqdm import tqdm

    from acl.build import make_train

    trainer = make_train(config)
    keys = trainer.seed_keys()
    start = time.perf_counter()
    init = trainer.jit_init_seeds().lower(keys).compile()
    carry = init(keys)
    chunk = trainer.jit_run_chunk_seeds().lower(carry).compile()
    compile_seconds = time.perf_counter() - start
    steps, success, walls = [], [], []
    elapsed = 0.0
    bar = tqdm(
        range(trainer.schedule.num_chunks), desc=config.name, disable=not progress, leave=False
    )
    for _ in bar:
        t0 = time.perf_counter()
        carry, metrics = chunk(carry)
        jax.block_until_ready(metrics)
        elapsed += time.perf_counter() - t0
        pct = np.asarray(metrics.eval_pct_mastered, np.float64)  # [S]
        if not np.isfinite(np.asarray(metrics.loss)).all():
            raise FloatingPointError(f"{config.name}: non-finite loss")
        steps.append(int(np.asarray(metrics.env_steps)[0]))
        success.append(pct.tolist())
        walls.append(elapsed)
        bar.set_postfix(success=f"{pct.mean():.0f}%")
        if early_stop and pct.mean() >= LEVEL:
            break
    return {
        "name": config.name,
        "env_steps": steps,
        "success": success,
        "wall_seconds": walls,
        "compile_seconds": compile_seconds,
        "budget": config.loop.total_env_steps,
        "seeds": config.num_seeds,
    }


def first_reach(run: dict, level: float) -> tuple[int | None, float | None]:
    """(env steps, wall seconds) at the first evaluation whose seed-mean >= level."""
    for steps, pct, wall in zip(run["env_steps"], run["success"], run["wall_seconds"]):
        if np.mean(pct) >= level:
            return steps, wall
    return None, None


def table_rows(results: dict) -> list[dict]:
    rows = []
    for n, runs in results.items():
        her, dqn = runs.get("her"), runs.get("dqn")
        row = {"bits": n}
        if her:
            steps, wall = first_reach(her, LEVEL)
            best = max(np.mean(p) for p in her["success"])
            row["HER steps to 90%"] = f"{steps:,}" if steps else f"not in {her['budget']:,}"
            row["HER wall s to 90%"] = f"{wall:.1f}" if wall is not None else "-"
            row["HER best %"] = f"{best:.1f}"
            row["HER seeds >= 90% at end"] = (
                f"{sum(p >= LEVEL for p in her['success'][-1])}/{her['seeds']}"
            )
        if dqn:
            best = max(np.mean(p) for p in dqn["success"])
            row["DQN best % (same budget)"] = f"{best:.1f}"
        budget = (dqn or her)["budget"]
        row["budget/seed"] = f"{budget:,}"
        row["compile s (HER, DQN)"] = ", ".join(
            f"{r['compile_seconds']:.0f}" for r in (her, dqn) if r
        )
        rows.append(row)
    return rows


def plot(results: dict, path: Path) -> None:
    """Greedy success against env steps per bit count, DQN+HER and DQN, mean ± SE over
    seeds, every panel on the same axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from acl.core.plot_style import BAND_ALPHA, legend_outside, save, se_band_label, steps_axis
    from acl.run.results import mean_se

    ns = list(results)
    fig, axes = plt.subplots(1, len(ns), figsize=(3.6 * len(ns), 3.2), squeeze=False, sharey=True)
    seeds = []
    for ax, n in zip(axes[0], ns):
        for variant, style, color in (("her", "-", "C0"), ("dqn", "--", "C1")):
            run = results[n].get(variant)
            if not run:
                continue
            x = np.asarray(run["env_steps"])
            y = np.asarray(run["success"])  # [chunks, S]
            mean, se = mean_se(y, axis=1)
            label = "DQN+HER" if variant == "her" else "DQN"
            ax.plot(x, mean, style, color=color, label=label)
            ax.fill_between(x, mean - se, mean + se, color=color, alpha=BAND_ALPHA, lw=0)
            seeds.append(y.shape[1])
        ax.axhline(LEVEL, color="grey", lw=0.5, label=f"{LEVEL:g}% (the stop)")
        ax.set_title(f"{n} bits", fontsize=9)
        ax.set_xlabel("env steps per seed")
        steps_axis(ax.xaxis)
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("greedy success % (100 goals)")
    fig.suptitle("bit_flip, uniform goals (Random teacher)", fontsize=10)
    legend_outside(fig, list(axes[0]), band=se_band_label(seeds))
    fig.tight_layout()
    save(fig, path)


def parser() -> CommandParser:
    parser = CommandParser(
        "bit-flip", __doc__, examples=("--bits 20 30 --budget 400000", "--bits 10 --seeds 1")
    )
    parser.add_argument(
        "--bits", type=int, nargs="+", default=list(DEFAULT_BITS), help="bit counts n"
    )
    parser.add_seeds(default=3)
    parser.add_argument(
        "--budget", type=int, default=None, help="env steps per seed (default: per n)"
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        default=["her", "dqn"],
        choices=["her", "dqn"],
        help="DQN+HER and plain DQN (default: both)",
    )
    parser.add_argument(
        "--no-early-stop", action="store_true", help="run DQN+HER past 90%% to the budget"
    )
    parser.add_config(
        default="experiments/configs/bit_flip_her.yaml",
        catalogue="bit_flip_*.yaml",
        help="the base config (num_bits and the episode length are set per n)",
    )
    parser.add_overrides()
    parser.add_out(default="runs/bit_flip")
    parser.add_no_progress()
    return parser


@one_line_errors  # a bad count, config or override, before any compilation
def main(argv=None) -> int:
    args = parser().parse_args(argv)

    from acl.config import apply_overrides, load_yaml
    from acl.core.errors import ConfigError
    from acl.run.results import enable_compilation_cache, format_table, provenance

    base = apply_overrides(load_yaml(args.config), args.overrides)
    if args.seeds <= 0:
        raise ConfigError(f"--seeds must be a positive integer, got {args.seeds}")
    for n in args.bits:
        if n <= 0:
            raise ConfigError(f"--bits must be positive integers, got {n}")
    configs = {
        n: {
            v: make_config(base, n, v, budget_for(n, args.budget), args.seeds)
            for v in args.variants
        }
        for n in args.bits
    }
    enable_compilation_cache()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    for n, variants in configs.items():
        results[n] = {}
        for variant, config in variants.items():
            early = variant == "her" and not args.no_early_stop
            results[n][variant] = run_one(config, not args.no_progress, early)
            her_run = results[n][variant]
            print(
                f"{config.name}: final {np.mean(her_run['success'][-1]):.1f}% at "
                f"{her_run['env_steps'][-1]:,} steps, {her_run['wall_seconds'][-1]:.1f} s "
                f"(+{her_run['compile_seconds']:.0f} s compile)",
                flush=True,
            )
        rows = table_rows(results)
        (out / "results.json").write_text(
            json.dumps(
                {
                    "level": LEVEL,
                    "base_config": base,
                    "runs": {str(k): v for k, v in results.items()},
                    "table": rows,
                    "provenance": provenance([base.get("seed", 0) + i for i in range(args.seeds)]),
                },
                indent=2,
            )
        )
    rows = table_rows(results)
    text = format_table(rows, list(rows[0]))
    print(text)
    (out / "table.md").write_text(text + "\n")
    plot(results, out / "curves.png")
    print(f"written: {out}/results.json, table.md, curves.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
