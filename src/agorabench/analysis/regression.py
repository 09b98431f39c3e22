"""Linear models of game outcomes on one-hot design parameters and player identities.

The estimator behind GLEE's regression analysis (paper §3 and App. C), written for any games
dataframe (:func:`agorabench.analysis.frames.games_df`):

- every design parameter is a categorical :class:`Factor` with a reference level; the model has
  one 0/1 column per other level, so a coefficient is the change of the outcome when the
  parameter takes that level instead of the reference, all else equal;
- several parameters can be crossed into one composite factor (GLEE's *market*), whose levels
  are the combinations of theirs;
- player identities (``model_alice``, ``model_bob`` or the ordered pair) are factors too, with a
  reference model;
- OLS: y = β₀ + Σ_k β_k x_k + ε. Classical standard errors s²(XᵀX)⁻¹ (the paper's), and
  cluster-robust ones (CR1, with the small-sample factor statsmodels' ``cov_type="cluster"``
  uses) with games clustered by model pair, since games of one pair share the players and are
  not independent; a game with a person in a seat (the pooled identity ``human``, who the
  person was in ``participant_<role>``) is clustered by that participant instead
  (:func:`cluster_labels`), so the ``human`` row's interval is participant-clustered. 95 % intervals β ± t·SE (classical) and β ± z·SE (clustered).
  Benjamini–Hochberg adjusted p-values within each fitted table.

statsmodels is not a runtime dependency: these few formulas are computed here with numpy, and
statsmodels is the tests' oracle for them (and for the Kaplan–Meier curves of
:mod:`agorabench.analysis.survival`), installed with the ``dev`` extra.

Columns that carry no information in the data (a level never observed, a level whose column is
a linear combination of earlier ones) are left out and listed in ``Fit.dropped``. Numeric
parameters with more than ``max_levels`` distinct values (a sampled, continuous design) enter as
one slope per unit instead of one-hot columns.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import pandas as pd
from scipy import stats

from ..core.seats import SeatKind, seat_kind

PAIR = "model_pair"


@dataclass(frozen=True)
class Factor:
    """One categorical parameter: its games-table column, reference level and readable name."""

    column: str
    reference: Any
    label: str = ""
    #: Readable names of levels (e.g. {True: "yes"}); default: the level itself.
    names: tuple[tuple[Any, str], ...] = ()

    @property
    def name(self) -> str:
        return self.label or self.column

    def level_name(self, value: Any) -> str:
        key = level(value)
        for k, v in self.names:
            if level(k) == key:
                return v
        if key == "inf":
            return "∞"
        return str(key)


@dataclass(frozen=True)
class Design:
    """What a model conditions on: separate factors, factors crossed into one composite
    (``composite_label``; its full set of levels from ``composite_levels``) and identities."""

    factors: tuple[Factor, ...] = ()
    composite: tuple[Factor, ...] = ()
    composite_label: str = "market"
    #: Levels each composite factor can take (the composite has their Cartesian product).
    composite_levels: tuple[tuple[Any, ...], ...] = ()
    identities: tuple[str, ...] = ("model_alice", "model_bob")

    def composite_grid(self) -> list[tuple[Any, ...]]:
        """Every composite level, reference first: the Cartesian product of the levels."""
        import itertools

        ref = tuple(level(f.reference) for f in self.composite)
        grid = [tuple(level(v) for v in combo) for combo in itertools.product(*self.composite_levels)]
        return [ref] + [g for g in grid if g != ref]

    def composite_name(self, combo: tuple[Any, ...]) -> str:
        return ", ".join(f"{f.name}={f.level_name(v)}" for f, v in zip(self.composite, combo))


def level(value: Any) -> Any:
    """A canonical level: whole floats become ints, NaN/None become "missing", bools stay."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "missing"
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return int(value) if float(value).is_integer() else round(float(value), 10)
    return value


def _sort_key(v: Any) -> tuple:
    return (0, float(v), "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0.0, str(v))


@dataclass
class Term:
    """One column of the model matrix: which factor (``term``) and level it stands for."""

    column: str
    term: str
    level: Any
    kind: str  # "onehot" | "slope" | "intercept"
    label: str = ""  # the level as a reader sees it


@dataclass
class Encoded:
    X: pd.DataFrame
    terms: list[Term]
    references: dict[str, Any]
    dropped: list[str] = field(default_factory=list)
    #: The levels each one-hot factor takes in the data (term -> levels, in sorted order), the
    #: reference and levels left out as collinear included.
    levels: dict[str, list[Any]] = field(default_factory=dict)


def pair_labels(df: pd.DataFrame, identities: tuple[str, ...] = ("model_alice", "model_bob")) -> pd.Series:
    """The ordered model pair of each game as one label, "alice-model vs bob-model"."""
    return df[list(identities)].astype(str).agg(" vs ".join, axis=1)


def cluster_labels(df: pd.DataFrame, identities: tuple[str, ...] = ("model_alice", "model_bob")) -> pd.Series:
    """The cluster of each game for the clustered errors: the participant(s) of a game with a
    person in a seat (``participant_<role>`` of a pooled frame; two people: both names), else
    its ordered model pair (:func:`pair_labels`)."""
    labels = pair_labels(df, identities)
    people = [c for c in ("participant" + i[len("model") :] for i in identities if i.startswith("model_")) if c in df]
    if not people:
        return labels
    who = df[people].apply(lambda row: " & ".join(str(v) for v in row if isinstance(v, str) and v), axis=1) if len(df) else labels
    return labels.where(who == "", "person " + who.astype(str))


def default_reference(models: Iterable[str], preferred: Iterable[str] = ()) -> str:
    """The reference identity: the first of ``preferred`` that played, else the first model
    in sorted order that is a model's seat (:func:`~agorabench.core.seats.seat_kind`: no
    person's ``human`` / ``human:…``, no ``strategy/…``), else the first at all."""
    present = sorted(set(map(str, models)))
    for m in preferred:
        if m in present:
            return m
    for m in present:
        if seat_kind(m) is SeatKind.MODEL:
            return m
    return present[0]


def encode(df: pd.DataFrame, design: Design, reference_model: str | None = None, pair: bool = False, max_levels: int = 12) -> Encoded:
    """The model matrix (intercept first) of ``df`` under ``design``. With ``pair`` the two
    identities are replaced by one factor, the ordered pair (reference: reference vs reference,
    or the most frequent pair if that one never played)."""
    n = len(df)
    cols: dict[str, np.ndarray] = {"intercept": np.ones(n)}
    terms = [Term("intercept", "intercept", None, "intercept")]
    refs: dict[str, Any] = {}
    seen: dict[str, list[Any]] = {}

    def onehot(values: Iterable[Any], name: str, ref: Any, namer) -> None:
        keys = [level(v) for v in values]
        if not keys:
            return
        present = sorted(dict.fromkeys(keys), key=_sort_key)
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present)
        if numeric and len(present) > max_levels:
            x = np.asarray(keys, dtype=float) - float(level(ref))
            col = f"{name} (per unit)"
            cols[col] = x
            terms.append(Term(col, name, None, "slope"))
            refs[name] = level(ref)
            return
        if level(ref) not in present:
            ref = Counter(keys).most_common(1)[0][0]
        refs[name] = level(ref)
        seen[name] = present
        index = {v: i for i, v in enumerate(present)}
        codes = np.fromiter((index[k] for k in keys), dtype=np.int64, count=n)
        for v in present:
            if v == level(ref):
                continue
            col = f"{name} = {namer(v)}"
            cols[col] = (codes == index[v]).astype(float)
            terms.append(Term(col, name, v, "onehot", namer(v)))

    for f in design.factors:
        if f.column in df:
            onehot(df[f.column], f.name, f.reference, f.level_name)
    comp = [f for f in design.composite if f.column in df]
    if comp:
        combos = list(zip(*(df[f.column].map(level) for f in comp)))
        ref = tuple(level(f.reference) for f in comp)
        sub = Design(composite=tuple(comp))
        onehot(combos, design.composite_label, ref, sub.composite_name)
    ids = [c for c in design.identities if c in df]
    if ids:
        ref_model = reference_model or default_reference(pd.unique(df[ids].to_numpy().ravel()))
        if pair and len(ids) == 2:
            labels = pair_labels(df, tuple(ids))
            onehot(labels, PAIR, f"{ref_model} vs {ref_model}", str)
        else:
            for c in ids:
                onehot(df[c].astype(str), c, ref_model, str)
    X = pd.DataFrame(cols, index=df.index)
    keep, dropped = _independent_columns(X.to_numpy())
    return Encoded(X.iloc[:, keep], [terms[i] for i in keep], refs, [X.columns[i] for i in dropped], seen)


def _independent_columns(X: np.ndarray, tol: float = 1e-9) -> tuple[list[int], list[int]]:
    """Greedy in column order: keep a column when it is not a linear combination of those kept
    (checked on the Gram matrix XᵀX, which is small)."""
    G = X.T @ X
    keep: list[int] = []
    dropped: list[int] = []
    for j in range(X.shape[1]):
        if G[j, j] <= tol:
            dropped.append(j)
            continue
        trial = keep + [j]
        sub = G[np.ix_(trial, trial)]
        eig = np.linalg.eigvalsh(sub / max(1.0, float(np.max(np.diag(sub)))))
        if eig.min() > tol * len(trial):
            keep.append(j)
        else:
            dropped.append(j)
    return keep, dropped


@dataclass
class Fit:
    """A fitted model: coefficient table, fit statistics and what is needed to predict."""

    outcome: str
    coefs: pd.DataFrame
    n: int
    r2: float
    adj_r2: float
    clusters: int
    references: dict[str, Any]
    dropped: list[str]
    columns: list[str]
    beta: np.ndarray
    cov: np.ndarray
    cov_cluster: np.ndarray | None
    encoded: Encoded | None = None
    y_mean: float = math.nan
    resid: np.ndarray | None = None
    #: The levels each one-hot factor took in the data (:attr:`Encoded.levels`): which were played,
    #: whether or not their column could be estimated.
    levels: dict[str, list[Any]] = field(default_factory=dict)

    def term(self, name: str) -> pd.DataFrame:
        return self.coefs[self.coefs["term"] == name]


def bh_adjust(p: Iterable[float]) -> np.ndarray:
    """Benjamini–Hochberg: p_(i)·m/i, made monotone from the largest down, capped at 1.
    NaNs stay NaN and do not count in m."""
    p = np.asarray(list(p), dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return out
    order = np.argsort(p[ok])
    ranked = p[ok][order] * m / np.arange(1, m + 1)
    ranked = np.minimum.accumulate(ranked[::-1])[::-1]
    adj = np.empty(m)
    adj[order] = np.minimum(ranked, 1.0)
    out[ok] = adj
    return out


def _cluster_cov(X: np.ndarray, resid: np.ndarray, groups: np.ndarray, bread: np.ndarray) -> np.ndarray:
    """CR1 sandwich: G/(G−1)·(n−1)/(n−k) · B (Σ_g X_gᵀ u_g u_gᵀ X_g) B, B = (XᵀX)⁻¹."""
    n, k = X.shape
    codes, uniq = pd.factorize(groups)
    g = len(uniq)
    scores = np.zeros((g, k))
    np.add.at(scores, codes, X * resid[:, None])
    meat = scores.T @ scores
    c = g / (g - 1) * (n - 1) / (n - k)
    return c * bread @ meat @ bread


def fit_ols(
    df: pd.DataFrame,
    outcome: str,
    design: Design,
    reference_model: str | None = None,
    pair: bool = False,
    cluster: str | None = PAIR,
    level_ci: float = 0.95,
    max_levels: int = 12,
    keep_data: bool = False,
) -> Fit:
    """OLS of ``outcome`` on the encoded design. ``cluster``: a column of ``df`` (or
    ``"model_pair"``, the ordered identity pair) whose groups get cluster-robust errors; None
    for classical errors only. Rows whose outcome is missing are left out."""
    data = df[df[outcome].notna()]
    enc = encode(data, design, reference_model, pair=pair, max_levels=max_levels)
    X = enc.X.to_numpy(dtype=float)
    y = data[outcome].to_numpy(dtype=float)
    n, k = X.shape
    if n <= k:
        raise ValueError(f"{outcome}: {n} games are too few for {k} coefficients")
    bread = np.linalg.inv(X.T @ X)
    beta = bread @ (X.T @ y)
    resid = y - X @ beta
    dof = n - k
    sigma2 = float(resid @ resid) / dof
    cov = sigma2 * bread
    tss = float(((y - y.mean()) ** 2).sum())
    r2 = 1 - float(resid @ resid) / tss if tss > 0 else math.nan
    adj = 1 - (1 - r2) * (n - 1) / dof if tss > 0 else math.nan
    se = np.sqrt(np.diag(cov))
    tcrit = stats.t.ppf((1 + level_ci) / 2, dof)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * stats.t.sf(np.abs(beta / se), dof)
    table = {"column": list(enc.X.columns), "term": [t.term for t in enc.terms], "level": [t.level for t in enc.terms], "level_name": [t.label for t in enc.terms], "estimate": beta, "se": se, "low": beta - tcrit * se, "high": beta + tcrit * se, "p": p}
    cov_c = None
    n_clusters = 0
    if cluster is not None:
        groups = cluster_labels(data).to_numpy() if cluster == PAIR else data[cluster].astype(str).to_numpy()
        n_clusters = len(pd.unique(groups))
        if n_clusters >= 2:
            cov_c = _cluster_cov(X, resid, groups, bread)
            se_c = np.sqrt(np.clip(np.diag(cov_c), 0, None))
            zcrit = stats.norm.ppf((1 + level_ci) / 2)
            with np.errstate(divide="ignore", invalid="ignore"):
                p_c = 2 * stats.norm.sf(np.abs(beta / se_c))
            table.update(se_cluster=se_c, low_cluster=beta - zcrit * se_c, high_cluster=beta + zcrit * se_c, p_cluster=p_c)
    coefs = pd.DataFrame(table)
    slopes = coefs["term"] != "intercept"
    coefs.loc[slopes, "p_bh"] = bh_adjust(coefs.loc[slopes, "p"])
    if "p_cluster" in coefs:
        coefs.loc[slopes, "p_cluster_bh"] = bh_adjust(coefs.loc[slopes, "p_cluster"])
    return Fit(
        outcome=outcome, coefs=coefs, n=n, r2=r2, adj_r2=adj, clusters=n_clusters, references=enc.references, dropped=enc.dropped,
        columns=list(enc.X.columns), beta=beta, cov=cov, cov_cluster=cov_c, encoded=enc if keep_data else None, y_mean=float(y.mean()),
        resid=resid if keep_data else None, levels=enc.levels,
    )


def adjusted_means(df: pd.DataFrame, outcome: str, design: Design, by: str, reference_model: str | None = None, level_ci: float = 0.95) -> pd.DataFrame:
    """Design-adjusted mean outcome per level of ``by`` (an identity column such as
    ``model_alice``, or ``model_pair``): the mean over *all* games of the model's prediction with
    ``by`` set to that level (standardisation over the study's own mix of parameters and
    opponents). Raw means differ from these when the design is unbalanced (a model played more
    often in easy markets, games that failed). The prediction is m·β with m the mean model-matrix
    row, so its variance is mᵀVm: ``low``/``high`` use the classical V, ``low_cluster``/
    ``high_cluster`` the pair-clustered one.

    Returns one row per level: level, adjusted, low, high, low_cluster, high_cluster, raw, n.
    A level whose column was left out as collinear (e.g. Bob's model when every game seats the
    same two players the same way round) gets NaN: the data cannot separate it from others."""
    pair = by == PAIR
    data = df[df[outcome].notna()].copy()
    if pair:
        data[PAIR] = pair_labels(data)
    fit = fit_ols(data, outcome, design, reference_model, pair=pair, keep_data=True)
    assert fit.encoded is not None
    X = fit.encoded.X
    name = PAIR if pair else by
    mine = [i for i, t in enumerate(fit.encoded.terms) if t.term == name]
    base = X.to_numpy(dtype=float).mean(axis=0)
    base[mine] = 0.0
    tcrit = stats.t.ppf((1 + level_ci) / 2, fit.n - len(fit.beta))
    zcrit = stats.norm.ppf((1 + level_ci) / 2)
    rows = []
    reference = fit.references.get(name)
    for value, sub in data.groupby(by):
        m = base.copy()
        hit = [i for i in mine if fit.encoded.terms[i].level == level(value)]
        m[hit] = 1.0
        if not hit and level(value) != reference:
            # its column was left out (collinear with others): its effect is not identified
            rows.append({"level": value, "adjusted": math.nan, "low": math.nan, "high": math.nan, "raw": float(sub[outcome].mean()), "n": len(sub)})
            continue
        est = float(m @ fit.beta)
        se = math.sqrt(float(m @ fit.cov @ m))
        row = {"level": value, "adjusted": est, "low": est - tcrit * se, "high": est + tcrit * se, "raw": float(sub[outcome].mean()), "n": len(sub)}
        if fit.cov_cluster is not None:
            sc = math.sqrt(max(0.0, float(m @ fit.cov_cluster @ m)))
            row.update(low_cluster=est - zcrit * sc, high_cluster=est + zcrit * sc)
        rows.append(row)
    return pd.DataFrame(rows)


def predictive_check(df: pd.DataFrame, outcome: str, design: Design, reference_model: str | None = None, seeds: int = 3, test_share: float = 0.2, max_rows: int = 10_000) -> dict[str, float]:
    """Out-of-sample RMSE of the linear model and of gradient-boosted trees (scikit-learn's
    GradientBoostingRegressor: 100 trees of depth 3) on the same one-hot inputs, over ``seeds`` random 80/20
    splits (at most ``max_rows`` games drawn once). Similar errors mean the linear form misses
    little structure (the paper's App. C.3 check, which used XGBoost and CatBoost)."""
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.model_selection import train_test_split

    data = df[df[outcome].notna()]
    if len(data) > max_rows:
        data = data.sample(max_rows, random_state=0)
    X = encode(data, design, reference_model).X.to_numpy(dtype=float)
    y = data[outcome].to_numpy(dtype=float)
    lin, gbm = [], []
    for seed in range(seeds):
        Xa, Xb, ya, yb = train_test_split(X, y, test_size=test_share, random_state=seed)
        beta, *_ = np.linalg.lstsq(Xa, ya, rcond=None)
        lin.append(float(np.sqrt(np.mean((Xb @ beta - yb) ** 2))))
        model = GradientBoostingRegressor(n_estimators=100, max_depth=3, random_state=seed).fit(Xa, ya)
        gbm.append(float(np.sqrt(np.mean((model.predict(Xb) - yb) ** 2))))
    return {"outcome": outcome, "n": len(data), "rmse_linear": float(np.mean(lin)), "rmse_linear_sd": float(np.std(lin)), "rmse_boosting": float(np.mean(gbm)), "rmse_boosting_sd": float(np.std(gbm))}
