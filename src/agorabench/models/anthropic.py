"""The Anthropic Messages API through the official ``anthropic`` SDK.

Our transcripts are chat messages with an optional leading system message; the Messages API
takes the system text apart and needs user and assistant turns to alternate (the table already
merges consecutive observations into one user message).

Prompt caching: a role's transcript only ever grows at the end, so each call's prompt starts with
the previous call's prompt. With ``prompt_caching`` the system block, the previous user turn and
the newest user turn carry ``cache_control`` breakpoints (3 at most; the API takes 4): the newest
one writes this prefix to the server's cache, the previous one reads what the last call wrote.
Each breakpoint is ``{"type": "ephemeral"}`` (written prefixes live 5 minutes, the default) or,
with the entry's ``cache_ttl = "1h"``, ``{"type": "ephemeral", "ttl": "1h"}`` (an hour; writes
cost 2 x input instead of 1.25 x). The server reports ``cache_read_input_tokens``; they are
counted as ``cached_tokens``, and ``prompt_tokens`` is the whole prompt (uncached + cache reads
+ cache writes).

The SDK's own retries are off: :class:`agorabench.models.model.Model` retries.
"""

from __future__ import annotations

import time
from typing import Any

from ..redact import redact
from .base import BackendError, Completion, GenerationSettings
from .credentials import api_key_from_env
from .errors import sdk_error
from .reasoning import anthropic_fields
from .transport.wire import Counts

#: The ``cache_control`` of a breakpoint by the entry's ``cache_ttl`` ("5m" is the API's default
#: and is sent as it always was: without a ``ttl``).
CACHE_CONTROL: dict[str, dict[str, str]] = {"5m": {"type": "ephemeral"}, "1h": {"type": "ephemeral", "ttl": "1h"}}
#: Most ``cache_control`` breakpoints the Messages API takes in one request.
MAX_BREAKPOINTS = 4
#: What an empty message of the transcript is sent as (the Messages API refuses empty text).
EMPTY_ANSWER = "(no answer)"


def cache_control(ttl: str) -> dict[str, str]:
    """A breakpoint's ``cache_control`` for ``ttl`` ("5m" or "1h"); ValueError for another."""
    try:
        return dict(CACHE_CONTROL[ttl])
    except KeyError:
        raise ValueError(f"cache_ttl must be one of {', '.join(CACHE_CONTROL)}, not {ttl!r}") from None


def to_messages_api(messages: list[dict[str, str]], prompt_caching: bool, cache_ttl: str = "5m") -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """(system blocks, messages) in the Messages API's shape, with cache breakpoints (the
    system block and the last two user turns, each ``cache_control(cache_ttl)``; never more than
    :data:`MAX_BREAKPOINTS`)."""
    system: list[dict[str, Any]] | None = None
    turns: list[dict[str, Any]] = []
    for m in messages:
        if not m["content"]:  # the API refuses empty text blocks (an empty answer in the transcript)
            m = {**m, "content": EMPTY_ANSWER}
        if m["role"] == "system":
            system = [{"type": "text", "text": m["content"]}]
        elif turns and turns[-1]["role"] == m["role"]:  # keep the turns alternating
            turns[-1]["content"][0]["text"] += "\n\n" + m["content"]
        else:
            turns.append({"role": m["role"], "content": [{"type": "text", "text": m["content"]}]})
    if prompt_caching:
        marked = ([system[-1]] if system else []) + [t["content"][-1] for t in turns if t["role"] == "user"][-2:]
        for block in marked[:MAX_BREAKPOINTS]:
            block["cache_control"] = cache_control(cache_ttl)
    return system, turns


def messages_params(model: str, messages: list[dict[str, str]], settings: GenerationSettings, prompt_caching: bool, cache_ttl: str = "5m") -> dict[str, Any]:
    """The JSON body of one Messages API call: ``model``, ``messages``, ``max_tokens``,
    ``system`` (when there is one) and the fields of :func:`anthropic_fields`. The live backend
    sends it (through the SDK) and a batch item carries it as its ``params``
    (:mod:`agorabench.models.batch`), so the two never differ."""
    system, turns = to_messages_api(messages, prompt_caching, cache_ttl)
    fields = anthropic_fields(settings)  # max_tokens, thinking, effort, temperature (reasoning.py)
    params: dict[str, Any] = {"model": model, "messages": turns, "max_tokens": fields.pop("max_tokens")}
    if system:
        params["system"] = system
    params.update(fields)
    return params


def _get(obj: Any, name: str) -> Any:
    """A field of an SDK object or of the same object as plain JSON (a batch result)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def completion_from_message(message: Any, latency: float = 0.0) -> Completion:
    """A Messages API reply (the SDK's object, or its JSON as a batch result holds it) as a
    :class:`Completion`: the text blocks' text, thinking blocks as the reasoning ("" for omitted
    or redacted thinking), ``prompt_tokens`` the whole prompt (uncached + cache reads + cache
    writes), cache reads as ``cached_tokens`` and writes in ``extra["cache_write_tokens"]``."""
    blocks = list(_get(message, "content") or [])
    text = "".join(_get(b, "text") or "" for b in blocks if _get(b, "type") == "text")
    thoughts = [b for b in blocks if _get(b, "type") in ("thinking", "redacted_thinking")]
    # thinking shown (its text), omitted (empty text) or redacted (opaque data: kept as "")
    reasoning = "\n\n".join(_get(b, "thinking") or "" for b in thoughts) if thoughts else None
    usage = _get(message, "usage") or {}
    counts = Counts()  # a value that is not a count is not reported (noted, and said once per model)
    read = counts(usage, "cache_read_input_tokens") or 0
    written = counts(usage, "cache_creation_input_tokens") or 0
    extra: dict[str, Any] = counts.note({"cache_write_tokens": written} if written else {})
    if any(_get(b, "type") == "redacted_thinking" for b in thoughts):
        extra["redacted_thinking"] = True
    tier = _get(usage, "service_tier")  # the tier that served it (standard, priority, batch), as billed
    if isinstance(tier, str) and tier:
        extra["service_tier"] = tier
    prompt, output = counts(usage, "input_tokens"), counts(usage, "output_tokens")  # None: unknown, stored as NULL
    counts.note(extra)
    return Completion(
        text=text,
        prompt_tokens=None if prompt is None else prompt + read + written,
        completion_tokens=output,  # thinking included, as billed
        cached_tokens=read,
        latency=latency,
        finish_reason=_get(message, "stop_reason") or "stop",
        extra=extra,
        reasoning=reasoning,
    )


class AnthropicBackend:
    serialized = False
    dialect = "anthropic"

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "ANTHROPIC_API_KEY", timeout: float = 120.0, prompt_caching: bool = True, cache_ttl: str = "5m") -> None:
        import anthropic

        self.model = model
        self.prompt_caching = prompt_caching
        try:
            cache_control(cache_ttl)
        except ValueError as exc:
            raise BackendError(str(exc), retryable=False) from None
        #: How long a prefix written to the prompt cache lives: "5m" (the API's default) or "1h".
        self.cache_ttl = cache_ttl
        if base_url is not None and base_url.rstrip("/").endswith("/v1"):
            base_url = base_url.rstrip("/")[: -len("/v1")]  # the SDK adds /v1/messages itself
        self.base_url = base_url
        self.identity = f"anthropic:{redact(base_url or 'default')}:{model}"
        api_key = api_key_from_env(model, base_url, api_key_env)
        self._sdk = anthropic
        self.client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        # everything but max_tokens travels as body fields: SDK versions differ in what they name
        params = messages_params(self.model, messages, settings, self.prompt_caching, self.cache_ttl)
        kwargs: dict[str, Any] = {k: params.pop(k) for k in ("model", "messages", "max_tokens", "system") if k in params}
        kwargs["extra_body"] = params
        started = time.perf_counter()
        try:
            resp = await self.client.messages.create(**kwargs)
        except Exception as exc:
            known = self.classify_error(exc)
            if known is None:
                raise
            raise known from None
        return completion_from_message(resp, time.perf_counter() - started)

    def classify_error(self, exc: BaseException) -> BackendError | None:
        """An error of the ``anthropic`` SDK as a BackendError (529, "overloaded", is a 5xx:
        transient); None for any other exception."""
        if isinstance(exc, self._sdk.APIError):
            return sdk_error(exc, self._sdk, self.base_url)
        return None

    def probe_target(self) -> None:
        """Not probed before a study: the Messages API has no listing to check a name against."""
        return None

    async def aclose(self) -> None:
        await self.client.close()

