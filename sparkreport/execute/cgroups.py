"""Linux control groups: find, create, read and remove them, v2 or v1 alike.

Memory figures are normalised to one shape whatever the version: ``current``, ``peak``,
``anon``, ``file``, ``shmem`` (bytes), plus ``limit`` and the OOM-kill count when known.
cgroup v2 names: memory.current / memory.peak / memory.stat (anon, file, shmem); v1 names:
memory.usage_in_bytes / memory.max_usage_in_bytes / memory.stat (total_rss, total_cache,
total_shmem). A figure the kernel does not give stays missing.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

CGROUP_ROOT = Path("/sys/fs/cgroup")
Version = Literal["v1", "v2"]
_NO_LIMIT = 1 << 60  # v1 prints a huge number for "unlimited"


def version(root: Path = CGROUP_ROOT) -> Version | None:
    """'v2' on a unified hierarchy, 'v1' where only the v1 memory controller is mounted."""
    if (root / "cgroup.controllers").exists():
        return "v2"
    if (root / "memory" / "memory.usage_in_bytes").exists():
        return "v1"
    return None


def memory_root(root: Path = CGROUP_ROOT) -> Path | None:
    """The folder under which memory cgroups are made (the v1 memory mount, or the v2 root)."""
    found = version(root)
    if found == "v2":
        return root
    if found == "v1":
        return root / "memory"
    return None


def dir_of_pid(pid: int, root: Path = CGROUP_ROOT) -> Path | None:
    """The memory cgroup folder a process lives in, from ``/proc/<pid>/cgroup``."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    found = version(root)
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if found == "v2" and hierarchy == "0" and controllers == "":
            return root / path.lstrip("/")
        if found == "v1" and "memory" in controllers.split(","):
            return root / "memory" / path.lstrip("/")
    return None


def _int(path: Path) -> int | None:
    try:
        return _parse_int(path.read_text())
    except OSError:
        return None


def _parse_int(text: str) -> int | None:
    text = text.strip()
    if text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value >= _NO_LIMIT else value


def _stat(path: Path) -> dict[str, int]:
    try:
        return _parse_stat(path.read_text())
    except OSError:
        return {}


def _parse_stat(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            out[key] = int(value)
    return out


@dataclass(frozen=True)
class MemoryStats:
    """One reading of a cgroup's memory accounting, in bytes (None: not given)."""

    current: int | None = None
    peak: int | None = None
    anon: int | None = None
    file: int | None = None
    shmem: int | None = None
    limit: int | None = None
    oom_kills: int | None = None

    def to_gib(self) -> dict[str, float | int | None]:
        """The figures in GiB (OOM-kill count unchanged), for run.json."""
        def gib(value: int | None) -> float | None:
            return None if value is None else round(value / 2**30, 4)

        return {"current_gib": gib(self.current), "peak_gib": gib(self.peak),
                "anon_gib": gib(self.anon), "file_gib": gib(self.file),
                "shmem_gib": gib(self.shmem), "limit_gib": gib(self.limit),
                "oom_kills": self.oom_kills}


def read_memory(folder: Path) -> MemoryStats:
    """Read a cgroup folder's memory figures (v2 names first, then v1)."""
    if (folder / "memory.current").exists():
        stat = _stat(folder / "memory.stat")
        events = _stat(folder / "memory.events")
        return MemoryStats(current=_int(folder / "memory.current"), peak=_int(folder / "memory.peak"),
                           anon=stat.get("anon"), file=stat.get("file"), shmem=stat.get("shmem"),
                           limit=_int(folder / "memory.max"), oom_kills=events.get("oom_kill"))
    if (folder / "memory.usage_in_bytes").exists():
        stat = _stat(folder / "memory.stat")
        return MemoryStats(current=_int(folder / "memory.usage_in_bytes"),
                           peak=_int(folder / "memory.max_usage_in_bytes"),
                           anon=stat.get("total_rss", stat.get("rss")),
                           file=stat.get("total_cache", stat.get("cache")),
                           shmem=stat.get("total_shmem", stat.get("shmem")),
                           limit=_int(folder / "memory.limit_in_bytes"),
                           oom_kills=_stat(folder / "memory.oom_control").get("oom_kill"))
    return MemoryStats()


class MemoryReader:
    """A cgroup's usage, peak and memory.stat breakdown, read at sampling rate.

    The three files stay open and each reading is one ``pread`` per file (cgroup and proc files
    regenerate their contents when read from offset 0): at 10 Hz, opening six files per sample
    as :func:`read_memory` does cost the sampler about half a percent of a core. Limit and
    OOM kills, which the run reads once, are left to :func:`read_memory`.
    """

    def __init__(self, folder: Path):
        self.folder = folder
        self.v2 = (folder / "memory.current").exists()
        names = (("current", "memory.current"), ("peak", "memory.peak")) if self.v2 else (
            ("current", "memory.usage_in_bytes"), ("peak", "memory.max_usage_in_bytes"))
        self._fds: dict[str, int] = {}
        for key, name in (*names, ("stat", "memory.stat")):
            with contextlib.suppress(OSError):
                self._fds[key] = os.open(folder / name, os.O_RDONLY)

    def _text(self, key: str) -> str:
        fd = self._fds.get(key)
        if fd is None:
            return ""
        try:
            return os.pread(fd, 1 << 16, 0).decode(errors="replace")
        except OSError:  # the cgroup was removed under us
            return ""

    def read(self) -> MemoryStats:
        stat = _parse_stat(self._text("stat"))
        current, peak = _parse_int(self._text("current")), _parse_int(self._text("peak"))
        if self.v2:
            return MemoryStats(current=current, peak=peak, anon=stat.get("anon"), file=stat.get("file"),
                               shmem=stat.get("shmem"))
        return MemoryStats(current=current, peak=peak, anon=stat.get("total_rss", stat.get("rss")),
                           file=stat.get("total_cache", stat.get("cache")),
                           shmem=stat.get("total_shmem", stat.get("shmem")))

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


def create(name: str, memory_limit: int | None = None, root: Path = CGROUP_ROOT) -> Path:
    """Make ``sparkreport/<name>`` with the memory controller on, and set its limit.

    Raises OSError when the hierarchy cannot be written (not root, read-only mount).
    """
    base = memory_root(root)
    if base is None:
        raise OSError(f"no cgroup memory controller under {root}")
    parent = base / "sparkreport"
    parent.mkdir(exist_ok=True)
    if version(root) == "v2":
        _enable_memory(base)
        _enable_memory(parent)
    folder = parent / name
    folder.mkdir()
    if memory_limit is not None:
        limit_file = "memory.max" if version(root) == "v2" else "memory.limit_in_bytes"
        (folder / limit_file).write_text(str(memory_limit))
    return folder


def _enable_memory(folder: Path) -> None:
    control = folder / "cgroup.subtree_control"
    if "memory" not in control.read_text().split():
        control.write_text("+memory")


def join(folder: Path, pid: int | None = None) -> None:
    """Move a process (default: the caller) into the cgroup ``folder``."""
    (folder / "cgroup.procs").write_text(str(pid if pid is not None else os.getpid()))


def pids(folder: Path) -> list[int]:
    """The processes in a cgroup (empty when it is gone)."""
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def kill_all(folder: Path) -> None:
    """SIGKILL every process of the cgroup (``cgroup.kill`` on v2 where the kernel has it)."""
    kill_file = folder / "cgroup.kill"
    if kill_file.exists():
        with contextlib.suppress(OSError):
            kill_file.write_text("1")
            return
    import signal

    for pid in pids(folder):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def remove(folder: Path, wait_s: float = 5.0) -> None:
    """Remove an (emptied) cgroup folder, waiting briefly for exiting processes to leave."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                kill_all(folder)
                with contextlib.suppress(OSError):
                    time.sleep(0.2)
                    folder.rmdir()
                return
            time.sleep(0.05)
