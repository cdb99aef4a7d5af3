"""Issue 16: bad configuration is refused before any heavy work, with one line whose lists of
values are cut short; a render rewrites only the generated files whose bytes changed."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from store_helpers import put_campaign
from template_override import override_template

from sparkreport.cli import main
from sparkreport.errors import BuildError, ConfigError
from sparkreport.names import shown_values
from sparkreport.render import RenderOptions, RenderResult, render


def test_shown_values_cuts_long_lists_short() -> None:
    assert shown_values([]) == "none"
    assert shown_values(["a", "b"]) == "a, b"
    assert shown_values([f"m{i}" for i in range(8)]) == "m0, m1, m2, m3, m4, m5, m6, m7"
    assert shown_values([f"m{i}" for i in range(100)], limit=2) == "m0, m1, … and 98 more"
    assert shown_values(range(10)) == "0, 1, 2, 3, 4, 5, 6, 7, … and 2 more"
    # titles may hold commas: another separator keeps them apart
    assert shown_values(["A, cold", "B, warm", "C"], limit=2, sep="; ") == "A, cold; B, warm; … and 1 more"


@pytest.fixture
def no_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the render gets as far as the analysis (statistics, pages, charts)."""
    import sparkreport.render.context as context

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the analysis ran before the bad configuration was refused")

    monkeypatch.setattr(context, "build_site_data", refuse)


def write_config(tmp_path: Path, a: str, b: str = "environment=native") -> Path:
    config = tmp_path / "sparkreport.yml"
    config.write_text(f"title: t\ndiffs:\n  - name: x\n    a: {a}\n    b: {b}\n", encoding="utf-8")
    return config


@pytest.mark.parametrize(("selector", "problem"), [
    ("environment=bare-metal", "selector 'environment=bare-metal': no run has environment='bare-metal' — "
     "environment values here: container, native"),
    ("model=llama,environment=native", "selector 'model=llama,environment=native': no run has model='llama' — "
     "model values here: deepseek, gpt120b, qwen72b"),
    ("gpu=h100", "selector 'gpu=h100': no column or label 'gpu' — labels here: none"),
    ("campaign", "selector 'campaign': 'campaign' is not KEY=VALUE (e.g. engine_version=1.2.0) — see the README's "
     "diff section"),
])
def test_bad_diff_selector_refused_before_the_analysis(tmp_path: Path, phase1_store: Path, no_analysis: None,
                                                       selector: str, problem: str) -> None:
    config = write_config(tmp_path, selector)
    with pytest.raises(ConfigError) as raised:
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path, config_path=config))
    assert raised.value.format_message() == f"{config}:4: diff 'x': a: {problem}"
    assert not (tmp_path / "build" / "docs").exists()  # refused before anything was written


def test_diff_whose_conditions_match_apart_but_not_together(tmp_path: Path, phase1_store: Path,
                                                             no_analysis: None) -> None:
    config = write_config(tmp_path, "model=deepseek", "model=qwen72b,model=gpt120b")
    with pytest.raises(ConfigError, match=r":5: diff 'x': b: selector 'model=qwen72b,model=gpt120b': no run "
                                          r"matches every condition at once — check the selector"):
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path, config_path=config))


def test_stale_post_binding_refused_before_the_analysis(tmp_path: Path, phase1_store: Path, no_analysis: None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    posts = tmp_path / "docs" / "blog" / "posts"
    posts.mkdir(parents=True)
    (posts / "p.md").write_text('# P\n\nText.\n{{ value("output_throughput_tok_s", model="llama-3-8b") }}\n',
                                encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["build", "--runs-dir", str(phase1_store)])
    assert result.exit_code == 1
    assert result.output == ('Error: docs/blog/posts/p.md:4: {{ value("output_throughput_tok_s", model="llama-3-8b") '
                             "}}: no arm with output_throughput_tok_s has model='llama-3-8b' — model values here: "
                             "deepseek, gpt120b, qwen72b\n")
    (posts / "p.md").write_text('# P\n\n{{ value("output_throughput_tok_s", label_gpu="x") }}\n', encoding="utf-8")
    with pytest.raises(BuildError, match=r"^docs/blog/posts/p\.md:3: .*: no label 'gpu' in the data — labels: none$"):
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))


def files_and_mtimes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_render_rewrites_only_changed_files(tmp_path: Path, phase1_store: Path) -> None:
    """Equal bytes keep their mtime; a changed page is rewritten; a removed page is deleted."""
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "notes.md").write_text("# Notes\n\nOne.\n", encoding="utf-8")
    (project / "docs" / "gone.md").write_text("# Gone\n", encoding="utf-8")
    first = render(RenderOptions(runs_dir=phase1_store, project_root=project))
    docs = first.docs_dir
    before = files_and_mtimes(docs)
    assert "notes.md" in before and "index.md" in before
    assert first.changed_files == len(before) - 1  # every file but the marker, written before the render
    for path in docs.rglob("*"):  # back-date everything: a rewrite now shows as a new mtime
        if path.is_file():
            os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    (project / "docs" / "notes.md").write_text("# Notes\n\nTwo.\n", encoding="utf-8")
    (project / "docs" / "gone.md").unlink()
    second = render(RenderOptions(runs_dir=phase1_store, project_root=project))
    after = files_and_mtimes(docs)
    assert set(after) == set(before) - {"gone.md"}
    rewritten = sorted(name for name, mtime in after.items() if mtime != 1_000_000_000)
    assert rewritten == ["notes.md"]
    assert second.changed_files == 2  # notes.md written, gone.md removed
    assert (docs / "notes.md").read_text(encoding="utf-8") == "# Notes\n\nTwo.\n"
    assert not (docs.parent / ".docs.staging").exists()


# --------------------------------------------------------------------------- per-page cache


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def backdate(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(1_000_000_000, 1_000_000_000))


@pytest.fixture
def two_campaigns(tmp_path: Path, phase1_store: Path, published_store: Path) -> Path:
    """A project whose store holds the Phase 1 runs and the published figures (two campaigns)."""
    import shutil

    project = tmp_path / "project"
    shutil.copytree(phase1_store, project / "runs")
    for campaign in (p for p in published_store.iterdir() if p.is_dir()):
        shutil.copytree(campaign, project / "runs" / campaign.name)
    return project


def change_one_run(runs: Path, prefix: str = "deepseek-container-iter01") -> None:
    path = next((runs / "phase1").glob(f"{prefix}*")) / "run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] += 0.0001
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def test_one_changed_run_renders_only_the_pages_that_read_it(two_campaigns: Path, tmp_path: Path) -> None:
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    first = render(options)
    assert first.skipped_pages == [] and len(first.rendered_pages) == len(first.pages)
    docs = first.docs_dir
    again = render(options)  # nothing changed: nothing filled, nothing written
    assert again.rendered_pages == [] and again.changed_files == 0
    assert sorted(again.skipped_pages) == sorted(first.rendered_pages)
    backdate(docs)
    change_one_run(two_campaigns / "runs")
    second = render(options)
    # the pages that read every run (the campaigns' overview too), and those of the run's model
    # and campaign — not the others
    assert sorted(second.rendered_pages) == sorted([
        "index.md", "campaigns/index.md", "campaigns/phase1/index.md", "results/index.md", "results/deepseek/index.md",
        "memory/index.md", "methodology/index.md", "quality/index.md", "runs/index.md", "downloads/index.md"])
    assert "results/qwen72b/index.md" in second.skipped_pages
    assert "campaigns/phase1-published/index.md" in second.skipped_pages
    after = files_and_mtimes(docs)
    for path in ("results/qwen72b/index.md", "results/qwen72b/charts/output_throughput_tok_s-runs.vl.json",
                 "campaigns/phase1-published/index.md"):
        assert after[path] == 1_000_000_000, path  # neither rendered nor rewritten
    assert after["results/deepseek/index.md"] != 1_000_000_000
    # equal, byte for byte, to a cold render of the same store
    cold = render(RenderOptions(runs_dir=two_campaigns / "runs", project_root=two_campaigns,
                                docs_dir=tmp_path / "cold" / "docs"))
    assert cold.skipped_pages == []
    assert tree(docs) == tree(cold.docs_dir)


def test_one_changed_run_reads_the_records_of_its_campaign_only(two_campaigns: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The record cache keeps each campaign's validated records as one pickle, unpickled when one
    of them is read; what the pages across campaigns read of the records (sources, settings,
    memory ledgers) is kept per campaign: after one changed run a build reads only its campaign's
    (a build: its walk of the store keys the Runs rows per campaign folder)."""
    from sparkreport.dataset import RecordGraphs
    from sparkreport.site import build

    monkeypatch.setenv("SPARKREPORT_JOBS", "1")  # pages filled here, where the reads are counted
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    build(options)
    read: list[str] = []
    original = RecordGraphs.record

    def record(self: RecordGraphs, digest: str) -> object:
        fresh = self.graphs is None
        value = original(self, digest)
        if fresh:
            read.append(value.campaign)
        return value

    monkeypatch.setattr(RecordGraphs, "record", record)
    build(options, full=True)  # nothing changed, every page built again: no record read
    assert read == []
    change_one_run(two_campaigns / "runs")
    second = build(options)
    assert read == ["phase1"]
    assert {"methodology/index.md", "memory/index.md", "runs/index.md"} <= set(second.render.rendered_pages)


def count_listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The campaign of every run whose Runs row is listed (its files lstat-ed) from now on."""
    from sparkreport.render import runs_index

    listed: list[str] = []
    run_files = runs_index.run_files

    def counting(runs_dir: Path, run_path: str, *args: object, **kwargs: object) -> object:
        listed.append(run_path.partition("/")[0])
        return run_files(runs_dir, run_path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runs_index, "run_files", counting)
    return listed


def link_in_published(runs: Path) -> None:
    """A file and a symbolic link to it in the phase1-published campaign's folder."""
    (runs / "phase1-published" / "notes.txt").write_text("x\n", encoding="utf-8")
    (runs / "phase1-published" / "link.txt").symlink_to(runs / "phase1-published" / "notes.txt")


def name_another_campaigns_file(run: Path) -> None:
    """``run`` (a phase1 run) lists phase1-published's notes.txt among its raw files."""
    record = json.loads((run / "run.json").read_text(encoding="utf-8"))
    record["provenance"]["raw_files"].append("../../phase1-published/notes.txt")
    (run / "run.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def read_every_time_while_linked_or_reaching_out(runs: Path, run: Path, step: Callable[[], object],
                                                 seen: list[str]) -> None:
    """A campaign folder holding a symbolic link, then a phase1 ``run`` naming a file in another
    campaign's folder: ``step`` (a render, a read of the store) reads that campaign each time,
    as ``seen`` (the campaigns read) shows; nothing of it is kept."""
    link_in_published(runs)
    for _ in range(2):
        step()
        assert set(seen) == {"phase1-published"}
        seen.clear()
    (runs / "phase1-published" / "link.txt").unlink()
    name_another_campaigns_file(run)
    for _ in range(2):
        step()
        assert "phase1" in seen
        seen.clear()


def test_the_runs_rows_are_listed_again_only_for_a_campaign_whose_files_changed(
        two_campaigns: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Runs rows (each run's files, by one lstat each) are kept per campaign folder by the
    stat of every file in it: a campaign whose files did not change is not listed again, one
    whose raw file went is, one holding a symbolic link always is, and a raw file named in
    another campaign's folder keeps its campaign from being cached. The pages and the manifest
    are a cold render's either way."""
    from sparkreport.cache import walk_store
    from sparkreport.published import MANIFEST
    from sparkreport.render import runs_index

    listed = count_listed(monkeypatch)
    runs = two_campaigns / "runs"
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)

    def rendered() -> RenderResult:  # as a build renders: with its walk of the store
        return render(options, store_folders=walk_store(runs).folders)

    render(options)  # a render without a build's walk lists every campaign, and keeps nothing
    assert not (two_campaigns / "build" / "cache" / runs_index.LISTING_CACHE).exists()
    listed.clear()
    rendered()
    campaigns = {p.name for p in runs.iterdir() if p.is_dir()}
    assert set(listed) == campaigns and "phase1-published" in campaigns
    listed.clear()
    rendered()  # nothing changed: nothing listed
    assert listed == []
    run = sorted(p for p in (runs / "phase1").iterdir() if (p / "record.json").is_file())[0]
    (run / "record.json").unlink()  # a raw file gone, its run.json unchanged
    rendered()
    assert set(listed) == {"phase1"} and len(listed) == 63
    manifest = (two_campaigns / "build" / "docs" / MANIFEST).read_text(encoding="utf-8")
    assert f"{run.name}/record.json" not in manifest and "record.json" in manifest
    listed.clear()
    read_every_time_while_linked_or_reaching_out(runs, run, rendered, listed)
    result = rendered()
    cold = render(RenderOptions(runs_dir=runs, project_root=two_campaigns, docs_dir=tmp_path / "cold" / "docs"))
    assert tree(result.docs_dir) == tree(cold.docs_dir)


def test_the_manifest_keeps_each_campaign_folders_piece_by_its_listing_key(
        two_campaigns: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large store's manifest of published files is made of one piece per campaign folder, kept
    by the folder's listing key: a build that changed one folder makes that folder's piece only,
    and the manifest is a cold render's byte for byte each time — also once a run names a file in
    another campaign's folder, when the pieces cannot be placed and every file is sorted again."""
    from sparkreport import published
    from sparkreport.cache import walk_store
    from sparkreport.published import MANIFEST
    from sparkreport.render import runs_index

    monkeypatch.setattr(runs_index, "PAGE_SIZE", 10)  # a large store's index (its fill keeps pieces)
    monkeypatch.setenv("SPARKREPORT_JOBS", "1")  # the fills in this process, where the calls are counted
    made: list[list[str]] = []  # each piece's folders
    piece = published.manifest_piece

    def counting(files: Iterable[tuple[str, str]]) -> str:
        files = list(files)
        made.append(sorted({store.partition("/")[0] for _site, store in files}))
        return piece(files)

    monkeypatch.setattr(published, "manifest_piece", counting)
    runs = two_campaigns / "runs"
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)

    def rendered() -> tuple[str, list[list[str]]]:  # as a build renders (with its walk of the store)
        made.clear()
        result = render(options, store_folders=walk_store(runs).folders)
        pieces = list(made)  # (the folders whose pieces this render made, before the cold one's)
        cold = render(RenderOptions(runs_dir=runs, project_root=two_campaigns,
                                    docs_dir=tmp_path / f"cold-{len(list(tmp_path.iterdir()))}" / "docs"))
        manifest = (result.docs_dir / MANIFEST).read_bytes()
        assert manifest == (cold.docs_dir / MANIFEST).read_bytes()
        return manifest.decode(), pieces

    folders = sorted(p.name for p in runs.iterdir() if p.is_dir())
    assert sorted(rendered()[1]) == [[folder] for folder in folders] and "phase1" in folders
    assert (two_campaigns / "build" / "cache" / runs_index.MANIFEST_CACHE).is_file()
    assert rendered()[1] == []  # nothing changed: every piece kept
    run = sorted(p for p in (runs / "phase1").iterdir() if (p / "record.json").is_file())[0]
    (run / "record.json").unlink()  # a raw file gone, its run.json unchanged
    manifest, pieces = rendered()
    assert pieces == [["phase1"]]  # the other folders' pieces were kept
    assert f"{run.name}/record.json" not in manifest and "record.json" in manifest
    (runs / "phase1-published" / "notes.txt").write_text("notes\n", encoding="utf-8")
    name_another_campaigns_file(run)
    manifest, pieces = rendered()
    assert '"phase1-published/notes.txt"' in manifest
    assert pieces[-1] == folders  # phase1 has no piece of its own: every file sorted at once


def test_the_campaign_runs_pages_are_keyed_by_their_folders_listing(
        two_campaigns: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large store's campaign Runs pages are keyed by their folder's listing key (and each row's
    inclusion) instead of every row's files: a raw file gone beside an unchanged run.json renders
    that run's page again, not the other campaign's, and the pages are a cold render's each time;
    a folder whose rows are not kept (a symbolic link in it) is keyed by its rows as before."""
    from sparkreport.cache import walk_store
    from sparkreport.render import runs_index

    monkeypatch.setattr(runs_index, "PAGE_SIZE", 10)  # the index and a campaign's pages of 10 rows
    runs = two_campaigns / "runs"
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)

    def rendered() -> RenderResult:  # as a build renders: with its walk of the store
        result = render(options, store_folders=walk_store(runs).folders)
        cold = render(RenderOptions(runs_dir=runs, project_root=two_campaigns,
                                    docs_dir=tmp_path / f"cold-{len(list(tmp_path.iterdir()))}" / "docs"))
        assert tree(result.docs_dir) == tree(cold.docs_dir)
        return result

    first = rendered()

    def keyed_by_files(result: RenderResult, page: str) -> bool:
        return '"store_path"' in next(doc for doc in result.pages if doc.path == page).also_reads[0]

    assert not keyed_by_files(first, "runs/phase1/index.md")
    assert not [p for p in rendered().rendered_pages if p.startswith("runs/")]  # nothing changed
    run = sorted(p for p in (runs / "phase1").iterdir() if (p / "record.json").is_file())[0]
    (run / "record.json").unlink()  # a raw file gone, its run.json unchanged
    again = [p for p in rendered().rendered_pages if p.startswith("runs/")]
    page = next(p for p in again if p != "runs/index.md")
    assert f"{run.name}/record.json" not in (two_campaigns / "build" / "docs" / page).read_text(encoding="utf-8")
    assert again and all(p.startswith(("runs/phase1/", "runs/index.md")) for p in again)
    link_in_published(runs)  # not kept: keyed by its rows, and still a cold render's
    linked = rendered()
    assert "runs/phase1-published/index.md" in linked.rendered_pages
    assert keyed_by_files(linked, "runs/phase1-published/index.md")
    assert not keyed_by_files(linked, "runs/phase1/index.md")
    (runs / "phase1-published" / "link.txt").unlink()
    rendered()


def test_a_campaign_whose_rows_did_not_change_keeps_its_runs_pages_plan(
        two_campaigns: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large store's campaign Runs pages are planned from their rows only for a campaign whose
    rows changed (issue 16, forty-fifth round): after one run changed, the other campaign's pages
    are planned from the plan the last build kept, without reading its rows, and keyed as before
    (nothing of it rendered again). A page of a kept plan whose Markdown is gone is filled from
    its rows; without the plans' file every campaign is planned from its rows again. The docs
    folder is a cold render's every time."""
    from sparkreport.cache import walk_store
    from sparkreport.render import runs_index

    monkeypatch.setattr(runs_index, "PAGE_SIZE", 10)
    monkeypatch.setenv("SPARKREPORT_JOBS", "1")  # filled here, where the rows asked for are counted
    runs = two_campaigns / "runs"
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    asked: list[str] = []
    campaign_entries = runs_index.RunsRows.campaign_entries

    def counted(self: runs_index.RunsRows, campaign: str) -> list[dict[str, Any]]:
        asked.append(campaign)
        return campaign_entries(self, campaign)

    monkeypatch.setattr(runs_index.RunsRows, "campaign_entries", counted)

    def rendered() -> RenderResult:  # (``asked``: the campaigns whose rows it asked for)
        asked.clear()
        result = render(options, store_folders=walk_store(runs).folders)
        by_it = list(asked)
        cold = render(RenderOptions(runs_dir=runs, project_root=two_campaigns,
                                    docs_dir=tmp_path / f"cold-{len(list(tmp_path.iterdir()))}" / "docs"))
        assert tree(result.docs_dir) == tree(cold.docs_dir)
        asked[:] = by_it
        return result

    first = rendered()
    published = [p.path for p in first.pages if p.path.startswith("runs/phase1-published/")]
    campaigns = {p.name for p in runs.iterdir() if p.is_dir()}
    assert published and set(asked) == campaigns and len(campaigns) > 2
    assert (two_campaigns / "build" / "cache" / runs_index.PLANS_CACHE).is_file()
    change_one_run(runs)
    again = rendered()
    assert asked == ["phase1"]  # the others planned from the kept plans
    assert not set(published) & set(again.rendered_pages)
    assert "runs/index.md" in again.rendered_pages and any(p.startswith("runs/phase1/") for p in again.rendered_pages)
    keys = {p.path: p.key for p in again.pages}
    (two_campaigns / "build" / "docs" / published[0]).unlink()
    gone = rendered()
    assert gone.rendered_pages == [published[0]] and asked == ["phase1-published"]  # its fill reads its rows
    (two_campaigns / "build" / "cache" / runs_index.PLANS_CACHE).unlink()
    without = rendered()
    assert set(asked) == campaigns and without.rendered_pages == []
    assert {p.path: p.key for p in without.pages} == keys


def analysis_entries(path: Path) -> dict[str, set[str]]:
    """The keys of each kind in a build's analysis cache file (and its journal)."""
    from sparkreport.cache import AnalysisCache, HashMemo, package_digest

    return {kind: set(entries)
            for kind, entries in AnalysisCache(path, salt=package_digest(HashMemo(None))).entries.items()}


def test_the_commands_that_read_the_store_go_through_a_builds_cache(
        two_campaigns: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``dataset``, ``stats``, ``compare``, ``check``, ``diff`` and ``history`` read the run
    store through the record cache a build left (build/cache): after a build no run.json is
    validated again, after one run changed only that one; ``stats``, ``compare``, ``check`` and
    ``history`` take the build's analysis from its cache and add what they compute with their
    own options without forgetting the build's. The output is the uncached one, byte for byte.
    A project never built gets no build/ folder, and another store than the project's own is
    read as it is (the project's cache untouched)."""
    import shutil

    from sparkreport.store import RunStore

    commands = [["dataset"], ["stats"], ["compare"], ["check"], ["history"],
                ["diff", "--a", "environment=native", "--b", "environment=container"]]
    loads: list[str] = []
    load = RunStore.load

    def counting(self: RunStore, path: Any, *args: Any, **kwargs: Any) -> Any:
        loads.append(str(path))
        return load(self, path, *args, **kwargs)

    monkeypatch.setattr(RunStore, "load", counting)
    monkeypatch.chdir(two_campaigns)
    runner = CliRunner()

    def outputs(*extra: str) -> list[str]:
        results = [runner.invoke(main, [*command, *extra]) for command in commands]
        assert all(result.exit_code in (0, 1) and result.output for result in results), results
        return [result.output for result in results]

    uncached = outputs()
    assert len(loads) == 6 * len(list((two_campaigns / "runs").glob("*/*/run.json")))
    assert not (two_campaigns / "build").exists()  # never built: nothing written
    render(RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns))
    analysis = two_campaigns / "build" / "cache" / "analysis.pickle"
    built = analysis_entries(analysis)
    loads.clear()
    assert outputs() == uncached
    assert loads == []  # every record from the build's cache
    assert analysis_entries(analysis) == built  # every comparison, check and statistic too
    from sparkreport.cache import AnalysisCache

    found: list[str] = []
    get = AnalysisCache.get

    def hits(self: AnalysisCache, kind: str, key: str) -> Any:
        value = get(self, kind, key)
        found.extend([kind] if value is not None else [])
        return value

    monkeypatch.setattr(AnalysisCache, "get", hits)
    assert runner.invoke(main, ["check"]).output == uncached[3]
    campaigns = [p for p in (two_campaigns / "runs").iterdir() if p.is_dir()]
    assert found.count("check") == len(campaigns) > 1  # each campaign's findings from the build's cache
    assert runner.invoke(main, ["stats", "--metric", "output_throughput_tok_s"]).exit_code == 0
    kept = analysis_entries(analysis)  # a command's own options: added, the build's entries kept
    assert all(kept[kind] > keys for kind, keys in built.items() if kind == "arm_stats")
    assert all(kept[kind] >= keys for kind, keys in built.items())
    change_one_run(two_campaigns / "runs")
    cached = outputs()
    assert [Path(p).parent.name.startswith("deepseek-container-iter01") for p in loads] == [True]
    records = two_campaigns / "build" / "cache" / "records"
    stamps = [p.stat().st_mtime_ns for p in sorted(records.iterdir())]
    shutil.copytree(two_campaigns / "runs", tmp_path / "elsewhere")
    loads.clear()
    assert outputs("--runs-dir", str(tmp_path / "elsewhere")) == cached  # another store: read as it is
    assert len(loads) == 6 * len(list((tmp_path / "elsewhere").glob("*/*/run.json")))
    assert [p.stat().st_mtime_ns for p in sorted(records.iterdir())] == stamps


def test_a_serve_session_lists_the_runs_rows_of_a_changed_campaign_only(
        two_campaigns: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` renders in a session, which walks the store once for its own key and the Runs
    rows' cache: a run added lists that campaign's rows again, not every campaign's."""
    from sparkreport.render import RenderSession

    listed = count_listed(monkeypatch)
    session = RenderSession(RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns))
    session.render()
    assert {"phase1", "phase1-published"} <= set(listed)
    listed.clear()
    change_one_run(two_campaigns / "runs")
    session.render()
    assert set(listed) == {"phase1"}


def test_a_serve_session_lists_again_only_the_folders_that_changed_and_checks_names_by_the_kept_index(
        two_campaigns: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session's render after a run is added or removed walks the store from its last walk
    (the folders whose stat did not change are not listed again) and checks its posts' bindings
    against the name index the last render left (no run.json stat-ed for it), as a build does;
    a binding the kept index cannot vouch for is checked against the store itself, and refused
    with the store's own message."""
    import shutil

    import sparkreport.cache
    import sparkreport.early
    from sparkreport.render import RenderSession

    monkeypatch.setattr(sparkreport.cache, "RACY_NS", 0)  # (the folders were made just now)
    posts = two_campaigns / "docs" / "blog" / "posts"
    posts.mkdir(parents=True)
    post = posts / "p.md"
    post.write_text('# P\n\n{{ value("output_throughput_tok_s", campaign="phase1", model="deepseek", '
                    'environment="native") }}\n', encoding="utf-8")
    listed: list[str] = []
    indexed: list[Path] = []
    list_folder, run_json_files = sparkreport.cache._listed, sparkreport.early._run_json_files

    def listing(folder: str) -> tuple[tuple[str, ...], str]:
        if Path(folder).is_relative_to(two_campaigns / "runs"):  # (not the package's own walk)
            listed.append(Path(folder).relative_to(two_campaigns / "runs").as_posix())
        return list_folder(folder)

    def indexing(runs_dir: Path) -> Any:
        indexed.append(runs_dir)
        return run_json_files(runs_dir)

    monkeypatch.setattr(sparkreport.cache, "_listed", listing)
    monkeypatch.setattr(sparkreport.early, "_run_json_files", indexing)
    session = RenderSession(RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns))
    session.render()
    assert len(listed) > 10 and len(indexed) == 1  # every folder; the store's names, then kept
    listed.clear(), indexed.clear()
    gone = next((two_campaigns / "runs" / "phase1").glob("deepseek-container-iter01*"))
    shutil.rmtree(gone)
    second = session.render()
    assert listed == ["phase1"] and indexed == []
    assert "results/deepseek/index.md" in second.rendered_pages
    post.write_text('# P\n\n{{ value("output_throughput_tok_s", model="nosuchmodel") }}\n', encoding="utf-8")
    with pytest.raises(BuildError, match=r"docs/blog/posts/p\.md:3: .* has model='nosuchmodel' — model values "
                                         r"here: deepseek, gpt120b, qwen72b, unnamed$"):
        session.render()
    assert len(indexed) == 1  # failed against the kept index: checked against the store before refused


def test_the_published_files_are_read_again_only_for_a_campaign_whose_files_changed(
        two_campaigns: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a build starts publishing (every run.json's listed files, read from the store) is kept
    per campaign folder by the walk's digest of it: an unchanged campaign's run.json files are not
    read again, a changed one's are, one holding a symbolic link or naming another campaign's file
    always is; the list is the uncached one every time."""
    from sparkreport.cache import RecordCache, walk_store
    from sparkreport.render import runs_index
    from sparkreport.render.runs_index import RunsPage

    read: list[str] = []
    listed_files = runs_index._listed_files

    def counting(store: object, path: str) -> tuple[list[str], list[str]]:
        read.append(Path(path).parent.parent.name)
        return listed_files(store, path)  # type: ignore[arg-type]

    runs = two_campaigns / "runs"
    cache_dir = tmp_path / "store-files"

    def store_files() -> list[tuple[str, str]]:
        monkeypatch.setattr(runs_index, "_listed_files", counting)
        listed = RunsPage.store_files(runs, walk_store(runs).folders, RecordCache(cache_dir, salt="s"))
        monkeypatch.setattr(runs_index, "_listed_files", listed_files)
        assert listed == RunsPage.store_files(runs)  # what an uncached read lists
        return listed

    first = store_files()
    campaigns = {p.name for p in runs.iterdir() if p.is_dir()}
    assert set(read) == campaigns and {"phase1", "phase1-published"} <= campaigns
    read.clear()
    assert store_files() == first and read == []
    run = sorted(p for p in (runs / "phase1").iterdir() if (p / "record.json").is_file())[0]
    (run / "record.json").unlink()  # a raw file gone, its run.json unchanged
    assert len(store_files()) == len(first) - 1
    assert set(read) == {"phase1"}
    read.clear()
    read_every_time_while_linked_or_reaching_out(runs, run, store_files, read)
    listed = store_files()
    read.clear()
    assert "phase1-published/notes.txt" in {store for _site, store in listed}
    (runs / "phase1-published" / "notes.txt").write_text("changed\n", encoding="utf-8")
    store_files()  # the named file changed in the other folder: read again, not taken from the cache
    assert "phase1" in read


def test_the_monitoring_charts_are_drawn_again_only_when_their_samples_changed(
        two_campaigns: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small store's one Runs page draws every sampled run's chart; rendered again for a new
    run elsewhere, it draws none (each chart is kept by its samples.csv's sha256); a changed
    samples.csv is drawn again, a chart no run draws any more is removed, and the pages are a
    cold render's byte for byte."""
    from sparkreport.parallel import JOBS_ENV
    from sparkreport.render import runs_index

    monkeypatch.setenv(JOBS_ENV, "1")  # the charts are counted in this process
    runs = two_campaigns / "runs"
    sampled = sorted(p for p in (runs / "phase1").iterdir() if (p / "run.json").is_file())[:2]

    def write_samples(run: Path, level: int) -> None:
        rows = "".join(f"{t / 10},{level + t % 7},{40 + t % 3},{t % 100}\n" for t in range(600))
        (run / "samples.csv").write_text("elapsed_s,power_draw_w,temperature_gpu_c,utilization_gpu_pct\n" + rows,
                                         encoding="utf-8")

    for level, run in enumerate(sampled):
        write_samples(run, 50 + level)
        record = json.loads((run / "run.json").read_text(encoding="utf-8"))
        record["provenance"]["tables"] = ["samples"]
        (run / "run.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    drawn: list[str] = []
    draw = runs_index.samples_chart

    def counting(path: Path, **kwargs: str) -> object:
        drawn.append(path.parent.name)
        return draw(path, **kwargs)

    monkeypatch.setattr(runs_index, "samples_chart", counting)
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    render(options)
    assert sorted(drawn) == [run.name for run in sampled]
    kept = two_campaigns / "build" / "cache" / runs_index.SAMPLE_CHARTS_CACHE
    assert len(list(kept.iterdir())) == 2
    drawn.clear()
    change_one_run(runs)  # another run: the Runs page is rendered again, its charts are kept
    second = render(options)
    assert "runs/index.md" in second.rendered_pages and drawn == []
    write_samples(sampled[0], 70)
    render(options)
    assert drawn == [sampled[0].name]
    assert len(list(kept.iterdir())) == 2  # the old chart of that run removed
    drawn.clear()
    (sampled[1] / "samples.csv").unlink()
    record = json.loads((sampled[1] / "run.json").read_text(encoding="utf-8"))
    record["provenance"]["tables"] = []
    (sampled[1] / "run.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    result = render(options)
    assert drawn == [] and len(list(kept.iterdir())) == 1
    cold = render(RenderOptions(runs_dir=runs, project_root=two_campaigns, docs_dir=tmp_path / "cold" / "docs"))
    assert tree(result.docs_dir) == tree(cold.docs_dir)


def test_the_templates_includes_are_kept_between_renders(
        two_campaigns: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page's key covers its template and every template that one includes; the includes are
    found by parsing each template, once: a later render reads them from the build cache. A
    template edited to include another is parsed again, and its pages follow the new include."""
    import jinja2


    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    render(options)
    parsed: list[str] = []
    parse = jinja2.Environment.parse

    def counting(self: jinja2.Environment, source: str, *args: object, **kwargs: object) -> object:
        parsed.append(source[:40])
        return parse(self, source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jinja2.Environment, "parse", counting)
    change_one_run(two_campaigns / "runs")
    assert render(options).rendered_pages and parsed == []
    templates = two_campaigns / "templates"
    templates.mkdir()
    (templates / "_extra.md").write_text("Extra words.\n", encoding="utf-8")
    override_template(two_campaigns, "memory.md", '{% include "_extra.md" %}')
    second = render(options)
    assert len(parsed) == 2  # the edited template and its new include
    assert second.rendered_pages == ["memory/index.md"]
    (templates / "_extra.md").write_text("Other words.\n", encoding="utf-8")
    third = render(options)  # an edit of the include alone re-renders the page that includes it
    assert third.rendered_pages == ["memory/index.md"]
    assert "Other words." in (third.docs_dir / "memory" / "index.md").read_text(encoding="utf-8")


def test_template_and_config_changes_render_their_pages(two_campaigns: Path) -> None:
    from sparkreport.render.markdown import PACKAGE_TEMPLATES

    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    first = render(options)
    models = sorted(p for p in first.rendered_pages if p.startswith("results/") and p != "results/index.md")
    assert len(models) == 4  # three Phase 1 models and the published figures' one
    templates = override_template(two_campaigns, "results.md", "Overridden.").parent
    second = render(options)
    assert sorted(second.rendered_pages) == models  # only the pages of that template
    assert "Overridden." in (first.docs_dir / models[0]).read_text(encoding="utf-8")
    # a template every page includes (the footer): every page
    (templates / "_footer.md").write_text((PACKAGE_TEMPLATES / "_footer.md").read_text(encoding="utf-8") + "\nx\n",
                                          encoding="utf-8")
    assert render(options).skipped_pages == []
    (two_campaigns / "sparkreport.yml").write_text("title: Another title\n", encoding="utf-8")
    third = render(options)
    assert third.skipped_pages == [] and len(third.rendered_pages) == len(third.pages)


def test_the_downloads_written_ahead_are_dropped_when_their_page_is_kept(two_campaigns: Path) -> None:
    """A render writes the Downloads page's files in a forked process while it analyses and plans
    (DownloadsAhead, beside the staging folder). When the page is kept (another page's template
    changed), what that process wrote is removed, and the kept files are left as they were; a
    render that fails leaves nothing of it either."""

    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    first = render(options)
    downloads = first.docs_dir / "downloads"
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in downloads.iterdir()}
    assert {"dataset.csv", "dataset.parquet", "dataset.json"} <= set(before)
    templates = override_template(two_campaigns, "results.md", "Overridden.").parent
    second = render(options)
    assert "downloads/index.md" in second.skipped_pages
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in downloads.iterdir()} == before
    assert sorted(p.name for p in first.docs_dir.parent.iterdir() if "downloads" in p.name) == []
    (templates / "results.md").write_text("{% extends '_base.md' %}{% block body %}{{ nope( }}{% endblock %}\n",
                                          encoding="utf-8")
    (two_campaigns / "sparkreport.yml").write_text("title: Another title\n", encoding="utf-8")  # every page again
    with pytest.raises(BuildError, match="template error"):
        render(options)
    assert sorted(p.name for p in first.docs_dir.parent.iterdir() if "downloads" in p.name) == []
    assert {p.name: p.read_bytes() for p in downloads.iterdir()} == {k: v for k, (v, _t) in before.items()}


def test_a_deleted_generated_file_is_written_again(two_campaigns: Path) -> None:
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    first = render(options)
    chart = first.docs_dir / "results" / "qwen72b" / "charts" / "output_throughput_tok_s-means.vl.json"
    before = chart.read_bytes()
    chart.unlink()
    (first.docs_dir / "downloads" / "dataset.csv").unlink()
    second = render(options)
    assert sorted(second.rendered_pages) == ["downloads/index.md", "results/qwen72b/index.md"]
    assert chart.read_bytes() == before
    assert (first.docs_dir / "downloads" / "dataset.csv").is_file()


def test_a_failed_render_keeps_the_last_good_docs(two_campaigns: Path) -> None:
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    first = render(options)
    before = tree(first.docs_dir)
    templates = two_campaigns / "templates"
    templates.mkdir()
    (templates / "results.md").write_text("{% extends '_base.md' %}{% block body %}{{ nope( }}{% endblock %}\n",
                                          encoding="utf-8")
    with pytest.raises(BuildError, match="template error"):
        render(options)
    assert tree(first.docs_dir) == before
    (templates / "results.md").unlink()
    assert render(options).rendered_pages == []  # the cache still describes the docs folder


def test_a_label_key_new_to_the_store_renders_only_the_pages_of_its_run(two_campaigns: Path, tmp_path: Path) -> None:
    """A label key that one run brings adds a column to the runs table that is empty in every
    other campaign and model: their pages are not rendered again (their slices of the table
    are digested over the columns that hold a value there), and the docs are byte for byte
    those of a cold render."""
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    render(options)
    path = next((two_campaigns / "runs" / "phase1").glob("deepseek-container-iter01*")) / "run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.setdefault("labels", {})["operator_note"] = "rerun after a reboot"
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    second = render(options)
    assert "results/deepseek/index.md" in second.rendered_pages
    assert "campaigns/phase1/index.md" in second.rendered_pages
    assert "results/qwen72b/index.md" in second.skipped_pages
    assert "campaigns/phase1-published/index.md" in second.skipped_pages
    cold = render(RenderOptions(runs_dir=two_campaigns / "runs", project_root=two_campaigns,
                                docs_dir=tmp_path / "cold" / "docs"))
    assert tree(second.docs_dir) == tree(cold.docs_dir)


def test_an_environment_new_to_the_store_recolours_the_pages_that_draw_it(two_campaigns: Path,
                                                                         tmp_path: Path) -> None:
    """The charts draw an environment in its colour on the site (the baseline first, then the
    others by name): an environment new to the store, named before `container`, moves
    `container`'s colour on Results and campaign pages whose runs did not change — they are
    rendered again, and the docs are byte for byte those of a cold render."""
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    first = render(options)
    means = "results/deepseek/charts/output_throughput_tok_s-means.vl.json"
    before = (first.docs_dir / means).read_text(encoding="utf-8")
    for path in (two_campaigns / "runs" / "unified-memory-post").glob("*-container-*/run.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["environment"]["name"] = "chroot"
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    second = render(options)
    assert {"results/deepseek/index.md", "campaigns/phase1/index.md"} <= set(second.rendered_pages)
    assert (second.docs_dir / means).read_text(encoding="utf-8") != before
    cold = render(RenderOptions(runs_dir=two_campaigns / "runs", project_root=two_campaigns,
                                docs_dir=tmp_path / "cold" / "docs"))
    assert tree(second.docs_dir) == tree(cold.docs_dir)


def test_a_slice_digest_covers_the_columns_that_hold_a_value_in_it() -> None:
    """What a page's key reads of a table: a column empty in its rows (a label key only another
    campaign's run has) leaves it as it was; a value, a dtype or a column that holds a value
    there changes it; cells pandas cannot hash (lists) are hashed by their text."""
    from types import SimpleNamespace

    import pandas as pd

    from sparkreport.render.report import slice_digest

    def digests(frame: pd.DataFrame) -> tuple[str, str]:
        site = SimpleNamespace(extra={}, wholes={}, stats=frame)
        return slice_digest(site, "stats", "campaign", "a"), slice_digest(site, "stats", "campaign", "b")  # type: ignore[arg-type]

    base = pd.DataFrame({"campaign": ["a", "a", "b"], "files": [["x"], ["y"], ["z"]], "value": [1.0, 2.0, 3.0]})
    a, b = digests(base)
    assert a != b and len(a) == 64
    a2, b2 = digests(base.assign(**{"label.note": [None, None, "rerun"]}))
    assert a2 == a and b2 != b  # the new column holds a value in b's rows only
    assert digests(base.assign(value=[1.0, 2.5, 3.0]))[0] != a  # a value
    assert digests(base.assign(value=["1.0", "2.0", "3.0"]))[0] != a  # a dtype
    assert digests(base.assign(files=[["x"], ["w"], ["z"]]))[0] != a  # a list cell
    assert digests(base.assign(**{"label.note": ["x", None, None]}))[0] != a  # a column with a value in a
    assert slice_digest(SimpleNamespace(extra={}, wholes={}, stats=base), "stats", "campaign", "c") == "none"  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]),
                                 st.one_of(st.none(), st.floats(allow_nan=False, width=32)),
                                 st.one_of(st.none(), st.sampled_from(["x", "y", ""]))), min_size=1, max_size=12),
       where=st.integers(min_value=0, max_value=11))
def test_slice_digests_follow_exactly_the_rows_of_their_group(values: list[tuple[str, float | None, str | None]],
                                                              where: int) -> None:
    """For any table: a column that holds no value (in any row) leaves every digest as it was; a
    cell changed (a missing value made 0.0, which pandas hashes as 0, too), or its group's rows in
    another order, changes that group's digest and no other's."""
    from types import SimpleNamespace

    import pandas as pd

    from sparkreport.render.report import slice_digest

    def digests(frame: pd.DataFrame) -> dict[str, str]:
        site = SimpleNamespace(extra={}, wholes={}, stats=frame)
        return {name: slice_digest(site, "stats", "campaign", name) for name in ("a", "b", "c")}  # type: ignore[arg-type]

    base = pd.DataFrame(values, columns=["campaign", "value", "note"]).astype(
        {"value": "Float64", "note": "string"})
    first = digests(base)
    assert digests(base.assign(**{"label.empty": pd.array([None] * len(base), dtype="string")})) == first
    row = where % len(base)
    group = str(base.loc[row, "campaign"])
    changed = base.copy()
    old = changed.loc[row, "value"]
    changed.loc[row, "value"] = 0.0 if pd.isna(old) else (None if old == 0 else -old)
    after = digests(changed)
    assert after[group] != first[group]
    assert {name: digest for name, digest in after.items() if name != group} == \
        {name: digest for name, digest in first.items() if name != group}
    rows = [i for i in range(len(base)) if base.loc[i, "campaign"] == group]
    swapped = base.iloc[[*rows[::-1], *(i for i in range(len(base)) if i not in rows)]].reset_index(drop=True)
    shown = [tuple(map(repr, base.iloc[i, 1:])) for i in rows]
    assert (digests(swapped)[group] != first[group]) == (shown != shown[::-1])  # (the same rows in the same order)


@settings(max_examples=80, deadline=None)
@given(floats=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=9),
       integers=st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), min_size=1, max_size=9))
def test_numbers_are_hashed_as_pandas_hashes_each_column(floats: list[float], integers: list[int]) -> None:
    """The table hashes' pass over numpy's numbers and booleans (a dtype at a time) gives each
    column the hashes ``pd.util.hash_pandas_object`` gives it alone — NaN, -0.0 and infinities
    included —, so the pages' keys did not change with it."""
    import numpy as np
    import pandas as pd

    from sparkreport.render.report import hash_numbers, numpy_hashable

    n = min(len(floats), len(integers))
    columns = {"f": [*floats[:n - 1], -0.0][-n:], "g": [float("nan")] * n, "i": integers[:n],
               "b": [value > 0 for value in integers[:n]], "u": [abs(value) for value in integers[:n]]}
    frame = pd.DataFrame(columns).astype({"u": "uint64"})
    for dtype in {frame[name].dtype for name in frame}:
        assert numpy_hashable(dtype)
        names = [name for name in frame if frame[name].dtype == dtype]
        stacked = hash_numbers(np.column_stack([frame[name].to_numpy(dtype=dtype) for name in names]))
        for j, name in enumerate(names):
            assert np.array_equal(stacked[:, j], pd.util.hash_pandas_object(frame[name], index=False).to_numpy())
    assert not numpy_hashable(pd.Float64Dtype()) and not numpy_hashable(np.dtype("float32"))


@pytest.mark.parametrize("dtype", ["float64", "Float64"])
def test_a_negative_zero_changes_its_slices_digest(dtype: str) -> None:
    """pandas hashes -0.0 as 0.0, but a page shows the sign: a cell that turns from 0.0 to -0.0
    changes its group's digest (numpy's floats and pandas' own alike), and no other group's."""
    from types import SimpleNamespace

    import pandas as pd

    from sparkreport.render.report import slice_digest

    def digests(values: list[float]) -> dict[str, str]:
        frame = pd.DataFrame({"campaign": ["a", "b"], "value": values}).astype({"value": dtype})
        site = SimpleNamespace(extra={}, wholes={}, stats=frame)
        return {name: slice_digest(site, "stats", "campaign", name) for name in ("a", "b")}  # type: ignore[arg-type]

    before, after = digests([0.0, 1.5]), digests([-0.0, 1.5])
    assert before["a"] != after["a"] and before["b"] == after["b"]


def test_a_slice_of_the_runs_table_follows_its_runs_their_folders_and_what_is_included(
        tmp_path: Path, phase1_store: Path) -> None:
    """A page's key for its rows of the runs table (``slice_digest``, made from each row's run —
    its run.json's digest, its folder, whether it is included and why not — and the heads of the
    columns holding a value there, instead of every cell) changes with a run of the campaign, a
    folder's name, a column that gains a value, and which runs the statistics use — and not
    with another campaign's run."""
    import shutil

    from sparkreport.config import AnalysisOptions, ProjectConfig
    from sparkreport.dataset import load_dataset
    from sparkreport.render.context import build_site_data
    from sparkreport.render.report import slice_digest

    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    put_campaign(runs, "phase1b", sorted((runs / "phase1").glob("*/run.json")), list(range(6)))

    def digests(**analysis: Any) -> dict[str, str]:
        site = build_site_data(load_dataset(runs), ProjectConfig(analysis=AnalysisOptions(**analysis)), runs,
                               "test", tmp_path, commit="test")
        by_model = {f"{campaign}/{model}": slice_digest(site, "runs", ("model", "campaign"), (model, campaign))
                    for campaign in ("phase1", "phase1b") for model in sorted(set(site.runs["model"].astype(str)))}
        return {**by_model, **{name: slice_digest(site, "runs", "campaign", name)
                               for name in ("phase1", "phase1b", "no-such")}}

    def edit(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
        data = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        change(data)
        (folder / "run.json").write_text(json.dumps(data), encoding="utf-8")

    first = digests()
    assert len(first["phase1"]) == 64 and first["phase1"] != first["phase1b"] and first["no-such"] == "none"
    assert digests() == first
    b_runs = sorted((runs / "phase1b").iterdir())
    edit(b_runs[0], lambda data: data["metrics"].update(output_throughput_tok_s=1.0))
    changed = digests()
    assert changed["phase1"] == first["phase1"] and changed["phase1b"] != first["phase1b"]
    assert [key for key in first if first[key] != changed[key]] == [
        "phase1b/" + json.loads((b_runs[0] / "run.json").read_text(encoding="utf-8"))["model"]["name"], "phase1b"]
    b_runs[1].rename(b_runs[1].with_name(b_runs[1].name + "-moved"))  # the same run.json, another folder
    moved = digests()
    assert moved["phase1b"] != changed["phase1b"] and moved["phase1"] == first["phase1"]
    edit(b_runs[2], lambda data: data["labels"].update(note="rerun"))  # a column gains a value here
    labelled = digests()
    assert labelled["phase1b"] != moved["phase1b"]
    edit(b_runs[3], lambda data: data["status"].update(ok=False, exit_code=1))
    failed = digests()
    assert failed["phase1b"] != labelled["phase1b"]
    assert digests(include_failed=True)["phase1b"] != failed["phase1b"]  # the same runs, one more used


def test_a_session_holds_its_caches_and_renders_what_a_cold_render_does(two_campaigns: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve``'s session keeps the record and analysis caches in memory (issue 16, thirteenth
    round): after a changed run it reads no cache file, recomputes only what the run changed,
    and its pages are byte for byte those of a cold render of the same store."""
    import shutil

    import sparkreport.cache
    from sparkreport.render import RenderSession

    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    session = RenderSession(options)
    session.render()
    change_one_run(two_campaigns / "runs")

    read: list[str] = []
    load = sparkreport.cache.read_cache_pickle

    def reading(path: Path | None, *args: Any) -> Any:
        read.append(str(path))
        return load(path, *args)

    with monkeypatch.context() as patch:
        patch.setattr(sparkreport.cache, "read_cache_pickle", reading)
        second = session.render()
    assert read and not [p for p in read if "/records/" in p or p.endswith("analysis.pickle")]
    analysis = session.held.cache(sparkreport.cache.AnalysisCache, two_campaigns / "build" / "cache" / "analysis.pickle",
                                  sparkreport.cache.package_digest(sparkreport.cache.HashMemo(None)))
    assert analysis.computed and analysis.reused  # the changed run's arm and campaign only
    assert "results/deepseek/index.md" in second.rendered_pages
    assert "results/qwen72b/index.md" in second.skipped_pages
    change_one_run(two_campaigns / "runs", "qwen72b")  # another round of the held caches
    session.render()
    held = {path.relative_to(second.docs_dir): path.read_bytes()
            for path in sorted(second.docs_dir.rglob("*")) if path.is_file()}
    shutil.rmtree(two_campaigns / "build")
    cold = render(options)
    assert {path.relative_to(cold.docs_dir): path.read_bytes()
            for path in sorted(cold.docs_dir.rglob("*")) if path.is_file()} == held


def test_a_session_reuses_the_analysis_when_only_a_post_changed(two_campaigns: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import sparkreport.dataset
    import sparkreport.render.context
    from sparkreport.render import RenderSession

    posts = two_campaigns / "docs" / "blog" / "posts"
    posts.mkdir(parents=True)
    post = posts / "p.md"
    binding = '{{ value("output_throughput_tok_s", campaign="phase1", model="deepseek", environment="native") }}'
    post.write_text(f"# P\n\nFirst: {binding}.\n", encoding="utf-8")
    session = RenderSession(RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns))
    first = session.render()
    written = first.docs_dir / "blog" / "posts" / "p.md"
    assert written.read_text(encoding="utf-8").startswith("# P\n\nFirst: ")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("loaded or analysed again although only a post changed")

    with monkeypatch.context() as patch:
        patch.setattr(sparkreport.dataset, "load_dataset", refuse)
        patch.setattr(sparkreport.render.context, "build_site_data", refuse)
        post.write_text(f"# P\n\nEdited: {binding}.\n", encoding="utf-8")
        second = session.render()
    assert second.rendered_pages == [] and len(second.skipped_pages) == len(first.pages)
    assert written.read_text(encoding="utf-8").startswith("# P\n\nEdited: ")
    change_one_run(two_campaigns / "runs")  # the store changed: read and analysed again
    third = session.render()
    assert "results/deepseek/index.md" in third.rendered_pages
    assert "results/qwen72b/index.md" in third.skipped_pages


def test_a_finding_renders_only_the_pages_that_show_it(two_campaigns: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A Results page shows error-level findings (its claims and its banner) and the warnings of
    its "Read with care" box only, a Runs group page none: a new warning of another kind about a
    model's runs renders the pages that list warnings, not those; one of the box's, or an error,
    renders its Results page too. Each render equals a cold one byte for byte.
    With the Results template overridden by the project, the page is keyed by every finding."""
    import sparkreport.analysis as analysis
    from sparkreport.analysis.checks import Finding
    from sparkreport.dataset import load_dataset
    from sparkreport.render import runs_index
    from sparkreport.render.markdown import PACKAGE_TEMPLATES

    monkeypatch.setattr(runs_index, "PAGE_SIZE", 8)  # campaign pages, as in a large store
    deepseek = sorted(r.run_id for r in load_dataset(two_campaigns / "runs").records if r.model.name == "deepseek")
    planted: list[Finding] = []
    check = analysis.check
    monkeypatch.setattr(analysis, "check", lambda *a, **k: [*check(*a, **k), *planted])
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    first = render(options)
    groups = [p.path for p in first.pages if p.path.startswith("runs/phase1/") and set(p.inputs or ()) & set(deepseek)]
    assert groups and set(groups) <= set(first.rendered_pages)  # the Runs pages that list deepseek's runs

    def cold(name: str) -> dict[str, bytes]:
        return tree(render(RenderOptions(runs_dir=two_campaigns / "runs", project_root=two_campaigns,
                                         docs_dir=tmp_path / name / "docs")).docs_dir)

    planted.append(Finding("warning", "planted", "phase1/deepseek: a planted warning", runs=deepseek))
    second = render(options)
    assert "quality/index.md" in second.rendered_pages and "campaigns/phase1/index.md" in second.rendered_pages
    assert "results/deepseek/index.md" not in second.rendered_pages
    assert not set(groups) & set(second.rendered_pages)
    assert tree(second.docs_dir) == cold("warning")

    # a warning that changes what its figures mean: its "Read with care" box names it
    planted.append(Finding("warning", "high-cv", "phase1/deepseek/native: a planted variation", runs=deepseek))
    caveat = render(options)
    assert "results/deepseek/index.md" in caveat.rendered_pages
    assert "results/qwen72b/index.md" not in caveat.rendered_pages and not set(groups) & set(caveat.rendered_pages)
    assert tree(caveat.docs_dir) == cold("caveat")

    planted.append(Finding("error", "planted-error", "phase1/deepseek: a planted error", runs=deepseek))
    third = render(options)
    assert "results/deepseek/index.md" in third.rendered_pages
    assert "results/qwen72b/index.md" not in third.rendered_pages
    assert not set(groups) & set(third.rendered_pages)
    assert tree(third.docs_dir) == cold("error")

    (two_campaigns / "templates").mkdir()
    for name in ("results.md", "runs_group.md"):  # the package's own text, as a project's file
        (two_campaigns / "templates" / name).write_bytes((PACKAGE_TEMPLATES / name).read_bytes())
    render(options)
    planted.append(Finding("warning", "planted-again", "phase1/deepseek: another warning", runs=deepseek))
    fourth = render(options)
    assert "results/deepseek/index.md" in fourth.rendered_pages
    assert set(groups) <= set(fourth.rendered_pages)


def test_the_results_overview_makes_again_only_the_row_of_a_changed_model(two_campaigns: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The overview's row of each model is kept by the key of the model's page (issue 16,
    thirty-ninth round): one changed run makes its model's row again, not the others', and the
    overview reads as a render without any kept row (a copy of the project, no build cache)."""
    import shutil

    from sparkreport.render.results import ResultsPage

    monkeypatch.setenv("SPARKREPORT_JOBS", "1")  # filled here, where the calls are counted
    made: list[str] = []
    overview_row = ResultsPage.overview_row

    def counted(self: ResultsPage, site: Any, model: str, *args: Any) -> Any:
        made.append(model)
        return overview_row(self, site, model, *args)

    monkeypatch.setattr(ResultsPage, "overview_row", counted)
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    render(options)
    assert sorted(made) == ["deepseek", "gpt120b", "qwen72b", "unnamed"]
    made.clear()
    change_one_run(two_campaigns / "runs")
    second = render(options)
    assert "results/index.md" in second.rendered_pages
    assert made == ["deepseek"]
    copy = tmp_path / "copy"
    shutil.copytree(two_campaigns / "runs", copy / "runs")
    made.clear()
    cold = render(RenderOptions(runs_dir=Path("runs"), project_root=copy))
    assert sorted(made) == ["deepseek", "gpt120b", "qwen72b", "unnamed"]
    overview = (second.docs_dir / "results" / "index.md").read_text(encoding="utf-8")
    assert overview == (cold.docs_dir / "results" / "index.md").read_text(encoding="utf-8").replace(str(copy), str(two_campaigns))


def test_the_first_build_after_a_cold_one_finds_the_lists_its_publisher_kept(two_campaigns: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold build's publisher starts before the store's files are hashed, so it keeps each
    campaign's list of published files by the folder's stat digest; the next build, keyed by
    content, finds them by the stat digest its walk also gives (issue 16, thirty-ninth round):
    after one changed run it reads that run's campaign again, not every campaign."""
    from sparkreport.render import runs_index
    from sparkreport.site import build

    monkeypatch.setenv("SPARKREPORT_JOBS", "1")  # the publisher in this process, where reads are counted
    read: list[str] = []
    listed_files = runs_index._listed_files

    def counting(store: object, path: str) -> tuple[list[str], list[str]]:
        read.append(Path(path).parent.parent.name)
        return listed_files(store, path)  # type: ignore[arg-type]

    monkeypatch.setattr(runs_index, "_listed_files", counting)
    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    build(options)
    assert {"phase1", "phase1-published"} <= set(read)
    read.clear()
    change_one_run(two_campaigns / "runs")
    build(options)
    assert set(read) == {"phase1"}
    read.clear()
    change_one_run(two_campaigns / "runs")
    build(options)  # kept by content now
    assert set(read) == {"phase1"}


def test_a_serve_session_leaves_the_campaigns_kept_as_a_build_walked_them(two_campaigns: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A build keeps each campaign's shard with its folder's digest by content; a ``serve``
    session's own walk digests folders by stat, so its renders neither take a campaign by it nor
    write the shards' heads again: the next build still takes every unchanged campaign as its
    shard was kept (none of its run.json digests looked up)."""
    from sparkreport.cache import HashMemo, RecordCache
    from sparkreport.render import RenderSession
    from sparkreport.site import build

    options = RenderOptions(runs_dir=Path("runs"), project_root=two_campaigns)
    build(options)
    heads: list[str] = []
    put_head = RecordCache.put_head
    monkeypatch.setattr(RecordCache, "put_head", lambda self, shard, head: heads.append(shard) or put_head(
        self, shard, head))
    change_one_run(two_campaigns / "runs")
    RenderSession(options).render()
    assert heads == []
    asked: list[str] = []
    digests = HashMemo.digests

    def counted(self: HashMemo, folder: Path, files: list[tuple[str, object]]) -> list[str]:
        asked.extend(Path(path).parent.parent.name for path, _stat in files)
        return digests(self, folder, files)  # type: ignore[arg-type]

    monkeypatch.setattr(HashMemo, "digests", counted)
    change_one_run(two_campaigns / "runs", "qwen72b-native-iter01")
    build(options)
    assert heads == [] and "phase1-published" not in asked and "phase1" in asked
