"""Material's search index entries for a converted page, made faster, the same entries.

Material's search plugin splits each page's HTML into sections with an ``HTMLParser`` whose
handlers ask, for every tag and every run of text, whether the open elements meet its set of
skipped ones (``set.intersection`` over a list of ``Element`` objects, which hash and compare
by tag in Python) and whether the section's heading is among them (``in`` over the same list).
On the generated pages, tables of hundreds of cells, that is about half of a page's conversion
(the Results page of a model: ~0.09 s of its ~0.16 s). :class:`SectionParser` keeps a count of
each open tag instead, so both questions are dictionary lookups: the same sections, titles and
texts, ~40% less time over the pages of the bench site (4.25 → 2.55 s for 133 pages).

The semantics are Material's own, quirks included: an ``Element`` equals any element or text
of its tag, so the skipped "set" is a set of tag names — an excluded ``<div>`` skips every
``<div>`` open with it, and closing any ``<div>`` ends the skipping — and a heading's section
takes the text of any open element of the heading's tag. Used only where the installed search
plugin's module is one this was checked against (:data:`VERIFIED`, by the sha256 of its
source), through :func:`add_entries`; any other gets the plugin's own method.
``tests/test_fast_search.py`` compares the entries with the plugin's on every generated page of
the repository's site and on generated HTML.
"""

from __future__ import annotations

import functools
import hashlib
from html import escape
from pathlib import Path
from typing import Any

from material.plugins.search import plugin as material_search

#: The sha256 of ``material/plugins/search/plugin.py`` in each Material release whose parser
#: and ``add_entry_from_context`` this module reproduces (the whole file: any change there turns
#: the fast path off until it is checked again).
VERIFIED = {
    "9.8.2": "cc8a3ac0a8862662d11e87fefcdaa4a42d9ebd70a7943fa921c1c80e2661730b",
}

HEADINGS = frozenset(f"h{level}" for level in range(1, 7))
#: Tags Material never takes off its skipped set once it meets them.
ALWAYS_SKIPPED = ("script", "style", "object")


class SectionParser(material_search.Parser):
    """Material's search ``Parser`` with the open tags counted (:attr:`open_tags`) and the
    skipped set held as tag names, which is what its ``Element`` comparisons make of it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.skip: set[str] = {str(tag) for tag in material_search.Parser().skip}  # Material's, as names
        #: Tag → how many elements of it are open (``self.context``, Material's stack, is kept too:
        #: its length is a section's depth, its top what an end tag must match).
        self.open_tags: dict[str, int] = {}

    def _skipping(self) -> bool:
        counts = self.open_tags
        return any(counts.get(tag) for tag in self.skip)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in material_search.void:
            return
        attributes = dict(attrs)
        el = material_search.Element(tag, attributes)
        self.context.append(el)
        self.open_tags[tag] = self.open_tags.get(tag, 0) + 1
        if tag in HEADINGS and "id" in attributes:
            depth = len(self.context)
            if tag != "h1" and not self.data:  # a top-level section first
                self.section = material_search.Section(material_search.Element("hx"), depth)
                self.data.append(self.section)
            self.section = material_search.Section(el, depth)
            if self.data:
                self.section.id = attributes["id"]
            self.data.append(self.section)
        if not self.section:  # the preface
            self.section = material_search.Section(material_search.Element("hx"))
            self.data.append(self.section)
        for key, value in attributes.items():
            if key == "data-search-exclude" or (key == "class" and value == "linenodiv"):
                self.skip.add(tag)
                return
        if tag in self.keep and not self._skipping():
            within_title = self.open_tags.get(self.section.el.tag)
            (self.section.title if within_title else self.section.text).append(f"<{tag}>")

    def handle_endtag(self, tag: str) -> None:
        context = self.context
        if not context or context[-1].tag != tag:
            return
        if self.section.depth > len(context):  # leaving a heading nested in another element
            for section in reversed(self.data):
                if section.depth <= len(context):
                    self.section.depth = float("inf")
                    self.section = section
                    break
        context.pop()
        self.open_tags[tag] -= 1
        if tag in self.skip:
            if tag not in ALWAYS_SKIPPED:
                self.skip.remove(tag)
            return
        if tag in self.keep and not self._skipping():
            data = self.section.title if self.open_tags.get(self.section.el.tag) else self.section.text
            index = data.index(f"<{tag}>")  # (the first: Material's; a ValueError is Material's too)
            for i in range(index + 1, len(data)):
                if not data[i].isspace():
                    index = len(data)
                    break
            if len(data) > index:  # nothing but whitespace since the opening tag: both go
                del data[index:]
            else:
                data.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if self._skipping():
            return
        in_pre = self.open_tags.get("pre")
        if not in_pre:
            data = data.replace("\n", " ") if not data.isspace() else " "
        if not self.section:
            self.section = material_search.Section(material_search.Element("hx"))
            self.data.append(self.section)
        section = self.section
        if self.open_tags.get(section.el.tag):
            if not any(el.tag == "a" and el.attrs.get("class") == "headerlink" for el in self.context):
                section.title.append(escape(data, quote=False))  # (a permalink's text is left out)
        elif data.isspace():
            if not section.text or not section.text[-1].isspace() or in_pre:
                section.text.append(data)
        else:
            section.text.append(escape(data, quote=False))


@functools.cache
def source_digest() -> str:
    """The sha256 of the installed search plugin's module source."""
    return hashlib.sha256(Path(material_search.__file__).read_bytes()).hexdigest()


def verified() -> bool:
    """Whether the installed search plugin is one :class:`SectionParser` was checked against."""
    from material import __version__

    return VERIFIED.get(__version__) == source_digest()


def add_entries(index: Any, page: Any) -> None:
    """``index.add_entry_from_context(page)``: with :class:`SectionParser` where ``index`` is
    Material's search index of a :func:`verified` release, else the index's own method."""
    if type(index) is not material_search.SearchIndex or not verified():
        index.add_entry_from_context(page)
        return
    search = page.meta.get("search") or {}
    if search.get("exclude"):
        return
    parser = SectionParser()
    parser.feed(page.content)
    parser.close()
    for section in parser.data:
        if not section.is_excluded():
            index.create_entry_for_section(section, page.toc, page.url, page)
