"""Whole runs against a server whose replies or pace once ended a study (issue 28, items 1, 2
and 8): token counts no database holds (2^63) or of the wrong type, on SQLite and PostgreSQL,
and a server that stops answering for a few seconds in the middle of a run."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time

import pytest
from aiohttp import web

from support.fake_openai import answer_for
from support.helpers import run_agora
from support.studies import envy_points, model, paper_grid, scripted


class Server:
    """An OpenAI-compatible chat server on a thread of its own: valid answers (as the fake
    server gives), each reporting ``usage``; with ``hang_after`` N, the requests that arrive
    within ``hang_for`` seconds of the (N+1)-th get no answer within any client's timeout."""

    def __init__(self, usage: dict | None = None, hang_after: int | None = None, hang_for: float = 0.0) -> None:
        self.usage = usage or {"prompt_tokens": 10, "completion_tokens": 2}
        self.hang_after, self.hang_for = hang_after, hang_for
        self.requests = 0
        self.hung = 0
        self.began: float | None = None

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests += 1
        if self.hang_after is not None and self.requests > self.hang_after:
            self.began = self.began or time.monotonic()
            if time.monotonic() - self.began < self.hang_for:
                self.hung += 1
                await asyncio.sleep(30)
        text = answer_for(body.get("messages", []), False)
        return web.json_response({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}], "usage": self.usage})

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": []})

    def __enter__(self) -> "Server":
        started = threading.Event()
        self.loop = asyncio.new_event_loop()

        async def serve():
            app = web.Application()
            app.router.add_post("/v1/chat/completions", self.chat)
            app.router.add_get("/v1/models", self.models)
            self.runner = web.AppRunner(app, shutdown_timeout=0.1)
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"
            started.set()

        def main():
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(serve())
            self.loop.run_forever()

        self.thread = threading.Thread(target=main, daemon=True)
        self.thread.start()
        assert started.wait(30)
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


def _study(write_study, url: str, moves=("B",), timeout: float = 30, **entry) -> str:
    remote = model("remote", "openai/fake", base_url=url, timeout=timeout, max_attempts=5, **entry)
    return write_study(envy_points("replies", [remote, scripted("b", "always-b")], grid=paper_grid(peer_move=list(moves))))


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 2**63, "completion_tokens": 2**63 + 5, "total_tokens": 2**64},
        {"prompt_tokens": "12", "completion_tokens": [3]},
    ],
    ids=["2^63", "wrong-type"],
)
def test_token_counts_no_database_holds_neither_stop_the_run_nor_fail_a_game(usage, make_db, write_study, tmp_path):
    """A server reporting ``prompt_tokens`` of 2^63 once failed the group commit ("Python int
    too large to convert to SQLite INTEGER", PostgreSQL's "integer out of range"), stopped the
    run asking to free disk space, and left the reply in the response cache so that every later
    run stopped on the same game; counts of the wrong type failed each game with a TypeError.
    Now they are unknown (0), said once per model, and every game is stored."""
    db = make_db("tokens")
    with Server(usage=usage) as server:
        path = _study(write_study, server.url)
        res = run_agora("run", str(path), "--db", db, "--quiet", timeout=300)
        assert res.returncode == 0 and "24 played, 0 errors" in res.stdout, res.stdout + res.stderr
        warnings = [line for line in res.stderr.splitlines() if "not token counts" in line]
        assert len(warnings) == 1 and "counted as unknown (0)" in warnings[0], res.stderr
        assert "disk space" not in res.stderr
        # the answers were cached clean: a second database replays them from the first's cache
        asked = server.requests
        again = tmp_path / "again.db"
        res = run_agora("run", str(path), "--db", str(again), "--cache", db, "--quiet", timeout=300)
        assert res.returncode == 0 and "24 played, 0 errors" in res.stdout, res.stdout + res.stderr
        assert server.requests == asked
    con = sqlite3.connect(again)
    assert con.execute("select count(*), coalesce(max(prompt_tokens), 0), coalesce(max(completion_tokens), 0) from turns where valid").fetchone() == (72, 0, 0)


def test_a_server_that_stops_answering_for_a_few_seconds_costs_the_run_no_game(write_study, tmp_path):
    """A server that hung for 10 s once failed 120 of 576 games within a second and ended the
    run, although it answered again 5 s later: after three timed-out calls in a row the calls
    now wait while one test call at a time finds out whether the server answers again."""
    with Server(hang_after=8, hang_for=4.0) as server:
        path = _study(write_study, server.url, moves=("A", "B", "C", "D"), timeout=1)
        started = time.monotonic()
        res = run_agora("run", str(path), "--db", str(tmp_path / "h.db"), "--quiet", "--concurrency", "4", timeout=300)
        took = time.monotonic() - started
        hung = server.hung
    assert hung >= 3  # the stall was seen
    assert res.returncode == 0 and "96 played, 0 errors" in res.stdout, res.stdout + res.stderr
    assert "stopped answering for a while" in res.stderr, res.stderr
    assert took < 120, took
