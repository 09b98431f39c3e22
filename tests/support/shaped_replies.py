"""A loopback OpenAI-compatible server on 127.0.0.1 (as vLLM serves a raw ``<think>`` model:
``/v1/chat/completions``, ``/v1/models``) whose replies hold a final answer and a draft in the
shapes that once had the draft played or the answer lost (issue 40, items 6 and 7).

Run as ``python tests/support/shaped_replies.py PORT``. The answer is
:func:`support.providers.final_answer` of the conversation, the draft its
:func:`~support.providers.draft_answer` (other values, words no final answer holds); the model
named in the request picks the shape (:data:`SHAPES`):

- ``second-think``: thoughts, the answer, then a second thought holding the draft;
- ``stray-close``: a thought holding the draft, then the answer followed by a literal ``</think>``;
- ``fenced-draft``: the answer, then the draft in a fenced block shown as a rejected draft;
- ``quoted-draft``: the draft in a Markdown quotation, then the answer.

``GET /stats`` counts requests; ``/stats?bodies=1`` adds every request body (with the reply
sent), so a test can read what was asked and answered."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from aiohttp import web

try:
    from .providers import REJECTION, draft_answer, final_answer
except ImportError:  # run as a script: tests/support is the first entry of sys.path
    from providers import REJECTION, draft_answer, final_answer  # type: ignore[no-redef]


def _fence(text: str) -> str:
    """The draft's fence names its language as models write it."""
    return "```" + ("xml" if text.lstrip().startswith("<") else "json") + "\n" + text + "\n```"


#: Reply text by model name, from (final answer, draft).
SHAPES: dict[str, Callable[[str, str], str]] = {
    "second-think": lambda final, draft: f"<think>\nWeighing the offer.\n</think>\n\n{final}\n\n<think>\nSecond thoughts: {draft} {REJECTION}\n</think>",
    "stray-close": lambda final, draft: f"<think>\nFirst: {draft} {REJECTION}\n</think>\n\n{final}\n\n(My reasoning above ended at the </think> tag.)",
    "fenced-draft": lambda final, draft: f"{final}\n\nFor comparison, a draft I rejected:\n\n{_fence(draft)}",
    "quoted-draft": lambda final, draft: "An earlier draft read:\n\n" + "\n".join("> " + line for line in draft.splitlines()) + f"\n\nMy answer:\n{final}",
}


def reply_text(model: str, messages: list[dict[str, Any]]) -> str:
    """The reply of ``model`` (a shape of :data:`SHAPES`) to ``messages``."""
    return SHAPES[model](final_answer(messages), draft_answer(messages))


def make_app() -> web.Application:
    log: list[dict[str, Any]] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        model, messages = body.get("model"), body.get("messages")
        if model not in SHAPES:
            return web.json_response({"object": "error", "message": f"The model `{model}` does not exist.", "type": "NotFoundError", "param": None, "code": 404}, status=404)
        if not isinstance(messages, list) or not messages:
            return web.json_response({"object": "error", "message": "messages: a non-empty list is required", "type": "BadRequestError", "param": "messages", "code": 400}, status=400)
        text = reply_text(model, messages)
        log.append({"body": body, "reply": text})
        words = len(text.split())
        prompt = sum(len(str(m.get("content", "")).split()) for m in messages)
        return web.json_response({
            "id": f"chatcmpl-{len(log)}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "tool_calls": []}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": words, "total_tokens": prompt + words},
        })

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": name, "object": "model", "owned_by": "vllm"} for name in SHAPES]})

    async def stats(request: web.Request) -> web.Response:
        out: dict[str, Any] = {"requests": len(log)}
        if request.query.get("bodies"):
            out["log"] = log
        return web.json_response(out)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/stats", stats)
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    args = parser.parse_args(argv)
    web.run_app(make_app(), host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()
