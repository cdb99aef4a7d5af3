"""How a figure is written, wherever it is written: the rules the analysis's sentences and the
pages share.

The analysis (a claim's sentence) and the pages print the same comparison and the same p-value,
so they print them by one rule, kept here, below both: nothing under ``sparkreport/analysis``
imports :mod:`sparkreport.render`. The site's whole precision rule, of which these are the
parts a sentence needs, is described in :mod:`sparkreport.render.precision`; how a page marks
a figure up (Markdown, HTML) stays in :mod:`sparkreport.render.markdown`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from sparkreport import metrics as metric_catalog

#: What a page or a sentence prints for a figure that is missing.
MISSING = "—"
#: The most decimals a figure in a metric's unit gets (a spread of a millionth of the unit).
MOST_PLACES = 6
#: The smallest p-value printed as a number: three decimals show it, a smaller one is
#: :data:`BELOW_FLOOR`.
P_FLOOR = 0.001
#: A p-value below :data:`P_FLOOR`, after a no-break space, which a narrow table column would
#: otherwise break ('<' above '0.001').
BELOW_FLOOR = "<\u00a00.001"


def given_places(value: float, most: int) -> int:
    """The decimals ``value`` was given with (119.79 → 2, 0.2 → 1, 64.0 → 0), at most ``most``."""
    return next((d for d in range(most + 1) if math.isclose(round(value, d), value, rel_tol=1e-12, abs_tol=1e-12)),
                most)


def figure(value: float, places: int) -> str:
    """``value`` with ``places`` decimals and thousands separators — the pages' and the facts' one
    way to print a number; one that is not zero but would print as zero (0.002 at two decimals,
    0.5 at none: Python rounds half to even) gets two significant digits instead."""
    if value and float(f"{value:.{places}f}") == 0:
        return f"{value:.2g}"
    return f"{value:,.{places}f}"


def is_missing(value: Any) -> bool:
    """True for None, NaN and pandas NA."""
    if value is None:
        return True
    try:
        return bool(value != value) or (isinstance(value, float) and not math.isfinite(value))
    except (TypeError, ValueError):
        return True


def digits_for(metric: str | None) -> int:
    """Decimals a metric is shown with (from the metric catalog; 2 by default)."""
    entry = metric_catalog.lookup(metric) if metric else None
    return entry.digits if entry else 2


def num(value: Any, metric: str | None = None, digits: int | None = None) -> str:
    """A number with the metric's catalog decimals (:func:`digits_for`) or ``digits``, and
    thousands separators ('—' when missing); a value that would round to zero without being zero
    gets two significant digits (0.0021) — how a page prints a figure with no spread beside it,
    and how a finding's sentence quotes one. A record holds a float, which cannot tell a source's
    119.40 from 119.4: the catalog's two decimals quote the Phase 1 study's "119.40 tok/s" as it
    printed it, as the Results tables and the posts do."""
    if is_missing(value):
        return MISSING
    return figure(float(value), digits if digits is not None else digits_for(metric))


def first_digit_place(value: float) -> int:
    """The decimal place of ``value``'s first significant digit: 0.0034 → 3, 0.96 → 1, 2.27 → 0,
    12.5 → -1 (``value`` not zero)."""
    return -math.floor(math.log10(abs(value)))


def half_width(low: Any, high: Any) -> float | None:
    """An interval's half-width (None when an end is missing)."""
    if is_missing(low) or is_missing(high):
        return None
    return (float(high) - float(low)) / 2


def places(spreads: Iterable[Any], fallback: int) -> int:
    """The decimals of a table's figures in a metric's unit: the place of the first significant
    digit of the smallest of ``spreads`` (SDs and interval half-widths; missing ones and zeros
    are no spread), between 0 and :data:`MOST_PLACES`; ``fallback`` when none is a spread."""
    found = [abs(float(s)) for s in spreads if not is_missing(s) and float(s) != 0]
    if not found:
        return fallback
    return min(MOST_PLACES, max(0, max(first_digit_place(s) for s in found)))


def nonzero_places(values: Iterable[Any], count: int, most: int = MOST_PLACES) -> int:
    """``count`` decimals, or more (up to ``most``) until every one of ``values`` that is not zero
    prints as something other than zero: figures printed together (a difference and its
    interval's ends) keep one number of decimals, and an end just above zero says so."""
    found = [abs(float(v)) for v in values if not is_missing(v) and float(v) != 0]
    for more in range(count, max(count, most) + 1):
        if all(round(v, more) != 0 for v in found):
            return more
    return max(count, most)


def difference_places(row: Mapping[Any, Any]) -> int:
    """The decimals of a comparison's figures in the metric's unit printed together (the two
    means, their difference and its interval, as a sentence or a post's table gives them): the
    place of the first significant digit of the difference's interval half-width (the metric's
    catalog decimals without one), more where the difference or an end of its interval would
    otherwise print as zero (:func:`nonzero_places`), and more where two means that differ would
    print alike ("2,414 vs 2,414 ms; a difference of 1 ms" reads as a slip: "2,414.4 vs 2,413.6
    ms; a difference of 0.8 ms"). ``row``: a ``compare`` row."""
    low, high = row.get("diff_ci_low"), row.get("diff_ci_high")
    count = places([half_width(low, high)], digits_for(str(row.get("metric") or "")))
    if is_missing(row.get("mean_candidate")) or is_missing(row.get("mean_baseline")):
        return nonzero_places([low, high], count)
    candidate, baseline = float(row["mean_candidate"]), float(row["mean_baseline"])
    count = nonzero_places([candidate - baseline, low, high], count)
    while candidate != baseline and count < MOST_PLACES and f"{candidate:.{count}f}" == f"{baseline:.{count}f}":
        count += 1
    return count


def pvalue(p: Any) -> str:
    """A p-value as every page, sentence and the pull-request comment write it: three decimals
    ('0.034'), and :data:`BELOW_FLOOR` ('< 0.001') below :data:`P_FLOOR` — a p-value is never 0,
    and four decimals would print a tiny one as '0.0000' (APA style); '—' when the test was not
    possible. ``--json`` keeps every digit. A page prints it through
    :func:`sparkreport.render.markdown.pvalue`, which keeps the no-break space from its escaping."""
    if is_missing(p):
        return MISSING
    return BELOW_FLOOR if float(p) < P_FLOOR else f"{float(p):.3f}"
