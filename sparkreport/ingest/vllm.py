"""vLLM benchmark text output (formats.md §4.1, §4.3, §4.4), streamed line by line.

One log may hold any number of:

* ``vllm bench serve`` / ``benchmark_serving.py`` result blocks
  (``==== Serving Benchmark Result ====`` … ``=====``): labels matched case-insensitively
  (``Total Token throughput`` became ``Total token throughput``), values left-justified with
  trailing padding, optional lines, one ``P<p>`` line per ``--metric-percentiles``
  (``P99.9`` → ``_p99_9``), the command line and ``Traffic request rate`` lines above it;
* ``vllm bench throughput`` lines (``Throughput: … requests/s, … total tokens/s, … output
  tokens/s``; before Sept 2024 only ``… tokens/s``, the total);
* ``vllm bench latency`` lines (``Avg latency: … seconds``, ``<p>% percentile latency``).

Each becomes a run. A result block cut off before its closing rule keeps what it has and
gets a ``truncated`` warning. SGLang's look-alike block (it has a ``Backend:`` line) is not
read as vLLM.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkreport.errors import ParseError
from sparkreport.ingest.base import ParsedRun, Parser, Source, register
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
from sparkreport.schema import Model, RunRecord, Software, Status, Workload

_NUM = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_BLOCK_START = re.compile(r"^=+\s*Serving Benchmark Result\s*=+$", re.IGNORECASE)
_BLOCK_END = re.compile(r"^=+$")
_SUBSECTION = re.compile(r"^-+[^-]*-+$")
_LABEL = re.compile(r"^(?P<label>[A-Za-z][^:]*?)\s*:\s*(?P<value>.*?)\s*$")
_PERCENTILE = re.compile(r"^(?P<stat>mean|median|std|p(?P<p>\d+(?:\.\d+)?))\s+"
                         r"(?P<family>ttft|tpot|itl|e2el)\s*\(ms\)$")
_THROUGHPUT = re.compile(rf"^Throughput:\s*(?P<req>{_NUM}) requests/s,\s*(?P<tok>{_NUM}) "
                         rf"(?P<total>total )?tokens/s(?:,\s*(?P<out>{_NUM}) output tokens/s)?")
_AVG_LATENCY = re.compile(rf"^Avg latency:\s*(?P<v>{_NUM}|nan|inf) seconds")
_PCT_LATENCY = re.compile(rf"^(?P<p>\d+(?:\.\d+)?)% percentile latency:\s*(?P<v>{_NUM}|nan|inf) seconds")
_COMMAND = re.compile(r"(?:^|\s|\$ )(?P<cmd>(?:vllm bench (?:serve|throughput|latency)|"
                      r"python3?\s+\S*benchmark_(?:serving|throughput|latency)\.py)\b.*)$")
_FAMILIES = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "e2el_ms"}

#: serve-block label → canonical metric
SERVE_METRICS: dict[str, str] = {
    "successful requests": "num_requests",
    "failed requests": "failed_requests",
    "maximum request concurrency": "max_concurrency",
    "request rate configured (rps)": "request_rate_req_s",
    "benchmark duration (s)": "duration_s",
    "total input tokens": "total_input_tokens",
    "total generated tokens": "total_output_tokens",
    "request throughput (req/s)": "request_throughput_req_s",
    "output token throughput (tok/s)": "output_throughput_tok_s",
    "total token throughput (tok/s)": "total_token_throughput_tok_s",
}
#: serve-block label → workload.details key (not canonical metrics)
SERVE_DETAILS: dict[str, str] = {
    "request goodput (req/s)": "goodput_req_s",
    "peak output token throughput (tok/s)": "peak_output_throughput_tok_s",
    "peak concurrent requests": "peak_concurrent_requests",
}


@dataclass
class VllmRun:
    """One vLLM result as read from text."""

    kind: str  # "serve" | "throughput" | "latency"
    metrics: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    backend: str | None = None
    warnings: list[str] = field(default_factory=list)
    first_line: int = 0
    last_line: int = 0
    open: bool = True


def percentile_stat(p: str) -> str:
    """``"99"`` → ``p99``, ``"99.9"`` → ``p99_9``, ``"50.0"`` → ``p50``."""
    value = float(p)
    return "p" + (str(int(value)) if value.is_integer() else repr(value).replace(".", "_"))


_NAMESPACE_ITEM = re.compile(r"\b(model|backend)='([^']*)'")


def _namespace_facts(line: str) -> dict[str, str]:
    """``model`` and ``backend`` from the ``Namespace(...)`` line old benchmark scripts print."""
    return dict(_NAMESPACE_ITEM.findall(line))


def _command_facts(command: str) -> dict[str, str]:
    """``--model X`` / ``--model=X`` style options of a benchmark command line."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    facts: dict[str, str] = {}
    for index, word in enumerate(words):
        if word.startswith("--"):
            key, eq, value = word[2:].partition("=")
            if not eq and index + 1 < len(words) and not words[index + 1].startswith("--"):
                value = words[index + 1]
            facts[key.replace("-", "_")] = value
    return facts


class _Reader:
    def __init__(self, path: Path):
        self.path = path
        self.runs: list[VllmRun] = []
        self.block: VllmRun | None = None
        self.context: dict[str, Any] = {}
        self.bad: tuple[int, str] | None = None
        self.sglang = False

    def read(self) -> list[VllmRun]:
        cut: list[int] = []
        for number, line in report_lines(self.path, lambda: self.bad,
                                         lambda line: self.block is not None and bool(_LABEL.match(line.strip())), cut):
            self._line(line.strip(), number)
        if self.block is not None:
            self.block.warnings.append("truncated: the result block has no closing rule"
                                       + (f"; {CUT_VALUE.format(line=cut[0])}" if cut else ""))
            self._close()
        if self.bad is not None and self.runs:
            self.runs[-1].warnings.append(f"truncated: the last value is cut off (line {self.bad[0]})")
        return self.runs

    def _number(self, label: str, value: str, number: int) -> float | None:
        try:
            return to_number(value)
        except NotANumber:
            self.bad = (number, f"{label!r} should be a number, found {value!r}")
            return None

    def _close(self) -> None:
        block = self.block
        self.block = None
        if block is None:
            return
        if self.sglang:
            self.sglang = False
            return
        self.runs.append(block)

    def _line(self, line: str, number: int) -> None:
        if _BLOCK_START.match(line):
            if self.block is not None:
                self.block.warnings.append("truncated: the next result block starts before this one ends")
                self._close()
            self.block = self._new("serve", number)
            return
        block = self.block
        if block is not None:
            block.last_line = number
            if _BLOCK_END.match(line):
                self._close()
            elif not _SUBSECTION.match(line) and (match := _LABEL.match(line)):
                self._serve_label(block, normalise_label(match["label"]), match["value"], number)
            return
        if match := _COMMAND.search(line):
            self.context = {"command": match["cmd"].strip()}
            return
        if line.startswith("Namespace(") and (facts := _namespace_facts(line)):
            self.context = {"namespace": facts}
            return
        if match := _THROUGHPUT.match(line):
            run = self._new("throughput", number)
            run.metrics["request_throughput_req_s"] = float(match["req"])
            run.metrics["total_token_throughput_tok_s"] = float(match["tok"])
            if match["out"] is not None:
                run.metrics["output_throughput_tok_s"] = float(match["out"])
            self.runs.append(run)
            return
        if match := _AVG_LATENCY.match(line):
            run = self._new("latency", number)
            value = self._number("Avg latency", match["v"], number)
            if value is not None:
                run.metrics["latency_ms_mean"] = scaled(value, 1000.0)
            self.runs.append(run)
            return
        if match := _PCT_LATENCY.match(line):
            latency = self._last("latency")
            value = self._number(f"{match['p']}% percentile latency", match["v"], number)
            if latency is not None and value is not None:
                latency.metrics[f"latency_ms_{percentile_stat(match['p'])}"] = scaled(value, 1000.0)
                latency.last_line = number
            return
        if match := _LABEL.match(line):
            self._context_label(normalise_label(match["label"]), match["value"], number)

    def _new(self, kind: str, number: int) -> VllmRun:
        run = VllmRun(kind=kind, first_line=number, last_line=number)
        context = self.context
        self.context = {}
        namespace = context.pop("namespace", None)
        if namespace:
            run.model = namespace.get("model")
            run.backend = namespace.get("backend")
        command = context.pop("command", None)
        if command:
            facts = _command_facts(command)
            run.details["command"] = command
            run.model = facts.get("model")
            run.backend = facts.get("backend")
        for key, value in context.items():
            run.details[key] = value
        if kind == "serve" and "request_rate" in context:
            rate = context["request_rate"]
            if isinstance(rate, float):
                run.metrics["request_rate_req_s"] = rate
        return run

    def _last(self, kind: str) -> VllmRun | None:
        return self.runs[-1] if self.runs and self.runs[-1].kind == kind else None

    def _context_label(self, label: str, value: str, number: int) -> None:
        if label == "traffic request rate":
            parsed = self._number("Traffic request rate", value, number)
            self.context["request_rate"] = parsed if parsed is not None else value
        elif label == "burstiness factor":
            self.context["burstiness"] = value
        elif label in {"total num prompt tokens", "total num output tokens"}:
            run = self._last("throughput")
            parsed = self._number(label, value, number)
            if run is not None and parsed is not None:
                metric = "total_input_tokens" if "prompt" in label else "total_output_tokens"
                run.metrics[metric] = parsed
                run.last_line = number

    def _serve_label(self, block: VllmRun, label: str, value: str, number: int) -> None:
        if label == "backend":  # SGLang's bench_serving block, not vLLM's
            self.sglang = True
            return
        percentile = _PERCENTILE.match(label)
        if label not in SERVE_METRICS and label not in SERVE_DETAILS and percentile is None:
            return
        if value == "":
            block.warnings.append(f"truncated: {label!r} has no value (line {number})")
            return
        parsed = self._number(label, value, number)
        if parsed is None:
            return
        if label in SERVE_METRICS:
            block.metrics[SERVE_METRICS[label]] = parsed
        elif label in SERVE_DETAILS:
            block.details[SERVE_DETAILS[label]] = parsed
        elif percentile is not None:
            family = _FAMILIES[percentile["family"]]
            stat = percentile["stat"]
            if stat == "std":
                block.details[f"{family}_std"] = parsed
                return
            if stat == "median":
                stat = "p50"
            elif percentile["p"] is not None:
                stat = percentile_stat(percentile["p"])
            block.metrics[f"{family}_{stat}"] = parsed


def read_runs(path: Path) -> list[VllmRun]:
    """Every vLLM result in a text log (streamed)."""
    return _Reader(path).read()


def requests_asked(metrics: dict[str, float], details: dict[str, Any]) -> int | None:
    """The requests a vLLM run was asked to make (``workload.num_requests``, what Methodology
    compares between campaigns): ``num_prompts`` where the result records it, else the completed
    and the failed ones together, else the completed ones. The completed count alone made a run
    with one failed request a run of another design ("requests per run 400 / 399")."""
    planned = details.get("num_prompts")
    if isinstance(planned, int | float) and planned >= 0:
        return int(planned)
    completed, failed = metrics.get("num_requests"), metrics.get("failed_requests")
    if completed is None:
        return None
    return int(completed) + (int(failed) if failed is not None else 0)


def _record(run: VllmRun) -> RunRecord:
    concurrency = run.metrics.get("max_concurrency")
    asked = requests_asked(run.metrics, run.details)
    return RunRecord(
        run_id="", campaign="",
        model=Model(id=run.model, name=(run.model or "unknown").rstrip("/").split("/")[-1]),
        software=Software(engine="vllm", backend=run.backend,
                          details={"benchmark": f"vllm bench {run.kind}"}),
        workload=Workload(
            num_requests=asked,
            concurrency=None if concurrency is None else int(concurrency),
            details=dict(run.details),
        ),
        metrics=dict(run.metrics),
        status=Status(ok=True, warnings=list(run.warnings)),
    )


_DETECT = re.compile(r"Serving Benchmark Result|^Throughput: .* requests/s|^Avg latency: .* seconds",
                     re.IGNORECASE | re.MULTILINE)


@register
class VllmTextParser(Parser):
    """vLLM ``bench serve`` / ``bench throughput`` / ``bench latency`` printed output."""

    name = "vllm-text"
    description = ("vLLM bench serve / benchmark_serving.py result block, bench throughput and "
                   "bench latency text (several per log)")
    versions = "vLLM benchmarks 2024 – 2026 (old and new labels, optional lines, P99.9 lines)"

    def detect(self, source: Source) -> bool:
        return _DETECT.search(source.head_text) is not None

    def companions(self, source: Source) -> list[Path]:
        return sample_companions(source.path)

    def parse(self, source: Source) -> list[ParsedRun]:
        require_content(source.path)
        runs = read_runs(source.path)
        if not runs:
            raise ParseError(source.path, "no vLLM benchmark result found",
                             fix="ingest the full output of vllm bench (SGLang output is not read)")
        return log_runs(source, "vllm", runs, _record)
