"""How many decimals a figure is printed with: the site's one precision rule.

**Figures in a metric's unit** (a mean, an interval's ends, an SD, a minimum and maximum, a
difference of means) are printed to the decimal place of the first significant digit of the
smallest spread that sits beside them: the smallest SD or interval half-width of the table (of
one metric) they stand in. Every figure of that metric in that table gets those decimals, so
a row's mean, interval and range read alike, and so do the rows above and below it:

    9.413   9.411 to 9.414   SD 0.003   9.405–9.422      (TPOT, ms: half-width 0.0015)
    2,544.6   2,543.5 to 2,545.6   SD 2.3                 (tok/s: half-width 0.96)

The last digit shown is the first one the data leave uncertain, so a mean is never printed
past its interval (2,544.55 tok/s ± 1.06 showed a digit the runs do not know), nor short of it
(9.41 beside 9.411 to 9.414 read as outside its interval). Two figures of a table that differ
by more than its smallest spread never print alike (rounding to a place no coarser than that
difference keeps them apart); a smaller difference than the runs can resolve may, and the
comparison's Δ % carries it. A table without a spread (one run, a published figure without an
SD, a constant) uses the metric's decimals from the catalog (:data:`sparkreport.metrics`). A
published figure is quoted with the decimals it was published with (up to the catalog's), even
where its interval would round it coarser: "119.79 (SD 0.17)", as the study wrote it.
Whole units at coarsest (never 2,540 for 2,544.6); at most :data:`MOST_PLACES` decimals.

**A difference in percent** (Δ %, a change) is printed with two decimals — hundredths of a
percentage point, 1/200 of the default ±2% equivalence margin it is read against — and its
interval's ends with the same: "+0.03 (-0.10 to +0.16)". Where a figure of the cell that is
not zero would print as ±0.00, the whole cell takes the decimals that show its first
significant digit: "+0.017 (+0.004 to +0.030)", never "+0.02 (+0.00 to +0.03)", which hides
that the interval excludes zero.

**A chart's tooltip** has one format per field (Vega-Lite's d3 format, :func:`tooltip_format`):
the decimals its table gives the field (a run's value and an arm's mean and interval: the
metric's table's), more for the whole field where a value that is not zero would print as zero.
The effects chart's Δ % and its ends are text the chart's data carries, printed here as the
effects table prints them (:func:`deltas`, effect by effect): a signed d3 format prints a
zero "+0.00" (and a value just below zero that it rounds away "−0.00").

**A spread in percent** (the coefficient of variation) is printed with two significant digits
(0.036%, 0.13%, 1.9%, 12%): a CV is read as a ratio of scales, not against a fixed margin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# The rules a claim's sentence shares with the pages live below both (sparkreport.figures);
# imported here as well, where the rest of the precision rule's callers look for them.
from sparkreport.figures import (
    MISSING,
    MOST_PLACES,
    digits_for,
    first_digit_place,
    given_places,
    half_width,
    is_missing,
    nonzero_places,
    places,
)
from sparkreport.figures import difference_places as difference_places

#: The decimals of a difference in percent (Δ %): hundredths of a percentage point.
DELTA_PLACES = 2
#: The most decimals a difference in percent takes to show a figure that is not zero.
MOST_DELTA_PLACES = 5
#: The significant digits of a spread in percent (CV).
SHARE_DIGITS = 2


def arm_spreads(arm: Mapping[Any, Any] | None) -> list[Any]:
    """An arm's (a statistics row's) spreads: its SD and its interval's half-width."""
    if not arm:
        return []
    return [arm.get("sd"), half_width(arm.get("ci_low"), arm.get("ci_high"))]


def table_places(arms: Iterable[Mapping[Any, Any] | None], metric: str | None = None) -> int:
    """The decimals of every figure of ``metric`` in a table of ``arms`` (statistics rows with
    ``sd``, ``ci_low`` and ``ci_high``; None for a cell without a figure): :func:`places` of
    their SDs and half-widths, else the metric's catalog decimals — and no fewer than a
    published arm's mean and SD were published with (up to the catalog's decimals): a study's
    119.79 tok/s (SD 0.17) is quoted as it was published, not as 119.8 (0.2)."""
    given = [arm for arm in arms if arm]
    catalog = digits_for(metric)
    count = places([s for arm in given for s in arm_spreads(arm)], catalog)
    quoted = [given_places(float(arm[key]), catalog) for arm in given if arm.get("source") == "published"
              for key in ("mean", "sd") if not is_missing(arm.get(key))]
    return max([count, *quoted])


def tooltip_format(values: Iterable[Any], count: int, most: int = MOST_PLACES) -> str:
    """The Vega-Lite (d3-format) format of a chart's figures that the pages print with ``count``
    decimals (a table's :func:`table_places`): one format for the field, as a table's column has
    one number of decimals, with more (up to ``most``) where one of ``values`` that is not zero
    would print as zero (:func:`nonzero_places`); thousands separated (",.2f"). Not for a signed
    figure: d3 prints a zero "+0.00" (the effects chart carries its Δ % as text, :func:`deltas`)."""
    return f",.{nonzero_places(values, count, most)}f"


def delta_places(values: Iterable[Any], base: int = DELTA_PLACES) -> int:
    """The decimals of a difference in percent and its interval's ends, printed together:
    ``base``, more (up to :data:`MOST_DELTA_PLACES`) until every one of them that is not zero
    prints as something other than zero (:func:`nonzero_places`)."""
    return nonzero_places(values, base, MOST_DELTA_PLACES)


def deltas(*values: Any) -> list[str]:
    """Differences in percent printed together (a Δ % and its interval's ends, or the ends of a
    span), signed, with one number of decimals (:func:`delta_places`): ``deltas(0.017, 0.004,
    0.03)`` → ``["+0.017", "+0.004", "+0.030"]``. Zero is "0.00"; a missing value is "—"."""
    count = delta_places(values)
    out = []
    for value in values:
        if is_missing(value):
            out.append(MISSING)
        elif float(value) == 0:
            out.append(f"{0:.{DELTA_PLACES}f}")
        else:
            out.append(f"{float(value):+.{count}f}")
    return out


def delta(value: Any) -> str:
    """One difference in percent (:func:`deltas` of it alone): "+0.03", "+0.001", "0.00"."""
    return deltas(value)[0]


def share(fraction: Any, digits: int = SHARE_DIGITS) -> str:
    """A spread as a percentage with ``digits`` significant digits: 0.00036 → "0.036%",
    0.0013 → "0.13%", 0.04 → "4.0%", 0.123 → "12%"; 0 → "0%"; "—" when missing."""
    if is_missing(fraction):
        return MISSING
    value = float(fraction) * 100
    if value == 0:
        return "0%"
    count = max(0, digits - 1 + first_digit_place(value))
    text = f"{value:.{count}f}"
    if count and first_digit_place(float(text)) != first_digit_place(value):  # 0.0996 → 0.100: one digit too many
        text = f"{value:.{count - 1}f}"
    return f"{text}%"

