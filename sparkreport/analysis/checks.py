"""Data-quality checks: what in the data could mislead the statistics.

Each check is a small function registered in ``CHECKS``; each finding names its severity,
a stable code, a message with the numbers it used, and the runs concerned. Nothing is
dropped or included silently: when a finding affects what the statistics use, its message
says which runs they use.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from sparkreport import metrics as metric_catalog
from sparkreport.analysis.arms import (
    ARM_KEYS,
    arm_name,
    arm_rows,
    factor_arms,
    float_matrix,
    included_frame,
    included_runs,
    repeat_key,
    reported,
)
from sparkreport.analysis.compare import PUBLISHED_SINGLE_RUN
from sparkreport.config import AnalysisOptions
from sparkreport.dataset import Dataset

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.cache import AnalysisCache

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass
class Finding:
    severity: Severity
    code: str
    message: str
    runs: list[str] = field(default_factory=list)
    #: The numbers the finding used (physical checks), for scripts and the site.
    numbers: dict[str, float] = field(default_factory=dict)
    #: What the finding assumes beyond what was measured, one sentence per assumption (e.g. "…'s
    #: weights: 72.7B parameters in BF16 (from the catalog; the record states no precision)").
    #: Findings sharing an assumption rest on it together: group them
    #: (``physics.assumption_groups``), never count them as independent.
    assumes: list[str] = field(default_factory=list)
    #: The campaign a finding that names no runs is about (a per-campaign check sets it), so that
    #: ``check`` can keep it with its campaign; the runs say it for the others. Not exported.
    campaign: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"severity": self.severity, "code": self.code, "message": self.message, "runs": self.runs,
                "numbers": self.numbers, "assumes": self.assumes}

    @functools.cached_property
    def digest(self) -> str:
        """The sha256 of the finding as exported (:meth:`to_dict`, its keys sorted): what a page's
        key counts it by (:class:`~sparkreport.render.pagecache.PageKeys`). Made once and kept
        with the finding — in the analysis cache too, which pickles it with the finding after the
        pages are planned: a build after one new run serialises its campaign's findings only
        (all 1 600 of them were 0.015 s of every build's planning at 10 000 runs). A finding is
        never changed once made."""
        import hashlib
        import json

        text = json.dumps(self.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


CheckFn = Callable[[Dataset, "pd.DataFrame", AnalysisOptions], list[Finding]]
CHECKS: dict[str, CheckFn] = {}
#: The checks whose findings about a campaign read that campaign's runs only (each arm is
#: campaign × model × environment and nothing is merged across campaigns): ``check`` with a
#: cache runs them per campaign view and keeps their findings by the campaign's digest.
CAMPAIGN_CHECKS: set[str] = set()


def register_check(name: str, *, per_campaign: bool = False) -> Callable[[CheckFn], CheckFn]:
    """Decorator: add a check (extensions register the same way). ``per_campaign``: its findings
    about a campaign depend on that campaign's runs only (then they are cached per campaign);
    a check that compares campaigns, or reads ``ds.incomplete``, leaves it False."""

    def add(fn: CheckFn) -> CheckFn:
        CHECKS[name] = fn
        if per_campaign:
            CAMPAIGN_CHECKS.add(name)
        else:
            CAMPAIGN_CHECKS.discard(name)
        return fn

    return add


def planned_per_campaign(runs: pd.DataFrame, opts: AnalysisOptions) -> dict[str, int]:
    """Runs planned per arm: the configured number, or the highest iteration seen per campaign."""
    highest = runs.groupby("campaign")["iteration"].max()
    if opts.planned_iterations is not None:
        return {str(campaign): opts.planned_iterations for campaign in highest.index}
    return {str(campaign): int(iteration) for campaign, iteration in highest.dropna().items()}


@register_check("duplicates", per_campaign=True)
def _duplicates(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings: list[Finding] = []
    with_iter = runs[runs["iteration"].notna()]
    # A repeat shares the arm and the per-arm key; rows without an arm belong to no group.
    factors = _design_factors(ds, opts) if ds.whole is not None else None
    repeats = (with_iter.duplicated(repeat_key(with_iter, factors), keep=False)
               & with_iter[ARM_KEYS].notna().all(axis=1))
    if not repeats.any():
        return findings
    described = with_iter[["iteration", "included", "run_id"]]
    for arm, positions in arm_rows(with_iter, ARM_KEYS):
        if not repeats.iloc[positions].any():
            continue
        group = described.iloc[positions]
        repeated = group[repeats.iloc[positions]]
        used = group["included"].sum()
        iterations = sorted({int(i) for i in repeated["iteration"]})
        detail = ", ".join(
            f"iteration {i} ×{int((group['iteration'] == i).sum())}" for i in iterations
        )
        if opts.duplicates == "all":
            use = f"the statistics use all {used} runs of this arm (analysis.duplicates: all)"
        else:
            use = (f"the statistics use {used} runs, keeping the {opts.duplicates} run of each "
                   f"iteration (analysis.duplicates: {opts.duplicates})")
        findings.append(Finding(
            "error", "duplicate-iteration",
            f"{arm_name(arm)}: {len(group)} runs where iterations 1–{int(group['iteration'].max())} were "
            f"planned; repeated: {detail}; {use}",
            sorted(repeated["run_id"].tolist()),
        ))
    return findings


@register_check("failed", per_campaign=True)
def _failed(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    import pandas as pd

    failing = ~runs["ok"].fillna(False).astype(bool)
    if not failing.any():
        return []
    failed = runs[failing]
    findings = []
    for arm, group in failed.groupby(ARM_KEYS):
        codes = sorted({str(c) for c in group["exit_code"].astype(object) if not pd.isna(c)})
        state = "included" if opts.include_failed else "excluded from the statistics"
        findings.append(Finding(
            "warning", "failed-run",
            f"{arm_name(arm)}: {len(group)} failed run(s) (exit code {', '.join(codes) or 'unknown'}); {state}",
            sorted(group["run_id"].tolist()),
        ))
    return findings


#: The runs a failed-requests finding names one by one before it counts the rest.
FAILED_RUNS_NAMED = 3


@register_check("failed-requests", per_campaign=True)
def _failed_requests(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    """Runs the statistics use that report failed requests (``failed_requests`` > 0: vLLM's
    ``failed``), one finding per arm naming each and how many of its requests failed (of the
    completed plus failed). Such a run exited 0 and is a run like the others to every other
    check, but it did less work: vLLM counts its throughput over the completed requests only, so
    its throughput is not comparable with a run that completed them all, and the arm's mean
    carries it. Flagged, never dropped: the reader decides (an average "Failed requests" of 0.25
    over four runs hid one run that completed 399 of 400)."""
    if "failed_requests" not in runs.columns:
        return []
    used = runs[runs["included"].astype(bool)]
    columns = ["failed_requests", "num_requests"]  # failed, completed (a run's total is both)
    values = float_matrix(used.reindex(columns=columns), columns)
    failing = np.nan_to_num(values[:, 0]) > 0
    if not failing.any():
        return []
    run_ids = used["run_id"].to_numpy(dtype=object)
    findings = []
    for arm, positions in arm_rows(used, ARM_KEYS):
        bad = positions[failing[positions]]
        if not len(bad):
            continue

        def said(position: int) -> str:
            failed, completed = values[position]
            of = "" if math.isnan(completed) else f" of {failed + completed:,.0f}"
            return f"{run_ids[position]}: {failed:,.0f}{of}"

        named = [said(int(position)) for position in bad[:FAILED_RUNS_NAMED]]
        more = f" and {len(bad) - FAILED_RUNS_NAMED} more" if len(bad) > FAILED_RUNS_NAMED else ""
        total = float(values[bad, 0].sum())
        findings.append(Finding(
            "warning", "failed-requests",
            f"{arm_name(arm)}: {len(bad)} of {len(positions)} runs had failed requests ({'; '.join(named)}{more}) "
            f"— such a run did less work than one that completed them all, so its throughput is not "
            f"comparable with theirs, and this arm's throughput figures include it: rerun it, or leave it "
            f"out, to compare like with like",
            sorted(run_ids[bad].tolist()), {"runs": float(len(bad)), "failed_requests": total},
        ))
    return findings


_MEMORY_PAIR = ("pre_kv_memory_gib", "peak_memory_gib")


#: The metrics a finding names before it counts the rest ("a, b, c, d and 7 more").
METRICS_NAMED = 4


def _metric_names(metrics: list[str]) -> str:
    """'end_temp_c', 'a and b', 'a, b, c, d and 7 more metrics'."""
    if len(metrics) <= METRICS_NAMED + 1:
        return metrics[0] if len(metrics) == 1 else ", ".join(metrics[:-1]) + " and " + metrics[-1]
    return ", ".join(metrics[:METRICS_NAMED]) + f" and {len(metrics) - METRICS_NAMED} more metrics"


@register_check("missing-metrics", per_campaign=True)
def _missing(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings = []
    used = factor_arms(runs[runs["included"]], opts.factor)
    metrics = ds.metric_columns
    missing = used[metrics].isna().to_numpy()
    expected_missing = used[list(metric_catalog.EXPECTED_METRICS)].isna().to_numpy()
    run_ids = used["run_id"].to_numpy(dtype=object)
    for arm, positions in arm_rows(used, ARM_KEYS):
        n = len(positions)
        missing_per_metric = missing[positions].sum(axis=0)
        # the metrics missing in the same runs are one finding: a run that lacks eleven metrics
        # is one row of Data quality, not eleven
        lacking: dict[tuple[str, ...], list[str]] = {}
        for j, metric in enumerate(metrics):
            if 0 < int(missing_per_metric[j]) < n:
                lacking.setdefault(tuple(sorted(run_ids[positions[missing[positions, j]]].tolist())), []).append(metric)
        for lacked_by, named in lacking.items():
            n_missing, it = len(lacked_by), "it" if len(named) == 1 else "them"
            use = (f"the one run that reports {it}" if n - n_missing == 1 else
                   f"the {n - n_missing} runs that report {it}")
            findings.append(Finding(
                "warning", "missing-metric",
                f"{arm_name(arm)}: {_metric_names(named)} missing in {n_missing} of {n} runs; "
                f"{'its' if len(named) == 1 else 'their'} statistics use {use}",
                list(lacked_by),
            ))
        absent = [m for k, m in enumerate(metric_catalog.EXPECTED_METRICS) if expected_missing[positions, k].all()]
        # A source reports memory before the KV cache or the peak with it: one of the two is enough.
        if not set(_MEMORY_PAIR) <= set(absent):
            absent = [m for m in absent if m not in _MEMORY_PAIR]
        if absent:
            findings.append(Finding(
                "info", "metric-not-reported",
                f"{arm_name(arm)}: the source does not report {', '.join(absent)}", [], campaign=str(arm[0]),
            ))
    return findings


@register_check("arm-size", per_campaign=True)
def _arm_size(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    findings = []
    planned = planned_per_campaign(runs, opts)
    used = factor_arms(runs[runs["included"]], opts.factor)
    run_ids = used["run_id"].to_numpy(dtype=object)
    cells = _cells(used, _design_factors(ds, opts))
    iterations = used["iteration"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    for arm, positions in arm_rows(used, ARM_KEYS):
        target = planned.get(str(arm[0]))
        if target is not None and cells is not None:
            target *= _cells_planned(cells[positions], iterations[positions])
        n = len(positions)
        if target is not None and n < target:
            findings.append(Finding(
                "warning", "arm-too-small",
                f"{arm_name(arm)}: {n} usable runs, {target} planned", sorted(run_ids[positions].tolist()),
            ))
        if n == 1:
            findings.append(Finding(
                "warning", "single-run-arm",
                f"{arm_name(arm)}: a single run — no spread, no confidence interval, no test",
                run_ids[positions].tolist(),
            ))
    for _, row in ds.summaries.drop_duplicates(["run_id"]).iterrows():
        if int(row["n"]) == 1:
            findings.append(Finding(
                "warning", "single-run-arm",
                f"{row['campaign']}/{row['model']}/{row['environment']}: {PUBLISHED_SINGLE_RUN} — "
                "no spread, no confidence interval, no test", [row["run_id"]],
            ))
            continue
        metrics_without_sd = ds.summaries[(ds.summaries["run_id"] == row["run_id"]) & ds.summaries["sd"].isna()]
        if not metrics_without_sd.empty:
            names = ", ".join(metric_catalog.label_of(str(m)) for m in metrics_without_sd["metric"])
            findings.append(Finding(
                "info", "published-without-sd",
                f"{row['campaign']}/{row['model']}/{row['environment']}: published figures without a "
                f"standard deviation ({names}) — no confidence interval or test is possible",
                [row["run_id"]],
            ))
    return findings


#: Labels the executor writes about the plan, not about a condition of the runs.
PLAN_LABELS = ("label.block", "label.plan_index", "label.plan_seed", "label.plan_order")


def _cells(used: pd.DataFrame, factors: list[str]) -> np.ndarray | None:
    """Each run's cell within its arm: the environment it ran in where an arm of a label factor
    pools several, and the conditions its design labels set (cache cold or warm); None when no
    arm can pool cells."""
    columns = [c for c in ("_environment", *factors) if c in used.columns and c not in PLAN_LABELS]
    if not columns:
        return None
    # a label missing on some runs (another model's) is the cell "<NA>", not a crash
    return used[columns].astype(object).fillna("<NA>").astype(str).agg("|".join, axis=1).to_numpy(dtype=object)


def _cells_planned(cells: np.ndarray, iterations: np.ndarray) -> int:
    """How many times an arm's planned iterations it holds: once per cell when each cell counts
    its own iterations (the executor's plan: iterations 1–10 cold and 1–10 warm), once when the
    arm numbers its runs through (1–10 cold, 11–20 warm: the highest iteration counts them all)."""
    seen: dict[float, str] = {}
    for cell, iteration in zip(cells, iterations, strict=True):
        if math.isnan(iteration):  # no iteration: nothing to tell by
            continue
        if seen.setdefault(iteration, cell) != cell:
            return len(set(cells))
    return 1


@register_check("noise", per_campaign=True)
def _noise(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    """One finding per arm listing the outcome metrics whose CV is above the threshold."""
    findings = []
    used = factor_arms(runs[runs["included"]], opts.factor)
    from sparkreport.analysis.design import family_representatives

    representatives = family_representatives(opts.tested_metrics)[0]  # one member per exact family
    tested = [m for m in ds.metric_columns if m in representatives]
    values = float_matrix(used, tested)
    run_ids = used["run_id"].to_numpy(dtype=object)
    measured = used[[c for c in NOISE_CAUSE_COLUMNS if c in used.columns]]  # the columns _noise_cause reads
    for arm, positions in arm_rows(used, ARM_KEYS):
        noisy: dict[str, float] = {}
        for j, metric in enumerate(tested):
            sample = reported(values[positions, j])
            if len(sample) < 2 or sample.mean() == 0:
                continue
            cv = float(sample.std(ddof=1) / abs(sample.mean()))
            if math.isfinite(cv) and cv > opts.cv_threshold:
                noisy[metric] = cv
        if noisy:
            listed = ", ".join(f"{m} {cv:.1%}" for m, cv in sorted(noisy.items(), key=lambda kv: -kv[1]))
            cause = _noise_cause(measured.iloc[positions])
            findings.append(Finding(
                "warning", "high-cv",
                f"{arm_name(arm)}: CV above {opts.cv_threshold:.0%} over {len(positions)} runs — {listed}"
                + (f"; likely cause: {cause}" if cause else ""),
                sorted(run_ids[positions].tolist()), {m: round(cv, 4) for m, cv in noisy.items()},
            ))
    return findings


#: The runs' measurement metrics :func:`_noise_cause` reads.
NOISE_CAUSE_COLUMNS = ("gpu_util_mean_pct", "sm_clock_mean_mhz", "measured_window_s")


def _noise_cause(arm: pd.DataFrame) -> str | None:
    """What the runs' measurement metrics say about an arm's noise (design.likely_cause)."""
    from sparkreport.analysis.design import likely_cause

    def column(name: str) -> list[float]:
        if name not in arm.columns:
            return []
        return [float(v) for v in arm[name].dropna()]

    util, clocks, window = (column(name) for name in NOISE_CAUSE_COLUMNS)
    if not (util or clocks or window):
        return None  # the runs carry no measurement metrics (ingested results): nothing to say
    util_sd = float(np.std(util, ddof=1)) if len(util) > 1 else 0.0
    clock_cv = (float(np.std(clocks, ddof=1) / np.mean(clocks)) if len(clocks) > 1 and np.mean(clocks) > 0
                else None)
    cause = likely_cause(util, util_sd, clock_cv, float(np.mean(window)) if window else None)
    return cause or ("none visible in GPU utilisation, SM clocks or the measured window — look at the host "
                     "and at the order of the runs")


@register_check("incomplete")
def _incomplete(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    """Run folders without a run.json: nothing downstream counts them, so they are named here."""
    if not ds.incomplete:
        return []
    listed = ", ".join(ds.incomplete[:10]) + (f" and {len(ds.incomplete) - 10} more" if len(ds.incomplete) > 10 else "")
    return [Finding(
        "error", "incomplete-run",
        f"{len(ds.incomplete)} run folder(s) without run.json, not counted in any statistic: {listed} — "
        "run `sparkreport ingest` on their source again to re-create them",
        [p.rsplit("/", 1)[-1] for p in ds.incomplete], {"folders": float(len(ds.incomplete))},
    )]


@register_check("guard", per_campaign=True)
def _guard(ds: Dataset, runs: pd.DataFrame, opts: AnalysisOptions) -> list[Finding]:
    """One finding per run a guard of the executor stopped (memory floor, stall)."""
    stopped_mask = runs["guard"].notna()
    if not stopped_mask.any():  # the usual case: no copy of every column for an empty table
        return []
    stopped = runs[stopped_mask]
    state = "included" if opts.include_failed else "excluded from the statistics"
    return [Finding(
        "warning", f"guard-{row.guard}",
        f"{row.campaign}/{row.model}/{row.environment}: run {row.run_id} was stopped by the executor's guard "
        f"({row.status_reason}); {state}",
        [str(row.run_id)],
    ) for row in stopped.itertuples(index=False)]


def check(ds: Dataset, opts: AnalysisOptions | None = None, cache: AnalysisCache | None = None) -> list[Finding]:
    """Run every registered check; findings sorted by severity, then code.

    With ``cache``, the per-campaign checks (:data:`CAMPAIGN_CHECKS`) run on each campaign's
    view and their findings are kept by the campaign's digest (and its inclusion outcome and
    the global metric columns), so a new run re-checks its campaign only; the other checks
    run over the whole dataset every time.
    """
    opts = opts or AnalysisOptions()
    if cache is None:
        return _sorted(_run_checks(ds, opts, list(CHECKS)))
    from sparkreport.analysis.arms import campaign_digests

    scoped = [name for name in CHECKS if name in CAMPAIGN_CHECKS]
    digests = campaign_digests(ds, opts)
    factors = _design_factors(ds, opts)

    def key(campaign: str) -> str:
        assert cache is not None
        return cache.key(("kind", "check-1"), ("runs", digests[campaign]), ("opts", opts), ("checks", scoped),
                         ("metrics", ds.metric_columns), ("factors", factors))

    def whole() -> tuple[list[Finding], dict[str, list[Finding]] | None]:
        # Each campaign's share is what its view finds when every finding can be placed in one.
        found = _run_checks(ds, opts, scoped)
        return found, _by_campaign(ds, found)

    findings = _run_checks(ds, opts, [name for name in CHECKS if name not in CAMPAIGN_CHECKS])
    found, parts = cache.campaign_parts("check", ds.campaigns(), key, whole,
                                        lambda campaign: _run_checks(ds.campaign_view(campaign), opts, scoped),
                                        list[Finding])
    return _sorted(findings + (found if found is not None else [f for part in parts for f in part]))


def _by_campaign(ds: Dataset, findings: list[Finding]) -> dict[str, list[Finding]] | None:
    """The findings of per-campaign checks run on the whole dataset, by the campaign of the runs
    each names (one that names none, by its ``campaign``), in order; None when one cannot be
    placed in exactly one campaign."""
    campaign_of = {record.run_id: record.campaign for record in ds.records}
    out: dict[str, list[Finding]] = {}
    for finding in findings:
        campaigns = {campaign_of.get(run_id) for run_id in finding.runs} if finding.runs else {finding.campaign}
        if len(campaigns) != 1 or None in campaigns:
            return None
        out.setdefault(str(campaigns.pop()), []).append(finding)
    return out


def _run_checks(ds: Dataset, opts: AnalysisOptions, names: list[str]) -> list[Finding]:
    runs = included_runs(ds, opts)
    findings: list[Finding] = []
    for name in names:
        findings.extend(CHECKS[name](ds, runs, opts))
    return findings


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.code, f.message))


def _design_factors(ds: Dataset, opts: AnalysisOptions) -> list[str]:
    """The design labels of the whole dataset's runs that carry an iteration (what decides
    which runs repeat an iteration, in a campaign view too)."""
    from sparkreport.analysis.arms import design_labels

    whole = ds.whole or ds
    key = ("design-factors", repr(opts))
    if key not in whole.memo:
        runs = included_frame(whole, opts)  # (read only: the kept table, not a copy of 10 000 rows)
        whole.memo[key] = design_labels(runs[runs["iteration"].notna()])
    return list(whole.memo[key])


#: Human names of the check codes, for the grouped findings ("what the checks found") and the
#: Data quality page's sections.
CHECK_TITLES = {
    "capacity-weights": "weights larger than the memory pool",
    "capacity-peak": "measured memory below the weights",
    "roofline": "throughput above the memory-bandwidth bound",
    "size-insensitive": "throughput that does not depend on model size",
    "derived-identity": "KV cache sized from the memory left free (one measurement, not two)",
    "derived-identity-untested": "whether the KV cache is derived cannot be tested (two points)",
    "covariate-order": "arms run in separate time blocks",
    "covariate-temperature": "arms started at different GPU temperatures",
    "high-cv": "high run-to-run variation",
    "single-run-arm": "a single run per arm",
    "model-unknown": "model not identified",
    "hardware-unknown": "hardware not identified",
    "published-without-sd": "figures published without a spread",
    "duplicate-iteration": "more runs than planned",
    "failed-run": "failed runs",
    "failed-requests": "runs in which requests failed",
    "incomplete-run": "incomplete runs",
    "missing-metric": "metrics some runs lack",
    "metric-not-reported": "metrics not reported",
    "arm-too-small": "arms with too few runs",
    "roofline-skipped": "roofline not checked",
    "drift": "a trend over run order within an arm",
    "warmup-outlier": "a first run far from the rest",
    "pooled-label": "arms that pool runs of different conditions",
    "hardware-change": "hardware that changed within a campaign",
    "sensor-constant": "sensor readings that never change",
    "interference": "runs measured under interference",
    "identical-runs": "runs that repeat another run's every value",
}


#: The warnings that change what an arm's figures mean, in the order a model's Results page names
#: them beside its numbers ("Read with care"; its banner names the errors): a throughput that
#: includes a run that did less work, runs that vary much, drift or start far from the rest,
#: arms run apart in time or temperature, under interference, as copies of one run, pooling
#: conditions or on hardware that changed. The other warnings show in the page's own figures (a
#: smaller n, no interval: too few runs, a single run, a metric some runs lack, failed runs left
#: out) or concern none of them (a sensor that never changes, the KV-cache identity the Memory
#: page states); Data quality has them all. A check of an extension adds its code to have it named.
READ_WITH_CARE = ["failed-requests", "high-cv", "drift", "warmup-outlier", "covariate-order",
                  "covariate-temperature", "interference", "identical-runs", "pooled-label", "hardware-change"]


def check_title(code: str) -> str:
    """'throughput above the memory-bandwidth bound' for 'roofline' (the code itself if unknown)."""
    return CHECK_TITLES.get(code, code.replace("-", " "))


def check_titles(findings: Iterable[Finding]) -> list[str]:
    """The titles of the checks behind ``findings``, each once, in the findings' order."""
    return [check_title(code) for code in dict.fromkeys(f.code for f in findings)]
