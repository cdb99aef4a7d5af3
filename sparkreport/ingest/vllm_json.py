"""vLLM benchmark JSON files (formats.md §4.2–4.4).

* ``vllm bench serve --save-result`` (and ``benchmark_serving.py``): new and old keys — the old
  ``"request_goodput:"`` (with the colon), ``request_rate`` as the string ``"inf"``,
  ``--append-result`` files holding several JSON objects one after the other (each a run),
  per-request lists (``ttfts`` and ``itls`` in seconds) → a ``requests`` table;
* ``vllm bench throughput --output-json``: ``elapsed_time``, ``requests_per_second``,
  ``tokens_per_second`` (prompt + output);
* ``vllm bench latency --output-json``: ``avg_latency`` and ``percentiles`` in seconds,
  ``latencies`` → a ``latencies`` table.

The sibling ``*.pytorch.json`` (PyTorch benchmark format) is claimed as a companion and kept
with the run, not ingested on its own.
"""

from __future__ import annotations

import datetime as dt
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
from sparkreport.ingest.text import iter_json_objects, scaled
from sparkreport.ingest.vllm import percentile_stat, requests_asked
from sparkreport.schema import Model, RunRecord, Software, Status, Workload
from sparkreport.store import RawFile

_FIX = "ingest the JSON file vLLM wrote, unchanged"
_STAT_KEY = re.compile(r"^(?P<stat>mean|median|std|p(?P<p>\d+(?:\.\d+)?))_(?P<family>ttft|tpot|itl|e2el)_ms$")
_FAMILIES = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "e2el_ms"}
_SERVE_METRICS = {
    "duration": "duration_s", "completed": "num_requests", "failed": "failed_requests",
    "total_input_tokens": "total_input_tokens", "total_output_tokens": "total_output_tokens",
    "request_throughput": "request_throughput_req_s", "output_throughput": "output_throughput_tok_s",
    "total_token_throughput": "total_token_throughput_tok_s", "max_concurrency": "max_concurrency",
}
_SERVE_DETAILS = {
    "request_goodput": "goodput_req_s", "request_goodput:": "goodput_req_s",
    "max_output_tokens_per_s": "peak_output_throughput_tok_s",
    "max_concurrent_requests": "peak_concurrent_requests", "burstiness": "burstiness",
    "num_prompts": "num_prompts", "ramp_up_start_rps": "ramp_up_start_rps",
    "ramp_up_end_rps": "ramp_up_end_rps",
}
_SERVE_TEXT = ("endpoint_type", "label", "tokenizer_id", "ramp_up_strategy")
_LISTS = ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors", "rps_change_events")
REQUEST_COLUMNS = ["request_index", "input_tokens", "output_tokens", "ttft_ms", "itl_ms_mean",
                   "itl_count", "error"]


def kind_of(obj: dict[str, Any]) -> str | None:
    """Which vLLM benchmark wrote this object: serve, throughput, latency (None: not vLLM)."""
    if "requests_per_second" in obj and "elapsed_time" in obj:
        return "throughput"
    if "avg_latency" in obj:
        return "latency"
    if "request_throughput" in obj and ("duration" in obj or "completed" in obj):
        return "serve"
    return None


def _date(value: Any, path: Path) -> str | None:
    text = text_field(value, path, "date")
    if text is None:
        return None
    try:
        return dt.datetime.strptime(text, "%Y%m%d-%H%M%S").isoformat()
    except ValueError:
        return None


def _list(obj: dict[str, Any], key: str, path: Path, where: str) -> list[Any] | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise ParseError(path, f"{where}.{key} should be a list", fix=_FIX)
    return value


def _requests(obj: dict[str, Any], path: Path, where: str) -> Table | None:
    inputs = _list(obj, "input_lens", path, where)
    outputs = _list(obj, "output_lens", path, where)
    ttfts = _list(obj, "ttfts", path, where)
    itls = _list(obj, "itls", path, where)
    errors = _list(obj, "errors", path, where)
    present = [x for x in (inputs, outputs, ttfts, itls, errors) if x is not None]
    if not present:
        return None
    count = max(len(x) for x in present)
    table = Table("requests", list(REQUEST_COLUMNS),
                  description="per-request lists of vLLM --save-result (ttft/itl converted s → ms)")

    def at(values: list[Any] | None, index: int, key: str) -> Any:
        return values[index] if values is not None and index < len(values) else None

    for i in range(count):
        ttft = number(at(ttfts, i, "ttfts"), path, f"{where}.ttfts[{i}]")
        itl = at(itls, i, "itls")
        itl_values: list[float] = []
        if itl is not None:
            if not isinstance(itl, list):
                raise ParseError(path, f"{where}.itls[{i}] should be a list of seconds", fix=_FIX)
            for j, value in enumerate(itl):
                parsed = number(value, path, f"{where}.itls[{i}][{j}]")
                if parsed is not None:
                    itl_values.append(parsed)
        error = at(errors, i, "errors")
        table.rows.append([
            i, number(at(inputs, i, "input_lens"), path, f"{where}.input_lens[{i}]"),
            number(at(outputs, i, "output_lens"), path, f"{where}.output_lens[{i}]"),
            None if ttft is None else scaled(ttft, 1000.0),
            sum(itl_values) / len(itl_values) * 1000.0 if itl_values else None,
            len(itl_values) if itl is not None else None,
            error if error else None,
        ])
    return table


def serve_record(obj: dict[str, Any], path: Path, where: str) -> tuple[RunRecord, list[Table]]:
    """A run record (and its requests table) from one ``--save-result`` object."""
    metrics: dict[str, float] = {}
    details: dict[str, Any] = {}
    for key, value in obj.items():
        if key in _SERVE_METRICS:
            parsed = number(value, path, f"{where}.{key}")
            if parsed is not None:
                metrics[_SERVE_METRICS[key]] = parsed
        elif key in _SERVE_DETAILS:
            parsed = number(value, path, f"{where}.{key}")
            if parsed is not None:
                details[_SERVE_DETAILS[key]] = parsed
            if key == "request_goodput:":
                details["goodput_key_as_printed"] = key
        elif match := _STAT_KEY.match(key):
            parsed = number(value, path, f"{where}.{key}")
            if parsed is None:
                continue
            family = _FAMILIES[match["family"]]
            stat = match["stat"]
            if stat == "std":
                details[f"{family}_std"] = parsed
                continue
            stat = "p50" if stat == "median" else ("mean" if stat == "mean" else percentile_stat(match["p"]))
            metrics[f"{family}_{stat}"] = parsed
        elif key in _SERVE_TEXT and value is not None:
            details[key] = str(value)
        elif key not in _LISTS and key not in {"date", "backend", "model_id", "request_rate"} and \
                isinstance(value, str | int | float | bool):
            details.setdefault("metadata", {})[key] = value
    rate = obj.get("request_rate")
    if isinstance(rate, str):
        if rate.strip().lower() not in {"inf", "infinity"}:
            raise ParseError(path, f"{where}.request_rate should be a number or \"inf\", found {rate!r}",
                             fix=_FIX)
        details["request_rate"] = "inf"
    else:
        parsed_rate = number(rate, path, f"{where}.request_rate")
        if parsed_rate is not None:
            metrics["request_rate_req_s"] = parsed_rate
    model_id = text_field(obj.get("model_id"), path, f"{where}.model_id")
    backend = text_field(obj.get("backend"), path, f"{where}.backend")
    table = _requests(obj, path, where)
    concurrency = metrics.get("max_concurrency")
    record = RunRecord(
        run_id="", campaign="",
        started_at_local=_date(obj.get("date"), path),
        model=Model(id=model_id, name=(model_id or "unknown").rstrip("/").split("/")[-1]),
        software=Software(engine="vllm", backend=backend, details={"benchmark": "vllm bench serve"}),
        workload=Workload(num_requests=requests_asked(metrics, details),
                          concurrency=None if concurrency is None else int(concurrency),
                          details=details),
        metrics=dict(metrics),
        status=Status(ok=True),
    )
    return record, [table] if table is not None else []


def throughput_record(obj: dict[str, Any], path: Path, where: str) -> RunRecord:
    """A run record from ``vllm bench throughput --output-json``."""
    metrics: dict[str, float] = {}
    for key, metric in (("elapsed_time", "duration_s"), ("num_requests", "num_requests"),
                        ("requests_per_second", "request_throughput_req_s"),
                        ("tokens_per_second", "total_token_throughput_tok_s")):
        parsed = number(obj.get(key), path, f"{where}.{key}")
        if parsed is not None:
            metrics[metric] = parsed
    details: dict[str, Any] = {}
    total = number(obj.get("total_num_tokens"), path, f"{where}.total_num_tokens")
    if total is not None:
        details["total_num_tokens"] = total
    completed = metrics.get("num_requests")
    return RunRecord(
        run_id="", campaign="",
        software=Software(engine="vllm", details={"benchmark": "vllm bench throughput"}),
        workload=Workload(num_requests=None if completed is None else int(completed), details=details),
        metrics=dict(metrics), status=Status(ok=True),
    )


def latency_record(obj: dict[str, Any], path: Path, where: str) -> tuple[RunRecord, list[Table]]:
    """A run record from ``vllm bench latency --output-json`` (seconds → ms)."""
    metrics: dict[str, float] = {}
    avg = number(obj.get("avg_latency"), path, f"{where}.avg_latency")
    if avg is not None:
        metrics["latency_ms_mean"] = scaled(avg, 1000.0)
    pcts = obj.get("percentiles")
    if pcts is not None:
        if not isinstance(pcts, dict):
            raise ParseError(path, f"{where}.percentiles should be an object", fix=_FIX)
        for key, value in pcts.items():
            try:
                stat = percentile_stat(str(key))
            except ValueError:
                raise ParseError(path, f"{where}.percentiles key {key!r} is not a percentile",
                                 fix=_FIX) from None
            parsed = number(value, path, f"{where}.percentiles.{key}")
            if parsed is not None:
                metrics[f"latency_ms_{stat}"] = scaled(parsed, 1000.0)
    tables: list[Table] = []
    latencies = _list(obj, "latencies", path, where)
    if latencies is not None:
        table = Table("latencies", ["iteration", "latency_ms"],
                      description="per-iteration latencies of vllm bench latency (s → ms)")
        for i, value in enumerate(latencies):
            parsed = number(value, path, f"{where}.latencies[{i}]")
            table.rows.append([i, None if parsed is None else scaled(parsed, 1000.0)])
        tables.append(table)
    record = RunRecord(
        run_id="", campaign="",
        software=Software(engine="vllm", details={"benchmark": "vllm bench latency"}),
        metrics=dict(metrics), status=Status(ok=True),
    )
    if latencies is not None:
        record.workload.details["iterations"] = len(latencies)
    return record, tables


@register
class VllmJsonParser(Parser):
    """vLLM ``--save-result`` / ``--output-json`` files (one or several objects per file)."""

    name = "vllm-json"
    description = ("vLLM bench serve --save-result JSON (old and new keys, --append-result files), "
                   "bench throughput / bench latency --output-json")
    versions = "benchmark_serving.py (2024) – vllm bench (2026)"

    def detect(self, source: Source) -> bool:
        head = source.head_text.lstrip()
        return head.startswith("{") and any(key in head for key in (
            '"request_throughput"', '"requests_per_second"', '"avg_latency"'))

    def companions(self, source: Source) -> list[Path]:
        sibling = source.path.with_name(source.path.stem + ".pytorch.json")
        return [sibling] if sibling.exists() and sibling != source.path else []

    def parse(self, source: Source) -> list[ParsedRun]:
        path = source.path
        objects = list(iter_json_objects(path, source.text()))
        runs: list[ParsedRun] = []
        single = len(objects) == 1
        for index, (line, obj) in enumerate(objects):
            where = "object" if single else f"object {index + 1} (line {line})"
            if not isinstance(obj, dict):
                raise ParseError(path, f"{where} should be a JSON object", line=line, fix=_FIX)
            kind = kind_of(obj)
            tables: list[Table] = []
            if kind == "serve":
                record, tables = serve_record(obj, path, where)
            elif kind == "throughput":
                record = throughput_record(obj, path, where)
            elif kind == "latency":
                record, tables = latency_record(obj, path, where)
            else:
                raise ParseError(path, f"{where} is not a vLLM benchmark result", line=line,
                                 fix="expected request_throughput, requests_per_second or avg_latency")
            raw = [RawFile(path.name, source=path)] if single else []
            raw.extend(RawFile(c.name, source=c) for c in self.companions(source))
            runs.append(ParsedRun(
                record=record,
                natural_id=f"vllm-{stable_id(source.sha256) if single else stable_id(source.sha256, str(index))}",
                locator=None if single else f"object {index + 1} (line {line})",
                raw=raw, keep_source_once=not single, tables=tables,
            ))
        if not runs:
            raise ParseError(path, "holds no JSON object", fix=_FIX)
        return runs
