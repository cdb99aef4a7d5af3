"""Incremental builds: an unchanged rebuild reuses the cache, a changed run.json is picked up."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_helpers import calls_recorded, put_campaign

from sparkreport.cache import BlobCache, HashMemo, RecordCache
from sparkreport.dataset import load_dataset
from sparkreport.render import RenderOptions
from sparkreport.site import build


def _project(tmp_path: Path, phase1_store: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(phase1_store, project / "runs")
    (project / "mkdocs.yml").write_text("site_name: cache test\n", encoding="utf-8")
    return project


def _options(project: Path) -> RenderOptions:
    return RenderOptions(runs_dir=project / "runs", project_root=project, command="sparkreport build")


def test_unchanged_rebuild_reuses_the_build_and_a_changed_run_is_picked_up(
        tmp_path: Path, phase1_store: Path) -> None:
    project = _project(tmp_path, phase1_store)
    first = build(_options(project))
    assert not first.cached
    assert (project / "build" / "cache" / "build.json").is_file()
    index = project / "site" / "index.html"
    stamp = index.stat().st_mtime_ns

    second = build(_options(project))
    assert second.cached
    assert index.stat().st_mtime_ns == stamp  # nothing was rewritten
    assert [p.path for p in second.render.pages] == [p.path for p in first.render.pages]
    assert second.render.chart_count == first.render.chart_count

    run_json = sorted((project / "runs").glob("*/*/run.json"))[0]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] = 4242.4242
    run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")

    third = build(_options(project))
    assert not third.cached
    published = project / "site" / "runs" / "files" / run_json.parent.relative_to(project / "runs") / "run.json"
    assert json.loads(published.read_text(encoding="utf-8"))["metrics"]["output_throughput_tok_s"] == 4242.4242
    csv = (project / "build" / "docs" / "downloads" / "dataset.csv").read_text(encoding="utf-8")
    assert "4242.4242" in csv
    assert build(_options(project)).cached
    # Downloads' exports were kept per campaign for the next build
    # (with the list of those the scan found clean: the one campaign's chunk was scanned once)
    from sparkreport.dataset import VOUCHED_FILE

    kept = sorted((project / "build" / "cache" / "exports" / "csv").iterdir(), key=lambda p: p.name == VOUCHED_FILE)
    assert [p.suffix for p in kept] == [".txt", ""] and kept[1].name == VOUCHED_FILE
    assert kept[1].read_text(encoding="utf-8").split(" ")[0] == kept[0].name


def test_a_site_changed_by_hand_is_built_again_not_kept(tmp_path: Path, phase1_store: Path) -> None:
    """Nothing the build reads changed, but the site did: a section removed, a page edited, a
    file added, a campaign's run files removed. The build puts back what it made instead of
    keeping the site as it found it; the site as built is then kept again."""
    project = _project(tmp_path, phase1_store)
    site = project / "site"
    build(_options(project))
    built = {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    assert build(_options(project)).cached
    campaign = next((site / "runs" / "files").iterdir())
    for change in (lambda: shutil.rmtree(site / "results"),
                   lambda: (site / "methodology" / "index.html").write_text("edited by hand", encoding="utf-8"),
                   lambda: (site / "stray.html").write_text("<p>added by hand</p>", encoding="utf-8"),
                   lambda: shutil.rmtree(campaign)):
        change()
        assert not build(_options(project)).cached
        assert {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()} == built
        assert build(_options(project)).cached


def test_a_template_change_invalidates_the_build(tmp_path: Path, phase1_store: Path) -> None:
    project = _project(tmp_path, phase1_store)
    build(_options(project))
    (project / "templates").mkdir()
    (project / "templates" / "runs.md").write_text(
        '{% extends "_base.md" %}{% block body %}# Runs\n\nOverridden runs page.\n{% endblock %}\n',
        encoding="utf-8")
    again = build(_options(project))
    assert not again.cached
    assert "Overridden runs page." in (project / "build" / "docs" / "runs" / "index.md").read_text(encoding="utf-8")


def test_a_deleted_site_is_rebuilt(tmp_path: Path, phase1_store: Path) -> None:
    project = _project(tmp_path, phase1_store)
    build(_options(project))
    shutil.rmtree(project / "site")
    again = build(_options(project))
    assert not again.cached
    assert (project / "site" / "index.html").is_file()


def test_dataset_cache_reads_changed_files_and_matches_an_uncached_read(tmp_path: Path, phase1_store: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    cache = tmp_path / "cache"
    plain = load_dataset(runs)
    cached = load_dataset(runs, cache_dir=cache)
    assert cached.digest == plain.digest
    assert load_dataset(runs, cache_dir=cache).digest == plain.digest  # from the cache this time

    run_json = sorted(runs.glob("*/*/run.json"))[-1]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["labels"]["note"] = "changed"
    run_json.write_text(json.dumps(data), encoding="utf-8")
    changed = load_dataset(runs, cache_dir=cache)
    assert changed.digest != plain.digest
    assert changed.digest == load_dataset(runs).digest
    assert "changed" in set(changed.runs["label.note"].dropna())


def mixed_store(tmp_path: Path, phase1_store: Path, published_store: Path) -> Path:
    """A run store of three campaigns: runs with their labels and metrics, and published summaries."""
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    shutil.copytree(published_store, runs, dirs_exist_ok=True)
    return runs


def assert_same_as_uncached(runs: Path, cache: Path) -> None:
    """A read through the cache gives the tables (types, columns, order) a read without it gives."""
    import pandas.testing as pdt

    cached, plain = load_dataset(runs, cache_dir=cache), load_dataset(runs)
    assert cached.digest == plain.digest and cached.paths == plain.paths
    pdt.assert_frame_equal(cached.runs, plain.runs)
    pdt.assert_frame_equal(cached.summaries, plain.summaries)


def stacking_recorded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """How each :meth:`StackedTables.tables` call from now on made its tables ("kept",
    "spliced" or "stacked"), in order."""
    from sparkreport.dataset import StackedTables

    how: list[str] = []
    tables = StackedTables.tables

    def recorded(self: StackedTables, *args: object, **kwargs: object) -> object:
        made = tables(self, *args, **kwargs)  # type: ignore[arg-type]
        how.append(self.how)
        return made

    monkeypatch.setattr(StackedTables, "tables", recorded)
    return how


def test_cached_tables_equal_an_uncached_read_and_only_a_changed_campaign_is_flattened(
        tmp_path: Path, phase1_store: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each campaign's rows are kept with its records (issue 16, thirteenth round): the stacked
    tables equal a read without the cache (types, columns, order: campaigns with other labels,
    metrics and published summaries), and a change in one campaign makes only its frames again."""
    from sparkreport import dataset as dataset_module

    runs = mixed_store(tmp_path, phase1_store, published_store)
    cache = tmp_path / "cache"
    made: list[int] = []
    frames = dataset_module._frames
    monkeypatch.setattr(dataset_module, "_frames", lambda flats, paths: made.append(len(flats)) or frames(flats, paths))

    def same_as_uncached() -> None:
        assert_same_as_uncached(runs, cache)

    campaigns = sorted(path.name for path in runs.iterdir() if path.is_dir())
    assert len(campaigns) == 3
    same_as_uncached()
    made.clear()
    load_dataset(runs, cache_dir=cache)
    assert made == []  # every campaign's frames kept
    run_json = sorted((runs / campaigns[0]).glob("*/run.json"))[0]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["labels"]["only_here"] = "x"
    run_json.write_text(json.dumps(data), encoding="utf-8")
    made.clear()
    same_as_uncached()
    assert made[0] == len(list((runs / campaigns[0]).glob("*/run.json")))  # the changed campaign's, cached read
    assert len(made) == 2  # and the uncached read's one pass
    folder = sorted((runs / campaigns[-1]).iterdir())[0]
    folder.rename(folder.with_name(folder.name + "-moved"))  # same bytes, another folder: its rows name it
    same_as_uncached()


def test_stacked_tables_splice_a_changed_campaign_into_the_kept_tables(
        tmp_path: Path, phase1_store: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stacked tables are kept (issue 16, twenty-fifth round): a build with nothing changed
    takes them as they are, a change drops the changed campaigns' rows and adds their new
    frames — and every time the tables equal a read without the cache: a label column that
    only the changed run had goes away with it, a new or removed campaign comes and goes, and a
    campaign of published summaries keeps its rows."""
    from sparkreport.dataset import StackedTables

    runs = mixed_store(tmp_path, phase1_store, published_store)
    cache = tmp_path / "cache"
    how = stacking_recorded(monkeypatch)

    def same_as_uncached(expected: str) -> None:
        how.clear()
        assert_same_as_uncached(runs, cache)
        assert how == [expected]

    campaigns = sorted(path.name for path in runs.iterdir() if path.is_dir())
    same_as_uncached("stacked")
    same_as_uncached("kept")
    run_json = next(path for path in sorted(runs.glob("*/*/run.json"))
                    if json.loads(path.read_text(encoding="utf-8")).get("record_type") == "run")
    original = run_json.read_text(encoding="utf-8")
    data = json.loads(original)
    data["labels"]["only_here"] = "x"
    data["iteration"] = 999  # sorted among the other campaigns' rows again
    run_json.write_text(json.dumps(data), encoding="utf-8")
    same_as_uncached("spliced")
    assert "label.only_here" in load_dataset(runs, cache_dir=cache).runs.columns
    run_json.write_text(original, encoding="utf-8")
    same_as_uncached("spliced")
    assert "label.only_here" not in load_dataset(runs, cache_dir=cache).runs.columns
    aside = next(name for name in campaigns if name != run_json.parent.parent.name)
    shutil.move(runs / aside, tmp_path / "aside")
    same_as_uncached("spliced")
    shutil.move(tmp_path / "aside", runs / aside)
    same_as_uncached("spliced")
    (cache / StackedTables.FILE).write_bytes(b"not a pickle")  # damaged: stacked again
    same_as_uncached("stacked")


def test_a_spliced_runs_table_holds_each_text_column_in_one_chunk(
        tmp_path: Path, phase1_store: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The splice stacks the kept rows and a changed campaign's as pieces; pyarrow would join a
    text column's pieces again at every take of its rows (the pages' and the analysis'
    selections: 0.28 s of a new run's build at 10 000 runs), so they are joined once."""
    import pandas as pd

    runs = tmp_path / "runs"
    sources = sorted(phase1_store.glob("*/*/run.json"))
    for name in ("a-first", "b-second", "c-third"):  # campaigns of runs alike: columns of the same types
        put_campaign(runs, name, sources, list(range(len(sources))))
    cache = tmp_path / "cache"
    how = stacking_recorded(monkeypatch)
    load_dataset(runs, cache_dir=cache)
    run_json = sorted((runs / "b-second").glob("*/run.json"))[0]  # the middle one: three pieces
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["iteration"] = 999
    run_json.write_text(json.dumps(data), encoding="utf-8")
    table = load_dataset(runs, cache_dir=cache).runs
    assert how == ["stacked", "spliced"]
    text = [c for c in table.columns if isinstance(table[c].array, pd.arrays.ArrowExtensionArray)]
    assert text and {c: table[c].array.__arrow_array__().num_chunks for c in text} == dict.fromkeys(text, 1)


def test_a_spliced_load_reads_only_the_changed_campaigns_runs_table_and_a_lost_one_is_made_again(
        tmp_path: Path, phase1_store: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each campaign's runs table is kept beside its shard (issue 16, thirty-fifth round) and read
    only when the stacked tables need it: nothing changed reads none, a changed campaign makes
    its own, and the tables still equal a read without the cache. A body file that is gone, or
    was written for other records, is made again from the records."""
    from sparkreport.dataset import StackedTables

    runs = mixed_store(tmp_path, phase1_store, published_store)
    cache = tmp_path / "cache"
    read = calls_recorded(monkeypatch, RecordCache, "extra_body")
    assert_same_as_uncached(runs, cache)
    assert sorted(p.suffix for p in (cache / "records").iterdir()) == [".body"] * 3 + [".pickle"] * 3 + [".texts"] * 3
    read.clear()
    assert_same_as_uncached(runs, cache)
    assert read == []  # the kept tables: no campaign's own runs table read
    run_json = next(path for path in sorted(runs.glob("*/*/run.json"))
                    if json.loads(path.read_text(encoding="utf-8")).get("record_type") == "run")
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] = 1.0
    run_json.write_text(json.dumps(data), encoding="utf-8")
    read.clear()
    assert_same_as_uncached(runs, cache)
    assert read == []  # the changed campaign's made afresh, the others' rows spliced from the kept tables
    for path in (cache / "records").glob("*.body"):
        path.unlink()
    (cache / StackedTables.FILE).unlink()  # stacked again from every campaign's frames
    read.clear()
    assert_same_as_uncached(runs, cache)
    assert len(read) == 3  # asked for, found gone, made from the records


def test_the_dataset_digest_is_hashed_from_the_texts_files_and_made_again_without_them(
        tmp_path: Path, phase1_store: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each campaign's records' canonical JSON is kept in a texts file beside its shard, which the
    dataset's digest reads (issue 16, thirty-ninth round): a load from the cache unpickles no
    record to hash the dataset, a changed run rewrites its campaign's file only, and a file that
    is gone, damaged, or holds another order of the runs (folders renamed) still gives the
    digest of a read without the cache — made from the records, then written again."""
    from sparkreport.dataset import RecordGraphs

    runs = mixed_store(tmp_path, phase1_store, published_store)
    cache = tmp_path / "cache"
    assert_same_as_uncached(runs, cache)
    texts = sorted((cache / "records").glob("*.texts"))
    assert len(texts) == 3
    unpickled = calls_recorded(monkeypatch, RecordGraphs, "record")
    before = {path: path.read_bytes() for path in texts}
    assert_same_as_uncached(runs, cache)
    assert unpickled == []  # the digest read the texts files, not the records
    run_json = sorted(runs.glob("phase1/*/run.json"))[0]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] = 1.0
    run_json.write_text(json.dumps(data), encoding="utf-8")
    assert_same_as_uncached(runs, cache)
    assert sum(path.read_bytes() != before[path] for path in texts) == 1  # the changed campaign's only

    phase1 = RecordCache(cache / "records").texts_path("phase1")
    in_order = phase1.read_bytes()
    others = [path for path in texts if path != phase1]
    others[0].unlink()
    others[1].write_bytes(others[1].read_bytes()[:-10])  # cut short: its length is not the one named
    first, second = [path.parent for path in sorted(runs.glob("phase1/*/run.json"))[:2]]  # two runs' folders swapped
    first.rename(tmp_path / "swap")
    second.rename(first)
    (tmp_path / "swap").rename(second)
    for _ in range(2):  # made again from the records, then as kept
        assert_same_as_uncached(runs, cache)
        assert sorted((cache / "records").glob("*.texts")) == texts
    assert phase1.read_bytes() != in_order  # written again in the runs' new order


def test_writes_put_off_happen_when_run_and_keep_what_was_made(
        tmp_path: Path, phase1_store: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build puts off writing the stacked tables and the analysis cache until it waits for its
    builder (:class:`WritesLater`): nothing is written before run(), the dataset is handed copies
    (what it does to them is not what is kept), and once run() the next load keeps the tables —
    equal to a read without the cache — and the analysis cache holds what was put in it, as
    written at once."""
    import pandas.testing as pdt

    from sparkreport.cache import AnalysisCache, WritesLater
    from sparkreport.dataset import StackedTables

    runs = mixed_store(tmp_path, phase1_store, published_store)
    cache = tmp_path / "cache"
    how = stacking_recorded(monkeypatch)
    later = WritesLater()
    dataset = load_dataset(runs, cache_dir=cache, later=later)
    assert how == ["stacked"] and not (cache / StackedTables.FILE).exists()
    fresh = dataset.runs.copy()
    dataset.runs.loc[:, "model"] = "changed after the load"  # not what the cache keeps
    later.run()
    later.run()  # each write once
    assert (cache / StackedTables.FILE).is_file()
    kept = load_dataset(runs, cache_dir=cache)
    assert how == ["stacked", "kept"]
    pdt.assert_frame_equal(kept.runs, fresh)
    assert_same_as_uncached(runs, cache)

    analysis = AnalysisCache(tmp_path / "analysis.pickle", salt="s")
    analysis.later = later
    analysis.put("kind", "first", 1)
    analysis.save()
    analysis.put("kind", "second", 2)
    analysis.save()  # the same file again: one write, of the state run() finds
    assert not analysis.path.exists()  # type: ignore[union-attr]
    later.run()
    read = AnalysisCache(tmp_path / "analysis.pickle", salt="s")
    assert {kind: {key: read.get(kind, key) for key in keys} for kind, keys in read.entries.items()} \
        == {"kind": {"first": 1, "second": 2}}


def test_the_analysis_cache_appends_what_changed_and_reads_back_what_was_saved_last(tmp_path: Path) -> None:
    """A save after a few changes appends them (entries put, keys forgotten) to the journal
    beside the pickle; a reader gets exactly the entries of the last save, whichever way each
    save went; past the journal's share of the pickle, the whole is written again and the
    journal goes."""
    import random

    from sparkreport.cache import AnalysisCache

    path = tmp_path / "analysis.pickle"
    chance = random.Random(16)
    first = AnalysisCache(path, salt="s")
    for i in range(200):
        first.put("arm_stats", f"k{i}", ["a value", i] * 20)
    first.save()
    assert path.is_file() and not first.journal.exists()
    cache = AnalysisCache(path, salt="s")
    ways = []
    for _round in range(40):
        cache.renew()
        keys = list(cache.entries["arm_stats"])
        for key in keys:  # most entries asked for again (the others are forgotten by the save)
            if chance.random() < 0.97:
                cache.get("arm_stats", key)
        for _new in range(chance.randrange(4)):
            cache.put("arm_stats", f"n{chance.randrange(10**9)}", ["new", chance.random()])
        cache.put("history", "whole", ("the store's", chance.random()))  # a kind keyed by the whole store
        journaled = cache.journal.stat().st_size if cache.journal.exists() else 0
        cache.save()
        ways.append("appended" if cache.journal.exists() and cache.journal.stat().st_size > journaled else "whole")
        read = AnalysisCache(path, salt="s")
        assert {k: {key: read.get(k, key) for key in v} for k, v in read.entries.items()} \
            == {k: {key: cache.get(k, key) for key in v} for k, v in cache.entries.items()}
    assert "appended" in ways and "whole" in ways[1:]
    assert cache.journal_bytes <= AnalysisCache.JOURNAL_SHARE * cache.pickle_bytes


def test_the_analysis_caches_journal_survives_a_kill_and_another_writer(tmp_path: Path) -> None:
    """A frame cut short by a kill ends the journal (the frames before it count); a frame
    appended on an older pickle (a process that read the cache before it was written whole
    again) is passed over; a pickle of the code before the journal is read, then written whole."""
    import pickle

    from sparkreport.cache import CACHE_VERSION, AnalysisCache

    path = tmp_path / "analysis.pickle"

    def opened() -> AnalysisCache:  # as a build opens it: every entry asked for again
        cache = AnalysisCache(path, salt="s")
        for key in list(cache.entries.get("kind", {})):
            cache.get("kind", key)
        return cache

    base = opened()
    for i in range(50):
        base.put("kind", f"k{i}", f"{i:03}" * 40)
    base.save()
    one = opened()
    one.put("kind", "added", 1)
    one.save()
    assert one.journal.exists() and opened().get("kind", "added") == 1
    whole = one.journal.read_bytes()
    two = opened()
    two.put("kind", "second", 2)
    two.save()
    appended = two.journal.read_bytes()
    assert len(appended) > len(whole)
    two.journal.write_bytes(appended[:len(whole) + 12])  # the second frame cut short
    cut = opened()
    assert cut.get("kind", "added") == 1 and cut.get("kind", "second") is None and len(cut.entries["kind"]) == 51

    stale = opened()  # reads the cache, then another process writes it whole
    other = opened()
    other.pickle_bytes = 0  # no room in its journal: the whole cache again, under a new token
    other.put("kind", "other", 3)
    other.save()
    assert not other.journal.exists()
    stale.put("kind", "stale", 4)
    stale.save()  # appended on the older pickle
    assert stale.journal.exists()
    read = opened()
    assert read.get("kind", "other") == 3 and read.get("kind", "stale") is None

    old = {"version": CACHE_VERSION, "salt": "s", "entries": {"kind": {"old": 5}}}  # no token
    path.write_bytes(pickle.dumps(old))
    read = opened()
    assert read.get("kind", "old") == 5 and read.token is None
    read.put("kind", "new", 6)
    read.save()
    assert not read.journal.exists() and pickle.loads(path.read_bytes())["journal"] == {"token": read.token}
    assert AnalysisCache(path, salt="other").entries == {}


def test_a_cache_write_put_off_that_fails_is_one_line_and_leaves_the_site(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis cache is written while MkDocs builds (WritesLater): a full disk there is the
    build's one-line error naming the file (as one in the render is), the live site is left as it
    was, and the next build, with room again, publishes the change."""
    import errno

    from sparkreport import cache as cache_module
    from sparkreport.errors import BuildError

    project = _project(tmp_path, phase1_store)
    build(_options(project))
    index = project / "site" / "index.html"
    before = index.read_bytes()
    run_json = sorted((project / "runs").glob("*/*/run.json"))[0]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] = 4242.4242
    run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")
    write = cache_module._atomic_bytes
    analysis = project / "build" / "cache" / "analysis.pickle"

    def full(path: Path, data: bytes) -> None:
        if path == analysis:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        write(path, data)

    monkeypatch.setattr(cache_module, "_atomic_bytes", full)
    with pytest.raises(BuildError) as raised:
        build(_options(project))
    assert raised.value.format_message() == (f"{analysis}: No space left on device — check free space and "
                                             "permissions, then run it again")
    assert index.read_bytes() == before
    monkeypatch.undo()
    build(_options(project))
    published = project / "site" / "runs" / "files" / run_json.parent.relative_to(project / "runs") / "run.json"
    assert json.loads(published.read_text(encoding="utf-8"))["metrics"]["output_throughput_tok_s"] == 4242.4242


#: Campaign names for the property test below: a new one may sort before, between or after the others.
SPLICE_NAMES = ("a", "b", "b-1", "m", "z")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(SPLICE_NAMES), st.lists(st.integers(0, 62), min_size=1, max_size=6)),
    st.tuples(st.just("remove"), st.sampled_from(SPLICE_NAMES), st.just([])),
    st.tuples(st.just("change"), st.sampled_from(SPLICE_NAMES), st.lists(st.integers(0, 62), min_size=1,
                                                                          max_size=1))),
    min_size=1, max_size=6))
def test_spliced_tables_equal_an_uncached_read_whatever_campaigns_come_and_go(
        phase1_store: Path, steps: list[tuple[str, str, list[int]]]) -> None:
    """Splicing takes the unchanged campaigns' rows as slices of the kept table (issue 16,
    twenty-sixth round): after any sequence of campaigns put in (sorting before, between or
    after the others), removed, or changed in one run, the tables equal a read without the
    cache, and they are spliced, never stacked again."""
    import tempfile

    sources = sorted(path for path in phase1_store.glob("*/*/run.json"))
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        how = stacking_recorded(patch)
        runs, cache = Path(folder) / "runs", Path(folder) / "cache"
        runs.mkdir()
        for name in SPLICE_NAMES[:2]:
            put_campaign(runs, name, sources, [0, 1, 2])
        assert_same_as_uncached(runs, cache)
        assert how == ["stacked"]
        for action, name, picks in steps:
            if action == "put":
                shutil.rmtree(runs / name, ignore_errors=True)
                put_campaign(runs, name, sources, picks)
            elif action == "remove":
                shutil.rmtree(runs / name, ignore_errors=True)
            elif (runs / name).is_dir():
                files = sorted((runs / name).glob("*/run.json"))
                data = json.loads(files[picks[0] % len(files)].read_text(encoding="utf-8"))
                data["iteration"] = picks[0] + 100  # sorted elsewhere in its campaign
                data["labels"][f"step{picks[0]}"] = "changed"  # a column only it has
                files[picks[0] % len(files)].write_text(json.dumps(data), encoding="utf-8")
            how.clear()
            assert_same_as_uncached(runs, cache)
            assert how in ([], ["kept"], ["spliced"])  # [] for one campaign: nothing to stack


def test_record_cache_drops_entries_of_another_salt(tmp_path: Path) -> None:
    folder = tmp_path / "records"
    cache = RecordCache(folder, salt="a")
    cache.put("c1", "d1", {"x": 1})
    cache.save()
    assert RecordCache(folder, salt="a").get("c1", "d1") == {"x": 1}
    assert RecordCache(folder, salt="b").get("c1", "d1") is None


def test_a_lazy_record_cache_reads_only_the_shards_asked_for_and_keeps_the_others_files(tmp_path: Path) -> None:
    """A lazy cache (the Runs rows') reads a shard's file when that shard is first asked for;
    a shard still wanted but never read keeps its file through a save, one no longer wanted
    loses it, and a put into a shard not yet read keeps what the shard's file held."""
    folder = tmp_path / "listing"
    cache = RecordCache(folder, salt="a")
    for shard in ("c1", "c2", "c3"):
        cache.put(shard, f"{shard}-old", [shard])
    cache.save()
    lazy = RecordCache(folder, salt="a", lazy=True)
    assert lazy.shards == {} and lazy.has_file("c2") and not lazy.has_file("c4")
    assert lazy.get("c1", "c1-old") == ["c1"] and set(lazy.shards) == {"c1"}
    lazy.put("c2", "c2-new", ["c2 again"])  # c2 read first: its old entry is still there
    assert set(lazy.shards["c2"]) == {"c2-old", "c2-new"}
    lazy.keep_only({"c1": {"c1-old"}, "c2": {"c2-new"}})  # c3 gone from the store
    lazy.save()
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        RecordCache(folder).shard_path(s).name for s in ("c1", "c2"))
    again = RecordCache(folder, salt="a")
    assert again.shards == {"c1": {"c1-old": ["c1"]}, "c2": {"c2-new": ["c2 again"]}}
    lazy = RecordCache(folder, salt="a", lazy=True)
    lazy.put("c1", "c1-new", ["c1 again"])
    lazy.keep_only({"c1": {"c1-new"}, "c2": {"c2-new"}})  # c2 never read: its file stays as it is
    lazy.save()
    assert RecordCache(folder, salt="a").shards == {"c1": {"c1-new": ["c1 again"]}, "c2": {"c2-new": ["c2 again"]}}


def test_record_cache_reads_a_shards_body_when_asked_and_only_if_written_for_its_head(tmp_path: Path) -> None:
    """What is kept with a shard: its head read with the records, its body from its own file
    when first asked for; a body file of another check (a kill between the two writes) or none
    at all gives None (the caller makes it again), and a removed shard's body goes with it."""
    folder = tmp_path / "records"
    cache = RecordCache(folder, salt="a")
    cache.put("c1", "d1", {"x": 1})
    cache.put_extra("c1", ("k1", ["run_id"]), {"rows": 200}, check="k1")
    cache.save()
    again = RecordCache(folder, salt="a")
    assert again.extra("c1") == ("k1", ["run_id"]) and not again.bodies  # the body not read yet
    assert again.extra_body("c1") == {"rows": 200}
    stale = RecordCache(folder, salt="a")
    stale.put("c1", "d2", {"x": 2})
    stale.put_extra("c1", ("k2", ["run_id"]), {"rows": 201}, check="k2")
    body = stale.body_path("c1")
    old = body.read_bytes()
    stale.save()
    body.write_bytes(old)  # the shard names k2, its body file is k1's
    assert RecordCache(folder, salt="a").extra_body("c1") is None
    body.unlink()
    assert RecordCache(folder, salt="a").extra_body("c1") is None
    gone = RecordCache(folder, salt="a")
    gone.keep_only({})
    gone.save()
    assert list(folder.iterdir()) == []


def test_record_cache_rewrites_only_the_shard_that_changed(tmp_path: Path) -> None:
    folder = tmp_path / "records"
    cache = RecordCache(folder, salt="a")
    cache.put("c1", "d1", {"x": 1})
    cache.put("c2", "d2", {"x": 2})
    cache.save()
    files = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}
    assert len(files) == 2
    cache = RecordCache(folder, salt="a")
    cache.put("c2", "d3", {"x": 3})
    cache.keep_only({"c1": {"d1"}, "c2": {"d3"}})
    cache.save()
    after = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}
    assert after.keys() == files.keys()
    assert sum(after[name] == files[name] for name in files) == 1  # c1's file untouched
    again = RecordCache(folder, salt="a")
    assert (again.get("c1", "d1"), again.get("c2", "d2"), again.get("c2", "d3")) == ({"x": 1}, None, {"x": 3})
    again.keep_only({"c2": {"d3"}})  # campaign c1 removed from the store: its shard goes too
    again.save()
    assert len(list(folder.iterdir())) == 1
    assert RecordCache(folder, salt="a").get("c1", "d1") is None
    other = RecordCache(folder, salt="b")  # other code: c2's file is not read, and goes once it saves
    other.put("c3", "d4", {"x": 4})
    other.save()
    assert [RecordCache(folder, salt="b").get("c3", "d4")] == [{"x": 4}] and len(list(folder.iterdir())) == 1


def test_hash_memo_rehashes_a_rewritten_file(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("one", encoding="utf-8")
    memo = HashMemo(tmp_path / "memo.json")
    first = memo.digest(path)
    memo.save()
    path.write_text("two!", encoding="utf-8")
    assert HashMemo(tmp_path / "memo.json").digest(path) != first


_ENTRIES = st.dictionaries(st.sampled_from([f"p{i}" for i in range(12)]),
                           st.lists(st.integers(0, 3), min_size=1, max_size=3), max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(saves=st.lists(_ENTRIES, min_size=1, max_size=8), limit=st.integers(1, 6))
def test_a_journaled_dict_reads_back_what_was_saved_last_whatever_the_journal_holds(
        tmp_path_factory: pytest.TempPathFactory, saves: list[dict[str, list[int]]], limit: int) -> None:
    """Whatever sequence of dicts is saved (entries set, changed, removed), a fresh load gives the
    last one: whole pickles and appended journals alike; the journal never outgrows its limit."""
    import sparkreport.cache as cache_module
    from sparkreport.cache import JournaledDict

    path = tmp_path_factory.mktemp("journaled") / "kept.pickle"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cache_module, "JOURNAL_LINES", limit)
        for entries in saves:
            JournaledDict(path, "salt", "files").save(dict(entries))
            loaded = JournaledDict(path, "salt", "files")
            assert loaded.entries == entries
            lines = len(loaded.journal.read_text("utf-8").splitlines()) if loaded.journal.exists() else 0
            assert lines <= limit


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(saves=st.lists(st.tuples(_ENTRIES, st.sets(st.sampled_from("abcdef"), max_size=4)), min_size=1, max_size=8),
       limit=st.integers(1, 6))
def test_a_journaled_dict_keeps_the_entries_it_is_told_to_as_they_were(
        tmp_path_factory: pytest.TempPathFactory, saves: list[tuple[dict[str, list[int]], set[str]]],
        limit: int) -> None:
    """``save(entries, also=keys)`` leaves the file holding ``entries`` and, of ``keys``, the
    entries it held (what a rebuild's scan memo does with the run files carried over unscanned):
    a fresh load gives exactly that, whether the save appended to the journal or wrote the whole."""
    import sparkreport.cache as cache_module
    from sparkreport.cache import JournaledDict

    path = tmp_path_factory.mktemp("journaled-also") / "kept.pickle"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cache_module, "JOURNAL_LINES", limit)
        for entries, also in saves:
            held = JournaledDict(path, "salt", "files")
            expected = {key: value for key, value in held.entries.items() if key in also}
            expected.update(entries)
            held.save(dict(entries), also=also)
            assert held.entries == expected
            assert JournaledDict(path, "salt", "files").entries == expected


def test_a_journaled_dict_appends_changes_passes_over_a_cut_line_and_starts_empty_for_other_code(
        tmp_path: Path) -> None:
    import json

    from sparkreport.cache import JournaledDict

    path = tmp_path / "kept.pickle"
    JournaledDict(path, "v1", "files").save({"a": [1], "b": [2]})  # nothing read: written whole
    whole = path.read_bytes()
    kept = JournaledDict(path, "v1", "files")
    kept.save({"a": [1], "c": [3]})  # b removed, c set: two lines, the pickle untouched
    assert path.read_bytes() == whole
    assert [json.loads(line) for line in kept.journal.read_text("utf-8").splitlines()] == [["c", [3]], ["b"]]
    kept.save({"a": [1], "c": [3]})  # nothing changed: nothing written
    assert len(kept.journal.read_text("utf-8").splitlines()) == 2
    with kept.journal.open("a", encoding="utf-8") as handle:
        handle.write('["a", [9')  # a save killed mid-line: the entry stays as it was
    assert JournaledDict(path, "v1", "files").entries == {"a": [1], "c": [3]}
    other = JournaledDict(path, "v2", "files")  # another version's code: nothing known
    assert other.entries == {}
    other.save({"z": [0]})  # written whole, the old journal gone with the old pickle
    assert not other.journal.exists() and JournaledDict(path, "v2", "files").entries == {"z": [0]}
    assert JournaledDict(path, "v1", "files").entries == {}


def test_hash_memo_appends_what_it_learnt_and_rewrites_the_whole_memo_when_the_journal_is_long(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib
    import json
    import pickle

    import sparkreport.cache as cache_module

    monkeypatch.setattr(cache_module, "JOURNAL_LINES", 3)
    files = []
    for i in range(6):
        files.append(tmp_path / f"f{i}.txt")
        files[-1].write_text(f"file {i}", encoding="utf-8")
    memo_path = tmp_path / "cache" / cache_module.HASHES_FILE
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "hashes.json").write_text("{}", encoding="utf-8")  # the layout before
    memo = HashMemo(memo_path)
    memo.digest(files[0])
    memo.save()  # no memo read: the whole memo is written, the old layout's file removed
    assert memo_path.is_file() and not memo.journal.exists() and not (tmp_path / "cache" / "hashes.json").exists()
    before = memo_path.read_bytes()

    memo = HashMemo(memo_path)
    memo.digest(files[1])
    memo.digest(files[2])
    memo.save()  # two lines appended, the memo's file untouched
    assert memo_path.read_bytes() == before
    assert [json.loads(line)[0] for line in memo.journal.read_text("utf-8").splitlines()] == [
        str(files[1]), str(files[2])]
    with memo.journal.open("a", encoding="utf-8") as handle:
        handle.write('["half a line", 3')  # a save killed mid-write
    again = HashMemo(memo_path)
    assert {again.known(path, path.stat()) for path in files[:3]} == {
        hashlib.sha256(path.read_bytes()).hexdigest() for path in files[:3]}
    assert not again.changed

    again.digest(files[3])
    again.save()  # three lines + one would pass JOURNAL_LINES: the whole memo again, no journal
    assert not again.journal.exists()
    assert sorted(pickle.loads(memo_path.read_bytes())["files"]) == sorted(str(path) for path in files[:4])
    files[0].write_text("changed", encoding="utf-8")
    assert HashMemo(memo_path).known(files[0], files[0].stat()) is None


def test_blob_cache_round_trip(tmp_path: Path) -> None:
    cache = BlobCache(tmp_path / "svg", "svg")
    assert cache.get("ab" * 32) is None
    cache.put("ab" * 32, b"<svg/>")
    assert cache.get("ab" * 32) == b"<svg/>"
    assert (cache.hits, cache.misses) == (1, 1)


@pytest.mark.parametrize("name", ["hashes.pickle", "hashes.pickle.log", "records/0.pickle"])
def test_a_corrupt_cache_file_is_ignored(tmp_path: Path, phase1_store: Path, name: str) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    cache = tmp_path / "cache"
    load_dataset(runs, cache_dir=cache)  # the record shards written
    for shard in (cache / "records").glob("*.pickle"):
        shard.write_bytes(b"\x00not a cache")
    (cache / name).parent.mkdir(exist_ok=True)
    (cache / name).write_bytes(b"\x00not a cache")
    assert load_dataset(runs, cache_dir=cache).digest == load_dataset(runs).digest


def test_a_second_render_into_the_same_folder_stops_with_one_line(tmp_path: Path, phase1_store: Path) -> None:
    """Two renders would empty the docs folder under each other: the second one is refused."""
    import subprocess
    import sys
    import time

    from sparkreport.errors import BuildError
    from sparkreport.lock import LOCK_FILE
    from sparkreport.render import RenderOptions, render

    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from sparkreport.lock import output_lock\n"
        f"with output_lock(Path({str(tmp_path / 'build')!r})):\n"
        "    print('held', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(BuildError) as info:
            render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
        assert info.value.format_message() == (
            f"{tmp_path / 'build'}: another sparkreport render or build is writing here (pid {holder.pid}) — "
            "wait for it to finish, or pass another --docs-dir")
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    result = render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))  # the kernel dropped the lock
    assert result.pages and (tmp_path / "build" / LOCK_FILE).is_file()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a forked child shares the lock's open file")
def test_a_lock_released_is_free_while_a_child_forked_under_it_still_runs(tmp_path: Path) -> None:
    """A worker forked while the lock was held shares its open file; once the holder releases
    the lock, the folder is free at once, even while that worker is still ending."""
    import signal

    from sparkreport.lock import output_lock

    folder = tmp_path / "build"
    with output_lock(folder):
        child = os.fork()
        if child == 0:  # the worker: it keeps the lock's open file until it is stopped
            signal.pause()
            os._exit(0)
    try:
        with output_lock(folder):  # a new open file, a new flock: not refused
            pass
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def test_exports_from_campaign_chunks_are_byte_identical_and_a_new_run_reencodes_its_campaign(
        tmp_path: Path) -> None:
    """Downloads' CSV and JSON are assembled from one kept chunk per campaign: the bytes equal an
    export without chunks (first build: one pass, the folder only made; then chunked), after one
    more run only that run's campaign is encoded again, and chunks no longer used are removed."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from history_store import write_history_store

    from sparkreport.dataset import Dataset, ExportChunks, export
    from sparkreport.schema import RunRecord
    from sparkreport.store import RunStore

    runs = write_history_store(tmp_path / "runs", runs=2, campaign_per_version=True)
    chunks = ExportChunks(tmp_path / "exports", salt="code")

    def exported(ds: Dataset, folder: str, kept: ExportChunks | None) -> dict[str, bytes]:
        return {name: export(ds, tmp_path / folder / name, chunks=kept).read_bytes()
                for name in ("dataset.csv", "dataset.json")}

    ds = load_dataset(runs)
    campaigns = len(ds.campaigns())
    plain = exported(ds, "plain", None)
    # a first build: one pass over the table, cut into every campaign's chunk
    assert exported(ds, "first", chunks) == plain and chunks.computed == {"csv": campaigns, "json": campaigns}
    assert exported(ds, "again", chunks) == plain and chunks.reused == {"csv": campaigns, "json": campaigns}

    base = next(r for r in ds.records if r.campaign == "v0.21.0")
    RunStore(runs).write(RunRecord.from_dict({**base.to_dict(), "run_id": "native-0.21.0-extra", "iteration": 3}), [])
    grown = load_dataset(runs)
    chunks = ExportChunks(tmp_path / "exports", salt="code")
    assert exported(grown, "grown", chunks) == exported(grown, "grown-plain", None)
    assert chunks.computed == {"csv": 1, "json": 1}
    assert b"native-0.21.0-extra" in exported(grown, "grown-check", chunks)["dataset.csv"]
    assert len(list((tmp_path / "exports" / "csv").iterdir())) == campaigns  # the replaced chunk is gone
    other = ExportChunks(tmp_path / "exports", salt="other code")
    assert exported(grown, "other", other) == exported(grown, "grown-plain", None)
    assert other.computed == {"csv": campaigns, "json": campaigns}


def test_the_downloads_are_vouched_for_chunk_by_chunk(tmp_path: Path) -> None:
    """With the scan's piecewise vouching, an exported CSV or JSON is vouched for when every piece
    of it is clean — what the whole-file scan says of it. The first export scans each campaign's
    chunk and the file's head (and the JSON's tail); the next only what is new: a new run's
    campaign's chunk, a chunk whose file changed since it was found clean. A run with a credential
    shape leaves the file unvouched, for the whole-file scan to read and report."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from history_store import write_history_store

    from sparkreport.dataset import VOUCHED_FILE, ExportChunks, export
    from sparkreport.schema import RunRecord
    from sparkreport.site.scan import clean_pieces, vouch
    from sparkreport.store import RunStore

    runs = write_history_store(tmp_path / "runs", runs=2, campaign_per_version=True)
    scanned: list[bytes] = []

    def pieces(texts: list[bytes]) -> set[int] | None:
        scanned.extend(texts)
        return clean_pieces(texts)

    def exported(folder: str) -> ExportChunks:
        scanned.clear()
        chunks = ExportChunks(tmp_path / "exports", salt="code", vouch_pieces=pieces)
        for name in ("dataset.csv", "dataset.json"):
            export(load_dataset(runs), tmp_path / folder / name, chunks=chunks)
        return chunks

    files = [(name, str(tmp_path / "first" / name)) for name in ("dataset.csv", "dataset.json")]
    campaigns = len(load_dataset(runs).campaigns())
    assert exported("first").vouched == {"dataset.csv", "dataset.json"} == vouch(files)
    assert len(scanned) == (1 + campaigns) + (2 + campaigns)  # each chunk; the heads, the JSON's tail
    assert exported("again").vouched == {"dataset.csv", "dataset.json"} and len(scanned) == 3
    assert b"v0.21.0" not in b"".join(scanned)

    base = next(r for r in load_dataset(runs).records if r.campaign == "v0.21.0")
    RunStore(runs).write(RunRecord.from_dict({**base.to_dict(), "run_id": "native-0.21.0-extra", "iteration": 3}), [])
    assert exported("grown").vouched == {"dataset.csv", "dataset.json"}
    assert len(scanned) == 3 + 2 and sum(b"native-0.21.0-extra" in text for text in scanned) == 2
    chunk = next(p for p in (tmp_path / "exports" / "csv").iterdir() if p.name != VOUCHED_FILE)
    os.utime(chunk, ns=(time.time_ns(), time.time_ns() + 10**9))  # changed by hand since it was found clean
    assert exported("touched").vouched == {"dataset.csv", "dataset.json"} and len(scanned) == 3 + 1

    # a credential shape written into a record by hand (the store scrubs what it writes itself)
    record = next(runs.glob("v0.21.0/*/run.json"))
    data = json.loads(record.read_text(encoding="utf-8"))
    data["model"]["name"] = "hf_" + "Q7x" * 8
    record.write_text(json.dumps(data), encoding="utf-8")
    leaked = exported("leaked")
    assert b"hf_Q7x" in (tmp_path / "leaked" / "dataset.csv").read_bytes()
    assert leaked.vouched == set()
    assert vouch([(name, str(tmp_path / "leaked" / name)) for name in ("dataset.csv", "dataset.json")]) == set()
    # without the prefilter (no grep; or a shape added without its part of the prefilter) the
    # scan says nothing piece by piece: the files are left to the whole-file scan
    from sparkreport.site import scan

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(scan, "_PROBE_ARGS", {k: v for k, v in scan._PROBE_ARGS.items() if k != "jwt"})
        assert clean_pieces([b"nothing here\n"]) is None
    blind = ExportChunks(tmp_path / "exports-blind", salt="code", vouch_pieces=lambda _texts: None)
    export(load_dataset(runs), tmp_path / "blind.csv", chunks=blind)
    assert blind.vouched == set() and not (tmp_path / "exports-blind" / "csv" / VOUCHED_FILE).exists()


def test_the_prefilter_matches_the_same_whatever_follows_a_line() -> None:
    """A JSON chunk is scanned with the comma that follows its last line in the file, and vouched
    for wherever it lands — also last, with no comma: sound only while no part of the prefilter
    looks past its match (an end anchor, a word boundary)."""
    from sparkreport.site.scan import PREFILTER_ERE

    for anchor in ("$", "\\b", "\\B", "\\>", "\\W"):
        assert anchor not in PREFILTER_ERE, anchor


def test_an_export_s_sha256_is_of_the_bytes_written(tmp_path: Path) -> None:
    """The Downloads page's sha256 of each file comes from its writing (the CSV and JSON hashed
    part by part as their chunks are written, not read back): it is the sha256 of the file, with
    chunks or without, in each format."""
    import hashlib
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from history_store import write_history_store

    from sparkreport.dataset import ExportChunks, export_hashed

    ds = load_dataset(write_history_store(tmp_path / "runs", runs=2, campaign_per_version=True))
    for kept in (None, ExportChunks(tmp_path / "exports", salt="code"), ExportChunks(tmp_path / "exports", salt="code")):
        for name in ("dataset.csv", "dataset.json", "dataset.parquet"):
            path, digest = export_hashed(ds, tmp_path / "out" / name, chunks=kept)
            assert digest == hashlib.sha256(path.read_bytes()).hexdigest(), name


def test_export_cut_in_one_pass_is_each_campaign_encoded_alone(tmp_path: Path) -> None:
    """The chunks a cold build cuts from one pass over the table are, byte for byte, what encoding
    each campaign's rows alone gives — also with cells a spreadsheet would run (neutralised) and
    quotes; a CSV cell with a line break cannot be cut by lines, so each campaign is encoded alone,
    and the export is still the plain one."""
    import sys

    import numpy as np

    sys.path.insert(0, str(Path(__file__).parent))
    from history_store import write_history_store

    from sparkreport.dataset import Dataset, ExportChunks, _csv_by_campaign, _json_by_campaign, csv_safe, export
    from sparkreport.jsontext import spec_json

    runs = write_history_store(tmp_path / "runs", runs=2, campaign_per_version=True)
    ds = load_dataset(runs)
    frame = ds.runs.copy()
    frame["run_path"] = frame["run_path"].astype(object)
    frame.loc[frame.index[0], "run_path"] = '=HYPERLINK("x")'
    groups = [np.asarray(rows) for rows in sorted(frame.groupby("campaign", sort=False).indices.values(),
                                                  key=lambda rows: rows[0])]
    alone_csv = [csv_safe(frame.iloc[rows]).to_csv(index=False, header=False) for rows in groups]
    alone_json = [spec_json(json.loads(frame.iloc[rows].to_json(orient="records")), 1, sort_keys=False)[2:-3]
                  for rows in groups]
    assert _csv_by_campaign(frame, groups) == alone_csv
    assert _json_by_campaign(frame, groups) == alone_json
    broken = frame.copy()
    broken.loc[broken.index[1], "run_path"] = "two\nlines"
    assert _csv_by_campaign(broken, groups) is None
    with_break = Dataset(runs=broken, summaries=ds.summaries, records=ds.records, digest=ds.digest,
                         paths=ds.paths, run_digests=ds.run_digests)
    plain = export(with_break, tmp_path / "plain.csv").read_bytes()
    chunks = ExportChunks(tmp_path / "exports", salt="code")
    assert export(with_break, tmp_path / "chunked.csv", chunks=chunks).read_bytes() == plain
    assert chunks.computed == {"csv": len(groups)}


def test_commands_run_with_the_batch_collector_thresholds() -> None:
    """Every command tunes the cyclic collector for a heap that lives until it ends."""
    import gc

    from click.testing import CliRunner

    from sparkreport.cache import GC_THRESHOLDS
    from sparkreport.cli import main

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        assert CliRunner().invoke(main, ["formats"]).exit_code == 0
        assert gc.get_threshold() == GC_THRESHOLDS
    finally:
        gc.set_threshold(*before)


def test_walk_store_keys_each_campaign_by_its_files_stats(tmp_path: Path) -> None:
    from sparkreport.cache import walk_files, walk_store

    for campaign in ("a", "b"):
        (tmp_path / campaign / "run-1").mkdir(parents=True)
        (tmp_path / campaign / "run-1" / "run.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / ".staging" / "run-2").mkdir(parents=True)
    (tmp_path / ".staging" / "run-2" / "run.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "loose.txt").write_text("x\n", encoding="utf-8")
    walk = walk_store(tmp_path)
    assert walk.files == list(walk_files(tmp_path))  # what the build key hashes, as before
    first = walk.folders
    assert sorted(first) == ["a", "b"] and None not in first.values()
    assert walk_store(tmp_path).folders == first  # nothing read, nothing changed
    (tmp_path / "a" / "run-1" / "raw.log").write_text("new\n", encoding="utf-8")
    second = walk_store(tmp_path).folders
    assert second["a"] != first["a"] and second["b"] == first["b"]
    (tmp_path / "a" / "run-1" / "raw.log").write_text("newer\n", encoding="utf-8")  # same name, other size
    third = walk_store(tmp_path).folders["a"]
    assert third not in (first["a"], second["a"])
    (tmp_path / "b" / "run-1" / "link.log").symlink_to(tmp_path / "a" / "run-1" / "raw.log")
    (tmp_path / "c").symlink_to(tmp_path / "a")
    walk = walk_store(tmp_path)
    linked = walk.folders
    assert linked["b"] is None and linked["c"] is None and linked["a"] == third
    by_content = walk.by_content(HashMemo(None))  # a folder holding a link is never keyed, by content either
    assert sorted(by_content) == ["a", "b", "c"] and by_content["b"] is None and by_content["c"] is None
    assert by_content["a"] is not None


def test_a_walk_vouches_for_the_stat_of_each_file_it_reached_without_a_link(tmp_path: Path) -> None:
    """What the publisher takes instead of stat-ing a store file again: the walk's own stat of a
    regular file in a campaign folder without a link; nothing for a folder holding one, a file
    beside the campaigns, a hidden file or a path the walk never reached."""
    from sparkreport.cache import walk_store

    for campaign in ("a", "b"):
        (tmp_path / campaign / "run-1").mkdir(parents=True)
        (tmp_path / campaign / "run-1" / "run.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "a" / "run-1" / ".hidden").write_text("x\n", encoding="utf-8")
    (tmp_path / "b" / "run-1" / "link.json").symlink_to(tmp_path / "a" / "run-1" / "run.json")
    (tmp_path / "loose.txt").write_text("x\n", encoding="utf-8")
    walk = walk_store(tmp_path)
    found = walk.stat_of("a/run-1/run.json")
    now = os.lstat(tmp_path / "a" / "run-1" / "run.json")
    assert found is not None and (found.st_ino, found.st_size, found.st_mtime_ns) == (
        now.st_ino, now.st_size, now.st_mtime_ns)
    for unvouched in ("b/run-1/run.json", "b/run-1/link.json", "loose.txt", "a/run-1/.hidden",
                      "a/run-1/../run-1/run.json", "a/run-1/missing.log"):
        assert walk.stat_of(unvouched) is None, unvouched


def test_what_a_paused_collector_saw_made_goes_to_the_oldest_generation() -> None:
    """Objects made while the collector was paused (a loaded dataset, an unpickled cache) are
    moved into the oldest generation at the end, not left for the next young collection to walk
    (0.2 s after a 10 000-run load); a collector that was off stays off."""
    import gc

    from sparkreport.cache import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        made = [[i] for i in range(1000)]
    assert gc.isenabled()
    assert not any(obj is made for obj in gc.get_objects(generation=0))
    assert any(obj is made for obj in gc.get_objects(generation=2))
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def _git(folder: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=folder, check=True,
                   capture_output=True)


def _committed_store(tmp_path: Path, phase1_store: Path) -> Path:
    """A project in git whose runs/ (the Phase 1 store) is committed."""
    project = tmp_path / "project"
    shutil.copytree(phase1_store, project / "runs")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "runs")
    return project


def _checked_out_afresh(project: Path) -> None:
    """As a CI job's checkout leaves the store: the same bytes in new files (new mtimes and
    inodes), git's index describing them."""
    shutil.rmtree(project / "runs")
    _git(project, "checkout", "--", "runs")


def _reads(monkeypatch: pytest.MonkeyPatch, module: object) -> list[str]:
    """The files ``module`` opens from now on (its own ``open``)."""
    opened: list[str] = []

    def spy(path: object, *args: object, **kwargs: object) -> object:
        opened.append(str(path))
        return open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(module, "open", spy, raising=False)
    return opened


def test_the_hash_memo_digests_files_in_order_reading_only_the_unknown_and_asks_git_for_many(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib
    import os

    from sparkreport import cache

    folder = tmp_path / "runs"
    folder.mkdir()
    names = [f"f{i:02d}" for i in range(10)]
    for name in names:
        (folder / name).write_text(name * 3, encoding="utf-8")
    files = [(str(folder / name), os.stat(folder / name)) for name in names]
    expected = [hashlib.sha256((name * 3).encode()).hexdigest() for name in names]
    asked: list[Path] = []
    monkeypatch.setattr(cache, "git_clean_blobs", lambda where: asked.append(where) or {})
    monkeypatch.setattr(cache, "GIT_AFTER", 4)

    memo = HashMemo(tmp_path / "hashes.pickle")
    assert memo.digests(folder, files[:3]) == expected[:3] and asked == []  # 3 unknown: fewer than 4
    opened = _reads(monkeypatch, cache)
    assert memo.digests(folder, list(reversed(files))) == list(reversed(expected))  # in the order given
    assert asked == [folder]  # 7 unknown
    assert sorted(opened) == sorted(path for path, _stat in files[3:])  # the known three not read again
    opened.clear()
    assert memo.digests(folder, files) == expected and opened == [] and asked == [folder]


def test_a_store_checked_out_afresh_is_told_from_the_folder_the_last_walk_recorded(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fresh_checkout: the store's folder another inode than the record's (a CI job's clone with
    its caches restored); not a store changed in place, nor one no walk recorded yet."""
    from sparkreport import cache
    from sparkreport.cache import WalkRecord, fresh_checkout, walk_store

    monkeypatch.setattr(cache, "RACY_NS", 0)  # (the folders were made just now)
    project = _committed_store(tmp_path, phase1_store)
    runs = project / "runs"
    assert not fresh_checkout(runs, None) and not fresh_checkout(runs, WalkRecord())
    record = walk_store(runs, WalkRecord()).record
    assert record is not None and not fresh_checkout(runs, record)
    (runs / "another-campaign").mkdir()  # changed in place: the same folder
    assert not fresh_checkout(runs, record)
    runs.rename(tmp_path / "old-runs")  # (kept: its inode is not free for the new folder)
    _git(project, "checkout", "--", "runs")
    assert fresh_checkout(runs, record)
    assert not fresh_checkout(tmp_path / "missing", record)


def test_a_memo_expecting_git_knows_a_fresh_checkout_by_the_blob_ids_it_asked_for_ahead(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HashMemo.expect_git starts git_clean_blobs before the walk; the digests that need blob ids
    take that answer (git is not asked again) and read no file it vouches for; forget_git drops
    an answer no digests took, so a later one asks git itself."""
    import hashlib

    from sparkreport import cache
    from sparkreport.cache import walk_files

    project = _committed_store(tmp_path, phase1_store)
    runs = project / "runs"

    def listed() -> list[tuple[str, os.stat_result]]:
        return [(path, stat) for _relative, path, stat in walk_files(runs)]

    files = listed()
    assert len(files) >= cache.GIT_AFTER
    expected = [hashlib.sha256(Path(path).read_bytes()).hexdigest() for path, _stat in files]
    memo = HashMemo(tmp_path / "hashes.pickle")
    assert memo.digests(runs, files) == expected  # (learns each file's blob id)
    memo.save()
    _checked_out_afresh(project)
    fresh = HashMemo(tmp_path / "hashes.pickle")
    started: list[Path] = []
    start = cache.start_git_clean_blobs
    monkeypatch.setattr(cache, "start_git_clean_blobs", lambda where: started.append(where) or start(where))
    fresh.expect_git(runs)
    fresh.expect_git(runs)  # (asked twice before the walk: git is started once)
    assert started == [runs]
    asked: list[Path] = []
    monkeypatch.setattr(cache, "git_clean_blobs", lambda where: asked.append(where) or {})
    opened = _reads(monkeypatch, cache)
    assert fresh.digests(runs, listed()) == expected and asked == [] and opened == []

    _checked_out_afresh(project)
    again = HashMemo(tmp_path / "hashes.pickle")
    again.expect_git(runs)
    again.forget_git()
    assert again.digests(runs, listed()) == expected and asked == [runs]


def test_without_git_on_the_path_the_blob_ids_and_the_commit_are_not_known(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkreport.cache import git_clean_blobs
    from sparkreport.render.context import git_commit

    project = _committed_store(tmp_path, phase1_store)
    assert git_clean_blobs(project / "runs") and git_commit(project)
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    assert git_clean_blobs(project / "runs") == {} and git_commit(project) is None


def test_a_git_that_hangs_is_stopped_and_answers_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A started git command that outlives its timeout is killed and reaped, and its question
    answered as without git; one the build no longer needs is stopped at once (no process left)."""
    import subprocess
    import time

    from sparkreport.cache import GitRun, start_git_clean_blobs
    from sparkreport.render.context import start_git_commit

    programs = tmp_path / "bin"
    programs.mkdir()
    (programs / "git").write_text("#!/bin/sh\nexec sleep 30\n", encoding="utf-8")
    (programs / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{programs}{os.pathsep}{os.environ['PATH']}")

    hanging = GitRun(tmp_path, "status", timeout=0.2)
    began = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        hanging.output()
    assert time.monotonic() - began < 5 and hanging._process is not None and hanging._process.returncode is not None

    commit, blobs = start_git_commit(tmp_path), start_git_clean_blobs(tmp_path)
    runs = [commit.head, commit.status, blobs.listed, blobs.changed]
    commit.stop()
    blobs.stop()
    assert time.monotonic() - began < 5
    assert all(run._process is not None and run._process.returncode is not None for run in runs)


def test_git_clean_blobs_name_the_tracked_files_git_reports_unchanged(tmp_path: Path) -> None:
    from sparkreport.cache import git_clean_blobs

    (tmp_path / "runs" / "a").mkdir(parents=True)
    for name in ("kept", "edited", "same-size"):
        (tmp_path / "runs" / "a" / name).write_text(f"{name}\n", encoding="utf-8")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "x")
    (tmp_path / "runs" / "a" / "edited").write_text("edited, longer\n", encoding="utf-8")
    (tmp_path / "runs" / "a" / "same-size").write_text("SAME-SIZE\n", encoding="utf-8")
    (tmp_path / "runs" / "a" / "untracked").write_text("new\n", encoding="utf-8")

    assert sorted(git_clean_blobs(tmp_path / "runs")) == ["a/kept"]
    assert sorted(git_clean_blobs(tmp_path / "runs" / "a")) == ["kept"]
    assert git_clean_blobs(tmp_path / "missing") == {}
    shutil.rmtree(tmp_path / ".git")
    assert git_clean_blobs(tmp_path / "runs") == {}  # no work tree (and none above tmp_path)


def test_after_a_fresh_checkout_the_hash_memo_knows_the_files_by_their_git_blobs(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI job's checkout gives every file a new mtime and inode: the memo (and the walk's
    per-campaign keys by content) then learn from git which files are the bytes they hashed
    before, and read only the files git does not vouch for — a run.json edited after the
    checkout, even to the same size, is read."""
    from sparkreport import cache
    from sparkreport.cache import GIT_AFTER, HASHES_FILE, tree_digest, walk_store

    project = _committed_store(tmp_path, phase1_store)
    runs, memo_file = project / "runs", tmp_path / "cache" / HASHES_FILE
    files = [path for path in runs.rglob("*") if path.is_file()]
    assert len(files) >= GIT_AFTER
    memo = HashMemo(memo_file)
    walk = walk_store(runs)
    before, by_content = tree_digest(runs, memo, walk.files), walk.by_content(memo)
    memo.save()

    _checked_out_afresh(project)
    opened = _reads(monkeypatch, cache)
    memo = HashMemo(memo_file)
    walk = walk_store(runs)
    assert tree_digest(runs, memo, walk.files) == before and walk.by_content(memo) == by_content
    assert opened == []
    memo.save()

    _checked_out_afresh(project)
    edited = min(runs.glob("*/*/run.json"))
    text = edited.read_text(encoding="utf-8")
    edited.write_text(text.swapcase(), encoding="utf-8")  # the same size, other bytes
    assert edited.stat().st_size == len(text.encode())
    memo = HashMemo(memo_file)
    walk = walk_store(runs)
    assert tree_digest(runs, memo, walk.files) != before
    assert opened == [str(edited)]
    changed = [campaign for campaign, digest in walk.by_content(memo).items() if by_content[campaign] != digest]
    assert changed == [edited.parent.parent.name]


def test_the_hash_memo_keeps_blob_ids_through_its_journal(tmp_path: Path, phase1_store: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkreport import cache
    from sparkreport.cache import HASHES_FILE, tree_digest

    project = _committed_store(tmp_path, phase1_store)
    runs, memo_file = project / "runs", tmp_path / "cache" / HASHES_FILE
    HashMemo(memo_file).save()  # an empty whole memo: what is learnt next goes to the journal
    (memo_file.parent).mkdir(parents=True, exist_ok=True)
    cache.write_cache_pickle(memo_file, "", "files", {"elsewhere": [1, 2, 3, "0" * 64]})
    memo = HashMemo(memo_file)
    before = tree_digest(runs, memo)  # no stat known: git asked, every file read once
    memo.save()
    assert memo_file.with_name(memo_file.name + ".log").is_file()
    _checked_out_afresh(project)
    opened = _reads(monkeypatch, cache)
    assert tree_digest(runs, HashMemo(memo_file)) == before and opened == []


def test_after_a_fresh_checkout_the_name_index_reads_only_what_git_does_not_vouch_for(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkreport import early
    from sparkreport.early import store_index

    monkeypatch.setattr(early, "GIT_AFTER", 8)  # the store has 63 runs: fewer than git is asked for
    project = _committed_store(tmp_path, phase1_store)
    runs, index_cache = project / "runs", tmp_path / "cache"
    first = store_index(runs, index_cache)
    assert first.read == len(list(runs.glob("*/*/run.json")))
    _checked_out_afresh(project)
    again = store_index(runs, index_cache)
    assert again.read == 0 and again.entries == first.entries
    _checked_out_afresh(project)
    edited = min(runs.glob("*/*/run.json"))
    data = json.loads(edited.read_text(encoding="utf-8"))
    data["labels"]["note"] = "after the checkout"
    edited.write_text(json.dumps(data), encoding="utf-8")
    third = store_index(runs, index_cache)
    assert third.read == 1 and "after the checkout" in {e.values.get("label.note") for e in third.entries}


def test_after_a_fresh_checkout_the_index_refresh_takes_the_blob_ids_the_walk_learnt(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI job's build refreshes the name index behind MkDocs: the walk's hash memo has just
    learnt each run.json's git blob id, so the refresh takes them from it instead of asking git
    for the store's a second time — and reads no run.json, as with git's answer; a run.json
    edited after the checkout (its blob unknown to the memo) is read."""
    from sparkreport import early
    from sparkreport.cache import HASHES_FILE, tree_digest, walk_store
    from sparkreport.early import INDEX_FILE, refresh_index, store_index
    from sparkreport.store import RunStore

    monkeypatch.setattr(early, "GIT_AFTER", 8)  # the store has 63 runs: fewer than git is asked for
    project = _committed_store(tmp_path, phase1_store)
    runs, cache_dir = project / "runs", tmp_path / "cache"
    first = store_index(runs, cache_dir)
    HashMemo(cache_dir / HASHES_FILE).save()

    def fresh_memo() -> HashMemo:  # what a build's walk leaves: every file's digest, with its blob id
        memo = HashMemo(cache_dir / HASHES_FILE)
        tree_digest(runs, memo, walk_store(runs).files)
        return memo

    _checked_out_afresh(project)
    edited = min(runs.glob("*/*/run.json"))
    data = json.loads(edited.read_text(encoding="utf-8"))
    data["labels"]["note"] = "after the checkout"
    edited.write_text(json.dumps(data), encoding="utf-8")
    memo = fresh_memo()
    asked: list[object] = []
    monkeypatch.setattr(early, "git_clean_blobs", lambda folder: asked.append(folder) or {})
    read: list[str] = []
    reading = early._read_all
    monkeypatch.setattr(early, "_read_all", lambda files: read.extend(files) or reading(files))
    refresh_index(runs, cache_dir, RunStore(runs).scan(), memo)
    assert asked == [] and read == [f"{edited.parent.parent.name}/{edited.parent.name}"]
    index = early.kept_index(runs, cache_dir)
    assert index is not None and len(index.entries) == len(first.entries)
    assert "after the checkout" in {e.values.get("label.note") for e in index.entries}
    assert (cache_dir / INDEX_FILE).is_file()


def test_after_a_fresh_checkout_a_cached_load_of_the_dataset_reads_no_run_file(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `sparkreport check` (or stats, diff, history) does in a CI job before any build: the
    dataset through the restored build cache, every run.json with a new mtime and inode."""
    from sparkreport import cache

    monkeypatch.setattr(cache, "GIT_AFTER", 8)  # 63 runs: fewer than git is asked for
    project = _committed_store(tmp_path, phase1_store)
    first = load_dataset(project / "runs", cache_dir=tmp_path / "cache")
    _checked_out_afresh(project)
    opened = _reads(monkeypatch, cache)
    again = load_dataset(project / "runs", cache_dir=tmp_path / "cache")
    assert opened == [] and again.digest == first.digest


@pytest.mark.parametrize("given_value", [None, "1"])
def test_arrow_is_imported_without_transparent_huge_pages_and_the_environment_left_as_it_was(
        given_value: str | None) -> None:
    """pyarrow's allocator (mimalloc 3) marks its arena for transparent huge pages, whose first
    touches cost a build ~0.2 s of kernel time at random (issue 16, thirty-ninth round):
    :func:`import_tuned` loads it with the option off for the import only — nothing this process
    starts later inherits the variable — and keeps a value the environment gives."""
    env = {"MIMALLOC_VERBOSE": "1"} | ({"MIMALLOC_ALLOW_THP": given_value} if given_value is not None else {})
    done = tuned_import("pyarrow", "MIMALLOC_ALLOW_THP", env)
    assert done.stdout.strip() == f"after: {given_value}"
    options = [line for line in done.stderr.splitlines() if line.startswith("option 'allow_thp'")]
    if options:  # a pyarrow whose mimalloc has the option (pyarrow 26: mimalloc 3.4)
        assert options == [f"option 'allow_thp': {given_value or 0} "]


def test_numpy_is_imported_with_blas_on_one_thread_and_the_environment_left_as_it_was() -> None:
    """OpenBLAS starts a pool of threads per CPU that spin while the imports go on (~0.2 s of a
    build's CPU for numpy's and scipy's): :func:`import_tuned` loads numpy with one thread of
    BLAS, for the import only."""
    done = tuned_import("numpy", "OPENBLAS_NUM_THREADS", {},
                        "import numpy; print('threads:', len(os.listdir('/proc/self/task')))")
    assert done.stdout.split("\n")[:2] == ["after: None", "threads: 1"]


def test_scipys_special_functions_load_without_its_package_set_up_and_are_its_own() -> None:
    """Importing ``scipy.special`` sets up SciPy's array-API layer, which loads numpy's lazy
    submodules (0.16–0.23 s of a build's critical path; issue 16, forty-first round): the
    statistics take SciPy's compiled functions without it, on one thread of BLAS — and they are
    the very objects ``scipy.special`` exports once something imports it (``scipy.stats``)."""
    names = ["stdtr", "stdtrit", "ndtr", "binom"]
    done = tuned_import("sparkreport.scipy_ufuncs", "OPENBLAS_NUM_THREADS", {}, "; ".join([
        "import sys", "from sparkreport.scipy_ufuncs import ufuncs",
        "print('threads:', len(os.listdir('/proc/self/task')))",
        "print('loaded:', ufuncs.__name__, 'scipy.special' in sys.modules, 'numpy.f2py' in sys.modules)",
        "import scipy.special, scipy.stats",
        f"print('same:', all(getattr(ufuncs, n) is getattr(scipy.special, n) for n in {names!r}))",
        "print('t:', ufuncs.stdtrit(4.0, 0.975) == scipy.stats.t.ppf(0.975, 4.0))"]))
    assert done.stdout.split("\n")[:5] == [
        "after: None", "threads: 1", "loaded: scipy.special._ufuncs False False", "same: True", "t: True"]


def test_the_statistics_call_only_the_special_functions_the_light_load_checks() -> None:
    """A function the statistics start to call must be named in ``scipy_ufuncs.NAMES``: the
    light load falls back to ``scipy.special`` unless the compiled module has every name there,
    and tests that import ``scipy.stats`` first would never see one it lacks."""
    import re

    from sparkreport import scipy_ufuncs
    from sparkreport.analysis import statistics

    called = set(re.findall(r"\bspecial\.(\w+)", Path(statistics.__file__).read_text(encoding="utf-8")))
    assert called and called <= set(scipy_ufuncs.NAMES)


@pytest.mark.parametrize("before", ["import scipy.special",
                                    "import threading; threading.Thread(target=threading.Event().wait, daemon=True).start()"])
def test_scipys_special_functions_come_from_its_package_when_it_is_imported_or_threads_run(before: str) -> None:
    """With ``scipy.special`` imported already, or another thread running (which could import it
    while the package's stand-in is in ``sys.modules``), the functions come from its public
    import."""
    import sys

    script = f"{before}; from sparkreport.scipy_ufuncs import ufuncs; print(ufuncs.__name__)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "scipy.special"


def tuned_import(module: str, variable: str, env: dict[str, str], then: str = "") -> subprocess.CompletedProcess[str]:
    """A fresh interpreter that imports ``module`` through :func:`import_tuned` and prints the
    environment's ``variable`` afterwards (then runs ``then``)."""
    import os
    import sys

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MIMALLOC_", "OPENBLAS_", "OMP_"))}
    script = (f"import os; from sparkreport.cache import import_tuned; import_tuned({module!r}); "
              f"print('after:', os.environ.get({variable!r})); {then}")
    return subprocess.run([sys.executable, "-c", script], env=clean | env, capture_output=True, text=True, check=True)


def _store_tree(root: Path) -> None:
    """A run store's shape: campaigns of run folders with a run.json and a log each, a file beside
    the campaigns, a hidden file, a ``__pycache__`` and a linked file in a folder of its own."""
    for campaign in ("c1", "c2", "c3"):
        for run in range(4):
            folder = root / campaign / f"r{run}"
            folder.mkdir(parents=True)
            (folder / "run.json").write_text(f'{{"run": "{campaign}/{run}"}}', encoding="utf-8")
            (folder / "bench.log").write_text("x" * (run + 1), encoding="utf-8")
    (root / "README.md").write_text("the store\n", encoding="utf-8")
    (root / "c1" / ".hidden").write_text("left out\n", encoding="utf-8")
    (root / "c4" / "r0").mkdir(parents=True)
    (root / "c4" / "r0" / "run.json").symlink_to(root / "c1" / "r0" / "run.json")


def _walked(walk: Any) -> tuple[Any, ...]:
    files = [(relative, path, (stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_mode))
             for relative, path, stat in walk.files]
    return files, walk.folders, sorted(walk.dirs), sorted(walk.left_out)


# Each step changes the tree as an operator or a tool might; the walk from the last walk's record
# must see exactly what a walk that lists every folder sees.
def _append(root: Path) -> None:
    with (root / "c2" / "r1" / "bench.log").open("a", encoding="utf-8") as handle:  # in place: no folder changes
        handle.write("more\n")


def _add_run(root: Path) -> None:
    (root / "c3" / "r9").mkdir()
    (root / "c3" / "r9" / "run.json").write_text("{}", encoding="utf-8")


def _remove_run(root: Path) -> None:
    shutil.rmtree(root / "c1" / "r2")


def _rename_file(root: Path) -> None:
    (root / "c2" / "r0" / "bench.log").rename(root / "c2" / "r0" / "bench.txt")


def _file_to_folder(root: Path) -> None:
    (root / "c3" / "r0" / "bench.log").unlink()
    (root / "c3" / "r0" / "bench.log").mkdir()
    (root / "c3" / "r0" / "bench.log" / "inner.log").write_text("inner\n", encoding="utf-8")


def _add_link(root: Path) -> None:
    (root / "c2" / "r2" / "other.log").symlink_to(root / "c2" / "r3" / "bench.log")


def _retarget_link_content(root: Path) -> None:
    (root / "c2" / "r3" / "bench.log").write_text("the link's target, changed\n", encoding="utf-8")


def _pycache(root: Path) -> None:
    (root / "c1" / "r1" / "__pycache__").mkdir()


def _new_campaign(root: Path) -> None:
    (root / "c5" / "r0").mkdir(parents=True)
    (root / "c5" / "r0" / "run.json").write_text("{}", encoding="utf-8")


def _replace_atomically(root: Path) -> None:
    target = root / "c1" / "r3" / "run.json"
    (root / "c1" / "r3" / ".run.json.tmp").write_text('{"new": 1}', encoding="utf-8")
    (root / "c1" / "r3" / ".run.json.tmp").replace(target)


STEPS = [_append, _add_run, _remove_run, _rename_file, _file_to_folder, _add_link, _retarget_link_content,
         _pycache, _new_campaign, _replace_atomically]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(STEPS))
def test_a_walk_from_the_last_walks_record_sees_what_a_full_listing_sees(
        tmp_path_factory: pytest.TempPathFactory, order: list[Any]) -> None:
    """Every folder whose inode, mtime and ctime are those the record holds keeps the entries the
    record holds (an entry added, removed or renamed changes its folder's times); files are stat-ed
    all the same (a file written in place changes no folder). RACY_NS is 0 here: each step waits
    out the file system's clock tick instead, so that its change shows in its folder's times."""
    from sparkreport import cache
    from sparkreport.cache import WalkRecord, walk_store

    root = tmp_path_factory.mktemp("walk") / "runs"
    _store_tree(root)
    saved = cache.RACY_NS
    cache.RACY_NS = 0
    listed: list[str] = []
    real_scandir = os.scandir

    def counted(path: Any) -> Any:
        listed.append(os.path.relpath(path, root))
        return real_scandir(path)

    try:
        record = walk_store(root, WalkRecord()).record
        assert record is not None and "c4/r0/" not in record.folders  # (a folder holding a link is not kept)
        for step in order:
            time.sleep(0.03)
            step(root)
            time.sleep(0.03)
            listed.clear()
            os.scandir = counted
            try:
                walk = walk_store(root, record)
            finally:
                os.scandir = real_scandir
            assert _walked(walk) == _walked(walk_store(root)), step.__name__
            # only the folders that changed, those holding a link, and the new ones are listed
            assert len(listed) <= 6, (step.__name__, listed)
            record = walk.record
            assert record is not None
    finally:
        cache.RACY_NS = saved


def test_a_folder_changed_within_racy_ns_of_the_walk_is_listed_again(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder whose times are within RACY_NS of the walk cannot vouch for a change right after
    it (the clock ticks in steps): it is not kept, so the next walk lists it again — and an entry
    added right after the first walk is seen."""
    from sparkreport.cache import WalkRecord, walk_store

    root = tmp_path / "runs"
    _store_tree(root)
    record = walk_store(root, WalkRecord()).record
    assert record is not None and record.folders == {}  # all made just now
    (root / "c1" / "r0" / "late.log").write_text("added right after\n", encoding="utf-8")
    listed: list[str] = []
    scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: listed.append(path) or scandir(path))
    again = walk_store(root, record)
    monkeypatch.undo()
    assert len(listed) == 18  # the root, four campaigns, thirteen run folders: every one
    assert "c1/r0/late.log" in {relative for relative, _path, _stat in again.files}


def test_the_content_digests_are_looked_up_only_for_the_folders_that_changed(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A campaign folder whose files' stats are those the record holds has the content digest
    recorded with them; the others are looked up in the memo — and the digests, the folders'
    and the whole store's, equal those of a walk without a record."""
    from sparkreport import cache
    from sparkreport.cache import WalkRecord, walk_store

    monkeypatch.setattr(cache, "RACY_NS", 0)
    root = tmp_path / "runs"
    _store_tree(root)
    memo = HashMemo(tmp_path / "hashes.pickle")
    first = walk_store(root, WalkRecord())
    key = first.content_key(memo)
    assert first.by_content(memo) == walk_store(root).by_content(memo)
    record = first.record
    assert record is not None and set(record.contents) == {"c1", "c2", "c3"}  # (c4 holds a link)
    looked_up: list[str] = []
    digests = HashMemo.digests

    def counted(self: HashMemo, folder: Path, files: Any) -> list[str]:
        looked_up.extend(os.path.relpath(path, root) for path, _stat in files)
        return digests(self, folder, files)

    monkeypatch.setattr(HashMemo, "digests", counted)
    again = walk_store(root, record)
    assert again.content_key(memo) == key and again.by_content(memo) == first.by_content(memo)
    assert sorted(looked_up) == ["README.md", "c4/r0/run.json"]  # the file beside them, the linked folder
    log = root / "c2" / "r1" / "bench.log"
    size = log.stat().st_size
    time.sleep(0.03)  # past the file system's clock tick
    log.write_text("y" * size, encoding="utf-8")  # in place, the same size: only its mtime tells
    assert log.stat().st_size == size
    looked_up.clear()
    changed = walk_store(root, again.record)
    assert changed.content_key(memo) != key
    assert {path.split("/")[0] for path in looked_up} == {"README.md", "c2", "c4"}
    assert changed.by_content(memo) == walk_store(root).by_content(memo)


def test_folder_times_are_trusted_only_on_local_file_systems(tmp_path: Path) -> None:
    """The walk keeps no record (and the publisher lists the live run files in full) on a mount
    whose folder times may not follow its entries: a FUSE object store, a network share; the
    mount point is the longest prefix of the path, its octal escapes read."""
    from sparkreport.cache import folder_times_trusted

    table = tmp_path / "mountinfo"
    table.write_text(
        "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "30 22 0:40 / /mnt/bucket rw,nosuid shared:9 - fuse.goofys bucket rw,user_id=0\n"
        "31 22 0:41 / /srv/my\\040share rw shared:10 - nfs4 server:/export rw\n"
        "32 30 253:2 / /mnt/bucket/local rw shared:11 - xfs /dev/vdb rw\n", encoding="utf-8")
    assert folder_times_trusted(Path("/home/me/runs"), str(table))
    assert not folder_times_trusted(Path("/mnt/bucket/runs"), str(table))
    assert not folder_times_trusted(Path("/srv/my share/runs"), str(table))
    assert folder_times_trusted(Path("/mnt/bucket/local/runs"), str(table))
    assert not folder_times_trusted(Path("/home/me/runs"), str(tmp_path / "no such table"))


def test_a_walk_record_is_neither_read_nor_made_where_folder_times_are_not_trusted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkreport import cache
    from sparkreport.cache import WalkRecord, walk_store

    root = tmp_path / "runs"
    _store_tree(root)
    assert WalkRecord.read(tmp_path / "walk.pickle", root, "code") is not None  # (tmp_path: a local disk)
    monkeypatch.setattr(cache, "LOCAL_FILE_SYSTEMS", frozenset())
    kept = WalkRecord.read(tmp_path / "walk.pickle", root, "code")
    assert kept is None and walk_store(root, kept).record is None


def test_a_walk_record_of_other_code_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a record holds (each entry's kind, each campaign's digests) is what this code made of
    the folders: a record written by other code is not read."""
    from sparkreport import cache
    from sparkreport.cache import WalkRecord, walk_store

    monkeypatch.setattr(cache, "RACY_NS", 0)
    root = tmp_path / "runs"
    _store_tree(root)
    path = tmp_path / "walk.pickle"
    kept = WalkRecord.read(path, root, "code-1")
    assert kept is not None
    record = walk_store(root, kept).record
    assert record is not None and record.folders
    WalkRecord.write(path, record.payload())
    again = WalkRecord.read(path, root, "code-1")
    assert again is not None and again.folders == record.folders
    other = WalkRecord.read(path, root, "code-2")
    assert other is not None and other.folders == {} and other.contents == {}


def test_the_package_digest_is_computed_once_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A build asks for the package's digest from eight places: one walk of the package's files
    a process, whatever memo a later call gives (the analysis cache's, a memo of no file, read
    and hashed every file: ~0.02 s of each build)."""
    from sparkreport import cache

    walks: list[Path] = []
    tree_digest = cache.tree_digest

    def counted(root: Path, memo: cache.HashMemo, files: Any = None) -> str:
        walks.append(root)
        return tree_digest(root, memo, files)

    monkeypatch.setattr(cache, "_PACKAGE_DIGESTS", {})
    monkeypatch.setattr(cache, "tree_digest", counted)
    first = cache.package_digest(cache.HashMemo(None))
    assert [cache.package_digest(cache.HashMemo(None)) for _ in range(3)] == [first] * 3
    assert len(walks) == 1 and walks[0] == Path(cache.__file__).resolve().parent
    assert first == tree_digest(walks[0], cache.HashMemo(None))  # what it was before: the same digest


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _make_shape(root: Path, shape: list[tuple[list[str], bool]]) -> None:
    """Files (True) and folders (False) at the given paths under ``root``, each skipped where an
    earlier one makes it impossible (a file where a folder must be, or the other way round)."""
    root.mkdir()
    for parts, is_file in shape:
        path = root.joinpath(*parts)
        if path.exists() or any(parent.is_file() for parent in path.parents):
            continue
        if is_file:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("/".join(parts), encoding="utf-8")
        else:
            path.mkdir(parents=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.tuples(st.lists(st.sampled_from("abc"), min_size=1, max_size=4), st.booleans()),
                      min_size=1, max_size=25),
       stop=st.integers(min_value=0, max_value=30))
def test_walk_files_stats_from_open_folders_what_a_plain_walk_stats(
        tmp_path_factory: pytest.TempPathFactory, shape: list[tuple[list[str], bool]], stop: int) -> None:
    """walk_files stats what lies under a folder of folders from that folder, held open (fewer
    names for the kernel to resolve): the files, their stats and the folders are those of a walk
    by full paths, at any depth and mix of files and folders — listing every folder, and from
    the record of a walk before; every folder it opened is closed, when the walk ends and when
    it is left half-way."""
    from sparkreport.cache import walk_files

    root = tmp_path_factory.mktemp("deep") / "runs"
    _make_shape(root, shape)
    expected, folders_expected = [], []
    for folder, dirs, names in os.walk(root):
        relative = Path(folder).relative_to(root).as_posix()
        prefix = "" if relative == "." else f"{relative}/"
        folders_expected += [f"{prefix}{name}" for name in dirs]
        for name in names:
            stat = os.stat(os.path.join(folder, name))
            expected.append((f"{prefix}{name}", os.path.join(folder, name), (stat.st_ino, stat.st_size,
                                                                             stat.st_mtime_ns)))
    before = _open_descriptors()
    kept = None
    for listing in ({}, {}, None):  # listed, then from the first walk's record, then without one
        folders: list[str] = []
        walked = [(relative, path, (stat.st_ino, stat.st_size, stat.st_mtime_ns))
                  for relative, path, stat in walk_files(root, folders=folders, kept=kept, listing=listing)]
        assert sorted(walked) == sorted(expected)
        assert sorted(folders) == sorted(folders_expected)
        assert _open_descriptors() == before
        kept = listing
    walk = walk_files(root)
    for _found in itertools.islice(walk, stop):
        pass
    walk.close()  # left half-way
    assert _open_descriptors() == before


def test_a_cache_file_read_ahead_is_taken_once_while_it_is_unchanged(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``read_ahead`` unpickles a cache file for the read that follows (a build's process while it
    waits for the store's walk): that read takes it without unpickling again, once; a file
    replaced or rewritten since, or forgotten, is read from disk; a missing or damaged one is not
    kept, and its read says {} as ever."""
    import pickle

    from sparkreport import cache

    loads: list[str] = []
    real = pickle.load

    def counted(handle: Any) -> Any:
        loads.append(handle.name)
        return real(handle)

    monkeypatch.setattr(cache.pickle, "load", counted)
    path = tmp_path / "kept.pickle"
    cache.write_cache_pickle(path, "salt", "entries", {"a": 1})

    cache.read_ahead(path)
    assert len(loads) == 1
    assert cache.read_cache_pickle(path, "salt", "entries") == {"a": 1} and len(loads) == 1  # taken
    assert cache.read_cache_pickle(path, "salt", "entries") == {"a": 1} and len(loads) == 2  # once

    cache.read_ahead(path)
    cache.write_cache_pickle(path, "salt", "entries", {"a": 2})  # replaced (a new file)
    assert cache.read_cache_pickle(path, "salt", "entries") == {"a": 2}

    cache.read_ahead(path)
    data = path.read_bytes()
    time.sleep(0.01)
    path.write_bytes(data)  # rewritten in place: the same bytes, another mtime
    loads.clear()
    assert cache.read_cache_pickle(path, "salt", "entries") == {"a": 2} and len(loads) == 1
    assert cache.read_cache_pickle(path, "other salt", "entries") == {}

    cache.read_ahead(path)
    cache.forget_read_ahead()
    loads.clear()
    assert cache.read_cache_pickle(path, "salt", "entries") == {"a": 2} and len(loads) == 1

    damaged = tmp_path / "damaged.pickle"
    damaged.write_bytes(b"not a pickle")
    for name in (damaged, tmp_path / "missing.pickle"):
        cache.read_ahead(name)
        assert cache.read_cache_pickle(name, "salt", "entries") == {}
    assert not cache._READ_AHEAD


def test_a_build_that_waits_for_the_walk_reads_its_cache_files_meanwhile(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the store's walk has not answered (a fresh clone's walk outlasts the imports), the
    build's process unpickles the cache files it reads once the data changed; the reads that
    follow take them, the site is the one a build without the wait makes, and nothing read
    ahead outlives the build."""
    from sparkreport import cache
    from sparkreport import site as site_module

    monkeypatch.setenv("SPARKREPORT_JOBS", "2")
    project = _project(tmp_path, phase1_store)
    put_campaign(project / "runs", "again", sorted((project / "runs").glob("*/*/run.json")), [0, 1, 2, 3])
    build(_options(project))
    kept = [path.name for path in site_module.read_ahead_files(project / "build" / "cache") if path.is_file()]
    assert {"hashes.pickle", "tables.pickle", "analysis.pickle", "analysis-whole.pickle"} <= set(kept)
    run_json = sorted((project / "runs").glob("*/*/run.json"))[0]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] = 4343.4343
    run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")

    walk = site_module._Walker.walk
    ahead: list[str] = []
    taken: list[str] = []
    read, take = cache.read_ahead, cache._taken_ahead

    def slow_walk(self: Any) -> Any:  # (in the walk's forked process)
        time.sleep(1.5)
        return walk(self)

    def recorded_read(path: Path) -> None:
        ahead.append(path.name)
        read(path)

    def recorded_take(path: Path) -> Any:
        found = take(path)
        if found is not None:
            taken.append(path.name)
        return found

    monkeypatch.setattr(site_module._Walker, "walk", slow_walk)
    monkeypatch.setattr(cache, "read_ahead", recorded_read)
    monkeypatch.setattr(cache, "_taken_ahead", recorded_take)
    result = build(_options(project))
    assert not result.cached
    assert ahead == [path.name for path in site_module.read_ahead_files(project / "build" / "cache")]
    assert sorted(taken) == sorted(kept)  # each file there was read ahead, and taken
    assert not cache._READ_AHEAD
    published = project / "site" / "runs" / "files" / run_json.parent.relative_to(project / "runs") / "run.json"
    assert json.loads(published.read_text(encoding="utf-8"))["metrics"]["output_throughput_tok_s"] == 4343.4343
    assert "4343.4343" in (project / "build" / "docs" / "downloads" / "dataset.csv").read_text(encoding="utf-8")
