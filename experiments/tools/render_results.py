"""Renderers of the results pages' headline tables, for `acl render-docs` (experiments.tools.render_docs)."""

from __future__ import annotations

from collections.abc import Callable

RESULTS_RENDERERS: dict[str, Callable[..., str]] = {}
"""Renderer name -> renderer(root, *arguments) -> Markdown."""
