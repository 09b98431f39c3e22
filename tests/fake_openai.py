"""A small fault-injecting server that speaks the OpenAI chat-completions API on 127.0.0.1.

Run as ``python tests/fake_openai.py PORT [options]``. Its answer is a deterministic function of
the request's messages, so tests know what a study must produce. Faults:

- ``--latency S``: every answer waits S seconds;
- ``--rate-limit N``: answers 429 with ``Retry-After: 0.2`` to every Nth request (N > 0);
- ``--fail-first N``: the first N requests get HTTP 500;
- ``--always-fail``: every request gets HTTP 500;
- ``--hang-first N``: the first N requests never answer within the client's timeout;
- ``--garbage``: answers text that is not a valid action.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json

from aiohttp import web


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

    async def completions(request: web.Request) -> web.Response:
        state["n"] += 1
        n = state["n"]
        body = await request.json()
        if opts.always_fail or n <= opts.fail_first:
            return web.json_response({"error": {"message": "injected failure", "type": "server_error"}}, status=500)
        if opts.rate_limit and n % opts.rate_limit == 0:
            return web.json_response({"error": {"message": "slow down", "type": "rate_limit"}}, status=429, headers={"Retry-After": "0.2"})
        if n <= opts.hang_first:
            await asyncio.sleep(3600)
        if opts.latency:
            await asyncio.sleep(opts.latency)
        text = answer_for(body.get("messages", []), opts.garbage)
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

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake", "object": "model"}]})

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
    opts = p.parse_args()
    web.run_app(make_app(opts), host="127.0.0.1", port=opts.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
