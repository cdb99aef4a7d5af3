"""A page's search entries parsed piece by piece, each piece's sections kept by its bytes.

Material's search plugin indexes a page by parsing its whole HTML (``Parser``, an
``HTMLParser``, in pure Python) into sections, one for each heading, and that parse is about half of
what converting a generated page costs. A new run changes a few figures on each page it
touches; most of each page's HTML is what it was. So the HTML is cut into pieces before each
heading with an id that starts a line (:func:`pieces`), and one of Material's own parsers reads
them in order: where it stands outside every element when a piece starts (the state any parse
of the whole page would be in there), a piece kept from an earlier build is not parsed again —
its sections, as that parse left them, are put in its place (:func:`parse_sections`). A piece
is kept only when its parse started and ended outside every element, with nothing buffered and
nothing marked to skip, and left every earlier section as it was: then what it adds depends on
its bytes alone. The entries are made from the sections as Material makes them
(:func:`add_entries`). The index is the same byte for byte (``tests/test_search_pieces.py``
compares the sections with Material's parse of the whole page, for generated pages and for
HTML built to break the rule).

The kept pieces live in ``build/cache/`` (:data:`PIECES_FILE`): each page's pieces by the
page's URL, and each piece's sections (pickled) by the piece's digest; what a build indexed
replaces what was kept for its pages, and pieces no page names any more are dropped.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: The file of kept pieces, in the build's cache folder.
PIECES_FILE = "search-pieces.pickle"
#: Where a page's HTML is cut: before a heading that starts a line and names an id.
CUT = re.compile(r"\n(?=<h[1-6]\s[^>]*?\bid=)")
#: The kept file's layout (part of its salt: a file of another layout is not read).
LAYOUT = 2


def available(index: Any) -> bool:
    """Whether ``index`` is Material's search index, whose parser and entries this module knows."""
    try:
        from material.plugins.search.plugin import Parser, SearchIndex  # noqa: F401 (the parser used below)
    except ImportError:
        return False
    return type(index) is SearchIndex and callable(getattr(index, "create_entry_for_section", None))


def pieces(html: str) -> list[str]:
    """``html`` cut before each heading with an id at the start of a line (the newline stays
    with the piece before): the pieces, joined, are ``html``."""
    starts = [match.end() for match in CUT.finditer(html)]
    bounds = [0, *starts, len(html)]
    return [html[begin:end] for begin, end in zip(bounds, bounds[1:], strict=False) if end > begin]


def digest(piece: str) -> str:
    """What a piece is kept by."""
    from sparkreport.cache import sha256_bytes

    return sha256_bytes(piece.encode("utf-8"))


def parse_sections(html: str, kept: Mapping[str, bytes], found: dict[str, bytes]) -> list[Any]:
    """The sections Material's ``Parser`` makes of ``html``, taking from ``kept`` the pieces
    parsed before (see the module docstring); each piece that may be kept is added to
    ``found``, parsed now or taken."""
    from material.plugins.search.plugin import Parser

    parser = Parser()
    bare = set(parser.skip)
    for piece in pieces(html):
        if not (parser.data and not parser.context and not parser.rawdata and parser.skip == bare):
            parser.feed(piece)
            continue
        key = digest(piece)
        frozen = kept.get(key)
        if frozen is not None:
            sections, current = pickle.loads(frozen)  # noqa: S301 — the build's own cache
            parser.data.extend(sections)
            parser.section = sections[current]
            found[key] = frozen
            continue
        before, last = len(parser.data), parser.section
        marks = (len(last.text), len(last.title), last.depth) if last is not None else None
        parser.feed(piece)
        added = parser.data[before:]
        untouched = last is not None and (len(last.text), len(last.title), last.depth) == marks
        if untouched and added and not parser.context and not parser.rawdata and parser.skip == bare:
            current = next((i for i, section in enumerate(added) if section is parser.section), None)
            if current is not None:
                found[key] = pickle.dumps((added, current), protocol=pickle.HIGHEST_PROTOCOL)
    parser.close()
    return list(parser.data)


def add_entries(index: Any, page: Any, kept: Mapping[str, bytes], found: dict[str, bytes]) -> None:
    """Material's ``SearchIndex.add_entry_from_context(page)``, its parse made by
    :func:`parse_sections`."""
    search = page.meta.get("search") or {}
    if search.get("exclude"):
        return
    for section in parse_sections(page.content, kept, found):
        if not section.is_excluded():
            index.create_entry_for_section(section, page.toc, page.url, page)


def _salt() -> str:
    """What kept pieces are valid for: this module's layout and Material's version (its parser)."""
    import material

    return f"search-pieces {LAYOUT} material {getattr(material, '__version__', '?')}"


class KeptPieces:
    """The pieces kept in ``path`` (none when it is missing, unreadable, or from another
    Material): :attr:`pieces` by digest, :attr:`pages` each page's digests by its URL."""

    def __init__(self, path: Path | None):
        from sparkreport.cache import read_cache_pickle

        self.path = path
        self.pieces: dict[str, bytes]
        self.pages: dict[str, list[str]]
        self.pieces, self.pages = read_cache_pickle(path, _salt(), "pieces", "pages")

    def save(self, indexed: Mapping[str, dict[str, bytes]], urls: set[str]) -> None:
        """Keep what this build indexed (each page's pieces by its URL) and, for the other pages
        of the site (``urls``), what was kept; written only when that changed."""
        from sparkreport.cache import write_cache_pickle

        if self.path is None:
            return
        pages = {url: digests for url, digests in self.pages.items() if url in urls and url not in indexed}
        pieces = {key: self.pieces[key] for digests in pages.values() for key in digests if key in self.pieces}
        for url, found in indexed.items():
            pages[url] = list(found)
            pieces.update(found)
        if pages == self.pages and pieces.keys() == self.pieces.keys():
            return
        write_cache_pickle(self.path, _salt(), "pieces", pieces, pages=pages)
        self.pages, self.pieces = pages, pieces
