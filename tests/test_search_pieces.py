"""The search entries parsed piece by piece (sparkreport.site.search_pieces) are Material's
parse of the whole page: for any HTML, with any pieces kept from other HTML."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from material.plugins.search.plugin import Parser, SearchIndex

from sparkreport.site import search_pieces


def whole(html: str) -> list[Any]:
    parser = Parser()
    parser.feed(html)
    parser.close()
    return parser.data


def shape(sections: list[Any]) -> list[tuple[Any, ...]]:
    return [(s.el.tag, sorted(s.el.attrs.items()), s.el.is_excluded(), s.id, s.depth, s.title, s.text)
            for s in sections]


TEXT = st.sampled_from(["plain words", "a &amp; b", "x &lt; 3", "tail &am", "  ", "ünïcode", "1,234.5 ms"])


#: Blocks made of their words alone. "fake": cut before, as if it had an id, but it has none —
#: its text is the section before's.
SIMPLE = {
    "fake": '<h2 title="see id=x">{words}</h2>',
    "p": "<p>{words} <code>{more}</code></p>",
    "table": "<table>\n<tr><th>{words}</th></tr>\n<tr><td>{more}</td></tr>\n</table>",
    "script": "<script>var x = '{words}';</script>",
    "exclude": "<div data-search-exclude>{words}</div>",
    "pre": "<pre><code>{words}\n  {more}</code></pre>",
    "list": "<ul>\n<li>{words}</li>\n<li></li>\n</ul>",
    "text": "{words}",
}


@st.composite
def blocks(draw: Any, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["h", "hx", "fake", "p", "table", "script", "exclude", "div", "pre", "list", "text"]
                                if depth < 2 else ["h", "p", "text"]))
    words = draw(TEXT)
    if kind == "h":
        level, name = draw(st.integers(1, 6)), draw(st.sampled_from(["a", "b", "c-1", "results"]))
        link = draw(st.sampled_from(["", f'<a class="headerlink" href="#{name}">¶</a>']))
        return f'<h{level} id="{name}">{words}{link}</h{level}>'
    if kind == "hx":  # a heading without an id: no section of its own
        return f"<h{draw(st.integers(1, 6))}>{words}</h{draw(st.integers(1, 6))}>"
    if kind in SIMPLE:
        return SIMPLE[kind].format(words=words, more=draw(TEXT))
    inner = draw(st.lists(blocks(depth + 1), max_size=4))  # a div holding headings (an admonition)
    return '<div class="admonition">\n' + "\n".join(inner) + "\n</div>"


#: Blocks, most on lines of their own (as Python-Markdown writes them), some run together.
PAGES = st.lists(st.tuples(blocks(), st.sampled_from(["\n", "\n", "\n", ""])), max_size=12).map(
    lambda parts: "".join(block + separator for block, separator in parts) + "\n")


@settings(max_examples=400, deadline=None)
@given(earlier=PAGES, html=PAGES)
# A piece cut before a heading that only looks as if it had an id: its text belongs to the
# section before, so the piece is never kept.
@example(earlier="", html='<h1 id="t">T</h1>\n<p>x</p>\n<h2 title="see id=x">words</h2><h2 id="a">A</h2>\n')
# A piece whose parse ends inside an element (an admonition opened on its heading's line).
@example(earlier="", html='<h1 id="t">T</h1>\n<h2 id="a">A</h2><div class="admonition">\n<h3 id="b">B</h3>\n'
                          '</div>\n<p>after</p>\n')
# A piece kept from a page where it stood outside every element, met inside an admonition.
@example(earlier='<h1 id="t">T</h1>\n<h2 id="a">A</h2>\n<p>x</p>\n<h2 id="b">B</h2>\n',
         html='<h1 id="t">T</h1>\n<div class="admonition">\n<h2 id="a">A</h2>\n<p>x</p>\n<h2 id="b">B</h2>\n</div>\n')
def test_the_sections_are_materials_parse_of_the_whole_page(earlier: str, html: str) -> None:
    """Whatever was kept (pieces of another page, of the same page, nothing), the sections are
    those Material's parser makes of the whole page; a piece kept is one whose parse depends on
    its bytes alone."""
    kept: dict[str, bytes] = {}
    search_pieces.parse_sections(earlier, {}, kept)
    search_pieces.parse_sections(html, {}, kept)
    for source in ({}, kept):
        found: dict[str, bytes] = {}
        assert shape(search_pieces.parse_sections(html, source, found)) == shape(whole(html))
        for key, frozen in found.items():
            piece = next(p for p in search_pieces.pieces(html) if search_pieces.digest(p) == key)
            sections, _current = pickle.loads(frozen)
            parser = Parser()
            parser.feed("<h1 id=\"first\">x</h1>\n" + piece)
            parser.close()
            assert shape(sections) == shape(parser.data[1:])


def test_pieces_cut_before_headings_with_an_id_and_join_to_the_page() -> None:
    html = '<p>a</p>\n<h2 id="x">X</h2>\n<p>b</p>\n<h3>no id</h3>\n  <h2 id="y">indented</h2>\n<h4 class="c" id="z">Z</h4>\n'
    assert search_pieces.pieces(html) == [
        "<p>a</p>\n", '<h2 id="x">X</h2>\n<p>b</p>\n<h3>no id</h3>\n  <h2 id="y">indented</h2>\n',
        '<h4 class="c" id="z">Z</h4>\n']
    assert "".join(search_pieces.pieces(html)) == html
    assert search_pieces.pieces("") == []


class FakePage:
    def __init__(self, content: str, url: str, meta: dict[str, Any] | None = None):
        self.content, self.url, self.meta, self.toc, self.title = content, url, meta or {}, [], "Page"


def test_entries_and_the_kept_file(tmp_path: Path) -> None:
    """The entries are those of Material's own add_entry_from_context; what a build indexed is
    kept for the next one, with the other pages' pieces, and pieces of pages gone are dropped."""
    html = '<h1 id="t">Title</h1>\n<p>one</p>\n<h2 id="a">A</h2>\n<p>two &amp; three</p>\n<h2 id="b">B</h2>\n<p>x</p>\n'
    stock, ours = SearchIndex(), SearchIndex()
    page = FakePage(html, "results/")
    stock.add_entry_from_context(page)
    found: dict[str, bytes] = {}
    search_pieces.add_entries(ours, page, {}, found)
    assert ours.entries == stock.entries and len(found) == 2  # the pieces after the first
    excluded = SearchIndex()
    search_pieces.add_entries(excluded, FakePage(html, "runs/", {"search": {"exclude": True}}), {}, {})
    assert excluded.entries == []
    path = tmp_path / "cache" / search_pieces.PIECES_FILE
    kept = search_pieces.KeptPieces(path)
    assert kept.pieces == {} and kept.pages == {}
    kept.save({"results/": found, "gone/": {"k": b"x"}}, {"results/", "gone/", "home/"})
    again = search_pieces.KeptPieces(path)
    assert again.pieces.keys() == found.keys() | {"k"} and set(again.pages) == {"results/", "gone/"}
    again.save({}, {"results/", "home/"})  # gone/ left the site; results/ reused
    last = search_pieces.KeptPieces(path)
    assert last.pieces.keys() == found.keys() and set(last.pages) == {"results/"}
    taken: dict[str, bytes] = {}
    ours = SearchIndex()
    search_pieces.add_entries(ours, page, last.pieces, taken)
    assert ours.entries == stock.entries and taken == found
