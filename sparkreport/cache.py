"""Content-hash caches for incremental builds, kept under ``build/cache/`` (never the source tree).

Four caches, each keyed by the sha256 of what it was computed from, so a stale entry is never
used — it is simply not found:

* :class:`HashMemo` — each file's sha256, remembered with its (size, mtime, inode) so an
  unchanged file is not read again (the way git's index avoids re-hashing);
* :class:`RecordCache` — each run.json's validated record, by the file's content hash;
* :class:`BlobCache` — derived files (chart SVGs) by the hash of their input;
* :class:`AnalysisCache` — per-arm and per-campaign analysis results by the digests of their runs.

:func:`inputs_digest` combines the hashes of everything a build reads (run store, config,
templates, hand-written docs, MkDocs config, the sparkreport package itself) into one key; a
build whose key matches the last successful one has nothing to do.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import json
import os
import pickle
import re
import stat as stat_module
import struct
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast, overload

if TYPE_CHECKING:
    from sparkreport.dataset import StackedTables
    from sparkreport.store import StoreScan

#: Bump to drop every cache written by an older layout.
CACHE_VERSION = 1
CACHE_DIR = "cache"
T = TypeVar("T")
V = TypeVar("V")
W = TypeVar("W")


def _atomic_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: The build cache's file digests (:class:`HashMemo`), and its journal beside it.
HASHES_FILE = "hashes.pickle"
#: Lines a journal may hold, at least, before a save writes the whole memo again instead; above
#: that, an eighth of the memo's entries.
JOURNAL_LINES = 4096


class HashMemo:
    """File sha256s remembered by (size, mtime_ns, inode) — and, for a file git tracks, by its
    blob id: a fresh checkout (a CI job's) gives every file a new mtime and inode, and git's own
    index then says which files are the bytes of which blob without reading them
    (:func:`git_clean_blobs`, :meth:`use_git`).

    Persisted as one pickle (:data:`HASHES_FILE`, every entry) and a journal beside it
    (``.log``: one JSON line per entry learnt since), so a save after a few files changed
    appends their lines instead of writing the whole memo (5.9 MB at 10 000 runs, 0.1 s of a
    rebuild after one new run). A save writes the whole memo again, and empties the journal,
    once the journal holds more than :data:`JOURNAL_LINES` lines or an eighth of the entries.
    A damaged or half-written line (a save killed mid-write, two processes appending at once) is
    passed over: its file is hashed again, as any file the memo does not know.
    """

    def __init__(self, path: Path | None):
        self.path = path
        self.entries: dict[str, list[Any]] = {}
        #: The entries this memo computed (what :meth:`merge` hands to another memo of the file).
        self.added: dict[str, list[Any]] = {}
        #: Entries learnt since the last load or save (what the next save writes).
        self.unsaved: dict[str, list[Any]] = {}
        #: Lines in the journal (read or appended); None when no whole memo was read from the file.
        self.journaled: int | None = None
        #: (folder, its clean files' blob ids by relative path) given by :meth:`use_git`.
        self.git: list[tuple[str, dict[str, str]]] = []
        #: blob id → (size, sha256) of the entries that name one; made when first needed.
        self._by_blob: dict[str, tuple[int, str]] | None = None
        #: :func:`start_git_clean_blobs` answers started ahead (:meth:`expect_git`), by folder.
        self._ahead: dict[str, CleanBlobs] = {}
        if path is not None:
            self._load(path)

    @property
    def changed(self) -> bool:
        return bool(self.unsaved)

    @property
    def journal(self) -> Path:
        assert self.path is not None
        return self.path.with_name(self.path.name + ".log")

    def _load(self, path: Path) -> None:
        self.entries = read_cache_pickle(path, "", "files")
        if not self.entries:
            return  # nothing read (missing, damaged, another layout): the next save writes it whole
        self.journaled = 0
        rows, self.journaled = read_journal(self.journal)
        for path_text, *entry in rows:
            if isinstance(path_text, str) and len(entry) in (4, 5) and isinstance(entry[3], str):
                self.entries[path_text] = entry

    def digest(self, path: Path | str, stat: os.stat_result | None = None) -> str:
        """The file's sha256, read only when its size, mtime or inode changed and git does not
        say it holds the bytes of a blob already hashed (of the same size)."""
        stat = stat or os.stat(path)
        known = self.known(path, stat)
        return known if known is not None else self._learnt(path, stat)

    def _learnt(self, path: Path | str, stat: os.stat_result) -> str:
        """:meth:`digest` of a file the memo does not know by its stat."""
        return self._learnt_all([(path, stat)])[0]

    def _learnt_all(self, files: Sequence[tuple[Path | str, os.stat_result]]) -> list[str]:
        """:meth:`_learnt` of each of ``files`` (path, stat), in order: the file's blob id from git
        (:meth:`use_git`) names bytes already hashed when an entry of the same size has it, else
        the file is read. One loop for them all (a fresh checkout learns every store file here:
        20 000 at 10 000 runs, on the way to the build key)."""
        git = self.git
        by_blob = self._blobs() if git else None
        entries, added, unsaved = self.entries, self.added, self.unsaved
        posix = os.sep == "/"
        out = []
        for path, stat in files:
            text = str(path)
            blob = None
            for prefix, blobs in git:
                if text.startswith(prefix):
                    relative = text[len(prefix):]
                    blob = blobs.get(relative if posix else relative.replace(os.sep, "/"))
                    break
            size = stat.st_size
            found = by_blob.get(blob) if by_blob is not None and blob is not None else None
            if found is not None and found[0] == size:
                value = found[1]
            else:
                digest = hashlib.sha256()
                with open(path, "rb") as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(chunk)
                value = digest.hexdigest()
                if by_blob is not None and blob is not None:
                    by_blob[blob] = (size, value)
            entry: list[Any] = [size, stat.st_mtime_ns, stat.st_ino, value]
            if blob is not None:
                entry.append(blob)
            entries[text] = added[text] = unsaved[text] = entry
            out.append(value)
        return out

    def digests(self, folder: Path, files: Sequence[tuple[str, os.stat_result]]) -> list[str]:
        """Each of ``files``' sha256 (path, stat: files under ``folder``), in order: those the memo
        knows by their stat, then the others (:meth:`digest`) — after asking git for the blob ids
        under ``folder`` (:meth:`use_git`) when :data:`GIT_AFTER` or more are unknown: a fresh
        checkout's, which would otherwise all be read. One lookup a known file (a store's 10 000
        were looked up twice, once to count the unknown and once to digest)."""
        found = [self.known(path, stat) for path, stat in files]
        unknown = [i for i, value in enumerate(found) if value is None]
        if len(unknown) >= GIT_AFTER:
            ahead = self._ahead.pop(os.fspath(folder), None)
            self.use_git(folder, ahead.answer() if ahead is not None else git_clean_blobs(folder))
        for i, value in zip(unknown, self._learnt_all([files[i] for i in unknown]), strict=True):
            found[i] = value
        return cast("list[str]", found)

    def expect_git(self, folder: Path | str) -> None:
        """Start :func:`git_clean_blobs` of ``folder`` now, for a later :meth:`digests` of files
        under it that finds too many unknown (a fresh checkout's): git compares the files' stats
        with its index while the caller walks the folder. :meth:`forget_git` stops what no
        :meth:`digests` took."""
        if os.fspath(folder) not in self._ahead:
            self._ahead[os.fspath(folder)] = start_git_clean_blobs(folder)

    def forget_git(self) -> None:
        """Stop the git commands :meth:`expect_git` started that no :meth:`digests` needed."""
        for ahead in self._ahead.values():
            ahead.stop()
        self._ahead.clear()

    def use_git(self, folder: Path | str, blobs: dict[str, str]) -> None:
        """Take ``blobs`` (:func:`git_clean_blobs` of ``folder``: each clean tracked file's blob
        id by its path relative to ``folder``) as the content identity of those files, for the
        files whose size, mtime or inode the memo no longer knows."""
        if blobs:
            self.git.append((os.fspath(folder).rstrip(os.sep) + os.sep, blobs))

    def _blobs(self) -> dict[str, tuple[int, str]]:
        if self._by_blob is None:
            self._by_blob = {entry[4]: (entry[0], entry[3]) for entry in self.entries.values() if len(entry) > 4}
        return self._by_blob

    def merge(self, added: dict[str, list[Any]]) -> None:
        """Take the digests another memo of this file computed (its :attr:`added`)."""
        self.entries.update(added)
        self.added.update(added)
        self.unsaved.update(added)
        self._by_blob = None

    def known(self, path: Path | str, stat: os.stat_result) -> str | None:
        """The file's sha256 when it is remembered for this size, mtime and inode; None (and no
        reading) otherwise."""
        return self.known_as(path, stat.st_size, stat.st_mtime_ns, stat.st_ino)

    def blob_of(self, path: Path | str, stat: os.stat_result) -> str | None:
        """The git blob id the memo learnt for the file (:meth:`use_git`: git said the file held
        that blob's bytes) when it is remembered for this size, mtime and inode; else None."""
        entry = self._as_stated(path, stat.st_size, stat.st_mtime_ns, stat.st_ino)
        return str(entry[4]) if entry is not None and len(entry) > 4 else None

    def known_as(self, path: Path | str, size: int, mtime_ns: int, inode: int) -> str | None:
        """:meth:`known` for a file as it was when those three were read."""
        entry = self._as_stated(path, size, mtime_ns, inode)
        return str(entry[3]) if entry is not None else None

    def _as_stated(self, path: Path | str, size: int, mtime_ns: int, inode: int) -> list[Any] | None:
        """The file's entry when it was remembered with this size, mtime and inode; else None."""
        entry = self.entries.get(str(path))
        return entry if entry is not None and entry[:3] == [size, mtime_ns, inode] else None

    def save(self) -> None:
        """Write what was learnt since the last save: appended to the journal when a whole memo
        was read and the journal is still short, else the whole memo (and no journal)."""
        if self.path is None or not self.unsaved:
            return
        lines = len(self.unsaved)
        if self.journaled is not None and journal_has_room(self.journaled, lines, len(self.entries)):
            append_journal(self.journal, ([path, *entry] for path, entry in self.unsaved.items()))
            self.journaled += lines
        else:
            write_cache_pickle(self.path, "", "files", self.entries)
            self.journal.unlink(missing_ok=True)
            self.path.with_name("hashes.json").unlink(missing_ok=True)  # the layout before the journal
            self.journaled = 0
        self.unsaved = {}


def read_journal(path: Path) -> tuple[list[list[Any]], int]:
    """A journal's rows (each line a JSON list, not empty) and how many lines it has; a line
    cut short by a kill, or two appends interleaved, is passed over. ([], 0) when there is none."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return [], 0
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except (ValueError, TypeError):
            continue
        if isinstance(row, list) and row:
            rows.append(row)
    return rows, len(lines)


def journal_has_room(journaled: int, adding: int, entries: int) -> bool:
    """Whether a save may append ``adding`` lines to a journal of ``journaled`` lines over a
    file of ``entries`` entries (else it writes the whole file again): up to
    :data:`JOURNAL_LINES` lines or an eighth of the entries, whichever is more."""
    return journaled + adding <= max(JOURNAL_LINES, entries // 8)


def append_journal(path: Path, rows: Iterable[list[Any]]) -> None:
    """Append ``rows`` to a journal, a JSON line each, in one write in append mode (a concurrent
    append's lines stay whole)."""
    text = "".join(json.dumps(row) + "\n" for row in rows)
    with path.open("a", encoding="utf-8", errors="surrogateescape") as handle:
        handle.write(text)


class JournaledDict:
    """A cache file holding one dict that a build reads whole and changes a little (what a
    rebuild's scan found clean: 20 000 entries at 10 000 runs, a handful new after one new run):
    a pickle (:func:`write_cache_pickle` with ``salt``) and a journal beside it (``.log``: a line
    per entry set, ``[key, value]``, or removed, ``[key]``, since the pickle was written).
    :meth:`save` appends what changed while the journal is short (:data:`JOURNAL_LINES`, or an
    eighth of the entries), else writes the pickle again and empties the journal. Values must be
    JSON lists or scalars. A journal line lost to a kill leaves an entry as it was before that
    save — the callers' entries are facts about files that stay true (a stale one costs a
    file read again, never a file taken as something it is not)."""

    def __init__(self, path: Path | None, salt: str, field: str):
        self.path, self.salt, self.field = path, salt, field
        #: The entries as the file holds them (the journal applied): what :meth:`save` compares with.
        self.entries: dict[str, Any] = {}
        self.journaled: int | None = None  # lines in the journal; None: no pickle was read
        if path is None:
            return
        self.entries = read_cache_pickle(path, salt, field)
        if not self.entries:
            return  # nothing read (missing, damaged, other code): the next save writes it whole
        rows, self.journaled = read_journal(self.journal)
        for row in rows:
            if not isinstance(row[0], str) or len(row) > 2:
                continue
            if len(row) == 2:
                self.entries[row[0]] = row[1]
            else:
                self.entries.pop(row[0], None)

    @property
    def journal(self) -> Path:
        assert self.path is not None
        return self.path.with_name(self.path.name + ".log")

    def save(self, entries: dict[str, Any], also: Collection[str] = ()) -> None:
        """Make the file hold ``entries`` and, for each key of ``also`` that is not one of them,
        the entry the file holds now, if any (a key it lacks stays out): the 20 000 files a
        rebuild's site carries over are kept as they are, not compared one by one (a set is
        taken as it is). ``entries`` is this object's own from now on, or, with ``also``, the
        file's whole as it held it, changed in place."""
        if self.path is None:
            return
        old = self.entries
        kept = also if isinstance(also, (set, frozenset)) else set(also)
        changed = [(key, value) for key, value in entries.items() if old.get(key, _ABSENT) != value]
        gone = old.keys() - entries.keys() - kept
        removed = [key for key in old if key in gone] if gone else []  # (in the file's order)
        if kept:  # the file's whole: what it held, changed as the journal says
            old.update(changed)
            for key in removed:
                del old[key]
            entries = old
        rows: list[list[Any]] = [[key, value] for key, value in changed] + [[key] for key in removed]
        if self.journaled is not None and journal_has_room(self.journaled, len(rows), len(entries)):
            if rows:
                append_journal(self.journal, rows)
                self.journaled += len(rows)
        else:
            self.journal.unlink(missing_ok=True)  # before the pickle: never a journal on a pickle it was not written on
            write_cache_pickle(self.path, self.salt, self.field, entries)
            self.journaled = 0 if entries else None
        self.entries = entries


_ABSENT = object()


def walked_name(name: str) -> bool:
    """Whether :func:`walk_files` enters or yields a file or folder of this name: not a hidden
    one (``.name``), nor ``__pycache__`` (written by imports)."""
    return not name.startswith(".") and name != "__pycache__"


def walked_path(path: str) -> bool:
    """Whether :func:`walk_files` reaches the file at ``path`` (relative, ``/``-separated):
    :func:`walked_name` of every part (``..``, leaving the folder, is hidden-named too), as two
    substring tests (the publisher asks it of 20 000 files at 10 000 runs)."""
    framed = f"/{path}/"
    return "/." not in framed and "/__pycache__/" not in framed


#: A folder's inode, mtime and ctime (nanoseconds), as a walk or the publisher recorded them.
FolderStat = tuple[int, int, int]
#: A folder whose mtime or ctime is this close to the moment its stat was taken is recorded as
#: not verified: a file system's clock ticks (a few milliseconds for ext4's; two seconds for
#: FAT's), so an entry added just after the stat could leave both times as they were.
RACY_NS = 2_000_000_000


#: File systems whose folders' mtime and ctime change whenever an entry is added, removed or
#: renamed, on this host's own clock (POSIX asks it of every file system, but some network and
#: FUSE mounts — object stores, cloud drives — show fixed folder times, and a remote server's
#: clock may lag this one's): only on these is a folder's stat trusted to say it holds the
#: entries it held (:func:`folder_times_trusted`).
LOCAL_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "jfs",
                                "bcachefs", "reiserfs"})


def folder_times_trusted(path: Path, mountinfo: str = "/proc/self/mountinfo") -> bool:
    """Whether ``path`` lies on one of :data:`LOCAL_FILE_SYSTEMS` (by Linux's mount table: the
    mount point that is the longest prefix of its real path). False elsewhere, or when it cannot
    tell: then folders are listed every time."""
    try:
        real = os.path.realpath(path)
        with open(mountinfo, encoding="utf-8", errors="replace") as table:
            mounts = table.read().splitlines()
    except OSError:
        return False
    best, kind = -1, ""
    for line in mounts:
        fields, _dash, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not rest:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4])  # (octal escapes)
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) > best:
            best, kind = len(point), rest.split()[0]
    return kind in LOCAL_FILE_SYSTEMS


def folder_signature(stat: os.stat_result, taken_ns: int) -> FolderStat | None:
    """A folder's (inode, mtime, ctime), or None when it changed too recently to vouch that a
    later change would change them (:data:`RACY_NS`)."""
    if max(stat.st_mtime_ns, stat.st_ctime_ns) >= taken_ns - RACY_NS:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns


#: The kinds of a folder's entries in a :data:`Listing`: a folder, a regular file, a symbolic
#: link, ``__pycache__``, anything else the walk passes over (hidden, a device, a socket).
_DIR, _FILE, _LINK, _PYCACHE, _SKIP = "d", "f", "l", "p", "s"
#: A folder's stat, then its entries' names in the walk's order (by name, descending) and their
#: kinds, one letter each: what :func:`walk_files` listed, for the next walk.
Listing = tuple[FolderStat, tuple[str, ...], str]


def _kind(entry: os.DirEntry[str]) -> str:
    if not walked_name(entry.name):
        return _PYCACHE if entry.name == "__pycache__" else _SKIP
    if entry.is_symlink():
        return _LINK
    if entry.is_dir(follow_symlinks=False):
        return _DIR
    return _FILE if entry.is_file() else _SKIP


def _listed(folder: str) -> tuple[tuple[str, ...], str]:
    """A folder's entries' names in the walk's order (by name, descending) and their kinds."""
    with os.scandir(folder) as scan:
        entries = sorted(scan, key=lambda e: e.name, reverse=True)
    return tuple(entry.name for entry in entries), "".join(_kind(entry) for entry in entries)


def _entries(folder: str, relative: str, kept: Mapping[str, Listing] | None, listing: dict[str, Listing] | None,
             taken_ns: int, at: tuple[str, int] | None = None) -> tuple[tuple[str, ...], str]:
    """A folder's names and kinds: from ``kept`` while the folder's stat is the one listed there
    (an entry added, removed or renamed changes its folder's mtime and ctime), else listed; what
    can be vouched for next time goes into ``listing``. ``at``: the folder as a path relative to
    an open folder (:func:`walk_files`), for its stat."""
    if listing is None:
        return _listed(folder)
    # before it is listed: a change after this changes what the next walk sees
    stat = os.stat(at[0], dir_fd=at[1]) if at is not None else os.stat(folder)
    signature = (stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns)
    known = kept.get(relative) if kept is not None else None
    if known is not None and known[0] == signature:
        listing[relative] = known
        return known[1], known[2]
    names, kinds = _listed(folder)
    vouched = folder_signature(stat, taken_ns)
    if vouched is not None and _LINK not in kinds:  # (where a link points can change in no folder here)
        listing[relative] = (vouched, names, kinds)
    return names, kinds


def walk_files(root: Path, links: set[str] | None = None, folders: list[str] | None = None,
               left_out: list[str] | None = None, kept: Mapping[str, Listing] | None = None,
               listing: dict[str, Listing] | None = None) -> Iterator[tuple[str, str, os.stat_result]]:
    """(posix path relative to root, path, stat) of every regular file under ``root``, sorted,
    hidden files and folders (``.name``) and ``__pycache__`` (written by imports) left out.
    Paths are strings: a build walks 20 000 run files, and a Path for each cost half the walk.
    ``links`` collects the relative path of every symbolic link met (a linked folder is not
    entered; a linked file is yielded with its target's stat); ``folders``, the relative path of
    every folder entered; ``left_out``, that of every ``__pycache__`` left out.

    With ``listing``, each folder's stat and entries (:data:`Listing`, by its relative path with a
    trailing slash, the root's "") are put there, and a folder whose stat is the one ``kept``
    (an earlier walk's ``listing``) holds is not listed again: its entries are taken from there
    (10 000 run folders stat-ed instead of listed: 0.05–0.06 s less at 10 000 runs). Every file is
    still stat-ed: a file written in place changes no folder. A folder holding a link, or changed
    within :data:`RACY_NS` of the walk, is not put there (it is listed again next time)."""
    if not root.is_dir():
        return
    taken_ns = time.time_ns()
    anchors = _Anchors()
    # Each folder to walk: its path, its path relative to the root, and where it is stat-ed from:
    # (its path relative to an open ancestor, that ancestor's descriptor), else None (by its path).
    stack: list[tuple[str, str, tuple[str, int] | None]] = [(os.fspath(root), "", None)]
    try:
        while stack:
            folder, prefix, at = stack.pop()
            names, kinds = _entries(folder, prefix, kept, listing, taken_ns, at)
            base = folder if folder.endswith("/") else f"{folder}/"  # (os.path.join's, joined once a folder)
            # A folder holding folders is opened, and what lies under it is stat-ed from there (a
            # run folder's files by "run/run.json" from their campaign's folder): the kernel then
            # resolves two names, not the whole path (20 000 run files: 0.06 → 0.04 s).
            here: tuple[str, int] | None = None  # (None: by their paths)
            if _DIR in kinds:
                opened = anchors.open(folder, at, kinds.count(_DIR))
                if opened is not None:
                    here = ("", opened)
            elif at is not None:
                here = (f"{at[0]}/", at[1])
            for name, kind in zip(names, kinds, strict=True):
                if kind == _SKIP:
                    continue
                if kind == _PYCACHE:
                    if left_out is not None:
                        left_out.append(f"{prefix}{name}")
                    continue
                relative = f"{prefix}{name}"
                path = base + name
                if kind == _FILE:
                    yield relative, path, os.stat(here[0] + name, dir_fd=here[1]) if here is not None \
                        else os.stat(path)
                elif kind == _DIR:
                    stack.append((path, relative + "/", (here[0] + name, here[1]) if here is not None else None))
                    if folders is not None:
                        folders.append(relative)
                else:  # a link: its target's stat, when that is a regular file
                    if links is not None:
                        links.add(relative)
                    try:
                        target = os.stat(path)
                    except OSError:
                        continue
                    if stat_module.S_ISREG(target.st_mode):
                        yield relative, path, target
            if at is not None:
                anchors.done(at[1])  # one more of the open folder's subfolders walked
    finally:
        anchors.close()


class _Anchors:
    """The folders :func:`walk_files` holds open, each until its last subfolder is walked."""

    def __init__(self) -> None:
        self.left: dict[int, int] = {}

    def open(self, folder: str, at: tuple[str, int] | None, subfolders: int) -> int | None:
        """``folder`` opened (from ``at`` where given) for its ``subfolders``; None where it
        cannot be (they are then stat-ed by their paths)."""
        try:
            descriptor = os.open(at[0] if at is not None else folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC,
                                 dir_fd=at[1] if at is not None else None)
        except OSError:
            return None
        self.left[descriptor] = subfolders
        return descriptor

    def done(self, descriptor: int) -> None:
        """One more of the folder's subfolders walked: closed after its last."""
        self.left[descriptor] -= 1
        if not self.left[descriptor]:
            del self.left[descriptor]
            os.close(descriptor)

    def close(self) -> None:
        for descriptor in self.left:
            os.close(descriptor)
        self.left.clear()


@dataclass
class StoreWalk:
    """One walk of a run store (:func:`walk_store`): its files as :func:`walk_files` gives them,
    and each campaign folder's stat digest."""

    files: list[tuple[str, str, os.stat_result]]
    #: Each folder directly under the store that holds files: one sha256 over the path, size,
    #: mtime and inode of every file in it (hidden ones left out), or None when it is, or holds,
    #: a symbolic link (what is kept by this key could not tell where a link points now).
    folders: dict[str, str | None]
    #: Every folder the walk entered (relative paths), for :meth:`scan`.
    dirs: list[str] = field(default_factory=list)
    #: Every ``__pycache__`` folder it left out (relative paths), for :meth:`scan`.
    left_out: list[str] = field(default_factory=list)
    #: What the next walk may take from this one (:class:`WalkRecord`), when a record was asked for.
    record: WalkRecord | None = None
    #: The record this walk took its listings from (each campaign folder's digest by content).
    kept: WalkRecord | None = None
    #: The folder walked (for the memo's git lookups: a fresh checkout's files are known by blob id).
    root: str = ""
    #: :attr:`folders` before the folders holding a link were set to None.
    stat_digests: dict[str, str] = field(default_factory=dict, repr=False)
    _contents: dict[str, str] | None = field(default=None, repr=False)
    _stats: dict[str, os.stat_result] | None = field(default=None, repr=False)

    def stat_of(self, relative: str) -> os.stat_result | None:
        """The stat the walk took of the file at ``relative`` (a store path, ``/``-separated), when
        it lies in a campaign folder without a symbolic link — a regular file, reached without a
        link, as :func:`~sparkreport.published.store_stat` asks —; else None (stat it). What a
        publisher running after the walk, in its process, takes instead of stat-ing each file
        again (a fresh checkout's 20 000 files at 10 000 runs, whose folders no record vouches for)."""
        if self._stats is None:
            folders = self.folders
            self._stats = {relative: stat for relative, _path, stat in self.files
                           if folders.get(relative.partition("/")[0]) is not None}
        return self._stats.get(relative)

    def scan(self, runs_dir: Path) -> StoreScan | None:
        """The store's scan (:meth:`~sparkreport.store.RunStore.scan` of ``runs_dir``, the store
        walked) from what the walk listed, without a system call: each run folder's run.json and
        its stat, the run folders without one. None where the walk cannot tell what the scan
        would find: a symbolic link (the scan follows links to run.json and refuses those that
        leave the store), a ``__pycache__`` folder (the walk leaves it out, the scan does not), a
        run.json that is a folder."""
        from sparkreport.published import RUN_FILE
        from sparkreport.store import StoreScan, shown

        if None in self.folders.values() or self.left_out:  # (a folder's digest is None where it holds a link)
            return None
        runs: dict[tuple[str, str], os.stat_result | None] = {}
        for folder in self.dirs:
            if folder.count("/") == 1:
                campaign, _slash, run = folder.partition("/")
                runs[campaign, run] = None
            elif folder.count("/") == 2 and folder.endswith(f"/{RUN_FILE}"):
                return None
        suffix = f"/{RUN_FILE}"
        for relative, _path, stat in self.files:
            if relative.endswith(suffix) and relative.count("/") == 2:
                campaign, run, _name = relative.split("/")
                runs[campaign, run] = stat
        root = os.fspath(runs_dir)
        found = sorted((names, stat) for names, stat in runs.items() if stat is not None)
        incomplete = sorted(shown(f"{campaign}/{run}") for (campaign, run), stat in runs.items()
                            if stat is None and not run.startswith("_"))
        return StoreScan([(os.path.join(root, campaign, run, RUN_FILE), stat) for (campaign, run), stat in found],
                         incomplete, [names for names, _stat in found])

    def contents(self, memo: HashMemo) -> dict[str, str]:
        """Each folder directly under the store that holds files, by content: one sha256 over the
        path and sha256 of every file in it. A folder whose stat digest is the one the kept
        record's walk found (:attr:`kept`) has the content digest recorded with it — the memo's own
        rule (a file of the same size, mtime and inode holds the same bytes) — and only the other
        folders' files are looked up in ``memo`` (read, or known by git's blob ids, when it does not
        know them), in one call (0.03 s at 10 000 runs, 10 000 lookups, when every folder is)."""
        if self._contents is not None:
            return self._contents
        kept = self.kept.contents if self.kept is not None else {}
        stat_digests = self.stat_digests
        same = {top for top, digest in stat_digests.items()
                if self.folders.get(top) is not None and kept.get(top, ("",))[0] == digest}
        rest = [entry for entry in self.files if "/" in entry[0] and entry[0].partition("/")[0] not in same]
        found = dict(zip((entry[0] for entry in rest),
                         memo.digests(Path(self.root), [(path, stat) for _relative, path, stat in rest]), strict=True))
        computed = _folder_digests(rest, None, found)
        contents = {top: kept[top][1] if top in same else computed[top] for top in stat_digests}
        self._contents = contents
        if self.record is not None:
            self.record.contents = {top: (stat_digests[top], contents[top]) for top in stat_digests
                                    if self.folders.get(top) is not None}
        return contents

    def by_content(self, memo: HashMemo) -> dict[str, str | None]:
        """:attr:`folders` keyed by content instead (:meth:`contents`), so that a fresh checkout,
        which gives every file a new mtime and inode, keys each folder as before."""
        content = self.contents(memo)
        return {top: None if digest is None else content[top] for top, digest in self.folders.items()}

    def content_key(self, memo: HashMemo) -> str:
        """One sha256 over the store's content: each folder under it (:meth:`contents`) and each file
        beside them (relative path and sha256) — what changes when any file's path or bytes do."""
        digest = hashlib.sha256()
        beside = [(relative, path, stat) for relative, path, stat in self.files if "/" not in relative]
        known = memo.digests(Path(self.root), [(path, stat) for _relative, path, stat in beside])
        for (relative, _path, _stat), content in sorted(zip(beside, known, strict=True)):
            digest.update(f"file\0{relative}\0{content}\n".encode("utf-8", "surrogateescape"))
        for top, content in sorted(self.contents(memo).items()):
            digest.update(f"folder\0{top}\0{content}\n".encode("utf-8", "surrogateescape"))
        return digest.hexdigest()


#: What a build kept of the store's last walk (:class:`WalkRecord`), in its cache folder.
WALK_FILE = "walk.pickle"


@dataclass
class WalkRecord:
    """What a walk of the run store found, for the next walk (:func:`walk_store`): each folder's
    stat and entries (:data:`Listing`: a folder whose stat is unchanged is not listed again) and
    each campaign folder's digests, by stat and by content (a folder whose files' stats are
    unchanged is not looked up file by file again). A cache: whatever it lacks is listed or
    looked up, and a record of another store, or of other code, is not read."""

    folders: dict[str, Listing] = field(default_factory=dict)
    #: Each campaign folder without a link: (its stat digest, its content digest).
    contents: dict[str, tuple[str, str]] = field(default_factory=dict)

    #: What a record depends on besides the store's path: the code that lists a folder's entries
    #: and digests a campaign (set by :meth:`read`).
    salt: str = ""

    @classmethod
    def read(cls, path: Path | None, root: Path, code: str) -> WalkRecord | None:
        """The record kept at ``path`` for the store ``root`` by this ``code`` (the package's
        digest), or an empty one; None where folder times cannot be trusted
        (:func:`folder_times_trusted`): then the store is listed in full and no record is made."""
        if not folder_times_trusted(root):
            return None
        salt = f"walk-1:{os.fspath(root)}:{code}"
        folders, contents = read_cache_pickle(path, salt, "folders", "contents")
        return cls(folders, contents, salt)

    def payload(self) -> bytes:
        """The record as its file holds it (:func:`write_cache_pickle`'s layout): made where it is
        walked (a forked process), written where the build writes its caches."""
        return cache_pickle_bytes(self.salt, "folders", self.folders, contents=self.contents)

    @staticmethod
    def write(path: Path, payload: bytes) -> None:
        _atomic_bytes(path, payload)

    def same(self, other: WalkRecord | None) -> bool:
        return other is not None and self.folders == other.folders and self.contents == other.contents


def _stat_description(_path: str, stat: os.stat_result) -> str:
    return f"{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ino}"


def fresh_checkout(root: Path, kept: WalkRecord | None) -> bool:
    """Whether the store at ``root`` is another folder than the one the last walk recorded
    (``kept``): another inode, as a fresh checkout — a CI job's clone, its caches restored —
    gives it and every file in it, so that the hash memo, which knows files by their inode,
    will know none and ask git for their blob ids (:meth:`HashMemo.expect_git` starts that
    before the walk). False without a record, where no record can be kept (folder times not
    trusted) or before a first walk: nothing says the files are new."""
    listing = kept.folders.get("") if kept is not None else None
    if listing is None:
        return False
    try:
        return os.stat(root).st_ino != listing[0][0]
    except OSError:
        return False


def walk_store(root: Path, kept: WalkRecord | None = None) -> StoreWalk:
    """Walk the run store once: what the build key hashes, and a key per campaign folder that a
    cache of what is read from the folder's files can be kept by, without reading a file. With
    ``kept`` (the last walk's :class:`WalkRecord`, maybe empty), the folders it vouches for are
    not listed again, and the walk's own record is made (:attr:`StoreWalk.record`)."""
    links: set[str] = set()
    dirs: list[str] = []
    left_out: list[str] = []
    record = WalkRecord(salt=kept.salt) if kept is not None else None
    files = list(walk_files(root, links, dirs, left_out, kept.folders if kept is not None else None,
                            record.folders if record is not None else None))
    stat_digests = _folder_digests(files, _stat_description)
    folders: dict[str, str | None] = dict(stat_digests)
    for link in links:
        folders[link.partition("/")[0]] = None
    return StoreWalk(files, folders, dirs, left_out, record, kept, root=os.fspath(root), stat_digests=stat_digests)


def _folder_digests(files: Sequence[tuple[str, str, os.stat_result]],
                    describe: Callable[[str, os.stat_result], str] | None,
                    known: Mapping[str, str] | None = None) -> dict[str, str]:
    """One sha256 per folder directly under a walked root over the relative path and
    ``describe(path, stat)`` of each file in it (or ``known[relative]``)."""
    # Each folder's lines joined, then hashed at once: the same digest as one update per line.
    lines: dict[str, list[str]] = {}
    for relative, path, stat in files:
        top, slash, rest = relative.partition("/")
        if not slash:
            continue  # a file beside the campaigns
        described = describe(path, stat) if describe is not None else cast("Mapping[str, str]", known)[relative]
        lines.setdefault(top, []).append(f"{rest}\0{described}\n")
    return {top: hashlib.sha256("".join(folder).encode("utf-8", "surrogateescape")).hexdigest()
            for top, folder in lines.items()}


#: Files under a folder whose stat the memo no longer knows from which :meth:`HashMemo.digests`
#: (and the name index) asks git for their blob ids (two git commands, ~0.1 s at 10 000 runs)
#: instead of reading them all.
GIT_AFTER = 64


def tree_digest(root: Path, memo: HashMemo, files: Sequence[tuple[str, str, os.stat_result]] | None = None) -> str:
    """One sha256 over every file under ``root`` (relative path + content hash); ``files``: the
    root's :func:`walk_files` already walked. When many files have a size, mtime or inode the
    memo does not know (a fresh checkout), the clean ones git tracks are known by blob id."""
    walked = sorted(walk_files(root) if files is None else files)
    contents = memo.digests(root, [(path, stat) for _relative, path, stat in walked])
    digest = hashlib.sha256()
    for (relative, _path, _stat), content in zip(walked, contents, strict=True):
        # A file name need not be UTF-8 (os.fsdecode keeps other bytes as surrogates): hash its bytes.
        digest.update(f"{relative}\0{content}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def git_clean_blobs(folder: Path | str) -> dict[str, str]:
    """The git blob id of each file under ``folder`` that git tracks and reports unchanged in the
    working tree (``git ls-files --stage`` less ``git diff-files``, which compares each file's
    stat with the index's and reads the racily clean ones), by its path relative to ``folder``;
    {} outside a work tree, without git, or on any error from it (then files are read). Regular
    files only: no links, submodules or conflicted paths."""
    return start_git_clean_blobs(folder).answer()


def start_git_clean_blobs(folder: Path | str) -> CleanBlobs:
    """:func:`git_clean_blobs` of ``folder`` with its two git commands started now, side by side."""
    arguments = ("-z", "--", ".")
    return CleanBlobs(GitRun(folder, "ls-files", "--stage", *arguments, timeout=60),
                      GitRun(folder, "diff-files", "--name-only", "--relative", *arguments, timeout=60))


class CleanBlobs(NamedTuple):
    """The two git commands of :func:`git_clean_blobs`, started; :meth:`answer` reads them."""

    listed: GitRun
    changed: GitRun

    def answer(self) -> dict[str, str]:
        import subprocess

        try:
            listed = self.listed.output()
            changed = set(self.changed.output().split(b"\0"))
        except (OSError, subprocess.SubprocessError):
            self.stop()
            return {}
        blobs: dict[str, str] = {}
        for line in listed.split(b"\0"):
            meta, _tab, name = line.partition(b"\t")
            mode, _space, rest = meta.partition(b" ")
            blob, _space, stage = rest.partition(b" ")
            if mode in (b"100644", b"100755") and stage == b"0" and name not in changed:
                blobs[os.fsdecode(name)] = blob.decode("ascii")
        return blobs

    def stop(self) -> None:
        self.listed.stop()
        self.changed.stop()


class GitRun:
    """A git command started at once in ``folder`` (``git -C folder ARGUMENTS``), its standard
    output read when asked for (:meth:`output`): what a build asks git about the project is
    started before the walk of the store that needs it, so that git's work (a stat of every
    tracked file, for ``status`` and ``diff-files``) runs beside the walk instead of after it."""

    def __init__(self, folder: Path | str, *arguments: str, timeout: float):
        import subprocess

        self.timeout = timeout
        self.command = ["git", "-C", os.fspath(folder), *arguments]
        self._process: subprocess.Popen[bytes] | None = None
        self._failed: OSError | None = None
        try:
            self._process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                             stderr=subprocess.DEVNULL)
        except OSError as exc:  # no git
            self._failed = exc

    def output(self) -> bytes:
        """What the command printed; OSError where it could not start, subprocess's
        CalledProcessError where it failed, TimeoutExpired (the command killed) where it took
        more than ``timeout`` seconds from now."""
        import subprocess

        if self._process is None:
            raise self._failed or OSError(f"{self.command[0]}: not started")
        try:
            out, _err = self._process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        if self._process.returncode:
            raise subprocess.CalledProcessError(self._process.returncode, self.command, out)
        return out

    def stop(self) -> None:
        """The command killed if it still runs, and waited for (no process left behind)."""
        if self._process is not None and self._process.returncode is None:
            self._process.kill()
            self._process.communicate()


def code_signature(*modules: str | None, salt: str = "") -> str:
    """One sha256 over ``salt`` and the bytes of the given source files (``module.__file__``):
    what a cache of one step's output is keyed by, so that another version of that code starts
    it afresh."""
    digest = hashlib.sha256(salt.encode())
    for module in modules:
        digest.update(Path(str(module)).read_bytes())
    return digest.hexdigest()


#: :func:`package_digest` of the package folder, once a process.
_PACKAGE_DIGESTS: dict[str, str] = {}


def package_digest(memo: HashMemo) -> str:
    """The sparkreport package's own files: a code or template change invalidates every cache.

    Computed once a process (a build asked for it eight times, each a walk of the package and a
    stat of each of its files: 1.6 ms with the build's memo, 18.7 ms with a memo of no file,
    which reads them all): the code a process runs is what it imported, whatever happens to the
    files meanwhile. ``memo`` only spares reading the files; the memo a later
    call gives learns nothing, which costs nothing (a memo keeps what it learnt before)."""
    import sparkreport

    root = str(Path(sparkreport.__file__).resolve().parent)
    found = _PACKAGE_DIGESTS.get(root)
    if found is None:
        found = _PACKAGE_DIGESTS[root] = tree_digest(Path(root), memo)
    return found


def digest_of(run_digests: Mapping[str, str], run_ids: Iterable[str]) -> str:
    """One sha256 over the named runs' content digests (``Dataset.run_digests``), independent
    of their order and of repeats; KeyError for a run id that is not in ``run_digests``."""
    digest = hashlib.sha256(b"sparkreport-runs-1\n")
    # one text, hashed at once: the digest of the lines one after the other (an update per run was
    # most of the 10 ms a build spent on its 50 campaigns' first digests at 10 000 runs)
    digest.update("".join([f"{run_id}\0{run_digests[run_id]}\n"
                           for run_id in sorted(set(run_ids))]).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def inputs_digest(parts: Iterable[tuple[str, str]]) -> str:
    """One key from named parts (each already a digest or a plain value)."""
    digest = hashlib.sha256(f"sparkreport-cache-{CACHE_VERSION}\n".encode())
    for name, value in parts:
        digest.update(f"{name}\0{value}\n".encode())
    return digest.hexdigest()


class BlobCache:
    """Derived files by the hash of their input: ``<dir>/<hash[:2]>/<hash>.<suffix>``."""

    def __init__(self, root: Path, suffix: str):
        self.root = root
        self.suffix = suffix
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.{self.suffix}"

    def get(self, key: str) -> bytes | None:
        try:
            data = self._path(key).read_bytes()
        except OSError:
            self.misses += 1
            return None
        self.hits += 1
        return data

    def put(self, key: str, data: bytes) -> None:
        _atomic_bytes(self._path(key), data)


class RecordCache:
    """Validated run records by the run.json's content hash, one pickle per shard (a campaign).

    Reading a run.json costs a JSON parse and a validation; this keeps the validated record
    for files whose bytes did not change. Each shard is its own file under ``folder``, rewritten
    only when one of its records changed: one new run rewrites its campaign's records, not the
    whole store's (41 MB at 10 000 runs, ~0.3 s to pickle and write).

    What the caller keeps with a shard (:meth:`put_extra`) is in two parts: a small head, read
    with the records, and a body in a file of its own beside the shard's, read only when the
    caller asks for it (:meth:`extra_body`) — a campaign's runs table, which a build after one new
    run needs for that campaign alone.

    A ``lazy`` cache reads each shard's file only when that shard is first asked for: the Runs
    pages' rows (:mod:`sparkreport.render.runs_index`), of which a build after one new run needs
    one campaign's.
    """

    #: The suffix of a shard's body file (the shard's own file ends in ``.pickle``).
    BODY = ".body"
    #: The suffix of a file the caller writes beside a shard itself (:meth:`texts_path`: the
    #: dataset's records' canonical JSON, :class:`~sparkreport.dataset.ShardTexts`), removed with it.
    TEXTS = ".texts"

    def __init__(self, folder: Path | None, salt: str = "", *, lazy: bool = False):
        self.folder = folder
        #: What else the records depend on (the package's code): a different salt drops them all.
        self.salt = salt
        self.shards: dict[str, dict[str, Any]] = {}
        #: What else is kept with a shard's records (:meth:`extra`): saved and dropped with them.
        self.extras: dict[str, Any] = {}
        #: Each extra's body (:meth:`extra_body`) once read or put, and what it was put with.
        self.bodies: dict[str, Any] = {}
        self.checks: dict[str, str] = {}
        self.changed: set[str] = set()
        #: Every shard file in the folder, read or not (another salt's, a damaged one): those no
        #: shard is saved to are removed by the next save.
        self.found: set[Path] = set()
        #: Lazy: each shard's file is read when the shard is first asked for (a build that needs
        #: a few campaigns' shards reads only theirs); the shards asked for so far.
        self.lazy = lazy
        self.asked: set[str] = set()
        #: The shards :meth:`keep_only` kept without reading them (lazy): their files stay.
        self.unread_kept: set[str] = set()
        if folder is not None and folder.is_dir():
            self.found = {*folder.glob("*.pickle"), *folder.glob(f"*{self.BODY}"), *folder.glob(f"*{self.TEXTS}")}
        for path in [] if lazy else sorted(p for p in self.found if p.suffix == ".pickle"):
            self._read(path)

    def _read(self, path: Path, name: str | None = None) -> None:
        """Take in the shard kept at ``path`` (when it is the one named ``name``, if given)."""
        shard = read_cache_pickle(path, self.salt, "shard")
        if isinstance(shard.get("name"), str) and isinstance(shard.get("records"), dict) \
                and (name is None or shard["name"] == name):
            self.shards[shard["name"]] = shard["records"]
            self.extras[shard["name"]] = shard.get("extra")
            if isinstance(shard.get("check"), str):
                self.checks[shard["name"]] = shard["check"]

    def _ask(self, shard: str) -> None:
        """A lazy cache reads ``shard``'s file the first time it is asked for."""
        if self.lazy and shard not in self.asked:
            self.asked.add(shard)
            if shard not in self.shards and self.has_file(shard):
                self._read(self.shard_path(shard), shard)

    def has_file(self, shard: str) -> bool:
        """Whether ``shard`` has a file in the folder (read or not)."""
        return self.folder is not None and self.shard_path(shard) in self.found

    def get(self, shard: str, digest: str) -> Any:
        self._ask(shard)
        return self.shards.get(shard, {}).get(digest)

    def put(self, shard: str, digest: str, record: Any) -> None:
        self._ask(shard)
        self.shards.setdefault(shard, {})[digest] = record
        self.changed.add(shard)

    def extra(self, shard: str) -> Any:
        """The head of what the caller kept with ``shard``'s records (derived from them: a
        campaign's key, its tables' columns), None if nothing; the caller checks it is still
        what it wants."""
        self._ask(shard)
        return self.extras.get(shard)

    def extra_body(self, shard: str) -> Any:
        """The body kept with ``shard``'s head, read from its file when first asked for; None
        when there is none, or its file is gone or was written with another head (a build
        killed between the two writes): the caller makes it again."""
        self._ask(shard)
        if shard not in self.bodies and shard in self.checks and self.folder is not None:
            kept = read_cache_pickle(self.body_path(shard), self.salt, "body")
            if kept.get("check") == self.checks[shard]:
                self.bodies[shard] = kept.get("value")
        return self.bodies.get(shard)

    def put_extra(self, shard: str, head: Any, body: Any, check: str) -> None:
        """Keep ``head`` with ``shard``'s records and ``body`` beside them, both made from what
        ``check`` names (the caller's key of the records they were made from)."""
        self._ask(shard)
        self.extras[shard] = head
        self.bodies[shard] = body
        self.checks[shard] = check
        self.changed.add(shard)

    def put_head(self, shard: str, head: Any) -> None:
        """Replace the head kept with ``shard``'s records (:meth:`extra`) by one made from the same
        records: its body stays as it was put (the same check)."""
        self._ask(shard)
        self.extras[shard] = head
        self.changed.add(shard)

    def keep_only(self, digests: Mapping[str, set[str]]) -> None:
        """Forget records no longer in the store, and shards no longer in it (the cache does not
        grow without bound). A lazy cache's shard never read keeps its file when it is wanted
        (what it holds beyond the wanted records goes when it is next read and saved)."""
        self.unread_kept = {shard for shard in digests if shard not in self.asked and self.has_file(shard)} \
            if self.lazy else set()
        for shard in list(self.shards):
            wanted = digests.get(shard)
            if wanted is None:
                del self.shards[shard]
                for kept in (self.extras, self.bodies, self.checks):
                    kept.pop(shard, None)
                self.changed.add(shard)
                continue
            entries = self.shards[shard]
            stale = [d for d in entries if d not in wanted]
            for digest in stale:
                del entries[digest]
            if stale:
                self.changed.add(shard)

    def shard_path(self, shard: str) -> Path:
        assert self.folder is not None
        return self.folder / f"{hashlib.sha256(shard.encode('utf-8', 'surrogateescape')).hexdigest()[:32]}.pickle"

    def body_path(self, shard: str) -> Path:
        return self.shard_path(shard).with_suffix(self.BODY)

    def texts_path(self, shard: str) -> Path:
        return self.shard_path(shard).with_suffix(self.TEXTS)

    def save(self) -> None:
        if self.folder is None or not self.changed:
            return
        for shard in sorted(self.changed & set(self.shards)):
            check = self.checks.get(shard)
            if check is not None and shard in self.bodies:  # the body first: a shard names no body not yet written
                body = {"version": CACHE_VERSION, "salt": self.salt,
                        "body": {"check": check, "value": self.bodies[shard]}}
                _atomic_bytes(self.body_path(shard), pickle.dumps(body, protocol=pickle.HIGHEST_PROTOCOL))
            payload = {"version": CACHE_VERSION, "salt": self.salt,
                       "shard": {"name": shard, "records": self.shards[shard], "extra": self.extras.get(shard),
                                 "check": check}}
            _atomic_bytes(self.shard_path(shard), pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
        kept = {path for shard in (*self.shards, *self.unread_kept)
                for path in (self.shard_path(shard), self.body_path(shard), self.texts_path(shard))}
        for stale in self.found - kept:  # a removed campaign's, another salt's, a damaged file
            stale.unlink(missing_ok=True)
        self.found = {path for path in kept if path.exists()}
        self.changed = set()


class WritesLater:
    """Cache files a build writes while it waits for its builder instead of where it makes them:
    the stacked tables and the analysis (0.05–0.08 s each at 10 000 runs, on the build's path
    when written at once) go out while MkDocs converts the pages in its own process and this one
    has nothing to do. A file put again replaces its earlier write (the last state is the one to
    keep). What is put must not change before :meth:`run`: the stacked tables hand the dataset
    copies. A build that fails before it gets there writes none of them — a cache only costs the
    next build the time to compute them again."""

    def __init__(self) -> None:
        self._writes: dict[str, Callable[[], None]] = {}

    def put(self, path: Path, write: Callable[[], None]) -> None:
        self._writes[str(path)] = write

    def run(self) -> None:
        writes, self._writes = self._writes, {}
        for write in writes.values():
            write()


def write_later(later: WritesLater | None, path: Path | None, write: Callable[[], None]) -> None:
    """``write()`` (of ``path``) put off to ``later`` — a build's writes, made while its builder
    builds —, or made now without one (or without a path to keep it by)."""
    if later is not None and path is not None:
        later.put(path, write)
    else:
        write()


#: The cyclic collector's thresholds for a command (:func:`batch_collector`); Python's own are
#: (700, 10, 10). A young collection every 500 000 new objects: at 50 000 a new run's build at
#: 10 000 runs made four that walked 35 000–73 000 objects each and freed ~600 in all
#: (0.03–0.07 s of the build's CPU; a cold build 0.2 s), with the same peak memory either way
#: (bench/README.md, issue 16, fortieth round).
GC_THRESHOLDS = (500_000, 20, 20)

#: What the native libraries a command loads read from the environment when they load, set for
#: their import only (:func:`import_tuned`), unless the environment sets them. OpenBLAS (numpy's,
#: and scipy's own, which :mod:`sparkreport.scipy_ufuncs` loads with scipy.special's functions)
#: starts a pool of threads per CPU that spin while the imports go on — 0.05 s of CPU for numpy's
#: and 0.13 s for scipy's, taken from the store's walk beside them; nothing a build computes uses
#: more than one thread of BLAS. pyarrow 26's mimalloc marks its 1 GiB arena for transparent huge
#: pages (``allow_thp``): with the kernel's THP in ``madvise`` mode, each first touch of 2 MiB of
#: Arrow memory then waited for the kernel to find, compact and zero a huge page — 3 ms to 0.25 s
#: for the same 10 MB of text columns, at random — and a forked worker that writes to one copies
#: 2 MiB (bench/README.md, issue 16, thirty-ninth round).
TUNED_IMPORTS: dict[str, dict[str, str]] = {
    "numpy": {"OPENBLAS_NUM_THREADS": "1"},
    "sparkreport.scipy_ufuncs": {"OPENBLAS_NUM_THREADS": "1"},
    "pyarrow": {"MIMALLOC_ALLOW_THP": "0"},
}


def import_tuned(module: str) -> None:
    """Import ``module`` (once a process) with the options :data:`TUNED_IMPORTS` names for its
    native library in the environment for the import only: a library reads them when it loads,
    and no process this one starts later — a benchmark's — inherits them. A value the
    environment gives is kept; nothing is set while other threads run (the environment is not
    theirs to see change). An import that fails is left to the import that needs the module."""
    import importlib
    import sys
    import threading

    options = {} if module in sys.modules or threading.active_count() > 1 else {
        name: value for name, value in TUNED_IMPORTS.get(module, {}).items() if name not in os.environ}
    os.environ.update(options)
    try:
        importlib.import_module(module)
    except ImportError:
        pass
    finally:
        for name in options:
            del os.environ[name]


def batch_collector() -> None:
    """Tune Python's cyclic garbage collector for a command that builds a large graph of objects
    which live until it ends (the dataset, the analysis, the MkDocs pages). With the default
    thresholds a collection runs every 700 new objects and every 100th walks the whole heap:
    at 10 000 runs a build spent 1.1–2.5 s in 13 full collections that freed next to nothing.
    With these, cyclic garbage is still collected (every 500 000 new objects, the whole heap
    rarely); peak memory measured the same (bench/README.md, issue 16, eighth and fortieth
    rounds)."""
    gc.set_threshold(*GC_THRESHOLDS)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block: building hundreds of thousands of
    objects that all stay alive (unpickling a cache, parsing ten thousand run.json) otherwise
    triggers collection after collection that finds nothing — half of an unpickle's time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            # What the block made counts as new: re-enabled as it is, the collector's next pass
            # would walk all of it (0.2 s after a 10 000-run load). Freezing and unfreezing moves
            # every tracked object into the oldest generation instead, walked only by the rare
            # full collection.
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def write_cache_pickle(path: Path, salt: str, field: str, value: dict[str, Any], **more: dict[str, Any]) -> None:
    """``value`` as ``field`` of a cache pickle (this CACHE_VERSION, ``salt``), and each of
    ``more`` as a field of its name, written atomically: what :func:`read_cache_pickle` reads
    back. A pickle, not JSON, for the files a build reads and writes whole every time: a third
    to a half of JSON's time each way at 10 000 runs."""
    _atomic_bytes(path, cache_pickle_bytes(salt, field, value, **more))


def cache_pickle_bytes(salt: str, field: str, value: dict[str, Any], **more: dict[str, Any]) -> bytes:
    """What :func:`write_cache_pickle` writes, as bytes (for a process that writes no file, or
    a head pickled ahead: :func:`write_cache_parts`)."""
    return pickle.dumps({"version": CACHE_VERSION, "salt": salt, field: value, **more},
                        protocol=pickle.HIGHEST_PROTOCOL)


def write_cache_parts(path: Path, head: bytes, **later: dict[str, Any]) -> None:
    """A cache pickle made ahead (``head``: :func:`cache_pickle_bytes`), then ``later`` 's fields
    as a second pickle, written atomically: what :func:`read_cache_pickle` reads back as one
    with ``parts=2`` (the fields known early are pickled while there is time, the rest at the end)."""
    _atomic_bytes(path, head + pickle.dumps(later, protocol=pickle.HIGHEST_PROTOCOL))


@overload
def read_cache_pickle(path: Path | None, salt: str, field: str, /, *, parts: int = 1) -> dict[str, Any]: ...


@overload
def read_cache_pickle(path: Path | None, salt: str, field: str, *fields: str,
                      parts: int = 1) -> tuple[dict[str, Any], ...]: ...


def read_cache_pickle(path: Path | None, salt: str, field: str, *fields: str, parts: int = 1) -> Any:
    """``field`` of a cache pickle written with this CACHE_VERSION and ``salt``; {} when the file is
    missing, unreadable, damaged or from other code. With more ``fields``, one dict each, in
    order (a field the file lacks: {}). A file :func:`read_ahead` read is taken from there while
    it is unchanged. ``parts``: the file holds that many pickles one after the other — the cache
    pickle, then dicts of more fields, written later than it (:func:`cache_pickle_bytes` of what
    is known early, then the rest) —, read as one; a file cut short is none."""
    names = (field, *fields)
    found: list[dict[str, Any]] = [{} for _name in names]
    if path is not None and path.is_file():
        try:
            data = _taken_ahead(path) if parts == 1 else None
            if data is None:
                with path.open("rb") as handle, gc_paused():
                    data = pickle.load(handle)  # noqa: S301 (our own cache file under build/)
                    for _part in range(parts - 1):
                        more = pickle.load(handle)  # noqa: S301
                        if not isinstance(data, dict) or not isinstance(more, dict):
                            raise ValueError(path)
                        data.update(more)
            if isinstance(data, dict) and data.get("version") == CACHE_VERSION and data.get("salt") == salt:
                entries = data[field]
                found = [entries if isinstance(entries, dict) else {},
                         *(value if isinstance(value := data.get(name), dict) else {} for name in fields)]
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, KeyError, ValueError, TypeError):
            pass
    return found[0] if not fields else tuple(found)


#: Cache pickles :func:`read_ahead` unpickled, by path: the file's (inode, size, mtime) then,
#: and what it held.
_READ_AHEAD: dict[str, tuple[tuple[int, int, int], Any]] = {}


def read_ahead(path: Path) -> None:
    """Unpickle the cache file ``path`` now for the :func:`read_cache_pickle` that will read it:
    what a build's process does while it waits for the store's walk (a CI job's fresh clone is
    walked for longer than the process imports; in place it rarely waits). The next read of the
    file takes it, if the file is unchanged since; :func:`forget_read_ahead` drops what no read
    took."""
    try:
        stat = os.stat(path)
        with open(path, "rb") as handle, gc_paused():
            data = pickle.load(handle)  # noqa: S301 (our own cache file under build/)
    except Exception:  # noqa: BLE001 — the read itself meets it and says so its own way
        return
    _READ_AHEAD[os.fspath(path)] = ((stat.st_ino, stat.st_size, stat.st_mtime_ns), data)


def _taken_ahead(path: Path) -> Any:
    """What :func:`read_ahead` read of ``path`` (once), if the file is still what it read; else None."""
    kept = _READ_AHEAD.pop(os.fspath(path), None)
    if kept is None:
        return None
    stat = os.stat(path)
    return kept[1] if kept[0] == (stat.st_ino, stat.st_size, stat.st_mtime_ns) else None


def forget_read_ahead() -> None:
    """Drop what :func:`read_ahead` read and no read took (a build that kept its site)."""
    _READ_AHEAD.clear()


class AnalysisCache:
    """Analysis results by the digest of exactly what they were computed from, one pickle.

    Entries are grouped by kind (``arm_stats`` per arm, ``compare``/``check``/``facts`` per
    campaign); each key is an :func:`inputs_digest` of the runs read (``digest_of`` their
    run.json digests), the options and whatever global context the result depends on. The
    salt (the package digest) drops everything when the code changes. ``computed`` and
    ``reused`` count entries per kind, so a test can see that one new run recomputed one arm.

    A save after a new run changes a few entries of thousands: it appends them, and the keys
    it forgot, as one frame to a journal beside the pickle (``analysis.pickle.journal``), which
    reading applies in order; only when the journal would outgrow :attr:`JOURNAL_SHARE` of the
    pickle is the whole written again (8 MB at 10 000 runs, while MkDocs converts the pages: each
    value kept pickled on its own, the rewrite copies their bytes). Every entry is keyed by what it
    was computed from, so a frame lost to a kill only costs the next build the time to compute it
    again. Reading leaves each value pickled until :meth:`get` asks for it (:class:`Pickled`).

    Beside the entries, *whole* tables by kind and context (:meth:`whole`, :meth:`put_whole`):
    the last build's statistics and comparisons as the pages read them, which the next build
    splices (:mod:`sparkreport.analysis.splice`). They are written whole on every save of a build
    (``analysis-whole.pickle``, ~6 MB at 10 000 runs), never into the journal.
    """

    #: The cache's pickle, in a build's cache folder.
    FILE = "analysis.pickle"
    #: The whole tables' file, beside the cache's pickle.
    WHOLE_FILE = "analysis-whole.pickle"

    #: The share of the campaigns whose entries of a per-campaign kind are missing above which
    #: :meth:`campaign_parts` computes the whole store at once instead of campaign by campaign.
    WHOLE_WHEN_MISSING = 0.5
    #: A save appends what changed to the journal beside the pickle while the journal stays
    #: within this share of the pickle's size; beyond it, the whole cache is written again.
    JOURNAL_SHARE = 0.5

    def __init__(self, path: Path | None, salt: str = ""):
        self.path = path
        self.salt = salt
        #: The written pickle's own mark, which each journal frame repeats (None: nothing was
        #: read, or a pickle of older code: the next save writes the whole cache).
        self.token: str | None = None
        self.pickle_bytes = 0
        self.journal_bytes = 0
        self.entries: dict[str, dict[str, Any]] = self._read()
        #: The values unpickled so far (:meth:`get`), by kind and key.
        self._values: dict[tuple[str, str], Any] = {}
        #: What changed since the cache was read or last saved: entries set, and entries removed.
        self.put_since: dict[tuple[str, str], Any] = {}
        self.dropped: set[tuple[str, str]] = set()
        self.changed = False
        #: Where :meth:`save` puts its write off to (a build's: while it waits for its builder);
        #: None: it writes at once.
        self.later: WritesLater | None = None
        #: The whole tables by kind and context (None until :meth:`whole` first reads them), and
        #: whether one was put since they were read or saved.
        self._wholes: dict[str, Any] | None = None
        self._wholes_changed = False
        self.renew()

    def renew(self) -> None:
        """Start a round of use of the entries (each render of a session is one): what a round
        does not ask for is forgotten by its :meth:`save`."""
        from collections import Counter

        self.used: dict[str, set[str]] = {}
        self.computed: Counter[str] = Counter()
        self.reused: Counter[str] = Counter()
        #: How each kind's whole table was made this round: "spliced" from the last one
        #: (:mod:`sparkreport.analysis.splice`) or "whole"; the whole tables asked for.
        self.how: dict[str, str] = {}
        self._wholes_used: set[str] = set()
        #: The whole table each kind's last call made or spliced and kept (:meth:`put_whole`),
        #: which the caller takes (:meth:`take_made`) with the table it handed out.
        self.made: dict[str, Any] = {}

    @staticmethod
    def key(*parts: tuple[str, object]) -> str:
        """One key from named parts (each rendered with ``repr`` unless it is a string)."""
        return inputs_digest((name, value if isinstance(value, str) else repr(value)) for name, value in parts)

    def get(self, kind: str, key: str) -> Any:
        """The stored value, or None (a miss). Each value is kept pickled on its own inside the
        cache's pickle (:class:`Pickled`) and unpickled the first time it is asked for: what an
        entry of the journal replaced or dropped, or a kind a build does not ask for, is never
        unpickled (a new run's build read a journal of up to 4 MB of entries that later frames
        had replaced), and writing the whole cache again copies bytes instead of pickling every
        frame and list anew."""
        self.used.setdefault(kind, set()).add(key)
        value = self.entries.get(kind, {}).get(key)
        if value is not None:
            self.reused[kind] += 1
            if isinstance(value, (Pickled, PickledLater)):
                found = self._values.get((kind, key))
                if found is None:
                    found = self._values[kind, key] = value.value()
                return found
        return value

    def keep(self, kind: str, keys: Iterable[str]) -> None:
        """Count the entries of ``keys`` (those stored) as asked for and reused, without
        unpickling them: a whole table spliced from the last build (:meth:`whole`) stands for
        them, and they stay for a build that cannot splice."""
        stored = self.entries.get(kind, {})
        found = [key for key in keys if key in stored]
        self.used.setdefault(kind, set()).update(found)
        self.reused[kind] += len(found)
        marker = f"{kind}:primed"  # (what campaign_parts marks a kind kept campaign by campaign with)
        if marker in stored:
            self.used[kind].add(marker)

    @property
    def whole_path(self) -> Path | None:
        return self.path.with_name(self.WHOLE_FILE) if self.path is not None else None

    def whole(self, kind: str, context: str) -> Any:
        """The whole table of ``kind`` made in ``context`` (what it depends on besides the
        campaigns' rows: options, keys) that a build kept (:meth:`put_whole`), or None. A build
        may make one kind in several contexts (the statistics per environment and per the
        factor's level): each is kept."""
        if self._wholes is None:
            self._wholes = read_cache_pickle(self.whole_path, self.salt, "wholes")
        self._wholes_used.add(f"{kind}\0{context}")
        return self._wholes.get(f"{kind}\0{context}")

    def put_whole(self, kind: str, context: str, value: Any, how: str) -> None:
        """Keep ``value`` as the whole table of ``kind`` in ``context`` (made ``how``:
        "spliced" or "whole"), written by the next :meth:`save` of a build, which keeps only the
        tables asked for since the last; it must not change until then (the caller hands out a
        copy)."""
        self.whole(kind, context)
        assert self._wholes is not None
        self._wholes[f"{kind}\0{context}"] = value
        self._wholes_changed = True
        self.how[kind] = how
        self.made[kind] = value

    def take_made(self, kind: str, make: Callable[[], T]) -> tuple[T, Any]:
        """``make()`` (a call that may keep a whole table of ``kind``) and the whole table it
        kept (a :class:`~sparkreport.analysis.splice.Whole`), or None when it kept none."""
        self.made.pop(kind, None)
        return make(), self.made.pop(kind, None)

    def whole_annotated(self) -> None:
        """A whole table handed out this round got what the render keeps with it
        (:attr:`~sparkreport.analysis.splice.Whole.row_hashes`): the next save writes them again."""
        self._wholes_changed = True

    def put(self, kind: str, key: str, value: Any) -> None:
        self.used.setdefault(kind, set()).add(key)
        self._set(kind, key, PickledLater(value))
        self.computed[kind] += 1

    def _set(self, kind: str, key: str, stored: Any) -> None:
        self.entries.setdefault(kind, {})[key] = self.put_since[kind, key] = stored
        self._values.pop((kind, key), None)
        self.dropped.discard((kind, key))
        self.changed = True

    def primed(self, kind: str) -> bool:
        """Whether an earlier build kept entries of ``kind`` (and mark that this one does). The
        first build of a cache folder (every CI build that does not keep ``build/``) computes
        per-campaign kinds over the whole store at once, as fast as without a cache, and keeps
        each campaign's share of the result under that campaign's key; later builds read them
        campaign by campaign."""
        marker = f"{kind}:primed"
        self.used.setdefault(kind, set()).add(marker)
        if marker in self.entries.get(kind, {}):
            return True
        self._set(kind, marker, True)
        return False

    def get_or(self, kind: str, key: str, compute: Callable[[], T]) -> T:
        """The stored value, or ``compute()`` stored under ``key``."""
        found = self.get(kind, key)
        if found is not None:
            return found
        value = compute()
        self.put(kind, key, value)
        return value

    def campaign_parts(self, kind: str, campaigns: Sequence[str], key: Callable[[str], str],
                       whole: Callable[[], tuple[W, Mapping[str, V] | None]], part: Callable[[str], V],
                       empty: Callable[[], V]) -> tuple[W | None, list[V]]:
        """A per-campaign kind (``compare``, ``check``, ``facts``), one campaign per entry under
        ``key(campaign)``.

        The first build of a cache folder (:meth:`primed` false) calls ``whole()`` once — the
        result over the whole store and each campaign's share of it, as that campaign's view
        computes it (None: the result cannot be split; the next build computes every campaign)
        — keeps the shares (``empty()`` for a campaign without one) and returns ``(result, [])``.
        So does a later use that finds fewer than half of the campaigns' entries (other options,
        a changed configuration: computing campaign by campaign then costs up to twice the whole,
        measured at 10 000 runs). Otherwise ``(None, parts)``: each campaign's entry, or
        ``part(campaign)`` computed on its view and kept, in ``campaigns``' order."""
        keys = {campaign: key(campaign) for campaign in campaigns}
        stored = self.entries.get(kind, {})
        missing = sum(1 for entry in keys.values() if entry not in stored)
        if not self.primed(kind) or missing > self.WHOLE_WHEN_MISSING * len(keys):
            result, shares = whole()
            if shares is not None:
                for campaign in campaigns:
                    self.put(kind, keys[campaign], shares[campaign] if campaign in shares else empty())
            return result, []
        return None, [self.get_or(kind, keys[campaign], functools.partial(part, campaign)) for campaign in campaigns]

    def save(self, forget: bool = True) -> None:
        """Write the entries, forgetting those of a kind used this time that were not asked for
        (the cache follows the store instead of growing with every run ever seen). Without
        ``forget`` (a command that reads the store with its own options, between two builds),
        the new entries are added to all that was kept, which the next build's save trims. With
        :attr:`later`, all of it happens there (the entries then asked for are the ones kept)."""
        write_later(self.later, self.path, functools.partial(self._save, forget))

    def _save(self, forget: bool) -> None:
        whole_path = self.whole_path
        if forget and self._wholes is not None and whole_path is not None:  # (a build's: not another command's)
            unused = self._wholes.keys() - self._wholes_used
            for key in unused:
                del self._wholes[key]
            if self._wholes_changed or unused:
                write_cache_pickle(whole_path, self.salt, "wholes", self._wholes)
                self._wholes_changed = False
        for kind, keys in self.used.items() if forget else ():
            stored = self.entries.get(kind, {})
            stale = [key for key in stored if key not in keys]
            for key in stale:
                del stored[key]
                self._values.pop((kind, key), None)
                self.put_since.pop((kind, key), None)
                self.dropped.add((kind, key))
            self.changed = self.changed or bool(stale)
        if self.path is None or not self.changed:
            return
        if self.token is not None:
            frame = pickle.dumps({"token": self.token, "put": [(kind, key, value) for (kind, key), value
                                                                in self.put_since.items()],
                                  "drop": sorted(self.dropped)}, protocol=pickle.HIGHEST_PROTOCOL)
            size = _FRAME_HEAD.size + len(frame)
            if self.journal_bytes + size <= self.JOURNAL_SHARE * self.pickle_bytes:
                with self.journal.open("ab") as handle:  # one write: a concurrent append stays whole
                    handle.write(_FRAME_HEAD.pack(len(frame)) + frame)
                self.journal_bytes += size
                self._saved()
                return
        # The journal goes first: a pickle is never read with frames that were not written on it
        # (each frame names the pickle it follows, too).
        self.journal.unlink(missing_ok=True)
        self.token = os.urandom(12).hex()
        write_cache_pickle(self.path, self.salt, "entries", self.entries, journal={"token": self.token})
        self.pickle_bytes, self.journal_bytes = self.path.stat().st_size, 0
        self._saved()

    def _saved(self) -> None:
        self.put_since, self.dropped = {}, set()
        self.changed = False

    @property
    def journal(self) -> Path:
        """The frames appended since the pickle was written (``analysis.pickle.journal``)."""
        assert self.path is not None
        return self.path.with_name(self.path.name + ".journal")

    def _read(self) -> dict[str, dict[str, Any]]:
        """The entries as the last save left them: the pickle, then each journal frame written on
        it (entries put, entries removed), in order. {} when the pickle is missing, unreadable,
        damaged or from other code; a frame cut short (a kill while it was appended) ends the
        journal, and a frame of another pickle (written by a process that read the cache before
        it was written again) is passed over."""
        if self.path is None:
            return {}
        entries, meta = read_cache_pickle(self.path, self.salt, "entries", "journal")
        token = meta.get("token")
        if not entries or not isinstance(token, str):
            return entries  # nothing read, or code before the journal wrote it: the next save writes it whole
        try:
            self.token, self.pickle_bytes = token, self.path.stat().st_size
        except OSError:
            return entries
        try:
            journal = self.journal.read_bytes()
        except OSError:
            return entries
        self.journal_bytes = len(journal)
        for frame in _frames(journal):
            try:
                with gc_paused():
                    item = pickle.loads(frame)  # noqa: S301 (our own cache file under build/)
                if item.get("token") != token:
                    continue
                for kind, key, value in item["put"]:
                    entries.setdefault(kind, {})[key] = value
                for kind, key in item["drop"]:
                    entries.get(kind, {}).pop(key, None)
            except (pickle.UnpicklingError, EOFError, AttributeError, KeyError, ValueError, TypeError, IndexError,
                    ImportError):
                break
        return entries


#: Each journal frame's head: the length of the pickle that follows (8 bytes, little-endian).
_FRAME_HEAD = struct.Struct("<Q")


def _frames(journal: bytes) -> Iterator[bytes]:
    """The whole frames of a journal, in order; a frame cut short ends it."""
    at = 0
    while at + _FRAME_HEAD.size <= len(journal):
        (length,) = _FRAME_HEAD.unpack_from(journal, at)
        at += _FRAME_HEAD.size
        if at + length > len(journal):
            return
        yield journal[at:at + length]
        at += length


@dataclass(frozen=True)
class Pickled:
    """A value kept pickled inside a cache's own pickle, unpickled by :meth:`value` (each time:
    the caller keeps what it uses) — each value of the analysis cache (:meth:`AnalysisCache.get`
    keeps what it unpickled), each campaign's records (:class:`~sparkreport.dataset.RecordGraphs`)."""

    data: bytes

    @classmethod
    def of(cls, value: Any) -> Pickled:
        return cls(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def value(self) -> Any:
        with gc_paused():
            return pickle.loads(self.data)


class PickledLater:
    """A value put into a cache as :class:`Pickled`, pickled only when the cache is written
    (which a build puts off until its builder runs: the history, ~0.5 MB pickled at 10 000
    runs, is put while the build plans its pages); read back as the :class:`Pickled` it makes,
    and as itself (:meth:`value`) by the process that put it."""

    __slots__ = ("_value",)

    def __init__(self, value: Any):
        self._value = value

    def pickled(self) -> Pickled:
        return Pickled.of(self._value)

    def value(self) -> Any:
        """The value put (not a copy: as :meth:`AnalysisCache.get` hands out what it unpickled)."""
        return self._value

    def __reduce__(self) -> tuple[Any, ...]:
        return (Pickled, (self.pickled().data,))


C = TypeVar("C", RecordCache, AnalysisCache, "StackedTables")


class Held:
    """The caches a process that renders again and again (``serve``'s session) keeps in memory
    between renders, instead of reading their files again: each is reused while it is the same
    file or folder and salt (the package's digest), else read afresh. What they save is what a
    cache read from disk would save."""

    def __init__(self) -> None:
        self._caches: dict[type, tuple[tuple[Path | None, str], Any]] = {}

    def cache(self, kind: type[C], where: Path | None, salt: str) -> C:
        """The ``kind`` cache of ``where`` with ``salt``: the one held, or a new one (then held)."""
        found = self._caches.get(kind)
        if found is not None and found[0] == (where, salt):
            return cast("C", found[1])
        made = kind(where, salt=salt)
        self._caches[kind] = ((where, salt), made)
        return made


def cache_of(held: Held | None, kind: type[C], where: Path | None, salt: str) -> C:
    """The ``kind`` cache of ``where`` with ``salt``: the one ``held`` keeps (a process that
    renders again and again), else read now for this command."""
    return held.cache(kind, where, salt) if held is not None else kind(where, salt=salt)


def analysis_cache(cache_dir: Path | None, held: Held | None = None,
                   hashes: HashMemo | None = None) -> AnalysisCache | None:
    """The analysis cache of a build (``build/cache/analysis.pickle``), salted with the
    package's digest like the record cache; None without a cache folder. ``held``: the one
    kept in memory by a process that renders again and again (``serve``'s session,
    :class:`Held`), each render a new round of its use."""
    if cache_dir is None:
        return None
    cache = cache_of(held, AnalysisCache, cache_dir / AnalysisCache.FILE, package_digest(HashMemo(None)))
    cache.renew()  # a held cache starts a new round of use (a new one has just started its first)
    return cache
