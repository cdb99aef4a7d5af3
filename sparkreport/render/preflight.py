"""Refuse bad configuration at once: checks that need the dataset but no analysis or rendering.

``render`` (and so ``build`` and ``serve``) calls :func:`preflight` right after the dataset is
loaded, before any statistics, chart, page or MkDocs work, so a diff selector or a post binding
that names something the runs do not have fails within seconds even at 10 000 runs, with the
same one-line error (file, line, fix) the full render would give later.

Only what the dataset alone decides is checked here: a diff selector's keys and values (and
that their combination selects some run); a post binding's syntax, function, arguments, filter
names, label names and filter values. What needs the analysis (one arm exactly, a chart name,
a number that is NaN) is still checked by the render itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.names import shown_values
from sparkreport.render.posts import ARM_FILTERS, POSTS_DIR, Binding, BindingError, Resolver, fill, is_draft, shown_path

if TYPE_CHECKING:
    from sparkreport.config import ProjectConfig
    from sparkreport.dataset import Dataset

#: Filters each binding function accepts (``None``: the arm filters plus ``label_KEY``).
_FILTERS: dict[str, tuple[str, ...]] = {
    "value": ARM_FILTERS,
    "compare": ("campaign", "model", "model_name"),
}


def preflight(dataset: Dataset, config: ProjectConfig, source_docs: Path) -> None:
    """Check the diffs of ``config`` and the posts under ``source_docs`` against ``dataset``.

    Raises a one-line ConfigError (sparkreport.yml) or BuildError (a post) on the first problem.
    """
    check_diffs(dataset, config)
    check_posts(dataset, config, source_docs)


def _values(dataset: Dataset, column: str) -> set[str]:
    found: set[str] = set()
    for frame in (dataset.runs, dataset.summaries):
        if column in frame.columns:
            found.update(frame[column].dropna().astype("string").unique())
    return found


def check_diffs(dataset: Dataset, config: ProjectConfig) -> None:
    """Every ``diffs:`` selector names columns the runs have and values they hold."""
    from sparkreport.analysis.diff import Selector
    from sparkreport.errors import DataError

    runs = dataset.runs
    for index, named in enumerate(config.diffs):
        for side in ("a", "b"):
            key = f"diffs[{index}].{side}"
            prefix = f"diff {named.name!r}: {side}: selector {getattr(named, side)!r}"
            try:
                selector = Selector.parse(getattr(named, side))
            except DataError as exc:
                raise config.error(key, f"diff {named.name!r}: {side}: {exc.format_message()}",
                                   fix="see the README's diff section") from None
            mask = None
            for name, wanted in selector.conditions:
                column = name if name in runs.columns else f"label.{name}"
                if column not in runs.columns:
                    labels = [c.removeprefix("label.") for c in dataset.label_columns]
                    raise config.error(key, f"{prefix}: no column or label {name!r}",
                                       fix=f"labels here: {shown_values(labels)}")
                values = runs[column].astype("string")
                if not (values == wanted).any():
                    raise config.error(key, f"{prefix}: no run has {name}={wanted!r}",
                                       fix=f"{name} values here: {shown_values(sorted(set(values.dropna())))}")
                hit = (values == wanted).fillna(False)
                mask = hit if mask is None else mask & hit
            if mask is not None and not mask.any():
                raise config.error(key, f"{prefix}: no run matches every condition at once",
                                   fix="check the selector (`sparkreport runs` lists the runs)")


def check_posts(dataset: Dataset, config: ProjectConfig, source_docs: Path) -> None:
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
        fill(text, _Checker(dataset, config), shown_path(path))


class _Checker:
    """Stands in for :class:`Resolver` in :func:`fill`: checks a binding, returns no text."""

    def __init__(self, dataset: Dataset, config: ProjectConfig):
        self.dataset = dataset
        self.config = config
        self._seen: dict[str, set[str]] = {}

    def __call__(self, binding: Binding) -> str:
        handler: Callable[..., str] = getattr(Resolver, f"_{binding.function}")
        try:
            arguments = inspect.signature(handler).bind(None, *binding.args, **binding.kwargs).arguments
        except TypeError as exc:
            raise BindingError(f"{binding.function}(): {exc}") from None
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
        factor = arguments.get("factor") or self.config.factor
        if candidate is not None and factor in self.dataset.runs.columns:
            self._known(str(factor), str(candidate), what)
        return ""

    def _filters(self, filters: dict[str, Any], allowed: tuple[str, ...], function: str, what: str) -> None:
        labels = self.dataset.label_columns
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
            self._seen[column] = _values(self.dataset, column)
        have = self._seen[column]
        if wanted not in have:
            raise BindingError(f"no arm {what} has {column}={wanted!r} — {column} values here: "
                               f"{shown_values(sorted(have))}")


__all__ = ["check_diffs", "check_posts", "preflight"]
