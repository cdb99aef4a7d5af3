"""``sparkreport serve`` for real: a server in a subprocess on a small project, its pages polled
over HTTP while the sources change (item 4 of issue 16).

Waits are bounded polls of the served HTML (the render and the rebuild take seconds on a busy
machine); nothing sleeps and then asserts. The watcher's pieces (what counts as a source, which
page an error concerns, the debounce) are tested directly below the server tests.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import sparkreport
from sparkreport.early import check_writable
from sparkreport.site.serve import Debouncer, ErrorPages, Sources, Watcher, error_markdown, error_source, front_matter

POST = Path("docs/blog/posts/first-results.md")
POST_URL = "blog/2026/01/01/first-results/"
#: A render plus a rebuild, on two shared cores: generous, and only ever reached on failure.
WAIT_S = 120.0

NEW_RUNS = """\
sparkreport: published-summary
campaign: example
source: "test_serve (made-up figures)"
hardware: {gpu_name: NVIDIA GB10, memory_pool_gib: 119.64, unified_memory: true}
software: {engine: trtllm}
environments:
  native: {kind: native}
  container: {kind: container, details: {runtime: docker}}
models:
  medium: {display_name: Servetest medium model}
arms:
  - model: medium
    environment: native
    n: 5
    metrics:
      output_throughput_tok_s: {mean: 101.0, sd: 1.0}
  - model: medium
    environment: container
    n: 5
    metrics:
      output_throughput_tok_s: {mean: 99.0, sd: 1.0}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sparkreport", *args], cwd=project, env=cli_env(),
                          capture_output=True, text=True, timeout=300, check=True)


def cli_env() -> dict[str, str]:
    """This checkout's package first on the path (the tests may run from a worktree)."""
    env = dict(os.environ)
    here = str(Path(sparkreport.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([here, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    return env


class Server:
    """``sparkreport serve`` in a subprocess; its terminal output goes to a file."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.url = f"http://127.0.0.1:{free_port()}/"
        self.log = project.parent / "serve.log"
        self._out = self.log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sparkreport", "serve", "--dev-addr", self.url[7:-1]],
            cwd=project, env=cli_env(), stdout=self._out, stderr=subprocess.STDOUT)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def get(self, path: str) -> str | None:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as response:
                return str(response.read().decode("utf-8", errors="replace"))
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None

    def wait_for(self, path: str, check: Callable[[str], bool], what: str) -> str:
        """Poll ``path`` until ``check(html)`` holds (bounded by WAIT_S); returns the page."""
        deadline = time.monotonic() + WAIT_S
        page = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"serve exited ({self.process.returncode}) waiting for {what}:\n{self.output()[-3000:]}")
            page = self.get(path)
            if page is not None and check(page):
                return page
            time.sleep(0.2)
        pytest.fail(f"no {what} at /{path} after {WAIT_S:.0f} s:\n{self.output()[-3000:]}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._out.close()
        return self.process.returncode


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh ``sparkreport init`` project whose example post is published (not a draft)."""
    root = tmp_path_factory.mktemp("serve") / "project"
    run_cli(root.parent, "init", str(root))
    edit(root / POST, "draft: true\n", "")
    return root


@pytest.fixture(scope="module")
def server(project: Path) -> Iterator[Server]:
    served = Server(project)
    try:
        served.wait_for(POST_URL, lambda page: "First results" in page, "first build")
        yield served
    finally:
        code = served.stop()
        output = served.output()
        assert code in (0, 130), output[-3000:]
        assert "Traceback" not in output, output


def test_a_post_edit_shows_without_a_restart(project: Path, server: Server) -> None:
    edit(project / POST, "This post is an example", "This post is an example (edited: kiwi-4471)")
    server.wait_for(POST_URL, lambda page: "kiwi-4471" in page, "the edited text")


def test_a_binding_error_is_a_page_and_a_line_and_the_fix_brings_the_post_back(project: Path, server: Server) -> None:
    edit(project / POST, 'value("output_throughput_tok_s", model="small"', 'value("output_throughput_tok_s", model="tiny"')
    page = server.wait_for(POST_URL, lambda page: "Render error" in page, "the error page")
    assert "first-results.md:" in page and "tiny" in page
    errors = [line for line in server.output().splitlines() if line.startswith("error: ")]
    assert errors and "first-results.md:" in errors[-1] and "tiny" in errors[-1]
    # The other pages are served as they were.
    assert "Render error" not in (server.get("") or "Render error")

    edit(project / POST, 'model="tiny"', 'model="small"')
    page = server.wait_for(POST_URL, lambda page: "Render error" not in page and "kiwi-4471" in page, "the post back")
    assert "fixed: the pages render again" in server.output()


def test_a_bad_sparkreport_yml_shows_on_the_home_page_until_fixed(project: Path, server: Server) -> None:
    config = project / "sparkreport.yml"
    good = config.read_text(encoding="utf-8")
    config.write_text(good + "analysis: [unclosed\n", encoding="utf-8")
    page = server.wait_for("", lambda page: "Render error" in page, "the error on the home page")
    assert "sparkreport.yml" in page
    config.write_text(good.replace("title: Benchmark results", "title: Served title mango-82"), encoding="utf-8")
    server.wait_for("", lambda page: "Served title mango-82" in page and "Render error" not in page,
                    "the new title on the home page")


def test_a_new_run_shows_on_the_results_page(project: Path, server: Server, tmp_path: Path) -> None:
    source = tmp_path / "medium.yml"
    source.write_text(NEW_RUNS, encoding="utf-8")
    run_cli(project, "ingest", str(source))
    server.wait_for("results/", lambda page: "Servetest medium model" in page, "the new model on Results")
    # A new page changes the nav: every page is rebuilt, so an untouched one lists it too.
    server.wait_for("about/", lambda page: "results/medium/" in page, "the new page in the nav of About")


# The pieces, without a server.


def test_sources_cover_the_inputs_and_nothing_render_or_editors_leave(tmp_path: Path) -> None:
    sources = Sources(folders=(tmp_path / "docs", tmp_path / "runs", tmp_path / "templates"),
                      files=(tmp_path / "sparkreport.yml", tmp_path / "mkdocs.yml"))
    for covered in ("docs/blog/posts/a.md", "runs/c/r1/run.json", "templates/home.md", "sparkreport.yml",
                    "mkdocs.yml", "runs/c/r2"):
        assert sources.covers(tmp_path / covered), covered
    for ignored in ("build/docs/index.md", "runs/.sparkreport.lock", "runs/c/.r3.123.tmp", "docs/.a.md.swp",
                    "docs/a.md~", "site/index.html", "README.md", "docs/.git/x", "runs/#2285602"):
        assert not sources.covers(tmp_path / ignored), ignored


def test_a_writability_probe_of_the_store_is_not_a_change(tmp_path: Path) -> None:
    # ingest checks that the store can be written with an unnamed temporary file before it reads
    # its input: inotify reports it closed, as "#<inode>". Seen as a change, it started a
    # re-render before the run was written, and another once it was (two renders a run).
    (tmp_path / "runs").mkdir()
    seen: list[Path] = []
    watcher = Watcher(Sources(folders=(tmp_path / "runs",), files=()), seen.append)
    watcher.start()
    try:
        check_writable(tmp_path / "runs", "--runs-dir")
        (tmp_path / "runs/marker").write_text("x", encoding="utf-8")  # a real change, seen after the probe's
        deadline = time.monotonic() + 10
        while tmp_path / "runs/marker" not in seen and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        watcher.stop()
    assert set(seen) == {tmp_path / "runs/marker"}, seen


def test_reads_are_not_changes(tmp_path: Path) -> None:
    seen: list[Path] = []
    watcher = Watcher(Sources(folders=(tmp_path / "runs",), files=()), seen.append)
    watcher.event("opened", False, str(tmp_path / "runs/c/r/run.json"))
    watcher.event("closed_no_write", False, str(tmp_path / "runs/c/r/run.json"))
    watcher.event("moved", True, str(tmp_path / "runs/c/.r.1.tmp"), str(tmp_path / "runs/c/r"))
    assert seen == [tmp_path / "runs/c/r"]


def test_an_error_names_its_page_or_else_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs/blog/posts").mkdir(parents=True)
    post = tmp_path / "docs/blog/posts/p.md"
    post.write_text("---\ndate: 2026-01-01\n---\n\n# P\n\n{{ value('x') }}\n", encoding="utf-8")
    assert error_source("docs/blog/posts/p.md:7: {{ value('x') }}: no metric 'x'", tmp_path / "docs") == post
    assert error_source(f"{post}:7: …", tmp_path / "docs") == post
    assert error_source("sparkreport.yml:3: is not valid YAML", tmp_path / "docs") is None
    assert error_source("templates/home.md:3: template error", tmp_path / "docs") is None

    docs_dir = tmp_path / "build/docs"
    (docs_dir / "blog/posts").mkdir(parents=True)
    (docs_dir / "index.md").write_text("# Home\n", encoding="utf-8")
    (docs_dir / "blog/posts/p.md").write_text("rendered post\n", encoding="utf-8")
    pages = ErrorPages(tmp_path, docs_dir)
    shown = pages.show("docs/blog/posts/p.md:7: {{ value('x') }}: no metric 'x' — metrics here: <a>")
    assert shown == docs_dir / "blog/posts/p.md"
    text = shown.read_text(encoding="utf-8")
    assert text.startswith("---\ndate: 2026-01-01\n---\n") and "&lt;a&gt;" in text and "p.md:7" in text
    assert pages.show("sparkreport.yml: bad") == docs_dir / "index.md"
    assert (docs_dir / "blog/posts/p.md").read_text(encoding="utf-8") == "rendered post\n"  # put back
    pages.restore()
    assert (docs_dir / "index.md").read_text(encoding="utf-8") == "# Home\n"
    assert front_matter("# no front matter\n") == "" and "Render error" in error_markdown("x")


def test_a_burst_of_changes_is_one_render() -> None:
    calls: list[set[Path]] = []
    done = threading.Event()

    def action(paths: set[Path]) -> None:
        calls.append(paths)
        done.set()

    debouncer = Debouncer(action, quiet_s=0.2)
    debouncer.start()
    try:
        for index in range(20):
            debouncer.changed(Path(f"runs/c/r{index}"))
        assert done.wait(10)
    finally:
        debouncer.stop()
    assert len(calls) == 1 and len(calls[0]) == 20


def test_serve_help_names_what_it_watches() -> None:
    from click.testing import CliRunner

    from sparkreport.cli import main

    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    assert re.search(r"docs/.*run store.*templates/.*sparkreport\.yml", " ".join(result.output.split()))
    assert "--dirty / --full" in result.output


def test_the_watcher_sees_writes_and_not_reads(tmp_path: Path) -> None:
    """inotify is asked for writes only: a render reads every run.json, which must not re-render."""
    (tmp_path / "runs/c/r1").mkdir(parents=True)
    record = tmp_path / "runs/c/r1/run.json"
    record.write_text("{}\n", encoding="utf-8")
    seen: list[Path] = []
    changed = threading.Event()

    def on_change(path: Path) -> None:
        seen.append(path)
        changed.set()

    watcher = Watcher(Sources(folders=(tmp_path / "runs",), files=()), on_change)
    watcher.start()
    try:
        for _ in range(50):
            record.read_text(encoding="utf-8")
        assert not changed.wait(1.0), seen
        (tmp_path / "runs/c/r2").mkdir()
        assert changed.wait(10)
    finally:
        watcher.stop()
    assert tmp_path / "runs/c/r2" in seen


@pytest.mark.parametrize("then", ["serve", "render"])
def test_the_error_page_goes_when_the_error_is_fixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     then: str) -> None:
    """A sparkreport.yml broken and then put back byte for byte (every page's key as before): the
    page cache must not keep the error page as the home page, neither in the serve that showed it
    nor in a render after that serve stopped."""
    from sparkreport.render import RenderOptions, RenderSession, render
    from sparkreport.scaffold import init_project
    from sparkreport.site.serve import ServeSession

    root = init_project(tmp_path / "project").root
    monkeypatch.chdir(root)
    options = RenderOptions(runs_dir=Path("runs"), project_root=root)
    renderer = RenderSession(options)
    lines: list[str] = []
    session = ServeSession(options, lines.append, lambda _options, changed: renderer.render(changed),
                           site_dir=root / "build" / "site")
    session.first_render()
    home = root / "build" / "docs" / "index.md"
    real = home.read_text(encoding="utf-8")
    config = root / "sparkreport.yml"
    edit(config, "title:", "titel:")
    session.rerender([config])
    assert "Render error" in home.read_text(encoding="utf-8")
    edit(config, "titel:", "title:")
    if then == "serve":
        session.rerender([config])
        assert lines[-2] == "fixed: the pages render again"
        assert re.fullmatch(r"re-rendered in \d+\.\d s: 1 file of build/docs changed", lines[-1]), lines[-1]
    else:
        render(options)
    assert home.read_text(encoding="utf-8") == real


def test_serve_outside_a_project_is_refused_as_build_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a folder with no run store, serve (and build, render) stop with build's one line, before
    a server starts or build/ is made."""
    from click.testing import CliRunner

    import sparkreport.site.mkdocs_site
    from sparkreport.cli import main

    def no_server(*args: object, **kwargs: object) -> None:
        raise AssertionError("the server started")

    monkeypatch.setattr(sparkreport.site.mkdocs_site, "serve_site", no_server)
    monkeypatch.chdir(tmp_path)
    for command in ("serve", "build", "render"):
        result = CliRunner().invoke(main, [command])
        assert (result.exit_code, result.output) == (1, (
            f"Error: {tmp_path}/runs: no such run store — ingest results first (`sparkreport ingest FILE`)\n"))
    assert list(tmp_path.iterdir()) == []


def test_an_address_in_use_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from sparkreport.cli import main
    from sparkreport.scaffold import init_project

    root = init_project(tmp_path / "project").root
    monkeypatch.chdir(root)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        result = CliRunner().invoke(main, ["serve", "--dev-addr", address])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert result.output.splitlines()[-1] == (f"Error: {address}: cannot serve here (Address already in use) — "
                                              "stop what is serving there, or pass another --dev-addr IP:PORT")


def test_a_build_after_a_serve_in_the_same_process_indexes_each_page_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MkDocs keeps the plugins that have ``on_startup`` between two loads of a config in one
    process, for serve's rebuilds; Material's search plugin, started by a serve as a dirty one,
    then put the previous build's every page into the next build's index a second time. Each
    build starts its plugins afresh (as ``mkdocs build`` does)."""
    import json

    from click.testing import CliRunner

    from sparkreport.cli import main
    from sparkreport.scaffold import init_project

    root = init_project(tmp_path / "project").root
    monkeypatch.chdir(root)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        served = CliRunner().invoke(main, ["serve", "--dev-addr", f"127.0.0.1:{taken.getsockname()[1]}"])
    assert served.exit_code == 1
    for text in ("# Notes\n\nFirst.\n", "# Notes\n\nSecond.\n"):  # the second build reuses the first's pages
        (root / "docs" / "notes.md").write_text(text, encoding="utf-8")
        assert CliRunner().invoke(main, ["build"]).exit_code == 0
        index = json.loads((root / "site" / "search" / "search_index.json").read_text(encoding="utf-8"))
        locations = [entry["location"] for entry in index["docs"]]
        assert len(locations) == len(set(locations)) > 5
