"""Risk over levels: the conditional value at risk (CVaR) of success.

CVaR at alpha is the mean success on the alpha share of levels where the agent does worst
(Rutherford et al. 2024, "No Regrets: Investigating and Improving Regret Approximations for
Curriculum Discovery", NeurIPS, Sec. 6: sample many levels, rank them by success on one
evaluation seed, measure the worst alpha share's success on an independent seed). The
mean over levels is CVaR at alpha = 1; CVaR at a small alpha is the worst case.

Ranking and measuring on the same episodes biases CVaR down: the levels ranked worst are
partly those whose episodes happened to fail. `cvar` therefore refuses to measure on the
ranking's own episodes unless asked to (`same_seed=True`), which is right only where the
episodes are deterministic or the levels are the fixed set being described (a
TeachMyAgent-style test set, whose tasks are the population, not a sample).

Definition, with ties and a share that is not a whole number of levels: sort the M levels
by ranking success; the tail holds alpha * M levels' worth of weight, every level ranked
strictly below the tail's boundary value with weight 1 and the levels tied at that value
sharing the rest equally (the expectation over random tie-breaks); CVaR is the
weight-averaged measured success.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

CVAR_ALPHAS = (0.01, 0.1, 0.5)
"""The shares the paper reports."""


def _success(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name}: one success value per level, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: success values must be finite")
    return array


def tail_weights(ranked_on: np.ndarray, alpha: float) -> np.ndarray:
    """Each level's weight in the worst `alpha` share by `ranked_on` [M] -> [M]; the
    weights sum to alpha * M, ties at the boundary share theirs equally."""
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    size = alpha * ranked_on.size
    boundary = np.sort(ranked_on)[int(np.ceil(size)) - 1]
    below = ranked_on < boundary
    tied = ranked_on == boundary
    weights = below.astype(np.float64)
    weights[tied] = (size - below.sum()) / tied.sum()
    return weights


def cvar(
    ranked_on,
    measured_on=None,
    alphas: Sequence[float] = CVAR_ALPHAS,
    *,
    same_seed: bool = False,
) -> dict[float, float]:
    """CVaR of success at each alpha: {alpha: mean measured success on the worst alpha
    share of levels}.

    ranked_on: [M] success per level (a rate over K episodes, or 0/1) on the ranking seed.
    measured_on: [M] success of the same levels, in the same order, on an independent seed.
        None (or the same array) measures on the ranking's episodes, refused unless
        `same_seed=True`.
    """
    ranked = _success(ranked_on, "ranked_on")
    if measured_on is None or measured_on is ranked_on:
        if not same_seed:
            raise ValueError(
                "CVaR ranks the levels on one evaluation seed and measures them on another: "
                "pass measured_on from an independent seed, or same_seed=True where the "
                "episodes are deterministic or the levels are the whole population"
            )
        measured = ranked
    else:
        measured = _success(measured_on, "measured_on")
        if measured.shape != ranked.shape:
            raise ValueError(f"measured_on {measured.shape} and ranked_on {ranked.shape} differ")
    return {
        float(alpha): float(tail_weights(ranked, alpha) @ measured / (alpha * ranked.size))
        for alpha in alphas
    }


def test_set_cvar(success, alphas: Sequence[float] = CVAR_ALPHAS) -> dict[float, float]:
    """CVaR over a fixed test set from repeated episodes per task: success [M, A] (task,
    attempt; A >= 2, 0/1 or rates). The tasks are ranked by their success rate over the
    even attempts and measured over the odd ones, independent episodes (`cvar`)."""
    array = np.asarray(success, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] < 2:
        raise ValueError(
            f"test_set_cvar: success per task and attempt [M, A] with A >= 2, got {array.shape}"
        )
    return cvar(array[:, 0::2].mean(axis=1), array[:, 1::2].mean(axis=1), alphas)


def cvar_curve(ranked_on, measured_on=None, num: int = 100, *, same_seed: bool = False):
    """(alphas [num], CVaR [num]) for alphas from 1/num to 1: the paper's risk curve."""
    alphas = np.linspace(1.0 / num, 1.0, num)
    values = cvar(ranked_on, measured_on, alphas, same_seed=same_seed)
    return alphas, np.array(list(values.values()))


def plot_cvar_curves(curves: dict, out: str | Path | None = None, title: str = ""):
    """CVaR against alpha per method, as the paper draws risk. curves: {label: (alphas,
    values)} or {label: (alphas, values [S, num])} with one curve per seed, drawn as the
    mean with a band of one standard error, named in the legend with its seed count.
    Saved to `out` when given; returns the figure."""
    import matplotlib

    if out is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from acl.core.plot_style import (
        BAND_ALPHA,
        legend_outside,
        save,
        se_band_label,
        with_seed_counts,
    )

    fig, ax = plt.subplots(figsize=(5, 3.5))
    counts = [np.atleast_2d(values).shape[0] for _, values in curves.values()]
    labels = with_seed_counts(list(curves), counts)
    seeds = []
    for label, (alphas, values) in zip(labels, curves.values(), strict=True):
        values = np.atleast_2d(values)
        mean = values.mean(axis=0)
        line = ax.plot(alphas, mean, label=label)[0]
        if values.shape[0] > 1:
            seeds.append(values.shape[0])
            se = values.std(axis=0, ddof=1) / np.sqrt(values.shape[0])
            ax.fill_between(
                alphas, mean - se, mean + se, color=line.get_color(), alpha=BAND_ALPHA, lw=0
            )
    ax.set_xscale("log")
    ax.set_xlabel("alpha (share of worst levels)")
    ax.set_ylabel("CVaR of success")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=9)
    legend_outside(fig, ax, band=se_band_label(seeds) if seeds else None)
    fig.tight_layout()
    if out is not None:
        save(fig, out)
    return fig
