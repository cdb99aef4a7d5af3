"""The statistics and comparisons of a new run's build, spliced into the last build's tables.

:func:`~sparkreport.analysis.arms.arm_stats` and :func:`~sparkreport.analysis.compare.compare`
keep each campaign's rows in the analysis cache, by everything they are made from (the
campaign's *signature*: its runs, their inclusion, the options); a new run recomputes its own
campaign's. The tables the pages read are those rows put together and sorted as the pages list
them (:func:`~sparkreport.analysis.arms.in_page_order`: campaign first), the comparisons after
the design step and Holm's adjustment (per campaign). Putting fifty campaigns' rows together
and sorting 24 000 of them was most of a new run's analysis at 10 000 runs, for one campaign
that changed.

So the whole table a build made is kept too (:meth:`~sparkreport.cache.AnalysisCache.put_whole`,
:class:`Whole`), with each campaign's signature and rows (one block of the table: campaign is
the first sort key). The next build, on the same options (its *context*) and the same
campaigns, takes that table with the block of each campaign whose signature changed replaced
by that campaign's rows made afresh and sorted alone — which is the table a sort of all rows
gives, on these conditions (checked; else the table is made whole, as before):

* the changed campaign shows the same models under the same names (the sort ranks a model by
  the name of its first row in the whole table, :func:`ranked_names`, kept with the table);
* its new rows keep every column's type (a block of other types would change the stacked
  column's) — a column none of its rows fills is typed as the table's (:func:`typed_as`);
* fewer than half of the campaigns changed (then making the table whole costs about as much).

A test compares spliced tables with tables made whole (``tests/test_splice.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: Above this share of changed campaigns, the table is made whole.
SPLICED_AT_MOST = 0.5


@dataclass
class Whole:
    """A whole table as a build made it, and what the next build splices it by (kept by the
    analysis cache under its context: everything it depends on besides the campaigns' own rows)."""

    #: campaign → its signature (what its rows are made from).
    signatures: dict[str, str]
    #: campaign → its rows' range in :attr:`frame` (a campaign without rows has none).
    spans: dict[str, tuple[int, int]]
    #: campaign → its (model, model name) pairs, sorted.
    pairs: dict[str, list[tuple[str, str]]]
    #: model → the name the sort ranked it by (:func:`ranked_names`).
    names: dict[str, str]
    frame: pd.DataFrame
    #: What the kind keeps per campaign besides (the comparisons' factor levels).
    extra: dict[str, Any]
    #: What the pages' keys read of :attr:`frame` (:func:`~sparkreport.render.report.row_hashes`,
    #: set by the render): its columns' names and types, and each campaign's row hashes (an
    #: array, its span's length). A splice keeps those of the campaigns it keeps, so a new run's
    #: build hashes its campaign's rows only.
    row_hashes: tuple[list[str], dict[str, Any]] | None = field(default=None, compare=False)


def ranked_names(frame: pd.DataFrame) -> dict[str, str]:
    """model → the name :func:`~sparkreport.analysis.arms.in_page_order` ranks it by: the
    ``model_name`` of its first row in ``frame`` (its ``model`` where there is no such column)."""
    first = ~frame["model"].duplicated().to_numpy()
    named = frame["model_name"] if "model_name" in frame.columns else frame["model"]
    return dict(zip(frame["model"][first].astype(str), named[first].astype(str), strict=True))


def model_pairs(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """The distinct (model, model name) pairs of ``frame``'s rows, sorted."""
    named = frame["model_name"] if "model_name" in frame.columns else frame["model"]
    return sorted(set(zip(frame["model"].astype(str), named.astype(str), strict=True)))


def kept(frame: pd.DataFrame, signatures: Mapping[str, str], names: dict[str, str],
         extra: dict[str, Any] | None = None) -> Whole | None:
    """``frame`` (sorted campaign first) kept as a :class:`Whole`; None when a campaign's rows are
    not one block (then the next build makes its table whole)."""
    import numpy as np
    import pandas as pd

    spans: dict[str, tuple[int, int]] = {}
    pairs: dict[str, list[tuple[str, str]]] = {}
    if len(frame):
        codes, campaigns = pd.factorize(frame["campaign"].astype(str))
        edges = [0, *(np.flatnonzero(np.diff(codes)) + 1).tolist(), len(frame)]
        for start, stop in zip(edges, edges[1:], strict=False):
            name = str(campaigns[codes[start]])
            if name in spans:
                return None
            spans[name] = (int(start), int(stop))
            pairs[name] = model_pairs(frame.iloc[start:stop])
    if not set(spans) <= set(signatures):
        return None
    return Whole(dict(signatures), spans, pairs, dict(names), frame.copy(), dict(extra or {}))


def typed_as(rows: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with each column that holds no value in any of them typed as ``frame``'s: a
    campaign's rows made alone type a column none of its rows fills as ``object`` (its
    comparisons' ``skipped``, say), where the whole table types it by the other campaigns'
    values (text); missing either way, the same cells once typed alike."""
    for column in rows.columns:
        if column in frame.columns and rows[column].dtype != frame[column].dtype and rows[column].isna().all():
            rows[column] = rows[column].astype(frame[column].dtype)
    return rows


def spliced(whole: Whole | None, signatures: Mapping[str, str],
            block: Callable[[str], pd.DataFrame | None],
            order: Callable[[pd.DataFrame, dict[str, str]], pd.DataFrame],
            extra: Callable[[str], Any] | None = None) -> Whole | None:
    """The kept ``whole`` with the rows of each campaign whose signature changed replaced by
    ``block(campaign)`` (its rows before the sort) sorted by ``order`` (with the kept names), as
    a new :class:`Whole` (``extra(campaign)``: what it keeps of each changed campaign); None
    when it cannot be spliced (see the module docstring)."""
    import pandas as pd

    from sparkreport.dataset import one_chunk

    if whole is None or whole.signatures.keys() != signatures.keys():
        return None
    changed = [name for name, signature in signatures.items() if whole.signatures[name] != signature]
    if len(changed) > SPLICED_AT_MOST * len(signatures):
        return None
    if not changed:
        return whole
    blocks: list[tuple[int, int, pd.DataFrame]] = []
    pairs = dict(whole.pairs)
    kept_extra = dict(whole.extra)
    for name in changed:
        span = whole.spans.get(name)
        rows = block(name)
        if span is None or rows is None or rows.empty or model_pairs(rows) != whole.pairs.get(name):
            return None
        blocks.append((*span, order(typed_as(rows, whole.frame), whole.names)))
        if extra is not None:
            kept_extra[name] = extra(name)
    blocks.sort(key=lambda item: item[0])
    pieces: list[pd.DataFrame] = []
    at = 0
    for start, stop, rows in blocks:
        pieces += [whole.frame.iloc[at:start], rows]
        at = stop
    pieces.append(whole.frame.iloc[at:])
    frame = pd.concat([piece for piece in pieces if len(piece)], ignore_index=True)
    if list(frame.columns) != list(whole.frame.columns) or list(frame.dtypes) != list(whole.frame.dtypes):
        return None
    one_chunk(frame)
    hashes = None
    if whole.row_hashes is not None:
        heads, by_campaign = whole.row_hashes
        hashes = (heads, {name: rows for name, rows in by_campaign.items() if name not in changed})
    spans = {}
    shift = 0
    moved = {start: (stop, len(rows)) for start, stop, rows in blocks}
    for name, (start, stop) in sorted(whole.spans.items(), key=lambda item: item[1][0]):
        length = moved[start][1] if start in moved else stop - start
        spans[name] = (start + shift, start + shift + length)
        shift += length - (stop - start)
    return Whole(dict(signatures), spans, pairs, dict(whole.names), frame, kept_extra, hashes)
