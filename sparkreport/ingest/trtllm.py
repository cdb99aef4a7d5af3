"""trtllm-bench text reports of every era (formats.md §1.2–1.3), with the runtime memory lines.

Eras read (report layout, see :func:`_layout`):

* ``0.12`` — ``= ENGINE DETAILS``, ``= WORLD + RUNTIME INFORMATION``, ``= STATISTICS`` with
  ``Token Throughput`` and ``Total Latency (seconds)`` (converted to ms);
* ``0.14-0.17`` — ``= PERFORMANCE OVERVIEW`` (+ ``= STREAMING STATISTICS``), ``= PyTorch backend``;
* ``0.19-0.20`` — ``= REQUEST DETAILS``, ``EP Size``, per-user/per-GPU ``tokens/sec/…`` labels,
  TPOT/TTFT breakdowns;
* ``0.21+`` — ``[w/ ctx] (tps/user)``, GTPS breakdown, ``[Latency]`` breakdown; 1.x adds
  ``TensorRT LLM Version`` (no hyphen) and, newest, ``= MACHINE DETAILS``.

Real pastes are damaged: tabs expanded to spaces, trailing spaces, banners with or without
their trailing space, logger prefixes (``[01/18/2025-01:01:42] [TRT-LLM] [I]``,
``[RANK 0]``), values ``None`` / ``N/A`` / ``90.00%`` / ``1.0526E+15``. A report cut off
mid-way keeps what it has; what is missing stays missing and the run gets a ``truncated``
warning. One log may hold several runs (each report becomes a run); the DATASET DETAILS
block printed before and after a run is read once. The file is streamed line by line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkreport.errors import ParseError
from sparkreport.ingest.base import ParsedRun, Parser, Source, register
from sparkreport.ingest.memory_log import MemoryFacts
from sparkreport.ingest.nvidia_smi import log_runs, sample_companions
from sparkreport.ingest.text import (
    CUT_VALUE,
    NotANumber,
    normalise_label,
    report_lines,
    require_content,
    scaled,
    to_number,
)
from sparkreport.schema import Hardware, Model, RunRecord, Software, Status, Workload

TRUNCATED = "truncated"

_BANNER = re.compile(r"^=\s*(?P<name>[A-Za-z_][^=]*?)\s*$")
_RULE = re.compile(r"^[=\-\s]*$")
_LABEL_LINE = re.compile(r"^(?P<label>[A-Za-z][^:]*?)\s*:\s*(?P<value>.*)$")
_BREAKDOWN = re.compile(
    r"^\[(?P<family>TPOT|TTFT|GTPS|Latency|DT|ADT|DAR|AL)\]\s*(?P<key>MINIMUM|MAXIMUM|AVERAGE|P\d+)"
    r"\s*:\s*(?P<value>.*)$", re.IGNORECASE)
_DATASET_ROW = re.compile(r"^(?P<stat>MIN|MAX|AVG|P\d+)\s*:\s*(?P<values>.*)$")
_MACHINE = re.compile(r"^(?P<name>.+?), memory (?P<memory>\S+) GB, (?P<clock>\S+) GHz$")

#: Section → rank in report order: a banner whose rank is not above the current one starts a
#: new run.
_RANK = {"header": 0, "machine": 1, "request": 2, "world": 3, "performance": 4, "streaming": 5,
         "decoding": 6}
_FAMILIES = {"tpot": "tpot_ms", "ttft": "ttft_ms", "gtps": "gtps_tok_s", "latency": "latency_ms"}
_DECODING = {"dt": "num_draft_tokens", "adt": "num_accepted_draft_tokens",
             "dar": "draft_acceptance_rate", "al": "acceptance_length"}
_STATS = {"minimum": "min", "maximum": "max", "average": "mean"}
#: keys of a complete breakdown: min, max, avg, p50, p95, p99 (+ p90 in newer versions).
_BREAKDOWN_KEYS = 6

#: label → (canonical metric, factor to its unit)
_NUMERIC: dict[str, tuple[str, float]] = {
    "number of requests": ("num_requests", 1.0),
    "average input length (tokens)": ("avg_input_len", 1.0),
    "average output length (tokens)": ("avg_output_len", 1.0),
    "tp size": ("tp_size", 1.0),
    "pp size": ("pp_size", 1.0),
    "ep size": ("ep_size", 1.0),
    "max runtime batch size": ("max_batch_size", 1.0),
    "max runtime tokens": ("max_num_tokens", 1.0),
    "request throughput (req/sec)": ("request_throughput_req_s", 1.0),
    "token throughput (tokens/sec)": ("output_throughput_tok_s", 1.0),
    "total output throughput (tokens/sec)": ("output_throughput_tok_s", 1.0),
    "total token throughput (tokens/sec)": ("total_token_throughput_tok_s", 1.0),
    "total latency (ms)": ("total_latency_ms", 1.0),
    "total latency (seconds)": ("total_latency_ms", 1000.0),
    "average request latency (ms)": ("latency_ms_mean", 1.0),
    "per user output throughput [w/ ctx] (tps/user)": ("per_user_output_throughput_tok_s", 1.0),
    "per user output throughput (tokens/sec/user)": ("per_user_output_throughput_tok_s", 1.0),
    "per gpu output throughput (tps/gpu)": ("per_gpu_output_throughput_tok_s", 1.0),
    "per gpu output throughput (tokens/sec/gpu)": ("per_gpu_output_throughput_tok_s", 1.0),
    "average time-to-first-token [ttft] (ms)": ("ttft_ms_mean", 1.0),
    "average time-to-first-token (ms)": ("ttft_ms_mean", 1.0),
    "average time-per-output-token [tpot] (ms)": ("tpot_ms_mean", 1.0),
    "average inter-token latency (ms)": ("itl_ms_mean", 1.0),
    "per user output speed (tps/user)": ("gtps_tok_s_mean", 1.0),
    "per user output speed [1/tpot] (tokens/sec/user)": ("gtps_tok_s_mean", 1.0),
}
#: label → (record part, key) for numbers that are context, not canonical metrics.
_DETAIL_NUMBERS: dict[str, tuple[str, str]] = {
    "number of concurrent requests": ("workload", "avg_concurrent_requests"),
    "issue rate (req/sec)": ("workload", "issue_rate_req_s"),
    "max input length": ("workload", "max_input_len"),
    "max sequence length": ("workload", "max_seq_len"),
}
#: label → (record part, key) for text fields.
_TEXT: dict[str, tuple[str, str]] = {
    "model": ("model", "id"),
    "model path": ("model", "path"),
    "engine directory": ("software", "engine_dir"),
    "tensorrt llm version": ("software", "version"),
    "tensorrt-llm version": ("software", "version"),
    "revision": ("software", "revision"),
    "dtype": ("software", "dtype"),
    "kv cache dtype": ("software", "kv_cache_dtype"),
    "quantization": ("software", "quantization"),
    "scheduling policy": ("workload", "scheduling_policy"),
}


def _section(name: str) -> str | None:
    upper = name.upper()
    if upper.endswith("BACKEND") or upper == "ENGINE DETAILS":
        return "header"
    if upper.startswith("DECODING STATISTICS"):
        return "decoding"
    return {
        "MACHINE DETAILS": "machine", "REQUEST DETAILS": "request",
        "WORLD + RUNTIME INFORMATION": "world", "PERFORMANCE OVERVIEW": "performance",
        "STATISTICS": "performance", "STREAMING STATISTICS": "streaming", "DATASET DETAILS": "dataset",
    }.get(upper)


def _backend(name: str) -> str:
    upper = name.upper()
    if upper == "ENGINE DETAILS":
        return "tensorrt"
    return upper.rsplit(" ", 1)[0].strip().lower()


@dataclass
class TrtllmReport:
    """One run as read from a trtllm-bench log (report text + its memory lines)."""

    metrics: dict[str, float] = field(default_factory=dict)
    version: str | None = None
    model: str | None = None
    backend: str | None = None
    saw_performance: bool = False
    layout: str | None = None
    sections: list[str] = field(default_factory=list)
    parts: dict[str, dict[str, Any]] = field(default_factory=lambda: {
        "model": {}, "software": {}, "workload": {}, "hardware": {}})
    gpu_name: str | None = None
    memory_pool_gib: float | None = None
    warnings: list[str] = field(default_factory=list)
    truncation: list[str] = field(default_factory=list)
    labels: set[str] = field(default_factory=set)
    breakdowns: dict[str, int] = field(default_factory=dict)
    memory: MemoryFacts = field(default_factory=MemoryFacts)
    dataset: dict[str, Any] | None = None
    first_line: int = 0
    last_line: int = 0
    rank: int = -1
    closed: bool = False

    @property
    def truncated(self) -> bool:
        return bool(self.truncation)


class _Reader:
    """The streaming state machine: lines in, :class:`TrtllmReport` objects out."""

    def __init__(self, path: Path):
        self.path = path
        self.runs: list[TrtllmReport] = []
        self.current: TrtllmReport | None = None
        self.pending_memory = MemoryFacts()
        self.pending_dataset: dict[str, Any] | None = None
        self.dataset: dict[str, Any] | None = None
        self.section: str | None = None
        self.family: str | None = None
        self.bad: tuple[int, str] | None = None
        self.last_line = 0

    # -- driving -----------------------------------------------------------------------------
    def read(self) -> list[TrtllmReport]:
        cut: list[int] = []
        for number, line in report_lines(self.path, lambda: self.bad,
                                         lambda line: bool(_BREAKDOWN.match(line) or _LABEL_LINE.match(line)), cut):
            self.last_line = number
            self._line(line, number)
        self._finish_run()
        if cut:
            self._truncate_last(CUT_VALUE.format(line=cut[0]))
        if self.bad is not None:
            self._truncate_last(f"the last value is cut off (line {self.bad[0]})")
        if self.pending_memory and (self.pending_memory.metrics or not self.runs):
            orphan = TrtllmReport(memory=self.pending_memory, first_line=self.last_line)
            orphan.truncation.append("no report after the runtime memory lines (the run crashed, "
                                     "ran out of memory, or the log is cut off)")
            self._finalise(orphan)
            self.runs.append(orphan)
        return self.runs

    def _truncate_last(self, reason: str) -> None:
        if self.runs:
            run = self.runs[-1]
            run.truncation.append(reason)
            run.warnings[:] = [w for w in run.warnings if not w.startswith(TRUNCATED)]
            run.warnings.append(f"{TRUNCATED}: " + "; ".join(run.truncation))

    def _line(self, line: str, number: int) -> None:
        if banner := _BANNER.match(line):
            self._banner(banner["name"], number)
            return
        if _RULE.match(line):
            return
        if self.pending_memory.feed(line):
            return
        run = self.current
        if line.startswith("--"):
            self.family = _breakdown_family(line)
            if run is not None and not run.closed and self.family in _FAMILIES:
                run.breakdowns.setdefault(self.family, 0)
            return
        if self.section == "dataset" and self.dataset is not None:
            self._dataset_line(line, number)
            return
        if run is None or run.closed:
            return
        run.last_line = number
        if match := _BREAKDOWN.match(line):
            self._breakdown(run, match, number)
        elif self.section == "machine" and (match := _MACHINE.match(line)):
            self._machine(run, match, number)
        elif match := _LABEL_LINE.match(line):
            self._label(run, normalise_label(match["label"]), match["value"].strip(), number)

    # -- sections ----------------------------------------------------------------------------
    def _banner(self, name: str, number: int) -> None:
        section = _section(name)
        if section is None:
            return
        self.family = None
        self.section = section
        run = self.current
        if section == "dataset":
            if run is not None and not run.closed and run.saw_performance:
                run.closed = True
                # The block printed after the run repeats the one printed before it: merge, not add.
                run.dataset = self.dataset = run.dataset if run.dataset is not None else {}
            else:
                self.pending_dataset = self.dataset = {}
            return
        self.dataset = None
        rank = _RANK[section]
        if run is None or run.closed or rank <= run.rank:
            run = self._start_run(number)
        run.rank = rank
        run.sections.append(section)
        run.last_line = number
        if section == "header":
            run.backend = _backend(name)
        elif section == "performance":
            run.saw_performance = True
            if name.strip().upper() == "STATISTICS":
                run.layout = "0.12"
        elif section == "decoding":
            mode = re.search(r"\((.*)\)", name)
            run.parts["software"].setdefault("speculative_decoding", {})["mode"] = (
                mode[1] if mode else None)

    def _start_run(self, number: int) -> TrtllmReport:
        self._finish_run()
        run = TrtllmReport(memory=self.pending_memory, first_line=number, last_line=number)
        run.dataset = self.pending_dataset
        self.pending_memory = MemoryFacts()
        self.pending_dataset = None
        self.current = run
        return run

    def _finish_run(self) -> None:
        run = self.current
        if run is None:
            return
        self.current = None
        _check_complete(run)
        self._finalise(run)
        self.runs.append(run)

    @staticmethod
    def _finalise(run: TrtllmReport) -> None:
        run.layout = run.layout or _layout(run)
        workload = run.parts["workload"]
        run.memory.merge_into(run.metrics, run.parts["hardware"])
        if run.memory_pool_gib is not None:
            run.metrics.setdefault("memory_total_gib", run.memory_pool_gib)
        if run.dataset:
            workload["dataset"] = run.dataset
        if run.truncation:
            run.warnings.append(f"{TRUNCATED}: " + "; ".join(run.truncation))

    # -- line kinds ----------------------------------------------------------------------------
    def _number(self, label: str, value: str, number: int) -> float | None:
        try:
            return to_number(value)
        except NotANumber:
            self.bad = (number, f"{label!r} should be a number, found {value!r}")
            return None

    def _label(self, run: TrtllmReport, label: str, value: str, number: int) -> None:
        label = label.replace("tensorrt-llm", "tensorrt llm")
        known = label in _NUMERIC or label in _DETAIL_NUMBERS or label in _TEXT \
            or label == "kv memory percentage"
        if not known:
            return
        run.labels.add(label)
        if value == "":
            run.truncation.append(f"{label!r} has no value (line {number})")
            return
        if label in _TEXT:
            part, key = _TEXT[label]
            if value.lower() in {"none", "n/a"}:
                return
            if (part, key) == ("model", "id"):
                run.model = run.model or value
            elif (part, key) == ("software", "version"):
                run.version = value
            else:
                run.parts[part][key] = value
            return
        parsed = self._number(label, value, number)
        if parsed is None:
            return
        if label == "kv memory percentage":
            run.metrics["kv_cache_fraction"] = parsed / 100.0 if "%" in value or parsed > 1 else parsed
        elif label in _NUMERIC:
            metric, factor = _NUMERIC[label]
            run.metrics[metric] = scaled(parsed, factor)
        else:
            part, key = _DETAIL_NUMBERS[label]
            run.parts[part][key] = parsed

    def _breakdown(self, run: TrtllmReport, match: re.Match[str], number: int) -> None:
        family = match["family"].lower()
        key = match["key"].lower()
        stat = _STATS.get(key, key)
        raw = match["value"].strip()
        if raw == "":
            run.truncation.append(f"[{match['family']}] {match['key']} has no value (line {number})")
            return
        value = self._number(f"[{match['family']}] {match['key']}", raw, number)
        if family in _FAMILIES:
            run.breakdowns[family] = run.breakdowns.get(family, 0) + 1
            if value is not None:
                run.metrics[f"{_FAMILIES[family]}_{stat}"] = value
        elif value is not None:
            decoding = run.parts["software"].setdefault("speculative_decoding", {})
            decoding.setdefault(_DECODING[family], {})[stat] = value

    def _machine(self, run: TrtllmReport, match: re.Match[str], number: int) -> None:
        hardware = run.parts["hardware"]
        hardware["gpus"] = hardware.get("gpus", 0) + 1
        if run.gpu_name is not None:
            return
        run.gpu_name = match["name"].strip()
        run.memory_pool_gib = self._number("MACHINE DETAILS memory", match["memory"], number)
        hardware["machine_memory_label"] = (
            "printed as 'GB' but the value is GiB (torch total_memory / 1024**3)")
        clock = self._number("MACHINE DETAILS clock", match["clock"], number)
        if clock is not None:
            hardware["memory_clock_ghz"] = clock

    def _dataset_line(self, line: str, number: int) -> None:
        dataset = self.dataset
        assert dataset is not None
        if match := _DATASET_ROW.match(line):
            stat = {"avg": "mean"}.get(match["stat"].lower(), match["stat"].lower())
            values = match["values"].split()
            for column, raw in zip(("isl", "osl", "seq_len"), values, strict=False):
                parsed = self._number(f"DATASET {match['stat']}", raw, number)
                if parsed is not None:
                    dataset.setdefault(column, {})[stat] = parsed
            return
        if match := _LABEL_LINE.match(line):
            label = normalise_label(match["label"])
            value = match["value"].strip()
            if label == "dataset path" and value:
                dataset["path"] = value
            elif label == "number of sequences" and value:
                parsed = self._number("Number of Sequences", value, number)
                if parsed is not None:
                    dataset["num_sequences"] = int(parsed)


def _breakdown_family(line: str) -> str | None:
    upper = line.upper()
    for tag in ("TPOT", "TTFT", "GTPS"):
        if f"[{tag}]" in upper:
            return tag.lower()
    if "REQUEST LATENCY" in upper:
        return "latency"
    return None


def _layout(run: TrtllmReport) -> str | None:
    """Which era's report layout this run has (None when there is no report)."""
    labels = run.labels
    if "total latency (seconds)" in labels:
        return "0.12"
    if "machine" in run.sections:
        return "1.x-machine"
    if "per user output throughput [w/ ctx] (tps/user)" in labels or "gtps" in run.breakdowns:
        return "0.21+"
    if "request" in run.sections or "per user output throughput (tokens/sec/user)" in labels:
        return "0.19-0.20"
    if run.saw_performance or run.sections:
        return "0.14-0.17"
    return None


_REQUIRED_SINCE_0_19 = (
    {"per user output throughput [w/ ctx] (tps/user)", "per user output throughput (tokens/sec/user)"},
    {"per gpu output throughput (tps/gpu)", "per gpu output throughput (tokens/sec/gpu)"},
    {"average request latency (ms)"},
)


def _check_complete(run: TrtllmReport) -> None:
    """Note why a report looks cut off (each era prints a known set of lines)."""
    if not run.saw_performance:
        run.truncation.append("the report stops before PERFORMANCE OVERVIEW")
        return
    if not run.labels & {"total latency (ms)", "total latency (seconds)"}:
        run.truncation.append("PERFORMANCE OVERVIEW is incomplete (no Total Latency)")
    layout = _layout(run)
    if "request" in run.sections:  # 0.19+: PERFORMANCE OVERVIEW always ends with these lines
        for group in _REQUIRED_SINCE_0_19:
            if not run.labels & group:
                run.truncation.append(f"PERFORMANCE OVERVIEW is incomplete (no {sorted(group)[0]!r})")
                break
    for family, count in run.breakdowns.items():
        if count < _BREAKDOWN_KEYS:
            run.truncation.append(f"the {family.upper()} breakdown is incomplete ({count} values)")
    streaming = "average time-to-first-token [ttft] (ms)" in run.labels
    if layout in {"0.19-0.20", "0.21+", "1.x-machine"} and streaming and "tpot" not in run.breakdowns:
        run.truncation.append("the report stops before the TPOT breakdown")
    if layout in {"0.21+", "1.x-machine"} and "latency" not in run.breakdowns:
        run.truncation.append("the report stops before the request latency breakdown")


def read_reports(path: Path) -> list[TrtllmReport]:
    """Every run in a trtllm-bench log (streamed; bounded memory)."""
    return _Reader(path).read()


def read_report(path: Path) -> TrtllmReport:
    """The last run of a trtllm-bench log (used by the Phase 1 pair parser); an empty report
    when the log holds neither a report nor memory lines."""
    runs = read_reports(path)
    return runs[-1] if runs else TrtllmReport()


def to_record(report: TrtllmReport) -> RunRecord:
    """A run record from one report (campaign, id and provenance are the ingest's)."""
    metrics = dict(report.metrics)
    parts = report.parts
    model_details = dict(parts["model"])
    software_details = dict(parts["software"])
    if report.layout:
        software_details["report_layout"] = report.layout
    num_requests = metrics.get("num_requests")
    return RunRecord(
        run_id="", campaign="",
        model=Model(id=report.model, name=(report.model or "unknown").rstrip("/").split("/")[-1],
                    display_name=None),
        software=Software(engine="trtllm", engine_version=report.version, backend=report.backend,
                          details=software_details),
        workload=Workload(
            num_requests=None if num_requests is None else int(num_requests),
            input_len=metrics.get("avg_input_len"),
            output_len=metrics.get("avg_output_len"),
            kv_cache_fraction=metrics.get("kv_cache_fraction"),
            details=dict(parts["workload"], **({"model": model_details} if model_details else {})),
        ),
        hardware=Hardware(gpu_name=report.gpu_name, memory_pool_gib=report.memory_pool_gib,
                          details=dict(parts["hardware"])),
        metrics={name: value for name, value in metrics.items()},
        status=Status(ok=True, warnings=list(report.warnings)),
    )


_DETECT = ("= PERFORMANCE OVERVIEW", "= STATISTICS", "= PYTORCH BACKEND", "= ENGINE DETAILS",
           "= REQUEST DETAILS", "= WORLD + RUNTIME INFORMATION", "= PyTorch backend",
           "= _AUTODEPLOY BACKEND", "[MemUsageChange]", "Peak memory during memory usage profiling",
           "Memory usage when calculating max tokens", "[TRT-LLM]", "[TensorRT-LLM]")


@register
class TrtllmLogParser(Parser):
    """A trtllm-bench log: its report(s) and the TensorRT-LLM runtime memory lines."""

    name = "trtllm-log"
    description = ("trtllm-bench text report / TensorRT-LLM runtime log (report sections, "
                   "breakdowns, memory lines; several runs per log)")
    versions = ("TensorRT-LLM 0.12–0.13 (STATISTICS, seconds), 0.14–0.17, 0.19–0.20, 0.21, "
                "1.x with/without MACHINE DETAILS; memory lines C++ and PyTorch backend")

    def detect(self, source: Source) -> bool:
        head = source.head_text
        return any(marker in head for marker in _DETECT)

    def companions(self, source: Source) -> list[Path]:
        return sample_companions(source.path)

    def parse(self, source: Source) -> list[ParsedRun]:
        require_content(source.path)
        reports = read_reports(source.path)
        if not reports:
            raise ParseError(source.path, "no trtllm-bench report or TensorRT-LLM memory lines found",
                             fix="ingest the full log of a run")
        return log_runs(source, "trtllm", reports, to_record)
