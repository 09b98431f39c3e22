"""The ultimatum game's strategy method: direct games are what they were (every prompt byte, every
stored game id); the responder states a minimum without seeing the offer and the round is
accepted iff offer ≥ minimum; fallbacks; every strategy under both methods; a person's wording;
the conformance checks on strategy-method games; and a study with ``method = "strategy"`` that
runs, reports and exports from the command line."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import math
import re

import pytest

from agorabench import conformance, families
from agorabench.cli import main
from agorabench.core.game import Prompts
from agorabench.core.study import load_study
from agorabench.core.table import Prompt, Reply, Table, TurnRequest
from agorabench.games.ultimatum.strategies import Fair, HumanResampler, least_at_share, STRATEGIES, SubgamePerfect, UniformRandom
from agorabench.games.ultimatum.ultimatum import accepts, Minimum, minimum_type, Ultimatum, UltimatumConfig

MACHINE_WORDS = re.compile(r"language models?|\bAI\b|\bLLMs?\b|\bmodels?\b|chatbot|JSON", re.IGNORECASE)


class Says:
    """A player that always answers the same text."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def act(self, request: TurnRequest) -> Reply:
        return Reply(text=self.text)


class Fixed:
    """A scripted player that offers ``offer`` and states ``minimum`` (and notes what it was shown)."""

    def __init__(self, offer: int = 0, minimum: int = 0) -> None:
        self.offer, self.minimum = offer, minimum
        self.seen: list[TurnRequest] = []

    async def act(self, request: TurnRequest) -> Reply:
        self.seen.append(request)
        if request.prompt.phase == "offer":
            action = request.action_type(offer=self.offer)
        else:
            action = request.action_type(minimum=self.minimum)
        return Reply(text=action.render(), action=action)


#: One set of templates for every game here (each compiles its templates once).
PROMPTS = Prompts(Ultimatum.prompt_dir)


def play(proposer, responder, seed: int = 1, people=frozenset(), **config):
    game = Ultimatum(UltimatumConfig(**config), PROMPTS, people=people)
    table = Table({"proposer": proposer, "responder": responder}, seed=seed)
    outcome = asyncio.run(game.play(table))
    return outcome, game.metrics(outcome), table


# direct games are unchanged ---------------------------------------------------------------------

#: sha256 of the transcripts below as the game wrote them before the strategy method existed (the
#: seats no person plays; taken with and without issue 41's people's wording of the offer: equal).
DIRECT_TRANSCRIPTS = "739e47aae93980425edf7e7ffc957a06c774dd01322b8c1d734ddfa4ddeb4435"


def test_direct_games_read_every_byte_they_read_before():
    """288 direct games (pies 2, 37, 100; 1 and 3 rounds; four players in each seat, one that
    never answers usably; models only, a person as proposer, a person as responder) give every
    seat that no person plays the transcript the game wrote before the method option, byte for
    byte."""
    players = {"fair": Fair, "sgp": SubgamePerfect, "random": UniformRandom, "bad": lambda: Says("nope")}
    out = {}
    for pie in (2, 37, 100):
        for rounds in (1, 3):
            for p, make_p in players.items():
                for r, make_r in players.items():
                    for people in ((), ("proposer",), ("responder",)):
                        _, _, table = play(make_p(), make_r(), seed=pie * 7 + rounds, people=frozenset(people), pie=pie, rounds=rounds)
                        # what every seat that is not a person reads (a person's wording is theirs to improve)
                        out[f"{pie}/{rounds}/{p}/{r}/{sorted(people)}"] = {k: v for k, v in table.transcripts.items() if k not in people}
    assert hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest() == DIRECT_TRANSCRIPTS
    assert Prompts(Ultimatum.prompt_dir).version == "ultimatum-1"


DEFAULT_STUDY = """
name = "ultimatum_default"
game = "ultimatum"
seed = 0
{fixed}
[[models]]
name = "fair"
spec = "strategy/fair"

[[models]]
name = "r"
spec = "strategy/random"
"""


@pytest.mark.parametrize("fixed", ["", '[fixed]\nmethod = "direct"\n'])
def test_a_default_study_keeps_its_game_ids(tmp_path, fixed):
    """The ids (and seeds) a default study's games had before the method option, whether the
    study leaves the method out or names the default; a strategy-method study gets new ids."""
    path = tmp_path / "u.toml"
    path.write_text(DEFAULT_STUDY.format(fixed=fixed), encoding="utf-8")
    specs = load_study(path).expand()
    assert [(s.id, s.config, s.seed, s.nature_seed) for s in specs] == [
        ("d8ca8733e58575a4d32cdaaf", {"pie": 100, "rounds": 1}, 238364363318661, 7628749977445790140),
        ("d3f799c38910c147897be9a3", {"pie": 100, "rounds": 1}, 233060390111504, 7628749977445790140),
    ]
    path.write_text(DEFAULT_STUDY.format(fixed='[fixed]\nmethod = "strategy"\n'), encoding="utf-8")
    strategy = load_study(path).expand()
    assert [s.config for s in strategy] == [{"pie": 100, "rounds": 1, "method": "strategy"}] * 2
    assert not {s.id for s in strategy} & {s.id for s in specs}


def test_the_stored_configuration_names_the_method_only_when_it_is_not_the_default():
    assert UltimatumConfig(pie=10).model_dump(mode="json") == {"pie": 10, "rounds": 1}
    assert UltimatumConfig(pie=10, method="strategy").model_dump(mode="json") == {"pie": 10, "rounds": 1, "method": "strategy"}
    for config in (UltimatumConfig(), UltimatumConfig(method="strategy", pie=7, rounds=3)):
        assert UltimatumConfig(**config.model_dump(mode="json")) == config  # read back as the runner does
    with pytest.raises(ValueError):
        UltimatumConfig(method="sequential")


# the rules ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("offer,minimum,accepted", [(0, 0, True), (30, 30, True), (31, 30, True), (29, 30, False), (100, 100, True), (99, 100, False), (0, 1, False), (50, 0, True)])
def test_the_round_is_accepted_iff_the_offer_reaches_the_minimum(offer, minimum, accepted):
    outcome, m, table = play(Fixed(offer=offer), Fixed(minimum=minimum), pie=100, method="strategy")
    assert accepts(offer, minimum) is accepted
    assert outcome["offers"] == [offer] and outcome["minimums"] == [minimum] and outcome["method"] == "strategy"
    assert outcome["decisions"] == ["accept" if accepted else "reject"]
    assert outcome["payoffs"] == ({"proposer": [100 - offer], "responder": [offer]} if accepted else {"proposer": [0], "responder": [0]})
    assert m["accepted"] == float(accepted) and m["min_share"] == minimum / 100 and m["offer_share"] == offer / 100
    assert [(t.role, t.phase, t.valid) for t in table.turns] == [("proposer", "offer", True), ("responder", "minimum", True)]
    assert table.turns[0].metrics == {"offer_share": offer / 100, "round": 1}
    assert table.turns[1].metrics == {"min_share": minimum / 100, "round": 1}


def test_neither_player_sees_the_others_decision():
    """The responder states its minimum before and without the offer; the proposer offers without
    the minimum, and learns of it only whether its offer reached it."""
    proposer, responder = Fixed(offer=37), Fixed(minimum=23)
    outcome, _, table = play(proposer, responder, pie=100, rounds=3, method="strategy")
    assert outcome["decisions"] == ["accept"] * 3
    for request in responder.seen:
        assert request.prompt.phase == "minimum" and "offer" not in request.prompt.observation
        shown = "\n".join(m["content"] for m in request.messages)
        if request.prompt.observation["round"] == 1:
            assert "37" not in shown
    for request in proposer.seen:
        obs = request.prompt.observation
        assert "minimum" not in json.dumps(obs) and "23" not in "\n".join(m["content"] for m in request.messages)
    # the responder's own history keeps its minimum; the proposer's never holds it
    assert responder.seen[2].prompt.observation["history"][0]["minimum"] == 23
    assert [h["decision"] for h in proposer.seen[2].prompt.observation["history"]] == ["accept", "accept"]
    result = table.transcripts["proposer"][3]["content"]
    assert result.startswith("Result of round 1: the offer was 37 of 100 points, at or above the responder's minimum, so it was accepted.")


def test_the_responder_asked_first_in_the_round_never_holds_the_offer_of_that_round():
    """Under the strategy method the minimum of round r is asked before anything of round r is told."""
    _, _, table = play(Fixed(offer=5), Fixed(minimum=8), pie=10, rounds=2, method="strategy")
    first = table.turns[1]
    assert first.phase == "minimum"
    assert "offers you" not in first.messages[-1]["content"]
    assert "There are 10 points to divide. The proposer is choosing an offer that you will not see before you answer." in first.messages[-1]["content"]
    assert '{"minimum": <a whole number of points from 0 to 10>}' in first.messages[-1]["content"]
    told = table.transcripts["responder"][3]["content"]
    assert told.startswith("Result of round 1: the offer was 5 of 10 points, below the responder's minimum, so it was rejected. Your points this round: 0.")


def test_a_minimum_that_stays_invalid_becomes_the_whole_pie():
    outcome, m, table = play(Fixed(offer=60), Says("I accept anything fair."), pie=100, rounds=2, method="strategy")
    minimums = [t for t in table.turns if t.phase == "minimum"]
    assert len(minimums) == 2 and not any(t.valid for t in minimums) and all(t.error and t.metrics == {} for t in minimums)
    assert outcome["minimums"] == [100, 100] and outcome["valid_decisions"] == [False, False]
    assert outcome["decisions"] == ["reject", "reject"] and math.isnan(m["min_share"]) and m["accepted"] == 0.0
    # only an offer of the whole pie meets the fallback
    outcome, *_ = play(Fixed(offer=100), Says("no"), pie=100, method="strategy")
    assert outcome["decisions"] == ["accept"]


def test_a_minimum_beyond_the_pie_is_refused_and_the_offer_falls_back_as_before():
    _, _, table = play(Fixed(offer=3), Says('{"minimum": 11}'), pie=10, method="strategy")
    assert not table.turns[1].valid and "10" in table.turns[1].error
    outcome, m, table = play(Says("half?"), Fixed(minimum=5), pie=11, method="strategy")
    assert outcome["offers"] == [5] and outcome["valid_offers"] == [False] and math.isnan(m["offer_share"])
    assert outcome["decisions"] == ["accept"] and m["min_share"] == 5 / 11
    kind = minimum_type(10)
    assert issubclass(kind, Minimum) and kind is minimum_type(10) and kind.parse('ok {"minimum": 7}').minimum == 7
    for value in (0, 10):
        assert kind.parse(kind(minimum=value).render()) == kind(minimum=value)
    with pytest.raises(Exception):
        kind.parse('{"minimum": -1}')


def test_direct_games_note_the_round_and_ask_no_minimum():
    outcome, m, table = play(Fair(), Fair(), pie=10, rounds=2)
    assert "minimums" not in outcome and "method" not in outcome and math.isnan(m["min_share"])
    assert [t.phase for t in table.turns] == ["offer", "respond"] * 2
    assert table.turns[2].metrics == {"offer_share": 0.5, "round": 2}
    assert table.turns[3].metrics == {"offered_share": 0.5, "accepted": 1.0, "round": 2}


def test_metrics_of_a_strategy_game_over_mixed_rounds():
    outcome = {
        "pie": 10, "rounds": 3, "method": "strategy", "offers": [2, 5, 5], "minimums": [3, 10, 4], "decisions": ["reject", "reject", "accept"],
        "valid_offers": [True, True, True], "valid_decisions": [True, False, True],
        "payoffs": {"proposer": [0, 0, 5], "responder": [0, 0, 5]}, "proposer_points": 5, "responder_points": 5,
    }
    m = Ultimatum(UltimatumConfig(pie=10, rounds=3, method="strategy"), Prompts(Ultimatum.prompt_dir)).metrics(outcome)
    assert m["min_share"] == pytest.approx((0.3 + 0.4) / 2)  # the fallback minimum is left out
    assert m["accepted"] == pytest.approx(1 / 3) and m["efficiency"] == pytest.approx(1 / 3) and m["offer_share"] == pytest.approx(0.4)


def test_results_in_words_for_each_side():
    outcome, _, _ = play(Fixed(offer=4), Fixed(minimum=3), pie=10, rounds=2, method="strategy")
    game = Ultimatum(UltimatumConfig(pie=10, rounds=2, method="strategy"), Prompts(Ultimatum.prompt_dir))
    assert game.describe(outcome, "responder") == [
        "Round 1: 4 of 10 points offered against your minimum of 3, accepted.",
        "Round 2: 4 of 10 points offered against your minimum of 3, accepted.",
        "In all you received 8 points and the other player 12.",
    ]
    assert game.describe(outcome, "proposer")[0] == "Round 1: 4 of 10 points offered, accepted."


# strategies under both methods --------------------------------------------------------------------


def _request(phase: str, pie: int, offer: int | None = None, seed: int = 0):
    import random

    from agorabench.games.ultimatum.ultimatum import proposal_type, Response

    kind = {"offer": proposal_type(pie), "respond": Response, "minimum": minimum_type(pie)}[phase]
    role = "proposer" if phase == "offer" else "responder"
    obs = {"pie": pie, "round": 1, "rounds": 1, "history": [], "role": role, **({"offer": offer} if offer is not None else {})}
    return TurnRequest(role, [], Prompt("", obs, phase=phase), kind, 0, random.Random(seed))


@pytest.mark.parametrize("threshold,pie,minimum", [(0.3, 100, 30), (0.14, 100, 14), (0.07, 100, 7), (0.28, 100, 28), (0.3, 10, 3), (0.25, 10, 3), (0.5, 11, 6), (0.0, 7, 0), (1.0, 2, 2), (0.33, 3, 1), (0.34, 3, 2)])
def test_fair_states_the_least_offer_it_would_accept_on_seeing_it(threshold, pie, minimum):
    """The stated minimum is ⌈threshold · pie⌉, and it accepts under the strategy method exactly the
    offers it accepts under the direct method."""
    fair = Fair(threshold=threshold)
    assert least_at_share(threshold, pie) == minimum
    assert fair.decide(_request("minimum", pie)).minimum == minimum
    for offer in range(pie + 1):
        direct = fair.decide(_request("respond", pie, offer)).decision == "accept"
        assert direct == accepts(offer, minimum), (offer, minimum)


@pytest.mark.parametrize("min_offer,pie,minimum", [(1, 100, 1), (0, 10, 0), (5, 10, 5), (50, 10, 10)])
def test_subgame_perfect_and_selfish_state_their_min_offer(min_offer, pie, minimum):
    assert STRATEGIES["selfish"] is SubgamePerfect
    player = SubgamePerfect(min_offer=min_offer)
    assert player.decide(_request("minimum", pie)).minimum == minimum
    assert player.decide(_request("offer", pie)).offer == 1


def test_selfish_pair_under_the_strategy_method_splits_pie_minus_one_and_one():
    outcome, m, table = play(SubgamePerfect(), SubgamePerfect(), pie=100, rounds=3, method="strategy")
    assert outcome["offers"] == [1, 1, 1] and outcome["minimums"] == [1, 1, 1] and outcome["decisions"] == ["accept"] * 3
    assert m["min_share"] == pytest.approx(0.01) and m["responder_payoff"] == pytest.approx(0.01)
    outcome, *_ = play(SubgamePerfect(), Fair(), pie=100, method="strategy")
    assert outcome["minimums"] == [30] and outcome["decisions"] == ["reject"]


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@pytest.mark.parametrize("method", ["direct", "strategy"])
def test_every_strategy_plays_both_seats_under_both_methods(name, method):
    """Each registered strategy, against each other one, finishes 3-round games with only valid
    turns and decisions within the pie."""
    for other in sorted(STRATEGIES):
        for seats in ((name, other), (other, name)):
            outcome, m, table = play(STRATEGIES[seats[0]](), STRATEGIES[seats[1]](), seed=4, pie=20, rounds=3, method=method)
            assert all(t.valid for t in table.turns), (seats, [t.error for t in table.turns])
            assert all(0 <= o <= 20 for o in outcome["offers"])
            if method == "strategy":
                assert all(0 <= x <= 20 for x in outcome["minimums"]) and 0 <= m["min_share"] <= 1
                assert outcome["decisions"] == ["accept" if accepts(o, x) else "reject" for o, x in zip(outcome["offers"], outcome["minimums"])]
            else:
                assert math.isnan(m["min_share"])


def test_random_minimums_are_uniform_over_the_pie_and_seeded():
    runs = [play(UniformRandom(), UniformRandom(), seed=s, pie=10, rounds=10, method="strategy")[0] for s in (1, 1, 2)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    found = [x for r in runs for x in r["minimums"]]
    assert all(0 <= x <= 10 for x in found) and len(set(found)) > 4


def test_the_human_resampler_draws_from_the_moblab_decisions():
    from agorabench.games.ultimatum.humans import moblab_sample

    offers, minimums = set(moblab_sample("offer_share").values), set(moblab_sample("min_share").values)
    outcome, *_ = play(HumanResampler(), HumanResampler(), seed=3, pie=100, rounds=10, method="strategy")
    assert {o / 100 for o in outcome["offers"]} <= offers and {x / 100 for x in outcome["minimums"]} <= minimums
    assert len(set(outcome["offers"])) > 2 and len(set(outcome["minimums"])) > 2
    # direct method: accepts iff the offer reaches a drawn minimum share; the same seed draws the same
    player = HumanResampler()
    shares = [moblab_sample("min_share").draw(_request("respond", 100, 0, seed=s).rng) for s in range(40)]
    for s, share in enumerate(shares):
        for offer in (0, 30, 50, 100):
            assert (player.decide(_request("respond", 100, offer, seed=s)).decision == "accept") == (offer / 100 >= share)


# a person's wording and the conformance checks on strategy-method games -----------------------------


@pytest.mark.parametrize("role", ["proposer", "responder"])
def test_a_person_reads_the_strategy_method_in_words(role):
    game = Ultimatum(UltimatumConfig(pie=10, rounds=2, method="strategy"), Prompts(Ultimatum.prompt_dir), people={role})
    table = Table({"proposer": Fixed(offer=4), "responder": Fixed(minimum=3)}, seed=1)
    outcome = asyncio.run(game.play(table))
    parts = table.parts(role)
    from agorabench.core.table import ANSWER, FORMAT, without

    person = "\n".join(without(p, FORMAT, ANSWER) for p in parts)
    assert MACHINE_WORDS.search(person) is None, person
    if role == "responder":
        assert "Enter the smallest offer you will accept, a whole number from 0 to 10" in person
        assert "an offer below it is rejected (both of you get 0 points this round)" in person
    lines = game.describe(outcome, role)
    assert all(MACHINE_WORDS.search(line) is None and "_" not in line for line in lines)
    # the models' wording stays the models' own
    _, _, models = play(Fixed(offer=4), Fixed(minimum=3), pie=10, rounds=2, method="strategy")
    assert "What is the smallest number of points you will accept?" in models.transcripts["responder"][1]["content"]


def test_the_conformance_checks_hold_for_strategy_method_games():
    """The checks of ``agora conformance`` that play games, on strategy-method games: each strategy
    in each seat (parts join, formats marked, no mark left, no sentences run together, JSON
    outcome, actions parse back), random answers (every rejection recorded), and determinism."""
    config = UltimatumConfig(pie=10, rounds=2, method="strategy")
    for name, factory in STRATEGIES.items():
        for seats in ({"proposer": factory(), "responder": Fair()}, {"proposer": Fair(), "responder": factory()}):
            played = conformance.play("ultimatum", seats, seed=1, config=config)
            assert not played.problems, played.problems
            assert {t.phase for t in played.turns} == {"offer", "minimum"} and all(t.valid for t in played.turns)
            json.dumps(played.outcome)
            for turn in played.turns:
                for message in turn.messages:
                    assert conformance.RUN_TOGETHER.search(message["content"]) is None, message
            for kind in played.asked:
                if "minimum" in kind.model_fields:
                    action = kind(minimum=7)
                    assert kind.parse(action.render()) == action and kind.grammar().startswith("root ::=")
    for seed in conformance.SEEDS:
        played = conformance.play("ultimatum", {"proposer": conformance.RandomPlayer(), "responder": conformance.RandomPlayer()}, seed=seed, config=config)
        assert all(t.valid or t.error for t in played.turns)
    twice = [conformance.play("ultimatum", {"proposer": UniformRandom(), "responder": conformance.RandomPlayer()}, seed=7, config=config) for _ in range(2)]
    assert conformance._dump(twice[0].turns) == conformance._dump(twice[1].turns) and twice[0].outcome == twice[1].outcome
    instructions = asyncio.run(Ultimatum(config, Prompts(Ultimatum.prompt_dir)).instructions(seed=3))
    assert "before you see the offer" in instructions.system["responder"]
    assert "without knowing the responder's minimum" in instructions.system["proposer"]


# a strategy-method study from the command line ---------------------------------------------------

STUDY = """
name = "ultimatum_strategy_e2e"
game = "ultimatum"
matchups = "ordered_pairs"
repeats = 2
seed = 5

[grid]
method = ["direct", "strategy"]

[fixed]
pie = 100
rounds = 2

[[models]]
name = "fair"
spec = "strategy/fair"

[[models]]
name = "sgp"
spec = "strategy/selfish"

[[models]]
name = "people-like"
spec = "strategy/human-resampler"
"""


def test_cli_study_of_both_methods_runs_reports_and_exports(tmp_path):
    study, db, out = tmp_path / "u.toml", str(tmp_path / "u.db"), tmp_path / "report"
    study.write_text(STUDY, encoding="utf-8")
    assert main(["run", str(study), "--db", db, "--quiet"]) == 0
    assert main(["report", str(study), "--db", db, "--out", str(out)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    for title in ("Offers and acceptance", "Acceptance by offered share", "Minimum acceptable offers (strategy method)", "Acceptance curve (strategy method)", "People as the yardstick: ultimatum"):
        assert title in page, title
    assert "min_share" in page and "(not computed)" not in page
    games_csv, turns_csv = tmp_path / "games.csv", tmp_path / "turns.csv"
    assert main(["export", str(study), "--db", db, "--out", str(games_csv)]) == 0
    assert main(["export", str(study), "--db", db, "--table", "turns", "--out", str(turns_csv)]) == 0
    games = list(csv.DictReader(games_csv.open(encoding="utf-8")))
    turns = list(csv.DictReader(turns_csv.open(encoding="utf-8")))
    assert len(games) == 2 * 6 * 2 and len(turns) == len(games) * 4  # 2 methods x 6 ordered pairs x 2 repeats
    strategy = [g for g in games if g["method"] == "strategy"]
    direct = [g for g in games if g["method"] != "strategy"]
    assert len(strategy) == len(direct) == 12
    by_pair = {(g["model_proposer"], g["model_responder"]): g for g in strategy}
    assert float(by_pair["sgp", "fair"]["accepted"]) == 0.0 and float(by_pair["sgp", "fair"]["min_share"]) == 0.3
    assert float(by_pair["fair", "sgp"]["accepted"]) == 1.0 and float(by_pair["fair", "sgp"]["min_share"]) == 0.01
    assert all(g["min_share"] == "" for g in direct)
    assert {t["phase"] for t in turns} == {"offer", "respond", "minimum"} and all(t["valid"] == "True" for t in turns)


def test_report_tables_of_the_strategy_method(tmp_path):
    study, db = tmp_path / "u.toml", str(tmp_path / "u.db")
    study.write_text(STUDY, encoding="utf-8")
    assert main(["run", str(study), "--db", db, "--quiet"]) == 0
    from agorabench.analysis.frames import games_df, turns_df
    from agorabench.games.ultimatum.report import acceptance_curve, minimum_table, seat_table
    from agorabench.store.store import Store

    store = Store(db)
    try:
        games, turns = games_df(store, "ultimatum_strategy_e2e"), turns_df(store, "ultimatum_strategy_e2e", transcripts=False)
    finally:
        store.dispose()
    curve = acceptance_curve(turns).set_index(["model", "offer"])
    # fair states 30 of 100: it turns down offers of 0.0-0.2 and takes 0.3 and up; selfish takes 0.1 and up (1 point)
    assert [curve.loc[("fair", f"{x / 10:.1f}"), "accepting"] for x in range(11)] == [0.0] * 3 + [1.0] * 8
    assert [curve.loc[("sgp", f"{x / 10:.1f}"), "accepting"] for x in range(11)] == [0.0] + [1.0] * 10
    reference = [curve.loc[("human (reference)", f"{x / 10:.1f}"), "accepting"] for x in range(11)]
    assert reference == sorted(reference) and reference[-1] == 1.0 and curve.loc[("human (reference)", "0.5"), "n"] == 5993
    assert curve.loc[("fair", "0.3"), "n"] == 8  # 2 games x 2 rounds as responder against each of 2 proposers
    minimums = minimum_table(games, turns).set_index(["model", "measure"])
    assert minimums.loc[("fair", "min_share (mean over games)"), "mean"] == 0.3
    assert minimums.loc[("sgp", "share at most half"), "mean"] == 1.0 and minimums.loc[("fair", "share at 0"), "mean"] == 0.0
    seats = seat_table(games)
    assert set(seats["method"]) == {"direct", "strategy"}
    assert not ((seats["metric"] == "min_share") & (seats["method"] == "direct")).any()
    rows = families.profile_hook("ultimatum")(games, turns)
    got = {(r.model, r.role, r.measure, r.note): r.estimate for r in rows.itertuples()}
    assert got["fair", "responder", "min_share", "method strategy"] == 0.3
    assert got["subgame-perfect", "responder", "min_share", ""] == pytest.approx(0.01)
