"""Survival of a shared resource: Kaplan–Meier curves with censoring, the share of runs
collapsed by each month, inequality (Gini) per month and the mean resource trajectory.

A run is an *event* when its resource collapsed, at month ``survival_time``; a run that lasted
every month, or stopped early without collapsing (a log cut off before the end), is *censored*
at the last month it was observed: it tells us the resource lasted at least that long.

Kaplan–Meier: Ŝ(t) = Π_{t_i ≤ t} (1 − d_i/n_i), with d_i collapses at month t_i and n_i runs
still at risk (observed and not collapsed) just before t_i. Pointwise interval by Greenwood's
variance on the log(−log) scale: Var(log Ŝ) = Σ d_i/(n_i(n_i − d_i)), and
Ŝ^{exp(±z·se)} with se = √Var(log Ŝ)/|log Ŝ| (Kalbfleisch–Prentice).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from .stats import Bounds, mean_ci


def kaplan_meier(durations: Sequence[float], events: Sequence[bool], level: float = 0.95) -> pd.DataFrame:
    """Kaplan–Meier table: one row per distinct time with an event or a censoring — time,
    at_risk, events, censored, survival, low, high (see module doc). Starts with time 0, S = 1."""
    t = np.asarray(durations, dtype=float)
    e = np.asarray(events, dtype=bool)
    z = stats.norm.ppf((1 + level) / 2)
    rows = [{"time": 0.0, "at_risk": len(t), "events": 0, "censored": 0, "survival": 1.0, "low": 1.0, "high": 1.0}]
    s, var = 1.0, 0.0
    for time in np.unique(t):
        at_risk = int(np.sum(t >= time))
        d = int(np.sum((t == time) & e))
        c = int(np.sum((t == time) & ~e))
        if d:
            s *= 1 - d / at_risk
            var += d / (at_risk * (at_risk - d)) if at_risk > d else math.inf
        lo, hi = _log_log_interval(s, var, z)
        rows.append({"time": float(time), "at_risk": at_risk, "events": d, "censored": c, "survival": s, "low": lo, "high": hi})
    return pd.DataFrame(rows)


def _log_log_interval(s: float, var: float, z: float) -> tuple[float, float]:
    if s <= 0 or s >= 1 or not math.isfinite(var):
        return (s, s) if s >= 1 else (0.0, 0.0) if s <= 0 else (math.nan, math.nan)
    se = math.sqrt(var) / abs(math.log(s))
    return (s ** math.exp(z * se), s ** math.exp(-z * se))


def survival_at(table: pd.DataFrame, time: float) -> tuple[float, float, float]:
    """Ŝ(time) with its interval from a :func:`kaplan_meier` table (step function)."""
    row = table[table["time"] <= time].iloc[-1]
    return float(row["survival"]), float(row["low"]), float(row["high"])


def runs_table(games: pd.DataFrame, group: str = "model") -> pd.DataFrame:
    """Per run: group, duration (``survival_time``), event (collapsed) and censored. Uses the
    game's ``censored`` flag when the data have one (imported cut-off runs), else censored =
    not collapsed."""
    g = games.copy()
    collapsed = g["collapsed"].fillna(False).astype(bool) if "collapsed" in g else (g["survived"].astype(float) == 0) & (g["survival_time"] < g.get("months", np.inf))
    if "censored" in g:
        censored = g["censored"].fillna(0).astype(float) > 0
        collapsed = collapsed & ~censored
    return pd.DataFrame({"game_id": g["game_id"], group: g[group], "duration": g["survival_time"].astype(float), "event": collapsed.astype(bool), "censored": ~collapsed.astype(bool)})


def km_by_group(runs: pd.DataFrame, group: str = "model", level: float = 0.95) -> pd.DataFrame:
    """:func:`kaplan_meier` per group of a :func:`runs_table`, stacked with a ``group`` column."""
    parts = []
    for key, sub in runs.groupby(group):
        km = kaplan_meier(sub["duration"], sub["event"], level)
        km.insert(0, group, key)
        parts.append(km)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def collapsed_by_month(runs: pd.DataFrame, horizon: int, group: str = "model") -> pd.DataFrame:
    """Per group and month m = 1..horizon: the share of runs collapsed by m among runs observed
    through m or collapsed earlier (naive share; cut-off runs leave the denominator after their
    last month), and 1 − Ŝ(m), the censoring-aware Kaplan–Meier share."""
    rows = []
    for key, sub in runs.groupby(group):
        km = kaplan_meier(sub["duration"], sub["event"])
        for m in range(1, horizon + 1):
            known = sub[(sub["event"] & (sub["duration"] <= m)) | (sub["duration"] >= m)]
            share = float((known["event"] & (known["duration"] <= m)).mean()) if len(known) else math.nan
            s, lo, hi = survival_at(km, m)
            rows.append({group: key, "month": m, "runs_known": len(known), "share_collapsed": share, "km_collapsed": 1 - s, "km_low": 1 - hi, "km_high": 1 - lo})
    return pd.DataFrame(rows)


def gini(values: Sequence[float]) -> float:
    """Gini coefficient Σ_i Σ_j |x_i − x_j| / (2·n²·x̄); 0 when all are equal, NaN when Σx = 0."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0 or x.sum() == 0:
        return math.nan
    return float(np.abs(x[:, None] - x[None, :]).sum() / (2 * len(x) ** 2 * x.mean()))


def gini_by_month(harvests: pd.DataFrame, group_of: pd.Series, level: float = 0.95, bounds: Bounds | None = (0.0, 1.0)) -> pd.DataFrame:
    """Gini of the amounts collected in each run and month (``harvests``: game_id, month,
    collected per agent), then per group (``group_of``: game_id → group) and month the mean
    over runs with an interval within ``bounds`` (the Gini's range 0–1: the percentile
    bootstrap of :func:`~agorabench.analysis.stats.mean_ci`, never below 0; None: the t
    interval). Months in which nobody took anything have no Gini and are left out."""
    per_run = harvests.groupby(["game_id", "month"])["collected"].agg(gini).rename("gini").reset_index()
    per_run["group"] = per_run["game_id"].map(group_of)
    rows = []
    for (key, month), sub in per_run.groupby(["group", "month"]):
        m, lo, hi, n = mean_ci(sub["gini"], level, bounds)
        rows.append({"group": key, "month": int(month), "gini": m, "low": lo, "high": hi, "runs": n})
    return pd.DataFrame(rows)


def resource_trajectory(stock: pd.DataFrame, runs: pd.DataFrame, horizon: int, group: str = "model", level: float = 0.95, bounds: Bounds | None = (0.0, None)) -> pd.DataFrame:
    """Mean resource left after harvesting per group and month with a band within ``bounds``
    (the stock's range, 0 to the capacity when the caller knows it: the percentile bootstrap of
    :func:`~agorabench.analysis.stats.mean_ci`, so a 100-ton lake's band never reaches 116;
    None: the t band). ``stock``: game_id, month, stock_after (one row per run and month). A
    collapsed run keeps its last value for the later months (the resource stays collapsed); a
    censored run leaves the mean after its last observed month."""
    wide = stock.pivot_table(index="game_id", columns="month", values="stock_after", aggfunc="first").reindex(columns=range(1, horizon + 1))
    collapsed = set(runs.loc[runs["event"], "game_id"])
    filled = wide.copy()
    for gid in filled.index:
        if gid in collapsed:
            filled.loc[gid] = filled.loc[gid].ffill()
    rows = []
    for key, sub in runs.groupby(group):
        block = filled.reindex([g for g in sub["game_id"] if g in filled.index])
        for m in range(1, horizon + 1):
            mean, lo, hi, n = mean_ci(block[m] if m in block else [], level, bounds)
            rows.append({group: key, "month": m, "mean": mean, "low": lo, "high": hi, "runs": n})
    return pd.DataFrame(rows)
