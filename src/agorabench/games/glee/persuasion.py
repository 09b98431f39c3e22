"""GLEE persuasion (paper §2.3): a seller (Alice) tries to persuade a buyer (Bob), round after
round, to buy a product at price 1 (scaled by M).

Rules. In each of T rounds the product is of high quality with probability ``p`` (drawn from the
game's seeded rng, independently per round). Alice sees the quality and sends a message: a yes/no
recommendation when ``messages`` is off (binary), free text when it is on. Bob then buys or not.
Alice gains 1 per sale whatever the quality; Bob gains M·(v − 1) from buying a high product,
M·(c − 1) from buying a low one (c = 0 in the paper and in the original's data: −M), 0 from
passing. Bob knows v and c, and p unless ``buyer_knows_p`` is off; Alice knows p and is told v
and c only with ``complete_info``. With ``buyer_messages`` Bob adds a free-text message to each
decision, which Alice reads after the round (the original's ``allow_buyer_message``). With a long-living buyer (``myopic = false``) Bob plays every round, sees the
whole history and learns each round's quality after deciding. With myopic buyers each round's
buyer is new: he sees only summary statistics of the past rounds (share of rounds with a sale,
share of rounds in which a low product was sold). The horizon is told to the players, or hidden
for ``"inf"`` (then ``infinite_rounds`` rounds are played).

Each seller and buyer turn records the round's quality as the turn metric ``high_quality``
(1 high, 0 low) for the analyses; the buyer is not shown it.

Bad answers are re-asked with the error; a seller whose answer stays invalid sends no
recommendation (binary "no", or an empty text), a buyer whose answer stays invalid does not buy;
the turn is marked invalid.

Metrics (paper §2.3), with n the rounds of high quality, k the high rounds with a sale, r the low
rounds without a sale, s_low the low rounds with a sale and T the rounds played:

- efficiency = k / n   (undefined, NaN, when no round was of high quality);
- fairness   = r / (T − n)   (NaN when every round was of high quality);
- self_gain_alice = (k + s_low) / T, the seller's utility per round;
- self_gain_bob   = (k·(v − 1) + s_low·(c − 1)) / T, the buyer's utility per round divided by M.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

from pydantic import Field

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.speech import format_part
from ...core.table import Prompt, Table
from .common import ALICE, BOB, GleeConfig, Horizon, horizon_known, JsonForm, MAX_ROUNDS, money, NAMES, PROMPTS, ROLES, rounds_to_play, YesNo


class PersuasionConfig(GleeConfig):
    """Parameters of §2.3; defaults are the paper's reference values (Table 8)."""

    p: float = Field(0.5, gt=0, lt=1)
    v: float = Field(1.25, gt=1)
    #: What a low-quality product is worth to the buyer, as a share of the price (original: c).
    c: float = Field(0.0, ge=0, lt=1)
    #: Whether the buyer is told p (original: is_buyer_know_p).
    buyer_knows_p: bool = True
    #: Whether the buyer writes a message with each decision (original: allow_buyer_message).
    buyer_messages: bool = False
    horizon: Horizon = 20
    #: Free-text seller messages (true) or a binary recommendation (false).
    messages: bool = False
    myopic: bool = False
    #: Rounds actually played when ``horizon = "inf"``.
    infinite_rounds: int = Field(20, ge=1, le=MAX_ROUNDS)
    #: What a myopic buyer learns of the earlier rounds. ``original`` (the original project): how
    #: many earlier buyers bought and how many of the products sold were of high quality, in the
    #: round's prompt, and no round number; ``paper`` (§2.3, prompt version 5's wording): the
    #: number of earlier rounds, the share with a sale and the share with a low-quality sale, and
    #: the round number.
    myopic_stats: Literal["original", "paper"] = "original"
    #: What the players are told of their payoffs. ``implicit`` (the original project's framing):
    #: the price, the values and the probability, no payoff function and no goal for the seller,
    #: and to the seller that the price is final; ``explicit``: each side's gain, that the seller
    #: earns a point per sale whatever the quality, and that qualities are drawn independently
    #: (prompt version 5's wording).
    payoffs: Literal["implicit", "explicit"] = "implicit"


class SellerMessage(JsonForm):
    """The seller's free-text message of one round."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("message",)

    message: str = Field(min_length=1, description="your message to the buyer")


class BuyWithMessage(YesNo, JsonForm):
    """The buyer's decision with a free-text message to the seller."""

    text_fields: ClassVar = ("decision", "message")

    decision: Literal["yes", "no"] = Field(description="yes or no")
    message: str = Field("", description="your message to the seller")


class Persuasion(Game):
    name = "glee.persuasion"
    Config = PersuasionConfig
    prompt_dir = PROMPTS / "persuasion"

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return ROLES

    def signal_type(self) -> type[Action]:
        return SellerMessage if self.config.messages else YesNo

    def buy_type(self) -> type[YesNo]:
        return BuyWithMessage if self.config.buyer_messages else YesNo

    def nature(self, table: Table, t: int) -> str:
        """The quality of round ``t``: high with probability p, from the game's rng."""
        return "high" if table.rng.random() < self.config.p else "low"

    @staticmethod
    def stats(history: list[dict[str, Any]]) -> dict[str, float]:
        n = len(history)
        bought = sum(h["bought"] for h in history)
        high = sum(h["bought"] and h["quality"] == "high" for h in history)
        return {
            "rounds": n,
            "sold_share": bought / n if n else 0.0,
            "low_sold_share": (bought - high) / n if n else 0.0,
            "bought": bought,
            "high_bought": high,
        }

    def observation(self, role: str, t: int, phase: str, history: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        c = self.config
        sees_all = role == ALICE or not c.myopic
        return {
            "family": "persuasion",
            "role": role,
            "phase": phase,
            "round": t,
            "money": c.money,
            "horizon": horizon_known(c.horizon),
            "p": c.p if (role == ALICE or c.buyer_knows_p) else None,
            "v": c.v if (role == BOB or c.complete_info) else None,
            "c": c.c if (role == BOB or c.complete_info) else None,
            "buyer_messages": c.buyer_messages,
            "messages": c.messages,
            "myopic": c.myopic,
            "history": [dict(h) for h in history] if sees_all else None,
            "stats": self.stats(history),
            **extra,
        }

    def _values(self, role: str, t: int, history: list[dict[str, Any]]) -> dict[str, Any]:
        c = self.config
        stats = self.stats(history)
        return {
            "me": NAMES[role],
            "round": t,
            "price": money(c.money),
            "high_value": money(c.v * c.money),
            "low_value": money(c.c * c.money),
            "p_percent": f"{c.p * 100:.4g}%",
            "buyer_knows_p": c.buyer_knows_p,
            "buyer_messages": c.buyer_messages,
            "complete_info": c.complete_info,
            "messages": c.messages,
            "myopic": c.myopic,
            "horizon": horizon_known(c.horizon),
            "past_rounds": stats["rounds"],
            "sold_percent": f"{stats['sold_share'] * 100:.0f}%",
            "low_sold_percent": f"{stats['low_sold_share'] * 100:.0f}%",
            "paper_stats": c.myopic_stats == "paper",
            "past_bought": stats["bought"],
            "past_high_bought": stats["high_bought"],
            "explicit": c.payoffs == "explicit",
        }

    async def play(self, table: Table) -> dict[str, Any]:
        c = self.config
        kind, buy_kind = self.signal_type(), self.buy_type()
        no_signal = YesNo(decision="no") if kind is YesNo else None
        table.set_system(ALICE, self.text(ALICE).render("system_seller", **self._values(ALICE, 1, [])))
        table.set_system(BOB, self.text(BOB).render("system_buyer", **self._values(BOB, 1, [])))
        history: list[dict[str, Any]] = []
        for t in range(1, rounds_to_play(c.horizon, c.infinite_rounds) + 1):
            quality = self.nature(table, t)
            text = self.text(ALICE).render("signal", quality=quality, format=kind.format_instructions(), **self._values(ALICE, t, history))
            signal = await table.ask(ALICE, Prompt(text, self.observation(ALICE, t, "signal", history, quality=quality), "signal", instructions=format_part(text)), kind, fallback=no_signal)
            signal_valid = table.last_valid(ALICE)
            table.note_metrics(ALICE, {"high_quality": float(quality == "high")})
            message = "" if signal is None else (signal.decision if isinstance(signal, YesNo) else signal.message)
            if c.myopic and t > 1:
                table.restart(BOB, self.text(BOB).render("system_buyer", **self._values(BOB, t, history)))
            text = self.text(BOB).render("buy", message=message, format=buy_kind.format_instructions(), **self._values(BOB, t, history))
            answer = await table.ask(BOB, Prompt(text, self.observation(BOB, t, "buy", history, message=message), "buy", instructions=format_part(text)), buy_kind, fallback=buy_kind(decision="no"))
            bought = answer.decision == "yes"
            table.note_metrics(BOB, {"high_quality": float(quality == "high")})
            reply = getattr(answer, "message", "") if c.buyer_messages else ""
            history.append({"round": t, "quality": quality, "message": message, "signal_valid": signal_valid, "bought": bought, **({"buyer_message": reply} if c.buyer_messages else {})})
            table.tell(ALICE, self.text(ALICE).render("result_seller", bought=bought, buyer_message=reply, **self._values(ALICE, t, history)))
            if not c.myopic:
                table.tell(BOB, self.text(BOB).render("result_buyer", bought=bought, quality=quality, **self._values(BOB, t, history)))
        return self._outcome(history)

    @staticmethod
    def _outcome(history: list[dict[str, Any]]) -> dict[str, Any]:
        high = [h for h in history if h["quality"] == "high"]
        low = [h for h in history if h["quality"] == "low"]
        return {
            "rounds_played": len(history),
            "high_rounds": len(high),
            "high_sold": sum(h["bought"] for h in high),
            "low_unsold": sum(not h["bought"] for h in low),
            "low_sold": sum(h["bought"] for h in low),
            "sold": sum(h["bought"] for h in history),
            "recommended": sum(h["message"] == "yes" for h in history) if history and all(h["message"] in ("yes", "no", "") for h in history) else None,
            "rounds": history,
        }

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """How many products were sold, by quality."""
        sold, high, low, n = outcome.get("sold", 0), outcome.get("high_sold", 0), outcome.get("low_sold", 0), outcome.get("rounds_played", 0)
        verb = "You sold" if role == ALICE else "You bought"
        return [f"{verb} {sold} of the {n} products offered: {high} of high quality and {low} of low quality.", f"Each product cost {money(self.config.money)}."]

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """A signal and a decision a round, for every round the horizon allows."""
        return 2 * rounds_to_play(config.horizon, config.infinite_rounds)  # type: ignore[attr-defined]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """0–1 but Bob's self-gain, (k·(v − 1) − s)/T, at least −1."""
        return {"efficiency": (0.0, 1.0), "fairness": (0.0, 1.0), "self_gain_alice": (0.0, 1.0), "self_gain_bob": (-1.0, None)}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """Efficiency k/n, fairness r/(T−n) and normalised self-gains (module docstring)."""
        rounds, n, k, r, s_low = outcome["rounds_played"], outcome["high_rounds"], outcome["high_sold"], outcome["low_unsold"], outcome["low_sold"]
        if rounds == 0:
            return {"efficiency": math.nan, "fairness": math.nan, "self_gain_alice": math.nan, "self_gain_bob": math.nan}
        return {
            "efficiency": k / n if n else math.nan,
            "fairness": r / (rounds - n) if rounds > n else math.nan,
            "self_gain_alice": (k + s_low) / rounds,
            "self_gain_bob": (k * (self.config.v - 1) + s_low * (self.config.c - 1)) / rounds,
        }
