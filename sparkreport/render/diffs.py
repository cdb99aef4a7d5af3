"""Diff pages: one page per diff named in ``sparkreport.yml`` (``diffs:``).

Each page shows what changed between the sides first, the cells that are not comparable, then
per cell × metric the ratio b/a with its Fieller CI and the verdict, with a chart per metric
of both sides' runs and one of the ratios with their CIs. A table per model × environment: those
with a verdict other than `unchanged` in full, first; those unchanged in every metric named once
in a sentence, their tables folded below it (a page of nothing but unchanged cells opens on one
sentence that says so, not on a wall of identical tables); the charts of a metric unchanged in
every cell are folded too, after the others. Its sentences and tables are written by
:mod:`sparkreport.render.diff_text`, which writes those of `sparkreport diff --markdown`
(:mod:`sparkreport.render.diff_comment`) too; this module runs the diff, draws the charts and
fills the template (``diff.md``).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.names import unique_slugs
from sparkreport.render.diff_text import (
    HEADINGS,
    DiffText,
    command_line,
    counts_words,
    side_places,
    sides_sentence,
    sides_words,
)
from sparkreport.render.pages import Page, PageDoc, register
from sparkreport.render.tables import metric_label

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.analysis.diff import DiffResult
    from sparkreport.charts import ChartSpec
    from sparkreport.config import NamedDiff
    from sparkreport.render.context import SiteData


@register
class DiffPage(Page):
    name = "diffs"
    title = "Diffs"
    template = "diff.md"
    folder = "diffs"
    order = 25

    #: The overview's template: every diff, its sides and its verdicts, on one page (/diffs/).
    overview_template = "diffs_index.md"

    def docs(self, site: SiteData, out: Path) -> list[PageDoc]:
        docs = []
        paths = diff_page_paths(site.config.diffs)
        for named in site.config.diffs:
            doc = PageDoc(paths[named.name], named.title or named.name, self.template)
            doc.scope = diff_scope(site, named)
            doc.inputs = campaign_runs(site, {c for c, _m in doc.scope}) if doc.scope is not None else None
            doc.also_reads = [repr(named)]
            doc.fill = functools.partial(fill_diff, site, doc, named)
            docs.append(doc)
        if not docs:
            return docs
        # An overview, so that /diffs/ is a page (as /campaigns/ and /results/ are): it reads what
        # every diff reads, and runs each diff again for its verdict counts.
        overview = PageDoc(f"{self.folder}/index.md", "Overview", self.overview_template)
        scopes = [doc.scope for doc in docs]
        overview.scope = None if any(scope is None for scope in scopes) else \
            list(dict.fromkeys(pair for scope in scopes if scope is not None for pair in scope))
        overview.inputs = None if overview.scope is None else campaign_runs(site, {c for c, _m in overview.scope})
        overview.also_reads = [repr(named) for named in site.config.diffs]
        pages = list(zip(site.config.diffs, docs, strict=True))
        overview.fill = functools.partial(fill_overview, site, overview, pages)
        return [overview, *docs]

    def nav(self, docs: list[PageDoc]) -> tuple[str, Any]:
        return (self.title, [(doc.title, doc.path) for doc in docs])


def diff_page_paths(diffs: list[NamedDiff]) -> dict[str, str]:
    """Each named diff's page in the docs folder (``diffs/<slug>/index.md``), by the diff's name."""
    folders = unique_slugs(named.name for named in diffs)
    return {named.name: f"{DiffPage.folder}/{folders[named.name]}/index.md" for named in diffs}


def named_diff_page(diffs: list[NamedDiff], a: str, b: str) -> str | None:
    """The page's address under the site's (``diffs/<slug>/``) of the named diff whose sides
    select what the selectors ``a`` and ``b`` select, over the project's run store; None when no
    named diff does."""
    from sparkreport.early import selector_conditions

    def terms(selector: str) -> list[tuple[str, str]]:  # `version=1.0` selects what `label.version=1.0` does
        return sorted((key.removeprefix("label."), value) for key, value in selector_conditions(selector))

    paths = diff_page_paths(diffs)
    for named in diffs:
        if (terms(named.a), terms(named.b)) == (terms(a), terms(b)):
            return paths[named.name].removesuffix("index.md")
    return None


def fill_diff(site: SiteData, doc: PageDoc, named: NamedDiff) -> None:
    doc.context, doc.charts = diff_context(site, named)


def fill_overview(site: SiteData, doc: PageDoc, diffs: list[tuple[NamedDiff, PageDoc]]) -> None:
    """Each diff: its title (a link to its page), its sides, their runs, and its verdicts."""
    from sparkreport.analysis.diff import model_names
    from sparkreport.render.report import campaign_titles

    listed = []
    for named, page in diffs:
        a, b, result = run_diff(site, named)
        sides = sides_words(named.a, named.b, campaign_titles(site), model_names(a, b))
        listed.append({"title": page.title, "href": doc.href(page.path), "a": sides["a"], "b": sides["b"],
                       "shared": sides["shared"], "n_a": len(a), "n_b": len(b),
                       "counts": counts_words(result.counts())})
    doc.context = {"diffs": listed}


def campaign_runs(site: SiteData, campaigns: set[str]) -> list[str]:
    """The run ids (published arms included) of ``campaigns``."""
    return [run for key, runs in site.arm_runs().items() if key[0] in campaigns for run in runs]


def run_diff(site: SiteData, named: NamedDiff) -> tuple[pd.DataFrame, pd.DataFrame, DiffResult]:
    """One named diff over the site's dataset: its two sides' runs and its result."""
    from sparkreport.analysis.diff import DiffOptions, Selector, diff, nothing_compared, same_runs, select_sides
    from sparkreport.errors import BuildError, DataError

    opts = site.config.analysis
    where = site.config.path or "sparkreport.yml"
    try:
        a, b = select_sides(site.dataset, site.dataset, Selector.parse(named.a), Selector.parse(named.b), opts)
        result = diff(a, b, opts, DiffOptions(allow_mismatch=list(named.allow_mismatch), metrics=named.metrics,
                                              min_effect=opts.equivalence_margin, min_effects=dict(opts.margins)),
                      baseline=site.config.baseline_of("environment"))
    except DataError as exc:
        raise BuildError(f"{where}: diff {named.name!r}: {exc.format_message()}") from None
    # As `sparkreport diff` refuses them: a page of a diff of runs with themselves, or of nothing,
    # would publish verdicts about no comparison.
    if same_runs(a, b):
        raise BuildError(f"{where}: diff {named.name!r}: both sides select the same {len(a)} runs — "
                         "make a and b select different runs")
    why = nothing_compared(result, a, b)
    if why is not None:
        raise BuildError(f"{where}: diff {named.name!r}: {why}")
    return a, b, result


def diff_context(site: SiteData, named: NamedDiff) -> tuple[dict[str, Any], list[ChartSpec]]:
    """Run one named diff over the site's dataset; its words (:class:`DiffText`, which the
    pull-request comment's are too) and its charts."""
    from sparkreport.analysis.diff import model_names
    from sparkreport.render.report import campaign_titles

    a, b, result = run_diff(site, named)
    names = model_names(a, b)
    titles = campaign_titles(site)
    text = DiffText.of(result, names, site.config, (titles, titles))
    cells = text.cells
    charts: list[ChartSpec] = []
    folded_charts: list[str] = []  # those of a metric unchanged in every cell: folded, as the tables are
    baseline = site.config.baseline_of("environment")
    for metric in dict.fromkeys(str(cell["metric"]) for cell in cells):  # as the tables order them
        of_metric = [c for c in cells if c["metric"] == metric]
        if all(c["constant"] for c in of_metric):
            continue  # the same value in every run, on both sides, in every cell: a chart of one tick each
        decimals = max(side_places(c) for c in of_metric)  # the tables' decimals of the metric's means
        made = [chart for chart in (sides_chart(a, b, metric, named, baseline, decimals),
                                    ratio_chart(result.cells[result.cells["metric"] == metric], metric, names,
                                                site.confidence_label, baseline))
                if chart is not None]
        charts += made
        if all(c["verdict"] == "unchanged" for c in of_metric):
            folded_charts += [chart.name for chart in made]
    context = {"named": named, "text": text, "headings": HEADINGS,
               "sides": sides_sentence(named.a, named.b, titles, names, len(a), len(b)),
               "command": command_line(named_diff_command(named, site)),
               "groups": text.groups, "folded": text.folded, "folded_charts": folded_charts}
    return context, charts


def named_diff_command(named: NamedDiff, site: SiteData) -> list[str]:
    """The `sparkreport diff` that gives a named diff's verdicts, as words: its sides, and the
    workload fields it allows to differ and the metrics it keeps where it names them."""
    return [*site.command("diff"), "--a", named.a, "--b", named.b,
            *(word for field in named.allow_mismatch for word in ("--allow-mismatch", field)),
            *(word for metric in named.metrics or () for word in ("--metric", metric))]


def sides_chart(a: pd.DataFrame, b: pd.DataFrame, metric: str, named: NamedDiff,
                baseline: str | None = None, decimals: int | None = None) -> ChartSpec | None:
    """Both sides' runs per cell (a strip per side), each run as a percentage of its cell's mean
    on side a — so cells of 2,000 and 12,000 tok/s share an axis without flattening each other's
    spread — aggregated if it would pass 5000 rows. The sides are named by what differs in their
    selectors ("a: cache=cold"), not by the whole selector. The cells are in the tables' order
    (:func:`~sparkreport.analysis.diff.cell_order`: by model, ``baseline`` first); a run's value in
    the tooltip has ``decimals`` (the tables' for the metric: :func:`~sparkreport.render.diff_text.side_places`),
    else the metric's catalog decimals."""
    import pandas as pd

    from sparkreport.analysis.diff import model_names
    from sparkreport.charts import MAX_ROWS, ChartSpec, _records
    from sparkreport.render.markdown import digits_for
    from sparkreport.render.precision import tooltip_format

    if metric not in a.columns or metric not in b.columns:
        return None
    name_a, name_b = side_names(named.a, named.b)
    frame = pd.concat([a.assign(side=f"a: {name_a}"), b.assign(side=f"b: {name_b}")], ignore_index=True)
    frame = frame[frame[metric].notna()].copy()
    if frame.empty:
        return None
    # the level first: a label cut short (a long model name) still says which cell it is
    frame["cell"] = frame["environment"].astype(str) + " · " + frame["model_name"].astype(str)
    order = cells_in_order(frame, baseline, model_names(a, b))
    base = frame[frame["side"] == f"a: {name_a}"].groupby("cell")[metric].mean()
    frame["percent"] = 100 * frame[metric] / frame["cell"].map(base)
    frame = frame[frame["percent"].notna()][["cell", "side", metric, "percent"]]
    if frame.empty:
        return None
    if len(frame) > MAX_ROWS:
        frame = frame.groupby(["cell", "side"], as_index=False)[[metric, "percent"]].mean()
    data = _records(frame)
    places = digits_for(metric) if decimals is None else decimals
    title = f"{metric_label(metric)}: both sides' runs"
    return ChartSpec(name=f"{metric}-sides", title=title,
                     description=(f"{metric_label(metric)} of every run on each side, per model and environment, "
                                  "as a percentage of side a's mean there."),
                     spec=sides_spec(data, metric=metric, title=title, order=order,
                                     number_format=tooltip_format([row[metric] for row in data], places)),
                     rows=len(data))


def cells_in_order(frame: pd.DataFrame, baseline: str | None, names: dict[str, str]) -> list[str]:
    """The ``cell`` names of ``frame`` (its ``model`` and ``environment`` columns) in the diff
    tables' order (:func:`~sparkreport.analysis.diff.cell_order`: the models by the names the
    pages show, ``names``: :func:`~sparkreport.analysis.diff.model_names`), for a chart's y sort."""
    from sparkreport.analysis.diff import cell_order

    model = "model" if "model" in frame.columns else "model_name"  # a frame of names alone: by them
    triples = frame[["cell", model, "environment"]].drop_duplicates("cell").itertuples(index=False)
    return [cell for cell, _m, _e in sorted(triples, key=lambda t: cell_order(str(t[1]), str(t[2]), baseline,
                                                                               names.get(str(t[1]))))]


def side_names(a: str, b: str) -> tuple[str, str]:
    """Each side's selector cut to the terms the other lacks ('campaign=x,cache=cold' against
    'campaign=x,cache=warm': 'cache=cold' and 'cache=warm'); whole where nothing is shared."""
    terms_a, terms_b = a.split(","), b.split(",")
    own_a = [t for t in terms_a if t not in terms_b]
    own_b = [t for t in terms_b if t not in terms_a]
    return (",".join(own_a) or a, ",".join(own_b) or b)


def sides_spec(data: list[dict[str, Any]], *, metric: str, title: str,
               order: list[str] | None = None, number_format: str = ",.2f") -> dict[str, Any]:
    """The sides chart's spec: a tick per row of ``data`` at its ``percent`` of side a's mean, a
    row per cell (in ``order`` where given), the two sides offset within it and coloured in
    :data:`~sparkreport.charts.SIDE_COLOURS` (side a's label sorts first: "a: …", "b: …")."""
    from sparkreport.charts import PANEL_WIDTH, SIDE_COLOURS, mark, nominal, quantitative, top_level

    return top_level({"data": {"values": data}, "mark": mark("tick", thickness=2), "encoding": {
        "color": nominal("side", legend={"labelLimit": 400, "orient": "bottom"}, scale={"range": list(SIDE_COLOURS)},
                         title=None),
        "tooltip": [nominal("cell"), nominal("side"), quantitative(metric, format=number_format),
                    quantitative("percent", format=".2f", title="% of a's mean")],
        "x": quantitative("percent", scale={"zero": False}, title=f"{metric_label(metric)}, % of side a's mean"),
        "y": nominal("cell", axis={"labelLimit": 400}, title=None, **({"sort": order} if order else {})),
        "yOffset": nominal("side")}},
        title=title, width=PANEL_WIDTH)


def ratio_chart(cells: pd.DataFrame, metric: str, names: dict[str, str], level: str,
                baseline: str | None = None) -> ChartSpec | None:
    """The ratio b/a per cell with its Fieller CI at the confidence ``level`` the diff used
    ('95%'), and the line of no change at 1; cells are named as the side-by-side chart and the
    tables name them (the environment · the model's display name), in the tables' order."""
    from sparkreport.charts import ChartSpec, _records

    frame = cells[cells["ratio"].notna()].copy()
    if frame.empty:
        return None
    frame["cell"] = frame["environment"].astype(str) + " · " + frame["model"].astype(str).map(lambda m: names.get(m, m))
    order = cells_in_order(frame, baseline, names)
    data = _records(frame[["cell", "ratio", "ratio_ci_low", "ratio_ci_high", "verdict"]])
    title = f"{metric_label(metric)}: ratio b/a"
    return ChartSpec(name=f"{metric}-ratio", title=title,
                     description=f"The ratio of means b/a of {metric_label(metric)} per cell with its Fieller CI.",
                     spec=ratio_spec(data, title=title, level=level, order=order), rows=len(data))


def ratio_spec(data: list[dict[str, Any]], *, title: str, level: str, order: list[str] | None = None) -> dict[str, Any]:
    """The ratio chart's spec: per cell in ``data`` the CI (at ``level``) as a rule and the ratio
    as a point coloured by verdict — each verdict in its colour on every chart (the whole domain
    in the spec), the legend listing those drawn — and a dashed rule at 1. A cell's name (the
    environment · the model's name) is cut only past :data:`~sparkreport.charts.LABEL_LIMIT_PX`;
    the cells are in ``order`` where given."""
    from sparkreport.charts import (
        LABEL_LIMIT_PX,
        PANEL_WIDTH,
        RATIO_VERDICTS,
        mark,
        nominal,
        quantitative,
        top_level,
        verdict_colour,
    )

    sort = {"sort": order} if order else {}
    layers = [
        {"mark": mark("rule"), "encoding": {
            "x": quantitative("ratio_ci_low", scale={"zero": False}, title=f"b / a ({level} CI)"),
            "x2": {"field": "ratio_ci_high"},
            "y": nominal("cell", title=None, axis={"labelLimit": LABEL_LIMIT_PX}, **sort)}},
        {"mark": mark("point", filled=True, size=60), "encoding": {
            "color": verdict_colour(RATIO_VERDICTS, (str(d["verdict"]) for d in data)),
            "tooltip": [nominal("cell"), quantitative("ratio", format=".4f"), nominal("verdict")],
            "x": quantitative("ratio"), "y": nominal("cell", **sort)}},
        {"data": {"values": [{"one": 1.0}]}, "mark": mark("rule", strokeDash=[4, 4]),
         "encoding": {"x": quantitative("one")}},
    ]
    return top_level({"layer": layers, "data": {"values": data}}, title=title, width=PANEL_WIDTH)


def diff_scope(site: SiteData, named: NamedDiff) -> list[tuple[str, str]] | None:
    """The (campaign, model) pairs a diff's sides select by campaign; None when a side names none."""
    campaigns = set()
    for side in (named.a, named.b):
        found = [part.split("=", 1)[1].strip() for part in side.split(",") if part.strip().startswith("campaign=")]
        if not found:
            return None
        campaigns.update(found)
    return [key[:2] for key in site.arm_runs() if key[0] in campaigns]
