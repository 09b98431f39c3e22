"""GLEE negotiation (paper §2.2): seller Alice and buyer Bob haggle over the price of one product.

Rules. Alice values the product at V_A = F_A·M, Bob at V_B = F_B·M (``f_a``, ``f_b``,
``money``). In odd rounds Alice posts a price (with a free-text message when ``messages`` is on)
and Bob buys at that price or rejects; in even rounds Bob posts a price and Alice sells or
rejects. There is no discounting: a sale at price p gives utilities (p − V_A, V_B − p); no sale
gives (0, 0). Each player knows its own value; with ``complete_info`` also the other's. The
horizon works as in bargaining (a stated T, or a hidden ``infinite_rounds`` for ``"inf"``).

Walking away. The original project, and so the data behind the paper's negotiation results,
let the responder leave at any answer for an outside option: sell to / buy from a third party at
exactly one's own value (the original's "John"), which ends the game with utilities (0, 0), as
a game without a sale. That is the default here (``outside_option = true``: a ``"quit"``
decision, and the players are told of the third party and its price). The paper's text
describes accept/reject only; ``outside_option = false`` plays that variant.

Bad answers. A price that is negative, unparseable or absurd (above ``PRICE_CAP`` times M) is
re-asked with the error; if it stays
invalid the proposer forfeits the round and the turn is marked invalid. An invalid decision falls
back to ``reject``.

Metrics (paper §2.2), with p the sale price and p_f = (V_A + V_B)/2 the fairest price:

- efficiency = 1 if (V_A ≥ V_B and there is no sale) or (there is a sale and V_A ≤ p ≤ V_B),
  else 0;
- fairness   = 1 − 4·((p − p_f)/M)² with a sale, 1 without (not bounded below, as in the paper);
- self_gain_alice = (p − V_A)/M and self_gain_bob = (V_B − p)/M with a sale, 0 without.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from .common import ALICE, AlternatingOffers, Decision, Message, GleeConfig, Horizon, horizon_known, JsonForm, MAX_ROUNDS, money, NAMES, other, PROMPTS


class NegotiationConfig(GleeConfig):
    """Parameters of §2.2; defaults are the paper's reference values (Table 8)."""

    f_a: float = Field(1.0, gt=0)
    f_b: float = Field(1.0, gt=0)
    horizon: Horizon = 1
    #: The original's walk-away to a third party at one's own value (see module docstring).
    outside_option: bool = True
    #: Rounds actually played when ``horizon = "inf"`` (the original project used 30).
    infinite_rounds: int = Field(30, ge=1, le=MAX_ROUNDS)
    #: What the players are told of their payoffs. ``implicit`` (the original project's framing):
    #: one's own value as a bound (the seller's product is worth no less than V_A to it, the
    #: buyer's no more than V_B) and a goal sentence each; ``explicit``: the value exactly, each
    #: side's gain from a sale and that no sale gains nothing (prompt version 5's wording).
    payoffs: Literal["implicit", "explicit"] = "implicit"
    #: Where round numbers appear. ``original``: only when the horizon is stated and between 2
    #: and 20 rounds, as the original project numbered rounds (its rejection notice named the
    #: round in every game; we do not copy that leak); ``always``: in every game.
    round_numbers: Literal["original", "always"] = "original"

    @property
    def shows_rounds(self) -> bool:
        """Whether prompts number the rounds (see ``round_numbers``)."""
        return self.round_numbers == "always" or (isinstance(self.horizon, int) and 1 < self.horizon <= 20)

    @property
    def value_a(self) -> float:
        return self.f_a * self.money

    @property
    def value_b(self) -> float:
        return self.f_b * self.money


class PriceOffer(JsonForm):
    """A price for the product."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("message",)

    price: float = Field(ge=0, description="the price you offer")
    #: Highest price accepted as an answer (set per game by :func:`price_type`).
    cap: ClassVar[float | None] = None

    @model_validator(mode="after")
    def _sensible(self) -> "PriceOffer":
        if self.cap is not None and self.price > self.cap:
            raise ValueError(f"a price of {money(self.price)} is far above anything at stake (at most {money(self.cap)})")
        return self


class PriceOfferWithMessage(PriceOffer):
    message: Message = ""


class DecisionOrQuit(Decision):
    """Accept, reject, or leave for the outside option (original-project variant)."""

    decision: Literal["accept", "reject", "quit"]


#: A price above this many times M is an absurd answer, not an offer.
PRICE_CAP = 10


@lru_cache(maxsize=None)
def price_type(messages: bool, money_at_stake: float | None = None) -> type[PriceOffer]:
    """The price action, with a message field or not, capped at ``PRICE_CAP`` × M when M is given."""
    base = PriceOfferWithMessage if messages else PriceOffer
    if money_at_stake is None:
        return base
    name = f"{base.__name__}_{money_at_stake:g}".replace(".", "_").replace("+", "")
    return type(name, (base,), {"cap": PRICE_CAP * float(money_at_stake), "__module__": __name__})


class Negotiation(AlternatingOffers):
    name = "glee.negotiation"
    Config = NegotiationConfig
    prompt_dir = PROMPTS / "negotiation"

    def value(self, role: str) -> float:
        return self.config.value_a if role == ALICE else self.config.value_b

    def decision_kind(self) -> type[Decision]:
        return DecisionOrQuit if self.config.outside_option else Decision

    def observation(self, role: str, t: int, phase: str, terms: dict[str, Any] | None, history: list[dict[str, Any]]) -> dict[str, Any]:
        c = self.config
        return {
            "family": "negotiation",
            "role": role,
            "phase": phase,
            "round": t,
            "money": c.money,
            "horizon": horizon_known(c.horizon),
            "own_value": self.value(role),
            "other_value": self.value(other(role)) if c.complete_info else None,
            "messages": c.messages,
            "price": terms["price"] if terms else None,
            "history": [dict(h) for h in history],
        }

    def _values(self, role: str, t: int) -> dict[str, Any]:
        c = self.config
        return {
            "me": NAMES[role],
            "other": NAMES[other(role)],
            "seller": role == ALICE,
            "round": t,
            "own_value": money(self.value(role)),
            "other_value": money(self.value(other(role))),
            "complete_info": c.complete_info,
            "messages": c.messages,
            "outside_option": c.outside_option,
            "horizon": horizon_known(c.horizon),
            "explicit": c.payoffs == "explicit",
            "show_round": c.shows_rounds,
            "horizon_told": c.payoffs == "explicit" or (isinstance(c.horizon, int) and c.horizon <= 20),
        }

    def offer_kind(self) -> type[PriceOffer]:
        return price_type(self.config.messages, self.config.money)

    def offer_terms(self, offer: PriceOffer) -> dict[str, Any]:
        return {"price": offer.price}

    def respond_values(self, offer: PriceOffer) -> dict[str, Any]:
        return {"price": money(offer.price)}

    def settle(self, history: list[dict[str, Any]], t: int, offer: PriceOffer, decision: str, responder: str) -> dict[str, Any] | None:
        if decision == "accept":
            return self._outcome(history, t, offer.price, "sale")
        if decision == "quit":
            return self._outcome(history, None, None, f"{responder}_quit")
        return None

    def no_deal(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        return self._outcome(history, None, None, "horizon")

    @staticmethod
    def _outcome(history: list[dict[str, Any]], t: int | None, price: float | None, ended_by: str) -> dict[str, Any]:
        return {
            "sold": price is not None,
            "price": price,
            "agreed_round": t,
            "ended_by": ended_by,
            "rounds_played": history[-1]["round"] if history else 0,
            "invalid_offers": sum(1 for h in history if not h["valid"]),
            "offers": history,
        }

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """The sale (price, round) or why there was none."""
        them = NAMES[other(role)]
        if outcome.get("sold"):
            verb = f"sold the product to {them}" if role == ALICE else f"bought the product from {them}"
            return [f"You {verb} for {money(outcome['price'])} in round {outcome['agreed_round']}.", f"The product was worth {money(self.value(role))} to you."]
        ended = str(outcome.get("ended_by", ""))
        if ended.endswith("_quit"):
            who = "You" if ended == f"{role}_quit" else them
            return [f"{who} stopped negotiating and dealt with the outside party instead, so there was no sale between you."]
        return ["No price was accepted, so there was no sale."]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """Efficiency 0–1, fairness at most 1, the self-gains signed and unbounded."""
        return {"efficiency": (0.0, 1.0), "fairness": (None, 1.0), "self_gain_alice": (None, None), "self_gain_bob": (None, None)}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """Efficiency, fairness and normalised self-gains of the module docstring."""
        c = self.config
        va, vb, m = c.value_a, c.value_b, c.money
        price = outcome["price"]
        if price is None:
            return {"efficiency": 1.0 if va >= vb else 0.0, "fairness": 1.0, "self_gain_alice": 0.0, "self_gain_bob": 0.0}
        fair_price = (va + vb) / 2
        return {
            "efficiency": 1.0 if va <= price <= vb else 0.0,
            "fairness": 1 - 4 * ((price - fair_price) / m) ** 2,
            "self_gain_alice": (price - va) / m,
            "self_gain_bob": (vb - price) / m,
        }
