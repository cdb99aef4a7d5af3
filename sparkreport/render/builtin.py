"""The built-in pages: Home, Methodology, Data quality, Runs, Downloads (+ Results, Memory).

Each class only gathers numbers the analysis already computed; the wording lives in the
templates, which a project can override by name.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.analysis.statistics import RATIO_INTERVAL_METHOD
from sparkreport.dataset import frame_rows as rows
from sparkreport.names import arm_order, campaign_order
from sparkreport.render.context import SiteData
from sparkreport.render.describe import described_campaigns, design_groups
from sparkreport.render.diff_text import command_line
from sparkreport.render.history import history_method, history_spans, latest_change, site_history
from sparkreport.render.pages import NavItem, Page, PageDoc, register
from sparkreport.render.report import (
    campaign_answer,
    campaign_split,
    grouped,
    join_and,
    summary_table,
    table_gaps,
    why_not_compared,
)
from sparkreport.render.tables import metric_label
from sparkreport.schema import RunRecord

if TYPE_CHECKING:
    from markupsafe import Markup

    from sparkreport.analysis import Finding
    from sparkreport.charts import ChartSpec
    from sparkreport.dataset import Dataset, ExportChunks
    from sparkreport.render.core import Vouch

#: Findings of the physical-plausibility checks, which the home page leads with.
PHYSICAL_CODES = ("capacity-weights", "capacity-peak", "roofline", "size-insensitive", "derived-identity",
                  "covariate-order", "covariate-temperature")


def published_keys(site: SiteData) -> set[tuple[str, str]]:
    """(campaign, model) pairs whose figures are published summaries, not per-run data."""
    sums = site.dataset.summaries
    return set(zip(sums["campaign"].astype(str), sums["model"].astype(str), strict=True))


@register
class HomePage(Page):
    name = "home"
    title = "Home"
    template = "home.md"
    folder = ""
    order = 0
    site_footer = True

    #: Rows of the summary table and the forest plot before "and N more" (every effect is on
    #: its model's Results page): the home page stays a summary at any scale.
    EFFECT_BUDGET = 40

    def docs(self, site: SiteData, out: Path) -> list[PageDoc]:
        docs = super().docs(site, out)
        for doc in docs:
            doc.scope = None  # the whole site: every error finding
        return docs

    def context(self, site: SiteData, doc: PageDoc, out: Path) -> dict[str, Any]:
        from sparkreport.render.home import answers_moved, campaign_blocks, findings_sections
        from sparkreport.render.report import (
            campaigns,
            effect_rows,
            grouped_findings,
            undrawn_text,
            verdict_key,
        )

        effects = effect_rows(site)
        by_campaign: dict[str, list[dict[str, Any]]] = {}
        for effect in effects:
            by_campaign.setdefault(str(effect["campaign"]), []).append(effect)
        every = campaigns(site)
        shown, earlier = campaign_split(site)
        questions: dict[str, dict[str, Any]] = {}  # every campaign shown, as a template override may list them
        for campaign in every:
            if campaign.name in shown:
                rows = by_campaign.get(campaign.name, [])
                said = campaign_answer(site, campaign.name, rows)
                questions[campaign.name] = {"campaign": campaign, "answer": said,
                                            "table": summary_table(site, rows, self.EFFECT_BUDGET),
                                            "why_not": why_not_compared(site, campaign) if not rows else ""}
        # Neighbouring campaigns of one design (a release each) are one block: the newest's answer
        # in full, then how each one answered (see :mod:`sparkreport.render.home`).
        blocks = campaign_blocks(site, [q["campaign"] for q in questions.values()])
        for block in blocks:
            block["question"] = questions[block["newest"].name]
            names = [c.name for c in block["campaigns"]]
            of_block = [e for name in names for e in by_campaign.get(name, [])]
            several = len(names) > 1 and bool(of_block)
            block["moves"] = answers_moved(site, of_block, names, self.EFFECT_BUDGET) if several else None
        answered = [block["question"] for block in blocks]
        moves = [block["moves"] for block in blocks if block["moves"]]
        # errors from every campaign; warnings from the campaigns shown (all of them: Data quality)
        every_group = grouped_findings(site, per_model=False)
        groups = [g for g in every_group if g["severity"] == "error" or g["campaign"] in shown]
        severities = {s: sum(f.severity == s for f in site.findings) for s in ("error", "warning", "info")}
        shown_cells = [e for q in answered for e in table_effects(q["table"])]
        shown_cells += [e for m in moves for e in m["effects"]]
        history = site_history(site)
        return {"questions": list(questions.values()), "blocks": blocks, "groups": groups,
                "sections": findings_sections(groups, blocks), "severities": severities,
                "key": verdict_key(site, shown_cells,
                                   gaps=table_gaps(*(q["table"] for q in answered)) or any(m["gaps"] for m in moves)),
                "earlier": [c for c in every if c.name in earlier],
                # the checks the errors and warnings come from, as Data quality counts them
                "checks": len({f.code for f in site.findings if f.severity in ("error", "warning")}),
                "limits": data_limits(site, effects),
                "history": history is not None, "latest_change": latest_change(site),
                "history_versions": len(history.versions) if history is not None else 0,
                "history_across": history is not None and history.across_campaigns,
                "history_spans": history_spans(site), "undrawn": undrawn_text(self.charted(site)[1])}

    def charts(self, site: SiteData, doc: PageDoc) -> list[ChartSpec]:
        from sparkreport.render.report import campaign_titles, forest_chart

        effects, _undrawn = self.charted(site)
        chart = forest_chart(effects, name="effects", title="Every effect with its confidence interval",
                             confidence=site.config.analysis.confidence, titles=campaign_titles(site))
        return [chart] if chart is not None else []

    def charted(self, site: SiteData) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The effects Home's chart draws, and those it cannot (published without a spread, single
        runs: no interval to draw), which the page then counts under it. The campaigns whose answer Home gives
        in full: of campaigns of one design, the newest (how the others answered is in its block's
        table; five near-identical panels told no more); their primary metrics' effects, at most
        :attr:`EFFECT_BUDGET`, the largest (the rest are on Results)."""
        from sparkreport.render.home import campaign_blocks
        from sparkreport.render.report import campaigns, effect_rows

        shown, _earlier = campaign_split(site)
        blocks = campaign_blocks(site, [c for c in campaigns(site) if c.name in shown])
        drawn = {block["newest"].name for block in blocks}
        every = [e for e in effect_rows(site) if str(e["campaign"]) in drawn and e["delta_pct"] is not None]
        effects = [e for e in every if e["primary"]] or every
        undrawn = [e for e in effects if e["delta_low"] is None]
        effects = [e for e in effects if e["delta_low"] is not None]
        if len(effects) > self.EFFECT_BUDGET:
            effects = sorted(effects, key=lambda e: -abs(e["delta_pct"]))[:self.EFFECT_BUDGET]
        return effects, undrawn


#: The order marks are counted in (the order the key under an answer's table says them).
TALLY_ORDER = ("≈", "▲", "▼", "?", "○")


def mark_tally(effects: list[dict[str, Any]]) -> Markup:
    """How many of ``effects`` got each verdict mark, in :data:`TALLY_ORDER`, each mark kept with
    its count ("≈ 14 · ▲ 8"; marks none got left out; empty for none)."""
    from markupsafe import Markup

    counts = {mark: sum(e["mark"] == mark for e in effects) for mark in TALLY_ORDER}
    return Markup(" · ".join(f"{mark}\u00a0{count}" for mark, count in counts.items() if count))


def answers_key(site: SiteData, counted: list[dict[str, Any]]) -> str:
    """What the Campaigns overview's Answers column counts (``counted``: the effects it counted),
    naming only the marks it shows."""
    from sparkreport.render.report import join_and, margin_of, verdict_words

    metrics = join_and([metric_label(m) for m in site.config.primary_metrics])
    margin = margin_of(site, [e for e in counted if e["mark"] == "≈"]) or "each metric's margin"
    words = {"≈": verdict_words("equivalent", margin), "▲": "higher", "▼": "lower than the baseline",
             "?": "no difference detected, none ruled out", "○": verdict_words("untested")}
    marks = {e["mark"] for e in counted}
    said = join_and([f"{mark} {words[mark]}" for mark in TALLY_ORDER if mark in marks])
    return (f"Answers: how many of the comparisons its answer reports (of the metrics the pages lead with: "
            f"{metrics}) got each mark — {said}; its page says which.")


def json_contents(runs: int, summaries: int) -> str:
    """What the Downloads page says dataset.json holds: the runs, the published summaries or both,
    each with its rows where both are there (its Rows column counts them together)."""
    parts = [f"the runs ({runs:,} rows)" if summaries else "the runs"] if runs else []
    parts += [f"the published summaries ({summaries:,} rows, one per arm and metric)"] if summaries else []
    return " and ".join(parts or ["no rows"]) + ", with schema version and hash"


def table_effects(table: dict[str, Any]) -> list[dict[str, Any]]:
    """The effects a :func:`~sparkreport.render.report.summary_table` shows, row by row."""
    return [effect for row in table["rows"] for effect in row["cells"].values()]


def data_limits(site: SiteData, effects: list[dict[str, Any]]) -> list[str]:
    """What the data cannot show, each said once."""
    from sparkreport.analysis.compare import WITHOUT_SPREAD, skipped_tests

    out = []
    # Mann–Whitney is skipped only where an arm has no runs (published figures); Welch's test where
    # an arm has no SD: published without one (the reason the effect gives), or a single run
    # (said below, from its finding).
    published = any("mann_whitney" in skipped_tests(e.get("skipped")) for e in effects)
    without_sd = any(e.get("untested_reason") == WITHOUT_SPREAD for e in effects)
    if published:
        out.append("Published figures give n, mean and SD per arm, not the runs: the Mann–Whitney U test "
                   "needs the runs (Welch's test, the intervals and TOST use n, mean and SD)"
                   + ("; figures published without an SD cannot be tested at all." if without_sd else "."))
    if any(f.code == "derived-identity" for f in site.findings):
        out.append("Where the KV cache is sized from the memory left free, \"more memory used\" and "
                   "\"less KV cache\" are one measurement, not two findings.")
    if any(f.code == "single-run-arm" for f in site.findings):
        out.append("Arms with a single run have no spread: their differences are descriptions, not tests.")
    from sparkreport.config import factor_words

    out.append(f"The comparisons say how much the {factor_words(site.config.factor).many} differ, not why: "
               "a cause needs a run "
               "designed to separate the explanations (see the memory page).")
    return out


@register
class MethodologyPage(Page):
    name = "methodology"
    title = "Methodology"
    template = "methodology.md"
    folder = "methodology"
    order = 30
    banner = False
    site_footer = True

    def context(self, site: SiteData, doc: PageDoc, out: Path) -> dict[str, Any]:
        from sparkreport.render.report import campaigns

        sources = sources_table(list(site.per_campaign("sources", campaign_sources).values()))
        shown, earlier = campaign_split(site)
        described = described_campaigns(site, [c for c in campaigns(site) if c.name in shown])
        return {
            "described": described, "groups": design_groups(described),
            "earlier": [c for c in campaigns(site) if c.name in earlier],
            "sources": sources,
            "arms": arm_matrices(site, arm_table(site, shown)),
            "options": site.config.analysis,
            "ratio_interval": RATIO_INTERVAL_METHOD.format(level=site.confidence_label),
            "history_method": history_method(site),
            "facts": stated_facts(site),
        }


def stated_facts(site: SiteData) -> list[dict[str, str]]:
    """The tested metrics that did not vary (``site.facts`` of ``analysis.tested_metrics``: what
    the comparisons leave out) as a reader meets them: each named by its campaign's title and its
    model's name, not by their slugs ("H100 control: native vs cgroup · Llama-3-8B shape (random
    weights)"), then its sentence. A configured quantity (a batch size) is on its model's page."""
    from sparkreport.render.report import campaign_title, model_names

    tested = set(site.config.analysis.tested_metrics)
    facts = [fact for fact in site.facts if fact.metric in tested]
    names = model_names(site) if facts else {}
    # the list's lead-in says "stated, not tested" once for every line
    return [{"where": f"{campaign_title(site, fact.campaign)} · {names.get((fact.campaign, fact.model), fact.model)}",
             "body": f"{fact.body[:1].upper()}{fact.body[1:]}."} for fact in facts]


def campaign_sources(records: list[RunRecord]) -> tuple[int, bool, list[dict[str, Any]]]:
    """A campaign's share of the Methodology page's sources table, kept per campaign
    (:meth:`~sparkreport.render.context.SiteData.per_campaign`): how many source files (by
    sha256, else path), whether they are grouped, and the rows — one per file with how many
    records each gave, or, past :data:`MAX_SOURCES_LISTED` (when the whole table is grouped
    anyway), one per format (:func:`group_sources`: ten thousand files are not kept one by one)."""
    sources: dict[tuple[str, str], dict[str, Any]] = {}
    for record in records:
        source = (record.campaign, record.provenance.source_sha256 or record.provenance.source_path)
        entry = sources.setdefault(source, {
            "campaign": record.campaign, "path": record.provenance.source_path,
            "sha256": record.provenance.source_sha256, "format": record.provenance.format,
            "records": 0, "notes": []})
        entry["records"] += 1
    rows = list(sources.values())
    if len(rows) <= MAX_SOURCES_LISTED:
        return len(rows), False, rows
    return len(rows), True, group_sources(sorted(rows, key=source_order))


def sources_table(parts: list[tuple[int, bool, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """The sources table from each campaign's :func:`campaign_sources`: what
    :func:`summarise_sources` makes of every campaign's files at once (copies: the parts are kept)."""
    if sum(count for count, _grouped, _part in parts) <= MAX_SOURCES_LISTED:  # no part is grouped
        return summarise_sources([dict(row, notes=list(row["notes"])) for _count, _grouped, part in parts
                                  for row in part])
    grouped: list[dict[str, Any]] = []
    for _count, is_grouped, part in parts:
        copies = [dict(row, notes=list(row["notes"])) for row in part]
        grouped += copies if is_grouped else group_sources(sorted(copies, key=source_order))
    # stable: each campaign's formats as grouped
    return sorted(grouped, key=lambda row: campaign_order(row["campaign"]))


def source_order(source: dict[str, Any]) -> tuple[Any, ...]:
    """Where a source file sorts in the sources table: by campaign (:func:`~sparkreport.names.campaign_order`),
    then by path."""
    return campaign_order(source["campaign"]), source["path"]



#: Above this many source files, the Methodology page lists them per campaign and format.
MAX_SOURCES_LISTED = 50


def summarise_sources(sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sources table: one row per file, or one per (campaign, format) when there are many
    (every file is still listed with its run on the Runs pages)."""
    ordered = sorted(sources, key=source_order)
    if len(ordered) <= MAX_SOURCES_LISTED:
        return ordered
    return group_sources(ordered)


def group_sources(ordered: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (campaign, format) of source files ordered by (campaign, path): how many files
    and records, the first five notes (the page names the files per run, on the Runs pages)."""
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for s in ordered:
        entry = grouped.setdefault((s["campaign"], s["format"]), {
            "campaign": s["campaign"], "format": s["format"], "sha256": None, "records": 0, "notes": [],
            "files": 0})
        entry["files"] += 1
        entry["records"] += s["records"]
        for note in s["notes"]:
            if note not in entry["notes"] and len(entry["notes"]) < 5:
                entry["notes"].append(note)
    return list(grouped.values())


def arm_table(site: SiteData, campaigns: Collection[str]) -> list[dict[str, Any]]:
    """What each arm of ``campaigns`` contains: runs recorded and used (with the reasons for any
    left out), published arms with their sample sizes; in the order every page lists arms.

    Each campaign's arms are made once per render, from its own rows, when a page first asks for
    them: Methodology shows the newest campaigns, a campaign page its own, so a new run's build
    groups those campaigns' rows of the runs table, not all of them (at 10 000 runs, five
    campaigns' arms 0.006 s against 0.009–0.013 s for the whole table). Once
    :data:`ARMS_ONE_BY_ONE` campaigns' are made (a cold build fills every campaign's page), the
    rest are made in one pass."""
    made: dict[str, list[dict[str, Any]]] = site.extra.setdefault("_arm_table", {})
    wanted = {str(campaign) for campaign in campaigns}
    missing = wanted - made.keys()
    if missing:
        if len(made) >= ARMS_ONE_BY_ONE:
            every = {str(c) for table in (site.runs, site.dataset.summaries) if not table.empty
                     for c in table["campaign"].unique()}
            missing = (every | missing) - made.keys()
        rows = _arm_table(site, missing)
        for campaign in missing:
            made[campaign] = []
        for row in rows:
            made[str(row["campaign"])].append(row)
    baseline = site.config.baseline_of("environment")
    out = [row for campaign in sorted(wanted) for row in made[campaign]]
    # each campaign's arms by the model's name as every page lists them, not by its key, and each
    # model's environments as every table lists them (the baseline first)
    out.sort(key=lambda a: arm_order(str(a["campaign"]), str(a["model_name"]), str(a["model"]),
                                     str(a["environment"]), baseline))
    return out


#: Campaigns whose arms :func:`arm_table` makes as they are asked for before it makes all the rest.
ARMS_ONE_BY_ONE = 4

#: At most this many runs left out of an arm are named under its campaign's table ("… and 4 more").
LEFT_OUT_NAMED = 3
#: At most this many arms' runs left out are listed under a campaign's table; the others are counted
#: (Data quality lists every run left out).
LEFT_OUT_ARMS = 8


def arm_matrices(site: SiteData, arms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`arm_table`'s arms as a reader takes them in: one table per campaign (its title and
    page), a row per model and a column per environment (the baseline first, then as the arms
    list them), each cell the runs used of those recorded ("20 / 20"; "published, n = 10" for a
    published arm; "—" where the model has no arm), and the runs left out named under the table,
    arm by arm (the first :data:`LEFT_OUT_ARMS` arms, the others counted); neighbouring campaigns
    whose tables are the same (releases of one design) share
    one, under all their titles. A table with the campaign in every row said its title four to
    six times over."""
    from sparkreport.render.report import campaigns as campaign_list

    baseline = site.config.baseline_of("environment")
    pages = {c.name: c for c in campaign_list(site)}
    tables: dict[str, dict[str, Any]] = {}
    for arm in arms:
        name = str(arm["campaign"])
        table = tables.get(name)
        if table is None:
            page = pages.get(name)
            table = tables[name] = {"campaigns": [{"name": name, "title": page.title if page is not None else name,
                                                   "path": page.path if page is not None else None}],
                                    "environments": [], "models": {}, "left_out": []}
        env, model = str(arm["environment"]), str(arm["model_name"])
        if env not in table["environments"]:
            table["environments"].append(env)
        text = f"published, n = {arm['n']}" if arm["published"] else f"{arm['included']} / {arm['recorded']}"
        cells = table["models"].setdefault(model, {})
        cells[env] = f"{cells[env]}; {text}" if env in cells else text
        excluded = arm.get("excluded") or []
        if excluded:
            table["left_out"].append({"model_name": model, "environment": env,
                                      "runs": excluded[:LEFT_OUT_NAMED],
                                      "more": max(0, len(excluded) - LEFT_OUT_NAMED)})
    out: list[dict[str, Any]] = []
    for table in tables.values():
        envs = table["environments"]
        if baseline in envs:
            envs.remove(baseline)
            envs.insert(0, baseline)
        models = table.pop("models")
        table["rows"] = [{"model_name": model, "cells": [cells.get(env, "—") for env in envs]}
                         for model, cells in models.items()]
        table["left_out_more"] = max(0, len(table["left_out"]) - LEFT_OUT_ARMS)
        table["left_out"] = table["left_out"][:LEFT_OUT_ARMS]
        same = out and all(out[-1][key] == table[key] for key in ("environments", "rows", "left_out", "left_out_more"))
        if same:  # neighbouring campaigns of one design, the same arms: one table says it for them all
            out[-1]["campaigns"] += table["campaigns"]
        else:
            out.append(table)
    return out


def _arm_table(site: SiteData, campaigns: Collection[str]) -> list[dict[str, Any]]:
    """The arms of ``campaigns``, unordered (:func:`arm_table`)."""
    import numpy as np

    from sparkreport.render.markdown import is_missing

    out = []
    groups = grouped(site, "runs", "campaign")
    positions = [groups.positions[c] for c in sorted(campaigns) if c in groups.positions]
    if positions:
        keys = ["campaign", "model", "environment"]
        runs, taken = site.runs, np.sort(np.concatenate(positions))  # (in the table's order)
        frame = runs[[*keys, "model_name", "iteration", "run_id", "exclusion_reason"]].take(taken).assign(
            included=runs["included"].astype(bool).to_numpy()[taken])
        # one groupby for every arm asked for (not a filter per arm: thousands at 10 000 runs)
        groups_by_arm = frame.groupby(keys, sort=True)
        arms = groups_by_arm.agg(recorded=("run_id", "size"), included=("included", "sum"),
                                 first=("iteration", "min"), last=("iteration", "max"),
                                 distinct=("iteration", "nunique"))
        firsts = frame.drop_duplicates(keys)
        first_names = dict(zip(map(tuple, firsts[keys].to_numpy()), firsts["model_name"], strict=True))
        excluded: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        left_out = frame[~frame["included"]]
        for key, run_id, why in zip(map(tuple, left_out[keys].to_numpy()), left_out["run_id"],
                                    left_out["exclusion_reason"], strict=True):
            excluded.setdefault(key, []).append({"run_id": run_id, "reason": why})
        columns: list[list[Any]] = [arms[c].tolist() for c in ("recorded", "included", "first", "last", "distinct")]
        for (campaign, model, env), recorded, included, first, last, distinct in zip(arms.index, *columns,
                                                                                     strict=True):
            key = (campaign, model, env)
            out.append({
                "campaign": campaign, "model": model, "model_name": first_names[key],
                "environment": env, "published": False, "recorded": int(recorded), "included": int(included),
                "iterations": f"{int(first)}–{int(last)}" if not is_missing(first) else None,
                "distinct_iterations": int(distinct),
                "excluded": excluded.get(key, []),
            })
    sums = site.dataset.summaries
    if not sums.empty:
        sums = sums[sums["campaign"].astype(str).isin(set(campaigns)).to_numpy()]
        for (campaign, model, env), group in sums.groupby(["campaign", "model", "environment"], sort=True):
            ns = sorted({int(n) for n in group["n"].dropna()})
            out.append({
                "campaign": campaign, "model": model, "model_name": group["model_name"].iloc[0],
                "environment": env, "published": True, "recorded": None, "included": None,
                "n": " / ".join(str(n) for n in ns), "iterations": None, "distinct_iterations": None,
                "metrics": [metric_label(str(m)) for m in group["metric"]], "excluded": [],
            })
    return out


@register
class QualityPage(Page):
    name = "quality"
    title = "Data quality"
    template = "quality.md"
    folder = "quality"
    order = 40
    banner = False

    def context(self, site: SiteData, doc: PageDoc, out: Path) -> dict[str, Any]:
        listed = ["run_id", "model_name", "environment", "exclusion_reason"]  # (these columns only)
        excluded = site.runs.loc[~site.runs["included"].astype(bool).to_numpy(), listed] \
            if not site.runs.empty else site.runs
        # the assumption a finding rests on is stated once, under "What the physical checks assume"
        from sparkreport.render.report import campaign_titles, model_names

        # check() sorted them (severity, check, message); within a check, by the arm they are about
        # as every table lists arms: by model, the baseline first (the message's order was by code point)
        findings = [{"severity": f.severity, "code": f.code,
                     "message": without_assumption(f.message) + (" (assumes: see below)" if f.assumes else ""),
                     "runs": f.runs, "assumes": f.assumes} for f in in_arm_order(site, site.findings)]
        findings = newest_first(findings, campaign_split(site)[0])
        shown, more = cap_per_check(findings, FINDINGS_PER_CHECK)
        checks = checks_of(shown, more, model_names(site), campaign_titles(site))
        for check in checks:
            said_once(check)
        if more:  # every finding, for the reader who wants them all (and `sparkreport check --json`)
            from sparkreport.dataset import write_text_csv

            folder = out / self.folder
            folder.mkdir(parents=True, exist_ok=True)
            write_text_csv(folder / FINDINGS_FILE, ["severity", "check", "finding", "runs"],  # safe cells
                           ((f.severity, f.code, f.message, " ".join(f.runs)) for f in site.findings))
            doc.files = [f"{self.folder}/{FINDINGS_FILE}"]
        return {
            # ``findings``: the listed ones, flat (a project's own quality.md may still read them)
            "findings": shown, "checks": checks, "tally": tally(findings),
            "more": more, "findings_total": len(findings), "findings_file": FINDINGS_FILE,
            "per_check": FINDINGS_PER_CHECK, "check_command": command_line(site.command("check", "--json")),
            "assumption_groups": site.assumption_groups,
            "excluded": rows(excluded) if not excluded.empty else [],
            "runs_href": doc.href("runs/index.md"),
        }


def in_arm_order(site: SiteData, findings: list[Finding]) -> list[Finding]:
    """``findings`` (check()'s order) with those of one check in the order the tables list their
    arms: by campaign, the model's name (:func:`~sparkreport.names.model_order`), then the level in
    :func:`~sparkreport.names.level_order` (the baseline first) — of the first arm a finding
    concerns (through its runs); a finding about no run keeps its place before them."""
    from sparkreport.render.report import finding_arms, model_names

    names = model_names(site)
    baseline = site.config.baseline
    position = {code: i for i, code in enumerate(dict.fromkeys(f.code for f in findings))}

    @functools.cache
    def arm_place(campaign: str, model: str, level: str) -> tuple[object, ...]:  # 1 600 findings, ~100 arms
        return arm_order(campaign, names.get((campaign, model), model), model, level, baseline)

    def place(finding: Finding) -> tuple[object, ...]:
        arms = [arm_place(campaign, model, level) for campaign, model, level in finding_arms(site, finding)]
        return position[finding.code], min(arms, default=())

    return sorted(findings, key=place)  # stable: findings about one arm keep check()'s order


#: A check with more findings than this shows this many on the Data quality page (the first,
#: in check()'s order) and says how many more; all of them are in ``findings.csv`` beside it.
FINDINGS_PER_CHECK = 20
FINDINGS_FILE = "findings.csv"


def newest_first(findings: list[dict[str, Any]], newest: set[str]) -> list[dict[str, Any]]:
    """``findings`` in check()'s order (severity, check, message), but within each check those
    about the ``newest`` campaigns (the ones the pages that span the site show in full) before
    the rest: a check cut short (:func:`cap_per_check`) lists the newest campaigns' findings, not
    the first campaigns' by name (a store of fifty releases listed its oldest)."""
    from sparkreport.render.report import message_campaign

    position: dict[str, int] = {}
    for finding in findings:
        position.setdefault(finding["code"], len(position))
    return sorted(findings, key=lambda f: (position[f["code"]], message_campaign(f["message"]) not in newest))


def cap_per_check(findings: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The findings to list (at most ``limit`` per check, order kept) and, per check cut short,
    ``{"code", "severity", "count"}`` of the findings not listed."""
    seen: dict[str, int] = {}
    shown: list[dict[str, Any]] = []
    more: dict[str, dict[str, Any]] = {}
    for finding in findings:
        count = seen[finding["code"]] = seen.get(finding["code"], 0) + 1
        if count <= limit:
            shown.append(finding)
        else:
            more.setdefault(finding["code"], {"code": finding["code"], "severity": finding["severity"], "count": 0})
            more[finding["code"]]["count"] += 1
    return shown, list(more.values())


#: Checks whose sentence reports one arm's own measurement (its run-to-run CV): two arms whose
#: figures round alike are not one finding, so each keeps its row (a row naming Llama on native
#: and gpt-oss on docker read as if they had something in common).
MEASURED_PER_ARM = frozenset({"high-cv"})


#: What a finding of each severity is called when counted ("2 errors", "3 notes").
SEVERITY_NOUNS = {"error": "error", "warning": "warning", "info": "note"}


def checks_of(shown: list[dict[str, Any]], more: list[dict[str, Any]],
              names: dict[tuple[str, str], str] | None = None,
              titles: dict[str, str] | None = None, campaign: bool = True) -> list[dict[str, Any]]:
    """The listed findings (:func:`cap_per_check`'s ``shown`` and ``more``) per check, in
    check()'s order: the check's title, severity and count (all its findings), then per finding
    what it is about (the message's prefix), the finding itself as a sentence and its runs;
    ``more``: its findings not listed. ``names``: (campaign, model) → the model's name, and
    ``titles``: campaign → its title, which the arms are shown by ("Phase 1: container vs native:
    Qwen2.5-72B-Instruct (container, native)"); ``campaign=False`` leaves the campaign out of
    them (a post's table of one campaign's findings)."""
    from sparkreport.render.report import check_title, message_body, message_where

    left = {m["code"]: m["count"] for m in more}
    out: dict[str, dict[str, Any]] = {}
    listed: dict[int, set[str]] = {}  # each row's runs, as a set (a sentence said of many arms names many)
    for finding in shown:
        code = finding["code"]
        if code not in out:
            out[code] = {"code": code, "title": check_title(code), "severity": finding["severity"],
                         "count": left.get(code, 0), "more": left.get(code, 0), "rows": []}
        out[code]["count"] += 1
        # one row per sentence: the same finding about several arms (a published figure without a
        # spread, both environments of a model too large for the pool) is said once, naming them all
        body = message_body(finding["message"])
        rows = out[code]["rows"]
        row = None if code in MEASURED_PER_ARM else next((r for r in rows if r["finding"] == body), None)
        if row is None:
            rows.append(row := {"finding": body, "wheres": [], "runs": []})
        where = message_where(finding["message"])
        if where and where not in row["wheres"]:
            row["wheres"].append(where)
        seen = listed.setdefault(id(row), set())
        row["runs"] += [run for run in finding["runs"] if run not in seen]
        seen.update(finding["runs"])
    for group in out.values():
        for row in group["rows"]:
            row["where"] = compact_wheres(row.pop("wheres"), names=names, titles=titles, campaign=campaign)
        group["noun"] = SEVERITY_NOUNS.get(group["severity"], "finding")
        group["where"] = any(row["where"] for row in group["rows"])
        # fewer rows than listed findings: some sentence was said of several arms at once
        group["merged"] = len(group["rows"]) < group["count"] - group["more"]
    return list(out.values())


#: Where a clause may start that every row of a check's table ends with: a consequence
#: (", so …"), an explanation (": …") or an aside (" — …").
_CLAUSE = re.compile(r", so |: | — ")
#: The fewest words such a clause has to be said once above the table (a shorter common ending —
#: a unit, a closing parenthesis — stays in its rows).
CLAUSE_WORDS = 5


def common_clause(sentences: list[str]) -> tuple[str, list[str]] | None:
    """The longest clause all of ``sentences`` (two or more) end with, from a clause boundary
    (:data:`_CLAUSE`) and at least :data:`CLAUSE_WORDS` words long, and each sentence without it
    (ending with a full stop); None when they share none. 'Environments ran in separate time
    blocks (native …; docker …), so drift over time is confounded with the environment —
    interleave them.' said of 150 arms leaves each row its own time blocks, and the clause for
    the table's lead."""
    if len(sentences) < 2:
        return None
    for boundary in _CLAUSE.finditer(sentences[0]):
        head = sentences[0][:boundary.start()]
        if head.count("(") != head.count(")"):  # inside parentheses ("(vllm-6a57…: 1 of 400) — …")
            continue
        ending = sentences[0][boundary.start():]
        clause = sentences[0][boundary.end():]
        if len(clause.split()) < CLAUSE_WORDS or not all(s.endswith(ending) for s in sentences):
            continue
        heads = [s[:-len(ending)].rstrip() for s in sentences]
        if all(heads):
            return clause, [head + ("" if head.endswith(".") else ".") for head in heads]
    return None


def said_once(check: dict[str, Any]) -> None:
    """A check's table whose rows all end with the same clause (:func:`common_clause`) says it
    once, as ``check["common"]``, and each row only what is its own; else ``common`` is None."""
    found = common_clause([row["finding"] for row in check["rows"]])
    check["common"] = None
    if found is not None:
        check["common"], heads = found
        for row, head in zip(check["rows"], heads, strict=True):
            row["finding"] = head


def compact_wheres(wheres: list[str], limit: int = 4, names: dict[tuple[str, str], str] | None = None,
                   titles: dict[str, str] | None = None, campaign: bool = True) -> str:
    """'phase1/qwen72b (container, native); phase1/deepseek (native)' for the arms
    'phase1/qwen72b/container', 'phase1/qwen72b/native', 'phase1/deepseek/native': arms that
    share their campaign and model are named once. Past ``limit`` such groups, a count of the
    rest ('; and 36 more'). With ``names`` ((campaign, model) → the model's name), a campaign
    and model read 'phase1: Qwen2.5-72B-Instruct' instead of their slugs; with ``titles``
    (campaign → its title), the campaign reads as its title, set off from the model by ' · '
    (a title may hold a colon of its own: 'Phase 1: container vs native · Qwen2.5-72B-Instruct'),
    named once before its models, and models of the same arms share one list ('Phase 1: container
    vs native · DeepSeek-R1-Distill-Qwen-7B and Qwen2.5-72B-Instruct (container, native)').
    ``campaign=False`` leaves the campaign out where the reader knows it (a table of one
    campaign's findings): 'Qwen2.5-72B-Instruct (container)', 'container' for a campaign's arm."""
    parents: dict[str, list[str]] = {}
    for where in wheres:
        parent, _, leaf = where.rpartition("/")
        parents.setdefault(parent if parent else where, []).append(leaf if parent else "")

    def shown(parent: str) -> str:
        name_of, _, model = parent.partition("/")
        title = (titles or {}).get(name_of, name_of)
        if not model:
            return title if campaign else ""
        return parent if campaign else model

    def named_as(parent: str, leaves: list[str]) -> str:
        said, listed = shown(parent), ", ".join(leaves)
        if not any(leaves):
            return said
        return f"{said} ({listed})" if said else listed

    # A campaign is named once before its models; models of the same arms share their list:
    # "Phase 1 · DeepSeek, gpt-oss-120b and Qwen2.5-72B (container, native)".
    named: list[tuple[str, str]] = []  # ("text", what to print) or ("head", a campaign's head)
    heads: dict[str, dict[tuple[str, ...], list[str]]] = {}  # head → the arms' leaves → models
    for parent, leaves in list(parents.items())[:limit]:
        name_of, _, model = parent.partition("/")
        name = (names or {}).get((name_of, model))
        if not name:
            named.append(("text", named_as(parent, leaves)))
            continue
        title = (titles or {}).get(name_of, name_of)
        head = f"{title}{': ' if title == name_of else ' · '}" if campaign else ""
        if head not in heads:
            named.append(("head", head))
            heads[head] = {}
        heads[head].setdefault(tuple(leaves), []).append(name)
    parts = [text if kind == "text" else text + "; ".join(
        f"{join_and(models)} ({', '.join(leaves)})" if any(leaves) else join_and(models)
        for leaves, models in heads[text].items()) for kind, text in named]
    rest = sum(len(leaves) for leaves in list(parents.values())[limit:])
    return "; ".join(parts) + (f"; and {rest} more" if rest else "")


def tally(findings: list[dict[str, Any]]) -> str:
    """'9 errors, 3 warnings and 8 notes' (severities in that order; those with none left out)."""
    from sparkreport.render.markdown import counted

    counts = {severity: sum(1 for f in findings if f["severity"] == severity) for severity in SEVERITY_NOUNS}
    return join_and([counted(n, SEVERITY_NOUNS[severity]) for severity, n in counts.items() if n])


def without_assumption(message: str) -> str:
    """A finding's message without its trailing "— assumes …" (said once elsewhere on the page)."""
    return message.partition(" — assumes ")[0]


#: Under this name in ``site.extra``: the Downloads page's files written ahead (:class:`DownloadsAhead`).
DOWNLOADS_AHEAD = "_downloads_ahead"


def downloads_chunks(cache_dir: Path | None, salt: str) -> ExportChunks | None:
    """Where the downloads' CSV and JSON keep their per-campaign chunks: ``cache_dir``'s
    ``exports/`` under ``salt`` (the package's digest, as the analysis cache's); None without a
    cache folder."""
    from sparkreport.dataset import ExportChunks

    return ExportChunks(cache_dir / "exports", salt) if cache_dir is not None else None


def write_downloads(dataset: Dataset, folder: Path, chunks: ExportChunks | None) -> list[dict[str, Any]]:
    """The dataset's downloads written into ``folder`` (the runs table as CSV, Parquet and JSON;
    the published summaries as CSV, when there are any), each described for the Downloads page:
    name, format, what it holds, rows, size and sha256."""
    from sparkreport.dataset import csv_safe, export_hashed
    from sparkreport.store import sha256_file

    files = []
    described = {
        "dataset.csv": ("CSV", "the runs table: one row per run", len(dataset.runs)),
        "dataset.parquet": ("Parquet", "the runs table, typed, with the dataset hash in its metadata",
                            len(dataset.runs)),
        "dataset.json": ("JSON", json_contents(len(dataset.runs), len(dataset.summaries)),
                         len(dataset.runs) + len(dataset.summaries)),
    }
    for name, (kind, what, count) in described.items():
        path, sha256 = export_hashed(dataset, folder / name, chunks=chunks)
        files.append({"name": name, "format": kind, "what": what, "rows": count,
                      "size": path.stat().st_size, "sha256": sha256})
    if not dataset.summaries.empty:
        path = folder / "published-summaries.csv"
        csv_safe(dataset.summaries).to_csv(path, index=False)
        files.append({"name": path.name, "format": "CSV",
                      "what": "published figures: one row per arm and metric (n, mean, sd)",
                      "rows": len(dataset.summaries), "size": path.stat().st_size,
                      "sha256": sha256_file(path)})
    return files


def scanned_downloads(dataset: Dataset, folder: Path, chunks: ExportChunks | None,
                      vouch: Vouch | None = None) -> tuple[list[dict[str, Any]], dict[str, list[Any]]]:
    """:func:`write_downloads`, then the publish-time scan of what it wrote (``vouch``, which
    the site hands the render: the CSV and JSON, tens of MB at 10 000 runs, new bytes after
    every new run): the files, and of each the scan read and found clean, its name → its
    (inode, size, mtime_ns, sha256) as written. The CSV and JSON are scanned as they are
    assembled from their campaigns' chunks, each chunk once (:class:`~sparkreport.dataset.ExportChunks`):
    after a new run, its campaign's rows, not the tens of MB. Run where they are written, beside the render,
    it leaves the build's publishing nothing to read: the file is moved into the docs folder
    and linked into the site (:mod:`sparkreport.site.reuse_plugin`) as it is, so publishing
    knows it by that stamp (:class:`~sparkreport.site.scan.ScanMemo`), and by its sha256 where
    it was copied."""
    if chunks is not None and vouch is not None:
        chunks.vouch_pieces = vouch.pieces  # the CSV and JSON scanned as they are assembled, chunk by chunk
    files = write_downloads(dataset, folder, chunks)
    vouched = chunks.vouched if chunks is not None else set()
    clean = (vouched | vouch.files([(f["name"], str(folder / f["name"])) for f in files if f["name"] not in vouched])
             if vouch is not None else set())
    stamps: dict[str, list[Any]] = {}
    for file in files:
        if file["name"] in clean:
            found = os.stat(folder / file["name"])
            stamps[file["name"]] = [found.st_ino, found.st_size, found.st_mtime_ns, file["sha256"]]
    return files, stamps


class DownloadsAhead:
    """The Downloads page's files (:func:`write_downloads`: the whole dataset three ways, the
    largest single piece of a render, 0.3 s at 10 000 runs) written in a forked process while
    the render analyses and plans, since they need nothing but the dataset. They go into a
    folder of their own beside the render's ``staging`` folder; the render :meth:`take` s them
    into the page's folder once it knows the page is written again, or :meth:`drop` s them when
    the page is kept (or the render fails: leaving a ``with`` block drops them). Without a worker to fork (one CPU,
    ``SPARKREPORT_JOBS=1``), :meth:`take` writes them then, in the render's process."""

    def __init__(self, dataset: Dataset, staging: Path, chunks: ExportChunks | None, vouch: Vouch | None = None):
        from sparkreport.parallel import Background

        self.folder = staging.with_name(f"{staging.name}.downloads")
        shutil.rmtree(self.folder, ignore_errors=True)  # left by a build that was killed
        self.task = Background(functools.partial(scanned_downloads, dataset, self.folder, chunks, vouch))

    def take(self, folder: Path) -> tuple[list[dict[str, Any]], dict[str, list[Any]]]:
        """The files, moved into ``folder`` (by rename: the same inodes), as
        :func:`write_downloads` describes them, and what the scan found clean
        (:func:`scanned_downloads`), by their paths in the site (the docs folder's)."""
        files, clean = self.task.result()
        folder.mkdir(parents=True, exist_ok=True)
        for file in files:
            os.replace(self.folder / file["name"], folder / file["name"])
        self.drop()
        return files, {f"{DownloadsPage.folder}/{name}": entry for name, entry in clean.items()}

    def drop(self) -> None:
        """The task stopped if it still runs, and whatever it wrote removed."""
        self.task.cancel()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> DownloadsAhead:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.drop()


@register
class DownloadsPage(Page):
    name = "downloads"
    title = "Downloads"
    template = "downloads.md"
    folder = "downloads"
    order = 60
    banner = False
    site_footer = True

    def context(self, site: SiteData, doc: PageDoc, out: Path) -> dict[str, Any]:
        files = site.extra.get(DOWNLOADS_AHEAD)  # written while the analysis ran (DownloadsAhead)
        if files is None:
            cache = site.analysis_cache
            chunks = downloads_chunks(cache.path.parent, cache.salt) \
                if cache is not None and cache.path is not None else None
            files = write_downloads(site.dataset, out / self.folder, chunks)
        doc.files = [f"{self.folder}/{f['name']}" for f in files]  # kept with the page when it is not rewritten
        return {"files": files, "dataset_command": command_line(site.command("dataset", "--out", "dataset.parquet"))}


@register
class CampaignPage(Page):
    """One page per campaign: its question, design, result and caveats."""

    name = "campaigns"
    title = "Campaigns"
    template = "campaign.md"
    folder = "campaigns"
    order = 5

    def docs(self, site: SiteData, out: Path) -> list[PageDoc]:
        from sparkreport.render.report import campaigns, environment_colours, grouped, slice_digest

        runs_of: dict[str, list[str]] = {}
        models_of: dict[str, set[str]] = {}
        for (campaign_name, model, _level), run_ids in site.arm_runs().items():
            runs_of.setdefault(campaign_name, []).extend(run_ids)
            models_of.setdefault(campaign_name, set()).add(model)
        docs = []
        shown, earlier = campaign_split(site)
        for campaign in campaigns(site):
            doc = PageDoc(campaign.path, campaign.title, self.template)
            doc.scope = [(campaign.name, m) for m in sorted(models_of.get(campaign.name, ()))]
            doc.inputs = runs_of.get(campaign.name, [])
            # the campaign as described (its campaign file too), its analysis rows (Holm runs per
            # campaign), whether it carries its own Methodology section (an older campaign) and its
            # charts' environment colours (the site's)
            doc.also_reads = [repr(campaign), *(slice_digest(site, table, "campaign", campaign.name)
                                                for table in ("stats", "comparisons", "runs")),
                              f"method here: {campaign.name in earlier}", repr(environment_colours(site))]
            doc.fill = functools.partial(self.fill_campaign, site, doc, campaign, campaign.name in earlier)
            docs.append(doc)
        grouped(site, "comparisons", "campaign")  # grouped once, before the pages are filled
        if not docs:
            return docs
        # An overview lists every campaign (so /campaigns/ is a page, as /results/ is); with more
        # campaigns than the site-wide pages show in full, the nav lists only the newest (a nav
        # of every campaign is rendered into every page).
        self.newest = {c.path for c in campaigns(site) if c.name in shown} if earlier else {doc.path for doc in docs}
        overview = PageDoc(f"{self.folder}/index.md", "Overview", self.overview_template)
        # Its design, counts and GPUs are what no finding can change: no banner, no findings read.
        overview.banner, overview.reads_findings = False, "none"
        overview.fill = functools.partial(self.fill_overview, site, overview, len(self.newest))
        return [overview, *docs]

    #: The overview's template.
    overview_template = "campaigns_index.md"
    #: The paths of the campaign pages the nav lists (set by :meth:`docs`).
    newest: set[str]

    def nav(self, docs: list[PageDoc]) -> NavItem:
        """The overview and the campaigns :meth:`docs` chose for the nav (every one, or the newest)."""
        if not docs or docs[0].template != self.overview_template:
            return super().nav(docs)
        return (self.title, [(docs[0].title, docs[0].path),
                             *((d.title, d.path) for d in docs[1:] if d.path in self.newest)])

    def fill_overview(self, site: SiteData, doc: PageDoc, in_nav: int) -> None:
        """Every campaign, newest first (:func:`~sparkreport.render.report.recency`, the rule that
        picks the newest for the nav): its last run, design, runs and hardware."""
        import pandas as pd

        from sparkreport.render.report import campaign_times, campaigns, effect_rows, recency

        times = campaign_times(site)
        when = recency(site)
        of: dict[str, list[dict[str, Any]]] = {}
        for effect in effect_rows(site):
            of.setdefault(str(effect["campaign"]), []).append(effect)
        counted = {name: [e for e in effects if e["primary"]] or effects for name, effects in of.items()}
        listed = []
        for c in sorted(campaigns(site), key=lambda c: when(c.name), reverse=True):
            found = times.get(c.name)
            listed.append({
                "answers": mark_tally(counted.get(c.name, [])),
                "name": c.name, "title": c.title, "href": doc.href(c.path),
                "last_run": "—" if found is None or pd.isna(found) else found.strftime("%Y-%m-%d"),
                "levels": c.levels, "environments": c.environments, "models": len(c.models),
                "data": f"published figures ({c.arms} arms)" if c.published else f"{c.runs} runs",
                "gpus": ", ".join(c.gpus) or "—",
            })
        every = [e for effects in counted.values() for e in effects]
        doc.context = {"campaigns": listed, "in_nav": in_nav if in_nav < len(listed) else None,
                       "timed": any(c["last_run"] != "—" for c in listed),
                       "answers_key": answers_key(site, every) if every else None}

    def fill_campaign(self, site: SiteData, doc: PageDoc, campaign: Any, method_here: bool = False) -> None:
        """One campaign's context and charts; ``method_here``: with its Methodology section and arms
        (an older campaign, which Methodology names with a link here)."""
        from sparkreport.render.report import (
            cgroup_observation,
            effect_rows,
            forest_chart,
            grouped_findings,
            verdict_key,
        )

        compared = grouped(site, "comparisons", "campaign").get(campaign.name)
        rows = effect_rows(site, compared) if compared is not None else []
        said = campaign_answer(site, campaign.name, rows)
        table = summary_table(site, rows, HomePage.EFFECT_BUDGET)
        doc.context = {
            "campaign": campaign, "answer": said, "table": table,
            "why_not": why_not_compared(site, campaign) if not said else "",
            "key": verdict_key(site, table_effects(table), gaps=table_gaps(table)),
            "groups": [g for g in grouped_findings(site) if g["campaign"] == campaign.name],
            "observation": cgroup_observation(site, campaign.name),
            "method": described_campaigns(site, [campaign])[0] if method_here else None,
            "arms": arm_matrices(site, arm_table(site, [campaign.name])) if method_here else [],
        }
        doc.charts = self.campaign_charts(site, campaign.name, rows)
        chart = forest_chart([e for e in rows if e["primary"]] or rows, name="effects",
                             title=f"Every effect with its CI — {campaign.title}",
                             confidence=site.config.analysis.confidence, titles={campaign.name: campaign.title})
        if chart is not None:
            doc.charts.insert(0, chart)

    @staticmethod
    def campaign_charts(site: SiteData, campaign: str, effects: list[dict[str, Any]]) -> list[ChartSpec]:
        """A cross-model chart per primary metric: every arm's mean and CI, models side by side.
        The arms are those of the comparisons: with a label as the factor, its levels (where the
        campaign's runs carry it), as the page's answer and its Results rows have them."""
        from sparkreport.charts import means_chart
        from sparkreport.render.report import environment_colours, primary_metrics
        from sparkreport.schema import slug

        stats = None
        if site.config.factor != "environment":
            stats = grouped(site, "level_stats", "campaign").get(campaign)
        if stats is None:
            stats = grouped(site, "stats", "campaign").get(campaign)
        if stats is None:
            return []
        out = []
        for metric in primary_metrics(site, stats["metric"]):
            arms = stats[stats["metric"] == metric]
            # environment first: a label cut short still says which arm it is; each in its colour
            arms = arms.assign(arm=arms["environment"].astype(str) + " · " + arms["model_name"].astype(str))
            chart = means_chart(arms, metric, name=f"{slug(metric)}-by-model",
                                title=f"{metric_label(metric)} across models",
                                confidence=site.config.analysis.confidence, colours=environment_colours(site))
            if chart is not None:
                out.append(chart)
        scatter = campaign_scatter(site, campaign)
        if scatter is not None:
            out.append(scatter)
        return out


def campaign_scatter(site: SiteData, campaign: str) -> ChartSpec | None:
    """The Memory page's KV-cache scatter for one campaign, with its fitted line where the
    derived-identity check found one (a post about one study binds this one)."""
    from sparkreport.charts import memory_scatter
    from sparkreport.render.memory import identity_fits, scatter_points
    from sparkreport.render.report import environment_colours

    return memory_scatter(scatter_points(site, campaign), name="kv-vs-peak",
                          title="KV cache against memory in use before it was allocated",
                          fits=[f for f in identity_fits(site) if f["campaign"] == campaign],
                          colours=environment_colours(site))
