"""The blog's RSS 2.0 feed (``blog/feed.xml``), written into the built site after the builder.

A post-build step of our own, the same for MkDocs and Zensical: each post's title, date,
categories and description come from its front matter in the docs folder, its final URL (the
blog plugin decides it) from the built page whose heading is the post's title, and a post
without ``description:`` is described by that page's first paragraph. It needs no network, no
git, no builder hook and no other plugin. Links are absolute when the project's ``mkdocs.yml``
sets ``site_url``, else relative to the feed (readers resolve them against the feed's own
address).

``mkdocs-rss-plugin`` was considered: it refuses to publish without ``site_url`` (a strict
build then fails), reads dates from git and pulls in a second MkDocs distribution.
"""

from __future__ import annotations

import html
import posixpath
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any

#: The posts' folder and the feed's path, relative to the docs / site folder.
POSTS = "blog/posts/"
FEED = "blog/feed.xml"
#: Folders under the built ``blog/`` that hold lists of posts, not posts.
NOT_POSTS = frozenset({"archive", "category", "page", "tags", "author", "authors"})
_H1 = re.compile(r"<h1[^>]*>(.*?)</h1>", re.DOTALL)
_PARAGRAPH = re.compile(r"<p>(.*?)</p>", re.DOTALL)
_HEADERLINK = re.compile(r"<a[^>]*class=\"headerlink\"[^>]*>.*?</a>", re.DOTALL)


@dataclass
class _Item:
    title: str
    url: str
    created: datetime
    description: str
    categories: list[str] = field(default_factory=list)


def write_feed(site_dir: Path, docs_dir: Path, posts: list[str], *, site_name: str, site_description: str,
               site_url: str) -> int:
    """Write ``blog/feed.xml`` into the built site ``site_dir`` for ``posts`` (docs-relative
    paths of the rendered posts in ``docs_dir``); returns the number of items (no posts: no feed)."""
    if not posts:
        return 0
    pages = post_pages(site_dir)
    items = [item for item in (_item(docs_dir / post, pages) for post in posts) if item is not None]
    feed = site_dir / FEED
    feed.parent.mkdir(parents=True, exist_ok=True)
    feed.write_bytes(feed_xml(items, title=f"{site_name} — blog", description=site_description or site_name,
                              site_url=site_url))
    return len(items)


def post_pages(site_dir: Path) -> dict[str, tuple[str, str]]:
    """Each built post page's heading (normalised) → (URL, HTML): every page under ``blog/``
    but the blog's index and its archive, category and pagination pages."""
    out: dict[str, tuple[str, str]] = {}
    for page in sorted((site_dir / "blog").rglob("index.html")):
        relative = page.relative_to(site_dir).as_posix()
        parts = relative.split("/")
        if len(parts) < 3 or parts[1] in NOT_POSTS:
            continue
        text = page.read_text(encoding="utf-8")
        match = _H1.search(text)
        if match:
            out.setdefault(_normal(_text(match.group(1))), (relative.removesuffix("index.html"), text))
    return out


def _text(fragment: str) -> str:
    """An HTML fragment as plain text (the heading's permalink left out)."""
    fragment = _HEADERLINK.sub("", fragment)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def _normal(title: str) -> str:
    """Letters and digits only, lower case: a heading's text matches its Markdown source."""
    return re.sub(r"[\W_]+", "", html.unescape(title)).lower()


def _item(path: Path, pages: dict[str, tuple[str, str]]) -> _Item | None:
    from sparkreport.site.titles import page_title, split_front_matter

    meta, body = split_front_matter(path.read_text(encoding="utf-8"))
    meta = meta or {}
    title = html.unescape(page_title(meta, body) or path.stem)
    found = pages.get(_normal(title))
    if found is None:
        return None  # a post the builder left out (a draft) is not in the feed either
    url, page = found
    description = meta.get("description")
    if not description:
        heading = _H1.search(page)
        match = _PARAGRAPH.search(page, heading.end() if heading else 0)
        description = _text(match.group(1)) if match else ""
    categories = meta.get("categories") or []
    return _Item(title, url, _created(meta.get("date")), str(description),
                 [str(c) for c in categories] if isinstance(categories, list) else [str(categories)])


def feed_xml(items: list[_Item], *, title: str, description: str, site_url: str) -> bytes:
    """The RSS 2.0 document for ``items`` (escaped by ElementTree: titles are user text)."""
    def link(url: str) -> str:
        if site_url:
            return site_url.rstrip("/") + "/" + url.lstrip("/")
        return posixpath.relpath(url or ".", posixpath.dirname(FEED)) + ("/" if url.endswith("/") else "")

    rss = ET.Element("rss", version="2.0")
    channel = ET.SubElement(rss, "channel")
    ET.SubElement(channel, "title").text = title
    ET.SubElement(channel, "link").text = link("blog/")
    ET.SubElement(channel, "description").text = description
    ET.SubElement(channel, "generator").text = "sparkreport"
    ordered = sorted(items, key=lambda i: (i.created, i.url), reverse=True)
    if ordered:
        ET.SubElement(channel, "lastBuildDate").text = format_datetime(ordered[0].created)
    for item in ordered:
        entry = ET.SubElement(channel, "item")
        ET.SubElement(entry, "title").text = item.title
        ET.SubElement(entry, "link").text = link(item.url)
        ET.SubElement(entry, "guid", isPermaLink="true" if site_url else "false").text = link(item.url)
        ET.SubElement(entry, "pubDate").text = format_datetime(item.created)
        ET.SubElement(entry, "description").text = item.description
        for category in item.categories:
            ET.SubElement(entry, "category").text = category
    ET.indent(rss)
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(rss, encoding="utf-8") + b"\n"


def _created(value: Any) -> datetime:
    if isinstance(value, dict):
        value = value.get("created")
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return datetime(1970, 1, 1, tzinfo=UTC)
