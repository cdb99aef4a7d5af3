"""Option bundles shared by several commands (flags default to None: config decides)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from sparkreport.project import DEFAULT_RUNS_DIR

F = TypeVar("F", bound=Callable[..., Any])


def runs_dir_option(func: F) -> F:
    return click.option(
        "--runs-dir",
        type=click.Path(path_type=Path, file_okay=False),
        default=DEFAULT_RUNS_DIR,
        show_default=True,
        help="The run store: runs/<campaign>/<run_id>/run.json.",
    )(func)


def json_option(func: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print JSON (a documented contract) instead of a table."
    )(func)


def strict_option(func: F) -> F:
    return click.option(
        "--strict", is_flag=True, default=None, help="Exit 1 on any error-level finding (for CI)."
    )(func)


def parse_labels(values: tuple[str, ...]) -> dict[str, str]:
    """``KEY=VALUE`` pairs → dict; a malformed pair is a usage error (exit 2)."""
    labels = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--label")
        labels[key.strip()] = value.strip()
    return labels


def _check_metrics(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    from sparkreport.metrics import is_metric

    for name in values:
        if not is_metric(name):
            raise click.BadParameter(f"{name!r} is not a canonical metric name (see `sparkreport metrics`)")
    return values


def metric_option(func: F) -> F:
    """``--metric NAME`` (repeatable), checked against the canonical names."""
    return click.option("--metric", "metrics", multiple=True, callback=_check_metrics, metavar="NAME",
                        help="Only these metrics (repeatable; names from `sparkreport metrics`).")(func)


def _check_min_effect(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    from sparkreport.config import margin_problem
    from sparkreport.errors import OptionError

    found = margin_problem(value) if value is not None else None
    if found is not None:  # checked as sparkreport.yml checks its margins: 5 is not 5%
        raise OptionError("--min-effect", found[0], fix=found[1])
    return value


def min_effect_option(default_text: str) -> Callable[[F], F]:
    """``--min-effect FRACTION``: a fraction of the baseline mean in (0, 0.5], as in sparkreport.yml."""
    def decorate(func: F) -> F:
        return click.option("--min-effect", type=float, default=None, callback=_check_min_effect, metavar="FRACTION",
                            help=f"Smallest relative change that counts, a fraction in (0, 0.5]: 0.02 for 2% "
                                 f"(default: {default_text}).")(func)
    return decorate
