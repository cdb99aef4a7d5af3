"""Render: the run store → plain Markdown pages (every number filled in) + chart files.

``render(RenderOptions(...))`` writes a docs folder that any Markdown site generator can
build: the project's hand-written ``docs/`` copied first, then one Markdown file per
generated page, its charts (Vega-Lite JSON + SVG fallback) beside it, the run files and
the downloads. Nothing is written into the project's source tree: the default output is
``build/docs``. The MkDocs part (config, nav, build) lives in :mod:`sparkreport.site`.
"""

from sparkreport.render.core import RenderOptions, RenderResult, RenderSession, render

__all__ = ["RenderOptions", "RenderResult", "RenderSession", "render"]
