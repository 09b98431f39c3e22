"""What the three GLEE families share: the two roles, the horizon convention, accept/reject
decisions, money formatting and the per-config cache of offer action types.

Horizon: ``horizon`` is a number of rounds told to both players, or ``"inf"`` — the paper's
"infinite" horizon, a large number of rounds (``infinite_rounds``) that players are not told.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BeforeValidator, Field, field_validator

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.speech import format_part
from ...core.table import Prompt, Table

PROMPTS = Path(__file__).parent / "prompts"

ALICE, BOB = "alice", "bob"
ROLES = (ALICE, BOB)
NAMES = {ALICE: "Alice", BOB: "Bob"}

#: Most rounds a game may last (a horizon beyond it is a typo, and would block for hours).
MAX_ROUNDS = 10_000

#: ``"inf"`` or a positive number of rounds known to the players.
Horizon = Union[int, Literal["inf"]]


def other(role: str) -> str:
    return BOB if role == ALICE else ALICE


def rounds_to_play(horizon: Horizon, infinite_rounds: int) -> int:
    """Rounds actually played: the stated horizon, or the hidden large one for ``"inf"``."""
    return infinite_rounds if horizon == "inf" else int(horizon)


def horizon_known(horizon: Horizon) -> int | None:
    """The horizon as the players know it (``None`` when it is "infinite")."""
    return None if horizon == "inf" else int(horizon)


def check_horizon(value: Any) -> Any:
    """Accept ``"inf"``/``"infinite"``/``None`` for the hidden horizon, else a positive int."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("inf", "infinite", "infinity", "∞")):
        return "inf"
    if isinstance(value, float) and value == float("inf"):
        return "inf"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 1 <= value <= MAX_ROUNDS and int(value) == value:
        return int(value)
    raise ValueError(f"horizon must be a number of rounds from 1 to {MAX_ROUNDS} or 'inf', not {value!r}")


def money(x: float) -> str:
    """An amount in dollars with thousands separators and at most two decimals."""
    if abs(x - round(x)) < 1e-9:
        return f"${round(x):,}"
    return f"${x:,.2f}"


def percent(x: float) -> str:
    return f"{x * 100:g}%"


class GleeConfig(GameConfig):
    """Parameters every GLEE family has: the amount M at stake, the horizon, whether each side
    knows the other's private parameter, and free-text messages. Families set their own
    defaults (the paper's Table 8)."""

    money: float = Field(10_000, gt=0, le=1e12)
    horizon: Horizon = "inf"
    complete_info: bool = True
    messages: bool = False
    #: Rounds actually played when ``horizon = "inf"``.
    infinite_rounds: int = Field(99, ge=1, le=MAX_ROUNDS)

    @field_validator("horizon", mode="before")
    @classmethod
    def _horizon(cls, v: Any) -> Any:
        return check_horizon(v)


class Decision(Action):
    """Accept or reject the offer on the table."""

    response_format: ClassVar = "json"

    lowered_fields: ClassVar = ("decision",)

    decision: Literal["accept", "reject"]


class YesNo(Action):
    """A yes/no answer (the persuasion seller's binary signal, the buyer's purchase)."""

    response_format: ClassVar = "json"

    lowered_fields: ClassVar = ("decision",)

    decision: Literal["yes", "no"]

    @field_validator("decision", mode="before")
    @classmethod
    def _boolean(cls, v: Any) -> Any:
        return ("yes" if v else "no") if isinstance(v, bool) else v


def _as_text(value: Any) -> Any:
    return "" if value is None else str(value)


#: The free-text message an offer may carry to the other player (bargaining, negotiation): any
#: value read as text, none as "". One field, declared ``message: Message = ""``.
Message = Annotated[str, BeforeValidator(_as_text), Field(description="your message to the other player")]


class JsonForm(Action):
    """JSON actions whose format line shows numbers bare and text quoted, e.g.
    ``{"price": <the price you offer>, "message": "<your message>"}``, so a model is not led
    to answer a number as a string."""

    response_format: ClassVar = "json"

    @classmethod
    def format_instructions(cls) -> str:
        parts = []
        for name, f in cls.model_fields.items():
            hint = f.description or name
            parts.append(f'"{name}": "<{hint}>"' if name in cls.text_fields else f'"{name}": <{hint}>')
        return "Answer with a JSON object of this form:\n{" + ", ".join(parts) + "}"


class AlternatingOffers(Game):
    """The protocol bargaining and negotiation share.

    Alice proposes in odd rounds and Bob in even rounds, for ``rounds_to_play`` rounds. The
    responder accepts (the game ends with that offer) or rejects (next round). A proposal that
    stays invalid after re-asking forfeits the round; a response that stays invalid counts as a
    rejection. Subclasses give the offer type, its terms, the template values and the outcomes.
    Templates used: ``system``, ``offer``, ``respond``, ``forfeit``, ``no_offer``, ``rejected``,
    ``you_rejected``.
    """

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return ROLES

    def offer_kind(self) -> type[Action]:
        raise NotImplementedError

    def decision_kind(self) -> type[Decision]:
        return Decision

    def offer_terms(self, offer: Action) -> dict[str, Any]:
        """The numbers of an offer, as stored in the history and shown to strategies."""
        raise NotImplementedError

    def respond_values(self, offer: Action) -> dict[str, Any]:
        """Template values describing the offer to the responder."""
        raise NotImplementedError

    def settle(self, history: list[dict[str, Any]], t: int, offer: Action, decision: str, responder: str) -> dict[str, Any] | None:
        """The outcome if ``decision`` ends the game in round ``t``, else ``None``."""
        raise NotImplementedError

    def no_deal(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    def _values(self, role: str, t: int) -> dict[str, Any]:
        raise NotImplementedError

    def observation(self, role: str, t: int, phase: str, terms: dict[str, Any] | None, history: list[dict[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """An offer and its answer a round, for every round the horizon allows."""
        return 2 * rounds_to_play(config.horizon, config.infinite_rounds)  # type: ignore[attr-defined]

    async def play(self, table: Table) -> dict[str, Any]:
        c = self.config
        kind, decision_kind = self.offer_kind(), self.decision_kind()
        for role in ROLES:
            table.set_system(role, self.text(role).render("system", **self._values(role, 1)))
        history: list[dict[str, Any]] = []
        for t in range(1, rounds_to_play(c.horizon, c.infinite_rounds) + 1):
            proposer = ALICE if t % 2 == 1 else BOB
            responder = other(proposer)
            text = self.text(proposer).render("offer", format=kind.format_instructions(), **self._values(proposer, t))
            offer = await table.ask(proposer, Prompt(text, self.observation(proposer, t, "offer", None, history), "offer", instructions=format_part(text)), kind, fallback=None)
            if offer is None:
                history.append({"round": t, "proposer": proposer, "valid": False, "decision": None, "accepted": False})
                table.tell(proposer, self.text(proposer).render("forfeit", **self._values(proposer, t)))
                table.tell(responder, self.text(responder).render("no_offer", **self._values(responder, t)))
                continue
            terms = self.offer_terms(offer)
            message = getattr(offer, "message", "") if c.messages else ""
            text = self.text(responder).render("respond", message=message, **self.respond_values(offer), **self._values(responder, t))
            prompt = Prompt(text, self.observation(responder, t, "respond", terms, history), "respond", instructions=format_part(text))
            answer = await table.ask(responder, prompt, decision_kind, fallback=decision_kind(decision="reject"))
            history.append({"round": t, "proposer": proposer, "valid": True, **terms, "message": message, "decision": answer.decision, "accepted": answer.decision == "accept"})
            outcome = self.settle(history, t, offer, answer.decision, responder)
            if outcome is not None:
                return outcome
            table.tell(proposer, self.text(proposer).render("rejected", **self._values(proposer, t)))
            table.tell(responder, self.text(responder).render("you_rejected", **self._values(responder, t)))
        return self.no_deal(history)

