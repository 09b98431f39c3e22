"""The meta-game: each side of a two-role game picks which model plays for it.

Given payoff matrices A (row player, e.g. Alice) and B (column player, e.g. Bob) indexed by the
models each side can choose, this module finds

- every pure Nash equilibrium (i, j): A[i, j] ≥ A[k, j] for all k and B[i, j] ≥ B[i, l] for all l;
- the mixed equilibria by support enumeration (``nashpy``), i.e. strategy pairs (x, y) under
  which every model in each support earns the same expected payoff, no model outside earns
  more;
- how stable each equilibrium is: :func:`bootstrap_equilibria` recomputes the equilibria on
  payoff matrices from resampled games (a person's games: resampled by participant) and counts
  how often each one appears;
- α-Rank (Omidshafiei et al., 2019), a ranking from the stationary distribution of an
  evolutionary process in which one side at a time may switch model, switches being adopted
  with the Fermi fixation probability of a population of size m at selection intensity α.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

import numpy as np
import pandas as pd


def pure_equilibria(A: np.ndarray, B: np.ndarray, tol: float = 1e-12) -> list[tuple[int, int]]:
    """All (row, column) cells that are mutual best responses (ties count as best)."""
    A, B = np.asarray(A, float), np.asarray(B, float)
    best_rows = A >= A.max(axis=0, keepdims=True) - tol
    best_cols = B >= B.max(axis=1, keepdims=True) - tol
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(best_rows & best_cols))]


def equilibria(A: np.ndarray, B: np.ndarray, tol: float = 1e-9, exhaustive_max: int = 7) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pure and mixed Nash equilibria as (x, y) probability vectors, pure ones first.

    Support enumeration finds every equilibrium of a nondegenerate game; in a degenerate one (ties
    in payoffs) it can miss some, so the pure equilibria are also checked directly. Its cost grows
    as 4^k, so above ``exhaustive_max`` strategies per side the mixed equilibria come from
    Lemke–Howson started at every label instead (each start finds one; the list may then be
    incomplete)."""
    import warnings

    import nashpy

    A, B = np.asarray(A, float), np.asarray(B, float)
    found: list[tuple[np.ndarray, np.ndarray]] = []

    def add(x: np.ndarray, y: np.ndarray) -> None:
        x, y = np.where(np.abs(x) < tol, 0.0, x), np.where(np.abs(y) < tol, 0.0, y)
        for a, b in found:
            if np.allclose(a, x, atol=1e-6) and np.allclose(b, y, atol=1e-6):
                return
        found.append((x, y))

    for i, j in pure_equilibria(A, B):
        add(np.eye(A.shape[0])[i], np.eye(A.shape[1])[j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        game = nashpy.Game(A, B)
        if max(A.shape) <= exhaustive_max:
            candidates = list(game.support_enumeration(tol=tol))
        else:
            candidates = []
            for label in range(sum(A.shape)):
                try:
                    candidates.append(game.lemke_howson(initial_dropped_label=label))
                except Exception:  # nashpy fails on some degenerate starts; other labels remain
                    continue
        for x, y in candidates:
            if x.shape == (A.shape[0],) and np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and _is_equilibrium(A, B, x, y):
                add(np.asarray(x, float), np.asarray(y, float))
    return found


def _is_equilibrium(A: np.ndarray, B: np.ndarray, x: np.ndarray, y: np.ndarray, tol: float = 1e-7) -> bool:
    if np.any(x < -tol) or np.any(y < -tol) or abs(x.sum() - 1) > tol or abs(y.sum() - 1) > tol:
        return False
    return bool(x @ A @ y >= (A @ y).max() - tol and x @ B @ y >= (x @ B).max() - tol)


def describe(x: np.ndarray, y: np.ndarray, rows: list[str], cols: list[str]) -> str:
    """An equilibrium in words: "a vs b" when pure, else each side's mixture."""
    def side(p: np.ndarray, names: list[str]) -> str:
        parts = [(names[i], p[i]) for i in np.argsort(-p) if p[i] > 1e-9]
        if len(parts) == 1:
            return parts[0][0]
        return " + ".join(f"{q:.2f}·{n}" for n, q in parts)

    return f"{side(x, rows)} vs {side(y, cols)}"


def is_pure(x: np.ndarray, y: np.ndarray) -> bool:
    return bool(np.isclose(x.max(), 1) and np.isclose(y.max(), 1))


def equilibria_table(A: np.ndarray, B: np.ndarray, rows: list[str], cols: list[str]) -> pd.DataFrame:
    """One row per equilibrium: kind (pure/mixed), the profile in words, both sides' expected
    payoffs and the mixtures."""
    out = []
    for x, y in equilibria(A, B):
        out.append({
            "equilibrium": describe(x, y, rows, cols),
            "kind": "pure" if is_pure(x, y) else "mixed",
            "payoff_row": float(x @ A @ y),
            "payoff_column": float(x @ B @ y),
            "row_mix": dict(zip(rows, np.round(x, 4))),
            "column_mix": dict(zip(cols, np.round(y, 4))),
        })
    return pd.DataFrame(out)


def bootstrap_equilibria(
    payoffs: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    n: int,
    rows: list[str],
    cols: list[str],
    reps: int = 200,
    seed: int = 0,
    strata: Iterable | None = None,
    clusters: Iterable | None = None,
) -> pd.DataFrame:
    """Share of resamples in which each equilibrium appears. ``payoffs(index)`` builds (A, B)
    from the games at positions ``index`` (drawn with replacement, within each stratum when
    ``strata`` — e.g. the model pair of each game — is given, so every cell keeps its games).
    ``clusters`` (one label per game, e.g. the participant who played it): within a stratum
    where some label repeats, whole clusters are drawn with replacement (as many as the stratum
    has), all of a participant's games together; a stratum whose games are each their own
    cluster is drawn game by game exactly as without ``clusters``.
    Mixed equilibria are counted by their mixtures rounded to 0.1; with more than 7 models per
    side only pure equilibria are counted (the full search is too slow to repeat)."""
    rng = np.random.default_rng(seed)
    groups = [np.arange(n)] if strata is None else [np.flatnonzero(pd.factorize(pd.Series(list(strata)))[0] == g) for g in range(len(set(strata)))]
    labels = None
    if clusters is not None:
        given = pd.Series(list(clusters), dtype=object)
        labels = given.where(given.notna(), pd.Series([f"game:{i}" for i in range(len(given))], dtype=object)).to_numpy()  # no label: its own
    if labels is not None and len(labels) != n:
        raise ValueError(f"bootstrap_equilibria: {len(labels)} cluster labels for {n} games")
    # per stratum: None (draw games) or its games split by cluster (draw clusters)
    parts: list[list[np.ndarray] | None] = []
    for g in groups:
        codes, uniq = pd.factorize(labels[g]) if labels is not None and len(g) else (None, ())
        parts.append(None if codes is None or len(uniq) == len(g) else [g[codes == c] for c in range(len(uniq))])

    def draw(g: np.ndarray, split: list[np.ndarray] | None) -> np.ndarray:
        if split is None:
            return rng.choice(g, size=len(g), replace=True)
        return np.concatenate([split[c] for c in rng.integers(0, len(split), size=len(split))])

    counts: dict[str, int] = {}
    kinds: dict[str, str] = {}
    for _ in range(reps):
        index = np.concatenate([draw(g, split) for g, split in zip(groups, parts) if len(g)])
        A, B = payoffs(index)
        found = equilibria(A, B) if max(A.shape) <= 7 else [(np.eye(A.shape[0])[i], np.eye(A.shape[1])[j]) for i, j in pure_equilibria(A, B)]
        for x, y in found:
            name = describe(x, y, rows, cols) if is_pure(x, y) else "mixed: " + describe(np.round(x, 1), np.round(y, 1), rows, cols)
            counts[name] = counts.get(name, 0) + 1
            kinds[name] = "pure" if is_pure(x, y) else "mixed"
    out = pd.DataFrame([{"equilibrium": k, "kind": kinds[k], "share_of_resamples": v / reps} for k, v in counts.items()])
    return out.sort_values("share_of_resamples", ascending=False, ignore_index=True) if len(out) else out


def _fixation(delta: float, alpha: float, m: int) -> float:
    """Probability that one mutant earning ``delta`` more than the residents takes over a
    population of m: (1 − e^{−αΔ}) / (1 − e^{−mαΔ}); 1/m when Δ = 0. Computed in logs."""
    x = alpha * delta
    if abs(x) < 1e-12:
        return 1.0 / m
    if x > 0:
        return -math.expm1(-x) / -math.expm1(-m * x)
    # x < 0: (e^{-x} - 1) / (e^{-mx} - 1) = e^{(m-1)x}·(1 − e^{x}) / (1 − e^{mx})
    return math.exp((m - 1) * x) * -math.expm1(x) / -math.expm1(m * x)


def alpha_rank(A: np.ndarray, B: np.ndarray, alpha: float = 50.0, m: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """α-Rank of a two-population game. States are profiles (i, j); from (i, j) the row
    population switches to k with probability η·ρ(A[k, j] − A[i, j]), the column population to
    l with η·ρ(B[i, l] − B[i, j]), η = 1/((rows−1)+(cols−1)). Returns the stationary
    distribution over profiles (rows × cols) and each side's marginal mass per model."""
    A, B = np.asarray(A, float), np.asarray(B, float)
    r, c = A.shape
    s = r * c
    eta = 1.0 / max(1, (r - 1) + (c - 1))
    P = np.zeros((s, s))
    for i in range(r):
        for j in range(c):
            here = i * c + j
            for k in range(r):
                if k != i:
                    P[here, k * c + j] = eta * _fixation(A[k, j] - A[i, j], alpha, m)
            for l in range(c):
                if l != j:
                    P[here, i * c + l] = eta * _fixation(B[i, l] - B[i, j], alpha, m)
            P[here, here] = 1 - P[here].sum()
    w, v = np.linalg.eig(P.T)
    pi = np.real(v[:, np.argmin(np.abs(w - 1))])
    pi = np.abs(pi) / np.abs(pi).sum()
    grid = pi.reshape(r, c)
    return grid, np.concatenate([grid.sum(axis=1), grid.sum(axis=0)])
