"""The History page: each primary metric across software versions, with its change points.

Written only when the store holds at least two versions (``history.by`` in sparkreport.yml,
default the label ``version``). Each change point links to a diff page of the two versions
around it (the machinery of ``sparkreport diff`` and the Diffs pages); the per-version values
of every series ship beside the page as ``history.json`` (the ``sparkreport history --json``
contract), so a history of hundreds of versions keeps the page itself small.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.render.markdown import digits_for
from sparkreport.render.pages import NavItem, Page, PageDoc, register
from sparkreport.render.precision import half_width, places, tooltip_format
from sparkreport.render.tables import metric_label
from sparkreport.schema import slug

if TYPE_CHECKING:
    from sparkreport.analysis.history import ChangePoint, History
    from sparkreport.charts import ChartSpec
    from sparkreport.render.context import SiteData

#: Change points the page's summary lists in sentences (newest first); all are in its table.
SENTENCE_BUDGET = 5
#: The hand-written page on the method (linked when the project's docs/ has it).
REFERENCE = "reference/history.md"
#: How the versions were ordered, for the page's text.
ORDER_TEXT = {"pep440": "PEP 440 version", "natural": "natural (numeric parts as numbers)",
              "date": "first-run date"}
#: Diff pages written for change points (newest first); older ones link to the CLI command.
DIFF_PAGE_BUDGET = 40
#: The longest series name the History chart's legend sets in two columns (at Vega's 10 px
#: labels two such columns fit the plot's 600 px); a longer one puts the legend in one column.
LEGEND_TWO_COLUMNS_CHARS = 45


def site_history(site: SiteData) -> History | None:
    """The store's history (computed once per render), or None without two versions."""
    from sparkreport.analysis.history import ENGINE_ALIASES, SOFTWARE_FIELDS, PooledVersion, history
    from sparkreport.errors import BuildError, DataError

    by = site.config.history.by
    runs = site.dataset.runs
    if f"label.{by}" not in runs.columns and by not in (*SOFTWARE_FIELDS, *ENGINE_ALIASES):
        site.extra["history"] = None  # no version label on these runs: nothing to compute
    if "history" not in site.extra:
        def compute() -> tuple[History | None]:
            try:
                found = history(site.dataset, site.config.analysis, by=by, min_effect=site.config.history.min_effect,
                                cache=site.analysis_cache, across_campaigns=site.config.history.across_campaigns,
                                baseline=site.config.baseline_of("environment"))
            except PooledVersion as exc:  # the setting does not fit the store: say so, never drop the page
                raise BuildError(f"{site.config.path or 'sparkreport.yml'}: {exc.format_message()}") from None
            except DataError:
                found = None
            return (found if found is not None and len(found.versions) >= 2 else None,)

        # Assembled from each campaign's series, which the analysis cache keeps
        # (``history-campaign``: a new run computes its campaign's again; saved with the rest of
        # the analysis after the pages are planned); the assembly itself (~0.02 s at 10 000 runs)
        # is not kept: keyed by every run, it was 1.7 MB that every new run's build pickled into
        # the cache's journal for no later build to read.
        site.extra["history"] = compute()[0]
    found: History | None = site.extra["history"]
    return found


def history_spans(site: SiteData) -> int:
    """How many series span two versions or more (0: the History page has nothing to compare)."""
    result = site_history(site)
    return 0 if result is None else sum(1 for s in result.series if len(s.points) > 1)


def latest_change(site: SiteData) -> str | None:
    """The home page's line: the newest change point as a sentence, or None."""
    from sparkreport.analysis.history import change_sentence

    result = site_history(site)
    if result is None or not result.changes:
        return None
    rank = {v: i for i, v in enumerate(result.versions)}
    newest = max(result.changes, key=lambda c: (rank[c.after], abs(c.change_pct)))
    from sparkreport.render.report import campaign_title, campaigns

    where = [shown_models(result)[(newest.campaign, newest.model)]]
    if len(campaigns(site)) > 1:  # the campaign, where the store holds several
        where.append(campaign_title(site, newest.campaign))
    return f"{change_sentence(newest, site.confidence_label)} ({', '.join(where)})"


def history_method(site: SiteData) -> str | None:
    """The Methodology page's sentence on change points, or None without a History page."""
    result = site_history(site)
    if result is None:
        return None
    return (f"Across versions ({result.column}, {len(result.versions)} versions) a change point is reported "
            f"only where the level shifts by at least {result.min_effect:.0%} and the shift is significant at "
            f"α = {result.alpha} across the whole series: binary segmentation on the version groups with Welch "
            f"tests (Bonferroni over each split's boundaries), then a Holm-adjusted merge, with half of α kept for "
            f"the newest version's own test against the runs since the last change; it assumes independent "
            f"runs and a level that is flat between change points (see the History page).")


def _selector(result: History, campaign: str, version: str) -> str:
    """A diff side: the campaign's runs of ``version`` (across campaigns, the runs of that version,
    which are one campaign's per model and environment)."""
    from sparkreport.analysis.history import ACROSS

    extra = ",engine=" + result.by if result.column == "engine_version" and result.by != "engine_version" else ""
    where = "" if campaign == ACROSS else f"campaign={campaign},"
    return f"{where}{result.column}={version}{extra}"


@register
class HistoryPage(Page):
    name = "history"
    title = "History"
    template = "history.md"
    folder = "history"
    order = 22

    def docs(self, site: SiteData, out: Path) -> list[PageDoc]:
        from sparkreport.analysis.history import ACROSS
        from sparkreport.config import NamedDiff
        from sparkreport.render.diffs import campaign_runs, fill_diff
        from sparkreport.render.report import campaign_title

        result = site_history(site)
        if result is None:
            return []
        rank = {v: i for i, v in enumerate(result.versions)}
        changes = sorted(result.changes, key=lambda c: (-rank[c.after], -abs(c.change_pct)))
        main = PageDoc(self.path, self.title, self.template)
        several = len({s.campaign for s in result.series}) > 1
        diff_docs: dict[tuple[str, str, str], PageDoc] = {}
        for change in changes:
            key = (change.campaign, change.before, change.after)
            if key not in diff_docs and len(diff_docs) < DIFF_PAGE_BUDGET:
                name = f"{campaign_title(site, change.campaign)}: {change.before} → {change.after}"
                named = NamedDiff(name=name, a=_selector(result, change.campaign, change.before),
                                  b=_selector(result, change.campaign, change.after), title=name)
                # in the nav, a pair of versions changed in two campaigns is two entries: each names its own
                nav_title = f"{change.before} → {change.after}"
                if several:
                    nav_title += f" ({campaign_title(site, change.campaign)})"
                doc = PageDoc(f"{self.folder}/{slug(f'{change.campaign}-{change.before}-{change.after}')}/index.md",
                              nav_title, "diff.md")
                doc.inputs = None if change.campaign == ACROSS else campaign_runs(site, {change.campaign})
                doc.also_reads = [repr(named)]
                doc.fill = functools.partial(fill_diff, site, doc, named)
                diff_docs[key] = doc
        main.also_reads = [str((out / REFERENCE).exists())]
        main.fill = functools.partial(self.fill_main, site, main, result, changes, diff_docs, out)
        return [main, *diff_docs.values()]

    def fill_main(self, site: SiteData, main: PageDoc, result: History, changes: list[ChangePoint],
                  diff_docs: dict[tuple[str, str, str], PageDoc], out: Path) -> None:
        """The History page itself: its table of change points, charts and ``history.json``."""
        from sparkreport.analysis.history import change_row, change_sentence, history_json
        from sparkreport.render.diff_text import command_line
        from sparkreport.render.report import campaign_title

        rank = {v: i for i, v in enumerate(result.versions)}
        # A campaign the same in every row is named once, above the tables, not in a column of each
        # nor after each change of the summary; a model the same in every row, by no change.
        campaigns = {s.campaign for s in result.series}
        several_models = len({s.model for s in result.series}) > 1
        shown = shown_models(result)
        rows = []
        # The pairs of versions past the diff pages' budget: their `sparkreport diff` command once
        # each, below the table (a command in a cell made the table scroll).
        commands: dict[tuple[str, str, str], dict[str, str]] = {}
        for change in changes:
            key = (change.campaign, change.before, change.after)
            row = change_row(change) | {"label": metric_label(change.metric),
                                        "model_name": shown[(change.campaign, change.model)],
                                        "sentence": change_sentence(change, site.confidence_label),
                                        "versions": f"{change.before} → {change.after}"}
            # what the summary names after the change: what the page holds several of
            where = [row["model_name"]] if several_models else []
            if len(campaigns) > 1:
                where.append(campaign_title(site, change.campaign))
            row["where"] = ", ".join(where)
            row["diff"] = main.href(diff_docs[key].path) if key in diff_docs else None
            if row["diff"] is None and key not in commands:
                commands[key] = {"campaign": change.campaign, "versions": row["versions"], "command": command_line(
                    site.command("diff", "--a", _selector(result, change.campaign, change.before),
                                 "--b", _selector(result, change.campaign, change.after)))}
            rows.append(row)
        folder = out / self.folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "history.json").write_text(history_json(result) + "\n", encoding="utf-8")
        main.files = [f"{self.folder}/history.json"]
        # A series measured in one version has no history: counted, not listed (history.json has it).
        listed = [s for s in result.series if len(s.points) > 1]
        # a metric's means in this table share its decimals (the precision rule): from its intervals
        spreads: dict[str, list[float | None]] = {}
        for s in listed:
            spreads.setdefault(s.metric, []).append(half_width(s.points[-1].ci_low, s.points[-1].ci_high))
        latest = [{"campaign": s.campaign, "model_name": shown[(s.campaign, s.model)], "environment": s.environment,
                   "label": metric_label(s.metric), "metric": s.metric, "point": s.points[-1],
                   "places": places(spreads[s.metric], digits_for(s.metric)),
                   "versions": len(s.points), "changes": len(s.changes)} for s in listed]
        single = sorted({p.version for s in result.series for p in s.points if p.single_run}, key=rank.__getitem__)
        main.context = {"history": result, "history_command": command_line(site.command("history", "--by", result.by)),
                        "changes": rows, "sentences": rows[:SENTENCE_BUDGET],
                        "commands": list(commands.values()), "diff_page_budget": DIFF_PAGE_BUDGET,
                        "campaign": next(iter(campaigns)) if len(campaigns) == 1 else None,
                        "order_text": ORDER_TEXT[result.order],
                        "reference": (out / REFERENCE).exists() and main.href(REFERENCE),
                        "more": max(0, len(rows) - SENTENCE_BUDGET), "latest": latest, "single_run": single,
                        "unlisted": len(result.series) - len(latest),
                        "series_count": len(result.series)}
        main.charts = history_charts(site, result)

    def nav(self, docs: list[PageDoc]) -> NavItem:
        if len(docs) == 1:
            return (self.title, docs[0].path)
        return (self.title, [("Across versions", docs[0].path), *((d.title, d.path) for d in docs[1:])])


def history_charts(site: SiteData, result: History) -> list[ChartSpec]:
    """One chart per primary metric: each series' mean per version with its CI, change points as rules."""
    from sparkreport.render.report import campaign_titles

    metrics = [m for m in dict.fromkeys(s.metric for s in result.series) if site.config.charted(m)]
    campaigns = {s.campaign for s in result.series}
    titles = campaign_titles(site) if len(campaigns) > 1 else None
    charts = []
    for metric in metrics:
        chart = _metric_chart(result, metric, titles)
        if chart is not None:
            charts.append(chart)
    return charts


def shown_models(result: History) -> dict[tuple[str, str], str]:
    """What the History page calls each model of ``result``'s series, by (campaign, model): the
    name every other page shows it by (its display name), with its key in brackets where two
    models of the page share that name — a series named alike would draw two models as one line."""
    names = {(s.campaign, s.model): s.model_name or s.model for s in result.series}
    keys: dict[str, set[str]] = {}
    for (_campaign, model), name in names.items():
        keys.setdefault(name, set()).add(model)
    return {(campaign, model): name if len(keys[name]) == 1 else f"{name} ({model})"
            for (campaign, model), name in names.items()}


def series_name(campaign: str, model: str, environment: str, titles: dict[str, str] | None = None) -> str:
    """What the History chart calls a series: "model · environment" (``model`` as the page names
    it: :func:`shown_models`), and where the page holds
    several campaigns (``titles``: campaign name → title) "model · environment · campaign title" —
    the same model and environment in two campaigns are two series, and a name shared by two
    would draw them as one line, zigzagging between them at every version."""
    name = f"{model} · {environment}"
    return name if titles is None else f"{name} · {titles.get(campaign, campaign)}"


def _metric_chart(result: History, metric: str, titles: dict[str, str] | None = None) -> ChartSpec | None:
    """The chart of ``metric``; ``titles`` (campaign name → title) where the page holds several
    campaigns, None where it holds one (see :func:`series_name`)."""
    from sparkreport.charts import SERIES_COLOURS, SERIES_DASHES, ChartSpec, metric_title

    # a series of one version is a point, not a course (the page counts them, history.json has them)
    series = [s for s in result.series if s.metric == metric and len(s.points) > 1]
    shown = shown_models(result)
    points = [{"series": series_name(s.campaign, shown[(s.campaign, s.model)], s.environment, titles),
               "version": p.version,
               "mean": _short(p.mean), "ci_low": _short(p.ci_low) if p.n > 1 else None,
               "ci_high": _short(p.ci_high) if p.n > 1 else None, "n": p.n}
              for s in series for p in s.points]
    if not points:
        return None
    changes = [_change_mark(c, series_name(s.campaign, shown[(s.campaign, s.model)], s.environment, titles))
               for s in series for c in s.changes]
    title = f"{metric_label(metric)} across versions"
    # the means' tooltip as the page's table prints them (the precision rule: the decimals of the
    # intervals' half-widths), never in exponent notation (".4g" gave 1.146e+4 tok/s)
    decimals = places([half_width(p.ci_low, p.ci_high) for s in series for p in s.points if p.n > 1],
                      digits_for(metric))
    spec = history_spec(points, changes, versions=result.versions, column=result.column, axis=metric_title(metric),
                        title=title, number_format=tooltip_format([p["mean"] for p in points], decimals))
    per = "per model and environment" if titles is None else "per campaign, model and environment"
    # past five series some series' lines are dashed too (history_spec): the change points' are upright
    rounds = -(-len({p["series"] for p in points}) // len(SERIES_COLOURS))
    kinds = list(SERIES_DASHES)[:rounds]
    lines = f", each in its colour and line ({', '.join(kinds[:-1])} or {kinds[-1]}); upright" if rounds > 1 else ";"
    description = (f"Mean {metric_label(metric)} per version with its CI, {per}{lines} dashed lines "
                   "mark change points (at the first version after the change): vermillion a regression, green "
                   "an improvement.")
    return ChartSpec(name=f"{metric}-history", title=title, description=description, spec=spec, rows=len(points))


def history_spec(points: list[dict[str, Any]], changes: list[dict[str, Any]], *, versions: list[str], column: str,
                 axis: str, title: str, number_format: str = ",.2f") -> dict[str, Any]:
    """The history chart's spec: each series' CI as a rule and its means as a line over the
    versions, in :data:`~sparkreport.charts.SERIES_COLOURS` (apart from the verdicts'), past five
    series each round of five colours in a line of its own (:func:`~sparkreport.charts.series_styles`),
    and the change points (if any) as dashed rules at the version after the change, a regression's
    in the `regressed` colour of every chart, an improvement's in `improved`'s (a colour by value,
    not a scale: the series' colours are one)."""
    from sparkreport.charts import (
        PANEL_WIDTH,
        SERIES_COLOURS,
        VERDICT_COLOURS,
        mark,
        nominal,
        ordinal,
        quantitative,
        series_styles,
        top_level,
    )

    # An explicit domain: layers with different fields drop a sort array, and versions must
    # never fall back to alphabetical order (0.20.0 before 0.20.0rc1).
    def x() -> dict[str, Any]:
        return ordinal("version", axis={"labelAngle": -45, "labelOverlap": True}, scale={"domain": list(versions)},
                       title=f"version ({column})")

    # Two columns of names under the plot while two fit its width; a name with its campaign's
    # title (several campaigns) is longer: one column, or the drawing outgrew the page's column
    # and was scaled down whole.
    columns = 2 if max((len(str(p["series"])) for p in points), default=0) <= LEGEND_TWO_COLUMNS_CHARS else 1
    # Each series' colour (and past five its dash) fixed in the scales, the series in the order of
    # ``points`` (the history's: the models by name, each model's environments the baseline first,
    # as every page lists them); the colour and the dash legends, over one field and domain, are drawn as one, each
    # entry the series' line.
    names = list(dict.fromkeys(str(p["series"]) for p in points))
    styles = series_styles(len(names))
    dashed = len(names) > len(SERIES_COLOURS)
    legend = {"columns": columns, "labelLimit": 400 if columns == 2 else PANEL_WIDTH + 180, "orient": "bottom",
              **({"symbolSize": 400, "symbolStrokeWidth": 2, "symbolType": "stroke"} if dashed else {})}

    def series(scale_range: list[Any]) -> dict[str, Any]:
        return nominal("series", legend=dict(sorted(legend.items())), scale={"domain": names, "range": scale_range},
                       title=None)

    def color() -> dict[str, Any]:
        return series([colour for colour, _dash in styles])

    line = {"color": color(),
            "tooltip": [nominal("series"), ordinal("version"), quantitative("mean", format=number_format),
                        quantitative("n")],
            "x": x(), "y": quantitative("mean", scale={"zero": False}, title=axis)}
    if dashed:
        line["strokeDash"] = series([list(dash) for _colour, dash in styles])
    layers = [
        {"mark": mark("rule"), "encoding": {"color": color(), "x": x(), "y": quantitative("ci_low"),
                                            "y2": {"field": "ci_high"}}},
        {"mark": mark("line", point=True), "encoding": dict(sorted(line.items()))},
    ]
    if changes:
        regression = {"test": "(datum.direction === 'regression')", "value": VERDICT_COLOURS["regressed"]}
        layers.append({"data": {"values": changes}, "mark": mark("rule", strokeDash=[4, 4]), "encoding": {
            "color": {"condition": regression, "value": VERDICT_COLOURS["improved"]},
            "tooltip": [nominal("text", title="change point")],
            "x": ordinal("after", scale={"domain": list(versions)})}})
    return top_level({"layer": layers, "data": {"values": points}}, title=title, width=PANEL_WIDTH + 180)


def _short(value: float) -> float | None:
    """Six significant digits (a chart needs no more; it keeps specs of long histories small)."""
    return float(f"{value:.6g}") if math.isfinite(value) else None


def _change_mark(c: ChangePoint, series: str) -> dict[str, Any]:
    return {"after": c.after, "direction": c.direction,
            "text": f"{series} — {c.change_pct:+.2f}% ({c.before} → {c.after}, {c.direction})"}
