"""The Results pages: one page per model, a table, the comparisons and charts per metric."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.dataset import frame_rows as rows
from sparkreport.metrics import with_unit
from sparkreport.names import campaign_order, level_order, unique_slugs
from sparkreport.render.markdown import is_missing
from sparkreport.render.pages import NavItem, Page, PageDoc, register
from sparkreport.render.precision import table_places
from sparkreport.render.tables import claims, metric_label, metric_order
from sparkreport.schema import slug

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pandas as pd

    from sparkreport.analysis.design import Fact
    from sparkreport.charts import ChartSpec
    from sparkreport.render.context import SiteData


def arm_labels(frame: pd.DataFrame) -> pd.Series:
    """The label of each row's arm: the environment, prefixed by the campaign when several."""
    if frame["campaign"].nunique() > 1:
        return frame["campaign"].astype(str) + " · " + frame["environment"].astype(str)
    return frame["environment"].astype(str)


@register
class ResultsPage(Page):
    name = "results"
    title = "Results"
    template = "results.md"
    folder = "results"
    order = 10

    overview_template = "results_index.md"

    def docs(self, site: SiteData, out: Path) -> list[PageDoc]:
        from sparkreport.render.report import CAMPAIGNS_IN_FULL, newest_campaigns

        docs = []
        earlier_docs = []
        split: dict[str, tuple[list[str], list[str]]] = {}
        models = site.models()
        folders = unique_slugs(model for model, _ in models)  # foo/bar and foo bar: two pages
        runs_of: dict[tuple[str, str], list[str]] = {}  # (model, campaign) → its run ids, in store order
        campaigns_of: dict[str, set[str]] = {}
        for (campaign, model, _level), run_ids in site.arm_runs().items():
            runs_of.setdefault((model, campaign), []).extend(run_ids)
            campaigns_of.setdefault(model, set()).add(campaign)
        for model, model_name in models:
            shown, earlier = split[model] = newest_campaigns(site, campaigns_of.get(model, ()))
            doc = PageDoc(f"{self.folder}/{folders[model]}/index.md", model_name, self.template)
            older = None
            if earlier:  # the older campaigns' tables on a page of their own, linked from the model's
                older = PageDoc(f"{self.folder}/{folders[model]}/earlier/index.md",
                                f"{model_name}: earlier campaigns", self.template)
                self.plan(site, older, model, model_name, earlier, runs_of, shown=shown, earlier_of=doc)
                earlier_docs.append(older)
            self.plan(site, doc, model, model_name, shown, runs_of, earlier=earlier, earlier_page=older)
            docs.append(doc)
        overview = PageDoc(self.path, "Overview", self.overview_template)
        pages = [(model, doc) for (model, _name), doc in zip(models, docs, strict=True)]

        def fill_overview() -> None:
            from sparkreport.render.pagecache import KeptRows

            kept = KeptRows(site, "overview-rows")
            parts = [kept.get_or([doc.key, doc.path, doc.title, *split[model][0]],
                                 functools.partial(self.overview_row, site, model, doc, split[model][0]))
                     for model, doc in pages]
            kept.save()
            overview.context = {"models": parts, **self.overview_lead(site, [r for m in parts for r in m["rows"]]),
                                "in_full": CAMPAIGNS_IN_FULL, "earlier": any(earlier for _, earlier in split.values())}

        overview.fill = fill_overview
        return [overview, *docs, *earlier_docs]

    def nav(self, docs: list[PageDoc]) -> NavItem:
        """The overview and one entry per model (a model's page of earlier campaigns is linked from it)."""
        return (self.title, [(doc.title, doc.path) for doc in docs if not doc.path.endswith("/earlier/index.md")])

    def plan(self, site: SiteData, doc: PageDoc, model: str, model_name: str, campaigns: list[str],
             runs_of: dict[tuple[str, str], list[str]], *, shown: list[str] | None = None,
             earlier: list[str] | None = None, earlier_page: PageDoc | None = None,
             earlier_of: PageDoc | None = None) -> None:
        """Plan one model's page over ``campaigns``: what it reads and how it is filled."""
        from sparkreport.render.report import answer_reads, environment_colours, slice_digest

        doc.scope = [(campaign, model) for campaign in campaigns]
        doc.reads_findings = "caveats"  # its claims and banner name the errors; its box, some warnings
        doc.inputs = [run for campaign in campaigns for run in runs_of.get((model, campaign), [])]
        # its analysis rows, per campaign: a comparison's Holm-adjusted p-value depends on the other
        # models of its campaign, not on other campaigns
        doc.also_reads = [model, ",".join(campaigns), ",".join(earlier or shown or []),
                          *(slice_digest(site, table, ("model", "campaign"), (model, campaign))
                            for table in (*model_tables(site, model)[:2], "comparisons") for campaign in campaigns),
                          # its answers: what each campaign compares and its environments (constant_lines)
                          *(answer_reads(site, campaign) for campaign in campaigns),
                          repr(environment_colours(site))]  # its charts' colours
        links = {"earlier_page": doc.href(earlier_page.path) if earlier_page else None,
                 "model_page": doc.href(earlier_of.path) if earlier_of else None,
                 "earlier": earlier or [], "shown": shown or []}
        doc.fill = functools.partial(self.fill_model, site, doc, model, model_name, campaigns, links)

    def fill_model(self, site: SiteData, doc: PageDoc, model: str, model_name: str, campaigns: list[str],
                   links: dict[str, Any]) -> None:
        doc.context, doc.charts = self.model_context(site, model, model_name, campaigns,
                                                     with_charts=links["model_page"] is None)
        doc.context.update(links, read_with_care=read_with_care(site, doc.scope or [], several=len(campaigns) > 1))

    def overview_row(self, site: SiteData, model: str, doc: PageDoc, shown: list[str]) -> dict[str, Any]:
        """One model's part of the overview, over the campaigns its page shows in full (``shown``):
        each arm's mean and CI of the metrics its comparisons test, then of the report's other
        primary metrics (``primary_metrics``) — the model page's order within each — and the
        campaign its rows come from, when they all come from one (``campaign``; else each row
        names its own). Read from the model's page's rows, so kept by that page's key
        (:class:`~sparkreport.render.pagecache.KeptRows`): after one new run, only its model's part is made again."""
        from sparkreport.render.report import campaigns, grouped, grouped_by

        def of(table: str) -> pd.DataFrame | None:
            return grouped(site, table, "model").among(model, "campaign", shown)

        stats_table, _runs_table, level_name = model_tables(site, model)
        stats = of(stats_table)
        if stats is None or stats.empty:
            return {"model_name": doc.title, "path": doc.path, "rows": [], "campaign": None}
        compared = of("comparisons")
        # tested: a comparison with a test (one of published figures without a spread has none)
        tested = set() if compared is None else \
            set(compared.loc[compared["verdict"] != "untested", "metric"].astype(str))
        primary, in_page_order = page_order(site, stats["metric"])
        shown_metrics = [m for m in in_page_order if m in tested] + [m for m in primary if m not in tested]
        by_metric = dict(grouped_by(rows(stats), "metric"))
        arms_of = {metric: by_metric[metric] for metric in shown_metrics}
        # each metric's figures with the decimals of its table on the model's page
        found = [{**row, "label": metric_label(metric), "tested": metric in tested,
                  "places": table_places(arms_of[metric], metric)}
                 for metric in shown_metrics for row in arms_of[metric]]
        names = list(dict.fromkeys(str(row["campaign"]) for row in found))
        campaign = next((c for c in campaigns(site) if c.name == names[0]), None) if len(names) == 1 else None
        return {"model_name": doc.title, "path": doc.path, "rows": found, "campaign": campaign,
                "level_name": level_name}

    @staticmethod
    def overview_lead(site: SiteData, shown: list[dict[str, Any]]) -> dict[str, Any]:
        """What the overview's lead-in says of its rows (``shown``, every model's): the metrics
        tested somewhere (``tested``) and the other primary metrics (``others``), each named once in
        the model pages' order; whether an interval has no spread, and whether a row is published."""
        from sparkreport.render.report import join_and

        _primary, in_order = page_order(site, [r["metric"] for r in shown])
        tested = {str(r["metric"]) for r in shown if r["tested"]}
        return {"tested": join_and([metric_label(m) for m in in_order if m in tested]),
                "others": join_and([metric_label(m) for m in in_order if m not in tested]),
                "no_spread": any(not is_missing(r["ci_low"]) and r["ci_low"] == r["ci_high"] for r in shown),
                "published": any(r["source"] == "published" for r in shown),
                "unprinted_sd": any(r["source"] == "published" and is_missing(r["ci_low"]) for r in shown)}

    def model_context(self, site: SiteData, model: str, model_name: str, campaigns: list[str] | None = None,
                      with_charts: bool = True) -> tuple[dict[str, Any], list[ChartSpec]]:
        """The sections (one per metric) and charts of one model's page, over ``campaigns`` (None:
        all of the model's); ``with_charts=False``: the tables alone."""
        from sparkreport.render.report import grouped, grouped_by

        def of(table: str) -> pd.DataFrame:
            groups = grouped(site, table, "model")
            frame = groups.get(model) if campaigns is None else groups.among(model, "campaign", campaigns)
            return getattr(site, table).iloc[0:0] if frame is None else frame

        stats_table, runs_table, level_name = model_tables(site, model)
        stats = of(stats_table).copy()  # an arm per level of the factor, as the comparisons have
        compared = of("comparisons")
        runs = of(runs_table).copy()
        charts: list[ChartSpec] = []
        sections: list[dict[str, Any]] = []
        if not stats.empty:
            stats["arm"] = arm_labels(stats)
        if not runs.empty:  # a row per arm, in its environment's colour
            runs["arm"] = arm_labels(runs)
        from sparkreport.render.report import (
            campaign_answer,
            effect_rows,
            stated_lines,
            table_gaps,
            verdict_key,
        )

        primary, in_page_order = page_order(site, stats["metric"])
        facts = {(fact.campaign, fact.metric): fact for fact in facts_of(site).get(model, [])}
        # every row made plain once, then split by metric (rows in their order): a frame cut and
        # converted per metric, and again for its chart, was a fifth of a model page's fill
        arms_of = dict(grouped_by(rows(stats), "metric"))
        compared_of = dict(grouped_by(claims(compared, site.findings, site.level_runs()), "metric"))
        for metric in in_page_order:
            arm_rows = arms_of.get(metric, [])
            label = metric_label(metric)
            section = {"metric": metric, "label": label, "unit": arm_rows[0]["unit"] if arm_rows else "",
                       "arms": arm_rows, "published": any(arm["source"] == "published" for arm in arm_rows),
                       "primary": metric in primary}
            # A quantity that did not vary is a sentence, with neither a table nor a chart of it.
            section["constant"], section["fact"] = held_constant(site, facts, section) or (None, None)
            # the decimals of every figure of the metric in its tables (the site's precision rule)
            section["places"] = table_places(arm_rows, metric)
            section_charts = (self.metric_charts(site, runs, arm_rows, metric, label)
                              if with_charts and site.config.charted(metric) and not section["constant"] else [])
            charts += section_charts
            section["charts"] = section_charts
            section["comparisons"] = [] if section["constant"] else compared_of.get(metric, [])
            sections.append(section)
        effects = effect_rows(site, compared) if not compared.empty else []
        by_effect = {(e["campaign"], e["metric"], e["candidate"]): e for e in effects}
        for section in sections:
            for c in section["comparisons"]:
                c["effect"] = by_effect.get((c["campaign"], section["metric"], c["candidate"]))
        # Several campaigns (releases, say): one table of their answers, what each would say
        # beside its verdicts said once under it, instead of the same sentences per campaign.
        glance = None
        answered = sorted({str(e["campaign"]) for e in effects}, key=campaign_order)
        if len(answered) > 1:
            from sparkreport.render.report import across_campaigns_notes, summary_table

            glance = {**summary_table(site, [e for e in effects if e["primary"]] or effects, len(answered),
                                      by="campaign"), "notes": across_campaigns_notes(effects)}
        # Each campaign's answer as Home gives it, of this model alone (under a table of the
        # verdicts, what it states, not tests); campaigns whose lines are alike say them once.
        shown = sorted(set(stats["campaign"].astype(str)), key=campaign_order) if not stats.empty else []
        alike: dict[tuple[str, ...], list[str]] = {}
        for campaign in shown:
            lines = (stated_lines(site, campaign, model) if glance else
                     campaign_answer(site, campaign, [e for e in effects if e["campaign"] == campaign], model=model))
            if lines:
                alike.setdefault(tuple(lines), []).append(campaign)
        answers: list[dict[str, Any]] = [
            {"campaigns": names, "lines": list(lines), "every": len(names) == len(shown) > 1}
            for lines, names in alike.items()]
        from sparkreport.analysis.design import family_representatives
        from sparkreport.render.report import join_and

        tested, stands_for = family_representatives(site.config.analysis.tested_metrics)
        context = {
            "other_metrics": other_metrics_summary(sections, site.config.baseline, stands_for),
            "held": held_constant_line([s for s in sections if not s["primary"] and s["constant"]]),
            # what this page's metrics were tested on, named as a list a sentence can hold (not a
            # metric the page states as held constant: it was not tested here)
            "tested_text": join_and([metric_label(m) for m in tested
                                     if m in {s["metric"] for s in sections if not s["constant"]}]),
            # whether any of them got a test (else they were compared only: published without a spread)
            "tested_any": any(not e["untested"] for e in effects),
            "charted": [metric_label(m) for m in page_order(site, stats["metric"])[1] if site.config.charted(m)],
            "model": model, "model_name": model_name, "sections": sections, "answers": answers,
            "level_name": level_name,
            "glance": glance,
            "key": verdict_key(site, effects, what="Δ %" if glance is None else "Cells and Δ %",
                               gaps=glance is not None and table_gaps(glance))
            if effects else "",
            "campaigns": sorted(set(stats["campaign"].astype(str)), key=campaign_order) if not stats.empty else [],
            "n_runs": len(runs), "n_included": int(runs["included"].astype(bool).sum()) if len(runs) else 0,
        }
        return context, charts

    @staticmethod
    def metric_charts(site: SiteData, runs: pd.DataFrame, arms: list[dict[str, Any]], metric: str,
                      label: str) -> list[ChartSpec]:
        """Every run per arm, and the arm means with their CIs, each arm in its environment's
        colour on the site and in the order of ``arms`` (the statistics' rows of ``metric``, as
        :func:`~sparkreport.dataset.frame_rows` gives them: the baseline first)."""
        from sparkreport.charts import per_run_chart
        from sparkreport.render.report import environment_colours, means_with_band

        charts = []
        if not runs.empty:
            # a run's value in its tooltip with the decimals of the metric's table (the precision rule)
            charts.append(per_run_chart(runs, metric, name=f"{slug(metric)}-runs", title=f"{label}: every run",
                                        colours=environment_colours(site), order=[str(arm["arm"]) for arm in arms],
                                        places=table_places(arms, metric)))

        # bare means without an interval: the table says it
        if not runs.empty or any(not is_missing(arm["ci_low"]) for arm in arms):
            charts.append(means_with_band(site, arms, metric, name=f"{slug(metric)}-means",
                                          title=f"{label}: mean and {site.confidence_label} CI"))
        return [chart for chart in charts if chart is not None]


def model_tables(site: SiteData, model: str) -> tuple[str, str, str]:
    """What a model's Results rows are: the site's tables to read (statistics, runs) and what
    each row is a level of. An arm per level of the factor — what the comparisons contrast —
    when the model's runs carry one; else (the factor ``environment``, or a model none of whose
    runs carries the factor's label: published figures) an arm per environment."""
    from sparkreport.render.report import grouped

    if site.config.factor != "environment" and model in grouped(site, "level_stats", "model"):
        return "level_stats", "level_runs_frame", site.config.factor_name
    return "stats", "runs", "environment"


def read_with_care(site: SiteData, scope: list[tuple[str, str]], several: bool = False) -> list[str]:
    """The warnings that change what a model page's figures mean (their checks in
    :data:`~sparkreport.analysis.checks.READ_WITH_CARE`, in its order) about the runs of its
    (campaign, model) pairs (``scope``), one line per check: its title, then what each finding
    found after its arms — "docker", and one sentence said of several arms ("cgroup-16g and
    native", as Data quality words it) once, each arm after its campaign's title where the page
    has ``several``; a clause every finding of one check ends with ("such a run did less work …")
    is said once, at the end of its line."""
    from sparkreport.analysis.checks import READ_WITH_CARE, check_title
    from sparkreport.render.builtin import common_clause
    from sparkreport.render.report import campaign_title, finding_arms, join_and, message_body

    wanted = set(scope)
    found: dict[str, dict[str, list[tuple[str, str]]]] = {}  # code → what it found → its arms
    for finding in site.findings:
        if finding.severity != "warning" or finding.code not in READ_WITH_CARE:
            continue
        baseline = site.config.baseline_of(site.config.factor)
        arms = sorted(((c, level) for c, m, level in finding_arms(site, finding) if (c, m) in wanted),
                      key=lambda arm: (arm[0], level_order(arm[1], baseline)))  # as the tables list them
        if arms:
            said = found.setdefault(finding.code, {}).setdefault(message_body(finding.message), [])
            said += [arm for arm in arms if arm not in said]

    def where(arms: list[tuple[str, str]]) -> str:
        if not several:
            return join_and([level for _campaign, level in arms])
        campaigns = dict.fromkeys(campaign for campaign, _level in arms)
        return "; ".join(f"{campaign_title(site, c)} · {join_and([lv for c2, lv in arms if c2 == c])}"
                         for c in campaigns)

    def lowered(sentence: str) -> str:  # after "docker: ", "environments ran …" (an acronym, "CV", stays)
        return sentence[:1].lower() + sentence[1:] if sentence[1:2].islower() else sentence

    lines = []
    for code in sorted(found, key=READ_WITH_CARE.index):
        whats = list(found[code])
        shared = common_clause(whats)
        clause, heads = shared if shared is not None else ("", whats)
        # the clause after the boundary it had (", so ", ": ", " — "), the sentences' full stop kept
        joint = next((b for b in (", so ", ": ", " — ") if whats[0][:-len(clause)].endswith(b)), "") if clause else ""
        body = "; ".join(f"{where(found[code][what])}: {lowered(head.removesuffix('.'))}"
                         for what, head in zip(whats, heads, strict=True))
        title = check_title(code)
        lines.append(f"**{title[:1].upper()}{title[1:]}** — {body}{joint}{clause}" + ("" if clause else "."))
    return lines


def page_order(site: SiteData, metrics: Iterable[Any]) -> tuple[list[str], list[str]]:
    """The primary metrics among ``metrics`` (``primary_metrics``' order), and every one of them in
    the order a model page lists them: the primary first, then the rest in :func:`metric_order`."""
    present = list(dict.fromkeys(str(m) for m in metrics))
    primary = [m for m in site.config.primary_metrics if m in present]
    return primary, metric_order(present, primary)


def facts_of(site: SiteData) -> dict[str, list[Fact]]:
    """``site.facts`` by model, once per render."""
    by_model: dict[str, list[Fact]] | None = site.extra.get("_facts_by_model")
    if by_model is None:
        by_model = {}
        for fact in site.facts:
            by_model.setdefault(fact.model, []).append(fact)
        site.extra["_facts_by_model"] = by_model
    return by_model


def other_metrics_summary(sections: list[dict[str, Any]], baseline: str,
                          stands_for: dict[str, list[str]]) -> dict[str, Any]:
    """The tables that open "Other metrics": every metric that is neither primary nor held
    constant, its mean per level and, where it was tested, its comparison — the very rows of its
    section (``comparisons``, each with its ``effect``), so the page prints the same numbers in
    the same words in both places. One table per campaign (each has its own levels and baseline).

    The shape of a campaign's table (``wide``):

    * one or two levels: a row per metric, a column of means per level (the baseline first),
      then the comparison's Δ % and verdict — one comparison per row, the common case;
    * three or more levels (native vs cgroup vs chroot): a row per metric and level, the
      baseline's first, with one mean column and each candidate's Δ % and verdict on its own
      row, so the table keeps five columns however many candidates there are.

    A table without a single comparison has no Δ % and verdict columns (``compared``). A level
    whose every mean in a wide table is a published figure is marked in its column's head;
    otherwise each published mean is marked where it stands.

    Returns ``{"tables": [...], "compared": n, "tested": n, "untested": n, "rows": n, "tested_as":
    [clauses], "headed": bool}``: how many rows have a comparison, how many a tested one (not ○),
    how many of two or more levels have none, how many rows there are, a clause naming
    those not tested because they are an exact function of a metric that was, in the same
    campaign (``stands_for``, as :func:`~sparkreport.analysis.design.family_representatives`
    gives it: request throughput of output throughput) — said once above the tables, not in a
    cell per row — and whether a column's head is marked published.
    """
    others = [s for s in sections if not s["primary"] and not s["constant"]]
    represented = {member: kept for kept, members in stands_for.items() for member in members}
    labels = {s["metric"]: s["label"] for s in sections}
    tested_in = {(str(c["campaign"]), s["metric"]) for s in sections for c in s["comparisons"]}
    # campaign → metric → level → its arm row, and campaign → metric → candidate → comparison
    arms_of: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    compared_of: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for s in others:
        for a in s["arms"]:
            arms_of.setdefault(str(a["campaign"]), {}).setdefault(s["metric"], {})[str(a["environment"])] = a
        for c in s["comparisons"]:
            compared_of.setdefault(str(c["campaign"]), {}).setdefault(s["metric"], {})[str(c["candidate"])] = c
    tables: list[dict[str, Any]] = []
    counts = {"compared": 0, "tested": 0, "untested": 0, "rows": 0}
    tested_as_of: dict[str, list[str]] = {}  # a tested metric's label → the labels it stands for
    for campaign, metrics in arms_of.items():
        compared = compared_of.get(campaign, {})
        bases = {str(c["baseline"]) for by in compared.values() for c in by.values()}
        base = bases.pop() if len(bases) == 1 else baseline  # a campaign's comparisons share one baseline
        levels = sorted({level for arms in metrics.values() for level in arms}, key=lambda lv: level_order(lv, base))
        wide = len(levels) <= 2
        headed = {level: wide and all(arms[level]["source"] == "published"
                                      for arms in metrics.values() if level in arms) for level in levels}
        rows = []
        for s in others:
            arms = metrics.get(s["metric"])
            if arms is None:
                continue
            kept = represented.get(s["metric"])
            stood_for = labels[kept] if kept in labels and (campaign, kept) in tested_in else None
            by_level = compared.get(s["metric"], {})
            cells = [{"level": level, "mean": arms[level]["mean"] if level in arms else None,
                      "comparison": by_level.get(level),
                      "published": level in arms and arms[level]["source"] == "published" and not headed[level]}
                     for level in levels if wide or level in arms]
            rows.append({"metric": s["metric"], "label": with_unit(s["label"], s["unit"]), "cells": cells,
                         # the section's decimals (every arm of the metric), the same in each
                         # campaign's table — found once a section, not again here once a campaign
                         "places": s["places"],
                         "comparison": next(iter(by_level.values()), None)})
            counts["rows"] += 1
            if by_level:
                counts["compared"] += 1
                # a comparison without a test (○: one run per arm, published without a spread) is compared only
                counts["tested"] += any(not (c.get("effect") or {}).get("untested") for c in by_level.values())
            elif len(arms) > 1:
                counts["untested"] += 1
                if stood_for is not None and s["label"] not in tested_as_of.setdefault(stood_for, []):
                    tested_as_of[stood_for].append(s["label"])
        tables.append({"campaign": campaign, "base": base, "wide": wide,
                       "compared": any(r["comparison"] for r in rows), "rows": rows,
                       "levels": [{"name": level, "published": headed[level]} for level in levels]})
    from sparkreport.render.report import join_and

    tested_as = [f"at a fixed workload {join_and(members)} "
                 f"{'is an exact function' if len(members) == 1 else 'are exact functions'} of {label}, "
                 "which is tested" for label, members in tested_as_of.items()]
    return {"tables": tables, **counts, "tested_as": tested_as,
            "headed": any(level["published"] for table in tables for level in table["levels"])}


def held_constant(site: SiteData, facts: dict[tuple[str, str], Fact],
                  section: dict[str, Any]) -> tuple[str, Fact | None] | None:
    """A metric that did not vary within any of the section's arms, said in one clause — its
    facts' (``site.facts``, :func:`~sparkreport.analysis.design.constant_facts`, keyed by campaign
    and metric): "64 requests in every run (40 runs)", or each level's value where they differ,
    and per campaign where the section spans several that differ — instead of a table of
    intervals from 64 to 64; with the one fact the clause says (over every campaign's runs), None
    where it names several. None when it varied in an arm, or an arm is one no fact covers (a
    single run whose value differs from the others'); a value some runs did not record is said
    over the runs that did ("in every run that recorded it (8 of 9 runs)")."""
    from sparkreport.render.report import campaign_title

    found: dict[str, Fact] = {}
    for arm in section["arms"]:
        fact = facts.get((str(arm["campaign"]), section["metric"]))
        if fact is None or str(arm["environment"]) not in fact.values:
            return None
        found[fact.campaign] = fact
    if not found:
        return None
    first = next(iter(found.values()))
    if all(fact.values == first.values and fact.note == first.note for fact in found.values()):
        # the same in every campaign: one clause over all their runs
        every = list(found.values())
        partly = any(fact.runs is not None for fact in every)  # some run of some campaign did not record it
        merged = dataclasses.replace(first, n=sum(fact.n for fact in every),
                                     runs=sum(fact.runs or fact.n for fact in every) if partly else None)
        return merged.value_text, merged
    return "; ".join(f"{fact.value_text} in {campaign_title(site, name)}" for name, fact in found.items()), None


def held_constant_line(fixed: list[dict[str, Any]]) -> dict[str, Any]:
    """The metrics a model's page states as held constant (``fixed``: their sections, each with its
    ``constant`` clause and ``fact``, :func:`held_constant`) as one line, not a row each: those of
    one value in every run over the same runs (the most of them: ``shared``, by label and value,
    "Requests 400") after what they share, said once (``lead``: "one value in every run (40
    runs)"), then the others with their own clause (``rest``: a fixed difference, a value per
    campaign)."""
    from collections import Counter

    def kind(s: dict[str, Any]) -> tuple[int, str] | None:  # over how many runs, and what set it
        fact: Fact | None = s["fact"]  # one that some runs did not record keeps its own count
        return (fact.n, fact.note) if fact is not None and fact.named and fact.runs is None else None

    groups = Counter(k for s in fixed if (k := kind(s)) is not None)
    if not groups:
        return {"lead": "", "shared": [], "rest": [f"{s['label']}: {s['constant']}" for s in fixed]}
    (n, note), _count = groups.most_common(1)[0]
    shared = [s for s in fixed if kind(s) == (n, note)]
    return {"lead": f"one value in every run ({n:,} runs){f', {note}' if note else ''}",
            "shared": [s["fact"].named for s in shared],
            "rest": [f"{s['label']}: {s['constant']}" for s in fixed if s not in shared]}
