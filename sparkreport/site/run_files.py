"""An MkDocs hook that publishes every run's files (run.json, raw logs, tables) after the build.

The Runs pages link each run's files under ``runs/files/<campaign>/…``. Handing 30 000 files of
a 10 000-run store to MkDocs as static files cost more than the pages themselves (a File object,
a modification check and a copy each); ``render`` instead writes a manifest (site folder → run
store campaign folder) into the docs folder, and this hook copies the folders into the site once
the pages are built. Files are copied, never linked: the site must not share files with
``runs/``, the source of truth. Page-like names get ``.txt`` (:func:`published_name`) so the
files are served verbatim.
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

#: In the docs folder (a dot-file: MkDocs leaves it out of the site).
MANIFEST = ".sparkreport-run-files.json"
#: Raw files with these suffixes get ``.txt`` appended when published.
PAGE_SUFFIXES = (".md", ".markdown", ".mdown", ".mkdn", ".mkd")


def published_name(relative: str) -> str:
    """The name a raw file is published under (``notes.md`` → ``notes.md.txt``)."""
    return relative + ".txt" if relative.lower().endswith(PAGE_SUFFIXES) else relative


def write_manifest(docs_dir: Path, folders: dict[str, Path]) -> None:
    """Record which run-store folders the site publishes where (site-relative → absolute)."""
    data = {target: str(source.resolve()) for target, source in sorted(folders.items())}
    (docs_dir / MANIFEST).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def copy_folder(source: Path, target: Path) -> int:
    """Copy a folder's files (dot-files and dot-folders skipped) under published names; returns
    the number of files. The copies run on a few threads: on a busy disk a file costs more in
    system calls than in bytes."""
    jobs: list[tuple[str, Path]] = []
    for folder, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        relative_folder = Path(folder).relative_to(source)
        names = sorted(n for n in filenames if not n.startswith("."))
        if names:
            (target / relative_folder).mkdir(parents=True, exist_ok=True)
        jobs += [(os.path.join(folder, name), target / published_name((relative_folder / name).as_posix()))
                 for name in names]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in pool.map(lambda job: shutil.copyfile(*job), jobs):
            pass
    return len(jobs)


def on_post_build(config: Any, **_kwargs: Any) -> None:
    manifest = Path(config["docs_dir"]) / MANIFEST
    if not manifest.is_file():
        return
    site = Path(config["site_dir"])
    for target, source in json.loads(manifest.read_text(encoding="utf-8")).items():
        if Path(source).is_dir():
            copy_folder(Path(source), site / target)
