"""Two-arm comparisons: candidate vs baseline, per campaign × model × metric.

Difference with a Welch CI; ratio with Fieller's CI (Welch df, from n/mean/sd, so published
summaries get one too; chosen by simulation, see bench/interval_coverage.py); Welch and Mann–Whitney
p-values (and a paired t over plan blocks where the plan has blocks); Holm adjustment per
campaign and primary/secondary family (:mod:`sparkreport.analysis.design`);
Hedges' g; TOST equivalence against a declared margin. Arms known only from published
summaries get the tests summary statistics allow, and ``skipped`` names the others.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sparkreport import metrics as metric_catalog
from sparkreport.analysis import splice
from sparkreport.analysis import statistics as st
from sparkreport.analysis.arms import arm_rows, campaign_digests, float_matrix, in_page_order, included_runs, reported
from sparkreport.config import AnalysisOptions
from sparkreport.dataset import Dataset, frame_records
from sparkreport.errors import DataError

#: Comparison rows before the design step, and the levels of the factor seen.
Pairs = tuple[list[dict[str, object]], list[str]]

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.cache import AnalysisCache

COMPARE_KEYS = [
    "model", "metric", "unit", "baseline", "candidate", "n_baseline", "n_candidate",
    "mean_baseline", "mean_candidate", "diff", "diff_ci_low", "diff_ci_high", "ratio",
    "ratio_ci_low", "ratio_ci_high", "p_welch", "p_mannwhitney", "p_holm", "hedges_g",
    "equivalent", "verdict",
]
#: Extra columns of the DataFrame (also in --json, documented in the README).
EXTRA_KEYS = ["campaign", "model_name", "margin", "p_tost", "min_detectable_effect", "skipped",
              "p_blocked", "design", "family", "stratum", "why_untested"]
VERDICTS = ("higher", "lower", "equivalent", "inconclusive", "untested")
#: What a comparison may go without, by key, and how its ``skipped`` column names each (joined
#: with ", "): the Mann–Whitney U test needs the runs (an arm known from a published summary has
#: none); the tests and intervals from ``welch`` on need a spread (an arm published without an SD).
SKIPPABLE = {
    "mann_whitney": "Mann–Whitney U",
    "ratio_ci_near_zero": "ratio CI (the baseline mean is not clearly away from zero)",
    "welch": "Welch t-test", "diff_ci": "difference CI", "ratio_ci": "ratio CI", "tost": "TOST",
    "hedges_g": "Hedges' g",
}


@dataclass
class _Arm:
    n: int
    mean: float
    sd: float
    values: list[float] | None  # None for a published summary


def _arms(ds: Dataset, opts: AnalysisOptions, factor: str) -> dict[tuple[str, str, str, str], _Arm]:
    """(campaign, model, factor level, metric) → arm data."""
    import pandas as pd

    out: dict[tuple[str, str, str, str], _Arm] = {}
    runs = included_runs(ds, opts)
    runs = runs[runs["included"]]
    if factor not in runs.columns:  # checked even with no runs: published arms alone are grouped below
        raise DataError(f"no column {factor!r} to compare on — use environment, campaign or label.<key>")
    metrics = ds.metric_columns
    values = float_matrix(runs, metrics)
    keys: list[tuple[str, str, str, str]] = []
    samples: list[np.ndarray] = []
    for (campaign, model, level), positions in arm_rows(runs, ["campaign", "model", factor]):
        for j, metric in enumerate(metrics):
            sample = reported(values[positions, j])
            if sample.size:
                keys.append((str(campaign), str(model), str(level), metric))
                samples.append(sample)
    for key, sample, d in zip(keys, samples, st.describe_many(samples), strict=True):
        out[key] = _Arm(d.n, d.mean, d.sd, sample.tolist())
    if factor in ds.summaries.columns:
        for _, row in ds.summaries.iterrows():
            sd = float(row["sd"]) if not pd.isna(row["sd"]) else st.NAN
            key = (str(row["campaign"]), str(row["model"]), str(row[factor]), str(row["metric"]))
            out[key] = _Arm(int(row["n"]), float(row["mean"]), sd, None)
    return out


def compare(ds: Dataset, factor: str = "environment", baseline: str = "native",
            opts: AnalysisOptions | None = None, metrics: list[str] | None = None,
            cache: AnalysisCache | None = None) -> pd.DataFrame:
    """Every candidate level of ``factor`` against ``baseline``, per campaign × model × metric,
    the rows in the pages' order (:func:`~sparkreport.analysis.arms.in_page_order`: the models by
    the names the pages show, each model's candidates as every table lists its levels).

    With ``cache``, each campaign's comparisons (its arms, tests and intervals) are kept by the
    digest of the campaign's runs, so a new run recomputes its campaign's only; the blocked
    tests and Holm's adjustment (per campaign family) are made for that campaign, and its rows
    are spliced into the table the last call kept (:mod:`sparkreport.analysis.splice`: the same
    table; where it cannot splice, they run again over the whole table).
    """
    import pandas as pd

    from sparkreport.analysis import design

    opts = opts or AnalysisOptions()
    # One member per family of exactly related metrics, unless the caller names the metrics.
    wanted = set(metrics or design.family_representatives(opts.tested_metrics)[0])
    names = dict(zip(ds.runs["model"].tolist(), ds.runs["model_name"].tolist(), strict=False))
    names.update(dict(zip(ds.summaries["model"].tolist(), ds.summaries["model_name"].tolist(), strict=False)))
    digests = campaign_digests(ds, opts) if cache is not None else {}
    models: dict[str, set[str]] = {}
    for record in ds.record_keys():
        models.setdefault(record.campaign, set()).add(record.model)

    def key(campaign: str) -> str:
        assert cache is not None
        shown_names = sorted((model, str(names.get(model, model))) for model in models[campaign])
        # What is kept is the pairs before the design step; the columns made after it (verdict,
        # why_untested) are made again from them each time, and need no new key.
        return cache.key(("kind", "compare-3"), ("runs", digests[campaign]), ("factor", factor),
                         ("baseline", baseline), ("opts", opts), ("wanted", sorted(wanted)),
                         ("names", shown_names), ("metrics", ds.metric_columns))

    shares: dict[str, Pairs] = {}

    def whole() -> tuple[Pairs, Mapping[str, Pairs] | None]:
        # Each campaign's share of the whole table is what its view computes (the pairs are per
        # campaign, each p-value is its pair's own).
        rows, levels, by_campaign = _pair_rows(ds, factor, baseline, opts, wanted, names)
        shares.update(by_campaign)
        return (rows, levels), (by_campaign if baseline in levels else None)

    def part(campaign: str) -> Pairs:
        return _pair_rows(ds.campaign_view(campaign), factor, baseline, opts, wanted, names)[:2]

    by = ["campaign", "model", "metric", "candidate"]
    context: tuple[str, dict[str, str]] | None = None  # the whole table's context and each campaign's key
    if cache is None:
        rows, levels = whole()[0]
    else:
        campaigns = ds.campaigns()
        keys = {campaign: key(campaign) for campaign in campaigns}
        context = (cache.key(("kind", "compare-whole-1"), ("factor", factor), ("baseline", baseline),
                             ("opts", opts), ("wanted", sorted(wanted)), ("metrics", ds.metric_columns)), keys)
        asked: dict[str, Pairs] = {}

        def pairs_of(campaign: str) -> Pairs:  # a campaign's pairs, kept or made now (and kept)
            if campaign not in asked:
                asked[campaign] = cache.get_or("compare", keys[campaign], functools.partial(part, campaign))
            return asked[campaign]

        def rows_of(campaign: str) -> pd.DataFrame | None:  # its rows before the sort, as the whole has them
            part_rows = pairs_of(campaign)[0]
            if not part_rows:
                return None
            frame = design.apply_design(pd.DataFrame(part_rows, columns=[*COMPARE_KEYS, *EXTRA_KEYS]),
                                        ds.campaign_view(campaign), opts, factor, baseline)
            return judged(frame, opts)

        made = splice.spliced(cache.whole("compare", context[0]), context[1], rows_of,
                              lambda rows, ranked: in_page_order(rows, by, "candidate", baseline, ranked),
                              extra=lambda campaign: pairs_of(campaign)[1])
        if made is not None:
            levels = sorted({level for seen in made.extra.values() for level in seen})
            if levels and baseline not in levels:
                raise DataError(f"no {factor} called {baseline!r} — the data has: {', '.join(levels)}")
            cache.keep("compare", [keys[campaign] for campaign in campaigns if campaign not in asked])
            cache.put_whole("compare", context[0], made, "spliced")
            return made.frame.copy()
        found, parts = cache.campaign_parts("compare", campaigns, key, whole, part, lambda: ([], []))
        if found is not None:
            rows, levels = found
            parts = [shares.get(campaign, ([], [])) for campaign in campaigns]
        else:
            rows = [row for part_rows, _levels in parts for row in part_rows]
            levels = sorted({level for _rows, part_levels in parts for level in part_levels})
    if levels and baseline not in levels:
        raise DataError(f"no {factor} called {baseline!r} — the data has: {', '.join(levels)}")
    frame = pd.DataFrame(rows, columns=[*COMPARE_KEYS, *EXTRA_KEYS])
    if frame.empty:
        return frame
    frame = design.apply_design(frame, ds, opts, factor, baseline)  # blocks; Holm per campaign family
    frame = judged(frame, opts)  # verdicts, and why each untested one is
    ranked = splice.ranked_names(frame)
    frame = in_page_order(frame, by, "candidate", baseline, ranked)
    if cache is not None and context is not None:
        levels_of = {campaign: list(seen) for campaign, (_rows, seen) in zip(campaigns, parts, strict=True)}
        kept = splice.kept(frame, context[1], ranked, extra=levels_of)
        if kept is not None:
            cache.put_whole("compare", context[0], kept, "whole")
        else:
            cache.how["compare"] = "whole"
    return frame


def _pair_rows(ds: Dataset, factor: str, baseline: str, opts: AnalysisOptions, wanted: set[str],
               names: dict[Any, Any]) -> tuple[list[dict[str, object]], list[str], dict[str, Pairs]]:
    """The comparison rows before the design step (blocks, Holm, verdicts), and the levels of
    ``factor`` seen (the caller refuses a baseline that none has); then the same two per
    campaign (what :meth:`Dataset.campaign_view` of each would give)."""
    from sparkreport.analysis.design import every_fact

    arms = _arms(ds, opts, factor)
    levels = sorted({key[2] for key in arms})
    if baseline not in levels:
        return [], levels, {}
    # what is held constant is stated, never tested: one rule, the facts' (design.held_constant),
    # of every metric (those tested are looked up), found once with the site's (design.every_fact)
    facts = {(fact.campaign, fact.model, fact.metric): fact.values
             for fact in every_fact(ds, opts, factor, baseline)}
    pairs = []
    for (campaign, model, level, metric), base in sorted(arms.items()):
        if level != baseline:
            continue
        entry = metric_catalog.lookup(metric)
        if metric not in wanted or entry is None:
            continue  # covariates and secondary metrics are described, not tested
        for candidate in levels:
            other = arms.get((campaign, model, candidate, metric))
            if candidate == baseline or other is None:
                continue
            if {baseline, candidate} <= facts.get((campaign, model, metric), {}).keys():
                continue  # no variance in either arm: a fact (design.constant_facts), never a test
            pairs.append((campaign, model, metric, candidate, base, other))
    # Mann–Whitney U of every pair in a few scipy calls; an arm known only from a published summary
    # has no values, so its pairs get NaN (which _compare_one reports as skipped).
    p_mw = st.mann_whitney_many([(base.values or [], other.values or []) for *_, base, other in pairs])
    rows = []
    by_campaign: dict[str, tuple[list[dict[str, object]], list[str]]] = {}
    for key in arms:
        by_campaign.setdefault(key[0], ([], []))[1].append(key[2])
    for _rows, seen in by_campaign.values():
        seen[:] = sorted(set(seen))
    for (campaign, model, metric, candidate, base, other), p in zip(pairs, p_mw, strict=True):
        row = _compare_one(base, other, opts, metric, p) | {
            "campaign": campaign, "model": model, "model_name": names.get(model, model),
            "metric": metric, "unit": metric_catalog.unit_of(metric),
            "baseline": baseline, "candidate": candidate,
        }
        rows.append(row)
        by_campaign[campaign][0].append(row)
    return rows, levels, by_campaign


def _compare_one(a: _Arm, b: _Arm, opts: AnalysisOptions, metric: str, p_mannwhitney: float) -> dict[str, object]:
    """One comparison row (``p_mannwhitney``: ``st.mann_whitney`` of the two arms' values)."""
    skipped = []
    margin = opts.margin_for(metric) * abs(a.mean)
    diff = b.mean - a.mean
    low, high = st.diff_interval(a.mean, a.sd, a.n, b.mean, b.sd, b.n, opts.confidence)
    ratio = b.mean / a.mean if a.mean != 0 else st.NAN
    r_low, r_high = st.fieller_ratio_ci(a.mean, a.sd, a.n, b.mean, b.sd, b.n, opts.confidence)
    if a.values is not None and b.values is not None:
        p_mw = p_mannwhitney
    else:
        p_mw = st.NAN
        skipped += ["mann_whitney"]
    if not math.isfinite(r_low) and a.n >= 2 and b.n >= 2 and math.isfinite(a.sd) and math.isfinite(b.sd):
        skipped += ["ratio_ci_near_zero"]
    p_welch = st.welch_from_stats(a.mean, a.sd, a.n, b.mean, b.sd, b.n)
    if not math.isfinite(p_welch):
        skipped += ["welch", "diff_ci", "ratio_ci", "tost", "hedges_g"]
    p_tost = st.tost_from_stats(a.mean, a.sd, a.n, b.mean, b.sd, b.n, margin)
    return {
        "n_baseline": a.n, "n_candidate": b.n, "mean_baseline": a.mean, "mean_candidate": b.mean,
        "diff": diff, "diff_ci_low": low, "diff_ci_high": high, "ratio": ratio,
        "ratio_ci_low": r_low, "ratio_ci_high": r_high, "p_welch": p_welch, "p_mannwhitney": p_mw,
        "p_holm": st.NAN, "hedges_g": st.hedges_g(a.mean, a.sd, a.n, b.mean, b.sd, b.n),
        "equivalent": bool(math.isfinite(p_tost) and p_tost < opts.alpha), "verdict": "inconclusive",
        "margin": margin, "p_tost": p_tost,
        "min_detectable_effect": st.min_detectable_effect(a.sd, a.n, b.sd, b.n, opts.alpha),
        "skipped": ", ".join(SKIPPABLE[key] for key in dict.fromkeys(skipped)) or None,
    }


#: Why a comparison has no test (no Welch p-value), as the pages say it (:func:`untested_reason`),
#: in the order the pages list them. :data:`PUBLISHED_SINGLE_RUN` is also the words of the
#: ``single-run-arm`` finding about a published arm of one run (Data quality): one case, one name.
WITHOUT_SPREAD, PUBLISHED_SINGLE_RUN, ONE_RUN_PER_ARM, ONE_SINGLE_RUN = (
    "published without a spread", "published from a single run", "one run per arm", "a single run in one arm")
UNTESTED_REASONS = (WITHOUT_SPREAD, PUBLISHED_SINGLE_RUN, ONE_RUN_PER_ARM, ONE_SINGLE_RUN)
#: :data:`ONE_SINGLE_RUN` of one comparison, which names its arm (:func:`why_untested`).
SINGLE_RUN_IN = "a single run in {arm}"


def untested_reason(row: Mapping[Any, Any]) -> str:
    """Why ``row``, a comparison no test could run on (verdict ``untested``), was not tested, in
    :data:`UNTESTED_REASONS`' words: both arms of two runs or more, one published without an SD;
    a published figure of one run in each arm (no spread by definition: the more specific reason,
    in the words Data quality gives the arm); each arm one run of per-run data; one arm of a
    single run (run or published: which one the row does not say, and either is a single run)."""
    counts = (int(row["n_baseline"]), int(row["n_candidate"]))
    published = "mann_whitney" in skipped_tests(row.get("skipped"))  # an arm without runs
    if min(counts) >= 2:
        return WITHOUT_SPREAD
    if counts == (1, 1):
        return PUBLISHED_SINGLE_RUN if published else ONE_RUN_PER_ARM
    return ONE_SINGLE_RUN


def why_untested(row: Mapping[Any, Any]) -> str | None:
    """Why ``row``, one comparison, was not tested, as its own line says it (the ``why_untested``
    column, the claim's sentence): None where a test ran (its verdict is not ``untested``); else
    :func:`untested_reason`, with the arm named where one arm is a single run ("a single run in
    docker": ``n_baseline`` and ``n_candidate`` say which). The pages, which group comparisons
    by why, keep :func:`untested_reason`'s words."""
    if row["verdict"] != "untested":
        return None
    reason = untested_reason(row)
    single = [str(row[arm]) for arm in ("baseline", "candidate") if int(row[f"n_{arm}"]) < 2]
    return SINGLE_RUN_IN.format(arm=single[0]) if reason == ONE_SINGLE_RUN and len(single) == 1 else reason


#: The columns :func:`judged` reads (:func:`_verdict`'s and :func:`why_untested`'s): the rows as
#: records of these only (of all 32 they were 0.01 s of each build's analysis at 10 000 runs).
JUDGED_BY = ("p_welch", "p_blocked", "equivalent", "p_holm", "diff", "n_baseline", "n_candidate", "skipped",
             "baseline", "candidate")


def judged(frame: pd.DataFrame, opts: AnalysisOptions) -> pd.DataFrame:
    """``frame``, comparisons with their tests done (blocks, Holm), with each one's ``verdict``
    (:func:`_verdict`) and ``why_untested`` (:func:`why_untested`)."""
    records = frame_records(frame[[column for column in JUDGED_BY if column in frame.columns]])
    for row in records:
        row["verdict"] = _verdict(row, opts)
    frame["verdict"] = [row["verdict"] for row in records]
    frame["why_untested"] = [why_untested(row) for row in records]
    return frame


def skipped_tests(skipped: object) -> set[str]:
    """The keys (:data:`SKIPPABLE`) of what a comparison's ``skipped`` text names (None: nothing)."""
    names = set(str(skipped or "").split(", "))
    return {key for key, name in SKIPPABLE.items() if name in names}


def _verdict(row: dict[Any, Any], opts: AnalysisOptions) -> str:
    """untested when no test could run (no Welch p-value: an arm without a spread,
    :func:`untested_reason`); equivalent when TOST passed; higher/lower when Holm-adjusted Welch
    p < alpha; else inconclusive (a test ran and found neither)."""
    if not any(math.isfinite(float(row.get(p, math.nan))) for p in ("p_welch", "p_blocked")):
        return "untested"
    if row["equivalent"]:
        return "equivalent"
    p = float(row["p_holm"])
    if math.isfinite(p) and p < opts.alpha:
        return "higher" if float(row["diff"]) > 0 else "lower"
    return "inconclusive"
