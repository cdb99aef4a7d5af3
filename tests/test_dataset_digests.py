"""Per-run content digests: what page and analysis caches key on ("the runs this read")."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkreport.cache import digest_of
from sparkreport.dataset import Dataset, RecordKey, build_dataset, load_dataset


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
    # Kept per set of runs: asked again (repeats, a generator, another order), the same digest;
    # a set holding an unknown run still raises.
    assert before.digest_of(iter([*first, first[0]])) == digest_of(before.run_digests, first)
    with pytest.raises(KeyError):
        before.digest_of([*first, "no-such-run"])

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


def test_the_dataset_digest_is_the_sha256_of_the_records_canonical_json(
        phase1_dataset: Dataset, published_store: Path) -> None:
    """The digest every page footer and export prints: unchanged by the faster encoding."""
    for ds in (phase1_dataset, load_dataset(published_store)):
        expected = json.dumps([r.to_dict() for r in ds.records], sort_keys=True, default=str)
        assert ds.digest == hashlib.sha256(expected.encode()).hexdigest()


@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)))))
def test_the_digest_fed_a_record_at_a_time_is_that_of_the_joined_list(texts: list[str]) -> None:
    from sparkreport.dataset import dataset_digest

    joined = "[" + ", ".join(texts) + "]"
    assert dataset_digest(iter(texts)) == hashlib.sha256(joined.encode()).hexdigest()


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"hardware": {"memory_pool_gib": True}}, "field 'hardware.memory_pool_gib' must not be a boolean (True)"),
        ({"workload": {"num_requests": 1.5}}, "field 'workload.num_requests' has the wrong type (float)"),
        ({"model": {"zzz": 1, "name": 3}}, "field 'model.zzz' is not a known field"),
        ({"model": {"name": "m", "id": 4}}, "field 'model.id' has the wrong type (int)"),
        ({"metrics": {"kv_cache_gib": -1}}, "field 'metrics.kv_cache_gib': kv_cache_gib = -1 GiB is negative"),
        ({"metrics": {"start_temp_c": 400}}, "field 'metrics.start_temp_c': start_temp_c = 400 °C is outside -40…150 °C"),
        ({"metrics": {"kv_cache_gib": True}}, "field 'metrics.kv_cache_gib' must be a number or null, not True"),
    ],
)
def test_fast_validation_reports_what_the_full_check_did(patch: dict[str, object], message: str) -> None:
    from sparkreport.errors import SchemaError
    from sparkreport.schema import RunRecord

    data = RunRecord(run_id="r", campaign="c").to_dict() | patch
    with pytest.raises(SchemaError) as info:
        RunRecord.from_dict(data, "x/run.json")
    assert info.value.problem == message


def test_fast_validation_accepts_what_the_full_check_did() -> None:
    from sparkreport.schema import RunRecord

    data = RunRecord(run_id="r", campaign="c").to_dict() | {
        "hardware": {"memory_pool_gib": 3, "unified_memory": True},
        "metrics": {"kv_cache_gib": 2, "start_temp_c": -5.0},
    }
    record = RunRecord.from_dict(data, "x/run.json")
    assert record.hardware.memory_pool_gib == 3 and record.hardware.unified_memory is True
    assert record.metrics == {"kv_cache_gib": 2.0, "start_temp_c": -5.0}
    assert isinstance(record.metrics["kv_cache_gib"], float)


def _assert_same(a: Dataset, b: Dataset) -> None:
    import pandas as pd

    pd.testing.assert_frame_equal(a.runs, b.runs)
    pd.testing.assert_frame_equal(a.summaries, b.summaries)
    assert (a.digest, a.paths, a.run_digests, a.incomplete) == (b.digest, b.paths, b.run_digests, b.incomplete)
    assert [r.to_dict() for r in a.records] == [r.to_dict() for r in b.records]
    assert a.record_keys() == [RecordKey.of(r) for r in b.records] == b.record_keys()
    assert [r.to_dict() for r in a.records[2:5]] == [r.to_dict() for r in list(b.records)[2:5]]
    assert len(a.records) == len(b.records)


def test_a_cached_load_gives_the_frames_of_an_uncached_one(tmp_path: Path, phase1_store: Path,
                                                           published_store: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    shutil.copytree(published_store, runs, dirs_exist_ok=True)
    cache = tmp_path / "cache"
    _assert_same(load_dataset(runs, cache_dir=cache), load_dataset(runs))  # cold cache
    _assert_same(load_dataset(runs, cache_dir=cache), load_dataset(runs))  # every record from the cache

    run_json = sorted(runs.glob("*/*/run.json"))[5]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] = 1234.5
    run_json.write_text(json.dumps(data), encoding="utf-8")
    folder = run_json.parent  # (a campaign folder is its runs' campaign: renaming it alone is refused)
    folder.rename(folder.with_name("renamed"))  # same bytes in another folder: run_path follows
    _assert_same(load_dataset(runs, cache_dir=cache), load_dataset(runs))
    assert load_dataset(runs, cache_dir=cache).runs["run_path"].str.endswith("/renamed").any()


def test_an_uncached_load_read_in_pieces_by_workers_gives_what_one_process_reads(
        tmp_path: Path, phase1_store: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a record cache, a store of two pieces or more is read by forked workers, a piece of
    consecutive runs each: the tables, digests, paths and records are those of one process's read,
    and a record is made again from its canonical JSON only when asked for."""
    from sparkreport import dataset

    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    shutil.copytree(published_store, runs, dirs_exist_ok=True)
    monkeypatch.setattr(dataset, "PIECE_RUNS", 7)  # ~10 pieces of a 70-run store
    monkeypatch.setenv("SPARKREPORT_JOBS", "1")
    alone = load_dataset(runs)
    monkeypatch.setenv("SPARKREPORT_JOBS", "2")
    pieces = load_dataset(runs)
    assert [flat._record for flat in pieces.records.flats] == [None] * len(pieces.records)  # none made yet
    _assert_same(pieces, alone)
    assert all(flat._record is not None for flat in pieces.records.flats)


def test_a_bad_run_json_read_by_workers_is_the_first_in_store_order_as_in_one_process(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkreport import dataset
    from sparkreport.errors import SchemaError

    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    files = sorted(runs.glob("*/*/run.json"))
    files[60].write_text("{ not json", encoding="utf-8")  # in the last piece
    data = json.loads(files[23].read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] = -1.0  # in the fourth piece: the first in store order
    files[23].write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(dataset, "PIECE_RUNS", 6)
    messages = []
    for jobs in ("1", "2"):
        monkeypatch.setenv("SPARKREPORT_JOBS", jobs)
        with pytest.raises(SchemaError) as raised:
            load_dataset(runs)
        messages.append(raised.value.format_message())
    assert messages[0] == messages[1]
    assert messages[0].startswith(str(files[23])) and "is negative" in messages[0] and "\n" not in messages[0]


def test_a_campaign_whose_folder_is_as_walked_is_taken_without_looking_up_its_runs(
        tmp_path: Path, phase1_store: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the build's walk's folder digests, a campaign whose folder's digest is the one its
    shard was kept with is taken as kept: none of its run.json digests is looked up (its runs'
    digests and records come from the shard), and the dataset is the one a read without the
    cache gives — after a run changed, after a file beside the runs changed (another digest,
    the same runs), after a run moved to another folder."""
    from sparkreport.cache import HashMemo, walk_store

    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    shutil.copytree(published_store, runs, dirs_exist_ok=True)
    cache = tmp_path / "cache"
    asked: list[str] = []
    digests = HashMemo.digests

    def counted(self: HashMemo, folder: Path, files: list[tuple[str, object]]) -> list[str]:
        asked.extend(str(path) for path, _stat in files)
        return digests(self, folder, files)  # type: ignore[arg-type]

    monkeypatch.setattr(HashMemo, "digests", counted)

    def load() -> Dataset:
        asked.clear()
        folders = walk_store(runs).folders
        found = load_dataset(runs, cache_dir=cache, folders=folders)
        _assert_same(found, load_dataset(runs))
        return found

    def asked_in() -> set[str]:
        return {Path(path).relative_to(runs).parts[0] for path in asked}

    campaigns = sorted(path.name for path in runs.iterdir() if path.is_dir())
    load()
    assert asked_in() == set(campaigns)  # nothing kept yet
    load()
    assert asked == []  # every campaign as walked
    run_json = sorted((runs / campaigns[0]).glob("*/run.json"))[0]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] = 4321.5
    run_json.write_text(json.dumps(data), encoding="utf-8")
    load()
    assert asked_in() == {campaigns[0]}
    load()
    assert asked == []
    (run_json.parent / "notes.txt").write_text("beside the run", encoding="utf-8")  # the same runs
    load()
    assert asked_in() == {campaigns[0]}
    load()
    assert asked == []  # the shard's head took the new folder digest
    folder = sorted((runs / campaigns[-1]).iterdir())[0]
    folder.rename(folder.with_name(folder.name + "-moved"))
    assert any(path.endswith("-moved") for path in load().paths)
    assert asked_in() == {campaigns[-1]}
