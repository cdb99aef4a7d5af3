"""An MkDocs hook that publishes the runs' files (run.json, raw logs, tables) after the build.

The Runs pages link each run's files under ``runs/files/<campaign>/…``. Handing 30 000 files of
a 10 000-run store to MkDocs as static files cost more than the pages themselves (a File object,
a modification check and a copy each); ``render`` instead writes a manifest (every published
file: site path ← run-store path) into the docs folder, and this hook copies them into the site
once the pages are built. Files are copied, never linked: the site must not share files with
``runs/``, the source of truth.

What is published, and how:

* only the files a run's ``run.json`` lists (``provenance.raw_files`` and ``tables``) and
  run.json itself — never a file reached through a symbolic link (:func:`inside_store`);
* run.json as a filtered copy: its environment variables down to the allowlist
  (:func:`published_env`), whatever an old record holds;
* raw files as inert text: a name whose suffix is not in :data:`SAFE_SUFFIXES` gets ``.txt``
  (``evil.html`` → ``evil.html.txt``), so that no browser runs or renders it as a document;
  files over :data:`COMPRESS_ABOVE` are published gzip-compressed (``.gz``).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

#: In the docs folder (a dot-file: MkDocs leaves it out of the site).
MANIFEST = ".sparkreport-run-files.json"
#: Raw files keep their name only with these suffixes (served as plain data, never executed
#: or rendered as a page); every other name gets ``.txt`` appended. ``.gz`` of these keeps it.
SAFE_SUFFIXES = (".log", ".txt", ".json", ".csv", ".jsonl", ".yaml", ".yml")
RUN_FILE = "run.json"


#: Files larger than this are published gzip-compressed (``samples.csv`` → ``samples.csv.gz``):
#: an hour of 10 Hz samples is 2–3 MB of CSV and ~0.25 MB compressed, and a site of ten thousand
#: runs must stay publishable (GitHub Pages: 1 GB).
COMPRESS_ABOVE = 256 * 1024


def published_name(relative: str, size: int = 0) -> str:
    """The name a raw file of ``size`` bytes is published under: ``notes.md`` → ``notes.md.txt``,
    ``evil.html`` → ``evil.html.txt``, ``page.svg.gz`` → ``page.svg.txt.gz``; a file over
    :data:`COMPRESS_ABOVE` that is not gzip already gets ``.gz``."""
    packed = relative.lower().endswith(".gz")
    base = relative[:-3] if packed else relative
    if not base.lower().endswith(SAFE_SUFFIXES):
        base += ".txt"
    return base + ".gz" if packed or size > COMPRESS_ABOVE else base


def published_env(details: Mapping[str, Any]) -> dict[str, str]:
    """The environment variables of a run that may be published: ``details["env_vars"]`` down
    to the allowlist (plus the run's own ``env_allowlist``), values scrubbed of credential
    shapes. The one filter every page, download and published run.json goes through."""
    from sparkreport.execute.envcapture import allowed_env, pattern_error

    env_vars = details.get("env_vars")
    if not isinstance(env_vars, Mapping):
        return {}
    extra = details.get("env_allowlist")
    patterns = [p for p in extra if isinstance(p, str) and pattern_error(p) is None] if isinstance(extra, list) else []
    return allowed_env({str(k): str(v) for k, v in env_vars.items()}, patterns)


def inside_store(runs_dir: str, relative: str) -> bool:
    """True when ``runs_dir/relative`` is a regular file reached without a symbolic link (and
    without ``..`` leaving the store)."""
    parts = [p for p in relative.split("/") if p and p != "."]
    if not parts or ".." in parts:
        normal = os.path.normpath(relative)
        if normal.startswith(("..", "/")):
            return False
        parts = normal.split(os.sep)
    path = runs_dir
    for part in parts:
        path = os.path.join(path, part)
        if os.path.islink(path):
            return False
    return os.path.isfile(path)


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


def write_manifest(docs_dir: Path, runs_dir: Path, files: list[tuple[str, str]]) -> None:
    """Record the files the site publishes: (site path, path relative to the run store)."""
    data = {"runs_dir": str(runs_dir.resolve()), "files": sorted(files)}
    (docs_dir / MANIFEST).write_text(json.dumps(data, indent=0) + "\n", encoding="utf-8")


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
        if _newer(destination, path):  # a site kept between builds (serve's dirty rebuilds): only what changed
            continue
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


def _newer(destination: Path, source: str) -> bool:
    try:
        return destination.stat().st_mtime >= os.stat(source).st_mtime
    except OSError:
        return False


def on_post_build(config: Any, **_kwargs: Any) -> None:
    manifest = Path(config["docs_dir"]) / MANIFEST
    if not manifest.is_file():
        return
    data = json.loads(manifest.read_text(encoding="utf-8"))
    copy_files(Path(data["runs_dir"]), Path(config["site_dir"]), [(t, s) for t, s in data["files"]])
