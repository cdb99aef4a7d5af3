"""The faster search sections (``sparkreport.site.fast_search``) are Material's: the same
sections, titles and texts as Material's own parser on every generated page of the repository's
site and on generated HTML of every shape its handlers distinguish, the same index entries
through :func:`add_entries`, and the plugin's own method wherever the plugin is not the one
checked. (A whole site built with and without conversion workers, the one path using it, is
compared in ``tests/test_parallel.py``.)"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import markdown
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from material import __version__ as material_version
from material.plugins.search import plugin as material_search
from mkdocs.structure.toc import get_toc

from sparkreport.render import RenderOptions, render
from sparkreport.site import fast_search
from sparkreport.site.mkdocs_site import markdown_extensions

REPO = Path(__file__).resolve().parents[1]
EXTENSIONS: list[Any] = markdown_extensions(["tables", {"toc": {"permalink": True}}, "attr_list",
                                             "admonition", "pymdownx.details"])


def sections(parser_class: type, html: str) -> list[tuple[Any, ...]]:
    parser = parser_class()
    parser.feed(html)
    parser.close()
    return [(s.el.tag, dict(s.el.attrs), s.depth, s.id, list(s.title), list(s.text), s.is_excluded())
            for s in parser.data]


def same_sections(html: str) -> list[tuple[Any, ...]]:
    try:
        stock = sections(material_search.Parser, html)
    except ValueError:  # Material's own error (an end tag whose start it did not keep): the same one
        with pytest.raises(ValueError):
            sections(fast_search.SectionParser, html)
        return []
    assert sections(fast_search.SectionParser, html) == stock
    return stock


def convert(text: str) -> tuple[str, Any]:
    """The page's HTML and table of contents, as MkDocs makes them."""
    names = [e if isinstance(e, str) else next(iter(e)) for e in EXTENSIONS]
    configs = {next(iter(e)): e[next(iter(e))] for e in EXTENSIONS if isinstance(e, dict)}
    md = markdown.Markdown(extensions=names, extension_configs=configs)
    html = md.convert(text)
    return html, get_toc(getattr(md, "toc_tokens", []))


@pytest.fixture(scope="module")
def generated_pages(tmp_path_factory: pytest.TempPathFactory, phase1_store: Path) -> list[Path]:
    """Every page of this repository's site with the Phase 1 per-run data."""
    root = tmp_path_factory.mktemp("search")
    runs = root / "runs"
    shutil.copytree(REPO / "runs", runs)
    shutil.copytree(phase1_store / "phase1", runs / "phase1")
    render(RenderOptions(runs_dir=runs, project_root=REPO, docs_dir=root / "docs"))
    return sorted((root / "docs").rglob("*.md"))


def entries(index_of: Any, html: str, toc: Any, meta: dict[str, Any], fast: bool) -> list[dict[str, Any]]:
    index = material_search.SearchIndex(lang=["en"], separator=r"[\s\-]+", pipeline=[], fields={})
    page = SimpleNamespace(content=html, toc=toc, url="results/x/", title="A page", meta=meta)
    if fast:
        index_of(index, page)
    else:
        index.add_entry_from_context(page)
    return list(index.entries)


def test_every_generated_page_gives_the_same_sections_and_entries(generated_pages: list[Path]) -> None:
    assert fast_search.verified() or material_version not in fast_search.VERIFIED
    total = 0
    for path in generated_pages:
        html, toc = convert(path.read_text(encoding="utf-8"))
        total += len(same_sections(html))
        for meta in ({}, {"search": {"boost": 2}}, {"search": {"exclude": True}}, {"title": "Own title"}):
            assert entries(fast_search.add_entries, html, toc, meta, fast=True) == \
                entries(None, html, toc, meta, fast=False), path
    assert len(generated_pages) >= 10 and total >= 40


def test_the_verified_release_is_the_installed_one_when_its_version_is_listed() -> None:
    """The digest kept for a release is its file's: a Material of a listed version takes the
    fast path (an unlisted one gets the plugin's own method, as the next test shows)."""
    if material_version in fast_search.VERIFIED:
        assert fast_search.verified()
    assert all(len(digest) == 64 for digest in fast_search.VERIFIED.values())


def test_an_index_it_was_not_checked_against_gets_its_own_method(monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[Any] = []

    class OtherIndex:
        def add_entry_from_context(self, page: Any) -> None:
            called.append(page)

    page = SimpleNamespace(content="<h1 id='a'>A</h1><p>b</p>", toc=[], url="", title="", meta={})
    fast_search.add_entries(OtherIndex(), page)
    assert called == [page]

    monkeypatch.setattr(fast_search, "VERIFIED", {})  # Material's own index, of a release not checked
    fed: list[str] = []
    monkeypatch.setattr(material_search.SearchIndex, "add_entry_from_context",
                        lambda _self, page: fed.append(page.content))
    fast_search.add_entries(material_search.SearchIndex(), page)
    assert fed == [page.content]


# Generated HTML: the tags the handlers treat apart (headings with and without ids, kept tags,
# skipped ones, void ones, excluded blocks, permalinks, preformatted text), nested and unclosed.
TEXT = st.text(alphabet="ab <>&\n\t  é", max_size=8)
TAGS = ["h1", "h2", "h3", "p", "code", "pre", "li", "ul", "sub", "div", "span", "table", "td", "a",
        "script", "style", "object", "br", "img", "hr"]


@st.composite
def html_fragments(draw: st.DrawFn) -> str:
    parts: list[str] = []
    open_tags: list[str] = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["open", "open", "close", "close", "text", "stray"]))
        if kind == "open":
            tag = draw(st.sampled_from(TAGS))
            attributes = draw(st.sampled_from(["", ' id="s1"', ' id="s2"', " data-search-exclude",
                                               ' class="headerlink"', ' class="linenodiv"', ' class="x"']))
            parts.append(f"<{tag}{attributes}>")
            open_tags.append(tag)
        elif kind == "close" and open_tags:
            parts.append(f"</{open_tags.pop()}>")
        elif kind == "stray":
            parts.append(f"</{draw(st.sampled_from(TAGS))}>")
        else:
            parts.append(draw(TEXT))
    if draw(st.booleans()):
        parts.extend(f"</{tag}>" for tag in reversed(open_tags))
    return "".join(parts)


@settings(max_examples=400, deadline=None)
@given(html_fragments())
def test_generated_html_gives_the_same_sections(html: str) -> None:
    same_sections(html)


@pytest.mark.parametrize("html", [
    '<h2 id="a">A<a class="headerlink" href="#a">¶</a></h2><p>x</p>',  # a permalink's text left out
    '<div data-search-exclude><p>hidden</p><div>still</div></div><p>after</p>',  # a div ends the skip
    "<pre><code>a\n\n  b</code></pre><p>  </p><p>c\nd</p>",  # whitespace kept in pre, collapsed outside
    '<p>x</p><h3 id="b">B</h3><script>var s = "<p>";</script><p>y</p>',  # preface, then a section
    "<div><h2 id='n'>Nested</h2><p>in</p></div><p>out</p>",  # a heading nested in another element
    "<ul><li> </li><li>kept</li></ul>",  # an empty item removed with its tags
])
def test_the_cases_the_handlers_treat_apart(html: str) -> None:
    assert same_sections(html)
