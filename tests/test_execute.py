"""`sparkreport run`: campaign validation, plan, cooldown, sampler, fake campaigns end to end,
failures, timeouts, redaction, kill -9 + resume, the light import path, cgroup v1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.execute import cgroups
from sparkreport.execute.campaign import CampaignError, Cooldown, load_campaign
from sparkreport.execute.cooldown import wait_for_cooldown
from sparkreport.execute.gpu import GpuReading
from sparkreport.execute.monitor import Sampler
from sparkreport.execute.plan import make_plan
from sparkreport.execute.redact import redact_argv, redact_text
from sparkreport.execute.runner import RunOptions, run_campaign
from sparkreport.store import RunStore

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI") == "true"
PLANTED = "hf_PLANTEDsecretTOKEN0123456789"


def write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


FAKE = """
campaign: fake-c
seed: 3
iterations: {iterations}
timeout_s: {timeout}
models:
  - {{name: small, id: fake/small, params: {{throughput_tok_s: 120}}}}
  - {{name: large, id: fake/large, params: {{throughput_tok_s: 20}}}}
environments:
  - {{name: native, kind: native, env: {{HF_TOKEN: {token}}}}}
workload: {{kind: fake, sleep_s: {sleep}, {extra}}}
cooldown: {{min_s: 0}}
monitoring: {{interval_s: 0.05}}
preflight: {{enabled: false}}
"""


def fake_campaign(tmp_path: Path, iterations: int = 2, timeout: float = 60, sleep: float = 0.0,
                  extra: str = "noise: 0.01") -> Path:
    return write(tmp_path, FAKE.format(iterations=iterations, timeout=timeout, sleep=sleep, extra=extra,
                                       token=PLANTED))


class FakeGpu:
    """An NVML stand-in: temperatures from a list, GB10-like memory (not reported)."""

    def __init__(self, temps: list[float]):
        self.temps = list(temps)

    def temperature(self) -> float | None:
        return self.temps.pop(0) if len(self.temps) > 1 else self.temps[0]

    def read(self) -> GpuReading:
        return GpuReading(util_pct=97.0, temp_c=self.temps[0], power_w=55.5, pstate=0,
                          process_memory_bytes={4242: 3 * 2**30})

    def static_info(self) -> dict[str, object]:
        return {"gpu_name": "NVIDIA GB10", "gpu_memory_reported": False, "driver": "580.95"}


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(("body", "message"), [
    ("campaign: x\nmodels: [a]\nenvironments:\n  - kind: podman\nworkload: {kind: fake}\n",
     "c.yaml:4: environments[0].kind: unknown environment kind 'podman' — choose one of: "
     "native, cgroup, chroot, docker"),
    ("campaign: x\nmodels: [a]\nenvironments: [{kind: native}]\nworkload: {kind: fake}\niteration: 3\n",
     "c.yaml:5: iteration: unknown key — did you mean 'iterations'?"),
    ("campaign: x\nenvironments: [{kind: native}]\nworkload: {kind: fake}\n",
     "c.yaml:1: models: is missing — add `models:` with at least one entry"),
    ("campaign: x\nmodels: [a]\nenvironments:\n  - {kind: cgroup, memory_limit: lots}\nworkload: {kind: fake}\n",
     "c.yaml:4: environments[0].memory_limit: 'lots' is not a size — write e.g. 64GiB, 512MiB or a "
     "number of bytes"),
    ("campaign: x\nmodels:\n  - {name: m, preset: gpt-9}\nenvironments: [{kind: native}]\nworkload: {kind: torch}\n",
     "c.yaml:3: models[0].preset: unknown preset 'gpt-9' — choose one of: qwen2-0.5b, qwen2-1.5b, "
     "qwen2.5-7b, llama-3.2-1b, llama-3-8b, or give `config:`"),
    ("campaign: x\nmodels: [a]\nenvironments: [{kind: native}]\nworkload: {kind: fake}\ncache: lukewarm\n",
     "c.yaml:5: cache: unknown cache state 'lukewarm' — choose from: cold, warm, as-is"),
    ("campaign: my campaign\nmodels: [a]\nenvironments: [{kind: native}]\nworkload: {kind: fake}\n",
     "c.yaml:1: campaign: 'my campaign' is not a folder-safe name — use letters, digits, '.', '_' "
     "and '-' (e.g. 'my-campaign')"),
    ("campaign: x\nmodels: [a, a]\nenvironments: [{kind: native}]\nworkload: {kind: fake}\n",
     "c.yaml:2: models[1]: the name 'a' is used twice — give each entry its own `name:`"),
    ("campaign: x\nmodels: [a]\nenvironments: [{kind: native}]\nworkload:\n  kind: command\n"
     "  command: run {modle}\n  parser: trtllm-log\n",
     "c.yaml:6: workload.command: uses unknown placeholder {modle} — use one of: {iteration}, {model}, "
     "{model_id}, {model_path}, {python}, {seed}, {workdir}"),
    ("campaign: x\nmodels: [a\n", "c.yaml:3: is not valid YAML"),
])
def test_campaign_errors_name_file_line_and_fix(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(CampaignError) as info:
        load_campaign(path)
    assert info.value.format_message().replace(str(tmp_path) + "/", "").startswith(message)


def test_cli_reports_campaign_error_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "campaign: x\nmodels: [a]\nenvironments: [{kind: podman}]\nworkload: {kind: fake}\n")
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "unknown environment kind 'podman'" in result.output


# --------------------------------------------------------------------------- plan


def test_plan_randomized_blocks_are_seeded_complete_and_interleaved(tmp_path: Path) -> None:
    text = FAKE.format(iterations=4, timeout=60, sleep=0, extra="noise: 0", token="x").replace(
        "environments:\n", "environments:\n  - {name: cg, kind: cgroup}\n")
    campaign = load_campaign(write(tmp_path, text))
    plan, again = make_plan(campaign), make_plan(campaign)
    assert plan == again
    assert len(plan.cells) == 2 * 2 * 4
    assert len({c.run_id for c in plan.cells}) == len(plan.cells)
    for block in range(1, 5):
        cells = [c for c in plan.cells if c.block == block]
        assert {(c.model, c.environment) for c in cells} == {(m, e) for m in ("small", "large")
                                                             for e in ("native", "cg")}
        assert all(c.iteration == block for c in cells)
    orders = {tuple(c.run_id.rsplit(".", 1)[0] for c in plan.cells if c.block == b) for b in range(1, 5)}
    assert len(orders) > 1  # shuffled per block, not one fixed order
    other = make_plan(load_campaign(write(tmp_path, text.replace("seed: 3", "seed: 4"), "d.yaml")))
    assert [c.run_id for c in other.cells] != [c.run_id for c in plan.cells]
    assert [c.seed for c in other.cells if c.run_id == "small.native.as-is.i01"] != \
        [c.seed for c in plan.cells if c.run_id == "small.native.as-is.i01"]


def test_plan_sequential_runs_arm_by_arm(tmp_path: Path) -> None:
    path = write(tmp_path, FAKE.format(iterations=2, timeout=60, sleep=0, extra="noise: 0", token="x")
                 + "order: sequential\n")
    ids = [c.run_id for c in make_plan(load_campaign(path)).cells]
    assert ids == ["small.native.as-is.i01", "small.native.as-is.i02",
                   "large.native.as-is.i01", "large.native.as-is.i02"]


def test_dry_run_prints_plan_and_estimate_and_writes_nothing(tmp_path: Path) -> None:
    path = fake_campaign(tmp_path)
    result = CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(tmp_path / "runs"), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        "campaign fake-c: 4 runs (2 models × 1 environments × 1 cache states × 2 iterations), "
        "order randomized-blocks, seed 3")
    assert "estimated duration: 4s" in result.output
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------- cooldown, sampler


def test_cooldown_waits_for_both_time_and_temperature() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    gpu = FakeGpu([60, 55, 50, 44, 44])
    result = wait_for_cooldown(Cooldown(max_temp_c=45, min_s=5, max_wait_s=600, poll_s=2), gpu,
                               last_end=100.0, clock=lambda: now[0], sleep=sleep)
    assert result.reached and result.temp_c == 44
    assert result.waited_s >= 5 and sum(slept) == result.waited_s


def test_cooldown_gives_up_with_a_warning() -> None:
    now = [0.0]
    result = wait_for_cooldown(Cooldown(max_temp_c=45, min_s=0, max_wait_s=10, poll_s=2), FakeGpu([70]),
                               last_end=None, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert not result.reached
    assert result.warning == "cooldown gave up after 10 s at 70 °C (threshold 45 °C)"


def test_sampler_falls_back_to_meminfo_where_nvml_has_no_memory() -> None:
    mem = {"MemTotal": 120 * 2**30, "MemAvailable": 80 * 2**30, "Cached": 2**30}
    sampler = Sampler(FakeGpu([40]), interval_s=0.01, meminfo=lambda: mem)
    sampler.start()
    time.sleep(0.1)
    summary = sampler.stop()
    assert summary.samples >= 3
    assert summary.gpu_mem_source == "meminfo"
    assert summary.peaks["gpu_mem_used_gib"] == 40.0
    assert summary.peaks["gpu_proc_mem_gib"] == 3.0
    assert any("unified memory" in note for note in summary.notes)
    import gzip

    lines = gzip.decompress(sampler.csv_gz()).decode().splitlines()
    assert lines[0].startswith("t_s,gpu_util_pct,gpu_mem_used_gib,gpu_mem_source")
    assert ",meminfo," in lines[1] and "4242:3072" in lines[1]


# --------------------------------------------------------------------------- redaction


def test_redaction_by_name_and_by_value() -> None:
    assert redact_text("Authorization: Bearer abcdefghijkl123 AKIAABCDEFGHIJKLMNOP") == \
        "Authorization: Bearer [REDACTED] [REDACTED]"
    assert redact_argv(["x", "--hf-token", "zzz", "--api-key=yyy", "ghp_" + "a" * 36]) == \
        ["x", "--hf-token", "[REDACTED]", "--api-key=[REDACTED]", "[REDACTED]"]


# --------------------------------------------------------------------------- end to end


def all_text_under(folder: Path) -> str:
    import gzip

    chunks = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            chunks.append((gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", "replace"))
    return "\n".join(chunks)


def test_fake_campaign_end_to_end_through_the_run_store(tmp_path: Path) -> None:
    path = fake_campaign(tmp_path, extra="noise: 0.01, print_env: [HF_TOKEN]")
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(runs)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == f"4 ok, 0 failed → {runs}/fake-c"
    records = RunStore(runs).load_all()
    assert sorted(r.run_id for r in records) == sorted(c.run_id for c in make_plan(load_campaign(path)).cells)
    small = [r for r in records if r.model.name == "small"]
    assert all(110 < (r.metrics["output_throughput_tok_s"] or 0) < 130 for r in small)
    assert all(r.status.ok and r.environment.kind == "native" for r in records)
    record = small[0]
    assert record.workload.details["parser"] == "trtllm-log"
    assert record.metrics["kv_cache_gib"] is not None
    assert "memory_ledger" in record.hardware.details and "monitor" in record.hardware.details
    folder = runs / "fake-c" / record.run_id
    assert sorted(p.name for p in folder.iterdir()) == ["bench.log", "run.json", "samples.csv.gz"]
    # declared by the campaign: recorded, but a secret by its name
    assert record.environment.details["env_vars"]["HF_TOKEN"] == "[REDACTED]"
    assert record.environment.details["env_vars_unrecorded"] > 0
    assert PLANTED not in all_text_under(runs)
    assert "HF_TOKEN=[REDACTED]" in (folder / "bench.log").read_text()
    events = [json.loads(line)["event"] for line in (runs / "fake-c/_campaign/journal.jsonl").read_text().splitlines()]
    assert events.count("run-end") == 4 and events[-1] == "campaign-end"
    # Deterministic numbers from the seeds: a second store gets the same figures.
    again = tmp_path / "again"
    assert CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(again), "-q"]).exit_code == 0
    first = {r.run_id: r.metrics["output_throughput_tok_s"] for r in records}
    assert first == {r.run_id: r.metrics["output_throughput_tok_s"] for r in RunStore(again).load_all()}
    # Without --resume a filled campaign is refused; with it, nothing is repeated.
    refused = CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(runs)])
    assert refused.exit_code == 1 and "pass --resume" in refused.output
    resumed = CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(runs), "--resume", "-q"])
    assert resumed.exit_code == 0
    assert resumed.output.splitlines()[-1] == f"0 ok, 0 failed, 4 already present → {runs}/fake-c"


def test_quiet_prints_only_the_summary(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", str(fake_campaign(tmp_path)), "--runs-dir",
                                       str(tmp_path / "r"), "--quiet"])
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [f"4 ok, 0 failed → {tmp_path}/r/fake-c"]


def test_crash_and_timeout_are_recorded_and_the_campaign_goes_on(tmp_path: Path) -> None:
    path = fake_campaign(tmp_path, iterations=3, timeout=2,
                         extra="noise: 0, fail_iterations: [1], hang_iterations: [2]")
    runs = tmp_path / "runs"
    started = time.monotonic()
    result = CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(runs), "-q"])
    assert time.monotonic() - started < 30
    assert result.exit_code == 1
    by_id = {r.run_id: r for r in RunStore(runs).load_all()}
    assert len(by_id) == 6
    crashed = by_id["small.native.as-is.i01"]
    assert not crashed.status.ok and crashed.status.exit_code == 3
    assert crashed.status.reason == "step 'bench' exited with code 3 (see bench.log)"
    assert "simulated crash" in (runs / "fake-c/small.native.as-is.i01/bench.log").read_text()
    hung = by_id["large.native.as-is.i02"]
    assert hung.status.reason == "timed out after 2 s in step 'bench' (killed)"
    assert by_id["small.native.as-is.i03"].status.ok
    assert "output_throughput_tok_s" not in crashed.metrics


def test_kill_9_mid_campaign_then_resume_runs_every_cell_exactly_once(tmp_path: Path) -> None:
    path = fake_campaign(tmp_path, iterations=4, sleep=0.4)
    runs = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "sparkreport", "run", str(path), "--runs-dir", str(runs), "-q"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(list((runs / "fake-c").glob("*/run.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = {p.parent.name for p in (runs / "fake-c").glob("*/run.json")}
    assert 2 <= len(before) < 8
    done = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    plan = make_plan(load_campaign(path))
    stored = sorted(p.name for p in (runs / "fake-c").iterdir() if (p / "run.json").exists())
    assert stored == sorted(c.run_id for c in plan.cells)
    assert not (runs / "fake-c/.work").exists()
    assert not [p for p in (runs / "fake-c").iterdir() if p.name.startswith(".") and p.is_dir()]
    assert len(RunStore(runs).load_all()) == 8


def test_sigterm_interrupts_and_resume_finishes(tmp_path: Path) -> None:
    # Runs long enough (six of 1.5 s) that a loaded machine, slow to see the first run.json, still
    # sends SIGTERM while the campaign runs (with 0.5 s runs it once finished first: exit 0).
    path = fake_campaign(tmp_path, iterations=3, sleep=1.5)
    runs = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "sparkreport", "run", str(path), "--runs-dir", str(runs), "-q"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list((runs / "fake-c").glob("*/run.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "--resume` finishes it" in err
    assert subprocess.run(cmd + ["--resume"], env=env, timeout=120).returncode == 0
    assert len(RunStore(runs).load_all()) == 6


def test_missing_environment_is_one_line_and_the_rest_runs(tmp_path: Path) -> None:
    text = FAKE.format(iterations=1, timeout=60, sleep=0, extra="noise: 0", token="x").replace(
        "environments:\n", "environments:\n  - {name: jail, kind: chroot, rootfs: /nonexistent-rootfs}\n")
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["run", str(write(tmp_path, text)), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if "jail" in line]
    assert len(lines) == 1 and "environment 'jail' (chroot) cannot run here" in lines[0]
    assert {r.environment.name for r in RunStore(runs).load_all()} == {"native"}


def test_gpu_is_injected_and_recorded(tmp_path: Path) -> None:
    path = fake_campaign(tmp_path, iterations=1)
    campaign = load_campaign(path)
    report = run_campaign(campaign, RunOptions(runs_dir=tmp_path / "runs", quiet=True),
                          gpu_factory=lambda index: (FakeGpu([41]), None))
    assert len(report.written) == 2
    record = RunStore(tmp_path / "runs").load_all()[0]
    assert record.metrics["start_temp_c"] == 41 and record.metrics["end_temp_c"] == 41
    assert record.hardware.gpu_name == "NVIDIA GB10" and record.hardware.unified_memory is True
    assert record.hardware.details["monitor"]["gpu_mem_source"] == "meminfo"


# --------------------------------------------------------------------------- light path


def test_run_path_imports_no_heavy_libraries(tmp_path: Path) -> None:
    path = fake_campaign(tmp_path, iterations=1)
    blocker = textwrap.dedent(f"""
        import sys
        BLOCKED = ("pandas", "altair", "mkdocs", "material", "vl_convert", "scipy", "numpy", "pyarrow", "jinja2")
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ImportError(f"blocked: {{name}}")
        sys.meta_path.insert(0, Block())
        import sparkreport.execute.runner, sparkreport.execute.torch_bench, sparkreport.cli.run_cmds
        from sparkreport.cli import main
        sys.argv = ["sparkreport", "run", {str(path)!r}, "--runs-dir", {str(tmp_path / "runs")!r}, "-q"]
        main()
    """)
    done = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("2 ok, 0 failed → " + str(tmp_path / "runs") + "/fake-c")


# --------------------------------------------------------------------------- cgroup (real)


def cgroup_ready() -> str | None:
    if os.geteuid() != 0:
        return "not root"
    if cgroups.memory_root() is None:
        return "no cgroup memory controller"
    return None


def test_cgroup_environment_runs_for_real(tmp_path: Path) -> None:
    reason = cgroup_ready()
    if reason:
        if IN_CI:
            pytest.fail(f"CI=true but the cgroup environment cannot run: {reason}")
        pytest.skip(reason)
    text = FAKE.format(iterations=1, timeout=60, sleep=0.3, extra="noise: 0", token="x").replace(
        "  - {name: native, kind: native, env: {HF_TOKEN: x}}",
        "  - {name: cg, kind: cgroup, memory_limit: 512MiB}")
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["run", str(write(tmp_path, text)), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 0, result.output
    record = RunStore(runs).load_all()[0]
    group = record.environment.details["cgroup"]
    assert record.environment.kind == "cgroup"
    assert group["version"] == cgroups.version() and group["limit_gib"] == 0.5
    assert group["peak_gib"] > 0.001  # the python process was counted
    assert not Path(group["path"]).exists()  # removed after the run
    assert record.hardware.details["memory_ledger"]["peak"]["cgroup_limit_gib"] == 0.5


def test_sampling_readers_match_the_one_shot_reads(tmp_path: Path) -> None:
    """The open-descriptor readers the 10 Hz sampler uses read what the plain functions read,
    and see a file's new contents (pread from offset 0), for cgroup v2 and v1 names."""
    from sparkreport.execute import cgroups
    from sparkreport.execute.monitor import MeminfoReader, read_meminfo

    def cgroup_folder(name: str, files: dict[str, str]) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        for file, text in files.items():
            (folder / file).write_text(text)
        return folder

    v2 = cgroup_folder("v2", {"memory.current": "1000\n", "memory.peak": "2000\n",
                              "memory.stat": "anon 300\nfile 400\nshmem 50\n"})
    reader = cgroups.MemoryReader(v2)
    assert reader.read() == cgroups.MemoryStats(current=1000, peak=2000, anon=300, file=400, shmem=50)
    (v2 / "memory.current").write_text("1500\n")  # same length or longer: rewritten in place
    assert reader.read().current == 1500
    reader.close()
    v1 = cgroup_folder("v1", {"memory.usage_in_bytes": "10\n", "memory.max_usage_in_bytes": "20\n",
                              "memory.stat": "total_rss 3\ntotal_cache 4\ntotal_shmem 1\n"})
    old = cgroups.read_memory(v1)
    new = cgroups.MemoryReader(v1).read()
    assert (new.current, new.peak, new.anon, new.file, new.shmem) == (old.current, old.peak, 3, 4, 1)
    assert cgroups.MemoryReader(tmp_path / "gone").read() == cgroups.MemoryStats()
    meminfo = MeminfoReader()
    assert set(meminfo()) == set(read_meminfo()) and meminfo()["MemTotal"] == read_meminfo()["MemTotal"]
    meminfo.close()
    assert meminfo()["MemTotal"] > 0  # reopens after close


# --------------------------------------------------------------------------- torch_bench config


def test_torch_presets_resolve_without_transformers() -> None:
    """A complete preset needs no transformers import (seconds per run); a partial config does."""
    from sparkreport.execute.torch_bench import PRESETS, resolve_config

    blocker = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "transformers":
                    raise AssertionError("transformers imported")
        sys.meta_path.insert(0, Block())
        from sparkreport.execute.torch_bench import PRESETS, resolve_config
        for preset in PRESETS:
            assert resolve_config(preset, {})["config_source"] == "preset"
    """)
    done = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    config = resolve_config("llama-3-8b", {"num_hidden_layers": 2})
    assert config["num_hidden_layers"] == 2 and config["hidden_size"] == PRESETS["llama-3-8b"]["hidden_size"]


def test_a_signal_whose_raise_was_lost_still_stops_the_campaign(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGTERM that lands in a fork hook as a run's process starts is printed by Python as
    "Exception ignored" and its exception lost (seen in CI: the campaign went on, exit 0). The
    handler's note of it is enough: the campaign stops before the next run, and the run it
    killed is left pending, not written as a failure."""
    import threading

    from sparkreport.execute.runner import CampaignRunner

    def lost(self: CampaignRunner, signum: int, frame: object) -> None:  # the handler ran; its raise did not land
        self.signal = signum
        if self.current is not None:
            self.current.kill()

    monkeypatch.setattr(CampaignRunner, "on_signal", lost)
    runs = tmp_path / "runs"
    campaign = load_campaign(fake_campaign(tmp_path, iterations=3, sleep=0.5))

    def signal_after_the_first_run() -> None:
        deadline = time.monotonic() + 60
        while not list((runs / "fake-c").glob("*/run.json")) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=signal_after_the_first_run, daemon=True).start()
    report = run_campaign(campaign, RunOptions(runs_dir=runs, quiet=True),
                          gpu_factory=lambda index: (FakeGpu([41]), None))
    assert report.interrupted and 1 <= len(report.written) < 6
    assert all(record.status.ok for record in RunStore(runs).load_all())
