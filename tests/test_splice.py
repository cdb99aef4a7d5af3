"""The statistics and comparisons of a build spliced into the last build's tables
(:mod:`sparkreport.analysis.splice`): what a splice gives is the table made whole — compared
exactly, after each of a series of changes to a store — and a change it cannot splice (a model
shown under another name, a new campaign, most campaigns changed) makes the table whole."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pandas as pd
import pytest
from store_helpers import put_campaign

from sparkreport.analysis import splice
from sparkreport.cache import AnalysisCache
from sparkreport.config import ProjectConfig, load_config
from sparkreport.dataset import load_dataset
from sparkreport.render.context import SiteData, build_site_data

REPO = Path(__file__).resolve().parents[1]
SOURCE = "gpu-torch-native-vs-cgroup"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """The shipped store and four copies of its measured campaign (six campaigns of runs, one of
    published arms): one changed campaign is well under half of them."""
    runs = tmp_path / "runs"
    shutil.copytree(REPO / "runs", runs)
    sources = sorted(runs.glob(f"{SOURCE}/*/run.json"))
    for copy in range(4):
        put_campaign(runs, f"copy-{copy}", sources, list(range(copy, len(sources), 3)))
    return runs


def _site(runs: Path, config: ProjectConfig, cache: Path | None) -> SiteData:
    ds = load_dataset(runs, cache_dir=cache) if cache is not None else load_dataset(runs)
    return build_site_data(ds, config, runs, "test", runs.parent, cache_dir=cache)


def _how(site: SiteData) -> dict[str, str]:
    assert site.analysis_cache is not None
    return {kind: site.analysis_cache.how.get(kind, "") for kind in ("arm_stats", "compare")}


def _assert_as_made_whole(site: SiteData, runs: Path, config: ProjectConfig) -> None:
    plain = _site(runs, config, None)
    pd.testing.assert_frame_equal(site.stats, plain.stats, check_exact=True)
    pd.testing.assert_frame_equal(site.comparisons, plain.comparisons, check_exact=True)


def _edit(path: Path, change: object) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)  # type: ignore[operator]
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def test_a_changed_run_is_spliced_into_the_last_tables(store: Path, tmp_path: Path) -> None:
    config = load_config(REPO / "sparkreport.yml")
    cache = tmp_path / "cache"
    assert _how(_site(store, config, cache)) == {"arm_stats": "whole", "compare": "whole"}
    assert _how(_site(store, config, cache)) == {"arm_stats": "spliced", "compare": "spliced"}  # nothing changed

    run = sorted(store.glob("copy-2/*/run.json"))[1]
    _edit(run, lambda data: data["metrics"].update(output_throughput_tok_s=data["metrics"]["output_throughput_tok_s"] * 1.2))
    site = _site(store, config, cache)

    assert _how(site) == {"arm_stats": "spliced", "compare": "spliced"}
    assert site.analysis_cache is not None and site.analysis_cache.computed["arm_stats"] == 1
    _assert_as_made_whole(site, store, config)


def test_a_series_of_changes_gives_the_tables_made_whole_each_time(store: Path, tmp_path: Path) -> None:
    """Runs changed, failed, excluded as repeats, removed and added, one campaign at a time, and
    a published arm's mean: after each, the tables equal those made whole, and most were spliced."""
    config = load_config(REPO / "sparkreport.yml")
    cache = tmp_path / "cache"
    _site(store, config, cache)
    rng = random.Random(16)
    hows = []
    for step in range(10):
        campaign = rng.choice(["copy-0", "copy-1", "copy-2", "copy-3", SOURCE])
        runs = sorted(store.glob(f"{campaign}/*/run.json"))
        run = rng.choice(runs)
        kind = step % 5
        if kind == 0:
            _edit(run, lambda data: data["metrics"].update(
                output_throughput_tok_s=data["metrics"]["output_throughput_tok_s"] * rng.uniform(0.9, 1.1)))
        elif kind == 1:
            _edit(run, lambda data: data["status"].update(ok=False, exit_code=1))
        elif kind == 2:
            shutil.rmtree(run.parent)
        elif kind == 3:  # a repeat of another run's iteration (analysis.duplicates decides which counts)
            copy = run.parent.with_name(run.parent.name + f"-again{step}")
            copy.mkdir()
            data = json.loads(run.read_text(encoding="utf-8"))
            data["run_id"] = copy.name
            data["metrics"]["output_throughput_tok_s"] *= 1.05
            (copy / "run.json").write_text(json.dumps(data), encoding="utf-8")
        else:
            published = sorted(store.glob("phase1-published/*/run.json"))[0]
            _edit(published, lambda data: data["summary"]["output_throughput_tok_s"].update(
                mean=data["summary"]["output_throughput_tok_s"]["mean"] + 1.0))
        site = _site(store, config, cache)
        hows.append(_how(site))
        _assert_as_made_whole(site, store, config)
    assert sum(how == {"arm_stats": "spliced", "compare": "spliced"} for how in hows) >= 8, hows


def test_a_model_shown_under_another_name_makes_the_statistics_whole(store: Path, tmp_path: Path) -> None:
    """The statistics name a model as its campaign's runs do: renamed in one campaign, the sort
    may rank it by another name, so the table is made whole. (The comparisons name a model
    as the whole store does, which a campaign's key holds: they splice while that is unchanged.)"""
    config = load_config(REPO / "sparkreport.yml")
    cache = tmp_path / "cache"
    _site(store, config, cache)
    for run in sorted(store.glob("copy-1/*/run.json")):
        _edit(run, lambda data: data["model"].update(display_name="Another name"))
    site = _site(store, config, cache)
    assert _how(site)["arm_stats"] == "whole"
    _assert_as_made_whole(site, store, config)


def test_a_new_campaign_and_most_campaigns_changed_make_the_tables_whole(store: Path, tmp_path: Path) -> None:
    config = load_config(REPO / "sparkreport.yml")
    cache = tmp_path / "cache"
    _site(store, config, cache)
    put_campaign(store, "copy-new", sorted(store.glob(f"{SOURCE}/*/run.json")), [0, 1, 2, 3, 40, 41, 42, 43])
    site = _site(store, config, cache)
    assert _how(site) == {"arm_stats": "whole", "compare": "whole"}
    _assert_as_made_whole(site, store, config)

    for campaign in ("copy-0", "copy-1", "copy-2", "copy-3", "copy-new"):
        _edit(sorted(store.glob(f"{campaign}/*/run.json"))[0],
              lambda data: data["metrics"].update(output_throughput_tok_s=1.0))
    site = _site(store, config, cache)
    assert _how(site) == {"arm_stats": "whole", "compare": "whole"}
    _assert_as_made_whole(site, store, config)


def test_a_whole_table_whose_campaign_is_not_one_block_is_not_kept() -> None:
    frame = pd.DataFrame({"campaign": ["a", "b", "a"], "model": ["m", "m", "m"], "model_name": ["M", "M", "M"]})
    assert splice.kept(frame, {"a": "1", "b": "2"}, {"m": "M"}) is None
    ordered = frame.iloc[[0, 2, 1]].reset_index(drop=True)
    whole = splice.kept(ordered, {"a": "1", "b": "2"}, {"m": "M"})
    assert whole is not None and whole.spans == {"a": (0, 2), "b": (2, 3)}


def test_the_statistics_by_the_factors_levels_are_kept_beside_those_by_environment(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A factor other than the environment: a build makes the statistics twice (per environment,
    and per the factor's level, before planning), and keeps and splices each table."""
    config = load_config(REPO / "sparkreport.yml")
    config.factor, config.baseline = "label.cache", "cold"
    cache = tmp_path / "cache"

    def rendered() -> SiteData:  # as a render makes and saves them
        site = build_site_data(load_dataset(store, cache_dir=cache), config, store, "test", store.parent,
                               cache_dir=cache, save=False)
        assert site.analysis_cache is not None and not site.level_stats.empty
        site.analysis_cache.save()
        return site

    rendered()
    run = sorted(store.glob("copy-0/*/run.json"))[2]
    _edit(run, lambda data: data["metrics"].update(output_throughput_tok_s=data["metrics"]["output_throughput_tok_s"] * 0.9))
    calls: list[tuple[str, str]] = []
    put = AnalysisCache.put_whole

    def recorded(self: AnalysisCache, kind: str, context: str, value: object, how: str) -> None:
        calls.append((kind, how))
        put(self, kind, context, value, how)

    monkeypatch.setattr(AnalysisCache, "put_whole", recorded)
    site = rendered()
    assert calls == [("arm_stats", "spliced"), ("compare", "spliced"), ("arm_stats", "spliced")]
    plain = _site(store, config, None)
    pd.testing.assert_frame_equal(site.level_stats, plain.level_stats, check_exact=True)
    _assert_as_made_whole(site, store, config)


def test_the_row_hashes_are_kept_with_the_whole_tables(store: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The pages' keys read the statistics, comparisons and runs by their rows' hashes
    (``row_hashes``): kept with the whole tables (the runs', in the analysis cache by campaign), a
    new run's build hashes its campaign's rows only, one that changed nothing none, and the hashes
    are those of the tables hashed whole, after each of a series of changes (and a factor other
    than the environment: its statistics' too)."""
    import numpy as np

    from sparkreport.render import report

    config = load_config(REPO / "sparkreport.yml")
    config.factor, config.baseline = "label.cache", "cold"
    cache = tmp_path / "cache"
    tables = ("stats", "comparisons", "level_stats", "runs")
    hashed: list[tuple[str, list[str]]] = []
    real = report.frame_row_hashes

    def counted(site: SiteData, table: str, frame: pd.DataFrame, heads: list[str]) -> object:
        hashed.append((table, sorted(set(frame["campaign"].astype(str)))))
        return real(site, table, frame, heads)

    def rendered() -> SiteData:  # as a render makes them, hashes them (planning) and saves them
        site = build_site_data(load_dataset(store, cache_dir=cache), config, store, "test", store.parent,
                               cache_dir=cache, save=False)
        assert site.analysis_cache is not None and not site.level_stats.empty
        for table in tables:
            report.row_hashes(site, table)
        site.analysis_cache.save()
        return site

    def assert_as_hashed_whole(site: SiteData) -> None:
        for table in tables:
            frame = getattr(site, table)
            np.testing.assert_array_equal(report.row_hashes(site, table),
                                          real(site, table, frame, report.column_heads(frame)))

    monkeypatch.setattr(report, "frame_row_hashes", counted)
    first = rendered()
    assert set(first.wholes) == {"stats", "comparisons", "level_stats"}
    # a first build: nothing kept, each table hashed at once (not campaign by campaign)
    assert hashed == [(table, sorted(set(getattr(first, table)["campaign"].astype(str)))) for table in tables]
    assert_as_hashed_whole(first)
    hashed.clear()
    rendered()
    assert hashed == []  # nothing changed: every campaign's hashes kept

    run = sorted(store.glob("copy-2/*/run.json"))[1]
    _edit(run, lambda data: data["metrics"].update(output_throughput_tok_s=data["metrics"]["output_throughput_tok_s"] * 1.2))
    site = rendered()
    assert hashed == [(table, ["copy-2"]) for table in tables]
    assert_as_hashed_whole(site)

    rng = random.Random(7)
    for step in range(4):
        runs = sorted(store.glob(f"{rng.choice(['copy-0', 'copy-1', 'copy-3', SOURCE])}/*/run.json"))
        if step % 2:
            _edit(rng.choice(runs), lambda data: data["status"].update(ok=False, exit_code=1))
        else:
            _edit(rng.choice(runs), lambda data, value=1.0 + step: data["metrics"].update(output_throughput_tok_s=value))
        assert_as_hashed_whole(rendered())
    folder = sorted(store.glob("copy-1/*/run.json"))[0].parent
    folder.rename(folder.with_name(folder.name + "-moved"))  # the same run.json in another folder
    hashed.clear()
    assert_as_hashed_whole(rendered())
    assert ("runs", ["copy-1"]) in hashed

    site = build_site_data(load_dataset(store, cache_dir=cache), config, store, "test", store.parent,
                           cache_dir=cache, save=False)
    site.stats = site.stats.iloc[::-1].reset_index(drop=True)  # not the table the analysis handed out
    np.testing.assert_array_equal(report.row_hashes(site, "stats"),
                                  real(site, "stats", site.stats, report.column_heads(site.stats)))
