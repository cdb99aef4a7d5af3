"""The statistical primitives against scipy and against their definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from scipy import stats as sps

from sparkreport.analysis import statistics as st

A = [119.10, 119.58, 119.37, 120.68, 119.93, 119.44, 120.12, 119.71, 119.88, 120.06]
B = [119.40, 119.29, 119.57, 119.10, 119.70, 119.36, 119.46, 119.22, 119.53, 119.33]


def test_t_interval_matches_scipy_and_is_not_1_96() -> None:
    d = st.describe(A)
    low, high = sps.t.interval(0.95, len(A) - 1, loc=np.mean(A), scale=sps.sem(A))
    assert d.ci_low == pytest.approx(low, rel=1e-12) and d.ci_high == pytest.approx(high, rel=1e-12)
    z_half = 1.96 * np.std(A, ddof=1) / math.sqrt(len(A))
    assert (d.ci_high - d.ci_low) / 2 > z_half * 1.1  # t(9) = 2.262, not 1.96


def test_describe_fields() -> None:
    d = st.describe(A)
    assert d.n == 10
    assert d.mean == pytest.approx(np.mean(A))
    assert d.sd == pytest.approx(np.std(A, ddof=1))
    assert d.median == pytest.approx(np.median(A))
    assert (d.min, d.max) == (min(A), max(A))
    assert d.cv == pytest.approx(np.std(A, ddof=1) / np.mean(A))


def test_describe_single_value_has_no_spread() -> None:
    d = st.describe([5.0])
    assert d.n == 1 and d.mean == 5.0
    assert math.isnan(d.sd) and math.isnan(d.ci_low) and math.isnan(d.cv)


def test_describe_summary_uses_t() -> None:
    d = st.describe_summary(10, 119.79, 0.58)
    half = sps.t.ppf(0.975, 9) * 0.58 / math.sqrt(10)
    assert d.ci_low == pytest.approx(119.79 - half) and math.isnan(d.median)
    assert math.isnan(st.describe_summary(10, 70.47, None).ci_low)


def test_welch_matches_scipy() -> None:
    expected = sps.ttest_ind(B, A, equal_var=False).pvalue
    got = st.welch_from_stats(np.mean(A), np.std(A, ddof=1), len(A), np.mean(B), np.std(B, ddof=1), len(B))
    assert got == pytest.approx(expected, rel=1e-10)


def test_diff_interval_matches_scipy() -> None:
    res = sps.ttest_ind(B, A, equal_var=False)
    ci = res.confidence_interval(0.95)
    low, high = st.diff_interval(np.mean(A), np.std(A, ddof=1), len(A), np.mean(B), np.std(B, ddof=1), len(B))
    assert (low, high) == pytest.approx((ci.low, ci.high), rel=1e-9)


def test_mann_whitney_matches_scipy() -> None:
    assert st.mann_whitney(A, B) == pytest.approx(sps.mannwhitneyu(B, A, alternative="two-sided").pvalue)
    assert math.isnan(st.mann_whitney([1.0], B))


def test_hedges_g_definition() -> None:
    n1, n2 = len(A), len(B)
    s_pooled = math.sqrt(((n1 - 1) * np.var(A, ddof=1) + (n2 - 1) * np.var(B, ddof=1)) / (n1 + n2 - 2))
    d = (np.mean(B) - np.mean(A)) / s_pooled
    g = st.hedges_g(np.mean(A), np.std(A, ddof=1), n1, np.mean(B), np.std(B, ddof=1), n2)
    assert g == pytest.approx(d * (1 - 3 / (4 * (n1 + n2) - 9)))


def test_holm_known_values() -> None:
    # m = 4: sorted 0.01, 0.02, 0.03, 0.04 → 0.04, 0.06, 0.06, 0.06
    assert st.holm([0.04, 0.01, 0.03, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    adjusted = st.holm([0.5, float("nan"), 0.001])
    assert adjusted[0] == pytest.approx(0.5) and math.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.002)


def test_tost_against_two_one_sided_scipy_tests() -> None:
    margin = 0.02 * np.mean(A)
    a, b = np.asarray(A), np.asarray(B)
    p_low = sps.ttest_ind(b + margin, a, equal_var=False, alternative="greater").pvalue
    p_high = sps.ttest_ind(b - margin, a, equal_var=False, alternative="less").pvalue
    got = st.tost_from_stats(a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1), b.size, margin)
    assert got == pytest.approx(max(p_low, p_high), rel=1e-9)


def test_bootstrap_is_seeded_and_brackets_the_ratio() -> None:
    first = st.bootstrap_ratio_ci(A, B, seed=7, resamples=2000)
    assert first == st.bootstrap_ratio_ci(A, B, seed=7, resamples=2000)
    assert first[0] < np.mean(B) / np.mean(A) < first[1]
    assert first != st.bootstrap_ratio_ci(A, B, seed=8, resamples=2000)


samples = hst.lists(hst.floats(min_value=1.0, max_value=1e4, allow_nan=False), min_size=2, max_size=40)


@settings(max_examples=200, deadline=None)
@given(samples)
def test_ci_contains_mean_and_is_symmetric(values: list[float]) -> None:
    d = st.describe(values)
    if d.sd > 0:
        assert d.ci_low <= d.mean <= d.ci_high
        assert (d.mean - d.ci_low) == pytest.approx(d.ci_high - d.mean, rel=1e-6, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(hst.lists(hst.floats(min_value=0, max_value=1), min_size=1, max_size=30))
def test_holm_never_below_raw_and_at_most_one(ps: list[float]) -> None:
    adjusted = st.holm(ps)
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    for i in range(len(ps)):
        assert ps[i] <= adjusted[i] + 1e-15 <= 1.0 + 1e-12
    assert all(adjusted[order[k]] <= adjusted[order[k + 1]] + 1e-15 for k in range(len(ps) - 1))


@settings(max_examples=100, deadline=None)
@given(samples, samples)
def test_welch_summary_equals_sample_welch(a: list[float], b: list[float]) -> None:
    if np.std(a, ddof=1) == 0 or np.std(b, ddof=1) == 0:
        return
    expected = sps.ttest_ind(b, a, equal_var=False).pvalue
    got = st.welch_from_stats(np.mean(a), np.std(a, ddof=1), len(a), np.mean(b), np.std(b, ddof=1), len(b))
    assert got == pytest.approx(expected, rel=1e-6, abs=1e-12)


def test_min_detectable_effect_has_the_stated_power() -> None:
    """Simulate: a true difference equal to the MDE is detected in ≈80% of samples."""
    sd, n = 1.0, 10
    mde = st.min_detectable_effect(sd, n, sd, n)
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(2000):
        a, b = rng.normal(0, sd, n), rng.normal(mde, sd, n)
        hits += sps.ttest_ind(b, a, equal_var=False).pvalue < 0.05
    assert 0.75 < hits / 2000 < 0.85
