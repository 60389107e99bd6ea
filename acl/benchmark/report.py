"""The benchmark report: the files `write_report` makes of a tidy results table, from the
statistics of acl.benchmark.stats, the tables of acl.benchmark.tables and the figures of
acl.benchmark.figures. `acl report RESULTS_DIR --out DIR` (experiments/tools/report.py)
prints the table and writes them; `acl benchmark` writes them when its suite is done.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from acl.benchmark.figures import plot_curves, plot_iqm, plot_profiles, plot_radar, suite_title
from acl.benchmark.stats import (
    ALPHA,
    as_metric,
    iqm_table,
    load_provenance,
    load_results,
    performance_profiles,
    ranks,
    risk_summaries,
    summary,
)
from acl.benchmark.tables import (
    findings_markdown,
    latex_table,
    markdown_table,
    ranks_markdown,
    risk_markdown,
    teachmyagent_findings,
)

REPORT_FILES = (
    "summary.md",
    "summary.tex",
    "summary.json",
    "iqm.png",
    "profiles.png",
    "radar.png",
    "curves.png",
)


def jsonable(value: Any) -> Any:
    """Plain JSON values: numpy scalars unwrapped, NaN/inf as null (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_report(
    results: pd.DataFrame | str | Path,
    out_dir: str | Path,
    baseline: str = "random",
    reps: int = 2000,
    seed: int = 0,
    metric: str = "final",
) -> dict[str, Path]:
    """Write the report files (REPORT_FILES) into out_dir; returns {file name: path}.

    `results` is a results DataFrame (possibly a `select` slice) or a results directory.
    summary.md / summary.tex: the mean ± SE table; summary.json: the long summary table, the
    IQM CIs (with the seeds and settings they use) and provenance.json when present;
    iqm.png, profiles.png, radar.png, curves.png: the figures. `reps` bootstrap resamples with
    numpy seed `seed` keep the CIs reproducible. `metric` ("final" or "mean", `as_metric`)
    scores every table, statistic and figure but the learning curves.
    """
    from acl.core.plot_style import save

    provenance = None
    if not isinstance(results, pd.DataFrame):
        provenance = load_provenance(results)
        results = load_results(results)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in REPORT_FILES}

    curves = results
    results = as_metric(results, metric)
    summ = summary(results, baseline)
    iqm = iqm_table(results, baseline, reps=reps, seed=seed)
    taus, profiles, cis = performance_profiles(results, baseline, reps=reps, seed=seed)
    findings = teachmyagent_findings(results, baseline)
    ranked = ranks(curves, baseline) if metric == "final" else None
    risk = risk_summaries(results, baseline) if metric == "final" else {}
    paths["summary.md"].write_text(
        markdown_table(summ)
        + risk_markdown(risk)
        + (ranks_markdown(ranked) if ranked is not None else "")
        + findings_markdown(findings)
    )
    paths["summary.tex"].write_text(latex_table(summ))
    document = {
        "baseline": baseline,
        "metric": metric,
        "alpha": ALPHA,
        "summary": summ.to_dict(orient="records"),
        "iqm": {
            "metric": f"IQM of {metric} % mastered / 100 over runs x settings",
            "ci": "percentile stratified bootstrap over runs (rliable 1.2.0)",
            "seeds": iqm.attrs["seeds"],
            "settings": iqm.attrs["setting_labels"],
            "reps": reps,
            "bootstrap_seed": seed,
            "confidence": iqm.attrs["confidence"],
            "teachers": iqm.to_dict(orient="records"),
        },
        "risk": {str(a): t.to_dict(orient="records") for a, t in risk.items()},
        "teachmyagent_findings": findings,
        "ranks": None if ranked is None else ranked.reset_index(names="teacher").to_dict("records"),
        "provenance": provenance,
    }
    paths["summary.json"].write_text(json.dumps(jsonable(document), indent=2))
    for name, fig in (
        ("iqm.png", plot_iqm(iqm)),
        ("profiles.png", plot_profiles(taus, profiles, cis)),
        ("radar.png", plot_radar(summ, suite_title(curves))),
        ("curves.png", plot_curves(curves, baseline)),
    ):
        save(fig, paths[name])
    return paths
