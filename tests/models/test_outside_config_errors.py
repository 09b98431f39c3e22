"""Outside agents (models/outside.py) against a loopback HTTP server: a 4xx that says the agent
is not spoken to as it expects (405 to everything, 415, 410, 418) stops the agent in one line
after one request, while 400 / 422 stay a refusal of one request and 408 / 409 / 429 are retried;
a NUL escaped in an answer's JSON never reaches the play side."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from agorabench.models.base import BackendError
from agorabench.models.model import RetryPolicy
from agorabench.models.outside import OutsideClient


class OneAnswer:
    """Answers every POST with ``status`` and ``body`` (as a server whose route takes only GET
    answers 405 with an Allow header); counts requests."""

    def __init__(self) -> None:
        self.status, self.body, self.requests = 200, b'{"action": {}}', 0
        me = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                me.requests += 1
                self.send_response(me.status)
                if me.status == 405:
                    self.send_header("Allow", "GET")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(me.body)))
                self.end_headers()
                self.wfile.write(me.body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/act"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


@pytest.fixture
def agent() -> Iterator[OneAnswer]:
    server = OneAnswer()
    yield server
    server.http.shutdown()
    server.http.server_close()


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
    agent.status, agent.body = status, b'{"detail": "Method Not Allowed"}'
    (first, second), client = _ask_twice(agent.url)
    assert isinstance(first, BackendError) and first.fatal and not first.retryable
    text = str(first)
    assert "\n" not in text and f"HTTP {status}" in text and "remaining games stop" in text, text
    assert isinstance(second, BackendError) and str(second) == text  # the second call fails at once
    assert agent.requests == 1 and client.dead == text


@pytest.mark.parametrize("status", [400, 422])
def test_400_and_422_stay_a_refusal_of_one_request(agent, status):
    agent.status, agent.body = status, b'{"error": "not this offer"}'
    (first, second), client = _ask_twice(agent.url)
    assert first.data is None and f"HTTP {status}" in (first.problem or "")
    assert second.data is None and client.dead is None and agent.requests == 2


def test_a_nul_in_the_answer_is_dropped(agent):
    agent.body = b'{"action": {"message": "=cmd\\u0000|calc", "n\\u0000ame": ["a\\u0000"]}, "response": "hi\\u0000"}'
    (first, _), _ = _ask_twice(agent.url)
    assert first.data == {"action": {"message": "=cmd|calc", "name": ["a"]}, "response": "hi"}
