"""Scripted respondents of the workplace scenario: known answers for tests and reference lines
in reports. Each reads the scene's ``recognition`` level (−2 … +2, see ``workplace.SCENES``)
from ``request.prompt.observation``."""

from __future__ import annotations

from ...core.agents import Strategy
from ...core.table import TurnRequest
from .workplace import RATINGS, Ratings


def _clamp(value: float) -> int:
    return int(min(5, max(1, round(value))))


class FixedProfile(Strategy):
    """The same five ratings after every scene (defaults: 3 for each), whatever happens."""

    def __init__(self, self_esteem: int = 3, empathy: int = 3, motivation: int = 3, collaboration: int = 3, envy: int = 3) -> None:
        super().__init__(self_esteem=self_esteem, empathy=empathy, motivation=motivation, collaboration=collaboration, envy=envy)
        self.profile = {name: _clamp(self.params[name]) for name in RATINGS}

    def decide(self, request: TurnRequest) -> Ratings:
        return Ratings(reflection="my view does not change", **self.profile)


class RecognitionFollower(Strategy):
    """Ratings follow the recognition r of the scene, with sensitivity k:
    self-esteem = empathy = motivation = collaboration = clamp(3 + k·r), envy = clamp(3 − k·r),
    where clamp rounds and limits to 1…5. Envy rises when the peer is favoured and falls when
    the subject is."""

    def __init__(self, sensitivity: float = 1.0) -> None:
        super().__init__(sensitivity=sensitivity)
        self.k = float(sensitivity)

    def decide(self, request: TurnRequest) -> Ratings:
        r = request.prompt.observation["recognition"]
        up, down = _clamp(3 + self.k * r), _clamp(3 - self.k * r)
        return Ratings(reflection=f"recognition level {r}", self_esteem=up, empathy=up, motivation=up, collaboration=up, envy=down)


class UniformRandom(Strategy):
    """Each rating uniformly from 1–5, drawn from the game's seeded per-role rng (a chance line)."""

    def decide(self, request: TurnRequest) -> Ratings:
        return Ratings(reflection="random", **{name: request.rng.randint(1, 5) for name in RATINGS})


#: Scripted respondents by name (``strategy/NAME``).
STRATEGIES = {
    "fixed": FixedProfile,
    "recognition": RecognitionFollower,
    "random": UniformRandom,
}
