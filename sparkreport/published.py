"""What the render stage and the site stage share: the contract of the published files.

``render`` (the Runs pages, the run details, the assets) decides what a site publishes and
under which names; ``site`` builds and publishes it. Both read these definitions from here, so
``render`` never imports ``site``:

* the run files: the manifest ``render`` writes into the docs folder (every published file:
  site path ← run-store path), the published name of a raw file (:func:`published_name`:
  inert suffixes, gzip above :data:`COMPRESS_ABOVE`), the environment filter every page and
  published run.json goes through (:func:`published_env`) and the symlink rule
  (:func:`store_stat`);
* the site's own assets: vendored Vega builds, the chart loader and its stylesheet, copied into
  the docs folder (:func:`copy_assets`) and loaded by the generated config (served from the site
  itself, no CDN, so a built site renders offline).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Collection, Iterable, Mapping
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
#: zlib level of those files: 1, the fastest. On an hour of GB10 samples (2.6 MB of CSV) level 1
#: writes 318 KB in 13 ms and level 6 243 KB in 37 ms: at 10 000 runs with 200 such files a cold
#: build's publish spends 2.7 s on them instead of 7.4 s, for 15 MB more site.
COMPRESS_LEVEL = 1


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


def store_stat(runs_dir: str, relative: str, folders: dict[str, bool] | None = None) -> os.stat_result | None:
    """The lstat of ``runs_dir/relative`` when it is a regular file reached without a symbolic
    link and without ``..`` leaving the store; else None. Each folder on the way is checked once
    per ``folders`` memo: a file costs one system call when its folder was seen before."""
    import stat as stat_module

    parts = [p for p in relative.split("/") if p and p != "."]
    if not parts or ".." in parts:
        normal = os.path.normpath(relative)
        if normal.startswith(("..", "/")):
            return None
        parts = normal.split(os.sep)
    memo = folders if folders is not None else {}
    path = runs_dir
    for part in parts[:-1]:
        path = f"{path}/{part}"  # os.path.join, without its checks (a third of a listing's time)
        fine = memo.get(path)
        if fine is None:
            try:
                fine = stat_module.S_ISDIR(os.lstat(path).st_mode)
            except OSError:
                fine = False
            memo[path] = fine
        if not fine:
            return None
    try:
        found = os.lstat(f"{path}/{parts[-1]}")
    except OSError:
        return None
    return found if stat_module.S_ISREG(found.st_mode) else None


def write_manifest(docs_dir: Path, runs_dir: Path, files: Collection[tuple[str, str]]) -> None:
    """Record the files the site publishes: (site path, path relative to the run store). One
    line of JSON: an indented one goes through json's Python encoder (0.05 s for the 20 000
    files of 10 000 runs, in every build that adds a run), this one through its C encoder."""
    write_manifest_pieces(docs_dir, runs_dir, [manifest_piece(files)])


def manifest_piece(files: Iterable[tuple[str, str]]) -> str:
    """``files`` as :func:`write_manifest` lists them (sorted, each once), as JSON text without
    the list's brackets: the pieces of sets of files that sort apart (each campaign folder's,
    under its own path) join with commas into the whole list (:func:`write_manifest_pieces`)."""
    return json.dumps(sorted(set(files)), separators=(",", ":"))[1:-1]


def write_manifest_pieces(docs_dir: Path, runs_dir: Path, pieces: Iterable[str]) -> None:
    """:func:`write_manifest` of the files whose :func:`manifest_piece` s are ``pieces``, in the
    order the whole list sorts them — the same bytes."""
    head = json.dumps({"runs_dir": str(runs_dir.resolve()), "files": []}, separators=(",", ":"))
    listed = ",".join(piece for piece in pieces if piece)
    (docs_dir / MANIFEST).write_text(f"{head[:-2]}{listed}]}}\n", encoding="utf-8")


def read_manifest(docs_dir: Path) -> tuple[Path, list[tuple[str, str]]] | None:
    """The run store and the (site path, store path) pairs of a docs folder's manifest; None
    when the docs folder has none (a site without runs' files)."""
    path = docs_dir / MANIFEST
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return Path(data["runs_dir"]), [(str(t), str(s)) for t, s in data["files"]]


#: The packaged assets (a data folder of the site stage; read here, never imported).
ASSETS = Path(__file__).resolve().parent / "site" / "assets"
#: Where the assets go inside the docs folder.
TARGET = "assets/sparkreport"
VEGA_VERSION = "6.2.0"
VEGALITE_VERSION = "6.4.1"
VEGAEMBED_VERSION = "7.1.0"

#: Scripts in load order: Vega, Vega-Lite, Vega-Embed, what refits a chart to a phone's column,
#: the loader that draws the charts, and the one that sends an old Runs link on from the 404 page.
JAVASCRIPT = (
    f"vendor/vega-{VEGA_VERSION}.min.js",
    f"vendor/vega-lite-{VEGALITE_VERSION}.min.js",
    f"vendor/vega-embed-{VEGAEMBED_VERSION}.min.js",
    "sparkreport-fit.js",
    "sparkreport-charts.js",
    "sparkreport-moved.js",
)
STYLESHEETS = ("sparkreport.css",)


def copy_assets(docs_dir: Path) -> None:
    """Copy the assets (scripts, styles, licences) into ``docs_dir/assets/sparkreport``."""
    target = docs_dir / TARGET
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(ASSETS, target, ignore=shutil.ignore_patterns("*.md", ".*", "__pycache__"))


def javascript_paths() -> list[str]:
    """Script paths relative to the docs folder, in load order."""
    return [f"{TARGET}/{name}" for name in JAVASCRIPT]


def stylesheet_paths() -> list[str]:
    """Stylesheet paths relative to the docs folder."""
    return [f"{TARGET}/{name}" for name in STYLESHEETS]
