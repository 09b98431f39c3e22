"""Differences of metrics between the two levels of a binary factor of a study
(universalization on/off, two languages, homogeneous/mixed groups), each tested with Welch's
t-test, the p-values adjusted for multiple testing by Benjamini–Hochberg.

Δ = mean(level b) − mean(level a); Welch: t = Δ / √(s_a²/n_a + s_b²/n_b) with
Welch–Satterthwaite degrees of freedom ν; the interval is Δ ± t_{ν,(1+level)/2}·se.
BH: p_(i) sorted ascending over the m tests, q_(i) = min_{j ≥ i} m·p_(j)/j, capped at 1.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats


def bh_adjust(pvalues: Sequence[float]) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (NaNs stay NaN and are not counted)."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if ok.size == 0:
        return out
    order = ok[np.argsort(p[ok])]
    m = ok.size
    ranked = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
    out[order] = np.minimum(adjusted, 1.0)
    return out


def welch(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> dict[str, float]:
    """Welch's test of mean(b) − mean(a): delta, low, high, t, df, p (NaN with < 2 per side)."""
    x = pd.Series(a, dtype=float).dropna().to_numpy()
    y = pd.Series(b, dtype=float).dropna().to_numpy()
    out = {"mean_a": float(x.mean()) if x.size else math.nan, "mean_b": float(y.mean()) if y.size else math.nan, "n_a": int(x.size), "n_b": int(y.size)}
    out["delta"] = out["mean_b"] - out["mean_a"]
    if x.size < 2 or y.size < 2:
        return {**out, "low": math.nan, "high": math.nan, "t": math.nan, "df": math.nan, "p": math.nan}
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    se = math.sqrt(va + vb)
    if se == 0:
        p = 1.0 if out["delta"] == 0 else 0.0
        return {**out, "low": out["delta"], "high": out["delta"], "t": math.nan, "df": math.nan, "p": p}
    df = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1))
    t = out["delta"] / se
    half = stats.t.ppf((1 + level) / 2, df) * se
    return {**out, "low": out["delta"] - half, "high": out["delta"] + half, "t": t, "df": df, "p": float(2 * stats.t.sf(abs(t), df))}


def factor_differences(
    games: pd.DataFrame,
    factor: str,
    metrics: Sequence[str],
    by: Sequence[str] = (),
    levels: tuple | None = None,
    level: float = 0.95,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """For each group of ``by`` (e.g. model) and each metric: the two levels' means, Δ with its
    Welch interval, p and the BH-adjusted p over every row of the table; ``significant`` is
    q < ``alpha``. ``levels`` = (a, b) orders the levels (default: sorted). A factor with other
    than two levels raises ``ValueError``."""
    values = levels or tuple(sorted(games[factor].dropna().unique(), key=str))
    if len(values) != 2:
        raise ValueError(f"factor {factor!r} has {len(values)} levels ({', '.join(map(str, values))}); a binary factor is needed")
    a, b = values
    rows = []
    groups = games.groupby(list(by)) if by else [((), games)]
    for key, sub in groups:
        keys = key if isinstance(key, tuple) else (key,)
        for metric in metrics:
            if metric not in sub:
                continue
            res = welch(sub.loc[sub[factor] == a, metric], sub.loc[sub[factor] == b, metric], level)
            rows.append({**dict(zip(by, keys)), "factor": factor, "level_a": a, "level_b": b, "metric": metric, **res})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["p_bh"] = bh_adjust(out["p"])
    out["significant"] = out["p_bh"] < alpha
    return out


def binary_factors(games: pd.DataFrame, candidates: Sequence[str]) -> list[str]:
    """The ``candidates`` columns that take exactly two values in ``games``."""
    return [c for c in candidates if c in games and games[c].dropna().nunique() == 2]
