"""Issue 16: a rebuild converts only the pages whose Markdown changed and links the rest of the
previous site — and the site it publishes equals a full build of the same sources, byte for byte
(the search index too), without ever writing into the previous (live) site."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from blog_project import blog_project
from click.testing import CliRunner
from template_override import override_template

from sparkreport.cli import main
from sparkreport.render import RenderOptions
from sparkreport.site import BuildResult, build, search_pieces

POST = "---\ndate: 2026-02-03\ncategories: [Notes]\n---\n\n# Fish & chips\n\nText about fish.\n"


@pytest.fixture
def project(tmp_path: Path, published_store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # the sitemap's dates: equal across builds
    return blog_project(tmp_path / "project", published_store, ("fish.md", POST))


def options(root: Path) -> RenderOptions:
    return RenderOptions(runs_dir=root / "runs", project_root=root)


def contents(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def digests(site: Path) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in contents(site).items()}


def assert_equals_a_full_build(root: Path, result: BuildResult, tmp_path: Path) -> None:
    """The incremental site equals a full build of the same sources into another folder (whose
    generated config differs only in its site_dir)."""
    full = build(options(root), tmp_path / "full-site", full=True)
    assert full.reused == 0
    mine, theirs = contents(result.site_dir), contents(full.site_dir)
    assert sorted(mine) == sorted(theirs)
    different = [name for name in mine if mine[name] != theirs[name]]
    assert different == []


def keep_a_copy(site: Path, into: Path) -> dict[str, str]:
    """Hard links to every file of the live site, and their digests: a build that wrote into a
    file of the live site would change what these links read."""
    shutil.copytree(site, into, copy_function=os.link)
    return digests(into)


def relabel_a_run(root: Path) -> None:
    """One run of the store changed (a label added): the pages that read it change."""
    path = min((root / "runs").glob("*/*/run.json"))
    data = json.loads(path.read_text(encoding="utf-8"))
    data["labels"]["note"] = "rerun"
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def test_a_post_edit_converts_the_blog_and_reuses_the_rest(project: Path, tmp_path: Path) -> None:
    first = build(options(project), project / "site")
    assert first.reused == 0 and first.converted > 10
    before = keep_a_copy(project / "site", tmp_path / "before")
    post = project / "docs" / "blog" / "posts" / "fish.md"
    post.write_text(POST + "\nOne more sentence about chips.\n", encoding="utf-8")

    second = build(options(project), project / "site")

    # The blog is converted whole (its index shows excerpts); every other page is reused, except
    # the pages whose footer names the project's inputs (home, methodology, downloads).
    assert 0 < second.converted < 12 and second.reused > 10
    assert any("One more sentence about chips." in page.read_text(encoding="utf-8")
               for page in (project / "site" / "blog").rglob("index.html"))
    assert digests(tmp_path / "before") == before  # nothing was written into the previous site
    assert_equals_a_full_build(project, second, tmp_path)


BOUND = POST + '\nThe KV cache holds {{ value("kv_cache_gib", model="qwen72b", environment="container") }}.\n'


def loads_counted(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The run stores ``load_dataset`` reads from now on (the render calls it through its module)."""
    from sparkreport import dataset

    loaded: list[Path] = []
    load = dataset.load_dataset
    monkeypatch.setattr(dataset, "load_dataset", lambda runs, **kw: loaded.append(runs) or load(runs, **kw))
    return loaded


def test_a_post_edit_outside_its_bindings_keeps_their_results_and_loads_no_dataset(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only hand-written docs changed since the last build (its data key is this one's): every
    generated page is kept and the posts are filled from what their bindings gave then — the
    dataset is not loaded —, and the site equals a full build's. A new binding, or a binding
    edited, takes the full render (the dataset is loaded), whose results are kept for the next."""
    post = project / "docs" / "blog" / "posts" / "fish.md"
    post.write_text(BOUND, encoding="utf-8")
    build(options(project), project / "site")
    loaded = loads_counted(monkeypatch)
    post.write_text(BOUND + "\nOne more sentence about chips.\n", encoding="utf-8")

    second = build(options(project), project / "site")

    assert loaded == []
    assert second.render.data_kept and second.render.rendered_pages == []
    assert len(second.render.skipped_pages) == len(second.render.pages) > 10
    # the runs' files carried over whole from the live site: none published or scanned again
    assert second.published["copied"] == second.published["linked"] == 0 and second.published["kept"] > 10
    page = next(page.read_text(encoding="utf-8") for page in (project / "site" / "blog").rglob("index.html")
                if "One more sentence about chips." in page.read_text(encoding="utf-8"))
    assert "The KV cache holds" in page and "{{" not in page
    assert_equals_a_full_build(project, second, tmp_path)

    loaded.clear()
    post.write_text(BOUND.replace('environment="container"', 'environment="container", digits=2'), encoding="utf-8")
    build(options(project), project / "site")
    assert loaded == [project / "runs"]  # the binding changed: the full render
    loaded.clear()
    (project / "docs" / "notes.md").write_text("# Notes\n\nChanged.\n", encoding="utf-8")
    third = build(options(project), project / "site")
    assert loaded == []  # its results were kept in turn
    assert_equals_a_full_build(project, third, tmp_path / "again")


def test_in_git_a_post_edit_keeps_the_data_and_the_footers_print_the_new_commit(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Home, Methodology, Downloads and the posts print the project's commit, which is not part
    of the data: the first edit of a committed tree (its commit becomes ``…+dirty``), a second
    edit, and a new commit of the post keep the data, and each time those footers print the
    commit of the build — the site equals a full build's. A new run is built in full."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=project,
                              check=True, capture_output=True, text=True).stdout.strip()

    (project / ".gitignore").write_text("build/\nsite/\n", encoding="utf-8")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "first")
    post = project / "docs" / "blog" / "posts" / "fish.md"
    build(options(project), project / "site")
    loaded = loads_counted(monkeypatch)
    for text, commit in ((POST + "\nEdited.\n", False), (POST + "\nEdited again.\n", False),
                         (POST + "\nCommitted.\n", True)):
        loaded.clear()
        post.write_text(text, encoding="utf-8")
        if commit:
            git("commit", "-qam", "the post")
        result = build(options(project), project / "site")
        assert loaded == [] and result.render.data_kept
        shown = git("rev-parse", "--short=12", "HEAD") + ("" if commit else "+dirty")
        for page in ("index.md", "methodology/index.md", "downloads/index.md", "blog/posts/fish.md"):
            footer = (project / "build" / "docs" / page).read_text(encoding="utf-8").rsplit("\n", 2)[-2]
            assert f"project commit <code>{shown}</code>" in footer, page
    assert_equals_a_full_build(project, result, tmp_path)  # (which leaves the build's state for its own site)
    runs = min((project / "runs").glob("*/*/run.json"))
    data = json.loads(runs.read_text(encoding="utf-8"))
    data["labels"]["note"] = "rerun"
    runs.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    git("commit", "-qam", "a run")
    loaded.clear()
    assert not build(options(project), project / "site").render.data_kept and loaded == [project / "runs"]


def test_a_commit_printed_outside_the_footer_renders_the_pages_in_full(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A template override that prints the commit its own way: a new commit cannot be put in
    by replacing the footer's, so the data is loaded and the pages rendered again."""
    import subprocess

    from sparkreport.render.core import restamped

    assert restamped("a <code>abc</code> b", "abc", "def") == "a <code>def</code> b"
    assert restamped("commit abc, <code>abc</code>", "abc", "def") is None
    assert restamped("no commit here", "abc", "abc+dirty") == "no commit here"

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=project,
                       check=True, capture_output=True)

    override_template(project, "home.md", "Built at commit {{ provenance.git_commit }}.")
    (project / ".gitignore").write_text("build/\nsite/\n", encoding="utf-8")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "first")
    build(options(project), project / "site")
    loaded = loads_counted(monkeypatch)
    post = project / "docs" / "blog" / "posts" / "fish.md"
    post.write_text(POST + "\nEdited.\n", encoding="utf-8")
    git("commit", "-qam", "the post")
    result = build(options(project), project / "site")
    assert loaded == [project / "runs"] and not result.render.data_kept
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=project, check=True,
                            capture_output=True, text=True).stdout.strip()
    assert f"Built at commit {commit}." in (project / "build" / "docs" / "index.md").read_text(encoding="utf-8")


def test_a_post_edit_that_breaks_a_binding_is_refused_as_in_a_full_render(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A post whose binding now names a model no run has, or is not closed, after a build that
    kept its results: the same one-line error as the first build of that post would give."""
    from sparkreport.errors import SparkreportError

    post = project / "docs" / "blog" / "posts" / "fish.md"
    post.write_text(BOUND, encoding="utf-8")
    build(options(project), project / "site")
    for broken in (BOUND.replace('model="qwen72b"', 'model="no-such-model"'), BOUND.replace("}}.", "}.")):
        post.write_text(broken, encoding="utf-8")
        with pytest.raises(SparkreportError) as kept:
            build(options(project), project / "site")
        shutil.rmtree(project / "build")
        with pytest.raises(SparkreportError) as fresh:
            build(options(project), project / "site")
        assert str(kept.value) == str(fresh.value) and "fish.md:" in str(kept.value)
        post.write_text(BOUND, encoding="utf-8")
        build(options(project), project / "site")


def test_a_changed_run_converts_the_pages_that_read_it(project: Path, tmp_path: Path) -> None:
    build(options(project), project / "site")
    before = keep_a_copy(project / "site", tmp_path / "before")
    relabel_a_run(project)

    kept = project / "build" / "cache" / search_pieces.PIECES_FILE
    assert "" in search_pieces.KeptPieces(kept).pages  # Home's search pieces kept

    second = build(options(project), project / "site")

    assert second.reused > 0 and second.converted >= 8, second.converted  # enough for two workers
    assert digests(tmp_path / "before") == before
    # The converted pages' search entries took the pieces kept by the last build (shown by the
    # next test); a full build, with every piece parsed now, writes the same site.
    kept.unlink()
    assert_equals_a_full_build(project, second, tmp_path)
    # The search index holds every page once, in the order a full build writes it.
    index = json.loads((project / "site" / "search" / "search_index.json").read_text(encoding="utf-8"))
    pages = [doc["location"] for doc in index["docs"] if "#" not in doc["location"]]
    assert len(pages) == len(set(pages)) and "notes/" in pages


def test_a_rebuild_takes_the_search_pieces_an_earlier_build_kept(project: Path, tmp_path: Path) -> None:
    """The conversion workers take a kept piece instead of parsing it: every kept piece's text
    made "kept-piece" shows in the next build's search index, for pages that build converts."""
    import pickle

    build(options(project), project / "site")
    path = project / "build" / "cache" / search_pieces.PIECES_FILE
    kept = search_pieces.KeptPieces(path)
    assert kept.pieces
    marked = {}
    for key, frozen in kept.pieces.items():
        sections, current = pickle.loads(frozen)  # noqa: S301
        for section in sections:
            section.text = ["kept-piece"]
        marked[key] = pickle.dumps((sections, current))
    kept.pieces = {}  # (so that save writes the marked ones)
    kept.save({url: {key: marked[key] for key in keys} for url, keys in kept.pages.items()}, set(kept.pages))
    relabel_a_run(project)

    second = build(options(project), project / "site")

    assert second.converted >= 8
    index = json.loads((project / "site" / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert any(doc["text"] == "kept-piece" for doc in index["docs"])


def test_the_docs_folders_assets_are_linked_not_copied_and_a_new_render_never_writes_through_them(
        project: Path, tmp_path: Path) -> None:
    """A chart's spec or a download is the generated docs folder's file, hard-linked into the
    site (not copied): the next render moves its new files over by rename, so the published
    file keeps what it held until the site is swapped."""
    first = build(options(project), project / "site")
    docs = first.render.docs_dir
    specs = sorted(docs.rglob("*.vl.json"))
    assert specs
    for spec in specs:
        published = project / "site" / spec.relative_to(docs)
        assert os.path.samefile(published, spec), spec
    kept = keep_a_copy(project / "site", tmp_path / "before")
    relabel_a_run(project)

    second = build(options(project), project / "site")

    assert digests(tmp_path / "before") == kept  # nothing written through a link of the old site
    assert_equals_a_full_build(project, second, tmp_path)
    for spec in sorted(docs.rglob("*.vl.json")):
        assert os.path.samefile(project / "site" / spec.relative_to(docs), spec), spec


def test_a_changed_shell_converts_every_page(project: Path, tmp_path: Path) -> None:
    build(options(project), project / "site")
    config = project / "mkdocs.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("site_name:", "site_name: Renamed #", 1),
                      encoding="utf-8")
    second = build(options(project), project / "site")
    assert second.reused == 0
    assert "Renamed" in (project / "site" / "notes" / "index.html").read_text(encoding="utf-8")
    assert_equals_a_full_build(project, second, tmp_path)


def test_a_new_page_converts_every_page(project: Path, tmp_path: Path) -> None:
    build(options(project), project / "site")
    (project / "docs" / "more.md").write_text("# More\n\nAnother page, in the nav of every page.\n", encoding="utf-8")
    second = build(options(project), project / "site")
    assert second.reused == 0
    assert_equals_a_full_build(project, second, tmp_path)


def test_unknown_plugins_and_hooks_are_never_reused(project: Path, tmp_path: Path) -> None:
    hook = project / "hook.py"
    hook.write_text("def on_post_build(config):\n    pass\n", encoding="utf-8")
    config = project / "mkdocs.yml"
    config.write_text(config.read_text(encoding="utf-8") + "\nhooks:\n  - hook.py\n", encoding="utf-8")
    build(options(project), project / "site")
    (project / "docs" / "notes.md").write_text("# Notes\n\nChanged.\n", encoding="utf-8")
    second = build(options(project), project / "site")
    assert second.reused == 0


def test_cli_says_what_it_converted_and_full_reuses_nothing(project: Path) -> None:
    runner = CliRunner()
    args = ["build", "--runs-dir", str(project / "runs")]
    cwd = Path.cwd()
    os.chdir(project)
    try:
        assert runner.invoke(main, args).exit_code == 0
        (project / "docs" / "notes.md").write_text("# Notes\n\nChanged.\n", encoding="utf-8")
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
        assert " converted, " in result.output and " reused → " in result.output
        assert " charts (only docs/ changed: the data kept); " in result.output
        (project / "docs" / "notes.md").write_text("# Notes\n\nChanged again.\n", encoding="utf-8")
        result = runner.invoke(main, [*args, "--full"])
        assert result.exit_code == 0, result.output
        assert "reused" not in result.output
    finally:
        os.chdir(cwd)


def test_a_session_render_after_a_post_edit_keeps_every_generated_page(project: Path, tmp_path: Path) -> None:
    """``serve``'s re-render after an edit of hand-written docs alone fills in the posts'
    bindings with the data already loaded and keeps the generated pages: the docs folder equals
    a one-shot render's."""
    from sparkreport.render import RenderSession, render

    session = RenderSession(options(project))
    session.render()
    post = project / "docs" / "blog" / "posts" / "fish.md"
    post.write_text(POST + '\nThe KV cache holds {{ value("kv_cache_gib", model="qwen72b", environment="container") }}.\n',
                    encoding="utf-8")

    result = session.render([post])

    assert result.rendered_pages == [] and len(result.skipped_pages) == len(result.pages) > 10
    assert result.changed_files == 1
    again = render(RenderOptions(runs_dir=project / "runs", project_root=project, docs_dir=tmp_path / "again" / "docs"))
    mine, theirs = contents(result.docs_dir), contents(again.docs_dir)
    assert sorted(mine) == sorted(theirs)
    assert [name for name in mine if mine[name] != theirs[name]] == []
    assert "The KV cache holds" in mine["blog/posts/fish.md"].decode()
    # Anything else changed (a template, the store, the config) takes the full path again.
    (project / "docs" / "notes.md").write_text("# Notes\n\nChanged.\n", encoding="utf-8")
    assert session.render([project / "docs" / "notes.md", project / "sparkreport.yml"]).changed_files >= 1


def test_a_page_changed_in_the_live_site_is_built_again(project: Path, tmp_path: Path) -> None:
    """A file of the published site changed since the build wrote it (by hand, by another tool)
    is not reused: only files exactly as the last build wrote them are linked."""
    build(options(project), project / "site")
    page = project / "site" / "notes" / "index.html"
    page.write_text(page.read_text(encoding="utf-8") + "<!-- edited in the site -->", encoding="utf-8")
    post = project / "docs" / "blog" / "posts" / "fish.md"
    post.write_text(POST + "\nA change elsewhere.\n", encoding="utf-8")

    second = build(options(project), project / "site")

    assert second.reused > 0
    assert "edited in the site" not in page.read_text(encoding="utf-8")
    assert_equals_a_full_build(project, second, tmp_path)


def test_the_404_page_is_linked_while_the_shell_is_the_same_and_built_again_when_it_is_not(
        project: Path, tmp_path: Path) -> None:
    """The theme's 404 page is the shell's alone (the nav, the frame): a build on the same shell
    links the last one as it was written, a changed one in the live site is built again, and a
    build on another shell renders it anew — each time what a full build writes."""
    build(options(project), project / "site")
    missing = project / "site" / "404.html"
    first = missing.stat().st_ino
    relabel_a_run(project)

    second = build(options(project), project / "site")

    assert second.reused > 0
    assert missing.stat().st_ino == first  # linked, not rendered again
    assert_equals_a_full_build(project, second, tmp_path / "one")

    missing.write_text(missing.read_text(encoding="utf-8") + "<!-- edited in the site -->", encoding="utf-8")
    relabel_a_run(project)
    third = build(options(project), project / "site")
    assert "edited in the site" not in missing.read_text(encoding="utf-8")
    assert_equals_a_full_build(project, third, tmp_path / "two")

    config = project / "mkdocs.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("site_name: ", "site_name: Renamed "),
                      encoding="utf-8")
    fourth = build(options(project), project / "site")
    assert fourth.reused == 0
    assert "Renamed" in missing.read_text(encoding="utf-8")
    assert_equals_a_full_build(project, fourth, tmp_path / "three")


def _fresh_checkout(folder: Path) -> None:
    """As `git checkout` on a new runner leaves a folder: the same bytes in new files."""
    shutil.copytree(folder, folder.with_name(folder.name + ".new"), copy_function=shutil.copyfile)
    shutil.rmtree(folder)
    folder.with_name(folder.name + ".new").rename(folder)


def _restored_from_cache(folder: Path) -> None:
    """As actions/cache restores a folder: through `tar --posix` (mtimes kept to the
    nanosecond, every inode new)."""
    import subprocess

    archive = folder.with_name(folder.name + ".tar")
    subprocess.run(["tar", "--posix", "-cf", str(archive), "-C", str(folder.parent), folder.name], check=True)
    shutil.rmtree(folder)
    subprocess.run(["tar", "-xf", str(archive), "-C", str(folder.parent)], check=True)
    archive.unlink()


def _on_a_ci_runner_after_one_changed_run(project: Path) -> BuildResult:
    """Build ``project``, then leave it as a CI job finds it after a push that changed one
    run.json: runs/ and docs/ freshly checked out, build/ and site/ restored from the Actions
    cache. Returns the first build."""
    first = build(options(project), project / "site")
    path = min((project / "runs").glob("*/*/run.json"))
    data = json.loads(path.read_text(encoding="utf-8"))
    data["labels"]["note"] = "rerun"
    for folder in ("runs", "docs"):
        _fresh_checkout(project / folder)
    for folder in ("build", "site"):
        _restored_from_cache(project / folder)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return first


def test_a_ci_runner_with_the_caches_restored_rebuilds_only_what_changed(project: Path, tmp_path: Path) -> None:
    """The workflow's case: a fresh checkout (runs/ and docs/ in new files, new mtimes), build/
    and site/ restored from the Actions cache, one run.json changed. Only that file is copied,
    the rest of the run files carried over, the pages that did not change reused —
    and the site equals a full build."""
    first = _on_a_ci_runner_after_one_changed_run(project)

    second = build(options(project), project / "site")

    run_files = [p for p in (project / "site" / "runs" / "files").rglob("*") if p.is_file()]
    assert first.published["copied"] == len(run_files) > 1
    # Only the changed run.json is written (its run's raw files are the same bytes).
    assert (second.published["copied"], second.published["kept"]) == (1, len(run_files) - 1)
    assert second.reused > 0 and second.converted > 0  # as many as the same change converts in place
    assert_equals_a_full_build(project, second, tmp_path)


def test_on_a_ci_runner_the_publisher_stats_no_store_file_the_walk_did(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh checkout gives every store folder a new digest, so no entry of the published
    files' record is taken as it is: each file's stat comes from the walk that keyed the build,
    whose process publishes them, not from a second lstat of the store (20 000 at 10 000 runs).
    The restored run-files folder is listed once, each of its folders stat-ed once. The site
    equals a full build."""
    from sparkreport.site import run_files

    _on_a_ci_runner_after_one_changed_run(project)
    # (logged to files: the walk's process publishes, forked from this one)
    store_stats, stated = tmp_path / "store-stats.txt", tmp_path / "checked-lstats.txt"
    store_stat, lstat, checked_folders = run_files.store_stat, os.lstat, run_files.checked_folders

    def logged(log: Path, text: str) -> None:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(f"{text}\n")

    def counted(*arguments: Any) -> Any:  # what the check of the restored run-files folder lstat-s
        monkeypatch.setattr(os, "lstat", lambda path, *rest: logged(stated, os.fspath(path)) or lstat(path, *rest))
        try:
            return checked_folders(*arguments)
        finally:
            monkeypatch.setattr(os, "lstat", lstat)

    monkeypatch.setattr(run_files, "store_stat",
                        lambda root, source, *rest: logged(store_stats, source) or store_stat(root, source, *rest))
    monkeypatch.setattr(run_files, "checked_folders", counted)
    live = project / "site" / "runs" / "files"  # (restored: every folder's ctime is new)
    restored = sorted([os.fspath(live), *(os.fspath(p) for p in live.rglob("*") if p.is_dir())])

    second = build(options(project), project / "site")

    assert not store_stats.exists()
    assert second.published["copied"] == 1 and second.published["kept"] > 1
    assert sorted(stated.read_text(encoding="utf-8").splitlines()) == restored  # each of its folders, once
    monkeypatch.setattr(run_files, "store_stat", store_stat)
    monkeypatch.setattr(run_files, "checked_folders", checked_folders)
    assert_equals_a_full_build(project, second, tmp_path)


def test_in_git_a_fresh_checkout_of_the_same_commit_reads_no_run_file(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI job after a push that changed nothing the site reads: the checkout gives every file a
    new mtime and inode, build/ and site/ come back from the Actions cache. Git's index says
    which files are the bytes the last build hashed, so the build is kept without reading a run
    file (no content hash, no name index entry read again)."""
    import subprocess

    from sparkreport import cache, early

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=project,
                       check=True, capture_output=True)

    for module in (cache, early):
        monkeypatch.setattr(module, "GIT_AFTER", 4)  # a small store: git is asked from 64 files on
    (project / ".gitignore").write_text("build/\nsite/\n", encoding="utf-8")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "first")
    build(options(project), project / "site")
    for folder in ("runs", "docs"):
        shutil.rmtree(project / folder)
        git("checkout", "--", folder)
    for folder in ("build", "site"):
        _restored_from_cache(project / folder)
    monkeypatch.setenv("SPARKREPORT_JOBS", "1")  # one process: its reads are seen here
    opened: list[str] = []

    def spy(path: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return open(path, *args, **kwargs)  # noqa: SIM115 (the caller's own with-block closes it)

    for module in (cache, early):
        monkeypatch.setattr(module, "open", spy, raising=False)

    second = build(options(project), project / "site")

    assert second.cached
    assert [path for path in opened if str(project / "runs") in path] == []


def test_a_project_put_in_git_after_its_last_build_renders_in_full(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The footers printed no commit: they cannot be restamped with one, so the first build in
    git loads the data and prints it."""
    import subprocess

    build(options(project), project / "site")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "first"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=project,
                       check=True, capture_output=True)
    loaded = loads_counted(monkeypatch)
    result = build(options(project), project / "site")
    assert loaded == [project / "runs"] and not result.render.data_kept
    assert "project commit <code>" in (project / "build" / "docs" / "index.md").read_text(encoding="utf-8")
