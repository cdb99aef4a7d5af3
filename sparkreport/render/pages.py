"""Generated pages: one small class per page, in a registry.

A page class names its template and its place in the nav, and turns the site data into one
or more :class:`PageDoc` (Results writes one document per model). Built-in pages register
the same way an extension would: decorate a :class:`Page` subclass with :func:`register`.
Each document lives at ``<folder>/index.md`` (Home at ``index.md``), its charts and files
beside it, so relative links work with and without directory URLs.

A page works in two steps. ``docs()`` *plans* its documents, cheaply: path, title, template,
and what each reads (``inputs``: the run ids, None for every run; ``also_reads``: anything else,
as text or digests). ``PageDoc.fill`` then computes the context and the charts, the expensive
part. ``render`` calls ``fill`` only for a document whose inputs changed since the last render
(:mod:`sparkreport.render.pagecache`); the others are neither filled nor rewritten.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

if TYPE_CHECKING:
    from sparkreport.charts import ChartSpec
    from sparkreport.render.context import SiteData

#: A nav entry: ``(title, "path/index.md")`` or ``(title, [children])``.
NavItem = tuple[str, "str | list[NavItem]"]


@dataclass
class PageDoc:
    """One generated Markdown file: where it goes, its title, template, context and charts."""

    path: str
    title: str
    template: str
    context: dict[str, Any] = field(default_factory=dict)
    charts: list[ChartSpec] = field(default_factory=list)
    #: The (campaign, model) pairs the page reports on: the warning banner counts only the
    #: error findings that concern them. None: the whole site (the home page).
    scope: list[tuple[str, str]] | None = None
    #: False for pages whose numbers no finding can change (Methodology, Runs, Downloads).
    banner: bool = True
    #: The run ids (published arms included) the page reads; None: every run in the store.
    inputs: list[str] | None = None
    #: Anything else the page reads, as text or digests (analysis rows, a campaign file, …).
    also_reads: list[str] = field(default_factory=list)
    #: Which findings about its runs (and about no run) the page shows: ``"all"``, only the
    #: ``"errors"``, the errors and the warnings a reader of its figures needs (``"caveats"``, a
    #: Results page: its claims and banner, and its "Read with care" box of the warnings in
    #: :data:`~sparkreport.analysis.checks.READ_WITH_CARE`), or ``"none"`` (a Runs campaign page,
    #: whose rows carry each run's inclusion in ``also_reads``). A page whose template (or one it
    #: includes) a project overrides is keyed by ``"all"``: its template may read any finding.
    reads_findings: Literal["all", "errors", "caveats", "none"] = "all"
    #: Files written besides the Markdown and the charts (relative to the docs folder).
    files: list[str] = field(default_factory=list)
    #: Computes ``context`` and ``charts`` (the expensive part); None once filled.
    fill: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    #: The footer names the whole dataset and the project commit (Home, Methodology, Downloads)
    #: rather than the page's own inputs.
    site_footer: bool = False
    #: Seconds its fill and write took in this render (0 until written), which the page cache keeps.
    seconds: float = 0.0
    #: Its key in this render (:meth:`~sparkreport.render.pagecache.PageKeys.key`: a digest of
    #: everything it reads), set before any page is filled; "" outside a render. A page that
    #: shows part of another's content may keep that part by the other's key.
    key: str = ""

    @property
    def folder(self) -> str:
        """The page's folder inside the docs dir ('' for the home page)."""
        return posixpath.dirname(self.path)

    def href(self, target: str) -> str:
        """A Markdown link from this page to ``target`` (a path inside the docs dir)."""
        return posixpath.relpath(target, self.folder or ".")


class Page:
    """Base class of a generated page; subclasses set the class attributes and context."""

    #: Registry key (also the CLI/config name of the page).
    name: ClassVar[str] = ""
    #: Nav title.
    title: ClassVar[str] = ""
    #: Template file name (looked up in the project's templates/ first).
    template: ClassVar[str] = ""
    #: Folder inside the docs dir; '' for the home page.
    folder: ClassVar[str] = ""
    #: Position in the nav (lower first).
    order: ClassVar[int] = 100
    #: Whether the page shows the warning banner of the error findings that concern it.
    banner: ClassVar[bool] = True
    #: Whether the footer names the whole dataset (pages that read every run and describe it).
    site_footer: ClassVar[bool] = False

    @property
    def path(self) -> str:
        """Where the page's Markdown goes, relative to the docs dir."""
        return f"{self.folder}/index.md" if self.folder else "index.md"

    def docs(self, site: SiteData, out: Path) -> list[PageDoc]:
        """The documents this page writes, planned (``fill`` set); ``out`` is the docs dir (for
        files it ships). By default one document that reads every run."""
        doc = PageDoc(self.path, self.title, self.template, banner=self.banner, site_footer=self.site_footer)

        def fill() -> None:
            doc.context = self.context(site, doc, out)
            doc.charts = self.charts(site, doc)

        doc.fill = fill
        return [doc]

    def context(self, site: SiteData, doc: PageDoc, out: Path) -> dict[str, Any]:
        """Template variables beyond the shared ones (``site``, ``page``, ``provenance``)."""
        return {}

    def charts(self, site: SiteData, doc: PageDoc) -> list[ChartSpec]:
        """Charts written beside the page (``charts/<name>.vl.json`` and ``.svg``)."""
        return []

    def nav(self, docs: list[PageDoc]) -> NavItem:
        """This page's nav entry: a link, or a section when it wrote several documents."""
        if len(docs) == 1:
            return (self.title, docs[0].path)
        return (self.title, [(doc.title, doc.path) for doc in docs])


PAGES: dict[str, type[Page]] = {}
P = TypeVar("P", bound=type[Page])


def register(cls: P) -> P:
    """Class decorator: add a page to the registry under ``cls.name``."""
    if not cls.name or not cls.template:
        raise TypeError(f"{cls.__name__} needs a name and a template")
    PAGES[cls.name] = cls
    return cls


def fill(doc: PageDoc) -> PageDoc:
    """Compute a planned document's context and charts (once)."""
    if doc.fill is not None:
        doc.fill()
        doc.fill = None
    return doc


#: The modules of the built-in pages: imported once by :func:`registered_pages`, where they
#: register themselves as an extension would (none of them imports another to register it).
BUILTIN_MODULES = ("builtin", "results", "memory", "diffs", "history", "runs_index")


def registered_pages() -> list[Page]:
    """Instances of every registered page (built-ins included), in nav order."""
    import importlib

    for module in BUILTIN_MODULES:
        importlib.import_module(f"sparkreport.render.{module}")
    return [cls() for cls in sorted(PAGES.values(), key=lambda c: (c.order, c.name))]
