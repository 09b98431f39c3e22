"""Box-constrained maximisation of a smooth function with an analytic gradient and Hessian, as
the structural estimators need it (today :mod:`agorabench.analysis.fehr_schmidt`).

:func:`maximise` runs projected Newton (:func:`newton`, steps from :func:`newton_step`) from
each start, continues a start that does not converge with scipy's L-BFGS-B (:func:`lbfgsb`) and
keeps the best point. The caller supplies the function and its derivatives; this module knows
no model, no data and no game.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

import numpy as np
from scipy import optimize

#: ``derivatives(θ) -> (f, gradient, Hessian)``
Derivatives = Callable[[np.ndarray], "tuple[float, np.ndarray, np.ndarray]"]
#: ``objective(θ) -> (f, gradient)``
Objective = Callable[[np.ndarray], "tuple[float, np.ndarray]"]

#: Projected Newton: stop when the projected gradient is this small (L-BFGS-B's default is 1e-5)
NEWTON_GTOL = 1e-8
NEWTON_MAX_ITER = 60
#: ... or when the step in θ is this small
NEWTON_XTOL = 1e-10


def newton_step(g: np.ndarray, H: np.ndarray, x: np.ndarray, lo: np.ndarray, hi: np.ndarray, held: np.ndarray) -> np.ndarray:
    """An ascent step of the quadratic model f + g·s + ½·sᵀHs with the ``held`` coordinates
    kept where they are. H is made negative definite first (its eigenvalues e replaced by
    −max(|e|, floor)). A coordinate whose step crosses the bound that its gradient points to is
    put on that bound and the others solved again with that displacement (the step of a curved
    valley that runs into a bound), kept if it still ascends."""
    n = len(x)
    shift = np.zeros(n)
    first = None
    for _ in range(n + 1):
        move = ~held
        step = shift.copy()
        if move.all():
            vals, vecs = np.linalg.eigh(-H)
            rhs = g
        elif move.any():
            vals, vecs = np.linalg.eigh(-H[move][:, move])
            rhs = g[move] + H[move][:, held] @ shift[held]
        else:
            vals = None
        if vals is not None:
            vals = np.maximum(np.abs(vals), 1e-10 * max(1.0, float(np.max(np.abs(vals)))))
            step[move] = vecs @ ((vecs.T @ rhs) / vals)
        if first is None:
            first = step
        elif float(g @ step) <= 0:
            return first
        out = move & (((x + step < lo) & (g < 0)) | ((x + step > hi) & (g > 0)))
        if not out.any():
            return step
        held = held | out
        shift[out] = np.where(g[out] < 0, lo[out], hi[out]) - x[out]
    return first


def newton(derivatives: Derivatives, box: list[tuple[float, float]], free: list[int], start: np.ndarray) -> tuple[float, np.ndarray, bool]:
    """Maximise f over the ``free`` coordinates of θ within ``box`` (``derivatives(θ)`` gives
    f, its gradient and its Hessian) by projected Newton: a coordinate at a bound whose gradient points out of the box is held,
    the others take the step of :func:`newton_step`, halved until the Armijo rule
    f(θ') ≥ f(θ) + 10⁻⁴·g·(θ' − θ) holds (θ' projected on the box). Returns (f, θ, converged):
    converged when the projected gradient is below ``NEWTON_GTOL``, or below L-BFGS-B's 1e-5
    once θ stops moving (steps under ``NEWTON_XTOL``, or no step improves f at the rounding
    floor)."""
    idx = np.asarray(free)
    lo = np.array([box[i][0] for i in free])
    hi = np.array([box[i][1] for i in free])
    theta = start.copy()
    x = np.clip(start[idx], lo, hi)
    theta[idx] = x
    f, g, H = derivatives(theta)
    for _ in range(NEWTON_MAX_ITER):
        gf = g[idx]
        held = ((x <= lo) & (gf < 0)) | ((x >= hi) & (gf > 0))
        pg = float(np.max(np.abs(gf[~held]))) if not held.all() else 0.0
        if pg <= NEWTON_GTOL:
            return f, theta, True
        step = newton_step(gf, H[idx[:, None], idx], x, lo, hi, held)
        size = float(np.max(np.abs(step)))
        if size <= NEWTON_XTOL:
            return f, theta, pg <= 1e-5  # θ no longer moves: converged unless the gradient says otherwise
        t = 1.0
        while t * size > NEWTON_XTOL:
            x_new = np.clip(x + t * step, lo, hi)
            new = theta.copy()
            new[idx] = x_new
            f_new, g_new, H_new = derivatives(new)
            if f_new >= f and f_new >= f + 1e-4 * float(gf @ (x_new - x)):
                break
            t *= 0.5
        else:
            return f, theta, pg <= 1e-5  # no ascent left: f is at its rounding floor
        theta, x, f, g, H = new, x_new, f_new, g_new, H_new
    return f, theta, False


def lbfgsb(objective: Objective, box: list[tuple[float, float]], free: list[int], theta: np.ndarray) -> tuple[float, np.ndarray]:
    """scipy's L-BFGS-B maximising f (``objective(θ)`` gives f and its gradient) over the
    ``free`` coordinates from ``theta`` (the fallback of :func:`newton`); returns (f, θ)."""

    def f(x: np.ndarray) -> tuple[float, np.ndarray]:
        full = theta.copy()
        full[free] = x
        v, g = objective(full)
        return -v, -g[free]

    res = optimize.minimize(f, theta[free], jac=True, method="L-BFGS-B", bounds=[box[i] for i in free])
    best = theta.copy()
    best[free] = res.x
    return -float(res.fun), best


def maximise(derivatives: Derivatives, objective: Objective, box: list[tuple[float, float]], free: list[int], start: np.ndarray, starts: Iterable[np.ndarray] = ()) -> tuple[float, np.ndarray]:
    """Maximise f over the ``free`` coordinates of θ (others held at ``start``), from ``start``
    and any extra ``starts``; returns (value, θ). Each start runs :func:`newton`; one that does
    not converge is continued by L-BFGS-B (:func:`lbfgsb`) and the better point kept."""
    best_val, best = -math.inf, start.copy()
    if not free:
        return objective(start)[0], start.copy()
    for s0 in [start, *starts]:
        theta = start.copy()
        theta[free] = np.asarray(s0)[free]
        val, th, converged = newton(derivatives, box, free, theta)
        if not converged:
            val2, th2 = lbfgsb(objective, box, free, th)
            if val2 > val:
                val, th = val2, th2
        if val > best_val:
            best_val, best = val, th
    return best_val, best
