"""Pre-flight checks before a campaign: GPU present, cool, in a performance state, the CPU
quiet and the memory free — the seed methodology's checklist, made explicit.

Each check gives a :class:`Check`; the campaign's ``preflight.on_fail`` decides whether a
failed check stops the campaign (``error``) or is recorded in every run (``warn``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sparkreport.execute.campaign import Preflight
from sparkreport.execute.gpu import GpuProbe
from sparkreport.execute.monitor import read_meminfo
from sparkreport.execute.sysinfo import cpu_busy_pct


@dataclass(frozen=True)
class Check:
    """One pre-flight check and what it found."""

    name: str
    ok: bool
    detail: str


def run_preflight(settings: Preflight, gpu: GpuProbe | None, gpu_missing: str | None,
                  needs_gpu: bool, cpu_load: Callable[[], float | None] = cpu_busy_pct,
                  meminfo: Callable[[], dict[str, int]] = read_meminfo) -> list[Check]:
    """Run the checks the settings ask for and return what each found."""
    checks: list[Check] = []
    require = needs_gpu if settings.require_gpu is None else settings.require_gpu
    if gpu is None:
        if require:
            checks.append(Check("gpu", False, f"no GPU: {gpu_missing}"))
    else:
        reading = gpu.read()
        checks.append(Check("gpu", True, str(gpu.static_info().get("gpu_name"))))
        if reading.temp_c is not None:
            checks.append(Check("temperature", reading.temp_c < settings.max_temp_c,
                                f"{reading.temp_c:g} °C (limit {settings.max_temp_c:g} °C)"))
        if reading.pstate is not None:
            checks.append(Check("performance_state", True, f"P{reading.pstate}"))
        if reading.memory_total_bytes:
            free = 1.0 - (reading.memory_used_bytes or 0) / reading.memory_total_bytes
            checks.append(Check("gpu_memory_free", free >= settings.min_free_memory_fraction,
                                f"{free:.1%} free (need {settings.min_free_memory_fraction:.0%})"))
    mem = meminfo()
    if "MemTotal" in mem and "MemAvailable" in mem and (gpu is None or not _gpu_memory(gpu)):
        free = mem["MemAvailable"] / mem["MemTotal"]
        checks.append(Check("memory_available", free >= settings.min_free_memory_fraction,
                            f"{free:.1%} of MemTotal available (need "
                            f"{settings.min_free_memory_fraction:.0%})"))
    load = cpu_load()
    if load is not None:
        checks.append(Check("cpu_load", load <= settings.max_cpu_load_pct,
                            f"{load:.1f} % busy (limit {settings.max_cpu_load_pct:g} %)"))
    return checks


def _gpu_memory(gpu: GpuProbe) -> bool:
    return bool(gpu.read().memory_total_bytes)
