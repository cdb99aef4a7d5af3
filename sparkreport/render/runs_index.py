"""The Runs pages: every record, grouped and paginated so the site stays usable at 10 000 runs.

A small store (at most :data:`PAGE_SIZE` records) keeps one Runs page listing every record.
A larger one gets an index (one row per campaign: its models, environments, records, failed
runs, runs in the statistics, a link to its first page) and one page per campaign, split into
pages of :data:`PAGE_SIZE` rows, with a section per model and environment; the first page opens
on the campaign's groups (model × environment: their counts, a link to the section where each
starts). Only the index is in the nav. (Until issue 16's thirteenth round the index listed every
group: 1 000 rows at 10 000 runs, ~0.3 s of MkDocs' CPU — conversion and search — on every build
that changed a run.)
(A page per group cost MkDocs a page each: 1 000 pages of ten rows at 10 000 runs, ~7 s of its
build for what 50 pages hold.) Runs with monitoring samples get a time-series chart in their
section, downsampled with LTTB (the full series is linked: the run's ``samples.csv``). Every
run's files are published verbatim beside the pages, copied into the site after the builder
(:mod:`sparkreport.site.run_files`).

The rows are listed per campaign folder and kept by the folder's files (:class:`RunsRows`); a
large store's campaign pages are planned from their rows only for a campaign whose rows changed,
the others from the plan the last build kept (:meth:`RunsPage.campaign_docs`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import posixpath
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from sparkreport.cache import inputs_digest, write_later
from sparkreport.dataset import model_name_of, plain
from sparkreport.execute.guard import GUARD_NAMES, guard_event_of
from sparkreport.names import level_order, model_order, shown, unique_slugs
from sparkreport.published import MANIFEST, published_name, write_manifest, write_manifest_pieces
from sparkreport.render.pages import NavItem, Page, PageDoc, register
from sparkreport.schema import slug

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from sparkreport.cache import HashMemo, RecordCache
    from sparkreport.charts import ChartSpec
    from sparkreport.render.context import SiteData
    from sparkreport.schema import RunRecord
    from sparkreport.store import RunStore, StoreScan

#: Rows per Runs page (about 400 bytes of Markdown each: pages stay far below 1.5 MB).
PAGE_SIZE = 250
#: Points per series in a samples chart (LTTB); the full series is in samples.csv.
SAMPLE_POINTS = 400
#: The Runs rows' cache in a build's cache folder (see :class:`RunsRows`).
LISTING_CACHE = "runs-listing"
#: The published files' list per campaign, read from the store (see :meth:`RunsPage.store_files`).
STORE_FILES_CACHE = "store-files"
#: The monitoring charts, one file per run with samples (see :meth:`RunsPage.sample_charts`).
SAMPLE_CHARTS_CACHE = "sample-charts"
#: Each campaign's Runs pages as planned, in a build's cache folder (see :meth:`RunsPage.campaign_docs`).
PLANS_CACHE = "runs-plans.pickle"
#: Each campaign folder's piece of the manifest of published files, by its listing key
#: (:meth:`RunsRows.manifest_pieces`).
MANIFEST_CACHE = "runs-manifest.pickle"
#: A campaign folder's members, as :func:`kept_per_folder` groups them.
G = TypeVar("G")
#: Sample columns drawn, when present, and what the chart calls each (its panel's name).
SAMPLE_SERIES = {"power_draw_w": "Power draw (W)", "temperature_gpu_c": "GPU temperature (°C)",
                 "utilization_gpu_pct": "GPU utilisation (%)"}


@register
class RunsPage(Page):
    name = "runs"
    title = "Runs"
    template = "runs.md"
    group_template = "runs_group.md"
    folder = "runs"
    order = 50
    files_dir = "files"

    def docs(self, site: SiteData, out: Path) -> list[PageDoc]:
        campaigns = site.dataset.campaigns()
        rows = RunsRows(self, site, site.runs_dir)
        index = PageDoc(self.path, self.title, self.template, banner=False)
        if len(site.dataset.records) <= PAGE_SIZE:
            entries = rows.entries()
            self.key_sample_charts(site, entries)
            self.keep_sample_charts(site, {e["samples_key"] for e in entries if "samples_key" in e})
            rows.save()
            # The index writes the manifest of every published file: a raw file added or removed
            # beside an unchanged run.json changes it (and, on a small store, the rows it shows).
            # Where every row was kept by its folder's listing key, those keys stand for the rows.
            index.also_reads = [rows.files_read(entries),
                                *(_signature(site.runs_dir / e["run_path"] / "samples.csv", site.hash_memo)
                                  for e in entries if e["samples"])]

            def fill_small() -> None:
                self.write_manifest(site, out, index, entries)
                by_campaign = {c: [e for e in entries if e["campaign"] == c] for c in campaigns}
                index.context = {"campaigns": by_campaign, "sections": self.small_sections(index, by_campaign),
                                 "summaries": None, **self.limits()}
                index.charts = self.sample_charts(site, index, entries)

            index.fill = fill_small
            return [index]
        docs, summaries = self.campaign_docs(site, rows)
        index.also_reads = [rows.files_read()]

        def fill_index() -> None:
            write_manifest_pieces(out, site.runs_dir, rows.manifest_pieces())
            index.files = [MANIFEST]
            index.context = {"campaigns": None, "summaries": summaries, **self.limits()}

        index.fill = fill_index
        return [index, *docs]

    def campaign_docs(self, site: SiteData, rows: RunsRows) -> tuple[list[PageDoc], list[dict[str, Any]]]:
        """A large store's campaign pages (each cut into pages of :data:`PAGE_SIZE` rows) and the
        index's row of each campaign.

        A campaign's documents are planned from its rows — or, where the rows it was planned from
        last time are still its rows (:meth:`RunsRows.plan_key`: its folders' listing keys, its runs'
        inclusion, the baseline) and its sections' anchors are the same, from that plan (kept in
        ``build/cache/runs-plans.pickle``) without reading a row: a build after one new run plans
        the new run's campaign from its rows and takes the others' plans (at 10 000 runs, 0.1 s of
        planning that was spent on the 49 campaigns nothing changed in). A page planned that way
        reads its rows only if it is filled (its Markdown gone from the docs folder, say)."""
        from sparkreport.render.report import campaign_title

        kept = rows.read_plans()
        plans: dict[str, dict[str, Any]] = {}  # the plans taken
        listed: dict[str, list[dict[str, Any]]] = {}  # the rows of the campaigns planned from them
        keys = {campaign: rows.plan_key(campaign) for campaign in rows.campaigns}
        for campaign, key in keys.items():
            found = kept.get(campaign)
            if key is not None and found is not None and found[0] == key and rows.shards_present(campaign):
                plans[campaign] = found[1]
            else:
                listed[campaign] = rows.campaign_entries(campaign)
        anchors = unique_slugs([*(name for plan in plans.values() for name in plan["anchors"]),
                                *(name for entries in listed.values() for name in _names(entries))])
        for campaign, plan in list(plans.items()):
            if any(anchors[name] != anchor for name, anchor in plan["anchors"].items()):
                del plans[campaign]  # a name new to the store now collides with one of its names
                listed[campaign] = rows.campaign_entries(campaign)
        docs: list[PageDoc] = []
        summaries: list[dict[str, Any]] = []
        new_plans: dict[str, tuple[str, dict[str, Any]]] = {}
        samples_keys: set[str] = set()
        for campaign, key in keys.items():
            title = campaign_title(site, campaign)
            if campaign in plans:
                plan = plans[campaign]
                rows.vouch(campaign)
                campaign_docs = self.planned_campaign(site, rows, campaign, title, plan, anchors)
            else:
                entries = listed[campaign]
                self.key_sample_charts(site, entries)
                plan, campaign_docs = self.plan_campaign(site, rows, campaign, title, entries, anchors)
            if key is not None and rows.all_kept(campaign):
                new_plans[campaign] = (key, plan)
            samples_keys.update(plan["samples"].values())
            summaries.append(plan["summary"])
            docs += campaign_docs
        self.keep_sample_charts(site, samples_keys)
        rows.save()
        rows.save_plans(new_plans, kept)
        return docs, summaries

    def plan_campaign(self, site: SiteData, rows: RunsRows, campaign: str, title: str,
                      entries: list[dict[str, Any]], anchors: Mapping[str, str]
                      ) -> tuple[dict[str, Any], list[PageDoc]]:
        """A campaign's documents planned from its rows (each page's fill set), and the plan that
        stands for them (:meth:`planned_campaign`): the pages' paths, run ids and what each
        reads, the index's row, the anchors of its names, its runs' chart keys."""
        chunks = _chunks(entries)
        paths = self.campaign_paths(campaign, len(chunks))
        pages = [PageDoc(path, _numbered(title, k, len(paths)), self.group_template, banner=False)
                 for k, path in enumerate(paths)]
        per_page, groups = self.campaign_groups(chunks, pages, anchors)
        summary = _campaign_summary(campaign, groups, len(paths), posixpath.relpath(paths[0], self.folder))
        for k, (doc, (chunk, sections)) in enumerate(zip(pages, per_page, strict=True)):
            doc.inputs = [e["run_id"] for e in chunk]
            doc.reads_findings = "none"  # no banner; each row's inclusion is in also_reads
            shown_groups = groups if k == 0 else None  # the campaign's groups open its first page
            # the rows as listed (inclusion, files, sections), the sibling pages, the groups
            # table, and each samples.csv drawn. Keys in the order the rows are made (every
            # row, fresh or kept, has the same keys in the same order; a different order
            # would only render the page again): sorting them was a third of this JSON's
            # time, ~10 MB at 10 000 runs.
            doc.also_reads = [json.dumps([_rows_read(sections, rows.listed_by), paths, shown_groups], default=str,
                                         separators=(",", ":"), check_circular=False),
                              *(_signature(site.runs_dir / e["run_path"] / "samples.csv", site.hash_memo)
                                for e in chunk if e["samples"])]
            doc.fill = functools.partial(self.fill_group, site, doc, sections, k, paths, campaign, shown_groups)
        names = _names(entries)
        plan = {"paths": paths, "inputs": [doc.inputs for doc in pages], "reads": [doc.also_reads for doc in pages],
                "summary": summary, "anchors": {name: anchors[name] for name in names},
                "samples": {e["run_id"]: e["samples_key"] for e in entries if "samples_key" in e}}
        return plan, pages

    def planned_campaign(self, site: SiteData, rows: RunsRows, campaign: str, title: str, plan: dict[str, Any],
                         anchors: Mapping[str, str]) -> list[PageDoc]:
        """A campaign's documents as :meth:`plan_campaign` planned them from the same rows; a
        page's fill reads its campaign's rows then (a page whose key is unchanged is not filled)."""
        paths = plan["paths"]
        pages = [PageDoc(path, _numbered(title, k, len(paths)), self.group_template, banner=False,
                         inputs=list(inputs), also_reads=list(reads), reads_findings="none")
                 for k, (path, inputs, reads) in enumerate(zip(paths, plan["inputs"], plan["reads"], strict=True))]

        def fill(k: int) -> None:
            entries = rows.campaign_entries(campaign)
            self.key_sample_charts(site, entries)
            per_page, groups = self.campaign_groups(_chunks(entries), pages, anchors)
            self.fill_group(site, pages[k], per_page[k][1], k, paths, campaign, groups if k == 0 else None)

        for k, doc in enumerate(pages):
            doc.fill = functools.partial(fill, k)
        return pages

    def campaign_paths(self, campaign: str, count: int) -> list[str]:
        """The paths of a campaign's ``count`` pages: its folder's index, then ``page-N``."""
        base = f"{self.folder}/{slug(campaign)}"
        return [f"{base}/index.md" if k == 0 else f"{base}/page-{k + 1}/index.md" for k in range(count)]

    def small_sections(self, index: PageDoc,
                       rows: Mapping[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]] | None]:
        """On a small store's one Runs page, each campaign's rows in a section per model and
        environment (as a large store's campaign pages have them: the table then leaves out those
        two columns, and a run id stays on one line) when its groups hold more than two rows on
        average; else None: one table, a row per record (a published study's one arm a row)."""
        anchors = unique_slugs(name for entries in rows.values() for entry in entries
                               for name in (entry["model_name"], entry["environment"]))
        campaign_anchors = unique_slugs(rows)
        out: dict[str, list[dict[str, Any]] | None] = {}
        for campaign, entries in rows.items():
            per_page, groups = self.campaign_groups([entries], [index], anchors)
            if len(entries) <= 2 * len(groups):
                out[campaign] = None
                continue
            sections = per_page[0][1]
            for section in sections:  # several campaigns on the page: the campaign in each anchor
                section["anchor"] = f"{campaign_anchors[campaign]}--{section['anchor']}"
            out[campaign] = sections
        return out

    @staticmethod
    def campaign_groups(chunks: list[list[dict[str, Any]]], pages: list[PageDoc],
                        anchors: Mapping[str, str]) -> tuple[list[Any], list[dict[str, Any]]]:
        """A campaign's rows cut into its pages' sections (one per model and environment; a group
        cut by a page break is "continued" on the next page) and its groups' counts, each group
        linked from the campaign's first page to the section where it starts."""
        seen: dict[tuple[str, str], dict[str, Any]] = {}
        per_page = []
        for doc, chunk in zip(pages, chunks, strict=True):
            sections: list[dict[str, Any]] = []
            for entry in chunk:
                key = (entry["model_name"], entry["environment"])
                if not sections or (sections[-1]["model_name"], sections[-1]["environment"]) != key:
                    anchor = f"{anchors[key[0]]}--{anchors[key[1]]}"
                    sections.append({"model_name": key[0], "environment": key[1], "anchor": anchor,
                                     "continued": key in seen, "entries": []})
                    if key not in seen:
                        seen[key] = {"model_name": key[0], "environment": key[1], **dict.fromkeys(_COUNTS, 0),
                                     "href": f"{pages[0].href(doc.path) if doc is not pages[0] else ''}#{anchor}"}
                sections[-1]["entries"].append(entry)
                _count(seen[key], entry)
            per_page.append((chunk, sections))
        return per_page, list(seen.values())

    def write_manifest(self, site: SiteData, out: Path, index: PageDoc, entries: list[dict[str, Any]]) -> None:
        """The files the site publishes (copied in after the site generator's build)."""
        write_manifest(out, site.runs_dir, self.published(entries))  # (which sorts them)
        index.files = [MANIFEST]

    def published(self, entries: Iterable[dict[str, Any]]) -> set[tuple[str, str]]:
        """The rows' files as the manifest lists them: (site path, path in the run store)."""
        return {(f"{self.folder}/{f['path']}", f["store_path"]) for e in entries for f in e["files"]}

    @classmethod
    def store_files(cls, runs_dir: Path, folders: Mapping[str, str | None] | None = None,
                    cache: RecordCache | None = None,
                    stat_folders: Mapping[str, str | None] | None = None,
                    scan: StoreScan | None = None) -> list[tuple[str, str]]:
        """What :meth:`write_manifest` will list, read from the run store alone (each run.json's
        listed files, :func:`_listed_files`): a build starts publishing with this while it loads
        and analyses the dataset, and compares it with the manifest afterwards.

        Reading every run.json and lstat-ing every file it lists is a second of CPU at 10 000
        runs; with ``folders`` (each campaign folder's digest from the build's walk of the store,
        :func:`~sparkreport.cache.walk_store`) and ``cache``, a campaign's list is kept by that
        digest and only a campaign whose files changed is read again — never one holding a
        symbolic link (its digest is None) or a run naming a file outside its folder. A cold
        build's publisher starts before the walk's files are hashed: it keeps each list by the
        folder's stat digest, which the next build finds with ``stat_folders``
        (:func:`kept_per_folder`'s ``also``). ``scan``: the store's scan, if made already (by the
        build's walk), else it is made here."""
        from sparkreport.store import RunStore

        store = RunStore(runs_dir)
        scan = scan if scan is not None else store.scan()
        by_campaign: dict[str, list[tuple[str, str]]] = {}
        for (path, _stat), (campaign, run) in zip(scan.files, scan.folders, strict=True):
            by_campaign.setdefault(campaign, []).append((path, run))
        checked: dict[str, bool] = {}

        def read(campaign: str, runs: list[tuple[str, str]]) -> tuple[list[Any], bool]:
            pairs: list[tuple[str, str]] = []
            within = True
            for path, run in runs:
                raw_files, tables = _listed_files(store, path)
                run_path = f"{campaign}/{run}"
                within = within and _names_within(campaign, run_path, [*raw_files, *tables])
                pairs += [(f"{cls.folder}/{f['path']}", f["store_path"])
                          for f in run_files(runs_dir, run_path, raw_files, cls.files_dir, tables=tables,
                                             folders=checked)]
            return pairs, within

        kept = kept_per_folder(cache, folders or {}, by_campaign, read,
                               [("root", str(runs_dir)), ("prefix", cls.files_dir)],
                               lambda runs: [run for _path, run in runs], also=stat_folders)
        published = {(site_path, store_path) for pairs in kept.values() for site_path, store_path in pairs}
        return sorted(published)

    def fill_group(self, site: SiteData, doc: PageDoc, sections: list[dict[str, Any]], k: int, paths: list[str],
                   campaign: str, groups: list[dict[str, Any]] | None = None) -> None:
        """One page of a campaign's runs: a section per model and environment (its rows and its
        monitoring charts), links to the campaign's other pages; the first page opens on the
        campaign's ``groups``."""
        filled = [dict(section, entries=[dict(e, files=[dict(f, href=doc.href(f"{self.folder}/{f['href']}"))
                                                         for f in e["files"]]) for e in section["entries"]])
                  for section in sections]
        doc.charts = [chart for section in filled for chart in self.sample_charts(site, doc, section["entries"])]
        doc.context = {
            "campaign": campaign, "sections": filled, "groups": groups, "first_href": doc.href(paths[0]),
            "page_number": k + 1, "page_count": len(paths),
            "pages": [{"number": j + 1, "href": doc.href(p)} for j, p in enumerate(paths)],
            "index_href": doc.href(self.path), **self.limits(),
        }

    @staticmethod
    def limits() -> dict[str, int]:
        return {"page_size": PAGE_SIZE, "sample_points": SAMPLE_POINTS}

    def nav(self, docs: list[PageDoc]) -> NavItem:
        """Only the index: the campaign pages are reached from its table (the nav stays short)."""
        return (self.title, docs[0].path)

    def _listing_cache(self, site: SiteData, files_root: Path) -> RecordCache | None:
        """The rows' cache, salted with the package's digest; None outside a build (no walk of the
        store to key the rows by) or for runs published from elsewhere than the store. Lazy: a
        folder's shard is read when its rows are first asked for."""
        from sparkreport.cache import RecordCache, package_digest

        memo = site.hash_memo
        if memo is None or memo.path is None or site.store_folders is None or files_root != site.runs_dir:
            return None
        return RecordCache(memo.path.parent / LISTING_CACHE, salt=f"runs-listing-2:{package_digest(memo)}", lazy=True)

    def _entry(self, record: RunRecord, run_path: str, files_root: Path, folders: dict[str, bool]) -> dict[str, Any]:
        """A record's row, but for ``included``, ``reason`` and ``condition`` (set on a copy by
        :meth:`RunsRows.campaign_entries`)."""
        return {
            "run_id": record.run_id, "campaign": record.campaign,
            "published": record.record_type == "arm_summary",
            "model_name": model_name_of(record),
            "environment": record.environment.name, "iteration": record.iteration,
            "ok": record.status.ok, "exit_code": record.status.exit_code,
            "guard": _guard_label(record),
            "included": None, "reason": None,
            "files": run_files(files_root, run_path, record.provenance.raw_files, self.files_dir,
                               tables=record.provenance.tables, folders=folders),
            "samples": "samples" in record.provenance.tables,
            "run_path": shown(run_path), "chart": None, "samples_href": None,
        }

    def key_sample_charts(self, site: SiteData, entries: list[dict[str, Any]]) -> None:
        """Each row with samples gets the key its chart is kept by (``samples_key``: the run, the
        samples.csv's sha256 from the build's hash memo, the package). Reading an hour of 10 Hz
        samples and downsampling it is ~35 ms a run; every run of a small store is on the one
        Runs page, which one new run renders again (a hundred charts drawn again: 3.5 s of a
        5.6 s build at 100 runs, bench/README.md). :meth:`keep_sample_charts` then removes the
        charts kept for other keys."""
        if _sample_charts_folder(site) is None:
            return
        from sparkreport.cache import package_digest

        assert site.hash_memo is not None
        salt = f"{SAMPLE_CHARTS_CACHE}-1:{package_digest(site.hash_memo)}"
        for entry in entries:
            if entry["samples"]:
                path = site.runs_dir / entry["run_path"] / "samples.csv"
                entry["samples_key"] = inputs_digest([("code", salt), ("run", entry["run_id"]),
                                                      ("file", _signature(path, site.hash_memo))])

    @staticmethod
    def keep_sample_charts(site: SiteData, keys: set[str]) -> None:
        """Remove the monitoring charts kept for keys other than ``keys`` (every row's
        ``samples_key``)."""
        folder = _sample_charts_folder(site)
        names = {f"{key}.pickle" for key in keys}
        if folder is not None and folder.is_dir():
            for stale in folder.iterdir():
                if stale.name not in names:
                    stale.unlink(missing_ok=True)

    def sample_charts(self, site: SiteData, doc: PageDoc, entries: list[dict[str, Any]]) -> list[ChartSpec]:
        """One LTTB-downsampled monitoring chart per run with samples; sets ``entry['chart']``.
        A chart is kept by its row's ``samples_key`` (:meth:`key_sample_charts`) and drawn again
        only when the run's samples.csv or the package changed."""
        import dataclasses
        import pickle

        from sparkreport.cache import _atomic_bytes
        from sparkreport.jsontext import spec_json

        folder = _sample_charts_folder(site)
        charts = []
        for entry in entries:
            if not entry["samples"]:
                continue
            kept = folder / f"{entry['samples_key']}.pickle" if folder is not None and "samples_key" in entry else None
            chart = _read_kept(kept) if kept is not None else _MISSING
            if chart is _MISSING:
                chart = samples_chart(site.runs_dir / entry["run_path"] / "samples.csv",
                                      name=f"samples-{entry['run_id']}", title=f"{entry['run_id']}: monitoring samples")
                if kept is not None:
                    if chart is not None:  # kept as written too: encoding a hundred specs was 0.25 s
                        chart = dataclasses.replace(chart, text=spec_json(chart.spec))
                    _atomic_bytes(kept, pickle.dumps(chart, protocol=pickle.HIGHEST_PROTOCOL))
            if chart is not None:
                entry["chart"] = chart
                entry["samples_href"] = next((f["href"] for f in entry["files"] if f["source"] == "samples.csv"), None)
                entry["samples_name"] = next((f["name"] for f in entry["files"] if f["source"] == "samples.csv"),
                                             "samples.csv")
                charts.append(chart)
        return charts


def design_conditions(runs: Any) -> dict[str, dict[str, str]]:
    """Each run's design labels (:func:`~sparkreport.analysis.arms.design_labels`, decided within
    its campaign: ``{"cache": "cold"}``), for the Runs tables' columns: two runs of one iteration
    that differ only there are two conditions, and the reader sees which. Runs of a campaign
    without design labels are left out (no column), and so is a label that equals the iteration
    in every run of its campaign (a plan block)."""
    from sparkreport.analysis.arms import design_labels

    if runs.empty or not design_labels(runs):  # none anywhere (one groupby: a few ms at 10 000 runs)
        return {}
    out: dict[str, dict[str, str]] = {}
    for _campaign, group in runs.groupby("campaign", sort=False):
        iterations = group["iteration"].astype(object).map(str)
        # A label that is the iteration under another name (randomized blocks: block i is
        # iteration i) would repeat the Iteration column.
        factors = [f for f in design_labels(group) if not (group[f].astype(object).map(str) == iterations).all()]
        if not factors:
            continue
        names = [factor.removeprefix("label.") for factor in factors]
        values = group[["run_id", *factors]].astype(object).where(group[["run_id", *factors]].notna(), None)
        for run_id, *row in values.itertuples(index=False):
            out[str(run_id)] = {name: str(value) for name, value in zip(names, row, strict=True) if value is not None}
    return out


def _rows_read(sections: list[dict[str, Any]], listed_by: Mapping[str, str]) -> Any:
    """What a Runs page's sections are keyed by: the sections themselves, or — where every row
    was kept by its folder's listing key (:meth:`RunsRows.folder_rows`) — those keys, each section's
    heading and each row's run id, inclusion and chart key (what can change in a kept row). The
    page's rows then cost a few short lists to key instead of their files' whole listing (two
    thirds of a Runs page's planning at 10 000 runs)."""
    if not all(e["run_id"] in listed_by for section in sections for e in section["entries"]):
        return sections
    keys = sorted({listed_by[e["run_id"]] for section in sections for e in section["entries"]})
    return [keys, [[section["model_name"], section["environment"], section["anchor"], section["continued"],
                    [[e["run_id"], e["included"], e["reason"], e.get("samples_key"), e.get("condition")]
                     for e in section["entries"]]]
                   for section in sections]]


def kept_per_folder(cache: RecordCache | None, digests: Mapping[str, str | None], groups: Mapping[str, G],
                    compute: Callable[[str, G], tuple[list[Any], bool]], parts: list[tuple[str, str]],
                    describe: Callable[[G], Any],
                    also: Mapping[str, str | None] | None = None) -> dict[str, list[Any]]:
    """What ``compute(folder, members)`` gives for each campaign folder of ``groups``, kept in
    ``cache`` (one shard a folder) by the cache's salt, the folder's digest from the build's walk
    of the store (``digests``, :meth:`~sparkreport.cache.StoreWalk.by_content`: the path and
    sha256 of every file in it; in a cold build, their stat), ``parts`` and
    ``describe(members)``; only a folder whose files changed is computed again. Never kept: a
    folder without a digest (it holds a symbolic link, or there was no walk) or one whose
    ``compute`` says its result is not to be kept (a run naming a file outside its folder, whose
    changes the folder's digest would not see).
    Folders no longer in ``groups`` are forgotten; the cache is saved. ``also``:
    another digest of each folder (its files' stat, where ``digests`` are by content), under
    which a result kept by a build that had only that one is found too — and then kept under
    both (a cold build's publisher keys by stat: the next build finds its lists)."""
    out: dict[str, list[Any]] = {}
    keys: dict[str, set[str]] = {}
    for folder, members in groups.items():
        digest = digests.get(folder)
        key = None
        if cache is not None and digest is not None:
            described = json.dumps(describe(members))
            key = folder_key(cache.salt, digest, parts, described)
            keys[folder] = {key}
            found = cache.get(folder, key)
            other = also.get(folder) if also is not None else None
            if not isinstance(found, list) and other is not None and other != digest:
                other_key = folder_key(cache.salt, other, parts, described)
                found = cache.get(folder, other_key)
                if isinstance(found, list):  # kept under both from now on
                    keys[folder].add(other_key)
                    cache.put(folder, key, found)
            if isinstance(found, list):
                out[folder] = found
                continue
        rows, keep = compute(folder, members)
        if cache is not None and key is not None and keep:
            cache.put(folder, key, rows)
        out[folder] = rows
    if cache is not None:
        cache.keep_only(keys)
        cache.save()
    return out


def folder_key(salt: str, digest: str, parts: list[tuple[str, str]], described: str) -> str:
    """What :func:`kept_per_folder` keeps a folder's result by: the cache's salt, the folder's
    digest, the caller's ``parts`` and its members as ``described``."""
    return inputs_digest([("code", salt), ("folder", digest), *parts, ("members", described)])


class RunsRows:
    """A build's Runs rows (one per record, :meth:`RunsPage._entry`), listed per campaign folder
    when first asked for.

    A row's files are each listed file's lstat (one per file, a third of a second at 10 000 runs,
    with the rest of a row): in a build, the rows of a campaign folder are kept
    (``build/cache/runs-listing/``, one shard a folder, read only when the folder's rows are
    asked for) by the folder's listing key — the path and sha256 of every file in it, from the
    walk the build key made (:meth:`~sparkreport.cache.StoreWalk.by_content`), the package's
    digest and its runs — and a folder is listed again only when that changed, or when it holds
    a symbolic link or a run naming a file outside it (never kept). Whether each run is included
    (the analysis) is set on copies of its campaign's rows when they are asked for
    (:meth:`campaign_entries`): what is kept is the listing alone."""

    def __init__(self, page: RunsPage, site: SiteData, files_root: Path):
        self.page, self.site, self.files_root = page, site, files_root
        self.record_keys = site.dataset.record_keys()
        #: Each folder's members as (record's position, run path), and each campaign's folders.
        self.by_folder: dict[str, list[tuple[int, str]]] = {}
        folders_of: dict[str, set[str]] = {}
        for index, (key, run_path) in enumerate(zip(self.record_keys, site.dataset.paths, strict=True)):
            folder = run_path.partition("/")[0]
            self.by_folder.setdefault(folder, []).append((index, run_path))
            folders_of.setdefault(key.campaign, set()).add(folder)
        #: The campaigns, in the Runs pages' order (by name), each with its folders.
        self.campaigns = {campaign: sorted(folders_of[campaign]) for campaign in sorted(folders_of)}
        self.cache = page._listing_cache(site, files_root)
        self.parts = [("root", str(files_root)), ("prefix", page.files_dir)]
        #: Each folder's listing key, where it has one (a cache, and a digest from the walk).
        self.keys: dict[str, str] = {}
        if self.cache is not None:
            digests = site.store_folders or {}
            for folder, members in self.by_folder.items():
                digest = digests.get(folder)
                if digest is not None:
                    described = json.dumps([[self.record_keys[index].run_id, run_path] for index, run_path in members])
                    self.keys[folder] = folder_key(self.cache.salt, digest, self.parts, described)
        #: The folders whose rows are kept by their listing key (listed or not), and that key.
        self.kept: dict[str, str] = {}
        #: The run id of each row listed and kept → its folder and the key its folder's rows are
        #: kept by (which determines the row but for ``included``, ``reason`` and ``condition``).
        self.listed_by: dict[str, str] = {}
        self._listed: dict[str, list[Any]] = {}
        self._folders: dict[str, bool] = {}
        self._analysis: tuple[dict[str, Any], dict[str, Any], dict[str, dict[str, str]]] | None = None

    def folder_rows(self, folder: str) -> list[Any]:
        """A folder's rows as listed, each with its place (:func:`_order`), kept or listed now."""
        found = self._listed.get(folder)
        if found is not None:
            return found
        key = self.keys.get(folder)
        assert self.cache is not None or key is None
        rows = self.cache.get(folder, key) if self.cache is not None and key is not None else None
        if not isinstance(rows, list):
            records = self.site.dataset.records
            pairs = [(records[index], run_path) for index, run_path in self.by_folder[folder]]
            rows = [(_order(record), self.page._entry(record, run_path, self.files_root, self._folders))
                    for record, run_path in pairs]
            if self.cache is not None and key is not None and _lists_within(folder, pairs):
                self.cache.put(folder, key, rows)
            else:
                key = None
                self.kept.pop(folder, None)
        if key is not None:
            self.kept[folder] = key
            members = self.by_folder[folder]
            self.listed_by.update(dict.fromkeys((self.record_keys[index].run_id for index, _path in members),
                                                f"{folder}\0{key}"))
        self._listed[folder] = rows
        return rows

    def campaign_entries(self, campaign: str) -> list[dict[str, Any]]:
        """A campaign's rows, in (model, environment, iteration, run id) order — the environment
        placed by :func:`_placed` — each a copy with its inclusion and design labels set."""
        pairs = [(order, dict(entry)) for folder in self.campaigns[campaign]
                 for order, entry in self.folder_rows(folder) if entry["campaign"] == campaign]
        baseline = self.site.config.baseline_of("environment")
        pairs.sort(key=lambda pair: _placed(pair[0], baseline))
        included, reasons, conditions = self.analysis()
        for _order_key, entry in pairs:
            entry["included"] = plain(included.get(entry["run_id"]))
            entry["reason"] = plain(reasons.get(entry["run_id"]))
            entry["condition"] = conditions.get(entry["run_id"], {})
        return [entry for _order_key, entry in pairs]

    def entries(self) -> list[dict[str, Any]]:
        """Every row, campaign by campaign (:meth:`campaign_entries`)."""
        return [entry for campaign in self.campaigns for entry in self.campaign_entries(campaign)]

    def manifest_pieces(self) -> list[str]:
        """The manifest of the files the Runs pages publish (:meth:`RunsPage.write_manifest`'s) as
        one :func:`~sparkreport.published.manifest_piece` per folder, in the order the manifest's
        sorted list takes them: each folder's files lie under its own path in the site, so the
        folders sort apart, as their names with a slash do. A folder whose rows are kept by its
        listing key keeps its piece by that key (``build/cache/runs-manifest.pickle``), and its rows
        are not read: after one new run, the manifest of 20 000 files is one folder's piece and a
        join (0.07 s of the Runs index's fill at 10 000 runs, were all of them listed and sorted).
        Where a folder lists a file outside itself, the folders do not sort apart: one piece of
        every row's files, sorted at once."""
        from sparkreport.cache import read_cache_pickle, write_cache_pickle
        from sparkreport.published import manifest_piece

        path = self._cache_file(MANIFEST_CACHE)
        salt = f"runs-manifest-1:{self.cache.salt}" if self.cache is not None else ""
        kept = read_cache_pickle(path, salt, "pieces") if path is not None else {}
        pieces: list[str] = []
        keep: dict[str, tuple[str, str]] = {}
        for folder in sorted(self.by_folder, key=lambda name: f"{name}/"):
            key = self.keys.get(folder)
            found = kept.get(folder)
            if key is not None and isinstance(found, tuple) and len(found) == 2 and found[0] == key:
                pieces.append(found[1])
                keep[folder] = found
                continue
            within = f"{self.page.folder}/{self.page.files_dir}/{folder}/"
            files = self.page.published(entry for _order_key, entry in self.folder_rows(folder))
            if not all(site_path.startswith(within) for site_path, _store_path in files):
                return [manifest_piece(self.page.published(self.listed_rows()))]
            pieces.append(manifest_piece(files))
            if self.kept.get(folder) == key and key is not None:  # (its rows were kept by the same key)
                keep[folder] = (key, pieces[-1])
        if path is not None and keep != kept:
            with contextlib.suppress(OSError):
                write_cache_pickle(path, salt, "pieces", keep)
        return pieces

    def listed_rows(self) -> list[dict[str, Any]]:
        """Every row as listed (no inclusion set, in no particular order): what the manifest of
        published files reads."""
        return [entry for folder in self.by_folder for _order_key, entry in self.folder_rows(folder)]

    def analysis(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, dict[str, str]]]:
        """Each run's inclusion, the reason it is left out and its design labels (made once)."""
        if self._analysis is None:
            runs = self.site.runs
            run_ids = runs["run_id"].tolist() if not runs.empty else []
            included = dict(zip(run_ids, runs["included"].tolist(), strict=True)) if not runs.empty else {}
            reasons = dict(zip(run_ids, runs["exclusion_reason"].tolist(), strict=True)) if not runs.empty else {}
            self._analysis = included, reasons, design_conditions(runs)
        return self._analysis

    def plan_key(self, campaign: str) -> str | None:
        """What a campaign's Runs pages are planned from, but for the anchors of its names: its
        folders' listing keys (its rows as listed), its runs' rows of the runs table (their
        inclusion and labels: :func:`~sparkreport.render.report.slice_digest`), the baseline
        (the rows' order) and the page size. None when a folder of it has no listing key."""
        folders = self.campaigns[campaign]
        if self.cache is None or any(folder not in self.keys for folder in folders):
            return None
        from sparkreport.render.report import slice_digest

        return inputs_digest([
            ("code", f"runs-plans-1:{self.cache.salt}"), ("page_size", str(PAGE_SIZE)),
            ("baseline", str(self.site.config.baseline_of("environment"))),
            ("folders", json.dumps([f"{folder}\0{self.keys[folder]}" for folder in folders])),
            ("runs", slice_digest(self.site, "runs", "campaign", campaign))])

    def shards_present(self, campaign: str) -> bool:
        """Whether each folder of the campaign has its rows' shard in the cache (a plan taken
        without them would list them again in every build that fills one of its pages)."""
        return self.cache is not None and all(self.cache.has_file(folder) for folder in self.campaigns[campaign])

    def vouch(self, campaign: str) -> None:
        """The campaign's folders count as kept by their listing keys (its plan was taken: its
        rows, not read, are those its folders' shards hold under those keys)."""
        self.kept.update((folder, self.keys[folder]) for folder in self.campaigns[campaign])

    def all_kept(self, campaign: str) -> bool:
        """Whether every folder of the campaign has its rows kept by its listing key."""
        return all(folder in self.kept for folder in self.campaigns[campaign])

    def files_read(self, entries: list[dict[str, Any]] | None = None) -> str:
        """What the index is keyed by for the manifest of every published file (a raw file added
        or removed beside an unchanged run.json changes it): where every folder's rows are kept by
        its listing key, those keys; else every row's files (``entries``, or all the rows)."""
        if all(folder in self.kept for folder in self.by_folder):
            return json.dumps(sorted({f"{folder}\0{key}" for folder, key in self.kept.items()}))
        rows = entries if entries is not None else self.entries()
        return json.dumps([[f["path"], f["store_path"]] for e in rows for f in e["files"]])

    def save(self) -> None:
        """Forget the rows of folders no longer in the store; write the shards listed again (a
        build: while its builder builds, :attr:`~sparkreport.render.context.SiteData.later`)."""
        if self.cache is not None:
            self.cache.keep_only({folder: {key} for folder, key in self.keys.items()})
            write_later(self.site.later, self.cache.folder, self.cache.save)

    def _cache_file(self, name: str) -> Path | None:
        """``name`` in the build's cache folder, where the rows are kept (None: they are not)."""
        memo = self.site.hash_memo
        return memo.path.parent / name if self.cache is not None and memo is not None \
            and memo.path is not None else None

    def read_plans(self) -> dict[str, Any]:
        """The campaigns' plans the last build kept: campaign → (plan key, plan)."""
        from sparkreport.cache import read_cache_pickle

        salt = self.cache.salt if self.cache is not None else ""
        return read_cache_pickle(self._cache_file(PLANS_CACHE), salt, "plans")

    def save_plans(self, plans: dict[str, tuple[str, dict[str, Any]]], kept: Mapping[str, Any]) -> None:
        """Keep ``plans`` (only when they are not the ones ``kept``)."""
        path = self._cache_file(PLANS_CACHE)
        if path is None or self.cache is None:
            return
        if {c: entry[0] for c, entry in plans.items()} != {c: entry[0] for c, entry in kept.items()}:
            from sparkreport.cache import write_cache_pickle

            write_later(self.site.later, path, functools.partial(write_cache_pickle, path, self.cache.salt, "plans",
                                                                  plans))


def _chunks(entries: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A campaign's rows cut into its pages' (:data:`PAGE_SIZE` each)."""
    return [entries[i:i + PAGE_SIZE] for i in range(0, len(entries), PAGE_SIZE)]


def _names(entries: list[dict[str, Any]]) -> list[str]:
    """The model names and environments of ``entries`` (what the sections' anchors are made of)."""
    return sorted({name for entry in entries for name in (entry["model_name"], entry["environment"])})


def _numbered(title: str, k: int, count: int) -> str:
    """The title of a campaign's page ``k`` of ``count``."""
    return title + (f" ({k + 1}/{count})" if count > 1 else "")


#: A kept chart that is not there (a chart may be kept as None: its run's samples draw nothing).
_MISSING: Any = object()


def _read_kept(path: Path) -> Any:
    """A chart :meth:`RunsPage.sample_charts` kept, or :data:`_MISSING` (absent or unreadable)."""
    import pickle

    try:
        return pickle.loads(path.read_bytes())  # noqa: S301 (our own cache under build/)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError):
        return _MISSING


def _sample_charts_folder(site: SiteData) -> Path | None:
    """Where the monitoring charts are kept (the build cache), or None (no hash memo to key them by)."""
    memo = site.hash_memo
    return memo.path.parent / SAMPLE_CHARTS_CACHE if memo is not None and memo.path is not None else None


def _listed_files(store: RunStore, path: str) -> tuple[list[str], list[str]]:
    """The raw files and tables a run.json lists. A record of the current schema version whose
    lists are lists of strings is read as JSON alone (a third of validating it: a build reads
    every run.json of the store for this); any other goes through the store's validation and
    migration, which also names a bad file as the dataset would."""
    from sparkreport.schema import SCHEMA_VERSION

    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read())
        provenance = data["provenance"]
        lists = provenance.get("raw_files", []), provenance.get("tables", [])
        if data["schema_version"] == SCHEMA_VERSION \
                and all(isinstance(x, list) and all(isinstance(v, str) for v in x) for x in lists):
            return list(lists[0]), list(lists[1])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pass
    record = store.load(path)
    return record.provenance.raw_files, record.provenance.tables


def _lists_within(folder: str, members: list[tuple[RunRecord, str]]) -> bool:
    """Whether every file these records list lies in the campaign ``folder`` and is one the walk
    of the store sees (:func:`_names_within`)."""
    return all(_names_within(folder, run_path, [*record.provenance.raw_files, *record.provenance.tables])
               for record, run_path in members)


def _names_within(folder: str, run_path: str, names: list[str]) -> bool:
    """Whether the files a run at ``run_path`` lists (``names``) lie in the campaign ``folder``
    and are ones the walk of the store sees: a raw file may be named ``../../other/x``, whose
    folder's changes would not reach a key made from this one's; the walk leaves hidden files
    out."""
    for name in names:
        if "/" not in name and not name.startswith("."):
            continue
        path = posixpath.normpath(posixpath.join(run_path, name))
        if not path.startswith(f"{folder}/") or any(part.startswith(".") for part in path.split("/")):
            return False
    return True


def _signature(path: Path, memo: HashMemo | None = None) -> str:
    """What a page that draws a file is keyed by: its sha256 from the build's hash memo (a fresh
    checkout, which gives every file a new mtime, changes nothing), else its size and mtime."""
    try:
        if memo is not None:
            return f"{path}: {memo.digest(path)}"
        stat = path.stat()
    except OSError:
        return f"{path}: absent"
    return f"{path}: {stat.st_size} {stat.st_mtime_ns}"


def _order(record: RunRecord) -> tuple[str, str, str, str, str, int, str]:
    """A row's place on the Runs pages: by campaign, then the model as every page lists models
    (:func:`~sparkreport.names.model_order`: its name as the page shows it and a reader sorts it,
    gemma between gpt-oss and Llama, not after Qwen), environment (placed by :func:`_placed`),
    iteration and run id."""
    return (record.campaign, *model_order(model_name_of(record), record.model.name), record.environment.name,
            record.iteration or 0, record.run_id)


def _placed(order: Sequence[Any], baseline: str | None) -> tuple[Any, ...]:
    """A row's :func:`_order` with its environment where every table lists it
    (:func:`~sparkreport.names.level_order`: ``baseline`` first, then by name). Applied as the
    rows are sorted, not kept with a folder's rows: their cache key does not follow
    sparkreport.yml, whose baseline may change."""
    campaign, folded, model, key, environment, *rest = order
    return (campaign, folded, model, key, *level_order(environment, baseline), *rest)


def samples_chart(path: Path, *, name: str, title: str) -> ChartSpec | None:
    """Power, temperature and utilization over elapsed minutes, each series LTTB-downsampled."""
    import numpy as np
    import pandas as pd

    from sparkreport.charts import ChartSpec
    from sparkreport.lttb import lttb

    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError):
        return None
    series = [c for c in SAMPLE_SERIES if c in frame.columns and frame[c].notna().any()]
    if not series or frame.empty:
        return None
    if "timestamp" in frame.columns:
        stamps = pd.to_datetime(frame["timestamp"], format="%Y/%m/%d %H:%M:%S.%f", errors="coerce")
        elapsed = ((stamps - stamps.iloc[0]).dt.total_seconds() / 60.0).to_numpy(dtype=float)
    else:
        elapsed = np.arange(len(frame), dtype=float)
    if not np.isfinite(elapsed).all():
        elapsed = np.arange(len(frame), dtype=float)
    data: list[dict[str, Any]] = []
    for column in series:
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
        keep = np.isfinite(values)
        xs, ys = lttb(elapsed[keep], values[keep], SAMPLE_POINTS)
        data += [{"minute": round(float(x), 4), "value": float(y), "series": SAMPLE_SERIES[column]}
                 for x, y in zip(xs, ys, strict=True)]
    from sparkreport.render.report import join_and

    description = (f"{join_and([SAMPLE_SERIES[c] for c in series])} over the run ({len(frame)} samples, drawn "
                   f"with at most {SAMPLE_POINTS} points per series by LTTB; samples.csv has every sample).")
    return ChartSpec(name=name, title=title, description=description, spec=samples_spec(data, title=title),
                     rows=len(data))


def samples_spec(data: list[dict[str, Any]], *, title: str) -> dict[str, Any]:
    """The samples chart's spec: a line per series of ``data`` over elapsed minutes, a row each
    with its own y scale."""
    from sparkreport.charts import PANEL_WIDTH, mark, nominal, quantitative, top_level

    return top_level({"data": {"values": data}, "mark": mark("line", strokeWidth=1), "encoding": {
        "color": nominal("series", legend=None),
        "row": nominal("series", header={"labelAlign": "left", "labelAngle": 0}, title=None),
        "x": quantitative("minute", title="elapsed (min)"),
        "y": quantitative("value", scale={"zero": False}, title=None)}},
        height=70, resolve={"scale": {"y": "independent"}}, title=title, width=PANEL_WIDTH)


def run_files(runs_dir: Path, run_path: str, raw_files: list[str], prefix: str,
              tables: list[str] | None = None, folders: dict[str, bool] | None = None) -> list[dict[str, str]]:
    """A run's published files: run.json, then the raw files and tables its record lists.

    Only regular files reached without a symbolic link are published (a link inside the store
    is not followed; one that leaves the store fails the build, naming it). Each entry: ``name``
    (as published), ``source`` (the name in the store, shown on the page), ``path`` (site path
    under the Runs folder), ``store_path`` (relative to the run store) and ``href`` (relative
    to the Runs page). ``folders`` memoises the folder checks across runs
    (:func:`~sparkreport.published.store_stat`).
    """
    from sparkreport.published import store_stat

    root = str(runs_dir)
    folder = os.path.join(root, run_path)
    if os.path.islink(folder):
        check_link(runs_dir, Path(folder))
    listed = ["run.json", *raw_files, *(f"{t}.csv" for t in tables or [])]
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    plain_run = run_path not in ("", ".") and posixpath.normpath(run_path) == run_path
    for name in listed:
        if plain_run and "/" not in name and name not in (".", "..", ""):
            store_path = f"{run_path}/{name}"  # what normpath(join()) gives, without its work
        else:
            store_path = posixpath.normpath(posixpath.join(run_path, name))
        if store_path in seen or store_path.startswith("../"):
            continue
        seen.add(store_path)
        found = store_stat(root, store_path, folders)
        if found is None:
            candidate = Path(root) / store_path
            if candidate.is_symlink():
                check_link(runs_dir, candidate)
            continue
        published = published_name(store_path, found.st_size)
        # A folder name that is not UTF-8: shown with \xNN escapes, linked by its bytes (quote() of bytes).
        out.append({"name": shown(posixpath.basename(published)), "source": shown(posixpath.basename(name)),
                    "path": f"{prefix}/{published}", "store_path": store_path,
                    "href": quote(os.fsencode(f"{prefix}/{published}"))})
    return out


def check_link(runs_dir: Path, path: Path) -> None:
    """Refuse a symbolic link in the run store that leaves it (one line naming it)."""
    from sparkreport.errors import DataError

    if not path.is_symlink():
        return
    target = path.resolve()
    if not target.is_relative_to(runs_dir.resolve()):
        raise DataError(f"{path}: is a symbolic link to {target}, outside the run store {runs_dir} — "
                        "replace the link by the file itself, or remove it")


def _guard_label(record: RunRecord) -> str | None:
    """"stopped by the memory floor" / "stalled" for a run a guard of the executor stopped."""
    event = guard_event_of(record)
    return None if event is None else GUARD_NAMES.get(str(event.get("kind")), "stopped by the guard")


#: What a group of runs counts (a campaign, its groups' sums): records, published-figure records, failed runs,
#: runs in the statistics, runs with monitoring samples.
_COUNTS = ("runs", "published", "failed", "included", "sampled")


def _count(counts: dict[str, Any], entry: Mapping[str, Any]) -> None:
    counts["runs"] += 1
    counts["published"] += bool(entry["published"])
    counts["failed"] += not entry["published"] and not entry["ok"]
    counts["included"] += bool(entry["included"])
    counts["sampled"] += bool(entry["samples"])


def _campaign_summary(campaign: str, groups: list[dict[str, Any]], pages: int, href: str) -> dict[str, Any]:
    """One row of a large store's Runs index: a campaign's counts (its groups' sums) and a link
    to its first page."""
    return {"campaign": campaign, **{count: sum(g[count] for g in groups) for count in _COUNTS}, "href": href,
            "pages": pages, "models": len({g["model_name"] for g in groups}),
            "environments": len({g["environment"] for g in groups})}
