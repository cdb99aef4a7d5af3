#!/usr/bin/env python3
"""A synthetic benchmark campaign: N realistic run sources in formats ``sparkreport ingest`` reads.

Writes, under ``OUT``::

    sources/<version>/<environment>/<model>/<run>.log               trtllm-bench log (PyTorch backend,
                                                                     MACHINE DETAILS, memory lines)
    sources/<version>/<environment>/<model>/<run>.json              vllm bench serve --save-result JSON
    sources/<version>/<environment>/<model>/<run>.nvidia-smi.csv    10 Hz nvidia-smi samples (a subset)
    manifest.json                                                   what was generated, and the ingest groups
    sparkreport.yml                                                 compare environments, baseline native

Neither format records the execution environment, so each ``<version>/<environment>`` folder is
one ingest group, given its environment and the labels ``env`` and ``version``
(``ingest_campaign`` does it, or ``sparkreport ingest FOLDER --campaign synth-<version>
--environment … --label env=… --label version=…``).

Everything is seeded: the same arguments write byte-identical files.

    python bench/synth.py OUT --runs 1000 --sampled 100 --sample-hours 1 --seed 1
    python bench/synth.py OUT --runs 1000 --ingest RUNS_DIR      # generate, then ingest
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MANIFEST = "manifest.json"

#: name → (hf id, weights GiB, decode tok/s on GB10 at the reference workload, engine)
MODEL_CATALOG: list[tuple[str, str, float, float]] = [
    ("llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", 15.0, 1300.0),
    ("qwen3-8b", "Qwen/Qwen3-8B", 15.3, 1250.0),
    ("gpt-oss-20b", "openai/gpt-oss-20b", 12.8, 1650.0),
    ("mistral-7b", "mistralai/Mistral-7B-Instruct-v0.3", 13.5, 1380.0),
    ("gemma-3-12b", "google/gemma-3-12b-it", 22.4, 890.0),
    ("qwen3-14b", "Qwen/Qwen3-14B", 27.5, 760.0),
    ("phi-4", "microsoft/phi-4", 27.3, 780.0),
    ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", 56.9, 1900.0),
    ("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct", 39.0, 210.0),
    ("gpt-oss-120b", "openai/gpt-oss-120b", 60.8, 540.0),
    ("deepseek-r1-distill-32b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", 61.0, 330.0),
    ("mixtral-8x7b", "mistralai/Mixtral-8x7B-Instruct-v0.1", 87.0, 420.0),
]
#: environment → (throughput factor, peak-memory extra GiB)
ENVIRONMENT_EFFECTS = {"native": (1.0, 0.0), "docker": (0.985, 0.6), "chroot": (0.998, 0.1),
                       "cgroup": (0.99, 0.2)}
POOL_GIB = 119.70


@dataclass
class SynthOptions:
    """What to generate (every knob of the campaign)."""

    runs: int = 100
    #: Runs that get a ``<stem>.nvidia-smi.csv`` beside their source.
    sampled: int = 0
    sample_hz: float = 10.0
    sample_hours: float = 1.0
    models: int = 10
    environments: list[str] = field(default_factory=lambda: ["native", "docker"])
    #: Software versions; empty: as many as needed for ``iterations`` runs per cell.
    versions: list[str] = field(default_factory=list)
    #: One campaign across all versions (a history: ``sparkreport history``); empty: one
    #: campaign per version, ``synth-<version>``.
    campaign: str = ""
    #: Planted lasting level shifts: version index → relative change of throughput from there on
    #: (``--step 150:-0.04``), for the History page and ``sparkreport history``.
    steps: dict[int, float] = field(default_factory=dict)
    iterations: int = 10
    #: Relative SD of the run-to-run noise.
    noise: float = 0.02
    #: Fraction of models benchmarked with vLLM (JSON) instead of trtllm-bench (logs).
    vllm_fraction: float = 0.3
    #: Fraction of trtllm logs cut off mid-report (a realistic damaged paste).
    truncated_fraction: float = 0.005
    seed: int = 1


@dataclass
class Group:
    """One ingest call: a folder of sources and the labels its runs get."""

    path: str
    campaign: str
    labels: dict[str, str]
    environment: str = "unknown"
    runs: int = 0


def version_names(count: int) -> list[str]:
    """1.0.0, 1.0.1, … 1.0.9, 1.1.0, …: a year of releases."""
    return [f"1.{i // 10}.{i % 10}" for i in range(count)]


def plan(options: SynthOptions) -> list[tuple[str, int, str, int]]:
    """The cells in generation order: (version, model index, environment, iteration)."""
    models = min(options.models, len(MODEL_CATALOG))
    per_version = models * len(options.environments) * options.iterations
    versions = options.versions or version_names(max(1, math.ceil(options.runs / per_version)))
    cells = [(v, m, e, i) for v in versions for m in range(models) for e in options.environments
             for i in range(1, options.iterations + 1)]
    return cells[: options.runs]


def generate(out: Path, options: SynthOptions) -> dict[str, Any]:
    """Write the campaign under ``out`` (which must be empty or absent); returns the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise SystemExit(f"{out}: not empty — pass a new folder")
    rng = np.random.default_rng(options.seed)
    cells = plan(options)
    n_vllm = round(min(options.models, len(MODEL_CATALOG)) * options.vllm_fraction)
    vllm_models = set(range(min(options.models, len(MODEL_CATALOG)) - n_vllm, len(MODEL_CATALOG)))
    # Samples attach to a trtllm-bench log (``<log stem>.nvidia-smi.csv``); vLLM JSON has no such
    # companion, so only log runs are sampled.
    loggable = [i for i, cell in enumerate(cells) if cell[1] not in vllm_models]
    sampled = set(rng.choice(loggable, size=min(options.sampled, len(loggable)), replace=False).tolist()) \
        if options.sampled and loggable else set()
    groups: dict[tuple[str, str], Group] = {}
    version_index = {v: i for i, v in enumerate(dict.fromkeys(c[0] for c in cells))}
    start = np.datetime64("2026-01-05T08:00:00")
    bytes_written = 0
    for index, (version, model_index, env, iteration) in enumerate(cells):
        name, hf_id, weights_gib, base_tok_s = MODEL_CATALOG[model_index]
        folder = out / "sources" / version / env / name
        folder.mkdir(parents=True, exist_ok=True)
        key = (version, env)
        if key not in groups:
            groups[key] = Group(path=f"sources/{version}/{env}", campaign=options.campaign or f"synth-{version}",
                                labels={"env": env, "version": version}, environment=env)
        groups[key].runs += 1
        env_factor, env_memory = ENVIRONMENT_EFFECTS.get(env, (1.0, 0.0))
        # Releases drift slowly (±1%) with an occasional regression.
        drift = 1.0 + 0.01 * math.sin(version_index[version] / 3.0)
        if version_index[version] % 17 == 16:
            drift *= 0.95
        for at, step in options.steps.items():
            if version_index[version] >= at:
                drift *= 1.0 + step
        tok_s = base_tok_s * env_factor * drift * (1.0 + rng.normal(0.0, options.noise))
        when = start + np.timedelta64(index * 97, "s")
        stem = f"{name}-{env}-{version}-it{iteration:03d}"
        facts = RunFacts(hf_id=hf_id, version=version, iteration=iteration, tok_s=tok_s,
                         weights_gib=weights_gib, peak_gib=weights_gib + 4.0 + env_memory + rng.normal(0, 0.05),
                         when=str(when), rng=rng)
        if model_index in vllm_models:
            path = folder / f"{stem}.json"
            path.write_text(vllm_json(facts), encoding="utf-8")
        else:
            path = folder / f"{stem}.log"
            truncated = rng.random() < options.truncated_fraction
            path.write_text(trtllm_log(facts, truncated=truncated), encoding="utf-8")
        bytes_written += path.stat().st_size
        if index in sampled:
            csv_path = folder / f"{stem}.nvidia-smi.csv"
            write_samples(csv_path, facts, hz=options.sample_hz, hours=options.sample_hours)
            bytes_written += csv_path.stat().st_size
    manifest = {
        "generator": "bench/synth.py",
        "options": asdict(options),
        "runs": len(cells),
        "sampled": len(sampled),
        "bytes": bytes_written,
        "groups": [asdict(g) for g in groups.values()],
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    (out / "sparkreport.yml").write_text(
        "# Written by bench/synth.py: the synthetic campaign compares environments.\n"
        "title: Synthetic campaign\nfactor: environment\nbaseline: native\n", encoding="utf-8")
    return manifest


@dataclass
class RunFacts:
    hf_id: str
    version: str
    iteration: int
    tok_s: float
    weights_gib: float
    peak_gib: float
    when: str
    rng: np.random.Generator


def _stamp(when: str) -> str:
    """ISO → the trtllm logger prefix ``[MM/DD/YYYY-HH:MM:SS]``."""
    date, time = when.split("T")
    year, month, day = date.split("-")
    return f"[{month}/{day}/{year}-{time[:8]}] [TRT-LLM] [I]"


def trtllm_log(f: RunFacts, *, truncated: bool = False) -> str:
    """A trtllm-bench throughput log of the 1.x era with its runtime memory lines."""
    rng = f.rng
    p = _stamp(f.when)
    requests = 512
    isl, osl = 1024, 1024
    tok_s = f.tok_s
    req_s = tok_s / osl
    total_ms = requests / req_s * 1000.0
    latency_mean = total_ms * 0.48 * (1 + rng.normal(0, 0.01))
    available = POOL_GIB - f.peak_gib
    kv_gib = 0.9 * available
    kv_tokens = int(kv_gib * 2**30 / 131072)
    lat = sorted(latency_mean * (1 + rng.normal(0, 0.1, 7)))
    lines = [
        f"{p} Memory used after loading model weights (inside torch) in memory usage profiling: "
        f"{f.weights_gib:.2f} GiB",
        f"{p} Memory used after loading model weights (outside torch) in memory usage profiling: 0.85 GiB",
        f"{p} Memory dynamically allocated during inference (inside torch) in memory usage profiling: 2.10 GiB",
        f"{p} Peak memory during memory usage profiling (torch + non-torch): {f.peak_gib:.2f} GiB, "
        f"available KV cache memory when calculating max tokens: {available:.2f} GiB, fraction is set 0.9, "
        f"kv size per token is 131072. device total memory {POOL_GIB:.2f} GiB, "
        "temporary kv cache memory during profiling 2.00 GiB",
        f"[TensorRT-LLM][INFO] [MemUsageChange] Allocated {kv_gib:.2f} GiB for max tokens in paged KV cache "
        f"({kv_tokens}).",
        f"{p} ", "", "",
        "===========================================================",
        "= PYTORCH BACKEND",
        "===========================================================",
        f"Model:\t\t\t{f.hf_id}",
        f"Model Path:\t\t/models/{f.hf_id.split('/')[-1].lower()}",
        f"TensorRT LLM Version:\t{f.version}",
        "Dtype:\t\t\tbfloat16",
        "KV Cache Dtype:\t\tFP8",
        "Quantization:\t\tFP8",
        "",
        "===========================================================",
        "= MACHINE DETAILS ",
        "===========================================================",
        f"NVIDIA GB10, memory {POOL_GIB:.2f} GB, N/A GHz",
        "",
        "===========================================================",
        "= REQUEST DETAILS ",
        "===========================================================",
        f"Number of requests:             {requests}",
        f"Number of concurrent requests:  {requests * latency_mean / total_ms:.4f}",
        f"Average Input Length (tokens):  {isl:.4f}",
        f"Average Output Length (tokens): {osl:.4f}",
        "===========================================================",
        "= WORLD + RUNTIME INFORMATION ",
        "===========================================================",
        "TP Size:                1",
        "PP Size:                1",
        "EP Size:                None",
        "Max Runtime Batch Size: 256",
        "Max Runtime Tokens:     8192",
        "Scheduling Policy:      GUARANTEED_NO_EVICT",
        "KV Memory Percentage:   90.00%",
        "Issue Rate (req/sec):   1.0526E+15",
        "",
        "===========================================================",
        "= PERFORMANCE OVERVIEW ",
        "===========================================================",
        f"Request Throughput (req/sec):                     {req_s:.4f}",
        f"Total Output Throughput (tokens/sec):             {tok_s:.4f}",
    ]
    if truncated:
        return "\n".join(lines) + "\n"
    lines += [
        f"Total Token Throughput (tokens/sec):              {tok_s * (isl + osl) / osl:.4f}",
        f"Total Latency (ms):                               {total_ms:.4f}",
        f"Average request latency (ms):                     {latency_mean:.4f}",
        f"Per User Output Throughput [w/ ctx] (tps/user):   {osl / latency_mean * 1000:.4f}",
        f"Per GPU Output Throughput (tps/gpu):              {tok_s:.4f}",
        "",
        "-- Request Latency Breakdown (ms) -----------------------",
        "",
        f"[Latency] P50    : {lat[3]:.4f}",
        f"[Latency] P90    : {lat[4]:.4f}",
        f"[Latency] P95    : {lat[5]:.4f}",
        f"[Latency] P99    : {lat[6]:.4f}",
        f"[Latency] MINIMUM: {lat[0]:.4f}",
        f"[Latency] MAXIMUM: {lat[6] * 1.01:.4f}",
        f"[Latency] AVERAGE: {latency_mean:.4f}",
        "",
    ]
    return "\n".join(lines) + "\n"


def vllm_json(f: RunFacts) -> str:
    """A ``vllm bench serve --save-result`` JSON (new keys, no per-request lists)."""
    rng = f.rng
    prompts = 400
    failed = int(rng.random() < 0.02)
    out_tokens = 256 * (prompts - failed)
    tok_s = f.tok_s
    duration = out_tokens / tok_s
    ttft = 80.0 * (1 + rng.normal(0, 0.05))
    tpot = 1000.0 / (tok_s / 32.0)
    date = f.when.replace("-", "").replace(":", "").replace("T", "-")[:15]
    doc = {
        "date": date, "endpoint_type": "openai-chat", "backend": "openai-chat", "label": None,
        "model_id": f.hf_id, "tokenizer_id": f.hf_id, "num_prompts": prompts, "request_rate": 4.0,
        "burstiness": 1.0, "max_concurrency": 32, "duration": round(duration, 4),
        "completed": prompts - failed, "failed": failed, "total_input_tokens": 1024 * prompts,
        "total_output_tokens": out_tokens, "request_throughput": round((prompts - failed) / duration, 4),
        "request_goodput": None, "output_throughput": round(tok_s, 4),
        "total_token_throughput": round((1024 * prompts + out_tokens) / duration, 4),
        "max_output_tokens_per_s": round(tok_s * 1.4, 1), "max_concurrent_requests": 31,
        "mean_ttft_ms": round(ttft, 4), "median_ttft_ms": round(ttft * 0.92, 4),
        "std_ttft_ms": round(ttft * 0.3, 4), "p99_ttft_ms": round(ttft * 2.8, 4),
        "mean_tpot_ms": round(tpot, 4), "median_tpot_ms": round(tpot * 0.99, 4),
        "std_tpot_ms": round(tpot * 0.1, 4), "p99_tpot_ms": round(tpot * 1.3, 4),
        "mean_itl_ms": round(tpot, 4), "median_itl_ms": round(tpot * 0.9, 4),
        "std_itl_ms": round(tpot * 0.3, 4), "p99_itl_ms": round(tpot * 3, 4),
    }
    return json.dumps(doc) + "\n"


SAMPLE_HEADER = ("timestamp, name, memory.used [MiB], utilization.gpu [%], power.draw [W], "
                 "temperature.gpu, clocks.sm [MHz]")


def write_samples(path: Path, f: RunFacts, *, hz: float, hours: float) -> None:
    """nvidia-smi --query-gpu CSV on GB10 (memory [N/A]), ``hz`` samples a second for ``hours``."""
    rng = f.rng
    n = int(round(hz * hours * 3600))
    t = np.arange(n) / hz
    busy = (t > 30) & (t < hours * 3600 - 30)
    util = np.where(busy, 96 + rng.normal(0, 1.5, n), 0.5 + rng.random(n)).clip(0, 100).round()
    power = np.where(busy, 38.0 + rng.normal(0, 2.0, n), 11.0 + rng.normal(0, 0.3, n))
    temp = (35 + 30 * (1 - np.exp(-t / 600.0)) * busy + rng.normal(0, 0.4, n)).round()
    clock = np.where(busy, 2405 - (rng.random(n) < 0.05) * 100, 208)
    base = np.datetime64(f.when) + np.timedelta64(0, "ms")
    stamps = np.datetime_as_string(base + (t * 1000).astype("timedelta64[ms]"), unit="ms")
    lines = [SAMPLE_HEADER]
    for i in range(n):
        stamp = stamps[i].replace("-", "/").replace("T", " ")
        lines.append(f"{stamp}, NVIDIA GB10, [N/A], {int(util[i])} %, {power[i]:.2f} W, {int(temp[i])}, "
                     f"{int(clock[i])} MHz")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def ingest_campaign(source: Path, runs_dir: Path) -> dict[str, int]:
    """Ingest every group of a generated campaign into ``runs_dir`` (labels env and version)."""
    from sparkreport.ingest import IngestOptions, ingest_paths
    from sparkreport.store import RunStore

    manifest = json.loads((source / MANIFEST).read_text(encoding="utf-8"))
    store = RunStore(runs_dir)
    totals = {"added": 0, "skipped": 0, "rejected": 0, "files": 0}
    for group in manifest["groups"]:
        report = ingest_paths([source / group["path"]], store,
                              IngestOptions(campaign=group["campaign"], labels=dict(group["labels"]),
                                            environment=group.get("environment", group["labels"]["env"])))
        totals["added"] += len(report.added)
        totals["skipped"] += len(report.skipped)
        totals["rejected"] += len(report.rejected)
        totals["files"] += report.files
        for error in report.rejected[:3]:
            print(f"rejected: {error.format_message()}", file=sys.stderr)
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="empty or new folder to write the campaign into")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--sampled", type=int, default=0, help="runs with nvidia-smi samples")
    parser.add_argument("--sample-hz", type=float, default=10.0)
    parser.add_argument("--sample-hours", type=float, default=1.0)
    parser.add_argument("--models", type=int, default=10, help=f"at most {len(MODEL_CATALOG)}")
    parser.add_argument("--environments", default="native,docker", help="comma-separated")
    parser.add_argument("--versions", default="", help="comma-separated (default: as many as needed)")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--campaign", default="",
                        help="one campaign across all versions, for a history (default: synth-<version> each)")
    parser.add_argument("--step", action="append", default=[], metavar="INDEX:CHANGE",
                        help="a lasting level shift from version INDEX on, e.g. 150:-0.04 (repeatable)")
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument("--vllm-fraction", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ingest", type=Path, metavar="RUNS_DIR", help="then ingest into this run store")
    args = parser.parse_args(argv)
    options = SynthOptions(
        runs=args.runs, sampled=args.sampled, sample_hz=args.sample_hz, sample_hours=args.sample_hours,
        models=args.models, environments=[e for e in args.environments.split(",") if e],
        versions=[v for v in args.versions.split(",") if v], iterations=args.iterations, noise=args.noise,
        vllm_fraction=args.vllm_fraction, seed=args.seed, campaign=args.campaign,
        steps={int(at): float(change) for at, change in (item.split(":") for item in args.step)})
    manifest = generate(args.out, options)
    print(f"{manifest['runs']} runs ({manifest['sampled']} with samples) in {len(manifest['groups'])} groups, "
          f"{manifest['bytes'] / 2**20:.1f} MiB → {args.out}")
    if args.ingest:
        totals = ingest_campaign(args.out, args.ingest)
        print(f"ingested: {totals}")
        return 1 if totals["rejected"] else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
