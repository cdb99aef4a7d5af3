"""The pull-request comment of a diff: what `sparkreport diff --markdown` prints and the scaffold's
`diff-comment.yml` workflow posts on a pull request that changes `runs/` (GitHub-flavoured Markdown).

It says what the diff page says, in the page's own words (:mod:`sparkreport.render.diff_text`
writes both), ordered for a reviewer who reads it once, for its verdict: the sides in words (of
two selections of one run store); the lead — the counts per verdict, regressions first and marked
⚠, or the one sentence that says every comparison is unchanged; how the sides differ; the model ×
environment pairs with any verdict other than `unchanged` in full — those with a regression
first, then improved, inconclusive, not comparable and missing (the page keeps the model order
every page uses); the pairs unchanged in every metric named once, their tables folded in a
`<details>` block; what the verdicts mean, last. Its own are that order, the heading of
selectors, the fold and the cuts that keep it within what GitHub takes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkreport.render.diff_text import ATTENTION, HEADINGS, DiffText, verdict_counts
from sparkreport.render.markdown import code, counted

if TYPE_CHECKING:
    from collections.abc import Callable

    from sparkreport.analysis.diff import DiffResult
    from sparkreport.config import ProjectConfig

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
    run stores, as given); ``names``: model → the name the pages show (:func:`~sparkreport.analysis.diff.model_names`).
    ``titles``: side a's and side b's campaign → title, what the site names each campaign by
    (:func:`~sparkreport.render.report.store_campaign_titles` of each side's run store); a
    campaign not in them keeps its name. ``sides``: the sides in words, under the heading
    (:func:`~sparkreport.render.diff_text.sides_sentence`).

    It keeps within ``limit`` characters (:data:`COMMENT_LIMIT`), so that GitHub takes it however
    large the diff: the sides, the headline's counts and what changed always stay; past the limit the
    folded tables of the unchanged pairs are left out first, from the last; then, only if that
    is not enough, the pairs not comparable, from the last; then the other tables, least pressing
    first. Each cut is said in a line that names ``whole_diff``, where the whole diff is (the end
    of a sentence: "on [the diff page](…)", "in the output of `sparkreport diff … --json`")."""
    limit = COMMENT_LIMIT if limit is None else limit
    words = DiffText.of(result, names, config, titles or ({}, {}))  # each side's campaigns by its store's titles
    groups, folded = words.groups, words.folded
    shown = sorted((g for g in groups if not g["unchanged"]), key=attention)  # sorted() keeps ties in order
    tables = [words.table(group) for group in [*shown, *(g for g in groups if g["unchanged"])]]
    not_comparable = words.not_comparable_items()

    def written(kept_tables: int, kept_not_comparable: int) -> str:
        """The comment with the first ``kept_tables`` tables (those shown in full, then the folded
        ones) and the first ``kept_not_comparable`` pairs not comparable."""
        lines = [f"### sparkreport diff: {code(a)} → {code(b)}", "", *([sides, ""] if sides else []),
                 words.lead(), "", f"#### {HEADINGS.changed}", "", words.changed_table()]
        if not_comparable:
            lines += ["", f"#### {HEADINGS.not_comparable}", "", *not_comparable[:kept_not_comparable]]
            if kept_not_comparable < len(not_comparable):
                more = len(not_comparable) - kept_not_comparable
                lines += ["", left_out(f"{counted(more, 'more pair')} not comparable {'is' if more == 1 else 'are'} "
                                       "left out of this comment", whole_diff)]
        lines += ["", f"#### {HEADINGS.results}", ""]
        for table in tables[:min(kept_tables, len(shown))]:
            lines += [table, ""]
        if kept_tables < len(shown):
            lines += [left_out(f"**{shown_words(shown[kept_tables:])} left out of this comment**", whole_diff), ""]
        if folded:
            if not words.every_unchanged:  # else the lead named them
                lines += [words.unchanged_sentence(), ""]
            kept = max(0, kept_tables - len(shown))
            if kept:
                # the blank line: GitHub renders the Markdown inside only after one
                lines += [f"<details><summary>{words.fold_title(kept)}</summary>", ""]
                for table in tables[len(shown):len(shown) + kept]:
                    lines += [table, ""]
                lines += ["</details>", ""]
            if kept < folded["groups"]:
                more = folded["groups"] - kept
                if kept:
                    what = (f"{more:,} of {'the' if words.every_unchanged else 'these'} "
                            f"{counted(folded['groups'], 'table')} {'is' if more == 1 else 'are'}")
                elif words.every_unchanged:  # the pairs were named in the lead, not just above
                    what = "The pair's table is" if more == 1 else "The pairs' tables are"
                else:
                    what = "Its table is" if more == 1 else "Their tables are"
                # said once: after the note on the other tables, where the whole diff is goes without saying
                lines += [f"{what} left out too." if kept_tables < len(shown) else
                          left_out(f"{what} left out of this comment", whole_diff), ""]
        lines.append(words.verdict_rule())
        return "\n".join(lines)

    sizes = [len(table) + 2 for table in tables]  # a table and the blank line after it
    stages: list[tuple[Callable[[int], str], list[int]]] = [  # what goes first, each from its end:
        (lambda k: written(len(shown) + k, len(not_comparable)), sizes[len(shown):]),  # the folded tables,
        (lambda k: written(len(shown), k), [len(line) + 1 for line in not_comparable]),  # the pairs not comparable,
        (lambda k: written(k, 0), sizes[:len(shown)]),  # the other tables, least pressing first
    ]
    for stage, pieces in stages:
        comment = longest_within(stage, pieces, limit)
        if len(comment) <= limit:
            break
    return comment


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
    order = [*ATTENTION, *sorted(set(counts) - set(ATTENTION))]
    verdicts = ", ".join(said for _verdict, said in verdict_counts(counts, order))
    pairs = counted(len(groups), "more model × environment pair")
    return (f"{pairs} with a verdict other than unchanged (of their {counted(sum(counts.values()), 'comparison')}: "
            f"{verdicts}) {'is' if len(groups) == 1 else 'are'}")


def attention(group: dict[str, Any]) -> int:
    """Where a pair shown in full goes: the rank in :data:`ATTENTION` of its most pressing verdict."""
    return min(ATTENTION.index(str(cell["verdict"])) if cell["verdict"] in ATTENTION else len(ATTENTION)
               for cell in group["cells"])
