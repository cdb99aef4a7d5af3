"""An MkDocs hook that makes every page title inert in the theme's HTML.

A page title can carry data (a model name, a run's environment, a post's heading). The body
escapes it, but Material prints ``page.title | striptags`` into ``<title>`` — and ``striptags``
*unescapes* entities, so a heading ``&lt;/title&gt;&lt;script&gt;…`` came back as live markup.
Material prints ``page.meta.title`` as it is, in ``<title>`` and in the header, so this hook
sets it to the title HTML-escaped exactly once (``html.escape(html.unescape(title))``: the
same for a title already escaped, as nav labels and headings are, and for a raw one, as a
hand-written ``title:`` may be).
"""

from __future__ import annotations

import html
from typing import Any


def inert_title(title: str) -> str:
    """``title`` escaped once for any HTML context (text or attribute)."""
    return html.escape(html.unescape(title), quote=True)


def on_page_content(content: str, page: Any, **_kwargs: Any) -> str:
    if page.is_homepage and "title" not in page.meta:
        return content  # Material titles the home page with the site name alone: keep that
    title = page.title
    if title:
        page.meta["title"] = inert_title(str(title))
    return content
