"""Fehr–Schmidt inequity aversion estimated from discrete choices by maximum likelihood.

Model. A decision offers options k, each giving the decider ``own_k`` and the other side
``peer_k``. Its utility is

    U_k = own_k − α·max(peer_k − own_k, 0) − β·max(own_k − peer_k, 0)

(α: envy, aversion to being behind; β: guilt, aversion to being ahead) and the decider picks
option k with the logit probability P(k) = exp(λ·U_k) / Σ_j exp(λ·U_j), λ ≥ 0 the precision
(λ → ∞ is a strict maximiser, λ = 0 chooses uniformly).

Estimation. (α, β, log λ) maximise the log-likelihood Σ_i w_i·log P_i(chosen_i) minus a weak
ridge ``RIDGE/2·(α² + β²)`` (a N(0, 10²) prior) that only matters when the choices cannot
tell α or β apart, e.g. a deterministic self-maximiser, whose estimate then sits at α = β = 0
instead of wandering in the set of values that fit equally well. Parameters live in boxes
(``Bounds``); λ is capped at ``lam_max`` (default 100 over the median own-payoff difference),
and an estimate at the cap means (near-)deterministic choices. The maximiser is a projected
Newton method on the analytic gradient and Hessian (:mod:`agorabench.analysis.optimise`), from several starts for the
point estimate; a start that does not converge is continued by scipy's L-BFGS-B.

Confidence intervals (95 % by default):

- ``"profile"``: {θ_j : 2·(ℓ̂ − ℓ_p(θ_j)) ≤ χ²₁(level)}, ℓ_p maximising over the other
  parameters. Assumes independent choices.
- ``"bootstrap"``: percentile interval over refits on games resampled with replacement
  (clusters = ``game_id``), which keeps the dependence between a game's turns. The decisions of
  people (the pooled ``human``, whose rows carry ``participant``) are resampled by participant
  instead: all of one person's games are drawn together (``ChoiceSet.unit``), so a person who
  played several games counts as one draw.

An end of an interval that reaches a bound is reported at the bound with a warning. With
deterministic choices (λ at its cap) every bootstrap resample is alike, so the profile interval
(the set of values consistent with the choices) is reported instead.

Identification. What the options vary in decides what can be learnt: with Δ the differences
between the options of one decision, λ needs Δown ≠ 0; α and β need Δd and Δa (d = behind,
a = ahead) that are not proportional to each other or to Δown. :func:`identification` states this
per decision set (e.g. per payoff matrix); a parameter the data cannot move is fixed at 0 and a
warning says so (on the envy paper's M1 alone only α − β is identified).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import optimize, special
from threadpoolctl import threadpool_limits

from .optimise import maximise

PARAMS = ("alpha", "beta", "lam")
RIDGE = 0.01


@dataclass(frozen=True)
class Bounds:
    """Search boxes: α ∈ alpha, β ∈ beta, λ ∈ (lam_min, lam_max]; ``lam_max=None`` scales the
    cap to the data (100 / median nonzero |Δown|)."""

    alpha: tuple[float, float] = (-2.0, 5.0)
    beta: tuple[float, float] = (-2.0, 2.0)
    lam_min: float = 1e-3
    lam_max: float | None = None


@dataclass
class ChoiceSet:
    """Decisions as arrays: ``own``/``peer`` (N × K payoffs, NaN where an option is absent),
    ``chosen`` (N option indices), ``weight`` (N counts), ``cluster`` (N game codes) and
    ``unit`` (N codes of what the bootstrap draws: the participant of a person's decisions;
    None: the game)."""

    own: np.ndarray
    peer: np.ndarray
    chosen: np.ndarray
    weight: np.ndarray
    cluster: np.ndarray
    unit: np.ndarray | None = None

    @property
    def behind(self) -> np.ndarray:
        return np.maximum(self.peer - self.own, 0.0)

    @property
    def ahead(self) -> np.ndarray:
        return np.maximum(self.own - self.peer, 0.0)

    @functools.cached_property
    def filled(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(present, own, behind, ahead) with absent options at 0, computed once per set (the
        likelihood is evaluated thousands of times on the same arrays)."""
        present = ~np.isnan(self.own)
        return present, np.where(present, self.own, 0.0), np.where(present, self.behind, 0.0), np.where(present, self.ahead, 0.0)

    @functools.cached_property
    def chosen_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(own, behind, ahead) of the chosen option of each decision."""
        _, own, d, a = self.filled
        rows = np.arange(len(self.chosen))
        return own[rows, self.chosen], d[rows, self.chosen], a[rows, self.chosen]

    def unique_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(first, inv): the index of each distinct decision's first row and, per row, which
        distinct decision it is (identical payoffs and choice)."""
        key = np.concatenate([np.nan_to_num(self.own, nan=1e18), np.nan_to_num(self.peer, nan=1e18), self.chosen[:, None]], axis=1)
        # each column as sorted codes (hash-based), a row's codes combined into one number, the
        # rank of that number among the distinct ones the group: groups numbered in sorted key
        # order, as a sorted groupby numbers them (which took 5× longer)
        inv = np.zeros(len(key), dtype=np.int64)
        for col in key.T:
            codes, uniques = pd.factorize(col, sort=True)
            if inv.size and (int(inv.max()) + 1) * len(uniques) >= 2**62:  # renumber before the product overflows
                inv = np.unique(inv, return_inverse=True)[1].reshape(-1)
            inv = inv * len(uniques) + codes
        inv = np.unique(inv, return_inverse=True)[1].reshape(-1) if len(key) else np.zeros(0, dtype=int)
        first = np.zeros(int(inv.max()) + 1 if len(inv) else 0, dtype=int)
        first[inv[::-1]] = np.arange(len(inv))[::-1]
        return first, inv

    def aggregate(self, weight: np.ndarray | None = None, rows: tuple[np.ndarray, np.ndarray] | None = None) -> "ChoiceSet":
        """Identical decisions merged into one row with summed weight (the likelihood only needs
        counts); ``weight`` overrides the row weights (bootstrap draws); ``rows`` is
        :meth:`unique_rows`, when already computed."""
        w = self.weight if weight is None else weight
        first, inv = self.unique_rows() if rows is None else rows
        sums = np.bincount(inv, weights=w, minlength=len(first))
        keep = sums > 0
        idx = first[keep]
        return ChoiceSet(self.own[idx], self.peer[idx], self.chosen[idx], sums[keep], np.zeros(int(keep.sum()), dtype=int))


def utilities(own: np.ndarray, peer: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """U = own − α·max(peer − own, 0) − β·max(own − peer, 0), elementwise."""
    own, peer = np.asarray(own, float), np.asarray(peer, float)
    return own - alpha * np.maximum(peer - own, 0.0) - beta * np.maximum(own - peer, 0.0)


def choice_probabilities(own: Sequence[float], peer: Sequence[float], alpha: float, beta: float, lam: float) -> np.ndarray:
    """Logit choice probabilities P(k) ∝ exp(λ·U_k) over one decision's options."""
    u = lam * utilities(np.asarray(own, float), np.asarray(peer, float), alpha, beta)
    u = u - np.max(u)
    e = np.exp(u)
    return e / e.sum()


# ----------------------------------------------------------------------------------------
# likelihood


def _choice_probabilities(theta: np.ndarray, data: ChoiceSet) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """λ, U = own − α·d − β·a, z = λ·U (−∞ for absent options), its row maxima, the row sums
    s = Σ exp(z − max) and the logit probabilities p = exp(z − max) / s."""
    alpha, beta, loglam = theta
    lam = math.exp(loglam)
    present, own, d, a = data.filled
    u = own - alpha * d - beta * a
    z = np.where(present, lam * u, -np.inf)
    zmax = z.max(axis=1, keepdims=True)
    e = np.exp(z - zmax)
    s = e.sum(axis=1, keepdims=True)
    return lam, u, z, zmax, s, e / s


def _loglik_grad(theta: np.ndarray, data: ChoiceSet) -> tuple[float, np.ndarray]:
    """Log-likelihood and its gradient in (α, β, log λ)."""
    lam, u, z, zmax, s, p = _choice_probabilities(theta, data)
    _, _, d, a = data.filled
    rows = np.arange(len(data.chosen))
    c = data.chosen
    w = data.weight
    ll = float(np.sum(w * (z[rows, c] - zmax[:, 0] - np.log(s[:, 0]))))
    ed = (p * d).sum(axis=1)
    ea = (p * a).sum(axis=1)
    eu = (p * u).sum(axis=1)
    g_alpha = float(np.sum(w * lam * (ed - d[rows, c])))
    g_beta = float(np.sum(w * lam * (ea - a[rows, c])))
    g_loglam = float(np.sum(w * lam * (u[rows, c] - eu)))
    return ll, np.array([g_alpha, g_beta, g_loglam])


def _objective(theta: np.ndarray, data: ChoiceSet) -> tuple[float, np.ndarray]:
    ll, g = _loglik_grad(theta, data)
    pen = 0.5 * RIDGE * (theta[0] ** 2 + theta[1] ** 2)
    g = g - RIDGE * np.array([theta[0], theta[1], 0.0])
    return ll - pen, g


def _derivatives(theta: np.ndarray, data: ChoiceSet) -> tuple[float, np.ndarray, np.ndarray]:
    """Penalised log-likelihood f, its gradient g and Hessian H in θ = (α, β, log λ).

    With z_k = λ·U_k, p = softmax(z) and x_k = ∂z_k/∂θ = (−λ·d_k, −λ·a_k, λ·U_k) (d behind, a
    ahead), one decision adds g = x_c − E_p[x] and H = S_c − E_p[S] − Cov_p(x), where S_k =
    ∂²z_k/∂θ² has only the log λ entries S_αL = −λ·d_k, S_βL = −λ·a_k, S_LL = λ·U_k. The ridge
    adds −RIDGE·(α, β, 0) to g and −RIDGE to H_αα and H_ββ."""
    alpha, beta, _ = theta
    lam, u, _, zmax, s, p = _choice_probabilities(theta, data)
    _, _, d, a = data.filled
    own_c, d_c, a_c = data.chosen_terms
    w = data.weight
    u_c = own_c - alpha * d_c - beta * a_c
    ll = float(w @ (lam * u_c - zmax[:, 0] - np.log(s[:, 0])))
    ed, ea, eu = (p * d).sum(axis=1), (p * a).sum(axis=1), (p * u).sum(axis=1)
    cd, ca, cu = d - ed[:, None], a - ea[:, None], u - eu[:, None]  # centred (absent options have p = 0)
    pd_, pa, pu = p * cd, p * ca, p * cu
    g = lam * np.array([w @ (ed - d_c), w @ (ea - a_c), w @ (u_c - eu)])
    l2 = lam * lam
    vdd, vda, vdu = w @ (pd_ * cd).sum(axis=1), w @ (pd_ * ca).sum(axis=1), w @ (pd_ * cu).sum(axis=1)
    vaa, vau, vuu = w @ (pa * ca).sum(axis=1), w @ (pa * cu).sum(axis=1), w @ (pu * cu).sum(axis=1)
    h_al, h_bl = g[0] + l2 * vdu, g[1] + l2 * vau
    H = np.array([[-l2 * vdd - RIDGE, -l2 * vda, h_al], [-l2 * vda, -l2 * vaa - RIDGE, h_bl], [h_al, h_bl, g[2] - l2 * vuu]])
    g[0] -= RIDGE * alpha
    g[1] -= RIDGE * beta
    return ll - 0.5 * RIDGE * (alpha * alpha + beta * beta), g, H


def _maximise(data: ChoiceSet, box: list[tuple[float, float]], free: list[int], start: np.ndarray, starts: Iterable[np.ndarray] = ()) -> tuple[float, np.ndarray]:
    """Maximise the penalised log-likelihood over the ``free`` coordinates of θ (others held at
    ``start``), from ``start`` and any extra ``starts`` (:func:`agorabench.analysis.optimise.maximise`)."""
    return maximise(lambda theta: _derivatives(theta, data), lambda theta: _objective(theta, data), box, free, start, starts)


# ----------------------------------------------------------------------------------------
# identification


def _design_rows(data: ChoiceSet) -> np.ndarray:
    """Rows (Δown, Δbehind, Δahead) between every option and the first option of its decision
    (row-major: decision by decision, options in order)."""
    present = ~np.isnan(data.own)
    if present.size == 0:
        return np.zeros((0, 3))
    first = np.argmax(present, axis=1)
    rows = np.arange(len(data.own))
    others = present.copy()
    others[rows, first] = False
    cols = []
    for m in (data.own, data.behind, data.ahead):
        cols.append((m - m[rows, first][:, None])[others])
    return np.stack(cols, axis=1).astype(float).reshape(-1, 3)


def identified(data: ChoiceSet) -> tuple[dict[str, float], str]:
    """Which parameters the decision sets can pin down (from the rank of the Δ design); returns
    the parameters to fix at 0 and a plain-words statement."""
    X = np.unique(np.round(_design_rows(data), 9), axis=0)
    if X.size == 0 or not np.any(np.abs(X) > 1e-12):
        return {"alpha": 0.0, "beta": 0.0}, "no decision offers a choice: nothing is identified"
    rank = np.linalg.matrix_rank(X, tol=1e-9)
    has_d = np.any(np.abs(X[:, 1]) > 1e-12)
    has_a = np.any(np.abs(X[:, 2]) > 1e-12)
    if rank == 3:
        return {}, "α, β and λ identified"
    if not has_d and not has_a:
        return {"alpha": 0.0, "beta": 0.0}, "only λ identified (the options never differ in inequality); α and β fixed at 0"
    if not has_d:
        return {"alpha": 0.0}, "β and λ identified; no option differs in being behind, so α is fixed at 0"
    if not has_a:
        return {"beta": 0.0}, "α and λ identified; no option differs in being ahead, so β is fixed at 0"
    if np.linalg.matrix_rank(X[:, 1:], tol=1e-9) == 1:
        return {"beta": 0.0}, "only α − β and λ identified (behind and ahead move together); β fixed at 0, α reads as α − β"
    return {"beta": 0.0}, "α, β and λ not separately identified (inequality moves with own payoff); β fixed at 0"


def identification(matrices: Mapping[str, Mapping[str, tuple[float, float]]]) -> pd.DataFrame:
    """Per payoff matrix, and for all together: what its choices identify (see module doc)."""
    rows = []
    for name, payoffs in matrices.items():
        rows.append({"decisions": name, "identifies": identified(_matrix_set(payoffs))[1]})
    every = [_matrix_set(p) for p in matrices.values()]
    pooled = ChoiceSet(*(np.concatenate([getattr(s, f) for s in every]) for f in ("own", "peer", "chosen", "weight", "cluster")))
    rows.append({"decisions": " + ".join(matrices), "identifies": identified(pooled)[1]})
    return pd.DataFrame(rows)


def _matrix_set(payoffs: Mapping[str, tuple[float, float]]) -> ChoiceSet:
    own = np.array([[float(v[0]) for v in payoffs.values()]])
    peer = np.array([[float(v[1]) for v in payoffs.values()]])
    return ChoiceSet(own, peer, np.array([0]), np.array([1.0]), np.array([0]))


# ----------------------------------------------------------------------------------------
# the fit


@dataclass
class Estimate:
    """A fitted inequity-averse logit: point estimates, intervals, fit and warnings."""

    alpha: float
    beta: float
    lam: float
    ci: dict[str, tuple[float, float]]
    loglik: float
    loglik_uniform: float
    n: int
    n_games: int
    identification: str
    fixed: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def k(self) -> int:
        """Free parameters of the fit: α, β and λ less those the choices fix."""
        return len(PARAMS) - len(self.fixed)

    @property
    def bic(self) -> float:
        """Schwarz's criterion k·ln(n) − 2·ℓ̂ (lower is better; comparable across models of the
        same decisions)."""
        return self.k * math.log(self.n) - 2 * self.loglik if self.n > 0 else math.nan

    @property
    def pseudo_r2(self) -> float:
        """McFadden's 1 − ℓ̂/ℓ_uniform (0: no better than chance, 1: perfect)."""
        return 1 - self.loglik / self.loglik_uniform if self.loglik_uniform < 0 else math.nan

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "games": self.n_games}
        for p in PARAMS:
            lo, hi = self.ci.get(p, (math.nan, math.nan))
            out.update({p: getattr(self, p), f"{p}_low": lo, f"{p}_high": hi})
        out.update({"loglik": self.loglik, "bic": self.bic, "pseudo_r2": self.pseudo_r2, "identification": self.identification, "warning": "; ".join(self.warnings)})
        return out


def choice_set(df: pd.DataFrame, options: Mapping[str, Mapping[str, tuple[float, float]]], key: str = "matrix", choice: str = "choice", cluster: str = "game_id", unit: str = "participant") -> ChoiceSet:
    """Decisions from a dataframe whose ``key`` column names the option set in ``options``
    (e.g. the payoff matrix) and whose ``choice`` column names the option picked. When the
    ``unit`` column holds a participant for some rows (a person's decisions), the bootstrap
    draws those by participant (each other row by its game); otherwise by game."""
    labels = sorted({lab for payoffs in options.values() for lab in payoffs})
    pos = {lab: i for i, lab in enumerate(labels)}
    names = list(options)
    table_own = np.full((len(names), len(labels)), np.nan)
    table_peer = np.full((len(names), len(labels)), np.nan)
    for j, m in enumerate(names):
        for lab, (o, p) in options[m].items():
            table_own[j, pos[lab]], table_peer[j, pos[lab]] = o, p
    which = pd.Categorical(df[key], categories=names).codes
    if (which < 0).any():
        raise KeyError(f"unknown option set {df[key][which < 0].iloc[0]!r}")
    picked = pd.Categorical(df[choice], categories=labels).codes
    if (picked < 0).any():
        raise KeyError(f"unknown option {df[choice][picked < 0].iloc[0]!r}")
    n = len(df)
    own, peer = table_own[which], table_peer[which]
    chosen = np.asarray(picked, dtype=int)
    games = df[cluster] if cluster in df else pd.Series(np.arange(n), index=df.index)
    codes = pd.factorize(games)[0] if cluster in df else np.arange(n)
    units = None
    if unit in df and df[unit].notna().any():
        person = df[unit].astype(object)
        units = np.asarray(pd.factorize(person.where(person.notna(), "game:" + games.astype(str)).map(str))[0])
    return ChoiceSet(own, peer, chosen, np.ones(n), np.asarray(codes), units)


def _box(data: ChoiceSet, bounds: Bounds) -> list[tuple[float, float]]:
    lam_max = bounds.lam_max
    if lam_max is None:
        diffs = np.abs(_design_rows(data)[:, 0])
        diffs = diffs[diffs > 1e-12]
        lam_max = 100.0 / float(np.median(diffs)) if diffs.size else 100.0
    return [bounds.alpha, bounds.beta, (math.log(bounds.lam_min), math.log(lam_max))]


def _starts(box: list[tuple[float, float]]) -> list[np.ndarray]:
    mid = 0.5 * (box[2][0] + box[2][1])
    return [np.array(s) for s in ((0.5, 0.2, 0.0), (1.5, 0.5, -1.0), (-0.5, -0.5, 0.0), (0.3, 0.3, mid))]


def fit(
    data: ChoiceSet,
    ci: str | None = "profile",
    level: float = 0.95,
    bounds: Bounds = Bounds(),
    n_boot: int = 200,
    seed: int = 0,
    ci_params: Sequence[str] = PARAMS,
) -> Estimate:
    """Maximum-likelihood (α, β, λ) with ``ci`` = ``"profile"``, ``"bootstrap"`` or ``None``."""
    # thousands of tiny optimisations: a multi-threaded BLAS only adds contention (15× slower)
    with threadpool_limits(1):
        return _fit(data, ci, level, bounds, n_boot, seed, ci_params)


def _fit(data: ChoiceSet, ci: str | None, level: float, bounds: Bounds, n_boot: int, seed: int, ci_params: Sequence[str]) -> Estimate:
    rows = data.unique_rows()
    fixed, statement = identified(data.aggregate(np.ones(len(data.weight)), rows))  # every distinct decision once
    agg = data.aggregate(rows=rows)
    box = _box(data, bounds)
    free = [i for i, p in enumerate(PARAMS) if p not in fixed]
    start = np.array([fixed.get("alpha", 0.0), fixed.get("beta", 0.0), 0.0])
    best_val, theta = _maximise(agg, box, free, start, _starts(box))
    for i, p in enumerate(PARAMS):
        if p in fixed:
            theta[i] = fixed[p]
    ll = _loglik_grad(theta, agg)[0]
    present = ~np.isnan(agg.own)
    ll0 = float(-np.sum(agg.weight * np.log(present.sum(axis=1))))
    warnings = []
    if fixed:
        warnings.append(statement)
    if theta[2] >= box[2][1] - 1e-6:
        warnings.append("choices are (almost) deterministic: λ at its cap, α and β only bounded by the choices (intervals show the values consistent with them)")
        if ci == "bootstrap":
            # every resample of deterministic choices gives the same point: use the profile set
            warnings.append("profile interval instead of the bootstrap")
            ci = "profile"
    if theta[2] <= box[2][0] + 1e-6:
        warnings.append("choices look random: λ ≈ 0, so α and β are not identified")
    intervals: dict[str, tuple[float, float]] = {}
    targets = [p for p in ci_params if p not in fixed]
    if ci == "profile":
        intervals = {p: _profile_interval(agg, box, free, theta, best_val, PARAMS.index(p), level) for p in targets}
    elif ci == "bootstrap":
        intervals = _bootstrap_intervals(data, box, free, theta, level, n_boot, seed, targets)
    elif ci is not None:
        raise ValueError(f"unknown ci method {ci!r}: use 'profile', 'bootstrap' or None")
    for p in intervals:
        i = PARAMS.index(p)
        lo, hi = intervals[p]
        if p != "lam" and (lo <= box[i][0] + 1e-6 or hi >= box[i][1] - 1e-6):
            warnings.append(f"the {p} interval reaches the search bound")
    for p, v in fixed.items():
        intervals[p] = (v, v)
    lam_ci = intervals.get("lam")
    if lam_ci is not None and "lam" not in fixed:
        intervals["lam"] = (math.exp(lam_ci[0]), math.exp(lam_ci[1]))
    n_games = int(len(np.unique(data.cluster)))
    return Estimate(float(theta[0]), float(theta[1]), math.exp(theta[2]), intervals, ll, ll0, int(data.weight.sum()), n_games, statement, fixed, warnings)


def _profile_interval(data: ChoiceSet, box, free: list[int], theta: np.ndarray, best: float, j: int, level: float) -> tuple[float, float]:
    """Ends of {θ_j : 2·(best − ℓ_p(θ_j)) ≤ χ²₁(level)} (log λ for j = 2)."""
    cut = special.gammaincinv(0.5, level)  # ½·χ²₁ quantile: the χ²_k quantile is 2·P⁻¹(k/2, level)
    others = [i for i in free if i != j]

    last = theta  # each maximisation starts from the last one's optimum (brentq's points close in)

    def excess(v: float) -> float:
        nonlocal last
        start = last.copy()
        start[j] = v
        val, last = _maximise(data, box, others, start)
        return best - val - cut

    ends = []
    for edge in (box[j][0], box[j][1]):
        last = theta
        if excess(edge) <= 0:
            ends.append(edge)
        else:
            try:
                ends.append(optimize.brentq(excess, edge, theta[j], xtol=1e-4) if edge != theta[j] else edge)
            except ValueError:
                # the profile does not cross the cut between the bound and the optimum (a flat or
                # separated likelihood, where re-maximising at the optimum falls short of it):
                # this end is not identified by the data
                ends.append(math.nan)
    return (float(ends[0]), float(ends[1]))


def _bootstrap_intervals(data: ChoiceSet, box, free: list[int], theta: np.ndarray, level: float, n_boot: int, seed: int, targets: Sequence[str]) -> dict[str, tuple[float, float]]:
    """Percentile intervals over refits on games (a person's decisions: participants, see
    ``ChoiceSet.unit``) resampled with replacement."""
    rng = np.random.default_rng(seed)
    clusters, of_row = np.unique(data.cluster if data.unit is None else data.unit, return_inverse=True)
    of_row = of_row.reshape(-1)
    rows = data.unique_rows()  # the distinct decisions, found once for all resamples
    draws = []
    for _ in range(n_boot):
        # the draws of rng.choice(clusters, len(clusters)), as positions: no search needed
        times = np.bincount(rng.integers(0, len(clusters), size=len(clusters)), minlength=len(clusters)).astype(float)
        resample = data.aggregate(data.weight * times[of_row], rows)
        _, th = _maximise(resample, box, free, theta.copy())
        draws.append(th)
    arr = np.array(draws)
    tail = (1 - level) / 2
    return {p: (float(np.quantile(arr[:, PARAMS.index(p)], tail)), float(np.quantile(arr[:, PARAMS.index(p)], 1 - tail))) for p in targets}


def fit_groups(
    choices: pd.DataFrame,
    matrices: Mapping[str, Mapping[str, tuple[float, float]]],
    by: Sequence[str] = ("model",),
    **kwargs: Any,
) -> pd.DataFrame:
    """One fit per group of ``choices`` (columns ``matrix``, ``choice``, ``game_id``, and
    ``participant`` for a person's rows: the bootstrap's unit, see :func:`choice_set`), e.g.
    ``by=("model",)``, ``("model", "peer")`` or ``("model", "turn")``; one row per group with
    the estimates, their intervals, fit and warnings (:meth:`Estimate.row`)."""
    rows = []
    if choices.empty:
        return pd.DataFrame()
    for key, sub in choices.groupby(list(by), dropna=False):
        keys = key if isinstance(key, tuple) else (key,)
        est = fit(choice_set(sub, matrices), **kwargs)
        rows.append({**dict(zip(by, keys)), **est.row()})
    return pd.DataFrame(rows)
