"""Dictator game: the rules and payoffs, the fallback, the two framings, the strategies against
theory (Fehr–Schmidt's best reply), parameter errors, conformance, and a study run through the
CLI end to end with its report."""

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
from agorabench.games.dictator.dictator import Dictator, DictatorConfig, gift_type, payoffs
from agorabench.games.dictator.strategies import Altruist, Equal, FehrSchmidt, HumanResampler, Selfish, STRATEGIES, UniformRandom


class Says:
    """A player that always answers the same text (like a model that ignores the format)."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def act(self, request: TurnRequest) -> Reply:
        return Reply(text=self.text)


def play(dictator, seed: int = 1, people=frozenset(), **config):
    game = Dictator(DictatorConfig(**config), Prompts(Dictator.prompt_dir), people=people)
    table = Table({"dictator": dictator}, seed=seed)
    outcome = asyncio.run(game.play(table))
    return outcome, game.metrics(outcome), table


def request(endowment: int) -> TurnRequest:
    return TurnRequest("dictator", [], Prompt("", {"endowment": endowment}, phase="give"), gift_type(endowment), 0, None)


def test_the_registry_finds_the_game_its_strategies_and_its_yardstick():
    assert families.load_game("dictator") is Dictator
    assert set(families.strategies("dictator")) == {"selfish", "equal", "altruist", "fehr-schmidt", "random", "human-resampler"}
    assert "given_share" in families.definitions("dictator")
    assert families.references("dictator").measures[0].name == "given_share"
    assert Dictator.roles(DictatorConfig()) == ("dictator", "recipient") and Dictator.active_roles(DictatorConfig()) == ("dictator",)
    assert DictatorConfig() == DictatorConfig(endowment=100, rounds=1, framing="anonymous")


@pytest.mark.parametrize("endowment,give,expected", [(100, 0, (100, 0)), (100, 30, (70, 30)), (100, 100, (0, 100)), (1, 1, (0, 1)), (7, 3, (4, 3))])
def test_payoff_arithmetic(endowment, give, expected):
    assert payoffs(endowment, give) == expected


@pytest.mark.parametrize("endowment", [1, 2, 11, 100, 1001])
def test_selfish_keeps_everything_and_equal_splits_round_down(endowment):
    outcome, m, table = play(Selfish(), endowment=endowment, rounds=3)
    assert outcome["given"] == [0, 0, 0] and outcome["payoffs"] == {"dictator": [endowment] * 3, "recipient": [0] * 3}
    assert m == {"given_share": 0.0, "dictator_payoff": 1.0, "recipient_payoff": 0.0}
    assert all(t.valid for t in table.turns) and len(table.turns) == 3
    outcome, m, _ = play(Equal(), endowment=endowment, rounds=2)
    half = endowment // 2
    assert outcome["given"] == [half, half] and outcome["dictator_points"] == 2 * (endowment - half)
    assert m["given_share"] == pytest.approx(half / endowment) and m["recipient_payoff"] == pytest.approx(half / endowment)


def test_every_valid_decision_notes_its_share_and_round():
    _, _, table = play(Altruist(share=0.3), endowment=10, rounds=3)
    assert [t.metrics for t in table.turns] == [{"given_share": 0.3, "round": r} for r in (1, 2, 3)]
    assert {t.phase for t in table.turns} == {"give"}


def test_metrics_over_mixed_rounds_leave_the_fallback_out_of_the_share():
    outcome = {"endowment": 10, "rounds": 4, "given": [2, 5, 0, 10], "valid": [True, True, False, True], "dictator_points": 23, "recipient_points": 17}
    m = Dictator(DictatorConfig(endowment=10, rounds=4), Prompts(Dictator.prompt_dir)).metrics(outcome)
    assert m["given_share"] == pytest.approx((0.2 + 0.5 + 1.0) / 3)
    assert m["dictator_payoff"] == pytest.approx(0.575) and m["recipient_payoff"] == pytest.approx(0.425)


@pytest.mark.parametrize("answer", ["I would rather not say.", '{"give": 150}', '{"give": -3}', '{"give": "some"}'])
def test_nonsense_falls_back_to_giving_nothing_and_is_recorded_invalid(answer):
    outcome, m, table = play(Says(answer), endowment=100, rounds=2)
    assert len(table.turns) == 2 and not any(t.valid for t in table.turns)
    assert all(t.error and t.retries == table.max_retries and t.action is None and not t.metrics for t in table.turns)
    assert outcome["given"] == [0, 0] and outcome["valid"] == [False, False]
    assert math.isnan(m["given_share"]) and m["dictator_payoff"] == 1.0 and m["recipient_payoff"] == 0.0


def test_the_bound_reaches_the_parser_and_the_prompt():
    kind = gift_type(100)
    assert kind is gift_type(100) and kind.parse('Sure. {"give": 40}').give == 40
    with pytest.raises(Exception):
        kind.parse('{"give": 101}')
    assert kind.format_instructions() == 'Answer with a JSON object of this form:\n{"give": <a whole number of points from 0 to 100>}'
    assert kind.parse(kind(give=7).render()) == kind(give=7)


def _texts(table: Table) -> list[str]:
    return [m["content"] for m in table.transcripts["dictator"]]


@pytest.mark.parametrize("people", [frozenset(), frozenset({"dictator"})])
def test_both_framings_render_and_differ_only_in_the_framing_paragraph(people):
    anonymous = _texts(play(Equal(), endowment=37, rounds=2, framing="anonymous", people=people)[2])
    observed = _texts(play(Equal(), endowment=37, rounds=2, framing="observed", people=people)[2])
    assert len(anonymous) == len(observed) == 5  # system, round 1, answer, result + round 2, answer
    for text in anonymous + observed:
        assert not re.search(r"\{\{|\}\}|\{%|%\}", text), text
    assert anonymous[1:] == observed[1:]  # the questions, answers and results are the same
    a, o = anonymous[0].split("\n\n"), observed[0].split("\n\n")
    differ = [(x, y) for x, y in zip(a, o) if x != y]
    assert len(a) == len(o) and len(differ) == 1
    (was, now), = differ
    assert "anonymous" in was and "never learn who made it" in was
    assert "not anonymous" in now and "the decision was yours" in now
    assert "37" in anonymous[0] and "Round 2 of 2" in anonymous[3] and "Result of round 1" in anonymous[3]


def test_model_and_person_wording():
    model = _texts(play(Equal(), endowment=10)[2])
    person = _texts(play(Equal(), endowment=10, people={"dictator"})[2])
    assert "Your role: dictator" in model[0] and "recipient" in model[1]
    assert "dictator" not in person[0] and "other person" in person[0] and "a whole number from 0 to 10" in person[1]
    assert "single round" in model[0] and "Round" not in model[1]


@pytest.mark.parametrize("share,endowment,expected", [(0.5, 100, 50), (0.29, 100, 29), (0.14, 100, 14), (1 / 3, 10, 3), (0.5, 7, 3), (0.0, 9, 0), (1.0, 9, 9), (0.999, 10, 9)])
def test_altruist_gives_its_share_rounded_down(share, endowment, expected):
    assert Altruist(share=share).decide(request(endowment)).give == expected


def test_fehr_schmidt_best_reply_is_nothing_below_beta_half_and_the_equal_split_above():
    assert FehrSchmidt(alpha=0.8, beta=0.4).decide(request(100)).give == 0
    assert FehrSchmidt(alpha=0.8, beta=0.6).decide(request(100)).give == 50
    assert FehrSchmidt(alpha=0.0, beta=0.5).decide(request(100)).give == 0  # indifferent: gives 0
    assert FehrSchmidt().decide(request(100)).give == 0  # defaults alpha 0.5, beta 0.25
    outcome, m, _ = play(FehrSchmidt(alpha=2.0, beta=0.9), endowment=11, rounds=2)
    assert outcome["given"] == [5, 5]


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0, 4.0])
@pytest.mark.parametrize("beta", [0.0, 0.2, 0.45, 0.55, 0.7, 0.99])
@pytest.mark.parametrize("endowment", [1, 2, 9, 10, 37])
def test_fehr_schmidt_closed_form_is_the_argmax_of_its_utility(alpha, beta, endowment):
    """The docstring's best reply equals the brute-force argmax of U over 0..E (ties: least)."""
    fs = FehrSchmidt(alpha=alpha, beta=beta)
    utilities = [fs.utility(endowment, g) for g in range(endowment + 1)]
    best = max(utilities)
    argmax = next(g for g, u in enumerate(utilities) if u >= best - 1e-12)
    assert fs.best_gift(endowment) == argmax
    # the formula of the docstring on each side of the equal split
    for g in range(endowment + 1):
        side = (1 - beta) * endowment - (1 - 2 * beta) * g if 2 * g <= endowment else (1 + alpha) * endowment - (1 + 2 * alpha) * g
        assert utilities[g] == pytest.approx(side)


def test_random_and_resampler_are_seeded_and_stay_in_bounds():
    for strategy in (UniformRandom, HumanResampler):
        runs = [play(strategy(), seed=s, endowment=10, rounds=10)[0]["given"] for s in (1, 1, 2)]
        assert runs[0] == runs[1] and runs[0] != runs[2]
        assert all(0 <= g <= 10 for run in runs for g in run) and len({g for run in runs for g in run}) > 2


@pytest.mark.parametrize(
    "factory,params,message",
    [
        (Altruist, {"share": 1.5}, "share must be a number from 0 to 1, not 1.5"),
        (Altruist, {"share": -0.1}, "share must be a number from 0 to 1, not -0.1"),
        (Altruist, {"share": "half"}, "share must be a number, not 'half'"),
        (Altruist, {"share": True}, "share must be a number, not True"),
        (FehrSchmidt, {"alpha": -1}, "alpha must be a number ≥ 0, not -1"),
        (FehrSchmidt, {"beta": 1.0}, "beta must be a number from 0 to less than 1, not 1.0"),
        (FehrSchmidt, {"beta": -0.2}, "beta must be a number from 0 to less than 1, not -0.2"),
    ],
)
def test_bad_strategy_parameters_are_refused_in_one_line(factory, params, message):
    with pytest.raises(ValueError) as caught:
        factory(**params)
    assert str(caught.value) == message and "\n" not in str(caught.value)


def test_bad_configurations_are_refused():
    for bad in ({"endowment": 0}, {"rounds": 0}, {"rounds": 11}, {"framing": "public"}, {"pie": 10}):
        with pytest.raises(ValueError):
            DictatorConfig(**bad)


def test_a_study_with_bad_parameters_stops_with_one_line(tmp_path, capsys):
    study = tmp_path / "bad.toml"
    study.write_text(STUDY.replace("share = 0.3", "share = 2"), encoding="utf-8")
    assert main(["run", str(study), "--db", str(tmp_path / "b.db"), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "share must be a number from 0 to 1, not 2" in err


def test_describe_tells_each_side_in_words():
    game = Dictator(DictatorConfig(endowment=10, rounds=2), Prompts(Dictator.prompt_dir))
    outcome = {"endowment": 10, "rounds": 2, "given": [3, 0], "dictator_points": 17, "recipient_points": 3}
    assert game.describe(outcome, "dictator") == [
        "Round 1: you gave 3 of your 10 points to the other person and kept 7.",
        "Round 2: you gave 0 of your 10 points to the other person and kept 10.",
        "In all you kept 17 points and the other person received 3.",
    ]
    assert game.describe(outcome, "recipient")[-1] == "In all you received 3 points and the other person kept 17."


def test_conformance_suite_passes():
    from agorabench.conformance import run

    assert run(["dictator"]) == []


STUDY = """
name = "dictator_e2e"
game = "dictator"
matchups = "same_model"
repeats = 3
seed = 5

[fixed]
endowment = 100

[grid]
framing = ["anonymous", "observed"]

[[models]]
name = "selfish"
spec = "strategy/selfish"

[[models]]
name = "generous"
spec = "strategy/altruist"
params = { share = 0.3 }

[[models]]
name = "resampler"
spec = "strategy/human-resampler"
"""


def test_cli_run_report_and_export(tmp_path):
    study, db, out = tmp_path / "dictator.toml", str(tmp_path / "d.db"), tmp_path / "report"
    study.write_text(STUDY, encoding="utf-8")
    assert main(["run", str(study), "--db", db, "--quiet"]) == 0
    assert main(["report", str(study), "--db", db, "--out", str(out)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Giving and payoffs" in page and "Decisions by kind" in page and "given_share" in page
    assert "People as the yardstick: dictator" in page and "MobLab (Mei et al. 2024)" in page and "Forsythe et al. 1994" in page
    assert "(not computed)" not in page and "No decision of these games is comparable" not in page
    games_csv, turns_csv = tmp_path / "games.csv", tmp_path / "turns.csv"
    assert main(["export", str(study), "--db", db, "--out", str(games_csv)]) == 0
    assert main(["export", str(study), "--db", db, "--table", "turns", "--out", str(turns_csv)]) == 0
    games = list(csv.DictReader(games_csv.open(encoding="utf-8")))
    turns = list(csv.DictReader(turns_csv.open(encoding="utf-8")))
    assert len(games) == 3 * 2 * 3 and len(turns) == len(games)  # 3 models x 2 framings x 3 repeats; 1 round each
    for g in games:
        expected = {"selfish": 0.0, "generous": 0.3}.get(g["model_dictator"])
        if expected is not None:
            assert float(g["given_share"]) == pytest.approx(expected) and float(g["dictator_payoff"]) == pytest.approx(1 - expected)
    assert {g["framing"] for g in games} == {"anonymous", "observed"}
    assert all(t["valid"] == "True" and t["phase"] == "give" and t["round"] == "1" for t in turns)


def test_report_tables_and_profile_rows_hold_each_model(tmp_path):
    import pandas as pd

    from agorabench.games.dictator.report import decision_kinds, giving_table, kind_of, profile_rows

    assert [kind_of(s) for s in (0.0, 0.01, 0.5, 0.49, 0.51, 1.0)] == ["nothing", "below half", "exactly half", "below half", "above half", "above half"]
    games = pd.DataFrame({"model_dictator": ["a", "a", "b"], "framing": "anonymous", "given_share": [0.0, 0.5, 0.2], "dictator_payoff": [1.0, 0.5, 0.8], "recipient_payoff": [0.0, 0.5, 0.2]})
    table = giving_table(games).set_index(["model", "metric"])
    assert table.loc[("a", "given_share"), "mean"] == 0.25 and table.loc[("b", "dictator_payoff"), "n"] == 1
    turns = pd.DataFrame({"model": ["a", "a", "a", "b"], "phase": "give", "valid": [True, True, False, True], "given_share": [0.0, 0.5, 0.9, 0.7]})
    kinds = decision_kinds(turns).set_index(["model", "kind"])
    assert kinds.loc[("a", "nothing"), "share"] == 0.5 and kinds.loc[("a", "above half"), "share"] == 0.0  # the invalid turn is left out
    assert kinds.loc[("b", "above half"), "share"] == 1.0 and kinds.loc[("a", "exactly half"), "n"] == 2
    rows = profile_rows(games, turns)
    got = {(r.model, r.measure): r.estimate for r in rows.itertuples()}
    assert got["a", "given_share"] == 0.25 and got["selfish", "given_share"] == 0.0 and got["selfish", "dictator_payoff"] == 1.0


#: A reference to this family in code: its registry key as a string, its package path, an import.
REFERENCE = re.compile(rb"[\"']dictator[\"'.:/]|games[./\\]dictator|import\s+dictator|\.dictator\b", re.I)


def test_no_file_outside_the_family_folder_refers_to_it():
    """The family is added by its folder alone: no other file of the package refers to it."""
    root = Path(agorabench.__file__).parent
    own = root / "games" / "dictator"
    files = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.name != "tokenizer.json"]
    assert any(REFERENCE.search(p.read_bytes()) for p in own.rglob("*.py"))
    named = [str(p.relative_to(root)) for p in files if own not in p.parents and REFERENCE.search(p.read_bytes())]
    assert named == []
    assert set(STRATEGIES) == set(families.strategies("dictator"))
