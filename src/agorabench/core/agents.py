"""Players: LLM agents over a model, scripted strategies over the structured observation, and
people (through a desk: the web app's view of one participant)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

from ..models.base import BackendError
from ..models.model import Model
from .actions import Action
from .table import BackendFailure, Reply, TurnRequest, Usage


class LLMAgent:
    """Sends the role's transcript to a model and returns its raw text; the table parses it.

    ``sample`` (the game id) makes every game's calls its own cache entries: two games whose
    transcripts happen to coincide still draw independent answers at temperature > 0, and a
    replay of the same game finds its answers again.
    """

    def __init__(self, model: Model, sample: str = "", constrained: bool = False) -> None:
        self.model = model
        self.sample = sample
        self.constrained = constrained

    async def act(self, request: TurnRequest) -> Reply:
        settings = self.model.settings
        if self.constrained:
            kind = request.action_type
            schema = kind.json_schema() if kind.format().schema_decoding else None
            settings = replace(settings, json_schema=schema, grammar=kind.grammar())
        try:
            c = await self.model.complete(request.messages, settings, sample=f"{self.sample}:{request.attempt}")
        except BackendError as exc:
            raise BackendFailure(str(exc)) from None
        cost = 0.0 if c.cached else self.model.pricing.cost(c)
        return Reply(text=c.text, usage=Usage(c.prompt_tokens, c.completion_tokens, cost), latency=c.latency, cached=c.cached)


def check_finite(name: str, value: Any) -> None:
    """A parameter that is a number, or text that reads as one, must be finite: ValueError
    naming the parameter and the value for infinity and NaN (in lists and tables too)."""
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(f"{name}.{key}", item)
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_finite(f"{name}[{i}]", item)
        return
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return
    if not math.isfinite(number):
        raise ValueError(f"{name} = {value!r} is not a finite number")


class Strategy:
    """A scripted player. Subclasses implement :meth:`decide` from ``request.prompt.observation``
    (and ``request.rng`` for randomised strategies); parameters come from the study file."""

    #: The roles this strategy can play (empty: any role of its game).
    plays: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **params: Any) -> None:
        for key, value in params.items():
            check_finite(key, value)
        self.params = params

    def decide(self, request: TurnRequest) -> Action:
        raise NotImplementedError

    async def act(self, request: TurnRequest) -> Reply:
        action = self.decide(request)
        return Reply(text=action.render(), action=action, cached=True)


@dataclass(frozen=True)
class HumanAnswer:
    """A person's valid answer: the action, seconds from seeing the turn to answering, and the
    validation errors the form showed on the way."""

    action: Action
    response_time: float
    errors: tuple[str, ...] = field(default_factory=tuple)


class Desk(Protocol):
    """Where a person's turns are shown and answered (the web app implements it)."""

    async def wait_answer(self, request: TurnRequest) -> HumanAnswer | None:
        """The person's answer to ``request``, or None when their time limit passed."""
        ...


class Human:
    """A person in a seat. The turn goes to the desk; the answer comes back already valid (the
    form re-asks until it is), so a person is never re-asked by the table. No answer in time
    becomes a timed-out reply: the table applies the game's fallback and records a timeout."""

    def __init__(self, desk: Desk) -> None:
        self.desk = desk

    async def act(self, request: TurnRequest) -> Reply:
        answer = await self.desk.wait_answer(request)
        if answer is None:
            return Reply(text="", timed_out=True)
        return Reply(text=answer.action.render(), action=answer.action, latency=answer.response_time, errors=answer.errors)
