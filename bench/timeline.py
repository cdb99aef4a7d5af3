"""Where one ``sparkreport build`` spends its wall time: each stage's start, end and length.

Prints figures; asserts nothing. Runs ``sparkreport build`` in this process, in the current
folder (a project: its ``sparkreport.yml``, ``runs/``), with a wrapper around each stage that
prints one line to stderr when the stage ends: the process (``*PID`` for a forked one), the
seconds since start at which it began and ended, its length and its name. ``--also
MODULE:FUNCTION`` wraps more (``Class.method`` works too). ``--cpu`` adds, per stage, the CPU
seconds (user + system, and the system's apart) its process spent during it and the page faults it took (a forked
stage's count from its fork), and a last line with the build process's totals and how long it
waited, runnable, for a CPU (``/proc``'s schedstat): on two CPUs, a stage whose CPU is well
under its length waited for its workers or for a CPU. ``--procs`` adds a line per process the
build forks, printed as it ends: its CPU seconds (user, system), page faults and task (a
background task's function, a worker's share function and number), then the sum over every
process, the build's own included: on two CPUs, a build whose CPU is near twice its wall time
cannot be made faster by moving work between processes, only by doing less. The last line
gives the moment the build started on the monotonic clock (``time.perf_counter``), to line the
stages up with a sampler of ``/proc/stat`` run beside it. ``--idle`` runs such a sampler (a
small process reading ``/proc/stat`` every 10 ms, ~1% of a CPU) and ends with the CPU-seconds
left idle machine-wide in each stretch of the build, a stretch ending where a stage of the
build's own process ends: where moving work could still use a CPU, and how far below the wall
time a build with no idle CPU would get (the CPU-seconds used, over the CPUs).

    cd build/bench/n10000/project && python /path/to/bench/timeline.py
    python bench/timeline.py --also sparkreport.render.core:write_page
    python bench/timeline.py --idle
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import importlib
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# This checkout's code, whatever copy of sparkreport is installed (the script runs in a project's folder).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STAGES = [
    ("sparkreport.render.preflight", "refuse_early"),
    ("sparkreport.site", "_walked_and_keyed"),
    ("sparkreport.site", "_Walker.walk"),
    ("sparkreport.site", "_Walker.publish"),
    ("sparkreport.site.incremental", "build_key"),
    ("sparkreport.site", "publish_run_files_beside"),
    ("sparkreport.dataset", "load_dataset"),
    ("sparkreport.render.context", "build_site_data"),
    ("sparkreport.render.core", "read_records_per_campaign"),
    ("sparkreport.render.pagecache", "PageKeys.__init__"),
    ("sparkreport.render.core", "fill_and_write"),
    ("sparkreport.render.core", "_posts_and_svgs"),
    ("sparkreport.render.core", "sync_tree"),
    ("sparkreport.render.core", "_render"),
    ("sparkreport.site.mkdocs_site", "write_config"),
    ("sparkreport.site.builders", "MkDocsBuilder.build"),
    ("sparkreport.site", "publish_steps"),
    ("sparkreport.site.incremental", "save_state"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--also", action="append", default=[], metavar="MODULE:FUNCTION")
    parser.add_argument("--cpu", action="store_true", help="each stage's CPU seconds and page faults too")
    parser.add_argument("--procs", action="store_true", help="each forked process's CPU seconds, as it ends")
    parser.add_argument("--idle", action="store_true", help="the idle CPU-seconds of each stretch of the build")
    args, rest = parser.parse_known_args()
    sampler = Sampler() if args.idle else None
    start, parent = time.perf_counter(), os.getpid()
    ends: list[tuple[float, str]] = []  # the build's own stages: (when each ended, its name)

    def wrap(function: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*a: Any, **k: Any) -> Any:
            began, used = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
            try:
                return function(*a, **k)
            finally:
                ended = time.perf_counter()
                who = "" if os.getpid() == parent else f"*{os.getpid()}"
                if not who:
                    ends.append((ended - start, label))
                cpu = ""
                if args.cpu:
                    now = resource.getrusage(resource.RUSAGE_SELF)
                    cpu = (f"  cpu {now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime:6.3f} s"
                           f" (sys {now.ru_stime - used.ru_stime:5.3f})"
                           f" faults {now.ru_minflt - used.ru_minflt:6d}")
                print(f"[timeline] {who:>8} {began - start:6.3f}–{ended - start:6.3f} {ended - began:6.3f} s"
                      f"{cpu} {label}", file=sys.stderr, flush=True)
        return timed

    stages = [*STAGES, *(tuple(item.rsplit(":", 1)) for item in args.also)]
    for module_name, name in stages:
        owner: Any = importlib.import_module(module_name)
        *path, attribute = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, attribute, wrap(getattr(owner, attribute), f"{module_name.rsplit('.', 1)[-1]}.{name}"))
    collect = count_processes(parent) if args.procs else None
    from sparkreport.cli import entry

    def in_all() -> None:  # an exit handler: the command ends with os._exit once they have run
        if os.getpid() != parent:
            return
        print(f"[timeline] {'':>8} {'':>13} {time.perf_counter() - start:6.3f} s in all "
              f"(started at {start:.4f} s of the monotonic clock)", file=sys.stderr)
        if args.cpu:
            print(f"[timeline] {'':>8} {'':>13} {own_cpu()}", file=sys.stderr, flush=True)
        if collect is not None:
            collect()
            used = resource.getrusage(resource.RUSAGE_SELF)
            print(f"[timeline] {'':>8} {'':>13} {cpu_line(used)}  the build's own process", file=sys.stderr)
            print(f"[timeline] {'':>8} {'':>13} {sum(PROCESS_CPU) + used.ru_utime + used.ru_stime:6.3f} s of CPU "
                  f"in {len(PROCESS_CPU) + 1} processes", file=sys.stderr, flush=True)
        if sampler is not None:
            print(sampler.stretches(start, time.perf_counter() - start, ends), file=sys.stderr, flush=True)

    atexit.register(in_all)
    sys.argv = ["sparkreport", "build", *rest]
    entry()


class Sampler:
    """A process beside the build that reads ``/proc/stat`` every :data:`EVERY` seconds and
    writes, a line each, the moment (``time.perf_counter``: the monotonic clock, the same in
    every process) and how many CPUs were busy since the line before (machine-wide)."""

    EVERY = 0.01
    # (it ends when the build's process does, whatever way that ends: it is its parent's child)
    CODE = """
import os, sys, time
def ticks():
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    return sum(values) - values[3] - values[4], sum(values)
cpus, every, parent = int(sys.argv[1]), float(sys.argv[2]), os.getppid()
busy0, all0 = ticks()
while os.getppid() == parent:
    time.sleep(every)
    busy, all_ = ticks()
    print(f"{time.perf_counter():.4f} {cpus * (busy - busy0) / max(all_ - all0, 1):.3f}", flush=True)
    busy0, all0 = busy, all_
"""

    def __init__(self) -> None:
        import subprocess
        import tempfile

        self.cpus = os.cpu_count() or 1
        self.out = tempfile.TemporaryFile(mode="w+", encoding="ascii")  # noqa: SIM115 (read at the build's end)
        self.process = subprocess.Popen([sys.executable, "-c", self.CODE, str(self.cpus), str(self.EVERY)],
                                        stdout=self.out)
        time.sleep(2 * self.EVERY)  # its first line before the build starts

    def stretches(self, start: float, length: float, ends: list[tuple[float, str]]) -> str:
        """One line: the idle CPU-seconds up to the end of each stage in ``ends`` (seconds since
        ``start``, the build's own stages), from the end of the one before, then in all."""
        self.process.terminate()
        self.process.wait()
        self.out.seek(0)
        samples = []  # (when the slice ended, its length, busy CPUs in it): a slice lasts a little over EVERY
        last = None
        for line in self.out.read().splitlines():
            moment, busy = (float(value) for value in line.split())
            if last is not None:
                samples.append((moment - start, moment - last, busy))
            last = moment
        marks = sorted({end for end, _label in ends if end < length} | {length})
        names = {end: label for end, label in sorted(ends)}
        parts, before, idle_in_all = [], 0.0, 0.0
        for mark in marks:
            idle = sum((self.cpus - busy) * span for moment, span, busy in samples if before < moment <= mark)
            idle_in_all += idle
            parts.append(f"{names.get(mark, 'the end')} {idle:.3f}")
            before = mark
        offered = self.cpus * length
        none_idle = (offered - idle_in_all) / self.cpus
        return (f"[timeline] {'':>8} {'':>13} idle CPU-seconds up to the end of: {', '.join(parts)}; "
                f"in all {idle_in_all:.3f} of {offered:.3f} (with none idle: {none_idle:.3f} s)")


#: The CPU seconds of each forked process that ended (each one reports it through a pipe).
PROCESS_CPU: list[float] = []


def cpu_line(used: Any) -> str:
    return (f"cpu {used.ru_utime + used.ru_stime:6.3f} s (user {used.ru_utime:.3f}, system {used.ru_stime:.3f}) "
            f"faults {used.ru_minflt:6d}")


def count_processes(parent: int) -> Callable[[], None]:
    """Each process the build forks (sparkreport.parallel's workers and background tasks, the
    publish step's forks) prints its CPU when it ends, with os._exit, and sends the figure to
    this one, which adds it to :data:`PROCESS_CPU` when the returned function is called (at
    the end, once every process has ended: no thread reads meanwhile — the build tunes its
    imports only where it runs no other thread)."""
    import sparkreport.parallel as parallel

    reader, writer = os.pipe()
    task = ["a forked process"]
    real_exit = os._exit

    def reported_exit(code: int) -> None:
        if os.getpid() != parent:
            used = resource.getrusage(resource.RUSAGE_SELF)
            print(f"[timeline] {'*' + str(os.getpid()):>8} {'':>13} {cpu_line(used)}  {task[0]}", file=sys.stderr,
                  flush=True)
            os.write(writer, f"{used.ru_utime + used.ru_stime}\n".encode())
        real_exit(code)

    def named(function: Any) -> str:
        function = getattr(function, "func", function)  # a functools.partial's
        return str(getattr(function, "__qualname__", function))

    worker, background = parallel._worker, parallel._background

    def counted_worker(connection: Any, index: int, first: Any, *rest: Any) -> None:
        task[0] = f"worker {named(first)} [{index}]"
        worker(connection, index, first, *rest)

    def counted_background(connection: Any, job: Any, *rest: Any) -> None:
        task[0] = f"background {named(job)}"
        background(connection, job, *rest)

    def collect() -> None:
        os.set_blocking(reader, False)
        with contextlib.suppress(BlockingIOError), os.fdopen(reader, encoding="ascii") as lines:
            PROCESS_CPU.extend(float(line) for line in lines)

    os._exit = reported_exit  # type: ignore[assignment]
    setattr(parallel, "_worker", counted_worker)  # noqa: B010 (a module's private function, replaced)
    setattr(parallel, "_background", counted_background)  # noqa: B010
    return collect


def own_cpu() -> str:
    """This process' CPU seconds, page faults and seconds spent runnable but waiting for a CPU."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    waited = ""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat", encoding="ascii") as stat:
            waited = f", waited {int(stat.read().split()[1]) / 1e9:.3f} s for a CPU"
    except (OSError, ValueError, IndexError):  # not Linux, or no schedstat
        pass
    return (f"this process: user {used.ru_utime:.3f} s, system {used.ru_stime:.3f} s, "
            f"{used.ru_minflt} page faults{waited}")


if __name__ == "__main__":
    main()
