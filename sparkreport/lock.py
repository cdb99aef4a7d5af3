"""One writer at a time per output folder: ``render`` and ``build`` take a lock on ``build/``.

Two renders into the same docs folder would empty it under each other (each starts by clearing
it). The lock is an advisory ``flock`` on ``<folder>/.sparkreport.lock``: the kernel drops it
when its process ends, so a crashed build never leaves the folder locked. The lock file holds
the owner's pid for the error message. Re-entrant within a process (``build`` renders).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sparkreport.errors import BuildError

LOCK_FILE = ".sparkreport.lock"
_held: set[Path] = set()
_guard = threading.Lock()


@contextmanager
def output_lock(folder: Path) -> Iterator[None]:
    """Hold the lock on ``folder`` (created if missing); BuildError at once if another process has it."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    folder = folder.resolve()
    with _guard:
        if folder in _held:
            nested = True
        else:
            nested = False
            _held.add(folder)
    if nested:
        yield
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                raise BuildError(f"{folder}: another sparkreport render or build is writing here (pid {owner}) "
                                 "— wait for it to finish, or pass another --docs-dir") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)  # releases the flock
    finally:
        with _guard:
            _held.discard(folder)
