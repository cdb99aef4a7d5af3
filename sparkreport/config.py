"""The project configuration file, ``sparkreport.yml`` (optional; every key has a default).

Validated once here into typed options; an unknown key or a wrong type is a one-line error
naming the file and the key. Command-line flags default to None and override the file only
when given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from sparkreport.errors import ConfigError
from sparkreport.metrics import KEY_METRICS, is_metric
from sparkreport.yamllines import Where, line_of

CONFIG_FILE = "sparkreport.yml"
DUPLICATE_POLICIES = ("all", "first", "last")
#: The widest equivalence margin accepted (±50% of the baseline mean).
MAX_MARGIN = 0.5
#: Bootstrap resamples: fewer gives intervals that move with the seed, more only costs memory.
MIN_RESAMPLES, MAX_RESAMPLES = 100, 1_000_000


def confidence_label(confidence: float) -> str:
    """'95%' for 0.95: how a confidence level is written on every page, chart and comment."""
    return f"{confidence:.0%}"


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
    #: The run column the comparisons contrast: sparkreport.yml's top-level ``factor`` (kept here,
    #: read there through :attr:`ProjectConfig.factor`; not an ``analysis:`` setting). The checks
    #: of what an arm pools read it: an arm is one campaign × model × level of it.
    factor: str = "environment"

    @property
    def confidence_label(self) -> str:
        """'95%': the confidence level as every interval on the site and in a diff is labelled."""
        return confidence_label(self.confidence)

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


@dataclass
class CampaignOptions:
    """What the project says of one campaign (``campaigns: NAME: {title: …, question: …}``): each
    wins over the campaign file's (and, for the title, the published summary's)."""

    #: What the pages call it.
    title: str | None = None
    #: The question it answers, in a sentence or two: Home and its page open on it (a campaign
    #: file's ``description:`` otherwise).
    question: str | None = None


@dataclass
class HistoryOptions:
    """How ``sparkreport history`` and the History page find versions (``history:``)."""

    #: A label key (``--label version=…``) or a software field (engine_version, trtllm, vllm,
    #: torch, cuda, driver, image, image_digest).
    by: str = "version"
    #: Smallest relative change that counts as a change point (None: analysis.equivalence_margin).
    min_effect: float | None = None
    #: Follow each model and environment across campaigns (a campaign per release), each
    #: version's runs from one campaign; else a series stays inside its campaign.
    across_campaigns: bool = False


CHART_CHOICES = ("tested", "all")
STATIC_CHART_CHOICES = ("auto", "all", "posts")
#: The builders ``builder:`` may name: those :mod:`sparkreport.site.builders` registers (a test
#: checks both agree; the configuration sits below the site and does not import it).
BUILDER_NAMES = ("mkdocs", "zensical")
#: Above this many charts, ``static_charts: auto`` draws SVG fallbacks only for the posts' charts.
STATIC_CHART_LIMIT = 100
#: What a reader asks first: throughput, latency to the first and per token, then memory.
DEFAULT_PRIMARY_METRICS = ("output_throughput_tok_s", "ttft_ms_mean", "tpot_ms_mean", "pre_kv_memory_gib",
                           "peak_memory_gib", "kv_cache_gib")


@dataclass
class ProjectConfig:
    title: str = "LLM inference benchmark results"
    description: str = ""
    baseline: str = "native"
    analysis: AnalysisOptions = field(default_factory=AnalysisOptions)
    diffs: list[NamedDiff] = field(default_factory=list)
    #: Per campaign (by name, as in the run store): what the pages call it.
    campaigns: dict[str, CampaignOptions] = field(default_factory=dict)
    history: HistoryOptions = field(default_factory=HistoryOptions)
    #: Which metrics get charts on the Results pages: ``tested`` (the metrics compare tests,
    #: ``analysis.tested_metrics``) or ``all``. Every metric gets its table either way.
    charts: str = "tested"
    #: Static SVG fallbacks (for readers without JavaScript; vl-convert takes ~0.5 s a chart):
    #: ``all`` charts, only the charts ``posts`` show as images, or ``auto`` = all up to
    #: :data:`STATIC_CHART_LIMIT` charts on the site, posts' above.
    static_charts: str = "auto"
    #: The metrics the report leads with (home summary, results pages); the rest are folded.
    primary_metrics: list[str] = field(default_factory=lambda: list(DEFAULT_PRIMARY_METRICS))
    #: The static-site builder ``sparkreport build`` and ``serve`` use (``build --builder``
    #: overrides it): ``mkdocs`` or ``zensical`` (:mod:`sparkreport.site.builders`).
    builder: str = "mkdocs"
    path: Path | None = None
    #: The line of each key in the file (``diffs[0].a`` → 14), for errors found after loading.
    lines: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def error(self, key: str, problem: str, fix: str = "fix the value") -> ConfigError:
        """A one-line ConfigError at ``key``'s line (or its nearest parent's) in this file."""
        return ConfigError(self.path or CONFIG_FILE, problem, line=line_of(self.lines, key), fix=fix)

    def static_fallbacks(self, chart_count: int) -> bool:
        """Whether every chart of a site with ``chart_count`` charts gets a static SVG fallback."""
        if self.static_charts == "auto":
            return chart_count <= STATIC_CHART_LIMIT
        return self.static_charts == "all"

    @property
    def factor(self) -> str:
        """What the comparisons contrast (``factor:``): a run column or ``label.KEY``. Kept in
        :attr:`analysis` (``analysis.factor``), whose checks read it too: one value, not two."""
        return self.analysis.factor

    @factor.setter
    def factor(self, value: str) -> None:
        self.analysis.factor = value

    @property
    def factor_name(self) -> str:
        """The factor as the pages name it: ``environment``; ``cache`` for ``label.cache``;
        ``engine version`` for ``engine_version``."""
        return factor_words(self.factor).name

    @property
    def factor_a_name(self) -> str:
        """:attr:`factor_name` after "a" or "an" (``no run carries an engine version``)."""
        return factor_words(self.factor).a_name

    def baseline_of(self, level: str) -> str | None:
        """The baseline among the levels of ``level`` (a run column or ``label.KEY``, as
        ``arm_stats`` groups by it): :attr:`baseline` where ``level`` is the factor the
        comparisons contrast, else None — another column's levels have none, and are listed by
        name (:func:`~sparkreport.names.level_order`)."""
        return self.baseline if level == self.factor else None

    def charted(self, metric: str) -> bool:
        """Whether the Results pages draw charts for ``metric``."""
        return self.charts == "all" or metric in self.analysis.tested_metrics


class FactorWords(NamedTuple):
    """How a sentence names the factor (:func:`factor_words`)."""

    name: str
    one: str
    many: str

    @property
    def a_name(self) -> str:
        """The name after "a" or "an": ``a cache``, ``an engine version``."""
        return ("an " if self.name[:1].lower() in "aeiou" else "a ") + self.name


def factor_words(factor: str) -> FactorWords:
    """The factor's name and how a sentence names one and several of its levels: a run column by
    its plural (``environment``, ``environments``; ``engine version``s), a label by its levels
    (``cache``: ``level of cache``, ``levels of cache``)."""
    name = factor.removeprefix("label.").replace("_", " ")
    if factor.startswith("label."):
        return FactorWords(name, f"level of {name}", f"levels of {name}")
    return FactorWords(name, name, f"{name}s")


def _typed(where: Where[ConfigError], key: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise where.error(key, f"{key} must be a number, not {value!r}")
    if not isinstance(value, kind):
        shapes: dict[Any, str] = {dict: (f"a mapping: {key}: on its own line, its settings indented under it "
                                         "(see the README's configuration section)"),
                                  list: "a list, e.g. [a, b]", str: 'text, e.g. "…"'}
        shape = shapes.get(kind, "a number")
        raise where.error(key, f"{key} has the wrong type ({type(value).__name__}: {str(value)[:40]!r})",
                          fix=f"write it as {shape}")
    if isinstance(value, float) and not math.isfinite(value):
        raise where.error(key, f"{key} must be a finite number, not {value!r}")
    return value


def _choice(where: Where[ConfigError], key: str, value: Any, choices: tuple[str, ...], fix: str) -> None:
    if value not in choices:
        raise where.error(key, f"{key} must be one of {', '.join(choices)}, not {value!r}", fix=fix)


def margin_problem(value: float) -> tuple[str, str] | None:
    """What is wrong with ``value`` as an equivalence margin or minimum effect (a fraction of the
    baseline mean in (0, 0.5]) and the fix, or None: a value from 1 to 100 reads as a percentage.
    The file's keys and the ``--min-effect`` flags are checked with it."""
    problem = f"must be a fraction in (0, {MAX_MARGIN}], not {value!r}"
    if 1 <= value <= 100:
        return problem, f"did you mean {value:g}%? write {value / 100:g}"
    if not 0 < value <= MAX_MARGIN:  # NaN too
        return problem, "e.g. 0.02 for ±2% of the baseline mean"
    return None


def _fraction(where: Where[ConfigError], key: str, value: float) -> None:
    """An equivalence margin: a fraction of the baseline mean in (0, 0.5]."""
    found = margin_problem(value)
    if found is not None:
        raise where.error(key, f"{key} {found[0]}", fix=found[1])


def _open_unit(where: Where[ConfigError], key: str, value: float, example: str) -> None:
    if not 0 < value < 1:
        raise where.error(key, f"{key} must be between 0 and 1 (exclusive), not {value!r}", fix=f"e.g. {example}")


def _between(low: float, high: float, allowed: str, example: str,
             *, open_low: bool = False) -> Callable[[Where[ConfigError], str, Any], None]:
    """A check that a value lies in [low, high] (or (low, high]); ``allowed`` says so to the user."""
    def check(where: Where[ConfigError], key: str, value: Any) -> None:
        if not (low < value if open_low else low <= value) or not value <= high:
            raise where.error(key, f"{key} must be {allowed}, not {value!r}", fix=f"e.g. {example}")
    return check


#: Where each analysis value must lie (beyond its type): a check per key.
_RANGES: dict[str, Callable[[Where[ConfigError], str, Any], None]] = {
    "confidence": lambda w, k, v: _open_unit(w, k, v, "0.95"),
    "alpha": lambda w, k, v: _open_unit(w, k, v, "0.05"),
    "equivalence_margin": _fraction,
    "cv_threshold": _between(0, 1, "a fraction in (0, 1]", "0.05 for 5%", open_low=True),
    "planned_iterations": _between(1, 1_000_000, "an integer in [1, 1000000]", "10"),
    "bootstrap_resamples": _between(MIN_RESAMPLES, MAX_RESAMPLES,
                                    f"an integer in [{MIN_RESAMPLES}, {MAX_RESAMPLES}]", "10000"),
    "bootstrap_seed": _between(0, 2**32 - 1, "an integer in [0, 4294967295]", "20251108"),
}


def _metric_names(where: Where[ConfigError], key: str, value: Any) -> list[str]:
    """A list of canonical metric names, each checked as ``--metric`` checks it."""
    if not isinstance(value, list):
        raise where.error(key, f"{key} must be a list of metric names", fix="e.g. [output_throughput_tok_s]")
    for index, metric in enumerate(value):
        if not isinstance(metric, str) or not is_metric(metric):
            raise where.error(f"{key}[{index}]", f"{key}: {metric!r} is not a canonical metric name",
                              fix="see `sparkreport metrics`")
    return value


def load_config(path: Path | None = None) -> ProjectConfig:
    """Read ``path`` (default ``./sparkreport.yml`` when it exists) into a ProjectConfig.

    Every value is checked for its type and its range here (one line naming the file, the line,
    the key and what is allowed); the rest of sparkreport trusts the result.
    """
    if path is None:
        default = Path(CONFIG_FILE)
        if not default.exists():
            return ProjectConfig()
        path = default
    try:
        text = path.read_text(encoding="utf-8")
        doc = yaml.safe_load(text) or {}
    except FileNotFoundError:
        raise ConfigError(path, "no such file", fix="create it or drop --config") from None
    except UnicodeDecodeError:
        raise ConfigError(path, "is not UTF-8 text", fix="save it as UTF-8") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(path, f"is not valid YAML ({getattr(exc, 'problem', exc)})",
                          line=mark.line + 1 if mark else None, fix="fix the YAML syntax") from None
    if not isinstance(doc, dict):
        raise ConfigError(path, "must be a mapping of settings", fix="see the README's configuration section")
    where = Where(path, text, ConfigError, fix="fix the value")
    config = ProjectConfig(path=path, lines=where.lines)
    top = {"title": str, "description": str, "factor": str, "baseline": str, "analysis": dict, "diffs": list,
           "campaigns": dict, "charts": str, "static_charts": str, "primary_metrics": list,
           "history": dict, "builder": str}
    sections = ("analysis", "diffs", "campaigns", "history")
    for key, value in doc.items():
        if key not in top:
            raise where.error(str(key), f"unknown setting {key!r}", fix=f"known: {', '.join(top)}")
        if value is None and key in sections:
            continue
        _typed(where, key, value, top[key])
        if key not in sections:
            setattr(config, key, value)
    _choice(where, "charts", config.charts, CHART_CHOICES,
            "tested draws the metrics compare tests; all draws every metric")
    _choice(where, "static_charts", config.static_charts, STATIC_CHART_CHOICES,
            f"auto draws SVG fallbacks for sites of up to {STATIC_CHART_LIMIT} charts")
    _choice(where, "builder", config.builder, BUILDER_NAMES,
            "mkdocs builds with MkDocs + Material, zensical with Zensical (see the README's site section)")
    config.diffs = [_named_diff(where, i, item) for i, item in enumerate(doc.get("diffs") or [])]
    config.campaigns = {str(name): _campaign_options(where, str(name), item)
                        for name, item in (doc.get("campaigns") or {}).items()}
    for key, value in (doc.get("history") or {}).items():
        history_kinds: dict[str, type | tuple[type, ...]] = {"by": str, "min_effect": (int, float),
                                                             "across_campaigns": bool}
        kind = history_kinds.get(str(key))
        if kind is None:
            raise where.error(f"history.{key}", f"unknown setting history.{key}",
                              fix="known: by, min_effect, across_campaigns")
        if value is not None:
            _typed(where, f"history.{key}", value, kind)
            if key == "min_effect":
                _fraction(where, "history.min_effect", value)
        setattr(config.history, str(key), value)
    analysis = doc.get("analysis") or {}
    kinds: dict[str, type | tuple[type, ...]] = {
        "duplicates": str, "include_failed": bool, "planned_iterations": int, "confidence": (int, float),
        "cv_threshold": (int, float), "equivalence_margin": (int, float), "margins": dict, "compare_metrics": list,
        "alpha": (int, float), "bootstrap_resamples": int, "bootstrap_seed": int,
        "primary_metrics": list, "exclude_interference": bool, "stratify_by": str,
    }
    nullable = ("planned_iterations", "compare_metrics", "primary_metrics", "stratify_by")
    known = {f.name for f in fields(AnalysisOptions)} - {"factor"}  # the top level's (ProjectConfig.factor)
    for key, value in analysis.items():
        name = f"analysis.{key}"
        if key == "factor":
            raise where.error(name, "factor is a top-level setting, not one of analysis:",
                              fix=f"write factor: {value} at the top of the file, unindented")
        if key not in known:
            raise where.error(name, f"unknown setting {name}", fix=f"known: {', '.join(sorted(known))}")
        if value is None and key in nullable:
            setattr(config.analysis, key, None)
            continue
        _typed(where, name, value, kinds[key])
        if key in _RANGES:
            _RANGES[key](where, name, value)
        setattr(config.analysis, key, value)
    _choice(where, "analysis.duplicates", config.analysis.duplicates, DUPLICATE_POLICIES,
            "all keeps every run, first/last keep one per iteration")
    if doc.get("primary_metrics") is not None:  # the pages' order (top level)
        _metric_names(where, "primary_metrics", config.primary_metrics)
    for key in ("compare_metrics", "primary_metrics"):
        if getattr(config.analysis, key) is not None:
            _metric_names(where, f"analysis.{key}", getattr(config.analysis, key))
    for metric, margin in config.analysis.margins.items():
        name = f"analysis.margins.{metric}"
        if not isinstance(metric, str) or not is_metric(metric):
            raise where.error(name, f"analysis.margins: {metric!r} is not a canonical metric name",
                              fix="e.g. output_throughput_tok_s: 0.02 (see `sparkreport metrics`)")
        _typed(where, name, margin, (int, float))
        _fraction(where, name, margin)
    return config


def _campaign_options(where: Where[ConfigError], name: str, item: Any) -> CampaignOptions:
    """One entry of ``campaigns:``: a mapping with a non-empty ``title``. Whether the store holds
    a campaign of that name is checked before a render (``render.preflight``)."""
    key = f"campaigns.{name}"
    example = f'write {name}: {{title: "what the pages call it"}}'
    if not isinstance(item, dict):
        raise where.error(key, f"{key} must be a mapping with a title or a question", fix=example)
    known = [f.name for f in fields(CampaignOptions)]
    for setting in item:
        if setting not in known:
            raise where.error(f"{key}.{setting}", f"unknown setting {key}.{setting}", fix=f"known: {', '.join(known)}")
    if not item:
        raise where.error(key, f"{key} needs a title or a question", fix=example)
    from sparkreport.names import TITLE_FIX, title_problem, title_text

    said = {}
    for setting, empty_fix in (("title", "write the title the pages show, or leave the campaign out to show its name"),
                               ("question", "write the question the campaign answers, or leave the setting out")):
        if setting not in item:
            continue
        problem = title_problem(item[setting])
        if problem:
            raise where.error(f"{key}.{setting}", f"{key}.{setting} {problem}",
                              fix=(TITLE_FIX if setting == "title" else 'write it in quotes: question: "what it asks"')
                              if "text" in problem else empty_fix)
        said[setting] = title_text(item[setting])
    return CampaignOptions(**said)


def _named_diff(where: Where[ConfigError], index: int, item: Any) -> NamedDiff:
    key = f"diffs[{index}]"
    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) and item.get(k)
                                             for k in ("name", "a", "b")):
        raise where.error(key, f"{key} needs name, a and b (selectors, e.g. engine_version=1.2.0)",
                          fix="see the README's diff section")
    known = {f.name for f in fields(NamedDiff)}
    unknown = sorted(set(map(str, item)) - known)
    if unknown:
        raise where.error(f"{key}.{unknown[0]}", f"unknown setting {key}.{unknown[0]}",
                          fix=f"known: {', '.join(sorted(known))}")
    if item.get("title") is not None and not isinstance(item["title"], str):
        from sparkreport.names import TITLE_FIX, title_problem

        raise where.error(f"{key}.title", f"{key}.title {title_problem(item['title'])}", fix=TITLE_FIX)
    value = item.get("allow_mismatch")
    if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise where.error(f"{key}.allow_mismatch", f"{key}.allow_mismatch must be a list of names",
                          fix="e.g. [output_len]")
    if item.get("metrics") is not None:
        _metric_names(where, f"{key}.metrics", item["metrics"])
    return NamedDiff(**{k: v for k, v in item.items() if v is not None or k == "metrics"})
