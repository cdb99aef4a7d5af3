#!/usr/bin/env python3
"""Change-point methods for `sparkreport history`, measured against the tests of issue #17.

For each method: the share of series with a planted step (3%, 5%, 10%; 5 runs per version at 1%
noise; 12 versions, the step at a random version) in which a change point is reported at exactly
the planted version and nowhere else; the share of flat series (1% and 5% noise) with any change
point (the declared rate is alpha = 0.05); and the time per series.

    python bench/changepoints.py                       # the project's methods only
    python bench/changepoints.py --libs /tmp/cpdl      # also the libraries, unpacked there:
        pip download apache-otava signal-processing-algorithms --no-deps -d /tmp/cpdl
        (cd /tmp/cpdl && unzip -q apache_otava-*.whl -d otava && tar xzf signal_processing_algorithms-*.tar.gz)
        (cd /tmp/cpdl/signal_processing_algorithms-*/src/signal_processing_algorithms/energy_statistics &&
         gcc -shared -fPIC -O2 e_divisive.c -o _e_divisive.so)      # its C extension, built by its setup

The libraries run on the runs in version order (one point per run), as they would on a
history; a change point's version is the version of the first run after it.
"""

from __future__ import annotations

import argparse
import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sparkreport.analysis.changepoints import find_steps  # noqa: E402

ALPHA = 0.05
MIN_EFFECT = 0.02
Method = Callable[[list[np.ndarray]], set[int]]


def neighbours(samples: list[np.ndarray]) -> set[int]:
    """Welch between neighbouring versions, Holm over the k − 1 boundaries, and the minimum effect."""
    from scipy import stats as sps

    pvalues, changes = [], []
    for a, b in zip(samples, samples[1:], strict=False):
        pvalues.append(float(sps.ttest_ind(a, b, equal_var=False).pvalue))
        changes.append(float(b.mean() / a.mean() - 1))
    order = np.argsort(pvalues)
    hits, running = set(), 0.0
    for rank, i in enumerate(order):
        running = max(running, (len(pvalues) - rank) * pvalues[i])
        if running < ALPHA and abs(changes[i]) >= MIN_EFFECT:
            hits.add(int(i) + 1)
    return hits


def binseg(samples: list[np.ndarray]) -> set[int]:
    return {s.index for s in find_steps(samples, alpha=ALPHA, min_effect=MIN_EFFECT)}


def _runs_to_versions(samples: list[np.ndarray], indices: Sequence[int]) -> set[int]:
    owner = np.concatenate([[v] * len(s) for v, s in enumerate(samples)])
    return {int(owner[i]) for i in indices if 0 < i < len(owner)}


def otava_method(path: Path) -> Method:
    sys.path.insert(0, str(path / "otava"))
    from otava.analysis import compute_change_points  # type: ignore[import-not-found]

    def run(samples: list[np.ndarray]) -> set[int]:
        series = np.concatenate(samples).tolist()
        points, _weak = compute_change_points(series, window_len=50, max_pvalue=0.001, min_magnitude=MIN_EFFECT)
        return _runs_to_versions(samples, [p.index for p in points])

    return run


def spa_method(path: Path) -> Method:
    # Its logging and itertools helpers are not installed here: stand-ins for what it uses.
    structlog = types.ModuleType("structlog")
    structlog.get_logger = lambda *a, **k: types.SimpleNamespace(  # type: ignore[attr-defined]
        debug=lambda *a, **k: None, info=lambda *a, **k: None, warn=lambda *a, **k: None)
    itertools_stub = types.ModuleType("more_itertools")
    itertools_stub.pairwise = lambda xs: zip(xs, xs[1:], strict=False)  # type: ignore[attr-defined]
    sys.modules.setdefault("structlog", structlog)
    sys.modules.setdefault("more_itertools", itertools_stub)
    sys.path.insert(0, str(next(path.glob("signal_processing_algorithms-*")) / "src"))
    from signal_processing_algorithms.energy_statistics.energy_statistics import (  # type: ignore[import-not-found]
        e_divisive,
    )

    def run(samples: list[np.ndarray]) -> set[int]:
        series = np.concatenate(samples)
        return _runs_to_versions(samples, e_divisive(series, pvalue=ALPHA, permutations=100))

    return run


def planted(rng: np.random.Generator, step: float, versions: int = 12, runs: int = 5,
            noise: float = 0.01) -> tuple[list[np.ndarray], int]:
    at = int(rng.integers(1, versions))
    return [1000 * (1 + (step if v >= at else 0)) * (1 + rng.normal(0, noise, runs)) for v in range(versions)], at


def flat(rng: np.random.Generator, noise: float, versions: int = 12, runs: int = 5) -> list[np.ndarray]:
    return [1000 * (1 + rng.normal(0, noise, runs)) for _ in range(versions)]


def measure(method: Method, series: int, seed: int) -> dict[str, float]:
    row: dict[str, float] = {}
    spent, calls = 0.0, 0
    for step in (0.03, 0.05, 0.10):
        rng = np.random.default_rng(seed)
        exact = 0
        for _ in range(series):
            samples, at = planted(rng, step)
            t0 = time.perf_counter()
            found = method(samples)
            spent, calls = spent + time.perf_counter() - t0, calls + 1
            exact += found == {at}
        row[f"exact {step:.0%}"] = exact / series
    for noise in (0.01, 0.05):
        rng = np.random.default_rng(seed + 1)
        false = 0
        for _ in range(series):
            samples = flat(rng, noise)
            t0 = time.perf_counter()
            false += bool(method(samples))
            spent, calls = spent + time.perf_counter() - t0, calls + 1
        row[f"false {noise:.0%} noise"] = false / series
    row["ms/series"] = spent / calls * 1000
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--series", type=int, default=200)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--libs", type=Path, help="folder with apache-otava and signal-processing-algorithms unpacked")
    args = parser.parse_args()
    methods: dict[str, Method] = {"binseg-welch (chosen)": binseg, "neighbours-welch-holm": neighbours}
    if args.libs:
        methods["apache-otava 0.8.0"] = otava_method(args.libs)
        methods["signal-processing-algorithms 2.1.6"] = spa_method(args.libs)
    rows = {name: measure(method, args.series, args.seed) for name, method in methods.items()}
    columns = list(next(iter(rows.values())))
    print(f"| method | {' | '.join(columns)} |")
    print(f"|---|{'---|' * len(columns)}")
    for name, row in rows.items():
        cells = [f"{row[c]:.1f}" if c == "ms/series" else f"{row[c]:.3f}" for c in columns]
        print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
