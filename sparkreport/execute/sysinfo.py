"""What the machine is: kernel, OS, CPU, memory pool, GPU — recorded with every run.

Read once per campaign (it does not change between runs); cheap and dependency-free.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from sparkreport.execute.gpu import GpuProbe
from sparkreport.execute.monitor import read_meminfo

#: Run inside the workload's environment (any Python ≥ 3.8) to list its packages.
PACKAGES_PROBE = (
    "import json, platform, importlib.metadata as m; "
    "print('SPARKREPORT-PACKAGES ' + json.dumps({'python': platform.python_version(), "
    "'packages': {d.metadata['Name']: d.version for d in m.distributions() if d.metadata['Name']}}, "
    "sort_keys=True))"
)


def os_release() -> str | None:
    """PRETTY_NAME from /etc/os-release."""
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


def cpu_model() -> str | None:
    """The CPU model name from /proc/cpuinfo (first one; Arm boards may have none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def cpu_busy_pct(interval_s: float = 0.5) -> float | None:
    """Whole-machine CPU use over ``interval_s`` from /proc/stat."""
    def read() -> tuple[int, int] | None:
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return idle, sum(fields)

    first = read()
    time.sleep(interval_s)
    second = read()
    if first is None or second is None or second[1] == first[1]:
        return None
    return 100.0 * (1.0 - (second[0] - first[0]) / (second[1] - first[1]))


def host_facts(gpu: GpuProbe | None) -> dict[str, Any]:
    """Kernel, OS, CPU, memory pool and (when there is one) the GPU's static facts."""
    mem = read_meminfo()
    facts: dict[str, Any] = {
        "kernel": platform.release(),
        "os": os_release(),
        "arch": platform.machine(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "mem_total_gib": round(mem["MemTotal"] / 2**30, 3) if "MemTotal" in mem else None,
        "runner_python": sys.version.split()[0],
    }
    if gpu is not None:
        facts.update(gpu.static_info())
    return facts
