"""``sparkreport init``: scaffold a new report project that builds with ``sparkreport build``.

The scaffold ships inside the package (``sparkreport/scaffold/project/``), so ``init`` works
from an installed sparkreport anywhere. Names starting with ``dot-`` are written with a leading
dot (``dot-github`` → ``.github``): package data does not carry hidden files reliably. The
example data is ingested at init time, so ``runs/`` always holds the current run.json schema.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from sparkreport.errors import SparkreportError

SCAFFOLD = Path(__file__).resolve().parent / "project"
DOT_PREFIX = "dot-"
EXAMPLE = Path("examples") / "example-summary.yml"


class InitError(SparkreportError):
    """The target folder cannot take the scaffold."""


@dataclass
class InitResult:
    """What ``init`` wrote: the project folder, its files and the runs ingested."""

    root: Path
    files: list[Path] = field(default_factory=list)
    runs: int = 0


def scaffold_files() -> list[tuple[Path, Path]]:
    """``(source, relative target)`` for every file of the scaffold, hidden names restored."""
    out = []
    for path in sorted(SCAFFOLD.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        parts = [("." + p[len(DOT_PREFIX):]) if p.startswith(DOT_PREFIX) else p
                 for p in path.relative_to(SCAFFOLD).parts]
        out.append((path, Path(*parts)))
    return out


def init_project(target: Path, *, force: bool = False) -> InitResult:
    """Write the scaffold into ``target`` and ingest its example data into ``target/runs``.

    Refuses a folder that exists and is not empty unless ``force`` (then files of the same
    name are replaced and everything else is left alone).
    """
    from sparkreport.early import check_writable
    from sparkreport.ingest import IngestOptions, ingest_paths
    from sparkreport.store import RunStore

    if target.exists() and not target.is_dir():
        raise InitError(f"{target}: exists and is not a folder — choose another path")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise InitError(f"{target}: is not empty — choose an empty or new folder, or pass --force "
                        "to write the scaffold into it (files of the same name are replaced)")
    check_writable(target, "DIRECTORY")  # read-only, under a file, in /proc: one line, nothing written
    result = InitResult(root=target)
    for source, relative in scaffold_files():
        dest = target / relative
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
        result.files.append(relative)
    report = ingest_paths([target / EXAMPLE], RunStore(target / "runs"), IngestOptions())
    if report.rejected:
        raise InitError(f"{target / EXAMPLE}: the example did not ingest: {report.rejected[0].format_message()}")
    result.runs = len(report.added) + len(report.skipped)
    return result
