"""GLEE rules, metrics and bad-answer handling, with scripted players whose outcomes are known."""

from __future__ import annotations

import math

import pytest

from agorabench.core.game import Prompts
from agorabench.games.glee.bargaining import Bargaining, offer_type
from agorabench.games.glee.negotiation import Negotiation
from agorabench.games.glee.persuasion import Persuasion
from support.players import Says, play, strat


# bargaining -----------------------------------------------------------------


def test_bargaining_metrics_follow_the_paper_formulas():
    game = Bargaining(Bargaining.Config(delta_a=0.8, delta_b=0.9), Prompts(Bargaining.prompt_dir))
    m = game.metrics({"agreed": True, "agreed_round": 3, "alice_share": 0.7})
    assert m["self_gain_alice"] == pytest.approx(0.8**2 * 0.7)
    assert m["self_gain_bob"] == pytest.approx(0.9**2 * 0.3)
    assert m["efficiency"] == pytest.approx(0.64 * 0.7 + 0.81 * 0.3)
    assert m["fairness"] == pytest.approx(1 - 4 * 0.2**2)
    none = game.metrics({"agreed": False, "agreed_round": None, "alice_share": None})
    assert none == {"efficiency": 0.0, "fairness": 1.0, "self_gain_alice": 0.0, "self_gain_bob": 0.0}


def test_bargaining_always_reject_runs_to_the_stated_horizon_and_hidden_horizon():
    _, table, out, m = play(Bargaining, {"alice": strat(Bargaining, "always-reject"), "bob": strat(Bargaining, "always-reject")}, horizon=12)
    assert not out["agreed"] and out["rounds_played"] == 12 and len(table.turns) == 24
    assert m["efficiency"] == 0 and m["fairness"] == 1
    _, table, out, _ = play(Bargaining, {"alice": strat(Bargaining, "always-reject"), "bob": strat(Bargaining, "always-reject")}, horizon="inf", infinite_rounds=7)
    assert out["rounds_played"] == 7
    # an unknown horizon is never mentioned to the players
    system = table.transcripts["alice"][0]["content"]
    assert "at most" not in system and "7" not in system


def test_bargaining_accept_in_round_two_uses_bobs_offer_and_discounts():
    alice = Says('{"alice_gain": 9000, "bob_gain": 1000}', '{"decision": "accept"}')
    bob = Says('{"decision": "reject"}', '{"alice_gain": 4000, "bob_gain": 6000}')
    _, table, out, m = play(Bargaining, {"alice": alice, "bob": bob}, delta_a=0.9, delta_b=0.8, money=10_000, horizon=12)
    assert out["agreed_round"] == 2 and out["alice_share"] == pytest.approx(0.4)
    assert [t.phase for t in table.turns] == ["offer", "respond", "offer", "respond"]
    assert [t.role for t in table.turns] == ["alice", "bob", "bob", "alice"]
    assert m["efficiency"] == pytest.approx(0.9 * 0.4 + 0.8 * 0.6)
    # complete information: Alice is told how much Bob's money loses per round
    assert "20% less to Bob" in table.transcripts["alice"][0]["content"]


def test_bargaining_incomplete_information_hides_the_other_discount():
    _, table, _, _ = play(Bargaining, {"alice": strat(Bargaining, "always-accept"), "bob": strat(Bargaining, "always-accept")}, delta_a=0.9, delta_b=0.8, complete_info=False)
    assert "10% less to you" in table.transcripts["alice"][0]["content"]
    assert "20%" not in table.transcripts["alice"][0]["content"]


def test_bargaining_invalid_offers_are_reasked_then_forfeit_the_round():
    # sums to the wrong total, then negative, then garbage: all invalid -> Alice forfeits round 1
    alice = Says('{"alice_gain": 600, "bob_gain": 300}', '{"alice_gain": -5, "bob_gain": 1005}', "no idea", '{"decision": "accept"}')
    bob = Says('{"alice_gain": 500, "bob_gain": 500, "message": "half"}')
    _, table, out, _ = play(Bargaining, {"alice": alice, "bob": bob}, money=1000, horizon=4, messages=True)
    first = table.turns[0]
    assert not first.valid and first.retries == 2 and first.action is None
    assert "add up to $1,000" in table.transcripts["alice"][3]["content"]
    assert out["offers"][0] == {"round": 1, "proposer": "alice", "valid": False, "decision": None, "accepted": False}
    # the game moved on: Bob proposed in round 2 and Alice accepted
    assert out["agreed_round"] == 2 and out["alice_share"] == pytest.approx(0.5)
    assert out["offers"][1]["message"] == "half"


def test_bargaining_invalid_decision_falls_back_to_reject():
    alice = Says('{"alice_gain": 50, "bob_gain": 50}')
    bob = Says("maybe?")
    _, table, out, _ = play(Bargaining, {"alice": alice, "bob": bob}, money=100, horizon=1, max_retries=1)
    assert not out["agreed"]
    assert table.turns[1].valid is False and table.turns[1].retries == 1


def test_offer_type_validates_the_total():
    kind = offer_type(100.0, False)
    assert kind.parse('```json\n{"alice_gain": "60", "bob_gain": 40}\n```').alice_gain == 60
    with pytest.raises(Exception):
        kind.parse('{"alice_gain": 60, "bob_gain": 50}')
    assert "message" not in kind.model_fields and "message" in offer_type(100.0, True).model_fields


# negotiation ----------------------------------------------------------------


@pytest.mark.parametrize(
    "f_a,f_b,price,eff",
    [(0.8, 1.2, 10_000, 1.0), (0.8, 1.2, 13_000, 0.0), (0.8, 1.2, None, 0.0), (1.5, 0.8, None, 1.0), (1.0, 1.0, None, 1.0), (1.2, 1.0, 11_000, 0.0)],
)
def test_negotiation_efficiency_cases(f_a, f_b, price, eff):
    game = Negotiation(Negotiation.Config(f_a=f_a, f_b=f_b, money=10_000), Prompts(Negotiation.prompt_dir))
    m = game.metrics({"price": price})
    assert m["efficiency"] == eff
    if price is None:
        assert m["fairness"] == 1 and m["self_gain_alice"] == 0 == m["self_gain_bob"]
    else:
        fair = (f_a + f_b) * 10_000 / 2
        assert m["fairness"] == pytest.approx(1 - 4 * ((price - fair) / 10_000) ** 2)
        assert m["self_gain_alice"] == pytest.approx((price - f_a * 10_000) / 10_000)
        assert m["self_gain_bob"] == pytest.approx((f_b * 10_000 - price) / 10_000)


def test_negotiation_truthful_players():
    # gains from trade: the seller's fixed price (her value) is accepted at once
    _, _, out, m = play(Negotiation, {"alice": strat(Negotiation, "truthful"), "bob": strat(Negotiation, "truthful")}, f_a=0.8, f_b=1.2, horizon=10)
    assert out["price"] == pytest.approx(8000) and out["agreed_round"] == 1
    assert m == pytest.approx({"efficiency": 1.0, "fairness": 1 - 4 * 0.2**2, "self_gain_alice": 0.0, "self_gain_bob": 0.4})
    # no gains from trade: nobody accepts, efficient no-trade
    _, table, out, m = play(Negotiation, {"alice": strat(Negotiation, "truthful"), "bob": strat(Negotiation, "truthful")}, f_a=1.5, f_b=0.8, horizon=10)
    assert out["price"] is None and out["rounds_played"] == 10 and len(table.turns) == 20
    assert m["efficiency"] == 1.0 and m["fairness"] == 1.0


def test_negotiation_outside_option_and_invalid_price():
    alice = Says('{"price": -3}', '{"price": "lots"}', '{"price": 9000}')
    bob = Says('{"decision": "quit"}')
    _, table, out, m = play(Negotiation, {"alice": alice, "bob": bob}, horizon=3, outside_option=True, max_retries=1)
    # round 1: invalid twice -> forfeited; round 2: Bob must propose but answers 'quit' (invalid for a price)
    assert out["offers"][0]["valid"] is False
    assert out["price"] is None
    quit_game = play(Negotiation, {"alice": Says('{"price": 9000}'), "bob": Says('{"decision": "quit"}')}, horizon=3, outside_option=True)[2]
    assert quit_game["ended_by"] == "bob_quit" and quit_game["rounds_played"] == 1
    # in the paper-text variant 'quit' is not a valid decision: it falls back to reject
    no_variant = play(Negotiation, {"alice": Says('{"price": 9000}'), "bob": Says('{"decision": "quit"}')}, horizon=1, outside_option=False)
    assert no_variant[2]["ended_by"] == "horizon" and no_variant[1].turns[1].valid is False


# persuasion -----------------------------------------------------------------


def test_persuasion_metrics_by_hand():
    game = Persuasion(Persuasion.Config(v=2.0), Prompts(Persuasion.prompt_dir))
    out = {"rounds_played": 10, "high_rounds": 4, "high_sold": 3, "low_unsold": 5, "low_sold": 1}
    m = game.metrics(out)
    assert m["efficiency"] == pytest.approx(3 / 4) and m["fairness"] == pytest.approx(5 / 6)
    assert m["self_gain_alice"] == pytest.approx(4 / 10) and m["self_gain_bob"] == pytest.approx((3 * 1.0 - 1) / 10)
    assert math.isnan(game.metrics({**out, "high_rounds": 0, "high_sold": 0})["efficiency"])


def test_persuasion_quality_comes_from_the_seeded_rng_and_always_accept():
    players = lambda: {"alice": strat(Persuasion, "always-accept"), "bob": strat(Persuasion, "always-accept")}  # noqa: E731
    a = play(Persuasion, players(), seed=5, p=0.8)[2]
    b = play(Persuasion, players(), seed=5, p=0.8)[2]
    c = play(Persuasion, players(), seed=6, p=0.8)[2]
    assert [r["quality"] for r in a["rounds"]] == [r["quality"] for r in b["rounds"]]
    assert [r["quality"] for r in a["rounds"]] != [r["quality"] for r in c["rounds"]]
    assert a["sold"] == 20 and a["low_unsold"] == 0 and a["high_sold"] == a["high_rounds"]


def test_persuasion_myopic_buyer_sees_only_statistics():
    game, table, out, _ = play(Persuasion, {"alice": strat(Persuasion, "always-accept"), "bob": strat(Persuasion, "always-accept")}, myopic=True, horizon=5)
    bob = table.transcripts["bob"]
    # a fresh buyer each round: system + one question + answer
    assert [m["role"] for m in bob] == ["system", "user", "assistant"]
    high = sum(r["quality"] == "high" for r in out["rounds"][:4])
    assert f"bought 4 products from Alice so far; {high} of the products sold" in bob[1]["content"]  # the original's counts
    assert "Round" not in bob[1]["content"] and "round" not in bob[0]["content"].replace("one round only", "").replace("In the round", "")
    _, paper, _, _ = play(Persuasion, {"alice": strat(Persuasion, "always-accept"), "bob": strat(Persuasion, "always-accept")}, myopic=True, horizon=5, myopic_stats="paper")
    first = paper.transcripts["bob"][0]["content"]
    assert "played 4 rounds" in first and "100%" in first and paper.transcripts["bob"][1]["content"].startswith("Round 5.")
    long = play(Persuasion, {"alice": strat(Persuasion, "always-accept"), "bob": strat(Persuasion, "always-accept")}, myopic=False, horizon=5)[1]
    assert "It was of" in long.transcripts["bob"][-1]["content"] and len(long.transcripts["bob"]) == 12


def test_persuasion_invalid_answers_fall_back():
    alice = Says("I think yes", '{"decision": "perhaps"}', "???")
    bob = Says('{"decision": "yes"}')
    _, table, out, _ = play(Persuasion, {"alice": alice, "bob": bob}, horizon=1)
    assert table.turns[0].valid is False and out["rounds"][0]["message"] == "no"
    assert out["rounds"][0]["signal_valid"] is False
    _, table, out, _ = play(Persuasion, {"alice": Says('{"message": "great"}'), "bob": Says("buy!!")}, horizon=2, messages=True, max_retries=0)
    assert all(not t.valid for t in table.turns if t.role == "bob") and out["sold"] == 0
    assert "Alice's message:\n> great" in table.transcripts["bob"][1]["content"]


def test_seller_not_told_v_without_complete_info():
    _, table, _, _ = play(Persuasion, {"alice": strat(Persuasion, "truthful"), "bob": strat(Persuasion, "truthful")}, complete_info=False, v=3, horizon=2)
    assert "$30,000" not in table.transcripts["alice"][0]["content"]
    assert "$30,000" in table.transcripts["bob"][0]["content"]


def test_configs_reject_bad_parameters():
    with pytest.raises(Exception):
        Bargaining.Config(delta_a=1.2)
    with pytest.raises(Exception):
        Negotiation.Config(horizon=0)
    with pytest.raises(Exception):
        Persuasion.Config(p=1.0)
    assert Bargaining.Config(horizon="infinite").horizon == "inf"
