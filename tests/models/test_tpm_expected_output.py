"""Issue 42 item 8: a ``tokens_per_minute`` far below ``max_tokens`` × concurrency no longer crawls
(30,000 tokens a minute with ``max_tokens = 8000`` once made 4 calls a minute whatever the
replies used): a call is held at its prompt plus the reply it is expected to write (the model's
mean reply so far; the bound before the first), reckoned when its turn comes, and a call that
gives tokens back wakes the waiting ones. When calls do wait long, the model says why, once."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request

from agorabench.models.base import Completion, GenerationSettings
from agorabench.models.limits import RateLimiter
from agorabench.models.model import Model
from agorabench.models.openai_compat import LeanOpenAIBackend

BIG = GenerationSettings(max_tokens=8000)


def test_short_replies_are_not_held_at_the_output_bound(fake_openai):
    """Against the loopback server (short answers, usage in whitespace words): 40 calls at 16 in
    flight under 30,000 tokens a minute finish in seconds, not in ten minutes."""
    url, stats = fake_openai()

    async def go() -> Model:
        model = Model(LeanOpenAIBackend("fake", base_url=url), BIG, max_concurrency=16, rate=RateLimiter(tokens_per_minute=30_000))
        try:
            await asyncio.wait_for(asyncio.gather(*(model.complete([{"role": "user", "content": f"Answer: {i}?"}], sample=i) for i in range(40))), 20)
        finally:
            await model.aclose()
        return model

    started = time.monotonic()
    model = asyncio.run(go())
    took = time.monotonic() - started
    assert json.load(urllib.request.urlopen(stats))["requests"] == 40 and model.replies == 40
    assert took < 10, took
    mean = model.completion_tokens / model.replies
    assert model.expected_output(BIG) == -(-model.completion_tokens // model.replies) and mean < 100  # held at the mean, not at 8,000
    assert not [w for w in model.warnings if "waited for tokens_per_minute" in w]  # no call waited long


class _Long:
    """A backend whose every reply is as long as the bound allows (a model that writes a lot)."""

    serialized, identity = False, "fake:long"

    async def complete(self, messages, settings):
        return Completion("Answer: 1", prompt_tokens=10, completion_tokens=settings.max_tokens)

    async def aclose(self) -> None:
        pass


def test_a_run_that_must_wait_says_why_once():
    now = [0.0]

    async def sleep(s: float) -> None:
        now[0] += s
        await asyncio.sleep(0)

    rate = RateLimiter(tokens_per_minute=30_000, clock=lambda: now[0], sleep=sleep)
    model = Model(_Long(), BIG, max_concurrency=16, rate=rate)

    async def go() -> None:
        await asyncio.gather(*(model.complete([{"role": "user", "content": "Answer?"}], sample=i) for i in range(6)))

    asyncio.run(go())
    assert model.replies == 6 and now[0] >= 60  # 6 × 8,010 tokens at 500 a second: the waits are real
    lines = [w for w in model.warnings if "waited for tokens_per_minute" in w]
    assert len(lines) == 1 and "tokens_per_minute = 30000" in lines[0] and "8,000 output tokens now" in lines[0], model.warnings


def test_a_reservation_is_reckoned_when_the_calls_turn_comes():
    """A call that waited is held at what is known when it goes, and a refund wakes it."""
    rate = RateLimiter(tokens_per_minute=600)  # 10 tokens a second, 10 banked

    async def go() -> tuple[int, float]:
        first = await rate.acquire(1000)  # in debt by 990: a second call would wait 99 s
        known = [1000]

        async def later() -> int:
            return await rate.acquire(lambda: known[0])

        started = time.monotonic()
        waiting = asyncio.ensure_future(later())
        await asyncio.sleep(0.05)
        known[0] = 5  # the first reply was short: the next call is held at 5
        rate.settle(first, 5)  # and gives back what it did not use
        second = await asyncio.wait_for(waiting, 5)
        return second, time.monotonic() - started

    second, took = asyncio.run(go())
    assert second == 5 and took < 2, (second, took)
