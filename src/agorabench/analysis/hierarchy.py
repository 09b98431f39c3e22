"""Cognitive hierarchy and level-k models of the p-beauty contest, fitted by maximum likelihood.

The contest. Players choose numbers in [low, high]; the target is p × the mean of all choices.

Level 0 (both models) chooses uniformly on [low, high]; its mean is m_0 = (low + high)/2.

Best reply to an expected mean M of the others: in a large group, p·M (one's own choice does not
move the mean); with ``players = N``, the exact reply with one's own choice in the mean,
x = p·(x + (N−1)·M)/N, i.e. x = p(N−1)/(N−p)·M. Either is clamped to [low, high].

Poisson cognitive hierarchy (Camerer, Ho & Chong 2004, QJE 119(3):861–898). Levels are
Poisson(τ): f(k) = e^{−τ}τ^k/k!. Levels run 0..K (``levels`` = K, default 10) and the tail
P(k ≥ K) is folded into level K, so the shares sum to one. Level k ≥ 1 believes the others are
levels 0..k−1 in proportions f(h)/Σ_{h<k} f(h), expects their mean M_k = Σ_{h<k} f(h)·m_h /
Σ_{h<k} f(h) (m_h the level's intended choice), and intends m_k = its best reply to M_k. The
choice of a level k ≥ 1 is its m_k with a normal error of standard deviation σ, truncated to
[low, high]. The likelihood of a choice x is

    L(x) = f(0)/(high − low) + Σ_{k=1..K} f(k)·φ_T(x; m_k, σ),
    φ_T(x; m, σ) = φ((x − m)/σ) / (σ·[Φ((high − m)/σ) − Φ((low − m)/σ)]),

and ℓ = Σ_i log L(x_i) over independent choices. (τ, σ) maximise ℓ (τ ∈ [0.01, 15], σ from
0.1 % to 100 % of the range): a grid gives the start, L-BFGS-B in (log τ, log σ) the optimum.
k = 2 parameters, BIC = k·ln n − 2ℓ̂, AIC = 2k − 2ℓ̂.

Interval of τ (95 % by default): ``"profile"``, {τ : 2·(ℓ̂ − ℓ_p(τ)) ≤ χ²₁(level)} with
ℓ_p(τ) = max_σ ℓ(τ, σ) (an end at the search bound means the data do not bound τ there); or
``"bootstrap"``, the percentile interval of τ over refits on choices resampled with
replacement.

Level-k (Nagel 1995; Costa-Gomes & Crawford 2006 style). Level k ≥ 1 chooses m_k, the best
reply iterated k times from level 0's mean: p^k·m_0 in a large group (clamped to the range).
The shares π_0..π_K of the levels are free (K = ``levels``, default 3), and levels ≥ 1 choose
with the same truncated normal error:

    L(x) = π_0/(high − low) + Σ_{k=1..K} π_k·φ_T(x; m_k, σ).

(π, σ) maximise ℓ by L-BFGS-B over softmax logits of π and log σ, with analytic gradients;
k = K + 1 parameters (K free shares and σ). Intervals of every share and of σ: percentile
bootstrap over refits on resampled choices.

Both models treat choices as independent draws, one per player.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, special, stats
from threadpoolctl import threadpool_limits

#: Poisson levels are 0..LEVELS, the tail folded into the last.
LEVELS = 10
#: Search box of τ.
TAU_BOUNDS = (0.01, 15.0)
#: Search box of σ as shares of the range (high − low).
SIGMA_SHARE = (1e-3, 1.0)
_LOG_ROOT_2PI = 0.5 * math.log(2 * math.pi)


def reply_factor(p: float, players: int | None = None) -> float:
    """The best reply's multiple of the others' expected mean: p (large group) or
    p(N−1)/(N−p) with N = ``players`` (one's own choice counted in the mean)."""
    if players is None:
        return float(p)
    if players < 2 or players <= p:
        raise ValueError(f"the exact best reply needs players ≥ 2 and players > p, got players = {players}, p = {p}")
    return float(p) * (players - 1) / (players - p)


def poisson_shares(tau: float, levels: int = LEVELS) -> np.ndarray:
    """f(0..K) of Poisson(τ), the tail P(k ≥ K) folded into level K."""
    k = np.arange(levels)
    pmf = np.exp(-tau + k * math.log(tau) - special.gammaln(k + 1)) if tau > 0 else (k == 0).astype(float)
    return np.append(pmf, max(0.0, 1.0 - float(pmf.sum())))


def ch_means(tau: float, p: float, low: float, high: float, levels: int = LEVELS, players: int | None = None) -> np.ndarray:
    """m_0..m_K of the Poisson cognitive hierarchy: m_0 = (low + high)/2, m_k = the best reply
    to Σ_{h<k} f(h)·m_h / Σ_{h<k} f(h), clamped to [low, high]."""
    f = poisson_shares(tau, levels)
    factor = reply_factor(p, players)
    means = np.empty(levels + 1)
    means[0] = (low + high) / 2
    weight = total = 0.0
    for k in range(1, levels + 1):
        weight += f[k - 1]
        total += f[k - 1] * means[k - 1]
        means[k] = min(high, max(low, factor * total / weight))
    return means


def level_k_means(p: float, low: float, high: float, levels: int = 3, players: int | None = None) -> np.ndarray:
    """m_0..m_K of level-k: m_0 = (low + high)/2, m_k = the best reply to m_{k−1} (p^k·m_0 in
    a large group), clamped to [low, high]."""
    factor = reply_factor(p, players)
    means = np.empty(levels + 1)
    means[0] = (low + high) / 2
    for k in range(1, levels + 1):
        means[k] = min(high, max(low, factor * means[k - 1]))
    return means


def _log_trunc_normal(x: np.ndarray, means: np.ndarray, sigma: float | np.ndarray, low: float, high: float) -> np.ndarray:
    """log φ_T(x; m, σ) for every choice (rows) and mean (columns); ``sigma`` may carry
    leading axes of its own (broadcast in front)."""
    sigma = np.asarray(sigma, dtype=float)[..., None, None]
    z = (x[:, None] - means[None, :]) / sigma
    mass = special.ndtr((high - means) / sigma) - special.ndtr((low - means) / sigma)
    return -0.5 * z * z - np.log(sigma) - _LOG_ROOT_2PI - np.log(mass)


def _mixture_loglik(x: np.ndarray, shares: np.ndarray, means: np.ndarray, sigma: float | np.ndarray, low: float, high: float) -> np.ndarray:
    """Σ_i log[π_0/(high − low) + Σ_k π_k·φ_T(x_i; m_k, σ)] (one value per σ given)."""
    with np.errstate(divide="ignore"):
        log_shares = np.log(shares)
    comp = _log_trunc_normal(x, means[1:], sigma, low, high) + log_shares[1:]
    uniform = np.broadcast_to(log_shares[0] - math.log(high - low), comp.shape[:-1])[..., None]
    terms = np.concatenate([uniform, comp], axis=-1)
    top = np.max(terms, axis=-1, keepdims=True)
    return np.sum(top[..., 0] + np.log(np.sum(np.exp(terms - top), axis=-1)), axis=-1)


def _choices(choices: ArrayLike, low: float, high: float) -> np.ndarray:
    """The choices as floats, checked to lie in [low, high]."""
    x = np.asarray(choices, dtype=float).reshape(-1)
    if not high > low:
        raise ValueError(f"the range needs high > low, got [{low}, {high}]")
    if len(x) == 0 or not np.isfinite(x).all() or x.min() < low or x.max() > high:
        raise ValueError(f"choices must be finite numbers in [{low}, {high}]")
    return x


def ch_log_likelihood(choices: ArrayLike, tau: float, sigma: float, p: float, low: float = 0.0, high: float = 100.0, levels: int = LEVELS, players: int | None = None) -> float:
    """ℓ(τ, σ) of the Poisson cognitive hierarchy (module doc)."""
    x = _choices(choices, low, high)
    return float(_mixture_loglik(x, poisson_shares(tau, levels), ch_means(tau, p, low, high, levels, players), sigma, low, high))


@dataclass(frozen=True)
class CHFit:
    """τ̂ with its interval, σ̂, ℓ̂, n choices, k = 2, BIC = k·ln n − 2ℓ̂, AIC = 2k − 2ℓ̂, the
    level means m_0..m_K at τ̂; ``at_bound`` when τ̂ sits on its search bound."""

    tau: float
    low: float
    high: float
    sigma: float
    log_likelihood: float
    n: int
    bic: float
    aic: float
    means: tuple[float, ...]
    k: int = 2
    interval: str = "profile"
    level: float = 0.95
    levels: int = LEVELS
    at_bound: bool = False

    def params(self) -> dict[str, tuple[float, float, float]]:
        """{"τ": (estimate, low, high), "σ": (estimate, nan, nan)}, as
        ``analysis.profile.structural_rows`` takes them."""
        return {"τ": (self.tau, self.low, self.high), "σ": (self.sigma, math.nan, math.nan)}

    def rows(self, model_name: str, model: str, note: str = "") -> list[dict]:
        """Profile rows of this fit (τ, σ, log-likelihood, BIC) for the structural section."""
        from .profile import structural_rows

        return structural_rows(model_name, model, self.params(), self.log_likelihood, self.bic, self.n, note)


class _CH:
    """ℓ(τ, σ) of one sample, with the level means cached per τ."""

    def __init__(self, x: np.ndarray, p: float, low: float, high: float, levels: int, players: int | None) -> None:
        self.x, self.p, self.low, self.high, self.levels, self.players = x, p, low, high, levels, players
        span = high - low
        self.sigma_box = (SIGMA_SHARE[0] * span, SIGMA_SHARE[1] * span)
        self._cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    def parts(self, tau: float) -> tuple[np.ndarray, np.ndarray]:
        """(f(0..K), m_0..m_K) at τ."""
        if tau not in self._cache:
            if len(self._cache) > 512:
                self._cache.clear()
            self._cache[tau] = (poisson_shares(tau, self.levels), ch_means(tau, self.p, self.low, self.high, self.levels, self.players))
        return self._cache[tau]

    def loglik(self, tau: float, sigma: float | np.ndarray) -> np.ndarray:
        """ℓ(τ, σ), one value per σ given."""
        shares, means = self.parts(tau)
        return _mixture_loglik(self.x, shares, means, sigma, self.low, self.high)

    def profile(self, tau: float, near: float | None = None) -> tuple[float, float]:
        """(max_σ ℓ(τ, σ), the σ reaching it). ``near``: a σ the maximiser is expected close to
        (the fit's): the search first spans a factor 4 either side of it, and the whole box
        when the maximum falls on that bracket's edge."""
        lo, hi = (math.log(b) for b in self.sigma_box)
        objective = lambda s: -float(self.loglik(tau, math.exp(s)))  # noqa: E731
        if near is not None:
            a, b = max(lo, math.log(near) - math.log(4.0)), min(hi, math.log(near) + math.log(4.0))
            res = optimize.minimize_scalar(objective, bounds=(a, b), method="bounded", options={"xatol": 1e-5})
            inner = (a == lo or res.x - a > 1e-3) and (b == hi or b - res.x > 1e-3)
            if inner:
                return -float(res.fun), math.exp(float(res.x))
        res = optimize.minimize_scalar(objective, bounds=(lo, hi), method="bounded", options={"xatol": 1e-5})
        return -float(res.fun), math.exp(float(res.x))

    def fit(self, start: tuple[float, float] | None = None) -> tuple[float, float, float]:
        """(ℓ̂, τ̂, σ̂): from the best point of a grid (or ``start``), L-BFGS-B over
        (log τ, log σ) within the boxes."""
        if start is None:
            sigmas = np.exp(np.linspace(math.log(0.005 * (self.high - self.low)), math.log(0.5 * (self.high - self.low)), 12))
            best = (-math.inf, 1.0, float(sigmas[0]))
            for tau in np.exp(np.linspace(math.log(0.05), math.log(10.0), 16)):
                vals = self.loglik(float(tau), sigmas)
                j = int(np.argmax(vals))
                if vals[j] > best[0]:
                    best = (float(vals[j]), float(tau), float(sigmas[j]))
            start = best[1:]
        box = [tuple(math.log(b) for b in TAU_BOUNDS), tuple(math.log(b) for b in self.sigma_box)]
        theta0 = np.clip(np.log(start), [b[0] for b in box], [b[1] for b in box])
        res = optimize.minimize(lambda th: -float(self.loglik(math.exp(th[0]), math.exp(th[1]))), theta0, method="L-BFGS-B", bounds=box, options={"ftol": 1e-12, "gtol": 1e-7})
        return -float(res.fun), math.exp(float(res.x[0])), math.exp(float(res.x[1]))


def _profile_tau(model: _CH, tau_hat: float, ell_hat: float, level: float, sigma_hat: float | None = None) -> tuple[float, float]:
    """The τ values with 2·(ℓ̂ − ℓ_p(τ)) ≤ χ²₁(level), found by root finding in log τ on each
    side of τ̂ (the search bound where ℓ_p stays above the cut). Each ℓ_p is computed once."""
    cut = ell_hat - stats.chi2.ppf(level, 1) / 2
    seen: dict[float, float] = {}

    def gap(s: float) -> float:
        if s not in seen:
            seen[s] = model.profile(math.exp(s), sigma_hat)[0] - cut
        return seen[s]

    here = math.log(tau_hat)
    ends = []
    for bound in (math.log(TAU_BOUNDS[0]), math.log(TAU_BOUNDS[1])):
        if abs(bound - here) < 1e-12 or gap(bound) >= 0:
            ends.append(math.exp(bound))
        else:
            ends.append(math.exp(optimize.brentq(gap, here, bound, xtol=1e-5)) if gap(here) > 0 else tau_hat)
    return ends[0], ends[1]


def fit_poisson_ch(
    choices: ArrayLike,
    p: float,
    low: float = 0.0,
    high: float = 100.0,
    *,
    players: int | None = None,
    levels: int = LEVELS,
    interval: str = "profile",
    reps: int = 200,
    seed: int = 0,
    level: float = 0.95,
) -> CHFit:
    """τ and σ of the Poisson cognitive hierarchy by maximum likelihood (module doc), with an
    interval of τ: "profile", "bootstrap" (``reps`` resamples, ``seed``) or "none"."""
    if interval not in ("profile", "bootstrap", "none"):
        raise ValueError(f"interval must be 'profile', 'bootstrap' or 'none', not {interval!r}")
    x = _choices(choices, low, high)
    model = _CH(x, p, low, high, levels, players)
    with threadpool_limits(1):  # small arrays: BLAS threads only burn the other core
        ell, tau, sigma = model.fit()
        if interval == "profile":
            lo, hi = _profile_tau(model, tau, ell, level, sigma)
        elif interval == "bootstrap":
            rng = np.random.default_rng(seed)
            taus = [_CH(x[rng.integers(0, len(x), len(x))], p, low, high, levels, players).fit((tau, sigma))[1] for _ in range(reps)]
            tail = (1 - level) / 2
            lo, hi = float(np.quantile(taus, tail)), float(np.quantile(taus, 1 - tail))
        else:
            lo = hi = math.nan
    n = len(x)
    return CHFit(
        tau=tau,
        low=lo,
        high=hi,
        sigma=sigma,
        log_likelihood=ell,
        n=n,
        bic=2 * math.log(n) - 2 * ell,
        aic=4 - 2 * ell,
        means=tuple(float(m) for m in ch_means(tau, p, low, high, levels, players)),
        interval=interval,
        level=level,
        levels=levels,
        at_bound=bool(min(abs(math.log(tau / b)) for b in TAU_BOUNDS) < 1e-6),
    )


def _draw_trunc_normal(rng: np.random.Generator, means: np.ndarray, sigma: float, low: float, high: float) -> np.ndarray:
    """One draw of N(m, σ²) truncated to [low, high] per mean, by the inverse CDF (mirrored for
    a mean above the middle, so the tail that is cut off is the lower one)."""
    flip = means > (low + high) / 2
    m = np.where(flip, low + high - means, means)  # mirror so the mean lies in the lower half
    a, b = special.ndtr((low - m) / sigma), special.ndtr((high - m) / sigma)
    u = a + rng.uniform(size=len(m)) * (b - a)
    x = np.clip(m + sigma * special.ndtri(u), low, high)
    return np.where(flip, low + high - x, x)


def simulate_ch(rng: np.random.Generator, n: int, tau: float, sigma: float, p: float, low: float = 0.0, high: float = 100.0, *, players: int | None = None, levels: int = LEVELS) -> np.ndarray:
    """n choices of Poisson-CH players: levels drawn from Poisson(τ) (capped at K), level 0
    uniform on [low, high], level k ≥ 1 at m_k plus N(0, σ²) error truncated to the range."""
    level = np.minimum(rng.poisson(tau, size=n), levels)
    means = ch_means(tau, p, low, high, levels, players)
    noisy = _draw_trunc_normal(rng, means[level], sigma, low, high)
    return np.where(level == 0, rng.uniform(low, high, size=n), noisy)


@dataclass(frozen=True)
class LevelKFit:
    """Shares π_0..π_K with their intervals (``lows``, ``highs``), σ̂ with its interval, ℓ̂,
    n choices, k = K + 1, BIC = k·ln n − 2ℓ̂, AIC = 2k − 2ℓ̂, the level means m_0..m_K."""

    shares: tuple[float, ...]
    lows: tuple[float, ...]
    highs: tuple[float, ...]
    sigma: float
    log_likelihood: float
    n: int
    bic: float
    aic: float
    means: tuple[float, ...]
    sigma_low: float = math.nan
    sigma_high: float = math.nan
    k: int = 4
    interval: str = "bootstrap"
    level: float = 0.95

    def params(self) -> dict[str, tuple[float, float, float]]:
        """{"level k share": (estimate, low, high) per level, "σ": ...}, as
        ``analysis.profile.structural_rows`` takes them."""
        out = {f"level {k} share": (s, lo, hi) for k, (s, lo, hi) in enumerate(zip(self.shares, self.lows, self.highs))}
        out["σ"] = (self.sigma, self.sigma_low, self.sigma_high)
        return out

    def rows(self, model_name: str, model: str, note: str = "") -> list[dict]:
        """Profile rows of this fit (each share, σ, log-likelihood, BIC) for the structural section."""
        from .profile import structural_rows

        return structural_rows(model_name, model, self.params(), self.log_likelihood, self.bic, self.n, note)


_NORM_PDF_C = np.sqrt(2 * np.pi)


def _norm_pdf(x: np.ndarray) -> np.ndarray:
    """φ(x) by the very operations of ``scipy.stats.norm.pdf`` (exp(−x²/2)/√(2π), divided by
    the unit scale), so the values are the same bits, without its argument checks per call."""
    return np.exp(-x**2 / 2.0) / _NORM_PDF_C / 1.0


def _logsumexp(a: np.ndarray) -> np.float64:
    """log Σ exp(a) of a finite 1-D array by the very operations of ``scipy.special.logsumexp``
    (the maxima taken out of the sum and counted: log1p(Σ_rest exp(a − max)/count) + log(count)
    + max), so the value is the same bits, without its array-namespace dispatch per call."""
    top = np.max(a, keepdims=True)
    at_top = a == top
    count = np.sum(at_top.astype(a.dtype), keepdims=True, dtype=a.dtype)
    s = np.sum(np.exp(np.where(at_top, -np.inf, a) - top), keepdims=True, dtype=a.dtype)
    s = np.where(s == 0, s, s / count)
    return (np.log1p(s) + np.log(count) + top)[0]


def _level_k_objective(x: np.ndarray, means: np.ndarray, low: float, high: float) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """−ℓ and its gradient in θ = (η_1..η_K, log σ), π = softmax(0, η):
    ∂ℓ/∂η_k = Σ_i (r_ik − π_k) with r the posterior level probabilities, and
    ∂ℓ/∂log σ = Σ_i Σ_{k≥1} r_ik·[z² − 1 + (b·φ(b) − a·φ(a))/Z] with z = (x − m_k)/σ,
    a = (low − m_k)/σ, b = (high − m_k)/σ, Z = Φ(b) − Φ(a)."""
    span = high - low
    comp_means = means[1:]

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        eta = np.append(0.0, theta[:-1])
        log_pi = eta - _logsumexp(eta)
        sigma = math.exp(theta[-1])
        z = (x[:, None] - comp_means[None, :]) / sigma
        a, b = (low - comp_means) / sigma, (high - comp_means) / sigma
        mass = special.ndtr(b) - special.ndtr(a)
        log_comp = -0.5 * z * z - math.log(sigma) - _LOG_ROOT_2PI - np.log(mass)
        terms = np.concatenate([np.full((len(x), 1), log_pi[0] - math.log(span)), log_comp + log_pi[1:]], axis=1)
        top = np.max(terms, axis=1, keepdims=True)
        total = np.log(np.sum(np.exp(terms - top), axis=1)) + top[:, 0]
        r = np.exp(terms - total[:, None])
        pi = np.exp(log_pi)
        g_eta = (r - pi).sum(axis=0)[1:]
        edge = (b * _norm_pdf(b) - a * _norm_pdf(a)) / mass
        g_sigma = float(np.sum(r[:, 1:] * (z * z - 1 + edge[None, :])))
        return -float(total.sum()), -np.append(g_eta, g_sigma)

    return objective


def _fit_level_k(x: np.ndarray, means: np.ndarray, low: float, high: float, starts: Sequence[np.ndarray]) -> tuple[float, np.ndarray, float]:
    """(ℓ̂, π̂, σ̂) by L-BFGS-B from each start θ = (η, log σ), the best kept."""
    objective = _level_k_objective(x, means, low, high)
    span = high - low
    box = [(-30.0, 30.0)] * (len(means) - 1) + [(math.log(SIGMA_SHARE[0] * span), math.log(SIGMA_SHARE[1] * span))]
    best = None
    for start in starts:
        res = optimize.minimize(objective, np.clip(start, [b[0] for b in box], [b[1] for b in box]), jac=True, method="L-BFGS-B", bounds=box, options={"ftol": 1e-13, "gtol": 1e-8, "maxiter": 500})
        if best is None or res.fun < best.fun:
            best = res
    eta = np.append(0.0, best.x[:-1])
    return -float(best.fun), np.exp(eta - special.logsumexp(eta)), math.exp(float(best.x[-1]))


def fit_level_k(
    choices: ArrayLike,
    p: float,
    low: float = 0.0,
    high: float = 100.0,
    *,
    levels: int = 3,
    players: int | None = None,
    interval: str = "bootstrap",
    reps: int = 200,
    seed: int = 0,
    level: float = 0.95,
) -> LevelKFit:
    """Shares of levels 0..K and σ of the level-k model by maximum likelihood (module doc), with
    percentile bootstrap intervals (``interval="bootstrap"``, ``reps``, ``seed``) or none."""
    if interval not in ("bootstrap", "none"):
        raise ValueError(f"interval must be 'bootstrap' or 'none', not {interval!r}")
    x = _choices(choices, low, high)
    means = level_k_means(p, low, high, levels, players)
    span = high - low
    starts = [np.append(np.zeros(levels), math.log(s * span)) for s in (0.02, 0.05, 0.15)]
    lows = highs = (math.nan,) * (levels + 1)
    s_low = s_high = math.nan
    with threadpool_limits(1):
        ell, shares, sigma = _fit_level_k(x, means, low, high, starts)
        if interval == "bootstrap":
            rng = np.random.default_rng(seed)
            start = np.append(np.log(np.maximum(shares[1:], 1e-12) / max(shares[0], 1e-12)), math.log(sigma))
            draws = np.array([np.append(*_fit_level_k(x[rng.integers(0, len(x), len(x))], means, low, high, [start])[1:]) for _ in range(reps)])
            tail = (1 - level) / 2
            q_low, q_high = np.quantile(draws, tail, axis=0), np.quantile(draws, 1 - tail, axis=0)
            lows, highs = tuple(float(v) for v in q_low[:-1]), tuple(float(v) for v in q_high[:-1])
            s_low, s_high = float(q_low[-1]), float(q_high[-1])
    n = len(x)
    k = levels + 1
    return LevelKFit(
        shares=tuple(float(s) for s in shares),
        lows=lows,
        highs=highs,
        sigma=sigma,
        log_likelihood=ell,
        n=n,
        bic=k * math.log(n) - 2 * ell,
        aic=2 * k - 2 * ell,
        means=tuple(float(m) for m in means),
        sigma_low=s_low,
        sigma_high=s_high,
        k=k,
        interval=interval,
        level=level,
    )


def simulate_level_k(rng: np.random.Generator, n: int, shares: Sequence[float], sigma: float, p: float, low: float = 0.0, high: float = 100.0, *, players: int | None = None) -> np.ndarray:
    """n choices of level-k players: levels drawn with ``shares`` (π_0..π_K), level 0 uniform,
    level k ≥ 1 at m_k plus N(0, σ²) error truncated to [low, high]."""
    pi = np.asarray(shares, dtype=float)
    level = rng.choice(len(pi), size=n, p=pi / pi.sum())
    means = level_k_means(p, low, high, len(pi) - 1, players)
    noisy = _draw_trunc_normal(rng, means[level], sigma, low, high)
    return np.where(level == 0, rng.uniform(low, high, size=n), noisy)
