"""Dictator game (Kahneman, Knetsch & Thaler 1986; Forsythe, Horowitz, Savin & Sefton 1994),
repeated for 1–10 rounds.

Rules. Each round the dictator holds ``endowment`` points and gives the recipient a whole number
``give`` of them, 0 ≤ give ≤ endowment (JSON ``{"give": N}``). The recipient receives ``give``
and the dictator keeps ``endowment − give``. The recipient is a passive role: named in the
prompts, never asked. Every round starts with a fresh endowment, and the dictator is told each
round's result before the next one.

Framing (``framing``): ``anonymous`` (default) tells the dictator that nobody, the recipient
included, learns who made the decision; ``observed`` tells the dictator that the recipient will
learn the decision and see it attributed to the dictator. The two framings differ only in one
paragraph of the dictator's instructions (the templates ``framing_anonymous.j2`` and
``framing_observed.j2``).

Bad answers are re-asked with the error; an answer that stays invalid becomes ``give = 0`` (the
dictator keeps everything: nothing is given without a clear decision to give) and the turn is
recorded invalid.

Every valid decision notes ``given_share`` = give / endowment and its ``round`` on the turn.

Metrics, over the game's R rounds:

- given_share      = mean of give / endowment over the rounds with a valid decision (NaN if none:
  the fallback 0 is not a decision and is left out);
- dictator_payoff  = dictator's points / (endowment·R);
- recipient_payoff = recipient's points / (endowment·R) (= 1 − dictator_payoff; fallback rounds
  count with what they paid).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import create_model, Field

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.table import Prompt, Table

DICTATOR, RECIPIENT = "dictator", "recipient"
ROLES = (DICTATOR, RECIPIENT)
#: The phase of the giving decision (the turns the human yardstick reads).
GIVE = "give"
FRAMINGS = ("anonymous", "observed")


class DictatorConfig(GameConfig):
    """``endowment``: points the dictator holds each round (≥ 1); ``rounds``: rounds played (1–10);
    ``framing``: ``anonymous`` (nobody learns who decided) or ``observed`` (the recipient learns
    the decision and that the dictator made it)."""

    endowment: int = Field(100, ge=1, le=1_000_000)
    rounds: int = Field(1, ge=1, le=10)
    framing: Literal["anonymous", "observed"] = "anonymous"


class Gift(Action):
    """The dictator's gift to the recipient; :func:`gift_type` bounds it by the endowment."""

    response_format: ClassVar = "json"

    give: int = Field(ge=0, description="a whole number of points")

    @classmethod
    def format_instructions(cls) -> str:
        hint = cls.model_fields["give"].description
        return 'Answer with a JSON object of this form:\n{"give": <' + str(hint) + ">}"


@lru_cache(maxsize=None)
def gift_type(endowment: int) -> type[Gift]:
    """The gift action of a game with ``endowment`` points: 0 ≤ give ≤ endowment."""
    field = (int, Field(ge=0, le=endowment, description=f"a whole number of points from 0 to {endowment}"))
    return create_model(f"Gift_{endowment}", __base__=Gift, __module__=__name__, give=field)


def payoffs(endowment: int, give: int) -> tuple[int, int]:
    """(dictator, recipient) points of one round: (endowment − give, give)."""
    return endowment - give, give


class Dictator(Game):
    name = "dictator"
    Config = DictatorConfig
    prompt_dir = Path(__file__).parent / "prompts"
    passive_roles = (RECIPIENT,)

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return ROLES

    async def play(self, table: Table) -> dict[str, Any]:
        c = self.config
        kind = gift_type(c.endowment)
        words = self.text(DICTATOR)  # a person's wording when a person decides (Game.text)
        table.set_system(DICTATOR, words.render("system", endowment=c.endowment, rounds=c.rounds, framing=c.framing))
        given: list[int] = []
        valid: list[bool] = []
        for r in range(1, c.rounds + 1):
            history = [{"round": i, "give": g, "keep": c.endowment - g} for i, g in enumerate(given, start=1)]
            observation = {"role": DICTATOR, "endowment": c.endowment, "round": r, "rounds": c.rounds, "framing": c.framing, "history": history}
            fmt = kind.format_instructions()
            text = words.render("give", endowment=c.endowment, round=r, rounds=c.rounds, format=fmt)
            prompt = Prompt(text, observation, phase=GIVE, instructions=fmt)
            give = (await table.ask(DICTATOR, prompt, kind, fallback=kind(give=0))).give
            ok = table.last_valid(DICTATOR)
            if ok:
                table.note_metrics(DICTATOR, {"given_share": give / c.endowment, "round": r})
            given.append(give)
            valid.append(ok)
            if r < c.rounds:
                table.tell(DICTATOR, words.render("result", round=r, endowment=c.endowment, give=give, keep=c.endowment - give))
        points = [payoffs(c.endowment, g) for g in given]
        return {
            "endowment": c.endowment,
            "rounds": c.rounds,
            "framing": c.framing,
            "given": given,
            "valid": valid,
            "payoffs": {DICTATOR: [p[0] for p in points], RECIPIENT: [p[1] for p in points]},
            "dictator_points": sum(p[0] for p in points),
            "recipient_points": sum(p[1] for p in points),
        }

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """Each round's gift, then the points of each side, from ``role``'s point of view."""
        endowment = outcome.get("endowment")
        given = outcome.get("given", [])
        if role == DICTATOR:
            lines = [f"Round {i}: you gave {g} of your {endowment} points to the other person and kept {endowment - g}." for i, g in enumerate(given, start=1)]
            return lines + [f"In all you kept {outcome.get('dictator_points')} points and the other person received {outcome.get('recipient_points')}."]
        lines = [f"Round {i}: the other person gave you {g} of their {endowment} points." for i, g in enumerate(given, start=1)]
        return lines + [f"In all you received {outcome.get('recipient_points')} points and the other person kept {outcome.get('dictator_points')}."]

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """One decision a round."""
        return config.rounds  # type: ignore[attr-defined]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """Every metric is a share of what the dictator held: 0–1."""
        return {m: (0.0, 1.0) for m in ("given_share", "dictator_payoff", "recipient_payoff")}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """given_share, dictator_payoff, recipient_payoff (module doc)."""
        endowment, rounds = outcome["endowment"], outcome["rounds"]
        shares = [g / endowment for g, ok in zip(outcome["given"], outcome["valid"]) if ok]
        total = endowment * rounds
        return {
            "given_share": sum(shares) / len(shares) if shares else math.nan,
            "dictator_payoff": outcome["dictator_points"] / total,
            "recipient_payoff": outcome["recipient_points"] / total,
        }
