"""The dataset: the run store flattened into tidy tables with declared columns.

``runs``: one row per run (record_type ``run``), flat columns, units in the names, labels as
``label.<key>``. ``summaries``: one row per published arm × metric (n, mean, sd) for results
published without per-run data. A metric a source did not report is NaN, never 0.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import itertools
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast, overload

from sparkreport import metrics as metric_catalog
from sparkreport.errors import DataError
from sparkreport.execute.guard import guard_event_of
from sparkreport.names import shown
from sparkreport.schema import SCHEMA_VERSION, RunRecord
from sparkreport.store import RunStore, StoreScan, check_identities, sha256_file

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from sparkreport.cache import HashMemo, Held, Pickled, RecordCache, WritesLater

#: 2: ``pre_kv_memory_gib`` is a core column and ``peak_memory_gib`` means the peak with the KV cache.
DATASET_SCHEMA_VERSION = 2

#: Identity and context columns of the runs table, in order, with their pandas dtypes.
RUN_COLUMNS: dict[str, str] = {
    "run_id": "string",
    "campaign": "string",
    "model": "string",
    "model_name": "string",
    "model_id": "string",
    "environment": "string",
    "environment_kind": "string",
    "iteration": "Int64",
    "started_at": "string",
    "started_at_local": "string",
    "exit_code": "Int64",
    "ok": "boolean",
    "status_reason": "string",
    "guard": "string",
    "warnings": "string",
    "engine": "string",
    "engine_version": "string",
    "backend": "string",
    "cuda": "string",
    "driver": "string",
    "image": "string",
    "image_digest": "string",
    "gpu_name": "string",
    "gpu_uuid": "string",
    "host_kernel": "string",
    "memory_pool_gib": "Float64",
    "unified_memory": "boolean",
    "num_requests_planned": "Int64",
    "input_len": "Float64",
    "output_len": "Float64",
    "batch_size": "Int64",
    "concurrency": "Int64",
    "source_format": "string",
    "source_path": "string",
    "source_sha256": "string",
    "run_path": "string",
}
#: Metrics always present as columns (NaN when missing), so downstream code can rely on them.
CORE_METRICS = (
    "output_throughput_tok_s",
    "request_throughput_req_s",
    "pre_kv_memory_gib",
    "peak_memory_gib",
    "kv_cache_gib",
    "start_temp_c",
    "end_temp_c",
)
SUMMARY_COLUMNS: dict[str, str] = {
    "run_id": "string",
    "campaign": "string",
    "model": "string",
    "model_name": "string",
    "model_id": "string",
    "environment": "string",
    "environment_kind": "string",
    "metric": "string",
    "unit": "string",
    "n": "Int64",
    "mean": "Float64",
    "sd": "Float64",
    "sd_as_published": "Float64",
    "sd_ddof_as_published": "Int64",
    "unit_as_published": "string",
    "gpu_name": "string",
    "memory_pool_gib": "Float64",
    "source_path": "string",
    "notes": "string",
    "run_path": "string",
}


@dataclass
class Dataset:
    """The tidy tables, plus the content hash that identifies this exact data."""

    runs: pd.DataFrame
    summaries: pd.DataFrame
    #: The validated records (a :class:`Records` when loaded: each read when first asked for;
    #: what only needs to know which run a record is reads :meth:`record_keys`).
    records: Sequence[RunRecord]
    digest: str
    #: Each record's folder, relative to the run store (same order as ``records``).
    paths: list[str]
    #: Run folders without a run.json (``campaign/run_id``): counted nowhere, named by ``check``.
    incomplete: list[str] = field(default_factory=list)
    #: run_id → sha256 of that run's run.json bytes (published arms too, by their run_id): what
    #: a cache keyed by "the runs this result read" hashes (:meth:`digest_of`).
    run_digests: dict[str, str] = field(default_factory=dict)
    #: For a campaign view (:meth:`campaign_view`): the whole dataset it was cut from, and its campaign.
    whole: Dataset | None = field(default=None, repr=False)
    scope: str | None = None
    #: Results computed once per dataset (the included runs per options, the campaign views);
    #: not an init field, so ``dataclasses.replace`` (a stratum, a subset) starts without them.
    memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def campaigns(self) -> list[str]:
        """The campaigns of the records (runs and published arms), sorted."""
        return sorted({key.campaign for key in self.record_keys()})

    def record_keys(self) -> list[RecordKey]:
        """Each record's :class:`RecordKey`, in record order, without reading the records."""
        if isinstance(self.records, Records):
            return self.records.keys
        return [RecordKey.of(record) for record in self.records]

    def record_positions(self) -> dict[str, list[int]]:
        """Each campaign's records' positions in ``records``, campaigns in record order; made
        once, from the :meth:`record_keys` (no record read)."""
        if "record-positions" not in self.memo:
            positions: dict[str, list[int]] = {}
            for i, key in enumerate(self.record_keys()):
                positions.setdefault(key.campaign, []).append(i)
            self.memo["record-positions"] = positions
        found: dict[str, list[int]] = self.memo["record-positions"]
        return found

    def campaign_run_ids(self) -> dict[str, list[str]]:
        """Each campaign's run ids (published arms too), in record order; made once (a build asks
        six times), each call a copy."""
        if "campaign-run-ids" not in self.memo:
            keys = self.record_keys()
            self.memo["campaign-run-ids"] = {campaign: [keys[i].run_id for i in kept]
                                             for campaign, kept in self.record_positions().items()}
        found: dict[str, list[str]] = self.memo["campaign-run-ids"]
        return {campaign: list(run_ids) for campaign, run_ids in found.items()}

    def campaign_digests(self) -> dict[str, str]:
        """Each campaign's :meth:`digest_of` its runs (:meth:`campaign_run_ids`), made once: the
        part of every per-campaign key that follows the data (a build asks for each campaign's
        a dozen times; each time a set of its run ids, ~0.01 s a build at 10 000 runs). A copy."""
        if "campaign-digests" not in self.memo:
            self.memo["campaign-digests"] = {campaign: self.digest_of(run_ids)
                                             for campaign, run_ids in self.campaign_run_ids().items()}
        found: dict[str, str] = self.memo["campaign-digests"]
        return dict(found)

    def campaign_records(self, campaign: str) -> list[RunRecord]:
        """The records of one campaign, in record order (only theirs are read)."""
        return [self.records[i] for i in self.record_positions().get(campaign, [])]

    def campaign_view(self, campaign: str) -> Dataset:
        """The records, rows and summaries of one campaign, as a Dataset whose ``whole`` is this
        one: what the analysis caches per campaign compute from. Global context stays global
        (``metric_columns``, the included runs: :func:`sparkreport.analysis.arms.included_runs`),
        so a view's results are the whole dataset's results for that campaign."""
        key = ("view", campaign)
        if key not in self.memo:
            if "campaign-rows" not in self.memo:  # row positions of every campaign, in one pass
                self.memo["campaign-rows"] = tuple(
                    frame.groupby("campaign").indices if not frame.empty else {}
                    for frame in (self.runs, self.summaries))
            run_rows, summary_rows = self.memo["campaign-rows"]
            keys = self.record_keys()
            kept = self.record_positions().get(campaign, [])
            records: Sequence[RunRecord] = (Records([self.records.flats[i] for i in kept])
                                            if isinstance(self.records, Records) else [self.records[i] for i in kept])
            ids = [keys[i].run_id for i in kept]
            view = Dataset(
                runs=self.runs.take(run_rows.get(campaign, [])).reset_index(drop=True),
                summaries=self.summaries.take(summary_rows.get(campaign, [])).reset_index(drop=True),
                records=records, digest=self.digest_of(ids), paths=[self.paths[i] for i in kept],
                run_digests={run_id: self.run_digests[run_id] for run_id in ids}, whole=self, scope=campaign,
            )
            view.__dict__["metric_columns"] = self.metric_columns  # the cached_property, from the whole
            self.memo[key] = view
        view = self.memo[key]
        assert isinstance(view, Dataset)
        return view

    def digest_of(self, run_ids: Iterable[str]) -> str:
        """One sha256 over the named runs' digests, whatever their order (KeyError for an
        unknown run id): the key of anything computed from exactly those runs. Kept per set of
        runs: a build asks for each campaign's six times or more (its analysis entries, its
        pages' keys and footers: ~600 digests of 50 campaigns' runs, 0.05–0.1 s, at 10 000 runs)."""
        from sparkreport.cache import digest_of

        ids = frozenset(run_ids)
        key = ("digest-of", ids)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = digest_of(self.run_digests, ids)
        return str(found)

    @cached_property
    def metric_columns(self) -> list[str]:
        """Metric columns of the runs table that hold at least one value.

        Computed once: the tables are not modified after ``build_dataset`` (the analysis asks
        for this in every check and comparison).
        """
        return [c for c in self.runs.columns if metric_catalog.is_metric(c) and self.runs[c].notna().any()]

    @property
    def label_columns(self) -> list[str]:
        return [c for c in self.runs.columns if c.startswith("label.")]

    def is_empty(self) -> bool:
        return self.runs.empty and self.summaries.empty

    def table(self, name: str, runs_dir: Path) -> pd.DataFrame:
        """One per-run table (``requests``, ``samples``, …) of every run that has it, stacked,
        with ``run_id`` first. Read on demand: the tidy runs table stays small."""
        import pandas as pd

        frames = []
        for record, path in zip(self.records, self.paths, strict=True):
            if name in record.provenance.tables:
                frame = pd.read_csv(runs_dir / path / f"{name}.csv")
                frame.insert(0, "run_id", record.run_id)
                frames.append(frame)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({"run_id": []})


def plain(value: Any) -> Any:
    """pandas/numpy scalars → Python; NaN, NA and NaT → None (for JSON and templates)."""
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    try:
        if value != value:  # pandas NA / NaT
            return None
    except (TypeError, ValueError):
        return None
    return value


def one_chunk(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (changed in place, and returned) with each Arrow-backed column (text) in one
    chunk. A stack of campaigns' frames holds a column in as many chunks as it had pieces, and
    pyarrow takes rows of a column in several chunks by joining them first, every time: the
    pages' and the analysis' selections and sorts of a spliced runs table (two or three chunks)
    took 0.28 s of a new run's build in 450 takes of ~1 ms, against a few ms once joined."""
    import pandas as pd
    import pyarrow as pa

    for position, (_name, series) in enumerate(frame.items()):
        array = series.array
        if not isinstance(array, pd.arrays.ArrowExtensionArray):
            continue
        chunked = array.__arrow_array__()
        if chunked.num_chunks <= 1:
            continue
        whole = pa.chunked_array([chunked.combine_chunks()], type=chunked.type)
        joined: pd.arrays.ArrowExtensionArray
        if isinstance(array, pd.arrays.ArrowStringArray):  # its dtype says how it shows a missing value (NaN, NA)
            joined = pd.arrays.ArrowStringArray(whole, dtype=array.dtype)  # type: ignore[call-arg]  # pandas 3's
        else:
            joined = pd.arrays.ArrowExtensionArray(whole)
        frame.isetitem(position, joined)
    return frame


def frame_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame as a list of dicts with plain values (:func:`plain` of each of
    :func:`frame_records`' values, keys as text: the JSON contracts, the page tables), made a
    column at a time: a numpy number column needs no call per cell (the Home page's 1 850
    comparisons × 32 columns were 59 000 calls)."""
    if not len(frame.columns):
        return [{} for _ in range(len(frame))]
    values = []
    for column, dtype in zip(_record_columns(frame), frame.dtypes, strict=True):
        kind = "O" if _is_extension(dtype) else dtype.kind
        if kind == "f":  # Python floats: NaN and ±inf are None, as plain() says
            column = [value if math.isfinite(value) else None for value in column]
        elif kind not in "iub":  # (numpy integers and booleans are Python's already)
            column = [plain(value) for value in column]
        values.append(column)
    columns = [str(name) for name in frame.columns]
    return [dict(zip(columns, row, strict=True)) for row in zip(*values, strict=True)]


def frame_records(frame: pd.DataFrame) -> list[dict[Any, Any]]:
    """``frame.to_dict(orient="records")``, the same values, read column by column: pandas boxes
    every cell of a row one at a time, which for the Arrow-backed text columns of the analysis'
    tables is most of the time (0.12 s of comparing 1 850 pairs at 10 000 runs). Each column is
    taken through ``items()``, not ``iloc``: half the time a column for the small frames a page
    reads (~0.2 against ~0.4 ms for a 20 × 20 frame)."""
    columns = list(frame.columns)
    if not columns:
        return [{} for _ in range(len(frame))]
    return [dict(zip(columns, row, strict=True)) for row in zip(*_record_columns(frame), strict=True)]


def _record_columns(frame: pd.DataFrame) -> list[list[Any]]:
    """Each column's values as :func:`frame_records` gives them."""
    values = []
    for (_name, series), dtype in zip(frame.items(), frame.dtypes, strict=True):
        column = series.tolist()  # Python scalars, NA as pd.NA, NaN and NaT as they are
        if _is_extension(dtype):
            import pandas as pd

            column = [None if value is pd.NA else value for value in column]
        elif dtype.kind == "O":
            column = [_native(value) for value in column]
        values.append(column)
    return values


def _is_extension(dtype: Any) -> bool:
    import pandas as pd

    return isinstance(dtype, pd.api.extensions.ExtensionDtype)


def _native(value: Any) -> Any:
    """What ``to_dict`` makes of a cell of an object column: numpy scalars as Python's, NA as None."""
    import numpy as np
    import pandas as pd

    if value is pd.NA:
        return None
    if isinstance(value, np.datetime64):
        return pd.Timestamp(value)
    if isinstance(value, np.timedelta64):
        return pd.Timedelta(value)
    if isinstance(value, np.generic) and isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    return value


def model_name_of(record: RunRecord) -> str:
    """A run's model as every page names it: its display name, else its id (``google/gemma-3-12b-it``),
    else its name in the store."""
    return record.model.display_name or record.model.id or record.model.name


def _host(record: RunRecord) -> dict[str, object]:
    """The executor's host facts (GPU UUID, kernel, …); empty for ingested results."""
    host = (record.hardware.details or {}).get("host")
    return host if isinstance(host, dict) else {}


def _run_row(record: RunRecord, run_path: str) -> dict[str, object]:
    row: dict[str, object] = {
        "run_id": record.run_id,
        "campaign": record.campaign,
        "model": record.model.name,
        "model_name": model_name_of(record),
        "model_id": record.model.id,
        "environment": record.environment.name,
        "environment_kind": record.environment.kind,
        "iteration": record.iteration,
        "started_at": record.started_at,
        "started_at_local": record.started_at_local,
        "exit_code": record.status.exit_code,
        "ok": record.status.ok,
        "status_reason": record.status.reason,
        "guard": (guard_event_of(record) or {}).get("kind"),
        "warnings": "; ".join(record.status.warnings) or None,
        "engine": record.software.engine,
        "engine_version": record.software.engine_version,
        "backend": record.software.backend,
        "cuda": record.software.cuda,
        "driver": record.software.driver,
        "image": record.software.image,
        "image_digest": record.software.image_digest,
        "gpu_name": record.hardware.gpu_name,
        "gpu_uuid": _host(record).get("gpu_uuid"),
        "host_kernel": _host(record).get("kernel"),
        "memory_pool_gib": record.hardware.memory_pool_gib,
        "unified_memory": record.hardware.unified_memory,
        "num_requests_planned": record.workload.num_requests,
        "input_len": record.workload.input_len,
        "output_len": record.workload.output_len,
        "batch_size": record.workload.batch_size,
        "concurrency": record.workload.concurrency,
        "source_format": record.provenance.format,
        "source_path": record.provenance.source_path,
        "source_sha256": record.provenance.source_sha256,
        "run_path": shown(run_path),  # a folder name that is not UTF-8 shown with \xNN escapes
    }
    row.update(record.metrics)
    row.update({f"label.{k}": v for k, v in record.labels.items()})
    return row


def _summary_rows(record: RunRecord, run_path: str) -> list[dict[str, object]]:
    return [
        {
            "run_id": record.run_id,
            "campaign": record.campaign,
            "model": record.model.name,
            "model_name": model_name_of(record),
            "model_id": record.model.id,
            "environment": record.environment.name,
            "environment_kind": record.environment.kind,
            "metric": metric,
            "unit": metric_catalog.unit_of(metric),
            "n": stat.n,
            "mean": stat.mean,
            "sd": stat.sd,
            "sd_as_published": stat.sd_as_published,
            "sd_ddof_as_published": stat.sd_ddof_as_published,
            "unit_as_published": stat.unit_as_published,
            "gpu_name": record.hardware.gpu_name,
            "memory_pool_gib": record.hardware.memory_pool_gib,
            "source_path": record.provenance.source_path,
            "notes": "; ".join(record.provenance.notes) or None,
            "run_path": shown(run_path),
        }
        for metric, stat in record.summary.items()
    ]


def _json_default(value: Any) -> Any:
    """What :meth:`RunRecord.to_dict` makes of a dataclass (its fields; a run without its
    ``summary``), anything else unknown to JSON as ``str`` — for the C encoder, which then
    writes the same text as ``json.dumps(record.to_dict(), sort_keys=True, default=str)``
    without building the dicts in Python first."""
    if is_dataclass(value) and not isinstance(value, type):
        names = _FIELD_NAMES.get(type(value))
        if names is None:
            names = _FIELD_NAMES[type(value)] = tuple(f.name for f in fields(value))
        out = {name: getattr(value, name) for name in names}
        if isinstance(value, RunRecord) and value.record_type == "run":
            del out["summary"]
        return out
    return str(value)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def record_json(record: RunRecord) -> str:
    """A record's canonical JSON (keys sorted): the dataset digest hashes these, joined as a list."""
    return json.dumps(record, sort_keys=True, default=_json_default)


def dataset_digest(record_jsons: Iterable[str]) -> str:
    """The sha256 of the records' list in canonical JSON (``record_json`` of each, in order):
    of ``"[" + ", ".join(record_jsons) + "]"``, fed to the hash a record at a time instead of
    joined first (25 MB at 10 000 runs: 0.02 s against 0.04–0.07 s)."""
    digest = hashlib.sha256(b"[")
    update = digest.update
    for index, text in enumerate(record_jsons):
        if index:
            update(b", ")
        update(text.encode())
    update(b"]")
    return digest.hexdigest()


def records_digest(flats: Sequence[FlatRecord], folder: Path | None = None) -> str:
    """:func:`dataset_digest` of ``flats``' texts: each campaign whose texts are kept in its
    shard's texts file under ``folder`` (the record cache's), in the same order, is hashed from
    that file (:meth:`ShardTexts.hashed`); the others' texts from memory, or made from their
    records when that file is not there or not the one named."""
    digest = hashlib.sha256(b"[")
    index, count = 0, len(flats)
    while index < count:
        before = b", " if index else b""
        kept = flats[index].kept_text() if folder is not None else None
        texts = kept[0].texts if kept is not None else None
        if folder is not None and kept is not None and texts is not None:
            stop = index + len(texts.order)
            run = [flat.kept_text() for flat in flats[index:stop]]
            if len(run) == len(texts.order) and all(one is not None and one[0] is kept[0] for one in run) \
                    and tuple(one[1] for one in run if one) == texts.order:
                fed = texts.hashed(folder, digest, before)
                if fed is not None:
                    digest, index = fed, stop
                    continue
        digest.update(before)
        digest.update(flats[index].json.encode())
        index += 1
    digest.update(b"]")
    return digest.hexdigest()


class RecordKey(NamedTuple):
    """The names that say which run a record is: what most questions across campaigns ask of
    the records (which campaign, which arm, a run or a published summary), at hand without the
    validated record (:class:`Records`)."""

    campaign: str
    run_id: str
    record_type: str
    model: str
    environment: str

    @classmethod
    def of(cls, record: RunRecord) -> RecordKey:
        return cls(record.campaign, record.run_id, record.record_type, record.model.name, record.environment.name)


#: How a shard's texts file begins (its token and a line break follow).
_TEXTS_HEAD = b"sparkreport-texts "


class ShardTexts(NamedTuple):
    """Where a record-cache shard's records' canonical JSON is kept: a file beside the shard's
    (:meth:`~sparkreport.cache.RecordCache.texts_path`) holding the texts in store order joined
    by ``", "`` — the bytes the dataset digest hashes between two of its brackets — after a first
    line naming what it holds (``token``: the cache's salt, the records' digests in order and
    each text's length in bytes).

    Kept there and not in the shard's pickle, the texts (26 MB of the record cache's 38 at
    10 000 runs) are not read into memory to hash the dataset: a build streams each campaign's
    file through one buffer into the digest (:meth:`hashed`; 0.07 → 0.03 s and ~9 000 fewer
    page faults at 10 000 runs). A file that is missing, or is not the one the shard names (a
    build killed between the two writes), is passed over: its records' texts are made again
    from the records (:attr:`FlatRecord.json`)."""

    name: str
    order: tuple[str, ...]
    lengths: tuple[int, ...]
    token: str

    @classmethod
    def write(cls, path: Path, salt: str, order: list[str], texts: list[bytes]) -> ShardTexts:
        """``texts`` (the records of ``order``, in that order) written to ``path``, atomically."""
        from sparkreport.cache import _atomic_bytes

        lengths = tuple(len(text) for text in texts)
        token = hashlib.sha256(repr((salt, order, lengths)).encode()).hexdigest()
        _atomic_bytes(path, b"".join((_TEXTS_HEAD, token.encode(), b"\n", b", ".join(texts))))
        return cls(path.name, tuple(order), lengths, token)

    def _size(self) -> int:
        return sum(self.lengths) + 2 * max(len(self.lengths) - 1, 0)

    def _opened(self, folder: Path) -> io.BufferedReader | None:
        """The file, open and past its first line; None when it is not there or not this one."""
        try:
            handle = open(folder / self.name, "rb")  # noqa: SIM115 (closed by the caller, or here)
        except OSError:
            return None
        if handle.readline() != b"".join((_TEXTS_HEAD, self.token.encode(), b"\n")):
            handle.close()
            return None
        return handle

    def intact(self, folder: Path) -> bool:
        """Whether the file is there, begins with this token and is as long as named."""
        handle = self._opened(folder)
        if handle is None:
            return False
        with handle:
            return os.fstat(handle.fileno()).st_size - handle.tell() == self._size()

    def read(self, folder: Path) -> dict[str, bytes] | None:
        """Each record's text by its digest; None when the file is not there or not this one."""
        handle = self._opened(folder)
        if handle is None:
            return None
        with handle:
            body = handle.read()
        if len(body) != self._size():
            return None
        texts, start = {}, 0
        for digest, length in zip(self.order, self.lengths, strict=True):
            texts[digest] = body[start:start + length]
            start += length + 2
        return texts

    def hashed(self, folder: Path, digest: Any, before: bytes) -> Any:
        """A copy of the hash ``digest`` fed ``before``, then the file's texts, read through one
        buffer; None (``digest`` untouched) when the file is not there or not this one."""
        handle = self._opened(folder)
        if handle is None:
            return None
        fed, size = digest.copy(), 0
        fed.update(before)
        buffer = bytearray(1 << 20)
        view = memoryview(buffer)
        with handle:
            while count := handle.readinto(buffer):
                fed.update(view[:count])
                size += count
        return fed if size == self._size() else None


class RecordGraphs:
    """The validated records of one record-cache shard (a campaign), pickled as one blob and
    unpickled when one of them is first read: a rebuild after one new run reads the records of
    that campaign, not the 10 000 of the store (0.4 s of unpickling at 10 000 runs), while the
    pages across campaigns read what they need of the others from caches kept per campaign.
    ``texts``: where their canonical JSON is kept (:class:`ShardTexts`)."""

    __slots__ = ("graphs", "pickled", "texts")

    def __init__(self, graphs: dict[str, RunRecord] | None = None, pickled: Pickled | None = None,
                 texts: ShardTexts | None = None):
        #: The records by their run.json's digest, once read; their pickle, as read from the
        #: cache (made when the cache is saved, for records made in this process).
        self.graphs = graphs
        self.pickled = pickled
        self.texts = texts

    def record(self, digest: str) -> RunRecord:
        if self.graphs is None:
            assert self.pickled is not None
            self.graphs = self.pickled.value()
        return self.graphs[digest]

    def __reduce__(self) -> tuple[Any, ...]:
        if self.pickled is None:
            from sparkreport.cache import Pickled

            self.pickled = Pickled.of(self.graphs)
        return (RecordGraphs, (None, self.pickled, self.texts))


class FlatRecord:
    """One record's share of the dataset, as the record cache keeps it: its canonical JSON, its
    :class:`RecordKey` and the validated record — the latter, once kept, in its shard's
    :class:`RecordGraphs` until read (its table rows are made when its campaign's frames are,
    :func:`_frames`), the former, once kept, in its shard's texts file (:class:`ShardTexts`),
    which the dataset's digest reads; asked for (:attr:`json`), it is made from the record. Read
    by a worker without a record cache (:func:`_read_in_parts`), it holds its JSON and key, and
    the record is made from the JSON when first asked for."""

    __slots__ = ("_json", "key", "_record", "_graphs", "_digest")

    def __init__(self, record: RunRecord | None, json: str | None, key: RecordKey | None = None,
                 graphs: RecordGraphs | None = None, digest: str | None = None):
        self._json = json
        self._record = record
        self.key = RecordKey._make(key) if key is not None else RecordKey.of(record)  # type: ignore[arg-type]
        self._graphs = graphs
        self._digest = digest

    @classmethod
    def of(cls, record: RunRecord) -> FlatRecord:
        return cls(record, record_json(record))

    @property
    def record(self) -> RunRecord:
        if self._record is None:
            if self._graphs is None:  # read by a worker (:func:`_read_in_parts`): made from its JSON, which round-trips
                assert self._json is not None
                self._record = RunRecord.from_dict(json.loads(self._json))
            else:
                assert self._digest is not None
                self._record = self._graphs.record(self._digest)
        return self._record

    @property
    def json(self) -> str:
        """Its canonical JSON (:func:`record_json`), made from the record when not at hand."""
        if self._json is None:
            self._json = record_json(self.record)
        return self._json

    def kept_in(self, graphs: RecordGraphs, digest: str) -> None:
        """From now on pickled without its record, which ``graphs`` holds under ``digest``, and
        without its text when ``graphs`` names where it is kept."""
        self._graphs, self._digest = graphs, digest

    def kept_text(self) -> tuple[RecordGraphs, str] | None:
        """Its shard's records and its digest there, when its text is kept in the shard's texts
        file."""
        if self._graphs is not None and self._graphs.texts is not None:
            return self._graphs, str(self._digest)
        return None

    def __reduce__(self) -> tuple[Any, ...]:
        if self._graphs is not None:
            text = None if self._graphs.texts is not None else self.json
            return (FlatRecord, (None, text, tuple(self.key), self._graphs, self._digest))
        return (FlatRecord, (self.record, self.json, tuple(self.key)))

    def rows(self, run_path: str) -> list[dict[str, object]]:
        """Its rows: one run row, or a published record's summary row per metric."""
        if self.record.record_type == "run":
            return [_run_row(self.record, run_path)]
        return _summary_rows(self.record, run_path)


class Records(Sequence[RunRecord]):
    """The dataset's records, in store order: each validated record is read when first asked
    for (:class:`FlatRecord`), their :class:`RecordKey` s (:attr:`keys`) at once."""

    def __init__(self, flats: list[FlatRecord]):
        self.flats = flats

    def __len__(self) -> int:
        return len(self.flats)

    @overload
    def __getitem__(self, index: int) -> RunRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[RunRecord]: ...

    def __getitem__(self, index: int | slice) -> RunRecord | list[RunRecord]:
        if isinstance(index, slice):
            return [flat.record for flat in self.flats[index]]
        return self.flats[index].record

    def __iter__(self) -> Iterator[RunRecord]:
        return (flat.record for flat in self.flats)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Records | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    @property
    def keys(self) -> list[RecordKey]:
        return [flat.key for flat in self.flats]


def build_dataset(records: list[RunRecord], run_paths: list[str] | None = None,
                  run_digests: dict[str, str] | None = None) -> Dataset:
    """Flatten validated records into the runs and summaries tables.

    ``run_digests``: run_id → sha256 of its run.json (as :func:`load_dataset` reads them);
    records built in memory are hashed by their canonical JSON instead.
    """
    paths = run_paths or [f"{r.campaign}/{r.run_id}" for r in records]
    flats = [FlatRecord.of(record) for record in records]
    if run_digests is None:
        run_digests = {flat.key.run_id: hashlib.sha256(flat.json.encode()).hexdigest() for flat in flats}
    return _assemble(flats, paths, run_digests, [_frames(flats, paths)])


Frames = tuple["pd.DataFrame", "pd.DataFrame"]


class KeptFrames:
    """A campaign's :data:`Frames` as the record cache keeps them: its summaries and the names of
    its runs table's columns at hand, its runs table read from the file beside its shard only
    when asked for (:meth:`~sparkreport.cache.RecordCache.extra_body`). A build after one new
    run takes every other campaign's rows from the stacked tables (:class:`StackedTables`), so
    their runs tables — 11 MB of the record cache's 47 at 10 000 runs, 0.04 s to unpickle — stay
    unread. ``make``: the frames made afresh from the records, when that file is gone or was
    written for other records."""

    def __init__(self, columns: list[str], summaries: pd.DataFrame | None, load: Callable[[], Any],
                 make: Callable[[], Frames]):
        self.columns = columns
        #: None: the campaign has none (most campaigns of a store of runs); an empty typed table is
        #: made only when asked for (:attr:`summaries`, 0.5 ms each).
        self.kept_summaries = summaries
        self._load, self._make = load, make
        self._runs: pd.DataFrame | None = None

    @property
    def summaries(self) -> pd.DataFrame:
        if self.kept_summaries is None:
            self.kept_summaries = _no_summaries()
        return self.kept_summaries

    @property
    def runs(self) -> pd.DataFrame:
        import pandas as pd

        if self._runs is None:
            loaded = self._load()
            self._runs = loaded if isinstance(loaded, pd.DataFrame) else self._make()[0]
        return self._runs

    def __getitem__(self, index: int) -> pd.DataFrame:
        return self.summaries if index == 1 else self.runs

    def __iter__(self) -> Iterator[pd.DataFrame]:
        yield self.runs
        yield self.summaries

    def __len__(self) -> int:
        return 2


#: A campaign's :data:`Frames`, made now or kept (:class:`KeptFrames`).
AnyFrames = Frames | KeptFrames
#: A campaign's name, key (what its frames were made from) and frames.
Shard = tuple[str, str, AnyFrames]


def _run_columns(frames: AnyFrames) -> list[str]:
    """The names of a campaign's runs table's columns (a kept one's without reading it)."""
    return frames.columns if isinstance(frames, KeptFrames) else list(frames[0].columns)


def _frames(flats: list[FlatRecord], paths: list[str]) -> Frames:
    """The runs and summaries rows of ``flats`` (read from ``paths``) as typed frames, in record
    order: the whole dataset's, or one campaign's, which :func:`_assemble` stacks."""
    import pandas as pd

    run_rows: list[dict[str, object]] = []
    summary_rows: list[dict[str, object]] = []
    for flat, path in zip(flats, paths, strict=True):
        (run_rows if flat.record.record_type == "run" else summary_rows).extend(flat.rows(path))
    runs = _typed_rows(run_rows)
    if runs is None:
        runs = _typed_runs(pd.DataFrame(run_rows))
    summaries = (pd.DataFrame(summary_rows, columns=list(SUMMARY_COLUMNS)).astype(SUMMARY_COLUMNS) if summary_rows
                 else _no_summaries())
    return runs, summaries


def _layout(columns: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """The runs table's columns in their order, and their types, given the columns its rows hold:
    the run columns, the core metrics, the other metrics, the labels (the last two sorted by name)."""
    metric_cols = sorted(c for c in columns if metric_catalog.is_metric(c) and c not in CORE_METRICS)
    labels = sorted(c for c in columns if c.startswith("label."))
    order = [*RUN_COLUMNS, *CORE_METRICS, *metric_cols, *labels]
    types = {**RUN_COLUMNS, **{c: "Float64" for c in (*CORE_METRICS, *metric_cols)}, **{c: "string" for c in labels}}
    return order, types


def _typed_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs table's columns in their order and types (:func:`_layout`)."""
    for column in (*RUN_COLUMNS, *CORE_METRICS):
        if column not in runs.columns:
            runs[column] = None
    order, types = _layout(runs.columns)
    typed = list(runs.columns) == order
    if typed and all(dtype == _dtype(types[name]) for name, dtype in zip(order, runs.dtypes, strict=True)):
        return runs  # typed already (a kept campaign's frame, a stack of typed frames): astype of 84 columns is ~15 ms
    return runs[order].astype(types)


#: The Python types a column of each type may hold for :func:`_typed_rows` to build it directly.
_PLAIN_TYPES: dict[str, frozenset[type]] = {
    "Float64": frozenset({float, int, type(None)}), "Int64": frozenset({int, type(None)}),
    "boolean": frozenset({bool, type(None)}), "string": frozenset({str, type(None)}),
}


def _typed_rows(rows: list[dict[str, object]]) -> pd.DataFrame | None:
    """``_typed_runs(pd.DataFrame(rows))``, the same table, each column made at once in its type
    from its values (a campaign's 200 rows: ~9 ms against ~40 ms for a frame of objects and the
    astype of its 84 columns, on every new run's build); None when a value is not the plain kind
    its column's type takes (a bool among numbers, a number among text: the astype decides those)
    or there are no rows."""
    import pandas as pd

    if not rows:
        return None
    order, types = _layout(dict.fromkeys(key for row in rows for key in row))
    columns = {}
    for column in order:
        values = [row.get(column) for row in rows]
        if not set(map(type, values)) <= _PLAIN_TYPES[types[column]]:
            return None
        columns[column] = pd.array(values, dtype=_dtype(types[column]))
    return pd.DataFrame(columns)


@functools.cache
def _dtype(name: str) -> Any:
    """The pandas dtype ``astype(name)`` gives (``string``: its storage too, which ``==`` tells apart)."""
    import pandas as pd

    return pd.api.types.pandas_dtype(name)


#: The runs table's order: by campaign, model, environment, iteration, run.
RUN_ORDER = ["campaign", "model", "environment", "iteration", "run_id"]


def _assemble(flats: list[FlatRecord], paths: list[str], run_digests: dict[str, str], parts: list[AnyFrames],
              stacked: Frames | None = None, texts: Path | None = None) -> Dataset:
    """The tables from the records' frames (the whole dataset's, or each campaign's, fresh or
    from the record cache, in record order), or ``stacked`` (:class:`StackedTables`, made from
    the same frames): same tables every way (a test compares them). ``texts``: the record
    cache's folder, where its shards' texts files are (:func:`records_digest`)."""
    if stacked is not None:
        runs, summaries = stacked
    elif len(parts) <= 1:  # one frame, or an empty store's none
        runs, summaries = parts[0] if parts else _frames([], [])
        summaries = summaries.copy()  # the cached frame stays as cached (a session holds it)
        runs = runs.sort_values(RUN_ORDER, na_position="last", kind="stable").reset_index(drop=True)
    else:
        runs, summaries, _order = _stack(parts)
    digest = records_digest(flats, texts)
    return Dataset(runs=runs, summaries=summaries, records=Records(flats), digest=digest,
                   paths=list(paths), run_digests=run_digests)


def _stack(parts: Sequence[AnyFrames]) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The campaigns' frames stacked: the runs table (typed, in :data:`RUN_ORDER`), the
    summaries (in ``parts``' order), and for each row of the runs table the position in
    ``parts`` of the frame it came from."""
    import numpy as np
    import pandas as pd

    runs = one_chunk(_typed_runs(pd.concat([part[0] for part in parts], ignore_index=True)))
    summaries = _stacked_summaries(parts)
    origin = np.repeat(np.arange(len(parts)), [len(part[0]) for part in parts])
    runs = runs.sort_values(RUN_ORDER, na_position="last", kind="stable")
    return runs.reset_index(drop=True), summaries, origin[runs.index.to_numpy()]


def _has_summaries(frames: AnyFrames) -> bool:
    """Whether a campaign has published summaries (a kept campaign without any is not given an
    empty table to tell)."""
    if isinstance(frames, KeptFrames) and frames.kept_summaries is None:
        return False
    return bool(len(frames[1]))


def _stacked_summaries(parts: Sequence[AnyFrames]) -> pd.DataFrame:
    """The summaries of ``parts`` stacked in their order (only the campaigns that have some: a
    store of runs has fifty empty ones), typed."""
    import pandas as pd

    published = [part[1] for part in parts if _has_summaries(part)]
    return pd.concat(published, ignore_index=True).astype(SUMMARY_COLUMNS) if published else _no_summaries()


class StackedTables:
    """The runs and summaries tables stacked from every campaign's frames, kept (one pickle in
    the cache folder, beside ``records/``) with each campaign's key and each run row's campaign.

    Stacking fifty campaigns' frames was a third of loading the dataset from the record cache
    (0.2–0.3 s of 0.65 s at 10 000 runs: pandas concatenates each column's fifty typed arrays);
    one changed campaign now replaces its block of rows in the kept tables (:func:`_splice`),
    and nothing changed takes them as they are. The result is the table a
    stack of all the frames gives — the same columns (the union of the campaigns'), types and
    row order (a test compares them)."""

    FILE = "tables.pickle"

    def __init__(self, folder: Path | None, salt: str = ""):
        from sparkreport.cache import read_cache_pickle

        self.path = folder / self.FILE if folder is not None else None
        self.salt = salt
        self.kept: dict[str, Any] = read_cache_pickle(self.path, salt, "tables")
        #: How the last :meth:`tables` call made its tables: "kept", "spliced" or "stacked".
        self.how = ""

    def tables(self, shards: list[Shard], copy: bool = False, later: WritesLater | None = None) -> Frames:
        """The stacked tables of ``shards`` (each campaign's name, key and frames, in store
        order), saved when they changed — by ``later``, if given (then the caller gets copies:
        what is kept must not change before it is written); ``copy``: copies of the kept frames
        (a session holds them, and a caller may change what it is given)."""
        import numpy as np

        from sparkreport.cache import write_cache_pickle

        names = [name for name, _key, _frames in shards]
        keys = {name: key for name, key, _frames in shards}
        kept = self.kept
        if kept.get("names") == names and kept.get("keys") == keys:
            self.how = "kept"
            runs, summaries = kept["runs"], kept["summaries"]
            return (runs.copy(), summaries.copy()) if copy else (runs, summaries)
        old_names, origin = kept.get("names"), kept.get("origin")
        spliced = None
        if isinstance(old_names, list) and isinstance(kept.get("keys"), dict) and isinstance(origin, np.ndarray) \
                and len(origin) == len(kept.get("runs", ())):
            spliced = _splice(kept["runs"], old_names, origin, kept["keys"], shards)
        if spliced is None:  # nothing kept (or damaged), or not in campaign blocks: stacked afresh
            self.how = "stacked"
            runs, summaries, origin = _stack([frames for _name, _key, frames in shards])
        else:
            self.how = "spliced"
            runs, origin = spliced
            summaries = _stacked_summaries([frames for _name, _key, frames in shards])
        self.kept = {"names": names, "keys": keys, "origin": origin, "runs": runs, "summaries": summaries}
        if self.path is not None:
            write = functools.partial(write_cache_pickle, self.path, self.salt, "tables", self.kept)
            if later is None:
                write()
            else:  # written later: what is kept must not change until then, so the caller gets copies
                later.put(self.path, write)
                copy = True
        return (runs.copy(), summaries.copy()) if copy else (runs, summaries)


def _splice(runs: pd.DataFrame, old_names: list[str], origin: np.ndarray, old_keys: dict[str, str],
            shards: list[Shard]) -> tuple[pd.DataFrame, np.ndarray] | None:
    """The kept runs table with the campaigns of ``shards`` whose key changed (or that are new)
    put in afresh and those no longer in ``shards`` left out, and each row's position in
    ``shards``; None when the kept table cannot be spliced (then it is stacked again).

    The table is sorted by campaign first, so each campaign's rows are one block of it, in name
    order: the unchanged blocks are taken as slices (neighbours as one), a changed campaign's
    frame, sorted by :data:`RUN_ORDER` on its own, goes between them where its name sorts, and
    the pieces are stacked once — the table a sort of all the rows gives (a stable sort keeps
    each block's order), without taking every column of ten thousand rows twice (a boolean
    selection, then the sort: 0.07–0.2 s against 0.02–0.05 s at 10 000 runs)."""
    import numpy as np
    import pandas as pd

    keys = {name: key for name, key, _frames in shards}
    position = {name: i for i, name in enumerate(keys)}
    moved = np.array([position.get(name, -1) for name in old_names] or [-1], dtype=origin.dtype)
    edges = np.flatnonzero(np.diff(origin)) + 1
    blocks = [(old_names[origin[start]], int(start), int(stop))
              for start, stop in zip(np.r_[0, edges], np.r_[edges, len(origin)], strict=True)] if len(origin) else []
    if any(first >= second for (first, _a, _b), (second, _c, _d) in zip(blocks, blocks[1:], strict=False)):
        return None  # not one block per campaign in name order
    # (name, the old rows [start, stop) of an unchanged campaign, or the sorted frame of a changed one)
    pieces: list[tuple[str, tuple[int, int] | pd.DataFrame]] = [
        (name, (start, stop)) for name, start, stop in blocks if name in keys and old_keys.get(name) == keys[name]]
    for name, key, made in shards:
        frame = made[0] if old_keys.get(name) != key else None  # an unchanged campaign's is not read
        if frame is not None and len(frame):
            if not bool((frame["campaign"] == name).all()):
                return None  # a run naming another campaign (the identity check refuses it next)
            pieces.append((name, _typed_runs(frame.copy()).sort_values(RUN_ORDER, na_position="last", kind="stable")))
    pieces.sort(key=lambda piece: piece[0])
    # neighbouring unchanged blocks become one slice: [start, stop) of the old rows
    spans: list[tuple[int, int] | pd.DataFrame] = []
    for _name, piece in pieces:
        last = spans[-1] if spans else None
        if isinstance(piece, tuple) and isinstance(last, tuple) and last[1] == piece[0]:
            spans[-1] = (last[0], piece[1])
        else:
            spans.append(piece)
    frames = [runs.iloc[span[0]:span[1]] if isinstance(span, tuple) else span for span in spans]
    origins = [moved[origin[span[0]:span[1]]] if isinstance(span, tuple)
               else np.full(len(span), position[str(span["campaign"].iloc[0])], dtype=origin.dtype)
               for span in spans]
    columns = set(RUN_COLUMNS) | set(CORE_METRICS)  # a stack has the columns some campaign's frame has
    for _name, _key, made in shards:
        columns.update(_run_columns(made))
    stacked = pd.concat([frame[[c for c in frame.columns if c in columns]] for frame in frames] or [runs.iloc[:0]],
                        ignore_index=True)
    return one_chunk(_typed_runs(stacked)), np.concatenate(origins) if origins else np.zeros(0, dtype=origin.dtype)


def load_dataset(runs_dir: Path, *, cache_dir: Path | None = None, hashes: HashMemo | None = None,
                 held: Held | None = None, later: WritesLater | None = None,
                 scan: StoreScan | None = None, folders: Mapping[str, str | None] | None = None) -> Dataset:
    """Read every run.json under ``runs_dir`` into a Dataset (errors name the bad file).

    With ``cache_dir`` (a build's ``build/cache``), each record is kept (:class:`FlatRecord`: the
    validated record and its canonical JSON) by its run.json's content hash, and each campaign's
    frames (its rows of the runs and summaries tables) by its runs' hashes and folders, so a
    rebuild reads, validates and flattens only the files that changed, makes the frames of the
    campaigns that changed, and stacks the same tables from the rest. ``hashes``: the build's
    file digests (``cache_dir``'s ``hashes.pickle``), if already read. ``held``: the record cache
    kept in memory by a process that loads again and again (``serve``'s session,
    :class:`~sparkreport.cache.Held`). ``later``: where the stacked tables' write is put off to
    (a build's :class:`~sparkreport.cache.WritesLater`). ``scan``: the store's scan
    (:meth:`~sparkreport.store.RunStore.scan`) if made already — by the build's walk, after it
    walked the store for the build key — else the store is scanned here. ``folders``: each
    campaign folder's digest by content from that walk (:meth:`~sparkreport.cache.StoreWalk.by_content`;
    None for one with a link; always of one kind, which the shards keep): a campaign whose folder's
    digest is the one its shard was kept with holds the same run.json files, so its runs' digests
    and records are taken from the shard as a whole, without a lookup per run.
    """
    from sparkreport.cache import cache_of, gc_paused, import_tuned
    from sparkreport.early import check_store

    for module in ("numpy", "pyarrow"):  # before pandas does: BLAS on one thread, no huge pages for Arrow
        import_tuned(module)
    store = RunStore(runs_dir)
    check_store(runs_dir)

    scan = scan if scan is not None else store.scan()
    files = [path for path, _stat in scan.files]
    paths = [f"{campaign}/{run}" for campaign, run in scan.folders]
    with gc_paused():  # every object made here stays alive: nothing for the collector to find
        stacked, texts = None, None
        parts: list[AnyFrames]
        if cache_dir is None:
            loaded, parts = _read_in_parts(store, files, paths)
        else:
            loaded, shards, salt = _cached_records(store, scan.files, paths, cache_dir, hashes, held, folders)
            parts = [frames for _name, _key, frames in shards]
            tables = cache_of(held, StackedTables, cache_dir, salt)
            stacked = tables.tables(shards, copy=held is not None, later=later) if len(shards) > 1 else None
            texts = cache_dir / "records"
        # the record's key, not the record: a campaign's pickle stays unread when nothing in it changed
        check_identities((path, campaign, flat.key.campaign, flat.key.run_id)
                         for path, (campaign, _run), (flat, _digest) in zip(files, scan.folders, loaded, strict=True))
        run_digests = {flat.key.run_id: digest for flat, digest in loaded}
        dataset = _assemble([flat for flat, _digest in loaded], paths, run_digests, parts, stacked, texts)
    dataset.incomplete = scan.incomplete
    return dataset


def _read_records(store: RunStore, files: list[str], paths: list[str]) -> list[tuple[FlatRecord, str]]:
    """Each run.json read once: its flattened record and the sha256 of its bytes."""
    loaded = []
    for path in files:
        with open(path, "rb") as handle:
            raw = handle.read()
        loaded.append((FlatRecord.of(store.load(path, raw)), hashlib.sha256(raw).hexdigest()))
    return loaded


#: Without a record cache, a store of at least two pieces of this many runs is read in forked
#: workers, a piece at a time (in smaller stores, forking and sending the pieces back cost about
#: what they save).
PIECE_RUNS = 500


def _read_in_parts(store: RunStore, files: list[str], paths: list[str]
                   ) -> tuple[list[tuple[FlatRecord, str]], list[AnyFrames]]:
    """The records read without a record cache (:func:`_read_records`: a command in a project
    never built, a fresh checkout's ``sparkreport dataset``), and the frames to stack: read,
    validated and flattened in forked workers, a piece of :data:`PIECE_RUNS` consecutive runs at
    a time, when there are two CPUs and two whole pieces (10 000 runs: 1.7–1.8 s against 2.3–2.4 s
    in one process). A worker sends back each record's canonical JSON, key and digest, and its
    piece's frames; the validated record is made again from its JSON only when asked for
    (:attr:`FlatRecord.record`: the JSON round-trips; the tables and the digest need none). The
    first bad run.json in store order is the error raised, as in one process."""
    from sparkreport.parallel import fork_map, workers_for

    pieces = [(start, min(start + PIECE_RUNS, len(files))) for start in range(0, len(files), PIECE_RUNS)]
    workers = workers_for(len(pieces)) if len(files) >= 2 * PIECE_RUNS else 0
    if not workers:
        loaded = _read_records(store, files, paths)
        return loaded, [_frames([flat for flat, _digest in loaded], paths)]

    import pandas  # noqa: F401 — imported once, before the fork, rather than by each worker

    def piece(index: int) -> tuple[list[tuple[str, RecordKey, str]], Frames]:
        start, end = pieces[index]
        read = _read_records(store, files[start:end], paths[start:end])
        return ([(flat.json, flat.key, digest) for flat, digest in read],
                _frames([flat for flat, _digest in read], paths[start:end]))

    sent = fork_map(piece, len(pieces), workers)
    loaded = [(FlatRecord(None, text, key), digest) for texts, _frames_of in sent for text, key, digest in texts]
    return loaded, [frames for _texts, frames in sent]


#: The record cache's entries are :class:`FlatRecord` s of this layout, and each shard's extra
#: is its frames' key, runs columns and summaries, its runs table the body (part of its salt).
FLAT_LAYOUT = 6


def _cached_records(store: RunStore, files: list[tuple[str, os.stat_result]], paths: list[str],
                    cache_dir: Path, memo: HashMemo | None = None, held: Held | None = None,
                    folders: Mapping[str, str | None] | None = None
                    ) -> tuple[list[tuple[FlatRecord, str]], list[Shard], str]:
    """The records (and their run.json digests) and each campaign's name, key (what its frames
    were made from: its runs' digests and folders) and frames, in store order, and the cache's
    salt; the record cache's shard of a campaign (one new run rewrites its campaign's) keeps
    the records and the frames, and what the campaign's folder held then (its digest in
    ``folders``, the walk's, and its runs' digests in order): a campaign whose folder's digest is
    unchanged takes those as they are (at 10 000 runs, 10 000 digests looked up and records taken
    one by one were ~0.04 s of a new run's build)."""
    from sparkreport.cache import HASHES_FILE, HashMemo, RecordCache, cache_of, package_digest

    memo = memo if memo is not None else HashMemo(cache_dir / HASHES_FILE)
    folder, salt = cache_dir / "records", f"flat-{FLAT_LAYOUT}:{package_digest(memo)}"
    cache = cache_of(held, RecordCache, folder, salt)
    members: dict[str, list[int]] = {}  # shard → its records' positions, in store order
    for position, run_path in enumerate(paths):
        # the campaign: one new run rewrites its campaign's shard (its runs are consecutive in store order)
        members.setdefault(run_path.partition("/")[0], []).append(position)
    known: list[str | None] = [None] * len(files)
    taken: dict[str, list[FlatRecord]] = {}
    for shard, positions in members.items():
        as_walked = _kept_as_walked(cache, shard, folders, len(positions))
        if as_walked is not None:
            walked_order, taken[shard] = as_walked
            for position, digest in zip(positions, walked_order, strict=True):
                known[position] = digest
    rest = [position for position, digest in enumerate(known) if digest is None]
    # (a fresh checkout, a command before any build: git knows most of them)
    for position, digest in zip(rest, memo.digests(store.root, [files[i] for i in rest]), strict=True):
        known[position] = digest
    contents = cast("list[str]", known)
    records: list[tuple[FlatRecord, str]] = [cast("tuple[FlatRecord, str]", None)] * len(files)
    digests: dict[str, set[str]] = {}
    for shard, positions in members.items():
        digests[shard] = {contents[i] for i in positions}
        flats = taken.get(shard)
        if flats is not None:
            for position, flat in zip(positions, flats, strict=True):
                records[position] = (flat, contents[position])
            continue
        for position in positions:
            flat = cache.get(shard, contents[position])
            if not isinstance(flat, FlatRecord):
                flat = FlatRecord.of(_interned(store.load(files[position][0])))
                cache.put(shard, contents[position], flat)
            records[position] = (flat, contents[position])
    parts: list[Shard] = []
    for shard, positions in members.items():
        run_digests = tuple(contents[i] for i in positions)
        walked = folders.get(shard) if folders is not None else None
        head = cache.extra(shard)  # (key, the runs table's columns, the summaries or None, folder digest, digests)
        if shard in taken:
            named = str(head[0])  # (the same runs in the same folders: the same key)
        else:
            key = [(records[i][1], paths[i]) for i in positions]
            named = hashlib.sha256(repr(key).encode("utf-8", "surrogateescape")).hexdigest()
        make = functools.partial(_frames, [records[i][0] for i in positions], [paths[i] for i in positions])
        if isinstance(head, tuple) and len(head) == SHARD_HEAD and head[0] == named:
            if shard not in taken and walked is not None and (head[3], head[4]) != (walked, run_digests):
                # the same runs, another folder digest (a file beside them changed): the head says it now
                cache.put_head(shard, (*head[:3], walked, run_digests))
            parts.append((shard, named, KeptFrames(head[1], head[2], functools.partial(cache.extra_body, shard), make)))
            continue
        frames = make()
        cache.put_extra(shard, (named, list(frames[0].columns), frames[1] if len(frames[1]) else None, walked,
                                run_digests), frames[0], check=named)
        parts.append((shard, named, frames))
    cache.keep_only(digests)
    for shard, positions in members.items():
        order = [records[i][1] for i in positions]
        entries = cache.shards[shard]
        kept = next((found for flat in entries.values() if (found := flat.kept_text()) is not None), None)
        if shard not in cache.changed and kept is not None and kept[0].texts is not None \
                and kept[0].texts.order == tuple(order) and kept[0].texts.intact(folder):
            continue  # its records and texts as kept (a shard's runs renamed: in another order)
        # its records pickled again, as one blob, and their texts written beside them, in store order
        old = kept[0].texts.read(folder) if kept is not None and kept[0].texts is not None else None
        texts = [(old or {}).get(digest) or entries[digest].json.encode() for digest in order]
        written = ShardTexts.write(cache.texts_path(shard), salt, order, texts)
        graphs = RecordGraphs({digest: flat.record for digest, flat in entries.items()}, texts=written)
        for digest, flat in entries.items():
            flat.kept_in(graphs, digest)
        cache.changed.add(shard)
    cache.save()
    memo.save()
    (cache_dir / "records.pickle").unlink(missing_ok=True)  # the one-file layout before the shards
    return records, parts, salt


#: The length of a shard's head (:func:`_cached_records`): the key of its frames, its runs
#: table's columns, its summaries, its campaign folder's digest and its runs' digests in order.
SHARD_HEAD = 5


def _kept_as_walked(cache: RecordCache, shard: str, folders: Mapping[str, str | None] | None,
                    count: int) -> tuple[tuple[str, ...], list[FlatRecord]] | None:
    """The runs' digests in store order and their records, as ``shard``'s head keeps them, when
    its campaign folder's digest (``folders``, the build's walk) is the one the head was kept
    with and the shard still holds every record; else None (each run is looked up)."""
    walked = folders.get(shard) if folders is not None else None
    if walked is None:
        return None
    head = cache.extra(shard)
    if not (isinstance(head, tuple) and len(head) == SHARD_HEAD and head[3] == walked
            and isinstance(head[4], tuple) and len(head[4]) == count):
        return None
    entries = cache.shards.get(shard, {})
    flats = [entries.get(digest) for digest in head[4]]
    if not all(isinstance(flat, FlatRecord) for flat in flats):
        return None
    return head[4], cast("list[FlatRecord]", flats)


def _no_summaries() -> pd.DataFrame:
    """An empty summaries table, typed (most campaigns' own: a store of runs has no published
    arms). Typed once a process (5 ms each time), a copy handed out."""
    global _EMPTY_SUMMARIES
    if _EMPTY_SUMMARIES is None:
        import pandas as pd

        _EMPTY_SUMMARIES = pd.DataFrame([], columns=list(SUMMARY_COLUMNS)).astype(SUMMARY_COLUMNS)
    return _EMPTY_SUMMARIES.copy()


_EMPTY_SUMMARIES: pd.DataFrame | None = None


def _interned(value: Any) -> Any:
    """``value`` (a record) with every text in it interned, in place: the record cache's pickle
    then holds each repeated name (metric, model, label, unit) once per file instead of once per
    run, and loads in about two thirds of the time (the same values either way). Dispatched on
    the exact type (a record is dataclasses, dicts, lists and scalars): a cold build walks ten
    thousand records, and the numbers, most of what it meets, are passed over at once."""
    kind = type(value)
    if kind is str:
        return _intern(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        items = [(_interned(k), _interned(v)) for k, v in value.items()]
        value.clear()
        value.update(items)
    elif kind is list:
        value[:] = [_interned(item) for item in value]
    elif is_dataclass(value) and not isinstance(value, type):
        names = _FIELD_NAMES.get(kind)
        if names is None:
            names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(value))
        for name in names:
            item = getattr(value, name)
            interned = _interned(item)
            if interned is not item:
                object.__setattr__(value, name, interned)
    elif isinstance(value, dict):
        items = [(_interned(k), _interned(v)) for k, v in value.items()]
        value.clear()
        value.update(items)
    elif isinstance(value, list):
        value[:] = [_interned(item) for item in value]
    return value


_SCALARS = frozenset({int, float, bool, type(None)})
_intern = sys.intern


#: A cell starting with one of these is a formula to a spreadsheet (OWASP "CSV injection").
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with text cells that a spreadsheet would run as a formula prefixed with ``'``
    (the OWASP rule); numeric columns, and text cells that are plain numbers (``-3.5``), are
    left as they are. For every CSV the site serves (labels and names come from the data)."""
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if series.dtype != object and not pd.api.types.is_string_dtype(series.dtype):
            continue
        out[column] = series.map(csv_cell)
    return out


def write_text_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """A CSV of text cells, each made safe for a spreadsheet (:func:`csv_cell`), written with the
    csv module as ``csv_safe(frame).to_csv(path, index=False)`` writes the same cells (pandas
    writes through it: minimal quoting, ``\n`` line ends) — without a DataFrame, whose text
    columns pandas would first convert to Arrow strings and map back cell by cell (the Data
    quality page's 1 600 findings: ~0.1 s of its fill against a few ms)."""
    import csv

    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows([csv_cell(cell) for cell in row] for row in rows)


def csv_cell(value: Any) -> Any:
    """One CSV cell a spreadsheet will not take for a formula (a text starting with =, +, -, @ …
    that is not a plain number gets a leading apostrophe)."""
    if isinstance(value, str) and value.startswith(FORMULA_LEADS) and not _PLAIN_NUMBER.match(value):
        return "'" + value
    return value


#: The file types ``dataset --out`` writes.
EXPORT_SUFFIXES = (".csv", ".parquet", ".json")


def export(dataset: Dataset, out: Path, *, chunks: ExportChunks | None = None) -> Path:
    """Write the runs table to CSV, Parquet or JSON (chosen by suffix), atomically; CSV cells
    that a spreadsheet would take for a formula are neutralised (:func:`csv_safe`).

    With ``chunks`` (a build's ``build/cache/exports``), the CSV and JSON texts are assembled
    from one chunk per campaign, kept by the digest of the campaign's runs
    (:func:`export_chunks`), so a new run re-encodes its campaign only; the bytes are those of
    an export without them.

    The file has the permissions any new file gets here (0644 under the usual umask), not a
    temporary file's 0600: it is published (the Downloads page), and a web server running as
    another user must be able to read it.
    """
    return export_hashed(dataset, out, chunks=chunks)[0]


def export_hashed(dataset: Dataset, out: Path, *, chunks: ExportChunks | None = None) -> tuple[Path, str]:
    """:func:`export`, and the sha256 of the file written: the CSV and JSON (tens of MB at 10 000
    runs, written from their chunks) hashed as they are written, not read back."""
    suffix = out.suffix.lower()
    if suffix not in EXPORT_SUFFIXES:
        raise DataError(f"{out}: unknown output type {suffix or '(none)'} — use .csv, .parquet or .json")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = _new_file_beside(out)
    try:
        frame = dataset.runs
        if suffix == ".csv":
            header = csv_safe(frame.iloc[:0]).to_csv(index=False).encode("utf-8")
            rows = export_chunks(dataset, "csv", lambda part: csv_safe(part).to_csv(index=False, header=False),
                                 chunks, split=_csv_by_campaign)
            digest = _write_parts(tmp, [header, *(chunk.data for chunk in rows)])
            _vouch_pieces(chunks, out.name, [(header, b""), *((chunk, b"") for chunk in rows)])
        elif suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            meta = dict(table.schema.metadata or {})
            meta[b"sparkreport.dataset_schema_version"] = str(DATASET_SCHEMA_VERSION).encode()
            meta[b"sparkreport.run_schema_version"] = str(SCHEMA_VERSION).encode()
            meta[b"sparkreport.dataset_sha256"] = dataset.digest.encode()
            pq.write_table(table.replace_schema_metadata(meta), tmp)
            digest = sha256_file(Path(tmp))
        else:
            from sparkreport.jsontext import spec_json  # json.dumps(indent=1), byte for byte, fast

            payload = {
                "schema_version": DATASET_SCHEMA_VERSION,
                "dataset_sha256": dataset.digest,
                "runs": [],
                "summaries": json.loads(dataset.summaries.to_json(orient="records")),
            }
            text = spec_json(payload, sort_keys=False) + "\n"
            # each chunk: its rows as items of the payload's "runs" list (depth 1), brackets cut off
            items = export_chunks(dataset, "json", lambda part: spec_json(
                json.loads(part.to_json(orient="records")), 1, sort_keys=False)[2:-3], chunks,
                split=_json_by_campaign)
            empty = '\n "runs": [],\n'
            if items:  # the items written where the empty list is, without joining 25 MB into one text
                head, _empty, tail = text.partition(empty)
                opening, closing = f'{head}\n "runs": [\n'.encode(), f"\n ],\n{tail}".encode()
                parts = [opening, *(piece for i, item in enumerate(items)
                                    for piece in ((b",\n", item.data) if i else (item.data,))), closing]
                digest = _write_parts(tmp, parts)
                # each item's last line is followed by the comma that joins it to the next (the last
                # item's is not: what is clean with a comma after it is clean without)
                _vouch_pieces(chunks, out.name, [(opening, b""), *((item, b",") for item in items), (closing, b"")])
            else:
                digest = _write_parts(tmp, [text.encode("utf-8")])
                _vouch_pieces(chunks, out.name, [(text.encode("utf-8"), b"")])
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out, digest


def _new_file_beside(out: Path) -> str:
    """A new, empty file beside ``out`` to write it in, named as this package names its
    temporary entries (``.<name>.<pid>.<n>``) and made with the permissions a plain new file gets
    (``tempfile.mkstemp``'s are private, and the writers keep the mode of the file they open)."""
    for number in itertools.count():
        tmp = out.with_name(f".{out.name}.{os.getpid()}.{number}")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:  # left by a killed process that had this pid
            continue
        return str(tmp)
    raise AssertionError("unreachable")


@dataclass
class ExportChunks:
    """Where :func:`export` keeps its per-campaign chunks: one file per chunk under
    ``folder/<kind>/`` (``build/cache/exports/``), named by the digest of what it encodes and
    ``salt`` (the package's digest: other code, other chunks). ``computed`` and ``reused``
    count chunks per kind (what a test reads).

    ``vouch_pieces``: the publish-time scan of pieces of text, each whole lines (the indices of
    those it finds no possible credential in; None when it cannot say — see
    :func:`~sparkreport.site.scan.clean_pieces`). With it, :func:`export` has the CSV and JSON it
    writes scanned piece by piece: a chunk found clean is listed, with the size, mtime and inode
    of its file, in its folder's ``vouched`` file and is not scanned again while its file keeps
    them (a chunk edited by hand is scanned again, as publishing's own memo does), so after a new
    run only its campaign's chunk and the file's head and tail are read — not the 31 MB written.
    ``vouched`` names the files all of whose pieces were found clean: files the whole-file scan
    would pass, since its prefilter reads line by line."""

    folder: Path
    salt: str = ""
    computed: dict[str, int] = field(default_factory=dict)
    reused: dict[str, int] = field(default_factory=dict)
    vouch_pieces: Callable[[list[bytes]], set[int] | None] | None = None
    vouched: set[str] = field(default_factory=set)


@dataclass(slots=True)
class Chunk:
    """One campaign's rows of an export, encoded (:func:`export_chunks`): its bytes, the file it is
    kept in and that file's (size, mtime_ns, inode), and whether a scan found it clean as it is."""

    data: bytes
    path: Path | None = None
    stamp: tuple[int, int, int] | None = None
    clean: bool = False


#: In a kind's folder of chunks: a line per chunk the scan found clean, "<file> <size> <mtime_ns> <inode>".
VOUCHED_FILE = "vouched"


def _stamp(stat: os.stat_result) -> tuple[int, int, int]:
    return stat.st_size, stat.st_mtime_ns, stat.st_ino


def _read_vouched(folder: Path) -> dict[str, tuple[int, int, int]]:
    """A kind's chunks found clean (:data:`VOUCHED_FILE`), by file name; {} when unreadable."""
    try:
        lines = (folder / VOUCHED_FILE).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    out: dict[str, tuple[int, int, int]] = {}
    for line in lines:
        name, *numbers = line.split(" ")
        if len(numbers) == 3 and all(n.isdigit() for n in numbers):
            out[name] = (int(numbers[0]), int(numbers[1]), int(numbers[2]))
    return out


def _write_vouched(folder: Path, vouched: Mapping[str, tuple[int, int, int]]) -> None:
    from sparkreport.cache import _atomic_bytes

    text = "".join(f"{name} {size} {mtime} {inode}\n" for name, (size, mtime, inode) in sorted(vouched.items()))
    with contextlib.suppress(OSError):  # (the list spares a later scan; without it the chunks are scanned again)
        _atomic_bytes(folder / VOUCHED_FILE, text.encode("utf-8"))


def _vouch_pieces(chunks: ExportChunks | None, name: str,
                  pieces: list[tuple[bytes | Chunk, bytes]]) -> None:
    """The file ``name``, written as ``pieces`` (each whole lines: a text of the file's own, or a
    chunk and what follows it on its last line in the file), vouched for when every piece is
    clean — the chunks an earlier build found clean are not scanned again (nor copied to add what
    follows them: 25 MB of JSON); those found clean now are listed (:class:`ExportChunks`)."""
    if chunks is None or chunks.vouch_pieces is None:
        return
    unknown = [(piece, after) for piece, after in pieces if not isinstance(piece, Chunk) or not piece.clean]
    texts = [piece.data + after if isinstance(piece, Chunk) else piece + after for piece, after in unknown]
    clean = chunks.vouch_pieces(texts) if texts else set()
    if clean is None:
        return
    found = [piece for index, (piece, _after) in enumerate(unknown) if index in clean and isinstance(piece, Chunk)
             and piece.path is not None and piece.stamp is not None]
    if found:
        folder = cast(Path, found[0].path).parent
        vouched = _read_vouched(folder)
        for chunk in found:
            chunk.clean = True
            vouched[cast(Path, chunk.path).name] = cast(tuple[int, int, int], chunk.stamp)
        _write_vouched(folder, vouched)
    if len(clean) == len(unknown):
        chunks.vouched.add(name)


#: Part of an export chunk's key: another layout of the chunks drops them.
EXPORT_CHUNKS = 1


def _write_parts(path: str, parts: list[bytes]) -> str:
    """``parts`` written one after the other into ``path`` (tens of MB: not joined first); the
    sha256 of what was written."""
    digest = hashlib.sha256()
    with open(path, "wb") as handle:
        for part in parts:
            handle.write(part)
            digest.update(part)
    return digest.hexdigest()


def export_chunks(dataset: Dataset, kind: str, encode: Callable[[pd.DataFrame], str],
                  chunks: ExportChunks | None,
                  split: Callable[[pd.DataFrame, list[np.ndarray]], list[str] | None] | None = None) -> list[Chunk]:
    """``encode`` of each campaign's rows of the runs table, as UTF-8, in table order (the table is sorted
    by campaign first), read back from ``chunks`` when the campaign's runs (their run.json
    digests and folders) and the table's columns are as they were. Without ``chunks`` or for an
    empty table, the whole table as one chunk. When a third of the campaigns or more have no
    chunk (a cold build, another version of the code) and ``split`` is given, the table is
    encoded in one pass and cut at the campaigns (``split(frame, rows per campaign)``; None when
    it cannot be cut, e.g. a CSV cell holding a line break): one pass over 10 000 runs costs
    about half of fifty (0.76 against 1.75 s for the CSV), and the next build, which adds a run,
    finds every other campaign's chunk. Chunks no longer used are removed (and dropped from the
    list of those found clean: :class:`ExportChunks`). Empty chunks are left out."""
    import numpy as np

    from sparkreport.cache import _atomic_bytes, inputs_digest

    frame = dataset.runs
    if frame.empty:
        return []
    if chunks is None:
        return [Chunk(encode(frame).encode("utf-8"))]
    folder = chunks.folder / kind
    folder.mkdir(parents=True, exist_ok=True)
    present = set(os.listdir(folder))
    vouched = _read_vouched(folder) if VOUCHED_FILE in present else {}
    layout = repr([(str(column), str(dtype)) for column, dtype in frame.dtypes.items()])
    groups = [np.asarray(rows) for rows in sorted(frame.groupby("campaign", sort=False).indices.values(),
                                                  key=lambda rows: rows[0])]
    run_ids, run_paths = frame["run_id"].to_numpy(dtype=object), frame["run_path"].to_numpy(dtype=object)
    paths = []
    for rows in groups:
        key = inputs_digest([("kind", f"export-{kind}-{EXPORT_CHUNKS}"), ("salt", chunks.salt), ("layout", layout),
                             ("runs", dataset.digest_of(run_ids[rows])), ("paths", "\0".join(run_paths[rows]))])
        paths.append(folder / f"{key}.txt")
    out: list[Chunk | None] = []
    for path in paths:
        chunk = None
        if path.name in present:
            try:
                with open(path, "rb") as handle:  # bytes: a CSV cell may hold a lone \r
                    stamp = _stamp(os.fstat(handle.fileno()))
                    chunk = Chunk(handle.read(), path, stamp, vouched.get(path.name) == stamp)
            except OSError:
                pass
        out.append(chunk)
    missing = [i for i, chunk in enumerate(out) if chunk is None]
    chunks.reused[kind] = chunks.reused.get(kind, 0) + len(groups) - len(missing)
    whole = split(frame, groups) if split is not None and missing and 3 * len(missing) >= len(groups) else None
    for i in missing:
        data = (whole[i] if whole is not None else encode(frame.iloc[groups[i]])).encode("utf-8")
        _atomic_bytes(paths[i], data)
        chunks.computed[kind] = chunks.computed.get(kind, 0) + 1
        out[i] = Chunk(data, paths[i], _stamp(os.stat(paths[i])))
    used = {path.name for path in paths}
    for stale in present - used - {VOUCHED_FILE}:
        (folder / stale).unlink(missing_ok=True)
    if vouched.keys() - used:
        _write_vouched(folder, {name: stamp for name, stamp in vouched.items() if name in used})
    return [chunk for chunk in out if chunk is not None and chunk.data]


def _contiguous(groups: list[np.ndarray]) -> bool:
    return all(len(rows) and rows[-1] - rows[0] + 1 == len(rows) for rows in groups)


def _csv_by_campaign(frame: pd.DataFrame, groups: list[np.ndarray]) -> list[str] | None:
    """The runs table's CSV rows in one pass, cut at the campaigns' first rows; None when a cell
    holds a line break (a row is then more than one line) or the rows are not in campaign order."""
    text = csv_safe(frame).to_csv(index=False, header=False)
    lines = text.split("\n")
    if len(lines) != len(frame) + 1 or lines[-1] != "" or not _contiguous(groups):
        return None
    return ["".join(f"{line}\n" for line in lines[rows[0]:rows[-1] + 1]) for rows in groups]


def _json_by_campaign(frame: pd.DataFrame, groups: list[np.ndarray]) -> list[str] | None:
    """The runs table's JSON items read once, each campaign's encoded from them (what encoding
    each campaign's rows on their own gives: every value is formatted alone)."""
    from sparkreport.jsontext import spec_json

    if not _contiguous(groups):
        return None
    records = json.loads(frame.to_json(orient="records"))
    return [spec_json(records[rows[0]:rows[-1] + 1], 1, sort_keys=False)[2:-3] for rows in groups]
