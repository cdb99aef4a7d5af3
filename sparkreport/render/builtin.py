"""The built-in pages: Home, Methodology, Data quality, Runs, Downloads (+ Results, Memory).

Each class only gathers numbers the analysis already computed; the wording lives in the
templates, which a project can override by name.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from sparkreport.analysis.statistics import RATIO_INTERVAL_METHOD
from sparkreport.dataset import frame_rows as rows
from sparkreport.render import diffs, history, memory, results, runs_index  # noqa: F401  (register the other pages)
from sparkreport.render.context import SiteData
from sparkreport.render.history import history_method, latest_change, site_history
from sparkreport.render.pages import Page, PageDoc, register
from sparkreport.render.tables import claims, metric_label, recorded_settings
from sparkreport.schema import RunRecord

#: Findings of the physical-plausibility checks, which the home page leads with.
PHYSICAL_CODES = ("capacity-weights", "capacity-peak", "roofline", "size-insensitive", "derived-identity",
                  "covariate-order", "covariate-temperature")


def campaign_overview(site: SiteData) -> list[dict[str, Any]]:
    """One row per campaign: what kind of data it holds, its models, environments and size."""
    ds = site.dataset
    out = []
    for campaign in sorted({r.campaign for r in ds.records}):
        runs = ds.runs[ds.runs["campaign"] == campaign]
        sums = ds.summaries[ds.summaries["campaign"] == campaign]
        frame = runs if not runs.empty else sums
        out.append({
            "campaign": campaign,
            "published": runs.empty,
            "models": sorted(set(frame["model_name"].astype(str))),
            "environments": sorted(set(frame["environment"].astype(str))),
            "runs": len(runs),
            "arms": int(sums[["model", "environment"]].drop_duplicates().shape[0]) if not sums.empty else 0,
        })
    return out


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

    #: Sentences the home page lists in full; above, each campaign shows its largest differences
    #: and counts the rest (every sentence is on its model's Results page).
    SENTENCE_BUDGET = 120
    #: Physical findings listed before "and N more" (all of them are on Data quality).
    PHYSICAL_BUDGET = 20

    def context(self, site: SiteData, doc: PageDoc, out: Path) -> dict[str, Any]:
        published = published_keys(site)
        by_campaign: dict[str, list[dict[str, Any]]] = {}
        for row in claims(site.comparisons, site.findings, site.arm_runs()):
            row["published"] = (row["campaign"], row["model"]) in published
            by_campaign.setdefault(str(row["campaign"]), []).append(row)
        total = sum(len(rows) for rows in by_campaign.values())
        per_campaign = None if total <= self.SENTENCE_BUDGET else max(3, self.SENTENCE_BUDGET // len(by_campaign))
        findings = {campaign: summarise_claims(rows, per_campaign) for campaign, rows in by_campaign.items()}
        severities = {s: sum(f.severity == s for f in site.findings) for s in ("error", "warning", "info")}
        physical = [f for f in site.findings if f.code in PHYSICAL_CODES and f.severity != "info"]
        return {"campaigns": campaign_overview(site), "findings": findings, "severities": severities,
                "summarised": per_campaign is not None, "sentences": total,
                "plausibility": [{"severity": f.severity, "code": f.code, "message": f.message}
                                 for f in physical[:self.PHYSICAL_BUDGET]],
                "plausibility_more": max(0, len(physical) - self.PHYSICAL_BUDGET),
                "history": site_history(site) is not None, "latest_change": latest_change(site)}


def summarise_claims(rows: list[dict[str, Any]], limit: int | None) -> dict[str, Any]:
    """One campaign's key-finding sentences for the home page: all of them, or (with ``limit``)
    the flagged ones and the largest differences first, up to ``limit``, and the rest counted
    by verdict."""
    def weight(row: dict[str, Any]) -> tuple[int, int, float]:
        ratio = row.get("ratio")
        effect = abs(float(ratio) - 1) if isinstance(ratio, int | float) and ratio == ratio else 0.0
        return (not row["flagged"], row["verdict"] not in ("higher", "lower"), -effect)

    keep = {id(row) for row in (rows if limit is None else sorted(rows, key=weight)[:limit])}
    shown = [row for row in rows if id(row) in keep]  # in the comparison table's order
    hidden = [row for row in rows if id(row) not in keep]
    counts = Counter(str(row["verdict"]) for row in hidden)
    return {"published": rows[0]["published"], "shown": shown, "more": len(hidden),
            "more_by_verdict": [f"{n} {_VERDICT_WORDS.get(verdict, verdict)}" for verdict, n in sorted(counts.items())]}


_VERDICT_WORDS = {"higher": "higher", "lower": "lower", "equivalent": "equivalent",
                  "inconclusive": "with no significant difference detected"}


@register
class MethodologyPage(Page):
    name = "methodology"
    title = "Methodology"
    template = "methodology.md"
    folder = "methodology"
    order = 30

    def context(self, site: SiteData, doc: PageDoc, out: Path) -> dict[str, Any]:
        records = site.dataset.records
        sections = {}
        for section in ("workload", "software", "hardware"):
            found, missing = recorded_settings(records, section)
            sections[section] = {"rows": found, "missing": missing}
        sources: dict[tuple[str, str], dict[str, Any]] = {}
        for record in records:
            source = (record.campaign, record.provenance.source_sha256 or record.provenance.source_path)
            entry = sources.setdefault(source, {
                "campaign": record.campaign, "path": record.provenance.source_path,
                "sha256": record.provenance.source_sha256, "format": record.provenance.format,
                "records": 0, "notes": []})
            entry["records"] += 1
            for note in record.provenance.notes:
                if note not in entry["notes"]:
                    entry["notes"].append(note)
        source_rows = summarise_sources(list(sources.values()))
        cooldown = sorted({f"{k}: {v}" for r in records for k, v in r.workload.details.items()
                           if "cooldown" in str(k).lower()})
        return {
            "campaigns": [r["campaign"] for r in campaign_overview(site)],
            "sections": sections,
            "environments": environment_descriptions(records),
            "sources": source_rows,
            "arms": arm_table(site),
            "cooldown": cooldown,
            "options": site.config.analysis,
            "ratio_interval": RATIO_INTERVAL_METHOD.format(level=f"{site.config.analysis.confidence:.0%}"),
            "history_method": history_method(site),
        }


def environment_descriptions(records: list[RunRecord]) -> list[dict[str, Any]]:
    """One entry per environment, identified by (campaign, name): two campaigns' "native" can be
    different things (a chroot in one, the host in another) and are never merged.

    Each entry: ``campaign``, ``name``, ``kinds``, ``details`` (key → distinct values; plain
    settings only, never an environment, argv or cgroup dump), ``variables`` (allowlisted
    environment variables whose values differ between the campaign's environments, through
    ``published_env``) and
    ``campaigns`` (``[campaign]``, kept for templates that list it).
    """
    from sparkreport.secrets import scrub_credentials
    from sparkreport.site.run_files import published_env

    environments: dict[tuple[str, str], dict[str, Any]] = {}
    for record in records:
        key = (record.campaign, record.environment.name)
        env = environments.setdefault(key, {"campaign": record.campaign, "name": record.environment.name,
                                            "kinds": [], "details": {}, "campaigns": [record.campaign],
                                            "variables": {}})
        if record.environment.kind not in env["kinds"]:
            env["kinds"].append(record.environment.kind)
        for detail, value in record.environment.details.items():
            if str(detail) in UNPUBLISHED_DETAILS or isinstance(value, dict | list):
                continue  # records (environment, argv, cgroup paths), not descriptions: never on a page
            value = scrub_credentials(value) if isinstance(value, str) else value
            known = env["details"].setdefault(str(detail), [])
            if value not in known:
                known.append(value)
        for name, value in published_env(record.environment.details).items():
            values = env["variables"].setdefault(name, [])
            if value not in values:
                values.append(value)
    out = [environments[key] for key in sorted(environments)]
    # Only the variables that tell a campaign's environments apart (one the same in all of them
    # says nothing about the comparison, and a campaign of one environment compares nothing).
    for campaign in {env["campaign"] for env in out}:
        group = [env for env in out if env["campaign"] == campaign]
        for name in {n for env in group for n in env["variables"]}:
            if len(group) < 2 or len({tuple(env["variables"].get(name, ())) for env in group}) == 1:
                for env in group:
                    env["variables"].pop(name, None)
    for env in out:
        env["variables"] = dict(sorted(env["variables"].items()))
    return out


#: Environment details that are records rather than descriptions (the environment, argv, cgroup
#: paths, cache measurements): kept in run.json, never printed on a page.
UNPUBLISHED_DETAILS = ("env_vars", "env_vars_unrecorded", "env_allowlist", "commands", "argv", "cgroup", "cache")


#: Above this many source files, the Methodology page lists them per campaign and format.
MAX_SOURCES_LISTED = 50


def summarise_sources(sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sources table: one row per file, or one per (campaign, format) when there are many
    (every file is still listed with its run on the Runs pages)."""
    ordered = sorted(sources, key=lambda s: (s["campaign"], s["path"]))
    if len(ordered) <= MAX_SOURCES_LISTED:
        return ordered
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
    for entry in grouped.values():
        entry["path"] = f"{entry['files']} files (each listed with its run on the Runs pages)"
    return list(grouped.values())


def arm_table(site: SiteData) -> list[dict[str, Any]]:
    """What each arm contains: runs recorded and used (with the reasons for any left out)."""
    out = []
    runs = site.runs
    if not runs.empty:
        for (campaign, model, env), group in runs.groupby(["campaign", "model", "environment"], sort=True):
            iterations = group["iteration"].dropna()
            excluded = group[~group["included"].astype(bool)]
            out.append({
                "campaign": campaign, "model": model, "model_name": group["model_name"].iloc[0],
                "environment": env, "published": False, "recorded": len(group),
                "included": int(group["included"].astype(bool).sum()),
                "iterations": (f"{int(iterations.min())}–{int(iterations.max())}"
                               if not iterations.empty else None),
                "distinct_iterations": int(iterations.nunique()),
                "excluded": [{"run_id": r, "reason": why} for r, why in
                             zip(excluded["run_id"], excluded["exclusion_reason"], strict=True)],
            })
    sums = site.dataset.summaries
    if not sums.empty:
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

    def context(self, site: SiteData, doc: PageDoc, out: Path) -> dict[str, Any]:
        excluded = site.runs[~site.runs["included"].astype(bool)] if not site.runs.empty else site.runs
        return {
            "findings": [{"severity": f.severity, "code": f.code, "message": f.message,
                          "runs": f.runs, "assumes": f.assumes} for f in site.findings],  # check() sorted them
            "assumption_groups": site.assumption_groups,
            "excluded": rows(excluded[["run_id", "model_name", "environment", "exclusion_reason"]])
            if not excluded.empty else [],
            "runs_href": doc.href("runs/index.md"),
        }


@register
class DownloadsPage(Page):
    name = "downloads"
    title = "Downloads"
    template = "downloads.md"
    folder = "downloads"
    order = 60

    def context(self, site: SiteData, doc: PageDoc, out: Path) -> dict[str, Any]:
        from sparkreport.dataset import csv_safe, export
        from sparkreport.store import sha256_file

        folder = out / self.folder
        files = []
        described = {
            "dataset.csv": ("CSV", "the runs table: one row per run", len(site.dataset.runs)),
            "dataset.parquet": ("Parquet", "the runs table, typed, with the dataset hash in its metadata",
                                len(site.dataset.runs)),
            "dataset.json": ("JSON", "the runs and the published summaries, with schema version and hash",
                             len(site.dataset.runs) + len(site.dataset.summaries)),
        }
        for name, (kind, what, count) in described.items():
            path = export(site.dataset, folder / name)
            files.append({"name": name, "format": kind, "what": what, "rows": count,
                          "size": path.stat().st_size, "sha256": sha256_file(path)})
        if not site.dataset.summaries.empty:
            path = folder / "published-summaries.csv"
            csv_safe(site.dataset.summaries).to_csv(path, index=False)
            files.append({"name": path.name, "format": "CSV",
                          "what": "published figures: one row per arm and metric (n, mean, sd)",
                          "rows": len(site.dataset.summaries), "size": path.stat().st_size,
                          "sha256": sha256_file(path)})
        return {"files": files}
