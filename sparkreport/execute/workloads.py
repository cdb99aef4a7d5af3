"""Workloads: what each cell runs, and how its output becomes canonical metrics.

One small class per workload kind, in a registry (as the parsers and environments are):

- ``torch``: the built-in reference workload (:mod:`sparkreport.execute.torch_bench`);
- ``trtllm``: ``trtllm-bench`` (optional build, then throughput or latency); its report JSON
  and log are read by the parser registry;
- ``vllm``: ``vllm bench throughput|latency``; its JSON result is read by the parser registry;
- ``command``: any command plus a declared parser;
- ``fake``: synthetic trtllm-bench reports, no GPU (tests, CI, trying a campaign out).

Command templates may use ``{model}``, ``{model_id}``, ``{model_path}``, ``{workdir}``,
``{iteration}``, ``{seed}``, ``{python}`` and, for trtllm/vllm/command, any key of the
workload's ``params`` or the model's ``params``.
"""

from __future__ import annotations

import json
import shlex
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import sparkreport
from sparkreport.catalogs import facts_from_config
from sparkreport.registry import registrar
from sparkreport.schema import TORCH_FACTS_SOURCE

if TYPE_CHECKING:
    from sparkreport.execute.campaign import Fields, ModelSpec, WorkloadSpec
    from sparkreport.execute.environments import ExecEnvironment
    from sparkreport.execute.plan import Cell

PACKAGE_PARENT = Path(sparkreport.__file__).resolve().parent.parent
TEMPLATE_FIELDS = ("model", "model_id", "model_path", "workdir", "iteration", "seed", "python")


@dataclass
class Step:
    """One command of a cell (e.g. ``build`` then ``bench``); each gets its own log."""

    name: str
    argv: list[str]
    gpu: bool = True
    env: dict[str, str] = field(default_factory=dict)

    @property
    def log_name(self) -> str:
        """The log file kept beside run.json."""
        return f"{self.name}.log"


@dataclass
class WorkloadResult:
    """What a workload's output said, ready to go into the run record."""

    metrics: dict[str, float | None] = field(default_factory=dict)
    model_id: str | None = None
    #: The name pages show when the campaign gives none (``display_name:``): what was run, said
    #: plainly ("qwen2-0.5b shape (random weights)", not the id "random:qwen2-0.5b").
    model_display_name: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    backend: str | None = None
    cuda: str | None = None
    workload: dict[str, Any] = field(default_factory=dict)
    software: dict[str, Any] = field(default_factory=dict)
    memory_phases: dict[str, dict[str, Any]] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    #: The model's facts as run (``model.details``: params_b, layers, kv_heads, head_dim, dtype, …),
    #: which the capacity and roofline checks use before the catalog.
    model_details: dict[str, Any] = field(default_factory=dict)
    keep: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None


class BaseWorkload:
    """Base of a workload kind."""

    kind: ClassVar[str]
    description: ClassVar[str]
    option_keys: ClassVar[tuple[str, ...]] = ()
    needs_gpu: ClassVar[bool] = True
    #: Whether the workload runs sparkreport's own code inside the environment.
    uses_package: ClassVar[bool] = False

    def __init__(self, spec: WorkloadSpec):
        self.spec = spec
        self.options = spec.options

    @classmethod
    def validate(cls, spec: WorkloadSpec, fields: Fields, models: tuple[ModelSpec, ...]) -> None:
        """Check this kind's options (raising CampaignError with the line)."""

    def steps(self, cell: Cell, model: ModelSpec, env: ExecEnvironment, workdir: Path) -> list[Step]:
        """The commands of one cell, in order (files they need are written into ``workdir``)."""
        raise NotImplementedError

    def collect(self, cell: Cell, model: ModelSpec, workdir: Path, logs: dict[str, Path]) -> WorkloadResult:
        """Read what the steps produced."""
        raise NotImplementedError

    def binds(self, model: ModelSpec) -> list[Path]:
        """Host paths the workload needs visible inside chroot/docker (same path)."""
        out = [Path(model.path)] if model.path and model.path.startswith("/") else []
        if self.uses_package:
            out.append(PACKAGE_PARENT)
        return out

    def launch_env(self) -> dict[str, str]:
        """Variables the workload itself needs (e.g. PYTHONPATH for sparkreport's programs)."""
        return {"PYTHONPATH": str(PACKAGE_PARENT)} if self.uses_package else {}

    def estimate_s(self, model: ModelSpec) -> float:
        """A guess at one run's duration, for ``--dry-run`` and the ETA."""
        return float(self.options.get("estimate_s", 60.0))

    def describe(self) -> dict[str, Any]:
        """The workload settings for ``workload.details``."""
        return dict(self.options)


WORKLOADS: dict[str, type[BaseWorkload]] = {}


register = registrar(WORKLOADS, "kind", "workload kind")


def template_values(cell: Cell, model: ModelSpec, env: ExecEnvironment | _NoEnv, workdir: Path,
                    params: dict[str, Any]) -> dict[str, str]:
    """The values a command template may use."""
    values = {str(k): str(v) for k, v in params.items()}
    values.update({str(k): str(v) for k, v in model.params.items()})
    values.update(model=model.name, model_id=model.id or model.name, model_path=model.path or "",
                  workdir=str(workdir), iteration=str(cell.iteration), seed=str(cell.seed),
                  python=env.python())
    return values


def check_template(fields: Fields, key: str, text: str, allowed: set[str]) -> None:
    """Refuse a template that names a field nobody fills (at load time, with the line)."""
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(text) if name}
    except ValueError as exc:
        raise fields.fail(key, f"is not a valid template ({exc})", fix="write {{ and }} for literal braces") from None
    unknown = sorted(n for n in names if n not in allowed)
    if unknown:
        raise fields.fail(key, f"uses unknown placeholder {{{unknown[0]}}}",
                          fix=f"use one of: {', '.join('{' + a + '}' for a in sorted(allowed))}")


def render(template: str | list[str], values: dict[str, str]) -> list[str]:
    """A command template (string, split like a shell would, or list) → argv."""
    parts = shlex.split(template) if isinstance(template, str) else [str(p) for p in template]
    return [part.format_map(values) for part in parts]


def parse_with_registry(path: Path, parser_name: str | None) -> tuple[dict[str, float | None], Any, str]:
    """Read ``path`` through the parser registry; returns (metrics, first record, parser name)."""
    from sparkreport.ingest import detect_parser
    from sparkreport.ingest.base import Source

    source = Source(path)
    parser = detect_parser(source, parser_name)
    runs = parser.parse(source)
    if not runs:
        return {}, None, parser.name
    record = runs[0].record
    return dict(record.metrics), record, parser.name


# --------------------------------------------------------------------------- torch


@register
class TorchWorkload(BaseWorkload):
    """The built-in reference workload: random-weight decoder, static KV pool, greedy decode."""

    kind = "torch"
    description = "built-in PyTorch reference decoder (random weights, no downloads)"
    option_keys = ("batch_size", "num_requests", "input_len", "output_len", "kv_cache_fraction",
                   "dtype", "warmup_waves", "decode", "estimate_s")
    uses_package = True

    @classmethod
    def validate(cls, spec: WorkloadSpec, fields: Fields, models: tuple[ModelSpec, ...]) -> None:
        from sparkreport.execute.torch_bench import PRESETS

        for key, default in (("batch_size", 32), ("num_requests", 64), ("input_len", 512),
                             ("output_len", 128), ("warmup_waves", 1)):
            fields.integer(key, default, minimum=1 if key != "warmup_waves" else 0)
        fraction = fields.number("kv_cache_fraction", 0.9)
        if not 0.0 < fraction < 1.0:
            raise fields.fail("kv_cache_fraction", f"must be between 0 and 1, not {fraction!r}")
        fields.choice("dtype", ("bfloat16", "float16"), "bfloat16")
        # cuda-graph: the decode step is one graph launch (GPU-bound, the default); eager: the
        # plain Python loop, bound by kernel-launch overhead on the host (kept for comparison).
        fields.choice("decode", ("cuda-graph", "eager"), "cuda-graph")
        for index, model in enumerate(models):
            if model.preset is None and not model.config:
                raise fields.doc.fail(("models", index), f"model {model.name!r} needs `preset:` or `config:` "
                                      "for the torch workload", fix=f"presets: {', '.join(PRESETS)}")
            if model.preset is not None and model.preset not in PRESETS:
                raise fields.doc.fail(("models", index, "preset"), f"unknown preset {model.preset!r}",
                                      fix=f"choose one of: {', '.join(PRESETS)}, or give `config:`")

    def spec_for(self, cell: Cell, model: ModelSpec) -> dict[str, Any]:
        """The JSON spec torch_bench reads."""
        o = self.options
        return {"preset": model.preset, "config": model.config, "seed": cell.seed,
                "batch_size": o.get("batch_size", 32), "num_requests": o.get("num_requests", 64),
                "input_len": o.get("input_len", 512), "output_len": o.get("output_len", 128),
                "kv_cache_fraction": o.get("kv_cache_fraction", 0.9), "dtype": o.get("dtype", "bfloat16"),
                "warmup_waves": o.get("warmup_waves", 1), "decode": o.get("decode", "cuda-graph")}

    def steps(self, cell: Cell, model: ModelSpec, env: ExecEnvironment, workdir: Path) -> list[Step]:
        (workdir / "torch-spec.json").write_text(json.dumps(self.spec_for(cell, model), indent=2))
        return [Step("bench", [env.python(), "-m", "sparkreport.execute.torch_bench",
                               "--spec", str(workdir / "torch-spec.json"),
                               "--out", str(workdir / "torch-report.json")])]

    def collect(self, cell: Cell, model: ModelSpec, workdir: Path, logs: dict[str, Path]) -> WorkloadResult:
        path = workdir / "torch-report.json"
        if not path.exists():
            return WorkloadResult(error="torch_bench wrote no report (see bench.log)")
        report = json.loads(path.read_text())
        info = report["model"]
        return WorkloadResult(
            metrics=dict(report["metrics"]),
            model_id=f"random:{info.get('preset') or 'custom'}",
            model_display_name=f"{model.name} shape (random weights)",
            engine="torch", engine_version=report["software"].get("torch"),
            backend=report["workload"].get("decode", "eager"), cuda=report["software"].get("cuda"),
            workload={k: report["workload"].get(k) for k in
                      ("num_requests", "input_len", "output_len", "batch_size", "kv_cache_fraction")},
            software={**report["software"], "random_weights": True,
                      "implementation": info.get("implementation")},
            memory_phases=report["memory"],
            model_details=facts_from_config(info.get("parameters"), info.get("config") or {}, info.get("dtype"),
                                            info.get("weights_gib"), TORCH_FACTS_SOURCE),
            details={"model": {k: info[k] for k in ("parameters", "weights_gib", "dtype", "config")},
                     "timing": report["timing"], "device": report["device"], "random_weights": True,
                     **{k: report["workload"][k] for k in ("max_seq_len", "kv_bytes_per_token", "kv_slots",
                                                           "waves", "warmup_waves", "seed", "issue")},
                     "decode": report["workload"].get("decode", "eager")},
            keep=[workdir / "torch-spec.json", path],
        )

    def estimate_s(self, model: ModelSpec) -> float:
        from sparkreport.execute.torch_bench import parameter_count, resolve_config

        if "estimate_s" in self.options:
            return float(self.options["estimate_s"])
        try:
            params = parameter_count(resolve_config(model.preset, dict(model.config)))
        except (SystemExit, KeyError, TypeError):
            params = 1_000_000_000
        return 15.0 + params / 1e9 * 2.0


# --------------------------------------------------------------------------- fake


@register
class FakeWorkload(BaseWorkload):
    """Synthetic trtllm-bench reports (no GPU), read back through the parser registry."""

    kind = "fake"
    description = "synthetic trtllm-bench reports, no GPU (tests, CI, dry runs)"
    option_keys = ("throughput_tok_s", "noise", "kv_cache_gib", "sleep_s", "num_requests", "output_len",
                   "fail_iterations", "hang_iterations", "print_env", "estimate_s")
    needs_gpu = False
    uses_package = True

    @classmethod
    def validate(cls, spec: WorkloadSpec, fields: Fields, models: tuple[ModelSpec, ...]) -> None:
        fields.number("throughput_tok_s", 120.0)
        fields.number("noise", 0.01)
        fields.number("sleep_s", 0.0)
        for key in ("fail_iterations", "hang_iterations"):
            for index, value in enumerate(fields.sequence(key)):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise fields.doc.fail(fields.where + (key, index), f"must be an iteration number, not {value!r}")

    def steps(self, cell: Cell, model: ModelSpec, env: ExecEnvironment, workdir: Path) -> list[Step]:
        o = self.options
        throughput = float(model.params.get("throughput_tok_s", o.get("throughput_tok_s", 120.0)))
        argv = [env.python(), "-m", "sparkreport.execute.fake_bench", "--seed", str(cell.seed),
                "--model", model.id or model.name, "--throughput", str(throughput),
                "--noise", str(o.get("noise", 0.01)),
                "--kv-gib", str(model.params.get("kv_cache_gib", o.get("kv_cache_gib", 40.0))),
                "--requests", str(o.get("num_requests", 50)), "--output-len", str(o.get("output_len", 128)),
                "--sleep", str(o.get("sleep_s", 0.0))]
        if cell.iteration in (o.get("fail_iterations") or []):
            argv.append("--fail")
        if cell.iteration in (o.get("hang_iterations") or []):
            argv.append("--hang")
        for name in o.get("print_env") or []:
            argv += ["--print-env", str(name)]
        return [Step("bench", argv, gpu=False)]

    def collect(self, cell: Cell, model: ModelSpec, workdir: Path, logs: dict[str, Path]) -> WorkloadResult:
        metrics, record, parser = parse_with_registry(logs["bench"], "trtllm-log")
        return WorkloadResult(metrics=metrics, model_id=model.id or model.name, engine="fake",
                              engine_version=record.software.engine_version if record else None,
                              backend="synthetic", details={"parser": parser},
                              workload={"num_requests": self.options.get("num_requests", 50),
                                        "output_len": self.options.get("output_len", 128)})

    def estimate_s(self, model: ModelSpec) -> float:
        return float(self.options.get("estimate_s", 1.0 + float(self.options.get("sleep_s", 0.0))))


# --------------------------------------------------------------------------- command


@register
class CommandWorkload(BaseWorkload):
    """Any command; its log (or a named output file) is read by a declared parser."""

    kind = "command"
    description = "any command plus a declared parser (`sparkreport formats`)"
    option_keys = ("command", "parser", "output", "gpu", "params", "estimate_s")

    @classmethod
    def validate(cls, spec: WorkloadSpec, fields: Fields, models: tuple[ModelSpec, ...]) -> None:
        command = fields.get("command")
        if command is None:
            raise fields.fail("command", "is missing", fix="add `command:` (a string or a list)")
        allowed = set(TEMPLATE_FIELDS) | set(fields.mapping("params")) | {
            k for m in models for k in m.params}
        texts = [command] if isinstance(command, str) else command
        if not isinstance(texts, list) or not texts:
            raise fields.fail("command", "must be a string or a non-empty list")
        for text in texts:
            check_template(fields, "command", str(text), allowed)
        parser = fields.text("parser", required=True) or ""
        _check_parser(fields, parser)
        if fields.get("output") is not None:
            check_template(fields, "output", fields.text("output") or "", allowed)
        fields.flag("gpu", True)

    def steps(self, cell: Cell, model: ModelSpec, env: ExecEnvironment, workdir: Path) -> list[Step]:
        values = template_values(cell, model, env, workdir, dict(self.options.get("params") or {}))
        return [Step("bench", render(self.options["command"], values), gpu=bool(self.options.get("gpu", True)))]

    def collect(self, cell: Cell, model: ModelSpec, workdir: Path, logs: dict[str, Path]) -> WorkloadResult:
        target = logs["bench"]
        keep: list[Path] = []
        if self.options.get("output"):
            values = {k: v for k, v in template_values(cell, model, _NoEnv(), workdir,
                                                       dict(self.options.get("params") or {})).items()}
            target = Path(str(self.options["output"]).format_map(values))
            keep.append(target)
            if not target.exists():
                return WorkloadResult(error=f"the command wrote no {target.name}")
        metrics, record, parser = parse_with_registry(target, str(self.options["parser"]))
        return _from_record(metrics, record, parser, keep, model)


def _from_record(metrics: dict[str, float | None], record: Any, parser: str, keep: list[Path],
                 model: ModelSpec) -> WorkloadResult:
    result = WorkloadResult(metrics=metrics, keep=keep, details={"parser": parser},
                            model_id=model.id or model.name)
    if record is not None:
        result.engine = record.software.engine
        result.engine_version = record.software.engine_version
        result.backend = record.software.backend
        result.warnings.extend(record.status.warnings)
        if record.model.id:
            result.model_id = record.model.id
    return result


class _NoEnv:
    """Stands in for an environment when only the host-side paths of a template are needed."""

    def python(self) -> str:
        return "python3"


def _check_parser(fields: Fields, name: str) -> None:
    from sparkreport.ingest import PARSERS

    if name not in PARSERS:
        raise fields.fail("parser", f"unknown parser {name!r}", fix=f"choose one of: {', '.join(PARSERS)}")


# --------------------------------------------------------------------------- trtllm / vllm


@register
class TrtllmWorkload(BaseWorkload):
    """``trtllm-bench``: optional engine build, then throughput or latency, report JSON + log."""

    kind = "trtllm"
    description = "trtllm-bench (build + throughput/latency), parsed by the parser registry"
    option_keys = ("mode", "dataset", "backend", "build", "build_args", "args", "num_requests",
                   "kv_cache_fraction", "parser", "params", "executable", "estimate_s")

    @classmethod
    def validate(cls, spec: WorkloadSpec, fields: Fields, models: tuple[ModelSpec, ...]) -> None:
        fields.choice("mode", ("throughput", "latency"), "throughput")
        allowed = set(TEMPLATE_FIELDS) | set(fields.mapping("params")) | {k for m in models for k in m.params}
        check_template(fields, "dataset", fields.text("dataset", required=True) or "", allowed)
        for key in ("args", "build_args"):
            for arg in fields.sequence(key):
                check_template(fields, key, str(arg), allowed)
        fields.flag("build", False)
        if fields.get("parser") is not None:
            _check_parser(fields, fields.text("parser") or "")

    def steps(self, cell: Cell, model: ModelSpec, env: ExecEnvironment, workdir: Path) -> list[Step]:
        o = self.options
        values = template_values(cell, model, env, workdir, dict(o.get("params") or {}))
        base = [str(o.get("executable", "trtllm-bench")), "--model", values["model_id"]]
        if model.path:
            base += ["--model_path", model.path]
        dataset = str(o["dataset"]).format_map(values)
        steps = []
        if o.get("build"):
            steps.append(Step("build", base + ["build", "--dataset", dataset]
                              + render(list(o.get("build_args") or []), values)))
        bench = base + [str(o.get("mode", "throughput")), "--dataset", dataset,
                        "--report_json", str(workdir / "report.json")]
        if o.get("backend"):
            bench += ["--backend", str(o["backend"])]
        if o.get("num_requests"):
            bench += ["--num_requests", str(o["num_requests"])]
        if o.get("kv_cache_fraction") is not None:
            bench += ["--kv_cache_free_gpu_mem_fraction", str(o["kv_cache_fraction"])]
        if o.get("build"):
            bench += ["--engine_dir", str(workdir / "engine")]
        steps.append(Step("bench", bench + render(list(o.get("args") or []), values)))
        return steps

    def collect(self, cell: Cell, model: ModelSpec, workdir: Path, logs: dict[str, Path]) -> WorkloadResult:
        report = workdir / "report.json"
        keep = [report] if report.exists() else []
        log_metrics, log_record, log_parser = parse_with_registry(logs["bench"], "trtllm-log")
        metrics: dict[str, float | None] = {}
        parser = log_parser
        record = log_record
        if report.exists():
            try:
                metrics, record, parser = parse_with_registry(report, self.options.get("parser"))
            except Exception as exc:  # a report no parser reads yet: the log still has the figures
                metrics = {}
                log_warning = f"report.json not read ({exc}); figures from the log only"
                result = _from_record(log_metrics, log_record, log_parser, keep, model)
                result.warnings.append(log_warning)
                return result
        for name, value in log_metrics.items():  # memory lines are only in the log
            metrics.setdefault(name, value)
        result = _from_record(metrics, record, parser, keep, model)
        result.engine = result.engine or "trtllm"
        return result


@register
class VllmWorkload(BaseWorkload):
    """``vllm bench throughput|latency`` with ``--output-json``, read by the parser registry."""

    kind = "vllm"
    description = "vllm bench throughput/latency, JSON result parsed by the parser registry"
    option_keys = ("mode", "input_len", "output_len", "num_prompts", "args", "parser", "params",
                   "executable", "estimate_s")

    @classmethod
    def validate(cls, spec: WorkloadSpec, fields: Fields, models: tuple[ModelSpec, ...]) -> None:
        fields.choice("mode", ("throughput", "latency"), "throughput")
        allowed = set(TEMPLATE_FIELDS) | set(fields.mapping("params")) | {k for m in models for k in m.params}
        for arg in fields.sequence("args"):
            check_template(fields, "args", str(arg), allowed)
        if fields.get("parser") is not None:
            _check_parser(fields, fields.text("parser") or "")

    def steps(self, cell: Cell, model: ModelSpec, env: ExecEnvironment, workdir: Path) -> list[Step]:
        o = self.options
        values = template_values(cell, model, env, workdir, dict(o.get("params") or {}))
        argv = [str(o.get("executable", "vllm")), "bench", str(o.get("mode", "throughput")),
                "--model", model.path or values["model_id"], "--output-json", str(workdir / "result.json"),
                "--seed", str(cell.seed)]
        for key, flag in (("input_len", "--input-len"), ("output_len", "--output-len"),
                          ("num_prompts", "--num-prompts")):
            if o.get(key) is not None:
                argv += [flag, str(o[key])]
        return [Step("bench", argv + render(list(o.get("args") or []), values))]

    def collect(self, cell: Cell, model: ModelSpec, workdir: Path, logs: dict[str, Path]) -> WorkloadResult:
        result_file = workdir / "result.json"
        target = result_file if result_file.exists() else logs["bench"]
        metrics, record, parser = parse_with_registry(target, self.options.get("parser"))
        result = _from_record(metrics, record, parser, [result_file] if result_file.exists() else [], model)
        result.engine = result.engine or "vllm"
        return result
