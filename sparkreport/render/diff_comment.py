"""The pull-request comment of a diff: what `sparkreport diff --markdown` prints and the scaffold's
`diff-comment.yml` workflow posts on a pull request that changes `runs/` (GitHub-flavoured Markdown).

It reads as the diff page does, for a reviewer who reads it once, for its verdict: a headline of
the verdict counts, regressions first and marked ⚠; the model × environment pairs with any verdict
other than `unchanged` in full — those with a regression first, then improved, inconclusive, not
comparable and missing (the page keeps the model order every page uses) — with the page's table
per pair; the pairs unchanged in every metric named once, their tables folded in a `<details>`
block. Every number of the diff is in it, written as the page writes it. The grouping is the
page's (:func:`sparkreport.render.diffs.diff_groups`, :func:`~sparkreport.render.diffs.unchanged_groups`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkreport.metrics import with_unit
from sparkreport.render.diffs import changed_rows, diff_groups, min_effect_words, table_cells, unchanged_groups
from sparkreport.render.markdown import MISSING, counted, md_escape, num, pvalue, ratio_interval, signed

if TYPE_CHECKING:
    from sparkreport.analysis.diff import DiffResult
    from sparkreport.config import ProjectConfig

#: The verdicts in the order a reviewer needs them: the headline's counts, and the order of the
#: pairs shown in full (a pair goes where its first verdict in this order puts it).
ATTENTION = ("regressed", "improved", "inconclusive", "not comparable", "missing in a", "missing in b", "unchanged")
#: Marks a regression in the headline and in its table row.
REGRESSION_MARK = "⚠"


def diff_comment(result: DiffResult, a: str, b: str, names: dict[str, str], config: ProjectConfig) -> str:
    """The comment on ``result``, the diff of side ``a`` against side ``b`` (their selectors or
    run stores, as given); ``names``: model → the name the pages show (``side_model_names``)."""
    cells = table_cells(result.cells, names, config.primary_metrics) if not result.cells.empty else []
    groups = diff_groups(cells)
    ci_label = f"{config.analysis.confidence:.0%}"
    lines = [f"### sparkreport diff: `{a}` → `{b}`", "", headline(result.counts()), "", "#### What changed", ""]
    if result.changed:  # worded as the page's table (a label as "cache (label)")
        lines += ["| Field | a | b |", "|---|---|---|"]
        lines += [f"| {md_escape(r['field'])} | {md_escape(r['a'])} | {md_escape(r['b'])} |"
                  for r in changed_rows(result.changed, {})]
    else:
        lines.append("Nothing recorded differs between the sides.")
    if result.not_comparable:
        lines += ["", "#### Not comparable", ""]
        lines += [f"- {md_escape(r['model'])} / {md_escape(r['environment'])}: {md_escape(r['reason'])}"
                  for r in result.not_comparable]
    lines += ["", "#### Results", ""]
    for group in sorted((g for g in groups if not g["unchanged"]), key=attention):  # sorted() keeps ties in order
        lines += [*table(group, ci_label), ""]
    folded = unchanged_groups(groups)
    if folded:
        lines += [unchanged_sentence(folded), "",
                  f"<details><summary>{counted(folded['groups'], 'table')} of unchanged comparisons</summary>",
                  ""]  # the blank line: GitHub renders the Markdown inside only after one
        for group in groups:
            if group["unchanged"]:
                lines += [*table(group, ci_label), ""]
        lines += ["</details>", ""]
    lines.append(verdict_rule(cells, config.analysis.alpha))
    return "\n".join(lines)


def headline(counts: dict[str, int]) -> str:
    """The counts per verdict on one line, regressions first and marked: "**⚠ 1 regressed**,
    **2 improved**, 17 unchanged — of 20 comparisons (model × environment × metric).", or
    "**All 28 comparisons (model × environment × metric) are unchanged.**"."""
    total = sum(counts.values())
    if not total:
        return "**Nothing to compare.**"
    if counts.get("unchanged") == total:
        return ("**The one comparison (model × environment × metric) is unchanged.**" if total == 1 else
                f"**All {total:,} comparisons (model × environment × metric) are unchanged.**")
    said = [marked(f"{counts[verdict]:,} {verdict}", verdict) for verdict in ATTENTION if counts.get(verdict)]
    return f"{', '.join(said)} — of {counted(total, 'comparison')} (model × environment × metric)."


def attention(group: dict[str, Any]) -> int:
    """Where a pair shown in full goes: the rank in :data:`ATTENTION` of its most pressing verdict."""
    return min(ATTENTION.index(str(cell["verdict"])) if cell["verdict"] in ATTENTION else len(ATTENTION)
               for cell in group["cells"])


def table(group: dict[str, Any], ci_label: str) -> list[str]:
    """One pair's table, as the diff page's: its name above it, a row per metric (:func:`marked`
    verdicts)."""
    lines = [f"**{md_escape(group['name'])}**", "",
             f"| Metric | a | b | Change | {ci_label} CI of b/a | p (Holm) | Verdict |",
             "|---|---|---|---|---|---|---|"]
    for c in group["cells"]:
        change = MISSING if c["change_pct"] is None else f"{signed(c['change_pct'], 2)}%"
        lines.append(f"| {md_escape(with_unit(str(c['label']), c['unit']))} | {num(c['mean_a'], c['metric'])} "
                     f"| {num(c['mean_b'], c['metric'])} | {change} "
                     f"| {ratio_interval(c['ratio_ci_low'], c['ratio_ci_high'])} | {pvalue(c['p_holm'])} "
                     f"| {marked(str(c['verdict']), str(c['verdict']))}{' †' if c['constant'] else ''} |")
    return lines


def marked(text: str, verdict: str) -> str:
    """``text`` (a verdict, or a count of one) as the comment writes it: plain for `unchanged`,
    bold for any other verdict, a regression marked too — to be seen at a glance (after a no-break
    space, which a narrow Verdict column would otherwise break, the mark on a line of its own)."""
    if verdict == "unchanged":
        return text
    return f"**{REGRESSION_MARK}\u00a0{text}**" if verdict == "regressed" else f"**{text}**"


def unchanged_sentence(folded: dict[str, Any]) -> str:
    """The pairs unchanged in every metric, named once (:func:`unchanged_groups`'s words)."""
    pairs = ("model × environment pair is" if folded["groups"] == 1 else
             f"{counted(folded['groups'], 'model × environment pair')} are")
    span = f", {folded['changes']}" if folded["changes"] else ""
    return (f"The {'' if folded['every'] else 'other '}{pairs} unchanged in every metric "
            f"({counted(folded['comparisons'], 'comparison')}{span}): {md_escape(folded['names'])}.")


def verdict_rule(cells: list[dict[str, Any]], alpha: float) -> str:
    """What the verdicts mean, once, below the tables (and the † of a metric stated, not tested)."""
    rule = (f"`improved` / `regressed`: Holm-adjusted Welch p < {alpha:g} and a change of at least the minimum "
            f"effect ({min_effect_words(cells)}) in the metric's better / worse direction; `unchanged`: TOST puts "
            "the change within ± the minimum effect; otherwise `inconclusive`.")
    if any(cell["constant"] for cell in cells):
        rule += " †: the same value in every run of both sides, so stated, not tested."
    return rule
