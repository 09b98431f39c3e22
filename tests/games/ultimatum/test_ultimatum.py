"""Ultimatum game: the rules against theory, fallbacks, prompts, a CLI run end to end, and the
claim it exists to prove: a new game family needs its own folder and no line anywhere else."""

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
from agorabench.core.game import Prompts
from agorabench.core.table import Prompt, Reply, Table, TurnRequest
from agorabench.games.ultimatum.strategies import Fair, STRATEGIES, SubgamePerfect, UniformRandom
from agorabench.games.ultimatum.ultimatum import payoffs, Proposal, proposal_type, Response, Ultimatum, UltimatumConfig


class Says:
    """A player that always answers the same text (like a model that ignores the format)."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def act(self, request: TurnRequest) -> Reply:
        return Reply(text=self.text)


def play(proposer, responder, seed: int = 1, **config):
    game = Ultimatum(UltimatumConfig(**config), Prompts(Ultimatum.prompt_dir))
    table = Table({"proposer": proposer, "responder": responder}, seed=seed)
    outcome = asyncio.run(game.play(table))
    return outcome, game.metrics(outcome), table


def test_the_registry_finds_the_game_and_its_strategies():
    assert families.load_game("ultimatum") is Ultimatum
    assert set(families.strategies("ultimatum")) == {"subgame-perfect", "fair", "random", "selfish", "human-resampler"}
    assert "offer_share" in families.definitions("ultimatum")
    assert Prompts(Ultimatum.prompt_dir).version == "ultimatum-1"


@pytest.mark.parametrize("pie", [2, 10, 100, 1001])
def test_subgame_perfect_pair_splits_pie_minus_one_and_one(pie):
    outcome, m, table = play(SubgamePerfect(), SubgamePerfect(), pie=pie, rounds=3)
    assert outcome["offers"] == [1, 1, 1] and outcome["decisions"] == ["accept"] * 3
    assert outcome["payoffs"] == {"proposer": [pie - 1] * 3, "responder": [1] * 3}
    assert m["offer_share"] == pytest.approx(1 / pie) and m["responder_payoff"] == pytest.approx(1 / pie)
    assert m["proposer_payoff"] == pytest.approx(1 - 1 / pie) and m["accepted"] == 1.0 and m["efficiency"] == 1.0
    assert all(t.valid for t in table.turns) and len(table.turns) == 6


def test_subgame_perfect_responder_accepts_from_its_minimum():
    assert play(SubgamePerfect(), SubgamePerfect(min_offer=2), pie=10)[0]["decisions"] == ["reject"]
    assert play(Fair(), SubgamePerfect(min_offer=5), pie=10)[0]["decisions"] == ["accept"]  # 5 >= 5
    assert play(Fair(), SubgamePerfect(min_offer=6), pie=10)[0]["decisions"] == ["reject"]


@pytest.mark.parametrize(
    "pie,threshold,accepted",
    [(100, 0.3, True), (100, 0.5, True), (100, 0.51, False), (10, 0.5, True), (11, 0.5, False), (11, 0.45, True), (7, 0.0, True), (2, 1.0, False)],
)
def test_fair_proposer_against_a_threshold_responder(pie, threshold, accepted):
    """The fair proposer offers pie // 2; the responder accepts iff (pie // 2) / pie >= threshold."""
    outcome, m, _ = play(Fair(), Fair(threshold=threshold), pie=pie)
    offer = pie // 2
    assert outcome["offers"] == [offer]
    assert outcome["decisions"] == ["accept" if accepted else "reject"]
    assert (offer / pie >= threshold) == accepted  # the table above agrees with the rule
    assert m["accepted"] == float(accepted)
    assert m["responder_payoff"] == pytest.approx(offer / pie if accepted else 0.0)


@pytest.mark.parametrize("threshold,offer", [(0.3, 30), (0.14, 14), (0.07, 7), (0.28, 28)])
def test_fair_threshold_is_exact_at_the_boundary(threshold, offer):
    """An offer of exactly threshold · pie is accepted, though e.g. 0.14 * 100 is
    14.000000000000002 in floating point; one point less is rejected."""
    responder = Fair(threshold=threshold)
    for amount, decision in ((offer, "accept"), (offer - 1, "reject")):
        request = TurnRequest("responder", [], _prompt({"pie": 100, "offer": amount}), Response, 0, None)
        assert responder.decide(request).decision == decision, amount
    outcome, *_ = play(SubgamePerfect(), responder, pie=100)
    assert outcome["decisions"] == ["reject"]  # 1 < every threshold above


def _prompt(observation):
    return Prompt("", observation, phase="respond")


@pytest.mark.parametrize("pie,offer,accepted,expected", [(100, 0, True, (100, 0)), (100, 30, True, (70, 30)), (100, 100, True, (0, 100)), (100, 30, False, (0, 0)), (9, 4, True, (5, 4))])
def test_payoff_arithmetic(pie, offer, accepted, expected):
    assert payoffs(pie, offer, accepted) == expected


def test_metrics_over_mixed_rounds():
    outcome = {
        "pie": 10, "rounds": 4, "offers": [2, 5, 5, 0], "decisions": ["reject", "accept", "accept", "accept"],
        "valid_offers": [True, True, False, True], "valid_decisions": [True] * 4,
        "payoffs": {"proposer": [0, 5, 5, 10], "responder": [0, 5, 5, 0]}, "proposer_points": 20, "responder_points": 10,
    }
    m = Ultimatum(UltimatumConfig(pie=10, rounds=4), Prompts(Ultimatum.prompt_dir)).metrics(outcome)
    assert m["offer_share"] == pytest.approx((0.2 + 0.5 + 0.0) / 3)  # the fallback offer is left out
    assert m == {**m, "accepted": 0.75, "proposer_payoff": 0.5, "responder_payoff": 0.25, "efficiency": 0.75}


def test_nonsense_offer_falls_back_to_the_equal_split_and_is_recorded_invalid():
    outcome, m, table = play(Says("I would rather keep it all, thanks."), SubgamePerfect(), pie=11)
    first = table.turns[0]
    assert first.role == "proposer" and not first.valid and first.error and first.action is None
    assert outcome["offers"] == [5] and outcome["valid_offers"] == [False]  # 11 // 2
    assert outcome["decisions"] == ["accept"] and outcome["payoffs"] == {"proposer": [6], "responder": [5]}
    assert math.isnan(m["offer_share"]) and m["accepted"] == 1.0


def test_offer_beyond_the_pie_is_invalid():
    outcome, _, table = play(Says('{"offer": 150}'), Fair(), pie=100)
    assert not table.turns[0].valid and "100" in table.turns[0].error
    assert outcome["offers"] == [50]
    with pytest.raises(Exception):
        proposal_type(100).parse('{"offer": -1}')
    assert proposal_type(100).parse('Sure. {"offer": 40}').offer == 40


def test_nonsense_decision_falls_back_to_reject_and_is_recorded_invalid():
    outcome, m, table = play(Fair(), Says("maybe?"), pie=100, rounds=2)
    responder_turns = [t for t in table.turns if t.role == "responder"]
    assert len(responder_turns) == 2 and not any(t.valid for t in responder_turns)
    assert all(t.error and t.retries == table.max_retries for t in responder_turns)
    assert outcome["decisions"] == ["reject", "reject"] and outcome["valid_decisions"] == [False, False]
    assert m["accepted"] == 0.0 and m["efficiency"] == 0.0 and m["offer_share"] == 0.5


def test_random_strategy_is_seeded_and_stays_in_bounds():
    runs = [play(UniformRandom(), UniformRandom(), seed=s, pie=10, rounds=10)[0] for s in (1, 1, 2)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    offers = [o for r in runs for o in r["offers"]]
    assert all(0 <= o <= 10 for o in offers) and len(set(offers)) > 3
    decisions = [d for r in runs for d in r["decisions"]]
    assert {"accept", "reject"} == set(decisions)


def test_bad_strategy_parameters_are_refused():
    for bad in (-0.1, 1.5, "half", True):
        with pytest.raises(ValueError):
            Fair(threshold=bad)
    for bad in (-1, 1.5, "1"):
        with pytest.raises(ValueError):
            SubgamePerfect(min_offer=bad)
    with pytest.raises(ValueError):
        UltimatumConfig(pie=1)
    with pytest.raises(ValueError):
        UltimatumConfig(rounds=11)


def test_prompts_render_fully_with_the_pie_and_the_answer_format():
    outcome, _, table = play(Fair(), Fair(), pie=37, rounds=2)
    for role in ("proposer", "responder"):
        text = "\n".join(m["content"] for m in table.transcripts[role])
        assert not re.search(r"\{\{|\}\}|\{%|%\}", text), text
        assert "37" in text and "Round 2 of 2" in text
        assert f"Your role: {role}" in table.transcripts[role][0]["content"]
        assert "Result of round 1" in text  # told between rounds
    proposer = table.transcripts["proposer"][1]["content"]
    assert '{"offer": <a whole number of points from 0 to 37>}' in proposer
    responder = table.transcripts["responder"][1]["content"]
    assert "offers you 18 of the 37 points and would keep 19" in responder
    assert '{"decision": "accept"} or {"decision": "reject"}' in responder
    # one round: no round counter, no result message
    _, _, single = play(Fair(), Fair(), pie=100, rounds=1)
    text = "\n".join(m["content"] for m in single.transcripts["responder"])
    assert "Round" not in text and "single round" in text


def test_actions_render_and_parse_back():
    kind = proposal_type(100)
    assert issubclass(kind, Proposal) and kind is proposal_type(100)
    for action in (kind(offer=0), kind(offer=100), Response(decision="accept"), Response(decision="reject")):
        assert type(action).parse(action.render()) == action
    assert Response.parse('{"decision": " Accept. "}').decision == "accept"


def test_acceptance_by_offered_share_bands_hold_their_lower_end_and_the_whole_pie():
    import pandas as pd

    from agorabench.games.ultimatum.report import acceptance_by_offer

    shares = [0.0, 0.099, 0.1, 0.3, 0.3, 1.0, 0.5]
    turns = pd.DataFrame({
        "role": ["responder"] * 6 + ["proposer"], "valid": [True] * 7, "model": "m",
        "offered_share": shares, "accepted": [0.0, 1.0, 1.0, 1.0, 0.0, 1.0, None],
    })
    table = acceptance_by_offer(turns).set_index("offered share")
    assert table["n"].to_dict() == {"0.0–0.1": 2, "0.1–0.2": 1, "0.3–0.4": 2, "0.9–1.0": 1}
    assert table.loc["0.3–0.4", "acceptance rate"] == 0.5 and table.loc["0.9–1.0", "acceptance rate"] == 1.0


STUDY = """
name = "ultimatum_e2e"
game = "ultimatum"
matchups = "ordered_pairs"
repeats = 2
seed = 3

[fixed]
pie = 100
rounds = 2

[[models]]
name = "fair"
spec = "strategy/fair"

[[models]]
name = "sgp"
spec = "strategy/subgame-perfect"
"""


def test_cli_run_report_and_export(tmp_path, capsys):
    study, db, out = tmp_path / "ultimatum.toml", str(tmp_path / "u.db"), tmp_path / "report"
    study.write_text(STUDY, encoding="utf-8")
    assert main(["run", str(study), "--db", db, "--quiet"]) == 0
    assert main(["report", str(study), "--db", db, "--out", str(out)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Offers and acceptance" in page and "Acceptance by offered share" in page and "offer_share" in page
    assert "(not computed)" not in page
    games_csv, turns_csv = tmp_path / "games.csv", tmp_path / "turns.csv"
    assert main(["export", str(study), "--db", db, "--out", str(games_csv)]) == 0
    assert main(["export", str(study), "--db", db, "--table", "turns", "--out", str(turns_csv)]) == 0
    games = list(csv.DictReader(games_csv.open(encoding="utf-8")))
    turns = list(csv.DictReader(turns_csv.open(encoding="utf-8")))
    assert len(games) == 4 and len(turns) == 4 * 2 * 2  # 2 ordered pairs x 2 repeats; 2 rounds x 2 turns
    # the stored games match the theory of each pairing
    by_pair = {(g["model_proposer"], g["model_responder"]): g for g in games}
    assert float(by_pair["sgp", "fair"]["accepted"]) == 0.0  # 1 of 100 is below the 0.3 threshold
    assert float(by_pair["fair", "sgp"]["offer_share"]) == 0.5 and float(by_pair["fair", "sgp"]["accepted"]) == 1.0
    assert all(t["valid"] == "True" for t in turns)


def test_profile_rows_carry_each_seat_and_the_theory(tmp_path):
    study, db = tmp_path / "ultimatum.toml", str(tmp_path / "u.db")
    study.write_text(STUDY, encoding="utf-8")
    assert main(["run", str(study), "--db", db, "--quiet"]) == 0
    from agorabench.analysis.frames import games_df, turns_df
    from agorabench.store.store import Store

    store = Store(db)
    try:
        rows = families.profile_hook("ultimatum")(games_df(store, "ultimatum_e2e"), turns_df(store, "ultimatum_e2e", transcripts=False))
    finally:
        store.dispose()
    got = {(r.model, r.role, r.measure): r.estimate for r in rows.itertuples()}
    assert got["fair", "proposer", "offer_share"] == 0.5 and got["sgp", "proposer", "offer_share"] == pytest.approx(0.01)
    assert got["fair", "responder", "accepted"] == 0.0 and got["sgp", "responder", "accepted"] == 1.0
    assert got["subgame-perfect", "proposer", "offer_share"] == pytest.approx(0.01)


def test_conformance_suite_passes():
    from agorabench import conformance

    assert conformance.run(["ultimatum"]) == []


#: A reference to this game in code: its registry key as a string, its package path, an import.
#: (Prose may use the word: ``analysis/acceptance.py`` cites Fehr & Schmidt's ultimatum-game
#: rejection threshold in a docstring, which names no game of agorabench.)
REFERENCE = re.compile(rb"[\"']ultimatum[\"'.:/]|games[./\\]ultimatum|import\s+ultimatum|\.ultimatum\b", re.I)


def test_no_file_outside_the_game_folder_refers_to_the_game():
    """The family is added by its folder alone: no other file of the package refers to it."""
    root = Path(agorabench.__file__).parent
    own = root / "games" / "ultimatum"
    # code, templates and data the package reads; a model's vocabulary (a tokenizer's word list) names words, not games
    files = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.name != "tokenizer.json"]
    assert any(own in p.parents for p in files) and any(REFERENCE.search(p.read_bytes()) for p in own.rglob("*.py"))
    named = [str(p.relative_to(root)) for p in files if own not in p.parents and REFERENCE.search(p.read_bytes())]
    assert named == []
    assert set(STRATEGIES) <= set(families.strategies("ultimatum"))
