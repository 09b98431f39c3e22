"""Per-minute budgets and adaptive concurrency: the rules on a simulated clock, then against our
fault-injecting server on 127.0.0.1 (which refuses requests beyond its own concurrency limit and
logs every arrival)."""

import asyncio
import json
import urllib.request

import pytest

from agorabench.models.base import BackendError, Completion, GenerationSettings
from agorabench.models.limits import AdaptiveLimit, RateLimiter, estimate_tokens
from agorabench.models.model import Model, RetryPolicy
from agorabench.models.openai_compat import LeanOpenAIBackend


class FakeClock:
    """Time that moves only when someone sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_requests_per_minute_paces_calls_evenly():
    clock = FakeClock()
    rl = RateLimiter(requests_per_minute=60, clock=clock, sleep=clock.sleep)

    async def go():
        for _ in range(5):
            await rl.acquire(0)

    asyncio.run(go())
    assert clock.now == pytest.approx(4.0)  # one at once, then one per second


def test_tokens_per_minute_reserves_and_settles():
    clock = FakeClock()
    rl = RateLimiter(tokens_per_minute=600, clock=clock, sleep=clock.sleep)  # 10 tokens/s, 10 at most banked

    async def go():
        await rl.acquire(25)  # allowed at once: the budget may go into debt by one call (10 - 25 = -15)
        assert clock.now == 0
        await rl.acquire(5)  # waits until the debt is paid (1.5 s), then 0 - 5 = -5
        assert clock.now == pytest.approx(1.5)
        rl.settle(reserved=5, used=1)  # the call used less than reserved: 4 come back, -1 left
        await rl.acquire(10)  # waits 0.1 s for -1 to reach 0, then -10
        assert clock.now == pytest.approx(1.6)
        rl.settle(reserved=10, used=30)  # it used more than reserved: -30
        await rl.acquire(1)
        assert clock.now == pytest.approx(4.6)

    asyncio.run(go())
    assert estimate_tokens([{"role": "user", "content": "x" * 400}], max_tokens=50) == 150


def test_aimd_halves_once_per_burst_and_grows_back():
    async def go():
        lim = AdaptiveLimit(16)
        epochs = [await lim.acquire() for _ in range(8)]
        for e in epochs[:4]:  # four refusals from the same burst: one backoff
            await lim.release(e, rate_limited=True)
        assert lim.current == 8 and lim.backoffs == 1
        e = await lim.acquire()  # a request of the new epoch is refused: second backoff
        await lim.release(e, rate_limited=True)
        assert lim.current == 4 and lim.backoffs == 2
        for e in epochs[4:]:
            await lim.release(e)
        # additive increase: +1/limit per success, i.e. one slot per window of `limit` successes,
        # so limit^2 grows by about 2 per success: from 4 after 4 + 30 successes to about sqrt(84)
        for _ in range(30):
            await lim.release(await lim.acquire())
        assert 9.0 <= lim.limit <= 9.5
        for _ in range(1000):
            await lim.release(await lim.acquire())
        assert lim.current == 16  # never above the configured maximum
        fixed = AdaptiveLimit(4, adaptive=False)
        await fixed.release(await fixed.acquire(), rate_limited=True)
        assert fixed.current == 4 and fixed.backoffs == 0

    asyncio.run(go())


def test_the_limit_holds_requests_back():
    async def go():
        lim = AdaptiveLimit(2)
        a, b = await lim.acquire(), await lim.acquire()
        third = asyncio.ensure_future(lim.acquire())
        await asyncio.sleep(0.01)
        assert not third.done() and lim.in_flight == 2
        await lim.release(a)
        await asyncio.wait_for(third, 1)
        assert lim.in_flight == 2
        await lim.release(b)
        await lim.release(third.result())

    asyncio.run(go())


def _stats(stats_url: str, times: bool = False) -> dict:
    with urllib.request.urlopen(stats_url + ("?times=1" if times else ""), timeout=5) as r:
        return json.loads(r.read())


def test_adaptive_concurrency_settles_under_a_servers_limit(fake_openai):
    url, stats = fake_openai("--latency", "0.05", "--max-in-flight", "4")

    async def go():
        model = Model(LeanOpenAIBackend("fake", base_url=url), max_concurrency=32, retry=RetryPolicy(max_attempts=50, base_delay=0.01, max_delay=0.05))
        msgs = [{"role": "user", "content": "Answer: ?"}]
        out = await asyncio.gather(*(model.complete(msgs, sample=i) for i in range(200)))
        await model.aclose()
        return model, out

    model, out = asyncio.run(go())
    assert len(out) == 200 and all(c.text.startswith("Answer:") for c in out)
    s = _stats(stats)
    assert s["refused"] == model.rate_limited > 0 and model.limit.backoffs >= 2
    assert model.limit.current < 32  # it backed off from 32 towards the server's 4
    assert s["peak_in_flight"] <= 4


def test_without_adaptation_more_requests_are_refused(fake_openai):
    """The same load with a fixed limit of 32: far more refusals than with AIMD."""
    results = {}
    for adaptive in (True, False):
        url, stats = fake_openai("--latency", "0.05", "--max-in-flight", "4")

        async def go():
            model = Model(LeanOpenAIBackend("fake", base_url=url), max_concurrency=32, adaptive=adaptive, retry=RetryPolicy(max_attempts=100, base_delay=0.01, max_delay=0.05))
            await asyncio.gather(*(model.complete([{"role": "user", "content": "Answer: ?"}], sample=i) for i in range(150)))
            await model.aclose()

        asyncio.run(go())
        results[adaptive] = _stats(stats)["refused"]
    assert results[False] > 2 * results[True]


def test_requests_per_minute_against_a_server(fake_openai):
    """600 requests per minute = 10/s with at most one second banked: no one-second window
    at the server ever sees more than 10 + 10 arrivals."""
    url, stats = fake_openai()

    async def go():
        model = Model(LeanOpenAIBackend("fake", base_url=url), max_concurrency=64, rate=RateLimiter(requests_per_minute=600))
        await asyncio.gather(*(model.complete([{"role": "user", "content": "Answer: ?"}], sample=i) for i in range(30)))
        await model.aclose()

    asyncio.run(go())
    times = sorted(_stats(stats, times=True)["times"])
    assert len(times) == 30
    busiest = max(sum(1 for t in times if s <= t < s + 1.0) for s in times)
    assert busiest <= 20
    assert times[-1] - times[0] >= 1.5  # 30 calls cannot fit into the first second


def test_rate_limits_reach_the_model_as_backoffs_not_failures():
    """A backend that refuses twice then answers: two rate-limit retries, one success."""

    class Refusing:
        identity, serialized, n = "x", False, 0

        async def complete(self, messages, settings):
            self.n += 1
            if self.n <= 2:
                raise BackendError("429", retryable=True, retry_after=0.0, rate_limited=True)
            return Completion("ok", 1, 1)

        async def aclose(self):
            pass

    async def go():
        model = Model(Refusing(), GenerationSettings())
        c = await model.complete([{"role": "user", "content": "hi"}])
        return model, c

    model, c = asyncio.run(go())
    assert c.text == "ok" and model.rate_limited == 2 and model.retries == 2 and model.limit.backoffs == 2


def test_a_servers_retry_after_is_waited_at_least_and_spread_out():
    """Calls refused together must not all come back at the same instant (against a server
    that refuses every Nth request, lock-step retries can hit the refusal again and again)."""
    from agorabench.models.base import BackendError

    err = BackendError("429", retryable=True, retry_after=0.2, rate_limited=True)
    waits = [RetryPolicy().delay(1, err) for _ in range(200)]
    assert all(0.2 <= w <= 0.25 for w in waits)
    assert max(waits) - min(waits) > 0.02
