"""What a diff says, written once for the two places it is published: the diff page of a named
diff (``templates/diff.md``, filled by :mod:`sparkreport.render.diffs`) and the pull-request
comment of `sparkreport diff --markdown` (:mod:`sparkreport.render.diff_comment`).

Every sentence and table the two share is made here — the sides in words, the lead (the counts
per verdict, or the one sentence that says every comparison is unchanged), the section headings,
the "How the sides differ" table, the pairs not comparable, a pair's table of verdicts, the
sentence that names the pairs unchanged in every metric, the title of their fold and what the
verdicts mean — and :func:`command_line` writes a command a reader copies, the page's and the
comment's alike. The page and the comment keep their own layout: the page's headings and fold
(``??? note``), its charts and the command that reproduces it; the comment's heading of
selectors, its pairs in the order of :data:`ATTENTION`, its ``<details>`` fold, its cuts to
GitHub's limit and the verdicts' meaning last.

The pieces are Markdown with every value from the data already escaped, returned as
:class:`~markupsafe.Markup` so that the page's template writes them as they are.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from markupsafe import Markup

from sparkreport.dataset import frame_rows
from sparkreport.metrics import with_unit
from sparkreport.render.markdown import (
    MISSING,
    code,
    counted,
    digits_for,
    is_missing,
    md_escape,
    num,
    pvalue,
)
from sparkreport.render.precision import deltas, half_width, places
from sparkreport.render.tables import metric_label, metric_order

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    import pandas as pd

    from sparkreport.analysis.diff import DiffResult
    from sparkreport.config import ProjectConfig

#: The verdicts in the order a reader needs them: the counts of the lead, and (in the comment)
#: the order of the pairs shown in full.
ATTENTION = ("regressed", "improved", "inconclusive", "not comparable", "missing in a", "missing in b", "unchanged")
#: Marks a regression in the lead's counts and in its table row.
REGRESSION_MARK = "⚠"


class Headings(NamedTuple):
    """What a diff's sections are headed, on the page and in the comment (each at its own level)."""

    changed: str = "How the sides differ"
    not_comparable: str = "Not comparable"
    results: str = "Results"


HEADINGS = Headings()


@dataclass(frozen=True)
class DiffText:
    """One diff's result in the words its page and its comment share.

    ``cells``: :func:`table_cells`; ``groups``: :func:`diff_groups` of them (a table each);
    ``folded``: :func:`unchanged_groups` (None when no pair is unchanged in every metric);
    ``counts``: the comparisons per verdict; ``changed``: :func:`changed_rows`;
    ``not_comparable``: the pairs not diffed (``DiffResult.not_comparable``); ``ci_label``,
    ``alpha``: the confidence level and significance level the diff used; ``min_effects``:
    :func:`min_effect_words`."""

    cells: list[dict[str, Any]]
    groups: list[dict[str, Any]]
    folded: dict[str, Any] | None
    counts: dict[str, int]
    changed: list[dict[str, str]]
    not_comparable: list[dict[str, Any]]
    ci_label: str
    alpha: float
    min_effects: str

    @classmethod
    def of(cls, result: DiffResult, names: dict[str, str], config: ProjectConfig,
           titles: tuple[dict[str, str], dict[str, str]] = ({}, {})) -> DiffText:
        """The words of ``result``. ``names``: model → the name the pages show
        (:func:`~sparkreport.analysis.diff.model_names`); ``titles``: side a's and side b's
        campaign → title (one store's twice for two selections of it)."""
        cells = table_cells(result.cells, names, config.primary_metrics) if not result.cells.empty else []
        groups = diff_groups(cells, config.baseline_of("environment"))
        return cls(cells=cells, groups=groups, folded=unchanged_groups(groups), counts=result.counts(),
                   changed=changed_rows(result.changed, *titles), not_comparable=list(result.not_comparable),
                   ci_label=config.analysis.confidence_label, alpha=config.analysis.alpha,
                   min_effects=min_effect_words(cells))

    @property
    def every_unchanged(self) -> bool:
        """Every comparison is `unchanged`: the lead says so, and nothing else does."""
        return self.folded is not None and bool(self.folded["every"])

    @property
    def constants(self) -> bool:
        """Some metric has one value in every run of both sides (stated, not tested: †)."""
        return any(cell["constant"] for cell in self.cells)

    def lead(self) -> Markup:
        """What the diff found, first: :func:`all_unchanged` where every comparison is, else
        :func:`headline`."""
        if self.every_unchanged:
            assert self.folded is not None
            return all_unchanged(self.folded, self.min_effects)
        return headline(self.counts)

    def changed_table(self) -> Markup:
        """The "How the sides differ" table (a label as "cache (label)", a campaign by its title),
        or the sentence that says nothing recorded differs."""
        if not self.changed:
            return Markup("Nothing recorded differs between the sides.")
        return Markup("\n".join(["| Field | a | b |", "|---|---|---|", *(
            f"| {md_escape(r['field'])} | {md_escape(r['a'])} | {md_escape(r['b'])} |" for r in self.changed)]))

    def not_comparable_items(self) -> list[Markup]:
        """A list item per pair not comparable: "- model / environment: why"."""
        return [Markup(f"- {md_escape(r['model'])} / {md_escape(r['environment'])}: {md_escape(r['reason'])}")
                for r in self.not_comparable]

    def table(self, group: dict[str, Any]) -> Markup:
        """One pair's table: its name above it, a row per metric (the verdict :func:`marked`)."""
        lines = [f"**{md_escape(group['name'])}**", "",
                 f"| Metric | a | b | Change ({self.ci_label} CI) | p (Holm) | Verdict |",
                 "|---|---|---|---|---|---|"]
        for c in group["cells"]:
            digits = side_places(c)
            lines.append(f"| {md_escape(with_unit(str(c['label']), c['unit']))} | {num(c['mean_a'], digits=digits)} "
                         f"| {num(c['mean_b'], digits=digits)} | {change_words(c)} | {pvalue(c['p_holm'])} "
                         f"| {marked(str(c['verdict']), str(c['verdict']))}{' †' if c['constant'] else ''} |")
        return Markup("\n".join(lines))

    def unchanged_sentence(self) -> Markup:
        """The pairs unchanged in every metric, named once, with the span of their changes (what
        the page and the comment say above their folded tables, where the lead did not)."""
        folded = self.folded
        if folded is None:
            return Markup("")
        pairs = ("model × environment pair is" if folded["groups"] == 1 else
                 f"{counted(folded['groups'], 'model × environment pair')} are")
        span = f", {folded['changes']}" if folded["changes"] else ""
        return Markup(f"The {'' if folded['every'] else 'other '}{pairs} unchanged in every metric "
                      f"({counted(folded['comparisons'], 'comparison')}{span}): {md_escape(folded['names'])}.")

    def fold_title(self, kept: int | None = None) -> Markup:
        """The title of the fold of the unchanged pairs' tables: "4 tables of unchanged
        comparisons", or "3 of 4 …" where only ``kept`` of them are in it."""
        groups = self.folded["groups"] if self.folded is not None else 0
        of = "" if kept is None or kept == groups else f"{kept:,} of "
        return Markup(f"{of}{counted(groups, 'table')} of unchanged comparisons")

    def verdict_rule(self) -> Markup:
        """What the verdicts mean, once (and the † of a metric stated, not tested)."""
        rule = (f"A comparison is `improved` or `regressed` only when the Holm-adjusted Welch p-value is below "
                f"{self.alpha:g} **and** the change is at least the minimum effect ({self.min_effects}), in the "
                "metric's better or worse direction; `unchanged` only when TOST shows the change lies within ± the "
                "minimum effect; otherwise `inconclusive`.")
        if self.constants:
            rule += (" A metric with the same value in every run of both sides (marked †) is not tested: its "
                     "change is exact, and `unchanged` means it is smaller than the minimum effect.")
        return Markup(rule)


def verdict_counts(counts: Mapping[str, int], verdicts: Iterable[str] = ATTENTION) -> list[tuple[str, str]]:
    """The verdicts of ``verdicts`` that ``counts`` has, in that order, each counted: [("regressed",
    "1 regressed"), ("unchanged", "18 unchanged")]. What the lead, the overview of diffs and the
    ``--fail-on`` gate's line count."""
    return [(verdict, f"{counts[verdict]:,} {verdict}") for verdict in verdicts if counts.get(verdict)]


def counts_words(counts: Mapping[str, int]) -> Markup:
    """The counts per verdict on one line, regressions first and marked: "**⚠ 1 regressed**, **1
    improved**, 18 unchanged" ("" for no comparison)."""
    return Markup(", ".join(marked(words, verdict) for verdict, words in verdict_counts(counts)))


def headline(counts: Mapping[str, int]) -> Markup:
    """The counts per verdict and what they count: "**⚠ 1 regressed**, **2 improved**, 17
    unchanged — of 20 comparisons (model × environment × metric)." (a diff of nothing but
    unchanged comparisons opens on :func:`all_unchanged` instead)."""
    total = sum(counts.values())
    if not total:
        return Markup("**Nothing to compare.**")
    return Markup(f"{counts_words(counts)} — of {counted(total, 'comparison')} (model × environment × metric).")


def all_unchanged(folded: dict[str, Any], min_effects: str) -> Markup:
    """The lead of a diff whose every comparison is unchanged (``folded``: :func:`unchanged_groups`
    of all its pairs): "**All 28 comparisons (model × environment × metric) are unchanged** —
    changes from -0.07% to +0.05%, each within ± the minimum effect (2%) — in the 4 model ×
    environment pairs: A · native, …". It takes the place of the counts and of the sentence on
    the unchanged pairs: said once."""
    many = folded["comparisons"] > 1
    what = (f"All {counted(folded['comparisons'], 'comparison')} (model × environment × metric) are" if many else
            "The one comparison (model × environment × metric) is")
    span = f" {folded['changes']}," if folded["changes"] else ""
    pairs = ("the model × environment pair" if folded["groups"] == 1 else
             f"the {counted(folded['groups'], 'model × environment pair')}")
    return Markup(f"**{what} unchanged** —{span} {'each ' if many else ''}within ± the minimum effect "
                  f"({min_effects}) — in {pairs}: {md_escape(folded['names'])}.")


def marked(text: str, verdict: str) -> str:
    """``text`` (a verdict, or a count of one) as a diff writes it: plain for `unchanged`, bold
    for any other verdict, a regression marked too — to be seen at a glance (after a no-break
    space, which a narrow Verdict column would otherwise break, the mark on a line of its own)."""
    if verdict == "unchanged":
        return text
    return f"**{REGRESSION_MARK}\u00a0{text}**" if verdict == "regressed" else f"**{text}**"


def sides_sentence(a: str, b: str, titles: dict[str, str], names: dict[str, str], n_a: int, n_b: int) -> Markup:
    """The sides of a diff of two selections of one run store (selectors ``a`` and ``b``) in words:
    "Both sides: campaign “H100 control”. Side **a**: cache cold (40 runs); side **b**: cache warm
    (40 runs)." — a campaign by its title (``titles``: campaign → title), a model by its name
    (``names``), a label without its prefix (:func:`sides_words`); ``n_a``, ``n_b``: the runs each
    side selects."""
    words = sides_words(a, b, titles, names)
    both = f"Both sides: {md_escape(words['shared'])}. " if words["shared"] else ""
    return Markup(f"{both}Side **a**: {md_escape(words['a'])} ({counted(n_a, 'run')}); "
                  f"side **b**: {md_escape(words['b'])} ({counted(n_b, 'run')}).")


def command_line(words: Iterable[str]) -> Markup:
    """A command a reader copies, as inline code: its words quoted for a POSIX shell where they
    need it (``sparkreport diff --a 'label.note=two words' --b …``)."""
    return code(shlex.join(words))


def table_cells(cells: pd.DataFrame, names: dict[str, str], primary_metrics: list[str]) -> list[dict[str, Any]]:
    """A diff's cells (``DiffResult.cells``) as its tables list them: in the order every page lists
    metrics (``primary_metrics`` first), not by key, each with its metric's ``label``, its model's
    ``model_name`` (from ``names``, else the model) and ``constant`` (stated, not tested)."""
    from sparkreport.analysis.diff import CONSTANT

    order = {m: i for i, m in enumerate(metric_order(cells["metric"].astype(str), primary_metrics))}
    listed = sorted(frame_rows(cells), key=lambda cell: order[str(cell["metric"])])
    for cell in listed:
        cell["label"] = metric_label(str(cell["metric"]))
        cell["model_name"] = names.get(str(cell["model"]), str(cell["model"]))
        cell["constant"] = cell["reason"] == CONSTANT
    return listed


def min_effect_words(cells: list[dict[str, Any]]) -> str:
    """The minimum effects the cells were tested against: "2%", or "2%, 5% for KV cache" — the
    most common first, unnamed; "—" when no cell has one."""
    from sparkreport.render.markdown import percent
    from sparkreport.render.report import join_and

    effects: dict[float, list[str]] = {}
    for cell in cells:
        if cell["min_effect"] is not None and cell["label"] not in effects.setdefault(float(cell["min_effect"]), []):
            effects[float(cell["min_effect"])].append(str(cell["label"]))
    ordered = sorted(effects, key=lambda e: -len(effects[e]))
    return ", ".join([percent(ordered[0], 0)] + [f"{percent(e, 0)} for {join_and(effects[e])}"
                                                 for e in ordered[1:]]) if ordered else "—"


def change_figures(cell: Mapping[str, Any]) -> tuple[str, str, str]:
    """A diff row's change b/a − 1 and its interval's ends (of b/a), in percent, printed together
    as every difference in percent is (:func:`~sparkreport.render.precision.deltas`: signed, two
    decimals, more only where a figure that is not zero would print as 0.00): ("+1.23", "+0.50",
    "+1.96"); "—" for a figure the row does not have (a constant, a single run: no interval)."""
    ends = [cell.get("ratio_ci_low"), cell.get("ratio_ci_high")]
    low, high = (None if end is None or is_missing(end) else (float(end) - 1) * 100 for end in ends)
    change, low_text, high_text = deltas(cell.get("change_pct"), low, high)
    return change, low_text, high_text


def change_words(cell: Mapping[str, Any]) -> str:
    """A diff row's Change cell: the change in percent and its interval in the same unit and
    decimals, "+1.23% (+0.50 to +1.96)" (:func:`change_figures`), as the Results and History pages
    write a Δ %; a constant's alone (stated, not tested: "0.00%"), "(no CI)" after a change without
    an interval, "—" without a change."""
    from sparkreport.analysis.diff import CONSTANT

    change, low, high = change_figures(cell)
    if change == MISSING:
        return MISSING
    if MISSING not in (low, high):
        return f"{change}% ({low} to {high})"
    return f"{change}%" if cell.get("reason") == CONSTANT else f"{change}% (no CI)"


def side_places(cell: dict[str, Any]) -> int:
    """The decimals of a diff row's two means (the precision rule, :mod:`~sparkreport.render.precision`):
    the place of the first significant digit of the change's uncertainty in the metric's unit —
    the half-width of the interval of b/a times a's mean; the metric's catalog decimals where the
    change has no interval (a constant, a single run)."""
    width = half_width(cell["ratio_ci_low"], cell["ratio_ci_high"])
    spread = None if width is None or is_missing(cell["mean_a"]) else width * float(cell["mean_a"])
    return places([spread], digits_for(str(cell["metric"])))


def diff_groups(cells: list[dict[str, Any]], baseline: str | None = None) -> list[dict[str, Any]]:
    """``cells`` per model × environment, a table each, in the order of the diff's cells
    (:func:`~sparkreport.analysis.diff.cell_order`: by the models' ``model_name``, each model's
    environments ``baseline`` first, then by name; a table's cells keep theirs: primary metrics first). Each
    has ``name`` (the model's name · the environment), ``cells`` and ``unchanged``: every verdict
    is `unchanged`."""
    from sparkreport.analysis.diff import cell_order

    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for cell in sorted(cells, key=lambda c: cell_order(str(c["model"]), str(c["environment"]), baseline,
                                                       str(c["model_name"]))):
        grouped.setdefault((str(cell["model"]), str(cell["environment"])), []).append(cell)
    return [{"name": f"{rows[0]['model_name']} · {environment}", "cells": rows,
             "unchanged": all(cell["verdict"] == "unchanged" for cell in rows)}
            for (_model, environment), rows in grouped.items()]


def unchanged_groups(groups: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What a diff says once of the groups unchanged in every metric (None when there are
    none): how many (``groups``, ``comparisons``), their names cut short (``names``: "a, b and
    c", "a, b, … and 12 more"), the span of their changes in words (``changes``: "changes from
    -0.07% to +0.05%"; None when no cell has one) and whether they are all of the diff's groups
    (``every``)."""
    from sparkreport.names import SHOWN_VALUES, shown_values
    from sparkreport.render.markdown import is_missing
    from sparkreport.render.report import join_and

    folded = [group for group in groups if group["unchanged"]]
    if not folded:
        return None
    names = [str(group["name"]) for group in folded]
    changes = [float(cell["change_pct"]) for group in folded for cell in group["cells"]
               if not is_missing(cell["change_pct"])]
    span = None
    if changes:
        low, high = (f"{text}%" for text in deltas(min(changes), max(changes)))  # as the tables write them
        span = (f"changes from {low} to {high}" if low != high else
                f"{'a change' if len(changes) == 1 else 'every change'} of {low}")
    return {"groups": len(folded), "comparisons": sum(len(group["cells"]) for group in folded),
            "every": len(folded) == len(groups), "changes": span,
            "names": join_and(names) if len(names) <= SHOWN_VALUES else
            shown_values(names, sep="; " if any("," in name for name in names) else ", ")}


def selector_words(terms: list[str], titles: dict[str, str], models: dict[str, str]) -> str:
    """Selector terms as a reader says them: ``campaign=x`` by the campaign's title, ``model=m`` by
    the model's name, any other ``key=value`` as "key value" (a label without its ``label.``
    prefix): 'campaign=x', 'cache=cold' → 'campaign “H100 control”, cache cold'."""
    from sparkreport.early import selector_conditions

    words = []
    for key, value in selector_conditions(",".join(terms)) if terms else ():
        name = key.removeprefix("label.")
        words.append(f"campaign “{titles.get(value, value)}”" if name == "campaign" else
                     models.get(value, value) if name == "model" else f"{name} {value}")
    return ", ".join(words)


def sides_words(a: str, b: str, titles: dict[str, str], models: dict[str, str]) -> dict[str, str]:
    """A diff's sides in words: ``shared`` (the terms both selectors have; empty when none), and
    ``a`` and ``b``, each side's own terms ("all of them" for a side that has none of its own)."""
    terms_a, terms_b = a.split(","), b.split(",")
    shared = [t for t in terms_a if t in terms_b]
    return {"shared": selector_words(shared, titles, models),
            **{side: selector_words([t for t in own if t not in shared], titles, models) or "all of them"
               for side, own in (("a", terms_a), ("b", terms_b))}}


def field_words(field: str) -> str:
    """A "How the sides differ" field as the table names it: a label as "cache (label)"."""
    return f"{field.removeprefix('label.')} (label)" if field.startswith("label.") else field


def changed_rows(changed: list[dict[str, str]], titles_a: dict[str, str],
                 titles_b: dict[str, str]) -> list[dict[str, str]]:
    """What changed between the sides (``DiffResult.changed``) as the "How the sides differ" table
    lists it: each field in :func:`field_words`, each side's campaigns by its own titles (campaign
    → title; one without a title by its name): ``titles_a`` and ``titles_b``, one store's twice on
    the page (two selections of it), each run store's in a comment on two (``--a-runs``/``--b-runs``)."""
    titles = {"a": titles_a, "b": titles_b}
    return [{"field": field_words(r["field"]), **{
        side: ", ".join(titles[side].get(v, v) for v in r[side].split(", ")) if r["field"] == "campaign" else r[side]
        for side in ("a", "b")}} for r in changed]
