"""A project resolved once: its folders, its ``sparkreport.yml``, the command its pages name.

``render``, ``build`` and ``serve`` start from :class:`~sparkreport.render.RenderOptions` (what
the command line gave: paths that may be relative, a config file that may be absent) and resolve
them here, once, into a :class:`Project` that every step then reads — the early refusal of bad
configuration, the build key, the dataset's load, the analysis, the pages, the builder and the
publishing of the run files. The configuration is read when first asked for and kept: one
build reads and validates ``sparkreport.yml`` once. ``serve`` resolves the project again for
each render, since the file may change while it runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparkreport.cache import AnalysisCache
    from sparkreport.config import ProjectConfig
    from sparkreport.dataset import Dataset
    from sparkreport.render.core import RenderOptions

#: Where ``render`` writes the Markdown when ``--docs-dir`` is not given (under the root).
DEFAULT_DOCS_DIR = Path("build") / "docs"
#: The run store of a project, under its root (``--runs-dir`` when not given).
DEFAULT_RUNS_DIR = Path("runs")


@dataclass
class Project:
    """One project's paths and configuration, resolved (see the module's docstring)."""

    #: What was asked (the key of a build records the options as given).
    options: RenderOptions
    #: The project root: ``--project-root``, else the config file's folder, else the current directory.
    root: Path
    #: The run store read (absolute, links resolved).
    runs_dir: Path
    #: The run store as given under the root (links kept): what the build key walks.
    runs_path: Path
    #: The generated docs folder (``build/docs`` by default).
    docs_dir: Path
    #: The ``sparkreport.yml`` read: given, else the root's when it exists; None: the defaults.
    config_path: Path | None
    #: The command every page's footer names as the way to regenerate it.
    command: str

    @property
    def cache_dir(self) -> Path:
        """``build/cache`` beside the docs folder."""
        from sparkreport.cache import CACHE_DIR

        return self.docs_dir.parent / CACHE_DIR

    @functools.cached_property
    def config(self) -> ProjectConfig:
        """``sparkreport.yml``, read and validated on first use (a one-line ConfigError naming
        the file and key when it is wrong), then kept."""
        from sparkreport.config import ProjectConfig, load_config

        return load_config(self.config_path) if self.config_path is not None else ProjectConfig()

    def site_dir(self, given: Path | None) -> Path:
        """Where a build puts the site: ``given`` (under the root when relative), else ``site/``."""
        from sparkreport.site import DEFAULT_SITE_DIR

        target = given or DEFAULT_SITE_DIR
        return target if target.is_absolute() else self.root / target


def resolve_project(options: RenderOptions | Project) -> Project:
    """``options`` resolved into a :class:`Project` (a project is returned as it is): the root is
    ``project_root``, else the config file's folder, else the current directory; relative paths
    are under the root; the config file is the one given, else the root's ``sparkreport.yml``
    when there is one."""
    if isinstance(options, Project):
        return options
    from sparkreport.config import CONFIG_FILE

    if options.project_root is not None:
        root = options.project_root.resolve()
    elif options.config_path is not None:
        root = options.config_path.resolve().parent
    else:
        root = Path.cwd().resolve()
    config_path = options.config_path
    if config_path is None and (root / CONFIG_FILE).is_file():
        config_path = root / CONFIG_FILE
    runs_path = _under(root, options.runs_dir)
    runs_dir = runs_path.resolve()
    return Project(options=options, root=root, runs_dir=runs_dir, runs_path=runs_path,
                   docs_dir=_under(root, options.docs_dir or DEFAULT_DOCS_DIR).resolve(), config_path=config_path,
                   command=options.command or default_command(root, runs_dir))


def kept_build_cache(runs_dir: Path, config_path: Path | None = None) -> Path | None:
    """The build cache (``build/cache``) that a command reading the run store (``dataset``,
    ``stats``, ``compare``, ``check``, ``diff``, ``history``) loads it through: every run.json's
    validated record and each campaign's rows, as the project's builds keep them, so that a CI
    gate after a build — or after the last such command — reads only the runs that changed
    (~0.7 s instead of ~3.5 s at 10 000 runs, bench/README.md). The project is found as
    ``build`` finds it: ``config_path``'s folder, else the current directory. None — the store
    read as it is, nothing written — unless a build made that folder (a command does not start
    ``build/`` in a project never built), it can be written, and ``runs_dir`` is the project's
    own store (``runs/`` under the root: one cache follows one store; what it keeps is keyed by
    the files' contents, so it is never wrong, only of no use for another store)."""
    import os

    from sparkreport.cache import CACHE_DIR

    root = store_root(config_path)
    cache = root / DEFAULT_DOCS_DIR.parent / CACHE_DIR
    if not cache.is_dir() or not os.access(cache, os.W_OK | os.X_OK):
        return None
    return cache if is_project_store(runs_dir, root) else None


def store_root(config_path: Path | None) -> Path:
    """The project a command reading the run store works in: ``config_path``'s folder, else the
    current directory (as ``build`` finds it without ``--project-root``)."""
    return config_path.resolve().parent if config_path is not None else Path.cwd().resolve()


def is_project_store(runs_dir: Path, root: Path) -> bool:
    """Whether ``runs_dir`` is the project's own run store, ``runs/`` under ``root``."""
    return runs_dir.resolve() == (root / "runs").resolve()


def read_store(runs_dir: Path, config_path: Path | None = None) -> Dataset:
    """The run store's dataset, through the build's record cache where there is one
    (:func:`kept_build_cache`)."""
    from sparkreport.dataset import load_dataset

    return load_dataset(runs_dir, cache_dir=kept_build_cache(runs_dir, config_path))


def store_analysis(runs_dir: Path, config_path: Path | None = None) -> AnalysisCache | None:
    """The build's analysis cache for a command reading ``runs_dir`` (None where
    :func:`kept_build_cache` is); the command ends with :func:`keep_analysis`."""
    from sparkreport.cache import analysis_cache

    return analysis_cache(kept_build_cache(runs_dir, config_path))


def keep_analysis(cache: AnalysisCache | None) -> None:
    """What a command computed, added to the build's analysis cache: nothing the build keeps is
    forgotten because a command asked with other options (the next build trims the extras)."""
    if cache is not None:
        cache.save(forget=False)


def default_command(root: Path, runs_dir: Path) -> str:
    """'sparkreport build --runs-dir runs' with the runs dir relative to the project."""
    try:
        shown = runs_dir.relative_to(root).as_posix()
    except ValueError:
        shown = str(runs_dir)
    return f"sparkreport build --runs-dir {shown}"


def _under(root: Path, path: Path) -> Path:
    return path if path.is_absolute() else root / path
