"""Physical-plausibility checks: results measured against what the hardware and model allow.

* capacity — weights alone exceed the memory pool; or a measured memory figure is below what the
  run must have held: the weights, for memory in use before the KV cache is allocated
  (``pre_kv_memory_gib``); weights plus the KV cache, for the peak in use (``peak_memory_gib``);
* bandwidth roofline — decode throughput above concurrency × bandwidth ÷ bytes read per step;
* size insensitivity — models whose bytes per token differ ≥ 5× report the same throughput;
* derived identity — KV cache ≈ fraction × (pool − memory before the KV cache) + c across at
  least three arms: then "more memory used" and "less KV cache" are one measurement, not two
  findings (two arms fit any line, so they are never reported as evidence);
* covariate imbalance — arms that differ in start temperature or ran in separate time blocks.

Model facts come from the record (``model.details``: the torch runner writes the architecture it
ran) before the catalog (catalogs/models.yaml), which stays the fallback. Capacity, roofline and
size all rest on one assumption per arm — the bytes of its weights — which every finding states
(``Finding.assumes``), e.g. "in BF16; the record states no precision": findings that share it are
one doubt about that assumption, not independent confirmations. An arm is (campaign, model,
environment): nothing is merged across campaigns. Each check skips, with an ``info`` finding,
when the hardware or model is unknown.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sparkreport.analysis.arms import arm_rows, factor_arms, float_matrix, reported
from sparkreport.analysis.checks import Finding, register_check
from sparkreport.catalogs import GIB, HardwareSpec, ModelSpec, match_hardware, match_model
from sparkreport.config import AnalysisOptions, factor_words
from sparkreport.dataset import Dataset
from sparkreport.figures import num

if TYPE_CHECKING:
    import pandas as pd

ROOFLINE_MARGIN = 0.10
#: The throughput the roofline and size checks read (its figures quoted as the pages print them).
TPUT = "output_throughput_tok_s"
SIZE_RATIO = 5.0
SAME_THROUGHPUT = 0.02
IDENTITY_R2 = 0.95
#: Fewer arms than this cannot test a straight line (two points fit any line exactly).
IDENTITY_MIN_ARMS = 3
TEMP_IMBALANCE_C = 2.0
#: The checks whose findings rest on the weight-size assumption of an arm.
WEIGHT_CHECKS = ("capacity-weights", "capacity-peak", "roofline", "size-insensitive")


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
    #: Peak memory in use, KV cache included (``peak_memory_gib``).
    peak_gib: float | None
    kv_gib: float | None
    tput: float | None
    tput_cv: float | None
    spec: ModelSpec | None
    hardware: HardwareSpec | None
    #: Memory in use before the KV cache is allocated (``pre_kv_memory_gib``).
    pre_kv_gib: float | None = None
    #: Where the model facts come from: "record", "record and catalog" or "catalog".
    facts_from: str = "catalog"
    #: Whether the record states the precision (``model.details.dtype``).
    dtype_stated: bool = False


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


#: Model facts that describe the architecture (a record holding one of these describes the model).
_ARCH_KEYS = ("params_b", "layers", "kv_heads", "head_dim", "weight_gb")


def _model_facts(model_id: str | None, name: str, details: dict[str, Any] | None) -> tuple[ModelSpec | None, str, bool]:
    """The model spec (record facts first, the catalog as fallback), where it came from, and
    whether the record states the precision."""
    catalog = match_model(model_id, name)
    spec = match_model(model_id, name, details or None)
    from_record = bool(details) and any(k in (details or {}) for k in _ARCH_KEYS)
    if spec is None:
        return None, "catalog", False
    facts_from = "catalog"
    if from_record:
        facts_from = "record and catalog" if catalog is not None else "record"
    return spec, facts_from, bool(details and details.get("dtype"))


def arm_points(ds: Dataset, runs: pd.DataFrame) -> list[ArmPoint]:
    """Arm means (included runs and published summaries) with their model facts and hardware
    (computed once per check pass: five checks read them)."""
    from sparkreport.analysis.arms import per_frame

    return list(per_frame(ds, runs, "arm-points", lambda: _arm_points(ds, runs)))


def _arm_points(ds: Dataset, runs: pd.DataFrame) -> list[ArmPoint]:
    details = {(r.campaign, r.model.name): r.model.details for r in ds.records if r.model.details}
    points: list[ArmPoint] = []
    used = runs[runs["included"]]
    columns = ["output_throughput_tok_s", "memory_pool_gib", "peak_memory_gib", "kv_cache_gib"]
    has_pre_kv = "pre_kv_memory_gib" in used.columns
    throughput, pool, peak, kv = float_matrix(used, columns).T
    pre_kv = float_matrix(used, ["pre_kv_memory_gib"])[:, 0] if has_pre_kv else np.full(len(used), np.nan)
    in_flight = float_matrix(used, ["concurrency", "batch_size", "num_requests_planned"]).T
    run_ids, names, gpus, model_ids = (used[c].to_numpy(dtype=object)
                                       for c in ("run_id", "model_name", "gpu_name", "model_id"))
    gpu_known, model_id_known = (used[c].notna().to_numpy() for c in ("gpu_name", "model_id"))
    for (campaign, model, env), rows in arm_rows(used, ["campaign", "model", "environment"]):
        values = reported(throughput[rows])
        gpu = _first_known(gpus[rows], gpu_known[rows])
        model_id = _first_known(model_ids[rows], model_id_known[rows])
        spec, facts_from, stated = _model_facts(model_id, str(model), details.get((str(campaign), str(model))))
        points.append(ArmPoint(
            str(campaign), str(model), str(names[rows[0]]), str(env), sorted(run_ids[rows].tolist()), gpu,
            _mean(pool[rows]), _in_flight(in_flight[:, rows]), _mean(peak[rows]), _mean(kv[rows]),
            float(values.mean()) if len(values) else None,
            float(values.std(ddof=1) / values.mean()) if len(values) > 1 and values.mean() else None,
            spec, match_hardware(gpu), _mean(pre_kv[rows]), facts_from, stated,
        ))
    summaries = ds.summaries
    by_id = {r.run_id: r for r in ds.records}
    for (campaign, model, env), group in summaries.groupby(["campaign", "model", "environment"]):
        means = dict(zip(group["metric"], group["mean"].astype(float), strict=True))
        sds = dict(zip(group["metric"], group["sd"].astype(float), strict=True))
        record = by_id[str(group["run_id"].iloc[0])]
        tput = means.get("output_throughput_tok_s")
        sd = sds.get("output_throughput_tok_s")
        spec, facts_from, stated = _model_facts(record.model.id, record.model.name, record.model.details or None)
        points.append(ArmPoint(
            str(campaign), str(model), str(group["model_name"].iloc[0]), str(env), [str(group["run_id"].iloc[0])],
            record.hardware.gpu_name, record.hardware.memory_pool_gib or means.get("memory_total_gib"),
            float(record.workload.concurrency or record.workload.batch_size or record.workload.num_requests or 0)
            or None,
            means.get("peak_memory_gib"), means.get("kv_cache_gib"), tput,
            sd / tput if tput and sd is not None and math.isfinite(sd) else None,
            spec, match_hardware(record.hardware.gpu_name), means.get("pre_kv_memory_gib"), facts_from, stated,
        ))
    return points


def weight_assumption(p: ArmPoint) -> str:
    """What the weight-based checks assume about this arm's model, in words.

    e.g. "Qwen2.5-72B's weights: 72.7B parameters in BF16 (catalog; the record states no precision)".
    """
    spec = p.spec
    if spec is None:
        return ""
    size = f"{spec.params_b:.4g}B parameters in {spec.dtype.upper()}"
    if spec.weight_gb is not None:  # a catalog's GB, written in GiB as every size on the pages
        size += f", {spec.weight_gib:.2f} GiB of weights"
    if p.facts_from == "record":
        where = "as the record states" if p.dtype_stated else "from the record; the record states no precision"
    elif p.facts_from == "record and catalog":
        where = "from the record" + ("" if p.dtype_stated else "; the record states no precision")
    else:
        where = "from the catalog" + ("; precision as the record states" if p.dtype_stated
                                      else "; the record states no precision")
    return f"{p.model_name}'s weights: {size} ({where})"


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


def _pre_kv(p: ArmPoint) -> tuple[float | None, bool]:
    """Memory in use before the KV cache: the recorded figure, else peak − KV cache (derived)."""
    if p.pre_kv_gib is not None:
        return p.pre_kv_gib, False
    if p.peak_gib is not None and p.kv_gib is not None:
        return p.peak_gib - p.kv_gib, True
    return None, False


@dataclass
class IdentityFit:
    campaign: str
    fraction: float
    intercept: float
    r2: float
    n: int
    #: True when memory before the KV cache was derived as peak − KV cache (the peak includes it).
    peak_includes_kv: bool
    runs: list[str]
    #: The memory pool, where every arm has the same (to 0.01 GiB): the fit is then one line in
    #: memory before the KV cache, KV = fraction × (pool − before) + intercept. Else None.
    pool_gib: float | None = None


def _distinct_points(x: np.ndarray, y: np.ndarray) -> set[tuple[float, float]]:
    """The (free, KV) points that differ by more than 0.5 GiB in free memory or 0.1 GiB of KV cache."""
    return {(round(float(a) * 2) / 2, round(float(b), 1)) for a, b in zip(x, y, strict=True)}


def fit_identity(points: list[ArmPoint]) -> list[IdentityFit]:
    """Per campaign, over at least IDENTITY_MIN_ARMS arms: KV ≈ f × free + c, where free = pool −
    memory in use before the KV cache (recorded, else peak − KV). Kept when it holds (R² ≥ 0.95)."""
    fits = []
    by_campaign: dict[str, list[tuple[ArmPoint, float, bool]]] = {}
    for p in points:
        before, derived = _pre_kv(p)
        if p.kv_gib is not None and before is not None and _pool(p):
            by_campaign.setdefault(p.campaign, []).append((p, before, derived))
    for campaign, group in by_campaign.items():
        y = np.array([p.kv_gib for p, _, _ in group], dtype=float)
        x = np.array([(_pool(p) or 0) - before for p, before, _ in group])
        if len(_distinct_points(x, y)) < IDENTITY_MIN_ARMS:
            continue  # arms that sit on the same point add nothing a line could miss
        slope, intercept = np.polyfit(x, y, 1)
        residual = y - (slope * x + intercept)
        total = float(((y - y.mean()) ** 2).sum())
        r2 = 1 - float((residual**2).sum()) / total if total else 0.0
        if r2 >= IDENTITY_R2 and 0.3 <= slope <= 1.05:
            pools = {round(_pool(p) or 0, 2) for p, _, _ in group}
            fits.append(IdentityFit(campaign, float(slope), float(intercept), r2, len(group),
                                    any(derived for _, _, derived in group),
                                    sorted(r for p, _, _ in group for r in p.runs),
                                    pools.pop() if len(pools) == 1 else None))
    return fits


def _with_basis(message: str, assumes: list[str]) -> str:
    return f"{message} — assumes {'; and '.join(assumes)}" if assumes else message


@register_check("capacity", per_campaign=True)
def _capacity(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings: list[Finding] = []
    for p in arm_points(ds, runs):
        pool = _pool(p)
        if p.spec is None:
            findings.append(Finding("info", "model-unknown",
                                    f"{_who(p)}: neither the record nor the catalog describes this model — capacity "
                                    "and roofline checks skipped (describe it under model.details)", p.runs))
            continue
        weights = p.spec.weight_gib
        assumes = [weight_assumption(p)]
        if pool and weights > pool:
            findings.append(Finding(
                "error", "capacity-weights",
                _with_basis(f"{_who(p)}: the weights alone need {weights:.2f} GiB, more than the {pool:.2f} GiB "
                            "memory pool — at that size these runs cannot have held the model", assumes),
                p.runs, {"weights_gib": round(weights, 2), "pool_gib": pool}, assumes=assumes,
            ))
        measured = [("memory in use before the KV cache was allocated", p.pre_kv_gib, weights, "weights")]
        if p.peak_gib is not None:
            kv = p.kv_gib or 0.0
            measured.append(("peak memory in use", p.peak_gib, weights + kv,
                             "weights plus KV cache" if p.kv_gib else "weights"))
        for label, value, needed, held in measured:
            if value is None or value >= needed:
                continue
            findings.append(Finding(
                "error", "capacity-peak",
                _with_basis(f"{_who(p)}: measured {label}, {value:.2f} GiB, is below the {held} it must have "
                            f"held ({needed:.2f} GiB)", assumes),
                p.runs, {"measured_gib": round(value, 2), "needed_gib": round(needed, 2),
                         "weights_gib": round(weights, 2)}, assumes=assumes,
            ))
    return findings


@register_check("roofline", per_campaign=True)
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
            assumes = [weight_assumption(p)]
            findings.append(Finding(
                "error", "roofline",
                _with_basis(
                    # one unit in the sentence: the catalog's GB/s in GiB/s, as the weights in GiB (the data
                    # sheet's figure quoted beside it, the one a reader knows)
                    f"{_who(p)}: {num(p.tput, TPUT)} tok/s exceeds the memory-bandwidth bound of {bound:.2f} tok/s "
                    f"(≤ {p.concurrency:g} concurrent requests × {p.hardware.bandwidth_gb_s * 1e9 / GIB:.2f} GiB/s "
                    f"(the data sheet's {p.hardware.bandwidth_gb_s:g} GB/s) ÷ "
                    f"{step_bytes / GIB:.2f} GiB of weights read per decode step; margin {ROOFLINE_MARGIN:.0%})",
                    assumes),
                p.runs, {"throughput_tok_s": round(p.tput, 2), "bound_tok_s": round(bound, 1),
                         "bandwidth_gb_s": p.hardware.bandwidth_gb_s, "bytes_per_step_gb": round(step_bytes / 1e9, 2),
                         "concurrency": p.concurrency}, assumes=assumes,
            ))
    return findings


@register_check("size-insensitivity", per_campaign=True)
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
                assumes = [weight_assumption(a), weight_assumption(b)]
                findings.append(Finding(
                    "error", "size-insensitive",
                    _with_basis(
                        f"{campaign}/{env}: {a.model_name} ({a.spec.active_weight_bytes / GIB:.2f} GiB read per "
                        f"token) and {b.model_name} ({b.spec.active_weight_bytes / GIB:.2f} GiB, {ratio:.1f}× more) "
                        f"report the same output throughput ({num(a.tput, TPUT)} vs {num(b.tput, TPUT)} tok/s, "
                        f"{apart * 100:.2f}% apart) "
                        "— these runs may not have run the models they name", assumes),
                    a.runs + b.runs, {"bytes_ratio": round(ratio, 2), "throughput_a": round(a.tput, 2),
                                      "throughput_b": round(b.tput, 2)}, assumes=assumes,
                ))
    return findings


@register_check("derived-identity", per_campaign=True)
def _identity(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings = []
    points = arm_points(ds, runs)
    fits = fit_identity(points)
    for fit in fits:
        free = "pool − (peak − KV)" if fit.peak_includes_kv else "pool − memory before the KV cache"
        intercept = round(fit.intercept, 2) + 0.0  # -0.001 GiB reads +0.00, not -0.00
        findings.append(Finding(
            "warning", "derived-identity",
            f"{fit.campaign}: KV cache = {fit.fraction:.3f} × ({free}) {intercept:+.2f} GiB fits all {fit.n} arms "
            f"(R² {fit.r2:.4f}): the KV cache is sized as a fixed fraction of the memory left free, "
            "so 'uses more memory' and 'gets less KV cache' are one measurement stated twice, not two findings",
            fit.runs, {"fraction": round(fit.fraction, 4), "intercept_gib": round(fit.intercept, 3),
                       "r2": round(fit.r2, 5), "arms": fit.n,
                       **({"pool_gib": fit.pool_gib} if fit.pool_gib is not None else {})},
        ))
    fitted = {f.campaign for f in fits}
    few: dict[str, list[tuple[ArmPoint, float]]] = {}
    for p in points:
        before = _pre_kv(p)[0]
        if p.campaign not in fitted and p.kv_gib is not None and before is not None and _pool(p):
            few.setdefault(p.campaign, []).append((p, (_pool(p) or 0) - before))
    for campaign, group in sorted(few.items()):
        distinct = len(_distinct_points(np.array([x for _, x in group]), np.array([p.kv_gib for p, _ in group])))
        if 2 <= distinct < IDENTITY_MIN_ARMS:
            findings.append(Finding(
                "info", "derived-identity-untested",
                f"{campaign}: the arms give only {distinct} distinct points of KV cache against free memory — a line "
                f"fits any {distinct} points, so whether the KV cache is a fixed fraction of free memory cannot be "
                f"tested here (it needs ≥ {IDENTITY_MIN_ARMS} distinct points)",
                sorted(r for p, _ in group for r in p.runs), {"arms": len(group), "distinct_points": distinct},
            ))
    return findings


def assumption_groups(findings: list[Finding]) -> list[dict[str, Any]]:
    """Findings that rest on one assumption, grouped: one doubt each, never independent checks.

    Each group: ``assumes`` (the sentence), ``codes`` (the checks that used it), ``findings``
    (their messages) and ``runs``. Ordered by the number of findings, largest first.
    """
    groups: dict[str, dict[str, Any]] = {}
    for f in findings:
        for assumption in f.assumes:
            group = groups.setdefault(assumption, {"assumes": assumption, "codes": [], "findings": [], "runs": []})
            if f.code not in group["codes"]:
                group["codes"].append(f.code)
            group["findings"].append(f.message)
            group["runs"] = sorted(set(group["runs"]) | set(f.runs))
    return sorted(groups.values(), key=lambda g: (-len(g["findings"]), g["assumes"]))


def model_facts_table(ds: Dataset, runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Per arm: the model facts the plausibility checks used and where they came from."""
    out = []
    for p in arm_points(ds, runs):
        out.append({
            "campaign": p.campaign, "model": p.model, "model_name": p.model_name, "environment": p.environment,
            "facts_from": p.facts_from if p.spec else "none", "dtype": p.spec.dtype if p.spec else None,
            "dtype_stated": p.dtype_stated, "params_b": p.spec.params_b if p.spec else None,
            "weights_gib": round(p.spec.weight_gib, 2) if p.spec else None,
            "assumes": weight_assumption(p) or None,
        })
    return out


@register_check("covariates", per_campaign=True)
def _covariates(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    """Per campaign × model: arms started at different GPU temperatures, or run in separate time
    blocks — the arms the comparisons contrast (environments, or the levels of a label factor:
    :func:`~sparkreport.analysis.arms.factor_arms`). Reads numpy columns by row positions (a
    DataFrame per group and per environment was most of ``check`` at 10 000 runs)."""
    import pandas as pd

    findings = []
    used = factor_arms(runs[runs["included"]], opts.factor)
    words = factor_words(opts.factor)
    # Records without a local start time (executor records before it, ingested logs) have the UTC one.
    started = used["started_at_local"].fillna(used["started_at"])
    starts = np.array([None if pd.isna(v) else v for v in started], dtype=object)
    envs_of = np.array([None if pd.isna(v) else str(v) for v in used["environment"]], dtype=object)
    temps_of = float_matrix(used, ["start_temp_c"])[:, 0]
    run_ids = used["run_id"].to_numpy(dtype=object)
    for (campaign, model), positions in arm_rows(used, ["campaign", "model"]):
        group_envs = envs_of[positions]
        envs = sorted({e for e in group_envs if e is not None})
        if len(envs) < 2:
            continue
        group_temps = temps_of[positions]
        temps = {e: _mean(group_temps[group_envs == e]) for e in envs}
        known = {e: t for e, t in temps.items() if t is not None}
        if len(known) >= 2 and max(known.values()) - min(known.values()) > TEMP_IMBALANCE_C:
            detail = ", ".join(f"{e} {t:.1f} °C" for e, t in known.items())
            findings.append(Finding(
                "warning", "covariate-temperature",
                f"{campaign}/{model}: arms started at different GPU temperatures ({detail})",
                sorted(run_ids[positions].tolist()), {f"start_temp_c_{e}": round(t, 2) for e, t in known.items()},
            ))
        group_starts = starts[positions]
        spans = {}
        for e in envs:
            times = [t for t, env in zip(group_starts, group_envs, strict=True) if env == e and t is not None]
            if len(times) > 1:
                spans[e] = (min(times), max(times))
        if len(spans) >= 2:
            ordered = sorted(spans.items(), key=lambda kv: kv[1][0])
            blocks = all(ordered[i][1][1] < ordered[i + 1][1][0] for i in range(len(ordered) - 1))
            if blocks:
                detail = "; ".join(f"{e!s} {str(lo)[:16]}–{str(hi)[:16]}" for e, (lo, hi) in ordered)
                findings.append(Finding(
                    "warning", "covariate-order",
                    f"{campaign}/{model}: {words.many} ran in separate time blocks ({detail}), so drift over "
                    f"time is confounded with the {words.name} — interleave them (randomized blocks)",
                    sorted(run_ids[positions].tolist()),
                ))
    return findings
