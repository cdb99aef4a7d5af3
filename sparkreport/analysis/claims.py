"""Sentences from statistical results: only what the numbers support.

"equivalent" is written only when TOST passed against the project's margin
(``analysis.equivalence_margin``, not one declared in advance by a study); a difference is called
higher/lower only when the Holm-adjusted p-value says so; everything else is "no significant
difference detected", which is not a claim of sameness.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from sparkreport import metrics as metric_catalog
from sparkreport.analysis.checks import Finding, check_titles
from sparkreport.figures import difference_places, pvalue


def _num(value: Any) -> float:
    """A float from a number, None or NaN (None → NaN), so rows from JSON or pandas both work."""
    try:
        return float(value) if value is not None else float("nan")
    except (TypeError, ValueError):
        return float("nan")


def fmt(value: Any, digits: int = 2) -> str:
    """A number for prose: fixed decimals, NaN or None as 'n/a'."""
    number = _num(value)
    if not math.isfinite(number):
        return "n/a"
    return f"{number:,.{digits}f}"


def _ci(low: float, high: float, digits: int, suffix: str = "") -> str:
    """'95% CI a to b' (empty when the interval is unknown)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"95% CI {fmt(low, digits)} to {fmt(high, digits)}{suffix}"


def _noun(label: str) -> str:
    """Lower-case a label for mid-sentence use, keeping acronyms ('KV cache')."""
    return label if label[:2].isupper() else label[:1].lower() + label[1:]


def claim_sentence(row: Mapping[Any, Any], flagged: Sequence[Finding] = ()) -> str:
    """One key-finding sentence for one comparison row (a ``compare`` result).

    ``flagged``: error-level findings about the runs behind the row; the sentence then carries
    a visible warning naming them (use ``errors_for`` to pick them).
    """
    sentence = _sentence(row)
    if flagged:
        checks = "; ".join(check_titles(flagged))
        sentence += f" ⚠ The checks found errors in these runs ({checks}): see Data quality before relying on this."
    return sentence


def errors_for(row: Mapping[Any, Any], findings: Sequence[Finding], run_ids: Sequence[str]) -> list[Finding]:
    """The error-level findings that concern any of ``run_ids`` (the runs behind ``row``)."""
    wanted = set(run_ids)
    return [f for f in findings if f.severity == "error" and wanted.intersection(f.runs)]


def errors_behind(row: Mapping[Any, Any], findings: Sequence[Finding],
                  arm_runs: Mapping[tuple[str, str, str], Sequence[str]]) -> list[Finding]:
    """:func:`errors_for` the runs of both arms of ``row``, a comparison of the project's factor,
    looked up in ``arm_runs`` ((campaign, model, level) → run ids, ``SiteData.level_runs``)."""
    runs = [run for level in (row["baseline"], row["candidate"])
            for run in arm_runs.get((str(row["campaign"]), str(row["model"]), str(level)), [])]
    return errors_for(row, findings, runs)


def _sentence(raw: Mapping[Any, Any]) -> str:
    row = {k: (_num(v) if k in _NUMERIC else v) for k, v in raw.items()}
    metric = str(row["metric"])
    entry = metric_catalog.lookup(metric)
    noun = _noun(entry.label if entry else metric)
    unit = f" {row['unit']}" if row.get("unit") else ""
    # the decimals the pages' precision rule gives a comparison's figures
    digits = difference_places(row)
    who = f"{row.get('model_name') or row['model']}"
    cand, base = row["candidate"], row["baseline"]
    mean_b, mean_c = float(row["mean_baseline"]), float(row["mean_candidate"])
    means = f"{fmt(mean_c, digits)} vs {fmt(mean_b, digits)}{unit}"
    diff = f"a difference of {fmt(mean_c - mean_b, digits)}{unit}"
    diff_ci = _ci(float(row["diff_ci_low"]), float(row["diff_ci_high"]), digits)
    verdict = row["verdict"]
    margin_pct = abs(float(row["margin"]) / mean_b) * 100 if mean_b else float("nan")
    if verdict == "equivalent":
        return (f"{who}: {noun} is equivalent in {cand} and {base} within the project's "
                f"±{fmt(margin_pct, 0)}% margin ({means}; {diff}, {diff_ci}; "
                f"TOST p {_p_eq(row.get('p_tost', float('nan')))}).")
    if verdict in ("higher", "lower"):
        ratio_ci = _ci(float(row["ratio_ci_low"]), float(row["ratio_ci_high"]), 2, "×")
        ratio_part = f"{fmt(float(row['ratio']), 2)}× the {noun} of {base}"
        if ratio_ci:
            ratio_part += f" ({ratio_ci})"
        return (f"{who}: {cand} had {ratio_part}: {means}, {diff}"
                f"{' (' + diff_ci + ')' if diff_ci else ''}, Holm-adjusted p {_p_eq(row['p_holm'])}.")
    if verdict == "untested":
        from sparkreport.analysis.compare import why_untested

        return (f"{who}: {noun} {fmt(mean_c, digits)}{unit} in {cand} vs {fmt(mean_b, digits)}{unit} in {base} "
                f"— {why_untested(row)}, so no test is possible.")
    mde = float(row.get("min_detectable_effect", float("nan")))
    mde_text = ""
    if mean_b and math.isfinite(mde):
        mde_text = f", minimum detectable effect {fmt(abs(mde / mean_b) * 100, 1)}%"
    low, high = float(row["diff_ci_low"]), float(row["diff_ci_high"])
    apart = ", its 95% CI excluding zero before the adjustment" if low > 0 or high < 0 else ""
    return (f"{who}: no significant difference detected in {noun} between {cand} and {base} "
            f"({means}, Holm-adjusted p {_p_eq(row['p_holm'])}{apart}{mde_text}); equivalence within "
            f"±{fmt(margin_pct, 0)}% was not shown either.")


_NUMERIC = {"mean_baseline", "mean_candidate", "diff", "diff_ci_low", "diff_ci_high", "ratio", "ratio_ci_low",
            "ratio_ci_high", "p_welch", "p_holm", "p_tost", "margin", "min_detectable_effect"}


def _p_eq(p: float) -> str:
    text = _p(p)
    return text if text.startswith("<") else f"= {text}"


def _p(p: float) -> str:
    """A p-value in a sentence, as the pages write it (one rule: :func:`sparkreport.figures.pvalue`)."""
    return pvalue(p) if math.isfinite(float(p)) else "n/a"
