"""The Unified-memory page: peak memory against KV cache, and the memory budget per arm.

The budget follows TensorRT-LLM's rule: the KV cache gets ``fraction`` of the memory that
is free once the model is loaded (``--kv_cache_free_gpu_mem_fraction``, default 0.9). Free
memory is the figure the run recorded (``memory_available_gib``), else pool − peak.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.render.pages import Page, PageDoc, register
from sparkreport.render.tables import plain

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.charts import ChartSpec
    from sparkreport.render.context import SiteData

BUDGET_METRICS = ("memory_total_gib", "peak_memory_gib", "memory_available_gib", "kv_cache_gib",
                  "kv_cache_fraction")


def scatter_points(site: SiteData) -> pd.DataFrame:
    """Included runs, plus one point per published arm that gives both peak and KV cache."""
    import pandas as pd

    from sparkreport.charts import MEASURED, PUBLISHED

    columns = ["model_name", "environment", "peak_memory_gib", "kv_cache_gib", "origin"]
    frames = []
    runs = site.runs[site.runs["included"].astype(bool)] if not site.runs.empty else site.runs
    if not runs.empty:
        frames.append(runs.assign(origin=MEASURED)[columns])
    sums = site.dataset.summaries
    if not sums.empty:
        wide = sums.pivot_table(index=["campaign", "model_name", "environment"], columns="metric",
                                values="mean", aggfunc="first").reset_index()
        if {"peak_memory_gib", "kv_cache_gib"} <= set(wide.columns):
            frames.append(wide.assign(origin=PUBLISHED)[columns])
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)


def budget_rows(site: SiteData) -> list[dict[str, Any]]:
    """Per arm: pool → peak → free → KV cache at the recorded fraction, and what was observed."""
    stats = site.stats[site.stats["metric"].isin(BUDGET_METRICS)]
    if stats.empty:
        return []
    means = stats.pivot_table(index=["campaign", "model", "environment"], columns="metric",
                              values="mean", aggfunc="first")
    sources = stats.groupby(["campaign", "model", "environment"])["source"].first()
    names = stats.groupby(["campaign", "model", "environment"])["model_name"].first()
    pools: dict[tuple[str, str, str], float] = {}
    fractions: dict[tuple[str, str, str], float] = {}
    for record in site.dataset.records:
        key = (record.campaign, record.model.name, record.environment.name)
        if record.hardware.memory_pool_gib is not None:
            pools.setdefault(key, record.hardware.memory_pool_gib)
        if record.workload.kv_cache_fraction is not None:
            fractions.setdefault(key, record.workload.kv_cache_fraction)
    out = []
    for index, row in means.iterrows():
        key = (str(index[0]), str(index[1]), str(index[2]))  # type: ignore[index]
        values = {m: plain(row.get(m)) for m in BUDGET_METRICS}
        peak = values["peak_memory_gib"]
        if peak is None:
            continue
        pool = values["memory_total_gib"] or pools.get(key)
        free = values["memory_available_gib"]
        free_computed = free is None and pool is not None
        if free_computed and pool is not None:
            free = pool - peak
        fraction = values["kv_cache_fraction"] or fractions.get(key)
        expected = fraction * free if fraction is not None and free is not None else None
        kv = values["kv_cache_gib"]
        out.append({
            "campaign": key[0], "model": key[1], "model_name": names[key], "environment": key[2],
            "published": sources[key] == "published", "pool": pool, "peak": peak, "free": free,
            "free_computed": free_computed, "fraction": fraction, "expected_kv": expected, "kv": kv,
            "kv_share": kv / free if kv is not None and free else None,
        })
    return out


@register
class MemoryPage(Page):
    name = "memory"
    title = "Unified memory"
    template = "memory.md"
    folder = "memory"
    order = 20

    def context(self, site: SiteData, doc: PageDoc, out: Path) -> dict[str, Any]:
        from sparkreport.render.tables import rows

        pairs = site.stats[site.stats["metric"].isin(["peak_memory_gib", "kv_cache_gib"])]
        wide = []
        if not pairs.empty:
            for (campaign, model, env), group in pairs.groupby(["campaign", "model", "environment"], sort=True):
                by_metric = {r["metric"]: r for r in rows(group)}
                wide.append({"campaign": campaign, "model": model, "environment": env,
                             "model_name": group["model_name"].iloc[0],
                             "source": group["source"].iloc[0],
                             "peak": by_metric.get("peak_memory_gib"), "kv": by_metric.get("kv_cache_gib")})
        pools = sorted({r.hardware.memory_pool_gib for r in site.dataset.records
                        if r.hardware.memory_pool_gib is not None})
        return {"arms": wide, "budget": budget_rows(site), "pools": pools,
                "unified": any(r.hardware.unified_memory for r in site.dataset.records)}

    def charts(self, site: SiteData, doc: PageDoc) -> list[ChartSpec]:
        from sparkreport.charts import memory_scatter

        chart = memory_scatter(scatter_points(site), name="kv-vs-peak",
                               title="KV cache against peak memory")
        return [chart] if chart is not None else []
