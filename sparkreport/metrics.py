"""The canonical metric names: the dataset contract.

Units live in the names (``_gib``, ``_tok_s``, ``_ms``, ``_c``). A metric a source does not
report is missing (``None`` in run.json, NaN in the dataset), never 0.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Literal

Direction = Literal["higher", "lower", "none"]


@dataclass(frozen=True)
class Metric:
    """One canonical metric: its name, unit, a human label and which direction is better."""

    name: str
    unit: str
    label: str
    direction: Direction = "none"
    integer: bool = False
    digits: int = 2


_BASE: list[Metric] = [
    Metric("request_throughput_req_s", "req/s", "Request throughput", "higher"),
    Metric("output_throughput_tok_s", "tok/s", "Output throughput", "higher"),
    Metric("total_token_throughput_tok_s", "tok/s", "Total token throughput", "higher"),
    Metric("per_user_output_throughput_tok_s", "tok/s", "Per-user output throughput", "higher"),
    Metric("per_gpu_output_throughput_tok_s", "tok/s", "Per-GPU output throughput", "higher"),
    Metric("total_latency_ms", "ms", "Total latency", "lower"),
    Metric("duration_s", "s", "Benchmark duration", "lower"),
    Metric("num_requests", "requests", "Requests", integer=True, digits=0),
    Metric("failed_requests", "requests", "Failed requests", "lower", integer=True, digits=0),
    Metric("max_concurrency", "requests", "Max concurrency", integer=True, digits=0),
    Metric("request_rate_req_s", "req/s", "Request rate"),
    Metric("total_input_tokens", "tokens", "Total input tokens", integer=True, digits=0),
    Metric("total_output_tokens", "tokens", "Total output tokens", integer=True, digits=0),
    Metric("avg_input_len", "tokens", "Average input length"),
    Metric("avg_output_len", "tokens", "Average output length"),
    Metric("kv_cache_gib", "GiB", "KV cache", "higher"),
    Metric("kv_cache_fraction", "", "KV cache memory fraction", digits=3),
    Metric("kv_cache_max_tokens", "tokens", "KV cache capacity", "higher", integer=True, digits=0),
    Metric("memory_total_gib", "GiB", "Device memory total"),
    Metric("memory_available_gib", "GiB", "Memory available for KV cache", "higher"),
    # Two meanings, two names (schema 2): trtllm-bench / TensorRT-LLM's memory log report memory in
    # use before the KV cache is allocated; the torch runner measures the peak with the KV cache.
    Metric("pre_kv_memory_gib", "GiB", "Memory before KV cache", "lower"),
    Metric("peak_memory_gib", "GiB", "Peak memory", "lower"),
    Metric("tp_size", "", "Tensor parallel size", integer=True, digits=0),
    Metric("pp_size", "", "Pipeline parallel size", integer=True, digits=0),
    Metric("ep_size", "", "Expert parallel size", integer=True, digits=0),
    Metric("max_batch_size", "", "Max batch size", integer=True, digits=0),
    Metric("max_num_tokens", "tokens", "Max tokens", integer=True, digits=0),
    Metric("start_temp_c", "°C", "GPU temperature at start", "none", digits=1),
    Metric("end_temp_c", "°C", "GPU temperature at end", "none", digits=1),
    # How the run was measured (covariates: described and used to explain variance, not tested).
    Metric("measured_window_s", "s", "Measured window", "none", digits=3),
    Metric("gpu_util_mean_pct", "%", "Mean GPU utilisation (measured window)", "none", digits=1),
    Metric("sm_clock_mean_mhz", "MHz", "Mean SM clock (measured window)", "none", digits=0),
    Metric("gpu_power_mean_w", "W", "Mean GPU power (measured window)", "none", digits=1),
]

PERCENTILE_FAMILIES: dict[str, tuple[str, str, Direction]] = {
    "latency_ms": ("ms", "Request latency", "lower"),
    "ttft_ms": ("ms", "Time to first token", "lower"),
    "tpot_ms": ("ms", "Time per output token", "lower"),
    "itl_ms": ("ms", "Inter-token latency", "lower"),
    "e2el_ms": ("ms", "End-to-end latency", "lower"),
    "gtps_tok_s": ("tok/s", "Generation throughput per user", "higher"),
}
#: The stats ``sparkreport metrics`` lists for each family: every one a parser writes by default
#: (trtllm-bench: P50/P90/P95/P99; ``vllm bench latency``: P10, P25, P50, P75, P90, P99) and
#: vLLM's ``--metric-percentiles 99.9``. Any other ``p<N>`` is a metric too (``lookup``).
PERCENTILE_STATS = ("mean", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p99_9", "min", "max")

_PERCENTILE_RE = re.compile(
    r"^(?P<family>" + "|".join(PERCENTILE_FAMILIES) + r")_(?P<stat>mean|min|max|p\d+(?:_\d+)?)$"
)

METRICS: dict[str, Metric] = {m.name: m for m in _BASE}

#: The metrics every benchmark source is expected to report (throughput and memory): an arm whose
#: source reports none of one is noted (the ``missing-metrics`` check). What the pages lead with
#: is ``primary_metrics`` in sparkreport.yml; what a campaign's question tests is
#: ``analysis.primary_metrics`` (:data:`DEFAULT_PRIMARY_METRICS`).
EXPECTED_METRICS = (
    "output_throughput_tok_s",
    "request_throughput_req_s",
    "pre_kv_memory_gib",
    "peak_memory_gib",
    "kv_cache_gib",
)


#: The outcome metrics `compare` and `diff` test by default: few, so that Holm's correction
#: across a report keeps its power. Every other metric is described (stats, tables, charts) and
#: can be tested on request (``--metric`` or ``analysis.compare_metrics``).
KEY_METRICS = (
    "output_throughput_tok_s",
    "request_throughput_req_s",
    "pre_kv_memory_gib",
    "peak_memory_gib",
    "kv_cache_gib",
    "ttft_ms_mean",
    "tpot_ms_mean",
    "latency_ms_mean",
)


#: Metrics that are exact functions of one another for a fixed workload (same requests, input
#: and output length): output throughput = request throughput × output length = tokens / window.
#: A comparison tests one member per family — the first of the family in the tested list — and
#: says which members it stands for; testing them all would count one measurement several times.
METRIC_FAMILIES: dict[str, tuple[str, ...]] = {
    "throughput": ("output_throughput_tok_s", "request_throughput_req_s", "total_token_throughput_tok_s",
                   "per_gpu_output_throughput_tok_s", "duration_s", "total_latency_ms", "measured_window_s"),
}

#: Quantities set by the run's configuration, not measured: never tested, stated as facts.
#: ``kv_cache_gib`` is not here — it is sized from measured free memory (fraction × free), so it
#: is a fact only when it does not vary (see ``sparkreport.analysis.design``).
CONFIGURED_METRICS = frozenset({
    "num_requests", "max_concurrency", "request_rate_req_s", "total_input_tokens", "total_output_tokens",
    "avg_input_len", "avg_output_len", "kv_cache_fraction", "tp_size", "pp_size", "ep_size",
    "max_batch_size", "max_num_tokens", "memory_total_gib",
})

#: The metric each comparison question is about, unless ``analysis.primary_metrics`` says otherwise.
DEFAULT_PRIMARY_METRICS = ("output_throughput_tok_s",)


def family_of(name: str) -> str | None:
    """The declared family of ``name`` (METRIC_FAMILIES), or None."""
    for family, members in METRIC_FAMILIES.items():
        if name in members:
            return family
    return None


@functools.lru_cache(maxsize=4096)
def lookup(name: str) -> Metric | None:
    """Return the catalog entry for ``name`` (percentile names are generated), or None.

    Memoised: the catalog is fixed and a Metric is frozen; loading 10 000 runs asks ~500 000 times."""
    if name in METRICS:
        return METRICS[name]
    match = _PERCENTILE_RE.match(name)
    if not match:
        return None
    unit, label, direction = PERCENTILE_FAMILIES[match["family"]]
    stat = match["stat"]
    stat_label = {"mean": "mean", "min": "minimum", "max": "maximum"}.get(
        stat, stat.replace("_", ".").upper()
    )
    return Metric(name, unit, f"{label} ({stat_label})", direction)


def is_metric(name: str) -> bool:
    """True when ``name`` is a canonical metric name."""
    return lookup(name) is not None


def label_of(name: str) -> str:
    """The human label of a canonical metric ('KV cache'); the name itself when unknown."""
    metric = lookup(name)
    return metric.label if metric else name


def with_unit(label: str, unit: str | None) -> str:
    """A label with its unit: 'Output throughput (tok/s)', and 'Time to first token (mean, ms)'
    where the label ends in parentheses of its own (not '(mean) (ms)'); a count whose label ends
    in its unit keeps the label alone ('Failed requests', not 'Failed requests (requests)')."""
    if not unit or label.lower().split()[-1] == unit.lower():
        return label
    if label.endswith(")"):
        return f"{label[:-1]}, {unit})"
    return f"{label} ({unit})"


def unit_of(name: str) -> str:
    """The unit of a canonical metric ('' when dimensionless or unknown)."""
    metric = lookup(name)
    return metric.unit if metric else ""


def physical_range(name: str) -> tuple[float, float]:
    """The values a metric can take, which bound its confidence intervals: 0–100 for a
    percentage, 0 and up for every other catalogued quantity (rates, amounts, durations, sizes,
    clocks, power), unbounded for a temperature and for a metric the catalog does not know."""
    metric = lookup(name)
    if metric is None or metric.unit == "°C":
        return (-math.inf, math.inf)
    return (0.0, 100.0) if metric.unit == "%" else (0.0, math.inf)


def all_names() -> list[str]:
    """Every fixed name plus every percentile name with the standard stats."""
    names = list(METRICS)
    for family in PERCENTILE_FAMILIES:
        names.extend(f"{family}_{stat}" for stat in PERCENTILE_STATS)
    return names
