"""Diff two sets of runs (two software versions, two drivers, any two selections).

Comparable first: a "what changed" table of every recorded field that differs between the
sides; cells (model × environment) whose workload differs are *not comparable* and are never
diffed unless a field is explicitly allowed to differ. Then, per cell and metric: the ratio
b/a with Fieller's CI (Welch df), Welch and Mann–Whitney p-values, Holm across the whole diff,
and a direction-aware verdict that needs both significance and a minimum effect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkreport import metrics as metric_catalog
from sparkreport.analysis import statistics as st
from sparkreport.analysis.arms import included_runs
from sparkreport.config import AnalysisOptions
from sparkreport.errors import DataError
from sparkreport.names import level_order, model_order, shown_values

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.dataset import Dataset

CELL_KEYS = ["model", "environment"]
#: Workload fields: a cell whose sides differ in any of these is not comparable.
WORKLOAD_FIELDS = ["num_requests_planned", "input_len", "output_len", "batch_size", "concurrency"]
#: Context fields shown in the "what changed" table.
CONTEXT_FIELDS = ["engine", "engine_version", "backend", "cuda", "driver", "image", "image_digest", "gpu_name",
                  "memory_pool_gib", "environment_kind", "campaign"]
VERDICTS = ("improved", "regressed", "unchanged", "inconclusive", "not comparable", "missing in a", "missing in b")
DIFF_KEYS = ["model", "environment", "metric", "unit", "direction", "n_a", "n_b", "mean_a", "mean_b", "ratio",
             "ratio_ci_low", "ratio_ci_high", "change_pct", "p_welch", "p_mannwhitney", "p_holm", "p_tost",
             "min_effect", "verdict", "reason"]


@dataclass
class Selector:
    """``key=value[,key=value…]`` over dataset columns; a bare key also matches ``label.<key>``."""

    text: str
    conditions: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> Selector:
        from sparkreport.early import selector_conditions

        return cls(text, selector_conditions(text))

    def apply(self, runs: pd.DataFrame) -> pd.DataFrame:
        mask = None
        for key, value in self.conditions:
            column = key if key in runs.columns else f"label.{key}"
            if column not in runs.columns:
                labels = sorted(c for c in runs.columns if c.startswith("label."))
                raise DataError(f"selector {self.text!r}: no column or label {key!r} — labels here: "
                                f"{shown_values(labels)}")
            hit = runs[column].astype("string") == value
            mask = hit if mask is None else mask & hit
        assert mask is not None
        return runs[mask.fillna(False)]


@dataclass
class DiffOptions:
    allow_mismatch: list[str] = field(default_factory=list)
    min_effect: float = 0.02
    min_effects: dict[str, float] = field(default_factory=dict)
    directions: dict[str, str] = field(default_factory=dict)
    metrics: list[str] | None = None

    def effect_for(self, metric: str) -> float:
        return self.min_effects.get(metric, self.min_effect)


@dataclass
class DiffResult:
    changed: list[dict[str, Any]]
    cells: pd.DataFrame
    not_comparable: list[dict[str, Any]]

    def counts(self) -> dict[str, int]:
        return {v: int((self.cells["verdict"] == v).sum()) for v in VERDICTS} if not self.cells.empty else {}


def _values(frame: pd.DataFrame, column: str) -> list[str]:
    if column not in frame.columns:
        return []
    return sorted({str(v) for v in frame[column].dropna().unique()})


def _identifies_runs(frame: pd.DataFrame, column: str) -> bool:
    return column in frame.columns and len(frame) > 1 and frame[column].nunique(dropna=True) == len(frame)


def what_changed(a: pd.DataFrame, b: pd.DataFrame) -> list[dict[str, Any]]:
    """Every recorded context, workload or label field whose values differ between the sides."""
    labels = sorted({c for c in [*a.columns, *b.columns] if c.startswith("label.")})
    rows = []
    for column in [*CONTEXT_FIELDS, *WORKLOAD_FIELDS, *labels]:
        if column in labels and _identifies_runs(a, column) and _identifies_runs(b, column):
            continue  # a label unique to every run (a plan index) names runs, not conditions
        va, vb = _values(a, column), _values(b, column)
        if va != vb:
            none = "(not recorded)"
            rows.append({"field": column, "a": ", ".join(va) or none, "b": ", ".join(vb) or none})
    return rows


def diff(a: pd.DataFrame, b: pd.DataFrame, opts: AnalysisOptions, dopts: DiffOptions, *,
         baseline: str | None = None) -> DiffResult:
    """Diff two runs tables (already selected); see the module docstring for the rules.

    Cells by model (:func:`cell_order`: by the names the pages show), then each model's
    environments in :func:`~sparkreport.names.level_order`:
    ``baseline`` (the site's, :meth:`~sparkreport.config.ProjectConfig.baseline_of` the
    ``environment``) first, then the others by name — the order every page lists them in."""
    import pandas as pd

    from sparkreport.dataset import frame_records

    if a.empty or b.empty:
        raise DataError(f"side {'a' if a.empty else 'b'} selects no runs — check the selector")
    present = ({m for m in a.columns if metric_catalog.is_metric(m) and a[m].notna().any()}
               | {m for m in b.columns if metric_catalog.is_metric(m) and b[m].notna().any()})
    metrics = dopts.metrics or sorted(present & set(opts.tested_metrics))
    metrics = [m for m in metrics if _direction(m, dopts) != "none"]
    rows: list[dict[str, Any]] = []
    not_comparable = []
    names = model_names(a, b)
    cells = sorted(set(map(tuple, a[CELL_KEYS].astype(str).values)) | set(map(tuple, b[CELL_KEYS].astype(str).values)),
                   key=lambda cell: cell_order(cell[0], cell[1], baseline, names.get(cell[0])))
    for cell in cells:
        ca = a[(a["model"].astype(str) == cell[0]) & (a["environment"].astype(str) == cell[1])]
        cb = b[(b["model"].astype(str) == cell[0]) & (b["environment"].astype(str) == cell[1])]
        base = {"model": cell[0], "environment": cell[1]}
        if ca.empty or cb.empty:
            not_comparable.append(base | {"reason": f"only in {'b' if ca.empty else 'a'}"})
            continue
        mismatch = [f for f in WORKLOAD_FIELDS if f not in dopts.allow_mismatch and _values(ca, f) != _values(cb, f)]
        if mismatch:
            reason = "; ".join(f"{f}: {', '.join(_values(ca, f)) or '-'} vs {', '.join(_values(cb, f)) or '-'}"
                               for f in mismatch)
            not_comparable.append(base | {"reason": f"workload differs ({reason})"})
            for metric in metrics:
                rows.append(_row(base, metric, dopts) | {"verdict": "not comparable", "reason": reason})
            continue
        for metric in metrics:
            row = _cell_metric(base, ca, cb, metric, opts, dopts)
            if row["n_a"] or row["n_b"]:  # a metric neither side reports here is no comparison at all
                rows.append(row)
    frame = pd.DataFrame(rows, columns=DIFF_KEYS)
    tested = frame["p_welch"].astype(float)
    frame["p_holm"] = st.holm(tested.tolist())
    frame["verdict"] = [_verdict(r, opts) for r in frame_records(frame)]
    return DiffResult(what_changed(a, b), frame, not_comparable)


def cell_order(model: str, environment: str, baseline: str | None, name: str | None = None) -> tuple[str | bool, ...]:
    """Where a cell (``model`` × ``environment``) sorts in a diff's tables: by the model as
    :func:`~sparkreport.names.model_order` sorts models (``name``, the name the pages show it by,
    else its key), then its environment in :func:`~sparkreport.names.level_order` (``baseline``
    first)."""
    return *model_order(model if name is None else name, model), *level_order(environment, baseline)


def model_names(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, str]:
    """Model → its name as the pages show it, from the two sides' runs (side a's first)."""
    out: dict[str, str] = {}
    for frame in (a, b):
        if frame.empty or not {"model", "model_name"} <= set(frame.columns):
            continue
        for model, name in frame[["model", "model_name"]].drop_duplicates().itertuples(index=False):
            out.setdefault(str(model), str(name))
    return out


def _direction(metric: str, dopts: DiffOptions) -> str:
    if metric in dopts.directions:
        return dopts.directions[metric]
    entry = metric_catalog.lookup(metric)
    return entry.direction if entry else "none"


def _row(base: dict[str, Any], metric: str, dopts: DiffOptions) -> dict[str, Any]:
    nan = st.NAN
    return base | {
        "metric": metric, "unit": metric_catalog.unit_of(metric), "direction": _direction(metric, dopts),
        "n_a": 0, "n_b": 0, "mean_a": nan, "mean_b": nan, "ratio": nan, "ratio_ci_low": nan, "ratio_ci_high": nan,
        "change_pct": nan, "p_welch": nan, "p_mannwhitney": nan, "p_holm": nan, "p_tost": nan,
        "min_effect": dopts.effect_for(metric), "verdict": "inconclusive", "reason": None,
    }


def _cell_metric(base: dict[str, Any], ca: pd.DataFrame, cb: pd.DataFrame, metric: str, opts: AnalysisOptions,
                 dopts: DiffOptions) -> dict[str, Any]:
    row = _row(base, metric, dopts)
    va = ca[metric].dropna().astype(float).tolist() if metric in ca else []
    vb = cb[metric].dropna().astype(float).tolist() if metric in cb else []
    if not va or not vb:
        if va or vb:
            side = "a" if not va else "b"
            row["verdict"] = f"missing in {side}"
            row["reason"] = f"side {side} does not report {metric}"
        return row | {"n_a": len(va), "n_b": len(vb)}
    da, db = st.describe(va), st.describe(vb)
    effect = dopts.effect_for(metric)
    row.update({
        "n_a": da.n, "n_b": db.n, "mean_a": da.mean, "mean_b": db.mean,
        "ratio": db.mean / da.mean if da.mean else st.NAN,
        "p_welch": st.welch_from_stats(da.mean, da.sd, da.n, db.mean, db.sd, db.n),
        "p_mannwhitney": st.mann_whitney(va, vb),
        "p_tost": st.tost_from_stats(da.mean, da.sd, da.n, db.mean, db.sd, db.n, effect * abs(da.mean)),
    })
    row["change_pct"] = (row["ratio"] - 1) * 100 if math.isfinite(row["ratio"]) else st.NAN
    if da.n >= 2 and db.n >= 2 and da.sd == 0 and db.sd == 0:
        # The same value in every run of both sides: the change is exact, a fact, not a test (a
        # "p = 1.0000" and a "1.000–1.000" interval would dress a constant as a measurement).
        return row | {"p_welch": st.NAN, "p_mannwhitney": st.NAN, "p_tost": st.NAN, "reason": CONSTANT}
    row["ratio_ci_low"], row["ratio_ci_high"] = st.fieller_ratio_ci(da.mean, da.sd, da.n, db.mean, db.sd, db.n,
                                                                     opts.confidence)
    return row


#: The ``reason`` of a cell × metric whose value did not vary on either side (stated, not tested).
CONSTANT = "constant: the same value in every run of each side, so stated, not tested"


def _verdict(row: dict[Any, Any], opts: AnalysisOptions) -> str:
    """improved/regressed: Holm p < alpha and |change| ≥ the minimum effect, in the metric's good/bad
    direction; unchanged: TOST equivalence within the minimum effect; else inconclusive. A constant
    on both sides (:data:`CONSTANT`) is judged by its exact change against the minimum effect."""
    if row["verdict"] in ("not comparable", "missing in a", "missing in b"):
        return str(row["verdict"])
    p = float(row["p_holm"])
    change = float(row["ratio"]) - 1 if math.isfinite(float(row["ratio"])) else st.NAN
    exact = row["reason"] == CONSTANT and math.isfinite(change)  # no test: the change as it is
    if exact and abs(change) < float(row["min_effect"]):
        return "unchanged"
    significant = exact or (math.isfinite(p) and p < opts.alpha)
    if significant and math.isfinite(change) and abs(change) >= float(row["min_effect"]):
        better = change > 0 if row["direction"] == "higher" else change < 0
        return "improved" if better else "regressed"
    p_tost = float(row["p_tost"])
    if math.isfinite(p_tost) and p_tost < opts.alpha:
        return "unchanged"
    return "inconclusive"


def nothing_compared(result: DiffResult, a: pd.DataFrame, b: pd.DataFrame) -> str | None:
    """Why no cell × metric was compared (both sides measured it, on the same workload), in one
    line naming what differs; None when something was. A gate over such a diff would pass on
    nothing, so ``diff`` refuses it."""
    cells = result.cells
    if not cells.empty and ((cells["n_a"] > 0) & (cells["n_b"] > 0) & (cells["verdict"] != "not comparable")).any():
        return None
    workload = [r for r in result.not_comparable if str(r["reason"]).startswith("workload differs")]
    if workload:
        first = workload[0]
        return (f"nothing to compare: the workload differs in every cell both sides measured "
                f"({first['model']}/{first['environment']}: {first['reason'].removeprefix('workload differs (')} — "
                "pass --allow-mismatch FIELD to diff them anyway")
    differ = []
    for column, plural in (("model", "models"), ("environment", "environments")):
        va, vb = _values(a, column), _values(b, column)
        if va != vb:
            differ.append(f"{plural}: a has {shown_values(va)}, b has {shown_values(vb)}")
    if differ:
        return "nothing to compare: no model × environment cell has runs on both sides — " + "; ".join(differ)
    return "nothing to compare: no metric tested here is reported by both sides — check --metric"


def same_runs(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Whether the two sides (of one store) are the same runs: a diff of runs with themselves."""
    return set(a["run_id"].astype(str)) == set(b["run_id"].astype(str))


def select_sides(ds_a: Dataset, ds_b: Dataset, sel_a: Selector | None, sel_b: Selector | None,
                 opts: AnalysisOptions) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The included runs of each side, after its selector."""
    a = included_runs(ds_a, opts)
    b = included_runs(ds_b, opts)
    a, b = a[a["included"]], b[b["included"]]
    if sel_a is not None:
        a = sel_a.apply(a)
    if sel_b is not None:
        b = sel_b.apply(b)
    return a, b
