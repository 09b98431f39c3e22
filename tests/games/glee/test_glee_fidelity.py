"""GLEE defaults as in the original project: negotiation's walk-away option, persuasion's
low-quality value c, whether the buyer knows p, and buyer messages."""

from __future__ import annotations

import pytest

from agorabench.games.glee.negotiation import Negotiation
from agorabench.games.glee.persuasion import Persuasion
from agorabench.games.glee.strategies import bayes_q
from support.players import Says, play, strat


def test_negotiation_offers_the_walk_away_by_default_and_the_paper_text_as_a_variant():
    assert Negotiation.Config().outside_option is True
    _, table, out, m = play(Negotiation, {"alice": Says('{"price": 12000}'), "bob": Says('{"decision": "quit"}')}, f_a=0.8, f_b=1.2, horizon=10)
    assert out["ended_by"] == "bob_quit" and out["rounds_played"] == 1 and table.turns[1].valid
    assert m == {"efficiency": 0.0, "fairness": 1.0, "self_gain_alice": 0.0, "self_gain_bob": 0.0}
    bob_system = table.transcripts["bob"][0]["content"]
    assert "another seller" in bob_system and "$12,000" in bob_system  # the third party's price: Bob's own value
    assert '"quit"' in table.transcripts["bob"][1]["content"]
    alice_system = table.transcripts["alice"][0]["content"]
    assert "another buyer" in alice_system and "$8,000" in alice_system
    _, table, out, _ = play(Negotiation, {"alice": Says('{"price": 12000}'), "bob": Says('{"decision": "quit"}')}, horizon=1, outside_option=False)
    assert "another" not in table.transcripts["bob"][0]["content"] and '"quit"' not in table.transcripts["bob"][1]["content"]
    assert out["ended_by"] == "horizon" and not table.turns[1].valid


def test_persuasion_defaults_are_the_originals():
    c = Persuasion.Config()
    assert (c.c, c.buyer_knows_p, c.buyer_messages) == (0.0, True, False)


def test_low_quality_value_c_enters_utility_prompts_and_the_bayesian_policy():
    game = Persuasion(Persuasion.Config(v=2.0, c=0.5), None)
    m = game.metrics({"rounds_played": 10, "high_rounds": 4, "high_sold": 3, "low_unsold": 4, "low_sold": 2})
    assert m["self_gain_bob"] == pytest.approx((3 * 1.0 + 2 * (0.5 - 1)) / 10)
    # indifference of a recommended buyer: mu*v + (1-mu)*c = 1 with mu = p/(p+(1-p)q)
    p, v, cc = 0.3, 1.5, 0.5
    q = bayes_q(p, v, cc)
    mu = p / (p + (1 - p) * q)
    assert mu * v + (1 - mu) * cc == pytest.approx(1.0) and q == pytest.approx(0.3 / 0.7 * 0.5 / 0.5)
    assert bayes_q(0.3, 1.5) == pytest.approx(0.3 / 0.7 * 0.5)  # the paper's q at c = 0
    _, table, _, _ = play(Persuasion, {"alice": strat(Persuasion, "truthful"), "bob": strat(Persuasion, "truthful")}, c=0.25, money=100, horizon=1)
    assert "worth $25" in table.transcripts["bob"][0]["content"] and "worth $25" in table.transcripts["alice"][0]["content"]
    _, table, _, _ = play(Persuasion, {"alice": strat(Persuasion, "truthful"), "bob": strat(Persuasion, "truthful")}, money=100, horizon=1)
    assert "worth nothing" in table.transcripts["bob"][0]["content"]


def test_a_bayesian_buyer_and_sender_with_c_sell_every_recommended_product():
    players = {"alice": strat(Persuasion, "bayes-sender"), "bob": strat(Persuasion, "bayes-buyer")}
    _, _, out, _ = play(Persuasion, players, seed=2, p=0.3, v=1.5, c=0.5, horizon=40)
    recommended = [r for r in out["rounds"] if r["message"] == "yes"]
    assert recommended and all(r["bought"] for r in recommended)
    assert all(r["message"] == "yes" for r in out["rounds"] if r["quality"] == "high")


def test_buyer_not_told_p():
    players = {"alice": strat(Persuasion, "bayes-sender"), "bob": strat(Persuasion, "bayes-buyer")}
    _, table, _, _ = play(Persuasion, players, p=0.8, buyer_knows_p=False, horizon=2)
    bob, alice = table.transcripts["bob"][0]["content"], table.transcripts["alice"][0]["content"]
    assert "80%" not in bob and "not told how likely" in bob
    assert "80%" in alice and "is not told this probability" in alice
    assert table.turns[1].messages and all(t.valid for t in table.turns)
    _, table, _, _ = play(Persuasion, players, p=0.8, horizon=1)
    assert "80%" in table.transcripts["bob"][0]["content"] and "knows this probability" in table.transcripts["alice"][0]["content"]


def test_buyer_messages_reach_the_seller_after_the_round():
    _, table, out, _ = play(Persuasion, {"alice": Says('{"decision": "yes"}'), "bob": Says('{"decision": "yes", "message": "Thanks, Alice"}')}, buyer_messages=True, horizon=2)
    assert all(t.valid for t in table.turns) and out["sold"] == 2
    assert out["rounds"][0]["buyer_message"] == "Thanks, Alice"
    assert "The buyer's message:\n> Thanks, Alice" in table.transcripts["alice"][3]["content"]  # with round 2's question
    assert '"message"' in table.transcripts["bob"][1]["content"]
    # without buyer messages the seller hears nothing from the buyer
    _, table, out, _ = play(Persuasion, {"alice": Says('{"decision": "yes"}'), "bob": Says('{"decision": "yes", "message": "Thanks, Alice"}')}, horizon=2)
    assert "Thanks" not in " ".join(m["content"] for m in table.transcripts["alice"]) and "buyer_message" not in out["rounds"][0]
    # scripted buyers answer with a message when asked for one
    _, table, out, _ = play(Persuasion, {"alice": strat(Persuasion, "truthful"), "bob": strat(Persuasion, "random")}, buyer_messages=True, horizon=3)
    assert all(t.valid for t in table.turns) and all(r["buyer_message"] for r in out["rounds"])


def test_buyer_is_told_whether_the_seller_knows_his_values():
    # The original tells the buyer whether the seller knows what each product is worth to him
    # (is_seller_know_cv), and tells the seller the values only under complete information.
    players = {"alice": strat(Persuasion, "truthful"), "bob": strat(Persuasion, "truthful")}
    _, table, _, _ = play(Persuasion, players, money=100, v=2.0, horizon=1)
    bob, alice = table.transcripts["bob"][0]["content"], table.transcripts["alice"][0]["content"]
    assert "Alice knows what each product is worth to you" in bob and "worth $200 to the buyer" in alice
    _, table, _, _ = play(Persuasion, players, money=100, v=2.0, horizon=1, complete_info=False)
    bob, alice = table.transcripts["bob"][0]["content"], table.transcripts["alice"][0]["content"]
    assert "Alice does not know what each product is worth to you" in bob
    assert "$200" not in alice and "not told how much" in alice


def test_incomplete_information_is_said_as_the_original_says_it():
    # The original tells each side under incomplete information that it does not know the other's
    # value (negotiation) or discount (bargaining), and under complete information what it is.
    from agorabench.games.glee.bargaining import Bargaining

    players = {"alice": Says('{"price": 12000}'), "bob": Says('{"decision": "accept"}')}
    _, table, _, _ = play(Negotiation, players, f_a=0.8, f_b=1.2, horizon=1, complete_info=False)
    alice, bob = table.transcripts["alice"][0]["content"], table.transcripts["bob"][0]["content"]
    assert "not told what it is worth to Bob" in alice and "$12,000" not in alice
    assert "not told what it is worth to Alice" in bob and "$8,000" not in bob
    _, table, _, _ = play(Negotiation, players, f_a=0.8, f_b=1.2, horizon=1)
    assert "worth $12,000 to Bob" in table.transcripts["alice"][0]["content"]
    assert "not told" not in table.transcripts["alice"][0]["content"]
    players = {"alice": strat(Bargaining, "random"), "bob": strat(Bargaining, "random")}
    _, table, _, _ = play(Bargaining, players, horizon=1, complete_info=False)
    alice = table.transcripts["alice"][0]["content"]
    assert "not told how fast it loses value for Bob" in alice
    _, table, _, _ = play(Bargaining, players, horizon=1)
    assert "not told" not in table.transcripts["alice"][0]["content"]
