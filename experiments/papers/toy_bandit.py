"""teachDeepRL's toy bandit: Random, RIAC, ALP-GMM and Covar-GMM, seeds vmapped.

The continuous bandit student, 16 vmapped seeds per teacher by default.

    acl toy-bandit [--settings d2 d2_distractors3 d3 d4]
        [--teachers random riac alp_gmm covar_gmm] [--seeds 16] [--episodes 20000]
        [--score-every 1000] [--out runs/toy_bandit] [--set riac.min_split_score=0.05 ...]
        [--no-progress]

Writes results.json, table.md and curves.png to --out and prints the table: final
% mastered (mean ± SE over seeds), the episodes needed to reach 25% and 50%, and
seconds per seed (the seeds run together as one vmap; compile time is reported apart).
The d = 2 rows sit beside the reference figures measured with teachDeepRL's own code.
`--set TEACHER.OPTION=VALUE` changes one teacher's option (an ablation); the table names
the changed options beside the teacher. A line per (setting, teacher) reports the
progress (`--no-progress`: none).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from acl.benchmark.toy_bandit import run_toy_bandit
from acl.config import apply_overrides
from acl.core.errors import ConfigError
from acl.run.results import mean_se, provenance
from acl.teachers import TEACHERS
from envs.toy_bandit import ToyBandit
from experiments.cli import CommandParser, one_line_errors

SETTINGS = {
    "d2": {"num_dims": 2, "num_distractors": 0},
    "d2_distractors3": {"num_dims": 2, "num_distractors": 3},
    "d3": {"num_dims": 3, "num_distractors": 0},
    "d4": {"num_dims": 4, "num_distractors": 0},
}
TEACHER_NAMES = ("random", "riac", "alp_gmm", "covar_gmm")
# teachDeepRL's own code, d = 2, 20k episodes, 3 seeds, 2-core CPU (published figures).
REFERENCE_D2 = {
    "random": {"final": 4.0, "per_seed": [4, 4, 4], "seconds_per_seed": "2.6"},
    "riac": {"final": 52.0, "per_seed": [52, 54, 50], "seconds_per_seed": "28-40"},
    "alp_gmm": {"final": 34.3, "per_seed": [38, 30, 35], "seconds_per_seed": "22-93"},
    "covar_gmm": {"final": 66.3, "per_seed": [67, 68, 64], "seconds_per_seed": "~20"},
}


def make_teacher(name: str, bandit: ToyBandit, **options):
    """The teacher with teachDeepRL's preset where it has presets, then `options`."""
    factory = TEACHERS.get(name, "teacher")
    keys = getattr(factory, "config_keys", ())
    kwargs = {"preset": "teachdeeprl"} if "preset" in keys else {}
    return factory(task_space=bandit.task_space, **kwargs, **options)


def teacher_options(overrides: list[str], teachers: list[str]) -> dict[str, dict]:
    """`--set riac.min_split_score=0.05` -> {"riac": {"min_split_score": 0.05}}."""
    options = apply_overrides({}, overrides)
    for name, values in options.items():
        if name not in teachers or not isinstance(values, dict) or not values:
            raise ConfigError(
                f"--set: expected TEACHER.OPTION=VALUE with TEACHER in --teachers "
                f"({', '.join(teachers)}), got '{name}'"
            )
    return options


def teacher_label(name: str, options: dict) -> str:
    """The table and legend name: riac, or riac (min_split_score=0.05) with options."""
    changed = ", ".join(f"{k}={v}" for k, v in options.items())
    return f"{name} ({changed})" if changed else name


def episodes_to_reach(scores: np.ndarray, level: float, score_every: int) -> list[int | None]:
    """Per seed: episodes until % mastered first reaches `level`, None if never."""
    out = []
    for seed_scores in scores:
        hit = np.nonzero(seed_scores >= level)[0]
        out.append(int((hit[0] + 1) * score_every) if hit.size else None)
    return out


def summarise_reach(values: list[int | None]) -> str:
    reached = [v for v in values if v is not None]
    if not reached:
        return f"never (0/{len(values)})"
    return f"{np.mean(reached):,.0f} ({len(reached)}/{len(values)})"


def setting_title(setting: str) -> str:
    """ "d = 2 + 3 distractors": a setting's bandit, as a panel's title."""
    options = SETTINGS[setting]
    distractors = options["num_distractors"]
    return f"d = {options['num_dims']}" + (f" + {distractors} distractors" if distractors else "")


def plot(results: list[dict], out: Path, score_every: int) -> None:
    """% mastered against episodes, mean ± SE over seeds: one panel per setting in the
    results, every panel on the same axes, one line per teacher."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from acl.core.plot_style import BAND_ALPHA, legend_outside, save, se_band_label, steps_axis

    settings = sorted({r["setting"] for r in results}, key=list(SETTINGS).index)
    fig, axes = plt.subplots(
        1, len(settings), figsize=(4.2 * len(settings), 3.4), squeeze=False, sharey=True
    )
    labels = list(dict.fromkeys(teacher_label(r["teacher"], r["options"]) for r in results))
    colors = {label: f"C{i}" for i, label in enumerate(labels)}
    for ax, setting in zip(axes[0], settings):
        for r in (r for r in results if r["setting"] == setting):
            scores = np.asarray(r["scores"])
            x = (np.arange(scores.shape[1]) + 1) * score_every
            mean, se = mean_se(scores, axis=0)
            label = teacher_label(r["teacher"], r["options"])
            ax.plot(x, mean, label=label, color=colors[label])
            ax.fill_between(x, mean - se, mean + se, color=colors[label], alpha=BAND_ALPHA, lw=0)
        ax.set_title(setting_title(setting), fontsize=9)
        ax.set_xlabel("episodes")
        steps_axis(ax.xaxis)
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("% of cubes mastered")
    fig.suptitle("toy bandit (teachDeepRL's protocol): % mastered per setting", fontsize=10)
    seeds = [len(r["scores"]) for r in results]
    legend_outside(fig, list(axes[0]), band=se_band_label(seeds), title="teacher")
    fig.tight_layout()
    save(fig, out)


def parser() -> CommandParser:
    parser = CommandParser(
        "toy-bandit",
        __doc__,
        examples=(
            "--settings d2 --teachers random alp_gmm --seeds 4",
            "--set riac.min_split_score=0.05",
        ),
    )
    parser.add_argument(
        "--settings",
        nargs="+",
        default=list(SETTINGS),
        choices=list(SETTINGS),
        help="bandit settings (default: all)",
    )
    parser.add_argument(
        "--teachers", nargs="+", default=list(TEACHER_NAMES), help="registered teachers"
    )
    parser.add_seeds(default=16, help="vmapped seeds per teacher")
    parser.add_argument("--episodes", type=int, default=20_000, help="episodes per seed")
    parser.add_argument(
        "--score-every", type=int, default=1_000, help="episodes between two scores"
    )
    parser.add_out(default="runs/toy_bandit")
    parser.add_overrides(
        metavar="TEACHER.OPTION=VALUE", help="change one teacher's option (an ablation)"
    )
    parser.add_no_progress(help="no line per (setting, teacher) run")
    return parser


@one_line_errors  # an unknown teacher, option or value, before any compilation
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    for name in args.teachers:
        TEACHERS.check(name, "--teachers")
    options = teacher_options(args.overrides, args.teachers)
    # Bad option names and values fail here, before any compilation.
    for name, values in options.items():
        make_teacher(name, ToyBandit(**SETTINGS[args.settings[0]]), **values)

    results, rows = [], []
    for setting in args.settings:
        bandit = ToyBandit(**SETTINGS[setting])
        for name in args.teachers:
            teacher = make_teacher(name, bandit, **options.get(name, {}))
            result = run_toy_bandit(teacher, bandit, args.episodes, args.score_every, args.seeds)
            final = result.scores[:, -1]
            mean, se = mean_se(final)
            reach25 = episodes_to_reach(result.scores, 25.0, args.score_every)
            reach50 = episodes_to_reach(result.scores, 50.0, args.score_every)
            record = {
                "setting": setting,
                "teacher": name,
                "options": options.get(name, {}),
                "seeds": args.seeds,
                "final_mean": mean,
                "final_se": se,
                "final_per_seed": final.tolist(),
                "episodes_to_25": reach25,
                "episodes_to_50": reach50,
                "compile_seconds": result.compile_seconds,
                "run_seconds_all_seeds": result.run_seconds,
                "seconds_per_seed": result.run_seconds / args.seeds,
                "scores": result.scores.tolist(),
            }
            results.append(record)
            # The reference figures are for the default options only.
            ref = REFERENCE_D2.get(name) if setting == "d2" and name not in options else None
            rows.append(
                {
                    "setting": setting,
                    "teacher": teacher_label(name, options.get(name, {})),
                    "final % mastered": f"{mean:.1f} ± {se:.1f}",
                    "reference (teachDeepRL)": f"{ref['final']:.1f}" if ref else "",
                    "episodes to 25%": summarise_reach(reach25),
                    "episodes to 50%": summarise_reach(reach50),
                    "s/seed (ours)": f"{record['seconds_per_seed']:.3f}",
                    "s/seed (reference)": ref["seconds_per_seed"] if ref else "",
                    "compile s": f"{result.compile_seconds:.1f}",
                }
            )
            if not args.no_progress:
                print(
                    f"{setting:16s} {name:10s} {mean:5.1f} ± {se:4.1f}  "
                    f"compile {result.compile_seconds:.1f}s run {result.run_seconds:.2f}s",
                    flush=True,
                )

    header = list(rows[0])
    table = "\n".join(
        ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        + ["| " + " | ".join(str(r[h]) for h in header) + " |" for r in rows]
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(table + "\n")
    (out / "results.json").write_text(
        json.dumps(
            {
                "protocol": {
                    "episodes": args.episodes,
                    "score_every": args.score_every,
                    "seeds": args.seeds,
                    "cubes_per_dim": 10,
                },
                "reference_d2": REFERENCE_D2,
                "provenance": provenance(list(range(args.seeds))),
                "results": results,
            },
            indent=2,
        )
    )
    plot(results, out / "curves.png", args.score_every)
    print()
    print(table)
    print(f"\nwritten: {out / 'table.md'}, {out / 'results.json'}, {out / 'curves.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
