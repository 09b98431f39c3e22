"""Scripted dictators. Each decides a gift from ``observation["endowment"]`` (the recipient is
passive and never asked, so every strategy plays the dictator only in practice)."""

from __future__ import annotations

import math
from typing import Any

from ...core.actions import Action
from ...core.agents import Strategy
from ...core.table import TurnRequest


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number, not {value!r}")
    return float(value)


def _gift(request: TurnRequest, amount: int) -> Action:
    return request.action_type(give=amount)


class Selfish(Strategy):
    """Gives 0: the money-maximising choice (every point given is a point lost)."""

    def decide(self, request: TurnRequest) -> Action:
        return _gift(request, 0)


class Equal(Strategy):
    """Gives endowment // 2: the equal split (rounded down for an odd endowment)."""

    def decide(self, request: TurnRequest) -> Action:
        return _gift(request, request.prompt.observation["endowment"] // 2)


class Altruist(Strategy):
    """Gives ``share`` of the endowment (default ½), rounded down: ⌊share · endowment⌋. The
    product is first rounded to 9 decimals, so 0.29 of 100 gives 29 (not 28.999999999999996)."""

    def __init__(self, share: float = 0.5) -> None:
        super().__init__(share=share)
        value = _number("share", share)
        if not 0 <= value <= 1:
            raise ValueError(f"share must be a number from 0 to 1, not {share!r}")
        self.share = value

    def decide(self, request: TurnRequest) -> Action:
        endowment = request.prompt.observation["endowment"]
        return _gift(request, min(endowment, math.floor(round(self.share * endowment, 9))))


class FehrSchmidt(Strategy):
    """Inequity aversion (Fehr & Schmidt 1999) with two players: giving g of the endowment E
    leaves the dictator x = E − g and the recipient y = g, and

        U(g) = x − α·max(y − x, 0) − β·max(x − y, 0).

    Below the equal split (2g ≤ E) U = (1 − β)·E − (1 − 2β)·g; above it (2g ≥ E)
    U = (1 + α)·E − (1 + 2α)·g. So U falls above the split for every α ≥ 0, and below it falls
    in g when β < ½ and rises when β > ½. The best reply is therefore g = 0 when β < ½ and the
    equal split g = E // 2 when β > ½ (for an odd E, ⌊E/2⌋ beats ⌈E/2⌉ by α + 1 − β > 0); at β = ½
    every g up to the split is equally good, and the strategy gives 0. ``alpha`` ≥ 0 (envy,
    default 0.5) never changes the choice; ``beta`` in [0, 1) (guilt, default 0.25)."""

    def __init__(self, alpha: float = 0.5, beta: float = 0.25) -> None:
        super().__init__(alpha=alpha, beta=beta)
        a, b = _number("alpha", alpha), _number("beta", beta)
        if a < 0:
            raise ValueError(f"alpha must be a number ≥ 0, not {alpha!r}")
        if not 0 <= b < 1:
            raise ValueError(f"beta must be a number from 0 to less than 1, not {beta!r}")
        self.alpha, self.beta = a, b

    def utility(self, endowment: int, give: int) -> float:
        """U(give) of the docstring's formula."""
        own, other = endowment - give, give
        return own - self.alpha * max(other - own, 0) - self.beta * max(own - other, 0)

    def best_gift(self, endowment: int) -> int:
        """The best reply of the docstring: 0 when β ≤ ½, endowment // 2 when β > ½."""
        return endowment // 2 if self.beta > 0.5 else 0

    def decide(self, request: TurnRequest) -> Action:
        return _gift(request, self.best_gift(request.prompt.observation["endowment"]))


class UniformRandom(Strategy):
    """Gives a whole number drawn uniformly from 0..endowment with the game's seeded rng."""

    def decide(self, request: TurnRequest) -> Action:
        return _gift(request, request.rng.randint(0, request.prompt.observation["endowment"]))


class HumanResampler(Strategy):
    """Each decision a share drawn (with the game's seeded rng) from the shipped MobLab sample of
    first-round, 100-point dictator decisions (:func:`.humans.moblab_sample`); it gives
    round(share · endowment), halves rounded up, within 0..endowment. Decisions the data does not
    cover (another endowment, a later round, the observed framing) are drawn from the same
    first-round shares, scaled to the endowment."""

    def decide(self, request: TurnRequest) -> Action:
        from .humans import moblab_sample

        endowment = request.prompt.observation["endowment"]
        share = moblab_sample().draw(request.rng)
        return _gift(request, max(0, min(endowment, math.floor(share * endowment + 0.5))))


#: Scripted players by name (``strategy/NAME``).
STRATEGIES = {
    "selfish": Selfish,
    "equal": Equal,
    "altruist": Altruist,
    "fehr-schmidt": FehrSchmidt,
    "random": UniformRandom,
    "human-resampler": HumanResampler,
}
