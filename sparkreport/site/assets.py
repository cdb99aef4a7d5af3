"""The site's own assets: vendored Vega builds, the chart loader script and its stylesheet.

Everything is served from the site itself (no CDN), so a built site renders offline.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ASSETS = Path(__file__).resolve().parent / "assets"
#: Where the assets go inside the docs folder.
TARGET = "assets/sparkreport"
VEGA_VERSION = "6.2.0"
VEGALITE_VERSION = "6.4.1"
VEGAEMBED_VERSION = "7.1.0"

#: Scripts in load order: Vega, Vega-Lite, Vega-Embed, then the loader that draws the charts.
JAVASCRIPT = (
    f"vendor/vega-{VEGA_VERSION}.min.js",
    f"vendor/vega-lite-{VEGALITE_VERSION}.min.js",
    f"vendor/vega-embed-{VEGAEMBED_VERSION}.min.js",
    "sparkreport-charts.js",
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
