"""The background sampler: NVML, /proc/meminfo and the run's cgroup, at a fixed rate.

One row per tick, written beside run.json as ``samples.csv.gz`` (gzip keeps a 10 Hz record
of a long run to a few hundred KB). Columns are in fixed units (GiB, °C, W, MHz, %); a
figure the machine does not give is an empty cell, never 0.

Where NVML reports no device memory (GB10: the GPU uses the unified pool), ``gpu_mem_used_gib``
falls back to MemTotal − MemAvailable from /proc/meminfo and ``gpu_mem_source`` says
``meminfo`` — the run's summary says so too.

The sampler measures its own cost: the thread's CPU time over the wall time it ran
(``cpu_pct_of_core``), reported with every run (target: under 1 % of one core at 10 Hz).
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkreport.execute import cgroups
from sparkreport.execute.gpu import GpuProbe

GIB = 2**30
MEMINFO_FIELDS = ("MemTotal", "MemFree", "MemAvailable", "Cached", "Shmem", "AnonPages")

COLUMNS = (
    "t_s", "gpu_util_pct", "gpu_mem_used_gib", "gpu_mem_source", "gpu_temp_c", "gpu_power_w",
    "sm_clock_mhz", "mem_clock_mhz", "pstate", "gpu_proc_mem_gib", "gpu_processes",
    "mem_total_gib", "mem_free_gib", "mem_available_gib", "cached_gib", "shmem_gib",
    "anon_pages_gib", "cgroup_current_gib", "cgroup_peak_gib", "cgroup_anon_gib",
    "cgroup_file_gib", "cgroup_shmem_gib",
)


def read_meminfo(path: Path = Path("/proc/meminfo")) -> dict[str, int]:
    """The /proc/meminfo fields the monitor keeps, in bytes."""
    try:
        return _parse_meminfo(path.read_text())
    except OSError:
        return {}


def _parse_meminfo(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in MEMINFO_FIELDS:
            out[key] = int(rest.split()[0]) * 1024
    return out


class MeminfoReader:
    """:func:`read_meminfo` at sampling rate: the file stays open, each reading is one ``pread``
    (proc files regenerate when read from offset 0)."""

    def __init__(self, path: Path = Path("/proc/meminfo")):
        self.path = path
        self._fd: int | None = None

    def __call__(self) -> dict[str, int]:
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY)
            return _parse_meminfo(os.pread(self._fd, 1 << 16, 0).decode(errors="replace"))
        except OSError:
            return {}

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def memory_now(gpu: GpuProbe | None) -> dict[str, Any]:
    """The memory fields of a sampler row that the run guard's floors read — MemAvailable, and
    the GPU's used memory where NVML reports it — read now, in the calling thread."""
    row: dict[str, Any] = {"mem_available_gib": _gib(read_meminfo().get("MemAvailable"))}
    if gpu is not None:
        used = gpu.read().memory_used_bytes
        if used is not None:
            row.update(gpu_mem_used_gib=_gib(used), gpu_mem_source="nvml")
    return row


def _gib(value: int | None) -> float | None:
    return None if value is None else round(value / GIB, 4)


@dataclass
class MonitorSummary:
    """What the samples say, for run.json (``hardware.details.monitor``)."""

    samples: int = 0
    interval_s: float = 0.0
    duration_s: float = 0.0
    cpu_s: float = 0.0
    gpu_mem_source: str | None = None
    peaks: dict[str, float] = field(default_factory=dict)
    first: dict[str, Any] = field(default_factory=dict)
    last: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: Per-run metrics from the samples (:func:`busy_span_metrics`).
    busy: dict[str, float] = field(default_factory=dict)
    #: GPU processes that held memory before the workload started: ``{pid: MiB}``.
    foreign_processes: dict[int, int] = field(default_factory=dict)

    @property
    def cpu_pct_of_core(self) -> float | None:
        """The sampler's CPU time as a share of one core over its wall time."""
        return None if self.duration_s <= 0 else 100.0 * self.cpu_s / self.duration_s

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"samples": self.samples, "interval_s": self.interval_s,
                "duration_s": round(self.duration_s, 3), "sampler_cpu_s": round(self.cpu_s, 4),
                "sampler_cpu_pct_of_core": None if self.cpu_pct_of_core is None
                else round(self.cpu_pct_of_core, 3),
                "gpu_mem_source": self.gpu_mem_source, "peaks": self.peaks,
                "first": self.first, "last": self.last, "notes": self.notes}


class Sampler:
    """Samples at ``interval_s`` on a daemon thread between :meth:`start` and :meth:`stop`."""

    def __init__(self, gpu: GpuProbe | None, interval_s: float = 0.1,
                 cgroup_dir: Callable[[], Path | None] = lambda: None,
                 meminfo: Callable[[], dict[str, int]] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 observer: Callable[[dict[str, Any]], None] | None = None, keep_rows: bool = True):
        """``observer`` sees every row as it is taken (the run guard, on this thread); with
        ``keep_rows`` False nothing is kept (the guard alone, monitoring off)."""
        self.gpu = gpu
        self.interval_s = interval_s
        self.cgroup_dir = cgroup_dir
        self._own_meminfo: MeminfoReader | None = None
        if meminfo is None:
            meminfo = self._own_meminfo = MeminfoReader()
        self.meminfo = meminfo
        self.clock = clock
        self.observer = observer
        self.keep_rows = keep_rows
        #: The observer's first error (it is not called again after one).
        self.observer_error: str | None = None
        self.rows: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._cpu_s = 0.0
        self._wall_s = 0.0
        self._cgroup: cgroups.MemoryReader | None = None
        self.wall_t0: float | None = None

    def window_offsets(self, window_unix_s: Any) -> tuple[float, float] | None:
        """A workload's timed window ``[start, end]`` (UTC seconds) on the samples' ``t_s`` axis."""
        if self.wall_t0 is None or not isinstance(window_unix_s, list | tuple) or len(window_unix_s) != 2:
            return None
        start, end = (float(x) - self.wall_t0 for x in window_unix_s)
        return (start, end) if end > start else None

    def start(self) -> None:
        """Start sampling (one sample is taken at once)."""
        self._t0 = self.clock()
        self.wall_t0 = time.time()  # UTC seconds at t_s = 0, to place a workload's window on the samples
        self._thread = threading.Thread(target=self._loop, name="sparkreport-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> MonitorSummary:
        """Stop, take a last sample and summarise."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        return self.summary()

    def _loop(self) -> None:
        cpu0, wall0 = time.thread_time(), time.monotonic()
        next_tick = time.monotonic()
        while True:
            self.sample()
            next_tick += self.interval_s
            if self._stop.wait(max(0.0, next_tick - time.monotonic())):
                self.sample()
                break
        self._cpu_s = time.thread_time() - cpu0
        self._wall_s = time.monotonic() - wall0
        if self._cgroup is not None:
            self._cgroup.close()
            self._cgroup = None
        if self._own_meminfo is not None:
            self._own_meminfo.close()

    def sample(self) -> dict[str, Any]:
        """Take one sample now (also usable without the thread, e.g. in tests)."""
        row: dict[str, Any] = {"t_s": round(self.clock() - self._t0, 3)}
        mem = self.meminfo()
        if self.gpu is not None:
            reading = self.gpu.read()
            row.update(gpu_util_pct=reading.util_pct, gpu_temp_c=reading.temp_c,
                       gpu_power_w=reading.power_w, sm_clock_mhz=reading.sm_clock_mhz,
                       mem_clock_mhz=reading.mem_clock_mhz, pstate=reading.pstate)
            if reading.memory_used_bytes is not None:
                row["gpu_mem_used_gib"] = _gib(reading.memory_used_bytes)
                row["gpu_mem_source"] = "nvml"
            if reading.process_memory_bytes is not None:
                row["gpu_proc_mem_gib"] = _gib(sum(reading.process_memory_bytes.values()))
                row["gpu_processes"] = ";".join(
                    f"{pid}:{round(used / 2**20)}" for pid, used in sorted(reading.process_memory_bytes.items()))
        if (self.gpu is not None and "gpu_mem_used_gib" not in row
                and "MemTotal" in mem and "MemAvailable" in mem):
            row["gpu_mem_used_gib"] = _gib(mem["MemTotal"] - mem["MemAvailable"])
            row["gpu_mem_source"] = "meminfo"
        row.update(mem_total_gib=_gib(mem.get("MemTotal")), mem_free_gib=_gib(mem.get("MemFree")),
                   mem_available_gib=_gib(mem.get("MemAvailable")), cached_gib=_gib(mem.get("Cached")),
                   shmem_gib=_gib(mem.get("Shmem")), anon_pages_gib=_gib(mem.get("AnonPages")))
        folder = self.cgroup_dir()
        if folder is not None:
            if self._cgroup is None or self._cgroup.folder != folder:
                if self._cgroup is not None:
                    self._cgroup.close()
                self._cgroup = cgroups.MemoryReader(folder)
            stats = self._cgroup.read()
            if stats.current is not None:
                row.update(cgroup_current_gib=_gib(stats.current), cgroup_peak_gib=_gib(stats.peak),
                           cgroup_anon_gib=_gib(stats.anon), cgroup_file_gib=_gib(stats.file),
                           cgroup_shmem_gib=_gib(stats.shmem))
        if self.keep_rows:
            self.rows.append(row)
        if self.observer is not None and self.observer_error is None:
            try:
                self.observer(row)
            except Exception as exc:  # a broken observer must not stop the sampling; the runner says so
                self.observer_error = f"{type(exc).__name__}: {exc}"
        return row

    def summary(self) -> MonitorSummary:
        """Peaks, first and last rows, the memory source and the sampler's own cost."""
        summary = MonitorSummary(samples=len(self.rows), interval_s=self.interval_s,
                                 duration_s=self._wall_s, cpu_s=self._cpu_s)
        if not self.rows:
            return summary
        sources = {r.get("gpu_mem_source") for r in self.rows} - {None}
        summary.gpu_mem_source = ",".join(sorted(str(s) for s in sources)) or None
        if "meminfo" in sources:
            summary.notes.append("NVML reports no device memory on this GPU: gpu_mem_used_gib is "
                                 "MemTotal − MemAvailable from /proc/meminfo (unified memory)")
        for column in COLUMNS:
            values = [r[column] for r in self.rows if isinstance(r.get(column), int | float)]
            if values and column not in ("t_s", "pstate"):
                summary.peaks[column] = max(values)
        keep = ("gpu_mem_used_gib", "gpu_temp_c", "mem_available_gib", "cached_gib",
                "cgroup_current_gib", "cgroup_peak_gib", "cgroup_anon_gib", "cgroup_file_gib",
                "cgroup_shmem_gib")
        summary.busy = busy_span_metrics(self.rows)
        summary.foreign_processes = processes_of(self.rows[0])
        summary.first = {k: self.rows[0][k] for k in keep if self.rows[0].get(k) is not None}
        summary.last = {k: self.rows[-1][k] for k in keep if self.rows[-1].get(k) is not None}
        return summary

    def csv_gz(self) -> bytes:
        """The samples as gzip-compressed CSV (fixed columns, empty cell = missing)."""
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in self.rows:
            writer.writerow({k: ("" if row.get(k) is None else row[k]) for k in COLUMNS})
        return gzip.compress(text.getvalue().encode(), compresslevel=9, mtime=0)


def processes_of(row: dict[str, Any]) -> dict[int, int]:
    """``{pid: MiB}`` from a sample's ``gpu_processes`` cell (``pid:MiB;pid:MiB``)."""
    out: dict[int, int] = {}
    for item in str(row.get("gpu_processes") or "").split(";"):
        pid, _, mib = item.partition(":")
        if pid.strip().isdigit():
            out[int(pid)] = int(float(mib or 0))
    return out


def busy_span_metrics(rows: list[dict[str, Any]], window: tuple[float, float] | None = None) -> dict[str, float]:
    """Mean GPU utilisation, SM clock and power while the workload measured.

    ``window``: the workload's timed window on the ``t_s`` axis (the torch workload reports it);
    the samples inside it are used. Without one (or with no sample inside it), the samples with
    GPU utilisation above 0 are used: loading and exit, when the GPU idles, are left out, so the
    mean describes the work. Empty when the GPU reports no utilisation.
    """
    span = [r for r in rows if window is not None and isinstance(r.get("t_s"), int | float)
            and window[0] <= r["t_s"] <= window[1]]
    if not span:
        span = [r for r in rows if isinstance(r.get("gpu_util_pct"), int | float) and r["gpu_util_pct"] > 0]
    if not span:
        return {}
    out: dict[str, float] = {}
    for column, metric, digits in (("gpu_util_pct", "gpu_util_mean_pct", 1), ("sm_clock_mhz", "sm_clock_mean_mhz", 0),
                                   ("gpu_power_w", "gpu_power_mean_w", 1)):
        values = [float(r[column]) for r in span if isinstance(r.get(column), int | float)]
        if values:
            out[metric] = round(sum(values) / len(values), digits)
    return out
