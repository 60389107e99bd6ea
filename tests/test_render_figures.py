"""Figures that cannot go stale (experiments.tools.render_figures): every image the README
and docs/ show is drawn from committed data or listed as not drawn here; the manifest holds
the hashes the committed images were drawn from; a changed data file or image makes
`acl render-docs --check` fail until `acl render-docs` re-draws it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from experiments.cli import ROOT
from experiments.tools import render_docs
from experiments.tools.render_figures import FIGURES, MANIFEST, NOT_DRAWN_HERE, render_figures

TOY_BANDIT = "experiments/results/toy_bandit/curves.png"
STUMP_TRACKS = "experiments/results/stump_tracks_ppo/summary.json"
"""The data of the figures the tests re-draw: their drawing loads neither jax nor an env."""
SHOWN = re.compile(r"!\[[^\]]*\]\(([^)]+\.png)\)")


def committed_copy(root: Path, *images: str) -> Path:
    """`root` holding the committed data and image of each of `images`, the manifest, and a
    README with nothing to render."""
    for image in images:
        for name in (image, *FIGURES[image].data, MANIFEST):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, root / name)
    (root / "README.md").write_text("# nothing rendered here\n")
    return root


def check(root: Path) -> int:
    return render_docs.main(["--check", "--root", str(root)])


def test_the_committed_figures_are_drawn_from_the_committed_data():
    assert render_figures(ROOT, check=True) == []


def test_every_image_the_pages_show_is_drawn_here_or_says_why_not():
    shown = set()
    for page in render_docs.pages(ROOT):
        for link in SHOWN.findall(page.read_text()):
            shown.add(str((page.parent / link).resolve().relative_to(ROOT)))
    assert shown - set(FIGURES) - set(NOT_DRAWN_HERE) == set()
    assert set(NOT_DRAWN_HERE) <= shown, "a figure no page shows any more"


def test_changed_data_is_stale_until_redrawn(tmp_path, capsys):
    stale = {image for image, figure in FIGURES.items() if STUMP_TRACKS in figure.data}
    root = committed_copy(tmp_path, *stale)
    assert check(root) == 0

    summary = root / STUMP_TRACKS
    document = json.loads(summary.read_text())
    document["curves"]["train_return"][0][-1] = 0.0
    summary.write_text(json.dumps(document))
    assert check(root) == 1
    err = capsys.readouterr().err
    assert stale and all(image in err for image in stale)

    assert render_docs.main(["--root", str(root)]) == 0
    assert sorted(capsys.readouterr().out.split()) == sorted(["drew"] * len(stale) + [*stale])
    assert check(root) == 0


def test_a_changed_image_or_missing_data_is_stale(tmp_path, capsys):
    root = committed_copy(tmp_path, TOY_BANDIT)
    image = root / TOY_BANDIT
    image.write_bytes(image.read_bytes() + b"\0")
    assert check(root) == 1
    assert f"{TOY_BANDIT} (the image changed" in capsys.readouterr().err

    shutil.copyfile(ROOT / TOY_BANDIT, image)
    assert check(root) == 0
    (root / FIGURES[TOY_BANDIT].data[0]).unlink()
    assert check(root) == 1
    assert f"{TOY_BANDIT} (data missing" in capsys.readouterr().err
