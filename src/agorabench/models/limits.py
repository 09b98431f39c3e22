"""How fast a model may be called: a provider's per-minute budgets and an adaptive cap on
requests in flight.

- :class:`RateLimiter`: requests per minute and tokens per minute as two budgets that refill
  continuously (rate/60 per second), each holding at most one second's worth (at least one
  request), so calls are paced evenly instead of bursting. A call reserves its estimated tokens
  up front, reckoned when its turn comes (prompt characters / 4 + the reply it is expected to
  write: the model's mean reply so far, the output bound before any reply; a bound far above
  the replies once held 4 calls a minute at 30,000 tokens per minute), and the estimate is
  settled against the usage the server reports, which wakes the waiting calls at once; the
  token budget may go into debt by one call, never more, and one
  call counts at most one minute's budget (a reported usage of 10^30 once made every later call
  wait for ever): no wait is longer than a minute.
- :class:`AdaptiveLimit`: a semaphore whose size follows AIMD: every ``limit`` successes add one
  slot (additive increase, up to the configured maximum), a rate-limit answer halves it
  (multiplicative decrease, at least one). Rate limits from requests that started before the
  last decrease do not decrease it again, so one burst of refusals counts as one backoff.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Awaitable, Callable


_EPS = 1e-6


class RateLimiter:
    """Requests-per-minute and tokens-per-minute budgets (either may be None: no limit)."""

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.rpm = requests_per_minute
        self.tpm = tokens_per_minute
        self.clock = clock
        self.sleep = sleep
        self._req_cap = max(1.0, (requests_per_minute or 0) / 60)
        self._tok_cap = max(1.0, (tokens_per_minute or 0) / 60)
        self._requests = self._req_cap
        self._tokens = self._tok_cap
        self._at = clock()
        self._lock = asyncio.Lock()
        #: Seconds spent waiting for the budgets, summed over calls.
        self.waited = 0.0
        #: The largest token count of one call (reserved or reported) that was more than a
        #: minute's budget, and was counted as one minute's budget (None: none was).
        self.over_budget: int | None = None
        self._settled: asyncio.Event | None = None  # set when a settled call gives tokens back

    def _refill(self) -> None:
        now = self.clock()
        dt, self._at = now - self._at, now
        if self.rpm:
            self._requests = min(self._req_cap, self._requests + dt * self.rpm / 60)
        if self.tpm:
            self._tokens = min(self._tok_cap, self._tokens + dt * self.tpm / 60)

    def _wait_for(self) -> float:
        """Seconds until one request with a non-negative token budget is possible (0: now)."""
        wait = 0.0
        if self.rpm and self._requests < 1 - _EPS:
            wait = (1 - self._requests) * 60 / self.rpm
        if self.tpm and self._tokens < -_EPS:
            wait = max(wait, -self._tokens * 60 / self.tpm)
        wait = min(wait, 60.0)  # a debt is at most a minute's budget (_within): never wait longer
        return wait if wait > 1e-6 else 0.0  # rounding must not make it wait forever

    async def acquire(self, tokens: int | Callable[[], int]) -> int:
        """Wait (first come, first served) until the budgets allow one call, and reserve its
        ``tokens`` (a function: reckoned when the call's turn comes, so that what was learnt
        while it waited counts); returns the tokens reserved. A call's tokens given back
        (:meth:`settle`) end the wait early."""
        started = self.clock()
        async with self._lock:
            while True:
                self._refill()
                wait = self._wait_for()
                if wait <= 0:
                    break
                await self._nap(wait)
            reserved = tokens() if callable(tokens) else tokens
            if self.rpm:
                self._requests -= 1
            if self.tpm:
                self._tokens -= self._within(reserved)
        self.waited += self.clock() - started
        return reserved

    async def _nap(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when a settled call gives tokens back."""
        if not self.tpm:
            await self.sleep(seconds)
            return
        if self._settled is None:
            self._settled = asyncio.Event()
        settled = asyncio.ensure_future(self._settled.wait())
        nap = asyncio.ensure_future(self.sleep(seconds))
        try:
            await asyncio.wait({settled, nap}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (settled, nap):
                t.cancel()

    def settle(self, reserved: int, used: int) -> None:
        """Correct a call's reservation by the tokens it really used (each counted as at most
        one minute's budget, as in :meth:`acquire`)."""
        if self.tpm:
            back = self._within(reserved) - self._within(used)
            self._tokens = min(self._tok_cap, self._tokens + back)
            if back > 0 and self._settled is not None:
                self._settled.set()
                self._settled = None

    def _within(self, tokens: int) -> float:
        """``tokens`` as the budget counts them: at most one minute's budget (noted in
        :attr:`over_budget`); a value that is not a finite number counts as none."""
        if isinstance(tokens, bool) or not isinstance(tokens, (int, float)) or not tokens >= 0:
            return 0.0  # NaN, negative, not a number
        if self.tpm and tokens > self.tpm:
            shown = tokens if isinstance(tokens, int) else int(tokens) if math.isfinite(tokens) else 0
            self.over_budget = max(self.over_budget or 0, shown)
            return float(self.tpm)
        return float(tokens)


def estimate_tokens(messages: list[dict[str, str]], max_tokens: int) -> int:
    """A call's token reservation: about four characters per prompt token plus ``max_tokens``,
    what it is expected to generate (the bound, or the model's mean reply so far)."""
    return sum(len(m.get("content") or "") for m in messages) // 4 + max_tokens


class AdaptiveLimit:
    """At most ``limit`` requests in flight; AIMD moves ``limit`` between 1 and ``maximum``
    when ``adaptive`` (otherwise it stays at ``maximum``)."""

    def __init__(self, maximum: int, adaptive: bool = True) -> None:
        self.maximum = max(1, maximum)
        self.adaptive = adaptive
        self.limit = float(self.maximum)
        self.in_flight = 0
        #: Multiplicative decreases so far.
        self.backoffs = 0
        self._epoch = 0
        self._cond = asyncio.Condition()

    @property
    def current(self) -> int:
        return max(1, int(self.limit))

    async def acquire(self) -> int:
        """Wait for a slot; returns the epoch the request starts in (pass it to release)."""
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_flight < self.current)
            self.in_flight += 1
            return self._epoch

    async def release(self, epoch: int, rate_limited: bool = False, ok: bool = True) -> None:
        async with self._cond:
            self.in_flight -= 1
            if self.adaptive:
                if rate_limited:
                    if epoch == self._epoch:  # the first refusal of this epoch backs off
                        self.limit = max(1.0, self.limit / 2)
                        self.backoffs += 1
                        self._epoch += 1
                elif ok and self.limit < self.maximum:
                    self.limit = min(float(self.maximum), self.limit + 1 / self.limit)
            free = self.current - self.in_flight
            if free > 0:
                self._cond.notify(free)
