"""Small table helpers shared by the built-in pages (frames → plain dict rows)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from sparkreport import metrics as metric_catalog
from sparkreport.dataset import frame_records, plain
from sparkreport.names import campaign_order

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.analysis import Finding
    from sparkreport.schema import RunRecord


def claims(frame: pd.DataFrame, findings: Sequence[Finding] = (),
           arm_runs: Mapping[tuple[str, str, str], list[str]] | None = None) -> list[dict[str, Any]]:
    """Comparison rows (plain values) each with its key-finding ``sentence``.

    With ``findings`` and ``arm_runs`` ((campaign, model, level) → run ids), a sentence about
    runs that have error-level findings carries a visible warning, and ``flagged`` lists them.
    """
    from sparkreport.analysis import claim_sentence
    from sparkreport.analysis.claims import errors_behind

    if frame.empty:
        return []
    errors = [f for f in findings if f.severity == "error"]
    out = []
    for raw in frame_records(frame):
        flagged = errors_behind(raw, errors, arm_runs) if errors and arm_runs is not None else []
        out.append({**{str(k): plain(v) for k, v in raw.items()}, "sentence": claim_sentence(raw, flagged),
                    "flagged": [f.code for f in flagged]})
    return out


def metric_order(names: Iterable[str], lead: Iterable[str] = ()) -> list[str]:
    """The metrics ``lead`` names first, in its order (the pages pass ``primary_metrics`` of
    sparkreport.yml), then the rest by their label, so that a reader finds one in a list of
    forty; a percentile family's statistics together, in reading order: the mean, the minimum,
    the percentiles upwards, the maximum."""
    present = list(dict.fromkeys(names))
    first = [m for m in dict.fromkeys(lead) if m in present]
    return first + sorted((m for m in present if m not in first), key=_reading_order)


_STATISTIC = re.compile(r"_(?:(?P<mean>mean)|(?P<min>min)|(?P<max>max)|p(?P<p>\d+(?:_\d+)?))$")


def _reading_order(metric: str) -> tuple[str, float, str]:
    """Sort key: a percentile family's label ('Inter-token latency') and the statistic's rank;
    any other metric's label, before the statistics of a family of the same name."""
    label = metric_label(metric)
    match = _STATISTIC.search(metric) if metric not in metric_catalog.METRICS else None
    if match is None or metric_catalog.lookup(metric) is None:
        return label.lower(), -1.0, metric
    rank = (0.0 if match["mean"] else 1.0 if match["min"] else math.inf if match["max"]
            else 1.0 + float(match["p"].replace("_", ".")))
    return label.rsplit(" (", 1)[0].lower(), rank, metric


def metric_label(metric: str) -> str:
    """The human label of a metric ('KV cache')."""
    return metric_catalog.label_of(metric)


def value_text(value: Any) -> str:
    """A recorded setting as text (numbers without trailing zeros, booleans as yes/no)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {value_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(value_text(v) for v in value)
    return str(value)


#: Beyond this many distinct values a setting is summarised (it varies per run: a measurement).
MAX_DISTINCT = 6


def _distinct_text(values: list[str]) -> str | None:
    """'a / b / c', or for many values 'N distinct values, min–max' (numbers) / 'N distinct values'."""
    if not values:
        return None
    if len(values) <= MAX_DISTINCT:
        return " / ".join(values)
    numbers = []
    for text in values:
        try:
            numbers.append(float(text))
        except ValueError:
            break
    else:
        return f"{len(values)} distinct values, {min(numbers):g}–{max(numbers):g}"
    text = f"{len(values)} distinct values (e.g. {values[0]})"
    return text if len(text) <= 200 else f"{len(values)} distinct values"


def recorded_settings(records: list[RunRecord], section: str) -> tuple[list[dict[str, Any]], list[str]]:
    """What the records say about one section (workload, software, hardware), per campaign.

    Returns ``(rows, not_recorded)``: each row is ``{"field": name, "values": {campaign: text}}``
    (several distinct values joined with ' / '); ``not_recorded`` names the fields no record
    filled in. Free-form ``details`` keys become fields of their own.
    """
    campaigns = sorted({r.campaign for r in records}, key=campaign_order)
    seen: dict[str, dict[str, list[str]]] = {}
    names: list[str] = []
    for record in records:
        part = getattr(record, section)
        items: list[tuple[str, Any]] = [(f.name, getattr(part, f.name)) for f in fields(part)
                                        if f.name != "details"]
        items += [(str(k), v) for k, v in sorted(getattr(part, "details", {}).items())]
        for name, value in items:
            if name not in names:
                names.append(name)
            if value is None or value == "" or value == {} or value == []:
                continue
            bucket = seen.setdefault(name, {}).setdefault(record.campaign, [])
            text = value_text(value)
            if text not in bucket:
                bucket.append(text)
    out = []
    for name in names:
        if name not in seen:
            continue
        out.append({"field": name.replace("_", " "),
                    "values": {c: _distinct_text(seen[name].get(c, [])) for c in campaigns}})
    missing = [n.replace("_", " ") for n in names if n not in seen]
    return out, missing
