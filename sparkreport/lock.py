"""One writer at a time per output folder: ``render`` and ``build`` take a lock on ``build/``;
``ingest`` takes one on the run store (:func:`store_lock`, which waits for the other writer).

Two renders into the same docs folder would empty it under each other (each starts by clearing
it). The lock is an advisory ``flock`` on ``<folder>/.sparkreport.lock``: the kernel drops it
when its process ends, so a crashed build never leaves the folder locked. The lock file holds
the owner's pid for the error message. Re-entrant within a process (``build`` renders).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sparkreport.errors import BuildError, SparkreportError

LOCK_FILE = ".sparkreport.lock"
_held: set[Path] = set()
_guard = threading.Lock()


def _holder(fd: int) -> str:
    return os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"


@contextmanager
def _locked(folder: Path, acquire: Callable[[int, Path], None]) -> Iterator[None]:
    """Hold ``<folder>/.sparkreport.lock`` once ``acquire(fd, folder)`` has taken the flock (it
    raises when it cannot); re-entrant within a process; the lock file then holds our pid."""
    folder = folder.resolve()
    with _guard:
        nested = folder in _held
        _held.add(folder)
    if nested:
        yield
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            acquire(fd, folder)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)  # releases the flock
    finally:
        with _guard:
            _held.discard(folder)


@contextmanager
def output_lock(folder: Path) -> Iterator[None]:
    """Hold the lock on ``folder`` (created if missing); BuildError at once if another process has it."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return

    def at_once(fd: int, where: Path) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildError(f"{where}: another sparkreport render or build is writing here (pid {_holder(fd)}) "
                             "— wait for it to finish, or pass another --docs-dir") from None

    with _locked(folder, at_once):
        yield


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
