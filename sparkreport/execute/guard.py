"""The run guard: a campaign must never take the machine down.

Three protections, all set in the campaign's ``guard:`` block (:class:`~sparkreport.execute.campaign.Guard`):

- **Memory floor.** At every sampler tick (10 Hz by default, the same /proc/meminfo read the
  monitor makes) MemAvailable is compared with ``min_available_gib`` and, where NVML reports
  device memory, the GPU's free memory with ``gpu_min_free_gib``. Below a floor the run's whole
  process tree is killed at once (SIGKILL to its process group, cgroup or container): on a
  unified-memory machine (GB10) an allocation that eats the pool does not fail cleanly, it
  freezes the kernel, the runner and its journal with it.
- **Stall.** A run that shows no progress signal for ``stall_s`` is killed. The signals
  (``stall_signals``) are: its output growing (the step's log; a container's log file), the GPU
  busy (steps that use the GPU; NVML utilisation ≥ 1 %), and its processes using CPU (≥ 2 % of a
  core over the check interval). Loading a 70B model prints nothing for minutes but reads and
  copies at full speed, so it counts as progress; a process blocked on a lock or a dead socket
  shows none. A deadlock that spins (CUDA-graph + all-reduce busy-waiting) looks busy and is left
  to ``timeout_s``.
- **OOM order.** Benchmark processes get ``oom_score_adj`` 1000 (any user may raise its own); the
  runner — its journal writer and sampler are threads of it — gets −900 when it runs as root (the
  kernel then picks it only when it holds 90 % of memory itself, i.e. when the runner is the
  leak), and keeps its value otherwise. What was set is recorded per run.

A run the guard stops is a failed run whose reason names the guard and the value seen; its
``workload.details.guard.event`` says which guard (``memory-floor`` or ``stall``), for ``check``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparkreport.execute.campaign import Guard
    from sparkreport.execute.environments import Execution
    from sparkreport.schema import RunRecord

BENCHMARK_OOM_SCORE_ADJ = 1000
RUNNER_OOM_SCORE_ADJ = -900
#: Seconds between two stall checks (the floor is checked at every sample).
STALL_CHECK_S = 1.0
#: CPU time of the run's processes, as a share of one core over a check interval, that counts as progress.
CPU_PROGRESS_SHARE = 0.02
#: NVML utilisation (%) at or above which the GPU counts as busy.
GPU_BUSY_PCT = 1.0
#: What `check` and the summary line call each guard.
GUARD_NAMES = {"memory-floor": "stopped by the memory floor", "stall": "stalled"}

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProgressMark:
    """What a running step has done so far: bytes of output, CPU seconds of its processes."""

    output_bytes: int | None = None
    cpu_s: float | None = None


@dataclass(frozen=True)
class GuardEvent:
    """A guard stopped the run: which one, why (one line), when, and the value it saw."""

    kind: str  # "memory-floor" or "stall"
    reason: str
    t_s: float
    value: float | None = None
    limit: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``workload.details.guard.event``)."""
        return asdict(self)


# --------------------------------------------------------------------------- processes


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode(errors="replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def tree_cpu_s(root: int) -> float | None:
    """CPU seconds (user + system, reaped children included) of ``root``, its descendants and its
    session (a step runs as a session leader, so a daemonised grandchild still counts)."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    session: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for name in entries:
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if fields is None or len(fields) < 15 or fields[0] in ("Z", "X"):
            continue  # a zombie is done: it neither progresses nor holds the step alive
        pid = int(name)
        parents[pid] = int(fields[1])
        if int(fields[3]) == root:
            session.add(pid)
        cpu[pid] = sum(int(f) for f in fields[11:15]) / _CLK_TCK
    if root not in cpu and not session:
        return None
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    members, todo = set(session), [root]
    while todo:
        pid = todo.pop()
        if pid in members and pid != root:
            continue
        members.add(pid)
        todo.extend(children.get(pid, []))
    return sum(cpu.get(pid, 0.0) for pid in members)


def read_oom_score_adj(pid: int | str = "self") -> int | None:
    """``/proc/<pid>/oom_score_adj`` (None when unreadable)."""
    try:
        return int(Path(f"/proc/{pid}/oom_score_adj").read_text().strip())
    except (OSError, ValueError):
        return None


def set_oom_score_adj(value: int, pid: int | str = "self") -> bool:
    """Write ``oom_score_adj``; False when the kernel refuses (lowering it needs root)."""
    try:
        Path(f"/proc/{pid}/oom_score_adj").write_text(str(value))
    except OSError:
        return False
    return True


def protect_runner() -> tuple[int | None, int | None]:
    """Lower the runner's OOM priority (root only); returns (value before, value now)."""
    before = read_oom_score_adj()
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        set_oom_score_adj(RUNNER_OOM_SCORE_ADJ)
    return before, read_oom_score_adj()


def guard_event_of(record: RunRecord) -> dict[str, Any] | None:
    """The guard event recorded in a run (None when no guard stopped it)."""
    guard = record.workload.details.get("guard")
    event = guard.get("event") if isinstance(guard, dict) else None
    return event if isinstance(event, dict) else None


# --------------------------------------------------------------------------- the watch


class RunGuard:
    """Watches one run: :meth:`observe` is called with every sampler row (sampler thread); a
    breach kills the watched step at once and leaves :attr:`event` set for the runner."""

    def __init__(self, settings: Guard, gpu_total_gib: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.settings = settings
        self.gpu_total_gib = gpu_total_gib
        self.clock = clock
        self.event: GuardEvent | None = None
        self._lock = threading.Lock()
        self._execution: Execution | None = None
        self._uses_gpu = False
        self._t0 = clock()
        self._last_check = 0.0
        self._last_progress = 0.0
        self._last_output: int | None = None
        self._last_cpu: float | None = None
        self._gpu_busy = False

    def describe(self) -> dict[str, Any]:
        """The settings as run.json records them."""
        s = self.settings
        return {"min_available_gib": s.min_available_gib, "gpu_min_free_gib": s.gpu_min_free_gib,
                "gpu_floor_active": s.gpu_min_free_gib is not None and self.gpu_total_gib is not None,
                "stall_s": s.stall_s, "stall_signals": list(s.stall_signals), "on_breach": s.on_breach}

    def watch(self, execution: Execution, uses_gpu: bool) -> None:
        """Start watching one step (its stall clock starts now)."""
        with self._lock:
            self._execution = execution
            self._uses_gpu = uses_gpu
            now = self.clock()
            self._last_check = self._last_progress = now
            mark = execution.progress()
            self._last_output, self._last_cpu = mark.output_bytes, mark.cpu_s
            self._gpu_busy = False

    def before_start(self, row: dict[str, Any]) -> GuardEvent | None:
        """Check the floors once with ``row`` (:func:`~sparkreport.execute.monitor.memory_now`,
        read just before a step starts). A floor crossed already stops the run before its step
        starts: the sampler's ticks see only what runs between them, and a step shorter than one
        interval (a quick command, a failing launch) ran to its end unchecked."""
        with self._lock:
            if self.event is None:
                self.event = self._floor(row, self.clock())
            return self.event

    def unwatch(self) -> None:
        """The step ended: nothing to kill until the next :meth:`watch`."""
        with self._lock:
            self._execution = None

    def observe(self, row: dict[str, Any]) -> None:
        """Check one sampler row against the floors, and the step's progress once a second."""
        with self._lock:
            execution = self._execution
            if execution is None or self.event is not None:
                return
            now = self.clock()
            event = self._floor(row, now) or self._stall(row, execution, now)
            if event is None:
                return
            self.event = event
        execution.kill_now()

    def _floor(self, row: dict[str, Any], now: float) -> GuardEvent | None:
        s, t = self.settings, now - self._t0
        available = row.get("mem_available_gib")
        if s.min_available_gib is not None and isinstance(available, float | int) and available < s.min_available_gib:
            return GuardEvent("memory-floor", f"memory floor: MemAvailable {available:.1f} GiB < "
                              f"{s.min_available_gib:.1f} GiB at {t:.1f} s", round(t, 3),
                              round(float(available), 4), s.min_available_gib)
        used = row.get("gpu_mem_used_gib")
        if (s.gpu_min_free_gib is not None and self.gpu_total_gib is not None
                and row.get("gpu_mem_source") == "nvml" and isinstance(used, float | int)):
            free = self.gpu_total_gib - used
            if free < s.gpu_min_free_gib:
                return GuardEvent("memory-floor", f"memory floor: GPU free memory {free:.1f} GiB < "
                                  f"{s.gpu_min_free_gib:.1f} GiB at {t:.1f} s", round(t, 3),
                                  round(free, 4), s.gpu_min_free_gib)
        return None

    def _stall(self, row: dict[str, Any], execution: Execution, now: float) -> GuardEvent | None:
        s = self.settings
        if s.stall_s is None:
            return None
        util = row.get("gpu_util_pct")
        if isinstance(util, float | int) and util >= GPU_BUSY_PCT:
            self._gpu_busy = True
        if now - self._last_check < STALL_CHECK_S:
            return None
        mark = execution.progress()
        signals = s.stall_signals
        progressed = False
        if "output" in signals and mark.output_bytes is not None:
            progressed |= self._last_output is not None and mark.output_bytes > self._last_output
            self._last_output = mark.output_bytes
        if "gpu" in signals and self._uses_gpu:
            progressed |= self._gpu_busy
        if "cpu" in signals and mark.cpu_s is not None:
            if self._last_cpu is not None:
                progressed |= mark.cpu_s - self._last_cpu >= CPU_PROGRESS_SHARE * (now - self._last_check)
            self._last_cpu = mark.cpu_s
        self._gpu_busy = False
        self._last_check = now
        if progressed:
            self._last_progress = now
            return None
        quiet = now - self._last_progress
        if quiet < s.stall_s:
            return None
        signs = [text for name, text in (("output", "no output"), ("gpu", "GPU idle"), ("cpu", "no CPU use"))
                 if name in signals and (name != "gpu" or self._uses_gpu)]
        said = signs[0] if len(signs) == 1 else ", ".join(signs[:-1]) + " and " + signs[-1]
        t = now - self._t0
        return GuardEvent("stall", f"stalled: {said} for {quiet:.0f} s", round(t, 3), round(quiet, 3), s.stall_s)

