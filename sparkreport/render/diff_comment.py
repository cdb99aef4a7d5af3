"""The pull-request comment of a diff: what `sparkreport diff --markdown` prints and the scaffold's
`diff-comment.yml` workflow posts on a pull request that changes `runs/` (GitHub-flavoured Markdown).

It reads as the diff page does, for a reviewer who reads it once, for its verdict: the sides in
words (of two selections of one run store); a headline of the verdict counts, regressions first
and marked ⚠ — or, where every comparison is unchanged, the page's one sentence that says so, with
the span of the changes, the minimum effect and the pairs, said nowhere else; what changed between
the sides; the model × environment pairs with any verdict other than `unchanged` in full — those
with a regression first, then improved, inconclusive, not comparable and missing (the page keeps
the model order every page uses) — with the page's table per pair; the pairs unchanged in every
metric named once, their tables folded in a `<details>` block. Every number of the diff is in it,
written as the page writes it, and every campaign is named by the title the site gives it (its
name in the selectors, as in the page's command). The grouping is the page's
(:func:`sparkreport.render.diffs.diff_groups`, :func:`~sparkreport.render.diffs.unchanged_groups`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkreport.metrics import with_unit
from sparkreport.render.diffs import (
    changed_rows,
    diff_groups,
    min_effect_words,
    sides_words,
    table_cells,
    unchanged_groups,
)
from sparkreport.render.markdown import MISSING, counted, md_escape, num, pvalue, ratio_interval, signed

if TYPE_CHECKING:
    from collections.abc import Callable

    from sparkreport.analysis.diff import DiffResult
    from sparkreport.config import ProjectConfig

#: The verdicts in the order a reviewer needs them: the headline's counts, and the order of the
#: pairs shown in full (a pair goes where its first verdict in this order puts it).
ATTENTION = ("regressed", "improved", "inconclusive", "not comparable", "missing in a", "missing in b", "unchanged")
#: Marks a regression in the headline and in its table row.
REGRESSION_MARK = "⚠"


#: GitHub refuses a comment of more than 65,536 characters (the API's "Body is too long").
GITHUB_LIMIT = 65_536
#: The comment stays within this many characters, room left for what a workflow adds to it.
COMMENT_LIMIT = 60_000
#: Where the whole diff is when the comment names nothing better: the command, with --json.
WHOLE_DIFF = "in the output of `sparkreport diff --json`"


def diff_comment(result: DiffResult, a: str, b: str, names: dict[str, str], config: ProjectConfig, *,
                 titles: tuple[dict[str, str], dict[str, str]] | None = None, sides: str | None = None,
                 whole_diff: str = WHOLE_DIFF, limit: int | None = None) -> str:
    """The comment on ``result``, the diff of side ``a`` against side ``b`` (their selectors or
    run stores, as given); ``names``: model → the name the pages show (``side_model_names``).
    ``titles``: side a's and side b's campaign → title, what the site names each campaign by
    (:func:`~sparkreport.render.report.store_campaign_titles` of each side's run store); a
    campaign not in them keeps its name. ``sides``: the sides in words, under the heading
    (:func:`sides_sentence`).

    It keeps within ``limit`` characters (:data:`COMMENT_LIMIT`), so that GitHub takes it however
    large the diff: the sides, the headline's counts and what changed always stay; past the limit the
    folded tables of the unchanged pairs are left out first, from the last; then, only if that
    is not enough, the pairs not comparable, from the last; then the other tables, least pressing
    first. Each cut is said in a line that names ``whole_diff``, where the whole diff is (the end
    of a sentence: "on [the diff page](…)", "in the output of `sparkreport diff … --json`")."""
    limit = COMMENT_LIMIT if limit is None else limit
    cells = table_cells(result.cells, names, config.primary_metrics) if not result.cells.empty else []
    groups = diff_groups(cells)
    ci_label = config.analysis.confidence_label
    shown = sorted((g for g in groups if not g["unchanged"]), key=attention)  # sorted() keeps ties in order
    tables = ["\n".join(table(group, ci_label)) for group in [*shown, *(g for g in groups if g["unchanged"])]]
    not_comparable = [f"- {md_escape(r['model'])} / {md_escape(r['environment'])}: {md_escape(r['reason'])}"
                      for r in result.not_comparable]
    folded = unchanged_groups(groups)
    every = folded is not None and folded["every"]  # said once, in place of the headline (as the page does)
    lead = all_unchanged(folded, min_effect_words(cells)) if folded and every else headline(result.counts())
    changed = changed_rows(result.changed, *(titles or ({}, {})))  # each side's campaigns by its store's titles

    def written(kept_tables: int, kept_not_comparable: int) -> str:
        """The comment with the first ``kept_tables`` tables (those shown in full, then the folded
        ones) and the first ``kept_not_comparable`` pairs not comparable."""
        lines = [f"### sparkreport diff: `{a}` → `{b}`", "", *([sides, ""] if sides else []),
                 lead, "", "#### What changed", ""]
        if changed:  # worded as the page's table (a label as "cache (label)", a campaign by its title)
            lines += ["| Field | a | b |", "|---|---|---|"]
            lines += [f"| {md_escape(r['field'])} | {md_escape(r['a'])} | {md_escape(r['b'])} |" for r in changed]
        else:
            lines.append("Nothing recorded differs between the sides.")
        if not_comparable:
            lines += ["", "#### Not comparable", "", *not_comparable[:kept_not_comparable]]
            if kept_not_comparable < len(not_comparable):
                more = len(not_comparable) - kept_not_comparable
                lines += ["", left_out(f"{counted(more, 'more pair')} not comparable {'is' if more == 1 else 'are'} "
                                       "left out of this comment", whole_diff)]
        lines += ["", "#### Results", ""]
        for text in tables[:min(kept_tables, len(shown))]:
            lines += [text, ""]
        if kept_tables < len(shown):
            lines += [left_out(f"**{shown_words(shown[kept_tables:])} left out of this comment**", whole_diff), ""]
        if folded:
            if not every:
                lines += [unchanged_sentence(folded), ""]
            kept = max(0, kept_tables - len(shown))
            if kept:
                of = "" if kept == folded["groups"] else f"{kept:,} of "
                lines += [f"<details><summary>{of}{counted(folded['groups'], 'table')} of unchanged comparisons"
                          "</summary>", ""]  # the blank line: GitHub renders the Markdown inside only after one
                for text in tables[len(shown):len(shown) + kept]:
                    lines += [text, ""]
                lines += ["</details>", ""]
            if kept < folded["groups"]:
                more = folded["groups"] - kept
                if kept:
                    what = (f"{more:,} of {'the' if every else 'these'} {counted(folded['groups'], 'table')} "
                            f"{'is' if more == 1 else 'are'}")
                elif every:  # the pairs were named in the lead, not just above
                    what = "The pair's table is" if more == 1 else "The pairs' tables are"
                else:
                    what = "Its table is" if more == 1 else "Their tables are"
                # said once: after the note on the other tables, where the whole diff is goes without saying
                lines += [f"{what} left out too." if kept_tables < len(shown) else
                          left_out(f"{what} left out of this comment", whole_diff), ""]
        lines.append(verdict_rule(cells, config.analysis.alpha))
        return "\n".join(lines)

    sizes = [len(text) + 2 for text in tables]  # a table and the blank line after it
    stages: list[tuple[Callable[[int], str], list[int]]] = [  # what goes first, each from its end:
        (lambda k: written(len(shown) + k, len(not_comparable)), sizes[len(shown):]),  # the folded tables,
        (lambda k: written(len(shown), k), [len(line) + 1 for line in not_comparable]),  # the pairs not comparable,
        (lambda k: written(k, 0), sizes[:len(shown)]),  # the other tables, least pressing first
    ]
    for stage, pieces in stages:
        text = longest_within(stage, pieces, limit)
        if len(text) <= limit:
            break
    return text


def sides_sentence(a: str, b: str, titles: dict[str, str], names: dict[str, str], n_a: int, n_b: int) -> str:
    """The sides of a diff of two selections of one run store (selectors ``a`` and ``b``) in words,
    as the diff page says them: "Both sides: campaign “H100 control”. Side **a**: cache cold (40
    runs); side **b**: cache warm (40 runs)." — a campaign by its title (``titles``: campaign →
    title), a model by its name (``names``), a label without its prefix; ``n_a``, ``n_b``: the runs
    each side selects."""
    words = sides_words(a, b, titles, names)
    both = f"Both sides: {md_escape(words['shared'])}. " if words["shared"] else ""
    return (f"{both}Side **a**: {md_escape(words['a'])} ({counted(n_a, 'run')}); "
            f"side **b**: {md_escape(words['b'])} ({counted(n_b, 'run')}).")


def longest_within(written: Callable[[int], str], sizes: list[int], limit: int) -> str:
    """``written(k)`` for the largest ``k`` — the first ``k`` of the pieces whose lengths are
    ``sizes`` kept — that is at most ``limit`` characters long; ``written(0)`` when none is."""
    text = written(len(sizes))
    if len(text) <= limit:
        return text
    room, k = limit - len(written(0)), 0  # written(0): every piece left out, its note the longest
    while k < len(sizes) and sizes[k] <= room:
        room -= sizes[k]
        k += 1
    text = written(k)
    while len(text) > limit and k:
        k -= 1
        text = written(k)
    while k + 1 < len(sizes) and len(longer := written(k + 1)) <= limit:  # a shorter note may leave room
        k += 1
        text = longer
    return text


def left_out(what: str, whole_diff: str) -> str:
    """``what`` a comment too long for GitHub leaves out (a sentence's start: "Their tables are
    left out of this comment"), why, and where the whole diff is."""
    return f"{what} (GitHub takes at most {GITHUB_LIMIT:,} characters): the whole diff is {whole_diff}."


def shown_words(groups: list[dict[str, Any]]) -> str:
    """The pairs with a verdict other than `unchanged` that a cut comment leaves out, and the
    verdicts of their comparisons: "3 more model × environment pairs with a verdict other than
    unchanged (of their 6 comparisons: 2 regressed, 4 unchanged) are"."""
    counts: dict[str, int] = {}
    for group in groups:
        for cell in group["cells"]:
            counts[str(cell["verdict"])] = counts.get(str(cell["verdict"]), 0) + 1
    verdicts = ", ".join(f"{counts[v]:,} {v}" for v in (*ATTENTION, *sorted(set(counts) - set(ATTENTION)))
                         if counts.get(v))
    pairs = counted(len(groups), "more model × environment pair")
    return (f"{pairs} with a verdict other than unchanged (of their {counted(sum(counts.values()), 'comparison')}: "
            f"{verdicts}) {'is' if len(groups) == 1 else 'are'}")


def headline(counts: dict[str, int]) -> str:
    """The counts per verdict on one line, regressions first and marked: "**⚠ 1 regressed**,
    **2 improved**, 17 unchanged — of 20 comparisons (model × environment × metric)." (a diff of
    nothing but unchanged comparisons opens on :func:`all_unchanged` instead)."""
    total = sum(counts.values())
    if not total:
        return "**Nothing to compare.**"
    said = [marked(f"{counts[verdict]:,} {verdict}", verdict) for verdict in ATTENTION if counts.get(verdict)]
    return f"{', '.join(said)} — of {counted(total, 'comparison')} (model × environment × metric)."


def all_unchanged(folded: dict[str, Any], min_effects: str) -> str:
    """The lead of a comment whose every comparison is unchanged (``folded``: :func:`unchanged_groups`
    of all its pairs), the diff page's sentence: "**All 28 comparisons (model × environment ×
    metric) are unchanged** — changes from -0.07% to +0.05%, each within ± the minimum effect (2%) —
    in the 4 model × environment pairs: A · native, …". It takes the place of the headline's
    counts and of the Results section's sentence on the unchanged pairs: said once."""
    many = folded["comparisons"] > 1
    what = (f"All {counted(folded['comparisons'], 'comparison')} (model × environment × metric) are" if many else
            "The one comparison (model × environment × metric) is")
    span = f" {folded['changes']}," if folded["changes"] else ""
    pairs = ("the model × environment pair" if folded["groups"] == 1 else
             f"the {counted(folded['groups'], 'model × environment pair')}")
    return (f"**{what} unchanged** —{span} {'each ' if many else ''}within ± the minimum effect ({min_effects}) — "
            f"in {pairs}: {md_escape(folded['names'])}.")


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
