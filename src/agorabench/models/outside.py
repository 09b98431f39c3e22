"""Outside agents: a researcher's own program, anywhere on the network, asked for each decision
over HTTP (a seat's spec ``http/URL``; the protocol is in ``docs/outside-agents.md``).

This module is the wire side only: one JSON ``POST`` per decision to the agent's URL and its
answer read back as a JSON object. What the request holds and what the answer means (an action
of the game) is the play side's (:class:`agorabench.core.agents.OutsideAgent`). The rules:

- **time limit**: each request has ``timeout`` seconds for its whole answer; past it the move
  has timed out (:attr:`OutsideAnswer.timed_out`) and is not sent again, since the agent was
  given its time;
- **retries**: a connection that cannot be opened or is lost, an answer that is not HTTP, and
  HTTP 408, 409, 429 and 5xx are tried again, up to ``max_attempts`` requests in all, after the
  house backoff (:class:`agorabench.models.model.RetryPolicy`, a server's ``Retry-After``
  honoured); when they are spent the call raises :class:`BackendError` (the game fails and is
  played again by the next run, as with a model whose server is down);
- **refusals**: HTTP 401 and 403 (the key was refused) and 404 (no agent at that URL) would
  answer every later request alike, so they stop the agent (:attr:`OutsideClient.dead`): its
  later calls fail at once;
- **configuration errors**: any other 4xx but 400 and 422 (405 Method Not Allowed, 415, 410,
  418, ...) says that the agent is not spoken to as it expects, and would say so to every
  request: it stops the agent as a refusal does, in one line;
- **unusable answers**: HTTP 400 and 422 (the agent refuses this one request's content), any
  other status, a body that is not JSON or not a JSON object, or one
  over the body limit is an answer that cannot be used (:attr:`OutsideAnswer.problem`): the
  turn is invalid with that reason and the game re-asks, as for a model's unreadable reply;
  NUL characters in the answer's strings (``\u0000`` in its JSON) are dropped;
- **key**: the key in the environment variable ``api_key_env`` (only when the entry names one)
  goes in ``Authorization: Bearer KEY`` and, as GLEE's HTTP player sends it, ``X-API-Key``; it
  becomes a registered secret, so it is redacted from everything stored or printed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import time
from dataclasses import dataclass
from typing import Any

from ..redact import redact, register_secret
from ..text import typed
from .base import MAX_REPLY_CHARS, BackendError, sanitize_text
from .credentials import split_credentials
from .errors import retry_after_headers
from .http11 import BodyTooLarge, ConnectError, ConnectionLost, HTTP11Client, ProtocolError
from .model import RetryPolicy

#: The protocol's name and version, sent with every request (``protocol``).
PROTOCOL = "agorabench.outside/1"

#: Statuses worth another request (a busy or restarting agent).
RETRIED_STATUSES = frozenset({408, 409, 429})

#: The 4xx statuses that refuse one request's content (the turn is invalid and asked again);
#: any other 4xx not retried is a configuration error that stops the agent.
REFUSED_REQUEST_STATUSES = frozenset({400, 422})


@dataclass(frozen=True)
class OutsideAnswer:
    """What an outside agent answered to one request.

    ``data``: the answer's JSON object (None when there is none to use); ``body``: the body as
    text, made storable and cut at the reply limit (kept as the turn's raw reply when the answer
    cannot be used); ``latency``: seconds from sending to the whole answer (the last attempt);
    ``timed_out``: no whole answer within the time limit; ``problem``: why the answer cannot be
    used (a status, not JSON, not an object), one line."""

    data: dict[str, Any] | None
    body: str = ""
    latency: float = 0.0
    timed_out: bool = False
    problem: str | None = None


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: tables with text keys, lists (for tuples and sets too),
    text, finite numbers, booleans and null. A pydantic model or a dataclass becomes its fields,
    a number that is not finite becomes null, anything else its text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return jsonable(dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    return str(value)


def encode(payload: dict[str, Any]) -> bytes:
    """The request body: ``payload`` as UTF-8 JSON (made plain data first, see :func:`jsonable`)."""
    return json.dumps(jsonable(payload), ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class OutsideClient:
    """Asks one outside agent (its URL) for decisions: at most ``max_concurrency`` requests in
    flight, ``timeout`` seconds per request, up to ``max_attempts`` requests per decision for
    transient failures (module docstring). ``api_key_env``: the environment variable holding the
    agent's key (None: no key is sent); BackendError (not retryable) when it is named but unset."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 120.0,
        api_key_env: str | None = None,
        max_attempts: int = 5,
        max_concurrency: int = 16,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.url, basic = split_credentials(url)
        headers = {"Content-Type": "application/json"}
        if api_key_env:
            key = os.environ.get(api_key_env)
            if not key:
                raise BackendError(f"outside agent {redact(url)}: api_key_env = {api_key_env!r}, but {api_key_env} is not set in the environment", retryable=False, fatal=True)
            register_secret(key)
            headers["Authorization"] = f"Bearer {key}"
            headers["X-API-Key"] = key
        elif basic is not None:
            headers["Authorization"] = basic
        self.timeout = timeout
        self.max_attempts = max(1, max_attempts)
        self.retry = retry or RetryPolicy(max_attempts=self.max_attempts)
        self._http = HTTP11Client(self.url or url, headers, timeout, user_agent="agorabench-outside")
        self._slots = asyncio.Semaphore(max(1, max_concurrency))
        #: Why every later call fails at once (a refused key, no agent at the URL); None: alive.
        self.dead: str | None = None
        #: Requests sent, answers that timed out, and requests sent again after a failure.
        self.calls = 0
        self.timeouts = 0
        self.retries = 0

    def __repr__(self) -> str:
        return f"OutsideClient({redact(self.url or '')!r})"

    async def ask(self, payload: dict[str, Any]) -> OutsideAnswer:
        """Send ``payload`` (one decision's request) and read the agent's answer; BackendError
        when the agent cannot be reached within the attempts, or is stopped (:attr:`dead`)."""
        body = encode(payload)
        where = f"outside agent {redact(self.url or '')}"
        async with self._slots:
            attempt = 0
            while True:
                attempt += 1
                if self.dead is not None:
                    raise BackendError(self.dead, retryable=False, fatal=True)
                started = time.perf_counter()
                self.calls += 1
                try:
                    status, headers, raw = await self._http.post(body, timeout=self.timeout)
                except asyncio.TimeoutError:
                    self.timeouts += 1
                    return OutsideAnswer(None, latency=time.perf_counter() - started, timed_out=True)
                except BodyTooLarge as exc:
                    return OutsideAnswer(None, latency=time.perf_counter() - started, problem=f"the answer is too large ({exc})")
                except ConnectError as exc:
                    error = BackendError(f"{where}: connection refused (is the agent running?)" if exc.refused else f"{where}: cannot connect ({exc})")
                except (ConnectionLost, ProtocolError) as exc:
                    error = BackendError(f"{where}: the connection failed before the whole answer ({type(exc).__name__}: {_one_line(str(exc))})")
                else:
                    latency = time.perf_counter() - started
                    text, cut = sanitize_text(raw.decode("utf-8", "replace"))
                    if 200 <= status < 300:
                        if cut:
                            return OutsideAnswer(None, text, latency, problem=f"the answer is longer than {MAX_REPLY_CHARS:,} characters")
                        return self._read(text, latency)
                    said = _one_line(text) or "(empty body)"
                    if status in (401, 403):
                        self.dead = f"{where}: unauthorised (HTTP {status}): the agent refused the key; its remaining games stop"
                        raise BackendError(self.dead, retryable=False, fatal=True)
                    if status == 404:
                        self.dead = f"{where}: not found (HTTP 404): nothing answers at that URL; its remaining games stop"
                        raise BackendError(self.dead, retryable=False, fatal=True)
                    if 400 <= status < 500 and status not in RETRIED_STATUSES and status not in REFUSED_REQUEST_STATUSES:
                        self.dead = f"{where}: HTTP {status} ({said}): the agent does not take requests as sent (check its URL and that it speaks {PROTOCOL}, docs/outside-agents.md); its remaining games stop"
                        raise BackendError(self.dead, retryable=False, fatal=True)
                    if status >= 500 or status in RETRIED_STATUSES:
                        error = BackendError(f"{where}: HTTP {status}: {said}", retry_after=retry_after_headers(headers), rate_limited=status == 429)
                    else:  # the agent answered, with a refusal of this one request: an unusable answer
                        return OutsideAnswer(None, text, latency, problem=f"the agent answered HTTP {status}: {said}")
                if attempt >= self.max_attempts:
                    raise BackendError(f"{error} (after {attempt} attempts)", retryable=False)
                self.retries += 1
                await asyncio.sleep(self.retry.delay(attempt, error))

    @staticmethod
    def _read(text: str, latency: float) -> OutsideAnswer:
        """A 2xx answer: its JSON object, or why there is none."""
        if not text.strip():
            return OutsideAnswer(None, text, latency, problem="the answer was empty; expected a JSON object with an \"action\"")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return OutsideAnswer(None, text, latency, problem=f"the answer is not JSON ({exc.msg} at character {exc.pos}); expected a JSON object with an \"action\"")
        except (ValueError, RecursionError):
            return OutsideAnswer(None, text, latency, problem="the answer is not JSON that can be read (nested too deep); expected a JSON object with an \"action\"")
        if not isinstance(data, dict):
            return OutsideAnswer(None, text, latency, problem=f"the answer is JSON {type(data).__name__}, not an object; expected a JSON object with an \"action\"")
        return OutsideAnswer(typed(data), text, latency)  # a NUL escaped in the JSON (\u0000) is dropped

    async def aclose(self) -> None:
        await self._http.aclose()
