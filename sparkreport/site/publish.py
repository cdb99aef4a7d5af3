"""Publishing a build: into a sibling temporary folder, scanned, then swapped in whole.

``sparkreport build`` never writes into the published site. MkDocs builds into
``.<site>.building`` beside it while the runs' files are copied into ``.<site>.runfiles`` (and
scanned there), they are moved into the new site, the publish-time scan
(:mod:`sparkreport.site.scan`) runs there, and only then is the old site replaced: renamed
to ``.<site>.old``, the new one renamed into place (SIGINT and SIGTERM held back for those two
renames), the old one handed to a process of its own that removes it (:func:`discard`). A
failure, a hit of the scan, Ctrl-C or SIGTERM at any point before the swap leaves the previous
site as it was and removes the temporary folder; a crash that could not clean up (SIGKILL, power
loss) is cleaned up by the next build (:func:`recover`), which also puts back a site caught
between the two renames.

A rebuild does not rebuild the run-files folder (``runs/files``: ten thousand folders at 10 000
runs) when the live one holds exactly what the last build published
(:class:`~sparkreport.site.run_files.Carry`): the new site gets only the new and changed files,
scanned like everything else, and the swap carries the live folder over — written down first
(:data:`CARRY_JOURNAL` in the new site), then the folder renamed into the new site, the new files
moved into it, the removed ones unlinked, all with the two renames under held signals. A crash
after the journal was written is rolled forward by the next build (the new site had passed its
scan); before it, nothing of the live site was touched.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.errors import BuildError
from sparkreport.parallel import signals_held

if TYPE_CHECKING:
    from sparkreport.site.run_files import Carry

#: Signals that end a build; both leave the previous site whole.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: In a new site whose swap carries the live run-files folder over: what the swap does (a crash
#: after it is written is rolled forward by :func:`recover`).
CARRY_JOURNAL = ".sparkreport-carry.json"


def staging_dir(target: Path) -> Path:
    """Where a build of ``target`` is assembled (a dot-folder beside it: same file system)."""
    return target.with_name(f".{target.name}.building")


def side_dir(target: Path) -> Path:
    """Where the runs' files of a build of ``target`` are published while the builder builds the
    pages (a builder may want its folder to itself); moved into the new site afterwards
    (:func:`merge_into`)."""
    return target.with_name(f".{target.name}.runfiles")


def merge_into(source: Path, target: Path) -> None:
    """Move everything under ``source`` into ``target`` (a folder in both is merged, a file in
    ``source`` replaces one in ``target``), then remove ``source``. Renames only: one per
    top-level entry when ``target`` holds none of them."""
    with os.scandir(source) as entries:
        for entry in list(entries):
            destination = target / entry.name
            if entry.is_dir(follow_symlinks=False) and destination.is_dir() and not destination.is_symlink():
                merge_into(Path(entry.path), destination)
                continue
            if destination.is_dir() and not destination.is_symlink():
                shutil.rmtree(destination)
            os.replace(entry.path, destination)
    source.rmdir()


def old_dir(target: Path) -> Path:
    """Where the previous site waits, during a swap, to be removed."""
    return target.with_name(f".{target.name}.old")


def recover(target: Path) -> None:
    """Clean up after a build that was killed: remove its temporary folder, and put the
    previous site back if the kill came between the two renames of a swap; a swap that had
    begun to carry the run-files folder over is finished instead (the new site was scanned)."""
    staging = staging_dir(target)
    try:  # written whole (by rename) before anything moves: unreadable means nothing moved yet
        plan = json.loads((staging / CARRY_JOURNAL).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        plan = None
    if isinstance(plan, dict):
        with signals_held():
            _carry_over(staging, target, plan)
            if target.exists():
                os.rename(target, old_dir(target))
            os.rename(staging, target)
    if target.is_dir():
        (target / CARRY_JOURNAL).unlink(missing_ok=True)
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(side_dir(target), ignore_errors=True)
    old = old_dir(target)
    if old.is_dir():
        if target.exists():
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(old, target)
    for trash in trash_dirs(target):  # a remover killed half-way (or one still at work: both may run)
        discard(trash, target)
    if target.exists() and not target.is_dir():
        raise BuildError(f"{target}: is a file, not a folder — pass a --site-dir that is a folder")


class Terminated(KeyboardInterrupt):  # noqa: N818 - named for the signal, like KeyboardInterrupt
    """SIGTERM during a build, raised from the signal handler so that clean-up runs (a
    KeyboardInterrupt: the CLI prints its one 'interrupted' line and exits 143, no traceback)."""


#: The stop signals (SIGINT, SIGTERM) this process's handlers have raised, in order. A library
#: can turn the KeyboardInterrupt into another exception: CPython itself, when Ctrl-C lands inside
#: a failing ``from module import name`` (pathspec's ``from warnings import deprecated``, imported
#: by MkDocs), raises ``TypeError: expected a message argument`` instead. The command line reads
#: this to end such a command as interrupted, not with that exception's traceback.
stops: list[int] = []


def terminate(signum: int, _frame: object) -> None:
    """A SIGTERM handler: raise :class:`Terminated`, so that the clean-up on the way out runs."""
    stops.append(signum)
    raise Terminated(f"signal {signum}")


def interrupt(signum: int, _frame: object) -> None:
    """A SIGINT handler: Python's own (raise KeyboardInterrupt), the signal noted in :data:`stops`."""
    stops.append(signum)
    raise KeyboardInterrupt


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` (Python's default would end the process without
    running ``finally`` blocks); SIGINT already raises KeyboardInterrupt. Outside the main
    thread, where handlers cannot be set, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def swap(staging: Path, target: Path, carry: Carry | None = None) -> None:
    """Replace ``target`` by ``staging``: two renames that signals cannot split, then the
    previous site is removed. With ``carry``, the live run-files folder is first carried over
    into ``staging`` (journal written, under the same held signals)."""
    old = old_dir(target)
    shutil.rmtree(old, ignore_errors=True)
    swapped = False
    try:
        with signals_held():
            if carry is not None:
                if not (target / carry.root).is_dir():
                    raise BuildError(f"{target / carry.root}: removed while the site was being built — "
                                     "run the build again")
                from sparkreport.cache import _atomic_bytes

                plan = carry.to_json()
                _atomic_bytes(staging / CARRY_JOURNAL, json.dumps(plan).encode())
                _carry_over(staging, target, plan)
            if target.exists():
                os.rename(target, old)
            os.rename(staging, target)
            (target / CARRY_JOURNAL).unlink(missing_ok=True)
            swapped = True
    finally:
        # Also when a signal that waited during the renames is raised on leaving them: the new
        # site is in place, so the previous one goes (a second signal meanwhile leaves it to the
        # next build's clean-up). Never when the swap did not finish: then it is the only site.
        if swapped:
            discard(old, target)


def trash_dirs(target: Path) -> list[Path]:
    """Previous sites of ``target`` handed to :func:`discard` (removed by a process of their own,
    or left by one that was killed)."""
    return sorted(target.parent.glob(f".{target.name}.trash.*"))


def discard(folder: Path, target: Path) -> None:
    """Remove ``folder`` (a previous site of ``target``, already replaced) in a process of its own
    that outlives the command: removing the ~300 folders of a site took 0.2–0.3 s of every build
    at 10 000 runs, most of it in ``rmdir`` (issue 16, twenty-first round), after the new site was
    live. The folder is first renamed beside the site (``.<site>.trash.<pid>.<ns>``: the next swap
    finds no ``.old``); a remover killed half-way leaves it to the next build's :func:`recover`,
    which hands it on the same way. The remover is ``rm -rf`` started in the background by a
    shell in a session of its own (no terminal's Ctrl-C, no process group a caller waits on),
    with no file of the build open (a caller reading the build's output to its end does not wait
    for it); the shell, started without copying this process (``vfork``), ends at once. (Forking
    the build's process for it, whose memory is ~400 MB at 10 000 runs, took 0.03–0.04 s at the
    end of every build: issue 16, forty-fifth round.) Without fork (not Linux), or without a
    shell, it is removed here."""
    import subprocess

    from sparkreport.parallel import can_fork

    if not folder.is_dir():
        return
    with signals_held():  # a signal would otherwise split the rename from the remover's start
        trash = folder
        if folder.parent != target.parent or not folder.name.startswith(f".{target.name}.trash."):
            trash = target.with_name(f".{target.name}.trash.{os.getpid()}.{time.monotonic_ns()}")
            os.rename(folder, trash)
        shell = shutil.which("sh") if can_fork() else None
        if shell is not None:
            try:
                started = subprocess.run([shell, "-c", 'rm -rf -- "$1" &', "sh", os.fspath(trash)],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
                                         check=False)
                if started.returncode == 0:
                    return
            except OSError:
                pass
        shutil.rmtree(trash, ignore_errors=True)


def _carry_over(staging: Path, target: Path, plan: dict[str, Any]) -> None:
    """Move the live site's run-files folder into ``staging``, the new files of ``staging`` into
    it and the removed ones out of it. Each step can be run again after a crash (what is done
    already is skipped); the journal goes only once the new site is in place."""
    root = str(plan["root"])
    live, new = target / root, staging / root
    carrying = new.with_name(f".{new.name}.carrying")
    if live.is_dir() and not carrying.exists():
        carrying.parent.mkdir(parents=True, exist_ok=True)
        os.rename(live, carrying)
    if carrying.is_dir():
        cut = len(root) + 1
        for name in plan["incoming"]:
            source, destination = staging / name, carrying / name[cut:]
            if os.path.lexists(source):
                destination.parent.mkdir(parents=True, exist_ok=True)
                os.replace(source, destination)
        for name in plan["removed"]:
            gone = carrying / name[cut:]
            gone.unlink(missing_ok=True)
            for folder in gone.parents:  # a removed run leaves no empty folder behind
                if folder == carrying or not folder.is_dir() or any(folder.iterdir()):
                    break
                folder.rmdir()
        shutil.rmtree(new, ignore_errors=True)  # only the folders the incoming files left
        os.rename(carrying, new)


@contextmanager
def side_first(target: Path) -> Iterator[Path]:
    """A killed build's leftovers cleared (:func:`recover`), then the empty :func:`side_dir` of a
    build of ``target``, made before the build knows whether it will publish: a process started
    now may publish the runs' files into it. Removed on the way out unless the build moved it into
    its site (:func:`merge_into`); :func:`staged` then takes ``side_made``."""
    side = _cleared(target)
    try:
        yield side
    finally:
        shutil.rmtree(side, ignore_errors=True)  # (gone already when the build published it)


def _cleared(target: Path) -> Path:
    """A killed build's leftovers cleared (:func:`recover`), then the build's empty side folder."""
    recover(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    side = side_dir(target)
    side.mkdir()
    return side


@contextmanager
def staged(target: Path, side_made: bool = False) -> Iterator[Path]:
    """A fresh temporary folder for a build of ``target`` (and an empty :func:`side_dir`);
    both removed again unless the build swapped it in (on any error, KeyboardInterrupt or SIGTERM).
    ``side_made``: the side folder was made already, after the clean-up (:func:`side_first`)."""
    if not side_made:
        _cleared(target)
    staging = staging_dir(target)
    staging.mkdir()
    try:
        with interruptible():
            yield staging
    except BaseException:
        with signals_held():
            if not (staging / CARRY_JOURNAL).is_file():  # else it holds the live run files: recover() finishes it
                shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(side_dir(target), ignore_errors=True)
        raise
