"""The fast paths of the analysis against the straightforward formulas they replace, value for value.

Each helper here exists only to make the analysis fast at thousands of runs; none may change a
figure. So the comparisons are exact (NaN equals NaN), not approximate.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst
from scipy import stats as sps

from sparkreport.analysis import statistics as st
from sparkreport.analysis.arms import ARM_KEYS, arm_rows, design_labels

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

measurements = hst.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
#: Values as the run store holds them, including the odd NaN and infinity describe() drops.
raw_values = hst.one_of(measurements, hst.sampled_from([math.nan, math.inf, -math.inf, 0.0]))
samples = hst.lists(raw_values, max_size=25)
#: Few distinct values, so that ties (and all-equal samples) are common.
tied_values = hst.integers(min_value=0, max_value=4).map(float)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def same_describe(a: st.Describe, b: st.Describe) -> bool:
    return all(same(float(x), float(y)) for x, y in zip(a.__dict__.values(), b.__dict__.values(), strict=True))


@SETTINGS
@given(hst.lists(samples, max_size=12), hst.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_describe_many_is_describe_of_each_sample(many: list[list[float]], confidence: float) -> None:
    fast = st.describe_many(many, confidence)
    assert len(fast) == len(many)
    for sample, d in zip(many, fast, strict=True):
        assert same_describe(d, st.describe(sample, confidence)), sample


def test_describe_many_of_equal_sizes_stacks_them() -> None:
    rng = np.random.default_rng(1)
    many = [rng.lognormal(4, 2, size) for size in (10, 10, 10, 9, 10, 200, 200, 1)]
    for sample, d in zip(many, st.describe_many(many), strict=True):
        assert same_describe(d, st.describe(sample))


@SETTINGS
@given(hst.lists(hst.integers(min_value=1, max_value=500), max_size=10), hst.floats(min_value=0.5, max_value=0.999))
def test_t_quantiles_are_scipys(sizes: list[int], confidence: float) -> None:
    quantiles = st.t_quantiles(sizes, confidence)
    assert set(quantiles) == {n for n in sizes if n >= 2}
    for n, q in quantiles.items():
        assert q == float(sps.t.ppf(0.5 + confidence / 2, n - 1))


@SETTINGS
@given(hst.one_of(hst.floats(min_value=-50, max_value=50), hst.floats()),
       hst.one_of(hst.floats(min_value=0.5, max_value=1e4), hst.floats()),
       hst.one_of(hst.floats(min_value=0.0, max_value=1.0), hst.floats()))
def test_t_functions_are_scipy_stats_t(x: float, df: float, q: float) -> None:
    assert same(st._t_sf(x, df), float(sps.t.sf(x, df)))
    assert same(st._t_cdf(x, df), float(sps.t.cdf(x, df)))
    assert same(st._t_ppf(q, df), float(sps.t.ppf(q, df)))


pairs = hst.tuples(hst.lists(hst.one_of(measurements, tied_values), max_size=14),
                   hst.lists(hst.one_of(measurements, tied_values), max_size=14))


@SETTINGS
@given(hst.lists(pairs, max_size=10))
def test_mann_whitney_many_is_mann_whitney_of_each_pair(many: list[tuple[list[float], list[float]]]) -> None:
    fast = st.mann_whitney_many(many)
    for (a, b), p in zip(many, fast, strict=True):
        assert same(p, st.mann_whitney(a, b)), (a, b)


def scipy_mann_whitney(a: list[float], b: list[float]) -> float:
    """What ``mann_whitney`` returned when it called scipy.stats (before its own U test)."""
    if len(a) < 2 or len(b) < 2:
        return math.nan
    if len(set(a) | set(b)) == 1:
        return 1.0
    return float(sps.mannwhitneyu(b, a, alternative="two-sided").pvalue)


@SETTINGS
@given(hst.lists(pairs, max_size=10))
def test_mann_whitney_is_scipy_stats(many: list[tuple[list[float], list[float]]]) -> None:
    """Value for value, exact and approximate, with and without ties, one by one and batched."""
    for (a, b), p in zip(many, st.mann_whitney_many(many), strict=True):
        expected = scipy_mann_whitney(a, b)
        assert same(st.mann_whitney(a, b), expected), (a, b)
        assert same(p, expected), (a, b)


def test_mann_whitney_is_scipy_stats_at_the_method_edges() -> None:
    """Sizes where scipy switches between the exact test and the normal approximation (a side of
    8 against 9), a small side against a large one (exact, hundreds of U values) and NaN."""
    rng = np.random.default_rng(3)
    for n1, n2 in [(8, 8), (8, 9), (9, 9), (2, 60), (3, 200), (9, 40), (5, 5)]:
        for _ in range(5):
            a, b = rng.normal(0, 1, n1).tolist(), rng.normal(0.5, 1, n2).tolist()
            assert same(st.mann_whitney(a, b), scipy_mann_whitney(a, b)), (n1, n2)
            rounded = ([round(v) for v in a], [round(v) for v in b])  # ties
            assert same(st.mann_whitney(*rounded), scipy_mann_whitney(*rounded)), (n1, n2)
    with_nan = ([1.0, math.nan, 3.0], [4.0, 5.0, 6.0])
    assert math.isnan(st.mann_whitney(*with_nan))
    assert math.isnan(float(sps.mannwhitneyu(with_nan[1], with_nan[0]).pvalue))


def test_mann_whitney_many_keeps_exact_and_tied_pairs_apart() -> None:
    """Same sizes, one pair with ties: the untied pair keeps scipy's exact test in the batch."""
    untied = ([1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0])
    tied = ([1.0, 1.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 9.0])
    fast = st.mann_whitney_many([untied, tied])
    assert fast == [st.mann_whitney(*untied), st.mann_whitney(*tied)]
    assert fast[0] == float(sps.mannwhitneyu(untied[1], untied[0], method="exact").pvalue)
    assert fast[1] == float(sps.mannwhitneyu(tied[1], tied[0], method="asymptotic").pvalue)


def test_mann_whitney_many_of_degenerate_pairs() -> None:
    many = [([1.0, math.nan, 3.0], [4.0, 5.0, 6.0]), ([2.0, 2.0], [2.0, 2.0]), ([1.0], [2.0, 3.0])]
    for (a, b), p in zip(many, st.mann_whitney_many(many), strict=True):
        assert same(p, st.mann_whitney(a, b))


def bootstrap_as_written(a: list[float], b: list[float], seed: int, resamples: int) -> tuple[float, float]:
    """The bootstrap with a fresh generator per call, as it was written before the draws were cached."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    mx = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    my = y[rng.integers(0, y.size, size=(resamples, y.size))].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratios = my / mx
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return math.nan, math.nan
    tail = (1 - 0.95) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


@SETTINGS
@given(hst.lists(hst.tuples(hst.lists(measurements, min_size=2, max_size=12),
                            hst.lists(measurements, min_size=2, max_size=12)), min_size=1, max_size=4),
       hst.integers(min_value=0, max_value=3))
def test_bootstrap_with_cached_draws_is_the_bootstrap(many: list[tuple[list[float], list[float]]], seed: int) -> None:
    for a, b in many:  # several pairs of the same sizes reuse the draws
        fast = st.bootstrap_ratio_ci(a, b, seed=seed, resamples=500)
        slow = bootstrap_as_written(a, b, seed, 500)
        assert same(fast[0], slow[0]) and same(fast[1], slow[1])


def runs_table(draw: hst.DrawFn) -> pd.DataFrame:
    size = draw(hst.integers(min_value=0, max_value=30))
    text = hst.one_of(hst.sampled_from(["a", "b", "c"]), hst.none())
    columns = {key: draw(hst.lists(text, min_size=size, max_size=size)) for key in ARM_KEYS}
    columns["label.cache"] = draw(hst.lists(text, min_size=size, max_size=size))
    columns["label.plan"] = [str(i) for i in range(size)]
    # the store's text columns ("str": missing is NaN) and pandas' other text dtype (missing is NA)
    frame = pd.DataFrame(columns, dtype=draw(hst.sampled_from(["str", "string"])))
    shuffled = draw(hst.permutations(list(range(size))))
    return frame.iloc[shuffled]  # an index that is not 0..n-1


def same_key(a: object, b: object) -> bool:
    """Two arm keys' values, each the same value of the same type (a missing value as the column's)."""
    if a is pd.NA or b is pd.NA:
        return a is b
    return type(a) is type(b) and (a == b or (a != a and b != b))


@SETTINGS
@given(hst.composite(runs_table)(), hst.booleans(),
       hst.lists(hst.sampled_from([*ARM_KEYS, "label.cache", "label.plan"]), min_size=1, max_size=4, unique=True))
def test_arm_rows_are_the_groupby_groups(runs: pd.DataFrame, dropna: bool, keys: list[str]) -> None:
    expected = [(arm, runs.index.get_indexer(group.index).tolist())
                for arm, group in runs.groupby(keys, dropna=dropna, sort=True)]
    got = [(arm, positions.tolist()) for arm, positions in arm_rows(runs, keys, dropna=dropna)]
    assert len(got) == len(expected)
    for (arm, rows), (expected_arm, expected_rows) in zip(got, expected, strict=True):
        assert isinstance(arm, tuple) and len(arm) == len(expected_arm)
        assert all(same_key(a, b) for a, b in zip(arm, expected_arm, strict=True)), (arm, expected_arm)
        assert rows == expected_rows


@SETTINGS
@given(hst.composite(runs_table)())
def test_design_labels_as_defined(runs: pd.DataFrame) -> None:
    """A label that varies inside an arm is a factor unless, in the campaigns where it varies,
    each of its values belongs to one run (it names runs)."""
    expected = []
    for column in (c for c in runs.columns if c.startswith("label.")):
        varying = [(arm, group) for arm, group in runs.groupby(ARM_KEYS)
                   if group[column].nunique(dropna=True) > 1]
        if not varying:
            continue
        if any(group[column].nunique(dropna=True) < len(group) for _arm, group in varying):
            expected.append(column)
            continue
        campaigns = {arm[0] for arm, _group in varying}
        named = [(c, v) for c, v in zip(runs["campaign"], runs[column], strict=True)
                 if c in campaigns and not pd.isna(v)]
        if len(set(named)) < len(named):
            expected.append(column)
    assert design_labels(runs) == expected


@SETTINGS
@given(sizes=hst.lists(hst.integers(min_value=0, max_value=2000), max_size=30),
       confidence=hst.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.999]))
def test_t_quantiles_are_scipy_stats_values(sizes: list[int], confidence: float) -> None:
    quantiles = st.t_quantiles(sizes, confidence)
    assert set(quantiles) == {n for n in sizes if n >= 2}
    for n, q in quantiles.items():
        assert q == float(sps.t.ppf(0.5 + confidence / 2, n - 1))
        assert st.t_interval(3.0, 0.7, n, confidence) == st.t_interval(3.0, 0.7, n, confidence, q)


def test_the_analysis_imports_without_scipy_stats() -> None:
    """scipy.stats takes over a second to import; a rebuild from the cache does not need it."""
    import subprocess
    import sys

    code = "import sys, sparkreport.analysis, sparkreport.render; print('scipy.stats' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _same_cell(a: object, b: object) -> bool:
    """Equal and of the same type; NaN, NaT and NA each equal only themselves."""
    if type(a) is not type(b):
        return False
    if a is pd.NA or a is pd.NaT or b is pd.NA or b is pd.NaT:
        return a is b
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return bool(a == b)


#: A column of each kind the dataset and the analysis tables hold, with missing cells.
_COLUMN_KINDS = {
    "Int64": lambda vals: pd.array([None if v is None else int(v) for v in vals], dtype="Int64"),
    "Float64": lambda vals: pd.array(vals, dtype="Float64"),
    "boolean": lambda vals: pd.array([None if v is None else v > 0 for v in vals], dtype="boolean"),
    "string": lambda vals: pd.array([None if v is None else f"s{v}" for v in vals], dtype="string"),
    "object": lambda vals: pd.Series([None if v is None else (np.float64(v) if v > 0 else f"o{v}")
                                      for v in vals], dtype=object),
    "float64": lambda vals: np.array([math.nan if v is None else v for v in vals], dtype="float64"),
    "int64": lambda vals: np.array([0 if v is None else int(v) for v in vals], dtype="int64"),
    "bool": lambda vals: np.array([v is not None and v > 0 for v in vals]),
    "datetime": lambda vals: pd.to_datetime([None if v is None else int(v) for v in vals], unit="s"),
    "category": lambda vals: pd.Categorical([None if v is None else f"c{int(v) % 3}" for v in vals]),
}


def _assert_same_rows(got: list[dict[Any, Any]], expected: list[dict[Any, Any]]) -> None:
    """The same rows: the same keys in the same order, every cell :func:`_same_cell`."""
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):
        assert list(row) == list(want)
        assert all(_same_cell(row[key], want[key]) for key in want), (row, want)


@SETTINGS
@given(cells=hst.lists(hst.one_of(hst.none(), hst.integers(min_value=-5, max_value=5).map(float)), max_size=12),
       kinds=hst.lists(hst.sampled_from(sorted(_COLUMN_KINDS)), max_size=6))
def test_frame_records_are_pandas_records_cell_for_cell(cells: list[float | None], kinds: list[str]) -> None:
    """``frame_records`` reads a frame column by column; its rows are ``to_dict(orient="records")``'s,
    every cell of the same value and type (NA as None, numpy scalars as Python's)."""
    from sparkreport.dataset import frame_records

    frame = pd.DataFrame({f"{kind}{i}": _COLUMN_KINDS[kind](cells) for i, kind in enumerate(kinds)},
                         index=range(len(cells)))
    _assert_same_rows(frame_records(frame), frame.to_dict(orient="records"))


@SETTINGS
@given(cells=hst.lists(hst.one_of(hst.none(), hst.integers(min_value=-5, max_value=5).map(float),
                                  hst.sampled_from([math.inf, -math.inf])), max_size=12),
       kinds=hst.lists(hst.sampled_from(sorted(_COLUMN_KINDS)), max_size=6))
def test_frame_rows_are_plain_of_each_record_cell(cells: list[float | None], kinds: list[str]) -> None:
    """``frame_rows`` makes its plain values a column at a time; each row is ``plain`` of every
    cell of the pandas record, key as text (NaN, ±inf and NA as None, numpy scalars as Python's)."""
    from sparkreport.dataset import frame_rows, plain

    made = {kind: _COLUMN_KINDS[kind]([None if c is not None and math.isinf(c) and kind not in ("float64", "Float64",
                                                                                                  "object") else c
                                        for c in cells]) for kind in kinds}
    frame = pd.DataFrame({f"{kind}{i}": made[kind] for i, kind in enumerate(kinds)}, index=range(len(cells)))
    _assert_same_rows(frame_rows(frame),
                      [{str(k): plain(v) for k, v in record.items()} for record in frame.to_dict(orient="records")])


@SETTINGS
@given(pieces=hst.lists(hst.lists(hst.one_of(hst.none(), hst.integers(min_value=-5, max_value=5).map(float)),
                                  min_size=1, max_size=5), min_size=1, max_size=4),
       kinds=hst.lists(hst.sampled_from(sorted(_COLUMN_KINDS)), min_size=1, max_size=5))
def test_one_chunk_joins_each_text_column_and_changes_no_value(pieces: list[list[float | None]],
                                                              kinds: list[str]) -> None:
    """A stack of frames holds a text column in a chunk a frame; ``one_chunk`` joins them: the
    same frame (values, types, missing values), each Arrow-backed column in one chunk."""
    from sparkreport.dataset import one_chunk

    frames = [pd.DataFrame({f"{kind}{i}": _COLUMN_KINDS[kind](cells) for i, kind in enumerate(kinds)})
              for cells in pieces]
    stacked = pd.concat(frames, ignore_index=True)
    joined = one_chunk(stacked.copy())
    pd.testing.assert_frame_equal(joined, stacked)
    for column in joined.columns:
        if isinstance(joined[column].array, pd.arrays.ArrowExtensionArray):
            assert joined[column].array.__arrow_array__().num_chunks == 1
