"""`sparkreport render`, `build` and `serve`: the results site."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sparkreport.cli.options import runs_dir_option
from sparkreport.project import DEFAULT_RUNS_DIR

if TYPE_CHECKING:
    from sparkreport.render import RenderOptions

F = TypeVar("F", bound=Callable[..., Any])


def render_options(func: F) -> F:
    """--runs-dir, --docs-dir and --config, shared by render, build and serve."""
    func = click.option(
        "--config", "config_path", type=click.Path(path_type=Path, dir_okay=False, exists=True),
        help="Project configuration (default: ./sparkreport.yml when present); its folder is the "
             "project root (hand-written docs/, templates/, mkdocs.yml).")(func)
    func = click.option(
        "--docs-dir", type=click.Path(path_type=Path, file_okay=False),
        help="Where the generated Markdown goes (default: build/docs in the project; rewritten on "
             "every render, never the hand-written docs/).")(func)
    return runs_dir_option(func)


def make_options(command: str, runs_dir: Path, docs_dir: Path | None, config_path: Path | None) -> RenderOptions:
    """Options for ``render`` from CLI flags (paths given on the command line are cwd-relative)."""
    from sparkreport.render import RenderOptions

    shown = f"sparkreport {command}"
    if runs_dir != DEFAULT_RUNS_DIR:
        shown += f" --runs-dir {runs_dir}"
    if config_path is not None:
        shown += f" --config {config_path}"
    return RenderOptions(
        runs_dir=runs_dir.resolve(),
        docs_dir=docs_dir.resolve() if docs_dir is not None else None,
        config_path=config_path.resolve() if config_path is not None else None,
        command=shown,
    )


@click.command("render")
@render_options
def render_command(runs_dir: Path, docs_dir: Path | None, config_path: Path | None) -> None:
    """Write the site's Markdown pages, charts and downloads (every number filled in).

    The project's hand-written docs/ is copied into the output first; a project's
    templates/ folder overrides the packaged page templates by file name.
    """
    from sparkreport.project import resolve_project
    from sparkreport.render import render

    result = render(resolve_project(make_options("render", runs_dir, docs_dir, config_path)))
    for notice in result.notices:
        click.echo(f"note: {notice}", err=True)
    click.echo(f"{len(result.pages)} pages, {result.chart_count} charts → {result.docs_dir}")


@click.command("build")
@render_options
@click.option("--site-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where the built site goes (default: site/ in the project).")
@click.option("--strict/--no-strict", default=True, show_default=True,
              help="Fail on any builder warning (broken link, missing page).")
@click.option("--builder", type=click.Choice(["mkdocs", "zensical"]), default=None,
              help="The static-site builder (default: `builder:` in sparkreport.yml, else mkdocs).")
@click.option("--full", is_flag=True,
              help="Convert every page again, reusing nothing of the previous site (to start from "
                   "nothing at all, delete build/).")
def build_command(runs_dir: Path, docs_dir: Path | None, config_path: Path | None,
                  site_dir: Path | None, strict: bool, builder: str | None, full: bool) -> None:
    """Render the pages, then build the static site (Material theme) with MkDocs or Zensical.

    A rebuild costs what changed: only pages whose inputs changed are rendered, and (MkDocs)
    only pages whose Markdown changed are converted; the rest of the previous site is reused.
    After an edit of hand-written docs alone (a post's prose, a page under docs/), committed or
    not, the data is kept from the last build: the generated pages (the footers that print the
    project's commit print the new one), the posts' results and the runs' files, with no
    dataset loaded. In a git work tree, a fresh checkout (a CI job's) reads only the run files
    git does not report unchanged.
    The runs' files, the blog feed and the credential scan are sparkreport's own steps after
    the builder, so both builders publish the same site; it replaces the old one only whole.

    On Linux, filling and writing the pages, MkDocs' conversion and building of them and the
    credential scan run in forked workers, one per CPU; set SPARKREPORT_JOBS=N to use N (1: all
    in one process). The site is the same byte for byte either way.
    """
    from sparkreport.cli import LEFT_BEHIND

    meta = click.get_current_context().meta
    meta[LEFT_BEHIND] = lambda: "the previous site is unchanged"
    from sparkreport.project import resolve_project
    from sparkreport.site import build

    project = resolve_project(make_options("build", runs_dir, docs_dir, config_path))
    given = site_dir.resolve() if site_dir is not None else None
    target = project.site_dir(given)
    previous = _folder_identity(target)
    meta[LEFT_BEHIND] = lambda: ("the previous site is unchanged" if _folder_identity(target) == previous
                                 else "the new site is in place")  # the signal came after the swap
    result = build(project, given, strict=strict, builder=builder, full=full)
    for notice in result.render.notices:
        click.echo(f"note: {notice}", err=True)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    reused = f"; {result.converted} converted, {result.reused} reused" if result.reused else ""
    kept = " (only docs/ changed: the data kept)" if result.render.data_kept else ""
    click.echo(f"{len(result.render.pages)} pages, {result.render.chart_count} charts{kept}{reused} → "
               f"{result.site_dir} (open {result.site_dir / 'index.html'}, or serve the folder "
               f"with `python -m http.server -d {result.site_dir}`)")


def _folder_identity(folder: Path) -> tuple[int, int] | None:
    """Which folder ``folder`` is (device, inode), None if there is none: a swap puts another there."""
    try:
        stat = folder.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


@click.command("serve")
@render_options
@click.option("--dev-addr", metavar="IP:PORT", default=None, help="Address to serve on (default 127.0.0.1:8000).")
@click.option("--dirty/--full", default=True, show_default=True,
              help="After a change, rebuild only the pages whose Markdown changed (fast; a page "
                   "added or removed still rebuilds them all), or every page.")
def serve_command(runs_dir: Path, docs_dir: Path | None, config_path: Path | None,
                  dev_addr: str | None, dirty: bool) -> None:
    """Render the pages and preview the site with live reload, re-rendering on every change.

    Watches the hand-written docs/ (posts too), the run store, templates/, sparkreport.yml and
    mkdocs.yml; a change re-renders the pages and the browser reloads. A render error (a post's
    binding, a bad sparkreport.yml) is printed and shown in place of the page it concerns; the
    server keeps running. Ctrl-C stops it.
    """
    from sparkreport.site.serve import serve

    try:
        finished = serve(make_options("serve", runs_dir, docs_dir, config_path), dev_addr, dirty=dirty)
    except KeyboardInterrupt:  # Ctrl-C before the server was up: no traceback, no "Aborted!"
        raise SystemExit(130) from None
    if not finished:  # stopped during a render: end now, not when it ends (the next render completes it)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
