"""Coverage of the confidence intervals the site prints, measured by simulation.

Prints, for n = 3, 5 and 10 runs per arm, the share of simulated data sets whose 95% interval
holds the true value: the t interval of a mean, the Welch interval of a difference, and four
candidate intervals for a ratio of means — the percentile bootstrap the site used before schema 2,
a BCa bootstrap, a studentized bootstrap (delta-method standard error) and Fieller's interval
with Welch–Satterthwaite degrees of freedom. This is how the ratio interval was chosen (see
docs/reference/statistics.md). Nothing here is a test; tests/test_interval_coverage.py asserts the
coverage of the intervals the site uses.

    python bench/interval_coverage.py                  # 2 000 data sets per cell, 2 000 resamples
    python bench/interval_coverage.py --sets 4000 --resamples 1000
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sparkreport.analysis import statistics as st  # noqa: E402

#: (name, baseline mean, baseline sd, candidate mean, candidate sd): normal noise.
SCENARIOS = [
    ("no difference, CV 5%", 100.0, 5.0, 100.0, 5.0),
    ("ratio 1.3, unequal sd (CV 2% vs 8%)", 100.0, 2.0, 130.0, 10.4),
    ("ratio 0.8, CV 15%", 100.0, 15.0, 80.0, 12.0),
]
SIZES = (3, 5, 10)
CONFIDENCE = 0.95


def _bootstrap(x: np.ndarray, y: np.ndarray, resamples: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Percentile, BCa and studentized bootstrap ratio CIs for every row of x, y (sets × n)."""
    sets, n = x.shape
    alpha = (1 - CONFIDENCE) / 2
    ratio = y.mean(1) / x.mean(1)
    out: dict[str, list[np.ndarray]] = {"percentile": [], "bca": [], "studentized": []}
    chunk = max(1, 4_000_000 // (resamples * n))
    for start in range(0, sets, chunk):
        xs, ys, r = x[start:start + chunk], y[start:start + chunk], ratio[start:start + chunk]
        k = len(xs)
        ix = rng.integers(0, n, size=(k, resamples, n))
        iy = rng.integers(0, n, size=(k, resamples, n))
        bx = np.take_along_axis(xs[:, None, :].repeat(resamples, 1), ix, 2)
        by = np.take_along_axis(ys[:, None, :].repeat(resamples, 1), iy, 2)
        mx, my = bx.mean(2), by.mean(2)
        boot = my / mx
        out["percentile"].append(np.quantile(boot, [alpha, 1 - alpha], axis=1).T)
        # BCa: bias from the share of resamples below the estimate, acceleration from the
        # jackknife over both samples' observations.
        share = np.clip((boot < r[:, None]).mean(1), 1 / resamples, 1 - 1 / resamples)
        z0 = sps.norm.ppf(share)
        jx = (xs.sum(1, keepdims=True) - xs) / (n - 1)
        jy = (ys.sum(1, keepdims=True) - ys) / (n - 1)
        theta = np.concatenate([ys.mean(1, keepdims=True) / jx, jy / xs.mean(1, keepdims=True)], axis=1)
        u = np.concatenate([theta[:, :n].mean(1, keepdims=True) - theta[:, :n],
                            theta[:, n:].mean(1, keepdims=True) - theta[:, n:]], axis=1)
        accel = (u**3).sum(1) / (6 * ((u**2).sum(1)) ** 1.5)
        z = sps.norm.ppf([alpha, 1 - alpha])
        adjusted = sps.norm.cdf(z0[:, None] + (z0[:, None] + z) / (1 - accel[:, None] * (z0[:, None] + z)))
        sorted_boot = np.sort(boot, 1)
        index = np.clip((adjusted * resamples).astype(int), 0, resamples - 1)
        out["bca"].append(np.take_along_axis(sorted_boot, index, 1))
        # Studentized: t* = (r* − r̂) / se*, se by the delta method on each resample.
        def se(mx_: np.ndarray, my_: np.ndarray, vx: np.ndarray, vy: np.ndarray) -> np.ndarray:
            return np.abs(my_ / mx_) * np.sqrt(vx / (n * mx_**2) + vy / (n * my_**2))
        se_hat = se(xs.mean(1), ys.mean(1), xs.var(1, ddof=1), ys.var(1, ddof=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            t_star = (boot - r[:, None]) / se(mx, my, bx.var(2, ddof=1), by.var(2, ddof=1))
        t_star = np.where(np.isfinite(t_star), t_star, np.nan)
        lo_q, hi_q = np.nanquantile(t_star, [alpha, 1 - alpha], axis=1)
        out["studentized"].append(np.stack([r - hi_q * se_hat, r - lo_q * se_hat], 1))
    return {name: np.concatenate(parts) for name, parts in out.items()}


def coverage(sets: int, resamples: int, seed: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    rows = []
    for name, m1, s1, m2, s2 in SCENARIOS:
        true_ratio = m2 / m1
        for n in SIZES:
            x = rng.normal(m1, s1, size=(sets, n))
            y = rng.normal(m2, s2, size=(sets, n))
            mx, my, sx, sy = x.mean(1), y.mean(1), x.std(1, ddof=1), y.std(1, ddof=1)
            covered: dict[str, float] = {}
            means = np.array([st.t_interval(float(a), float(b), n, CONFIDENCE) for a, b in zip(mx, sx, strict=True)])
            covered["mean (t)"] = float(((means[:, 0] <= m1) & (m1 <= means[:, 1])).mean())
            diffs = np.array([st.diff_interval(float(a), float(b), n, float(c), float(d), n, CONFIDENCE)
                              for a, b, c, d in zip(mx, sx, my, sy, strict=True)])
            covered["difference (Welch)"] = float(((diffs[:, 0] <= m2 - m1) & (m2 - m1 <= diffs[:, 1])).mean())
            fieller = np.array([st.fieller_ratio_ci(float(a), float(b), n, float(c), float(d), n, CONFIDENCE)
                                for a, b, c, d in zip(mx, sx, my, sy, strict=True)])
            covered["ratio: Fieller–Welch"] = float(
                ((fieller[:, 0] <= true_ratio) & (true_ratio <= fieller[:, 1])).mean())
            for method, ci in _bootstrap(x, y, resamples, rng).items():
                hits = (ci[:, 0] <= true_ratio) & (true_ratio <= ci[:, 1])
                covered[f"ratio: {method} bootstrap"] = float(hits.mean())
            rows.append({"scenario": name, "n": n, "sets": sets, **covered})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=2000, help="simulated data sets per scenario and n")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples per data set")
    parser.add_argument("--seed", type=int, default=20261123)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = coverage(args.sets, args.resamples, args.seed)
    tolerance = 1.96 * math.sqrt(0.95 * 0.05 / args.sets)
    methods = [k for k in rows[0] if k not in ("scenario", "n", "sets")]
    print(f"Coverage of nominal 95% intervals ({args.sets} data sets per cell, {args.resamples} bootstrap "
          f"resamples; ±{tolerance:.1%} is the binomial 95% band around 95%)\n")
    for name, *_ in SCENARIOS:
        print(f"## {name}\n")
        print("| interval | " + " | ".join(f"n = {n}" for n in SIZES) + " |")
        print("|---|" + "---:|" * len(SIZES))
        for method in methods:
            cells = [next(r for r in rows if r["scenario"] == name and r["n"] == n)[method] for n in SIZES]
            print(f"| {method} | " + " | ".join(f"{c:.1%}" for c in cells) + " |")  # type: ignore[str-format]
        print()
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
