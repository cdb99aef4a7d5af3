"""Statistical primitives: pure functions over numbers, no pandas.

t-based confidence intervals (never 1.96 at n = 10), Welch's t-test (from samples or from
summary statistics), Mann–Whitney U, a seeded bootstrap CI for the ratio of means, Hedges' g,
Holm's step-down adjustment and TOST equivalence. NaN means "cannot be computed from what
was given" and is reported as such, never replaced by a number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

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


def t_interval(mean: float, sd: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The t-based CI of a mean from n, mean and sample SD (NaN when n < 2 or sd unknown)."""
    if n < 2 or not math.isfinite(sd):
        return NAN, NAN
    half = float(sps.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
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
    low, high = t_interval(mean, sd, n, confidence)
    cv = sd / abs(mean) if n > 1 and mean != 0 else NAN
    return Describe(n, mean, sd, float(np.median(x)), float(x.min()), float(x.max()), cv, low, high)


def describe_summary(n: int, mean: float, sd: float | None, confidence: float = 0.95) -> Describe:
    """The same figures from a published (n, mean, sd): median/min/max are unknown."""
    s = NAN if sd is None else float(sd)
    low, high = t_interval(mean, s, n, confidence)
    cv = s / abs(mean) if math.isfinite(s) and mean != 0 else NAN
    return Describe(n, mean, s, NAN, NAN, NAN, cv, low, high)


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
    return float(2 * sps.t.sf(abs(t), welch_df(s1, n1, s2, n2)))


def diff_interval(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int,
                  confidence: float = 0.95) -> tuple[float, float]:
    """Welch CI of (m2 − m1)."""
    if n1 < 2 or n2 < 2 or not (math.isfinite(s1) and math.isfinite(s2)):
        return NAN, NAN
    se = math.sqrt(s1**2 / n1 + s2**2 / n2)
    if se == 0:
        return m2 - m1, m2 - m1
    half = float(sps.t.ppf(0.5 + confidence / 2, welch_df(s1, n1, s2, n2))) * se
    return (m2 - m1) - half, (m2 - m1) + half


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value (NaN with fewer than 2 values on a side)."""
    if len(a) < 2 or len(b) < 2:
        return NAN
    if len(set(a) | set(b)) == 1:
        return 1.0
    return float(sps.mannwhitneyu(b, a, alternative="two-sided").pvalue)


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
    """Percentile bootstrap CI of mean(b) / mean(a), each side resampled independently (seeded)."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        return NAN, NAN
    rng = np.random.default_rng(seed)
    mx = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    my = y[rng.integers(0, y.size, size=(resamples, y.size))].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = my / mx
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return NAN, NAN
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


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
    p_lower = float(sps.t.sf((diff + margin) / se, df))  # H0: diff <= -margin
    p_upper = float(sps.t.cdf((diff - margin) / se, df))  # H0: diff >= +margin
    return max(p_lower, p_upper)


def min_detectable_effect(s1: float, n1: int, s2: float, n2: int, alpha: float = 0.05,
                          power: float = 0.8) -> float:
    """The smallest |difference| a two-sided Welch test at ``alpha`` detects with ``power``."""
    if n1 < 2 or n2 < 2 or not (math.isfinite(s1) and math.isfinite(s2)):
        return NAN
    se = math.sqrt(s1**2 / n1 + s2**2 / n2)
    df = welch_df(s1, n1, s2, n2)
    if not math.isfinite(df):
        return 0.0
    return float(sps.t.ppf(1 - alpha / 2, df) + sps.t.ppf(power, df)) * se
