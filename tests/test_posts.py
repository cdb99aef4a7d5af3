"""Blog posts with live data: every bound number equals `sparkreport stats`, bad bindings fail
the build with file:line, code stays literal, and the site's posts and feed build strictly."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport.analysis import claim_sentence, errors_for
from sparkreport.cli import main
from sparkreport.errors import BuildError
from sparkreport.ingest import IngestOptions, ingest_paths
from sparkreport.render import RenderOptions, render
from sparkreport.render.markdown import md_escape, num
from sparkreport.render.posts import BindingError, find_bindings, parse_binding
from sparkreport.render.precision import table_places
from sparkreport.site import BuildResult, build
from sparkreport.store import RunStore

REPO = Path(__file__).resolve().parents[1]


def stats_json(runs: Path, *extra: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(main, ["stats", "--json", "--runs-dir", str(runs), *extra])
    assert result.exit_code == 0, result.output
    return list(json.loads(result.output))


def project_with(tmp_path: Path, post: str, name: str = "post.md") -> Path:
    project = tmp_path / "project"
    (project / "docs" / "blog" / "posts").mkdir(parents=True)
    (project / "docs" / "blog" / "index.md").write_text("# Blog\n", encoding="utf-8")
    (project / "docs" / "blog" / "posts" / name).write_text(post, encoding="utf-8")
    return project


def render_post(project: Path, runs: Path, name: str = "post.md") -> str:
    result = render(RenderOptions(runs_dir=runs, project_root=project))
    return (result.docs_dir / "blog" / "posts" / name).read_text(encoding="utf-8")


def body(text: str) -> str:
    """A rendered post without its front matter and provenance footer."""
    return text.split("\n---\n", 1)[1].rsplit("\n---\n", 1)[0].strip() if text.startswith("---") else \
        text.rsplit("\n---\n", 1)[0].strip()


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("stat", ["mean", "median", "sd", "min", "max", "n", "ci_low", "ci_high"])
def test_value_equals_stats_for_per_run_arms(tmp_path: Path, phase1_store: Path, stat: str) -> None:
    row = next(r for r in stats_json(phase1_store)
               if (r["model"], r["environment"], r["metric"]) == ("qwen72b", "container", "kv_cache_gib"))
    post = f'KV: {{{{ value("kv_cache_gib", model="qwen72b", environment="container", stat="{stat}") }}}}\n'
    text = body(render_post(project_with(tmp_path, post), phase1_store))
    # the arm's figures with the decimals its Results table prints them with (the precision rule)
    expected = str(row["n"]) if stat == "n" else f"{num(row[stat], digits=table_places([row], 'kv_cache_gib'))} GiB"
    assert text == f"KV: {expected}"


def test_value_reads_published_summaries(tmp_path: Path, published_store: Path) -> None:
    rows = {(r["model"], r["environment"], r["metric"]): r for r in stats_json(published_store)}
    post = ('{{ value("pre_kv_memory_gib", model="deepseek", environment="native") }} / '
            '{{ value("output_throughput_tok_s", model_name="gpt-oss-120b", environment="container", stat="sd") }} / '
            '{{ value("kv_cache_fraction", model="unnamed", environment="native") }} / '
            '{{ value("pre_kv_memory_gib", campaign="unified-memory-post", environment="container", unit=False) }}\n')
    text = body(render_post(project_with(tmp_path, post), published_store))
    arm = rows[("gpt120b", "container", "output_throughput_tok_s")]
    sd = num(arm["sd"], digits=table_places([arm], "output_throughput_tok_s"))
    assert text == f"70.47 GiB / {sd} tok/s / 0.900 / 104.92"  # memory and fraction: no SD, the catalog's decimals
    assert rows[("deepseek", "native", "pre_kv_memory_gib")]["mean"] == 70.47


def test_compare_is_the_claim_sentence_with_its_warning(tmp_path: Path, published_store: Path) -> None:
    result = CliRunner().invoke(main, ["compare", "--json", "--runs-dir", str(published_store)])
    rows = [r for r in json.loads(result.output)
            if (r["model"], r["metric"]) == ("qwen72b", "output_throughput_tok_s")]
    assert len(rows) == 1
    post = '{{ compare("output_throughput_tok_s", model="qwen72b", factor="environment", baseline="native") }}\n'
    text = body(render_post(project_with(tmp_path, post), published_store))
    from sparkreport.analysis import check
    from sparkreport.config import AnalysisOptions
    from sparkreport.dataset import load_dataset

    ds = load_dataset(published_store)
    findings = check(ds, AnalysisOptions())
    flagged = errors_for(rows[0], findings, list(ds.summaries.loc[ds.summaries["model"] == "qwen72b", "run_id"]))
    assert {f.code for f in flagged} == {"capacity-peak", "capacity-weights", "roofline", "size-insensitive"}
    assert text == md_escape(claim_sentence(rows[0], flagged))
    assert "equivalent in container and native" in text and "⚠ The checks found errors in these runs" in text


def test_compare_on_per_run_data(tmp_path: Path, phase1_store: Path) -> None:
    post = '{{ compare("pre_kv_memory_gib", model="deepseek") }}\n'
    text = body(render_post(project_with(tmp_path, post), phase1_store))
    assert text.startswith("DeepSeek-R1-Distill-Qwen-7B: container had 1.44× the memory before KV cache of native (95% CI ")


def test_tables_and_charts_come_from_the_pages(tmp_path: Path, published_store: Path) -> None:
    post = ('Intro.\n\n{{ table("arms", metric="kv_cache_gib", model="deepseek") }}\n\n'
            '{{ chart("memory/kv-vs-peak") }}\n\n{{ table("findings", code="roofline") }}\n')
    result = render(RenderOptions(runs_dir=published_store, project_root=project_with(tmp_path, post)))
    text = (result.docs_dir / "blog" / "posts" / "post.md").read_text(encoding="utf-8")
    # the metric named in its column; published without a spread: no columns of dashes; the one
    # campaign and the one model the binding shows are the post's subject, not a column of repeats
    assert "| Environment | n | KV cache, mean (GiB) |\n" in text
    assert "| native (*published*) | 10 | 44.31 |\n" in text and "| phase1-published |" not in text
    assert '<span class="sparkreport-chart" id="chart-post-1-kv-vs-peak" role="figure"' in text
    assert "](../../memory/charts/kv-vs-peak.svg)</span>" in text
    assert (result.docs_dir / "memory" / "charts" / "kv-vs-peak.vl.json").is_file()
    # the check in words, the arm by its model (one campaign: no title), no severity column of one value
    # the arms as Data quality lists them: the baseline (native) first
    assert "| Throughput above the memory-bandwidth bound | Qwen2.5-72B-Instruct (native) | 119.33 tok/s exceeds" in text
    assert "|  | Qwen2.5-72B-Instruct (container) |" in text  # the check named once
    assert "| Check | Where | Finding |" in text and "| error |" not in text
    assert result.posts[0].bindings == 3 and result.posts[0].charts == ["memory/kv-vs-peak"]
    # over several models they stay
    several = project_with(tmp_path / "several", 'Intro.\n\n{{ table("arms", metric="kv_cache_gib") }}\n')
    text = (render(RenderOptions(runs_dir=published_store, project_root=several)).docs_dir / "blog" / "posts"
            / "post.md").read_text(encoding="utf-8")
    assert "| Campaign | Model | Environment | n | KV cache, mean (GiB) |\n" in text


# --------------------------------------------------------------------------- literal code


def test_code_blocks_and_front_matter_stay_literal(tmp_path: Path, published_store: Path) -> None:
    post = (
        "---\ndate: 2026-01-01\ndescription: '{{ not a binding }}'\n---\n\n# T\n\n"
        "Inline `{{ value(\"x\") }}` and ``{{ value(\"y\") }}`` stay; "
        '{{ value("kv_cache_gib", model="deepseek", environment="native") }} is filled.\n\n'
        "```python\n{{ value(\"nope\") }}\n```\n\n"
        "~~~~\n{{ compare(\"nope\") }}\n```\nstill code\n~~~~\n\n"
        "   ```\n   {{ chart(\"nope\") }}\n   ```\n\n"
        "    {{ table(\"nope\") }}\n"
    )
    text = render_post(project_with(tmp_path, post), published_store)
    assert "description: '{{ not a binding }}'" in text
    assert 'Inline `{{ value("x") }}` and ``{{ value("y") }}`` stay; 44.31 GiB is filled.' in text
    assert '```python\n{{ value("nope") }}\n```' in text
    assert '~~~~\n{{ compare("nope") }}\n```\nstill code\n~~~~' in text
    assert '   ```\n   {{ chart("nope") }}\n   ```' in text
    assert '\n    {{ table("nope") }}\n' in text  # an indented code block


def test_find_bindings_skips_code_only() -> None:
    text = 'a {{ value("m") }} `{{ x }}` b\n\n```\n{{ y }}\n```\n{{ chart("c") }}'
    assert [inner.strip() for _, _, inner in find_bindings(text)] == ['value("m")', 'chart("c")']


@pytest.mark.parametrize(("text", "bound"), [
    ('Text {{ value("a") }}\n\n    {{ value("code") }}\n\n    still code\n\nafter {{ value("b") }}\n',
     ['value("a")', 'value("b")']),
    ('\t{{ value("tab") }}\n', []),
    # inside a list, an indented paragraph continues the item: its bindings are filled
    ('- item {{ value("a") }}\n\n    more {{ value("b") }}\n\nPara\n\n    {{ value("code") }}\n',
     ['value("a")', 'value("b")']),
    # an indented line right under a paragraph continues it (it cannot start a code block)
    ('Para line\n    {{ value("lazy") }}\n', ['value("lazy")']),
])
def test_indented_code_blocks_stay_literal(text: str, bound: list[str]) -> None:
    assert [inner.strip() for _, _, inner in find_bindings(text)] == bound


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("binding", "problem"), [
    ('value("kv_cache_gb", model="deepseek", environment="native")',
     "unknown metric 'kv_cache_gb' — metrics in the data: kv_cache_fraction, kv_cache_gib, memory_available_gib, "
     "memory_total_gib, output_throughput_tok_s, pre_kv_memory_gib"),
    ('value("kv_cache_gib", model="llama", environment="native")',
     "no arm with kv_cache_gib has model='llama' — model values here: deepseek, gpt120b, qwen72b, unnamed"),
    ('value("kv_cache_gib", model="deepseek")',
     "matches 2 arms (phase1-published/deepseek/native; phase1-published/deepseek/container) — add campaign=, "
     "model= or environment= to pick one"),
    ('value("kv_cache_gib", model="deepseek", environment="native", stat="median")',
     "median is missing (NaN) for phase1-published/deepseek/native — published figures give: mean 44.31, n 10"),
    ('value("kv_cache_gib", model="deepseek", environment="native", stat="p99")',
     "unknown stat 'p99' — one of mean, median, sd, min, max, n, ci_low, ci_high"),
    ('value("kv_cache_gib", gpu="h100")', "unknown filter 'gpu' — filters: campaign, model, model_name, "
     "environment, label_KEY"),
    ('compare("kv_cache_gib")', "matches 4 comparisons (phase1-published/deepseek container vs native; "
     "phase1-published/gpt120b container vs native; phase1-published/qwen72b container vs native; "
     "unified-memory-post/unnamed container vs native) — add campaign=, model= or candidate= to pick one"),
    ('compare("kv_cache_gib", model="deepseek", baseline="bare-metal")',
     "no environment called 'bare-metal' — the data has: container, native"),
    ('chart("memory/kv-vs-peak", size=3)', "chart(): got an unexpected keyword argument 'size'"),
    ('value(__import__("os").system("true"))', "arguments must be literals (strings, numbers, True/False/None)"),
    ('open("/etc/passwd")', "unknown function 'open' — bindings are value(…), compare(…), chart(…), table(…)"),
    ("kv_cache_gib", "not a binding — write one of value(…), compare(…), chart(…), table(…)"),
    ('value("kv_cache_gib", model="deepseek", environment="native", colour="red")',
     "unknown filter 'colour' — filters: campaign, model, model_name, environment, label_KEY"),
    # an argument of the wrong type is a binding error, not a traceback from the formatting
    ('value("kv_cache_gib", model="deepseek", environment="native", digits=-1)',
     "value(): digits=-1 is not a number of decimals — digits takes a whole number from 0 to 10, e.g. digits=1"),
    ('value("kv_cache_gib", model="deepseek", environment="native", digits="two")',
     "value(): digits='two' is not a number of decimals — digits takes a whole number from 0 to 10, e.g. digits=1"),
    ('value("kv_cache_gib", "mean", 2.5, model="deepseek", environment="native")',
     "value(): digits=2.5 is not a number of decimals — digits takes a whole number from 0 to 10, e.g. digits=1"),
    ('value("kv_cache_gib", model="deepseek", environment="native", unit="no")',
     "value(): unit='no' is not True or False — unit takes True (the default: the unit after the number) or "
     "False (the number alone)"),
    ('value("kv_cache_gib", model=["deepseek"], environment="native")',
     "value(): model=['deepseek'] is not one value — a filter takes a string or a number, e.g. model=\"…\""),
    ('compare("kv_cache_gib", model="deepseek", factor=["environment"])',
     "compare(): factor=['environment'] is not a column name — write it in quotes, e.g. factor=\"environment\""),
    ('compare("kv_cache_gib", model="deepseek", baseline={"native": 1})',
     "compare(): baseline={'native': 1} is not one value — write it in quotes, e.g. baseline=\"native\""),
])
def test_bad_binding_fails_with_file_line_and_what_exists(tmp_path: Path, published_store: Path, binding: str,
                                                          problem: str, monkeypatch: pytest.MonkeyPatch) -> None:
    project = project_with(tmp_path, f"---\ndate: 2026-01-01\n---\n\n# Post\n\nFine text.\nSee {{{{ {binding} }}}}.\n",
                           name="bad.md")
    monkeypatch.chdir(project)
    with pytest.raises(BuildError) as raised:
        render(RenderOptions(runs_dir=published_store, project_root=project))
    message = raised.value.format_message()
    assert message == f"docs/blog/posts/bad.md:8: {{{{ {binding} }}}}: {problem}"
    assert "\n" not in message


def test_unknown_chart_and_table_list_what_exists(tmp_path: Path, published_store: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    project = project_with(tmp_path, '# P\n\n{{ chart("memory/nope") }}\n', name="c.md")
    monkeypatch.chdir(project)
    with pytest.raises(BuildError) as raised:
        render(RenderOptions(runs_dir=published_store, project_root=project))
    message = raised.value.format_message()
    assert message.startswith('docs/blog/posts/c.md:3: {{ chart("memory/nope") }}: no chart \'memory/nope\' — charts: ')
    # The list is cut short (names.shown_values): the first eight charts, sorted, then a count.
    assert "memory/" in message and re.search(r", … and \d+ more$", message) and "\n" not in message
    (project / "docs" / "blog" / "posts" / "c.md").write_text('# P\n\n{{ table("runs") }}\n', encoding="utf-8")
    with pytest.raises(BuildError, match=r"^docs/blog/posts/c\.md:3: \{\{ table\(\"runs\"\) \}\}: no table 'runs' "
                                         r"— tables: arms, comparisons, findings$"):
        render(RenderOptions(runs_dir=published_store, project_root=project))
    (project / "docs" / "blog" / "posts" / "c.md").write_text('# P\n\n{{ table(["arms"]) }}\n', encoding="utf-8")
    with pytest.raises(BuildError, match=r"^docs/blog/posts/c\.md:3: \{\{ table\(\[\"arms\"\]\) \}\}: no table \['arms'\] "
                                         r"— tables: arms, comparisons, findings$"):
        render(RenderOptions(runs_dir=published_store, project_root=project))


@pytest.mark.parametrize(("line", "shown"), [
    ('See {{ value("kv_cache_gib", model="deepseek", environment="native") }.',
     '{{ value("kv_cache_gib", model="deepseek", environment="native") }.'),
    ('See {{ value("kv_cache_gib", model="deepseek",\nenvironment="native") } and more.',
     '{{ value("kv_cache_gib", model="deepseek",'),
    ("Braces {{ with no end", "{{ with no end"),
])
def test_a_binding_not_closed_fails_with_file_line(tmp_path: Path, published_store: Path, line: str, shown: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A half-typed binding is refused, not published as written."""
    project = project_with(tmp_path, f"# Post\n\nFine {{{{ value(\"kv_cache_gib\", model=\"deepseek\", "
                                     f"environment=\"native\") }}}}.\n\n{line}\n", name="open.md")
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["build", "--runs-dir", str(published_store)])
    assert result.exit_code == 1
    assert result.output == (f"Error: docs/blog/posts/open.md:5: {shown}: a binding not closed — close it with }}}} "
                             "(to show it as written, put it in backticks)\n")
    assert not (project / "site").exists()


def test_a_binding_not_closed_in_code_stays_literal(tmp_path: Path, published_store: Path) -> None:
    """In code a half-typed binding is shown as written, and does not hide a binding after it."""
    post = ('# Post\n\nInline `{{ value("x") }` then '
            '{{ value("kv_cache_gib", model="deepseek", environment="native") }}.\n\n'
            '```\n{{ value("y") }\n```\n')
    text = render_post(project_with(tmp_path, post), published_store)
    assert 'Inline `{{ value("x") }` then 44.31 GiB.' in text
    assert '```\n{{ value("y") }\n```' in text


def test_table_must_stand_alone(tmp_path: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = project_with(tmp_path, 'x {{ table("findings") }}\n', name="t.md")
    monkeypatch.chdir(project)
    with pytest.raises(BuildError, match=r"^docs/blog/posts/t\.md:1: .*table\(\) must stand on a line of its own$"):
        render(RenderOptions(runs_dir=published_store, project_root=project))


def test_bad_binding_fails_the_build_cli(tmp_path: Path, published_store: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    project = project_with(tmp_path, '# P\n\n{{ value("nope_gib") }}\n', name="p.md")
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["build", "--runs-dir", str(published_store)])
    assert result.exit_code == 1
    assert result.output.startswith("Error: docs/blog/posts/p.md:3: {{ value(\"nope_gib\") }}: unknown metric")
    assert result.output.count("\n") == 1
    assert not (project / "site").exists()


def test_parse_binding_never_evaluates() -> None:
    binding = parse_binding(' value("m", model="a", **{"label.gpu": "h100"}, label_os="linux") ', 3)
    assert (binding.function, binding.args, binding.kwargs, binding.line) == (
        "value", ("m",), {"model": "a", "label.gpu": "h100", "label_os": "linux"}, 3)
    for bad in ('value(*["m"])', "value(lambda: 1)", 'value("m".upper())', "value(m)"):
        with pytest.raises(BindingError):
            parse_binding(bad, 1)


def test_label_filters(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for gpu, mean in (("h100", 10.0), ("h200", 20.0)):
        csv = tmp_path / f"{gpu}.csv"
        csv.write_text(f"model,environment,metric,n,mean,sd\nm,native,output_throughput_tok_s,3,{mean},1.0\n",
                       encoding="utf-8")
        report = ingest_paths([csv], RunStore(runs), IngestOptions(campaign=gpu, labels={"gpu": gpu}))
        assert not report.rejected
    project = project_with(tmp_path, '{{ value("output_throughput_tok_s", campaign="h200") }}\n')
    assert body(render_post(project, runs)) == "20 tok/s"  # 20.0 ± 2.5 (n 3, SD 1): whole tok/s


# --------------------------------------------------------------------------- the site's own posts


@pytest.fixture(scope="module")
def site_with_posts(tmp_path_factory: pytest.TempPathFactory, published_store: Path) -> BuildResult:
    """This repository's mkdocs.yml, docs/ and posts over the embedded default data."""
    project = tmp_path_factory.mktemp("posts-site")
    shutil.copy(REPO / "mkdocs.yml", project / "mkdocs.yml")
    shutil.copytree(REPO / "docs", project / "docs")
    return build(RenderOptions(runs_dir=published_store, project_root=project), strict=True)


def test_site_posts_build_strictly_with_the_blog(site_with_posts: BuildResult) -> None:
    posts = site_with_posts.render.posts
    assert len(posts) >= 3 and all(p.bindings >= 5 for p in posts)
    html = {p.title: next(site_with_posts.site_dir.joinpath("blog").rglob(f"*/{slug}/index.html"))
            for p, slug in ((p, p.title.lower().replace(",", "").replace(" ", "-")) for p in posts)
            if p.title.startswith("Docker vs native")}
    page = next(iter(html.values())).read_text(encoding="utf-8")
    assert page.count("{{") == 0  # every binding filled (a post shows one as written only inside code)
    assert "70.47 GiB" in page and "TOST p &lt; 0.001" in page
    assert 'class="sparkreport-provenance"' in page
    assert not site_with_posts.warnings


def test_site_post_numbers_match_stats(site_with_posts: BuildResult, published_store: Path) -> None:
    rows = {(r["model"], r["environment"], r["metric"]): r for r in stats_json(published_store)}
    docs = site_with_posts.render.docs_dir / "blog" / "posts"
    budget = (docs / "unified-memory-budget.md").read_text(encoding="utf-8")
    for env in ("native", "container"):
        for metric in ("memory_total_gib", "pre_kv_memory_gib", "memory_available_gib", "kv_cache_gib"):
            assert f"{num(rows[('unnamed', env, metric)]['mean'], metric)} GiB" in budget
    recomputed = (docs / "phase1-recomputed.md").read_text(encoding="utf-8")
    sd = rows[("deepseek", "native", "output_throughput_tok_s")]
    d = table_places([sd], "output_throughput_tok_s")
    assert (f"{num(sd['sd'], digits=d)} tok/s over\n{sd['n']} runs" in recomputed)
    assert f"from\n{num(sd['ci_low'], digits=d)} tok/s to\n{num(sd['ci_high'], digits=d)} tok/s." in recomputed


def test_rss_feed_lists_the_posts(site_with_posts: BuildResult) -> None:
    feed = ET.parse(site_with_posts.site_dir / "blog" / "feed.xml").getroot()
    items = feed.findall("channel/item")
    assert len(items) == len(site_with_posts.render.posts)
    dates = [i.findtext("pubDate") for i in items]
    assert dates[0] and dates[0].startswith("Sat, 21 Nov 2026")  # newest first
    for item in items:
        link = item.findtext("link") or ""
        assert (site_with_posts.site_dir / "blog" / link / "index.html").is_file(), link
        assert item.findtext("title") and item.findtext("description")
    assert feed.findtext("channel/title") == "DGX Spark inference results — blog"


def test_feed_links_are_absolute_with_site_url(tmp_path: Path, published_store: Path) -> None:
    project = project_with(tmp_path, "---\ndate: 2026-02-03\n---\n\n# Fish & chips < 3\n\nText.\n")
    (project / "mkdocs.yml").write_text("site_name: S\nsite_url: https://example.org/r/\n", encoding="utf-8")
    result = build(RenderOptions(runs_dir=published_store, project_root=project), strict=True)
    item = ET.parse(result.site_dir / "blog" / "feed.xml").getroot().find("channel/item")
    assert item is not None
    assert item.findtext("title") == "Fish & chips < 3"
    link = item.findtext("link") or ""
    assert link.startswith("https://example.org/r/blog/2026/02/03/") and link.endswith("/")
    assert (result.site_dir / link.removeprefix("https://example.org/r/") / "index.html").is_file()
    assert item.findtext("guid") == link
    assert item.findtext("description") == "Text."


def test_the_pages_workflow_s_address_makes_the_feed_and_sitemap_absolute(
        tmp_path: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without site_url in mkdocs.yml, SPARKREPORT_SITE_URL (the Pages workflow passes
    configure-pages' base_url) gives the sitemap its addresses and the feed absolute links; a
    changed address is a changed build (the kept site is not reused)."""
    project = project_with(tmp_path, "---\ndate: 2026-02-03\n---\n\n# P\n\nText.\n")
    monkeypatch.setenv("SPARKREPORT_SITE_URL", "https://owner.github.io/repo")
    result = build(RenderOptions(runs_dir=published_store, project_root=project), strict=True)
    link = ET.parse(result.site_dir / "blog" / "feed.xml").getroot().findtext("channel/item/link") or ""
    assert link.startswith("https://owner.github.io/repo/blog/2026/02/03/")
    sitemap = (result.site_dir / "sitemap.xml").read_text(encoding="utf-8")
    assert "<loc>https://owner.github.io/repo/</loc>" in sitemap
    monkeypatch.setenv("SPARKREPORT_SITE_URL", "https://example.org/other/")
    again = build(RenderOptions(runs_dir=published_store, project_root=project), strict=True)
    assert not again.cached
    assert "<loc>https://example.org/other/</loc>" in (again.site_dir / "sitemap.xml").read_text(encoding="utf-8")


def test_static_charts_posts_draws_svgs_only_for_the_posts_charts(tmp_path: Path, published_store: Path) -> None:
    project = project_with(tmp_path, '# P\n\n{{ chart("memory/kv-vs-peak") }}\n')
    (project / "sparkreport.yml").write_text("static_charts: posts\n", encoding="utf-8")
    result = render(RenderOptions(runs_dir=published_store, project_root=project))
    svgs = sorted(p.relative_to(result.docs_dir).as_posix() for p in result.docs_dir.rglob("*.svg"))
    assert svgs == ["memory/charts/kv-vs-peak.svg"] and result.svg_count == 1
    assert result.chart_count > 1
    memory = (result.docs_dir / "memory" / "index.md").read_text(encoding="utf-8")
    assert '<noscript><img src="charts/kv-vs-peak.svg"' not in memory
    assert '(<a href="charts/kv-vs-peak.vl.json">Vega-Lite spec</a>; the chart needs JavaScript)</noscript>' in memory


def test_static_charts_auto_stops_drawing_svgs_past_the_limit(tmp_path: Path, published_store: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkreport import config

    small = render(RenderOptions(runs_dir=published_store, project_root=tmp_path / "a"))
    assert small.svg_count == small.chart_count > 0
    monkeypatch.setattr(config, "STATIC_CHART_LIMIT", small.chart_count - 1)
    large = render(RenderOptions(runs_dir=published_store, project_root=tmp_path / "b"))
    assert large.svg_count == 0 and not list(large.docs_dir.rglob("*.svg"))


def test_a_findings_table_over_campaigns_names_each_arm_and_severity(tmp_path: Path, published_store: Path) -> None:
    """Rows from several campaigns and severities: a severity column, and each arm named by its
    campaign (its title, else its name) and its model's name, as Data quality names them."""
    post = 'Intro.\n\n{{ table("findings") }}\n'
    result = render(RenderOptions(runs_dir=published_store, project_root=project_with(tmp_path, post)))
    text = (result.docs_dir / "blog" / "posts" / "post.md").read_text(encoding="utf-8")
    assert "| Severity | Check | Where | Finding |" in text
    # one sentence about two arms: one row, the arms together, the baseline (native) first
    assert ("| error | Weights larger than the memory pool | phase1-published: Qwen2.5-72B-Instruct (native, container) | "
            "The weights alone need 135.41 GiB") in text
    assert "| warning | A single run per arm | unified-memory-post: model not named in the post (" in text


def test_a_table_right_under_a_line_of_prose_is_a_table(tmp_path: Path, published_store: Path) -> None:
    """A table binding on the line right after a sentence (no blank line between): the table is
    set off by blank lines, so Markdown reads a table, not one paragraph of pipes."""
    post = 'It ran at:\n{{ table("findings", code="size-insensitive") }}\nAnd then more.\n'
    result = render(RenderOptions(runs_dir=published_store, project_root=project_with(tmp_path, post)))
    text = (result.docs_dir / "blog" / "posts" / "post.md").read_text(encoding="utf-8")
    assert "It ran at:\n\n| Check | Where | Finding |\n" in text
    assert re.search(r"\|\n\nThroughput that does not depend on model size: in every row, .*\n\nAnd then more\.\n",
                     text, flags=re.S), text


def test_a_findings_table_says_a_clause_every_row_of_a_check_ends_with_once(tmp_path: Path,
                                                                              published_store: Path) -> None:
    """Four size-insensitive errors each ending 'these runs may not have run the models they name':
    each row keeps its own numbers and its assumption's mark, the clause is said once under the
    table, as Data quality says it above its own."""
    post = 'Intro.\n\n{{ table("findings", code="size-insensitive") }}\n'
    result = render(RenderOptions(runs_dir=published_store, project_root=project_with(tmp_path, post)))
    text = (result.docs_dir / "blog" / "posts" / "post.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "report the same output throughput" in line]
    assert len(rows) == 4 and not any("may not have run" in row for row in rows)
    assert all(re.search(r"apart\) \(†+\)\. \|$", row) for row in rows), rows
    assert text.count("these runs may not have run the models they name") == 1
    assert "\n\nThroughput that does not depend on model size: in every row, these runs may not have run the models " \
           "they name.\n\n† assumes" in text


def test_a_repeated_warning_names_its_checks_in_words(tmp_path: Path, published_store: Path) -> None:
    """The second claim over the same flagged runs points back to the first warning by the
    checks' names, not by their codes."""
    post = ('{{ compare("output_throughput_tok_s", model="qwen72b") }}\n\n'
            'Again: {{ compare("output_throughput_tok_s", model="qwen72b") }}\n')
    result = render(RenderOptions(runs_dir=published_store, project_root=project_with(tmp_path, post)))
    text = (result.docs_dir / "blog" / "posts" / "post.md").read_text(encoding="utf-8")
    assert "⚠ The checks found errors in these runs" in text
    assert text.count("⚠ The checks found errors in these runs") == 1  # said in full once
    assert ("⚠ (errors in these runs, as above: measured memory below the weights; weights larger than the "
            "memory pool; throughput above the memory-bandwidth bound; throughput that does not depend on model "
            "size)") in text
    assert "roofline" not in text and "size-insensitive" not in text
