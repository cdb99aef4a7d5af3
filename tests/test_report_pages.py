"""The generated pages read as a report: golden pages for the shipped store, and a lint over
every generated page (no Python reprs, no table cell over 300 characters, no sentence template
repeated more than three times); the repository's own site with the Phase 1 per-run data added.

Regenerate the golden pages after an intended change with
``SPARKREPORT_UPDATE_GOLDEN=1 pytest tests/test_report_pages.py`` and read the diff.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkreport.render import RenderOptions, RenderResult, render

REPO = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden" / "pages"
UPDATE = os.environ.get("SPARKREPORT_UPDATE_GOLDEN") == "1"
#: The pages kept as golden files (the shipped store, this repository's configuration).
GOLDEN_PAGES = ("index.md", "methodology/index.md", "memory/index.md", "results/index.md",
                "results/deepseek/index.md", "results/llama-3-8b/index.md", "campaigns/phase1-published/index.md",
                "campaigns/gpu-torch-native-vs-cgroup/index.md", "diffs/index.md", "diffs/cold-vs-warm-cache/index.md")
MAX_CELL = 300
MAX_REPEATS = 3
SHINGLE = 8
#: Python reprs that must never reach a page's prose.
REPRS = (re.compile(r"\{'"), re.compile(r"'\s*:\s"), re.compile(r"\[\("), re.compile(r"(?<=[\w,(=|\[] )None\b|[(=\[]None\b"),
         re.compile(r"\bnan\b"), re.compile(r"<sparkreport\."), re.compile(r"\bdatetime\.\w+\("))


def _project(tmp: Path, runs: Path) -> RenderResult:
    """Render with this repository's configuration, templates and posts."""
    return render(RenderOptions(runs_dir=runs, project_root=REPO, docs_dir=tmp / "docs"))


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    """The repository's own site: its runs/ store, sparkreport.yml, templates/ and posts."""
    return _project(tmp_path_factory.mktemp("shipped"), REPO / "runs")


@pytest.fixture(scope="module")
def combined(tmp_path_factory: pytest.TempPathFactory, phase1_store: Path) -> RenderResult:
    """The shipped store with the Phase 1 per-run data ingested into it, as the README suggests:
    the posts, pinned to their campaigns, still build and say the same."""
    root = tmp_path_factory.mktemp("combined")
    runs = root / "runs"
    shutil.copytree(REPO / "runs", runs)
    shutil.copytree(phase1_store / "phase1", runs / "phase1")
    return _project(root, runs)


def prose(text: str) -> str:
    """A page without its code spans, code blocks, HTML lines (charts, footer) and link targets."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"<code>.*?</code>", " ", text)
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("<"))
    return re.sub(r"\]\([^)]*\)", "]", text)


def table_cells(text: str) -> list[str]:
    return [cell.strip() for line in text.splitlines() if line.lstrip().startswith("|")
            for cell in line.strip().strip("|").split(" | ")]


def sentence_lines(text: str) -> list[str]:
    """Prose lines: no tables, headings or admonition titles."""
    return [line for line in prose(text).splitlines()
            if line.strip() and not line.lstrip().startswith(("|", "#", "!!!", "???", "---"))]


def repeated_templates(text: str) -> list[tuple[str, int]]:
    """8-word shingles (numbers and names masked to their shape) found more than 3 times."""
    counts: Counter[str] = Counter()
    for line in sentence_lines(text):
        words = re.sub(r"[-+]?\d[\d.,]*", "#", line).split()
        seen = set()
        for i in range(len(words) - SHINGLE + 1):
            shingle = " ".join(words[i:i + SHINGLE])
            if shingle not in seen:  # a line counts once per shingle
                seen.add(shingle)
                counts[shingle] += 1
    return [(s, n) for s, n in counts.most_common() if n > MAX_REPEATS]


def lint(result: RenderResult) -> list[str]:
    problems = []
    # generated pages and posts (filled in from the data); other hand-written pages are the author's
    handwritten = {h for h in result.handwritten if not h.startswith("blog/posts/")}
    pages = sorted(p for p in result.docs_dir.rglob("*.md") if "assets" not in p.parts
                   and p.relative_to(result.docs_dir).as_posix() not in handwritten)
    assert len(pages) >= 8
    for path in pages:
        name = path.relative_to(result.docs_dir).as_posix()
        text = path.read_text(encoding="utf-8")
        body = "\n".join(sentence_lines(text)) + "\n" + "\n".join(table_cells(prose(text)))
        for pattern in REPRS:
            found = pattern.search(body)
            if found:
                start = max(found.start() - 40, 0)
                problems.append(f"{name}: Python repr {pattern.pattern!r}: …{body[start:found.end() + 40]}…")
        problems += [f"{name}: table cell of {len(c)} chars: {c[:80]}…" for c in table_cells(text)
                     if len(c) > MAX_CELL]
        problems += [f"{name}: {n}× «{s}»" for s, n in repeated_templates(text)[:3]]
    return problems


def test_shipped_pages_read_as_a_report(shipped: RenderResult) -> None:
    assert lint(shipped) == []


def test_pages_with_the_phase1_runs_added_read_as_a_report(combined: RenderResult) -> None:
    assert lint(combined) == []


def test_posts_survive_new_data(shipped: RenderResult, combined: RenderResult) -> None:
    """Adding the Phase 1 per-run data changes no number a shipped post states."""
    names = sorted(p.name for p in (shipped.docs_dir / "blog" / "posts").glob("*.md"))
    assert len(names) == 3
    for name in names:
        before = (shipped.docs_dir / "blog" / "posts" / name).read_text(encoding="utf-8")
        after = (combined.docs_dir / "blog" / "posts" / name).read_text(encoding="utf-8")
        strip = re.compile(r"<p class=\"sparkreport-provenance\">.*?</p>", re.S)
        assert strip.sub("", before) == strip.sub("", after), name
    text = (shipped.docs_dir / "blog" / "posts" / "phase1-recomputed.md").read_text(encoding="utf-8")
    assert "chosen by this site after the study was published, not\ndeclared in advance" in text


def test_home_is_a_summary(shipped: RenderResult, combined: RenderResult) -> None:
    """Home: each campaign's question and answer, ≥ 1 chart, limits said once, ≤ ~700 words
    (three campaigns, each finding's campaign named once by its title over its lines, the key
    saying that a ≈ interval may exclude zero, as the H100 control's does, and the line under the
    chart counting the effects it cannot draw, the H100 answer stating its constant memory: 750; four,
    with the Phase 1 runs added, stay under 1,025: two of their answers say that their runs carry
    error-level findings, the banner names five checks, the key of Phase 1's ▲ and ▼ says
    that its answer tells better from worse, and the key and the line under the chart name both
    reasons for the untested effects, published without a spread and from a single run; the
    answers say their intervals in words, "(95% CIs between -0.68% and +0.50%)")."""
    home = (shipped.docs_dir / "index.md").read_text(encoding="utf-8")
    words = len(" ".join(sentence_lines(home)).split())
    assert words <= 750, words
    more = len(" ".join(sentence_lines((combined.docs_dir / "index.md").read_text(encoding="utf-8"))).split())
    assert more <= 1025, more
    assert home.count("**The answer.**") >= 2 and home.count("## What the data cannot show") == 1
    assert 'class="sparkreport-chart"' in home


def test_home_gives_campaigns_of_other_designs_a_block_each(shipped: RenderResult) -> None:
    """The shipped store's three campaigns differ in design: a block each, as a lone campaign's
    (campaigns of one design share one: tests/test_home_groups.py)."""
    home = (shipped.docs_dir / "index.md").read_text(encoding="utf-8")
    assert re.findall(r"^## \[([^]]+)\]\(campaigns/", home, flags=re.M) == [
        "H100 control: native vs cgroup", "Phase 1 as published: container vs native",
        "The unified-memory post, as published"]
    assert "campaigns of one design" not in home and "How the answers moved" not in home


def _normalised(text: str) -> str:
    """A page without its provenance footer (dataset digest, the regenerate command's paths)."""
    return text.rsplit("\n---\n", 1)[0].rstrip() + "\n"


@pytest.mark.parametrize("name", GOLDEN_PAGES)
def test_golden_pages(shipped: RenderResult, name: str) -> None:
    page = _normalised((shipped.docs_dir / name).read_text(encoding="utf-8"))
    golden = GOLDEN / name
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(page, encoding="utf-8")
    assert golden.is_file(), f"{golden} missing: run SPARKREPORT_UPDATE_GOLDEN=1 pytest {__file__}"
    assert page == golden.read_text(encoding="utf-8"), f"{name} changed: regenerate and read the diff"


def test_memory_budget_adds_up_to_the_pool(shipped: RenderResult) -> None:
    """Before the KV cache + free = pool in every budget row whose free memory the run recorded
    (the torch runner's: memory before the KV cache is then pool − free, not peak − KV cache)."""
    page = (shipped.docs_dir / "memory" / "index.md").read_text(encoding="utf-8")
    rows = [line.split(" | ") for line in page.splitlines()
            if line.startswith("| ") and "random weights" in line and "GiB" not in line]
    budget = [r for r in rows if len(r) == 9]
    assert budget, "no budget rows of the torch runs"
    for cells in budget:
        pool, before, free = (float(cells[i].split()[0]) for i in (2, 3, 4))
        assert before + free == pytest.approx(pool, abs=0.011), cells
        assert cells[3].endswith("‡") and not cells[4].endswith("†")
    assert "‡ pool − free (the run recorded the memory free when its KV cache was sized" in page


def test_the_verdict_key_says_only_what_its_table_shows(shipped: RenderResult) -> None:
    """The key names the marks present and the test that decided them (paired over the plan's
    blocks in the blocked torch campaign, Welch's for published figures); no sentence about
    brackets: the answers above say their intervals in words."""
    torch = (shipped.docs_dir / "campaigns" / "gpu-torch-native-vs-cgroup" / "index.md").read_text(encoding="utf-8")
    key = next(line for line in torch.splitlines() if line.startswith("Cells: "))
    assert "Tests and intervals pair the arms block by block (the runs were made in randomized blocks)." in key
    assert "Welch" not in key and "▲" not in key and "○" not in key
    published = (shipped.docs_dir / "campaigns" / "phase1-published" / "index.md").read_text(encoding="utf-8")
    key = next(line for line in published.splitlines() if line.startswith("Cells: "))
    assert "○ not tested (published without a spread)" in key and "Tests and intervals are Welch's" in key
    for page in sorted(shipped.docs_dir.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        assert "(Welch test, Holm-adjusted" not in text, page
        assert "brackets in the answers" not in text and "Brackets in the answers" not in text, page
        for line in text.splitlines():  # an answer's intervals in words ("95% CI ..."), never "[-0.12, +0.16]"
            if line.startswith("- **"):
                assert not re.search(r"\[[-+]?\d", line), f"{page}: {line}"


def test_an_answer_over_flagged_runs_says_so_in_words(shipped: RenderResult) -> None:
    """An answer whose runs carry error-level findings says so beside the claim (not only in the
    banner), and the banner names the checks in words, not by their codes."""
    published = (shipped.docs_dir / "campaigns" / "phase1-published" / "index.md").read_text(encoding="utf-8")
    assert ("- **Read with care**: the checks found errors in the runs of DeepSeek-R1-Distill-Qwen-7B, "
            "gpt-oss-120b and Qwen2.5-72B-Instruct (see Data quality).") in published
    banner = next(block for block in published.split("\n\n") if block.startswith("!!! warning"))
    assert "throughput above the memory-bandwidth bound" in banner
    torch = (shipped.docs_dir / "campaigns" / "gpu-torch-native-vs-cgroup" / "index.md").read_text(encoding="utf-8")
    assert "Read with care" not in torch
    # a model's own page: its banner says its runs carry errors; the answer does not say it again
    model = (shipped.docs_dir / "results" / "deepseek" / "index.md").read_text(encoding="utf-8")
    assert "!!! warning" in model and "Read with care" not in model
    for page in sorted(shipped.docs_dir.rglob("*.md")):
        assert "capacity-peak, capacity-weights" not in page.read_text(encoding="utf-8"), page


def test_a_quantity_that_did_not_vary_is_a_sentence_not_a_table(shipped: RenderResult) -> None:
    """Configuration values and constant memory figures (SD 0 in every arm) are stated once, with
    their value, instead of a table of intervals from 1 to 1 and a chart of one tick."""
    page = (shipped.docs_dir / "results" / "llama-3-8b" / "index.md").read_text(encoding="utf-8")
    # the configured quantities: one line under Other metrics, not a row each of 64 | 64
    held = page.split("## Other metrics\n\n", 1)[1].split("\n", 1)[0]
    assert held.startswith("**Held constant**, stated, not tested — one value in every run (40 runs): Average "
                           "input length 512 tokens; ")
    assert "; Pipeline parallel size 1; Requests 64; " in held and held.endswith("; Total output tokens 8,192.")
    assert "| Requests |" not in page and "??? note \"Requests" not in page
    # published figures of one run each, the same in both environments: held constant too
    published = (shipped.docs_dir / "results" / "unnamed" / "index.md").read_text(encoding="utf-8")
    assert ("## Other metrics\n\n**Held constant**, stated, not tested — one value in every run (2 runs), as "
            "published: Device memory total 119.64 GiB; KV cache memory fraction 0.9.\n") in published
    assert "| Device memory total (GiB) |" not in published and "| Memory available for KV cache (GiB) |" in published
    assert "## Peak memory (GiB)\n\n76.02 GiB in every run (40 runs): no run-to-run variance, so stated, not tested." in page
    assert " 1 to 1 |" not in page and "64 to 64" not in page and "peak_memory_gib-runs" not in page
    # the sentence is the fact the analysis states (site.facts), what set the value included
    assert ("## KV cache (GiB)\n\n57.19 GiB in every run (40 runs), sized by the configured fraction 0.9: "
            "no run-to-run variance, so stated, not tested.") in page
    methodology = (shipped.docs_dir / "methodology" / "index.md").read_text(encoding="utf-8")
    assert "KV cache was 57.19 GiB in every run (40 runs): sized by the configured fraction 0.9." in methodology
    assert "Max batch size" not in methodology  # a configured value: its model's page says it, not the test rule


def test_the_results_overview_leads_with_what_was_tested(shipped: RenderResult) -> None:
    """The overview names a model's one campaign once, above its table; lists the metrics the
    comparisons test (the H100 control's latencies, not only throughput) before the report's other
    primary metrics, and says so; and writes a zero-width interval as the Memory page does."""
    page = (shipped.docs_dir / "results" / "index.md").read_text(encoding="utf-8")
    assert ("Each arm's mean with its 95% confidence interval (*no spread*: every run recorded the same value). "
            "First the metrics the comparisons test: Output throughput, Time to first token (mean), Time per output "
            "token (mean) and Request latency (mean); then the other metrics the pages lead with: Memory before KV "
            "cache, Peak memory and KV cache.\n") in page
    llama = page.split("## [Llama-3-8B shape (random weights)](llama-3-8b/index.md)\n", 1)[1].split("\n## ", 1)[0]
    # one campaign, one kind of data: both said once above the table, no column for either
    assert llama.startswith("\nCampaign: [H100 control: native vs cgroup](../campaigns/gpu-torch-native-vs-cgroup/"
                            "index.md); per-run data.\n\n| Metric | Environment | n | Mean | 95% CI |\n")
    metrics = list(dict.fromkeys(line.split(" | ")[0].lstrip("| ") for line in llama.splitlines()[5:] if line))
    assert metrics == ["Output throughput (tok/s)", "Time to first token (mean, ms)", "Time per output token (mean, ms)",
                       "Request latency (mean, ms)", "Peak memory (GiB)", "KV cache (GiB)"]
    assert "| Peak memory (GiB) | native | 20 | 76.02 | no spread |\n" in llama
    assert " to 76.02" not in page and "Request throughput" not in page and "P99" not in page
    assert "| Campaign |" not in page and page.count("Phase 1 as published: container vs native") == 3


def test_a_factor_other_than_environment_is_what_the_results_pages_describe(tmp_path: Path) -> None:
    """With the factor a label (cache: cold / warm), a model page's tables have a row per level of
    it — what its comparisons contrast — not per environment under the factor's heading; a
    quantity of one value is stated as with the factor environment; the page names only the
    error findings behind its own comparisons. The pages about how the runs were made still
    describe environments, and say how the comparisons pool them."""
    (tmp_path / "sparkreport.yml").write_text("factor: label.cache\nbaseline: cold\n", encoding="utf-8")
    result = render(RenderOptions(runs_dir=REPO / "runs", project_root=tmp_path, docs_dir=tmp_path / "docs"))
    page = (result.docs_dir / "results" / "llama-3-8b" / "index.md").read_text(encoding="utf-8")
    assert "error-level findings" not in page  # the Phase 1 arms' errors are not this page's
    assert ("| Cache | n | Mean | 95% CI | SD | CV | Min–max |\n|---|---|---|---|---|---|---|\n"
            "| cold | 20 | 2,545.0 | 2,543.9 to 2,546.1 |") in page  # the first decimal is the uncertain one
    assert "| warm vs cold | -0.2 |" in page and "| native | 20 |" not in page
    held = page.split("## Other metrics\n\n", 1)[1].split("\n", 1)[0]
    assert held.startswith("**Held constant**, stated, not tested — one value in every run (40 runs): ")
    assert "; Requests 64; " in held
    assert "## Peak memory (GiB)\n\n76.02 GiB in every run (40 runs): no run-to-run variance, so stated, not tested." in page
    assert " 1 to 1 |" not in page and "64 to 64" not in page
    campaign = (result.docs_dir / "campaigns" / "gpu-torch-native-vs-cgroup" / "index.md").read_text(encoding="utf-8")
    assert ("made in 2 environments (cgroup-16g, native), 10 iterations per environment and page-cache state, "
            "compared by cache: cold, warm (baseline **cold**), each level pooling the environments") in campaign
    methodology = (result.docs_dir / "methodology" / "index.md").read_text(encoding="utf-8")
    assert "iterations 1–10 per environment and page-cache state" in methodology  # an arm pools both
    assert ("An arm is one campaign × model × level of cache (`label.cache`): the comparisons contrast those "
            "levels within each campaign and model, each pooling the environments its runs were made in, and "
            "the Results pages and the checks count them") in methodology
    # Home names the factor, says why a campaign without the label has no comparison, and what
    # the comparisons cannot say in the factor's words
    home = (result.docs_dir / "index.md").read_text(encoding="utf-8")
    assert "**Design.** compared by cache: warm against the baseline **cold**, 2 models,\n80 runs" in home
    assert ("No comparison could be made for this campaign: no run carries a cache (`label.cache`, the factor "
            "the comparisons contrast), so its figures are described per environment on Results.") in home
    assert "how much the levels of cache differ, not why" in home and "label.caches" not in home
    # the campaign page's charts across models draw the arms its answer compares
    chart = json.loads((result.docs_dir / "campaigns" / "gpu-torch-native-vs-cgroup" / "charts"
                        / "output_throughput_tok_s-by-model.vl.json").read_text(encoding="utf-8"))
    arms = {row["arm"] for row in chart["layer"][0]["data"]["values"]}
    assert arms == {f"{cache} · {model} shape (random weights)" for cache in ("cold", "warm")
                    for model in ("Llama-3-8B", "Qwen2-0.5B")}
    phase1 = (result.docs_dir / "campaigns" / "phase1-published" / "index.md").read_text(encoding="utf-8")
    assert "No comparison could be made in this campaign: no run carries a cache (`label.cache`" in phase1
    # the campaigns' overview lists the environments and, beside them, the levels compared
    overview = (result.docs_dir / "campaigns" / "index.md").read_text(encoding="utf-8")
    assert "| Campaign | Last run | Environments | Cache (baseline first) | Models | Data | Answers | GPU |" in overview
    assert "| 2026-11-23 | cgroup-16g, native | cold, warm | 2 | 80 runs |" in overview
    assert "| — | container, native | — | 3 | published figures (6 arms) |" in overview
    # published figures carry no cache: described per environment, and said so
    published = (result.docs_dir / "results" / "deepseek" / "index.md").read_text(encoding="utf-8")
    assert ("No run of this model carries a cache (`label.cache`, the factor the comparisons contrast): its "
            "figures are described per environment and not compared.") in published
    assert "| Environment | n | Mean | 95% CI | SD | CV | Min–max |\n|---|---|---|---|---|---|---|\n" \
           "| container (*published*) | 10 | 119.40 |" in published
    memory = (result.docs_dir / "memory" / "index.md").read_text(encoding="utf-8")
    assert "| Model | Environment | n |" in memory and "Label.cache" not in memory


def test_the_factor_is_one_setting_at_the_top_of_the_file(tmp_path: Path) -> None:
    """``factor:`` is read once (the checks see it as ``analysis.factor``); written under
    ``analysis:`` it is refused with the line and where it goes."""
    from sparkreport.config import ConfigError, load_config

    path = tmp_path / "sparkreport.yml"
    path.write_text("factor: label.cache\nbaseline: cold\n", encoding="utf-8")
    config = load_config(path)
    assert (config.factor, config.analysis.factor, config.factor_name) == ("label.cache", "label.cache", "cache")
    from sparkreport.config import factor_words

    assert [tuple(factor_words(f)) + (factor_words(f).a_name,) for f in ("environment", "label.cache", "engine_version")] == [
        ("environment", "environment", "environments", "an environment"),
        ("cache", "level of cache", "levels of cache", "a cache"),
        ("engine version", "engine version", "engine versions", "an engine version")]
    path.write_text("analysis:\n  factor: label.cache\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.format_message() == (
        f"{path}:2: factor is a top-level setting, not one of analysis: — write factor: label.cache at the top "
        "of the file, unindented")


def test_a_campaign_without_a_comparison_says_why(tmp_path: Path) -> None:
    """With the baseline an environment only one campaign has, the others say which of their
    environments there are and that none is the baseline; the campaign that has it is compared."""
    (tmp_path / "sparkreport.yml").write_text("baseline: cgroup-16g\n", encoding="utf-8")
    result = render(RenderOptions(runs_dir=REPO / "runs", project_root=tmp_path, docs_dir=tmp_path / "docs"))
    home = (result.docs_dir / "index.md").read_text(encoding="utf-8")
    assert ("No comparison could be made for this campaign: none of its environments (container, native) is "
            "the baseline cgroup-16g (`baseline:` in sparkreport.yml).") in home
    assert "native against the baseline **cgroup-16g**" in home


def test_a_finding_about_a_level_of_a_label_names_its_arm_like_an_environment() -> None:
    """The checks name a label factor's arm ``campaign/model/cache=cold``: the pages read it as
    the finding's arm (its Where cell), as they read ``campaign/model/native``."""
    from sparkreport.render.builtin import compact_wheres
    from sparkreport.render.report import message_body, message_where

    message = "c/m/cache=cold: CV above 5% over 20 runs"
    assert (message_where(message), message_body(message)) == ("c/m/cache=cold", "CV above 5% over 20 runs.")
    assert compact_wheres(["c/m/cache=cold", "c/m/cache=warm"], names={("c", "m"): "Model M"},
                          titles={"c": "Campaign C"}) == "Campaign C · Model M (cache=cold, cache=warm)"
    assert message_where("c/m/cache=very cold: x") == "c/m/cache=very cold"
    assert message_where("3 run folder(s) without run.json: x") == ""


def test_a_finding_names_its_metrics_by_their_labels_on_the_pages(tmp_path: Path) -> None:
    """The checks write a metric's name (``output_throughput_tok_s``), which findings.csv and
    ``check --json`` keep; Data quality and a campaign's caveats say its label, as the rest of
    the pages do."""
    from history_store import write_history_store

    from sparkreport.analysis.checks import check
    from sparkreport.config import AnalysisOptions
    from sparkreport.dataset import load_dataset
    from sparkreport.render.report import message_body

    assert message_body("c/m/native: start_temp_c and end_temp_c missing in 2 of 3 runs") == (
        "GPU temperature at start and GPU temperature at end missing in 2 of 3 runs.")
    assert message_body("c/m/native: CV above 5% over 10 runs — ttft_ms_mean 6.0%, kv_cache_gib 5.1%") == (
        "CV above 5% over 10 runs — time to first token (mean) 6.0%, KV cache 5.1%.")
    # a setting's path, code and a name the catalog does not know stay as written
    assert message_body("c: set `kv_cache_gib` or metrics.kv_cache_gib; gpu_util_pct") == (
        "Set `kv_cache_gib` or metrics.kv_cache_gib; gpu_util_pct.")
    write_history_store(tmp_path / "runs", versions=["0.1.0", "0.2.0"], runs=3, campaign="c")
    (tmp_path / "sparkreport.yml").write_text("analysis:\n  cv_threshold: 0.0001\n", encoding="utf-8")
    site = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path, docs_dir=tmp_path / "docs"))
    found = check(load_dataset(tmp_path / "runs"), AnalysisOptions(cv_threshold=0.0001))  # what --json prints
    assert [f for f in found if f.code == "high-cv"]
    assert all("output_throughput_tok_s" in f.message for f in found if f.code == "high-cv")
    quality = (site.docs_dir / "quality" / "index.md").read_text(encoding="utf-8")
    caveats = (site.docs_dir / "campaigns" / "c" / "index.md").read_text(encoding="utf-8")
    for page in (quality, caveats):
        assert re.search(r"CV above 0% over \d+ runs — (output throughput|peak memory) \d", page), page
        assert "output\\_throughput\\_tok\\_s" not in page and "peak\\_memory\\_gib" not in page


def test_an_answer_states_what_its_question_asks_and_did_not_vary(shipped: RenderResult) -> None:
    """The H100 control asks whether a cgroup changes throughput, latency or the KV cache. Its
    KV cache (and peak memory) had one value in every run, so nothing compared it: the answer on
    Home and on its page says so, as stated, not tested — it used to answer throughput alone."""
    said = ("- **The same in both environments** (2 models): Peak memory and KV cache, one value in every run — "
            "stated, not tested.\n")
    for path in ("index.md", "campaigns/gpu-torch-native-vs-cgroup/index.md"):
        assert said in (shipped.docs_dir / path).read_text(encoding="utf-8"), path


def answer_lines(page: str) -> list[str]:
    """The answer a page gives (its first list of bullets after the heading: Results) or the lines
    of each "**The answer.**" block (Home, in campaign order)."""
    if "**The answer.**" in page:
        return [line for block in page.split("**The answer.**\n\n")[1:]
                for line in block.split("\n\n", 1)[0].splitlines()]
    return page.split("\n\n- ", 1)[1].split("\n\n", 1)[0].join(["- ", ""]).splitlines()


def test_a_models_results_page_answers_as_home_does(shipped: RenderResult) -> None:
    """A model's Results page opens on its campaign's answer as Home gives it, of that model alone
    (one function, report.campaign_answer): the same lines, less Home's count of models and its
    "Read with care" (the page's banner says it). The H100 control's models say what did not vary
    there as Home does, not only in their sections further down."""
    home = answer_lines((shipped.docs_dir / "index.md").read_text(encoding="utf-8"))
    held = ("- **The same in both environments**: Peak memory and KV cache, one value in every run — stated, "
            "not tested.")
    assert held.replace("**:", "** (2 models):") in home
    for model in ("llama-3-8b", "qwen2-0.5b", "deepseek", "gpt120b", "qwen72b", "unnamed"):
        lines = answer_lines((shipped.docs_dir / "results" / model / "index.md").read_text(encoding="utf-8"))
        assert lines, model
        for line in lines:  # each of the model's lines is Home's, but for Home's span over every model
            said = re.sub(r" -?\+?\d[\d.]*%.*", "", line)
            assert any(re.sub(r" \(\d+ models?\)", "", h).startswith(said) for h in home), (model, line)
        assert (held in lines) == (model in ("llama-3-8b", "qwen2-0.5b")), model
    # a campaign of one model: its page's answer is Home's word for word, but the count
    unnamed = answer_lines((shipped.docs_dir / "results" / "unnamed" / "index.md").read_text(encoding="utf-8"))
    assert [line.replace("** (1 model):", "**:") for line in home if "Memory before KV cache +33.98%" in line] \
        == unnamed


def test_a_published_figure_of_one_run_is_named_alike_everywhere(shipped: RenderResult) -> None:
    """The unified-memory post published one run per environment: its comparisons are untested for
    the reason Data quality gives those arms, "published from a single run" (one source:
    compare.PUBLISHED_SINGLE_RUN), not "published without a spread", which the Phase 1 tables'
    memory figures (n = 10, no SD) keep."""
    from sparkreport.analysis.compare import PUBLISHED_SINGLE_RUN, WITHOUT_SPREAD, untested_reason

    published = {"skipped": "Mann–Whitney U, Welch t-test"}
    assert untested_reason({**published, "n_baseline": 1, "n_candidate": 1}) == PUBLISHED_SINGLE_RUN
    assert untested_reason({**published, "n_baseline": 10, "n_candidate": 10}) == WITHOUT_SPREAD
    docs = shipped.docs_dir
    said = "**Published from a single run, so not tested**"
    for path in ("index.md", "campaigns/unified-memory-post/index.md", "results/unnamed/index.md", "memory/index.md"):
        assert said in (docs / path).read_text(encoding="utf-8"), path
    page = (docs / "campaigns" / "unified-memory-post" / "index.md").read_text(encoding="utf-8")
    assert "○ not tested (published from a single run)." in page and "without a spread" not in page
    quality = (docs / "quality" / "index.md").read_text(encoding="utf-8")
    assert ("| The unified-memory post, as published · model not named in the post (native, container) | "
            "Published from a single run — no spread, no confidence interval, no test. |") in quality
    assert "**Published without a spread, so not tested** (3 models)" in (docs / "index.md").read_text(encoding="utf-8")


@settings(max_examples=30, deadline=None)
@given(asked=st.lists(st.sampled_from([f"g{k}" for k in range(8)] + ["none"]), max_size=20),
       sizes=st.lists(st.integers(min_value=0, max_value=5), min_size=8, max_size=8))
def test_grouped_gives_each_groups_rows_as_groupby_does_whatever_is_asked_first(
        asked: list[str], sizes: list[int]) -> None:
    """``grouped``'s groups (a few taken one by one, then the rest in one pass) are the rows,
    order and index ``groupby`` gives, whichever groups are asked for and in what order; a
    value the table does not hold is not there; one column of a group reads the same rows, and
    ``among`` the rows a filter of the group keeps."""
    import pandas as pd
    import pandas.testing as pdt

    from sparkreport.render.report import Groups

    keys = [f"g{k}" for k, size in enumerate(sizes) for _ in range(size)]
    frame = pd.DataFrame({"key": keys[::-1], "value": range(len(keys))}, index=[f"r{i}" for i in range(len(keys))])
    frame = frame.astype({"key": "string"})
    expected = {str(k): g for k, g in frame.groupby("key", sort=False, observed=True)} if len(frame) else {}
    groups = Groups(frame, "key")
    for key in asked:
        assert (key in groups) == (key in expected)
        if key in expected:
            pdt.assert_frame_equal(groups[key], expected[key])
            pdt.assert_series_equal(groups.cells(key, "value"), expected[key]["value"])
            # some of a group's rows, by another column's text (a model page's shown campaigns)
            for wanted in ({"0", "2"}, set(map(str, expected[key]["value"])), set()):
                rows = expected[key]
                pdt.assert_frame_equal(groups.among(key, "value", wanted), rows[rows["value"].astype(str).isin(wanted)])
        else:
            assert groups.get(key) is None and groups.cells(key, "value") is None
            assert groups.among(key, "value", {"0"}) is None
    assert sorted(groups) == sorted(expected) and len(groups) == len(expected)


def test_the_arms_of_some_campaigns_are_those_of_the_whole_table(tmp_path: Path, phase1_store: Path,
                                                                 published_store: Path) -> None:
    """The arm table made for the campaigns a page shows (one at a time, then the rest at once)
    lists, for each, what the table of every campaign lists of it, in the same order."""
    from store_helpers import put_campaign

    from sparkreport.config import ProjectConfig
    from sparkreport.dataset import load_dataset
    from sparkreport.render import builtin
    from sparkreport.render.context import SiteData, build_site_data

    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    shutil.copytree(published_store, runs, dirs_exist_ok=True)
    sources = sorted(phase1_store.glob("*/*/run.json"))
    for i in range(builtin.ARMS_ONE_BY_ONE + 2):
        put_campaign(runs, f"c{i}", sources, list(range(i, 40, 3)))

    def site() -> SiteData:
        return build_site_data(load_dataset(runs), ProjectConfig(), runs, "test", tmp_path)

    whole = site()
    campaigns = sorted(map(str, whole.dataset.campaigns()))
    every = builtin.arm_table(whole, campaigns)
    assert {a["campaign"] for a in every} == set(campaigns) and any(a["published"] for a in every)
    one_by_one = site()
    for campaign in campaigns:  # the first ARMS_ONE_BY_ONE made alone, the rest in one pass
        assert builtin.arm_table(one_by_one, [campaign]) == [a for a in every if a["campaign"] == campaign]
    assert builtin.arm_table(one_by_one, campaigns[:3]) == [a for a in every if a["campaign"] in campaigns[:3]]
