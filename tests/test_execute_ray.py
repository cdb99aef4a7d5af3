"""`sparkreport run --cluster`: a fake-workload campaign as Ray tasks on a local CPU cluster —
every cell exactly once, a worker dying mid-run (lost, then --resume; or retried by Ray), the
GPU request checked, and Ray imported only on the --cluster path.

Skipped only where Ray is not installed and CI is not "true" (`pip install -e '.[test]'` has it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.execute.campaign import load_campaign
from sparkreport.execute.plan import make_plan
from sparkreport.execute.runner import RunOptions, run_campaign
from sparkreport.store import RunStore

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI") == "true"

try:
    import ray
except ImportError:
    if IN_CI:
        raise  # CI must run these: `ray` is in the test extra
    pytest.skip("ray is not installed (pip install 'sparkreport[ray]')", allow_module_level=True)

from sparkreport.execute.cluster import CRASH_HOOK, ClusterOptions, run_on_cluster  # noqa: E402

CAMPAIGN = """
campaign: {name}
seed: 5
iterations: 2
timeout_s: 60
models:
  - {{name: small, id: fake/small, params: {{throughput_tok_s: 120}}}}
  - {{name: large, id: fake/large, params: {{throughput_tok_s: 20}}}}
environments:
  - {{name: native, kind: native}}
  - {{name: native-alt, kind: native}}
workload: {{kind: fake, noise: 0.01}}
cooldown: {{min_s: 0}}
monitoring: {{interval_s: 0.05, nvml: false}}
preflight: {{enabled: false}}
"""


def campaign_file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(CAMPAIGN.format(name=name)).lstrip())
    return path


@pytest.fixture(scope="module")
def crash_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A local 2-CPU Ray cluster for the module; its workers see the crash hook's folder."""
    folder = tmp_path_factory.mktemp("crash")
    previous = os.environ.get(CRASH_HOOK)
    os.environ[CRASH_HOOK] = str(folder)  # workers inherit the environment Ray starts with
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    try:
        yield folder
    finally:
        ray.shutdown()
        if previous is None:
            os.environ.pop(CRASH_HOOK, None)
        else:
            os.environ[CRASH_HOOK] = previous


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, ["run", *args])


def events(runs: Path, name: str) -> list[dict[str, Any]]:
    lines = (runs / name / "_campaign/journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def stored_ids(runs: Path, name: str) -> list[str]:
    return sorted(p.parent.name for p in (runs / name).glob("*/run.json"))


def planned_ids(path: Path) -> list[str]:
    return sorted(c.run_id for c in make_plan(load_campaign(path)).cells)


# Before the module's cluster starts: these start (or refuse) their own.


BLOCK_RAY = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "ray":
            raise ImportError(f"blocked: {name}")
sys.meta_path.insert(0, Block())
from sparkreport.cli import main
sys.argv = ["sparkreport", "run", *sys.argv[1:]]
try:
    main()
finally:
    print("RAY IMPORTED" if "ray" in sys.modules else "no ray")
"""


def test_ray_is_imported_only_on_the_cluster_path(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, "no-ray")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    local = subprocess.run([sys.executable, "-c", BLOCK_RAY, str(path), "--runs-dir", str(tmp_path / "a"), "-q"],
                           capture_output=True, text=True, timeout=120, env=env)
    assert local.returncode == 0, local.stderr
    assert local.stdout.splitlines()[-1] == "no ray"
    missing = subprocess.run([sys.executable, "-c", BLOCK_RAY, str(path), "--runs-dir", str(tmp_path / "b"),
                              "--cluster", "local", "--gpus-per-run", "0"],
                             capture_output=True, text=True, timeout=120, env=env)
    assert missing.returncode == 1
    assert "Error: --cluster needs Ray — install it with `pip install 'sparkreport[ray]'`" in missing.stderr


def test_cluster_local_starts_and_stops_its_own_ray(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, "own-ray")
    cmd = [sys.executable, "-m", "sparkreport", "run", str(path), "--runs-dir", str(tmp_path / "runs"),
           "--cluster", "local", "--gpus-per-run", "0", "-q"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"8 ok, 0 failed → {tmp_path / 'runs'}/own-ray"


# On the module's local cluster.


def test_campaign_runs_every_cell_once_on_a_local_cluster(tmp_path: Path, crash_dir: Path) -> None:
    path = campaign_file(tmp_path, "ray-c")
    runs = tmp_path / "runs"
    result = cli(str(path), "--runs-dir", str(runs), "--cluster", "local", "--gpus-per-run", "0")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"8 ok, 0 failed → {runs}/ray-c"
    assert stored_ids(runs, "ray-c") == planned_ids(path)
    records = RunStore(runs).load_all()  # every run.json valid
    assert len(records) == 8 and all(r.status.ok for r in records)
    assert {r.environment.name for r in records} == {"native", "native-alt"}
    record = records[0]
    assert sorted(p.name for p in (runs / "ray-c" / record.run_id).iterdir()) == \
        ["bench.log", "run.json", "samples.csv.gz"]
    assert record.workload.details["cluster"]["ip"] and record.workload.details["cluster"]["gpu_ids"] == []
    assert record.workload.details["parser"] == "trtllm-log"
    assert not (runs / "ray-c/.work").exists()
    assert not [p for p in (runs / "ray-c").iterdir() if p.name.startswith(".")]
    journal = events(runs, "ray-c")
    assert [e["event"] for e in journal].count("run-end") == 8 and journal[-1]["event"] == "campaign-end"
    assert journal[0]["cluster"] == "local" and journal[0]["gpus_per_run"] == 0
    # The same per-cell code as the local runner: the same figures from the same seeds.
    run_campaign(load_campaign(path), RunOptions(runs_dir=tmp_path / "local", quiet=True))
    local = {r.run_id: r.metrics["output_throughput_tok_s"] for r in RunStore(tmp_path / "local").load_all()}
    assert local == {r.run_id: r.metrics["output_throughput_tok_s"] for r in records}
    # Resume with nothing left dispatches nothing.
    again = cli(str(path), "--runs-dir", str(runs), "--cluster", "local", "--gpus-per-run", "0", "--resume", "-q")
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines()[-1] == f"0 ok, 0 failed, 8 already present → {runs}/ray-c"


def test_a_dead_worker_loses_its_cell_and_resume_runs_it(tmp_path: Path, crash_dir: Path) -> None:
    path = campaign_file(tmp_path, "ray-crash")
    runs = tmp_path / "runs"
    victim = "large.native-alt.as-is.i01"
    (crash_dir / f"ray-crash.{victim}").write_text("")
    args = [str(path), "--runs-dir", str(runs), "--cluster", "local", "--gpus-per-run", "0", "-q"]
    result = cli(*args, "--retries", "0")
    assert result.exit_code == 1
    assert (crash_dir / f"ray-crash.{victim}.done").exists()  # the worker did die
    assert result.stdout.splitlines()[-1] == f"7 ok, 0 failed, 1 lost (worker or node died) → {runs}/ray-crash"
    assert f"{victim}: its worker or node died (WorkerCrashedError)" in result.stderr
    assert "--gpus-per-run 0 --resume` runs them" in result.stderr
    assert victim not in stored_ids(runs, "ray-crash") and len(stored_ids(runs, "ray-crash")) == 7
    journal = events(runs, "ray-crash")
    assert [e["run_id"] for e in journal if e["event"] == "run-lost"] == [victim]
    assert victim not in [e["run_id"] for e in journal if e["event"] == "run-end"]
    resumed = cli(*args, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.splitlines()[-1] == f"1 ok, 0 failed, 7 already present → {runs}/ray-crash"
    assert stored_ids(runs, "ray-crash") == planned_ids(path)
    assert len(RunStore(runs).load_all()) == 8


def test_ray_retries_a_cell_whose_worker_died(tmp_path: Path, crash_dir: Path) -> None:
    path = campaign_file(tmp_path, "ray-retry")
    victim = "small.native.as-is.i02"
    (crash_dir / f"ray-retry.{victim}").write_text("")
    report = run_on_cluster(load_campaign(path), RunOptions(runs_dir=tmp_path / "runs", quiet=True),
                            ClusterOptions(address="local", gpus_per_run=0, retries=1))
    assert (crash_dir / f"ray-retry.{victim}.done").exists()
    assert report.lost == [] and report.complete and len(report.written) == 8
    assert stored_ids(tmp_path / "runs", "ray-retry") == planned_ids(path)


def test_gpus_asked_of_a_cluster_without_gpus_is_one_clear_error(tmp_path: Path, crash_dir: Path) -> None:
    result = cli(str(campaign_file(tmp_path, "ray-gpu")), "--runs-dir", str(tmp_path / "runs"), "--cluster", "local")
    assert result.exit_code == 1
    assert "each run asks for 1 GPU(s) and the cluster has 0" in result.output
    assert "--gpus-per-run 0" in result.output
    assert not list((tmp_path / "runs").glob("*/*/run.json"))
