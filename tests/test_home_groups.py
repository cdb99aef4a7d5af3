"""Home gives neighbouring campaigns of one design (a release each) one block: which campaigns it
covers, the newest's answer in full, one table of how each campaign answered, and what the checks
found in all of them said once; a campaign of another design keeps a block of its own."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest
from history_store import write_history_store

from sparkreport.render import RenderOptions, RenderResult, render
from sparkreport.render.home import findings_sections

RELEASES = ["0.1.0", "0.2.0", "0.3.0"]
MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B")
HEAD = "| Model (docker vs native) | Output throughput | Peak memory |\n|---|---|---|\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    """Three releases of one design (two models each, a campaign per release), then a campaign of
    another design: one model only. Every arm varies more than the CV threshold: a finding in
    every campaign."""
    root = tmp_path_factory.mktemp("groups")
    write_history_store(root / "runs", versions=RELEASES, runs=3, campaign_per_version=True)
    write_history_store(root / "runs", versions=RELEASES, runs=3, campaign_per_version=True,
                        model="qwen3-8b", model_id="Qwen/Qwen3-8B", run_prefix="q-", seed=4)
    write_history_store(root / "runs", versions=["0.4.0"], runs=3, campaign="w-context", run_prefix="w-", seed=5)
    (root / "sparkreport.yml").write_text("factor: environment\nbaseline: native\nanalysis:\n  cv_threshold: 0.0001\n",
                                          encoding="utf-8")
    return render(RenderOptions(runs_dir=root / "runs", project_root=root, docs_dir=root / "build" / "docs"))


def text(site: RenderResult, path: str) -> str:
    return (site.docs_dir / path).read_text(encoding="utf-8")


def answer_rows(page: str) -> dict[str, list[str]]:
    """The first answer table of a page: model → its cells."""
    table = page.split(HEAD, 1)[1].split("\n\n", 1)[0]
    return {cells[0]: cells[1:] for cells in (line.strip("| ").split(" | ") for line in table.splitlines())}


def test_campaigns_of_one_design_are_one_block_and_another_design_its_own(site: RenderResult) -> None:
    home = text(site, "index.md")
    assert re.findall(r"^## (.*)$", home, flags=re.M)[:2] == [
        "v0.1.0 to v0.3.0 (3 campaigns)", "[w-context](campaigns/w-context/index.md)"]
    group = home.split("## v0.1.0 to v0.3.0 (3 campaigns)\n", 1)[1].split("\n## ", 1)[0]
    assert ("\n3 campaigns of one design (the same models, settings and environments), each with its own page: "
            "[v0.1.0](campaigns/v0.1.0/index.md), [v0.2.0](campaigns/v0.2.0/index.md) and "
            "[v0.3.0](campaigns/v0.3.0/index.md).\n"
            "What differs between them, in that order: engine version 0.1.0 / 0.2.0 / 0.3.0.\n") in group
    assert "**Design.** docker against the baseline **native**, 2 models,\n12 runs each.\n" in group
    # the newest's answer in full, its table as its own page has it; the older ones' not
    assert "**The answer of the newest, [v0.3.0](campaigns/v0.3.0/index.md)** (by their last run).\n" in group
    assert answer_rows(group) == answer_rows(text(site, "campaigns/v0.3.0/index.md"))
    assert home.count("**The answer") == 2 and home.count(HEAD) == 3
    # the campaign of another design: its block as a lone campaign's
    other = home.split("## [w-context](campaigns/w-context/index.md)\n", 1)[1].split("\n## ", 1)[0]
    assert "\n**The answer.**\n" in other and "campaigns of one design" not in other
    assert answer_rows(other) == answer_rows(text(site, "campaigns/w-context/index.md"))


def test_a_block_shows_how_each_campaign_answered_in_one_table(site: RenderResult) -> None:
    """Several models: a row per model, each cell each release's mark in order and the span of
    their differences — the marks of the releases' own tables."""
    group = text(site, "index.md").split("**How the answers moved.**", 1)[1].split("\n## ", 1)[0]
    assert group.startswith(" In each cell, the mark of each campaign in the order above, then the span of "
                            "their differences from the baseline (each campaign's intervals are on its page):\n\n")
    moved = answer_rows(group)
    assert list(moved) == list(MODELS)
    own = [answer_rows(text(site, f"campaigns/v{release}/index.md")) for release in RELEASES]
    for model in MODELS:
        for column, cell in enumerate(moved[model]):
            marks, span = cell.split(" ", 1)
            assert marks.split("\u00a0") == [tables[model][column].split(" ")[0] for tables in own]
            deltas = sorted(float(tables[model][column].split(" ")[1].rstrip("%")) for tables in own)
            assert span == f"{deltas[0]:+.2f}% to {deltas[-1]:+.2f}%"
    assert group.count("could not have been detected") == 1
    assert "\nWhere a mark is ?, differences smaller than" in group


def test_what_every_campaign_of_a_block_found_is_said_once(site: RenderResult) -> None:
    checks = text(site, "index.md").split("## What the checks found\n", 1)[1].split("\n## ", 1)[0]
    assert ("**v0.1.0 to v0.3.0 (3 campaigns)**, in every one of them:\n\n"
            "- **warning: high run-to-run variation** — meta-llama/Llama-3.1-8B-Instruct, Qwen/Qwen3-8B "
            "(native and docker; 4 findings)\n\n"
            "**w-context**\n\n"
            "- **warning: high run-to-run variation** — meta-llama/Llama-3.1-8B-Instruct (native and docker; "
            "2 findings)\n") in checks
    assert "**v0.2.0**" not in checks and "Nothing besides" not in checks


def test_the_checks_of_a_block_are_said_once() -> None:
    """What every campaign of a block found is one list; each campaign adds what differs, and
    those that add nothing are named once. A lone campaign's findings stay under its title."""
    def line(campaign: str, code: str, models: list[str], severity: str = "warning") -> dict[str, Any]:
        return {"severity": severity, "code": code, "title": code, "campaign": campaign, "models": models,
                "levels": ["docker"], "count": 1}

    groups = [line("old", "crash", ["a"], "error"),
              line("v1", "drift", ["a"]), line("v1", "noisy", ["b"]),
              line("v2", "drift", ["a"]),
              line("v3", "drift", ["a"]), line("v3", "noisy", ["a"])]
    block = {"campaigns": [SimpleNamespace(name=name) for name in ("v1", "v2", "v3")]}
    assert findings_sections(groups, [block]) == [
        {"campaign": "old", "found": [groups[0]]},
        {"campaigns": ["v1", "v2", "v3"], "common": [groups[1]],
         "each": [{"campaign": "v1", "found": [groups[2]]}, {"campaign": "v3", "found": [groups[5]]}],
         "quiet": ["v2"]}]
    # the same check on other models is not the same finding
    other = [line("v1", "drift", ["a"]), line("v2", "drift", ["b"])]
    pair = {"campaigns": [SimpleNamespace(name="v1"), SimpleNamespace(name="v2")]}
    assert findings_sections(other, [pair]) == [
        {"campaigns": ["v1", "v2"], "common": [],
         "each": [{"campaign": "v1", "found": [other[0]]}, {"campaign": "v2", "found": [other[1]]}], "quiet": []}]


def test_the_chart_draws_the_answers_given_in_full(site: RenderResult) -> None:
    """Home's forest chart draws the campaigns whose answer the page gives in full: of a block of
    one design its newest, and a campaign of another design; the older releases' answers are in
    their block's table, not in panels that repeat it. Its heading says so."""
    import json

    home = text(site, "index.md")
    spec = json.loads((site.docs_dir / "charts" / "effects.vl.json").read_text(encoding="utf-8"))
    panels = spec.get("vconcat", [spec])  # a panel per campaign
    assert {row["campaign"] for panel in panels for row in panel["layer"][-1]["data"]["values"]} == {
        "v0.3.0", "w-context"}
    assert "## The answers at a glance\n\nEach campaign whose answer is given in full above;" in home
    assert "## Every effect at a glance" not in home


def test_a_span_that_rounds_to_one_value_is_said_once() -> None:
    """A cell of how the answers moved whose differences round alike says the value once
    ("≈ ≈ -0.66%"), not "-0.66% to -0.66%"."""
    from sparkreport.render.markdown import make_environment

    cell = make_environment(None).get_template("_effects.md").module.marks_cell  # type: ignore[attr-defined]
    assert str(cell({"marks": ["≈", "≈"], "low": -0.6612, "high": -0.6649})) == "≈\u00a0≈ -0.66%"
    assert str(cell({"marks": ["▲", "▲"], "low": 2.32, "high": 2.34})) == "▲\u00a0▲ +2.32% to +2.34%"
