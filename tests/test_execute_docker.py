"""The docker environment against a real Docker engine and a tiny local image (no pulls).

Needs a running dockerd (the test script starts `dockerd --iptables=false --bridge=none`) and
Debian's busybox-static (/bin/busybox). Skipped when those are missing — but never when
CI=true: there, a missing engine is a failure.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.store import RunStore

IMAGE = "sparkreport-test:busybox"
FIXTURE = Path(__file__).parent / "fixtures" / "execute" / "trtllm-report.log"
PLANTED = "hf_PLANTEDdockerTOKEN0123456789"


def _missing() -> str | None:
    try:
        import docker
    except ImportError:
        return "the docker SDK is not installed"
    try:
        docker.from_env(timeout=10).ping()
    except Exception as exc:
        return f"no Docker daemon ({type(exc).__name__})"
    if not Path("/bin/busybox").exists() and not shutil.which("busybox"):
        return "no busybox binary (apt-get install busybox-static)"
    return None


@pytest.fixture(scope="module")
def image() -> str:
    reason = _missing()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but Docker cannot be used: {reason}")
        pytest.skip(reason)
    import docker

    busybox = Path("/bin/busybox") if Path("/bin/busybox").exists() else Path(str(shutil.which("busybox")))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for folder in ("bin", "tmp", "proc", "sys", "dev", "etc"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        data = busybox.read_bytes()
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
        for tool in ("sh", "cat", "env", "sleep", "echo"):
            link = tarfile.TarInfo(f"bin/{tool}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
    client = docker.from_env()
    client.api.import_image_from_data(buffer.getvalue(), repository="sparkreport-test", tag="busybox")
    return IMAGE


def campaign(tmp_path: Path, command: str, timeout: float = 60, guard: str = "{}") -> Path:
    path = tmp_path / "docker.yaml"
    path.write_text(textwrap.dedent(f"""
        campaign: docker-c
        iterations: 1
        timeout_s: {timeout}
        models: [{{name: m, id: fake/m}}]
        environments:
          - name: box
            kind: docker
            image: "{IMAGE}"
            gpus: none
            memory_limit: 256MiB
            ulimits: {{}}
            binds: [{FIXTURE.parent}]
            env: {{HF_TOKEN: {PLANTED}, PLAIN: visible}}
        workload:
          kind: command
          command: "{command}"
          parser: trtllm-log
          gpu: false
        cooldown: {{min_s: 0}}
        preflight: {{enabled: false}}
        guard: {guard}
    """))
    return path


def test_docker_environment_runs_a_real_container(image: str, tmp_path: Path) -> None:
    import docker

    path = campaign(tmp_path, f"sh -c 'cat {FIXTURE}; env; sleep 0.5'")
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 0, result.output
    record = RunStore(runs).load_all()[0]
    assert record.environment.kind == "container"
    assert record.status.ok and record.metrics["output_throughput_tok_s"] is not None
    assert record.software.image == IMAGE
    assert record.software.image_digest == docker.from_env().images.get(IMAGE).id
    folder = runs / "docker-c" / record.run_id
    inspect = json.loads((folder / "docker-inspect.json").read_text())
    assert inspect["HostConfig"]["Memory"] == 256 * 2**20
    assert inspect["HostConfig"]["IpcMode"] == "host"
    container = record.environment.details["container"]
    assert container["oom_killed"] is False and container["cgroup_path"]
    log = (folder / "bench.log").read_text()
    assert "PLAIN=visible" in log and "HF_TOKEN=[REDACTED]" in log
    for file in runs.rglob("*"):
        if file.is_file() and file.suffix != ".gz":
            assert PLANTED not in file.read_text(errors="replace"), file
    assert not docker.from_env().containers.list(all=True, filters={"label": "org.sparkreport.run_id"})


def test_docker_timeout_kills_the_container(image: str, tmp_path: Path) -> None:
    import docker

    path = campaign(tmp_path, "sleep 600", timeout=2)
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 1
    record = RunStore(runs).load_all()[0]
    assert record.status.reason == "timed out after 2 s in step 'bench' (killed)"
    assert not docker.from_env().containers.list(all=True, filters={"label": "org.sparkreport.run_id"})


def test_docker_guard_stall_kills_the_container_and_it_runs_oom_first(image: str, tmp_path: Path) -> None:
    import docker

    path = campaign(tmp_path, "sh -c 'cat /proc/self/oom_score_adj; sleep 600'", guard="{stall_s: 2}")
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 1
    record = RunStore(runs).load_all()[0]
    assert (record.status.reason or "").startswith("stalled: no output and no CPU use for ")
    assert record.workload.details["duration_s"] < 15  # timeout_s is 60
    folder = runs / "docker-c" / record.run_id
    assert (folder / "bench.log").read_text().split()[0] == "1000"  # --oom-score-adj reached the container
    assert json.loads((folder / "docker-inspect.json").read_text())["HostConfig"]["OomScoreAdj"] == 1000
    assert not docker.from_env().containers.list(all=True, filters={"label": "org.sparkreport.run_id"})
