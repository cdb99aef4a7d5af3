"""Publishing the runs' files (run.json, raw logs, tables) into a built site, after the builder.

The Runs pages link each run's files under ``runs/files/<campaign>/…``. Handing 30 000 files of
a 10 000-run store to MkDocs as static files cost more than the pages themselves (a File object,
a modification check and a copy each); ``render`` instead writes a manifest (every published
file: site path ← run-store path, :data:`sparkreport.published.MANIFEST`) into the docs folder,
and :func:`publish_listed` publishes them — from a process beside the build, into a folder beside
the new site (:func:`sparkreport.site.publish_run_files_beside`), whichever builder (MkDocs or
Zensical) builds the pages. Files are copied, never linked: the site must not share files with
``runs/``, the source of truth.

What is published, and how:

* only the files a run's ``run.json`` lists (``provenance.raw_files`` and ``tables``) and
  run.json itself — never a file reached through a symbolic link (:func:`sparkreport.published.store_stat`);
* run.json as a filtered copy: its environment variables down to the allowlist
  (:func:`sparkreport.published.published_env`), whatever an old record holds;
* raw files as inert text: a name whose suffix is not in :data:`sparkreport.published.SAFE_SUFFIXES` gets ``.txt``
  (``evil.html`` → ``evil.html.txt``), so that no browser runs or renders it as a document;
  files over :data:`sparkreport.published.COMPRESS_ABOVE` are published gzip-compressed (``.gz``).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat as stat_module
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.cache import FolderStat, folder_signature, folder_times_trusted, walked_path
from sparkreport.published import COMPRESS_LEVEL, RUN_FILE, published_env, store_stat

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping

    from sparkreport.cache import HashMemo


def publish_file(source: str, target: Path, size: int) -> None:
    """Copy ``source`` to ``target``, gzip-compressed (reproducibly: no name, mtime 0) when its
    published name says so (large, and not gzip already)."""
    if target.suffix != ".gz" or source.endswith(".gz"):
        shutil.copyfile(source, target)
        return
    with open(source, "rb") as raw, open(target, "wb") as out, \
            gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=COMPRESS_LEVEL, mtime=0) as packed:
        shutil.copyfileobj(raw, packed, 1 << 20)


def publish_run_json(source: str, target: Path, size: int) -> None:
    """A run.json as published: its environment variables down to :func:`published_env`. A
    record the filter leaves as it is (what the executor and the ingest write: they record by
    the same allowlist) is published byte for byte; only one it changes is written anew
    (``json.dumps`` with an indent is Python's slow encoder: 3.6 s of a cold build at 10 000 runs)."""
    with open(source, "rb") as handle:
        raw = handle.read()
    text = raw
    # UTF-8 JSON in which no key is, or decodes to, env_vars has nothing to filter: not parsed.
    unfiltered = b"env_vars" not in raw and b"\\u" not in raw and b"\x00" not in raw
    data = None if unfiltered else json.loads(raw)
    details = (data.get("environment") or {}).get("details") if isinstance(data, dict) else None
    if isinstance(details, dict) and "env_vars" in details:
        allowed = published_env(details)
        if allowed != details["env_vars"]:
            details["env_vars"] = allowed
            text = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    if target.suffix == ".gz":
        target.write_bytes(gzip.compress(text, compresslevel=COMPRESS_LEVEL, mtime=0))
    else:
        target.write_bytes(text)


def copy_files(runs_dir: Path, site: Path, files: list[tuple[str, str]]) -> int:
    """Copy the manifest's files into ``site`` (run.json filtered, large files compressed);
    a file reached through a symbolic link is skipped. Returns the number of files copied."""
    return publish_files(runs_dir, site, files).copied


@dataclass
class Published:
    """What publishing the runs' files did: files written fresh, files hard-linked unchanged
    from the previous site, files kept in the live site's run-files folder (which the swap
    carries over whole: :class:`Carry`), and the record of every published file for the next build."""

    copied: int = 0
    linked: int = 0
    record: dict[str, list[Any]] = field(default_factory=dict)
    carry: Carry | None = None
    #: How many of ``record``'s entries name a file's mtime and inode, not its sha256
    #: (:func:`complete_record` has something to do only when some do).
    unhashed: int = 0
    #: Each store folder's stat digest from the build's walk (:attr:`~sparkreport.cache.StoreWalk.folders`),
    #: kept with ``record``: the next build takes a folder's entries from the record, without
    #: a system call per file, while its digest is the same (:func:`publish_files`).
    folders: dict[str, str] = field(default_factory=dict)
    #: The folders of the run-files folder as published (site path → inode, mtime and ctime, or
    #: None: not verified), kept with ``record`` (:func:`checked_folders`); None: not known.
    dirs: dict[str, FolderStat | None] | None = None

    @property
    def kept(self) -> int:
        return len(self.carry.kept) if self.carry is not None else 0


@dataclass
class Carry:
    """A rebuild that carries the live site's run-files folder ``root`` (``runs/files``) over
    into the new site instead of rebuilding it: the new site holds only the ``incoming`` files
    (new or changed, written and scanned like any other), and the swap
    (:func:`sparkreport.site.publish.swap`) moves the live folder in, the incoming files into
    it and the ``removed`` ones out — a few renames instead of ten thousand folders made, linked
    and removed. ``kept``: the files carried over unchanged (site paths)."""

    root: str
    incoming: list[str]
    removed: list[str]
    kept: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "incoming": self.incoming, "removed": self.removed}


#: The record of the published run files, in the build cache: site path → the source's size
#: and sha256 when it was published, with the code signature and the run store (a pickle:
#: :func:`record_head`), then the run-files folder's folders (a second pickle: :func:`save_record`).
RECORD_FILE = "published-files.pickle"
RECORD_VERSION = 3


def publisher_signature() -> str:
    """A digest of the code that decides a published file's bytes (names, env filter, gzip):
    another version republishes everything."""
    from sparkreport import published
    from sparkreport.cache import code_signature
    from sparkreport.execute import envcapture

    return code_signature(published.__file__, envcapture.__file__, __file__, salt=str(RECORD_VERSION))


def load_record(cache_dir: Path, runs_dir: Path, site_dir: Path) -> dict[str, list[Any]]:
    """The published files of the live site ``site_dir`` (as the last successful build recorded
    them); {} when there is no record, or it was made by other code, for another run store or
    for another site folder."""
    return load_record_and_folders(cache_dir, runs_dir, site_dir)[0]


def load_record_and_folders(cache_dir: Path, runs_dir: Path,
                            site_dir: Path) -> tuple[dict[str, list[Any]], dict[str, str]]:
    """:func:`load_record`, and the store folders' stat digests it was kept with
    (:attr:`Published.folders`; {} with no record)."""
    files, folders, _dirs = load_published_record(cache_dir, runs_dir, site_dir)
    return files, folders


def load_published_record(cache_dir: Path, runs_dir: Path, site_dir: Path
                          ) -> tuple[dict[str, list[Any]], dict[str, str], dict[str, FolderStat | None]]:
    """:func:`load_record_and_folders`, and the live run-files folder's folders as it was
    published (:attr:`Published.dirs`; {} with no record). The file is two pickles: the head
    (:func:`record_head`), then the folders (:func:`save_record`)."""
    from sparkreport.cache import read_cache_pickle

    files, folders, dirs = read_cache_pickle(cache_dir / RECORD_FILE, _record_salt(runs_dir, site_dir), "files",
                                             "folders", "dirs", parts=2)
    return (files, folders, dirs) if files else ({}, {}, {})


def record_head(runs_dir: Path, site_dir: Path, record: dict[str, list[Any]],
                folders: Mapping[str, str] | None = None) -> bytes:
    """The record's first part, pickled (:func:`save_record` writes it): what a site publishes
    of the runs' files and the store folders' stat digests when they were published — known,
    with the files published beside the new site, before the builder has built. A build pickles
    it while the builder builds (~0.015 s at 10 000 runs), not after the swap, where only the
    folders' stats are left to pickle."""
    from sparkreport.cache import cache_pickle_bytes

    return cache_pickle_bytes(_record_salt(runs_dir, site_dir), "files", record, folders=dict(folders or {}))


def save_record(cache_dir: Path, runs_dir: Path, site_dir: Path, record: dict[str, list[Any]],
                folders: Mapping[str, str] | None = None,
                dirs: Mapping[str, FolderStat | None] | None = None, head: bytes | None = None) -> None:
    """Record what the site ``site_dir``, just published, holds of the runs' files, the store
    folders' stat digests when they were published (``folders``) and the run-files folder's
    folders (``dirs``, :func:`checked_folders`). ``head``: :func:`record_head` of ``record`` and
    ``folders``, pickled already."""
    from sparkreport.cache import write_cache_parts

    head = head if head is not None else record_head(runs_dir, site_dir, record, folders)
    write_cache_parts(cache_dir / RECORD_FILE, head, dirs=dict(dirs or {}))
    (cache_dir / "published-files.json").unlink(missing_ok=True)  # the layout before the pickle


def _record_salt(runs_dir: Path, site_dir: Path) -> str:
    """What a record is valid for: this publisher's code, this run store, this site folder."""
    return "\0".join([publisher_signature(), os.fsdecode(runs_dir), os.fsdecode(site_dir)])


def publish_files(runs_dir: Path, site: Path, files: list[tuple[str, str]], *, previous: Path | None = None,
                  record: dict[str, list[Any]] | None = None, memo: HashMemo | None = None,
                  folders: Mapping[str, str | None] | None = None,
                  recorded_folders: Mapping[str, str] | None = None,
                  recorded_dirs: Mapping[str, FolderStat | None] | None = None,
                  stat_of: Callable[[str], os.stat_result | None] | None = None) -> Published:
    """Publish the manifest's files into ``site``. A file whose source is unchanged since it
    was published into ``previous`` (the live site: the same size and sha256 as ``record``
    says — content, not mtime or inode, so a fresh checkout of the same store counts as
    unchanged; the digests come from the build's ``memo``, which the build key has just
    brought up to date) is not copied again: when the live site's run-files folder holds exactly what
    ``record`` says (:func:`carry_plan`), only the new and changed files are written and the
    folder is carried over at the swap (:class:`Carry`); otherwise each unchanged file is
    hard-linked from the live site. The others are copied (run.json filtered, large files
    compressed) on a few threads. Nothing is ever written through a link: every write goes to
    a new file of ``site``. A file reached through a symbolic link is skipped.

    ``folders``: each store folder's stat digest from the build's walk of the store (None for a
    folder with a symbolic link), kept with the record (:attr:`Published.folders`);
    ``recorded_folders``: those the record was kept with. A folder whose digest is unchanged
    holds the files it held, of the size, mtime and inode they had (what the file digests are
    trusted by, :class:`~sparkreport.cache.HashMemo`): their entries are taken from the record
    as they are, without stat-ing them one by one (at 10 000 runs, 30 000 system calls and
    ~0.15 s of CPU beside the dataset and the analysis); an entry that names a file's stat
    rather than its sha256, or a path the walk's digest does not cover (:func:`~sparkreport.cache.walked_path`), is
    looked at as usual. ``recorded_dirs``: the live run-files folder's folders as the record
    was kept with them (:func:`carry_plan` checks the live folder by them). ``stat_of``: a file's
    stat as the build's walk of the store took it, in this process just before
    (:meth:`~sparkreport.cache.StoreWalk.stat_of`; None where it cannot vouch): the files of a
    folder whose digest changed — every folder of a fresh checkout — are not stat-ed again."""
    root = str(runs_dir)
    record = record or {}
    out = Published()
    found: list[tuple[str, str, os.stat_result | None]] = []
    checked: dict[str, bool] = {}
    same_folders = {top for top, digest in (folders or {}).items()
                    if digest is not None and (recorded_folders or {}).get(top) == digest} if record else set()
    for target, source in files:  # plain strings: 20 000 files at 10 000 runs
        kept = record.get(target) if source.partition("/")[0] in same_folders else None
        if kept is not None and not str(kept[1]).startswith(STAT_KEY) and walked_path(source):
            found.append((target, source, None))  # stat-ed only if it must be copied
            out.record[target] = kept
            continue
        stat = (stat_of(source) if stat_of is not None else None) or store_stat(root, source, checked)
        if stat is not None:
            found.append((target, source, stat))
            key = _content_key(memo, os.path.join(root, source), stat, bool(record))
            out.record[target] = [stat.st_size, key]
            out.unhashed += key.startswith(STAT_KEY)
    out.folders = {top: digest for top, digest in (folders or {}).items() if digest is not None}
    before = str(previous) if previous is not None and record else None
    plan = carry_plan(Path(before), site, record, out.record, recorded_dirs) if before is not None else None
    carried = plan[0] if plan is not None else None
    out.dirs = plan[1] if plan is not None else None
    jobs: list[tuple[str, str, int, bool]] = []
    made: set[str] = set()
    site_root = str(site)
    for target, source, stat in found:
        unchanged = before is not None and record.get(target) == out.record[target]
        if unchanged and carried is not None:
            continue  # stays in the live folder, which the swap carries over
        destination = os.path.join(site_root, target)
        parent = os.path.dirname(destination)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        if unchanged and before is not None:
            try:
                os.link(os.path.join(before, target), destination)
                out.linked += 1
                continue
            except OSError:  # gone from the previous site, or another file system: copy it
                pass
        stat = stat if stat is not None else store_stat(root, source, checked)
        if stat is None:  # taken from the record, and gone since the walk: not published
            del out.record[target]
            continue
        jobs.append((os.path.join(root, source), destination, stat.st_size, os.path.basename(source) == RUN_FILE))

    def run(job: tuple[str, str, int, bool]) -> None:
        source, destination, size, is_record = job
        if is_record:
            publish_run_json(source, Path(destination), size)
        else:
            publish_file(source, Path(destination), size)

    with ThreadPoolExecutor(max_workers=4) as pool:  # copies and zlib release the GIL
        for _ in pool.map(run, jobs):
            pass
    out.copied = len(jobs)
    if carried is not None:
        same = {t for t in out.record if record.get(t) == out.record[t]}
        out.carry = Carry(carried, incoming=[t for t in out.record if t not in same],
                          removed=sorted(set(record) - set(out.record)), kept=sorted(same))
    return out


#: How a record names a file's content it did not hash: its mtime and inode (see complete_record).
STAT_KEY = "stat:"


def _content_key(memo: HashMemo | None, path: str, stat: os.stat_result, compare: bool) -> str:
    """What the record keeps of a published file's content: its sha256 from ``memo`` — hashed
    now only when there is a record to ``compare`` with (a rebuild) —, else its mtime and inode
    (a cold build's publisher, which starts before the build key has hashed the store:
    :func:`complete_record` puts the build's digests in before the record is saved)."""
    known = memo.known(path, stat) if memo is not None else None
    if known is not None:
        return known
    if memo is not None and compare:
        return memo.digest(path, stat)
    return f"{STAT_KEY}{stat.st_mtime_ns}:{stat.st_ino}"


def complete_record(record: dict[str, list[Any]], listed: list[tuple[str, str]], runs_dir: Path,
                    memo: HashMemo) -> dict[str, list[Any]]:
    """``record`` with the sha256 the build's ``memo`` holds for each file published unhashed
    (same size, mtime and inode as when it was published); a file the memo does not know keeps
    its mtime and inode, which no later record equals (the next build copies it again)."""
    out = dict(record)
    root = str(runs_dir)
    for target, source in listed:
        value = out.get(target)
        if value is None or not str(value[1]).startswith(STAT_KEY):
            continue
        mtime_ns, inode = (int(part) for part in str(value[1]).removeprefix(STAT_KEY).split(":"))
        digest = memo.known_as(os.path.join(root, source), value[0], mtime_ns, inode)
        if digest is not None:
            out[target] = [value[0], digest]
    return out


def carry_plan(live: Path, site: Path, record: dict[str, list[Any]], now: dict[str, list[Any]],
               dirs: Mapping[str, FolderStat | None] | None = None
               ) -> tuple[str, dict[str, FolderStat | None]] | None:
    """The live site's run-files folder (site path, ``runs/files``) when a rebuild may carry it
    over whole, and its folders as checked (:func:`checked_folders`); else None (then unchanged
    files are hard-linked one by one). It may when every published file lies under one such
    folder, the new site has none yet, and the live folder holds exactly the files ``record``
    lists as regular files — nothing added by hand, nothing missing — so that what is carried
    over was published, and scanned, by an earlier build.

    With ``dirs`` (the folders' stats kept with ``record``), only the folders that changed since
    are listed (:func:`checked_folders`): at 10 000 runs, ~10 000 ``lstat`` calls instead of
    listing ~10 000 folders of ~20 000 files (0.2–0.3 s of the publisher's CPU, beside the
    dataset and the analysis). Without them, or when they do not describe the live folder, every
    folder is listed (:func:`folder_stats`)."""
    names = list(record) + list(now)
    parts = names[0].split("/") if names else []
    if len(parts) < 3:
        return None
    root = "/".join(parts[:2])
    prefix = root + "/"
    if any(not name.startswith(prefix) for name in names) or os.path.lexists(site / root):
        return None
    folder = live / root
    if folder.is_symlink() or not folder.is_dir():
        return None
    checked = checked_folders(live, root, record, dirs) if dirs and folder_times_trusted(folder) else None
    if checked is None:
        checked = folder_stats(live, root, record)
    return (root, checked) if checked is not None else None


def _listing(path: str) -> dict[str, bool] | None:
    """A folder's entries, each name → whether it is a folder; None when it holds anything but
    regular files and folders (a link, a device)."""
    out: dict[str, bool] = {}
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                out[entry.name] = True
            elif entry.is_file(follow_symlinks=False):
                out[entry.name] = False
            else:
                return None
    return out


def _listed_as_stated(top: Path | str, folder: str, children: Mapping[str, bool], taken_ns: int,
                      before: os.stat_result | None = None) -> tuple[bool, FolderStat | None]:
    """Whether ``folder`` (a site path under ``top``) holds exactly ``children`` (name → is a
    folder), and its stat to record (None when it changed lately): ``before``, its lstat taken
    before it is listed, else taken here. The stat from before the listing is what is recorded: an
    entry added or removed after it changes the folder's mtime and ctime, which then differ from
    the record (the next build lists the folder again), and one that changed within
    :data:`~sparkreport.cache.RACY_NS` of ``taken_ns`` is recorded as not verified (None)."""
    path = os.path.join(top, folder)
    try:
        stat = before if before is not None else os.lstat(path)
        listed = _listing(path) if stat_module.S_ISDIR(stat.st_mode) else None
    except OSError:
        return False, None
    if listed != children:
        return False, None
    return True, folder_signature(stat, taken_ns)


def _expected(root: str, names: Collection[str]) -> dict[str, dict[str, bool]] | None:
    """Every folder ``names`` (site paths of files under ``root``) need, with what each holds
    (name → is a folder); None when a name is not under ``root`` or is a file and a folder both."""
    expected: dict[str, dict[str, bool]] = {root: {}}
    cut = len(root) + 1
    for name in names:
        if not name.startswith(root + "/"):
            return None
        parts = name[cut:].split("/")
        folder = root
        for i, part in enumerate(parts):
            is_folder = i < len(parts) - 1
            children = expected.setdefault(folder, {})
            if children.setdefault(part, is_folder) != is_folder or not part:
                return None
            folder = f"{folder}/{part}"
    return expected


#: Folders to list again up to which :func:`checked_folders` reads what each must hold in a pass
#: of its own over the record's names (:func:`_children`), not all folders' in one (:func:`_expected`).
CHILDREN_ONE_BY_ONE = 8


def _children(names: Collection[str], folders: list[str]) -> dict[str, dict[str, bool]] | None:
    """What each of ``folders`` (site paths) holds by ``names`` (site paths of files): name → is
    a folder, as :func:`_expected` says it of every folder, in a pass over ``names`` per folder:
    ~3 ms each for 20 000 names, where :func:`_expected` makes every folder's in 0.04 s. None when
    a name is a file and a folder both in one of them, or has an empty part."""
    out: dict[str, dict[str, bool]] = {}
    for folder in folders:
        prefix = folder + "/"
        cut = len(prefix)
        children = out[folder] = {}
        for name in names:
            if name.startswith(prefix):
                part, slash, _rest = name[cut:].partition("/")
                if children.setdefault(part, bool(slash)) != bool(slash) or not part:
                    return None
    return out


def folder_stats(top: Path, root: str, names: Collection[str]) -> dict[str, FolderStat | None] | None:
    """Every folder under ``top / root`` with its stat (site paths; :data:`FolderStat`, or None
    when it changed lately or while it was listed), when ``top / root`` holds exactly the files
    ``names`` lists — as regular files, with no other file, folder, link or empty folder —;
    else None. Lists every folder: what a build records the first time, and checks when it has
    no record to go by."""
    expected = _expected(root, names)
    if expected is None:
        return None
    taken_ns = time.time_ns()
    out: dict[str, FolderStat | None] = {}
    for folder, children in expected.items():
        held, stat = _listed_as_stated(top, folder, children, taken_ns)
        if not held:
            return None
        out[folder] = stat
    out[root] = None  # moved into the new site next (a rename changes its ctime)
    return out


def checked_folders(live: Path, root: str, record: Collection[str],
                    dirs: Mapping[str, FolderStat | None]) -> dict[str, FolderStat | None] | None:
    """``dirs`` — the folders of the run-files folder as the last build left it — checked against
    ``live / root``, with each folder's stat now; None when the live folder may not hold exactly
    the files ``record`` lists.

    A folder's mtime and ctime change whenever an entry is added to it, removed from it or renamed
    in it (and a ctime cannot be set back), so a folder whose inode, mtime and ctime are as
    recorded holds the entries it held when it was recorded — when the files it held were those
    the record lists, as it was then checked (:func:`folder_stats`, or this function, which
    lists every folder that is not as recorded, or was recorded as not verified, and compares it
    with the record). The folders a build's swap changes (the root, and those of the files it
    moved in or out: :func:`swapped_folders`) are recorded as not verified, and the others keep
    their stat, so one new run lists three folders."""
    if root not in dirs or any(folder != root and not folder.startswith(root + "/") for folder in dirs):
        return None
    out: dict[str, FolderStat | None] = {}
    again: list[tuple[str, os.stat_result]] = []  # (each with its stat, which its listing records)
    top = os.path.join(live, "")
    is_folder = stat_module.S_ISDIR
    taken_ns = time.time_ns()
    for folder, recorded in dirs.items():
        try:
            stat = os.lstat(top + folder)
        except OSError:
            return None
        if not is_folder(stat.st_mode):
            return None
        if recorded is not None and (stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns) == recorded:
            out[folder] = recorded
        else:
            again.append((folder, stat))
    if not again:
        return out
    folders = [folder for folder, _stat in again]
    # a pass over the record's names for each folder listed again (after one new run: the root,
    # its campaign and its own folder), else one pass for every folder (0.04 s at 10 000 runs)
    expected = _children(record, folders) if len(folders) <= CHILDREN_ONE_BY_ONE else _expected(root, record)
    if expected is None:
        return None
    for folder, stat in again:
        children = expected.get(folder)
        if not children or any(holds_folder and f"{folder}/{name}" not in dirs
                               for name, holds_folder in children.items()):
            return None  # a folder the record needs that the last build did not record
        held, now = _listed_as_stated(top, folder, children, taken_ns, stat)
        if not held:
            return None
        out[folder] = now
    return out


def swapped_folders(carry: Carry, dirs: Mapping[str, FolderStat | None], site: Path) -> dict[str, FolderStat | None]:
    """The run-files folder's folders once the swap carried it over into ``site``: as ``dirs``
    (:attr:`Published.dirs`, as checked before the swap) but for those the swap changed — the
    root (moved), and every folder of a file it moved in or out, up to the root (made, emptied,
    removed) — recorded as not verified, or left out when the swap removed them."""
    out = dict(dirs)
    touched = {carry.root}
    for name in (*carry.incoming, *carry.removed):
        folder = name.rpartition("/")[0]
        while folder.startswith(carry.root + "/") and folder not in touched:
            touched.add(folder)
            folder = folder.rpartition("/")[0]
    for folder in touched:
        try:
            held = stat_module.S_ISDIR(os.lstat(site / folder).st_mode)
        except OSError:
            held = False
        if held:
            out[folder] = None
        else:
            out.pop(folder, None)
    return out


def publish_listed(runs_dir: Path, files: list[tuple[str, str]], site_dir: Path, *, previous: Path | None = None,
                   cache_dir: Path | None = None, memo: HashMemo | None = None,
                   folders: Mapping[str, str | None] | None = None,
                   stat_of: Callable[[str], os.stat_result | None] | None = None) -> Published:
    """:func:`publish_files` of ``files`` (site path, store path), with the live site's record
    from the build cache ``cache_dir`` and its file digests (``memo``, the build's when it has
    read them, else read here); ``folders``: the store folders' stat digests from the build's
    walk, if it made one, and ``stat_of`` the stats it took (in this process)."""
    if cache_dir is None:
        return publish_files(runs_dir, site_dir, files)
    from sparkreport.cache import HASHES_FILE, HashMemo

    record, recorded, dirs = load_published_record(cache_dir, runs_dir, previous) if previous is not None \
        else ({}, {}, {})
    return publish_files(runs_dir, site_dir, files, previous=previous if record else None, record=record,
                         memo=memo if memo is not None else HashMemo(cache_dir / HASHES_FILE),
                         folders=folders, recorded_folders=recorded, recorded_dirs=dirs, stat_of=stat_of)
