"""Small statistics shared by the reports. The quantiles come from ``scipy.special`` (the
functions scipy.stats calls): importing scipy.stats alone takes 0.3 s."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import special


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float, int]:
    """Mean with a t-based confidence interval: mean ± t_{(1+level)/2, n−1}·s/√n.
    Returns (mean, low, high, n); the interval is NaN for n < 2."""
    x = pd.Series(values, dtype=float).dropna().to_numpy()
    n = len(x)
    if n == 0:
        return (math.nan, math.nan, math.nan, 0)
    m = float(np.mean(x))
    if n < 2:
        return (m, math.nan, math.nan, 1)
    half = float(special.stdtrit(n - 1, (1 + level) / 2) * np.std(x, ddof=1) / math.sqrt(n))  # the t quantile
    return (m, m - half, m + half, n)


def summarise(df: pd.DataFrame, by: str | list[str], columns: list[str], level: float = 0.95) -> pd.DataFrame:
    """Mean and CI of each column per group, long format: group, metric, mean, low, high, n."""
    rows = []
    for key, group in df.groupby(by, dropna=False):
        for col in columns:
            if col not in group:
                continue
            m, lo, hi, n = mean_ci(group[col], level)
            keys = key if isinstance(key, tuple) else (key,)
            rows.append({**dict(zip([by] if isinstance(by, str) else by, keys)), "metric": col, "mean": m, "low": lo, "high": hi, "n": n})
    return pd.DataFrame(rows)


def proportion_ci(successes: int, n: int, level: float = 0.95) -> tuple[float, float, float]:
    """Share k/n with Wilson's score interval:
    (p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n). NaN for n = 0."""
    if n == 0:
        return (math.nan, math.nan, math.nan)
    z = float(special.ndtri((1 + level) / 2))  # the standard normal quantile
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (p, min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half)))
