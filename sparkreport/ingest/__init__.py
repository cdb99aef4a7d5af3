"""Ingest: results that exist already → run folders in the store.

``ingest_paths`` detects each file's format by content (or takes ``--format``), parses the
whole file before writing anything, and writes each run folder atomically. Re-ingesting a
source adds nothing: its runs keep their ids and are reported as already present.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path

import click

from sparkreport import __version__
from sparkreport.early import check_writable
from sparkreport.errors import InputError, ParseError, SparkreportError
from sparkreport.ingest import (  # noqa: F401  (built-in parsers register)
    nvidia_smi,
    phase1,
    summary,
    trtllm,
    trtllm_json,
    vllm,
    vllm_json,
)
from sparkreport.ingest.base import PARSERS, ParsedRun, Parser, Source
from sparkreport.lock import STORE_LOCK_WAIT_S, store_lock
from sparkreport.names import MAX_NAME_CHARS, clean_names, name_problems, short_id, shown, strip_bidi
from sparkreport.schema import physical_problems, slug
from sparkreport.store import RawFile, RunStore

__all__ = ["IngestOptions", "IngestReport", "detect_parser", "ingest_paths", "PARSERS"]

#: ``--environment`` names that say which kind of environment it was.
KIND_OF = {"native": "native", "chroot": "chroot", "docker": "container", "podman": "container",
           "container": "container", "cgroup": "cgroup"}


@dataclass
class IngestOptions:
    campaign: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    format: str | None = None
    #: The execution environment of every run ingested (trtllm-bench and vLLM output do not
    #: record it); replaces what a source names, which is kept as ``details.named_by_source``.
    environment: str | None = None
    #: How long to wait for another writer's lock on the store (seconds).
    lock_wait_s: float = STORE_LOCK_WAIT_S
    #: Told once whom this ingest waits for, when another process holds the store's lock.
    notify: Callable[[str], None] | None = None


@dataclass
class IngestReport:
    added: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: Runs whose folder existed without a valid run.json and was written anew (also in ``added``).
    recreated: list[str] = field(default_factory=list)
    rejected: list[InputError] = field(default_factory=list)
    files: int = 0


def detect_parser(source: Source, forced: str | None = None) -> Parser:
    """The parser for ``source``: the forced one, or the first whose ``detect`` says yes."""
    if forced:
        if forced not in PARSERS:
            raise SparkreportError(
                f"unknown format {forced!r} — choose one of: {', '.join(PARSERS)} (`sparkreport formats`)"
            )
        return PARSERS[forced]()
    if source.path.stat().st_size == 0:
        raise ParseError(source.path, "the file is empty", fix="point ingest at a results file")
    if source.looks_binary():
        raise ParseError(source.path, "is a binary file, not benchmark output",
                         fix=f"formats read: {', '.join(PARSERS)}")
    for cls in PARSERS.values():
        parser = cls()
        try:
            if parser.detect(source):
                return parser
        except OSError:
            continue
    raise ParseError(source.path, "format not recognised",
                     fix=f"tried {', '.join(PARSERS)}; pass --format NAME if you know it")


#: Inside a folder, files that are documentation rather than results are left alone.
_NOT_RESULTS = ("readme", "license", "licence", "copying", "notice")


def _is_doc(path: Path) -> bool:
    return path.name.lower().startswith(_NOT_RESULTS) or path.suffix.lower() in {".md", ".rst"}


def _expand(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(
                p for p in sorted(path.rglob("*"))
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
                and not _is_doc(p)
            )
        elif path.exists():
            files.append(path)
        else:
            raise InputError(path, "no such file or directory", fix="check the path")
    return files


def _parse(source: Source, parser: Parser) -> list[ParsedRun]:
    try:
        return parser.parse(source)
    except ParseError:
        raise
    except OSError as exc:
        raise ParseError(source.path, f"cannot be read ({exc.strerror})", fix="check permissions") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as exc:
        # A parser bug or an input shape nobody foresaw: still one line, still the file.
        raise ParseError(source.path, f"could not be parsed as {parser.name} ({type(exc).__name__}: {exc})",
                         fix="check the file, or report the format to sparkreport") from None


def ingest_paths(paths: list[Path], store: RunStore, options: IngestOptions) -> IngestReport:
    """Ingest files and folders into ``store``; bad files are collected, good ones written."""
    report = IngestReport()
    for kind, name in (("--campaign", options.campaign), ("--environment", options.environment),
                       *((f"--label {key}", value) for key, value in options.labels.items())):
        if name is not None and len(name) > MAX_NAME_CHARS:
            raise click.UsageError(f"{kind} is {len(name)} characters long (at most {MAX_NAME_CHARS})")
    files = _expand(paths)
    sources = [Source(p) for p in files]
    plan: list[tuple[Source, Parser]] = []
    claimed: set[Path] = set()
    for source in sources:
        try:
            parser = detect_parser(source, options.format)
        except ParseError as exc:
            report.rejected.append(exc)
            continue
        plan.append((source, parser))
        claimed.update(p.resolve() for p in parser.companions(source))
    # A store that cannot be written (read-only, under a file) is one line before its lock is made.
    check_writable(store.root, "--runs-dir")
    # One writer at a time: a second ingest of the same source waits, then finds its runs stored.
    with store_lock(store.root, wait_s=options.lock_wait_s, notify=options.notify):
        before: set[str] = set()
        try:
            store.clean_litter()
            known = store.existing_runs()
            before = set(known)
            _write_all(plan, claimed, known, store, options, report)
        except OSError as exc:  # disk full, permissions: the runs written so far are whole
            try:
                stored = f"{len(store.existing_ids() - before)} runs were stored (each one whole)"
            except OSError:
                stored = "the runs stored so far are whole"
            where = shown(exc.filename or store.root)
            raise SparkreportError(
                f"{where}: {exc.strerror or exc} — {stored}; free space or fix "
                "permissions, then run the same ingest again to add the rest") from None
    return report


def _write_all(plan: list[tuple[Source, Parser]], claimed: set[Path], known: dict[str, Path], store: RunStore,
               options: IngestOptions, report: IngestReport) -> None:
    """Parse each planned source and write its runs (skipping ids already stored)."""
    ingested_at = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    written: set[str] = set()
    with _Writer(store) as writer:
        for source, parser in plan:
            if source.path.resolve() in claimed:
                continue
            report.files += 1
            try:
                runs = _parse(source, parser)
            except ParseError as exc:
                report.rejected.append(exc)
                continue
            in_source: set[str] = set()
            for run in runs:
                _finish(run, source, parser, options, ingested_at)
                _distinct_id(run, in_source)
                rid = run.record.run_id
                problems = name_problems(run.record) + physical_problems(run.record)
                if problems:
                    where = f" ({run.locator})" if run.locator else ""
                    report.rejected.append(InputError(
                        shown(source.path), f"run {rid}{where} not stored: {'; '.join(problems)}",
                        fix="fix the source (a corrupted file?) and ingest it again"))
                    continue
                replace = known.get(rid)
                if replace is not None:
                    if rid in written or store.is_whole(replace):
                        report.skipped.append(rid)
                        continue
                    report.recreated.append(rid)  # a folder without a valid run.json: written anew
                if run.keep_source_once:
                    kept = store.keep_source(run.record.campaign, source.path, source.sha256)
                    run.record.provenance.raw_files.insert(0, kept)
                writer.write(run, replace)
                known[rid] = store.run_dir(run.record.campaign, rid)
                written.add(rid)
                report.added.append(rid)


def _distinct_id(run: ParsedRun, in_source: set[str]) -> None:
    """Give a run whose id an earlier run of the same source took (``foo/bar`` and ``foo bar``
    both slug to ``foo-bar``) a suffix hashed from what tells them apart — the same on every
    re-ingest, so identity still comes from the content."""
    record = run.record
    if record.run_id in in_source:
        what = "\0".join((record.model.name, record.environment.name, run.locator or "", record.started_at or ""))
        record.run_id = f"{record.run_id}-{hashlib.sha256(what.encode('utf-8', 'surrogateescape')).hexdigest()[:6]}"
    in_source.add(record.run_id)


class _Writer:
    """Writes parsed runs into the store on a few threads while the next file is parsed.

    A run folder costs a handful of file-system calls (a staging folder, the raw copy, run.json,
    a rename), which on a busy disk take longer than parsing the run; they release the GIL, so
    they overlap. At most ``2 × workers`` runs wait in memory. Each write stays atomic; the first
    failure is raised once every queued write has finished (nothing is left half-written).
    """

    def __init__(self, store: RunStore, workers: int = 4):
        from concurrent.futures import ThreadPoolExecutor

        self.store = store
        self.workers = workers
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sparkreport-write")
        self.pending: list[Future[Path]] = []
        self.error: BaseException | None = None

    def write(self, run: ParsedRun, replace: Path | None = None) -> None:
        if self.error is not None:  # stop queueing after the first failure
            raise self.error
        self.pending.append(self.pool.submit(self.store.write, run.record, list(run.raw), run.tables,
                                             replace=replace))
        if len(self.pending) >= 2 * self.workers:
            self._collect(self.pending.pop(0))

    def _collect(self, future: Future[Path]) -> None:
        try:
            future.result()
        except BaseException as exc:  # noqa: BLE001 — re-raised in __exit__, after the other writes
            self.error = self.error or exc

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for future in self.pending:
            self._collect(future)
        self.pool.shutdown(wait=True)
        if self.error is not None and exc_info[0] is None:
            raise self.error


def _finish(run: ParsedRun, source: Source, parser: Parser, options: IngestOptions, when: str) -> None:
    record = run.record
    record.campaign = slug(strip_bidi(options.campaign or run.campaign or parser.default_campaign))
    record.run_id = short_id(slug(strip_bidi(run.natural_id or f"{parser.name}-{source.sha256[:12]}")))
    record.labels.update(options.labels)
    if options.environment:
        environment = record.environment
        if environment.name not in ("unknown", options.environment):
            environment.details["named_by_source"] = environment.name
        environment.name = options.environment
        if environment.kind == "unknown":
            environment.kind = KIND_OF.get(options.environment, "unknown")
    prov = record.provenance
    # A run.json is UTF-8: a file name that is not is kept with \xNN escapes (so is its raw copy).
    run.raw = [replace(item, name=shown(item.name)) for item in run.raw]
    prov.source_path = shown(source.path)
    prov.source_sha256 = source.sha256
    prov.source_locator = run.locator
    prov.format = parser.name
    prov.ingested_at = when
    prov.sparkreport_version = __version__
    prov.raw_files.extend(item.name for item in run.raw if isinstance(item, RawFile))
    for table in run.tables:
        prov.tables.append(table.name)
        prov.notes.append(f"table {table.name}.csv: {table.description or table.name} "
                          f"({len(table.rows)} rows)")
    removed = clean_names(record)
    if removed:
        prov.notes.append(f"{removed} bidirectional control character(s) removed from names "
                          "(they can make one name display as another)")
