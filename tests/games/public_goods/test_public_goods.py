"""Public goods game: the payoff and punishment arithmetic, simultaneous decisions, fallbacks, the
theory of the linear mechanism with scripted players (dominance below and above the MPCR
threshold, efficiency, conditional cooperators, the punishment rule), the forms a person fills in,
a CLI study run and its report end to end, and the conformance suite."""

from __future__ import annotations

import asyncio
import csv
import itertools
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
from agorabench.games.public_goods.public_goods import (
    after_punishment, contribution_type, exact, first_stage, listing, PublicGoods, PublicGoodsConfig, punishment_type, tokens,
)
from agorabench.games.public_goods.strategies import Conditional, Full, Punisher, Selfish, STRATEGIES, UniformRandom
from agorabench.web.forms import form_fields, parse_form


class Fixed(Strategy):
    """Contributes ``amounts[r - 1]`` in round r (the last one after that) and gives every other
    player ``points`` punishment points."""

    def __init__(self, *amounts: int, points: int = 0) -> None:
        super().__init__()
        self.amounts, self.points = amounts, points

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        if request.prompt.phase == "punish":
            return request.action_type(**{who: self.points for who in obs["contributions"]})
        return request.action_type(contribution=self.amounts[min(obs["round"], len(self.amounts)) - 1])


class Says:
    """A player that always answers the same text (like a model that ignores the format)."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def act(self, request: TurnRequest) -> Reply:
        return Reply(text=self.text)


class Spy:
    """Plays like ``inner`` and keeps, per (phase, round), the messages it was shown and its
    observation."""

    def __init__(self, inner) -> None:
        self.inner, self.seen = inner, {}

    async def act(self, request: TurnRequest) -> Reply:
        obs = request.prompt.observation
        self.seen[request.prompt.phase, obs["round"]] = ([dict(m) for m in request.messages], obs)
        return await self.inner.act(request)


def play(*players, seed: int = 1, people=frozenset(), **config):
    cfg = PublicGoodsConfig(players=len(players), **config)
    game = PublicGoods(cfg, Prompts(PublicGoods.prompt_dir), people=people)
    table = Table({f"player_{i}": p for i, p in enumerate(players, start=1)}, seed=seed)
    outcome = asyncio.run(game.play(table))
    return outcome, game.metrics(outcome), table


def earnings(outcome, seat: int = 1) -> float:
    return outcome["earnings"][f"player_{seat}"]


# the registry and the arithmetic -------------------------------------------------------------


def test_the_registry_finds_the_game_its_strategies_and_defaults():
    assert families.load_game("public_goods") is PublicGoods
    assert set(families.strategies("public_goods")) == {"selfish", "full", "conditional", "punisher", "random", "human-resampler"}
    assert set(STRATEGIES) == set(families.strategies("public_goods"))
    assert "contribution_share" in families.definitions("public_goods") and "efficiency" in families.definitions("public_goods")
    assert Prompts(PublicGoods.prompt_dir).version == "public_goods-1"
    c = PublicGoodsConfig()
    assert (c.players, c.rounds, c.endowment, c.mpcr, c.punishment) == (4, 10, 20, 0.4, False)
    assert (c.punish_cost, c.punish_effect, c.punish_max) == (1.0, 3.0, 10)
    assert PublicGoods.roles(PublicGoodsConfig(players=3)) == ("player_1", "player_2", "player_3")


@pytest.mark.parametrize(
    "endowment,mpcr,given,expected",
    [(20, 0.4, [20, 10, 0, 5], [14, 24, 34, 29]), (20, 0.4, [0, 0, 0, 0], [20, 20, 20, 20]), (20, 0.4, [20] * 4, [32] * 4), (10, 0.75, [10, 0], [7.5, 17.5]), (20, 0.3, [7, 0, 0], [15.1, 22.1, 22.1])],
)
def test_first_stage_payoffs(endowment, mpcr, given, expected):
    """π_i = E − c_i + mpcr · Σ c."""
    assert first_stage(endowment, mpcr, given) == pytest.approx(expected)


def test_punishment_arithmetic_cost_effect_and_the_floor():
    stage1 = [8.0, 28.0, 28.0, 28.0]
    points = [[0, 3, 3, 3], [0, 0, 0, 0], [1, 0, 0, 0], [0, 2, 0, 0]]  # points[i][j]: i punishes j
    costs, losses, final = after_punishment(stage1, points, cost=1.0, effect=3.0)
    assert costs == [9, 0, 1, 2]  # 1 token per point assigned
    assert losses == [3, 15, 9, 9]  # 3 tokens per point received
    assert final == [-4, 13, 18, 17]  # π − cost − loss: only one's own spending goes below zero
    # the loss never exceeds the first-stage payoff; the cost is paid in full
    costs, losses, final = after_punishment([8.0, 28.0], [[0, 10], [10, 0]], cost=2.0, effect=5.0)
    assert costs == [20, 20] and losses == [8, 28] and final == [-20, -20]
    costs, losses, final = after_punishment([5.0, 5.0], [[0, 0], [0, 0]], cost=1.0, effect=3.0)
    assert final == [5, 5] and costs == losses == [0, 0]


def test_numbers_in_words():
    assert [tokens(x) for x in (12.000000000000002, 15.1, 2.0999999999, 7.5, -4.0, 0.4)] == ["12", "15.1", "2.1", "7.5", "-4", "0.4"]
    assert [exact(x) for x in (0.4, 1.0, 1 / 3, 1.5)] == ["0.4", "1", "0.333333", "1.5"]
    assert listing([12]) == "12" and listing([12, 5]) == "12 and 5" and listing([12, 5, 0]) == "12, 5 and 0"


# play: rules, notes, metrics -----------------------------------------------------------------


def test_a_game_without_punishment_pays_by_the_rule_and_notes_every_decision():
    outcome, m, table = play(Fixed(20, 10), Fixed(10), Fixed(0, 5), Fixed(5), rounds=2)
    h1, h2 = outcome["history"]
    assert h1["contributions"] == [20, 10, 0, 5] and h1["total"] == 35 and h1["payoffs"] == pytest.approx([14, 24, 34, 29])
    assert h2["contributions"] == [10, 10, 5, 5] and h2["payoffs"] == pytest.approx([22, 22, 27, 27])
    assert h1["points"] is None and h1["costs"] == [0, 0, 0, 0]
    assert outcome["earnings"] == pytest.approx({"player_1": 36, "player_2": 46, "player_3": 61, "player_4": 56})
    assert m["contribution_share"] == pytest.approx((35 + 30) / (8 * 20))
    assert m["contribution_share_first"] == pytest.approx(35 / 80) and m["contribution_share_last"] == pytest.approx(30 / 80)
    assert m["efficiency"] == pytest.approx((101 + 98) / (2 * 4 * 4 * 0.4 * 20))
    assert m["payoff_share"] == pytest.approx((101 + 98) / (2 * 4 * 20)) and math.isnan(m["punishment_points"])
    assert [t.phase for t in table.turns] == ["contribute"] * 8 and all(t.valid for t in table.turns)
    first = [t for t in table.turns if t.role == "player_1"]
    assert [t.metrics for t in first] == [{"contribution_share": 1.0, "round": 1, "payoff_share": 14 / 20}, {"contribution_share": 0.5, "round": 2, "payoff_share": 22 / 20}]


def test_the_turns_of_a_round_come_in_seat_order_contributions_before_punishment():
    _, _, table = play(Full(), Selfish(), Punisher(), rounds=2, punishment=True)
    assert [(t.phase, t.role) for t in table.turns[:6]] == [("contribute", f"player_{i}") for i in (1, 2, 3)] + [("punish", f"player_{i}") for i in (1, 2, 3)]
    assert len(table.turns) == 12


def test_nobody_sees_a_choice_of_the_same_round():
    """Player 1's question in a round is the same whatever the others choose in that round: two
    games that differ only in the others' round-2 contributions (and round-1 punishment) show it
    identical questions; and each question's observation holds only earlier rounds."""
    runs = []
    for late, points in ((3, 0), (17, 4)):
        spy = Spy(Fixed(8, 8))
        outcome, _, _ = play(spy, Fixed(5, late, points=points), Fixed(0, late), rounds=2, punishment=True)
        runs.append((spy.seen, outcome))
    (a, out_a), (b, out_b) = runs
    assert out_a["history"][1]["contributions"] != out_b["history"][1]["contributions"]
    assert a["contribute", 2] != b["contribute", 2]  # the round-1 punishment differs, so round 2's transcript does ...
    assert a["contribute", 1] == b["contribute", 1] and a["punish", 1] == b["punish", 1]  # ... but never a same-round choice
    messages, obs = a["contribute", 2]
    assert [h["round"] for h in obs["history"]] == [1] and "Round 2 of 2, second stage" not in str(messages)
    # the round-2 contribution question of player 1 is the same whatever the others put in in round 2
    spies = []
    for late in (3, 17):
        spy = Spy(Fixed(8))
        play(spy, Fixed(5, late), Fixed(0, late), rounds=2)
        spies.append(spy.seen)
    assert spies[0]["contribute", 2] == spies[1]["contribute", 2]


def test_feedback_after_a_round_lists_the_others_without_names():
    _, _, table = play(Fixed(4), Fixed(12), Fixed(0), Fixed(7), rounds=2)
    told = table.transcripts["player_1"][3]["content"]
    assert told.startswith("Result of round 1: the other players put in 12, 7 and 0 tokens; the group account holds 23 tokens, which pays each player 9.2. Your payoff this round: 25.2 tokens.")
    assert "Player 2" not in told


def test_punishment_stage_shows_each_contribution_by_name_and_reports_what_followed():
    _, _, table = play(Punisher(share=0.5, points=2), Fixed(4), Fixed(10), rounds=2, punishment=True)
    question = table.transcripts["player_1"][3]["content"]
    assert "This round Player 2 put in 4, Player 3 put in 10, and you put in 10 tokens. The group account holds 24 tokens, which pays each player 9.6; your payoff from the first stage is 19.6 tokens." in question
    assert '{"player_2": <punishment points for Player 2, from 0 to 10>, "player_3": <punishment points for Player 3, from 0 to 10>}' in question
    result = table.transcripts["player_2"][5]["content"]
    assert result.startswith("Result of round 1: you assigned 0 punishment points, which cost you 0 tokens, and the others assigned you 2, which took 6 tokens from you. Your payoff this round: 19.6 tokens.")


# theory with scripted players ----------------------------------------------------------------

OTHERS = [(0, 0, 0), (20, 20, 20), (3, 11, 20), (7, 0, 19)]


@pytest.mark.parametrize("others", OTHERS)
@pytest.mark.parametrize("mpcr", [0.25, 0.4, 0.7])
def test_below_the_threshold_contributing_lowers_ones_own_payoff_whatever_the_others_do(mpcr, others):
    """mpcr < 1: against any fixed others, selfish earns (1 − mpcr) · E more per round than full."""
    rounds = 3
    full, *_ = play(Full(), *(Fixed(o) for o in others), rounds=rounds, mpcr=mpcr)
    selfish, *_ = play(Selfish(), *(Fixed(o) for o in others), rounds=rounds, mpcr=mpcr)
    assert earnings(selfish) - earnings(full) == pytest.approx((1 - mpcr) * 20 * rounds)
    assert earnings(selfish) > earnings(full)
    # every intermediate contribution lies in between, one token costing 1 − mpcr
    some, *_ = play(Fixed(5), *(Fixed(o) for o in others), rounds=rounds, mpcr=mpcr)
    assert earnings(selfish) - earnings(some) == pytest.approx((1 - mpcr) * 5 * rounds)


@pytest.mark.parametrize("others", OTHERS)
@pytest.mark.parametrize("mpcr", [1.0, 1.5])
def test_above_the_threshold_contributing_everything_is_dominant(mpcr, others):
    """mpcr ≥ 1: full earns (mpcr − 1) · E more per round than selfish (the same at mpcr = 1)."""
    full, *_ = play(Full(), *(Fixed(o) for o in others), rounds=2, mpcr=mpcr)
    selfish, *_ = play(Selfish(), *(Fixed(o) for o in others), rounds=2, mpcr=mpcr)
    assert earnings(full) - earnings(selfish) == pytest.approx((mpcr - 1) * 20 * 2)
    assert (earnings(full) > earnings(selfish)) == (mpcr > 1)


@pytest.mark.parametrize("n,mpcr", [(2, 0.75), (3, 0.5), (4, 0.4), (4, 0.3), (10, 0.2), (20, 0.06)])
def test_efficiency_of_full_and_no_contribution(n, mpcr):
    """The group earns N·E + (mpcr·N − 1)·Σc a round, so full contribution by all earns N²·mpcr·E
    (efficiency 1) and none earns N·E: efficiency exactly 1 / (mpcr · N), below 1 iff mpcr·N > 1."""
    _, full, _ = play(*(Full() for _ in range(n)), rounds=2, mpcr=mpcr)
    _, none, _ = play(*(Selfish() for _ in range(n)), rounds=2, mpcr=mpcr)
    assert full["efficiency"] == pytest.approx(1.0) and full["contribution_share"] == 1.0
    assert none["efficiency"] == pytest.approx(1 / (mpcr * n)) and none["contribution_share"] == 0.0
    assert none["payoff_share"] == pytest.approx(1.0) and full["payoff_share"] == pytest.approx(mpcr * n)
    assert (none["efficiency"] < 1) == (mpcr * n > 1)


def test_with_mpcr_times_n_above_one_every_other_profile_earns_the_group_less():
    for profile in itertools.product((0, 7, 20), repeat=3):
        _, m, _ = play(*(Fixed(c) for c in profile), mpcr=0.5, rounds=1)
        expected = (3 * 20 + (0.5 * 3 - 1) * sum(profile)) / (9 * 0.5 * 20)
        assert m["efficiency"] == pytest.approx(expected)
        assert (m["efficiency"] < 1) == (profile != (20, 20, 20))


@pytest.mark.parametrize("start,endowment,level", [(0.5, 20, 10), (0.3, 20, 6), (1.0, 20, 20), (0.0, 20, 0), (0.25, 10, 3)])
def test_conditional_cooperators_among_themselves_keep_their_start_level(start, endowment, level):
    outcome, m, _ = play(*(Conditional(start=start) for _ in range(4)), rounds=5, endowment=endowment)
    assert all(h["contributions"] == [level] * 4 for h in outcome["history"])  # 0.25 · 10 = 2.5 rounds up to 3
    assert m["contribution_share_first"] == m["contribution_share_last"] == pytest.approx(level / endowment)


def test_a_conditional_cooperator_matches_the_others_mean_of_the_last_round():
    outcome, *_ = play(Conditional(start=0.5), Fixed(20, 0), Fixed(4, 0), Fixed(0), rounds=3)
    assert [h["contributions"][0] for h in outcome["history"]] == [10, 8, 0]  # (20+4+0)/3 = 8, then 0


def test_a_punishers_cost_and_its_targets_loss_follow_the_rule_exactly():
    """Punisher (contributes all, 3 points to each lower contributor) among three selfish players,
    default 1:3 rule: the punisher pays 9 of its 8 first-stage tokens, each target loses 9 of 28."""
    outcome, m, table = play(Punisher(), Selfish(), Selfish(), Selfish(), rounds=2, punishment=True)
    for h in outcome["history"]:
        assert h["points"] == [[0, 3, 3, 3]] + [[0] * 4] * 3  # only the punisher assigns points
        assert h["stage1"] == pytest.approx([8, 28, 28, 28])
        assert h["costs"] == [9, 0, 0, 0] and h["losses"] == [0, 9, 9, 9]
        assert h["payoffs"] == pytest.approx([-1, 19, 19, 19])
    assert m["punishment_points"] == pytest.approx(9 / 4)
    assert m["efficiency"] == pytest.approx(2 * 56 / (2 * 16 * 0.4 * 20))
    notes = [t.metrics for t in table.turns if t.phase == "punish" and t.role == "player_1"]
    assert notes == [{"punishment_points": 9.0, "round": 1, "payoff_share": -1 / 20}, {"punishment_points": 9.0, "round": 2, "payoff_share": -1 / 20}]
    # a punisher who contributed no more than the others punishes nobody; equal contributors are spared
    outcome, m, _ = play(Punisher(share=0.5), Fixed(10), Fixed(15), rounds=1, punishment=True)
    assert outcome["history"][0]["points"][0] == [0, 0, 0] and m["punishment_points"] == 0


def test_punishment_never_takes_more_than_the_first_stage_payoff():
    outcome, *_ = play(Punisher(points=10), Punisher(points=10), Selfish(), rounds=1, punishment=True, punish_effect=10, punish_max=10)
    h = outcome["history"][0]
    assert h["stage1"] == pytest.approx([16, 16, 36]) and h["losses"] == pytest.approx([0, 0, 36])
    assert h["payoffs"] == pytest.approx([6, 6, 0])  # 200 tokens of punishment take the 36 there are


def test_the_punisher_assigns_at_most_the_games_bound():
    outcome, *_ = play(Punisher(points=50), Selfish(), rounds=1, punishment=True, punish_max=4)
    assert outcome["history"][0]["points"] == [[0, 4], [0, 0]]


def test_selfish_and_full_never_punish_and_random_stays_in_bounds_and_is_seeded():
    outcome, m, _ = play(Selfish(), Full(), Selfish(), rounds=3, punishment=True)
    assert all(p == 0 for h in outcome["history"] for row in h["points"] for p in row) and m["punishment_points"] == 0
    runs = [play(UniformRandom(), UniformRandom(), UniformRandom(), seed=s, rounds=6, punishment=True, punish_max=5)[0] for s in (1, 1, 2)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    given = [c for r in runs for h in r["history"] for c in h["contributions"]]
    points = [p for r in runs for h in r["history"] for i, row in enumerate(h["points"]) for j, p in enumerate(row) if i != j]
    assert all(0 <= c <= 20 for c in given) and len(set(given)) > 5
    assert all(0 <= p <= 5 for p in points) and set(points) == set(range(6))


# fallbacks -----------------------------------------------------------------------------------


def test_a_contribution_that_stays_invalid_becomes_zero_and_is_left_out_of_the_shares():
    outcome, m, table = play(Says("I'd rather not say."), Full(), Full(), rounds=2)
    bad = [t for t in table.turns if t.role == "player_1"]
    assert all(not t.valid and t.error and t.retries == table.max_retries for t in bad)
    assert all("contribution_share" not in t.metrics and "payoff_share" in t.metrics for t in bad)
    assert [h["contributions"][0] for h in outcome["history"]] == [0, 0] and outcome["history"][0]["valid_contributions"] == [False, True, True]
    assert m["contribution_share"] == 1.0  # the two full players only
    assert outcome["history"][0]["payoffs"][0] == pytest.approx(20 + 0.4 * 40)


def test_a_contribution_beyond_the_endowment_is_invalid_and_re_asked():
    outcome, m, table = play(Says('{"contribution": 25}'), Full(), rounds=1)
    assert not table.turns[0].valid and "20" in table.turns[0].error
    assert outcome["history"][0]["contributions"] == [0, 20] and m["contribution_share"] == 1.0
    with pytest.raises(ParseError):
        contribution_type(20).parse('{"contribution": -1}')
    assert contribution_type(20).parse('I give {"contribution": 12}').contribution == 12


def test_a_punishment_that_stays_invalid_punishes_nobody():
    class ContributesThenBabbles(Says):
        async def act(self, request):
            if request.prompt.phase == "contribute":
                return Reply(text='{"contribution": 0}')
            return Reply(text='{"player_2": 3}')  # player_3 is missing

    outcome, m, table = play(ContributesThenBabbles(""), Full(), Full(), rounds=1, punishment=True)
    turn = next(t for t in table.turns if t.phase == "punish" and t.role == "player_1")
    assert not turn.valid and "player_3" in turn.error and "punishment_points" not in turn.metrics
    assert outcome["history"][0]["points"][0] == [0, 0, 0] and outcome["history"][0]["valid_punishments"] == [False, True, True]
    assert m["punishment_points"] == 0.0  # the two valid decisions assigned nothing


# actions and forms ---------------------------------------------------------------------------


def test_answer_formats_write_numbers_bare_and_parse_back():
    kind = contribution_type(20)
    assert kind is contribution_type(20) and kind.format_instructions() == 'Answer with a JSON object of this form:\n{"contribution": <a whole number of tokens from 0 to 20>}'
    punish = punishment_type(("player_1", "player_3"), 10)
    assert punish.format_instructions() == 'Answer with a JSON object of this form:\n{"player_1": <punishment points for Player 1, from 0 to 10>, "player_3": <punishment points for Player 3, from 0 to 10>}'
    for action in (kind(contribution=0), kind(contribution=20), punish(player_1=0, player_3=10)):
        assert type(action).parse(action.render()) == action
    assert punish.parse('{"player_1": 2, "player_3": 0}').points() == {"player_1": 2, "player_3": 0}
    with pytest.raises(ParseError):
        punish.parse('{"player_1": 11, "player_3": 0}')


def test_a_persons_forms_one_field_per_other_player():
    fields = form_fields(punishment_type(("player_2", "player_3", "player_4"), 10), role="player_1")
    assert [f.name for f in fields] == ["player_2", "player_3", "player_4"]
    assert [f.label for f in fields] == [f"Punishment points for Player {i}, from 0 to 10" for i in (2, 3, 4)]
    assert all(f.kind == "radio" and f.options == [str(v) for v in range(11)] and f.required for f in fields)
    action, errors = parse_form(punishment_type(("player_2", "player_3"), 10), {"player_2": "4", "player_3": "0"})
    assert errors == [] and action.points() == {"player_2": 4, "player_3": 0}
    (contribution,) = form_fields(contribution_type(20))
    assert (contribution.kind, contribution.minimum, contribution.maximum) == ("number", 0, 20)
    assert parse_form(contribution_type(20), {"contribution": "21"})[1] == ["A whole number of tokens from 0 to 20: 21 is outside the allowed range; enter a whole number from 0 to 20."]


MACHINE = re.compile(r"language models?|\bAI\b|\bLLMs?\b|\bmodels?\b|JSON", re.IGNORECASE)


def test_a_person_reads_the_rules_and_questions_in_words_and_models_keep_theirs():
    _, _, table = play(Conditional(), Punisher(), Selfish(), rounds=2, punishment=True, people=frozenset({"player_1"}))
    shown = [without(parts, FORMAT) for parts in table.parts("player_1")]
    person = "\n".join(shown)
    assert MACHINE.search(person) is None, person
    assert "participant" in person and "0 means you do not punish them" in person and "Enter a whole number from 0 to 20" in person
    _, _, model_table = play(Conditional(), Punisher(), Selfish(), rounds=2, punishment=True)
    assert table.transcripts["player_2"] == model_table.transcripts["player_2"]  # the others' prompts are untouched
    assert "JSON" in model_table.transcripts["player_1"][0]["content"]


def test_results_page_in_sentences():
    outcome, _, _ = play(Punisher(), Selfish(), rounds=2, punishment=True)
    game = PublicGoods(PublicGoodsConfig(players=2, rounds=2, punishment=True), Prompts(PublicGoods.prompt_dir), people={"player_2"})
    lines = game.describe(outcome, "player_2")
    assert lines[0] == "You played 2 rounds in a group of 2; each round everyone received 20 tokens and chose how many to put into the group account."
    assert lines[1] == "Round 1: you put in 0 of 20 tokens and the group 20 in all; you assigned 0 punishment points (costing you 0 tokens) and received 3 (taking 9 tokens from you); your payoff was 19 tokens."
    assert lines[-1] == "In all you earned 38 tokens; the average player in your group earned 24."
    assert all("_" not in line for line in lines)


def test_prompts_render_fully():
    for punishment in (False, True):
        _, _, table = play(Conditional(), Full(), Selfish(), rounds=3, punishment=punishment, endowment=37, mpcr=0.45)
        for role in ("player_1", "player_3"):
            text = "\n".join(m["content"] for m in table.transcripts[role])
            assert not re.search(r"\{\{|\}\}|\{%|%\}", text), text
            assert "37 tokens" in text and "0.45" in text and "Round 3 of 3" in text and "Result of round 2" in text
            assert ("second stage" in text) == punishment
    _, _, single = play(Full(), Full(), rounds=1)
    text = "\n".join(m["content"] for m in single.transcripts["player_1"])
    assert "single round" in text and "Round 1" not in text and "Result" not in text


def test_bad_parameters_are_refused():
    for bad in (-0.1, 1.5, "half", True):
        with pytest.raises(ValueError):
            Conditional(start=bad)
        with pytest.raises(ValueError):
            Punisher(share=bad)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError):
            Punisher(points=bad)
    for config in ({"players": 1}, {"players": 21}, {"rounds": 0}, {"rounds": 31}, {"mpcr": 0}, {"endowment": 0}, {"punish_max": 0}, {"punish_cost": -1}):
        with pytest.raises(ValueError):
            PublicGoodsConfig(**config)


# end to end ----------------------------------------------------------------------------------

STUDY = """
name = "public_goods_e2e"
game = "public_goods"
matchups = "seats"
repeats = 2
seed = 3
seats = [{ player_1 = "punisher", player_2 = "selfish", player_3 = "conditional" }]

[grid]
punishment = [false, true]

[fixed]
players = 3
rounds = 3

[[models]]
name = "punisher"
spec = "strategy/punisher"

[[models]]
name = "selfish"
spec = "strategy/selfish"

[[models]]
name = "conditional"
spec = "strategy/conditional"
params = { start = 0.5 }
"""


def test_cli_run_report_export_and_profile(tmp_path):
    study, db, out = tmp_path / "pg.toml", str(tmp_path / "pg.db"), tmp_path / "report"
    study.write_text(STUDY, encoding="utf-8")
    assert main(["run", str(study), "--db", db, "--quiet"]) == 0
    assert main(["report", str(study), "--db", db, "--out", str(out)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    for title in ("Contributions, punishment and payoffs per model", "Contribution by round", "Groups: efficiency and contributions"):
        assert title in page
    assert "(not computed)" not in page and "contribution_share" in page
    games_csv, turns_csv = tmp_path / "games.csv", tmp_path / "turns.csv"
    assert main(["export", str(study), "--db", db, "--out", str(games_csv)]) == 0
    assert main(["export", str(study), "--db", db, "--table", "turns", "--out", str(turns_csv)]) == 0
    games = list(csv.DictReader(games_csv.open(encoding="utf-8")))
    turns = list(csv.DictReader(turns_csv.open(encoding="utf-8")))
    assert len(games) == 4 and len(turns) == 2 * 3 * 3 + 2 * 3 * 6  # without: 3 turns a round; with: 6
    for g in games:
        # punisher 20, selfish 0, conditional 10 then (20 + 0) / 2 = 10: shares (20 + 0 + 10) / 60 each round
        assert float(g["contribution_share"]) == pytest.approx(0.5)
        if g["punishment"] == "True":
            assert float(g["punishment_points"]) == pytest.approx(6 / 3)  # 3 to selfish, 3 to conditional, each round
        else:
            assert g["punishment_points"] in ("", "nan")
    from agorabench.analysis.frames import games_df, turns_df
    from agorabench.store.store import Store

    store = Store(db)
    try:
        rows = families.profile_hook("public_goods")(games_df(store, "public_goods_e2e"), turns_df(store, "public_goods_e2e", transcripts=False))
    finally:
        store.dispose()
    got = {(r.model, r.measure): r.estimate for r in rows.itertuples()}
    assert got["punisher", "contribution_share (with punishment)"] == 1.0 and got["selfish", "contribution_share (no punishment)"] == 0.0
    assert got["conditional", "contribution_share_last (no punishment)"] == 0.5 and got["punisher", "punishment_points (with punishment)"] == 6.0
    assert got["selfish", "payoff_share (with punishment)"] == pytest.approx((20 + 0.4 * 30 - 9) / 20)
    assert got["selfish", "contribution_share"] == 0.0  # the theory row


def test_conformance_suite_passes():
    from agorabench import conformance

    assert conformance.run(["public_goods"]) == []


#: A reference to this game in code: its registry key as a string, its package path, an import.
REFERENCE = re.compile(rb"[\"']public_goods[\"'.:/]|games[./\\]public_goods|import\s+public_goods|\.public_goods\b", re.I)


def test_no_file_outside_the_game_folder_refers_to_the_game():
    root = Path(agorabench.__file__).parent
    own = root / "games" / "public_goods"
    files = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.name != "tokenizer.json"]
    assert any(REFERENCE.search(p.read_bytes()) for p in own.rglob("*.py"))
    assert [str(p.relative_to(root)) for p in files if own not in p.parents and REFERENCE.search(p.read_bytes())] == []
