"""The charts as Altair built them, kept as the reference the directly written specs are tested
against (``tests/test_charts.py``). Builds no longer import Altair: each ``*_spec`` function of the
package writes its chart's Vega-Lite dict itself, and must equal what these constructions give.

Each function takes the arguments of the package's builder of the same name and returns
``chart.properties(title=title).to_dict()`` with the rows put in, as builds did: Altair got a
one-row placeholder per data set (:func:`inline`; validating every value cost more than the rest
of a chart) and the real rows replaced it in the finished dict (:func:`_fill`). Unlike a build's
(``validate=False``), ``to_dict`` validates the spec against the Vega-Lite schema here, which
changes nothing in the dict.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from sparkreport.charts import LABEL_LIMIT_PX, MEASURED, PANEL_HEIGHT, PANEL_WIDTH, PUBLISHED, metric_title
from sparkreport.names import name_order
from sparkreport.render.tables import metric_label

#: The verdicts' colours on every chart (Okabe and Ito's palette), written out: the reference
#: for ``sparkreport.charts.VERDICT_COLOURS``.
REGRESSED, IMPROVED, UNCHANGED, INCONCLUSIVE = "#D55E00", "#009E73", "#0072B2", "#BBBBBB"
#: A History chart's series and a diff's sides, in colours no verdict has: the reference for
#: ``sparkreport.charts.SERIES_COLOURS`` and ``SIDE_COLOURS``.
SERIES = ["#56B4E9", "#9933FF", "#AA3377", "#E69F00", "#F0E442"]
#: Past five series, a round of the five colours in each line, solid, dashed, dotted, dash-dot:
#: the reference for ``sparkreport.charts.SERIES_DASHES``.
DASHES = [[1, 0], [6, 3], [2, 2], [10, 3, 2, 3]]
SIDES = ["#56B4E9", "#9933FF"]
#: The environments' colours, in the order a site gives them (its baseline first), apart from
#: every verdict's: the reference for ``sparkreport.charts.ENVIRONMENT_COLOURS``.
ENVIRONMENTS = ["#9933FF", "#996633", "#56B4E9", "#AA3377", "#DDCC77"]
#: The parts of a memory pool on the budget chart, in the order they stack: the reference for
#: ``sparkreport.charts.BUDGET_COLOURS``.
BUDGET = {"before the KV cache": "#426746", "KV cache": "#84C58B", "left free": "#E6E6E6"}


def environment_scale(colours: dict[str, str]) -> alt.Scale:
    """A colour scale of the environments ``colours`` names, each in its colour, in that order."""
    return alt.Scale(domain=list(colours), range=list(colours.values()))

_PENDING: dict[str, list[dict[str, Any]]] = {}
_MARK = "__sparkreport_rows__"


def inline(values: list[dict[str, Any]]) -> alt.Data:
    """A one-row placeholder for ``values``, put back by :func:`_fill`."""
    token = f"{len(_PENDING)}-{id(values)}"
    _PENDING[token] = values
    return alt.Data(values=[{_MARK: token}])


def _fill(node: Any) -> Any:
    if isinstance(node, dict):
        values = node.get("values")
        if isinstance(values, list) and len(values) == 1 and isinstance(values[0], dict) and _MARK in values[0]:
            return {**node, "values": _PENDING.pop(values[0][_MARK])}
        return {key: _fill(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_fill(item) for item in node]
    return node


def finish(chart: Any, title: str) -> dict[str, Any]:
    """The spec a build wrote for ``chart`` (``charts._finish`` as it was), validated."""
    try:
        return dict(_fill(chart.properties(title=title).to_dict()))
    finally:
        _PENDING.clear()


# sparkreport/charts.py


def per_run_spec(data: list[dict[str, Any]], *, axis: str, title: str, colours: dict[str, str],
                 arms: list[str], zero: bool = False, number_format: str = ",.2f") -> dict[str, Any]:
    y = alt.Y("arm:N", title=None, sort=arms)
    base = alt.Chart(alt.Data(values=data))
    box = base.transform_filter(alt.datum.status == "included").mark_boxplot(
        extent="min-max", opacity=0.35, size=22, median={"color": "#333"}
    ).encode(x=alt.X("value:Q", title=axis, scale=alt.Scale(zero=zero)), y=y,
             color=alt.Color("environment:N", legend=None, scale=environment_scale(colours)))
    points = base.mark_point(size=45, filled=True, opacity=0.9).encode(
        x=alt.X("value:Q"), y=y, yOffset=alt.YOffset("jitter:Q", scale=alt.Scale(domain=[-1, 2]), title=None),
        color=alt.Color("environment:N", legend=None, scale=environment_scale(colours)),
        shape=alt.Shape("status:N", title="run", scale=alt.Scale(domain=["included", "excluded"],
                                                                  range=["circle", "cross"]),
                        **({"legend": None} if len({d["status"] for d in data}) <= 1 else {})),
        tooltip=[alt.Tooltip("run_id:N", title="run"), alt.Tooltip("iteration:Q"),
                 alt.Tooltip("value:Q", title=axis, format=number_format), alt.Tooltip("status:N")])
    return finish(alt.layer(box, points).properties(width=PANEL_WIDTH, height=alt.Step(46)), title)


def means_spec(data: list[dict[str, Any]], with_ci: list[dict[str, Any]], *, axis: str, level: str,
               band: tuple[float, float] | None, title: str, colours: dict[str, str],
               zero: bool = False, number_format: str = ",.2f") -> dict[str, Any]:
    y = alt.Y("arm:N", title=None, sort=[row["arm"] for row in data], axis=alt.Axis(labelLimit=LABEL_LIMIT_PX))
    points = alt.Chart(alt.Data(values=data)).mark_point(filled=True, size=70).encode(
        x=alt.X("mean:Q", title=axis, scale=alt.Scale(zero=zero)), y=y,
        color=alt.Color("environment:N", legend=None, scale=environment_scale(colours)),
        shape=alt.Shape("origin:N", title="source", scale=alt.Scale(domain=[MEASURED, PUBLISHED],
                                                                     range=["circle", "diamond"]),
                        **({"legend": None} if len({d["origin"] for d in data}) <= 1 else {})),
        tooltip=[alt.Tooltip("arm:N"), alt.Tooltip("origin:N", title="source"), alt.Tooltip("n:Q"),
                 alt.Tooltip("mean:Q", format=number_format),
                 alt.Tooltip("ci_low:Q", title=f"{level} CI low", format=number_format),
                 alt.Tooltip("ci_high:Q", title=f"{level} CI high", format=number_format)],
    )
    layers = [points]
    if with_ci:
        layers.insert(0, alt.Chart(alt.Data(values=with_ci)).mark_errorbar(ticks=True).encode(
            x=alt.X("ci_low:Q", title=axis), x2=alt.X2("ci_high:Q"), y=y,
            color=alt.Color("environment:N", legend=None, scale=environment_scale(colours))))
    if band is not None:
        layers.insert(0, alt.Chart(alt.Data(values=[{"lo": band[0], "hi": band[1]}])).mark_rect(
            opacity=0.15, color=UNCHANGED).encode(x=alt.X("lo:Q", title=axis), x2=alt.X2("hi:Q")))
    return finish(alt.layer(*layers).properties(width=PANEL_WIDTH, height=alt.Step(46)), title)



def quantile_spec(data: list[dict[str, Any]], *, axis: str, title: str, colours: dict[str, str],
                  arms: list[str], zero: bool = False, number_format: str = ",.2f") -> dict[str, Any]:
    base = alt.Chart(inline(data)).encode(y=alt.Y("arm:N", title=None, sort=arms),
                                          color=alt.Color("environment:N", legend=None,
                                                          scale=environment_scale(colours)))
    chart = alt.layer(
        base.mark_rule().encode(x=alt.X("min:Q", title=axis, scale=alt.Scale(zero=zero)), x2=alt.X2("max:Q")),
        base.mark_bar(size=18, opacity=0.5).encode(x=alt.X("q1:Q"), x2=alt.X2("q3:Q")),
        base.mark_tick(color="#333", size=18).encode(x=alt.X("median:Q"),
                                                     tooltip=[alt.Tooltip("n:Q"),
                                                              alt.Tooltip("median:Q", format=number_format)]),
    ).properties(width=PANEL_WIDTH, height=alt.Step(46))
    return finish(chart, title)


def scatter_spec(data: list[dict[str, Any]], *, x_metric: str, title: str, colours: dict[str, str],
                 panels: bool = False) -> dict[str, Any]:
    models = sorted({row["model_name"] for row in data if row["kind"] == "arm"}, key=name_order)

    def layered(rows: list[dict[str, Any]]) -> Any:
        x = alt.X(f"{x_metric}:Q", title=metric_title(x_metric), scale=alt.Scale(zero=False))
        y = alt.Y("kv_cache_gib:Q", title=metric_title("kv_cache_gib"), scale=alt.Scale(zero=False))
        layers = [alt.Chart().mark_point(filled=True, size=60, opacity=0.8).encode(
            x=x, y=y,
            color=alt.Color("environment:N", title="environment", scale=environment_scale(colours)),
            shape=alt.Shape("model_name:N", title="model", sort=models),
            tooltip=[alt.Tooltip("model_name:N", title="model"), alt.Tooltip("environment:N"),
                     alt.Tooltip("origin:N", title="source"),
                     alt.Tooltip(f"{x_metric}:Q", title=f"{metric_title(x_metric)}", format=".2f"),
                     alt.Tooltip("kv_cache_gib:Q", title="KV cache (GiB)", format=".2f")],
        ).transform_filter("datum.kind === 'arm'")]
        if any(row["kind"] == "fit" for row in rows):
            layers.append(alt.Chart().mark_line(color="#757575", strokeDash=[5, 4], strokeWidth=1.5).encode(
                x=x, y=y, detail=alt.Detail("campaign:N"), tooltip=[alt.Tooltip("fit:N", title="fitted")],
            ).transform_filter("datum.kind === 'fit'"))
        return alt.layer(*layers, data=inline(rows)).properties(width=PANEL_WIDTH + 80, height=PANEL_HEIGHT + 80)

    if not panels:
        return finish(layered(data), title)
    shown = []
    for campaign in dict.fromkeys(row["campaign"] for row in data):
        shown.append(layered([row for row in data if row["campaign"] == campaign]).properties(
            title=alt.TitleParams(campaign, anchor="start", fontSize=12, frame="group")))
    return finish(alt.vconcat(*shown, spacing=36), title)


# sparkreport/render/report.py


def forest_spec(data: list[dict[str, Any]], *, level: str, margin: float, title: str,
                verdicts: set[str] | None = None) -> dict[str, Any]:
    y = alt.Y("row:N", title=None, sort=[d["row"] for d in data], axis=alt.Axis(labelLimit=440))
    band = alt.Chart(inline([{"lo": -margin, "hi": margin}])).mark_rect(opacity=0.12, color=UNCHANGED).encode(
        x=alt.X("lo:Q"), x2=alt.X2("hi:Q"))
    zero = alt.Chart(inline([{"x": 0}])).mark_rule(color="#555").encode(x=alt.X("x:Q"))
    words = {"the same within the margin": UNCHANGED, "higher": "#CC79A7", "lower": "#E69F00",
             "no difference detected": INCONCLUSIVE}
    present = [w for w in words if (w in verdicts if verdicts is not None else any(d["verdict"] == w for d in data))]
    colour = alt.Color("verdict:N", title="verdict", legend=alt.Legend(orient="bottom", values=present),
                       scale=alt.Scale(domain=list(words), range=list(words.values())))
    tooltip = [alt.Tooltip("row:N", title="effect"), alt.Tooltip("comparison:N"), alt.Tooltip("campaign:N"),
               alt.Tooltip("delta_text:N", title="Δ %"), alt.Tooltip("low_text:N", title=f"{level} CI low"),
               alt.Tooltip("high_text:N", title=f"{level} CI high"), alt.Tooltip("verdict:N")]
    rules = alt.Chart(inline(data)).mark_rule(strokeWidth=2).encode(
        x=alt.X("low:Q"), x2=alt.X2("high:Q"), y=y, color=colour)
    points = alt.Chart(inline(data)).mark_point(size=60, filled=True).encode(
        x=alt.X("delta:Q", title=f"difference from the baseline, % (with {level} CI; band = ±{margin:g}%)"),
        y=y, color=colour, tooltip=tooltip)
    chart = alt.layer(band, zero, rules, points).properties(width=250, height=alt.Step(22))
    return finish(chart, title)


# sparkreport/render/history.py


def history_spec(points: list[dict[str, Any]], changes: list[dict[str, Any]], *, versions: list[str],
                 column: str, axis: str, title: str, number_format: str = ",.2f") -> dict[str, Any]:
    domain = alt.Scale(domain=versions)
    x = alt.X("version:O", scale=domain, title=f"version ({column})",
              axis=alt.Axis(labelOverlap=True, labelAngle=-45))
    base = alt.Chart(inline(points))
    two = max(len(str(p["series"])) for p in points) <= 45  # one column for longer names (several campaigns)
    names = list(dict.fromkeys(p["series"] for p in points))  # the history's order: the baseline first
    dashed = len(names) > len(SERIES)
    legend = alt.Legend(orient="bottom", labelLimit=400 if two else PANEL_WIDTH + 180, columns=2 if two else 1,
                        **({"symbolType": "stroke", "symbolSize": 400, "symbolStrokeWidth": 2} if dashed else {}))
    color = alt.Color("series:N", title=None, legend=legend,
                      scale=alt.Scale(domain=names, range=[SERIES[i % 5] for i in range(len(names))]))
    dash = {"strokeDash": alt.StrokeDash("series:N", title=None, legend=legend, scale=alt.Scale(
        domain=names, range=[DASHES[i // 5 % 4] for i in range(len(names))]))} if dashed else {}
    lines = base.mark_line(point=True).encode(
        x=x, y=alt.Y("mean:Q", title=axis, scale=alt.Scale(zero=False)), color=color,
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("version:O"), alt.Tooltip("mean:Q", format=number_format),
                 alt.Tooltip("n:Q")], **dash)
    bars = base.mark_rule().encode(x=x, y=alt.Y("ci_low:Q"), y2=alt.Y2("ci_high:Q"), color=color)
    layers = bars + lines
    if changes:
        rules = alt.Chart(alt.Data(values=changes)).mark_rule(strokeDash=[4, 4]).encode(
            x=alt.X("after:O", scale=domain),
            color=alt.condition(alt.datum.direction == "regression", alt.value(REGRESSED), alt.value(IMPROVED)),
            tooltip=[alt.Tooltip("text:N", title="change point")])
        layers = layers + rules
    chart = layers.properties(width=PANEL_WIDTH + 180)
    return finish(chart, title)


# sparkreport/render/diffs.py


def sides_spec(data: list[dict[str, Any]], *, metric: str, title: str, order: list[str] | None = None,
               number_format: str = ",.2f") -> dict[str, Any]:
    sort = {"sort": order} if order else {}
    chart = alt.Chart(alt.Data(values=data)).mark_tick(thickness=2).encode(
        x=alt.X("percent:Q", title=f"{metric_label(metric)}, % of side a's mean", scale=alt.Scale(zero=False)),
        y=alt.Y("cell:N", title=None, axis=alt.Axis(labelLimit=400), **sort),
        yOffset=alt.YOffset("side:N"),
        color=alt.Color("side:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=400),
                        scale=alt.Scale(range=SIDES)),
        tooltip=[alt.Tooltip("cell:N"), alt.Tooltip("side:N"), alt.Tooltip(f"{metric}:Q", format=number_format),
                 alt.Tooltip("percent:Q", format=".2f", title="% of a's mean")],
    ).properties(width=PANEL_WIDTH)
    return finish(chart, title)


def ratio_spec(data: list[dict[str, Any]], *, title: str, level: str, order: list[str] | None = None) -> dict[str, Any]:
    sort = {"sort": order} if order else {}
    verdicts = {"regressed": REGRESSED, "improved": IMPROVED, "unchanged": UNCHANGED, "inconclusive": INCONCLUSIVE}
    present = {row["verdict"] for row in data}
    base = alt.Chart(alt.Data(values=data))
    bars = base.mark_rule().encode(x=alt.X("ratio_ci_low:Q", title=f"b / a ({level} CI)", scale=alt.Scale(zero=False)),
                                   x2=alt.X2("ratio_ci_high:Q"),
                                   y=alt.Y("cell:N", title=None, axis=alt.Axis(labelLimit=340), **sort))
    points = base.mark_point(filled=True, size=60).encode(
        x=alt.X("ratio:Q"), y=alt.Y("cell:N", **sort),
        color=alt.Color("verdict:N", title="verdict", legend=alt.Legend(values=[v for v in verdicts if v in present]),
                        scale=alt.Scale(domain=list(verdicts), range=list(verdicts.values()))),
        tooltip=[alt.Tooltip("cell:N"), alt.Tooltip("ratio:Q", format=".4f"), alt.Tooltip("verdict:N")])
    one = alt.Chart(alt.Data(values=[{"one": 1.0}])).mark_rule(strokeDash=[4, 4]).encode(x=alt.X("one:Q"))
    chart = (bars + points + one).properties(width=PANEL_WIDTH)
    return finish(chart, title)


# sparkreport/render/memory.py


def budget_spec(data: list[dict[str, Any]], parts: tuple[str, ...], *, title: str) -> dict[str, Any]:
    chart = alt.Chart(alt.Data(values=data)).mark_bar().encode(
        y=alt.Y("arm:N", title=None, sort=None, axis=alt.Axis(labelLimit=360)),
        x=alt.X("sum(gib):Q", title="GiB of the memory pool (the whole bar)", stack="zero"),
        color=alt.Color("part:N", title="budget", legend=alt.Legend(orient="bottom"),
                        scale=alt.Scale(domain=list(parts), range=[BUDGET[part] for part in parts])),
        order=alt.Order("order:Q"),
        row=alt.Row("campaign:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left", labelAnchor="start",
                                                                labelFontWeight="bold", labelLimit=600,
                                                                labelOrient="top")),
        tooltip=[alt.Tooltip("arm:N"), alt.Tooltip("part:N"), alt.Tooltip("gib:Q", format=".2f", title="GiB")],
    ).properties(width=PANEL_WIDTH).resolve_scale(y="independent")
    return finish(chart, title)


# sparkreport/render/runs_index.py


def samples_spec(data: list[dict[str, Any]], *, title: str) -> dict[str, Any]:
    chart = alt.Chart(inline(data)).mark_line(strokeWidth=1).encode(
        x=alt.X("minute:Q", title="elapsed (min)"), y=alt.Y("value:Q", title=None, scale=alt.Scale(zero=False)),
        row=alt.Row("series:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left")),
        color=alt.Color("series:N", legend=None),
    ).properties(width=PANEL_WIDTH, height=70).resolve_scale(y="independent")
    return finish(chart, title)
