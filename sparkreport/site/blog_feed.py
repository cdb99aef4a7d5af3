"""An MkDocs hook that writes the blog's RSS 2.0 feed (``blog/feed.xml``) after the build.

It reads each post's final URL, title, date, categories and description from the built pages
(Material's blog plugin decides the URLs), so it needs no network, no git and no other plugin.
Links are absolute when the project's ``mkdocs.yml`` sets ``site_url``, else relative to the
feed (readers resolve them against the feed's own address).

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


@dataclass
class _Item:
    title: str
    url: str
    created: datetime
    description: str
    categories: list[str] = field(default_factory=list)


_items: list[_Item] = []


def on_config(config: Any) -> None:
    """Start every build with an empty list (MkDocs may build several times in one process)."""
    _items.clear()


def on_page_content(html_text: str, page: Any, config: Any, files: Any) -> None:
    """Remember each post: its URL, title, date and a plain-text description."""
    if not page.file.src_uri.startswith(POSTS):
        return
    meta = page.meta or {}
    post_config = getattr(page, "config", None)
    created = _created(getattr(getattr(post_config, "date", None), "created", None) or meta.get("date"))
    categories = list(getattr(post_config, "categories", None) or meta.get("categories") or [])
    description = str(meta.get("description") or _first_paragraph(html_text))
    _items.append(_Item(html.unescape(str(page.title or page.file.name)), page.url, created, description,
                        [str(c) for c in categories]))


def on_post_build(config: Any) -> None:
    """Write ``blog/feed.xml`` into the site folder (newest post first)."""
    if not _items:
        return
    site_url = str(config.get("site_url") or "")
    feed = Path(config["site_dir"]) / FEED
    feed.parent.mkdir(parents=True, exist_ok=True)
    feed.write_bytes(feed_xml(_items, title=f"{config['site_name']} — blog",
                              description=str(config.get("site_description") or config["site_name"]),
                              site_url=site_url))


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


def _first_paragraph(html_text: str) -> str:
    match = re.search(r"<p>(.*?)</p>", html_text, re.DOTALL)
    text = re.sub(r"<[^>]+>", "", match.group(1)) if match else ""
    return " ".join(html.unescape(text).split())
