"""The MkDocs plugin that reuses the previous site's unchanged files (:mod:`sparkreport.site.reuse`
says how): apart from the record a build keeps, so that a build's own process, which only
loads and saves that record, does not import MkDocs' plugin machinery."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

from sparkreport.site.reuse import SEARCH_INDEX, Reuse, blog_roots, why_not_reused


def _digest(*parts: object) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _untitled(nav: Any) -> bool:
    """True when a nav entry takes its title from its page (a bare path)."""
    if isinstance(nav, str):
        return True
    if isinstance(nav, list):
        return any(_untitled(item) for item in nav)
    if isinstance(nav, dict):
        return any(isinstance(value, list) and _untitled(value) for value in nav.values())
    return False


def _page_url(url: str) -> str:
    """A file's URL as its page (and the search index) spells it: the home page is ''."""
    return "" if url in (".", "./") else url


def _make_folder(folder: str) -> None:
    """``os.makedirs(folder, exist_ok=True)``, in one system call where the parent exists (the
    new site's page folders, made in the files' order: their parents first)."""
    try:
        os.mkdir(folder)
    except FileExistsError:
        if not os.path.isdir(folder):
            raise
    except FileNotFoundError:
        os.makedirs(folder, exist_ok=True)


#: The theme's pages MkDocs renders on every build that depend on the shell alone (the config,
#: its nav and titles, the theme): Material's 404 page is the nav and the site's frame around a
#: fixed message. The sitemap is not one: it dates every page by the build.
SHELL_PAGES = ("404.html",)


class ReusePlugin:
    """Registered by :func:`sparkreport.site.mkdocs_site.build_site`; see the module docstring."""

    def __init__(self, reuse: Reuse) -> None:
        self.reuse = reuse
        self.site_dir = Path()
        self.order: dict[str, int] = {}
        self.linked_pages: set[str] = set()
        self.outputs: list[str] = []
        #: The theme's pages (:data:`SHELL_PAGES`) linked from the previous site, which MkDocs
        #: then does not render (its ``static_templates``, given back after the build).
        self.shell_pages: list[str] = []

    def _eligible(self, config: Any) -> str:
        """'' when this project's site may be reused, else the reason it may not."""
        if _untitled(config.nav):
            return "a nav entry without a title"
        return why_not_reused(config)

    @event_priority(-100)  # after the blog plugin has placed its files
    def on_files(self, files: Any, *, config: Any) -> Any:
        reuse = self.reuse
        self.site_dir = Path(config.site_dir)
        self.outputs = [file.dest_uri for file in files if file.generated_by is None and file.abs_src_path is not None]
        self.outputs += [name for name in SHELL_PAGES if name in config.theme.static_templates]
        why_not = self._eligible(config)
        # Every page, whatever its inclusion now (the blog plugin excludes posts until on_nav).
        pages = sorted(file.src_uri for file in files.documentation_pages(inclusion=lambda _level: True))
        reuse.key = None if why_not else _digest(reuse.shell, pages)
        made: set[str] = set()  # folders made in the new site (one mkdir each, not one a file)
        if why_not:
            return files  # convert and copy everything
        if reuse.previous is not None and reuse.key == reuse.previous_key:
            self._link_previous(files, config, made)
            self._link_shell_pages(config)
        self._link_assets(files, config, made)
        return files

    def _link_shell_pages(self, config: Any) -> None:
        """Hard-link the previous site's theme pages that depend on the shell alone
        (:data:`SHELL_PAGES`: the shell is the same, so is their output) as the last build wrote
        them, and leave them out of what MkDocs renders (~6–10 ms of a new run's build at 10 000
        runs, its nav of every page rendered once more)."""
        reuse = self.reuse
        assert reuse.previous is not None
        for name in SHELL_PAGES:
            if name not in config.theme.static_templates:
                continue
            before = reuse.previous / name
            try:
                found = os.stat(before)
            except OSError:
                continue
            if reuse.previous_files.get(name) != [found.st_size, found.st_mtime_ns]:
                continue  # not as the last build wrote it
            os.link(before, self.site_dir / name)
            config.theme.static_templates.discard(name)
            self.shell_pages.append(name)

    def _link_previous(self, files: Any, config: Any, made: set[str]) -> None:
        """Hard-link into the new site the previous site's output of every file MkDocs would
        find unmodified (see the module docstring)."""
        reuse = self.reuse
        assert reuse.previous is not None
        blog = tuple(f"{root}/" for root in blog_roots(config))
        previous = os.path.join(reuse.previous, "")  # (plain strings: ~700 files at 10 000 runs)
        recorded = reuse.previous_files
        for file in files:
            if file.generated_by is not None or file.abs_src_path is None:
                continue
            dest_uri = file.dest_uri
            if blog and (file.src_uri.startswith(blog) or dest_uri.startswith(blog)):
                continue
            before = previous + dest_uri
            try:
                found = os.stat(before)
                if found.st_mtime < os.stat(file.abs_src_path).st_mtime:
                    continue  # MkDocs' own test for a modified file (File.is_modified)
            except OSError:
                continue
            if recorded.get(dest_uri) != [found.st_size, found.st_mtime_ns]:
                continue  # not as the last build wrote it
            target = file.abs_dest_path
            folder = os.path.dirname(target)
            if folder not in made:
                _make_folder(folder)
                made.add(folder)
            os.link(before, target)
            if file.is_documentation_page():
                self.linked_pages.add(_page_url(file.url))

    @staticmethod
    def _link_assets(files: Any, config: Any, made: set[str]) -> None:
        """Hard-link, instead of MkDocs' copy, each file of the docs folder that MkDocs would
        copy as it is — an included file that is not a page (a chart's spec, the Downloads page's
        data: 24 files and ~23 ms of every new run's build at 10 000 runs, the cold build's ~550
        charts); never an excluded one (a dot-file: MkDocs leaves it out). The link has the
        source's mtime, so MkDocs finds it unmodified and leaves it. Safe because nothing writes a
        file of the generated docs folder in place (a render moves new files over, by rename) and
        MkDocs writes an asset only when it is modified; where a link cannot be made (another
        file system), MkDocs copies it."""
        docs = os.path.join(os.path.normpath(os.path.abspath(config.docs_dir)), "")
        for file in files:
            if file.is_documentation_page() or not file.inclusion.is_included() or file.generated_by is not None \
                    or file.abs_src_path is None or getattr(file, "_content", None) is not None \
                    or not file.abs_src_path.startswith(docs):
                continue  # (content set by a plugin: MkDocs writes that)
            folder = os.path.dirname(file.abs_dest_path)
            try:
                if folder not in made:
                    _make_folder(folder)
                    made.add(folder)
                os.link(file.abs_src_path, file.abs_dest_path)
            except OSError:  # linked from the previous site already (FileExistsError), or no link here
                continue

    @event_priority(-100)  # after the nav: every page MkDocs will build, in its order
    def on_env(self, env: Any, *, config: Any, files: Any) -> Any:
        from mkdocs.structure.files import InclusionLevel

        built = [_page_url(file.url) for file in files.documentation_pages(inclusion=InclusionLevel.is_included)]
        self.order = {url: index for index, url in enumerate(built)}
        self.reuse.reused = len(self.linked_pages & self.order.keys())
        self.reuse.converted = len(built) - self.reuse.reused
        return env

    @event_priority(-100)  # after the search plugin wrote the entries of the pages it converted
    def on_post_build(self, *, config: Any) -> None:
        config.theme.static_templates.update(self.shell_pages)  # (the theme as it was loaded)
        self._merge_search_index()
        for dest in self.outputs:  # what this build wrote, as it wrote it (for the next build)
            try:
                found = os.stat(self.site_dir / dest)
            except OSError:
                continue
            self.reuse.files[dest] = [found.st_size, found.st_mtime_ns]

    def _merge_search_index(self) -> None:
        if not self.linked_pages or self.reuse.previous is None:
            return
        path = self.site_dir / SEARCH_INDEX
        before = self.reuse.previous / SEARCH_INDEX
        if not path.is_file() or not before.is_file():
            return
        new = json.loads(path.read_text(encoding="utf-8"))
        old = json.loads(before.read_text(encoding="utf-8"))
        kept = [entry for entry in old.get("docs", [])
                if str(entry.get("location", "")).split("#", 1)[0] in self.linked_pages]
        docs = kept + list(new.get("docs", []))
        last = len(self.order)
        docs.sort(key=lambda entry: self.order.get(str(entry.get("location", "")).split("#", 1)[0], last))
        new["docs"] = docs
        # The search plugin's own serialisation, so the file equals a full build's.
        text = json.dumps(new, separators=(",", ":"), default=str)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
