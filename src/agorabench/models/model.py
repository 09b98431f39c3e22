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
from dataclasses import dataclass
from typing import Protocol

from .base import Backend, BackendError, Completion, GenerationSettings, sanitize_text
from .limits import AdaptiveLimit, RateLimiter, estimate_tokens
from .reasoning import DEFAULT_REASONING_BUDGET, MAX_REASONING_CHARS, join_thoughts, may_hold_thoughts, output_limit, split_thoughts


class ResponseCache(Protocol):
    def get(self, key: str) -> Completion | None: ...

    def put(self, key: str, identity: str, completion: Completion) -> None: ...

    # optional: ``flush()`` writes buffered entries (the runner calls it before storing a game)


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


@dataclass
class Pricing:
    """Dollars per million tokens; prompt tokens served from the server's prompt cache at
    ``cached_input`` (the input price when None)."""

    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None

    def cost(self, c: Completion) -> float:
        cached_price = self.input if self.cached_input is None else self.cached_input
        return ((c.prompt_tokens - c.cached_tokens) * self.input + c.cached_tokens * cached_price + c.completion_tokens * self.output) / 1e6


class Breaker:
    """Stall detection for one endpoint (a server URL), shared by every model entry on it: after
    ``limit`` timed-out calls in a row with no answer in between, the endpoint is *open*: every
    later call to it fails at once with the reason, instead of waiting out its own timeouts and
    retries (a server that lists its models but never completes a chat call once cost about ten
    minutes per game). Its games are stored as failed and played again by the next run."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_a_row = 0
        self.open: str | None = None

    def failed(self, exc: BackendError, endpoint: str) -> None:
        if not exc.timed_out or self.limit <= 0:
            return
        self.in_a_row += 1
        if self.in_a_row >= self.limit and self.open is None:
            self.open = f"{endpoint} is stalled: {self.in_a_row} calls in a row got no answer ({exc}); its remaining calls in this run fail at once"

    def answered(self) -> None:
        self.in_a_row = 0


#: Timed-out calls in a row after which an endpoint counts as stalled.
STALL_AFTER = 3
#: Replies in a row that spend the whole output budget thinking, after which a model stops.
STOP_AFTER_SPENT = 3


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
    ) -> None:
        self.backend = backend
        self._endpoint = str(getattr(backend, "base_url", None) or getattr(backend, "identity", "the backend"))
        #: Shared with every model on the same server through ``breakers`` (one dict per run):
        #: see :class:`Breaker`.
        if breakers is not None:
            self.breaker = breakers.setdefault(self._endpoint, Breaker(stall_after))
        else:
            self.breaker = Breaker(stall_after)
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
        #: Output tokens spent thinking, as reported (replies that report none add nothing).
        self.reasoning_tokens = 0
        #: Replies cut off at the output token limit.
        self.cut_off = 0
        #: Replies in a row that spent the whole output budget thinking and gave no answer.
        self.spent_in_a_row = 0
        #: One line each, said once per model: a server undercounting output tokens, ...
        self.warnings: list[str] = []
        self.cost = 0.0
        #: Set when a call failed in a way every later call would too (a rejected API key):
        #: the model's remaining calls fail at once, without reaching the backend.
        self.dead: str | None = None

    def cache_key(self, messages: list[dict[str, str]], settings: GenerationSettings, sample: int | str) -> str:
        payload = json.dumps(
            {"backend": self.backend.identity, "messages": messages, "settings": settings.key(), "sample": sample},
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings | None = None, sample: int | str = 0) -> Completion:
        settings = settings or self.settings
        key = self.cache_key(messages, settings, sample)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None and replayable(hit):
                self.cache_hits += 1
                hit.cached = True
                hit.text, _ = sanitize_text(hit.text)  # replies cached before sanitising
                return hit
        attempt = 0
        while True:
            attempt += 1
            try:
                completion = await self._call(messages, settings)
                break
            except BackendError as exc:
                self.rate_limited += exc.rate_limited
                self.breaker.failed(exc, self._endpoint)
                if self.breaker.open is not None and not exc.fatal:
                    raise BackendError(f"{self.backend.identity}: {self.breaker.open}", retryable=False) from None
                if exc.fatal:
                    self.dead = self.dead or str(exc)
                    raise BackendError(f"{self.backend.identity}: {exc}", retryable=False, fatal=True) from None
                if not exc.retryable or attempt >= self.retry.max_attempts:
                    raise BackendError(f"{self.backend.identity}: {exc} (after {attempt} attempt(s))", retryable=False) from None
                self.retries += 1
                await asyncio.sleep(self.retry.delay(attempt, exc))
        keep_apart(completion)
        completion.text, cut = sanitize_text(completion.text)
        if cut:
            completion.finish_reason = "cut"
        self.prompt_tokens += completion.prompt_tokens
        self.cached_tokens += completion.cached_tokens
        self.completion_tokens += completion.completion_tokens
        self.reasoning_tokens += completion.reasoning_tokens or 0
        self.cut_off += completion.cut
        self.cost += self.pricing.cost(completion)
        if "completion_tokens_reported" in completion.extra and not any("completion_tokens" in w for w in self.warnings):
            self.warnings.append(
                f"{self.backend.identity}: the server's completion_tokens ({completion.extra['completion_tokens_reported']}) are fewer than its totals imply "
                f"({completion.completion_tokens}): it leaves reasoning out; the larger figure is counted and billed"
            )
        if self.cache is not None and replayable(completion):
            self.cache.put(key, self.backend.identity, completion)
        self._check_spent(completion, settings)
        return completion

    def _check_spent(self, completion: Completion, settings: GenerationSettings) -> None:
        """Count replies that spent the whole output budget thinking and gave no answer; after
        :data:`STOP_AFTER_SPENT` in a row the model stops (its remaining calls fail at once) with
        one line saying what to change, instead of playing games of forfeits."""
        if not (completion.cut and not completion.text.strip()):
            self.spent_in_a_row = 0
            return
        self.spent_in_a_row += 1
        if self.spent_in_a_row >= STOP_AFTER_SPENT and self.dead is None:
            limit = output_limit(settings)
            budget = f"reasoning_budget (now {settings.reasoning_budget or DEFAULT_REASONING_BUDGET})" if settings.reasoning else "max_tokens"
            self.dead = (
                f"{self.spent_in_a_row} replies in a row spent all {limit} output tokens reasoning and gave no answer; "
                f"raise {budget}{' or max_tokens' if settings.reasoning else ''}, or lower reasoning_effort"
            )
            raise BackendError(f"{self.backend.identity}: {self.dead}", retryable=False, fatal=True)

    async def _call(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        """One request under the concurrency limit and the per-minute budgets."""
        epoch = await self.limit.acquire()
        rate_limited, ok = False, False
        reserved = estimate_tokens(messages, output_limit(settings)) if self.rate is not None else 0
        used = 0
        try:
            if self.rate is not None:
                await self.rate.acquire(reserved)
            if self.dead is not None:
                raise BackendError(self.dead, retryable=False, fatal=True)
            if self.breaker.open is not None:
                raise BackendError(self.breaker.open, retryable=False)
            self.calls += 1
            try:
                completion = await self.backend.complete(messages, settings)
                self.breaker.answered()
            except BackendError:
                raise
            except Exception as exc:  # a reply the backend could not read: transient
                raise BackendError(f"unreadable reply ({type(exc).__name__}: {str(exc)[:200]})", retryable=True) from None
            used, ok = completion.prompt_tokens + completion.completion_tokens, True
            return completion
        except BackendError as exc:
            rate_limited = exc.rate_limited
            raise
        finally:
            if self.rate is not None:
                self.rate.settle(reserved, used)
            await self.limit.release(epoch, rate_limited=rate_limited, ok=ok)

    async def aclose(self) -> None:
        await self.backend.aclose()
