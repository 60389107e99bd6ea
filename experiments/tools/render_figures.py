"""The figure images the README and docs/ show, re-drawn from committed result files, for
`acl render-docs` (experiments.tools.render_docs).

`FIGURES` maps each image (a path from the repository root) to the function that draws it
and the committed data files it reads. `MANIFEST` records, for every image, the SHA-256 of
its data files and of the image as last drawn. An image is stale when

- a data file is missing (it cannot be drawn),
- its data changed since it was drawn (a result re-run, edited or replaced),
- the image changed since it was drawn (drawn by hand or by another command), or
- it was never drawn here (no manifest entry, or a different list of data files).

`acl render-docs` re-draws the stale images and rewrites the manifest; `--check` only
names them. A root holding neither an image nor any of its data (a test's) has nothing to
check for it. Hashes, not pixels: a re-drawn PNG differs in its bytes between matplotlib
versions, a hash of the data does not.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "experiments/figures/manifest.json"


@dataclass(frozen=True)
class Figure:
    """How one image is drawn: `draw(data files, image)` reads only the files of `data`
    (paths from the repository root, given to it in that order, absolute)."""

    draw: Callable[[Sequence[Path], Path], None]
    data: tuple[str, ...]


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


# -- the drawing functions: matplotlib, jax and the experiments load only to draw --------


def toy_bandit_curves(data: Sequence[Path], image: Path) -> None:
    from experiments.papers import toy_bandit

    document = _json(data[0])
    toy_bandit.plot(document["results"], image, document["protocol"]["score_every"])


def comparison_curves(module: str) -> Callable[[Sequence[Path], Path], None]:
    """A comparison's curves.png (`experiments.papers.comparison`) from its results.json,
    drawn by `plot` of `module` (jsrl, reverse_curriculum)."""

    def draw(data: Sequence[Path], image: Path) -> None:
        import importlib

        from experiments.papers.comparison import comparison_title

        document = _json(data[0])
        plot = importlib.import_module(f"experiments.papers.{module}").plot
        plot(document["results"], image, comparison_title(document["config"]))

    return draw


def svgg_curves(data: Sequence[Path], image: Path) -> None:
    from experiments.papers import svgg
    from experiments.papers.comparison import comparison_title

    document = _json(data[0])
    config = svgg.parse(document["config"])
    svgg.plot(document["results"], config, image, comparison_title(document["config"]))


def _run_dirs(data: Sequence[Path]) -> list:
    from acl.run.results import RunDir

    return [RunDir(folder) for folder in dict.fromkeys(path.parent for path in data)]


def compared_curves(data: Sequence[Path], image: Path) -> None:
    from experiments.tools.compare import draw_learning_curves

    draw_learning_curves(_run_dirs(data), image)


def compared_tasks(data: Sequence[Path], image: Path) -> None:
    from experiments.tools.compare import draw_sampled_tasks

    draw_sampled_tasks(_run_dirs(data), image)


def cvar_curves(data: Sequence[Path], image: Path) -> None:
    """`acl risk`'s cvar_curves.png from its risk.json, titled with the env and challenge
    of the first run's config.yaml (data: risk.json, that config)."""
    from acl.core.run_files import read_config_dict
    from experiments.tools import risk
    from experiments.tools.compare import setting_title

    document = _json(data[0])
    settings = document["settings"]
    title = setting_title(read_config_dict(data[1].parent))
    levels = f"{settings['levels']:,} sampled levels, {settings['episodes']} episodes each"
    risk.plot(document["runs"], image, f"{title}: {levels}")


def solve_rates(data: Sequence[Path], image: Path) -> None:
    from experiments.papers import ued_mazes

    ued_mazes.plot(_json(data[0])["results"], image)


def benchmark_curves(data: Sequence[Path], image: Path) -> None:
    import pandas as pd

    from acl.benchmark.figures import plot_curves
    from acl.core.plot_style import save

    save(plot_curves(pd.read_csv(data[0])), image)


def benchmark_radar(data: Sequence[Path], image: Path) -> None:
    """The radar of the final % mastered, normalised by Random's (as `acl report`)."""
    import pandas as pd

    from acl.benchmark.figures import plot_radar, suite_title
    from acl.benchmark.stats import summary
    from acl.core.plot_style import save

    results = pd.read_csv(data[0])
    save(plot_radar(summary(results), suite_title(results)), image)


def stump_tracks_curve(data: Sequence[Path], image: Path) -> None:
    import numpy as np

    from experiments.papers import stump_tracks_ppo

    document = _json(data[0])
    curve = np.asarray(document["curves"]["train_return"], dtype=np.float64)  # null: NaN
    steps_per_update = document["num_envs"] * document["num_steps"]
    title = stump_tracks_ppo.curve_title(document["num_seeds"])
    stump_tracks_ppo.plot_curves(curve, image, title, steps_per_update)


def bit_flip_curves(data: Sequence[Path], image: Path) -> None:
    """`acl bit-flip`'s curves from one or more of its results.json (runs of different bit
    counts and budgets), one panel per bit count in the files' order."""
    from experiments.papers import bit_flip

    runs: dict = {}
    for path in data:
        runs.update(_json(path)["runs"])
    bit_flip.plot(runs, image)


def xland_histograms(data: Sequence[Path], image: Path) -> None:
    from experiments.bench import xland_generator

    xland_generator.plot(_json(data[0]), _json(data[1])["ours"], image)


# -- the registry --------------------------------------------------------------------------


def run_files(folder: str, runs: Sequence[str]) -> tuple[str, ...]:
    """The files of `acl run` directories under `folder` that `acl compare`'s figures read."""
    names = ("config.yaml", "summary.json", "metrics.csv", "tasks.csv")
    return tuple(f"{folder}/{run}/{name}" for run in runs for name in names)


RESULTS = "experiments/results"
GOALS = f"{RESULTS}/goal_curricula"
SFL = f"{RESULTS}/point_reach_sfl"
SFL_RUNS = run_files(SFL, ("random", "alp_gmm", "sfl"))
STUMP_TRACKS = (f"{RESULTS}/stump_tracks_ppo/summary.json",)
MAKE_RUN_RUNS = run_files(f"{RESULTS}/make_run", ("random", "alp_gmm"))
BIT_FLIP = (
    f"{RESULTS}/bit_flip/bits_10_15/results.json",
    f"{RESULTS}/bit_flip/bits_20_30/results.json",
)

FIGURES: dict[str, Figure] = {
    f"{RESULTS}/toy_bandit/curves.png": Figure(
        toy_bandit_curves, (f"{RESULTS}/toy_bandit/results.json",)
    ),
    f"{GOALS}/reverse/curves.png": Figure(
        comparison_curves("reverse_curriculum"), (f"{GOALS}/reverse/results.json",)
    ),
    f"{GOALS}/reverse_point/curves.png": Figure(
        comparison_curves("reverse_curriculum"), (f"{GOALS}/reverse_point/results.json",)
    ),
    f"{GOALS}/jsrl/curves.png": Figure(comparison_curves("jsrl"), (f"{GOALS}/jsrl/results.json",)),
    "experiments/figures/jsrl_goal_maze.png": Figure(
        comparison_curves("jsrl"), (f"{GOALS}/jsrl/results.json",)
    ),
    f"{GOALS}/svgg/curves.png": Figure(svgg_curves, (f"{GOALS}/svgg/results.json",)),
    f"{GOALS}/recovery/curves.png": Figure(svgg_curves, (f"{GOALS}/recovery/results.json",)),
    f"{SFL}/comparison.png": Figure(compared_curves, SFL_RUNS),
    f"{SFL}/sampled_tasks.png": Figure(compared_tasks, SFL_RUNS),
    f"{SFL}/risk/cvar_curves.png": Figure(
        cvar_curves, (f"{SFL}/risk/risk.json", f"{SFL}/random/config.yaml")
    ),
    f"{RESULTS}/ued_mini/risk/cvar_curves.png": Figure(
        cvar_curves,
        (f"{RESULTS}/ued_mini/risk/risk.json", f"{RESULTS}/ued_mini/dr/config.yaml"),
    ),
    f"{RESULTS}/ued_mini/solve_rates.png": Figure(
        solve_rates, (f"{RESULTS}/ued_mini/results.json",)
    ),
    "experiments/figures/benchmark_quick_curves.png": Figure(
        benchmark_curves, (f"{RESULTS}/benchmark_quick/results.csv",)
    ),
    "experiments/figures/benchmark_quick_cartpole_curves.png": Figure(
        benchmark_curves, (f"{RESULTS}/benchmark_quick_cartpole/results.csv",)
    ),
    "experiments/figures/benchmark_quick_cartpole_radar.png": Figure(
        benchmark_radar, (f"{RESULTS}/benchmark_quick_cartpole/results.csv",)
    ),
    "experiments/figures/point_reach_make_run_curves.png": Figure(compared_curves, MAKE_RUN_RUNS),
    "experiments/figures/point_reach_make_run_tasks.png": Figure(compared_tasks, MAKE_RUN_RUNS),
    "experiments/figures/bit_flip_curves.png": Figure(bit_flip_curves, BIT_FLIP),
    "experiments/figures/stump_tracks_ppo_cpu_curve.png": Figure(stump_tracks_curve, STUMP_TRACKS),
    f"{RESULTS}/stump_tracks_ppo/learning_curve.png": Figure(stump_tracks_curve, STUMP_TRACKS),
    "experiments/figures/xland_generator.png": Figure(
        xland_histograms,
        (
            f"{RESULTS}/xland_reference_histograms.json",
            f"{RESULTS}/xland_generator_comparison.json",
        ),
    ),
}
"""Image -> how it is drawn."""

NOT_DRAWN_HERE: dict[str, str] = {
    "experiments/figures/stump_tracks_frame.png": "an illustration of the env, drawn from its "
    "code by envs/stump_tracks_render.py",
    "experiments/figures/stump_tracks_tasks.png": "an illustration of the env, drawn from its "
    "code by envs/stump_tracks_render.py",
    "experiments/figures/maze_held_out.png": "the held-out mazes, drawn from envs/maze_levels.py "
    "by acl render-maze-levels",
    "experiments/figures/maze_mini_held_out.png": "the held-out mazes, drawn from "
    "envs/maze_levels.py by acl render-maze-levels",
}
"""Images the README or docs/ show that `FIGURES` does not draw, and why: each is either an
illustration drawn from code, or a figure whose data is not committed (so nothing shows
whether it is stale)."""


# -- staleness and drawing -----------------------------------------------------------------


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(root: Path) -> dict[str, dict]:
    """Image -> {"data": {file: SHA-256}, "image": SHA-256}, as last drawn."""
    path = root / MANIFEST
    return _json(path)["figures"] if path.is_file() else {}


def why_stale(root: Path, image: str, figure: Figure, entry: dict | None) -> str | None:
    """Why `image` is stale (see the module docstring), or None when it is not (or when
    neither it nor any of its data is under `root`: a root without that result)."""
    missing = [name for name in figure.data if not (root / name).is_file()]
    if len(missing) == len(figure.data) and not (root / image).is_file():
        return None
    if missing:
        return f"data missing: {', '.join(missing)}"
    if entry is None or set(entry["data"]) != set(figure.data):
        return "never drawn from its data by acl render-docs"
    if not (root / image).is_file():
        return "image missing"
    changed = [name for name in figure.data if sha256(root / name) != entry["data"][name]]
    if changed:
        return f"data changed since it was drawn: {', '.join(changed)}"
    if sha256(root / image) != entry["image"]:
        return "the image changed since it was drawn from its data"
    return None


def draw(root: Path, image: str, figure: Figure) -> dict:
    """Draw `image` from its data; returns its manifest entry."""
    path = root / image
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.draw([root / name for name in figure.data], path)
    return {"data": {name: sha256(root / name) for name in figure.data}, "image": sha256(path)}


def render_figures(root: Path, check: bool, redraw: bool = False) -> list[str]:
    """Re-draw every stale figure of `FIGURES` and record it in the manifest (`redraw`:
    every figure whose data is there); with `check`, write nothing. Returns the stale ones,
    each with why: under `check` every stale one, else those that could not be drawn."""
    manifest = read_manifest(root)
    stale, drawn = [], {}
    for image, figure in FIGURES.items():
        reason = why_stale(root, image, figure, manifest.get(image))
        if reason is None and not redraw:
            continue
        if check or (reason or "").startswith("data missing"):
            stale.append(f"{image} ({reason})")
            if not check:
                print(f"cannot draw {image}: {reason}", file=sys.stderr)
            continue
        drawn[image] = draw(root, image, figure)
        print(f"drew {image}")
    if drawn:
        kept = {image: entry for image, entry in manifest.items() if image in FIGURES}
        figures = dict(sorted({**kept, **drawn}.items()))
        document = {
            "about": "Written by acl render-docs: per figure, the SHA-256 of its data files "
            "and of the image as drawn from them (experiments/tools/render_figures.py).",
            "figures": figures,
        }
        (root / MANIFEST).parent.mkdir(parents=True, exist_ok=True)
        (root / MANIFEST).write_text(json.dumps(document, indent=2) + "\n")
    return stale
