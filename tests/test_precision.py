"""The site's precision rule (``sparkreport/render/precision.py``): how many decimals a figure gets.

Property tests over arms made of random runs: the figures of one metric's table share their
decimals, a mean stays inside its printed interval, a difference larger than the table's spread
always shows; differences in percent share decimals and never print a value that is not zero as
zero; a CV has two significant digits.
"""

from __future__ import annotations

import math
from dataclasses import asdict

from hypothesis import assume, given, settings
from hypothesis import strategies as hst

from sparkreport.analysis.statistics import describe
from sparkreport.render.markdown import num
from sparkreport.render.precision import (
    MOST_PLACES,
    delta_places,
    deltas,
    difference_places,
    first_digit_place,
    places,
    share,
    table_places,
)


def decimals(text: str) -> int:
    """How many decimals a printed figure has."""
    return len(text.split(".")[1]) if "." in text else 0


def value(text: str) -> float:
    return float(text.replace(",", ""))


#: An arm of runs: a level (a throughput of 0.5 to 50,000, a latency…), its runs spread by a
#: relative noise of 0.001% to 20% (hypothesis shrinks towards identical runs and tiny spreads).
levels = hst.floats(min_value=0.5, max_value=50_000)
noise = hst.lists(hst.floats(min_value=-1, max_value=1), min_size=2, max_size=20)
relative = hst.floats(min_value=1e-5, max_value=0.2)


def arm(level: float, scale: float, offsets: list[float]) -> dict[str, float]:
    return asdict(describe([level * (1 + scale * o) for o in offsets]))


arms = hst.builds(arm, levels, relative, noise)


def row_figures(a: dict[str, float], d: int) -> list[str]:
    """A Results row's figures in the metric's unit, as the page prints them."""
    return [num(a[key], digits=d) for key in ("mean", "ci_low", "ci_high", "sd", "min", "max")]


def spread_of(a: dict[str, float]) -> float:
    return min(a["sd"], (a["ci_high"] - a["ci_low"]) / 2)


@settings(max_examples=300, deadline=None)
@given(hst.lists(arms, min_size=1, max_size=4))
def test_a_tables_figures_share_the_decimals_of_its_smallest_spread(table: list[dict[str, float]]) -> None:
    """Mean, interval, SD, minimum and maximum of every row of a metric's table: one number of
    decimals — the place of the first significant digit of its smallest SD or half-width."""
    assume(all(a["sd"] > 0 for a in table))
    d = table_places(table, "output_throughput_tok_s")
    smallest = min(spread_of(a) for a in table)
    assume(smallest >= 10 ** -MOST_PLACES)
    assert d == max(0, first_digit_place(smallest))
    printed = [text for a in table for text in row_figures(a, d)]
    assert {decimals(text) for text in printed} == {d}, printed
    # the last digit shown is the first one the runs leave uncertain: the smallest spread shows
    # one significant digit or more, never 0
    assert value(num(smallest, digits=d)) > 0


@settings(max_examples=300, deadline=None)
@given(hst.lists(arms, min_size=1, max_size=4))
def test_a_mean_is_printed_inside_its_interval_and_the_ends_apart(table: list[dict[str, float]]) -> None:
    assume(all(a["sd"] > 0 for a in table))
    assume(min(spread_of(a) for a in table) >= 10 ** -MOST_PLACES)
    d = table_places(table, "tpot_ms_mean")
    for a in table:
        mean, low, high = (value(num(a[key], digits=d)) for key in ("mean", "ci_low", "ci_high"))
        assert low <= mean <= high
        assert low < high  # an interval that is not a point never reads as one ("9.41 to 9.41")
        assert value(num(a["min"], digits=d)) <= mean <= value(num(a["max"], digits=d))


@settings(max_examples=300, deadline=None)
@given(hst.lists(arms, min_size=2, max_size=4))
def test_means_further_apart_than_the_tables_spread_never_print_alike(table: list[dict[str, float]]) -> None:
    """A difference the table can resolve always shows; one below its resolution may not (the
    Δ % column carries it)."""
    assume(all(a["sd"] > 0 for a in table))
    smallest = min(spread_of(a) for a in table)
    assume(smallest >= 10 ** -MOST_PLACES)
    d = table_places(table, "ttft_ms_mean")
    for first in table:
        for second in table:
            if abs(first["mean"] - second["mean"]) > smallest:
                assert num(first["mean"], digits=d) != num(second["mean"], digits=d)


def test_the_examples_the_methodology_page_gives() -> None:
    """The defects this rule replaced, from the H100 control's Llama-3-8B page."""
    tpot = [{"sd": 0.0034, "ci_low": 9.41121, "ci_high": 9.41439},
            {"sd": 0.0018, "ci_low": 9.41025, "ci_high": 9.41195}]
    d = table_places(tpot, "tpot_ms_mean")
    assert d == 4 and num(9.41280, digits=d) == "9.4128" and num(9.4070, digits=d) == "9.4070"
    # request throughput: 3 decimals from its spread (19.885), not the catalog's 4 (19.8850)
    assert table_places([{"sd": 0.0162, "ci_low": 19.8774, "ci_high": 19.8925}], "request_throughput_req_s") == 3
    # no spread: the catalog's decimals
    assert table_places([{"sd": 0.0, "ci_low": 76.02, "ci_high": 76.02}], "peak_memory_gib") == 2
    assert table_places([None, {"sd": None, "ci_low": None, "ci_high": None}], "start_temp_c") == 1
    # whole units at coarsest, six decimals at most
    assert places([250.0], 2) == 0 and places([1e-9], 2) == MOST_PLACES


@settings(max_examples=500, deadline=None)
@given(hst.lists(hst.one_of(hst.none(), hst.floats(min_value=-80, max_value=80)), min_size=1, max_size=3))
def test_differences_in_percent_share_decimals_and_never_print_a_difference_as_zero(values: list[float | None]) -> None:
    printed = deltas(*values)
    count = delta_places(values)
    for number, text in zip(values, printed, strict=True):
        if number is None:
            assert text == "—"
        elif number == 0:
            assert text == "0.00"
        else:
            assert text[0] in "+-" and decimals(text) == count
            if abs(number) >= 10 ** -5:
                assert value(text) != 0 and math.copysign(1, value(text)) == math.copysign(1, number)
    assert count == 2 or any(number is not None and 0 < abs(number) < 0.005 for number in values)


def test_a_delta_cell_is_printed_with_one_number_of_decimals() -> None:
    assert deltas(0.0175, 0.0041, 0.0328) == ["+0.018", "+0.004", "+0.033"]  # not +0.02 (+0.004 to +0.03)
    assert deltas(-0.03, -0.10, 0.04) == ["-0.03", "-0.10", "+0.04"]
    assert deltas(43.75) == ["+43.75"] and deltas(0.0, None) == ["0.00", "—"]


@settings(max_examples=500, deadline=None)
@given(hst.floats(min_value=1e-7, max_value=0.99))  # below 99.5%: 100% has three
def test_a_cv_has_two_significant_digits(fraction: float) -> None:
    text = share(fraction)
    assert text.endswith("%")
    digits = text[:-1].replace(".", "").lstrip("0")
    assert len(digits) == 2, text
    assert abs(value(text[:-1]) - fraction * 100) <= 0.05 * fraction * 100 + 1e-12


def test_cv_examples() -> None:
    assert [share(x) for x in (0.00036, 0.0013, 0.04, 0.123, 0.000996, 0)] == [
        "0.036%", "0.13%", "4.0%", "12%", "0.10%", "0%"]


def test_a_comparison_sentence_prints_its_figures_with_the_differences_decimals() -> None:
    """compare's sentence: the decimals of the difference's interval, more where an end would
    print as zero (-0.81 to 0.03, not -0.8 to 0.0)."""
    row = {"metric": "output_throughput_tok_s", "mean_candidate": 120.41, "mean_baseline": 120.26,
           "diff_ci_low": -0.30, "diff_ci_high": 0.60}
    assert difference_places(row) == 1
    assert difference_places({**row, "mean_candidate": 119.40, "mean_baseline": 119.79, "diff_ci_low": -0.81,
                              "diff_ci_high": 0.03}) == 2
    assert difference_places({**row, "diff_ci_low": None, "diff_ci_high": None}) == 2  # the catalog's


def test_two_means_that_differ_never_print_alike() -> None:
    """"2,414 vs 2,414 ms; a difference of 1 ms" read as a slip: where the interval's decimals
    print two different means alike, the sentence gives as many more as tell them apart."""
    from sparkreport.analysis.claims import claim_sentence

    row = {"metric": "request_latency_mean_ms", "unit": "ms", "model": "m", "candidate": "docker",
           "baseline": "native", "mean_candidate": 2414.4, "mean_baseline": 2413.6, "diff_ci_low": -3.1,
           "diff_ci_high": 4.7, "verdict": "no difference", "p_holm": 0.62, "margin": 120.0,
           "min_detectable_effect": 9.0}
    assert difference_places(row) == 1
    assert "(2,414.4 vs 2,413.6 ms, Holm-adjusted p = 0.620" in claim_sentence(row)
    assert difference_places({**row, "mean_candidate": 2413.6}) == 0  # equal means: nothing to tell apart
    assert difference_places({**row, "mean_candidate": 2418.4}) == 0  # 2,418 vs 2,414 already differ


@settings(max_examples=300, deadline=None)
@given(hst.floats(-1e6, 1e6), hst.floats(-1e6, 1e6), hst.floats(0, 1e4))
def test_difference_places_tells_different_means_apart(candidate: float, baseline: float, half: float) -> None:
    """Whatever the interval: two means that differ print differently, unless it takes more than
    the most decimals a figure gets."""
    from sparkreport.figures import MOST_PLACES

    candidate, baseline = candidate + 0.0, baseline + 0.0  # -0.0 is 0.0 (and would print "-0")
    diff = candidate - baseline
    row = {"metric": "request_latency_mean_ms", "mean_candidate": candidate, "mean_baseline": baseline,
           "diff_ci_low": diff - half, "diff_ci_high": diff + half}
    places = difference_places(row)
    assume(places < MOST_PLACES)
    assert (f"{candidate:.{places}f}" != f"{baseline:.{places}f}") == (candidate != baseline)


def test_a_published_figure_is_quoted_with_its_own_decimals() -> None:
    """The Phase 1 study published 119.79 tok/s with SD 0.17: its half-width alone would print it
    119.8 (0.2); a page of published figures quotes them as published, never coarser."""
    from sparkreport.figures import given_places
    from sparkreport.render.precision import table_places

    assert [given_places(v, 2) for v in (119.79, 0.2, 64.0, 0.1234)] == [2, 1, 0, 2]
    native = {"mean": 119.79, "sd": 0.58, "ci_low": 119.38, "ci_high": 120.20, "source": "published"}
    container = {"mean": 119.4, "sd": 0.17, "ci_low": 119.28, "ci_high": 119.52, "source": "published"}
    assert table_places([native, container], "output_throughput_tok_s") == 2
    measured = {**container, "source": "runs"}
    assert table_places([{**native, "source": "runs"}, measured], "output_throughput_tok_s") == 1


def test_a_half_is_not_printed_as_zero() -> None:
    """A mean of 0.5 failed requests (one of two runs failed one request) printed "0": Python
    rounds half to even, and the test for "would round to zero" was ``< 0.5``. It prints 0.5."""
    assert [num(0.5, "failed_requests"), num(-0.5, digits=0), num(0.0, digits=2)] == ["0.5", "-0.5", "0.00"]
