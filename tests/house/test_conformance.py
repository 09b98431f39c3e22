"""The conformance suite (issue 20): every registered game passes every check, found through the
registry with no line written for it here; and each check fails on a game that breaks its rule
(a coin game planted in the registry for the test), so that a pass means something.

Every test name carries ``conformance``: ``pytest -k conformance`` runs exactly the suite."""

from __future__ import annotations

import pytest

from agorabench import families
from agorabench.cli import main
from agorabench.conformance import CHECKS, RandomPlayer, play, run
from support.toy_games import plant_family

CASES = [(game, check) for game in families.game_names() for check in CHECKS]


@pytest.fixture(scope="module")
def suite_of():
    """``suite_of(game)``: the whole suite's failures for ``game`` from one :func:`run` (whose
    checks share the seatings' games), run on first use and kept for that game's other checks
    (``make test`` hands a whole file to one xdist worker: ``--dist loadfile``)."""
    done: dict[str, list[tuple[str, str, str]]] = {}

    def _of(game: str) -> list[tuple[str, str, str]]:
        if game not in done:
            done[game] = run([game])
        return done[game]

    return _of


@pytest.mark.parametrize("game,check", CASES, ids=[f"{g}-{c}" for g, c in CASES])
def test_conformance_of_every_registered_game(game, check, suite_of):
    assert [f for f in suite_of(game) if f[1] == check] == []


# --- the planted coin family, good and broken (tests/support/toy_games.py) ----------------------


@pytest.fixture
def planted(monkeypatch):
    # coin.edge: the fair coin under another name, with a strategy whose answer the rules reject
    games = {"fair": "Coin", "global": "GlobalCoin", "set": "SetCoin", "edge": "Coin", "told": "ToldCoin", "lying": "LyingCoin", "marked": "MarkedCoin", "leaky": "LeakyCoin"}
    plant_family(
        monkeypatch,
        "coin",
        games={f"coin.{g}": f"support.toy_games:{cls}" for g, cls in games.items()},
        strategies={f"coin.{g}": "support.toy_games:" + ("BAD" if g == "edge" else "GOOD") for g in games},
    )


RULES = ["roles", "strategies", "instructions", "random", "deterministic", "outcome", "actions"]


def test_conformance_passes_a_good_planted_game(planted):
    assert run(["coin.fair"], RULES) == []


def test_conformance_deterministic_fails_on_global_random_state(planted):
    failed = run(["coin.global"], RULES)
    assert [c for _g, c, _w in failed] == ["deterministic"], failed
    assert "differ" in failed[0][2]


def test_conformance_instructions_are_the_system_message_of_play(planted):
    assert run(["coin.told"], RULES) == []
    failed = run(["coin.lying"], RULES)
    assert [c for _g, c, _w in failed] == ["instructions"], failed


def test_conformance_prompts_fail_without_a_marked_answer_format_or_with_a_leaked_mark(planted):
    """A person's page leaves out the answer format by its mark: a question without one fails,
    and so does a mark that leaves the table (here in the outcome)."""
    assert run(["coin.marked"], ["prompts"]) == []
    failed = run(["coin.fair"], ["prompts"])
    assert len(failed) == 1 and "marks no answer format" in failed[0][2], failed
    failed = run(["coin.leaky"], ["prompts"])
    assert len(failed) == 1 and "a mark reached" in failed[0][2], failed


def test_conformance_outcome_fails_on_data_that_is_not_json_or_not_numbers(planted):
    failed = run(["coin.set"], ["outcome"])
    assert len(failed) == 1 and "not JSON data" in failed[0][2], failed


def test_conformance_strategies_fail_on_an_answer_the_rules_reject(planted):
    failed = run(["coin.edge"], ["strategies"])
    assert len(failed) == 1 and "strategy/edge" in failed[0][2] and "reject" in failed[0][2], failed


def test_conformance_roles_fail_when_the_class_name_is_not_the_registered_one(planted):
    failed = run(["coin.edge"], ["roles"])  # registered as coin.edge, the class says coin.fair
    assert len(failed) == 1 and "coin.fair" in failed[0][2], failed


def test_conformance_random_player_answers_in_the_action_format_and_records_fallbacks():
    """The random player's answers go through the parser like a model's: legal ones become
    actions (every random negotiation move is legal), rejected ones are invalid turns carrying
    the action's own message (random bargaining splits do not add up), never a crash."""
    def random_play(game: str):
        roles = families.load_game(game).active_roles(families.load_game(game).Config(**families.examples()[game]))
        return play(game, {r: RandomPlayer() for r in roles}, seed=3)

    legal = random_play("glee.negotiation")
    assert legal.turns and all(t.valid and t.action for t in legal.turns)
    rejected = random_play("glee.bargaining")
    assert rejected.turns and all(not t.valid and "add up" in t.error for t in rejected.turns)


def test_conformance_cli_lists_results_and_fails_on_an_unknown_game(capsys):
    assert main(["conformance", "envy.points", "--check", "roles", "--check", "actions"]) == 0
    out = capsys.readouterr().out
    assert "envy.points: ok" in out and "2 of 2 checks passed" in out
    assert main(["conformance", "no.such.game"]) == 2
    assert "unknown game 'no.such.game'" in capsys.readouterr().err


def test_conformance_cli_games_lists_every_registered_game(capsys):
    assert main(["games"]) == 0
    out = capsys.readouterr().out
    for game in families.game_names():
        assert f"  {game}" in out
    assert "strategy/self-max" in out and "import govsim" in out


def test_conformance_prompts_of_every_ready_study_run_no_sentences_together():
    """The ``prompts`` check over the configurations of every ready study (up to 40 per game and
    study, spread over the grid), not only each game's quick example: a template's whitespace
    control must never eat the break between two sentences ("to Bob.There are")."""
    from agorabench.conformance import RUN_TOGETHER, scripted_players
    from agorabench.core.study import load_study
    from support.helpers import ROOT

    checked = 0
    for path in sorted((ROOT / "studies").glob("*.toml")):
        study = load_study(path)
        for part in study._parts():
            configs = study.configurations(part)
            step = max(1, len(configs) // 40)
            for config in configs[::step]:
                for turn in play(part.game, scripted_players(part.game, config), config=config).turns:
                    for message in turn.messages:
                        found = RUN_TOGETHER.search(message["content"])
                        assert found is None, (path.name, part.game, message["content"][max(0, found.start() - 40) : found.end() + 20])
                checked += 1
    assert checked > 100


def test_conformance_run_plays_each_seating_once_for_all_its_checks(planted, monkeypatch):
    """Inside one run the checks read one game per seating at seed 1: the planted coin game has
    one seating, played once for strategies, instructions, outcome, actions and as the first of
    the deterministic pair; the deterministic check plays it once more, and its seating with
    random partners twice at seed 7; the random check plays seeds 1, 2 and 3. A check run alone
    plays its own games."""
    from agorabench import conformance

    seeds: list[int] = []
    real = conformance.play

    def counted(game, players, seed=1, config=None, **kw):
        seeds.append(seed)
        return real(game, players, seed=seed, config=config, **kw)

    monkeypatch.setattr(conformance, "play", counted)
    assert run(["coin.fair"], RULES) == []
    assert sorted(seeds) == [1, 1, 1, 2, 3, 7, 7], seeds
    seeds.clear()
    assert run(["coin.fair"], ["outcome"]) == [] and run(["coin.fair"], ["actions"]) == []
    assert seeds == [1, 1]  # one run's games are not kept for the next
