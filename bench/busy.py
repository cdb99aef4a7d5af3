"""How busy the machine's CPUs are while one ``sparkreport build`` runs, slice by slice.

Prints figures; asserts nothing. Runs ``python -m sparkreport build`` (this checkout's code) as a
child in the current folder (a project), reads ``/proc/stat`` every ``--every`` seconds and
prints one line a slice: the seconds since the start, a bar and how many CPUs were busy in it
(machine-wide: another load on the machine counts too). Then the CPU seconds used and those left
idle while the build ran: on two CPUs, a slice near 1.0 is a stretch where one process holds
the build's path alone, and where the idle seconds lie is where moving work could still help
(:mod:`bench.timeline` names the stages; ``--procs`` there, each process's CPU).

    cd build/bench/n10000/project && python /path/to/bench/busy.py
    python /path/to/bench/busy.py --every 0.02 -- --strict
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_ticks() -> tuple[int, int]:
    """(busy, all) clock ticks of every CPU together since boot (``/proc/stat``'s first line)."""
    with open("/proc/stat", encoding="ascii") as stat:
        values = [int(value) for value in stat.readline().split()[1:]]
    idle = values[3] + values[4]  # idle and iowait
    return sum(values) - idle, sum(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=float, default=0.05, help="seconds a slice (default 0.05)")
    parser.add_argument("rest", nargs="*", help="more arguments for `sparkreport build`, after --")
    args = parser.parse_args()
    cpus = os.cpu_count() or 1
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    busy_before, all_before = cpu_ticks()
    child = subprocess.Popen([sys.executable, "-m", "sparkreport", "build", *args.rest], env=env,
                             stdout=subprocess.DEVNULL)
    slices: list[tuple[float, float]] = []
    while child.poll() is None:
        time.sleep(args.every)
        busy, every = cpu_ticks()
        slices.append((time.perf_counter() - start, cpus * (busy - busy_before) / max(every - all_before, 1)))
        busy_before, all_before = busy, every
    wall = time.perf_counter() - start
    for at, used in slices:
        print(f"{at:6.2f} {'#' * round(used * 20):<{20 * cpus}} {used:4.2f}")
    used = sum(share for _at, share in slices) * args.every
    print(f"{wall:.2f} s: {used:.2f} CPU seconds used, {cpus * wall - used:.2f} left idle "
          f"({cpus} CPUs; the build exited {child.returncode})")


if __name__ == "__main__":
    main()
