"""Players: LLM agents over a model, and scripted strategies over the structured observation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

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
            schema = kind.json_schema() if kind.response_format == "json" else None
            settings = replace(settings, json_schema=schema, grammar=kind.grammar())
        try:
            c = await self.model.complete(request.messages, settings, sample=f"{self.sample}:{request.attempt}")
        except BackendError as exc:
            raise BackendFailure(str(exc)) from None
        cost = 0.0 if c.cached else self.model.pricing.cost(c)
        return Reply(text=c.text, usage=Usage(c.prompt_tokens, c.completion_tokens, cost), latency=c.latency, cached=c.cached)


class Strategy:
    """A scripted player. Subclasses implement :meth:`decide` from ``request.prompt.observation``
    (and ``request.rng`` for randomised strategies); parameters come from the study file."""

    def __init__(self, **params: Any) -> None:
        self.params = params

    def decide(self, request: TurnRequest) -> Action:
        raise NotImplementedError

    async def act(self, request: TurnRequest) -> Reply:
        action = self.decide(request)
        return Reply(text=action.render(), action=action, cached=True)
