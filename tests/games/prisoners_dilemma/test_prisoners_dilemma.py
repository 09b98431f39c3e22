"""Prisoner's dilemma: payoff validation, simultaneous choices, the three horizons (the random
one drawn from nature's stream, capped, geometric), theory with scripted players (dominance of
defecting, tit-for-tat, grim), fallbacks, labels as data, a person's wording and form, a CLI
study run and its report end to end, and the conformance suite."""

from __future__ import annotations

import asyncio
import csv
import math
import re
from collections import Counter
from pathlib import Path

import pytest

import agorabench
from agorabench import families
from agorabench.cli import main
from agorabench.core.actions import Action
from agorabench.core.agents import Strategy
from agorabench.core.game import Prompts
from agorabench.core.table import FORMAT, Reply, Table, TurnRequest, without
from agorabench.games.prisoners_dilemma.prisoners_dilemma import (
    choice_type, percent, PrisonersDilemma, PrisonersDilemmaConfig, round_points,
)
from agorabench.games.prisoners_dilemma.strategies import AlwaysCooperate, Grim, HumanResampler, Selfish, STRATEGIES, TitForTat, UniformRandom

C, D = "cooperate", "defect"


class Says:
    """A player that always answers the same text (like a model that ignores the format)."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def act(self, request: TurnRequest) -> Reply:
        return Reply(text=self.text)


class DefectsIn(Strategy):
    """Cooperates except in the rounds listed, where it defects."""

    def __init__(self, *rounds: int) -> None:
        super().__init__()
        self.rounds = set(rounds)

    def decide(self, request: TurnRequest) -> Action:
        return request.action_type.of(request.prompt.observation["round"] not in self.rounds)


class Spy:
    """Plays like ``inner`` and keeps, per round, the messages it was shown and its observation."""

    def __init__(self, inner) -> None:
        self.inner, self.seen = inner, {}

    async def act(self, request: TurnRequest) -> Reply:
        obs = request.prompt.observation
        self.seen[obs["round"]] = ([dict(m) for m in request.messages], obs)
        return await self.inner.act(request)


def play(first, second, seed: int = 1, people=frozenset(), **config):
    game = PrisonersDilemma(PrisonersDilemmaConfig(**config), Prompts(PrisonersDilemma.prompt_dir), people=people)
    table = Table({"player_1": first, "player_2": second}, seed=seed)
    outcome = asyncio.run(game.play(table))
    return outcome, game.metrics(outcome), table


def choices(outcome, seat: int) -> list[str]:
    return [h["choices"][seat] for h in outcome["history"]]


def points(outcome, seat: int) -> list[int]:
    return [h["points"][seat] for h in outcome["history"]]


# the registry, the configuration and the arithmetic ------------------------------------------


def test_the_registry_finds_the_game_its_strategies_and_the_papers_defaults():
    assert families.load_game("prisoners_dilemma") is PrisonersDilemma
    assert set(families.strategies("prisoners_dilemma")) == {"selfish", "cooperate", "tit-for-tat", "grim", "random", "human-resampler"}
    assert "mutual_cooperation" in families.definitions("prisoners_dilemma")
    assert Prompts(PrisonersDilemma.prompt_dir).version == "prisoners_dilemma-1"
    c = PrisonersDilemmaConfig()
    # Shafir & Tversky (1992), Fig. 2, p. 452
    assert (c.reward, c.temptation, c.sucker, c.punishment) == (75, 85, 25, 30)
    assert (c.horizon, c.cooperate_label, c.defect_label) == ("one-shot", "cooperate", "defect")


@pytest.mark.parametrize(
    "payoffs,message",
    [
        ({"temptation": 75}, "temptation > reward > punishment > sucker, not T=75, R=75, P=30, S=25"),
        ({"reward": 90}, "temptation > reward > punishment > sucker, not T=85, R=90, P=30, S=25"),
        ({"punishment": 80}, "temptation > reward > punishment > sucker, not T=85, R=75, P=80, S=25"),
        ({"sucker": 30}, "temptation > reward > punishment > sucker, not T=85, R=75, P=30, S=30"),
        ({"temptation": 100, "reward": 50, "punishment": 10, "sucker": 5}, "2 × reward must exceed temptation + sucker (mutual cooperation must pay more than taking turns exploiting each other), not 2×50 = 100 ≤ 100 + 5 = 105"),
        ({"temptation": 85, "reward": 55, "punishment": 30, "sucker": 25}, "not 2×55 = 110 ≤ 85 + 25 = 110"),  # equality is refused too
    ],
)
def test_payoffs_must_make_a_dilemma_and_the_messages_say_which_rule(payoffs, message):
    with pytest.raises(ValueError) as found:
        PrisonersDilemmaConfig(**payoffs)
    assert message in str(found.value)


def test_other_bad_configurations_are_refused():
    PrisonersDilemmaConfig(temptation=5, reward=3, punishment=1, sucker=0)  # Axelrod's classic points are fine
    for bad in ({"sucker": -1}, {"rounds": 0}, {"rounds": 101}, {"continue_prob": 0}, {"continue_prob": 1}, {"max_rounds": 0}, {"horizon": "forever"},
                {"cooperate_label": "co operate"}, {"defect_label": ""}, {"defect_label": "x1"}, {"defect_label": "Cooperate"}, {"players": 3}):
        with pytest.raises(ValueError):
            PrisonersDilemmaConfig(**bad)


@pytest.mark.parametrize("first,second,expected", [(True, True, (75, 75)), (True, False, (25, 85)), (False, True, (85, 25)), (False, False, (30, 30))])
def test_round_points_follow_the_matrix(first, second, expected):
    assert round_points(PrisonersDilemmaConfig(), first, second) == expected


def test_percentages_keep_the_probability():
    assert [percent(p) for p in (0.8, 0.5, 0.125, 0.95, 0.999)] == ["80%", "50%", "12.5%", "95%", "99.9%"]


# simultaneous choices ---------------------------------------------------------------------------


def test_nobody_sees_the_other_choice_of_the_same_round():
    """Player 1's question in a round is byte for byte the same whatever player 2 chooses in that
    round, and its observation holds only earlier rounds; both are asked before either answer
    counts (ask_each), turns recorded in seat order."""
    seen = []
    for other in (AlwaysCooperate(), Selfish()):
        spy = Spy(TitForTat())
        outcome, _, table = play(spy, other, horizon="known", rounds=3)
        seen.append((spy.seen, outcome, table))
    (a, out_a, table_a), (b, out_b, _) = seen
    assert choices(out_a, 1) != choices(out_b, 1)
    assert a[1] == b[1]  # round 1: nothing of the other's choice
    assert a[2] != b[2]  # round 2: round 1's result has been told
    assert [h["round"] for h in a[3][1]["history"]] == [1, 2] and "other" not in a[1][1] and a[1][1]["history"] == []
    assert [(t.role, t.phase) for t in table_a.turns] == [("player_1", "choose"), ("player_2", "choose")] * 3
    messages, _ = a[2]
    assert "Result of round 1: you chose \"cooperate\" and the other player chose \"cooperate\"" in messages[-1]["content"]
    assert "Result of round 2" not in str(messages)


def test_both_learn_both_choices_and_points_after_each_round():
    _, _, table = play(AlwaysCooperate(), Selfish(), horizon="known", rounds=2)
    one = "\n".join(m["content"] for m in table.transcripts["player_1"])
    two = "\n".join(m["content"] for m in table.transcripts["player_2"])
    assert 'Result of round 1: you chose "cooperate" and the other player chose "defect". Your points this round: 25; the other player\'s: 85.' in one
    assert 'Result of round 1: you chose "defect" and the other player chose "cooperate". Your points this round: 85; the other player\'s: 25.' in two
    assert "Result of round 2" not in one  # the game is over: nothing more is told


# the horizons ------------------------------------------------------------------------------------


def test_one_shot_plays_one_round_and_says_so():
    outcome, m, table = play(TitForTat(), TitForTat())
    assert outcome["rounds_played"] == 1 and len(table.turns) == 2 and m["rounds_played"] == 1.0
    text = "\n".join(m["content"] for m in table.transcripts["player_1"])
    assert "single round" in text and "Round" not in text and "Result" not in text


@pytest.mark.parametrize("rounds", [1, 2, 7])
def test_a_known_horizon_plays_its_rounds_and_tells_them(rounds):
    outcome, m, table = play(TitForTat(), Grim(), horizon="known", rounds=rounds)
    assert outcome["rounds_played"] == rounds == m["rounds_played"] and len(table.turns) == 2 * rounds
    text = "\n".join(m["content"] for m in table.transcripts["player_2"])
    assert f"It lasts {rounds} rounds" in text and f"Round {rounds} of {rounds}." in text
    assert [t.metrics["round"] for t in table.turns] == [r for r in range(1, rounds + 1) for _ in range(2)]


def _lengths(seeds, **config) -> list[int]:
    return [play(TitForTat(), TitForTat(), seed=s, horizon="random", **config)[0]["rounds_played"] for s in seeds]


def test_a_random_horizon_is_drawn_from_natures_stream_the_same_for_a_seed_whoever_plays():
    lengths = _lengths(range(40), continue_prob=0.7)
    assert lengths == _lengths(range(40), continue_prob=0.7)
    assert len(set(lengths)) > 3
    # the players' own draws never move the end: other players, same seeds, same lengths
    others = [play(UniformRandom(), HumanResampler(), seed=s, horizon="random", continue_prob=0.7)[0]["rounds_played"] for s in range(40)]
    assert others == lengths
    # the draws themselves: the table's rng, one draw after each round, continuing below continue_prob
    import random

    for seed, n in enumerate(lengths[:10]):
        rng = random.Random(seed)
        expected = 1
        while rng.random() < 0.7:
            expected += 1
        assert n == min(expected, 20)


def test_a_random_horizon_never_passes_its_cap_and_the_players_are_never_told_it():
    lengths = _lengths(range(60), continue_prob=0.9, max_rounds=3)
    assert max(lengths) == 3 and set(lengths) <= {1, 2, 3}
    assert Counter(lengths)[3] > 30  # 0.9² = 81 % of the games reach the cap
    outcome, _, table = play(TitForTat(), TitForTat(), seed=4, horizon="random", continue_prob=0.95, max_rounds=37)
    for role in ("player_1", "player_2"):
        text = "\n".join(m["content"] for m in table.transcripts[role])
        system = table.transcripts[role][0]["content"]
        assert set(re.findall(r"\d+", system)) == {"75", "85", "25", "30", "95"}  # the points and the chance, no cap
        assert re.findall(r"Round \d+(?![\d.])", text) == []  # "Round 3." and never "Round 3 of ..."
        assert "a chance of 95%" in text and "not fixed in advance" in text
        assert text.count("The game goes on to another round.") == outcome["rounds_played"] - 1


def test_random_lengths_are_geometric_over_many_seeds():
    """P(N = k) = p^(k−1)(1 − p) below the cap: with p = ½ about half the games last one round,
    a quarter two; the mean is (1 − p^cap) / (1 − p) ≈ 2."""
    seeds = range(400)
    lengths = _lengths(seeds, continue_prob=0.5, max_rounds=30)
    share = Counter(lengths)
    n = len(lengths)
    for k, expected in ((1, 0.5), (2, 0.25), (3, 0.125)):
        sd = math.sqrt(expected * (1 - expected) / n)
        assert abs(share[k] / n - expected) < 4 * sd, (k, share[k] / n)
    assert abs(sum(lengths) / n - 2.0) < 4 * math.sqrt(2 / n)  # variance of the geometric: (1 − p) / p² = 2
    assert sum(1 for x in lengths if x > 10) <= 3  # P(N > 10) = 2^-10


# theory with scripted players ----------------------------------------------------------------------


@pytest.mark.parametrize("other", ["selfish", "cooperate", "tit-for-tat", "grim", "random", "human-resampler"])
def test_defecting_is_never_worse_than_cooperating_in_a_round(other):
    """Whatever the other player chooses in a round, the selfish player's points are more than
    cooperating would have given it (T > R, P > S)."""
    config = PrisonersDilemmaConfig(horizon="known", rounds=6)
    for seed in range(4):
        outcome, _, _ = play(Selfish(), STRATEGIES[other](), seed=seed, horizon="known", rounds=6)
        for h in outcome["history"]:
            theirs = h["choices"][1] == C
            got, had_cooperated = round_points(config, False, theirs)[0], round_points(config, True, theirs)[0]
            assert h["choices"][0] == D and h["points"][0] == got > had_cooperated


def test_selfish_against_selfish_earns_the_punishment_every_round():
    outcome, m, _ = play(Selfish(), Selfish(), horizon="known", rounds=5)
    assert points(outcome, 0) == points(outcome, 1) == [30] * 5
    assert m["cooperation"] == 0.0 and m["mutual_cooperation"] == 0.0
    assert m["payoff_player_1"] == pytest.approx(30 / 85) and m["efficiency"] == pytest.approx(30 / 75)


@pytest.mark.parametrize("config", [{"horizon": "known", "rounds": 8}, {"horizon": "random", "continue_prob": 0.9}])
def test_tit_for_tat_against_itself_cooperates_every_round(config):
    outcome, m, _ = play(TitForTat(), TitForTat(), seed=2, **config)
    assert choices(outcome, 0) == choices(outcome, 1) == [C] * outcome["rounds_played"]
    assert m["cooperation"] == m["cooperation_first"] == m["mutual_cooperation"] == m["efficiency"] == 1.0
    assert m["payoff_player_2"] == pytest.approx(75 / 85)


def test_tit_for_tat_against_selfish_cooperates_once_then_defects():
    outcome, m, _ = play(TitForTat(), Selfish(), horizon="known", rounds=5)
    assert choices(outcome, 0) == [C, D, D, D, D] and points(outcome, 0) == [25, 30, 30, 30, 30]
    assert m["cooperation_player_1"] == pytest.approx(0.2) and m["cooperation_player_2"] == 0.0
    assert m["payoff_player_2"] == pytest.approx((85 + 4 * 30) / (85 * 5))


def test_grim_punishes_a_single_defection_for_ever_and_tit_for_tat_forgives_it():
    outcome, _, _ = play(Grim(), DefectsIn(2), horizon="known", rounds=6)
    assert choices(outcome, 1) == [C, D, C, C, C, C]
    assert choices(outcome, 0) == [C, C, D, D, D, D]
    outcome, _, _ = play(TitForTat(), DefectsIn(2), horizon="known", rounds=6)
    assert choices(outcome, 0) == [C, C, D, C, C, C]


def test_always_cooperate_and_random_and_the_random_parameter():
    outcome, m, _ = play(AlwaysCooperate(), AlwaysCooperate(), horizon="known", rounds=3)
    assert m["mutual_cooperation"] == 1.0 and points(outcome, 0) == [75] * 3
    runs = [play(UniformRandom(), UniformRandom(p=0.2), seed=s, horizon="known", rounds=40)[0] for s in (1, 1, 2)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    first, second = choices(runs[0], 0), choices(runs[0], 1)
    assert 10 < first.count(C) < 30 and second.count(C) < first.count(C)
    assert choices(play(UniformRandom(p=1), UniformRandom(p=0), horizon="known", rounds=5)[0], 0) == [C] * 5
    for bad in (-0.1, 1.5, "half", True):
        with pytest.raises(ValueError):
            UniformRandom(p=bad)


# fallbacks and parsing ------------------------------------------------------------------------------


def test_a_choice_that_stays_invalid_becomes_a_defection_recorded_invalid():
    outcome, m, table = play(Says("Let us both be friends."), AlwaysCooperate(), horizon="known", rounds=2)
    mine = [t for t in table.turns if t.role == "player_1"]
    assert len(mine) == 2 and not any(t.valid for t in mine) and all(t.error and t.retries == table.max_retries for t in mine)
    assert all("cooperate" not in t.metrics for t in mine)  # nothing noted for an invalid decision
    assert choices(outcome, 0) == [D, D] and [h["valid"] for h in outcome["history"]] == [[False, True]] * 2
    assert points(outcome, 0) == [85, 85]
    assert math.isnan(m["cooperation_player_1"]) and m["cooperation"] == 1.0 and m["mutual_cooperation"] == 0.0
    _, both, _ = play(Says("?"), Says("no"))
    assert math.isnan(both["cooperation"]) and math.isnan(both["cooperation_first"])


def test_answers_are_matched_ignoring_case_and_a_full_stop_and_other_words_are_refused():
    kind = choice_type()
    assert kind.parse('{"choice": " Cooperate. "}').choice == C and kind.parse('I think {"choice": "DEFECT"}').choice == D
    assert kind.format_instructions() == 'Answer with a JSON object of this form:\n{"choice": "cooperate"} or {"choice": "defect"}'
    for action in (kind.of(True), kind.of(False)):
        assert kind.parse(action.render()) == action
    outcome, _, table = play(Says('{"choice": "compete"}'), Says('{"choice": "Cooperate"}'))
    assert not table.turns[0].valid and "cooperate" in table.turns[0].error and table.turns[1].valid
    assert choices(outcome, 0) == [D] and choices(outcome, 1) == [C]


def test_labels_are_data():
    """Shafir & Tversky's words: the prompts, the answers and a person's form use the labels; the
    outcome and the noted values speak of cooperating and defecting."""
    from agorabench.web.forms import form_fields

    outcome, m, table = play(TitForTat(), Says('{"choice": "Compete"}'), horizon="known", rounds=2, defect_label="compete")
    text = table.transcripts["player_1"][0]["content"] + table.transcripts["player_1"][1]["content"]
    assert 'both choose "compete", each gets 30 points' in text and '{"choice": "cooperate"} or {"choice": "compete"}' in text and "defect" not in text
    assert table.turns[1].valid and table.turns[1].action == {"choice": "compete"}
    assert choices(outcome, 1) == [D, D] and choices(outcome, 0) == [C, D] and outcome["labels"] == ["cooperate", "compete"]
    assert m["cooperation_player_2"] == 0.0 and [t.metrics["cooperate"] for t in table.turns[:2]] == [1.0, 0.0]
    (field,) = form_fields(choice_type("cooperate", "compete"), "player_1")
    assert (field.kind, field.options, field.label) == ("radio", ["cooperate", "compete"], "Your choice")


# a person's wording and results page -----------------------------------------------------------------


MACHINE = re.compile(r"language models?|\bAI\b|\bLLMs?\b|\bmodels?\b|JSON", re.IGNORECASE)


def test_a_person_reads_the_rules_and_questions_in_words_and_models_keep_theirs():
    _, _, table = play(TitForTat(), Grim(), horizon="random", continue_prob=0.9, people=frozenset({"player_1"}))
    person = "\n".join(without(parts, FORMAT) for parts in table.parts("player_1"))
    assert MACHINE.search(person) is None, person
    assert "participant" in person and "you get 85 points and they get 25" in person and "a chance of 90%" in person
    _, _, model_table = play(TitForTat(), Grim(), horizon="random", continue_prob=0.9)
    assert table.transcripts["player_2"] == model_table.transcripts["player_2"]  # the other's prompts are untouched
    assert "JSON" in model_table.transcripts["player_1"][0]["content"]


def test_results_page_in_sentences():
    outcome, _, _ = play(TitForTat(), Selfish(), horizon="known", rounds=2)
    game = PrisonersDilemma(PrisonersDilemmaConfig(horizon="known", rounds=2), Prompts(PrisonersDilemma.prompt_dir), people={"player_1"})
    assert game.describe(outcome, "player_1") == [
        "You played 2 rounds with the other player.",
        'Round 1: you chose "cooperate" and the other player chose "defect"; you received 25 points and the other player 85.',
        'Round 2: you chose "defect" and the other player chose "defect"; you received 30 points and the other player 30.',
        "In all you received 55 points and the other player 115.",
    ]
    outcome, _, _ = play(Selfish(), Selfish(), seed=3, horizon="random", continue_prob=0.5, defect_label="compete")
    lines = game.describe(outcome, "player_2")
    n = outcome["rounds_played"]
    assert lines[0] == f"You played {n} round{'s' if n > 1 else ''} with the other player. After each round the game went on with a chance of 50%; it ended after round {n}."
    assert '"compete"' in lines[1] and all("_" not in line for line in lines)


# end to end ------------------------------------------------------------------------------------------

STUDY = """
name = "prisoners_dilemma_e2e"
game = "prisoners_dilemma"
matchups = "ordered_pairs"
repeats = 2
seed = 3

[grid]
horizon = ["one-shot", "known"]

[fixed]
rounds = 4

[[models]]
name = "tft"
spec = "strategy/tit-for-tat"

[[models]]
name = "selfish"
spec = "strategy/selfish"
"""


def test_cli_run_report_export_and_profile(tmp_path):
    study, db, out = tmp_path / "pd.toml", str(tmp_path / "pd.db"), tmp_path / "report"
    study.write_text(STUDY, encoding="utf-8")
    assert main(["run", str(study), "--db", db, "--quiet"]) == 0
    assert main(["report", str(study), "--db", db, "--out", str(out)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    for title in ("Cooperation and payoffs per model", "Pairings: mutual cooperation and efficiency", "Cooperation by round"):
        assert title in page
    assert "(not computed)" not in page and "mutual_cooperation" in page
    games_csv, turns_csv = tmp_path / "games.csv", tmp_path / "turns.csv"
    assert main(["export", str(study), "--db", db, "--out", str(games_csv)]) == 0
    assert main(["export", str(study), "--db", db, "--table", "turns", "--out", str(turns_csv)]) == 0
    games = list(csv.DictReader(games_csv.open(encoding="utf-8")))
    turns = list(csv.DictReader(turns_csv.open(encoding="utf-8")))
    assert len(games) == 2 * 2 * 2  # 2 ordered pairs × 2 horizons × 2 repeats
    assert len(turns) == 2 * 2 * (1 + 4) * 2  # one-shot: 1 round, known: 4; 2 turns a round
    for g in games:
        pair = (g["model_player_1"], g["model_player_2"])
        rounds = 1 if g["horizon"] == "one-shot" else 4
        assert float(g["rounds_played"]) == rounds
        tft = "player_1" if pair[0] == "tft" else "player_2"
        assert float(g[f"cooperation_{tft}"]) == pytest.approx(1 / rounds)  # cooperates once, then copies the defection
    assert all(t["valid"] == "True" and t["phase"] == "choose" for t in turns)
    from agorabench.analysis.frames import games_df, turns_df
    from agorabench.store.store import Store

    store = Store(db)
    try:
        frame_games, frame_turns = games_df(store, "prisoners_dilemma_e2e"), turns_df(store, "prisoners_dilemma_e2e", transcripts=False)
        rows = families.profile_hook("prisoners_dilemma")(frame_games, frame_turns)
    finally:
        store.dispose()
    assert set(frame_turns["horizon"]) == {"one-shot", "known"}  # the human sample's where reads it
    got = {(r.model, r.measure, r.note): r.estimate for r in rows.itertuples()}
    assert got["tft", "cooperation", "horizon known"] == pytest.approx(0.25) and got["tft", "cooperation_first", "horizon one-shot"] == 1.0
    assert got["selfish", "cooperation", "horizon one-shot"] == 0.0
    assert got["selfish", "payoff_share", ""] == pytest.approx(30 / 85)  # the theory row


def test_conformance_suite_passes():
    from agorabench import conformance

    assert conformance.run(["prisoners_dilemma"]) == []


#: A reference to this game in code: its registry key as a string, its package path, an import.
REFERENCE = re.compile(rb"[\"']prisoners_dilemma[\"'.:/]|games[./\\]prisoners_dilemma|import\s+prisoners_dilemma|\.prisoners_dilemma\b", re.I)


def test_no_file_outside_the_game_folder_refers_to_the_game():
    root = Path(agorabench.__file__).parent
    own = root / "games" / "prisoners_dilemma"
    files = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.name != "tokenizer.json"]
    assert any(REFERENCE.search(p.read_bytes()) for p in own.rglob("*.py"))
    assert [str(p.relative_to(root)) for p in files if own not in p.parents and REFERENCE.search(p.read_bytes())] == []
