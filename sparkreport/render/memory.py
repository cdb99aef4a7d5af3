"""The Unified-memory page: KV cache against the memory in use before it, and the budget per arm.

Two memory figures, never one column (schema 2): ``pre_kv_memory_gib``, memory in use before the
KV cache is allocated (trtllm-bench, TensorRT-LLM's memory log, the Phase 1 study, the
unified-memory post), and ``peak_memory_gib``, the peak in use with the KV cache (the torch
runner). The budget follows TensorRT-LLM's rule: the KV cache gets ``fraction`` of the memory that
is free once the model is loaded (``--kv_cache_free_gpu_mem_fraction``, default 0.9). Free memory
is the figure the run recorded (``memory_available_gib``), else pool − memory before the KV cache
(that one recorded, else derived as peak − KV cache and marked).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.dataset import plain
from sparkreport.render.pages import Page, PageDoc, register

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.charts import ChartSpec
    from sparkreport.render.context import SiteData

BUDGET_METRICS = ("memory_total_gib", "pre_kv_memory_gib", "peak_memory_gib", "memory_available_gib",
                  "kv_cache_gib", "kv_cache_fraction")
#: The two memory figures the page shows side by side (never in one column).
MEMORY_METRICS = ("pre_kv_memory_gib", "peak_memory_gib", "kv_cache_gib")


def scatter_points(site: SiteData) -> pd.DataFrame:
    """Included runs, plus one point per published arm that gives memory before the KV cache and
    the KV cache (a figure a source does not give stays NaN)."""
    import pandas as pd

    from sparkreport.charts import MEASURED, PUBLISHED

    columns = ["model_name", "environment", "pre_kv_memory_gib", "peak_memory_gib", "kv_cache_gib", "origin"]
    frames = []
    runs = site.runs[site.runs["included"].astype(bool)] if not site.runs.empty else site.runs
    if not runs.empty:
        frames.append(runs.assign(origin=MEASURED).reindex(columns=columns))
    sums = site.dataset.summaries
    if not sums.empty:
        wide = sums.pivot_table(index=["campaign", "model_name", "environment"], columns="metric",
                                values="mean", aggfunc="first").reset_index()
        if "kv_cache_gib" in wide.columns:
            frames.append(wide.assign(origin=PUBLISHED).reindex(columns=columns))
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)


def budget_rows(site: SiteData) -> list[dict[str, Any]]:
    """Per arm: pool → memory before the KV cache → free → KV cache at the recorded fraction, and what was observed."""
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
        kv = values["kv_cache_gib"]
        before = values["pre_kv_memory_gib"]
        before_derived = before is None and values["peak_memory_gib"] is not None and kv is not None
        if before_derived:
            before = values["peak_memory_gib"] - kv
        if before is None:
            continue
        pool = values["memory_total_gib"] or pools.get(key)
        free = values["memory_available_gib"]
        free_computed = free is None and pool is not None
        if free_computed and pool is not None:
            free = pool - before
        fraction = values["kv_cache_fraction"] or fractions.get(key)
        expected = fraction * free if fraction is not None and free is not None else None
        out.append({
            "campaign": key[0], "model": key[1], "model_name": names[key], "environment": key[2],
            "published": sources[key] == "published", "pool": pool,
            # "peak" is memory in use before the KV cache (the bar the budget starts from); the
            # peak with the KV cache, when recorded, is "peak_with_kv".
            "peak": before, "pre_kv": before, "pre_kv_derived": before_derived,
            "peak_with_kv": values["peak_memory_gib"], "free": free,
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
        from sparkreport.dataset import frame_rows as rows

        pairs = site.stats[site.stats["metric"].isin(MEMORY_METRICS)]
        wide = []
        if not pairs.empty:
            for (campaign, model, env), group in pairs.groupby(["campaign", "model", "environment"], sort=True):
                by_metric = {r["metric"]: r for r in rows(group)}
                wide.append({"campaign": campaign, "model": model, "environment": env,
                             "model_name": group["model_name"].iloc[0],
                             "source": group["source"].iloc[0],
                             "pre_kv": by_metric.get("pre_kv_memory_gib"),
                             "peak": by_metric.get("peak_memory_gib"), "kv": by_metric.get("kv_cache_gib")})
        pools = sorted({r.hardware.memory_pool_gib for r in site.dataset.records
                        if r.hardware.memory_pool_gib is not None})
        return {"arms": wide, "budget": budget_rows(site), "pools": pools,
                "unified": any(r.hardware.unified_memory for r in site.dataset.records),
                "identity": identity_fits(site), "ledger": ledger_summary(site)}

    def charts(self, site: SiteData, doc: PageDoc) -> list[ChartSpec]:
        from sparkreport.charts import memory_scatter

        out = []
        waterfall = budget_chart(budget_rows(site))
        if waterfall is not None:
            out.append(waterfall)
        chart = memory_scatter(scatter_points(site), name="kv-vs-peak",
                               title="KV cache against memory in use before it was allocated")
        if chart is not None:
            out.append(chart)
        return out


def identity_fits(site: SiteData) -> list[dict[str, Any]]:
    """The derived-identity fits (KV = fraction × free + c) per campaign, with their numbers."""
    return [
        {"campaign": f.message.split(":")[0], "message": f.message, **f.numbers}
        for f in site.findings if f.code == "derived-identity"
    ]


#: Keys in a run's environment/hardware details that the executor's memory ledger writes.
LEDGER_HINTS = ("meminfo", "cgroup", "page_cache", "ledger", "shm")


def ledger_summary(site: SiteData) -> dict[str, Any]:
    """Which runs recorded a memory ledger (/proc/meminfo, cgroup statistics, cache state)."""
    with_ledger = []
    keys: set[str] = set()
    for record in site.dataset.records:
        found = {k for section in (record.environment.details, record.hardware.details, record.workload.details)
                 for k in section if any(h in k.lower() for h in LEDGER_HINTS)}
        if found:
            with_ledger.append(record.run_id)
            keys |= found
    return {"runs": len(with_ledger), "total": len(site.dataset.records), "fields": sorted(keys)}


def budget_chart(budget: list[dict[str, Any]]) -> ChartSpec | None:
    """The memory budget as stacked bars per arm: in use before the KV cache (weights + runtime) →
    KV cache → left free."""
    import altair as alt

    from sparkreport.charts import PANEL_WIDTH, _finish

    data = []
    for b in budget:
        if b["pool"] is None or b["peak"] is None:
            continue
        arm = f"{b['model_name']} · {b['environment']}"
        kv = b["kv"] or 0.0
        rest = max(b["pool"] - b["peak"] - kv, 0.0)
        for order, (part, value) in enumerate((("in use before KV cache", b["peak"]), ("KV cache", kv),
                                               ("left free", rest))):
            data.append({"arm": arm, "campaign": b["campaign"], "part": part, "gib": round(value, 3),
                         "order": order})
    if not data:
        return None
    chart = alt.Chart(alt.Data(values=data)).mark_bar().encode(
        y=alt.Y("arm:N", title=None, sort=None),
        x=alt.X("sum(gib):Q", title="GiB of the memory pool", stack="zero"),
        color=alt.Color("part:N", title="budget", sort=["in use before KV cache", "KV cache", "left free"]),
        order=alt.Order("order:Q"),
        row=alt.Row("campaign:N", title=None),
        tooltip=[alt.Tooltip("arm:N"), alt.Tooltip("part:N"), alt.Tooltip("gib:Q", format=".2f", title="GiB")],
    ).properties(width=PANEL_WIDTH + 80).resolve_scale(y="independent")
    description = ("The memory pool of each arm split into the memory in use before the KV cache, the KV cache "
                   "and what is left free (means).")
    return _finish(chart, "memory-budget", "Memory budget per arm", description, rows=len(data))
