"""Change points in a series of software versions: where the level of a metric shifts.

The method (chosen against E-divisive from ``apache-otava`` and MongoDB's
``signal-processing-algorithms``; figures in ``bench/README.md``) is binary segmentation on
version groups with Welch tests, then a merge step:

1. **Split.** In a stretch of versions, every boundary between two neighbouring versions is a
   candidate; the runs left of it are compared with the runs right of it (Welch's t-test).
   The boundary that explains the most variance (least squares) among those whose relative
   change reaches the minimum effect is a change point when its p-value, Bonferroni-adjusted for the stretch's number of
   candidate boundaries, is below ``alpha``. Both halves are then searched the same way.
2. **Merge.** Each change point is re-tested between its neighbouring segments (the runs from
   the previous change point to it, and from it to the next); p-values are Holm-adjusted across
   the change points and the weakest point that fails (Holm p ≥ alpha or |change| < the minimum
   effect) is removed, until every one passes.
3. **Newest.** The newest version, unless already a change point, is tested on its own against
   the runs since the last change point (Welch, at ``alpha × NEWEST_SHARE``): the question a CI
   gate asks, with the power of one test instead of one among k − 1 boundaries.

Steps 1–2 run at ``alpha × (1 − NEWEST_SHARE)``. A series without any shift reports one only if
the first split's Bonferroni-adjusted test or the newest version's test rejects, so the chance
of any false change point in a flat series is at most ``alpha``. The
tests assume independent runs, roughly normal means within a segment and a level that is flat
between change points (a slow drift counts as flat only while it stays under the minimum effect).

Pure numbers in, numbers out: no pandas, no dataset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

METHOD = ("binary segmentation with Welch tests (Bonferroni per split), then a Holm-adjusted merge; "
          "the newest version also tested on its own")
#: The part of alpha spent on the newest version's own test against the runs since the last
#: change point (the CI gate's question: one test, not one of k − 1 boundaries); the rest goes
#: to the segmentation, so a flat series still shows a false change point at most alpha of the time.
NEWEST_SHARE = 0.5


@dataclass(frozen=True)
class Step:
    """A change point: the level shifts between version ``index - 1`` and version ``index``."""

    index: int
    #: Relative change of the segment means after/before − 1.
    change: float
    #: Holm-adjusted Welch p-value between the neighbouring segments (merge step).
    p_adjusted: float


class _Prefix:
    """Prefix sums of n, Σx and Σx² per version, for segment means and variances in O(1)."""

    def __init__(self, samples: Sequence[Sequence[float] | np.ndarray]) -> None:
        counts = [len(s) for s in samples]
        sums = [float(np.sum(s)) for s in samples]
        squares = [float(np.sum(np.square(np.asarray(s, dtype=float)))) for s in samples]
        self.n = np.concatenate([[0.0], np.cumsum(counts)])
        self.s = np.concatenate([[0.0], np.cumsum(sums)])
        self.ss = np.concatenate([[0.0], np.cumsum(squares)])

    def segment(self, lo: np.ndarray | int, hi: np.ndarray | int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """n, mean and sample variance of the runs of versions [lo, hi)."""
        n = np.asarray(self.n[hi] - self.n[lo], dtype=float)
        total = np.asarray(self.s[hi] - self.s[lo], dtype=float)
        squares = np.asarray(self.ss[hi] - self.ss[lo], dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = total / n
            var = np.maximum(squares - n * mean**2, 0.0) / (n - 1)
        return n, mean, var


def _welch(prefix: _Prefix, lo: int, cut: np.ndarray, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Relative change and two-sided Welch p-value of [lo, cut) against [cut, hi), per cut."""
    from scipy import stats as sps  # imported when a history is tested (over a second to import)

    n1, m1, v1 = prefix.segment(lo, cut)
    n2, m2, v2 = prefix.segment(cut, hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = v1 / n1, v2 / n2
        se = np.sqrt(a + b)
        t = (m2 - m1) / se
        df = (a + b) ** 2 / (a**2 / (n1 - 1) + b**2 / (n2 - 1))
        change = m2 / m1 - 1
    p = 2 * sps.t.sf(np.abs(t), df)
    # Identical constant segments: no evidence of anything; a constant jump: certain.
    p = np.where(se == 0, np.where(m1 == m2, 1.0, 0.0), p)
    p = np.where((n1 < 2) | (n2 < 2), np.nan, p)
    return change, p


def find_steps(samples: Sequence[Sequence[float] | np.ndarray], *, alpha: float = 0.05,
               min_effect: float = 0.02, newest_share: float = NEWEST_SHARE) -> list[Step]:
    """The change points of a series of versions (``samples[i]``: the runs of version i, in order).

    ``alpha``: the chance of reporting any change point in a series without one; ``min_effect``:
    the smallest relative change between segments that counts; ``newest_share``: the part of
    ``alpha`` spent on the newest version's own test (the CI gate's question). Versions without
    runs must be left out by the caller. See the module docstring for the method.
    """
    k = len(samples)
    if k < 2:
        return []
    prefix = _Prefix(samples)
    steps = _segment(prefix, k, alpha * (1 - newest_share), min_effect)
    if newest_share > 0 and not any(s.index == k - 1 for s in steps):
        newest = _newest(prefix, k, steps, alpha * newest_share, min_effect)
        if newest is not None:
            steps.append(Step(newest.index, newest.change, min(1.0, newest.p_adjusted / newest_share)))
    return steps


def _newest(prefix: _Prefix, k: int, steps: list[Step], alpha: float, min_effect: float) -> Step | None:
    """The newest version against the runs since the last change point before it: one test."""
    lo = max((s.index for s in steps), default=0)
    if k - 1 - lo < 1:
        return None
    change, p = _welch(prefix, lo, np.asarray([k - 1]), k)
    if np.isfinite(p[0]) and float(p[0]) < alpha and abs(float(change[0])) >= min_effect:
        return Step(k - 1, float(change[0]), float(p[0]))
    return None


def _segment(prefix: _Prefix, k: int, alpha: float, min_effect: float) -> list[Step]:
    cuts: list[int] = []

    def split(lo: int, hi: int) -> None:
        if hi - lo < 2:
            return
        candidates = np.arange(lo + 1, hi)
        change, p = _welch(prefix, lo, candidates, hi)
        eligible = np.isfinite(p) & (np.abs(change) >= min_effect)
        if not eligible.any():
            return
        # Where: the cut that explains the most variance (least squares, the usual binary
        # segmentation statistic); the p-value at the cut only decides whether it is real.
        n1, m1, _v1 = prefix.segment(lo, candidates)
        n2, m2, _v2 = prefix.segment(candidates, hi)
        explained = n1 * n2 / (n1 + n2) * (m2 - m1) ** 2
        best = int(np.argmax(np.where(eligible, explained, -np.inf)))
        if min(1.0, float(p[best]) * len(candidates)) >= alpha:
            return
        cut = int(candidates[best])
        cuts.append(cut)
        split(lo, cut)
        split(cut, hi)

    split(0, k)
    return _merge(prefix, sorted(cuts), k, alpha, min_effect)


def _merge(prefix: _Prefix, cuts: list[int], k: int, alpha: float, min_effect: float) -> list[Step]:
    while cuts:
        bounds = [0, *cuts, k]
        tested = [_welch(prefix, bounds[i], np.asarray([bounds[i + 1]]), bounds[i + 2]) for i in range(len(cuts))]
        changes = [float(c[0]) for c, _p in tested]
        pvalues = [float(p[0]) if np.isfinite(p[0]) else 1.0 for _c, p in tested]
        adjusted = _holm(pvalues)
        failing = [i for i in range(len(cuts)) if adjusted[i] >= alpha or abs(changes[i]) < min_effect]
        if not failing:
            return [Step(cut, changes[i], adjusted[i]) for i, cut in enumerate(cuts)]
        weakest = max(failing, key=lambda i: (adjusted[i], -abs(changes[i])))
        del cuts[weakest]
    return []


def _holm(pvalues: list[float]) -> list[float]:
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [1.0] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted
