"""Outside agents (models/outside.py) against a loopback HTTP server: a 4xx that says the agent
is not spoken to as it expects (405 to everything, 415, 410, 418) stops the agent in one line
after one request, while 400 / 422 stay a refusal of one request and 408 / 409 / 429 are retried;
a NUL escaped in an answer's JSON never reaches the play side."""

from __future__ import annotations

import asyncio
from typing import Any, Iterator

import pytest

from agorabench.models.base import BackendError
from agorabench.models.model import RetryPolicy
from agorabench.models.outside import OutsideClient
from support.outside_agent import ScriptedAgent, scripted_agent


@pytest.fixture
def agent() -> Iterator[ScriptedAgent]:
    with scripted_agent() as server:
        yield server


def answer_always(agent: ScriptedAgent, status: int, body: bytes) -> None:
    """Every POST gets ``status`` and ``body`` as JSON (a 405 with an Allow header, as a server
    whose route takes only GET answers)."""
    headers = {"Allow": "GET"} if status == 405 else {}
    agent.script = [(status, body, {**headers, "Content-Type": "application/json"}, 0.0)]


FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02)


def _ask_twice(url: str) -> tuple[list[Any], OutsideClient]:
    async def go() -> tuple[list[Any], OutsideClient]:
        client = OutsideClient(url, retry=FAST, max_attempts=3)
        out: list[Any] = []
        try:
            for _ in range(2):
                try:
                    out.append(await client.ask({"role": "alice"}))
                except BackendError as exc:
                    out.append(exc)
        finally:
            await client.aclose()
        return out, client

    return asyncio.run(go())


@pytest.mark.parametrize("status", [405, 415, 410, 418])
def test_a_4xx_that_refuses_every_request_stops_the_agent_in_one_line(agent, status):
    answer_always(agent, status, b'{"detail": "Method Not Allowed"}')
    (first, second), client = _ask_twice(agent.url)
    assert isinstance(first, BackendError) and first.fatal and not first.retryable
    text = str(first)
    assert "\n" not in text and f"HTTP {status}" in text and "remaining games stop" in text, text
    assert isinstance(second, BackendError) and str(second) == text  # the second call fails at once
    assert agent.requests == 1 and client.dead == text


@pytest.mark.parametrize("status", [400, 422])
def test_400_and_422_stay_a_refusal_of_one_request(agent, status):
    answer_always(agent, status, b'{"error": "not this offer"}')
    (first, second), client = _ask_twice(agent.url)
    assert first.data is None and f"HTTP {status}" in (first.problem or "")
    assert second.data is None and client.dead is None and agent.requests == 2


def test_a_nul_in_the_answer_is_dropped(agent):
    answer_always(agent, 200, b'{"action": {"message": "=cmd\\u0000|calc", "n\\u0000ame": ["a\\u0000"]}, "response": "hi\\u0000"}')
    (first, _), _ = _ask_twice(agent.url)
    assert first.data == {"action": {"message": "=cmd|calc", "name": ["a"]}, "response": "hi"}
