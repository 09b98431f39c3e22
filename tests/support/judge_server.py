"""A loopback OpenAI chat-completions server whose replies are scripted, for the LLM judge.

Run as ``python tests/support/judge_server.py PORT SCRIPT.json``. The script is a list of rules
``{"when": TEXT, "replies": [REPLY, ...]}``: a request whose first user message contains TEXT
(and, if the rule names a ``model``, asks for that model) gets the rule's replies in turn: the
first to a new conversation, the next to each re-ask in it (the last one again once they run
out); the first matching rule wins; a request no rule matches gets ``{"label": "none"}``. Answers have
the API's shape (``choices[0].message.content``, ``finish_reason``, ``usage`` with prompt and
completion tokens as whitespace-separated words). ``POST /v1/chat/completions`` without
``messages`` is refused with the API's 400 body. ``GET /v1/models`` lists ``judge-1`` and
``judge-2``; ``GET /stats`` counts chat requests (``n``) and keeps their bodies (``bodies``).
"""

from __future__ import annotations

import json
import sys
import time

from aiohttp import web


def make_app(script: list[dict]) -> web.Application:
    state: dict = {"n": 0, "bodies": []}

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return web.json_response({"error": {"message": "'messages' is a required property", "type": "invalid_request_error", "param": "messages", "code": None}}, status=400)
        state["n"] += 1
        state["bodies"].append(body)
        first_user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        reply = json.dumps({"label": "none"})
        for rule in script:
            if rule["when"] in first_user and rule.get("model", body.get("model")) == body.get("model"):
                replies = rule["replies"]
                # a re-ask continues the same conversation: the reply after the earlier ones
                turn = sum(1 for m in messages if m.get("role") == "assistant")
                reply = replies[min(turn, len(replies) - 1)]
                break
        words = lambda text: len(str(text).split())  # noqa: E731
        prompt = sum(words(m.get("content") or "") for m in messages)
        return web.json_response({
            "id": f"chatcmpl-{state['n']}", "object": "chat.completion", "created": int(time.time()), "model": body.get("model", ""),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": words(reply), "total_tokens": prompt + words(reply)},
        })

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": m, "object": "model", "owned_by": "loopback"} for m in ("judge-1", "judge-2")]})

    async def stats(request: web.Request) -> web.Response:
        return web.json_response({"n": state["n"], "bodies": state["bodies"][-200:]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/stats", stats)
    return app


def main() -> None:
    port, path = int(sys.argv[1]), sys.argv[2]
    with open(path, encoding="utf-8") as f:
        script = json.load(f)
    web.run_app(make_app(script), host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main()
