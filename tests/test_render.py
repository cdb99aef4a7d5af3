"""Render: the Markdown pages carry exactly the analysis numbers, for per-run and published data."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkreport import __version__
from sparkreport.analysis import arm_stats, compare
from sparkreport.cli import main
from sparkreport.config import AnalysisOptions
from sparkreport.dataset import Dataset, load_dataset
from sparkreport.errors import BuildError
from sparkreport.ingest import IngestOptions, ingest_paths
from sparkreport.render import RenderOptions, RenderResult, render
from sparkreport.render.markdown import md_escape, num, signed, word_code
from sparkreport.store import RunStore

REPO = Path(__file__).resolve().parents[1]
#: The Phase 1 study's published per-arm means (its report's tables), which the per-run data
#: must reproduce on the Results overview.
PUBLISHED_MEANS = {
    ("deepseek", "native"): ("119.79", "70.47", "44.31"),
    ("deepseek", "container"): ("119.40", "101.30", "16.57"),
    ("qwen72b", "native"): ("119.33", "70.03", "44.71"),
    ("qwen72b", "container"): ("119.51", "90.02", "26.72"),
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory, phase1_store: Path) -> RenderResult:
    project = tmp_path_factory.mktemp("render-runs")
    return render(RenderOptions(runs_dir=phase1_store, project_root=project))


@pytest.fixture(scope="module")
def rendered_summaries(tmp_path_factory: pytest.TempPathFactory, published_store: Path) -> RenderResult:
    return render(RenderOptions(runs_dir=published_store, project_root=tmp_path_factory.mktemp("render-sums")))


def page(result: RenderResult, path: str) -> str:
    return (result.docs_dir / path).read_text(encoding="utf-8")


def table_rows(text: str, first_cells: tuple[str, ...]) -> list[list[str]]:
    """Markdown table rows whose leading cells equal ``first_cells``."""
    found = []
    for line in text.splitlines():
        if line.startswith("| "):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if tuple(cells[: len(first_cells)]) == first_cells:
                found.append(cells)
    return found


def sections(text: str) -> dict[str, str]:
    """'## heading' → the text under it."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def test_every_page_is_written_with_a_nav(rendered: RenderResult) -> None:
    paths = [p.path for p in rendered.pages]
    assert paths[0] == "index.md"
    for expected in ("results/index.md", "results/deepseek/index.md", "results/gpt120b/index.md",
                     "results/qwen72b/index.md", "memory/index.md", "methodology/index.md",
                     "quality/index.md", "runs/index.md", "downloads/index.md"):
        assert (rendered.docs_dir / expected).is_file(), expected
    titles = [item[0] for item in rendered.nav]
    assert titles == ["Home", "Campaigns", "Results", "Memory", "Methodology", "Data quality", "Runs", "Downloads"]
    assert (rendered.docs_dir / "campaigns" / "phase1" / "index.md").is_file()


def test_results_tables_equal_arm_stats(rendered: RenderResult, phase1_dataset: Dataset) -> None:
    from sparkreport.render.precision import table_places

    stats = arm_stats(phase1_dataset, AnalysisOptions())
    # every figure of a metric's table with the decimals of the table's smallest spread
    places = {key: table_places(group.to_dict(orient="records"), key[1])
              for key, group in stats.groupby(["model", "metric"])}
    checked = 0
    for model in ("deepseek", "gpt120b", "qwen72b"):
        text = page(rendered, f"results/{model}/index.md")
        by_heading = sections(text)
        for row in stats[stats["model"] == model].to_dict(orient="records"):
            label = _label(row["metric"])
            # primary metrics have a section; the rest are folded under "Other metrics"
            block = next((body for h, body in by_heading.items() if h.startswith(label)), None)
            held = next((line for line in by_heading.get("Other metrics", "").splitlines()
                         if line.startswith("**Held constant**")), "")
            if block is None and f" {label} " in held:
                # a metric with SD 0 in every arm: named with its value in one line, no table
                assert row["sd"] == 0 and f" {label} {num(row['mean'], row['metric'])}" in held
                assert "one value in every run" in held
                checked += 1
                continue
            if block is None:
                folded = by_heading["Other metrics"]
                block = folded.split(f'??? note "{label}', 1)[1].split("??? note", 1)[0]
                block = "\n".join(line.strip() for line in block.splitlines())
            cells = table_rows(block, (row["environment"],))
            assert len(cells) == 1, (model, row["metric"], row["environment"])
            n, mean, ci_text, sd, _cv, low_high = cells[0][1:7]
            assert int(n) == row["n"]
            d = places[(model, row["metric"])]
            assert mean == num(row["mean"], digits=d)
            assert sd == num(row["sd"], digits=d)
            assert ci_text == f"{num(row['ci_low'], digits=d)} to {num(row['ci_high'], digits=d)}"
            assert low_high == f"{num(row['min'], digits=d)}–{num(row['max'], digits=d)}"
            checked += 1
    assert checked == len(stats) > 30


def _label(metric: str) -> str:
    from sparkreport.metrics import lookup

    entry = lookup(metric)
    assert entry is not None
    return entry.label


def test_overview_reproduces_the_published_means(rendered: RenderResult) -> None:
    text = page(rendered, "results/index.md")
    for (model, env), (throughput, peak, kv) in PUBLISHED_MEANS.items():
        model_part = sections(text)
        block = next(body for heading, body in model_part.items() if f"({model}/index.md)" in heading)
        # every row from one campaign: named once above the table, not in a column
        assert block.lstrip().startswith("Campaign: [phase1](../campaigns/phase1/index.md); per-run data.\n")
        assert "| Metric | Environment | n | Mean | 95% CI |" in block
        means = {cells[0]: cells[3] for cells in (r for r in _all_rows(block) if r[1] == env)}
        # each is the study's mean rounded to its table's decimals (the precision rule): 119.8 for
        # 119.79 where the runs leave the first decimal uncertain
        assert rounds_to(throughput, means["Output throughput (tok/s)"])
        # the study's "peak memory" is TensorRT-LLM's figure before the KV cache is allocated
        assert rounds_to(peak, means["Memory before KV cache (GiB)"])
        assert "Peak memory (GiB)" not in means
        assert rounds_to(kv, means["KV cache (GiB)"])


def rounds_to(exact: str, shown: str) -> bool:
    """Whether ``shown`` is ``exact`` rounded to the decimals ``shown`` has."""
    decimals = len(shown.split(".")[1]) if "." in shown else 0
    return f"{float(exact):,.{decimals}f}" == shown


def _all_rows(block: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split(" | ")]
            for line in block.splitlines() if line.startswith("| ") and not line.startswith("| Metric")]


def test_home_summary_table_is_the_comparisons(rendered: RenderResult, phase1_dataset: Dataset) -> None:
    """The home page answers with a table (model × primary metric: Δ% with its CI and a verdict
    mark), not a sentence per comparison; every cell is the comparison's ratio and ratio CI."""
    home = page(rendered, "index.md")
    comparisons = compare(phase1_dataset, "environment", "native", AnalysisOptions())
    # 3 models × {output throughput, pre-KV memory, KV cache}: request throughput is in output
    # throughput's family (an exact multiple at fixed output length) and is not tested again
    assert len(comparisons) == 9
    header = next(line for line in home.splitlines() if line.startswith("| Model (container vs native)"))
    labels = [c.strip() for c in header.strip("|").split("|")][1:]
    assert labels == ["Output throughput", "Memory before KV cache", "KV cache"]
    marks = {"equivalent": "≈", "higher": "▲", "lower": "▼", "inconclusive": "?"}
    checked = 0
    for row in comparisons.to_dict(orient="records"):
        if _label(row["metric"]).split(" (")[0] not in labels:
            continue
        cells = table_rows(home, (md_escape(row["model_name"]),))
        assert len(cells) == 1
        cell = cells[0][1 + labels.index(_label(row["metric"]).split(" (")[0])]
        delta = (row["ratio"] - 1) * 100
        low, high = (row["ratio_ci_low"] - 1) * 100, (row["ratio_ci_high"] - 1) * 100
        assert cell == f"{marks[row['verdict']]} {delta:+.2f}% ({low:+.2f} to {high:+.2f})", (row["metric"], cell)
        checked += 1
    assert checked == 9
    assert "Holm-adjusted p" not in home  # one answer per question, not a sentence per metric


def test_provenance_footer_on_every_page(rendered: RenderResult, phase1_dataset: Dataset) -> None:
    """Home, Methodology and Downloads name the whole dataset; every other page names what it was
    built from (its runs and their sha256), so a new run changes only the pages that read it."""
    everything = phase1_dataset.digest_of(phase1_dataset.run_digests)
    by_model: dict[str, list[str]] = {}
    for record in phase1_dataset.records:
        by_model.setdefault(record.model.name, []).append(record.run_id)
    for doc in rendered.pages:
        text = page(rendered, doc.path)
        footer = text.rsplit("\n---\n", 1)[-1]
        assert f"sparkreport {__version__}" in footer
        assert "regenerate with <code>sparkreport build --runs-dir " in footer
        if doc.path in ("index.md", "methodology/index.md", "downloads/index.md"):
            assert f"dataset sha256 <code>{phase1_dataset.digest}</code> · 63 runs" in footer, doc.path
        elif doc.path.startswith("results/") and doc.path != "results/index.md":
            model = doc.path.split("/")[1]
            runs = by_model[model]
            assert (f"Built from {len(runs)} runs (sha256 of their run.json files <code>{phase1_dataset.digest_of(runs)}</code>)"
                    in footer), doc.path
            assert len(runs) < 63
        else:  # pages that read every run
            assert f"Built from 63 runs (sha256 of their run.json files <code>{everything}</code>)" in footer, doc.path


def test_a_page_of_published_figures_only_names_no_runs_in_its_footer(tmp_path: Path, published_store: Path) -> None:
    """A page built from published arm summaries alone says so ("Built from 2 published arm
    summaries"), not "Built from 0 runs and 2 …"; Home names the store's counts the same way."""
    shutil.copytree(published_store, tmp_path / "runs")
    result = render(RenderOptions(runs_dir=Path("runs"), project_root=tmp_path))
    footers = {doc.path: page(result, doc.path).rsplit("\n---\n", 1)[-1] for doc in result.pages}
    model_pages = [path for path in footers if path.startswith("results/") and path != "results/index.md"]
    assert model_pages
    for path in model_pages:
        assert re.search(r"Built from \d+ published arm summar(y|ies) \(sha256 of their run\.json files", footers[path]), footers[path]
    assert not any("Built from 0 runs" in footer or "· 0 runs" in footer for footer in footers.values())
    assert re.search(r"dataset sha256 <code>[0-9a-f]{64}</code> · \d+ published arm summaries ·", footers["index.md"])


def test_methodology_is_read_from_the_records(rendered: RenderResult) -> None:
    text = page(rendered, "methodology/index.md")
    held = next(line for line in text.splitlines() if line.startswith("**Held constant**"))
    for fact in ("GPU NVIDIA GB10", "requests per run 50", "memory pool 119.64 GiB",
                 "container image nvcr.io/nvidia/tensorrt-llm/release:spark-single-gpu-dev"):
        assert fact in held, fact
    assert "**Inclusion rule:** Runs with a non-zero exit code are excluded" in text
    arms = text.split("## What each arm contains", 1)[1].split("\n## ", 1)[0]
    assert "**[phase1](../campaigns/phase1/index.md)**\n\n| Model | native |" in arms
    environments = table_rows(arms, ("Model",))[0][1:]
    arm = table_rows(arms, ("gpt-oss-120b",))
    assert arm and arm[0][1 + environments.index("native")] == "13 / 13" and "Left out" not in arms
    # how the environments differ: only the details that differ, baseline first, no dumps
    levels = table_rows(text, ("native", "chroot"))
    assert levels and table_rows(text, ("container", "container"))
    assert "{'" not in text and "': " not in text


def test_methodology_names_the_runs_left_out_of_a_few_arms_and_counts_the_rest(tmp_path: Path) -> None:
    """Under a campaign's table of arms, the runs left out are named for the first
    LEFT_OUT_ARMS arms (each with its reason) and the other arms are counted — a list of every
    arm's failures is Data quality's, not Methodology's."""
    from sparkreport.render.builtin import LEFT_OUT_ARMS
    from sparkreport.schema import Environment, Model, RunRecord, Status

    store = RunStore(tmp_path / "runs")
    models = [f"m{k}" for k in range(LEFT_OUT_ARMS // 2 + 1)]  # two arms each: LEFT_OUT_ARMS + 2 arms
    for model in models:
        for env in ("native", "docker"):
            for i in range(1, 4):
                store.write(RunRecord(run_id=f"{model}.{env}.i{i}", campaign="smoke", iteration=i,
                                      model=Model(name=model), environment=Environment(name=env),
                                      metrics={"output_throughput_tok_s": 100.0 + i},
                                      status=Status(exit_code=1 if i == 3 else 0, ok=i != 3)), [])
    (tmp_path / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    result = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path, docs_dir=tmp_path / "build" / "docs"))
    arms = page(result, "methodology/index.md").split("## What each arm contains", 1)[1].split("\n## ", 1)[0]
    assert table_rows(arms, ("m0",)) == [["m0", "2 / 3", "2 / 3"]]
    named = [line for line in arms.splitlines() if line.startswith("- m")]
    assert len(named) == LEFT_OUT_ARMS and named[0] == "- m0, native — `m0.native.i3`: failed run (exit code 1)"
    extra = 2 * len(models) - LEFT_OUT_ARMS
    assert f"- and runs of {extra} more arms\n" in arms


def quality_sections(text: str) -> dict[str, tuple[str, list[list[str]]]]:
    """The Data quality page's sections: title → (the line under it, its table's rows as cells)."""
    sections: dict[str, tuple[str, list[list[str]]]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("### "):
            start = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(("|", "#")))
            table = list(itertools.takewhile(lambda row: row.startswith("|"), lines[start:]))
            sections[line[4:]] = (lines[i + 2], [row.strip("| ").split(" | ") for row in table[2:]])
    return sections


def test_quality_page_names_the_duplicate_runs(rendered: RenderResult) -> None:
    """One section per check: its title, its count and code, then a row per finding (the arm it
    is about, the finding as a sentence, its runs)."""
    sections = quality_sections(page(rendered, "quality/index.md"))
    line, rows = sections["More runs than planned"]
    assert line == f"1 error · check {word_code('duplicate-iteration')}"
    assert len(rows) == 1 and rows[0][0] == "phase1: gpt-oss-120b (native)" and rows[0][1].startswith("13 runs")
    assert "`gpt120b-native-iter01-20251108_195154`" in rows[0][2]


def test_how_small_a_difference_could_not_be_detected_spans_the_comparisons() -> None:
    """Inconclusive comparisons of 2% and 8% minimum detectable effect: the answer gives the span,
    not the smallest alone (true of each, but read as if 3% would have shown in the noisier one)."""
    from sparkreport.render.report import detectable

    rows = [{"min_detectable_effect": 20.0, "mean_baseline": 1000.0}, {"min_detectable_effect": -8.0, "mean_baseline": 100.0}]
    assert detectable(rows) == "about 2% to 8% (depending on the comparison)"
    assert detectable(rows[:1]) == "about 2%"
    assert detectable([{"min_detectable_effect": None, "mean_baseline": 1.0}]) is None


def test_a_check_cut_short_lists_the_newest_campaigns_findings_first() -> None:
    """Within each check (in check()'s order), the findings about the campaigns the site shows in
    full come first, so the 20 a long check lists are the newest campaigns', not the first by name."""
    from sparkreport.render.builtin import newest_first

    findings = [{"code": code, "message": f"{campaign}/m/native: {code} here"}
                for code, campaign in (("a", "v1"), ("a", "v2"), ("a", "v9"), ("b", "v1"), ("b", "v9"))]
    ordered = newest_first(findings, {"v9"})
    assert [(f["code"], f["message"].split("/")[0]) for f in ordered] == [
        ("a", "v9"), ("a", "v1"), ("a", "v2"), ("b", "v9"), ("b", "v1")]


def test_a_cell_of_dash_is_explained_under_the_table(phase1_dataset: Dataset, tmp_path: Path) -> None:
    """A model that did not report a metric has "—" in the answers' table: the key under it says
    what "—" means, and only when a table has one."""
    from sparkreport.config import ProjectConfig
    from sparkreport.render.context import build_site_data
    from sparkreport.render.report import table_gaps, verdict_key

    full = {"metrics": [{"metric": "a"}, {"metric": "b"}], "rows": [{"cells": {"a": {"delta_pct": 1.0},
                                                                                "b": {"delta_pct": 2.0}}}]}
    gap = {"metrics": full["metrics"], "rows": [{"cells": {"a": {"delta_pct": 1.0}}}]}
    empty = {"metrics": full["metrics"], "rows": [{"cells": {"a": {"delta_pct": 1.0}, "b": {"delta_pct": None}}}]}
    assert not table_gaps(full) and table_gaps(gap) and table_gaps(full, empty)
    site = build_site_data(phase1_dataset, ProjectConfig(), tmp_path, "test", tmp_path)
    said = "— not compared (the metric was not reported in both arms)"
    assert said in verdict_key(site, [], gaps=True)
    assert said not in verdict_key(site, [])


def test_the_key_says_the_intervals_are_not_adjusted_where_one_would_seem_to_contradict_its_p(
        phase1_dataset: Dataset, tmp_path: Path) -> None:
    """A ≈ (or ?) whose unadjusted interval excludes zero sits beside a Holm-adjusted p above α
    on the comparisons' table: the key says the intervals are not adjusted, naming the marks it
    concerns, and says nothing of it when every interval holds zero."""
    from sparkreport.config import ProjectConfig
    from sparkreport.render.context import build_site_data
    from sparkreport.render.report import verdict_key

    site = build_site_data(phase1_dataset, ProjectConfig(), tmp_path, "test", tmp_path)

    def effect(mark: str, low: float, high: float) -> dict[str, object]:
        return {"mark": mark, "delta_low": low, "delta_high": high, "margin_pct": 2.0}

    same_apart = verdict_key(site, [effect("≈", 0.004, 0.03)])
    assert "the intervals are not Holm-adjusted, so a ≈ interval may exclude zero" in same_apart
    both = verdict_key(site, [effect("≈", 0.004, 0.03), effect("?", 0.1, 2.5), effect("▲", 3.0, 4.0)])
    assert ("(Holm-adjusted over the campaign's tests; the intervals are not adjusted, so a ≈ or ? interval may "
            "exclude zero)") in both
    holding = verdict_key(site, [effect("≈", -0.01, 0.03), effect("?", -0.5, 2.5)])
    assert "may exclude zero" not in holding


def test_a_clause_every_row_ends_with_is_said_once() -> None:
    """Rows that differ only before a shared ending (a consequence, an explanation) keep what is
    their own; the ending is said once above the table. A short shared ending (a unit), a
    shared ending that would leave a row empty, or one row, keep every row whole."""
    from sparkreport.render.builtin import common_clause, said_once

    blocks = [f"Environments ran in separate time blocks (native 0{i}:00–0{i}:15; docker 0{i}:16–0{i}:30), so drift "
              "over time is confounded with the environment — interleave them (randomized blocks)." for i in range(3)]
    clause, heads = common_clause(blocks) or ("", [])
    assert clause == "drift over time is confounded with the environment — interleave them (randomized blocks)."
    assert heads[1] == "Environments ran in separate time blocks (native 01:00–01:15; docker 01:16–01:30)."
    identity = [f"KV cache = 0.900 × (pool − memory) {offset} GiB fits all 14 arms (R² 1.0000): the KV cache is sized "
                "as a fixed fraction of the memory left free, so both are one measurement." for offset in ("-0.01", "+0.00")]
    assert common_clause(identity) == (
        "the KV cache is sized as a fixed fraction of the memory left free, so both are one measurement.",
        ["KV cache = 0.900 × (pool − memory) -0.01 GiB fits all 14 arms (R² 1.0000).",
         "KV cache = 0.900 × (pool − memory) +0.00 GiB fits all 14 arms (R² 1.0000)."])
    assert common_clause(["CV above 5% — ttft 5.1 ms.", "CV above 5% — ttft 6.1 ms."]) is None  # " ms." is no clause
    assert common_clause(blocks[:1]) is None
    check = {"rows": [{"finding": "A: one two three four five six."}, {"finding": "B: one two three four five six."}]}
    said_once(check)
    assert check["common"] == "one two three four five six." and [r["finding"] for r in check["rows"]] == ["A.", "B."]
    whole = {"rows": [{"finding": "Same: x."}, {"finding": "Other: y."}]}
    said_once(whole)
    assert whole["common"] is None and [r["finding"] for r in whole["rows"]] == ["Same: x.", "Other: y."]
    # a boundary inside parentheses is none: the clause starts after them, not at "(run: 1 of 400)"
    failed = [f"1 of 10 runs had failed requests (vllm-{k}: 1 of 400) — such a run did less work than one that "
              "completed them all." for k in "ab"]
    assert common_clause(failed) == ("such a run did less work than one that completed them all.",
                                     ["1 of 10 runs had failed requests (vllm-a: 1 of 400).",
                                      "1 of 10 runs had failed requests (vllm-b: 1 of 400)."])


def test_quality_page_says_a_finding_about_several_arms_once(published_store: Path, tmp_path: Path) -> None:
    """The same sentence about several arms (figures published without a spread, in every arm of a
    published study) is one row naming the arms, model by model — not a row per arm."""
    from sparkreport.render.builtin import compact_wheres

    result = render(RenderOptions(runs_dir=published_store, project_root=tmp_path))
    sections = quality_sections(page(result, "quality/index.md"))
    for _title, (_line, rows) in sections.items():
        sentences = [row[-2] for row in rows]
        assert len(sentences) == len(set(sentences)), rows
    assert compact_wheres(["p/m1/container", "p/m1/native", "p/m2/native"]) == "p/m1 (container, native); p/m2 (native)"
    assert compact_wheres(["c1", "c2"]) == "c1; c2" and compact_wheres(["p/m/native"]) == "p/m (native)"
    assert compact_wheres(["p/m/native"], names={("p", "m"): "Model M"}) == "p: Model M (native)"
    many = [f"c/m{i}/{env}" for i in range(20) for env in ("docker", "native")]  # a cell stays short
    assert compact_wheres(many) == "c/m0 (docker, native); c/m1 (docker, native); c/m2 (docker, native); " \
                                   "c/m3 (docker, native); and 32 more"


def test_runs_page_links_to_every_runs_raw_files(rendered: RenderResult, phase1_store: Path) -> None:
    from sparkreport.published import MANIFEST

    text = page(rendered, "runs/index.md")
    links = re.findall(r'<a href="(files/[^"]+)">', text)
    assert len(links) >= 63 * 3
    # The site build copies each campaign folder of the manifest to its place (site/run_files.py).
    published = json.loads((rendered.docs_dir / MANIFEST).read_text(encoding="utf-8"))
    assert published["runs_dir"] == str(phase1_store.resolve())
    assert {f"runs/{target}" for target in links} == {target for target, _source in published["files"]}
    for target in set(links):
        assert (phase1_store / target.removeprefix("files/")).is_file(), target
    assert "files/phase1/_sources/" in text  # the shared aggregate source, published once


_NAME = st.text(alphabet="ab.-_1é", min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_NAME, st.lists(st.tuples(st.text(alphabet="ab./-_é", max_size=5), st.booleans()),
                                       max_size=6), max_size=5))
def test_the_manifests_pieces_make_the_whole_manifest(tmp_path_factory: pytest.TempPathFactory,
                                                      folders: dict[str, list[tuple[str, bool]]]) -> None:
    """Each campaign folder's piece of the manifest (its files sorted, each once), joined in the
    order of the folders' names with a slash, is the manifest of all of them sorted at once, byte
    for byte — folder names that begin another's (``a``, ``a.b``, ``a-b``) included."""
    from sparkreport.published import MANIFEST, manifest_piece, write_manifest, write_manifest_pieces

    out = tmp_path_factory.mktemp("manifest")
    (out / "whole").mkdir()
    (out / "pieces").mkdir()
    files = {folder: [(f"runs/files/{folder}/{name}{'.txt' if suffixed else ''}", f"{folder}/{name}")
                      for name, suffixed in listed] * 2 for folder, listed in folders.items()}  # (each twice)
    write_manifest(out / "whole", out, {pair for pairs in files.values() for pair in pairs})
    write_manifest_pieces(out / "pieces", out, [manifest_piece(files[folder])
                                                for folder in sorted(files, key=lambda name: f"{name}/")])
    assert (out / "pieces" / MANIFEST).read_bytes() == (out / "whole" / MANIFEST).read_bytes()


def test_small_runs_page_gives_each_model_and_environment_a_section(rendered: RenderResult,
                                                                    rendered_summaries: RenderResult) -> None:
    """On a small store's one Runs page, a campaign whose model × environment groups hold more than
    two runs on average gets a section per group (in the table of contents), whose tables leave out
    the Model and Environment columns; a campaign of one record per group keeps one table."""
    text = page(rendered, "runs/index.md")
    sections = re.findall(r'^### <a id="([^"]+)"></a>(.+) · (.+)$', text, flags=re.M)
    assert len(sections) == 6, sections  # the 63 Phase 1 runs: 3 models × 2 environments
    assert all(anchor.startswith("phase1--") for anchor, _model, _environment in sections)  # unique on the page
    assert {(model, environment) for _anchor, model, environment in sections} == {
        (model, environment) for model in ("DeepSeek-R1-Distill-Qwen-7B", "gpt-oss-120b", "Qwen2.5-72B-Instruct")
        for environment in ("container", "native")}
    assert "<th>Model</th>" not in text and text.count("<th>Run</th>") == 6
    published = page(rendered_summaries, "runs/index.md")
    assert "### <a id=" not in published and "<th>Model</th>" in published


def test_runs_page_lists_models_as_a_reader_sorts_them(tmp_path: Path) -> None:
    """Models named Qwen3-8B and gemma-3-12b: gemma first, as every other page lists them — not
    after Qwen, as character codes sort them —, and by the name the other pages give them (the
    model's id here), not by its name in the store."""
    from history_store import write_history_store

    write_history_store(tmp_path / "runs", runs=3, versions=["1.0"], model="qwen", model_id="Qwen3-8B")
    write_history_store(tmp_path / "runs", runs=3, versions=["1.0"], model="gemma", model_id="gemma-3-12b",
                        run_prefix="g-")
    result = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path))
    sections = re.findall(r'^### <a id="[^"]+"></a>(.+) · (.+)$', page(result, "runs/index.md"), flags=re.M)
    assert [model for model, _environment in sections] == ["gemma-3-12b", "gemma-3-12b", "Qwen3-8B", "Qwen3-8B"]


def test_runs_table_breaks_run_ids_at_their_dots_and_drops_an_empty_iteration_column() -> None:
    """A run id may break only after a dot or a hyphen, or every 10 characters of a longer stretch
    (``<wbr>``; Material lets code break anywhere); under a section heading (a nowrap cell) after
    a dot or a hyphen only, never inside a stretch; a table whose rows have no iteration has no
    Iteration column of dashes. Ids are escaped before the breaks go in."""
    from types import SimpleNamespace

    from sparkreport.render.markdown import make_environment

    template = make_environment(None).get_template("_runs_table.md")
    row = {"run_id": "llama.cold.<i01>-" + "f" * 40, "model_name": "m", "environment": "native", "iteration": None,
           "published": False, "ok": True, "guard": None, "exit_code": 0, "included": True, "reason": None,
           "files": [], "chart": None}
    site = SimpleNamespace(config=SimpleNamespace(factor="environment"))
    without = template.render(entries=[row], site=site, sample_points=400)
    assert "<th>Iteration</th>" not in without and "<td>—</td>" not in without
    assert ('<tr><td class="sparkreport-run"><code>llama.<wbr>cold.<wbr>&lt;i01&gt;-'
            f'{"f" * 10}<wbr>{"f" * 10}<wbr>{"f" * 10}<wbr>{"f" * 10}</code></td>') in without
    # under a section heading (a nowrap cell): after dots and hyphens only, a hex stretch whole
    in_section = template.render(entries=[row], site=site, sample_points=400, in_section=True)
    assert ('<td class="sparkreport-run sparkreport-nowrap"><code>llama.<wbr>cold.<wbr>&lt;i01&gt;-<wbr>'
            f'{"f" * 40}</code></td>') in in_section
    assert "<th>Model</th>" not in in_section
    with_one = template.render(entries=[row, {**row, "run_id": "b", "iteration": 2}], site=site, sample_points=400)
    assert "<th>Iteration</th>" in with_one and "<td>—</td>" in with_one and "<td>2</td>" in with_one


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_a_breakable_id_reads_as_the_escaped_id(value: str) -> None:
    """``breakable`` only adds break opportunities: without them it is ``h``'s escaping, either way."""
    from sparkreport.render.markdown import breakable, h

    assert str(breakable(value)).replace("<wbr>", "") == str(h(value))
    assert str(breakable(value, nowrap=True)).replace("<wbr>", "") == str(h(value))


def test_downloads_are_the_dataset(rendered: RenderResult, phase1_dataset: Dataset) -> None:
    folder = rendered.docs_dir / "downloads"
    csv = pd.read_csv(folder / "dataset.csv")
    assert len(csv) == 63 and "kv_cache_gib" in csv.columns
    parquet = pd.read_parquet(folder / "dataset.parquet")
    assert sorted(parquet["run_id"]) == sorted(phase1_dataset.runs["run_id"])
    text = page(rendered, "downloads/index.md")
    assert "[dataset.parquet](dataset.parquet)" in text and "[dataset.csv](dataset.csv)" in text
    size = (folder / "dataset.csv").stat().st_size  # sizes for a reader, in binary units
    assert f"| {size / 1024:,.1f}\u00a0KiB |" in text and f"| {size} |" not in text


@pytest.mark.parametrize(("count", "text"), [(0, "0 bytes"), (1, "1 byte"), (1023, "1,023 bytes"), (1024, "1.0 KiB"),
                                             (19_766, "19.3 KiB"), (26_048_680, "24.8 MiB"),
                                             (3 * 1024**3, "3.0 GiB"), (5 * 1024**5, "5,120.0 TiB")])
def test_file_sizes_read_in_binary_units(count: int, text: str) -> None:
    from sparkreport.render.markdown import size

    assert size(count) == text.replace(" ", "\u00a0")  # a no-break space before the unit


def test_the_checks_codes_in_the_quality_table_break_only_after_a_hyphen(rendered: RenderResult) -> None:
    """A check's code in the Data quality table is code that a narrow column breaks only after a
    hyphen (sparkreport.css), not Material's code that breaks inside a word ("rooflin|e")."""
    assert str(word_code("capacity-weights")) == '<code class="sparkreport-word">capacity-weights</code>'
    assert str(word_code("a<b")) == '<code class="sparkreport-word">a&lt;b</code>'

    lines = [line for line, _rows in quality_sections(page(rendered, "quality/index.md")).values()]
    assert lines and all(' · check <code class="sparkreport-word">' in line for line in lines), lines[:3]


def test_a_quality_section_with_rows_said_of_several_arms_counts_its_rows(rendered_summaries: RenderResult,
                                                                         rendered: RenderResult) -> None:
    """A finding worded the same for several arms is one row naming them all; its section then
    says how many rows hold its findings ("2 errors in 1 row"), and the page says why, once. A
    section with a row per finding counts its findings only."""
    import re

    text = page(rendered_summaries, "quality/index.md")
    sections = quality_sections(text)
    merged = {title: (line, rows) for title, (line, rows) in sections.items() if " in " in line.split(" · ")[0]}
    assert merged, list(sections.values())[:3]
    for line, rows in merged.values():
        found = re.match(r"(\d+) (?:errors?|warnings?|notes?) in (\d+) rows? · check ", line)
        assert found and int(found[2]) == len(rows) < int(found[1]), line
    for line, rows in sections.values():
        if line not in {line for line, _rows in merged.values()}:
            assert int(line.split(" ")[0]) == len(rows), line
    assert text.count("(a finding worded the same for several arms is one row, naming them all)") == 1
    for store in (rendered, rendered_summaries):  # the why said once exactly where some row is shared
        other = page(store, "quality/index.md")
        shared = any(" in " in line.split(" · ")[0] for line, _rows in quality_sections(other).values())
        assert other.count("worded the same for several arms") == (1 if shared else 0)


def test_a_high_cv_finding_keeps_its_own_row_when_another_arm_rounds_alike() -> None:
    """Two arms whose run-to-run CV rounds to the same figure are two findings, each its own row;
    a sentence said of several arms that reports no measurement of its own is one row naming them."""
    from sparkreport.render.builtin import checks_of
    from sparkreport.render.report import message_body

    def finding(code: str, where: str, body: str, run: str) -> dict[str, object]:
        return {"severity": "warning", "code": code, "message": f"{where}: {body}", "runs": [run]}

    cv = "CV above 5% over 10 runs — ttft_ms_mean 6.0%."
    missing = "Latency_ms_max missing in 1 of 10 runs."
    (high_cv, lacking) = checks_of([finding("high-cv", "c1/llama/native", cv, "r1"),
                                    finding("high-cv", "c2/gpt/docker", cv, "r2"),
                                    finding("missing-metric", "c1/llama/native", missing, "r3"),
                                    finding("missing-metric", "c2/gpt/docker", missing, "r4")], [])
    said = message_body(f"c1/llama/native: {cv}")  # as the page words it (the metric by its label)
    assert [(row["finding"], row["runs"]) for row in high_cv["rows"]] == [(said, ["r1"]), (said, ["r2"])]
    assert not high_cv["merged"]
    assert [row["runs"] for row in lacking["rows"]] == [["r3", "r4"]] and lacking["merged"]


def test_a_quality_section_cut_short_says_how_many_of_its_findings_its_rows_hold(
        tmp_path: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A check with more findings than the page lists, whose listed ones share rows: its count,
    then how many are listed in how many rows ("6 notes, 2 of them listed in 1 row"), then the
    line naming the rest."""
    from sparkreport.render import builtin

    monkeypatch.setattr(builtin, "FINDINGS_PER_CHECK", 2)
    text = page(render(RenderOptions(runs_dir=published_store, project_root=tmp_path)), "quality/index.md")
    line, rows = quality_sections(text)["Figures published without a spread"]
    assert line.startswith("6 notes, 2 of them listed in 1 row · check "), line
    assert len(rows) == 1 and "… and 4 more findings, in [findings.csv](findings.csv)." in text


def test_charts_are_written_beside_their_page(rendered: RenderResult) -> None:
    for doc in rendered.pages:
        text = page(rendered, doc.path)
        for chart in doc.charts:
            base = rendered.docs_dir / doc.folder / "charts" / chart.name
            assert base.with_suffix(".vl.json").is_file() and base.with_suffix(".svg").is_file()
            assert f'data-spec="charts/{chart.name}.vl.json"' in text
            assert f'<noscript><img src="charts/{chart.name}.svg"' in text
    charted = {chart.name.rsplit("-", 1)[0] for doc in rendered.pages if doc.path.startswith("results/")
               for chart in doc.charts}
    # the tested metrics the Phase 1 data has; its other metrics (temperatures, model load time) get tables
    assert charted == {"output_throughput_tok_s", "request_throughput_req_s", "pre_kv_memory_gib", "kv_cache_gib"}


def test_charts_all_draws_every_metric(tmp_path: Path, phase1_store: Path) -> None:
    (tmp_path / "sparkreport.yml").write_text("charts: all\n", encoding="utf-8")
    result = render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    results = [doc for doc in result.pages if doc.path.startswith("results/") and doc.charts]
    assert len({chart.name for doc in results for chart in doc.charts}) > 3 * 2
    assert "Charts are drawn for the metrics" not in page(result, results[0].path)


def test_unknown_charts_setting_is_a_one_line_error(tmp_path: Path) -> None:
    from sparkreport.config import load_config
    from sparkreport.errors import ConfigError

    (tmp_path / "sparkreport.yml").write_text("title: x\ncharts: some\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "sparkreport.yml")
    assert info.value.format_message() == (
        f"{tmp_path / 'sparkreport.yml'}:2: charts must be one of tested, all, not 'some' — tested draws the "
        "metrics compare tests; all draws every metric")


def test_summaries_only_store_renders_published_figures(rendered_summaries: RenderResult) -> None:
    home = page(rendered_summaries, "index.md")
    assert "published figures (6 arms)" in home and "○ +43.75% (no CI)" in home
    deepseek = page(rendered_summaries, "results/deepseek/index.md")
    row = table_rows(deepseek, ("native (*published*)",))
    assert row and row[0][1:3] == ["10", "119.79"]  # quoted as published (the spread rule alone: 119.8)
    assert "Rows marked *published* are published figures" in deepseek
    memory = page(rendered_summaries, "memory/index.md")
    # the answer about memory comes first, worded as Results words it (published figures: not tested)
    first = memory.split("## Budget")[0]
    # (the models' least and greatest effect, said so: these effects have no interval to mistake it for)
    assert ("- **Published without a spread, so not tested** (3 models): container against native, "
            "Memory before KV cache +28.54% to +43.75% and KV cache -62.60% to -40.24% across the models.") in first
    budget = sections(memory)["Memory budget"]
    post = budget[budget.index("**unified-memory-post**"):]  # one table per campaign, named above it
    native = table_rows(post, ("model not named in the post", "native (*published*)"))
    assert native[0][2:8] == ["119.64", "78.31", "41.33", "0.90", "37.20", "37.26"]  # 0.9 × 41.33
    runs = page(rendered_summaries, "runs/index.md")
    # a campaign of published summaries only says so once, above a table without the two columns
    # that would repeat it on every row (Status "published figures", In statistics "as published")
    assert "Published summaries: one record per arm, used in the statistics as published." in runs
    assert "<th>Status</th>" not in runs and "as published</td>" not in runs


def test_project_template_overrides_by_name(tmp_path: Path, phase1_store: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "home.md").write_text(
        '{% extends "_base.md" %}{% block body %}# Our own home\n\n'
        "{{ provenance.run_count }} runs in {{ questions|length }} campaign(s).\n{% endblock %}\n",
        encoding="utf-8")
    result = render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    home = page(result, "index.md")
    assert home.startswith("# Our own home\n\n63 runs in 1 campaign(s).")
    assert "sparkreport " + __version__ in home  # the packaged footer still applies
    assert page(result, "methodology/index.md").startswith("# Methodology")


def test_an_override_may_include_the_packaged_template_it_replaces(tmp_path: Path, phase1_store: Path) -> None:
    """``sparkreport/<name>`` is always the packaged template: an override of ``_footer.md`` that
    includes it keeps the package's provenance line as the package writes it, and adds its own;
    an edit of the override renders every page again (the include counts in the pages' keys)."""
    (tmp_path / "templates").mkdir()
    footer = tmp_path / "templates" / "_footer.md"
    footer.write_text('{% include "sparkreport/_footer.md" %}\n<p>Our own line.</p>\n', encoding="utf-8")
    options = RenderOptions(runs_dir=phase1_store, project_root=tmp_path)
    result = render(options)
    for doc in result.pages:
        text = page(result, doc.path)
        assert text.endswith("<p>Our own line.</p>\n"), doc.path
        assert "sparkreport " + __version__ in text.rsplit("\n---\n", 1)[-1], doc.path
    footer.write_text('{% include "sparkreport/_footer.md" %}\n<p>Another line.</p>\n', encoding="utf-8")
    again = render(options)
    assert sorted(again.rendered_pages) == sorted(doc.path for doc in again.pages)
    assert page(again, "index.md").endswith("<p>Another line.</p>\n")
    # extending the packaged page it replaces: its body as the package writes it, then a paragraph
    (tmp_path / "templates" / "home.md").write_text(
        '{% extends "sparkreport/home.md" %}{% block body %}{{ super()|safe }}\nOur paragraph.\n{% endblock %}\n',
        encoding="utf-8")
    home = page(render(options), "index.md")
    assert home.startswith(page(again, "index.md").split("\n---\n")[0].rstrip("\n"))
    assert "\nOur paragraph.\n" in home and "\\#" not in home
    # without |safe: the parent block is Markdown already written, never escaped again
    (tmp_path / "templates" / "home.md").write_text(
        '{% extends "sparkreport/home.md" %}{% block body %}{{ super() }}\nOur paragraph.\n{% endblock %}\n',
        encoding="utf-8")
    assert page(render(options), "index.md") == home


def test_an_override_naming_a_template_that_does_not_exist_is_refused_with_the_fix(tmp_path: Path,
                                                                                 phase1_store: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "_footer.md").write_text('{% include "sparkreport/footer.md" %}\n', encoding="utf-8")
    with pytest.raises(BuildError) as caught:
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'templates' / '_footer.md'}:1: cannot render ")  # the override's line
    assert "includes or extends 'sparkreport/footer.md', which neither templates/ nor the package has" in message
    assert "'sparkreport/<name>.md'" in message and "\n" not in message


def test_a_template_error_names_the_template_and_line_it_is_in(tmp_path: Path, phase1_store: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """An override's mistake is named where it is: the included override's file and line (a path
    from the current folder), not the page's template that includes it."""
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "_footer.md").write_text("---\n\n{{ no_such_value.field }}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BuildError) as caught:
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    message = str(caught.value)
    assert message.startswith("templates/_footer.md:3: cannot render "), message
    assert message.endswith("'no_such_value' is undefined")


def test_compiled_templates_are_kept_per_package_and_follow_their_source(tmp_path: Path, phase1_store: Path) -> None:
    (tmp_path / "templates").mkdir()
    home = tmp_path / "templates" / "home.md"
    home.write_text('{% extends "_base.md" %}{% block body %}# First home\n{% endblock %}\n', encoding="utf-8")
    render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    compiled = tmp_path / "build" / "cache" / "templates"
    [folder] = list(compiled.iterdir())
    assert len(list(folder.glob("__jinja2_*.cache"))) >= 5  # every template a page used, ours included
    (compiled / "another-package").mkdir()  # another version of sparkreport's compiled templates
    home.write_text('{% extends "_base.md" %}{% block body %}# Second home\n{% endblock %}\n', encoding="utf-8")
    result = render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    assert page(result, "index.md").startswith("# Second home\n")  # recompiled from the new source
    assert list(compiled.iterdir()) == [folder]


def test_user_data_is_escaped(tmp_path: Path) -> None:
    source = tmp_path / "odd.csv"
    source.write_text("model,environment,metric,n,mean,sd\n"
                      '"<script>alert(1)</script> *x*",native,kv_cache_gib,3,1.0,0.1\n', encoding="utf-8")
    runs = tmp_path / "runs"
    assert not ingest_paths([source], RunStore(runs), IngestOptions()).rejected
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path))
    text = page(result, "results/index.md")
    assert "<script>" not in text and r"&lt;script>alert(1)&lt;/script> \*x\*" in text


def test_handwritten_docs_are_copied_and_collisions_refused(tmp_path: Path, phase1_store: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "about.md").write_text("# About\n", encoding="utf-8")
    result = render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    assert (result.docs_dir / "about.md").read_text(encoding="utf-8") == "# About\n"
    assert result.handwritten == ["about.md"]
    assert not (docs / "index.md").exists()  # nothing generated into the source tree
    (docs / "index.md").write_text("# Mine\n", encoding="utf-8")
    with pytest.raises(BuildError, match="collides with the generated Home page"):
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))


def test_docs_dir_is_never_a_folder_render_did_not_make(tmp_path: Path, phase1_store: Path) -> None:
    (tmp_path / "docs").mkdir()
    with pytest.raises(BuildError, match="hand-written docs"):
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path, docs_dir=tmp_path / "docs"))
    other = tmp_path / "precious"
    other.mkdir()
    (other / "keep.txt").write_text("x", encoding="utf-8")
    with pytest.raises(BuildError, match="not written by sparkreport render"):
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path, docs_dir=other))
    assert (other / "keep.txt").exists()


def test_rerender_replaces_the_previous_output(tmp_path: Path, phase1_store: Path) -> None:
    first = render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    stale = first.docs_dir / "results" / "gone" / "index.md"
    stale.parent.mkdir()
    stale.write_text("old", encoding="utf-8")
    render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    assert not stale.exists()


def test_render_cli(tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Run outside the repository: its docs/blog posts bind to runs/, not to these per-run data.
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    result = CliRunner().invoke(main, ["render", "--runs-dir", str(runs), "--docs-dir", str(tmp_path / "out" / "docs")])
    assert result.exit_code == 0, result.output
    assert re.fullmatch(r"12 pages, \d+ charts → .*/out/docs\n", result.output)  # one campaign page and its overview


def test_render_cli_errors_are_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["render", "--runs-dir", str(tmp_path / "nothing")])
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["render", "--runs-dir", str(tmp_path / "empty")])
    assert result.exit_code == 1 and "no runs to render" in result.output


def test_dataset_digest_matches_store(rendered: RenderResult, phase1_store: Path) -> None:
    assert load_dataset(phase1_store).digest in page(rendered, "downloads/index.md")


def test_home_summary_stays_within_its_budget(tmp_path: Path, phase1_store: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Past EFFECT_BUDGET models the home table and forest plot stop and point to Results."""
    from sparkreport.render.builtin import HomePage

    full = page(render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path / "a")), "index.md")
    monkeypatch.setattr(HomePage, "EFFECT_BUDGET", 2)
    short = page(render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path / "b")), "index.md")
    rows = [line for line in full.splitlines() if line.startswith("| ") and "%" in line]
    kept = [line for line in short.splitlines() if line in rows]
    assert len(rows) == 3 and len(kept) == 2
    assert "… and 1 more models on [Results](results/index.md)." in short and "more models" not in full


def test_builtin_page_modules_do_not_import_each_other() -> None:
    """No import circle through render/builtin.py: Home's module and Results' module import
    alone, neither pulling in the other, and registered_pages() imports every built-in page
    module once (each registers itself, as an extension would)."""
    import os
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}

    def run(code: str) -> str:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                              check=True).stdout.strip()

    for module, other in (("builtin", "results"), ("results", "builtin")):
        assert run(f"import sys, sparkreport.render.{module}; print('sparkreport.render.{other}' in sys.modules)") \
            == "False"
    assert run("from sparkreport.render.pages import registered_pages; "
               "print(','.join(p.name for p in registered_pages()))") \
        == "home,campaigns,results,memory,history,diffs,methodology,quality,runs,downloads"


def test_a_check_with_many_findings_lists_its_first_and_counts_the_rest() -> None:
    """The Data quality page stays readable at 10 000 runs: at most FINDINGS_PER_CHECK rows per
    check (in check()'s order), then one count per check cut short; findings.csv has all."""
    from sparkreport.render.builtin import cap_per_check

    findings = [{"code": "covariate-order", "severity": "warning", "n": i} for i in range(25)]
    findings += [{"code": "drift", "severity": "warning", "n": i} for i in range(3)]
    shown, more = cap_per_check(findings, 20)
    assert [f["n"] for f in shown if f["code"] == "covariate-order"] == list(range(20))
    assert [f["n"] for f in shown if f["code"] == "drift"] == [0, 1, 2]
    assert more == [{"code": "covariate-order", "severity": "warning", "count": 5}]


def test_quality_page_cuts_a_long_check_short_and_ships_every_finding(
        tmp_path: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import csv

    import sparkreport.render.builtin as builtin

    monkeypatch.setattr(builtin, "FINDINGS_PER_CHECK", 1)
    result = render(RenderOptions(runs_dir=published_store, project_root=tmp_path))
    text = page(result, "quality/index.md")
    with (result.docs_dir / "quality" / "findings.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    sections = quality_sections(text)
    assert len(sections) == len({row["check"] for row in rows}) < len(rows)  # one section per check
    assert all(len(table) == 1 for _line, table in sections.values())  # its first finding
    assert "A check with more than 1 findings is listed with 1 of them, those about the newest campaigns first." in text
    assert f"All {len(rows):,} findings are in [findings.csv](findings.csv)" in text


@pytest.mark.parametrize(("value", "digits", "text"), [
    (1.234, 2, "+1.23"), (-12.5, 2, "-12.50"), (0.0, 2, "0.00"), (-0.0, 1, "0.0"),
    (-0.0012, 2, "-0.001"), (0.00049, 2, "+0.0005"), (-0.0049, 2, "-0.005"), (0.04, 1, "+0.04"),
    (1e-7, 2, "0.00"), (None, 2, "—"), (float("nan"), 2, "—"),
])
def test_signed_numbers_never_print_a_signed_zero(value: float | None, digits: int, text: str) -> None:
    """An interval's end that rounds to zero keeps its sign with the decimals that show it."""
    assert signed(value, digits) == text


@pytest.mark.parametrize(("p", "text"), [
    (0.0, "<\u00a00.001"), (1e-300, "<\u00a00.001"), (0.00099, "<\u00a00.001"), (0.001, "0.001"), (0.0342, "0.034"),
    (0.05, "0.050"), (1.0, "1.000"), (None, "—"), (float("nan"), "—"),
])
def test_a_p_value_is_never_printed_as_zero(p: float | None, text: str) -> None:
    """One rule on every page, sentence and in the pull-request comment: three decimals, '< 0.001'
    below (the diff pages printed '0.0000'), unbroken in a narrow column. The rule is
    sparkreport.figures' (a claim's sentence gets the plain text); a page's '< 0.001' is Markup,
    which a template's escaping leaves with its no-break space."""
    from markupsafe import Markup

    from sparkreport import figures
    from sparkreport.render.markdown import pvalue

    assert pvalue(p) == figures.pvalue(p) == text
    assert isinstance(pvalue(p), Markup) == text.startswith("<")
    assert type(figures.pvalue(p)) is str


@pytest.mark.parametrize(("low", "high", "text"), [
    (76.02, 76.02, "no spread"), (0.0, 0.0, "no spread"), (9.4111, 9.4138, "9.411 to 9.414"),
    (2543.49, 2545.62, "2,543.49 to 2,545.62"), (None, 1.0, "—"), (float("nan"), float("nan"), "—"),
])
def test_an_interval_of_zero_width_says_no_spread(low: float | None, high: float, text: str) -> None:
    """As the Memory page says it: 'no spread' only where the ends are equal, never where they
    merely round to the same figure."""
    from sparkreport.render.markdown import interval

    assert interval(low, high, "peak_memory_gib") == text


def _md_escape_in_full(value: object) -> str:
    """md_escape without its shortcut for text it would leave as it is."""
    from sparkreport.render.markdown import _HTML_START, _MD_SPECIAL

    text = re.sub(r"\s+", " ", str(value))
    text = _HTML_START.sub(lambda m: "&lt;" if m.group() == "<" else "&amp;", text)
    return _MD_SPECIAL.sub(r"\\\1", text)


@given(st.text(alphabet=st.sampled_from(list("ab 1.,-\\`*_[]{}|<&#;/!?\t\n\r\x0b\x0c\u00a0\u2003\u3000é")), max_size=24))
@settings(max_examples=400, deadline=None)
def test_md_escape_returns_unchanged_text_only_where_escaping_changes_nothing(text: str) -> None:
    assert md_escape(text) == _md_escape_in_full(text)


def test_counts_take_the_right_number() -> None:
    from sparkreport.render.markdown import counted

    assert [counted(1, "iteration"), counted(2, "iteration"), counted(10000, "run"), counted(1, "arm", "arms")] == [
        "1 iteration", "2 iterations", "10,000 runs", "1 arm"]
    assert counted("3", "run") == "3 runs"  # a count read from a record as text
    from sparkreport.render.markdown import runs_and_summaries

    assert [runs_and_summaries(80, 8), runs_and_summaries(0, 2), runs_and_summaries(1, 1), runs_and_summaries(0, 0),
            runs_and_summaries(10000, 0)] == [
        "80 runs and 8 published arm summaries", "2 published arm summaries", "1 run and 1 published arm summary",
        "0 runs", "10,000 runs"]


def test_a_value_that_is_not_zero_never_prints_as_zero() -> None:
    """A difference or SD of 0.0017 ms printed 0.00 beside a Hedges' g of 0.62; a CV of 0.036%
    printed 0.0%. Two significant digits then; zero stays zero, other values keep their places."""
    from sparkreport.render.markdown import num, percent

    assert num(0.0017, digits=2) == "0.0017" and num(-0.0034, digits=2) == "-0.0034"
    assert num(0.0, digits=2) == "0.00" and num(0.005, digits=2) == "0.01" and num(1234.5, digits=1) == "1,234.5"
    assert percent(0.00036) == "0.036%" and percent(0.0) == "0.0%" and percent(0.088) == "8.8%"


def test_what_the_data_cannot_show_names_the_configured_factor() -> None:
    """Home's closing caveat speaks of the factor the site compares (``factor: version``: the
    versions), not of environments it may not compare at all."""
    from types import SimpleNamespace

    from sparkreport.render.builtin import data_limits

    site = SimpleNamespace(findings=[], config=SimpleNamespace(factor="version"))
    assert data_limits(site, []) == [  # type: ignore[arg-type]
        "The comparisons say how much the versions differ, not why: a cause needs a run designed to "
        "separate the explanations (see the memory page)."]


def other_metrics_tables(text: str) -> str:
    """The summary above the folded boxes of "## Other metrics"."""
    return sections(text)["Other metrics"].split("### Each metric in detail")[0]


def test_other_metrics_open_with_a_table_of_their_comparisons(tmp_path: Path, phase1_store: Path,
                                                              phase1_dataset: Dataset) -> None:
    """With output throughput the one primary metric, the memory metrics are "other metrics": the
    table that opens the section gives each one's mean per environment, baseline first, and the
    Δ % with its CI and the verdict of its comparison, as compare computed them; request
    throughput (tested as output throughput) and the temperature have their means and '—'."""
    from sparkreport.render.precision import deltas, table_places

    (tmp_path / "sparkreport.yml").write_text("primary_metrics: [output_throughput_tok_s]\n", encoding="utf-8")
    result = render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    comparisons = compare(phase1_dataset, "environment", "native", AnalysisOptions())
    stats = arm_stats(phase1_dataset, AnalysisOptions())
    marks = {"equivalent": "≈", "higher": "▲", "lower": "▼", "inconclusive": "?"}
    better = {"pre_kv_memory_gib": "lower", "kv_cache_gib": "higher", "memory_available_gib": "higher"}

    def judged(row: dict[str, Any]) -> str:  # a difference's worth, by the metric's better direction
        if row["verdict"] not in ("higher", "lower"):
            return ""
        return " (better)" if row["verdict"] == better[row["metric"]] else " (worse)"

    checked = 0
    for model in ("deepseek", "gpt120b", "qwen72b"):
        summary = other_metrics_tables(page(result, f"results/{model}/index.md"))
        assert "| Metric | native | container | Δ % (95% CI) | Verdict |" in summary
        for row in comparisons[comparisons["model"] == model].to_dict(orient="records"):
            if row["metric"] == "output_throughput_tok_s":
                continue
            cells = table_rows(summary, (f"{_label(row['metric'])} (GiB)",))
            assert len(cells) == 1, (model, row["metric"])
            low, high = (row["ratio_ci_low"] - 1) * 100, (row["ratio_ci_high"] - 1) * 100
            # a row's means with the decimals of the metric's table, its Δ % and ends with one number
            arms = stats[(stats["model"] == model) & (stats["metric"] == row["metric"])]
            d = table_places(arms.to_dict(orient="records"), row["metric"])
            delta, lo, hi = deltas((row["ratio"] - 1) * 100, low, high)
            assert cells[0][1:] == [num(row["mean_baseline"], digits=d), num(row["mean_candidate"], digits=d),
                                    f"{delta} ({lo} to {hi})",
                                    f"{marks[row['verdict']]} {row['verdict']}{judged(row)}"], (model, row["metric"])
            checked += 1
        untested = table_rows(summary, ("Request throughput (req/s)",))
        assert len(untested) == 1 and untested[0][3:] == ["—", ""]
        # the tested metrics this page shows, not Request throughput (output throughput stands for it)
        assert "the tests here are of Output throughput, " in summary and "of Request throughput" not in summary
        assert ("— one metric of each family, as the project chose (see "
                "[Methodology](../../methodology/index.md)); at a fixed workload Request throughput is an "
                "exact function of Output throughput, which is tested.") in summary
    assert checked == 6


def test_other_metrics_summary_marks_published_columns(rendered_summaries: RenderResult) -> None:
    """Published figures (no runs): the columns are marked once, in their heads; nothing is
    tested, so the table has no Δ % or verdict column; the sentence about the mark covers it."""
    text = page(rendered_summaries, "results/unnamed/index.md")
    summary = other_metrics_tables(text)
    assert "| Metric | native (*published*) | container (*published*) |\n|---|---|---|\n" in summary
    assert table_rows(summary, ("Memory available for KV cache (GiB)",))[0][1:] == ["41.33", "14.72"]
    # nothing compared: the one metric is said to be described, and the comparisons named (none was
    # tested: published without a spread)
    assert ("Each metric's mean per environment.\nThis metric is described, not tested: the comparisons here "
            "are of Memory before KV cache and KV cache — one metric of each family") in text
    assert "None of them" not in text and "Δ %" not in summary
    assert "Rows and columns marked *published* are published figures" in text


def _section(metric: str, arms: list[tuple[str, float, str]], comparisons: list[dict[str, object]] = (),
             campaign: str = "c") -> dict[str, object]:
    return {"metric": metric, "label": _label(metric), "unit": "ms", "primary": False, "constant": None,
            "arms": [{"campaign": campaign, "environment": env, "mean": mean, "source": source}
                     for env, mean, source in arms], "places": 1,
            "comparisons": [{"campaign": campaign, "baseline": "native", **c} for c in comparisons]}


def test_other_metrics_summary_shapes() -> None:
    """Two levels: a row per metric, baseline first; a level published in part is marked per mean.
    Three levels: a row per metric and level, the baseline first and the others by name (as every
    table lists them), whatever order the sections give. A metric of one level has its mean and no
    comparison."""
    from sparkreport.render.results import other_metrics_summary

    two = other_metrics_summary([
        _section("latency_ms_mean", [("cgroup", 2.0, "runs"), ("native", 1.0, "published")],
                 [{"candidate": "cgroup", "verdict": "higher"}]),
        _section("latency_ms_p99", [("native", 3.0, "runs")]),
    ], "native", {})
    (table,) = two["tables"]
    assert table["wide"] and [level["name"] for level in table["levels"]] == ["native", "cgroup"]
    assert not any(level["published"] for level in table["levels"])
    latency, single = table["rows"]
    assert [(c["mean"], c["published"]) for c in latency["cells"]] == [(1.0, True), (2.0, False)]
    assert latency["comparison"]["verdict"] == "higher"
    assert [c["mean"] for c in single["cells"]] == [3.0, None] and single["comparison"] is None
    assert latency["places"] == single["places"] == 1  # each row's decimals: its section's
    assert (two["tested"], two["untested"]) == (1, 0)

    three = other_metrics_summary([
        _section("latency_ms_mean", [("chroot", 1.0, "runs"), ("cgroup", 2.0, "runs"), ("native", 1.0, "runs")],
                 [{"candidate": "cgroup", "verdict": "higher"}, {"candidate": "chroot", "verdict": "equivalent"}]),
    ], "native", {})
    (table,) = three["tables"]
    assert not table["wide"]
    assert [(c["level"], c["comparison"] and c["comparison"]["verdict"]) for c in table["rows"][0]["cells"]] == [
        ("native", None), ("cgroup", "higher"), ("chroot", "equivalent")]


@pytest.fixture(scope="module")
def three_levels(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    """Native, cgroup and chroot: output throughput (primary), request latency (tested, not
    primary; cgroup 5% slower), and the end temperature recorded by the native runs only."""
    from sparkreport.schema import Environment, Model, RunRecord, Status

    root = tmp_path_factory.mktemp("three-levels")
    store = RunStore(root / "runs")
    rng = np.random.default_rng(11)
    for env, latency in {"native": 100.0, "cgroup": 105.0, "chroot": 100.0}.items():
        for i in range(1, 9):
            metrics = {"output_throughput_tok_s": float(1000 * (1 + 0.002 * rng.standard_normal())),
                       "latency_ms_mean": float(latency * (1 + 0.002 * rng.standard_normal()))}
            if env == "native":
                metrics["end_temp_c"] = float(40 + rng.standard_normal())
            store.write(RunRecord(run_id=f"m.{env}.i{i:02d}", campaign="smoke", iteration=i, model=Model(name="m"),
                                  environment=Environment(name=env), metrics=metrics,
                                  status=Status(exit_code=0, ok=True)), [])
    (root / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    return render(RenderOptions(runs_dir=root / "runs", project_root=root, docs_dir=root / "build" / "docs"))


def test_other_metrics_with_several_candidates_take_a_row_per_level(three_levels: RenderResult) -> None:
    summary = other_metrics_tables(page(three_levels, "results/m/index.md"))
    lines = [line for line in summary.splitlines() if line.startswith("|")]
    assert lines[0] == "| Metric | Environment | Mean | Δ % vs native (95% CI) | Verdict |"
    rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in lines[2:]]
    assert [row[:2] for row in rows] == [["GPU temperature at end (°C)", "native"],
                                         ["Request latency (mean, ms)", "native"], ["", "cgroup"], ["", "chroot"]]
    assert rows[0][3:] == ["—", ""] and rows[1][3:] == ["", ""]  # one level: no comparison; the baseline
    assert re.fullmatch(r"\+\d\.\d\d \(\+\d\.\d\d to \+\d\.\d\d\)", rows[2][3]) and rows[2][4] == "▲ higher (worse)"
    assert rows[3][4] == "≈ the same within ±2%"  # the words of the key above the tables


def test_a_list_of_campaigns_keeps_titles_with_commas_apart() -> None:
    """The "older ones (…)" lists of Memory and Results joined titles with '; ' where one held a
    comma ("…native; The unified-memory post, as published"): a list in English now, as the Memory
    page's lines name campaigns — each title quoted, commas and "and" — cut short past eight."""
    from sparkreport.render.markdown import make_environment

    env = make_environment(None)
    listed = env.from_string("{{ campaign_list(names) }}")
    assert listed.render(names=["v0.9.0"]) == "“v0.9.0”"
    assert listed.render(names=["v0.9.0", "v0.10.0"]) == "“v0.9.0” and “v0.10.0”"
    assert listed.render(names=["H100, cold", "H100, warm", "The post"]) == "“H100, cold”, “H100, warm” and “The post”"
    many = listed.render(names=[f"v0.{i}.0" for i in range(12)])
    assert many == "“v0.0.0”, “v0.1.0”, “v0.2.0”, “v0.3.0”, “v0.4.0”, “v0.5.0”, “v0.6.0”, “v0.7.0” and 4 more"


@pytest.mark.parametrize(("cache", "method", "design"), [
    ("as-is", "in randomized blocks, page cache as-is.", "10 iterations per arm, run in randomized blocks,\npage cache as-is."),
    ("[cold, warm]", "per arm and page-cache state, in randomized blocks, page cache cold and warm.",
     "10 iterations per arm and page-cache state (cold, warm): 20 runs per arm, the cache states pooled in "
     "each comparison, run in randomized blocks."),
])
def test_a_campaign_files_cache_reads_the_same_as_text_or_list(tmp_path: Path, phase1_store: Path, cache: str,
                                                               method: str, design: str) -> None:
    """A campaign file writes one page-cache state as text (`cache: as-is`) and several as a list;
    Methodology and the campaign page word both (the text was once joined letter by letter)."""
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    campaign = next(p.name for p in runs.iterdir() if p.is_dir())
    (runs / campaign / "_campaign").mkdir()
    (runs / campaign / "_campaign" / "campaign.yaml").write_text(
        f"campaign: {campaign}\niterations: 10\norder: randomized-blocks\ncache: {cache}\n", encoding="utf-8")
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path))
    assert method in page(result, "methodology/index.md")
    assert design in page(result, f"campaigns/{campaign}/index.md")


def test_a_verdict_is_said_in_one_set_of_words() -> None:
    from sparkreport.render.markdown import margin_text
    from sparkreport.render.report import verdict_words

    assert verdict_words("equivalent", margin_text(0.02)) == "the same within ±2%"
    assert verdict_words("equivalent", margin_text(0.025)) == "the same within ±2.5%"  # the key once said ±2%
    assert verdict_words("equivalent") == "the same within the margin"  # a legend over several margins
    assert [verdict_words(v) for v in ("higher", "lower", "inconclusive", "untested")] == [
        "higher", "lower", "no difference detected", "not tested"]


def test_an_answer_and_its_key_say_the_margin_each_metric_was_tested_at(tmp_path: Path, phase1_store: Path) -> None:
    """`analysis.margins` gives output throughput ±5%: the answer and the key under the table say
    ±5% (they said the project-wide ±2%); Methodology, not the key, names the setting."""
    shutil.copytree(phase1_store, tmp_path / "runs")
    (tmp_path / "sparkreport.yml").write_text("analysis:\n  margins:\n    output_throughput_tok_s: 0.05\n",
                                              encoding="utf-8")
    result = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path))
    home = page(result, "index.md")
    assert "- **The same within ±5%** (3 models): Output throughput, container against native" in home
    assert "≈ the same within ±5% (TOST:" in home
    assert "The ±5% margin was set by the project's author, not pre-registered." in home
    assert "analysis.margins" not in home  # a reader has no sparkreport.yml: Methodology names it
    # Methodology names the metric as the pages do, and a margin as set (±2.5% is not rounded to ±2%)
    methodology = page(result, "methodology/index.md")
    assert "within ±2% of the baseline mean (per metric: Output throughput ±5%)." in methodology
    assert "(`analysis.equivalence_margin`; per metric, `analysis.margins`) by its author" in methodology


def test_effects_of_several_margins_name_each_beside_its_metric() -> None:
    from types import SimpleNamespace

    from sparkreport.render.report import margin_of, with_margins

    site = SimpleNamespace(config=SimpleNamespace(analysis=SimpleNamespace(equivalence_margin=0.02)))
    two = [{"label": "Output throughput", "margin_pct": 2.0}, {"label": "KV cache", "margin_pct": 5.0},
           {"label": "Output throughput", "margin_pct": 2.0}]
    assert margin_of(site, two) is None and with_margins(two) == "Output throughput (±2%) and KV cache (±5%)"
    assert margin_of(site, two[:1]) == "±2%" and margin_of(site, []) == "±2%"


def test_what_the_data_cannot_show_tells_a_single_run_from_a_published_figure_without_sd() -> None:
    """Welch's test is skipped for a single-run arm too: that is not 'published without an SD'."""
    from types import SimpleNamespace

    from sparkreport.render.builtin import data_limits

    site = SimpleNamespace(findings=[], config=SimpleNamespace(factor="environment"))
    single = [{"skipped": "Welch t-test, difference CI, ratio CI, TOST, Hedges' g"}]
    assert not any("published" in line.lower() for line in data_limits(site, single))
    published = [{"skipped": "Mann–Whitney U, Welch t-test, difference CI, ratio CI, TOST, Hedges' g",
                  "untested_reason": "published without a spread"}]  # an effect says why it was not tested
    assert data_limits(site, published)[0].endswith("; figures published without an SD cannot be tested at all.")
    with_sd = [{"skipped": "Mann–Whitney U"}]
    assert data_limits(site, with_sd)[0].endswith("(Welch's test, the intervals and TOST use n, mean and SD).")


def test_an_interval_that_rounds_to_a_point_gets_the_decimals_that_tell_its_ends_apart() -> None:
    """'9.41 to 9.41' read as no spread beside an SD of 0.0034: its ends get more decimals, and
    the mean beside it as many (9.41 would read as outside '9.411 to 9.414')."""
    from sparkreport.render.markdown import ci, interval, mean_in

    assert ci(9.4108, 9.4142, "tpot_ms_mean") == "9.411 to 9.414"
    assert mean_in(9.4126, 9.4108, 9.4142, "tpot_ms_mean") == "9.413"
    assert ci(1.0, 2.0, "tpot_ms_mean") == "1.00 to 2.00" and mean_in(1.5, 1.0, 2.0, "tpot_ms_mean") == "1.50"
    assert interval(76.02, 76.02, "peak_memory_gib") == "no spread"
    assert ci(9.41, 9.41000001, "tpot_ms_mean") == "9.41 to 9.41"  # past four more decimals: as written


def test_every_list_of_metrics_leads_with_the_configured_primary_metrics_then_reads_by_label() -> None:
    from sparkreport.render.tables import metric_order

    names = ["ttft_ms_p99", "request_throughput_req_s", "kv_cache_gib", "ttft_ms_mean", "output_throughput_tok_s",
             "ttft_ms_min"]
    assert metric_order(names, ["output_throughput_tok_s", "kv_cache_gib", "not_present"]) == [
        "output_throughput_tok_s", "kv_cache_gib", "request_throughput_req_s", "ttft_ms_mean", "ttft_ms_min",
        "ttft_ms_p99"]
    # no lead: by label alone (the catalog no longer decides what comes first)
    assert metric_order(names)[0] == "kv_cache_gib"


def test_the_commands_a_page_prints_name_the_store_it_was_built_from(tmp_path: Path, published_store: Path) -> None:
    """A command a reader copies from a page (``sparkreport dataset``, ``check``, ``diff``,
    ``history``) reads the store the site was built from: the project's ``runs/`` needs no
    option; another store is named, relative to the project when inside it, else in full."""
    from sparkreport.render.context import SiteData

    inside = tmp_path / "project"
    shutil.copytree(published_store, inside / "results")
    result = render(RenderOptions(runs_dir=Path("results"), project_root=inside))
    assert "Regenerate them with `sparkreport dataset --runs-dir results --out dataset.parquet`" in page(
        result, "downloads/index.md")

    def site(runs_dir: Path, root: Path) -> SiteData:
        fields = {name: None for name, spec in SiteData.__dataclass_fields__.items() if spec.init}
        return SiteData(**{**fields, "runs_dir": runs_dir, "project_root": root})

    assert site(inside / "runs", inside).command("check", "--json") == ["sparkreport", "check", "--json"]
    assert site(inside / "results", inside).command("history") == ["sparkreport", "history", "--runs-dir", "results"]
    assert site(tmp_path / "elsewhere", inside).command("diff") == [
        "sparkreport", "diff", "--runs-dir", str(tmp_path / "elsewhere")]


def test_an_aside_every_assumption_ends_with_is_said_once() -> None:
    """Three models' sizes from the catalog: "(from the catalog; the record states no precision)"
    is said once for the list, not after each model; assumptions that end differently keep theirs."""
    from sparkreport.render.markdown import assumptions_sentence

    aside = " (from the catalog; the record states no precision)"
    assert assumptions_sentence([f"a's weights: 7B in BF16{aside}.", f"b's weights: 72B in BF16{aside}"]) == (
        f"Some of these checks rest on assumptions, not on recorded facts{aside}: a's weights: 7B in BF16; "
        "b's weights: 72B in BF16.")
    assert assumptions_sentence([f"a: 7B{aside}", "b: 72B (stated)"]) == (
        f"Some of these checks rest on assumptions, not on recorded facts: a: 7B{aside}; b: 72B (stated).")
    assert assumptions_sentence([f"a: 7B{aside}"]) == (
        f"Some of these checks rest on assumptions, not on recorded facts: a: 7B{aside}.")


def test_downloads_says_what_the_json_holds(rendered: RenderResult, rendered_summaries: RenderResult) -> None:
    """dataset.json's row count is the runs' and the published summaries' together: the page says
    how many of each, and names no summaries where the store has none."""
    runs_only = page(rendered, "downloads/index.md")
    assert "| JSON | the runs, with schema version and hash | 63 |" in runs_only
    summaries = page(rendered_summaries, "downloads/index.md")
    assert re.search(r"\| JSON \| the published summaries \(\d+ rows, one per arm and metric\), with schema "
                     r"version and hash \| \d+ \|", summaries)
    from sparkreport.render.builtin import json_contents

    assert json_contents(80, 28) == ("the runs (80 rows) and the published summaries (28 rows, one per arm and "
                                     "metric), with schema version and hash")


def test_the_quality_page_lists_the_runs_the_statistics_leave_out(tmp_path: Path) -> None:
    """A failed run is left out of the statistics, and Data quality lists it under "Runs the
    statistics leave out" — its run id, model, environment and why — and only it."""
    from sparkreport.schema import Environment, Model, RunRecord, Status

    store = RunStore(tmp_path / "runs")
    for env in ("native", "docker"):
        for i in range(1, 5):
            failed = env == "docker" and i == 4
            store.write(RunRecord(run_id=f"m.{env}.i{i}", campaign="smoke", iteration=i, model=Model(name="m"),
                                  environment=Environment(name=env),
                                  metrics={"output_throughput_tok_s": 100.0 + i + (env == "docker")},
                                  status=Status(exit_code=1 if failed else 0, ok=not failed)), [])
    (tmp_path / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    text = page(render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path,
                                     docs_dir=tmp_path / "build" / "docs")), "quality/index.md")
    left_out = text.split("## Runs the statistics leave out", 1)[1].split("\n## ", 1)[0]
    assert table_rows(left_out, ("`m.docker.i4`",)) == [["`m.docker.i4`", "m", "docker", "failed run (exit code 1)"]]
    assert len([line for line in left_out.splitlines() if line.startswith("| `")]) == 1
    # Methodology counts it in its arm's cell and names it under the campaign's table
    method = (tmp_path / "build" / "docs" / "methodology" / "index.md").read_text(encoding="utf-8")
    arms = method.split("## What each arm contains", 1)[1].split("\n## ", 1)[0]
    assert ("**[smoke](../campaigns/smoke/index.md)**\n\n| Model | native | docker |\n|---|---|---|\n"
            "| m | 4 / 4 | 3 / 4 |\n\nLeft out of the statistics (each with why; every one is on "
            "[Data quality](../quality/index.md)):\n\n- m, docker — `m.docker.i4`: failed run (exit code 1)\n") in arms
