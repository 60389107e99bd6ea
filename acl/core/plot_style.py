"""What every figure of the library shares, so that a reader reads each one the same way:

- env steps read 100k, 1.2M, not 1200000 (`steps_axis`);
- every shaded band says in the legend what it is and over how many seeds
  (`se_band_label`, `legend_outside`);
- the legend sits outside the axes, never on the data (`legend_outside`);
- a sampled-task map tells the first half of training from the second in two colours
  that differ in hue, not in shade (`FIRST_HALF`, `SECOND_HALF`).

matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

FIRST_HALF = "tab:blue"
SECOND_HALF = "tab:orange"
BAND_ALPHA = 0.2
DPI = 80
"""Committed figures stay small (< 200 KB where they can); on screen a figure reads the same
at 80 dpi."""


def seed_count_text(counts: Iterable[int]) -> str:
    """ "16", or "3-16" where the lines of a figure have different seed counts."""
    values = sorted({int(c) for c in counts})
    if not values:
        return "0"
    return str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"


def se_band_label(counts: int | Iterable[int]) -> str:
    """The legend's name of a band of one standard error of the mean over seeds."""
    text = seed_count_text([counts] if isinstance(counts, int) else counts)
    return f"shaded: ± 1 SE over {text} seeds"


def with_seed_counts(labels: Sequence[str], counts: Sequence[int]) -> list[str]:
    """The labels, each with its seed count ("accel (4 seeds)") where the counts differ:
    then the band's own label gives only their range."""
    if len(set(counts)) < 2:
        return list(labels)
    return [f"{label} ({count} seeds)" for label, count in zip(labels, counts, strict=True)]


def steps_axis(axis: Any) -> None:
    """Engineering ticks on an env-steps axis (ax.xaxis): 100k, 1M, 1.2M."""
    from matplotlib.ticker import EngFormatter

    axis.set_major_formatter(EngFormatter(sep=""))


def legend_outside(
    fig: Any,
    axes: Sequence[Any] | Any,
    band: str | None = None,
    extra: Sequence[tuple[Any, str]] = (),
    title: str | None = None,
) -> Any:
    """One legend for the whole figure, right of the axes: every labelled artist of `axes`
    once, the (handle, label) pairs of `extra` (proxies for what has no handle of its own,
    such as a contour), then a grey swatch named `band` (what the shaded bands are). Save
    the figure with `save` (bbox_inches="tight") so the legend is kept."""
    from matplotlib.patches import Patch

    handles, labels = [], []
    for ax in axes if isinstance(axes, Sequence) else [axes]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    for handle, label in extra:
        handles.append(handle)
        labels.append(label)
    if band is not None:
        handles.append(Patch(facecolor="0.5", alpha=BAND_ALPHA + 0.15))
        labels.append(band)
    return fig.legend(
        handles,
        labels,
        loc="upper left",
        bbox_to_anchor=(1.0, 0.95),
        fontsize=8,
        frameon=False,
        title=title,
        title_fontsize=8,
    )


def save(fig: Any, path: Any, dpi: int = DPI) -> None:
    """Write `fig` with its outside legend kept, and close it."""
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
