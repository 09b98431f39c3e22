"""Ultimatum game (Güth, Schmittberger & Schwarze 1982), repeated for 1–10 one-shot rounds.

Rules. Each round the proposer offers the responder a whole number ``offer`` of the ``pie``
points, 0 ≤ offer ≤ pie (JSON ``{"offer": N}``). The responder sees the offer and answers
``{"decision": "accept"}`` or ``{"decision": "reject"}``. Accept: the responder gets ``offer``,
the proposer ``pie − offer``. Reject: both get 0. Both players are told each round's result
before the next round; roles never swap.

Bad answers are re-asked with the error; an offer that stays invalid becomes ``pie // 2`` (the
equal split, so the responder still faces an ordinary offer) and a decision that stays invalid
becomes ``reject`` (no agreement without a clear yes). Either way the turn is recorded invalid.

Metrics, over the game's R rounds:

- offer_share      = mean of offer / pie over the rounds whose offer was valid (NaN if none);
- accepted         = rounds accepted / R (a fallback rejection counts: it is what happened);
- proposer_payoff  = proposer's points / (pie·R);
- responder_payoff = responder's points / (pie·R);
- efficiency       = (proposer's + responder's points) / (pie·R), the share of the pie realised
  (in this game equal to ``accepted``, since an accepted round realises the whole pie).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import create_model, Field, field_validator

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.table import Prompt, Table

PROPOSER, RESPONDER = "proposer", "responder"
ROLES = (PROPOSER, RESPONDER)


class UltimatumConfig(GameConfig):
    """``pie``: points to divide each round (≥ 2); ``rounds``: rounds played (1–10)."""

    pie: int = Field(100, ge=2, le=1_000_000)
    rounds: int = Field(1, ge=1, le=10)


class Proposal(Action):
    """The proposer's offer to the responder; :func:`proposal_type` bounds it by the pie."""

    response_format: ClassVar = "json"

    offer: int = Field(ge=0, description="a whole number of points")

    @classmethod
    def format_instructions(cls) -> str:
        hint = cls.model_fields["offer"].description
        return 'Answer with a JSON object of this form:\n{"offer": <' + str(hint) + ">}"


@lru_cache(maxsize=None)
def proposal_type(pie: int) -> type[Proposal]:
    """The offer action of a game with ``pie`` points: 0 ≤ offer ≤ pie."""
    field = (int, Field(ge=0, le=pie, description=f"a whole number of points from 0 to {pie}"))
    return create_model(f"Proposal_{pie}", __base__=Proposal, __module__=__name__, offer=field)


class Response(Action):
    """The responder's answer to the offer on the table."""

    response_format: ClassVar = "json"

    decision: Literal["accept", "reject"]

    @field_validator("decision", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.strip().strip(".!").lower() if isinstance(v, str) else v

    @classmethod
    def format_instructions(cls) -> str:
        return 'Answer with a JSON object of this form:\n{"decision": "accept"} or {"decision": "reject"}'


def payoffs(pie: int, offer: int, accepted: bool) -> tuple[int, int]:
    """(proposer, responder) points of one round: (pie − offer, offer) if accepted, else (0, 0)."""
    return (pie - offer, offer) if accepted else (0, 0)


class Ultimatum(Game):
    name = "ultimatum"
    Config = UltimatumConfig
    prompt_dir = Path(__file__).parent / "prompts"

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return ROLES

    async def play(self, table: Table) -> dict[str, Any]:
        c = self.config
        kind = proposal_type(c.pie)
        for role in ROLES:
            table.set_system(role, self.prompts.render("system", role=role, pie=c.pie, rounds=c.rounds))
        history: list[dict[str, Any]] = []
        for r in range(1, c.rounds + 1):
            seen = {"pie": c.pie, "round": r, "rounds": c.rounds, "history": [dict(h) for h in history]}
            fmt = kind.format_instructions()
            text = self.prompts.render("offer", pie=c.pie, round=r, rounds=c.rounds, format=fmt)
            prompt = Prompt(text, {**seen, "role": PROPOSER}, phase="offer", instructions=fmt)
            offer = (await table.ask(PROPOSER, prompt, kind, fallback=kind(offer=c.pie // 2))).offer
            offer_valid = table.last_valid(PROPOSER)
            if offer_valid:
                table.note_metrics(PROPOSER, {"offer_share": offer / c.pie})
            fmt = Response.format_instructions()
            text = self.prompts.render("respond", pie=c.pie, round=r, rounds=c.rounds, offer=offer, keep=c.pie - offer, format=fmt)
            prompt = Prompt(text, {**seen, "role": RESPONDER, "offer": offer}, phase="respond", instructions=fmt)
            answer = await table.ask(RESPONDER, prompt, Response, fallback=Response(decision="reject"))
            decision_valid = table.last_valid(RESPONDER)
            accepted = answer.decision == "accept"
            if decision_valid:
                table.note_metrics(RESPONDER, {"offered_share": offer / c.pie, "accepted": float(accepted)})
            got = payoffs(c.pie, offer, accepted)
            history.append({"round": r, "offer": offer, "decision": answer.decision, "offer_valid": offer_valid, "decision_valid": decision_valid, "proposer": got[0], "responder": got[1]})
            if r < c.rounds:
                for role, points in zip(ROLES, got):
                    table.tell(role, self.prompts.render("result", round=r, pie=c.pie, offer=offer, accepted=accepted, payoff=points))
        return {
            "pie": c.pie,
            "rounds": c.rounds,
            "offers": [h["offer"] for h in history],
            "decisions": [h["decision"] for h in history],
            "valid_offers": [h["offer_valid"] for h in history],
            "valid_decisions": [h["decision_valid"] for h in history],
            "payoffs": {role: [h[role] for h in history] for role in ROLES},
            "proposer_points": sum(h[PROPOSER] for h in history),
            "responder_points": sum(h[RESPONDER] for h in history),
        }

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """Each round's offer and answer, then the points of each side."""
        lines = [f"Round {i}: {o} of {outcome['pie']} points offered, {d}ed." for i, (o, d) in enumerate(zip(outcome.get("offers", []), outcome.get("decisions", [])), start=1)]
        mine, theirs = (outcome.get("proposer_points"), outcome.get("responder_points")) if role == PROPOSER else (outcome.get("responder_points"), outcome.get("proposer_points"))
        return lines + [f"In all you received {mine} points and the other player {theirs}."]

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """offer_share, accepted, proposer_payoff, responder_payoff, efficiency (module doc)."""
        pie, rounds = outcome["pie"], outcome["rounds"]
        valid = [o / pie for o, ok in zip(outcome["offers"], outcome["valid_offers"]) if ok]
        total = pie * rounds
        return {
            "offer_share": sum(valid) / len(valid) if valid else math.nan,
            "accepted": sum(d == "accept" for d in outcome["decisions"]) / rounds,
            "proposer_payoff": outcome["proposer_points"] / total,
            "responder_payoff": outcome["responder_points"] / total,
            "efficiency": (outcome["proposer_points"] + outcome["responder_points"]) / total,
        }
