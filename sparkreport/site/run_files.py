"""Publishing the runs' files (run.json, raw logs, tables) into a built site, after the builder.

The Runs pages link each run's files under ``runs/files/<campaign>/…``. Handing 30 000 files of
a 10 000-run store to MkDocs as static files cost more than the pages themselves (a File object,
a modification check and a copy each); ``render`` instead writes a manifest (every published
file: site path ← run-store path, :data:`sparkreport.published.MANIFEST`) into the docs folder,
and :func:`publish_run_files` copies them into the site once the builder (MkDocs or Zensical)
has built the pages. Files are copied, never linked: the site must not share files with
``runs/``, the source of truth.

What is published, and how:

* only the files a run's ``run.json`` lists (``provenance.raw_files`` and ``tables``) and
  run.json itself — never a file reached through a symbolic link (:func:`sparkreport.published.inside_store`);
* run.json as a filtered copy: its environment variables down to the allowlist
  (:func:`sparkreport.published.published_env`), whatever an old record holds;
* raw files as inert text: a name whose suffix is not in :data:`sparkreport.published.SAFE_SUFFIXES` gets ``.txt``
  (``evil.html`` → ``evil.html.txt``), so that no browser runs or renders it as a document;
  files over :data:`sparkreport.published.COMPRESS_ABOVE` are published gzip-compressed (``.gz``).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sparkreport.published import RUN_FILE, inside_store, published_env, read_manifest


def publish_file(source: str, target: Path, size: int) -> None:
    """Copy ``source`` to ``target``, gzip-compressed (reproducibly: no name, mtime 0) when its
    published name says so (large, and not gzip already)."""
    if target.suffix != ".gz" or source.endswith(".gz"):
        shutil.copyfile(source, target)
        return
    with open(source, "rb") as raw, open(target, "wb") as out, \
            gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=6, mtime=0) as packed:
        shutil.copyfileobj(raw, packed, 1 << 20)


def publish_run_json(source: str, target: Path, size: int) -> None:
    """A run.json as published: its environment variables down to :func:`published_env`."""
    with open(source, encoding="utf-8") as handle:
        data = json.load(handle)
    details = (data.get("environment") or {}).get("details") if isinstance(data, dict) else None
    if isinstance(details, dict) and "env_vars" in details:
        details["env_vars"] = published_env(details)
    text = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    if target.suffix == ".gz":
        target.write_bytes(gzip.compress(text, compresslevel=6, mtime=0))
    else:
        target.write_bytes(text)


def copy_files(runs_dir: Path, site: Path, files: list[tuple[str, str]]) -> int:
    """Copy the manifest's files into ``site`` (run.json filtered, large files compressed);
    a file reached through a symbolic link is skipped. Returns the number of files copied.
    The copies run on a few threads: on a busy disk a file costs more in system calls than in
    bytes."""
    root = str(runs_dir)
    jobs: list[tuple[str, Path, int, bool]] = []
    made: set[Path] = set()
    for target, source in files:
        if not inside_store(root, source):
            continue
        path = os.path.join(root, source)
        destination = site / target
        if destination.parent not in made:
            destination.parent.mkdir(parents=True, exist_ok=True)
            made.add(destination.parent)
        jobs.append((path, destination, os.path.getsize(path), os.path.basename(source) == RUN_FILE))

    def run(job: tuple[str, Path, int, bool]) -> None:
        source, destination, size, is_record = job
        if is_record:
            publish_run_json(source, destination, size)
        else:
            publish_file(source, destination, size)

    with ThreadPoolExecutor(max_workers=4) as pool:  # copies and zlib release the GIL
        for _ in pool.map(run, jobs):
            pass
    return len(jobs)


def publish_run_files(docs_dir: Path, site_dir: Path) -> int:
    """The post-build step: copy the files the docs folder's manifest lists into the built site
    ``site_dir`` (whichever builder built it). Returns the number of files copied."""
    manifest = read_manifest(docs_dir)
    if manifest is None:
        return 0
    runs_dir, files = manifest
    return copy_files(runs_dir, site_dir, files)
