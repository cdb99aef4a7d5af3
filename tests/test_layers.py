"""The pipeline's floors: what sits below the pages never imports them.

ingest → run store → dataset → analysis → render → site. A rule the analysis shares with the
pages (how a p-value or a comparison's figures are printed) lives below both
(:mod:`sparkreport.figures`), so a claim's sentence and a page print alike without the
analysis reaching up into :mod:`sparkreport.render`. The scan reads the source, so an import
inside a function (the way a module defers a heavy one) counts as much as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sparkreport"

#: The modules and folders below the pages, by their path under the package.
BELOW_RENDER = ("analysis", "ingest", "dataset.py", "store.py", "schema.py", "metrics.py", "figures.py", "cache.py",
                "names.py", "jsontext.py")


def module_name(path: Path) -> str:
    """``sparkreport/analysis/claims.py`` → ``sparkreport.analysis.claims`` (a package's
    ``__init__.py`` → the package)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """Every module ``source`` (the text of ``module``) imports, anywhere in it — at the top,
    inside a function or under ``if TYPE_CHECKING`` — as (line, absolute name): ``from x import
    y`` as ``x.y`` too (``y`` may be a module), a relative import resolved against ``module``,
    and ``importlib.import_module("…")`` with a literal name."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
              and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return found


def reaches_render(name: str) -> bool:
    return name == "sparkreport.render" or name.startswith("sparkreport.render.")


def test_the_scan_finds_an_import_of_the_pages_wherever_it_is() -> None:
    """The scan itself: an import inside a function, a relative one, ``from sparkreport import
    render`` and ``import_module`` are each found; a name that only starts alike is not."""
    source = '''
import sparkreport.metrics
from sparkreport.rendering_notes import x

def sentence():
    from sparkreport.render.markdown import pvalue
    return pvalue

def other():
    from ..render import precision
    from sparkreport import render
    import importlib
    importlib.import_module("sparkreport.render.precision")
'''
    hits = [(line, name) for line, name in imported(source, "sparkreport.analysis.claims") if reaches_render(name)]
    assert [line for line, _ in hits] == [6, 6, 10, 10, 11, 13]
    assert ("sparkreport.render.markdown.pvalue" in {name for _, name in hits}
            and "sparkreport.render.precision" in {name for _, name in hits})


@pytest.mark.parametrize("floor", BELOW_RENDER)
def test_nothing_below_the_pages_imports_them(floor: str) -> None:
    """No module of ``floor`` (the analysis, the parsers, the dataset…) imports
    :mod:`sparkreport.render`: what both need lives below both (:mod:`sparkreport.figures`)."""
    where = PACKAGE / floor
    files = sorted(where.rglob("*.py")) if where.is_dir() else [where]
    assert files and all(path.is_file() for path in files)
    breaks = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
              for path in files
              for line, name in imported(path.read_text(encoding="utf-8"), module_name(path),
                                         path.name == "__init__.py")
              if reaches_render(name)]
    assert breaks == []


def test_the_pages_never_import_the_site_builder() -> None:
    """:mod:`sparkreport.render` sits below :mod:`sparkreport.site` (which builds and publishes
    what the render wrote): no module of the render imports the site's (a kept build's
    :class:`~sparkreport.render.RenderResult` is rebuilt by the render's own
    :func:`~sparkreport.render.core.result_from_state`)."""
    files = sorted((PACKAGE / "render").rglob("*.py"))
    breaks = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
              for path in files
              for line, name in imported(path.read_text(encoding="utf-8"), module_name(path),
                                         path.name == "__init__.py")
              if name == "sparkreport.site" or name.startswith("sparkreport.site.")]
    assert files and breaks == []


def module_file(name: str) -> Path | None:
    """The package's source file of the module ``name`` (a package's ``__init__.py``), or of the
    module that defines ``name`` when it names something inside one; None outside the package."""
    parts = name.split(".")
    while parts and parts[0] == "sparkreport":
        path = PACKAGE.parent.joinpath(*parts)
        for candidate in (path.with_suffix(".py"), path / "__init__.py"):
            if candidate.is_file():
                return candidate
        parts = parts[:-1]
    return None


@pytest.mark.parametrize("floor", BELOW_RENDER)
def test_nothing_below_the_pages_reaches_them_through_another_module(floor: str) -> None:
    """Nor through a module it imports, at any depth: the dataset once imported the charts for
    their JSON writer, and the charts import the pages' precision rule. Each chain that ends in
    :mod:`sparkreport.render` is named, so the break is easy to find."""
    where = PACKAGE / floor
    start = sorted(where.rglob("*.py")) if where.is_dir() else [where]
    seen: dict[Path, list[str]] = {path: [module_name(path)] for path in start}
    queue = list(start)
    chains = []
    while queue:
        path = queue.pop()
        for _line, name in imported(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py"):
            if reaches_render(name):
                chains.append(" → ".join([*seen[path], name]))
                continue
            target = module_file(name)
            if target is not None and target not in seen:
                seen[target] = [*seen[path], module_name(target)]
                queue.append(target)
    assert sorted(set(chains)) == []
