"""Our XLand-MiniGrid ruleset generator against the reference script's histograms.

The generator is envs/xland/generator.py: histograms of goal type, rule count and
initial-tile count, and the total variation distance between each pair.

    acl xland-generator [--rulesets 100000] [--seed 0] [--tolerance 0.03]
    acl xland-generator --reference-files trivial=DIR/trivial_10k small=DIR/small_10k ...
    acl xland-generator --write-held-out

The first form draws `--rulesets` rulesets per preset from our generator (jitted, no
network), reads the reference histograms (experiments/results/xland_reference_histograms
.json), and writes experiments/results/xland_generator_comparison.json, the figure
experiments/figures/xland_generator.png and a Markdown table (printed). A distance
counts as a match when it is at most `--tolerance` and at most the 99th percentile of the
distance between two independent samples of the same sizes from the reference's own
histogram (a parametric bootstrap): what sampling alone would give.

`--reference-files NAME=FILE` reads files the reference script wrote (xminigrid's bz2
benchmark format, through `xminigrid.benchmarks.load_benchmark_from_path`: run it in a
separate virtualenv, docs/results/xland_generator.md) and writes their histograms, with
each file's generation config, into the reference JSON. A name is a preset's, or a
preset's with a suffix after "_" (e.g. `trivial_independent`), compared with that preset.

`--write-held-out` regenerates envs/xland/held_out_rulesets.npz, the committed held-out
rulesets (envs/xland/held_out.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from acl.core.errors import ConfigError
from experiments.cli import ROOT, CommandParser, one_line_errors

REFERENCE = ROOT / "experiments" / "results" / "xland_reference_histograms.json"
COMPARISON = ROOT / "experiments" / "results" / "xland_generator_comparison.json"
FIGURE = ROOT / "experiments" / "figures" / "xland_generator.png"
HELD_OUT = ROOT / "envs" / "xland" / "held_out_rulesets.npz"
HISTOGRAMS = ("goal_type", "rule_count", "tile_count")
BOOTSTRAP = 2000


def histograms(goals: np.ndarray, rules: np.ndarray, tiles: np.ndarray) -> dict:
    """Rulesets as goals [M, 5], rules [M, R, 7], tiles [M, K, 2] (any padding) -> counts:
    goal_type {goal name: count} over the 11 generated goals, rule_count [R + 1] (rules
    that are not empty), tile_count [K + 1] (tiles that are not empty)."""
    from envs.xland.rulesets import GENERATED_GOALS, GOAL_NAMES

    goal_ids = np.asarray(goals)[:, 0].astype(int)
    unknown = sorted(set(goal_ids.tolist()) - set(GENERATED_GOALS))
    if unknown:
        raise ConfigError(f"rulesets with goals the generator never draws: ids {unknown}")
    rules, tiles = np.asarray(rules), np.asarray(tiles)
    rule_counts = (rules[..., 0] != 0).sum(axis=1)
    tile_counts = np.any(tiles != 0, axis=-1).sum(axis=1)
    return {
        "rulesets": int(len(goal_ids)),
        "goal_type": {GOAL_NAMES[g]: int((goal_ids == g).sum()) for g in GENERATED_GOALS},
        "rule_count": np.bincount(rule_counts, minlength=rules.shape[1] + 1).tolist(),
        "tile_count": np.bincount(tile_counts, minlength=tiles.shape[1] + 1).tolist(),
    }


def _counts(histogram) -> np.ndarray:
    values = list(histogram.values()) if isinstance(histogram, dict) else histogram
    return np.asarray(values, np.float64)


def total_variation(a, b) -> float:
    """Half the L1 distance between two histograms' shares (padded to one length)."""
    a, b = _counts(a), _counts(b)
    size = max(len(a), len(b))
    a, b = np.pad(a, (0, size - len(a))), np.pad(b, (0, size - len(b)))
    return float(0.5 * np.abs(a / a.sum() - b / b.sum()).sum())


def noise_distance(reference, n_reference: int, n_ours: int, seed: int = 0) -> float:
    """The 99th percentile of the distance between two independent samples of n_reference
    and n_ours draws from the reference histogram's shares."""
    shares = _counts(reference) / _counts(reference).sum()
    rng = np.random.default_rng(seed)
    first = rng.multinomial(n_reference, shares, size=BOOTSTRAP)
    second = rng.multinomial(n_ours, shares, size=BOOTSTRAP)
    distances = 0.5 * np.abs(first / n_reference - second / n_ours).sum(axis=1)
    return float(np.quantile(distances, 0.99))


def our_histograms(preset_name: str, count: int, seed: int) -> dict:
    """`count` rulesets of our generator (one jitted vmap), as `histograms`."""
    import jax

    from envs.xland.generator import PRESETS, sample_ruleset

    preset = PRESETS[preset_name]
    layout = preset.layout()
    draw = jax.jit(jax.vmap(lambda k: sample_ruleset(k, preset)))
    codes = np.asarray(draw(jax.random.split(jax.random.PRNGKey(seed), count)))
    goals, rules, tiles = (np.asarray(x) for x in layout.split(codes))
    return histograms(goals, rules, tiles)


def preset_of(name: str) -> str:
    from envs.xland.generator import PRESETS

    preset = name.split("_", 1)[0]
    if preset not in PRESETS:
        raise ConfigError(
            f"reference set {name!r}: names start with a preset ({', '.join(PRESETS)})"
        )
    return preset


def read_reference_files(pairs: list[str], expect_difference: list[str]) -> dict:
    """NAME=FILE pairs -> {NAME: histograms, the file's generation config, and whether
    ours is expected to match it}."""
    from xminigrid.benchmarks import load_bz2_pickle

    sets = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not Path(path).is_file():
            raise ConfigError(f"--reference-files: {pair!r} is not NAME=FILE of a file")
        preset_of(name)
        data = load_bz2_pickle(path)
        entry = histograms(data["goals"], data["rules"], data["init_tiles"])
        config = {k: v for k, v in data.get("generation_config", {}).items() if k != "save_path"}
        expected = name not in expect_difference
        sets[name] = {
            "file": Path(path).name,
            "generation_config": config,
            "expect_match": expected,
            **entry,
        }
    return sets


def compare(reference: dict, count: int, seed: int, tolerance: float) -> dict:
    """Our histograms per preset and, per reference set, each histogram's distance."""
    ours = {}
    rows = []
    for name, ref in reference["sets"].items():
        preset = preset_of(name)
        if preset not in ours:
            ours[preset] = our_histograms(preset, count, seed)
        for histogram in HISTOGRAMS:
            distance = total_variation(ours[preset][histogram], ref[histogram])
            noise = noise_distance(ref[histogram], ref["rulesets"], count)
            rows.append(
                {
                    "reference": name,
                    "preset": preset,
                    "histogram": histogram,
                    "total_variation": distance,
                    "sampling_noise_99": noise,
                    "match": distance <= tolerance and distance <= noise,
                    "expect_match": ref.get("expect_match", True),
                }
            )
    return {"ours": ours, "rows": rows}


def markdown(rows: list[dict]) -> str:
    lines = [
        "| reference set | preset | histogram | total variation | sampling noise (99%) | match |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['reference']} | {r['preset']} | {r['histogram']} | "
            f"{r['total_variation']:.4f} | {r['sampling_noise_99']:.4f} | "
            f"{'yes' if r['match'] else 'no' if r['expect_match'] else 'no (known)'} |"
        )
    return "\n".join(lines)


def plot(reference: dict, ours: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from acl.core.plot_style import legend_outside, save

    names = list(reference["sets"])
    fig, axes = plt.subplots(len(names), 3, figsize=(13, 2.4 * len(names)), squeeze=False)
    for row, name in enumerate(names):
        ref = reference["sets"][name]
        mine = ours[preset_of(name)]
        for col, histogram in enumerate(HISTOGRAMS):
            ax = axes[row, col]
            a, b = _counts(ref[histogram]), _counts(mine[histogram])
            size = max(len(a), len(b))
            a, b = np.pad(a, (0, size - len(a))), np.pad(b, (0, size - len(b)))
            x = np.arange(size)
            ax.bar(x - 0.2, a / a.sum(), 0.4, label="reference script")
            ax.bar(x + 0.2, b / b.sum(), 0.4, label="ours")
            if histogram == "goal_type":
                ax.set_xticks(x, list(ref[histogram]), rotation=60, fontsize=6)
            else:
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_title(
                f"{name}: {histogram.replace('_', ' ')} (TV {total_variation(a, b):.3f}; "
                f"{int(a.sum()):,} vs {int(b.sum()):,} rulesets)",
                fontsize=8,
            )
            ax.tick_params(labelsize=7)
    legend_outside(fig, axes[0, 0], title="share of rulesets")
    fig.suptitle("XLand-MiniGrid rulesets: the reference script's generator and ours", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save(fig, path)


def parser() -> CommandParser:
    parser = CommandParser(
        "xland-generator",
        __doc__,
        examples=(
            "--rulesets 100000",
            "--reference-files trivial=runs/xland_ref/trivial_10k small=runs/xland_ref/small_10k",
            "--write-held-out",
        ),
    )
    parser.add_argument(
        "--rulesets", type=int, default=100_000, help="rulesets drawn per preset from ours"
    )
    parser.add_argument("--seed", type=int, default=0, help="PRNG key of our draws")
    parser.add_argument(
        "--tolerance", type=float, default=0.03, help="largest total variation that matches"
    )
    parser.add_argument(
        "--reference",
        default=str(REFERENCE),
        help="the reference histograms (JSON), read, or written by --reference-files",
    )
    parser.add_argument(
        "--reference-files",
        nargs="+",
        metavar="NAME=FILE",
        help="write the reference JSON from these reference-script outputs instead",
    )
    parser.add_argument(
        "--expect-difference",
        nargs="+",
        default=[],
        metavar="NAME",
        help="with --reference-files: sets whose difference from ours is known (reported, "
        "not failed on)",
    )
    parser.add_argument(
        "--write-held-out",
        action="store_true",
        help="regenerate envs/xland/held_out_rulesets.npz instead",
    )
    parser.add_out(
        help="folder of the comparison JSON and the figure (default: experiments/results "
        "and experiments/figures)"
    )
    return parser


@one_line_errors
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.write_held_out:
        from envs.xland.held_out import write_held_out_file

        write_held_out_file(HELD_OUT)
        print(f"wrote {HELD_OUT.relative_to(ROOT)}")
        return 0
    reference_path = Path(args.reference)
    if args.reference_files:
        sets = read_reference_files(args.reference_files, args.expect_difference)
        reference = {"made_by": REFERENCE_NOTE, "sets": sets}
        reference_path.write_text(json.dumps(reference, indent=1) + "\n")
        shown = reference_path.resolve()
        print(f"wrote {shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown}")
        return 0
    if args.rulesets < 1:
        raise ConfigError(f"--rulesets must be >= 1, got {args.rulesets}")
    if not reference_path.is_file():
        raise ConfigError(f"no reference histograms at {reference_path} (--reference-files)")
    reference = json.loads(reference_path.read_text())
    start = time.perf_counter()
    result = compare(reference, args.rulesets, args.seed, args.tolerance)
    seconds = time.perf_counter() - start
    table = markdown(result["rows"])
    print(table)
    comparison = COMPARISON if args.out is None else Path(args.out) / COMPARISON.name
    figure = FIGURE if args.out is None else Path(args.out) / FIGURE.name
    comparison.parent.mkdir(parents=True, exist_ok=True)
    settings = {"rulesets": args.rulesets, "seed": args.seed, "tolerance": args.tolerance}
    comparison.write_text(
        json.dumps({"settings": settings, "seconds": seconds, **result}, indent=1) + "\n"
    )
    plot(reference, result["ours"], figure)
    shown = [p.relative_to(ROOT) if p.is_relative_to(ROOT) else p for p in (comparison, figure)]
    print(f"wrote {shown[0]} and {shown[1]}")
    return 0 if all(r["match"] for r in result["rows"] if r["expect_match"]) else 1


REFERENCE_NOTE = (
    "Histograms of rulesets made by XLand-MiniGrid's reference generator "
    "(github.com/dunnolab/xland-minigrid, scripts/ruleset_generator.py; at commit 0d306d1, "
    "its HEAD, and for the *_independent sets at af7a541, whose uniqueness test let repeats "
    "through) with each benchmark's flags from scripts/generate_benchmarks.sh, "
    "--total_rulesets=10000 and the script's default --random_seed=42, run unmodified in a "
    "separate virtualenv (xminigrid 0.9.3, jax 0.10.2, its requirements) by a runner that "
    "computes jax.numpy.vstack with numpy (the script's final stacking of 10,000 arrays "
    "otherwise compiles an XLA concatenate for many minutes; the stacked arrays are the "
    "same); read back with `acl xland-generator --reference-files` "
    "(docs/results/xland_generator.md)."
)
