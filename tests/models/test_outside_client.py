"""The wire side of outside agents (models/outside.py) against a real HTTP server on 127.0.0.1
that answers from a script: which statuses are retried, which stop the agent, which are an
unusable answer, the time limit, the key and the request body."""

from __future__ import annotations

import asyncio
import json
import math
import time
from typing import Any, Iterator

import pytest
from pydantic import BaseModel

from agorabench.models.base import BackendError
from agorabench.models.model import RetryPolicy
from agorabench.models.outside import OutsideClient, encode, jsonable
from agorabench.redact import redact
from support.outside_agent import ScriptedAgent, scripted_agent


@pytest.fixture
def agent() -> Iterator[ScriptedAgent]:
    with scripted_agent() as server:
        yield server


FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02)


def ask(url: str, payload: dict[str, Any] | None = None, **options: Any) -> Any:
    async def go() -> Any:
        client = OutsideClient(url, retry=FAST, **options)
        try:
            return await client.ask(payload or {"role": "alice"}), client
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_a_json_object_is_the_answer_and_the_body_is_the_request_as_json(agent):
    agent.script = [(200, b'{"action": {"offer": 4}, "response": "hi"}', {}, 0.0)]
    answer, client = ask(agent.url, {"role": "proposer", "observation": {"pie": 10, "odds": float("nan")}})
    assert answer.data == {"action": {"offer": 4}, "response": "hi"} and answer.problem is None and not answer.timed_out
    headers, body = agent.seen[0]
    assert headers["Content-Type"] == "application/json" and "Authorization" not in headers and "X-API-Key" not in headers
    assert json.loads(body) == {"role": "proposer", "observation": {"pie": 10, "odds": None}}
    assert client.calls == 1 and client.retries == 0


@pytest.mark.parametrize("status", [429, 500, 503, 408])
def test_busy_or_failing_agents_are_asked_again_then_answer(agent, status):
    agent.script = [(status, b"busy", {"Retry-After": "0"}, 0.0), (200, b'{"action": {"x": 1}}', {}, 0.0)]
    answer, client = ask(agent.url)
    assert answer.data == {"action": {"x": 1}} and len(agent.seen) == 2 and client.retries == 1


def test_an_agent_that_keeps_failing_raises_after_max_attempts(agent):
    agent.script = [(502, b"bad gateway", {}, 0.0)]
    with pytest.raises(BackendError, match=r"HTTP 502: bad gateway \(after 3 attempts\)") as err:
        ask(agent.url, max_attempts=3)
    assert not err.value.retryable and len(agent.seen) == 3


@pytest.mark.parametrize("status,said", [(401, "unauthorised (HTTP 401)"), (403, "unauthorised (HTTP 403)"), (404, "not found (HTTP 404)")])
def test_refusals_stop_the_agent_so_later_calls_fail_at_once(agent, status, said):
    agent.script = [(status, b"no", {}, 0.0)]

    async def go() -> tuple[str, str]:
        client = OutsideClient(agent.url, retry=FAST)
        try:
            messages = []
            for _ in range(2):
                with pytest.raises(BackendError) as err:
                    await client.ask({})
                assert err.value.fatal
                messages.append(str(err.value))
            return messages[0], messages[1]
        finally:
            await client.aclose()

    first, second = asyncio.run(go())
    assert said in first and first == second and len(agent.seen) == 1


@pytest.mark.parametrize(
    "status,body,said",
    [
        (200, b"yes please", "the answer is not JSON (Expecting value at character 0)"),
        (200, b'"accept"', "the answer is JSON str, not an object"),
        (200, b"   ", "the answer was empty"),
        (200, b"[" * 100_000 + b"]" * 100_000, "longer than 20,000 characters"),
        (200, b"[" * 5_000 + b"]" * 5_000, "nested too deep"),
        (400, b"I am a teapot", "the agent answered HTTP 400: I am a teapot"),
        (422, b"", "the agent answered HTTP 422: (empty body)"),
    ],
)
def test_answers_that_cannot_be_used_say_why_and_are_not_retried(agent, status, body, said):
    agent.script = [(status, body, {}, 0.0)]
    answer, client = ask(agent.url)
    assert answer.data is None and said in (answer.problem or ""), answer.problem
    assert len(agent.seen) == 1 and client.retries == 0


def test_an_answer_over_the_time_limit_is_a_timeout_and_is_not_sent_again(agent):
    agent.script = [(200, b'{"action": {}}', {}, 1.5)]
    started = time.perf_counter()
    answer, client = ask(agent.url, timeout=0.3)
    assert answer.timed_out and answer.data is None and time.perf_counter() - started < 1.2
    assert len(agent.seen) == 1 and client.timeouts == 1


def test_the_key_goes_as_a_bearer_token_and_is_a_secret(agent, monkeypatch):
    key = "sk-agent-5f2e8c1d9a7b"
    monkeypatch.setenv("MY_AGENT_KEY", key)
    ask(agent.url, api_key_env="MY_AGENT_KEY")
    headers, _ = agent.seen[0]
    assert headers["Authorization"] == f"Bearer {key}" and headers["X-API-Key"] == key
    assert redact(f"the key was {key}") == "the key was [redacted]"
    monkeypatch.delenv("MY_AGENT_KEY")
    with pytest.raises(BackendError, match="api_key_env = 'MY_AGENT_KEY', but MY_AGENT_KEY is not set"):
        OutsideClient(agent.url, api_key_env="MY_AGENT_KEY")


def test_credentials_in_the_url_go_as_basic_authentication_and_never_print(agent):
    url = agent.url.replace("http://", "http://me:hunter2-secret@")
    ask(url)
    headers, _ = agent.seen[0]
    assert headers["Authorization"].startswith("Basic ") and "hunter2" not in repr(OutsideClient(url))


def test_a_refused_connection_is_retried_then_named(agent):
    url = agent.url
    agent.close()
    with pytest.raises(BackendError, match=r"connection refused \(is the agent running\?\) \(after 2 attempts\)"):
        ask(url, max_attempts=2)


def test_request_bodies_are_plain_json_whatever_the_observation_holds():
    class Offer(BaseModel):
        price: float

    value = {"a": (1, 2), "b": {3, 1}, "c": Offer(price=2.5), "d": math.inf, 4: "four", "e": object}
    plain = jsonable(value)
    assert plain == {"a": [1, 2], "b": [1, 3], "c": {"price": 2.5}, "d": None, "4": "four", "e": str(object)}
    assert json.loads(encode({"x": value})) == {"x": plain}
