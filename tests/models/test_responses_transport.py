"""The ``responses`` transport against a loopback server that answers as OpenAI's Responses API
documents: the chat-completions request a backend builds goes out as a Responses body
(instructions, input, max_output_tokens, reasoning effort and summary, no seed), and answers come
back as completions (text, reasoning summary, tokens, cut-off, missing details, errors)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web

from agorabench.core.study import ModelEntry
from agorabench.models.base import BackendError, Completion, GenerationSettings
from agorabench.models.openai_compat import ChatCompletionsBackend
from agorabench.models.reasoning import DEFAULT_REASONING_BUDGET
from agorabench.models.transport import TRANSPORTS
from agorabench.models.transport.responses import completion_from_response, responses_body

TRANSCRIPT = [
    {"role": "system", "content": "You split ten coins with another player."},
    {"role": "user", "content": "Propose a split. Answer: ?"},
    {"role": "assistant", "content": "Answer: 6"},
    {"role": "user", "content": "They refused. Propose again. Answer: ?"},
]

REASONING = GenerationSettings(reasoning=True, reasoning_effort="low", temperature=None, seed=None, max_tokens=256)


def _usage(input_tokens: int, output_tokens: int, cached: int | None = 0, reasoning: int | None = None) -> dict[str, Any]:
    """A ``usage`` object as the API reports it (details left out where given None)."""
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens}
    if cached is not None:
        usage["input_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        usage["output_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


def _reasoning_item(*summaries: str) -> dict[str, Any]:
    return {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": s} for s in summaries]}


def _message_item(text: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _response(output: list[dict[str, Any]], usage: dict[str, Any], status: str = "completed", incomplete: str | None = None) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "model": "o-test",
        "status": status,
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "output": output,
        "usage": usage,
    }


COMPLETED = _response(
    [_reasoning_item("They want more than four.", "Offering five is safer."), _message_item("Answer: 5")],
    _usage(40, 300, cached=32, reasoning=290),
)
CUT_OFF = _response([_reasoning_item()], _usage(40, 16256, reasoning=16256), status="incomplete", incomplete="max_output_tokens")
NO_DETAILS = _response([_message_item("Answer: 4")], _usage(40, 3, cached=None))
REFUSED = {"error": {"message": "Unsupported value: 'reasoning.effort' does not support 'low' with this model.", "type": "invalid_request_error", "param": "reasoning.effort", "code": "unsupported_value"}}


def _ask(replies: list[tuple[int, dict[str, Any]]], settings: GenerationSettings = REASONING, messages: list[dict[str, str]] = TRANSCRIPT) -> tuple[list[Completion | BackendError], list[dict[str, Any]], list[str]]:
    """Serve ``replies`` (status, JSON body) in turn on ``/v1/responses`` and ask one question per
    reply through the backend; returns the completions (or errors), the bodies received and the
    paths asked."""
    bodies: list[dict[str, Any]] = []
    paths: list[str] = []

    async def answer(request: web.Request) -> web.Response:
        paths.append(request.path)
        bodies.append(await request.json())
        status, body = replies[len(bodies) - 1]
        return web.json_response(body, status=status)

    async def go() -> list[Completion | BackendError]:
        app = web.Application()
        app.router.add_post("/v1/responses", answer)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        backend = ChatCompletionsBackend("o-test", base_url=f"http://127.0.0.1:{port}/v1", transport="responses", dialect="openai")
        results: list[Completion | BackendError] = []
        try:
            for _ in replies:
                try:
                    results.append(await backend.complete(messages, settings))
                except BackendError as exc:
                    results.append(exc)
        finally:
            await backend.aclose()
            await runner.cleanup()
        return results

    return asyncio.run(go()), bodies, paths


def test_the_request_goes_out_as_a_responses_body():
    (reply,), (body,), paths = _ask([(200, COMPLETED)])
    assert paths == ["/v1/responses"] and isinstance(reply, Completion)
    assert body["model"] == "o-test"
    assert body["instructions"] == TRANSCRIPT[0]["content"]
    assert body["input"] == [{"role": m["role"], "content": m["content"]} for m in TRANSCRIPT[1:]]
    assert body["max_output_tokens"] == 256 + DEFAULT_REASONING_BUDGET
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert body["store"] is False
    for gone in ("messages", "temperature", "seed", "max_tokens", "max_completion_tokens", "reasoning_effort", "extra_body"):
        assert gone not in body


def test_a_completed_answer_is_read_with_its_summary_and_tokens():
    (reply,), _, _ = _ask([(200, COMPLETED)])
    assert isinstance(reply, Completion)
    assert reply.text == "Answer: 5"
    assert reply.reasoning == "They want more than four.\n\nOffering five is safer."
    assert (reply.prompt_tokens, reply.cached_tokens, reply.completion_tokens, reply.reasoning_tokens) == (40, 32, 300, 290)
    assert reply.finish_reason == "stop" and not reply.cut


def test_an_answer_cut_by_max_output_tokens_is_cut():
    (reply,), _, _ = _ask([(200, CUT_OFF)])
    assert isinstance(reply, Completion)
    assert reply.text == "" and reply.reasoning == ""  # thought without a summary, no answer
    assert reply.finish_reason == "length" and reply.cut
    assert reply.completion_tokens == 16256 and reply.reasoning_tokens == 16256


def test_missing_details_are_not_reported_as_zero():
    (reply,), _, _ = _ask([(200, NO_DETAILS)])
    assert isinstance(reply, Completion)
    assert reply.text == "Answer: 4" and reply.reasoning is None
    assert reply.reasoning_tokens is None and reply.cached_tokens == 0 and reply.completion_tokens == 3


def test_an_error_status_is_a_backend_error():
    (reply, after), _, _ = _ask([(400, REFUSED), (200, NO_DETAILS)])
    assert isinstance(reply, BackendError) and not reply.retryable
    assert "reasoning.effort" in str(reply)
    assert isinstance(after, Completion)  # the connection goes on serving


def test_sampling_settings_of_a_model_that_does_not_reason():
    settings = GenerationSettings(temperature=0.7, seed=3, max_tokens=64, json_schema={"type": "object"}, extra_body={"service_tier": "flex"})
    (reply,), (body,), _ = _ask([(200, NO_DETAILS)], settings)
    assert isinstance(reply, Completion)
    assert body["temperature"] == 0.7 and "seed" not in body
    assert body["max_output_tokens"] == 64 and "reasoning" not in body
    assert body["text"] == {"format": {"type": "json_schema", "name": "action", "schema": {"type": "object"}, "strict": False}}
    assert body["service_tier"] == "flex"


def test_a_reasoning_request_without_an_effort_still_asks_for_the_summary():
    body = responses_body({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 100})
    assert body["reasoning"] == {"summary": "auto"} and body["max_output_tokens"] == 100
    assert "instructions" not in body and body["input"] == [{"role": "user", "content": "hi"}]


def test_other_incomplete_reasons_and_failures():
    filtered = completion_from_response(_response([], _usage(5, 0), status="incomplete", incomplete="content_filter"))
    assert filtered.finish_reason == "content_filter" and not filtered.cut
    with pytest.raises(BackendError) as err:
        completion_from_response({"status": "failed", "error": {"code": "server_error", "message": "try again"}, "output": []})
    assert err.value.retryable and "try again" in str(err.value)
    with pytest.raises(BackendError) as err:
        completion_from_response({"status": "failed", "error": {"code": "invalid_prompt", "message": "flagged"}, "output": []})
    assert not err.value.retryable


def test_reasoning_counted_apart_is_billed():
    """A gateway whose output_tokens leaves out the reasoning (total_tokens says so) is billed
    the total, as chat completions are."""
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 115}
    c = completion_from_response(_response([_message_item("ok")], usage))
    assert c.completion_tokens == 105 and c.reasoning_tokens == 100


def test_study_files_and_the_registry_name_the_transport():
    assert "responses" in TRANSPORTS
    entry = ModelEntry(name="pro", spec="openai/o3-pro", transport="responses")
    assert entry.transport == "responses" and "transport" in ModelEntry.RUN_ONLY
