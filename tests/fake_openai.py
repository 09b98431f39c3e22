"""A small fault-injecting server that speaks the OpenAI chat-completions API on 127.0.0.1.

Run as ``python tests/fake_openai.py PORT [options]``. Its answer is a deterministic function of
the request's messages, so tests know what a study must produce. Faults:

- ``--latency S``: every answer waits S seconds;
- ``--rate-limit N``: answers 429 with ``Retry-After: 0.2`` to every Nth request (N > 0);
- ``--fail-first N``: the first N requests get HTTP 500;
- ``--always-fail``: every request gets HTTP 500;
- ``--hang-first N``: the first N requests never answer within the client's timeout;
- ``--garbage``: answers text that is not a valid action;
- ``--poison KIND``: answers one of the poison replies of ``POISON`` (a lone surrogate, deep
  JSON nesting, non-finite or absurd numbers, half an emoji escaped inside JSON, megabytes of
  unclosed tags);
- ``--echo-key``: answers HTTP 401 whose body repeats the API key the client sent (as some
  servers do), also on ``/models``;
- ``--html-first N`` / ``--truncate-first N``: the first N chat requests get HTTP 200 with an
  HTML page / a JSON body cut in the middle;
- ``--models A,B``: the model names ``/v1/models`` lists (by default none);
- ``--never-answer``: every API request (``/models`` too) waits for ever; ``/stats`` answers.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json

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


def make_app(opts: argparse.Namespace) -> web.Application:
    state = {"n": 0}

    def refuse_key(request: web.Request) -> web.Response:
        key = request.headers.get("Authorization", "").removeprefix("Bearer ")
        return web.json_response({"error": {"message": f"Incorrect API key provided: {key}. Check it.", "type": "invalid_request_error", "code": "invalid_api_key"}}, status=401)

    async def completions(request: web.Request) -> web.Response:
        state["n"] += 1
        n = state["n"]
        body = await request.json()
        if opts.never_answer:
            await asyncio.sleep(3600)
        if opts.echo_key:
            return refuse_key(request)
        if n <= opts.html_first:
            return web.Response(text="<!doctype html><html><body><h1>Gateway</h1>Please log in.</body></html>", content_type="text/html")
        if n <= opts.truncate_first:
            return web.Response(text='{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "mess', content_type="application/json")
        if opts.always_fail or n <= opts.fail_first:
            return web.json_response({"error": {"message": "injected failure", "type": "server_error"}}, status=500)
        if opts.rate_limit and n % opts.rate_limit == 0:
            return web.json_response({"error": {"message": "slow down", "type": "rate_limit"}}, status=429, headers={"Retry-After": "0.2"})
        if n <= opts.hang_first:
            await asyncio.sleep(3600)
        if opts.latency:
            await asyncio.sleep(opts.latency)
        text = POISON[opts.poison] if opts.poison else answer_for(body.get("messages", []), opts.garbage)
        prompt_tokens = sum(len(m.get("content", "").split()) for m in body.get("messages", []))
        return web.json_response(
            {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()), "total_tokens": prompt_tokens + len(text.split())},
            }
        )

    async def models(request: web.Request) -> web.Response:
        if opts.never_answer:
            await asyncio.sleep(3600)
        if opts.echo_key:
            return refuse_key(request)
        return web.json_response({"object": "list", "data": [{"id": m, "object": "model"} for m in opts.models.split(",") if m]})

    async def stats(_request: web.Request) -> web.Response:
        return web.json_response({"requests": state["n"]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/stats", stats)
    return app


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--rate-limit", type=int, default=0)
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--always-fail", action="store_true")
    p.add_argument("--hang-first", type=int, default=0)
    p.add_argument("--garbage", action="store_true")
    p.add_argument("--models", default="", help="comma-separated names /v1/models lists (default: none, like servers that list nothing)")
    p.add_argument("--poison", choices=sorted(POISON))
    p.add_argument("--echo-key", action="store_true")
    p.add_argument("--html-first", type=int, default=0)
    p.add_argument("--truncate-first", type=int, default=0)
    p.add_argument("--never-answer", action="store_true")
    opts = p.parse_args()
    web.run_app(make_app(opts), host="127.0.0.1", port=opts.port, print=None, access_log=None, shutdown_timeout=1.0)


if __name__ == "__main__":
    main()
