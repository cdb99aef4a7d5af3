"""Charts: Vega-Lite specs from small frames, the 5000-row limit kept, SVG fallbacks."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

import altair_reference
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkreport import charts
from sparkreport.dataset import Dataset
from sparkreport.jsontext import spec_json


def values_of(spec: dict) -> list[dict]:
    """Every inline data row of a (possibly layered) spec."""
    found = list(spec.get("data", {}).get("values", []))
    for layer in spec.get("layer", []):
        found += values_of(layer)
    return found


def test_per_run_chart_embeds_every_run(phase1_dataset: Dataset) -> None:
    runs = phase1_dataset.runs[phase1_dataset.runs["model"] == "gpt120b"]
    chart = charts.per_run_chart(runs, "kv_cache_gib", name="kv-runs", title="KV cache")
    assert chart is not None
    assert chart.rows == 23
    rows = chart.spec["data"]["values"] if "data" in chart.spec else values_of(chart.spec)
    assert sorted(r["value"] for r in rows) == sorted(runs["kv_cache_gib"].astype(float))
    assert {r["environment"] for r in rows} == {"native", "container"}
    assert chart.spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v6")
    json.dumps(chart.spec)  # plain JSON, no NaN or numpy scalars


def test_per_run_chart_is_deterministic(phase1_dataset: Dataset) -> None:
    runs = phase1_dataset.runs[phase1_dataset.runs["model"] == "qwen72b"]
    first = charts.per_run_chart(runs, "pre_kv_memory_gib", name="a", title="t")
    second = charts.per_run_chart(runs, "pre_kv_memory_gib", name="a", title="t")
    assert first is not None and second is not None
    assert json.dumps(first.spec, sort_keys=True) == json.dumps(second.spec, sort_keys=True)


def test_excluded_runs_are_marked() -> None:
    runs = pd.DataFrame({"environment": ["a", "a", "b"], "run_id": ["r1", "r2", "r3"],
                         "iteration": [1, 1, 1], "x_ms": [1.0, 2.0, 3.0],
                         "included": [True, False, True]})
    runs = runs.rename(columns={"x_ms": "total_latency_ms"})
    chart = charts.per_run_chart(runs, "total_latency_ms", name="l", title="t")
    assert chart is not None
    statuses = {r["run_id"]: r["status"] for r in chart.spec["data"]["values"]}
    assert statuses == {"r1": "included", "r2": "excluded", "r3": "included"}


def test_large_arms_are_aggregated_not_unlimited() -> None:
    n = charts.MAX_ROWS + 1000
    runs = pd.DataFrame({"environment": ["native", "container"] * (n // 2), "run_id": [f"r{i}" for i in range(n)],
                         "iteration": range(n), "kv_cache_gib": [float(i % 97) for i in range(n)]})
    chart = charts.per_run_chart(runs, "kv_cache_gib", name="big", title="big")
    assert chart is not None
    assert chart.rows == 2  # one row of quantiles per arm
    rows = values_of(chart.spec)
    assert {r["environment"] for r in rows} == {"native", "container"}
    assert all(r["min"] <= r["q1"] <= r["median"] <= r["q3"] <= r["max"] for r in rows)


def test_means_chart_uses_the_given_intervals() -> None:
    stats = pd.DataFrame({
        "environment": ["native", "container"], "metric": ["kv_cache_gib"] * 2, "n": [10, 10],
        "mean": [44.3, 16.6], "ci_low": [43.7, 15.5], "ci_high": [45.0, 17.6], "source": ["runs", "published"],
    })
    chart = charts.means_chart(stats, "kv_cache_gib", name="m", title="t")
    assert chart is not None
    rows = {r["arm"]: r for r in values_of(chart.spec)}
    assert rows["native"]["ci_low"] == 43.7 and rows["native"]["ci_high"] == 45.0
    assert rows["container (published)"]["origin"] == charts.PUBLISHED


def test_means_chart_without_any_interval_draws_means_only() -> None:
    stats = pd.DataFrame({"environment": ["native"], "metric": ["peak_memory_gib"], "n": [1], "mean": [78.3],
                          "ci_low": [math.nan], "ci_high": [math.nan], "source": ["published"]})
    chart = charts.means_chart(stats, "peak_memory_gib", name="m", title="t")
    assert chart is not None
    assert len(chart.spec["layer"]) == 1
    assert charts.means_chart(stats, "kv_cache_gib", name="m", title="t") is None


def test_means_chart_of_rows_is_the_frames_chart() -> None:
    """A model page hands its arms as rows (frame_rows, with columns the chart does not read):
    the chart is the one of the frame, another metric's rows and a missing mean left out, a
    published arm marked, an arm label taken where the rows have one; a metric without rows has
    no chart."""
    from sparkreport.dataset import frame_rows

    stats = pd.DataFrame({
        "environment": ["native", "docker", "paper", "docker"], "metric": ["kv_cache_gib"] * 3 + ["tpot_ms_mean"],
        "n": [10, 9, 1, 9], "mean": [44.3, 16.6, math.nan, 3.0], "sd": [0.5, 0.25, math.nan, 0.1],
        "ci_low": [43.7, 15.5, math.nan, 2.9], "ci_high": [45.0, 17.6, math.nan, 3.1],
        "source": ["runs", "published", "published", "runs"]})
    for frame in (stats, stats.assign(arm=["a · native", "a · docker", "a · paper", "a · docker"])):
        for band in (None, (40.0, 48.0)):
            kwargs = {"name": "m", "title": "t", "confidence": 0.9, "band": band}
            by_frame = charts.means_chart(frame, "kv_cache_gib", **kwargs)
            by_rows = charts.means_chart_of_rows(frame_rows(frame), "kv_cache_gib", **kwargs)
            assert by_frame is not None and by_rows is not None
            assert json.dumps(by_rows.spec) == json.dumps(by_frame.spec)
            points = (by_rows.spec.get("data") or by_rows.spec["layer"][-1]["data"])["values"]
            assert [r["arm"] for r in points] == [arm + suffix for arm, suffix in zip(
                frame["arm"] if "arm" in frame else frame["environment"], ["", " (published)"], strict=False)]
            # the point's row as the chart's data holds it: a count as a number, the interval's ends
            assert points[0] == {"arm": points[0]["arm"], "environment": "native", "origin": charts.MEASURED,
                                 "n": 10.0, "mean": 44.3, "ci_low": 43.7, "ci_high": 45.0}
            assert points[1]["origin"] == charts.PUBLISHED
    assert charts.means_chart_of_rows(frame_rows(stats), "ttft_ms_mean", name="m", title="t") is None


def test_memory_scatter_and_svg_fallback(phase1_dataset: Dataset) -> None:
    points = phase1_dataset.runs.assign(origin=charts.MEASURED)
    chart = charts.memory_scatter(points, name="mem", title="KV cache against memory before it")
    assert chart is not None and chart.rows == 63
    svg = charts.to_svg(chart.spec)
    assert svg.startswith("<svg") and "KV cache (GiB)" in svg and "Memory before KV cache (GiB)" in svg


def test_no_svg_to_draw_loads_no_vl_convert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A render with no SVG fallback to draw (every build at 10 000 runs) does not load
    vl-convert, a large native library; one with a fallback to draw loads it."""
    from sparkreport.render.core import write_svgs

    monkeypatch.setitem(sys.modules, "vl_convert", None)  # importing it now raises
    write_svgs([], tmp_path)
    with pytest.raises(ImportError):
        write_svgs([(tmp_path / "a.svg", {"mark": "point"})], tmp_path)


def test_metric_without_values_gives_no_chart(phase1_dataset: Dataset) -> None:
    assert charts.per_run_chart(phase1_dataset.runs, "ttft_ms_p99", name="x", title="x") is None
    empty = phase1_dataset.runs.assign(kv_cache_gib=None)
    assert charts.memory_scatter(empty, name="x", title="x") is None


_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text()
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=30)
_rows = st.lists(st.dictionaries(st.text(max_size=5), _scalars, min_size=1, max_size=4), min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_json, _rows, st.fixed_dictionaries({"data": st.fixed_dictionaries({"values": _rows})})))
def test_spec_json_is_json_dumps_indent_1(value: object) -> None:
    """The fast encoder of the .vl.json files writes exactly what json.dumps(indent=1) writes."""
    from sparkreport.jsontext import spec_json

    assert spec_json(value) == json.dumps(value, indent=1, sort_keys=True)
    # Unsorted (the dataset.json download keeps its columns' order).
    assert spec_json(value, sort_keys=False) == json.dumps(value, indent=1)


# The specs are written directly (no Altair in a build); each must be what Altair built.


def assert_altairs(direct: dict, reference: dict) -> None:
    """``direct`` is Altair's ``reference``: equal, written to ``.vl.json`` byte for byte (keys
    sorted, as the site writes them), and with Altair's key order (what vl-convert is given)."""
    assert direct == reference
    assert spec_json(direct) == spec_json(reference)  # json.dumps(indent=1, sort_keys=True)
    assert json.dumps(direct) == json.dumps(reference)


def test_schema_url_is_altairs() -> None:
    import altair as alt

    assert charts.SCHEMA_URL == alt.SCHEMA_URL
    assert charts.SCHEMA_URL.startswith(f"https://vega.github.io/schema/vega-lite/v{charts.VEGALITE_VERSION}.")


@pytest.mark.parametrize("band", [None, (98.0, 102.0)])
@pytest.mark.parametrize("intervals", ["all", "some", "none"])
def test_means_spec_is_what_altair_builds(band: tuple[float, float] | None, intervals: str) -> None:
    stats = pd.DataFrame({
        "environment": ["native", "docker", "paper"], "metric": "output_throughput_tok_s", "n": [10, 9, 5],
        "mean": [100.0, 101.5, 99.0], "ci_low": [95.0, 96.25, 97.0], "ci_high": [105.0, 106.0, 101.0],
        "source": ["runs", "runs", "published"]})
    if intervals != "all":
        stats.loc[2 if intervals == "some" else slice(None), ["ci_low", "ci_high"]] = float("nan")
    colours = charts.environment_colours(["native", "docker", "paper"], baseline="native")
    chart = charts.means_chart(stats, "output_throughput_tok_s", name="m", title="Means", confidence=0.9, band=band,
                               colours=colours)
    assert chart is not None
    data = (chart.spec.get("data") or chart.spec["layer"][-1]["data"])["values"]
    with_ci = [row for row in data if row["ci_low"] is not None]
    assert len(chart.spec["layer"]) == 1 + (band is not None) + bool(with_ci)
    axis = chart.spec["layer"][-1]["encoding"]["x"]["title"]
    expected = dict(zip(["native", "docker", "paper"], altair_reference.ENVIRONMENTS, strict=False))
    # the axis starts at 0 unless its title says it does not
    # the tooltips' decimals are the table's: the smallest half-width (2.0) is in units; none: the catalog's two
    number = ",.2f" if intervals == "none" else ",.0f"
    assert_altairs(chart.spec, altair_reference.means_spec(data, with_ci, axis=axis, level="90%", band=band,
                                                           title="Means", colours=expected,
                                                           zero=not axis.endswith("does not start at 0"),
                                                           number_format=number))


def _tooltip_formats(spec: dict) -> dict[str, str]:
    """Field → format of every tooltip in ``spec``'s layers."""
    layers = spec.get("layer") or [panel["layer"][-1] for panel in spec.get("vconcat", [])]
    return {t["field"]: t["format"] for layer in layers for t in layer.get("encoding", {}).get("tooltip", [])
            if "format" in t}


def test_tooltips_print_figures_as_the_tables_do() -> None:
    """The precision rule in the tooltips: a mean and its interval with the decimals of the
    smallest SD or half-width beside them (9.413, 9.411 to 9.414 beside an SD of 0.0034), a run's
    value with its table's decimals, and no value that is not zero as 0.00."""
    from sparkreport.render.precision import deltas
    from sparkreport.render.report import forest_chart

    stats = pd.DataFrame({"environment": ["native", "docker"], "metric": "tpot_ms_mean", "n": [10, 10],
                          "mean": [9.4128, 9.4301], "sd": [0.0034, 0.0051], "ci_low": [9.4112, 9.4265],
                          "ci_high": [9.4144, 9.4337], "source": ["runs", "runs"]})
    means = charts.means_chart(stats, "tpot_ms_mean", name="m", title="t")
    assert means is not None
    assert _tooltip_formats(means.spec) == {"mean": ",.3f", "ci_low": ",.3f", "ci_high": ",.3f"}
    runs = pd.DataFrame({"environment": ["native", "native", "docker"], "run_id": ["a", "b", "c"],
                         "iteration": [1, 2, 1], "failed_requests": [0.0, 0.004, 2.0]})
    assert _tooltip_formats(charts.per_run_chart(runs, "failed_requests", name="r", title="t",
                                                 places=0).spec) == {"value": ",.3f"}
    runs["failed_requests"] = [0.0, 1.0, 2.0]
    assert _tooltip_formats(charts.per_run_chart(runs, "failed_requests", name="r", title="t",
                                                 places=0).spec) == {"value": ",.0f"}

    def effects_tooltips(effects: list[dict[str, object]]) -> list[tuple[str, str, str]]:
        """Each effect's Δ % and ends as the forest chart's tooltip shows them (its data's text)."""
        chart = forest_chart(effects, name="e", title="t", confidence=0.95)
        assert chart is not None and _tooltip_formats(chart.spec) == {}  # text, not a d3 format
        shown = {t["field"]: t.get("title") for t in chart.spec["layer"][-1]["encoding"]["tooltip"]}
        assert list(shown)[3:6] == ["delta_text", "low_text", "high_text"] and shown["delta_text"] == "Δ %"
        return [(d["delta_text"], d["low_text"], d["high_text"]) for d in chart.spec["layer"][-1]["data"]["values"]]

    # the effects table's text, effect by effect: +0.004% (interval +0.001 to +0.007) reads so,
    # not +0.00; a zero is 0.00, not d3's +0.00; one just below zero -0.004, not d3's −0.00
    small = {**_effect("llama-3-8b", "Output throughput", 0.004, 0.003), "delta_low": 0.001, "delta_high": 0.007}
    zero = {**_effect("gemma-2b", "Output throughput", 0.0, 0.5), "delta_low": -0.004, "delta_high": 0.5}
    effects = [small, zero, _effect("qwen-72b", "Output throughput", 3.5, 1.0, "higher")]
    assert effects_tooltips(effects) == [("+0.004", "+0.001", "+0.007"), ("0.00", "-0.004", "+0.500"),
                                         ("+3.50", "+2.50", "+4.50")]
    assert effects_tooltips(effects) == [tuple(deltas(e["delta_pct"], e["delta_low"], e["delta_high"]))
                                         for e in effects]
    chart = forest_chart(effects, name="e", title="t", confidence=0.95)
    assert chart is not None and chart.spec["layer"][-1]["data"]["values"][0]["delta"] == 0.004  # drawn as shown


def test_per_run_spec_is_what_altair_builds() -> None:
    runs = pd.DataFrame({"environment": ["native", "native", "docker", "docker"], "run_id": ["a", "b", "c", "d"],
                         "iteration": [1, 2, 1, 2], "output_throughput_tok_s": [100.0, 101.0, 98.0, 97.5],
                         "included": [True, False, True, True]})
    chart = charts.per_run_chart(runs, "output_throughput_tok_s", name="r", title="Runs", order=["native"])
    assert chart is not None
    data, axis = chart.spec["data"]["values"], chart.spec["layer"][0]["encoding"]["x"]["title"]
    # no site colours given: the chart's own environments take the palette in the order of their names
    colours = dict(zip(["docker", "native"], altair_reference.ENVIRONMENTS, strict=False))
    zero = not axis.endswith("does not start at 0")  # the axis starts at 0 unless its title says it does not
    # the arms top to bottom in the page's order (native), any other after them by name
    assert_altairs(chart.spec, altair_reference.per_run_spec(data, axis=axis, title="Runs", colours=colours,
                                                             arms=["native", "docker"], zero=zero))
    assert [row["status"] for row in data] == ["included", "excluded", "included", "included"]
    assert "legend" not in chart.spec["layer"][1]["encoding"]["shape"]  # included and excluded: listed
    every = charts.per_run_chart(runs.assign(included=True), "output_throughput_tok_s", name="r", title="Runs")
    assert every is not None
    assert every.spec["layer"][1]["encoding"]["shape"]["legend"] is None  # no "excluded" listed where none was
    assert_altairs(every.spec, altair_reference.per_run_spec(every.spec["data"]["values"], axis=axis, title="Runs",
                                                             colours=colours, arms=["docker", "native"], zero=zero))


_CELLS = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=32),
                  st.integers(min_value=0, max_value=10**6))


def _frame_rows(runs: pd.DataFrame, metric: str) -> list[dict[str, object]]:
    """The per-run chart's rows as pandas steps state the rule (what the chart drew them with
    before it read them as lists): the runs that report the metric, ``included`` as a boolean,
    the arm as text, each arm's runs spread in order (jitter), every cell cleaned as a chart's."""
    frame = runs[runs[metric].notna()].copy()
    frame["included"] = frame["included"].astype(bool) if "included" in frame else True
    frame["arm"] = frame["arm"].astype(str) if "arm" in frame else frame["environment"].astype(str)
    frame["status"] = frame["included"].map({True: "included", False: "excluded"})
    frame["jitter"] = frame.groupby("arm", sort=False).cumcount() % 7 / 6
    return charts._records(frame[["arm", "environment", "run_id", "iteration", "status", "jitter", metric]].rename(
        columns={metric: "value"}))


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["native", "docker", "cgroup"]), _CELLS,
                               st.one_of(st.none(), st.integers(1, 20)), st.booleans()), max_size=25),
       arm=st.sampled_from(["none", "text", "category"]), included=st.sampled_from(["none", "bool", "int"]),
       dtypes=st.sampled_from(["numpy", "nullable", "category"]))
def test_per_run_chart_draws_the_rows_the_rule_states(rows: list[tuple[str, object, int | None, bool]],
                                                      arm: str, included: str, dtypes: str) -> None:
    """The per-run chart reads its rows a column at a time (``_per_run_rows``), after making an
    arm that is not text text and an ``included`` that is not a boolean a boolean: its points are
    the rows :func:`_frame_rows` states, whatever the runs' values — missing, infinite, whole
    numbers, excluded runs — and the columns' dtypes (numpy, pandas' nullable, categorical)."""
    frame = pd.DataFrame({"environment": [r[0] for r in rows], "run_id": [f"run-{i}" for i in range(len(rows))],
                          "iteration": [r[2] for r in rows], "value_metric": [r[1] for r in rows]})
    frame["value_metric"] = pd.to_numeric(frame["value_metric"], errors="coerce")
    if dtypes == "nullable":
        frame["iteration"] = frame["iteration"].astype("Int64")
        frame["value_metric"] = frame["value_metric"].astype("Float64")
        frame["environment"] = frame["environment"].astype("string")
    elif dtypes == "category":
        frame["environment"] = frame["environment"].astype("category")
    if arm != "none":
        frame["arm"] = "c1 · " + frame["environment"].astype(str)
        if arm == "category":
            frame["arm"] = frame["arm"].astype("category")
    if included != "none":
        frame["included"] = [r[3] if included == "bool" else int(r[3]) for r in rows]
    chart = charts.per_run_chart(frame, "value_metric", name="r", title="Runs", order=["docker"])
    expected = _frame_rows(frame, "value_metric")
    if chart is None:
        assert not expected
        return
    assert chart.spec["data"]["values"] == expected and chart.rows == len(expected)
    values = [float(value) for value in frame["value_metric"] if pd.notna(value)]  # (infinite ones too)
    assert chart.description.startswith(charts.metric_title("value_metric"))
    assert chart.description.endswith("of every run, one row per environment; boxes span the quartiles of the "
                                      "included runs.")
    assert ("does not start at 0" in chart.description) == bool(
        charts.above_zero_note(min(values), max(values)))


@pytest.mark.parametrize("arms", [1, 3])
@pytest.mark.parametrize("low", [0.0, 500.0])
def test_quantile_spec_is_what_altair_builds(arms: int, low: float) -> None:
    """Arms past the row limit: quartiles per arm (the axis starts at 0 or says it does not)."""
    n = charts.MAX_ROWS + 10
    environments = ["native", "docker", "podman"][:arms]
    runs = pd.DataFrame({"environment": [environments[i % arms] for i in range(n)], "run_id": [f"r{i}" for i in range(n)],
                         "iteration": range(n), "kv_cache_gib": [low + i % 97 for i in range(n)],
                         "included": [i % 50 != 0 for i in range(n)]})
    site = charts.environment_colours(["native", "docker", "podman", "chroot"], baseline="native")
    chart = charts.per_run_chart(runs, "kv_cache_gib", name="q", title="KV cache: every run", colours=site,
                                 order=list(site))
    assert chart is not None and chart.rows == arms
    data, axis = chart.spec["data"]["values"], chart.spec["layer"][0]["encoding"]["x"]["title"]
    assert axis.endswith("does not start at 0") == (low > 0)
    # the site's colours of the environments drawn (chroot, second of the site's, is not)
    expected = {name: altair_reference.ENVIRONMENTS[i] for name, i in (("native", 0), ("docker", 2), ("podman", 3))
                if name in environments}
    assert_altairs(chart.spec, altair_reference.quantile_spec(data, axis=axis, title="KV cache: every run",
                                                              colours=expected, arms=list(expected), zero=low == 0))


@pytest.mark.parametrize("x_metric", ["pre_kv_memory_gib", "peak_memory_gib"])
def test_scatter_spec_is_what_altair_builds(phase1_dataset: Dataset, x_metric: str) -> None:
    points = phase1_dataset.runs.assign(origin=charts.MEASURED)
    if x_metric == "peak_memory_gib":  # Phase 1 recorded the memory before the KV cache only
        points = points.assign(peak_memory_gib=points["pre_kv_memory_gib"] + points["kv_cache_gib"])
    chart = charts.memory_scatter(points, name="mem", title="KV cache against memory", x_metric=x_metric)
    assert chart is not None and chart.rows == 63
    colours = dict(zip(["container", "native"], altair_reference.ENVIRONMENTS, strict=False))
    assert_altairs(chart.spec, altair_reference.scatter_spec(chart.spec["data"]["values"], x_metric=x_metric,
                                                             title="KV cache against memory", colours=colours))


def test_scatter_of_several_campaigns_has_a_panel_each_and_each_fit_its_line() -> None:
    """A panel per campaign, headed by its title; a derived-identity fit (one pool) is a dashed line
    across its campaign's points, KV = fraction × (pool − before) + c at both ends; a fit on peak
    memory (not a line against memory before the KV cache) or without one pool draws none."""
    points = pd.DataFrame({"campaign": ["a", "a", "a", "b"], "model_name": ["m", "n", "m", "m"],
                           "environment": ["native", "native", "docker", "native"],
                           "pre_kv_memory_gib": [70.0, 72.0, 90.0, 80.0], "kv_cache_gib": [44.0, 42.0, 26.0, 35.0]})
    fits = [{"campaign": "a", "fraction": 0.9, "intercept_gib": 0.1, "pool_gib": 119.0},
            {"campaign": "b", "fraction": 0.9, "intercept_gib": 0.0, "pool_gib": None}]
    chart = charts.memory_scatter(points, name="mem", title="t", fits=fits, titles={"a": "Study A"})
    assert chart is not None and chart.rows == 6
    panels = chart.spec["vconcat"]
    assert [panel["title"]["text"] for panel in panels] == ["Study A", "b"]
    values = [row for panel in panels for row in panel["data"]["values"]]
    lines = [row for row in values if row["kind"] == "fit"]
    assert lines == [
        {"campaign": "Study A", "kind": "fit", "fit": "KV cache = 0.900 × (119.00 GiB − memory before it) +0.10 GiB",
         "pre_kv_memory_gib": x, "kv_cache_gib": kv} for x, kv in ((70.0, 44.2), (90.0, 26.2))]
    # a panel without a fitted line has no line layer (an empty one makes Vega warn of an infinite extent)
    assert [len(panel["layer"]) for panel in panels] == [2, 1]
    assert chart.description.endswith("the dashed line is the fitted KV cache = fraction × (pool − memory before it) + c"
                                      "; a panel per campaign.")
    # one scale for both panels, listing every environment (panel b has no docker)
    colours = dict(zip(["docker", "native"], altair_reference.ENVIRONMENTS, strict=False))
    assert_altairs(chart.spec, altair_reference.scatter_spec(values, x_metric="pre_kv_memory_gib", title="t",
                                                             colours=colours, panels=True))
    assert charts.drawn_size(chart.spec)[1] > 2 * (charts.PANEL_HEIGHT + 80)  # its placeholder: both panels
    peak = points.assign(peak_memory_gib=points["pre_kv_memory_gib"] + points["kv_cache_gib"])
    against_peak = charts.memory_scatter(peak[peak["campaign"] == "a"], name="mem", title="t", fits=fits,
                                         x_metric="peak_memory_gib")
    assert against_peak is not None and all(row["kind"] == "arm" for row in against_peak.spec["data"]["values"])
    assert "layer" in against_peak.spec and "facet" not in against_peak.spec


def test_scatter_spec_of_arm_means_and_of_one_point() -> None:
    n = charts.MAX_ROWS + 1
    many = pd.DataFrame({"model_name": ["a", "b"] * (n // 2) + ["a"], "environment": "native",
                         "pre_kv_memory_gib": [float(i % 13) for i in range(n)], "kv_cache_gib": 40.0})
    one = pd.DataFrame({"model_name": ["a"], "environment": ["native"], "pre_kv_memory_gib": [math.nan],
                        "kv_cache_gib": [40.0]})
    one = pd.concat([one, one.assign(pre_kv_memory_gib=30.0, origin=charts.PUBLISHED)], ignore_index=True)
    for points, rows in ((many, 2), (one, 1)):  # arm means past the row limit; no origin column, NaN dropped
        chart = charts.memory_scatter(points, name="mem", title="t")
        assert chart is not None and chart.rows == rows
        assert_altairs(chart.spec, altair_reference.scatter_spec(chart.spec["data"]["values"],
                                                                 x_metric="pre_kv_memory_gib", title="t",
                                                                 colours={"native": altair_reference.ENVIRONMENTS[0]}))


def _effect(model: str, label: str, delta: float | None, ci: float | None, verdict: str = "equivalent",
            margin: float = 2.0) -> dict[str, object]:
    return {"model_name": model, "label": label, "candidate": "docker", "baseline": "native", "campaign": "c1",
            "delta_pct": delta, "delta_low": None if ci is None or delta is None else delta - ci,
            "delta_high": None if ci is None or delta is None else delta + ci, "verdict": verdict,
            "margin_pct": margin}


FORESTS = {
    "mixed": [_effect("llama-3-8b", "Output throughput", -0.41234, 0.8),
              _effect("qwen-72b", "Output throughput", 3.5, 1.0, "higher", margin=5.0),
              {**_effect("gpt-oss-120b", "KV cache", -6.2, None, "lower"), "untested_reason": "one run per arm"},
              _effect("gpt-oss-120b", "Peak memory", None, None, "untested")],
    "no interval": [_effect("llama-3-8b", "Output throughput", 1.0, None, "inconclusive")],
    "one, long label": [_effect("DeepSeek-R1-Distill-Qwen-7B shape (random weights, 4-bit)" * 3,
                                "Time to first token (mean)", 0.25, 0.5, margin=2.5)],
}


@pytest.mark.parametrize("case", list(FORESTS))
@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_forest_spec_is_what_altair_builds(case: str, confidence: float) -> None:
    from sparkreport.render.report import forest_chart

    chart = forest_chart(FORESTS[case], name="effects", title="Every effect", confidence=confidence)
    if case == "no interval":  # an effect without an interval is in the tables only: no chart of none
        assert chart is None
        return
    assert chart is not None
    data = chart.spec["layer"][-1]["data"]["values"]
    assert all(row["low"] is not None for row in data) and len(chart.spec["layer"]) == 4
    if case == "mixed":  # the two effects without an interval are left out, and the description says so
        assert [row["row"] for row in data] == ["llama-3-8b · Output throughput", "qwen-72b · Output throughput"]
        assert chart.description.endswith("; 1 effect without an interval (one run per arm) is in the tables only.")
        colour = chart.spec["layer"][-1]["encoding"]["color"]
        assert colour["scale"]["domain"] == ["the same within the margin", "higher", "lower", "no difference detected"]
        assert colour["legend"]["values"] == ["the same within the margin", "higher"]  # what is drawn
    margin = max(row["margin"] for row in data)
    assert_altairs(chart.spec, altair_reference.forest_spec(data, level=f"{confidence:.0%}", margin=margin,
                                                            title="Every effect"))


@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_forest_panels_are_altairs_forest_per_campaign(confidence: float) -> None:
    """Where several campaigns share a model and metric (Home's chart over the newest campaigns),
    one panel per campaign, in natural order (synth-1.4.9 before synth-1.4.10), one under the
    other: each is the single chart Altair builds (above) for that campaign's rows, named
    without the campaign, titled by it, the x axis titled on the last panel only."""
    from sparkreport.render.report import forest_chart

    effects = [{**_effect("llama-3-8b", "Output throughput", 2.5, 0.5, "higher"), "campaign": "synth-1.4.10"},
               {**_effect("llama-3-8b", "Output throughput", -0.4, 0.8), "campaign": "synth-1.4.9"},
               {**_effect("qwen-72b", "KV cache", -6.2, None, "lower"), "campaign": "synth-1.4.10"}]
    chart = forest_chart(effects, name="effects", title="Every effect", confidence=confidence)
    assert chart is not None and "one panel per campaign" in chart.description
    spec = chart.spec
    assert [k for k in spec if k not in ("vconcat",)] == ["config", "bounds", "resolve", "spacing", "title", "$schema"]
    assert spec["resolve"] == {"scale": {"x": "shared"}} and spec["title"] == "Every effect"
    level = f"{confidence:.0%}"
    rows_of = {"synth-1.4.9": ["llama-3-8b · Output throughput"],
               "synth-1.4.10": ["llama-3-8b · Output throughput"]}  # qwen-72b's KV cache: no interval
    assert [p["title"]["text"] for p in spec["vconcat"]] == ["synth-1.4.9", "synth-1.4.10"]
    for i, panel in enumerate(spec["vconcat"]):
        campaign = panel["title"]["text"]
        data = panel["layer"][-1]["data"]["values"]
        assert [d["row"] for d in data] == rows_of[campaign] and {d["campaign"] for d in data} == {campaign}
        # one colour scale over the panels: each lists every verdict of the chart
        reference = altair_reference.forest_spec(data, level=level, margin=2.0, title=campaign,
                                                 verdicts={"higher", "the same within the margin"})
        del reference["$schema"], reference["config"]
        reference["title"] = {"anchor": "start", "fontSize": 12, "frame": "group", "text": campaign}
        if i == 0:
            assert panel["layer"][-1]["encoding"]["x"]["title"] is None
            reference["layer"][-1]["encoding"]["x"]["title"] = None
        assert panel == reference


def test_no_forest_without_an_effect() -> None:
    from sparkreport.render.report import forest_chart

    assert forest_chart([_effect("m", "KV cache", None, None)], name="e", title="t", confidence=0.95) is None


@pytest.mark.parametrize(("steps", "single_run"), [({"0.22.0": -0.042}, "0.19.0"), (None, None)])
def test_history_spec_is_what_altair_builds(tmp_path: Path, steps: dict[str, float] | None,
                                            single_run: str | None) -> None:
    """With and without change points; a version of one run has no interval (None)."""
    from history_store import write_history_store

    from sparkreport.analysis import AnalysisOptions
    from sparkreport.analysis.history import history
    from sparkreport.dataset import load_dataset
    from sparkreport.render.history import _metric_chart

    runs = write_history_store(tmp_path / "runs", steps=steps, single_run=single_run, kv_cache=True)
    result = history(load_dataset(runs), AnalysisOptions(bootstrap_resamples=200))
    specs = 0
    for metric in dict.fromkeys(s.metric for s in result.series):
        chart = _metric_chart(result, metric)
        if chart is None:
            continue
        specs += 1
        layers = chart.spec["layer"]
        changes = layers[2]["data"]["values"] if len(layers) == 3 else []
        assert {c["direction"] for c in changes} <= {"regression", "improvement"}  # what colours the rule
        points = chart.spec["data"]["values"]
        number_format = layers[1]["encoding"]["tooltip"][2]["format"]
        assert "g" not in number_format  # never exponent notation
        assert_altairs(chart.spec, altair_reference.history_spec(
            points, changes, versions=result.versions, column=result.column,
            axis=layers[1]["encoding"]["y"]["title"], title=chart.title, number_format=number_format))
    assert specs >= 2
    assert bool(result.changes) == (steps is not None)


def test_history_spec_of_one_series_and_none_values() -> None:
    from sparkreport.render.history import history_spec

    points = [{"series": "m · native", "version": v, "mean": mean, "ci_low": None, "ci_high": None, "n": 1}
              for v, mean in (("1.0", 10.0), ("1.1", None), ("2.0", 12.5))]
    changes = [{"after": "2.0", "text": "m · native: +25.0% (1.1 → 2.0, improvement)"}]
    for marks in ([], changes):
        assert_altairs(history_spec(points, marks, versions=["1.0", "1.1", "2.0"], column="label.version",
                                    axis="Output throughput (tok/s)", title="t"),
                       altair_reference.history_spec(points, marks, versions=["1.0", "1.1", "2.0"],
                                                     column="label.version", axis="Output throughput (tok/s)",
                                                     title="t"))


def _series_points(count: int) -> list[dict[str, object]]:
    """Two versions of ``count`` series, named out of order ("m10 · native" before "m2 · native")."""
    return [{"series": f"m{k} · native", "version": v, "mean": 10.0 + k, "ci_low": None, "ci_high": None, "n": 1}
            for k in range(count) for v in ("1.0", "1.1")]


@pytest.mark.parametrize("count", [8, 21])
def test_history_series_past_five_are_told_apart_by_their_line(count: int) -> None:
    """Five colours for the series: the sixth was drawn as the first, the same colour and the same
    solid line, and the legend could not say which was which. Past five, a round of five colours
    is drawn in each line (solid, dashed, dotted, dash-dot), fixed in the scales: no two of up to
    twenty series are drawn alike, each entry of the one legend drawn as its series' line; past
    twenty they repeat. Altair builds the same spec."""
    import itertools

    from sparkreport.render.history import history_spec

    points = _series_points(count)
    spec = history_spec(points, [], versions=["1.0", "1.1"], column="label.version", axis="x", title="t")
    assert_altairs(spec, altair_reference.history_spec(points, [], versions=["1.0", "1.1"], column="label.version",
                                                       axis="x", title="t"))
    rule, line = (layer["encoding"] for layer in spec["layer"])
    names = list(dict.fromkeys(str(p["series"]) for p in points))  # the domain: the series as the history lists them
    assert line["color"]["scale"]["domain"] == names
    assert line["color"] == rule["color"] and line["color"]["scale"]["domain"] == line["strokeDash"]["scale"]["domain"]
    drawn = {name: (colour_of(line["color"], name), tuple(line["strokeDash"]["scale"]["range"][i]))
             for i, name in enumerate(names)}
    assert len(set(drawn.values())) == min(count, 20)
    assert set(drawn.values()) <= set(itertools.product(charts.SERIES_COLOURS, charts.SERIES_DASHES.values()))
    assert drawn[names[0]] == (charts.SERIES_COLOURS[0], (1, 0))  # the first round solid, as five are drawn
    # one legend (Vega-Lite merges channels of one domain), each entry a line in its dash
    assert line["strokeDash"]["legend"] == line["color"]["legend"]
    assert line["color"]["legend"]["symbolType"] == "stroke"
    assert charts._legend_entries(spec, points) == [count]


def test_five_history_series_or_fewer_are_drawn_as_before() -> None:
    """Five series or fewer: solid lines in the five colours, dots in the legend, no dash channel."""
    from sparkreport.render.history import history_spec

    for count in (1, 5):
        points = _series_points(count)
        spec = history_spec(points, [], versions=["1.0", "1.1"], column="label.version", axis="x", title="t")
        line = spec["layer"][1]["encoding"]
        assert "strokeDash" not in line and "symbolType" not in line["color"]["legend"]
        assert line["color"]["scale"]["range"] == list(charts.SERIES_COLOURS[:count])


def test_a_history_chart_says_which_lines_are_change_points(tmp_path: Path) -> None:
    """Eight series of a store (four models in two environments): dashed series beside dashed
    change points, so the chart's description says the series' lines and that the change points'
    are upright; two series, none dashed, keep the description they had."""
    from history_store import write_history_store

    from sparkreport.analysis import AnalysisOptions
    from sparkreport.analysis.history import history
    from sparkreport.dataset import load_dataset
    from sparkreport.render.history import _metric_chart

    descriptions = []
    for models in (["llama"], ["llama", "qwen", "mistral", "phi"]):
        root = tmp_path / f"runs-{len(models)}"
        for model in models:
            write_history_store(root, runs=2, versions=["1.0", "1.1"], model=model, run_prefix=f"{model}-")
        result = history(load_dataset(root), AnalysisOptions(bootstrap_resamples=50))
        chart = _metric_chart(result, "output_throughput_tok_s")
        assert chart is not None
        assert len(chart.spec["layer"][1]["encoding"]["color"]["scale"]["domain"]) == 2 * len(models)
        descriptions.append(chart.description)
    assert descriptions[0].startswith("Mean Output throughput per version with its CI, per model and environment; "
                                      "dashed lines mark change points")
    assert descriptions[1].startswith("Mean Output throughput per version with its CI, per model and environment, "
                                      "each in its colour and line (solid or dashed); upright "
                                      "dashed lines mark change points")


def _sides(n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    side = pd.DataFrame({"model_name": ["llama", "qwen"] * (n // 2), "environment": "native",
                         "output_throughput_tok_s": [100.0 + i % 7 for i in range(n // 2 * 2)]})
    return side, side.assign(output_throughput_tok_s=side["output_throughput_tok_s"] * 1.01)


@pytest.mark.parametrize("n", [6, charts.MAX_ROWS])
def test_sides_spec_is_what_altair_builds(n: int) -> None:
    """Every run of both sides; past the row limit, each side's mean per cell (2 cells × 2 sides)."""
    from sparkreport.config import NamedDiff
    from sparkreport.render.diffs import sides_chart

    a, b = _sides(n)
    chart = sides_chart(a, b, "output_throughput_tok_s", NamedDiff(name="d", a="engine=x", b="engine=y"))
    assert chart is not None and chart.rows == (2 * n if 2 * n <= charts.MAX_ROWS else 4)
    assert_altairs(chart.spec, altair_reference.sides_spec(chart.spec["data"]["values"],
                                                           metric="output_throughput_tok_s", title=chart.title,
                                                           order=chart.spec["encoding"]["y"].get("sort"),
                                                           number_format=chart.spec["encoding"]["tooltip"][2]["format"]))


def test_ratio_spec_is_what_altair_builds() -> None:
    from sparkreport.render.diffs import ratio_chart

    cells = pd.DataFrame({"model": ["llama", "qwen", "gpt"], "environment": ["native", "docker", "native"],
                          "ratio": [1.01, 0.95, math.nan], "ratio_ci_low": [0.99, math.nan, math.nan],
                          "ratio_ci_high": [1.03, math.nan, math.nan], "verdict": ["unchanged", "lower", "missing"]})
    names = {"llama": "Llama 3 8B"}  # a model the sides name is shown by its name, another by its key
    for frame in (cells, cells.iloc[:1]):
        chart = ratio_chart(frame, "output_throughput_tok_s", names, "95%")
        assert chart is not None and chart.rows == min(len(frame), 2)
        assert_altairs(chart.spec, altair_reference.ratio_spec(chart.spec["data"]["values"], title=chart.title, level="95%",
                                                              order=chart.spec["layer"][0]["encoding"]["y"].get("sort")))
    assert [row["cell"] for row in chart.spec["data"]["values"]] == ["native · Llama 3 8B"]
    assert ratio_chart(cells.iloc[2:], "output_throughput_tok_s", names, "95%") is None


def test_the_diff_charts_list_cells_as_the_tables_do() -> None:
    """Both diff charts put their cells in the tables' order — by model, the baseline first — not
    Vega's alphabetical one (which put "cgroup-16g · m" above "native · m")."""
    from sparkreport.config import NamedDiff
    from sparkreport.render.diffs import ratio_chart, sides_chart

    cells = pd.DataFrame({"model": ["m", "m", "a"], "environment": ["cgroup-16g", "native", "native"],
                          "ratio": [1.01, 1.0, 0.99], "ratio_ci_low": [0.99, 0.98, 0.97],
                          "ratio_ci_high": [1.03, 1.02, 1.01], "verdict": ["unchanged"] * 3})
    chart = ratio_chart(cells, "output_throughput_tok_s", {}, "95%", baseline="native")
    assert chart is not None
    expected = ["native · a", "native · m", "cgroup-16g · m"]
    assert [layer["encoding"]["y"]["sort"] for layer in chart.spec["layer"][:2]] == [expected, expected]
    side = pd.DataFrame({"model": ["m", "m", "a"], "model_name": ["M", "M", "A"],
                         "environment": ["cgroup-16g", "native", "native"], "output_throughput_tok_s": [1.0, 2.0, 3.0]})
    sides = sides_chart(side, side, "output_throughput_tok_s", NamedDiff(name="d", a="engine=x", b="engine=y"),
                        baseline="native")
    assert sides is not None
    assert sides.spec["encoding"]["y"]["sort"] == ["native · A", "native · M", "cgroup-16g · M"]
    # a run's value in the tooltip as the tables print it, never in exponent notation (",.4g": 1.146e+4)
    assert sides.spec["encoding"]["tooltip"][2]["format"] == ",.2f"  # the catalog's decimals where no table gives any


def test_the_ratio_chart_says_the_confidence_level_the_diff_used_and_names_cells_in_full() -> None:
    """The ratio chart's axis said "95% CI" whatever ``analysis.confidence`` was, and cut a cell's
    name at Vega's 180 px ("cgroup-16g · Llama-3-8B shape (r…")."""
    from sparkreport.render.diffs import ratio_chart

    cells = pd.DataFrame({"model": ["llama"], "environment": ["cgroup-16g"], "ratio": [1.01], "ratio_ci_low": [0.99],
                          "ratio_ci_high": [1.03], "verdict": ["unchanged"]})
    chart = ratio_chart(cells, "output_throughput_tok_s", {"llama": "Llama-3-8B shape (random weights)"}, "90%")
    assert chart is not None
    rule = chart.spec["layer"][0]["encoding"]
    assert rule["x"]["title"] == "b / a (90% CI)"
    assert rule["y"]["axis"]["labelLimit"] >= 7 * len("cgroup-16g · Llama-3-8B shape (random weights)")
    assert_altairs(chart.spec, altair_reference.ratio_spec(chart.spec["data"]["values"], title=chart.title,
                                                          level="90%", order=rule["y"].get("sort")))


def colour_of(channel: dict[str, object], value: str) -> str:
    """The colour a channel's scale gives ``value``: its range at the value's place in the domain."""
    scale = channel["scale"]
    assert isinstance(scale, dict)
    return str(scale["range"][scale["domain"].index(value)])


#: What each verdict is drawn in, on every chart (``charts.VERDICT_COLOURS``).
VERDICT_COLOURS = {"regressed": "#D55E00", "improved": "#009E73", "unchanged": "#0072B2", "inconclusive": "#BBBBBB"}


@pytest.mark.parametrize("verdicts", [["regressed", "unchanged"], ["unchanged"], ["inconclusive"],
                                      ["unchanged", "improved", "inconclusive", "regressed"]])
def test_a_diff_verdict_has_its_colour_whatever_the_chart_shows(verdicts: list[str]) -> None:
    """A diff page's ratio chart drew `regressed` blue and `unchanged` orange: Vega's category
    colours in the order its data listed them. Each verdict now has its colour, the whole domain
    fixed in the spec: a chart of `unchanged` alone draws it blue; the legend lists what is drawn."""
    from sparkreport.render.diffs import ratio_chart

    cells = pd.DataFrame({"model": [f"m{i}" for i in range(len(verdicts))], "environment": "native", "ratio": 1.01,
                          "ratio_ci_low": 0.99, "ratio_ci_high": 1.03, "verdict": verdicts})
    chart = ratio_chart(cells, "output_throughput_tok_s", {}, "95%")
    assert chart is not None
    colour = chart.spec["layer"][1]["encoding"]["color"]
    assert colour["scale"]["domain"] == list(VERDICT_COLOURS)
    assert {v: colour_of(colour, v) for v in verdicts} == {v: VERDICT_COLOURS[v] for v in verdicts}
    assert colour["legend"]["values"] == [v for v in VERDICT_COLOURS if v in verdicts]


def test_the_comparisons_and_the_history_use_the_diffs_colours() -> None:
    """The forest chart's `the same within the margin` (TOST inside the margin, as `unchanged`) and
    its band are `unchanged`'s blue, `no difference detected` `inconclusive`'s grey; `higher` and
    `lower` (better or worse by metric) take colours that read as neither. A history chart's change
    point is `regressed`'s colour for a regression, `improved`'s for an improvement (it was red
    for both)."""
    from sparkreport.render.history import history_spec
    from sparkreport.render.report import forest_chart

    for verdict in ("equivalent", "higher"):  # the first verdict drawn takes no other colour
        chart = forest_chart([_effect("m", "Output throughput", 0.1, 0.5, verdict)], name="e", title="t",
                             confidence=0.95)
        assert chart is not None
        band, colour = chart.spec["layer"][0]["mark"]["color"], chart.spec["layer"][-1]["encoding"]["color"]
        assert colour_of(colour, "the same within the margin") == band == VERDICT_COLOURS["unchanged"]
        assert colour_of(colour, "no difference detected") == VERDICT_COLOURS["inconclusive"]
        assert not {colour_of(colour, "higher"), colour_of(colour, "lower")} & set(VERDICT_COLOURS.values())
    points = [{"series": "m · native", "version": v, "mean": 10.0, "ci_low": None, "ci_high": None, "n": 1}
              for v in ("1.0", "1.1")]
    changes = [{"after": "1.1", "direction": "regression", "text": "m · native: -9.0% (1.0 → 1.1, regression)"}]
    rule = history_spec(points, changes, versions=["1.0", "1.1"], column="label.version", axis="x", title="t")
    assert rule["layer"][2]["encoding"]["color"] == {
        "condition": {"test": "(datum.direction === 'regression')", "value": VERDICT_COLOURS["regressed"]},
        "value": VERDICT_COLOURS["improved"]}


def _cvd_lab(colour: str, matrix: list[list[float]]) -> tuple[float, float, float]:
    """``colour`` as a viewer with ``matrix``'s colour vision sees it (Machado, Oliveira and
    Fernandes 2009, in linear sRGB), in CIELAB (D65)."""
    rgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    seen = [min(1.0, max(0.0, sum(m * c for m, c in zip(row, linear, strict=True)))) for row in matrix]
    xyz = [sum(m * c for m, c in zip(row, seen, strict=True)) / white for row, white in zip(
        [[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]], (0.95047, 1.0, 1.08883),
        strict=True)]
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in xyz]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


#: Colour vision as the simulation matrices of Machado, Oliveira and Fernandes (2009, severity 1)
#: give it, for :func:`_cvd_lab`.
VISIONS = {"normal": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
           "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                          [-0.003882, -0.048116, 1.051998]],
           "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                            [-0.011820, 0.042940, 0.968881]],
           "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                          [0.004733, 0.691367, 0.303900]]}


def test_the_diff_verdicts_colours_are_told_apart_with_any_colour_vision() -> None:
    """Each pair of the four verdicts' colours stays at least 15 CIELAB units apart (a difference
    seen at a glance) with normal vision and as protanopes, deuteranopes and tritanopes see them
    (the grey of `inconclusive` is light: #999999 was 12 from the green to a deuteranope)."""
    import itertools

    for vision, matrix in VISIONS.items():
        for a, b in itertools.combinations(charts.RATIO_VERDICTS, 2):
            colours = charts.VERDICT_COLOURS
            distance = math.dist(_cvd_lab(colours[a], matrix), _cvd_lab(colours[b], matrix))
            assert distance >= 15, (vision, a, b, round(distance, 1))


def test_series_sides_and_environments_are_never_in_a_verdicts_colour() -> None:
    """A History chart's series drew in Vega's own colours, an orange beside the vermillion rule of
    a regression and a blue that was `unchanged`'s (1 CIELAB unit from it), as did a diff's side a:
    each series and side colour now stays at least as far from every diff verdict's colour (15
    units) as the verdicts are from each other, with any colour vision; the series (and the sides)
    as far from each other; and the specs draw in them.

    The per-run, means and memory-scatter charts drew their environments in Vega's colours too:
    the first in that blue, beside the equivalence band drawn in `unchanged`'s; the second in an
    orange 4 units from `lower`'s, which the effects chart above them draws. Each environment's
    colour keeps the same distance from every verdict's, `higher` and `lower` included, and from
    the other environments'; and the specs draw in them."""
    import itertools

    from sparkreport.render.diffs import sides_spec
    from sparkreport.render.history import history_spec

    named = {f"series {i + 1}": colour for i, colour in enumerate(charts.SERIES_COLOURS)}
    named |= {f"side {side}": colour for side, colour in zip("ab", charts.SIDE_COLOURS, strict=True)}
    environments = {f"environment {i + 1}": colour for i, colour in enumerate(charts.ENVIRONMENT_COLOURS)}
    assert len(set(charts.SERIES_COLOURS)) == len(charts.SERIES_COLOURS) >= 5 and len(set(charts.SIDE_COLOURS)) == 2
    assert len(set(charts.ENVIRONMENT_COLOURS)) == len(charts.ENVIRONMENT_COLOURS) >= 5
    assert charts.EQUIVALENCE_BAND in charts.VERDICT_COLOURS.values()
    for vision, matrix in VISIONS.items():
        for (name, colour), verdict in itertools.product(named.items(), charts.RATIO_VERDICTS):
            distance = math.dist(_cvd_lab(colour, matrix), _cvd_lab(charts.VERDICT_COLOURS[verdict], matrix))
            assert distance >= 15, (vision, name, verdict, round(distance, 1))
        for (name, colour), verdict in itertools.product(environments.items(), charts.VERDICT_COLOURS):
            distance = math.dist(_cvd_lab(colour, matrix), _cvd_lab(charts.VERDICT_COLOURS[verdict], matrix))
            assert distance >= 15, (vision, name, verdict, round(distance, 1))
        for a, b in [*itertools.combinations(charts.SERIES_COLOURS, 2), charts.SIDE_COLOURS,
                     *itertools.combinations(charts.ENVIRONMENT_COLOURS, 2)]:
            distance = math.dist(_cvd_lab(a, matrix), _cvd_lab(b, matrix))
            assert distance >= 15, (vision, a, b, round(distance, 1))
    points = [{"series": "m · native", "version": "1.0", "mean": 10.0, "ci_low": None, "ci_high": None, "n": 1}]
    spec = history_spec(points, [], versions=["1.0"], column="label.version", axis="x", title="t")
    assert [layer["encoding"]["color"]["scale"] for layer in spec["layer"]] == [
        {"domain": ["m · native"], "range": [charts.SERIES_COLOURS[0]]}] * 2
    sides = sides_spec([{"cell": "c", "side": "a: v=1", "percent": 100.0, "m": 1.0}], metric="m", title="t")
    assert sides["encoding"]["color"]["scale"] == {"range": list(charts.SIDE_COLOURS)}
    for spec in (charts.per_run_spec([{"arm": "native", "environment": "native"}], axis="x", title="t"),
                 charts.means_spec([{"arm": "native", "environment": "native"}], [], axis="x", level="95%",
                                   band=(1.0, 2.0), title="t"),
                 charts.scatter_spec([{"kind": "arm", "environment": "native"}], x_metric="x", title="t")):
        drawn = [unit["encoding"]["color"]["scale"] for unit in spec["layer"] if "color" in unit["encoding"]]
        assert drawn and all(scale == {"domain": ["native"], "range": [charts.ENVIRONMENT_COLOURS[0]]}
                             for scale in drawn)


def test_the_budget_parts_have_their_colours_apart_from_the_verdicts_and_environments() -> None:
    """The Memory page's budget chart drew its parts in Vega's colours, in the order of their names:
    the memory before the KV cache in a blue 1 CIELAB unit from `unchanged`'s to a tritanope, the
    KV cache in an orange 4 from `lower`'s to a deuteranope, the free memory red. Each part now has
    its colour, the whole domain fixed in the spec whatever the bars hold: kept at least 15 units
    from the other parts, from every verdict's colour and from every environment's (the scatter
    beside it draws environments), with any colour vision; the free memory a grey lighter than
    every part in use, as the track they fill."""
    import itertools

    from sparkreport.render.memory import budget_chart

    parts = charts.BUDGET_COLOURS
    assert list(parts) == ["before the KV cache", "KV cache", "left free"] and len(set(parts.values())) == 3
    others = {**{f"verdict {v}": c for v, c in charts.VERDICT_COLOURS.items()},
              **{f"environment {i + 1}": c for i, c in enumerate(charts.ENVIRONMENT_COLOURS)}}
    for vision, matrix in VISIONS.items():
        for (part, colour), (name, other) in itertools.product(parts.items(), others.items()):
            distance = math.dist(_cvd_lab(colour, matrix), _cvd_lab(other, matrix))
            assert distance >= 15, (vision, part, name, round(distance, 1))
        for a, b in itertools.combinations(parts, 2):
            distance = math.dist(_cvd_lab(parts[a], matrix), _cvd_lab(parts[b], matrix))
            assert distance >= 15, (vision, a, b, round(distance, 1))
    lightness = {part: _cvd_lab(colour, VISIONS["normal"])[0] for part, colour in parts.items()}
    assert lightness["left free"] > max(lightness["before the KV cache"], lightness["KV cache"])
    assert _cvd_lab(parts["left free"], VISIONS["normal"])[1:] == pytest.approx((0, 0), abs=0.5)  # a grey
    for budget in ([{"campaign": "c", "model_name": "m", "environment": "native", "pool": 80.0, "pre_kv": 80.0,
                     "kv": None}],  # every part but the first 0 GiB
                   [{"campaign": "c", "model_name": "m", "environment": "native", "pool": 80.0, "pre_kv": 20.0,
                     "kv": 50.0}]):
        chart = budget_chart(budget)
        assert chart is not None
        colour = chart.spec["encoding"]["color"]
        assert colour["scale"] == {"domain": list(parts), "range": list(parts.values())}
        assert {row["part"]: colour_of(colour, row["part"]) for row in chart.spec["data"]["values"]} == parts

def test_a_site_gives_each_environment_one_colour_on_every_chart() -> None:
    """Vega coloured each chart's environments in the order of their names, so an environment's
    colour hung on what else the chart showed: `native` was Vega's second colour beside
    `cgroup-16g` or `container` and its first alone. A site's colours (the baseline first, then the
    others by name) give an environment one colour on every chart, whatever the chart shows and in
    whatever order its rows come; an environment the site's colours miss takes a colour after
    theirs; past five the colours repeat."""
    site = charts.environment_colours(["container", "native", "cgroup-16g", "native"], baseline="native")
    assert site == dict(zip(["native", "cgroup-16g", "container"], charts.ENVIRONMENT_COLOURS, strict=False))
    assert charts.environment_colours(["b", "A", "c"]) == dict(zip(["A", "b", "c"], charts.ENVIRONMENT_COLOURS,
                                                                    strict=False))
    many = charts.environment_colours([f"e{i}" for i in range(7)])
    assert list(many.values()) == [*charts.ENVIRONMENT_COLOURS, *charts.ENVIRONMENT_COLOURS[:2]]

    def colours(spec: dict) -> dict[str, str]:
        """Environment → colour, as every layer (and panel) of ``spec`` draws it; one per environment."""
        found: dict[str, str] = {}
        for unit in spec.get("vconcat", [spec]):
            for layer in unit["layer"]:
                scale = layer["encoding"].get("color", {}).get("scale")
                if layer["encoding"].get("color", {}).get("field") != "environment":
                    continue
                for name, colour in zip(scale["domain"], scale["range"], strict=True):
                    assert found.setdefault(name, colour) == colour
        return found

    runs = pd.DataFrame({"environment": ["native", "cgroup-16g"] * 3, "arm": ["native", "cgroup-16g"] * 3,
                         "run_id": [f"r{i}" for i in range(6)], "iteration": 1, "kv_cache_gib": range(6)})
    stats = pd.DataFrame({"environment": ["container", "native"], "arm": ["p1 · container", "p1 · native"],
                          "metric": "kv_cache_gib", "n": 5, "mean": [40.0, 44.0], "ci_low": [39.0, 43.0],
                          "ci_high": [41.0, 45.0], "source": ["published", "runs"]})
    points = pd.DataFrame({"campaign": ["a", "b", "b"], "model_name": "m", "environment": ["container", "native", "cgroup-16g"],
                           "pre_kv_memory_gib": [70.0, 72.0, 90.0], "kv_cache_gib": [44.0, 42.0, 26.0]})
    drawn = [charts.per_run_chart(runs, "kv_cache_gib", name="r", title="t", colours=site),
             charts.per_run_chart(runs.iloc[::-1], "kv_cache_gib", name="r", title="t", colours=site),
             charts.per_run_chart(runs[runs["environment"] == "native"], "kv_cache_gib", name="r", title="t",
                                  colours=site),
             charts.means_chart(stats, "kv_cache_gib", name="m", title="t", colours=site, band=(42.0, 46.0)),
             charts.memory_scatter(points, name="s", title="t", colours=site),
             charts.memory_scatter(points[points["campaign"] == "a"], name="s", title="t", colours=site)]
    for chart in drawn:
        assert chart is not None
        shown = colours(chart.spec)
        assert shown == {name: site[name] for name in shown}, chart.name
    assert [len(colours(chart.spec)) for chart in drawn] == [2, 2, 1, 2, 3, 1]
    # an environment the site's colours do not name: the colour after theirs
    other = charts.per_run_chart(runs.assign(environment=["native", "chroot"] * 3), "kv_cache_gib", name="r",
                                 title="t", colours=site)
    assert other is not None
    assert colours(other.spec) == {"native": site["native"], "chroot": charts.ENVIRONMENT_COLOURS[3]}


def test_budget_spec_is_what_altair_builds() -> None:
    """One campaign or two (a row each); an arm without a KV cache figure; arms without a pool left out."""
    from sparkreport.render.memory import budget_chart

    def arm(campaign: str, model: str, pool: float | None, pre_kv: float | None, kv: float | None) -> dict:
        return {"campaign": campaign, "model_name": model, "environment": "native", "pool": pool, "pre_kv": pre_kv,
                "kv": kv}

    budgets = [arm("c1", "llama", 119.7, 18.8, 57.2), arm("c1", "qwen", 119.7, 80.1, None),
               arm("c2", "gpt-oss-120b", 119.7, 70.5, 60.0), arm("c2", "x", None, 10.0, 5.0)]
    for budget in (budgets[:2], budgets):
        chart = budget_chart(budget)
        assert chart is not None and chart.rows == 3 * min(len(budget), 3)
        assert_altairs(chart.spec, altair_reference.budget_spec(
            chart.spec["data"]["values"], ("before the KV cache", "KV cache", "left free"), title=chart.title))
    assert budget_chart(budgets[3:]) is None


@pytest.mark.parametrize("columns", ["all", "one", "no timestamp"])
def test_samples_spec_is_what_altair_builds(tmp_path: Path, columns: str) -> None:
    from sparkreport.render.runs_index import samples_chart

    rows = [f"2026/01/02 10:{k // 60:02d}:{k % 60:02d}.000,{30 + k % 11},{40 + k / 2},{'' if k % 9 else k % 100}\n"
            for k in range(900)]
    text = "timestamp,power_draw_w,temperature_gpu_c,utilization_gpu_pct\n" + "".join(rows)
    if columns == "one":
        text = "\n".join(",".join(line.split(",")[:2]) for line in text.splitlines())
    elif columns == "no timestamp":
        text = "\n".join(line.split(",", 1)[1] for line in text.splitlines())
    csv = tmp_path / "samples.csv"
    csv.write_text(text, encoding="utf-8")
    chart = samples_chart(csv, name="samples-x", title="x: monitoring samples")
    assert chart is not None
    series = {row["series"] for row in chart.spec["data"]["values"]}
    # each panel named as a reader reads it, not by the CSV's column
    assert series == ({"Power draw (W)"} if columns == "one" else
                      {"Power draw (W)", "GPU temperature (°C)", "GPU utilisation (%)"})
    assert chart.description.startswith("Power draw (W)" if columns == "one" else
                                         "Power draw (W), GPU temperature (°C) and GPU utilisation (%) over the run")
    assert_altairs(chart.spec, altair_reference.samples_spec(chart.spec["data"]["values"], title=chart.title))


def test_a_render_imports_no_altair(tmp_path: Path) -> None:
    """Rendering a site — every kind of chart, in forked page workers too — never imports Altair:
    an import of it fails the render, and the process has not loaded it at the end."""
    repo = Path(__file__).resolve().parents[1]
    script = f"""
import sys
from pathlib import Path

class NoAltair:
    def find_spec(self, name, path=None, target=None):
        if name == "altair" or name.startswith("altair."):
            raise ImportError(f"{{name}} imported during a render")

sys.meta_path.insert(0, NoAltair())
sys.path.insert(0, {str(repo / "tests")!r})
import pandas as pd
from history_store import write_history_store
from sparkreport import charts
from sparkreport.render import RenderOptions, render
from sparkreport.render.runs_index import samples_chart

tmp, repo = Path({str(tmp_path)!r}), Path({str(repo)!r})
shipped = render(RenderOptions(runs_dir=repo / "runs", docs_dir=tmp / "shipped" / "docs",
                               config_path=repo / "sparkreport.yml", project_root=repo))
(tmp / "history").mkdir()
runs = write_history_store(tmp / "history" / "runs", steps={{"0.22.0": -0.05}})
history = render(RenderOptions(runs_dir=runs, project_root=tmp / "history"))
csv = tmp / "samples.csv"
csv.write_text("power_draw_w\\n" + "".join(f"{{k}}\\n" for k in range(50)), encoding="utf-8")
assert samples_chart(csv, name="s", title="s") is not None
n = charts.MAX_ROWS + 1
big = pd.DataFrame({{"environment": "native", "run_id": [str(i) for i in range(n)], "iteration": 1,
                     "kv_cache_gib": [float(i) for i in range(n)]}})
assert charts.per_run_chart(big, "kv_cache_gib", name="q", title="q") is not None
names = {{p.name for p in (tmp / "shipped" / "docs").rglob("*.vl.json")}}
names |= {{p.name for p in history.docs_dir.rglob("*.vl.json")}}
print(sorted(m for m in sys.modules if m.split(".")[0] == "altair"))
print(sorted({{n.split("-")[-1] for n in names}}))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded, kinds = result.stdout.splitlines()[-2:]
    assert loaded == "[]"
    # per-run, means, by-model means, forest, memory budget and scatter, diffs' sides and ratio, history
    for kind in ("runs.vl.json", "means.vl.json", "effects.vl.json", "budget.vl.json", "peak.vl.json",
                 "sides.vl.json", "ratio.vl.json", "history.vl.json"):
        assert kind in kinds, kinds


def test_every_chart_the_shipped_project_renders_is_valid_vega_lite(tmp_path: Path) -> None:
    """Builds write the specs without Altair (nor its validation): every chart
    spec of this repository's own site — per-run, means, forest, memory budget, monitoring
    samples, diffs — is checked against the Vega-Lite schema here instead (the History page's
    charts by tests/test_history_page.py's spec checks)."""
    from altair.utils.schemapi import validate_jsonschema
    from altair.vegalite.v6.schema import load_schema

    from sparkreport.render import RenderOptions, render

    repo = Path(__file__).resolve().parents[1]
    result = render(RenderOptions(runs_dir=repo / "runs", docs_dir=tmp_path / "docs",
                                  config_path=repo / "sparkreport.yml", project_root=repo))
    schema = load_schema()
    specs = sorted(result.docs_dir.rglob("*.vl.json"))
    assert len(specs) >= 40
    for path in specs:
        validate_jsonschema(json.loads(path.read_text(encoding="utf-8")), schema, rootschema=schema)
    sections = {path.relative_to(result.docs_dir).parts[0] for path in specs}
    assert {"results", "memory", "diffs", "campaigns"} <= sections, sorted(sections)
    # The Runs pages' monitoring chart (this store's samples have other columns): from a GB10 CSV.
    from sparkreport.render.runs_index import samples_chart

    csv = tmp_path / "samples.csv"
    csv.write_text("timestamp,power_draw_w,temperature_gpu_c,utilization_gpu_pct\n" + "".join(
        f"2026/01/02 10:00:{k:02d}.000,{30 + k},{40 + k / 2},{k % 100}\n" for k in range(60)), encoding="utf-8")
    chart = samples_chart(csv, name="samples-x", title="x: monitoring samples")
    assert chart is not None
    validate_jsonschema(json.loads(json.dumps(chart.spec)), schema, rootschema=schema)


def test_the_sides_are_named_by_what_differs_and_runs_are_relative_to_side_a() -> None:
    from sparkreport.config import NamedDiff
    from sparkreport.render.diffs import side_names, sides_chart

    assert side_names("campaign=c,cache=cold", "campaign=c,cache=warm") == ("cache=cold", "cache=warm")
    assert side_names("engine=x", "engine=y") == ("engine=x", "engine=y")
    assert side_names("campaign=c", "campaign=c") == ("campaign=c", "campaign=c")
    a, b = _sides(6)
    chart = sides_chart(a, b, "output_throughput_tok_s",
                        NamedDiff(name="d", a="campaign=c,engine=x", b="campaign=c,engine=y"))
    assert chart is not None
    values = chart.spec["data"]["values"]
    assert {v["side"] for v in values} == {"a: engine=x", "b: engine=y"}
    for cell in ("native · llama", "native · qwen"):  # side a's runs average 100% in each cell, b's 101%
        mean = {side: statistics.fmean([v["percent"] for v in values if v["cell"] == cell and v["side"] == side])
                for side in ("a: engine=x", "b: engine=y")}
        assert mean["a: engine=x"] == pytest.approx(100) and mean["b: engine=y"] == pytest.approx(101)


def test_a_phone_placeholder_wraps_row_labels_as_the_refit_script_does() -> None:
    """sparkreport-fit.js wrapped this diff chart's row labels at 128 px into three lines (a step
    of 42 px, read from its refitted spec in Chromium): after the " · ", then between words."""
    from sparkreport.charts import _wrapped_lines

    assert _wrapped_lines("cgroup-16g · Llama-3-8B shape (random weights)", 128) == 3
    assert _wrapped_lines("native", 128) == 1
    assert _wrapped_lines("DeepSeek-R1-Distill-Qwen-7B", 100) == 2  # a word too long: after a hyphen


def test_the_axis_caption_says_it_does_not_start_at_0_only_when_it_surely_does_not() -> None:
    """Values from 17 to 157 are drawn on an axis Vega rounds out to 0–160: no 'does not start at
    0' under it (the 10 000-run store's time-per-output-token chart said so, over an axis from 0).
    Values from 850 to 920 surely start above 0; values from 0 need no note."""
    from sparkreport.charts import above_zero_note

    assert above_zero_note(16.7, 157.4) == ""
    assert above_zero_note(850.0, 920.0) == above_zero_note(9.41, 9.42) == " — axis does not start at 0"
    assert above_zero_note(0.0, 5.0) == above_zero_note(-3.0, 5.0) == ""


@pytest.mark.parametrize(("values", "from_zero"), [((2000.0, 10500.0), True), ((9000.0, 10500.0), False)])
def test_an_axis_starts_at_0_or_says_it_does_not(values: tuple[float, float], from_zero: bool) -> None:
    """Two models 5× apart (2 000 and 10 500 tok/s): Vega would have drawn the axis from about
    2 000 without a word; it is drawn from 0. Close values keep their own axis, and its title says
    it does not start at 0. The per-run chart follows the same rule."""
    stats = pd.DataFrame({"environment": ["native", "docker"], "metric": "output_throughput_tok_s", "n": [10, 10],
                          "mean": list(values), "ci_low": [v * 0.99 for v in values],
                          "ci_high": [v * 1.01 for v in values], "source": ["runs", "runs"]})
    means = charts.means_chart(stats, "output_throughput_tok_s", name="m", title="t", confidence=0.95)
    runs = pd.DataFrame({"environment": ["native", "docker"], "run_id": ["a", "b"], "iteration": [1, 1],
                         "output_throughput_tok_s": list(values)})
    per_run = charts.per_run_chart(runs, "output_throughput_tok_s", name="r", title="t")
    assert means is not None and per_run is not None
    for x in (means.spec["layer"][-1]["encoding"]["x"], per_run.spec["layer"][0]["encoding"]["x"]):
        assert x["scale"] == {"zero": from_zero}
        assert x["title"].endswith("axis does not start at 0") == (not from_zero)


def test_a_count_named_by_its_unit_is_not_said_twice() -> None:
    """'Failed requests', not 'Failed requests (requests)'; a unit the label does not end in stays."""
    from sparkreport.metrics import with_unit

    assert charts.metric_title("failed_requests") == "Failed requests"
    assert charts.metric_title("total_output_tokens") == "Total output tokens"
    assert with_unit("Max concurrency", "requests") == "Max concurrency (requests)"
    assert with_unit("Time to first token (mean)", "ms") == "Time to first token (mean, ms)"
