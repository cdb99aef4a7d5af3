"""Published-summary tables: per-arm n, mean and sd for results published without per-run data.

Two spellings of the same thing:

* YAML with ``sparkreport: published-summary`` at the top, campaign-level facts (title,
  source, hardware, software, workload, environments, models) and a list of ``arms``;
* CSV with at least the columns ``model, environment, metric, n, mean`` (optional ``sd``,
  ``unit``, ``sd_ddof``, ``model_id``).

``sd_ddof: 0`` says the source printed a population SD; it is converted to the sample SD
(``sd · sqrt(n / (n − 1))``) and the published figure is kept beside it.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from sparkreport import metrics as metric_catalog
from sparkreport.errors import ParseError, SchemaError
from sparkreport.ingest.base import ParsedRun, Parser, Source, register, stable_id
from sparkreport.names import TITLE_FIX, closest, title_problem, title_text
from sparkreport.schema import (
    ENVIRONMENT_KINDS,
    TITLE_NOTE,
    Environment,
    Hardware,
    Model,
    RunRecord,
    Software,
    SummaryStat,
    Workload,
    physical_problem,
    slug,
)
from sparkreport.store import RawFile
from sparkreport.yamllines import Where

MARKER = "published-summary"
_CSV_REQUIRED = ("model", "environment", "metric", "n", "mean")
#: ``sparkreport: …`` at the start of a line: the marker a sparkreport YAML file starts with.
_MARKER_LINE = re.compile(r"^sparkreport:[ \t]*['\"]?([^'\"\s#]*)", re.MULTILINE)
#: The keys of a YAML file: at the top, in an arm, in a metric's figures, in an environment, in a model.
_TOP_KEYS = ("sparkreport", "campaign", "title", "source", "sd_ddof", "hardware", "software", "workload",
             "environments", "models", "arms")
_ARM_KEYS = ("model", "environment", "n", "sd_ddof", "note", "metrics")
_STAT_KEYS = ("mean", "sd", "unit", "n", "sd_ddof")
_ENVIRONMENT_KEYS = ("kind", "details")
_MODEL_KEYS = ("id", "display_name", "details")
_SECTIONS = {"hardware": Hardware, "software": Software, "workload": Workload}
_FORMAT_FIX = "see the published-summary format in the README"
#: unit as published → factor to the canonical unit, per canonical unit.
_CONVERSIONS: dict[str, dict[str, float]] = {
    "GiB": {"GiB": 1.0, "MiB": 1 / 1024, "GB": 1e9 / 2**30},
    "ms": {"ms": 1.0, "s": 1000.0},
    "s": {"s": 1.0, "ms": 0.001},
    "tok/s": {"tok/s": 1.0, "tokens/s": 1.0, "tokens/sec": 1.0},
    "req/s": {"req/s": 1.0, "requests/s": 1.0, "req/sec": 1.0},
    "°C": {"°C": 1.0, "C": 1.0},
}


def _stat(metric: str, spec: dict[str, Any], n: Any, ddof: Any, path: Path, where: str) -> SummaryStat:
    if not metric_catalog.is_metric(metric):
        raise ParseError(path, f"{where}: {metric!r} is not a canonical metric name",
                         fix="use a name from `sparkreport metrics`")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParseError(path, f"{where}: n must be a positive integer, found {n!r}", fix="give the run count")
    mean = spec.get("mean")
    sd = spec.get("sd")
    for what, value in (("mean", mean), ("sd", sd)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not math.isfinite(value)):
            raise ParseError(path, f"{where}: {what} must be a number, found {value!r}", fix="fix that value")
    if mean is None:
        raise ParseError(path, f"{where}: mean is missing", fix="every arm needs a mean")
    if sd is not None and sd < 0:
        raise ParseError(path, f"{where}: sd = {sd:g} is negative (a standard deviation never is)",
                         fix="fix that value (the spread, not a signed difference)")
    canonical = metric_catalog.unit_of(metric)
    unit = spec.get("unit") or canonical
    factor = _CONVERSIONS.get(canonical, {canonical: 1.0}).get(unit)
    if factor is None:
        raise ParseError(path, f"{where}: unit {unit!r} cannot be converted to {canonical!r}",
                         fix=f"give the figure in {canonical}")
    ddof = 1 if ddof is None else ddof
    if ddof not in (0, 1):
        raise ParseError(path, f"{where}: sd_ddof must be 0 or 1", fix="0 = population SD, 1 = sample SD")
    sample_sd = None
    if sd is not None:
        sample_sd = float(sd) * factor
        if ddof == 0 and n > 1:
            sample_sd *= math.sqrt(n / (n - 1))
    problem = physical_problem(metric, float(mean) * factor)
    if problem is not None:
        raise ParseError(path, f"{where}: mean: {problem}", fix="fix that value")
    return SummaryStat(
        n=n, mean=float(mean) * factor, sd=sample_sd,
        sd_as_published=None if sd is None else float(sd),
        sd_ddof_as_published=None if sd is None else ddof,
        unit_as_published=unit,
    )


@register
class PublishedSummaryParser(Parser):
    name = "published-summary"
    description = "per-arm published figures (n, mean, sd, unit) as sparkreport YAML or CSV"
    versions = "sparkreport published-summary v1"
    default_campaign = "published"

    def detect(self, source: Source) -> bool:
        head = source.head_text.lstrip("\ufeff")
        if f"sparkreport: {MARKER}" in head or _MARKER_LINE.search(head):
            return True  # a misspelt marker too: parse() says what it should be
        first = head.splitlines()[0] if head else ""
        columns = {c.strip().lower() for c in first.split(",")}
        return all(c in columns for c in _CSV_REQUIRED)

    def parse(self, source: Source) -> list[ParsedRun]:
        text = source.text()
        if f"sparkreport: {MARKER}" in text[:4096]:
            return self._yaml(source, text)
        marker = _MARKER_LINE.search(text[:4096].lstrip("\ufeff"))
        if marker is not None:
            near = closest(marker.group(1), (MARKER,))
            raise ParseError(source.path, f"sparkreport: {marker.group(1)!r} is not a format sparkreport reads",
                             line=text.count("\n", 0, marker.start()) + 1,
                             fix=f"did you mean `sparkreport: {near}`?" if near
                             else f"a published-summary file starts with `sparkreport: {MARKER}`")
        return self._csv(source, text)

    def _yaml(self, source: Source, text: str) -> list[ParsedRun]:
        path = source.path
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise ParseError(path, f"is not valid YAML ({getattr(exc, 'problem', exc)})",
                             line=mark.line + 1 if mark else None, fix="fix the YAML syntax") from None
        where = _Where(path, text)
        if not isinstance(doc, dict) or not isinstance(doc.get("arms"), list):
            raise where.error("arms" if isinstance(doc, dict) and "arms" in doc else "", "needs a list under 'arms'",
                              fix=_FORMAT_FIX)
        where.known("", doc, _TOP_KEYS)
        if "title" in doc and title_problem(doc["title"]):
            raise where.error("title", f"title {title_problem(doc['title'])}",
                              fix=TITLE_FIX if not isinstance(doc["title"], str | None) else
                              "write the title the pages show, or remove the line to show the campaign's name")
        for section, kind in _SECTIONS.items():
            where.known(section, doc.get(section), tuple(f.name for f in fields(kind)))
        ddof = doc.get("sd_ddof")
        envs = where.named("environments", doc.get("environments"), _ENVIRONMENT_KEYS)
        models = where.named("models", doc.get("models"), _MODEL_KEYS)
        runs = []
        for index, arm in enumerate(doc["arms"]):
            at = f"arms[{index}]"
            if not isinstance(arm, dict) or not isinstance(arm.get("metrics"), dict):
                raise where.error(at, f"{at} needs model, environment, n and metrics", fix=_FORMAT_FIX)
            where.known(at, arm, _ARM_KEYS)
            for key in ("model", "environment"):
                if arm.get(key) is None:
                    raise where.error(at, f"{at}: {key} is missing",
                                      fix=f"add `{key}:` (every arm names its model and its environment)")
            stats = {}
            for metric, spec in arm["metrics"].items():
                key = f"{at}.metrics.{metric}"
                if not isinstance(spec, dict):
                    spec = {"mean": spec}
                where.known(key, spec, _STAT_KEYS)
                try:
                    stats[metric] = _stat(metric, spec, spec.get("n", arm.get("n")),
                                          spec.get("sd_ddof", arm.get("sd_ddof", ddof)), path, key)
                except ParseError as exc:
                    raise where.error(key, exc.problem, fix=exc.fix) from None
            model_key = str(arm["model"])
            env_key = str(arm["environment"])
            run = self._run(source, doc, model_key, models.get(model_key) or {},
                            env_key, envs.get(env_key) or {}, stats, arm.get("note"))
            where.check(run.record, model_key, env_key)
            runs.append(run)
        return runs

    def _csv(self, source: Source, text: str) -> list[ParsedRun]:
        path = source.path
        reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
        fields = [f.strip().lower() for f in reader.fieldnames or []]
        reader.fieldnames = fields
        arms: dict[tuple[str, str], dict[str, SummaryStat]] = {}
        ids: dict[str, str] = {}
        for row in reader:
            line = reader.line_num
            if None in row or any(row.get(c) in (None, "") for c in _CSV_REQUIRED):
                raise ParseError(path, "row is missing a value or has extra cells", line=line,
                                 fix=f"each row needs {', '.join(_CSV_REQUIRED)}")
            try:
                n = int(row["n"])
                spec: dict[str, Any] = {"mean": float(row["mean"]), "unit": row.get("unit") or None}
                if row.get("sd"):
                    spec["sd"] = float(row["sd"])
                ddof = int(row["sd_ddof"]) if row.get("sd_ddof") else None
            except ValueError as exc:
                raise ParseError(path, f"not a number ({exc})", line=line, fix="fix that cell") from None
            key = (row["model"].strip(), row["environment"].strip())
            try:
                arms.setdefault(key, {})[row["metric"].strip()] = _stat(
                    row["metric"].strip(), spec, n, ddof, path, "row")
            except ParseError as exc:
                raise ParseError(path, exc.problem, line=line, fix=exc.fix) from None
            if row.get("model_id"):
                ids[key[0]] = row["model_id"].strip()
        if not arms:
            raise ParseError(path, "has a header but no rows", fix="add one row per arm and metric")
        return [
            self._run(source, {}, model, {"id": ids.get(model)}, env, {}, stats, None)
            for (model, env), stats in arms.items()
        ]

    def _run(self, source: Source, doc: dict[str, Any], model_key: str, model: dict[str, Any],
             env_key: str, env: dict[str, Any], stats: dict[str, SummaryStat], note: Any) -> ParsedRun:
        path = source.path
        kind = env.get("kind", env_key if env_key in ENVIRONMENT_KINDS else "unknown")
        try:
            record = RunRecord(
                run_id="", campaign="", record_type="arm_summary",
                model=Model(id=model.get("id"), name=model_key,
                            display_name=model.get("display_name") or model.get("id") or model_key,
                            details=dict(model.get("details") or {})),
                environment=Environment(name=env_key, kind=kind, details=dict(env.get("details") or {})),
                workload=Workload(**(doc.get("workload") or {})),
                software=Software(**(doc.get("software") or {})),
                hardware=Hardware(**(doc.get("hardware") or {})),
                summary=stats,
            )
        except TypeError as exc:
            raise ParseError(path, f"unknown field ({exc})", fix="see the published-summary format") from None
        if doc.get("source"):
            record.provenance.notes.append(f"published in: {doc['source']}")
        title = title_text(doc["title"]) if doc.get("title") else ""
        if title:  # the campaign's title, carried as its source is (render.report reads both)
            record.provenance.notes.append(f"{TITLE_NOTE} {title}")
        if note:
            record.provenance.notes.append(str(note))
        natural = slug(f"summary-{model_key}-{env_key}-{stable_id(source.sha256)[:8]}")
        campaign = doc.get("campaign")
        return ParsedRun(record=record, natural_id=natural,
                         raw=[RawFile(source.path.name, source=source.path)],
                         campaign=slug(str(campaign)) if campaign else None)


class _Where(Where[ParseError]):
    """A published-summary YAML file's keys and their lines, for one-line errors."""

    def __init__(self, path: Path, text: str):
        super().__init__(path, text, ParseError)

    def known(self, at: str, mapping: Any, keys: tuple[str, ...]) -> None:
        """Refuse a mapping at ``at`` that is not one, or holds a key not in ``keys``."""
        if mapping is None:
            return
        if not isinstance(mapping, dict):
            raise self.error(at, f"{at} must be a mapping (KEY: VALUE lines)", fix=_FORMAT_FIX)
        for key in mapping:
            if key not in keys:
                name = f"{at}.{key}" if at else str(key)
                near = closest(str(key), keys)
                raise self.error(name, f"{name}: unknown key",
                                 fix=f"did you mean {near!r}?" if near else f"known keys: {', '.join(keys)}")

    def named(self, at: str, mapping: Any, keys: tuple[str, ...]) -> dict[str, dict[str, Any]]:
        """``environments:`` or ``models:``: names, each a mapping of ``keys``."""
        if mapping is None:
            return {}
        if not isinstance(mapping, dict):
            raise self.error(at, f"{at} must be a mapping of names", fix=_FORMAT_FIX)
        for name, entry in mapping.items():
            self.known(f"{at}.{name}", entry, keys)
        return {str(name): entry for name, entry in mapping.items()}

    def check(self, record: RunRecord, model_key: str, env_key: str) -> None:
        """Read the record as the store will (types, kinds, impossible values), naming the YAML key."""
        try:
            RunRecord.from_dict(record.to_dict(), self.path)
        except SchemaError as exc:
            field = exc.field or ""
            section, _, rest = field.partition(".")
            key = {"environment": f"environments.{env_key}", "model": f"models.{model_key}"}.get(section, section)
            key = f"{key}.{rest}" if rest else key
            problem = exc.problem.removeprefix(f"field {field!r}").lstrip(": ")
            if field and problem.startswith(f"{field} "):  # "hardware.memory_pool_gib = -3 GiB is negative"
                message = key + problem.removeprefix(field)
            else:
                message = f"{key}: {problem}" if key else problem
            raise self.error(key, message, fix="fix that value") from None


