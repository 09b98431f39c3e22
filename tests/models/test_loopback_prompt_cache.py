"""The loopback provider servers' prompt caches (tests/support/providers.py ``--prompt-cache``),
checked against the rules the providers document, so that the cost plan's simulator
(``models/prompt_cache.py``) can be compared with a server that does not share its code:

- OpenAI: ``usage.prompt_tokens_details.cached_tokens`` (``input_tokens_details`` on responses)
  is 0 below 1,024 prompt tokens, else the longest prefix shared with an earlier cached prompt of
  the same model and ``prompt_cache_key`` (none: any earlier prompt) in whole 128-token steps,
  0 below 1,024;
- Anthropic: ``cache_read_input_tokens`` the longest prefix an earlier request wrote at a
  breakpoint, ``cache_creation_input_tokens`` what this request's breakpoints write past it (at
  least the model's minimum), ``input_tokens`` the rest, ``cache_creation`` by TTL; entries
  expire after their TTL without use;
- off (the default), the usage is what it always was; batch items are cached as live calls."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from support.batch_servers import make_batch_app
from support.providers import PromptCaches, anthropic_cache_min, make_app


def words(n: int, word: str = "w") -> str:
    return " ".join(f"{word}{i}" for i in range(n))


def post(provider: str, path: str, bodies: list[dict], headers: dict | None = None, **opts: Any) -> list[dict]:
    """Each body's answer from one fresh server, in order."""

    async def go() -> list[dict]:
        async with TestClient(TestServer(make_app(provider, **opts))) as client:
            out = []
            for body in bodies:
                resp = await client.post(path, json=body, headers=headers or {})
                assert resp.status == 200, await resp.text()
                out.append(await resp.json())
            return out

    return asyncio.run(go())


def chat(*contents: str, key: str | None = None, model: str = "gpt-4.1-mini") -> dict:
    roles = ["system"] + ["user" if i % 2 == 0 else "assistant" for i in range(len(contents) - 1)]
    body: dict[str, Any] = {"model": model, "messages": [{"role": r, "content": c} for r, c in zip(roles, contents)], "max_tokens": 20}
    if key is not None:
        body["prompt_cache_key"] = key
    return body


def cached(answer: dict) -> int:
    return answer["usage"]["prompt_tokens_details"]["cached_tokens"]


def test_openai_reads_the_longest_shared_prefix_in_128_token_steps_per_key():
    system, first = words(1000, "s"), words(100, "u")
    bodies = [
        chat(words(500), key="a"),  # under 1,024: never cached
        chat(words(500), key="a"),
        chat(system, first, key="a"),  # 1,100 tokens, the first of its key: nothing to read
        chat(system, first, "ok", words(60, "v"), key="a"),  # shares 1,100 tokens: 8 x 128 = 1,024
        chat(system, first, "ok", words(60, "v"), words(5), key="a"),  # shares all 1,161 of the one before: 9 x 128
        chat(system, first, "ok", words(60, "v"), key="b"),  # another key: another cache
        chat(system, first, "ok", words(60, "v")),  # no key: any earlier prompt
        chat(system, first, "ok", words(60, "v"), key="a", model="gpt-4o-mini"),  # another model
        chat(words(900, "s"), words(200, "x"), key="a"),  # 900 shared: below the minimum, 0
    ]
    answers = post("openai", "/v1/chat/completions", bodies, prompt_cache=True)
    assert [cached(a) for a in answers] == [0, 0, 0, 1024, 1152, 0, 1152, 0, 0]
    assert [a["usage"]["prompt_tokens"] for a in answers[2:5]] == [1100, 1161, 1166]


def test_openai_responses_and_reasoning_models_report_it_too():
    long = words(1300)
    reasoner = chat(long, "go", model="gpt-5-mini")
    del reasoner["max_tokens"]  # refused by a reasoning model: max_completion_tokens instead
    answers = post("openai", "/v1/chat/completions", [reasoner | {"max_completion_tokens": 2000}] * 2, prompt_cache=True)
    assert [cached(a) for a in answers] == [0, 1280]
    body = {"model": "gpt-4.1-mini", "instructions": long, "input": "go", "prompt_cache_key": "k"}
    answers = post("openai", "/v1/responses", [body, body], prompt_cache=True)
    assert [a["usage"]["input_tokens_details"]["cached_tokens"] for a in answers] == [0, 1280]


def test_without_the_option_the_usage_is_as_before():
    long = words(1300)
    answers = post("openai", "/v1/chat/completions", [chat(long, "go")] * 2)
    assert [cached(a) for a in answers] == [0, 0]
    body = anthropic(block(long, mark=True), [block("go", mark=True)])
    answers = post("anthropic", "/v1/messages", [body, body], headers=ANTHROPIC_HEADERS)
    assert [a["usage"] for a in answers] == [{"input_tokens": 1301, "output_tokens": answers[0]["usage"]["output_tokens"], "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}] * 2


ANTHROPIC_HEADERS = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}


def block(text: str, mark: bool = False, ttl: str | None = None) -> dict:
    b: dict[str, Any] = {"type": "text", "text": text}
    if mark:
        b["cache_control"] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return b


def anthropic(system: dict, user_turns: list[dict], model: str = "claude-sonnet-4-5") -> dict:
    messages: list[dict] = []
    for i, turn in enumerate(user_turns):
        if i:
            messages.append({"role": "assistant", "content": f"answer {i}"})
        messages.append({"role": "user", "content": [turn]})
    return {"model": model, "max_tokens": 50, "system": [system], "messages": messages}


def split(answer: dict) -> tuple[int, int, int]:
    u = answer["usage"]
    return u["cache_read_input_tokens"], u["cache_creation_input_tokens"], u["input_tokens"]


def test_anthropic_reads_what_an_earlier_breakpoint_wrote_and_writes_the_rest():
    system = block(words(1000, "s"), mark=True)
    t1, t2, t3 = block(words(100, "a"), mark=True), block(words(40, "b"), mark=True), block(words(30, "c"), mark=True)
    bodies = [
        anthropic(system, [t1]),  # 1,100 to its last breakpoint: all written
        anthropic(system, [t1]),  # the same: all read
        anthropic(system, [t1, t2]),  # reads 1,100, writes "answer 1" and t2
        anthropic(system, [t1, t2, t3]),
        anthropic(block(words(1000, "s"), mark=True), [block(words(100, "z"))]),  # its one breakpoint's prefix is under the minimum: never written, so never read
        anthropic(system, [t1], model="claude-haiku-4-5"),  # another model, minimum 4,096: nothing cached
    ]
    answers = post("anthropic", "/v1/messages", bodies, headers=ANTHROPIC_HEADERS, prompt_cache=True)
    assert [split(a) for a in answers] == [(0, 1100, 0), (1100, 0, 0), (1100, 42, 0), (1142, 32, 0), (0, 0, 1100), (0, 0, 1100)]
    assert answers[2]["usage"]["cache_creation"] == {"ephemeral_5m_input_tokens": 42, "ephemeral_1h_input_tokens": 0}


def test_anthropic_minimum_ttl_and_expiry():
    assert (anthropic_cache_min("claude-sonnet-4-5"), anthropic_cache_min("claude-opus-4.5"), anthropic_cache_min("claude-3-5-haiku-latest"), anthropic_cache_min("claude-opus-5")) == (1024, 4096, 2048, 1024)
    now = [0.0]
    caches = PromptCaches(clock=lambda: now[0])
    short = anthropic(block(words(500, "s"), mark=True), [block(words(600, "a"), mark=True)])
    assert caches.anthropic_usage(short)[:2] == (0, 1100)  # the system's 500 is below the minimum; the prefix to the user turn is not
    body = anthropic(block(words(1100, "s"), mark=True, ttl="1h"), [block(words(20, "a"), mark=True)])
    assert caches.anthropic_usage(body) == (0, 1120, {"ephemeral_5m_input_tokens": 20, "ephemeral_1h_input_tokens": 1100})
    now[0] = 299.0
    assert caches.anthropic_usage(body)[:2] == (1120, 0)  # read: its life starts again
    now[0] = 299.0 + 301
    assert caches.anthropic_usage(body)[:2] == (1100, 20)  # the 5-minute entry expired, the hour's did not


def test_batch_items_are_cached_as_live_calls():
    body = anthropic(block(words(1100, "s"), mark=True), [block("go", mark=True)])

    async def go() -> list[dict]:
        async with TestClient(TestServer(make_batch_app("anthropic", prompt_cache=True))) as client:
            live = await (await client.post("/v1/messages", json=body, headers=ANTHROPIC_HEADERS)).json()
            made = await (await client.post("/v1/messages/batches", json={"requests": [{"custom_id": "a", "params": body}]}, headers=ANTHROPIC_HEADERS)).json()
            while made["processing_status"] != "ended":
                made = await (await client.get(f"/v1/messages/batches/{made['id']}", headers=ANTHROPIC_HEADERS)).json()
            results = await (await client.get(f"/v1/messages/batches/{made['id']}/results", headers=ANTHROPIC_HEADERS)).text()
            return [live, json.loads(results)["result"]["message"]]

    live, item = asyncio.run(go())
    assert (split(live), split(item)) == ((0, 1101, 0), (1101, 0, 0))  # the batch item read what the live call wrote
