"""The Phase 1 DGX Spark study's formats: its aggregate JSON and its per-run file pairs.

Aggregate: ``{"models": {model: {environment: [record, ...]}}}``; ``throughput`` is requests/s,
``output_throughput`` tokens/s, ``peak_memory`` (TensorRT-LLM's peak before the KV cache is
allocated: ``pre_kv_memory_gib``) and ``kv_cache`` GiB, ``latency`` always null.
Per-run pair: ``<env>_<model>_iter<N>_<timestamp>_metadata.json`` with the same run fields
(no metrics) plus ``<same prefix>.log`` holding trtllm-bench output.

The study's data files do not record workload, software or hardware; those come from the
study's own report (50 requests × 128 output tokens, TensorRT-LLM image
``release:spark-single-gpu-dev``, CUDA 12.9, GB10 with a 119.64 GiB pool) and each run notes it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sparkreport.errors import ParseError
from sparkreport.ingest.base import ParsedRun, Parser, Source, integer, number, register, text_field
from sparkreport.ingest.trtllm import read_report
from sparkreport.schema import (
    Environment,
    Hardware,
    Model,
    RunRecord,
    Software,
    Status,
    Workload,
    slug,
)
from sparkreport.store import RawFile

STUDY_NOTE = (
    "workload, software and hardware are taken from the Phase 1 study's report; "
    "its data files do not record them"
)
_ENVIRONMENTS = {
    "native": Environment(
        name="native", kind="chroot",
        details={"method": "chroot into the container image's root filesystem, env -i, bind mounts"},
    ),
    "container": Environment(
        name="container", kind="container",
        details={"runtime": "docker", "flags": "--gpus all --ipc=host --shm-size=60g "
                 "--ulimit memlock=-1 --ulimit stack=67108864"},
    ),
}
_RUN_FIELDS = ("environment", "model_name", "iteration", "timestamp")
_TIMESTAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})_(\d{2})(\d{2})(\d{2})$")


def _study_record(rec: dict[str, Any], path: Path, where: str) -> RunRecord:
    """The parts of a Phase 1 run record common to both formats."""
    missing = [key for key in _RUN_FIELDS if key not in rec]
    if missing:
        raise ParseError(path, f"{where} lacks {', '.join(missing)}",
                         fix="each record needs environment, model_name, iteration and timestamp")
    env_name = text_field(rec["environment"], path, f"{where}.environment") or "unknown"
    model_name = text_field(rec["model_name"], path, f"{where}.model_name") or "unknown"
    model_id = text_field(rec.get("model_id"), path, f"{where}.model_id")
    stamp = text_field(rec["timestamp"], path, f"{where}.timestamp") or ""
    match = _TIMESTAMP.match(stamp)
    if not match:
        raise ParseError(path, f"{where}.timestamp {stamp!r} is not YYYYmmdd_HHMMSS",
                         fix="keep the study's timestamp format")
    y, mo, d, h, mi, s = match.groups()
    exit_code = integer(rec.get("exit_code"), path, f"{where}.exit_code")
    environment = _ENVIRONMENTS.get(env_name, Environment(name=env_name, kind="unknown"))
    metrics = {
        "start_temp_c": number(rec.get("start_temp_celsius"), path, f"{where}.start_temp_celsius"),
        "end_temp_c": number(rec.get("end_temp_celsius"), path, f"{where}.end_temp_celsius"),
    }
    return RunRecord(
        run_id="", campaign="",
        iteration=integer(rec["iteration"], path, f"{where}.iteration"),
        started_at_local=f"{y}-{mo}-{d}T{h}:{mi}:{s}",
        model=Model(id=model_id, name=model_name,
                    display_name=model_id.split("/")[-1] if model_id else model_name),
        environment=Environment(environment.name, environment.kind, dict(environment.details)),
        workload=Workload(num_requests=50, output_len=128),
        software=Software(engine="trtllm", cuda="12.9",
                          image="nvcr.io/nvidia/tensorrt-llm/release:spark-single-gpu-dev"),
        hardware=Hardware(gpu_name="NVIDIA GB10", memory_pool_gib=119.64, unified_memory=True),
        metrics={k: v for k, v in metrics.items() if v is not None},
        status=Status(
            exit_code=exit_code,
            ok=exit_code == 0,
            reason=None if exit_code in (0, None) else f"exit code {exit_code}",
        ),
    )


def _natural_id(record: RunRecord, stamp: str) -> str:
    return slug(f"{record.model.name}-{record.environment.name}-iter{record.iteration:02d}-{stamp}")


@register
class Phase1AggregateParser(Parser):
    name = "phase1-aggregate"
    description = "Phase 1 study aggregate JSON ({models: {model: {environment: [records]}}})"
    versions = "benchmark-spark analysis/all_benchmark_results.json (2025-11)"
    default_campaign = "phase1"

    def detect(self, source: Source) -> bool:
        head = source.head_text.lstrip()
        return head.startswith("{") and '"models"' in head[:4096]

    def parse(self, source: Source) -> list[ParsedRun]:
        data = source.json()
        models = data.get("models") if isinstance(data, dict) else None
        if not isinstance(models, dict):
            raise ParseError(source.path, 'expected {"models": {model: {environment: [records]}}}',
                             fix="ingest the study's all_benchmark_results.json unchanged")
        runs: list[ParsedRun] = []
        for model_key, arms in models.items():
            if not isinstance(arms, dict):
                raise ParseError(source.path, f"models.{model_key} should map environments to lists",
                                 fix="keep the study's file shape")
            for env_key, records in arms.items():
                if not isinstance(records, list):
                    raise ParseError(source.path, f"models.{model_key}.{env_key} should be a list",
                                     fix="keep the study's file shape")
                for index, rec in enumerate(records):
                    where = f"models.{model_key}.{env_key}[{index}]"
                    runs.append(self._run(source, rec, where))
        if not runs:
            raise ParseError(source.path, "holds no run records", fix="ingest a file with results")
        return runs

    def _run(self, source: Source, rec: Any, where: str) -> ParsedRun:
        path = source.path
        if not isinstance(rec, dict):
            raise ParseError(path, f"{where} should be an object", fix="keep the study's file shape")
        record = _study_record(rec, path, where)
        record.metrics.update({
            name: value for name, value in (
                ("request_throughput_req_s", number(rec.get("throughput"), path, f"{where}.throughput")),
                ("output_throughput_tok_s",
                 number(rec.get("output_throughput"), path, f"{where}.output_throughput")),
                ("latency_ms_mean", number(rec.get("latency"), path, f"{where}.latency")),
                ("pre_kv_memory_gib", number(rec.get("peak_memory"), path, f"{where}.peak_memory")),
                ("kv_cache_gib", number(rec.get("kv_cache"), path, f"{where}.kv_cache")),
            ) if value is not None
        })
        record.provenance.notes.append(STUDY_NOTE)
        verbatim = json.dumps(rec, indent=2).encode() + b"\n"
        return ParsedRun(
            record=record,
            natural_id=_natural_id(record, rec["timestamp"]),
            locator=where,
            raw=[RawFile("record.json", content=verbatim)],
            keep_source_once=True,
        )


@register
class Phase1PairParser(Parser):
    name = "phase1-pair"
    description = "Phase 1 study per-run pair: <prefix>_metadata.json + <prefix>.log (trtllm-bench)"
    versions = "benchmark-spark run_*_benchmark.sh (2025-11)"
    default_campaign = "phase1"

    def detect(self, source: Source) -> bool:
        head = source.head_text.lstrip()
        return (
            source.path.name.endswith("_metadata.json")
            and head.startswith("{")
            and '"model_name"' in head
            and '"environment"' in head
        )

    def companions(self, source: Source) -> list[Path]:
        log = self._log_path(source.path)
        return [log] if log.exists() else []

    @staticmethod
    def _log_path(path: Path) -> Path:
        return path.with_name(path.name[: -len("_metadata.json")] + ".log")

    def parse(self, source: Source) -> list[ParsedRun]:
        data = source.json()
        if not isinstance(data, dict):
            raise ParseError(source.path, "metadata should be a JSON object", fix="keep the script's format")
        record = _study_record(data, source.path, "metadata")
        raw = [RawFile(source.path.name, source=source.path)]
        log = self._log_path(source.path)
        if log.exists():
            report = read_report(log)
            record.metrics.update(report.metrics)
            record.software.engine_version = report.version
            record.software.backend = report.backend
            raw.append(RawFile(log.name, source=log))
            if not report.saw_performance and record.status.ok:
                record.status.warnings.append(f"{log.name}: no PERFORMANCE OVERVIEW block (cut off?)")
        else:
            record.status.warnings.append(f"{log.name} not found: no metrics for this run")
        record.provenance.notes.append(STUDY_NOTE)
        return [ParsedRun(record=record, natural_id=_natural_id(record, data["timestamp"]), raw=raw)]
