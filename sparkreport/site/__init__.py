"""Site: turn a rendered docs folder into a static site, with MkDocs or Zensical.

``build(options)`` = render → inert titles → generated config → the builder
(:mod:`sparkreport.site.builders`: ``builder:`` in sparkreport.yml or ``--builder``) → the blog
feed → the publish-time scan → swap; from the start, in a forked process beside all of it, the
runs' files are published and scanned.
:mod:`sparkreport.site.serve` renders and hands the generated config to the builder's live server
(imported by `sparkreport serve` only: a build does not load it).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Iterator, Mapping

    from sparkreport.cache import HashMemo, WalkRecord, WritesLater
    from sparkreport.parallel import Background
    from sparkreport.project import Project
    from sparkreport.render import RenderOptions, RenderResult
    from sparkreport.render.context import CommitAhead
    from sparkreport.site.incremental import BuildKeys
    from sparkreport.site.run_files import Published
    from sparkreport.site.scan import ScanMemo
    from sparkreport.store import PackedScan, StoreScan

DEFAULT_SITE_DIR = Path("site")


@dataclass
class BuildResult:
    """A built site: where it is, the render behind it, and MkDocs' warnings (if not strict)."""

    site_dir: Path
    config_file: Path
    render: RenderResult
    warnings: list[str] = field(default_factory=list)
    #: True when nothing the build reads had changed and the previous site was kept as is.
    cached: bool = False
    #: The builder that built it (``mkdocs`` or ``zensical``).
    builder: str = "mkdocs"
    #: Seconds per stage (render, builder, publish = run files + feed + scan + swap).
    timings_s: dict[str, float] = field(default_factory=dict)
    #: Run files copied fresh and hard-linked unchanged from the previous site; files scanned.
    published: dict[str, int] = field(default_factory=dict)
    #: Pages the builder converted, and pages it reused unchanged from the previous site.
    converted: int = 0
    reused: int = 0


def build(options: RenderOptions | Project, site_dir: Path | None = None, *, strict: bool = True,
          builder: str | None = None, full: bool = False) -> BuildResult:
    """Render the pages, write the builder's config and build the site into ``site_dir``.

    The project is resolved once (:class:`~sparkreport.project.Project`: its paths and its
    ``sparkreport.yml``), then: refuse bad configuration → the build key → load → analyse →
    render the changed pages → the builder → publish the run files, the feed, the scan, the swap.

    ``builder`` (``mkdocs`` / ``zensical``) overrides the config's ``builder:``. The builder
    builds into a temporary folder beside ``site_dir``; the runs' files and the feed go there,
    everything is scanned for credential shapes (:mod:`sparkreport.site.scan`); only then
    does the new site replace the old one (:mod:`sparkreport.site.publish`). A failure or an
    interrupt leaves the previous site as it was.

    A build whose inputs (run store, config, templates, docs, package) are unchanged since the
    last successful one keeps that site and returns at once (:mod:`sparkreport.site.incremental`).
    Otherwise only the pages whose Markdown changed are converted and the rest of the previous
    site is linked (:mod:`sparkreport.site.reuse`); ``full`` converts every page.
    """
    from sparkreport.early import check_store, check_writable
    from sparkreport.errors import file_system_error
    from sparkreport.lock import output_lock, site_lock
    from sparkreport.project import resolve_project
    from sparkreport.render.preflight import refuse_early

    project = resolve_project(options)
    # Before the lock (which creates the build folder) and the render (seconds): every output.
    check_writable(project.site_dir(site_dir), "--site-dir")
    check_writable(project.docs_dir, "--docs-dir")
    check_store(project.runs_dir)  # outside a project: no build/ left behind
    kept = _kept(project, full)
    if not kept:
        refuse_early(project)  # bad config, diffs, post bindings: before the build key hashes the store
    # (with a kept build, build/ exists: the checks run under the lock, beside the store's walk)
    # The site too: a build from another docs folder shares it (and its temporary folders).
    try:
        with output_lock(project.cache_dir.parent), site_lock(project.site_dir(site_dir)):
            return _build(project, project.site_dir(site_dir), strict, builder, full, kept)
    except OSError as exc:  # the render's own are one line already; the builder's, the caches', the publishing's
        raise file_system_error(exc, "the site folder") from None


def _kept(project: Project, full: bool) -> bool:
    """Whether an earlier build's state is kept (and used: not ``full``)."""
    from sparkreport.site import incremental

    return not full and (project.cache_dir / incremental.STATE_FILE).is_file()


def project_builder(options: RenderOptions | Project, builder: str | None) -> str:
    """The builder a build uses: ``builder`` when given, else the config's ``builder:``."""
    if builder is not None:
        from sparkreport.site.builders import get_builder

        return get_builder(builder).name
    from sparkreport.project import resolve_project

    return resolve_project(options).config.builder


def _build(project: Project, target: Path, strict: bool, builder_name: str | None,
           full: bool, kept: bool) -> BuildResult:
    """The build under the lock; ``kept``: whether :func:`build` found an earlier build's state
    (then the configuration checks are made here, beside the store's walk)."""
    import time

    from sparkreport.cache import (
        HASHES_FILE,
        WALK_FILE,
        HashMemo,
        WalkRecord,
        WritesLater,
        forget_read_ahead,
        package_digest,
        walk_store,
    )
    from sparkreport.early import INDEX_FILE, refresh_index
    from sparkreport.parallel import behind, can_fork, jobs
    from sparkreport.render import render
    from sparkreport.render.core import Vouch, result_from_state
    from sparkreport.site import incremental, publish
    from sparkreport.site.builders import get_builder
    from sparkreport.site.mkdocs_site import PROJECT_CONFIG, write_config
    from sparkreport.site.reuse import Reuse, ReusePlan
    from sparkreport.site.scan import clean_pieces, vouch
    from sparkreport.site.titles import make_titles_inert

    name = project_builder(project, builder_name)
    builder = get_builder(name)
    cache_dir = project.cache_dir
    timings: dict[str, float] = {}
    # The render's biggest cache files and the checks' name index, written while the builder works.
    later = WritesLater()
    # The store's scan (each run.json and its stat) from the build key's walk, or None: then the
    # dataset and the publisher each scan the store themselves.
    store_scan: StoreScan | None = None
    with contextlib.ExitStack() as stack:
        stack.callback(forget_read_ahead)  # (what the wait for the walk read and nothing took)
        # The builder, forked first, while this process is small (forked after the imports, every
        # page of them this process then wrote was copied: ~5 000 page faults of a new run's build);
        # woken once the analysis is done (the run files' publisher has then mostly finished), it
        # imports MkDocs and loads the last build's config on the CPU the planning leaves idle, then
        # waits for this config. A build that keeps its site stops it unused (~1 ms).
        standby = builder.standby(project.docs_dir.parent / PROJECT_CONFIG)
        if standby is not None:
            stack.enter_context(standby)

        def publisher() -> Callable[[], RunFiles]:
            # The runs' files are published (and scanned) from the run store alone, in a forked
            # process that starts now, while this one renders and builds: see run_files_beside.
            return stack.enter_context(run_files_beside(project.runs_dir, target, cache_dir,
                                                        folders, package_digest(memo), memo,
                                                        stat_folders, store_scan)).result

        side_made = False  # the side folder made before the walk, for a publisher the walk starts

        def start(published: Callable[[], RunFiles] | None = None) -> tuple[Path, Callable[[], RunFiles]]:
            # (``published``: the publisher the walk's own process went on to, see _walked_and_keyed)
            return stack.enter_context(publish.staged(target, side_made=side_made)), published or publisher()

        if not kept:
            # Without a kept state no build is skipped: one walk of the store (the key, the
            # published files' and the Runs pages' rows), then the publisher starts before the
            # build key, which hashes every run file (seconds on one CPU in a cold build).
            memo = HashMemo(cache_dir / HASHES_FILE)
            kept_walk = WalkRecord.read(cache_dir / WALK_FILE, project.runs_path, package_digest(memo))
            with git_beside_walk(project, memo, kept_walk) as commit:
                walk = walk_store(project.runs_path, kept_walk)
                folders = stat_folders = walk.folders
                started_early = start()
                key = incremental.build_key(project, target, strict, memo, name, walk, commit)
            memo.save()
            # The publisher went on the stat keys (a cold build's caches have nothing to match);
            # the render keys what it keeps by content, as every later build does.
            folders = walk.by_content(memo)
            walk_record = walk.record.payload() if walk.record is not None else None
        else:
            def memo_with(computed: dict[str, list[Any]]) -> HashMemo:
                memo = HashMemo(cache_dir / HASHES_FILE)
                memo.merge(computed)  # the digests the key had to compute
                return memo

            def going_on(answer: Walked, published: Callable[[], RunFiles] | None = None) -> None:
                # The walk answered, and the data changed: the publisher has started (in the walk's
                # own process, ``published``), or starts now (not after the imports).
                nonlocal folders, stat_folders, memo, started_early, store_scan
                folders, stat_folders, memo = answer.folders, answer.by_stat, memo_with(answer.computed)
                store_scan = answer.store_scan()
                started_early = start(published)

            started_early = None
            # The walk's process publishes the runs' files itself once it has answered, when the
            # data changed (it has the store's listing, the key and the file digests at hand): the
            # publisher starts as the walk ends, on the CPU the walk leaves while this process still
            # imports, and this process forks none. Its side folder is made now (a killed build's
            # leftovers cleared first), and removed on the way out unless the build publishes it.
            if jobs() >= 2 and can_fork():
                stack.enter_context(publish.side_first(target))
                side_made = True
            walked = _walked_and_keyed(project, target, strict, name, going_on, later,
                                       stack if side_made else None)
            folders, key, stat_folders, walk_record = walked.folders, walked.key, walked.by_stat, walked.record
            if started_early is None:
                memo = memo_with(walked.computed)
                store_scan = walked.store_scan()
            if store_scan is not None:  # the early checks' name index, for the next build's (kept_index)
                later.put(cache_dir / INDEX_FILE, functools.partial(refresh_index, project.runs_dir, cache_dir,
                                                                    store_scan, memo))
            memo.save()
        if walk_record is not None:  # the walk's record, for the next build's walk (written meanwhile)
            later.put(cache_dir / WALK_FILE, functools.partial(WalkRecord.write, cache_dir / WALK_FILE, walk_record))
        state = None if full else incremental.load_state(cache_dir, key.key, target)
        if state is not None:
            later.run()  # (the name index's write, when a run.json was touched)
            return BuildResult(site_dir=target, config_file=Path(state["config_file"]),
                               render=result_from_state(state, project),
                               warnings=list(state["warnings"]), cached=True, builder=name)
        # Only hand-written docs changed: the render may keep every generated page (and the posts'
        # results) from the last build, without loading the dataset.
        same_data = None if full else incremental.load_state(cache_dir, key.data, target, data=True)
        (cache_dir / incremental.STATE_FILE).unlink(missing_ok=True)
        if started_early is not None:
            staging, run_files = started_early
        elif same_data is None:
            staging, run_files = start()
        else:  # the publisher waits for the render: a render that keeps the data needs none
            staging, run_files = stack.enter_context(publish.staged(target)), None
        started = time.perf_counter()
        result = render(project, checked=True, store_folders=folders, store_scan=store_scan, hashes=memo,
                        # (the checks ran above)
                        build_data_key=key.data, same_data=same_data, commit=key.commit, commit_known=True,
                        analysed=standby.wake if standby is not None else None, later=later,
                        vouch=Vouch(vouch, clean_pieces))
        if run_files is None:
            carried = kept_run_files(target, cache_dir, result) if result.data_kept else None
            run_files = publisher() if carried is None else _given(carried)
        config_file = write_config(result, target)
        make_titles_inert(result.docs_dir, config_nav(config_file), cache_dir / "titles.json")
        timings["render"] = time.perf_counter() - started
        # What the builder may reuse of the live site: read, then forgotten until the new site is
        # live, by the builder's own process (which looks the shell's versions up while it waits).
        plan = ReusePlan(cache_dir, target, result.project_root, name, full) if builder.reuses else None
        if plan is None:
            Reuse.forget(cache_dir)
        started = time.perf_counter()
        gathered: list[Gathered] = []

        def meanwhile() -> None:  # while the builder builds: the caches' writes, publishing's first half
            read: list[tuple[Any, ScanMemo]] = []

            def reads_and_writes() -> None:  # the caches' writes, what publishing reads back
                later.run()
                read.append(read_for_gather(result, cache_dir))
                if result.posts:  # the feed's writer, imported now rather than after the builder
                    importlib.import_module("sparkreport.site.blog_feed")

            behind(reads_and_writes)  # on the CPU MkDocs' processes leave idle
            assert run_files is not None
            gathered.append(gather(result, target, run_files, cache_dir, memo, read=read[0]))

        reuse: Reuse | None
        if standby is not None:
            warnings, reuse = standby.run((config_file, staging, strict, plan), meanwhile=meanwhile)
        else:
            reuse = Reuse.taken(plan, config_file, strict) if plan is not None else None
            later.run()
            warnings = builder.build(config_file, staging, strict, reuse=reuse)
        timings["builder"] = time.perf_counter() - started
        started = time.perf_counter()
        published = publish_steps(result, staging, target,
                                  gathered[0] if gathered else gather(result, target, run_files, cache_dir, memo),
                                  cache_dir)
        timings["publish"] = time.perf_counter() - started
    if reuse is not None:
        reuse.save(cache_dir, target)
    memo.save()
    incremental.save_state(cache_dir, key, target, config_file, result, warnings, bulk=run_files_folder())
    converted = reuse.converted if reuse is not None else len(result.pages)
    return BuildResult(site_dir=target, config_file=config_file, render=result, warnings=warnings,
                       builder=name, timings_s=timings, published=published, converted=converted,
                       reused=reuse.reused if reuse is not None else 0)


#: What loading and analysing the dataset imports (numpy 0.05 s, scipy.special's compiled functions
#: 0.02 (:mod:`sparkreport.scipy_ufuncs`), pyarrow 0.04, pandas 0.20, the analysis 0.05 on this
#: machine), each after what it imports, so that the walk's answer, looked at between two imports,
#: is seen about when it comes (the walk takes 0.25–0.45 s at 10 000 runs).
DATA_MODULES = ("numpy", "sparkreport.scipy_ufuncs", "pyarrow", "pandas", "sparkreport.analysis")


class Walked(NamedTuple):
    """What the store's walk answers (:func:`_walk_and_key`)."""

    #: Each campaign folder's digest by content (:meth:`~sparkreport.cache.StoreWalk.by_content`).
    folders: dict[str, str | None]
    key: BuildKeys
    #: The file digests the key had to compute (``hashes.pickle``'s new entries).
    computed: dict[str, list[Any]]
    #: Each campaign folder's digest by its files' stat (:attr:`~sparkreport.cache.StoreWalk.folders`):
    #: what a cold build's publisher kept its lists by, and what the record of published files
    #: keeps (a folder unchanged since is not stat-ed file by file).
    by_stat: dict[str, str | None]
    #: The store's scan (:meth:`~sparkreport.store.RunStore.scan`) from the walk's listing (or
    #: listed again after it), when the data changed, for the dataset and the publisher; None when
    #: it was not made, or failed (they then scan the store themselves; a failure is raised there).
    scan: PackedScan | None = None
    #: The walk's record (:class:`~sparkreport.cache.WalkRecord`, as its file's bytes) when it
    #: differs from the one the walk read: the build writes it (the walk writes no file).
    record: bytes | None = None

    def store_scan(self) -> StoreScan | None:
        """:attr:`scan` unpacked (~0.01 s at 10 000 runs), or None."""
        return self.scan.unpacked() if self.scan is not None else None


def _walked_and_keyed(project: Project, target: Path, strict: bool, builder: str,
                      going_on: Callable[..., None] | None = None, later: WritesLater | None = None,
                      publishing: contextlib.ExitStack | None = None) -> Walked:
    """The store walked and the build key computed (:func:`_walk_and_key`) in a forked process,
    while this one refuses bad configuration (:func:`~sparkreport.render.preflight.refuse_early`)
    and imports what the dataset and the analysis need: the walk waits on the file system and
    the checks and imports keep a CPU busy (~0.5 s of a build that goes on saved). Between two
    imports the answer is looked at: a key equal to the kept site's stops them (a build with
    nothing changed then ends about as soon as it would have), and so does a data key equal to
    the kept site's (only hand-written docs changed: the render keeps the generated pages and
    loads no dataset, unless a post's bindings changed). An answer that changes the data,
    come between two imports, is handed to ``going_on`` at once (the build starts its run-files
    publisher there). In one process (``SPARKREPORT_JOBS=1``), the checks, then the walk and
    the key, without imports. ``later``: where the checks put off writing their name index to.

    With ``publishing`` (the build's exit stack; the side folder made), the walk's process goes
    on to publish the runs' files once it has answered, when the data changed
    (:meth:`_Walker.publish`): ``going_on`` is then handed the answer and that publisher's
    result (when the answer comes, between two imports or after them), and the process lives
    on in ``publishing`` until the build takes the result or leaves."""
    from sparkreport.cache import import_tuned, read_ahead
    from sparkreport.parallel import Background
    from sparkreport.render.preflight import refuse_early
    from sparkreport.site import incremental

    kept_key = incremental.kept_key(project.cache_dir)
    walking = _Walker(project, target, strict, builder, kept_key)
    with contextlib.ExitStack() as own:
        walker = Background(walking.walk, then=walking.publish if publishing is not None else None)
        (publishing or own).enter_context(walker)
        # raises: the walker is stopped on the way out (it writes nothing yet)
        refuse_early(project, later, kept_first=True)

        def hand_on(answer: Walked) -> None:
            if going_on is None or not data_changed(kept_key, answer.key):
                return
            if publishing is not None:
                going_on(answer, walker.then_result)
            else:
                going_on(answer)

        answer = None
        for module in DATA_MODULES if walker.forked else ():
            if answer is None and walker.ready():
                answer = walker.result()
                if not data_changed(kept_key, answer.key):
                    return answer
                hand_on(answer)
            with contextlib.suppress(Exception):  # raised again where it is imported for use
                import_tuned(module)  # numpy's and scipy's BLAS on one thread, pyarrow's allocator without huge pages
        if answer is None and walker.forked:
            # Still walking (a fresh clone's store is listed anew): the cache files the build reads
            # once the data changed are unpickled meanwhile, one at a time between looks.
            for path in read_ahead_files(project.cache_dir):
                if walker.ready():
                    break
                read_ahead(path)
        if answer is None:
            answer = walker.result()
            if publishing is not None:  # (it publishes already: the build must take that result)
                hand_on(answer)
        return answer


def read_ahead_files(cache_dir: Path) -> list[Path]:
    """The cache files a build's process reads first once the walk answers that the data changed,
    in that order: the file digests, the stacked tables, the analysis cache and its whole tables,
    the record of files scanned for credentials (:func:`~sparkreport.cache.read_ahead`)."""
    from sparkreport.cache import HASHES_FILE, AnalysisCache
    from sparkreport.dataset import StackedTables
    from sparkreport.site.scan import ScanMemo

    return [cache_dir / HASHES_FILE, cache_dir / StackedTables.FILE, cache_dir / AnalysisCache.FILE,
            cache_dir / AnalysisCache.WHOLE_FILE, cache_dir / ScanMemo.FILE]


def data_changed(kept: BuildKeys | None, key: BuildKeys) -> bool:
    """Whether a build whose key is ``key`` loads the data and publishes the runs' files: no
    kept build, or neither its whole key nor its data key is the kept one's (the same whole key
    keeps the site; the same data key, only hand-written docs changed)."""
    return kept is None or (key.key != kept.key and key.data != kept.data)


class _Walker:
    """The store's walk and key (:meth:`walk`), then, in the same process, the runs' files
    published when the data changed (:meth:`publish`), from what the walk had at hand: its file
    digests and its listing of the store."""

    def __init__(self, project: Project, target: Path, strict: bool, builder: str, kept: BuildKeys | None):
        self.project, self.target, self.strict, self.builder, self.kept = project, target, strict, builder, kept
        self.memo: HashMemo | None = None
        self.scan: StoreScan | None = None
        self.stat_of: Callable[[str], os.stat_result | None] | None = None

    def walk(self) -> Walked:
        """One walk of the store (:func:`~sparkreport.cache.walk_store`: each campaign folder's
        digest, for the published files' and the Runs pages' rows), the build key over it, and
        the file digests it had to compute (``hashes.pickle``'s new entries: the build saves
        them; this writes no file, so it may be stopped at any moment) — then, when the data
        changed since the ``kept`` build, the store's scan for the dataset and the publisher
        (0.07–0.1 s of the build's path at 10 000 runs), from what the walk listed
        (:meth:`~sparkreport.cache.StoreWalk.scan`). The scan is the walk's own listing, as the
        dataset's own scan would come after it: what the key counts, the site shows, or a run
        ingested meanwhile is in the site and changes the next key. The digests and the scan
        stay here for :meth:`publish`."""
        from sparkreport.cache import (
            HASHES_FILE,
            WALK_FILE,
            HashMemo,
            WalkRecord,
            package_digest,
            walk_store,
        )
        from sparkreport.site import incremental
        from sparkreport.store import PackedScan, RunStore

        project = self.project
        memo = self.memo = HashMemo(project.cache_dir / HASHES_FILE)
        kept_walk = WalkRecord.read(project.cache_dir / WALK_FILE, project.runs_path, package_digest(memo))
        with git_beside_walk(project, memo, kept_walk) as commit:
            walk = walk_store(project.runs_path, kept_walk)
            key = incremental.build_key(project, self.target, self.strict, memo, self.builder, walk, commit)
        scan = None
        if data_changed(self.kept, key):
            try:  # from the walk's listing where it can tell (no link, no __pycache__), else listed again
                self.scan = walk.scan(project.runs_dir) or RunStore(project.runs_dir).scan()
                scan = PackedScan.of(self.scan)
            except Exception:  # noqa: BLE001 — the dataset's own scan raises it, as a one-line error
                scan = None
        folders = walk.by_content(memo)
        self.stat_of = walk.stat_of
        record = walk.record.payload() if walk.record is not None and not walk.record.same(kept_walk) else None
        return Walked(folders, key, memo.added, walk.folders, scan, record)

    def publish(self, walked: Walked) -> RunFiles | None:
        """:func:`publish_run_files_beside` as the build would start it on this answer; None
        when the data did not change (the build keeps the site, or only its docs changed)."""
        from sparkreport.cache import package_digest

        if not data_changed(self.kept, walked.key):
            return None
        assert self.memo is not None
        project = self.project
        return publish_run_files_beside(project.runs_dir, self.target, project.cache_dir, folders=walked.folders,
                                        salt=package_digest(self.memo), memo=self.memo,
                                        stat_folders=walked.by_stat, scan=self.scan, stat_of=self.stat_of)


@contextlib.contextmanager
def git_beside_walk(project: Project, memo: HashMemo, kept_walk: WalkRecord | None) -> Iterator[CommitAhead]:
    """Git asked now what the build key will need once the store is walked, so that git works
    beside the walk instead of after it: the project's commit (yielded, for
    :func:`~sparkreport.site.incremental.build_key`), and, when the store looks freshly checked
    out (:func:`~sparkreport.cache.fresh_checkout`: every file's stat then new to ``memo``), its
    blob ids (:meth:`~sparkreport.cache.HashMemo.expect_git`). Whatever the block did not ask for
    — the walk failed, or the memo knew the files — is stopped on the way out."""
    from sparkreport.cache import fresh_checkout
    from sparkreport.render.context import start_git_commit

    commit = start_git_commit(project.root)
    if fresh_checkout(project.runs_path, kept_walk):
        memo.expect_git(project.runs_path)
    try:
        yield commit
    finally:
        memo.forget_git()
        commit.stop()


def _walk_and_key(project: Project, target: Path, strict: bool, builder: str,
                  kept: BuildKeys | None = None) -> Walked:
    """:meth:`_Walker.walk` of ``project``'s store (its key against the ``kept`` build's)."""
    return _Walker(project, target, strict, builder, kept).walk()


def run_files_folder() -> str:
    """Where the Runs pages publish the runs' files inside the site (``runs/files``)."""
    from sparkreport.render.runs_index import RunsPage

    return f"{RunsPage.folder}/{RunsPage.files_dir}"


def config_nav(config_file: Path) -> list[object]:
    """The nav of a generated config (what :func:`~sparkreport.site.titles.make_titles_inert` reads)."""
    import yaml

    data = yaml.safe_load(config_file.read_text(encoding="utf-8")) or {}
    nav = data.get("nav")
    return nav if isinstance(nav, list) else []


@dataclass
class RunFiles:
    """The runs' files published beside the new site (:func:`sparkreport.site.publish.side_dir`)
    and scanned there: which files (site path, store path), what was published, what the scan
    found clean, how many files it read."""

    listed: list[tuple[str, str]]
    files: Published
    clean: dict[str, list[Any]]
    scanned: int


def publish_run_files_beside(runs_dir: Path, target: Path, cache_dir: Path | None,
                             listed: list[tuple[str, str]] | None = None,
                             folders: Mapping[str, str | None] | None = None, salt: str = "",
                             memo: HashMemo | None = None,
                             stat_folders: Mapping[str, str | None] | None = None,
                             scan: StoreScan | None = None,
                             stat_of: Callable[[str], os.stat_result | None] | None = None) -> RunFiles:
    """Publish the runs' files (``listed``, else what the Runs pages will list, read from the
    run store: :meth:`~sparkreport.render.runs_index.RunsPage.store_files`, kept per campaign
    in ``cache_dir`` by the walk's ``folders`` digests — or, kept by a cold build, whose
    publisher starts before the files are hashed, by ``stat_folders`` — and ``salt``, the
    package's digest) into the side folder of a build of ``target`` — linking or carrying over
    what the live site holds unchanged — then scan them. ``memo``: the build's file digests,
    if read (else read here). ``stat_folders`` are also kept with the record of published files:
    the next build takes a folder's entries from it while its digest is the same
    (:func:`~sparkreport.site.run_files.publish_files`). ``scan``: the store's scan the build's
    walk made (:attr:`Walked.scan`), else the store is scanned here. ``stat_of``: the stats that
    walk took of the store's files (:meth:`~sparkreport.cache.StoreWalk.stat_of`), when it ran in
    this process just before."""
    from sparkreport.cache import RecordCache
    from sparkreport.render.runs_index import STORE_FILES_CACHE, RunsPage
    from sparkreport.site import publish
    from sparkreport.site.run_files import folder_stats, publish_listed
    from sparkreport.site.scan import ScanMemo, scan_site

    side = publish.side_dir(target)
    if listed is None:
        cache = None
        if cache_dir is not None and folders is not None:
            cache = RecordCache(cache_dir / STORE_FILES_CACHE, salt=f"store-files-1:{salt}")
        listed = RunsPage.store_files(runs_dir, folders, cache, stat_folders, scan)
    files = publish_listed(runs_dir, listed, side, previous=target if target.is_dir() else None,
                           cache_dir=cache_dir, memo=memo, folders=stat_folders, stat_of=stat_of)
    scanned = ScanMemo(cache_dir / ScanMemo.FILE if cache_dir is not None else None)
    findings = scan_site(side, memo=scanned, forked=False)
    if files.carry is None and cache_dir is not None:
        # Published afresh (a cold build): its folders recorded for the next build's carry_plan —
        # listed after the scan, which leaves seconds between making a folder and taking its stat.
        files.dirs = folder_stats(side, run_files_folder(), list(files.record))
    return RunFiles(listed, files, scanned.clean_entries(findings), scanned.scanned)


def run_files_beside(runs_dir: Path, target: Path, cache_dir: Path | None,
                     folders: Mapping[str, str | None] | None = None, salt: str = "",
                     memo: HashMemo | None = None,
                     stat_folders: Mapping[str, str | None] | None = None,
                     scan: StoreScan | None = None) -> Background[RunFiles]:
    """:func:`publish_run_files_beside`, started now in a forked process: at the start of a
    build, which loads and analyses the dataset on one CPU and leaves the other idle, then while
    the builder converts the pages. In this process (when its result is asked for) where no
    worker may be forked."""
    from sparkreport.parallel import Background

    return Background(functools.partial(publish_run_files_beside, runs_dir, target, cache_dir,
                                        folders=folders, salt=salt, memo=memo, stat_folders=stat_folders,
                                        scan=scan))


def _given(value: RunFiles) -> Callable[[], RunFiles]:
    """A call that returns ``value`` at once: run files :func:`publish_steps` need not wait for."""
    return lambda: value


def kept_run_files(target: Path, cache_dir: Path, result: RenderResult) -> RunFiles | None:
    """The runs' files of the live site ``target``, carried over whole, for a build whose render
    kept the data of the last build (:attr:`~sparkreport.render.RenderResult.data_kept`: the
    store, the configuration and the package as they were), so that nothing is published or
    scanned again — when the build cache's record of them lists exactly the files the Runs pages
    list, all in the live run-files folder; else None (then they are published as usual). The
    live site was checked as a build with nothing changed checks it
    (:func:`~sparkreport.site.incremental.load_state`)."""
    from sparkreport.published import read_manifest
    from sparkreport.site.run_files import Carry, Published, load_published_record

    manifest = read_manifest(result.docs_dir)
    if manifest is None:
        return None
    runs_dir, listed = manifest
    record, folders, dirs = load_published_record(cache_dir, runs_dir, target)
    root = run_files_folder()
    if not record or set(record) != {site_path for site_path, _store_path in listed} \
            or not all(name.startswith(f"{root}/") for name in record) or not (target / root).is_dir():
        return None
    return RunFiles(listed, Published(record=record, carry=Carry(root, incoming=[], removed=[], kept=sorted(record)),
                                      folders=folders, dirs=dirs or None), clean={}, scanned=0)


@dataclass
class Gathered:
    """What publishing takes before the built pages (:func:`gather`): the runs' files as
    published beside the new site, the manifest of what the pages list (the run store, the
    files), the scan memo with what those files' scans found clean, and the record of the
    published files for the next build."""

    done: RunFiles
    manifest: tuple[Path, list[tuple[str, str]]] | None
    memo: ScanMemo
    record: dict[str, list[Any]]
    #: ``record`` and the store folders' digests pickled for the record's file
    #: (:func:`~sparkreport.site.run_files.record_head`), where a build keeps one.
    head: bytes | None = None


def read_for_gather(result: RenderResult, cache_dir: Path | None) -> tuple[Any, ScanMemo]:
    """What :func:`gather` reads from files: the manifest of what the pages list, and the scan
    memo (~0.03 and ~0.05 s at 10 000 runs) — read where a build waits for its builder, at the
    lowest priority (:func:`~sparkreport.parallel.behind`)."""
    from sparkreport.published import read_manifest
    from sparkreport.site.scan import ScanMemo

    return read_manifest(result.docs_dir), ScanMemo(cache_dir / ScanMemo.FILE if cache_dir is not None else None)


def gather(result: RenderResult, target: Path, run_files: Callable[[], RunFiles], cache_dir: Path | None = None,
           hashes: HashMemo | None = None, read: tuple[Any, ScanMemo] | None = None) -> Gathered:
    """The first half of publishing, which needs no built page: a build calls it while the
    builder builds, then :func:`publish_steps`. Waits for the runs' files (``run_files()``),
    publishes them again if the pages list other files than the publisher did (the store
    changed under the build), reads the scan memo, and completes the record of published files
    with ``hashes`` (the build key's file digests,
    :func:`~sparkreport.site.run_files.complete_record`). ``read``: what :func:`read_for_gather`
    read already."""
    from sparkreport.site import publish
    from sparkreport.site.run_files import complete_record, record_head

    done = run_files()
    manifest, memo = read if read is not None else read_for_gather(result, cache_dir)
    listed = manifest[1] if manifest is not None else []
    if done.listed != listed:  # the store changed under the build (or the pages list other files)
        shutil.rmtree(publish.side_dir(target))
        publish.side_dir(target).mkdir()
        done = publish_run_files_beside(manifest[0] if manifest is not None else Path(), target, cache_dir, listed)
    memo.adopt(done.clean)  # the run files, scanned where they were published
    memo.adopt(result.scanned_clean)  # the Downloads page's files, scanned where they were written
    record = done.files.record
    if manifest is not None and hashes is not None and done.files.unhashed:
        record = complete_record(record, done.listed, manifest[0], hashes)
    # pickled here, while the builder builds: after the swap only the folders' stats are left
    head = record_head(manifest[0], target, record, done.files.folders) \
        if cache_dir is not None and manifest is not None else None
    return Gathered(done, manifest, memo, record, head)


def publish_steps(result: RenderResult, staging: Path, target: Path, gathered: Gathered,
                  cache_dir: Path | None = None) -> dict[str, int]:
    """After the builder, for any builder: the runs' files (published and scanned beside it
    meanwhile, then :func:`gather` ed) are moved into the built site ``staging``, the blog
    feed written, the rest scanned for credential shapes, and only then is it swapped in for
    ``target``. With the build cache ``cache_dir``, this costs what changed: run files whose
    source is unchanged stay where they are (the live run-files folder is carried over) or are
    hard-linked from the live site, and files scanned clean before are not scanned again.
    Returns counts: files copied, linked, kept and scanned."""
    from sparkreport.site import publish
    from sparkreport.site.blog_feed import write_feed
    from sparkreport.site.mkdocs_site import PROJECT_CONFIG, read_project_config, site_url
    from sparkreport.site.run_files import save_record, swapped_folders
    from sparkreport.site.scan import check_site

    done, manifest, memo = gathered.done, gathered.manifest, gathered.memo
    files = done.files
    publish.merge_into(publish.side_dir(target), staging)
    if result.posts:
        project = read_project_config(result.project_root / PROJECT_CONFIG)
        site_name = str(project.get("site_name") or result.config.title)
        write_feed(staging, result.docs_dir, [post.path for post in result.posts], site_name=site_name,
                   site_description=str(project.get("site_description") or ""),
                   site_url=site_url(project))
    check_site(staging, label=str(target), memo=memo)
    memo.scanned += done.scanned
    publish.swap(staging, target, carry=files.carry)
    # After the swap, the records describe the live site (a kill before this only costs copies).
    if files.carry is not None:
        memo.keep(files.carry.kept)  # carried over unchanged: scanned clean when first published
    memo.save()
    if cache_dir is not None and manifest is not None:
        dirs = swapped_folders(files.carry, files.dirs, target) if files.carry is not None and files.dirs is not None \
            else files.dirs
        save_record(cache_dir, manifest[0], target, gathered.record, files.folders, dirs, head=gathered.head)
    return {"copied": files.copied, "linked": files.linked, "kept": files.kept, "scanned": memo.scanned}

