"""Page titles made inert before the builder sees them (for MkDocs and Zensical alike).

A page title can carry data (a model name, a run's environment, a post's heading). The body
escapes it, but the theme prints ``page.title | striptags`` into ``<title>`` — and ``striptags``
*unescapes* entities (Jinja's and Zensical's alike), so a heading
``&lt;/title&gt;&lt;script&gt;…`` came back as live markup. Both themes print ``page.meta.title``
as it is, in ``<title>`` and in the header, so before the build every page whose title holds a
character HTML treats specially gets a front-matter ``title:`` that is the title HTML-escaped
exactly once (:func:`inert_title`: ``html.escape(html.unescape(title))``: the same for a title
already escaped, as nav labels and headings are, and for a raw one, as a hand-written
``title:`` may be). A post-build rewrite of ``<title>`` could not undo markup the builder has
already let out; this runs on the docs folder instead, and touches only the pages that need it.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

#: A title holding one of these gets its inert ``title:`` (the others print the same either way).
SPECIAL = frozenset("<>&\"")


def inert_title(title: str) -> str:
    """``title`` escaped once for any HTML context (text or attribute)."""
    return html.escape(html.unescape(title), quote=True)


def nav_titles(nav: Iterable[Any]) -> dict[str, str]:
    """docs-relative path → title, from generated-config nav data (``[{title: path | [...]}]``)."""
    out: dict[str, str] = {}
    for entry in nav:
        if not isinstance(entry, dict):
            continue
        for title, target in entry.items():
            if isinstance(target, str):
                out.setdefault(target, str(title))
            elif isinstance(target, list):
                for path, inner in nav_titles(target).items():
                    out.setdefault(path, inner)
    return out


def split_front_matter(text: str) -> tuple[dict[str, Any] | None, str]:
    """(front matter, body) of a Markdown page; (None, text) without a valid YAML block."""
    if not text.startswith("---\n"):
        return None, text
    end = text.find("\n---\n", 4)
    if end == -1:
        return None, text
    try:
        meta = yaml.safe_load(text[4:end]) or {}
    except yaml.YAMLError:
        return None, text
    return (meta, text[end + 5:]) if isinstance(meta, dict) else (None, text)


def page_title(meta: dict[str, Any] | None, body: str) -> str | None:
    """What a builder titles a page without a nav entry: ``title:``, else its first ``# `` heading."""
    if meta and meta.get("title") is not None:
        return str(meta["title"])
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return None


def make_titles_inert(docs_dir: Path, nav: list[Any], memo: Path | None = None) -> int:
    """Give every page of ``docs_dir`` whose title holds an HTML-special character an inert
    front-matter ``title:``; returns the number of pages rewritten (by rename, never in place).
    The home page keeps the site name the themes give it, unless it sets a title itself.

    A page checked before as it is (same mtime, size and inode, same nav title) is not read
    again: in this process (``serve``'s re-renders), and across builds through ``memo`` (a file
    in the build cache, dropped when this module changes)."""
    titled = nav_titles(nav)
    checked = _load_checked(memo) if memo is not None else _CHECKED
    fresh: dict[str, list[Any]] = {}
    changed = 0
    root = str(docs_dir)
    for folder, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.endswith(".md"):
                continue
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            stat = os.stat(path)
            seen = [stat.st_mtime_ns, stat.st_size, stat.st_ino, titled.get(relative)]
            if checked.get(path) == seen:
                fresh[path] = seen
                continue  # checked as it is, with the same nav title
            text = Path(path).read_text(encoding="utf-8")
            if relative in titled or "&" in text or "<" in text or ">" in text or '"' in text:
                changed += _inert(Path(path), relative, text, titled.get(relative))
            stat = os.stat(path)
            fresh[path] = [stat.st_mtime_ns, stat.st_size, stat.st_ino, titled.get(relative)]
    _CHECKED.update(fresh)
    if memo is not None:
        from sparkreport.cache import _atomic_bytes, code_signature

        _atomic_bytes(memo, json.dumps({"signature": code_signature(__file__), "pages": fresh}).encode())
    return changed


#: path → [mtime, size, inode, nav title] of each page found inert, for the next call in this
#: process (render replaces a file it changes, so a changed page has a new inode).
_CHECKED: dict[str, list[Any]] = {}


def _load_checked(memo: Path) -> dict[str, list[Any]]:
    """The pages a build found inert (``memo``), or what this process knows when it is missing,
    damaged or from other code."""
    from sparkreport.cache import code_signature

    try:
        data = json.loads(memo.read_text(encoding="utf-8"))
        if data.get("signature") == code_signature(__file__) and isinstance(data.get("pages"), dict):
            return {**data["pages"], **_CHECKED}
    except (OSError, ValueError, AttributeError):
        pass
    return _CHECKED


def _inert(path: Path, relative: str, text: str, nav_title: str | None) -> int:
    meta, body = split_front_matter(text)
    title = nav_title if nav_title is not None else page_title(meta, body)
    if relative == "index.md" and not (meta and "title" in meta):
        return 0
    if title is None or not SPECIAL & set(title):
        return 0
    inert = inert_title(title)
    if meta is not None and meta.get("title") == inert:
        return 0
    meta = dict(meta or {})
    meta["title"] = inert
    rewritten = "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n" + body
    tmp = path.with_name(f".{path.name}.titled")
    tmp.write_text(rewritten, encoding="utf-8")
    os.replace(tmp, path)
    return 1
