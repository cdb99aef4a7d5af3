"""``render``: prepare the output docs folder, then write every registered page into it."""

from __future__ import annotations

import functools
import json
import os
import posixpath
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.cache import CACHE_DIR
from sparkreport.errors import BuildError
from sparkreport.render.pages import NavItem, PageDoc
from sparkreport.render.posts import PostDoc

if TYPE_CHECKING:
    import jinja2

    from sparkreport.config import ProjectConfig
    from sparkreport.render.context import SiteData

#: Marks a folder as written by ``render``: only such a folder is ever emptied.
MARKER = ".sparkreport-generated"
MARKER_TEXT = "Written by `sparkreport render`; rewritten on every render (files whose bytes change).\n"
DEFAULT_DOCS_DIR = Path("build") / "docs"
CHARTS_DIR = "charts"


@dataclass
class RenderOptions:
    """What to render and where (paths relative to the project root unless absolute)."""

    runs_dir: Path = Path("runs")
    #: Output folder for the Markdown; default ``<project>/build/docs``.
    docs_dir: Path | None = None
    #: ``sparkreport.yml``; default ``<project>/sparkreport.yml`` when it exists.
    config_path: Path | None = None
    #: The project (hand-written ``docs/``, ``templates/``, ``mkdocs.yml``); default: the
    #: config file's folder, else the current directory.
    project_root: Path | None = None
    #: The command printed in every page's footer as the way to regenerate it.
    command: str | None = None


@dataclass
class RenderResult:
    """What ``render`` wrote: the docs folder, the pages, and the nav in order."""

    project_root: Path
    docs_dir: Path
    config: ProjectConfig
    pages: list[PageDoc]
    nav: list[NavItem]
    handwritten: list[str] = field(default_factory=list)
    #: Blog posts (``blog/posts/``) with their bindings filled in.
    posts: list[PostDoc] = field(default_factory=list)
    #: Static SVG fallbacks written (every chart, or only those posts show: ``static_charts``).
    svg_count: int = 0
    #: Files of the docs folder written or removed by this render (equal bytes are left alone).
    changed_files: int = 0
    #: One-line notes for the user (a draft post left out), printed by the CLI.
    notices: list[str] = field(default_factory=list)

    @property
    def chart_count(self) -> int:
        return sum(len(page.charts) for page in self.pages)


def resolve_root(options: RenderOptions) -> Path:
    """The project root: given, else the config file's folder, else the current directory."""
    if options.project_root is not None:
        return options.project_root.resolve()
    if options.config_path is not None:
        return options.config_path.resolve().parent
    return Path.cwd().resolve()


def docs_dir_for(options: RenderOptions) -> Path:
    """The absolute docs folder ``render`` writes: ``--docs-dir``, default ``build/docs`` in the project."""
    return _under(resolve_root(options), options.docs_dir or DEFAULT_DOCS_DIR).resolve()


def _under(root: Path, path: Path) -> Path:
    return path if path.is_absolute() else root / path


def render(options: RenderOptions) -> RenderResult:
    """Render every registered page into the docs folder; returns what was written.

    A file-system failure (disk full, a folder removed under us) is a one-line BuildError naming
    the path, never a traceback. One render or build at a time writes into a docs folder's
    parent (:mod:`sparkreport.lock`); a second one stops at once with a BuildError.
    """
    from sparkreport.early import check_writable
    from sparkreport.lock import output_lock

    check_writable(docs_dir_for(options), "--docs-dir")  # before the lock, which creates its parent
    try:
        with output_lock(docs_dir_for(options).parent):
            return _render(options)
    except OSError as exc:
        where = exc.filename or "the docs folder"
        raise BuildError(f"{where}: {exc.strerror or exc} — check free space and permissions, "
                         "then run it again") from None


def _render(options: RenderOptions) -> RenderResult:
    from sparkreport.config import CONFIG_FILE, ProjectConfig, load_config
    from sparkreport.dataset import load_dataset
    from sparkreport.early import check_selector_campaigns, store_campaigns
    from sparkreport.published import copy_assets
    from sparkreport.render.context import build_site_data
    from sparkreport.render.markdown import chart_html, make_environment
    from sparkreport.render.pages import registered_pages
    from sparkreport.render.posts import render_posts
    from sparkreport.render.preflight import preflight

    root = resolve_root(options)
    config_path = options.config_path
    if config_path is None and (root / CONFIG_FILE).is_file():
        config_path = root / CONFIG_FILE
    # The project root's sparkreport.yml, not the current directory's: render may run elsewhere.
    config = load_config(config_path) if config_path is not None else ProjectConfig()
    runs_dir = _under(root, options.runs_dir).resolve()
    docs_dir = docs_dir_for(options)
    cache_dir = docs_dir.parent / CACHE_DIR
    # Milliseconds before seconds: the diffs' campaigns in the store (the docs folder: in render()).
    # An empty store is told below ("no runs to render"), which says more.
    if store_campaigns(runs_dir):
        check_selector_campaigns(runs_dir, [(f"{config_path}: diffs[{i}].{side}", text)
                                            for i, named in enumerate(config.diffs)
                                            for side, text in (("a", named.a), ("b", named.b))])
    dataset = load_dataset(runs_dir, cache_dir=cache_dir)
    if dataset.is_empty():
        raise BuildError(f"{runs_dir}: no runs to render — ingest results first (`sparkreport ingest FILE`)")
    preflight(dataset, config, root / "docs")  # bad diffs and post bindings: refused before any heavy work
    prepare_docs_dir(docs_dir, root / "docs")
    # Everything is written into a staging folder, then only the files whose bytes changed are
    # moved into the docs folder (the others keep their mtime, so MkDocs' live reload and any
    # file watcher see only what changed); a failed render leaves the last good docs folder.
    final_docs_dir, docs_dir = docs_dir, staging_dir(docs_dir)
    if docs_dir.exists():
        shutil.rmtree(docs_dir)
    docs_dir.mkdir(parents=True)
    (docs_dir / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
    handwritten = copy_handwritten(root / "docs", docs_dir)
    copy_assets(docs_dir)
    command = options.command or default_command(root, runs_dir)
    site = build_site_data(dataset, config, runs_dir, command, root)
    env = make_environment(root / "templates")
    planned = []
    for page in registered_pages():
        docs = page.docs(site, docs_dir)
        for doc in docs:
            if doc.path in handwritten:
                raise BuildError(
                    f"{root / 'docs' / doc.path}: collides with the generated {page.title} page — "
                    f"rename it, or change the page through templates/{page.template}")
        planned.append((page, docs))
    chart_total = sum(len(doc.charts) for _page, docs in planned for doc in docs)
    static = config.static_fallbacks(chart_total)
    env.globals["chart"] = functools.partial(chart_html, static=static)
    written: list[PageDoc] = []
    nav: list[NavItem] = []
    svg_jobs: list[tuple[Path, dict[str, Any]]] = []
    for page, docs in planned:
        for doc in docs:
            write_page(env, site, doc, docs_dir, svg_jobs)
        written += docs
        if docs:
            nav.append(page.nav(docs))
    footer = env.get_template("_footer.md")
    notices: list[str] = []
    posts = render_posts(site, docs_dir, root / "docs", written, footer=lambda: footer.render(
        site=site, provenance=site.provenance, title=site.config.title, ci_label=site.confidence_label),
        notices=notices)
    if not static:  # only the charts posts show as images
        wanted = {docs_dir / svg_path(name) for post in posts for name in post.charts}
        svg_jobs = [(path, spec) for path, spec in svg_jobs if path in wanted]
    write_svgs(svg_jobs, cache_dir)
    changed = sync_tree(docs_dir, final_docs_dir)
    shutil.rmtree(docs_dir)
    return RenderResult(project_root=root, docs_dir=final_docs_dir, config=config, pages=written, nav=nav,
                        handwritten=[p for p in handwritten if p.endswith(".md")], posts=posts,
                        svg_count=len(svg_jobs), changed_files=changed, notices=notices)


def svg_path(chart_key: str) -> str:
    """``results/qwen72b/kv-vs-peak`` (a post's chart name) → ``results/qwen72b/charts/kv-vs-peak.svg``."""
    folder, _, name = chart_key.rpartition("/")
    return posixpath.join(folder, CHARTS_DIR, f"{name}.svg")


def default_command(root: Path, runs_dir: Path) -> str:
    """'sparkreport build --runs-dir runs' with the runs dir relative to the project."""
    try:
        shown = runs_dir.relative_to(root).as_posix()
    except ValueError:
        shown = str(runs_dir)
    return f"sparkreport build --runs-dir {shown}"


def prepare_docs_dir(docs_dir: Path, source_docs: Path) -> None:
    """Check ``docs_dir`` may be written (render made it, never hand-written docs); create it."""
    if source_docs.exists() and (docs_dir == source_docs.resolve() or source_docs.resolve() in docs_dir.parents):
        raise BuildError(f"{docs_dir}: is the project's hand-written docs/ — generated pages go "
                         "elsewhere (default build/docs); pass another --docs-dir")
    if docs_dir.exists():
        if not docs_dir.is_dir():
            raise BuildError(f"{docs_dir}: exists and is not a folder — pass another --docs-dir")
        if any(docs_dir.iterdir()) and not (docs_dir / MARKER).exists():
            raise BuildError(f"{docs_dir}: not empty and not written by sparkreport render — "
                             "pass an empty or new --docs-dir")
    docs_dir.mkdir(parents=True, exist_ok=True)
    if not (docs_dir / MARKER).exists():
        (docs_dir / MARKER).write_text(MARKER_TEXT, encoding="utf-8")


def staging_dir(docs_dir: Path) -> Path:
    """The hidden sibling a render writes into before :func:`sync_tree` moves changes over."""
    return docs_dir.parent / f".{docs_dir.name}.staging"


def sync_tree(source: Path, target: Path) -> int:
    """Make ``target`` hold exactly the files of ``source``; returns the files written or removed.

    A file whose bytes are already equal is left alone (mtime kept); a changed or new one is
    moved over (both folders share a parent, so a rename); a file only ``target`` has is deleted.
    """
    import filecmp

    changed = 0
    wanted: set[str] = set()
    for folder, _dirs, files in os.walk(source):
        relative_folder = os.path.relpath(folder, source)
        for name in files:
            relative = os.path.normpath(os.path.join(relative_folder, name))
            wanted.add(relative)
            old, new = target / relative, Path(folder) / name
            if old.is_file() and old.stat().st_size == new.stat().st_size and filecmp.cmp(old, new, shallow=False):
                continue
            old.parent.mkdir(parents=True, exist_ok=True)
            os.replace(new, old)
            changed += 1
    for folder, _dirs, files in os.walk(target, topdown=False):
        relative_folder = os.path.relpath(folder, target)
        for name in files:
            if os.path.normpath(os.path.join(relative_folder, name)) not in wanted:
                (Path(folder) / name).unlink()
                changed += 1
        if folder != str(target) and not any(os.scandir(folder)):
            os.rmdir(folder)
    return changed


def copy_handwritten(source: Path, docs_dir: Path) -> list[str]:
    """Copy the project's docs/ into the output; returns the copied paths (posix, relative)."""
    copied: list[str] = []
    if not source.is_dir():
        return copied
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if not path.is_file() or any(part.startswith(".") for part in relative.parts):
            continue
        target = docs_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied.append(relative.as_posix())
    return copied


def write_page(env: jinja2.Environment, site: SiteData, doc: PageDoc, docs_dir: Path,
               svg_jobs: list[tuple[Path, dict[str, Any]]] | None = None) -> None:
    """Render one document's template and write it with its charts.

    With ``svg_jobs``, the SVG fallbacks are queued there for :func:`write_svgs` (cached,
    rendered in parallel) instead of being drawn one by one here.
    """
    import jinja2

    from sparkreport.charts import to_svg
    from sparkreport.render.report import errors_in

    context = {
        "banner_errors": errors_in(site, doc.scope) if doc.banner else [],
        "site": site, "page": doc, "provenance": site.provenance, "title": site.config.title,
        "ci_label": site.confidence_label, "href": doc.href, "charts": doc.charts, **doc.context,
    }
    try:
        text = env.get_template(doc.template).render(context)
    except jinja2.TemplateSyntaxError as exc:
        raise BuildError(f"{exc.filename or doc.template}:{exc.lineno}: template error: {exc.message}") from None
    except jinja2.TemplateError as exc:
        raise BuildError(f"{doc.template}: cannot render {doc.path}: {exc}") from None
    target = docs_dir / doc.path
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_text(target, text)
    for chart in doc.charts:
        folder = target.parent / CHARTS_DIR
        folder.mkdir(exist_ok=True)
        _write_text(folder / f"{chart.name}.vl.json", json.dumps(chart.spec, indent=1, sort_keys=True) + "\n")
        if svg_jobs is None:
            _write_text(folder / f"{chart.name}.svg", to_svg(chart.spec))
        else:
            svg_jobs.append((folder / f"{chart.name}.svg", chart.spec))


def write_svgs(jobs: list[tuple[Path, dict[str, Any]]], cache_dir: Path | None) -> None:
    """Write each chart's SVG fallback: from the cache when the same spec was drawn before
    (keyed by the spec's sha256 and the vl-convert version), else drawn in a thread pool."""
    from concurrent.futures import ThreadPoolExecutor

    import vl_convert

    from sparkreport.cache import BlobCache, sha256_bytes
    from sparkreport.charts import VEGALITE_VERSION, to_svg

    cache = BlobCache(cache_dir / "svg", "svg") if cache_dir is not None else None
    salt = f"{getattr(vl_convert, '__version__', '')}\0{VEGALITE_VERSION}\0".encode()
    missing: list[tuple[Path, dict[str, Any], str]] = []
    for path, spec in jobs:
        key = sha256_bytes(salt + json.dumps(spec, sort_keys=True).encode())
        cached = cache.get(key) if cache is not None else None
        if cached is not None:
            _write_text(path, cached.decode("utf-8"))
        else:
            missing.append((path, spec, key))
    if not missing:
        return
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        for (path, _spec, key), svg in zip(missing, pool.map(lambda job: to_svg(job[1]), missing), strict=True):
            _write_text(path, svg)
            if cache is not None:
                cache.put(key, svg.encode("utf-8"))


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
