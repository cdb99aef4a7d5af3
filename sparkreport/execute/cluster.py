"""``sparkreport run --cluster``: a campaign's cells as Ray tasks, across several GPU machines.

The driver (where ``sparkreport run`` is invoked) keeps what the single-machine runner keeps:
the plan, the journal and the run store. Each pending cell becomes one Ray task asking for
``gpus_per_run`` GPUs (default 1), so Ray's own resource accounting runs one benchmark per GPU
at a time and places the tasks on the nodes — there is no scheduler here. A task runs the very
per-cell code of the local runner (:meth:`CampaignRunner.execute_cell`: cooldown, cache, steps,
sampler, record) on its node, in a node-local work folder, and returns the run folder's
contents (run.json and raw files, as bytes); the driver writes them with :class:`RunStore`
(atomically) and journals the cell as it arrives.

Cooldown is per node and GPU: the task waits for *its* GPU to cool and for ``cooldown.min_s``
since the previous run on that GPU ended (a node-local file keeps that time). A task lost to a
dead worker or node is retried by Ray (``max_retries``); when the retries are spent the cell is
reported as lost and not journaled as done, so ``--resume`` runs it again.

Ray is imported only here, and only when ``--cluster`` is given: the execute package stays
light. The workers need ``sparkreport`` (and the workload's own stack) installed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkreport.errors import SparkreportError
from sparkreport.execute.campaign import Campaign
from sparkreport.execute.gpu import GpuProbe, open_gpu
from sparkreport.execute.guard import BENCHMARK_OOM_SCORE_ADJ, guard_event_of
from sparkreport.execute.plan import Cell, Plan
from sparkreport.execute.runner import (
    WORK_DIR,
    CampaignReport,
    CampaignRunner,
    Interrupted,
    Journal,
    Progress,
    RunOptions,
    _can_drop_caches,
)
from sparkreport.schema import RunRecord
from sparkreport.store import RUN_FILE, RawFile

# Test hook: a folder; a file CAMPAIGN.RUN_ID in it makes the worker that picks that cell die
# (os._exit) once — as a node going away mid-run would. The file is consumed (renamed to *.done).
CRASH_HOOK = "SPARKREPORT_TEST_CLUSTER_CRASH"
COOLDOWN_DIR = "sparkreport-cooldown"
LOCAL = "local"


@dataclass
class ClusterOptions:
    """Where and how to dispatch: a Ray address, GPUs per run, retries of a lost task."""

    address: str = LOCAL  # local | auto | ray://HOST:PORT | HOST:PORT
    gpus_per_run: float = 1.0
    retries: int = 3

    def describe(self) -> str:
        """One line for the plan and the journal."""
        where = "a local Ray cluster" if self.address == LOCAL else f"the Ray cluster at {self.address}"
        return (f"dispatched as Ray tasks to {where}: {self.gpus_per_run:g} GPU(s) per run, "
                f"{self.retries} retries of a lost task")


def import_ray() -> Any:
    """The ``ray`` module, or a one-line error naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise SparkreportError(
            "--cluster needs Ray — install it with `pip install 'sparkreport[ray]'` (or `pip install ray`) on "
            "this machine and on every node of the cluster") from None
    return ray


def connect(address: str) -> bool:
    """Connect to (or, for ``local``, start) Ray; True when this call did and must shut it down."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "configure_logging": True}
    try:
        if address == LOCAL:
            ray.init(address="local", include_dashboard=False, **kwargs)  # a new one, never a running one
        else:
            ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise SparkreportError(
            f"--cluster {address}: cannot connect to Ray ({exc}) — start the cluster (`ray start --head` on "
            "one node, `ray start --address HEAD:6379` on the others) or use `--cluster local`") from None
    return True


class ClusterRunner(CampaignRunner):
    """A campaign whose cells run as Ray tasks; plan, journal and store stay with the driver."""

    def __init__(self, campaign: Campaign, options: RunOptions, cluster: ClusterOptions):
        super().__init__(campaign, options)
        self.cluster = cluster
        self.warned: set[str] = set()

    def run(self) -> CampaignReport:
        """Dispatch the pending cells, write each result as it arrives; returns what happened."""
        plan, pending = self.pending()
        if self.options.dry_run:
            self.print_plan(plan, pending)
            print_line(self.cluster.describe())
            return self.report
        ray = import_ray()
        self.save_meta(plan)
        started_ray = connect(self.cluster.address)
        tty = sys.stdout.isatty() if self.options.progress is None else self.options.progress
        self.progress = Progress(len(pending), enabled=tty and not self.options.quiet)
        previous = {signal.SIGINT: signal.getsignal(signal.SIGINT),
                    signal.SIGTERM: signal.getsignal(signal.SIGTERM)}
        outstanding: dict[Any, Cell] = {}
        try:
            self.check_resources(ray)
            self.journal.write("campaign-start", campaign=self.campaign.name, pending=len(pending),
                               already=len(self.report.already), resume=self.options.resume, pid=os.getpid(),
                               cluster=self.cluster.address, gpus_per_run=self.cluster.gpus_per_run)
            self.clean_leftovers()
            for signum in previous:
                signal.signal(signum, self.on_signal)
            task = ray.remote(run_cell_task).options(
                num_gpus=self.cluster.gpus_per_run, num_cpus=1, max_retries=self.cluster.retries)
            campaign_ref, plan_ref = ray.put(self.campaign), ray.put(plan)
            for cell in pending:  # Ray queues them by resources; plan order is submission order
                outstanding[task.remote(campaign_ref, plan_ref, cell)] = cell
                self.journal.write("run-dispatch", run_id=cell.run_id, index=cell.index)
            self.progress.show(f"{len(outstanding)} runs dispatched")
            while outstanding:
                ready, _ = ray.wait(list(outstanding), num_returns=1, timeout=1.0)
                for ref in ready:
                    self.collect(ray, ref, outstanding.pop(ref), len(pending))
        except Interrupted:
            self.report.interrupted = True
            self.journal.write("campaign-interrupted", signal=self.signal)
            for ref in outstanding:  # not force: the task gets KeyboardInterrupt and kills its run
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self.progress.clear()
            with contextlib.suppress(OSError):
                (self.folder / WORK_DIR).rmdir()
            if started_ray:
                ray.shutdown()
        if not self.report.interrupted:
            self.journal.write("campaign-end", written=len(self.report.written), failed=len(self.report.failed),
                               skipped=len(self.report.skipped), lost=len(self.report.lost))
        return self.report

    def on_signal(self, signum: int, frame: Any) -> None:
        """SIGINT/SIGTERM: stop waiting; the runs in flight are cancelled and stay pending."""
        self.signal = signum
        raise Interrupted()

    def check_resources(self, ray: Any) -> None:
        """A campaign asking for GPUs on a cluster without any would wait forever: say so now."""
        gpus = float(ray.cluster_resources().get("GPU", 0.0))
        if self.cluster.gpus_per_run > gpus:
            raise SparkreportError(
                f"--cluster {self.cluster.address}: each run asks for {self.cluster.gpus_per_run:g} GPU(s) and the "
                f"cluster has {gpus:g} — start the nodes with their GPUs (`ray start --num-gpus N`), or pass "
                "`--gpus-per-run 0` for a workload that needs none (e.g. `fake`)")

    def collect(self, ray: Any, ref: Any, cell: Cell, total: int) -> None:
        """One finished task: write its run folder and journal it, or report it lost."""
        try:
            result: dict[str, Any] = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return
        except ray.exceptions.RayTaskError as exc:  # the task itself raised (a pre-flight error, a bug)
            self.lose(cell, f"failed on its node: {_first_line(exc.cause if exc.cause is not None else exc)}")
            return
        except ray.exceptions.RayError as exc:  # the worker or its node died, retries spent
            self.lose(cell, f"its worker or node died ({type(exc).__name__}); retried "
                            f"{self.cluster.retries} time(s)")
            return
        node = result.get("node", {})
        for note in result.get("warnings", []):
            if note not in self.warned:
                self.warned.add(note)
                self.warn(f"node {node.get('ip', '?')}: {note}")
        if "unavailable" in result:
            self.report.unavailable.setdefault(cell.environment, result["unavailable"])
            self.report.skipped.append(cell.run_id)
            self.journal.write("run-skipped", run_id=cell.run_id, reason=result["unavailable"], node=node)
            return
        record = RunRecord.from_dict(result["record"], f"{self.folder}/{cell.run_id}/{RUN_FILE}")
        raw = [RawFile(name=name, content=content) for name, content in result["raw"]]
        self.store.write(record, raw)
        event = guard_event_of(record)
        self.journal.write("run-end", run_id=cell.run_id, ok=record.status.ok, reason=record.status.reason,
                           node=node, **({"guard": event["kind"]} if event else {}))
        (self.report.written if record.status.ok else self.report.failed).append(cell.run_id)
        self.report.note_guard(cell.run_id, event)
        self.progress.done += 1
        status = "ok" if record.status.ok else f"FAILED: {record.status.reason}"
        tok_s = record.metrics.get("output_throughput_tok_s")
        figure = f"{tok_s:,.1f} tok/s" if tok_s is not None else ""
        self.say(f"[{self.progress.done}/{total}] {cell.describe()}  {figure}  {status}  @ {node.get('ip', '?')}")
        self.progress.show("waiting for the cluster")

    def lose(self, cell: Cell, reason: str) -> None:
        """A cell with no result: reported, journaled as lost (not done), rerun by --resume."""
        self.report.lost.append(cell.run_id)
        self.journal.write("run-lost", run_id=cell.run_id, reason=reason)
        self.warn(f"{cell.run_id}: {reason} — not recorded; `--resume` runs it again")


def print_line(text: str) -> None:
    """A plain output line (click, imported where used like the runner does)."""
    import click

    click.echo(text)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


# --------------------------------------------------------------------------- the worker side


class _NullJournal(Journal):
    """The driver keeps the journal; a worker's runner writes none."""

    def write(self, event: str, **data: Any) -> None:
        return None


class _WorkerRunner(CampaignRunner):
    """The local runner's per-cell code on a Ray worker: node-local work folder, warnings collected."""

    def __init__(self, campaign: Campaign, gpu_ids: list[str]):
        self.notes: list[str] = []
        index = int(gpu_ids[0]) if gpu_ids and gpu_ids[0].isdigit() else campaign.monitoring.gpu_index

        def factory(_: int) -> tuple[GpuProbe | None, str | None]:
            return open_gpu(index)

        work = Path(tempfile.mkdtemp(prefix="sparkreport-ray-"))
        super().__init__(campaign, RunOptions(runs_dir=work, quiet=True, progress=False), gpu_factory=factory)
        self.journal = _NullJournal(self.meta / "journal.jsonl")
        self.gpu = self.open_gpu()
        self.run_preflight()
        from sparkreport.execute.sysinfo import host_facts

        self.host = host_facts(self.gpu)
        if campaign.guard.enabled and campaign.guard.oom_order:  # the Ray worker's own value is Ray's to set
            self.oom = {"benchmark": BENCHMARK_OOM_SCORE_ADJ, "runner": None}

    def warn(self, text: str) -> None:
        """Sent back to the driver with the result (printed there once)."""
        if text not in self.notes:
            self.notes.append(text)


_WORKER_RUNNERS: dict[tuple[str, str, tuple[str, ...]], _WorkerRunner] = {}


def _worker_runner(campaign: Campaign, gpu_ids: list[str]) -> _WorkerRunner:
    """One runner per worker process, campaign and GPU set (packages probed once per environment)."""
    key = (campaign.name, campaign.sha256, tuple(gpu_ids))
    if key not in _WORKER_RUNNERS:
        if gpu_ids:  # Ray chose the GPU(s): the run must see those, whatever the campaign's env says
            campaign = dataclasses.replace(campaign, env={**campaign.env, "CUDA_VISIBLE_DEVICES": ",".join(gpu_ids)})
        _WORKER_RUNNERS[key] = _WorkerRunner(campaign, gpu_ids)
    return _WORKER_RUNNERS[key]


def _cooldown_file(gpu_ids: list[str]) -> Path:
    """Node-local: when the last run on these GPUs ended (time.monotonic is system-wide)."""
    name = "gpu-" + "-".join(gpu_ids) if gpu_ids else "node"
    return Path(tempfile.gettempdir()) / COOLDOWN_DIR / f"{name}.last_end"


def _read_last_end(path: Path) -> float | None:
    try:
        return float(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_last_end(path: Path, value: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(repr(value))
    os.replace(tmp, path)


def _maybe_crash(campaign: Campaign, cell: Cell) -> None:
    """The test hook (see :data:`CRASH_HOOK`): die once, like a node going away mid-run."""
    folder = os.environ.get(CRASH_HOOK)
    if not folder:
        return
    request = Path(folder) / f"{campaign.name}.{cell.run_id}"
    with contextlib.suppress(OSError):
        request.rename(request.with_name(request.name + ".done"))  # atomic: only one worker dies
        os._exit(1)


def run_cell_task(campaign: Campaign, plan: Plan, cell: Cell) -> dict[str, Any]:
    """The Ray task: run one cell on this node; its record and raw files, as plain data."""
    import ray

    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    context = ray.get_runtime_context()
    node = {"id": context.get_node_id(), "ip": ray.util.get_node_ip_address(), "gpu_ids": gpu_ids,
            "pid": os.getpid()}
    _maybe_crash(campaign, cell)
    runner = _worker_runner(campaign, gpu_ids)
    env = runner.environments[cell.environment]
    reason = env.availability()
    if reason is not None:
        return {"unavailable": reason, "node": node, "warnings": list(runner.notes)}
    if cell.cache == "cold" and not _can_drop_caches():
        raise SparkreportError(f"{campaign.path}: `cache: cold` drops the page cache, which needs root on "
                               f"node {node['ip']} — run the Ray workers as root, or use `cache: warm` / `as-is`")
    marker = _cooldown_file(gpu_ids)
    started = time.monotonic()
    try:
        record, raw = runner.execute_cell(plan, cell, env, _read_last_end(marker))
    except BaseException:  # ray.cancel (KeyboardInterrupt) or a bug: leave no benchmark running on the node
        if runner.current is not None:
            with contextlib.suppress(Exception):
                runner.current.kill()
        runner.current = None
        raise
    _write_last_end(marker, runner.clock())
    record.workload.details["cluster"] = {**node, "task_s": round(time.monotonic() - started, 3)}
    return {"record": record.to_dict(), "raw": [(item.name, item.content or b"") for item in raw],
            "node": node, "warnings": list(runner.notes)}


def run_on_cluster(campaign: Campaign, options: RunOptions, cluster: ClusterOptions) -> CampaignReport:
    """Run ``campaign`` as Ray tasks into ``options.runs_dir`` (see :class:`ClusterRunner`)."""
    return ClusterRunner(campaign, options, cluster).run()

