"""The GPU probe: NVML through nvidia-ml-py, imported lazily, behind a small protocol.

Every reading may be missing: NVML answers ``NOT_SUPPORTED`` for some queries on some GPUs
(GB10 reports no device memory: its memory is the unified pool), and a machine may have no
NVML at all. Callers get None for what is missing and never an exception. Tests pass a fake
that implements :class:`GpuProbe` (dependency injection), so nothing here needs a GPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class GpuReading:
    """One NVML sample. Memory is None where NVML does not report it (GB10)."""

    util_pct: float | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    temp_c: float | None = None
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    pstate: int | None = None
    process_memory_bytes: dict[int, int] | None = None


class GpuProbe(Protocol):
    """What the executor reads from a GPU."""

    def read(self) -> GpuReading:
        """A full sample (for the monitor)."""
        ...

    def temperature(self) -> float | None:
        """The GPU temperature in °C (for the cooldown)."""
        ...

    def static_info(self) -> dict[str, Any]:
        """Name, driver, CUDA driver version, compute capability, memory total, …"""
        ...


def _safe(call: Callable[[], T]) -> T | None:
    try:
        return call()
    except Exception:  # NVMLError_NotSupported and friends: the figure is missing
        return None


class NvmlGpu:
    """One GPU read through NVML (nvidia-ml-py's ``pynvml`` module)."""

    def __init__(self, nvml: Any, index: int):
        self.nvml = nvml
        self.index = index
        self.handle = nvml.nvmlDeviceGetHandleByIndex(index)

    def temperature(self) -> float | None:
        nv = self.nvml
        value = _safe(lambda: nv.nvmlDeviceGetTemperature(self.handle, nv.NVML_TEMPERATURE_GPU))
        return None if value is None else float(value)

    def read(self) -> GpuReading:
        nv, h = self.nvml, self.handle
        util = _safe(lambda: nv.nvmlDeviceGetUtilizationRates(h))
        memory = _safe(lambda: nv.nvmlDeviceGetMemoryInfo(h))
        power = _safe(lambda: nv.nvmlDeviceGetPowerUsage(h))
        procs = _safe(lambda: nv.nvmlDeviceGetComputeRunningProcesses(h))
        used = getattr(memory, "used", None) if memory is not None else None
        total = getattr(memory, "total", None) if memory is not None else None
        if total == 0:  # some drivers answer "success" with zeros where the figure is unsupported
            used = total = None
        return GpuReading(
            util_pct=None if util is None else float(util.gpu),
            memory_used_bytes=used,
            memory_total_bytes=total,
            temp_c=self.temperature(),
            power_w=None if power is None else power / 1000.0,
            sm_clock_mhz=_float(_safe(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))),
            mem_clock_mhz=_float(_safe(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))),
            pstate=_safe(lambda: int(nv.nvmlDeviceGetPerformanceState(h))),
            process_memory_bytes=None if procs is None else {
                int(p.pid): int(p.usedGpuMemory or 0) for p in procs
            },
        )

    def static_info(self) -> dict[str, Any]:
        nv, h = self.nvml, self.handle

        def text(value: Any) -> str | None:
            return value.decode() if isinstance(value, bytes) else (None if value is None else str(value))

        cuda = _safe(lambda: nv.nvmlSystemGetCudaDriverVersion_v2())
        cc = _safe(lambda: nv.nvmlDeviceGetCudaComputeCapability(h))
        memory = _safe(lambda: nv.nvmlDeviceGetMemoryInfo(h))
        total = getattr(memory, "total", 0) if memory is not None else 0
        return {
            "gpu_index": self.index,
            "gpu_name": text(_safe(lambda: nv.nvmlDeviceGetName(h))),
            "gpu_uuid": text(_safe(lambda: nv.nvmlDeviceGetUUID(h))),
            "driver": text(_safe(lambda: nv.nvmlSystemGetDriverVersion())),
            "cuda_driver": None if cuda is None else f"{cuda // 1000}.{(cuda % 1000) // 10}",
            "compute_capability": None if cc is None else f"{cc[0]}.{cc[1]}",
            "gpu_memory_total_gib": round(total / 2**30, 3) if total else None,
            "gpu_memory_reported": bool(total),
            "power_limit_w": _float(_safe(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0)),
            "pstate": _safe(lambda: int(nv.nvmlDeviceGetPerformanceState(h))),
            "temp_c": self.temperature(),
            "gpu_count": _safe(lambda: int(nv.nvmlDeviceGetCount())),
        }

    def close(self) -> None:
        """Shut NVML down (best effort)."""
        with contextlib.suppress(Exception):
            self.nvml.nvmlShutdown()


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def open_gpu(index: int = 0) -> tuple[NvmlGpu | None, str | None]:
    """Open GPU ``index`` through NVML; (None, why) when there is no NVML or no such GPU."""
    try:
        import pynvml  # provided by nvidia-ml-py
    except ImportError:
        return None, "nvidia-ml-py is not installed (pip install nvidia-ml-py)"
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return None, f"NVML did not start ({_reason(exc)}): no NVIDIA driver or GPU here"
    try:
        return NvmlGpu(pynvml, index), None
    except Exception as exc:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
        return None, f"no GPU {index} ({_reason(exc)})"


def _reason(exc: Exception) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
