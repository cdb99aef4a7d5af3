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

    ``x`` must be increasing; points whose ``y`` is not finite are never kept.
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    if xs.shape != ys.shape:
        raise ValueError("x and y must have the same length")
    finite = np.flatnonzero(np.isfinite(ys) & np.isfinite(xs))
    if finite.size < xs.size:
        return finite[lttb_indices(xs[finite], ys[finite], threshold)]
    n = xs.size
    if threshold >= n or n <= 2:
        return np.arange(n, dtype=np.intp)
    if threshold < 3:
        raise ValueError("threshold must be at least 3")
    # Buckets 0 … threshold-3 split the points between the first and the last.
    edges = np.linspace(1, n - 1, threshold - 1).astype(np.intp)
    edges = np.maximum(edges, np.arange(1, threshold))[: threshold - 1]
    edges = np.minimum(edges, n - 1)
    starts, stops = edges[:-1], np.maximum(edges[1:], edges[:-1] + 1)
    # The mean point of each bucket (and of the last point, for the final bucket's "next").
    sum_x = np.add.reduceat(xs, starts)
    sum_y = np.add.reduceat(ys, starts)
    counts = np.diff(np.append(starts, n))
    mean_x = np.append(sum_x / counts, xs[-1])
    mean_y = np.append(sum_y / counts, ys[-1])
    kept = np.empty(threshold, dtype=np.intp)
    kept[0], kept[-1] = 0, n - 1
    previous = 0
    for bucket in range(threshold - 2):
        start, stop = starts[bucket], stops[bucket]
        px, py = xs[previous], ys[previous]
        nx, ny = mean_x[bucket + 1], mean_y[bucket + 1]
        area = np.abs((px - nx) * (ys[start:stop] - py) - (px - xs[start:stop]) * (ny - py))
        previous = int(start + np.argmax(area))
        kept[bucket + 1] = previous
    return kept


def lttb(x: ArrayLike, y: ArrayLike, threshold: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The downsampled ``(x, y)`` (see :func:`lttb_indices`)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    keep = lttb_indices(xs, ys, threshold)
    return xs[keep], ys[keep]
