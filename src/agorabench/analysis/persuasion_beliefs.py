"""Persuasion (GLEE §2.3) against its benchmarks: the seller's lying rate against the
commitment policy, and the buyer's response to a recommendation against a Bayesian buyer.

Input: one row per round with ``game_id``, ``high`` (the product was of high quality),
``recommended`` (the seller's message recommended buying), ``bought``, the prior ``p``, the value
``v`` of a high product (price 1), and the seats ``model_alice`` (seller) / ``model_bob`` (buyer).

Seller. Lying rate ℓ = P(recommend | low). The Bayesian-persuasion commitment benchmark
recommends a high product always and a low one with q = min(p/(1 − p)·(v − 1), 1), the most
that still leaves a believing buyer willing to buy.

Buyer. Against the sellers it actually met (pooled over its games), a Bayesian buyer holds the
posterior μ(rec) = p·r_H / (p·r_H + (1 − p)·r_L) after a recommendation (r_H, r_L the sellers'
recommendation rates for high and low products), μ(no rec) likewise with 1 − r_H, 1 − r_L, and
buys exactly when μ·v ≥ 1 (price 1). The gap is the buyer's buy rate after a recommendation
minus that Bayesian buy rate (positive: more credulous than Bayes). Rates have Wilson intervals;
for the pooled ``human`` (rows with ``participant_alice`` / ``participant_bob``, the seat's
participant), cluster-robust by participant (:func:`..stats.share_ci`).
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from .stats import row_clusters, share_ci


def commitment_q(p: float, v: float) -> float:
    """q = min(p/(1 − p)·(v − 1), 1): the committed policy's chance of recommending a low product."""
    return 1.0 if p >= 1 else max(0.0, min(p / (1 - p) * (v - 1), 1.0))


def _rate(mask: pd.Series, clusters: pd.Series | None = None) -> tuple[float, float, float, int]:
    """Share of true values with its Wilson interval, clustered by ``clusters`` (one label per
    row of ``mask``; the participant of a person's rows, each model row its own)."""
    return share_ci(mask, clusters=clusters.loc[mask.index] if clusters is not None else None)


def seller_lying(rounds: pd.DataFrame, by: Sequence[str] = ("model_alice", "p", "v")) -> pd.DataFrame:
    """Per seller group: lying rate P(rec | low) with interval, the benchmark q, their
    difference, and P(rec | high)."""
    rows = []
    clusters = row_clusters(rounds, list(by))
    for key, sub in rounds.groupby(list(by)):
        keys = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        low, high = sub[~sub["high"].astype(bool)], sub[sub["high"].astype(bool)]
        lie, lo, hi, n_low = _rate(low["recommended"].astype(bool), clusters)
        rec_high, _, _, n_high = _rate(high["recommended"].astype(bool), clusters)
        q = float(pd.Series([commitment_q(p, v) for p, v in zip(sub["p"], sub["v"])]).mean())
        rows.append({**keys, "low_rounds": n_low, "lying_rate": lie, "low": lo, "high": hi, "commitment_q": q, "lying_minus_q": lie - q, "high_rounds": n_high, "recommend_when_high": rec_high})
    return pd.DataFrame(rows)


def buyer_update(rounds: pd.DataFrame, by: Sequence[str] = ("model_bob", "p", "v")) -> pd.DataFrame:
    """Per buyer group: buy rates after a recommendation and without one (intervals), the
    Bayesian posteriors and buy rates given the sellers met, and the gaps (module doc)."""
    rows = []
    clusters = row_clusters(rounds, list(by))
    for key, sub in rounds.groupby(list(by)):
        keys = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        high = sub["high"].astype(bool)
        rec = sub["recommended"].astype(bool)
        p = float(sub["p"].mean())
        v = float(sub["v"].mean())
        r_h = rec[high].mean() if high.any() else math.nan
        r_l = rec[~high].mean() if (~high).any() else math.nan
        mu_rec = _posterior(p, r_h, r_l)
        mu_no = _posterior(p, 1 - r_h, 1 - r_l)
        bayes_rec = float(mu_rec * v >= 1 - 1e-9) if not math.isnan(mu_rec) else math.nan
        bayes_no = float(mu_no * v >= 1 - 1e-9) if not math.isnan(mu_no) else math.nan
        b_rec, lo, hi, n_rec = _rate(sub.loc[rec, "bought"].astype(bool), clusters)
        b_no, lo2, hi2, n_no = _rate(sub.loc[~rec, "bought"].astype(bool), clusters)
        rows.append({
            **keys, "rounds_rec": n_rec, "buy_after_rec": b_rec, "low": lo, "high": hi, "posterior_rec": mu_rec, "bayes_buy_rec": bayes_rec, "gap_rec": b_rec - bayes_rec,
            "rounds_no_rec": n_no, "buy_after_no_rec": b_no, "low_no_rec": lo2, "high_no_rec": hi2, "posterior_no_rec": mu_no, "bayes_buy_no_rec": bayes_no, "gap_no_rec": b_no - bayes_no,
        })
    return pd.DataFrame(rows)


def _posterior(p: float, r_high: float, r_low: float) -> float:
    """P(high | signal) = p·r_high / (p·r_high + (1 − p)·r_low); NaN if the signal never occurs."""
    if math.isnan(r_high) or math.isnan(r_low):
        return math.nan
    den = p * r_high + (1 - p) * r_low
    return p * r_high / den if den > 0 else math.nan
