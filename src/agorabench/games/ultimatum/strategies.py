"""Scripted players of the ultimatum game. Each plays both roles under both methods: as proposer
it returns an offer (phase ``offer``); as a direct-method responder a decision on
``observation["offer"]`` out of ``observation["pie"]`` (phase ``respond``); as a strategy-method
responder the smallest offer it accepts (phase ``minimum``), stated by the same rule it uses to
decide on an offer it sees."""

from __future__ import annotations

import math

from ...core.actions import Action
from ...core.agents import Strategy
from ...core.table import TurnRequest
from .ultimatum import MINIMUM, PROPOSER


def _decide(request: TurnRequest, accept: bool) -> Action:
    return request.action_type(decision="accept" if accept else "reject")


def _minimum(request: TurnRequest) -> bool:
    """Whether the request asks for a strategy-method minimum."""
    return request.prompt.phase == MINIMUM


def least_at_share(share: float, pie: int) -> int:
    """The smallest whole offer m of ``pie`` with m / pie ≥ ``share`` (0 ≤ share ≤ 1): ⌈share·pie⌉,
    checked against the ratio itself so that a product such as 0.14 · 100 = 14.000000000000002
    gives 14 (the offer 14 / 100 = 0.14 meets the share), never 15."""
    m = max(0, min(pie, math.ceil(share * pie)))
    while m > 0 and (m - 1) / pie >= share:
        m -= 1
    while m < pie and m / pie < share:
        m += 1
    return m


def _share_to_points(share: float, pie: int) -> int:
    """round(share · pie), halves rounded up, within 0..pie."""
    return max(0, min(pie, math.floor(share * pie + 0.5)))


class SubgamePerfect(Strategy):
    """Money-maximiser, solved backwards. Responder: accepts any offer ≥ ``min_offer`` (default 1,
    i.e. anything rather than nothing); under the strategy method it states that minimum
    (``min(min_offer, pie)``: the largest minimum the game takes). Proposer: offers 1, the
    smallest positive amount.

    With whole points there are two subgame-perfect outcomes: offer 0 (a responder indifferent
    at 0 accepts) and offer 1 (a responder that rejects 0). We take offer 1, the one that needs
    no tie broken in the proposer's favour: every positive offer is strictly better than nothing.
    Registered twice: as ``subgame-perfect`` and under the battery's common name ``selfish``.
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
        if _minimum(request):
            return request.action_type(minimum=min(self.min_offer, obs["pie"]))
        return _decide(request, obs["offer"] >= self.min_offer)


class Fair(Strategy):
    """Proposer: offers pie // 2. Responder: accepts when offer / pie ≥ ``threshold`` (default
    0.3); under the strategy method it states the smallest such offer, ⌈threshold · pie⌉
    (:func:`least_at_share`), so it accepts exactly the offers it would accept on seeing them."""

    def __init__(self, threshold: float = 0.3) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise ValueError(f"threshold must be a share of the pie from 0 to 1, not {threshold!r}")
        super().__init__(threshold=threshold)
        self.threshold = float(threshold)

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        if request.role == PROPOSER:
            return request.action_type(offer=obs["pie"] // 2)
        if _minimum(request):
            return request.action_type(minimum=least_at_share(self.threshold, obs["pie"]))
        # offer / pie is the correctly rounded ratio, so 14 / 100 equals the threshold 0.14
        # (threshold · pie would give 14.000000000000002 and reject an offer of 14)
        return _decide(request, obs["offer"] / obs["pie"] >= self.threshold)


class UniformRandom(Strategy):
    """Uniform over the legal decisions. Proposer: an offer drawn uniformly from 0..pie.
    Responder: accepts with probability ½ (direct method), or states a minimum drawn uniformly
    from 0..pie (strategy method). All draws from the game's seeded per-role rng."""

    def decide(self, request: TurnRequest) -> Action:
        pie = request.prompt.observation["pie"]
        if request.role == PROPOSER:
            return request.action_type(offer=request.rng.randint(0, pie))
        if _minimum(request):
            return request.action_type(minimum=request.rng.randint(0, pie))
        return _decide(request, request.rng.random() < 0.5)


class HumanResampler(Strategy):
    """People's decisions, resampled with the game's seeded per-role rng from the shipped MobLab
    first-round decisions over a 100-point pie (:mod:`.humans`). Proposer: an offer share drawn
    from the people's proposals, offering round(share · pie) (halves up). Responder, strategy
    method: a minimum share drawn from the people's minimums, stating round(share · pie).
    Responder, direct method (which MobLab did not run): a minimum share drawn the same way,
    accepting iff offer / pie ≥ that share. Other pies and later rounds (not in the sample) use
    the same first-round shares, scaled to the pie."""

    def decide(self, request: TurnRequest) -> Action:
        from .humans import moblab_sample

        obs = request.prompt.observation
        pie = obs["pie"]
        if request.role == PROPOSER:
            return request.action_type(offer=_share_to_points(moblab_sample("offer_share").draw(request.rng), pie))
        share = moblab_sample("min_share").draw(request.rng)
        if _minimum(request):
            return request.action_type(minimum=_share_to_points(share, pie))
        return _decide(request, obs["offer"] / pie >= share)


#: Scripted players by name (``strategy/NAME``).
STRATEGIES = {
    "subgame-perfect": SubgamePerfect,
    "fair": Fair,
    "random": UniformRandom,
    "selfish": SubgamePerfect,
    "human-resampler": HumanResampler,
}
