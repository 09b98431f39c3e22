"""Logit quantal response equilibrium (McKelvey & Palfrey 1995) of a finite normal-form game,
and its precision λ estimated by maximum likelihood from counts of play.

Game. N players; ``payoffs[i]`` is an array of shape (n_1, ..., n_N) holding player i's payoff
at every pure profile (axis j indexes player j's strategies), as ``pygambit`` takes them in
``StrategicGame.from_arrays``. One player is a decision problem; its QRE is plain logit choice.

Equilibrium. For λ ≥ 0 a logit QRE is a profile σ with, for every player i,

    σ_i = softmax(λ · u_i(σ_{-i})),   u_i(σ_{-i})[a] = Σ_{a_{-i}} payoffs[i][a, a_{-i}] · Π_{j≠i} σ_j[a_j].

At λ = 0 the only solution is the centroid (uniform play). The *principal branch* is the
smooth curve of solutions that starts there; it is traced by predictor–corrector continuation
in arclength over x = (log σ, λ), with residual F(x) = log σ − log softmax(λ · u(σ)): an Euler
step along the tangent (the null vector of F's Jacobian, kept pointing the way it went), then
Newton on F = 0 restricted to the hyperplane through the predicted point orthogonal to the
tangent. A step whose corrector moves too far, contracts too slowly or turns the tangent too
sharply is halved; an easy step doubles the next one. Being parametrised by arclength, the
trace passes folds where λ turns back. "The QRE at λ" is the first point of the branch that
reaches λ (as ``pygambit.qre.logit_solve_lambda`` reads it).

Symmetric games (every player has the same strategies, ``payoffs[i]`` is ``payoffs[0]`` with
axes 0 and i swapped, and ``payoffs[0]`` does not care about the order of the others) are
traced with one shared σ: the principal branch of such a game is symmetric, and the reduced
system has no symmetry-breaking bifurcations on which a tracer of the full system could leave
the branch. Where such a bifurcation lies on the symmetric branch (hawk–dove / chicken), this
module follows the symmetric branch through it; pygambit's tracer perturbs its way onto one of
the asymmetric branches there, so past that λ the two disagree by design.

Estimation. With count_ia the number of times player i was seen playing a, the log-likelihood
along the branch is ℓ = Σ_i Σ_a count_ia · log σ_ia. λ̂ is its global maximiser along the
principal branch, traced up to ``lam_max`` (10⁶, as pygambit): the path's points give the best
stretch, and the maximiser is located exactly on it (a root of dℓ/ds = counts · d log σ/ds
along the arclength s, or a bounded 1-D maximisation where the derivative does not change
sign). λ̂ = 0 when the data fit uniform play best; λ̂ = ``lam_max`` (``at_bound``) when ℓ at
the trace's end is as high as anywhere (play on a pure equilibrium: ℓ rises towards 0 all the
way; pygambit then stops wherever ℓ first rounds to its final value). This is the estimator of
``pygambit.qre.logit_estimate`` (the tests check it against pygambit). ``pooled=True`` takes a
symmetric game's one population of counts (one vector, shared by every seat): ℓ = Σ_a count_a
· log σ_a and n = Σ_a count_a. On a symmetric branch the per-seat counts of an unpooled fit
give the same λ̂ as their sum pooled (ℓ depends on them only through the sum).

Fit statistics: n observations (all counts), k = 1 parameter, BIC = k·ln n − 2ℓ̂, AIC = 2k − 2ℓ̂.

Intervals of λ (95 % by default):

- ``"bootstrap"``: every player's counts resampled multinomially (n_i draws from its observed
  shares; a pooled population as one), λ refitted on the same branch, percentile interval.
- ``"profile"``: the stretch of the branch around λ̂ where 2·(ℓ̂ − ℓ) ≤ χ²₁(level), as λ values;
  an end at λ = 0 or at ``lam_max`` means the data do not bound λ on that side.

Both assume independent observations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, stats
from threadpoolctl import threadpool_limits

#: How far the principal branch is traced for estimation (pygambit's bound).
LAM_MAX = 1e6
#: First arclength step of the trace.
FIRST_STEP = 0.03
#: A corrector's first Newton step longer than this (relative) rejects the predictor step.
MAX_DISTANCE = 0.05
#: ... and so does a Newton step that leaves |F| above this share of what it was.
MAX_CONTRACTION = 0.5
#: ... and a tangent turning more than this (cosine between consecutive tangents).
MIN_COSINE = 0.98
#: Newton stops when its relative step is below this.
NEWTON_TOL = 1e-12
#: A trace longer than this is an error.
MAX_STEPS = 20_000


def game_arrays(payoffs: Sequence[ArrayLike]) -> tuple[np.ndarray, ...]:
    """The payoff arrays as floats, checked: N arrays of one shape with N axes, finite."""
    arrays = tuple(np.asarray(p, dtype=float) for p in payoffs)
    if not arrays:
        raise ValueError("a game needs at least one player")
    shape = arrays[0].shape
    if len(shape) != len(arrays) or any(a.shape != shape for a in arrays):
        raise ValueError(f"{len(arrays)} players need {len(arrays)} payoff arrays of one shape with {len(arrays)} axes, got shapes {[a.shape for a in arrays]}")
    if min(shape) < 1 or not all(np.isfinite(a).all() for a in arrays):
        raise ValueError("every player needs a strategy, and every payoff must be finite")
    return arrays


def is_symmetric(payoffs: Sequence[ArrayLike]) -> bool:
    """Whether the game is symmetric: equal strategy counts, ``payoffs[i]`` equal to
    ``payoffs[0]`` with axes 0 and i swapped, and ``payoffs[0]`` unchanged by swapping any two
    opponents' axes."""
    arrays = game_arrays(payoffs)
    first = arrays[0]
    if len(arrays) < 2 or len(set(first.shape)) != 1:
        return False
    tol = 1e-12 * max(1.0, float(np.max(np.abs(first))))
    same = lambda a, b: bool(np.max(np.abs(a - b)) <= tol)  # noqa: E731
    opponents = all(same(first, np.swapaxes(first, j, j + 1)) for j in range(1, len(arrays) - 1))
    return opponents and all(same(arrays[i], np.swapaxes(first, 0, i)) for i in range(1, len(arrays)))


def _contract(tensor: np.ndarray, sigmas: Sequence[np.ndarray], keep: tuple[int, ...]) -> np.ndarray:
    """``tensor`` summed against σ_j over every axis j not in ``keep`` (kept axes stay, in order)."""
    out = tensor
    for axis in range(tensor.ndim - 1, -1, -1):
        if axis not in keep:
            out = np.tensordot(out, sigmas[axis], axes=([axis], [0]))
    return out


def _log_softmax(z: np.ndarray) -> np.ndarray:
    """log softmax(z) = z − max z − log Σ exp(z − max z)."""
    shifted = z - np.max(z)
    return shifted - math.log(float(np.sum(np.exp(shifted))))


class _Logit:
    """The fixed-point system F(log σ, λ) = log σ − log softmax(λ·u(σ)) over groups of
    strategies: one group per player, or one shared group for a symmetric game."""

    def __init__(self, arrays: tuple[np.ndarray, ...], symmetric: bool) -> None:
        self.arrays = arrays
        self.seats = len(arrays)
        self.symmetric = symmetric
        self.sizes: tuple[int, ...] = (arrays[0].shape[0],) if symmetric else tuple(arrays[0].shape)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        self.m = int(self.offsets[-1])
        self.scale = 1.0 + max(float(np.max(np.abs(a))) for a in arrays)

    def groups(self, y: np.ndarray) -> list[np.ndarray]:
        """The vector ``y`` split into its groups."""
        return [y[self.offsets[g]:self.offsets[g + 1]] for g in range(len(self.sizes))]

    def expected(self, sig: list[np.ndarray]) -> tuple[list[np.ndarray], dict[tuple[int, int], np.ndarray]]:
        """(u_g, ∂u_g/∂σ_h) per group: expected payoffs of each strategy and their derivatives."""
        if self.symmetric:
            seat_sigma = sig * self.seats
            first = self.arrays[0]
            u = [_contract(first, seat_sigma, (0,))]
            return u, {(0, 0): (self.seats - 1) * _contract(first, seat_sigma, (0, 1))}
        u, deriv = [], {}
        for i, tensor in enumerate(self.arrays):
            u.append(_contract(tensor, sig, (i,)))
            for j in range(self.seats):
                if j != i:
                    block = _contract(tensor, sig, (min(i, j), max(i, j)))
                    deriv[(i, j)] = block if i < j else block.T
        return u, deriv

    def residual(self, x: np.ndarray, jacobian: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """F(x) and its Jacobian (m × (m+1); the last column is ∂F/∂λ).

        With p_g = softmax(λu_g): ∂F_g/∂log σ_h = δ_gh·I − λ(I − 1p_gᵀ)(∂u_g/∂σ_h)·diag(σ_h) and
        ∂F_g/∂λ = −(u_g − p_g·u_g)."""
        y, lam = x[: self.m], x[self.m]
        sig = [np.exp(part) for part in self.groups(y)]
        u, deriv = self.expected(sig)
        F = np.empty(self.m)
        J = np.zeros((self.m, self.m + 1)) if jacobian else None
        for g in range(len(self.sizes)):
            rows = slice(self.offsets[g], self.offsets[g + 1])
            logp = _log_softmax(lam * u[g])
            F[rows] = y[rows] - logp
            if J is None:
                continue
            p = np.exp(logp)
            J[rows, rows] += np.eye(self.sizes[g])
            for h in range(len(self.sizes)):
                if (g, h) in deriv:
                    block = deriv[(g, h)] * sig[h][None, :]
                    J[rows, self.offsets[h]:self.offsets[h + 1]] -= lam * (block - p @ block)
            J[rows, self.m] = -(u[g] - p @ u[g])
        return F, J

    def tangent(self, J: np.ndarray, previous: np.ndarray) -> np.ndarray:
        """The unit null vector of J, signed to agree with ``previous``: the solution of
        [J; previousᵀ]·v = (0, ..., 0, 1), normalised (an LU solve keeps the exact structure
        of a nearly pure profile at large λ, where an SVD's null vector loses digits to J's
        λ-sized entries); the SVD's where that system is singular."""
        rhs = np.zeros(self.m + 1)
        rhs[-1] = 1.0
        try:
            t = np.linalg.solve(np.vstack([J, previous]), rhs)
        except np.linalg.LinAlgError:
            t = np.linalg.svd(J)[2][-1]
        if not np.all(np.isfinite(t)):
            t = np.linalg.svd(J)[2][-1]
        t = t / np.linalg.norm(t)
        return -t if t @ previous < 0 else t


def _correct(system: _Logit, start: np.ndarray, normal: np.ndarray, level: float, max_iter: int = 30) -> tuple[np.ndarray, float, float] | None:
    """Newton on F(x) = 0 with normal·x = level from ``start``; returns (x, length of the first
    step, largest ratio |F| after a step / |F| before it, from the second step on), or None
    without convergence. Step lengths are relative, max |Δx_i| / (1 + |x_i|); Newton stops when
    one is below ``NEWTON_TOL`` or |F| reaches its rounding floor."""
    x = start.copy()
    first, ratio, before = math.nan, 0.0, math.nan
    for it in range(max_iter):
        F, J = system.residual(x)
        size_f = float(np.max(np.abs(F)))
        # F's rounding error: a few ulps of its largest terms, log σ and λ·u
        floor = 64 * np.finfo(float).eps * (1.0 + float(np.max(np.abs(x[:-1]))) + abs(float(x[-1])) * system.scale)
        if it >= 1 and size_f <= floor:
            return x, first, ratio
        if it >= 2 and before > 1e3 * floor:
            ratio = max(ratio, size_f / before)
        before = size_f
        A = np.vstack([J, normal])
        b = -np.append(F, normal @ x - level)
        try:
            dx = np.linalg.solve(A, b)
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(dx)):
            return None
        x = x + dx
        size = float(np.max(np.abs(dx) / (1.0 + np.abs(x))))  # relative: log σ of a shunned strategy runs to −λ·Δu
        if it == 0:
            first = size
        if size <= NEWTON_TOL:
            return x, first, ratio
        if ratio > 0.9:
            return None
    return None


@dataclass
class Branch:
    """The principal branch as traced: ``points`` (P × (m+1): log σ per group, then λ) and
    their unit ``tangents``; ``system`` evaluates F."""

    system: _Logit
    points: np.ndarray
    tangents: np.ndarray

    @property
    def lams(self) -> np.ndarray:
        """λ at each traced point."""
        return self.points[:, -1]

    @property
    def logs(self) -> np.ndarray:
        """log σ (per group) at each traced point."""
        return self.points[:, :-1]

    @property
    def lam_max(self) -> float:
        """λ where the trace ends."""
        return float(self.points[-1, -1])

    def segment_point(self, k: int, tau: float) -> tuple[np.ndarray, np.ndarray]:
        """The branch point whose projection on tangent k lies ``tau`` past point k, with its
        tangent (signed like tangent k)."""
        if tau == 0.0:
            return self.points[k], self.tangents[k]
        base, t = self.points[k], self.tangents[k]
        found = _correct(self.system, base + tau * t, t, float(t @ base) + tau)
        if found is None:
            raise RuntimeError(f"the QRE corrector did not converge between traced points {k} and {k + 1}")
        x = found[0]
        return x, self.system.tangent(self.system.residual(x)[1], t)

    def segment_end(self, k: int) -> float:
        """The projection of point k+1 on tangent k, measured from point k."""
        return float(self.tangents[k] @ (self.points[k + 1] - self.points[k]))

    def profile(self, x: np.ndarray) -> tuple[np.ndarray, ...]:
        """Each player's mixed strategy at branch point x."""
        parts = [np.exp(part) for part in self.system.groups(x[: self.system.m])]
        parts = [p / p.sum() for p in parts]
        return tuple(parts[0].copy() for _ in range(self.system.seats)) if self.system.symmetric else tuple(parts)

    def at(self, lam: float) -> np.ndarray:
        """The first point of the branch with λ = ``lam`` (log σ, λ)."""
        lams = self.lams
        if lam <= 0:
            return self.points[0]
        crossed = np.nonzero((lams[:-1] - lam) * (lams[1:] - lam) <= 0)[0]
        if not len(crossed):
            raise ValueError(f"λ = {lam} lies beyond the traced branch (up to {self.lam_max:g})")
        k = int(crossed[0])
        if lams[k + 1] == lam:
            return self.points[k + 1]
        tau = optimize.brentq(lambda s: self.segment_point(k, s)[0][-1] - lam, 0.0, self.segment_end(k), xtol=1e-14, rtol=4 * np.finfo(float).eps)
        x = self.segment_point(k, tau)[0]
        return _fix_lambda(self.system, x, lam)


def _fix_lambda(system: _Logit, x: np.ndarray, lam: float) -> np.ndarray:
    """Newton on F(·, λ) = 0 at fixed λ from the nearby point x."""
    y = x[: system.m].copy()
    for _ in range(30):
        F, J = system.residual(np.append(y, lam))
        dy = np.linalg.solve(J[:, : system.m], -F)
        y += dy
        if np.max(np.abs(dy) / (1.0 + np.abs(y))) <= NEWTON_TOL:
            break
    return np.append(y, lam)


def principal_branch(payoffs: Sequence[ArrayLike], lam_max: float = LAM_MAX, symmetric: bool | None = None) -> Branch:
    """Trace the principal branch from the centroid at λ = 0 up to ``lam_max`` (the last point
    sits at λ = ``lam_max`` exactly). ``symmetric``: trace one shared σ (None: when the game is
    symmetric)."""
    arrays = game_arrays(payoffs)
    shared = is_symmetric(arrays) if symmetric is None else symmetric
    if shared and not is_symmetric(arrays):
        raise ValueError("symmetric=True needs a symmetric game")
    system = _Logit(arrays, shared)
    x = np.concatenate([np.concatenate([np.full(n, -math.log(n)) for n in system.sizes]), [0.0]])
    up = np.zeros(system.m + 1)
    up[-1] = 1.0
    t = system.tangent(system.residual(x)[1], up)
    points, tangents = [x], [t]
    h = FIRST_STEP
    for _ in range(MAX_STEPS):
        if x[-1] >= lam_max:
            break
        found = _correct(system, x + h * t, t, float(t @ x) + h, max_iter=12)
        accepted = found is not None and found[1] <= MAX_DISTANCE and found[2] <= MAX_CONTRACTION
        if accepted:
            new = found[0]
            t_new = system.tangent(system.residual(new)[1], t)
            cosine = float(t @ t_new)
            accepted = cosine >= MIN_COSINE
        if not accepted:
            h /= 2
            if h < 1e-12:
                raise RuntimeError(f"the QRE trace stalled at λ = {x[-1]:.6g}")
            continue
        if new[-1] < 0:
            raise RuntimeError("the QRE trace turned back below λ = 0")
        if new[-1] > lam_max:
            points.append(new)
            tangents.append(t_new)
            end = Branch(system, np.array(points), np.array(tangents)).at(lam_max)
            points[-1] = end
            tangents[-1] = system.tangent(system.residual(end)[1], t)
            x = end
            break
        factor = min(math.sqrt(MAX_DISTANCE / max(found[1], 1e-300)), math.sqrt((1 - MIN_COSINE) / max(1 - cosine, 1e-300)))
        h *= min(2.0, max(0.5, 0.7 * factor))
        x, t = new, t_new
        points.append(x)
        tangents.append(t)
    else:
        raise RuntimeError(f"the QRE trace took {MAX_STEPS} steps without reaching λ = {lam_max:g}")
    return Branch(system, np.array(points), np.array(tangents))


def logit_qre(payoffs: Sequence[ArrayLike], lam: float, symmetric: bool | None = None) -> tuple[np.ndarray, ...]:
    """Each player's mixed strategy in the logit QRE at ``lam`` on the principal branch."""
    if lam < 0:
        raise ValueError("λ must be ≥ 0")
    branch = principal_branch(payoffs, lam_max=max(float(lam), 1e-12), symmetric=symmetric)
    return branch.profile(branch.at(lam))


@dataclass(frozen=True)
class QREFit:
    """λ̂ with its interval (``interval``: how it was made), the fitted profile (per player),
    ℓ̂, n observations, k = 1, BIC = k·ln n − 2ℓ̂, AIC = 2k − 2ℓ̂; ``at_bound`` when λ̂ sits at
    the trace's end (ℓ still rising)."""

    lam: float
    low: float
    high: float
    log_likelihood: float
    n: int
    bic: float
    aic: float
    profile: tuple[np.ndarray, ...]
    k: int = 1
    interval: str = "bootstrap"
    level: float = 0.95
    at_bound: bool = False

    def params(self) -> dict[str, tuple[float, float, float]]:
        """{"λ": (estimate, low, high)}, as ``analysis.profile.structural_rows`` takes them."""
        return {"λ": (self.lam, self.low, self.high)}

    def rows(self, model_name: str, model: str, note: str = "") -> list[dict]:
        """Profile rows of this fit (λ, log-likelihood, BIC) for the structural section."""
        from .profile import structural_rows

        return structural_rows(model_name, model, self.params(), self.log_likelihood, self.bic, self.n, note)


def _count_vector(branch: Branch, counts: Sequence[ArrayLike] | ArrayLike, pooled: bool) -> tuple[np.ndarray, list[np.ndarray]]:
    """(counts in the branch's groups, each sampling population's counts) checked against the
    game."""
    system = branch.system
    shape = system.arrays[0].shape
    if pooled:
        if not system.symmetric:
            raise ValueError("pooled counts need a symmetric game (traced with one shared σ)")
        pops = [np.asarray(counts, dtype=float).reshape(-1)]
        if pops[0].shape != (shape[0],):
            raise ValueError(f"pooled counts need one count per strategy ({shape[0]}), got {pops[0].shape}")
    else:
        pops = [np.asarray(c, dtype=float).reshape(-1) for c in counts]
        if len(pops) != len(shape) or any(p.shape != (n,) for p, n in zip(pops, shape)):
            raise ValueError(f"counts need one vector per player with one count per strategy {shape}")
    if any((p < 0).any() or not np.isfinite(p).all() for p in pops) or sum(p.sum() for p in pops) <= 0:
        raise ValueError("counts must be finite, ≥ 0 and not all 0")
    vector = sum(pops) if system.symmetric else np.concatenate(pops)
    return np.asarray(vector, dtype=float), pops


def _slope(c: np.ndarray, t: np.ndarray) -> float:
    """dℓ/ds along the branch: counts · d log σ/ds."""
    return float(c @ t[:-1])


def _best_in_segment(branch: Branch, k: int, c: np.ndarray) -> np.ndarray:
    """The point of segment k (between points k and k+1) with the largest ℓ."""
    end = branch.segment_end(k)
    slope = lambda s: _slope(c, branch.segment_point(k, s)[1])  # noqa: E731
    if _slope(c, branch.tangents[k]) > 0 > slope(end):
        tau = optimize.brentq(slope, 0.0, end, xtol=1e-13 * (1 + end), rtol=4 * np.finfo(float).eps)
    else:
        tau = optimize.minimize_scalar(lambda s: -float(c @ branch.segment_point(k, s)[0][:-1]), bounds=(0.0, end), method="bounded", options={"xatol": 1e-10 * (1 + end)}).x
    x = branch.segment_point(k, float(tau))[0]
    ends = [branch.points[k], branch.points[k + 1], x]
    return max(ends, key=lambda p: float(c @ p[:-1]))


def _maximise(branch: Branch, c: np.ndarray, candidates: int = 3) -> tuple[np.ndarray, int]:
    """The global maximiser of ℓ = c·log σ along the branch, with the index of the traced point
    before it: the best few local maxima of ℓ over the traced points, each refined in its
    neighbouring segments."""
    ell = branch.logs @ c
    last = len(ell) - 1
    peaks = [k for k in range(len(ell)) if (k == 0 or ell[k] >= ell[k - 1]) and (k == last or ell[k] >= ell[k + 1])]
    peaks = sorted(peaks, key=lambda k: -ell[k])[:candidates]
    best, best_k, best_val = branch.points[0], 0, -math.inf
    for k in peaks:
        g = _slope(c, branch.tangents[k])
        if g > 0 and k < last:
            x, base = _best_in_segment(branch, k, c), k
        elif g < 0 and k > 0:
            x, base = _best_in_segment(branch, k - 1, c), k - 1
        else:
            x, base = branch.points[k], min(k, last - 1) if last > 0 else 0
        val = float(c @ x[:-1])
        if val > best_val:
            best, best_k, best_val = x, base, val
    if last > 0 and ell[last] >= best_val - 1e-10 * (1.0 + abs(best_val)):
        return branch.points[last], last - 1  # ℓ is as high at the trace's end: λ̂ is the bound
    return best, best_k


def _crossing(branch: Branch, k: int, c: np.ndarray, cut: float, a: float, b: float) -> float:
    """λ where ℓ = ``cut`` in segment k between the projections ``a`` and ``b`` (ℓ − cut
    changes sign there)."""
    fun = lambda s: float(c @ branch.segment_point(k, s)[0][:-1]) - cut  # noqa: E731
    tau = optimize.brentq(fun, a, b, xtol=1e-12, rtol=4 * np.finfo(float).eps)
    return float(branch.segment_point(k, tau)[0][-1])


def profile_interval(branch: Branch, c: np.ndarray, x_hat: np.ndarray, k_hat: int, level: float = 0.95) -> tuple[float, float]:
    """The λ values of the stretch of branch around x̂ (which lies in segment ``k_hat``) where
    2·(ℓ̂ − ℓ) ≤ χ²₁(level) (ends at 0 or the trace's end where ℓ stays above the cut)."""
    ell = branch.logs @ c
    cut = float(c @ x_hat[:-1]) - stats.chi2.ppf(level, 1) / 2
    lams = [float(x_hat[-1])]
    last = len(ell) - 1
    if last == 0:
        return lams[0], lams[0]
    tau_hat = min(max(float(branch.tangents[k_hat] @ (x_hat - branch.points[k_hat])), 0.0), branch.segment_end(k_hat))
    if ell[k_hat] < cut:  # below: the crossing lies between point k_hat and x̂
        lams.append(_crossing(branch, k_hat, c, cut, 0.0, tau_hat))
    else:
        k = k_hat
        while k >= 0 and ell[k] >= cut:
            lams.append(float(branch.lams[k]))
            k -= 1
        if k >= 0:
            lams.append(_crossing(branch, k, c, cut, 0.0, branch.segment_end(k)))
    if ell[k_hat + 1] < cut:  # above: between x̂ and point k_hat + 1
        lams.append(_crossing(branch, k_hat, c, cut, tau_hat, branch.segment_end(k_hat)))
    else:
        k = k_hat + 1
        while k <= last and ell[k] >= cut:
            lams.append(float(branch.lams[k]))
            k += 1
        if k <= last:
            lams.append(_crossing(branch, k - 1, c, cut, 0.0, branch.segment_end(k - 1)))
    return min(lams), max(lams)


def _bootstrap(branch: Branch, pops: list[np.ndarray], reps: int, seed: int, level: float) -> tuple[float, float]:
    """Percentile interval of λ over refits on multinomially resampled counts."""
    rng = np.random.default_rng(seed)
    draws = [rng.multinomial(int(round(p.sum())), p / p.sum(), size=reps).astype(float) for p in pops]
    if branch.system.symmetric:
        counts = sum(draws)
    else:
        counts = np.concatenate(draws, axis=1)
    lams = np.array([_maximise(branch, row, candidates=2)[0][-1] for row in counts])
    tail = (1 - level) / 2
    return float(np.quantile(lams, tail)), float(np.quantile(lams, 1 - tail))


def fit_logit_qre(
    payoffs: Sequence[ArrayLike],
    counts: Sequence[ArrayLike] | ArrayLike,
    *,
    pooled: bool = False,
    interval: str = "bootstrap",
    reps: int = 500,
    seed: int = 0,
    level: float = 0.95,
    lam_max: float = LAM_MAX,
    branch: Branch | None = None,
) -> QREFit:
    """λ̂ by maximum likelihood along the principal branch (module doc), from ``counts`` (one
    vector per player, or with ``pooled`` one vector for every seat of a symmetric game).
    ``interval``: "bootstrap" (``reps`` resamples, ``seed``), "profile" or "none". ``branch``:
    a branch of the same game already traced (reused across fits)."""
    if interval not in ("bootstrap", "profile", "none"):
        raise ValueError(f"interval must be 'bootstrap', 'profile' or 'none', not {interval!r}")
    with threadpool_limits(1):  # tiny matrices: BLAS threads only burn the other cores
        if branch is None:
            branch = principal_branch(payoffs, lam_max=lam_max, symmetric=True if pooled else None)
        c, pops = _count_vector(branch, counts, pooled)
        x_hat, k_hat = _maximise(branch, c)
        if interval == "profile":
            low, high = profile_interval(branch, c, x_hat, k_hat, level)
        elif interval == "bootstrap":
            low, high = _bootstrap(branch, pops, reps, seed, level)
        else:
            low = high = math.nan
    ell = float(c @ x_hat[:-1])
    n = int(round(float(c.sum())))
    lam = float(x_hat[-1])
    return QREFit(
        lam=lam,
        low=low,
        high=high,
        log_likelihood=ell,
        n=n,
        bic=math.log(n) - 2 * ell,
        aic=2 - 2 * ell,
        profile=branch.profile(x_hat),
        interval=interval,
        level=level,
        at_bound=lam >= branch.lam_max * (1 - 1e-12),
    )


def simulate_counts(rng: np.random.Generator, profile: Sequence[ArrayLike], n: int | Sequence[int]) -> list[np.ndarray]:
    """Counts of play drawn from a profile: player i's n_i choices from σ_i (multinomial)."""
    sizes = [n] * len(profile) if isinstance(n, (int, np.integer)) else list(n)
    return [rng.multinomial(int(k), np.asarray(p, float) / np.sum(p)) for p, k in zip(profile, sizes)]
