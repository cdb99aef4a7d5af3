"""Charts: Vega-Lite specs (embedded by the site) and static SVG fallbacks.

Every chart is built from a small, already-aggregated frame: per-run values (a handful of
runs per arm) or per-arm statistics. Altair's 5000-row limit is respected, never switched
off: a per-run chart whose data would pass it is drawn from per-arm quantiles instead.

The specs are written directly as plain dicts (each chart's ``*_spec`` function), not through
Altair: importing it cost each page worker ~0.26 s a build, and its objects ~35 ms a chart.
``tests/test_charts.py`` checks every one equals, key for key, what Altair built from the same
data (``tests/altair_reference.py``). vl-convert is imported inside :func:`to_svg`, so the
executor never needs it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkreport import metrics as metric_catalog
from sparkreport.figures import is_missing
from sparkreport.names import level_order, name_order

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    import pandas as pd

#: Altair's own limit on rows embedded in one chart; we aggregate rather than lift it.
MAX_ROWS = 5000
#: Width of one chart panel in pixels (fits Material's content column).
PANEL_WIDTH = 420
PANEL_HEIGHT = 220
#: The Vega-Lite version the specs target (what Altair emits and the site vendors).
VEGALITE_VERSION = "6.4"
#: Every spec's ``$schema`` (Altair's ``SCHEMA_URL``; tested equal).
SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v6.4.1.json"

PUBLISHED = "published figures"
MEASURED = "per-run data"

#: A verdict's colour on every chart of the site, fixed here rather than left to the order in
#: which a chart's data lists its verdicts (a diff's ratio chart drew `regressed` blue and
#: `unchanged` orange): Okabe and Ito's palette, told apart with any colour vision. A regression
#: is vermillion, an improvement bluish green, no change blue, and what was not decided a light
#: grey (a darker one reads as the green to a deuteranope: ``tests/test_charts.py`` checks them).
#: `equivalent` (a comparison's TOST inside its margin) is `unchanged`'s blue, and so are the
#: equivalence bands; `higher` and `lower` (a comparison's direction, better or worse by metric)
#: take the two colours that read as neither. The history chart's change points are a
#: regression's or an improvement's colour.
VERDICT_COLOURS = {"regressed": "#D55E00", "improved": "#009E73", "unchanged": "#0072B2", "inconclusive": "#BBBBBB",
                   "equivalent": "#0072B2", "higher": "#CC79A7", "lower": "#E69F00"}
#: What a chart tells apart by name, not by verdict — a History chart's series — in colours
#: apart from the diff verdicts' (Vega's own drew an orange series beside the vermillion rule of
#: a regression, and its blue was `unchanged`'s): Okabe and Ito's sky blue, orange and yellow
#: (those the diff verdicts leave, less black, lost on the dark scheme's background, and reddish
#: purple, too close to `inconclusive`'s grey for a deuteranope), a violet and Paul Tol's purple.
#: Orange, a comparison's `lower` on the Results charts (which no History chart draws), comes
#: fourth, so that a chart of three series shows none beside a regression's vermillion. Each stays
#: as far from every diff verdict's colour, and from the others, with any colour vision, as the
#: verdicts are from each other (``tests/test_charts.py``); past five series the colours come
#: again, each round of five in a line of its own (:data:`SERIES_DASHES`).
SERIES_COLOURS = ("#56B4E9", "#9933FF", "#AA3377", "#E69F00", "#F0E442")
#: The lines of a History chart's series by name (each its Vega-Lite ``strokeDash``), a round of
#: the five :data:`SERIES_COLOURS` in each, in this order. Past five series the sixth was drawn as
#: the first, a line no legend could tell apart; now no two of up to twenty series are drawn
#: alike, and the legend draws each series' line, not a dot. A chart of five or fewer draws solid
#: lines and dots, as before; past twenty the lines repeat, the legend and the tooltips naming
#: each. None is the change points' dash (4, 4), and those are upright, in a verdict's colour.
SERIES_DASHES = {"solid": (1, 0), "dashed": (6, 3), "dotted": (2, 2), "dash-dot": (10, 3, 2, 3)}
#: A diff's two sides on its chart of both sides' runs: the first two series colours, side a sky
#: blue and side b violet, a light and a strong one (Vega's blue for side a was `unchanged`'s).
SIDE_COLOURS = SERIES_COLOURS[:2]
#: An environment's colour on the per-run, means and memory-scatter charts (or a level of the
#: factor a comparison contrasts, e.g. the page-cache state, where the Results charts draw those):
#: Vega's own drew the first of them in a blue 1 CIELAB unit from `unchanged`'s to a tritanope,
#: the colour of the equivalence band behind the means, and the second in an orange 4 units from
#: `lower`'s. A violet, a brown, Okabe and Ito's sky blue, Paul Tol's
#: purple and sand: each stays as far from every verdict's colour — the diff verdicts, the band,
#: and a comparison's `higher` and `lower`, which a page draws beside them — and from the others,
#: with any colour vision, as the verdicts are from each other (``tests/test_charts.py``); the
#: first two read on the light scheme's background and on the dark one's, the sky blue (beside the
#: band) comes third and the sand, faint on white, last. A site gives its environments their
#: colours once (:func:`environment_colours`, the baseline first), so that an environment has the
#: same colour on every chart given them; past five the colours repeat, the axis, legend and
#: tooltips naming each.
ENVIRONMENT_COLOURS = ("#9933FF", "#996633", "#56B4E9", "#AA3377", "#DDCC77")
#: The parts of a memory pool on the Memory page's budget chart, drawn as parts of one whole: the
#: memory in use before the KV cache (weights, activations, the runtime) a dark green, the KV cache
#: the same green lighter, and what is left free a light grey, the track the two fill. Vega's own
#: drew them blue, orange and red: the first the blue of `unchanged` to a tritanope (1 CIELAB
#: unit), the second 4 units from `lower`'s orange to a deuteranope, and the free memory red, an
#: alarm. Green is the hue the environments on the scatter beside it leave, and the grey is lighter
#: than `inconclusive`'s: each stays as far from the others, from every verdict's colour and from
#: every environment's, with any colour vision, as the verdicts are from each other
#: (``tests/test_charts.py``). The greens read on the light scheme's background and on the dark
#: one's, and so does the grey, which ends each bar at the pool. The spec's scale fixes the whole
#: domain in this order (the stack's and the legend's), so a part has its colour on any page.
BUDGET_COLOURS = {"before the KV cache": "#426746", "KV cache": "#84C58B", "left free": "#E6E6E6"}
#: The shaded band of ± the equivalence margin (the forest and means charts).
EQUIVALENCE_BAND = VERDICT_COLOURS["equivalent"]
#: The verdicts a cell with a ratio can have on a diff (``sparkreport.analysis.diff``): the whole
#: domain of the diff pages' colour by verdict, in the order of their legends.
RATIO_VERDICTS = ("regressed", "improved", "unchanged", "inconclusive")


@dataclass(frozen=True)
class ChartSpec:
    """One chart: a file-safe name, a title, alt text, the Vega-Lite spec and its row count."""

    name: str
    title: str
    description: str
    spec: dict[str, Any] = field(repr=False)
    rows: int
    #: The spec as written (:func:`~sparkreport.jsontext.spec_json`), when already known (a chart kept in a cache).
    text: str | None = field(default=None, repr=False, compare=False)


def metric_title(metric: str) -> str:
    """'Peak memory (GiB)', 'Time to first token (mean, ms)' — the axis title of a metric."""
    entry = metric_catalog.lookup(metric)
    return metric_catalog.with_unit(entry.label, entry.unit) if entry else metric


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Plain JSON-safe rows (pandas NA → None)."""
    from sparkreport.dataset import frame_records

    return [{str(key): _clean_cell(value) for key, value in record.items()}
            for record in frame_records(frame.astype(object))]


def top_level(body: dict[str, Any], **properties: Any) -> dict[str, Any]:
    """A chart's spec as Altair wrote it: its default view config, ``body`` (a unit's data, mark
    and encoding, or a list of layers and the data they share), the ``properties`` (height,
    resolve, title, width) in alphabetical order, and the schema URL."""
    return {"config": {"view": {"continuousWidth": 300, "continuousHeight": 300}}, **body,
            **dict(sorted(properties.items())), "$schema": SCHEMA_URL}


#: What a drawn chart adds to its plot, in pixels (measured in Chromium on the site's charts):
#: the x axis with its title, the chart's title, a facet panel's heading and the gap between
#: panels, a row of a legend under the plot; a character of an axis label or a legend entry,
#: a legend's symbol and padding, the view's padding.
_AXIS_PX, _TITLE_PX, _HEADER_PX, _PANEL_GAP_PX, _LEGEND_ROW_PX = 40, 24, 22, 20, 18
_CHAR_PX, _LEGEND_PAD_PX, _PAD_PX = 7, 40, 20


def drawn_size(spec: dict[str, Any]) -> tuple[int, int]:
    """About how wide and tall ``spec`` is once drawn at its own size, in pixels (the site's
    charts within ~10%): a placeholder keeps that shape until the chart is drawn, so the text
    below does not move as the charts above it are drawn (a drawing wider than the page's
    column is scaled down whole, and so is the placeholder)."""
    if "vconcat" in spec:  # panels one under the other (the forest chart over several campaigns)
        panels = spec["vconcat"]
        width = max(drawn_size(panel)[0] for panel in panels)
        # Flush bounds: the spacing runs from plot to plot, a panel's axis and the next one's title in it.
        height = sum(_plot_height(panel, []) for panel in panels) + int(spec.get("spacing", 20)) * (len(panels) - 1)
        return width, height + _AXIS_PX + _HEADER_PX + (_TITLE_PX if spec.get("title") else 0)
    data = (spec.get("data") or {}).get("values") or []
    encoding = spec.get("encoding") or {}
    facet = (spec.get("facet") or {}).get("row") or encoding.get("row")
    inner = spec.get("spec", spec)
    height = _AXIS_PX + (_TITLE_PX if spec.get("title") else 0)
    width = _PAD_PX
    if facet is not None:
        groups: dict[Any, list[dict[str, Any]]] = {}
        for row in data:
            groups.setdefault(row.get(facet["field"]), []).append(row)
        header = facet.get("header") or {}
        on_top = header.get("labelOrient") == "top"  # else the panels' names are on their left
        panels = [_plot_height(inner, rows) + (_HEADER_PX if on_top else 0) for rows in groups.values()] or [0]
        height += sum(panels) + _PANEL_GAP_PX * (len(panels) - 1)
        if not on_top:
            longest = max((len(str(name)) for name in groups), default=0)
            width += min(int(header.get("labelLimit", 200)), _CHAR_PX * longest) + 10
    else:
        height += _plot_height(inner, data)
    below, beside = _legend(inner, data)
    height += below * _LEGEND_ROW_PX
    plot_width = inner.get("width") if isinstance(inner.get("width"), int | float) else 300
    return width + int(plot_width) + _y_labels_width(inner, data) + beside, height


def _units(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [spec, *spec.get("layer", [])]


def _rows(spec: dict[str, Any], data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``data`` and the layers' own data."""
    return [*data, *(r for u in spec.get("layer", []) for r in ((u.get("data") or {}).get("values") or []))]


def _y_values(spec: dict[str, Any], data: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, set[Any]]:
    """The y channel and its values (in ``data`` and the layers' own data)."""
    y = next((u["encoding"]["y"] for u in _units(spec) if "y" in (u.get("encoding") or {})), None)
    if y is None or "field" not in y:
        return y, set()
    return y, {r.get(y["field"]) for r in _rows(spec, data) if y["field"] in r}


def _offsets(spec: dict[str, Any], data: list[dict[str, Any]]) -> int:
    """How many bands a discrete ``yOffset`` splits each row into (1 without one)."""
    offset = next((u["encoding"]["yOffset"] for u in _units(spec) if "yOffset" in (u.get("encoding") or {})), None)
    if offset is None or "field" not in offset or offset.get("type") == "quantitative":
        return 1
    return max(1, len({r.get(offset["field"]) for r in data if offset["field"] in r}))


def _plot_height(spec: dict[str, Any], data: list[dict[str, Any]]) -> int:
    """The plot's own height: a fixed height, else a step per value of a discrete y (Vega-Lite's
    default step is 20), else Vega-Lite's default of 300 for a continuous y."""
    height = spec.get("height")
    if isinstance(height, int | float):
        return int(height)
    y, values = _y_values(spec, data)
    if y is None:
        return 20
    if y.get("type") == "quantitative" or "field" not in y:
        return 300
    step = height.get("step", 20) if isinstance(height, dict) else 20
    return int(step * _offsets(spec, data) * max(1, len(values)))  # a step per value (and offset)


def _y_labels_width(spec: dict[str, Any], data: list[dict[str, Any]]) -> int:
    """The y axis' labels: the longest, cut at its ``labelLimit`` (Vega's default 180 px)."""
    y, values = _y_values(spec, data)
    if y is None:
        return 0
    if y.get("type") == "quantitative" or "field" not in y:
        return 50
    limit = int((y.get("axis") or {}).get("labelLimit", 180))
    return min(limit, _CHAR_PX * max((len(str(v)) for v in values), default=0)) + 10


def _legend(spec: dict[str, Any], data: list[dict[str, Any]]) -> tuple[int, int]:
    """A colour legend's rows under the plot (``orient: bottom``, its title row too) and its
    width beside it (the default, on the right); none where the legend is off."""
    rows = _rows(spec, data)
    for unit in _units(spec):
        colour = (unit.get("encoding") or {}).get("color") or {}
        if "field" not in colour or colour.get("legend", {}) is None:
            continue
        legend = colour.get("legend") or {}
        entries = {str(r.get(colour["field"])) for r in rows if colour["field"] in r}
        shown = _legend_values(colour)
        if shown is not None:
            entries = {str(v) for v in shown}
        if legend.get("orient") == "bottom":
            return -(-len(entries) // int(legend.get("columns") or 1)) + 1, 0
        longest = max([len(str(colour.get("title") or colour["field"])), *(len(e) for e in entries)])
        return 0, _CHAR_PX * longest + _LEGEND_PAD_PX
    return 0, 0


def mark(kind: str, **options: Any) -> dict[str, Any]:
    """A mark as Altair writes ``mark_point(size=60, filled=True)``: its type, then its options
    in alphabetical order."""
    return {"type": kind, **dict(sorted(options.items()))}


def _field(name: str, kind: str, options: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted({"field": name, "type": kind, **options}.items()))


def quantitative(name: str, **options: Any) -> dict[str, Any]:
    """A quantitative channel as Altair writes ``alt.X("mean:Q", title=…)``: ``{"field": "mean",
    "title": …, "type": "quantitative"}``, in alphabetical order (``sum(gib)`` is written
    ``aggregate="sum"``)."""
    return _field(name, "quantitative", options)


def nominal(name: str, **options: Any) -> dict[str, Any]:
    """A nominal channel (``"arm:N"``), as :func:`quantitative`."""
    return _field(name, "nominal", options)


def ordinal(name: str, **options: Any) -> dict[str, Any]:
    """An ordinal channel (``"version:O"``), as :func:`quantitative`."""
    return _field(name, "ordinal", options)


def environment_colours(environments: Iterable[str], baseline: str | None = None) -> dict[str, str]:
    """Each of ``environments`` → its colour, in the order the pages list them
    (:func:`~sparkreport.names.level_order`: ``baseline``, where among them, first, then the others
    by name), each the next of :data:`ENVIRONMENT_COLOURS` (repeating past five). A site's, given
    to every chart that colours by environment, keeps an environment's colour whatever else a
    chart shows: Vega gave each chart's environments its palette's colours in the order of their
    names, so that `native` was the first colour on a chart of it alone and the second beside
    `container`."""
    names = sorted({str(name) for name in environments}, key=lambda name: level_order(name, baseline))
    return {name: ENVIRONMENT_COLOURS[i % len(ENVIRONMENT_COLOURS)] for i, name in enumerate(names)}


def environment_colour(present: Iterable[Any], colours: Mapping[str, str] | None = None,
                       **options: Any) -> dict[str, Any]:
    """The colour channel of a chart coloured by environment (its ``environment`` field): each
    environment ``present`` in the chart in its colour in ``colours`` (a site's
    :func:`environment_colours`), one missing from it (every one, without ``colours``) in the
    colours after them, by name; the scale's domain is those present, in that order (what a
    legend lists). ``options``: the channel's others (``legend``, ``title``)."""
    shown = {str(value) for value in present}
    known = {name: colour for name, colour in (colours or {}).items() if name in shown}
    start = len(colours or {})
    for i, name in enumerate(sorted(shown - set(known), key=lambda name: level_order(name, None))):
        known[name] = ENVIRONMENT_COLOURS[(start + i) % len(ENVIRONMENT_COLOURS)]
    return nominal("environment", **options, scale={"domain": list(known), "range": list(known.values())})


def series_styles(count: int) -> list[tuple[str, tuple[int, ...]]]:
    """The colour and the dash of each of ``count`` series of a History chart, in the order of
    its legend: the five :data:`SERIES_COLOURS` in turn, a round of them in each of the
    :data:`SERIES_DASHES` (past twenty, from the first again)."""
    colours, dashes = len(SERIES_COLOURS), list(SERIES_DASHES.values())
    return [(SERIES_COLOURS[i % colours], dashes[i // colours % len(dashes)]) for i in range(count)]


def verdict_colour(verdicts: Sequence[str], present: Iterable[str], *,
                   names: dict[str, str] | None = None, **legend: Any) -> dict[str, Any]:
    """The colour channel of a chart coloured by verdict: the scale's domain is every one of
    ``verdicts`` (as ``names`` writes them in the data, where given), each in its
    :data:`VERDICT_COLOURS` colour — so a chart showing only `unchanged` draws it in
    `unchanged`'s colour — and the legend lists those ``present`` in the data, in that order
    (``legend``: its other properties)."""
    shown = set(present)
    domain = [(names or {}).get(v, v) for v in verdicts]
    return nominal("verdict", legend=dict(sorted({**legend, "values": [v for v in domain if v in shown]}.items())),
                   scale={"domain": domain, "range": [VERDICT_COLOURS[v] for v in verdicts]}, title="verdict")


def _rows_panel(layers: list[dict[str, Any]], title: str, data: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A layered spec of one row per arm, as Altair writes ``alt.layer(...).properties(width=PANEL_WIDTH,
    height=alt.Step(46), title=…)``; ``data``: the rows every layer shares (Altair lifts them
    out of the layers)."""
    body: dict[str, Any] = {"layer": layers, **({"data": {"values": data}} if data is not None else {})}
    return top_level(body, height={"step": 46}, title=title, width=PANEL_WIDTH)


def per_run_chart(runs: pd.DataFrame, metric: str, *, name: str, title: str,
                  colours: Mapping[str, str] | None = None, order: Sequence[str] = (),
                  places: int | None = None) -> ChartSpec | None:
    """Per-run values per arm: a box per arm with every run drawn as a point, in its
    environment's colour (``colours``: a site's :func:`environment_colours`), the arms top to
    bottom in ``order`` (:func:`arm_order`: the page's, its statistics' rows).

    ``runs`` holds one row per run with ``environment``, ``run_id``, ``iteration`` and the
    metric column, plus optionally ``arm`` (the row's label, "campaign · environment" where a page
    spans campaigns; else the environment) and ``included`` (excluded runs are drawn hollow).
    Returns None when no run reports the metric. Above :data:`MAX_ROWS` runs the chart shows
    per-arm quantiles instead of points. ``places``: the decimals of the metric's table on the
    page (the precision rule's; None: the catalog's), which the tooltips print the values with.
    """
    from sparkreport.figures import digits_for
    from sparkreport.render.precision import tooltip_format

    if metric not in runs.columns:
        return None
    frame = None  # the runs as a frame: only above MAX_ROWS, where quantiles are drawn
    read = _per_run_rows(runs, metric)
    if read is None:  # an arm that is not text, an `included` that is not a boolean: made so
        frame = runs[runs[metric].notna()].copy()
        if frame.empty:
            return None
        frame["included"] = frame["included"].astype(bool) if "included" in frame else True
        frame["arm"] = frame["arm"].astype(str) if "arm" in frame else frame["environment"].astype(str)
        if len(frame) <= MAX_ROWS:
            read = _per_run_rows(frame, metric)
            if read is None:
                return None  # (values that are not numbers, columns named twice: nothing to draw)
            frame = None
    if read is not None:
        data, values = read
        if not data:
            return None
    else:
        assert frame is not None
        values = [float(value) for value in frame[metric]]
    note = above_zero_note(min(values), max(values))
    axis = metric_title(metric) + note
    number = tooltip_format(values, digits_for(metric) if places is None else places)
    if frame is not None:
        return _quantile_chart(frame, metric, name=name, title=title, axis=axis, colours=colours, zero=not note,
                               order=order, number_format=number)
    description = (f"{axis} of every run, one row per environment; boxes span the quartiles of "
                   "the included runs.")
    return ChartSpec(name=name, title=title, description=description, rows=len(data),
                     spec=per_run_spec(data, axis=axis, title=title, colours=colours, zero=not note, order=order,
                                       number_format=number))


def _per_run_rows(runs: pd.DataFrame, metric: str) -> tuple[list[dict[str, Any]], list[float]] | None:
    """:func:`per_run_chart`'s rows — each run that reports the metric: its arm (``arm``, else its
    environment), environment, id, iteration, status (included or excluded), jitter (its place
    among its arm's runs, modulo 7, over 6: the same spread on every render) and value, cleaned
    as every chart's cells are (:func:`_clean_cell`) — and the metric's values, read a column at a
    time as Python lists (pandas steps on ~100 rows were ~0.1 s of a model page's five charts).
    None for more than :data:`MAX_ROWS` runs (quantiles instead of points), a column missing or
    named twice, an ``included`` that is not a boolean, an arm that is not text, a value that is
    not a number."""
    import pandas as pd

    wanted = ["environment", "run_id", "iteration", metric]
    if not runs.columns.is_unique or any(column not in runs.columns for column in wanted):
        return None
    picked = [index for index, value in enumerate(runs[metric].tolist())
              if value is not None and value is not pd.NA and value == value]
    if len(picked) > MAX_ROWS:
        return None

    def column(name: str) -> list[Any]:
        values = runs[name].tolist()
        return [values[index] for index in picked]

    values = column(metric)
    if not all(isinstance(value, float | int) and not isinstance(value, bool) for value in values):
        return None
    arms = column("arm") if "arm" in runs.columns else column("environment")
    included = column("included") if "included" in runs.columns else [True] * len(picked)
    if not all(isinstance(arm, str) for arm in arms) or not all(isinstance(flag, bool) for flag in included):
        return None
    counts: dict[str, int] = {}
    jitter = []
    for arm in arms:  # each arm's runs in order, as groupby(...).cumcount() % 7 / 6
        seen = counts.get(arm, 0)
        counts[arm] = seen + 1
        jitter.append(seen % 7 / 6)
    columns = {"arm": arms, "environment": column("environment"), "run_id": column("run_id"),
               "iteration": column("iteration"), "status": ["included" if flag else "excluded" for flag in included],
               "jitter": jitter, "value": values}
    cleaned = {key: [_clean_cell(value) for value in cells] for key, cells in columns.items()}
    keys = list(cleaned)
    return [dict(zip(keys, row, strict=True)) for row in zip(*cleaned.values(), strict=True)], \
        [float(value) for value in values]


def _clean_cell(value: Any) -> Any:
    """One cell of a chart's rows: a number finite or None, a missing value (None, NA, NaN, NaT)
    None, text and booleans as they are, anything else as text; a numpy scalar as Python's."""
    import numpy as np
    import pandas as pd

    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.generic):  # (an object column's numpy scalar: Python's, as to_dict gives it)
        value = value.item()
    if isinstance(value, float | int) and not isinstance(value, bool):
        return _finite(value)
    if not isinstance(value, str) and value != value:
        return None
    return value if isinstance(value, str | bool) else str(value)


def arm_order(data: Iterable[Mapping[str, Any]], order: Sequence[str] = ()) -> list[str]:
    """The arms of ``data`` (its rows' ``arm``) as a chart draws them top to bottom: those in
    ``order`` (the page's, as its tables list them: the baseline first) in that order, any other
    after them by name (:func:`~sparkreport.names.level_order`) — the y channel's ``sort``, where
    Vega's own would put them in the order of their names and the baseline anywhere."""
    present = {str(row["arm"]) for row in data}
    first = [arm for arm in dict.fromkeys(order) if arm in present]
    return first + sorted(present - set(first), key=lambda arm: level_order(arm, None))


def above_zero_note(low: float, high: float) -> str:
    """" — axis does not start at 0" for an axis of values from ``low`` to ``high`` that is drawn
    without zero (``scale.zero: false``), which it is when the axis surely starts above 0: Vega
    rounds a domain out to round ticks (``nice``, by a step that depends on the chart's width), so
    values from 17 to 157 would be drawn on 0–160, and a caption saying otherwise would be wrong.
    A step is at most ~0.7 of the span (two ticks or more), so the axis starts above 0 whenever
    ``low`` is at least the span (``high`` ≤ 2 × ``low``). Else "", and the chart draws its axis
    from 0 (``zero: true``): an axis that may or may not start at 0, unsaid, had a reader guess
    (values from 2 000 to 10 000 tok/s were drawn from 2 000, without a word)."""
    return " — axis does not start at 0" if low > 0 and high <= 2 * low else ""


def _one_kind_unlisted(data: list[dict[str, Any]], field: str) -> dict[str, Any]:
    """``{"legend": None}`` when every row of ``data`` has the same ``field`` (a legend of one
    shape, or one listing "excluded" where no run was, says nothing), else nothing."""
    return {"legend": None} if len({row.get(field) for row in data}) <= 1 else {}


def per_run_spec(data: list[dict[str, Any]], *, axis: str, title: str,
                 colours: Mapping[str, str] | None = None, zero: bool = False,
                 order: Sequence[str] = (), number_format: str = ",.2f") -> dict[str, Any]:
    """The per-run chart's Vega-Lite spec, written directly as :func:`means_spec` is (the second
    most frequent chart); ``tests/test_charts.py`` checks it equals Altair's: a box per arm over
    the included runs, and every run as a point, excluded ones as crosses, each arm in its
    environment's colour (:func:`environment_colour`), the arms in :func:`arm_order`; a run's
    value in its tooltip with ``number_format`` (:func:`~sparkreport.render.precision.tooltip_format`)."""
    arms = arm_order(data, order)

    def y() -> dict[str, Any]:
        return {"field": "arm", "sort": arms, "title": None, "type": "nominal"}

    present = {row["environment"] for row in data}

    def colour() -> dict[str, Any]:
        return environment_colour(present, colours, legend=None)

    box = {"mark": {"type": "boxplot", "extent": "min-max", "median": {"color": "#333"}, "opacity": 0.35, "size": 22},
           "encoding": {"color": colour(),
                        "x": {"field": "value", "scale": {"zero": zero}, "title": axis, "type": "quantitative"},
                        "y": y()},
           "transform": [{"filter": "(datum.status === 'included')"}]}
    points = {
        "mark": {"type": "point", "filled": True, "opacity": 0.9, "size": 45},
        "encoding": {
            "color": colour(),
            "shape": {"field": "status", **_one_kind_unlisted(data, "status"),
                      "scale": {"domain": ["included", "excluded"], "range": ["circle", "cross"]},
                      "title": "run", "type": "nominal"},
            "tooltip": [{"field": "run_id", "title": "run", "type": "nominal"},
                        {"field": "iteration", "type": "quantitative"},
                        {"field": "value", "format": number_format, "title": axis, "type": "quantitative"},
                        {"field": "status", "type": "nominal"}],
            "x": {"field": "value", "type": "quantitative"}, "y": y(),
            "yOffset": {"field": "jitter", "scale": {"domain": [-1, 2]}, "title": None, "type": "quantitative"}}}
    return _rows_panel([box, points], title, data)


def _quantile_chart(frame: pd.DataFrame, metric: str, *, name: str, title: str, axis: str,
                    colours: Mapping[str, str] | None, zero: bool = False, order: Sequence[str] = (),
                    number_format: str = ",.2f") -> ChartSpec:
    """The per-run chart for arms too large to embed: min–max rule and quartile bar per arm."""
    import pandas as pd

    included = frame[frame["included"]]
    grouped = included.groupby(["arm", "environment"])[metric]
    summary = pd.DataFrame({
        name: grouped.quantile(q) for name, q in
        (("min", 0.0), ("q1", 0.25), ("median", 0.5), ("q3", 0.75), ("max", 1.0))
    })
    summary["n"] = grouped.size()
    data = _records(summary.reset_index())
    description = f"{axis} per environment: range, quartiles and median of {len(included)} runs."
    return ChartSpec(name=name, title=title, description=description, rows=len(data),
                     spec=quantile_spec(data, axis=axis, title=title, colours=colours, zero=zero, order=order,
                                        number_format=number_format))


def quantile_spec(data: list[dict[str, Any]], *, axis: str, title: str,
                  colours: Mapping[str, str] | None = None, zero: bool = False,
                  order: Sequence[str] = (), number_format: str = ",.2f") -> dict[str, Any]:
    """The quantile chart's spec: per arm in ``data`` (``arm, environment, min, q1, median, q3,
    max, n``) a rule from min to max, a bar over the quartiles and a tick at the median, in its
    environment's colour, the arms in :func:`arm_order`."""
    present = {row["environment"] for row in data}
    arms = arm_order(data, order)

    def layer(kind: str, encoding: dict[str, Any], **options: Any) -> dict[str, Any]:
        return {"mark": mark(kind, **options),
                "encoding": {"color": environment_colour(present, colours, legend=None), **encoding,
                             "y": nominal("arm", sort=arms, title=None)}}

    return _rows_panel([
        layer("rule", {"x": quantitative("min", scale={"zero": zero}, title=axis), "x2": {"field": "max"}}),
        layer("bar", {"x": quantitative("q1"), "x2": {"field": "q3"}}, opacity=0.5, size=18),
        layer("tick", {"tooltip": [quantitative("n"), quantitative("median", format=number_format)],
                       "x": quantitative("median")},
              color="#333", size=18),
    ], title, data)


#: Row labels of the means charts ("native · Llama-3-8B shape (random weights)") are cut only past this.
LABEL_LIMIT_PX = 340


def means_chart(stats: pd.DataFrame, metric: str, *, name: str, title: str,
                confidence: float = 0.95, band: tuple[float, float] | None = None,
                colours: Mapping[str, str] | None = None, places: int | None = None) -> ChartSpec | None:
    """Arm means with their confidence intervals as error bars, one row per arm, in its
    environment's colour (``colours``: a site's :func:`environment_colours`).

    ``stats`` is shaped like ``arm_stats`` (``environment, metric, n, mean, ci_low, ci_high,
    source``), with optionally ``arm``, the row's label (else its environment);
    published-summary arms are marked as published figures. None when empty.
    ``band`` (low, high) draws the baseline's equivalence band. The axis does not start at zero
    (the intervals would vanish), and its title says so. The tooltips print a mean and its
    interval's ends with the decimals of the metric's table (``places``; None: the precision
    rule's over ``stats``' SDs and half-widths, as the table of these arms has them).

    The most frequent chart of a site (every campaign page and model page has several), so its
    Vega-Lite spec is written directly rather than through Altair (~35 ms a chart, most of it
    Altair copying its objects); ``tests/test_charts.py`` checks it equals Altair's spec of the
    same layers.
    """
    from sparkreport.dataset import frame_rows

    return means_chart_of_rows(frame_rows(stats[(stats["metric"] == metric) & stats["mean"].notna()]), metric,
                               name=name, title=title, confidence=confidence, band=band, colours=colours,
                               places=places)


def means_chart_of_rows(stats: Sequence[Mapping[str, Any]], metric: str, *, name: str, title: str,
                        confidence: float = 0.95, band: tuple[float, float] | None = None,
                        colours: Mapping[str, str] | None = None, places: int | None = None) -> ChartSpec | None:
    """:func:`means_chart` of statistics rows as :func:`~sparkreport.dataset.frame_rows` gives
    them (a model page has each metric's arms as rows already: no frame is cut and converted
    again for its chart)."""
    from sparkreport.config import confidence_label
    from sparkreport.render.precision import table_places, tooltip_format

    shown = [row for row in stats if row["metric"] == metric and not is_missing(row["mean"])]
    if not shown:
        return None
    data = []
    for row in shown:
        published = row["source"] == "published"
        label = str(row["arm"] if "arm" in row else row["environment"])
        data.append({"arm": label + (" (published)" if published else ""),
                     "environment": _clean_cell(row["environment"]), "origin": PUBLISHED if published else MEASURED,
                     **{key: _clean_cell(row[key]) for key in ("n", "mean", "ci_low", "ci_high")}})
    count = table_places(shown, metric) if places is None else places
    number = tooltip_format([row[key] for row in data for key in ("mean", "ci_low", "ci_high")], count)

    level = confidence_label(confidence)
    with_ci = [row for row in data if row["ci_low"] is not None and row["ci_high"] is not None]
    lows = [row["ci_low"] if row["ci_low"] is not None else row["mean"] for row in data]
    lows += [band[0]] if band else []
    highs = [row["ci_high"] if row["ci_high"] is not None else row["mean"] for row in data]
    highs += [band[1]] if band else []
    note = above_zero_note(min(lows), max(highs)) if lows else ""
    axis = metric_title(metric) + note
    spec = means_spec(data, with_ci, axis=axis, level=level, band=band, title=title, colours=colours, zero=not note,
                      number_format=number)
    description = f"{axis}: mean per environment with its {level} confidence interval where known."
    if band is not None:
        description += " The shaded band is the baseline mean ± the equivalence margin."
    return ChartSpec(name=name, title=title, description=description, spec=spec, rows=len(data))


def means_spec(data: list[dict[str, Any]], with_ci: list[dict[str, Any]], *, axis: str, level: str,
               band: tuple[float, float] | None, title: str,
               colours: Mapping[str, str] | None = None, zero: bool = False,
               number_format: str = ",.2f") -> dict[str, Any]:
    """The means chart's Vega-Lite spec: the band (if any), the error bars of the arms with an
    interval (if any), then the points, one row per arm in ``data``'s order, each in its
    environment's colour (:func:`environment_colour`; the error bars' scale is the points')."""
    present = {row["environment"] for row in data}

    def y() -> dict[str, Any]:
        return {"axis": {"labelLimit": LABEL_LIMIT_PX}, "field": "arm", "sort": [row["arm"] for row in data],
                "title": None, "type": "nominal"}

    layers: list[dict[str, Any]] = []
    if band is not None:
        layers.append({"data": {"values": [{"lo": band[0], "hi": band[1]}]},
                       "mark": {"type": "rect", "color": EQUIVALENCE_BAND, "opacity": 0.15},
                       "encoding": {"x": quantitative("lo", title=axis), "x2": {"field": "hi"}}})
    if with_ci:  # an arm published without a spread has no interval: draw its mean alone
        layers.append({"data": {"values": with_ci}, "mark": {"type": "errorbar", "ticks": True},
                       "encoding": {"color": environment_colour(present, colours, legend=None),
                                    "x": quantitative("ci_low", title=axis),
                                    "x2": {"field": "ci_high"}, "y": y()}})
    layers.append({
        "data": {"values": data}, "mark": {"type": "point", "filled": True, "size": 70},
        "encoding": {
            "color": environment_colour(present, colours, legend=None),
            "shape": {"field": "origin", **_one_kind_unlisted(data, "origin"),
                      "scale": {"domain": [MEASURED, PUBLISHED], "range": ["circle", "diamond"]},
                      "title": "source", "type": "nominal"},
            "tooltip": [{"field": "arm", "type": "nominal"}, {"field": "origin", "title": "source", "type": "nominal"},
                        quantitative("n"), quantitative("mean", format=number_format),
                        quantitative("ci_low", format=number_format, title=f"{level} CI low"),
                        quantitative("ci_high", format=number_format, title=f"{level} CI high")],
            "x": quantitative("mean", scale={"zero": zero}, title=axis), "y": y()}})
    if len(layers) == 1:  # as Altair does: a single layer's data moves to the top
        return _rows_panel(layers, title, layers[0].pop("data")["values"])
    return _rows_panel(layers, title)


def memory_scatter(points: pd.DataFrame, *, name: str, title: str, x_metric: str = "pre_kv_memory_gib",
                   fits: Sequence[dict[str, Any]] = (), titles: dict[str, str] | None = None,
                   colours: Mapping[str, str] | None = None) -> ChartSpec | None:
    """KV cache against memory in use before it was allocated (``x_metric``; or against the peak,
    ``peak_memory_gib``): one point per run (or per published arm mean).

    ``points`` has ``model_name, environment, <x_metric>, kv_cache_gib``, ``origin``
    (:data:`MEASURED` or :data:`PUBLISHED`) and, where it spans several, ``campaign``: a panel per
    campaign, headed by its title (``titles``: campaign → title). ``fits``: the derived-identity
    fits (``campaign``, ``fraction``, ``intercept_gib``, ``pool_gib``), each drawn as its line
    across its campaign's points (against memory before the KV cache only: a fit on peak memory is
    not a line in it). None when no point has both figures. Above :data:`MAX_ROWS` points, each arm
    is reduced to its mean. Each environment is in its colour in ``colours`` (a site's
    :func:`environment_colours`).
    """
    if x_metric not in points or "kv_cache_gib" not in points:
        return None
    frame = points[points[x_metric].notna() & points["kv_cache_gib"].notna()].copy()
    if frame.empty:
        return None
    if "origin" not in frame:
        frame["origin"] = MEASURED
    if "campaign" not in frame:
        frame["campaign"] = ""
    frame["campaign"] = frame["campaign"].astype(str)
    keys = ["campaign", "model_name", "environment", "origin"]
    if len(frame) > MAX_ROWS:
        frame = frame.groupby(keys, as_index=False)[[x_metric, "kv_cache_gib"]].mean()
    campaigns = list(dict.fromkeys(frame["campaign"]))
    named = titles or {}
    data = [{**row, "campaign": named.get(row["campaign"], row["campaign"]), "kind": "arm"}
            for row in _records(frame[[*keys, x_metric, "kv_cache_gib"]])]
    lines = 0
    for fit in fits if x_metric == "pre_kv_memory_gib" else ():
        xs = frame.loc[frame["campaign"] == fit["campaign"], x_metric]
        if xs.empty or fit.get("pool_gib") is None:
            continue
        lines += 1
        label = (f"KV cache = {fit['fraction']:.3f} × ({fit['pool_gib']:.2f} GiB − memory before it) "
                 f"{fit['intercept_gib']:+.2f} GiB")
        for x in (float(xs.min()), float(xs.max())):
            data.append({"campaign": named.get(fit["campaign"], fit["campaign"]), "kind": "fit", "fit": label,
                         x_metric: round(x, 3),
                         "kv_cache_gib": round(fit["fraction"] * (fit["pool_gib"] - x) + fit["intercept_gib"], 3)})
    what = "memory in use before it was allocated" if x_metric == "pre_kv_memory_gib" else metric_title(x_metric)
    description = (f"KV cache against {what}, one point per run (published arms: one point "
                   "per arm mean), coloured by environment, shaped by model"
                   + ("; the dashed line is the fitted KV cache = fraction × (pool − memory before it) + c"
                      if lines else "")
                   + ("; a panel per campaign." if len(campaigns) > 1 else "."))
    return ChartSpec(name=name, title=title, description=description,
                     spec=scatter_spec(data, x_metric=x_metric, title=title, panels=len(campaigns) > 1,
                                       colours=colours),
                     rows=len(data))


def scatter_spec(data: list[dict[str, Any]], *, x_metric: str, title: str, panels: bool = False,
                 colours: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The memory scatter's spec: a point per ``kind: arm`` row of ``data`` at (``x_metric``,
    ``kv_cache_gib``), coloured by environment, shaped by model; a dashed line through the two
    ``kind: fit`` rows of a campaign; with ``panels``, a panel per campaign (its own scales), one
    under the other, headed by its title. Panels, not a facet: in a facet, a campaign without a
    fitted line leaves the line's layer empty in its panel, and Vega warns of an infinite extent.
    Each environment in its colour (:func:`environment_colour`), the same in every panel (the
    panels share the scale and its legend)."""
    size = {"height": PANEL_HEIGHT + 80, "width": PANEL_WIDTH + 80}
    present = {row["environment"] for row in data if row["kind"] == "arm"}
    # the models' shapes listed as every page lists models (Vega's own order is by code point)
    models = sorted({str(row["model_name"]) for row in data if row["kind"] == "arm" and "model_name" in row},
                    key=name_order)

    def layers(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _scatter_layers(rows, x_metric, environment_colour(present, colours, title="environment"), models)

    if not panels:
        return top_level({"layer": layers(data), "data": {"values": data}},  # Altair's order
                         title=title, **size)
    shown = []
    for campaign in dict.fromkeys(row["campaign"] for row in data):
        rows = [row for row in data if row["campaign"] == campaign]
        shown.append({"layer": layers(rows), "data": {"values": rows},  # Altair's order
                      "height": size["height"], "title": {"text": campaign, "anchor": "start", "fontSize": 12,
                                                          "frame": "group"}, "width": size["width"]})
    return top_level({"vconcat": shown}, spacing=36, title=title)


def _scatter_layers(data: list[dict[str, Any]], x_metric: str, colour: dict[str, Any],
                    models: list[str]) -> list[dict[str, Any]]:
    """The scatter's points, coloured by ``colour`` and shaped by model (listed in ``models``' order),
    and its fitted line where ``data`` has one."""
    x_title, kv_title = metric_title(x_metric), metric_title("kv_cache_gib")
    x = quantitative(x_metric, scale={"zero": False}, title=x_title)
    y = quantitative("kv_cache_gib", scale={"zero": False}, title=kv_title)
    layers: list[dict[str, Any]] = [{
        "mark": mark("point", filled=True, opacity=0.8, size=60),
        "encoding": {
            "color": colour, "shape": nominal("model_name", sort=models, title="model"),
            "tooltip": [nominal("model_name", title="model"), nominal("environment"), nominal("origin", title="source"),
                        quantitative(x_metric, format=".2f", title=x_title),
                        quantitative("kv_cache_gib", format=".2f", title="KV cache (GiB)")],
            "x": x, "y": y},
        "transform": [{"filter": "datum.kind === 'arm'"}]}]
    if any(row["kind"] == "fit" for row in data):
        layers.append({"mark": mark("line", color="#757575", strokeDash=[5, 4], strokeWidth=1.5),
                       "encoding": {"detail": nominal("campaign"), "tooltip": [nominal("fit", title="fitted")],
                                    "x": x, "y": y},
                       "transform": [{"filter": "datum.kind === 'fit'"}]})
    return layers


#: What the static SVG fallbacks are drawn with on top of a spec's own config: 8 px between an
#: axis's labels as vl-convert measures them. Its text widths are its own estimate, narrower than
#: the sans-serif a browser shows the SVG in, so labels it found apart ran into each other on the
#: page ("2,5402,541", "119.2119.3"); with the margin, its overlap check drops every other label
#: first. (Charts drawn in the browser are measured in the browser's font and need none.)
FALLBACK_CONFIG: dict[str, Any] = {"axis": {"labelSeparation": 8}}


def to_svg(spec: dict[str, Any]) -> str:
    """Render a Vega-Lite spec to a static SVG with vl-convert (the no-JavaScript fallback)."""
    import vl_convert

    version = "v" + VEGALITE_VERSION.replace(".", "_")
    return str(vl_convert.vegalite_to_svg(spec, vl_version=version, config=FALLBACK_CONFIG))


#: What sparkreport-fit.js refits a chart to on a phone, with the script's own constants: the
#: column (a 390 px screen: Material's 358 px column less vega-embed's 38 px menu); an axis
#: label's, an axis title's and the title's character (10 px, bold 11 px and bold 13 px
#: sans-serif, measured in Chromium) and their lines; the share of the column row labels may
#: take beside the plot; half a row's mark and the gap beside labels; a quantitative y axis
#: beside the plot; the view's padding; the narrowest plot.
_PHONE_PX, _PHONE_CHAR_PX, _AXIS_TITLE_CHAR_PX, _PHONE_TITLE_CHAR_PX = 320, 5.5, 6.9, 8.1
_LINE_PX, _AXIS_TITLE_LINE_PX, _TITLE_LINE_PX = 12, 13, 16
_LABEL_SHARE, _MARK_HALF_PX, _AXIS_GAP_PX, _Y_AXIS_PX, _VIEW_PAD_PX, _MIN_PLOT_PX = 0.4, 7, 8, 60, 10, 140
_THIN_MARKS = frozenset({"point", "circle", "square", "rule", "errorbar"})
#: The channels that draw a legend (each moved under the plot on a phone).
_LEGEND_CHANNELS = ("color", "fill", "stroke", "shape", "size", "opacity", "strokeDash")
#: Vega-Lite pads each row's band of offsets: measured, the rows take ~1.19 × their steps.
_OFFSET_PADDING = 1.19


def _wrapped_lines(text: str, limit: float, char: float = _PHONE_CHAR_PX) -> int:
    """How many lines ``text`` takes wrapped at ``limit`` px as sparkreport-fit.js's ``wrap`` does
    it: after a " · " where it can, else between words, else after a hyphen ("DeepSeek-R1-" /
    "Distill-Qwen-7B"); a piece wider than the limit alone keeps its own line."""
    def width(line: str) -> float:
        return len(line) * char

    def fill(pieces: list[str], glue: str) -> list[str]:
        lines: list[str] = []
        line = ""
        for piece in pieces:
            joined = f"{line}{glue}{piece}" if line else piece
            if line and width(joined) > limit:
                lines.append(line)
                line = piece
            else:
                line = joined
        return [*lines, line]

    if width(text) <= limit:
        return 1
    parts = text.split(" · ")
    count = 0
    for line in fill([f"{part} ·" if i < len(parts) - 1 else part for i, part in enumerate(parts)], " "):
        if width(line) <= limit:
            count += 1
            continue
        words: list[str] = []
        for word in line.split(" "):  # a "·" stays with the word before it
            if word == "·" and words:
                words[-1] += " ·"
            else:
                words.append(word)
        for part in fill(words, " "):
            count += 1 if width(part) <= limit else len(fill(re.findall(r"[^-]*-|[^-]+$", part) or [part], ""))
    return count


def phone_height(spec: dict[str, Any], width: int = _PHONE_PX) -> int:
    """About how tall ``spec`` is once sparkreport-fit.js has refitted it to a phone's column
    (labels that would take too much of the width above their rows or wrapped, legends under the
    plot, titles wrapped): what a placeholder keeps on a phone until the chart is drawn, as
    :func:`drawn_size` does at the spec's own size."""
    titled = _phone_title(spec, width)
    if "vconcat" in spec:
        shared = (spec.get("data") or {}).get("values") or []
        panels = [(panel, (panel.get("data") or {}).get("values") or shared) for panel in spec["vconcat"]]
        height = sum(_phone_plot(panel, values, width) + _phone_title(panel, width) for panel, values in panels)
        # the panels' legends are merged into one (Vega-Lite's default for concatenated views)
        legend = max((_phone_legend(panel, values) for panel, values in panels), default=0)
        return height + int(spec.get("spacing", 20)) * (len(panels) - 1) + _AXIS_PX + titled + legend
    data = (spec.get("data") or {}).get("values") or []
    facet = (spec.get("facet") or {}).get("row") or (spec.get("encoding") or {}).get("row")
    inner = spec.get("spec", spec)
    height = _AXIS_PX + titled
    if facet is not None:  # each panel's name above it, wrapped to the plot (in a bold font: 0.8 of the width)
        groups: dict[Any, list[dict[str, Any]]] = {}
        for row in data:
            groups.setdefault(row.get(facet["field"]), []).append(row)
        height += sum(_phone_plot(inner, rows, width) + _HEADER_PX
                      + (_wrapped_lines(str(name), (width - _VIEW_PAD_PX) * 0.8) - 1) * _LINE_PX
                      for name, rows in groups.items()) + _PANEL_GAP_PX * (len(groups) - 1)
    else:
        height += _phone_plot(inner, data, width)
    return height + _phone_legend(inner, data)


def _phone_title(spec: dict[str, Any], width: int) -> int:
    """A (view's or chart's) title's height on a phone, wrapped to the column; 0 without one."""
    title = spec.get("title")
    text = title if isinstance(title, str) else title.get("text") if isinstance(title, dict) else None
    if not text:
        return 0
    return _TITLE_PX + (_wrapped_lines(str(text), width - _VIEW_PAD_PX, _PHONE_TITLE_CHAR_PX) - 1) * _TITLE_LINE_PX


def _phone_legend(spec: dict[str, Any], data: list[dict[str, Any]]) -> int:
    """The legends' height on a phone: under the plot, each its title and its entries one under
    the other (one already under it keeps its columns: :func:`_legend`)."""
    below, _beside = _legend(spec, data)
    entries = _legend_entries(spec, data)
    if below:
        return (below + sum(n + 1 for n in entries[1:])) * _LEGEND_ROW_PX
    return sum(n + 1 for n in entries) * _LEGEND_ROW_PX


def _legend_values(channel: dict[str, Any]) -> list[Any] | None:
    """What a channel's legend lists when the spec says: its ``values``, else its scale's domain
    (drawn whole); None: the values in the data."""
    values = (channel.get("legend") or {}).get("values")
    if isinstance(values, list):
        return values
    domain = (channel.get("scale") or {}).get("domain")
    return domain if isinstance(domain, list) else None


def _legend_entries(spec: dict[str, Any], data: list[dict[str, Any]]) -> list[int]:
    """Each legend's entries: those the spec names (:func:`_legend_values`), else the values in
    the data. Channels of one field (a History chart's colour and dash) are one legend: Vega-Lite
    merges legends of one domain."""
    rows = _rows(spec, data)
    found: dict[str, int] = {}
    for unit in _units(spec):
        for name in _LEGEND_CHANNELS:
            channel = (unit.get("encoding") or {}).get(name) or {}
            if "field" not in channel or channel.get("legend", {}) is None or channel["field"] in found:
                continue
            shown = _legend_values(channel)
            found[channel["field"]] = len(shown) if shown is not None else \
                len({str(r.get(channel["field"])) for r in rows if channel["field"] in r})
    return list(found.values())


def _phone_plot(spec: dict[str, Any], data: list[dict[str, Any]], width: int) -> int:
    """The plot's height on a phone: :func:`_plot_height`, its rows grown to hold labels set
    above them (thin marks) or wrapped beside them (bars, boxes, offset rows) where they would
    take more than :data:`_LABEL_SHARE` of the width, and its x axis' title wrapped to the plot."""
    height = _plot_height(spec, data)
    y, values = _y_values(spec, data)
    beside = _Y_AXIS_PX if y is not None and y.get("type") == "quantitative" else 0
    if y is not None and y.get("type") in ("nominal", "ordinal") and "field" in y and values \
            and (y.get("axis") or {}) is not None and not isinstance(spec.get("height"), int | float):
        share = int(width * _LABEL_SHARE)
        widest = max(len(str(v)) for v in values) * _PHONE_CHAR_PX
        beside = int(widest) + _AXIS_GAP_PX
        if widest > share:
            offsets = _offsets(spec, data)
            above = offsets == 1 and all(
                (u["mark"] if isinstance(u.get("mark"), str) else (u.get("mark") or {}).get("type")) in _THIN_MARKS
                for u in _units(spec) if "y" in (u.get("encoding") or {}))
            lines = max(_wrapped_lines(str(v), width - _VIEW_PAD_PX if above else share) for v in values)
            step = lines * _LINE_PX + (2 * _MARK_HALF_PX + 6 if above else 6)
            bands = len(values) * offsets
            height = int(max(height // bands, step) * bands * (_OFFSET_PADDING if offsets > 1 else 1))
            beside = 1 if above else min(share, int(widest)) + _AXIS_GAP_PX
    plot = max(_MIN_PLOT_PX, width - beside - _VIEW_PAD_PX)
    x_title = next((u["encoding"]["x"]["title"] for u in _units(spec)
                    if isinstance((u.get("encoding") or {}).get("x", {}).get("title"), str)), None)
    if x_title:
        height += (_wrapped_lines(x_title, plot - _VIEW_PAD_PX, _AXIS_TITLE_CHAR_PX) - 1) * _AXIS_TITLE_LINE_PX
    return height
