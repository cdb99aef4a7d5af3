"""Edit-to-reload time of ``sparkreport serve`` at 100 / 1 000 / 10 000 runs (issue 16, item 4).

Prints figures; asserts nothing (the behaviour is tested by ``tests/test_serve.py``).

For each N the bench copies ``STORES/n<N>/project`` (``runs/`` + ``sparkreport.yml``, made by
``bench/run.py``) to ``WORK/n<N>``, adds a blog post whose sentence is bound to the data, starts
``sparkreport serve`` on a free port and times, from the moment the file is written to the
moment the served HTML shows the change (polled every 50 ms over HTTP):

* **start**: the process started → the post's page is served (first render + full build);
* **post edit**: a new word written into the post → the post's page contains it (``--repeat``);
* **run added**: ``sparkreport ingest`` of one more run (a stored log copied, one line appended,
  so its content hash is new) → the home page's provenance line counts N + 1 runs. The ingest's
  own time is included (it is what a user waits for).

The server's own lines split each figure: ``render s`` is the re-render (from serve's
``re-rendered in`` line), ``builds`` the MkDocs rebuilds it triggered and their total seconds.

    python bench/serve_reload.py                       # N = 100, 1000, 10000
    python bench/serve_reload.py --runs 100 1000 --repeat 5 --json build/bench-serve.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from run import checkout_env  # noqa: E402 (bench/ is not a package)

POST = Path("docs/blog/posts/bench.md")
POST_URL = "blog/2026/01/01/bench-post/"
POLL_S = 0.05


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_run(runs_dir: Path) -> tuple[Path, dict[str, Any]]:
    """A stored per-run record with a log beside it (not a published summary): (folder, run.json)."""
    for campaign in sorted(p for p in runs_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        for folder in sorted(p for p in campaign.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
            record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
            if any(f.suffix == ".log" for f in folder.iterdir()):
                return folder, record
    raise SystemExit(f"{runs_dir}: no run with a .log file to copy")


def write_post(project: Path, record: dict[str, Any], campaign: str, word: str) -> None:
    model, environment = record["model"]["name"], record["environment"]["name"]
    binding = (f'{{{{ value("output_throughput_tok_s", model="{model}", environment="{environment}", '
               f'campaign="{campaign}") }}}}')
    path = project / POST
    path.parent.mkdir(parents=True, exist_ok=True)
    (project / "docs/blog/index.md").write_text("# Blog\n", encoding="utf-8")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(f"---\ndate: 2026-01-01\n---\n\n# Bench post\n\n{model} ran at {binding} ({environment}).\n\n"
                   f"Edit marker: {word}.\n", encoding="utf-8")
    os.replace(tmp, path)  # as an editor saves: one event, never a half-written file


class Served:
    def __init__(self, project: Path, log: Path) -> None:
        self.url = f"http://127.0.0.1:{free_port()}/"
        self.log = log
        self._out = log.open("w")
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sparkreport", "serve", "--dev-addr", self.url[7:-1]],
            cwd=project, env=checkout_env(), stdout=self._out, stderr=subprocess.STDOUT)

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def get(self, path: str) -> str:
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as response:
                return str(response.read().decode("utf-8", errors="replace"))
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return ""

    def until(self, path: str, needle: str, since: float, timeout_s: float) -> float:
        """Seconds from ``since`` until the page at ``path`` contains ``needle``."""
        while time.perf_counter() - since < timeout_s:
            if self.process.poll() is not None:
                raise SystemExit(f"serve exited ({self.process.returncode}):\n{self.text()[-3000:]}")
            if needle in self.get(path):
                return time.perf_counter() - since
            time.sleep(POLL_S)
        raise SystemExit(f"{needle!r} not at /{path} after {timeout_s:.0f} s:\n{self.text()[-3000:]}")

    def settle(self, quiet_s: float = 2.0, timeout_s: float = 600.0) -> None:
        """Wait until the server has printed nothing for ``quiet_s`` (its rebuilds are over)."""
        deadline = time.monotonic() + timeout_s
        size, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            now = self.log.stat().st_size
            if now != size:
                size, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return
            time.sleep(0.1)

    def peak_rss_mib(self) -> float:
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text(encoding="utf-8")
        except OSError:
            return float("nan")
        match = re.search(r"VmHWM:\s+(\d+) kB", status)
        return int(match.group(1)) / 1024 if match else float("nan")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._out.close()


def server_split(text: str, before: int) -> tuple[float, int, float]:
    """(render s, MkDocs builds, their seconds) printed after offset ``before`` of the log."""
    tail = text[before:]
    renders = [float(x) for x in re.findall(r"re-rendered in ([\d.]+) s", tail)]
    builds = [float(x) for x in re.findall(r"Documentation built in ([\d.]+) seconds", tail)]
    return (sum(renders), len(builds), sum(builds))


def bench(n: int, stores: Path, work: Path, repeat: int, timeout_s: float) -> dict[str, Any]:
    source = stores / f"n{n}" / "project"
    if not (source / "runs").is_dir():
        raise SystemExit(f"{source}/runs: missing — make it with `python bench/run.py --runs {n}`")
    project = work / f"n{n}"
    if project.exists():
        shutil.rmtree(project)
    project.mkdir(parents=True)
    shutil.copytree(source / "runs", project / "runs", symlinks=True)  # a real copy: the store stays untouched
    shutil.copy2(source / "sparkreport.yml", project / "sparkreport.yml")
    folder, record = one_run(project / "runs")
    campaign = folder.parent.name
    write_post(project, record, campaign, "start")

    row: dict[str, Any] = {"runs": n}
    served = Served(project, work / f"n{n}-serve.log")
    try:
        row["start_s"] = served.until(POST_URL, "Edit marker: start", served.started, timeout_s)
        served.settle()
        edits = []
        for index in range(repeat):
            word = f"edit{index}x{n}"
            offset = len(served.text())
            since = time.perf_counter()
            write_post(project, record, campaign, word)
            seconds = served.until(POST_URL, f"Edit marker: {word}", since, timeout_s)
            served.settle()
            render_s, builds, build_s = server_split(served.text(), offset)
            edits.append({"s": seconds, "render_s": render_s, "builds": builds, "build_s": build_s})
        row["edits"] = edits

        log = next(f for f in folder.iterdir() if f.suffix == ".log")
        extra = work / f"n{n}-added" / log.name.replace(".log", "-added.log")
        extra.parent.mkdir(parents=True, exist_ok=True)
        extra.write_bytes(log.read_bytes() + b"\n# serve_reload: one more run\n")
        labels = [arg for key, value in sorted((record.get("labels") or {}).items())
                  for arg in ("--label", f"{key}={value}")]
        offset = len(served.text())
        since = time.perf_counter()
        subprocess.run([sys.executable, "-m", "sparkreport", "ingest", str(extra), "--campaign", campaign,
                        "--environment", record["environment"]["name"], *labels], cwd=project, env=checkout_env(),
                       check=True, capture_output=True)
        row["ingest_s"] = time.perf_counter() - since
        total = sum(1 for _ in (project / "runs").glob("*/*/run.json"))
        row["run_added_s"] = served.until("", f"{total:,} runs", since, timeout_s)  # the footer's count
        served.settle()
        row["run_added_render_s"], row["run_added_builds"], row["run_added_build_s"] = server_split(
            served.text(), offset)
        row["peak_rss_mib"] = served.peak_rss_mib()
    finally:
        served.stop()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--stores", type=Path, default=Path(os.environ.get("SPARKREPORT_BENCHSTORES",
                                                                           "/work/benchstores")))
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "bench-serve")
    parser.add_argument("--repeat", type=int, default=3, help="post edits per N")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one step may take")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    rows = []
    print("| runs | start s | post edit s (each) | of which render s | MkDocs builds (s) | run added s "
          "(ingest s) | of which render s | MkDocs builds (s) | peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.runs:
        row = bench(n, args.stores, args.work, args.repeat, args.timeout)
        rows.append(row)
        edits = row["edits"]
        seconds = ", ".join(f"{e['s']:.2f}" for e in edits)
        renders = ", ".join(f"{e['render_s']:.1f}" for e in edits)
        builds = ", ".join(f"{e['builds']} ({e['build_s']:.1f})" for e in edits)
        print(f"| {n} | {row['start_s']:.1f} | {seconds} | {renders} | {builds} | "
              f"{row['run_added_s']:.1f} ({row['ingest_s']:.1f}) | {row['run_added_render_s']:.1f} | "
              f"{row['run_added_builds']} ({row['run_added_build_s']:.1f}) | {row['peak_rss_mib']:.0f} |",
              flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
