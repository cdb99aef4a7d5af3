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
