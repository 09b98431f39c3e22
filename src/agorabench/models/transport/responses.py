"""The ``responses`` transport: OpenAI's Responses API (``POST {base_url}/responses``) over our
keep-alive HTTP/1.1 client, as the ``lean`` transport uses it (same connections, same body bound,
same classification of client failures).

OpenAI serves its reasoning models best there, and some (``gpt-5-pro``, ``o3-pro``) only there.
The backend still builds a chat-completions request (:class:`ChatCompletionsBackend`); this
module translates it (:func:`responses_body`) and reads the answer back into a
:class:`~agorabench.models.base.Completion` (:func:`completion_from_response`):

- the first message, when it is a system message, becomes ``instructions``; the other messages
  become ``input`` items ``{"role", "content"}`` with their text;
- ``max_completion_tokens`` (else ``max_tokens``) becomes ``max_output_tokens``, which covers
  reasoning and answer alike;
- ``reasoning_effort`` becomes ``reasoning: {"effort", "summary": "auto"}``; a request that
  reasons without naming an effort (it carries ``max_completion_tokens``, which the backend sends
  only to a reasoning model) still asks for the summary. The summary asked for is the model
  entry's ``reasoning_summary`` (``auto`` by default; ``concise``, ``detailed``; ``none`` asks for
  none); a server that refuses summaries (an organisation not verified for them) gets none from
  then on: the refused call is sent again without it, once, and the model says so once;
- the temperature is kept, the seed dropped (the API has none), a JSON-schema response format
  becomes ``text.format``; nothing is stored on the server (``store: false``); ``extra_body``'s
  fields are merged last, at the top level.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..base import BackendError, Completion
from ..errors import StatusError
from . import DEFAULT_API_URL, Endpoint
from .lean import LeanTransport
from .wire import answer_object, content_text, served_tier, usage_fields

#: Chat-completions fields this module translates or drops rather than passing on as they are.
_TRANSLATED = frozenset({"messages", "max_tokens", "max_completion_tokens", "reasoning_effort", "response_format", "seed", "extra_body"})

#: Error codes of a failed response that another attempt may get past.
_TRANSIENT = re.compile(r"server_error|rate_limit|timeout|overloaded|unavailable|capacity", re.I)


def responses_url(endpoint: Endpoint) -> str:
    """The Responses route of an endpoint: its base URL (the default API's when none) + ``/responses``."""
    return (endpoint.client_url or DEFAULT_API_URL).rstrip("/") + "/responses"


def _text_format(response_format: Any) -> dict[str, Any] | None:
    """A chat-completions ``response_format`` as the Responses API's ``text.format`` (None for
    one it has no counterpart for). A JSON schema is sent non-strict, as the chat route sends it."""
    if not isinstance(response_format, Mapping):
        return None
    kind = response_format.get("type")
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        return {"type": "json_schema", "name": spec.get("name") or "action", "schema": spec.get("schema") or {}, "strict": bool(spec.get("strict", False))}
    if kind in ("json_object", "text"):
        return {"type": kind}
    return None


#: What a model entry's ``reasoning_summary`` may ask for (``none``: no summary is asked for).
SUMMARIES = ("auto", "concise", "detailed", "none")


def responses_body(request: Mapping[str, Any], summary: str = "auto") -> dict[str, Any]:
    """The Responses API body equivalent to a chat-completions request (the keyword arguments of
    the SDK's ``chat.completions.create``; see the module's docstring for the rules), asking for
    reasoning summaries of the kind ``summary`` (``none``: none; ``auto``, the default, sends
    what was sent before the setting existed, byte for byte)."""
    body: dict[str, Any] = {k: v for k, v in request.items() if k not in _TRANSLATED}
    messages = list(request.get("messages") or [])
    if messages and messages[0].get("role") == "system":
        body["instructions"] = content_text(messages[0].get("content"))
        messages = messages[1:]
    body["input"] = [{"role": m.get("role") or "user", "content": content_text(m.get("content"))} for m in messages]
    limit = request.get("max_completion_tokens")
    if limit is None:
        limit = request.get("max_tokens")
    if limit is not None:
        body["max_output_tokens"] = limit
    effort = request.get("reasoning_effort")
    if effort is not None:
        body["reasoning"] = {"effort": effort} if effort == "none" or summary == "none" else {"effort": effort, "summary": summary}  # no thoughts, nothing to summarise
    elif "max_completion_tokens" in request and summary != "none":
        body["reasoning"] = {"summary": summary}
    text_format = _text_format(request.get("response_format"))
    if text_format is not None:
        body["text"] = {"format": text_format}
    body["store"] = False
    body.update(request.get("extra_body") or {})
    return body


def _reasoning_text(item: Mapping[str, Any]) -> str:
    """The text of a reasoning item: its summary parts joined by blank lines; failing those, the
    reasoning text some servers (vLLM's gpt-oss) put in its ``content``; "" when it shows none."""
    summary = [str(p.get("text") or "") for p in item.get("summary") or [] if isinstance(p, Mapping)]
    if any(summary):
        return "\n\n".join(s for s in summary if s)
    content = [str(p.get("text") or "") for p in item.get("content") or [] if isinstance(p, Mapping) and p.get("type") == "reasoning_text"]
    return "\n\n".join(c for c in content if c)


def _failure(data: Mapping[str, Any]) -> BackendError:
    """A response whose generation failed (``status: "failed"``), retryable when its error code
    says the fault is passing (a server error, a rate limit)."""
    error = data.get("error") if isinstance(data.get("error"), Mapping) else {}
    code = str(error.get("code") or "")
    message = str(error.get("message") or "no message")
    rate_limited = "rate_limit" in code
    return BackendError(f"the response failed ({code or 'no code'}): {message}", retryable=bool(_TRANSIENT.search(code)), rate_limited=rate_limited)


def completion_from_response(data: Mapping[str, Any], latency: float = 0.0) -> Completion:
    """A Responses API answer as a :class:`Completion`.

    Text: the ``output_text`` parts of the ``message`` items. Reasoning: the reasoning items'
    summaries joined by blank lines ("" when the items show no text, None without a reasoning
    item). Tokens: ``input_tokens`` (of them ``input_tokens_details.cached_tokens`` from the
    prompt cache), ``output_tokens`` (reasoning included) and
    ``output_tokens_details.reasoning_tokens`` (None when not reported), billed as
    :func:`~agorabench.models.transport.wire.billed_output` says. An answer cut by
    ``max_output_tokens`` finishes with ``length``; another incomplete one with its reason; a
    failed one is a BackendError."""
    status = data.get("status") or "completed"
    if status == "failed":
        raise _failure(data)
    if status not in ("completed", "incomplete"):
        raise BackendError(f"the response is {status}, not finished (was it sent in the background?)", retryable=True)
    texts: list[str] = []
    thoughts: list[str] | None = None
    for item in data.get("output") or []:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "message":
            texts.extend(str(p.get("text") or "") for p in item.get("content") or [] if isinstance(p, Mapping) and p.get("type") == "output_text")
        elif kind == "reasoning":
            thoughts = [] if thoughts is None else thoughts
            text = _reasoning_text(item)
            if text:
                thoughts.append(text)
    finish = "stop"
    if status == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        finish = "length" if reason == "max_output_tokens" else str(reason or "incomplete")
    completion = Completion(
        text="".join(texts),
        latency=latency,
        finish_reason=finish,
        reasoning=None if thoughts is None else "\n\n".join(thoughts),
        **usage_fields(data.get("usage"), "input_tokens", "output_tokens"),
    )
    return served_tier(completion, data)  # the tier that served it, as on chat completions


def read_response(status: int, headers: Mapping[str, str], raw: bytes) -> Completion:
    """The completion in a Responses API answer, or the BackendError its HTTP status or body
    amounts to (statuses read as for chat completions)."""
    data = answer_object(status, headers, raw)
    return served_tier(completion_from_response(data), data, headers)


def refuses_summaries(exc: BaseException) -> bool:
    """Whether an error refuses the request's reasoning summary (its ``param`` or words name it:
    OpenAI's "Your organization must be verified to generate reasoning summaries", code
    ``unsupported_value``, param ``reasoning.summary``)."""
    return isinstance(exc, StatusError) and exc.status in (400, 422) and exc.setting == "reasoning.summary"


class ResponsesTransport(LeanTransport):
    """The ``lean`` transport's client and failure classes, on the Responses route."""

    name = "responses"

    def __init__(self, endpoint: Endpoint, summary: str = "auto") -> None:
        super().__init__(endpoint)
        self.url = responses_url(endpoint)
        if summary not in SUMMARIES:
            raise ValueError(f"reasoning_summary must be one of {', '.join(SUMMARIES)}, not {summary!r}")
        #: The reasoning summary asked for (:data:`SUMMARIES`); ``none`` for good once the server
        #: refused summaries.
        self.summary = summary
        #: The server's refusal of summaries, once it refused them (None until then).
        self.summary_refused: str | None = None

    def body(self, request: dict[str, Any]) -> dict[str, Any]:
        """The Responses API's body for a chat-completions request (:func:`responses_body`)."""
        return responses_body(request, self.summary)

    async def send(self, request: dict[str, Any]) -> Completion:
        """The completion of ``request``; a call refused for its reasoning summary is sent again
        once without one, and no later call asks for one (noted in the reply's
        ``extra["reasoning_summary_refused"]``, which the model says once)."""
        asked = self.summary
        try:
            return await super().send(request)
        except BackendError as exc:
            if asked == "none" or not refuses_summaries(exc):
                raise
            self.summary = "none"
            self.summary_refused = self.summary_refused or " ".join(getattr(exc, "detail", str(exc)).split())[:300]
        completion = await super().send(request)
        completion.extra["reasoning_summary_refused"] = self.summary_refused
        return completion

    def read(self, status: int, headers: Mapping[str, str], raw: bytes) -> Completion:
        """The completion in a Responses API answer (:func:`read_response`)."""
        return read_response(status, headers, raw)
