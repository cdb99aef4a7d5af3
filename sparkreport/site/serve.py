"""``sparkreport serve``: preview the site while writing it.

Render once, start the builder's development server with live reload on the generated docs
folder (MkDocs' ``serve`` in dirty mode: only pages whose Markdown changed are rebuilt), and
watch the project's sources — the hand-written ``docs/`` (posts included), ``runs/``,
``templates/``, ``sparkreport.yml`` and the project's ``mkdocs.yml``. A change (a burst of
writes counts once: :data:`QUIET_S`) re-renders into the docs folder; render rewrites only the
files whose bytes changed, so the builder's own watcher rebuilds only those pages.

A render that fails (a post's binding, a bad ``sparkreport.yml``, a template error) does not
stop the server: the error is printed as one line and the page it concerns — the post, or the
home page for an error that is not about one page — is replaced in the docs folder by an error
page naming the file, the line and the fix (:class:`ErrorPages`). The next render that succeeds
brings the real page back.

The watcher is watchdog's (a dependency of MkDocs): inotify on Linux, a stat poll elsewhere or
when inotify cannot be had.
"""

from __future__ import annotations

import contextlib
import errno
import html
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.errors import SparkreportError

if TYPE_CHECKING:
    from sparkreport.project import Project
    from sparkreport.render import RenderOptions, RenderResult

#: A burst of writes (an editor's save, an ingest of many runs) is one re-render: the sources
#: must be quiet this long before it starts.
QUIET_S = 0.3
#: Where the server listens without ``--dev-addr`` (MkDocs' and Zensical's default).
DEFAULT_ADDR = "127.0.0.1:8000"
#: The project's MkDocs settings (watched with ``sparkreport.yml`` and any ``--config`` file).
PROJECT_MKDOCS = "mkdocs.yml"
#: Editors' and tools' scratch files: never a reason to re-render. ``#`` and digits is how an
#: unnamed temporary file (``O_TMPFILE``: Python's ``tempfile.TemporaryFile``) shows in a watched
#: folder — the probe with which ``ingest`` checks that the store is writable, before it has
#: read its input: a re-render started by it would run before the run is there, then again.
_SCRATCH = re.compile(r"(~|\.swp|\.swx|\.tmp|\.part)$|^(4913|#.*#|#\d+)$")
#: Events that do not change a file (watchdog reports opens and read-only closes on Linux).
_READ_ONLY_EVENTS = frozenset({"opened", "closed_no_write"})

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Sources:
    """What ``serve`` watches: folders (recursively) and single files, all absolute."""

    folders: tuple[Path, ...]
    files: tuple[Path, ...]

    def covers(self, path: str | Path) -> bool:
        """True when a change at ``path`` is a change of the sources (not a dot-file, a lock, a
        temporary entry or an editor's scratch file, which render never reads)."""
        path = Path(os.path.abspath(path))
        if path in self.files:
            return True
        for folder in self.folders:
            if path == folder:
                return True
            try:
                relative = path.relative_to(folder)
            except ValueError:
                continue
            return not any(part.startswith(".") or _SCRATCH.search(part) for part in relative.parts)
        return False


def sources_for(options: RenderOptions | Project) -> Sources:
    """The sources of a render: the project's docs/ and templates/, the run store, its config files."""
    from sparkreport.config import CONFIG_FILE
    from sparkreport.project import resolve_project

    project = resolve_project(options)
    root = project.root
    files = [root / CONFIG_FILE, root / PROJECT_MKDOCS]
    if project.config_path is not None:
        files.append(project.config_path.resolve())
    return Sources(folders=(root / "docs", project.runs_dir, root / "templates"),
                   files=tuple(dict.fromkeys(files)))


class Debouncer:
    """Collects changed paths and calls ``action(paths)`` on its own thread once the changes have
    been quiet for ``quiet_s``; changes that arrive during the action make one more call after it."""

    def __init__(self, action: Callable[[set[Path]], None], quiet_s: float = QUIET_S) -> None:
        self._action = action
        self._quiet_s = quiet_s
        self._cond = threading.Condition()
        self._pending: set[Path] = set()
        self._last = 0.0
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="sparkreport-rerender", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def changed(self, path: Path) -> None:
        with self._cond:
            self._pending.add(path)
            self._last = time.monotonic()
            self._cond.notify_all()

    def stop(self, wait_s: float = 1.0) -> bool:
        """Stop after the action under way, if any, waiting at most ``wait_s``; False when it is
        still under way."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(wait_s)
        return not self._thread.is_alive()

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._stopped)
                while not self._stopped and (left := self._last + self._quiet_s - time.monotonic()) > 0:
                    self._cond.wait(left)
                if self._stopped:
                    return
                paths, self._pending = self._pending, set()
            self._action(paths)


class Watcher:
    """Watches :class:`Sources` with watchdog and tells ``on_change`` about each changed path.

    Folders are watched recursively; single files through their folder (not recursively). A
    source folder that does not exist yet (no templates/) is picked up when it is created.
    """

    def __init__(self, sources: Sources, on_change: Callable[[Path], None]) -> None:
        self.sources = sources
        self.on_change = on_change
        self.kind = ""
        self._observer: Any = None
        #: folder → watched recursively
        self._scheduled: dict[Path, bool] = {}

    def start(self) -> None:
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        try:
            self._observer = Observer()
            self._schedule_all()
            self._observer.start()
            self.kind = "inotify" if "inotify" in type(self._observer).__module__ else type(self._observer).__name__
        except OSError:  # out of inotify watches or instances: poll instead
            self._observer = PollingObserver(timeout=1.0)
            self._scheduled.clear()
            self._schedule_all()
            self._observer.start()
            self.kind = "polling"

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(2.0)

    def _schedule_all(self) -> None:
        parents = {path.parent for path in (*self.sources.files, *self.sources.folders)}
        for folder in self.sources.folders:
            if folder.is_dir():
                self._schedule(folder, recursive=True)
        for parent in parents:
            if parent.is_dir() and parent not in self.sources.folders:
                self._schedule(parent, recursive=False)

    def _schedule(self, folder: Path, *, recursive: bool) -> None:
        from watchdog import events
        from watchdog.events import FileSystemEvent, FileSystemEventHandler

        if self._scheduled.get(folder) in (True, recursive):
            return
        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                watcher.event(event.event_type, event.is_directory, str(event.src_path),
                              str(getattr(event, "dest_path", "") or ""))

        # Writes only: a render reads every run.json, and opens and read-only closes of 30 000
        # files would overflow the inotify queue (then watchdog re-walks the whole store).
        writes = [events.FileCreatedEvent, events.DirCreatedEvent, events.FileModifiedEvent,
                  events.FileDeletedEvent, events.DirDeletedEvent, events.FileMovedEvent, events.DirMovedEvent,
                  events.FileClosedEvent]
        self._observer.schedule(Handler(), str(folder), recursive=recursive, event_filter=writes)
        self._scheduled[folder] = recursive

    def event(self, kind: str, is_directory: bool, src: str, dest: str = "") -> None:
        """One file-system event: re-render when it touches a source (opens and reads do not)."""
        if kind in _READ_ONLY_EVENTS:
            return
        for path in (src, dest):
            if not path or not self.sources.covers(path):
                continue
            absolute = Path(os.path.abspath(path))
            if is_directory and absolute in self.sources.folders and kind in ("created", "moved"):
                with contextlib.suppress(OSError):  # out of inotify watches: its changes go unseen
                    self._schedule(absolute, recursive=True)  # templates/ made after serve started
            self.on_change(absolute)


class ErrorPages:
    """Stands an error page in for the page a failed render concerns, until a render succeeds.

    The page is the hand-written page (or post) named by the error — its front matter kept, so
    a post keeps its date and address — else the home page. The page it replaced is put back
    when another error concerns another page; a successful render rewrites it anyway.
    """

    HOME = "index.md"

    def __init__(self, root: Path, docs_dir: Path, cache_dir: Path | None = None) -> None:
        self.root = root
        self.docs_dir = docs_dir
        #: The render's page cache (``pages.json``): a page an error page replaces leaves it.
        self.cache_dir = cache_dir
        #: page → its bytes before the error page replaced it (None: it did not exist).
        self._saved: dict[Path, bytes | None] = {}
        self._shown: tuple[Path, str] | None = None

    def page_for(self, message: str) -> tuple[Path, Path | None]:
        """The docs-folder page an error concerns and its hand-written source (None: the home page)."""
        source = error_source(message, self.root / "docs")
        if source is not None:
            return self.docs_dir / source.relative_to(self.root / "docs"), source
        return self.docs_dir / self.HOME, None

    def show(self, message: str) -> Path:
        """Replace the page ``message`` concerns with an error page; returns that page."""
        from sparkreport.render.pagecache import PageCache

        page, source = self.page_for(message)
        if self._shown == (page, message):
            return page
        self.restore()
        self._saved[page] = page.read_bytes() if page.is_file() else None
        # Before the page is replaced: a page cache that still called it current would keep the
        # error page after the fix, in this serve and in any later build (a serve stopped meanwhile).
        PageCache(self.cache_dir).drop(page.relative_to(self.docs_dir).as_posix())
        text = source.read_text(encoding="utf-8", errors="replace") if source and source.is_file() else ""
        page.parent.mkdir(parents=True, exist_ok=True)
        _write_text(page, error_markdown(message, front_matter(text), first_heading(text), source is not None))
        self._shown = (page, message)
        return page

    def restore(self) -> None:
        """Put back the pages error pages replaced."""
        for page, data in self._saved.items():
            if data is None:
                page.unlink(missing_ok=True)
            else:
                page.parent.mkdir(parents=True, exist_ok=True)
                tmp = page.with_name(f".{page.name}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, page)
        self.forget()

    def forget(self) -> None:
        """A render succeeded: it rewrote every page, error pages included."""
        self._saved.clear()
        self._shown = None

    @property
    def showing(self) -> bool:
        return self._shown is not None


def error_source(message: str, source_docs: Path) -> Path | None:
    """The hand-written page (a Markdown file under ``source_docs``) an error message starts with
    (``docs/blog/posts/x.md:12: …``, relative to the current directory or absolute), else None."""
    match = re.match(r"(?P<path>[^:\n]+?\.md)(?::\d+)*: ", message)
    if not match:
        return None
    path = Path(os.path.abspath(match.group("path")))
    try:
        path.relative_to(source_docs.resolve() if source_docs.exists() else source_docs)
    except ValueError:
        return None
    return path


def front_matter(text: str) -> str:
    """A page's YAML front matter block (with its ``---`` lines), or ''."""
    if not text.startswith("---\n"):
        return ""
    end = text.find("\n---\n", 4)
    return text[: end + 5] if end != -1 else ""


def first_heading(text: str) -> str:
    """A page's first ``# `` heading line (a post's title, from which its address is made), or ''."""
    body = text[len(front_matter(text)):]
    return next((line for line in body.splitlines() if line.startswith("# ")), "")


def error_markdown(message: str, front: str = "", heading: str = "", is_page: bool = True) -> str:
    """The error page: what failed (file, line, fix, as the terminal shows it) and how it comes back.

    ``front`` and ``heading`` are the page's own front matter and title, kept so that a post
    keeps its date and its address while the error stands in for it."""
    what = "this page" if is_page else "the site"
    title = f"{heading}\n\n## Render error" if heading else "# Render error"
    return (f"{front}\n{title}\n\n"
            f'<pre class="sparkreport-error"><code>{html.escape(message)}</code></pre>\n\n'
            f"`sparkreport serve` could not render {what}. Fix the file named above and save it: "
            "the page comes back by itself. The server keeps running.\n")


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def one_line(exc: BaseException) -> str:
    """An error as one line: a sparkreport error's own message, else its type and text."""
    text = exc.format_message() if isinstance(exc, SparkreportError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


@dataclass
class ServeSession:
    """The state of one ``serve``: the options, the docs folder, the generated config, the error page."""

    options: RenderOptions
    echo: Echo
    #: Renders the project; the second argument is what changed since the last render (None: unknown).
    render_once: Callable[[RenderOptions, Iterable[Path] | None], RenderResult]
    site_dir: Path
    config_file: Path | None = None
    errors: ErrorPages | None = None
    renders: int = 0

    def __post_init__(self) -> None:
        from sparkreport.project import resolve_project

        project = resolve_project(self.options)  # the paths; the config is read by each render
        self.root = project.root
        self.docs_dir = project.docs_dir
        self.errors = ErrorPages(self.root, self.docs_dir, project.cache_dir)
        self._config_text = ""

    def first_render(self) -> None:
        """Render before serving; a failure still serves (the error page on the home page)."""
        try:
            result = self.render_once(self.options, None)
        except SparkreportError as exc:
            self._failed(exc)
            if self.config_file is None:
                self._write_config(self._placeholder())
            return
        self._succeeded(result)

    def rerender(self, changed: Iterable[Path] = ()) -> None:
        """Render again after ``changed`` sources changed; never raises (the server keeps running)."""
        started = time.monotonic()
        changed = list(changed)
        try:
            # After an error nothing is known of what the last good render kept: render all again.
            result = self.render_once(self.options, None if self.errors and self.errors.showing else changed)
        except Exception as exc:  # noqa: BLE001 - any failure is one line and an error page, never a traceback
            self._failed(exc)
            return
        self._succeeded(result, full=any(path == self.root / PROJECT_MKDOCS for path in changed))
        changed_files = result.changed_files
        self.echo(f"re-rendered in {time.monotonic() - started:.1f} s: {changed_files} "
                  f"file{'s' if changed_files != 1 else ''} of {_shown(self.docs_dir)} changed")

    def _succeeded(self, result: RenderResult, *, full: bool = False) -> None:
        assert self.errors is not None
        was_error = self.errors.showing
        self.errors.forget()
        self.renders += 1
        for notice in result.notices:
            self.echo(f"note: {notice}")
        if was_error:
            self.echo("fixed: the pages render again")
        nav_changed = self._write_config(result)
        if nav_changed or full:
            # Dirty builds rebuild only pages whose Markdown changed; a new or removed page
            # changes every page's nav, and the project's mkdocs.yml (theme, extensions) every
            # page's HTML, so every page is marked changed (one full rebuild).
            touch_pages(self.docs_dir)

    def _failed(self, exc: BaseException) -> None:
        assert self.errors is not None
        message = one_line(exc)
        self.errors.show(message)
        self.echo(f"error: {message}")

    def _write_config(self, result: RenderResult) -> bool:
        """Write the generated config; True when it changed (nav, pages) since the last one."""
        from sparkreport.site import config_nav
        from sparkreport.site.mkdocs_site import write_config
        from sparkreport.site.titles import make_titles_inert

        before = self._config_text
        self.config_file = write_config(result, self.site_dir)
        make_titles_inert(result.docs_dir, config_nav(self.config_file))  # as build does, before the builder
        self._config_text = self.config_file.read_text(encoding="utf-8")
        return bool(before) and before != self._config_text

    def _placeholder(self) -> RenderResult:
        """A render result for a docs folder that holds only the error page (the first render failed)."""
        from sparkreport.config import ProjectConfig
        from sparkreport.render import RenderResult
        from sparkreport.render.core import MARKER, MARKER_TEXT

        marker = self.docs_dir / MARKER
        if not marker.exists():
            marker.write_text(MARKER_TEXT, encoding="utf-8")
        return RenderResult(project_root=self.root, docs_dir=self.docs_dir, config=ProjectConfig(),
                            pages=[], nav=[])


def touch_pages(docs_dir: Path) -> int:
    """Mark every Markdown page of ``docs_dir`` as changed (mtime now); returns how many."""
    now = time.time()
    count = 0
    for path in docs_dir.rglob("*.md"):
        os.utime(path, (now, now))
        count += 1
    return count


def _shown(path: Path) -> str:
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


def serve(options: RenderOptions, dev_addr: str | None = None, *, dirty: bool = True,
          echo: Echo | None = None) -> bool:
    """Render, serve with live reload, and re-render on every change of the sources until
    interrupted (Ctrl-C or SIGTERM; returns normally).

    One :class:`~sparkreport.render.RenderSession` renders again and again: after an edit of
    hand-written docs only (a post) it renders those and the posts' bindings and keeps every
    generated page; after other changes it reuses the dataset and the analysis while the store
    is unchanged, and the page cache skips unchanged pages. Holds the
    docs folder's lock for the whole session (a ``sparkreport build`` into the same ``build/``
    meanwhile is refused). ``dirty``: the builder rebuilds only changed pages. Returns False
    when a render was still under way at the stop (the caller may end the process at once: the
    next render completes the docs folder).
    """
    from sparkreport.early import check_store, check_writable
    from sparkreport.lock import output_lock
    from sparkreport.project import resolve_project
    from sparkreport.render import RenderSession
    from sparkreport.site import project_builder
    from sparkreport.site.mkdocs_site import serve_site

    say: Echo = echo or _stderr
    project = resolve_project(options)  # its paths; each render reads sparkreport.yml again
    docs_dir = project.docs_dir
    check_store(project.runs_dir)  # outside a project: refused as build is, before build/ or a server
    check_writable(docs_dir, "--docs-dir")
    renderer = RenderSession(options)
    with output_lock(docs_dir.parent):
        session = ServeSession(options, say, lambda _options, changed: renderer.render(changed),
                               site_dir=docs_dir.parent / "site")
        session.first_render()
        debouncer = Debouncer(session.rerender)
        watcher = Watcher(sources_for(project), debouncer.changed)
        watcher.start()
        debouncer.start()
        say(f"watching {', '.join(_shown(p) for p in (*watcher.sources.folders, *watcher.sources.files) if p.exists())}"
            f" ({watcher.kind}); Ctrl-C stops")
        in_main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _interrupt) if in_main else None  # SIGTERM stops as Ctrl-C does
        try:
            assert session.config_file is not None
            serve_site(session.config_file, dev_addr, project_builder(project, None), dirty=dirty)
        except OSError as exc:
            if exc.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
                raise
            raise SparkreportError(f"{dev_addr or DEFAULT_ADDR}: cannot serve here ({exc.strerror}) — stop "
                                   "what is serving there, or pass another --dev-addr IP:PORT") from None
        finally:
            watcher.stop()
            finished = debouncer.stop()
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    return finished


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _stderr(line: str) -> None:
    import click

    click.echo(line, err=True)


__all__ = ["QUIET_S", "Debouncer", "ErrorPages", "ServeSession", "Sources", "Watcher",
           "error_markdown", "error_source", "serve", "sources_for"]
