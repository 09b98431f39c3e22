"""Scripted focal players of the point-allocation game. Each picks from the observed payoff
matrix (option -> (own points, other's points)); ties go to the earliest option."""

from __future__ import annotations

import math

from ...core.agents import check_finite, Strategy
from ...core.table import TurnRequest
from .point_allocation import Choice, OPTIONS


def _best(options: dict[str, tuple[int, int]], utility) -> str:
    return max(OPTIONS, key=lambda k: (utility(*options[k]), -OPTIONS.index(k)))


class SelfMax(Strategy):
    """Maximises own points."""

    def decide(self, request: TurnRequest) -> Choice:
        return Choice(choice=_best(request.prompt.observation["options"], lambda own, other: own), reasoning="most points for me")


class AlwaysB(Strategy):
    """Always option B."""

    def decide(self, request: TurnRequest) -> Choice:
        return Choice(choice="B", reasoning="always B")


class Spiteful(Strategy):
    """Minimises the other model's points, whatever it costs."""

    def decide(self, request: TurnRequest) -> Choice:
        return Choice(choice=_best(request.prompt.observation["options"], lambda own, other: -other), reasoning="fewest points for the other")


class FehrSchmidt(Strategy):
    """Inequity aversion (Fehr & Schmidt 1999): U = x − α·max(y − x, 0) − β·max(x − y, 0),
    x own points, y the other's; picks the option of highest U."""

    def __init__(self, alpha: float = 0.5, beta: float = 0.25) -> None:
        super().__init__(alpha=alpha, beta=beta)
        self.alpha, self.beta = float(alpha), float(beta)

    def utility(self, own: float, other: float) -> float:
        return own - self.alpha * max(other - own, 0.0) - self.beta * max(own - other, 0.0)

    def decide(self, request: TurnRequest) -> Choice:
        pick = _best(request.prompt.observation["options"], self.utility)
        return Choice(choice=pick, reasoning=f"highest inequity-averse utility (alpha={self.alpha}, beta={self.beta})")


class FehrSchmidtLogit(FehrSchmidt):
    """Noisy inequity aversion: picks option k with probability exp(λ·U_k) / Σ_j exp(λ·U_j),
    U the Fehr–Schmidt utility above, drawn from the game's seeded per-role rng. λ = 0 chooses
    uniformly; large λ approaches :class:`FehrSchmidt`. Synthetic subjects for the estimator
    in ``analysis/fehr_schmidt.py``."""

    def __init__(self, alpha: float = 0.5, beta: float = 0.25, lam: float = 1.0) -> None:
        super().__init__(alpha=alpha, beta=beta)
        check_finite("lam", lam)
        self.params["lam"] = lam
        self.lam = float(lam)

    def probabilities(self, options: dict[str, tuple[int, int]]) -> dict[str, float]:
        """P(option) of the logit rule over ``options`` (label -> (own, other))."""
        scores = {k: self.lam * self.utility(*options[k]) for k in options}
        top = max(scores.values())
        weights = {k: math.exp(v - top) for k, v in scores.items()}
        total = sum(weights.values())
        return {k: w / total for k, w in weights.items()}

    def decide(self, request: TurnRequest) -> Choice:
        probs = self.probabilities(request.prompt.observation["options"])
        labels = list(probs)
        pick = request.rng.choices(labels, weights=[probs[k] for k in labels])[0]
        return Choice(choice=pick, reasoning=f"logit inequity aversion (alpha={self.alpha}, beta={self.beta}, lambda={self.lam})")


class UniformRandom(Strategy):
    """Uniformly random option, drawn from the game's seeded per-role rng."""

    def decide(self, request: TurnRequest) -> Choice:
        return Choice(choice=request.rng.choice(OPTIONS), reasoning="random")


#: Scripted focal players by name (``strategy/NAME``).
STRATEGIES = {
    "self-max": SelfMax,
    "always-b": AlwaysB,
    "spiteful": Spiteful,
    "fehr-schmidt": FehrSchmidt,
    "fehr-schmidt-logit": FehrSchmidtLogit,
    "random": UniformRandom,
}
