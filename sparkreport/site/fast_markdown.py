"""A Markdown extension that converts the generated pages' big tables faster, to the same HTML.

At 10 000 runs the generated pages hold about 250 000 table cells, and Python-Markdown spends
most of a page's conversion on them: every cell's text goes through every inline pattern
(emphasis, links, code, entities …), and every raw ``<table>`` block is parsed twice by an
``HTMLParser`` (once by MkDocs for anchor ids, once to stash it). For the cells and blocks where
none of that can change anything, this extension skips it:

* **Plain cells.** A pipe table's cell whose text has none of the characters an inline pattern
  starts with (``\\ ` [ < & * _``) is marked atomic, so the inline pass leaves it as it is — which
  is what the pass would have left. A cell that is one link and nothing else, with plain text
  and a plain target (``[gpt-oss-120b](synth-1.0/index.md#gpt-oss-120b--docker)``: letters,
  digits and a few punctuation marks), gets the ``<a>`` element the link pattern would have made
  (MkDocs then rewrites and checks its target as any other link's). Only when every inline
  pattern is one of Python-Markdown's
  own (:data:`CORE_INLINE`) and every tree processor one whose behaviour on atomic text we know
  (:data:`KNOWN_TREE`): a project that adds emoji, abbreviations or smart quotes gets the
  stock conversion.
* **Rows without code.** A row with no backtick and no backslash is split at every pipe, which
  is what the stock split's search for code spans and escaped pipes finds in it.
* **Raw tables.** A block from a line starting ``<table`` to a line ending ``</table>``, at the
  left margin, between blank lines, with one table and no ``id``/``name``/``markdown``
  attribute, is stashed as is — what the raw-HTML preprocessor would have stored — before the
  two parsers run. Only when every preprocessor is one we know (:data:`KNOWN_PRE`).

The HTML is the same byte for byte (``tests/test_fast_markdown.py`` converts every page of the
test projects both ways); the MkDocs builder lists this extension after the project's own.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as etree
from typing import Any

from markdown import Markdown
from markdown.extensions import Extension
from markdown.extensions.tables import TableProcessor
from markdown.preprocessors import Preprocessor
from markdown.util import AtomicString

#: Python-Markdown's own inline patterns (``markdown.inlinepatterns``), by registered name.
CORE_INLINE = frozenset({
    "backtick", "escape", "reference", "link", "image_link", "image_reference", "short_reference",
    "short_image_ref", "autolink", "automail", "linebreak", "html", "entity", "not_strong",
    "em_strong", "em_strong2"})
#: A character any of :data:`CORE_INLINE` needs to match (``linebreak`` needs a newline, which a
#: cell cannot hold).
INLINE_START = re.compile(r"[\\`\[<&*_]")
#: A cell that is one link with plain text and a plain target (no escapes, emphasis, entities,
#: spaces or quotes in the target, no title): the link pattern's element is made directly.
LINK_CELL = re.compile(r"\[([A-Za-z0-9][A-Za-z0-9 .:+,/-]*)\]\(([A-Za-z0-9./#-]+)\)")
#: Tree processors that treat an atomic cell as the inline pass would have left it: the inline
#: pass itself, Python-Markdown's, and the ones MkDocs adds to every page.
KNOWN_TREE = frozenset({
    "inline", "prettify", "unescape", "toc", "attr_list",
    "mkdocs_extract_anchors", "relpath", "mkdocs_extract_title"})
#: Preprocessors that leave a raw table alone, or stash it exactly as :class:`RawTables` does.
KNOWN_PRE = frozenset({
    "normalize_whitespace", "fenced_code_block", "fenced_raw_block", "mkdocs_raw_html", "html_block",
    "sparkreport_raw_tables"})
#: A raw table with one of these is left to the stock parsers (anchor ids MkDocs collects;
#: ``md_in_html``'s Markdown inside HTML; a nested table).
RAW_UNSAFE = re.compile(r"""\s(?:id|name|markdown)\s*=|<table[\s>].*<table[\s>]""", re.DOTALL | re.IGNORECASE)
#: Characters the stash and the placeholders use (never in a source the stock parsers read).
PLACEHOLDER_CHARS = re.compile("[\x02\x03]")


#: Stands for the names of a registry this module cannot read: no allowlist holds it, so the
#: extension steps aside.
UNREADABLE = "?"


def _names(registry: Any) -> list[str]:
    """The registered names (Python-Markdown's Registry lists them only in its ``_priority``;
    a version without it makes the fast paths step aside, never fail the build)."""
    try:
        return [item.name for item in registry._priority]
    except (AttributeError, TypeError):
        return [UNREADABLE]


def plain_cells_safe(md: Markdown) -> bool:
    """Whether marking a plain cell atomic changes nothing for this Markdown instance."""
    inline = md.inlinePatterns
    return (all(name in CORE_INLINE and type(inline[name]).__module__ == "markdown.inlinepatterns"
                for name in _names(inline))
            and all(name in KNOWN_TREE for name in _names(md.treeprocessors)))


class PlainCellTables(TableProcessor):
    """Python-Markdown's table processor; plain cells are marked atomic (see the module)."""

    _safe: bool | None = None

    def _split(self, row: str) -> list[str]:
        # Without a backtick or a backslash, the stock split's pattern finds only pipes, none of
        # them inside a code span: every pipe splits (about half of a big table's conversion).
        if "`" not in row and "\\" not in row:
            return row.split("|")
        return super()._split(row)

    def _build_row(self, row: str, parent: Any, align: Any) -> None:
        super()._build_row(row, parent, align)
        if self._safe is None:
            self._safe = plain_cells_safe(self.parser.md)
        if self._safe:
            for cell in parent[-1]:
                text = cell.text
                if not text:
                    continue
                if INLINE_START.search(text) is None:
                    cell.text = AtomicString(text)
                elif text[0] == "[" and (link := LINK_CELL.fullmatch(text)) is not None:
                    anchor = etree.SubElement(cell, "a")
                    anchor.set("href", link.group(2))
                    anchor.text = AtomicString(link.group(1))
                    cell.text = None


class RawTables(Preprocessor):
    """Stashes raw ``<table>`` blocks as the raw-HTML preprocessor would (see the module)."""

    #: Blocks this instance stashed (for the tests: the fast path was taken).
    stashed = 0

    def run(self, lines: list[str]) -> list[str]:
        if not any(line.startswith("<table") for line in lines) or not set(
                _names(self.md.preprocessors)) <= KNOWN_PRE:
            return lines
        out: list[str] = []
        i, count = 0, len(lines)
        while i < count:
            line = lines[i]
            if line.startswith(("<table>", "<table ")) and (not out or not out[-1].strip()):
                end = i
                while end < count and not lines[end].endswith("</table>"):
                    end += 1
                if end < count and (end + 1 == count or not lines[end + 1].strip()):
                    block = "\n".join(lines[i:end + 1])
                    if RAW_UNSAFE.search(block) is None and PLACEHOLDER_CHARS.search(block) is None:
                        out += ["", self.md.htmlStash.store(block + "\n"), ""]
                        self.stashed += 1
                        i = end + 1
                        continue
            out.append(line)
            i += 1
        return out


class FastMarkdown(Extension):
    """Registers :class:`PlainCellTables` in place of the ``tables`` extension's processor (when
    that extension is loaded) and :class:`RawTables` before MkDocs' and Markdown's HTML parsers."""

    def extendMarkdown(self, md: Markdown) -> None:
        blocks = md.parser.blockprocessors
        if "table" in blocks and type(blocks["table"]) is TableProcessor:
            blocks.register(PlainCellTables(md.parser, blocks["table"].config), "table", 75)
        md.preprocessors.register(RawTables(md), "sparkreport_raw_tables", 22)


def makeExtension(**kwargs: Any) -> FastMarkdown:  # noqa: N802 (Markdown's entry point name)
    return FastMarkdown(**kwargs)
