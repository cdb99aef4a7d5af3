"""The static-site builders, one small class each, chosen by ``builder:`` in sparkreport.yml.

A builder turns the generated config (``build/mkdocs.yml``, written by
:mod:`sparkreport.site.mkdocs_site`) and the rendered docs folder into HTML in a folder it is
given, and serves them for ``sparkreport serve``. Everything else a site needs (the runs' files,
the blog feed, inert titles, the publish-time scan) is our own code around the builder, so the
builders produce the same site:

* ``mkdocs`` — MkDocs 1.x with Material for MkDocs, through MkDocs' Python API. MkDocs 1.x is
  unmaintained and Material is maintained only until May 2027.
* ``zensical`` — Zensical (by Material's authors; a Rust core), run as ``python -m zensical`` on
  the same generated config. It requires its ``site_dir`` inside the config's folder and keeps a
  cache in ``.cache/`` there, so it gets a sibling config (``zensical.yml``) whose site_dir is
  ``.zensical-site``, and the result is moved into the folder asked for. Material's look is kept
  (``theme.variant: classic``) unless the project's mkdocs.yml chooses a variant.

Third-party builders register the same way (:func:`register_builder`).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import yaml

from sparkreport.errors import BuildError

if TYPE_CHECKING:
    from sparkreport.parallel import Standby
    from sparkreport.site.reuse import Reuse, ReusePlan


class Builder:
    """One static-site builder. ``build`` returns its warnings (with ``strict``, a warning fails
    the build: BuildError naming the first); any failure is a one-line BuildError."""

    name: ClassVar[str]
    #: A line for the docs and ``--help``.
    description: ClassVar[str]

    #: Whether :meth:`build` can reuse the unchanged part of the previous site.
    reuses: ClassVar[bool] = False

    def build(self, config_file: Path, out_dir: Path, strict: bool, reuse: Reuse | None = None) -> list[str]:
        """Build into the empty ``out_dir``; with ``reuse`` (builders that ``reuses``), link what
        did not change from the previous site (:mod:`sparkreport.site.reuse`)."""
        raise NotImplementedError

    def standby(self, previous_config: Path) -> Standby[BuildArguments, tuple[list[str], Reuse | None]] | None:
        """A process that builds as :meth:`build` does, forked before the render (None: the
        build calls :meth:`build` itself). ``previous_config``: the last build's config."""
        return None

    def serve(self, config_file: Path, dev_addr: str | None = None) -> None:
        raise NotImplementedError


BUILDERS: dict[str, type[Builder]] = {}
DEFAULT_BUILDER = "mkdocs"


def register_builder(cls: type[Builder]) -> type[Builder]:
    """Class decorator: make a builder selectable by its ``name``."""
    BUILDERS[cls.name] = cls
    return cls


def get_builder(name: str | None) -> Builder:
    """The builder called ``name`` (None: :data:`DEFAULT_BUILDER`)."""
    cls = BUILDERS.get(name or DEFAULT_BUILDER)
    if cls is None:
        raise BuildError(f"unknown builder {name!r} — use one of {', '.join(BUILDERS)}")
    return cls()


@register_builder
class MkDocsBuilder(Builder):
    name = "mkdocs"
    description = "MkDocs 1.x with Material for MkDocs (Python)"
    reuses = True

    def build(self, config_file: Path, out_dir: Path, strict: bool, reuse: Reuse | None = None) -> list[str]:
        from sparkreport.site.mkdocs_site import build_site

        return build_site(config_file, strict=strict, site_dir=out_dir, reuse=reuse)

    def standby(self, previous_config: Path) -> Standby[BuildArguments, tuple[list[str], Reuse | None]] | None:
        """This builder in a process forked now (:class:`~sparkreport.parallel.Standby`): woken
        while the render plans its pages, it imports MkDocs and loads ``previous_config`` (the
        last build's), and then builds as :meth:`build` does — returning the warnings and the
        ``reuse`` it filled in (where no worker may be forked, the build runs here, unwarmed)."""
        from sparkreport.parallel import Standby

        return Standby(functools.partial(_warm_mkdocs, previous_config), build_reusing)

    def serve(self, config_file: Path, dev_addr: str | None = None) -> None:
        from sparkreport.site.mkdocs_site import mkdocs_serve

        mkdocs_serve(config_file, dev_addr)


#: What a standby builder is handed: the config, the folder to build into, strict, where to find
#: what it may reuse (None: nothing).
BuildArguments = tuple[Path, Path, bool, "ReusePlan | None"]


def _warm_mkdocs(previous_config: Path) -> None:
    from sparkreport.site.incremental import warm_versions
    from sparkreport.site.mkdocs_site import warm_up

    warm_up(previous_config)
    warm_versions()


def build_reusing(arguments: BuildArguments) -> tuple[list[str], Reuse | None]:
    """:meth:`MkDocsBuilder.build` with what the plan lets it reuse (:meth:`Reuse.taken`, read
    here: in a build's standby process, after its warm-up): the warnings, and the reuse as the
    build left it (what it converted and reused: the build's process saves it)."""
    from sparkreport.site.reuse import Reuse

    config_file, out_dir, strict, plan = arguments
    reuse = Reuse.taken(plan, config_file, strict) if plan is not None else None
    return MkDocsBuilder().build(config_file, out_dir, strict, reuse=reuse), reuse


#: Zensical's own folders beside the config it reads.
ZENSICAL_CONFIG = "zensical.yml"
ZENSICAL_SITE = ".zensical-site"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ISSUE = re.compile(r"^(Warning|Error):\s*(.*)$")
_WHERE = re.compile(r"\[\s*(\S+?)\s*\]\s*$")


@register_builder
class ZensicalBuilder(Builder):
    name = "zensical"
    description = "Zensical, by Material's authors (Rust core; the same config and theme)"

    def config_for(self, config_file: Path, site_dir: str = ZENSICAL_SITE) -> Path:
        """Zensical's copy of the generated config: its site_dir inside the config's folder and
        Material's classic look unless the project picked a variant."""
        data = yaml.safe_load(config_file.read_text(encoding="utf-8")) or {}
        data["site_dir"] = site_dir
        theme = data.setdefault("theme", {})
        if isinstance(theme, dict) and "variant" not in theme and not _project_sets_variant(config_file, data):
            theme["variant"] = "classic"
        path = config_file.with_name(ZENSICAL_CONFIG)
        text = config_file.read_text(encoding="utf-8").split("\n", 1)[0] + "\n"
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text + yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
        os.replace(tmp, path)
        return path

    def build(self, config_file: Path, out_dir: Path, strict: bool, reuse: Reuse | None = None) -> list[str]:
        config = self.config_for(config_file)
        built = config.parent / ZENSICAL_SITE
        shutil.rmtree(built, ignore_errors=True)
        command = [sys.executable, "-m", "zensical", "build", "-f", str(config)]
        if strict:
            command.append("--strict")
        try:
            proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"},
                                  check=False)
        except OSError as exc:
            raise BuildError(f"{config}: zensical could not start ({exc}) — pip install zensical") from None
        warnings = zensical_issues(proc.stdout + "\n" + proc.stderr)
        if proc.returncode != 0 or not (built / "index.html").is_file():
            if warnings:
                problem = f"{len(warnings)} warning(s) in strict mode, first: {warnings[0]}" if strict \
                    else warnings[0]
            else:
                problem = _last_line(proc.stderr) or f"exit status {proc.returncode}"
            if "No module named zensical" in proc.stderr:
                problem += " — pip install zensical, or set builder: mkdocs"
            shutil.rmtree(built, ignore_errors=True)
            raise BuildError(f"{config_file}: zensical build failed: {problem}")
        _move_into(built, out_dir)
        return warnings

    def serve(self, config_file: Path, dev_addr: str | None = None) -> None:
        config = self.config_for(config_file)
        command = [sys.executable, "-m", "zensical", "serve", "-f", str(config)]
        if dev_addr:
            command += ["--dev-addr", dev_addr]
        try:
            subprocess.run(command, check=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise BuildError(f"{config}: zensical serve failed ({exc})") from None


def _project_sets_variant(config_file: Path, data: dict[str, object]) -> bool:
    inherit = data.get("INHERIT")
    if not isinstance(inherit, str):
        return False
    from sparkreport.site.mkdocs_site import read_project_config

    theme = read_project_config(config_file.parent / inherit).get("theme")
    return isinstance(theme, dict) and "variant" in theme


def zensical_issues(output: str) -> list[str]:
    """Zensical's warnings and errors as one line each: ``docs/page.md:108:10: page does not exist``."""
    lines = [_ANSI.sub("", line).rstrip() for line in output.splitlines()]
    out: list[str] = []
    for index, line in enumerate(lines):
        match = _ISSUE.match(line.strip())
        if not match:
            continue
        where = ""
        for after in lines[index + 1:index + 3]:
            found = _WHERE.search(after)
            if found:
                where = found.group(1) + ": "
                break
        out.append(f"{where}{' '.join(match.group(2).split())}")
    return out


def _last_line(text: str) -> str:
    lines = [_ANSI.sub("", line).strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _move_into(built: Path, out_dir: Path) -> None:
    """Move the folder Zensical built into ``out_dir`` (an empty folder, or none yet)."""
    if out_dir.is_dir():
        out_dir.rmdir()  # empty: the staging folder just made
    try:
        os.rename(built, out_dir)
    except OSError:  # another file system: copy
        shutil.copytree(built, out_dir)
        shutil.rmtree(built, ignore_errors=True)
