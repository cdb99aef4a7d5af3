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


def build(options: RenderOptions, site_dir: Path | None = None, *, strict: bool = True) -> BuildResult:
    """Render the pages, write the MkDocs config and build the site into ``site_dir``."""
    from sparkreport.render import render
    from sparkreport.site.mkdocs_site import build_site, write_config

    result = render(options)
    target = site_dir or DEFAULT_SITE_DIR
    if not target.is_absolute():
        target = result.project_root / target
    config_file = write_config(result, target)
    warnings = build_site(config_file, strict=strict)
    return BuildResult(site_dir=target, config_file=config_file, render=result, warnings=warnings)


def serve(options: RenderOptions, dev_addr: str | None = None) -> None:
    """Render the pages and serve them with live reload of the generated docs folder."""
    from sparkreport.render import render
    from sparkreport.site.mkdocs_site import serve_site, write_config

    result = render(options)
    config_file = write_config(result, result.docs_dir.parent / "site")
    serve_site(config_file, dev_addr)
