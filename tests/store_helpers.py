"""Helpers the store and cache tests share: a campaign made of copies of another's runs, and a
record of a method's calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def put_campaign(runs: Path, name: str, sources: list[Path], picks: list[int]) -> None:
    """Campaign ``name`` in ``runs``: copies of the run.json files ``sources`` at ``picks``,
    renamed into it (campaign and run id)."""
    for pick in dict.fromkeys(picks):
        data = json.loads(sources[pick % len(sources)].read_text(encoding="utf-8"))
        data["campaign"] = name
        data["run_id"] = f"{name}-{data['run_id']}"
        folder = runs / name / data["run_id"]
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps(data), encoding="utf-8")


def calls_recorded(monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> list[Any]:
    """The first argument (after ``self``) of every call of ``owner.name`` from now on, in order;
    the method itself still runs."""
    calls: list[Any] = []
    method = getattr(owner, name)

    def recorded(self: Any, first: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(first)
        return method(self, first, *args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return calls
