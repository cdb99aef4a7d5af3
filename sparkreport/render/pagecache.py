"""Per-page cache keys: a generated page whose inputs did not change is neither filled nor rewritten.

Each planned document (:class:`~sparkreport.render.pages.PageDoc`) gets a key, the sha256 of:

* the page (registry name, path, title, template, scope, banner, footer kind);
* its template and every template it includes or extends, as the loader finds them (a
  project's ``templates/`` first, so an override counts);
* the runs it reads (``inputs``: :meth:`Dataset.digest_of` over their run.json digests; every
  run for a page that reads everything) and anything else it reads (``also_reads``: the
  analysis rows it shows, a campaign file, a diff's selectors);
* the findings that concern it (those about its runs and those about no run — only the
  error-level ones, with the warnings a Results page names, or none, for a page that shows no
  other (``PageDoc.reads_findings``) — and its banner's);
* ``sparkreport.yml``, the sparkreport package itself (code and packaged templates), the run
  store's and project's paths and the command printed in the footer, and every campaign's
  title and description (a campaign file kept beside the runs gives them, and any page may
  name a campaign); for the pages whose footer names the whole dataset, the dataset digest and
  the project commit.

The keys and the files each page wrote are kept in ``build/cache/pages.json``. A render fills
and writes only the pages whose key changed or whose files are missing from the docs folder;
the others keep their files, untouched (mtime included).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    import jinja2

    from sparkreport.render.context import SiteData
    from sparkreport.render.pages import PageDoc

PAGES_FILE = "pages.json"
#: The templates' includes, beside their compiled code (see :meth:`PageKeys.template_digest`).
INCLUDES_FILE = "includes.json"
#: Bump when what a key covers changes: every page is then rendered once more.
PAGES_VERSION = 1


@dataclass
class CachedPage:
    """What the last render wrote for one document: its key, its files and its charts."""

    key: str
    files: list[str]
    #: (name, title, description, rows) of each chart, for posts that show one and the result.
    charts: list[list[Any]] = field(default_factory=list)
    #: Seconds its fill and write took when it was last written (0: not measured): the next
    #: render hands the workers the longest pages first (:func:`~sparkreport.render.core.fill_and_write`).
    seconds: float = 0.0


class PageCache:
    """``build/cache/pages.json``: the key and files of every page of the last good render."""

    def __init__(self, cache_dir: Path | None):
        self.path = cache_dir / PAGES_FILE if cache_dir is not None else None
        self.pages: dict[str, CachedPage] = {}
        #: Whether the last render drew static SVG fallbacks for every chart (None: unknown).
        self.static: bool | None = None
        if self.path is None or not self.path.is_file():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("version") == PAGES_VERSION:
                self.static = bool(data["static"])
                self.pages = {path: CachedPage(**entry) for path, entry in data["pages"].items()}
        except (OSError, ValueError, KeyError, TypeError):
            self.pages, self.static = {}, None

    def lookup(self, path: str, key: str, docs_dir: Path) -> CachedPage | None:
        """The cached page at ``path`` when its key is ``key`` and its files are all still there."""
        entry = self.pages.get(path)
        if entry is None or entry.key != key:
            return None
        if not all((docs_dir / name).is_file() for name in entry.files):
            return None  # a generated file was deleted: write the page again
        return entry

    def forget(self) -> None:
        """Drop the file before the docs folder changes: a render cut short leaves no stale keys."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def drop(self, path: str) -> None:
        """Forget the page at ``path`` (its file is about to hold something else: ``serve``'s
        error page), so that the next render writes it again rather than keeping it."""
        if self.path is None or self.static is None or self.pages.pop(path, None) is None:
            return
        self.save(self.pages, self.static)

    def save(self, pages: dict[str, CachedPage], static: bool) -> None:
        from sparkreport.cache import _atomic_bytes

        if self.path is None:
            return
        data = {"version": PAGES_VERSION, "static": static,
                "pages": {path: vars(entry) for path, entry in sorted(pages.items())}}
        _atomic_bytes(self.path, json.dumps(data, indent=0, sort_keys=True).encode())


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


class PageKeys:
    """Computes each planned document's key and the provenance its footer prints."""

    def __init__(self, site: SiteData, env: jinja2.Environment, base: list[tuple[str, str]],
                 includes_file: Path | None = None):
        from sparkreport.cache import inputs_digest

        self.site = site
        self.env = env
        #: Each template source's includes, by the source's sha256 (:meth:`template_digest`),
        #: kept in ``includes_file`` between renders: parsing twenty templates for them was a
        #: tenth of a second of every render.
        self.includes_file = includes_file
        self._includes: dict[str, list[str]] = _read_includes(includes_file)
        self._includes_read = set(self._includes)
        self._includes_used: set[str] = set()
        self.base = inputs_digest([("pages", str(PAGES_VERSION)), *base])
        self._templates: dict[str, str] = {}
        #: Whether a template and everything it includes come from the package (not overridden).
        self._packaged: dict[str, bool] = {}
        dataset = site.dataset
        keys = dataset.record_keys()
        self.summary_ids = {r.run_id for r in keys if r.record_type == "arm_summary"}
        self.all_ids = [r.run_id for r in keys]
        self.all_digest = dataset.digest_of(self.all_ids)
        self._inputs_digests: dict[str, str] = {}
        # each finding once, as a digest; indexed by the runs it names
        self.finding_digests = [f.digest for f in site.findings]
        self.by_run: dict[str, list[int]] = {}
        self.unscoped: list[int] = []
        for i, finding in enumerate(site.findings):
            if not finding.runs:
                self.unscoped.append(i)
            for run in finding.runs:
                self.by_run.setdefault(run, []).append(i)
        self.all_findings = _sha("\n".join(self.finding_digests))
        self._error_index = {id(f): i for i, f in enumerate(site.findings)}

    def template_digest(self, name: str, seen: frozenset[str] = frozenset()) -> str:
        """The template's source and, recursively, every template it extends, includes or imports."""
        import jinja2
        from jinja2 import meta

        from sparkreport.render.markdown import PACKAGE_TEMPLATES

        if name in self._templates:
            return self._templates[name]
        if name in seen:
            return "cycle"
        try:
            source, filename, _uptodate = (self.env.loader.get_source(self.env, name) if self.env.loader
                                           else ("", None, None))
            source_key = _sha(f"{name}\0{source}")
            referenced = self._includes.get(source_key)
            if referenced is None:
                referenced = sorted(r for r in meta.find_referenced_templates(self.env.parse(source)) if r)
                self._includes[source_key] = referenced
            self._includes_used.add(source_key)
        except jinja2.TemplateError:
            self._packaged[name] = False
            return "unreadable"  # the render itself reports it, with its line
        parts = [name, source] + [self.template_digest(r, seen | {name}) for r in referenced]
        self._packaged[name] = (filename is not None and Path(filename).parent == PACKAGE_TEMPLATES
                                and all(self._packaged.get(r, False) for r in referenced))
        self._templates[name] = digest = _sha("\0".join(parts))
        return digest

    def save_includes(self) -> None:
        """Keep the includes of the templates this render read, and only those (an edited
        template's older sources are dropped); best effort: the file is an aid."""
        if self.includes_file is None or self._includes_read == self._includes_used:
            return
        from sparkreport.cache import _atomic_bytes

        kept = {key: self._includes[key] for key in sorted(self._includes_used)}
        with contextlib.suppress(OSError):
            _atomic_bytes(self.includes_file, json.dumps(kept, sort_keys=True).encode())

    def packaged(self, name: str) -> bool:
        """Whether template ``name`` and every template it includes are the package's own."""
        self.template_digest(name)
        return self._packaged.get(name, False)

    def footer(self, doc: PageDoc) -> dict[str, Any] | None:
        """What the page's footer says it was built from (None: the whole dataset's line)."""
        if doc.site_footer:
            return None
        ids = self.all_ids if doc.inputs is None else doc.inputs
        # (most pages read no published arm: a set's C test says so without a loop over 10 000 runs)
        summaries = 0 if self.summary_ids.isdisjoint(ids) else sum(run in self.summary_ids for run in ids)
        return {"runs": len(ids) - summaries, "summaries": summaries, "sha256": self.inputs_digest(doc)}

    def inputs_digest(self, doc: PageDoc) -> str:
        """The digest of the runs the document reads (its footer's and its key's: made once)."""
        if doc.inputs is None:
            return self.all_digest
        found = self._inputs_digests.get(doc.path)
        if found is None:
            found = self._inputs_digests[doc.path] = self.site.dataset.digest_of(doc.inputs)
        return found

    def findings_digest(self, doc: PageDoc) -> str:
        if doc.inputs is None:
            return self.all_findings
        from sparkreport.render.report import errors_in

        reads = doc.reads_findings if self.packaged(doc.template) else "all"
        found: set[int] = set()
        if reads != "none":
            found.update(self.unscoped)
            by_run = self.by_run  # (the runs it reads that have findings, in one update)
            found.update(*[by_run[run] for run in by_run.keys() & doc.inputs])
            if reads in ("errors", "caveats"):
                from sparkreport.analysis.checks import READ_WITH_CARE

                findings = self.site.findings
                found = {i for i in found if findings[i].severity == "error"
                         or (reads == "caveats" and findings[i].code in READ_WITH_CARE)}
        if doc.banner:
            found.update(self._error_index[id(f)] for f in errors_in(self.site, doc.scope))
        return _sha("\n".join(self.finding_digests[i] for i in sorted(found)))

    def key(self, page_name: str, doc: PageDoc, footer: dict[str, Any] | None) -> str:
        """The document's key: equal keys render equal bytes."""
        provenance = self.site.provenance
        parts = {
            "base": self.base, "page": page_name, "path": doc.path, "title": doc.title,
            "template": self.template_digest(doc.template), "scope": doc.scope, "banner": doc.banner,
            "inputs": self.inputs_digest(doc),
            "also_reads": doc.also_reads, "findings": self.findings_digest(doc), "footer": footer,
            "site": ([provenance.dataset_sha256, provenance.run_count, provenance.summary_count,
                      provenance.git_commit] if doc.site_footer else None),
        }
        return _sha(json.dumps(parts, sort_keys=True, default=str))


def _read_includes(path: Path | None) -> dict[str, list[str]]:
    """What :meth:`PageKeys.save_includes` kept; {} when missing or damaged."""
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in data.items()
            if isinstance(value, list) and all(isinstance(name, str) for name in value)}


class KeptRows:
    """Parts of a page that span many pages (the Results overview's row of each model), kept in
    the build's cache (``build/cache/<name>.pickle``) by the key of the page each part is read
    from and what else names it: a part whose page's key is unchanged shows what it showed, and
    is not made again (at 10 000 runs the overview's ten models' rows were 0.13 s of each new
    run's build). Written by the process that fills the page (only parts asked for this time are
    kept); outside a build (no cache, or a page without a key) every part is made."""

    def __init__(self, site: SiteData, name: str):
        from sparkreport.cache import read_cache_pickle

        memo = site.hash_memo
        self.path = memo.path.parent / f"{name}.pickle" if memo is not None and memo.path is not None else None
        self.kept: dict[str, Any] = read_cache_pickle(self.path, "", "parts")
        self.used: dict[str, Any] = {}
        self.made = 0

    def get_or(self, names: list[str], make: Callable[[], Any]) -> Any:
        """The part named by ``names`` (the first: its page's key), kept or made now."""
        if self.path is None or not names or not names[0]:
            return make()
        from sparkreport.cache import inputs_digest

        key = inputs_digest([("part", name) for name in names])
        if key not in self.kept:
            self.kept[key] = make()
            self.made += 1
        self.used[key] = self.kept[key]
        return self.used[key]

    def save(self) -> None:
        from sparkreport.cache import write_cache_pickle

        if self.path is not None and (self.made or self.used.keys() != self.kept.keys()):
            write_cache_pickle(self.path, "", "parts", self.used)
            self.kept, self.made = dict(self.used), 0
