"""Issue 44 items 1 and 2: games declare their facts (``max_turns``, ``metric_ranges``), the table
and the conformance suite hold them to it, and the suite runs on a class (``check``), with a
warnings tier. The toy games (tests/support/toy_games.py) are never registered, except the
runaway one for one real run."""

from __future__ import annotations

import asyncio
import time

import pytest

from agorabench import families
from agorabench.conformance import check, run
from agorabench.core.table import Table, TurnLimit
from support.toy_games import GOOD, Call, Forever, Overshoot, Quoted, Runaway, Spinning, Toy, plant_family, question


RULES = ["roles", "strategies", "instructions", "prompts", "random", "deterministic", "outcome", "actions"]


def test_conformance_check_runs_on_an_unregistered_class():
    assert "toy.coin" not in families.game_names()
    result = check(Toy, {"flips": 3}, GOOD)
    assert result.failed == [] and result
    assert any("report: not run" in w for w in result.warnings), result.warnings


def test_conformance_a_game_that_never_ends_fails_in_one_line_in_seconds():
    started = time.perf_counter()
    result = check(Forever, {"flips": 2}, GOOD, checks=RULES, time_limit=1.0)
    assert time.perf_counter() - started < 15
    assert len(result.failed) == 1, result.failed
    check_name, why = result.failed[0]
    assert "does not end" in why and "\n" not in why
    assert any("max_turns is not declared" in w for w in result.warnings)
    result = check(Runaway, {"flips": 2}, GOOD, checks=RULES)
    assert len(result.failed) == 1 and "more than 2 turns" in result.failed[0][1], result.failed


def test_conformance_a_metric_outside_its_declared_range_fails_naming_it():
    result = check(Overshoot, {"flips": 2}, GOOD, checks=["outcome", "random"])
    assert [c for c, _ in result.failed] == ["outcome", "random"], result.failed
    assert all("metric 'score' = 2.0 is outside its declared range [0.0, 1.0]" in why for _, why in result.failed)


def test_conformance_warnings_tier_names_a_quoted_number_placeholder_and_missing_instructions():
    result = check(Quoted, {"flips": 2}, GOOD, checks=RULES)
    assert result.failed == [], result.failed
    assert any("Count: the number 'count' is written as a quoted string" in w and "bare_numbers = True" in w for w in result.warnings), result.warnings
    assert any("the count question passes no instructions=" in w for w in result.warnings), result.warnings
    assert not any("call question passes no instructions" in w for w in result.warnings)


def test_the_table_ends_a_play_past_max_turns_and_ask_each_asks_all_or_none():
    class Say:
        async def act(self, request):
            from agorabench.core.table import Reply

            return Reply(text='{"call": "heads"}')

    async def go() -> Table:
        table = Table({"a": Say(), "b": Say()}, seed=1, max_turns=4)
        await table.ask("a", question(1), Call)
        await table.ask_each({"a": (question(2), Call, None), "b": (question(2), Call, None)})
        with pytest.raises(TurnLimit, match="more than 4 turns"):
            await table.ask_each({"a": (question(3), Call, None), "b": (question(3), Call, None)})
        await table.ask("b", question(3), Call)
        with pytest.raises(TurnLimit):
            await table.ask("a", question(4), Call)
        return table

    assert len(asyncio.run(go()).turns) == 4


@pytest.fixture
def runaway_registered(monkeypatch):
    plant_family(monkeypatch, "toy", games={"toy.runaway": "support.toy_games:Runaway"}, strategies={"toy.runaway": "support.toy_games:GOOD"}, examples={"toy.runaway": {"flips": 2}})


def test_a_game_past_its_max_turns_is_stored_failed_with_the_reason_and_its_turns(runaway_registered, tmp_path):
    from agorabench.core.runner import run_study
    from agorabench.core.study import load_study
    from agorabench.store.store import Store

    path = tmp_path / "study.toml"
    path.write_text('name = "runaway"\ngame = "toy.runaway"\nmatchups = "seats"\nrepeats = 1\nseats = [{ caller = "heads" }]\n\n[fixed]\nflips = 2\n\n[[models]]\nname = "heads"\nspec = "strategy/heads"\n', encoding="utf-8")
    stats, _ = run_study(load_study(path), tmp_path / "r.db", progress=False)
    assert (stats.done, stats.errors) == (0, 1)
    store = Store(str(tmp_path / "r.db"))
    try:
        (game,) = list(store.game_summaries("runaway"))
    finally:
        store.dispose()
    assert game["status"] == "failed" and "more than 2 turns" in game["error"] and "max_turns" in game["error"]
    assert game["n_turns"] == 2  # the turns played before it are kept
    assert run(["toy.runaway"], ["strategies"])[0][2].startswith("the game does not end: seed 1: the game asked for more than 2 turns")


def test_declared_ranges_join_the_configurations_of_a_studys_games():
    """A report's bounds: each metric's lowest low and highest high over the games'
    configurations (a missing field is its default, another game's rows are left out)."""
    import pandas as pd

    from agorabench.analysis.stats import declared_ranges

    trust = families.load_game("trust")
    games = pd.DataFrame({"game": ["trust", "trust", "dictator"], "endowment": [10, 10, 5], "multiplier": [3, 2, 9], "trustee_endowment": [10, 0, 0]})
    got = declared_ranges(trust, games)
    assert got["investor_payoff"] == (0.0, 3.0)  # the multiplier 9 row is another game's
    assert got["efficiency"] == (pytest.approx(10 / 20), 1.0)  # (10 + 0) / (2·10 + 0) and (10 + 10) / (30 + 10)
    assert declared_ranges(trust, games.iloc[:0]) == trust.metric_ranges(trust.Config())


def test_conformance_a_game_that_spins_without_awaiting_fails_in_seconds_too():
    started = time.perf_counter()
    result = check(Spinning, {"flips": 2}, GOOD, checks=RULES, time_limit=0.5)
    assert time.perf_counter() - started < 15
    assert len(result.failed) == 1 and "did not end within 0.5 s" in result.failed[0][1], result.failed
