"""Scripted players of the public goods game. Each plays every seat: asked to contribute
(phase ``contribute``) it returns a contribution from ``observation["endowment"]`` and its own
past rounds (``observation["history"]``); asked to punish (phase ``punish``) it returns points
for each other player from ``observation["contributions"]``. Shares become whole tokens by
rounding half up: round(share · E) = ⌊share · E + ½⌋."""

from __future__ import annotations

import math
from typing import Any

from ...core.actions import Action
from ...core.agents import Strategy
from ...core.table import TurnRequest
from .public_goods import PUNISH


def _tokens(share: float, endowment: int) -> int:
    """share · endowment rounded half up, within 0..endowment."""
    return min(endowment, max(0, math.floor(share * endowment + 0.5)))


def _share(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a share of the endowment from 0 to 1, not {value!r}")
    return float(value)


def _nobody(request: TurnRequest) -> Action:
    """No punishment points for anyone."""
    return request.action_type(**{name: 0 for name in request.action_type.model_fields})


class Selfish(Strategy):
    """Money-maximiser: contributes 0 and never punishes. With mpcr < 1 contributing nothing is
    dominant, and punishing only costs; with mpcr ≥ 1 it is no longer the best reply (the
    ``full`` strategy is)."""

    def decide(self, request: TurnRequest) -> Action:
        if request.prompt.phase == PUNISH:
            return _nobody(request)
        return request.action_type(contribution=0)


class Full(Strategy):
    """Contributes the whole endowment every round and never punishes."""

    def decide(self, request: TurnRequest) -> Action:
        if request.prompt.phase == PUNISH:
            return _nobody(request)
        return request.action_type(contribution=request.prompt.observation["endowment"])


class Conditional(Strategy):
    """Conditional cooperator: in round 1 contributes ``start`` (default ½) of the endowment, then
    the mean share the others contributed in the previous round; never punishes. A group of
    them keeps its start level."""

    def __init__(self, start: float = 0.5) -> None:
        super().__init__(start=start)
        self.start = _share("start", start)

    def decide(self, request: TurnRequest) -> Action:
        if request.prompt.phase == PUNISH:
            return _nobody(request)
        obs = request.prompt.observation
        endowment, history = obs["endowment"], obs["history"]
        if not history:
            return request.action_type(contribution=_tokens(self.start, endowment))
        others = history[-1]["others"]
        return request.action_type(contribution=_tokens(sum(others) / len(others) / endowment, endowment))


class Punisher(Strategy):
    """Contributes ``share`` (default 1) of the endowment every round and assigns ``points``
    (default 3, at most the game's bound) to each other player who contributed less than it did."""

    def __init__(self, share: float = 1.0, points: int = 3) -> None:
        if isinstance(points, bool) or not isinstance(points, int) or points < 0:
            raise ValueError(f"points must be a whole number ≥ 0, not {points!r}")
        super().__init__(share=share, points=points)
        self.share = _share("share", share)
        self.points = points

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        if request.prompt.phase == PUNISH:
            most = min(self.points, obs["punish_max"])
            return request.action_type(**{who: most if amount < obs["own"] else 0 for who, amount in obs["contributions"].items()})
        return request.action_type(contribution=_tokens(self.share, obs["endowment"]))


class UniformRandom(Strategy):
    """Uniform over the legal decisions: a contribution from 0..E, and for each other player
    points from 0..punish_max, each drawn from the game's seeded per-role rng."""

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        if request.prompt.phase == PUNISH:
            return request.action_type(**{who: request.rng.randint(0, obs["punish_max"]) for who in obs["contributions"]})
        return request.action_type(contribution=request.rng.randint(0, obs["endowment"]))


class HumanResampler(Strategy):
    """People's contributions, resampled with the game's seeded per-role rng from Fischbacher &
    Gächter's (2010) C-experiment (:mod:`.humans`): in round r a share drawn from the 140
    subjects' contributions of period min(r, 10) (each / 20), contributing round(share · E)
    (halves up). So round 1 is drawn from people's first decisions; later rounds follow the
    period-by-period decline of that experiment, whose groups were re-drawn every period, and
    ignore what this group did. Never punishes (the C-experiment had no punishment stage)."""

    def decide(self, request: TurnRequest) -> Action:
        from .humans import fg2010_sample, FG2010_PERIODS

        if request.prompt.phase == PUNISH:
            return _nobody(request)
        obs = request.prompt.observation
        share = fg2010_sample(min(obs["round"], FG2010_PERIODS)).draw(request.rng)
        return request.action_type(contribution=_tokens(share, obs["endowment"]))


#: Scripted players by name (``strategy/NAME``).
STRATEGIES = {
    "selfish": Selfish,
    "full": Full,
    "conditional": Conditional,
    "punisher": Punisher,
    "random": UniformRandom,
    "human-resampler": HumanResampler,
}
