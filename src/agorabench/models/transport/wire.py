"""The chat-completions wire format as the HTTP transports (``lean``, ``aiohttp``) speak it:
one flat JSON body out (orjson where installed), one JSON answer back, read without response
models. A transport built on it supplies only ``_post``: bytes out, (status, headers, bytes) in."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

try:
    import orjson

    dumps, loads = orjson.dumps, orjson.loads
except ImportError:  # pragma: no cover - orjson is a dependency; plain json still works
    dumps, loads = (lambda v: json.dumps(v).encode()), json.loads

from ..base import BackendError, Completion
from ..errors import error_fields, status_error
from . import Endpoint


def flat_body(request: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body of an SDK-shaped request: ``extra_body``'s fields at the top level."""
    body = {k: v for k, v in request.items() if k != "extra_body"}
    body.update(request.get("extra_body") or {})
    return body


def content_text(content: Any) -> str:
    """A message's content as text: a string as it is, a list of parts as its text parts
    joined (several servers send content so), anything else as empty."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") in (None, "text", "output_text"))
    return ""


#: Most tokens one reply may report in one count; more is not a count but a server's bug (a
#: value of 2^63 once made every game of a study unstorable).
MAX_REPLY_TOKENS = 10**9


def count(value: Any) -> int | None:
    """A token count a server reported: an integer from 0 to :data:`MAX_REPLY_TOKENS`, else None
    (not reported: a string, a list, a float, a boolean, a negative or absurd number)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPLY_TOKENS:
        return None
    return value


class Counts:
    """Reads a reply's token counts with :func:`count`, noting each value present that is not
    a count (``dropped``: name -> the value as shown, cut short), so the model can say so."""

    def __init__(self) -> None:
        self.dropped: dict[str, str] = {}

    def __call__(self, where: Any, name: str) -> int | None:
        value = where.get(name) if type(where) is dict or isinstance(where, Mapping) else getattr(where, name, None)
        n = count(value)
        if n is None and value is not None:
            self.dropped[name] = shown_value(value)
        return n

    def note(self, extra: dict[str, Any]) -> dict[str, Any]:
        """``extra`` with ``usage_dropped`` added when a count was dropped."""
        if self.dropped:
            extra["usage_dropped"] = dict(self.dropped)
        return extra


def shown_value(value: Any) -> str:
    """A reported value as a warning shows it: its repr, at most 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def billed_output(prompt: int | None, completion: int, total: int | None, reasoning: int | None) -> tuple[int, bool]:
    """(output tokens billed, whether the server's ``completion_tokens`` left some out): a
    server whose ``total_tokens`` exceeds prompt + completion, or whose reasoning tokens exceed
    its completion tokens, counted the reasoning apart (some gateways do); the larger figure is
    billed. An unknown prompt count (None) says nothing of the total."""
    billed = completion
    if total is not None and prompt is not None and total > prompt + completion:
        billed = total - prompt
    if reasoning is not None and reasoning > completion:
        billed = max(billed, completion + reasoning)
    return billed, billed != completion


def completion_from_json(data: Mapping[str, Any], latency: float = 0.0) -> Completion:
    """A chat-completions answer as a :class:`Completion`, with prompt-cache hits from
    ``usage.prompt_tokens_details.cached_tokens``, the reasoning from ``reasoning_content``
    (DeepSeek, vLLM) or ``reasoning`` (vLLM, Ollama, OpenRouter) and reasoning tokens from
    ``usage.completion_tokens_details.reasoning_tokens`` where the server reports them."""
    choices = data.get("choices") or []
    if not choices:
        raise BackendError("the server returned no choices", retryable=True)
    choice = choices[0]
    message = choice.get("message") or {}
    thoughts = message.get("reasoning_content")
    if not isinstance(thoughts, str):
        thoughts = message.get("reasoning")
    return served_tier(
        Completion(
            text=content_text(message.get("content")),
            latency=latency,
            finish_reason=choice.get("finish_reason") or "stop",
            reasoning=thoughts if isinstance(thoughts, str) else None,
            **usage_fields(data.get("usage"), "prompt_tokens", "completion_tokens"),
        ),
        data,
    )


#: The response header in which Gemini says which service tier served a call.
TIER_HEADER = "x-gemini-service-tier"
_TIER_CHARS = len(TIER_HEADER)


def served_tier(completion: Completion, data: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> Completion:
    """``completion`` with the service tier the provider says served it in
    ``extra["service_tier"]``: the answer's ``service_tier`` field (OpenAI: ``default``,
    ``flex``, ``priority``, ...), else Gemini's :data:`TIER_HEADER`; nothing when neither says."""
    tier = data.get("service_tier") if type(data) is dict or isinstance(data, Mapping) else None
    if not isinstance(tier, str) and headers:
        # the first header of that name in any case (a name of another length is never it)
        tier = next((v for k, v in headers.items() if len(k) == _TIER_CHARS and k.lower() == TIER_HEADER), None)
    if isinstance(tier, str) and tier.strip():
        completion.extra["service_tier"] = tier.strip()[:40]
    return completion


#: The ``*_details`` field of each count name the transports read (others are made as needed).
_DETAILS = {name: f"{name}_details" for name in ("prompt_tokens", "completion_tokens", "input_tokens", "output_tokens")}


def usage_fields(usage: Any, input_name: str, output_name: str) -> dict[str, Any]:
    """A :class:`Completion`'s token fields from a reply's ``usage`` (chat completions:
    ``prompt_tokens`` / ``completion_tokens``; the Responses API: ``input_tokens`` /
    ``output_tokens``; each with its ``*_details`` for cached and reasoning tokens). A value that
    is not a count is not reported (noted in ``extra``, said once per model) and is unknown
    (None, stored as NULL, never 0); output is billed by :func:`billed_output`, and reasoning a
    server left out of an output count it did give is inferred. An unknown output count with a
    known prompt and total is the total less the prompt, and no reasoning is inferred from it
    (a NaN output and a finite total once made up reasoning tokens for a model that does not
    reason)."""
    usage = usage if type(usage) is dict or isinstance(usage, Mapping) else {}
    in_details, out_details = usage.get(_DETAILS.get(input_name) or f"{input_name}_details"), usage.get(_DETAILS.get(output_name) or f"{output_name}_details")
    counts = Counts()
    # a count that is a plain integer in range is taken as it is (what ``counts`` returns for it, noting nothing)
    prompt = usage.get(input_name)
    if not (type(prompt) is int and 0 <= prompt <= MAX_REPLY_TOKENS):
        prompt = counts(usage, input_name)
    completion = usage.get(output_name)
    if not (type(completion) is int and 0 <= completion <= MAX_REPLY_TOKENS):
        completion = counts(usage, output_name)
    total = usage.get("total_tokens")
    if not (type(total) is int and 0 <= total <= MAX_REPLY_TOKENS):
        total = counts(usage, "total_tokens")
    reasoning_tokens = counts(out_details, "reasoning_tokens") if out_details is not None and isinstance(out_details, Mapping) else None
    if completion is None:
        billed, undercounted = (total - prompt if total is not None and prompt is not None and total >= prompt else None), False
    else:
        billed, undercounted = billed_output(prompt, completion, total, reasoning_tokens)
    if undercounted and reasoning_tokens is None:
        reasoning_tokens = billed - completion
    return {
        "prompt_tokens": prompt,
        "completion_tokens": billed,
        "cached_tokens": (counts(in_details, "cached_tokens") if in_details is not None and isinstance(in_details, Mapping) else None) or 0,
        "reasoning_tokens": reasoning_tokens,
        "extra": counts.note({"completion_tokens_reported": completion} if undercounted else {}),
    }


def answer_object(status: int, headers: Mapping[str, str], raw: bytes) -> dict[str, Any]:
    """The JSON object of an answer, or the BackendError its status or body amounts to (an HTTP
    error status as :func:`status_error` reads it, with every field of the provider's error body,
    :func:`error_fields`; a body that is not a JSON object: transient)."""
    try:
        data = loads(raw)
    except ValueError:
        try:  # orjson refuses lone surrogates (half an emoji); json reads them, and the model
            data = json.loads(raw)  # boundary sanitises the reply
        except ValueError:
            data = None
    if status != 200:
        fields = error_fields(data, raw)
        raise status_error(status, fields.message, headers, fields.code, fields.param, fields.kind)
    if not isinstance(data, dict):
        raise BackendError("the server's answer was cut off or malformed (not a JSON object; an HTML page?)", retryable=True)
    return data


def read_answer(status: int, headers: Mapping[str, str], raw: bytes) -> Completion:
    """The completion in an answer, or the BackendError its status or body amounts to."""
    data = answer_object(status, headers, raw)
    return served_tier(completion_from_json(data), data, headers)


class HttpTransport:
    """What the HTTP transports share: building the body, reading the answer, and turning the
    client's exceptions into BackendErrors through ``classify``."""

    name = "http"

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.url = endpoint.chat_url
        self.headers = endpoint.headers
        self.timeout = endpoint.timeout

    async def send(self, request: dict[str, Any]) -> Completion:
        body = dumps(self.body(request))
        try:
            status, headers, raw = await self._post(body)
        except BackendError:
            raise
        except Exception as exc:
            known = self.classify(exc)
            if known is None:
                raise
            raise known from None
        return self.read(status, headers, raw)

    def body(self, request: dict[str, Any]) -> dict[str, Any]:
        """The JSON body of a request (chat completions: one flat object)."""
        return flat_body(request)

    def read(self, status: int, headers: Mapping[str, str], raw: bytes) -> Completion:
        """The completion in an answer (chat completions), or its BackendError."""
        return read_answer(status, headers, raw)

    async def _post(self, body: bytes) -> tuple[int, Mapping[str, str], bytes]:  # pragma: no cover - abstract
        raise NotImplementedError

    def classify(self, exc: BaseException) -> BackendError | None:  # pragma: no cover - abstract
        return None

    async def aclose(self) -> None:  # pragma: no cover - abstract
        return None
