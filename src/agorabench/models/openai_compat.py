"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, llama.cpp's server, Ollama,
OpenRouter, DeepSeek, ...): :class:`ChatCompletionsBackend` builds each request in the server's
dialect and hands it to a transport chosen by name (:mod:`agorabench.models.transport`: ``lean``
by default, ``aiohttp``, ``sdk``); only the chosen transport's module is imported, so the
``openai`` SDK is loaded only by a model that asks for ``transport = "sdk"``.

Retries are never the backend's: :class:`agorabench.models.model.Model` retries, telling rate
limits from transient faults and honouring Retry-After.

OpenAI's prompt cache: a backend made with ``prompt_cache_key`` (the providers' factory sets it
for a model on OpenAI's own API, :func:`is_openai_api`, unless the entry says
``prompt_cache_key = false``) adds ``prompt_cache_key`` to every request made for a decision
(:data:`~agorabench.models.base.CALL_CONTEXT`): a short hash of the game and the seat
(:func:`prompt_cache_key`), so that a seat's calls, whose prompts grow at the end, reach the same
cache. It is a routing hint only: the messages are the same with and without it, and it is part
of neither the response cache's key nor a game's id. Other OpenAI-compatible servers (vLLM,
Ollama, a gateway) never get it: some refuse fields they do not know."""

from __future__ import annotations

import hashlib
import time
from typing import Any
from urllib.parse import urlsplit

from ..redact import redact
from .base import CALL_CONTEXT, BackendError, CallContext, Completion, GenerationSettings
from .credentials import api_key_from_env, split_credentials
from .reasoning import chat_fields
from .errors import MAX_RETRY_AFTER, retry_after_headers, sdk_error, status_error, too_large
from .transport import DEFAULT_TRANSPORT, Endpoint, open_transport
from .transport.wire import completion_from_json

#: Request fields the ``openai`` SDK's ``create`` names; any other field travels in ``extra_body``
#: (the HTTP transports send both as one flat body).
SDK_FIELDS = frozenset({"temperature", "seed", "max_tokens", "max_completion_tokens", "reasoning_effort", "response_format", "service_tier"})

#: Longest a probe waits for a server's model listing (seconds; less if the model's timeout is).
PROBE_TIMEOUT = 10.0

__all__ = [
    "AiohttpOpenAIBackend",
    "ChatCompletionsBackend",
    "LeanOpenAIBackend",
    "MAX_RETRY_AFTER",
    "OpenAICompatBackend",
    "PROBE_TIMEOUT",
    "api_key_from_env",
    "chat_request",
    "completion_from_json",
    "constraint_fields",
    "sdk_error",
    "status_error",
    "too_large",
]

# the name this module had for it before transports became objects of their own
_retry_after_headers = retry_after_headers


def chat_request(model: str, dialect: str, messages: list[dict[str, str]], settings: GenerationSettings) -> dict[str, Any]:
    """One call's request as the keyword arguments of the SDK's ``chat.completions.create``
    (fields the SDK does not name in ``extra_body``): what every transport sends (the HTTP ones
    flattened, :func:`~agorabench.models.transport.wire.flat_body`) and what a batch item
    carries (:mod:`agorabench.models.batch`), built here once so the two never differ."""
    request: dict[str, Any] = {"model": model, "messages": messages}
    fields = chat_fields(dialect, settings)  # token limit, sampling, reasoning (reasoning.py)
    extra = {k: fields.pop(k) for k in list(fields) if k not in SDK_FIELDS}
    request.update(fields)
    constraint = constraint_fields(dialect, settings)
    extra.update(constraint.pop("extra_body", {}))
    request.update(constraint)
    if extra:
        request["extra_body"] = extra
    return request


def constraint_fields(dialect: str, settings: GenerationSettings) -> dict[str, Any]:
    """Constrained decoding, as keyword arguments of the SDK's ``create`` in the server's
    dialect.

    ``openai`` (OpenAI, vLLM, SGLang, ...): a JSON action as a ``json_schema`` response
    format; grammars are not sent. ``llamacpp`` (llama.cpp's and llama-cpp-python's servers):
    the action's GBNF ``grammar``, for every format (for JSON it is far faster than one the
    server derives from a schema), else the schema as a ``json_object`` response format.
    """
    if dialect == "llamacpp":
        if settings.grammar is not None:
            return {"extra_body": {"grammar": settings.grammar}}
        if settings.json_schema is not None:
            return {"response_format": {"type": "json_object", "schema": settings.json_schema}}
        return {}
    if settings.json_schema is not None:
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "action", "schema": settings.json_schema}}}
    return {}


#: The host of OpenAI's own API (the one a ``prompt_cache_key`` is sent to).
OPENAI_API_HOST = "api.openai.com"


def is_openai_api(base_url: str | None) -> bool:
    """Whether requests to ``base_url`` reach OpenAI's own API: no base URL (the default API)
    or one on :data:`OPENAI_API_HOST`."""
    if base_url is None:
        return True
    try:
        host = urlsplit(base_url).hostname
    except ValueError:
        return False
    return (host or "").lower() == OPENAI_API_HOST


def prompt_cache_key(context: CallContext | None) -> str | None:
    """The ``prompt_cache_key`` of the calls of one seat of one game: ``agora-`` and 24 hex
    digits of a hash of (game id, seat), the same for every call of that seat and another for
    any other seat or game; None without a context (a call made for no decision)."""
    if context is None:
        return None
    digest = hashlib.sha256(f"{context.game}\x1f{context.role}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"agora-{digest[:24]}"


class ChatCompletionsBackend:
    """A model behind an OpenAI-compatible ``/chat/completions`` route."""

    serialized = False
    #: The transport when the constructor names none.
    transport_name = DEFAULT_TRANSPORT

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        dialect: str = "openai",
        transport: str | None = None,
        key_required: bool | None = None,
        service_tier: str | None = None,
        service_tier_fallback: bool = False,
        prompt_cache_key: bool = False,
        reasoning_summary: str = "auto",
    ) -> None:
        self.model = model
        #: Send ``prompt_cache_key`` (one per game and seat) with every call made for a decision.
        self.prompt_cache_key = prompt_cache_key
        #: Sent as ``service_tier`` with every call (None: not sent, the account's default);
        #: with ``service_tier_fallback`` a call the tier has no capacity for is made again
        #: without it (the standard tier), noted in the reply's ``extra``.
        self.service_tier = service_tier
        self.service_tier_fallback = service_tier_fallback
        self.dialect = dialect
        self.base_url = base_url
        self.timeout = timeout
        self.identity = f"openai:{redact(base_url or 'default')}:{model}"  # the same for every transport
        # a provider's own endpoint needs a key; a server of one's own may go without
        required = base_url is None if key_required is None else key_required
        self.api_key = api_key_from_env(model, None if required else base_url, api_key_env)
        # user:password@ in the URL: HTTP basic auth instead of the bearer key
        self.client_url, self.basic_auth = split_credentials(base_url)
        endpoint = Endpoint(base_url, self.client_url, self.api_key, self.basic_auth, timeout)
        self.transport = open_transport(transport or self.transport_name, endpoint)
        if reasoning_summary != "auto":  # the Responses transport's reasoning summaries (the default asks as before)
            if not hasattr(self.transport, "summary"):
                raise ValueError(f"reasoning_summary is sent by the responses transport only, not {self.transport.name!r}; set transport = \"responses\"")
            self.transport.summary = reasoning_summary

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        request = chat_request(self.model, self.dialect, messages, settings)
        if self.service_tier is not None:  # an added field: a request without it is as before
            request["service_tier"] = self.service_tier
        if self.prompt_cache_key:  # an added field beside the messages (an entry's extra_body wins)
            key = prompt_cache_key(CALL_CONTEXT.get())
            if key is not None:
                request.setdefault("extra_body", {}).setdefault("prompt_cache_key", key)
        started = time.perf_counter()
        try:
            completion = await self.transport.send(request)
        except BackendError as exc:
            if not (exc.unavailable and self.service_tier_fallback and "service_tier" in request):
                raise
            # the tier has no capacity: the same call at the standard tier, said in the reply
            request = {k: v for k, v in request.items() if k != "service_tier"}
            completion = await self.transport.send(request)
            completion.extra["service_tier_fallback"] = self.service_tier
        completion.latency = time.perf_counter() - started
        return completion

    def _constraint(self, settings: GenerationSettings) -> dict:
        """Constrained decoding in this server's dialect (:func:`constraint_fields`)."""
        return constraint_fields(self.dialect, settings)

    def classify_error(self, exc: BaseException) -> BackendError | None:
        """The BackendError an exception of this backend's transport amounts to (None: not one
        the transport knows)."""
        return self.transport.classify(exc)

    def probe_target(self) -> tuple[str | None, str | None, str, float]:
        """What :func:`agorabench.models.probe.probe_many` asks about this model before a study:
        (base URL, key, model name, timeout); every OpenAI-compatible server lists its models."""
        return self.base_url, self.api_key, self.model, min(PROBE_TIMEOUT, self.timeout)

    async def aclose(self) -> None:
        await self.transport.aclose()


# One class per transport, as before transports were chosen by name (benchmarks and tests name
# them): each is ChatCompletionsBackend with its transport fixed unless the caller names another.


class LeanOpenAIBackend(ChatCompletionsBackend):
    """Over our own HTTP/1.1 client (``transport = "lean"``)."""

    transport_name = "lean"


class AiohttpOpenAIBackend(ChatCompletionsBackend):
    """Over one aiohttp session (``transport = "aiohttp"``)."""

    transport_name = "aiohttp"


class OpenAICompatBackend(ChatCompletionsBackend):
    """Through the official ``openai`` SDK (``transport = "sdk"``)."""

    transport_name = "sdk"
