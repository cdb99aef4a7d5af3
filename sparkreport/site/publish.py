"""Publishing a build: into a sibling temporary folder, scanned, then swapped in whole.

``sparkreport build`` never writes into the published site. MkDocs builds into
``.<site>.building`` beside it, the runs' files are copied there, the publish-time scan
(:mod:`sparkreport.site.scan`) runs there, and only then is the old site replaced: renamed
to ``.<site>.old``, the new one renamed into place (SIGINT and SIGTERM held back for those two
renames), the old one removed. A failure, a hit of the scan, Ctrl-C or SIGTERM at any point
before the swap leaves the previous site as it was and removes the temporary folder; a crash
that could not clean up (SIGKILL, power loss) is cleaned up by the next build
(:func:`recover`), which also puts back a site caught between the two renames.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sparkreport.errors import BuildError

#: Signals that end a build; both leave the previous site whole.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def staging_dir(target: Path) -> Path:
    """Where a build of ``target`` is assembled (a dot-folder beside it: same file system)."""
    return target.with_name(f".{target.name}.building")


def old_dir(target: Path) -> Path:
    """Where the previous site waits, during a swap, to be removed."""
    return target.with_name(f".{target.name}.old")


def recover(target: Path) -> None:
    """Clean up after a build that was killed: remove its temporary folder, and put the
    previous site back if the kill came between the two renames of a swap."""
    shutil.rmtree(staging_dir(target), ignore_errors=True)
    old = old_dir(target)
    if old.is_dir():
        if target.exists():
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(old, target)
    if target.exists() and not target.is_dir():
        raise BuildError(f"{target}: is a file, not a folder — pass a --site-dir that is a folder")


class Terminated(KeyboardInterrupt):  # noqa: N818 - named for the signal, like KeyboardInterrupt
    """SIGTERM during a build, raised from the signal handler so that clean-up runs (a
    KeyboardInterrupt: the CLI says "Aborted!" and exits 1, no traceback)."""


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` (Python's default would end the process without
    running ``finally`` blocks); SIGINT already raises KeyboardInterrupt. Outside the main
    thread, where handlers cannot be set, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _terminate(signum: int, _frame: object) -> None:
        raise Terminated(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait (and are delivered after) while the block runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def swap(staging: Path, target: Path) -> None:
    """Replace ``target`` by ``staging``: two renames that signals cannot split, then the
    previous site is removed."""
    old = old_dir(target)
    shutil.rmtree(old, ignore_errors=True)
    with _signals_held():
        if target.exists():
            os.rename(target, old)
        os.rename(staging, target)
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def staged(target: Path) -> Iterator[Path]:
    """A fresh temporary folder for a build of ``target``; removed again unless the build
    swapped it in (on any error, KeyboardInterrupt or SIGTERM)."""
    recover(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_dir(target)
    staging.mkdir()
    try:
        with interruptible():
            yield staging
    except BaseException:
        with _signals_held():
            shutil.rmtree(staging, ignore_errors=True)
        raise
