"""Campaign titles: what the pages call a campaign, from sparkreport.yml's ``campaigns:``, the
campaign file kept beside executed runs or a published summary's ``title:``, else its name;
the name stays in URLs and commands."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.config import load_config
from sparkreport.errors import ConfigError
from sparkreport.ingest import IngestOptions, ingest_paths
from sparkreport.render import RenderOptions, RenderResult, render
from sparkreport.store import RunStore

REPO = Path(__file__).resolve().parents[1]
#: A published summary of two arms (one model, two environments), written into a test's store.
SUMMARY = """\
sparkreport: published-summary
campaign: {campaign}
{title}source: "a test"
hardware: {{gpu_name: NVIDIA GB10, memory_pool_gib: 119.64, unified_memory: true}}
arms:
  - {{model: small, environment: native, n: 5, metrics: {{output_throughput_tok_s: {{mean: 100, sd: 1}}}}}}
  - {{model: small, environment: container, n: 5, metrics: {{output_throughput_tok_s: {{mean: 101, sd: 1}}}}}}
"""


def summary_store(root: Path, campaigns: dict[str, str | None]) -> Path:
    """A run store of one published summary per campaign (``name → title:`` or None for none)."""
    runs = root / "runs"
    sources = root / "sources"
    sources.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, title in campaigns.items():
        path = sources / f"{name}.yml"
        path.write_text(SUMMARY.format(campaign=name, title=f"title: {json.dumps(title)}\n" if title else ""),
                        encoding="utf-8")
        paths.append(path)
    report = ingest_paths(paths, RunStore(runs), IngestOptions())
    assert report.added and not report.rejected
    return runs


def campaign_file(runs: Path, campaign: str, title: str | None) -> Path:
    """The campaign file an executed campaign keeps in ``_campaign/`` (what the site reads of it)."""
    path = runs / campaign / "_campaign" / "campaign.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"campaign: {campaign}\n" + (f"title: {json.dumps(title)}\n" if title else "")
                    + "description: The question this campaign asks.\n", encoding="utf-8")
    return path


def page(result: RenderResult, path: str) -> str:
    return (result.docs_dir / path).read_text(encoding="utf-8")


def headings(text: str, level: str = "## ") -> list[str]:
    return [line[len(level):] for line in text.splitlines() if line.startswith(level)]


# --------------------------------------------------------------------------- sparkreport.yml

BAD_CONFIGS = [
    ("campaigns: [alpha]\n", "sparkreport.yml:1: campaigns has the wrong type (list: \"['alpha']\") — write it as a "
     "mapping: campaigns: on its own line, its settings indented under it (see the README's configuration section)"),
    ("campaigns:\n  alpha: A title\n",
     "sparkreport.yml:2: campaigns.alpha must be a mapping with a title or a question — "
     "write alpha: {title: \"what the pages call it\"}"),
    ("campaigns:\n  alpha:\n    titel: A title\n",
     "sparkreport.yml:3: unknown setting campaigns.alpha.titel — known: title, question"),
    ("campaigns:\n  alpha: {}\n",
     "sparkreport.yml:2: campaigns.alpha needs a title or a question — write alpha: {title: \"what the pages call it\"}"),
    ("campaigns:\n  alpha:\n    question: [a]\n", "sparkreport.yml:3: campaigns.alpha.question must be text, not a list "
     "— write it in quotes: question: \"what it asks\""),
    ("campaigns:\n  alpha:\n    title: A\n    question:\n", "sparkreport.yml:4: campaigns.alpha.question is empty — "
     "write the question the campaign answers, or leave the setting out"),
    ("campaigns:\n  alpha:\n    title: 3\n", "sparkreport.yml:3: campaigns.alpha.title must be text, not a number — "
     "write it in quotes: title: \"what the pages call it\""),
    ("campaigns:\n  alpha:\n    title:\n", "sparkreport.yml:3: campaigns.alpha.title is empty — write the title the "
     "pages show, or leave the campaign out to show its name"),
    ("campaigns:\n  alpha:\n    title: \"  \"\n",
     "sparkreport.yml:3: campaigns.alpha.title is empty — write the title the pages show, or leave the campaign "
     "out to show its name"),
]


@pytest.mark.parametrize(("text", "message"), BAD_CONFIGS)
def test_a_bad_campaigns_setting_is_one_line_naming_the_file_and_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("sparkreport.yml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(Path("sparkreport.yml"))
    assert info.value.format_message() == message


def test_a_campaigns_title_is_read_with_its_spaces_folded(tmp_path: Path) -> None:
    path = tmp_path / "sparkreport.yml"
    path.write_text("campaigns:\n  alpha:\n    title: >-\n      H100 control:\n      native vs cgroup\n",
                    encoding="utf-8")
    assert load_config(path).campaigns["alpha"].title == "H100 control: native vs cgroup"
    path.write_text("campaigns:\n", encoding="utf-8")
    assert load_config(path).campaigns == {}


def test_a_title_for_a_campaign_the_store_lacks_is_refused_before_the_render(tmp_path: Path) -> None:
    runs = summary_store(tmp_path, {"phase1-published": None, "unified-memory-post": None})
    project = tmp_path / "project"
    project.mkdir()
    (project / "sparkreport.yml").write_text(
        "title: t\ncampaigns:\n  phase1-publishd:\n    title: Phase 1\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["render", "--runs-dir", str(runs), "--config",
                                       str(project / "sparkreport.yml")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"Error: {project / 'sparkreport.yml'}:3: campaigns: no campaign 'phase1-publishd' in {runs} — "
        "did you mean 'phase1-published'? (campaigns there: phase1-published, unified-memory-post)")
    assert not (project / "build").exists()  # refused before anything was written


def test_the_refusal_lists_the_campaigns_cut_short(tmp_path: Path) -> None:
    from sparkreport.render.preflight import check_campaign_settings

    path = tmp_path / "sparkreport.yml"
    path.write_text("campaigns:\n  zzz:\n    title: Z\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        check_campaign_settings(load_config(path), [f"c{i:02}" for i in range(20)], "runs")
    assert info.value.format_message() == (
        f"{path}:2: campaigns: no campaign 'zzz' in runs — campaigns there: c00, c01, c02, c03, c04, c05, c06, "
        "c07, … and 12 more")


# --------------------------------------------------------------------------- the sources and their order

def test_each_source_gives_a_title_and_sparkreport_yml_wins(tmp_path: Path) -> None:
    runs = summary_store(tmp_path, {"alpha": "Alpha from its summary", "beta": "Beta from its summary",
                                    "gamma": None, "delta": None})
    campaign_file(runs, "beta", "Beta from its campaign file")
    campaign_file(runs, "gamma", "Gamma from its campaign file")
    project = tmp_path / "project"
    project.mkdir()
    (project / "sparkreport.yml").write_text(
        "campaigns:\n  alpha:\n    title: Alpha from sparkreport.yml\n", encoding="utf-8")
    result = render(RenderOptions(runs_dir=runs, project_root=project))
    home = page(result, "index.md")
    assert headings(home) == [
        "[Alpha from sparkreport.yml](campaigns/alpha/index.md)",  # the config over the summary
        "[Beta from its campaign file](campaigns/beta/index.md)",  # the campaign file over the summary
        "[delta](campaigns/delta/index.md)",  # no title anywhere: the name, as before titles
        "[Gamma from its campaign file](campaigns/gamma/index.md)",
        "Every effect at a glance", "What the checks found", "What the data cannot show"]
    assert dict(result.nav)["Campaigns"] == [
        ("Overview", "campaigns/index.md"), ("Alpha from sparkreport.yml", "campaigns/alpha/index.md"),
        ("Beta from its campaign file", "campaigns/beta/index.md"), ("delta", "campaigns/delta/index.md"),
        ("Gamma from its campaign file", "campaigns/gamma/index.md")]


def test_a_store_titles_its_campaigns_without_a_site_as_the_site_does(tmp_path: Path) -> None:
    """`sparkreport diff --markdown` names campaigns without building a site
    (:func:`store_campaign_titles`): by the site's titles, every source and the twins' names
    included."""
    from sparkreport.dataset import load_dataset
    from sparkreport.render.context import build_site_data
    from sparkreport.render.report import campaign_titles, store_campaign_titles

    runs = summary_store(tmp_path, {"alpha": "Alpha from its summary", "beta": "Beta from its summary",
                                    "gamma": None, "delta": None, "eps": "Twin", "zeta": "Twin"})
    campaign_file(runs, "beta", "Beta from its campaign file")
    campaign_file(runs, "gamma", "Gamma from its campaign file")
    (tmp_path / "sparkreport.yml").write_text("campaigns:\n  alpha:\n    title: Alpha from sparkreport.yml\n",
                                              encoding="utf-8")
    config = load_config(tmp_path / "sparkreport.yml")
    dataset = load_dataset(runs)
    titles = store_campaign_titles(dataset, runs, config)
    assert titles == {"alpha": "Alpha from sparkreport.yml", "beta": "Beta from its campaign file",
                      "delta": "delta", "eps": "Twin (eps)", "gamma": "Gamma from its campaign file",
                      "zeta": "Twin (zeta)"}
    assert titles == campaign_titles(build_site_data(dataset, config, runs, "test", tmp_path))


def test_a_campaign_page_is_headed_by_its_title_and_names_its_folder_once(tmp_path: Path) -> None:
    runs = summary_store(tmp_path, {"alpha": "Alpha: a title", "delta": None})
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path / "project"))
    titled = page(result, "campaigns/alpha/index.md")
    assert titled.startswith("# Alpha: a title\n\n<small>Campaign `alpha`</small>\n")
    assert titled.count("`alpha`") == 1
    assert page(result, "campaigns/delta/index.md").startswith("# Campaign delta\n\n")  # as before titles
    assert "| [Alpha: a title](alpha/index.md) |" in page(result, "campaigns/index.md")
    runs_page = page(result, "runs/index.md")
    assert "## Alpha: a title" in runs_page and "## delta" in runs_page


def test_the_first_summary_title_of_a_campaign_counts_and_titles_stay_apart(tmp_path: Path) -> None:
    """Two campaigns given the same title are told apart by their names; a title's bidirectional
    controls are dropped, as from a name."""
    from sparkreport.render.report import unique_titles

    assert unique_titles({"a": "Same", "b": "Same", "c": "c", "d": "Other"}) == {
        "a": "Same (a)", "b": "Same (b)", "c": "c", "d": "Other"}
    runs = summary_store(tmp_path, {"alpha": "Twin", "beta": "Twin\u202e"})
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path / "project"))
    assert headings(page(result, "index.md"))[:2] == ["[Twin (alpha)](campaigns/alpha/index.md)",
                                                      "[Twin (beta)](campaigns/beta/index.md)"]


def test_a_published_summary_carries_its_title_as_it_carries_its_source(tmp_path: Path) -> None:
    from sparkreport.errors import ParseError
    from sparkreport.store import RunStore

    runs = summary_store(tmp_path, {"alpha": "Alpha  from\n its summary"})
    notes = {note for path in runs.rglob("run.json")
             for note in json.loads(path.read_text(encoding="utf-8"))["provenance"]["notes"]}
    assert notes == {"published in: a test", "campaign title: Alpha from its summary"}
    bad = tmp_path / "bad.yml"
    bad.write_text(SUMMARY.format(campaign="x", title="title: [1]\n"), encoding="utf-8")
    report = ingest_paths([bad], RunStore(tmp_path / "other"), IngestOptions())
    assert [type(e) for e in report.rejected] == [ParseError]
    assert report.rejected[0].format_message() == (
        f"{bad}:3: title must be text, not a list — write it in quotes: title: \"what the pages call it\"")


def test_a_campaign_file_takes_a_title(tmp_path: Path) -> None:
    from sparkreport.execute.campaign import CampaignError, load_campaign

    text = (REPO / "campaigns" / "smoke-fake.yaml").read_text(encoding="utf-8")
    path = tmp_path / "c.yaml"
    path.write_text(text + "title: \"Smoke:  a fake\n  campaign\"\n", encoding="utf-8")
    assert load_campaign(path).title == "Smoke: a fake campaign"
    # the same rule as sparkreport.yml's and a published summary's title (a number was once taken as text)
    for value, problem in (("[x]", "must be text, not a list"), ("3", "must be text, not a number")):
        path.write_text(text + f"title: {value}\n", encoding="utf-8")
        with pytest.raises(CampaignError) as info:
            load_campaign(path)
        assert re.fullmatch(rf"{re.escape(str(path))}:\d+: title: {problem} — write it in quotes: "
                            r'title: "what the pages call it"', info.value.format_message())


# --------------------------------------------------------------------------- re-rendering

def test_a_title_changed_in_a_campaign_file_renders_the_pages_that_show_it_again(tmp_path: Path) -> None:
    runs = summary_store(tmp_path, {"alpha": None, "beta": None})
    campaign_file(runs, "alpha", "First title")
    options = RenderOptions(runs_dir=runs, project_root=tmp_path / "project")
    first = render(options)
    assert "## [First title](campaigns/alpha/index.md)" in page(first, "index.md")
    assert render(options).rendered_pages == []  # nothing changed: every page kept
    campaign_file(runs, "alpha", "Second title")
    second = render(options)
    assert {"index.md", "campaigns/alpha/index.md", "campaigns/index.md", "runs/index.md",
            "methodology/index.md"} <= set(second.rendered_pages)
    assert "## [Second title](campaigns/alpha/index.md)" in page(second, "index.md")
    assert page(second, "campaigns/alpha/index.md").startswith("# Second title\n")
    assert ("Second title", "campaigns/alpha/index.md") in dict(second.nav)["Campaigns"]
    assert "First title" not in "".join(p.read_text(encoding="utf-8") for p in second.docs_dir.rglob("*.md"))


def test_a_title_changed_in_sparkreport_yml_changes_the_built_site(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkreport.site import build

    monkeypatch.setenv("SPARKREPORT_JOBS", "1")
    runs = summary_store(tmp_path, {"alpha": None, "beta": None})
    project = tmp_path / "project"
    shutil.copytree(runs, project / "runs")
    config = project / "sparkreport.yml"
    config.write_text("campaigns:\n  alpha:\n    title: First title\n", encoding="utf-8")
    options = RenderOptions(runs_dir=Path("runs"), project_root=project)
    monkeypatch.chdir(project)
    build(options)
    home = project / "site" / "index.html"
    assert "First title" in home.read_text(encoding="utf-8")
    config.write_text("campaigns:\n  alpha:\n    title: Second title\n", encoding="utf-8")
    build(options)
    for built in (home, project / "site" / "campaigns" / "beta" / "index.html"):  # the nav is on every page
        text = built.read_text(encoding="utf-8")
        assert "Second title" in text and "First title" not in text, built


# --------------------------------------------------------------------------- where names stay

def test_findings_and_commands_keep_the_name_prose_takes_the_title() -> None:
    from sparkreport.render.builtin import compact_wheres

    titles = {"phase1": "Phase 1: container vs native"}
    names = {("phase1", "qwen72b"): "Qwen2.5-72B-Instruct"}
    assert compact_wheres(["phase1/qwen72b/container", "phase1/qwen72b/native"], names=names, titles=titles) == \
        "Phase 1: container vs native · Qwen2.5-72B-Instruct (container, native)"
    assert compact_wheres(["phase1/container"], names=names, titles=titles) == \
        "Phase 1: container vs native (container)"
    assert compact_wheres(["phase1/qwen72b/native"], names=names) == "phase1: Qwen2.5-72B-Instruct (native)"
    # a campaign named once; models of the same arms in one list
    both = {**names, ("phase1", "deepseek"): "DeepSeek-R1-Distill-Qwen-7B", ("h100", "llama"): "Llama-3-8B"}
    arms = ["phase1/deepseek/container", "phase1/deepseek/native", "phase1/qwen72b/container", "phase1/qwen72b/native",
            "h100/llama/native"]
    assert compact_wheres(arms, names=both, titles=titles) == (
        "Phase 1: container vs native · DeepSeek-R1-Distill-Qwen-7B and Qwen2.5-72B-Instruct (container, native); "
        "h100: Llama-3-8B (native)")
    assert compact_wheres(arms[:4], names=both, titles=titles, campaign=False) == (
        "DeepSeek-R1-Distill-Qwen-7B and Qwen2.5-72B-Instruct (container, native)")


@pytest.mark.skipif(not (REPO / "runs").is_dir(), reason="no shipped store")
def test_the_shipped_site_titles_its_campaigns(tmp_path: Path) -> None:
    """The repository's own sparkreport.yml titles the shipped store's campaigns; the folder names
    stay in the links, the diff's selectors and the command examples."""
    result = render(RenderOptions(runs_dir=REPO / "runs", project_root=REPO, docs_dir=tmp_path / "docs"))
    config = load_config(REPO / "sparkreport.yml")
    home = page(result, "index.md")
    for name, options in config.campaigns.items():
        assert f"## [{options.title}](campaigns/{name}/index.md)" in home
    diff = page(result, "diffs/cold-vs-warm-cache/index.md")
    assert "`sparkreport diff --a campaign=gpu-torch-native-vs-cgroup,cache=cold " in diff


def test_the_history_names_a_campaign_by_its_title_and_selects_it_by_name(tmp_path: Path) -> None:
    from history_store import write_history_store

    (tmp_path / "sparkreport.yml").write_text("campaigns:\n  nightly:\n    title: Nightly builds\n", encoding="utf-8")
    runs = write_history_store(tmp_path / "runs", steps={"0.22.0": -0.042})
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path))
    history = page(result, "history/index.md")
    assert "of campaign “Nightly builds”, across 6 versions" in history  # one campaign: named once
    diff = page(result, "history/nightly-0.21.0-0.22.0/index.md")
    assert diff.startswith("# Nightly builds: 0.21.0 → 0.22.0\n")
    assert "Both sides: campaign “Nightly builds”." in diff  # its title in words, its name in the command
    assert "`sparkreport diff --a campaign=nightly,label.version=0.21.0 " in diff
    home = page(result, "index.md")
    assert "## [Nightly builds](campaigns/nightly/index.md)" in home  # by its title, where Home lists it
    # its latest change: the model as the pages name it; one campaign, not named again
    assert "(meta-llama/Llama-3.1-8B-Instruct) — see [History]" in home


def test_a_campaigns_question_opens_home_and_its_page_and_a_published_source_is_no_question(
        tmp_path: Path, published_store: Path) -> None:
    """sparkreport.yml's question wins over a campaign file's description on Home and the
    campaign's page; a published campaign without one shows no "The question." (its source was
    printed there, then again in its Design), and Methodology still names where its figures come
    from."""
    shutil.copytree(published_store, tmp_path / "runs")
    (tmp_path / "sparkreport.yml").write_text(
        "campaigns:\n  phase1-published:\n    question: >-\n      Does the container cost\n      throughput?\n",
        encoding="utf-8")
    result = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path))
    asked = "**The question.** Does the container cost throughput?"
    assert asked in page(result, "campaigns/phase1-published/index.md")
    assert asked in page(result, "index.md")
    other = page(result, "campaigns/unified-memory-post/index.md")
    assert "The question" not in other and other.count("The Unified Memory Revelation") == 1
    assert "Figures published in \"The Unified Memory Revelation\"" in page(result, "methodology/index.md")
