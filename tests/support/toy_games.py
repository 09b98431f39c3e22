"""Toy games for the conformance tests (tests/house/test_conformance.py, test_conformance_bounds.py):
one role calls a coin. Each broken variant breaks one rule, so that a check is seen to fail on
it; a test plants them in the registry (:func:`plant_family`, by ``"support.toy_games:NAME"``)
or hands a class to ``conformance.check``.

Two lines of games: ``Coin`` (the coin is Nature's, no declared facts) and ``Toy`` (declares
``max_turns`` and ``metric_ranges``, marks its answer format)."""

from __future__ import annotations

import random
from typing import Any, ClassVar, Literal

from agorabench import families
from agorabench.core.actions import Action
from agorabench.core.agents import Strategy
from agorabench.core.game import Game, GameConfig
from agorabench.core.speech import FORMAT_MARK
from agorabench.core.table import Prompt, Reply, Table, TurnRequest


class Call(Action):
    response_format: ClassVar = "json"
    call: Literal["heads", "tails"]


class Count(Action):
    """A number asked in JSON with the default format line, which quotes its placeholder."""

    response_format: ClassVar = "json"
    count: int


class CoinConfig(GameConfig):
    flips: int = 2


# --- Coin: the planted coin family, good and broken ----------------------------------------------


class Coin(Game):
    """One role calls a coin ``flips`` times; a right call scores 1. The coin is Nature's."""

    name = "coin.fair"
    Config = CoinConfig

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return ("caller",)

    def toss(self, table: Table) -> str:
        return table.rng.choice(["heads", "tails"])

    async def play(self, table: Table) -> dict[str, Any]:
        right = 0
        for flip in range(self.config.flips):
            table.tell("caller", f"Flip {flip + 1}.")
            call = await table.ask("caller", Prompt(text="Call the coin.", observation={"flip": flip}, phase="call"), Call, fallback=Call(call="heads"))
            right += int(call.call == self.toss(table))
        return {"right": right}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        return {"score": outcome["right"] / self.config.flips}


class GlobalCoin(Coin):
    """Broken: tosses with the process-wide random state, so one seed does not give one game."""

    name = "coin.global"

    def toss(self, table: Table) -> str:
        return random.choice(["heads", "tails"])

    async def play(self, table: Table) -> dict[str, Any]:
        outcome = await super().play(table)
        return {**outcome, "noise": random.random()}


class SetCoin(Coin):
    """Broken: an outcome that is not JSON data and a metric that is not a number."""

    name = "coin.set"

    async def play(self, table: Table) -> dict[str, Any]:
        outcome = await super().play(table)
        return {**outcome, "calls": {"heads"}}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, Any]:
        return {"score": "high"}


class ToldCoin(Coin):
    """Tells the caller the rules in a system message; ``instructions()`` says it right."""

    name = "coin.told"

    async def play(self, table: Table) -> dict[str, Any]:
        table.set_system("caller", f"Call {self.config.flips} flips.")
        return await super().play(table)


class LyingCoin(ToldCoin):
    """Broken: says other instructions than the game then gives."""

    name = "coin.lying"

    async def instructions(self, seed: int = 0, nature_seed: int | None = None):
        told = await super().instructions(seed, nature_seed)
        return type(told)({"caller": "Call any number of flips."}, told.formats)


class MarkedCoin(Coin):
    """Marks where its question's answer format begins, as templates do with ``{{ format_begins }}``."""

    name = "coin.marked"

    async def play(self, table: Table) -> dict[str, Any]:
        for flip in range(self.config.flips):
            await table.ask("caller", Prompt(f"Call flip {flip + 1}. {FORMAT_MARK}{Call.format_instructions()}", phase="call"), Call, fallback=Call(call="heads"))
        return {"right": 0}


class LeakyCoin(MarkedCoin):
    """Broken: puts marked template text into its outcome."""

    name = "coin.leaky"

    async def play(self, table: Table) -> dict[str, Any]:
        return {**await super().play(table), "said": f"{FORMAT_MARK}Answer in JSON."}


# --- Toy: a coin game that declares its facts, and games that break them ----------------------------


def question(n: int) -> Prompt:
    """Flip ``n``'s question, its answer format marked and passed as ``instructions=``."""
    fmt = Call.format_instructions()
    return Prompt(f"Call flip {n}. {FORMAT_MARK}{fmt}", {"flip": n}, phase="call", instructions=fmt)


class Toy(Coin):
    """One role calls a coin ``flips`` times; the score is the share of heads called."""

    name = "toy.coin"

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        return config.flips  # type: ignore[attr-defined]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        return {"score": (0.0, 1.0)}

    async def play(self, table: Table) -> dict[str, Any]:
        heads = 0
        for flip in range(self.config.flips):
            call = await table.ask("caller", question(flip + 1), Call, fallback=Call(call="heads"))
            heads += call.call == "heads"
        return {"heads": heads}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        return {"score": outcome["heads"] / self.config.flips}


class Forever(Toy):
    """Broken: never ends (asks again and again), and declares no turn bound."""

    name = "toy.forever"

    @classmethod
    def max_turns(cls, config: GameConfig) -> None:
        return None

    async def play(self, table: Table) -> dict[str, Any]:
        n = 0
        while True:
            n += 1
            await table.ask("caller", question(n), Call, fallback=Call(call="heads"))


class Runaway(Forever):
    """Broken: declares its bound and goes past it."""

    name = "toy.runaway"

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        return config.flips  # type: ignore[attr-defined]


class Overshoot(Toy):
    """Broken: a metric outside the range it declares."""

    name = "toy.overshoot"

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        return {"score": 2.0}


class Quoted(Toy):
    """Plays right, but asks a number with a quoted placeholder and a question without
    ``instructions=``: warnings, not failures."""

    name = "toy.quoted"

    async def play(self, table: Table) -> dict[str, Any]:
        await table.ask("caller", Prompt(f"How many? {FORMAT_MARK}{Count.format_instructions()}", phase="count"), Count, fallback=Count(count=0))
        return await super().play(table)

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        return config.flips + 1  # type: ignore[attr-defined]


class Spinning(Toy):
    """Broken: loops without ever awaiting (no turn is asked, the event loop never runs again)."""

    name = "toy.spinning"

    async def play(self, table: Table) -> dict[str, Any]:
        while True:
            pass


# --- strategies -----------------------------------------------------------------------------------


class Heads(Strategy):
    """Calls heads; asked a number, says 1."""

    def decide(self, request: TurnRequest) -> Action:
        return Count(count=1) if request.action_type is Count else Call(call="heads")


class Edge(Strategy):
    """Broken: answers something the rules reject."""

    async def act(self, request: TurnRequest) -> Reply:
        return Reply(text='{"call": "edge"}')


GOOD = {"heads": Heads}
BAD = {"heads": Heads, "edge": Edge}


def plant_family(monkeypatch: Any, name: str, games: dict[str, str], strategies: dict[str, str], examples: dict[str, dict[str, Any]] | None = None) -> None:
    """Register a test family ``name`` beside the real ones for the test (``monkeypatch``):
    ``games`` and ``strategies`` by game name as ``"module:attribute"`` targets."""
    real = families.families()
    planted = families.Family(name=name, description="a planted test family", games=games, strategies=strategies, examples=examples or {}, package="tests")
    monkeypatch.setattr(families, "families", lambda: {**real, name: planted})
