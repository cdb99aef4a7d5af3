"""Home gives neighbouring campaigns of one design (a release each) one block: which campaigns it
covers, the newest's answer in full and one table of how each campaign answered; a campaign of
another design keeps a block of its own."""

from __future__ import annotations

import re

import pytest
from history_store import write_history_store

from sparkreport.render import RenderOptions, RenderResult, render

RELEASES = ["0.1.0", "0.2.0", "0.3.0"]
MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B")
HEAD = "| Model (docker vs native) | Output throughput | Peak memory |\n|---|---|---|\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    """Three releases of one design (two models each, a campaign per release), then a campaign of
    another design: one model only."""
    root = tmp_path_factory.mktemp("groups")
    write_history_store(root / "runs", versions=RELEASES, runs=3, campaign_per_version=True)
    write_history_store(root / "runs", versions=RELEASES, runs=3, campaign_per_version=True,
                        model="qwen3-8b", model_id="Qwen/Qwen3-8B", run_prefix="q-", seed=4)
    write_history_store(root / "runs", versions=["0.4.0"], runs=3, campaign="w-context", run_prefix="w-", seed=5)
    (root / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
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

