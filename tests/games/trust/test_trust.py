"""Trust game: the rules and payoffs of both methods, fallbacks, the theory its scripted players
must meet, the conformance suite under both methods, a person's wording and form, and a CLI
study run and report end to end."""

from __future__ import annotations

import asyncio
import csv
import itertools
import math
import re

import pytest

from agorabench import families
from agorabench.cli import main
from agorabench.core.game import Prompts
from agorabench.core.table import Reply, Table, TurnRequest
from agorabench.games.trust.humans import BERG_ENDOWMENT, NO_HISTORY, pairs, YARDSTICK
from agorabench.games.trust.strategies import Equalizer, HumanResampler, Reciprocal, Selfish, STRATEGIES, Trusting, UniformRandom
from agorabench.games.trust.trust import back_type, equalising_return, payoffs, plan_type, send_type, Trust, TrustConfig

METHODS = ("direct", "strategy")


class Says:
    """A player that answers the given texts in turn, then the last one again (like a model that
    ignores a bound or the format)."""

    def __init__(self, *texts: str) -> None:
        self.texts, self.seen = list(texts), []

    async def act(self, request: TurnRequest) -> Reply:
        self.seen.append(request)
        return Reply(text=self.texts.pop(0) if len(self.texts) > 1 else self.texts[0])


class Recording:
    """A scripted player that keeps every request it answers (to read back each action with
    the type it was asked with)."""

    def __init__(self, strategy) -> None:
        self.strategy, self.seen = strategy, []

    async def act(self, request: TurnRequest) -> Reply:
        self.seen.append(request)
        return await self.strategy.act(request)


def play(investor, trustee, seed: int = 1, people=frozenset(), **config):
    game = Trust(TrustConfig(**config), Prompts(Trust.prompt_dir), people=people)
    table = Table({"investor": investor, "trustee": trustee}, seed=seed)
    outcome = asyncio.run(game.play(table))
    return outcome, game.metrics(outcome), table


def points(outcome) -> tuple[int, int]:
    return outcome["investor_points"], outcome["trustee_points"]


# --- registration ---------------------------------------------------------------------------------


def test_the_registry_finds_the_game_its_strategies_and_its_human_data():
    assert families.load_game("trust") is Trust
    assert list(families.strategies("trust")) == ["trusting", "reciprocal", "equalizer", "selfish", "random", "human-resampler"]
    assert "sent_share" in families.definitions("trust") and "efficiency" in families.definitions("trust")
    assert families.references("trust") is YARDSTICK
    assert Prompts(Trust.prompt_dir).version == "trust-1"
    assert TrustConfig() == TrustConfig(endowment=10, multiplier=3, trustee_endowment=10, rounds=1, method="direct")


def test_conformance_suite_passes():
    from agorabench.conformance import run

    assert run(["trust"]) == []


def test_conformance_suite_passes_under_the_strategy_method_over_three_rounds(monkeypatch):
    """The strategy method asks one plan type per configuration, so several rounds pass every
    check too (the example is one round of the direct method: family.py says why)."""
    from agorabench.conformance import run

    real = families.examples

    def strategy_examples():
        return {**real(), "trust": {"method": "strategy", "rounds": 3, "endowment": 5}}

    monkeypatch.setattr(families, "examples", strategy_examples)
    from agorabench.conformance import config_of

    assert config_of("trust") == TrustConfig(method="strategy", rounds=3, endowment=5)
    assert run(["trust"]) == []


# --- rules and payoffs -------------------------------------------------------------------------------


@pytest.mark.parametrize("e,m,te,sent,back,expected", [(10, 3, 10, 0, 0, (10, 10)), (10, 3, 10, 4, 6, (12, 16)), (10, 3, 10, 10, 30, (30, 10)), (10, 3, 0, 10, 0, (0, 30)), (7, 2, 3, 5, 4, (6, 9))])
def test_payoff_arithmetic(e, m, te, sent, back, expected):
    assert payoffs(e, m, te, sent, back) == expected
    assert sum(expected) == e + te + (m - 1) * sent  # returning moves points, never makes them


def test_direct_round_pays_what_the_rules_say():
    outcome, m, table = play(Trusting(share=0.4), Reciprocal(share=0.5))
    assert (outcome["sent"], outcome["received"], outcome["returned"]) == ([4], [12], [6])
    assert points(outcome) == (10 - 4 + 6, 10 + 12 - 6)
    assert [(t.role, t.phase) for t in table.turns] == [("investor", "send"), ("trustee", "return")]
    assert table.turns[0].metrics == {"sent_share": 0.4, "round": 1}
    assert table.turns[1].metrics == {"returned_share": 0.5, "invested_share": 0.4, "round": 1}
    assert m == {"sent_share": 0.4, "returned_share": 0.5, "investor_payoff": 1.2, "trustee_payoff": 1.6, "efficiency": pytest.approx(28 / 40)}


def test_nothing_sent_the_trustee_is_not_asked_in_the_direct_method():
    outcome, m, table = play(Selfish(), Says("this must never be read"))
    assert [t.role for t in table.turns] == ["investor"] and "trustee" not in {t.role for t in table.turns}
    assert outcome["returned"] == [0] and outcome["valid_returns"] == [None] and outcome["plans"] == [None]
    assert points(outcome) == (10, 10) and math.isnan(m["returned_share"]) and m["sent_share"] == 0.0


def test_the_strategy_method_asks_the_trustee_first_hand_for_every_amount_and_applies_the_one_sent():
    trustee = Recording(Reciprocal(share=0.5))
    outcome, m, table = play(Trusting(share=0.7), trustee, method="strategy")
    (request,) = trustee.seen
    assert request.prompt.phase == "plan" and "sent" not in request.prompt.observation  # decided before learning it
    assert request.action_type is plan_type(10, 3) and list(request.action_type.model_fields) == [f"back_if_{k}" for k in range(1, 11)]
    assert outcome["plans"] == [[math.floor(1.5 * k) for k in range(1, 11)]]
    assert (outcome["sent"], outcome["received"], outcome["returned"]) == ([7], [21], [10])  # ⌊21 / 2⌋
    assert points(outcome) == (10 - 7 + 10, 10 + 21 - 10)
    noted = table.turns[1].metrics
    assert noted["returned_share"] == pytest.approx(10 / 21) and noted["round"] == 1
    assert noted["planned_share"] == pytest.approx(sum(math.floor(1.5 * k) / (3 * k) for k in range(1, 11)) / 10)
    assert m["returned_share"] == pytest.approx(10 / 21)


def test_the_strategy_method_asks_the_trustee_even_when_nothing_is_sent():
    outcome, m, table = play(Selfish(), Equalizer(), method="strategy")
    assert [(t.role, t.phase) for t in table.turns] == [("investor", "send"), ("trustee", "plan")]
    assert outcome["returned"] == [0] and outcome["plans"][0] == [2 * k for k in range(1, 11)]
    assert "returned_share" not in table.turns[1].metrics and table.turns[1].metrics["planned_share"] == pytest.approx(2 / 3)
    assert points(outcome) == (10, 10) and math.isnan(m["returned_share"])


def test_the_strategy_method_needs_a_short_list_of_amounts():
    TrustConfig(method="strategy", endowment=20)
    with pytest.raises(ValueError, match="at most 20"):
        TrustConfig(method="strategy", endowment=21)
    TrustConfig(method="direct", endowment=1000)
    for bad in ({"rounds": 0}, {"rounds": 11}, {"multiplier": 0}, {"endowment": 0}, {"trustee_endowment": -1}, {"method": "cold"}):
        with pytest.raises(ValueError):
            TrustConfig(**bad)


def test_metrics_over_mixed_rounds():
    outcome = {
        "endowment": 10, "multiplier": 3, "trustee_endowment": 10, "rounds": 4, "method": "direct",
        "sent": [5, 0, 10, 2], "received": [15, 0, 30, 6], "returned": [5, 0, 0, 3],
        "valid_sends": [True, True, True, False], "valid_returns": [True, None, False, True], "plans": [None] * 4,
        "payoffs": {"investor": [10, 10, 0, 11], "trustee": [20, 10, 40, 13]}, "investor_points": 31, "trustee_points": 83,
    }
    m = Trust(TrustConfig(rounds=4), Prompts(Trust.prompt_dir)).metrics(outcome)
    assert m["sent_share"] == pytest.approx((0.5 + 0.0 + 1.0) / 3)  # the fallback send is left out
    assert m["returned_share"] == pytest.approx((5 / 15 + 3 / 6) / 2)  # nothing sent / invalid return: left out
    assert m["investor_payoff"] == pytest.approx(31 / 40) and m["trustee_payoff"] == pytest.approx(83 / 40)
    assert m["efficiency"] == pytest.approx(114 / (4 * 40))


def test_several_rounds_tell_each_result_and_number_the_questions():
    outcome, m, table = play(Trusting(share=0.5), Equalizer(), rounds=3, trustee_endowment=4, endowment=8)
    assert outcome["sent"] == [4, 4, 4] and len(table.turns) == 6
    for role in ("investor", "trustee"):
        text = "\n".join(x["content"] for x in table.transcripts[role])
        assert not re.search(r"\{\{|\}\}|\{%|%\}", text), text
        assert "Round 3 of 3" in text and "Result of round 2" in text and "Result of round 3" not in text
        assert f"Your role: {role}" in table.transcripts[role][0]["content"]
    assert [t.metrics["round"] for t in table.turns] == [1, 1, 2, 2, 3, 3]
    single = "\n".join(x["content"] for x in play(Selfish(), Selfish())[2].transcripts["investor"])
    assert "Round" not in single and "single round" in single


# --- bounds, fallbacks, number fields -----------------------------------------------------------------


def test_a_send_beyond_the_endowment_is_re_asked_then_falls_back_to_nothing():
    investor = Says('{"send": 11}')
    outcome, m, table = play(investor, Reciprocal())
    assert investor.seen[0].messages[-1]["content"].endswith('{"send": <a whole number of points from 0 to 10>}')
    assert "less than or equal to 10" in investor.seen[1].messages[-1]["content"]
    assert len(investor.seen) == 1 + table.max_retries
    assert outcome["sent"] == [0] and outcome["valid_sends"] == [False] and math.isnan(m["sent_share"])
    assert [t.valid for t in table.turns] == [False] and table.turns[0].metrics == {}  # nothing noted for an invalid send


def test_a_return_beyond_what_was_received_falls_back_to_keeping_everything():
    trustee = Says('{"send_back": 13}')
    outcome, m, table = play(Trusting(share=0.4), trustee)
    assert '{"send_back": <a whole number of points from 0 to 12>}' in trustee.seen[0].messages[-1]["content"]
    assert outcome["returned"] == [0] and outcome["valid_returns"] == [False]
    assert points(outcome) == (6, 22) and math.isnan(m["returned_share"])
    assert [t.valid for t in table.turns] == [True, False]


def test_a_quoted_number_is_still_a_number():
    outcome, m, table = play(Trusting(share=0.4), Says('{"send_back": "12"}'))
    assert outcome["returned"] == [12] and m["returned_share"] == 1.0 and all(t.valid for t in table.turns)


def test_a_plan_with_one_amount_out_of_range_falls_back_to_returning_nothing():
    plan = {f"back_if_{k}": k for k in range(1, 11)} | {"back_if_2": 7}  # 7 > 3·2
    trustee = Says(str(plan).replace("'", '"'))
    outcome, m, table = play(Trusting(), trustee, method="strategy")
    assert "back_if_2: Input should be less than or equal to 6" in trustee.seen[1].messages[-1]["content"]
    assert outcome["plans"] == [[0] * 10] and outcome["returned"] == [0] and outcome["valid_returns"] == [False]
    assert points(outcome) == (0, 40) and math.isnan(m["returned_share"])


def test_numbers_are_shown_bare_and_every_bound_reaches_the_schema():
    assert send_type(10).format_instructions() == 'Answer with a JSON object of this form:\n{"send": <a whole number of points from 0 to 10>}'
    assert back_type(30).json_schema()["properties"]["send_back"]["maximum"] == 30
    plan = plan_type(4, 2)
    text = plan.format_instructions()
    assert text.startswith("Answer with a JSON object of this form, one entry for each amount that could be sent:\n{\n")
    assert '  "back_if_1": <if 1 point is sent (you receive 2): points you send back, a whole number from 0 to 2>,' in text
    assert '"back_if_4": <if 4 points are sent (you receive 8)' in text and '"<' not in text
    assert [plan.json_schema()["properties"][f"back_if_{k}"]["maximum"] for k in range(1, 5)] == [2, 4, 6, 8]


@pytest.mark.parametrize("method", METHODS)
def test_every_action_renders_and_parses_back_with_the_type_it_was_asked_with(method):
    players = {"investor": Recording(UniformRandom()), "trustee": Recording(UniformRandom())}
    for seed in range(5):
        play(players["investor"], players["trustee"], seed=seed, method=method, rounds=4)
    requests = players["investor"].seen + players["trustee"].seen
    kinds = {r.action_type for r in requests}  # direct: one return type per amount received
    assert len(kinds) > 2 if method == "direct" else kinds == {send_type(10), plan_type(10, 3)}
    for request in requests:
        action = asyncio.run(UniformRandom().act(request)).action
        assert request.action_type.parse(action.render()) == action


# --- theory with scripted players -------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("e,m,te", [(10, 3, 10), (7, 2, 0), (20, 4, 5)])
def test_selfish_players_end_where_they_started(method, e, m, te):
    outcome, metrics, table = play(Selfish(), Selfish(), endowment=e, multiplier=m, trustee_endowment=te, rounds=2, method=method)
    assert outcome["sent"] == [0, 0] and outcome["returned"] == [0, 0]
    assert outcome["payoffs"] == {"investor": [e, e], "trustee": [te, te]}
    assert metrics["efficiency"] == pytest.approx((e + te) / (m * e + te)) and metrics["sent_share"] == 0.0
    assert all(t.valid for t in table.turns)


@pytest.mark.parametrize("method", METHODS)
def test_against_a_selfish_trustee_every_point_sent_is_lost(method):
    """Each point sent to the selfish trustee costs the investor one point: sending 0 is the
    only best reply, which is what the selfish investor does."""
    kept = {s: points(play(Trusting(share=s / 10), Selfish(), method=method)[0])[0] for s in range(11)}
    assert kept == {s: 10 - s for s in range(11)}
    assert max(kept, key=kept.get) == 0 == play(Selfish(), Selfish(), method=method)[0]["sent"][0]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("share,best", [(0.4, 10), (0.5, 10), (2 / 3, 10), (1.0, 10), (0.2, 0), (0.0, 0)])
def test_a_reciprocal_trustee_above_one_over_the_multiplier_makes_sending_everything_best(method, share, best):
    """Returning r of 3·s gives the investor 10 + (3r − 1)·s (before rounding down): above
    r = 1/3 sending everything is the unique best reply, below it sending nothing."""
    kept = {s: points(play(Trusting(share=s / 10), Reciprocal(share=share), method=method)[0])[0] for s in range(11)}
    top = max(kept.values())
    assert [s for s, v in kept.items() if v == top] == [best], kept


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("e,m,te", [(10, 3, 10), (10, 3, 0), (10, 3, 25), (7, 2, 3), (5, 4, 1)])
def test_the_equalizer_makes_the_payoffs_as_equal_as_they_can_be(method, e, m, te):
    for s in range(e + 1):
        outcome = play(Trusting(share=s / e), Equalizer(), endowment=e, multiplier=m, trustee_endowment=te, method=method)[0]
        gap = abs(outcome["investor_points"] - outcome["trustee_points"])
        best = min(abs(e - s + r - (te + m * s - r)) for r in range(m * s + 1))
        assert gap == best, (s, outcome)
        assert outcome["returned"][0] == equalising_return(e, m, te, s)
    # equal endowments and a multiplier of 3: two thirds of what was received, equal payoffs
    outcome = play(Trusting(share=0.6), Equalizer(), method=method)[0]
    assert outcome["returned"] == [12] and points(outcome) == (16, 16)


def test_the_human_resampler_draws_what_people_did():
    berg = {p.sent for p in pairs(NO_HISTORY)}
    shares = {p.returned / (3 * p.sent) for p in pairs(NO_HISTORY) if p.sent}
    seen = set()
    for seed in range(60):
        outcome, _, table = play(HumanResampler(), Recording(HumanResampler()), seed=seed)
        seen.add(outcome["sent"][0])
        if outcome["sent"][0]:
            received, returned = outcome["received"][0], outcome["returned"][0]
            assert any(math.floor(s * received + 0.5) == returned for s in shares), outcome
    assert seen <= berg and len(seen) >= 6  # amounts someone sent (the endowment is Berg's $10)
    assert BERG_ENDOWMENT == 10
    # under the strategy method one share is drawn for the whole plan
    outcome = play(Trusting(), HumanResampler(), seed=3, method="strategy")[0]
    plan = outcome["plans"][0]
    assert any(all(math.floor(s * 3 * k + 0.5) == plan[k - 1] for k in range(1, 11)) for s in shares), plan


@pytest.mark.parametrize("method", METHODS)
def test_every_strategy_plays_both_methods_in_every_role_it_takes(method):
    for (name, factory), seed in itertools.product(STRATEGIES.items(), (1, 2)):
        for role in ("investor", "trustee"):
            if factory.plays and role not in factory.plays:
                continue
            other = Trusting(share=0.7) if role == "trustee" else Reciprocal()
            seats = {role: factory(), ("trustee" if role == "investor" else "investor"): other}
            outcome, m, table = play(seats["investor"], seats["trustee"], seed=seed, method=method, rounds=2)
            assert all(t.valid for t in table.turns), (name, role)
            assert role in {t.role for t in table.turns}, (name, role)
            assert all(0 <= b <= r for b, r in zip(outcome["returned"], outcome["received"]))


def test_random_players_are_seeded_and_stay_in_bounds():
    runs = [play(UniformRandom(), UniformRandom(), seed=s, rounds=10, method=meth)[0] for meth in METHODS for s in (1, 1, 2)]
    assert runs[0] == runs[1] and runs[0] != runs[2] and runs[3] == runs[4]
    sent = [s for r in runs for s in r["sent"]]
    assert all(0 <= s <= 10 for s in sent) and len(set(sent)) > 5
    plans = [p for r in runs[3:] for p in r["plans"]]
    assert all(0 <= b <= 3 * k for p in plans for k, b in enumerate(p, start=1))


def test_bad_strategy_parameters_are_refused():
    for bad in (-0.1, 1.5, "half", True, math.nan):
        for cls in (Trusting, Reciprocal):
            with pytest.raises(ValueError):
                cls(share=bad)
    assert Reciprocal(share=1).share == 1.0 and Trusting(share=0).share == 0.0


# --- people ------------------------------------------------------------------------------------------


MACHINE_WORDS = re.compile(r"language models?|\bAI\b|\bLLMs?\b|\bmodels?\b|JSON", re.IGNORECASE)


@pytest.mark.parametrize("method", METHODS)
def test_a_person_reads_plain_words_and_models_keep_their_prompts(method):
    """A person in either seat reads the wording of ``prompts/people`` (no model, no answer
    format once the page leaves the format part out); the other seat reads what it reads
    without people."""
    from agorabench.core.table import ANSWER, FORMAT, without

    base = play(Trusting(share=0.5), Reciprocal(), method=method, rounds=2)[2]
    for role in ("investor", "trustee"):
        outcome, _, table = play(Trusting(share=0.5), Reciprocal(), method=method, rounds=2, people=frozenset({role}))
        shown = "\n".join(without(parts, FORMAT, ANSWER) for parts in table.parts(role))
        assert MACHINE_WORDS.search(shown) is None, shown
        assert "participant" in shown and "choose" in shown.lower() and "Round 2 of 2" in shown
        other = "trustee" if role == "investor" else "investor"
        assert table.transcripts[other] == base.transcripts[other]
        game = Trust(TrustConfig(method=method, rounds=2), Prompts(Trust.prompt_dir), people=frozenset({role}))
        told = game.describe(outcome, role)
        assert told and all(MACHINE_WORDS.search(line) is None and "_" not in line for line in told), told


def test_a_persons_forms_carry_each_bound():
    from agorabench.web.forms import form_fields, parse_form

    (send,) = form_fields(send_type(10), "investor")
    assert send.kind == "radio" and send.options == [str(v) for v in range(11)]
    (back,) = form_fields(back_type(30), "trustee")
    assert (back.kind, back.minimum, back.maximum) == ("number", 0, 30)
    plan = form_fields(plan_type(10, 3), "trustee")
    assert [f.name for f in plan] == [f"back_if_{k}" for k in range(1, 11)]
    assert plan[0].label == "If 1 point is sent (you receive 3): points you send back, a whole number from 0 to 3"
    assert [f.kind for f in plan[:3]] == ["radio"] * 3 and plan[3].kind == "number" and plan[9].maximum == 30
    answers = {f"back_if_{k}": str(k) for k in range(1, 11)}
    action, errors = parse_form(plan_type(10, 3), answers | {"back_if_10": "31"}, "trustee")
    assert action is None and errors == ["If 10 points are sent (you receive 30): points you send back, a whole number from 0 to 30: 31 is outside the allowed range; enter a whole number from 0 to 30."]
    assert parse_form(plan_type(10, 3), answers, "trustee")[0].returns() == {k: k for k in range(1, 11)}


def test_results_in_words():
    game = Trust(TrustConfig(rounds=2), Prompts(Trust.prompt_dir))
    outcome, _, _ = play(Trusting(share=0.3), Reciprocal(), rounds=2)
    assert game.describe(outcome, "investor") == [
        "Round 1: the investor sent 3 of 10 points, the trustee received 9 and sent back 4.",
        "Round 2: the investor sent 3 of 10 points, the trustee received 9 and sent back 4.",
        "In all you ended with 22 points and the other player with 30.",
    ]
    single, _, _ = play(Selfish(), Selfish())
    assert Trust(TrustConfig(), Prompts(Trust.prompt_dir)).describe(single, "trustee") == [
        "The investor sent nothing of 10 points, so nothing came back.",
        "In all you ended with 10 points and the other player with 10.",
    ]


# --- a study end to end ---------------------------------------------------------------------------


STUDY = """
name = "trust_e2e"
game = "trust"
matchups = "seats"
repeats = 3
seed = 5
seats = [
  {{ investor = "trusting", trustee = "reciprocal" }},
  {{ investor = "selfish", trustee = "equalizer" }},
  {{ investor = "resampler", trustee = "resampler" }},
]

[grid]
method = ["direct", "strategy"]

[fixed]
rounds = {rounds}

[[models]]
name = "trusting"
spec = "strategy/trusting"
params = {{ share = 0.6 }}

[[models]]
name = "reciprocal"
spec = "strategy/reciprocal"

[[models]]
name = "selfish"
spec = "strategy/selfish"

[[models]]
name = "equalizer"
spec = "strategy/equalizer"

[[models]]
name = "resampler"
spec = "strategy/human-resampler"
"""


def test_cli_run_report_export_and_profile(tmp_path):
    study, db, out = tmp_path / "trust.toml", str(tmp_path / "t.db"), tmp_path / "report"
    study.write_text(STUDY.format(rounds=2), encoding="utf-8")
    assert main(["run", str(study), "--db", db, "--quiet"]) == 0
    assert main(["report", str(study), "--db", db, "--out", str(out)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    for title in ("Sending and returning", "Payoffs by pairing", "Returned share by share sent", "Stated returns by amount (strategy method)"):
        assert title in page, title
    assert "sent_share" in page and "(not computed)" not in page
    assert "People as the yardstick: trust" in page and "berg1995" in page  # the generic comparison with Berg et al.'s pairs
    games_csv, turns_csv = tmp_path / "games.csv", tmp_path / "turns.csv"
    assert main(["export", str(study), "--db", db, "--out", str(games_csv)]) == 0
    assert main(["export", str(study), "--db", db, "--table", "turns", "--out", str(turns_csv)]) == 0
    games = list(csv.DictReader(games_csv.open(encoding="utf-8")))
    turns = list(csv.DictReader(turns_csv.open(encoding="utf-8")))
    assert len(games) == 3 * 2 * 3  # seatings x methods x repeats
    by = {(g["model_investor"], g["model_trustee"], g["method"]): g for g in games}
    for method in METHODS:  # the theory of each scripted pairing, under both methods
        g = by["trusting", "reciprocal", method]
        assert float(g["sent_share"]) == 0.6 and float(g["returned_share"]) == pytest.approx(9 / 18)
        g = by["selfish", "equalizer", method]
        assert float(g["sent_share"]) == 0.0 and g["returned_share"] in ("", "nan") and float(g["efficiency"]) == pytest.approx(0.5)
    asked = {(t["game_id"], t["role"], t["phase"]) for t in turns}
    for g in games:  # the selfish investor sends nothing: its direct trustee is never asked
        trustee = {phase for game, role, phase in asked if game == g["game_id"] and role == "trustee"}
        expected = {"plan"} if g["method"] == "strategy" else (set() if g["model_investor"] == "selfish" else {"return"})
        assert trustee == expected or g["model_investor"] == "resampler" and trustee <= {"return"}, (g, trustee)
    assert all(t["valid"] == "True" for t in turns)

    from agorabench.analysis.frames import games_df, turns_df
    from agorabench.store.store import Store

    store = Store(db)
    try:
        rows = families.profile_hook("trust")(games_df(store, "trust_e2e"), turns_df(store, "trust_e2e", transcripts=False))
    finally:
        store.dispose()
    got = {(r.model, r.role, r.measure): r.estimate for r in rows.itertuples()}
    assert got["trusting", "investor", "sent_share"] == pytest.approx(0.6) and got["selfish", "investor", "sent_share"] == 0.0
    assert got["reciprocal", "trustee", "returned_share"] == pytest.approx(0.5)
    assert got["selfish", "investor", "investor_payoff"] == 1.0 and got["selfish", "trustee", "trustee_payoff"] == 1.0


def test_the_stated_returns_table_reads_each_amount():
    import pandas as pd

    from agorabench.games.trust.report import returned_by_sent, stated_returns

    turns = pd.DataFrame({
        "role": ["trustee"] * 3, "phase": ["plan"] * 3, "valid": [True, True, False], "model": ["m", "m", "m"], "multiplier": [3] * 3,
        "action_back_if_1": [3, 0, 3], "action_back_if_2": [2, 4, 6],
    })
    table = stated_returns(turns).set_index("amount sent")
    assert table.loc[1, "stated return share"] == 0.5 and table.loc[1, "returns nothing"] == 0.5 and table.loc[1, "plans"] == 2
    assert table.loc[2, "stated return share"] == pytest.approx((2 / 6 + 4 / 6) / 2)
    direct = pd.DataFrame({
        "role": ["trustee"] * 4, "phase": ["return"] * 4, "valid": [True] * 4, "model": ["m"] * 4,
        "returned_share": [0.0, 0.5, 1.0, 0.2], "invested_share": [0.1, 0.15, 1.0, 0.5],
    })
    bands = returned_by_sent(direct).set_index("share sent")
    assert bands["n"].to_dict() == {"0.1–0.2": 2, "0.5–0.6": 1, "0.9–1.0": 1}
    assert bands.loc["0.1–0.2", "returned share"] == 0.25
