"""How the runs were made, as the comparisons use it.

- **Facts, not tests**: a metric with no run-to-run variance in either arm (SD 0: the KV cache
  sized by a configured fraction, a configured batch size) is stated as a fact and never tested.
- **The testing family**: metrics that are exact functions of one another
  (:data:`sparkreport.metrics.METRIC_FAMILIES`) are tested once; Holm's adjustment runs over
  ONE campaign's comparisons of its primary metrics (``analysis.primary_metrics``), and
  separately over its secondary metrics — never over the whole store, so adding an unrelated
  campaign changes no verdict.
- **Blocks**: where the plan ran in randomized blocks (``label.block``), each block's
  candidate − baseline difference is a pair, and a paired t-test over the blocks is the test.
- **Strata**: ``compare --by LABEL`` compares within each level of a label (cold / warm cache).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sparkreport import metrics as metric_catalog
from sparkreport.analysis import statistics as st
from sparkreport.analysis.arms import arm_rows, float_matrix, in_page_order, included_runs, reported, with_level
from sparkreport.config import AnalysisOptions
from sparkreport.dataset import Dataset, frame_records
from sparkreport.figures import figure, given_places
from sparkreport.names import campaign_order, level_order, model_order

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.cache import AnalysisCache

BLOCK_LABEL = "label.block"


def primary_metrics(opts: AnalysisOptions) -> tuple[str, ...]:
    """The metrics each campaign's question is about (``analysis.primary_metrics``)."""
    return tuple(opts.primary_metrics or metric_catalog.DEFAULT_PRIMARY_METRICS)


def family_representatives(metrics: list[str] | tuple[str, ...]) -> tuple[list[str], dict[str, list[str]]]:
    """``metrics`` with one member per declared family (the first listed), and what each kept
    member stands for: ``{kept: [members left out]}``."""
    kept: list[str] = []
    stands_for: dict[str, list[str]] = {}
    first_of: dict[str, str] = {}
    for metric in metrics:
        family = metric_catalog.family_of(metric)
        if family is None:
            kept.append(metric)
        elif family not in first_of:
            first_of[family] = metric
            kept.append(metric)
        else:
            stands_for.setdefault(first_of[family], []).append(metric)
    return kept, stands_for


def family_rule_text(opts: AnalysisOptions, code: Callable[[str], str] = str) -> str:
    """The testing-family rule in two sentences, for the Methodology page and ``--help``; ``code``
    marks a setting's name (the page passes Markdown's backticks)."""
    from sparkreport.metrics import lookup

    def label(name: str) -> str:
        entry = lookup(name)
        return entry.label if entry else name

    tested, stands_for = family_representatives(opts.tested_metrics)
    collapsed = "; ".join(f"{label(k)} stands for {', '.join(label(m) for m in v)}" for k, v in stands_for.items())
    primary = ", ".join(label(m) for m in primary_metrics(opts))
    compared = ", ".join(label(m) for m in opts.tested_metrics)
    return (
        f"Primary metric(s): {primary} ({code('analysis.primary_metrics')}); the metrics compared: {compared} "
        f"({code('analysis.compare_metrics')}). Holm's "
        "adjustment runs over one campaign's comparisons of its primary metrics (every model, every "
        "candidate, every stratum), and separately over its secondary metrics; other campaigns in the "
        "store never enter a campaign's family. Metrics that are exact functions of one another at a "
        f"fixed workload are tested once ({collapsed or 'none collapsed'}); metrics with no run-to-run "
        "variance in either arm are stated as facts and not tested."
    )


# --------------------------------------------------------------------------- facts


@dataclass
class Fact:
    """A quantity that did not vary: stated, never tested."""

    campaign: str
    model: str
    metric: str
    values: dict[str, float]  # factor level → the value every run of that level had
    #: The runs that reported it (every level's together).
    n: int
    #: What set the value, where the runs say ("sized by the configured fraction 0.9"); else "".
    note: str = ""
    #: The campaign × model's runs where fewer than all of them (``n``) recorded it; None: all did.
    runs: int | None = None

    def _values(self) -> str:
        """"57.19 GiB in every run", or each level's: "100.00 GiB in every cgroup run and
        111.80 GiB in every native run"; "in every run that recorded it" where some did not."""
        which = " that recorded it" if self.runs is not None else ""
        distinct = set(self.values.values())
        if len(distinct) == 1:
            return f"{_fmt(self.metric, next(iter(distinct)))} in every run{which}"
        parts = [f"{_fmt(self.metric, value)} in every {level} run{which}" for level, value in self.values.items()]
        return ", ".join(parts[:-1]) + " and " + parts[-1]

    @property
    def counted(self) -> str:
        """The runs it is of: "40 runs", or "8 of 9 runs" where one did not record it."""
        return f"{self.n:,} of {self.runs:,} runs" if self.runs is not None else f"{self.n:,} runs"

    @property
    def value_text(self) -> str:
        """The value without the quantity's name, for a page that names it already (its heading,
        a list's label): "57.19 GiB in every run (40 runs), sized by the configured fraction 0.9"."""
        return f"{self._values()} ({self.counted})" + (f", {self.note}" if self.note else "")

    @property
    def named(self) -> str | None:
        """The quantity with its one value, as a list of such quantities says it: "Device memory
        total 79.18 GiB", "Requests 64" (a count whose label ends in its unit, as
        :func:`~sparkreport.metrics.with_unit` has it); None where the levels' values differ."""
        distinct = set(self.values.values())
        if len(distinct) != 1:
            return None
        label, unit = metric_catalog.label_of(self.metric), metric_catalog.unit_of(self.metric)
        text = _fmt(self.metric, distinct.pop())
        if unit and metric_catalog.with_unit(label, unit) == label:
            text = text.removesuffix(f" {unit}")
        return f"{label} {text}"

    @property
    def body(self) -> str:
        """What was constant, as a clause ("KV cache was 57.19 GiB in every run (40 runs): sized by
        the configured fraction 0.9")."""
        entry = metric_catalog.lookup(self.metric)
        label = entry.label if entry is not None else self.metric
        said = (f"({self.counted})" if len(set(self.values.values())) == 1
                else f"(no run-to-run variance{f' in {self.counted}' if self.runs is not None else ''}: "
                     "a fixed difference)")
        return f"{label} was {self._values()} {said}" + (f": {self.note}" if self.note else "")

    @property
    def sentence(self) -> str:
        """The fact on its own line (the CLI, the JSON): where, what, and that it is not tested."""
        return f"{self.campaign}/{self.model}: {self.body}; stated, not tested"

    def to_dict(self) -> dict[str, object]:
        return {"campaign": self.campaign, "model": self.model, "metric": self.metric,
                "values": self.values, "n": self.n, "runs": self.n if self.runs is None else self.runs,
                "sentence": self.sentence}


#: The units of quantities a run is configured with, stated as set (:func:`_fmt`).
SET_UNITS = frozenset({"tokens", "requests", ""})


def _fmt(metric: str, value: float) -> str:
    """``value`` with the metric's decimals, thousands separators and unit — a configured count or
    fraction (tokens, requests, a unitless setting) as it was set, with the decimals it needs (512
    tokens, the fraction 0.9; not 512.00 and 0.900), a measured one at the metric's (111.80 GiB,
    as every size on the pages) —; a value that would round to zero without being zero gets two
    significant digits, as the pages' numbers do."""
    entry = metric_catalog.lookup(metric)
    digits = entry.digits if entry is not None else 2
    unit = metric_catalog.unit_of(metric)
    if unit in SET_UNITS:
        digits = given_places(value, digits)
    return figure(value, digits) + (f" {unit}" if unit else "")


def constant_facts(ds: Dataset, opts: AnalysisOptions | None = None, factor: str = "environment",
                   metrics: list[str] | None = None, cache: AnalysisCache | None = None, *,
                   every: bool = False, baseline: str | None = None) -> list[Fact]:
    """Per campaign × model × metric: the metrics the runs record with SD 0 in every level of
    ``factor`` (the rule: :func:`held_constant`; published figures too), as sentences ("the KV
    cache was 111.8 GiB in every run: sized by the configured fraction 0.9"), of ``metrics``
    (None: the tested ones) in their order; ``every``: of every metric the runs hold, the tested
    ones first (what the Results pages state instead of a table of intervals from 64 to 64).
    Either way every metric's facts are found, so that a build's and ``compare``'s share one
    cache entry: with ``cache``, each campaign's are kept by the digest of its runs. A fact's
    levels are in :func:`~sparkreport.names.level_order`, ``baseline`` first, as the pages list them."""
    opts = opts or AnalysisOptions()
    found = _every_fact(ds, opts, factor, cache, baseline)
    if every:
        return found
    rank = {metric: i for i, metric in enumerate(dict.fromkeys(metrics or opts.tested_metrics))}
    arms: dict[tuple[str, str], int] = {}
    for fact in found:
        arms.setdefault((fact.campaign, fact.model), len(arms))
    return sorted((fact for fact in found if fact.metric in rank),
                  key=lambda fact: (arms[(fact.campaign, fact.model)], rank[fact.metric]))


def _every_fact(ds: Dataset, opts: AnalysisOptions, factor: str, cache: AnalysisCache | None,
                baseline: str | None) -> list[Fact]:
    """:func:`constant_facts` of every metric, per campaign through ``cache`` where there is one."""
    if cache is None:
        return every_fact(ds, opts, factor, baseline)
    from sparkreport.analysis.arms import campaign_digests

    digests = campaign_digests(ds, opts)

    def key(campaign: str) -> str:
        assert cache is not None
        # a campaign's facts are of the metrics its own runs hold, whatever the other campaigns hold
        return cache.key(("kind", "facts-6"), ("runs", digests[campaign]), ("opts", opts), ("factor", factor),
                         ("baseline", baseline))

    def whole() -> tuple[list[Fact], dict[str, list[Fact]]]:
        # Each fact belongs to one campaign, so each campaign's share is what its view computes.
        facts = every_fact(ds, opts, factor, baseline)
        shares: dict[str, list[Fact]] = {}
        for fact in facts:
            shares.setdefault(fact.campaign, []).append(fact)
        return facts, shares

    # the campaigns in the order held_constant lists them, so that a cached result is listed alike
    found, parts = cache.campaign_parts("facts", sorted(ds.campaigns(), key=campaign_order), key, whole,
                                        lambda campaign: every_fact(ds.campaign_view(campaign), opts, factor,
                                                                      baseline), list[Fact])
    return found if found is not None else [fact for part in parts for fact in part]


def every_fact(ds: Dataset, opts: AnalysisOptions, factor: str, baseline: str | None = None) -> list[Fact]:
    """:func:`held_constant` of every metric — the tested ones first, then every metric the whole
    dataset's runs or published figures hold (a campaign view's whole: a view's facts are then
    the whole's facts of its campaign) — once per dataset (a view is one), options, factor and
    baseline: ``compare`` reads the facts of the metrics it tests, the facts of every metric
    (:func:`constant_facts`), and a build asks both of a new run's campaign (each metric's facts
    are its own, whatever other metrics are asked for). A fresh list each call."""
    key = ("every-fact", repr(opts), factor, baseline)
    if key not in ds.memo:
        whole = ds.whole or ds
        published = {str(metric) for metric in whole.summaries["metric"].unique()}
        metrics = [*opts.tested_metrics, *sorted(set(whole.metric_columns) | published)]
        ds.memo[key] = held_constant(ds, opts, factor, metrics, baseline)
    facts = ds.memo[key]
    assert isinstance(facts, list)
    return list(facts)


def held_constant(ds: Dataset, opts: AnalysisOptions, factor: str, metrics: list[str],
                  baseline: str | None = None) -> list[Fact]:
    """The facts of ``ds``'s included runs, then of its published figures (:func:`_published_facts`):
    the one rule of what is stated, not tested — ``compare`` tests no pair of levels a fact covers.

    A campaign × model's metric is a fact when the runs that record it, two or more, record one
    value per level: that value per level when every level has two such runs or more (a fixed
    difference stands out from the noise only then), else one value in every such run (two single
    runs that made 400 requests each). Runs that do not record it (a run that lost a figure) are
    left out of it, and the fact counts them: "in every run that recorded it (8 of 9 runs)".
    The facts by campaign, then by model as the pages list models (:func:`_in_model_order`); each
    fact's levels in :func:`~sparkreport.names.level_order` (``baseline`` first, then by name)."""
    runs = included_runs(ds, opts)
    runs = runs[runs["included"]]
    if runs.empty or factor not in runs.columns:
        return _in_model_order(ds, _published_facts(ds, factor, metrics, baseline))
    wanted = list(dict.fromkeys(m for m in metrics if m in runs.columns))
    values = float_matrix(runs, wanted)
    fraction = float_matrix(runs, ["kv_cache_fraction"]) if "kv_cache_fraction" in runs.columns else None
    all_levels = runs[factor].astype(str).to_numpy(dtype=object)
    facts: list[Fact] = []
    for (campaign, model), positions in arm_rows(runs, ["campaign", "model"]):
        levels = all_levels[positions]
        rows_of = {level: positions[levels == level]
                   for level in sorted(set(levels), key=lambda level: level_order(level, baseline))}
        for j, metric in enumerate(wanted):
            column = reported(values[positions, j])  # the runs that recorded it
            if column.size < 2:
                continue
            per_level = {level: sample for level, rows in rows_of.items() if (sample := reported(values[rows, j])).size}
            single = any(sample.size < 2 for sample in per_level.values())
            if any(float(sample.max()) != float(sample.min()) for sample in per_level.values()) \
                    or (single and float(column.max()) != float(column.min())):
                continue
            note = ""
            if metric == "kv_cache_gib" and fraction is not None:
                fr = reported(fraction[positions, 0])
                if fr.size and float(fr.min()) == float(fr.max()):
                    note = f"sized by the configured fraction {float(fr[0]):g}"
            facts.append(Fact(str(campaign), str(model), metric,
                              {level: float(sample[0]) for level, sample in per_level.items()}, column.size, note,
                              runs=len(positions) if column.size < len(positions) else None))
    return _in_model_order(ds, facts + _published_facts(ds, factor, metrics, baseline))


def _in_model_order(ds: Dataset, facts: list[Fact]) -> list[Fact]:
    """``facts`` by campaign (:func:`~sparkreport.names.campaign_order`), then by model as the pages list models
    (:func:`~sparkreport.names.model_order`: by the name they show), each model's in the order found."""
    names: dict[tuple[str, str], str] = {}
    for frame in (ds.runs, ds.summaries):
        shown = frame[["campaign", "model", "model_name"]].drop_duplicates().astype(str)
        for campaign, model, name in shown.itertuples(index=False):
            names.setdefault((campaign, model), name)
    return sorted(facts, key=lambda f: (*campaign_order(f.campaign),
                                        *model_order(names.get((f.campaign, f.model), f.model), f.model)))


def _published_facts(ds: Dataset, factor: str, metrics: list[str], baseline: str | None = None) -> list[Fact]:
    """The facts of published figures, by the rule of the runs' (:func:`held_constant`): a
    level's figure is one value in every run when it is of one run or its SD is 0, and a campaign ×
    model's metric is a fact when every level it publishes gives it so. Noted "as published"."""
    summaries = with_level(ds.summaries, factor)
    if summaries.empty:
        return []
    rank = {metric: i for i, metric in enumerate(dict.fromkeys(metrics))}
    facts: list[Fact] = []
    for (campaign, model), group in summaries.groupby(["campaign", "model"], sort=False, observed=True):
        levels = set(group["environment"].astype(str))
        by_metric = [(str(metric), rows) for metric, rows in group.groupby("metric", sort=False, observed=True)
                     if str(metric) in rank]
        for metric, rows in sorted(by_metric, key=lambda item: rank[item[0]]):
            n = rows["n"].astype(int)
            sd = rows["sd"].astype(float)
            per_level = dict(sorted(zip(rows["environment"].astype(str), rows["mean"].astype(float), strict=True),
                                    key=lambda item: level_order(item[0], baseline)))
            if (set(per_level) != levels or len(per_level) != len(rows)
                    or not ((n == 1) | (sd == 0)).all() or int(n.sum()) < 2
                    or ((n < 2).any() and len(set(per_level.values())) > 1)):
                continue
            facts.append(Fact(str(campaign), str(model), metric, per_level, int(n.sum()), "as published"))
    return facts


# --------------------------------------------------------------------------- blocks


def blocked_pairs(ds: Dataset, opts: AnalysisOptions, factor: str, baseline: str,
                  metrics: list[str]) -> dict[tuple[str, str, str, str], tuple[list[float], list[float]]]:
    """(campaign, model, candidate, metric) → the baseline's and the candidate's block means, block
    by block (what :func:`~sparkreport.analysis.statistics.paired` reads).

    Only for campaigns whose runs carry ``label.block`` with several blocks in which both
    arms ran; a block's value for an arm is the mean of that arm's runs in the block.
    """
    runs = included_runs(ds, opts)
    runs = runs[runs["included"]]
    out: dict[tuple[str, str, str, str], tuple[list[float], list[float]]] = {}
    if BLOCK_LABEL not in runs.columns or factor not in runs.columns or runs.empty:
        return out
    runs = runs[runs[BLOCK_LABEL].notna()]
    present = [m for m in metrics if m in runs.columns]
    values = float_matrix(runs, present)
    blocks = runs[BLOCK_LABEL].astype(str).to_numpy(dtype=object)
    levels = runs[factor].astype(str).to_numpy(dtype=object)
    for (campaign, model), positions in arm_rows(runs, ["campaign", "model"]):
        block_ids = sorted(set(blocks[positions]))
        if len(block_ids) < 2:
            continue
        for candidate in sorted(set(levels[positions]) - {baseline}):
            for j, metric in enumerate(present):
                base_means, cand_means = [], []
                for block in block_ids:
                    in_block = positions[blocks[positions] == block]
                    base = reported(values[in_block[levels[in_block] == baseline], j])
                    cand = reported(values[in_block[levels[in_block] == candidate], j])
                    if base.size and cand.size:
                        base_means.append(float(base.mean()))
                        cand_means.append(float(cand.mean()))
                if len(base_means) >= 2:
                    out[(str(campaign), str(model), candidate, metric)] = (base_means, cand_means)
    return out


def apply_design(frame: pd.DataFrame, ds: Dataset, opts: AnalysisOptions, factor: str,
                 baseline: str) -> pd.DataFrame:
    """Add the blocked test (``p_blocked``, ``design``), then Holm per campaign family.

    Where the plan ran both arms in blocks, the pairs decide: the paired t-test, and the
    difference's and the ratio's intervals, TOST and the minimum detectable effect from the block
    differences replace the independent-sample (Welch) ones, so a row's interval, equivalence and
    test all come from one design (``p_welch`` stays, for reference)."""
    if frame.empty:
        return frame
    blocked = blocked_pairs(ds, opts, factor, baseline, sorted(set(frame["metric"])))
    p_blocked, design = [st.NAN] * len(frame), ["independent: Welch t"] * len(frame)
    replaced: dict[str, list[Any]] = {column: frame[column].tolist() for column in PAIRED_COLUMNS}
    # Only the rows of a blocked pair change: their keys are read from the five columns they need
    # (every row as a record was 0.02 s of each build's analysis at 10 000 runs, blocks or none).
    rows = frame_records(frame[["campaign", "model", "candidate", "metric", "margin"]]) if blocked else []
    for i, row in enumerate(rows):
        found = blocked.get((str(row["campaign"]), str(row["model"]), str(row["candidate"]), str(row["metric"])))
        result = st.paired(*found, float(row["margin"]), opts.confidence, opts.alpha) if found else None
        if result is not None and math.isfinite(result.p):
            p_blocked[i] = result.p
            design[i] = f"blocked: paired t over {result.k} plan blocks"
            equivalent = bool(math.isfinite(result.p_tost) and result.p_tost < opts.alpha)
            for column, value in zip(PAIRED_COLUMNS, (result.diff_low, result.diff_high, result.ratio_low,
                                                      result.ratio_high, result.p_tost, result.mde, equivalent),
                                     strict=True):
                replaced[column][i] = value
    for column, values in replaced.items():
        frame[column] = values
    frame["p_blocked"] = p_blocked
    frame["design"] = design
    return holm_by_family(frame, opts)


#: The columns of a comparison that a blocked design's pairs replace (and ``equivalent``).
PAIRED_COLUMNS = ("diff_ci_low", "diff_ci_high", "ratio_ci_low", "ratio_ci_high", "p_tost",
                  "min_detectable_effect", "equivalent")


def holm_by_family(frame: pd.DataFrame, opts: AnalysisOptions) -> pd.DataFrame:
    """``p_holm`` and ``family`` per campaign × (primary | secondary); the p-value adjusted is
    the blocked one where the plan has blocks, else Welch's."""
    if frame.empty:
        return frame
    primary = set(primary_metrics(opts))
    p = [float(b) if math.isfinite(float(b)) else float(w)
         for b, w in zip(frame["p_blocked"].tolist(), frame["p_welch"].tolist(), strict=True)]
    roles = ["primary" if m in primary else "secondary" for m in frame["metric"].tolist()]
    keys = [f"{c} · {r}" for c, r in zip(frame["campaign"].tolist(), roles, strict=True)]
    adjusted = [st.NAN] * len(p)
    sizes: dict[str, int] = {}
    families: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        families.setdefault(key, []).append(i)
    for key, index in families.items():
        sizes[key] = sum(1 for i in index if math.isfinite(p[i]))
        for i, q in zip(index, st.holm([p[i] for i in index]), strict=True):
            adjusted[i] = q
    frame["p_holm"] = adjusted
    frame["family"] = [family_text(k, sizes[k]) for k in keys]
    return frame


#: A comparison's ``family``: the Holm family's name and its number of tests.
FAMILY_FORMAT = "{name} ({size} {tests})"


def family_text(name: str, size: int) -> str:
    """A family as :data:`FAMILY_FORMAT` writes it ("c · primary (1 test)", "… (10 tests)")."""
    return FAMILY_FORMAT.format(name=name, size=size, tests="test" if size == 1 else "tests")


def family_size(family: str) -> int | None:
    """The number of tests of a ``family`` as :func:`family_text` writes it (None if not one)."""
    found = re.fullmatch(r".* \((\d+) tests?\)", family)
    return int(found.group(1)) if found else None


def likely_cause(util_means: list[float], util_sd_across: float, clock_cv: float | None,
                 window_s: float | None) -> str | None:
    """The likely cause of a noisy arm from how its runs were measured, or None."""
    causes = []
    if util_means:
        mean_util = sum(util_means) / len(util_means)
        if mean_util < 85.0:
            causes.append(f"the GPU was only {mean_util:.0f}% busy on average (host-bound: kernel launches)")
        if util_sd_across > 5.0:
            causes.append(f"GPU utilisation varied from run to run (SD {util_sd_across:.1f} points)")
    if clock_cv is not None and clock_cv > 0.02:
        causes.append(f"SM clocks changed between runs (CV {clock_cv:.1%}: power or thermal limits)")
    if window_s is not None and window_s < 2.0:
        causes.append(f"the measured window was short ({window_s:.2f} s)")
    return "; ".join(causes) or None


def interference_flags(runs: pd.DataFrame) -> dict[str, str]:
    """run_id → why its measurement may be disturbed (another GPU process, a cooldown that gave up)."""
    out: dict[str, str] = {}
    for run_id, warnings in zip(runs["run_id"], runs["warnings"], strict=True):
        text = "" if warnings is None or (isinstance(warnings, float) and math.isnan(warnings)) else str(warnings)
        reasons = [w.strip() for w in text.split(";") if w.strip().startswith(("another process", "cooldown gave up"))]
        if reasons:
            out[str(run_id)] = "; ".join(reasons)
    return out


def compare_by(ds: Dataset, label: str, factor: str = "environment", baseline: str = "native",
               opts: AnalysisOptions | None = None, metrics: list[str] | None = None) -> pd.DataFrame:
    """``compare`` within each level of ``label`` (a stratum column), Holm per campaign family."""
    import pandas as pd

    from sparkreport.analysis.compare import compare
    from sparkreport.errors import DataError

    opts = opts or AnalysisOptions()
    column = label if label.startswith("label.") or label in ds.runs.columns else f"label.{label}"
    if column not in ds.runs.columns:
        labels = ", ".join(c.removeprefix("label.") for c in ds.label_columns) or "none"
        raise DataError(f"no label {label!r} to stratify by — the runs have: {labels}")
    frames = []
    for level in sorted({str(v) for v in ds.runs[column].dropna()}):
        sub = replace(ds, runs=ds.runs[ds.runs[column].astype(str) == level].reset_index(drop=True),
                      summaries=ds.summaries.iloc[0:0])
        frame = compare(sub, factor, baseline, opts, metrics)
        if not frame.empty:
            frame["stratum"] = f"{column.removeprefix('label.')}={level}"
            frames.append(frame)
    if not frames:
        return compare(replace(ds, runs=ds.runs.iloc[0:0], summaries=ds.summaries.iloc[0:0]), factor, baseline,
                       opts, metrics)
    out = pd.concat(frames, ignore_index=True)
    out = holm_by_family(out, opts)
    from sparkreport.analysis.compare import judged

    out = judged(out, opts)  # the verdicts again, after Holm over the strata
    return in_page_order(out, ["campaign", "model", "metric", "candidate", "stratum"], "candidate", baseline)

