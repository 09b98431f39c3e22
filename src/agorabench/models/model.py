"""A model as the runner uses it: response cache -> retries -> adaptive concurrency limit ->
per-minute budgets -> backend.

Cache key: backend identity, full messages, generation settings and the sample index, so a
study replayed from the cache makes no calls and yields the same outcomes at any concurrency.
Retries: transient faults and rate limits are retried with exponential backoff; a rate limit's
Retry-After is honoured (waited at least, with a little jitter so refused calls spread out); non-retryable errors fail at once; a fatal one (a rejected key) fails
every later call of the model at once.
Replies are sanitised here, at the boundary (:func:`~agorabench.models.base.sanitize_text`).
Limits: see :mod:`agorabench.models.limits` (AIMD on rate limits, requests/tokens per minute).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import time
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring
from typing import Awaitable, Callable

from .base import Backend, BackendError, Completion, GenerationSettings, ResponseCache, sanitize_text
from .errors import StatusError, setting_fix
from .limits import AdaptiveLimit, RateLimiter, estimate_tokens
from .pricing import Pricing  # the prices of a model's calls (re-exported: the runner and tests import it from here)
from .transport.wire import count, shown_value
from .reasoning import DEFAULT_REASONING_BUDGET, MAX_REASONING_CHARS, join_thoughts, may_hold_thoughts, output_limit, split_thoughts


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int, error: BackendError) -> float:
        """Seconds before the next attempt: a server's Retry-After w, lengthened by up to a
        quarter (w·(1 + U/4), U uniform on [0, 1)) so that calls refused together do not come
        back together; else exponential backoff base·2^(attempt−1), capped, times U' ∈ [½, 1)."""
        if error.retry_after is not None and math.isfinite(error.retry_after) and error.retry_after >= 0:
            return min(error.retry_after * (1 + random.random() / 4), self.max_delay * 4)
        return min(self.max_delay, self.base_delay * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)


#: Seconds before the first test call of a stalled endpoint, and the longest wait between tests
#: (read when a breaker is made).
STALL_COOLDOWN = 5.0
STALL_MAX_COOLDOWN = 60.0


class Breaker:
    """Stall detection for one endpoint (a server URL), shared by every model entry on it.

    After ``limit`` timed-out calls in a row with no answer in between, the endpoint is
    *stalled*: its calls wait, unsent, while one test call at a time goes through, first after
    ``cooldown`` seconds, then after twice as long each time a test times out (at most
    ``max_cooldown``). Any reply to a test (or to a call still in flight) closes the breaker and
    the waiting calls go on: a server that stops answering for a while costs its games nothing
    (three timed-out calls once failed every remaining game of a run within a second).

    The endpoint is *down* (:attr:`open`: every later call fails at once with the reason, its
    games are stored as failed and played again by the next run) when a test times out at the
    longest cool-down (after about two and a half minutes of tests), or at once when the server
    answered no call of the run (one that lists its models but never completes a chat call once
    cost about ten minutes per game).

    With ``final = False`` (a served study, which has no next run to play its games again) the
    endpoint is never down: it stays stalled, its calls wait and a test call goes through every
    ``max_cooldown`` seconds at the longest, for as long as the outage lasts; the first answer
    closes the breaker. A timed-out call of a stalled endpoint then costs its game no attempt
    (:meth:`Model._attempts`)."""

    def __init__(
        self, limit: int, cooldown: float | None = None, max_cooldown: float | None = None, clock: Callable[[], float] = time.monotonic, final: bool = True
    ) -> None:
        cooldown = STALL_COOLDOWN if cooldown is None else cooldown
        max_cooldown = STALL_MAX_COOLDOWN if max_cooldown is None else max_cooldown
        self.limit = limit
        #: Whether a long outage makes the endpoint down for good (a run) or only stalled (serve).
        self.final = final
        self.in_a_row = 0
        self.first_cooldown = cooldown
        self.max_cooldown = max(cooldown, max_cooldown)
        self.clock = clock
        #: Why every later call fails at once (the endpoint is down); None while it is not.
        self.open: str | None = None
        #: Why calls wait for a test call (the endpoint is stalled); None while it is not.
        self.stalled: str | None = None
        #: Whether the server answered a call of this run.
        self.answered_once = False
        #: Stalls the endpoint came back from.
        self.recovered = 0
        self.said = False  # whether a model has said so in its warnings
        self._testing = False
        self._cooldown = cooldown
        self._retry_at = 0.0
        self._since = 0.0
        self._tests = 0
        self._changed: asyncio.Event | None = None

    async def admit(self) -> bool:
        """Wait while the endpoint is stalled; True when this call is the test call (it must end
        with :meth:`answered`, :meth:`failed` or :meth:`release`). BackendError once it is down."""
        while True:
            if self.open is not None:
                raise BackendError(self.open, retryable=False)
            if self.stalled is None:
                return False
            now = self.clock()
            if not self._testing and now >= self._retry_at:
                self._testing = True
                return True
            if self._changed is None:
                self._changed = asyncio.Event()
            changed = self._changed
            try:  # until the test's outcome, or the time of the next test
                await asyncio.wait_for(changed.wait(), None if self._testing else max(0.001, self._retry_at - now))
            except asyncio.TimeoutError:
                pass

    def failed(self, exc: BackendError, endpoint: str, test: bool = False) -> None:
        """A call sent to the endpoint failed with ``exc``."""
        if self.limit <= 0:
            return
        if test:
            self._testing = False
            if not exc.timed_out:  # the server replied (an error status): it is not stalled
                self._close()
                return
            self._tests += 1
            if self.final and (not self.answered_once or self._cooldown >= self.max_cooldown):
                waited = self.clock() - self._since
                self.open = (
                    f"{endpoint} is stalled: no answer for {waited:.0f} s ({self.in_a_row} calls in a row and {self._tests} test call(s) timed out: {exc}); "
                    "its remaining calls in this run fail at once"
                )
            else:
                self._cooldown = min(self.max_cooldown, self._cooldown * 2)
                self._retry_at = self.clock() + self._cooldown
            self._notify()
            return
        if not exc.timed_out or self.stalled is not None:
            return  # a call in flight when the endpoint stalled changes nothing
        self.in_a_row += 1
        if self.in_a_row >= self.limit:
            self._since = self.clock()
            self.stalled = f"{endpoint} is stalled: {self.in_a_row} calls in a row got no answer ({exc})"
            self._cooldown, self._tests = self.first_cooldown, 0
            self._retry_at = self._since + self._cooldown

    def answered(self, test: bool = False) -> None:
        """A call sent to the endpoint got a reply."""
        self.in_a_row = 0
        self.answered_once = True
        if test or self.stalled is not None:
            self._close()

    def outage(self) -> str | None:
        """One line while the endpoint is stalled or down (why, for how long, when it is tested
        next); None while it answers."""
        if self.open is not None:
            return self.open
        if self.stalled is None:
            return None
        now = self.clock()
        nxt = "a test call is under way" if self._testing else f"next test call in {max(0.0, self._retry_at - now):.0f} s"
        return f"{self.stalled}; no answer for {now - self._since:.0f} s, its calls wait ({nxt})"

    def release(self, test: bool) -> None:
        """A call ended without a reply or a failure of the endpoint's (it was cancelled): a
        test call's turn passes to another call."""
        if test and self._testing:
            self._testing = False
            self._notify()

    def _close(self) -> None:
        self._testing = False
        if self.stalled is not None:
            self.stalled = None
            self.recovered += 1
            self.in_a_row = 0
        self._notify()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None


#: Timed-out calls in a row after which an endpoint counts as stalled.
STALL_AFTER = 3
#: Seconds one call waits for the tokens-per-minute budget before the model says why (once).
RATE_WAIT_SAID = 5.0
#: Replies in a row that spend the whole output budget thinking, after which a model stops.
STOP_AFTER_SPENT = 3
#: The same bad request (a 400 or 422 of the same status, code, param and words, numbers aside)
#: in a row on the same request settings, after which a model stops: every call of it would be
#: refused alike (a refused setting in words no rule knows). Never the context length or a
#: content filter, which depend on the request's messages.
STOP_AFTER_REFUSED = 3


#: The token counts of a reply, with what each is recorded as when it is not a count.
_COUNTS = (("prompt_tokens", None), ("completion_tokens", None), ("cached_tokens", 0), ("reasoning_tokens", None))


def clean_usage(completion: Completion) -> None:
    """A reply's token counts that are not counts (:func:`~agorabench.models.transport.wire.count`:
    strings, floats, booleans, negative or absurd numbers such as 2^63, which no database column
    holds) recorded as unknown (None, stored as NULL; 0 for ``cached_tokens``) and noted in
    ``extra["usage_dropped"]``, whatever the backend: before the reply is counted, cached or stored."""
    dropped: dict[str, str] = {}
    for name, unknown in _COUNTS:
        value = getattr(completion, name)
        if value is not unknown and count(value) is None:
            dropped[name] = shown_value(value)
            setattr(completion, name, unknown)
    if dropped:
        extra = dict(completion.extra or {})
        extra["usage_dropped"] = {**(extra.get("usage_dropped") or {}), **dropped}
        completion.extra = extra


def keep_apart(completion: Completion) -> None:
    """Thoughts inside a reply's text (``<think>...</think>``, also without the opening tag)
    moved to ``completion.reasoning``; an unclosed thought leaves no answer. Thoughts are made
    safe to store and bounded (:data:`~agorabench.models.reasoning.MAX_REASONING_CHARS`)."""
    if may_hold_thoughts(completion.text):
        answer, thoughts, unclosed = split_thoughts(completion.text)
        completion.text = answer
        completion.reasoning = join_thoughts(completion.reasoning, thoughts)
        if unclosed:
            completion.extra["unclosed_thought"] = True
    if completion.reasoning is not None:
        completion.reasoning, _ = sanitize_text(completion.reasoning, MAX_REASONING_CHARS)


def replayable(completion: Completion) -> bool:
    """Whether a reply may be kept in (or replayed from) the response cache: not an empty
    answer, which a later call (a larger budget, another draw) may improve on."""
    return bool(completion.text.strip())


#: Where a batch model's calls go when the response cache has no answer
#: (:mod:`agorabench.core.lockstep`): called with the model, the response-cache key, the messages
#: and the settings; returns the completion (marked ``cached`` when the response cache got it
#: meanwhile, e.g. from a batch an earlier run submitted).
Batcher = Callable[["Model", str, list[dict[str, str]], GenerationSettings], Awaitable[Completion]]


def _unanswered(error: BackendError, cause: BackendError) -> BackendError:
    """``error`` (a call's last failure) carrying, when ``cause`` timed out, the call as a reply
    of unknown usage (:attr:`BackendError.completion`, tokens None): the server may have billed
    it, so the game's record keeps the call with its tokens unknown (NULL), never 0."""
    if cause.timed_out:
        # priced at nothing known and booked at no tier: its cost is as unknown as its tokens
        error.completion = Completion(text="", prompt_tokens=None, completion_tokens=None, finish_reason="timeout", extra={"cost": 0.0, "billed_tier": None})
    return error


#: ``json.dumps(value, sort_keys=True, ensure_ascii=False)`` with its encoder made once (the
#: response-cache key's text, unchanged: ``dumps`` builds a new encoder on every call with options).
_KEY_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
#: The C encoder :data:`_KEY_JSON` makes on every call, made once (same options, same text),
#: without the circular check (a dict of the objects being encoded, which one encoder shared by
#: threads cannot hold): a value that holds itself is encoded again by :data:`_KEY_JSON`, which
#: raises its own error for it (:func:`_key_text`). None where the interpreter has no C encoder.
_KEY_C = (
    c_make_encoder(None, json.JSONEncoder().default, encode_basestring, None, ": ", ", ", True, False, True) if c_make_encoder is not None else None
)

#: (role, content) of a message -> its JSON in the response-cache key: a call's messages repeat
#: those of the game's earlier calls and every game's system prompt. The text depends only on
#: the two strings; at most :data:`_MESSAGE_TEXTS` of them, and :data:`_MESSAGE_BUDGET` characters
#: of contents and texts together, are kept (then the memo is emptied: at most some tens of MB
#: whatever the language), and contents longer than :data:`_MESSAGE_CHARS` are encoded each time.
_MESSAGE_JSON: dict[tuple[str, str], str] = {}
_MESSAGE_TEXTS = 4096
_MESSAGE_CHARS = 4096
_MESSAGE_BUDGET = 4_000_000
_message_chars = [0]  # characters held by _MESSAGE_JSON


def _key_text(value: object) -> str:
    """``_KEY_JSON(value)``, through the encoder made once."""
    if _KEY_C is None:  # pragma: no cover - CPython has the C encoder
        return _KEY_JSON(value)
    try:
        return "".join(_KEY_C(value, 0))
    except RecursionError:  # a value that holds itself (or too deep): the error _KEY_JSON raises
        return _KEY_JSON(value)


def _messages_text(messages: object) -> str:
    """``_KEY_JSON(messages)``: a list of messages of a role and a content (strings) as their JSON
    texts joined (each from :data:`_MESSAGE_JSON` when there), anything else encoded whole."""
    if type(messages) is not list:
        return _key_text(messages)
    memo = _MESSAGE_JSON
    parts = []
    for m in messages:
        if type(m) is dict and len(m) == 2:
            role, content = m.get("role"), m.get("content")
            if type(role) is str and type(content) is str:  # then its keys are exactly these two
                text = memo.get((role, content))
                if text is None:
                    text = _key_text(m)
                    if len(content) <= _MESSAGE_CHARS:
                        size = len(role) + len(content) + len(text)
                        if len(memo) >= _MESSAGE_TEXTS or _message_chars[0] + size > _MESSAGE_BUDGET:
                            memo.clear()
                            _message_chars[0] = 0
                        memo[(role, content)] = text
                        _message_chars[0] += size
                parts.append(text)
                continue
        parts.append(_key_text(m))
    return "[" + ", ".join(parts) + "]"


def _settings_key(settings: GenerationSettings) -> str:
    """The request settings of a call as one string (what makes two calls "the same settings")."""
    return json.dumps(settings.key(), sort_keys=True, default=str)


class Model:
    def __init__(
        self,
        backend: Backend,
        settings: GenerationSettings | None = None,
        cache: ResponseCache | None = None,
        max_concurrency: int = 16,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
        rate: RateLimiter | None = None,
        adaptive: bool = True,
        stall_after: int = STALL_AFTER,
        breakers: dict[str, Breaker] | None = None,
        outage_final: bool = True,
    ) -> None:
        self.backend = backend
        self._endpoint = str(getattr(backend, "base_url", None) or getattr(backend, "identity", "the backend"))
        #: Shared with every model on the same server through ``breakers`` (one dict per run):
        #: see :class:`Breaker` (``outage_final``: its ``final``, False in a served study).
        if breakers is not None:
            self.breaker = breakers.get(self._endpoint) or breakers.setdefault(self._endpoint, Breaker(stall_after, final=outage_final))
        else:
            self.breaker = Breaker(stall_after, final=outage_final)
        self.settings = settings or GenerationSettings()
        self.cache = cache
        self.retry = retry or RetryPolicy()
        self.pricing = pricing or Pricing()
        self.limit = AdaptiveLimit(1 if backend.serialized else max_concurrency, adaptive=adaptive and not backend.serialized)
        self.rate = rate
        self.calls = 0  # requests that reached the backend
        self.cache_hits = 0
        self.retries = 0
        self.rate_limited = 0  # answers that were rate limits
        self.prompt_tokens = 0
        self.cached_tokens = 0  # prompt tokens the server served from its prompt cache
        self.completion_tokens = 0
        #: Output tokens spent thinking, as reported (replies that report none add nothing), and
        #: how many replies reported them (none: the provider does not say, shown as "n/a").
        self.reasoning_tokens = 0
        self.reasoning_reported = 0
        #: Replies counted in the books (answers from the backend, not from the response cache).
        self.replies = 0
        #: Replies cut off at the output token limit.
        self.cut_off = 0
        #: Replies in a row (and in all) that spent the whole output budget thinking and gave no answer.
        self.spent_in_a_row = 0
        self.spent = 0
        #: One line each, said once per model: a server undercounting output tokens, ...
        self.warnings: list[str] = []
        self.cost = 0.0
        #: Set when a call failed in a way every later call would too (a rejected API key):
        #: the model's remaining calls fail at once, without reaching the backend.
        self.dead: str | None = None
        #: Asked before each call that is not answered from the response cache (the run's
        #: budget): raises BackendError to refuse it, else returns what to call once the call
        #: has ended and its cost is counted (the reservation's release).
        self.gate: Callable[[list[dict[str, str]], GenerationSettings], Callable[[], None]] | None = None
        #: Batch mode: calls the response cache cannot answer wait for a provider batch
        #: (:data:`Batcher`) instead of going to the backend one by one; None: live calls.
        self.batcher: Batcher | None = None
        #: The last bad request per request settings (their key): its fingerprint and how many
        #: calls in a row got it (:data:`STOP_AFTER_REFUSED`); a reply on those settings clears it.
        self._refused: dict[str, tuple[tuple[object, ...], int]] = {}
        #: Calls that timed out (no answer, so no usage: what the server billed for them is unknown).
        self.timed_out = 0

    @property
    def endpoint(self) -> str:
        """The server this model's calls go to (its breaker's key)."""
        return self._endpoint

    def cache_key(self, messages: list[dict[str, str]], settings: GenerationSettings, sample: int | str) -> str:
        """The response-cache key: SHA-256 of ``_KEY_JSON({"backend": ..., "messages": ...,
        "settings": ..., "sample": ...})``, the same text built from its values' texts (the keys
        in sorted order, as ``sort_keys`` puts them)."""
        payload = f'{{"backend": {_key_text(self.backend.identity)}, "messages": {_messages_text(messages)}, "sample": {_key_text(sample)}, "settings": {_key_text(settings.key())}}}'
        return hashlib.sha256(payload.encode()).hexdigest()

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings | None = None, sample: int | str = 0, keys: list[str] | None = None) -> Completion:
        """The answer to ``messages``: from the response cache when it has a replayable one,
        else from the backend (then kept in the cache). ``keys``, when given, gets the call's
        response-cache key (see :meth:`forget`)."""
        settings = settings or self.settings
        key = self.cache_key(messages, settings, sample)
        if keys is not None:
            keys.append(key)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None and replayable(hit):
                return self._replayed(hit)
        release = self.gate(messages, settings) if self.gate is not None else None
        try:
            completion = await (self.batcher(self, key, messages, settings) if self.batcher is not None else self._attempts(messages, settings))
            if completion.cached:  # a batch's answer that reached the response cache meanwhile
                return self._replayed(completion)
            self._count(completion)
            if self._refused:  # these settings are taken (the key is built only when some were refused)
                self._refused.pop(_settings_key(settings), None)
        finally:
            if release is not None:
                release()
        if self.cache is not None and replayable(completion):
            self.cache.put(key, self.backend.identity, completion)
        self._check_spent(completion, settings)
        return completion

    def forget(self, keys: list[str]) -> None:
        """Drop the answers of ``keys`` from the response cache, where the cache can (the
        store's :class:`~agorabench.store.cache.SQLCache`): answers the runner judged so bad that
        it stopped the model are asked again by the next run, not replayed."""
        forget = getattr(self.cache, "forget", None)
        if forget is not None and keys:
            forget(keys)

    async def _attempts(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        """The call, tried again on transient faults and rate limits (:class:`RetryPolicy`)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._call(messages, settings)
            except BackendError as exc:
                self.rate_limited += exc.rate_limited
                if exc.timed_out:
                    self._note_timeout()
                if self.breaker.open is not None and not exc.fatal:
                    raise _unanswered(BackendError(f"{self.backend.identity}: {self.breaker.open}", retryable=False), exc) from None
                if exc.fatal:
                    self.dead = self.dead or str(exc)
                    raise BackendError(f"{self.backend.identity}: {exc}", retryable=False, fatal=True) from None
                if exc.timed_out and not self.breaker.final and self.breaker.stalled is not None:
                    attempt -= 1  # a served study's stalled endpoint: the call waits for a test call's answer, however long
                    continue
                if not exc.retryable or attempt >= self.retry.max_attempts:
                    self._check_refused(exc, settings)
                    raise _unanswered(BackendError(f"{self.backend.identity}: {exc} (after {attempt} attempt(s))", retryable=False), exc) from None
                self.retries += 1
                await asyncio.sleep(self.retry.delay(attempt, exc))

    def _note_timeout(self) -> None:
        """Count a call that timed out, and say once that what it was billed is unknown: the
        server may have generated (and billed) tokens no answer reported."""
        self.timed_out += 1
        if self.timed_out == 1:
            self.warnings.append(
                f"{self.backend.identity}: calls got no answer within the timeout; the tokens the server may have billed for them are unknown "
                "(not counted in tokens or cost; a game that ended on one stores its call with tokens unknown, NULL)"
            )

    def _check_refused(self, exc: BackendError, settings: GenerationSettings) -> None:
        """Count a bad request on these settings; the :data:`STOP_AFTER_REFUSED`-th of the same
        one in a row stops the model (its remaining calls fail at once) with one line naming the
        setting (the error's ``param`` where it gives one) and what to change."""
        if not (isinstance(exc, StatusError) and exc.bad_request):
            return
        key = _settings_key(settings)
        last, n = self._refused.get(key, ((), 0))
        n = n + 1 if last == exc.fingerprint else 1
        self._refused[key] = (exc.fingerprint, n)
        if n < STOP_AFTER_REFUSED:
            return
        if self.dead is None:
            setting, fix = setting_fix(exc.detail, exc.param)
            said = " ".join(str(exc).split())  # as the games it failed say it (the run's closing lines fold them into this one)
            said = said if len(said) <= 500 else said[:497] + "..."
            code = f" ({exc.code})" if exc.code else ""
            self.dead = f"the server refused {n} calls in a row with the same settings alike{code} ({said}), so every call would fail; it names {setting}: {fix}"
        raise BackendError(f"{self.backend.identity}: {self.dead}", retryable=False, fatal=True) from None

    def _count(self, completion: Completion) -> None:
        """A new reply made safe (thoughts apart, text sanitised) and counted in the books."""
        keep_apart(completion)
        completion.text, cut = sanitize_text(completion.text)
        if cut:
            completion.finish_reason = "cut"
        self.prompt_tokens += completion.prompt_tokens or 0  # None: not reported
        self.cached_tokens += completion.cached_tokens
        self.completion_tokens += completion.completion_tokens or 0
        self.replies += 1
        self.reasoning_tokens += completion.reasoning_tokens or 0
        self.reasoning_reported += completion.reasoning_tokens is not None
        self.cut_off += completion.cut
        self.cost += self.pricing.cost(completion)
        if "completion_tokens_reported" in completion.extra and not any("fewer than its totals imply" in w for w in self.warnings):
            self.warnings.append(
                f"{self.backend.identity}: the server's completion_tokens ({completion.extra['completion_tokens_reported']}) are fewer than its totals imply "
                f"({completion.completion_tokens}): it leaves reasoning out; the larger figure is counted and billed"
            )
        self._note_usage(completion)
        refused = completion.extra.get("reasoning_summary_refused")
        if refused and not any("refuses reasoning summaries" in w for w in self.warnings):
            self.warnings.append(
                f"{self.backend.identity}: the server refuses reasoning summaries ({refused}); the model's calls ask for none from then on "
                "(its thoughts are stored empty); set reasoning_summary = \"none\" to skip the refused call"
            )
        if self.breaker.recovered and not self.breaker.said:
            self.breaker.said = True
            self.warnings.append(f"{self._endpoint} stopped answering for a while ({self.breaker.recovered} time(s)); its calls waited until a test call was answered")

    def _replayed(self, hit: Completion) -> Completion:
        """An answer from the response cache, as a call returns it (counted as a cache hit)."""
        self.cache_hits += 1
        hit.cached = True
        hit.text, _ = sanitize_text(hit.text)  # replies cached before sanitising
        clean_usage(hit)  # and token counts cached before they were checked
        self._note_usage(hit)
        return hit

    def _note_usage(self, completion: Completion) -> None:
        """Say once per model that a server reported token counts that are not counts."""
        dropped = (completion.extra or {}).get("usage_dropped")
        if dropped and not any("not token counts" in w for w in self.warnings):
            shown = ", ".join(f"{name} = {value}" for name, value in dropped.items())
            self.warnings.append(f"{self.backend.identity}: the server reported values that are not token counts ({shown}); they are counted as unknown (0)")

    def _check_spent(self, completion: Completion, settings: GenerationSettings) -> None:
        """Count replies that spent the whole output budget thinking and gave no answer; after
        :data:`STOP_AFTER_SPENT` in a row the model stops (its remaining calls fail at once) with
        one line saying what to change, instead of playing games of forfeits."""
        thinks = settings.reasoning or completion.reasoning is not None
        if not (thinks and completion.cut and not completion.text.strip()):
            self.spent_in_a_row = 0
            return
        self.spent_in_a_row += 1
        self.spent += 1
        if self.spent == 1:  # said once, also when the model never spends 3 in a row
            self.warnings.append(
                f"{self.backend.identity}: a reply spent all {output_limit(settings)} output tokens reasoning and gave no answer "
                f"(its turn is invalid, not re-asked); raise {'reasoning_budget' if settings.reasoning else 'max_tokens'} if this recurs"
            )
        if self.spent_in_a_row >= STOP_AFTER_SPENT:
            if self.dead is None:
                self.warnings = [w for w in self.warnings if "output tokens reasoning" not in w]  # the stop's line says it
                limit = output_limit(settings)
                budget = f"reasoning_budget (now {settings.reasoning_budget or DEFAULT_REASONING_BUDGET})" if settings.reasoning else "max_tokens"
                self.dead = (
                    f"{self.spent_in_a_row} replies in a row spent all {limit} output tokens reasoning and gave no answer; "
                    f"raise {budget}{' or max_tokens' if settings.reasoning else ''}, or lower reasoning_effort"
                )
            # a reply that was in flight when the model stopped ends its game too, rather than
            # leaving a forfeit in a game stored as done
            stop = BackendError(f"{self.backend.identity}: {self.dead}", retryable=False, fatal=True)
            stop.completion = completion  # billed: the game's record keeps what it used
            raise stop

    async def _call(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        """One request under the concurrency limit and the per-minute budgets."""
        epoch = await self.limit.acquire()
        rate_limited, ok = False, False
        reserved = used = 0
        try:
            if self.rate is not None:
                before = self.rate.waited
                reserved = await self.rate.acquire(lambda: estimate_tokens(messages, self.expected_output(settings)))
                self._say_rate_wait(settings, self.rate.waited - before)
            test = await self.breaker.admit()  # waits while the endpoint is stalled (Breaker)
            if self.dead is not None:
                self.breaker.release(test)
                raise BackendError(self.dead, retryable=False, fatal=True)
            self.calls += 1
            try:
                completion = await self.backend.complete(messages, settings)
            except BackendError as exc:
                self.breaker.failed(exc, self._endpoint, test)
                raise
            except Exception as exc:  # a reply the backend could not read: transient
                unreadable = BackendError(f"unreadable reply ({type(exc).__name__}: {str(exc)[:200]})", retryable=True)
                self.breaker.failed(unreadable, self._endpoint, test)
                raise unreadable from None
            except BaseException:  # cancelled
                self.breaker.release(test)
                raise
            self.breaker.answered(test)
            clean_usage(completion)  # before the budgets, the books and the cache see it
            used, ok = (completion.prompt_tokens or 0) + (completion.completion_tokens or 0), True
            return completion
        except BackendError as exc:
            rate_limited = exc.rate_limited
            raise
        finally:
            if self.rate is not None:
                self.rate.settle(reserved, used)
                if self.rate.over_budget is not None and not any("more than a minute's budget" in w for w in self.warnings):
                    self.warnings.append(
                        f"{self.backend.identity}: a call counted {self.rate.over_budget} tokens, more than a minute's budget "
                        f"(tokens_per_minute = {self.rate.tpm:g}); it was counted as one minute's budget"
                    )
            await self.limit.release(epoch, rate_limited=rate_limited, ok=ok)

    def expected_output(self, settings: GenerationSettings) -> int:
        """The output tokens a call is held at against ``tokens_per_minute``: the mean of the
        model's replies so far (reasoning included), at most the bound; before any reply, the
        bound (``max_tokens`` plus any reasoning budget)."""
        bound = output_limit(settings)
        if self.replies:
            return min(bound, math.ceil(self.completion_tokens / self.replies))
        return bound

    def _say_rate_wait(self, settings: GenerationSettings, waited: float) -> None:
        """Say once why calls wait, when a call waited a while for the tokens-per-minute budget."""
        if waited < RATE_WAIT_SAID or self.rate is None or not self.rate.tpm or any("waited for tokens_per_minute" in w for w in self.warnings):
            return
        held = estimate_tokens([], self.expected_output(settings))
        self.warnings.append(
            f"{self.backend.identity}: calls waited for tokens_per_minute = {self.rate.tpm:g} (one call waited {waited:.0f} s); each is held at its prompt "
            f"plus its expected reply ({held:,} output tokens now: the mean reply so far, {output_limit(settings):,} before the first), "
            f"so about {self.rate.tpm / max(1, held):,.0f} calls a minute fit; raise tokens_per_minute to your account's limit if it is higher"
        )

    async def aclose(self) -> None:
        await self.backend.aclose()
