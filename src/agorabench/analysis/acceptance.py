"""Inequity-averse logit acceptance: a responder's accept/reject decisions (GLEE bargaining and
negotiation) fitted with the Fehr–Schmidt utility of ``fehr_schmidt.py``.

Each decision is a choice between two options: *accept* gives the responder ``own`` and the
proposer ``other``; *reject* gives ``reject_own`` and ``reject_other`` (default 0 and 0: the
offer is read as an ultimatum, the value of going on bargaining is left out). Then

    P(accept) = 1 / (1 + exp(−λ·(U(own, other) − U(reject_own, reject_other))))

with U(x, y) = x − α·max(y − x, 0) − β·max(x − y, 0). Payoffs are in units of the amount at
stake M (so they compare across M).

Threshold. For an offer that splits the pie (x, 1 − x) and a rejection worth 0 to both, the
responder is indifferent where x − α·(1 − 2x) = 0, i.e. at the own share τ = α/(1 + 2α) for
α > 0 and τ = 0 otherwise (Fehr & Schmidt's rejection threshold in the ultimatum game). τ
increases with α, so its interval is the image of α's.

Identification: β only enters through offers that leave the responder ahead; if none does, β
is fixed at 0 and the fit says so. A responder that never rejects, or follows a sharp cut-off,
puts λ at its cap; τ is then pinned between the largest rejected and the smallest accepted share.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .fehr_schmidt import Bounds, ChoiceSet, Estimate, fit

#: α may be large here: a threshold close to ½ needs α = τ/(1 − 2τ) (τ = 0.47 → α ≈ 7.8).
ACCEPTANCE_BOUNDS = Bounds(alpha=(-2.0, 40.0), beta=(-2.0, 2.0))


def threshold(alpha: float) -> float:
    """Own share of an even pie at which acceptance is 50 % with a rejection worth 0:
    τ = α/(1 + 2α) for α > 0, else 0."""
    return alpha / (1 + 2 * alpha) if alpha > 0 else 0.0


def decision_set(decisions: pd.DataFrame) -> ChoiceSet:
    """Decisions (columns ``own``, ``other``, ``accept`` and optionally ``reject_own``,
    ``reject_other``, ``game_id``) as two-option choices: option 0 accept, option 1 reject."""
    n = len(decisions)
    zero = pd.Series(np.zeros(n), index=decisions.index)
    own = np.column_stack([decisions["own"].astype(float), decisions.get("reject_own", zero).astype(float)])
    other = np.column_stack([decisions["other"].astype(float), decisions.get("reject_other", zero).astype(float)])
    chosen = np.where(decisions["accept"].astype(bool), 0, 1)
    cluster = pd.factorize(decisions["game_id"])[0] if "game_id" in decisions else np.arange(n)
    return ChoiceSet(own, other, chosen, np.ones(n), np.asarray(cluster))


def fit_acceptance(decisions: pd.DataFrame, ci: str | None = "profile", level: float = 0.95, bounds: Bounds = ACCEPTANCE_BOUNDS, **kwargs: Any) -> tuple[Estimate, dict[str, float]]:
    """The fit (:class:`fehr_schmidt.Estimate`) and the threshold τ with its interval."""
    est = fit(decision_set(decisions), ci=ci, level=level, bounds=bounds, **kwargs)
    lo, hi = est.ci.get("alpha", (math.nan, math.nan))
    tau = {"threshold": threshold(est.alpha), "threshold_low": threshold(lo) if not math.isnan(lo) else math.nan, "threshold_high": threshold(hi) if not math.isnan(hi) else math.nan}
    return est, tau


def fit_groups(decisions: pd.DataFrame, by: Sequence[str] = ("model",), **kwargs: Any) -> pd.DataFrame:
    """One acceptance fit per group: decisions, accept rate, (α, β, λ) with intervals, τ."""
    rows = []
    for key, sub in decisions.groupby(list(by), dropna=False):
        keys = key if isinstance(key, tuple) else (key,)
        est, tau = fit_acceptance(sub, **kwargs)
        rows.append({**dict(zip(by, keys)), "accept_rate": float(sub["accept"].astype(bool).mean()), **tau, **est.row()})
    return pd.DataFrame(rows)
