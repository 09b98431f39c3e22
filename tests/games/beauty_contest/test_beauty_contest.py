"""Beauty contest: the target and winner rules (ties share the prize), simultaneous choices,
numbers with two decimals, the fallback, the theory of the game with scripted players
(equilibrium play, level-k choices and best replies, unravelling), the forms and words a person
reads, a CLI study run and its report end to end, and the conformance suite."""

from __future__ import annotations

import asyncio
import csv
import math
import re
from pathlib import Path

import pytest

import agorabench
from agorabench import families
from agorabench.cli import main
from agorabench.core.actions import Action, ParseError
from agorabench.core.agents import Strategy
from agorabench.core.game import Prompts
from agorabench.core.table import FORMAT, Reply, Table, TurnRequest, without
from agorabench.games.beauty_contest.beauty_contest import (
    BeautyContest, BeautyContestConfig, equilibrium, guess_type, listing, midpoint, number, ratio_text, target, winners,
)
from agorabench.games.beauty_contest.report import level_path
from agorabench.games.beauty_contest.strategies import HumanResampler, LevelK, Selfish, STRATEGIES, two_decimals, UniformRandom
from agorabench.web.forms import form_fields, parse_form


class Fixed(Strategy):
    """Chooses ``numbers[r - 1]`` in round r (the last one after that)."""

    def __init__(self, *numbers: float) -> None:
        super().__init__()
        self.numbers = numbers

    def decide(self, request: TurnRequest) -> Action:
        r = request.prompt.observation["round"]
        return request.action_type(guess=self.numbers[min(r, len(self.numbers)) - 1])


class Says:
    """A player that always answers the same text (like a model that ignores the format)."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def act(self, request: TurnRequest) -> Reply:
        return Reply(text=self.text)


class Spy:
    """Plays like ``inner`` and keeps, per round, the messages it was shown and its observation."""

    def __init__(self, inner) -> None:
        self.inner, self.seen = inner, {}

    async def act(self, request: TurnRequest) -> Reply:
        obs = request.prompt.observation
        self.seen[obs["round"]] = ([dict(m) for m in request.messages], obs)
        return await self.inner.act(request)


def play(*players, seed: int = 1, people=frozenset(), **config):
    cfg = BeautyContestConfig(players=len(players), **config)
    game = BeautyContest(cfg, Prompts(BeautyContest.prompt_dir), people=people)
    table = Table({f"player_{i}": p for i, p in enumerate(players, start=1)}, seed=seed)
    outcome = asyncio.run(game.play(table))
    return outcome, game.metrics(outcome), table


def test_the_registry_finds_the_game_its_strategies_and_defaults():
    assert families.load_game("beauty_contest") is BeautyContest
    assert set(families.strategies("beauty_contest")) == {"selfish", "level-k", "random", "human-resampler", "cognitive-hierarchy"} == set(STRATEGIES)
    assert "mean_guess_first" in families.definitions("beauty_contest") and "convergence" in families.definitions("beauty_contest")
    assert Prompts(BeautyContest.prompt_dir).version == "beauty_contest-1"
    c = BeautyContestConfig()
    assert (c.players, c.p, c.low, c.high, c.rounds, c.prize) == (5, 2 / 3, 0, 100, 4, 20.0)
    assert c.model_dump() == {"players": 5, "p": 0.6666666666666666, "low": 0, "high": 100, "rounds": 4, "prize": 20.0}
    assert BeautyContestConfig(p="2/3") == c and BeautyContestConfig(p=" 4 / 3 ").p == 4 / 3  # a study may write p as a ratio
    assert BeautyContest.roles(BeautyContestConfig(players=3)) == ("player_1", "player_2", "player_3")


def test_bad_parameters_are_refused():
    for config in ({"players": 1}, {"players": 21}, {"p": 0}, {"p": -0.5}, {"p": "2/0"}, {"p": "two thirds"}, {"rounds": 0}, {"rounds": 21},
                   {"low": 100, "high": 100}, {"low": 10, "high": 5}, {"prize": 0}):
        with pytest.raises(ValueError):
            BeautyContestConfig(**config)
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError):
            LevelK(k=bad)
    for bad in (math.inf, "50", True):
        with pytest.raises((ValueError, TypeError)):
            LevelK(mean0=bad)
    assert LevelK(k=2, mean0=40).params == {"k": 2, "mean0": 40.0} and LevelK().params == {"k": 1}


# the rules -----------------------------------------------------------------------------------


def test_target_and_winner_rules():
    assert target(2 / 3, [20, 40, 60]) == pytest.approx(80 / 3)
    assert target(0.5, [0, 0]) == 0
    assert winners([20, 30, 60], 80 / 3) == [1]  # |30 − 26.67| < |20 − 26.67|
    assert winners([20, 30, 60], 25) == [0, 1]  # 5 below and 5 above: a tie
    assert winners([10, 10, 50], 2 / 3 * 70 / 3) == [0, 1]  # the same number twice: both win
    # 2/3 · mean(29, 31, 30) = 20: 29 and 31 would tie around 30 but 20 is nearer to neither; 29 wins
    assert winners([29, 31, 30], target(2 / 3, [29, 31, 30])) == [0]
    # floating-point noise never breaks a tie: the target 2/3 · 45 = 30.000000000000004
    assert winners([29, 31, 40, 80], target(2 / 3, [29, 31, 40, 80])) == [0, 1]
    assert equilibrium(0.5, 0, 100) == 0 and equilibrium(4 / 3, 0, 100) == 100 and equilibrium(0.9, 10, 50) == 10 and math.isnan(equilibrium(1, 0, 100))
    assert midpoint(0, 100) == 50 and midpoint(0, 5) == 2.5 and midpoint(-3, 4) == 0.5


def test_one_winner_takes_the_prize_and_ties_share_it():
    outcome, m, _ = play(Fixed(20), Fixed(30), Fixed(60), rounds=1)  # mean 110/3, target 24.44: 20 is nearest
    (h,) = outcome["history"]
    assert h["guesses"] == [20, 30, 60] and h["mean"] == pytest.approx(110 / 3) and h["target"] == pytest.approx(220 / 9)
    assert h["winners"] == ["player_1"] and h["points"] == [20, 0, 0]
    outcome, m, _ = play(Fixed(10), Fixed(10), Fixed(70), Fixed(30), rounds=1, p=0.5, prize=30)  # target 15: the two 10s tie
    (h,) = outcome["history"]
    assert h["target"] == 15 and h["winners"] == ["player_1", "player_2"] and h["points"] == [15, 15, 0, 0]
    assert m["winners_share"] == 0.5 and m["top_points_share"] == 0.5
    outcome, m, _ = play(Fixed(20), Fixed(40), Fixed(30), rounds=1, p=5 / 6)  # target 25: 20 and 30 equally near
    assert outcome["history"][0]["winners"] == ["player_1", "player_3"] and outcome["history"][0]["points"] == [10, 0, 10]
    outcome, _, _ = play(Fixed(1), Fixed(2), Fixed(3), rounds=1, prize=20)  # three-way split kept to 9 decimals
    assert outcome["history"][0]["winners"] == ["player_1"]
    outcome, _, _ = play(Fixed(5), Fixed(5), Fixed(5), rounds=1)
    assert outcome["history"][0]["points"] == [6.666666667] * 3 and outcome["earnings"]["player_2"] == 6.666666667


def test_a_game_notes_every_choice_and_the_metrics_follow():
    outcome, m, table = play(Fixed(50, 20), Fixed(30, 10), Fixed(10, 0.5), rounds=2)
    h1, h2 = outcome["history"]
    assert h1["target"] == pytest.approx(20) and h1["winners"] == ["player_2", "player_3"] and h1["points"] == [0, 10, 10]  # 30 and 10: both 10 away
    assert h2["target"] == pytest.approx(2 / 3 * 30.5 / 3) and h2["winners"] == ["player_2"]  # 6.78: 10 is 3.22 away, 0.5 is 6.28
    assert outcome["earnings"] == {"player_1": 0, "player_2": 30, "player_3": 10}
    assert [t.metrics["points_share"] for t in table.turns if t.role == "player_2"] == [0.5, 1.0]
    first = [t for t in table.turns if t.role == "player_1"]
    assert [t.metrics for t in first] == [{"guess": 50.0, "round": 1, "points_share": 0.0}, {"guess": 20.0, "round": 2, "points_share": 0.0}]
    assert m["mean_guess_first"] == 30 and m["mean_guess_last"] == pytest.approx(30.5 / 3)
    assert m["target_first"] == pytest.approx(20) and m["target_last"] == pytest.approx(2 / 3 * 30.5 / 3)
    assert m["equilibrium_distance_first"] == 30 and m["equilibrium_distance_last"] == pytest.approx(30.5 / 3)
    assert m["convergence"] == pytest.approx(30.5 / 90)
    assert m["winners_share"] == pytest.approx((2 + 1) / 6) and m["top_points_share"] == pytest.approx(30 / 40)


def test_the_turns_of_a_round_come_in_seat_order():
    _, _, table = play(LevelK(), Selfish(), UniformRandom(), rounds=3)
    assert [t.role for t in table.turns] == [f"player_{i}" for i in (1, 2, 3)] * 3 and {t.phase for t in table.turns} == {"guess"}


def test_nobody_sees_a_choice_of_the_same_round():
    """Player 1's question in a round is the same whatever the others choose in that round, and
    its observation holds only earlier rounds; the next round's question shows what happened."""
    runs = []
    for late in (3, 97):
        spy = Spy(Fixed(40))
        outcome, _, _ = play(spy, Fixed(20, late), Fixed(60, late), rounds=2)
        runs.append((spy.seen, outcome))
    (a, out_a), (b, out_b) = runs
    assert out_a["history"][1]["guesses"] != out_b["history"][1]["guesses"]
    assert a[1] == b[1] and a[2] == b[2]  # round 2's question is the same whatever the others choose in round 2
    messages, obs = a[2]
    assert [h["round"] for h in obs["history"]] == [1] and obs["history"][0]["choices"] == [20, 40, 60]
    assert "3" not in obs["history"][0]["choices"] and all("97" not in m["content"] for m in messages)
    assert [h["round"] for h in a[1][1]["history"]] == []


def test_feedback_after_a_round_shows_all_numbers_without_names_the_average_target_and_winner():
    _, _, table = play(Fixed(40), Fixed(20), Fixed(60), Fixed(12.5), rounds=2)
    told = table.transcripts["player_1"][3]["content"]
    assert told.startswith(
        "Result of round 1: the numbers chosen were 12.5, 20, 40 and 60. Their average is 33.12, so the target (2/3 times the average) is 22.08. "
        "The winning number was 20. You chose 40 and won no points this round."
    )
    assert "Player 2" not in told
    _, _, table = play(Fixed(0), Fixed(0), Fixed(0), rounds=2, p=0.5)
    told = table.transcripts["player_3"][3]["content"]
    assert "The winning number was 0, chosen by 3 players, who share the prize. You chose 0 and won 6.67 points this round." in told
    _, _, single = play(Fixed(1), Fixed(2), rounds=1)
    assert len(single.transcripts["player_1"]) == 3  # the last result is left to the results page


def test_prompts_render_fully_and_state_the_rules():
    _, _, table = play(LevelK(), Selfish(), UniformRandom(), rounds=3, p=0.7, low=10, high=90, prize=12.5)
    text = "\n".join(m["content"] for m in table.transcripts["player_1"])
    assert not re.search(r"\{\{|\}\}|\{%|%\}", text), text
    for needed in ("one of 3 players", "from 10 to 90", "0.7 times the average", "prize of 12.5 points", "Round 3 of 3", "Result of round 2", "at most two decimals, such as 33.25", "at the same time"):
        assert needed in text, needed
    assert '{"guess": <a number from 10 to 90, with at most two decimals>}' in text
    _, _, single = play(Selfish(), Selfish(), rounds=1, p=4 / 3)
    text = single.transcripts["player_1"][0]["content"]
    assert "single round" in text and "4/3 times" in text and "After each round" not in text


def test_numbers_in_words():
    assert [number(x) for x in (33.0, 33.5, 24.48888, 0.004, -0.001, 6.666666667)] == ["33", "33.5", "24.49", "0", "0", "6.67"]
    assert [ratio_text(p) for p in (2 / 3, 0.5, 4 / 3, 0.7, 1.0, 0.123456789)] == ["2/3", "0.5", "4/3", "0.7", "1", "0.123457"]
    assert listing(["1"]) == "1" and listing(["1", "2"]) == "1 and 2" and listing(["1", "2", "3"]) == "1, 2 and 3"


# numbers with decimals, fallbacks ----------------------------------------------------------


def test_numbers_with_up_to_two_decimals_parse_and_more_are_refused():
    kind = guess_type(0, 100)
    assert kind is guess_type(0, 100)
    assert kind.format_instructions() == 'Answer with a JSON object of this form:\n{"guess": <a number from 0 to 100, with at most two decimals>}'
    for text, value in (('{"guess": 33}', 33.0), ('{"guess": 33.3}', 33.3), ('{"guess": 33.33}', 33.33), ('{"guess": "12.05"}', 12.05), ('{"guess": 0}', 0.0), ('{"guess": 100}', 100.0), ('{"guess": 0.07}', 0.07)):
        action = kind.parse(text)
        assert action.guess == value and kind.parse(action.render()) == action
    for bad in ('{"guess": 33.333}', '{"guess": 100.01}', '{"guess": -1}', '{"guess": "a third"}', "33"):
        with pytest.raises(ParseError):
            kind.parse(bad)
    with pytest.raises(ParseError, match="at most two decimals"):
        kind.parse('{"guess": 22.222}')
    assert kind.json_schema()["properties"]["guess"]["minimum"] == 0 and kind.json_schema()["properties"]["guess"]["maximum"] == 100
    assert two_decimals(33.333333, 0, 100) == 33.33 and two_decimals(118.5, 0, 100) == 100 and two_decimals(-3, 0, 100) == 0


def test_a_number_that_stays_invalid_becomes_the_midpoint_and_is_left_out_of_the_means():
    outcome, m, table = play(Says("I'd pick something smallish."), Fixed(20), Fixed(30), rounds=2)
    bad = [t for t in table.turns if t.role == "player_1"]
    assert all(not t.valid and t.error and t.retries == table.max_retries for t in bad)
    assert all("guess" not in t.metrics and "points_share" in t.metrics for t in bad)
    h = outcome["history"][0]
    assert h["guesses"] == [50, 20, 30] and h["valid"] == [False, True, True]
    assert h["target"] == pytest.approx(2 / 3 * 100 / 3)  # the fallback counts in the average
    assert m["mean_guess_first"] == 25  # ... not in the means of numbers
    outcome, _, table = play(Says('{"guess": 2.345}'), Fixed(2), rounds=1, low=0, high=7)
    assert not table.turns[0].valid and "two decimals" in table.turns[0].error and outcome["history"][0]["guesses"][0] == 3.5


def test_an_answer_corrected_on_the_re_ask_counts():
    class SecondTime:
        async def act(self, request: TurnRequest) -> Reply:
            return Reply(text='{"guess": 150}' if request.attempt == 0 else '{"guess": 15.5}')

    outcome, _, table = play(SecondTime(), Fixed(20), rounds=1)
    assert table.turns[0].valid and table.turns[0].retries == 1 and outcome["history"][0]["guesses"][0] == 15.5
    assert "less than or equal to 100" in table.transcripts["player_1"][3]["content"]


# theory with scripted players ----------------------------------------------------------------


@pytest.mark.parametrize("p", [0.5, 2 / 3, 0.9, 4 / 3, 2.0])
@pytest.mark.parametrize("n", [2, 5, 17])
def test_equilibrium_players_all_choose_it_and_all_win(p, n):
    outcome, m, _ = play(*[Selfish() for _ in range(n)], rounds=3, p=p)
    goal = 0 if p < 1 else 100
    for h in outcome["history"]:
        assert h["guesses"] == [goal] * n and h["target"] == pytest.approx(p * goal) and len(h["winners"]) == n
    assert m["equilibrium_distance_first"] == m["equilibrium_distance_last"] == 0 and m["winners_share"] == 1
    assert all(v == pytest.approx(3 * 20 / n) for v in outcome["earnings"].values())


def test_equilibrium_with_p_one_is_the_midpoint_and_has_no_distance():
    outcome, m, _ = play(Selfish(), Selfish(), Selfish(), rounds=1, p=1, low=10, high=30)
    assert outcome["history"][0]["guesses"] == [20, 20, 20] and math.isnan(m["equilibrium_distance_first"])


def test_against_equilibrium_play_nobody_gains_by_deviating():
    """p < 1: against N − 1 players at 0 any other number loses the prize (the others share it)."""
    for x in (0.01, 1, 33.33, 100):
        outcome, _, _ = play(Fixed(x), Selfish(), Selfish(), Selfish(), rounds=1)
        assert outcome["history"][0]["points"][0] == 0 and outcome["earnings"]["player_2"] == pytest.approx(20 / 3)


@pytest.mark.parametrize("p", [0.5, 2 / 3, 4 / 3])
@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_level_k_players_choose_fifty_times_p_to_the_k_in_round_one(p, k):
    outcome, _, _ = play(LevelK(k=k), LevelK(k=k), LevelK(k=k), rounds=1, p=p)
    assert outcome["history"][0]["guesses"] == [two_decimals(50 * p**k, 0, 100)] * 3
    outcome, _, _ = play(LevelK(k=k, mean0=80), Selfish(), rounds=1, p=p)
    assert outcome["history"][0]["guesses"][0] == two_decimals(80 * p**k, 0, 100)
    outcome, _, _ = play(LevelK(k=k), Selfish(), rounds=1, p=p, low=20, high=60)  # level 0's mean: the midpoint, 40
    assert outcome["history"][0]["guesses"][0] == two_decimals(40 * p**k, 20, 60)


@pytest.mark.parametrize("p", [0.5, 2 / 3, 4 / 3])
@pytest.mark.parametrize("k", [0, 1, 2])
@pytest.mark.parametrize("n", [3, 5, 12])
def test_a_level_k_plus_one_player_beats_level_k_players(p, k, n):
    """With N − 1 level-k players, the one level-(k + 1) player wins round 1 alone; with p < 1
    every round alone; with p > 1 it never loses, and once the group reaches 100 all tie."""
    outcome, m, _ = play(LevelK(k=k + 1), *[LevelK(k=k) for _ in range(n - 1)], rounds=4, p=p)
    first, *later = outcome["history"]
    assert first["winners"] == ["player_1"], first
    if p < 1:
        assert all(h["winners"] == ["player_1"] for h in later) and outcome["earnings"]["player_1"] == 80 and m["top_points_share"] == 1
    else:
        assert all("player_1" in h["winners"] for h in later) and outcome["earnings"]["player_1"] == max(outcome["earnings"].values())


@pytest.mark.parametrize("p", [0.5, 2 / 3, 0.9])
@pytest.mark.parametrize("k", [0, 1, 2])
def test_level_k_groups_unravel_towards_zero_when_p_is_below_one(p, k):
    """With p < 1 and k ≥ 1 the round means of a level-k group fall every round (towards 0, the
    equilibrium); level 0 keeps choosing the last average, so its means stay put."""
    outcome, m, _ = play(*[LevelK(k=k) for _ in range(5)], rounds=6, p=p)
    means = [h["mean"] for h in outcome["history"]]
    if k == 0:
        assert means == [50.0] * 6
        return
    assert all(b < a for a, b in zip(means, means[1:])), means
    assert means == pytest.approx(level_path(p, 6, k), abs=0.02)  # 50·p^k, then p^k times the last mean
    assert m["convergence"] == pytest.approx(p ** (5 * k), abs=0.01)
    outcome, _, _ = play(*[LevelK(k=1) for _ in range(4)], rounds=20, p=0.5)
    assert outcome["history"][-1]["mean"] == 0.01  # two decimals: the numbers stop a cent above 0 (0.005 rounds up)


def test_level_k_groups_climb_to_the_top_when_p_is_above_one():
    outcome, _, _ = play(*[LevelK(k=1) for _ in range(4)], rounds=6, p=4 / 3)
    means = [h["mean"] for h in outcome["history"]]
    assert means == [66.67, 88.89, 100, 100, 100, 100]  # 50·4/3, then 4/3 of the last mean, up to the top


def test_random_stays_in_bounds_with_two_decimals_and_is_seeded():
    runs = [play(UniformRandom(), UniformRandom(), UniformRandom(), rounds=4, seed=s, low=10, high=20)[0] for s in (1, 1, 2)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    values = [x for h in runs[0]["history"] + runs[2]["history"] for x in h["guesses"]]
    assert all(10 <= x <= 20 and round(x, 2) == x for x in values) and len(set(values)) > 10


def test_the_human_resampler_reads_the_range_and_the_last_average():
    outcome, _, table = play(HumanResampler(), HumanResampler(), HumanResampler(), rounds=3, seed=4)
    assert all(t.valid for t in table.turns)
    outcome2, _, _ = play(HumanResampler(), HumanResampler(), HumanResampler(), rounds=3, seed=4, low=0, high=200)
    # the same draws: round 1 on twice the range is twice the number
    assert outcome2["history"][0]["guesses"] == [2 * x for x in outcome["history"][0]["guesses"]]
    from agorabench.games.beauty_contest.humans import nagel_choices

    assert set(outcome["history"][0]["guesses"]) <= set(nagel_choices("2/3"))


# actions, forms and words for people -------------------------------------------------------


def test_a_persons_form_takes_decimals_and_says_so():
    (field,) = form_fields(guess_type(0, 100))
    assert (field.kind, field.minimum, field.maximum, field.step) == ("number", 0, 100, "any")
    assert field.label == "A number from 0 to 100, with at most two decimals"
    assert guess_type(0, 100).form_note() == "Enter a number from 0 to 100: a whole number or one with up to two decimals, such as 33.25."
    action, errors = parse_form(guess_type(0, 100), {"guess": "33.25"})
    assert errors == [] and action.guess == 33.25
    assert parse_form(guess_type(0, 100), {"guess": "101"})[1] == ["A number from 0 to 100, with at most two decimals: 101 is outside the allowed range; enter a number from 0 to 100."]
    action, errors = parse_form(guess_type(0, 100), {"guess": "33.333"})
    assert action is None and len(errors) == 1 and "at most two decimals" in errors[0]


MACHINE = re.compile(r"language models?|\bAI\b|\bLLMs?\b|\bmodels?\b|JSON", re.IGNORECASE)


def test_a_person_reads_the_rules_and_questions_in_words_and_models_keep_theirs():
    _, _, table = play(LevelK(), Selfish(), UniformRandom(), rounds=2, people=frozenset({"player_1"}))
    person = "\n".join(without(parts, FORMAT) for parts in table.parts("player_1"))
    assert MACHINE.search(person) is None, person
    assert "participants" in person and "Enter your number, from 0 to 100: a whole number or one with up to two decimals" in person
    _, _, model_table = play(LevelK(), Selfish(), UniformRandom(), rounds=2)
    assert table.transcripts["player_2"] == model_table.transcripts["player_2"]  # the others' prompts are untouched
    assert "JSON" in model_table.transcripts["player_1"][0]["content"]


def test_results_page_in_sentences():
    outcome, _, _ = play(Fixed(20), Fixed(30), Fixed(60, 30), rounds=2)
    game = BeautyContest(BeautyContestConfig(players=3, rounds=2), Prompts(BeautyContest.prompt_dir), people={"player_1"})
    lines = game.describe(outcome, "player_1")
    assert lines[0] == "You played 2 rounds in a group of 3; each round everyone chose a number from 0 to 100, and the number closest to 2/3 times the average won 20 points."
    assert lines[1] == "Round 1: you chose 20; the average was 36.67 and the target 24.44; yours was the winning number and you won 20 points."
    assert lines[2] == "Round 2: you chose 20; the average was 26.67 and the target 17.78; yours was the winning number and you won 20 points."
    assert lines[-1] == "In all you won 40 points; the average player in your group won 13.33."
    lines = game.describe(outcome, "player_2")
    assert lines[1] == "Round 1: you chose 30; the average was 36.67 and the target 24.44; the winning number was 20, and you won nothing this round."
    outcome, _, _ = play(Fixed(10), Fixed(10), Fixed(70), rounds=1, p=0.5)
    assert game.describe(outcome, "player_2")[1].endswith("you shared the prize with 1 other player as close as you and won 10 points.")
    assert all("_" not in line for line in lines) and game.describe(outcome, "nobody") == ["The game is over."]


# end to end ----------------------------------------------------------------------------------

STUDY = """
name = "beauty_contest_e2e"
game = "beauty_contest"
matchups = "seats"
repeats = 2
seed = 3
seats = [{ player_1 = "level-2", player_2 = "level-1", player_3 = "level-1", player_4 = "selfish" }]

[grid]
p = ["1/2", "2/3"]

[fixed]
players = 4
rounds = 3

[[models]]
name = "level-1"
spec = "strategy/level-k"

[[models]]
name = "level-2"
spec = "strategy/level-k"
params = { k = 2 }

[[models]]
name = "selfish"
spec = "strategy/selfish"
"""


def test_cli_run_report_export_and_profile(tmp_path):
    study, db, out = tmp_path / "bc.toml", str(tmp_path / "bc.db"), tmp_path / "report"
    study.write_text(STUDY, encoding="utf-8")
    assert main(["run", str(study), "--db", db, "--quiet"]) == 0
    assert main(["report", str(study), "--db", db, "--out", str(out)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    for title in ("Numbers chosen per model", "Numbers by round", "Groups: targets, convergence and winners"):
        assert title in page, title
    assert "(not computed)" not in page and "equilibrium_distance" in page
    assert "Nagel 1995" in page  # the people-as-yardstick section compares round 1 with Nagel's choices
    games_csv, turns_csv = tmp_path / "games.csv", tmp_path / "turns.csv"
    assert main(["export", str(study), "--db", db, "--out", str(games_csv)]) == 0
    assert main(["export", str(study), "--db", db, "--table", "turns", "--out", str(turns_csv)]) == 0
    games = list(csv.DictReader(games_csv.open(encoding="utf-8")))
    turns = list(csv.DictReader(turns_csv.open(encoding="utf-8")))
    assert len(games) == 4 and len(turns) == 4 * 3 * 4
    for g in games:
        p = float(g["p"])
        assert p in (0.5, 2 / 3)
        # round 1: level 2 at 50p², level 1 at 50p, selfish at 0; the level-2 player is nearest the target
        first = (two_decimals(50 * p * p, 0, 100) + 2 * two_decimals(50 * p, 0, 100)) / 4
        assert float(g["mean_guess_first"]) == pytest.approx(first) and float(g["target_first"]) == pytest.approx(p * first)
    from agorabench.analysis.frames import games_df, turns_df
    from agorabench.store.store import Store

    store = Store(db)
    try:
        rows = families.profile_hook("beauty_contest")(games_df(store, "beauty_contest_e2e"), turns_df(store, "beauty_contest_e2e", transcripts=False))
    finally:
        store.dispose()
    got = {(r.model, r.measure): r.estimate for r in rows.itertuples()}
    assert got["selfish", "at_equilibrium (p = 0.5)"] == 1.0 and got["selfish", "equilibrium_distance (p = 2/3)"] == 0.0
    assert got["level-1", "guess_first (p = 0.5)"] == 25.0 and got["level-2", "guess_first (p = 2/3)"] == 22.22
    assert got["level-2", "points_share (p = 2/3)"] == 1.0  # the level-2 player wins every round
    assert got["selfish", "equilibrium_distance"] == 0.0  # the theory row


def test_conformance_suite_passes():
    from agorabench import conformance

    assert conformance.run(["beauty_contest"]) == []


#: A reference to this game in code: its registry key as a string, its package path, an import.
REFERENCE = re.compile(rb"[\"']beauty_contest[\"'.:/]|games[./\\]beauty_contest|import\s+beauty_contest|\.beauty_contest\b", re.I)


def test_no_file_outside_the_game_folder_refers_to_the_game():
    root = Path(agorabench.__file__).parent
    own = root / "games" / "beauty_contest"
    files = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.name != "tokenizer.json"]
    assert any(REFERENCE.search(p.read_bytes()) for p in own.rglob("*.py"))
    assert [str(p.relative_to(root)) for p in files if own not in p.parents and REFERENCE.search(p.read_bytes())] == []
