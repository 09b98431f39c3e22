"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, llama.cpp server, Ollama,
OpenRouter, DeepSeek, ...), by one of three transports speaking the same wire format:

- ``lean`` (default): our keep-alive HTTP/1.1 client (:mod:`agorabench.models.http11`),
  request and response bodies through orjson, no response models: a small fraction of the
  SDK's client CPU per call (benchmarks/README.md), which matters when a fast backend answers
  hundreds or thousands of calls per second;
- ``aiohttp``: the same requests over one aiohttp session (the default before ``lean``);
- ``sdk``: the official ``openai`` SDK with its aiohttp transport.

Retries are never the transport's: :class:`agorabench.models.model.Model` retries, telling rate
limits from transient faults and honouring Retry-After."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import os
import time
from typing import Any, Mapping
from urllib.parse import unquote, urlsplit, urlunsplit

import openai

try:
    import orjson

    _dumps, _loads = orjson.dumps, orjson.loads
except ImportError:  # pragma: no cover - orjson is a dependency; plain json still works
    _dumps, _loads = (lambda v: json.dumps(v).encode()), json.loads

from ..redact import redact, register_secret
from .base import BackendError, Completion, GenerationSettings


def api_key_from_env(model: str, base_url: str | None, api_key_env: str) -> str:
    """The key from the environment; a self-hosted server (a ``base_url``) may go without."""
    api_key = os.environ.get(api_key_env)
    if api_key:
        register_secret(api_key)  # redacted from everything stored, printed or exported
        return api_key
    if base_url is None:
        raise BackendError(f"model {model!r} needs an API key in the environment variable {api_key_env}", retryable=False)
    return "not-needed"  # local servers accept any key


def sdk_error(exc: Exception, sdk: Any, base_url: str | None = None) -> BackendError:
    """An exception of the ``openai`` or ``anthropic`` SDK (same error classes) as a
    BackendError: rate limits, timeouts and lost connections are retryable (a refused connection
    is named as such, not as a timeout), a malformed or cut-off body is retried as transient,
    statuses as in :func:`status_error`."""
    from .http11 import BodyTooLarge

    if isinstance(exc, BodyTooLarge) or isinstance(exc.__cause__, BodyTooLarge):  # our bound on the body
        return too_large(exc)
    if isinstance(exc, sdk.RateLimitError):
        return BackendError(f"rate limited: {exc}", retryable=True, retry_after=_retry_after(exc), rate_limited=True)
    if isinstance(exc, sdk.APITimeoutError):  # the SDK reports a refused connection as one
        problem = _connection_problem(exc, base_url)
        return BackendError(problem if "refused" in problem else f"no answer within the timeout ({exc})", retryable=True, timed_out="refused" not in problem)
    if isinstance(exc, sdk.APIConnectionError):
        return BackendError(_connection_problem(exc, base_url), retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        return status_error(exc.status_code, exc.message, getattr(exc.response, "headers", None))
    if isinstance(exc, (ValueError, getattr(sdk, "APIResponseValidationError", ValueError))):
        return BackendError(f"the server's answer was cut off or malformed ({type(exc).__name__}: {str(exc)[:120]})", retryable=True)
    return BackendError(f"{type(exc).__name__}: {exc}", retryable=True)


def _http_client():
    """The SDK's aiohttp transport when installed: it sustains far more concurrent requests
    than the default httpx transport."""
    try:
        from openai import DefaultAioHttpClient

        return DefaultAioHttpClient()
    except Exception:  # aiohttp extra missing
        return None


def _bound_bodies(client: Any) -> None:
    """Wrap the SDK client's transport so that a response body is read to at most
    :data:`~agorabench.models.http11.MAX_BODY` bytes, as sent and once decoded (gzip/deflate are
    decoded here, incrementally): the bound of the other transports. A client without the
    expected transport attribute is left as it is."""
    inner = getattr(client, "_transport", None)
    if inner is None or not hasattr(inner, "handle_async_request"):
        return
    client._transport = _BoundedTransport(inner)


class _BoundedTransport:
    """An httpx-style transport around another that bounds and decodes response bodies."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def handle_async_request(self, request: Any) -> Any:
        resp = await self.inner.handle_async_request(request)
        encoding = resp.headers.get("content-encoding", "identity").lower()
        headers = [(k, v) for k, v in resp.headers.raw if k.lower() != b"content-encoding"]
        # the client checks the stream's class: ours derives from the httpx module's own base
        base = next((c for c in type(resp.stream).__mro__ if c.__name__ == "AsyncByteStream"), object)
        stream = _bounded_stream_class(base)(resp.stream, encoding)
        return type(resp)(resp.status_code, headers=headers, stream=stream, request=request, extensions=resp.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


_STREAM_CLASSES: dict[type, type] = {}


def _bounded_stream_class(base: type) -> type:
    """:class:`_BoundedStream` as a subclass of ``base`` (the SDK's httpx ``AsyncByteStream``)."""
    if base not in _STREAM_CLASSES:
        _STREAM_CLASSES[base] = type("BoundedStream", (_BoundedStream, base), {}) if base is not object else _BoundedStream
    return _STREAM_CLASSES[base]


class _BoundedStream:
    """The body of one response, decoded, raising BodyTooLarge past the bound."""

    def __init__(self, inner: Any, encoding: str) -> None:
        import zlib

        from .http11 import MAX_BODY, BodyTooLarge, ProtocolError

        self.inner, self.limit, self.too_large, self.bad = inner, MAX_BODY, BodyTooLarge, ProtocolError
        self.encoding = encoding
        self.inflater = zlib.decompressobj(47 if "gzip" in encoding else zlib.MAX_WBITS) if encoding in ("gzip", "x-gzip", "deflate") else None

    async def __aiter__(self):
        import zlib

        sent = decoded = 0
        async for chunk in self.inner:
            sent += len(chunk)
            if sent > self.limit:
                raise self.too_large(f"the server sent more than {self.limit} bytes of body")
            if self.inflater is not None:
                try:
                    chunk = self.inflater.decompress(chunk, self.limit - decoded + 1)
                except zlib.error as exc:
                    raise self.bad(f"a {self.encoding} body that does not decode: {exc}") from None
                if self.inflater.unconsumed_tail:
                    raise self.too_large(f"a {self.encoding} body that decodes to more than {self.limit} bytes")
            decoded += len(chunk)
            if decoded > self.limit:
                raise self.too_large(f"a body that decodes to more than {self.limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class OpenAICompatBackend:
    serialized = False

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY", timeout: float = 120.0, dialect: str = "openai") -> None:
        self.model = model
        self.dialect = dialect
        self.base_url = base_url
        self.identity = f"openai:{redact(base_url or 'default')}:{model}"
        self.api_key = api_key_from_env(model, base_url, api_key_env)
        # user:password@ in the URL: HTTP basic auth instead of the bearer key
        self.client_url, self.basic_auth = _split_credentials(base_url)
        self._connect(self.api_key, timeout)

    def _connect(self, api_key: str, timeout: float) -> None:
        kwargs: dict[str, Any] = {"base_url": self.client_url, "api_key": api_key, "max_retries": 0, "timeout": timeout}
        if self.basic_auth:
            kwargs["default_headers"] = {"Authorization": self.basic_auth}
        client = _http_client()
        if client is not None:
            _bound_bodies(client)
            kwargs["http_client"] = client
        self.client = openai.AsyncOpenAI(**kwargs)

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        started = time.perf_counter()
        kwargs = self._constraint(settings)
        try:
            resp = await self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                seed=settings.seed,
                **kwargs,
            )
        except (openai.APIError, ValueError) as exc:
            raise sdk_error(exc, openai, self.base_url) from None
        latency = time.perf_counter() - started
        if not hasattr(resp, "choices"):  # the SDK hands back the raw body when it is not JSON
            raise BackendError("the server answered with a page that is not a chat completion (HTML?)", retryable=True)
        if not resp.choices:
            raise BackendError("the server returned no choices", retryable=True)
        choice = resp.choices[0]
        usage = resp.usage
        details = getattr(usage, "prompt_tokens_details", None)
        return Completion(
            text=choice.message.content or "",
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            cached_tokens=getattr(details, "cached_tokens", 0) or 0,
            latency=latency,
            finish_reason=choice.finish_reason or "stop",
        )

    def _constraint(self, settings: GenerationSettings) -> dict:
        """Constrained decoding in the server's dialect.

        ``openai`` (OpenAI, vLLM, SGLang, ...): JSON actions as a ``json_schema`` response format;
        grammars are not sent. ``llamacpp`` (llama.cpp and llama-cpp-python servers): the action's
        GBNF ``grammar`` (every format; for JSON it is far faster than a schema-derived one).
        """
        if self.dialect == "llamacpp":
            if settings.grammar is not None:
                return {"extra_body": {"grammar": settings.grammar}}
            if settings.json_schema is not None:
                return {"response_format": {"type": "json_object", "schema": settings.json_schema}}
            return {}
        if settings.json_schema is not None:
            return {"response_format": {"type": "json_schema", "json_schema": {"name": "action", "schema": settings.json_schema}}}
        return {}

    async def aclose(self) -> None:
        await self.client.close()


def completion_from_json(data: Mapping[str, Any], latency: float) -> Completion:
    """A chat-completions response body as a :class:`Completion`; prompt-cache hits from
    ``usage.prompt_tokens_details.cached_tokens`` where the server reports them."""
    choices = data.get("choices") or []
    if not choices:
        raise BackendError("the server returned no choices", retryable=True)
    choice = choices[0]
    usage = data.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    return Completion(
        text=(choice.get("message") or {}).get("content") or "",
        prompt_tokens=usage.get("prompt_tokens") or 0,
        completion_tokens=usage.get("completion_tokens") or 0,
        cached_tokens=details.get("cached_tokens") or 0,
        latency=latency,
        finish_reason=choice.get("finish_reason") or "stop",
    )


class LeanOpenAIBackend(OpenAICompatBackend):
    """The same requests as :class:`OpenAICompatBackend`, with orjson bodies, sent by our own
    keep-alive HTTP/1.1 client (:mod:`agorabench.models.http11`). The client is made on first
    use, inside the running event loop."""

    def _connect(self, api_key: str, timeout: float) -> None:
        self.url = (self.client_url or "https://api.openai.com/v1").rstrip("/") + "/chat/completions"
        self.headers = {"Authorization": self.basic_auth or f"Bearer {api_key}", "Content-Type": "application/json"}
        self.timeout = timeout
        self._client = None

    async def _post(self, body: bytes) -> tuple[int, Mapping[str, str], bytes]:
        """(status, headers, body bytes); BackendError for a failure of the connection."""
        from .http11 import BodyTooLarge, ConnectError, ConnectionLost, HTTP11Client, ProtocolError

        if self._client is None:
            self._client = HTTP11Client(self.url, self.headers, self.timeout)
        try:
            return await self._client.post(body)
        except asyncio.TimeoutError:
            raise BackendError(f"timeout after {self.timeout:g}s", retryable=True, timed_out=True) from None
        except ConnectError as exc:
            raise BackendError(_connection_problem(exc, self.base_url), retryable=True) from None
        except BodyTooLarge as exc:
            raise too_large(exc) from None
        except (ConnectionLost, ProtocolError) as exc:
            raise BackendError(f"the server's answer was cut off or malformed ({exc})", retryable=True) from None

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        started = time.perf_counter()
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": settings.temperature, "max_tokens": settings.max_tokens, "seed": settings.seed}
        extra = self._constraint(settings)
        body.update(extra.pop("extra_body", {}))
        body.update(extra)
        status, headers, raw = await self._post(_dumps(body))
        try:
            data = _loads(raw)
        except ValueError:
            try:  # orjson refuses lone surrogates (a cut-off emoji); json reads them, and the
                data = json.loads(raw)  # reply is sanitised at the model boundary
            except ValueError:
                data = None
        if status != 200:
            raise status_error(status, _error_message(data, raw), headers)
        if not isinstance(data, dict):
            raise BackendError("the server's answer was cut off or malformed (not a JSON object; an HTML page?)", retryable=True)
        return completion_from_json(data, time.perf_counter() - started)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class AiohttpOpenAIBackend(LeanOpenAIBackend):
    """:class:`LeanOpenAIBackend` over one aiohttp session instead of our HTTP/1.1 client
    (``transport = "aiohttp"``): the default before that client, kept for comparison and for
    servers our client would not understand."""

    def _connect(self, api_key: str, timeout: float) -> None:
        super()._connect(api_key, timeout)
        self._session = None

    async def _post(self, body: bytes) -> tuple[int, Mapping[str, str], bytes]:
        import aiohttp

        if self._session is None:
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout), headers=self.headers)
        from .http11 import MAX_BODY

        try:
            async with self._session.post(self.url, data=body) as resp:
                # read in pieces, decoded as they come, and stop past the bound: neither an
                # endless body nor a gzip bomb is ever held whole
                chunks, size = [], 0
                async for chunk in resp.content.iter_chunked(64 * 1024):
                    size += len(chunk)
                    if size > MAX_BODY:
                        raise too_large(f"the server sent more than {MAX_BODY} bytes of body")
                    chunks.append(chunk)
                return resp.status, resp.headers, b"".join(chunks)
        except asyncio.TimeoutError:
            raise BackendError(f"timeout after {self.timeout:g}s", retryable=True, timed_out=True) from None
        except aiohttp.ClientConnectorError as exc:
            raise BackendError(_connection_problem(exc, self.base_url), retryable=True) from None
        except aiohttp.ClientError as exc:
            raise BackendError(f"{type(exc).__name__}: {exc}", retryable=True) from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def too_large(why: object) -> BackendError:
    """The call's answer exceeded the body bound: not retried (the server would send the same
    again); the game is stored as failed and played again by the next run."""
    return BackendError(f"answer too large: {why}; a reply is cut at 20,000 characters anyway, so this is not retried", retryable=False)


def _split_credentials(url: str | None) -> tuple[str | None, str | None]:
    """The URL without ``user:password@`` and the matching basic-auth header (registered as
    secrets so they are redacted everywhere)."""
    if not url:
        return url, None
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.netloc.rsplit("@", 1)[1]
    token = base64.b64encode(f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()).decode()
    register_secret(parts.password)
    register_secret(token)
    return urlunsplit(parts._replace(netloc=host)), f"Basic {token}"


def _connection_problem(exc: BaseException, base_url: str | None) -> str:
    """Name a refused connection as such (the SDK reports every connection failure alike)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower():
            return f"connection refused at {base_url or 'the default URL'} (is the server running?)"
        cause = cause.__cause__ or cause.__context__
    return f"cannot connect to {base_url or 'the default URL'}: {exc}"


def _error_message(data: Any, raw: bytes) -> str:
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        return str(data["error"].get("message", ""))
    return raw[:200].decode("utf-8", "replace")


def status_error(status: int, message: str, headers: Mapping[str, str] | None) -> BackendError:
    """An HTTP error status as a BackendError: 429 is a rate limit (retryable, honouring
    Retry-After), 5xx, 408 and 409 are transient, 401/403 are fatal for the model (a rejected
    key), the rest (bad request) are not retried."""
    if status == 429:
        return BackendError(f"rate limited: {message}", retryable=True, retry_after=_retry_after_headers(headers), rate_limited=True)
    if status in (401, 403):  # every later call would be refused too
        return BackendError(f"unauthorised (HTTP {status}): the server rejected the API key", retryable=False, fatal=True)
    retryable = status >= 500 or status in (408, 409)
    return BackendError(f"HTTP {status}: {message}", retryable=retryable, retry_after=_retry_after_headers(headers))


def _retry_after(exc: Any) -> float | None:
    return _retry_after_headers(getattr(getattr(exc, "response", None), "headers", None))


#: Longest Retry-After taken at its word (seconds); a longer, negative or non-finite one is
#: ignored and the call backs off as if none had been given.
MAX_RETRY_AFTER = 3600.0


def _retry_after_headers(headers: Mapping[str, str] | None) -> float | None:
    """The server's requested wait in seconds (``retry-after-ms`` or ``retry-after``), if it is
    a finite number from 0 to :data:`MAX_RETRY_AFTER`; None otherwise (``nan``, ``-1``,
    ``1e308``, an HTTP date), so that the caller's own backoff decides."""
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    for name in ("retry-after-ms", "retry-after"):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            continue
        seconds = seconds / 1000 if name.endswith("-ms") else seconds
        if math.isfinite(seconds) and 0 <= seconds <= MAX_RETRY_AFTER:
            return seconds
    return None
