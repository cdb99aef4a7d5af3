"""The memory ledger of a run: what memory held before the start, after the weights, after
the KV cache allocation and at the peak — from the workload's own report and the samples.

The seed study's headline (Docker "costs" 20–30 GiB of KV cache on unified memory) depends
on exactly these figures, which it never recorded. Every entry says where it came from.
"""

from __future__ import annotations

from typing import Any

from sparkreport.execute.monitor import MonitorSummary

PHASES = ("before_start", "after_weights", "after_kv", "peak", "after_end")


def build_ledger(phases: dict[str, dict[str, Any]], monitor: MonitorSummary | None,
                 metrics: dict[str, float | None], cgroup: dict[str, Any] | None) -> dict[str, Any]:
    """Merge the workload's phase readings, the sampler's first/peak/last rows, the
    workload's own memory metrics and the cgroup's final counters into one ledger."""
    ledger: dict[str, dict[str, Any]] = {phase: {} for phase in PHASES}
    sources: dict[str, list[str]] = {phase: [] for phase in PHASES}
    for phase, values in phases.items():
        if phase in ledger and values:
            ledger[phase].update({f"workload_{k}": v for k, v in values.items()})
            sources[phase].append("workload report")
    if monitor is not None and monitor.samples:
        ledger["before_start"].update({f"sampled_{k}": v for k, v in monitor.first.items()})
        ledger["after_end"].update({f"sampled_{k}": v for k, v in monitor.last.items()})
        ledger["peak"].update({f"sampled_{k}_max": v for k, v in monitor.peaks.items()
                               if k in ("gpu_mem_used_gib", "gpu_proc_mem_gib", "cgroup_current_gib",
                                        "cgroup_peak_gib", "cgroup_anon_gib", "cgroup_file_gib",
                                        "cgroup_shmem_gib", "cached_gib", "anon_pages_gib")})
        for phase in ("before_start", "after_end", "peak"):
            sources[phase].append(f"samples ({monitor.gpu_mem_source or 'no GPU memory'})")
    if metrics.get("kv_cache_gib") is not None:
        ledger["after_kv"]["kv_cache_gib"] = metrics["kv_cache_gib"]
        sources["after_kv"].append("metrics")
    if metrics.get("pre_kv_memory_gib") is not None:
        ledger["after_weights"]["pre_kv_memory_gib"] = metrics["pre_kv_memory_gib"]
        sources["after_weights"].append("metrics")
    if metrics.get("peak_memory_gib") is not None:
        ledger["peak"]["peak_memory_gib"] = metrics["peak_memory_gib"]
        sources["peak"].append("metrics")
    if cgroup:
        ledger["peak"].update({f"cgroup_{k}": v for k, v in cgroup.items()
                               if k in ("peak_gib", "limit_gib", "oom_kills")})
        ledger["after_end"].update({f"cgroup_{k}": v for k, v in cgroup.items()
                                    if k in ("current_gib", "anon_gib", "file_gib", "shmem_gib")})
        sources["peak"].append("cgroup")
    out: dict[str, Any] = {phase: ledger[phase] for phase in PHASES if ledger[phase]}
    out["sources"] = {phase: sorted(set(s)) for phase, s in sources.items() if s}
    return out
