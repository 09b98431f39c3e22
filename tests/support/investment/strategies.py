"""Scripted players of the investment game (a trust game). Each reads ``request.prompt.observation`` (the facts the
game put in the prompt: ``endowment``, ``multiplier``, and for the trustee ``sent`` and
``received``) and answers with ``request.action_type``, the bounded type the game asked for.

Parameters come from a study file (``params = { share = 0.5 }``) as keyword arguments; a bad
value raises ValueError, which the runner reports as ``strategy/NAME: bad parameters ...``."""

from __future__ import annotations

import math

from agorabench.core.actions import Action
from agorabench.core.agents import Strategy
from agorabench.core.table import TurnRequest

from .investment import INVESTOR, TRUSTEE


def _share(name: str, value: object) -> float:
    """``value`` as a share from 0 to 1, or a ValueError saying what is wrong."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number from 0 to 1, not {value!r}")
    return float(value)


class Trusting(Strategy):
    """Investor: sends ``share`` of the endowment (default 1, all of it), rounded down."""

    plays = (INVESTOR,)

    def __init__(self, share: float = 1.0) -> None:
        super().__init__(share=share)
        self.share = _share("share", share)

    def decide(self, request: TurnRequest) -> Action:
        endowment = request.prompt.observation["endowment"]
        return request.action_type(send=math.floor(self.share * endowment + 1e-9))


class Reciprocal(Strategy):
    """Trustee: returns ``share`` of what it received (default ½), rounded down."""

    plays = (TRUSTEE,)

    def __init__(self, share: float = 0.5) -> None:
        super().__init__(share=share)
        self.share = _share("share", share)

    def decide(self, request: TurnRequest) -> Action:
        received = request.prompt.observation["received"]
        return request.action_type(repay=math.floor(self.share * received + 1e-9))


class Selfish(Strategy):
    """Trustee: keeps everything it received (returns 0), as a money-maximiser does."""

    plays = (TRUSTEE,)

    def decide(self, request: TurnRequest) -> Action:
        return request.action_type(repay=0)


class SubgamePerfect(Strategy):
    """Investor, solved backwards against a money-maximising trustee: that trustee returns 0
    whatever it gets, so every point sent is lost and the investor sends 0."""

    plays = (INVESTOR,)

    def decide(self, request: TurnRequest) -> Action:
        return request.action_type(send=0)


class UniformRandom(Strategy):
    """Either role: a whole number drawn uniformly within the bound, from the seeded per-role rng."""

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        if request.role == INVESTOR:
            return request.action_type(send=request.rng.randint(0, obs["endowment"]))
        return request.action_type(repay=request.rng.randint(0, obs["received"]))


#: Scripted players by name (``strategy/NAME``). The first one that plays a role is the one the
#: conformance suite seats beside the others: ``trusting`` sends points, so ``reciprocal`` is asked.
STRATEGIES = {
    "trusting": Trusting,
    "reciprocal": Reciprocal,
    "selfish": Selfish,
    "subgame-perfect": SubgamePerfect,
    "random": UniformRandom,
}
