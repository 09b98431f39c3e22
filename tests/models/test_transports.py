"""The transports to hosted models, against our fault-injecting server on 127.0.0.1: the lean
chat-completions client and the openai SDK give the same completions and the same error
classes; the Anthropic Messages API through its SDK, with prompt caching; prompt-cache hits
reported as ``cached_tokens``; study files select transports without changing game ids."""

import asyncio
import contextlib
import json
import sqlite3
import urllib.request

import pytest

from agorabench.core.study import load_study
from agorabench.models.anthropic import AnthropicBackend, to_messages_api
from agorabench.models.base import BackendError, GenerationSettings
from agorabench.models.model import Model, Pricing
from agorabench.models.openai_compat import AiohttpOpenAIBackend, LeanOpenAIBackend, OpenAICompatBackend, status_error
from support.fake_openai import answer_for
from support.helpers import FAKE_OPENAI, agora, serving, server_requests
from support.studies import envy_points, model, paper_grid, read_toml, scripted
from support.thread_app import fake_openai_app, serving_app

TRANSCRIPT = [
    {"role": "system", "content": "You play a game of points."},
    {"role": "user", "content": "Round one. Pick a number. Answer: ?"},
    {"role": "assistant", "content": "Answer: 3"},
    {"role": "user", "content": "Round two. Pick again. Answer: ?"},
]


def start_fake(stack: contextlib.ExitStack, *options: str) -> tuple[str, str]:
    """(base_url, stats_url) of a fake server with ``options``, stopped with ``stack``. A
    ``--big-body`` server is a process of its own (the tests measure this process's memory);
    the others are served by a thread of this process (no interpreter to start)."""
    if any(o.startswith("--big-body") for o in options):
        url = stack.enter_context(serving(FAKE_OPENAI, *options))
    else:
        url = stack.enter_context(serving_app(fake_openai_app(*options), path="/v1"))
    return url, url.removesuffix("/v1") + "/stats"


@pytest.fixture(scope="module")
def shared_server():
    """``shared_server(*options)``: (base_url, stats_url) of one fake server per set of options,
    kept for the module. Only for options whose answers do not depend on earlier requests
    (a fault on every call, a big body on every call, no fault): a server that counts or
    remembers requests (``--prefix-cache``, ``--hang-first``) is each test's own (``own_server``)."""
    with contextlib.ExitStack() as stack:
        started: dict[tuple[str, ...], tuple[str, str]] = {}

        def get(*options: str) -> tuple[str, str]:
            if options not in started:
                started[options] = start_fake(stack, *options)
            return started[options]

        yield get


@pytest.fixture
def own_server():
    """``own_server(*options)``: (base_url, stats_url) of a new fake server, stopped after the test."""
    with contextlib.ExitStack() as stack:
        yield lambda *options: start_fake(stack, *options)


def stats_of(stats_url: str) -> dict:
    with urllib.request.urlopen(stats_url) as resp:
        return json.loads(resp.read())


def _complete(backend, messages, settings=None):
    async def go():
        try:
            return await backend.complete(messages, settings or GenerationSettings())
        finally:
            await backend.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("cls", [LeanOpenAIBackend, AiohttpOpenAIBackend, OpenAICompatBackend])
def test_both_transports_give_the_servers_answer(cls, shared_server):
    url, _ = shared_server()
    c = _complete(cls("fake", base_url=url), TRANSCRIPT)
    assert c.text == answer_for(TRANSCRIPT, False)
    assert c.prompt_tokens == sum(len(m["content"].split()) for m in TRANSCRIPT) and c.completion_tokens == 2
    assert c.cached_tokens == 0 and c.finish_reason == "stop"


@pytest.mark.parametrize("cls", [LeanOpenAIBackend, AiohttpOpenAIBackend, OpenAICompatBackend])
def test_prompt_cache_hits_are_reported(cls, own_server):
    url, _ = own_server("--prefix-cache")

    async def go():
        backend = cls("fake", base_url=url)
        first = await backend.complete(TRANSCRIPT[:2], GenerationSettings())
        second = await backend.complete(TRANSCRIPT, GenerationSettings())
        await backend.aclose()
        return first, second

    first, second = asyncio.run(go())
    assert first.cached_tokens == 0
    assert second.cached_tokens == sum(len(m["content"].split()) for m in TRANSCRIPT[:2])  # the earlier prompt


@pytest.mark.parametrize("cls", [LeanOpenAIBackend, AiohttpOpenAIBackend, OpenAICompatBackend])
def test_both_transports_classify_failures_alike(cls, shared_server):
    url, _ = shared_server("--always-fail")
    with pytest.raises(BackendError) as err:
        _complete(cls("fake", base_url=url), TRANSCRIPT)
    assert err.value.retryable and "500" in str(err.value)
    url, _ = shared_server("--rate-limit", "1")  # every request refused
    with pytest.raises(BackendError) as err:
        _complete(cls("fake", base_url=url), TRANSCRIPT)
    assert err.value.rate_limited and err.value.retry_after == pytest.approx(0.2)
    url, _ = shared_server("--stall-chat")  # no chat call ever answers
    with pytest.raises(BackendError) as err:
        _complete(cls("fake", base_url=url, timeout=0.5), TRANSCRIPT)
    assert err.value.retryable


def test_lean_transport_classifies_statuses():
    assert not status_error(400, "bad request", {}).retryable
    assert not status_error(401, "no key", {}).retryable
    assert status_error(503, "busy", {"retry-after-ms": "250"}).retry_after == pytest.approx(0.25)
    e = status_error(429, "slow", {"Retry-After": "3"})
    assert e.rate_limited and e.retryable and e.retry_after == 3.0
    with pytest.raises(BackendError) as err:
        _complete(LeanOpenAIBackend("fake", base_url="http://127.0.0.1:9/v1", timeout=2), TRANSCRIPT)  # nothing listens
    assert err.value.retryable


def test_lean_transport_sends_the_constraint_dialect(shared_server):
    """The llama.cpp dialect's grammar goes into the body top level (the SDK's extra_body)."""
    backend = LeanOpenAIBackend("fake", base_url="http://127.0.0.1:1/v1", dialect="llamacpp")
    assert backend._constraint(GenerationSettings(grammar='root ::= "A"')) == {"extra_body": {"grammar": 'root ::= "A"'}}
    url, _ = shared_server()
    c = _complete(LeanOpenAIBackend("fake", base_url=url, dialect="llamacpp"), TRANSCRIPT, GenerationSettings(grammar='root ::= "A"'))
    assert c.text


def test_messages_api_shape_and_cache_breakpoints():
    system, turns = to_messages_api(TRANSCRIPT + [{"role": "user", "content": "And a note."}], prompt_caching=True)
    assert system == [{"type": "text", "text": "You play a game of points.", "cache_control": {"type": "ephemeral"}}]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]  # consecutive user turns merged
    assert turns[-1]["content"][0]["text"].endswith("Answer: ?\n\nAnd a note.")
    marked = [t["role"] for t in turns if "cache_control" in t["content"][-1]]
    assert marked == ["user", "user"]  # the previous and the newest user turn
    _, plain = to_messages_api(TRANSCRIPT, prompt_caching=False)
    assert not any("cache_control" in t["content"][-1] for t in plain)


def test_anthropic_backend_with_prompt_caching(own_server):
    url, stats = own_server("--prefix-cache")
    base = url.removesuffix("/v1")

    async def go(caching):
        backend = AnthropicBackend("claude-fake", base_url=base, prompt_caching=caching)
        model = Model(backend, pricing=Pricing(input=3.0, output=15.0, cached_input=0.3))
        out = [await model.complete(TRANSCRIPT[:2], sample=caching), await model.complete(TRANSCRIPT, sample=caching)]
        await model.aclose()
        return model, out

    model, (first, second) = asyncio.run(go(True))
    assert first.text == answer_for(TRANSCRIPT[:2], False)
    words = sum(len(m["content"].split()) for m in TRANSCRIPT)
    assert second.prompt_tokens == words and second.cached_tokens == sum(len(m["content"].split()) for m in TRANSCRIPT[:2])
    assert model.cached_tokens == second.cached_tokens
    assert model.cost == pytest.approx(((first.prompt_tokens + words - second.cached_tokens) * 3.0 + second.cached_tokens * 0.3 + (first.completion_tokens + second.completion_tokens) * 15.0) / 1e6)
    _, (_, uncached) = asyncio.run(go(False))
    assert uncached.cached_tokens == 0 and uncached.prompt_tokens == words
    assert server_requests(stats) == 4


def test_anthropic_errors(shared_server):
    url, _ = shared_server("--rate-limit", "1")
    with pytest.raises(BackendError) as err:
        _complete(AnthropicBackend("claude-fake", base_url=url.removesuffix("/v1")), TRANSCRIPT)
    assert err.value.rate_limited and err.value.retry_after == pytest.approx(0.2)
    url, _ = shared_server("--always-fail")
    with pytest.raises(BackendError) as err:
        _complete(AnthropicBackend("claude-fake", base_url=url.removesuffix("/v1")), TRANSCRIPT)
    assert err.value.retryable


def transport_study(spec: str, url: str, extra: str = "") -> str:
    """The hosted model ``spec`` at ``url`` (with the settings ``extra``, TOML text) against
    always-B on M1, significant margin, both statuses, peer moves A and D: 8 games."""
    remote = model("remote", spec, base_url=url, **read_toml(extra))
    grid = paper_grid(matrix=["M1"], margin=["significant"], peer_move=["A", "D"])
    return envy_points("transports", [remote, scripted("b", "always-b")], grid=grid)


@pytest.mark.parametrize("spec,extra", [("openai/fake", 'transport = "sdk"'), ("openai/fake", 'transport = "aiohttp"'), ("openai/fake", 'transport = "lean"\nrequests_per_minute = 6000\ntokens_per_minute = 1000000'), ("anthropic/claude-fake", "price_input = 3.0\nprice_cached_input = 0.3")])
def test_studies_run_on_every_transport(spec, extra, tmp_path, write_study, own_server, capsys):
    url, stats = own_server("--prefix-cache")
    if spec.startswith("anthropic"):
        url = url.removesuffix("/v1")
    path = write_study(transport_study(spec, url, extra))
    db = tmp_path / "t.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0, err
    assert "8 played, 0 errors" in out and "prompt-cached" in out
    # remote is focal in 4 games of 3 turns; its transcript grows, so turns 2 and 3 hit the cache
    assert server_requests(stats) == 12
    con = sqlite3.connect(db)
    assert con.execute("select count(*) from turns where valid").fetchone()[0] == 24


def test_transport_settings_do_not_change_game_ids(write_study):
    a = load_study(write_study(transport_study("openai/fake", "http://127.0.0.1:1/v1"), name="a.toml"))
    b = load_study(write_study(transport_study("openai/fake", "http://127.0.0.1:1/v1", 'transport = "sdk"\nrequests_per_minute = 60\nadaptive_concurrency = false'), name="b.toml"))
    c = load_study(write_study(transport_study("openai/fake", "http://127.0.0.1:1/v1", "temperature = 0.7"), name="c.toml"))
    ids = [[s.id for s in x.expand()] for x in (a, b, c)]
    assert ids[0] == ids[1] and ids[0] != ids[2]


def test_bad_limits_are_one_line_errors(write_study, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no --db: the default database would be made here, as in a user's folder
    path = write_study(transport_study("openai/fake", "http://127.0.0.1:1/v1", "requests_per_minute = -5"))
    rc, _, err = agora(capsys, "run", str(path), "--quiet")
    assert rc == 2 and err.count("\n") == 1 and "requests_per_minute" in err
    path = write_study(transport_study("openai/fake", "http://127.0.0.1:1/v1", 'transport = "carrier-pigeon"'), name="t.toml")
    rc, _, err = agora(capsys, "run", str(path), "--quiet")
    assert rc == 2 and "transport" in err


@pytest.mark.parametrize("kind", ["gzip", "endless", "length"])
@pytest.mark.parametrize("cls", [LeanOpenAIBackend, AiohttpOpenAIBackend, OpenAICompatBackend])
def test_an_answer_too_large_fails_the_call_without_holding_it(cls, kind, shared_server):
    """A 1 MB gzip body of 1 GiB, a body without end, a Content-Length of 1 GiB: the call fails
    as "answer too large", not retried, and the client never holds more than its bound (a 1 GiB
    bomb once took a run to 3.5 GB)."""
    import resource

    url, _ = shared_server("--big-body", kind)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    with pytest.raises(BackendError) as info:
        _complete(cls("fake", base_url=url, timeout=60), TRANSCRIPT)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert "answer too large" in str(info.value) and not info.value.retryable, info.value
    assert grown_mib < 200, grown_mib


@pytest.mark.parametrize("temperature,sent", [("default", False), (0.0, True), (0.7, True)])
def test_temperature_default_sends_neither_temperature_nor_seed(temperature, sent, shared_server, tmp_path, capsys):
    """``temperature = "default"`` (the original GLEE project's setting) leaves sampling to the
    provider: no chat request carries a temperature or a seed; a number sends both, with the
    study's seed (issue 21, item 7). The report says which."""
    url, stats = shared_server()
    before = stats_of(stats)  # the server is the module's: this test's requests are the difference
    path = tmp_path / "study.toml"
    path.write_text(envy_points("decoding", [model("m", f"openai/x@{url}", temperature=temperature), scripted("self-max")], grid=paper_grid(matrix=["M1"], peer_status=["leading"], margin=["marginal"], peer_move=["A"])))
    rc, _, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "d.db"), "--quiet")
    assert rc == 0, err
    after = stats_of(stats)
    counts = {k: after[k] - before[k] for k in ("requests", "with_temperature", "with_seed")}
    assert counts["requests"] > 0
    assert counts["with_temperature"] == counts["with_seed"] == (counts["requests"] if sent else 0)
    rc, _, err = agora(capsys, "report", str(path), "--db", str(tmp_path / "d.db"), "--out", str(tmp_path / "r"))
    assert rc == 0, err
    page = (tmp_path / "r" / "index.html").read_text()
    assert ("provider default (none sent, no seed)" in page) == (not sent)
