"""MkDocs converts only the pages that changed: the rest of the previous site is reused.

MkDocs 1.x has no incremental build; its ``--dirty`` mode skips a page whose output is newer
than its Markdown, but it writes over an existing site (ours is published whole, see
:mod:`sparkreport.site.publish`), keeps stale files, and loses the search entries of the pages
it skips. A build here always starts from an empty folder; when the previous site was built
from the same *shell* — the generated config (nav and titles included), the project's
mkdocs.yml and theme overrides, the MkDocs / Material / Markdown versions, strictness, the
same set of pages — :class:`~sparkreport.site.reuse_plugin.ReusePlugin` hard-links into
that folder, before MkDocs writes anything, the previous output of every file MkDocs will
find unmodified (its Markdown or asset not newer than that output; ``render`` keeps an
unchanged page's mtime). MkDocs then runs with ``dirty`` and converts only the rest;
afterwards the search index is merged: the previous entries of the reused pages plus the new
ones, in the order a full build writes them. The theme's 404 page, which MkDocs renders on
every build from the shell alone (the nav and the site's frame), is linked too, and not
rendered. The result equals a full build of the same sources (``tests/test_reuse.py``). This
module is what a build reads and keeps between builds (:class:`Reuse`), without MkDocs; the
plugin, which MkDocs runs, is in :mod:`sparkreport.site.reuse_plugin`.

A linked file is never written through: MkDocs writes a page only when it is modified, and
copies an asset only when it is modified, which is exactly what was not linked. What is not
linked is built: the blog (its index pages show excerpts of posts, so it is rebuilt whole),
files that plugins generate, and everything when anything of the shell changed, when the
project uses hooks or a plugin other than search and blog (they may write what we cannot
see), or when a nav entry has no title of its own (MkDocs would take it from a page it does
not read). Limits, said in the docs: a page is re-converted when its own Markdown changes;
an unchanged page is not re-checked for links into pages that changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECORD_FILE = "site-shell.json"
#: Plugins whose output is all in Files, the search index or the blog folder.
KNOWN_PLUGINS = frozenset({"search", "material/search", "blog", "material/blog"})
#: Ours, registered by :func:`sparkreport.site.mkdocs_site.build_site`.
OUR_PLUGINS = frozenset({"sparkreport/reuse", "sparkreport/parallel-pages"})
#: MkDocs' own notice for dirty builds; ours are not what it warns about (see the docstring).
DIRTY_NOTICE = "A 'dirty' build is being performed"
SEARCH_INDEX = Path("search") / "search_index.json"


@dataclass
class Reuse:
    """What a build may reuse (``previous``: the live site, ``previous_key``: its shell) and,
    after the build, what it did: the new shell key, the files it wrote, the pages converted
    and reused."""

    previous: Path | None
    previous_key: str | None
    shell: str
    #: dest path → [size, mtime_ns] of each file the previous build wrote, as it wrote it (a
    #: file changed in the live site since — by hand, by another tool — is built again). Not the
    #: inode: a site restored from a CI cache (``tar --posix`` keeps mtimes to the nanosecond)
    #: is still the site that build wrote; what it holds is scanned again where it changed.
    previous_files: dict[str, list[int]] = field(default_factory=dict)
    key: str | None = None
    files: dict[str, list[int]] = field(default_factory=dict)
    converted: int = 0
    reused: int = 0

    @classmethod
    def load(cls, cache_dir: Path, site_dir: Path, shell: str) -> Reuse:
        """The record of the live site ``site_dir`` in ``cache_dir`` (none: reuse nothing)."""
        try:
            record = json.loads((cache_dir / RECORD_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            record = {}
        same = record.get("site_dir") == str(site_dir) and site_dir.is_dir() and isinstance(record.get("files"), dict)
        return cls(previous=site_dir if same else None, previous_key=record.get("key") if same else None,
                   shell=shell, previous_files=record["files"] if same else {})

    @staticmethod
    def forget(cache_dir: Path) -> None:
        (cache_dir / RECORD_FILE).unlink(missing_ok=True)

    @classmethod
    def taken(cls, plan: ReusePlan, config_file: Path, strict: bool) -> Reuse:
        """What the build of ``config_file`` may reuse, by ``plan``: the shell's key (a new
        Python process's first query of the installed distributions' versions, ~0.03 s, is made
        where the builder runs: in a build's standby process, warmed up beside the render), the
        live site's record (then forgotten until the new site is live), nothing kept for a
        ``full`` build."""
        from sparkreport.cache import HashMemo
        from sparkreport.site.incremental import shell_key

        shell = shell_key(config_file, plan.project_root, strict, plan.builder, HashMemo(None))
        reuse = cls.load(plan.cache_dir, plan.site_dir, shell)
        if plan.full:
            reuse.previous = None
        cls.forget(plan.cache_dir)  # until the new site is live
        return reuse

    def save(self, cache_dir: Path, site_dir: Path) -> None:
        """After the swap: the live site ``site_dir`` was built from shell ``key``."""
        from sparkreport.cache import _atomic_bytes

        if self.key is None:
            self.forget(cache_dir)
            return
        record = {"site_dir": str(site_dir), "key": self.key, "files": self.files}
        _atomic_bytes(cache_dir / RECORD_FILE, json.dumps(record, separators=(",", ":")).encode())


@dataclass(frozen=True)
class ReusePlan:
    """Where a build finds what it may reuse (:meth:`Reuse.taken`): handed to the builder's
    process, which reads it there."""

    cache_dir: Path
    site_dir: Path
    project_root: Path
    builder: str
    full: bool


def why_not_reused(config: Any) -> str:
    """'' when every plugin's page events are known (search, blog, ours) and there are no hooks,
    so that pages may be reused (or converted ahead, :mod:`sparkreport.site.parallel_pages`);
    else the reason not to."""
    plugins = set(config.plugins) - OUR_PLUGINS
    if plugins - KNOWN_PLUGINS:
        return f"plugins {sorted(plugins - KNOWN_PLUGINS)}"
    if config.hooks:
        return "hooks"
    return ""


def blog_roots(config: Any) -> list[str]:
    roots = []
    for name, plugin in config.plugins.items():
        if name in ("blog", "material/blog"):
            roots.append(str(plugin.config.blog_dir).strip("/"))
    return roots
