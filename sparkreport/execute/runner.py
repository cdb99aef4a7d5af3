"""Run a campaign: plan → pre-flight → for each cell: cooldown, cache, run, monitor, record.

Each finished cell becomes one run folder, written atomically by :class:`RunStore`; a crashed,
failed or timed-out run is recorded too (``status.ok = false`` with its log) and the campaign
goes on. ``_campaign/`` beside the runs keeps the campaign file, the plan (order and seed) and
a journal (one JSON line per event), so ``--resume`` after SIGINT, SIGTERM or kill -9 runs
exactly the cells that have no folder yet.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import click

from sparkreport import __version__
from sparkreport import metrics as metric_catalog
from sparkreport.early import check_writable
from sparkreport.errors import SparkreportError
from sparkreport.execute.campaign import Campaign
from sparkreport.execute.cooldown import wait_for_cooldown
from sparkreport.execute.envcapture import (
    SECRET_NAME,
    capture_env,
    is_allowed,
    known_secrets,
    scrub_env_lines,
    structure_secrets,
)
from sparkreport.execute.environments import ENVIRONMENTS, ExecEnvironment, Execution, Launch, Outcome
from sparkreport.execute.gpu import GpuProbe, open_gpu
from sparkreport.execute.guard import (
    BENCHMARK_OOM_SCORE_ADJ,
    GUARD_NAMES,
    RunGuard,
    guard_event_of,
    protect_runner,
    set_oom_score_adj,
)
from sparkreport.execute.ledger import build_ledger
from sparkreport.execute.monitor import MonitorSummary, Sampler, busy_span_metrics, memory_now, read_meminfo
from sparkreport.execute.plan import Cell, Plan, estimate_seconds, format_duration, make_plan
from sparkreport.execute.preflight import Check, run_preflight
from sparkreport.execute.redact import redact_argv, redact_text
from sparkreport.execute.sysinfo import PACKAGES_PROBE, host_facts
from sparkreport.execute.workloads import WORKLOADS, BaseWorkload, Step, WorkloadResult
from sparkreport.schema import (
    OWN_FORMAT_PREFIX,
    Environment,
    Hardware,
    Model,
    Provenance,
    RunRecord,
    Software,
    Status,
    Workload,
)
from sparkreport.store import RawFile, RunStore

META_DIR = "_campaign"
WORK_DIR = ".work"
GpuFactory = Callable[[int], tuple[GpuProbe | None, str | None]]


@dataclass
class RunOptions:
    """How to run a campaign (the CLI's flags)."""

    runs_dir: Path = Path("runs")
    dry_run: bool = False
    resume: bool = False
    quiet: bool = False
    progress: bool | None = None


@dataclass
class CampaignReport:
    """What a campaign invocation did."""

    planned: int = 0
    written: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # --cluster: the node or worker died; --resume reruns them
    #: Runs a guard stopped, by guard (``memory-floor``, ``stall``); they are in ``failed`` too.
    guarded: dict[str, list[str]] = field(default_factory=dict)
    #: With ``guard.on_breach: stop``: the run whose breach stopped the campaign, and why.
    stopped: str | None = None
    interrupted: bool = False
    estimate_s: float = 0.0

    @property
    def complete(self) -> bool:
        """True when every planned cell has a folder and none is missing a capability."""
        return (not self.unavailable and not self.interrupted and not self.skipped and not self.lost
                and self.stopped is None)

    def note_guard(self, run_id: str, event: dict[str, Any] | None) -> None:
        """Count a run a guard stopped."""
        if event is not None:
            self.guarded.setdefault(str(event.get("kind")), []).append(run_id)

    def summary_parts(self) -> list[str]:
        """The summary line's counts: ok, failed (other than by a guard), then per guard."""
        by_guard = sum(len(ids) for ids in self.guarded.values())
        parts = [f"{len(self.written)} ok", f"{len(self.failed) - by_guard} failed"]
        parts += [f"{len(self.guarded[kind])} {GUARD_NAMES.get(kind, f'stopped by {kind}')}"
                  for kind in GUARD_NAMES if self.guarded.get(kind)]
        return parts


def utc_now() -> str:
    """The time now, UTC, ISO 8601 with a Z."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class Journal:
    """Append-only JSON lines, flushed and synced per event (survives kill -9)."""

    def __init__(self, path: Path, secrets: list[str] | None = None):
        self.path = path
        #: Known secret values scrubbed from every line (credential shapes always are).
        self.secrets = secrets or []

    def write(self, event: str, **data: Any) -> None:
        """Append one event (secrets scrubbed)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = redact_text(json.dumps({"t": utc_now(), "event": event, **data}, sort_keys=True), self.secrets)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def events(self) -> Iterator[dict[str, Any]]:
        """Every event so far (a torn last line is skipped)."""
        if not self.path.exists():
            return
        for line in self.path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                yield json.loads(line)


class Progress:
    """A one-line progress bar with ETA on a TTY; nothing otherwise."""

    def __init__(self, total: int, enabled: bool):
        self.total = total
        self.enabled = enabled
        self.start = time.monotonic()
        self.done = 0

    def show(self, label: str, remaining_s: float | None = None) -> None:
        """Redraw the bar with ``label`` (the cell or the wait in progress)."""
        if not self.enabled:
            return
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        eta = f"ETA {format_duration(remaining_s)}" if remaining_s is not None else ""
        line = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {label} {eta}"
        click.echo("\r" + line[:150].ljust(150), nl=False)

    def clear(self) -> None:
        """Erase the bar (before printing a normal line)."""
        if self.enabled:
            click.echo("\r" + " " * 150 + "\r", nl=False)


class Interrupted(KeyboardInterrupt):  # not Exception: no `except Exception` may swallow it
    """SIGINT or SIGTERM (``signum``) arrived during a run. A KeyboardInterrupt, so that one raised
    where Python cannot pass it on (a fork hook) is sent again by the command line's hook
    (``cli._stop_signals_raise``) rather than printed as "Exception ignored"."""

    def __init__(self, signum: int | None = None):
        super().__init__()
        self.signum = signum


class CampaignRunner:
    """Runs one campaign into a run store (all collaborators injectable for tests)."""

    def __init__(self, campaign: Campaign, options: RunOptions, gpu_factory: GpuFactory = open_gpu,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 cpu_load: Callable[[], float | None] | None = None):
        self.campaign = campaign
        self.options = options
        self.gpu_factory = gpu_factory
        self.clock = clock
        self.sleep = sleep
        self.cpu_load = cpu_load
        # Absolute: workloads run with their work folder as cwd, and inside chroot/docker.
        self.store = RunStore(Path(options.runs_dir).absolute())
        self.folder = self.store.root / campaign.name
        self.meta = self.folder / META_DIR
        self.workload: BaseWorkload = WORKLOADS[campaign.workload.kind](campaign.workload)
        self.environments: dict[str, ExecEnvironment] = {
            spec.name: ENVIRONMENTS[spec.kind](spec) for spec in campaign.environments}
        self.secrets = self.known_secrets(dict(os.environ))
        self.journal = Journal(self.meta / "journal.jsonl", self.secrets)
        self.report = CampaignReport()
        self.gpu: GpuProbe | None = None
        self.current: Execution | None = None
        self.signal: int | None = None
        self.packages: dict[str, dict[str, Any]] = {}
        self.preflight_warnings: list[str] = []
        self.host: dict[str, Any] = {}
        self.oom: dict[str, int | None] = {}
        self.progress = Progress(0, enabled=False)

    # ------------------------------------------------------------------ output

    def say(self, text: str) -> None:
        """A progress line (silenced by --quiet)."""
        if not self.options.quiet:
            self.progress.clear()
            click.echo(text)

    def warn(self, text: str) -> None:
        """A warning line (always shown, on stderr)."""
        self.progress.clear()
        click.echo(f"warning: {text}", err=True)

    # ------------------------------------------------------------------ plan

    def plan(self) -> Plan:
        """The campaign's plan: the stored one when resuming, else a new one."""
        stored = self.meta / "plan.json"
        existing = self.stored_runs()
        if self.options.resume and stored.exists():
            plan = Plan.load(stored)
            if plan.campaign_sha256 != self.campaign.sha256:
                raise SparkreportError(
                    f"{self.campaign.path}: changed since {self.folder} was planned — restore it, or run "
                    "it under a new `campaign:` name (a changed campaign is a new campaign)")
            return plan
        if existing and not self.options.dry_run:
            raise SparkreportError(
                f"{self.folder} already holds {len(existing)} run(s) of this campaign — pass --resume to "
                "finish it, or choose another `campaign:` name")
        return make_plan(self.campaign)

    def stored_runs(self) -> list[Path]:
        """The run.json files already in this campaign's folder."""
        return [p for p in self.store.run_files() if p.parent.parent == self.folder]

    def pending(self) -> tuple[Plan, list[Cell]]:
        """The plan and its cells not stored yet; records the counts and the estimate in the report."""
        plan = self.plan()
        done = {p.parent.name for p in self.stored_runs()}
        pending = [c for c in plan.cells if c.run_id not in done]
        self.report.planned = len(plan.cells)
        self.report.already = [c.run_id for c in plan.cells if c.run_id in done]
        self.report.estimate_s = self.estimate(pending)
        return plan, pending

    def estimate(self, cells: list[Cell]) -> float:
        """Estimated seconds for ``cells``."""
        per_model = {m.name: self.workload.estimate_s(m) for m in self.campaign.models}
        return estimate_seconds(self.campaign, cells, per_model)

    # ------------------------------------------------------------------ run

    def run(self) -> CampaignReport:
        """Run (or, with dry_run, describe) the campaign; returns what happened."""
        plan, pending = self.pending()
        tty = sys.stdout.isatty() if self.options.progress is None else self.options.progress
        self.progress = Progress(len(pending), enabled=tty and not self.options.quiet and not self.options.dry_run)
        if self.options.dry_run:
            self.print_plan(plan, pending)
            return self.report
        self.check_capabilities()
        self.save_meta(plan)
        self.gpu = self.open_gpu()
        self.run_preflight()
        self.host = host_facts(self.gpu)
        oom_before = self.set_oom_order()
        self.check_floor_headroom()
        self.journal.write("campaign-start", campaign=self.campaign.name, pending=len(pending),
                           already=len(self.report.already), resume=self.options.resume, pid=os.getpid(),
                           guard=self.guard_settings(), oom_score_adj=self.oom)
        self.clean_leftovers()
        previous = {signal.SIGINT: signal.getsignal(signal.SIGINT),
                    signal.SIGTERM: signal.getsignal(signal.SIGTERM)}
        for signum in previous:
            signal.signal(signum, self.on_signal)
        last_end: float | None = None
        started = self.clock()
        try:
            for position, cell in enumerate(pending):
                self.stop_if_signalled()
                env = self.environments[cell.environment]
                if cell.environment in self.report.unavailable:
                    self.report.skipped.append(cell.run_id)
                    continue
                remaining = self.estimate(pending[position:])
                if position:
                    elapsed = self.clock() - started
                    remaining = elapsed / position * (len(pending) - position)
                self.progress.show(cell.describe(), remaining)
                record = self.run_cell(plan, cell, env, last_end)
                last_end = self.clock()
                self.progress.done += 1
                self.progress.show(cell.describe(), None)
                status = "ok" if record.status.ok else f"FAILED: {record.status.reason}"
                tok_s = record.metrics.get("output_throughput_tok_s")
                figure = f"{tok_s:,.1f} tok/s" if tok_s is not None else ""
                self.say(f"[{self.progress.done}/{len(pending)}] {cell.describe()}  {figure}  {status}")
                if guard_event_of(record) is not None and self.campaign.guard.on_breach == "stop":
                    self.report.stopped = f"{cell.run_id}: {record.status.reason}"
                    self.journal.write("campaign-stopped", run_id=cell.run_id, reason=record.status.reason,
                                       left=len(pending) - position - 1)
                    break
        except Interrupted:
            self.report.interrupted = True
            self.journal.write("campaign-interrupted", signal=self.signal)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            if oom_before is not None:
                set_oom_score_adj(oom_before)  # the runner's process outlives the campaign (tests, scripts)
            self.progress.clear()
            with contextlib.suppress(OSError):
                (self.folder / WORK_DIR).rmdir()  # only when empty
        if not self.report.interrupted:
            self.journal.write("campaign-end", written=len(self.report.written),
                               failed=len(self.report.failed), skipped=len(self.report.skipped),
                               guarded={k: len(v) for k, v in self.report.guarded.items()},
                               stopped=self.report.stopped)
        return self.report

    def guard_settings(self) -> dict[str, Any] | None:
        """The guard block as the journal records it (None when off)."""
        guard = self.campaign.guard
        return None if not guard.enabled else self.run_guard().describe()

    def run_guard(self) -> RunGuard:
        """A fresh guard for one run (GPU free memory only where NVML reports device memory)."""
        total = self.host.get("gpu_memory_total_gib") if self.host.get("gpu_memory_reported") else None
        return RunGuard(self.campaign.guard, gpu_total_gib=total)  # real time: a watchdog

    def check_floor_headroom(self) -> None:
        """Warn when MemAvailable is already below the memory floor: every run would be stopped at once."""
        guard = self.campaign.guard
        if not guard.enabled or guard.min_available_gib is None:
            return
        available = read_meminfo().get("MemAvailable")
        if available is not None and available / 2**30 < guard.min_available_gib:
            self.warn(f"MemAvailable is {available / 2**30:.1f} GiB now, below guard.min_available_gib "
                      f"({guard.min_available_gib:g} GiB): every run will be stopped at once — free memory "
                      "or lower the floor")

    def set_oom_order(self) -> int | None:
        """The guard's OOM order for the runner; returns the value to restore afterwards (or None)."""
        guard = self.campaign.guard
        if not (guard.enabled and guard.oom_order):
            self.oom = {}
            return None
        before, now = protect_runner()
        self.oom = {"benchmark": BENCHMARK_OOM_SCORE_ADJ, "runner": now, "runner_before": before}
        # Where it may not be lowered (not root, or no CAP_SYS_RESOURCE) the runner keeps its value, recorded
        # as such: the benchmark's 1000 still puts it first in the kernel's line.
        if (guard.gpu_min_free_gib is not None and self.gpu is not None
                and not self.host.get("gpu_memory_reported")):
            self.warn("guard.gpu_min_free_gib: NVML reports no GPU memory here (unified memory) — "
                      "guard.min_available_gib (MemAvailable) guards the shared pool alone")
        return before if now != before else None

    def known_secrets(self, process_env: dict[str, str]) -> list[str]:
        """The values to scrub from text: those of variables not recorded (see
        :func:`~sparkreport.execute.envcapture.known_secrets`) and of declared variables named
        like secrets, less any value the campaign file itself spells out (a model id, a path)."""
        extra = self.campaign.env_allowlist
        declared = {**self.campaign.env, **self.workload.launch_env(),
                    **{k: v for e in self.environments.values() for k, v in e.declared_env().items()}}
        hidden = {k: v for k, v in process_env.items() if k not in declared and not is_allowed(k, extra)}
        hidden.update({k: v for k, v in declared.items() if SECRET_NAME.search(k)})
        recorded = {k: v for k, v in {**process_env, **declared}.items() if k not in hidden}
        shown = list(recorded.values())
        hidden.update(structure_secrets(recorded))  # what recording them removes (a URL's userinfo, query values)
        try:
            text = self.campaign.path.read_text(encoding="utf-8")
        except OSError:
            text = ""
        return [v for v in known_secrets(hidden, exclude=shown) if v not in text]

    def save_meta(self, plan: Plan) -> None:
        """Keep the plan and the campaign file (secrets redacted) in ``_campaign/``: the first
        write of a run, so a campaign folder that cannot be written is refused here, in one line."""
        check_writable(self.folder, "--runs-dir")
        self.meta.mkdir(parents=True, exist_ok=True)
        if not (self.meta / "plan.json").exists() or not self.options.resume:
            plan.save(self.meta / "plan.json")
            # The copy kept with the runs must not carry a secret the campaign declares.
            declared = {**self.campaign.env, **{k: v for e in self.environments.values()
                                                for k, v in e.declared_env().items()}}
            secrets = [*self.secrets, *(v for k, v in declared.items() if SECRET_NAME.search(k) and len(v) >= 4)]
            text = redact_text(self.campaign.path.read_text(encoding="utf-8"), secrets)
            (self.meta / "campaign.yaml").write_text(text, encoding="utf-8")

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """SIGINT/SIGTERM: stop the run in flight (its cell stays pending) and stop."""
        self.signal = signum
        if self.current is not None:
            self.current.kill()
        raise Interrupted(signum)

    def stop_if_signalled(self) -> None:
        """Raise :class:`Interrupted` if a signal came whose raise was lost: one that lands in a
        fork hook (logging's ``_releaseLock``, as a run's process starts) is printed by Python as
        "Exception ignored" and the campaign went on to finish, exit 0. Checked before each run
        and once a run's process ends, so such a signal stops the campaign at the next of these,
        the run it killed left pending rather than written as a failure."""
        if self.signal is not None:
            raise Interrupted(self.signal)

    def print_plan(self, plan: Plan, pending: list[Cell]) -> None:
        """The --dry-run output: one line per pending cell, then the estimate."""
        click.echo(f"campaign {self.campaign.name}: {len(plan.cells)} runs "
                   f"({len(self.campaign.models)} models × {len(self.campaign.environments)} environments × "
                   f"{len(self.campaign.cache)} cache states × {self.campaign.iterations} iterations), "
                   f"order {plan.order}, seed {plan.seed}")
        if self.report.already:
            click.echo(f"{len(self.report.already)} already in {self.folder}; {len(pending)} to run")
        for cell in pending:
            click.echo(f"{cell.index + 1:>4}  block {cell.block:<3} {cell.run_id}")
        click.echo(f"estimated duration: {format_duration(self.report.estimate_s)} "
                   f"(runs + {self.campaign.cooldown.min_s:g} s minimum cooldown each; "
                   "waits for temperature not included)")

    def check_capabilities(self) -> None:
        """One line per missing capability, naming the environments it affects."""
        for name, env in self.environments.items():
            reason = env.availability()
            if reason is not None:
                self.report.unavailable[name] = reason
                self.warn(f"environment {name!r} ({env.kind}) cannot run here: {reason} — its runs are "
                          "skipped; `--resume` on a machine that has it runs them")
        if "cold" in self.campaign.cache and not _can_drop_caches():
            raise SparkreportError(
                f"{self.campaign.path}: `cache: cold` drops the page cache, which needs root "
                "(/proc/sys/vm/drop_caches) — run as root, or use `cache: warm` / `as-is`")

    def open_gpu(self) -> GpuProbe | None:
        """NVML, when the campaign uses it and the machine has it (else one warning line)."""
        mon = self.campaign.monitoring
        if not mon.nvml:
            return None
        gpu, reason = self.gpu_factory(mon.gpu_index)
        if gpu is None:
            needs = "the workload needs a GPU, so its runs may fail; " if self.workload.needs_gpu else ""
            self.warn(f"no NVML: {reason} — {needs}GPU samples, temperatures and the temperature "
                      "cooldown are not recorded (affects all environments)")
        return gpu

    def run_preflight(self) -> None:
        """The pre-flight checks; failures stop the campaign or become warnings, as it says."""
        settings = self.campaign.preflight
        if not settings.enabled:
            return
        _, reason = (None, None) if self.gpu is not None else (None, "NVML not available")
        kwargs: dict[str, Any] = {}
        if self.cpu_load is not None:
            kwargs["cpu_load"] = self.cpu_load
        checks = run_preflight(settings, self.gpu, reason, self.workload.needs_gpu, **kwargs)
        failed = [c for c in checks if not c.ok]
        self.journal.write("preflight", checks=[c.__dict__ for c in checks])
        for check in checks:
            self.say(f"pre-flight {check.name}: {'ok' if check.ok else 'FAILED'} ({check.detail})")
        if failed and settings.on_fail == "error":
            raise SparkreportError(
                f"{self.campaign.path}: pre-flight failed: {_describe(failed)} — fix the machine, or set "
                "`preflight: {on_fail: warn}` to record it and go on")
        self.preflight_warnings = [f"pre-flight {c.name}: {c.detail}" for c in failed]

    def clean_leftovers(self) -> None:
        """Remove work folders and half-written staging folders left by a killed campaign."""
        work = self.folder / WORK_DIR
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
        for stale in self.folder.glob(".*.*"):
            if stale.is_dir() and stale.name not in (WORK_DIR,):
                shutil.rmtree(stale, ignore_errors=True)

    # ------------------------------------------------------------------ one cell

    def run_cell(self, plan: Plan, cell: Cell, env: ExecEnvironment, last_end: float | None) -> RunRecord:
        """Run one cell and write its folder (failed or not)."""
        record, raw = self.execute_cell(plan, cell, env, last_end)
        self.store.write(record, raw)
        event = guard_event_of(record)
        self.journal.write("run-end", run_id=cell.run_id, ok=record.status.ok, reason=record.status.reason,
                           **({"guard": event["kind"]} if event else {}))
        (self.report.written if record.status.ok else self.report.failed).append(cell.run_id)
        self.report.note_guard(cell.run_id, event)
        return record

    def execute_cell(self, plan: Plan, cell: Cell, env: ExecEnvironment,
                     last_end: float | None) -> tuple[RunRecord, list[RawFile]]:
        """Cooldown, cache, run and monitor one cell: its record and raw files (written by the caller)."""
        model = self.campaign.model(cell.model)
        workdir = self.folder / WORK_DIR / cell.run_id
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        warnings = list(self.preflight_warnings)
        cool = wait_for_cooldown(self.campaign.cooldown, self.gpu, last_end, clock=self.clock,
                                 sleep=self.sleep,
                                 on_wait=lambda waited, temp: self.progress.show(
                                     f"cooling: {temp if temp is not None else '?'} °C, {waited:.0f} s"))
        if cool.warning:
            warnings.append(cool.warning)
        cache = self.prepare_cache(cell.cache, model.path)
        packages = self.packages_of(env, workdir)
        started_at, started_local = utc_now(), dt.datetime.now().astimezone().isoformat(timespec="seconds")
        self.journal.write("run-start", run_id=cell.run_id, index=cell.index)
        start_temp = self.gpu.temperature() if self.gpu is not None else None
        steps = self.workload.steps(cell, model, env, workdir)
        guard = self.run_guard() if self.campaign.guard.enabled else None
        monitoring = self.campaign.monitoring.enabled
        sampler = Sampler(self.gpu, self.campaign.monitoring.interval_s,
                          cgroup_dir=lambda: self.current.cgroup_dir() if self.current is not None else None,
                          observer=guard.observe if guard is not None else None, keep_rows=monitoring)
        if monitoring or guard is not None:
            sampler.start()
        t0 = self.clock()
        logs: dict[str, Path] = {}
        outcomes: list[Outcome] = []
        launches: list[tuple[Step, Launch]] = []
        reason: str | None = None
        exit_code: int | None = None
        monitor: MonitorSummary | None = None
        try:
            for step in steps:
                launch = Launch(argv=step.argv, env={**self.campaign.env, **self.workload.launch_env(), **step.env},
                                workdir=workdir, log_path=workdir / step.log_name,
                                binds=[workdir, *self.workload.binds(model)], gpu=step.gpu, name=step.name,
                                oom_score_adj=self.oom.get("benchmark"))
                launches.append((step, launch))
                logs[step.name] = launch.log_path
                remaining = self.campaign.timeout_s - (self.clock() - t0)
                outcome = self.execute(env, launch, cell, remaining, guard)
                outcomes.append(outcome)
                exit_code = outcome.exit_code
                if guard is not None and guard.event is not None:
                    how = "not started" if "not_started" in outcome.details else "killed"
                    reason = f"{guard.event.reason} in step {step.name!r} ({how})"
                    break
                if "start_error" in outcome.details:
                    reason = f"could not start in {env.name!r}: {outcome.details['start_error']}"
                    break
                if outcome.timed_out:
                    reason = f"timed out after {self.campaign.timeout_s:g} s in step {step.name!r} (killed)"
                    break
                if outcome.exit_code != 0:
                    reason = f"step {step.name!r} exited with code {outcome.exit_code} (see {step.log_name})"
                    break
        finally:
            if monitoring:
                monitor = sampler.stop()
            elif guard is not None:
                sampler.stop()
            if sampler.observer_error is not None:
                warnings.append(f"guard: stopped watching this run after an error ({sampler.observer_error})")
        duration = self.clock() - t0
        end_temp = self.gpu.temperature() if self.gpu is not None else None
        result = WorkloadResult()
        if reason is None:
            try:
                result = self.workload.collect(cell, model, workdir, logs)
            except click.ClickException as exc:
                reason = f"output not readable: {exc.format_message()}"
            except (OSError, ValueError, KeyError, TypeError) as exc:
                reason = f"output not readable ({type(exc).__name__}: {exc})"
            if result.error:
                reason = result.error
        if monitor is not None:
            # The measurement metrics over the workload's own timed window, when it reports one.
            window = (result.details.get("timing") or {}).get("window_unix_s")
            monitor.busy = busy_span_metrics(sampler.rows, sampler.window_offsets(window))
        if guard is not None:
            result.details["guard"] = {**guard.describe(), "oom_score_adj": self.oom or None,
                                       "event": guard.event.to_dict() if guard.event else None}
        record = self.make_record(plan, cell, env, model, result, outcomes, launches, monitor, cache, packages,
                                  warnings + result.warnings, reason, exit_code, started_at, started_local,
                                  start_temp, end_temp, duration, cool.waited_s)
        secrets = self.known_secrets({**os.environ, **(env.process_env(launches[0][1]) if launches else {})})
        raw = self.raw_files(workdir, logs, result, outcomes, sampler if monitor else None, secrets,
                             declared=set(launches[0][1].env) | set(env.declared_env()) if launches else set())
        record.provenance.raw_files = [item.name for item in raw]
        shutil.rmtree(workdir, ignore_errors=True)  # every raw file is held as bytes by now
        return record, raw

    def execute(self, env: ExecEnvironment, launch: Launch, cell: Cell, timeout_s: float,
                guard: RunGuard | None = None) -> Outcome:
        """Start one step, wait up to ``timeout_s``, kill the whole of it on timeout (the guard, on the
        sampler's thread, may kill it sooner). A memory floor crossed already: not started."""
        event = guard.before_start(memory_now(self.gpu)) if guard is not None else None
        if event is not None:
            launch.log_path.write_text(f"sparkreport: not started: {event.reason}\n")
            return Outcome(exit_code=None, details={"not_started": event.reason})
        try:
            self.current = env.start(launch, cell.run_id)
        except Exception as exc:  # an environment that cannot start is a failed run, not a crash
            launch.log_path.write_text(f"sparkreport: could not start in {env.name}: {exc}\n")
            return Outcome(exit_code=None, details={"start_error": f"{type(exc).__name__}: {exc}"})
        if guard is not None:
            guard.watch(self.current, uses_gpu=launch.gpu and self.gpu is not None)
        timed_out = False
        try:
            code = self.current.wait(max(timeout_s, 0.0))
            if code is None:
                timed_out = True
                self.current.kill()
                code = self.current.wait(10.0)
            self.stop_if_signalled()
        except Interrupted:
            with contextlib.suppress(Exception):
                self.current.finish(None, False)
            self.current = None
            raise
        finally:
            if guard is not None:
                guard.unwatch()
        execution = self.current
        outcome = execution.finish(code, timed_out)
        self.current = None
        return outcome

    def prepare_cache(self, state: str, model_path: str | None) -> dict[str, Any]:
        """Set the page cache to ``state`` and say what was done."""
        before = read_meminfo().get("Cached")
        info: dict[str, Any] = {"state": state,
                                "cached_gib_before": None if before is None else round(before / 2**30, 4)}
        if state == "cold":
            os.sync()
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
            info["dropped"] = True
        elif state == "warm" and model_path and Path(model_path).exists():
            info["pre_read_bytes"] = _read_all(Path(model_path))
        after = read_meminfo().get("Cached")
        info["cached_gib_after"] = None if after is None else round(after / 2**30, 4)
        return info

    def packages_of(self, env: ExecEnvironment, workdir: Path) -> dict[str, Any]:
        """The Python packages inside ``env`` (probed once per environment)."""
        if env.name in self.packages:
            return self.packages[env.name]
        launch = Launch(argv=[env.python(), "-c", PACKAGES_PROBE], env=dict(self.campaign.env), workdir=workdir,
                        log_path=workdir / "packages-probe.log", binds=[workdir], gpu=False, name="probe",
                        oom_score_adj=self.oom.get("benchmark"))
        found: dict[str, Any] = {"probe": "failed"}
        try:
            execution = env.start(launch, "probe")
            code = execution.wait(120.0)
            if code is None:
                execution.kill()
            execution.finish(code, code is None)
            for line in launch.log_path.read_text(errors="replace").splitlines():
                if line.startswith("SPARKREPORT-PACKAGES "):
                    found = json.loads(line.split(" ", 1)[1])
        except Exception as exc:
            found = {"probe": f"failed ({type(exc).__name__}: {exc})"}
        launch.log_path.unlink(missing_ok=True)
        self.packages[env.name] = found
        return found

    # ------------------------------------------------------------------ the record

    def make_record(self, plan: Plan, cell: Cell, env: ExecEnvironment, model: Any, result: WorkloadResult,
                    outcomes: list[Outcome], launches: list[tuple[Step, Launch]],
                    monitor: MonitorSummary | None, cache: dict[str, Any], packages: dict[str, Any],
                    warnings: list[str], reason: str | None, exit_code: int | None, started_at: str,
                    started_local: str, start_temp: float | None, end_temp: float | None,
                    duration_s: float, cooldown_s: float) -> RunRecord:
        """Assemble run.json."""
        launch = launches[0][1] if launches else None
        capture = capture_env(env.process_env(launch) if launch else env.declared_env(),
                              {**(launch.env if launch else {}), **env.declared_env()},
                              self.campaign.env_allowlist)
        secrets = self.known_secrets({**os.environ, **(env.process_env(launch) if launch else {})})
        metrics: dict[str, float | None] = {}
        extra: dict[str, Any] = {}
        for name, value in result.metrics.items():
            (metrics if metric_catalog.is_metric(name) else extra)[name] = value
        metrics["start_temp_c"] = start_temp
        metrics["end_temp_c"] = end_temp
        if metrics.get("measured_window_s") is None and metrics.get("duration_s") is not None:
            metrics["measured_window_s"] = metrics["duration_s"]  # the benchmark's own timed window
        if monitor is not None:
            metrics.update(monitor.busy)
            if monitor.foreign_processes:
                held = ", ".join(f"pid {pid} ({mib} MiB)" for pid, mib in sorted(monitor.foreign_processes.items()))
                warnings = [*warnings, f"another process held the GPU when the run started: {held}"]
        env_details: dict[str, Any] = {**env.describe(), "cache": cache}
        image_digest = None
        for outcome in outcomes:
            env_details.update(outcome.details)
            image_digest = outcome.image_digest or image_digest
        if "cgroup" not in env_details and monitor is not None and monitor.peaks.get("cgroup_current_gib"):
            last = {k.replace("cgroup_", ""): v for k, v in monitor.last.items() if k.startswith("cgroup_")}
            env_details["cgroup"] = {"source": "samples (the container's cgroup is gone after exit)", **last,
                                     "peak_sampled_gib": monitor.peaks.get("cgroup_current_gib")}
        env_details["commands"] = [
            {"step": step.name, "argv": redact_argv(env.command_line(launch), secrets)} for step, launch in launches]
        # By allowlist (envcapture): the other variables are not recorded, only counted.
        env_details["env_vars"] = capture.values
        env_details["env_vars_unrecorded"] = capture.unrecorded
        if self.campaign.env_allowlist:
            env_details["env_allowlist"] = list(self.campaign.env_allowlist)
        declared = sorted({*(launch.env if launch else {}), *env.declared_env()})
        if declared:  # set by the campaign itself: shown when the record is read, like the allowlist
            env_details["env_declared"] = declared
        for key in ("commands", "env_vars"):
            env_details[key] = json.loads(redact_text(json.dumps(env_details[key]), secrets))
        gpu_reported = self.host.get("gpu_memory_reported")
        pool = None
        if self.gpu is not None:
            pool = self.host.get("gpu_memory_total_gib") if gpu_reported else self.host.get("mem_total_gib")
        unified = None if self.gpu is None else not gpu_reported
        ledger = build_ledger(result.memory_phases, monitor, metrics, env_details.get("cgroup"))
        software_details = {**result.software, "python_packages": packages.get("packages"),
                            "workload_python": packages.get("python") or result.software.get("python")}
        if "probe" in packages:
            software_details["packages_probe"] = packages["probe"]
        workload_fields = result.workload
        record = RunRecord(
            run_id=cell.run_id,
            campaign=self.campaign.name,
            iteration=cell.iteration,
            started_at=started_at,
            started_at_local=started_local,
            model=Model(id=result.model_id or model.id, name=model.name,
                        display_name=model.display_name or result.model_display_name,
                        details=dict(result.model_details)),
            environment=Environment(name=env.name, kind=env.record_kind, details=env_details),
            workload=Workload(
                num_requests=_int(workload_fields.get("num_requests")),
                input_len=_float(workload_fields.get("input_len")),
                output_len=_float(workload_fields.get("output_len")),
                batch_size=_int(workload_fields.get("batch_size")),
                kv_cache_fraction=_float(workload_fields.get("kv_cache_fraction")),
                details={"kind": self.workload.kind, "options": self.workload.describe(), **result.details,
                         "extra_metrics": extra, "duration_s": round(duration_s, 3),
                         "cooldown_waited_s": round(cooldown_s, 3), "seed": cell.seed},
            ),
            software=Software(engine=result.engine, engine_version=result.engine_version, backend=result.backend,
                              cuda=result.cuda or self.host.get("cuda_driver"), driver=self.host.get("driver"),
                              image=str(env.options["image"]) if "image" in env.options else None,
                              image_digest=image_digest, details=software_details),
            hardware=Hardware(gpu_name=self.host.get("gpu_name"),
                              memory_pool_gib=pool, unified_memory=unified,
                              details={"host": self.host, "memory_ledger": ledger,
                                       "monitor": monitor.to_dict() if monitor else None}),
            metrics=metrics if reason is None else {k: v for k, v in metrics.items() if k.endswith("_temp_c")},
            status=Status(exit_code=exit_code, ok=reason is None, reason=reason, warnings=warnings),
            provenance=Provenance(
                source_path=str(self.campaign.path), source_sha256=self.campaign.sha256,
                source_locator=f"cell {cell.index + 1} of {len(plan.cells)} (block {cell.block})",
                format=f"{OWN_FORMAT_PREFIX}{self.workload.kind}", ingested_at=utc_now(),
                sparkreport_version=__version__,
                notes=[f"`sparkreport run {self.campaign.path}` regenerates this campaign",
                       *(["random weights: same compute as the trained model, meaningless tokens"]
                         if self.workload.kind == "torch" else [])]),
            labels={**self.campaign.labels, "cache": cell.cache, "block": str(cell.block),
                    "plan_order": plan.order, "plan_seed": str(plan.seed), "plan_index": str(cell.index),
                    "workload": self.workload.kind},
        )
        record.status.reason = redact_text(record.status.reason, secrets) if record.status.reason else None
        record.status.warnings = [redact_text(w, secrets) for w in record.status.warnings]
        # A record is the contract downstream: validate it exactly as a reader would. Credential
        # shapes go everywhere; known values only from the free text above (a value that is
        # also a model id or a metric must not be blanked out of the record's fields).
        data = json.loads(redact_text(json.dumps(record.to_dict())))
        return RunRecord.from_dict(data, f"{self.folder}/{cell.run_id}/run.json")

    def raw_files(self, workdir: Path, logs: dict[str, Path], result: WorkloadResult, outcomes: list[Outcome],
                  sampler: Sampler | None, secrets: list[str], declared: set[str]) -> list[RawFile]:
        """Logs and reports (secrets scrubbed), samples, environment extras."""
        raw: list[RawFile] = []
        for path in [*logs.values(), *result.keep]:
            if path.exists():
                data = path.read_bytes()
                with contextlib.suppress(UnicodeDecodeError):
                    data = redact_text(data.decode("utf-8"), secrets).encode("utf-8")
                raw.append(RawFile(name=path.name, content=data))
        for outcome in outcomes:
            for item in outcome.raw:
                text = (item.content or b"").decode("utf-8", errors="replace")
                if item.name == "docker-inspect.json":
                    text = self.scrub_inspect(text, declared)
                raw.append(RawFile(name=item.name, content=redact_text(text, secrets).encode()))
        if sampler is not None:
            raw.append(RawFile(name="samples.csv.gz", content=sampler.csv_gz()))
        return raw

    def scrub_inspect(self, text: str, declared: set[str]) -> str:
        """``docker inspect`` output with ``Config.Env`` down to the recorded variables."""
        try:
            inspect = json.loads(text)
        except json.JSONDecodeError:
            return text
        config = inspect.get("Config") if isinstance(inspect, dict) else None
        if isinstance(config, dict) and isinstance(config.get("Env"), list):
            config["Env"] = scrub_env_lines(config["Env"], self.campaign.env_allowlist, keep=declared)
            return json.dumps(inspect, indent=2, sort_keys=True)
        return text


def _describe(checks: list[Check]) -> str:
    return "; ".join(f"{c.name} {c.detail}" for c in checks)


def _can_drop_caches() -> bool:
    return os.access("/proc/sys/vm/drop_caches", os.W_OK)


def _read_all(path: Path) -> int:
    total = 0
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        with file.open("rb") as handle:
            while chunk := handle.read(1 << 24):
                total += len(chunk)
    return total


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def run_campaign(campaign: Campaign, options: RunOptions, gpu_factory: GpuFactory = open_gpu,
                 **kwargs: Any) -> CampaignReport:
    """Run ``campaign`` into ``options.runs_dir`` (see :class:`CampaignRunner`)."""
    return CampaignRunner(campaign, options, gpu_factory=gpu_factory, **kwargs).run()
