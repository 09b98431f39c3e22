"""The investment game of ``tests/support/investment`` (a trust game, the second worked example of
``docs/adding-a-game.md``), registered for these tests only as a family from another
distribution would be: through an entry point of the group ``agorabench.families``. It passes
every conformance check, its scripted players meet the theory (a selfish trustee returns 0, so
the rational investor sends 0), and the guide's claims about bounds, number fields, strategy
parameters and the report helpers hold for it."""

from __future__ import annotations

import asyncio
import math
from contextlib import contextmanager
from importlib.metadata import EntryPoint
from typing import Iterator

import pandas as pd
import pytest

from agorabench import families
from agorabench.conformance import CHECKS, check, run
from agorabench.core.actions import Action
from agorabench.core.game import Prompts
from agorabench.core.table import Reply, Table, TurnRequest
from support.investment.report import pairing_table, seat_table, sections
from support.investment.strategies import STRATEGIES, Reciprocal, Selfish, SubgamePerfect, Trusting, UniformRandom
from support.investment.investment import InvestmentConfig, InvestmentGame, investment_type, repayment_type

#: The stand-in entry point: what a distribution shipping the family would declare.
ENTRY = EntryPoint(name="investment", value="support.investment.family:FAMILY", group=families.ENTRY_POINTS)


@contextmanager
def registered_investment() -> Iterator[None]:
    """The investment family registered while inside: ``families.entry_points`` also yields
    :data:`ENTRY`, and the registry's cache is cleared on the way in and out (``families()`` is
    ``lru_cache``d), so every other test sees the registry as it was."""
    real = families.entry_points

    def with_investment(*, group: str):
        found = list(real(group=group))
        return found + [ENTRY] if group == families.ENTRY_POINTS else found

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(families, "entry_points", with_investment)
        families.families.cache_clear()
        try:
            yield
        finally:
            patch.undo()
            families.families.cache_clear()


@pytest.fixture(scope="module")
def investment() -> Iterator[None]:
    with registered_investment():
        yield


class Says:
    """A player that answers the same texts in turn, then the last one again (like a model
    that ignores a bound)."""

    def __init__(self, *texts: str) -> None:
        self.texts, self.seen = list(texts), []

    async def act(self, request: TurnRequest) -> Reply:
        self.seen.append(request)
        return Reply(text=self.texts.pop(0) if len(self.texts) > 1 else self.texts[0])


def play(investor, trustee, **config):
    game = InvestmentGame(InvestmentConfig(**config), Prompts(InvestmentGame.prompt_dir))
    table = Table({"investor": investor, "trustee": trustee}, seed=1)
    outcome = asyncio.run(game.play(table))
    return outcome, game.metrics(outcome), table


# --- registration and conformance -------------------------------------------------------------


def test_investment_is_registered_only_inside_the_fixture():
    assert "investment" not in families.game_names()
    with registered_investment():
        assert "investment" in families.game_names()
        family = families.family_of("investment")
        assert family.package == "support.investment"  # the relative names resolve inside the fixture
        assert families.load_game("investment") is InvestmentGame
        assert list(families.strategies("investment")) == ["trusting", "reciprocal", "selfish", "subgame-perfect", "random"]
        assert "sent_share" in families.definitions("investment")
    assert "investment" not in families.game_names()
    with pytest.raises(families.UnknownGame):
        families.family_of("investment")
    with pytest.raises(RuntimeError), registered_investment():  # a failing test leaves no family behind
        assert "investment" in families.game_names()
        raise RuntimeError("the test failed")
    assert "investment" not in families.game_names()


def test_investment_conformance_passes_every_check_on_the_class_unregistered():
    """``check`` takes the class, a configuration and the strategies: no entry point needed.
    Only ``report`` plays a study through the registry, so it is left out (with a warning)."""
    assert list(CHECKS) == ["roles", "strategies", "instructions", "prompts", "random", "deterministic", "outcome", "actions", "report"]
    assert "investment" not in families.game_names()
    result = check(InvestmentGame, InvestmentConfig(endowment=10, multiplier=3), STRATEGIES)
    assert result.failed == []
    assert result.warnings == ["report: not run (the class is not registered under its name; the report check plays a study through the registry)"]


def test_investment_report_check_passes_registered(investment):
    assert run(["investment"], ["report"]) == []


def test_investment_journey_defaults_fill_from_the_manifest(investment):
    journey = families.journey("investment")
    assert journey["role"] == "investor" and journey["opponent"] == "reciprocal"
    assert journey["config"] == {"endowment": 10, "multiplier": 3}


# --- theory, with scripted players --------------------------------------------------------------


@pytest.mark.parametrize("endowment,multiplier", [(10, 3), (7, 2), (1000, 3)])
def test_subgame_perfect_investor_sends_nothing_to_a_selfish_trustee(endowment, multiplier):
    outcome, m, table = play(SubgamePerfect(), Selfish(), endowment=endowment, multiplier=multiplier)
    assert (outcome["sent"], outcome["returned"]) == (0, 0)
    assert (outcome["investor_points"], outcome["trustee_points"]) == (endowment, 0)
    assert [t.role for t in table.turns] == ["investor"]  # nothing received: the trustee is not asked
    assert m["sent_share"] == 0 and math.isnan(m["returned_share"])
    assert m["efficiency"] == pytest.approx(1 / multiplier)


def test_against_a_selfish_trustee_every_point_sent_is_lost():
    """The investor's points against the selfish trustee fall by one per point sent, so sending
    0 (what the subgame-perfect investor does) is the only best reply."""
    endowment = 10
    kept = {}
    for send in range(endowment + 1):
        outcome, m, table = play(Trusting(share=send / endowment), Selfish(), endowment=endowment, multiplier=3)
        assert outcome["sent"] == send and outcome["returned"] == 0
        kept[send] = outcome["investor_points"]
        assert all(t.valid for t in table.turns)
    assert kept == {s: endowment - s for s in kept}
    best = max(kept, key=kept.get)
    assert best == 0 == play(SubgamePerfect(), Selfish(), endowment=endowment)[0]["sent"]


def test_a_reciprocal_trustee_turns_the_best_reply_around():
    """Returning a share r of 3·send gives the investor endowment + (3r − 1)·send: above r = 1/3
    sending everything is best, below it sending nothing, as the theory says."""
    for share, best in ((0.5, 10), (0.2, 0)):
        kept = {s: play(Trusting(share=s / 10), Reciprocal(share=share), endowment=10, multiplier=3)[0]["investor_points"] for s in range(11)}
        assert max(kept, key=kept.get) == best, (share, kept)
    outcome, m, _ = play(Trusting(), Reciprocal(), endowment=10, multiplier=3)
    assert (outcome["sent"], outcome["received"], outcome["returned"]) == (10, 30, 15)
    assert (outcome["investor_points"], outcome["trustee_points"]) == (15, 15) and m["efficiency"] == 1.0


def test_random_strategy_stays_within_the_bounds():
    for seed in range(20):
        game = InvestmentGame(InvestmentConfig(endowment=5), Prompts(InvestmentGame.prompt_dir))
        table = Table({"investor": UniformRandom(), "trustee": UniformRandom()}, seed=seed)
        outcome = asyncio.run(game.play(table))
        assert 0 <= outcome["sent"] <= 5 and 0 <= outcome["returned"] <= outcome["received"]
        assert all(t.valid for t in table.turns)


# --- bounds, number fields, the form ------------------------------------------------------------


def test_the_bound_reaches_the_prompt_the_reask_and_the_fallback():
    investor = Says('{"send": 11}')
    outcome, m, table = play(investor, Selfish(), endowment=10)
    asked = investor.seen[0].messages[-1]["content"]
    assert asked.endswith('Answer with a JSON object of this form:\n{"send": <a whole number of points from 0 to 10>}')
    reask = investor.seen[1].messages[-1]["content"]
    assert reask.startswith("Your answer could not be used: The answer is not a valid action: send: Input should be less than or equal to 10")
    assert len(investor.seen) == 3  # two re-asks (the table's default), then the fallback
    assert outcome["sent"] == 0 and not outcome["send_valid"] and math.isnan(m["sent_share"])
    assert [t.valid for t in table.turns] == [False]


def test_the_trustee_bound_is_what_was_received():
    trustee = Says('{"repay": 13}', '{"repay": "12"}')
    outcome, m, table = play(Trusting(share=0.4), trustee, endowment=10, multiplier=3)
    assert '{"repay": <a whole number of points from 0 to 12>}' in trustee.seen[0].messages[-1]["content"]
    assert "less than or equal to 12" in trustee.seen[1].messages[-1]["content"]
    assert outcome["returned"] == 12 and m["returned_share"] == 1.0  # a quoted number still parses
    assert [t.valid for t in table.turns] == [True, True] and table.turns[1].retries == 1


def test_numbers_are_shown_bare_where_the_default_json_line_quotes_them():
    bounded = investment_type(10)
    assert bounded.format_instructions() == 'Answer with a JSON object of this form:\n{"send": <a whole number of points from 0 to 10>}'
    default = Action.format_instructions.__func__(bounded)  # the JSON line every Action gets by default
    assert default == 'Answer with a JSON object of this form:\n{"send": "a whole number of points from 0 to 10"}'
    assert bounded.json_schema()["properties"]["send"]["maximum"] == 10


def test_a_persons_form_carries_the_bound_and_refuses_beyond_it():
    from agorabench.web.forms import form_fields, parse_form

    (small,) = form_fields(investment_type(10), "investor")
    assert small.kind == "radio" and small.options == [str(v) for v in range(11)]  # 0..10: a row of choices
    (large,) = form_fields(investment_type(100), "investor")
    assert (large.kind, large.minimum, large.maximum, large.step) == ("number", 0, 100, "1")
    action, errors = parse_form(investment_type(100), {"send": "150"}, "investor")
    assert action is None and errors == ["A whole number of points from 0 to 100: 150 is outside the allowed range; enter a whole number from 0 to 100."]
    assert parse_form(repayment_type(30), {"repay": "30"})[0] == repayment_type(30)(repay=30)


# --- strategy parameters from a study file --------------------------------------------------------


STUDY = """
name = "investment_params"
game = "investment"
matchups = "seats"
repeats = 2
seats = [{{ investor = "generous", trustee = "halver" }}]

[fixed]
endowment = 10
multiplier = 3

[[models]]
name = "generous"
spec = "strategy/trusting"
params = {{ share = 0.6 }}

[[models]]
name = "halver"
spec = "strategy/reciprocal"
params = {{ share = {share} }}
"""


def test_strategy_parameters_come_from_the_study_file(investment, tmp_path):
    from agorabench.analysis.frames import games_df
    from agorabench.core.runner import StudyError, run_study
    from agorabench.core.study import load_study
    from agorabench.store.store import Store

    path = tmp_path / "investment.toml"
    path.write_text(STUDY.format(share=0.5), encoding="utf-8")
    stats, _ = run_study(load_study(path), tmp_path / "t.db", progress=False)
    assert stats.done == 2 and stats.errors == 0
    store = Store(str(tmp_path / "t.db"), read_only=True)
    try:
        games = games_df(store, "investment_params")
    finally:
        store.dispose()
    assert list(games["sent"]) == [6, 6] and list(games["returned"]) == [9, 9]  # ⌊0.5 · 18⌋
    assert set(games["model_investor"]) == {"generous"}
    path.write_text(STUDY.format(share=2), encoding="utf-8")
    with pytest.raises(StudyError, match=r"strategy/reciprocal: bad parameters \{'share': 2\}: share must be a number from 0 to 1, not 2"):
        run_study(load_study(path), tmp_path / "bad.db", progress=False)


# --- report helpers ------------------------------------------------------------------------------------


def test_the_seat_table_pools_people_as_human():
    """Frames pool every ``human:<pseudonym>`` seat as the one model ``human``
    (``frames.analysis_model``); ``summarise`` then gives one ``human`` row, its interval
    clustered by participant."""
    from agorabench.analysis.frames import pool_people

    games = pd.DataFrame(
        {
            "model_investor": ["human:p1", "human:p1", "human:p2", "local"],
            "model_trustee": ["local"] * 4,
            "sent_share": [0.2, 0.4, 1.0, 0.5],
            "returned_share": [0.5, 0.5, 0.3, math.nan],
            "investor_payoff": [1.2, 1.4, 1.9, 1.0],
            "trustee_payoff": [0.3, 0.6, 1.1, 1.5],
            "efficiency": [0.5, 2 / 3, 1.0, 5 / 6],
        }
    )
    pooled = pool_people(games)
    assert list(pooled["participant_investor"][:3]) == ["human:p1", "human:p1", "human:p2"] and pd.isna(pooled["participant_investor"][3])
    table = seat_table(pooled)
    investors = table[table["seat"] == "investor"].set_index("model")
    assert sorted(investors.index) == ["human", "local"]
    assert investors.loc["human", "n"] == 3 and investors.loc["human", "mean"] == pytest.approx(1.6 / 3)
    assert 0 <= investors.loc["human", "low"] <= investors.loc["human", "high"] <= 1
    pairs = pairing_table(pooled).set_index("investor")
    assert sorted(pairs.index) == ["human", "local"] and pairs.loc["human", "games"] == 3
    assert pairs.loc["human", "investor_payoff"] == pytest.approx(4.5 / 3)
    assert [s.title for s in sections(pooled, pd.DataFrame())] == ["Sending and returning", "Payoffs by pairing"]


def test_a_person_reads_no_word_of_models_and_the_same_text_as_a_model():
    """The fixture needs no ``people/`` templates: its texts and results never speak of models,
    so a person in either seat is shown the models' texts unchanged (a page leaves out the
    format part, which the form replaces)."""
    texts = {}
    for people in (frozenset(), frozenset({"investor", "trustee"})):
        game = InvestmentGame(InvestmentConfig(), Prompts(InvestmentGame.prompt_dir), people=people)
        table = Table({"investor": Trusting(), "trustee": Reciprocal()}, seed=1)
        outcome = asyncio.run(game.play(table))
        texts[people] = [m["content"] for role in ("investor", "trustee") for m in table.transcripts[role]]
        for role in ("investor", "trustee"):
            assert "model" not in " ".join(texts[people] + game.describe(outcome, role)).lower()
    assert texts[frozenset()] == texts[frozenset({"investor", "trustee"})]
