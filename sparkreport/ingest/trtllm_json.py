"""trtllm-bench's files: ``--report_json``, ``--request_json`` and ``--iteration_log`` (§1.4).

* ``--report_json`` — one JSON object (``engine``, ``machine``, ``world_info``,
  ``request_info``, ``performance``, ``streaming_metrics``, ``decoding_stats``, ``dataset``);
  ``world_info.kv_cache_percentage`` is already a FRACTION (0.9), unlike the text report.
* ``--request_json`` — a JSON list, one record per request; timestamps and latencies in
  nanoseconds, throughputs in tokens per NANOsecond. Becomes a ``requests`` table (ms, s,
  tok/s) plus the counts and the mean/min/max of the per-request figures.
* ``--iteration_log`` — one Python-repr dict per line (single quotes, ``True``/``None``: not
  JSON), read with :func:`ast.literal_eval` (never ``eval``). Becomes an ``iterations`` table.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from sparkreport.errors import ParseError
from sparkreport.ingest.base import (
    ParsedRun,
    Parser,
    Source,
    Table,
    number,
    register,
    stable_id,
    text_field,
)
from sparkreport.ingest.text import iter_lines, require_content
from sparkreport.schema import Hardware, Model, RunRecord, Software, Status, Workload
from sparkreport.store import RawFile

_SHAPE_FIX = "ingest the file trtllm-bench wrote, unchanged"
_PERCENTILE_KEYS = {"minimum": "min", "maximum": "max", "average": "mean", "mean": "mean",
                    "min": "min", "max": "max"}
_BACKENDS = {"pytorch": "pytorch", "trt": "tensorrt", "tensorrt": "tensorrt",
             "_autodeploy": "_autodeploy", "autodeploy": "_autodeploy"}


def _section(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(path, f"{key} should be an object, found {type(value).__name__}", fix=_SHAPE_FIX)
    return value


def percentiles(value: Any, family: str, path: Path, where: str) -> dict[str, float]:
    """``{"p50": …, "minimum": …}`` → ``{"<family>_p50": …, "<family>_min": …}``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(path, f"{where} should be an object of percentiles", fix=_SHAPE_FIX)
    out: dict[str, float] = {}
    for key, raw in value.items():
        stat = _PERCENTILE_KEYS.get(str(key).lower())
        if stat is None and re.fullmatch(r"p\d+(?:[._]\d+)?", str(key).lower()):
            stat = str(key).lower().replace(".", "_")
        if stat is None:
            continue
        parsed = number(raw, path, f"{where}.{key}")
        if parsed is not None:
            out[f"{family}_{stat}"] = parsed
    return out


def _put(metrics: dict[str, float], name: str, value: Any, path: Path, where: str) -> None:
    parsed = number(value, path, where)
    if parsed is not None:
        metrics[name] = parsed


_WORLD = {"tp_size": "tp_size", "pp_size": "pp_size", "ep_size": "ep_size",
          "max_batch_size": "max_batch_size", "max_num_tokens": "max_num_tokens"}
_REQUEST = {"num_requests": "num_requests", "avg_input_length": "avg_input_len",
            "avg_output_length": "avg_output_len"}
_PERFORMANCE = {
    "total_latency_ms": "total_latency_ms", "avg_request_latency_ms": "latency_ms_mean",
    "request_throughput_req_s": "request_throughput_req_s",
    "system_output_throughput_tok_s": "output_throughput_tok_s",
    "system_total_throughput_tok_s": "total_token_throughput_tok_s",
    "output_throughput_per_user_tok_s": "per_user_output_throughput_tok_s",
    "output_throughput_per_gpu_tok_s": "per_gpu_output_throughput_tok_s",
}
_STREAMING = {"token_output_speed_tok_s": "gtps_tok_s_mean", "avg_ttft_ms": "ttft_ms_mean",
              "avg_tpot_ms": "tpot_ms_mean"}
_STREAMING_PERCENTILES = {"tpot_percentiles": "tpot_ms", "ttft_percentiles": "ttft_ms",
                          "gen_tps_percentiles": "gtps_tok_s"}


def report_record(data: Any, path: Path) -> RunRecord:
    """A run record from a ``--report_json`` dict."""
    if not isinstance(data, dict) or not ({"performance", "world_info", "engine"} & set(data)):
        raise ParseError(path, "expected a trtllm-bench --report_json object "
                         "(engine, world_info, performance, …)", fix=_SHAPE_FIX)
    engine = _section(data, "engine", path)
    machine = _section(data, "machine", path)
    world = _section(data, "world_info", path)
    request = _section(data, "request_info", path)
    performance = _section(data, "performance", path)
    streaming = _section(data, "streaming_metrics", path)
    metrics: dict[str, float] = {}
    for section, name, mapping in ((world, "world_info", _WORLD), (request, "request_info", _REQUEST),
                                   (performance, "performance", _PERFORMANCE),
                                   (streaming, "streaming_metrics", _STREAMING)):
        for key, metric in mapping.items():
            _put(metrics, metric, section.get(key), path, f"{name}.{key}")
    metrics.update(percentiles(performance.get("request_latency_percentiles_ms"), "latency_ms", path,
                               "performance.request_latency_percentiles_ms"))
    for key, family in _STREAMING_PERCENTILES.items():
        metrics.update(percentiles(streaming.get(key), family, path, f"streaming_metrics.{key}"))
    fraction = number(world.get("kv_cache_percentage"), path, "world_info.kv_cache_percentage")
    workload_details: dict[str, Any] = {}
    if fraction is not None:
        if fraction > 1:  # a percentage where a fraction belongs: say so, and convert
            workload_details["kv_cache_percentage_as_printed"] = fraction
            fraction /= 100.0
        metrics["kv_cache_fraction"] = fraction
    for key, where in (("world_size", world), ("issue_rate", world),
                       ("avg_num_concurrent_requests", request)):
        value = number(where.get(key), path, key)
        if value is not None:
            workload_details[key] = value
    if world.get("scheduling_policy") is not None:
        workload_details["scheduling_policy"] = str(world["scheduling_policy"])
    for key in ("max_input_length", "max_sequence_length"):
        value = number(engine.get(key), path, f"engine.{key}")
        if value is not None:
            workload_details[key] = value
    dataset = _section(data, "dataset", path)
    if dataset:
        workload_details["dataset"] = dataset
    software_details: dict[str, Any] = {}
    for key in ("dtype", "kv_cache_dtype", "quantization", "engine_dir"):
        value = engine.get(key)
        if value is not None and str(value) != "None":
            software_details[key] = str(value)
    decoding = _section(data, "decoding_stats", path)
    if decoding:
        software_details["speculative_decoding"] = decoding
    hardware = Hardware()
    if machine:
        hardware.gpu_name = text_field(machine.get("name"), path, "machine.name")
        hardware.memory_pool_gib = number(machine.get("memory.total"), path, "machine.memory.total")
        hardware.details["machine_memory_label"] = "memory.total is GiB (torch total_memory / 1024**3)"
        clock = number(machine.get("clocks.mem"), path, "machine.clocks.mem")
        if clock is not None:
            hardware.details["memory_clock_ghz"] = clock
        if hardware.memory_pool_gib is not None:
            metrics.setdefault("memory_total_gib", hardware.memory_pool_gib)
    energy = data.get("energy")
    if isinstance(energy, dict):
        hardware.details["energy"] = energy
    model_id = text_field(engine.get("model"), path, "engine.model")
    backend = text_field(engine.get("backend"), path, "engine.backend")
    model_path = engine.get("model_path")
    if model_path is not None and str(model_path) != "None":
        workload_details["model_path"] = str(model_path)
    num_requests = metrics.get("num_requests")
    version = engine.get("version")
    return RunRecord(
        run_id="", campaign="",
        model=Model(id=model_id, name=(model_id or "unknown").rstrip("/").split("/")[-1]),
        software=Software(
            engine="trtllm", engine_version=None if version is None else str(version),
            backend=_BACKENDS.get(backend.lower(), backend.lower()) if backend else None,
            details=software_details,
        ),
        workload=Workload(
            num_requests=None if num_requests is None else int(num_requests),
            input_len=metrics.get("avg_input_len"), output_len=metrics.get("avg_output_len"),
            kv_cache_fraction=metrics.get("kv_cache_fraction"), details=workload_details,
        ),
        hardware=hardware,
        metrics=dict(metrics),
        status=Status(ok=True),
    )


@register
class TrtllmReportJsonParser(Parser):
    """trtllm-bench ``--report_json``."""

    name = "trtllm-report-json"
    description = "trtllm-bench --report_json file (engine, world_info, performance, streaming_metrics)"
    versions = "TensorRT-LLM 0.17 – 1.x (system_total_throughput_tok_s from Apr 2025; machine newest)"

    def detect(self, source: Source) -> bool:
        head = source.head_text.lstrip()
        return head.startswith("{") and ('"world_info"' in head or (
            '"performance"' in head and '"request_throughput_req_s"' in head))

    def parse(self, source: Source) -> list[ParsedRun]:
        record = report_record(source.json(), source.path)
        return [ParsedRun(record=record, natural_id=f"trtllm-report-{stable_id(source.sha256)}",
                          raw=[RawFile(source.path.name, source=source.path)])]


# -- --request_json ---------------------------------------------------------------------------

REQUEST_COLUMNS = [
    "request_id", "input_tokens", "output_tokens", "error_tokens", "decode_iterations",
    "start_s", "first_token_s", "end_s", "ttft_ms", "tpot_ms", "e2el_ms", "generation_time_ms",
    "total_token_throughput_tok_s", "generation_throughput_tok_s",
]
_NS_PER_MS = 1e6
_NS_PER_S = 1e9


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def request_table(data: Any, path: Path) -> Table:
    """The per-request table from a ``--request_json`` list (ns → ms/s, tokens/ns → tok/s)."""
    if not isinstance(data, list) or not data:
        raise ParseError(path, "expected a non-empty JSON list of per-request records",
                         fix="ingest the --request_json file trtllm-bench wrote")
    records: list[dict[str, Any]] = []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise ParseError(path, f"request [{index}] should be an object", fix=_SHAPE_FIX)
        records.append(item)
    starts = [number(r.get("start_timestamp"), path, f"[{i}].start_timestamp")
              for i, r in enumerate(records)]
    known_starts = [s for s in starts if s is not None]
    origin = min(known_starts) if known_starts else 0.0
    table = Table("requests", list(REQUEST_COLUMNS),
                  description="per-request records from trtllm-bench --request_json")
    for index, item in enumerate(records):
        where = f"[{index}]"

        def num(key: str, item: dict[str, Any] = item, where: str = where) -> float | None:
            return number(item.get(key), path, f"{where}.{key}")

        def stamp(key: str) -> float | None:
            value = num(key)
            return None if value is None else (value - origin) / _NS_PER_S

        output = num("output_tokens")
        for key in ("num_total_output_tokens", "num_output_tokens", "num_generated_tokens"):
            output = output if output is not None else num(key)
        throughput = num("generation_token_throughput")
        if throughput is None:
            throughput = num("output_token_throughput")
        table.rows.append([
            item.get("id", index), num("num_input_tokens"), output, num("error_tokens"),
            num("decode_iteration"), stamp("start_timestamp"), stamp("first_token_timestamp"),
            stamp("end_timestamp"), _scaled(num("time_to_first_token"), 1 / _NS_PER_MS),
            _scaled(num("intertoken_latency"), 1 / _NS_PER_MS),
            _scaled(num("end_to_end_latency"), 1 / _NS_PER_MS),
            _scaled(num("generation_time"), 1 / _NS_PER_MS),
            _scaled(num("total_token_throughput"), _NS_PER_S), _scaled(throughput, _NS_PER_S),
        ])
    return table


def _column(table: Table, name: str) -> list[float]:
    index = table.columns.index(name)
    return [float(row[index]) for row in table.rows if row[index] is not None]


def request_metrics(table: Table) -> dict[str, float]:
    """Counts and the mean/min/max of the per-request figures (no interpolated percentiles:
    those are the report's to give)."""
    metrics: dict[str, float] = {"num_requests": float(len(table.rows))}
    for column, metric in (("input_tokens", "total_input_tokens"),
                           ("output_tokens", "total_output_tokens")):
        values = _column(table, column)
        if values:
            metrics[metric] = sum(values)
    for column, family in (("ttft_ms", "ttft_ms"), ("tpot_ms", "tpot_ms"), ("e2el_ms", "latency_ms"),
                           ("generation_throughput_tok_s", "gtps_tok_s")):
        values = _column(table, column)
        if values:
            metrics[f"{family}_mean"] = sum(values) / len(values)
            metrics[f"{family}_min"] = min(values)
            metrics[f"{family}_max"] = max(values)
    starts, ends = _column(table, "start_s"), _column(table, "end_s")
    if starts and ends:
        metrics["duration_s"] = max(ends) - min(starts)
    return metrics


@register
class TrtllmRequestJsonParser(Parser):
    """trtllm-bench ``--request_json``: per-request records."""

    name = "trtllm-request-json"
    description = "trtllm-bench --request_json per-request records (ns timestamps → requests table)"
    versions = "TensorRT-LLM 0.17 – 1.x (older num_output_tokens / output_token_throughput keys too)"

    def detect(self, source: Source) -> bool:
        head = source.head_text.lstrip()
        return head.startswith("[") and '"start_timestamp"' in head and (
            '"first_token_timestamp"' in head or '"end_timestamp"' in head)

    def parse(self, source: Source) -> list[ParsedRun]:
        table = request_table(source.json(), source.path)
        metrics = request_metrics(table)
        record = RunRecord(
            run_id="", campaign="",
            software=Software(engine="trtllm"),
            workload=Workload(num_requests=len(table.rows)),
            metrics=dict(metrics),
            status=Status(ok=True),
        )
        return [ParsedRun(record=record, natural_id=f"trtllm-requests-{stable_id(source.sha256)}",
                          raw=[RawFile(source.path.name, source=source.path)], tables=[table])]


# -- --iteration_log --------------------------------------------------------------------------

def _flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            out.update(_flatten(item, f"{name}."))
        elif isinstance(item, list | tuple | set):
            out[name] = json.dumps(list(item), default=str)
        else:
            out[name] = item
    return out


def iteration_table(path: Path) -> Table:
    """The ``iterations`` table of an ``--iteration_log`` (streamed; one dict per line)."""
    columns: dict[str, None] = {}
    rows: list[dict[str, Any]] = []
    for number_, line in iter_lines(path):
        text = line.strip()
        if not text:
            continue
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise ParseError(path, "is not a Python-repr dict per line (trtllm-bench --iteration_log)",
                             line=number_, fix="ingest the iteration log unchanged") from None
        if not isinstance(value, dict):
            raise ParseError(path, f"line holds a {type(value).__name__}, expected a dict",
                             line=number_, fix="ingest the iteration log unchanged")
        flat = _flatten(value)
        for key in flat:
            columns.setdefault(key, None)
        rows.append(flat)
    if not rows:
        raise ParseError(path, "holds no iteration records", fix="ingest a non-empty iteration log")
    names = list(columns)
    return Table("iterations", names, [[row.get(name) for name in names] for row in rows],
                 description="per-iteration executor stats from trtllm-bench --iteration_log")


@register
class TrtllmIterationLogParser(Parser):
    """trtllm-bench ``--iteration_log``: one Python-repr dict per line."""

    name = "trtllm-iteration-log"
    description = "trtllm-bench --iteration_log (one Python-repr dict per line → iterations table)"
    versions = "TensorRT-LLM 0.17 – 1.x (record keys not pinned: every key becomes a column)"

    def detect(self, source: Source) -> bool:
        first = source.head_text.lstrip().split("\n", 1)[0].strip()
        if not (first.startswith("{") and first.endswith("}")):
            return False
        try:
            json.loads(first)
        except ValueError:
            return "'" in first and ": " in first
        return False

    def parse(self, source: Source) -> list[ParsedRun]:
        require_content(source.path)
        table = iteration_table(source.path)
        record = RunRecord(run_id="", campaign="", software=Software(engine="trtllm"),
                           status=Status(ok=True))
        record.workload.details["iterations"] = len(table.rows)
        return [ParsedRun(record=record, natural_id=f"trtllm-iterations-{stable_id(source.sha256)}",
                          raw=[RawFile(source.path.name, source=source.path)], tables=[table])]
