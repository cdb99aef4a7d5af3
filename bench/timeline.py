"""Where one ``sparkreport build`` spends its wall time: each stage's start, end and length.

Prints figures; asserts nothing. Runs ``sparkreport build`` in this process, in the current
folder (a project: its ``sparkreport.yml``, ``runs/``), with a wrapper around each stage that
prints one line to stderr when the stage ends: the process (``*PID`` for a forked one), the
seconds since start at which it began and ended, its length and its name. ``--also
MODULE:FUNCTION`` wraps more (``Class.method`` works too). ``--cpu`` adds, per stage, the CPU
seconds (user + system) its process spent during it and the page faults it took (a forked
stage's count from its fork), and a last line with the build process's totals and how long it
waited, runnable, for a CPU (``/proc``'s schedstat): on two CPUs, a stage whose CPU is well
under its length waited for its workers or for a CPU.

    cd build/bench/n10000/project && python /path/to/bench/timeline.py
    python bench/timeline.py --also sparkreport.render.core:write_page
"""

from __future__ import annotations

import argparse
import atexit
import functools
import importlib
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

STAGES = [
    ("sparkreport.render.preflight", "refuse_early"),
    ("sparkreport.site", "_walked_and_keyed"),
    ("sparkreport.site", "_walk_and_key"),
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
    args, rest = parser.parse_known_args()
    start, parent = time.perf_counter(), os.getpid()

    def wrap(function: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*a: Any, **k: Any) -> Any:
            began, used = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
            try:
                return function(*a, **k)
            finally:
                ended = time.perf_counter()
                who = "" if os.getpid() == parent else f"*{os.getpid()}"
                cpu = ""
                if args.cpu:
                    now = resource.getrusage(resource.RUSAGE_SELF)
                    cpu = (f"  cpu {now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime:6.3f} s"
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
    from sparkreport.cli import entry

    def in_all() -> None:  # an exit handler: the command ends with os._exit once they have run
        if os.getpid() != parent:
            return
        print(f"[timeline] {'':>8} {'':>13} {time.perf_counter() - start:6.3f} s in all", file=sys.stderr)
        if args.cpu:
            print(f"[timeline] {'':>8} {'':>13} {own_cpu()}", file=sys.stderr, flush=True)

    atexit.register(in_all)
    sys.argv = ["sparkreport", "build", *rest]
    entry()


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
