"""Scripted players of the beauty contest. Each plays every seat: asked for a number (phase
``guess``) it reads the game from the observation (``p``, ``low``, ``high``, ``round``) and its
own past rounds (``history``: each round's ``mean``, ``target``, ``choices``, ...), and answers a
number within [low, high] with at most two decimals (:func:`two_decimals`)."""

from __future__ import annotations

import math
from typing import Any

from ...core.actions import Action
from ...core.agents import Strategy
from ...core.table import TurnRequest
from .beauty_contest import equilibrium


def two_decimals(x: float, low: float, high: float) -> float:
    """x clamped to [low, high] and rounded to two decimals (halves of a cent as Python's
    ``round`` takes them)."""
    return round(min(float(high), max(float(low), x)), 2) + 0.0


def _choose(request: TurnRequest, x: float) -> Action:
    obs = request.prompt.observation
    return request.action_type(guess=two_decimals(x, obs["low"], obs["high"]))


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number, not {value!r}")
    return float(value)


class Selfish(Strategy):
    """The Nash equilibrium: ``low`` when p < 1 (the only equilibrium), ``high`` when p > 1 (the
    one iterated reasoning from the middle of the range reaches). With p = 1 every common number
    is an equilibrium and none is singled out; it then chooses the midpoint (low + high) / 2.
    A group of them all choose the same number, all win, and share the prize."""

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        goal = equilibrium(obs["p"], obs["low"], obs["high"])
        return _choose(request, (obs["low"] + obs["high"]) / 2 if math.isnan(goal) else goal)


class LevelK(Strategy):
    """Level-k reasoning as Nagel (1995) models it: a player of level k chooses r · p^k, where r
    is the reference point: in round 1 ``mean0`` (the average a level-0 player is expected to
    produce; default the midpoint (low + high) / 2, Nagel's 50), in every later round the
    previous round's average (all numbers chosen, as the feedback states it). Clamped to
    [low, high], two decimals. Level 0 thus chooses the reference point itself; level 1 the best
    reply to a group that chooses it (ignoring its own weight in the average); level k + 1 the
    best reply to a group of level k. Parameters: ``k`` a whole number ≥ 0 (default 1),
    ``mean0`` a number or None."""

    def __init__(self, k: int = 1, mean0: float | None = None) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"k must be a whole number ≥ 0, not {k!r}")
        if mean0 is None:
            super().__init__(k=k)
        else:
            super().__init__(k=k, mean0=_number("mean0", mean0))
        self.k = k
        self.mean0 = None if mean0 is None else float(mean0)

    def reference(self, obs: dict[str, Any]) -> float:
        """r: ``mean0`` (or the midpoint) in round 1, the previous round's average after it."""
        if obs["history"]:
            return float(obs["history"][-1]["mean"])
        return (obs["low"] + obs["high"]) / 2 if self.mean0 is None else self.mean0

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        return _choose(request, self.reference(obs) * obs["p"] ** self.k)


class UniformRandom(Strategy):
    """Uniform over the legal decisions: every number of [low, high] with two decimals equally
    likely (a whole number of hundredths drawn from the game's seeded per-role rng)."""

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        cents = request.rng.randint(round(obs["low"] * 100), round(obs["high"] * 100))
        return request.action_type(guess=cents / 100)


class HumanResampler(Strategy):
    """People's choices, resampled with the game's seeded per-role rng from Nagel's (1995)
    first-round choices (:mod:`.humans`): the sample of the game's p when Nagel played it (1/2,
    2/3, 4/3), else of the shipped p nearest to it. A draw x (0–100) is read as the share
    u = x / 100 of the range.

    - Round 1: low + u · (high − low), the human choice itself on [0, 100].
    - Later rounds: a fresh draw, read as a multiple 2u of the midpoint (Nagel's first-round
      reference point 50) and applied to the new reference point, the previous round's average
      m: low + (m − low) · 2u; on [0, 100], m · x / 50. So a person who chose 25 (half the
      reference) in round 1 is replayed choosing half the last average. x / 50 is Nagel's
      adjustment factor of a first-period choice (her equation 2, p. 1322: the choice over 50 in
      period 1, over the previous period's mean later); the rule carries the first period's
      factors forward, and is not a resample of her later periods (whose choices are not
      shipped).

    Clamped to [low, high], two decimals."""

    def decide(self, request: TurnRequest) -> Action:
        from .humans import nagel_sample

        obs = request.prompt.observation
        low, high = obs["low"], obs["high"]
        u = nagel_sample(obs["p"]).draw(request.rng) / 100
        if not obs["history"]:
            return _choose(request, low + u * (high - low))
        m = float(obs["history"][-1]["mean"])
        return _choose(request, low + (m - low) * 2 * u)


class CognitiveHierarchy(Strategy):
    """A player of the Poisson cognitive hierarchy (Camerer, Ho & Chong 2004) as
    :mod:`agorabench.analysis.hierarchy` models it, so that its numbers can be fitted back:
    its level k is drawn once per game from Poisson(``tau``) (capped at the model's top level,
    the tail folded in) with the game's seeded per-role rng. Round 1: level 0 picks uniformly
    over [low, high]; level k ≥ 1 picks m_k (p times the average it expects of the lower levels
    in their Poisson proportions, from level 0's midpoint) plus a normal error of standard
    deviation ``sigma`` truncated to the range (``sigma`` 0: exactly m_k). Later rounds: the
    previous round's average m takes the midpoint's place as level 0's anchor, so level k
    picks low + (m_k − low) · (m − low) / (midpoint − low) with the same error; level 0 keeps
    picking uniformly. Two decimals. Parameters: ``tau`` > 0 (default 1.5), ``sigma`` ≥ 0
    (default 5)."""

    def __init__(self, tau: float = 1.5, sigma: float = 5.0) -> None:
        super().__init__(tau=tau, sigma=sigma)
        self.tau, self.sigma = _number("tau", tau), _number("sigma", sigma)
        if not 0 < self.tau <= 15:
            raise ValueError(f"tau must be a number above 0 and at most 15, not {tau!r}")
        if self.sigma < 0:
            raise ValueError(f"sigma must be a number ≥ 0, not {sigma!r}")
        self.level: int | None = None

    def decide(self, request: TurnRequest) -> Action:
        from ...analysis.hierarchy import ch_means, poisson_shares
        from scipy import special

        obs = request.prompt.observation
        low, high, p = float(obs["low"]), float(obs["high"]), float(obs["p"])
        rng = request.rng
        if self.level is None:  # drawn once per game: the inverse of the Poisson shares' sum
            shares, pick, total = poisson_shares(self.tau), rng.random(), 0.0
            self.level = len(shares) - 1
            for k, share in enumerate(shares):
                total += float(share)
                if pick < total:
                    self.level = k
                    break
        if self.level == 0:
            return _choose(request, low + rng.random() * (high - low))
        mean = float(ch_means(self.tau, p, low, high)[self.level])
        if obs["history"]:
            middle = (low + high) / 2
            mean = low + (mean - low) * (float(obs["history"][-1]["mean"]) - low) / (middle - low)
        if self.sigma == 0:
            return _choose(request, mean)
        a, b = special.ndtr((low - mean) / self.sigma), special.ndtr((high - mean) / self.sigma)
        u = min(max(a + rng.random() * (b - a), 1e-12), 1 - 1e-12)
        return _choose(request, mean + self.sigma * float(special.ndtri(u)))


#: Scripted players by name (``strategy/NAME``).
STRATEGIES = {
    "level-k": LevelK,
    "selfish": Selfish,
    "random": UniformRandom,
    "human-resampler": HumanResampler,
    "cognitive-hierarchy": CognitiveHierarchy,
}
