"""Scripted players of the trust game. Each reads ``request.prompt.observation`` (the facts the
game put in the prompt: ``endowment``, ``multiplier``, ``trustee_endowment``, ``method``, and
for the trustee's direct return ``sent`` and ``received``) and answers with
``request.action_type``, the bounded type the game asked for.

A trustee strategy is a rule "points returned for k points sent"; it plays both methods: asked
directly (phase ``return``) it applies the rule to the amount sent, asked for a plan (phase
``plan``, the strategy method) it states the rule's return for every amount k = 1..endowment.

Parameters come from a study file (``params = { share = 0.5 }``) as keyword arguments; a bad
value raises ValueError, which the runner reports as ``strategy/NAME: bad parameters ...``."""

from __future__ import annotations

import math
from typing import Callable

from ...core.actions import Action
from ...core.agents import Strategy
from ...core.table import TurnRequest
from .trust import equalising_return, INVESTOR, PLAN, plan_field, TRUSTEE

#: A trustee's rule: (points sent, points received) -> points returned.
Rule = Callable[[int, int], int]


def _share(name: str, value: object) -> float:
    """``value`` as a share from 0 to 1, or a ValueError saying what is wrong."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number from 0 to 1, not {value!r}")
    return float(value)


def _rounded(x: float) -> int:
    """``x`` rounded to the nearest whole number, halves up (2.5 -> 3)."""
    return math.floor(x + 0.5)


def returning(request: TurnRequest, rule: Rule) -> Action:
    """The trustee's answer under either method: ``rule`` applied to the amount sent (direct),
    or to every amount 1..endowment (the strategy method's plan); each return clipped to
    0..received."""
    obs = request.prompt.observation
    m = obs["multiplier"]
    if request.prompt.phase == PLAN:
        return request.action_type(**{plan_field(k): min(max(rule(k, m * k), 0), m * k) for k in range(1, obs["endowment"] + 1)})
    return request.action_type(send_back=min(max(rule(obs["sent"], obs["received"]), 0), obs["received"]))


class Selfish(Strategy):
    """Money-maximiser, solved backwards, in either role: the trustee returns 0 whatever it
    received, so the investor sends 0 (every point sent would be lost)."""

    def decide(self, request: TurnRequest) -> Action:
        if request.role == INVESTOR:
            return request.action_type(send=0)
        return returning(request, lambda sent, received: 0)


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
    """Trustee: returns ``share`` of what it received (default ½), rounded down, so it never
    returns more than that share. Against it sending k points gives the investor
    endowment + (share·multiplier − 1)·k before rounding: above share = 1/multiplier sending
    everything pays most, below it sending nothing."""

    plays = (TRUSTEE,)

    def __init__(self, share: float = 0.5) -> None:
        super().__init__(share=share)
        self.share = _share("share", share)

    def decide(self, request: TurnRequest) -> Action:
        return returning(request, lambda sent, received: math.floor(self.share * received + 1e-9))


class Equalizer(Strategy):
    """Trustee: returns what makes the round's two payoffs equal, as far as whole points and
    the range 0..received allow (:func:`~agorabench.games.trust.trust.equalising_return`; of
    two equally close returns, the smaller). With equal endowments it returns 2/3 of what it
    received when the multiplier is 3."""

    plays = (TRUSTEE,)

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        return returning(request, lambda sent, received: equalising_return(obs["endowment"], obs["multiplier"], obs["trustee_endowment"], sent))


class UniformRandom(Strategy):
    """Either role, uniformly over the legal decisions, from the seeded per-role rng: the
    investor any amount 0..endowment; the trustee any return 0..received (under the strategy
    method each amount's return drawn on its own)."""

    def decide(self, request: TurnRequest) -> Action:
        if request.role == INVESTOR:
            return request.action_type(send=request.rng.randint(0, request.prompt.observation["endowment"]))
        return returning(request, lambda sent, received: request.rng.randint(0, received))


class HumanResampler(Strategy):
    """Either role, each decision drawn with ``request.rng`` from Berg et al.'s (1995) no-history
    pairs (``data/berg1995_pairs.csv``, :mod:`~agorabench.games.trust.humans`):

    - investor: the share of the $10 one of the 32 room-A subjects sent, times the endowment,
      rounded (halves up): with the default endowment of 10, exactly an amount someone sent;
    - trustee: the share returned / (3·sent) of one of the 30 pairs that sent something, times
      what it received, rounded (halves up). Under the strategy method one share is drawn for
      the plan and applied to every amount (a person's disposition, not a draw per amount).

    The data hold a multiplier of 3 and endowments of $10; other configurations get the same
    shares, which people may not keep there."""

    def decide(self, request: TurnRequest) -> Action:
        from .humans import samples  # the human data (and numpy) only when this strategy plays

        if request.role == INVESTOR:
            endowment = request.prompt.observation["endowment"]
            return request.action_type(send=min(_rounded(samples().sent_share.draw(request.rng) * endowment), endowment))
        share = samples().returned_share.draw(request.rng)
        return returning(request, lambda sent, received: _rounded(share * received))


#: Scripted players by name (``strategy/NAME``). The first one that plays a role is the one the
#: conformance suite seats beside the others: ``trusting`` sends points, so the trustee is asked.
STRATEGIES = {
    "trusting": Trusting,
    "reciprocal": Reciprocal,
    "equalizer": Equalizer,
    "selfish": Selfish,
    "random": UniformRandom,
    "human-resampler": HumanResampler,
}
