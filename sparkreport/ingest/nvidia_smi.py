"""``nvidia-smi --query-gpu=… --format=csv[,noheader][,nounits]`` samples (formats.md §5).

The CSV becomes a ``samples`` time series: one row per line, column names with their unit in
the name (``memory.used [MiB]`` → ``memory_used_mib``, ``utilization.gpu [%]`` →
``utilization_gpu_pct``, ``temperature.gpu`` → ``temperature_gpu_c``). ``[N/A]``,
``[Not Supported]``, ``[Insufficient Permissions]`` become empty (null), never 0. On GB10
(DGX Spark) every memory field is ``[N/A]``: the run records that the GPU reported no memory
(unified memory) instead of a zero.

A samples file is attached to a benchmark run when it sits beside that run's log as
``<log stem>.nvidia-smi.csv`` or ``<log stem>.smi.csv`` (see :func:`sample_companions`);
on its own it is ingested as a monitoring-only run.

``noheader`` files have no column names: they are inferred from the values' units where that
is unambiguous (``%``, ``MiB``, ``W``, ``MHz``, a timestamp, a GPU name), else ``col<N>``.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sparkreport.errors import ParseError
from sparkreport.ingest.base import ParsedRun, Parser, Source, Table, register, stable_id
from sparkreport.ingest.memory_log import to_gib
from sparkreport.ingest.text import NULL_WORDS, NotANumber, iter_lines, require_content, to_number
from sparkreport.schema import Hardware, RunRecord, Status
from sparkreport.store import RawFile

_HEADER_FIELD = re.compile(r"^(?P<name>[a-z_][a-z0-9_.]*)(?: \[(?P<unit>[^\]]+)\])?$")
_TIMESTAMP = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?$")
_VALUE_UNIT = re.compile(r"^[-+]?\d+(?:\.\d+)?\s*(?P<unit>%|MiB|W|MHz|GiB|KiB|C)$")
_UNIT_SUFFIX = {"%": "pct", "MiB": "mib", "W": "w", "MHz": "mhz", "GiB": "gib", "KiB": "kib", "C": "c"}
_TEXT_FIELDS = {"timestamp", "name", "pci.bus_id", "driver_version", "uuid", "serial", "vbios_version",
                "pstate", "compute_mode", "compute_cap", "gpu_name", "gpu_bus_id"}
_KNOWN_PREFIXES = ("timestamp", "index", "name", "memory.", "utilization.", "power.", "temperature.",
                   "clocks.", "pstate", "fan.", "driver_version", "pci.", "uuid", "compute_", "enforced.",
                   "clocks_", "gpu_", "ecc.", "encoder.", "count", "serial", "vbios_version")
#: Distinct cells remembered per column (bounded memory on columns that never repeat).
_MEMO_LIMIT = 4096
_GPU_NAME_PREFIXES = ("NVIDIA", "Tesla", "Quadro", "GeForce", "TITAN")
#: units nvidia-smi puts in the header → the suffix used in the column name
_INFER_ORDER = {"%": ("utilization.gpu", "utilization.memory"), "MiB": ("memory.used", "memory.total"),
                "W": ("power.draw", "power.limit"), "MHz": ("clocks.sm", "clocks.mem")}


def column_name(field: str, unit: str | None) -> str:
    """``memory.used`` + ``MiB`` → ``memory_used_mib``; temperature gets ``_c``."""
    base = field.replace(".", "_")
    if unit is None and field.startswith("temperature."):
        return f"{base}_c"
    if unit is None:
        return base
    return f"{base}_{_UNIT_SUFFIX.get(unit, re.sub(r'[^a-z0-9]+', '', unit.lower()))}"


def _split(line: str) -> list[str]:
    """The cells of one CSV line (nvidia-smi never quotes; a stray quote or CR is tolerated)."""
    line = line.replace("\r", "")
    try:
        cells = next(csv.reader([line], skipinitialspace=True), [])
    except csv.Error:
        cells = line.split(",")
    return [cell.strip() for cell in cells]


def _is_header(cells: list[str]) -> bool:
    return all(_HEADER_FIELD.match(c) and c.startswith(_KNOWN_PREFIXES) for c in cells)


def _infer(cells: list[str]) -> list[tuple[str, str | None]]:
    """Column (field, unit) guesses for a header-less file, from its first row."""
    used: dict[str, int] = {}
    out: list[tuple[str, str | None]] = []
    for index, cell in enumerate(cells):
        if _TIMESTAMP.match(cell):
            out.append(("timestamp", None))
        elif (m := _VALUE_UNIT.match(cell)) and m["unit"] in _INFER_ORDER:
            names = _INFER_ORDER[m["unit"]]
            n = used.get(m["unit"], 0)
            used[m["unit"]] = n + 1
            out.append((names[n], m["unit"]) if n < len(names) else (f"col{index}", m["unit"]))
        elif cell.startswith(_GPU_NAME_PREFIXES):
            out.append(("name", None))
        elif index <= 1 and cell.isdigit() and ("index", None) not in out:
            out.append(("index", None))
        else:
            out.append((f"col{index}", None))
    return out


def _convert(field: str, cell: str) -> Any:
    """One cell's value: None for the null words, text for text fields, else a number.

    Raises NotANumber for a numeric field whose cell is not a number.
    """
    if cell.lower() in NULL_WORDS:
        return None
    if field in _TEXT_FIELDS or field.startswith("col") and not cell[:1].isdigit():
        return cell
    return to_number(cell)


def _read_columnar(path: Path) -> tuple[Table, list[tuple[str, str | None]]] | None:
    """The fast path of :func:`read_samples`: the whole CSV through pyarrow, each distinct cell
    of a column converted once. None when the file is not the plain case (no header on the
    first line, a ragged row, bad bytes, a value that is not a number): the row-wise reader
    then parses it and names the line of any error.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    data = path.read_bytes()
    first_line = data.split(b"\n", 1)[0]
    # Quotes and lone carriage returns are read differently by pyarrow than by csv.reader: rare
    # enough in nvidia-smi output to leave to the row-wise reader.
    if b"\x00" in data or b'"' in data or data.count(b"\r") != data.count(b"\r\n") or not first_line.strip():
        return None
    try:
        cells = _split(first_line.decode("utf-8"))
    except UnicodeDecodeError:
        return None
    if not _is_header(cells):
        return None
    fields = [(m["name"], m["unit"]) for m in (_HEADER_FIELD.match(c) for c in cells) if m]
    names = [f"c{i}" for i in range(len(fields))]
    try:
        frame = pacsv.read_csv(
            pa.py_buffer(data),
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=1),
            parse_options=pacsv.ParseOptions(newlines_in_values=False),
            convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()),
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowException):
        return None
    columns: list[list[Any]] = []
    for (field, _unit), name in zip(fields, names, strict=True):
        column = pc.utf8_trim_whitespace(frame.column(name)).combine_chunks()
        if field in _TEXT_FIELDS:  # timestamps: every cell distinct, kept as text unless a null word
            columns.append([None if cell.lower() in NULL_WORDS else cell for cell in column.to_pylist()])
            continue
        encoded = column.dictionary_encode()
        try:
            converted = [_convert(field, cell) for cell in encoded.dictionary.to_pylist()]
        except NotANumber:
            return None
        columns.append([converted[i] for i in encoded.indices.to_numpy(zero_copy_only=False).tolist()])
    table = Table("samples", [column_name(f, u) for f, u in fields], description="nvidia-smi --query-gpu samples")
    table.rows = list(zip(*columns, strict=True))
    return table, fields


def read_samples(path: Path) -> tuple[Table, dict[str, Any]]:
    """The samples table of a query-gpu CSV, plus facts (gpu name, memory, temperatures)."""
    fast = _read_columnar(path)
    if fast is not None and fast[0].rows:
        table, fields = fast
        return table, _facts(table, fields, False)
    return _read_rows(path)


def _read_rows(path: Path) -> tuple[Table, dict[str, Any]]:
    """:func:`read_samples` line by line: every file shape, and errors that name their line."""
    fields: list[tuple[str, str | None]] | None = None
    table: Table | None = None
    inferred = False
    memos: list[dict[str, Any]] = []
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        cells = _split(line)
        if fields is None:
            if _is_header(cells):
                fields = [(m["name"], m["unit"]) for m in (_HEADER_FIELD.match(c) for c in cells) if m]
                table = Table("samples", [column_name(f, u) for f, u in fields],
                              description="nvidia-smi --query-gpu samples")
                continue
            fields = _infer(cells)
            if all(name.startswith("col") for name, _unit in fields):
                raise ParseError(path, "has no nvidia-smi header and no recognisable nvidia-smi values",
                                 line=number, fix="query with --format=csv (keep the header)")
            inferred = True
            table = Table("samples", [column_name(f, u) for f, u in fields],
                          description="nvidia-smi --query-gpu samples (header-less: columns inferred)")
        assert table is not None
        if not memos:
            memos = [{} for _ in fields]
        if len(cells) != len(fields):
            raise ParseError(path, f"row has {len(cells)} fields, the header {len(fields)}", line=number,
                             fix="ingest the CSV nvidia-smi wrote, unchanged")
        row: list[Any] = []
        for (field, _unit), cell, seen in zip(fields, cells, memos, strict=True):
            # Samples repeat their values (a GPU name, "96 %", "[N/A]"): each distinct cell of a
            # column is converted once (an hour at 10 Hz is 36 000 rows).
            if cell in seen:
                row.append(seen[cell])
                continue
            try:
                value = _convert(field, cell)
            except NotANumber:
                raise ParseError(path, f"{field} should be a number, found {cell!r}", line=number,
                                 fix="ingest the CSV nvidia-smi wrote, unchanged") from None
            if len(seen) < _MEMO_LIMIT:
                seen[cell] = value
            row.append(value)
        table.rows.append(row)
    if table is None or not table.rows:
        raise ParseError(path, "holds no nvidia-smi samples", fix="ingest a CSV with at least one row")
    return table, _facts(table, fields or [], inferred)


def _first(table: Table, column: str) -> Any:
    if column not in table.columns:
        return None
    index = table.columns.index(column)
    return next((row[index] for row in table.rows if row[index] is not None), None)


def _last(table: Table, column: str) -> Any:
    if column not in table.columns:
        return None
    index = table.columns.index(column)
    return next((row[index] for row in reversed(table.rows) if row[index] is not None), None)


def _facts(table: Table, fields: list[tuple[str, str | None]], inferred: bool) -> dict[str, Any]:
    facts: dict[str, Any] = {"samples": len(table.rows), "columns_inferred": inferred}
    facts["gpu_name"] = _first(table, "name")
    memory_columns = [column_name(f, u) for f, u in fields if f.startswith("memory.")]
    facts["memory_columns"] = memory_columns
    facts["memory_reported"] = any(_first(table, c) is not None for c in memory_columns)
    for field, unit in fields:
        if field == "memory.total" and unit in {"MiB", "GiB", "KiB", None}:
            value = _first(table, column_name(field, unit))
            if value is not None:
                facts["memory_total_gib"] = to_gib(float(value), unit or "MiB")
    facts["start_temp_c"] = _first(table, "temperature_gpu_c")
    facts["end_temp_c"] = _last(table, "temperature_gpu_c")
    return facts


def sample_companions(log: Path) -> list[Path]:
    """nvidia-smi CSVs that belong to the run logged in ``log`` (same stem)."""
    return [p for p in (log.with_name(log.stem + ".nvidia-smi.csv"), log.with_name(log.stem + ".smi.csv"))
            if p.exists()]


def log_runs(source: Source, prefix: str, blocks: Sequence[Any],
             record_of: Callable[[Any], RunRecord]) -> list[ParsedRun]:
    """The runs of a text log, one per block (a report the parser found, with its ``first_line``
    and ``last_line``): a log of one run keeps its file as the run's raw file and its id from the
    file's hash; a log of several keeps the file once and names each run's lines. The samples CSVs
    beside the log are attached (:func:`attach_samples`)."""
    single = len(blocks) == 1
    runs = [ParsedRun(record=record_of(block),
                      natural_id=f"{prefix}-{stable_id(source.sha256, *(() if single else (str(index),)))}",
                      locator=None if single else f"lines {block.first_line}-{block.last_line}",
                      raw=[RawFile(source.path.name, source=source.path)] if single else [],
                      keep_source_once=not single)
            for index, block in enumerate(blocks)]
    attach_samples(source.path, runs)
    return runs


def attach_samples(log: Path, runs: list[ParsedRun]) -> None:
    """Give the runs parsed from ``log`` the samples CSVs beside it (:func:`sample_companions`):
    the samples table, temperatures and GPU facts, and the CSV kept as a raw file."""
    for path in sample_companions(log):
        table, facts = read_samples(path)
        for run in runs:
            run.tables.append(table)
            _apply(run.record, facts)
            run.raw.append(RawFile(path.name, source=path))


def _apply(record: RunRecord, facts: dict[str, Any]) -> None:
    for metric in ("start_temp_c", "end_temp_c", "memory_total_gib"):
        if facts.get(metric) is not None and record.metrics.get(metric) is None:
            record.metrics[metric] = float(facts[metric])
    hardware = record.hardware
    if hardware.gpu_name is None and isinstance(facts.get("gpu_name"), str):
        hardware.gpu_name = facts["gpu_name"]
    details = {k: facts[k] for k in ("samples", "columns_inferred", "memory_reported")}
    if facts["memory_columns"] and not facts["memory_reported"]:
        details["memory_note"] = ("nvidia-smi reported every memory field as unavailable ([N/A]); "
                                  "on GB10 / iGPUs memory is unified and not reported by NVML")
        if "GB10" in (hardware.gpu_name or ""):
            hardware.unified_memory = True
    hardware.details["nvidia_smi"] = details


@register
class NvidiaSmiCsvParser(Parser):
    """``nvidia-smi --query-gpu`` CSV samples."""

    name = "nvidia-smi-csv"
    description = "nvidia-smi --query-gpu … --format=csv samples (header/noheader, units/nounits)"
    versions = "NVIDIA drivers 4xx – 580 ([N/A], [Not Supported], [Insufficient Permissions]; GB10)"

    def detect(self, source: Source) -> bool:
        lines = [line for line in source.head_text.splitlines() if line.strip()][:5]
        if not lines or "," not in lines[0]:
            return False
        try:
            first = _split(lines[0])
        except (csv.Error, StopIteration):
            return False
        if _is_header(first):
            return True
        if not any(re.search(r"\d|\[N/A\]|\[Not Supported\]", cell) for cell in first):
            return False  # another CSV's header row
        text = "\n".join(lines)
        return bool(re.search(r"\[N/A\]|\[Not Supported\]|NVIDIA |\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}",
                              text)) and len({len(_split(line)) for line in lines}) == 1

    def parse(self, source: Source) -> list[ParsedRun]:
        require_content(source.path)
        table, facts = read_samples(source.path)
        record = RunRecord(run_id="", campaign="", hardware=Hardware(), status=Status(ok=True))
        record.provenance.notes.append("monitoring samples only (no benchmark results in this file)")
        _apply(record, facts)
        return [ParsedRun(record=record, natural_id=f"nvidia-smi-{stable_id(source.sha256)}",
                          raw=[RawFile(source.path.name, source=source.path)], tables=[table])]
