"""Home's blocks: each of the newest campaigns answers its question in a block of its own, but
neighbouring campaigns of one design (a release per campaign, say: Methodology's
:func:`~sparkreport.render.describe.design_groups`) share one block — the newest's answer in full,
a table of how each campaign answered, and what the checks found in all of them said once.
Five copies of one table, one per release, hid what changed between the releases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkreport.names import campaign_order
from sparkreport.render.describe import described_campaigns, design_groups
from sparkreport.render.report import across_campaigns_notes, recency, summary_table, table_gaps

if TYPE_CHECKING:
    from sparkreport.render.context import SiteData
    from sparkreport.render.report import Campaign


def campaign_blocks(site: SiteData, shown: list[Campaign]) -> list[dict[str, Any]]:
    """``shown`` (in the pages' order) as Home's blocks: a run of neighbouring campaigns of one
    design is one block, any other campaign a block of its own. Each block has ``campaigns`` (in
    order), ``newest`` (the one whose answer it gives in full: the newest by its last run, as
    :func:`~sparkreport.render.report.newest_campaigns` counts it), ``runs_text`` (the runs of
    each, as one count or a range) and ``differs`` (the settings whose values differ between
    them, with their values in order)."""
    when = recency(site)
    blocks = []
    for group in design_groups(described_campaigns(site, shown)):
        members = group["campaigns"]
        blocks.append({"campaigns": members, "newest": max(members, key=lambda c: when(c.name)),
                       "runs_text": group["d"].get("runs_text", ""), "differs": group["differs"]})
    return blocks


def answers_moved(site: SiteData, effects: list[dict[str, Any]], names: list[str], budget: int) -> dict[str, Any]:
    """How the answers of the campaigns ``names`` (of one design, in order) moved, as one table of
    their primary metrics. Each campaign answering for one model (and one comparison): a row per
    campaign, as a model's Results page has it (:func:`summary_table` ``by="campaign"``, each
    cell its mark, Δ% and CI). Several models: a row per model and campaign would make fifty rows
    of ten models in five releases, so the rows are the models, as in each campaign's own table,
    and a cell holds each campaign's mark in order (``marks``, None where it has none) and the
    span of their Δ% (``low``, ``high``): a verdict that flips from release to release shows in
    one row. ``by`` says which. With ``notes`` (what a ? would add, said once), ``effects``
    (those the table shows, for the key) and ``gaps`` (a cell or mark of "—")."""
    of = {name: [e for e in effects if e["campaign"] == name] for name in names}
    tables = [summary_table(site, of[name], budget) for name in names]
    if all(len(table["rows"]) <= 1 for table in tables):
        table = summary_table(site, effects, len(names), by="campaign")
        return {**table, "by": "campaign", "notes": across_campaigns_notes(effects), "gaps": table_gaps(table),
                "effects": [cell for row in table["rows"] for cell in row["cells"].values()]}
    whole = summary_table(site, effects, budget)  # the models, their names and the metrics of them all
    cells = [{row["key"]: row["cells"] for row in table["rows"]} for table in tables]
    rows = []
    for row in whole["rows"]:
        row_cells = {}
        for m in whole["metrics"]:
            found = [table.get(row["key"], {}).get(m["metric"]) for table in cells]
            deltas = [e["delta_pct"] for e in found if e is not None and e["delta_pct"] is not None]
            row_cells[m["metric"]] = {"marks": [e["mark"] if e is not None else None for e in found],
                                      "low": min(deltas) if deltas else None, "high": max(deltas) if deltas else None}
        rows.append({"model_name": row["model_name"], "cells": row_cells})
    shown = [e for table in tables for row in table["rows"] for e in row["cells"].values()]
    return {**whole, "rows": rows, "by": "model", "notes": across_campaigns_notes(shown, where="a mark"),
            "gaps": table_gaps(*tables) or any(None in cell["marks"] for row in rows for cell in row["cells"].values()),
            "effects": shown}


def findings_sections(groups: list[dict[str, Any]], blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Home's "What the checks found", a section per campaign (named by ``campaign``; "" for
    findings of no campaign, first) with its lines (``found``, in ``groups``' order: errors
    first), in the order of the names — but a block of several campaigns is one section
    (``campaigns``), at its first campaign's place: the lines found alike in every one of them
    (``common``, said once), then what each adds (``each``: campaign and lines) and, where some
    add lines, the campaigns that add nothing (``quiet``)."""
    by_campaign: dict[str, list[dict[str, Any]]] = {}
    for g in groups:
        by_campaign.setdefault(g["campaign"], []).append(g)
    block_of = {c.name: block for block in blocks if len(block["campaigns"]) > 1 for c in block["campaigns"]}
    sections: list[dict[str, Any]] = []
    done: set[int] = set()
    for name in sorted(set(by_campaign) | set(block_of), key=campaign_order):
        block = block_of.get(name)
        if block is None:
            sections.append({"campaign": name, "found": by_campaign[name]})
        elif id(block) not in done:
            done.add(id(block))
            members = [c.name for c in block["campaigns"]]
            if any(by_campaign.get(member) for member in members):
                sections.append(shared_findings(members, by_campaign))
    return sections


def _line(g: dict[str, Any]) -> tuple[Any, ...]:
    """What a line of findings says but for its campaign: two campaigns' lines alike."""
    return g["severity"], g["code"], tuple(g["models"]), tuple(g["levels"]), g["count"]


def shared_findings(members: list[str], by_campaign: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The findings of the campaigns ``members`` as :func:`findings_sections` has a block's."""
    lines = [{_line(g) for g in by_campaign.get(member, [])} for member in members]
    alike = set.intersection(*lines)
    common = [g for g in by_campaign.get(members[0], []) if _line(g) in alike]
    each = [{"campaign": member, "found": [g for g in by_campaign.get(member, []) if _line(g) not in alike]}
            for member in members]
    adds = [e for e in each if e["found"]]
    return {"campaigns": members, "common": common, "each": adds,
            "quiet": [e["campaign"] for e in each if not e["found"]] if adds else []}
