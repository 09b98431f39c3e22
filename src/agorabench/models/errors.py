"""Failures of hosted models as :class:`~agorabench.models.base.BackendError`: which are worth
another attempt (rate limits, timeouts, lost connections, 5xx), which are not (a bad request, an
answer too large), which end the model's games (a rejected key), and how long the server asked
us to wait. Shared by every transport and SDK, so that the same failure reads the same whichever
way the request went.

It also holds :class:`SpecError`, a spec that names no player: raised where a spec is read
(:mod:`agorabench.models.spec`) and where a backend is built for one
(:func:`agorabench.models.providers.open_backend`), which both import it from here."""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

from .base import BackendError

class SpecError(ValueError):
    """A spec that names no player; the message is one line and says what would do."""


#: Longest Retry-After taken at its word (seconds); a longer, negative or non-finite one is
#: ignored and the call backs off as if none had been given.
MAX_RETRY_AFTER = 3600.0


def retry_after_headers(headers: Mapping[str, str] | None) -> float | None:
    """The wait a server asked for in ``retry-after-ms`` or ``retry-after``, in seconds, when it
    is a finite number from 0 to :data:`MAX_RETRY_AFTER`; else None (``nan``, ``-1``, ``1e308``
    and HTTP dates are all left to the caller's own backoff)."""
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    for name in ("retry-after-ms", "retry-after"):
        value = lowered.get(name)
        if value is None:
            continue
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            continue
        if name.endswith("-ms"):
            seconds /= 1000
        if math.isfinite(seconds) and 0 <= seconds <= MAX_RETRY_AFTER:
            return seconds
    return None


def retry_after(exc: Any) -> float | None:
    """The Retry-After of an SDK exception's response, if any."""
    return retry_after_headers(getattr(getattr(exc, "response", None), "headers", None))


def status_error(status: int, message: str, headers: Mapping[str, str] | None, code: str | None = None) -> BackendError:
    """An HTTP error status as a BackendError. 429 is a rate limit (retried after the server's
    Retry-After), unless its message or error ``code`` says the service tier has no capacity
    (:func:`tier_unavailable`: retried, not a rate limit); 5xx, 408 and 409 are transient; 401
    and 403 mean the key was refused and 404 that the server has no such endpoint or model,
    which no later call would change (fatal: the model's games stop at once); any other status
    (a bad request) is not retried."""
    if status == 429 and tier_unavailable(message, code):
        return BackendError(f"the service tier has no capacity for the call (HTTP 429: {message})", retryable=True, retry_after=retry_after_headers(headers), unavailable=True)
    if status == 429:
        return BackendError(f"rate limited: {message}", retryable=True, retry_after=retry_after_headers(headers), rate_limited=True)
    if status in (401, 403):
        return BackendError(f"unauthorised (HTTP {status}): the server rejected the API key", retryable=False, fatal=True)
    if status == 404 and _RESPONSES_ONLY.search(message):
        return BackendError(f"the model is served only by the Responses API (HTTP 404: {message}); set transport = \"responses\" in its model entry", retryable=False, fatal=True)
    if status == 404:
        return BackendError(f"not found (HTTP 404): the server has no such endpoint or model; check base_url (it usually ends in /v1) and the model name: {message}", retryable=False, fatal=True)
    if status in (400, 422) and _REFUSED_SETTING.search(message):
        return BackendError(f"the server refuses this model's settings, so every call would fail (HTTP {status}): {message}", retryable=False, fatal=True)
    return BackendError(f"HTTP {status}: {message}", retryable=status >= 500 or status in (408, 409), retry_after=retry_after_headers(headers))


#: A 429 of a tier without capacity (OpenAI's flex: "Resource Unavailable", code
#: ``resource_unavailable``), not of the account's limits.
_UNAVAILABLE = re.compile(r"resource[\s_-]*unavailable", re.I)


def tier_unavailable(message: str, code: str | None = None) -> bool:
    """Whether a 429's message or error code says the service tier lacks capacity."""
    return bool(_UNAVAILABLE.search(message or "") or _UNAVAILABLE.search(code or ""))


def error_code(data: Any) -> str | None:
    """The ``error.code`` of a JSON error body (OpenAI's form; Google's list of errors too), if any."""
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


#: A 404 that says the model exists, behind another API (OpenAI's Responses-only models).
_RESPONSES_ONLY = re.compile(r"v1/responses|responses api", re.I)
#: A 400 that refuses a request field or value rather than this one request's content: every
#: later call of the model would be refused alike (the model stops once, with this message).
_REFUSED_SETTING = re.compile(
    r"unsupported (?:parameter|value)|not supported with this model|is deprecated for this model|"
    r"may only be set to 1 when thinking|budget_tokens|reasoning_effort|thinking\.|output_config|"
    r"does not support (?:the )?(?:parameter|temperature|seed|reasoning)|unrecognized request argument|extra inputs are not permitted|"
    r"invalid reasoning value",  # Ollama: invalid reasoning value: 'minimal' (must be "high", ...)
    re.I,
)


def too_large(why: object) -> BackendError:
    """An answer over the body bound. Not retried: the server would send it again, and a reply is
    cut at 20,000 characters in any case. The game is stored as failed and the next run plays it."""
    return BackendError(f"answer too large: {why}; a reply is cut at 20,000 characters anyway, so this is not retried", retryable=False)


def connection_problem(exc: BaseException, base_url: str | None) -> str:
    """What went wrong connecting, naming a refused connection as such (SDKs report every
    connection failure alike); the chain of causes is searched for the refusal."""
    where = base_url or "the default URL"
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower():
            return f"connection refused at {where} (is the server running?)"
        cause = cause.__cause__ or cause.__context__
    return f"cannot connect to {where}: {exc}"


def error_message(data: Any, raw: bytes) -> str:
    """The message of an error body: ``error.message`` of a JSON error, else the body's start."""
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        return str(data["error"].get("message", ""))
    return raw[:200].decode("utf-8", "replace")


def sdk_error(exc: Exception, sdk: Any, base_url: str | None = None) -> BackendError:
    """An exception of the ``openai`` or ``anthropic`` SDK (``sdk``: the module; both have the
    same error classes) as a BackendError. Rate limits, timeouts and lost connections are
    retried, a refused connection is called so (the SDK reports it as a timeout), a malformed or
    cut-off body is transient, and statuses read as in :func:`status_error`."""
    from .http11 import BodyTooLarge

    if isinstance(exc, BodyTooLarge) or isinstance(exc.__cause__, BodyTooLarge):
        return too_large(exc)
    if isinstance(exc, sdk.RateLimitError) and tier_unavailable(str(exc), getattr(exc, "code", None)):
        return status_error(429, getattr(exc, "message", str(exc)), getattr(getattr(exc, "response", None), "headers", None), getattr(exc, "code", None))
    if isinstance(exc, sdk.RateLimitError):
        return BackendError(f"rate limited: {exc}", retryable=True, retry_after=retry_after(exc), rate_limited=True)
    if isinstance(exc, sdk.APITimeoutError):
        problem = connection_problem(exc, base_url)
        refused = "refused" in problem
        return BackendError(problem if refused else f"no answer within the timeout ({exc})", retryable=True, timed_out=not refused)
    if isinstance(exc, sdk.APIConnectionError):
        return BackendError(connection_problem(exc, base_url), retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        return status_error(exc.status_code, exc.message, getattr(exc.response, "headers", None))
    if isinstance(exc, (ValueError, getattr(sdk, "APIResponseValidationError", ValueError))):
        return BackendError(f"the server's answer was cut off or malformed ({type(exc).__name__}: {str(exc)[:120]})", retryable=True)
    return BackendError(f"{type(exc).__name__}: {exc}", retryable=True)
