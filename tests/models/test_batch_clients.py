"""The provider batch clients (agorabench.models.batch) against loopback servers that behave as
OpenAI's Batch API, Gemini's OpenAI-compatible one and Anthropic's Message Batches document
(tests/support/batch_servers.py): a batch's requests are the live calls' bodies, its answers the
live answers read by the live readers, every kind of item failure comes back classified, and
nothing is ever sent twice."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from contextlib import ExitStack
from typing import Any

import pytest

from agorabench.models.anthropic import AnthropicBackend
from agorabench.models.base import BackendError, Completion, GenerationSettings
from agorabench.models.batch import BatchItem, ItemFailure, open_batch_client, split_items
from agorabench.models.batch.openai import OpenAIBatchClient
from agorabench.models.errors import SpecError
from agorabench.models.openai_compat import ChatCompletionsBackend
from agorabench.models.providers import BackendOptions, open_backend
from agorabench.models.spec import parse_spec
from support.batch_servers import batch_server, batch_stats, control

KEYS = {"OPENAI_API_KEY": "sk-batch-test-0001", "ANTHROPIC_API_KEY": "sk-ant-batch-test-0001", "GEMINI_API_KEY": "gem-batch-test-0001"}
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-5", "gemini": "gemini-2.5-flash"}
PLAIN = GenerationSettings(temperature=0.0, max_tokens=200, seed=0)
GEMINI_OFF = GenerationSettings(temperature=0.0, max_tokens=200, seed=0, reasoning=True, thinking="off")


def harvest(i: int) -> list[dict[str, str]]:
    """A commons-style decision; ``i`` makes each conversation (and its answer) its own."""
    return [
        {"role": "system", "content": f"You are fisher number {i} on a shared lake."},
        {"role": "user", "content": f"Month {i}. How many tons of fish do you catch this month? Give a whole number from 0 to 100.\nFinish with a last line of the form 'Answer: N', where N is your number of tons."},
    ]


def items(n: int, settings: GenerationSettings = PLAIN, prefix: str = "k") -> list[BatchItem]:
    return [BatchItem(f"{prefix}{i:03d}", harvest(i), settings) for i in range(n)]


@pytest.fixture(scope="module")
def servers():
    """Base URLs of one batch server per provider, started once for the module."""
    with ExitStack() as stack:
        yield {p: stack.enter_context(batch_server(p)) for p in ("openai", "anthropic", "gemini")}


@pytest.fixture(autouse=True)
def keys(monkeypatch, servers):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    for base in servers.values():
        control(base, reset=True)


def client(servers: dict[str, str], provider: str, model: str | None = None, **options: Any):
    return open_batch_client(parse_spec(f"{provider}/{model or MODELS[provider]}@{servers[provider]}"), BackendOptions(**options))


def run(coro):
    return asyncio.run(coro)


async def until_ended(c, batch_id: str, limit: int = 20) -> list:
    """Every state a batch shows until it has ended."""
    seen = [await c.poll(batch_id)]
    while not seen[-1].ended and len(seen) < limit:
        seen.append(await c.poll(batch_id))
    return seen


async def batch_round(c, batch: list[BatchItem]) -> tuple[str, list, dict[str, Any]]:
    try:
        batch_id = await c.submit(batch)
        states = await until_ended(c, batch_id)
        return batch_id, states, await c.results(batch_id)
    finally:
        await c.aclose()


async def live_answers(backend, batch: list[BatchItem]) -> dict[str, Completion]:
    try:
        return {item.custom_id: await backend.complete(item.messages, item.settings) for item in batch}
    finally:
        await backend.aclose()


def raw(base: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """One plain HTTP request (urllib, not our client) to the server at ``base``."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


# ---------------------------------------------------------------------------------------------
# OpenAI


def test_openai_batch_answers_equal_the_live_answers_and_carry_the_live_bodies(servers):
    base = servers["openai"]
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    batch = items(4) + [BatchItem("k-schema", harvest(9), GenerationSettings(max_tokens=120, json_schema=schema))]
    control(base, polls=3)
    before = batch_stats(base)
    batch_id, states, results = run(batch_round(client(servers, "openai"), batch))
    assert [s.status for s in states] == ["in_progress", "finalizing", "completed"]
    assert states[0].counts == {"total": 5, "succeeded": 0, "errored": 0, "processing": 5}
    assert states[-1].counts == {"total": 5, "succeeded": 5, "errored": 0, "processing": 0} and states[-1].failed is None
    sent = batch_stats(base, bodies=True)["batch_bodies"][-5:]
    live = run(live_answers(ChatCompletionsBackend(MODELS["openai"], base_url=base), batch))
    stats = batch_stats(base, bodies=True)
    assert sent == stats["bodies"][-5:]  # each line's body is the live request body
    assert all(body["model"] == MODELS["openai"] for body in sent)  # one model in the file
    assert set(results) == {i.custom_id for i in batch}
    for item in batch:
        got, want = results[item.custom_id], live[item.custom_id]
        assert isinstance(got, Completion)
        assert (got.text, got.prompt_tokens, got.completion_tokens, got.finish_reason) == (want.text, want.prompt_tokens, want.completion_tokens, want.finish_reason)
        assert got.extra["service_tier"] == "batch" and got.extra["batch_id"] == batch_id
    assert stats["batches_created"] - before["batches_created"] == 1 and stats["files_uploaded"] - before["files_uploaded"] == 1


def test_openai_results_are_matched_by_custom_id_whatever_their_order(servers):
    base = servers["openai"]
    c = client(servers, "openai")
    batch = items(8)
    batch_id, _, results = run(batch_round(c, batch))
    status, info = raw(base, "GET", f"/batches/{batch_id}", headers={"Authorization": "Bearer x"})
    assert status == 200 and info["status"] == "completed"
    with urllib.request.urlopen(urllib.request.Request(base + f"/files/{info['output_file_id']}/content", headers={"Authorization": "Bearer x"})) as resp:
        order = [json.loads(line)["custom_id"] for line in resp.read().splitlines()]
    assert sorted(order) == [i.custom_id for i in batch] and order != sorted(order)  # shuffled
    live = run(live_answers(ChatCompletionsBackend(MODELS["openai"], base_url=base), batch))
    assert {k: v.text for k, v in results.items()} == {k: v.text for k, v in live.items()}


def test_openai_partial_errors_and_expiry_come_back_per_item(servers):
    base = servers["openai"]
    control(base, errors={"k001": [400, "Invalid 'max_tokens':\ninteger below minimum value."], "k002": [500, "The server had an error processing your request."]}, expire=["k003"])
    _, states, results = run(batch_round(client(servers, "openai"), items(5)))
    assert states[-1].status == "expired" and states[-1].ended and states[-1].failed is None
    assert states[-1].counts["succeeded"] == 2 and states[-1].counts["errored"] == 3
    assert isinstance(results["k000"], Completion) and isinstance(results["k004"], Completion)
    refused, transient, expired = results["k001"], results["k002"], results["k003"]
    assert refused == ItemFailure("errored", "HTTP 400: Invalid 'max_tokens': integer below minimum value.", retry=False)
    assert transient.kind == "errored" and transient.retry and "500" in transient.message
    assert expired.kind == "expired" and expired.retry and "\n" not in expired.message


def test_openai_a_wholly_expired_batch_has_only_expired_items(servers):
    control(servers["openai"], expire="all")
    _, states, results = run(batch_round(client(servers, "openai"), items(3)))
    assert states[-1].status == "expired"
    assert all(isinstance(r, ItemFailure) and r.kind == "expired" and r.retry for r in results.values()) and len(results) == 3


def test_openai_a_failed_batch_says_why_in_one_line(servers):
    control(servers["openai"], fail="The input file could not be read:\n  line 3 is broken.")
    _, states, results = run(batch_round(client(servers, "openai"), items(3)))
    assert states[-1].status == "failed" and states[-1].ended
    assert states[-1].failed == "The input file could not be read: line 3 is broken."
    assert results == {}


def test_openai_a_file_naming_two_models_fails_validation(servers):
    """One model per file: the server fails a batch whose file mixes two (our client never
    writes one: its lines all carry its own model)."""
    base = servers["openai"]
    c = client(servers, "openai")
    other = OpenAIBatchClient("gpt-4o", base_url=base)
    data = c.encode(items(1)[0]) + b"\n" + other.encode(items(2, prefix="m")[1]) + b"\n"
    boundary = "agoraboundary"
    form = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(base + "/files", data=form, headers={"Content-Type": f"multipart/form-data; boundary={boundary}", "Authorization": "Bearer x"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        file_id = json.loads(resp.read())["id"]
    status, batch = raw(base, "POST", "/batches", {"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h"}, {"Authorization": "Bearer x"})
    assert status == 200 and batch["status"] == "validating"
    state = run(c.poll(batch["id"]))
    assert state.status == "failed" and "may name one model" in state.failed
    run(c.aclose())
    run(other.aclose())


def test_openai_cancel_keeps_what_was_done_and_cancels_the_rest(servers):
    base = servers["openai"]
    control(base, polls=10, cancel_done=1)

    async def go():
        c = client(servers, "openai")
        try:
            batch_id = await c.submit(items(3))
            first = await c.poll(batch_id)
            await c.cancel(batch_id)
            states = await until_ended(c, batch_id)
            return first, states, await c.results(batch_id)
        finally:
            await c.aclose()

    first, states, results = run(go())
    assert first.status == "in_progress" and not first.ended
    assert [s.status for s in states] == ["cancelling", "cancelled"]
    assert isinstance(results["k000"], Completion)
    assert all(results[k].kind == "canceled" and results[k].retry for k in ("k001", "k002"))
    assert batch_stats(base)["cancels"] >= 1


def test_openai_a_refused_key_is_fatal_and_sends_nothing(servers, monkeypatch):
    base = servers["openai"]
    control(base, key="sk-the-right-key-0001")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-a-wrong-key-00001")
    before = batch_stats(base)
    with pytest.raises(BackendError) as info:
        run(batch_round(client(servers, "openai"), items(2)))
    assert info.value.fatal and not info.value.retryable
    assert "HTTP 401" in str(info.value) and "Incorrect API key provided" in str(info.value) and "\n" not in str(info.value)
    after = batch_stats(base)
    assert (after["files_uploaded"], after["batches_created"]) == (before["files_uploaded"], before["batches_created"])


def test_openai_an_unknown_batch_is_a_404_that_names_it(servers):
    c = client(servers, "openai")
    with pytest.raises(BackendError) as info:
        run(c.poll("batch_nonexistent"))
    run(c.aclose())
    assert not info.value.retryable and not info.value.fatal
    assert str(info.value).startswith("the provider knows no batch batch_nonexistent (HTTP 404): No batch found")


@pytest.mark.parametrize("status,retryable,limited", [(429, True, True), (503, True, False), (400, False, False)])
def test_openai_refusals_are_classified_as_live_ones_and_redacted(servers, status, retryable, limited):
    base = servers["openai"]
    control(base, refuse=[status, f"Refused for key {KEYS['OPENAI_API_KEY']}, try later.", 1])
    c = client(servers, "openai")
    with pytest.raises(BackendError) as info:
        run(c.submit(items(1)))
    assert (info.value.retryable, info.value.rate_limited, info.value.fatal) == (retryable, limited, False)
    assert KEYS["OPENAI_API_KEY"] not in str(info.value) and "[redacted]" in str(info.value)
    if status == 429:
        assert info.value.retry_after == 1.0
    batch_id = run(c.submit(items(1)))  # the refusal was spent: the next call goes through
    assert batch_id.startswith("batch_")
    run(c.aclose())


def test_openai_upload_limits_are_the_servers_400(servers):
    base = servers["openai"]
    c = client(servers, "openai")
    control(base, max_bytes=1500)
    with pytest.raises(BackendError) as info:
        run(c.submit(items(4)))
    assert not info.value.retryable and "HTTP 400: File is too large" in str(info.value)
    control(base, max_bytes=None, max_requests=3)
    with pytest.raises(BackendError) as info:
        run(c.submit(items(4)))
    assert "a batch input file may hold at most 3" in str(info.value)
    run(c.aclose())


def test_openai_reasoning_and_the_responses_route(servers):
    """A reasoning model's line carries the live reasoning fields; with transport "responses"
    the file's lines go to /v1/responses with the Responses API's body, read as live."""
    base = servers["openai"]
    reasoning = GenerationSettings(max_tokens=100, reasoning=True, reasoning_effort="low", temperature=None, seed=None)
    batch = [BatchItem("r1", harvest(1), reasoning), BatchItem("r2", harvest(2), reasoning)]
    for transport in ("lean", "responses"):
        c = client(servers, "openai", "o3", transport=transport)
        _, states, results = run(batch_round(c, batch))
        assert states[-1].status == "completed"
        sent = batch_stats(base, bodies=True)["batch_bodies"][-2:]
        live = run(live_answers(ChatCompletionsBackend("o3", base_url=base, transport=transport), batch))
        assert sent == batch_stats(base, bodies=True)["bodies"][-2:]
        for item in batch:
            got, want = results[item.custom_id], live[item.custom_id]
            assert (got.text, got.completion_tokens, got.reasoning_tokens, got.reasoning) == (want.text, want.completion_tokens, want.reasoning_tokens, want.reasoning)
        if transport == "responses":
            assert "max_output_tokens" in sent[0] and sent[0]["reasoning"]["effort"] == "low"
        else:
            assert sent[0]["max_completion_tokens"] == 100 + 16_000 and sent[0]["reasoning_effort"] == "low"


# ---------------------------------------------------------------------------------------------
# Splitting, ids, identities


def test_split_items_keeps_each_batch_within_the_limits(servers):
    c = client(servers, "openai")
    batch = items(10)
    sizes = [len(c.encode(i)) + 1 for i in batch]
    c.max_requests = 4
    groups = split_items(batch + batch[:3], c)  # repeated ids are sent once
    assert [len(g) for g in groups] == [4, 4, 2] and [i for g in groups for i in g] == batch
    c.max_requests = 100
    c.max_bytes = 64 * 1024 + sum(sizes[:3]) + 10  # three lines (and the envelope's reserve) fit
    groups = split_items(batch, c)
    assert [len(g) for g in groups] == [3, 3, 3, 1]
    assert all(sum(len(c.encode(i)) + 1 for i in g) <= c.max_bytes - 64 * 1024 for g in groups)
    c.max_bytes = 64 * 1024 + 10
    with pytest.raises(BackendError, match="one request .* is larger than a openai batch may be"):
        split_items(batch, c)
    run(c.aclose())


def test_split_batches_each_go_through_in_one_submission(servers):
    """A list over the request limit, split, is submitted as that many batches, each once."""
    base = servers["openai"]
    c = client(servers, "openai")
    c.max_requests = 3
    before = batch_stats(base)

    async def go():
        try:
            out = {}
            for group in split_items(items(7), c):
                batch_id = await c.submit(group)
                await until_ended(c, batch_id)
                out.update(await c.results(batch_id))
            return out
        finally:
            await c.aclose()

    results = run(go())
    after = batch_stats(base)
    assert sorted(results) == [f"k{i:03d}" for i in range(7)] and all(isinstance(r, Completion) for r in results.values())
    assert after["batches_created"] - before["batches_created"] == 3 and after["files_uploaded"] - before["files_uploaded"] == 3
    with pytest.raises(BackendError, match="exceed a openai batch's 3"):
        run(c.submit(items(4)))


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_identity_is_the_live_backends(servers, provider):
    for spec in (f"{provider}/{MODELS[provider]}@{servers[provider]}", f"{provider}/{MODELS[provider]}"):
        parsed = parse_spec(spec)
        live = open_backend(parsed)
        assert open_batch_client(parsed).identity == live.identity
        run(live.aclose())


@pytest.mark.parametrize("spec", ["deepseek/deepseek-chat", "vllm/Qwen/Qwen3-8B@http://127.0.0.1:9/v1", "mine@http://127.0.0.1:9/v1", "local", "strategy/random", "human"])
def test_providers_without_a_batch_api_are_refused_in_one_line(spec):
    with pytest.raises(SpecError) as info:
        open_batch_client(parse_spec(spec))
    assert "cannot run in batch mode" in str(info.value) and "\n" not in str(info.value)


def test_a_missing_key_is_said_before_anything_is_sent(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(BackendError, match="ANTHROPIC_API_KEY"):
        open_batch_client(parse_spec("anthropic/claude-sonnet-4-5"))


# ---------------------------------------------------------------------------------------------
# Anthropic


def test_anthropic_batch_params_and_answers_are_the_live_calls(servers):
    base = servers["anthropic"]
    thinking = GenerationSettings(max_tokens=200, reasoning=True, thinking="on", reasoning_budget=2000, temperature=None, seed=None)
    long_talk = harvest(5) + [{"role": "assistant", "content": "Answer: 10"}, {"role": "user", "content": "Month 6. Same question.\nFinish with a last line of the form 'Answer: N', where N is your number of tons."}]
    batch = items(3) + [BatchItem("think", harvest(7), thinking), BatchItem("long", long_talk, PLAIN)]
    control(base, polls=3)
    before = batch_stats(base)
    batch_id, states, results = run(batch_round(client(servers, "anthropic"), batch))
    assert [s.status for s in states] == ["in_progress", "in_progress", "ended"]
    assert states[0].counts == {"processing": 5, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0, "total": 5}
    assert states[-1].counts["succeeded"] == 5 and states[-1].counts["processing"] == 0
    sent = batch_stats(base, bodies=True)["batch_bodies"][-5:]
    live = run(live_answers(AnthropicBackend(MODELS["anthropic"], base_url=base), batch))
    stats = batch_stats(base, bodies=True)
    assert sent == stats["bodies"][-5:]  # params = what the SDK sent for the live call
    assert sent[4]["system"][-1]["cache_control"] == {"type": "ephemeral"}  # the live cache breakpoints
    assert [t["content"][-1].get("cache_control") for t in sent[4]["messages"]] == [{"type": "ephemeral"}, None, {"type": "ephemeral"}]
    assert sent[3]["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    for item in batch:
        got, want = results[item.custom_id], live[item.custom_id]
        assert isinstance(got, Completion)
        assert (got.text, got.reasoning, got.prompt_tokens, got.completion_tokens, got.cached_tokens, got.finish_reason) == (want.text, want.reasoning, want.prompt_tokens, want.completion_tokens, want.cached_tokens, want.finish_reason)
        assert got.extra["service_tier"] == "batch" and got.extra["batch_id"] == batch_id
    assert results["think"].reasoning and "Draft" in results["think"].reasoning
    assert stats["batches_created"] - before["batches_created"] == 1 and stats["files_uploaded"] == 0


def test_anthropic_errored_expired_and_refused_items(servers):
    base = servers["anthropic"]
    control(base, errors={"k001": ["overloaded_error", "Overloaded"], "k002": ["invalid_request_error", "messages.0: bad\ncontent"]}, expire=["k003"])
    too_small = GenerationSettings(max_tokens=200, reasoning=True, thinking="on", reasoning_budget=100, temperature=None)
    batch = items(4) + [BatchItem("budget", harvest(8), too_small)]  # the live API refuses a 100-token budget
    _, states, results = run(batch_round(client(servers, "anthropic"), batch))
    assert states[-1].status == "ended" and states[-1].counts == {"processing": 0, "succeeded": 1, "errored": 3, "canceled": 0, "expired": 1, "total": 5}
    assert isinstance(results["k000"], Completion)
    assert results["k001"] == ItemFailure("errored", "overloaded_error: Overloaded", retry=True)
    assert results["k002"] == ItemFailure("errored", "invalid_request_error: messages.0: bad content", retry=False)
    assert results["k003"].kind == "expired" and results["k003"].retry
    assert results["budget"].kind == "errored" and not results["budget"].retry and "greater than or equal to 1024" in results["budget"].message


def test_anthropic_cancel(servers):
    control(servers["anthropic"], polls=10, cancel_done=2)

    async def go():
        c = client(servers, "anthropic")
        try:
            batch_id = await c.submit(items(4))
            await c.cancel(batch_id)
            states = await until_ended(c, batch_id)
            return states, await c.results(batch_id)
        finally:
            await c.aclose()

    states, results = run(go())
    assert [s.status for s in states] == ["canceling", "ended"] and states[-1].counts["canceled"] == 2
    assert [type(results[k]).__name__ for k in ("k000", "k001")] == ["Completion", "Completion"]
    assert all(results[k].kind == "canceled" and results[k].retry for k in ("k002", "k003"))


def test_anthropic_custom_ids_must_match_the_documented_rule(servers):
    base = servers["anthropic"]
    before = batch_stats(base)
    c = client(servers, "anthropic")
    for bad in ("has space", "a" * 65, "dots.are.out", ""):
        with pytest.raises(BackendError, match="is not 1 to 64 letters"):
            run(c.submit([BatchItem(bad, harvest(1), PLAIN)]))
    run(c.aclose())
    assert batch_stats(base)["batches_created"] == before["batches_created"]
    # and the server refuses what the API refuses
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    status, body = raw(base, "POST", "/messages/batches", {"requests": [{"custom_id": "has space", "params": {}}]}, headers)
    assert status == 400 and body["error"]["message"].startswith("requests.0.custom_id: String should match pattern")
    status, body = raw(base, "POST", "/messages/batches", {"requests": [{"custom_id": "a", "params": {}}, {"custom_id": "a", "params": {}}]}, headers)
    assert status == 400 and "Duplicate custom_id" in body["error"]["message"]


def test_anthropic_limits_key_and_unknown_batch(servers, monkeypatch):
    base = servers["anthropic"]
    c = client(servers, "anthropic")
    control(base, max_requests=2)
    with pytest.raises(BackendError, match="at most 2 items"):
        run(c.submit(items(3)))
    control(base, max_requests=None, max_bytes=2000)
    with pytest.raises(BackendError) as info:
        run(c.submit(items(5)))
    assert "HTTP 413" in str(info.value) and "maximum allowed number of bytes" in str(info.value) and not info.value.retryable
    with pytest.raises(BackendError) as info:
        run(c.poll("msgbatch_nonexistent"))
    assert str(info.value).startswith("the provider knows no batch msgbatch_nonexistent (HTTP 404)") and not info.value.fatal
    run(c.aclose())
    control(base, key="sk-ant-the-right-one-01", max_bytes=None)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-a-wrong-one-001")
    wrong = client(servers, "anthropic")
    with pytest.raises(BackendError) as info:
        run(wrong.submit(items(1)))
    run(wrong.aclose())
    assert info.value.fatal and "invalid x-api-key" in str(info.value)


# ---------------------------------------------------------------------------------------------
# Gemini


def test_gemini_refuses_thinking_in_batch_mode_in_one_line(servers):
    base = servers["gemini"]
    c = client(servers, "gemini")
    thinking = [GenerationSettings(reasoning=True), GenerationSettings(reasoning=True, reasoning_effort="high"), GenerationSettings(thinking="on"), GenerationSettings(reasoning_budget=512)]
    for settings in thinking:
        problem = c.check(settings)
        assert problem and "Gemini's batch mode takes no thinking settings" in problem and "\n" not in problem
    assert c.check(PLAIN) is None and c.check(GEMINI_OFF) is None and c.check(GenerationSettings(reasoning=True, reasoning_effort="none")) is None
    before = batch_stats(base)
    with pytest.raises(BackendError, match="takes no thinking settings"):
        run(c.submit(items(2, GenerationSettings(reasoning=True))))
    assert batch_stats(base)["files_uploaded"] == before["files_uploaded"]
    run(c.aclose())
    assert client(servers, "openai").check(GenerationSettings(reasoning=True)) is None


def test_gemini_batch_through_the_openai_compatible_routes(servers):
    base = servers["gemini"]
    assert base.endswith("/v1beta/openai")
    control(base, errors={"k002": [400, "Request contains an invalid argument."]})
    batch = items(3, GEMINI_OFF)
    batch_id, states, results = run(batch_round(client(servers, "gemini"), batch))
    assert states[-1].status == "completed" and states[-1].counts["errored"] == 1
    sent = batch_stats(base, bodies=True)["batch_bodies"][-3:]
    live = run(live_answers(open_backend(parse_spec(f"gemini/{MODELS['gemini']}@{base}")), batch))
    assert sent == batch_stats(base, bodies=True)["bodies"][-3:] and sent[0]["reasoning_effort"] == "none"
    for key in ("k000", "k001"):
        assert results[key].text == live[key].text and results[key].extra["batch_id"] == batch_id
    assert results["k002"] == ItemFailure("errored", "HTTP 400: Request contains an invalid argument.", retry=False)


# ---------------------------------------------------------------------------------------------
# What no provider should do, and reading files


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_request_the_ended_batch_leaves_out_is_missing(servers, provider):
    control(servers[provider], drop=["k001"])
    _, states, results = run(batch_round(client(servers, provider), items(3)))
    assert states[-1].ended and isinstance(results["k000"], Completion) and isinstance(results["k002"], Completion)
    assert results["k001"] == ItemFailure("missing", "the batch ended without a result for this request", retry=True)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_results_wait_for_the_end(servers, provider):
    control(servers[provider], polls=5)

    async def go():
        c = client(servers, provider)
        try:
            batch_id = await c.submit(items(2))
            with pytest.raises(BackendError, match=f"batch {batch_id} is still in_progress") as info:
                await c.results(batch_id)
            assert info.value.retryable
        finally:
            await c.aclose()

    run(go())


def test_jsonl_lines_are_whole_however_the_body_is_cut():
    from agorabench.models.batch._http import jsonl_lines

    lines = [json.dumps({"custom_id": f"k{i}", "text": "x" * (i * 37)}).encode() for i in range(40)]
    body = b"\n".join(lines) + b"\n\n"

    async def read(size: int) -> list[bytes]:
        async def chunks():
            for start in range(0, len(body), size):
                yield body[start : start + size]

        return [line async for line in jsonl_lines(chunks())]

    for size in (1, 7, 100, 4096, len(body)):
        assert run(read(size)) == lines


def test_anthropic_cache_ttl_travels_as_in_live_calls(servers):
    base = servers["anthropic"]
    c = open_batch_client(parse_spec(f"anthropic/{MODELS['anthropic']}@{base}"), BackendOptions(cache_ttl="1h"))
    live = AnthropicBackend(MODELS["anthropic"], base_url=base, cache_ttl="1h")
    item = BatchItem("ttl", harvest(3), PLAIN)
    assert c.params(item)["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    _, _, results = run(batch_round(c, [item]))
    sent = batch_stats(base, bodies=True)["batch_bodies"][-1]
    want = run(live_answers(live, [item]))["ttl"]
    assert sent == batch_stats(base, bodies=True)["bodies"][-1] and results["ttl"].text == want.text
    with pytest.raises(BackendError, match="cache_ttl must be one of"):
        open_batch_client(parse_spec(f"anthropic/{MODELS['anthropic']}@{base}"), BackendOptions(cache_ttl="2h"))


def test_openai_lines_leave_out_the_live_hints():
    """A batch line is the live body without ``service_tier`` (a batch is its own tier) and
    ``prompt_cache_key`` (made from a decision's game and seat): the messages as they are."""
    c = open_batch_client(parse_spec("openai/gpt-4o-mini"), BackendOptions(service_tier="flex", prompt_cache_key=True))
    item = BatchItem("hints", harvest(4), PLAIN)
    body = c.body(item)
    assert "service_tier" not in body and "prompt_cache_key" not in body
    assert body == {"model": "gpt-4o-mini", "messages": item.messages, "max_tokens": 200, "temperature": 0.0, "seed": 0}
    line = json.loads(c.encode(item))
    assert line == {"custom_id": "hints", "method": "POST", "url": "/v1/chat/completions", "body": body}
