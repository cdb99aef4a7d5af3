"""The run store: ``runs/<campaign>/<run_id>/run.json`` plus the raw files beside it.

``runs/`` is the source of truth; everything downstream is regenerated from it. Writes are
atomic: a run folder is assembled under a temporary name and renamed into place, so a
crash leaves either the whole run or nothing. Sources that hold many runs (an aggregate
JSON) are kept once per campaign under ``_sources/<sha256[:16]>/`` and referenced from each
run's ``provenance.raw_files``.
"""

from __future__ import annotations

import csv
import errno
import hashlib
import io
import itertools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISLNK
from typing import Any, Protocol

from sparkreport.errors import SchemaError, SparkreportError
from sparkreport.lock import store_lock
from sparkreport.names import shown, strip_bidi
from sparkreport.schema import RunRecord
from sparkreport.secrets import find_credentials, scrub_bytes, scrub_strings

RUN_FILE = "run.json"

#: Raw files kept as they are, without a credential scan: sample and per-request tables
#: (numbers, timestamps, GPU names). Scanning them cost more than the rest of an ingest
#: (a 2.6 MB nvidia-smi CSV: ~0.3 s); ``sparkreport scrub`` and the build's scan still read them.
DATA_SUFFIXES = (".csv", ".csv.gz")


def stored_bytes(name: str, data: bytes) -> bytes:
    """A raw file's bytes as the store keeps them: credential shapes scrubbed from text (gzip
    read through), except for :data:`DATA_SUFFIXES`."""
    return data if name.endswith(DATA_SUFFIXES) else scrub_bytes(data)

_STAGING_NUMBERS = itertools.count()


def _staging_folder(final: Path) -> Path:
    """A new, empty dot-folder beside ``final`` to assemble it in.

    Named by process and a counter rather than by ``mkdtemp``, which makes the folder private
    (0700) and would need a chmod: a run folder gets the usual permissions, in one system call.
    """
    while True:
        staging = final.with_name(f".{final.name}.{os.getpid()}.{next(_STAGING_NUMBERS)}")
        try:
            staging.mkdir()
        except FileExistsError:  # left by a crashed process that had the same pid
            continue
        return staging


SOURCES_DIR = "_sources"

#: What this package names its temporary entries: ``.<name>.<pid>.<tag>`` (staging folders, a
#: source being copied, a run.json being rewritten, a run folder being replaced).
_LITTER = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.(?P<tag>[^.]+)$")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's live process
        return True
    return True


@dataclass(frozen=True)
class RawFile:
    """A raw file to keep beside a run: copied from ``source`` or written from ``content``."""

    name: str
    source: Path | None = None
    content: bytes | None = None


class TableLike(Protocol):
    """What :meth:`RunStore.write` needs of a table (``sparkreport.ingest.base.Table``)."""

    name: str
    columns: list[str]
    rows: list[Sequence[Any]]


def table_csv(table: TableLike) -> bytes:
    """A table as CSV bytes (header row first; None becomes an empty cell)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows(table.rows)  # csv writes None as an empty cell
    return buffer.getvalue().encode("utf-8")


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in chunks (bounded memory)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: errno values for which ``Path.exists`` says False (a missing run.json, a broken link).
_MISSING = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


@dataclass
class StoreScan:
    """One walk of the run store (:meth:`RunStore.scan`)."""

    #: Every run.json (a path string: tens of thousands of Path objects cost a third of a second)
    #: and its stat (links followed), sorted (campaign, run_id) as ``run_files``.
    files: list[tuple[str, os.stat_result]]
    #: Run folders without a run.json, as ``incomplete_runs`` names them.
    incomplete: list[str]
    #: Each file's (campaign folder, run folder) names, in the order of ``files``.
    folders: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class PackedScan:
    """A :class:`StoreScan` as one process hands it to another (a build's store walk, forked,
    to the build): the paths and folder names as one string each, and each run.json's stat as
    the five numbers the scan's readers use — mode, inode, size, mtime and ctime (ns) — in one array.
    Ten thousand ``os.stat_result`` objects pickle in ~0.07 s and unpickle in ~0.06; these
    take a few milliseconds each way, and ~0.015 s to make a scan again (each stat an
    ``os.stat_result`` with those five fields, the others zero: nothing that reads a scan uses
    them)."""

    paths: str
    folders: str
    numbers: bytes
    incomplete: list[str]

    @classmethod
    def of(cls, scan: StoreScan) -> PackedScan:
        from array import array

        numbers = array("Q", [n for _path, stat in scan.files
                              for n in (stat.st_mode, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)])
        return cls("\0".join(path for path, _stat in scan.files),
                   "\0".join(f"{campaign}\0{run}" for campaign, run in scan.folders), numbers.tobytes(),
                   list(scan.incomplete))

    def unpacked(self) -> StoreScan:
        from array import array

        from sparkreport.cache import gc_paused

        if not self.paths:
            return StoreScan([], list(self.incomplete), [])
        numbers = array("Q")
        numbers.frombytes(self.numbers)
        n = numbers.tolist()
        names = self.folders.split("\0")
        with gc_paused():
            stats = [os.stat_result((mode, inode, 0, 0, 0, 0, size, 0, 0, 0, 0.0, 0.0, 0.0, 0, mtime, ctime))
                     for mode, inode, size, mtime, ctime in zip(n[0::5], n[1::5], n[2::5], n[3::5], n[4::5],
                                                                strict=True)]
            return StoreScan(list(zip(self.paths.split("\0"), stats, strict=True)), list(self.incomplete),
                             list(zip(names[0::2], names[1::2], strict=True)))


class RunStore:
    """A folder of campaigns, each a folder of runs."""

    def __init__(self, root: Path):
        self.root = Path(root)
        #: Campaign folders known to exist (one mkdir per campaign, not one per run written).
        self._made: set[Path] = set()

    def run_dir(self, campaign: str, run_id: str) -> Path:
        return self.root / campaign / run_id

    def run_files(self) -> list[Path]:
        """Every run.json in the store, sorted (campaign, run_id)."""
        if not self.root.is_dir():
            return []
        # Dot-folders are staging folders of an interrupted write (or hidden files): not runs.
        files = sorted(p for p in self.root.glob(f"*/*/{RUN_FILE}")
                       if not p.parent.name.startswith(".") and not p.parent.parent.name.startswith("."))
        self.check_links(files)
        return files

    def scan(self) -> StoreScan:
        """What :meth:`run_files` and :meth:`incomplete_runs` say, from one walk with one lstat a
        run and each run.json's stat kept (the dataset loader's path at tens of thousands of
        runs); links leaving the store are refused the same way."""
        if not self.root.is_dir():
            return StoreScan([], [])
        found: list[tuple[tuple[str, str], str, os.stat_result]] = []
        linked: list[Path] = []
        incomplete: list[str] = []
        with os.scandir(self.root) as entries:
            campaigns = [entry for entry in entries if not entry.name.startswith(".") and entry.is_dir()]
        for campaign in campaigns:
            with os.scandir(campaign.path) as entries:
                runs = [entry for entry in entries if not entry.name.startswith(".") and entry.is_dir()]
            for run in runs:
                path = os.path.join(run.path, RUN_FILE)
                try:
                    stat = os.lstat(path)
                    is_link = S_ISLNK(stat.st_mode)
                    if is_link:
                        stat = os.stat(path)
                except OSError as exc:
                    if exc.errno not in _MISSING:
                        raise
                    if not run.name.startswith("_"):  # ``_sources``, ``_campaign``: not runs
                        incomplete.append(shown(f"{campaign.name}/{run.name}"))
                    continue
                found.append(((campaign.name, run.name), path, stat))
                if is_link or run.is_symlink() or campaign.is_symlink():
                    linked.append(Path(path))
        found.sort(key=lambda item: item[0])
        self.check_links(sorted(linked))
        return StoreScan([(path, stat) for _names, path, stat in found], sorted(incomplete),
                         [names for names, _path, _stat in found])

    def check_links(self, files: list[Path]) -> None:
        """Refuse a campaign folder, run folder or run.json that is a symbolic link leaving the
        store (one line naming it): its runs would be counted while the site cannot publish them.
        Links that stay inside the store are read (and never followed for publishing)."""
        root = self.root.resolve()
        checked: set[Path] = set()
        for path in files:
            for candidate in (path.parent.parent, path.parent, path):
                if candidate in checked:
                    continue
                checked.add(candidate)
                if candidate.is_symlink() and not candidate.resolve().is_relative_to(root):
                    raise SparkreportError(
                        f"{candidate}: is a symbolic link to {candidate.resolve()}, outside the run store "
                        f"{self.root} — copy the runs into the store (or `sparkreport ingest` them) "
                        "and remove the link")

    def existing_runs(self) -> dict[str, Path]:
        """The run ids already taken, in any campaign, and their folders: every run folder,
        finished or not. Read from directory entries only, no stat per run, since ingest asks
        once per call on stores of tens of thousands (:meth:`is_whole` looks inside one)."""
        runs: dict[str, Path] = {}
        if not self.root.is_dir():
            return runs
        with os.scandir(self.root) as campaigns:
            for campaign in campaigns:
                if campaign.name.startswith(".") or not campaign.is_dir():
                    continue
                with os.scandir(campaign.path) as entries:
                    runs.update((run.name, Path(run.path)) for run in entries
                                if not run.name.startswith(".") and run.name != SOURCES_DIR and run.is_dir())
        return runs

    def existing_ids(self) -> set[str]:
        """The run ids already taken (see :meth:`existing_runs`)."""
        return set(self.existing_runs())

    def is_whole(self, folder: Path) -> bool:
        """Whether a run folder holds a valid run.json (a folder without one is re-created by
        ingest: the run's identity is its source's content, not the folder's presence)."""
        try:
            self.load(folder / RUN_FILE)
        except (OSError, SparkreportError):
            return False
        return True

    def incomplete_runs(self) -> list[str]:
        """Run folders (``campaign/run_id``, display form) without a run.json: not counted by
        anything downstream, so ``check`` names them (folders named ``_…`` belong to the campaign)."""
        found = []
        for run_id, folder in self.existing_runs().items():
            # ``_sources``, the runner's ``_campaign``: a campaign's own folders, not runs.
            if not run_id.startswith("_") and not (folder / RUN_FILE).exists():
                found.append(shown(f"{folder.parent.name}/{run_id}"))
        return sorted(found)

    def clean_litter(self) -> list[Path]:
        """Remove temporary entries left by writers that died (SIGTERM, SIGKILL, a full disk):
        staging folders, half-copied sources, replaced run folders. Only those whose pid is no
        longer alive; returns what was removed."""
        removed: list[Path] = []
        if not self.root.is_dir():
            return removed
        folders = [self.root]
        for campaign in self.root.iterdir():
            if campaign.is_dir() and not campaign.name.startswith("."):
                folders.append(campaign)
                sources = campaign / SOURCES_DIR
                if sources.is_dir():
                    folders.extend(p for p in sources.iterdir() if p.is_dir())
        for folder in folders:
            for entry in folder.iterdir():
                match = _LITTER.match(entry.name)
                if match is None or _alive(int(match["pid"])):
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
                removed.append(entry)
        return removed

    def load(self, path: Path | str, raw: bytes | None = None) -> RunRecord:
        """Read and validate one run.json (``raw``: its bytes, when the caller already read them)."""
        try:
            text = Path(path).read_text(encoding="utf-8") if raw is None else raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SchemaError(path, "is not UTF-8 text", fix="re-create it with `sparkreport ingest`") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SchemaError(
                path, f"is not valid JSON ({exc.msg})", line=exc.lineno,
                fix="re-create it with `sparkreport ingest` from its source",
            ) from None
        return RunRecord.from_dict(data, path)

    def iter_runs(self) -> Iterator[RunRecord]:
        for path in self.run_files():
            yield self.load(path)

    def load_all(self) -> list[RunRecord]:
        """All records; raises on the first unreadable run.json (naming it)."""
        return list(self.iter_runs())

    def keep_source(self, campaign: str, source: Path, sha256: str) -> str:
        """Keep a multi-run source once per campaign; return its path relative to a run dir."""
        folder = self.root / campaign / SOURCES_DIR / sha256[:16]
        name = shown(source.name)  # referenced from run.json, which is UTF-8
        target = folder / name
        if not target.exists():
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.{os.getpid()}.", dir=folder)
            os.close(fd)
            try:
                write_bytes(tmp, stored_bytes(source.name, source.read_bytes()))
                os.replace(tmp, target)
            except BaseException:  # a full disk: no partial copy left behind
                Path(tmp).unlink(missing_ok=True)
                raise
        return f"../{SOURCES_DIR}/{sha256[:16]}/{name}"

    def write(self, record: RunRecord, raw: list[RawFile],
              tables: Sequence[TableLike] | None = None, *, replace: Path | None = None) -> Path:
        """Write one run folder atomically; the folder must not exist yet, unless it is
        ``replace`` (a folder without a valid run.json, which the new one takes the place of).

        ``tables`` (per-request / per-sample data) are written as ``<name>.csv`` beside run.json.
        Holds the store's lock (:func:`sparkreport.lock.store_lock`) unless this process does
        already (ingest takes it once for all its writes; ``run`` takes it per run).
        """
        with store_lock(self.root):
            return self._write(record, raw, tables, replace)

    def _write(self, record: RunRecord, raw: list[RawFile], tables: Sequence[TableLike] | None,
               replace: Path | None) -> Path:
        final = self.run_dir(record.campaign, record.run_id)
        if final.exists() and final != replace:
            raise SparkreportError(f"{shown(final)}: this run is already stored (a writer that did "
                                   "not take the store's lock?) — run the same command again")
        if final.parent not in self._made:
            final.parent.mkdir(parents=True, exist_ok=True)
            self._made.add(final.parent)
        staging = _staging_folder(final)
        try:
            # Nothing credential-shaped is stored (an ingested log or report may print a proxy URL
            # with its password, a token in a command line): raw files, tables and run.json.
            for item in raw:
                target = staging / item.name
                if item.source is not None and item.name.endswith(DATA_SUFFIXES):
                    shutil.copyfile(item.source, target)
                else:
                    target.write_bytes(stored_bytes(item.name, item.source.read_bytes() if item.source is not None
                                                    else item.content or b""))
            for table in tables or []:  # numbers parsed from a source: nothing to scrub
                (staging / f"{table.name}.csv").write_bytes(table_csv(table))
            data = record.to_dict()
            text = json.dumps(data, indent=2, ensure_ascii=False)
            if find_credentials(text):
                text = json.dumps(scrub_strings(data), indent=2, ensure_ascii=False)
            # The staging folder is private until the rename: run.json needs no atomic write of its own.
            (staging / RUN_FILE).write_text(text + "\n", encoding="utf-8")
            if replace is not None and replace.exists():
                aside = replace.with_name(f".{replace.name}.{os.getpid()}.old")
                os.rename(replace, aside)
                os.rename(staging, final)
                shutil.rmtree(aside, ignore_errors=True)
            else:
                os.rename(staging, final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return final


def check_identities(runs: Iterable[tuple[str, str, str, str]]) -> None:
    """Refuse a run.json whose ``campaign`` is not the name of the campaign folder it is in, and
    a second run.json with a ``run_id`` another one has (a copied run folder): either would put
    one run's figures under another's name. ``runs``: (run.json path, campaign folder name,
    campaign, run_id) of every run, in store order."""
    seen: dict[str, str] = {}
    for path, folder, campaign, run_id in runs:
        if campaign != folder and campaign != strip_bidi(shown(folder)):
            raise SchemaError(path, f"field 'campaign' is {campaign!r}, but the run is in the campaign folder "
                              f"{shown(folder)!r}", fix=f"set it to {shown(folder)!r}, or move the run's folder "
                              f"into the campaign folder {campaign!r}")
        first = seen.get(run_id)
        if first is not None:
            raise SchemaError(path, f"field 'run_id' is {run_id!r}, the run_id of {shown(first)} too",
                              fix="two runs cannot share an id: remove the copy, or give one of them another "
                              "run_id (and its folder that name)")
        seen[run_id] = path


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (one place a full disk shows up when a source is kept)."""
    with open(path, "wb") as handle:
        handle.write(data)
