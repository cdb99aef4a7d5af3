"""Checks that cost milliseconds, made before work that costs seconds (#20, item 10; #16).

A build whose site folder cannot be written, or a diff naming a campaign the store does not
hold, should say so before the dataset is loaded and the pages rendered, not after.

:func:`store_index` is the run store's names — per run its campaign, model, environment,
software, GPU and labels, and which metrics it reports — read without validating or flattening
anything, and kept in ``build/cache/names.pickle`` beside the record cache. Each entry is keyed
to its run.json's size, mtime, ctime and inode, so an entry whose file changed (or went) is
never used: it is read again (or dropped). At 10 000 runs a warm index costs one directory walk
and 10 000 ``stat`` calls, a cold one a JSON parse per run; either is far below a dataset load,
so :mod:`sparkreport.render.preflight` can refuse a stale diff or post binding from it first.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sparkreport.cache import GIT_AFTER, HashMemo, WritesLater, _atomic_bytes, git_clean_blobs, write_later
from sparkreport.errors import DataError, SparkreportError
from sparkreport.names import shown, shown_values

if TYPE_CHECKING:
    from sparkreport.store import StoreScan


def check_writable(target: Path, option: str) -> None:
    """Refuse at once a folder (or a file's folder) that cannot be created or written.

    Walks up to the nearest folder that exists and creates (then drops) an unnamed temporary
    file there: that catches a read-only file system, missing permissions and a path through a
    file, where ``os.access`` would say yes to root. Creates nothing that stays.
    """
    probe = target
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise SparkreportError(f"{shown(target)}: cannot be created — {shown(probe)} is a file, not a folder; "
                               f"pass another {option}")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise SparkreportError(f"{shown(target)}: cannot be written ({exc.strerror or exc}) — fix the "
                               f"permissions of {shown(probe)} or pass another {option}") from None


def check_store(runs_dir: Path) -> None:
    """Refuse a run store that does not exist (a command run outside its project), before
    anything is created for it (``build/``, a lock, a server)."""
    if not runs_dir.is_dir():
        raise DataError(f"{runs_dir}: no such run store — ingest results first (`sparkreport ingest FILE`)")


def store_campaigns(runs_dir: Path) -> list[str]:
    """The campaign folders of a run store (directory names only, no run.json read)."""
    try:
        with os.scandir(runs_dir) as entries:
            return sorted(e.name for e in entries if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return []


def selector_conditions(text: str) -> list[tuple[str, str]]:
    """``key=value[,key=value…]`` → [(key, value), …], as ``analysis.diff.Selector.parse`` reads
    it (without importing the analysis: pandas and scipy take seconds to import)."""
    conditions = []
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise DataError(f"selector {text!r}: {part!r} is not KEY=VALUE (e.g. engine_version=1.2.0)")
        conditions.append((key.strip(), value.strip()))
    return conditions


def check_selector_campaigns(runs_dir: Path, selectors: Iterable[tuple[str, str]]) -> None:
    """Refuse selectors (``(where, text)``) naming a campaign that has no folder in the store."""
    campaigns: list[str] | None = None
    for where, text in selectors:
        for part in text.split(","):
            key, sep, value = part.partition("=")
            if not sep or key.strip() != "campaign":
                continue
            if campaigns is None:
                campaigns = store_campaigns(runs_dir)
            if value.strip() not in campaigns:
                raise DataError(f"{where}: campaign {value.strip()!r} is not in {shown(runs_dir)} — campaigns "
                                f"there: {shown_values(campaigns)}")


#: The runs table's columns the index holds, each read from the run.json as ``dataset`` flattens
#: it (``model_name`` = display name, else id, else name). Other columns (iteration, numbers,
#: timestamps) are not indexed: a check naming one waits for the dataset.
INDEXED_COLUMNS: dict[str, tuple[str, str]] = {
    "campaign": ("", "campaign"),
    "model": ("model", "name"),
    "model_id": ("model", "id"),
    "environment": ("environment", "name"),
    "environment_kind": ("environment", "kind"),
    "engine": ("software", "engine"),
    "engine_version": ("software", "engine_version"),
    "backend": ("software", "backend"),
    "cuda": ("software", "cuda"),
    "driver": ("software", "driver"),
    "image": ("software", "image"),
    "image_digest": ("software", "image_digest"),
    "gpu_name": ("hardware", "gpu_name"),
    "source_format": ("provenance", "format"),
}
#: The columns an arm-summary record fills (the dataset's summaries table): no labels, no software.
SUMMARY_INDEXED = ("campaign", "model", "model_name", "model_id", "environment", "environment_kind",
                   "gpu_name")
INDEX_FILE = "names.pickle"
#: Beside the index file, written with it: its entries in its order, each distinct one once, and
#: each run's place among them (:func:`kept_index` reads this: ~0.003 s against ~0.04 s for the
#: index file's 10 000 entries, stats and blobs, on the early checks' path of every build).
ENTRIES_FILE = "names-entries.pickle"
#: Bump when what an entry holds changes (the code's own hash below also drops old indexes).
INDEX_VERSION = 2


@dataclass
class IndexEntry:
    """One run.json's names: ``values`` of :data:`INDEXED_COLUMNS` (plus model_name), labels
    (``label.KEY``), the metric names it reports, and whether it is a run or an arm summary."""

    is_run: bool
    values: dict[str, str]
    metrics: tuple[str, ...] = ()


@dataclass
class StoreIndex:
    """The names of every run in a store, in run.json path order (see :func:`store_index`)."""

    entries: list[IndexEntry] = field(default_factory=list)
    #: run.json files read this time (the others came from the index file).
    read: int = 0

    def is_empty(self) -> bool:
        return not self.entries

    @property
    def runs(self) -> list[IndexEntry]:
        return [entry for entry in self.entries if entry.is_run]

    @property
    def summaries(self) -> list[IndexEntry]:
        return [entry for entry in self.entries if not entry.is_run]


#: The code an entry depends on: how it is read here, how the store validates and cleans names,
#: how the dataset flattens them. A change to any of them drops every index written before.
_INDEX_CODE = ("early.py", "names.py", "schema.py", "dataset.py")


def _salt() -> str:
    """The index's version and the source of :data:`_INDEX_CODE` (read, not imported)."""
    digest = hashlib.sha256(f"{INDEX_VERSION}\0".encode())
    package = Path(__file__).resolve().parent
    for name in _INDEX_CODE:
        digest.update((package / name).read_bytes())
    return digest.hexdigest()


def _run_json_files(runs_dir: Path) -> list[tuple[str, os.stat_result]]:
    """(``campaign/run``, stat of its run.json) for every run folder holding one, sorted — the
    files ``RunStore.run_files`` lists (dot folders are staging folders, not runs)."""
    found: list[tuple[str, os.stat_result]] = []
    root = os.fspath(runs_dir)
    for campaign in store_campaigns(runs_dir):
        folder = os.path.join(root, campaign)
        try:
            with os.scandir(folder) as entries:
                names = [e.name for e in entries if not e.name.startswith(".") and e.is_dir()]
        except OSError:
            continue
        for name in names:
            try:
                found.append((f"{campaign}/{name}", os.stat(os.path.join(folder, name, "run.json"))))
            except OSError:
                continue  # an incomplete run: `check` names it, nothing counts it
    found.sort(key=lambda item: item[0])
    return found


def _entry_from_json(data: Any) -> IndexEntry | None:
    """The entry of a current-schema run.json whose names are all plain strings; None for
    anything else (an older schema, an odd type), which is then read as the dataset reads it."""
    from sparkreport.names import strip_bidi
    from sparkreport.schema import SCHEMA_VERSION

    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        return None
    record_type = data.get("record_type", "run")
    if record_type not in ("run", "arm_summary"):
        return None
    values: dict[str, str] = {}
    for column, (section, key) in INDEXED_COLUMNS.items():
        holder = data.get(section) or {} if section else data
        if not isinstance(holder, dict):
            return None
        value = holder.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            return None
        values[column] = strip_bidi(value) if column in ("campaign", "model", "model_id", "environment") else value
    model = data.get("model") or {}
    display = model.get("display_name")
    if display is not None and not isinstance(display, str):
        return None
    shown_name = (strip_bidi(display) if display else None) or values.get("model_id") or values.get("model")
    if shown_name is not None:
        values["model_name"] = shown_name
    labels = data.get("labels") or {}
    metrics = data.get("metrics") or {}
    if not isinstance(labels, dict) or not isinstance(metrics, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        return None
    if record_type == "arm_summary":
        return IndexEntry(False, {c: values[c] for c in SUMMARY_INDEXED if c in values})
    values.update({f"label.{strip_bidi(k)}": strip_bidi(v) for k, v in labels.items()})
    return IndexEntry(True, values, tuple(str(name) for name in metrics))


def _entry_from_record(path: Path) -> IndexEntry:
    """The entry of any run.json, through the store's own validation (and its one-line errors)."""
    from sparkreport.store import RunStore

    record = RunStore(path.parent.parent).load(path)
    values = {column: value for column, (section, key) in INDEXED_COLUMNS.items()
              if (value := getattr(getattr(record, section) if section else record, key)) is not None}
    values["model_name"] = record.model.display_name or record.model.id or record.model.name
    if record.record_type != "run":
        return IndexEntry(False, {c: values[c] for c in SUMMARY_INDEXED if c in values})
    values.update({f"label.{k}": v for k, v in record.labels.items()})
    return IndexEntry(True, values, tuple(record.metrics))


def _shared(entry: IndexEntry, strings: dict[str, str], tuples: dict[tuple[str, ...], tuple[str, ...]]
            ) -> tuple[bool, dict[str, str], tuple[str, ...]]:
    """``entry`` as a plain tuple whose equal strings and metric tuples are one object each, so
    the pickle stores every campaign, model and metric name once (10 000 runs: ~1 MB, not 10)."""
    values = {strings.setdefault(k, k): strings.setdefault(v, v) for k, v in entry.values.items()}
    return entry.is_run, values, tuples.setdefault(entry.metrics, entry.metrics)


def store_index(runs_dir: Path, cache_dir: Path | None = None, later: WritesLater | None = None) -> StoreIndex:
    """The names of every run in ``runs_dir``, from ``cache_dir/names.pickle`` where each run.json
    is unchanged (same size, mtime, ctime and inode — or, after a fresh checkout, the same git
    blob and size, :func:`~sparkreport.cache.git_clean_blobs`), else read from the file; the
    index file is then rewritten (best effort: an unwritable cache only makes the next call read
    again) — by ``later`` when given (a build's :class:`~sparkreport.cache.WritesLater`: 0.03–0.04 s
    at 10 000 runs, off the build's path while its builder builds)."""
    path = cache_dir / INDEX_FILE if cache_dir is not None else None
    known = _read_index(path, runs_dir)
    index, payload = _indexed(runs_dir, _run_json_files(runs_dir), known)
    if path is not None and payload is not None:
        write_later(later, path, functools.partial(_save_index, path, payload))
    return index


def kept_index(runs_dir: Path, cache_dir: Path | None) -> StoreIndex | None:
    """The name index as the last build left it, not checked against the store (no run.json is
    stat-ed: 0.06–0.1 s less at 10 000 runs); None without one. What passes against it is
    checked again against the dataset itself once it is loaded
    (:func:`~sparkreport.render.preflight.preflight`); what fails against it is checked against
    the store (:func:`store_index`) before it is refused. Any full check writes it, and a build
    keeps it current (:func:`refresh_index`)."""
    if cache_dir is None:
        return None
    entries = _read_entries(cache_dir, runs_dir)
    if entries is None:
        known = _read_index(cache_dir / INDEX_FILE, runs_dir)
        entries = [IndexEntry(*cached[1]) for cached in known.values()]
    return StoreIndex(entries=entries) if entries else None


def _read_entries(cache_dir: Path, runs_dir: Path) -> list[IndexEntry] | None:
    """The index file's entries, in its order, from :data:`ENTRIES_FILE` — each distinct entry
    one object, in the list as often as runs hold it; None when that file is missing, damaged,
    of other code or another store, or was not written with the index file as it is now."""
    from array import array

    from sparkreport.cache import gc_paused

    try:
        index = (cache_dir / INDEX_FILE).stat()
        with (cache_dir / ENTRIES_FILE).open("rb") as handle, gc_paused():
            stored = pickle.load(handle)
        if stored.get("salt") != _salt() or stored.get("runs_dir") != str(runs_dir) \
                or tuple(stored.get("index", ())) != _signature(index):
            return None
        distinct = [IndexEntry(*entry) for entry in stored["entries"]]
        places = array("I")
        places.frombytes(stored["places"])
        return [distinct[place] for place in places]
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, KeyError, TypeError, ValueError, IndexError):
        return None


def refresh_index(runs_dir: Path, cache_dir: Path, scan: StoreScan, memo: HashMemo | None = None) -> None:
    """Bring the name index file up to date with the store as ``scan`` found it (a build's store
    scan: no run.json is stat-ed again) — run by a build while its builder builds, so that the
    next build's early checks find it current (:func:`kept_index`). Best effort: a run.json it
    cannot read is left out (the dataset's load says what is wrong with it). ``memo``: the
    build's file digests, which after a fresh checkout hold each run.json's git blob id as the
    walk learnt it (:meth:`~sparkreport.cache.HashMemo.blob_of`): git is then not asked again
    (a CI job's build asked it twice, in two processes); a run.json without one is read."""
    path = cache_dir / INDEX_FILE
    listed, blobs = [], {}
    for (campaign, run), (run_json, stat) in zip(scan.folders, scan.files, strict=True):
        listed.append((f"{campaign}/{run}", stat))
        blob = memo.blob_of(run_json, stat) if memo is not None else None
        if blob is not None:
            blobs[f"{campaign}/{run}/run.json"] = blob
    listed.sort()
    try:  # (a memo that knows no blob id: git was not asked for this store; _indexed asks it if need be)
        _index, payload = _indexed(runs_dir, listed, _read_index(path, runs_dir), entries=False,
                                   blobs=blobs or None)
    except (SparkreportError, OSError, ValueError):  # (a run removed or changed since the scan, say)
        return
    if payload is not None:
        _save_index(path, payload)


_Cached = tuple[tuple[int, ...], tuple[bool, dict[str, str], tuple[str, ...]], "str | None"]


def _read_index(path: Path | None, runs_dir: Path) -> dict[str, _Cached]:
    """The index file's entries by ``campaign/run``; {} when missing, damaged, of other code or of
    another store."""
    if path is None or not path.is_file():
        return {}
    from sparkreport.cache import gc_paused

    try:
        with path.open("rb") as handle, gc_paused():
            stored = pickle.load(handle)
        if stored.get("salt") == _salt() and stored.get("runs_dir") == str(runs_dir):
            return cast("dict[str, _Cached]", stored["files"])
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, KeyError, TypeError, ValueError):
        pass
    return {}


def _indexed(runs_dir: Path, listed: list[tuple[str, os.stat_result]], known: dict[str, _Cached],
             entries: bool = True, blobs: dict[str, str] | None = None) -> tuple[StoreIndex, dict[str, Any] | None]:
    """The index of the run.json files ``listed`` (sorted ``campaign/run``, stat), each from
    ``known`` where unchanged, else read; and the index file's new payload, or None when it
    would hold what ``known`` holds. Without ``entries``, the index holds only the entries read.
    ``blobs``: git's blob ids of the clean run.json files (``campaign/run/run.json``) as the caller
    knows them; None: git is asked when many files are unknown (a fresh checkout)."""
    index = StoreIndex()
    files: dict[str, _Cached] = {}
    strings: dict[str, str] = {}
    tuples: dict[tuple[str, ...], tuple[str, ...]] = {}
    root = os.fspath(runs_dir)
    missing = [relative for relative, stat in listed if (cached := known.get(relative)) is None
               or cached[0] != _signature(stat)]
    fresh = len(missing) >= GIT_AFTER  # a fresh checkout: git knows which files are the same bytes
    if blobs is None:
        blobs = git_clean_blobs(runs_dir) if fresh else {}
    if fresh:
        sizes = {relative: stat.st_size for relative, stat in listed}
        missing = [relative for relative in missing
                   if not _same_blob(known.get(relative), blobs, relative, sizes[relative])]
    contents = _read_all({relative: os.path.join(root, relative, "run.json") for relative in missing})
    for relative, stat in listed:
        signature = _signature(stat)
        cached = known.get(relative)
        blob = blobs.get(f"{relative}/run.json")
        if cached is not None and (cached[0] == signature or _same_blob(cached, blobs, relative, stat.st_size)):
            # (the same tuple where nothing changed: comparing the payload with ``known`` is then cheap)
            files[relative] = cached if cached[0] == signature and blob in (None, cached[2]) \
                else (signature, cached[1], cached[2] if blob is None else blob)
            if entries:
                index.entries.append(IndexEntry(*cached[1]))
            continue
        file = Path(os.path.join(root, relative, "run.json"))
        try:
            entry = _entry_from_json(json.loads(contents[relative])) or _entry_from_record(file)
        except (OSError, ValueError, UnicodeDecodeError, KeyError):
            entry = _entry_from_record(file)  # raises the store's one-line error for this file
        index.read += 1
        files[relative] = (signature, _shared(entry, strings, tuples), blob)
        index.entries.append(entry)
    if not index.read and files == known:
        return index, None
    return index, {"salt": _salt(), "runs_dir": str(runs_dir), "files": files}


def _signature(stat: os.stat_result) -> tuple[int, ...]:
    return stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino


def _same_blob(cached: tuple[tuple[int, ...], Any, str | None] | None, blobs: dict[str, str], relative: str,
               size: int) -> bool:
    """Whether the run.json of ``relative`` (a run's folder) is a clean checkout of the git blob
    its index entry ``cached`` was read from (the blob names the bytes; the size is checked too,
    in case a checkout's line-ending conversion differs)."""
    if cached is None or cached[2] is None:
        return False
    return blobs.get(f"{relative}/run.json") == cached[2] and cached[0][0] == size


def _read_all(paths: dict[str, str]) -> dict[str, bytes]:
    """Each file's bytes (``{key: path}`` → ``{key: bytes}``), read on eight threads, a batch of
    files per task: with a cold page cache, 10 000 small reads one at a time wait on the disk in
    turn, and one task per file costs more than the reads (``ThreadPoolExecutor.map`` ignores
    its ``chunksize``: 0.7–1.1 s for 10 000 files against 0.2–0.3 s in 32 batches, warm). A file
    that cannot be read is left out (its entry is then made by the store, which names the
    problem)."""
    def read(batch: list[tuple[str, str]]) -> list[tuple[str, bytes | None]]:
        out: list[tuple[str, bytes | None]] = []
        for key, path in batch:
            try:
                with open(path, "rb") as handle:
                    out.append((key, handle.read()))
            except OSError:
                out.append((key, None))
        return out

    items = list(paths.items())
    if len(items) < 64:
        pairs = read(items)
    else:
        from concurrent.futures import ThreadPoolExecutor

        size = -(-len(items) // READ_BATCHES)
        with ThreadPoolExecutor(max_workers=8) as pool:
            pairs = [pair for batch in pool.map(read, [items[i:i + size] for i in range(0, len(items), size)])
                     for pair in batch]
    return {key: data for key, data in pairs if data is not None}


#: How many batches :func:`_read_all` splits the files into (four per thread: one slow batch
#: does not leave the other threads idle for long).
READ_BATCHES = 32


def _save_index(path: Path, payload: dict[str, Any]) -> None:
    """Write the index file atomically, then :data:`ENTRIES_FILE` beside it (stamped with the
    index file's stat: an entries file not written with the index file as it is is not read); an
    unwritable cache is not an error (read again next time)."""
    from array import array

    try:
        _atomic_bytes(path, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
        distinct: dict[Any, int] = {}
        entries: list[Any] = []
        places = array("I")
        for _signature_of, entry, _blob in payload["files"].values():
            is_run, values, metrics = entry
            key = (is_run, tuple(values.items()), metrics)
            place = distinct.get(key)
            if place is None:
                place = distinct[key] = len(entries)
                entries.append(entry)
            places.append(place)
        _atomic_bytes(path.parent / ENTRIES_FILE, pickle.dumps({
            "salt": payload["salt"], "runs_dir": payload["runs_dir"], "index": _signature(path.stat()),
            "entries": entries, "places": places.tobytes()}, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass
