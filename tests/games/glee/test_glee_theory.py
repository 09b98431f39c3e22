"""Theory baselines: scripted strategies whose play theory predicts exactly (or in expectation)."""

from __future__ import annotations

import itertools
import math

import pytest

from agorabench.games.glee.bargaining import Bargaining
from agorabench.games.glee.persuasion import Persuasion
from agorabench.games.glee.strategies import bayes_q, recommends
from support.players import Says, play, strat


DELTAS = [0.8, 0.9, 0.95, 1.0]


def rubinstein(delta_a: float, delta_b: float) -> float:
    if delta_a == delta_b == 1.0:
        return 0.5  # limit of equal discount factors tending to 1
    return (1 - delta_b) / (1 - delta_a * delta_b)


@pytest.mark.parametrize("delta_a,delta_b", list(itertools.product(DELTAS, DELTAS)))
def test_spe_infinite_horizon_agrees_in_round_one_at_p_star(delta_a, delta_b):
    _, table, out, m = play(Bargaining, {"alice": strat(Bargaining, "spe"), "bob": strat(Bargaining, "spe")}, delta_a=delta_a, delta_b=delta_b, horizon="inf")
    assert out["agreed_round"] == 1 and len(table.turns) == 2
    assert out["alice_share"] == pytest.approx(rubinstein(delta_a, delta_b), abs=1e-9)
    assert m["efficiency"] == pytest.approx(1.0)


@pytest.mark.parametrize("delta,rounds", list(itertools.product([0.8, 0.9, 0.95], [1, 2, 3, 12])))
def test_spe_finite_horizon_equal_deltas_closed_form(delta, rounds):
    # with δA = δB = δ backward induction gives Alice 1 − δ + δ² − ... (T terms) = (1 − (−δ)^T)/(1 + δ)
    _, _, out, _ = play(Bargaining, {"alice": strat(Bargaining, "spe"), "bob": strat(Bargaining, "spe")}, delta_a=delta, delta_b=delta, horizon=rounds)
    assert out["agreed_round"] == 1
    assert out["alice_share"] == pytest.approx((1 - (-delta) ** rounds) / (1 + delta), abs=1e-9)


@pytest.mark.parametrize("delta_a,delta_b", [(0.8, 0.95), (0.95, 0.8), (1.0, 0.9)])
def test_spe_finite_horizon_unequal_deltas(delta_a, delta_b):
    expected = {1: 1.0, 2: 1 - delta_b, 3: 1 - delta_b * (1 - delta_a), 4: 1 - delta_b * (1 - delta_a * (1 - delta_b))}
    for rounds, share in expected.items():
        out = play(Bargaining, {"alice": strat(Bargaining, "spe"), "bob": strat(Bargaining, "spe")}, delta_a=delta_a, delta_b=delta_b, horizon=rounds)[2]
        assert out["agreed_round"] == 1 and out["alice_share"] == pytest.approx(share, abs=1e-9)
    # a long known horizon approaches the infinite-horizon share (geometrically, factor δA·δB)
    long = play(Bargaining, {"alice": strat(Bargaining, "spe"), "bob": strat(Bargaining, "spe")}, delta_a=delta_a, delta_b=delta_b, horizon=200)[2]
    assert long["alice_share"] == pytest.approx(rubinstein(delta_a, delta_b), abs=1e-3)


def test_spe_responder_threshold():
    # infinite horizon, δ = 0.9 each: Bob keeps p* = 1/1.9 as proposer, so accepts ≥ 0.9/1.9 of M
    threshold = 0.9 / 1.9 * 100
    low = play(Bargaining, {"alice": Says(f'{{"alice_gain": {100 - threshold + 0.01}, "bob_gain": {threshold - 0.01}}}'), "bob": strat(Bargaining, "spe")}, money=100, horizon="inf", infinite_rounds=1)[2]
    high = play(Bargaining, {"alice": Says(f'{{"alice_gain": {100 - threshold}, "bob_gain": {threshold}}}'), "bob": strat(Bargaining, "spe")}, money=100, horizon="inf", infinite_rounds=1)[2]
    assert not low["agreed"] and high["agreed"]


def test_spe_incomplete_information_assumes_a_delta():
    # without the other's δ, each assumes it equals its own: Alice (0.8) offers as if δB = 0.8
    out = play(Bargaining, {"alice": strat(Bargaining, "spe"), "bob": strat(Bargaining, "always-accept")}, delta_a=0.8, delta_b=0.95, complete_info=False)[2]
    assert out["alice_share"] == pytest.approx(rubinstein(0.8, 0.8))
    out = play(Bargaining, {"alice": strat(Bargaining, "spe", delta_other=0.95), "bob": strat(Bargaining, "always-accept")}, delta_a=0.8, delta_b=0.95, complete_info=False)[2]
    assert out["alice_share"] == pytest.approx(rubinstein(0.8, 0.95))


def test_bayes_q():
    assert bayes_q(0.5, 1.25) == pytest.approx(0.25)
    assert bayes_q(1 / 3, 2) == pytest.approx(0.5)
    assert bayes_q(0.8, 1.2) == pytest.approx(0.8) and bayes_q(0.8, 3.0) == 1.0


@pytest.mark.parametrize("p,v,messages", [(0.5, 1.25, False), (1 / 3, 2.0, False), (1 / 3, 1.2, True), (0.8, 3.0, False)])
def test_bayesian_persuasion_sender_and_buyer(p, v, messages):
    q = bayes_q(p, v)
    n_high = k_high = low = low_unsold = 0
    for seed in range(60):
        _, table, out, m = play(Persuasion, {"alice": strat(Persuasion, "bayes-sender"), "bob": strat(Persuasion, "bayes-buyer")}, seed=seed, p=p, v=v, messages=messages)
        for r in out["rounds"]:
            assert r["bought"] == recommends(r["message"])  # the buyer follows every recommendation
        if out["high_rounds"]:
            assert m["efficiency"] == 1.0
        n_high += out["high_rounds"]
        k_high += out["high_sold"]
        low += out["rounds_played"] - out["high_rounds"]
        low_unsold += out["low_unsold"]
    assert k_high == n_high
    fairness = low_unsold / low
    se = math.sqrt(max(q * (1 - q), 1e-12) / low)
    assert abs(fairness - (1 - q)) <= 4 * se + 1e-12
    # the realised share of high rounds is p within sampling error too
    total = n_high + low
    assert abs(n_high / total - p) <= 4 * math.sqrt(p * (1 - p) / total)


@pytest.mark.parametrize("buyer", ["bayes-buyer", "truthful"])
@pytest.mark.parametrize("messages,myopic", [(False, False), (True, True)])
def test_truthful_sender_gives_efficiency_and_fairness_one(buyer, messages, myopic):
    for seed in range(10):
        _, _, out, m = play(Persuasion, {"alice": strat(Persuasion, "truthful"), "bob": strat(Persuasion, buyer)}, seed=seed, p=0.5, v=1.25, messages=messages, myopic=myopic)
        assert 0 < out["high_rounds"] < 20
        assert m["efficiency"] == 1.0 and m["fairness"] == 1.0
        assert m["self_gain_alice"] == pytest.approx(out["high_rounds"] / 20)


def test_always_and_random_strategies():
    never = play(Persuasion, {"alice": strat(Persuasion, "always-reject"), "bob": strat(Persuasion, "bayes-buyer")}, seed=1)[3]
    assert never["efficiency"] == 0.0 and never["fairness"] == 1.0
    a = play(Bargaining, {"alice": strat(Bargaining, "random"), "bob": strat(Bargaining, "random")}, seed=9, horizon=12)[2]
    b = play(Bargaining, {"alice": strat(Bargaining, "random"), "bob": strat(Bargaining, "random")}, seed=9, horizon=12)[2]
    assert a == b
    for offer in a["offers"]:
        assert offer["alice_gain"] + offer["bob_gain"] == pytest.approx(10_000)
