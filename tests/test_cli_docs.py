"""Docs that cannot drift: every command has help text and appears in the README."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport.cli import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
COMMANDS = main.list_commands(None)  # type: ignore[arg-type]


def test_expected_commands_exist() -> None:
    assert {"ingest", "formats", "metrics", "dataset", "stats", "compare", "check"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_command_has_help_and_is_documented(name: str) -> None:
    command = main.get_command(None, name)  # type: ignore[arg-type]
    if command is None:
        pytest.fail(f"sparkreport {name} is listed but cannot be loaded")
    assert (command.help or "").strip(), f"sparkreport {name} has no help text"
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0 and result.output.startswith("Usage: ")
    assert f"sparkreport {name}" in README, f"README does not mention `sparkreport {name}`"


def test_help_is_fast_and_light() -> None:
    """--help must not import pandas, altair or mkdocs (the executor runs without them)."""
    import subprocess
    import sys

    code = ("import sys; from sparkreport.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('pandas', 'altair', 'mkdocs', 'scipy') if m in sys.modules]\n"
            "print('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out


def test_the_console_script_skips_teardown_but_runs_exit_handlers(tmp_path: Path) -> None:
    """``sparkreport`` (and ``python -m sparkreport``) ends with os._exit after waiting for its
    threads, the exit handlers and a flush: output complete, statuses as click sets them, an
    error one line."""
    import subprocess
    import sys
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["scripts"]["sparkreport"] == "sparkreport.__main__:run"  # then cli.entry
    late = tmp_path / "late.txt"  # written by a thread that is not a daemon, after main() returned
    code = ("import atexit, sys, threading, time, pathlib; atexit.register(lambda: print('exit handler ran')); "
            f"threading.Thread(target=lambda: (time.sleep(1), pathlib.Path({str(late)!r}).write_text('x'))).start(); "
            "sys.argv = ['sparkreport', 'metrics']; from sparkreport.cli import entry; entry()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "output_throughput_tok_s" in done.stdout and done.stdout.endswith("exit handler ran\n")
    assert late.read_text() == "x"
    assert done.stdout.count("\n") == CliRunner().invoke(main, ["metrics"]).output.count("\n") + 1
    missing = tmp_path / "none"
    failed = subprocess.run([sys.executable, "-m", "sparkreport", "stats", "--runs-dir", str(missing)],
                            capture_output=True, text=True, check=False)
    assert (failed.returncode, failed.stdout) == (1, "")
    assert failed.stderr == f"Error: {missing}: no such run store — ingest results first (`sparkreport ingest FILE`)\n"
    usage = subprocess.run([sys.executable, "-m", "sparkreport", "no-such-command"], capture_output=True,
                           text=True, check=False)
    assert usage.returncode == 2 and usage.stderr.endswith("Error: No such command 'no-such-command'.\n")


def test_ctrl_c_while_the_command_line_is_imported_is_one_line_and_status_130() -> None:
    """The first ~30 ms of a command import click and the command's module: a Ctrl-C there printed
    Python's KeyboardInterrupt traceback of an import. Now one line and 130; an ignored SIGINT
    (nohup) stays ignored."""
    import subprocess
    import sys

    early = ("import os, signal, time; from sparkreport.__main__ import quiet_interrupts; "
             "assert quiet_interrupts(); os.kill(os.getpid(), signal.SIGINT); time.sleep(5); print('not stopped')")
    done = subprocess.run([sys.executable, "-c", early], capture_output=True, text=True, check=False, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "interrupted\n")
    ignored = ("import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
               "from sparkreport.__main__ import quiet_interrupts; print(quiet_interrupts(), "
               "signal.getsignal(signal.SIGINT) is signal.SIG_IGN)")
    done = subprocess.run([sys.executable, "-c", ignored], capture_output=True, text=True, check=False, timeout=60)
    assert done.stdout == "False True\n"
