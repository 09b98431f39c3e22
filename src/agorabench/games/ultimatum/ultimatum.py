"""Ultimatum game (Güth, Schmittberger & Schwarze 1982), repeated for 1–10 one-shot rounds.

Rules. Each round the proposer offers the responder a whole number ``offer`` of the ``pie``
points, 0 ≤ offer ≤ pie (JSON ``{"offer": N}``). Accepted: the responder gets ``offer``, the
proposer ``pie − offer``. Rejected: both get 0. Both players are told each round's result
before the next round; roles never swap. How the responder decides is the ``method``:

- ``direct`` (default): the responder sees the offer and answers ``{"decision": "accept"}`` or
  ``{"decision": "reject"}``;
- ``strategy`` (the strategy method, as MobLab's ultimatum game and Mei et al. 2024 ran it): the
  responder states the smallest offer it accepts, a whole number ``minimum`` of the pie points,
  0 ≤ minimum ≤ pie (JSON ``{"minimum": N}``), without seeing the offer, and the proposer makes
  its offer without knowing the minimum (the proposer is asked first, the responder second, and
  neither prompt nor observation holds the other's decision). The round is accepted iff
  offer ≥ minimum. The result told after the round is the offer and whether it was accepted.

Bad answers are re-asked with the error; an offer that stays invalid becomes ``pie // 2`` (the
equal split, so the responder still faces an ordinary offer), a decision that stays invalid
becomes ``reject`` (no agreement without a clear yes) and a minimum that stays invalid becomes
the whole pie (only an offer of everything is accepted: no agreement without a clear answer,
short of the responder being offered all). Either way the turn is recorded invalid.

Every valid decision notes its ``round`` and its value on the turn: ``offer_share`` = offer /
pie (proposer), ``min_share`` = minimum / pie (responder, strategy method), and in the direct
method the responder's ``offered_share`` = offer / pie and ``accepted`` (1 or 0).

A default-valued ``method`` is left out of the configuration's stored form (and so out of every
game id): the direct games of a study keep the ids they had before the option existed.

Metrics, over the game's R rounds:

- offer_share      = mean of offer / pie over the rounds whose offer was valid (NaN if none);
- min_share        = mean of minimum / pie over the rounds whose minimum was valid (NaN if none,
  and in every direct-method game, which asks for no minimum);
- accepted         = rounds accepted / R (a fallback rejection or fallback minimum counts: it is
  what happened);
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

from pydantic import create_model, Field, model_serializer, SerializerFunctionWrapHandler

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.table import Prompt, Table

PROPOSER, RESPONDER = "proposer", "responder"
ROLES = (PROPOSER, RESPONDER)
#: The methods: the responder answers the offer it sees, or states a minimum before it.
DIRECT, STRATEGY = "direct", "strategy"
#: The phases of the decisions (the turns the human yardstick reads): the proposer's offer, the
#: direct responder's answer, the strategy-method responder's minimum.
OFFER, RESPOND, MINIMUM = "offer", "respond", "minimum"


class UltimatumConfig(GameConfig):
    """``pie``: points to divide each round (≥ 2); ``rounds``: rounds played (1–10); ``method``:
    ``direct`` (the responder answers the offer it sees) or ``strategy`` (the responder states
    its minimum before, and without, seeing the offer)."""

    pie: int = Field(100, ge=2, le=1_000_000)
    rounds: int = Field(1, ge=1, le=10)
    method: Literal["direct", "strategy"] = DIRECT

    @model_serializer(mode="wrap")
    def _stored(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The fields with ``method`` left out when it is the default ``direct``: the stored
        configuration, and so the game id, of a direct game is what it was before the field."""
        data = handler(self)
        if self.method == DIRECT:
            data.pop("method", None)
        return data


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


class Minimum(Action):
    """The responder's minimum under the strategy method: the smallest offer it accepts;
    :func:`minimum_type` bounds it by the pie."""

    response_format: ClassVar = "json"

    minimum: int = Field(ge=0, description="a whole number of points")

    @classmethod
    def format_instructions(cls) -> str:
        hint = cls.model_fields["minimum"].description
        return 'Answer with a JSON object of this form:\n{"minimum": <' + str(hint) + ">}"


@lru_cache(maxsize=None)
def minimum_type(pie: int) -> type[Minimum]:
    """The minimum action of a game with ``pie`` points: 0 ≤ minimum ≤ pie."""
    field = (int, Field(ge=0, le=pie, description=f"a whole number of points from 0 to {pie}"))
    return create_model(f"Minimum_{pie}", __base__=Minimum, __module__=__name__, minimum=field)


class Response(Action):
    """The responder's answer to the offer on the table."""

    response_format: ClassVar = "json"

    lowered_fields: ClassVar = ("decision",)

    decision: Literal["accept", "reject"]

    @classmethod
    def format_instructions(cls) -> str:
        return 'Answer with a JSON object of this form:\n{"decision": "accept"} or {"decision": "reject"}'


def payoffs(pie: int, offer: int, accepted: bool) -> tuple[int, int]:
    """(proposer, responder) points of one round: (pie − offer, offer) if accepted, else (0, 0)."""
    return (pie - offer, offer) if accepted else (0, 0)


def accepts(offer: int, minimum: int) -> bool:
    """The strategy method's rule: an offer is accepted iff offer ≥ minimum."""
    return offer >= minimum


class Ultimatum(Game):
    name = "ultimatum"
    Config = UltimatumConfig
    prompt_dir = Path(__file__).parent / "prompts"

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return ROLES

    async def play(self, table: Table) -> dict[str, Any]:
        c = self.config
        strategy = c.method == STRATEGY
        kind = proposal_type(c.pie)
        system = "system_strategy" if strategy else "system"
        for role in ROLES:
            table.set_system(role, self.text(role).render(system, role=role, pie=c.pie, rounds=c.rounds))
        history: list[dict[str, Any]] = []
        minimums: list[int] = []
        for r in range(1, c.rounds + 1):
            seen = {"pie": c.pie, "round": r, "rounds": c.rounds, "history": [dict(h) for h in history]}
            if strategy:
                seen["method"] = STRATEGY
            fmt = kind.format_instructions()
            text = self.text(PROPOSER).render("offer", pie=c.pie, round=r, rounds=c.rounds, format=fmt)
            prompt = Prompt(text, {**seen, "role": PROPOSER}, phase=OFFER, instructions=fmt)
            offer = (await table.ask(PROPOSER, prompt, kind, fallback=kind(offer=c.pie // 2))).offer
            offer_valid = table.last_valid(PROPOSER)
            if offer_valid:
                table.note_metrics(PROPOSER, {"offer_share": offer / c.pie, "round": r})
            if strategy:
                minimum, decision_valid = await self._minimum(table, seen, r, minimums)
                accepted = accepts(offer, minimum)
                minimums.append(minimum)
            else:
                fmt = Response.format_instructions()
                text = self.text(RESPONDER).render("respond", pie=c.pie, round=r, rounds=c.rounds, offer=offer, keep=c.pie - offer, format=fmt)
                prompt = Prompt(text, {**seen, "role": RESPONDER, "offer": offer}, phase=RESPOND, instructions=fmt)
                answer = await table.ask(RESPONDER, prompt, Response, fallback=Response(decision="reject"))
                decision_valid = table.last_valid(RESPONDER)
                accepted = answer.decision == "accept"
                if decision_valid:
                    table.note_metrics(RESPONDER, {"offered_share": offer / c.pie, "accepted": float(accepted), "round": r})
            decision = "accept" if accepted else "reject"
            got = payoffs(c.pie, offer, accepted)
            history.append({"round": r, "offer": offer, "decision": decision, "offer_valid": offer_valid, "decision_valid": decision_valid, "proposer": got[0], "responder": got[1]})
            if r < c.rounds:
                result = "result_strategy" if strategy else "result"
                for role, points in zip(ROLES, got):
                    table.tell(role, self.text(role).render(result, round=r, pie=c.pie, offer=offer, accepted=accepted, payoff=points))
        outcome: dict[str, Any] = {
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
        if strategy:  # a direct game's outcome keeps the keys it always had
            outcome["method"] = STRATEGY
            outcome["minimums"] = minimums
        return outcome

    async def _minimum(self, table: Table, seen: dict[str, Any], r: int, earlier: list[int]) -> tuple[int, bool]:
        """Ask the responder for round ``r``'s minimum without showing the offer (its
        observation adds its own earlier minimums to the history); note ``min_share`` when valid.
        Returns (minimum, valid); the fallback is the whole pie (module doc)."""
        c = self.config
        kind = minimum_type(c.pie)
        fmt = kind.format_instructions()
        text = self.text(RESPONDER).render("minimum", pie=c.pie, round=r, rounds=c.rounds, format=fmt)
        history = [{**h, "minimum": m} for h, m in zip(seen["history"], earlier)]
        prompt = Prompt(text, {**seen, "history": history, "role": RESPONDER}, phase=MINIMUM, instructions=fmt)
        minimum = (await table.ask(RESPONDER, prompt, kind, fallback=kind(minimum=c.pie))).minimum
        valid = table.last_valid(RESPONDER)
        if valid:
            table.note_metrics(RESPONDER, {"min_share": minimum / c.pie, "round": r})
        return minimum, valid

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """Each round's offer and answer (under the strategy method the responder also reads its
        own minimum), then the points of each side."""
        pie = outcome.get("pie")
        rounds = list(enumerate(zip(outcome.get("offers", []), outcome.get("decisions", [])), start=1))
        minimums = outcome.get("minimums")
        if minimums is not None and role == RESPONDER:
            lines = [f"Round {i}: {o} of {pie} points offered against your minimum of {m}, {d}ed." for (i, (o, d)), m in zip(rounds, minimums)]
        else:
            lines = [f"Round {i}: {o} of {pie} points offered, {d}ed." for i, (o, d) in rounds]
        mine, theirs = (outcome.get("proposer_points"), outcome.get("responder_points")) if role == PROPOSER else (outcome.get("responder_points"), outcome.get("proposer_points"))
        return lines + [f"In all you received {mine} points and the other player {theirs}."]

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """Two decisions a round (the offer and the answer, or the minimum and the offer)."""
        return 2 * config.rounds  # type: ignore[attr-defined]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """Every metric is a share of the pie or of the rounds: 0–1."""
        return {m: (0.0, 1.0) for m in ("offer_share", "min_share", "accepted", "proposer_payoff", "responder_payoff", "efficiency")}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """offer_share, min_share, accepted, proposer_payoff, responder_payoff, efficiency (module
        doc)."""
        pie, rounds = outcome["pie"], outcome["rounds"]
        valid = [o / pie for o, ok in zip(outcome["offers"], outcome["valid_offers"]) if ok]
        minimums = [m / pie for m, ok in zip(outcome.get("minimums", []), outcome["valid_decisions"]) if ok]
        total = pie * rounds
        return {
            "offer_share": sum(valid) / len(valid) if valid else math.nan,
            "min_share": sum(minimums) / len(minimums) if minimums else math.nan,
            "accepted": sum(d == "accept" for d in outcome["decisions"]) / rounds,
            "proposer_payoff": outcome["proposer_points"] / total,
            "responder_payoff": outcome["responder_points"] / total,
            "efficiency": (outcome["proposer_points"] + outcome["responder_points"]) / total,
        }
