"""``render``: prepare the output docs folder, then write every registered page into it."""

from __future__ import annotations

import contextlib
import functools
import html
import json
import os
import posixpath
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.errors import BuildError, file_system_error
from sparkreport.render.pages import NavItem, PageDoc, fill
from sparkreport.render.posts import PostDoc

if TYPE_CHECKING:
    from collections.abc import Mapping

    import jinja2

    from sparkreport.cache import HashMemo, WalkRecord, WritesLater
    from sparkreport.config import ProjectConfig
    from sparkreport.dataset import Dataset
    from sparkreport.project import Project
    from sparkreport.render.context import SiteData
    from sparkreport.render.posts import KeptPosts
    from sparkreport.store import StoreScan

#: Marks a folder as written by ``render``: only such a folder is ever emptied.
MARKER = ".sparkreport-generated"
MARKER_TEXT = "Written by `sparkreport render`; rewritten on every render (files whose bytes change).\n"
CHARTS_DIR = "charts"


@dataclass
class RenderOptions:
    """What to render and where (paths relative to the project root unless absolute)."""

    runs_dir: Path = Path("runs")
    #: Output folder for the Markdown; default ``<project>/build/docs``.
    docs_dir: Path | None = None
    #: ``sparkreport.yml``; default ``<project>/sparkreport.yml`` when it exists.
    config_path: Path | None = None
    #: The project (hand-written ``docs/``, ``templates/``, ``mkdocs.yml``); default: the
    #: config file's folder, else the current directory.
    project_root: Path | None = None
    #: The command printed in every page's footer as the way to regenerate it.
    command: str | None = None


@dataclass(frozen=True)
class Vouch:
    """The publish-time scan as the site hands it to the render (which sits below the site and
    imports none of it)."""

    #: Of some files ((site path, path) each), the site paths of those it read and found no
    #: credential shape in (:func:`~sparkreport.site.scan.vouch`).
    files: Callable[[list[tuple[str, str]]], set[str]]
    #: Of pieces of a file's text, each whole lines, the indices of those a file may be made of
    #: and still be vouched for, or None where it cannot say piece by piece (no grep:
    #: :func:`~sparkreport.site.scan.clean_pieces`). The Downloads files are vouched for so,
    #: from their campaigns' chunks (:class:`~sparkreport.dataset.ExportChunks`).
    pieces: Callable[[list[bytes]], set[int] | None]


@dataclass
class RenderResult:
    """What ``render`` wrote: the docs folder, the pages, and the nav in order."""

    project_root: Path
    docs_dir: Path
    config: ProjectConfig
    pages: list[PageDoc]
    nav: list[NavItem]
    handwritten: list[str] = field(default_factory=list)
    #: Blog posts (``blog/posts/``) with their bindings filled in.
    posts: list[PostDoc] = field(default_factory=list)
    #: Static SVG fallbacks written (every chart, or only those posts show: ``static_charts``).
    svg_count: int = 0
    #: Files of the docs folder written or removed by this render (equal bytes are left alone).
    changed_files: int = 0
    #: One-line notes for the user (a draft post left out), printed by the CLI.
    notices: list[str] = field(default_factory=list)
    #: Generated documents filled and written by this render (their inputs changed, or no cache).
    rendered_pages: list[str] = field(default_factory=list)
    #: Generated documents whose inputs did not change: not filled, their files left as they were.
    skipped_pages: list[str] = field(default_factory=list)
    #: True when only hand-written docs had changed since the last build: every generated page
    #: and the posts' results were kept, and the dataset was not loaded.
    data_kept: bool = False
    #: The files this render wrote that the publish-time scan already found clean (the Downloads
    #: page's, scanned where they were written), by site path: (inode, size, mtime_ns, sha256)
    #: as written. Publishing knows them by that stamp (linked as they are), else by the sha256.
    scanned_clean: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def chart_count(self) -> int:
        return sum(len(page.charts) for page in self.pages)


@dataclass
class _Generated:
    """The generated pages of a session's last successful render, as a docs-only render keeps them."""

    pages: list[PageDoc]
    nav: list[NavItem]
    files: set[str]
    static: bool
    git_commit: str | None


@dataclass
class _Loaded:
    """The dataset and analysis of a session's last render, and the key of what they were read from."""

    key: str
    dataset: Dataset
    site: SiteData


class RenderSession:
    """One project rendered again and again in one process (``sparkreport serve``).

    The dataset and the analysis of the last render are kept while the run store (every file's
    size, mtime and inode), ``sparkreport.yml`` and the options are unchanged: a render after an
    edit of a post, a hand-written page or a template skips loading and analysing, and the page
    cache (``build/cache/pages.json``) skips the pages whose inputs did not change.
    :func:`render` stays the one-shot API.
    """

    def __init__(self, options: RenderOptions):
        self.options = options
        self.loaded: _Loaded | None = None
        #: What the last render generated (for a render after an edit of hand-written docs only).
        self.generated: _Generated | None = None
        self._docs_only = False
        from sparkreport.cache import Held

        #: The record and analysis caches, kept in memory from one render to the next (a run
        #: added reads its own run.json, not every campaign's cached records again).
        self.held = Held()
        #: What the session's last walk of the run store listed (:class:`~sparkreport.cache.WalkRecord`):
        #: the next walk lists again only the folders whose stat changed (a run added: its own
        #: folder and its campaign's, not 10 000). None until the first walk, and where folder
        #: times cannot be trusted (every folder is then listed each time).
        self.walked: WalkRecord | None = None

    def render(self, changed: Iterable[Path] | None = None) -> RenderResult:
        """Render the project's pages (see :func:`render`), reusing what has not changed.

        ``changed`` (the paths a file watcher saw change; None: unknown) lets an edit of the
        hand-written docs alone — a post, a page — skip the run store's check and the plan of
        the generated pages: only the hand-written pages and the posts' bindings are rendered
        again, the generated pages are kept as the last render wrote them."""
        from sparkreport.project import resolve_project

        docs = resolve_project(self.options).root / "docs"
        paths = list(changed) if changed is not None else []
        self._docs_only = self.generated is not None and bool(paths) and all(p.is_relative_to(docs) for p in paths)
        try:
            return render(self.options, session=self, checked=self._docs_only)
        finally:
            self._docs_only = False


def render(options: RenderOptions | Project, *, session: RenderSession | None = None, checked: bool = False,
           store_folders: Mapping[str, str | None] | None = None, store_scan: StoreScan | None = None,
           hashes: HashMemo | None = None,
           build_data_key: str | None = None, same_data: dict[str, Any] | None = None,
           commit: str | None = None, analysed: Callable[[], object] | None = None,
           later: WritesLater | None = None, vouch: Vouch | None = None, commit_known: bool = False) -> RenderResult:
    """Render every registered page into the docs folder; returns what was written.

    ``options`` are resolved once into a :class:`~sparkreport.project.Project` (paths, the
    configuration), unless a resolved project is given (``build`` resolves it at the start).

    The configuration, the diffs and the posts' bindings are checked against the store's names
    first (:func:`~sparkreport.render.preflight.refuse_early`; in a ``session``, against the kept
    name index first, as a build does), unless ``checked`` says the caller (``build``) already did.

    A file-system failure (disk full, a folder removed under us) is a one-line BuildError naming
    the path, never a traceback. One render or build at a time writes into a docs folder's
    parent (:mod:`sparkreport.lock`); a second one stops at once with a BuildError. With a
    ``session`` (:class:`RenderSession`), the dataset and analysis of its last render are reused
    when the run store and the configuration did not change. ``store_folders``: each campaign
    folder's digest from the walk ``build`` made of the store for its key
    (:func:`~sparkreport.cache.walk_store`), which lets the Runs pages keep the rows of the
    campaigns whose files did not change (a session walks the store itself, for its own key and
    these rows); ``store_scan``: the store's scan that walk was followed by, for the dataset
    (:func:`~sparkreport.dataset.load_dataset`); ``hashes``: the build's file digests
    (``build/cache/hashes.pickle``), already read.

    ``build_data_key``: what ``build`` computed of everything it reads but the hand-written docs
    (:func:`~sparkreport.site.incremental.build_key`); the posts' bindings and results are kept
    under it (:class:`~sparkreport.render.posts.KeptPosts`). ``same_data``: the state of the last
    build, whose data key it equals — only hand-written docs, or the commit, changed since —, from
    which the render keeps every generated page as it is and fills the posts from what they gave
    then, without loading the dataset; or, when a post's bindings changed, renders in full.
    ``commit``: the project's commit the build key was made with, which the pages print (git is
    not asked again; None asks git, unless ``commit_known`` says git was asked: a project outside
    git, ~0.01 s of a build's path spared); a kept page or post footer that printed another one prints it instead
    (:func:`restamped`). ``analysed``: called once the analysis is done and the pages are about to
    be planned (``build`` wakes its standby builder then: :class:`~sparkreport.parallel.Standby`).
    ``later``: where the render puts off writing its biggest cache files (the stacked tables, the
    analysis), which the caller writes then (``build``: while its builder works); None: at once.
    ``vouch``: the publish-time scan (:data:`Vouch`), which ``build`` hands the render so that
    the Downloads page's files are scanned by the process that writes them
    (:attr:`RenderResult.scanned_clean`); None: publishing scans them.
    """
    from sparkreport.early import check_store, check_writable
    from sparkreport.lock import output_lock
    from sparkreport.project import resolve_project
    from sparkreport.render.preflight import refuse_early

    project = resolve_project(options)
    check_writable(project.docs_dir, "--docs-dir")  # before the lock, which creates its parent
    check_store(project.runs_dir)
    if not checked:
        # sparkreport.yml, diffs and post bindings against the store's names: no dataset yet (a
        # session's renders against the name index the last one left first, as a build's)
        refuse_early(project, kept_first=session is not None)
    try:
        with output_lock(project.docs_dir.parent), contextlib.ExitStack() as held_until_done:
            if same_data is not None and build_data_key is not None:
                if analysed is not None:
                    analysed()  # nothing to analyse: the pages are kept
                kept = _render_kept(project, same_data, build_data_key, commit)
                if kept is not None:
                    return kept
            return _render(project, held_until_done, session, store_folders, hashes, build_data_key, commit,
                           analysed, later, vouch, store_scan, commit_known)
    except OSError as exc:
        raise file_system_error(exc, "the docs folder") from None


def data_key(root: Path, runs_dir: Path, config_path: Path | None, command: str,
             files: Iterable[tuple[str, str, os.stat_result]]) -> str:
    """What a session's dataset and analysis were computed from: every file of the run store
    (``files``, its walk: path, size, mtime, inode — no file is read), ``sparkreport.yml``'s
    bytes, the paths and the command."""
    import hashlib

    digest = hashlib.sha256(f"{root}\0{runs_dir}\0{config_path}\0{command}\n".encode())
    for relative, _path, stat in files:
        digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ino}\n".encode(
            "utf-8", "surrogateescape"))
    if config_path is not None and config_path.is_file():
        digest.update(config_path.read_bytes())
    return digest.hexdigest()


def _render(project: Project, held_until_done: contextlib.ExitStack, session: RenderSession | None = None,
            store_folders: Mapping[str, str | None] | None = None, hashes: HashMemo | None = None,
            build_data_key: str | None = None, commit: str | None = None,
            analysed: Callable[[], object] | None = None, later: WritesLater | None = None,
            vouch: Vouch | None = None, store_scan: StoreScan | None = None,
            commit_known: bool = False) -> RenderResult:
    """The render under the lock; what it starts beside itself (:class:`~sparkreport.render.builtin.DownloadsAhead`)
    is stopped on ``held_until_done``'s exit, when the render ends or fails."""
    from sparkreport.cache import HASHES_FILE, HashMemo, package_digest
    from sparkreport.charts import ChartSpec
    from sparkreport.dataset import load_dataset
    from sparkreport.render.builtin import DOWNLOADS_AHEAD, DownloadsAhead, DownloadsPage, downloads_chunks
    from sparkreport.render.context import build_site_data, git_commit
    from sparkreport.render.markdown import chart_html, make_environment, template_cache
    from sparkreport.render.pagecache import INCLUDES_FILE, CachedPage, PageCache, PageKeys
    from sparkreport.render.pages import registered_pages
    from sparkreport.render.posts import KeptPosts
    from sparkreport.render.preflight import preflight
    from sparkreport.render.report import campaigns, newest_rule, prime_effect_rows

    root, config_path, runs_dir, docs_dir = project.root, project.config_path, project.runs_dir, project.docs_dir
    # The project root's sparkreport.yml, not the current directory's: render may run elsewhere.
    config = project.config
    cache_dir = project.cache_dir
    command = project.command
    if session is not None and session._docs_only and session.loaded is not None and session.generated is not None \
            and session.generated.git_commit == git_commit(root):
        return _render_docs(root, config, docs_dir, cache_dir, session.loaded.site, session.generated)
    key = ""
    if session is not None:
        from sparkreport.cache import WalkRecord, walk_store

        # One walk: the session's key of what it loaded, and the Runs rows kept per campaign —
        # from the session's last walk, whose folders unchanged since are not listed again.
        kept_walk = session.walked
        if kept_walk is None:  # the session's first walk: an empty record (or none, where folder times lie)
            kept_walk = WalkRecord.read(None, project.runs_path, "session")
        walk = walk_store(project.runs_path, kept_walk)
        session.walked = walk.record
        key = data_key(root, runs_dir, config_path, command, walk.files)
        store_folders = walk.folders if store_folders is None else store_folders
    loaded = session.loaded if session is not None and session.loaded and session.loaded.key == key else None
    # The run store and the configuration unchanged since the session's last render: no reading.
    memo = hashes if hashes is not None and hashes.path == cache_dir / HASHES_FILE \
        else HashMemo(cache_dir / HASHES_FILE)
    held = session.held if session is not None else None
    # The store is listed here, after the build key's walk, never from an earlier listing (the
    # early checks make one): a run ingested meanwhile then shows in this site and changes the
    # next key; the other way round the key would count a run this site lacks, and the next
    # build, finding the key unchanged, would keep the site without it. (``store_scan``: the
    # build key's walk's own listing, made in its process: the key and the site count the same runs.)
    # The campaign folders' digests by content (a build's walk) let the dataset take a campaign as
    # its shard was kept; a session's own walk digests them by stat, which a build's shard heads,
    # kept by content, would never match (each would be rewritten at every render and build).
    dataset = loaded.dataset if loaded is not None else load_dataset(runs_dir, cache_dir=cache_dir, hashes=memo,
                                                                     held=held, later=later, scan=store_scan,
                                                                     folders=store_folders if session is None else None)
    if dataset.is_empty():
        raise BuildError(f"{runs_dir}: no runs to render — ingest results first (`sparkreport ingest FILE`)")
    preflight(dataset, config, root / "docs")  # what the name index could not decide, before any heavy work
    prepare_docs_dir(docs_dir, root / "docs")
    # Everything is written into a staging folder, then only the files whose bytes changed are
    # moved into the docs folder (the others keep their mtime, so MkDocs' live reload and any
    # file watcher see only what changed); a failed render leaves the last good docs folder.
    final_docs_dir = docs_dir
    docs_dir, handwritten = _fresh_staging(final_docs_dir, root / "docs")
    # The Downloads page's files, written in a forked process while this one analyses and plans
    # (not in a serve session: its process has the live server's threads, its renders are small).
    ahead = held_until_done.enter_context(DownloadsAhead(
        dataset, docs_dir, downloads_chunks(cache_dir, package_digest(memo)), vouch)) if session is None else None
    if loaded is not None:
        site = loaded.site
        site.provenance.git_commit = git_commit(root)  # a post edit can make the project dirty
    else:
        site = build_site_data(dataset, config, runs_dir, command, root, cache_dir=cache_dir, save=False, held=held,
                               commit=commit, commit_known=commit_known, hashes=memo)
    if site.analysis_cache is not None and later is not None:
        site.analysis_cache.later = later  # its saves (planning's, the one below) put off, until the render ends
        held_until_done.callback(setattr, site.analysis_cache, "later", None)
    if session is not None:
        session.loaded = _Loaded(key, dataset, site)
    if analysed is not None:
        analysed()  # (a second call, after a kept render that could not be kept, does nothing)
    site.hash_memo = memo
    site.store_folders = dict(store_folders) if store_folders is not None else None
    site.later = later
    compiled = template_cache(cache_dir, package_digest(memo))
    env = make_environment(root / "templates", compiled)
    read_records_per_campaign(site)
    prime_effect_rows(site)  # (before planning: its rows go into the one save that follows it)
    # The statistics by the factor's levels (a factor other than the environment), made here once
    # and kept by the analysis cache (spliced after a new run), not in each worker that fills a page.
    site.level_stats  # noqa: B018
    planned = []
    for page in registered_pages():
        docs = page.docs(site, docs_dir)
        for doc in docs:
            if doc.path in handwritten:
                raise BuildError(
                    f"{root / 'docs' / doc.path}: collides with the generated {page.title} page — "
                    f"rename it, or change the page through templates/{page.template}")
        planned.append((page, docs))
    if site.analysis_cache is not None:  # the analysis and what planning added (the history)
        site.analysis_cache.save()
    # Plan, then fill: a document whose key is unchanged and whose files are still in the docs
    # folder is neither filled nor written; its files are kept as they are.
    keys = PageKeys(site, env, [
        ("package", package_digest(memo)), ("command", command), ("root", str(root)), ("runs", str(runs_dir)),
        ("config_path", str(config_path)),
        ("config", memo.digest(config_path) if config_path is not None and config_path.is_file() else "default"),
        ("newest_by", newest_rule(site)),  # every page may say how the newest campaigns were chosen
        # what a page calls each campaign (and its question): from sparkreport.yml (in "config"),
        # but also from a campaign file kept beside the runs, which no page's inputs hold
        ("campaigns", json.dumps([[c.name, c.title, c.description] for c in campaigns(site)])),
    ], includes_file=compiled / INCLUDES_FILE if compiled is not None else None)
    memo.save()
    cache = PageCache(cache_dir)
    footers: dict[str, dict[str, Any] | None] = {}
    fresh: dict[str, CachedPage] = {}
    cached: dict[str, CachedPage] = {}
    for page, docs in planned:
        for doc in docs:
            footers[doc.path] = keys.footer(doc)
            key = doc.key = keys.key(page.name, doc, footers[doc.path])
            found = cache.lookup(doc.path, key, final_docs_dir)
            if found is not None:
                cached[doc.path] = found
            else:
                fresh[doc.path] = CachedPage(key=key, files=[])
    keys.save_includes()
    scanned_clean: dict[str, list[Any]] = {}
    if ahead is not None:  # the page written again takes them; a page kept keeps its files
        if DownloadsPage().path in fresh:
            site.extra[DOWNLOADS_AHEAD], scanned_clean = ahead.take(docs_dir / DownloadsPage.folder)
        else:
            ahead.drop()
    kept_charts = sum(len(entry.charts) for entry in cached.values())
    svg_jobs: list[tuple[Path, dict[str, Any] | None]] = []

    def write(doc: PageDoc, static: bool, jobs: list[tuple[Path, dict[str, Any] | None]]) -> None:
        env.globals["chart"] = functools.partial(chart_html, static=static)
        write_page(env, site, doc, docs_dir, jobs, footer=footers[doc.path])

    # Not in a serve session: its process has the live server's threads, which a fork would not
    # take along (and it re-renders a handful of pages at a time).
    static = fill_and_write([doc for _page, docs in planned for doc in docs if doc.path in fresh],
                            lambda charts: config.static_fallbacks(charts + kept_charts), write, svg_jobs,
                            forked=session is None,
                            last_seconds={path: entry.seconds for path, entry in cache.pages.items()})
    if cached and cache.static != static:  # every kept page drew its charts the other way: draw them all again
        for _page, docs in planned:
            for doc in docs:
                if doc.path in cached:
                    fresh[doc.path] = CachedPage(key=cached.pop(doc.path).key, files=[])
                    write(fill(doc), static, svg_jobs)
    env.globals["chart"] = functools.partial(chart_html, static=static)
    written: list[PageDoc] = []
    nav: list[NavItem] = []
    keep: set[str] = set()
    for page, docs in planned:
        for doc in docs:
            if doc.path in cached:
                entry = cached[doc.path]
                doc.charts = [ChartSpec(name=name, title=title, description=description, spec={}, rows=rows)
                              for name, title, description, rows in entry.charts]
                keep.update(entry.files)
                continue
            charts_dir = posixpath.join(doc.folder, CHARTS_DIR)
            fresh[doc.path].files = [doc.path, *doc.files, *(posixpath.join(charts_dir, f"{chart.name}.{suffix}")
                                                             for chart in doc.charts
                                                             for suffix in (("vl.json", "svg") if static
                                                                            else ("vl.json",)))]
            fresh[doc.path].charts = [[c.name, c.title, c.description, c.rows] for c in doc.charts]
            fresh[doc.path].seconds = round(doc.seconds, 4)
        written += docs
        if docs:
            nav.append(page.nav(docs))
    notices: list[str] = []
    record = KeptPosts() if build_data_key is not None else None
    posts, svg_count = _posts_and_svgs(env, site, root, docs_dir, final_docs_dir, written, static, svg_jobs,
                                       cache_dir, notices, record=record)
    if record is not None and build_data_key is not None:
        record.save(cache_dir, build_data_key)
    cache.forget()
    changed = sync_tree(docs_dir, final_docs_dir, keep=keep)
    shutil.rmtree(docs_dir)
    entries = {**{path: entry for path, entry in cached.items()}, **fresh}
    cache.save(entries, static)
    if session is not None:
        session.generated = _Generated(pages=written, nav=nav, files={f for e in entries.values() for f in e.files},
                                       static=static, git_commit=site.provenance.git_commit)
    return RenderResult(project_root=root, docs_dir=final_docs_dir, config=config, pages=written, nav=nav,
                        handwritten=[p for p in handwritten if p.endswith(".md")], posts=posts,
                        svg_count=svg_count, changed_files=changed, notices=notices,
                        rendered_pages=[path for path in fresh], skipped_pages=[path for path in cached],
                        scanned_clean=scanned_clean)


#: Pages a worker fills at least (below twice this, the render's own process does it all: a fork
#: costs ~20 ms, a page 10–500 ms).
PAGES_PER_WORKER = 4


def read_records_per_campaign(site: SiteData) -> None:
    """What the pages across campaigns read of the records, made (or read from the analysis
    cache, campaign by campaign: :meth:`~sparkreport.render.context.SiteData.per_campaign`) here,
    before the pages are filled in forked workers, whose results would not reach the cache."""
    from sparkreport.render.builtin import campaign_sources
    from sparkreport.render.describe import campaign_descriptions
    from sparkreport.render.memory import arm_memory_settings, ledger_fields
    from sparkreport.render.report import campaigns, cgroup_peaks

    site.per_campaign("sources", campaign_sources)
    site.per_campaign("memory-settings", arm_memory_settings)
    site.per_campaign("ledger", ledger_fields)
    site.per_campaign("cgroup", cgroup_peaks)
    campaign_descriptions(site)
    campaigns(site)


def fill_and_write(docs: list[PageDoc], static_for: Callable[[int], bool],
                   write: Callable[[PageDoc, bool, list[tuple[Path, dict[str, Any] | None]]], None],
                   svg_jobs: list[tuple[Path, dict[str, Any] | None]], *, forked: bool = True,
                   last_seconds: Mapping[str, float] | None = None) -> bool:
    """Fill ``docs``, decide from their charts whether charts get static fallbacks
    (``static_for(count)``), and write each one (``write``, which queues its SVG fallbacks in
    ``svg_jobs``); returns that decision. Each document's :attr:`~PageDoc.seconds` is set to what
    its fill and write took.

    With enough pages (and ``forked``), forked workers do it (:func:`sparkreport.parallel.two_phase`):
    each fills the next page as it finishes one (:func:`_weight` says which first, from
    ``last_seconds``: what each page took when it was last written), the chart
    count is summed here, each writes the pages it filled into the same folder; this process
    learns each page's files and charts (names, titles, descriptions: what the page cache and the
    posts read) and the SVG fallbacks to draw, whose specs it reads back from the written
    ``.vl.json`` when it draws them (None in ``svg_jobs``). Same files, same
    order of errors (the first page's, in plan order), as filling and writing here. A page's
    context (DataFrames, read by nothing after its template) stays in the worker: such a page
    keeps its ``fill``, and :func:`~sparkreport.render.pages.fill` computes it again on demand.
    """
    from sparkreport.charts import ChartSpec
    from sparkreport.parallel import Claims, in_order, portable, two_phase, workers_for

    def timed_fill(doc: PageDoc) -> None:  # (its seconds: the fill's, then the write's added)
        began = time.perf_counter()
        fill(doc)
        doc.seconds = time.perf_counter() - began

    def timed_write(doc: PageDoc, static: bool, jobs: list[tuple[Path, dict[str, Any] | None]]) -> None:
        began = time.perf_counter()
        write(doc, static, jobs)
        doc.seconds += time.perf_counter() - began

    workers = workers_for(len(docs), per_worker=PAGES_PER_WORKER) if forked else 0
    if not workers:
        for doc in docs:
            timed_fill(doc)
        static = static_for(sum(len(doc.charts) for doc in docs))
        for doc in docs:
            timed_write(doc, static, svg_jobs)
        return static
    # Each worker takes the next page as it finishes one — the pages never measured first, those
    # that read every run before the others (filled last, a page that read the whole store kept one
    # worker busy seconds after the other ran out), then the longest by their last fill (_weight) —
    # and writes it at once when its own pages' charts already settle the decision (see settled);
    # the pages filled before that are written in the second phase.
    claims = Claims(sorted(range(len(docs)), key=lambda index: _weight(docs[index], last_seconds)), workers)
    waiting: list[int] = []  # in each worker, its own: filled in the first phase, written in the second

    def write_one(index: int, static: bool) -> tuple[int, Any, BaseException | None]:
        doc = docs[index]
        jobs: list[tuple[Path, dict[str, Any] | None]] = []
        try:
            timed_write(doc, static, jobs)
        except Exception as exc:  # noqa: BLE001 — every page is tried; the earliest's is raised below
            return index, None, portable(exc)
        return index, (list(doc.files), [(c.name, c.title, c.description, c.rows) for c in doc.charts],
                       [str(path) for path, _spec in jobs], doc.seconds), None

    def first(worker: int) -> tuple[int, list[tuple[int, BaseException]], list[tuple[int, Any, Any]]]:
        failed, written, charts = [], [], 0
        for index in claims.mine(worker):
            try:
                timed_fill(docs[index])
            except Exception as exc:  # noqa: BLE001 — every page is tried; decide raises the earliest's
                failed.append((index, portable(exc)))
                continue
            charts += len(docs[index].charts)
            waiting.append(index)
            static = settled(static_for, charts)
            if static is not None:
                written += [write_one(waiting_index, static) for waiting_index in waiting]
                waiting.clear()
        return charts, failed, written

    def decide(firsts: list[tuple[int, list[tuple[int, BaseException]], list[tuple[int, Any, Any]]]]) -> bool:
        failed = sorted((entry for _count, errors, _written in firsts for entry in errors), key=lambda e: e[0])
        if failed:
            raise failed[0][1]
        return static_for(sum(count for count, _errors, _written in firsts))

    def second(_worker: int, static: bool) -> list[tuple[int, Any, BaseException | None]]:
        return [write_one(index, static) for index in waiting]

    firsts, static, seconds = two_phase(workers, first, decide, second)
    for index, (files, charts, svgs, spent) in in_order([
            *(entry for _count, _errors, written in firsts for entry in written),
            *(entry for share in seconds for entry in share)]):
        doc = docs[index]
        doc.files, doc.seconds = files, spent
        doc.charts = [ChartSpec(name=name, title=title, description=description, spec={}, rows=rows)
                      for name, title, description, rows in charts]
        svg_jobs += [(Path(path), None) for path in svgs]
    return static


def settled(static_for: Callable[[int], bool], charts: int) -> bool | None:
    """The static-fallback decision when ``charts`` (a lower bound of the site's chart count)
    already settles it, else None. ``static_for`` may only turn from True to False as the count
    grows (:meth:`~sparkreport.config.ProjectConfig.static_fallbacks`: "auto" draws SVGs up to a
    limit, "all" and "none" ignore the count)."""
    if not static_for(charts):
        return False
    return True if static_for(sys.maxsize) else None


def _weight(doc: PageDoc, last_seconds: Mapping[str, float] | None = None) -> tuple[bool, bool, int, float]:
    """The order pages are handed to the workers, so that the last one taken is short and both
    finish about together: the pages never measured first — those that read every run, then by
    the runs they read, most first (a page's cost grows with them) —, then the others by the
    seconds they took when last written, longest first; ties keep the plan's order. (After a
    new run the Results page of its model, ~0.1 s, was handed out after pages that read every
    run but take 0.02 s, and one worker ended ~0.1 s after the other.)"""
    seconds = last_seconds.get(doc.path) if last_seconds is not None else None
    if not seconds:
        return False, doc.inputs is not None, -len(doc.inputs or ()), 0.0
    return True, False, 0, -seconds


def _posts_and_svgs(env: jinja2.Environment | None, site: SiteData | None, root: Path, docs_dir: Path,
                    final_docs_dir: Path, written: list[PageDoc], static: bool,
                    svg_jobs: list[tuple[Path, dict[str, Any] | None]], cache_dir: Path, notices: list[str], *,
                    kept: KeptPosts | None = None, record: KeptPosts | None = None) -> tuple[list[Any], int]:
    """Fill in the posts' bindings (into the staging ``docs_dir``) and draw the SVG fallbacks:
    every chart's when ``static``, else only those the posts show (a chart of a page kept as it
    was is read back from ``final_docs_dir``). Returns the posts and the SVGs drawn. Without
    ``site``, the posts are filled from ``kept`` (:func:`~sparkreport.render.posts.render_posts`);
    ``record`` gets what they gave."""
    from sparkreport.render.posts import render_posts

    footer = None
    if site is not None and env is not None:
        template = env.get_template("_footer.md")
        footer = functools.partial(template.render, site=site, provenance=site.provenance, title=site.config.title,
                                   ci_label=site.confidence_label)
    posts = render_posts(site, docs_dir, root / "docs", written, footer=footer, notices=notices, kept=kept,
                         record=record)
    if not static:  # only the charts posts show as images
        wanted = {docs_dir / svg_path(name) for post in posts for name in post.charts}
        svg_jobs = [(path, spec) for path, spec in svg_jobs if path in wanted]
        drawn = {path for path, _spec in svg_jobs}
        for path in sorted(wanted - drawn):  # a chart of a page kept as it was: its spec is in the docs folder
            spec_file = final_docs_dir / path.relative_to(docs_dir).with_suffix(".vl.json")
            svg_jobs.append((path, json.loads(spec_file.read_text(encoding="utf-8"))))
    # A page filled in a worker wrote its specs; read back only those of the SVGs drawn.
    drawing = [(path, spec if spec is not None else json.loads(path.with_suffix(".vl.json").read_text("utf-8")))
               for path, spec in svg_jobs]
    for path, _spec in drawing:
        path.parent.mkdir(parents=True, exist_ok=True)
    write_svgs(drawing, cache_dir)
    return posts, len(svg_jobs)


def _fresh_staging(final_docs_dir: Path, source_docs: Path) -> tuple[Path, list[str]]:
    """An empty staging folder beside the docs folder, with the marker, the project's hand-written
    docs and the chart assets in it; returns it and the hand-written files copied."""
    from sparkreport.published import copy_assets

    docs_dir = staging_dir(final_docs_dir)
    if docs_dir.exists():
        shutil.rmtree(docs_dir)
    docs_dir.mkdir(parents=True)
    (docs_dir / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
    handwritten = copy_handwritten(source_docs, docs_dir)
    copy_assets(docs_dir)
    return docs_dir, handwritten


def _render_docs(root: Path, config: ProjectConfig, final_docs_dir: Path, cache_dir: Path, site: SiteData | None,
                 generated: _Generated, kept: KeptPosts | None = None,
                 commits: tuple[str, str] | None = None) -> RenderResult:
    """A render after only hand-written docs changed: copy them, fill in the posts' bindings and
    keep every generated file as the last render wrote it. The posts are filled with the data
    loaded (``site``: a session's), or without it, from what their bindings gave in the last
    build (``kept``; :class:`~sparkreport.render.posts.NotKept` when they are not those bindings,
    or a hand-written page now stands where a generated one is: a full render says which).
    ``commits``: (the commit the kept pages print, the project's now), when they differ — each
    generated page that prints the first is written again with the second (:func:`restamped`)."""
    from sparkreport.render.posts import NotKept

    docs_dir, handwritten = _fresh_staging(final_docs_dir, root / "docs")
    for path in handwritten:  # a hand-written page now where a generated one is: a full render says so
        if path in generated.files:
            if site is None:
                raise NotKept(path)
            raise BuildError(f"{root / 'docs' / path}: collides with a generated page — rename it")
    keep = set(generated.files)
    if commits is not None:
        for name in sorted(name for name in generated.files if name.endswith(".md")):
            text = (final_docs_dir / name).read_text(encoding="utf-8")
            stamped = restamped(text, *commits)
            if stamped is None:
                raise NotKept(name)
            if stamped != text:
                (docs_dir / name).parent.mkdir(parents=True, exist_ok=True)
                (docs_dir / name).write_text(stamped, encoding="utf-8")
                keep.discard(name)
    env = None
    if site is not None:
        from sparkreport.cache import HashMemo, package_digest
        from sparkreport.render.markdown import chart_html, make_environment, template_cache
        from sparkreport.render.preflight import preflight

        preflight(site.dataset, config, root / "docs")
        compiled = template_cache(cache_dir, package_digest(site.hash_memo or HashMemo(None)))
        env = make_environment(root / "templates", compiled)
        env.globals["chart"] = functools.partial(chart_html, static=generated.static)
    notices: list[str] = []
    posts, svg_count = _posts_and_svgs(env, site, root, docs_dir, final_docs_dir, generated.pages,
                                       generated.static, [], cache_dir, notices, kept=kept)
    changed = sync_tree(docs_dir, final_docs_dir, keep=keep)
    shutil.rmtree(docs_dir)
    return RenderResult(project_root=root, docs_dir=final_docs_dir, config=config, pages=generated.pages,
                        nav=generated.nav, handwritten=[p for p in handwritten if p.endswith(".md")], posts=posts,
                        svg_count=svg_count, changed_files=changed, notices=notices,
                        rendered_pages=[], skipped_pages=[doc.path for doc in generated.pages],
                        data_kept=site is None)


def _render_kept(project: Project, state: dict[str, Any], data_key: str, commit: str | None) -> RenderResult | None:
    """A build's render after only hand-written docs or the project's commit changed (``state``:
    the last build's, whose data key — the store, the configuration, the templates, the package
    — is this one's): :func:`_render_docs` without the dataset, the generated pages as the page
    cache and ``state`` list them, the posts from what their bindings gave then
    (:class:`~sparkreport.render.posts.KeptPosts`), the footers that print the commit printing
    ``commit`` (:func:`restamped`). None (then the render is made in full) when nothing was kept
    for this data, a generated file is missing, a footer cannot be restamped, or
    :func:`_render_docs` finds a post's bindings are not those kept (new, edited, or a new post)."""
    from sparkreport.render.pagecache import PageCache
    from sparkreport.render.posts import KeptPosts, NotKept

    root, final_docs_dir, cache_dir = project.root, project.docs_dir, project.cache_dir
    kept_posts = KeptPosts.load(cache_dir, data_key)
    pages = PageCache(cache_dir)
    if kept_posts is None or pages.static is None or "commit" not in state:
        return None
    files = {name for entry in pages.pages.values() for name in entry.files}
    if not all((final_docs_dir / name).is_file() for name in files):
        return None
    old = state["commit"]
    commits: tuple[str, str] | None = None
    if old != commit:
        if old is None or commit is None:
            return None  # the footers gain or lose their commit: rendered in full
        commits = (old, commit)
    if commits is not None:
        for post in kept_posts.posts.values():
            footer = restamped(post.footer, *commits) if post.footer is not None else None
            if post.footer is not None and footer is None:
                return None
            post.footer = footer
    kept = result_from_state(state, project)
    prepare_docs_dir(final_docs_dir, root / "docs")
    generated = _Generated(pages=kept.pages, nav=kept.nav, files=files, static=pages.static, git_commit=None)
    try:
        result = _render_docs(root, project.config, final_docs_dir, cache_dir, None, generated, kept_posts, commits)
    except NotKept:
        return None  # the full render starts from a fresh staging folder
    if commits is not None:
        kept_posts.save(cache_dir, data_key)  # the footers as the posts now print them
    return result


def result_from_state(state: dict[str, Any], project: Project) -> RenderResult:
    """A RenderResult describing a cached build from the state that
    :func:`sparkreport.site.incremental.save_state` wrote: its pages, nav and charts by name, no
    contexts."""
    from sparkreport.charts import ChartSpec

    root = Path(state["project_root"])
    config = project.config
    pages = []
    for page in state["pages"]:
        doc = PageDoc(page["path"], page["title"], page["template"])
        doc.charts = [ChartSpec(name=n, title=t, description=d, spec={}, rows=r) for n, t, d, r in page["charts"]]
        pages.append(doc)
    return RenderResult(project_root=root, docs_dir=Path(state["docs_dir"]), config=config, pages=pages,
                        nav=_nav(state["nav"]), handwritten=list(state["handwritten"]),
                        svg_count=int(state.get("svg_count", 0)))


def _nav(items: list[Any]) -> list[Any]:
    """JSON lists back into the (title, target) tuples of a nav."""
    return [(title, target if isinstance(target, str) else _nav(target)) for title, target in items]


def restamped(text: str, old: str, new: str) -> str | None:
    """``text`` (a kept page, a post's footer) printing the project commit ``new`` where it
    printed ``old`` — the footer's ``<code>`` span (``templates/_footer.md``), the only place a
    page prints the commit —; None when ``old`` is found anywhere else in it (a template
    override printing it its own way): then the page is rendered in full."""
    shown = f"<code>{html.escape(old)}</code>"
    if text.count(old) != text.count(shown):
        return None
    return text.replace(shown, f"<code>{html.escape(new)}</code>")


def svg_path(chart_key: str) -> str:
    """``results/qwen72b/kv-vs-peak`` (a post's chart name) → ``results/qwen72b/charts/kv-vs-peak.svg``."""
    folder, _, name = chart_key.rpartition("/")
    return posixpath.join(folder, CHARTS_DIR, f"{name}.svg")


def prepare_docs_dir(docs_dir: Path, source_docs: Path) -> None:
    """Check ``docs_dir`` may be written (render made it, never hand-written docs); create it."""
    if source_docs.exists() and (docs_dir == source_docs.resolve() or source_docs.resolve() in docs_dir.parents):
        raise BuildError(f"{docs_dir}: is the project's hand-written docs/ — generated pages go "
                         "elsewhere (default build/docs); pass another --docs-dir")
    if docs_dir.exists():
        if not docs_dir.is_dir():
            raise BuildError(f"{docs_dir}: exists and is not a folder — pass another --docs-dir")
        if any(docs_dir.iterdir()) and not (docs_dir / MARKER).exists():
            raise BuildError(f"{docs_dir}: not empty and not written by sparkreport render — "
                             "pass an empty or new --docs-dir")
    docs_dir.mkdir(parents=True, exist_ok=True)
    if not (docs_dir / MARKER).exists():
        (docs_dir / MARKER).write_text(MARKER_TEXT, encoding="utf-8")


def staging_dir(docs_dir: Path) -> Path:
    """The hidden sibling a render writes into before :func:`sync_tree` moves changes over."""
    return docs_dir.parent / f".{docs_dir.name}.staging"


def sync_tree(source: Path, target: Path, keep: set[str] | frozenset[str] = frozenset()) -> int:
    """Make ``target`` hold exactly the files of ``source`` and those of ``keep``; returns the
    files written or removed.

    A file whose bytes are already equal is left alone (mtime kept); a changed or new one is
    moved over (both folders share a parent, so a rename); a file only ``target`` has is deleted,
    unless ``keep`` names it (posix paths relative to ``target``: the files of the pages this
    render did not rewrite).
    """
    import filecmp

    changed = 0
    wanted: set[str] = set()
    for folder, _dirs, files in os.walk(source):
        relative_folder = os.path.relpath(folder, source)
        for name in files:
            relative = os.path.normpath(os.path.join(relative_folder, name))
            wanted.add(relative)
            old, new = target / relative, Path(folder) / name
            if old.is_file() and old.stat().st_size == new.stat().st_size and filecmp.cmp(old, new, shallow=False):
                continue
            old.parent.mkdir(parents=True, exist_ok=True)
            os.replace(new, old)
            changed += 1
    for folder, _dirs, files in os.walk(target, topdown=False):
        relative_folder = os.path.relpath(folder, target)
        for name in files:
            relative = os.path.normpath(os.path.join(relative_folder, name))
            if relative not in wanted and relative.replace(os.sep, "/") not in keep:
                (Path(folder) / name).unlink()
                changed += 1
        if folder != str(target) and not any(os.scandir(folder)):
            os.rmdir(folder)
    return changed


def copy_handwritten(source: Path, docs_dir: Path) -> list[str]:
    """Copy the project's docs/ into the output; returns the copied paths (posix, relative)."""
    copied: list[str] = []
    if not source.is_dir():
        return copied
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if not path.is_file() or any(part.startswith(".") for part in relative.parts):
            continue
        target = docs_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied.append(relative.as_posix())
    return copied


def write_page(env: jinja2.Environment, site: SiteData, doc: PageDoc, docs_dir: Path,
               svg_jobs: list[tuple[Path, dict[str, Any] | None]] | None = None,
               footer: dict[str, Any] | None = None) -> None:
    """Render one (filled) document's template and write it with its charts.

    With ``svg_jobs``, the SVG fallbacks are queued there for :func:`write_svgs` (cached,
    rendered in parallel) instead of being drawn one by one here. ``footer`` is what the page
    was built from (``runs``, ``summaries``, ``sha256`` of its inputs); None: the footer names
    the whole dataset.
    """
    import jinja2

    from sparkreport.analysis.checks import check_titles
    from sparkreport.charts import to_svg
    from sparkreport.jsontext import spec_json
    from sparkreport.render.report import errors_in, join_and, newest_rule

    banner = errors_in(site, doc.scope) if doc.banner else []
    context = {
        "banner_errors": banner,
        "banner_checks": join_and(check_titles(banner)),
        "site": site, "page": doc, "provenance": site.provenance, "title": site.config.title,
        "ci_label": site.confidence_label, "tost_label": site.tost_label, "href": doc.href, "charts": doc.charts,
        "page_inputs": footer,
        "newest_by": newest_rule(site), **doc.context,
    }
    try:
        text = env.get_template(doc.template).render(context)
    except jinja2.TemplateSyntaxError as exc:
        raise BuildError(f"{exc.filename or doc.template}:{exc.lineno}: template error: {exc.message}") from None
    except jinja2.TemplateNotFound as exc:
        raise BuildError(f"{template_line(exc) or doc.template}: cannot render {doc.path}: it includes or extends "
                         f"'{exc.name}', which neither templates/ nor the package has — fix the name (a packaged "
                         "template is '<name>.md', or 'sparkreport/<name>.md' from an override of it)") from None
    except jinja2.TemplateError as exc:
        raise BuildError(f"{template_line(exc) or doc.template}: cannot render {doc.path}: {exc}") from None
    target = docs_dir / doc.path
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_text(target, text)
    for chart in doc.charts:
        folder = target.parent / CHARTS_DIR
        folder.mkdir(exist_ok=True)
        written = chart.text if chart.text is not None else spec_json(chart.spec)
        _write_text(folder / f"{chart.name}.vl.json", written + "\n")
        if svg_jobs is None:
            _write_text(folder / f"{chart.name}.svg", to_svg(chart.spec))
        else:
            svg_jobs.append((folder / f"{chart.name}.svg", chart.spec))


def template_line(exc: BaseException) -> str | None:
    """Where in the templates ``exc`` was raised, as ``file:line``: the innermost frame of its
    traceback that runs a template (Jinja gives those frames the template's file and line), so
    an error in an included override names that override, not the page's template. A packaged
    template is named as an override names it (``sparkreport/<name>``); a project's by its path
    from the current folder. None when no template frame is found."""
    from sparkreport.render.markdown import PACKAGE_TEMPLATES, PACKAGED_PREFIX

    found: tuple[str, int] | None = None
    trace = exc.__traceback__
    while trace is not None:
        name = trace.tb_frame.f_code.co_filename
        if "__jinja_exception__" in trace.tb_frame.f_globals and os.path.isfile(name):  # Jinja's frame of a template
            found = (name, trace.tb_lineno)
        trace = trace.tb_next
    if found is None:
        return None
    path = Path(found[0])
    if path.is_relative_to(PACKAGE_TEMPLATES):
        return f"{PACKAGED_PREFIX}/{path.relative_to(PACKAGE_TEMPLATES).as_posix()}:{found[1]}"
    return f"{Path(os.path.relpath(path)) if path.is_relative_to(Path.cwd()) else path}:{found[1]}"


def write_svgs(jobs: list[tuple[Path, dict[str, Any]]], cache_dir: Path | None) -> None:
    """Write each chart's SVG fallback: from the cache when the same spec was drawn before
    (keyed by the spec's sha256 and the vl-convert version), else drawn in a thread pool.
    Without any, vl-convert (a large native library) is not even imported."""
    if not jobs:
        return
    from concurrent.futures import ThreadPoolExecutor

    import vl_convert

    from sparkreport.cache import BlobCache, sha256_bytes
    from sparkreport.charts import FALLBACK_CONFIG, VEGALITE_VERSION, to_svg

    cache = BlobCache(cache_dir / "svg", "svg") if cache_dir is not None else None
    drawn = json.dumps(FALLBACK_CONFIG, sort_keys=True)
    salt = f"{getattr(vl_convert, '__version__', '')}\0{VEGALITE_VERSION}\0{drawn}\0".encode()
    missing: list[tuple[Path, dict[str, Any], str]] = []
    for path, spec in jobs:
        key = sha256_bytes(salt + json.dumps(spec, sort_keys=True).encode())
        cached = cache.get(key) if cache is not None else None
        if cached is not None:
            _write_text(path, cached.decode("utf-8"))
        else:
            missing.append((path, spec, key))
    if not missing:
        return
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        for (path, _spec, key), svg in zip(missing, pool.map(lambda job: to_svg(job[1]), missing), strict=True):
            _write_text(path, svg)
            if cache is not None:
                cache.put(key, svg.encode("utf-8"))


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
