"""Scripted players of the prisoner's dilemma. Each plays either seat under every horizon and
decides from ``observation["history"]`` (its own past rounds: ``own`` and ``other``, each
"cooperate" or "defect") and ``request.rng``; it answers in the game's labels
(``request.action_type.of(cooperate)``)."""

from __future__ import annotations

from ...core.actions import Action
from ...core.agents import Strategy
from ...core.table import TurnRequest
from .prisoners_dilemma import DEFECT


def _choose(request: TurnRequest, cooperate: bool) -> Action:
    return request.action_type.of(cooperate)  # type: ignore[attr-defined]


def _others(request: TurnRequest) -> list[str]:
    """The other player's earlier choices, oldest first."""
    return [h["other"] for h in request.prompt.observation.get("history", [])]


class Selfish(Strategy):
    """Always defects. Defecting pays more than cooperating whatever the other does in the same
    round (T > R and P > S), so it is strictly dominant in every round; under a known horizon
    backward induction from the last round makes defecting in every round the unique
    subgame-perfect play."""

    def decide(self, request: TurnRequest) -> Action:
        return _choose(request, False)


class AlwaysCooperate(Strategy):
    """Always cooperates."""

    def decide(self, request: TurnRequest) -> Action:
        return _choose(request, True)


class TitForTat(Strategy):
    """Cooperates in round 1, then plays what the other player chose in the round before."""

    def decide(self, request: TurnRequest) -> Action:
        seen = _others(request)
        return _choose(request, not seen or seen[-1] != DEFECT)


class Grim(Strategy):
    """Cooperates until the other player defects once, then defects in every later round."""

    def decide(self, request: TurnRequest) -> Action:
        return _choose(request, DEFECT not in _others(request))


class UniformRandom(Strategy):
    """Cooperates with probability ``p`` (default ½: uniform over the two choices), each round
    drawn with the player's seeded rng."""

    def __init__(self, p: float = 0.5) -> None:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise ValueError(f"p must be a probability from 0 to 1, not {p!r}")
        super().__init__(p=p)
        self.p = float(p)

    def decide(self, request: TurnRequest) -> Action:
        return _choose(request, request.rng.random() < self.p)


class HumanResampler(Strategy):
    """People's choice, resampled: in every round it cooperates with the probability Shafir &
    Tversky's (1992) subjects cooperated when the other player's choice was unknown, 164 of 444
    decisions (36.9 %; :mod:`.humans`), drawn from that sample with the player's seeded rng.
    That data holds one-shot decisions only, each against a new partner: in later rounds of a
    repeated game the resampler draws the same way, ignoring what happened before (people in
    repeated games respond to their partner; no such data is shipped)."""

    def decide(self, request: TurnRequest) -> Action:
        from .humans import unknown_sample

        return _choose(request, unknown_sample().draw(request.rng) >= 0.5)


#: Scripted players by name (``strategy/NAME``).
STRATEGIES = {
    "selfish": Selfish,
    "cooperate": AlwaysCooperate,
    "tit-for-tat": TitForTat,
    "grim": Grim,
    "random": UniformRandom,
    "human-resampler": HumanResampler,
}
