"""Arms (campaign × model × environment [× labels]) and what the statistics include.

The inclusion rule is explicit: failed runs are out unless ``include_failed``; duplicate
iterations are kept or thinned per ``duplicates``; every exclusion carries its reason so the
site and ``check`` can say what was left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from sparkreport import metrics as metric_catalog
from sparkreport.analysis import splice
from sparkreport.analysis.statistics import describe_many, describe_summary
from sparkreport.config import AnalysisOptions
from sparkreport.dataset import Dataset, one_chunk
from sparkreport.names import campaign_order, level_order, model_order

T = TypeVar("T")

if TYPE_CHECKING:
    from sparkreport.cache import AnalysisCache

if TYPE_CHECKING:
    import pandas as pd

ARM_KEYS = ["campaign", "model", "environment"]
STATS_COLUMNS = [
    "campaign", "model", "model_name", "environment", "metric", "unit", "n", "mean", "sd",
    "median", "min", "max", "cv", "ci_low", "ci_high", "ci_clipped", "source",
]


def design_labels(runs: pd.DataFrame) -> list[str]:
    """Label columns that are design factors within arms (e.g. ``label.cache`` = cold / warm).

    A label is a design factor when, inside some arm, it takes several values — unless it names
    runs: a label whose values, in the campaigns where it varies inside an arm, each belong to
    one run only (a plan index, a timestamp) identifies runs, not conditions. So a label with
    fewer values than its arm has runs is a factor, and so is one with a value per run of its
    arm whose values recur across the campaign's arms (cold and warm once each per arm, one
    iteration each: a two-minute smoke campaign). Two runs with the same iteration but different
    design labels are not repeats.
    """
    arms = runs.groupby(ARM_KEYS)
    runs_per_arm = arms.size()
    factors = []
    for column in (c for c in runs.columns if c.startswith("label.")):
        distinct = arms[column].nunique(dropna=True)
        varies = distinct > 1
        if not varies.any():
            continue
        if (varies & (distinct < runs_per_arm)).any():
            factors.append(column)
            continue
        campaigns = set(varies[varies].index.get_level_values(ARM_KEYS.index("campaign")))
        values = runs.loc[runs["campaign"].isin(campaigns), ["campaign", column]].dropna()
        if values.duplicated().any():  # a value shared by two runs of a campaign: a condition
            factors.append(column)
    return factors


def per_frame(ds: Dataset, runs: pd.DataFrame, name: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per dataset and runs table: the checks of one pass share the same
    ``runs`` (the included runs), and several read the same derived table (the arm points, the
    runs in start order). Kept in ``ds.memo`` with the table itself, so a table made later at
    the same address is not mistaken for it. The value is shared: callers must not change it."""
    key = (name, id(runs))
    found = ds.memo.get(key)
    if found is not None and found[0] is runs:
        return found[1]
    value = compute()
    ds.memo[key] = (runs, value)
    return value


def arm_rows(runs: pd.DataFrame, keys: list[str], *, dropna: bool = True) -> list[tuple[Any, np.ndarray]]:
    """Each arm's key and the positions of its rows in ``runs`` (in table order).

    The groups, keys and order of ``runs.groupby(keys, dropna=dropna)``, without a DataFrame per
    group: at thousands of arms, slicing numpy arrays by these positions is what keeps the
    analysis fast.
    """
    import pandas as pd

    if len(runs) and keys and all(isinstance(runs[k].dtype, pd.StringDtype) for k in keys):
        found = _text_arm_rows(runs, keys, dropna)
        if found is not None:
            return found
    positions = pd.Series(np.arange(len(runs)), index=runs.index)
    return [(arm, rows.to_numpy()) for arm, rows in positions.groupby([runs[k] for k in keys], dropna=dropna)]


def _text_arm_rows(runs: pd.DataFrame, keys: list[str], dropna: bool) -> list[tuple[Any, np.ndarray]] | None:
    """:func:`arm_rows` where every key is a text column, from each key's sorted codes
    (``pd.factorize``, as the groupby sorts) combined into one number per row, the rows sorted
    by it (stable): the same arms, keys and positions, without a groupby (1.2–1.6 ms a call on a
    campaign's 200 runs, which a new run's checks and comparisons make ~20 times). A missing
    value is the key column's missing value, last in its column's order (``dropna=False``), or
    leaves its row out. None when the combined number could overflow."""
    import pandas as pd

    combined = np.zeros(len(runs), dtype=np.int64)
    kept = np.ones(len(runs), dtype=bool)
    values: list[tuple[list[Any], int]] = []
    span = 1
    for key in keys:
        column = runs[key]
        dtype = column.dtype
        assert isinstance(dtype, pd.StringDtype)
        codes, uniques = pd.factorize(column, sort=True)
        size = len(uniques) + 1  # the last code: a missing value
        span *= size
        if span >= 2 ** 62:
            return None
        missing = codes < 0
        if dropna:
            kept &= ~missing
        combined = combined * size + np.where(missing, size - 1, codes)
        values.append(([*uniques.tolist(), dtype.na_value], size))
    rows = np.flatnonzero(kept) if dropna else np.arange(len(runs))
    if not len(rows):
        return []
    order = rows[np.argsort(combined[rows], kind="stable")]
    ordered = combined[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    out: list[tuple[Any, np.ndarray]] = []
    for start, end in zip(starts.tolist(), [*starts[1:].tolist(), len(order)], strict=True):
        number, arm = int(ordered[start]), []
        for names, size in reversed(values):
            number, code = divmod(number, size)
            arm.append(names[code])
        out.append((tuple(reversed(arm)), order[start:end]))
    return out


def float_matrix(runs: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Numeric ``columns`` of ``runs`` as one float matrix (a row per run), NaN where missing."""
    return runs[columns].to_numpy(dtype=float, na_value=np.nan)


def reported(values: np.ndarray) -> np.ndarray:
    """The values that are not missing (NaN), in order."""
    return values[~np.isnan(values)]


def repeat_key(runs: pd.DataFrame, factors: list[str] | None = None) -> list[str]:
    """The columns that identify one planned run: the arm, the iteration and any design labels
    (``factors``: those of a larger table ``runs`` was cut from, where that decides)."""
    return [*ARM_KEYS, "iteration", *(design_labels(runs) if factors is None else factors)]


def inclusion_rule_text(opts: AnalysisOptions, code: Callable[[str], str] = str) -> str:
    """The inclusion rule in one sentence, for the site and the CLI; ``code`` marks a setting or a
    check's name (the site passes Markdown's backticks)."""
    failed = "included" if opts.include_failed else "excluded"
    dup = {
        "all": "every run of a repeated iteration is kept",
        "first": "only the earliest run of a repeated iteration is kept",
        "last": "only the latest run of a repeated iteration is kept",
    }[opts.duplicates]
    interference = (
        "runs measured under interference (another process held the GPU, or the cooldown gave up) are "
        f"excluded ({code('analysis.exclude_interference: true')})" if opts.exclude_interference else
        "runs measured under interference (another process held the GPU, or the cooldown gave up) are "
        f"flagged by the checks and kept ({code('analysis.exclude_interference: false')})")
    return (
        f"Runs with a non-zero exit code are {failed}; {dup} ({code(f'analysis.duplicates: {opts.duplicates}')}); "
        f"{interference}; a metric a run did not report is left out of that metric's statistics only. "
        f"A run the executor's guard stopped (memory floor or stall; checks {code('guard-memory-floor')} and "
        f"{code('guard-stall')}) is a failed run and follows the same rule."
    )


def included_runs(ds: Dataset, opts: AnalysisOptions) -> pd.DataFrame:
    """The runs table plus ``included`` (bool) and ``exclusion_reason`` (a fresh copy each call).

    Computed once per dataset and options. A campaign view gets its rows of the whole
    dataset's table: which repeat of an iteration is kept depends on design labels that other
    campaigns' runs can make one, so a view never decides that alone.
    """
    return included_frame(ds, opts).copy()


def included_frame(ds: Dataset, opts: AnalysisOptions) -> pd.DataFrame:
    """:func:`included_runs`' table itself, as kept for the dataset: for a caller that only
    reads it or selects rows of it, never changing it (a copy of 10 000 runs' 86 columns is
    ~10 ms, and a build asked for four)."""
    import pandas as pd

    key = ("included", repr(opts))
    if key not in ds.memo:
        if ds.whole is not None:
            whole = included_frame(ds.whole, opts)
            ds.memo[key] = whole[(whole["campaign"] == ds.scope).fillna(False)].reset_index(drop=True)
        else:
            ds.memo[key] = _included_runs(ds, opts)
    frame = ds.memo[key]
    assert isinstance(frame, pd.DataFrame)
    return frame


def campaign_digests(ds: Dataset, opts: AnalysisOptions) -> dict[str, str]:
    """campaign → one digest of its runs' contents and of which of them the statistics use
    (and why not the others): the part of a per-campaign cache key that follows the data.
    Computed in one pass over the whole dataset, so a cache hit never cuts a campaign view."""
    import hashlib

    key = ("campaign-digests", repr(opts))
    if key not in ds.memo:
        hashes = {campaign: hashlib.sha256(digest.encode()) for campaign, digest in ds.campaign_digests().items()}
        runs = included_frame(ds, opts)
        # The runs the digest of run ids names are included, without a reason, but those listed
        # here, in table order (every run's line was 10 000 lines a build at 10 000 runs).
        noted = ~runs["included"].to_numpy(dtype=bool) | runs["exclusion_reason"].notna().to_numpy()
        for campaign, run_id, included, reason in zip(*(runs[column][noted].tolist() for column in (
                "campaign", "run_id", "included", "exclusion_reason")), strict=True):
            hashes[str(campaign)].update(f"{run_id}\0{included}\0{reason}\n".encode("utf-8", "surrogateescape"))
        ds.memo[key] = {campaign: digest.hexdigest() for campaign, digest in hashes.items()}
    digests = ds.memo[key]
    assert isinstance(digests, dict)
    return digests


def _included_runs(ds: Dataset, opts: AnalysisOptions) -> pd.DataFrame:
    import pandas as pd

    runs = ds.runs.copy()
    runs["included"] = True
    runs["exclusion_reason"] = None
    if not opts.include_failed:
        failed = ~runs["ok"].fillna(False).astype(bool)
        runs.loc[failed, "included"] = False
        runs.loc[failed, "exclusion_reason"] = [
            f"stopped by the guard ({reason})" if not pd.isna(guard)
            else f"failed run (exit code {code})" if not pd.isna(code) else "failed run"
            for code, guard, reason in zip(runs.loc[failed, "exit_code"].astype(object),
                                           runs.loc[failed, "guard"].astype(object),
                                           runs.loc[failed, "status_reason"].astype(object), strict=True)
        ]
    if opts.exclude_interference:
        from sparkreport.analysis.design import interference_flags

        flags = interference_flags(runs)
        for index, run_id in zip(runs.index, runs["run_id"], strict=True):
            reason = flags.get(str(run_id))
            if reason and runs.at[index, "included"]:
                runs.at[index, "included"] = False
                runs.at[index, "exclusion_reason"] = f"interference: {reason} (analysis.exclude_interference)"
    if opts.duplicates != "all":
        candidates = runs[runs["included"] & runs["iteration"].notna()]
        order = candidates.sort_values(["started_at_local", "started_at", "run_id"], na_position="last")
        dropped = order.duplicated(repeat_key(runs), keep="first" if opts.duplicates == "first" else "last")
        for index in order.index[dropped]:
            runs.at[index, "included"] = False
            runs.at[index, "exclusion_reason"] = (
                f"repeat of iteration {runs.at[index, 'iteration']!s} (analysis.duplicates: {opts.duplicates})"
            )
    return runs


def with_level(frame: pd.DataFrame, level: str) -> pd.DataFrame:
    """``frame``'s rows (runs or published summaries) as arms of the factor ``level`` see them:
    those that carry a level of it, that level (as text) in their ``environment`` column;
    ``frame`` itself for the factor ``environment``."""
    if level == "environment":
        return frame
    if level not in frame.columns:
        return frame.iloc[0:0]
    kept = frame[frame[level].notna()]
    return kept.assign(environment=kept[level].astype(str))


def factor_arms(runs: pd.DataFrame, factor: str) -> pd.DataFrame:
    """``runs`` grouped as the checks see an arm (:data:`ARM_KEYS`) when the comparisons contrast
    ``factor``: a run that carries a level of it is in the arm of that level, written
    ``<factor>=<level>`` in its ``environment`` column (``cache=cold``), so that a finding names
    the arm it counts; a run of the same campaign and model without a level is in no arm (as in
    the comparisons). A campaign's model none of whose runs carries a level keeps an arm per
    environment, as its Results rows do (:func:`~sparkreport.render.results.model_tables`).
    Each run's own environment stays in ``_environment`` (an arm may pool several).
    ``runs`` itself for the factor ``environment``."""
    if factor == "environment" or factor not in runs.columns or runs.empty:
        return runs
    has = runs[factor].notna().to_numpy()
    if not has.any():
        return runs
    pair = runs["campaign"].astype(str) + "\0" + runs["model"].astype(str)
    leveled = pair.isin(set(pair[has])).to_numpy()
    kept = runs[~leveled | has]
    kept_has = has[~leveled | has]
    name = factor.removeprefix("label.")
    levels = [f"{name}={level}" if carries else str(environment) for carries, level, environment
              in zip(kept_has, kept[factor].astype(object), kept["environment"].astype(object), strict=True)]
    return kept.assign(environment=levels, _environment=kept["environment"])


def arm_name(arm: tuple[object, ...]) -> str:
    """An arm as a finding names it: ``campaign/model/environment`` (or ``…/cache=cold``)."""
    return "/".join(str(x) for x in arm)


def arm_stats(ds: Dataset, opts: AnalysisOptions, by: list[str] | None = None,
              metrics: list[str] | None = None, cache: AnalysisCache | None = None, *,
              level: str = "environment", baseline: str | None = None) -> pd.DataFrame:
    """Per arm and metric: n, mean, sd, median, min, max, CV and the t-based CI of the mean.

    Rows by campaign, model, level, ``by`` labels and metric (:func:`in_page_order`): the models
    by :func:`~sparkreport.names.model_order` (their names as the pages show them), the levels
    of each campaign and model in :func:`~sparkreport.names.level_order`: ``baseline`` (the
    comparisons' own, where ``level`` is the factor they contrast:
    :meth:`~sparkreport.config.ProjectConfig.baseline_of`) first, then the others by name — the
    order every page and ``sparkreport stats`` list them in.

    Per-run arms use the included runs; published-summary arms use their published n, mean
    and sd (median/min/max unknown). ``by`` adds label columns (``label.<key>``) to the arm.
    ``level``: the run column an arm is one level of (the site's ``factor``: what
    :func:`~sparkreport.analysis.compare.compare` contrasts), written in the ``environment``
    column, which then holds that level; a run without one is in no arm, and a published arm
    is in one only when the summaries carry the column (as ``compare`` reads them).
    With ``cache``, each campaign's rows are kept as one table by the campaign's analysis key
    (:func:`campaign_digests`: its runs' contents and which of them are included, why not the
    others), the arm keys, the metrics and the confidence: a new run recomputes its campaign's
    arms only, and the rest are spliced as they were kept (the figures are the same:
    ``describe_many`` describes each sample as ``describe`` would alone; the rows, once in page
    order, too). The campaigns that miss are described together, in one pass. The whole table is
    kept too, and the next call splices the campaigns that changed into it instead of putting
    every campaign's rows together and sorting them again (:mod:`sparkreport.analysis.splice`:
    the same table).
    """
    import pandas as pd

    keys = ARM_KEYS + [c if c.startswith("label.") else f"label.{c}" for c in (by or [])]
    runs = included_frame(ds, opts)
    runs = with_level(runs[runs["included"]], level)  # (a new frame: the kept one is not changed below)
    wanted = metrics or ds.metric_columns
    for column in keys:
        if column not in runs.columns:
            runs[column] = None
    published = []
    for _, row in with_level(ds.summaries, level).iterrows():
        if metrics and row["metric"] not in metrics:
            continue
        sd = None if pd.isna(row["sd"]) else float(row["sd"])
        d = describe_summary(int(row["n"]), float(row["mean"]), sd, opts.confidence)
        published.append({
            **{k: row[k] for k in ARM_KEYS}, **{k: None for k in keys[3:]},
            "model_name": row["model_name"], "metric": row["metric"], "unit": row["unit"],
            **d.__dict__, "source": "published",
        })
    by = [*keys, "metric"]
    blocks: list[pd.DataFrame] = []
    whole: tuple[str, dict[str, str]] | None = None  # the table's context and each campaign's signature
    if not runs.empty and cache is None:
        blocks.append(_arm_frame(runs, keys, wanted, opts))
    elif not runs.empty:
        assert cache is not None
        digests = campaign_digests(ds, opts)
        of = runs.groupby("campaign", sort=False, observed=True).indices
        names = sorted(of, key=str)  # the order arm_rows gives over the whole table
        keyed = {name: cache.key(("kind", "arm_stats-2"), ("runs", digests[str(name)]), ("keys", keys),
                                 ("metrics", list(wanted)), ("confidence", opts.confidence),
                                 *((("level", level),) if level != "environment" else ()))
                 for name in names}
        found: dict[Any, pd.DataFrame | None] = {}

        def kept_block(name: Any) -> pd.DataFrame | None:  # a campaign's rows as kept (None: not kept), read once
            if name not in found:
                found[name] = cache.get("arm_stats", keyed[name])
            return found[name]

        def campaign_block(name: Any) -> pd.DataFrame | None:  # its rows, kept or made now (and kept)
            if kept_block(name) is None:
                found[name] = _arm_frame(runs.iloc[of[name]], keys, wanted, opts)
                cache.put("arm_stats", keyed[name], found[name])
            return found[name]

        own: dict[str, list[dict[str, Any]]] = {}  # each campaign's published arms
        for arm in published:
            own.setdefault(str(arm["campaign"]), []).append(arm)
        by_name: dict[str, Any] = {str(name): name for name in names}
        signatures = {text: keyed[name] for text, name in by_name.items()}
        for text, arms in own.items():
            signatures[text] = cache.key(("runs", signatures.get(text, "")), ("published", arms))
        whole = (cache.key(("kind", "arm_stats-whole-1"), ("by", by), ("metrics", list(wanted)),
                           ("confidence", opts.confidence), ("level", level), ("baseline", baseline)), signatures)

        def rows_of(text: str) -> pd.DataFrame | None:  # a campaign's rows before the sort, as the whole has them
            made = [campaign_block(by_name[text])] if text in by_name else []
            if text in own:
                made.append(_stats_frame(own[text], keys))
            parts = [part for part in made if part is not None and not part.empty]
            if not parts:
                return None
            rows = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].copy()
            clip_to_range(rows)
            return rows

        made_whole = splice.spliced(cache.whole("arm_stats", whole[0]), whole[1], rows_of,
                                    lambda rows, ranked: in_page_order(rows, by, "environment", baseline, ranked))
        if made_whole is not None:
            cache.keep("arm_stats", [keyed[name] for name in names if name not in found])
            cache.put_whole("arm_stats", whole[0], made_whole, "spliced")
            return made_whole.frame.copy()
        missing = [name for name in names if kept_block(name) is None]
        if missing:
            made = _arm_frame(runs.iloc[np.sort(np.concatenate([of[name] for name in missing]))], keys, wanted, opts)
            made_of = made.groupby("campaign", sort=False, observed=True).indices if not made.empty else {}
            for name in missing:
                block = made.iloc[made_of[name]].reset_index(drop=True) if name in made_of else made.iloc[0:0]
                cache.put("arm_stats", keyed[name], block)
                found[name] = block
        blocks.extend(rows for name in names if (rows := found[name]) is not None and not rows.empty)
    if published or not blocks:
        blocks.append(_stats_frame(published, keys))
    # one block a campaign: its text columns joined into one chunk before the sort takes rows of them
    frame = one_chunk(pd.concat(blocks, ignore_index=True)) if len(blocks) > 1 else blocks[0].copy()
    clip_to_range(frame)
    ranked = splice.ranked_names(frame)
    frame = in_page_order(frame, by, "environment", baseline, ranked)
    if whole is not None and cache is not None:
        kept = splice.kept(frame, whole[1], ranked)
        if kept is not None:
            cache.put_whole("arm_stats", whole[0], kept, "whole")
        else:
            cache.how["arm_stats"] = "whole"
    return frame


def _arm_frame(runs: pd.DataFrame, keys: list[str], wanted: list[str], opts: AnalysisOptions) -> pd.DataFrame:
    """:func:`arm_stats`' rows of the arms of ``runs`` (the included runs, with the arm keys'
    columns), in the order of :func:`arm_rows`, typed."""
    present = list(dict.fromkeys(m for m in wanted if m in runs.columns))
    index_of = {metric: j for j, metric in enumerate(present)}
    values = float_matrix(runs, present)
    labels: list[dict[str, object]] = []
    samples: list[np.ndarray] = []
    for arm, positions in arm_rows(runs, keys, dropna=False):
        arm_values = dict(zip(keys, arm, strict=True))
        model_name = runs["model_name"].iloc[positions[0]]
        for metric in wanted:
            if metric not in index_of:
                continue
            sample = reported(values[positions, index_of[metric]])
            if sample.size:
                labels.append({**arm_values, "model_name": model_name, "metric": metric})
                samples.append(sample)
    return _stats_frame([{**label, "unit": metric_catalog.unit_of(str(label["metric"])), **d.__dict__, "source": "runs"}
                         for label, d in zip(labels, describe_many(samples, opts.confidence), strict=True)], keys)


def _stats_frame(rows: list[dict[str, object]], keys: list[str]) -> pd.DataFrame:
    """``rows`` as :func:`arm_stats`' table: its columns, in order, and their types."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=[*STATS_COLUMNS[:4], *keys[3:], *STATS_COLUMNS[4:]])
    for column in ("mean", "sd", "median", "min", "max", "cv", "ci_low", "ci_high"):
        frame[column] = frame[column].astype(float)
    frame["n"] = frame["n"].astype(int)
    return frame


def in_page_order(frame: pd.DataFrame, by: list[str], level: str, baseline: str | None,
                  names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """``frame`` sorted by the columns ``by`` (stable, a fresh index) as the pages list its rows
    rather than by code point: its column ``campaign`` by :func:`~sparkreport.names.campaign_order`
    (the numbers in a name by value), its column ``model`` by
    :func:`~sparkreport.names.model_order` (the name the pages show, its ``model_name``, then the
    key), its column ``level`` by :func:`~sparkreport.names.level_order` (``baseline`` first, then
    by name) — the statistics and the comparisons list models and levels as every page does.
    ``names``: model → the name it is ranked by (default: its first row's, as SiteData.models
    names it; :func:`~sparkreport.analysis.splice.ranked_names`) — a part of a table sorted as
    the whole table sorts it."""
    from sparkreport.analysis.splice import ranked_names

    ranks = {level: _ranks(frame[level], lambda name: level_order(name, baseline))}
    if "campaign" in by:
        ranks["campaign"] = _ranks(frame["campaign"], campaign_order)
    if "model" in by:
        ranked = names if names is not None else ranked_names(frame)
        ranks["model"] = _ranks(frame["model"], lambda model: model_order(ranked[model], model))
    return frame.sort_values(by, key=lambda column: ranks.get(str(column.name), column),
                             kind="stable").reset_index(drop=True)


def _ranks(column: pd.Series, order: Callable[[str], tuple[object, ...]]) -> pd.Series:
    """Each of ``column``'s values' place among its distinct values (as text) sorted by
    ``order``. The distinct values are found by ``pd.factorize``, not by iterating the column
    (a column of 20 000 Arrow strings iterates in ~0.1 s)."""
    import pandas as pd

    codes, distinct = pd.factorize(column.astype(str))
    names = [str(name) for name in distinct]
    place = np.empty(len(names), dtype=np.int64)
    place[sorted(range(len(names)), key=lambda i: order(names[i]))] = np.arange(len(names))
    return pd.Series(place[codes], index=column.index)


def clip_to_range(frame: pd.DataFrame) -> None:
    """Cut each interval at what its quantity can be (:func:`~sparkreport.metrics.physical_range`:
    a throughput is not negative, a utilisation not above 100%) and say so in ``ci_clipped``.
    A few runs give t-intervals wider than that (n = 2: 12.7 standard errors each side); the
    cut interval holds the true mean whenever the uncut one does, so its coverage is kept."""
    import pandas as pd

    # each metric's range looked up once, spread to its rows by their codes (a list of 24 000
    # Arrow strings and a lookup per row were 0.01 s of each build at 10 000 runs)
    codes, metrics = pd.factorize(frame["metric"], use_na_sentinel=False)
    bounds = np.array([metric_catalog.physical_range(str(m)) for m in metrics], dtype=float).reshape(-1, 2)
    low, high = bounds[codes, 0], bounds[codes, 1]
    ci_low, ci_high = frame["ci_low"].to_numpy(dtype=float), frame["ci_high"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        frame["ci_clipped"] = (ci_low < low) | (ci_high > high)
        frame["ci_low"] = np.where(ci_low < low, low, ci_low)
        frame["ci_high"] = np.where(ci_high > high, high, ci_high)
