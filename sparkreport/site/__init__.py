"""Site: turn a rendered docs folder into a static site (today with MkDocs Material).

``build(options)`` = render + generated MkDocs config + ``mkdocs build``; ``serve`` the same
with ``mkdocs serve``. The MkDocs-specific code is confined to :mod:`sparkreport.site.mkdocs_site`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparkreport.render import RenderOptions, RenderResult

DEFAULT_SITE_DIR = Path("site")


@dataclass
class BuildResult:
    """A built site: where it is, the render behind it, and MkDocs' warnings (if not strict)."""

    site_dir: Path
    config_file: Path
    render: RenderResult
    warnings: list[str] = field(default_factory=list)
    #: True when nothing the build reads had changed and the previous site was kept as is.
    cached: bool = False


def build(options: RenderOptions, site_dir: Path | None = None, *, strict: bool = True) -> BuildResult:
    """Render the pages, write the MkDocs config and build the site into ``site_dir``.

    MkDocs builds into a temporary folder beside ``site_dir``; the runs' files are copied
    there and everything is scanned for credential shapes (:mod:`sparkreport.site.scan`);
    only then does the new site replace the old one (:mod:`sparkreport.site.publish`). A
    failure or an interrupt leaves the previous site as it was.

    A build whose inputs (run store, config, templates, docs, package) are unchanged since the
    last successful one keeps that site and returns at once (:mod:`sparkreport.site.incremental`).
    """
    from sparkreport.early import check_writable
    from sparkreport.lock import output_lock
    from sparkreport.render.core import docs_dir_for, resolve_root
    from sparkreport.site import incremental

    cache_dir = incremental.cache_dir_for(options)
    # Before the lock (which creates the build folder) and the render (seconds): every output.
    target = site_dir or DEFAULT_SITE_DIR
    check_writable(target if target.is_absolute() else resolve_root(options) / target, "--site-dir")
    check_writable(docs_dir_for(options), "--docs-dir")
    with output_lock(cache_dir.parent):
        return _build(options, site_dir, strict, cache_dir)


def _build(options: RenderOptions, site_dir: Path | None, strict: bool, cache_dir: Path) -> BuildResult:
    from sparkreport.cache import HashMemo
    from sparkreport.render import render
    from sparkreport.render.core import resolve_root
    from sparkreport.site import incremental, publish
    from sparkreport.site.mkdocs_site import build_site, write_config
    from sparkreport.site.scan import check_site

    target = site_dir or DEFAULT_SITE_DIR
    if not target.is_absolute():
        target = resolve_root(options) / target
    memo = HashMemo(cache_dir / "hashes.json")
    key = incremental.build_key(options, target, strict, memo)
    memo.save()
    state = incremental.load_state(cache_dir, key, target)
    if state is not None:
        return BuildResult(site_dir=target, config_file=Path(state["config_file"]),
                           render=incremental.result_from_state(state, options),
                           warnings=list(state["warnings"]), cached=True)
    (cache_dir / incremental.STATE_FILE).unlink(missing_ok=True)
    result = render(options)
    config_file = write_config(result, target)
    with publish.staged(target) as staging:
        warnings = build_site(config_file, strict=strict, site_dir=staging)
        check_site(staging, label=str(target))
        publish.swap(staging, target)
    incremental.save_state(cache_dir, key, target, config_file, result, warnings)
    return BuildResult(site_dir=target, config_file=config_file, render=result, warnings=warnings)


from sparkreport.site.serve import serve as serve  # noqa: E402  (``sparkreport serve``: lives in site/serve.py)
