"""Results across software versions: the value of each metric per version, and its change points.

A *version* is a label (``--label version=…``; the key is ``history.by`` in sparkreport.yml) or
a recorded software field (``engine_version`` — alias ``trtllm``, ``vllm``, ``torch`` for that
engine's runs —, ``cuda``, ``driver``, ``image``, ``image_digest``). Versions are ordered by
PEP 440 when every value parses as one, else naturally (``1.9`` before ``1.10``) when every
value starts with a digit (or ``v``), else by the date of their first run.

Series are (campaign, model, environment, metric); the change points of each come from
:func:`sparkreport.analysis.changepoints.find_steps`, and each is reported between the two
versions around it with the ratio of their means and its Fieller CI (the numbers of
``sparkreport diff`` between those two versions; no CI when either is a single run).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkreport import metrics as metric_catalog
from sparkreport.analysis import statistics as st
from sparkreport.analysis.arms import included_frame
from sparkreport.analysis.changepoints import METHOD, find_steps
from sparkreport.config import AnalysisOptions
from sparkreport.errors import DataError
from sparkreport.names import arm_order, campaign_order, natural_key, shown_values

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.cache import AnalysisCache
    from sparkreport.dataset import Dataset

SOFTWARE_FIELDS = ("engine_version", "cuda", "driver", "image", "image_digest")
#: Engine names that stand for ``engine_version`` of that engine's runs.
ENGINE_ALIASES = ("trtllm", "vllm", "torch")
SERIES_KEYS = ("campaign", "model", "environment", "metric")
SCHEMA_VERSION = 1


@dataclass
class VersionPoint:
    """One version of one series: its runs' mean with the t-based CI."""

    version: str
    n: int
    mean: float
    ci_low: float
    ci_high: float

    @property
    def single_run(self) -> bool:
        return self.n == 1


@dataclass
class ChangePoint:
    """A level shift between the versions ``before`` and ``after``."""

    campaign: str
    model: str
    environment: str
    metric: str
    before: str
    after: str
    mean_before: float
    mean_after: float
    change_pct: float
    change_ci_low: float
    change_ci_high: float
    #: Holm-adjusted p-value of the shift between the segments on either side.
    p_adjusted: float
    #: ``regression`` or ``improvement`` by the metric's better direction.
    direction: str
    newest: bool


@dataclass
class Series:
    campaign: str
    model: str
    model_name: str
    environment: str
    metric: str
    points: list[VersionPoint]
    changes: list[ChangePoint] = field(default_factory=list)
    #: Its entry of ``history.json`` (:func:`series_text`), made with it once its change points are
    #: found: kept with the series in the analysis cache, so a new run's History page encodes its
    #: campaign's series only (the 4 700 entries of 10 000 runs were ~0.04 s of its fill).
    text: str | None = field(default=None, compare=False, repr=False)


@dataclass
class History:
    """Every series of a run store across versions, and what defines and orders the versions."""

    by: str
    column: str
    order: str
    versions: list[str]
    series: list[Series]
    alpha: float
    min_effect: float
    method: str = METHOD
    #: Series followed across campaigns (``history.across_campaigns``): their campaign is ACROSS.
    across_campaigns: bool = False

    @property
    def changes(self) -> list[ChangePoint]:
        return [c for s in self.series for c in s.changes]


class UnknownKey(DataError):
    """A campaign or version key no run has; ``option`` is the flag that names it (``--campaign``,
    ``--by``), so the command line can call it a bad invocation. ``problem`` is the message
    without its ``fix``, for a caller whose value came from elsewhere (sparkreport.yml)."""

    def __init__(self, option: str, problem: str, fix: str = ""):
        self.option = option
        self.problem = problem
        super().__init__(f"{problem}; {fix}" if fix else problem)


def version_keys(runs: pd.DataFrame) -> list[str]:
    """What ``by`` can name on these runs: their labels, the software fields some run records,
    and the engines some run has a version of."""
    keys = sorted(c.removeprefix("label.") for c in runs.columns if c.startswith("label.") and runs[c].notna().any())
    keys += [f for f in SOFTWARE_FIELDS if f in runs.columns and runs[f].notna().any()]
    engines = set(runs.loc[runs["engine_version"].notna(), "engine"].dropna().astype(str))
    return keys + [engine for engine in ENGINE_ALIASES if engine in engines]


def version_column(runs: pd.DataFrame, by: str) -> tuple[str, pd.DataFrame]:
    """The runs column that holds the version named by ``by``, and the runs that have one."""
    every = runs
    if f"label.{by}" in runs.columns:
        column = f"label.{by}"
    elif by in SOFTWARE_FIELDS:
        column = by
    elif by in ENGINE_ALIASES:
        column = "engine_version"
        runs = runs[runs["engine"].astype("string") == by]
    else:
        column = ""
    if not column or not runs[column].notna().any():
        what = (f"no run records a {by} version" if column else
                f"not a label of these runs nor one of {', '.join((*SOFTWARE_FIELDS, *ENGINE_ALIASES))}")
        raise UnknownKey("--by", f"no version {by!r}: {what} — version keys here: "
                                 f"{shown_values(version_keys(every))}",
                         fix=f"label runs with --label {by}=… or pass --by KEY")
    return column, runs[runs[column].notna()]


def order_versions(runs: pd.DataFrame, column: str) -> tuple[list[str], str]:
    """The versions in order and the rule used: ``pep440``, ``natural`` or ``date``."""
    from packaging.version import InvalidVersion, Version

    values = sorted({str(v) for v in runs[column].dropna().unique()})
    try:
        return sorted(values, key=Version), "pep440"
    except InvalidVersion:
        pass
    if all(re.match(r"v?\d", v) for v in values):
        return sorted(values, key=lambda v: natural_key(v.removeprefix("v"))), "natural"
    first = runs.groupby(runs[column].astype(str))["started_at"].min()
    return sorted(values, key=lambda v: (str(first.get(v) or ""), v)), "date"


#: The campaign of a series followed across campaigns (``across_campaigns``).
ACROSS = "across campaigns"


class PooledVersion(DataError):
    """``across_campaigns`` with one version of a model and environment in two campaigns."""


def history(ds: Dataset, opts: AnalysisOptions, *, by: str = "version", metrics: list[str] | None = None,
            campaigns: list[str] | None = None, min_effect: float | None = None,
            cache: AnalysisCache | None = None, across_campaigns: bool = False,
            baseline: str | None = None) -> History:
    """The history of ``ds`` across the versions named by ``by`` (see the module docstring).

    A series lives in one campaign, so the series are computed campaign by campaign; with
    ``cache``, a campaign's series are kept by the digest of its runs (and the version order,
    the metrics and the options), and a new run recomputes the series of its campaign only.
    ``across_campaigns``: a series is a model and environment across every campaign (a campaign
    per release), each version's runs from one campaign (:class:`PooledVersion` otherwise: runs
    of different campaigns are never pooled); its campaign is :data:`ACROSS`. The series of a
    campaign list its models by the names the pages show (:func:`~sparkreport.names.model_order`),
    each model's environments in :func:`~sparkreport.names.level_order`: ``baseline`` (the
    site's, :meth:`~sparkreport.config.ProjectConfig.baseline_of` the ``environment``) first,
    then the others by name, as every page lists them."""
    runs = included_frame(ds, opts)
    runs = runs[runs["included"]]
    if campaigns:
        present = sorted(set(runs["campaign"].astype(str)))
        for name in campaigns:
            if name not in present:
                raise UnknownKey("--campaign", f"no campaign {name!r} with runs to follow — campaigns here: "
                                               f"{shown_values(present)}")
        runs = runs[runs["campaign"].isin(campaigns)]
    column, runs = version_column(runs, by)
    versions, order = order_versions(runs, column)
    rank = {v: i for i, v in enumerate(versions)}
    wanted = metrics or [m for m in opts.tested_metrics if m in runs.columns]
    for metric in wanted:
        if not metric_catalog.is_metric(metric):
            raise DataError(f"unknown metric {metric!r} — see `sparkreport metrics`")
    effect_default = opts.equivalence_margin if min_effect is None else min_effect
    out: list[Series] = []
    present = [m for m in wanted if m in runs.columns]
    if across_campaigns:
        _one_campaign_per_version(runs, column)
    runs = runs[["campaign", "model", "model_name", "environment", *present]].assign(
        _rank=runs[column].astype(str).map(rank).astype(int))
    digests = None
    if cache is not None:
        from sparkreport.analysis.arms import campaign_digests

        digests = campaign_digests(ds, opts)
        if across_campaigns:  # one series group over every campaign: kept by all their digests
            digests = {ACROSS: "\0".join(f"{c}={digests[c]}" for c in sorted(runs["campaign"].unique()))}
    if across_campaigns:
        runs = runs.assign(campaign=ACROSS)
    # each campaign's rows cut out only where its series are computed (a kept campaign's are not)
    groups = runs.groupby("campaign", sort=False, observed=True).indices
    for campaign in sorted(groups, key=lambda name: campaign_order(str(name))):  # as the pages list them
        series = functools.partial(_campaign_series_at, runs, groups[campaign], versions, present, opts, min_effect,
                                   effect_default, baseline)
        if cache is None or digests is None:
            out += series()
            continue
        key = cache.key(("kind", "history-4"), ("runs", digests[str(campaign)]), ("versions", versions),
                        ("column", column), ("metrics", present), ("opts", opts), ("min_effect", min_effect),
                        ("baseline", baseline))
        out += cache.get_or("history-campaign", key, series)
    effect_text = effect_default
    return History(by=by, column=column, order=order, versions=versions, series=out, alpha=opts.alpha,
                   min_effect=effect_text, across_campaigns=across_campaigns)


def _one_campaign_per_version(runs: pd.DataFrame, column: str) -> None:
    """Refuse (:class:`PooledVersion`) a version of a model and environment whose runs are in two
    campaigns: followed across campaigns, a version's point must be one campaign's arm."""
    spread = runs.groupby(["model", "environment", runs[column].astype(str)])["campaign"].unique()
    for key, found in spread.items():
        model, environment, version = (str(part) for part in key)  # type: ignore[attr-defined]
        if len(found) > 1:
            names = ", ".join(sorted(str(c) for c in found))
            raise PooledVersion(
                f"history.across_campaigns: version {version} of {model} in {environment} is in campaigns "
                f"{names} — a version's runs must come from one campaign (campaigns are never pooled): "
                "give the runs different versions, or compare the campaigns with a diff")


def _campaign_series_at(runs: pd.DataFrame, positions: Any, *args: Any) -> list[Series]:
    """:func:`_campaign_series` of the rows of ``runs`` at ``positions`` (one campaign's)."""
    return _campaign_series(runs.iloc[positions], *args)


def _campaign_series(runs: pd.DataFrame, versions: list[str], present: list[str], opts: AnalysisOptions,
                     min_effect: float | None, effect_default: float, baseline: str | None = None) -> list[Series]:
    """The series (and their change points) of one campaign's included runs (``_rank``: each
    run's place in ``versions``): the models by their names (:func:`~sparkreport.names.model_order`),
    each model's environments ``baseline`` first (:func:`~sparkreport.names.level_order`)."""
    import numpy as np

    # Each column to numpy once and each cell by its rows' positions (a pandas selection per cell
    # and metric was most of a cold build's history); every sample described in one call.
    ranks = runs["_rank"].to_numpy()
    names = runs["model_name"].to_numpy()
    columns = {metric: runs[metric].to_numpy(dtype=float, na_value=np.nan) for metric in present}
    cells: dict[tuple[str, str, str], np.ndarray] = runs.groupby(  # type: ignore[assignment]
        ["campaign", "model", "environment"]).indices
    planned: list[tuple[tuple[str, str, str], str, list[str], list[np.ndarray], str]] = []
    def placed(cell: tuple[str, str, str]) -> tuple[Any, ...]:
        campaign, model, environment = cell
        return arm_order(campaign, str(names[cells[cell][0]]), model, environment, baseline)

    for key in sorted(cells, key=placed):
        rows = cells[key]
        codes = ranks[rows]
        for metric in present:
            values = columns[metric][rows]
            keep = np.isfinite(values)
            if not keep.any():
                continue
            order_idx = np.argsort(codes[keep], kind="stable")
            kept_codes, kept_values = codes[keep][order_idx], values[keep][order_idx]
            starts = np.flatnonzero(np.r_[True, kept_codes[1:] != kept_codes[:-1]])
            planned.append((key, metric, [versions[int(kept_codes[i])] for i in starts],
                            np.split(kept_values, starts[1:]), str(names[rows[0]])))
    every = st.describe_many([sample for *_head, samples, _name in planned for sample in samples], opts.confidence)
    out: list[Series] = []
    at = 0
    for (campaign, model, environment), metric, ordered, samples, model_name in planned:
        described, at = every[at:at + len(samples)], at + len(samples)
        floor, ceiling = metric_catalog.physical_range(metric)  # cut as `stats` cuts an arm's interval
        points = [VersionPoint(v, d.n, d.mean, max(d.ci_low, floor), min(d.ci_high, ceiling))
                  if math.isfinite(d.ci_low) else VersionPoint(v, d.n, d.mean, d.ci_low, d.ci_high)
                  for v, d in zip(ordered, described, strict=True)]
        series = Series(str(campaign), str(model), model_name, str(environment), metric, points)
        effect = opts.margins.get(metric, effect_default) if min_effect is None else min_effect
        for step in find_steps(samples, alpha=opts.alpha, min_effect=effect):
            a, b = samples[step.index - 1], samples[step.index]
            ratio = float(np.mean(b) / np.mean(a)) if np.mean(a) else st.NAN
            da, db = described[step.index - 1], described[step.index]
            low, high = st.fieller_ratio_ci(da.mean, da.sd, da.n, db.mean, db.sd, db.n, opts.confidence)
            better = metric_catalog.lookup(metric)
            higher_is_better = better is None or better.direction != "lower"
            series.changes.append(ChangePoint(
                campaign=series.campaign, model=series.model, environment=series.environment, metric=metric,
                before=ordered[step.index - 1], after=ordered[step.index],
                mean_before=float(np.mean(a)), mean_after=float(np.mean(b)),
                change_pct=(ratio - 1) * 100, change_ci_low=(low - 1) * 100, change_ci_high=(high - 1) * 100,
                p_adjusted=step.p_adjusted,
                direction="improvement" if (step.change > 0) == higher_is_better else "regression",
                newest=ordered[step.index] == versions[-1],
            ))
        series.text = series_text(series)
        out.append(series)
    return out


def _num(value: float) -> float | None:
    return value if math.isfinite(value) else None


def history_payload(result: History) -> dict[str, Any]:
    """The JSON contract of ``sparkreport history --json`` (schema_version 1; README documents it)."""
    return {**_payload_head(result), "series": [series_entry(s) for s in result.series]}


def _payload_head(result: History) -> dict[str, Any]:
    """:func:`history_payload` but its last key, ``series``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "by": result.by,
        "column": result.column,
        "order": result.order,
        "versions": result.versions,
        "method": result.method,
        "alpha": result.alpha,
        "min_effect": result.min_effect,
        "change_points": [change_row(c) for c in result.changes],
    }


def series_entry(s: Series) -> dict[str, Any]:
    """One series as the JSON contract writes it."""
    return {"campaign": s.campaign, "model": s.model, "environment": s.environment, "metric": s.metric,
            "unit": metric_catalog.unit_of(s.metric),
            "points": [{"version": p.version, "n": p.n, "mean": _num(p.mean), "ci_low": _num(p.ci_low),
                        "ci_high": _num(p.ci_high), "single_run": p.single_run} for p in s.points]}


#: How ``history.json`` is written: compact (the site's file, not the CLI's indented output).
COMPACT = (",", ":")


def series_text(s: Series) -> str:
    """:func:`series_entry` as ``history.json`` writes it (:data:`COMPACT`)."""
    return json.dumps(series_entry(s), separators=COMPACT)


def history_json(result: History) -> str:
    """``json.dumps(history_payload(result), separators=COMPACT)``, the same text, with each series'
    entry its kept :attr:`Series.text` where it has one."""
    text = json.dumps({**_payload_head(result), "series": []}, separators=COMPACT)  # ends '"series":[]}'
    entries = ",".join(s.text if s.text is not None else series_text(s) for s in result.series)
    return f"{text[:-2]}{entries}]}}"


def change_row(c: ChangePoint) -> dict[str, Any]:
    """One change point as the JSON contract writes it."""
    return {"campaign": c.campaign, "model": c.model, "environment": c.environment, "metric": c.metric,
            "unit": metric_catalog.unit_of(c.metric), "before": c.before, "after": c.after,
            "mean_before": _num(c.mean_before), "mean_after": _num(c.mean_after),
            "change_pct": _num(c.change_pct), "change_ci_low": _num(c.change_ci_low),
            "change_ci_high": _num(c.change_ci_high), "p_adjusted": _num(c.p_adjusted),
            "direction": c.direction, "newest": c.newest}


def newest_regressions(result: History) -> list[ChangePoint]:
    """Regressions that the newest version opens (what ``--fail-on regression`` gates on)."""
    return [c for c in result.changes if c.newest and c.direction == "regression"]


def change_sentence(c: ChangePoint, confidence_label: str = "95%") -> str:
    """'output throughput fell 4.20% (95% CI 3.10–5.30%) between 0.21.0 and 0.22.0 in native'."""
    entry = metric_catalog.lookup(c.metric)
    label = (entry.label if entry else c.metric)
    verb = "rose" if c.change_pct > 0 else "fell"
    low, high = sorted((abs(c.change_ci_low), abs(c.change_ci_high)))
    if not (math.isfinite(c.change_ci_low) and math.isfinite(c.change_ci_high)):
        ci = "no CI: a single-run version"
        return (f"{label[:1].lower() + label[1:]} {verb} {abs(c.change_pct):.2f}% ({ci}) "
                f"between {c.before} and {c.after} in {c.environment} ({c.direction})")
    if (c.change_ci_low > 0) != (c.change_ci_high > 0):  # the CI straddles 0: write it signed
        ci = f"{c.change_ci_low:+.2f}% to {c.change_ci_high:+.2f}%"
    else:
        ci = f"{low:.2f}–{high:.2f}%"
    return (f"{label[:1].lower() + label[1:]} {verb} {abs(c.change_pct):.2f}% ({confidence_label} CI {ci}) "
            f"between {c.before} and {c.after} in {c.environment} ({c.direction})")
