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
"""

from __future__ import annotations

import functools
import json
import os
import posixpath
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from sparkreport.cache import inputs_digest
from sparkreport.dataset import model_name_of, plain
from sparkreport.execute.guard import GUARD_NAMES, guard_event_of
from sparkreport.names import level_order, model_order, shown, unique_slugs
from sparkreport.published import published_name, write_manifest
from sparkreport.render.pages import NavItem, Page, PageDoc, register
from sparkreport.schema import slug

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from sparkreport.cache import HashMemo, RecordCache
    from sparkreport.charts import ChartSpec
    from sparkreport.render.context import SiteData
    from sparkreport.schema import RunRecord
    from sparkreport.store import RunStore, StoreScan

#: Rows per Runs page (about 400 bytes of Markdown each: pages stay far below 1.5 MB).
PAGE_SIZE = 250
#: Points per series in a samples chart (LTTB); the full series is in samples.csv.
SAMPLE_POINTS = 400
#: The Runs rows' cache in a build's cache folder (see :meth:`RunsPage.entries`).
LISTING_CACHE = "runs-listing"
#: The published files' list per campaign, read from the store (see :meth:`RunsPage.store_files`).
STORE_FILES_CACHE = "store-files"
#: The monitoring charts, one file per run with samples (see :meth:`RunsPage.sample_charts`).
SAMPLE_CHARTS_CACHE = "sample-charts"
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
        listed_by: dict[str, str] = {}
        entries = self.entries(site, site.runs_dir, listed_by)
        self.key_sample_charts(site, entries)
        index = PageDoc(self.path, self.title, self.template, banner=False)
        # The index writes the manifest of every published file: a raw file added or removed
        # beside an unchanged run.json changes it (and, on a small store, the rows it shows).
        # Where every row was kept by its folder's listing key, those keys stand for the rows.
        slim = all(e["run_id"] in listed_by for e in entries)
        index.also_reads = [json.dumps(sorted(set(listed_by.values())) if slim
                                       else [[f["path"], f["store_path"]] for e in entries for f in e["files"]])]
        if len(site.dataset.records) <= PAGE_SIZE:
            index.also_reads += [_signature(site.runs_dir / e["run_path"] / "samples.csv", site.hash_memo)
                                 for e in entries if e["samples"]]

            def fill_small() -> None:
                self.write_manifest(site, out, index, entries)
                rows = {c: [e for e in entries if e["campaign"] == c] for c in campaigns}
                index.context = {"campaigns": rows, "sections": self.small_sections(index, rows),
                                 "summaries": None, **self.limits()}
                index.charts = self.sample_charts(site, index, entries)

            index.fill = fill_small
            return [index]
        docs: list[PageDoc] = []
        summaries: list[dict[str, Any]] = []
        by_campaign: dict[str, list[dict[str, Any]]] = {}
        for entry in entries:  # in (campaign, model, environment, iteration, run id) order
            by_campaign.setdefault(entry["campaign"], []).append(entry)
        anchors = unique_slugs(name for entry in entries for name in (entry["model_name"], entry["environment"]))
        from sparkreport.render.report import campaign_title

        for campaign, members in by_campaign.items():
            chunks = [members[i:i + PAGE_SIZE] for i in range(0, len(members), PAGE_SIZE)]
            base = f"{self.folder}/{slug(campaign)}"
            paths = [f"{base}/index.md" if k == 0 else f"{base}/page-{k + 1}/index.md" for k in range(len(chunks))]
            title = campaign_title(site, campaign)
            pages = [PageDoc(path, title + (f" ({k + 1}/{len(paths)})" if len(paths) > 1 else ""),
                             self.group_template, banner=False) for k, path in enumerate(paths)]
            per_page, groups = self.campaign_groups(chunks, pages, anchors)
            summaries.append(_campaign_summary(campaign, groups, len(paths), index.href(paths[0])))
            for k, (doc, (chunk, sections)) in enumerate(zip(pages, per_page, strict=True)):
                doc.inputs = [e["run_id"] for e in chunk]
                doc.reads_findings = "none"  # no banner; each row's inclusion is in also_reads
                shown_groups = groups if k == 0 else None  # the campaign's groups open its first page
                # the rows as listed (inclusion, files, sections), the sibling pages, the groups
                # table, and each samples.csv drawn. Keys in the order the rows are made (every
                # row, fresh or kept, has the same keys in the same order; a different order
                # would only render the page again): sorting them was a third of this JSON's
                # time, ~10 MB at 10 000 runs.
                doc.also_reads = [json.dumps([_rows_read(sections, listed_by), paths, shown_groups], default=str,
                                             separators=(",", ":"), check_circular=False),
                                  *(_signature(site.runs_dir / e["run_path"] / "samples.csv", site.hash_memo)
                                    for e in chunk if e["samples"])]
                doc.fill = functools.partial(self.fill_group, site, doc, sections, k, paths, campaign, shown_groups)
                docs.append(doc)

        def fill_index() -> None:
            self.write_manifest(site, out, index, entries)
            index.context = {"campaigns": None, "summaries": summaries, **self.limits()}

        index.fill = fill_index
        return [index, *docs]

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
        from sparkreport.published import MANIFEST

        published = {(f"{self.folder}/{f['path']}", f["store_path"]) for e in entries for f in e["files"]}
        write_manifest(out, site.runs_dir, sorted(published))
        index.files = [MANIFEST]

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

    def entries(self, site: SiteData, files_root: Path,
                listed_by: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """One row per record, in (campaign, model, environment, iteration, run id) order.

        A row's files are each listed file's lstat (one per file, a third of a second at 10 000
        runs, with the rest of a row): in a build, the rows of a campaign folder are kept
        (``build/cache/runs-listing/``) by the path and sha256 of every file in it
        (from the walk the build key made, :meth:`~sparkreport.cache.StoreWalk.by_content`) and the
        package's digest, and only a folder that changed, or holds a symbolic link, is listed
        again. Whether each run is included (the analysis) is set on every row afterwards,
        cached or not. ``listed_by``, if given, gets the run id of each row that was kept → its
        folder and the key its folder's rows are kept by (which determines the row but for
        ``included`` and ``reason``)."""
        runs = site.runs
        run_ids = runs["run_id"].tolist() if not runs.empty else []
        included = dict(zip(run_ids, runs["included"].tolist(), strict=True)) if not runs.empty else {}
        reasons = dict(zip(run_ids, runs["exclusion_reason"].tolist(), strict=True)) if not runs.empty else {}
        # Each folder's members as (record's position, run path): a folder whose rows are kept
        # reads none of its records (only those of a folder listed again are read).
        records, run_keys = site.dataset.records, site.dataset.record_keys()
        by_folder: dict[str, list[tuple[int, str]]] = {}
        for index, run_path in enumerate(site.dataset.paths):
            by_folder.setdefault(run_path.partition("/")[0], []).append((index, run_path))
        folders: dict[str, bool] = {}

        def listed(folder: str, members: list[tuple[int, str]]) -> tuple[list[Any], bool]:
            pairs = [(records[index], run_path) for index, run_path in members]
            return ([(_order(record), self._entry(record, run_path, files_root, folders))
                     for record, run_path in pairs], _lists_within(folder, pairs))

        keys: dict[str, str] = {}
        kept = kept_per_folder(self._listing_cache(site, files_root), site.store_folders or {}, by_folder, listed,
                               [("root", str(files_root)), ("prefix", self.files_dir)],
                               lambda members: [[run_keys[index].run_id, run_path] for index, run_path in members],
                               kept_by=keys)
        if listed_by is not None:
            for folder, key in keys.items():
                listed_by.update(dict.fromkeys((run_keys[index].run_id for index, _path in by_folder[folder]),
                                               f"{folder}\0{key}"))
        # (kept before any row is changed below)
        out = [row for rows in kept.values() for row in rows]
        baseline = site.config.baseline_of("environment")
        out.sort(key=lambda pair: _placed(pair[0], baseline))
        conditions = design_conditions(runs)
        for _order_key, entry in out:
            entry["included"] = plain(included.get(entry["run_id"]))
            entry["reason"] = plain(reasons.get(entry["run_id"]))
            entry["condition"] = conditions.get(entry["run_id"], {})
        return [entry for _order_key, entry in out]

    def _listing_cache(self, site: SiteData, files_root: Path) -> RecordCache | None:
        """The rows' cache, salted with the package's digest; None outside a build (no walk of the
        store to key the rows by) or for runs published from elsewhere than the store."""
        from sparkreport.cache import RecordCache, package_digest

        memo = site.hash_memo
        if memo is None or memo.path is None or site.store_folders is None or files_root != site.runs_dir:
            return None
        return RecordCache(memo.path.parent / LISTING_CACHE, salt=f"runs-listing-2:{package_digest(memo)}")

    def _entry(self, record: RunRecord, run_path: str, files_root: Path, folders: dict[str, bool]) -> dict[str, Any]:
        """A record's row, but for ``included`` and ``reason`` (set by :meth:`entries`)."""
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
        samples.csv's sha256 from the build's hash memo, the package), and charts kept for other
        keys are removed. Reading an hour of 10 Hz samples and downsampling it is ~35 ms a run;
        every run of a small store is on the one Runs page, which one new run renders again (a
        hundred charts drawn again: 3.5 s of a 5.6 s build at 100 runs, bench/README.md)."""
        folder = _sample_charts_folder(site)
        if folder is None:
            return
        from sparkreport.cache import package_digest

        assert site.hash_memo is not None
        salt = f"{SAMPLE_CHARTS_CACHE}-1:{package_digest(site.hash_memo)}"
        keys: set[str] = set()
        for entry in entries:
            if entry["samples"]:
                path = site.runs_dir / entry["run_path"] / "samples.csv"
                entry["samples_key"] = key = inputs_digest([("code", salt), ("run", entry["run_id"]),
                                                            ("file", _signature(path, site.hash_memo))])
                keys.add(f"{key}.pickle")
        if folder.is_dir():
            for stale in folder.iterdir():
                if stale.name not in keys:
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
    was kept by its folder's listing key (:meth:`RunsPage.entries`) — those keys, each section's
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
                    describe: Callable[[G], Any], kept_by: dict[str, str] | None = None,
                    also: Mapping[str, str | None] | None = None) -> dict[str, list[Any]]:
    """What ``compute(folder, members)`` gives for each campaign folder of ``groups``, kept in
    ``cache`` (one shard a folder) by the cache's salt, the folder's digest from the build's walk
    of the store (``digests``, :meth:`~sparkreport.cache.StoreWalk.by_content`: the path and
    sha256 of every file in it; in a cold build, their stat), ``parts`` and
    ``describe(members)``; only a folder whose files changed is computed again. Never kept: a
    folder without a digest (it holds a symbolic link, or there was no walk) or one whose
    ``compute`` says its result is not to be kept (a run naming a file outside its folder, whose
    changes the folder's digest would not see).
    Folders no longer in ``groups`` are forgotten; the cache is saved. ``kept_by``, if given,
    gets each kept folder's key: a digest of everything its result was computed from. ``also``:
    another digest of each folder (its files' stat, where ``digests`` are by content), under
    which a result kept by a build that had only that one is found too — and then kept under
    both (a cold build's publisher keys by stat: the next build finds its lists)."""
    def key_of(cache: RecordCache, digest: str, described: str) -> str:  # a folder's result, by one of its digests
        return inputs_digest([("code", cache.salt), ("folder", digest), *parts, ("members", described)])

    out: dict[str, list[Any]] = {}
    keys: dict[str, set[str]] = {}
    for folder, members in groups.items():
        digest = digests.get(folder)
        key = None
        if cache is not None and digest is not None:
            described = json.dumps(describe(members))
            key = key_of(cache, digest, described)
            keys[folder] = {key}
            found = cache.get(folder, key)
            other = also.get(folder) if also is not None else None
            if not isinstance(found, list) and other is not None and other != digest:
                other_key = key_of(cache, other, described)
                found = cache.get(folder, other_key)
                if isinstance(found, list):  # kept under both from now on
                    keys[folder].add(other_key)
                    cache.put(folder, key, found)
            if isinstance(found, list):
                out[folder] = found
                if kept_by is not None:
                    kept_by[folder] = key
                continue
        rows, keep = compute(folder, members)
        if cache is not None and key is not None and keep:
            cache.put(folder, key, rows)
            if kept_by is not None:
                kept_by[folder] = key
        out[folder] = rows
    if cache is not None:
        cache.keep_only(keys)
        cache.save()
    return out


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
