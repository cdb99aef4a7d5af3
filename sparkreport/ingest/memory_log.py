"""TensorRT-LLM runtime memory log lines (formats.md §2), C++ and PyTorch-backend variants.

:class:`MemoryFacts` is fed one log line at a time (logger prefix already stripped or not: the
patterns search anywhere in the line) and keeps what the lines say, in GiB:

* canonical metrics — ``kv_cache_gib``, ``kv_cache_max_tokens``, ``kv_cache_fraction``,
  ``memory_total_gib``, ``memory_available_gib``, ``pre_kv_memory_gib`` (and, weakly,
  ``max_num_tokens`` / ``max_batch_size`` from the scheduler summary);
* ``details`` — everything else (weights, activations, engine allocations, blocks, …);
* ``units`` — for each figure whose printed unit was not GiB, the unit as printed and how it
  was converted (``GB`` → 10⁹ bytes, ``MB`` → 10⁶ bytes; ``MiB`` → 2²⁰).

"Weak" lines (estimates printed before the real allocation) set a metric only until a
"strong" line (``[MemUsageChange] Allocated … for max tokens in paged KV cache (N)``) arrives;
among strong lines the last wins, because the PyTorch backend first allocates a small
profiling KV cache and then the real one.

This module registers no parser: the trtllm-bench log parser reads these lines wherever they
appear in a log (a log holding only them is still ingested, as a run without a report).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_NUM = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_UNIT = r"(?:[KMGT]i?B|bytes|B)"

_GIB_PER: dict[str, float] = {
    "B": 1 / 2**30, "bytes": 1 / 2**30,
    "KiB": 1 / 2**20, "MiB": 1 / 2**10, "GiB": 1.0, "TiB": 2**10,
    "KB": 1e3 / 2**30, "MB": 1e6 / 2**30, "GB": 1e9 / 2**30, "TB": 1e12 / 2**30,
}


def to_gib(value: float, unit: str) -> float:
    """``value`` in ``unit`` (as printed) converted to GiB."""
    return value * _GIB_PER[unit]


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.replace("NUM", _NUM).replace("UNIT", _UNIT))


_CPP_TOTALS = _p(r"Memory usage when calculating max tokens in paged kv cache: total: (NUM) (UNIT), "
                 r"available: (NUM) (UNIT)")
_KV_ALLOC = _p(r"\[MemUsageChange\] Allocated (NUM) (UNIT) for max tokens in paged KV cache \((\d+)\)")
_OTHER_ALLOC = _p(r"\[MemUsageChange\] Allocated (NUM) (UNIT) (?:GPU memory )?for (.+?)\.?$")
_TRT_CONTEXT = _p(r"\[MemUsageChange\] TensorRT-managed allocation in IExecutionContext creation: "
                  r"CPU \+?(NUM), GPU \+?(NUM), now: CPU (NUM), GPU (NUM) \((UNIT)\)")
_INT_DETAILS: list[tuple[re.Pattern[str], str]] = [
    (_p(r"Number of tokens per block: (\d+)"), "tokens_per_block"),
    (_p(r"Number of blocks in KV cache primary pool: (\d+)"), "kv_cache_primary_blocks"),
    (_p(r"Number of blocks in KV cache secondary pool: (\d+)"), "kv_cache_secondary_blocks"),
    (_p(r"Max KV cache pages per sequence: (\d+)"), "kv_cache_max_pages_per_sequence"),
]
_OLD_ALLOC = _p(r"Allocate (\d+) bytes for k/v cache")
_OLD_TOKENS = _p(r"Using (\d+) tokens in paged KV cache")
_TORCH_GIB: list[tuple[re.Pattern[str], str]] = [
    (_p(r"Memory used after loading model weights \(inside torch\) in memory usage profiling: "
        r"(NUM) (UNIT)"), "weights_inside_torch_gib"),
    (_p(r"Memory used after loading model weights \(outside torch\) in memory usage profiling: "
        r"(NUM) (UNIT)"), "weights_outside_torch_gib"),
    (_p(r"Memory used for model weights \(inside torch\)[^:]*: (NUM) (UNIT)"), "weights_inside_torch_gib"),
    (_p(r"Memory dynamically allocated during inference \(inside torch\) in memory usage profiling: "
        r"(NUM) (UNIT)"), "inference_inside_torch_gib"),
    (_p(r"Memory used outside torch (?:\([^)]*\) )?in memory usage profiling: (NUM) (UNIT)"),
     "outside_torch_gib"),
    (_p(r"Reserving (NUM) (UNIT) for the multimodal encoder cache"), "multimodal_encoder_cache_gib"),
]
_PEAK = _p(r"Peak memory during memory usage profiling \(torch \+ non-torch\): (NUM) (UNIT)")
_PEAK_AVAILABLE = _p(r"available KV cache memory when calculating max tokens: (NUM) (UNIT)")
_PEAK_FRACTION = _p(r"fraction is set (NUM)")
_PEAK_KV_SIZE = _p(r"kv size (?:per token )?is (NUM)")
_PEAK_TOTAL = _p(r"device total memory (NUM) (UNIT)")
_PEAK_TMP = _p(r"(?:temporary kv cache memory during profiling|tmp kv_mem) (NUM) (UNIT)")
_MAX_TOKENS_LIMIT = _p(r"max_tokens=(\d+) is provided\. It limits max memory to (NUM) (UNIT)\. "
                       r"New max_memory is set to (NUM) (UNIT)")
_MAX_GPU_BYTES = _p(r"max_gpu_total_bytes=(NUM) (UNIT) is provided\. New max memory is (NUM) (UNIT)")
_EST_MEMORY = _p(r"Estimated max memory in KV cache\s*:\s*(NUM) (UNIT)")
_EST_TOKENS = _p(r"Estimated max tokens in KV cache\s*:\s*(\d+)")
_SCHEDULER = _p(r"max_seq_len=(\d+), max_num_requests=(\d+), max_num_tokens=(\d+)"
                r"(?:, max_batch_size=(\d+))?")
_BOTH_SET = _p(r"Both freeGpuMemoryFraction .* are set \(to (NUM) and (\d+), respectively\)")
_BUILD: list[tuple[re.Pattern[str], str]] = [
    (_p(r"Estimated total available memory for KV cache: (NUM) ?(UNIT)"), "kv_cache_available"),
    (_p(r"Estimated total KV cache memory: (NUM) ?(UNIT)"), "kv_cache_total"),
    (_p(r"Estimated max number of requests in KV cache memory: (NUM)()"), "max_requests"),
    (_p(r"Estimated max batch size \(after fine-tune\): (NUM)()"), "max_batch_size"),
    (_p(r"Estimated max num tokens \(after fine-tune\): (NUM)()"), "max_num_tokens"),
]

#: A cheap pre-filter: a line that contains none of these is not a memory line.
_KEYWORDS = ("emory", "MemUsageChange", "KV cache", "kv cache", "k/v cache", "max_seq_len=",
             "tokens per block", "max_gpu_total_bytes", "max_tokens=", "freeGpuMemoryFraction",
             "Estimated")


@dataclass
class MemoryFacts:
    """What the runtime memory lines of one run said (see the module docstring)."""

    metrics: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    weak: set[str] = field(default_factory=set)
    lines: int = 0

    def __bool__(self) -> bool:
        return bool(self.metrics or self.details)

    def _metric(self, name: str, value: float, *, strong: bool = True) -> None:
        if strong:
            self.metrics[name] = value
            self.weak.discard(name)
        elif name not in self.metrics or name in self.weak:
            self.metrics[name] = value
            self.weak.add(name)

    def _gib(self, key: str, value: str, unit: str) -> float:
        if unit != "GiB":
            decimal = unit in {"KB", "MB", "GB", "TB"}
            self.units[key] = f"printed in {unit}" + (" (read as decimal units)" if decimal else "")
        return to_gib(float(value), unit)

    def feed(self, line: str) -> bool:
        """Read one line; True when it was a memory line."""
        if not any(word in line for word in _KEYWORDS):
            return False
        found = self._feed(line)
        if found:
            self.lines += 1
        return found

    def _feed(self, line: str) -> bool:  # noqa: C901 - one flat dispatch over line kinds
        if m := _KV_ALLOC.search(line):
            self._metric("kv_cache_gib", self._gib("kv_cache_gib", m[1], m[2]))
            self._metric("kv_cache_max_tokens", float(m[3]))
            self.details["kv_cache_allocations"] = self.details.get("kv_cache_allocations", 0) + 1
            return True
        if m := _CPP_TOTALS.search(line):
            self._metric("memory_total_gib", self._gib("memory_total_gib", m[1], m[2]))
            self._metric("memory_available_gib", self._gib("memory_available_gib", m[3], m[4]))
            return True
        if m := _PEAK.search(line):
            self._metric("pre_kv_memory_gib", self._gib("pre_kv_memory_gib", m[1], m[2]))
            if a := _PEAK_AVAILABLE.search(line):
                self._metric("memory_available_gib", self._gib("memory_available_gib", a[1], a[2]))
            if f := _PEAK_FRACTION.search(line):
                self._metric("kv_cache_fraction", float(f[1]))
            if k := _PEAK_KV_SIZE.search(line):
                self.details["kv_size_per_token"] = float(k[1])
            if t := _PEAK_TOTAL.search(line):
                self._metric("memory_total_gib", self._gib("memory_total_gib", t[1], t[2]))
            if x := _PEAK_TMP.search(line):
                self.details["profiling_kv_cache_gib"] = self._gib("profiling_kv_cache_gib", x[1], x[2])
            return True
        for pattern, key in _TORCH_GIB:
            if m := pattern.search(line):
                self.details[key] = self._gib(key, m[1], m[2])
                return True
        for pattern, key in _INT_DETAILS:
            if m := pattern.search(line):
                self.details[key] = int(m[1])
                return True
        if m := _TRT_CONTEXT.search(line):
            self.details["trt_context_gpu_increase_gib"] = self._gib(
                "trt_context_gpu_increase_gib", m[2], m[5])
            self.details["trt_context_gpu_now_gib"] = self._gib("trt_context_gpu_now_gib", m[4], m[5])
            return True
        if m := _OTHER_ALLOC.search(line):
            key = re.sub(r"[^a-z0-9]+", "_", m[3].lower()).strip("_") + "_gib"
            allocations = self.details.setdefault("allocations", {})
            allocations[key] = self._gib(f"allocations.{key}", m[1], m[2])
            return True
        if m := _OLD_ALLOC.search(line):
            self._metric("kv_cache_gib", self._gib("kv_cache_gib", m[1], "bytes"))
            return True
        if m := _OLD_TOKENS.search(line):
            self._metric("kv_cache_max_tokens", float(m[1]))
            return True
        if m := _EST_MEMORY.search(line):
            gib = self._gib("kv_cache_estimated_gib", m[1], m[2])
            self.details["kv_cache_estimated_gib"] = gib
            self._metric("kv_cache_gib", gib, strong=False)
            return True
        if m := _EST_TOKENS.search(line):
            self.details["kv_cache_estimated_max_tokens"] = int(m[1])
            self._metric("kv_cache_max_tokens", float(m[1]), strong=False)
            return True
        if m := _MAX_TOKENS_LIMIT.search(line):
            self.details["max_tokens_limit"] = int(m[1])
            self.details["max_tokens_limit_memory_gib"] = self._gib("max_tokens_limit_memory_gib",
                                                                    m[2], m[3])
            return True
        if m := _MAX_GPU_BYTES.search(line):
            self.details["max_gpu_total_gib"] = self._gib("max_gpu_total_gib", m[1], m[2])
            return True
        if m := _SCHEDULER.search(line):
            self.details["scheduler"] = {
                "max_seq_len": int(m[1]), "max_num_requests": int(m[2]), "max_num_tokens": int(m[3]),
                **({"max_batch_size": int(m[4])} if m[4] else {}),
            }
            self._metric("max_num_tokens", float(m[3]), strong=False)
            if m[4]:
                self._metric("max_batch_size", float(m[4]), strong=False)
            return True
        if m := _BOTH_SET.search(line):
            self._metric("kv_cache_fraction", float(m[1]), strong=False)
            self.details["max_tokens_in_paged_kv_cache"] = int(m[2])
            return True
        for pattern, key in _BUILD:
            if m := pattern.search(line):
                build = self.details.setdefault("build_estimates", {})
                build[key] = float(m[1])
                if m[2]:
                    self.units[f"build_estimates.{key}"] = f"printed in {m[2]}; kept as printed"
                return True
        return False

    def merge_into(self, metrics: dict[str, float], details: dict[str, Any]) -> None:
        """Add these facts under a report's own figures (the report wins where both say)."""
        for name, value in self.metrics.items():
            if metrics.get(name) is None:
                metrics[name] = value
        if self.details:
            details["memory_log"] = dict(self.details)
        if self.units:
            details["memory_log_units"] = dict(self.units)
