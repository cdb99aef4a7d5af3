"""Checks that cost milliseconds, made before work that costs seconds (#20, item 10).

A build whose site folder cannot be written, or a diff naming a campaign the store does not
hold, should say so before the dataset is loaded and the pages rendered, not after.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from sparkreport.errors import DataError, SparkreportError
from sparkreport.names import shown, shown_values


def check_writable(target: Path, option: str) -> None:
    """Refuse at once a folder (or a file's folder) that cannot be created or written.

    Walks up to the nearest folder that exists and creates (then drops) an unnamed temporary
    file there: that catches a read-only file system, missing permissions and a path through a
    file, where ``os.access`` would say yes to root. Creates nothing that stays.
    """
    probe = target
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise SparkreportError(f"{shown(target)}: cannot be created — {shown(probe)} is a file, not a folder; "
                               f"pass another {option}")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise SparkreportError(f"{shown(target)}: cannot be written ({exc.strerror or exc}) — fix the "
                               f"permissions of {shown(probe)} or pass another {option}") from None


def store_campaigns(runs_dir: Path) -> list[str]:
    """The campaign folders of a run store (directory names only, no run.json read)."""
    try:
        with os.scandir(runs_dir) as entries:
            return sorted(e.name for e in entries if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return []


def check_selector_campaigns(runs_dir: Path, selectors: Iterable[tuple[str, str]]) -> None:
    """Refuse selectors (``(where, text)``) naming a campaign that has no folder in the store."""
    campaigns: list[str] | None = None
    for where, text in selectors:
        for part in text.split(","):
            key, sep, value = part.partition("=")
            if not sep or key.strip() != "campaign":
                continue
            if campaigns is None:
                campaigns = store_campaigns(runs_dir)
            if value.strip() not in campaigns:
                raise DataError(f"{where}: campaign {value.strip()!r} is not in {shown(runs_dir)} — campaigns "
                                f"there: {shown_values(campaigns)}")
