"""The History page: written only with two versions, golden Markdown, diff pages, home-page line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from history_store import write_history_store

from sparkreport.render import RenderOptions, RenderResult, render

GOLDEN = Path(__file__).parent / "golden" / "history" / "history-page.md"
# No SVG fallbacks: the page and its chart specs are what is tested, and vl-convert is slow.
CONFIG = "static_charts: posts\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    root = tmp_path_factory.mktemp("history-site")
    (root / "sparkreport.yml").write_text(CONFIG, encoding="utf-8")
    runs = write_history_store(root / "runs", steps={"0.22.0": -0.042}, single_run="0.19.0")
    return render(RenderOptions(runs_dir=runs, project_root=root, command="sparkreport render"))


def test_history_page_golden(site: RenderResult) -> None:
    page = (site.docs_dir / "history" / "index.md").read_text(encoding="utf-8")
    if os.environ.get("SPARKREPORT_REGEN_GOLDEN"):
        GOLDEN.write_text(page, encoding="utf-8")
    assert page == GOLDEN.read_text(encoding="utf-8")


def test_summary_names_the_change_and_nothing_else(site: RenderResult) -> None:
    page = (site.docs_dir / "history" / "index.md").read_text(encoding="utf-8")
    summary = next(line for line in page.splitlines() if line.startswith("**"))
    assert summary.startswith("**output throughput fell 3.79% (95% CI ")
    assert summary.endswith("between 0.21.0 and 0.22.0 in native (regression); no other change.**")
    assert "Versions with a single run" in page and "0.19.0" in page


@pytest.mark.parametrize(("campaign", "model", "named"), [
    ("nightly", "qwen-2.5-7b", ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct")),
    ("weekly", "llama-3.1-8b", ("nightly", "weekly")),
    ("weekly", "qwen-2.5-7b", ("meta-llama/Llama-3.1-8B-Instruct, nightly", "Qwen/Qwen2.5-7B-Instruct, weekly")),
])
def test_summary_names_only_what_the_page_holds_several_of(tmp_path: Path, campaign: str, model: str,
                                                            named: tuple[str, str]) -> None:
    """After each change the summary named its model and campaign ("— Llama…, nightly;") as soon
    as the page held two models or two campaigns, so a page of one campaign repeated it after
    every change: it names the model where the page holds several models, the campaign where it
    holds several campaigns (one campaign is named once, in the lead). A model is named as every
    other page names it (its id), not by its key in the store."""
    (tmp_path / "sparkreport.yml").write_text(CONFIG, encoding="utf-8")
    runs = write_history_store(tmp_path / "runs", steps={"0.22.0": -0.042})
    model_id = "Qwen/Qwen2.5-7B-Instruct" if model.startswith("qwen") else "meta-llama/Llama-3.1-8B-Instruct"
    write_history_store(runs, steps={"0.21.0": 0.05}, seed=4, campaign=campaign, model=model, run_prefix="second-",
                        model_id=model_id)
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path))
    page = (result.docs_dir / "history" / "index.md").read_text(encoding="utf-8")
    summary = next(line for line in page.splitlines() if line.startswith("**"))
    first, second = summary.removeprefix("**").removesuffix("; no other change.**").split("; ")
    assert first.startswith("output throughput fell ") and first.endswith(f" in native (regression) — {named[0]}")
    assert second.startswith("output throughput rose ") and second.endswith(f" in native (improvement) — {named[1]}")


def test_change_links_to_the_diff_page_of_its_two_versions(site: RenderResult) -> None:
    diff = site.docs_dir / "history" / "nightly-0.21.0-0.22.0" / "index.md"
    text = diff.read_text(encoding="utf-8")
    assert ("Both sides: campaign “nightly”. Side **a**: version 0.21.0 (10 runs); side **b**: version 0.22.0 (10 runs)."
            in text)
    assert "`sparkreport diff --a campaign=nightly,label.version=0.21.0 --b campaign=nightly,label.version=0.22.0`" in text
    native = text[text.index("**meta-llama/Llama-3.1-8B-Instruct · native**"):]  # the model as every page names it
    assert native.split("\n\n")[1].splitlines()[2].startswith("| Output throughput (tok/s) |") and "**⚠\u00a0regressed**" in text
    # the change point's two versions are the link to their diff page
    assert "| [0.21.0 → 0.22.0](nightly-0.21.0-0.22.0/index.md) |" in (site.docs_dir / "history" / "index.md").read_text()
    nav = dict(site.nav)
    assert nav["History"] == [("Across versions", "history/index.md"),
                              ("0.21.0 → 0.22.0", "history/nightly-0.21.0-0.22.0/index.md")]


def test_the_tables_name_a_campaign_once_and_a_series_as_the_charts_do(site: RenderResult) -> None:
    """The change points were a table of eleven columns (After, Before, Campaign, Model, Environment,
    Metric, Change, CI, p, Direction, Diff) that scrolled sideways at 1280 px: the two versions are
    one cell, the link to their diff page; the series one, named as the charts' legends name it;
    the CI beside the change, as Home writes it; the one campaign named once, above the tables,
    not in a column of each (tests/test_browser.py measures the widths)."""
    page = (site.docs_dir / "history" / "index.md").read_text(encoding="utf-8")
    assert "Each metric of each model and environment of campaign “nightly”, across 6 versions:" in page
    tables = [line for line in page.splitlines() if line.startswith("| ")]
    assert tables[0] == "| Versions | Series | Metric | Change (95% CI) | p (Holm) | Direction |"
    assert tables[1] == ("| [0.21.0 → 0.22.0](nightly-0.21.0-0.22.0/index.md) | meta-llama/Llama-3.1-8B-Instruct · native | "
                         "Output throughput | -3.79% (-5.77 to -1.75) | <\u00a00.001 | **regression** |")
    assert tables[2] == "| Series | Metric | Version | n | Mean (95% CI) | Versions | Change points |"
    assert "| nightly |" not in page


def test_a_pair_of_versions_changed_in_two_campaigns_is_two_nav_entries_named_apart(tmp_path: Path) -> None:
    """Both campaigns change between 0.21.0 and 0.22.0: two diff pages, which the nav listed as
    "0.21.0 → 0.22.0" twice; where the page holds several campaigns each entry names its own (a
    page of one campaign keeps the bare pair: test_change_links_to_the_diff_page_of_its_two_versions)."""
    (tmp_path / "sparkreport.yml").write_text(
        CONFIG + "campaigns:\n  weekly:\n    title: Weekly GB10 builds\n", encoding="utf-8")
    runs = write_history_store(tmp_path / "runs", steps={"0.22.0": -0.042})
    write_history_store(runs, steps={"0.22.0": -0.042}, seed=4, campaign="weekly", run_prefix="weekly-")
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path, config_path=tmp_path / "sparkreport.yml"))
    entries = dict(dict(result.nav)["History"])
    assert {title: path for title, path in entries.items() if title != "Across versions"} == {
        "0.21.0 → 0.22.0 (nightly)": "history/nightly-0.21.0-0.22.0/index.md",
        "0.21.0 → 0.22.0 (Weekly GB10 builds)": "history/weekly-0.21.0-0.22.0/index.md"}
    home = (result.docs_dir / "index.md").read_text(encoding="utf-8")
    [line] = [x for x in home.splitlines() if x.startswith("**Across versions:**")]
    assert ", nightly) — see" in line or ", Weekly GB10 builds) — see" in line  # several: the campaign named


def test_a_change_point_past_the_diff_pages_budget_gives_its_command_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the budget of diff pages a change point's pair of versions has none: its row says so
    (†), and the `sparkreport diff` command for the pair is listed once below the table, folded
    (it was a code span in a column of every row), naming the campaign where the page has
    several."""
    from sparkreport.render import history

    monkeypatch.setattr(history, "DIFF_PAGE_BUDGET", 0)
    (tmp_path / "sparkreport.yml").write_text(CONFIG, encoding="utf-8")
    runs = write_history_store(tmp_path / "runs", steps={"0.22.0": -0.042})
    write_history_store(runs, steps={"0.22.0": -0.042}, seed=4, campaign="weekly", run_prefix="weekly-")
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path, command="sparkreport render"))
    page = (result.docs_dir / "history" / "index.md").read_text(encoding="utf-8")
    assert not list((result.docs_dir / "history").glob("*/index.md"))  # no diff page
    assert "| Versions | Campaign | Series | Metric | Change (95% CI) | p (Holm) | Direction |" in page
    rows = [line for line in page.splitlines() if line.startswith("| 0.21.0 → 0.22.0 † |")]
    assert {row.split(" | ")[1] for row in rows} == {"nightly", "weekly"}
    said = page[page.index("† No diff page"):]
    assert said.startswith("† No diff page: the site writes one for its 0 newest pairs of versions only. The 2 other "
                           "pairs compare on the command line:\n\n??? note \"2 commands\"\n\n")
    commands = [line for line in said.splitlines() if line.startswith("    - ")]
    assert commands == [
        '    - 0.21.0 → 0.22.0 (nightly): `sparkreport diff --a campaign=nightly,label.version=0.21.0 '
        '--b campaign=nightly,label.version=0.22.0`',
        '    - 0.21.0 → 0.22.0 (weekly): `sparkreport diff --a campaign=weekly,label.version=0.21.0 '
        '--b campaign=weekly,label.version=0.22.0`']


def test_one_chart_per_charted_metric_with_change_marks(site: RenderResult) -> None:
    charts = sorted(p.name for p in (site.docs_dir / "history" / "charts").glob("*.vl.json"))
    assert charts == ["output_throughput_tok_s-history.vl.json", "peak_memory_gib-history.vl.json"]
    from altair.utils.schemapi import validate_jsonschema
    from altair.vegalite.v6.schema import load_schema

    schema = load_schema()  # builds skip Altair's own validation (charts.altair): checked here
    for name in charts:
        validate_jsonschema(json.loads((site.docs_dir / "history" / "charts" / name).read_text(encoding="utf-8")),
                            schema, rootschema=schema)
    spec = json.loads((site.docs_dir / "history" / "charts" / charts[0]).read_text())
    text = json.dumps(spec)
    assert "native \\u2014 -3.79% (0.21.0 \\u2192 0.22.0, regression)" in text
    # Versions keep their order on the axis in every layer (never alphabetical: rc1 first).
    domains = [layer["encoding"]["x"]["scale"]["domain"] for layer in spec["layer"]]
    assert all(d == ["0.18.0", "0.19.0", "0.20.0rc1", "0.20.0", "0.21.0", "0.22.0"] for d in domains)


def test_two_campaigns_of_one_model_and_environment_draw_two_lines(tmp_path: Path,
                                                                   site: RenderResult) -> None:
    """A series was named "model · environment" without its campaign, so two campaigns of the same
    model and environment drew one line zigzagging between them at every version (the analysis and
    the tables kept them apart). Where the page holds several campaigns a series is named
    "model · environment · campaign title" — in the legend, the tooltip and a change point's
    mark — and a legend of names too long for two columns under the plot is set in one; a page
    of one campaign names its series as before, the campaign named once in the lead."""
    (tmp_path / "sparkreport.yml").write_text(
        CONFIG + "campaigns:\n  weekly:\n    title: 'Weekly GB10 builds: TensorRT-LLM wheels'\n", encoding="utf-8")
    runs = write_history_store(tmp_path / "runs", steps={"0.22.0": -0.042})
    write_history_store(runs, steps={"0.21.0": 0.05}, seed=4, campaign="weekly", run_prefix="weekly-")
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path, config_path=tmp_path / "sparkreport.yml"))
    spec = json.loads((result.docs_dir / "history" / "charts" / "output_throughput_tok_s-history.vl.json").read_text())
    points = spec["data"]["values"]
    weekly = "Weekly GB10 builds: TensorRT-LLM wheels"
    assert {p["series"] for p in points} == {
        "meta-llama/Llama-3.1-8B-Instruct · docker · nightly", f"meta-llama/Llama-3.1-8B-Instruct · docker · {weekly}",
        "meta-llama/Llama-3.1-8B-Instruct · native · nightly", f"meta-llama/Llama-3.1-8B-Instruct · native · {weekly}"}
    assert len(points) == len({(p["series"], p["version"]) for p in points}) == 4 * 6  # one point per line and version
    assert [c["text"] for c in spec["layer"][2]["data"]["values"]] == [
        "meta-llama/Llama-3.1-8B-Instruct · native · nightly — -5.07% (0.21.0 → 0.22.0, regression)",
        f"meta-llama/Llama-3.1-8B-Instruct · native · {weekly} — +4.28% (0.20.0 → 0.21.0, improvement)"]
    assert spec["layer"][1]["encoding"]["color"]["legend"]["columns"] == 1
    page = (result.docs_dir / "history" / "index.md").read_text(encoding="utf-8")
    assert "per campaign, model and environment; dashed lines" in page
    one = json.loads((site.docs_dir / "history" / "charts" / "output_throughput_tok_s-history.vl.json").read_text())
    assert sorted({p["series"] for p in one["data"]["values"]}) == ["meta-llama/Llama-3.1-8B-Instruct · docker", "meta-llama/Llama-3.1-8B-Instruct · native"]
    assert one["layer"][1]["encoding"]["color"]["legend"]["columns"] == 2


def test_history_json_beside_the_page_is_the_cli_contract(site: RenderResult) -> None:
    payload = json.loads((site.docs_dir / "history" / "history.json").read_text())
    assert payload["schema_version"] == 1 and len(payload["versions"]) == 6
    assert [(c["before"], c["after"], c["direction"]) for c in payload["change_points"]] == [
        ("0.21.0", "0.22.0", "regression")]


def test_home_and_methodology_mention_it(site: RenderResult) -> None:
    home = (site.docs_dir / "index.md").read_text(encoding="utf-8")
    [line] = [x for x in home.splitlines() if x.startswith("**Across versions:**")]
    assert "output throughput fell 3.79%" in line and "[History](history/index.md)" in line
    assert "(meta-llama/Llama-3.1-8B-Instruct) — see" in line  # the model as the pages name it; one campaign: not named
    methodology = (site.docs_dir / "methodology" / "index.md").read_text(encoding="utf-8")
    assert "a change point is reported only where the level shifts by at least 2%" in methodology


def test_no_history_page_with_one_version(tmp_path: Path) -> None:
    (tmp_path / "sparkreport.yml").write_text(CONFIG, encoding="utf-8")
    runs = write_history_store(tmp_path / "runs", versions=["0.22.0"])
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path))
    assert not (result.docs_dir / "history").exists()
    assert "History" not in dict(result.nav)
    assert "Across versions" not in (result.docs_dir / "index.md").read_text(encoding="utf-8")


def test_series_of_one_version_are_counted_not_listed(tmp_path: Path) -> None:
    """A campaign per version: every series holds one version, so the page has neither a table
    of change points nor of newest versions — it says so once, with the count (a paragraph of
    its own: not a heading made by the footer's rule). It said "no series spans two versions"
    three times: in its lead, under Change points and under Newest version per series."""
    runs = write_history_store(tmp_path / "runs")
    for path in sorted(runs.glob("*/*/run.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["campaign"] = f"v{data['labels']['version']}"
        folder = runs / data["campaign"] / path.parent.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "run.json").write_text(json.dumps(data), encoding="utf-8")
        path.unlink()
        path.parent.rmdir()
    (tmp_path / "sparkreport.yml").write_text(CONFIG, encoding="utf-8")
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path))
    text = (result.docs_dir / "history" / "index.md").read_text(encoding="utf-8")
    assert "## Change points" not in text and "## Newest version per series" not in text and "| Campaign |" not in text
    assert text.count("Nothing compared across the") == 1  # said once
    lines = text.splitlines()
    sentence = next(line for line in lines if line.startswith("Each of the 24 series"))
    assert sentence == "Each of the 24 series was measured in one version only."
    assert lines[lines.index(sentence) + 1] == ""  # not a setext heading


def test_a_campaign_per_version_has_nothing_to_compare_and_says_so(tmp_path: Path) -> None:
    """Each campaign one version (a campaign per release): a series stays inside its campaign, so
    none spans two versions. "No change point … no series' level shifted" would claim a flat
    history that nothing tested (read on the 10 000-run bench site); the page, Home and the CLI
    say there is nothing to compare, and how to get a history."""
    from click.testing import CliRunner

    from sparkreport.cli import main

    (tmp_path / "sparkreport.yml").write_text(CONFIG, encoding="utf-8")
    runs = write_history_store(tmp_path / "runs", steps={"0.22.0": -0.042}, runs=3, campaign_per_version=True)
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path, command="sparkreport render"))
    page = (result.docs_dir / "history" / "index.md").read_text(encoding="utf-8")
    assert ("**Nothing compared across the 6 versions: a series stays inside its campaign,\nand no campaign here "
            "measured a model and environment in two versions**") in page
    assert "No change point" not in page and "## Across versions" not in page
    assert "## Change points" not in page and "Each of the 24 series was measured in one version only." in page
    home = (result.docs_dir / "index.md").read_text(encoding="utf-8")
    # Home says what a visitor needs; the setting that would follow a model across campaigns is
    # History's to name (it is advice to the site's author)
    assert ("**Across versions:** nothing compared across the 6 versions, as each campaign measured its models "
            "in one version — see ") in home and "across_campaigns" not in home
    out = CliRunner().invoke(main, ["history", "--runs-dir", str(runs)]).output
    assert out.rstrip().endswith("nothing to compare: none of the 24 series spans two versions (a series stays "
                                 "inside its campaign, and no campaign measured a model in two versions; "
                                 "--across-campaigns follows a model across a campaign per release)")
    assert "set `history.across_campaigns: true` in\n`sparkreport.yml`" in page  # the way to a history


def test_across_campaigns_follows_a_model_over_a_campaign_per_release(tmp_path: Path) -> None:
    """history.across_campaigns: the same store (a campaign per release, native −4.2% from
    0.22.0) now has a history per model and environment; the step is found between 0.21.0 and
    0.22.0, its diff page compares those two versions' runs (one campaign each), and the CLI
    finds the same with --across-campaigns."""
    from click.testing import CliRunner

    from sparkreport.cli import main

    (tmp_path / "sparkreport.yml").write_text(CONFIG + "history:\n  across_campaigns: true\n", encoding="utf-8")
    runs = write_history_store(tmp_path / "runs", steps={"0.22.0": -0.042}, runs=5, campaign_per_version=True)
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path, config_path=tmp_path / "sparkreport.yml",
                                  command="sparkreport render"))
    page = (result.docs_dir / "history" / "index.md").read_text(encoding="utf-8")
    assert page.splitlines()[3].startswith("**output throughput fell ")
    assert "between 0.21.0 and 0.22.0 in native (regression)" in page.splitlines()[3]
    assert "Each metric of each model and environment across campaigns" in page
    diff = next((result.docs_dir / "history").glob("*/index.md")).read_text(encoding="utf-8")
    assert "\n\nSide **a**: version 0.21.0 (10 runs); side **b**: version 0.22.0 (10 runs).\n" in diff  # nothing shared
    out = CliRunner().invoke(main, ["history", "--runs-dir", str(runs), "--across-campaigns", "--json"]).output
    changes = json.loads(out)["change_points"]
    assert [(c["campaign"], c["environment"], c["before"], c["after"]) for c in changes] == [
        ("across campaigns", "native", "0.21.0", "0.22.0")]
    per_campaign = CliRunner().invoke(main, ["history", "--runs-dir", str(runs), "--json"]).output
    assert json.loads(per_campaign)["change_points"] == []


def test_across_campaigns_refuses_a_version_in_two_campaigns(tmp_path: Path) -> None:
    """Two campaigns hold the same version of a model and environment: its point would pool them.
    The build stops with one line naming the setting, the version and both campaigns."""
    from sparkreport.errors import BuildError
    from sparkreport.schema import Environment, Model, RunRecord
    from sparkreport.store import RunStore

    (tmp_path / "sparkreport.yml").write_text("history:\n  across_campaigns: true\n", encoding="utf-8")
    runs = write_history_store(tmp_path / "runs", runs=2, campaign_per_version=True)
    store = RunStore(runs)
    store.write(RunRecord(run_id="rerun-0.22.0", campaign="rerun", iteration=1,
                          model=Model(id="meta-llama/Llama-3.1-8B-Instruct", name="llama-3.1-8b"),
                          environment=Environment(name="native"), metrics={"output_throughput_tok_s": 990.0},
                          labels={"version": "0.22.0"}), [])
    with pytest.raises(BuildError, match=r"sparkreport.yml: history.across_campaigns: version 0.22.0 of "
                                         r"llama-3.1-8b in native is in campaigns rerun, v0.22.0 — a version's "
                                         r"runs must come from one campaign"):
        render(RenderOptions(runs_dir=runs, project_root=tmp_path, config_path=tmp_path / "sparkreport.yml"))
