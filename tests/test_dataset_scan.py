"""``RunStore.scan``: the dataset loader's one walk says what ``run_files`` and ``incomplete_runs`` say."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkreport.errors import SparkreportError
from sparkreport.store import RunStore


def _store(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    for folder in ("b/r2", "b/r10", "a/r1", "a/r-1", "a/r.1", "a/_sources/x", "a/_campaign", "a/.staging.1",
                   ".hidden/r9", "a/empty", "c/r5"):
        (runs / folder).mkdir(parents=True, exist_ok=True)
    for run in ("b/r2", "b/r10", "a/r1", "a/r-1", "a/r.1", "a/.staging.1", ".hidden/r9", "c/r5"):
        (runs / run / "run.json").write_text("{}\n", encoding="utf-8")
    (runs / "a" / "notes.txt").write_text("not a run\n", encoding="utf-8")
    (runs / "a" / "inner").symlink_to(runs / "b" / "r2")  # a link inside the store: read
    (runs / "a" / "broken").mkdir()
    (runs / "a" / "broken" / "run.json").symlink_to(tmp_path / "nowhere.json")  # not a run: incomplete
    return runs


def test_scan_lists_what_run_files_and_incomplete_runs_list(tmp_path: Path) -> None:
    store = RunStore(_store(tmp_path))
    scan = store.scan()
    assert [Path(path) for path, _stat in scan.files] == store.run_files()
    assert scan.folders == [(p.parent.parent.name, p.parent.name) for p in store.run_files()]
    assert scan.incomplete == store.incomplete_runs() == ["a/broken", "a/empty"]
    for path, stat in scan.files:
        assert (stat.st_ino, stat.st_size) == (Path(path).stat().st_ino, Path(path).stat().st_size)  # links followed
    assert RunStore(tmp_path / "none").scan().files == []


@pytest.mark.parametrize("link", ["campaign", "run", "file"])
def test_scan_refuses_a_link_leaving_the_store_as_run_files_does(tmp_path: Path, link: str) -> None:
    runs = _store(tmp_path)
    outside = tmp_path / "outside" / "c2" / "r7"
    outside.mkdir(parents=True)
    (outside / "run.json").write_text("{}\n", encoding="utf-8")
    if link == "campaign":
        (runs / "z").symlink_to(outside.parent)
    elif link == "run":
        (runs / "c" / "r7").symlink_to(outside)
    else:
        (runs / "c" / "r8").mkdir()
        (runs / "c" / "r8" / "run.json").symlink_to(outside / "run.json")
    messages = []
    for walk in (RunStore(runs).scan, RunStore(runs).run_files):
        with pytest.raises(SparkreportError) as caught:
            walk()
        messages.append(caught.value.format_message())
    assert messages[0] == messages[1] and "outside the run store" in messages[0]

