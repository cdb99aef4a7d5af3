"""Independent pieces of a build, spread over forked processes.

A cold build at 10 000 runs spends most of its time in work that splits into independent
pieces (the builder's Markdown conversion of a thousand pages, the copies of twenty thousand
run files), on one core. :func:`fork_map` runs such pieces in worker processes forked from the
build, so each worker starts with everything already loaded (the MkDocs config, the page list)
and only the results travel back, in order.

How many workers: ``SPARKREPORT_JOBS`` when set (``1``: none, everything in the build's own
process), else the number of CPUs this process may use. Workers are forked, so this is done
only on Linux; elsewhere, with one CPU, or for a handful of pieces, everything runs in the
build's own process, with the same result (tests compare both byte for byte).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sparkreport.errors import BuildError

JOBS_ENV = "SPARKREPORT_JOBS"
T = TypeVar("T")

#: The task of the running :func:`fork_map`: workers inherit it through fork (a closure cannot
#: be pickled; its index can).
_TASK: Callable[[int], Any] | None = None


def jobs() -> int:
    """The workers a build may use: ``SPARKREPORT_JOBS``, else the CPUs this process may run on."""
    value = os.environ.get(JOBS_ENV, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise BuildError(f"{JOBS_ENV}={value!r}: must be a whole number of at least 1 — "
                             f"unset it to use every CPU, or set 1 to build in one process")
        return int(value)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    """Workers are forked; only where fork is the platform's own (Linux)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def workers_for(count: int, *, minimum: int = 2) -> int:
    """How many workers ``count`` pieces get: none (0) below ``minimum`` pieces, with one job
    allowed or without fork; else up to :func:`jobs`, never more than the pieces."""
    allowed = jobs()
    if allowed < 2 or count < max(2, minimum) or not can_fork():
        return 0
    return min(allowed, count)


def _run(index: int) -> Any:
    assert _TASK is not None
    return _TASK(index)


def fork_map(task: Callable[[int], T], count: int, workers: int) -> list[T]:
    """``[task(0), …, task(count - 1)]``, computed in ``workers`` forked processes (in this
    process when ``workers`` is below 2). An exception in a worker is raised here."""
    global _TASK
    if workers < 2 or count < 2:
        return [task(index) for index in range(count)]
    import multiprocessing

    _TASK = task
    try:
        with multiprocessing.get_context("fork").Pool(processes=min(workers, count)) as pool:
            return pool.map(_run, range(count), chunksize=1)
    finally:
        _TASK = None


def split(items: Sequence[T], pieces: int) -> list[Sequence[T]]:
    """``items`` in ``pieces`` contiguous runs of nearly equal length (none empty)."""
    pieces = max(1, min(pieces, len(items)))
    size, extra = divmod(len(items), pieces)
    out: list[Sequence[T]] = []
    start = 0
    for index in range(pieces):
        end = start + size + (1 if index < extra else 0)
        out.append(items[start:end])
        start = end
    return out
