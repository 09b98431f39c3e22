"""Logit QRE: the principal branch and the maximum-likelihood λ against pygambit (the oracle,
a dev dependency), plain logit for one player, pooled counts of symmetric games, the bound when
play sits on a pure equilibrium, the bootstrap, and the coverage of the profile interval over
simulated players."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agorabench.analysis import qre

gbt = pytest.importorskip("pygambit")

#: The prisoner's dilemma in points: R = 75, T = 85, S = 25, P = 30; strategy 0 cooperates.
PD = [np.array([[75, 25], [85, 30]]), np.array([[75, 85], [25, 30]])]
#: Asymmetric matching pennies: the row player gets 9 for matching heads, 1 for tails.
PENNIES = [np.array([[9, 0], [0, 1]]), np.array([[0, 1], [1, 0]])]
#: A 3×3 game with unit payoffs and no pure equilibrium in dominant strategies.
THREE = [np.array([[3, 0, 1], [1, 2, 0], [0, 1, 4]]), np.array([[1, 2, 0], [0, 1, 3], [2, 0, 1]])]
#: A symmetric three-player game with three strategies: ``_S[a, b, c]`` is the payoff of
#: playing a against b and c (symmetric in b and c); seat i's array swaps axes 0 and i.
_S = np.array([[[4.0, 7.0, 7.5], [7.0, 0.0, 5.0], [7.5, 5.0, 2.0]], [[3.0, 5.0, 4.0], [5.0, 8.0, 4.0], [4.0, 4.0, 5.0]], [[0.0, 3.5, 8.0], [3.5, 8.0, 4.0], [8.0, 4.0, 4.0]]])
SYM3 = [_S, np.swapaxes(_S, 0, 1), np.swapaxes(_S, 0, 2)]
#: An asymmetric three-player game.
_R = np.random.default_rng(3)
ASYM3 = [_R.integers(0, 10, size=(2, 3, 2)).astype(float) for _ in range(3)]
#: A decision problem: one player, three options.
DECISION = [np.array([1.0, 0.0, 0.5])]

CASES = {
    "prisoners-dilemma": (PD, [[164, 280], [164, 280]]),
    "prisoners-dilemma-unequal": (PD, [[164, 280], [120, 300]]),
    "matching-pennies": (PENNIES, [[60, 40], [30, 70]]),
    "3x3": (THREE, [[30, 20, 50], [40, 35, 25]]),
    "symmetric-3-players": (SYM3, [[39, 17, 4], [37, 19, 4], [40, 15, 5]]),
    "asymmetric-3-players": (ASYM3, [[44, 16], [10, 4, 46], [7, 53]]),
    "one-player": (DECISION, [[30, 10, 20]]),
}


def gambit_fit(payoffs: list[np.ndarray], counts: list[list[int]]) -> tuple[float, float, list[np.ndarray]]:
    """pygambit's (λ, log-likelihood, profile) for the same game and counts."""
    game = gbt.StrategicGame.from_arrays(*payoffs)
    fit = gbt.qre.logit_estimate(game.mixed_strategy_profile(data=[[float(v) for v in c] for c in counts]))
    profile = [np.array([v for _, v in fit.profile[str(i + 1)]]) for i in range(len(payoffs))]
    return float(fit.lam), float(fit.log_like), profile


@pytest.mark.parametrize("name", list(CASES))
def test_estimate_equals_pygambit(name: str) -> None:
    """λ̂ and the fitted profile agree with pygambit.qre.logit_estimate to 1e-3, the
    log-likelihood to 1e-6 (one-player decision problems included: pygambit takes them)."""
    payoffs, counts = CASES[name]
    lam, loglik, profile = gambit_fit(payoffs, counts)
    fit = qre.fit_logit_qre(payoffs, counts, interval="none")
    assert 0.01 < lam < 100  # the cases are chosen with an interior, identified λ
    assert fit.lam == pytest.approx(lam, abs=1e-3)
    for mine, theirs in zip(fit.profile, profile):
        np.testing.assert_allclose(mine, theirs, atol=1e-3)
    assert fit.log_likelihood == pytest.approx(loglik, rel=1e-6)
    n = sum(sum(c) for c in counts)
    assert (fit.n, fit.k) == (n, 1)
    assert fit.bic == pytest.approx(math.log(n) - 2 * loglik, rel=1e-6)
    assert fit.aic == pytest.approx(2 - 2 * loglik, rel=1e-6)
    assert not fit.at_bound


@pytest.mark.parametrize("name", ["matching-pennies", "3x3", "symmetric-3-players", "asymmetric-3-players"])
def test_equilibrium_at_lambda_equals_pygambit(name: str) -> None:
    """The profile at fixed λ is pygambit's logit_solve_lambda (first point of the branch at λ)."""
    payoffs, _ = CASES[name]
    lams = [0.05, 0.5, 2.0, 7.0]
    game = gbt.StrategicGame.from_arrays(*payoffs)
    branch = qre.principal_branch(payoffs, lam_max=10.0)
    for lam, theirs in zip(lams, gbt.qre.logit_solve_lambda(game, lams)):
        mine = branch.profile(branch.at(lam))
        for i, sigma in enumerate(mine):
            np.testing.assert_allclose(sigma, [v for _, v in theirs.profile[str(i + 1)]], atol=1e-6)
    np.testing.assert_allclose(np.concatenate(qre.logit_qre(payoffs, 2.0)), np.concatenate(branch.profile(branch.at(2.0))), atol=1e-9)


def test_prisoners_dilemma_fits_the_observed_share_exactly() -> None:
    """On the symmetric PD branch σ_C falls from ½ to 0, so λ̂ reproduces the observed share
    164/444 of cooperation; cooperation above ½ is fitted by λ̂ = 0 (uniform play)."""
    fit = qre.fit_logit_qre(PD, [[164, 280], [164, 280]], interval="none")
    assert fit.profile[0][0] == pytest.approx(164 / 444, abs=1e-9)
    assert fit.lam == pytest.approx(0.0781269, abs=1e-6)
    assert qre.fit_logit_qre(PD, [[300, 144], [280, 164]], interval="none").lam == 0.0


def test_one_player_is_plain_logit() -> None:
    """A decision problem's QRE is softmax(λu), and λ̂ solves the logit first-order condition
    Σ_a count_a·u_a = n·Σ_a σ_a·u_a."""
    u = DECISION[0]
    counts = np.array([30, 10, 20])
    fit = qre.fit_logit_qre(DECISION, [counts], interval="none")
    softmax = np.exp(fit.lam * u) / np.exp(fit.lam * u).sum()
    np.testing.assert_allclose(fit.profile[0], softmax, atol=1e-10)
    assert counts @ u == pytest.approx(counts.sum() * softmax @ u, abs=1e-7)


def test_pooled_counts_of_a_symmetric_game() -> None:
    """One population's counts shared by both seats give the λ̂ of the same counts seat by seat,
    with n and ℓ counted once; pooled counts need a symmetric game."""
    pooled = qre.fit_logit_qre(PD, [164, 280], pooled=True, interval="profile")
    seats = qre.fit_logit_qre(PD, [[164, 280], [164, 280]], interval="profile")
    assert pooled.lam == pytest.approx(seats.lam, abs=1e-9)
    assert (pooled.n, seats.n) == (444, 888)
    assert pooled.log_likelihood == pytest.approx(seats.log_likelihood / 2, rel=1e-12)
    assert pooled.high - pooled.low > seats.high - seats.low  # half the data, a wider interval
    with pytest.raises(ValueError, match="symmetric"):
        qre.fit_logit_qre(THREE, [10, 20, 30], pooled=True)


def test_symmetric_games_keep_one_strategy() -> None:
    """A symmetric game is traced with one shared σ, and the full system traced seat by seat
    gives the same branch (three players); in hawk–dove the fit stays symmetric past the
    symmetry-breaking bifurcation, where pygambit's tracer leaves for an asymmetric branch."""
    assert qre.is_symmetric(SYM3) and qre.is_symmetric(PD)
    assert not qre.is_symmetric(PENNIES) and not qre.is_symmetric(ASYM3)
    shared = qre.principal_branch(SYM3, lam_max=20.0)
    full = qre.principal_branch(SYM3, lam_max=20.0, symmetric=False)
    assert shared.system.symmetric and not full.system.symmetric
    for lam in (0.3, 1.0, 4.0, 15.0):
        np.testing.assert_allclose(np.concatenate(shared.profile(shared.at(lam))), np.concatenate(full.profile(full.at(lam))), atol=1e-8)
    hawk_dove = [np.array([[0.0, 9.0], [9.0, 2.0]]), np.array([[0.0, 9.0], [9.0, 2.0]])]
    fit = qre.fit_logit_qre(hawk_dove, [[42, 48], [43, 47]], interval="none")
    np.testing.assert_allclose(fit.profile[0], fit.profile[1], atol=1e-12)
    assert fit.profile[0][0] == pytest.approx(85 / 180, abs=1e-6)  # the symmetric branch passes the pooled share


def test_play_at_a_pure_equilibrium_is_fitted_at_the_bound() -> None:
    """Everyone defecting: ℓ rises all along the branch, λ̂ is the trace's end (at_bound)."""
    fit = qre.fit_logit_qre(PD, [[0, 100], [0, 100]], interval="profile")
    assert fit.at_bound and fit.lam == pytest.approx(qre.LAM_MAX)
    assert fit.high == pytest.approx(qre.LAM_MAX)
    assert fit.log_likelihood == pytest.approx(0.0, abs=1e-9)


def test_trace_reaches_the_bound_on_hard_games() -> None:
    """Games whose branches once stalled at large λ (a mixed player against pure play, with
    log σ of shunned strategies near −10⁶) are traced to 10⁶."""
    hard = [
        [np.array([[6.0, 7.0, 6.0, 2.0], [5.0, 3.0, 4.0, 1.0], [1.0, 3.0, 2.0, 6.0]]), np.array([[2.0, 2.0, 4.0, 5.0], [9.0, 5.0, 3.0, 3.0], [4.0, 9.0, 3.0, 2.0]])],
        [np.array([[8.0, 4.0], [8.0, 6.0], [0.0, 4.0], [6.0, 5.0]]), np.array([[1.0, 7.0], [6.0, 0.0], [1.0, 6.0], [1.0, 0.0]])],
        [np.array([[4.0, 2.0, 5.0], [3.0, 8.0, 9.0], [4.0, 6.0, 1.0]]), np.array([[5.0, 1.0, 0.0], [2.0, 0.0, 8.0], [2.0, 9.0, 1.0]])],
    ]
    for payoffs in hard:
        branch = qre.principal_branch(payoffs)
        assert branch.lam_max == qre.LAM_MAX and len(branch.points) < 2000
        F, _ = branch.system.residual(branch.points[-1], jacobian=False)
        assert np.max(np.abs(F)) < 1e-6


def test_bootstrap_interval() -> None:
    """The percentile bootstrap (counts resampled multinomially per player) holds λ̂, is close
    to the profile interval with this much data, and is fixed by its seed."""
    counts = [[164, 280], [164, 280]]
    boot = qre.fit_logit_qre(PD, counts, reps=200, seed=1)
    prof = qre.fit_logit_qre(PD, counts, interval="profile")
    assert boot.interval == "bootstrap" and boot.low < boot.lam < boot.high
    assert boot.low == pytest.approx(prof.low, rel=0.15) and boot.high == pytest.approx(prof.high, rel=0.15)
    again = qre.fit_logit_qre(PD, counts, reps=200, seed=1)
    assert (again.low, again.high) == (boot.low, boot.high)
    assert qre.fit_logit_qre(PD, counts, reps=200, seed=2).low != boot.low
    assert boot.params() == {"λ": (boot.lam, boot.low, boot.high)}
    rows = boot.rows("pd: logit QRE", "model-a")
    assert [r["measure"] for r in rows] == ["pd: logit QRE λ", "pd: logit QRE log-likelihood", "pd: logit QRE BIC"]
    assert (rows[0]["estimate"], rows[0]["low"], rows[0]["high"], rows[2]["estimate"], rows[2]["n"]) == (boot.lam, boot.low, boot.high, boot.bic, 888)


def test_lambda_recovered_from_simulated_players() -> None:
    """λ = 0.1 on the PD in points, 444 simulated decisions per seat drawn from the QRE, 200
    seeds: the profile-likelihood 95 % interval covers 0.1 in 92–99 % of them (a correct 95 %
    interval covers 190 of 200 on average with binomial SD √(200·.95·.05) ≈ 3.1 seeds, so 184
    is 2 SD below; 198 would be an interval far too wide), and the median estimate is within
    0.004 of 0.1 (the estimates' SD is about 0.011, the median's about 0.001), and at least 190
    of the 200 estimates lie within 0.025 of it (λ recovered in 95 % of the seeds). An estimator
    that counts the data twice (intervals √2 too narrow: about 83 % coverage) fails the first;
    one whose λ is off by 10 % fails the second."""
    branch = qre.principal_branch(PD)
    truth = branch.profile(branch.at(0.1))
    covered, estimates = 0, []
    for seed in range(200):
        counts = qre.simulate_counts(np.random.default_rng(seed), truth, 444)
        fit = qre.fit_logit_qre(PD, counts, interval="profile", branch=branch)
        covered += fit.low <= 0.1 <= fit.high
        estimates.append(fit.lam)
    assert 184 <= covered <= 198
    assert abs(float(np.median(estimates)) - 0.1) <= 0.004
    # recovered in at least 95 % of the seeds: within 0.025 (about 2.3 SD of one estimate) of 0.1
    assert sum(abs(lam - 0.1) <= 0.025 for lam in estimates) >= 190


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="payoff arrays"):
        qre.principal_branch([np.zeros((2, 2))])
    with pytest.raises(ValueError, match="one count per strategy"):
        qre.fit_logit_qre(PD, [[1, 2, 3], [1, 2]])
    with pytest.raises(ValueError, match="not all 0"):
        qre.fit_logit_qre(PD, [[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="interval"):
        qre.fit_logit_qre(PD, [[1, 2], [1, 2]], interval="wald")
