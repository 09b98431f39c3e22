"""Scripted players of the GLEE games: theory baselines and simple rules.

Every strategy reads only ``request.prompt.observation`` (built by the game; ``family`` names the
game, ``phase`` the decision) and draws randomness from ``request.rng``. Which strategies a game
offers is listed at the end of this module.

- ``spe`` (bargaining): Rubinstein subgame-perfect play. With an unknown ("infinite") horizon the
  proposer keeps (1−δ_other)/(1−δ_self·δ_other) and the responder accepts any share at least
  δ_self times what it would keep as next round's proposer; with a known horizon T the same rule
  with backward-induction shares. Without complete information the other's δ is taken from the
  ``delta_other`` parameter, or assumed equal to one's own.
- ``truthful``: negotiation — posts its own value as a fixed price (times ``factor``, default 1)
  and accepts any price that leaves it no worse off than no trade (reservation value);
  persuasion — the seller recommends exactly when the product is of high quality, the buyer buys
  exactly when recommended.
- ``bayes-sender`` (persuasion seller): the committed Bayesian-persuasion policy — recommend always
  when high, and with probability q = min(p/(1−p)·(v−1)/(1−c), 1) when low (the paper's
  q = min(p/(1−p)·(v−1), 1) at c = 0). A seller who is not told v and c uses the ``v`` and ``c``
  parameters (defaults 1.25 and 0, the paper's reference values).
- ``bayes-buyer`` (persuasion buyer): assumes the sender follows that policy (or recommends a low
  product with probability ``q`` if given), updates by Bayes' rule, and buys when the posterior
  expected value μ·v + (1−μ)·c, μ = P(high | signal), is at least the price 1 (buys when
  indifferent). A buyer who is not told p uses the ``p`` parameter (default 0.5).
- ``always-accept`` / ``always-reject``: accept (buy, recommend) always / never. As proposers,
  always-accept offers an equal split (bargaining) or its own value (negotiation); always-reject
  demands everything (bargaining) or twice its value as seller and nothing as buyer (negotiation).
- ``random``: uniform offers (bargaining share in [0, 1], negotiation price in [0, 2M]) and
  fair-coin decisions.

Text messages: scripted sellers write one of two fixed sentences; scripted buyers read a message
as a recommendation unless it says "not"/"don't" (they understand scripted sellers, not prose).
"""

from __future__ import annotations

import re
from typing import Any

from ...core.actions import Action
from ...core.agents import Strategy
from ...core.table import TurnRequest
from .common import ALICE, BOB, Decision, YesNo

RECOMMEND = "I recommend that you buy this product."
DISCOURAGE = "I do not recommend buying this product."


def recommends(message: str) -> bool:
    """Whether a seller's message (binary "yes"/"no" or text) recommends buying."""
    text = (message or "").strip().lower()
    if text in ("yes", "no"):
        return text == "yes"
    if re.search(r"\b(not|don't|do not|never|low)\b", text):
        return False
    return bool(re.search(r"\b(recommend|buy|high)\b", text))


def bayes_q(p: float, v: float, c: float = 0.0) -> float:
    """Probability of recommending a low-quality product in the Bayesian-persuasion policy:
    the q that leaves a recommended buyer indifferent, μ·v + (1−μ)·c = 1 with
    μ = p/(p + (1−p)·q), i.e. q = p/(1−p)·(v−1)/(1−c), capped at 1."""
    if p >= 1 or c >= 1:
        return 1.0
    return max(0.0, min(p / (1 - p) * (v - 1) / (1 - c), 1.0))


def _with_message(kind: type[Action], text: str, **values: Any) -> Action:
    if "message" in kind.model_fields:
        values["message"] = text
    return kind(**values)


def _split(kind: type[Action], role: str, total: float, own_share: float, text: str) -> Action:
    own = total * own_share
    rest = total - own
    alice, bob = (own, rest) if role == ALICE else (rest, own)
    return _with_message(kind, text, alice_gain=alice, bob_gain=bob)


def _own_offer_share(obs: dict[str, Any]) -> float:
    key = "alice_gain" if obs["role"] == ALICE else "bob_gain"
    return obs["offer"][key] / obs["money"]


class GleeStrategy(Strategy):
    """Dispatches on the observed family and phase."""

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        method = getattr(self, f"{obs['family']}_{obs['phase']}", None)
        if method is None:
            raise ValueError(f"{type(self).__name__} does not play the {obs['family']} {obs['phase']} decision")
        return method(obs, request)


class SPE(GleeStrategy):
    """Subgame-perfect bargaining (see module docstring)."""

    def __init__(self, delta_other: float | None = None) -> None:
        super().__init__(delta_other=delta_other)
        self.delta_other = delta_other

    def _deltas(self, obs: dict[str, Any]) -> tuple[float, float]:
        own = obs["delta_self"]
        oth = obs["delta_other"] if obs["delta_other"] is not None else (self.delta_other if self.delta_other is not None else own)
        return (own, oth) if obs["role"] == ALICE else (oth, own)

    def proposer_share(self, obs: dict[str, Any], t: int) -> float:
        """Share kept by whoever proposes in round t, in this player's equilibrium model."""
        from .bargaining import spe_share_finite, spe_share_infinite

        delta_a, delta_b = self._deltas(obs)
        if obs["horizon"] is None:
            prop, resp = (delta_a, delta_b) if t % 2 == 1 else (delta_b, delta_a)
            return spe_share_infinite(prop, resp)
        return spe_share_finite(delta_a, delta_b, obs["horizon"], start=t)

    def bargaining_offer(self, obs: dict[str, Any], request: TurnRequest) -> Action:
        share = self.proposer_share(obs, obs["round"])
        return _split(request.action_type, obs["role"], obs["money"], share, "This is my subgame-perfect offer.")

    def bargaining_respond(self, obs: dict[str, Any], request: TurnRequest) -> Action:
        t = obs["round"]
        if obs["horizon"] is not None and t >= obs["horizon"]:
            threshold = 0.0
        else:
            threshold = obs["delta_self"] * self.proposer_share(obs, t + 1)
        return Decision(decision="accept" if _own_offer_share(obs) >= threshold - 1e-9 else "reject")


class Truthful(GleeStrategy):
    """Fixed price at one's own value, reservation-value acceptance; truthful seller (persuasion)."""

    def __init__(self, factor: float = 1.0) -> None:
        super().__init__(factor=factor)
        self.factor = float(factor)

    def negotiation_offer(self, obs: dict[str, Any], request: TurnRequest) -> Action:
        return _with_message(request.action_type, "This is my price.", price=obs["own_value"] * self.factor)

    def negotiation_respond(self, obs: dict[str, Any], request: TurnRequest) -> Action:
        price, value = obs["price"], obs["own_value"]
        ok = price >= value - 1e-9 if obs["role"] == ALICE else price <= value + 1e-9
        return request.action_type(decision="accept" if ok else "reject")

    def persuasion_signal(self, obs: dict[str, Any], request: TurnRequest) -> Action:
        return _signal(request.action_type, obs["quality"] == "high")

    def persuasion_buy(self, obs: dict[str, Any], request: TurnRequest) -> Action:
        return _buy(request.action_type, recommends(obs["message"]))


def _buy(kind: type[Action], buy: bool) -> Action:
    """The buyer's answer (with a fixed message when the game asks for one)."""
    values: dict[str, Any] = {"decision": "yes" if buy else "no"}
    if "message" in kind.model_fields:
        values["message"] = "I will buy it." if buy else "I will pass."
    return kind(**values)


def _signal(kind: type[Action], recommend: bool) -> Action:
    if issubclass(kind, YesNo):
        return kind(decision="yes" if recommend else "no")
    return kind(message=RECOMMEND if recommend else DISCOURAGE)


class BayesSender(GleeStrategy):
    """Bayesian-persuasion seller (see module docstring)."""

    plays = (ALICE,)

    def __init__(self, v: float = 1.25, c: float = 0.0) -> None:
        super().__init__(v=v, c=c)
        self.v, self.c = float(v), float(c)

    def persuasion_signal(self, obs: dict[str, Any], request: TurnRequest) -> Action:
        if obs["quality"] == "high":
            return _signal(request.action_type, True)
        v = obs["v"] if obs["v"] is not None else self.v
        c = obs.get("c") if obs.get("c") is not None else self.c
        return _signal(request.action_type, request.rng.random() < bayes_q(obs["p"], v, c))


class BayesBuyer(GleeStrategy):
    """Bayesian buyer against the committed persuasion policy (see module docstring)."""

    plays = (BOB,)

    def __init__(self, q: float | None = None, p: float = 0.5) -> None:
        super().__init__(q=q, p=p)
        self.q, self.p = q, float(p)

    def posterior(self, obs: dict[str, Any], recommended: bool) -> float:
        p = obs["p"] if obs["p"] is not None else self.p
        q = self.q if self.q is not None else bayes_q(p, obs["v"], obs.get("c") or 0.0)
        if recommended:
            return p / (p + (1 - p) * q)
        return 0.0  # a high product is always recommended

    def persuasion_buy(self, obs: dict[str, Any], request: TurnRequest) -> Action:
        mu, c = self.posterior(obs, recommends(obs["message"])), obs.get("c") or 0.0
        return _buy(request.action_type, mu * obs["v"] + (1 - mu) * c >= 1 - 1e-9)


class AlwaysAccept(GleeStrategy):
    def bargaining_offer(self, obs, request):
        return _split(request.action_type, obs["role"], obs["money"], 0.5, "Let us split evenly.")

    def bargaining_respond(self, obs, request):
        return Decision(decision="accept")

    def negotiation_offer(self, obs, request):
        return _with_message(request.action_type, "This is my price.", price=obs["own_value"])

    def negotiation_respond(self, obs, request):
        return request.action_type(decision="accept")

    def persuasion_signal(self, obs, request):
        return _signal(request.action_type, True)

    def persuasion_buy(self, obs, request):
        return _buy(request.action_type, True)


class AlwaysReject(GleeStrategy):
    def bargaining_offer(self, obs, request):
        return _split(request.action_type, obs["role"], obs["money"], 1.0, "I want everything.")

    def bargaining_respond(self, obs, request):
        return Decision(decision="reject")

    def negotiation_offer(self, obs, request):
        price = 2 * obs["own_value"] if obs["role"] == ALICE else 0.0
        return _with_message(request.action_type, "Take it or leave it.", price=price)

    def negotiation_respond(self, obs, request):
        return request.action_type(decision="reject")

    def persuasion_signal(self, obs, request):
        return _signal(request.action_type, False)

    def persuasion_buy(self, obs, request):
        return _buy(request.action_type, False)


class Random(GleeStrategy):
    def bargaining_offer(self, obs, request):
        return _split(request.action_type, obs["role"], obs["money"], request.rng.random(), "A random offer.")

    def bargaining_respond(self, obs, request):
        return Decision(decision=request.rng.choice(["accept", "reject"]))

    def negotiation_offer(self, obs, request):
        return _with_message(request.action_type, "A random price.", price=round(request.rng.uniform(0, 2 * obs["money"]), 2))

    def negotiation_respond(self, obs, request):
        return request.action_type(decision=request.rng.choice(["accept", "reject"]))

    def persuasion_signal(self, obs, request):
        return _signal(request.action_type, request.rng.random() < 0.5)

    def persuasion_buy(self, obs, request):
        return _buy(request.action_type, request.rng.random() < 0.5)


COMMON = {"always-accept": AlwaysAccept, "always-reject": AlwaysReject, "random": Random}
BARGAINING = {"spe": SPE, **COMMON}
NEGOTIATION = {"truthful": Truthful, **COMMON}
PERSUASION = {"truthful": Truthful, "bayes-sender": BayesSender, "bayes-buyer": BayesBuyer, **COMMON}
