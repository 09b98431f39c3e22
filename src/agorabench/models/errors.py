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
from dataclasses import dataclass
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


def status_error(
    status: int, message: str, headers: Mapping[str, str] | None, code: str | None = None, param: str | None = None, kind: str | None = None
) -> "StatusError":
    """An HTTP error status as a BackendError (a :class:`StatusError`, which keeps the error's
    fields). 429 is a rate limit (retried after the server's Retry-After), unless its message or
    error ``code`` says the service tier has no capacity (:func:`tier_unavailable`: retried, not a
    rate limit); 5xx, 408 and 409 are transient; 401 and 403 mean the key was refused and 404 that
    the server has no such endpoint or model, which no later call would change (fatal: the
    model's games stop at once); a 400 or 422 that refuses a setting of the request
    (:func:`refused_setting`: by the error's ``code`` and ``param``, or its words) is fatal too,
    in one line naming the setting and its fix; any other status (a bad request) is not retried."""
    fields = dict(status=status, detail=message, code=code, param=param, kind=kind)
    if status == 429 and tier_unavailable(message, code):
        return StatusError(f"the service tier has no capacity for the call (HTTP 429: {message})", retryable=True, retry_after=retry_after_headers(headers), unavailable=True, **fields)
    if status == 429:
        return StatusError(f"rate limited: {message}", retryable=True, retry_after=retry_after_headers(headers), rate_limited=True, **fields)
    if status in (401, 403):
        return StatusError(f"unauthorised (HTTP {status}): the server rejected the API key", retryable=False, fatal=True, **fields)
    if status == 404 and _RESPONSES_ONLY.search(message):
        return StatusError(f"the model is served only by the Responses API (HTTP 404: {message}); set transport = \"responses\" in its model entry", retryable=False, fatal=True, **fields)
    if status == 404:
        return StatusError(f"not found (HTTP 404): the server has no such endpoint or model; check base_url (it usually ends in /v1) and the model name: {message}", retryable=False, fatal=True, **fields)
    refused = refused_setting(status, message, code, param)
    if refused is not None:
        setting, fix = refused
        error = StatusError(refusal_line(setting, fix, status, message, code), retryable=False, fatal=True, **fields)
        error.setting = setting
        return error
    return StatusError(f"HTTP {status}: {message}", retryable=status >= 500 or status in (408, 409), retry_after=retry_after_headers(headers), **fields)


class StatusError(BackendError):
    """A BackendError for an HTTP error status, with the fields of the provider's error body:
    ``status``, ``detail`` (its message), ``code``, ``param`` and ``kind`` (OpenAI's and
    Anthropic's ``type``, Google's ``status``); ``setting``: the request setting the server
    refuses (:func:`refused_setting`), None when it refuses none."""

    def __init__(self, message: str, *, status: int, detail: str = "", code: str | None = None, param: str | None = None, kind: str | None = None, **flags: Any) -> None:
        super().__init__(message, **flags)
        self.status = status
        self.detail = detail
        self.code = code
        self.param = param
        self.kind = kind
        self.setting: str | None = None

    @property
    def fingerprint(self) -> tuple[Any, ...]:
        """What two such errors share when they are "the same error": status, code, param and
        the message with numbers and request ids masked (:func:`message_shape`)."""
        return (self.status, self.code, self.param, message_shape(self.detail))

    @property
    def bad_request(self) -> bool:
        """A 400 or 422 that may refuse the request's settings rather than its content: not one
        that names the context length, a content filter or a message (:func:`content_bound`)."""
        return self.status in (400, 422) and not content_bound(self.detail, self.code, self.param)


@dataclass(frozen=True)
class ErrorFields:
    """The fields of a provider's error body: ``message``, ``code``, ``param`` and ``kind``
    (OpenAI's and Anthropic's ``type``, Google's ``status``); None where the body has none."""

    message: str
    code: str | None = None
    param: str | None = None
    kind: str | None = None


def _text(value: Any) -> str | None:
    """A field's value when it is non-empty text, else None (Google's numeric ``code`` repeats
    the HTTP status and says nothing more)."""
    return value if isinstance(value, str) and value.strip() else None


def error_fields(data: Any, raw: bytes = b"") -> ErrorFields:
    """The fields of an error body, whatever the provider's shape: OpenAI's
    ``{"error": {"message", "type", "param", "code"}}``, Anthropic's ``{"type": "error",
    "error": {"type", "message"}}``, Google's ``[{"error": {"code", "message", "status"}}]`` (a
    list; a field violation's ``field`` taken as the param) or its object form, vLLM's flat
    ``{"object": "error", "message", "type", "param", "code"}``; a body that is none of these:
    its first 200 characters as the message."""
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            param = _text(error.get("param")) or _violated_field(error.get("details"))
            return ErrorFields(str(error.get("message") or ""), _text(error.get("code")), param, _text(error.get("type")) or _text(error.get("status")))
        if _text(error):
            return ErrorFields(str(error), _text(data.get("code")), _text(data.get("param")), _text(data.get("type")))
        if _text(data.get("message")):
            return ErrorFields(str(data["message"]), _text(data.get("code")), _text(data.get("param")), _text(data.get("type")))
    return ErrorFields(raw[:200].decode("utf-8", "replace"))


def _violated_field(details: Any) -> str | None:
    """The first ``fieldViolations[].field`` of Google's error details, if any."""
    for detail in details if isinstance(details, list) else []:
        for violation in (detail.get("fieldViolations") if isinstance(detail, dict) else None) or []:
            if isinstance(violation, dict) and _text(violation.get("field")):
                return violation["field"]
    return None


#: Error codes that refuse a field or a value of the request (OpenAI's; ``invalid_value`` only
#: with a param that is a setting, not a message).
_REFUSED_CODES = frozenset({"unsupported_value", "unsupported_parameter", "unknown_parameter"})
#: Errors of one request's content (its length, a filter, a message), never a refused setting
#: however often they repeat.
_CONTENT_CODES = frozenset({"context_length_exceeded", "string_above_max_length", "content_policy_violation", "content_filter", "invalid_prompt", "invalid_image"})
_CONTENT_WORDS = re.compile(
    r"context[_ ](?:length|window)|maximum context|too many (?:input )?tokens|prompt is too long|input is too long|reduce the length|"
    r"input token count|maximum number of tokens allowed|"  # Gemini: The input token count (N) exceeds the maximum number of tokens allowed (M).
    r"content[_ ](?:policy|filter|management)|flagged|safety system|invalid[_ ]prompt",
    re.I,
)
#: Params that name the request's content rather than a setting.
_CONTENT_PARAM = re.compile(r"^(?:messages|input|contents|system|instructions|prompt)\b", re.I)


def content_bound(message: str, code: str | None = None, param: str | None = None) -> bool:
    """Whether an error is about this request's content (its length, a content filter, one of
    its messages), which another request may pass: never a refused setting."""
    return code in _CONTENT_CODES or bool(_CONTENT_WORDS.search(message or "")) or bool(param and _CONTENT_PARAM.match(param))


def refused_setting(status: int, message: str, code: str | None = None, param: str | None = None) -> tuple[str, str] | None:
    """(the setting, its fix) when a 400 or 422 refuses a field or value of the request rather
    than this request's content, so that every later call of the model would be refused alike;
    else None. Read from the error's fields (``code`` ``unsupported_value``,
    ``unsupported_parameter`` or ``unknown_parameter``; ``invalid_value`` with a ``param`` that
    is a setting) or, failing those, from the words of providers whose errors carry no such code
    (:data:`_REFUSED_SETTING`). Never a 429 or 5xx, never the context length or a content filter."""
    if status not in (400, 422) or content_bound(message, code, param):
        return None
    if code in _REFUSED_CODES or (code == "invalid_value" and param) or _REFUSED_SETTING.search(message or ""):
        return setting_fix(message, param)
    return None


#: A setting named in an error (its param, else its message) -> (the setting, its fix), first match wins.
_FIXES: tuple[tuple[re.Pattern[str], str, str], ...] = tuple(
    (re.compile(pattern, re.I), setting, fix)
    for pattern, setting, fix in (
        (r"reasoning[._ ]summar", "reasoning.summary", 'set reasoning_summary = "none"'),
        (r"thinking[_ ]level", "thinking level", 'use reasoning_effort "low" or "high"'),
        (r"reasoning[._]effort|invalid reasoning value|output_config|\beffort\b", "reasoning_effort", "use an effort the model takes (the server's message lists them), or leave reasoning_effort unset"),
        (r"temperature|top_p", "temperature", 'set temperature = "default" (no temperature or seed is sent)'),
        (r"\bseed\b", "seed", 'set temperature = "default" (no temperature or seed is sent)'),
        (r"max_completion_tokens|max_tokens|max_output_tokens", "max_tokens", "set reasoning = true or false to match the model (which picks max_tokens or max_completion_tokens)"),
        (r"adaptive", "thinking", 'use thinking = "adaptive" with a reasoning_effort'),
        (r"budget_tokens|thinking", "thinking", "change thinking or reasoning_budget"),
        (r"service_tier", "service_tier", "use a tier the provider offers, or leave service_tier unset"),
    )
)
#: The field an error names as unknown (Google, OpenAI chat and Responses, pydantic servers).
_UNKNOWN_FIELD = re.compile(r"unknown name \"([^\"]+)\"|unrecognized request argument supplied: ([\w.]+)|unknown parameter: '([^']+)'|extra inputs are not permitted[^']*'([^']+)'", re.I)
#: Google's "Thinking level MEDIUM is not supported": the level it names.
_THINKING_LEVEL = re.compile(r"thinking level (\w+)", re.I)


def setting_fix(message: str, param: str | None = None) -> tuple[str, str]:
    """(the setting, its fix) of a refusal: by the error's ``param`` when it names one of ours,
    else by its words (a field it calls unknown is to be removed from ``extra_body``)."""
    unknown = _UNKNOWN_FIELD.search(message or "")
    named = param or (next(g for g in unknown.groups() if g) if unknown else None)
    for where in (named, message):
        for pattern, setting, fix in _FIXES:
            if where and pattern.search(where):
                level = _THINKING_LEVEL.search(message or "") if setting == "thinking level" else None
                shown = f"thinking level {level.group(1).upper()}" if level else (param or setting)
                return shown, fix
    if named:
        return named, f"remove {named!r} from extra_body (or the setting that sends it)"
    return "a setting of the request", "change or remove the setting the message names in the model entry"


def refusal_line(setting: str, fix: str, status: int, message: str, code: str | None = None) -> str:
    """One line: the setting a server refuses, its words and what to change."""
    said = " ".join(str(message).split())
    said = said if len(said) <= 300 else said[:297] + "..."
    return f"the server refuses {setting}, so every call would fail (HTTP {status}{f', {code}' if code else ''}: {said}); {fix}"


#: Numbers, request ids and long hex runs, masked in an error's message (:func:`message_shape`).
_VARYING = re.compile(r"\b(?:req|request|resp|msg|chatcmpl|call)[-_][\w-]+|\b[0-9a-f]{12,}\b|\d+(?:\.\d+)?", re.I)


def message_shape(message: str) -> str:
    """An error's message with what varies from call to call masked (numbers, request ids),
    spaces collapsed, lower case, at most 300 characters: equal for "the same error"."""
    return " ".join(_VARYING.sub("#", message or "").lower().split())[:300]


#: A 429 of a tier without capacity (OpenAI's flex: "Resource Unavailable", code
#: ``resource_unavailable``), not of the account's limits.
_UNAVAILABLE = re.compile(r"resource[\s_-]*unavailable", re.I)


def tier_unavailable(message: str, code: str | None = None) -> bool:
    """Whether a 429's message or error code says the service tier lacks capacity."""
    return bool(_UNAVAILABLE.search(message or "") or _UNAVAILABLE.search(code or ""))


def error_code(data: Any) -> str | None:
    """The ``error.code`` of a JSON error body (OpenAI's form; Google's list of errors too), if any."""
    return error_fields(data).code


#: A 404 that says the model exists, behind another API (OpenAI's Responses-only models).
_RESPONSES_ONLY = re.compile(r"v1/responses|responses api", re.I)
#: The words of a 400 that refuses a request field or value rather than this one request's
#: content, for servers whose errors carry no code that says so (:func:`refused_setting`): every
#: later call of the model would be refused alike (the model stops once, in one line).
_REFUSED_SETTING = re.compile(
    r"unsupported (?:parameter|value)|not supported with this model|is deprecated for this model|"
    r"may only be set to 1 when thinking|budget_tokens|reasoning_effort|thinking\.|output_config|"
    r"does not support (?:the )?(?:parameter|temperature|seed|reasoning)|unrecognized request argument|extra inputs are not permitted|"
    r"invalid reasoning value|"  # Ollama: invalid reasoning value: 'minimal' (must be "high", ...)
    r"not supported for this model|"  # Gemini 3 Pro: Thinking level MEDIUM is not supported for this model
    r"must be verified to generate reasoning summar|"  # the Responses API, for an unverified organisation
    r"unknown name \"[^\"]+\": cannot find field|unknown parameter",  # Google's and the Responses API's unknown field
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
    """The message of an error body (:func:`error_fields`), else the body's start."""
    return error_fields(data, raw).message


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
        fields = error_fields(getattr(exc, "body", None))  # the SDKs keep the error body (OpenAI: its "error" object)
        code, param, kind = (_text(getattr(exc, name, None)) for name in ("code", "param", "type"))
        return status_error(exc.status_code, exc.message, getattr(exc.response, "headers", None), code or fields.code, param or fields.param, kind or fields.kind)
    if isinstance(exc, (ValueError, getattr(sdk, "APIResponseValidationError", ValueError))):
        return BackendError(f"the server's answer was cut off or malformed ({type(exc).__name__}: {str(exc)[:120]})", retryable=True)
    return BackendError(f"{type(exc).__name__}: {exc}", retryable=True)
