"""Incremental builds: skip the whole build when none of its inputs changed.

The key is one sha256 over the content hashes of everything a build reads — the run store
(every file), ``sparkreport.yml``, the project's ``mkdocs.yml``, ``docs/``, ``templates/`` and
``overrides/``, the sparkreport package itself (code, templates, assets), the builder and the
MkDocs, Material (and Zensical) versions, the project's git commit (printed in every footer)
and the build's own options. File hashes are remembered by (size, mtime, inode) in
``build/cache/hashes.pickle``, so an unchanged file is not read again — and, in a git work tree,
by blob id, so that a fresh checkout (a CI job's: every file with a new mtime and inode) reads
only the files git does not vouch for. After a successful build the key and what the build wrote
are kept in ``build/cache/build.json``; the next build with the same key and an intact site
returns that at once. The state also keeps the data key, the same without the hand-written
``docs/``: when only those changed, the render keeps every generated page and fills the posts from
the results their bindings had (:func:`~sparkreport.render.core.render`). Anything else changed →
a full build (whose dataset and chart caches still skip the unchanged runs and charts).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from sparkreport.cache import HashMemo, StoreWalk, inputs_digest, package_digest, tree_digest, walk_store

if TYPE_CHECKING:
    from sparkreport.project import Project
    from sparkreport.render import RenderResult
    from sparkreport.render.context import CommitAhead

STATE_FILE = "build.json"
#: Folders of the project root a build reads.
PROJECT_FOLDERS = ("docs", "templates", "overrides")
PROJECT_FILES = ("sparkreport.yml", "mkdocs.yml")


def build_key(project: Project, site_dir: Path | None, strict: bool, memo: HashMemo,
              builder: str = "mkdocs", runs_walk: StoreWalk | None = None,
              commit_ahead: CommitAhead | None = None) -> BuildKeys:
    """The content key of a build (equal keys build identical sites) and its data key: the same
    without the hand-written ``docs/`` and the project's commit — equal data keys give the same
    generated pages but for the commit their footers print, and the same results for the same
    post bindings (:func:`~sparkreport.render.core.render`'s kept path). ``runs_walk``: the run
    store's :func:`~sparkreport.cache.walk_store` at ``project.runs_path``, if already walked;
    ``commit_ahead``: :func:`~sparkreport.render.context.start_git_commit` of the project, if
    started before that walk."""
    import mkdocs

    from sparkreport import __version__
    from sparkreport.render.context import start_git_commit
    from sparkreport.site.mkdocs_site import SITE_URL_ENV

    root = project.root
    runs = project.runs_path
    options = project.options
    asked = commit_ahead if commit_ahead is not None else start_git_commit(root)  # (git works while the store is keyed)
    try:
        runs_key = (runs_walk if runs_walk is not None else walk_store(runs)).content_key(memo)
    except BaseException:
        asked.stop()
        raise
    commit = asked.answer()
    parts: list[tuple[str, str]] = [
        ("version", __version__), ("package", package_digest(memo)),
        ("runs", runs_key),
        ("mkdocs", mkdocs.__version__), ("material", _material_version("mkdocs-material")),
        ("builder", builder), ("zensical", _material_version("zensical") if builder == "zensical" else ""),
        ("commit", commit or ""), ("strict", str(strict)), ("site_dir", str(site_dir)),
        ("docs_dir", str(options.docs_dir)), ("command", str(options.command)),
        ("config_path", str(options.config_path)),
        ("site_url", os.environ.get(SITE_URL_ENV, "")),
    ]
    for name in PROJECT_FOLDERS:
        parts.append((name, tree_digest(root / name, memo)))
    files = [root / name for name in PROJECT_FILES]
    if options.config_path is not None:
        files.append(options.config_path)
    for path in files:
        parts.append((str(path), memo.digest(path) if path.is_file() else "absent"))
    return BuildKeys(inputs_digest(parts), inputs_digest(part for part in parts if part[0] not in DOCS_AND_COMMIT),
                     commit)


#: What the data key leaves out of the build key: the hand-written docs, and the project's commit
#: (printed only in the footers of Home, Methodology, Downloads and the posts, which a render that
#: keeps the data prints again: :func:`~sparkreport.render.core.restamped`).
DOCS_AND_COMMIT = ("docs", "commit")


class BuildKeys(NamedTuple):
    """A build's key, its data key (the key without the hand-written docs and the commit), and
    the project's commit it was made with (:func:`~sparkreport.render.context.git_commit`)."""

    key: str
    data: str
    commit: str | None = None


def shell_key(config_file: Path, project_root: Path, strict: bool, builder: str, memo: HashMemo) -> str:
    """What every page of a built site depends on besides its own Markdown: the generated config
    (nav, titles, theme, extensions), the project's mkdocs.yml, the theme's custom_dir, the
    versions of the builder and of Markdown, strictness. Equal keys let a build reuse the pages
    whose Markdown did not change (:mod:`sparkreport.site.reuse`)."""
    import mkdocs
    import yaml

    parts: list[tuple[str, str]] = [
        ("config", memo.digest(config_file)), ("builder", builder), ("strict", str(strict)),
        ("mkdocs", mkdocs.__version__),
    ]
    for distribution in SHELL_DISTRIBUTIONS:
        parts.append((distribution, _material_version(distribution)))
    project = project_root / "mkdocs.yml"
    parts.append(("project", memo.digest(project) if project.is_file() else "absent"))
    try:
        theme = (yaml.safe_load(config_file.read_text(encoding="utf-8")) or {}).get("theme") or {}
    except (OSError, yaml.YAMLError):
        theme = {}
    custom = theme.get("custom_dir") if isinstance(theme, dict) else None
    if isinstance(custom, str):
        parts.append(("custom_dir", tree_digest(Path(custom), memo)))
    return inputs_digest(parts)


@functools.cache
def _material_version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return ""


#: The distributions whose versions :func:`shell_key` names.
SHELL_DISTRIBUTIONS = ("mkdocs-material", "markdown", "pymdown-extensions", "pygments")


def warm_versions() -> None:
    """Look up the versions :func:`shell_key` names, once a process (a build's standby
    builder does it while it waits: ~0.03 s, most of it importing ``importlib.metadata``)."""
    for distribution in SHELL_DISTRIBUTIONS:
        _material_version(distribution)


def kept_key(cache_dir: Path) -> BuildKeys | None:
    """The keys of the last build that completed (its state), if any."""
    try:
        state = json.loads((cache_dir / STATE_FILE).read_text(encoding="utf-8"))
        key, data, commit = state.get("key"), state.get("data_key"), state.get("commit")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(key, str) or not isinstance(data, str):
        return None
    return BuildKeys(key, data, commit if isinstance(commit, str) else None)


def load_state(cache_dir: Path, key: str, site_dir: Path, *, data: bool = False) -> dict[str, Any] | None:
    """What the last build with this key wrote, when its site is still there; else None.
    ``data``: ``key`` is a data key (:func:`build_key`), which the last build's must equal."""
    try:
        state = json.loads((cache_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if state.get("data_key" if data else "key") != key or state.get("site_dir") != str(site_dir):
        return None
    if not (site_dir / "index.html").is_file() or not Path(state.get("config_file", "")).is_file():
        return None
    kept = state.get("site")
    if not isinstance(kept, dict) or site_listing(site_dir, str(kept.get("bulk", ""))) != kept.get("listing"):
        return None  # a page removed or edited, a folder removed, since it was built: build it again
    return state


def site_listing(site_dir: Path, bulk: str) -> dict[str, list[int]] | None:
    """What a kept site is checked against before it is kept: the size and mtime of every file
    and the mtime of every folder (a folder's changes when an entry in it is added, removed or
    renamed), except inside ``bulk`` — the run files' folder, ten thousand folders at 10 000 runs,
    of which only ``bulk`` itself and its folders one level down (a campaign's) are listed; a
    rebuild checks the rest of it (:func:`~sparkreport.site.run_files.carry_plan`: each folder by its
    inode, mtime and ctime, those that changed by name).
    A few milliseconds at 10 000 runs. None when the site cannot be read."""
    listing: dict[str, list[int]] = {}
    stack = [(str(site_dir), "", 0)]
    try:
        while stack:
            path, shown, depth = stack.pop()
            listing[shown] = [os.stat(path).st_mtime_ns]
            if depth == 2:  # a campaign's folder of run files: its runs' folders are not walked
                continue
            with os.scandir(path) as entries:
                for entry in entries:
                    name = f"{shown}{entry.name}"
                    if entry.is_dir(follow_symlinks=False):
                        inside = name == bulk or depth == 1
                        stack.append((entry.path, f"{name}/", depth + 1 if inside else 0))
                    elif depth == 0:
                        found = entry.stat(follow_symlinks=False)
                        listing[name] = [found.st_size, found.st_mtime_ns]
    except OSError:
        return None
    return listing


def save_state(cache_dir: Path, key: BuildKeys, site_dir: Path, config_file: Path, result: RenderResult,
               warnings: list[str], bulk: str = "") -> None:
    """Keep what a build wrote, and the listing of its site (:func:`site_listing`; ``bulk``: the
    run files' folder in it), for the next build with the same key."""
    from sparkreport.cache import _atomic_bytes

    state: dict[str, Any] = {
        "site": {"bulk": bulk, "listing": site_listing(site_dir, bulk)},
        "key": key.key, "data_key": key.data, "commit": key.commit, "site_dir": str(site_dir),
        "config_file": str(config_file),
        "project_root": str(result.project_root), "docs_dir": str(result.docs_dir),
        "pages": [{"path": p.path, "title": p.title, "template": p.template,
                   "charts": [[c.name, c.title, c.description, c.rows] for c in p.charts]} for p in result.pages],
        "nav": result.nav, "handwritten": result.handwritten, "warnings": warnings,
        "svg_count": result.svg_count,
    }
    _atomic_bytes(cache_dir / STATE_FILE, json.dumps(state).encode())

