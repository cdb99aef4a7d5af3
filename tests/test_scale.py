"""Scale: the synthetic campaign ingests cleanly; Runs pages are grouped and paginated; LTTB."""

from __future__ import annotations

import importlib.util
import os
import posixpath
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sparkreport.dataset import load_dataset
from sparkreport.lttb import lttb, lttb_indices
from sparkreport.render import RenderOptions, render, runs_index
from sparkreport.render.pages import fill

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _bench_module(name: str) -> Any:
    """bench/NAME.py, imported as the module ``bench_NAME``."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"bench_{name}"] = module
    spec.loader.exec_module(module)
    return module


def _synth() -> Any:
    return _bench_module("synth")


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    synth = _synth()
    root = tmp_path_factory.mktemp("synth")
    options = synth.SynthOptions(runs=60, sampled=2, sample_hours=0.02, models=4, iterations=5,
                                 vllm_fraction=0.25, seed=7)
    synth.generate(root / "sources", options)
    totals = synth.ingest_campaign(root / "sources", root / "project" / "runs")
    assert totals == {"added": 60, "skipped": 0, "rejected": 0, "files": 60}
    (root / "project" / "sparkreport.yml").write_text((root / "sources" / "sparkreport.yml").read_text())
    return root / "sources", root / "project"


def test_generator_is_seeded(tmp_path: Path) -> None:
    synth = _synth()
    options = synth.SynthOptions(runs=12, sampled=1, sample_hours=0.001, models=2, iterations=3, seed=3)
    synth.generate(tmp_path / "a", options)
    synth.generate(tmp_path / "b", options)
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files_a)
    assert sum(1 for f in files_a if f.name.endswith(".nvidia-smi.csv")) == 1


def test_synthetic_runs_carry_their_labels_formats_and_samples(campaign: tuple[Path, Path]) -> None:
    _sources, project = campaign
    ds = load_dataset(project / "runs")
    assert len(ds.runs) == 60
    assert set(ds.runs["label.env"]) == {"native", "docker"}
    assert (ds.runs["environment"] == ds.runs["label.env"]).all()  # ingested with --environment
    assert set(ds.runs["source_format"]) == {"trtllm-log", "vllm-json"}
    assert ds.runs["output_throughput_tok_s"].notna().all()
    sampled = [r for r in ds.records if "samples" in r.provenance.tables]
    assert len(sampled) == 2
    assert all(r.metrics.get("start_temp_c") is not None for r in sampled)


def test_runs_pages_are_grouped_and_paginated(campaign: tuple[Path, Path], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A large store: the Runs index lists each campaign × model × environment group, linked to its
    section on its campaign's pages (at most PAGE_SIZE rows a page; a group cut by a page break is
    "continued" on the next)."""
    _sources, project = campaign
    monkeypatch.setattr(runs_index, "PAGE_SIZE", 4)
    result = render(RenderOptions(runs_dir=project / "runs", project_root=project,
                                  docs_dir=tmp_path / "out" / "docs"))
    runs_docs = [p for p in result.pages if p.path.startswith("runs/")]
    pages = [p for p in runs_docs if p.path != "runs/index.md"]
    assert pages, "a store larger than a page gets campaign pages"
    for doc in pages:
        fill(doc)  # a page filled in a worker brings back its files and charts, not its context
    rows = [[e for section in p.context["sections"] for e in section["entries"]] for p in pages]
    assert all(len(entries) <= 4 for entries in rows) and max(len(entries) for entries in rows) == 4
    listed = sorted(e["run_id"] for entries in rows for e in entries)
    assert listed == sorted(r.run_id for r in load_dataset(project / "runs").records)
    campaigns = sorted({p.path.split("/")[1] for p in pages})
    assert campaigns == ["synth-1.0.0", "synth-1.0.1"]  # a campaign's pages: index.md, page-2/ …
    assert {p.path for p in pages} >= {"runs/synth-1.0.0/index.md", "runs/synth-1.0.0/page-2/index.md"}
    assert dict(result.nav)["Runs"] == "runs/index.md"  # only the index in the nav
    index = (result.docs_dir / "runs" / "index.md").read_text(encoding="utf-8")
    # the index: a row per campaign (models, environments, records, failed, in statistics, with
    # samples, pages), linked to its first page
    assert ("| [synth-1.0.0](synth-1.0.0/index.md) | 4 | 2 | 40 | 0 | 40 | 0 | 10 |\n"
            "| [synth-1.0.1](synth-1.0.1/index.md) | 2 | 2 | 20 | 0 | 20 | 2 | 5 |\n") in index
    sections = [(p, section) for p in pages for section in p.context["sections"]]
    first = [(p, section) for p, section in sections if not section["continued"]]
    groups = {(p.context["campaign"], s["model_name"], s["environment"]) for p, s in sections}
    assert len(first) == len(groups)  # each group starts once
    for doc, section in first:  # a campaign's first page links each group to where it starts
        opening = (result.docs_dir / "runs" / doc.context["campaign"] / "index.md").read_text(encoding="utf-8")
        where = "" if doc.path.endswith(f"{doc.context['campaign']}/index.md") else doc.path.split("/")[2] + "/index.md"
        assert f"]({where}#{section['anchor']}) | {section['environment']} |" in opening
    assert all(p.context["groups"] is None for p in pages if "/page-" in p.path)  # only the first page
    for doc in pages:
        text = (result.docs_dir / doc.path).read_text(encoding="utf-8")
        for section in doc.context["sections"]:
            assert f'## <a id="{section["anchor"]}"></a>' in text
            for entry in section["entries"]:
                for link in entry["files"]:  # published from the run store by the site build
                    published = posixpath.normpath(posixpath.join(doc.folder, unquote(link["href"])))
                    assert (project / "runs" / published.removeprefix("runs/files/")).is_file(), link
        assert "all runs" in text
        assert text.startswith("---\nsearch:\n  exclude: true\n---\n")  # out of the search index
    assert any(section["continued"] for _p, section in sections)
    charts = [c for p in pages for c in p.charts]
    assert len(charts) == 2  # one monitoring chart per sampled run
    for chart in charts:
        series = {row["series"] for row in chart.spec["data"]["values"]}
        assert series == {"Power draw (W)", "GPU temperature (°C)", "GPU utilisation (%)"}
        assert chart.rows <= 3 * runs_index.SAMPLE_POINTS


def test_a_fresh_checkout_redraws_no_monitoring_chart(campaign: tuple[Path, Path], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A group page that draws a samples.csv is keyed by its content (the build's hash memo), not
    its mtime: a CI runner's fresh checkout, where every file is new, renders none of them again."""
    import shutil

    _sources, original = campaign
    project = tmp_path / "project"
    shutil.copytree(original, project)
    monkeypatch.setattr(runs_index, "PAGE_SIZE", 4)
    options = RenderOptions(runs_dir=project / "runs", project_root=project, docs_dir=project / "build" / "docs")
    first = render(options)
    drawn = {p.path for p in first.pages if p.charts and p.path.startswith("runs/")}
    assert len(drawn) == 2
    fresh = project / "runs.new"
    shutil.copytree(project / "runs", fresh, copy_function=shutil.copyfile)  # new files, new mtimes
    shutil.rmtree(project / "runs")
    fresh.rename(project / "runs")
    again = render(options)
    assert drawn <= set(again.skipped_pages)
    assert not [p for p in again.rendered_pages if p.startswith("runs/")]


def test_every_page_stays_small(campaign: tuple[Path, Path], tmp_path: Path) -> None:
    _sources, project = campaign
    result = render(RenderOptions(runs_dir=project / "runs", project_root=project,
                                  docs_dir=tmp_path / "out" / "docs"))
    sizes = {p.path: (result.docs_dir / p.path).stat().st_size for p in result.pages}
    assert max(sizes.values()) < 1.5 * 2**20
    # 60 source files: Methodology counts them per campaign and format, saying once where each is
    sources = (result.docs_dir / "methodology" / "index.md").read_text(encoding="utf-8").split("## Data sources")[1]
    lead, table = sources.strip().split("\n\n")[:2]
    assert lead == ("60 source files, counted here per campaign and format; each is named, with\n"
                    "its sha256, beside its run on [Runs](../runs/index.md).")
    rows = table.splitlines()
    assert rows[0] == "| Campaign | Format | Files | Records |"
    assert sum(int(row.split("|")[3]) for row in rows[2:]) == 60
    assert "listed with its run" not in sources


def test_lttb_keeps_ends_peaks_and_order() -> None:
    x = np.arange(36_000, dtype=float)
    y = np.sin(x / 900.0)
    y[12_345] = 40.0
    keep = lttb_indices(x, y, 400)
    assert len(keep) == 400
    assert keep[0] == 0 and keep[-1] == 35_999
    assert np.all(np.diff(keep) > 0)
    assert 12_345 in keep


def test_lttb_short_series_and_gaps() -> None:
    xs, ys = lttb([0, 1, 2], [5, 6, 7], 10)
    assert list(xs) == [0, 1, 2] and list(ys) == [5, 6, 7]
    y = np.arange(1000, dtype=float)
    y[10:20] = np.nan
    keep = lttb_indices(np.arange(1000.0), y, 50)
    assert len(keep) == 50 and np.isfinite(y[keep]).all()
    with pytest.raises(ValueError):
        lttb_indices([0, 1, 2, 3], [0, 1, 2, 3], 2)


def test_methodology_summarises_many_sources_and_varying_settings() -> None:
    from sparkreport.render.builtin import MAX_SOURCES_LISTED, summarise_sources
    from sparkreport.render.tables import _distinct_text

    many = [{"campaign": "c", "path": f"/d/run{i}.log", "format": "trtllm-log", "sha256": f"{i:064x}",
             "records": 1, "notes": ["n"]} for i in range(MAX_SOURCES_LISTED + 1)]
    rows = summarise_sources(many)
    assert rows == [{"campaign": "c", "format": "trtllm-log", "sha256": None, "records": 51, "notes": ["n"],
                     "files": 51}]
    assert summarise_sources(many[:3]) == many[:3]
    assert _distinct_text(["1", "2", "3"]) == "1 / 2 / 3"
    assert _distinct_text([str(v) for v in range(10)]) == "10 distinct values, 0–9"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c-1", "c"]), st.integers(0, 90),
                          st.sampled_from(["trtllm-log", "vllm-json"])), max_size=260))
@example([("a", i, "trtllm-log" if i % 3 else "vllm-json") for i in range(60)] + [("b", i, "vllm-json") for i in range(5)])
@example([("c", i, "vllm-json") for i in range(30)] + [("c-1", i, "trtllm-log") for i in range(20)])
def test_the_sources_table_kept_per_campaign_is_the_one_made_at_once(
        files: list[tuple[str, int, str]]) -> None:
    """Methodology's sources table from each campaign's share (kept per campaign, grouped when a
    campaign alone passes the limit) equals the table made from every campaign's files at once,
    on either side of the limit."""
    from sparkreport.render.builtin import campaign_sources, sources_table, summarise_sources
    from sparkreport.schema import Provenance, RunRecord

    records = [RunRecord(run_id=f"r{i}", campaign=campaign,
                         provenance=Provenance(source_path=f"/d/{campaign}/{number}.log", format=kind,
                                               source_sha256=f"{campaign}-{number}"))
               for i, (campaign, number, kind) in enumerate(files)]
    by_campaign: dict[str, list[RunRecord]] = {}
    for record in records:
        by_campaign.setdefault(record.campaign, []).append(record)
    parts = [campaign_sources(members) for members in by_campaign.values()]
    at_once: list[dict[str, object]] = []
    for members in by_campaign.values():  # every file of every campaign, ungrouped
        seen: dict[str, dict[str, object]] = {}
        for record in members:
            row = seen.setdefault(record.provenance.source_sha256 or "", {
                "campaign": record.campaign, "path": record.provenance.source_path,
                "sha256": record.provenance.source_sha256, "format": record.provenance.format,
                "records": 0, "notes": []})
            row["records"] += 1  # type: ignore[operator]
        at_once += seen.values()
    assert sources_table(parts) == summarise_sources(at_once)


def test_a_site_with_sampled_runs_builds_strictly_with_every_run_file(campaign: tuple[Path, Path],
                                                                     tmp_path: Path) -> None:
    from sparkreport.site import build

    _sources, project = campaign
    result = build(RenderOptions(runs_dir=project / "runs", project_root=project,
                                 docs_dir=tmp_path / "out" / "docs"), tmp_path / "site", strict=True)
    pages = [p for p in result.render.pages if p.path.startswith("runs/") and p.charts]
    assert pages, "the sampled runs are drawn on their Runs pages"
    for doc in pages:
        html = (result.site_dir / doc.path.replace("index.md", "index.html")).read_text(encoding="utf-8")
        hrefs = re.findall(r'every sample is in\s+<a href="([^"]+/samples\.csv(?:\.gz)?)">samples\.csv', html)
        assert len(hrefs) == len(doc.charts)
        for href in hrefs:
            target = (result.site_dir / doc.folder / unquote(href)).resolve()
            assert target.is_file() and target.read_bytes().startswith(b"timestamp,"), href


def test_large_run_files_are_published_gzipped_and_reproducibly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    import gzip

    from sparkreport import published
    from sparkreport.site import run_files

    source = tmp_path / "runs" / "c"
    (source / "r1").mkdir(parents=True)
    (source / "r1" / "samples.csv").write_text("timestamp,power_draw_w\n" + "2026/01/01 00:00:00.0,100\n" * 500)
    (source / "r1" / "run.json").write_text("{}\n")
    (source / "r1" / "notes.md").write_text("# notes\n")
    monkeypatch.setattr(published, "COMPRESS_ABOVE", 1000)
    links = runs_index.run_files(tmp_path / "runs", "c/r1", ["notes.md"], "files", tables=["samples"])
    pairs = [(f["path"], f["store_path"]) for f in links]
    assert run_files.copy_files(tmp_path / "runs", tmp_path / "a", pairs) == 3
    run_files.copy_files(tmp_path / "runs", tmp_path / "b", pairs)
    published = sorted(p.name for p in (tmp_path / "a" / "files" / "c" / "r1").iterdir())
    assert published == ["notes.md.txt", "run.json", "samples.csv.gz"]
    packed = (tmp_path / "a" / "files" / "c" / "r1" / "samples.csv.gz").read_bytes()
    assert gzip.decompress(packed) == (source / "r1" / "samples.csv").read_bytes()
    assert packed == (tmp_path / "b" / "files" / "c" / "r1" / "samples.csv.gz").read_bytes()  # no name, no time
    assert [(f["source"], f["href"]) for f in links] == [
        ("run.json", "files/c/r1/run.json"), ("notes.md", "files/c/r1/notes.md.txt"),
        ("samples.csv", "files/c/r1/samples.csv.gz")]


def _bench_run() -> Any:
    return _bench_module("run")


def test_the_bench_measures_the_store_it_generated(tmp_path: Path) -> None:
    """The runs a bench's `newrun` and `series` stages ingest (a log named `…-new<ns>.log`) are
    taken out again when the next bench starts on that store, and nothing else is (otherwise
    each bench leaves its new runs in one arm, which grows from bench to bench); the run.json
    the `rebuild1` stage touched is put back as generated."""
    runs = tmp_path / "runs"
    for campaign, run, source in [("c", "trtllm-1", "a-it001.log"), ("c", "trtllm-2", "a-it001-new17000.log"),
                                  ("d", "trtllm-3", "a-it002-newer.log"), ("d", "trtllm-4", "b-new42.log")]:
        (runs / campaign / run).mkdir(parents=True)
        (runs / campaign / run / "run.json").write_text("{}\n", encoding="utf-8")
        (runs / campaign / run / source).write_text("log\n", encoding="utf-8")
    bench_run = _bench_run()
    assert bench_run.drop_added_runs(runs) == 2
    assert sorted(p.relative_to(runs).as_posix() for p in runs.glob("*/*")) == ["c/trtllm-1", "d/trtllm-3"]
    assert bench_run.drop_added_runs(runs) == 0
    # The run.json the `rebuild1` stage touches is put back as it was before the first touch.
    work, first = tmp_path / "work", runs / "c" / "trtllm-1" / "run.json"
    work.mkdir()
    for touch in ("1", "2"):
        bench_run.keep_untouched(runs, first, work)
        first.write_text(f'{{"labels": {{"touched": "{touch}"}}}}\n', encoding="utf-8")
    assert bench_run.put_back_touched(runs, work) == 1
    assert first.read_text(encoding="utf-8") == "{}\n"
    assert bench_run.put_back_touched(runs, work) == 0


def test_the_bench_measures_this_checkout(tmp_path: Path) -> None:
    """bench/run.py runs every measured command with this checkout first on PYTHONPATH (kept
    after it what was there): `python -m sparkreport` in a project folder imports the code beside
    the bench, not an installed copy of the package."""
    import subprocess

    bench_run = _bench_run()
    root = BENCH.parent
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "sparkreport").mkdir(parents=True)
    (elsewhere / "sparkreport" / "__init__.py").write_text("raise ImportError('not this one')\n", encoding="utf-8")
    env = bench_run.checkout_env({**os.environ, "PYTHONPATH": str(elsewhere)})
    assert env["PYTHONPATH"] == os.pathsep.join([str(root), str(elsewhere)])
    found = subprocess.run([sys.executable, "-c", "import sparkreport; print(sparkreport.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(found) == root / "sparkreport" / "__init__.py"


def test_the_fill_bench_fills_each_page_asked_for_in_a_fork(campaign: tuple[Path, Path], tmp_path: Path) -> None:
    """bench/fill.py, in a project: one line per page asked for (its fill's CPU seconds), then
    their sum; a page the site does not have is refused with the pages it has, and a folder that
    is no project with the command's own one-line error."""
    import shutil
    import subprocess

    project = tmp_path / "project"
    shutil.copytree(campaign[1], project)
    command = [sys.executable, str(BENCH / "fill.py"), "--repeat", "1", "--pages"]
    done = subprocess.run([*command, "index.md,methodology/index.md"], cwd=project, capture_output=True, text=True,
                          check=True, timeout=600)
    lines = done.stdout.splitlines()
    assert sorted(line.split()[-1] for line in lines[:2]) == ["index.md", "methodology/index.md"]
    assert all(float(line.split()[0]) > 0 for line in lines[:2])
    assert lines[2].endswith("in all (2 pages, each in a fork of its own)") and len(lines) == 3
    refused = subprocess.run([*command, "nope/index.md"], cwd=project, capture_output=True, text=True, timeout=600)
    assert refused.returncode == 1 and refused.stderr.startswith("no such page: nope/index.md (the pages: ")
    elsewhere = subprocess.run([sys.executable, str(BENCH / "fill.py")], cwd=tmp_path, capture_output=True, text=True,
                               timeout=600)
    assert elsewhere.returncode == 1 and elsewhere.stderr.startswith("Error: ") and "no such run store" in elsewhere.stderr
    assert "Traceback" not in elsewhere.stderr
