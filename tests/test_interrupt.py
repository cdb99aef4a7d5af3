"""Ctrl-C (SIGINT to the whole process group, as a terminal sends it) and SIGTERM during a real
`sparkreport build --full` of the shipped project, workers forked: the build stops soon, workers
included, with status 130 (143), one line and no traceback, and the previous site unchanged."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparkreport import parallel

REPO = Path(__file__).resolve().parents[1]
PROJECT = ("runs", "docs", "templates", "sparkreport.yml", "mkdocs.yml")
#: (fraction of a full build's duration, signal): every stage, from loading to the publish.
MOMENTS = [(0.15, signal.SIGINT), (0.25, signal.SIGINT), (0.4, signal.SIGTERM), (0.55, signal.SIGINT),
           (0.7, signal.SIGINT), (0.8, signal.SIGTERM)]
LINE = "interrupted — the previous site is unchanged"
#: The line of a build the signal reached after its new site went live (the swap is not undone):
#: a signal late in a build on a machine faster than the first build's time.
SWAPPED = "interrupted — the new site is in place"
#: Ended within this of the signal, its work done: the signal came as the build ended.
LATE_S = 0.1

needs_fork = pytest.mark.skipif(not parallel.can_fork(), reason="workers are forked on Linux only")


def _in_group(group: int) -> list[int]:
    """The processes still in process group ``group`` (zombies not counted: they have ended)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat[2]) == group and stat[0] not in "ZX":
            found.append(int(entry.name))
    return found


def _files(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}


@needs_fork
def test_ctrl_c_or_sigterm_at_any_moment_stops_a_build_at_once_with_one_line(tmp_path: Path) -> None:
    root = tmp_path / "project"
    for name in PROJECT:
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, root / name)
    env = {**os.environ, "PYTHONPATH": str(REPO), parallel.JOBS_ENV: "2"}
    command = [sys.executable, "-m", "sparkreport", "build", "--full"]
    subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)
    started = time.monotonic()
    subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)
    full_s = time.monotonic() - started
    site = root / "site"
    before = _files(site)
    stops_s = []
    for fraction, signum in MOMENTS:
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)  # its own group: Ctrl-C's target
        time.sleep(full_s * fraction)
        if proc.poll() is not None:  # faster than the first time (a machine less busy): not this moment
            assert proc.returncode == 0
            continue
        os.killpg(proc.pid, signum)
        sent = time.monotonic()
        try:  # EOF on stdout and stderr: every process that holds them (workers too) has ended
            out, err = proc.communicate(timeout=30)
        finally:
            left = _in_group(proc.pid)
            for pid in left:
                os.kill(pid, signal.SIGKILL)
        moment = f"{signal.Signals(signum).name} at {fraction:.0%} of a build"
        if out and time.monotonic() - sent < LATE_S:
            # Done (its line printed) as the signal came, on a machine faster than the first time:
            # not this moment. A lost signal shows as a build that went on for its remaining time.
            assert proc.returncode in (0, 128 + signum), moment
            assert not left, moment
            continue
        stops_s.append(time.monotonic() - sent)
        assert (proc.returncode, out) == (128 + signum, ""), moment
        assert err in (LINE + "\n", SWAPPED + "\n"), (moment, err)  # the same pages either way
        assert stops_s[-1] < 5, moment
        assert not left, moment
        assert _files(site) == before, moment
    assert len(stops_s) >= len(MOMENTS) - 2, f"only {len(stops_s)} signals came before the build's end"
    print("stop times (s):", " ".join(f"{s:.2f}" for s in stops_s), f"(a full build: {full_s:.1f} s)")


#: A command whose library turns Ctrl-C (or SIGTERM) into another exception, as CPython does when
#: the signal lands inside a failing ``from module import name``: ``TypeError: expected a message
#: argument`` (seen in CI, importing MkDocs at 70% of a build).
TURNED = """
import os, time
from sparkreport.cli import entry, main

@main.command("turned")
def turned():
    try:
        os.kill(os.getpid(), int(os.environ["SIGNUM"]))
        time.sleep(5)
    except KeyboardInterrupt:
        pass
    raise TypeError("expected a message argument")

@main.command("plain")
def plain():
    raise TypeError("a bug, no signal")

entry()
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_a_library_turned_into_another_exception_still_ends_with_one_line(signum: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SIGNUM": str(int(signum))}
    done = subprocess.run([sys.executable, "-c", TURNED, "turned"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr, done.stdout) == (128 + signum, "interrupted\n", "")


def test_an_exception_without_a_signal_is_still_a_bug_with_its_traceback() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", TURNED, "plain"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback") and done.stderr.endswith("TypeError: a bug, no signal\n")
