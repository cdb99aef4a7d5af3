"""The built site in a real browser: headless Debian Chromium driven by Playwright.

The site is built from the real Phase 1 runs plus published figures, served by
``python -m http.server`` on 127.0.0.1, and every page is opened offline: every chart
placeholder must hold an SVG or canvas drawn by vega-embed, with no console errors and no
request leaving localhost. Skipped only outside CI when Chromium or Playwright is missing;
under ``CI=true`` that is a failure.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from sparkreport.ingest import IngestOptions, ingest_paths
from sparkreport.render import RenderOptions
from sparkreport.site import BuildResult, build
from sparkreport.store import RunStore

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("SPARKREPORT_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
DRAWN = ("Array.from(document.querySelectorAll('.sparkreport-chart'))"
         ".every(e => e.dataset.state === 'drawn' || e.dataset.state === 'fallback')")
HOSTILE_SUMMARY = (
    "model,environment,metric,n,mean,sd\n"
    "\"<img src=x onerror=alert(1)>\",native,output_throughput_tok_s,5,100.0,1.0\n"
    "\"<img src=x onerror=alert(1)>\",container,output_throughput_tok_s,5,99.0,1.0\n"
    "\"<script>alert(1)</script>\",native,output_throughput_tok_s,5,80.0,1.0\n"
    "\"<script>alert(1)</script>\",container,output_throughput_tok_s,5,79.5,1.0\n"
)
SCRIPT_MODEL = "<script>alert(1)</script>"
#: A post binding every kind of live data, including the model whose name is a script tag.
POST = """---
date: 2026-01-02
categories: [Browser]
description: A post with live data, drawn offline.
---

# Live data in a post

Throughput of the script-named model:
{{ value("output_throughput_tok_s", model="<script>alert(1)</script>", environment="native") }}.

- {{ compare("output_throughput_tok_s", model="<script>alert(1)</script>") }}

<!-- more -->

{{ table("arms", metric="output_throughput_tok_s", campaign="published") }}

{{ chart("results/script-alert-1-script/output_throughput_tok_s-means") }}

{{ chart("memory/kv-vs-peak") }}
"""
#: Each page with everything it loads (shared assets counted once per page) stays under this.
PAGE_BUDGET = 1_500_000
DESKTOP = {"width": 1280, "height": 900}
#: A phone held upright (the CSS viewport of an iPhone 12 to 15).
PHONE = {"width": 390, "height": 844}


def require_browser() -> None:
    """Skip (or, under CI=true, fail) when Chromium or Playwright is not installed."""
    problem = None
    if not CHROMIUM.exists():
        problem = f"{CHROMIUM} is missing (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "the playwright package is missing (pip install playwright; never `playwright install`)"
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests cannot be skipped in CI: {problem}")
    pytest.skip(problem)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module", params=["mkdocs", "zensical"])
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, phase1_store: Path
          ) -> BuildResult:
    """A site from per-run data, published figures, and a model name that is an HTML tag, built
    by each builder (every test below runs against both)."""
    require_browser()
    project = tmp_path_factory.mktemp("browser-project")
    runs = project / "runs"
    shutil.copytree(phase1_store, runs)
    hostile = project / "hostile.csv"
    hostile.write_text(HOSTILE_SUMMARY, encoding="utf-8")
    sources = [hostile, *sorted((REPO / "examples").glob("*.yml"))]
    report = ingest_paths(sources, RunStore(runs), IngestOptions())
    assert not report.rejected, [e.format_message() for e in report.rejected]
    posts = project / "docs" / "blog" / "posts"
    posts.mkdir(parents=True)
    shutil.copy(REPO / "docs" / "blog" / "index.md", posts.parent / "index.md")
    (posts / "live-data.md").write_text(POST, encoding="utf-8")
    return build(RenderOptions(runs_dir=runs, project_root=project), project / "site", builder=request.param)


@contextlib.contextmanager
def serving(site_dir: Path, port: int) -> Iterator[str]:
    """``python -m http.server`` on 127.0.0.1:``port`` serving ``site_dir``, until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(site_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("python -m http.server did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server(built: BuildResult) -> Iterator[str]:
    """The built site, served on a free port."""
    with serving(built.site_dir, free_port()) as url:
        yield url


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One Chromium for the module (Playwright's sync API runs one instance at a time)."""
    from playwright.sync_api import sync_playwright

    require_browser()
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def browser(server: str, chromium: Any) -> Any:
    """Chromium, with the built site served."""
    return chromium


def site_pages(site_dir: Path) -> list[str]:
    """Every HTML page of the built site (paths relative to its root), raw run files excepted."""
    pages = []
    for path in sorted(site_dir.rglob("*.html")):
        relative = path.relative_to(site_dir).as_posix()
        if relative == "404.html" or relative.startswith("runs/files/"):
            continue
        pages.append(relative.removesuffix("index.html"))
    return pages


def scroll_through(page: Any) -> None:
    """Scroll a page from top to bottom a screen at a time (it grows as charts are drawn), then
    back to the top."""
    y = 0
    while y < page.evaluate("document.documentElement.scrollHeight") and y < 400 * 900:
        page.evaluate(f"window.scrollTo(0, {y})")
        page.wait_for_timeout(50)
        y += 900
    page.evaluate("window.scrollTo(0, 0)")


class PageVisit:
    """One page opened in a fresh context, recording console errors, dialogs and requests."""

    def __init__(self, browser: Any, url: str, color_scheme: str = "light", viewport: dict[str, int] | None = None,
                 style: str | None = None):
        self.context = browser.new_context(viewport=viewport or DESKTOP, color_scheme=color_scheme)
        if style:  # a stylesheet added before the page's scripts run
            self.context.add_init_script("document.addEventListener('DOMContentLoaded', () => {"
                                         " const s = document.createElement('style');"
                                         f" s.textContent = {json.dumps(style)}; document.head.appendChild(s); }});")
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        self.page.on("dialog", self._dialog)
        self.page.on("response", lambda r: r.status >= 400 and self.errors.append(f"HTTP {r.status}: {r.url}"))
        self.context.route("**/*", self._route)
        self.page.goto(url, wait_until="networkidle")
        scroll_through(self.page)  # a page with many charts draws each as it nears the viewport
        self.page.wait_for_function(DRAWN, timeout=20_000)

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"console {message.type}: {message.text}")

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _route(self, route: Any) -> None:
        url = route.request.url
        self.requests.append(url)
        if urlparse(url).scheme in ("http", "https") and urlparse(url).hostname not in LOCAL_HOSTS:
            route.abort()
        else:
            route.continue_()

    def charts(self) -> list[dict[str, Any]]:
        return list(self.page.eval_on_selector_all(".sparkreport-chart", """els => els.map(e => ({
            id: e.id, state: e.dataset.state,
            views: e.querySelectorAll('.sparkreport-chart-view').length,
            drawn: e.querySelectorAll('.sparkreport-chart-view svg.marks, .sparkreport-chart-view canvas.marks').length,
            background: (e.querySelector('.sparkreport-chart-view svg.marks') || {style: {}}).style.backgroundColor,
            marks: e.querySelectorAll('.sparkreport-chart-view svg .mark-symbol path, '
                                      + '.sparkreport-chart-view svg .mark-rule line').length,
        }))"""))

    def close(self) -> None:
        self.context.close()


def test_site_has_the_generated_pages(built: BuildResult) -> None:
    pages = site_pages(built.site_dir)
    for expected in ("", "results/", "memory/", "methodology/", "quality/", "runs/", "downloads/"):
        assert expected in pages
    assert len([p for p in pages if p.startswith("results/") and p != "results/"]) >= 4


def test_every_page_draws_its_charts_offline(built: BuildResult, server: str, browser: Any) -> None:
    total = 0
    for relative in site_pages(built.site_dir):
        visit = PageVisit(browser, server + relative)
        try:
            charts = visit.charts()
            for chart in charts:
                assert chart["state"] == "drawn", f"{relative}#{chart['id']}: {chart['state']}"
                assert chart["drawn"] >= 1, f"{relative}#{chart['id']}: no svg/canvas"
                assert chart["marks"] >= 1, f"{relative}#{chart['id']}: chart drawn without marks"
            assert not visit.errors, f"{relative}: {visit.errors}"
            assert not visit.dialogs, f"{relative}: a script ran: {visit.dialogs}"
            outside = [u for u in visit.requests
                       if urlparse(u).scheme in ("http", "https") and urlparse(u).hostname not in LOCAL_HOSTS]
            assert not outside, f"{relative}: requests left localhost: {outside}"
            total += len(charts)
        finally:
            visit.close()
    assert total >= 10


def placeholder_heights(built: BuildResult, server: str, browser: Any, viewport: dict[str, int],
                        undrawn: str) -> tuple[dict[str, float], dict[str, float]]:
    """Each chart's height (``page#id``) on the pages with charts that keep their place (Home,
    Memory, the Results and diff pages) before it is drawn and once it is. ``undrawn`` says how
    a chart is kept from being drawn: ``no-js`` (JavaScript off: the placeholder alone) or
    ``no-vega`` (the scripts run, vega-embed is kept from loading: the placeholder as a phone's
    stylesheet sizes it where scripts run)."""
    pages = [p for p in site_pages(built.site_dir) if p in ("", "memory/") or p.startswith(("results/", "diffs/"))]
    sizes: dict[bool, dict[str, float]] = {}
    for drawn in (False, True):
        context = browser.new_context(viewport=viewport, java_script_enabled=drawn or undrawn != "no-js")
        try:
            if not drawn and undrawn == "no-vega":
                context.route("**/vega*", lambda route: route.abort())
            page = context.new_page()
            for relative in pages:
                page.goto(server + relative, wait_until="networkidle")
                if drawn:
                    scroll_through(page)
                    page.wait_for_function(DRAWN, timeout=20_000)
                boxes = page.eval_on_selector_all(
                    ".sparkreport-chart", "els => els.map(e => [e.id, e.getBoundingClientRect().height, e.dataset.state])")
                sizes.setdefault(drawn, {}).update({f"{relative}#{name}": height for name, height, state in boxes
                                                    if drawn or state in (None, "", "drawing")})
        finally:
            context.close()
    assert len(sizes[True]) >= 10 and sizes[True].keys() == sizes[False].keys()
    return sizes[False], sizes[True]


def test_a_chart_keeps_its_place_while_it_is_drawn(built: BuildResult, server: str, browser: Any) -> None:
    """Before a chart is drawn (JavaScript off: the placeholder alone) its box is within 15% of
    the drawn chart's height, so the text below barely moves as the charts draw (a bare
    placeholder was 3em: a Results page's text moved ~110 px per chart above it)."""
    before, after = placeholder_heights(built, server, browser, DESKTOP, "no-js")
    off = {name: (before[name], drawn) for name, drawn in after.items() if abs(before[name] - drawn) > 0.15 * drawn}
    assert not off, f"placeholder vs drawn height: {off}"


def test_a_chart_keeps_its_place_on_a_phone_while_it_is_drawn(built: BuildResult, server: str, browser: Any) -> None:
    """At 390 px each chart is refitted to the column before it is drawn (labels above their rows,
    legends under the plot), growing up to 400 px past its desktop shape scaled down: the
    placeholder holds the refitted chart's height instead, within 20%. Before, text under Home's
    forest chart moved 400 px as it drew, and 1,170 px on Memory."""
    before, after = placeholder_heights(built, server, browser, PHONE, "no-vega")
    off = {name: (before[name], drawn) for name, drawn in after.items() if abs(before[name] - drawn) > 0.2 * drawn}
    assert not off, f"placeholder vs drawn height at 390 px: {off}"


def test_results_page_screenshot(built: BuildResult, server: str, browser: Any, tmp_path: Path) -> None:
    """A results page renders with its tables and charts (screenshot kept for inspection)."""
    visit = PageVisit(browser, server + "results/gpt120b/")
    try:
        assert visit.page.locator("table").count() >= 4
        assert "gpt-oss-120b" in visit.page.title()
        out = Path(os.environ.get("SPARKREPORT_SCREENSHOTS", tmp_path))
        out.mkdir(parents=True, exist_ok=True)
        visit.page.screenshot(path=str(out / "results-gpt120b.png"), full_page=False)
        visit.page.locator(".sparkreport-chart").first.screenshot(path=str(out / "chart.png"))
        assert (out / "results-gpt120b.png").stat().st_size > 10_000
    finally:
        visit.close()


#: The pages a reader looks at first, screenshotted at 1280×800 (CI keeps them as artifacts).
SCREENSHOT_PAGES = {"home": "", "methodology": "methodology/", "results-deepseek": "results/deepseek/",
                    "memory": "memory/"}
#: How far anything in the content area reaches past it, in px, and how far the page scrolls
#: sideways; wide tables scroll inside Material's own scrolling box, which is allowed.
OVERFLOW = """(() => {
  const box = document.querySelector('.md-content').getBoundingClientRect();
  let worst = 0;
  for (const e of document.querySelectorAll('.md-content__inner *')) {
    if (e.closest('.md-typeset__scrollwrap') && !e.classList.contains('md-typeset__scrollwrap')) continue;
    const b = e.getBoundingClientRect();
    if (b.width > 0) worst = Math.max(worst, b.right - box.right);
  }
  return {content: Math.round(worst), page: document.documentElement.scrollWidth - window.innerWidth};
})()"""


def screenshot_dir(tmp_path: Path) -> Path:
    """``$SPARKREPORT_ARTIFACTS/screenshots`` when set (CI uploads it), else build/screenshots."""
    root = os.environ.get("SPARKREPORT_ARTIFACTS")
    out = Path(root) / "screenshots" if root else REPO / "build" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_key_pages_fit_1280px_and_are_screenshotted(built: BuildResult, server: str, browser: Any,
                                                     tmp_path: Path) -> None:
    """Home, Methodology, a results page and Memory at 1280×800: nothing overflows the content
    area sideways (wide tables scroll inside their own box), and a screenshot of each is kept."""
    out = screenshot_dir(tmp_path)
    for name, relative in SCREENSHOT_PAGES.items():
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        try:
            page = context.new_page()
            page.goto(server + relative, wait_until="networkidle")
            page.wait_for_function(DRAWN, timeout=20_000)
            overflow = page.evaluate(OVERFLOW)
            assert overflow["content"] <= 0 and overflow["page"] <= 0, (relative, overflow)
            page.screenshot(path=str(out / f"{name}.png"), full_page=False)
            page.screenshot(path=str(out / f"{name}-full.png"), full_page=True)
            assert (out / f"{name}.png").stat().st_size > 10_000
        finally:
            context.close()


#: Tables wider than the box they sit in (Material puts each in a scrolling wrapper, which hides
#: the last columns behind a scroll bar): header of the first column and the overflow in px.
WIDE_TABLES = """() => [...document.querySelectorAll('article table')].map(t => {
    const box = t.closest('.md-typeset__scrollwrap') || t.parentElement;
    return [(t.querySelector('th') || {}).innerText, box.scrollWidth - box.clientWidth];
}).filter(([, over]) => over > 1)"""


def test_no_table_is_cut_at_1280px(built: BuildResult, server: str, browser: Any) -> None:
    """Every table of every generated page fits its column at 1280 px (compact cells; tables
    that span campaigns or arms are split per campaign or per arm instead of growing columns)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        cut = {}
        for relative in site_pages(built.site_dir):
            page.goto(server + relative, wait_until="load")
            wide = page.evaluate(WIDE_TABLES)
            if wide:
                cut[relative] = wide
        assert not cut, cut
    finally:
        context.close()


@pytest.fixture(scope="module")
def history_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A History page of two campaigns with long titles, a change point in each, served: its
    tables carry every column they can (a campaign column too)."""
    from history_store import write_history_store

    require_browser()
    project = tmp_path_factory.mktemp("history-project")
    mistral = {"model": "mistral-7b-instruct-v0.3", "model_id": "mistralai/Mistral-7B-Instruct-v0.3"}
    runs = write_history_store(project / "runs", steps={"0.22.0": -0.042}, **mistral)
    write_history_store(runs, steps={"0.21.0": 0.05}, seed=4, campaign="weekly-gb10", run_prefix="weekly-", **mistral)
    (project / "sparkreport.yml").write_text(
        "static_charts: posts\ncampaigns:\n  nightly:\n    title: 'Nightly builds: TensorRT-LLM on the H100 control'\n"
        "  weekly-gb10:\n    title: 'Weekly GB10 builds: TensorRT-LLM wheels'\n", encoding="utf-8")
    result = build(RenderOptions(runs_dir=runs, project_root=project, config_path=project / "sparkreport.yml"),
                   project / "site")
    with serving(result.site_dir, free_port()) as url:
        yield url + "history/"


def test_the_history_tables_fit_1280px(history_site: str, chromium: Any) -> None:
    """The History page's change points were a table of eleven columns (versions before and after,
    campaign, model, environment, … a Diff link) that scrolled sideways at 1280 px, as did its
    table of newest versions: both fit their column now, each change point's two versions the
    link to its diff page."""
    visit = PageVisit(chromium, history_site)
    try:
        page = visit.page
        assert page.evaluate(WIDE_TABLES) == []
        heads = page.eval_on_selector_all("article table", "ts => ts.map(t => t.querySelector('th').innerText)")
        assert heads == ["Versions", "Campaign"]  # the change points, the newest versions
        assert page.locator("article table a", has_text="0.21.0 → 0.22.0").count() >= 1
        assert not visit.errors, visit.errors
    finally:
        visit.close()


def test_the_history_charts_draw_a_line_per_campaign(history_site: str, chromium: Any) -> None:
    """Both campaigns measure the same model in the same environments: a series named without its
    campaign drew one line per environment, zigzagging between the campaigns at every version.
    Each chart draws four lines, its legend names each with its campaign's title in full (one
    column: two of these names did not fit beside each other, and the drawing was scaled down
    to 74%)."""
    visit = PageVisit(chromium, history_site)
    try:
        charts = visit.page.eval_on_selector_all(".sparkreport-chart", """els => els.map(e => {
            const svg = e.querySelector('.sparkreport-chart-view svg.marks');
            return {lines: e.querySelectorAll('.sparkreport-chart-view svg .mark-line path').length,
                    scale: svg.getBoundingClientRect().width / Number(svg.getAttribute('width')),
                    legend: [...e.querySelectorAll('svg .role-legend-label text')].map(t => t.textContent)};
        })""")
        assert len(charts) == 2
        nightly, weekly = "Nightly builds: TensorRT-LLM on the H100 control", "Weekly GB10 builds: TensorRT-LLM wheels"
        for chart in charts:
            assert chart["lines"] == 4
            # each campaign's series together, the baseline environment first (the order rule)
            assert chart["legend"] == [f"mistralai/Mistral-7B-Instruct-v0.3 · {env} · {title}"  # as every page names it
                                       for title in (nightly, weekly) for env in ("native", "docker")]
            assert chart["scale"] > 0.95, chart
        assert not visit.errors, visit.errors
    finally:
        visit.close()


def test_hostile_model_name_shows_as_text(built: BuildResult, server: str, browser: Any) -> None:
    slug_pages = [p for p in site_pages(built.site_dir) if p.startswith("results/img")]
    assert slug_pages, site_pages(built.site_dir)
    visit = PageVisit(browser, server + slug_pages[0])
    try:
        heading = visit.page.locator("article h1").first.inner_text()
        assert heading == "<img src=x onerror=alert(1)>"
        assert visit.page.locator("article img[src='x']").count() == 0
        assert not visit.dialogs
    finally:
        visit.close()


def test_charts_redraw_in_the_dark_palette(built: BuildResult, server: str, browser: Any) -> None:
    visit = PageVisit(browser, server + "memory/")
    try:
        visit.page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
        visit.page.wait_for_function(DRAWN, timeout=20_000)
        visit.page.wait_for_timeout(500)
        visit.page.wait_for_function(DRAWN, timeout=20_000)
        charts = visit.charts()
        assert charts and all(c["state"] == "drawn" and c["views"] == 1 and c["drawn"] == 1 for c in charts)
        assert all(c["background"] == "rgb(51, 51, 51)" for c in charts), charts  # vega's dark theme
        assert not visit.errors
    finally:
        visit.close()


def test_charts_survive_instant_navigation(tmp_path_factory: pytest.TempPathFactory, phase1_store: Path,
                                           built: BuildResult, browser: Any) -> None:
    """With Material's navigation.instant on, charts are drawn on pages reached without a reload."""
    project = tmp_path_factory.mktemp("instant-project")
    port = free_port()
    (project / "mkdocs.yml").write_text(  # instant navigation needs site_url
        f"site_name: Instant\nsite_url: http://127.0.0.1:{port}/\n"
        "theme:\n  name: material\n  features:\n    - navigation.instant\n", encoding="utf-8")
    result = build(RenderOptions(runs_dir=phase1_store, project_root=project), project / "site",
                   builder=built.builder)
    with serving(result.site_dir, port) as url:
        visit = PageVisit(browser, url)
        try:
            visit.page.evaluate("window.__sameDocument = true")
            visit.page.locator("a.md-nav__link[href$='memory/']").first.click()
            visit.page.wait_for_url("**/memory/")  # (the address changes before the page does)
            visit.page.wait_for_selector("h1#memory")
            visit.page.wait_for_selector(".sparkreport-chart")
            visit.page.wait_for_function(DRAWN, timeout=20_000)
            assert visit.page.evaluate("window.__sameDocument === true"), "the page was reloaded, not instant"
            charts = visit.charts()
            # (a chart that fell back says why in the console: the spec and the error)
            assert charts and all(c["state"] == "drawn" and c["drawn"] == 1 for c in charts), (charts, visit.errors)
            assert not visit.errors
        finally:
            visit.close()


@contextlib.contextmanager
def serving_as_pages(site_dir: Path) -> Iterator[str]:
    """``site_dir`` served the way GitHub Pages serves a site: a missing path gets the site's
    404.html with status 404 (``python -m http.server`` sends its own error page)."""
    import functools
    import http.server
    import threading

    class Handler(http.server.SimpleHTTPRequestHandler):
        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            if code != 404:
                super().send_error(code, message, explain)
                return
            body = (site_dir / "404.html").read_bytes()
            self.send_response(404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(site_dir)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_old_runs_link_lands_on_its_section(tmp_path_factory: pytest.TempPathFactory, phase1_store: Path,
                                               built: BuildResult, browser: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A link to a group's own Runs page (the layout before the campaign pages) lands, through the
    host's 404 page, on the group's section of its campaign's pages: the page it starts on."""
    from sparkreport.render import runs_index

    monkeypatch.setattr(runs_index, "PAGE_SIZE", 4)  # campaign pages, as in a large store
    project = tmp_path_factory.mktemp("moved-project")
    result = build(RenderOptions(runs_dir=phase1_store, project_root=project), project / "site",
                   builder=built.builder)
    index = (result.site_dir / "runs" / "index.html").read_text(encoding="utf-8")
    import re

    campaigns = sorted(set(re.findall(r'href="(?:\./)?([^"/#.]+)/(?:index\.html)?"', index)))
    assert campaigns, "the Runs index links each campaign's first page"
    targets = sorted({(campaign, page_dir, anchor) for campaign in campaigns
                      for page_dir, anchor in re.findall(r'href="(?:\./)?(?:(page-\d+)/)?(?:index\.html)?#([^"]+--[^"]+)"',
                                                         (result.site_dir / "runs" / campaign / "index.html")
                                                         .read_text(encoding="utf-8"))})
    assert targets, "a campaign's first page links each of its groups to its section"
    later = [t for t in targets if t[1]]
    cases = [targets[0], *later[:1]]
    with serving_as_pages(result.site_dir) as url:
        context = browser.new_context()
        try:
            page = context.new_page()
            for campaign, page_dir, anchor in cases:
                page.goto(f"{url}runs/{campaign}/{anchor}/")
                expected = f"{url}runs/{campaign}/" + (f"{page_dir}/" if page_dir else "")
                page.wait_for_url(lambda u, e=expected, a=anchor: u.startswith(e) and u.endswith(f"#{a}"),
                                  timeout=10_000)
                assert page.locator(f"[id='{anchor}']").count() == 1
            page.goto(f"{url}no-such-page/")  # any other missing page: the 404 page stays
            page.wait_for_timeout(500)
            assert page.url == f"{url}no-such-page/"
        finally:
            context.close()


def test_a_page_of_many_charts_draws_them_as_they_near_the_viewport(
        tmp_path_factory: pytest.TempPathFactory, built: BuildResult, browser: Any) -> None:
    """A Runs page with a monitoring chart per sampled run (30 here; up to 250 on a campaign's
    page) draws the charts within a screen of the viewport, the rest as the reader scrolls to
    them; printing draws those left. No console error either way."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_synth", REPO / "bench" / "synth.py")
    assert spec is not None and spec.loader is not None
    synth = importlib.util.module_from_spec(spec)
    sys.modules["bench_synth"] = synth
    spec.loader.exec_module(synth)
    root = tmp_path_factory.mktemp("lazy-project")
    synth.generate(root / "sources", synth.SynthOptions(runs=40, sampled=30, sample_hours=0.005, models=2,
                                                        iterations=10, vllm_fraction=0.0,
                                                        truncated_fraction=0.0, seed=5))
    synth.ingest_campaign(root / "sources", root / "runs")
    result = build(RenderOptions(runs_dir=root / "runs", project_root=root), root / "site", builder=built.builder)
    states = "Array.from(document.querySelectorAll('.sparkreport-chart')).map(e => e.dataset.state)"
    with serving(result.site_dir, free_port()) as url:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("console", lambda m: m.type in ("error", "warning") and errors.append(m.text))
            page.goto(url + "runs/", wait_until="networkidle")
            first = page.evaluate(states)
            assert len(first) == 30, first
            assert first.count("waiting") >= 10, first  # below the table, out of reach: not drawn yet
            scroll_through(page)
            page.wait_for_function(DRAWN, timeout=30_000)
            page.goto(url + "runs/", wait_until="networkidle")  # again, then printed: the rest is drawn
            # ... after the address has moved on (instant navigation changes it before the page):
            # the charts still waiting are looked for where this page's specs are
            page.evaluate("history.pushState(null, '', '../memory/')")
            page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
            page.wait_for_function(DRAWN, timeout=30_000)
            assert set(page.evaluate(states)) == {"drawn"}, page.evaluate(states)
            assert not errors, errors
        finally:
            context.close()


SEARCH_HITS = """() => {
    const hits = [...document.querySelectorAll('.md-search-result__link')].map(a => a.href);
    for (const host of document.querySelectorAll('*'))  // Zensical's search lives in a shadow root
        if (host.shadowRoot) hits.push(...[...host.shadowRoot.querySelectorAll('a')].map(a => a.href));
    return hits;
}"""


def test_search_finds_a_model(built: BuildResult, server: str, browser: Any) -> None:
    """The theme's search (MkDocs' lunr index, or Zensical's own in a dialog) finds a model's page."""
    visit = PageVisit(browser, server)
    try:
        opener = visit.page.locator("button.md-search__button")
        if opener.count():
            opener.first.click()
        else:
            visit.page.locator("input.md-search__input").first.click()
        visit.page.wait_for_timeout(300)
        visit.page.keyboard.type("gpt-oss-120b", delay=20)
        visit.page.wait_for_function(f"({SEARCH_HITS})().length > 0", timeout=20_000)
        hits = visit.page.evaluate(SEARCH_HITS)
        assert any("results/gpt120b/" in hit for hit in hits), hits
        assert not visit.errors, visit.errors
    finally:
        visit.close()


def post_page(site_dir: Path) -> str:
    """The built post's path (the blog plugin puts it under blog/YYYY/MM/DD/slug/)."""
    (found,) = [p for p in site_pages(site_dir) if p.startswith("blog/2026/") and p.endswith("/live-data-in-a-post/")]
    return found


def test_posts_and_the_blog_index_load_offline(built: BuildResult, server: str, browser: Any) -> None:
    """The blog index and the post load with no console error; the post's charts are drawn."""
    for relative, charts_expected in (("blog/", 0), (post_page(built.site_dir), 2)):
        visit = PageVisit(browser, server + relative)
        try:
            charts = visit.charts()
            assert len(charts) == charts_expected, (relative, charts)
            assert all(c["state"] == "drawn" and c["drawn"] == 1 and c["marks"] >= 1 for c in charts), charts
            assert not visit.errors, f"{relative}: {visit.errors}"
            assert not visit.dialogs
            if charts_expected:  # the static SVG gives way to the drawn chart
                hidden = visit.page.eval_on_selector_all(
                    ".sparkreport-chart > img", "els => els.map(e => getComputedStyle(e).display)")
                assert hidden == ["none"] * charts_expected, hidden
            else:
                assert visit.page.locator("a[href='feed.xml']").count() == 1
                assert "Live data in a post" in visit.page.locator("article, .md-content").first.inner_text()
        finally:
            visit.close()
    assert (built.site_dir / "blog" / "feed.xml").is_file()


def test_script_named_model_is_text_everywhere(built: BuildResult, server: str, browser: Any) -> None:
    """A model called <script>alert(1)</script> shows as text on its page, the home page and the
    post (value, compare sentence and table); no script with its body exists and none runs."""
    pages = ["", "results/script-alert-1-script/", post_page(built.site_dir)]
    for relative in pages:
        visit = PageVisit(browser, server + relative)
        try:
            text = visit.page.locator("article").first.inner_text()
            assert SCRIPT_MODEL in text, relative
            injected = visit.page.evaluate(
                "Array.from(document.scripts).filter(s => s.textContent.includes('alert(1)')).length")
            assert injected == 0, relative
            assert not visit.dialogs and not visit.errors, (relative, visit.dialogs, visit.errors)
        finally:
            visit.close()
    visit = PageVisit(browser, server + post_page(built.site_dir))
    try:
        article = visit.page.locator("article").first.inner_text()
        assert "Throughput of the script-named model:\n80 tok/s." in article or \
            "Throughput of the script-named model: 80 tok/s." in article
        assert f"{SCRIPT_MODEL}: no significant difference detected" in article or \
            f"{SCRIPT_MODEL}: output throughput" in article
        cells = visit.page.locator("article table td").all_inner_texts()
        assert SCRIPT_MODEL in cells
    finally:
        visit.close()


def test_page_weight_budget(built: BuildResult, server: str, browser: Any) -> None:
    """Every page with what it loads (each file counted once) stays within 1.5 MB."""
    heaviest = ("", 0)
    for relative in site_pages(built.site_dir):
        visit = PageVisit(browser, server + relative)
        try:
            local = {urlparse(u).path for u in visit.requests if urlparse(u).hostname in LOCAL_HOSTS}
        finally:
            visit.close()
        total = 0
        for path in local:
            file = built.site_dir / path.lstrip("/")
            if file.is_dir():
                file = file / "index.html"
            if file.is_file():
                total += file.stat().st_size
        assert total <= PAGE_BUDGET, f"{relative}: {total:,} bytes with its assets (budget {PAGE_BUDGET:,})"
        heaviest = max(heaviest, (relative, total), key=lambda item: item[1])
    assert heaviest[1] > 500_000, heaviest  # the vendored Vega builds were counted


def test_no_chart_embeds_more_than_5000_rows(built: BuildResult) -> None:
    """Every chart spec the site serves embeds at most 5000 data rows (Altair's limit, kept on)."""
    import json

    def rows(node: Any) -> int:
        if isinstance(node, dict):
            own = len(node["values"]) if isinstance(node.get("values"), list) else 0
            datasets = sum(len(v) for v in node.get("datasets", {}).values()) if isinstance(
                node.get("datasets"), dict) else 0
            return own + datasets + sum(rows(v) for k, v in node.items() if k not in ("values", "datasets"))
        if isinstance(node, list):
            return sum(rows(v) for v in node)
        return 0

    specs = sorted(built.site_dir.rglob("*.vl.json"))
    assert len(specs) >= 10
    for spec in specs:
        count = rows(json.loads(spec.read_text(encoding="utf-8")))
        assert 0 < count <= 5000, (spec, count)


#: Per chart: its box, its SVG's box and width as drawn, the box of its data marks (axes, legends
#: and titles left out), its legends' and titles' boxes, its "…" button's box, whether it scrolls
#: sideways, and any axis label Vega cut short ("…").
CHART_BOXES = """els => els.map(el => {
  const box = e => { const b = e.getBoundingClientRect(); return {left: b.left, top: b.top, right: b.right, bottom: b.bottom}; };
  const svg = el.querySelector('.sparkreport-chart-view svg.marks');
  let plot = null;
  for (const g of el.querySelectorAll('.sparkreport-chart-view svg g.role-mark')) {
    if (g.closest('.role-axis, .role-legend, .role-title')) continue;
    const b = box(g);
    if (b.right === b.left && b.bottom === b.top) continue;
    plot = plot ? {left: Math.min(plot.left, b.left), top: Math.min(plot.top, b.top),
                   right: Math.max(plot.right, b.right), bottom: Math.max(plot.bottom, b.bottom)} : b;
  }
  const menu = el.querySelector('.vega-embed > details > summary');
  return {id: el.id, chart: box(el), svg: svg && box(svg), svgWidth: svg && Number(svg.getAttribute('width')), plot,
          menu: menu && box(menu), scrolls: el.scrollWidth > el.clientWidth + 1,
          covered: [...el.querySelectorAll('.role-legend, .role-title')].map(box).filter(b => b.right > b.left),
          cut: [...el.querySelectorAll('.role-axis-label text')].map(t => t.textContent).filter(t => t.includes('\u2026'))};
})"""


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    """Whether two boxes share more than a pixel's edge."""
    return min(a["right"], b["right"]) - max(a["left"], b["left"]) > 1 and \
        min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 1


def phone_pages(site_dir: Path) -> list[str]:
    """Home (the forest chart, rows named by model and metric), Memory (the budget chart: a facet,
    bars, long row names; the scatter: two legends) and one model's page (per-run and means charts)."""
    model = sorted(p.parent.parent.relative_to(site_dir).as_posix() + "/"
                   for p in site_dir.glob("results/*/charts/*-runs.vl.json"))
    assert model, "no model page draws per-run charts"
    return ["", "memory/", model[0]]


def test_charts_fit_a_phone_screen(built: BuildResult, server: str, browser: Any) -> None:
    """At 390×844 every chart is refitted to the column (sparkreport-charts.js): drawn at its own
    size, not scaled down (its text stays 10 px high), no wider than the column (it does not
    scroll), its plot wholly on the screen, and no row label cut short. Before, a chart kept
    its desktop size and scrolled sideways: on Home the row labels took the screen and the plot
    started at x = 375 of 390."""
    for relative in phone_pages(built.site_dir):
        visit = PageVisit(browser, server + relative, viewport=PHONE)
        try:
            width = visit.page.evaluate("window.innerWidth")
            charts = visit.page.eval_on_selector_all(".sparkreport-chart", CHART_BOXES)
            assert charts, relative
            for chart in charts:
                where, plot, svg = f"{relative}#{chart['id']}", chart["plot"], chart["svg"]
                assert plot and svg, where
                assert abs((svg["right"] - svg["left"]) - chart["svgWidth"]) < 1, (where, svg, chart["svgWidth"])
                assert not chart["scrolls"] and svg["right"] <= chart["chart"]["right"] + 1, (where, svg)
                assert plot["left"] >= 0 and plot["right"] <= width, (where, plot)
                assert not chart["cut"], (where, chart["cut"])
            assert not visit.errors, (relative, visit.errors)
        finally:
            visit.close()


#: The first table wider than its column, scrolled sideways by 200 px: where its first and second
#: cells of the first row were before and after, and the wrapper's left edge.
SCROLL_WIDE_TABLE = """() => {
  const wrap = [...document.querySelectorAll(".md-typeset__scrollwrap")]
    .find(w => w.scrollWidth > w.clientWidth + 50);
  if (!wrap) return null;
  const cells = () => [...wrap.querySelector("tbody tr").children].slice(0, 2)
    .map(c => c.getBoundingClientRect().left);
  const before = cells();
  wrap.scrollLeft = 200;
  return {before, after: cells(), edge: wrap.getBoundingClientRect().left, scrolled: wrap.scrollLeft};
}"""


def test_a_wide_table_keeps_its_first_column_in_view_on_a_phone(built: BuildResult, server: str,
                                                                  browser: Any) -> None:
    """At 390 px a table wider than the column scrolls sideways (the Runs index: model, runs,
    environments, …); its first column, which says whose figures a row holds, stays at the
    left edge while the other columns pass under it."""
    visit = PageVisit(browser, server + "runs/", viewport=PHONE)
    try:
        moved = visit.page.evaluate(SCROLL_WIDE_TABLE)
        assert moved is not None, "no table on the Runs index is wider than a phone's column"
        (first_before, second_before), (first_after, second_after) = moved["before"], moved["after"]
        assert moved["scrolled"] > 100, moved
        assert second_after == pytest.approx(second_before - moved["scrolled"], abs=1), moved
        assert first_after == pytest.approx(moved["edge"], abs=1) and first_after >= first_before - 20, moved
        assert not visit.errors, visit.errors
    finally:
        visit.close()


def test_a_runs_table_reads_on_a_phone(built: BuildResult, server: str, browser: Any) -> None:
    """At 390 px a Runs table's run id wraps at its dots and hyphens instead of taking half the
    screen on one line, and its files keep a column wide enough that a run's row stays a few
    lines high (it was ~130 px, mostly blank, the files one short word a line)."""
    visit = PageVisit(browser, server + "runs/", viewport=PHONE)
    try:
        sizes = visit.page.evaluate("""() => [...document.querySelectorAll("td.sparkreport-nowrap")].map(
            cell => ({width: cell.getBoundingClientRect().width, height: cell.parentElement.getBoundingClientRect().height}))""")
        assert sizes, "no run id cell on the Runs index"
        assert max(size["width"] for size in sizes) <= 0.4 * PHONE["width"], sizes[:3]
        heights = sorted(size["height"] for size in sizes)
        assert heights[len(heights) // 2] <= 80, heights[-5:]
        assert not visit.errors, visit.errors
    finally:
        visit.close()


def test_a_chart_that_cannot_fit_scrolls_to_its_plot(built: BuildResult, server: str, browser: Any) -> None:
    """A column too narrow for a chart's labels beside its narrowest readable plot (140 px) (here
    Memory's first chart squeezed to 200 px on a phone, then the window resized): the chart is
    drawn again for that width, keeps its size, scrolls sideways and is scrolled so that its plot
    starts on screen, not its labels."""
    visit = PageVisit(browser, server + "memory/", viewport=PHONE)
    try:
        page = visit.page
        assert int(page.eval_on_selector(".sparkreport-chart", "el => el.dataset.fitted")) > 250  # the column
        page.eval_on_selector(".sparkreport-chart", "el => { el.style.width = '200px'; }")
        page.evaluate("window.dispatchEvent(new Event('resize'))")
        page.wait_for_function("(el => el.dataset.fitted === '162' && el.dataset.state === 'drawn')"
                               "(document.querySelector('.sparkreport-chart'))", timeout=10_000)
        chart = page.eval_on_selector_all(".sparkreport-chart", CHART_BOXES)[0]
        scrolled = page.eval_on_selector(".sparkreport-chart", "el => el.scrollLeft")
        assert chart["scrolls"] and scrolled > 0, (chart, scrolled)
        assert chart["chart"]["left"] - 1 <= chart["plot"]["left"] < chart["chart"]["right"] - 50, chart
        assert not visit.errors, visit.errors
    finally:
        visit.close()


def test_the_chart_menu_covers_nothing(built: BuildResult, server: str, browser: Any) -> None:
    """Each chart's "…" button (vega-embed's export menu) sits in the column vega-embed keeps free
    on the chart's right, at 1280 px and on a phone: it covers no legend, no title, no part of the
    drawing (Material's summary padding made it 95 px wide, over the forest chart's legend). A
    keyboard reaches it: Tab from the chart focuses it, shown in full, and Enter opens the menu."""
    for viewport in (DESKTOP, PHONE):
        for relative in ("", "memory/"):
            visit = PageVisit(browser, server + relative, viewport=viewport)
            try:
                charts = visit.page.eval_on_selector_all(".sparkreport-chart", CHART_BOXES)
                assert charts, relative
                for chart in charts:
                    where, menu = f"{viewport['width']}px {relative}#{chart['id']}", chart["menu"]
                    assert menu and menu["right"] <= viewport["width"], (where, menu)
                    covered = [box for box in [chart["svg"], *chart["covered"]] if overlap(menu, box)]
                    assert not covered, (where, menu, covered)
            finally:
                visit.close()
    visit = PageVisit(browser, server)
    try:
        page = visit.page
        page.eval_on_selector(".sparkreport-chart", "el => { el.tabIndex = -1; el.focus(); }")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.matches('.sparkreport-chart .vega-embed summary')")
        page.wait_for_function("getComputedStyle(document.activeElement).opacity === '1'", timeout=5_000)
        page.keyboard.press("Enter")
        page.wait_for_selector(".sparkreport-chart .vega-actions a", state="visible", timeout=5_000)
        assert "SVG" in page.locator(".sparkreport-chart .vega-actions").first.inner_text()
    finally:
        visit.close()


@pytest.fixture(scope="module", params=["mkdocs", "zensical"])
def shipped_diff(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The diff page of this repository's own site (its runs/ and sparkreport.yml), built by each
    builder and served: cold vs warm page cache, 28 comparisons, every one unchanged."""
    require_browser()
    project = tmp_path_factory.mktemp("shipped-diff")
    shutil.copy(REPO / "sparkreport.yml", project / "sparkreport.yml")
    built = build(RenderOptions(runs_dir=REPO / "runs", project_root=project, config_path=project / "sparkreport.yml"),
                  project / "site", builder=request.param)
    with serving(built.site_dir, free_port()) as url:
        yield url + "diffs/cold-vs-warm-cache/"


#: Closed <details> content as a browser without ::details-content lays it out (none at all:
#: Chromium lays it out hidden): a chart drawn there has no width to measure.
UNLAID_FOLDS = "details.note:not([open]) > :not(summary) { display: none !important; }"
#: The folded charts' width: each chart's, its fold's content box's, and vega-embed's column for
#: its "…" menu beside the drawing.
FOLD_WIDTHS = """els => els.map(el => {
  const fold = el.closest('details.note'), style = getComputedStyle(fold);
  return {id: el.id, state: el.dataset.state, fitted: el.dataset.fitted || '', width: el.getBoundingClientRect().width,
          column: fold.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight),
          menu: parseFloat(getComputedStyle(el.querySelector('.vega-embed')).paddingRight) || 0};
})"""


@pytest.mark.parametrize("closed", ["laid-out", "unlaid"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_charts_folded_on_a_diff_page_take_their_column_when_opened(shipped_diff: str, chromium: Any,
                                                                     viewport: dict[str, int], closed: str) -> None:
    """Every comparison of the shipped diff is unchanged, so its ten charts wait in a closed fold
    below the tables'. They are drawn while it is closed — where the browser lays the closed
    content out and where it does not (no width at all) — and once a click opens it each takes the
    fold's width: the drawing as wide as its spec or the column beside the menu allows, not
    scrolling, its plot on the screen; on a phone refitted to that column (sparkreport-charts.js
    draws it again on `toggle`), not scaled down, no row label cut; no console error."""
    visit = PageVisit(chromium, shipped_diff, viewport=viewport, style=UNLAID_FOLDS if closed == "unlaid" else None)
    try:
        page = visit.page
        assert page.locator(".sparkreport-chart").count() == page.locator("details.note .sparkreport-chart").count() == 10
        assert not page.eval_on_selector("details.note:has(.sparkreport-chart)", "el => el.open")
        assert page.evaluate(DRAWN)  # drawn while folded
        page.locator("details.note > summary", has_text="10 charts of unchanged comparisons").click()
        page.wait_for_timeout(600)  # the refit waits 200 ms for the layout to settle
        page.wait_for_function(DRAWN, timeout=20_000)
        widths = page.eval_on_selector_all("details.note .sparkreport-chart", FOLD_WIDTHS)
        charts = page.eval_on_selector_all("details.note .sparkreport-chart", CHART_BOXES)
        for width, chart in zip(widths, charts, strict=True):
            where, svg = f"{viewport['width']}px {closed} #{chart['id']}", chart["svg"]
            assert width["state"] == "drawn" and abs(width["width"] - width["column"]) < 1, (where, width)
            room = width["width"] - width["menu"]
            assert abs((svg["right"] - svg["left"]) - min(chart["svgWidth"], room)) < 1, (where, svg, width)
            assert not chart["scrolls"] and 0 <= chart["plot"]["left"] < chart["plot"]["right"] <= viewport["width"], \
                (where, chart)
            if viewport is PHONE:  # refitted to the open column: drawn at its own size, no row label cut
                assert int(width["fitted"]) == int(room) and chart["svgWidth"] <= room + 1, (where, width, chart)
                assert not chart["cut"], (where, chart["cut"])
        assert not visit.errors, visit.errors
    finally:
        visit.close()


#: Each axis's shown labels under ``root`` (a drawn chart's SVG, or a fallback SVG's document), as boxes.
AXIS_LABELS = """(root) => [...root.querySelectorAll('.role-axis')].map(axis =>
  [...axis.querySelectorAll('.role-axis-label text')]
    .filter(t => t.textContent && t.getAttribute('opacity') !== '0')  // hidden by Vega's overlap check
    .map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
  }))"""


def test_no_axis_label_runs_into_its_neighbour(built: BuildResult, server: str, browser: Any) -> None:
    """On a model's page, drawn at 1280 px and on a phone, and in every model's static SVG
    fallbacks, no two shown labels of one axis overlap. Before, the fallbacks' labels ran into each
    other ("2,5402,541", "119.2119.3"): vl-convert measures text narrower than a browser shows it."""
    model = phone_pages(built.site_dir)[2]
    for viewport in (DESKTOP, PHONE):
        visit = PageVisit(browser, server + model, viewport=viewport)
        try:
            scroll_through(visit.page)
            for chart in visit.page.query_selector_all(".sparkreport-chart .sparkreport-chart-view svg"):
                for labels in chart.evaluate(AXIS_LABELS):
                    for a, b in itertools.pairwise(sorted(labels, key=lambda box: box["left"])):
                        assert not overlap(a, b), (model, viewport, a["text"], b["text"])
        finally:
            visit.close()
    fallbacks = sorted(p.relative_to(built.site_dir).as_posix() for p in built.site_dir.glob("results/*/charts/*.svg"))
    assert len(fallbacks) > 10
    visit = PageVisit(browser, server + model, viewport=DESKTOP)
    try:
        for svg in fallbacks:
            visit.page.goto(server + svg)
            for labels in visit.page.evaluate(f"() => ({AXIS_LABELS})(document)"):
                for a, b in itertools.pairwise(sorted(labels, key=lambda box: box["left"])):
                    assert not overlap(a, b), (svg, a["text"], b["text"])
    finally:
        visit.close()
