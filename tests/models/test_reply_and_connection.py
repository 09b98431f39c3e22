"""A model's reply and its connection (issue 28, items 1-3 and 5-8): token counts that are not
counts (2^63, "12", [3], NaN, ...) are unknown, never stored or cached as they came; a reported
usage of 10^30 never makes the per-minute limiter wait for ever; the probe reads a listing to its
end and says a server's problem once; bytes on an idle connection are never buffered; model
entries on one server share one pool of connections; a server that stalls for a while is
tested again and its calls go on."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import orjson
import pytest

from agorabench.models.base import BackendError, Completion, GenerationSettings
from agorabench.models.http11 import HTTP11Client
from agorabench.models.limits import RateLimiter
from agorabench.models.model import Breaker, Model, RetryPolicy
from agorabench.models.probe import list_models, probe_many
from agorabench.models.transport.responses import completion_from_response
from agorabench.models.transport.wire import completion_from_json

#: Values a server once reported as token counts; none is a count.
NOT_COUNTS = [2**63, 10**30, "12", [3], 1.5, float("nan"), -1, True, {"n": 1}]


# 1-2. token counts that are not counts -------------------------------------------------------


@pytest.mark.parametrize("value", NOT_COUNTS, ids=repr)
def test_chat_and_responses_readers_record_a_value_that_is_no_count_as_unknown(value):
    chat = completion_from_json(
        {
            "choices": [{"message": {"content": "Answer: 3"}}],
            "usage": {"prompt_tokens": value, "completion_tokens": value, "total_tokens": value, "prompt_tokens_details": {"cached_tokens": value}, "completion_tokens_details": {"reasoning_tokens": value}},
        }
    )
    assert (chat.prompt_tokens, chat.completion_tokens, chat.cached_tokens, chat.reasoning_tokens) == (None, None, 0, None)  # unknown: NULL, not 0 (issue 42 item 9)
    assert "prompt_tokens" in chat.extra["usage_dropped"]
    resp = completion_from_response(
        {
            "status": "completed",
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "Answer: 3"}]}],
            "usage": {"input_tokens": value, "output_tokens": value, "input_tokens_details": {"cached_tokens": value}, "output_tokens_details": {"reasoning_tokens": value}},
        }
    )
    assert (resp.prompt_tokens, resp.completion_tokens, resp.cached_tokens, resp.reasoning_tokens) == (None, None, 0, None)
    assert "input_tokens" in resp.extra["usage_dropped"]


def test_counts_within_the_bound_are_kept_and_a_usage_that_is_no_object_is_none():
    c = completion_from_json({"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": 10**9, "completion_tokens": 7}})
    assert (c.prompt_tokens, c.completion_tokens, c.extra) == (10**9, 7, {})
    c = completion_from_json({"choices": [{"message": {"content": "x"}}], "usage": [12, 3]})
    assert (c.prompt_tokens, c.completion_tokens) == (None, None)


def test_the_anthropic_reader_records_a_value_that_is_no_count_as_unknown(monkeypatch):
    pytest.importorskip("anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    from agorabench.models.anthropic import AnthropicBackend

    backend = AnthropicBackend("claude-test")
    usage = SimpleNamespace(input_tokens="12", output_tokens=[3], cache_read_input_tokens=2**63, cache_creation_input_tokens=None)
    reply = SimpleNamespace(content=[SimpleNamespace(type="text", text="Answer: 3")], usage=usage, stop_reason="end_turn")

    async def create(**kwargs):
        return reply

    backend.client = SimpleNamespace(messages=SimpleNamespace(create=create))
    c = asyncio.run(backend.complete([{"role": "user", "content": "pick"}], GenerationSettings()))
    assert (c.text, c.prompt_tokens, c.completion_tokens, c.cached_tokens) == ("Answer: 3", None, None, 0)
    assert set(c.extra["usage_dropped"]) == {"input_tokens", "output_tokens", "cache_read_input_tokens"}


class Replies:
    """A backend whose every reply reports ``usage`` (set on the Completion as it is)."""

    serialized = False
    identity = "fake:replies"

    def __init__(self, **usage):
        self.usage = usage

    async def complete(self, messages, settings):
        return Completion(text="Answer: 3", **self.usage)

    async def aclose(self):
        pass


class DictCache:
    def __init__(self):
        self.entries: dict[str, Completion] = {}

    def get(self, key):
        return self.entries.get(key)

    def put(self, key, identity, completion):
        self.entries[key] = completion


def test_a_reply_of_any_backend_with_counts_of_the_wrong_type_is_kept_and_said_once():
    """Item 2: ``{"prompt_tokens": "12", "completion_tokens": [3]}`` from a backend that passes
    them on (the embedded model's did) once failed a game with a valid answer (TypeError)."""
    cache = DictCache()
    model = Model(Replies(prompt_tokens="12", completion_tokens=[3], reasoning_tokens=float("nan")), cache=cache)

    async def go():
        return [await model.complete([{"role": "user", "content": f"pick {i}"}]) for i in range(3)]

    replies = asyncio.run(go())
    assert all(r.text == "Answer: 3" and (r.prompt_tokens, r.completion_tokens, r.reasoning_tokens) == (None, None, None) for r in replies)
    assert (model.prompt_tokens, model.completion_tokens, model.reasoning_tokens, model.cost) == (0, 0, 0, 0.0)
    assert all((c.prompt_tokens, c.completion_tokens) == (None, None) for c in cache.entries.values())  # cleaned before the cache
    lines = [w for w in model.warnings if "not token counts" in w]
    assert len(lines) == 1 and "prompt_tokens = '12'" in lines[0] and "completion_tokens = [3]" in lines[0], model.warnings


def test_an_absurd_count_never_reaches_the_cache_and_one_cached_before_is_cleaned():
    cache = DictCache()
    model = Model(Replies(prompt_tokens=2**63, completion_tokens=5), cache=cache)
    reply = asyncio.run(model.complete([{"role": "user", "content": "pick"}]))
    assert (reply.prompt_tokens, reply.completion_tokens) == (None, 5)
    (stored,) = cache.entries.values()
    assert stored.prompt_tokens is None
    # an entry cached by an earlier version, as it came
    stored.prompt_tokens, stored.completion_tokens = 2**63, 10**30
    again = Model(Replies(prompt_tokens=1, completion_tokens=1), cache=cache)
    hit = asyncio.run(again.complete([{"role": "user", "content": "pick"}]))
    assert hit.cached and (hit.prompt_tokens, hit.completion_tokens) == (None, None)
    assert any("not token counts" in w for w in again.warnings)


def test_a_turn_with_a_count_no_database_column_holds_is_stored(tmp_path):
    """The last defence: whatever reaches the store as a count, the game is written (2^63 once
    failed SQLite's group commit, and 2^31 fails PostgreSQL's INTEGER)."""
    from agorabench.records import TurnRecord
    from agorabench.store.layout import game_rows
    from agorabench.store.store import Store

    def turn(i, prompt, completion, cost):
        return TurnRecord(index=i, role="a", phase="p", messages=[{"role": "user", "content": "hi"}], raw="x", action=None, valid=True, retries=0, error=None,
                          prompt_tokens=prompt, completion_tokens=completion, cost=cost, latency=0.1, cached=False)

    turns = [turn(0, 2**63, 10**30, float("inf")), turn(1, 2**31, -1, float("nan")), turn(2, 12, 3, 0.5)]
    fields = dict(id="g1", study="s", game="envy.points", config={}, seats={"a": "m"}, repeat=0, seed=1, prompt_version="1", status="done", outcome={}, metrics={}, error=None, turn_records=turns)
    rows = game_rows(**fields)["turns"]
    assert [(r["prompt_tokens"], r["completion_tokens"], r["cost"]) for r in rows] == [(None, None, None), (None, None, None), (12, 3, 0.5)]
    store = Store(tmp_path / "s.db")
    store.save_games([game_rows(**fields)])
    assert store.engine.connect().exec_driver_sql("select count(*) from turns").scalar() == 3


# 3. a reported usage of 10^30 and the per-minute limiter ------------------------------------


def test_a_usage_beyond_a_minutes_budget_makes_no_wait_longer_than_a_minute():
    now = [0.0]
    waits: list[float] = []

    async def sleep(s):
        waits.append(s)
        now[0] += s

    rate = RateLimiter(tokens_per_minute=6000, clock=lambda: now[0], sleep=sleep)

    async def go():
        await rate.acquire(100)
        rate.settle(100, 10**30)
        await rate.acquire(100)
        await rate.acquire(10**12)  # a reservation beyond the budget too
        await rate.acquire(100)

    asyncio.run(go())
    assert waits and max(waits) <= 60.0 and sum(waits) <= 3 * 60.0, waits
    assert rate.over_budget == 10**12 or rate.over_budget == 10**30


def test_a_call_counted_beyond_a_minutes_budget_is_said_once():
    model = Model(Replies(prompt_tokens=900_000_000, completion_tokens=5), rate=RateLimiter(tokens_per_minute=10_000))

    async def go():
        await model.complete([{"role": "user", "content": "pick"}])
        return model.rate._wait_for()

    wait = asyncio.run(go())
    assert wait <= 60.0
    lines = [w for w in model.warnings if "tokens_per_minute" in w]
    assert len(lines) == 1 and "900000005 tokens" in lines[0], model.warnings


# 5. the probe reads a listing to its end; a server's problem once ---------------------------


class Listing:
    """A ``/models`` server that sends its listing in ``pieces`` (bytes each), ``gap`` seconds
    apart, chunked."""

    def __init__(self, pieces, gap=0.05):
        self.pieces, self.gap = pieces, gap

    async def __aenter__(self):
        from aiohttp import web

        async def models(request):
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            await resp.prepare(request)
            for i, piece in enumerate(self.pieces):
                if i:
                    await asyncio.sleep(self.gap)
                await resp.write(piece)
            await resp.write_eof()
            return resp

        app = web.Application()
        app.router.add_get("/v1/models", models)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"
        return self

    async def __aexit__(self, *exc):
        await self.runner.cleanup()


def _listing(names):
    return orjson.dumps({"object": "list", "data": [{"id": n, "object": "model", "owned_by": "someone"} for n in names]})


@pytest.mark.parametrize("size", ["767 bytes in two pieces", "359 KB in many"])
def test_the_probe_reads_a_listing_sent_in_pieces_to_its_end(size):
    if size.startswith("767"):
        body = _listing([f"model-{i}" for i in range(13)])
        pieces = [body[:400], body[400:]]
    else:
        body = _listing([f"organisation-{i // 10}/a-long-model-name-{i}" for i in range(6000)])
        pieces = [body[i : i + 16_384] for i in range(0, len(body), 16_384)]

    async def go():
        async with Listing(pieces, gap=0.05 if len(pieces) == 2 else 0.002) as server:
            return await list_models(server.url, "key", timeout=10)

    problem, ids = asyncio.run(go())
    assert problem is None, problem
    assert ids and ids[0].endswith("0")


def test_a_problem_of_the_server_is_said_once_for_all_its_models():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    url = f"http://127.0.0.1:{port}/v1"
    targets = {f"m{i}": (url, "key", f"model-{i}", 2.0) for i in range(1000)}
    problems = asyncio.run(probe_many(targets))
    said = [p for p in problems.values() if p]
    assert len(said) == 1 and "unreachable" in said[0] and "'m1', 'm2', 'm3' and 996 more" in said[0], said[:2]


# 6. bytes on an idle connection ---------------------------------------------------------------


def _answer(body: bytes = b'{"ok": true}') -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def _read_request(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
    return await reader.readexactly(length)


def test_bytes_sent_to_an_idle_connection_are_dropped_with_it():
    """A server that answers one request, then floods the socket: the client buffers none of
    it (it once held 2.21 GB) and its next request is answered on a new connection."""
    flood_total = 64 * 1024 * 1024

    async def go():
        connections = []

        async def handle(reader, writer):
            connections.append(writer)
            first = len(connections) == 1
            try:
                while True:
                    await _read_request(reader)
                    writer.write(_answer())
                    await writer.drain()
                    if first:
                        chunk = b"x" * 65536
                        for _ in range(flood_total // len(chunk)):
                            writer.write(chunk)
                            await writer.drain()
                        return
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = HTTP11Client(f"http://127.0.0.1:{port}/v1/chat/completions", {}, timeout=10)
        status, _, body = await client.post(b"{}")
        assert status == 200 and body == b'{"ok": true}'
        peak = 0
        for _ in range(50):  # while the server floods
            await asyncio.sleep(0.01)
            peak = max(peak, sum(len(c.buf) for c in client._all))
        status, _, body = await client.post(b"{}")
        await client.aclose()
        server.close()
        return peak, status, body, len(connections)

    peak, status, body, n = asyncio.run(go())
    assert peak < 1024 * 1024, peak
    assert status == 200 and body == b'{"ok": true}' and n == 2


# 7. one pool of connections per server ----------------------------------------------------------


def test_transports_of_one_server_share_one_client_until_the_last_closes():
    from agorabench.models.transport import Endpoint
    from agorabench.models.transport.lean import _POOLS, LeanTransport

    async def go():
        server = await asyncio.start_server(_chat_handler, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        a, b = (LeanTransport(Endpoint(url, url, "k", None, 5.0)) for _ in range(2))
        other = LeanTransport(Endpoint(url, url, "another key", None, 5.0))
        for t in (a, b, other):
            await t.send({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert a._client is b._client and a._client is not other._client
        shared = a._client
        await a.aclose()
        assert shared._all  # b still uses it
        await b.aclose()
        assert not shared._all
        await other.aclose()
        pools = _POOLS.get(asyncio.get_running_loop())
        server.close()
        return pools

    assert not asyncio.run(go())


async def _chat_handler(reader, writer):
    try:
        while True:
            await _read_request(reader)
            writer.write(_answer(orjson.dumps({"choices": [{"message": {"content": "Answer: 3"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


THOUSAND_MODELS = textwrap.dedent(
    """
    import asyncio, resource
    from agorabench.models.model import Model
    from agorabench.models.openai_compat import ChatCompletionsBackend

    resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    BODY = b'{{"choices": [{{"message": {{"content": "Answer: 3"}}}}], "usage": {{"prompt_tokens": 3, "completion_tokens": 2}}}}'
    ANSWER = b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(BODY), BODY)

    async def _chat_handler(reader, writer):  # a keep-alive chat-completions server
        try:
            while True:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
                length = next(int(l.split(b":")[1]) for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length:"))
                await reader.readexactly(length)
                writer.write(ANSWER)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(_chat_handler, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{{server.sockets[0].getsockname()[1]}}/v1"
        models = [Model(ChatCompletionsBackend(f"m{{i}}", base_url=url, transport="lean", timeout=10)) for i in range(1000)]
        gate = asyncio.Semaphore(32)  # a run's games in flight

        async def one(m):
            async with gate:
                return await m.complete([{{"role": "user", "content": "pick"}}])

        replies = await asyncio.gather(*(one(m) for m in models), return_exceptions=True)
        failed = [r for r in replies if isinstance(r, BaseException)]
        for m in models:
            await m.aclose()
        server.close()
        print("failed", len(failed), repr(failed[:1]))

    asyncio.run(main())
    """
)


def test_a_thousand_model_entries_on_one_server_stay_within_256_open_files(tmp_path):
    """About 1,000 model entries on one server once exhausted 1,024 open files: each held
    its own idle connection. They share one pool now."""
    script = tmp_path / "thousand.py"
    script.write_text(THOUSAND_MODELS.format())
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "failed 0 " in res.stdout, res.stdout + res.stderr[-2000:]


# 8. a stalled server is tested again ----------------------------------------------------------


class Hangs:
    """A backend that answers, times out every call sent in ``window`` seconds after its
    ``after``-th call, then answers again."""

    serialized = False
    identity = "fake:hangs"
    base_url = "http://hangs.test/v1"

    def __init__(self, after: int, window: float | None):
        self.after, self.window = after, window
        self.calls = 0
        self.began: float | None = None

    async def complete(self, messages, settings):
        self.calls += 1
        await asyncio.sleep(0.01)
        if self.calls > self.after:
            self.began = self.began if self.began is not None else time.monotonic()
            if self.window is None or time.monotonic() - self.began < self.window:
                await asyncio.sleep(0.05)
                raise BackendError("timeout after 0.05s", retryable=True, timed_out=True)
        return Completion(text="Answer: 3", prompt_tokens=1, completion_tokens=1)

    async def aclose(self):
        pass


def _play(backend, games=40, turns=3, cooldown=0.2):
    breakers = {backend.base_url: Breaker(3, cooldown=cooldown, max_cooldown=0.4)}
    model = Model(backend, retry=RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.02), breakers=breakers, max_concurrency=8)
    gate = asyncio.Semaphore(8)

    async def game(g):
        async with gate:
            for t in range(turns):
                await model.complete([{"role": "user", "content": f"game {g} turn {t}"}])

    async def go():
        return await asyncio.gather(*(game(g) for g in range(games)), return_exceptions=True)

    started = time.monotonic()
    outcomes = asyncio.run(go())
    return model, breakers[backend.base_url], [o for o in outcomes if isinstance(o, BaseException)], time.monotonic() - started


def test_a_server_that_stalls_for_a_while_is_tested_again_and_its_games_go_on():
    backend = Hangs(after=10, window=0.5)
    model, breaker, failed, _ = _play(backend)
    assert not failed, failed[:2]
    assert breaker.recovered >= 1 and breaker.open is None and breaker.stalled is None
    assert any("stopped answering for a while" in w for w in model.warnings), model.warnings
    # while stalled, one test call at a time: few calls beyond the games' own
    assert backend.calls <= 40 * 3 + 3 + 8 + 10, backend.calls


def test_a_server_that_never_answered_is_down_after_one_test_and_its_calls_fail_at_once():
    backend = Hangs(after=0, window=None)
    model, breaker, failed, took = _play(backend)
    assert len(failed) == 40 and all("is stalled" in str(f) for f in failed), failed[:2]
    assert breaker.open is not None and "remaining calls in this run fail at once" in breaker.open
    assert backend.calls <= 8 + 8 + 1 + 8, backend.calls  # the first timeouts, those in flight, one test
    assert took < 5, took


def test_a_server_that_answered_before_is_down_after_its_tests_time_out_through_the_longest_cool_down():
    backend = Hangs(after=10, window=None)
    model, breaker, failed, took = _play(backend)
    assert breaker.open is not None and failed
    assert took < 10, took
    assert math.isfinite(took)
