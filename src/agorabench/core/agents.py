"""Players: LLM agents over a model, scripted strategies over the structured observation,
people (through a desk: the web app's view of one participant), and outside agents (a
researcher's own program, asked over HTTP)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

from pydantic import ValidationError

from ..models.base import CALL_CONTEXT, BackendError, CallContext, Completion, GenerationSettings, sanitize_text
from ..models.model import Model
from ..models.outside import PROTOCOL, OutsideClient
from ..models.reasoning import output_limit
from .actions import Action, ParseError, _check_numbers, _clean, _describe
from .table import BackendFailure, Reply, TurnRequest, Usage


class LLMAgent:
    """Sends the role's transcript to a model and returns its answer; the table parses it.

    ``sample`` (the game id) makes every game's calls its own cache entries: two games whose
    transcripts happen to coincide still draw independent answers at temperature > 0, and a
    replay of the same game finds its answers again. Under sampling the key also names the
    decision (role and how many it was asked before), so an identical prompt later in the same
    game is a new draw, never the earlier decision's answer.

    A model's thoughts travel beside its answer (:attr:`Reply.reasoning`); a reply cut off at the
    output token limit cannot count (:attr:`Reply.unusable`), and one that spent the whole
    budget thinking is not asked again with the same budget.
    """

    def __init__(self, model: Model, sample: str = "", constrained: bool = False) -> None:
        self.model = model
        self.sample = sample
        self.constrained = constrained
        #: When a list (the runner sets one where a model may be stopped for invalid turns):
        #: the response-cache keys of the calls made since the runner last took them.
        self.keys: list[str] | None = None

    async def act(self, request: TurnRequest) -> Reply:
        settings = self.model.settings
        if self.constrained:
            kind = request.action_type
            schema = kind.json_schema() if kind.format().schema_decoding else None
            settings = replace(settings, json_schema=schema, grammar=kind.grammar())
        sample = f"{self.sample}:{request.role}:{request.decision}:{request.attempt}" if settings.sampled else f"{self.sample}:{request.attempt}"
        token = CALL_CONTEXT.set(CallContext(self.sample, request.role))
        try:
            c = await self.model.complete(request.messages, settings, sample=sample, keys=self.keys)
        except BackendError as exc:
            billed = exc.completion
            raise BackendFailure(str(exc), usage=call_usage(billed, self.model) if billed is not None else None) from None
        finally:
            CALL_CONTEXT.reset(token)
        unusable, final = unusable_reason(c, settings)
        return Reply(
            text=c.text,
            usage=call_usage(c, self.model),
            latency=c.latency,
            cached=c.cached,
            reasoning=c.reasoning,
            reasoning_tokens=c.reasoning_tokens,
            finish_reason=c.finish_reason,
            unusable=unusable,
            final=final,
        )


def call_usage(c: Completion, model: Model) -> Usage:
    """What one call used and cost, priced as the model's books price it (the same figure:
    :meth:`~agorabench.models.pricing.Pricing.cost` prices a reply once); an answer from the
    response cache costs nothing and was billed at no tier."""
    extra = c.extra or {}
    written = extra.get("cache_write_tokens")
    return Usage(
        c.prompt_tokens,
        c.completion_tokens,
        0.0 if c.cached else model.pricing.cost(c),
        cached_tokens=c.cached_tokens,
        cache_write_tokens=written if isinstance(written, int) and not isinstance(written, bool) and written > 0 else 0,
        tier=None if c.cached else extra.get("billed_tier"),
        fallbacks=1 if extra.get("service_tier_fallback") else 0,
    )


def unusable_reason(c: Completion, settings: GenerationSettings) -> tuple[str | None, bool]:
    """Why a completion cannot count whatever its text says, and whether asking again with the
    same budget would only repeat it. For a model that reasons (its settings say so, or the reply
    carried thoughts): a reply that spent its whole output budget thinking (no re-ask), one whose
    thoughts never closed, one cut off at the token limit (only the final answer counts, and a
    cut reply has none). A model that does not reason is judged on the text it gave, cut or not,
    as before: its complete blocks are its answer."""
    thinks = settings.reasoning or c.reasoning is not None
    if c.extra.get("unclosed_thought"):
        if c.cut:
            limit = output_limit(settings)
            return f"spent {c.completion_tokens or limit} of {limit} output tokens reasoning and gave no answer (cut off at the token limit)", True
        return "the reply ended inside its reasoning (an unclosed <think>), with no answer after it.", False
    if c.cut and thinks:
        if not c.text.strip():
            limit = output_limit(settings)
            return f"spent {c.completion_tokens or limit} of {limit} output tokens reasoning and gave no answer (cut off at the token limit)", True
        return "cut off at the token limit.", False
    # a model that does not reason: its text is its answer, cut or not, judged on the blocks it
    # completed (as before reasoning models: no prompt of such a model changes)
    return None, False


class RandomAnswers:
    """Answers each field of the action with a random value of its JSON-schema type (an enum
    member, a number in its bounds, a few words), written in the action's answer format after
    ``preface``; the table parses it like a model's answer, so values the rules reject are
    retried and then replaced by the fallback (a stand-in for a model: the cost plan, the
    conformance suite's random player)."""

    preface: ClassVar[str] = ""

    async def act(self, request: TurnRequest) -> Reply:
        props = request.action_type.model_json_schema().get("properties", {})
        values = {name: random_value(prop, request.rng) for name, prop in props.items()}
        return Reply(text=self.preface + request.action_type.format().write(values))


def random_value(prop: dict[str, Any], rng: random.Random) -> Any:
    """A random value of a JSON-schema property: one of its options, a number within its bounds,
    a boolean, or a few words."""
    options = prop.get("enum") or ([prop["const"]] if "const" in prop else None)
    if options is None and "anyOf" in prop:
        options = [o["const"] for o in prop["anyOf"] if "const" in o] or None
        kinds = [o for o in prop["anyOf"] if "type" in o and o["type"] != "null"]
        if options is None and kinds:
            return random_value(kinds[0], rng)
    if options:
        return rng.choice(options)
    kind = prop.get("type")
    lo = prop.get("minimum", prop.get("exclusiveMinimum", 0))
    hi = prop.get("maximum", prop.get("exclusiveMaximum", max(lo, 0) + 100))
    if kind == "integer":
        return rng.randint(math.ceil(lo), math.floor(hi))
    if kind == "number":
        return round(rng.uniform(lo, hi), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    return " ".join(rng.choice(["we", "share", "fair", "more", "less", "deal", "offer", "yes", "no"]) for _ in range(rng.randint(1, 8)))


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


def action_from_data(action_type: type[Action], data: Any) -> Action:
    """A JSON object as an action of ``action_type``, checked as a parsed answer is (the same
    clean-up of values, the type's validation, finite and sensible numbers) but read from data,
    never from text; ParseError with the message the player is re-asked with."""
    if data is None:
        raise ParseError('The answer has no "action": give the action as a JSON object with the fields of the action schema.')
    if not isinstance(data, dict):
        raise ParseError(f'The answer\'s "action" is JSON {type(data).__name__}, not an object with the fields of the action schema.')
    try:
        action = action_type.model_validate(_clean(data, action_type.text_fields))
        _check_numbers(dict(action))
    except ValidationError as exc:
        raise ParseError(f"The answer is not a valid action: {_describe(exc)}") from None
    except ParseError as exc:
        raise ParseError(f"The answer is not a valid action: {exc}") from None
    return action


class OutsideAgent:
    """An outside agent in a seat (``http/URL``): each decision is one JSON request to the
    agent (:class:`agorabench.models.outside.OutsideClient`) holding what this role may know and
    nothing else: the role's own messages (those a model in the seat would be sent), its
    observation (what scripted players read), the action's JSON schema, the game, the decision
    and the attempt (``docs/outside-agents.md``). The answer's ``action`` object is validated
    with the action type (:func:`action_from_data`, no text is parsed); an answer that cannot be
    used is an invalid reply with its reason, which the table re-asks and then replaces by the
    game's fallback, as for a model; no answer within the time limit is a timed-out turn; an
    agent that cannot be reached fails the game (:class:`BackendFailure`), as a model's dead
    server does, and the study goes on. The turn's raw reply is the answer's ``response`` text,
    if any, followed by the action written in the game's answer format."""

    def __init__(self, client: OutsideClient, game: str, game_id: str = "", params: dict[str, Any] | None = None) -> None:
        self.client = client
        self.game = game
        self.game_id = game_id
        self.params = dict(params or {})

    def request(self, request: TurnRequest) -> dict[str, Any]:
        """What the agent is sent for ``request``."""
        body: dict[str, Any] = {
            "protocol": PROTOCOL,
            "game": self.game,
            "game_id": self.game_id,
            "role": request.role,
            "decision": request.decision,
            "attempt": request.attempt,
            "error": request.error,
            "phase": request.prompt.phase,
            "time_limit": self.client.timeout,
            "messages": request.messages,
            "observation": request.prompt.observation,
            "action_schema": request.action_type.model_json_schema(),
            "action_rules": request.action_type.form_note(),
        }
        if self.params:
            body["params"] = self.params
        return body

    async def act(self, request: TurnRequest) -> Reply:
        try:
            answer = await self.client.ask(self.request(request))
        except BackendError as exc:
            raise BackendFailure(str(exc)) from None
        if answer.timed_out:
            return Reply(text="", latency=answer.latency, timed_out=True)
        data = answer.data
        if data is None:
            return Reply(text=answer.body, latency=answer.latency, unusable=answer.problem or "the answer could not be read")
        reasoning = data.get("reasoning")
        reasoning = sanitize_text(reasoning)[0] if isinstance(reasoning, str) and reasoning.strip() else None
        try:
            action = action_from_data(request.action_type, data.get("action"))
        except ParseError as exc:
            return Reply(text=answer.body, latency=answer.latency, reasoning=reasoning, unusable=str(exc))
        said = data.get("response")
        said = sanitize_text(said)[0].strip() if isinstance(said, str) else ""
        text = f"{said}\n\n{action.render()}" if said else action.render()
        return Reply(text=text, action=action, latency=answer.latency, reasoning=reasoning)
