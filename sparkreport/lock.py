"""One writer at a time per output folder: ``render`` and ``build`` take a lock on ``build/``,
``build`` one on its site as well (:func:`site_lock`); ``ingest`` takes one on the run store
(:func:`store_lock`, which waits for the other writer).

Two renders into the same docs folder would empty it under each other (each starts by clearing
it). The lock is an advisory ``flock`` on ``<folder>/.sparkreport.lock``: the kernel drops it
when its process ends, so a crashed build never leaves the folder locked. The lock file holds
the owner's pid for the error message. Re-entrant within a process (``build`` renders).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from sparkreport.errors import BuildError, SparkreportError

LOCK_FILE = ".sparkreport.lock"
_held: set[Path] = set()
_guard = threading.Lock()


def _holder(fd: int) -> str:
    return os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"


@contextmanager
def _locked(folder: Path, acquire: Callable[[int, Path], None], name: str = LOCK_FILE, *,
            remove: bool = False) -> Iterator[None]:
    """Hold ``<folder>/<name>`` once ``acquire(fd, folder)`` has taken the flock (it raises when it
    cannot); re-entrant within a process; the lock file then holds our pid. ``remove``: the file
    is removed on release (a lock file that would otherwise stay in the user's own folder)."""
    folder = folder.resolve()
    path = folder / name
    with _guard:
        nested = path in _held
        _held.add(path)
    if nested:
        yield
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                acquire(fd, folder)
                if not remove or _same_file(fd, path):
                    break
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # the holder removed the file as we opened it: take a new one
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            if remove:
                path.unlink(missing_ok=True)
            _unlock(fd)
            os.close(fd)
    finally:
        with _guard:
            _held.discard(path)


def _unlock(fd: int) -> None:
    """Release the flock held through ``fd`` for every process that shares it: a worker forked
    while it was held has the same open file, and one that has answered and is still ending
    (:func:`~sparkreport.parallel.set_aside`) would otherwise keep the folder locked until it
    has (closing our descriptor releases a flock only once no process has it open)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock was taken
        return
    with contextlib.suppress(OSError):  # (closing the descriptor next releases what it can)
        fcntl.flock(fd, fcntl.LOCK_UN)


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


@contextmanager
def _held_at_once(folder: Path, refusal: Callable[[Path, str], str], name: str = LOCK_FILE,
                  remove: bool = False) -> Iterator[None]:
    """:func:`_locked` on ``folder`` (its lock file ``name``), refused at once with a BuildError
    saying ``refusal(where, holder's pid)`` when another process holds it; no lock off POSIX."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return

    def at_once(fd: int, where: Path) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildError(refusal(where, _holder(fd))) from None

    with _locked(folder, at_once, name, remove=remove):
        yield


def output_lock(folder: Path) -> AbstractContextManager[None]:
    """Hold the lock on ``folder`` (created if missing); BuildError at once if another process has it."""
    return _held_at_once(folder, lambda where, pid: f"{where}: another sparkreport render or build is writing "
                         f"here (pid {pid}) — wait for it to finish, or pass another --docs-dir")


def site_lock(target: Path) -> AbstractContextManager[None]:
    """Hold the lock on the site folder ``target`` for a build: ``.<site>.lock`` beside it, where
    the build's staging and side folders are (:mod:`sparkreport.site.publish`), removed on release.

    Two builds from two docs folders (each under its own :func:`output_lock`) would still share
    the site and its temporary folders, and the second would remove the first's on its way in
    (:func:`sparkreport.site.publish.recover`): BuildError at once if another process has it.
    """
    return _held_at_once(target.parent, lambda _where, pid: f"{target}: another sparkreport build is writing "
                         f"this site (pid {pid}) — wait for it to finish, or pass another --site-dir",
                         f".{target.name}.lock", remove=True)


#: How long a writer waits for another one's lock on a run store by default (seconds).
STORE_LOCK_WAIT_S = 600.0


@contextmanager
def store_lock(root: Path, *, wait_s: float = STORE_LOCK_WAIT_S,
               notify: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the run store's lock (``<root>/.sparkreport.lock``): one writer at a time.

    A second writer waits for the first (telling ``notify`` once whom it waits for) instead of
    racing it for the same run folders; after ``wait_s`` it gives up with one line that names
    the holder's pid. Nothing is ever deleted for it: the runs the other writer stores are good.
    Re-entrant within a process, like :func:`output_lock`.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return

    def waiting(fd: int, where: Path) -> None:
        deadline = time.monotonic() + wait_s
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                holder = _holder(fd)
                if time.monotonic() >= deadline:
                    raise SparkreportError(
                        f"{where}: another sparkreport process (pid {holder}) is still writing to this "
                        f"run store after {wait_s:g} s — let it finish, then run the same command again "
                        "(the runs it stores are kept)") from None
                if not told and notify is not None:
                    notify(f"waiting for pid {holder}, which is writing to {where}")
                    told = True
                time.sleep(0.05)

    with _locked(root, waiting):
        yield
