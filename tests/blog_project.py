"""A project folder as tests build it: the repository's mkdocs.yml, a blog with one post, a
hand-written page and a copy of a run store."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def blog_project(root: Path, runs: Path, post: tuple[str, str]) -> Path:
    """``root`` with mkdocs.yml, docs/blog (index and the post ``(file name, text)``),
    docs/notes.md and runs/ copied from ``runs``; returns ``root``."""
    (root / "docs" / "blog" / "posts").mkdir(parents=True)
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    (root / "docs" / "blog" / "index.md").write_text("# Blog\n", encoding="utf-8")
    (root / "docs" / "blog" / "posts" / post[0]).write_text(post[1], encoding="utf-8")
    (root / "docs" / "notes.md").write_text("# Notes\n\nA hand-written page.\n", encoding="utf-8")
    shutil.copytree(runs, root / "runs")
    return root
