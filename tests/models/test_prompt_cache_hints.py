"""The hints a backend gives a provider's prompt cache, checked on the loopback provider servers
(tests/support/providers.py, which refuse what the APIs refuse: a ``prompt_cache_key`` over 64
characters, more than 4 ``cache_control`` breakpoints, a TTL other than 5m or 1h):

- OpenAI's ``prompt_cache_key``: one per game and seat, on every transport and on the Responses
  API; none without a call context, none for a server other than OpenAI's API; the request is
  otherwise byte for byte the one sent without it; neither the response cache's key nor a game's
  id depends on it;
- Anthropic's breakpoints: ``{"type": "ephemeral"}`` as always at the 5-minute TTL, with
  ``"ttl": "1h"`` at one hour, never more than 4."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.models import openai_compat
from agorabench.models.anthropic import MAX_BREAKPOINTS, AnthropicBackend, to_messages_api
from agorabench.models.base import CALL_CONTEXT, BackendError, CallContext, GenerationSettings
from agorabench.models.openai_compat import ChatCompletionsBackend, is_openai_api, prompt_cache_key
from agorabench.models.providers import BackendOptions, open_backend
from agorabench.models.spec import parse_spec
from agorabench.models.transport.wire import dumps
from support.providers import provider_server, server_stats
from support.studies import model, study_toml

# the SDK warns of the model claude-sonnet-4-5's end of life whenever a request names it
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

TRANSCRIPT = [
    {"role": "system", "content": "You play a game of points."},
    {"role": "user", "content": "Round 1. Choose A or B. Answer with {\"choice\": \"A or B\"} in JSON."},
    {"role": "assistant", "content": "{\"choice\": \"A\"}"},
    {"role": "user", "content": "Round 2. Choose A or B. Answer with {\"choice\": \"A or B\"} in JSON."},
]
SETTINGS = GenerationSettings(max_tokens=64)
CONTEXTS = [CallContext("g1", "alice"), CallContext("g1", "alice"), CallContext("g1", "bob"), CallContext("g2", "alice"), None]


@pytest.fixture(scope="module")
def openai_server():
    with provider_server("openai") as base:
        yield base


@pytest.fixture(scope="module")
def anthropic_server():
    with provider_server("anthropic") as base:
        yield base


def _bodies(base: str, since: int) -> list[dict]:
    return server_stats(base, bodies=True)["bodies"][since:]


def _seen(base: str) -> int:
    return len(server_stats(base, bodies=True)["bodies"])


async def _call(backend, context: CallContext | None, messages=TRANSCRIPT) -> None:
    token = CALL_CONTEXT.set(context)
    try:
        await backend.complete(messages, SETTINGS)
    finally:
        CALL_CONTEXT.reset(token)


# the key ----------------------------------------------------------------------------------------


def test_key_per_game_and_seat():
    a, again, other_seat, other_game = (prompt_cache_key(c) for c in CONTEXTS[:4])
    assert a == again
    assert len({a, other_seat, other_game}) == 3
    assert prompt_cache_key(None) is None
    assert a.startswith("agora-") and len(a) <= 64
    # a long game id and seat still give a short key
    assert len(prompt_cache_key(CallContext("x" * 500, "seat" * 40))) == len(a)


def test_only_openais_own_api_gets_the_key(monkeypatch):
    assert is_openai_api(None) and is_openai_api("https://api.openai.com/v1") and is_openai_api("https://API.OpenAI.com/v1/")
    assert not is_openai_api("http://127.0.0.1:8000/v1") and not is_openai_api("https://api.openai.com.example.net/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")

    def sends(spec: str, base_url: str | None = None, **options) -> bool:
        return open_backend(parse_spec(spec, base_url), BackendOptions(**options)).prompt_cache_key

    assert sends("openai/gpt-4.1-mini")
    assert sends("my-model", "https://api.openai.com/v1")  # a URL of OpenAI's API
    assert not sends("openai/gpt-4.1-mini", prompt_cache_key=False)  # the entry's switch
    assert not sends("openai/gpt-4.1-mini", "http://127.0.0.1:9/v1")  # a server of one's own
    assert not sends("vllm/Qwen/Qwen3-8B", "http://127.0.0.1:9/v1")
    assert not sends("ollama/qwen3", "http://127.0.0.1:9/v1")
    assert not sends("deepseek/deepseek-chat")  # a provider's own API, not OpenAI's


# on the wire --------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["lean", "aiohttp", "sdk", "responses"])
def test_requests_carry_the_key_of_their_game_and_seat(openai_server, transport):
    base = openai_server
    since = _seen(base)

    async def go():
        on = ChatCompletionsBackend("gpt-4o-mini", base_url=base, transport=transport, prompt_cache_key=True)
        off = ChatCompletionsBackend("gpt-4o-mini", base_url=base, transport=transport)
        for context in CONTEXTS:
            await _call(on, context)
            await _call(off, context)
        await on.aclose()
        await off.aclose()

    asyncio.run(go())
    bodies = _bodies(base, since)
    assert len(bodies) == 2 * len(CONTEXTS)
    assert server_stats(base)["refused"] == 0
    with_key, without = bodies[0::2], bodies[1::2]
    keys = [b.get("prompt_cache_key") for b in with_key]
    assert keys == [prompt_cache_key(c) for c in CONTEXTS]
    assert keys[0] == keys[1] and len(set(keys[:4])) == 3 and keys[4] is None
    assert not any("prompt_cache_key" in b for b in without)
    for a, b in zip(with_key, without):  # the same request otherwise, messages above all
        assert {k: v for k, v in a.items() if k != "prompt_cache_key"} == b
    field = "input" if transport == "responses" else "messages"
    assert all(json.dumps(a[field]) == json.dumps(b[field]) for a, b in zip(with_key, without))


def test_request_bytes_are_the_same_but_for_the_key(openai_server):
    sent: list[bytes] = []

    async def go():
        backends = [ChatCompletionsBackend("gpt-4o-mini", base_url=openai_server, prompt_cache_key=flag) for flag in (False, True)]
        for backend in backends:
            post = backend.transport._post

            async def recording(body: bytes, post=post):
                sent.append(body)
                return await post(body)

            backend.transport._post = recording
            await _call(backend, CONTEXTS[0])
            await backend.aclose()

    asyncio.run(go())
    plain, keyed = sent
    key = prompt_cache_key(CONTEXTS[0])
    assert keyed == plain[:-1] + b',"prompt_cache_key":' + dumps(key) + b"}"


def test_other_servers_get_no_key():
    with provider_server("vllm") as base:
        since = _seen(base)

        async def go():
            for spec in ("vllm/Qwen/Qwen3-8B", "openai/Qwen/Qwen3-8B"):  # the openai provider on a server of one's own too
                backend = open_backend(parse_spec(spec, base), BackendOptions())
                await _call(backend, CONTEXTS[0])
                await backend.aclose()

        asyncio.run(go())
        bodies = _bodies(base, since)
    assert len(bodies) == 2 and not any("prompt_cache_key" in b for b in bodies)


def test_a_study_keys_each_seat_of_each_game(openai_server, tmp_path, monkeypatch):
    """Through the runner: the entry's switch on (the default) and the loopback server counted as
    OpenAI's API: every call carries the key of its game and seat; a replay from the response
    cache into a fresh store with the switch off makes no call and finds the same game ids."""
    monkeypatch.setattr(openai_compat, "OPENAI_API_HOST", "127.0.0.1")

    def study(name: str, **settings) -> Path:
        entry = model("mini", "openai/gpt-4o-mini", base_url=openai_server, max_tokens=64, **settings)
        fixed = {"horizon": 2, "money": 100, "delta_b": 0.9}
        path = tmp_path / f"{name}.toml"
        path.write_text(study_toml("keyed", "glee.bargaining", matchups="same_model", repeats=1, seed=3, grid={"delta_a": [0.8, 0.95]}, fixed=fixed, models=[entry]))
        return path

    since = _seen(openai_server)
    db = tmp_path / "keyed.db"
    stats, _ = run_study(load_study(study("on")), db, progress=False, probe=False)
    assert stats.done == 2
    bodies = [b for b in _bodies(openai_server, since) if "messages" in b]
    with sqlite3.connect(db) as con:
        seats = set(con.execute("SELECT DISTINCT game_id, role FROM turns").fetchall())
        games = {g for (g,) in con.execute("SELECT id FROM games")}
    assert len(seats) == 4 and len(bodies) >= 4
    expected = {prompt_cache_key(CallContext(g, r)): (g, r) for g, r in seats}
    assert {b.get("prompt_cache_key") for b in bodies} == set(expected)
    for b in bodies:  # a key's calls are one seat's: its transcript's opening is theirs
        same = [o for o in bodies if o["prompt_cache_key"] == b["prompt_cache_key"]]
        assert all(o["messages"][0] == b["messages"][0] for o in same)

    since = _seen(openai_server)
    replay = tmp_path / "replay.db"
    stats, _ = run_study(load_study(study("off", prompt_cache_key=False)), replay, cache_db=db, progress=False, probe=False)
    assert stats.done == 2 and _bodies(openai_server, since) == []  # every answer from the response cache
    with sqlite3.connect(replay) as con:
        assert {g for (g,) in con.execute("SELECT id FROM games")} == games


# Anthropic -----------------------------------------------------------------------------------------


LONG = TRANSCRIPT + [{"role": "assistant", "content": "{\"choice\": \"B\"}"}, {"role": "user", "content": "Round 3. Choose A or B. Answer with {\"choice\": \"A or B\"} in JSON."}]


def _marks(body: dict) -> list[dict]:
    blocks = list(body.get("system") or []) + [b for m in body["messages"] for b in m["content"]]
    return [b["cache_control"] for b in blocks if "cache_control" in b]


def _without_ttl(body: dict) -> dict:
    """``body`` with the TTL taken out of every breakpoint."""
    body = json.loads(json.dumps(body))
    for b in list(body.get("system") or []) + [b for m in body["messages"] for b in m["content"]]:
        b.get("cache_control", {}).pop("ttl", None)
    return body


def test_five_minute_breakpoints_are_as_before():
    system, turns = to_messages_api(LONG, True)
    assert json.dumps(system) == json.dumps([{"type": "text", "text": "You play a game of points.", "cache_control": {"type": "ephemeral"}}])
    assert [t["content"][-1].get("cache_control") for t in turns] == [None, None, {"type": "ephemeral"}, None, {"type": "ephemeral"}]
    assert to_messages_api(LONG, True, cache_ttl="5m") == (system, turns)
    hour_system, hour_turns = to_messages_api(LONG, True, cache_ttl="1h")
    assert hour_system[0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    with pytest.raises(ValueError):
        to_messages_api(LONG, True, cache_ttl="2h")


@pytest.mark.parametrize("ttl, mark", [("5m", {"type": "ephemeral"}), ("1h", {"type": "ephemeral", "ttl": "1h"})])
def test_anthropic_ttl_on_every_breakpoint(anthropic_server, ttl, mark):
    base, since = anthropic_server, _seen(anthropic_server)

    async def go():
        backend = AnthropicBackend("claude-sonnet-4-5", base_url=base, cache_ttl=ttl)
        for messages in (TRANSCRIPT, LONG):
            await backend.complete(messages, SETTINGS)
        await backend.aclose()

    asyncio.run(go())
    assert server_stats(base)["refused"] == 0
    first, second = _bodies(base, since)
    assert _marks(first) == [mark] * 3 and _marks(second) == [mark] * 3  # system + the last two user turns
    assert len(_marks(second)) <= MAX_BREAKPOINTS


def test_anthropic_texts_are_the_same_at_either_ttl(anthropic_server):
    base, since = anthropic_server, _seen(anthropic_server)

    async def go():
        for ttl in ("5m", "1h"):
            backend = AnthropicBackend("claude-sonnet-4-5", base_url=base, cache_ttl=ttl)
            await backend.complete(LONG, SETTINGS)
            await backend.aclose()

    asyncio.run(go())
    five, hour = _bodies(base, since)
    assert five != hour and _without_ttl(hour) == five


def test_anthropic_bad_ttl_and_the_servers_limits(anthropic_server):
    with pytest.raises(BackendError, match="cache_ttl"):
        AnthropicBackend("claude-sonnet-4-5", base_url="http://127.0.0.1:9", cache_ttl="1d")
    base = anthropic_server
    system, turns = to_messages_api(LONG + [{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}], True)
    for t in turns:  # a breakpoint on every turn: 1 + 7 of them
        t["content"][-1]["cache_control"] = {"type": "ephemeral"}
    status, answer = _post_messages(base, {"model": "claude-sonnet-4-5", "max_tokens": 16, "system": system, "messages": turns})
    assert status == 400 and answer["error"]["message"] == "A maximum of 4 blocks with cache_control may be provided. Found 8."
    system, turns = to_messages_api(TRANSCRIPT, True)
    system[0]["cache_control"] = {"type": "ephemeral", "ttl": "2h"}
    status, answer = _post_messages(base, {"model": "claude-sonnet-4-5", "max_tokens": 16, "system": system, "messages": turns})
    assert status == 400 and "ttl" in answer["error"]["message"]


def _post_messages(base: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(base.rstrip("/") + "/messages", data=json.dumps(body).encode(), headers={"x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_openai_server_refuses_a_long_key(openai_server):
    body = {"model": "gpt-4o-mini", "messages": TRANSCRIPT, "prompt_cache_key": "k" * 65}
    request = urllib.request.Request(openai_server + "/chat/completions", data=json.dumps(body).encode(), headers={"Authorization": "Bearer k", "Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=10)
    assert err.value.code == 400
    assert json.loads(err.value.read())["error"]["code"] == "string_above_max_length"
