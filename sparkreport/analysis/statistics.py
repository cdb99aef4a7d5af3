"""Statistical primitives: pure functions over numbers, no pandas.

t-based confidence intervals (never 1.96 at n = 10), Welch's t-test (from samples or from
summary statistics), Mann–Whitney U, Fieller's CI for the ratio of means (Welch degrees of
freedom; it holds its level at n = 3–10 where a percentile bootstrap does not — see
bench/interval_coverage.py), Hedges' g, Holm's step-down adjustment and TOST equivalence; and
the paired test and intervals of arms measured in the same blocks (:func:`paired`).
NaN means "cannot be computed from what was given" and is reported as such, never replaced by a
number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sparkreport.cache import import_tuned

for _module in ("numpy", "sparkreport.scipy_ufuncs"):  # their BLAS on one thread (sparkreport.cache.TUNED_IMPORTS)
    import_tuned(_module)

import numpy as np  # noqa: E402

from sparkreport.scipy_ufuncs import ufuncs as special  # noqa: E402 (scipy.special's functions, its set-up left out)

NAN = float("nan")


@dataclass(frozen=True)
class Describe:
    n: int
    mean: float
    sd: float
    median: float
    min: float
    max: float
    cv: float
    ci_low: float
    ci_high: float


def t_quantiles(sizes: Sequence[int], confidence: float = 0.95) -> dict[int, float]:
    """Sample size → the two-sided t quantile of a ``confidence`` CI of the mean (n − 1 df).

    One scipy call for every size (``stdtrit``, what ``scipy.stats.t.ppf`` evaluates).
    """
    wanted = sorted({int(n) for n in sizes if n >= 2})
    if not wanted:
        return {}
    q = 0.5 + confidence / 2
    df = np.asarray(wanted, dtype=float) - 1
    quantiles = special.stdtrit(df, q) if 0 < q < 1 else _stats().t.ppf(q, df)
    return {n: float(q) for n, q in zip(wanted, quantiles, strict=True)}


def t_interval(mean: float, sd: float, n: int, confidence: float = 0.95,
               quantile: float | None = None) -> tuple[float, float]:
    """The t-based CI of a mean from n, mean and sample SD (NaN when n < 2 or sd unknown).

    ``quantile``: the t quantile for this n and confidence when already known (``t_quantiles``).
    """
    if n < 2 or not math.isfinite(sd):
        return NAN, NAN
    if quantile is None:
        quantile = _t_ppf(0.5 + confidence / 2, n - 1)
    half = quantile * sd / math.sqrt(n)
    return mean - half, mean + half


def describe(values: Sequence[float], confidence: float = 0.95) -> Describe:
    """n, mean, sample SD, median, min, max, CV (sd / |mean|) and the t-based CI of the mean."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return Describe(0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN)
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if n > 1 else NAN
    if n > 1 and x.min() == x.max():  # identical values: SD 0 exactly, not the rounding of their mean
        mean, sd = float(x[0]), 0.0
    low, high = t_interval(mean, sd, n, confidence)
    cv = sd / abs(mean) if n > 1 and mean != 0 else NAN
    return Describe(n, mean, sd, float(np.median(x)), float(x.min()), float(x.max()), cv, low, high)


def describe_many(samples: Sequence[Sequence[float] | np.ndarray], confidence: float = 0.95) -> list[Describe]:
    """``describe`` of every sample, the same figures bit for bit, at a fraction of the cost.

    Samples of one size are stacked into a matrix and reduced row by row (numpy sums a row of a
    matrix exactly as it sums that row alone), and the t quantiles come from one scipy call.
    """
    finite = [x[np.isfinite(x)] for x in (np.asarray(sample, dtype=float) for sample in samples)]
    by_size: dict[int, list[int]] = {}
    for index, x in enumerate(finite):
        by_size.setdefault(x.size, []).append(index)
    quantiles = t_quantiles(list(by_size), confidence)
    described: dict[int, Describe] = {}
    for n, members in by_size.items():
        if n == 0:
            described.update((i, Describe(0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN)) for i in members)
            continue
        block = np.stack([finite[i] for i in members])
        means = block.mean(axis=1)
        sds = block.std(axis=1, ddof=1) if n > 1 else np.full(len(members), NAN)
        medians = np.median(block, axis=1)
        lows, highs = block.min(axis=1), block.max(axis=1)
        if n > 1:  # identical values: SD 0 exactly, not the rounding of their mean (as describe)
            same = lows == highs
            means, sds = np.where(same, lows, means), np.where(same, 0.0, sds)
        for row, i in enumerate(members):
            mean, sd = float(means[row]), float(sds[row])
            ci_low, ci_high = t_interval(mean, sd, n, confidence, quantiles.get(n))
            cv = sd / abs(mean) if n > 1 and mean != 0 else NAN
            described[i] = Describe(n, mean, sd, float(medians[row]), float(lows[row]), float(highs[row]), cv,
                                    ci_low, ci_high)
    return [described[i] for i in range(len(finite))]


def describe_summary(n: int, mean: float, sd: float | None, confidence: float = 0.95) -> Describe:
    """The same figures from a published (n, mean, sd): median/min/max are unknown."""
    s = NAN if sd is None else float(sd)
    low, high = t_interval(mean, s, n, confidence)
    cv = s / abs(mean) if math.isfinite(s) and mean != 0 else NAN
    return Describe(n, mean, s, NAN, NAN, NAN, cv, low, high)


def _stats() -> Any:
    """``scipy.stats``, imported when first needed: it takes over a second to import, and a
    rebuild whose analysis comes from the cache needs only the special functions."""
    from scipy import stats

    return stats


# Student's t at one point, for the tests below. scipy.stats.t's sf, cdf and ppf evaluate exactly
# these special functions (t._sf is stdtr(df, -x), t._ppf is stdtrit(df, q)) behind ~25 µs of
# argument handling per call, which was most of the cost of comparing thousands of arms. The
# edges of the domain (infinite x, q of 0 or 1, bad df) are left to scipy.stats, which defines
# them; tests/test_analysis_vectorised.py checks that every value is scipy.stats'.
def _t_sf(x: float, df: float) -> float:
    if not (math.isfinite(x) and 0 < df < math.inf):
        return float(_stats().t.sf(x, df))
    return float(special.stdtr(df, -x))


def _t_cdf(x: float, df: float) -> float:
    if not (math.isfinite(x) and 0 < df < math.inf):
        return float(_stats().t.cdf(x, df))
    return float(special.stdtr(df, x))


def _t_ppf(q: float, df: float) -> float:
    if not (0 < q < 1 and 0 < df < math.inf):
        return float(_stats().t.ppf(q, df))
    return float(special.stdtrit(df, q))


def welch_df(s1: float, n1: int, s2: float, n2: int) -> float:
    """Welch–Satterthwaite degrees of freedom."""
    v1, v2 = s1**2 / n1, s2**2 / n2
    denom = v1**2 / (n1 - 1) + v2**2 / (n2 - 1)
    return (v1 + v2) ** 2 / denom if denom > 0 else NAN


def welch_from_stats(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int) -> float:
    """Two-sided Welch t-test p-value from summary statistics (NaN when not computable)."""
    if n1 < 2 or n2 < 2 or not (math.isfinite(s1) and math.isfinite(s2)):
        return NAN
    se = math.sqrt(s1**2 / n1 + s2**2 / n2)
    if se == 0:
        return 0.0 if m1 != m2 else 1.0
    t = (m2 - m1) / se
    return 2 * _t_sf(abs(t), welch_df(s1, n1, s2, n2))


def diff_interval(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int,
                  confidence: float = 0.95) -> tuple[float, float]:
    """Welch CI of (m2 − m1)."""
    if n1 < 2 or n2 < 2 or not (math.isfinite(s1) and math.isfinite(s2)):
        return NAN, NAN
    se = math.sqrt(s1**2 / n1 + s2**2 / n2)
    if se == 0:
        return m2 - m1, m2 - m1
    half = _t_ppf(0.5 + confidence / 2, welch_df(s1, n1, s2, n2)) * se
    return (m2 - m1) - half, (m2 - m1) + half


#: How the ratio interval was chosen, in one sentence for the Methodology page ({level}: "95%").
RATIO_INTERVAL_METHOD = (
    "The ratio of means has Fieller's {level} confidence interval with Welch–Satterthwaite degrees "
    "of freedom, computed from each arm's n, mean and SD; it was chosen by simulation over a "
    "percentile, a BCa and a studentized bootstrap: at n = 3, 5 and 10 runs per arm it covered the "
    "true ratio 94.5–96.7% of the time, where the percentile bootstrap used before covered it 76–92%."
)


def fieller_ratio_ci(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int,
                     confidence: float = 0.95) -> tuple[float, float]:
    """Fieller's CI of the ratio of means m2 / m1 for two independent samples (Welch df).

    The set of ρ for which m2 − ρ·m1 is not significantly different from 0:
    (m2 − ρ m1)² ≤ q² (v2 + ρ² v1), v = s² / n, q the t quantile at the Welch–Satterthwaite df
    of m2 − ρ̂ m1 (ρ̂ = m2 / m1). NaN when the baseline mean is not significantly away from zero
    (the set is then unbounded) or when n < 2 or an sd is unknown. Needs only (n, mean, sd), so
    published summaries get a ratio interval too.
    """
    if n1 < 2 or n2 < 2 or not (math.isfinite(s1) and math.isfinite(s2)) or m1 == 0:
        return NAN, NAN
    v1, v2 = s1**2 / n1, s2**2 / n2
    ratio = m2 / m1
    if v1 == 0 and v2 == 0:
        return ratio, ratio
    w1, w2 = ratio**2 * v1, v2
    df = (w1 + w2) ** 2 / ((w1**2 / (n1 - 1) if w1 else 0.0) + (w2**2 / (n2 - 1) if w2 else 0.0))
    q2 = _t_ppf(0.5 + confidence / 2, df) ** 2
    a = m1**2 - q2 * v1
    if a <= 0:
        return NAN, NAN
    b = m1 * m2
    c = m2**2 - q2 * v2
    half = math.sqrt(max(b * b - a * c, 0.0))
    return (b - half) / a, (b + half) / a


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value (NaN with fewer than 2 values on a side)."""
    if len(a) < 2 or len(b) < 2:
        return NAN
    if len(set(a) | set(b)) == 1:
        return 1.0
    x, y = np.asarray([b], dtype=float), np.asarray([a], dtype=float)
    if np.isnan(x).any() or np.isnan(y).any():
        return NAN  # scipy.stats' nan_policy="propagate"
    return float(_mwu_two_sided(x, y)[0])


def mann_whitney_many(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]) -> list[float]:
    """``mann_whitney`` of every (a, b) pair: the same p-values, with one scipy call per batch.

    A batch holds the pairs of the same sizes that agree on whether they have tied values: scipy
    chooses between the exact test and the normal approximation from exactly those, so each
    p-value is the one ``mann_whitney(a, b)`` returns. Samples with NaN are tested one by one.
    """
    pvalues = [NAN] * len(pairs)
    batches: dict[tuple[int, int, bool], list[int]] = {}
    for i, (a, b) in enumerate(pairs):
        if len(a) < 2 or len(b) < 2:
            continue
        if np.isnan(a).any() or np.isnan(b).any():
            pvalues[i] = mann_whitney(a, b)
            continue
        distinct = len(set(a) | set(b))
        if distinct == 1:
            pvalues[i] = 1.0
            continue
        batches.setdefault((len(a), len(b), distinct < len(a) + len(b)), []).append(i)
    for members in batches.values():
        a_rows = np.array([pairs[i][0] for i in members], dtype=float)
        b_rows = np.array([pairs[i][1] for i in members], dtype=float)
        batch = _mwu_two_sided(b_rows, a_rows)
        for i, p in zip(members, batch, strict=True):
            pvalues[i] = float(p)
    return pvalues


def _mwu_two_sided(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``scipy.stats.mannwhitneyu(x, y, alternative="two-sided", axis=1).pvalue`` for rows without
    NaN, computed the way scipy 1.17 computes it (average ranks, ``method="auto"``: the exact
    distribution when a side has at most 8 values and the batch has no ties, else the normal
    approximation with tie and continuity corrections), without importing ``scipy.stats`` (over
    a second, most of a rebuild's analysis after one new run). tests/test_analysis_vectorised.py checks
    every value against scipy.stats on random samples, with and without ties."""
    n1, n2 = x.shape[1], y.shape[1]
    xy = np.concatenate([x, y], axis=1)
    order = np.argsort(xy, axis=1, kind="stable")
    ranks = np.empty_like(xy)
    tie_term = np.zeros(len(xy))
    ties = False
    for row in range(len(xy)):
        values = xy[row, order[row]]
        starts = np.flatnonzero(np.concatenate([[True], values[:-1] != values[1:]]))
        counts = np.diff(starts, append=values.size)
        ties = ties or bool((counts > 1).any())
        average = starts + 1 + (counts.astype(float) - 1) / 2
        ranks[row, order[row]] = np.repeat(average, counts)
        tie_term[row] = np.sum(counts.astype(float) ** 3 - counts)
    u1 = ranks[:, :n1].sum(axis=1) - n1 * (n1 + 1) / 2
    u = np.maximum(u1, n1 * n2 - u1)
    if (n1 > 8 and n2 > 8) or ties:
        n = n1 + n2
        s = np.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (u - n1 * n2 / 2 - 0.5) / s
        p = special.ndtr(-z)
    else:
        p = _mwu_exact_sf(u.astype(np.int64), min(n1, n2), max(n1, n2))
    return np.clip(p * 2, 0.0, 1.0)


def _mwu_exact_sf(k: np.ndarray, n1: int, n2: int) -> np.ndarray:
    """P(U ≥ k) under the null for samples of n1 ≤ n2 values: scipy's ``_MWU.sf`` (the
    frequencies of U by the recurrence of Andreas Löffler, then the same cumulative sums)."""
    kc = np.asarray(n1 * n2 - k)
    low = k < kc
    kc[low] = k[low]
    pmfs = _mwu_frequencies(int(np.max(kc)), n1, n2)
    cdfs = np.asarray(np.cumsum(pmfs)[kc])
    cdfs[low] = 1.0 - cdfs[low] + pmfs[kc[low]]
    return cdfs


@lru_cache(maxsize=64)
def _mwu_frequencies(maxu: int, n1: int, n2: int) -> np.ndarray:
    """The null probabilities of U = 0 … maxu (maxu ≤ n1·n2 / 2), as scipy's ``_MWU`` builds them."""
    total = special.binom(n1 + n2, n1)
    sigma = np.zeros(maxu + 1, dtype=int)
    for d in np.arange(1, n1 + 1):
        sigma[np.arange(d, maxu + 1, d)] += d
    for d in np.arange(n2 + 1, n2 + n1 + 1):
        sigma[np.arange(d, maxu + 1, d)] -= d
    sigma = sigma[1:]
    configurations = np.zeros(maxu + 1, dtype=np.uint64)
    is_uint = True
    uint_max = np.iinfo(np.uint64).max
    configurations[0] = 1
    for u in np.arange(1, maxu + 1):
        new_val = np.dot(configurations[:u], sigma[u - 1::-1]) / u
        if new_val > uint_max and is_uint:
            configurations = configurations.astype(float)
            is_uint = False
        configurations[u] = new_val
    frequencies = configurations / total
    frequencies.flags.writeable = False
    return frequencies


def hedges_g(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int) -> float:
    """Hedges' g of (m2 − m1) with the small-sample correction J = 1 − 3 / (4(n1 + n2) − 9)."""
    if n1 < 2 or n2 < 2 or not (math.isfinite(s1) and math.isfinite(s2)):
        return NAN
    pooled = math.sqrt(((n1 - 1) * s1**2 + (n2 - 1) * s2**2) / (n1 + n2 - 2))
    if pooled == 0:
        return NAN
    j = 1 - 3 / (4 * (n1 + n2) - 9)
    return (m2 - m1) / pooled * j


def bootstrap_ratio_ci(a: Sequence[float], b: Sequence[float], *, seed: int, resamples: int = 10_000,
                       confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of mean(b) / mean(a), each side resampled independently (seeded).

    Not used by the site since schema 2: at n = 3, 5 and 10 it covers the true ratio far less
    often than 95% (bench/interval_coverage.py); kept for that comparison.
    """
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        return NAN, NAN
    x_rows, y_rows = _resample_rows(x.size, y.size, seed, resamples)
    mx = x[x_rows].mean(axis=1)
    my = y[y_rows].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratios = my / mx
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return NAN, NAN
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


@lru_cache(maxsize=16)
def _resample_rows(nx: int, ny: int, seed: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """The bootstrap's resampled positions for samples of nx and ny values.

    A function of the sizes and the seed alone, so a report's comparisons (whose arms mostly
    have the planned number of runs) draw them once instead of once per comparison.
    """
    rng = np.random.default_rng(seed)
    x_rows = rng.integers(0, nx, size=(resamples, nx))
    y_rows = rng.integers(0, ny, size=(resamples, ny))
    x_rows.flags.writeable = y_rows.flags.writeable = False
    return x_rows, y_rows


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values; NaN entries stay NaN and do not count."""
    indexed = [(p, i) for i, p in enumerate(pvalues) if math.isfinite(p)]
    indexed.sort()
    m = len(indexed)
    adjusted = [NAN] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def tost_from_stats(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int, margin: float) -> float:
    """TOST p-value for |m2 − m1| < margin (Welch); equivalence is shown when p < alpha."""
    if n1 < 2 or n2 < 2 or not (math.isfinite(s1) and math.isfinite(s2)) or margin <= 0:
        return NAN
    se = math.sqrt(s1**2 / n1 + s2**2 / n2)
    diff = m2 - m1
    if se == 0:
        return 0.0 if abs(diff) < margin else 1.0
    df = welch_df(s1, n1, s2, n2)
    p_lower = _t_sf((diff + margin) / se, df)  # H0: diff <= -margin
    p_upper = _t_cdf((diff - margin) / se, df)  # H0: diff >= +margin
    return max(p_lower, p_upper)


@dataclass(frozen=True)
class Paired:
    """Two arms measured in the same blocks, from each block's pair of means (a_i, b_i): the test
    and intervals that use the pairing, to stand in for the independent-sample ones (Welch) where
    a plan ran its arms in blocks. ``k`` blocks, ``k − 1`` degrees of freedom throughout."""

    k: int
    p: float  #: two-sided one-sample t-test of the differences b_i − a_i against 0
    diff_low: float  #: t interval of the mean difference
    diff_high: float
    ratio_low: float  #: Fieller's interval of mean(b) / mean(a) with the pairs' covariance
    ratio_high: float
    p_tost: float  #: TOST of |mean difference| < margin on the differences
    mde: float  #: the smallest |mean difference| the paired test detects at alpha with the power


def paired(a: Sequence[float], b: Sequence[float], margin: float, confidence: float = 0.95,
           alpha: float = 0.05, power: float = 0.8) -> Paired:
    """:class:`Paired` of the block means ``a`` (baseline) and ``b`` (candidate), block by block.

    Fieller's set for the ratio is every ρ for which mean(b_i − ρ a_i) is not significantly
    different from 0: (m_b − ρ m_a)² ≤ q² (s_bb − 2ρ s_ab + ρ² s_aa) / k, q the t quantile at
    k − 1 df (NaN when the baseline mean is not clearly away from zero). With no spread in the
    differences the test is NaN (nothing to test), the intervals collapse on the observed values."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    k = int(x.size)
    if k < 2:
        return Paired(k, NAN, NAN, NAN, NAN, NAN, NAN, NAN)
    d = y - x
    mean_d, sd_d = float(d.mean()), float(d.std(ddof=1))
    m_a, m_b = float(x.mean()), float(y.mean())
    df = k - 1
    q = _t_ppf(0.5 + confidence / 2, df)
    se = sd_d / math.sqrt(k)
    if se == 0:
        p = NAN
        p_tost = (0.0 if abs(mean_d) < margin else 1.0) if margin > 0 else NAN
    else:
        p = 2 * _t_sf(abs(mean_d) / se, df)
        p_tost = max(_t_sf((mean_d + margin) / se, df), _t_cdf((mean_d - margin) / se, df)) if margin > 0 else NAN
    s_aa, s_bb = float(x.var(ddof=1)), float(y.var(ddof=1))
    s_ab = float(np.cov(x, y, ddof=1)[0, 1])
    big_a = m_a**2 - q * q * s_aa / k
    big_b = m_a * m_b - q * q * s_ab / k
    big_c = m_b**2 - q * q * s_bb / k
    if m_a == 0 or big_a <= 0:
        r_low = r_high = NAN
    else:
        half = math.sqrt(max(big_b * big_b - big_a * big_c, 0.0))
        r_low, r_high = (big_b - half) / big_a, (big_b + half) / big_a
    mde = (_t_ppf(1 - alpha / 2, df) + _t_ppf(power, df)) * se
    return Paired(k, p, mean_d - q * se, mean_d + q * se, r_low, r_high, p_tost, mde)


def min_detectable_effect(s1: float, n1: int, s2: float, n2: int, alpha: float = 0.05,
                          power: float = 0.8) -> float:
    """The smallest |difference| a two-sided Welch test at ``alpha`` detects with ``power``."""
    if n1 < 2 or n2 < 2 or not (math.isfinite(s1) and math.isfinite(s2)):
        return NAN
    se = math.sqrt(s1**2 / n1 + s2**2 / n2)
    df = welch_df(s1, n1, s2, n2)
    if not math.isfinite(df):
        return 0.0
    return (_t_ppf(1 - alpha / 2, df) + _t_ppf(power, df)) * se
