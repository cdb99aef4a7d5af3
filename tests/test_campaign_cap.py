"""Pages that span campaigns show the newest in full once a store holds many campaigns (one per
release, say): a model's page its five newest campaigns with a page of its own for the older ones,
the Results overview and the home page the same five; with five or fewer, every campaign."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from history_store import write_history_store

from sparkreport.render import RenderOptions, RenderResult, render
from sparkreport.render.report import CAMPAIGNS_IN_FULL

#: In time order; in name order v0.10.0 and v0.11.0 come first, so "newest" must mean the runs' time.
VERSIONS = ["0.9.0", "0.10.0", "0.11.0", "0.12.0", "0.13.0", "0.14.0", "0.15.0"]
OLDER = ["v0.10.0", "v0.9.0"]
NEWEST = ["v0.11.0", "v0.12.0", "v0.13.0", "v0.14.0", "v0.15.0"]
MODEL = "results/llama-3.1-8b/index.md"
EARLIER = "results/llama-3.1-8b/earlier/index.md"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cap")
    write_history_store(root / "runs", versions=VERSIONS, runs=3, campaign_per_version=True, kv_cache=True)
    (root / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def site(store: Path) -> RenderResult:
    return render(RenderOptions(runs_dir=store / "runs", project_root=store, docs_dir=store / "build" / "docs"))


def text(site: RenderResult, path: str) -> str:
    return (site.docs_dir / path).read_text(encoding="utf-8")


def table_campaigns(markdown: str) -> set[str]:
    return set(re.findall(r"^\| (v[\d.]+) \|", markdown, flags=re.M))


def test_the_model_page_shows_the_newest_campaigns_by_run_time(site: RenderResult) -> None:
    assert len(NEWEST) == CAMPAIGNS_IN_FULL
    page = text(site, MODEL)
    assert ("The 5 newest campaigns of this model, by their last run; the\n2 older ones (“v0.10.0” and “v0.9.0”) "
            "are on [a page of their own](earlier/index.md).") in page
    assert table_campaigns(page) == set(NEWEST)
    assert "The statistics use all 30 runs of this model in these campaigns" in page
    # a quantity the same in every run of every campaign shown: one clause over all their runs
    assert ("## KV cache (GiB)\n\n20.00 GiB in every run (30 runs): no run-to-run variance, so stated, "
            "not tested.\n") in page
    doc = next(d for d in site.pages if d.path == MODEL)
    assert doc.charts and all(c.name.rsplit("-", 1)[-1] in ("runs", "means") for c in doc.charts)


def test_a_model_answer_in_several_campaigns_is_one_table(site: RenderResult) -> None:
    """Five campaigns (releases) of one model: their answers are one table, a row per campaign and
    a column per primary metric, with what each answer would add said once under it — not five
    blocks of the same sentences; what each states as held constant, as Home's answer does, is
    said once too."""
    page = text(site, MODEL)
    assert ("| Campaign (docker vs native) | Output throughput | Peak memory |\n|---|---|---|\n"
            "| v0.11.0 | ? -0.47% (-2.96 to +2.10) | ≈ -0.10% (-1.44 to +1.26) |\n") in page
    rows = re.findall(r"^\| (v[\d.]+) \| [?≈▲▼○—]", page, flags=re.M)
    assert rows == NEWEST
    assert page.count("could not have been detected") == 1
    assert ("Where a cell is ?, differences smaller than about 3% to 4% (depending on the comparison) could not have "
            "been detected with these runs.") in page
    assert "**v0.11.0**" not in page and "- **No difference detected" not in page
    assert "\nCells and Δ %: difference from the baseline in percent" in page
    # what the answers state, not test (Home's line of the newest), said once for the five under the table
    assert ("could not have been detected with these runs.\n\n**In every campaign**\n\n- **The same in both "
            "environments**: KV cache, one value in every run — stated, not tested.\n") in page


def test_the_older_campaigns_have_a_page_of_tables(site: RenderResult) -> None:
    page = text(site, EARLIER)
    assert page.startswith("---\nsearch:\n  exclude: true\n---\n# meta-llama/Llama-3.1-8B-Instruct: earlier campaigns")
    assert ("The tables of the 2 older campaigns of meta-llama/Llama-3.1-8B-Instruct, for the record; its\n"
            "[page](../index.md) has the 5 newest (“v0.11.0”, “v0.12.0”, “v0.13.0”, “v0.14.0” and “v0.15.0”) "
            "in full, with their charts.") in page
    assert table_campaigns(page) == set(OLDER)
    assert "The statistics use all 12 runs of this model in these campaigns" in page
    doc = next(d for d in site.pages if d.path == EARLIER)
    assert doc.charts == [] and "sparkreport-chart" not in page
    assert "[Methodology](../../../methodology/index.md)" in page  # one folder deeper


def test_nav_and_overview_list_the_model_page_only(site: RenderResult) -> None:
    results = dict(site.nav)["Results"]
    assert [path for _title, path in results] == ["results/index.md", MODEL]
    overview = text(site, "results/index.md")
    assert "For a model measured in more than 5 campaigns, the 5 newest (by their last run)\nare shown" in overview
    # a model's rows from several campaigns: each row names its campaign, none is named above the table
    assert {row.split(" | ")[1] for row in overview.splitlines() if row.startswith("| Output")} == set(NEWEST)
    assert "\nCampaign: " not in overview


def test_home_answers_the_newest_and_links_the_older(site: RenderResult) -> None:
    """The five newest, releases of one design, are one block: the newest's answer in full and,
    one model each, a row per campaign of how they answered (as the model's page has it)."""
    home = text(site, "index.md")
    assert re.findall(r"^## (v.*)$", home, flags=re.M) == ["v0.11.0 to v0.15.0 (5 campaigns)"]
    assert "**The answer of the newest, [v0.15.0](campaigns/v0.15.0/index.md)** (by their last run).\n" in home
    moved = home.split("**How the answers moved**, a row per campaign:\n\n", 1)[1]
    assert moved.startswith("| Campaign (docker vs native) | Output throughput | Peak memory |\n|---|---|---|\n"
                            "| v0.11.0 | ? -0.47% (-2.96 to +2.10) | ≈ -0.10% (-1.44 to +1.26) |\n")
    assert re.findall(r"^\| (v[\d.]+) \| [?≈▲▼○—]", moved.split("\n\n", 1)[0], flags=re.M) == NEWEST
    assert "\nWhere a cell is ?, differences smaller than about 3% to 4%" in moved
    assert ("## Earlier campaigns\n\nThe 5 newest campaigns (by their last run) are above; the\n2 older ones have "
            "their question and answer on their own pages, listed on\n[Campaigns](campaigns/index.md) with their "
            "design.") in home


def test_the_nav_lists_the_newest_campaigns_and_an_overview_lists_them_all(site: RenderResult) -> None:
    section = dict(site.nav)["Campaigns"]
    assert section == [("Overview", "campaigns/index.md"), *((v, f"campaigns/{v}/index.md") for v in NEWEST)]
    overview = text(site, "campaigns/index.md")
    assert overview.startswith("# Campaigns\n\nEvery campaign in the store, newest first (by their last run); "
                               "the nav lists the 5 newest.")
    rows = [line for line in overview.splitlines() if line.startswith("| [")]
    assert [re.match(r"\| \[(v[\d.]+)\]", row)[1] for row in rows] == [*reversed(NEWEST), *OLDER]
    # the comparisons each campaign's answer reports, counted by mark, as its page marks them
    assert rows[0] == "| [v0.15.0](v0.15.0/index.md) | 2026-01-07 | native, docker | 1 | 6 runs | ≈\u00a01 · ?\u00a01 | — |"
    table = text(site, "campaigns/v0.15.0/index.md").split("| Model (docker vs native) |", 1)[1].split("\n\n")[0]
    cells = [cell.strip() for line in table.splitlines()[2:] for cell in line.strip("|").split("|")[1:]]
    assert sorted(cell.split()[0] for cell in cells) == ["?", "≈"]
    assert ("\n\nAnswers: how many of the comparisons its answer reports (of the metrics the pages lead with: "
            "Output throughput, Time to first token (mean)") in overview
    assert "got each mark — ≈ the same within ±2% and ? no difference detected, none ruled out; its page says which." \
        in overview


def test_without_run_times_the_overview_says_its_order_is_the_names(store: Path, tmp_path: Path) -> None:
    """Ingested aggregates carry no run times: the overview says its order is the names', and
    has no Last run column."""
    import json

    from sparkreport.names import campaign_order

    project = tmp_path / "p"
    shutil.copytree(store, project, ignore=shutil.ignore_patterns("build"))
    for path in (project / "runs").glob("*/*/run.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["started_at"] = None
        path.write_text(json.dumps(data), encoding="utf-8")
    site = render(RenderOptions(runs_dir=project / "runs", project_root=project,
                                docs_dir=project / "build" / "docs"))
    overview = text(site, "campaigns/index.md")
    assert ("Every campaign in the store, newest first (by name, as no run records when it ran); the nav "
            "lists the 5 newest.") in overview
    assert "| Campaign | Environments (baseline first) | Models | Data | Answers | GPU |" in overview
    rows = [line for line in overview.splitlines() if line.startswith("| [")]
    # newest first by name, its numbers by value: v0.15.0 above v0.9.0 (by code point v0.9.0 came first)
    assert [re.match(r"\| \[(v[\d.]+)\]", row)[1] for row in rows] == sorted(
        (f"v{v}" for v in VERSIONS), key=campaign_order, reverse=True)
    # and no page claims the newest were chosen by their last run
    assert "The 5 newest campaigns (by name, as no run records when it ran) are above" in text(site, "index.md")
    assert "newest campaigns of this model, by name, as no run records when it ran;" in text(site, MODEL)
    assert "by their last run" not in "".join(text(site, p.path) for p in site.pages)


def test_a_new_run_in_the_newest_campaign_leaves_the_older_page_alone(store: Path, tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(store, project, ignore=shutil.ignore_patterns("build"))
    options = RenderOptions(runs_dir=project / "runs", project_root=project, docs_dir=project / "build" / "docs")
    render(options)
    newest = project / "runs" / "v0.15.0"
    source = next(newest.glob("native-0.15.0-0"))
    copy = newest / "native-0.15.0-9"
    shutil.copytree(source, copy)
    run_json = copy / "run.json"
    run_json.write_text(run_json.read_text(encoding="utf-8").replace("native-0.15.0-0", "native-0.15.0-9")
                        .replace('"iteration": 1', '"iteration": 10'), encoding="utf-8")
    again = render(options)
    assert MODEL in again.rendered_pages and EARLIER in again.skipped_pages


def test_five_campaigns_or_fewer_are_all_shown(tmp_path: Path) -> None:
    write_history_store(tmp_path / "runs", versions=VERSIONS[:5], runs=2, campaign_per_version=True)
    site = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path, docs_dir=tmp_path / "build" / "docs"))
    assert not (site.docs_dir / EARLIER).exists()
    page = text(site, MODEL)
    assert "older ones" not in page and len(table_campaigns(page)) == 5
    assert "Earlier campaigns" not in text(site, "index.md")
    # /campaigns/ is a page still (as /results/ is): every campaign, and the nav lists them all
    section = dict(site.nav)["Campaigns"]
    assert section[0] == ("Overview", "campaigns/index.md")
    assert sorted(path for _title, path in section[1:]) == sorted(f"campaigns/v{v}/index.md" for v in VERSIONS[:5])
    overview = text(site, "campaigns/index.md")
    assert overview.startswith("# Campaigns\n\nEvery campaign in the store, newest first (by their last run).\n"
                               "Each campaign's page has its question, design, answer and caveats.")
    rows = [line for line in overview.splitlines() if line.startswith("| [")]
    assert [re.match(r"\| \[(v[\d.]+)\]", row)[1] for row in rows] == [f"v{v}" for v in reversed(VERSIONS[:5])]


def test_memory_shows_the_newest_and_ships_every_budget(site: RenderResult) -> None:
    page = text(site, "memory/index.md")
    assert ("This page shows the 5 newest campaigns (by their last run). The\n2 older ones (“v0.9.0” and “v0.10.0”) have "
            "their memory figures per arm on\ntheir models' [Results](../results/index.md) pages, and every arm's "
            "budget is in\n[budget.csv](budget.csv).") in page
    # the five newest are releases of one design: the tables print the newest of them (the others
    # are said by how far they are from it), the older ones not at all
    assert re.findall(r"^\*\*(v[\d.]+)\*\*(.*)$", page, flags=re.M) == [
        ("v0.15.0", ", the newest of v0.11.0 to v0.15.0 (5 campaigns)")] * 2
    doc = next(d for d in site.pages if d.path == "memory/index.md")
    assert doc.files == ["memory/budget.csv"]
    budget = (site.docs_dir / "memory" / "budget.csv").read_text(encoding="utf-8").splitlines()
    assert budget[0].startswith("campaign,model,environment,pool,pre_kv")
    assert {line.split(",")[0] for line in budget[1:]} == set(NEWEST + OLDER)


def test_methodology_describes_the_newest_and_older_campaign_pages_themselves(site: RenderResult) -> None:
    method = text(site, "methodology/index.md")
    # five releases of one design: described once, with what differs between them
    assert re.findall(r"^## (v.*)$", method, flags=re.M) == ["v0.11.0 to v0.15.0 (5 campaigns)"]
    assert ("5 campaigns of one design, described once: “v0.11.0”, “v0.12.0”, “v0.13.0”, “v0.14.0” and “v0.15.0”.\n\n"
            "**What was run.** 6 runs of meta-llama/Llama-3.1-8B-Instruct in each, iterations 1–3 per arm.\n\n"
            "**Held constant**: requests per run 100; input length 128 tokens; output length 128 tokens; "
            "concurrency 8; engine trtllm.\n") in method
    assert ("**Differs between the campaigns**, in the order above: engine version "
            "0.11.0 / 0.12.0 / 0.13.0 / 0.14.0 / 0.15.0.\n") in method
    assert ("## Earlier campaigns\n\nThe 2 older campaigns are described the same way, each with its arms, on its own page:\n"
            "[v0.9.0](../campaigns/v0.9.0/index.md#how-the-runs-were-made) · "
            "[v0.10.0](../campaigns/v0.10.0/index.md#how-the-runs-were-made).") in method  # in release order
    arms = method.split("## What each arm contains")[1].split("## Statistics")[0]
    # the five releases' arms are the same: one table under all their titles, not five
    assert re.findall(r"\[(v[\d.]+)\]\(\.\./campaigns/", arms) == NEWEST
    assert arms.count("| Model | native | docker |") == 1 and "(the same in each)" in arms
    older = text(site, "campaigns/v0.9.0/index.md")
    assert "How the runs were made, in full: [below](#how-the-runs-were-made)" in older
    section = older.split("## How the runs were made\n")[1]
    assert section.startswith("\n**What was run.** 6 runs of meta-llama/Llama-3.1-8B-Instruct")
    assert "**Held constant**:" in section and "| native |" in section
    assert ("| Model | native | docker |\n|---|---|---|\n| meta-llama/Llama-3.1-8B-Instruct | 3 / 3 | 3 / 3 |\n"
            in section)  # its own arms only, under no title: the page is the campaign's
    newest = text(site, "campaigns/v0.15.0/index.md")
    assert "## How the runs were made" not in newest
    assert "How the runs were made, in full: [Methodology](../../methodology/index.md)." in newest


def test_a_model_page_does_not_count_models(site: RenderResult) -> None:
    page = text(site, MODEL)
    assert "model)" not in page and "models)" not in page and " for 1 model" not in page
    assert "(1 model)" in text(site, "index.md")  # a campaign's answer counts them


def test_the_memory_budget_lists_models_by_the_name_a_reader_sees(tmp_path: Path) -> None:
    """The budget chart's bars (and budget.csv's rows) list the models as every page lists them,
    by name whatever its case ("alpha" before "Beta"), not in the code points' order, each
    model's baseline (native) first."""
    import json

    for prefix, key, model in (("", "m1", "Beta"), ("a-", "m2", "alpha")):  # the keys in the other order
        write_history_store(tmp_path / "runs", versions=["1.0.0"], runs=2, kv_cache=True, model=key,
                            model_id=model, campaign="c", run_prefix=prefix, pool_gib=119.7)
    result = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path))
    spec = json.loads((result.docs_dir / "memory" / "charts" / "memory-budget.vl.json").read_text(encoding="utf-8"))
    arms = list(dict.fromkeys(row["arm"] for row in spec["data"]["values"]))
    assert arms == ["alpha · native", "alpha · docker", "Beta · native", "Beta · docker"]  # the baseline first
    # the Memory page's tables and Methodology's table of arms list them so too
    rows = re.findall(r"^\| (?:c \| )?(alpha|Beta) \| (docker|native) \|", text(result, "memory/index.md"), flags=re.M)
    assert rows[:4] == [("alpha", "native"), ("alpha", "docker"), ("Beta", "native"), ("Beta", "docker")]
    arms = text(result, "methodology/index.md").split("## What each arm contains")[1]
    assert "| Model | native | docker |\n|---|---|---|\n| alpha | 2 / 2 | 2 / 2 |\n| Beta | 2 / 2 | 2 / 2 |\n" in arms


def test_without_a_memory_pool_the_budget_says_why_it_is_not_drawn(tmp_path: Path) -> None:
    """Runs that record memory but not the pool it is part of get no budget chart, and the page
    says so under its heading, instead of a heading over nothing."""
    write_history_store(tmp_path / "runs", versions=["1.0.0"], runs=2, kv_cache=True, campaign="c")
    page = text(render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path)), "memory/index.md")
    assert "## Budget\n\nNo budget is drawn: no run here records the size of its memory pool" in page
    assert "memory-budget" not in page


def test_many_older_campaigns_are_counted_not_listed_in_part(tmp_path: Path) -> None:
    """Past eight older campaigns a model's page counts them and links their page: "the 9 older
    ones are on a page of their own", not eight names and "1 more" in running text."""
    versions = [f"0.{k}.0" for k in range(1, 15)]
    write_history_store(tmp_path / "runs", versions=versions, runs=2, campaign_per_version=True)
    (tmp_path / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    page = text(render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path)), MODEL)
    assert "the\n9 older ones are on [a page of their own](earlier/index.md)." in page
    assert "more) are on" not in page and "“v0.1.0”" not in page


def test_many_older_campaigns_are_counted_on_the_memory_page(tmp_path: Path) -> None:
    """The Memory page, like a model's page, counts older campaigns past eight."""
    versions = [f"0.{k}.0" for k in range(1, 15)]
    write_history_store(tmp_path / "runs", versions=versions, runs=2, campaign_per_version=True, kv_cache=True)
    (tmp_path / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    page = text(render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path)), "memory/index.md")
    assert "The\n9 older ones have their memory figures per arm on" in page and "“v0.1.0”" not in page


def test_one_older_campaign_is_one(tmp_path: Path) -> None:
    """Six campaigns leave one older one, and the pages say it in the singular."""
    write_history_store(tmp_path / "runs", versions=[f"0.{k}.0" for k in range(1, 7)], runs=2,
                        campaign_per_version=True, kv_cache=True)
    (tmp_path / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    site = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path))
    assert "1 older one has its question and answer on its own page, listed on" in text(site, "index.md")
    assert "1 older one (“v0.1.0”) is on [a page of its own](earlier/index.md)." in text(site, MODEL)
    assert "1 older one (“v0.1.0”) has its memory figures per arm on" in text(site, "memory/index.md")
