"""MkDocs converts the pages' Markdown in several processes.

MkDocs reads and converts every page in one loop, in one process: at 10 000 runs (1 081
pages) that is about two thirds of its build. :class:`ParallelPagesPlugin`, registered by
:func:`sparkreport.site.mkdocs_site.build_site`, runs after the nav is known (``on_nav``):
it forks workers (:mod:`sparkreport.parallel`) that each read and convert a share of the pages
exactly as ``Page.render`` does, and hands the results back. MkDocs' own loop then runs as
always — every plugin event of every page, in order — except that a converted page's
``render`` only takes its result. What a conversion logs (a broken link, in strict mode an
error) is logged again in the build's process when MkDocs reaches that page, so warnings,
their order and strict mode are as in a build in one process. The site is the same byte for
byte (``tests/test_parallel.py``).

Built ahead, the same way: once every page is converted, MkDocs renders each page into the
theme's template and writes its HTML, again one page after another in one process (at 10 000
runs ~7 s of a cold build with nothing else running). When MkDocs' loop asks for its first page
(the static files and the theme's own templates are written by then, as always), forked workers
build the same pages — ``_build_page`` itself, each writing its page's HTML — and hand back
what the build's process needs of each: the search entries the search plugin's
``on_page_context`` added (carried into its index in MkDocs' order, when the loop reaches the
page) and what was logged. A page a worker could not build is built by MkDocs' loop as usual,
which raises its error as a build in one process does. Only while MkDocs' ``_build_page`` is the
one this was written against (:data:`BUILD_PAGE_ARGS`) and the search index is where MkDocs or
Material keep it; at least :data:`BUILD_PAGES_PER_WORKER` pages a worker.

Indexed ahead, too: the search plugin parses each page's HTML for its index when MkDocs' loop
reaches the page (``on_page_context``: ~20 ms for a Runs page of 50 runs, pure-Python HTML
parsing), in the build's process unless the pages are built ahead. The conversion workers
index each page they convert with the same plugin's own code right after converting it; when
MkDocs' loop reaches the page, the entries are taken only if the page is still what was
indexed (its HTML, URL, title and metadata equal), else it is indexed there as always. With
Material's index and a place to keep them (a build's cache folder), a worker's parse reuses the
pieces of HTML an earlier build parsed (:mod:`sparkreport.site.search_pieces`); the build's
process keeps what the workers parsed, after the build (``on_post_build``).

Converted ahead: the pages MkDocs will convert (in a reusing build, only the modified ones),
except the blog's (its plugin changes posts' Markdown before conversion), and only when every
plugin is one whose page events we know (search, blog) and the project has no hooks — as for
:mod:`sparkreport.site.reuse`. Otherwise, below twice :data:`PAGES_PER_WORKER` pages, with one job or
without fork, MkDocs converts everything itself.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mkdocs.plugins import event_priority

if TYPE_CHECKING:
    from sparkreport.site.search_pieces import KeptPieces

#: Pages a worker converts at least (fewer than twice this: MkDocs converts them itself).
PAGES_PER_WORKER = 4
#: Shares per worker: pages differ in size by two orders of magnitude, so small shares, taken
#: in turn, keep the workers busy until the end.
SHARES_PER_WORKER = 8
#: Pages a worker builds (template and HTML) at least: a page takes ~5 ms, a fork ~50 ms.
BUILD_PAGES_PER_WORKER = 32
#: The parameters of ``mkdocs.commands.build._build_page`` this module stands in for.
BUILD_PAGE_ARGS = ("page", "config", "doc_files", "nav", "env", "dirty", "excluded")


@dataclass
class Converted:
    """What ``Page.render`` leaves on a page, as a worker computed it."""

    content: str
    toc: Any
    title: str | None
    anchors: set[str]
    #: target page's src_uri → {anchor: link as written} (None: not recorded at this log level).
    links: dict[str, dict[str, str]] | None
    records: list[logging.LogRecord] = field(default_factory=list)
    #: What the search plugin indexed of the page as converted (:class:`Indexed`), if there is one.
    indexed: Indexed | None = None


@dataclass
class Indexed:
    """A page's search entries, computed by the search plugin's own ``add_entry_from_context``
    in a conversion worker, and what they were computed from."""

    content: str
    url: str
    title: str | None
    meta: dict[str, Any]
    entries: list[Any]
    #: The pieces of its HTML that may be kept, by digest (:mod:`sparkreport.site.search_pieces`);
    #: None when the page was indexed by the search plugin's own parse.
    pieces: dict[str, bytes] | None = None

    def matches(self, page: Any) -> bool:
        return (page.content == self.content and page.url == self.url and page.title == self.title
                and page.meta == self.meta)


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        record.msg = record.getMessage()  # formatted here: arguments need not pickle
        record.args = None
        record.exc_info = record.exc_text = None
        self.records.append(record)


def _convert(page: Any, config: Any, files: Any, index: Any = None, kept: Mapping[str, bytes] | None = None
             ) -> Converted:
    """Read and convert one page as MkDocs' loop would (no plugin events), capturing its log;
    with the search plugin's ``index``, index the converted page (:class:`Indexed`), with
    ``kept`` pieces from an earlier build where the index is Material's
    (:mod:`sparkreport.site.search_pieces`)."""
    logger = logging.getLogger("mkdocs")
    capture = _Capture()
    logger.addHandler(capture)
    config._current_page = page
    try:
        page.read_source(config)
        page.render(config, files)
    finally:
        config._current_page = None
        logger.removeHandler(capture)
    links = getattr(page, "links_to_anchors", None)
    return Converted(
        content=page.content, toc=page.toc, title=page._title_from_render, anchors=set(page.present_anchor_ids),
        links=None if links is None else {target.src_uri: dict(found) for target, found in links.items()},
        records=capture.records, indexed=_index(index, page, kept) if index is not None else None)


def _index(index: Any, page: Any, kept: Mapping[str, bytes] | None = None) -> Indexed | None:
    """The entries ``index`` (the search plugin's) adds for ``page``; None if indexing it failed
    (MkDocs' loop indexes it again, and any error is raised there). With ``kept``, Material's
    parse is made piece by piece (:func:`~sparkreport.site.search_pieces.add_entries`)."""
    from sparkreport.site import search_pieces

    entries = _entries_of(index)
    assert entries is not None
    before = len(entries)
    found: dict[str, bytes] = {}
    try:
        if kept is not None:
            search_pieces.add_entries(index, page, kept, found)
        else:
            index.add_entry_from_context(page)
    except Exception:  # noqa: BLE001 — indexed again by the search plugin in MkDocs' loop
        return None
    finally:
        added = entries[before:]
        del entries[before:]
    return Indexed(content=page.content, url=page.url, title=page.title, meta=dict(page.meta), entries=added,
                   pieces=found if kept is not None else None)


def _apply(page: Any, converted: Converted, config: Any, files: Any) -> None:
    """Stands in for ``page.render`` once: the worker's result, and what it logged, logged now."""
    vars(page).pop("render", None)
    for record in converted.records:
        logging.getLogger(record.name).handle(record)
    page.content = converted.content
    page.toc = converted.toc
    page._title_from_render = converted.title
    page.present_anchor_ids = converted.anchors
    if converted.links is not None:
        page.links_to_anchors = {files.get_file_from_path(uri): found for uri, found in converted.links.items()
                                 if files.get_file_from_path(uri) is not None}


def _source_size(page: Any) -> int:
    """A page's Markdown in bytes (0 when it has no file): how long its conversion may take."""
    try:
        return os.stat(page.file.abs_src_path).st_size
    except (OSError, TypeError):
        return 0


def _shares(pages: list[Any], workers: int) -> list[list[Any]]:
    """``SHARES_PER_WORKER`` small shares a worker, each every n-th page (big pages spread)."""
    count = workers * SHARES_PER_WORKER
    return [pages[start::count] for start in range(min(len(pages), count))]


@dataclass
class Built:
    """What building one page in a worker left that the build's process needs."""

    #: The entries the search plugin added to its index for the page.
    entries: list[Any]
    records: list[logging.LogRecord] = field(default_factory=list)


def _search_index(config: Any) -> Any:
    """The search plugin's index (Material's or MkDocs' own), None without one."""
    for name in ("material/search", "search"):
        if name in config.plugins:
            return getattr(config.plugins[name], "search_index", None)
    return None


def _entries_of(index: Any) -> list[Any] | None:
    """A search index's list of entries; None when it is not where this module knows to find it."""
    entries = getattr(index, "entries", getattr(index, "_entries", None))
    return entries if isinstance(entries, list) and callable(getattr(index, "add_entry_from_context", None)) else None


def _search_entries(config: Any) -> list[Any] | None:
    """The search plugin's list of index entries (Material's or MkDocs' own); [] without a search
    plugin (nothing to carry); None when it is not where this module knows to find it."""
    if not any(name in config.plugins for name in ("material/search", "search")):
        return []
    return _entries_of(_search_index(config))


def _build_one(build_page: Any, page: Any, config: Any, doc_files: Any, nav: Any, env: Any,
               entries: list[Any]) -> Built:
    """MkDocs' ``_build_page`` of one page (its HTML written), capturing its search entries and
    its log."""
    logger = logging.getLogger("mkdocs")
    capture = _Capture()
    logger.addHandler(capture)
    before = len(entries)
    try:
        build_page(page, config, doc_files, nav, env, False, excluded=False)
    finally:
        logger.removeHandler(capture)
    return Built(entries=entries[before:], records=capture.records)


class ParallelPagesPlugin:
    """See the module docstring. ``dirty``: the build converts only modified pages."""

    def __init__(self, *, dirty: bool = False, pieces: Path | None = None) -> None:
        self.dirty = dirty
        #: Where the search entries' pieces are kept between builds (None: not kept).
        self.pieces_path = pieces
        self.kept: KeptPieces | None = None
        #: Each page indexed ahead with pieces: its URL → its pieces; the site's pages' URLs.
        self.indexed_pieces: dict[str, dict[str, bytes]] = {}
        self.urls: set[str] = set()
        self.converted = 0
        self.workers = 0
        #: The pages converted ahead, which workers may also build.
        self.pages: list[Any] = []
        #: src_uri → what a worker built (filled at MkDocs' first page); None until then.
        self.built: dict[str, Built] | None = None
        self.built_ahead = 0
        #: src_uri → the search entries a conversion worker computed; pages whose entries were taken.
        self.indexed: dict[str, Indexed] = {}
        self.indexed_ahead = 0
        self._original: Any = None
        self._index: Any = None

    @contextmanager
    def building(self) -> Iterator[None]:
        """For the block (one ``mkdocs build``), MkDocs' ``_build_page`` is :meth:`_build_page`."""
        from mkdocs.commands import build as mkdocs_build

        original = mkdocs_build._build_page
        if tuple(inspect.signature(original).parameters) != BUILD_PAGE_ARGS:
            yield  # another MkDocs: it builds every page itself
            return
        self._original = original
        mkdocs_build._build_page = self._build_page
        try:
            yield
        finally:
            mkdocs_build._build_page = original
            self.built = None
            if self._index is not None:  # the search plugin's own method again
                vars(self._index).pop("add_entry_from_context", None)
                self._index = None
            self.indexed = {}

    def _add_entry(self, add: Any, entries: list[Any], page: Any) -> None:
        """Stands in for the search index's ``add_entry_from_context``: a page indexed ahead and
        unchanged since gets those entries, any other is indexed here (``add``)."""
        indexed = self.indexed.pop(page.file.src_uri, None)
        if indexed is not None and indexed.matches(page):
            entries.extend(indexed.entries)
            self.indexed_ahead += 1
            return
        add(page)

    def _build_page(self, page: Any, config: Any, doc_files: Any, nav: Any, env: Any, dirty: bool = False,
                    excluded: bool = False) -> None:
        if self.built is None:
            self.built = self._build_ahead(config, doc_files, nav, env)
        done = self.built.pop(page.file.src_uri, None) if not excluded else None
        if done is None:
            self._original(page, config, doc_files, nav, env, dirty, excluded=excluded)
            return
        for record in done.records:
            logging.getLogger(record.name).handle(record)
        entries = _search_entries(config)
        assert entries is not None  # checked before building ahead
        entries.extend(done.entries)

    def _build_ahead(self, config: Any, doc_files: Any, nav: Any, env: Any) -> dict[str, Built]:
        """Build the pages converted ahead in workers (see the module docstring); what each left."""
        from sparkreport.parallel import fork_map, workers_for

        pages = self.pages
        workers = workers_for(len(pages), per_worker=BUILD_PAGES_PER_WORKER)
        if not workers or _search_entries(config) is None:
            return {}
        for name in sorted({page.meta.get("template", "main.html") for page in pages}):
            env.get_template(name)  # compiled once, here, rather than in every worker
        shares = _shares(pages, workers)
        original = self._original

        def build_share(index: int) -> list[tuple[str, Built]]:
            entries = _search_entries(config)
            assert entries is not None
            done = []
            for page in shares[index]:
                try:
                    built = _build_one(original, page, config, doc_files, nav, env, entries)
                except Exception:  # noqa: BLE001 — MkDocs' loop builds it again and raises it
                    break
                done.append((page.file.src_uri, built))
            return done

        built = {uri: result for share in fork_map(build_share, len(shares), workers) for uri, result in share}
        self.built_ahead = len(built)
        return built

    def on_post_build(self, *, config: Any) -> None:
        """Keep the search entries' pieces this build parsed (:mod:`sparkreport.site.search_pieces`)."""
        if self.kept is not None:
            self.kept.save(self.indexed_pieces, self.urls)

    @event_priority(-100)  # after every other plugin's nav (the blog places its posts there)
    def on_nav(self, nav: Any, *, config: Any, files: Any) -> Any:
        from mkdocs.structure.files import InclusionLevel
        from mkdocs.structure.pages import Page

        from sparkreport.parallel import fork_map, workers_for
        from sparkreport.site import search_pieces
        from sparkreport.site.reuse import blog_roots, why_not_reused

        if why_not_reused(config):
            return nav
        blog = tuple(f"{root}/" for root in blog_roots(config))
        pages = []
        for file in files.documentation_pages(inclusion=InclusionLevel.is_included):
            if blog and (file.src_uri.startswith(blog) or file.dest_uri.startswith(blog)):
                continue
            if self.dirty and not file.is_modified():
                continue
            if file.page is None:
                if not file.inclusion.is_not_in_nav():
                    continue
                Page(None, file, config)  # as MkDocs' loop does for a page out of the nav
            pages.append(file.page)
        self.workers = workers_for(len(pages), per_worker=PAGES_PER_WORKER)
        if not self.workers:
            return nav
        # The biggest first: a few pages take most of a rebuild's conversion (the Runs index's
        # table of every group), and a worker that starts one last runs on alone.
        pages.sort(key=_source_size, reverse=True)
        shares = _shares(pages, self.workers)
        index = _search_index(config)
        entries = _entries_of(index) if index is not None and self._original is not None else None
        kept = None
        if entries is not None and self.pieces_path is not None and search_pieces.available(index):
            self.kept = search_pieces.KeptPieces(self.pieces_path)
            self.urls = {file.url for file in files.documentation_pages(inclusion=InclusionLevel.is_included)}
            kept = self.kept.pieces

        def convert(share: int) -> list[Converted]:
            return [_convert(page, config, files, index if entries is not None else None, kept)
                    for page in shares[share]]

        for share, results in zip(shares, fork_map(convert, len(shares), self.workers), strict=True):
            for page, converted in zip(share, results, strict=True):
                page.render = functools.partial(_apply, page, converted)
                if converted.indexed is not None:
                    self.indexed[page.file.src_uri] = converted.indexed
                    if converted.indexed.pieces is not None:
                        self.indexed_pieces[converted.indexed.url] = converted.indexed.pieces
        if entries is not None and self.indexed:
            index.add_entry_from_context = functools.partial(self._add_entry, index.add_entry_from_context, entries)
            self._index = index
        self.converted = len(pages)
        self.pages = pages
        return nav
