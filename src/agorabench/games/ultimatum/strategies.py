"""Scripted players of the ultimatum game. Each plays both roles: as proposer it returns an
offer, as responder a decision on ``observation["offer"]`` out of ``observation["pie"]``."""

from __future__ import annotations

from ...core.actions import Action
from ...core.agents import Strategy
from ...core.table import TurnRequest
from .ultimatum import PROPOSER


def _decide(request: TurnRequest, accept: bool) -> Action:
    return request.action_type(decision="accept" if accept else "reject")


class SubgamePerfect(Strategy):
    """Money-maximiser, solved backwards. Responder: accepts any offer ≥ ``min_offer`` (default 1,
    i.e. anything rather than nothing). Proposer: offers 1, the smallest positive amount.

    With whole points there are two subgame-perfect outcomes: offer 0 (a responder indifferent
    at 0 accepts) and offer 1 (a responder that rejects 0). We take offer 1, the one that needs
    no tie broken in the proposer's favour: every positive offer is strictly better than nothing.
    """

    def __init__(self, min_offer: int = 1) -> None:
        if isinstance(min_offer, bool) or not isinstance(min_offer, int) or min_offer < 0:
            raise ValueError(f"min_offer must be a whole number ≥ 0, not {min_offer!r}")
        super().__init__(min_offer=min_offer)
        self.min_offer = min_offer

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        if request.role == PROPOSER:
            return request.action_type(offer=1)
        return _decide(request, obs["offer"] >= self.min_offer)


class Fair(Strategy):
    """Proposer: offers pie // 2. Responder: accepts when offer / pie ≥ ``threshold`` (default 0.3)."""

    def __init__(self, threshold: float = 0.3) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise ValueError(f"threshold must be a share of the pie from 0 to 1, not {threshold!r}")
        super().__init__(threshold=threshold)
        self.threshold = float(threshold)

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        if request.role == PROPOSER:
            return request.action_type(offer=obs["pie"] // 2)
        # offer / pie is the correctly rounded ratio, so 14 / 100 equals the threshold 0.14
        # (threshold · pie would give 14.000000000000002 and reject an offer of 14)
        return _decide(request, obs["offer"] / obs["pie"] >= self.threshold)


class UniformRandom(Strategy):
    """Proposer: an offer drawn uniformly from 0..pie. Responder: accepts with probability ½.
    Both draw from the game's seeded per-role rng."""

    def decide(self, request: TurnRequest) -> Action:
        if request.role == PROPOSER:
            return request.action_type(offer=request.rng.randint(0, request.prompt.observation["pie"]))
        return _decide(request, request.rng.random() < 0.5)


#: Scripted players by name (``strategy/NAME``).
STRATEGIES = {
    "subgame-perfect": SubgamePerfect,
    "fair": Fair,
    "random": UniformRandom,
}
