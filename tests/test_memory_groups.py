"""The Memory page gives neighbouring campaigns of one design (a release each) one block, as Home
does: which campaigns it covers, the newest's answer in full and how the others' answers moved
(or one sentence when they answered alike), a fit said once, the charts and tables of the newest
only, the others pointed to (budget.csv, Results) with how far they are from it; a campaign of
another design keeps its own section."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from history_store import write_history_store

from sparkreport.render import RenderOptions, RenderResult, render
from sparkreport.render.memory import answered_alike, identity_sections, largest_move

RELEASES = ["0.1.0", "0.2.0", "0.3.0"]
MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B")
SIZED = {"pool_gib": 119.7, "kv_fraction": 0.9}
BLOCK = "v0.1.0 to v0.3.0 (3 campaigns)"


def write_project(root: Path, *, models: int = 2, noise: float = 0.01, other: bool = True,
                  other_name: str = "w-context") -> RenderResult:
    """Three releases of one design whose runtime sized the KV cache as 0.9 of the memory left
    free (``models`` models each, a campaign per release), then, with ``other``, a campaign of
    another design (one model only), named ``other_name`` (after the releases' ``v…``, unless
    named to come first)."""
    write_history_store(root / "runs", versions=RELEASES, runs=3, campaign_per_version=True, noise=noise, **SIZED)
    if models > 1:
        write_history_store(root / "runs", versions=RELEASES, runs=3, campaign_per_version=True, noise=noise,
                            model="qwen3-8b", model_id="Qwen/Qwen3-8B", run_prefix="q-", seed=4, **SIZED)
    if other:
        write_history_store(root / "runs", versions=["0.4.0"], runs=3, campaign=other_name, run_prefix="w-", seed=5,
                            noise=noise, **SIZED)
    (root / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    return render(RenderOptions(runs_dir=root / "runs", project_root=root, docs_dir=root / "build" / "docs"))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    return write_project(tmp_path_factory.mktemp("memory-groups"))


def text(site: RenderResult, path: str) -> str:
    return (site.docs_dir / path).read_text(encoding="utf-8")


def section(page: str, heading: str) -> str:
    return page.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def table_after(page: str, head: str) -> dict[str, dict[str, str]]:
    """The table whose header row starts with ``head``: first cell → column label → cell."""
    lines = page.split(head, 1)[1].split("\n\n", 1)[0].splitlines()
    labels = [cell.strip() for cell in (head + lines[0]).strip("| ").split(" | ")]
    return {cells[0]: dict(zip(labels[1:], cells[1:], strict=True))
            for cells in (line.strip("| ").split(" | ") for line in lines[2:])}


def test_a_block_gives_the_newest_answer_and_how_the_others_moved(site: RenderResult) -> None:
    page = text(site, "memory/index.md")
    assert ("\n[v0.1.0](../campaigns/v0.1.0/index.md), [v0.2.0](../campaigns/v0.2.0/index.md) and "
            "[v0.3.0](../campaigns/v0.3.0/index.md) are 3 campaigns of one design (the same models, settings and "
            "environments; what differs between them: engine version 0.1.0 / 0.2.0 / 0.3.0).\n"
            "This page gives the newest, v0.3.0, in full, and of the other 2 how far they differ\n"
            "from it; every arm's budget, theirs too, is in [budget.csv](budget.csv).\n") in page
    answers = page.split(f"**{BLOCK}**: the answer of the newest, v0.3.0.\n\n", 1)[1].split("\n## ", 1)[0]
    assert answers.startswith("- **The same within ±2%** (2 models): KV cache, docker against native")
    top = page.split("\n## ", 1)[0]  # the answers: the older releases' are not given in full
    assert "**v0.1.0**" not in top and "**v0.2.0**" not in top
    # the newest of the block, and w-context: more memory before the KV cache is worse
    assert page.count("- **Worse in docker than in native**: Memory before KV cache higher") == 2
    # one row per model; in each cell each release's mark, as its own page's table has it, in order
    moved = table_after(answers, "| Model (docker vs native) |")
    assert list(moved) == list(MODELS)
    own = [table_after(text(site, f"campaigns/v{release}/index.md"), "| Model (docker vs native) |")
           for release in RELEASES]
    marks = set()
    for model in MODELS:
        for label in ("Memory before KV cache", "KV cache"):
            cell = moved[model][label].split(" ")
            marks.add(cell[0])
            assert cell[0].split("\u00a0") == [table[model][label].split(" ")[0] for table in own]
    assert any(len(set(m.split("\u00a0"))) > 1 for m in marks)  # this store's answers do move
    # the answers say their intervals in words, so the key under the moves starts with its marks
    assert "(95% CIs between -1.38% and " in answers and "Brackets" not in answers
    assert "\n≈ the same within ±2% (TOST" in answers
    # the campaign of another design: its answer as the page gave it
    other = answers.split("\n**w-context**\n\n", 1)[1]
    assert other.startswith("- **The same within ±2%** (1 model): KV cache, docker against native")


def test_a_blocks_introduction_opens_its_own_answer(tmp_path: Path) -> None:
    """A campaign of another design listed before the releases keeps its answer first, and the
    sentence that names the releases comes with theirs, not above the lone campaign's."""
    page = text(write_project(tmp_path, other_name="a-context"), "memory/index.md").split("\n## ", 1)[0]
    lone, block = page.split("\n**a-context**\n\n", 1)[1].split("\n\n[v0.1.0]", 1)
    assert lone.startswith("- **The same within ±2%** (1 model): KV cache, docker against native")
    assert "are 3 campaigns of one design" not in page.split("**a-context**", 1)[0]
    assert block.startswith("(../campaigns/v0.1.0/index.md), [v0.2.0](../campaigns/v0.2.0/index.md) and "
                            "[v0.3.0](../campaigns/v0.3.0/index.md) are 3 campaigns of one design")
    assert f"\nfrom it; every arm's budget, theirs too, is in [budget.csv](budget.csv).\n\n**{BLOCK}**: the answer of " \
           "the newest, v0.3.0.\n" in block


def test_releases_that_answer_alike_are_one_sentence(tmp_path: Path) -> None:
    """One model, little noise: every release gives the same verdicts, said in one sentence with
    the span of their differences, not in a table."""
    page = text(write_project(tmp_path, models=1, noise=0.002, other=False), "memory/index.md")
    answers = page.split(f"**{BLOCK}**: the answer of the newest, v0.3.0.\n\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"\nThe other 2 answered alike: each gave every model the same verdict on each figure as "
                      r"v0\.3\.0\.\nAcross the 3 campaigns, the differences from the baseline span "
                      r"\+(\d\.\d\d)% to \+(\d\.\d\d)% \(Memory before KV cache\) and -(\d\.\d\d)% to -(\d\.\d\d)% "
                      r"\(KV cache\); each campaign's intervals are on its page\.\n", answers)
    assert found, answers
    low, high = float(found[1]), float(found[2])
    assert 4 < low <= high < 7  # docker holds about 1 GiB more of about 18
    assert "How the answers moved" not in page and "| Model (docker vs native) |" not in page
    assert "In these answers, brackets" not in page and "(95% CI -" in answers  # the intervals said in words


def test_the_charts_draw_the_newest_of_a_block_and_budget_csv_keeps_every_arm(site: RenderResult) -> None:
    charts = site.docs_dir / "memory" / "charts"
    newest = "v0.3.0, the newest of v0.1.0 to v0.3.0"
    budget = json.loads((charts / "memory-budget.vl.json").read_text(encoding="utf-8"))
    assert {row["campaign"] for row in budget["data"]["values"]} == {newest, "w-context"}
    scatter = json.dumps(json.loads((charts / "kv-vs-peak.vl.json").read_text(encoding="utf-8")))
    assert newest in scatter and "w-context" in scatter and '"v0.1.0"' not in scatter
    # no campaign is older than the five newest: budget.csv is offered for the block's
    doc = next(d for d in site.pages if d.path == "memory/index.md")
    assert doc.files == ["memory/budget.csv"]
    with (site.docs_dir / "memory" / "budget.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {row["campaign"] for row in rows} == {"v0.1.0", "v0.2.0", "v0.3.0", "w-context"}


def test_the_tables_print_the_newest_and_say_how_far_the_others_are(site: RenderResult) -> None:
    page = text(site, "memory/index.md")
    for heading in ("Memory in use and KV cache", "Memory budget"):
        tables = section(page, heading)
        assert re.findall(r"^\*\*(.+?)\*\*(.*)$", tables, flags=re.M) == [
            ("v0.3.0", f", the newest of {BLOCK}"), ("w-context", "")], heading
    # how far the older releases' means are from the newest's, from every arm's figures
    with (site.docs_dir / "memory" / "budget.csv").open(encoding="utf-8") as f:
        arms = {(r["campaign"], r["model"], r["environment"]): r for r in csv.DictReader(f)}
    moves = [(abs(float(r[key]) - float(arms[("v0.3.0", model, env)][key])), key, model, env, campaign)
             for (campaign, model, env), r in arms.items() if campaign in ("v0.1.0", "v0.2.0")
             for key in ("pre_kv", "kv")]
    gib, key, model, env, campaign = max(moves)
    label = {"pre_kv": "Memory before KV cache", "kv": "KV cache"}[key]
    name = {"llama-3.1-8b": MODELS[0], "qwen3-8b": MODELS[1]}[model]
    assert (f"\nNot printed again: “v0.1.0” and “v0.2.0”, whose means differ from these by {gib:.2f} GiB at most "
            f"({label} of {name} in {env}, in {campaign}).\nEach arm's figures are on its model's "
            "[Results](../results/index.md) page.\n") in section(page, "Memory in use and KV cache")
    assert ("\nThe budgets of “v0.1.0” and “v0.2.0”, of the same design, are in [budget.csv](budget.csv) with every "
            "other arm's.\n") in section(page, "Memory budget")


def test_a_fit_the_releases_share_is_said_once(site: RenderResult) -> None:
    fits = section(text(site, "memory/index.md"), "One finding, not two")
    assert fits.startswith(
        f"\n- **{BLOCK}**: KV cache = 0.900 × (pool − memory before the KV cache) +0.00 GiB fits all 4 arms of each "
        "(R² 1.0000): the KV cache is sized as a fixed fraction of the memory left free")
    assert fits.count("\n- **") == 1  # w-context's two arms fit no line
    assert "the fitted\nfraction (0.900 in every campaign)\n" in fits


def fit(campaign: str, fraction: float, intercept: str, arms: int = 10, r2: str = "1.0000") -> dict[str, Any]:
    body = (f"KV cache = {fraction:.3f} × (pool − memory before the KV cache) {intercept} GiB fits all {arms} arms "
            f"(R² {r2}): the KV cache is sized as a fixed fraction of the memory left free.")
    return {"campaign": campaign, "body": body, "fraction": fraction}


def test_fits_are_said_once_where_they_agree_but_for_intercept_and_r2() -> None:
    """Releases whose fits differ only in the intercept and R² share a line with their spans; one
    with another fraction or arm count keeps its own; a campaign of another design its own."""
    block = {"campaigns": [SimpleNamespace(name=name) for name in ("a", "b", "c", "d")]}
    other = {"campaigns": [SimpleNamespace(name="z")]}
    fits = [fit("a", 0.9, "+0.01"), fit("b", 0.9, "-0.02", r2="0.9998"), fit("c", 0.85, "+0.00"),
            fit("d", 0.9, "+0.00"), fit("z", 0.9, "+0.07", arms=6)]
    said = identity_sections(fits, [block, other])
    assert [(line["campaigns"], line.get("contiguous")) for line in said["lines"]] == [
        (["a", "b", "d"], False), (["c"], None), (["z"], None)]
    assert said["lines"][0]["body"] == (
        "KV cache = 0.900 × (pool − memory before the KV cache) + c fits all 10 arms of each "
        "(c from -0.02 to +0.01 GiB; R² 0.9998 to 1.0000): the KV cache is sized as a fixed fraction of the "
        "memory left free.")
    assert said["lines"][1]["body"] == fits[2]["body"] and said["lines"][2]["body"] == fits[4]["body"]
    assert said["fractions"] == [0.9, 0.85, 0.9] and not said["same"]
    # one fit alone: its own fraction, not "in every campaign"
    assert identity_sections([fits[4]], [other])["same"] is False


def test_a_mark_that_moves_keeps_the_table() -> None:
    def cell(marks: list[str | None], low: float, high: float) -> dict[str, Any]:
        return {"marks": marks, "low": low, "high": high}

    moves = {"by": "model", "more": 0, "metrics": [{"metric": "kv_cache_gib", "label": "KV cache"}],
             "rows": [{"model_name": "m", "cells": {"kv_cache_gib": cell(["≈", "≈"], -1.0, -0.5)}},
                      {"model_name": "n", "cells": {"kv_cache_gib": cell(["≈", "≈"], -0.9, -0.2)}}]}
    assert answered_alike(moves) == [{"label": "KV cache", "low": -1.0, "high": -0.2}]
    moves["rows"][1]["cells"]["kv_cache_gib"]["marks"] = ["≈", "?"]
    assert answered_alike(moves) is None
    moves["rows"][1]["cells"]["kv_cache_gib"]["marks"] = [None, "≈"]  # compared in one release only
    assert answered_alike(moves) is None


def test_the_largest_move_is_found_per_arm_and_figure() -> None:
    def arm(campaign: str, env: str, pre_kv: float, kv: float | None) -> dict[str, Any]:
        return {"campaign": campaign, "model": "m", "model_name": "M", "environment": env,
                "pre_kv": {"mean": pre_kv}, "peak": None, "kv": None if kv is None else {"mean": kv}}

    block = {"campaigns": [SimpleNamespace(name=n) for n in ("a", "b")], "newest": SimpleNamespace(name="b")}
    arms = [arm("a", "docker", 19.0, 90.0), arm("a", "native", 18.0, 91.7), arm("a", "cgroup", 18.0, 91.0),
            arm("b", "docker", 19.1, 90.0), arm("b", "native", 18.0, 91.5)]
    assert largest_move(arms, block) == {"gib": pytest.approx(0.2), "arm": "M in native", "label": "KV cache",
                                         "campaign": "a", "unmatched": 1}


def test_a_block_of_two_speaks_of_the_other_one(tmp_path: Path) -> None:
    """Two releases of one design: "of the other one how far it differs", not "the other 1 … they"."""
    write_history_store(tmp_path / "runs", versions=["0.1.0", "0.2.0"], runs=3, campaign_per_version=True, **SIZED)
    (tmp_path / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    page = text(render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path)), "memory/index.md")
    assert "This page gives the newest, v0.2.0, in full, and of the other one how far it differs\nfrom it" in page
