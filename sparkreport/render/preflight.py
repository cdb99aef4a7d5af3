"""Refuse bad configuration at once: checks that need the store's names but no analysis or rendering.

Two passes, with the same checks and the same one-line errors (file, line, fix):

1. :func:`refuse_early`, called by ``render`` and ``build`` before anything heavy (no dataset, no
   build key, no pandas): ``sparkreport.yml`` is loaded (a bad value is refused there), the
   campaigns it gives titles and the diffs' campaigns are looked up among the store's folders,
   then the diffs and the posts' bindings are checked against the store's name index
   (:func:`sparkreport.early.store_index`, kept current beside the record cache). About a
   second at 10 000 runs with the index warm.
2. :func:`preflight`, called by ``render`` right after the dataset is loaded, runs the same
   checks against the dataset: it decides what the index cannot (a selector on a column the
   index does not hold, such as ``iteration``).

Only what the names decide is checked here: a diff selector's keys and values (and that their
combination selects some run); a post binding's syntax, function, arguments, filter names, label
names and filter values. What needs the analysis (one arm exactly, a chart name, a number that is
NaN) is still checked by the render itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sparkreport.names import shown, shown_values
from sparkreport.render.posts import (
    ARM_FILTERS,
    POSTS_DIR,
    Binding,
    BindingError,
    Resolver,
    check_arguments,
    fill,
    is_draft,
    shown_path,
)

if TYPE_CHECKING:
    from sparkreport.cache import WritesLater
    from sparkreport.config import ProjectConfig
    from sparkreport.dataset import Dataset
    from sparkreport.early import StoreIndex
    from sparkreport.project import Project
    from sparkreport.render.core import RenderOptions

#: Filters each binding function accepts (``None``: the arm filters plus ``label_KEY``).
_FILTERS: dict[str, tuple[str, ...]] = {
    "value": ARM_FILTERS,
    "compare": ("campaign", "model", "model_name"),
}


class Names(Protocol):
    """What the checks read: the runs table's columns and the values they hold."""

    #: ``label.KEY`` columns of the runs table.
    label_columns: list[str]

    def has_column(self, column: str) -> bool:
        """Whether the runs table has ``column``."""

    def knows(self, column: str) -> bool:
        """Whether :meth:`run_values` and :meth:`values` can answer for ``column``."""

    def run_values(self, column: str) -> list[str | None]:
        """``column`` of every run (the runs table), as text; None where a run has none."""

    def values(self, column: str) -> set[str]:
        """Every value ``column`` holds in the runs and the published summaries."""


class DatasetNames:
    """:class:`Names` from a loaded dataset (every column known)."""

    def __init__(self, dataset: Dataset):
        self.dataset = dataset
        self.label_columns = dataset.label_columns

    def has_column(self, column: str) -> bool:
        return column in self.dataset.runs.columns

    def knows(self, column: str) -> bool:
        return True

    def run_values(self, column: str) -> list[str | None]:
        import pandas as pd

        return [None if pd.isna(value) else str(value) for value in self.dataset.runs[column].astype("string")]

    def values(self, column: str) -> set[str]:
        found: set[str] = set()
        for frame in (self.dataset.runs, self.dataset.summaries):
            if column in frame.columns:
                found.update(frame[column].dropna().astype("string").unique())
        return found


class IndexNames:
    """:class:`Names` from the store's name index: the indexed columns and every label."""

    def __init__(self, index: StoreIndex):
        from sparkreport.dataset import CORE_METRICS, RUN_COLUMNS

        runs = index.runs
        self.index = index
        self._runs = runs
        # Set operations in C over every entry's keys, and each distinct metric tuple once (the
        # index shares equal tuples): 250 000 names at 10 000 runs, read one by one, took 0.02 s.
        labels = {key for key in set().union(*(entry.values for entry in runs)) if key.startswith("label.")}
        self.label_columns = sorted(labels)
        metrics = {id(entry.metrics): entry.metrics for entry in runs}.values()
        self._columns = {*RUN_COLUMNS, *CORE_METRICS, *labels, *set().union(*metrics)}

    def has_column(self, column: str) -> bool:
        return column in self._columns

    def knows(self, column: str) -> bool:
        from sparkreport.early import INDEXED_COLUMNS

        return column in INDEXED_COLUMNS or column == "model_name" or column.startswith("label.")

    def run_values(self, column: str) -> list[str | None]:
        return [entry.values.get(column) for entry in self._runs]

    def values(self, column: str) -> set[str]:
        return {value for entry in self.index.entries if (value := entry.values.get(column)) is not None}


def preflight(dataset: Dataset, config: ProjectConfig, source_docs: Path) -> None:
    """Check the diffs of ``config`` and the posts under ``source_docs`` against ``dataset``.

    Raises a one-line ConfigError (sparkreport.yml) or BuildError (a post) on the first problem.
    """
    names = DatasetNames(dataset)
    check_design(names, config)
    check_diffs(names, config)
    check_posts(names, config, source_docs)


def refuse_early(options: RenderOptions | Project, later: WritesLater | None = None, *,
                 kept_first: bool = False) -> None:
    """The checks :func:`preflight` makes, before the dataset is loaded: ``sparkreport.yml``
    itself, the diffs' campaigns (folder names) and the diffs and post bindings against the
    store's name index. Raises the same one-line errors; an empty store is left to the render
    (which says "no runs to render"). ``kept_first``: check against the index the last build or
    check left first, without a stat of every run.json (:func:`~sparkreport.early.kept_index`) —
    a build, whose walk brings the index up to date, and a serve session do: only what fails
    there is checked against the store itself before it is refused, and what passes is checked
    again against the dataset once it is loaded (:func:`preflight`). ``later``: where the name
    index's write is put off to (:func:`~sparkreport.early.store_index`; a build's, while its
    builder builds), else it is written at once."""
    from sparkreport.early import check_selector_campaigns, kept_index, store_campaigns, store_index
    from sparkreport.errors import SparkreportError
    from sparkreport.project import resolve_project

    project = resolve_project(options)
    root, config_path, runs_dir = project.root, project.config_path, project.runs_dir
    config = project.config
    posts = root / "docs" / POSTS_DIR
    design = "factor" in config.lines or "baseline" in config.lines
    folders = store_campaigns(runs_dir)
    if not folders or not (design or config.diffs or config.campaigns
                           or (posts.is_dir() and any(posts.rglob("*.md")))):
        return  # nothing to check against the store (an empty one: the render says "no runs to render")
    check_campaign_settings(config, folders, shown(runs_dir))
    check_selector_campaigns(runs_dir, [(f"{config_path}: diffs[{i}].{side}", text)
                                        for i, named in enumerate(config.diffs)
                                        for side, text in (("a", named.a), ("b", named.b))])
    kept = kept_index(runs_dir, project.cache_dir) if kept_first else None
    if kept is not None:
        try:
            _check_names(IndexNames(kept), config, root)
            return
        except SparkreportError:
            pass  # maybe stale (a run edited or removed since): checked against the store itself
    index = store_index(runs_dir, project.cache_dir, later)
    if index.is_empty():
        return
    _check_names(IndexNames(index), config, root)


def _check_names(names: Names, config: ProjectConfig, root: Path) -> None:
    check_design(names, config)
    check_diffs(names, config)
    check_posts(names, config, root / "docs")


def check_campaign_settings(config: ProjectConfig, campaigns: list[str], store: str) -> None:
    """Every campaign ``campaigns:`` of sparkreport.yml names is one of ``campaigns`` (those of
    ``store``, as a message names it): a title for a campaign the store lacks is a typo, never
    shown anywhere, so it is refused at its line with the closest name."""
    from sparkreport.names import closest

    for name in config.campaigns:
        if name in campaigns:
            continue
        near = closest(name, campaigns)
        there = f"campaigns there: {shown_values(sorted(campaigns))}"
        raise config.error(f"campaigns.{name}", f"campaigns: no campaign {name!r} in {store}",
                           fix=f"did you mean {near!r}? ({there})" if near else there)


#: The factors compare contrasts most often, named first when a factor is refused.
COMMON_FACTORS = ("environment", "campaign", "model")


def factor_problem(names: Names, factor: str) -> tuple[str, str] | None:
    """(problem, fix) when ``factor`` is not a column of the runs (a metric is no factor either)."""
    from sparkreport.metrics import is_metric

    if names.has_column(factor) and not is_metric(factor):
        return None
    return (f"no column {factor!r} to compare on",
            f"use {', '.join(COMMON_FACTORS)}, another run column (engine_version, driver, …) or a label "
            f"(labels here: {shown_values(names.label_columns)})")


def baseline_problem(names: Names, factor: str, baseline: str) -> tuple[str, str] | None:
    """(problem, fix) when no run or published arm has ``factor`` = ``baseline`` (None also when
    ``names`` cannot tell: a column the name index does not hold waits for the dataset)."""
    if not names.knows(factor):
        return None
    levels = sorted(names.values(factor))
    if baseline in levels:
        return None
    return f"no {factor} called {baseline!r}", f"{factor} values here: {shown_values(levels)}"


def check_design(names: Names, config: ProjectConfig) -> None:
    """``factor`` and ``baseline`` of sparkreport.yml, where the file sets either: the factor a
    column of the runs, the baseline one of its values (the defaults, environment and native,
    are left to the pages, which say when no comparison could be made)."""
    if "factor" not in config.lines and "baseline" not in config.lines:
        return
    found = factor_problem(names, config.factor)
    if found is not None:
        raise config.error("factor", f"factor: {found[0]}", fix=found[1])
    found = baseline_problem(names, config.factor, config.baseline)
    if found is not None:
        own = "baseline" in config.lines
        raise config.error("baseline" if own else "factor",
                           f"baseline{'' if own else ' (the default, native)'}: {found[0]}",
                           fix=f"set baseline: to one of the {found[1]}")


def check_compare_options(names: Names, config: ProjectConfig, factor: str | None, baseline: str | None
                          ) -> tuple[str, str]:
    """The factor and baseline ``compare`` uses (``--factor``/``--baseline``, else sparkreport.yml's,
    else environment and native), refused in one line when the data lacks either: a flag's value,
    or a default a flag's factor cannot take, is a bad invocation (exit 2, naming the flag); a
    value of the file is named at its line (exit 1)."""
    from sparkreport.errors import OptionError

    if factor is None and baseline is None and ("factor" in config.lines or "baseline" in config.lines):
        check_design(names, config)
        return config.factor, config.baseline
    if factor is None:
        found = factor_problem(names, config.factor)
        if found is not None:
            raise config.error("factor", f"factor: {found[0]}", fix=found[1])
    elif (found := factor_problem(names, factor)) is not None:
        raise OptionError("--factor", *found)
    used_factor, used_baseline = factor or config.factor, baseline or config.baseline
    found = baseline_problem(names, used_factor, used_baseline)
    if found is None:
        return used_factor, used_baseline
    if baseline is not None:
        raise OptionError("--baseline", *found)
    origin = "the baseline sparkreport.yml sets" if "baseline" in config.lines else "the default"
    raise OptionError("--baseline", f"{found[0]} (no --baseline given: {used_baseline} is {origin})",
                      fix=f"pass --baseline with one of the {found[1]}")


def check_diffs(names: Names, config: ProjectConfig) -> None:
    """Every ``diffs:`` selector names columns the runs have and values they hold.

    A selector on a column ``names`` does not know is left for the check after the load.
    """
    from sparkreport.early import selector_conditions
    from sparkreport.errors import DataError

    for index, named in enumerate(config.diffs):
        for side in ("a", "b"):
            key = f"diffs[{index}].{side}"
            prefix = f"diff {named.name!r}: {side}: selector {getattr(named, side)!r}"
            try:
                conditions = selector_conditions(getattr(named, side))
            except DataError as exc:
                raise config.error(key, f"diff {named.name!r}: {side}: {exc.format_message()}",
                                   fix="see the README's diff section") from None
            mask: list[bool] | None = None
            for name, wanted in conditions:
                column = name if names.has_column(name) else f"label.{name}"
                if not names.has_column(column):
                    labels = [c.removeprefix("label.") for c in names.label_columns]
                    raise config.error(key, f"{prefix}: no column or label {name!r}",
                                       fix=f"labels here: {shown_values(labels)}")
                if not names.knows(column):
                    mask = None
                    break  # decided after the dataset is loaded
                values = names.run_values(column)
                hit = [value == wanted for value in values]
                if not any(hit):
                    present = sorted({value for value in values if value is not None})
                    raise config.error(key, f"{prefix}: no run has {name}={wanted!r}",
                                       fix=f"{name} values here: {shown_values(present)}")
                mask = hit if mask is None else [a and b for a, b in zip(mask, hit, strict=True)]
            if mask is not None and not any(mask):
                raise config.error(key, f"{prefix}: no run matches every condition at once",
                                   fix="check the selector (`sparkreport runs` lists the runs)")


def check_posts(names: Names, config: ProjectConfig, source_docs: Path) -> None:
    """Every binding of every post parses, and its filters name values the data holds."""
    folder = source_docs / POSTS_DIR
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*.md")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        text = path.read_text(encoding="utf-8")
        if is_draft(text):
            continue  # a draft is left out of the site, its bindings unchecked (render_posts)
        fill(text, _Checker(names, config), shown_path(path))


class _Checker:
    """Stands in for :class:`Resolver` in :func:`fill`: checks a binding, returns no text."""

    def __init__(self, names: Names, config: ProjectConfig):
        self.names = names
        self.config = config
        self._seen: dict[str, set[str]] = {}

    def __call__(self, binding: Binding) -> str:
        handler: Callable[..., str] = getattr(Resolver, f"_{binding.function}")
        try:
            arguments = inspect.signature(handler).bind(None, *binding.args, **binding.kwargs).arguments
        except TypeError as exc:
            raise BindingError(f"{binding.function}(): {exc}") from None
        check_arguments(binding.function, arguments)
        filters = dict(arguments.get("filters", {}))
        if binding.function == "chart":
            return ""  # chart names are known once the pages are built
        if binding.function == "table":
            if arguments.get("name") != "arms":
                return ""  # comparisons and findings tables filter on what the analysis finds
            filters.pop("metric", None)
        metric = arguments.get("metric", binding.kwargs.get("metric"))
        what = f"comparing {metric}" if binding.function == "compare" else f"with {metric}"
        self._filters(filters, _FILTERS.get(binding.function, ARM_FILTERS), binding.function, what)
        candidate = arguments.get("candidate")
        factor = str(arguments.get("factor") or self.config.factor)
        if candidate is not None and self.names.has_column(factor) and self.names.knows(factor):
            self._known(factor, str(candidate), what)
        return ""

    def _filters(self, filters: dict[str, Any], allowed: tuple[str, ...], function: str, what: str) -> None:
        labels = self.names.label_columns
        for key, wanted in filters.items():
            if key.startswith(("label.", "label_")):
                if function == "compare":
                    raise BindingError("compare() filters on campaign, model and model_name; "
                                       "to contrast label values use factor=\"label.KEY\"")
                name = "label." + key[len("label."):]
                if name not in labels:
                    shown = shown_values(c.removeprefix("label.") for c in labels)
                    raise BindingError(f"no label {key[len('label.'):]!r} in the data — labels: {shown}")
                self._known(name, str(wanted), what)
            elif key in allowed:
                self._known(key, str(wanted), what)
            else:
                raise BindingError(f"unknown filter {key!r} — filters: {', '.join(allowed)}, label_KEY")

    def _known(self, column: str, wanted: str, what: str) -> None:
        if column not in self._seen:
            self._seen[column] = self.names.values(column)
        have = self._seen[column]
        if wanted not in have:
            raise BindingError(f"no arm {what} has {column}={wanted!r} — {column} values here: "
                               f"{shown_values(sorted(have))}")


__all__ = ["COMMON_FACTORS", "DatasetNames", "IndexNames", "Names", "baseline_problem", "check_campaign_settings",
           "check_compare_options", "check_design", "check_diffs", "check_posts", "factor_problem", "preflight",
           "refuse_early"]
