"""The campaign file: what to run, validated once, at the boundary, into typed records.

A campaign crosses models × environments × cache states × iterations with one workload. Every
complaint names the file, the line of the offending key and the fix, on one line::

    campaigns/x.yaml:12: environments[1].kind: unknown environment kind 'podman' — choose one
    of: native, chroot, docker, cgroup

Only click, PyYAML and the standard library are imported here: ``sparkreport run`` must work on
a GPU machine that has nothing else.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sparkreport.errors import InputError
from sparkreport.names import MAX_NAME_CHARS, closest
from sparkreport.schema import slug
from sparkreport.yamllines import Where

ORDERS = ("randomized-blocks", "sequential")
CACHE_STATES = ("cold", "warm", "as-is")
ON_FAIL = ("error", "warn")
ON_BREACH = ("next", "stop")
STALL_SIGNALS = ("output", "gpu", "cpu")


class CampaignError(InputError):
    """A campaign file that cannot be run: names the file, the line and the fix."""


@dataclass(frozen=True)
class ModelSpec:
    """One model of the campaign (what a workload needs to find or build it)."""

    name: str
    id: str | None = None
    path: str | None = None
    preset: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    display_name: str | None = None


@dataclass(frozen=True)
class EnvironmentSpec:
    """One execution environment: a kind plus its own options (checked by its class)."""

    name: str
    kind: str
    options: dict[str, Any] = field(default_factory=dict)
    line: int | None = None


@dataclass(frozen=True)
class WorkloadSpec:
    """The workload every cell runs: a kind plus its own options (checked by its class)."""

    kind: str
    options: dict[str, Any] = field(default_factory=dict)
    line: int | None = None


@dataclass(frozen=True)
class Cooldown:
    """Thermal control before each run: wait for both conditions, at most ``max_wait_s``."""

    max_temp_c: float = 45.0
    min_s: float = 300.0
    max_wait_s: float = 1800.0
    poll_s: float = 2.0


@dataclass(frozen=True)
class Monitoring:
    """The background sampler: NVML (when present), /proc/meminfo and the run's cgroup."""

    enabled: bool = True
    interval_s: float = 0.1
    nvml: bool = True
    gpu_index: int = 0


@dataclass(frozen=True)
class Preflight:
    """Checks before the campaign starts; ``on_fail`` says whether a failure stops it."""

    enabled: bool = True
    require_gpu: bool | None = None
    max_temp_c: float = 80.0
    max_cpu_load_pct: float = 10.0
    min_free_memory_fraction: float = 0.9
    on_fail: str = "warn"


@dataclass(frozen=True)
class Guard:
    """What keeps a run from taking the machine down (see :mod:`sparkreport.execute.guard`).

    ``min_available_gib``: kill the run when MemAvailable falls below it. 4 GiB protects a
    128 GB GB10: its 119–122 GiB pool is shared by the kernel, the runner and the GPU, and a
    unified-memory allocation that eats the last GiBs freezes the machine instead of failing with
    a CUDA out-of-memory error; 4 GiB (~3 % of the pool) leaves the kernel room to reclaim and
    the 10 Hz sampler a few hundred ms to react at allocation rates of 10–20 GiB/s.
    ``gpu_min_free_gib``: the same on NVML's free GPU memory (discrete GPUs; off by default, as a
    discrete GPU that runs out fails cleanly). ``stall_s``: kill a run that shows no progress
    signal (``stall_signals``: its output growing, the GPU busy, its processes using CPU) for that
    long. ``on_breach``: ``next`` run, or ``stop`` the campaign (``--resume`` continues it).
    ``oom_order``: benchmark processes get oom_score_adj 1000, the runner −900 (as root).
    """

    enabled: bool = True
    min_available_gib: float | None = 4.0
    gpu_min_free_gib: float | None = None
    stall_s: float | None = 600.0
    stall_signals: tuple[str, ...] = STALL_SIGNALS
    on_breach: str = "next"
    oom_order: bool = True


@dataclass(frozen=True)
class Campaign:
    """A validated campaign file."""

    path: Path
    name: str
    description: str
    models: tuple[ModelSpec, ...]
    environments: tuple[EnvironmentSpec, ...]
    workload: WorkloadSpec
    iterations: int = 5
    cache: tuple[str, ...] = ("as-is",)
    order: str = "randomized-blocks"
    seed: int = 0
    timeout_s: float = 3600.0
    cooldown: Cooldown = field(default_factory=Cooldown)
    monitoring: Monitoring = field(default_factory=Monitoring)
    preflight: Preflight = field(default_factory=Preflight)
    guard: Guard = field(default_factory=Guard)
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    sha256: str = ""
    #: Variables recorded besides the built-in allowlist (``NAME`` or ``PREFIX_*``).
    env_allowlist: tuple[str, ...] = ()
    #: What the site's pages call the campaign (its name, the folder, when empty); the site reads
    #: it from the copy kept in ``_campaign/``, and sparkreport.yml's ``campaigns:`` overrides it.
    title: str = ""

    def model(self, name: str) -> ModelSpec:
        """The model named ``name`` (names are unique)."""
        return next(m for m in self.models if m.name == name)

    def environment(self, name: str) -> EnvironmentSpec:
        """The environment named ``name`` (names are unique)."""
        return next(e for e in self.environments if e.name == name)


# --------------------------------------------------------------------------- YAML with lines


class _Doc(Where[CampaignError]):
    """A parsed campaign document (``data``) and the line of every key, for messages
    (:class:`~sparkreport.yamllines.Where`: ``fail`` at a path of keys, ``line`` of one)."""

    def __init__(self, path: Path, data: Any, node: yaml.Node | None):
        super().__init__(path, "", CampaignError, node=node)
        self.data = data


def read_yaml(path: Path) -> _Doc:
    """Parse a YAML file into data + key lines; syntax errors name the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CampaignError(path, "no such campaign file", fix="check the path") from None
    except UnicodeDecodeError:
        raise CampaignError(path, "is not UTF-8 text", fix="save the campaign file as UTF-8") from None
    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise CampaignError(path, f"is not valid YAML ({exc.problem})", line=line,
                            fix="fix the YAML syntax") from None
    except yaml.YAMLError as exc:
        raise CampaignError(path, f"is not valid YAML ({exc})", fix="fix the YAML syntax") from None
    return _Doc(path, data, node)


# --------------------------------------------------------------------------- field readers


_SIZE_RE = re.compile(r"^\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[KMGT]i?B?|B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def parse_size(value: Any) -> int | None:
    """``'64GiB'``, ``'64g'``, ``'512MiB'`` or an integer of bytes → bytes (binary units)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if not isinstance(value, str):
        return None
    match = _SIZE_RE.match(value)
    if not match:
        return None
    unit = (match["unit"] or "").upper()[:1]
    return int(float(match["num"]) * _UNITS[unit])


class Fields:
    """Typed reads from one mapping of the document, each complaint naming the key's line."""

    def __init__(self, doc: _Doc, where: tuple[Any, ...], data: Any, known: tuple[str, ...] | None):
        self.doc = doc
        self.where = where
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise doc.fail(where, f"must be a mapping, not {_kind(data)}", fix="write KEY: VALUE lines")
        self.data: dict[str, Any] = data
        if known is not None:
            for key in data:
                if key not in known:
                    near = closest(str(key), known)
                    hint = f"did you mean {near!r}?" if near else f"known keys: {', '.join(known)}"
                    raise doc.fail(where + (key,), "unknown key", fix=hint)

    def fail(self, key: str, problem: str, fix: str = "") -> CampaignError:
        return self.doc.fail(self.where + (key,), problem, fix)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def text(self, key: str, default: str | None = None, *, required: bool = False) -> str | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.fail(key, "is missing", fix=f"add `{key}:`")
            return default
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(key, f"must be a string, not {_kind(value)}")
        return str(value)

    def number(self, key: str, default: float, *, minimum: float = 0.0) -> float:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"must be a number, not {value!r}")
        if value < minimum:
            raise self.fail(key, f"must be ≥ {minimum:g}, not {value!r}")
        return float(value)

    def integer(self, key: str, default: int, *, minimum: int = 0) -> int:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be a whole number, not {value!r}")
        if value < minimum:
            raise self.fail(key, f"must be ≥ {minimum}, not {value!r}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, f"must be true or false, not {value!r}")
        return value

    def choice(self, key: str, options: tuple[str, ...], default: str) -> str:
        value = self.data.get(key, default)
        if value not in options:
            raise self.fail(key, f"must be one of {', '.join(options)}, not {value!r}")
        return str(value)

    def mapping(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, f"must be a mapping, not {_kind(value)}")
        return dict(value)

    def str_mapping(self, key: str) -> dict[str, str]:
        value = self.mapping(key)
        out: dict[str, str] = {}
        for name, item in value.items():
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise self.doc.fail(self.where + (key, name), f"must be a string, not {_kind(item)}",
                                    fix="quote the value")
            out[str(name)] = str(item)
        return out

    def sequence(self, key: str, *, required: bool = False) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.fail(key, "is missing", fix=f"add `{key}:` with at least one entry")
            return []
        if not isinstance(value, list):
            raise self.fail(key, f"must be a list, not {_kind(value)}", fix="write one `- ` item a line")
        if required and not value:
            raise self.fail(key, "is empty", fix="list at least one entry")
        return value


def _title(top: Fields) -> str:
    """The campaign's ``title:`` (optional): text, as sparkreport.yml's and a published summary's."""
    from sparkreport.names import TITLE_FIX, title_problem, title_text

    if "title" not in top.data:
        return ""
    problem = title_problem(top.data["title"])
    if problem:
        raise top.fail("title", problem, fix=TITLE_FIX if "text" in problem else
                       "write the title the pages show, or remove the line to show the campaign's name")
    return title_text(top.data["title"])


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            type(None): "empty"}.get(type(value), type(value).__name__)


# --------------------------------------------------------------------------- loading


_TOP = ("campaign", "title", "description", "models", "environments", "workload", "iterations", "cache",
        "order", "seed", "timeout_s", "cooldown", "monitoring", "preflight", "guard", "env", "labels",
        "env_allowlist")
_MODEL_KEYS = ("name", "id", "path", "preset", "config", "params", "display_name")


def load_campaign(path: Path) -> Campaign:
    """Read and validate a campaign file (environment and workload options included)."""
    from sparkreport.execute.environments import ENVIRONMENTS
    from sparkreport.execute.workloads import WORKLOADS

    path = Path(path)
    doc = read_yaml(path)
    if doc.data is None:
        raise CampaignError(path, "the campaign file is empty",
                            fix="start from an example in campaigns/ (see `sparkreport run --help`)")
    top = Fields(doc, (), doc.data, _TOP)
    name = top.text("campaign", required=True) or ""
    if len(name) > MAX_NAME_CHARS:
        raise top.fail("campaign", f"is {len(name)} characters long", fix=f"use at most {MAX_NAME_CHARS}")
    if slug(name) != name:
        raise top.fail("campaign", f"{name!r} is not a folder-safe name",
                       fix=f"use letters, digits, '.', '_' and '-' (e.g. {slug(name)!r})")

    models = tuple(_model(doc, i, item) for i, item in enumerate(top.sequence("models", required=True)))
    _unique(doc, "models", [m.name for m in models])

    environments = []
    for index, item in enumerate(top.sequence("environments", required=True)):
        where = ("environments", index)
        fields = Fields(doc, where, item, None)
        kind = fields.text("kind", required=True) or ""
        if kind not in ENVIRONMENTS:
            raise fields.fail("kind", f"unknown environment kind {kind!r}",
                              fix=f"choose one of: {', '.join(ENVIRONMENTS)}")
        env_name = fields.text("name", default=kind) or kind
        if len(env_name) > MAX_NAME_CHARS:
            raise fields.fail("name", f"is {len(env_name)} characters long", fix=f"use at most {MAX_NAME_CHARS}")
        if slug(env_name) != env_name:
            raise fields.fail("name", f"{env_name!r} is not a folder-safe name",
                              fix=f"use letters, digits, '.', '_' and '-' (e.g. {slug(env_name)!r})")
        options = {k: v for k, v in fields.data.items() if k not in ("kind", "name")}
        spec = EnvironmentSpec(name=env_name, kind=kind, options=options, line=doc.line(where))
        ENVIRONMENTS[kind].validate(spec, Fields(doc, where, item, ("kind", "name") +
                                                   ENVIRONMENTS[kind].option_keys))
        environments.append(spec)
    _unique(doc, "environments", [e.name for e in environments])

    wfields = Fields(doc, ("workload",), top.get("workload"), None)
    wkind = wfields.text("kind", required=True) or ""
    if wkind not in WORKLOADS:
        raise wfields.fail("kind", f"unknown workload kind {wkind!r}",
                           fix=f"choose one of: {', '.join(WORKLOADS)}")
    wspec = WorkloadSpec(kind=wkind, options={k: v for k, v in wfields.data.items() if k != "kind"},
                         line=doc.line(("workload",)))
    WORKLOADS[wkind].validate(wspec, Fields(doc, ("workload",), top.get("workload"),
                                             ("kind",) + WORKLOADS[wkind].option_keys), models)

    cache_value = top.get("cache", "as-is")
    cache_list = cache_value if isinstance(cache_value, list) else [cache_value]
    if not cache_list:
        raise top.fail("cache", "is empty", fix=f"choose from: {', '.join(CACHE_STATES)}")
    for index, state in enumerate(cache_list):
        if state not in CACHE_STATES:
            spot: tuple[Any, ...] = ("cache", index) if isinstance(cache_value, list) else ("cache",)
            raise doc.fail(spot, f"unknown cache state {state!r}",
                           fix=f"choose from: {', '.join(CACHE_STATES)}")
    _unique(doc, "cache", [str(s) for s in cache_list])

    return Campaign(
        path=path,
        name=name,
        description=top.text("description", default="") or "",
        title=_title(top),
        models=models,
        environments=tuple(environments),
        workload=wspec,
        iterations=top.integer("iterations", 5, minimum=1),
        cache=tuple(str(s) for s in cache_list),
        order=top.choice("order", ORDERS, "randomized-blocks"),
        seed=top.integer("seed", 0),
        timeout_s=top.number("timeout_s", 3600.0, minimum=1.0),
        cooldown=_cooldown(Fields(doc, ("cooldown",), top.get("cooldown"),
                                   ("max_temp_c", "min_s", "max_wait_s", "poll_s"))),
        monitoring=_monitoring(Fields(doc, ("monitoring",), top.get("monitoring"),
                                       ("enabled", "interval_s", "nvml", "gpu_index"))),
        preflight=_preflight(Fields(doc, ("preflight",), top.get("preflight"),
                                     ("enabled", "require_gpu", "max_temp_c", "max_cpu_load_pct",
                                      "min_free_memory_fraction", "on_fail"))),
        guard=_guard(Fields(doc, ("guard",), top.get("guard"),
                             ("enabled", "min_available_gib", "gpu_min_free_gib", "stall_s", "stall_signals",
                              "on_breach", "oom_order"))),
        env=top.str_mapping("env"),
        labels=top.str_mapping("labels"),
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        env_allowlist=_env_allowlist(doc, top.sequence("env_allowlist")),
    )


def _env_allowlist(doc: _Doc, items: list[Any]) -> tuple[str, ...]:
    from sparkreport.execute.envcapture import pattern_error

    for index, item in enumerate(items):
        problem = pattern_error(item) if isinstance(item, str) else f"must be a string, not {_kind(item)}"
        if problem:
            raise doc.fail(("env_allowlist", index), problem,
                           fix="list variable names (VLLM_USE_V1) or prefixes (MYLIB_*) whose values can "
                               "change a result")
    return tuple(items)


def _model(doc: _Doc, index: int, item: Any) -> ModelSpec:
    if isinstance(item, str):
        item = {"name": item}
    fields = Fields(doc, ("models", index), item, _MODEL_KEYS)
    name = fields.text("name", required=True) or ""
    if len(name) > MAX_NAME_CHARS:
        raise fields.fail("name", f"is {len(name)} characters long", fix=f"use at most {MAX_NAME_CHARS}")
    if slug(name) != name:
        raise fields.fail("name", f"{name!r} is not a folder-safe name",
                          fix=f"use letters, digits, '.', '_' and '-' (e.g. {slug(name)!r}); "
                              "put the full name in `id:` or `display_name:`")
    return ModelSpec(name=name, id=fields.text("id"), path=fields.text("path"),
                     preset=fields.text("preset"), config=fields.mapping("config"),
                     params=fields.mapping("params"), display_name=fields.text("display_name"))


def _unique(doc: _Doc, key: str, names: list[str]) -> None:
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            raise doc.fail((key, index), f"the name {name!r} is used twice",
                           fix="give each entry its own `name:`")
        seen.add(name)


def _cooldown(fields: Fields) -> Cooldown:
    return Cooldown(max_temp_c=fields.number("max_temp_c", 45.0),
                    min_s=fields.number("min_s", 300.0),
                    max_wait_s=fields.number("max_wait_s", 1800.0),
                    poll_s=fields.number("poll_s", 2.0, minimum=0.01))


def _monitoring(fields: Fields) -> Monitoring:
    interval = fields.number("interval_s", 0.1, minimum=0.01)
    return Monitoring(enabled=fields.flag("enabled", True), interval_s=interval,
                      nvml=fields.flag("nvml", True), gpu_index=fields.integer("gpu_index", 0))


def _preflight(fields: Fields) -> Preflight:
    require = fields.get("require_gpu")
    if require is not None and not isinstance(require, bool):
        raise fields.fail("require_gpu", f"must be true or false, not {require!r}")
    return Preflight(
        enabled=fields.flag("enabled", True),
        require_gpu=require,
        max_temp_c=fields.number("max_temp_c", 80.0),
        max_cpu_load_pct=fields.number("max_cpu_load_pct", 10.0),
        min_free_memory_fraction=fields.number("min_free_memory_fraction", 0.9),
        on_fail=fields.choice("on_fail", ON_FAIL, "warn"),
    )


def _guard(fields: Fields) -> Guard:
    def optional(key: str, default: float | None, minimum: float) -> float | None:
        if key in fields.data and fields.data[key] is None:
            return None  # `key: null` turns that guard off
        if default is None and key not in fields.data:
            return None
        value = fields.number(key, default if default is not None else 0.0, minimum=minimum)
        return value or None  # 0 also means off

    signals = fields.get("stall_signals", list(STALL_SIGNALS))
    if not isinstance(signals, list) or not signals:
        raise fields.fail("stall_signals", f"must be a non-empty list, not {signals!r}",
                          fix=f"list some of: {', '.join(STALL_SIGNALS)}")
    for index, signal in enumerate(signals):
        if signal not in STALL_SIGNALS:
            raise fields.doc.fail(fields.where + ("stall_signals", index), f"unknown progress signal {signal!r}",
                                  fix=f"choose from: {', '.join(STALL_SIGNALS)}")
    stall = optional("stall_s", 600.0, 0.0)
    if stall is not None and stall < 1.0:
        raise fields.fail("stall_s", f"must be ≥ 1 s, or null for off, not {stall!r}")
    return Guard(enabled=fields.flag("enabled", True),
                 min_available_gib=optional("min_available_gib", 4.0, 0.0),
                 gpu_min_free_gib=optional("gpu_min_free_gib", None, 0.0),
                 stall_s=stall, stall_signals=tuple(str(s) for s in signals),
                 on_breach=fields.choice("on_breach", ON_BREACH, "next"),
                 oom_order=fields.flag("oom_order", True))


def iter_cells_names(campaign: Campaign) -> Iterator[tuple[str, str, str]]:
    """Every (model, environment, cache) combination, in file order."""
    for model in campaign.models:
        for env in campaign.environments:
            for cache in campaign.cache:
                yield model.name, env.name, cache
