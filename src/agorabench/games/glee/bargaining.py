"""GLEE bargaining (paper §2.1): Alice and Bob split ``money`` (M) by alternating offers, after
Rubinstein (1982).

Rules. In odd rounds Alice proposes a split (alice_gain, bob_gain) with alice_gain + bob_gain = M
(and, when ``messages`` is on, a free-text message); Bob accepts, which ends the game, or
rejects. In even rounds the roles swap. Agreement on Alice's share p in round t gives utilities
M·(δA^(t−1)·p, δB^(t−1)·(1−p)); no agreement within the rounds played gives (0, 0). Each player
is told its own discount factor; with ``complete_info`` also the other's. With a finite
``horizon`` T the players are told that T rounds are the limit; with ``horizon = "inf"`` the game
is cut after ``infinite_rounds`` rounds that nobody is told about.

Bad answers. An offer that is not valid JSON, has a negative amount, or does not add up to M is
re-asked with the error; if it stays invalid the proposer forfeits the round (no offer is made,
the game moves on to the next round) and the turn is marked invalid. An invalid accept/reject
answer falls back to ``reject``.

Metrics (paper §2.1), with t the agreement round and p Alice's nominal share:

- efficiency = δA^(t−1)·p + δB^(t−1)·(1−p), and 0 without agreement;
- fairness   = 1 − 4·(p − ½)², and 1 without agreement (no deal is an equal outcome);
- self_gain_alice = δA^(t−1)·p and self_gain_bob = δB^(t−1)·(1−p): each player's discounted
  utility divided by M, so they compare across M (0 without agreement).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

from pydantic import Field, model_validator

from .common import ALICE, AlternatingOffers, Message, GleeConfig, horizon_known, JsonForm, money, NAMES, other, percent, PROMPTS


class BargainingConfig(GleeConfig):
    """Parameters of §2.1; defaults are the paper's reference values (Table 8)."""

    delta_a: float = Field(0.9, gt=0, le=1)
    delta_b: float = Field(0.9, gt=0, le=1)
    # horizon "inf" with 99 hidden rounds (the original project's value), from GleeConfig


class Offer(JsonForm):
    """A split of the money: what Alice gets and what Bob gets."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("message",)
    #: The amount to divide (set on the per-game subclass made by :func:`offer_type`).
    total: ClassVar[float] = 0.0

    alice_gain: float = Field(ge=0, description="amount Alice receives")
    bob_gain: float = Field(ge=0, description="amount Bob receives")

    @classmethod
    def form_note(cls) -> str:
        return f"The two amounts must add up to {money(cls.total)}." if cls.total else ""

    @model_validator(mode="after")
    def _adds_up(self) -> "Offer":
        if self.total and abs(self.alice_gain + self.bob_gain - self.total) > 1e-6 * self.total + 0.005:
            raise ValueError(f"alice_gain and bob_gain must add up to {money(self.total)}, but they add up to {money(self.alice_gain + self.bob_gain)}")
        return self


class OfferWithMessage(Offer):
    message: Message = ""


@lru_cache(maxsize=None)
def offer_type(total: float, messages: bool) -> type[Offer]:
    """The offer action of a game dividing ``total``, with or without a message field."""
    base = OfferWithMessage if messages else Offer
    return type(f"{base.__name__}_{total:g}".replace(".", "_").replace("+", ""), (base,), {"total": float(total), "__module__": __name__})


def spe_share_infinite(delta_proposer: float, delta_responder: float) -> float:
    """Rubinstein's share of the proposer, (1−δ_resp)/(1−δ_prop·δ_resp). With both δ = 1 there is
    no unique equilibrium; we use the limit of equal discount factors tending to 1, i.e. ½."""
    den = 1.0 - delta_proposer * delta_responder
    if den <= 1e-12:
        return 0.5
    return (1.0 - delta_responder) / den


def spe_share_finite(delta_a: float, delta_b: float, rounds: int, start: int = 1) -> float:
    """Backward induction for a known last round ``rounds``: the share the proposer of round
    ``start`` keeps. In the last round the proposer keeps everything; in earlier rounds the
    proposer offers the responder exactly what the responder would keep as next round's proposer,
    discounted by the responder's δ: v_t = 1 − δ_resp(t)·v_{t+1}."""
    share = 1.0
    for t in range(rounds - 1, start - 1, -1):
        responder_delta = delta_b if t % 2 == 1 else delta_a
        share = 1.0 - responder_delta * share
    return share


class Bargaining(AlternatingOffers):
    name = "glee.bargaining"
    Config = BargainingConfig
    prompt_dir = PROMPTS / "bargaining"

    def delta(self, role: str) -> float:
        return self.config.delta_a if role == ALICE else self.config.delta_b

    def observation(self, role: str, t: int, phase: str, offer: dict[str, Any] | None, history: list[dict[str, Any]]) -> dict[str, Any]:
        c = self.config
        return {
            "family": "bargaining",
            "role": role,
            "phase": phase,
            "round": t,
            "money": c.money,
            "horizon": horizon_known(c.horizon),
            "delta_self": self.delta(role),
            "delta_other": self.delta(other(role)) if c.complete_info else None,
            "messages": c.messages,
            "offer": offer,
            "history": [dict(h) for h in history],
        }

    def _values(self, role: str, t: int) -> dict[str, Any]:
        c = self.config
        o = other(role)
        return {
            "me": NAMES[role],
            "other": NAMES[o],
            "round": t,
            "total": money(c.money),
            "messages": c.messages,
            "complete_info": c.complete_info,
            "own_loss": percent(1 - self.delta(role)),
            "other_loss": percent(1 - self.delta(o)),
            "own_worth": percent(self.delta(role) ** (t - 1)),
            "other_worth": percent(self.delta(o) ** (t - 1)),
            "horizon": horizon_known(c.horizon),
        }

    def offer_kind(self) -> type[Offer]:
        return offer_type(float(self.config.money), self.config.messages)

    def offer_terms(self, offer: Offer) -> dict[str, Any]:
        return {"alice_gain": offer.alice_gain, "bob_gain": offer.bob_gain}

    def respond_values(self, offer: Offer) -> dict[str, Any]:
        return {"alice_gain": money(offer.alice_gain), "bob_gain": money(offer.bob_gain)}

    def settle(self, history: list[dict[str, Any]], t: int, offer: Offer, decision: str, responder: str) -> dict[str, Any] | None:
        return self._outcome(history, t, offer.alice_gain, offer.bob_gain) if decision == "accept" else None

    def no_deal(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        return self._outcome(history, None, None, None)

    def _outcome(self, history: list[dict[str, Any]], t: int | None, alice_gain: float | None, bob_gain: float | None) -> dict[str, Any]:
        agreed = t is not None
        share = alice_gain / (alice_gain + bob_gain) if agreed and (alice_gain + bob_gain) > 0 else (0.5 if agreed else None)
        return {
            "agreed": agreed,
            "agreed_round": t,
            "alice_share": share,
            "alice_gain": alice_gain,
            "bob_gain": bob_gain,
            "rounds_played": history[-1]["round"] if history else 0,
            "invalid_offers": sum(1 for h in history if not h["valid"]),
            "offers": history,
        }

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """The agreed split (what each receives, and what money was then worth to the person) or
        that nobody receives anything."""
        you, them = (outcome.get(f"{role}_gain"), outcome.get(f"{other(role)}_gain"))
        if not outcome.get("agreed"):
            n = outcome.get("rounds_played", 0)
            return [f"No proposal was accepted in {n} round{'' if n == 1 else 's'}, so neither you nor {NAMES[other(role)]} receives anything."]
        t = outcome["agreed_round"]
        lines = [f"You and {NAMES[other(role)]} agreed in round {t}: you receive {money(you)} and {NAMES[other(role)]} receives {money(them)}."]
        delta = self.config.delta_a if role == ALICE else self.config.delta_b
        if t > 1 and delta < 1:
            lines.append(f"By round {t} money was worth {delta ** (t - 1):.0%} of its round-1 value to you, so your share is worth {money(you * delta ** (t - 1))} in round-1 money.")
        return lines

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """Each outcome lies in 0–1."""
        return {m: (0.0, 1.0) for m in ("efficiency", "fairness", "self_gain_alice", "self_gain_bob")}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """Efficiency, fairness and normalised self-gains of the module docstring."""
        c = self.config
        if not outcome["agreed"]:
            return {"efficiency": 0.0, "fairness": 1.0, "self_gain_alice": 0.0, "self_gain_bob": 0.0}
        t, p = outcome["agreed_round"], outcome["alice_share"]
        gain_a = c.delta_a ** (t - 1) * p
        gain_b = c.delta_b ** (t - 1) * (1 - p)
        return {"efficiency": gain_a + gain_b, "fairness": 1 - 4 * (p - 0.5) ** 2, "self_gain_alice": gain_a, "self_gain_bob": gain_b}
