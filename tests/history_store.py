"""A small run store with a version label, for the history tests (seeded, deterministic)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sparkreport.schema import Environment, Hardware, Model, RunRecord, Software, Workload
from sparkreport.store import RunStore

VERSIONS = ["0.18.0", "0.19.0", "0.20.0rc1", "0.20.0", "0.21.0", "0.22.0"]


def write_history_store(root: Path, *, steps: dict[str, float] | None = None, runs: int = 5,
                        noise: float = 0.01, seed: int = 3, versions: list[str] | None = None,
                        single_run: str | None = None, campaign_per_version: bool = False,
                        kv_cache: bool = False, campaign: str = "nightly", model: str = "llama-3.1-8b",
                        run_prefix: str = "", model_id: str = "meta-llama/Llama-3.1-8B-Instruct",
                        pool_gib: float | None = None, kv_fraction: float | None = None) -> Path:
    """Runs of one model (named ``model``) in two environments across ``versions`` (one day each,
    in that order); ``steps``: version → relative change of native output throughput from that
    version on (docker stays flat); ``campaign_per_version``: campaign ``v<version>`` each, else
    one, ``campaign``; ``kv_cache``: the runs also record their KV cache. A second call into the
    same ``root`` (another campaign or model, a ``run_prefix`` for its run ids) adds its runs;
    ``model_id`` is the model's id (its name on the pages), ``pool_gib`` the memory pool the runs
    record, if any; ``kv_fraction`` (with ``pool_gib``): the runs also record the memory in use before
    the KV cache (about 18 GiB, 1 GiB more in docker) and a KV cache of that fraction of the rest of
    the pool, as TensorRT-LLM sizes it, with the pool and the fraction in their records, and no
    peak memory (trtllm-bench reports the memory before the KV cache instead)."""
    rng = np.random.default_rng(seed)
    store = RunStore(root)
    for day, version in enumerate(versions or VERSIONS):
        level = 1.0
        for at, step in (steps or {}).items():
            if (versions or VERSIONS).index(version) >= (versions or VERSIONS).index(at):
                level *= 1 + step
        for env in ("native", "docker"):
            for i in range(1 if version == single_run else runs):
                tok_s = 1000.0 * (level if env == "native" else 1.0) * (1 + rng.normal(0, noise))
                metrics = {"output_throughput_tok_s": round(tok_s, 3),
                           "peak_memory_gib": round(40.0 * (1 + rng.normal(0, noise)), 4),
                           **({"kv_cache_gib": 20.0} if kv_cache else {}),
                           **({"memory_total_gib": pool_gib} if pool_gib is not None else {})}
                if kv_fraction is not None and pool_gib is not None:  # drawn only then: other stores keep their runs
                    pre_kv = round((19.0 if env == "docker" else 18.0) * (1 + rng.normal(0, noise)), 4)
                    del metrics["peak_memory_gib"]
                    metrics.update(pre_kv_memory_gib=pre_kv, kv_cache_gib=round(kv_fraction * (pool_gib - pre_kv), 4))
                record = RunRecord(
                    run_id=f"{run_prefix}{env}-{version}-{i}", iteration=i + 1,
                    campaign=f"v{version}" if campaign_per_version else campaign,
                    started_at=f"2026-01-{day + 1:02d}T0{i}:00:00Z",
                    model=Model(id=model_id, name=model),
                    environment=Environment(name=env, kind="container" if env == "docker" else "native"),
                    workload=Workload(num_requests=100, input_len=128, output_len=128, concurrency=8,
                                      kv_cache_fraction=kv_fraction),
                    hardware=Hardware(memory_pool_gib=pool_gib if kv_fraction is not None else None),
                    software=Software(engine="trtllm", engine_version=version),
                    metrics=metrics,
                    labels={"version": version})
                store.write(record, [])
    return root
