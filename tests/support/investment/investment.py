"""Investment game: the trust game of Berg, Dickhaut & McCabe (1995), one round (a test fixture).

Rules. The investor holds ``endowment`` points and sends a whole number ``send`` of them,
0 ≤ send ≤ endowment (JSON ``{"send": N}``). The trustee receives ``multiplier · send`` and, when
that is more than 0, returns a whole number ``repay`` of it, 0 ≤ repay ≤ received (JSON
``{"repay": N}``); when nothing was sent the trustee is not asked and returns 0. Points:
investor ``endowment − send + repay``, trustee ``multiplier · send − repay``.

Both bounds depend on the game: the investor's on the configuration (:func:`investment_type`,
one action type per endowment), the trustee's on what the investor sent (:func:`repayment_type`,
one per amount received). A send that stays invalid after the re-asks becomes 0 (no trust
without a clear answer); a repayment that stays invalid becomes 0 (the trustee keeps what it
has). Either way the turn is recorded invalid.

Metrics:

- sent_share      = send / endowment (NaN when the send was invalid);
- returned_share  = repay / received (NaN when nothing was received or the repayment was invalid);
- investor_payoff = investor's points / endowment (0 to multiplier);
- trustee_payoff  = trustee's points / endowment (0 to multiplier);
- efficiency      = (investor's + trustee's points) / (multiplier · endowment), from
  1 / multiplier (nothing sent) to 1 (everything sent).

Subgame-perfect play with money-maximising players: the trustee returns 0 whatever it received,
so the investor sends 0 and the game ends at (endowment, 0).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, create_model

from agorabench.core.actions import Action
from agorabench.core.game import Game, GameConfig
from agorabench.core.table import Prompt, Table

INVESTOR, TRUSTEE = "investor", "trustee"
ROLES = (INVESTOR, TRUSTEE)


class InvestmentConfig(GameConfig):
    """``endowment``: the investor's points (1 to 1,000,000); ``multiplier``: what each point
    sent becomes for the trustee (1 to 10)."""

    endowment: int = Field(10, ge=1, le=1_000_000)
    multiplier: int = Field(3, ge=1, le=10)


class Amount(Action):
    """A JSON answer whose fields are whole numbers. Its format line shows each number bare
    (``{"send": <a whole number of points from 0 to 10>}``): the default JSON instructions would
    quote the field's description, which reads as if a string were wanted."""

    response_format: ClassVar = "json"

    @classmethod
    def format_instructions(cls) -> str:
        fields = ", ".join(f'"{name}": <{info.description or name}>' for name, info in cls.model_fields.items())
        return "Answer with a JSON object of this form:\n{" + fields + "}"


class Investment(Amount):
    """What the investor sends; :func:`investment_type` bounds it by the endowment."""

    send: int = Field(ge=0, description="a whole number of points")


class Repayment(Amount):
    """What the trustee sends back; :func:`repayment_type` bounds it by what was received."""

    repay: int = Field(ge=0, description="a whole number of points")


@lru_cache(maxsize=None)
def investment_type(endowment: int) -> type[Investment]:
    """The investor's action in a game with ``endowment`` points: 0 ≤ send ≤ endowment."""
    field = (int, Field(ge=0, le=endowment, description=f"a whole number of points from 0 to {endowment}"))
    return create_model(f"Investment_{endowment}", __base__=Investment, __module__=__name__, send=field)


@lru_cache(maxsize=None)
def repayment_type(received: int) -> type[Repayment]:
    """The trustee's action after receiving ``received`` points: 0 ≤ repay ≤ received."""
    field = (int, Field(ge=0, le=received, description=f"a whole number of points from 0 to {received}"))
    return create_model(f"Repayment_{received}", __base__=Repayment, __module__=__name__, repay=field)


def points(endowment: int, multiplier: int, send: int, repay: int) -> tuple[int, int]:
    """(investor, trustee) points of one game."""
    return endowment - send + repay, multiplier * send - repay


class InvestmentGame(Game):
    name = "investment"
    Config = InvestmentConfig
    prompt_dir = Path(__file__).parent / "prompts"

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return ROLES

    async def play(self, table: Table) -> dict[str, Any]:
        c = self.config
        for role in ROLES:
            table.set_system(role, self.text(role).render("system", role=role, endowment=c.endowment, multiplier=c.multiplier))
        kind = investment_type(c.endowment)
        fmt = kind.format_instructions()
        text = self.text(INVESTOR).render("invest", endowment=c.endowment, multiplier=c.multiplier, format=fmt)
        seen = {"endowment": c.endowment, "multiplier": c.multiplier}
        prompt = Prompt(text, {**seen, "role": INVESTOR}, phase="invest", instructions=fmt)
        send = (await table.ask(INVESTOR, prompt, kind, fallback=kind(send=0))).send
        send_valid = table.last_valid(INVESTOR)
        received = c.multiplier * send
        repay, repay_valid = 0, None
        if received > 0:
            back = repayment_type(received)
            fmt = back.format_instructions()
            text = self.text(TRUSTEE).render("repay", endowment=c.endowment, sent=send, received=received, format=fmt)
            prompt = Prompt(text, {**seen, "role": TRUSTEE, "sent": send, "received": received}, phase="repay", instructions=fmt)
            repay = (await table.ask(TRUSTEE, prompt, back, fallback=back(repay=0))).repay
            repay_valid = table.last_valid(TRUSTEE)
        investor, trustee = points(c.endowment, c.multiplier, send, repay)
        return {
            "endowment": c.endowment,
            "multiplier": c.multiplier,
            "sent": send,
            "received": received,
            "returned": repay,
            "send_valid": send_valid,
            "repay_valid": repay_valid,
            "investor_points": investor,
            "trustee_points": trustee,
        }

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """What was sent and returned, then the reader's points and the other player's."""
        lines = [f"The investor sent {outcome['sent']} of {outcome['endowment']} points, so the trustee received {outcome['received']}."]
        if outcome["received"]:
            lines.append(f"The trustee sent back {outcome['returned']} points.")
        mine, theirs = (outcome["investor_points"], outcome["trustee_points"]) if role == INVESTOR else (outcome["trustee_points"], outcome["investor_points"])
        return lines + [f"You ended with {mine} points and the other player with {theirs}."]

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """The investor's send and the trustee's repayment."""
        return 2

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """The shares 0–1, the investor's payoff 0 to the multiplier, the trustee's 0 to the
        multiplier, the efficiency 1 / multiplier to 1."""
        m = float(config.multiplier)  # type: ignore[attr-defined]
        return {"sent_share": (0.0, 1.0), "returned_share": (0.0, 1.0), "investor_payoff": (0.0, m), "trustee_payoff": (0.0, m), "efficiency": (1 / m, 1.0)}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """sent_share, returned_share, investor_payoff, trustee_payoff, efficiency (module doc)."""
        endowment, multiplier, received = outcome["endowment"], outcome["multiplier"], outcome["received"]
        return {
            "sent_share": outcome["sent"] / endowment if outcome["send_valid"] else math.nan,
            "returned_share": outcome["returned"] / received if received and outcome["repay_valid"] else math.nan,
            "investor_payoff": outcome["investor_points"] / endowment,
            "trustee_payoff": outcome["trustee_points"] / endowment,
            "efficiency": (outcome["investor_points"] + outcome["trustee_points"]) / (multiplier * endowment),
        }
