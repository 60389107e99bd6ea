"""Renderers of the README's numbers, for `acl render-docs` (experiments.tools.render_docs).

    <!-- render make_run experiments/results/make_run -->
    <!-- render shootout_verdicts experiments/results/shootout/peer_cartpole ... -->

Both read their committed result files through the loaders of `acl helps-where`
(experiments.tools.helps_where), so the README and docs/results/helps_where.md compute
every mean, SE, margin and p-value the same way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

from experiments.tools import helps_where as hw


def _folder_under(results: str, parent: Path) -> str:
    """`results` (a path from the repository's root) relative to `parent`."""
    from acl.core.errors import ConfigError

    path = Path(results)
    if not path.is_relative_to(parent):
        raise ConfigError(f"{results}: expected a results folder under {parent}/")
    return path.relative_to(parent).as_posix()


def make_run_block(root: Path, results: str) -> str:
    """`make run`'s table from its committed `acl compare` output (comparison.json) and
    the runs' provenance files: per teacher the final % mastered, the share of infeasible
    tasks it handed out and its wall time; then the margin over Random, Welch's p and the
    budget and seeds."""
    from acl.core.errors import ConfigError

    comparison = hw.compare_run(_folder_under(results, hw.RESULTS))(root)
    if isinstance(comparison, hw.Missing):
        raise ConfigError(f"{results}: {comparison.why}")
    runs = json.loads((root / results / "comparison.json").read_text())
    provenances = (root / results).glob("provenance_*.json")
    platforms = sorted({json.loads(path.read_text())["platform"] for path in provenances})
    where = f", on {', '.join(platforms)}" if platforms else ""
    lines = [
        "| teacher | final % mastered (mean ± SE) | infeasible tasks handed out "
        f"| wall s (whole run, compile included{where}) |",
        "|---|---|---|---|",
    ]
    for arm in comparison.arms:
        score = f"{arm.mean:.1f} ± {arm.se:.1f}"
        if arm.teacher != comparison.baseline and comparison.significant(arm):
            score = f"**{score}**"
        infeasible = comparison.facts.get(f"{arm.teacher}_infeasible", "–")
        wall = f"{runs[arm.teacher]['wall_seconds']:.0f}"
        lines.append(f"| {hw.name(arm.teacher)} | {score} | {infeasible} | {wall} |")
    best, base = comparison.best[0], comparison.base
    combined_se = math.hypot(best.se, base.se)
    ratio = (best.mean - base.mean) / combined_se if combined_se > 0 else math.inf
    lines += [
        "",
        f"{hw.name(best.teacher)} − {hw.name(base.teacher)}: {hw.margin_cell(comparison)} "
        f"points, {ratio:.1f} times the SE of the difference; Welch's p = "
        f"{hw.p_cell(comparison)}. Budget per seed and seeds: {hw.budget_cell(comparison)}.",
    ]
    return "\n".join(lines) + "\n"


def shootout_verdicts_block(root: Path, *results: str) -> str:
    """One line: per finished shoot-out (report/report.json) its best teacher against the
    baseline under the registered decision rule, with Holm-corrected p; the others named
    as pending."""
    from acl.core.errors import ConfigError

    finished, pending = [], []
    for folder in results:
        comparison = hw.shootout(_folder_under(folder, hw.RESULTS / "shootout"))(root)
        label = f"`{Path(folder).name}`"
        if isinstance(comparison, hw.Missing):
            if comparison.why != hw.PENDING:
                raise ConfigError(f"{folder}: {comparison.why}")
            pending.append(label)
        else:
            finished.append(f"{label}: {hw.best_cell(comparison)}, p {hw.p_cell(comparison)}")
    parts = finished + ([f"still running: {', '.join(pending)}"] if pending else [])
    return "; ".join(parts) + ".\n"


README_RENDERERS: dict[str, Callable[..., str]] = {
    "make_run": make_run_block,
    "shootout_verdicts": shootout_verdicts_block,
}
"""Renderer name -> renderer(root, *arguments) -> Markdown."""
