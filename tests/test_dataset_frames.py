"""A campaign's runs table made column by column from its rows (``dataset._typed_rows``) is the
table the frame of objects and its astype give (``dataset._typed_runs``): the same columns,
order, types, values and missing cells — or, where a value is not the plain kind its column
takes, the astype decides (``_typed_rows`` says None)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

from sparkreport import dataset

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Columns of each type the rows may hold (a run column, a core metric, another metric, labels).
FLOATS = ["memory_pool_gib", "output_throughput_tok_s", "ttft_p50_ms"]
INTS = ["iteration", "exit_code"]
BOOLEANS = ["ok"]
TEXTS = ["run_id", "campaign", "label.version", "label.cache"]

numbers = hst.one_of(hst.none(), hst.integers(-2**40, 2**40),
                     hst.floats(allow_nan=True, allow_infinity=True, width=64))
VALUES = {
    **dict.fromkeys(FLOATS, numbers),
    **dict.fromkeys(INTS, hst.one_of(hst.none(), hst.integers(-1000, 1000))),
    **dict.fromkeys(BOOLEANS, hst.one_of(hst.none(), hst.booleans())),
    **dict.fromkeys(TEXTS, hst.one_of(hst.none(), hst.text(max_size=5))),
}
#: What breaks a column's plain kind: a bool among numbers, a number among text.
ODD = hst.sampled_from([("output_throughput_tok_s", True), ("label.version", 3), ("iteration", 2.5)])


@hst.composite
def run_rows(draw: hst.DrawFn) -> list[dict[str, object]]:
    rows = []
    for _ in range(draw(hst.integers(min_value=1, max_value=8))):
        present = draw(hst.lists(hst.sampled_from(list(VALUES)), unique=True))
        rows.append({column: draw(VALUES[column]) for column in present})
    if draw(hst.booleans()) and draw(hst.integers(0, 4)) == 0:
        column, value = draw(ODD)
        rows[0][column] = value
    return rows


def assert_same_table(made: pd.DataFrame, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(made, expected, check_exact=True)
    assert list(made.dtypes) == list(expected.dtypes)
    for column in expected.columns:
        got, want = made[column].array, expected[column].array
        assert type(got) is type(want), column
        if hasattr(want, "_mask"):  # a masked array's values under its mask too: what hashing reads
            assert np.array_equal(got._mask, want._mask)
            assert np.array_equal(got._data, want._data, equal_nan=True), column


@SETTINGS
@given(run_rows())
def test_typed_rows_is_the_typed_frame_of_the_rows(rows: list[dict[str, object]]) -> None:
    made = dataset._typed_rows(rows)
    kinds = {column: {type(row.get(column)) for row in rows} for column in VALUES}
    odd = any(bool in kinds[c] for c in FLOATS + INTS) or any(float in kinds[c] for c in INTS) \
        or any(kinds[c] - {str, type(None)} for c in TEXTS)
    if odd:
        assert made is None  # the astype's own conversions decide
        return
    assert made is not None
    assert_same_table(made, dataset._typed_runs(pd.DataFrame(rows)))


def test_typed_rows_keeps_missing_and_not_a_number_apart_as_the_astype_does() -> None:
    rows: list[dict[str, object]] = [{"run_id": "a", "output_throughput_tok_s": math.nan},
                                     {"run_id": "b", "output_throughput_tok_s": 1}, {"run_id": "c"}]
    made = dataset._typed_rows(rows)
    assert made is not None
    assert_same_table(made, dataset._typed_runs(pd.DataFrame(rows)))
    assert dataset._typed_rows([]) is None
