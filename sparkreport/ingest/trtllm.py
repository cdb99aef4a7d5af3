"""A basic trtllm-bench text-report parser: the PERFORMANCE OVERVIEW block and the runtime
memory lines (KV cache allocation, peak memory during profiling).

Tolerates logger prefixes, tabs expanded to spaces and trailing spaces. A field the report
does not print stays missing. Streams the file line by line (bounded memory).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sparkreport.errors import ParseError
from sparkreport.ingest.base import ParsedRun, Parser, Source, register, stable_id
from sparkreport.schema import Hardware, Model, RunRecord, Software, Status, Workload

_PREFIX = re.compile(r"^(?:\[[^\]]*\]\s*)*")
_LABELS: dict[str, tuple[str, float]] = {
    "request throughput (req/sec)": ("request_throughput_req_s", 1.0),
    "total output throughput (tokens/sec)": ("output_throughput_tok_s", 1.0),
    "token throughput (tokens/sec)": ("output_throughput_tok_s", 1.0),
    "total token throughput (tokens/sec)": ("total_token_throughput_tok_s", 1.0),
    "total latency (ms)": ("total_latency_ms", 1.0),
    "total latency (seconds)": ("total_latency_ms", 1000.0),
    "average request latency (ms)": ("latency_ms_mean", 1.0),
    "per user output throughput [w/ ctx] (tps/user)": ("per_user_output_throughput_tok_s", 1.0),
    "per gpu output throughput (tps/gpu)": ("per_gpu_output_throughput_tok_s", 1.0),
    "number of requests": ("num_requests", 1.0),
    "average input length (tokens)": ("avg_input_len", 1.0),
    "average output length (tokens)": ("avg_output_len", 1.0),
    "tp size": ("tp_size", 1.0),
    "pp size": ("pp_size", 1.0),
    "max runtime batch size": ("max_batch_size", 1.0),
    "max runtime tokens": ("max_num_tokens", 1.0),
    "average time-to-first-token [ttft] (ms)": ("ttft_ms_mean", 1.0),
    "average time-per-output-token [tpot] (ms)": ("tpot_ms_mean", 1.0),
}
_LABEL_LINE = re.compile(r"^(?P<label>[A-Za-z][^:]*?):\s+(?P<value>\S+)\s*$")
_KV_ALLOC = re.compile(
    r"\[MemUsageChange\] Allocated (?P<gib>[\d.]+) GiB for max tokens in paged KV cache \((?P<tokens>\d+)\)"
)
_PEAK = re.compile(
    r"Peak memory during memory usage profiling \(torch \+ non-torch\): (?P<peak>[\d.]+) GiB"
    r"(?:, available KV cache memory when calculating max tokens: (?P<avail>[\d.]+) GiB)?"
    r"(?:, fraction is set (?P<fraction>[\d.]+))?"
    r"(?:.*?device total memory (?P<total>[\d.]+) GiB)?"
)
_CPP_TOTALS = re.compile(
    r"Memory usage when calculating max tokens in paged kv cache: total: (?P<total>[\d.]+) GiB, "
    r"available: (?P<avail>[\d.]+) GiB"
)
_VERSION = re.compile(r"^TensorRT[- ]LLM Version:\s+(?P<version>\S+)")
_MODEL = re.compile(r"^Model:\s+(?P<model>\S+)")
_KV_PCT = re.compile(r"^KV Memory Percentage:\s+(?P<pct>[\d.]+)%")
_BANNER = re.compile(r"^=\s+(?P<name>[A-Z][A-Z +/()_-]*?)\s*$")


@dataclass
class TrtllmReport:
    """What the basic parser found in one log."""

    metrics: dict[str, float] = field(default_factory=dict)
    version: str | None = None
    model: str | None = None
    backend: str | None = None
    saw_performance: bool = False


def _to_float(raw: str) -> float | None:
    raw = raw.strip().rstrip("%")
    if raw in {"None", "N/A", ""}:
        return None
    try:
        return float(raw)
    except ValueError:
        return None


def read_report(path: Path) -> TrtllmReport:
    """Read the basic fields of a trtllm-bench log (any number of lines, streamed)."""
    report = TrtllmReport()
    try:
        with path.open("r", encoding="utf-8") as handle:
            for raw_line in handle:
                _read_line(_PREFIX.sub("", raw_line.rstrip("\n")).rstrip(), report)
    except UnicodeDecodeError:
        raise ParseError(path, "is not UTF-8 text", fix="ingest the original log") from None
    return report


def _read_line(line: str, report: TrtllmReport) -> None:
    if banner := _BANNER.match(line):
        name = banner["name"]
        if name in {"PERFORMANCE OVERVIEW", "STATISTICS"}:
            report.saw_performance = True
        elif name.endswith("BACKEND") or name == "ENGINE DETAILS":
            report.backend = "tensorrt" if name == "ENGINE DETAILS" else name.split()[0].lower()
        return
    if match := _KV_ALLOC.search(line):
        report.metrics["kv_cache_gib"] = float(match["gib"])
        report.metrics["kv_cache_max_tokens"] = float(match["tokens"])
        return
    if match := _PEAK.search(line):
        report.metrics["peak_memory_gib"] = float(match["peak"])
        for key, metric in (("avail", "memory_available_gib"), ("total", "memory_total_gib"),
                            ("fraction", "kv_cache_fraction")):
            if match[key]:
                report.metrics[metric] = float(match[key])
        return
    if match := _CPP_TOTALS.search(line):
        report.metrics["memory_total_gib"] = float(match["total"])
        report.metrics["memory_available_gib"] = float(match["avail"])
        return
    if match := _VERSION.match(line):
        report.version = match["version"]
        return
    if match := _MODEL.match(line):
        report.model = report.model or match["model"]
        return
    if match := _KV_PCT.match(line):
        report.metrics["kv_cache_fraction"] = float(match["pct"]) / 100.0
        return
    if match := _LABEL_LINE.match(line):
        key = re.sub(r"\s+", " ", match["label"].strip().lower())
        if key in _LABELS:
            metric, scale = _LABELS[key]
            value = _to_float(match["value"])
            if value is not None:
                report.metrics[metric] = value * scale


@register
class TrtllmLogParser(Parser):
    """A trtllm-bench log on its own (no metadata file beside it)."""

    name = "trtllm-log"
    description = "trtllm-bench text report / runtime log (basic: PERFORMANCE OVERVIEW + memory lines)"
    versions = "TensorRT-LLM 0.12 – 1.x (report fields common to all eras)"

    def detect(self, source: Source) -> bool:
        head = source.head_text
        return (
            "PERFORMANCE OVERVIEW" in head
            or "[MemUsageChange] Allocated" in head
            or "Peak memory during memory usage profiling" in head
            or ("= STATISTICS" in head and "Token Throughput" in head)
        )

    def parse(self, source: Source) -> list[ParsedRun]:
        report = read_report(source.path)
        if not report.metrics:
            raise ParseError(source.path, "no trtllm-bench figures found",
                             fix="ingest the full log of a finished run")
        warnings = [] if report.saw_performance else ["no PERFORMANCE OVERVIEW block: report missing or cut off"]
        record = RunRecord(
            run_id="", campaign="",
            model=Model(id=report.model, name=(report.model or "unknown").split("/")[-1]),
            software=Software(engine="trtllm", engine_version=report.version, backend=report.backend),
            workload=Workload(
                num_requests=_maybe_int(report.metrics.get("num_requests")),
                input_len=report.metrics.get("avg_input_len"),
                output_len=report.metrics.get("avg_output_len"),
                kv_cache_fraction=report.metrics.get("kv_cache_fraction"),
            ),
            hardware=Hardware(),
            metrics=dict(report.metrics),
            status=Status(ok=True, warnings=warnings),
        )
        return [ParsedRun(record=record, natural_id=f"trtllm-{stable_id(source.sha256)}",
                          raw=_verbatim(source))]


def _maybe_int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _verbatim(source: Source) -> list:  # type: ignore[type-arg]
    from sparkreport.store import RawFile

    return [RawFile(name=source.path.name, source=source.path)]
