"""Charts: Vega-Lite specs from small frames, the 5000-row limit kept, SVG fallbacks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkreport import charts
from sparkreport.dataset import Dataset


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


def test_altair_row_limit_is_still_on(phase1_dataset: Dataset) -> None:
    import altair as alt

    assert alt.data_transformers.active == "default"
    big = pd.DataFrame({"x": range(charts.MAX_ROWS + 1)})
    with pytest.raises(alt.MaxRowsError):
        alt.Chart(big).mark_point().encode(x="x").to_dict()


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


def test_memory_scatter_and_svg_fallback(phase1_dataset: Dataset) -> None:
    points = phase1_dataset.runs.assign(origin=charts.MEASURED)
    chart = charts.memory_scatter(points, name="mem", title="KV cache against memory before it")
    assert chart is not None and chart.rows == 63
    svg = charts.to_svg(chart.spec)
    assert svg.startswith("<svg") and "KV cache (GiB)" in svg and "Memory before KV cache (GiB)" in svg


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
    from sparkreport.charts import spec_json

    assert spec_json(value) == json.dumps(value, indent=1, sort_keys=True)
    # Unsorted (the dataset.json download keeps its columns' order).
    assert spec_json(value, sort_keys=False) == json.dumps(value, indent=1)


def _altair_means_spec(data: list[dict[str, object]], with_ci: list[dict[str, object]], *, axis: str, level: str,
                       band: tuple[float, float] | None, title: str) -> dict[str, object]:
    """The means chart's layers as Altair builds them (the reference ``means_spec`` writes directly)."""
    import altair as alt

    y = alt.Y("arm:N", title=None, sort=[row["arm"] for row in data],
              axis=alt.Axis(labelLimit=charts.LABEL_LIMIT_PX))
    points = alt.Chart(alt.Data(values=data)).mark_point(filled=True, size=70).encode(
        x=alt.X("mean:Q", title=axis, scale=alt.Scale(zero=False)), y=y,
        color=alt.Color("environment:N", legend=None),
        shape=alt.Shape("origin:N", title="source", scale=alt.Scale(domain=[charts.MEASURED, charts.PUBLISHED],
                                                                     range=["circle", "diamond"])),
        tooltip=[alt.Tooltip("arm:N"), alt.Tooltip("origin:N", title="source"), alt.Tooltip("n:Q"),
                 alt.Tooltip("mean:Q", format=".4~f"),
                 alt.Tooltip("ci_low:Q", title=f"{level} CI low", format=".4~f"),
                 alt.Tooltip("ci_high:Q", title=f"{level} CI high", format=".4~f")],
    )
    layers = [points]
    if with_ci:
        layers.insert(0, alt.Chart(alt.Data(values=with_ci)).mark_errorbar(ticks=True).encode(
            x=alt.X("ci_low:Q", title=axis), x2=alt.X2("ci_high:Q"), y=y,
            color=alt.Color("environment:N", legend=None)))
    if band is not None:
        layers.insert(0, alt.Chart(alt.Data(values=[{"lo": band[0], "hi": band[1]}])).mark_rect(
            opacity=0.15, color="#2a9d8f").encode(x=alt.X("lo:Q", title=axis), x2=alt.X2("hi:Q")))
    chart = alt.layer(*layers).properties(width=charts.PANEL_WIDTH, height=alt.Step(46))
    return chart.properties(title=title).to_dict()  # validated against the Vega-Lite schema here


@pytest.mark.parametrize("band", [None, (98.0, 102.0)])
@pytest.mark.parametrize("intervals", ["all", "some", "none"])
def test_means_spec_is_what_altair_builds(band: tuple[float, float] | None, intervals: str) -> None:
    stats = pd.DataFrame({
        "environment": ["native", "docker", "paper"], "metric": "output_throughput_tok_s", "n": [10, 9, 5],
        "mean": [100.0, 101.5, 99.0], "ci_low": [95.0, 96.25, 97.0], "ci_high": [105.0, 106.0, 101.0],
        "source": ["runs", "runs", "published"]})
    if intervals != "all":
        stats.loc[2 if intervals == "some" else slice(None), ["ci_low", "ci_high"]] = float("nan")
    chart = charts.means_chart(stats, "output_throughput_tok_s", name="m", title="Means", confidence=0.9, band=band)
    assert chart is not None
    data = (chart.spec.get("data") or chart.spec["layer"][-1]["data"])["values"]
    with_ci = [row for row in data if row["ci_low"] is not None]
    assert len(chart.spec["layer"]) == 1 + (band is not None) + bool(with_ci)
    expected = _altair_means_spec(data, with_ci, axis=chart.spec["layer"][-1]["encoding"]["x"]["title"],
                                  level="90%", band=band, title="Means")
    assert json.loads(json.dumps(chart.spec, sort_keys=True)) == json.loads(json.dumps(expected, sort_keys=True))


def test_per_run_spec_is_what_altair_builds() -> None:
    import altair as alt

    runs = pd.DataFrame({"environment": ["native", "native", "docker", "docker"], "run_id": ["a", "b", "c", "d"],
                         "iteration": [1, 2, 1, 2], "output_throughput_tok_s": [100.0, 101.0, 98.0, 97.5],
                         "included": [True, False, True, True]})
    chart = charts.per_run_chart(runs, "output_throughput_tok_s", name="r", title="Runs")
    assert chart is not None
    data, axis = chart.spec["data"]["values"], chart.spec["layer"][0]["encoding"]["x"]["title"]
    y = alt.Y("environment:N", title=None)
    base = alt.Chart(alt.Data(values=data))
    box = base.transform_filter(alt.datum.status == "included").mark_boxplot(
        extent="min-max", opacity=0.35, size=22, median={"color": "#333"}
    ).encode(x=alt.X("value:Q", title=axis, scale=alt.Scale(zero=False)), y=y,
             color=alt.Color("environment:N", legend=None))
    points = base.mark_point(size=45, filled=True, opacity=0.9).encode(
        x=alt.X("value:Q"), y=y, yOffset=alt.YOffset("jitter:Q", scale=alt.Scale(domain=[-1, 2]), title=None),
        color=alt.Color("environment:N", legend=None),
        shape=alt.Shape("status:N", title="run", scale=alt.Scale(domain=["included", "excluded"],
                                                                  range=["circle", "cross"])),
        tooltip=[alt.Tooltip("run_id:N", title="run"), alt.Tooltip("iteration:Q"),
                 alt.Tooltip("value:Q", title=axis, format=".4~f"), alt.Tooltip("status:N")])
    expected = alt.layer(box, points).properties(width=charts.PANEL_WIDTH, height=alt.Step(46), title="Runs").to_dict()
    assert json.loads(json.dumps(chart.spec, sort_keys=True)) == json.loads(json.dumps(expected, sort_keys=True))
    assert [row["status"] for row in data] == ["included", "excluded", "included", "included"]


def test_every_chart_the_shipped_project_renders_is_valid_vega_lite(tmp_path: Path) -> None:
    """Builds turn Altair's construction-time validation off (``charts.altair``): every chart
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
