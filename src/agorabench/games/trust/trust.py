"""Trust game (Berg, Dickhaut & McCabe 1995, "Trust, reciprocity, and social history", Games and
Economic Behavior 10:122–142), repeated for 1–10 rounds with fixed roles.

Rules of a round. The investor holds ``endowment`` points (default 10) and sends a whole number
``send`` of them, 0 ≤ send ≤ endowment (JSON ``{"send": N}``). Each point sent becomes
``multiplier`` points (default 3) for the trustee, who also holds a show-up amount
``trustee_endowment`` (default 10: in Berg et al. both rooms were paid $10 on arrival and only
room A could send). The trustee returns a whole number of what it received:

- ``method = "direct"`` (default): the trustee learns the amount and answers
  ``{"send_back": N}``, 0 ≤ N ≤ multiplier·send. When nothing was sent the trustee is not asked
  and returns 0;
- ``method = "strategy"`` (the strategy method): before learning the amount the trustee states
  what it would return for every amount k = 1..endowment, one field ``back_if_k`` per amount
  (0 ≤ back_if_k ≤ multiplier·k) in one answer; the stated return for the amount actually sent
  is carried out (nothing sent: nothing returned). The trustee is asked every round. The
  method needs endowment ≤ 20, so that a person's form and a model's answer stay short.

Points of a round: investor = endowment − send + returned; trustee = trustee_endowment +
multiplier·send − returned. Both are told the round's result before the next round.

Fallbacks: a send that stays invalid after the re-asks becomes 0 (no trust without a clear
answer); a return (or a stated plan) that stays invalid becomes 0 (for every amount): the
trustee keeps what it received. Either way the turn is recorded invalid.

Noted for every valid decision (``table.note_metrics``): ``round``; the investor's
``sent_share`` = send / endowment; the trustee's ``returned_share`` = returned /
(multiplier·send) (direct; under the strategy method the share stated for the amount actually
sent, noted only when something was sent) with, in the direct method, ``invested_share`` =
send / endowment of the amount it decided on; under the strategy method ``planned_share`` =
the mean over k = 1..endowment of back_if_k / (multiplier·k).

Metrics, over the game's R rounds (a metric that cannot be computed is NaN):

- sent_share      = mean of send / endowment over the rounds whose send was valid (NaN if none);
- returned_share  = mean of returned / (multiplier·send) over the rounds with something sent
  and a valid return (NaN when nothing was ever sent, or no such return was valid);
- investor_payoff = investor's points / (R·endowment);
- trustee_payoff  = trustee's points / (R·endowment);
- efficiency      = (investor's + trustee's points) / (R·(multiplier·endowment +
  trustee_endowment)): the share of the most the pair could hold (everything sent), from
  (endowment + trustee_endowment) / (multiplier·endowment + trustee_endowment) when nothing is
  sent, to 1.

Subgame-perfect play with money-maximising players: the trustee returns 0 whatever it received,
so the investor sends 0 and every round ends at (endowment, trustee_endowment).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import create_model, Field, model_validator

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.table import Prompt, Table

INVESTOR, TRUSTEE = "investor", "trustee"
ROLES = (INVESTOR, TRUSTEE)
DIRECT, STRATEGY = "direct", "strategy"
#: The phases of the decisions: the investor's send, the trustee's return (direct method) and
#: the trustee's stated return for every amount (strategy method).
SEND, RETURN, PLAN = "send", "return", "plan"
#: The largest endowment the strategy method takes (one field per amount).
MAX_PLAN_AMOUNTS = 20


class TrustConfig(GameConfig):
    """``endowment``: the investor's points each round (1 to 1,000,000; at most 20 under the
    strategy method); ``multiplier``: what each point sent becomes for the trustee (1 to 10);
    ``trustee_endowment``: the trustee's own points each round (0 to 1,000,000); ``rounds``:
    rounds played (1–10); ``method``: ``direct`` or ``strategy`` (module doc)."""

    endowment: int = Field(10, ge=1, le=1_000_000)
    multiplier: int = Field(3, ge=1, le=10)
    trustee_endowment: int = Field(10, ge=0, le=1_000_000)
    rounds: int = Field(1, ge=1, le=10)
    method: Literal["direct", "strategy"] = DIRECT

    @model_validator(mode="after")
    def _plan_fits(self) -> "TrustConfig":
        if self.method == STRATEGY and self.endowment > MAX_PLAN_AMOUNTS:
            raise ValueError(f"the strategy method asks one return per amount that could be sent: endowment must be at most {MAX_PLAN_AMOUNTS}, not {self.endowment}")
        return self


class Amounts(Action):
    """A JSON answer whose fields are whole numbers, each shown bare in the format line
    (``{"send": <a whole number of points from 0 to 10>}``): the default JSON line would quote
    the description, which reads as if text were wanted."""

    response_format: ClassVar = "json"

    @classmethod
    def format_instructions(cls) -> str:
        fields = ", ".join(f'"{name}": <{info.description or name}>' for name, info in cls.model_fields.items())
        return "Answer with a JSON object of this form:\n{" + fields + "}"


class Sending(Amounts):
    """What the investor sends; :func:`send_type` bounds it by the endowment."""

    send: int = Field(ge=0, description="a whole number of points")


class SendingBack(Amounts):
    """What the trustee returns of what it received; :func:`back_type` bounds it."""

    send_back: int = Field(ge=0, description="a whole number of points")


class Plan(Amounts):
    """The trustee's return for every amount that could be sent (strategy method), one field
    ``back_if_k`` per amount k; :func:`plan_type` makes the fields of a configuration."""

    @classmethod
    def format_instructions(cls) -> str:
        lines = ",\n".join(f'  "{name}": <{info.description or name}>' for name, info in cls.model_fields.items())
        return "Answer with a JSON object of this form, one entry for each amount that could be sent:\n{\n" + lines + "\n}"

    def returns(self) -> dict[int, int]:
        """The stated return for each amount sent (amount -> points returned)."""
        return {int(name.removeprefix("back_if_")): value for name, value in self.model_dump().items()}


def plan_field(amount: int) -> str:
    """The name of the strategy-method field for ``amount`` points sent."""
    return f"back_if_{amount}"


@lru_cache(maxsize=None)
def send_type(endowment: int) -> type[Sending]:
    """The investor's action in a game with ``endowment`` points: 0 ≤ send ≤ endowment."""
    field = (int, Field(ge=0, le=endowment, description=f"a whole number of points from 0 to {endowment}"))
    return create_model(f"Sending_{endowment}", __base__=Sending, __module__=__name__, send=field)


@lru_cache(maxsize=None)
def back_type(received: int) -> type[SendingBack]:
    """The trustee's action after receiving ``received`` points: 0 ≤ send_back ≤ received."""
    field = (int, Field(ge=0, le=received, description=f"a whole number of points from 0 to {received}"))
    return create_model(f"SendingBack_{received}", __base__=SendingBack, __module__=__name__, send_back=field)


@lru_cache(maxsize=None)
def plan_type(endowment: int, multiplier: int) -> type[Plan]:
    """The trustee's strategy-method action: for every k = 1..endowment a field ``back_if_k``
    with 0 ≤ back_if_k ≤ multiplier·k. Each description names the amount, what the trustee
    would receive and the bound (a person's form shows it as the field's label)."""

    def field(k: int) -> tuple[type[int], Any]:
        sent = "1 point is" if k == 1 else f"{k} points are"
        hint = f"if {sent} sent (you receive {multiplier * k}): points you send back, a whole number from 0 to {multiplier * k}"
        return (int, Field(ge=0, le=multiplier * k, description=hint))

    fields = {plan_field(k): field(k) for k in range(1, endowment + 1)}
    return create_model(f"Plan_{endowment}_{multiplier}", __base__=Plan, __module__=__name__, **fields)  # type: ignore[call-overload]


def payoffs(endowment: int, multiplier: int, trustee_endowment: int, sent: int, returned: int) -> tuple[int, int]:
    """(investor, trustee) points of one round: (endowment − sent + returned,
    trustee_endowment + multiplier·sent − returned)."""
    return endowment - sent + returned, trustee_endowment + multiplier * sent - returned


def equalising_return(endowment: int, multiplier: int, trustee_endowment: int, sent: int) -> int:
    """The return r in 0..multiplier·sent that brings the two players' points of the round
    closest together: the two differ by trustee_endowment − endowment + (multiplier + 1)·sent −
    2r, so r is half of that gap's first three terms, clipped to the range; of two equally
    close returns (an odd gap), the smaller."""
    ideal = (trustee_endowment - endowment + (multiplier + 1) * sent) // 2
    return min(max(ideal, 0), multiplier * sent)


class Trust(Game):
    name = "trust"
    Config = TrustConfig
    prompt_dir = Path(__file__).parent / "prompts"

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return ROLES

    def _render(self, reader: str, template: str, **values: Any) -> str:
        """The template ``template`` as the player in role ``reader`` reads it (a person's
        wording when a person plays it), with the configuration filled in."""
        c = self.config
        common = {"endowment": c.endowment, "multiplier": c.multiplier, "trustee_endowment": c.trustee_endowment, "rounds": c.rounds, "method": c.method}
        return self.text(reader).render(template, **common, **values)

    async def play(self, table: Table) -> dict[str, Any]:
        c = self.config
        for role in ROLES:
            table.set_system(role, self._render(role, "system", role=role))
        send_kind = send_type(c.endowment)
        rounds: list[dict[str, Any]] = []
        for r in range(1, c.rounds + 1):
            seen = {"endowment": c.endowment, "multiplier": c.multiplier, "trustee_endowment": c.trustee_endowment, "round": r, "rounds": c.rounds, "method": c.method, "history": [dict(h) for h in rounds]}
            fmt = send_kind.format_instructions()
            prompt = Prompt(self._render(INVESTOR, SEND, round=r, format=fmt), {**seen, "role": INVESTOR}, phase=SEND, instructions=fmt)
            sent = (await table.ask(INVESTOR, prompt, send_kind, fallback=send_kind(send=0))).send
            send_valid = table.last_valid(INVESTOR)
            if send_valid:
                table.note_metrics(INVESTOR, {"sent_share": sent / c.endowment, "round": r})
            received = c.multiplier * sent
            returned, return_valid, plan = await (self._plan if c.method == STRATEGY else self._return)(table, seen, r, sent)
            investor, trustee = payoffs(c.endowment, c.multiplier, c.trustee_endowment, sent, returned)
            rounds.append({"round": r, "sent": sent, "received": received, "returned": returned, "send_valid": send_valid, "return_valid": return_valid, "plan": plan, "investor": investor, "trustee": trustee})
            if r < c.rounds:
                for role, points in ((INVESTOR, investor), (TRUSTEE, trustee)):
                    table.tell(role, self._render(role, "result", round=r, sent=sent, received=received, returned=returned, points=points))
        return {
            "endowment": c.endowment,
            "multiplier": c.multiplier,
            "trustee_endowment": c.trustee_endowment,
            "rounds": c.rounds,
            "method": c.method,
            "sent": [h["sent"] for h in rounds],
            "received": [h["received"] for h in rounds],
            "returned": [h["returned"] for h in rounds],
            "valid_sends": [h["send_valid"] for h in rounds],
            "valid_returns": [h["return_valid"] for h in rounds],
            "plans": [h["plan"] for h in rounds],
            "payoffs": {INVESTOR: [h["investor"] for h in rounds], TRUSTEE: [h["trustee"] for h in rounds]},
            "investor_points": sum(h["investor"] for h in rounds),
            "trustee_points": sum(h["trustee"] for h in rounds),
        }

    async def _return(self, table: Table, seen: dict[str, Any], r: int, sent: int) -> tuple[int, bool | None, None]:
        """Direct method: the trustee, told the amount, returns part of it; not asked when
        nothing was sent. Returns (returned, valid: None when not asked, no plan)."""
        received = self.config.multiplier * sent
        if received == 0:
            return 0, None, None
        kind = back_type(received)
        fmt = kind.format_instructions()
        text = self._render(TRUSTEE, RETURN, round=r, sent=sent, received=received, format=fmt)
        prompt = Prompt(text, {**seen, "role": TRUSTEE, "sent": sent, "received": received}, phase=RETURN, instructions=fmt)
        returned = (await table.ask(TRUSTEE, prompt, kind, fallback=kind(send_back=0))).send_back
        valid = table.last_valid(TRUSTEE)
        if valid:
            table.note_metrics(TRUSTEE, {"returned_share": returned / received, "invested_share": sent / self.config.endowment, "round": r})
        return returned, valid, None

    async def _plan(self, table: Table, seen: dict[str, Any], r: int, sent: int) -> tuple[int, bool | None, list[int] | None]:
        """Strategy method: the trustee states a return for every amount without learning the
        one sent; the stated return for ``sent`` is carried out. Returns (returned, valid,
        the stated returns for 1..endowment)."""
        c = self.config
        kind = plan_type(c.endowment, c.multiplier)
        fmt = kind.format_instructions()
        text = self._render(TRUSTEE, PLAN, round=r, format=fmt)
        prompt = Prompt(text, {**seen, "role": TRUSTEE, "amounts": list(range(1, c.endowment + 1))}, phase=PLAN, instructions=fmt)
        plan = (await table.ask(TRUSTEE, prompt, kind, fallback=kind(**{plan_field(k): 0 for k in range(1, c.endowment + 1)}))).returns()
        valid = table.last_valid(TRUSTEE)
        returned = plan[sent] if sent > 0 else 0
        if valid:
            noted = {"planned_share": sum(plan[k] / (c.multiplier * k) for k in plan) / len(plan), "round": r}
            if sent > 0:
                noted["returned_share"] = returned / (c.multiplier * sent)
            table.note_metrics(TRUSTEE, noted)
        return returned, valid, [plan[k] for k in sorted(plan)]

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """Each round's amounts in words, then the reader's points and the other player's."""
        many = outcome["rounds"] > 1
        lines = []
        for i, (sent, received, returned) in enumerate(zip(outcome["sent"], outcome["received"], outcome["returned"]), start=1):
            start = f"Round {i}: the" if many else "The"
            if sent == 0:
                lines.append(f"{start} investor sent nothing of {outcome['endowment']} points, so nothing came back.")
            else:
                lines.append(f"{start} investor sent {sent} of {outcome['endowment']} points, the trustee received {received} and sent back {returned}.")
        mine, theirs = (outcome["investor_points"], outcome["trustee_points"]) if role == INVESTOR else (outcome["trustee_points"], outcome["investor_points"])
        return lines + [f"In all you ended with {mine} points and the other player with {theirs}."]

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """Two decisions a round (the send and the return, or the plan and the send)."""
        return 2 * config.rounds  # type: ignore[attr-defined]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """The shares 0–1; the investor's payoff up to the multiplier (all sent, all returned);
        the trustee's up to (its endowment + multiplier·endowment) / endowment; the efficiency
        from (endowment + trustee_endowment) / (multiplier·endowment + trustee_endowment) to 1."""
        e, m, te = config.endowment, config.multiplier, config.trustee_endowment  # type: ignore[attr-defined]
        return {
            "sent_share": (0.0, 1.0), "returned_share": (0.0, 1.0),
            "investor_payoff": (0.0, float(m)), "trustee_payoff": (0.0, (te + m * e) / e),
            "efficiency": ((e + te) / (m * e + te), 1.0),
        }

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """sent_share, returned_share, investor_payoff, trustee_payoff, efficiency (module doc)."""
        e, m, te, rounds = outcome["endowment"], outcome["multiplier"], outcome["trustee_endowment"], outcome["rounds"]
        sent = [s / e for s, ok in zip(outcome["sent"], outcome["valid_sends"]) if ok]
        back = [b / (m * s) for s, b, ok in zip(outcome["sent"], outcome["returned"], outcome["valid_returns"]) if s > 0 and ok]
        return {
            "sent_share": sum(sent) / len(sent) if sent else math.nan,
            "returned_share": sum(back) / len(back) if back else math.nan,
            "investor_payoff": outcome["investor_points"] / (rounds * e),
            "trustee_payoff": outcome["trustee_points"] / (rounds * e),
            "efficiency": (outcome["investor_points"] + outcome["trustee_points"]) / (rounds * (m * e + te)),
        }
