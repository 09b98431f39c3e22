"""Scripted commons players. Each reads the structured observation of the phase it is asked in:

- ``harvest``: stock, sustainable share floor(f(t)/N) (inverse: ceil), history of past months,
  agreed limit and the last proposed limit;
- ``discuss``: the month's chat so far and next month's sustainable share;
- ``summary`` (manager role): the chat; every strategy states the last proposed limit (0 if none);
- the memory calls (``memory = "retrieved"``), answered alike by every strategy:
  ``memory_note`` a sentence about the agreed limit (planning) or the chat's length (interest),
  ``memory_rate`` 8 for a thought with a number in it, else 3, ``memory_insight`` the first two
  memories shown, each citing itself.

In the inverse (trash) scenario "taking" means removing: greedy removes nothing, and a limit is
a minimum to remove.
"""

from __future__ import annotations

from typing import Any

from ...core.actions import Action
from ...core.agents import Strategy
from ...core.table import TurnRequest
from . import election
from .actions import Harvest, Insights, Limit, Note, Rating, Utterance


class CommonsStrategy(Strategy):
    """Dispatches on the phase; subclasses choose the harvest and what to say."""

    def decide(self, request: TurnRequest) -> Action:
        obs = request.prompt.observation
        phase = obs.get("phase")
        if phase == "harvest":
            amount = max(0, min(int(obs["stock"]), int(self.harvest(obs))))
            return Harvest(amount=amount)
        if phase == "discuss":
            return self.speak(obs)
        if phase == "memory_note":
            return Note(note=_note(obs))
        if phase == "memory_rate":
            return Rating(rating=8 if any(ch.isdigit() for ch in obs["thought"]) else 3)
        if phase == "memory_insight":
            shown = obs["memories"][:2]
            return Insights(insights=" ".join(f"{i}. Remember: {text.rstrip('.')} (because of {i})" for i, text in enumerate(shown, 1)))
        if phase in election.PHASES:  # leaders (leadership): agenda, vote, leader's report
            return election.scripted(self, obs)
        return Limit(limit=_last_in_chat(obs.get("messages", [])) or 0)

    def harvest(self, obs: dict[str, Any]) -> int:
        raise NotImplementedError

    def speak(self, obs: dict[str, Any]) -> Utterance:
        share = obs["sustainable_share_next"]
        verb = "take out at least" if obs["inverse"] else "take at most"
        return Utterance(message=f"I suggest each of us {verb} {share} next month.", proposed_limit=share, end_conversation=_all_heard(obs))


def _note(obs: dict[str, Any]) -> str:
    """A scripted note after the chat: the limit to plan by, or how many spoke."""
    if obs["note"] == "plan":
        limit = obs.get("agreed_limit")
        if limit is None:
            return f"Next month the sustainable share is {obs['sustainable_share_next']}."
        bound = "at least" if obs["inverse"] else "at most"
        return f"We agreed to take {bound} {limit} each next month."
    return f"The meeting heard {len(obs['messages'])} remarks."


def _all_heard(obs: dict[str, Any]) -> bool:
    """True once every other agent has spoken in this chat (so the chat can close)."""
    return len({m["speaker"] for m in obs["messages"]} - {obs["me"]}) >= obs["n_agents"] - 1


def _last_in_chat(messages: list[dict[str, Any]]) -> int | None:
    for m in reversed(messages):
        if m.get("proposed_limit") is not None:
            return m["proposed_limit"]
    return None


def _greedy_amount(obs: dict[str, Any]) -> int:
    return 0 if obs["inverse"] else obs["stock"]


class Sustainable(CommonsStrategy):
    """Takes its share of f(t): floor(f(t)/N) (inverse: removes ceil(f(t)/N)); proposes next
    month's share as the limit."""

    def harvest(self, obs: dict[str, Any]) -> int:
        return obs["sustainable_share"]


class Greedy(CommonsStrategy):
    """Takes everything there is (inverse: removes nothing); proposes no limit."""

    def harvest(self, obs: dict[str, Any]) -> int:
        return _greedy_amount(obs)

    def speak(self, obs: dict[str, Any]) -> Utterance:
        return Utterance(message="I will do what is best for me.", end_conversation=_all_heard(obs))


class FreeRider(CommonsStrategy):
    """Greedy only when every other agent was sustainable last month (collected at most its
    share floor(f/N); inverse: removed at least ceil(f/N)); sustainable otherwise and in month 1.
    Talks like a sustainable agent."""

    def harvest(self, obs: dict[str, Any]) -> int:
        if not obs["history"]:
            return obs["sustainable_share"]
        last = obs["history"][-1]
        n = obs["n_agents"]
        f = last["sustainable_total"]
        others = [v for r, v in last["collected"].items() if r != obs["me"]]
        if obs["inverse"]:
            ok = all(v >= -(-f // n) for v in others)
        else:
            ok = all(v <= f // n for v in others)
        return _greedy_amount(obs) if ok else obs["sustainable_share"]


class FollowLimit(CommonsStrategy):
    """Takes (inverse: removes) exactly the agreed limit: the summariser's if there is one,
    else the last limit proposed in a chat, else its sustainable share. Seconds the last
    proposal in the chat when there is one."""

    def harvest(self, obs: dict[str, Any]) -> int:
        for limit in (obs.get("agreed_limit"), obs.get("last_proposal")):
            if limit is not None:
                return limit
        return obs["sustainable_share"]

    def speak(self, obs: dict[str, Any]) -> Utterance:
        proposal = _last_in_chat(obs["messages"])
        if proposal is None:
            return super().speak(obs)
        return Utterance(message=f"I agree with a limit of {proposal}.", proposed_limit=proposal, end_conversation=_all_heard(obs))


class Summariser(CommonsStrategy):
    """For the manager role: reports the last limit proposed in the chat (0 if none)."""

    def harvest(self, obs: dict[str, Any]) -> int:
        return obs["sustainable_share"]


#: Scripted agents by name (``strategy/NAME``).
STRATEGIES = {
    "sustainable": Sustainable,
    "greedy": Greedy,
    "free-rider": FreeRider,
    "follow-limit": FollowLimit,
    "summariser": Summariser,
}
