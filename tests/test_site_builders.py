"""The builder setting: MkDocs and Zensical build the same site from the same rendered pages.

Pages, the runs' files, the blog feed and inert titles must not depend on the builder; only the
theme's own assets and the search index's file name do (``search/search_index.json`` for MkDocs,
``search.json`` for Zensical).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.config import BUILDER_NAMES, load_config
from sparkreport.errors import BuildError, ConfigError
from sparkreport.render import RenderOptions
from sparkreport.site import BuildResult, build
from sparkreport.site.builders import BUILDERS, zensical_issues

REPO = Path(__file__).resolve().parents[1]
POST = "---\ndate: 2026-02-03\ncategories: [Notes]\n---\n\n# Fish & chips < 3\n\nText about <b>fish</b>.\n"
#: Theme files each builder ships differently (bundles, search), left out of the comparison.
THEME_PREFIXES = ("assets/javascripts/", "assets/stylesheets/", "assets/images/", "search/", "search.json",
                  "sitemap.xml")


def test_builder_setting_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "sparkreport.yml"
    path.write_text("title: T\nbuilder: hugo\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = caught.value.format_message()
    assert "\n" not in message
    assert f"{path}:2" in message and "mkdocs, zensical" in message and "'hugo'" in message
    path.write_text("builder: zensical\n", encoding="utf-8")
    assert load_config(path).builder == "zensical"
    assert set(BUILDERS) == {"mkdocs", "zensical"}
    assert tuple(BUILDERS) == BUILDER_NAMES  # what sparkreport.yml's builder: may name


def test_zensical_issues_become_one_line_each() -> None:
    output = ("Build started\n\x1b[33mWarning:\x1b[0m page does not exist\n"
              "     \x1b[38;5;246m╭─[\x1b[0m memory/index.md:108:10 \x1b[38;5;246m]\x1b[0m\n     │\n1 issue found\n")
    assert zensical_issues(output) == ["memory/index.md:108:10: page does not exist"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, published_store: Path) -> Path:
    root = tmp_path_factory.mktemp("builders")
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    (root / "docs" / "blog" / "posts").mkdir(parents=True)
    (root / "docs" / "blog" / "index.md").write_text("# Blog\n", encoding="utf-8")
    (root / "docs" / "blog" / "posts" / "fish.md").write_text(POST, encoding="utf-8")
    shutil.copytree(published_store, root / "runs")
    return root


@pytest.fixture(scope="module")
def sites(project: Path) -> dict[str, BuildResult]:
    options = RenderOptions(runs_dir=project / "runs", project_root=project)
    return {name: build(options, project / f"site-{name}", builder=name) for name in ("mkdocs", "zensical")}


def files(site: Path) -> dict[str, Path]:
    return {p.relative_to(site).as_posix(): p for p in site.rglob("*") if p.is_file()
            and not p.relative_to(site).as_posix().startswith(THEME_PREFIXES)
            and not p.name.endswith(".map")}


def test_both_builders_publish_the_same_site(sites: dict[str, BuildResult]) -> None:
    mkdocs, zensical = (files(sites[name].site_dir) for name in ("mkdocs", "zensical"))
    assert sorted(mkdocs) == sorted(zensical)
    assert any(p.startswith("runs/files/") for p in mkdocs)
    for path in mkdocs:  # the runs' files, the downloads and the feed are byte for byte the same
        if not path.endswith((".html", ".xml.gz")):
            assert mkdocs[path].read_bytes() == zensical[path].read_bytes(), path
    assert (sites["zensical"].site_dir / "search.json").is_file()
    assert (sites["mkdocs"].site_dir / "search" / "search_index.json").is_file()
    assert sites["mkdocs"].builder == "mkdocs" and sites["zensical"].builder == "zensical"


@pytest.mark.parametrize("name", ["mkdocs", "zensical"])
def test_feed_and_titles_do_not_depend_on_the_builder(sites: dict[str, BuildResult], name: str) -> None:
    site = sites[name].site_dir
    feed = (site / "blog" / "feed.xml").read_text(encoding="utf-8")
    assert "<title>Fish &amp; chips &lt; 3</title>" in feed and "2026/02/03/" in feed
    assert "<description>Text about fish.</description>" in feed
    post = next((site / "blog" / "2026").rglob("index.html")).read_text(encoding="utf-8")
    assert "<title>Fish &amp; chips &lt; 3 - " in post
    assert "hooks" not in sites[name].config_file.read_text(encoding="utf-8")


def test_builder_flag_overrides_the_config(tmp_path: Path, project: Path) -> None:
    (project / "sparkreport.yml").write_text("builder: mkdocs\n", encoding="utf-8")
    try:
        out = CliRunner().invoke(main, ["build", "--runs-dir", str(project / "runs"), "--config",
                                        str(project / "sparkreport.yml"), "--site-dir", str(tmp_path / "s"),
                                        "--builder", "zensical"])
    finally:
        (project / "sparkreport.yml").unlink()
    assert out.exit_code == 0, out.output
    assert (tmp_path / "s" / "search.json").is_file()  # Zensical's search index
    bad = CliRunner().invoke(main, ["build", "--builder", "hugo"])
    assert bad.exit_code == 2 and "'hugo' is not one of 'mkdocs', 'zensical'" in bad.output


def test_zensical_strict_warning_is_one_line_build_error(tmp_path: Path, published_store: Path) -> None:
    project = tmp_path / "p"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "notes.md").write_text("# Notes\n\nSee [missing](nowhere.md).\n", encoding="utf-8")
    options = RenderOptions(runs_dir=published_store, project_root=project)
    with pytest.raises(BuildError) as caught:
        build(options, project / "site", builder="zensical")
    message = caught.value.format_message()
    assert "\n" not in message and "zensical build failed" in message and "notes.md" in message
    assert not (project / "site").exists()
    result = build(options, project / "site", builder="zensical", strict=False)
    assert any("notes.md" in w for w in result.warnings)


def test_titles_are_made_inert_once_and_remembered_across_builds(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A page is read for its title only when it changed since a build checked it (the memo in
    the build cache); a damaged memo only costs reading every page again."""
    from sparkreport.site import titles

    docs = tmp_path / "docs"
    (docs / "a").mkdir(parents=True)
    (docs / "a" / "index.md").write_text("# Model <b>x</b>\n\ntext\n", encoding="utf-8")
    (docs / "plain.md").write_text("# Plain\n", encoding="utf-8")
    memo = tmp_path / "cache" / "titles.json"
    memo.parent.mkdir()
    assert titles.make_titles_inert(docs, [], memo) == 1
    assert "title: Model &lt;b&gt;x&lt;/b&gt;" in (docs / "a" / "index.md").read_text(encoding="utf-8")
    read: list[str] = []
    original = Path.read_text

    def counting(self: Path, *args: object, **kwargs: object) -> str:
        if self.suffix == ".md":
            read.append(self.name)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", counting)
    monkeypatch.setattr(titles, "_CHECKED", {})  # a new process
    assert titles.make_titles_inert(docs, [], memo) == 0 and read == []
    (docs / "plain.md").write_text("# Plain & simple\n", encoding="utf-8")
    monkeypatch.setattr(titles, "_CHECKED", {})
    assert titles.make_titles_inert(docs, [], memo) == 1 and read == ["plain.md"]
    memo.write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(titles, "_CHECKED", {})
    read.clear()
    assert titles.make_titles_inert(docs, [], memo) == 0 and sorted(read) == ["index.md", "plain.md"]


def test_the_standby_builder_warms_up_without_running_a_projects_hooks(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """MkDocs' standby process loads the last build's generated config to import its plugins
    ahead (mkdocs_site.warm_up), but not when it or the project's mkdocs.yml it inherits names
    hooks: a hook's module code runs once a build, when MkDocs loads the config to build."""
    from sparkreport.site import mkdocs_site
    from sparkreport.site.mkdocs_site import GENERATED_HEADER, warm_up

    (tmp_path / "hook.py").write_text(
        "from pathlib import Path\nPath(__file__).with_name('ran').open('a').write('x')\n", encoding="utf-8")
    # (MkDocs finds a hook beside the config it loads: the generated one, in build/)
    (tmp_path / "mkdocs.yml").write_text("site_name: x\nhooks:\n  - ../hook.py\n", encoding="utf-8")
    generated = tmp_path / "build" / "mkdocs.yml"
    generated.parent.mkdir()
    generated.write_text(f"{GENERATED_HEADER}\nINHERIT: ../mkdocs.yml\ndocs_dir: docs\n", encoding="utf-8")
    (generated.parent / "docs").mkdir()
    warm_up(generated)
    assert not (tmp_path / "ran").exists()
    monkeypatch.setattr(mkdocs_site, "_has_hooks", lambda _config: False)
    warm_up(generated)
    assert (tmp_path / "ran").exists()  # what the guard keeps from running
    monkeypatch.undo()
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n", encoding="utf-8")
    warm_up(generated)  # loads it: no hook, nothing else to see but that it does not fail
