"""Every interval the site prints holds its level at the sample sizes people run (n = 3, 5, 10).

2 000 simulated data sets per size and scenario (normal noise, seeded), through the very
functions the site calls: the t interval of a mean, the Welch interval of a difference and
Fieller's interval of a ratio of means. Coverage must lie within a binomial tolerance of 95%
(3 standard errors, ±1.5 points at 2 000 sets). With equal variances Welch's degrees of freedom
make the difference and ratio intervals conservative at n = 3 (about 96.5–97%: the level is held,
not exceeded by chance), so there only the lower bound is binding and the upper one is 98%.
bench/interval_coverage.py prints the full table, with the bootstrap intervals they replaced.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparkreport.analysis import statistics as st

SETS = 2000
LEVEL = 0.95
TOLERANCE = 3 * math.sqrt(LEVEL * (1 - LEVEL) / SETS)

#: (name, baseline mean, sd, candidate mean, sd, two-sided tolerance applies to the Welch intervals)
SCENARIOS = [
    ("unequal sd, ratio 1.3", 100.0, 2.0, 130.0, 10.4, True),
    ("equal sd, no difference", 100.0, 5.0, 100.0, 5.0, False),
    ("CV 15%, ratio 0.8", 100.0, 15.0, 80.0, 12.0, False),
]


def _coverage(n: int, m1: float, s1: float, m2: float, s2: float, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    x = rng.normal(m1, s1, size=(SETS, n))
    y = rng.normal(m2, s2, size=(SETS, n))
    mx, sx, my, sy = x.mean(1), x.std(1, ddof=1), y.mean(1), y.std(1, ddof=1)
    q = st.t_quantiles([n], LEVEL)[n]
    hits = {"mean": 0, "difference": 0, "ratio": 0}
    for a, sa, b, sb in zip(mx.tolist(), sx.tolist(), my.tolist(), sy.tolist(), strict=True):
        low, high = st.t_interval(a, sa, n, LEVEL, q)
        hits["mean"] += low <= m1 <= high
        low, high = st.diff_interval(a, sa, n, b, sb, n, LEVEL)
        hits["difference"] += low <= m2 - m1 <= high
        low, high = st.fieller_ratio_ci(a, sa, n, b, sb, n, LEVEL)
        hits["ratio"] += low <= m2 / m1 <= high
    return {k: v / SETS for k, v in hits.items()}


@pytest.mark.parametrize("n", [3, 5, 10])
@pytest.mark.parametrize(("name", "m1", "s1", "m2", "s2", "two_sided"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_intervals_hold_95_percent(name: str, m1: float, s1: float, m2: float, s2: float, two_sided: bool,
                                   n: int) -> None:
    covered = _coverage(n, m1, s1, m2, s2, seed=1000 * n + len(name))
    print(f"{name}, n = {n}: " + ", ".join(f"{k} {v:.1%}" for k, v in covered.items()))
    assert abs(covered["mean"] - LEVEL) <= TOLERANCE, covered
    for interval in ("difference", "ratio"):
        assert covered[interval] >= LEVEL - TOLERANCE, (interval, covered)
        upper = LEVEL + TOLERANCE if two_sided or n == 10 else 0.98
        assert covered[interval] <= upper, (interval, covered)


def test_the_percentile_bootstrap_it_replaced_does_not_hold_at_n_3() -> None:
    rng = np.random.default_rng(7)
    sets = 300
    x = rng.normal(100, 5, size=(sets, 3))
    y = rng.normal(100, 5, size=(sets, 3))
    hits = 0
    for a, b in zip(x, y, strict=True):
        low, high = st.bootstrap_ratio_ci(a.tolist(), b.tolist(), seed=1, resamples=1000)
        hits += low <= 1.0 <= high
    assert hits / sets < 0.88  # ~81% (bench/interval_coverage.py): why it was replaced


def test_fieller_edge_cases() -> None:
    assert st.fieller_ratio_ci(100, 0, 5, 110, 0, 5) == (1.1, 1.1)
    assert all(math.isnan(v) for v in st.fieller_ratio_ci(0.1, 10, 3, 5, 1, 3))  # baseline not away from 0
    assert all(math.isnan(v) for v in st.fieller_ratio_ci(100, 5, 1, 110, 5, 3))  # n < 2
    low, high = st.fieller_ratio_ci(100, 5, 10, 120, 6, 10)
    assert low < 1.2 < high and high - 1.2 > 1.2 - low  # asymmetric, as a ratio's interval is
