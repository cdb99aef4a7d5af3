"""Per-run content digests: what page and analysis caches key on ("the runs this read")."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from sparkreport.cache import digest_of
from sparkreport.dataset import Dataset, build_dataset, load_dataset


def _file_digests(runs: Path) -> dict[str, str]:
    return {path.parent.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in runs.glob("*/*/run.json")}


@pytest.mark.parametrize("cached", [False, True])
def test_run_digests_are_the_sha256_of_each_run_json(tmp_path: Path, phase1_store: Path,
                                                      published_store: Path, cached: bool) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    shutil.copytree(published_store, runs, dirs_exist_ok=True)
    ds = load_dataset(runs, cache_dir=tmp_path / "cache" if cached else None)
    assert not ds.summaries.empty  # published arms are keyed by their run_id too
    assert ds.run_digests == _file_digests(runs)
    assert set(ds.summaries["run_id"]) <= set(ds.run_digests)


def test_digest_of_ignores_order_and_follows_exactly_the_named_runs(tmp_path: Path, phase1_store: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    before = load_dataset(runs, cache_dir=tmp_path / "cache")
    ids = sorted(before.run_digests)
    first, rest = ids[:3], ids[3:]
    assert before.digest_of(first) == before.digest_of(reversed(first)) == digest_of(before.run_digests, first)
    assert before.digest_of(first) != before.digest_of(first[:2])
    with pytest.raises(KeyError):
        before.digest_of(["no-such-run"])

    run_json = next(runs.glob(f"*/{first[0]}/run.json"))
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["labels"]["note"] = "changed"
    run_json.write_text(json.dumps(data), encoding="utf-8")
    for cache_dir in (tmp_path / "cache", None):
        after = load_dataset(runs, cache_dir=cache_dir)
        assert after.digest_of(first) != before.digest_of(first)
        assert after.digest_of(rest) == before.digest_of(rest)


def test_records_built_in_memory_have_digests_too(phase1_dataset: Dataset) -> None:
    ds = build_dataset(phase1_dataset.records)
    assert set(ds.run_digests) == {r.run_id for r in phase1_dataset.records}
    assert build_dataset(phase1_dataset.records).run_digests == ds.run_digests
