"""Poisson cognitive hierarchy and level-k for the p-beauty contest: the level means and the
likelihood as the formulas state them, τ recovered from simulated players, Nagel's (1995)
p = 2/3 first period, and level-k shares recovered from simulated players."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from agorabench.analysis import hierarchy as h

#: Nagel's (1995) first-period choices at p = 2/3 (Figure 1B, 67 choices), as the lead
#: digitised them; the beauty contest family ships the same sample in its human data.
NAGEL_TWO_THIRDS = sorted(
    [5, 7, 8, 10, 11, 14] + [17] * 2 + [18] + [20] * 2 + [22] * 2 + [23] * 3 + [24] * 2 + [25] * 7 + [28] * 2 + [30] * 3 + [31] + [32] * 2 + [33] * 3
    + [34] * 3 + [35] * 5 + [37] + [40] * 2 + [42, 43] + [45] * 2 + [48] + [50] * 2 + [51, 56, 60, 65] + [66] * 2 + [67, 73, 76, 77, 79, 87, 99]
)


def nagel_choices() -> list[int]:
    """The p = 2/3 sample shipped with the beauty contest family, else the literal list."""
    try:
        from agorabench.games.beauty_contest.humans import nagel_choices as shipped
    except ImportError:  # the family's human data not there yet
        return NAGEL_TWO_THIRDS
    return list(shipped("2/3"))


def test_poisson_shares_fold_the_tail() -> None:
    shares = h.poisson_shares(1.5, levels=4)
    np.testing.assert_allclose(shares[:4], stats.poisson.pmf(np.arange(4), 1.5), rtol=1e-12)
    assert shares[4] == pytest.approx(stats.poisson.sf(3, 1.5), rel=1e-10)
    assert shares.sum() == pytest.approx(1.0, abs=1e-12)


def test_level_means() -> None:
    """m_k is the best reply to the normalised Poisson beliefs over lower levels; the exact
    reply with N players multiplies by p(N−1)/(N−p); p > 1 is clamped at the top."""
    tau, p = 1.5, 2 / 3
    f = stats.poisson.pmf(np.arange(3), tau)
    m = h.ch_means(tau, p, 0, 100, levels=3)
    assert m[0] == 50 and m[1] == pytest.approx(p * 50)
    assert m[2] == pytest.approx(p * (f[0] * 50 + f[1] * m[1]) / (f[0] + f[1]))
    assert m[3] == pytest.approx(p * (f[0] * 50 + f[1] * m[1] + f[2] * m[2]) / f.sum())
    exact = h.ch_means(tau, p, 0, 100, levels=3, players=3)
    factor = p * 2 / (3 - p)
    assert exact[1] == pytest.approx(factor * 50) and exact[2] == pytest.approx(factor * (f[0] * 50 + f[1] * exact[1]) / (f[0] + f[1]))
    np.testing.assert_allclose(h.ch_means(1.5, 2.0, 0, 100, levels=3), [50, 100, 100, 100])  # 2 × (≥ 50), clamped
    np.testing.assert_allclose(h.level_k_means(p, 0, 100, levels=3), [50, 50 * p, 50 * p**2, 50 * p**3])
    np.testing.assert_allclose(h.level_k_means(0.5, 20, 80, levels=2), [50, 25, 20])  # clamped at low


def test_likelihood_is_the_stated_mixture() -> None:
    """ℓ = Σ log[f(0)/(high − low) + Σ_k f(k)·truncated-normal density], checked choice by choice
    against scipy's truncnorm."""
    x = np.array([0.0, 3.0, 22.0, 33.3, 50.0, 99.0])
    tau, sigma, p = 1.2, 6.0, 2 / 3
    f, m = h.poisson_shares(tau, 10), h.ch_means(tau, p, 0, 100, 10)
    direct = 0.0
    for xi in x:
        dens = f[0] / 100 + sum(f[k] * stats.truncnorm.pdf(xi, (0 - m[k]) / sigma, (100 - m[k]) / sigma, loc=m[k], scale=sigma) for k in range(1, 11))
        direct += math.log(dens)
    assert h.ch_log_likelihood(x, tau, sigma, p) == pytest.approx(direct, rel=1e-12)
    with pytest.raises(ValueError, match="choices must be finite numbers in"):
        h.ch_log_likelihood([101.0], tau, sigma, p)


def test_simulated_choices_follow_the_model() -> None:
    """Simulated players: level shares Poisson(τ) (folded), level 0 uniform, level k truncated
    normal around m_k; the mean of 20,000 choices is the model's mean within 4 SE."""
    rng = np.random.default_rng(5)
    tau, sigma, p = 1.5, 12.0, 2 / 3
    x = h.simulate_ch(rng, 20_000, tau, sigma, p)
    assert x.min() >= 0 and x.max() <= 100
    f, m = h.poisson_shares(tau), h.ch_means(tau, p, 0, 100)
    means = [stats.truncnorm.mean((0 - mk) / sigma, (100 - mk) / sigma, loc=mk, scale=sigma) for mk in m[1:]]
    expected = f[0] * 50 + float(np.dot(f[1:], means))
    assert abs(x.mean() - expected) < 4 * x.std() / math.sqrt(len(x))
    edge = h._draw_trunc_normal(rng, np.full(20_000, 98.0), 5.0, 0.0, 100.0)
    assert abs(edge.mean() - stats.truncnorm.mean(-98 / 5, 2 / 5, loc=98, scale=5)) < 0.05


def test_tau_recovered_from_simulated_players() -> None:
    """τ = 1.5, σ = 5, 300 players per seed, 200 seeds: the profile-likelihood 95 % interval
    covers 1.5 in 92–99 % of seeds (a correct interval covers 190 on average, binomial SD ≈ 3.1
    seeds: 184 is 2 SD below), and τ̂ lies within 0.3 of 1.5 in at least 95 % of seeds (the
    estimates' SD is about 0.10 at this size, so 0.3 is 3 SD). A model whose level means or
    beliefs are wrong moves τ̂ and fails both."""
    covered = close = 0
    for seed in range(200):
        x = h.simulate_ch(np.random.default_rng(seed), 300, 1.5, 5.0, 2 / 3)
        fit = h.fit_poisson_ch(x, 2 / 3)
        covered += fit.low <= 1.5 <= fit.high
        close += abs(fit.tau - 1.5) <= 0.3
    assert 184 <= covered <= 198
    assert close >= 190


def test_nagel_two_thirds() -> None:
    """Nagel's 67 first-period choices at p = 2/3, large-group best reply, normal error:
    τ̂ = 1.07 with σ̂ = 9.1, profile-likelihood 95 % interval [0.62, 1.61] (ℓ̂ = −286.35, BIC
    581.1). Camerer, Ho & Chong's often quoted τ ≈ 1.5 lies inside it; level-k (K = 3) gives
    shares 0.38 / 0.38 / 0.24 / 0.00 with σ̂ = 7.8."""
    choices = nagel_choices()
    assert sorted(choices) == NAGEL_TWO_THIRDS
    fit = h.fit_poisson_ch(choices, 2 / 3)
    assert fit.low <= 1.5 <= fit.high
    assert 0.5 <= fit.tau <= 2.5
    assert fit.tau == pytest.approx(1.07, abs=0.01) and fit.sigma == pytest.approx(9.1, abs=0.1)
    assert (fit.low, fit.high) == (pytest.approx(0.62, abs=0.01), pytest.approx(1.61, abs=0.01))
    assert (fit.n, fit.k) == (67, 2) and fit.bic == pytest.approx(2 * math.log(67) - 2 * fit.log_likelihood)
    assert fit.log_likelihood == pytest.approx(h.ch_log_likelihood(choices, fit.tau, fit.sigma, 2 / 3), rel=1e-12)
    boot = h.fit_poisson_ch(choices, 2 / 3, interval="bootstrap", reps=60, seed=3)
    assert boot.tau == fit.tau and boot.low < fit.tau < boot.high
    levelk = h.fit_level_k(choices, 2 / 3, interval="none")
    np.testing.assert_allclose(levelk.shares, [0.38, 0.38, 0.24, 0.0], atol=0.01)


def test_level_k_shares_recovered_from_simulated_players() -> None:
    """Shares (0.2, 0.35, 0.3, 0.15) of levels 0–3, σ = 3, 300 players per seed, 100 seeds:
    all four estimated shares lie within 0.1 of the truth in at least 95 seeds (each share's SD
    is about 0.03 at this size, so 0.1 is over 3 SD), σ̂ within 0.75 of 3 (about 3 SD) in at
    least 95. Means off by one level, or a wrong error density, move the shares by more."""
    truth = np.array([0.2, 0.35, 0.3, 0.15])
    shares_ok = sigma_ok = 0
    for seed in range(100):
        x = h.simulate_level_k(np.random.default_rng(seed), 300, truth, 3.0, 2 / 3)
        fit = h.fit_level_k(x, 2 / 3, interval="none")
        shares_ok += bool(np.all(np.abs(np.array(fit.shares) - truth) <= 0.1))
        sigma_ok += abs(fit.sigma - 3.0) <= 0.75
    assert shares_ok >= 95 and sigma_ok >= 95


def test_level_k_bootstrap_and_statistics() -> None:
    """Bootstrap intervals hold each estimated share; ℓ̂, k = K + 1 and BIC as stated."""
    x = h.simulate_level_k(np.random.default_rng(1), 200, [0.3, 0.4, 0.3], 4.0, 0.5)
    fit = h.fit_level_k(x, 0.5, levels=2, reps=60, seed=2)
    assert fit.k == 3 and fit.n == 200
    assert fit.bic == pytest.approx(3 * math.log(200) - 2 * fit.log_likelihood)
    assert sum(fit.shares) == pytest.approx(1.0)
    for share, lo, hi in zip(fit.shares, fit.lows, fit.highs):
        assert lo <= share <= hi
    assert fit.sigma_low <= fit.sigma <= fit.sigma_high
    assert set(fit.params()) == {"level 0 share", "level 1 share", "level 2 share", "σ"}
    rows = fit.rows("bc: level-k", "model-a")
    assert [r["measure"] for r in rows][-3:] == ["bc: level-k σ", "bc: level-k log-likelihood", "bc: level-k BIC"]
    assert rows[1]["estimate"] == fit.shares[1] and rows[1]["low"] == fit.lows[1]
