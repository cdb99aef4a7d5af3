"""Physical-plausibility checks: results measured against what the hardware and model allow.

* capacity — weights alone exceed the memory pool; or the measured peak is below what the run
  must have held (weights, plus the KV cache when the peak includes it);
* bandwidth roofline — decode throughput above concurrency × bandwidth ÷ bytes read per step;
* size insensitivity — models whose bytes per token differ ≥ 5× report the same throughput;
* derived identity — KV cache ≈ fraction × (pool − peak) + c across runs: then "more memory
  used" and "less KV cache" are one measurement, not two findings;
* covariate imbalance — arms that differ in start temperature or ran in separate time blocks.

Each check skips, with an ``info`` finding, when the hardware or model is unknown.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sparkreport.analysis.arms import arm_rows, float_matrix, reported
from sparkreport.analysis.checks import Finding, register_check
from sparkreport.catalogs import GIB, HardwareSpec, ModelSpec, match_hardware, match_model
from sparkreport.config import AnalysisOptions
from sparkreport.dataset import Dataset

if TYPE_CHECKING:
    import pandas as pd

ROOFLINE_MARGIN = 0.10
SIZE_RATIO = 5.0
SAME_THROUGHPUT = 0.02
IDENTITY_R2 = 0.95
TEMP_IMBALANCE_C = 2.0


@dataclass
class ArmPoint:
    """One arm's means, from runs or from a published summary."""

    campaign: str
    model: str
    model_name: str
    environment: str
    runs: list[str]
    gpu_name: str | None
    pool_gib: float | None
    concurrency: float | None
    peak_gib: float | None
    kv_gib: float | None
    tput: float | None
    tput_cv: float | None
    spec: ModelSpec | None
    hardware: HardwareSpec | None


def _mean(values: np.ndarray) -> float | None:
    """The mean of the values that are not NaN; None when there are none."""
    clean = reported(values)
    return float(clean.mean()) if len(clean) else None


def _first_known(values: np.ndarray, known: np.ndarray) -> str | None:
    """The first of ``values`` whose ``known`` flag is set, as text; None when none is."""
    found = values[known]
    return str(found[0]) if len(found) else None


def _in_flight(columns: np.ndarray) -> float | None:
    """Requests in flight: the highest concurrency, else batch size, else number of requests."""
    for column in columns:
        values = reported(column)
        if len(values):
            return float(values.max())
    return None


def arm_points(ds: Dataset, runs: pd.DataFrame) -> list[ArmPoint]:
    """Arm means (included runs and published summaries) with their catalog matches."""
    details = {(r.campaign, r.model.name): r.model.details for r in ds.records if r.model.details}
    points: list[ArmPoint] = []
    used = runs[runs["included"]]
    throughput, pool, peak, kv = float_matrix(
        used, ["output_throughput_tok_s", "memory_pool_gib", "peak_memory_gib", "kv_cache_gib"]).T
    in_flight = float_matrix(used, ["concurrency", "batch_size", "num_requests_planned"]).T
    run_ids, names, gpus, model_ids = (used[c].to_numpy(dtype=object)
                                       for c in ("run_id", "model_name", "gpu_name", "model_id"))
    gpu_known, model_id_known = (used[c].notna().to_numpy() for c in ("gpu_name", "model_id"))
    for (campaign, model, env), rows in arm_rows(used, ["campaign", "model", "environment"]):
        values = reported(throughput[rows])
        gpu = _first_known(gpus[rows], gpu_known[rows])
        model_id = _first_known(model_ids[rows], model_id_known[rows])
        points.append(ArmPoint(
            str(campaign), str(model), str(names[rows[0]]), str(env), sorted(run_ids[rows].tolist()), gpu,
            _mean(pool[rows]), _in_flight(in_flight[:, rows]), _mean(peak[rows]), _mean(kv[rows]),
            float(values.mean()) if len(values) else None,
            float(values.std(ddof=1) / values.mean()) if len(values) > 1 and values.mean() else None,
            match_model(model_id, str(model), details.get((str(campaign), str(model)))),
            match_hardware(gpu),
        ))
    summaries = ds.summaries
    for (campaign, model, env), group in summaries.groupby(["campaign", "model", "environment"]):
        means = dict(zip(group["metric"], group["mean"].astype(float), strict=True))
        sds = dict(zip(group["metric"], group["sd"].astype(float), strict=True))
        record = next(r for r in ds.records if r.run_id == group["run_id"].iloc[0])
        tput = means.get("output_throughput_tok_s")
        sd = sds.get("output_throughput_tok_s")
        points.append(ArmPoint(
            str(campaign), str(model), str(group["model_name"].iloc[0]), str(env), [str(group["run_id"].iloc[0])],
            record.hardware.gpu_name, record.hardware.memory_pool_gib or means.get("memory_total_gib"),
            float(record.workload.concurrency or record.workload.batch_size or record.workload.num_requests or 0)
            or None,
            means.get("peak_memory_gib"), means.get("kv_cache_gib"), tput,
            sd / tput if tput and sd is not None and math.isfinite(sd) else None,
            match_model(record.model.id, record.model.name, record.model.details or None),
            match_hardware(record.hardware.gpu_name),
        ))
    return points


def _who(p: ArmPoint) -> str:
    return f"{p.campaign}/{p.model}/{p.environment}"


def _pool(p: ArmPoint) -> float | None:
    if p.pool_gib:
        return p.pool_gib
    if p.hardware and p.hardware.memory_gib_visible:
        return p.hardware.memory_gib_visible[0]
    if p.hardware:
        return p.hardware.memory_gb * 1e9 / GIB
    return None


@dataclass
class IdentityFit:
    campaign: str
    fraction: float
    intercept: float
    r2: float
    n: int
    peak_includes_kv: bool
    runs: list[str]


def fit_identity(points: list[ArmPoint]) -> list[IdentityFit]:
    """Per campaign: KV ≈ f × free + c, free = pool − peak (or pool − (peak − KV) when the peak
    includes the KV cache); keep the better of the two readings when it holds."""
    fits = []
    by_campaign: dict[str, list[ArmPoint]] = {}
    for p in points:
        if p.kv_gib is not None and p.peak_gib is not None and _pool(p):
            by_campaign.setdefault(p.campaign, []).append(p)
    for campaign, group in by_campaign.items():
        if len(group) < 2 or len({round(p.kv_gib or 0, 3) for p in group}) < 2:
            continue
        y = np.array([p.kv_gib for p in group], dtype=float)
        best: IdentityFit | None = None
        for includes in (False, True):
            x = np.array([(_pool(p) or 0) - (p.peak_gib or 0) + (p.kv_gib or 0 if includes else 0) for p in group])
            if np.ptp(x) == 0:
                continue
            slope, intercept = np.polyfit(x, y, 1)
            residual = y - (slope * x + intercept)
            total = float(((y - y.mean()) ** 2).sum())
            r2 = 1 - float((residual**2).sum()) / total if total else 0.0
            fit = IdentityFit(campaign, float(slope), float(intercept), r2, len(group), includes,
                              sorted(r for p in group for r in p.runs))
            # KV = f·(pool − peak) and KV = f/(1+f)·(pool − peak + KV) are the same law; prefer the
            # plainer reading (the peak is measured before the KV cache is allocated) unless the
            # other fits clearly better.
            if best is None or fit.r2 > best.r2 + 0.01:
                best = fit
        if best and best.r2 >= IDENTITY_R2 and 0.3 <= best.fraction <= 1.05:
            fits.append(best)
    return fits


@register_check("capacity")
def _capacity(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings: list[Finding] = []
    points = arm_points(ds, runs)
    includes_kv = {f.campaign: f.peak_includes_kv for f in fit_identity(points)}
    for p in points:
        pool = _pool(p)
        if p.spec is None:
            findings.append(Finding("info", "model-unknown",
                                    f"{_who(p)}: model not in the catalog — capacity and roofline checks skipped "
                                    "(describe it inline under model.details)", p.runs))
            continue
        weights = p.spec.weight_gib
        what = f"{p.spec.dtype.upper()} weights of {p.model_name} ({p.spec.params_b:g}B parameters)"
        if pool and weights > pool:
            findings.append(Finding(
                "error", "capacity-weights",
                f"{_who(p)}: the {what} alone need {weights:.1f} GiB, more than the {pool:.2f} GiB memory pool "
                "— these runs cannot have held the model they name",
                p.runs, {"weights_gib": round(weights, 2), "pool_gib": pool},
            ))
        if p.peak_gib is None:
            continue
        kv_in_peak = includes_kv.get(p.campaign, True)  # without a fit, assume the peak includes the KV cache
        needed = weights + (p.kv_gib or 0 if kv_in_peak else 0)
        if p.peak_gib < needed:
            held = "weights plus KV cache" if kv_in_peak and p.kv_gib else "weights"
            findings.append(Finding(
                "error", "capacity-peak",
                f"{_who(p)}: measured peak memory {p.peak_gib:.2f} GiB is below the {held} it must have held "
                f"({needed:.1f} GiB)",
                p.runs, {"peak_gib": round(p.peak_gib, 2), "needed_gib": round(needed, 2),
                         "weights_gib": round(weights, 2)},
            ))
    return findings


@register_check("roofline")
def _roofline(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings: list[Finding] = []
    for p in arm_points(ds, runs):
        if p.tput is None or p.spec is None:
            continue
        if p.hardware is None:
            findings.append(Finding("info", "hardware-unknown",
                                    f"{_who(p)}: GPU {p.gpu_name or '(not recorded)'} is not in the hardware catalog "
                                    "— roofline check skipped", p.runs))
            continue
        if not p.concurrency:
            findings.append(Finding("info", "roofline-skipped",
                                    f"{_who(p)}: batch size / concurrency not recorded — roofline check skipped",
                                    p.runs))
            continue
        step_bytes = p.spec.active_weight_bytes
        bound = p.concurrency * p.hardware.bandwidth_gb_s * 1e9 / step_bytes
        if p.tput > bound * (1 + ROOFLINE_MARGIN):
            findings.append(Finding(
                "error", "roofline",
                f"{_who(p)}: {p.tput:.2f} tok/s exceeds the memory-bandwidth bound of {bound:.1f} tok/s "
                f"(≤ {p.concurrency:g} concurrent requests × {p.hardware.bandwidth_gb_s:g} GB/s ÷ "
                f"{step_bytes / 1e9:.1f} GB of weights read per decode step; margin {ROOFLINE_MARGIN:.0%})",
                p.runs, {"throughput_tok_s": round(p.tput, 2), "bound_tok_s": round(bound, 1),
                         "bandwidth_gb_s": p.hardware.bandwidth_gb_s, "bytes_per_step_gb": round(step_bytes / 1e9, 2),
                         "concurrency": p.concurrency},
            ))
    return findings


@register_check("size-insensitivity")
def _size(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings: list[Finding] = []
    groups: dict[tuple[str, str], list[ArmPoint]] = {}
    for p in arm_points(ds, runs):
        if p.tput is not None and p.spec is not None:
            groups.setdefault((p.campaign, p.environment), []).append(p)
    for (campaign, env), group in groups.items():
        for a, b in itertools.combinations(sorted(group, key=lambda p: p.spec.active_weight_bytes if p.spec else 0), 2):
            assert a.spec and b.spec and a.tput and b.tput
            ratio = b.spec.active_weight_bytes / a.spec.active_weight_bytes
            apart = abs(b.tput / a.tput - 1)
            noise = max(SAME_THROUGHPUT, 2 * max(a.tput_cv or 0, b.tput_cv or 0))
            if ratio >= SIZE_RATIO and apart < noise:
                findings.append(Finding(
                    "error", "size-insensitive",
                    f"{campaign}/{env}: {a.model_name} ({a.spec.active_weight_bytes / 1e9:.1f} GB read per token) "
                    f"and {b.model_name} ({b.spec.active_weight_bytes / 1e9:.1f} GB, {ratio:.1f}× more) report the "
                    f"same output throughput ({a.tput:.2f} vs {b.tput:.2f} tok/s, {apart:.1%} apart) — these runs "
                    "may not have run the models they name",
                    a.runs + b.runs, {"bytes_ratio": round(ratio, 2), "throughput_a": round(a.tput, 2),
                                      "throughput_b": round(b.tput, 2)},
                ))
    return findings


@register_check("derived-identity")
def _identity(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings = []
    for fit in fit_identity(arm_points(ds, runs)):
        free = "pool − (peak − KV)" if fit.peak_includes_kv else "pool − peak"
        findings.append(Finding(
            "warning", "derived-identity",
            f"{fit.campaign}: KV cache = {fit.fraction:.3f} × ({free}) {fit.intercept:+.2f} GiB fits every arm "
            f"(R² {fit.r2:.4f}, {fit.n} arms): the KV cache is sized as a fixed fraction of the memory left free, "
            "so 'uses more memory' and 'gets less KV cache' are one measurement stated twice, not two findings",
            fit.runs, {"fraction": round(fit.fraction, 4), "intercept_gib": round(fit.intercept, 3),
                       "r2": round(fit.r2, 5), "arms": fit.n},
        ))
    return findings


@register_check("covariates")
def _covariates(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings = []
    columns = ["campaign", "model", "environment", "start_temp_c", "started_at_local", "started_at", "run_id"]
    used = runs.loc[runs["included"], columns]
    # Records without a local start time (executor records before it, ingested logs) have the UTC one.
    used = used.assign(started_at_local=used["started_at_local"].fillna(used["started_at"]))
    for (campaign, model), group in used.groupby(["campaign", "model"]):
        envs = sorted(group["environment"].dropna().unique())
        if len(envs) < 2:
            continue
        temps = {e: _mean(float_matrix(group[group["environment"] == e], ["start_temp_c"])[:, 0]) for e in envs}
        known = {e: t for e, t in temps.items() if t is not None}
        if len(known) >= 2 and max(known.values()) - min(known.values()) > TEMP_IMBALANCE_C:
            detail = ", ".join(f"{e} {t:.1f} °C" for e, t in known.items())
            findings.append(Finding(
                "warning", "covariate-temperature",
                f"{campaign}/{model}: arms started at different GPU temperatures ({detail})",
                sorted(group["run_id"]), {f"start_temp_c_{e}": round(t, 2) for e, t in known.items()},
            ))
        times = group.dropna(subset=["started_at_local"])
        spans = {e: (t["started_at_local"].min(), t["started_at_local"].max())
                 for e, t in times.groupby("environment") if len(t) > 1}
        if len(spans) >= 2:
            ordered = sorted(spans.items(), key=lambda kv: kv[1][0])
            blocks = all(ordered[i][1][1] < ordered[i + 1][1][0] for i in range(len(ordered) - 1))
            if blocks:
                detail = "; ".join(f"{e!s} {str(lo)[:16]}–{str(hi)[:16]}" for e, (lo, hi) in ordered)
                findings.append(Finding(
                    "warning", "covariate-order",
                    f"{campaign}/{model}: environments ran in separate time blocks ({detail}), so drift over time "
                    "is confounded with the environment — interleave them (randomized blocks)",
                    sorted(group["run_id"]),
                ))
    return findings
