"""Largest-Triangle-Three-Buckets downsampling (Steinarsson, 2013) for long time series.

A chart of one hour of 10 Hz samples would embed 36 000 points per series; LTTB keeps the
first and last points and, from each of ``threshold - 2`` equal buckets in between, the point
that forms the largest triangle with the point kept before it and the mean of the next bucket
— the shape (peaks, steps) survives where plain decimation would drop it. The full series
stays in the run's files and the downloads; only the chart is thinned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray


def lttb_indices(x: ArrayLike, y: ArrayLike, threshold: int) -> NDArray[np.intp]:
    """The indices of the points LTTB keeps (sorted; all of them when ``len <= threshold``).

    ``x`` must be increasing; NaN values in ``y`` are never chosen over finite ones.
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    n = xs.size
    if xs.shape != ys.shape:
        raise ValueError("x and y must have the same length")
    if threshold >= n or n <= 2:
        return np.arange(n, dtype=np.intp)
    if threshold < 3:
        raise ValueError("threshold must be at least 3")
    ys = np.where(np.isfinite(ys), ys, np.nan)
    edges = np.linspace(1, n - 1, threshold - 1).astype(np.intp)  # bucket b = [edges[b], edges[b+1])
    kept = np.empty(threshold, dtype=np.intp)
    kept[0], kept[-1] = 0, n - 1
    previous = 0
    for bucket in range(threshold - 2):
        start, stop = edges[bucket], max(edges[bucket + 1], edges[bucket] + 1)
        nxt_start, nxt_stop = edges[bucket + 1], (edges[bucket + 2] if bucket + 2 < len(edges) else n)
        nxt_stop = max(nxt_stop, nxt_start + 1)
        next_x = xs[nxt_start:nxt_stop].mean()
        next_y = np.nanmean(ys[nxt_start:nxt_stop]) if np.isfinite(ys[nxt_start:nxt_stop]).any() else 0.0
        px, py = xs[previous], ys[previous] if np.isfinite(ys[previous]) else 0.0
        area = np.abs((px - next_x) * (ys[start:stop] - py) - (px - xs[start:stop]) * (next_y - py))
        area = np.where(np.isnan(area), -1.0, area)
        previous = int(start + np.argmax(area))
        kept[bucket + 1] = previous
    return kept


def lttb(x: ArrayLike, y: ArrayLike, threshold: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The downsampled ``(x, y)`` (see :func:`lttb_indices`)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    keep = lttb_indices(xs, ys, threshold)
    return xs[keep], ys[keep]
