"""Sub-skill tests (GovSim's subskills/): the rules against the original's formulas on its own
instances, the scripted players that know the arithmetic and that always answer 0, the prompts
(scenario wording as data, our own words, one persona), the instance draws and bad input."""

from __future__ import annotations

import asyncio
import itertools
import math

import pytest
from pydantic import ValidationError

from agorabench import families
from agorabench.core.game import Prompts
from agorabench.core.table import Reply, Table, TurnRequest
from agorabench.games.subskills.strategies import Knowing, knows, STRATEGIES, UniformRandom, Zero
from agorabench.games.subskills.subskills import (
    limit,
    N_AGENTS,
    next_stock,
    Number,
    passes,
    resources,
    right_answer,
    Subskills,
    SubskillsConfig,
    TESTS,
)

FORMS, DRAWS = ("math", "simulation"), ("fixed", "random")
#: Every scenario and language the resource data ships (each must have our questions).
SHIPPED = sorted(resources())


class Says:
    """A player that always answers the same text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.seen: list[TurnRequest] = []

    async def act(self, request: TurnRequest) -> Reply:
        self.seen.append(request)
        return Reply(text=self.text)


def play(player, seed: int = 1, nature_seed: int | None = None, **config):
    game = Subskills(SubskillsConfig(**config), Prompts(Subskills.prompt_dir))
    table = Table({"agent": player}, seed=seed, nature_seed=nature_seed)
    outcome = asyncio.run(game.play(table))
    return outcome, game.metrics(outcome), table


# --- the original's formulas (subskills/*/run.py, pass_condition), restated for the check ---------


def original_consequence(stock: int, each: int) -> int:
    """``max(0, min(100, (S − 5X) × 2))``."""
    return max(0, min(100, (stock - each * 5) * 2))


def original_limit(stock: int) -> int:
    """``(S // 2) // 5``."""
    return (stock // 2) // 5


def original_action_passes(answer: int, stock: int) -> bool:
    """``answer == bound`` when the bound is 0, else ``0 < answer ≤ bound``."""
    bound = original_limit(stock)
    return answer == bound if bound == 0 else 0 < answer <= bound


#: Cases computed from the original's formulas: (S, X) -> S' and S -> bound.
CONSEQUENCE_CASES = [(100, 10, 100), (100, 0, 100), (100, 20, 0), (40, 8, 0), (55, 3, 80), (37, 7, 4), (10, 0, 20), (60, 5, 70), (73, 14, 6), (91, 9, 92)]
LIMIT_CASES = [(100, 10), (10, 1), (19, 1), (99, 9), (55, 5), (11, 1), (20, 2), (39, 3), (50, 5), (64, 6)]


@pytest.mark.parametrize("stock,each,expected", CONSEQUENCE_CASES)
def test_consequence_equals_the_original_on_its_cases(stock, each, expected):
    fishery = resources()[("fishery", "en")]
    assert original_consequence(stock, each) == expected
    assert right_answer("consequence", stock, each, fishery) == expected


@pytest.mark.parametrize("stock,expected", LIMIT_CASES)
def test_shrinking_limit_equals_the_original_on_its_cases(stock, expected):
    fishery = resources()[("fishery", "en")]
    assert original_limit(stock) == expected
    for test in ("shrinking_limit", "shrinking_limit_assumption", "sustainable_action", "sustainable_action_universalization"):
        assert right_answer(test, stock, None, fishery) == expected


@pytest.mark.parametrize("scenario", ["fishery", "pasture", "pollution"])
def test_rules_equal_the_original_on_every_instance_it_can_draw(scenario):
    """The original draws S from 10..100 and X from 0..S // 5: every such instance, every
    answer from 0 to S, gives our rules the original's verdict (pasture and pollution share the
    fishery's dynamics in the original)."""
    r = resources()[(scenario, "en")]
    for stock in range(10, 101):
        bound = right_answer("shrinking_limit", stock, None, r)
        assert bound == original_limit(stock)
        for each in range(0, stock // 5 + 1):
            assert right_answer("consequence", stock, each, r) == original_consequence(stock, each)
        for answer in range(0, stock + 1):
            for test in ("sustainable_action", "sustainable_action_universalization"):
                assert passes(test, answer, bound, stock, r.inverse) is original_action_passes(answer, stock)
            assert passes("shrinking_limit", answer, bound, stock, False) is (answer == original_limit(stock))


def test_a_bound_of_zero_passes_only_an_answer_of_zero():
    """The original's special case (never drawn from 10..100, where the bound is at least 1)."""
    assert limit(9, n=5, inverse=False, growth_kind="multiply", growth_value=2) == 0
    assert passes("sustainable_action", 0, 0, 9, False) and not passes("sustainable_action", 1, 0, 9, False)
    assert not passes("sustainable_action", 0, 3, 30, False) and passes("sustainable_action", 3, 3, 30, False) and not passes("sustainable_action", 4, 3, 30, False)
    assert not passes("consequence", None, 0, 30, False)  # no answer never passes


def test_the_inverse_scenario_asks_for_enough_taken_out():
    """Trash: the pile grows by 50 up to 100; the least each of 5 must take out so it does not
    grow is ceil(min(50, S) / 5); a sustainable removal lies between that and S."""
    trash = resources()[("trash", "en")]
    assert trash.inverse and trash.growth_kind == "add" and trash.growth_value == 50
    assert right_answer("consequence", 100, 10, trash) == 100  # 100 − 50 + 50
    assert right_answer("consequence", 40, 8, trash) == 50  # emptied, then 50 new units
    assert right_answer("consequence", 90, 2, trash) == 100  # 80 + 50 capped at 100
    assert [right_answer("shrinking_limit", s, None, trash) for s in (100, 60, 50, 30, 12)] == [10, 10, 10, 6, 3]
    assert passes("sustainable_action", 10, 10, 100, True) and passes("sustainable_action", 100, 10, 100, True)
    assert not passes("sustainable_action", 9, 10, 100, True) and not passes("sustainable_action", 101, 10, 100, True)
    assert next_stock(30, 50, capacity=100, growth_kind="add", growth_value=50) == 50


# --- scripted players -------------------------------------------------------------------------


def test_the_registry_finds_the_family_its_strategies_and_every_shipped_scenario():
    assert "subskills" in families.game_names()
    assert set(families.strategies("subskills")) == set(STRATEGIES) == {"knowing", "zero", "random"}
    assert {s for s, _ in SHIPPED} >= {"fishery", "pasture", "pollution", "trash"}
    assert {lang for _, lang in SHIPPED} >= {"en", "ja"}


@pytest.mark.parametrize("scenario,language", SHIPPED)
def test_the_knowing_player_passes_every_test_in_every_form_and_draw(scenario, language):
    for test, form, draw in itertools.product(TESTS, FORMS, DRAWS):
        for seed in range(12 if draw == "random" else 1):
            outcome, metrics, table = play(Knowing(), nature_seed=seed, test=test, form=form, draw=draw, scenario=scenario, language=language)
            assert outcome["valid"] and metrics["passed"] == 1.0, (test, form, draw, seed, outcome)


def test_the_knowing_player_computes_its_answers_apart_from_the_rules():
    """``knows`` restates the arithmetic from the observation; it agrees with the rules on
    every instance of every shipped dynamics (so the 100% above is not the rules scoring
    themselves)."""
    for (scenario, language) in SHIPPED:
        r = resources()[(scenario, language)]
        for stock in range(1, 101):
            for test in TESTS:
                amount = stock // 7 if test == "consequence" else None
                obs = {"test": test, "stock": stock, "amount": amount, "n": N_AGENTS, "capacity": r.capacity, "growth_kind": r.growth_kind, "growth_value": r.growth_value, "inverse": r.inverse}
                assert knows(obs) == right_answer(test, stock, amount, r)


@pytest.mark.parametrize("scenario,language", SHIPPED)
def test_the_zero_player_fails_where_the_rules_say(scenario, language):
    """Answering 0 passes exactly where 0 is the right answer (a consequence that empties the
    stock) or the bound is 0; on the original's instances (S ≥ 10) it never passes a
    sustainable-action test, and at S = 100 it passes nothing."""
    r = resources()[(scenario, language)]
    zero_right = 0
    for test, form in itertools.product(TESTS, FORMS):
        outcome, metrics, _ = play(Zero(), test=test, form=form, draw="fixed", scenario=scenario, language=language)
        assert metrics["passed"] == 0.0, (test, form)
        for seed in range(40):
            outcome, metrics, _ = play(Zero(), nature_seed=seed, test=test, form=form, draw="random", scenario=scenario, language=language)
            assert metrics["passed"] == float(outcome["right"] == 0), (test, seed, outcome)
            if test.startswith("sustainable"):
                assert metrics["passed"] == 0.0
            zero_right += outcome["right"] == 0
    if not r.inverse:
        assert zero_right > 0  # some drawn consequence empties the stock: the check above bites


def test_the_random_player_answers_within_the_stock():
    for seed in range(20):
        outcome, _, table = play(UniformRandom(), seed=seed, nature_seed=seed, test="consequence", draw="random")
        assert 0 <= outcome["answer"] <= outcome["stock"]


# --- instances --------------------------------------------------------------------------------


def test_draws_follow_the_original_ranges_and_come_from_nature():
    stocks, amounts, names = set(), set(), set()
    fishery = resources()[("fishery", "en")]
    for seed in range(400):
        outcome, _, _ = play(Zero(), nature_seed=seed, test="consequence", draw="random")
        assert 10 <= outcome["stock"] <= 100 and 0 <= outcome["amount"] <= outcome["stock"] // 5
        stocks.add(outcome["stock"]), amounts.add(outcome["amount"]), names.add(outcome["persona"])
    assert min(stocks) <= 12 and max(stocks) >= 98 and 0 in amounts and names == set(fishery.names)
    fixed, _, _ = play(Zero(), nature_seed=3, test="consequence", draw="fixed")
    assert (fixed["stock"], fixed["amount"], fixed["persona"]) == (100, 10, fishery.names[0])
    # the same repeat (nature seed) gives every model the same instance, whatever its own seed
    a, _, _ = play(Zero(), seed=1, nature_seed=77, test="shrinking_limit", draw="random")
    b, _, _ = play(Knowing(), seed=2, nature_seed=77, test="shrinking_limit", draw="random")
    assert (a["stock"], a["persona"]) == (b["stock"], b["persona"])


# --- prompts ----------------------------------------------------------------------------------


#: Phrases of the original's prompts that our own wording must not carry.
ORIGINAL_PHRASES = ["Let's think step-by-step", "Key memories of", "Put the final answer after", "without shrinking the lake population", "With a fishing range set between", "Location: lake", "Before everyone fishes, there are"]


@pytest.mark.parametrize("scenario,language", SHIPPED)
def test_prompts_carry_the_instance_and_the_scenario_wording(scenario, language):
    r = resources()[(scenario, language)]
    for test, form in itertools.product(TESTS, FORMS):
        player = Says("Answer: 3")
        outcome, _, table = play(player, nature_seed=5, test=test, form=form, draw="random", scenario=scenario, language=language)
        (message,) = table.transcripts["agent"][:1]
        text = message["content"]
        assert message["role"] == "user"  # one user message, as the original
        assert str(outcome["stock"]) in text and "Answer: N" in text
        for phrase in ORIGINAL_PHRASES:
            assert phrase not in text
        share = outcome["right"]
        universal = r.text["universalization"].split("{{")[0].strip()
        assert (universal in text) is (test == "sustainable_action_universalization")
        if test == "sustainable_action_universalization":
            assert str(share) in text
        if test == "consequence":
            assert str(outcome["amount"]) in text
        persona = outcome["persona"]
        others = [n for n in r.names if n != persona]
        if form == "simulation":
            assert persona in text and all(o in text for o in others) and "2024-01-01" in text
        else:
            assert not any(n in text for n in r.names)  # the math form has no persona
        obs = player.seen[0].prompt.observation
        assert obs["stock"] == outcome["stock"] and obs["test"] == test


def test_pollution_asks_for_the_clean_share():
    _, _, table = play(Says("Answer: 1"), test="consequence", form="math", draw="fixed", scenario="pollution")
    assert "percentage of the river's water will be clean" in table.transcripts["agent"][0]["content"]


# --- answers and bad input --------------------------------------------------------------------


def test_an_answer_that_stays_invalid_fails_and_is_recorded_invalid():
    outcome, metrics, table = play(Says("I would rather not say."), test="shrinking_limit")
    assert outcome["answer"] is None and not outcome["valid"] and not outcome["passed"]
    assert metrics["passed"] == 0.0 and math.isnan(metrics["answer"])
    assert table.turns and not table.turns[-1].valid and table.turns[-1].error


def test_a_fractional_answer_is_rounded_down_and_a_negative_one_rejected():
    assert Number.parse("so about 10.8\nAnswer: 10.8").number == 10
    outcome, _, _ = play(Says("Answer: 10.5"), test="shrinking_limit", draw="fixed")
    assert outcome["answer"] == 10 and outcome["passed"]
    outcome, _, _ = play(Says("Answer: -3"), test="shrinking_limit", draw="fixed")
    assert not outcome["valid"] and not outcome["passed"]


@pytest.mark.parametrize(
    "config,message",
    [
        ({"scenario": "ocean"}, "no sub-skill questions for scenario 'ocean'"),
        ({"language": "fr"}, "in language 'fr'"),
        ({"test": "guessing"}, "test"),
        ({"form": "poem"}, "form"),
        ({"draw": "often"}, "draw"),
    ],
)
def test_bad_configuration_is_a_clear_message(config, message):
    with pytest.raises(ValidationError, match=message):
        SubskillsConfig(**config)


def test_describe_tells_a_person_the_right_answer():
    outcome, _, _ = play(Knowing(), test="consequence", draw="fixed")
    told = Subskills(SubskillsConfig(), Prompts(Subskills.prompt_dir)).describe(outcome, "agent")
    assert any("100" in line for line in told) and told[-1] == "Your answer was right."
