"""Renderers of the README's numbers, for `acl render-docs` (experiments.tools.render_docs)."""

from __future__ import annotations

from collections.abc import Callable

README_RENDERERS: dict[str, Callable[..., str]] = {}
"""Renderer name -> renderer(root, *arguments) -> Markdown."""
