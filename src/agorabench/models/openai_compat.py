"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, llama.cpp server, Ollama,
OpenRouter, DeepSeek, ...) through the official ``openai`` SDK.

The SDK's own retries are off: retry decisions belong to :mod:`agorabench.models.retry`, which
tells rate limits from transient faults and honours Retry-After."""

from __future__ import annotations

import base64
import os
import time
from urllib.parse import unquote, urlsplit, urlunsplit

import openai

from ..redact import redact, register_secret
from .base import BackendError, Completion, GenerationSettings


def _http_client():
    """The SDK's aiohttp transport when installed: it sustains far more concurrent requests
    than the default httpx transport."""
    try:
        from openai import DefaultAioHttpClient

        return DefaultAioHttpClient()
    except Exception:  # aiohttp extra missing
        return None


class OpenAICompatBackend:
    serialized = False

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY", timeout: float = 120.0, dialect: str = "openai") -> None:
        self.model = model
        self.dialect = dialect
        self.base_url = base_url
        self.identity = f"openai:{redact(base_url or 'default')}:{model}"
        api_key = os.environ.get(api_key_env)
        if not api_key:
            if base_url is None:
                raise BackendError(f"model {model!r} needs an API key in the environment variable {api_key_env}", retryable=False)
            api_key = "not-needed"  # local servers accept any key
        register_secret(api_key)
        self.api_key = api_key
        client_url, basic = _split_credentials(base_url)
        kwargs = {"base_url": client_url, "api_key": api_key, "max_retries": 0, "timeout": timeout}
        if basic:  # user:password@ in the URL: HTTP basic auth instead of the bearer key
            kwargs["default_headers"] = {"Authorization": basic}
        client = _http_client()
        if client is not None:
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
        except openai.RateLimitError as exc:
            raise BackendError(f"rate limited: {exc}", retryable=True, retry_after=_retry_after(exc), rate_limited=True) from None
        except openai.APITimeoutError as exc:  # the SDK reports a refused connection as one
            problem = _connection_problem(exc, self.base_url)
            raise BackendError(problem if "refused" in problem else f"no answer within the timeout ({exc})", retryable=True) from None
        except openai.APIConnectionError as exc:
            raise BackendError(_connection_problem(exc, self.base_url), retryable=True) from None
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403):  # every later call would be refused too
                raise BackendError(f"unauthorised (HTTP {exc.status_code}): the server rejected the API key", retryable=False, fatal=True) from None
            retryable = exc.status_code >= 500 or exc.status_code in (408, 409)
            raise BackendError(f"HTTP {exc.status_code}: {exc.message}", retryable=retryable, retry_after=_retry_after(exc)) from None
        except (ValueError, openai.APIResponseValidationError) as exc:
            raise BackendError(f"the server's answer was cut off or malformed ({type(exc).__name__}: {str(exc)[:120]})", retryable=True) from None
        latency = time.perf_counter() - started
        if not hasattr(resp, "choices"):  # the SDK hands back the raw body when it is not JSON
            raise BackendError("the server answered with a page that is not a chat completion (HTML?)", retryable=True)
        if not resp.choices:
            raise BackendError("the server returned no choices", retryable=True)
        choice = resp.choices[0]
        usage = resp.usage
        return Completion(
            text=choice.message.content or "",
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
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


def _retry_after(exc: openai.APIStatusError) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for name in ("retry-after-ms", "retry-after"):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value)
        except ValueError:
            continue
        return seconds / 1000 if name.endswith("-ms") else seconds
    return None
