"""Charts: Altair → Vega-Lite specs (embedded by the site) and static SVG fallbacks.

Every chart is built from a small, already-aggregated frame: per-run values (a handful of
runs per arm) or per-arm statistics. Altair's 5000-row limit is respected, never switched
off: a per-run chart whose data would pass it is drawn from per-arm quantiles instead.
Altair and vl-convert are imported inside the functions so the executor never needs them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkreport import metrics as metric_catalog

if TYPE_CHECKING:
    import pandas as pd

#: Altair's own limit on rows embedded in one chart; we aggregate rather than lift it.
MAX_ROWS = 5000
#: Width of one chart panel in pixels (fits Material's content column).
PANEL_WIDTH = 420
PANEL_HEIGHT = 220
#: The Vega-Lite version the specs target (what Altair emits and the site vendors).
VEGALITE_VERSION = "6.4"

PUBLISHED = "published figures"
MEASURED = "per-run data"


@dataclass(frozen=True)
class ChartSpec:
    """One chart: a file-safe name, a title, alt text, the Vega-Lite spec and its row count."""

    name: str
    title: str
    description: str
    spec: dict[str, Any] = field(repr=False)
    rows: int


def metric_title(metric: str) -> str:
    """'Peak memory (GiB)' — the axis title of a metric."""
    entry = metric_catalog.lookup(metric)
    label = entry.label if entry else metric
    unit = entry.unit if entry else ""
    return f"{label} ({unit})" if unit else label


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Plain JSON-safe rows (pandas NA → None)."""
    rows = []
    for record in frame.astype(object).to_dict(orient="records"):
        clean: dict[str, Any] = {}
        for key, value in record.items():
            if isinstance(value, float | int) and not isinstance(value, bool):
                clean[str(key)] = _finite(value)
            elif value is None or (not isinstance(value, str) and value != value):
                clean[str(key)] = None
            else:
                clean[str(key)] = value if isinstance(value, str | bool) else str(value)
        rows.append(clean)
    return rows


#: Rows handed to Altair as a one-row placeholder (see :func:`inline`), by placeholder token.
_PENDING: dict[str, list[dict[str, Any]]] = {}
_MARK = "__sparkreport_rows__"


def altair() -> Any:
    """Altair, with its construction-time validation (``DEBUG_MODE``) off. Every schema object
    Altair builds is otherwise converted to a dict and checked against the Vega-Lite schema as
    it is made — about a tenth of a cold build's chart work at 10 000 runs, for charts that are
    ours and fixed in shape: their specs are validated in the tests
    (``tests/test_charts.py``), and ``to_dict`` is called with ``validate=False`` already."""
    import altair as alt
    from altair.utils import schemapi

    schemapi.disable_debug_mode()
    return alt


def inline(values: list[dict[str, Any]]) -> Any:
    """Inline chart data, without Altair validating every value (which costs more than the rest
    of the chart at a few thousand rows): Altair gets a one-row placeholder and :func:`_finish`
    puts the real rows into the spec."""
    alt = altair()

    token = f"{len(_PENDING)}-{id(values)}"
    _PENDING[token] = values
    return alt.Data(values=[{_MARK: token}])


def _fill(node: Any) -> Any:
    """Replace placeholders made by :func:`inline` with their rows, anywhere in a spec."""
    if isinstance(node, dict):
        values = node.get("values")
        if isinstance(values, list) and len(values) == 1 and isinstance(values[0], dict) and _MARK in values[0]:
            return {**node, "values": _PENDING.pop(values[0][_MARK])}
        return {key: _fill(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_fill(item) for item in node]
    return node


def _finish(chart: Any, name: str, title: str, description: str, rows: int) -> ChartSpec:
    # Validation against the Vega-Lite schema costs ~40% of a chart's build time; the specs are
    # ours and fixed in shape (validated in the tests), so the build skips it.
    try:
        spec = _fill(chart.properties(title=title).to_dict(validate=False))
    finally:
        _PENDING.clear()
    return ChartSpec(name=name, title=title, description=description, spec=spec, rows=rows)


def _environment_color() -> dict[str, Any]:
    """The colour channel of the specs written without Altair: one colour per environment, no legend."""
    return {"field": "environment", "legend": None, "type": "nominal"}


def _rows_panel(layers: list[dict[str, Any]], title: str) -> dict[str, Any]:
    """A layered spec of one row per arm, as Altair writes ``alt.layer(...).properties(width=PANEL_WIDTH,
    height=alt.Step(46), title=…)`` (its default view config and schema URL included)."""
    alt = altair()

    return {"config": {"view": {"continuousWidth": 300, "continuousHeight": 300}}, "layer": layers,
            "height": {"step": 46}, "title": title, "width": PANEL_WIDTH, "$schema": alt.SCHEMA_URL}


def per_run_chart(runs: pd.DataFrame, metric: str, *, name: str, title: str) -> ChartSpec | None:
    """Per-run values per arm: a box per environment with every run drawn as a point.

    ``runs`` holds one row per run with ``environment``, ``run_id``, ``iteration`` and the
    metric column, plus optionally ``included`` (excluded runs are drawn hollow). Returns None
    when no run reports the metric. Above :data:`MAX_ROWS` runs the chart shows per-arm
    quantiles instead of points.
    """
    if metric not in runs.columns:
        return None
    frame = runs[runs[metric].notna()].copy()
    if frame.empty:
        return None
    frame["included"] = frame["included"].astype(bool) if "included" in frame else True
    frame["status"] = frame["included"].map({True: "included", False: "excluded"})
    axis = metric_title(metric) + (" — axis does not start at 0" if float(frame[metric].min()) > 0 else "")
    description = (f"{axis} of every run, one row per environment; boxes span the quartiles of "
                   "the included runs.")
    if len(frame) > MAX_ROWS:
        return _quantile_chart(frame, metric, name=name, title=title, axis=axis)
    # Deterministic jitter (same output on every render): spread each arm's runs in order.
    frame["jitter"] = frame.groupby("environment", sort=False).cumcount() % 7 / 6
    data = _records(frame[["environment", "run_id", "iteration", "status", "jitter", metric]].rename(
        columns={metric: "value"}))
    return ChartSpec(name=name, title=title, description=description, spec=per_run_spec(data, axis=axis, title=title),
                     rows=len(data))


def per_run_spec(data: list[dict[str, Any]], *, axis: str, title: str) -> dict[str, Any]:
    """The per-run chart's Vega-Lite spec, written directly as :func:`means_spec` is (the second
    most frequent chart); ``tests/test_charts.py`` checks it equals Altair's: a box per environment
    over the included runs, and every run as a point, excluded ones as crosses."""
    def y() -> dict[str, Any]:
        return {"field": "environment", "title": None, "type": "nominal"}

    box = {"mark": {"type": "boxplot", "extent": "min-max", "median": {"color": "#333"}, "opacity": 0.35, "size": 22},
           "encoding": {"color": _environment_color(), "y": y(),
                        "x": {"field": "value", "scale": {"zero": False}, "title": axis, "type": "quantitative"}},
           "transform": [{"filter": "(datum.status === 'included')"}]}
    points = {
        "mark": {"type": "point", "filled": True, "opacity": 0.9, "size": 45},
        "encoding": {
            "color": _environment_color(),
            "shape": {"field": "status", "scale": {"domain": ["included", "excluded"], "range": ["circle", "cross"]},
                      "title": "run", "type": "nominal"},
            "tooltip": [{"field": "run_id", "title": "run", "type": "nominal"},
                        {"field": "iteration", "type": "quantitative"},
                        {"field": "value", "format": ".4~f", "title": axis, "type": "quantitative"},
                        {"field": "status", "type": "nominal"}],
            "x": {"field": "value", "type": "quantitative"}, "y": y(),
            "yOffset": {"field": "jitter", "scale": {"domain": [-1, 2]}, "title": None, "type": "quantitative"}}}
    return {**_rows_panel([box, points], title), "data": {"values": data}}


def _quantile_chart(frame: pd.DataFrame, metric: str, *, name: str, title: str, axis: str) -> ChartSpec:
    """The per-run chart for arms too large to embed: min–max rule and quartile bar per arm."""
    alt = altair()
    import pandas as pd

    included = frame[frame["included"]]
    grouped = included.groupby("environment")[metric]
    summary = pd.DataFrame({
        name: grouped.quantile(q) for name, q in
        (("min", 0.0), ("q1", 0.25), ("median", 0.5), ("q3", 0.75), ("max", 1.0))
    })
    summary["n"] = grouped.size()
    data = _records(summary.reset_index())
    base = alt.Chart(inline(data)).encode(y=alt.Y("environment:N", title=None),
                                                   color=alt.Color("environment:N", legend=None))
    chart = alt.layer(
        base.mark_rule().encode(x=alt.X("min:Q", title=axis, scale=alt.Scale(zero=False)), x2=alt.X2("max:Q")),
        base.mark_bar(size=18, opacity=0.5).encode(x=alt.X("q1:Q"), x2=alt.X2("q3:Q")),
        base.mark_tick(color="#333", size=18).encode(x=alt.X("median:Q"),
                                                          tooltip=[alt.Tooltip("n:Q"), alt.Tooltip("median:Q")]),
    ).properties(width=PANEL_WIDTH, height=alt.Step(46))
    description = f"{axis} per environment: range, quartiles and median of {len(included)} runs."
    return _finish(chart, name, title, description, rows=len(data))


#: Row labels of the means charts ("native · Llama-3-8B shape (random weights)") are cut only past this.
LABEL_LIMIT_PX = 340


def means_chart(stats: pd.DataFrame, metric: str, *, name: str, title: str,
                confidence: float = 0.95, band: tuple[float, float] | None = None) -> ChartSpec | None:
    """Arm means with their confidence intervals as error bars, one row per environment.

    ``stats`` is shaped like ``arm_stats`` (``environment, metric, n, mean, ci_low, ci_high,
    source``); published-summary arms are marked as published figures. None when empty.
    ``band`` (low, high) draws the baseline's equivalence band. The axis does not start at zero
    (the intervals would vanish), and its title says so.

    The most frequent chart of a site (every campaign page and model page has several), so its
    Vega-Lite spec is written directly rather than through Altair (~35 ms a chart, most of it
    Altair copying its objects); ``tests/test_charts.py`` checks it equals Altair's spec of the
    same layers.
    """
    frame = stats[(stats["metric"] == metric) & stats["mean"].notna()].copy()
    if frame.empty:
        return None
    frame["origin"] = frame["source"].map(lambda s: PUBLISHED if s == "published" else MEASURED)
    frame["arm"] = frame["environment"].astype(str) + frame["source"].map(
        lambda s: " (published)" if s == "published" else "")
    data = _records(frame[["arm", "environment", "origin", "n", "mean", "ci_low", "ci_high"]])
    level = f"{confidence:.0%}"
    with_ci = [row for row in data if row["ci_low"] is not None and row["ci_high"] is not None]
    lows = [row["ci_low"] if row["ci_low"] is not None else row["mean"] for row in data]
    lows += [band[0]] if band else []
    axis = metric_title(metric) + (" — axis does not start at 0" if lows and min(lows) > 0 else "")
    spec = means_spec(data, with_ci, axis=axis, level=level, band=band, title=title)
    description = f"{axis}: mean per environment with its {level} confidence interval where known."
    if band is not None:
        description += " The shaded band is the baseline mean ± the equivalence margin."
    return ChartSpec(name=name, title=title, description=description, spec=spec, rows=len(data))


def means_spec(data: list[dict[str, Any]], with_ci: list[dict[str, Any]], *, axis: str, level: str,
               band: tuple[float, float] | None, title: str) -> dict[str, Any]:
    """The means chart's Vega-Lite spec: the band (if any), the error bars of the arms with an
    interval (if any), then the points, one row per arm in ``data``'s order."""
    def quantitative(field: str, **extra: Any) -> dict[str, Any]:
        return {"field": field, **extra, "type": "quantitative"}

    def y() -> dict[str, Any]:
        return {"axis": {"labelLimit": LABEL_LIMIT_PX}, "field": "arm", "sort": [row["arm"] for row in data],
                "title": None, "type": "nominal"}

    layers: list[dict[str, Any]] = []
    if band is not None:
        layers.append({"data": {"values": [{"lo": band[0], "hi": band[1]}]},
                       "mark": {"type": "rect", "color": "#2a9d8f", "opacity": 0.15},
                       "encoding": {"x": quantitative("lo", title=axis), "x2": {"field": "hi"}}})
    if with_ci:  # an arm published without a spread has no interval: draw its mean alone
        layers.append({"data": {"values": with_ci}, "mark": {"type": "errorbar", "ticks": True},
                       "encoding": {"color": _environment_color(), "x": quantitative("ci_low", title=axis),
                                    "x2": {"field": "ci_high"}, "y": y()}})
    layers.append({
        "data": {"values": data}, "mark": {"type": "point", "filled": True, "size": 70},
        "encoding": {
            "color": _environment_color(),
            "shape": {"field": "origin", "scale": {"domain": [MEASURED, PUBLISHED], "range": ["circle", "diamond"]},
                      "title": "source", "type": "nominal"},
            "tooltip": [{"field": "arm", "type": "nominal"}, {"field": "origin", "title": "source", "type": "nominal"},
                        quantitative("n"), quantitative("mean", format=".4~f"),
                        quantitative("ci_low", format=".4~f", title=f"{level} CI low"),
                        quantitative("ci_high", format=".4~f", title=f"{level} CI high")],
            "x": quantitative("mean", scale={"zero": False}, title=axis), "y": y()}})
    spec = _rows_panel(layers, title)
    if len(layers) == 1:  # as Altair does: a single layer's data moves to the top
        spec["data"] = layers[0].pop("data")
    return spec


def memory_scatter(points: pd.DataFrame, *, name: str, title: str,
                   x_metric: str = "pre_kv_memory_gib") -> ChartSpec | None:
    """KV cache against memory in use before it was allocated (``x_metric``; or against the peak,
    ``peak_memory_gib``): one point per run (or per published arm mean).

    ``points`` has ``model_name, environment, <x_metric>, kv_cache_gib`` and ``origin``
    (:data:`MEASURED` or :data:`PUBLISHED`). None when no point has both figures. Above
    :data:`MAX_ROWS` points, each arm is reduced to its mean.
    """
    alt = altair()

    if x_metric not in points or "kv_cache_gib" not in points:
        return None
    frame = points[points[x_metric].notna() & points["kv_cache_gib"].notna()].copy()
    if frame.empty:
        return None
    if "origin" not in frame:
        frame["origin"] = MEASURED
    columns = ["model_name", "environment", "origin", x_metric, "kv_cache_gib"]
    if len(frame) > MAX_ROWS:
        frame = frame.groupby(["model_name", "environment", "origin"], as_index=False)[
            [x_metric, "kv_cache_gib"]].mean()
    data = _records(frame[columns])
    chart = alt.Chart(inline(data)).mark_point(filled=True, size=60, opacity=0.8).encode(
        x=alt.X(f"{x_metric}:Q", title=metric_title(x_metric), scale=alt.Scale(zero=False)),
        y=alt.Y("kv_cache_gib:Q", title=metric_title("kv_cache_gib"), scale=alt.Scale(zero=False)),
        color=alt.Color("environment:N", title="environment"),
        shape=alt.Shape("model_name:N", title="model"),
        tooltip=[alt.Tooltip("model_name:N", title="model"), alt.Tooltip("environment:N"),
                 alt.Tooltip("origin:N", title="source"),
                 alt.Tooltip(f"{x_metric}:Q", title=f"{metric_title(x_metric)}", format=".2f"),
                 alt.Tooltip("kv_cache_gib:Q", title="KV cache (GiB)", format=".2f")],
    ).properties(width=PANEL_WIDTH + 80, height=PANEL_HEIGHT + 80)
    what = "memory in use before it was allocated" if x_metric == "pre_kv_memory_gib" else metric_title(x_metric)
    description = (f"KV cache against {what}, one point per run (published arms: one point "
                   "per arm mean), coloured by environment, shaped by model.")
    return _finish(chart, name, title, description, rows=len(data))


_SCALARS = (str, int, float, bool, type(None))
_ENCODERS: dict[tuple[int, bool], Any] = {}


def _flat_encoder(depth: int, sort_keys: bool = True) -> Any:
    """A C-accelerated encoder whose item separator carries the newline and the indent."""
    import json

    encoder = _ENCODERS.get((depth, sort_keys))
    if encoder is None:
        encoder = _ENCODERS[depth, sort_keys] = json.JSONEncoder(sort_keys=sort_keys,
                                                                 separators=(",\n" + " " * (depth + 1), ": "))
    return encoder


def spec_json(spec: Any, depth: int = 0, *, sort_keys: bool = True) -> str:
    """``json.dumps(spec, indent=1, sort_keys=sort_keys)``, byte for byte, about five times faster.

    With an indent, the json module encodes in pure Python, node by node: most of a chart's time
    at 10 000 runs. A dict or list holding only scalars (a data row) is encoded by the C encoder
    with the newline and indent as its separator; only the nesting above it is walked here.
    """
    import json

    pad = " " * (depth + 1)
    if isinstance(spec, dict):
        if not spec:
            return "{}"
        if all(isinstance(value, _SCALARS) for value in spec.values()):
            text: str = _flat_encoder(depth, sort_keys).encode(spec)
            return "{\n" + pad + text[1:-1] + "\n" + " " * depth + "}"
        pairs = sorted(spec.items()) if sort_keys else spec.items()
        items = [f"{json.dumps(key)}: {spec_json(value, depth + 1, sort_keys=sort_keys)}" for key, value in pairs]
        return "{\n" + pad + (",\n" + pad).join(items) + "\n" + " " * depth + "}"
    if isinstance(spec, list | tuple):
        if not spec:
            return "[]"
        if all(isinstance(value, _SCALARS) for value in spec):
            text = _flat_encoder(depth, sort_keys).encode(spec)
            return "[\n" + pad + text[1:-1] + "\n" + " " * depth + "]"
        if all(isinstance(row, dict) and row and all(isinstance(v, _SCALARS) for v in row.values()) for row in spec):
            return _rows_json(list(spec), depth, sort_keys)
        items = [spec_json(value, depth + 1, sort_keys=sort_keys) for value in spec]
        return "[\n" + pad + (",\n" + pad).join(items) + "\n" + " " * depth + "]"
    return json.dumps(spec)


def _rows_json(rows: list[dict[str, Any]], depth: int, sort_keys: bool = True) -> str:
    """A list of flat, non-empty dicts (a chart's data) in one C-encoder call.

    Encoded with ``",\\n"`` between items: a raw newline never occurs inside an encoded string,
    and ``},\\n`` only ends a row (a row's values are scalars), so the two levels' separators
    can be told apart and indented afterwards.
    """
    row_pad, key_pad = " " * (depth + 1), " " * (depth + 2)
    text: str = _flat_encoder(-1, sort_keys).encode(rows)  # '[{"a": 1,\n"b": 2},\n{…}]'
    body = text[2:-2].replace(",\n", ",\n" + key_pad)
    body = body.replace("},\n" + key_pad + "{", "\n" + row_pad + "},\n" + row_pad + "{\n" + key_pad)
    return ("[\n" + row_pad + "{\n" + key_pad + body + "\n" + row_pad + "}\n" + " " * depth + "]")


def to_svg(spec: dict[str, Any]) -> str:
    """Render a Vega-Lite spec to a static SVG with vl-convert (the no-JavaScript fallback)."""
    import vl_convert

    version = "v" + VEGALITE_VERSION.replace(".", "_")
    return str(vl_convert.vegalite_to_svg(spec, vl_version=version))
