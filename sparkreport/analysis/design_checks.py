"""Checks on how the runs were made: time, blocks, labels, hardware, sensors, interference.

Registered beside the data-quality checks (:mod:`sparkreport.analysis.checks`); each finding
names the campaign/model/environment (the arm) it concerns and the numbers it used.

- ``drift``: an arm's primary metric trends over run order (Mann–Kendall: Kendall's τ of the
  value against start order), with the Theil–Sen slope in % of the arm's mean per run;
- (arms run in contiguous stretches, confounded with time: ``covariate-order`` in
  :mod:`sparkreport.analysis.physics`);
- ``warmup-outlier``: the first run of a block (a plan block, or the first after a pause)
  far from the rest of its arm;
- ``pooled-label``: an arm pools runs that differ in a recorded label (cache, block, any
  ``--label``), engine version or — when the factor the comparisons contrast is not the
  environment (``analysis.factor``: an arm is one campaign × model × level of it) — environment,
  and that difference's effect within the arm is significant;
- ``hardware-change``: one campaign's runs on several GPUs (UUID), drivers or host kernels;
- ``sensor-constant``: a sensor reading with SD 0 across a campaign's runs — probably not measured (only
  readings sparkreport did not take itself);
- ``interference``: runs during which another process held the GPU, or after the cooldown gave up;
- ``identical-runs``: runs of one arm that report the same value, to the last digit, in every
  metric they report — copies of one run, which the statistics would count as independent.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from sparkreport import metrics as metric_catalog
from sparkreport.analysis.arms import ARM_KEYS, arm_name, arm_rows, factor_arms, float_matrix, per_frame, reported
from sparkreport.analysis.checks import Finding, register_check
from sparkreport.analysis.design import interference_flags, primary_metrics
from sparkreport.config import AnalysisOptions
from sparkreport.dataset import Dataset
from sparkreport.figures import num
from sparkreport.schema import OWN_FORMAT_PREFIX

if TYPE_CHECKING:
    import pandas as pd

#: Sensor readings that cannot be the same in every run unless they were not read.
SENSOR_METRICS = ("start_temp_c", "end_temp_c", "gpu_util_mean_pct", "sm_clock_mean_mhz", "gpu_power_mean_w")
#: Labels that identify a run or the plan, not a condition.
_IDENTITY_LABELS = {"label.plan_index", "label.plan_seed", "label.plan_order"}
MIN_DRIFT_RUNS = 5
WARMUP_ROBUST_Z = 3.5
PAUSE_FACTOR = 5.0


def _ordered(ds: Dataset, runs: pd.DataFrame) -> pd.DataFrame:
    """Used runs in start order (runs without a start time are left out); computed once per
    check pass (four checks read it) and shared: not to be changed."""
    return per_frame(ds, runs, "start-order", lambda: _start_order(runs))


def _start_order(runs: pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    used = runs[runs["included"] & runs["started_at"].notna()].copy()
    used["_t"] = pd.to_datetime(used["started_at"], utc=True, errors="coerce")
    used = used[used["_t"].notna()]
    return used.sort_values(["_t", "run_id"], kind="stable")


def _label(metric: str) -> str:
    entry = metric_catalog.lookup(metric)
    return entry.label.lower() if entry is not None else metric


def _present(runs: pd.DataFrame, metrics: tuple[str, ...] | list[str]) -> list[str]:
    return [m for m in metrics if m in runs.columns and runs[m].notna().any()]


def _ordered_values(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions
                    ) -> tuple[pd.DataFrame, list[str], np.ndarray, np.ndarray] | None:
    """The runs in start order, grouped in the arms of the comparisons' factor
    (:func:`~sparkreport.analysis.arms.factor_arms`), their primary metrics present, those values
    as one float matrix and the run ids; None when there is nothing to check."""
    used = factor_arms(_ordered(ds, runs), opts.factor)
    metrics = _present(used, primary_metrics(opts))
    if not metrics or used.empty:
        return None
    return used, metrics, float_matrix(used, metrics), used["run_id"].to_numpy(dtype=object)


@register_check("drift", per_campaign=True)
def _drift(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings: list[Finding] = []
    ordered = _ordered_values(ds, runs, opts)
    if ordered is None:
        return findings
    used, metrics, values, run_ids = ordered
    for arm, positions in arm_rows(used, ARM_KEYS):
        for j, metric in enumerate(metrics):
            column = values[positions, j]
            keep = ~np.isnan(column)
            y = column[keep]
            if y.size < MIN_DRIFT_RUNS or float(y.max()) == float(y.min()):
                continue
            from scipy import stats as sps  # here: over a second to import, and most arms have nothing to test

            order = np.arange(y.size, dtype=float)
            tau, p = sps.kendalltau(order, y)
            if not (math.isfinite(p) and p < opts.alpha):
                continue
            slope = float(sps.theilslopes(y, order).slope)
            pct = 100.0 * slope / abs(float(y.mean()))
            findings.append(Finding(
                "warning", "drift",
                f"{arm_name(arm)}: {_label(metric)} drifts {pct:+.2f}% per run over {y.size} runs in start order "
                f"(Mann–Kendall τ = {tau:.2f}, p = {p:.3g}; first {num(float(y[0]), metric)}, "
                f"last {num(float(y[-1]), metric)}) — runs are "
                "not exchangeable; interleave arms (randomized blocks) and look for what changed",
                sorted(run_ids[positions[keep]].tolist()),
                {"slope_pct_per_run": round(pct, 4), "tau": round(float(tau), 4), "p": float(p), "n": int(y.size)},
            ))
    return findings


def _block_starts(used: pd.DataFrame) -> dict[str, str]:
    """run_id → why it starts a block: the campaign's first run, a new plan block, or a pause."""
    starts: dict[str, str] = {}
    for _, positions in arm_rows(used, ["campaign"]):
        group = used.iloc[positions]
        times = group["_t"].to_numpy()
        gaps = np.diff(times).astype("timedelta64[ms]").astype(float) / 1000.0
        typical = float(np.median(gaps)) if gaps.size else 0.0
        blocks = group["label.block"].astype(str).to_numpy() if "label.block" in group.columns else None
        ids = group["run_id"].to_numpy(dtype=object)
        starts[str(ids[0])] = "the campaign's first run"
        for i in range(1, len(ids)):
            if blocks is not None and blocks[i] != blocks[i - 1] and blocks[i] not in ("<NA>", "None", "nan"):
                starts[str(ids[i])] = f"the first run of plan block {blocks[i]}"
            elif typical > 0 and gaps[i - 1] > PAUSE_FACTOR * typical:
                starts[str(ids[i])] = f"the first run after a {gaps[i - 1] / 60:.0f}-minute pause"
    return starts


@register_check("warmup-outlier", per_campaign=True)
def _warmup(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings: list[Finding] = []
    ordered = _ordered_values(ds, runs, opts)
    if ordered is None:
        return findings
    used, metrics, values, run_ids = ordered
    starts = _block_starts(_ordered(ds, runs))  # a block starts in the campaign's order, whatever the arms
    # A run is compared with the runs of its arm under the same recorded condition (cache, …):
    # a cold-cache run that starts every block is not a warm-up outlier among warm ones.
    conditions = [c for c in _design_labels(used) if c != "label.block"]
    # A label missing on some runs (another campaign's label) is the condition "<NA>", not a crash.
    condition = (used[conditions].astype(object).fillna("<NA>").astype(str).agg("|".join, axis=1)
                 .to_numpy(dtype=object) if conditions else np.full(len(used), "", dtype=object))
    for arm, positions in arm_rows(used, ARM_KEYS):
        for j, metric in enumerate(metrics):
            column = values[positions, j]
            for k, position in enumerate(positions):
                why = starts.get(str(run_ids[position]))
                if why is None or math.isnan(column[k]):
                    continue
                same = condition[positions] == condition[position]
                same[k] = False
                others = reported(column[same])
                if others.size < 4:
                    continue
                median = float(np.median(others))
                mad = 1.4826 * float(np.median(np.abs(others - median)))
                if mad == 0 or median == 0:
                    continue
                z = (float(column[k]) - median) / mad
                dev = 100.0 * (float(column[k]) - median) / abs(median)
                # Far from its peers (robust z) and by more than the noise threshold (in %).
                if abs(z) > WARMUP_ROBUST_Z and abs(dev) > 100.0 * opts.cv_threshold:
                    findings.append(Finding(
                        "warning", "warmup-outlier",
                        f"{arm_name(arm)}: {run_ids[position]} ({why}) has {_label(metric)} "
                        f"{num(float(column[k]), metric)}, {dev:+.1f}% from the arm's median "
                        f"{num(median, metric)} (robust z {z:+.1f}) — a warm-up "
                        "effect? add a warm-up run per block or leave it out",
                        [str(run_ids[position])], {"robust_z": round(z, 3), "deviation_pct": round(dev, 3)},
                    ))
    return findings


def _design_labels(used: pd.DataFrame) -> list[str]:
    return [c for c in used.columns if c.startswith("label.") and c not in _IDENTITY_LABELS]


#: Recorded run fields that, like a label, split an arm into conditions (`compare --by` takes them).
_POOLED_FIELDS = ("engine_version",)


@register_check("pooled-label", per_campaign=True)
def _pooled(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings: list[Finding] = []
    used = runs[runs["included"]]
    metrics = _present(used, primary_metrics(opts))
    if not metrics or used.empty:
        return findings
    # An arm is one campaign × model × level of the factor the comparisons contrast: with a label
    # as the factor, its arms pool the environments (and the factor is what they differ in).
    factor = opts.factor
    if factor not in used.columns:
        return findings
    used = used[used[factor].notna()]
    # each run in its level's arm (the same rows, in order: every one carries a level)
    arms = factor_arms(used, factor)[ARM_KEYS]
    values = float_matrix(used, metrics)
    run_ids = used["run_id"].to_numpy(dtype=object)
    pooled = [*_design_labels(used), *(c for c in _POOLED_FIELDS if c in used.columns),
              *(["environment"] if factor != "environment" else [])]
    for column in [c for c in pooled if c != factor]:
        labels = used[column].astype(object).to_numpy()
        for arm, positions in arm_rows(arms, ARM_KEYS):
            arm_labels = labels[positions]
            levels = sorted({str(v) for v in arm_labels if v is not None and str(v) not in ("<NA>", "nan")})
            if len(levels) < 2:
                continue
            for j, metric in enumerate(metrics):
                groups = [reported(values[positions[arm_labels.astype(str) == level], j]) for level in levels]
                if any(g.size < 2 for g in groups) or all(float(g.std()) == 0 for g in groups):
                    continue
                from scipy import stats as sps  # only where there is a test to run (over a second to import)

                p = float(sps.f_oneway(*groups).pvalue)
                if not (math.isfinite(p) and p < opts.alpha):
                    continue
                name = column.removeprefix("label.")
                means = ", ".join(f"{level}: {g.mean():,.1f}" for level, g in zip(levels, groups, strict=True))
                findings.append(Finding(
                    "warning", "pooled-label",
                    f"{arm_name(arm)}: pools runs that differ in {'label ' if column.startswith('label.') else ''}"
                    f"{name!r} and it matters for "
                    f"{_label(metric)} ({means}; one-way ANOVA p = {p:.3g}) — compare within strata "
                    f"(`sparkreport compare --by {name}`, or analysis.stratify_by: {name})",
                    sorted(run_ids[positions].tolist()), {"p": p, "levels": len(levels)},
                ))
    return findings


_HARDWARE = (("gpu_uuid", "GPUs"), ("gpu_name", "GPU models"), ("driver", "drivers"), ("host_kernel", "host kernels"))


@register_check("hardware-change", per_campaign=True)
def _hardware(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings: list[Finding] = []
    used = _ordered(ds, runs)
    for (campaign,), positions in arm_rows(used, ["campaign"]):
        group = used.iloc[positions]
        for column, what in _HARDWARE:
            if column not in group.columns:
                continue
            present = group[group[column].notna()]
            distinct = list(dict.fromkeys(str(v) for v in present[column]))
            if len(distinct) < 2:
                continue
            parts = []
            for value in distinct:
                rows = present[present[column].astype(str) == value]
                parts.append(f"{value} ({len(rows)} runs, {rows['_t'].min():%Y-%m-%d %H:%M}–"
                             f"{rows['_t'].max():%H:%M} UTC)")
            findings.append(Finding(
                "warning", "hardware-change",
                f"{campaign}: runs on {len(distinct)} {what} — {'; '.join(parts)} — arms are comparable only "
                "if each ran on each, interleaved; compare within one (`--by` a label) or re-run",
                sorted(group["run_id"].tolist()), {"distinct": len(distinct)},
            ))
    return findings


@register_check("sensor-constant", per_campaign=True)
def _sensors(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    """A sensor reading with SD 0 over a whole campaign (≥ 3 runs), else over an arm (≥ 5 runs).

    Only runs whose readings came from elsewhere (a published study, an ingested log): a run
    ``sparkreport run`` made read its sensors itself (NVML, its own sampler), so a reading that
    never varies there is real — an H100's SM clock pinned at its 1,980 MHz cap over short runs,
    a temperature that did not move — not a placeholder."""
    findings: list[Finding] = []
    used = runs[runs["included"] & ~runs["source_format"].fillna("").str.startswith(OWN_FORMAT_PREFIX)]
    metrics = _present(used, SENSOR_METRICS)
    if not metrics:
        return findings
    values = float_matrix(used, metrics)
    run_ids = used["run_id"].to_numpy(dtype=object)
    keys = used[ARM_KEYS]  # an arm's rows are taken from these columns only, not the runs' 80

    def flag(where: str, metric: str, sample: np.ndarray, positions: np.ndarray, column: int) -> None:
        # the runs that report the reading: the finding is about them, not about the place's others
        of = f"the {sample.size} runs that report it" if sample.size < len(positions) else f"all {sample.size} runs"
        positions = positions[~np.isnan(values[positions, column])]
        unit = metric_catalog.unit_of(metric)
        findings.append(Finding(
            "warning", "sensor-constant",
            f"{where}: {metric} is {sample[0]:g}{' ' + unit if unit else ''} in {of} (SD 0) — "
            "probably not measured (a default, a placeholder, or the threshold a gate waited for), not a reading",
            sorted(run_ids[positions].tolist()), {"value": float(sample[0]), "n": int(sample.size)},
        ))

    def constant(sample: np.ndarray, minimum: int) -> bool:
        return sample.size >= minimum and float(sample.max()) == float(sample.min())

    for (campaign,), positions in arm_rows(used, ["campaign"]):
        for j, metric in enumerate(metrics):
            sample = reported(values[positions, j])
            if constant(sample, 3):
                flag(str(campaign), metric, sample, positions, j)
                continue
            for arm, arm_positions in arm_rows(keys.iloc[positions], ARM_KEYS):
                arm_sample = reported(values[positions[arm_positions], j])
                if constant(arm_sample, 5):
                    flag(arm_name(arm), metric, arm_sample, positions[arm_positions], j)
    return findings


@register_check("interference", per_campaign=True)
def _interference(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings: list[Finding] = []
    flags = interference_flags(runs)
    if not flags:
        return findings
    state = ("excluded from the statistics (analysis.exclude_interference: true)" if opts.exclude_interference
             else "kept (set analysis.exclude_interference: true to leave them out)")
    flagged = runs[runs["run_id"].astype(str).isin(flags)]
    for arm, positions in arm_rows(flagged, ARM_KEYS):
        ids = sorted(str(r) for r in flagged["run_id"].to_numpy(dtype=object)[positions])
        detail = "; ".join(f"{run_id}: {flags[run_id]}" for run_id in ids)
        findings.append(Finding(
            "warning", "interference",
            f"{arm_name(arm)}: {len(ids)} run(s) measured under interference — {detail}; {state}", ids,
        ))
    return findings


#: The fewest values a run must report for a repeat of every one of them to mark it a copy.
COPY_MIN_VALUES = 3


@register_check("identical-runs", per_campaign=True)
def _identical(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    """Runs of one arm that report the same value, to the last digit, in every metric they report
    (at least :data:`COPY_MIN_VALUES`, the same ones): copies of one run — a result ingested again
    under another name, byte for byte but for its name or a line, which the store's sha256 cannot
    tell from a new run. Two measured runs do not agree on every throughput and latency to the
    last digit; the statistics would count the copies as independent runs and narrow the
    interval. Flagged, never dropped: the reader decides."""
    findings: list[Finding] = []
    used = runs[runs["included"].astype(bool)]
    metrics = [m for m in ds.metric_columns if m in used.columns]
    if len(used) < 2 or not metrics:
        return findings
    values = float_matrix(used, metrics)
    run_ids = used["run_id"].to_numpy(dtype=object)
    for arm, positions in arm_rows(used, ARM_KEYS):
        if len(positions) < 2:
            continue
        same: dict[tuple[float | None, ...], list[int]] = {}
        for position in positions:
            row = values[position]
            if np.count_nonzero(~np.isnan(row)) >= COPY_MIN_VALUES:
                same.setdefault(tuple(None if math.isnan(v) else float(v) for v in row), []).append(int(position))
        for key, members in same.items():
            if len(members) < 2:
                continue
            reported_here = sum(v is not None for v in key)
            findings.append(Finding(
                "warning", "identical-runs",
                f"{arm_name(arm)}: {len(members)} runs report the same value in every one of their {reported_here} "
                f"metrics, to the last digit — copies of one run (a result ingested again under another name?); "
                f"the statistics count them as {len(members)} independent runs, which narrows the interval: "
                "remove the copies from the store, or keep them knowing this",
                sorted(run_ids[members].tolist()), {"runs": float(len(members)), "metrics": float(reported_here)},
            ))
    return findings
