"""Issue 44 item 2: the conformance warnings tier on the shipped games and on planted pairs.

- every registered game passes conformance with no unexplained warning (a warning the game
  cannot fix without changing what a model is shown is declared on its class with a reason,
  and listed as exempt);
- asks made together (``table.ask_each``) are not taken for asks made one after another, even
  when the players answer without awaiting (the shipped simultaneous-move games were warned
  before); asks made one after another with the same observation still are;
- an exemption covers its warning and says why; one without a reason, of an unknown kind, or
  that matches no warning is itself a warning."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from agorabench import families
from agorabench.conformance import check, CHECKS, run
from agorabench.core.actions import Action
from agorabench.core.agents import Strategy
from agorabench.core.game import Game, GameConfig
from agorabench.core.speech import FORMAT_MARK
from agorabench.core.table import Prompt, Table, TurnRequest

#: Every check that can warn (``report`` plays a study through the registry and never does).
WARNING_CHECKS = [c for c in CHECKS if c != "report"]


def test_conformance_every_registered_game_has_no_unexplained_warning():
    warned: list[tuple[str, str]] = []
    exempt: list[tuple[str, str]] = []
    failed = run(families.game_names(), WARNING_CHECKS, warnings=warned, exempted=exempt)
    assert failed == [], failed
    assert warned == [], "\n".join(f"{g}: {w}" for g, w in warned)
    for game, line in exempt:  # each exemption states its reason
        assert "(exempted by the class: " in line and not line.endswith("(exempted by the class: )"), (game, line)


class Guess(Action):
    guess: Literal["heads", "tails"]


class PairConfig(GameConfig):
    rounds: int = 2


class Pair(Game):
    """Two players guess a coin each round, both shown the same round (a simultaneous move),
    asked together."""

    name = "toy.pair"
    Config = PairConfig

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return ("first", "second")

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        return 2 * config.rounds  # type: ignore[attr-defined]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        return {"heads": (0.0, 1.0)}

    @staticmethod
    def question(n: int) -> Prompt:
        fmt = Guess.format_instructions()
        return Prompt(f"Guess coin {n}. {FORMAT_MARK}{fmt}", {"round": n}, phase="guess", instructions=fmt)

    async def asks(self, table: Table, n: int) -> list[Guess]:
        answers = await table.ask_each({r: (self.question(n), Guess, Guess(guess="heads")) for r in ("first", "second")})
        return list(answers.values())  # type: ignore[arg-type]

    async def play(self, table: Table) -> dict[str, Any]:
        calls = []
        for n in range(1, self.config.rounds + 1):
            calls += [a.guess for a in await self.asks(table, n)]
        return {"heads": calls.count("heads"), "calls": len(calls)}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        return {"heads": outcome["heads"] / outcome["calls"]}


class OneAfterAnother(Pair):
    """The same move asked of one player, then of the other: ``ask_each`` fits."""

    name = "toy.sequential"

    async def asks(self, table: Table, n: int) -> list[Guess]:
        return [await table.ask(r, self.question(n), Guess, fallback=Guess(guess="heads")) for r in ("first", "second")]  # type: ignore[misc]


class Exempt(OneAfterAnother):
    name = "toy.exempt"
    conformance_exemptions: ClassVar[dict[str, str]] = {"ask_each:guess": "the planted reason"}


class Heads(Strategy):
    """Answers at once, without awaiting (as every scripted strategy does)."""

    def decide(self, request: TurnRequest) -> Action:
        return Guess(guess="heads")


STRATEGIES = {"heads": Heads}
SEQUENTIAL = "the guess question is asked of one role after another with the same observation (first, then second)"


def test_conformance_asks_made_together_are_not_warned_of():
    result = check(Pair, None, STRATEGIES, checks=WARNING_CHECKS)
    assert result.failed == [] and result.warnings == [] and result.exempted == [], result


def test_conformance_asks_made_one_after_another_with_the_same_observation_are():
    result = check(OneAfterAnother, None, STRATEGIES, checks=WARNING_CHECKS)
    assert result.failed == [], result.failed
    assert len(result.warnings) == 1 and result.warnings[0].startswith(SEQUENTIAL), result.warnings


def test_conformance_a_declared_exemption_lists_the_warning_as_exempt_with_its_reason():
    result = check(Exempt, None, STRATEGIES, checks=WARNING_CHECKS)
    assert result.failed == [] and result.warnings == [], result
    assert len(result.exempted) == 1 and result.exempted[0].startswith(SEQUENTIAL), result.exempted
    assert result.exempted[0].endswith("(exempted by the class: the planted reason)")


def test_conformance_a_kind_wide_exemption_covers_each_warning_of_its_kind():
    class Wide(OneAfterAnother):
        name = "toy.wide"
        conformance_exemptions = {"ask_each": "every phase's moves are sequential on purpose"}

    result = check(Wide, None, STRATEGIES, checks=WARNING_CHECKS)
    assert result.warnings == [] and len(result.exempted) == 1, result


def test_conformance_an_exemption_without_reason_unknown_or_stale_is_a_warning():
    class Unreasoned(OneAfterAnother):
        name = "toy.unreasoned"
        conformance_exemptions = {"ask_each:guess": "  "}

    result = check(Unreasoned, None, STRATEGIES, checks=WARNING_CHECKS)
    assert result.exempted == [] and any(w.startswith(SEQUENTIAL) for w in result.warnings), result
    assert "exemption 'ask_each:guess' gives no reason" in result.warnings, result.warnings

    class Stale(Pair):
        name = "toy.stale"
        conformance_exemptions = {"ask_each:guess": "was sequential once", "loud": "no such kind"}

    result = check(Stale, None, STRATEGIES, checks=WARNING_CHECKS)
    assert result.failed == [] and result.exempted == [], result
    assert "exemption 'ask_each:guess' matches no warning: remove it" in result.warnings, result.warnings
    assert any(w.startswith("exemption 'loud' is of no known kind") for w in result.warnings), result.warnings
    # a partial run cannot tell a stale exemption: it is not called one
    partial = check(Stale, None, STRATEGIES, checks=["strategies"])
    assert not any("matches no warning" in w for w in partial.warnings), partial.warnings


def test_conformance_cli_prints_exempted_warnings(capsys, monkeypatch):
    from agorabench.cli import main

    real = families.families()
    planted = families.Family(
        name="toy",
        description="a planted test family",
        games={"toy.exempt": "test_conformance_warnings_tier:Exempt"},
        strategies={"toy.exempt": "test_conformance_warnings_tier:STRATEGIES"},
        examples={"toy.exempt": {"rounds": 1}},
        package="tests",
    )
    monkeypatch.setattr(families, "families", lambda: {**real, "toy": planted})
    assert main(["conformance", "toy.exempt", "--check", "strategies"]) == 0
    out = capsys.readouterr().out
    assert f"  exempt: {SEQUENTIAL}" in out and "the planted reason" in out and "warning:" not in out, out
