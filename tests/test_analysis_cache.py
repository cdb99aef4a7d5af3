"""The analysis cache: arm statistics per arm, comparisons, checks and facts per campaign, each
kept by the digests of the runs it read. Cached results equal uncached ones, and one changed run
recomputes one arm and one campaign (counted, not timed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from store_helpers import calls_recorded, put_campaign
from test_design import interleaved, noisy, rec

from sparkreport.config import AnalysisOptions, ProjectConfig, load_config
from sparkreport.dataset import Dataset, build_dataset, load_dataset
from sparkreport.render.context import SiteData, build_site_data
from sparkreport.schema import RunRecord

REPO = Path(__file__).resolve().parents[1]


def _site(ds: Dataset, config: ProjectConfig, root: Path, cache_dir: Path | None) -> SiteData:
    return build_site_data(ds, config, root / "runs", "test", root, cache_dir=cache_dir)


def _assert_same(a: SiteData, b: SiteData) -> None:
    pd.testing.assert_frame_equal(a.stats, b.stats)
    pd.testing.assert_frame_equal(a.comparisons, b.comparisons)
    pd.testing.assert_frame_equal(a.runs, b.runs)
    assert [f.to_dict() for f in a.findings] == [f.to_dict() for f in b.findings]
    assert [f.to_dict() for f in a.facts] == [f.to_dict() for f in b.facts]
    assert a.extra == b.extra


def _planted() -> list[RunRecord]:
    """Three campaigns: blocks and a cold/warm design label in one, a label unique to every run
    in another (a design factor only by the first's runs), repeats, a failed run, a noisy arm,
    a constant metric, another GPU, interference warnings."""
    records: list[RunRecord] = []
    for i, cache in enumerate(["cold", "warm"] * 3):
        block = str(i // 2)
        for env, mean in (("native", 100.0), ("docker", 97.0)):
            records.append(rec(f"a.{env}.{i}", env, noisy(mean, 6, i)[i], minute=10 * i + (env == "docker"),
                               campaign="alpha", iteration=i // 2 + 1, labels={"cache": cache, "block": block},
                               kv_cache_gib=80.0))
    for i in range(4):
        records.append(rec(f"b.native.{i}", "native", 50 + i, minute=100 + i, campaign="beta", iteration=1,
                           labels={"cache": f"plan{i}"}, model="n"))
        records.append(rec(f"b.docker.{i}", "docker", 40 + 5 * i, minute=110 + i, campaign="beta", iteration=i + 1,
                           model="n", gpu="GPU-bbbb" if i == 3 else "GPU-aaaa",
                           warnings=["another process held the GPU"] if i == 2 else None))
    records += interleaved({"native": noisy(200, 5, 7), "docker": noisy(180, 5, 8, cv=0.2)}, campaign="gamma",
                           model="m2")
    failed = rec("g.failed", "docker", 1.0, minute=300, campaign="gamma", model="m2", iteration=6)
    failed.status.ok, failed.status.exit_code = False, 1
    return [*records, failed]


@pytest.mark.parametrize("duplicates", ["all", "first", "last"])
@pytest.mark.parametrize("exclude_interference", [False, True])
def test_cached_analysis_equals_uncached_on_a_planted_store(tmp_path: Path, duplicates: str,
                                                            exclude_interference: bool) -> None:
    config = ProjectConfig()
    config.analysis = AnalysisOptions(duplicates=duplicates, exclude_interference=exclude_interference)  # type: ignore[arg-type]
    ds = build_dataset(_planted())
    assert len(ds.campaigns()) == 3
    plain = _site(ds, config, tmp_path, None)
    assert plain.comparisons is not None and not plain.comparisons.empty and plain.findings and plain.facts
    builds = [_site(build_dataset(_planted()), config, tmp_path, tmp_path / "cache") for _ in range(3)]
    for site in builds:
        _assert_same(site, plain)
    first, second, third = (site.analysis_cache for site in builds)
    assert first is not None and second is not None and third is not None
    # The first build of a cache folder computes the whole store at once and keeps each
    # campaign's share; the next ones reuse them.
    assert first.computed["check"] == first.computed["compare"] == first.computed["facts"] == 3
    assert not second.computed and not third.computed


def test_cached_analysis_equals_uncached_on_the_shipped_store(tmp_path: Path) -> None:
    config = load_config(REPO / "sparkreport.yml")
    runs = tmp_path / "runs"
    shutil.copytree(REPO / "runs", runs)
    cache = tmp_path / "cache"
    plain = _site(load_dataset(runs), config, tmp_path, None)
    for _ in range(2):  # the first build fills the cache from the whole store, the second reads it
        _assert_same(_site(load_dataset(runs, cache_dir=cache), config, tmp_path, cache), plain)
    warm = _site(load_dataset(runs, cache_dir=cache), config, tmp_path, cache)
    _assert_same(warm, plain)
    assert warm.analysis_cache is not None and not warm.analysis_cache.computed


def test_one_changed_run_recomputes_its_campaign(tmp_path: Path) -> None:
    """Statistics (one table per campaign of runs), comparisons, checks and facts: one changed
    run computes its campaign's again and reuses every other campaign's."""
    config = load_config(REPO / "sparkreport.yml")
    runs = tmp_path / "runs"
    shutil.copytree(REPO / "runs", runs)
    put_campaign(runs, "gpu-torch-copy", sorted(runs.glob("gpu-torch-native-vs-cgroup/*/run.json")), list(range(8)))
    cache = tmp_path / "cache"
    _site(load_dataset(runs, cache_dir=cache), config, tmp_path, cache)  # fills the cache folder
    first = _site(load_dataset(runs, cache_dir=cache), config, tmp_path, cache)
    assert first.analysis_cache is not None
    arms = first.analysis_cache.reused["arm_stats"]
    campaigns = len(first.dataset.campaigns())
    assert arms == 2 and campaigns >= 4
    assert not first.analysis_cache.computed
    assert first.analysis_cache.reused["check"] == first.analysis_cache.reused["compare"] == campaigns

    run_json = sorted(runs.glob("gpu-torch-native-vs-cgroup/*/run.json"))[3]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] *= 1.01
    run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")

    again = _site(load_dataset(runs, cache_dir=cache), config, tmp_path, cache)
    assert again.analysis_cache is not None
    assert dict(again.analysis_cache.computed) == {"arm_stats": 1, "compare": 1, "check": 1, "facts": 1}
    assert again.analysis_cache.reused["arm_stats"] == arms - 1
    assert again.analysis_cache.reused["check"] == campaigns - 1
    _assert_same(again, _site(load_dataset(runs), config, tmp_path, None))


def test_a_render_writes_the_analysis_cache_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis and the history (computed while the pages are planned) go into one pickle,
    written once a render (a 5 MB file at 10 000 runs, pickled twice before) — whole, or as one
    frame of what changed appended to its journal."""
    from history_store import write_history_store

    from sparkreport import cache as cache_module
    from sparkreport.render import RenderOptions, render

    write_history_store(tmp_path / "runs", campaign_per_version=True)
    written: list[str] = []
    atomic = cache_module._atomic_bytes

    def counting(path: Path, data: bytes) -> None:
        written.append(path.name)
        atomic(path, data)

    monkeypatch.setattr(cache_module, "_atomic_bytes", counting)
    options = RenderOptions(runs_dir=Path("runs"), project_root=tmp_path)
    render(options)
    assert written.count("analysis.pickle") == 1
    run_json = sorted((tmp_path / "runs" / "v0.21.0").glob("*/run.json"))[0]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] *= 1.01
    run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")
    written.clear()
    render(options)
    journal = tmp_path / "build" / "cache" / "analysis.pickle.journal"
    frames = list(cache_module._frames(journal.read_bytes())) if journal.exists() else []
    assert written.count("analysis.pickle") + len(frames) == 1  # written whole, or one frame appended
    entries = cache_module.AnalysisCache(tmp_path / "build" / "cache" / "analysis.pickle",
                                         salt=cache_module.package_digest(cache_module.HashMemo(None))).entries
    assert {"arm_stats", "compare", "check", "facts", "history-campaign"} <= set(entries)  # all in the one save
    # the history is assembled from its campaigns' series, never kept whole: keyed by every run, it
    # was a whole-store entry that each new run's save wrote again (1.7 MB at 10 000 runs)
    assert "history" not in entries


def test_each_value_stays_pickled_until_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each value is kept as its own pickle inside the cache's: loading the cache leaves it
    unread, a miss (the build after a new run, for the history keyed by the whole store) never
    unpickles it, nor one the journal replaced; a hit gives the value that was put, unpickled
    once; and a value put is pickled when the cache is written, not when it is put."""
    from sparkreport.cache import AnalysisCache, Pickled, PickledLater

    path = tmp_path / "analysis.pickle"
    cache = AnalysisCache(path, salt="s")
    value = ({"series": [("c", "m", 1.5)] * 3, "versions": ["v1", "v2"]},)
    cache.put("history", "k1", value)
    cache.put("compare", "k2", ["kept as it is"])
    cache.put("compare", "k4", ["replaced before it is asked for"])
    cache.save()
    cache.put("compare", "k4", ["the journal's"])
    cache.save()  # (a frame of the journal)
    unpickled: list[bytes] = []
    original = Pickled.value

    def counting(self: Pickled) -> object:
        unpickled.append(self.data)
        return original(self)

    monkeypatch.setattr(Pickled, "value", counting)
    loaded = AnalysisCache(path, salt="s")
    assert all(isinstance(entry, Pickled) for entries in loaded.entries.values() for entry in entries.values())
    assert loaded.get("history", "another dataset") is None and unpickled == []
    assert loaded.get("history", "k1") == value and loaded.get("history", "k1") == value and len(unpickled) == 1
    assert loaded.get("history", "k1") is loaded.get("history", "k1")  # (unpickled once, then kept)
    assert loaded.get("compare", "k4") == ["the journal's"] and len(unpickled) == 2  # the pickle's k4 never
    assert loaded.get_or("history", "k3", lambda: ("new",)) == ("new",)
    # a value put now is pickled when the cache is written (a build writes it while its builder runs)
    assert isinstance(loaded.entries["history"]["k3"], PickledLater)
    assert loaded.get("history", "k3") == ("new",) and len(unpickled) == 2
    assert loaded.get("compare", "k2") == ["kept as it is"]
    loaded.save()
    again = AnalysisCache(path, salt="s")
    assert isinstance(again.entries["history"]["k3"], Pickled) and again.get("history", "k3") == ("new",)
    assert again.get("compare", "k2") == ["kept as it is"] and again.get("compare", "k4") == ["the journal's"]


def test_other_options_compute_the_whole_store_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build (or a command) that finds fewer than half of the campaigns' entries — other
    options, a changed sparkreport.yml — computes the per-campaign kinds over the whole store at
    once, as the first build does, instead of campaign by campaign (up to twice as long); one
    changed run still recomputes its own campaign's view only. Results equal uncached ones."""
    config = load_config(REPO / "sparkreport.yml")
    runs = tmp_path / "runs"
    shutil.copytree(REPO / "runs", runs)
    cache = tmp_path / "cache"
    viewed = calls_recorded(monkeypatch, Dataset, "campaign_view")
    _site(load_dataset(runs, cache_dir=cache), config, tmp_path, cache)
    config.analysis.alpha = 0.01  # every comparison, check and fact keyed anew
    other = _site(load_dataset(runs, cache_dir=cache), config, tmp_path, cache)
    assert other.analysis_cache is not None
    campaigns = len(other.dataset.campaigns())
    assert dict(other.analysis_cache.computed) == {"compare": campaigns, "check": campaigns, "facts": campaigns}
    assert viewed == []  # the whole store at once
    _assert_same(other, _site(load_dataset(runs), config, tmp_path, None))
    run_json = sorted(runs.glob("gpu-torch-native-vs-cgroup/*/run.json"))[3]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] *= 1.01
    run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")
    viewed.clear()
    again = _site(load_dataset(runs, cache_dir=cache), config, tmp_path, cache)
    assert set(viewed) == {"gpu-torch-native-vs-cgroup"}
    _assert_same(again, _site(load_dataset(runs), config, tmp_path, None))


@pytest.mark.parametrize("store", ["planted", "shipped"])
def test_the_first_build_keeps_each_campaigns_share_as_its_view_computes_it(tmp_path: Path, store: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """What the first build of a cache folder keeps per campaign, cut from its whole-store pass,
    is what computing each campaign's view gives (bit for bit, as ``repr`` writes the floats): so
    a later build that recomputes one campaign and reuses the others equals an uncached one."""

    from sparkreport.cache import AnalysisCache, HashMemo, package_digest

    monkeypatch.setattr(AnalysisCache, "WHOLE_WHEN_MISSING", 1.0)  # every campaign from its view

    if store == "planted":
        config, ds = ProjectConfig(), build_dataset(_planted())
    else:
        config, ds = load_config(REPO / "sparkreport.yml"), load_dataset(REPO / "runs")
    cut, viewed = tmp_path / "cut", tmp_path / "viewed"
    _site(ds, config, tmp_path, cut)  # a fresh folder: the whole store, each campaign's share kept
    marked = AnalysisCache(viewed / "analysis.pickle", salt=package_digest(HashMemo(None)))
    viewed.mkdir()
    for kind in ("compare", "check", "facts"):
        marked.primed(kind)
    marked.save()
    ds = build_dataset(_planted()) if store == "planted" else load_dataset(REPO / "runs")
    _site(ds, config, tmp_path, viewed)  # primed but empty: campaign by campaign, from the views

    def entries(folder: Path) -> dict[str, dict[str, object]]:  # (each value unpickled)
        read = AnalysisCache(folder / "analysis.pickle", salt=package_digest(HashMemo(None)))
        return {kind: {key: read.get(kind, key) for key in keys} for kind, keys in read.entries.items()}

    a, b = entries(cut), entries(viewed)
    for kind in ("compare", "check", "facts"):
        assert len(a[kind]) == len(ds.campaigns()) + 1  # one entry per campaign, and the mark
        assert repr(sorted(a[kind].items())) == repr(sorted(b[kind].items())), kind


def test_a_finding_placed_in_no_single_campaign_leaves_the_checks_to_the_views() -> None:
    from sparkreport.analysis.checks import Finding, _by_campaign

    ds = build_dataset(_planted())
    one = Finding("warning", "drift", "alpha/m/native: drifts", ["a.native.0", "a.native.2"])
    named = Finding("info", "metric-not-reported", "beta/n/docker: the source does not report kv_cache_gib",
                    campaign="beta")
    assert _by_campaign(ds, [one, named]) == {"alpha": [one], "beta": [named]}
    both = Finding("warning", "x", "spans two", ["a.native.0", "b.native.0"])
    # no runs and no campaign: a message that starts like one does not place it
    unnamed = Finding("info", "y", "beta/n/docker: no campaign set")
    assert _by_campaign(ds, [one, both]) is None and _by_campaign(ds, [unnamed]) is None


def _effects(site: SiteData) -> list[dict[str, object]]:
    from sparkreport.render.report import effect_rows

    site.effects = None
    return json.loads(json.dumps(effect_rows(site), default=str))  # (NaN and numpy numbers as text, the same both ways)


@pytest.mark.parametrize("margins", [{}, {"output_throughput_tok_s": 0.05}])
def test_effect_rows_from_the_cache_are_the_whole_tables(tmp_path: Path, margins: dict[str, float]) -> None:
    """The site's effect rows (Home, Memory, the Campaigns overview) made campaign by campaign
    from the analysis cache are those made from the whole comparisons table, in its order; one
    changed run makes its campaign's rows again and takes every other campaign's from the cache."""
    from sparkreport.render.report import _effect_rows, prime_effect_rows

    config = load_config(REPO / "sparkreport.yml")
    config.analysis.margins = margins
    runs = tmp_path / "runs"
    shutil.copytree(REPO / "runs", runs)
    put_campaign(runs, "gpu-torch-copy", sorted(runs.glob("gpu-torch-native-vs-cgroup/*/run.json")), list(range(8)))
    cache = tmp_path / "cache"
    for _ in range(2):
        site = _site(load_dataset(runs, cache_dir=cache), config, tmp_path, cache)
        prime_effect_rows(site)
        assert site.analysis_cache is not None
        site.analysis_cache.save()
        whole = json.loads(json.dumps(_effect_rows(site, site.comparisons), default=str))
        assert _effects(site) == whole and len(whole) > 10
        assert len({row["campaign"] for row in whole}) >= 3
    assert not site.analysis_cache.computed.get("effect-rows")

    run_json = sorted(runs.glob("gpu-torch-native-vs-cgroup/*/run.json"))[3]
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] *= 1.01
    run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")
    again = _site(load_dataset(runs, cache_dir=cache), config, tmp_path, cache)
    prime_effect_rows(again)
    assert again.analysis_cache is not None and again.analysis_cache.computed["effect-rows"] == 1
    assert _effects(again) == json.loads(json.dumps(_effect_rows(again, again.comparisons), default=str))
    plain = _site(load_dataset(runs), config, tmp_path, None)  # no cache: the whole table's rows
    assert _effects(plain) == _effects(again)


def test_a_findings_digest_is_made_once_and_kept_with_it() -> None:
    """A finding's digest (what a page's key counts it by) is the sha256 of its exported form
    with the keys sorted, made once, and pickled with the finding once made: the analysis cache
    keeps it with each campaign's findings, which a later build does not serialise again."""
    import hashlib
    import json
    import pickle

    from sparkreport.analysis.checks import Finding

    finding = Finding("warning", "drift", "alpha/m/native: drifts", ["a.native.0"], {"slope": 0.5}, ["x"])
    expected = hashlib.sha256(json.dumps(finding.to_dict(), sort_keys=True).encode()).hexdigest()
    assert pickle.loads(pickle.dumps(finding)).__dict__.get("digest") is None  # not made: not kept
    assert finding.digest == expected
    kept = pickle.loads(pickle.dumps(finding))
    assert kept.__dict__["digest"] == expected and kept == finding and kept.to_dict() == finding.to_dict()
