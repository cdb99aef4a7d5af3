"""Site: strict MkDocs builds in a temp dir, the generated config, offline assets, errors."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from sparkreport import published as site_assets
from sparkreport.cli import main
from sparkreport.errors import BuildError
from sparkreport.render import RenderOptions
from sparkreport.site import BuildResult, build

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with this repository's mkdocs.yml and hand-written docs."""
    root = tmp_path_factory.mktemp("site-project")
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    # The blog posts bind to the shipped runs/ (published figures), not to the per-run data used
    # here: tests/test_posts.py builds them over the data they were written for.
    shutil.copytree(REPO / "docs", root / "docs", ignore=shutil.ignore_patterns("posts"))
    return root


@pytest.fixture(scope="module")
def built(project: Path, phase1_store: Path) -> BuildResult:
    return build(RenderOptions(runs_dir=phase1_store, project_root=project), strict=True)


def test_strict_build_writes_every_page(built: BuildResult) -> None:
    site = built.site_dir
    assert site == built.render.project_root / "site"
    for page in built.render.pages:
        html = site / page.path.replace("index.md", "index.html")
        assert html.is_file(), page.path
    assert (site / "about-this-site" / "index.html").is_file()
    assert (site / "downloads" / "dataset.parquet").is_file()
    assert not built.warnings


def test_generated_config_inherits_the_project(built: BuildResult, project: Path) -> None:
    config = yaml.safe_load(built.config_file.read_text(encoding="utf-8").split("\n", 1)[1])
    assert built.config_file == project / "build" / "mkdocs.yml"
    assert config["INHERIT"] == "../mkdocs.yml"
    assert config["theme"] == {"name": "material", "font": False}
    assert config["docs_dir"] == "docs"
    assert config["extra_javascript"] == site_assets.javascript_paths()
    titles = [next(iter(item)) for item in config["nav"]]
    assert titles[:8] == ["Home", "Campaigns", "Results", "Memory", "Methodology", "Data quality", "Runs", "Downloads"]
    assert "About this site" in titles
    # the hand-written reference pages sit under one section named after their folder
    reference = next(item["Reference"] for item in config["nav"] if "Reference" in item)
    assert "reference/statistics.md" in [next(iter(page.values())) for page in reference]
    assert not any(str(next(iter(item.values()))).startswith("reference/") for item in config["nav"])
    home = (built.site_dir / "index.html").read_text(encoding="utf-8")
    assert "<title>DGX Spark inference results</title>" in home  # site_name inherited


def test_site_needs_nothing_from_other_hosts(built: BuildResult) -> None:
    vendor = built.site_dir / "assets" / "sparkreport" / "vendor"
    for name in site_assets.JAVASCRIPT:
        assert (built.site_dir / "assets" / "sparkreport" / name).is_file()
    assert sorted(p.name for p in vendor.glob("LICENSE-*")) == [
        "LICENSE-vega-embed.txt", "LICENSE-vega-lite.txt", "LICENSE-vega.txt"]
    for html in built.site_dir.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, html
        external = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(https?://[^"]+)"', text)
        assert not external, (html, external)
        assert not re.search(r"\bcdn\.jsdelivr|unpkg\.com", text), html


def test_vendored_versions_match_altair_and_vl_convert() -> None:
    import altair as alt
    import vl_convert

    assert site_assets.VEGALITE_VERSION == alt.VEGALITE_VERSION
    assert site_assets.VEGA_VERSION.split(".")[0] == str(alt.VEGA_VERSION).split(".")[0]
    assert site_assets.VEGAEMBED_VERSION.split(".")[0] == str(alt.VEGAEMBED_VERSION).split(".")[0]
    assert vl_convert.get_vega_version() == site_assets.VEGA_VERSION
    embed = (site_assets.ASSETS / site_assets.JAVASCRIPT[2]).read_text(encoding="utf-8")
    assert f'"{site_assets.VEGAEMBED_VERSION}"' in embed


def test_charts_use_the_vendored_vega_lite_schema(built: BuildResult) -> None:
    major_minor = ".".join(site_assets.VEGALITE_VERSION.split(".")[:2])
    specs = list(built.site_dir.rglob("*.vl.json"))
    assert len(specs) == built.render.chart_count
    for spec in specs:
        assert f"vega-lite/v{major_minor.split('.')[0]}" in spec.read_text(encoding="utf-8")


def test_build_without_project_config(tmp_path: Path, phase1_store: Path) -> None:
    result = build(RenderOptions(runs_dir=phase1_store, project_root=tmp_path), tmp_path / "out")
    config = yaml.safe_load(result.config_file.read_text(encoding="utf-8"))
    assert "INHERIT" not in config and config["site_name"] == "LLM inference benchmark results"
    assert (tmp_path / "out" / "index.html").is_file()


def test_project_nav_is_kept_after_the_generated_pages(tmp_path: Path, phase1_store: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("# Notes\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text("site_name: Mine\nnav:\n  - Our notes: notes.md\n", encoding="utf-8")
    result = build(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    config = yaml.safe_load(result.config_file.read_text(encoding="utf-8"))
    assert config["nav"][-1] == {"Our notes": "notes.md"}
    assert "site_name" not in config  # inherited


def test_strict_build_fails_on_a_broken_link_in_one_line(tmp_path: Path, phase1_store: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "broken.md").write_text("# Broken\n\n[gone](nowhere.md)\n", encoding="utf-8")
    with pytest.raises(BuildError, match="nowhere.md"):
        build(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=tmp_path):
        shutil.copytree(tmp_path / "docs", "docs")
        result = runner.invoke(main, ["build", "--runs-dir", str(runs)])
        assert result.exit_code == 1
        assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
        assert "nowhere.md" in result.output
        result = runner.invoke(main, ["build", "--runs-dir", str(runs), "--no-strict"])
        assert result.exit_code == 0, result.output
        assert "warning:" in result.output and Path("site/index.html").is_file()


def test_generated_config_never_replaces_the_projects(tmp_path: Path, phase1_store: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text("site_name: Mine\n", encoding="utf-8")
    with pytest.raises(BuildError, match="would replace yours"):
        build(RenderOptions(runs_dir=phase1_store, project_root=tmp_path, docs_dir=tmp_path / "generated"))
    assert (tmp_path / "mkdocs.yml").read_text(encoding="utf-8") == "site_name: Mine\n"


def test_site_commands_have_help() -> None:
    runner = CliRunner()
    for command in ("render", "build", "serve"):
        result = runner.invoke(main, [command, "--help"])
        assert result.exit_code == 0 and "--runs-dir" in result.output and "--docs-dir" in result.output


def test_every_runs_files_are_copied_into_the_site_not_linked(built: BuildResult, phase1_store: Path) -> None:
    site = built.site_dir
    html = (site / "runs" / "index.html").read_text(encoding="utf-8")
    links = set(re.findall(r'<a href="(files/[^"]+)">', html))
    assert len(links) >= 63 * 2 + 1  # run.json and the raw record of each run, and the shared source
    for link in links:
        copy = site / "runs" / link
        original = phase1_store / link.removeprefix("files/")
        assert copy.read_bytes() == original.read_bytes(), link
        assert not copy.samefile(original)  # the site never shares a file with the run store
    assert not (site / ".sparkreport-run-files.json").exists()


def test_the_theme_loader_gives_mkdocs_the_theme_files_the_full_listing_gives(tmp_path: Path) -> None:
    """ThemeLoader lists Material's files without walking its dot-folders (``.icons``: ~14 000
    files); MkDocs adds exactly the files it adds from Jinja's full listing, in the same order."""
    import jinja2
    from mkdocs.config import load_config
    from mkdocs.structure.files import Files

    from sparkreport.site.mkdocs_site import ThemeLoader

    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text("site_name: x\ntheme:\n  name: material\n", encoding="utf-8")
    config = load_config(config_file=str(tmp_path / "mkdocs.yml"))
    listed = []
    for loader in (None, ThemeLoader):
        env = config.theme.get_env()
        assert type(env.loader) is jinja2.FileSystemLoader
        if loader is not None:
            env.loader = loader(env.loader.searchpath, followlinks=env.loader.followlinks)
        files = Files([])
        files.add_files_from_theme(env, config)
        listed.append([(file.src_uri, file.abs_src_path) for file in files])
    assert listed[0] == listed[1]
    assert any(uri.startswith("assets/") for uri, _path in listed[0])
    full = jinja2.FileSystemLoader(config.theme.dirs).list_templates()
    assert any("/." in f"/{name}" for name in full)  # the full listing walks the dot-folders
    assert not any("/." in f"/{name}" for name in ThemeLoader(config.theme.dirs).list_templates())
