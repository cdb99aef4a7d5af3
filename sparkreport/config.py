"""The project configuration file, ``sparkreport.yml`` (optional; every key has a default).

Validated once here into typed options; an unknown key or a wrong type is a one-line error
naming the file and the key. Command-line flags default to None and override the file only
when given.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from sparkreport.errors import ConfigError
from sparkreport.metrics import KEY_METRICS, is_metric

CONFIG_FILE = "sparkreport.yml"
DUPLICATE_POLICIES = ("all", "first", "last")


@dataclass
class AnalysisOptions:
    """What the statistics include and how they decide."""

    #: Several runs with the same (campaign, model, environment, iteration): keep all of them,
    #: or only the first / last by start time. Either way `check` names them.
    duplicates: str = "all"
    #: Include runs whose exit code was not 0 (never by default).
    include_failed: bool = False
    #: Runs planned per arm; None = the highest iteration number seen in the campaign.
    planned_iterations: int | None = None
    confidence: float = 0.95
    #: Coefficient of variation above which an arm is flagged as noisy.
    cv_threshold: float = 0.05
    #: Equivalence margin as a fraction of the baseline mean (TOST), unless per-metric below.
    equivalence_margin: float = 0.02
    margins: dict[str, float] = field(default_factory=dict)
    #: Metrics compare/diff test by default (None: sparkreport.metrics.KEY_METRICS).
    compare_metrics: list[str] | None = None
    #: The metric(s) each campaign's question is about: Holm runs over a campaign's comparisons
    #: of these (the primary family) and separately over its other tested metrics (None:
    #: sparkreport.metrics.DEFAULT_PRIMARY_METRICS).
    primary_metrics: list[str] | None = None
    #: Leave out runs measured under interference (another process held the GPU, the cooldown
    #: gave up); `check` flags them either way.
    exclude_interference: bool = False
    #: A label every comparison is stratified by (as `compare --by LABEL`), e.g. cache.
    stratify_by: str | None = None
    alpha: float = 0.05
    bootstrap_resamples: int = 10_000
    bootstrap_seed: int = 20251108

    @property
    def tested_metrics(self) -> tuple[str, ...]:
        """The metrics compare, diff and the noise check test by default."""
        return tuple(self.compare_metrics or KEY_METRICS)

    def margin_for(self, metric: str) -> float:
        return self.margins.get(metric, self.equivalence_margin)


@dataclass
class NamedDiff:
    """A diff the site shows as a page (``diffs:`` in sparkreport.yml)."""

    name: str
    a: str
    b: str
    title: str = ""
    allow_mismatch: list[str] = field(default_factory=list)
    metrics: list[str] | None = None


CHART_CHOICES = ("tested", "all")
STATIC_CHART_CHOICES = ("auto", "all", "posts")
#: Above this many charts, ``static_charts: auto`` draws SVG fallbacks only for the posts' charts.
STATIC_CHART_LIMIT = 100


@dataclass
class ProjectConfig:
    title: str = "LLM inference benchmark results"
    description: str = ""
    factor: str = "environment"
    baseline: str = "native"
    analysis: AnalysisOptions = field(default_factory=AnalysisOptions)
    diffs: list[NamedDiff] = field(default_factory=list)
    #: Which metrics get charts on the Results pages: ``tested`` (the metrics compare tests,
    #: ``analysis.tested_metrics``) or ``all``. Every metric gets its table either way.
    charts: str = "tested"
    #: Static SVG fallbacks (for readers without JavaScript; vl-convert takes ~0.5 s a chart):
    #: ``all`` charts, only the charts ``posts`` show as images, or ``auto`` = all up to
    #: :data:`STATIC_CHART_LIMIT` charts on the site, posts' above.
    static_charts: str = "auto"
    path: Path | None = None

    def static_fallbacks(self, chart_count: int) -> bool:
        """Whether every chart of a site with ``chart_count`` charts gets a static SVG fallback."""
        if self.static_charts == "auto":
            return chart_count <= STATIC_CHART_LIMIT
        return self.static_charts == "all"

    def charted(self, metric: str) -> bool:
        """Whether the Results pages draw charts for ``metric``."""
        return self.charts == "all" or metric in self.analysis.tested_metrics


def _check(path: Path, key: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ConfigError(path, f"{key} must be a number, not {value!r}", fix="fix the value")
    if not isinstance(value, kind):
        raise ConfigError(path, f"{key} has the wrong type ({type(value).__name__})", fix="fix the value")
    return value


def _choice(path: Path, key: str, value: Any, choices: tuple[str, ...], fix: str) -> None:
    if value not in choices:
        raise ConfigError(path, f"{key} must be one of {', '.join(choices)}, not {value!r}", fix=fix)


def load_config(path: Path | None = None) -> ProjectConfig:
    """Read ``path`` (default ``./sparkreport.yml`` when it exists) into a ProjectConfig."""
    if path is None:
        default = Path(CONFIG_FILE)
        if not default.exists():
            return ProjectConfig()
        path = default
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(path, "no such file", fix="create it or drop --config") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(path, f"is not valid YAML ({getattr(exc, 'problem', exc)})",
                          line=mark.line + 1 if mark else None, fix="fix the YAML syntax") from None
    if not isinstance(doc, dict):
        raise ConfigError(path, "must be a mapping of settings", fix="see the README's configuration section")
    config = ProjectConfig(path=path)
    top = {"title": str, "description": str, "factor": str, "baseline": str, "analysis": dict, "diffs": list,
           "charts": str, "static_charts": str}
    for key, value in doc.items():
        if key not in top:
            raise ConfigError(path, f"unknown setting {key!r}", fix=f"known: {', '.join(top)}")
        _check(path, key, value, top[key])
        if key not in ("analysis", "diffs"):
            setattr(config, key, value)
    _choice(path, "charts", config.charts, CHART_CHOICES,
            "tested draws the metrics compare tests; all draws every metric")
    _choice(path, "static_charts", config.static_charts, STATIC_CHART_CHOICES,
            f"auto draws SVG fallbacks for sites of up to {STATIC_CHART_LIMIT} charts")
    config.diffs = [_named_diff(path, i, item) for i, item in enumerate(doc.get("diffs") or [])]
    analysis = doc.get("analysis") or {}
    kinds: dict[str, type | tuple[type, ...]] = {
        "duplicates": str, "include_failed": bool, "planned_iterations": int, "confidence": (int, float),
        "cv_threshold": (int, float), "equivalence_margin": (int, float), "margins": dict, "compare_metrics": list,
        "alpha": (int, float), "bootstrap_resamples": int, "bootstrap_seed": int,
        "primary_metrics": list, "exclude_interference": bool, "stratify_by": str,
    }
    known = {f.name for f in fields(AnalysisOptions)}
    for key, value in analysis.items():
        if key not in known:
            raise ConfigError(path, f"unknown setting analysis.{key}", fix=f"known: {', '.join(sorted(known))}")
        if value is not None:
            _check(path, f"analysis.{key}", value, kinds[key])
        setattr(config.analysis, key, value)
    _choice(path, "analysis.duplicates", config.analysis.duplicates, DUPLICATE_POLICIES,
            "all keeps every run, first/last keep one per iteration")
    for key in ("compare_metrics", "primary_metrics"):
        for metric in getattr(config.analysis, key) or []:
            if not isinstance(metric, str) or not is_metric(metric):
                raise ConfigError(path, f"analysis.{key}: {metric!r} is not a canonical metric name",
                                  fix="see `sparkreport metrics`")
    for metric, margin in config.analysis.margins.items():
        if not is_metric(metric) or isinstance(margin, bool) or not isinstance(margin, int | float):
            raise ConfigError(path, f"analysis.margins.{metric} must name a metric and a fraction",
                              fix="e.g. output_throughput_tok_s: 0.02")
    return config


def _named_diff(path: Path, index: int, item: Any) -> NamedDiff:
    where = f"diffs[{index}]"
    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("name", "a", "b")):
        raise ConfigError(path, f"{where} needs name, a and b (selectors, e.g. engine_version=1.2.0)",
                          fix="see the README's diff section")
    known = {f.name for f in fields(NamedDiff)}
    unknown = sorted(set(item) - known)
    if unknown:
        raise ConfigError(path, f"unknown setting {where}.{unknown[0]}", fix=f"known: {', '.join(sorted(known))}")
    for key in ("allow_mismatch", "metrics"):
        value = item.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ConfigError(path, f"{where}.{key} must be a list of names", fix="e.g. [output_len]")
    return NamedDiff(**item)
