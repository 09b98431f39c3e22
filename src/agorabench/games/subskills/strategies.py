"""Scripted players of the sub-skill tests. Each reads the instance from
``request.prompt.observation`` (test, stock, amount, dynamics) and answers with a ``Number``."""

from __future__ import annotations


from ...core.actions import Action
from ...core.agents import Strategy
from ...core.table import TurnRequest


def knows(obs: dict) -> int:
    """The answer of a player that does the arithmetic: next month's stock for the consequence
    test (what is left after every agent takes the amount, regrown up to the capacity), the
    per-agent bound for the others (the most each may take so the stock keeps its size; in the
    inverse scenario the least each must take out so the pile does not grow, the bins' cap left
    aside), which it also harvests in the sustainable-action tests."""
    stock, n, cap, kind, g = obs["stock"], obs["n"], obs["capacity"], obs["growth_kind"], obs["growth_value"]
    if obs["test"] == "consequence":
        left = max(0, stock - n * obs["amount"])
        return min(cap, left * g if kind == "multiply" else left + g)
    if obs["inverse"]:
        need = min(g, stock) if kind == "add" else stock - -(-stock // g)
        return -(-need // n)
    if kind == "multiply":
        # the most the group may take: S − T ≥ S / rate, i.e. T ≤ S − ceil(S / rate)
        return (stock - -(-stock // g)) // n
    return min(g, stock) // n


class Knowing(Strategy):
    """Answers every test right (see :func:`knows`)."""

    def decide(self, request: TurnRequest) -> Action:
        return request.action_type(number=knows(request.prompt.observation))


class Zero(Strategy):
    """Always answers 0: passes only where 0 is right (a consequence that empties the stock, a
    bound of 0)."""

    def decide(self, request: TurnRequest) -> Action:
        return request.action_type(number=0)


class UniformRandom(Strategy):
    """A whole number drawn uniformly from 0 to the stock (the seeded per-role rng)."""

    def decide(self, request: TurnRequest) -> Action:
        return request.action_type(number=request.rng.randint(0, int(request.prompt.observation["stock"])))


#: Scripted players by name (``strategy/NAME``).
STRATEGIES = {
    "knowing": Knowing,
    "zero": Zero,
    "random": UniformRandom,
}
