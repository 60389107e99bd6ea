"""Which teacher helps where: one table over every task space measured so far.

The table is rendered from the committed result files into docs/results/helps_where.md.

    acl helps-where             # rewrite docs/results/helps_where.md
    acl helps-where --check     # exit 1 if it is out of date
    acl helps-where --root DIR --out table.md   # read DIR/experiments/results instead

One row per space (SPACES, in order): who defined it, the budget and seeds, the metric,
the best teacher against the baseline (Random, or DR for the UED spaces), its margin as
the mean difference ± its SE, Welch's p, and what made the difference, a clause from the
space's results page. Every number is read from a result file under
experiments/results/ (comparison.json of `acl compare`, results.csv of `acl benchmark`,
results.json of `acl toy-bandit` and `acl ued-mazes`, report/report.json of
`acl shootout`) with acl.benchmark.stats and acl.run.results; nothing is typed here but
the prose. A shoot-out whose report is not committed yet is "pending" until its
report.json appears; then its row reads the registered decision rule's test group.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from experiments.cli import ROOT, CommandParser, one_line_errors, write_generated

PAGE = ROOT / "docs" / "results" / "helps_where.md"
RESULTS = Path("experiments") / "results"
"""Where the result files live, under the root (`--root`)."""
PENDING = "pending: confirmatory run not finished"
ALPHA = 0.05
"""The significance level of every comparison here (the shoot-out's: its decision rule's)."""

NAMES = {
    "random": "Random",
    "alp_gmm": "ALP-GMM",
    "covar_gmm": "Covar-GMM",
    "riac": "RIAC",
    "adr": "ADR",
    "spdl": "SPDL",
    "goal_gan": "GoalGAN",
    "setter_solver": "Setter-Solver",
    "sfl": "SFL",
    "sfl_equal_steps": "SFL at equal env steps",
    "dr": "DR",
    "plr": "PLR",
    "robust_plr": "robust PLR",
    "accel": "ACCEL",
    "paired": "PAIRED",
}


def name(teacher: str) -> str:
    """A teacher's name as the pages write it (`sfl:cpu` and unknown labels as code)."""
    return NAMES.get(teacher, f"`{teacher}`")


# -- what a row reads ---------------------------------------------------------------------


@dataclass(frozen=True)
class Arm:
    """One teacher's final scores in one comparison: mean and SE over its seeds, its
    budget per seed, and Welch's p against the baseline (NaN for the baseline)."""

    teacher: str
    mean: float
    se: float
    seeds: tuple[int, ...] | int
    """The seeds' ids where the files record them, else their number."""
    budget: float
    p: float = math.nan
    p_holm: float = math.nan


@dataclass(frozen=True)
class Comparison:
    """What one row shows of a space's committed results."""

    arms: tuple[Arm, ...]
    baseline: str
    metric: str
    digits: int
    """Decimals of the metric (and of its margin)."""
    budget_unit: str = "env steps"
    holm: int | None = None
    """The number of teachers the p-values are Holm-corrected over (None: uncorrected)."""
    helps: Mapping[str, bool] | None = None
    """Per teacher, the registered decision (a shoot-out's report), where there is one."""
    facts: Mapping[str, object] = field(default_factory=dict)
    """Values the row's clause quotes (`Space.clause` fields)."""

    @property
    def base(self) -> Arm:
        return next(a for a in self.arms if a.teacher == self.baseline)

    @property
    def best(self) -> list[Arm]:
        """The teachers with the highest mean but the baseline (several when tied)."""
        others = [a for a in self.arms if a.teacher != self.baseline]
        top = max(a.mean for a in others)
        return [a for a in others if math.isclose(a.mean, top, rel_tol=0, abs_tol=1e-9)]

    def significant(self, arm: Arm) -> bool:
        if self.helps is not None and arm.teacher in self.helps:
            return bool(self.helps[arm.teacher])
        p = arm.p_holm if self.holm is not None else arm.p
        return arm.mean > self.base.mean and math.isfinite(p) and p < ALPHA


@dataclass(frozen=True)
class Missing:
    """A row with no numbers yet: why (PENDING, or no committed result file)."""

    why: str


Loader = Callable[[Path], "Comparison | Missing"]


@dataclass(frozen=True)
class Space:
    space: str
    """The row's first cell (Markdown: the space, linked to its page where it has one)."""
    defined_by: str
    load: Loader
    clause: str
    """What made the difference, from the page's diagnosis; `{field}`s are filled from
    `Comparison.facts`."""


# -- loaders, one per kind of result file ---------------------------------------------------


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _seeds_of(*candidates: Path) -> tuple[int, ...] | None:
    """The `seeds` list of the first provenance.json (or summary.json) that exists."""
    for path in candidates:
        if path.is_file():
            seeds = _json(path).get("seeds")
            if seeds:
                return tuple(int(s) for s in seeds)
    return None


def _arms_with_p(
    baseline: str, scores: Mapping[str, Sequence[float]], seeds: Mapping, budget: Mapping
) -> tuple[Arm, ...]:
    """Arms from per-seed final scores: mean ± SE (acl.run.results.mean_se) and Welch's p
    against the baseline (acl.benchmark.stats.welch_p)."""
    from acl.benchmark.stats import welch_p
    from acl.run.results import mean_se

    base = scores[baseline]
    arms = []
    for teacher, values in scores.items():
        mean, se = mean_se(values)
        p = math.nan if teacher == baseline else welch_p(values, base)
        arms.append(Arm(teacher, mean, se, seeds[teacher], float(budget[teacher]), p))
    return tuple(arms)


def compare_run(folder: str, baseline: str = "random") -> Loader:
    """`acl compare`'s comparison.json: per teacher the final % mastered per seed, its env
    steps and the share of infeasible tasks handed out; seeds from each run's provenance."""

    def load(root: Path) -> Comparison | Missing:
        where = root / RESULTS / folder
        path = where / "comparison.json"
        if not path.is_file():
            return Missing(f"no committed result file (`{RESULTS / folder}/comparison.json`)")
        document = _json(path)
        runs = {k: v for k, v in document.items() if isinstance(v, dict)}
        scores = {k: v["final_pct_mastered_per_seed"] for k, v in runs.items()}
        seeds = {
            k: _seeds_of(where / f"provenance_{k}.json", where / k / "provenance.json")
            or len(scores[k])
            for k in runs
        }
        budget = {k: v["env_steps"] for k, v in runs.items()}
        facts = {
            f"{k}_infeasible": f"{100 * v['infeasible_share']:.0f}%"
            for k, v in runs.items()
            if v.get("infeasible_share") is not None
        }
        arms = _arms_with_p(baseline, scores, seeds, budget)
        facts.update({f"{a.teacher}_p": _p(a.p) for a in arms})
        return Comparison(arms, baseline, "final % mastered of the test set", 1, facts=facts)

    return load


def benchmark(folder: str, challenge: str = "default", expert: str = "none") -> Loader:
    """`acl benchmark`'s results.csv, one setting: acl.benchmark.stats.summary's mean, SE
    and Welch's p against Random, the seeds and env steps of the final evaluations."""

    def load(root: Path) -> Comparison | Missing:
        from acl.benchmark.stats import final_scores, load_results, rows_of, summary

        path = root / RESULTS / folder / "results.csv"
        if not path.is_file():
            return Missing(f"no committed result file (`{RESULTS / folder}/results.csv`)")
        results = load_results(path)
        table = summary(results, "random")
        table = table[(table.challenge == challenge) & (table.expert == expert)]
        final = final_scores(results)
        arms = []
        for row in table.itertuples():
            runs = rows_of(final, row.teacher, challenge, expert)
            arms.append(
                Arm(
                    row.teacher,
                    float(row.mean),
                    float(row.se),
                    tuple(int(s) for s in sorted(runs["seed"])),
                    float(runs["env_steps"].max()),
                    float(row.p_value),
                )
            )
        return Comparison(tuple(arms), "random", "final % mastered of the test set", 1)

    return load


def toy_bandit(folder: str = "toy_bandit", setting: str = "d2") -> Loader:
    """`acl toy-bandit`'s results.json, one setting: final % mastered per seed."""

    def load(root: Path) -> Comparison | Missing:
        path = root / RESULTS / folder / "results.json"
        if not path.is_file():
            return Missing(f"no committed result file (`{RESULTS / folder}/results.json`)")
        document = _json(path)
        records = [
            r for r in document["results"] if r["setting"] == setting and not r.get("options")
        ]
        seeds = tuple(document.get("provenance", {}).get("seeds") or ())
        scores = {r["teacher"]: r["final_per_seed"] for r in records}
        return Comparison(
            _arms_with_p(
                "random",
                scores,
                {t: seeds or len(v) for t, v in scores.items()},
                {t: document["protocol"]["episodes"] for t in scores},
            ),
            "random",
            "final % of cubes mastered",
            1,
            budget_unit="episodes",
        )

    return load


def ued_mazes(folder: str = "ued_mini") -> Loader:
    """`acl ued-mazes`' results.json: each seed's held-out solve rate, the mean over the
    mazes of its last evaluations; seeds from each run's provenance."""

    def load(root: Path) -> Comparison | Missing:
        where = root / RESULTS / folder
        path = where / "results.json"
        if not path.is_file():
            return Missing(f"no committed result file (`{RESULTS / folder}/results.json`)")
        records = _json(path)["results"]
        scores = {r["method"]: r["mean_all"] for r in records}
        seeds = {
            r["method"]: _seeds_of(where / r["method"] / "provenance.json") or r["seeds"]
            for r in records
        }
        budget = {r["method"]: r["env_steps"] for r in records}
        return Comparison(
            _arms_with_p("dr", scores, seeds, budget),
            "dr",
            "held-out solve rate (sampled actions), mean of the 8 mazes over the last 3 "
            "evaluations",
            2,
        )

    return load


def shootout(folder: str) -> Loader:
    """`acl shootout`'s report/report.json (acl.benchmark.shootout.write_shootout_report):
    the rows of its decision rule's test group, their Holm-corrected p and decisions."""

    def load(root: Path) -> Comparison | Missing:
        from acl.core.errors import ConfigError

        path = root / RESULTS / "shootout" / folder / "report" / "report.json"
        if not path.is_file():
            return Missing(PENDING)
        document = _json(path)
        rule = document["decision_rule"]
        group, metric = rule["test_group"], rule["metric"]
        rows = document["groups"].get(group)
        if not rows:
            raise ConfigError(
                f"{path}: no rows for the decision rule's test group {group!r} "
                f"(groups: {', '.join(document['groups'])})"
            )
        baseline = rule["baseline"]

        def number(value) -> float:
            return math.nan if value is None else float(value)

        arms = tuple(
            Arm(
                row["teacher"],
                number(row[metric]),
                number(row.get(f"{metric}_se")),
                int(row["seeds"]),
                number(row.get("train_env_steps")),
                number(row.get("p")),
                number(row.get("p_holm")),
            )
            for row in rows
        )
        shown = "final % mastered" if metric == "pct_mastered" else f"final `{metric}`"
        helps = document.get("decisions") or {}
        return Comparison(
            arms,
            baseline,
            f"{shown}, test group `{group}`",
            1 if metric == "pct_mastered" else 2,  # a percentage, or a rate in [0, 1]
            holm=len(arms) - 1,
            helps=helps,
            facts={
                "helping": ", ".join(name(t) for t, v in helps.items() if v) or "none",
            },
        )

    return load


# -- the rows -------------------------------------------------------------------------------

SPACES = (
    Space(
        "[`point_reach`](point_reach.md#confirmatory-results), `make run` (unfeasible challenge)",
        "ours (after TeachMyAgent's Stump Tracks)",
        compare_run("make_run"),
        "Random hands out {random_infeasible} infeasible goals, each a full 17-step episode; "
        "ALP-GMM's mixture stays on reachable ones ({alp_gmm_infeasible} infeasible)",
    ),
    Space(
        "[`point_reach`](point_reach.md#results-seeds-200215), SFL addendum (unfeasible challenge)",
        "ours (after TeachMyAgent's Stump Tracks)",
        compare_run("point_reach_sfl"),
        "ALP-GMM as above ({alp_gmm_infeasible} infeasible); SFL also beats Random "
        "(p {sfl_p}) while handing out as many infeasible goals ({sfl_infeasible}): its "
        "gain is the few learnable goals it replays",
    ),
    Space(
        "[`peer_cartpole`](peer_spaces.md#cartpole): CartPole's UED space",
        "JaxUED (`gymnax/cartpole.py`)",
        shootout("peer_cartpole"),
        "helping: {helping}. Every test task is feasible (the scripted controller solves "
        "all); PLR and robust PLR do worse than Random: they replay long, heavy poles, "
        "while JaxUED's log grid is mostly short, light ones; ALP-GMM and Covar-GMM never "
        "fitted (their default fits every 150 updates, the run has 64)",
    ),
    Space(
        "[`peer_acrobot`](peer_spaces.md#acrobot): Acrobot's UED space",
        "JaxUED (`gymnax/acrobot.py`)",
        shootout("peer_acrobot"),
        "helping: {helping}. Uniform draws are mostly long, heavy links that nobody "
        "solves, and 3 of Random's 16 students learn nothing; PLR and robust PLR replay "
        "short, light links, where JaxUED's log grid lies, and robust PLR learns only on "
        "them; ALP-GMM and Covar-GMM never fitted (64 updates, default fit every 150)",
    ),
    Space(
        "[`peer_pendulum`](peer_spaces.md#pendulum): Pendulum's UED space",
        "JaxUED (`gymnax/pendulum.py`)",
        shootout("peer_pendulum"),
        "helping: {helping}. At 1/55 of JaxUED's budget 14 of Random's 16 students "
        "master at most 2 of JaxUED's 101 levels, where a scripted controller solves "
        "71%: there is little progress or regret to follow; 5 of RIAC's 16 students take "
        "off on short, light pendulums (no difference after Holm); ALP-GMM and "
        "Covar-GMM never fitted",
    ),
    Space(
        "[quick suite](teachmyagent_eight.md#results-confirmatory) on "
        "`point_reach`, eight teachers, `default` challenge",
        "TeachMyAgent's protocol, on our space",
        benchmark("benchmark_quick"),
        "sized for Random under the unfeasible challenge, the budget lets Random and the "
        "learning-progress teachers master the whole default space: only their speed "
        "differs (the page's mean over evaluations)",
    ),
    Space(
        "[quick suite on CartPole](benchmark_quick_cartpole.md) (superseded), `default` challenge",
        "TeachMyAgent's protocol, on our CartPole space",
        benchmark("benchmark_quick_cartpole"),
        "an infeasible CartPole task ends after about 2 steps, so a teacher has almost "
        "nothing to save; no difference from Random reaches p < 0.05 in any setting",
    ),
    Space(
        "[toy bandit](toy_bandit.md), d = 2",
        "teachDeepRL",
        toy_bandit(),
        "a cube unlocks only beside a mastered one, so uniform draws rarely land where "
        "competence can grow; the learning-progress teachers sample there",
    ),
    Space(
        "[mini mazes](ued_mini.md#confirmatory-results-seeds-100107-plr-and-paired-100103), "
        "9 × 9, 12 walls",
        "dcd's and JaxUED's maze, scaled down by us",
        ued_mazes(),
        "every teacher's training levels are easy (12 random walls leave short paths), so "
        "replay, regret and learnability find nothing hard and learnable to prioritise",
    ),
    Space(
        "[`xland`](peer_spaces.md#xland-minigrid): XLand-MiniGrid rulesets (`small`)",
        "XLand-MiniGrid",
        shootout("xland"),
        "helping: {helping}. At 786k env steps every teacher's students learn the agent's "
        "own goals (about a third solved) and not the tile goals (0-8%), and 25% of the "
        "held-out rulesets are solved by no student; PLR and robust PLR replay "
        "three-rule, agent-goal rulesets without changing what is learnt",
    ),
)


# -- rendering ------------------------------------------------------------------------------


def _p(p: float) -> str:
    if not math.isfinite(p):
        return "n/a"
    if p >= 1e-3:
        return f"{p:.2g}"
    mantissa, exponent = f"{p:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _number(value: float, digits: int) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:,.{digits}f}"


def _mean_se(arm: Arm, digits: int) -> str:
    if not math.isfinite(arm.se):
        return _number(arm.mean, digits)
    return f"{_number(arm.mean, digits)} ± {_number(arm.se, digits)}"


def _seed_text(seeds: tuple[int, ...] | int) -> str:
    """ "16 seeds, 100–115" (or "5 seeds" where only their number is recorded)."""
    if isinstance(seeds, int):
        return f"{seeds} seeds"
    run = list(seeds) == list(range(seeds[0], seeds[0] + len(seeds)))
    ids = f"{seeds[0]}–{seeds[-1]}" if run else ", ".join(map(str, seeds))
    return f"{len(seeds)} seeds, {ids}"


def _majority(values: Mapping[str, str]) -> str:
    """The value most teachers share, then the others': "X (PLR, PAIRED: Y)"."""
    common = Counter(values.values()).most_common(1)[0][0]
    others: dict[str, list[str]] = {}
    for teacher, value in values.items():
        if value != common:
            others.setdefault(value, []).append(name(teacher))
    if not others:
        return common
    rest = "; ".join(f"{', '.join(ts)}: {v}" for v, ts in others.items())
    return f"{common} ({rest})"


def budget_cell(comparison: Comparison) -> str:
    steps = _majority(
        {
            a.teacher: _number(a.budget, 0) if math.isfinite(a.budget) else "n/a"
            for a in comparison.arms
        }
    )
    seeds = _majority({a.teacher: _seed_text(a.seeds) for a in comparison.arms})
    return f"{steps} {comparison.budget_unit}; {seeds}"


def best_cell(comparison: Comparison) -> str:
    best, base, digits = comparison.best, comparison.base, comparison.digits
    names = ", ".join(name(a.teacher) for a in best)
    scores = f"{_mean_se(best[0], digits)} vs {name(base.teacher)} {_mean_se(base, digits)}"
    winners = [a for a in best if comparison.significant(a)]
    if winners:
        return f"**{', '.join(name(a.teacher) for a in winners)}**: {scores}"
    if len(best) > 1:
        names = f"{', '.join(name(a.teacher) for a in best[:-1])} and {name(best[-1].teacher)}"
        names += ", tied"
    return f"none beats {name(base.teacher)} (best: {names}, {scores})"


def margin_cell(comparison: Comparison) -> str:
    best, base, digits = comparison.best[0], comparison.base, comparison.digits
    difference = best.mean - base.mean
    se = math.sqrt(best.se**2 + base.se**2)
    sign = "+" if difference >= 0 else "−"
    return f"{sign}{_number(abs(difference), digits)} ± {_number(se, digits)}"


def p_cell(comparison: Comparison) -> str:
    best, base = comparison.best[0], comparison.base
    if comparison.holm is not None:
        return (
            f"{_p(best.p_holm)} (Holm-corrected over {comparison.holm} "
            f"teacher{'' if comparison.holm == 1 else 's'}; "
            f"uncorrected {_p(best.p)})"
        )
    if not math.isfinite(best.p) and best.se == 0 and base.se == 0:
        return "n/a (no spread over seeds in either)"
    return _p(best.p)


def row(space: Space, root: Path) -> str:
    result = space.load(root)
    if isinstance(result, Missing):
        # The clause is prose about numbers: it stays only where it quotes none.
        clause = "pending" if result.why == PENDING else space.clause
        clause = "–" if "{" in clause else clause
        cells = [space.space, space.defined_by, result.why, "–", "–", "–", "–", clause]
    else:
        cells = [
            space.space,
            space.defined_by,
            budget_cell(result),
            result.metric,
            best_cell(result),
            margin_cell(result),
            p_cell(result),
            space.clause.format(**result.facts),
        ]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


HEADER = """# Which teacher helps where

One row per task space measured so far, generated by `acl helps-where` from the
committed result files under `experiments/results/` (`experiments/tools/helps_where.py`);
do not edit it by hand: `acl helps-where --check` fails while it is out of date. Each
space's page has the protocol, the per-seed numbers and the diagnosis.

- **space**: the task space and the comparison (its results page is linked).
- **defined by**: who defined the space, or the protocol run on it.
- **budget**: training env steps (or episodes) per seed, and the seeds, of every teacher
  (exceptions named).
- **metric**: the pre-registered score of a run, the same for every teacher of the row.
- **best teacher**: the teacher with the highest mean but the baseline (Random, or DR on
  the UED spaces), mean ± SE over seeds beside the baseline's. It is in bold when it beats
  the baseline (higher mean, p < 0.05; for a shoot-out, its registered decision rule);
  otherwise the cell says "none beats" the baseline.
- **margin**: the best teacher's mean minus the baseline's, ± the SE of that difference
  (√(SE₁² + SE₂²)), in the metric's units.
- **Welch's p**: Welch's t-test of the best teacher against the baseline over seeds;
  uncorrected, except where it says Holm-corrected (the shoot-outs, over the teachers
  they compare).
- **what made the difference**: one clause from the page's diagnosis.

A row that says "pending" is a shoot-out whose confirmatory report is not committed yet
(`experiments/results/shootout/NAME/report/report.json`); it fills in when it is.

A claim that a teacher helps holds only beside a test on a space someone else defined:
`point_reach` was built by us so that teachers matter, so its rows show that they can,
not that they do; the rows defined by JaxUED, teachDeepRL, dcd and XLand-MiniGrid are the
test.

"""

COLUMNS = (
    "space",
    "defined by",
    "budget per seed; seeds",
    "metric",
    "best teacher",
    "margin over the baseline",
    "Welch's p",
    "what made the difference",
)


def render(root: Path = ROOT, spaces: Sequence[Space] = SPACES) -> str:
    """The page, from the result files under `root`/experiments/results."""
    root = Path(root)
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += [row(space, root) for space in spaces]
    return HEADER + "\n".join(lines) + "\n"


def parser() -> CommandParser:
    parser = CommandParser(
        "helps-where", __doc__, examples=("", "--check", "--root . --out helps_where.md")
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    parser.add_argument(
        "--root",
        default=str(ROOT),
        help="read the result files under ROOT/experiments/results (default: this repository)",
    )
    parser.add_out(default=str(PAGE), help="the page to write (or check)")
    return parser


@one_line_errors  # a malformed result file
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    text = render(Path(args.root))
    stale = write_generated(Path(args.out), text, "acl helps-where", args.check)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
