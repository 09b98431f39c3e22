"""A small fault-injecting server on 127.0.0.1 that speaks the OpenAI chat-completions API
(``/v1/chat/completions``) and the Anthropic Messages API (``/v1/messages``).

Run as ``python tests/support/fake_openai.py PORT [options]``. Its answer is a deterministic function of
the request's messages, so tests know what a study must produce. Faults:

- ``--latency S``: every answer waits S seconds; ``--latency-file PATH``: once PATH exists, the
  seconds written in it replace S (a test outside the server's network slows a run, then ends it fast);
- ``--big-body gzip|endless|length``: chat answers too large to hold (a gzip bomb of 384 MiB, a
  chunked body without end, a Content-Length of 1 GiB);
- ``--rate-limit N``: answers 429 with ``Retry-After: 0.2`` to every Nth request (N > 0);
  ``--retry-after TEXT`` sends another value (``nan``, ``-5``, ``1e308``);
- ``--fail-first N``: the first N requests get HTTP 500;
- ``--always-fail``: every request gets HTTP 500;
- ``--not-found``: every chat call gets HTTP 404 (a wrong path or model); ``/models`` answers;
- ``--hang-first N``: the first N requests never answer within the client's timeout;
- ``--stall-chat``: ``/models`` answers, no chat call ever does (a stalled endpoint);
- ``--garbage``: answers text that is not a valid action;
- ``--poison KIND``: answers one of the poison replies of ``POISON`` (a lone surrogate, deep
  JSON nesting, non-finite or absurd numbers, half an emoji escaped inside JSON, megabytes of
  unclosed tags);
- ``--echo-key``: answers HTTP 401 whose body repeats the API key the client sent (as some
  servers do), also on ``/models``;
- ``--html-first N`` / ``--truncate-first N``: the first N chat requests get HTTP 200 with an
  HTML page / a JSON body cut in the middle;
- ``--models A,B``: the model names ``/v1/models`` lists (by default none);
- ``--never-answer``: every API request (``/models`` too) waits for ever; ``/stats`` answers;
- ``--max-in-flight N``: a request arriving while N others are being answered gets a 429 (a
  provider's concurrency limit; adaptive clients settle below it);
- ``--fast``: no fault, a leaner server for benchmarks (benchmarks/client.py): uvloop as its
  event loop where installed, request bodies read with orjson; answers are the same;
- ``--prefix-cache``: simulates a prompt cache and reports hits, chat-completions style
  (``usage.prompt_tokens_details.cached_tokens``: the longest prefix of whole messages seen
  before) and Anthropic style (``cache_read_input_tokens`` for the longest prefix ending at a
  ``cache_control`` breakpoint written before; breakpoints write their prefix).

Tokens are whitespace-separated words. ``GET /stats`` gives the number of requests (and of chat
requests carrying a temperature, a seed), of ``/models``
listings (``listings``), of 429s, the
most in flight at once, and with ``?times=1`` each request's arrival time (server clock); with
``?bodies=1`` the last 200 chat-completions request bodies.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import time
from collections import deque

from aiohttp import web


#: Replies that once crashed or stalled a study. ``\ud800`` is a lone surrogate (half of an
#: emoji); aiohttp sends it as the JSON escape ``\ud800``, as a cut-off model reply would be.
POISON = {
    "surrogate": "<response>\n  <choice>B</choice>\n  <reasoning>nice \ud83d</reasoning>\n</response>",
    "surrogate-text": "I pick \ud800 nothing",
    "deep-json": "[" * 100_000 + "]" * 100_000,
    "deep-object": '{"price": ' + '{"a": ' * 50_000 + "1" + "}" * 50_000 + "}",
    "infinity": '{"price": Infinity, "message": "free"}',
    "huge": '{"price": 1e308, "message": "all of it"}',
    "half-emoji": '{"price": 100, "message": "deal \\ud83d"}',
    "unclosed-tags": "<response><choice>" * 60_000,
    "long-number": "Answer: " + "1," * 200_000 + "x",
}


def answer_for(messages: list[dict], garbage: bool) -> str:
    """A valid answer in the format the last user message asks for, chosen by a hash."""
    if garbage:
        return "I would rather not pick anything today."
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
    text = " ".join(m.get("content", "") for m in messages if m.get("role") in ("system", "user"))
    if "<response>" in text or "XML" in text:
        return f"<response>\n  <choice>{'ABCD'[digest[0] % 4]}</choice>\n  <reasoning>hash pick</reasoning>\n</response>"
    return f"Answer: {digest[0] % 10}"


def _words(text: str) -> int:
    return len(text.split())


def _digest(prefix: list) -> str:
    return hashlib.sha256(json.dumps(prefix, sort_keys=True).encode()).hexdigest()


def _plain(content) -> str:
    """Message content as text (Anthropic content may be a list of blocks)."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def make_app(opts: argparse.Namespace) -> web.Application:
    state = {"n": 0, "listings": 0, "refused": 0, "in_flight": 0, "peak": 0, "times": [], "with_temperature": 0, "with_seed": 0, "bodies": deque(maxlen=200)}
    loads = json.loads
    if opts.fast:
        import orjson

        loads = orjson.loads
    seen: set[str] = set()  # prefix cache: digests of prompt prefixes

    def refuse_key(request: web.Request) -> web.Response:
        key = request.headers.get("Authorization", "").removeprefix("Bearer ")
        return web.json_response({"error": {"message": f"Incorrect API key provided: {key}. Check it.", "type": "invalid_request_error", "code": "invalid_api_key"}}, status=401)

    async def admit(kind: str, request: web.Request) -> web.Response | None:
        """Count the request and inject the configured faults (None: answer it)."""
        state["n"] += 1
        n = state["n"]
        state["times"].append(time.monotonic())
        if opts.never_answer:
            await asyncio.sleep(3600)
        if opts.echo_key and kind == "openai":
            return refuse_key(request)
        if n <= opts.html_first:
            return web.Response(text="<!doctype html><html><body><h1>Gateway</h1>Please log in.</body></html>", content_type="text/html")
        if n <= opts.truncate_first:
            return web.Response(text='{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "mess', content_type="application/json")
        error = (lambda message, kind_, status, headers=None: web.json_response({"type": "error", "error": {"type": kind_, "message": message}} if kind == "anthropic" else {"error": {"message": message, "type": kind_}}, status=status, headers=headers))
        if opts.always_fail or n <= opts.fail_first:
            return error("injected failure", "api_error", 500)
        if opts.not_found:
            return error("The model does not exist", "invalid_request_error", 404)
        if opts.rate_limit and n % opts.rate_limit == 0:
            state["refused"] += 1
            return error("slow down", "rate_limit_error", 429, {"Retry-After": opts.retry_after})
        if opts.max_in_flight and state["in_flight"] >= opts.max_in_flight:
            state["refused"] += 1
            return error("too many requests in flight", "rate_limit_error", 429, {"Retry-After": "0.05"})
        if n <= opts.hang_first or opts.stall_chat:
            await asyncio.sleep(3600)
        return None

    async def answering(coro):
        state["in_flight"] += 1
        state["peak"] = max(state["peak"], state["in_flight"])
        try:
            latency = opts.latency
            if opts.latency_file:
                try:
                    with open(opts.latency_file) as f:
                        latency = float(f.read())
                except (OSError, ValueError):
                    pass
            if latency:
                await asyncio.sleep(latency)
            return await coro
        finally:
            state["in_flight"] -= 1

    async def completions(request: web.Request) -> web.Response:
        refused = await admit("openai", request)
        if refused is not None:
            return refused
        body = loads(await request.read())
        state["with_temperature"] += "temperature" in body
        state["with_seed"] += "seed" in body
        state["bodies"].append(body)
        if opts.big_body:
            return await big_body(request, opts.big_body)
        return await answering(_completion(body, state["n"]))

    async def big_body(request: web.Request, kind: str) -> web.StreamResponse:
        """A body no client should hold: ``gzip`` (a 0.4 MB gzip body of 384 MiB of zeros),
        ``endless`` (chunks for ever), ``length`` (Content-Length of 1 GiB, then bytes for ever)."""
        if kind == "gzip":
            return web.Response(body=gzip_bomb(), headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        if kind == "length":
            resp.content_length = 2**30
        else:
            resp.enable_chunked_encoding()
        await resp.prepare(request)
        block = b"x" * 65536
        try:
            for _ in range(2**14):  # 1 GiB at most, so the loop ends by itself
                await resp.write(block)
        except (ConnectionError, RuntimeError):
            pass  # the client gave up, as it should
        return resp

    async def _completion(body: dict, n: int) -> web.Response:
        messages = body.get("messages", [])
        text = POISON[opts.poison] if opts.poison else answer_for(messages, opts.garbage)
        prompt_tokens = sum(_words(m.get("content", "")) for m in messages)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": _words(text), "total_tokens": prompt_tokens + _words(text)}
        if opts.prefix_cache:
            cached, total = 0, 0
            for i, m in enumerate(messages):
                total += _words(m.get("content", ""))
                key = _digest(messages[: i + 1])
                if key in seen and i < len(messages) - 1:
                    cached = total
                seen.add(key)
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return web.json_response(
            {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": usage,
            }
        )

    async def messages_api(request: web.Request) -> web.Response:
        refused = await admit("anthropic", request)
        if refused is not None:
            return refused
        body = await request.json()
        has_key = request.headers.get("x-api-key") or request.headers.get("authorization", "").startswith("Bearer ")
        if not has_key or not request.headers.get("anthropic-version"):
            return web.json_response({"type": "error", "error": {"type": "authentication_error", "message": "missing headers"}}, status=401)
        return await answering(_message(body, state["n"]))

    async def _message(body: dict, n: int) -> web.Response:
        system = body.get("system") or []
        if isinstance(system, str):
            system = [{"type": "text", "text": system}]
        blocks = list(system) + [b for m in body.get("messages", []) for b in (m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}])]
        plain = ([{"role": "system", "content": _plain(system)}] if system else []) + [{"role": m["role"], "content": _plain(m["content"])} for m in body.get("messages", [])]
        text = answer_for(plain, opts.garbage)
        total = sum(_words(b.get("text", "")) for b in blocks)
        read = written = 0
        if opts.prefix_cache:
            upto, stripped = 0, []
            marks = []
            for b in blocks:
                upto += _words(b.get("text", ""))
                stripped.append(b.get("text", ""))
                if b.get("cache_control"):
                    marks.append((_digest(stripped), upto))
            hits = [size for key, size in marks if key in seen]
            read = max(hits, default=0)
            if marks:
                written = max(marks[-1][1] - read, 0) if marks[-1][0] not in seen else 0
            seen.update(key for key, _ in marks)
        return web.json_response(
            {
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "fake"),
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": total - read - written, "output_tokens": _words(text), "cache_read_input_tokens": read, "cache_creation_input_tokens": written},
            }
        )

    async def models(request: web.Request) -> web.Response:
        state["listings"] += 1
        if opts.never_answer:
            await asyncio.sleep(3600)
        if opts.echo_key:
            return refuse_key(request)
        return web.json_response({"object": "list", "data": [{"id": m, "object": "model"} for m in opts.models.split(",") if m]})

    async def stats(request: web.Request) -> web.Response:
        out = {"requests": state["n"], "listings": state["listings"], "refused": state["refused"], "peak_in_flight": state["peak"], "with_temperature": state["with_temperature"], "with_seed": state["with_seed"]}
        if request.query.get("times"):
            out["times"] = state["times"]
        if request.query.get("bodies"):
            out["bodies"] = list(state["bodies"])
        return web.json_response(out)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_post("/v1/messages", messages_api)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/stats", stats)
    return app


_BOMB: list[bytes] = []


def gzip_bomb() -> bytes:
    """384 MiB of zeros as gzip (about 0.4 MB), made once."""
    if not _BOMB:
        import zlib

        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        zeros = bytes(2**20)
        _BOMB.append(b"".join([*(z.compress(zeros) for _ in range(384)), z.flush()]))
    return _BOMB[0]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--latency-file", help="a file whose number, once it exists, replaces --latency")
    p.add_argument("--rate-limit", type=int, default=0)
    p.add_argument("--big-body", choices=["gzip", "endless", "length"], help="chat answers no client should hold whole")
    p.add_argument("--retry-after", default="0.2", help="the Retry-After header of --rate-limit's 429s (any text: nan, -5, 1e308)")
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--always-fail", action="store_true")
    p.add_argument("--not-found", action="store_true", help="every chat call gets HTTP 404 (no such model or path); /models answers")
    p.add_argument("--hang-first", type=int, default=0)
    p.add_argument("--stall-chat", action="store_true", help="answer /models, never a chat call")
    p.add_argument("--garbage", action="store_true")
    p.add_argument("--models", default="", help="comma-separated names /v1/models lists (default: none, like servers that list nothing)")
    p.add_argument("--poison", choices=sorted(POISON))
    p.add_argument("--echo-key", action="store_true")
    p.add_argument("--html-first", type=int, default=0)
    p.add_argument("--truncate-first", type=int, default=0)
    p.add_argument("--never-answer", action="store_true")
    p.add_argument("--max-in-flight", type=int, default=0)
    p.add_argument("--prefix-cache", action="store_true")
    p.add_argument("--fast", action="store_true", help="benchmark server: uvloop where installed, orjson request bodies")
    opts = p.parse_args()
    loop = None
    if opts.fast:
        try:
            import uvloop

            loop = uvloop.new_event_loop()
        except ImportError:
            pass
    web.run_app(make_app(opts), host="127.0.0.1", port=opts.port, print=None, access_log=None, shutdown_timeout=1.0, loop=loop)


if __name__ == "__main__":
    main()
