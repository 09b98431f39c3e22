"""Anchoring: does a player's opening demand go with what it finally gets?

Per group (e.g. player type: human or model), the Pearson correlation r between the anchor (the
first offer, as a share of the amount at stake) and the final gain, with a 95 % interval from
Fisher's z = atanh(r) ± z_{0.975}/√(n−3), the two-sided p-value of r = 0 (t = r√(n−2)/√(1−r²)),
and the least-squares slope of gain on anchor.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats


def correlation(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> dict[str, float]:
    """Pearson r with Fisher-z interval, p-value and OLS slope; NaN where undefined."""
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    n = len(x)
    out = {"n": n, "r": math.nan, "low": math.nan, "high": math.nan, "p": math.nan, "slope": math.nan}
    if n < 3 or np.std(x) < 1e-12 * max(1.0, float(np.abs(x).max())) or np.std(y) < 1e-12 * max(1.0, float(np.abs(y).max())):
        return out
    r = float(np.corrcoef(x, y)[0, 1])
    out["r"] = r
    out["slope"] = float(np.cov(x, y)[0, 1] / np.var(x, ddof=1))
    if abs(r) < 1:
        t = r * math.sqrt((n - 2) / (1 - r * r))
        out["p"] = float(2 * stats.t.sf(abs(t), n - 2))
    if n > 3:
        z, half = math.atanh(max(min(r, 1 - 1e-12), -1 + 1e-12)), stats.norm.ppf((1 + level) / 2) / math.sqrt(n - 3)
        out["low"], out["high"] = math.tanh(z - half), math.tanh(z + half)
    return out


def anchoring(df: pd.DataFrame, anchor: str, gain: str, by: str | list[str]) -> pd.DataFrame:
    """One row per group of ``by``: n, r, low, high, p, slope of ``gain`` on ``anchor``."""
    rows = []
    for key, sub in df.groupby(by, dropna=False):
        keys = key if isinstance(key, tuple) else (key,)
        names = [by] if isinstance(by, str) else by
        rows.append({**dict(zip(names, keys)), **correlation(sub[anchor].to_numpy(float), sub[gain].to_numpy(float))})
    return pd.DataFrame(rows)
