"""Small statistics shared by the reports. The quantiles come from ``scipy.special`` (the
functions scipy.stats calls): importing scipy.stats alone takes 0.3 s.

Intervals respect a metric's range: a metric with a stated range (``bounds``, either end may be
None) gets the percentile bootstrap of its mean, which lies between the smallest and the largest
value and so never leaves the range; an unbounded metric the t interval; a share of successes
Wilson's interval. Model-based intervals of a bounded quantity (a regression's adjusted mean) are
clipped to the range by :func:`clip_interval`, and the table says so. An interval always holds
its own estimate (a rounding error of the mean never puts it outside), and the figures draw
whatever an estimator gives (``plots.whiskers``: no negative whisker).

Clustered rows. The games (or turns) of one participant are not independent draws: where rows
carry a cluster (``clusters=``; the reports' ``human`` rows pool many people, each row's
participant from ``participant_<role>`` / ``participant``, see :func:`row_clusters`), a bounded
metric gets the percentile bootstrap over clusters (whole participants drawn with replacement)
and an unbounded one the cluster-robust (CR1) standard error of the mean with a t quantile on
G − 1 degrees of freedom (G clusters); a share (:func:`share_ci`) a cluster-robust Wilson
interval (Wilson's on the effective sample size n / deff). Rows that are each their own cluster
give exactly the unclustered intervals."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import pandas as pd
from scipy import special


#: A metric's range (low, high); None for an open end.
Bounds = tuple[Optional[float], Optional[float]]

#: Resamples of the percentile bootstrap (fixed seed: a report's numbers are reproducible).
BOOTSTRAP_REPS = 2000


def mean_ci(values, level: float = 0.95, bounds: Bounds | None = None, clusters=None) -> tuple[float, float, float, int]:
    """Mean with a confidence interval; returns (mean, low, high, n), the interval NaN for n < 2.
    Without ``bounds``: mean ± t_{(1+level)/2, n−1}·s/√n. With ``bounds`` (a bounded metric): the
    (1−level)/2 and (1+level)/2 quantiles of the means of :data:`BOOTSTRAP_REPS` resamples
    (percentile bootstrap, seed 0), which stay within the range. ``clusters`` (one label per
    value, e.g. the participant): when some label repeats, the interval is clustered (module
    docstring; NaN for fewer than two clusters)."""
    series = pd.Series(values, dtype=float)
    if clusters is not None:
        labels = pd.Series(list(clusters), index=series.index, dtype=object)
        ok = series.notna()
        labels = labels[ok]
        if labels.nunique() < int(ok.sum()):
            return _clustered_mean_ci(series[ok].to_numpy(), labels.to_numpy(), level, bounds)
    x = series.dropna().to_numpy()
    n = len(x)
    if n == 0:
        return (math.nan, math.nan, math.nan, 0)
    m = float(np.mean(x))
    if bounds is not None:  # a mean of values in the range is in the range (np.mean can miss it by a rounding error)
        m = _snap(m, bounds)
    if n < 2:
        return (m, math.nan, math.nan, 1)
    if bounds is not None:
        lo, hi = clip_interval(*bootstrap_mean_ci(x, level), bounds)
        # the interval holds its own estimate (a bootstrap of equal values gives [0.4, 0.4] for
        # a mean that np.mean computes as 0.4000000000000001)
        return (m, min(lo, m), max(hi, m), n)
    half = float(special.stdtrit(n - 1, (1 + level) / 2) * np.std(x, ddof=1) / math.sqrt(n))  # the t quantile
    return (m, m - half, m + half, n)


def _clustered_mean_ci(x: np.ndarray, labels: np.ndarray, level: float, bounds: Bounds | None, reps: int = BOOTSTRAP_REPS, seed: int = 0) -> tuple[float, float, float, int]:
    """:func:`mean_ci` of ``x`` whose rows come in clusters ``labels``: a cluster bootstrap
    (bounded) or the CR1 standard error with G − 1 degrees of freedom (unbounded)."""
    n = len(x)
    m = float(np.mean(x))
    if bounds is not None:
        m = _snap(m, bounds)
    codes, uniq = pd.factorize(labels)
    g = len(uniq)
    if g < 2:
        return (m, math.nan, math.nan, n)
    sums = np.bincount(codes, weights=x, minlength=g)
    counts = np.bincount(codes, minlength=g).astype(float)
    if bounds is not None:
        if np.all(x == x[0]):
            return (m, m, m, n)
        rng = np.random.default_rng(seed)
        means = np.empty(reps)
        step = max(1, 4_000_000 // g)
        for start in range(0, reps, step):
            k = min(step, reps - start)
            pick = rng.integers(0, g, size=(k, g))
            means[start : start + k] = sums[pick].sum(axis=1) / counts[pick].sum(axis=1)
        lo, hi = clip_interval(*(float(q) for q in np.quantile(means, [(1 - level) / 2, (1 + level) / 2])), bounds)
        return (m, min(lo, m), max(hi, m), n)
    resid = sums - counts * m  # Σ_g (x_i − m) per cluster
    se = math.sqrt(g / (g - 1) * float(resid @ resid)) / n
    half = float(special.stdtrit(g - 1, (1 + level) / 2) * se)
    return (m, m - half, m + half, n)


def row_clusters(df: pd.DataFrame, by: str | list[str] | None = None) -> pd.Series | None:
    """The cluster of each row of a (pooled) games or turns frame for :func:`mean_ci`: the
    participant for a person's row (``participant_<role>`` beside ``model_<role>``,
    ``participant`` beside ``model``; ``by``: the model columns the rows are grouped by, default
    every participant column), its own for any other; None when the frame has no such column
    (no person played)."""
    columns = [by] if isinstance(by, str) else list(by or [])
    people = ["participant" + c[len("model") :] for c in columns if isinstance(c, str) and (c == "model" or c.startswith("model_"))]
    if by is None:
        people = [c for c in df.columns if isinstance(c, str) and (c == "participant" or c.startswith("participant_"))]
    people = [c for c in people if c in df.columns]
    if not people:
        return None
    own = pd.Series([f"row:{i}" for i in range(len(df))], index=df.index, dtype=object)
    for c in reversed(people):
        own = df[c].where(df[c].notna(), own)
    return own


def _snap(m: float, bounds: Bounds) -> float:
    """``m`` put on an end of ``bounds`` that it passes by no more than a rounding error."""
    lo, hi = bounds
    if lo is not None and lo - 1e-9 * (1 + abs(lo)) <= m < lo:
        return float(lo)
    if hi is not None and hi < m <= hi + 1e-9 * (1 + abs(hi)):
        return float(hi)
    return m


def bootstrap_mean_ci(x: np.ndarray, level: float = 0.95, reps: int = BOOTSTRAP_REPS, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``x``: quantiles of the means of ``reps``
    resamples with replacement (drawn in chunks of at most ~4 million values)."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if np.all(x == x[0]):
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    means = np.empty(reps)
    step = max(1, 4_000_000 // n)
    for start in range(0, reps, step):
        k = min(step, reps - start)
        means[start : start + k] = x[rng.integers(0, n, size=(k, n))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return (float(lo), float(hi))


def clip_interval(low: float, high: float, bounds: Bounds | None) -> tuple[float, float]:
    """The interval cut to the metric's range (an open end of ``bounds`` cuts nothing)."""
    if bounds is None:
        return (low, high)
    lo, hi = bounds
    if lo is not None:
        low, high = max(low, lo), max(high, lo)
    if hi is not None:
        low, high = min(low, hi), min(high, hi)
    return (low, high)


def leaves_range(low: float, high: float, bounds: Bounds | None) -> bool:
    """Whether the interval reaches outside the metric's range."""
    if bounds is None:
        return False
    lo, hi = bounds
    return bool((lo is not None and low < lo) or (hi is not None and high > hi))


def summarise(df: pd.DataFrame, by: str | list[str], columns: list[str], level: float = 0.95, bounds: dict[str, Bounds] | None = None) -> pd.DataFrame:
    """Mean and CI of each column per group, long format: group, metric, mean, low, high, n.
    A column with a range in ``bounds`` gets the bootstrap interval of :func:`mean_ci`; rows of
    a person (the pooled ``human``) are clustered by participant (:func:`row_clusters` of the
    model columns in ``by``)."""
    rows = []
    clusters = row_clusters(df, by)
    for key, group in df.groupby(by, dropna=False):
        labels = clusters.loc[group.index] if clusters is not None else None
        for col in columns:
            if col not in group:
                continue
            m, lo, hi, n = mean_ci(group[col], level, (bounds or {}).get(col), clusters=labels)
            keys = key if isinstance(key, tuple) else (key,)
            rows.append({**dict(zip([by] if isinstance(by, str) else by, keys)), "metric": col, "mean": m, "low": lo, "high": hi, "n": n})
    return pd.DataFrame(rows)


def declared_ranges(game_cls, games: pd.DataFrame) -> dict[str, Bounds]:
    """The metric ranges ``game_cls`` declares (``Game.metric_ranges``) joined over the
    configurations of ``games`` (its configuration columns, a missing value the default; rows of
    another game left out; no readable configuration: the default one)."""
    if "game" in games and getattr(game_cls, "name", ""):
        games = games[games["game"] == game_cls.name]
    fields = [f for f in game_cls.Config.model_fields if f in games]
    configs = []
    if fields and len(games):
        block = games[fields]
        distinct = block.loc[block.astype(str).drop_duplicates().index]
        for row in distinct.to_dict("records"):
            values = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items() if not (isinstance(v, float) and math.isnan(v)) and v is not None}
            try:
                configs.append(game_cls.Config(**values))
            except ValueError:  # a stored configuration this version no longer reads
                continue
    return game_cls.ranges_over(configs)


def proportion_ci(successes: int, n: int, level: float = 0.95) -> tuple[float, float, float]:
    """Share k/n with Wilson's score interval:
    (p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n). NaN for n = 0."""
    if n == 0:
        return (math.nan, math.nan, math.nan)
    return _wilson(successes / n, n, level)


def _wilson(p: float, n: float, level: float) -> tuple[float, float, float]:
    """Wilson's score interval of a share ``p`` seen on ``n`` (> 0) independent draws; ``n`` may
    be an effective sample size (not a whole number)."""
    z = float(special.ndtri((1 + level) / 2))  # the standard normal quantile
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (p, min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half)))


def share_ci(outcomes, level: float = 0.95, clusters=None) -> tuple[float, float, float, int]:
    """Share of true ``outcomes`` (NaN left out) with an interval; returns (share, low, high, n).

    Without ``clusters``, or when every row is its own cluster: exactly :func:`proportion_ci`
    (Wilson). When some cluster label repeats (one participant's several games), a
    cluster-robust Wilson interval: Wilson's interval on the effective sample size
    n_eff = n / deff, deff = V_CR1 / (p̂(1−p̂)/n) the design effect, V_CR1 = G/(G−1)·Σ_g (k_g −
    n_g·p̂)² / n² the cluster-robust variance of p̂ (G clusters, k_g successes of n_g rows);
    n_eff is at most n (clustering never narrows the interval; clusters that all have the share
    p̂ give n). A share of 0 or 1 has no variance to compare: n_eff = G (each participant one
    draw). NaN interval for fewer than two clusters."""
    x = pd.Series(outcomes, dtype=float)
    ok = x.notna()
    values = x[ok].to_numpy()
    n = len(values)
    if n == 0:
        return (math.nan, math.nan, math.nan, 0)
    if clusters is not None:
        labels = pd.Series(list(clusters), index=x.index, dtype=object)[ok].to_numpy()
        codes, uniq = pd.factorize(labels)
        g = len(uniq)
        if g < n:
            p = float(values.mean())
            if g < 2:
                return (p, math.nan, math.nan, n)
            k = np.bincount(codes, weights=values, minlength=g)
            m = np.bincount(codes, minlength=g).astype(float)
            resid = k - m * p
            v_cr = g / (g - 1) * float(resid @ resid) / (n * n)
            if p in (0.0, 1.0):
                n_eff = float(g)
            else:
                n_eff = float(n) if v_cr <= 0 else min(float(n), p * (1 - p) / v_cr)
            return (*_wilson(p, n_eff, level), n)
    share, low, high = proportion_ci(int(values.sum()), n, level)
    return (share, low, high, n)
