"""The fast table conversion (``sparkreport.site.fast_markdown``) gives the HTML the stock
conversion gives, byte for byte, and the anchor ids MkDocs collects: on every generated page of
the repository's site with the Phase 1 per-run data, on generated tables of every shape, and
with extensions it does not know (where it steps aside)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import markdown
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown.extensions.tables import TableProcessor
from markdown.util import AtomicString
from mkdocs.structure.pages import _RawHTMLPreprocessor

from sparkreport.render import RenderOptions, render
from sparkreport.site import fast_markdown
from sparkreport.site.mkdocs_site import FAST_EXTENSION, markdown_extensions

REPO = Path(__file__).resolve().parents[1]
#: The extensions of this repository's site (tables, toc with permalinks) and the ones the
#: builder adds, without the fast one.
STOCK: list[Any] = [e for e in markdown_extensions(["tables", {"toc": {"permalink": True}}, "attr_list"])
                    if e != FAST_EXTENSION]


def convert(text: str, extensions: list[Any], fast: bool) -> tuple[str, set[str], Any]:
    """Convert as MkDocs' ``Page.render`` does; the HTML, the anchor ids and the instance."""
    names = [e if isinstance(e, str) else next(iter(e)) for e in extensions]
    configs = {next(iter(e)): e[next(iter(e))] for e in extensions if isinstance(e, dict)}
    md = markdown.Markdown(extensions=names + ([FAST_EXTENSION] if fast else []), extension_configs=configs)
    raw = _RawHTMLPreprocessor()
    raw._register(md)
    return md.convert(text), raw.present_anchor_ids, md


def same_both_ways(text: str, extensions: list[Any] = STOCK) -> Any:
    stock, stock_ids, _ = convert(text, extensions, fast=False)
    fast, fast_ids, md = convert(text, extensions, fast=True)
    assert fast == stock
    assert fast_ids == stock_ids
    return md


@pytest.fixture(scope="module")
def generated_pages(tmp_path_factory: pytest.TempPathFactory, phase1_store: Path) -> list[Path]:
    """Every page of this repository's site with the Phase 1 per-run data (runs pages with raw
    tables, results pages with pipe tables in details blocks)."""
    root = tmp_path_factory.mktemp("fast")
    runs = root / "runs"
    shutil.copytree(REPO / "runs", runs)
    shutil.copytree(phase1_store / "phase1", runs / "phase1")
    render(RenderOptions(runs_dir=runs, project_root=REPO, docs_dir=root / "docs"))
    return sorted((root / "docs").rglob("*.md"))


def test_every_generated_page_converts_the_same(generated_pages: list[Path]) -> None:
    atomic = stashed = 0
    for page in generated_pages:
        text = page.read_text(encoding="utf-8")
        md = same_both_ways(text)
        stashed += md.preprocessors["sparkreport_raw_tables"].stashed
        atomic += sum(isinstance(cell.text, AtomicString) for cell in _cells(text))
    # The fast paths were taken (a change that turns them off would otherwise pass unseen).
    print(f"{len(generated_pages)} pages: {stashed} raw tables stashed, {atomic} plain cells")
    assert stashed >= 4
    assert atomic >= 1000


def _cells(text: str) -> list[Any]:
    md = markdown.Markdown(extensions=["tables", FAST_EXTENSION])
    root = md.parser.parseDocument(md.preprocessors["normalize_whitespace"].run(text.split("\n"))).getroot()
    return list(root.iter("td"))


PLAIN = st.text(alphabet="abc 019.,%–-—()+:", min_size=0, max_size=12)
TRICKY = st.text(alphabet="ab *_`\\[]<>&!|#{}:=~^'\"\t", min_size=0, max_size=12)
CELL = st.one_of(PLAIN, TRICKY, st.sampled_from(["**bold**", "`code`", "[l](x.md)", "&amp;", "a_b_c",
                                                "<b>x</b>", "\\|", "*published*", "1,243.96", "—"]))


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(CELL, min_size=3, max_size=3), min_size=0, max_size=6),
       align=st.lists(st.sampled_from(["---", ":--", "--:", ":-:"]), min_size=3, max_size=3),
       indent=st.sampled_from(["", "    "]))
def test_pipe_tables_convert_the_same(rows: list[list[str]], align: list[str], indent: str) -> None:
    lines = ["| A | B | C |", "|" + "|".join(align) + "|", *("| " + " | ".join(r) + " |" for r in rows)]
    head = '??? note "Other"\n\n' if indent else ""
    same_both_ways(head + "\n".join(indent + line for line in lines) + "\n\nAfter.\n")


@settings(max_examples=300, deadline=None)
@given(row=st.text(alphabet="ab |`\\*-:", min_size=0, max_size=30))
def test_a_row_is_split_where_the_stock_split_splits_it(row: str) -> None:
    """A row without a backtick or a backslash is split at every pipe; the stock split gives the
    same cells for any row."""
    md = markdown.Markdown(extensions=["tables", FAST_EXTENSION])
    fast = md.parser.blockprocessors["table"]
    assert isinstance(fast, fast_markdown.PlainCellTables)
    stock = TableProcessor(md.parser, fast.config)
    assert fast._split(row) == stock._split(row)


LINK_TEXT = st.text(alphabet="aZ09 .:+,/-_*`&<[]()#\\", min_size=0, max_size=10)
LINK_TARGET = st.text(alphabet="aZ09./#- ()\"'<>&_", min_size=0, max_size=12)


@settings(max_examples=200, deadline=None)
@given(links=st.lists(st.tuples(LINK_TEXT, LINK_TARGET), min_size=1, max_size=4),
       tail=st.sampled_from(["", " x", " · [b](c.md)"]))
def test_link_cells_convert_the_same(links: list[tuple[str, str]], tail: str) -> None:
    """A cell that is one link: the element made directly when text and target are plain, the
    link pattern's otherwise — the same HTML either way."""
    rows = [f"| [{text}]({target}){tail} | 1 |" for text, target in links]
    same_both_ways("| Model | N |\n|---|---|\n" + "\n".join(rows) + "\n")


def test_a_plain_link_cell_is_made_without_the_inline_pass() -> None:
    text = ("| Model | N |\n|---|---|\n| [gpt-oss-120b](synth-1.0/index.md#gpt-oss-120b--docker) | 1 |\n"
            "| [Llama 3.1, 8B: v2+](../x/index.md) | 2 |\n")
    same_both_ways(text)
    anchors = [cell.find("a") for cell in _cells(text) if cell.find("a") is not None]
    assert [(a.get("href"), a.text, isinstance(a.text, AtomicString)) for a in anchors] == [
        ("synth-1.0/index.md#gpt-oss-120b--docker", "gpt-oss-120b", True), ("../x/index.md", "Llama 3.1, 8B: v2+", True)]


RAW_CELL = st.one_of(PLAIN, st.sampled_from(['<a href="x/run.json">run.json</a>', "<code>x</code>", "&amp;", "*em*"]))


@settings(max_examples=100, deadline=None)
@given(cells=st.lists(RAW_CELL, min_size=1, max_size=6),
       before=st.sampled_from(["Text.\n\n", "Text.\n", "", "```\n", "- item\n\n", "    code\n\n"]),
       after=st.sampled_from(["\n\nText.\n", "\nText.\n", "", "\n```\n", " tail\n\n"]),
       attrs=st.sampled_from(["", ' class="x"', ' id="runs"', ' markdown="1"']))
def test_raw_tables_convert_the_same(cells: list[str], before: str, after: str, attrs: str) -> None:
    body = "".join(f"<tr><td>{cell}</td></tr>\n" for cell in cells)
    same_both_ways(f"{before}<table{attrs}>\n<tbody>\n{body}</tbody>\n</table>{after}")
    same_both_ways(f"{before}<table{attrs}><tr><td>{cells[0]}</td></tr></table>{after}")


def test_a_table_inside_a_code_fence_or_another_table_stays_put() -> None:
    same_both_ways("```\n<table>\n<tr><td>a</td></tr>\n</table>\n```\n")
    same_both_ways("<table>\n<tr><td><table><tr><td>a</td></tr></table></td></tr>\n</table>\n")
    same_both_ways("<table>\n<tr><td>never closed</td></tr>\n")


@pytest.mark.parametrize("extra", ["abbr", "pymdownx.emoji", "smarty", "md_in_html", "footnotes"])
def test_unknown_extensions_make_it_step_aside(extra: str) -> None:
    text = ("*[HTML]: Hyper Text\n\n| A | B |\n|---|---|\n| HTML :smile: \"q\" | 1 |\n\n"
            "<table>\n<tr><td>HTML</td></tr>\n</table>\n\nText[^1].\n\n[^1]: Note.\n")
    md = same_both_ways(text, [*STOCK, extra])
    if extra in {"abbr", "pymdownx.emoji", "smarty"}:
        assert not fast_markdown.plain_cells_safe(md)


def test_the_builder_lists_it_last_after_the_projects_own() -> None:
    assert markdown_extensions(None)[-1] == FAST_EXTENSION
    assert markdown_extensions(["abbr"])[-1] == FAST_EXTENSION
    assert markdown_extensions(["abbr", FAST_EXTENSION]).count(FAST_EXTENSION) == 1


def test_a_registry_it_cannot_read_makes_it_step_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python-Markdown whose Registry keeps its names elsewhere: the stock conversion, no error."""
    assert fast_markdown._names(object()) == [fast_markdown.UNREADABLE]
    monkeypatch.setattr(fast_markdown, "_names", lambda _registry: [fast_markdown.UNREADABLE])
    md = same_both_ways("| A | B |\n|---|---|\n| plain | 1 |\n\n<table>\n<tr><td>x</td></tr>\n</table>\n")
    assert not fast_markdown.plain_cells_safe(md)
    assert md.preprocessors["sparkreport_raw_tables"].stashed == 0
