"""Where one ``sparkreport build`` spends its wall time: each stage's start, end and length.

Prints figures; asserts nothing. Runs ``sparkreport build`` in this process, in the current
folder (a project: its ``sparkreport.yml``, ``runs/``), with a wrapper around each stage that
prints one line to stderr when the stage ends: the process (``*PID`` for a forked one), the
seconds since start at which it began and ended, its length and its name. ``--also
MODULE:FUNCTION`` wraps more (``Class.method`` works too).

    cd build/bench/n10000/project && python /path/to/bench/timeline.py
    python bench/timeline.py --also sparkreport.render.core:write_page
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
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
    args, rest = parser.parse_known_args()
    start, parent = time.perf_counter(), os.getpid()

    def wrap(function: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*a: Any, **k: Any) -> Any:
            began = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                ended = time.perf_counter()
                who = "" if os.getpid() == parent else f"*{os.getpid()}"
                print(f"[timeline] {who:>8} {began - start:6.3f}–{ended - start:6.3f} {ended - began:6.3f} s {label}",
                      file=sys.stderr, flush=True)
        return timed

    stages = [*STAGES, *(tuple(item.rsplit(":", 1)) for item in args.also)]
    for module_name, name in stages:
        owner: Any = importlib.import_module(module_name)
        *path, attribute = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, attribute, wrap(getattr(owner, attribute), f"{module_name.rsplit('.', 1)[-1]}.{name}"))
    from sparkreport.cli import entry

    sys.argv = ["sparkreport", "build", *rest]
    try:
        entry()
    finally:
        print(f"[timeline] {'':>8} {'':>13} {time.perf_counter() - start:6.3f} s in all", file=sys.stderr)


if __name__ == "__main__":
    main()
