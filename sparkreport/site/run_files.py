"""An MkDocs hook that publishes every run's files (run.json, raw logs, tables) after the build.

The Runs pages link each run's files under ``runs/files/<campaign>/…``. Handing 30 000 files of
a 10 000-run store to MkDocs as static files cost more than the pages themselves (a File object,
a modification check and a copy each); ``render`` instead writes a manifest (site folder → run
store campaign folder) into the docs folder, and this hook copies the folders into the site once
the pages are built. Files are copied, never linked: the site must not share files with
``runs/``, the source of truth. Page-like names get ``.txt`` (:func:`published_name`) so the
files are served verbatim; files over 256 KiB are published gzip-compressed (``.gz``).
"""

from __future__ import annotations

import gzip
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


#: Files larger than this are published gzip-compressed (``samples.csv`` → ``samples.csv.gz``):
#: an hour of 10 Hz samples is 2–3 MB of CSV and ~0.25 MB compressed, and a site of ten thousand
#: runs must stay publishable (GitHub Pages: 1 GB).
COMPRESS_ABOVE = 256 * 1024


def published_name(relative: str, size: int = 0) -> str:
    """The name a raw file of ``size`` bytes is published under: ``notes.md`` → ``notes.md.txt``
    (served verbatim, not rendered), a file over :data:`COMPRESS_ABOVE` gets ``.gz``."""
    name = relative + ".txt" if relative.lower().endswith(PAGE_SUFFIXES) else relative
    return name + ".gz" if size > COMPRESS_ABOVE else name


def publish_file(source: str, target: Path, size: int) -> None:
    """Copy ``source`` to ``target``, gzip-compressed (reproducibly: no name, mtime 0) when large."""
    if size <= COMPRESS_ABOVE:
        shutil.copyfile(source, target)
        return
    with open(source, "rb") as raw, open(target, "wb") as out, \
            gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=6, mtime=0) as packed:
        shutil.copyfileobj(raw, packed, 1 << 20)


def write_manifest(docs_dir: Path, folders: dict[str, Path]) -> None:
    """Record which run-store folders the site publishes where (site-relative → absolute)."""
    data = {target: str(source.resolve()) for target, source in sorted(folders.items())}
    (docs_dir / MANIFEST).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def copy_folder(source: Path, target: Path) -> int:
    """Copy a folder's files (dot-files and dot-folders skipped) under published names; returns
    the number of files. The copies run on a few threads: on a busy disk a file costs more in
    system calls than in bytes."""
    jobs: list[tuple[str, Path, int]] = []
    for folder, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        relative_folder = Path(folder).relative_to(source)
        names = sorted(n for n in filenames if not n.startswith("."))
        if names:
            (target / relative_folder).mkdir(parents=True, exist_ok=True)
        for name in names:
            path = os.path.join(folder, name)
            size = os.path.getsize(path)
            jobs.append((path, target / published_name((relative_folder / name).as_posix(), size), size))
    with ThreadPoolExecutor(max_workers=4) as pool:  # copies and zlib release the GIL
        for _ in pool.map(lambda job: publish_file(*job), jobs):
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
