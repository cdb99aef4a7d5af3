"""The run guard: memory floor, stall detection and OOM order, with real processes (CPU only)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.execute import cgroups
from sparkreport.execute.campaign import CampaignError, Guard, load_campaign
from sparkreport.execute.environments import Execution
from sparkreport.execute.guard import ProgressMark, RunGuard, read_oom_score_adj, tree_cpu_s
from sparkreport.execute.monitor import read_meminfo
from sparkreport.schema import RunRecord
from sparkreport.store import RunStore

GIB = 2**30
IS_ROOT = os.geteuid() == 0

# iteration → what the job does; every other iteration prints a report the trtllm-log parser reads.
JOB = '''
import os, sys, time
iteration, mode = int(sys.argv[1]), sys.argv[2]
print("oom_score_adj", open("/proc/self/oom_score_adj").read().strip(), flush=True)
if iteration == 1 and mode == "alloc":
    held, chunk = [], 64 * 2**20
    for step in range(int(sys.argv[3]) * 2**30 // chunk):  # ~1.6 GiB/s, every page touched
        block = bytearray(chunk)
        for offset in range(0, chunk, 4096):
            block[offset] = 1
        held.append(block)
        print(f"allocated {(step + 1) * 64} MiB", flush=True)
        time.sleep(0.04)
    time.sleep(60)
elif iteration == 1 and mode == "silent":
    time.sleep(60)
elif iteration == 1 and mode == "steady":
    for tick in range(8):
        print(f"tick {tick}", flush=True)
        time.sleep(0.5)
os.execv(sys.executable, [sys.executable, "-m", "sparkreport.execute.fake_bench", "--seed", str(iteration)])
'''

CAMPAIGN = """
campaign: guarded
order: sequential
iterations: {iterations}
timeout_s: 60
models: [m]
environments: [{{kind: {env}, name: native}}]
workload:
  kind: command
  command: ["{{python}}", "{job}", "{{iteration}}", "{mode}", "{alloc_gib}"]
  parser: trtllm-log
  gpu: false
cooldown: {{min_s: 0}}
monitoring: {{interval_s: 0.1, nvml: false}}
preflight: {{enabled: false}}
guard: {guard}
"""


def campaign(tmp_path: Path, mode: str, guard: str, iterations: int = 2, alloc_gib: int = 0,
             env: str = "native") -> Path:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(CAMPAIGN).lstrip().format(
        iterations=iterations, job=job, mode=mode, alloc_gib=alloc_gib, guard=guard, env=env))
    return path


def run(path: Path, runs: Path, *extra: str) -> Any:
    return CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(runs), "-q", *extra])


def records(runs: Path) -> dict[int, RunRecord]:
    return {r.iteration or 0: r for r in RunStore(runs).load_all()}


def journal(runs: Path) -> list[dict[str, Any]]:
    lines = (runs / "guarded/_campaign/journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def cgroup_ready() -> str | None:
    if not IS_ROOT:
        return "not root"
    return None if cgroups.memory_root() is not None else "no cgroup memory controller"


@pytest.mark.parametrize("env", ["native", "cgroup"])
def test_memory_floor_kills_the_run_within_seconds_and_the_next_runs(tmp_path: Path, env: str) -> None:
    if env == "cgroup" and cgroup_ready():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the cgroup environment cannot run: {cgroup_ready()}")
        pytest.skip(str(cgroup_ready()))
    available = read_meminfo()["MemAvailable"]
    floor_gib = round((available - 1 * GIB) / GIB, 2)  # 1 GiB below what is free now
    path = campaign(tmp_path, "alloc", f"{{min_available_gib: {floor_gib}, stall_s: null}}", alloc_gib=4,
                    env=env)
    runs = tmp_path / "runs"
    started = time.monotonic()
    result = run(path, runs)
    assert result.exit_code == 1, result.output
    assert time.monotonic() - started < 30  # the job alone would take 60 s
    assert result.stdout.splitlines()[-1] == f"1 ok, 0 failed, 1 stopped by the memory floor → {runs}/guarded"
    by_iteration = records(runs)
    killed = by_iteration[1]
    assert not killed.status.ok
    assert re.fullmatch(rf"memory floor: MemAvailable \d+\.\d GiB < {floor_gib:.1f} GiB at \d+\.\d s "
                        r"in step 'bench' \(killed\)", killed.status.reason or ""), killed.status.reason
    event = killed.workload.details["guard"]["event"]
    assert event["kind"] == "memory-floor" and event["value"] < floor_gib and event["limit"] == floor_gib
    # Killed within seconds of crossing: the job allocates ~1.6 GiB/s and crosses the floor after
    # ~1 GiB (sooner or later when other processes take or free memory meanwhile: 3 GiB of slack);
    # it never got to its 4 GiB, and the run lasted seconds, not the job's 60 s sleep.
    log = (runs / "guarded" / killed.run_id / "bench.log").read_text()
    allocated_mib = max((int(m) for m in re.findall(r"allocated (\d+) MiB", log)), default=0)
    assert allocated_mib < 4 * 1024, log[-300:]
    assert killed.workload.details["duration_s"] < 15
    # The next run of the campaign runs normally.
    assert by_iteration[2].status.ok and by_iteration[2].metrics["output_throughput_tok_s"]
    assert [e.get("guard") for e in journal(runs) if e["event"] == "run-end"] == ["memory-floor", None]


def test_silent_command_is_killed_after_stall_s_not_timeout_s(tmp_path: Path) -> None:
    path = campaign(tmp_path, "silent", "{stall_s: 2}")
    runs = tmp_path / "runs"
    started = time.monotonic()
    result = run(path, runs)
    assert time.monotonic() - started < 25  # timeout_s is 60
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == f"1 ok, 0 failed, 1 stalled → {runs}/guarded"
    stalled, after = records(runs)[1], records(runs)[2]
    assert re.fullmatch(r"stalled: no output and no CPU use for [23] s in step 'bench' \(killed\)",
                        stalled.status.reason or ""), stalled.status.reason
    assert 2 <= stalled.workload.details["duration_s"] < 8
    assert stalled.workload.details["guard"]["event"]["kind"] == "stall"
    assert after.status.ok
    # Reported: a `check` finding per run, the run page's status, the inclusion rule.
    from sparkreport.analysis import check, inclusion_rule_text
    from sparkreport.config import AnalysisOptions
    from sparkreport.dataset import load_dataset

    (finding,) = [f for f in check(load_dataset(runs)) if f.code.startswith("guard-")]
    assert finding.code == "guard-stall" and finding.runs == [stalled.run_id]
    assert finding.message.startswith(f"guarded/m/native: run {stalled.run_id} was stopped by the executor's "
                                      "guard (stalled: no output and no CPU use for ")
    assert "guard-memory-floor and guard-stall" in inclusion_rule_text(AnalysisOptions())
    docs = tmp_path / "docs"
    config = tmp_path / "sparkreport.yml"
    config.write_text("{}\n")  # a bare project beside the runs
    rendered = CliRunner().invoke(main, ["render", "--runs-dir", str(runs), "--docs-dir", str(docs),
                                         "--config", str(config)])
    assert rendered.exit_code == 0, rendered.output
    page = (docs / "runs/index.md").read_text()
    assert "<td>failed: stalled</td><td>no: stopped by the guard (stalled: no output" in page


def test_slow_but_steady_output_runs_to_the_end(tmp_path: Path) -> None:
    path = campaign(tmp_path, "steady", "{stall_s: 1.5}")
    runs = tmp_path / "runs"
    result = run(path, runs)
    assert result.exit_code == 0, result.output
    steady = records(runs)[1]
    assert steady.status.ok and steady.workload.details["duration_s"] > 3.5  # 8 ticks of 0.5 s outlived stall_s
    assert "tick 7" in (runs / "guarded" / steady.run_id / "bench.log").read_text()
    assert steady.workload.details["guard"]["event"] is None


def test_on_breach_stop_stops_the_campaign_and_resume_continues(tmp_path: Path) -> None:
    path = campaign(tmp_path, "silent", "{stall_s: 1, on_breach: stop}", iterations=3)
    runs = tmp_path / "runs"
    result = run(path, runs)
    assert result.exit_code == 1
    assert "stopped by the guard (guard.on_breach: stop) after m.native.as-is.i01: stalled:" in result.output
    assert "--resume` runs the rest" in result.output
    assert list(records(runs)) == [1]
    events = journal(runs)
    assert [e["event"] for e in events][-2:] == ["campaign-stopped", "campaign-end"]
    assert events[-2]["left"] == 2
    resumed = run(path, runs, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.splitlines()[-1] == f"2 ok, 0 failed, 1 already present → {runs}/guarded"
    assert sorted(records(runs)) == [1, 2, 3] and records(runs)[3].status.ok


def test_a_floor_above_what_is_free_warns_and_stops_each_run_at_once(tmp_path: Path) -> None:
    path = campaign(tmp_path, "steady", "{min_available_gib: 100000, stall_s: null}")
    runs = tmp_path / "runs"
    result = run(path, runs)
    assert result.exit_code == 1
    assert "below guard.min_available_gib (100000 GiB): every run will be stopped at once" in result.stderr
    assert result.stdout.splitlines()[-1] == f"0 ok, 0 failed, 2 stopped by the memory floor → {runs}/guarded"
    assert all(r.workload.details["duration_s"] < 5 for r in records(runs).values())
    # Checked before each step starts, so a step shorter than one sampler interval (the second
    # iteration's, ~0.1 s) is stopped too: it never starts.
    for record in records(runs).values():
        assert re.fullmatch(r"memory floor: MemAvailable \d+\.\d GiB < 100000\.0 GiB at \d+\.\d s "
                            r"in step 'bench' \(not started\)", record.status.reason or ""), record.status.reason
        log = (runs / "guarded" / record.run_id / "bench.log").read_text()
        assert log.startswith("sparkreport: not started: memory floor: MemAvailable ") and "tick" not in log


def test_oom_order_benchmark_first_runner_last(tmp_path: Path) -> None:
    before = read_oom_score_adj()
    path = campaign(tmp_path, "steady", "{stall_s: null}", iterations=1)
    runs = tmp_path / "runs"
    assert run(path, runs).exit_code == 0
    record = records(runs)[1]
    # The benchmark process read its own value: the kernel kills it first.
    assert "oom_score_adj 1000" in (runs / "guarded" / record.run_id / "bench.log").read_text()
    oom = record.workload.details["guard"]["oom_score_adj"]
    assert oom["benchmark"] == 1000
    start = next(e for e in journal(runs) if e["event"] == "campaign-start")
    # −900 where the runner may lower it (root with CAP_SYS_RESOURCE; not in every container).
    assert start["oom_score_adj"]["runner"] in ({-900, before} if IS_ROOT else {before})
    assert read_oom_score_adj() == before  # restored when the campaign ends


def test_oom_order_off_leaves_the_inherited_value(tmp_path: Path) -> None:
    path = campaign(tmp_path, "steady", "{stall_s: null, oom_order: false}", iterations=1)
    runs = tmp_path / "runs"
    assert run(path, runs).exit_code == 0
    record = records(runs)[1]
    assert f"oom_score_adj {read_oom_score_adj()}" in (runs / "guarded" / record.run_id / "bench.log").read_text()


# --------------------------------------------------------------------------- units


def own_cpu_s(pid: int) -> float:
    """CPU seconds of one process alone (user + system, no children)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rfind(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class FakeExecution(Execution):
    def __init__(self) -> None:
        self.killed = 0
        self.mark = ProgressMark(output_bytes=0, cpu_s=0.0)

    def kill(self) -> None:
        self.killed += 1

    def progress(self) -> ProgressMark:
        return self.mark


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_gpu_free_memory_floor_where_nvml_reports_it() -> None:
    clock = Clock()
    guard = RunGuard(Guard(min_available_gib=4.0, gpu_min_free_gib=10.0, stall_s=None), gpu_total_gib=80.0,
                     clock=clock)
    execution = FakeExecution()
    guard.watch(execution, uses_gpu=True)
    clock.now += 3.25
    guard.observe({"mem_available_gib": 100.0, "gpu_mem_used_gib": 60.0, "gpu_mem_source": "nvml"})
    assert guard.event is None and execution.killed == 0
    guard.observe({"mem_available_gib": 100.0, "gpu_mem_used_gib": 72.5, "gpu_mem_source": "nvml"})
    assert guard.event is not None and execution.killed == 1
    assert guard.event.reason == "memory floor: GPU free memory 7.5 GiB < 10.0 GiB at 3.2 s"
    guard.observe({"mem_available_gib": 1.0})
    assert execution.killed == 1  # one event, one kill
    # GB10: NVML gives no device memory, the meminfo fallback is not GPU free memory.
    unified = RunGuard(Guard(gpu_min_free_gib=10.0, stall_s=None), gpu_total_gib=None, clock=clock)
    unified.watch(FakeExecution(), uses_gpu=True)
    unified.observe({"mem_available_gib": 50.0, "gpu_mem_used_gib": 79.0, "gpu_mem_source": "meminfo"})
    assert unified.event is None


def test_a_floor_crossed_before_a_step_starts_stops_the_run_unstarted() -> None:
    """before_start reads the floors once, before any step is watched: crossed, the run gets its
    event (nothing to kill: the step never starts) and the sampler's rows change nothing after."""
    from sparkreport.execute.monitor import memory_now

    clock = Clock()
    guard = RunGuard(Guard(min_available_gib=4.0, gpu_min_free_gib=10.0, stall_s=None), gpu_total_gib=80.0,
                     clock=clock)
    assert guard.before_start({"mem_available_gib": 100.0, "gpu_mem_used_gib": 60.0,
                               "gpu_mem_source": "nvml"}) is None
    clock.now += 0.5
    event = guard.before_start({"mem_available_gib": 100.0, "gpu_mem_used_gib": 75.0, "gpu_mem_source": "nvml"})
    assert event is guard.event and event is not None
    assert event.reason == "memory floor: GPU free memory 5.0 GiB < 10.0 GiB at 0.5 s"
    execution = FakeExecution()
    guard.watch(execution, uses_gpu=True)
    guard.observe({"mem_available_gib": 1.0})
    assert execution.killed == 0 and guard.event is event  # one event; nothing was started to kill
    # The reading itself: MemAvailable from /proc/meminfo, no GPU fields without a probe.
    row = memory_now(None)
    assert set(row) == {"mem_available_gib"} and row["mem_available_gib"] > 0


def test_stall_counts_gpu_activity_and_cpu_time_as_progress() -> None:
    clock = Clock()
    guard = RunGuard(Guard(min_available_gib=None, stall_s=5.0), clock=clock)
    execution = FakeExecution()
    guard.watch(execution, uses_gpu=True)
    for second in range(1, 30):  # loading a model: silent, but the GPU is busy, then the CPU works
        clock.now += 1.0
        if second < 15:
            guard.observe({"gpu_util_pct": 40.0})
        else:
            execution.mark = ProgressMark(output_bytes=0, cpu_s=second * 0.5)
            guard.observe({"gpu_util_pct": 0.0})
    assert guard.event is None
    for _ in range(6):  # then nothing at all
        clock.now += 1.0
        guard.observe({"gpu_util_pct": 0.0})
    assert guard.event is not None and execution.killed == 1
    assert guard.event.reason == "stalled: no output, GPU idle and no CPU use for 5 s"
    unwatched = RunGuard(Guard(stall_s=1.0), clock=clock)
    clock.now += 100
    unwatched.observe({"mem_available_gib": 0.1})  # between steps: nothing to kill
    assert unwatched.event is None


def test_tree_cpu_counts_the_children_of_the_step() -> None:
    code = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'x = 0\\nfor i in range(10**9): x += i'])"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        # The child only waits; the grandchild spins. Poll (a loaded machine gives it little CPU).
        deadline, total = time.monotonic() + 30, None
        while time.monotonic() < deadline:
            total = tree_cpu_s(proc.pid)
            if total is not None and total > 1.0:
                break
            time.sleep(0.2)
        own = own_cpu_s(proc.pid)
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    assert total is not None and total > 1.0 and own < 0.5 * total  # most of it is the grandchild's
    # gone — once the kernel has finished the killed grandchild (init reaps it; a loaded machine
    # can take a moment, in which its /proc entry still counts)
    deadline = time.monotonic() + 10
    while tree_cpu_s(proc.pid) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tree_cpu_s(proc.pid) is None


@pytest.mark.parametrize(("block", "message"), [
    ("{on_breach: later}", "c.yaml:1: guard.on_breach: must be one of next, stop, not 'later'"),
    ("{stall_s: 0.5}", "c.yaml:1: guard.stall_s: must be ≥ 1 s, or null for off, not 0.5"),
    ("{min_available_gib: lots}", "c.yaml:1: guard.min_available_gib: must be a number, not 'lots'"),
    ("{stall_signals: [output, disk]}", "c.yaml:1: guard.stall_signals[1]: unknown progress signal 'disk' — "
     "choose from: output, gpu, cpu"),
    ("{min_free_gib: 4}", "c.yaml:1: guard.min_free_gib: unknown key — did you mean 'gpu_min_free_gib'?"),
])
def test_guard_block_errors_name_the_line(tmp_path: Path, block: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"guard: {block}\ncampaign: x\nmodels: [a]\nenvironments: [{{kind: native}}]\n"
                    "workload: {kind: fake}\n")
    with pytest.raises(CampaignError) as info:
        load_campaign(path)
    assert info.value.format_message().startswith(f"{path}:{message.removeprefix('c.yaml:')}"), \
        info.value.format_message()


def test_guard_defaults_and_off(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("campaign: x\nmodels: [a]\nenvironments: [{kind: native}]\nworkload: {kind: fake}\n")
    assert load_campaign(path).guard == Guard(min_available_gib=4.0, gpu_min_free_gib=None, stall_s=600.0,
                                              on_breach="next", oom_order=True)
    path.write_text(path.read_text() + "guard: {min_available_gib: 0, stall_s: null}\n")
    guard = load_campaign(path).guard
    assert guard.min_available_gib is None and guard.stall_s is None


def test_a_broken_observer_does_not_stop_the_sampler() -> None:
    from sparkreport.execute.monitor import Sampler

    calls: list[float] = []

    def observer(row: dict[str, Any]) -> None:
        calls.append(row["t_s"])
        raise OSError("/proc vanished")

    sampler = Sampler(None, 0.1, meminfo=lambda: {"MemAvailable": 8 * GIB, "MemTotal": 16 * GIB},
                      observer=observer)
    sampler.sample()
    sampler.sample()
    assert len(sampler.rows) == 2 and len(calls) == 1  # sampled on, observer called no more
    assert sampler.observer_error == "OSError: /proc vanished"
