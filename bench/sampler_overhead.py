"""The monitor's own cost: CPU time of the 10 Hz sampler as a share of one core.

    python bench/sampler_overhead.py [--seconds 20] [--interval 0.1] [--cgroup [FOLDER]]

Uses the real NVML GPU when one is present (nvidia-ml-py), otherwise a fixed fake reading so
the /proc/meminfo and cgroup reads — most of the work on a machine without a GPU — are still
measured. Target (issue [run]): under 1% of one core at 10 Hz. On the GPU campaign every run
also records its own figure in ``hardware.details.monitor.sampler_cpu_pct_of_core``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from sparkreport.execute.cgroups import CGROUP_ROOT
from sparkreport.execute.gpu import GpuReading, open_gpu
from sparkreport.execute.monitor import Sampler


class FakeGpu:
    """A constant reading (what NVML would return, without a driver call)."""

    def read(self) -> GpuReading:
        return GpuReading(util_pct=50.0, memory_used_bytes=1 << 34, memory_total_bytes=1 << 36, temp_c=40.0,
                          power_w=200.0, sm_clock_mhz=1980.0, mem_clock_mhz=2619.0, pstate=0,
                          process_memory_bytes={1234: 1 << 33})

    def temperature(self) -> float | None:
        return 40.0

    def static_info(self) -> dict[str, Any]:
        return {"name": "fake"}


def own_memory_cgroup() -> Path | None:
    """This process's memory cgroup folder: the v1 memory hierarchy's, else the v2 unified one."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _id, controllers, relative = line.split(":", 2)
        if "memory" in controllers.split(","):
            folder = CGROUP_ROOT / "memory" / relative.lstrip("/")
        elif controllers == "":
            folder = CGROUP_ROOT / relative.lstrip("/")
        else:
            continue
        if (folder / "memory.current").exists() or (folder / "memory.usage_in_bytes").exists():
            return folder
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--cgroup", nargs="?", const="self", metavar="FOLDER",
                        help="also read a cgroup's memory files each sample, as a run in a cgroup does "
                             "(default: this process's own memory cgroup)")
    args = parser.parse_args()
    gpu, why = open_gpu()
    probe = gpu if gpu is not None else FakeGpu()
    folder = own_memory_cgroup() if args.cgroup == "self" else Path(args.cgroup) if args.cgroup else None
    sampler = Sampler(probe, interval_s=args.interval, cgroup_dir=lambda: folder)
    sampler.start()
    time.sleep(args.seconds)
    summary = sampler.stop()
    source = "NVML" if gpu is not None else f"fake GPU ({why or 'no NVML'})"
    print(f"gpu source          {source}")
    print(f"cgroup              {folder or 'none'}")
    print(f"samples             {summary.samples} in {summary.duration_s:.1f} s "
          f"({summary.samples / max(summary.duration_s, 1e-9):.1f} Hz)")
    print(f"sampler CPU         {summary.cpu_s:.4f} s")
    print(f"share of one core   {summary.cpu_pct_of_core:.3f} %  (target < 1 %)")


if __name__ == "__main__":
    main()
