"""The AgentElect side-by-side script (``scripts/side_by_side_govsimelect.py``): our scripted
elected run still records the rng state at each election, the harvest strategies reach the
seats, and the successor's welfare measure and agent cycling are reproduced as its code has them
(the successor itself is not needed here)."""

from __future__ import annotations

from support.helpers import load_script


def test_our_run_records_each_elections_rng_state_and_harvests():
    script = load_script("side_by_side_govsimelect")
    outcome, states = script.ours(2, 5, ["first"] * 4, ["sustainable", "greedy"])
    assert (
        len(states) == len(outcome["leadership"]["elections"]) == 1
    )  # the lake is emptied in month 1
    first = outcome["months"][0]
    assert first["requested"]["agent_0"] == 6 and first["requested"]["agent_1"] == 100
    assert outcome["collapsed"] and outcome["months_played"] == 1


def test_successor_welfare_caps_each_round_by_the_last_stock_times_regrowth():
    script = load_script("side_by_side_govsimelect")
    rows = [
        {"collected": {"a": 60, "b": 50}, "stock_after": 20, "regen": 2.0},
        {"collected": {"a": 30, "b": 30}, "stock_after": 0, "regen": 1.5},
    ]
    assert script.successor_welfare(rows) == 100.0 + 40.0


def test_selector_cycles_like_pettingzoos():
    sel = load_script("side_by_side_govsimelect")._Selector(["p0", "p1"])
    assert [sel.next(), sel.is_last(), sel.next(), sel.is_last(), sel.next()] == [
        "p0",
        False,
        "p1",
        True,
        "p0",
    ]
    assert sel.reset() == "p0"
