"""The run record: what one ``runs/<campaign>/<run_id>/run.json`` holds.

Validated once, at the boundary (``RunRecord.from_dict``); after that the code trusts it.
Every file carries ``schema_version``; older versions are migrated step by step, newer ones
are refused with a message that says how to upgrade.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal

from sparkreport import metrics as metric_catalog
from sparkreport.errors import SchemaError

SCHEMA_VERSION = 2

RecordType = Literal["run", "arm_summary"]
ENVIRONMENT_KINDS = ("native", "chroot", "container", "cgroup", "unknown")

#: The source format of a run ``sparkreport run`` made: this prefix and its workload's kind.
#: The provenance note a published summary's ``title:`` leaves on each of its records
#: ("campaign title: …"): the pages read the campaign's title back from it.
TITLE_NOTE = "campaign title:"
OWN_FORMAT_PREFIX = "sparkreport-run/"
#: Sources whose ``peak_memory_gib`` (schema 1) is the peak *including* the KV cache. Every other
#: source that reported one printed TensorRT-LLM's "Peak memory during memory usage profiling":
#: memory in use before the KV cache is allocated.
PEAK_INCLUDES_KV_FORMATS = (f"{OWN_FORMAT_PREFIX}torch",)
#: Engines whose published "peak memory" is TensorRT-LLM's pre-KV-cache figure.
PRE_KV_ENGINES = ("trtllm", "tensorrt-llm", "tensorrt_llm", "trt-llm")


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` when it is an object, else {} (the reader reports malformed sections later)."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def peak_is_pre_kv(source_format: str, engine: str | None) -> bool:
    """Whether a schema-1 ``peak_memory_gib`` from this source means "before the KV cache".

    The source format decides; a published summary (hand-typed figures) is decided by its
    engine, and one of another or no engine keeps the plain "peak memory" meaning.
    """
    if source_format in PEAK_INCLUDES_KV_FORMATS:
        return False
    if source_format == "published-summary":
        return (engine or "").lower() in PRE_KV_ENGINES
    return True


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 → 2: ``peak_memory_gib`` splits into ``pre_kv_memory_gib`` (memory in use before
    the KV cache is allocated) and ``peak_memory_gib`` (peak in use, KV cache included); a torch
    run's architecture (kept under ``workload.details.model``) becomes its ``model.details``."""
    provenance = _section(data, "provenance")
    software = _section(data, "software")
    source_format = str(provenance.get("format") or "")
    if source_format in PEAK_INCLUDES_KV_FORMATS:
        _torch_model_facts(data)
    if not peak_is_pre_kv(source_format, software.get("engine")):
        return data
    renamed = False
    for section in ("metrics", "summary"):
        values = data.get(section)
        if isinstance(values, dict) and "peak_memory_gib" in values:
            data[section] = {("pre_kv_memory_gib" if k == "peak_memory_gib" else k): v for k, v in values.items()}
            renamed = True
    if renamed:
        notes = list(provenance.get("notes") or [])
        notes.append("schema 1 → 2: peak_memory_gib renamed pre_kv_memory_gib (this source reports memory "
                     "in use before the KV cache is allocated)")
        data["provenance"] = {**provenance, "notes": notes}
    return data


TORCH_FACTS_SOURCE = "recorded by the torch runner (the model as loaded)"


def _torch_model_facts(data: dict[str, Any]) -> None:
    """Fill ``model.details`` of a schema-1 torch run from ``workload.details.model``."""
    from sparkreport.catalogs import facts_from_config

    model = _section(data, "model")
    workload = _section(data, "workload")
    loaded = (workload.get("details") or {}).get("model")
    if model.get("details") or not isinstance(loaded, dict) or not isinstance(loaded.get("config"), dict):
        return
    data["model"] = {**model, "details": facts_from_config(
        loaded.get("parameters"), loaded["config"], loaded.get("dtype"), loaded.get("weights_gib"),
        TORCH_FACTS_SOURCE)}


#: ``MIGRATIONS[n]`` turns a version-n dict into a version-(n+1) dict; the loader walks the chain.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2}

_SLUG_RE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(text: str) -> str:
    """A file-name-safe form of ``text`` (letters, digits, '.', '_', '-')."""
    cleaned = _SLUG_RE.sub("-", text.strip()).strip("-.")
    return cleaned or "unnamed"


@dataclass
class Model:
    id: str | None = None
    name: str = "unknown"
    display_name: str | None = None
    #: An inline model description (params_b, active_params_b, layers, kv_heads, head_dim,
    #: dtype, weight_gb) for models the catalog does not know.
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Environment:
    name: str = "unknown"
    kind: str = "unknown"
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Workload:
    num_requests: int | None = None
    input_len: float | None = None
    output_len: float | None = None
    batch_size: int | None = None
    concurrency: int | None = None
    kv_cache_fraction: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Software:
    engine: str | None = None
    engine_version: str | None = None
    backend: str | None = None
    cuda: str | None = None
    driver: str | None = None
    image: str | None = None
    image_digest: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Hardware:
    gpu_name: str | None = None
    memory_pool_gib: float | None = None
    unified_memory: bool | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Status:
    exit_code: int | None = None
    ok: bool = True
    reason: str | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class Provenance:
    source_path: str = ""
    source_sha256: str = ""
    source_locator: str | None = None
    format: str = ""
    ingested_at: str = ""
    sparkreport_version: str = ""
    raw_files: list[str] = field(default_factory=list)
    #: Tables written beside run.json as ``<name>.csv`` (e.g. ``requests``, ``samples``).
    tables: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class SummaryStat:
    """A published per-arm figure: n, mean and (sample) sd, as far as the source gave them."""

    n: int
    mean: float
    sd: float | None = None
    sd_as_published: float | None = None
    sd_ddof_as_published: int | None = None
    unit_as_published: str | None = None


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """``dataclasses.asdict`` without its deep copies: dataclasses → dicts, containers rebuilt,
    everything else passed through (the result is only serialised). Ten times faster on a
    record, which matters at tens of thousands of runs."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if is_dataclass(value) and not isinstance(value, type):
        names = _FIELD_NAMES.get(type(value))
        if names is None:
            names = _FIELD_NAMES[type(value)] = tuple(f.name for f in fields(value))
        return {name: _plain(getattr(value, name)) for name in names}
    return value


@dataclass
class RunRecord:
    """One run (``record_type='run'``) or one published arm summary (``'arm_summary'``)."""

    run_id: str
    campaign: str
    record_type: RecordType = "run"
    iteration: int | None = None
    started_at: str | None = None
    started_at_local: str | None = None
    model: Model = field(default_factory=Model)
    environment: Environment = field(default_factory=Environment)
    workload: Workload = field(default_factory=Workload)
    software: Software = field(default_factory=Software)
    hardware: Hardware = field(default_factory=Hardware)
    metrics: dict[str, float | None] = field(default_factory=dict)
    summary: dict[str, SummaryStat] = field(default_factory=dict)
    status: Status = field(default_factory=Status)
    provenance: Provenance = field(default_factory=Provenance)
    labels: dict[str, str] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, keys in a stable order (schema_version first)."""
        data = _plain(self)
        ordered: dict[str, Any] = {"schema_version": data.pop("schema_version")}
        ordered.update(data)
        if self.record_type == "run":
            ordered.pop("summary")
        return ordered

    @classmethod
    def from_dict(cls, data: Any, path: str | Path = "<run.json>") -> RunRecord:
        """Validate a run.json dict (migrating older versions) into a record."""
        if not isinstance(data, dict):
            raise SchemaError(path, "run.json must hold a JSON object", fix=_REINGEST)
        data = migrate(data, path)
        reader = _Reader(path)
        record_type = reader.choice(data, "record_type", ("run", "arm_summary"), default="run")
        record = cls(
            schema_version=SCHEMA_VERSION,
            run_id=reader.text(data, "run_id", required=True) or "",
            campaign=reader.text(data, "campaign", required=True) or "",
            record_type=record_type,  # type: ignore[arg-type]
            iteration=reader.integer(data, "iteration"),
            started_at=reader.time(data, "started_at"),
            started_at_local=reader.time(data, "started_at_local"),
            model=reader.section(data, "model", Model),
            environment=_allowlisted(reader.environment(data)),
            workload=reader.section(data, "workload", Workload),
            software=reader.section(data, "software", Software),
            hardware=reader.section(data, "hardware", Hardware),
            metrics=reader.metrics(data),
            summary=reader.summary(data),
            status=reader.section(data, "status", Status),
            provenance=reader.section(data, "provenance", Provenance),
            labels=reader.labels(data),
        )
        for key, problem in field_problems(record):
            error = SchemaError(path, f"field {key!r}: {problem}", fix=_IMPOSSIBLE_FIX)
            error.field = key
            raise error
        from sparkreport.names import clean_names

        clean_names(record)  # a hand-edited or older run.json: no name displays as another
        return record


_REINGEST = "re-create it with `sparkreport ingest` from its source"


def _allowlisted(environment: Environment) -> Environment:
    """The environment with ``details.env_vars`` down to the allowlist, whatever the file holds.

    Records written before the allowlist (or edited by hand) may hold a machine's whole
    environment; reading one never hands more than the allowlist to a page, a chart or a
    download (``sparkreport scrub`` rewrites the file itself).
    """
    from sparkreport.execute.envcapture import recorded_env

    kept = recorded_env(environment.details)
    if kept is not None and kept != environment.details["env_vars"]:
        environment.details["env_vars"] = kept
    return environment


def migrate(data: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """Bring ``data`` up to SCHEMA_VERSION, one step at a time; refuse files from the future."""
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SchemaError(path, f"schema_version is {version!r}, expected an integer ≥ 1", fix=_REINGEST)
    if version > SCHEMA_VERSION:
        raise SchemaError(
            path,
            f"written by a newer sparkreport (schema_version {version}; this one reads up to "
            f"{SCHEMA_VERSION})",
            fix="upgrade sparkreport (`pip install -U sparkreport`)",
        )
    while version < SCHEMA_VERSION:
        data = MIGRATIONS[version](dict(data))
        version += 1
        data["schema_version"] = version
    return data


#: Temperatures a GPU or CPU sensor can report (°C): outside them the file is corrupted.
TEMPERATURE_RANGE_C = (-40.0, 150.0)

_IMPOSSIBLE_FIX = "the value cannot be measured — fix the source (a corrupted file?) and ingest it again"


def physical_problem(name: str, value: float | None) -> str | None:
    """Why ``value`` cannot be a measurement of metric ``name`` (None when it can).

    Every metric but a temperature is a rate, a duration, a size, a count or a fraction:
    never negative. Temperatures lie in :data:`TEMPERATURE_RANGE_C`. Non-finite values never.
    """
    if value is None:
        return None
    if not math.isfinite(value):
        return f"{name} is {value} (not a finite number)"
    unit = metric_catalog.unit_of(name)
    if unit == "°C":
        low, high = TEMPERATURE_RANGE_C
        if not low <= value <= high:
            return f"{name} = {value:g} °C is outside {low:g}…{high:g} °C"
    elif value < 0:
        return f"{name} = {value:g}{' ' + unit if unit else ''} is negative"
    return None


#: Fields of a record that are sizes, counts or fractions (never negative), as (section, field).
NON_NEGATIVE_FIELDS = (("hardware", "memory_pool_gib"), ("workload", "num_requests"), ("workload", "input_len"),
                       ("workload", "output_len"), ("workload", "batch_size"), ("workload", "concurrency"),
                       ("workload", "kv_cache_fraction"))


def field_problems(record: RunRecord) -> list[tuple[str, str]]:
    """``(section.field, why)`` for each of :data:`NON_NEGATIVE_FIELDS` that is negative or not
    finite (``hardware.memory_pool_gib = -3 GiB is negative``)."""
    problems = []
    for section, name in NON_NEGATIVE_FIELDS:
        value = getattr(getattr(record, section), name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue  # None, or a wrong type the reader names
        key = f"{section}.{name}"
        unit = " GiB" if name.endswith("_gib") else ""
        if not math.isfinite(value):
            problems.append((key, f"{key} is {value} (not a finite number)"))
        elif value < 0:
            problems.append((key, f"{key} = {value:g}{unit} is negative"))
    return problems


def physical_problems(record: RunRecord) -> list[str]:
    """Every impossible value of a record (its metrics, published means and sds, and the sizes
    and counts of :data:`NON_NEGATIVE_FIELDS`)."""
    problems = [p for name, value in record.metrics.items() if (p := physical_problem(name, value))]
    for name, stat in record.summary.items():
        for value in (stat.mean, stat.sd):
            if (problem := physical_problem(name, value)) is not None:
                problems.append(problem)
    return problems + [problem for _key, problem in field_problems(record)]


class _Reader:
    """Type-checks run.json fields, naming the key path in every complaint."""

    def __init__(self, path: str | Path):
        self.path = path

    def fail(self, key: str, problem: str) -> SchemaError:
        error = SchemaError(self.path, f"field {key!r} {problem}", fix=_REINGEST)
        error.field = key
        return error

    def text(self, data: dict[str, Any], key: str, *, required: bool = False, where: str = "") -> str | None:
        value = data.get(key)
        if value is None:
            if required:
                raise self.fail(where + key, "is missing")
            return None
        if not isinstance(value, str):
            raise self.fail(where + key, f"must be a string, not {type(value).__name__}")
        return value

    def time(self, data: dict[str, Any], key: str) -> str | None:
        """An ISO 8601 time (``2026-01-31T12:00:00Z``), kept as written."""
        import datetime as dt

        value = self.text(data, key)
        if value is None:
            return None
        try:
            dt.datetime.fromisoformat(value)
        except ValueError:
            raise self.fail(key, f"is {value!r}, not an ISO 8601 time such as 2026-01-31T12:00:00Z") from None
        return value

    def environment(self, data: dict[str, Any]) -> Environment:
        environment: Environment = self.section(data, "environment", Environment)
        if environment.kind not in ENVIRONMENT_KINDS:
            raise self.fail("environment.kind", f"must be one of {', '.join(ENVIRONMENT_KINDS)}, "
                            f"not {environment.kind!r}")
        return environment

    def integer(self, data: dict[str, Any], key: str, where: str = "") -> int | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where + key, f"must be an integer, not {value!r}")
        return value

    def choice(self, data: dict[str, Any], key: str, options: tuple[str, ...], default: str) -> str:
        value = data.get(key, default)
        if value not in options:
            raise self.fail(key, f"must be one of {', '.join(options)}, not {value!r}")
        return str(value)

    def section(self, data: dict[str, Any], key: str, kind: type[Any]) -> Any:
        value = _object(data, key)
        if not isinstance(value, dict):
            raise self.fail(key, f"must be an object, not {_json_type(value)}")
        if _plainly_valid(_field_types(kind), value):
            return kind(**value)
        known = kind.__dataclass_fields__
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise self.fail(f"{key}.{unknown[0]}", "is not a known field")
        for name, spec in known.items():
            if name in value and value[name] is not None:
                _check_type(self, f"{key}.{name}", value[name], spec.type)
        return kind(**value)

    def metrics(self, data: dict[str, Any]) -> dict[str, float | None]:
        value = _object(data, "metrics")
        if not isinstance(value, dict):
            raise self.fail("metrics", f"must be an object of metric name → number, not {_json_type(value)}")
        out: dict[str, float | None] = {}
        for name, number in value.items():
            metric = metric_catalog.lookup(name)
            if metric is None:
                raise self.fail(f"metrics.{name}", "is not a canonical metric name")
            if number is None:
                out[name] = None
            elif isinstance(number, bool) or not isinstance(number, int | float):
                raise self.fail(f"metrics.{name}", f"must be a number or null, not {number!r}")
            elif not math.isfinite(number):
                raise self.fail(f"metrics.{name}", "must be finite")
            elif (number < 0 or metric.unit == "°C") and (problem := physical_problem(name, float(number))):
                raise SchemaError(self.path, f"field 'metrics.{name}': {problem}", fix=_IMPOSSIBLE_FIX)
            else:
                out[name] = float(number)
        return out

    def summary(self, data: dict[str, Any]) -> dict[str, SummaryStat]:
        value = _object(data, "summary")
        if not isinstance(value, dict):
            raise self.fail("summary", f"must be an object, not {_json_type(value)}")
        out = {}
        for name, stat in value.items():
            if not metric_catalog.is_metric(name):
                raise self.fail(f"summary.{name}", "is not a canonical metric name")
            out[name] = self.section({name: stat}, name, SummaryStat)
            for value in (out[name].mean, out[name].sd):
                if (problem := physical_problem(name, value)) is not None:
                    raise SchemaError(self.path, f"field 'summary.{name}': {problem}", fix=_IMPOSSIBLE_FIX)
        return out

    def labels(self, data: dict[str, Any]) -> dict[str, str]:
        value = _object(data, "labels")
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise self.fail("labels", "must be an object of string → string")
        return dict(value)


def _object(data: dict[str, Any], key: str) -> Any:
    """``data[key]``, {} when absent or null (anything else, ``[]`` included, is checked as it is)."""
    value = data.get(key)
    return {} if value is None else value


def _json_type(value: Any) -> str:
    """What a JSON value is, in JSON's words (``[]`` → 'a list')."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else type(value).__name__


_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "dict": (dict,),
    "list": (list,),
}


_EXACT_TYPES: dict[type, dict[str, frozenset[type]]] = {}


def _field_types(kind: type[Any]) -> dict[str, frozenset[type]]:
    """A record section's fields → the exact types each admits, None included (empty: any)."""
    exact = _EXACT_TYPES.get(kind)
    if exact is None:
        exact = _EXACT_TYPES[kind] = {}
        for name, spec in kind.__dataclass_fields__.items():
            allowed = _allowed_types(str(spec.type))
            exact[name] = frozenset({*allowed, type(None)}) if allowed else frozenset()
    return exact


def _plainly_valid(types: dict[str, frozenset[type]], value: dict[str, Any]) -> bool:
    """Every key a known field and every value of exactly an admitted type: the common case,
    checked with one set lookup a field. False sends the section to the full check, which
    accepts subclasses and names the first problem."""
    for name, item in value.items():
        exact = types.get(name)
        if exact is None or (exact and type(item) not in exact):
            return False
    return True


@functools.lru_cache(maxsize=256)
def _allowed_types(annotation: str) -> tuple[type, ...]:
    """The Python types a dataclass annotation string such as ``'float | None'`` admits."""
    allowed: tuple[type, ...] = ()
    for part in annotation.replace(" ", "").split("|"):
        base = part.split("[")[0]
        allowed += _TYPES.get(base, ())
    return allowed


def _check_type(reader: _Reader, key: str, value: Any, annotation: Any) -> None:
    """Check ``value`` against a dataclass annotation string such as ``'float | None'``."""
    allowed = _allowed_types(str(annotation))
    if not allowed:
        return
    if isinstance(value, bool) and bool not in allowed:
        raise reader.fail(key, f"must not be a boolean ({value!r})")
    if not isinstance(value, allowed):
        raise reader.fail(key, f"has the wrong type ({type(value).__name__})")
