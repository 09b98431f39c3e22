"""Model specs are read once, into a frozen ModelSpec (models/spec.py); providers declare their
backend factory and defaults (models/providers.py); backends name their own probe and classify
their own errors; transports are chosen by name and only the chosen one's client is imported."""

import asyncio
import dataclasses
import subprocess
import sys
import textwrap

import pytest

from agorabench.core.seating import build_backend
from agorabench.core.study import ModelEntry, StudyError, parse_model_spec
from agorabench.models.base import BackendError
from agorabench.models.errors import too_large
from agorabench.models.http11 import BodyTooLarge, ConnectError, ConnectionLost
from agorabench.models.openai_compat import ChatCompletionsBackend
from agorabench.models.providers import DEFAULT_KEY_ENV, PROVIDERS, BackendOptions, open_backend
from agorabench.models.spec import SPEC_FORMS, ModelSpec, SpecError, parse_spec, spec_kind, split_url
from agorabench.models.transport import TRANSPORTS, Endpoint, open_transport
from agorabench.models.transport.wire import flat_body, read_answer

URL = "http://127.0.0.1:1/v1"


@pytest.mark.parametrize(
    "text,base_url,expected",
    [
        ("local", None, ("local", "", None, None)),
        ("local/smollm", None, ("local", "smollm", None, None)),
        ("strategy/self-max", None, ("strategy", "self-max", None, None)),
        ("human", None, ("human", "", None, None)),
        ("openai/gpt-4o-mini", None, ("hosted", "gpt-4o-mini", "openai", None)),
        ("anthropic/claude-x", None, ("hosted", "claude-x", "anthropic", None)),
        ("vllm/Qwen2.5-7B", URL, ("hosted", "Qwen2.5-7B", "vllm", URL)),
        ("llamacpp/smol", URL, ("hosted", "smol", "llamacpp", URL)),
        (f"vllm/Qwen2.5-7B@{URL}", None, ("hosted", "Qwen2.5-7B", "vllm", URL)),
        ("someone/thing", URL, ("hosted", "thing", "openai", URL)),  # unknown prefix, a URL: compatible server
        ("mystery", URL, ("hosted", "mystery", "openai", URL)),
    ],
)
def test_every_form_of_spec_parses_to_one_typed_value(text, base_url, expected):
    spec = parse_spec(text, base_url)
    assert (spec.kind, spec.name, spec.provider, spec.base_url) == expected
    assert spec.text == text.partition("@")[0]
    assert spec_kind(spec.text) == spec.kind
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.kind = "local"  # type: ignore[misc]


def test_spec_errors_are_one_line_and_say_what_would_do():
    with pytest.raises(SpecError, match="^empty model spec$"):
        parse_spec("")
    with pytest.raises(SpecError) as err:
        parse_spec("mystery-model", owner="a")
    assert str(err.value) == f"unknown model spec 'mystery-model' for model 'a': use {SPEC_FORMS}"
    assert all(form in SPEC_FORMS for form in ("http/URL", "openai", "anthropic", "gemini", "openrouter", "NAME@URL"))
    with pytest.raises(SpecError, match="^unknown model spec 'anthropic': use local"):
        parse_spec("anthropic")  # a provider's name alone is no model
    with pytest.raises(SpecError, match="names a URL and base_url names another"):
        parse_spec("vllm/Q@http://a/v1", "http://b/v1")
    with pytest.raises(SpecError) as err:
        parse_spec("vllm/Q", "ftp://user:hunter2secret@host/v1")
    assert "is not an http(s) URL" in str(err.value) and "hunter2secret" not in str(err.value)
    assert "\n" not in str(err.value)


def test_a_spec_never_shows_the_credentials_of_its_url():
    spec = parse_spec("vllm/Q@http://user:hunter2secret@host:8000/v1")
    assert spec.base_url == "http://user:hunter2secret@host:8000/v1"  # kept for the backend
    assert "hunter2secret" not in repr(spec) and "hunter2secret" not in str(spec)


def test_split_url_keeps_the_rules_of_study_files():
    assert split_url(f"vllm/Q @ {URL} ") == ("vllm/Q", URL)
    assert split_url("vllm/Q@") == ("vllm/Q", None)
    assert split_url("vllm/Q", URL) == ("vllm/Q", URL)
    assert split_url(f"vllm/Q@{URL}", URL) == ("vllm/Q", URL)


def test_model_entries_expose_their_parsed_spec_and_hash_the_same_fields():
    entry = ModelEntry(name="q", spec=f"vllm/Qwen2.5-7B@{URL}", temperature=0.5)
    assert entry.model_spec == ModelSpec("vllm/Qwen2.5-7B", "hosted", "Qwen2.5-7B", "vllm", URL)
    assert entry.model_spec is entry.model_spec  # parsed once
    assert parse_model_spec(f"vllm/Qwen2.5-7B@{URL}").model_spec == entry.model_spec
    # what a game id hashes of a model entry: exactly its fields, none added by the parsing
    dumped = entry.identity()
    assert dumped == {
        "name": "q", "spec": "vllm/Qwen2.5-7B", "display_name": None, "base_url": URL, "api_key_env": "OPENAI_API_KEY",
        "temperature": 0.5, "max_tokens": 256, "max_concurrency": 16, "max_attempts": 5, "timeout": 120.0, "constrained": False,
        "price_input": 0.0, "price_output": 0.0, "params": {},
    }
    # reasoning settings are part of the id once set (never while unset: old ids stay)
    effort = ModelEntry(name="q", spec=f"vllm/Qwen2.5-7B@{URL}", temperature=0.5, reasoning_effort="low").identity()
    assert effort == {**dumped, "reasoning_effort": "low"}
    assert ModelEntry(name="s", spec="strategy/self-max").is_strategy and ModelEntry(name="h", spec="human").is_human
    assert ModelEntry(name="a", spec="mystery").name == "a"  # an unknown spec fails when its backend is built
    with pytest.raises(StudyError, match="unknown model spec 'mystery' for model 'a'"):
        build_backend(ModelEntry(name="a", spec="mystery"))


def test_providers_declare_their_factory_and_defaults(monkeypatch):
    assert {"openai", "anthropic", "vllm", "sglang", "ollama", "openrouter", "deepseek", "llamacpp", "together"} <= set(PROVIDERS)
    assert PROVIDERS["anthropic"].key_env == "ANTHROPIC_API_KEY" and PROVIDERS["vllm"].key_env == DEFAULT_KEY_ENV
    assert PROVIDERS["llamacpp"].dialect == "llamacpp" and PROVIDERS["vllm"].dialect == "vllm" and PROVIDERS["deepseek"].dialect == "deepseek"
    # providers with an API of their own reach it without a base URL (never OpenAI's by mistake)
    assert PROVIDERS["deepseek"].base_url.startswith("https://api.deepseek.com") and PROVIDERS["gemini"].key_env == "GEMINI_API_KEY"
    backend = open_backend(parse_spec("llamacpp/smol", URL), BackendOptions(timeout=30, transport="aiohttp"))
    assert isinstance(backend, ChatCompletionsBackend) and backend.dialect == "llamacpp" and backend.transport.name == "aiohttp"
    assert backend.identity == f"openai:{URL}:smol"  # cache keys do not depend on the transport
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-anthropic-1234")
    with pytest.raises(BackendError, match="needs an API key in the environment variable ANTHROPIC_API_KEY"):
        open_backend(parse_spec("anthropic/claude-x"))
    monkeypatch.setenv("MY_KEY", "sk-mine-1234567890")
    assert open_backend(parse_spec("openai/gpt-x"), BackendOptions(api_key_env="MY_KEY")).api_key == "sk-mine-1234567890"
    with pytest.raises(SpecError, match="without a backend"):
        open_backend(parse_spec("strategy/self-max"))


LEAN_ONLY = """
import sys
from agorabench.core.seating import build_backend
from agorabench.core.study import ModelEntry
for transport in ("lean", "aiohttp"):
    backend = build_backend(ModelEntry(name="m", spec="vllm/x@http://127.0.0.1:1/v1", transport=transport))
    assert backend.transport.name == transport
print("openai" in sys.modules, "anthropic" in sys.modules)
build_backend(ModelEntry(name="m", spec="vllm/x@http://127.0.0.1:1/v1", transport="sdk"))
print("openai" in sys.modules)
"""


def test_the_openai_sdk_is_imported_only_for_the_sdk_transport():
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(LEAN_ONLY)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "True"]


def test_backends_name_their_probe(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-probe-test-123456")
    hosted = build_backend(ModelEntry(name="m", spec="openai/gpt-x", timeout=3))
    assert hosted.probe_target() == (None, "sk-probe-test-123456", "gpt-x", 3.0)
    assert build_backend(ModelEntry(name="m", spec=f"vllm/x@{URL}")).probe_target() == (URL, "sk-probe-test-123456", "x", 10.0)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-1234567")
    assert build_backend(ModelEntry(name="c", spec="anthropic/claude-x")).probe_target() is None


def _timeout_of(name):
    """The exception a transport's client raises when the server does not answer in time."""
    if name != "sdk":
        return asyncio.TimeoutError()
    import httpx
    import openai

    return openai.APITimeoutError(request=httpx.Request("POST", URL + "/chat/completions"))


@pytest.mark.parametrize("name", sorted(TRANSPORTS))
def test_transports_classify_their_client_errors(name):
    endpoint = Endpoint(URL, URL, "k", None, 2.0)
    transport = open_transport(name, endpoint)
    assert transport.name == name
    timeout = transport.classify(_timeout_of(name))
    assert timeout is not None and timeout.retryable and timeout.timed_out
    assert transport.classify(KeyError("a bug")) is None  # left to the model's catch-all
    if name == "lean":
        assert "connection refused at http://127.0.0.1:1/v1" in str(transport.classify(ConnectError("refused", refused=True)))
        assert "cut off" in str(transport.classify(ConnectionLost("gone")))
        big = transport.classify(BodyTooLarge("1 GiB"))
        assert str(big) == str(too_large(BodyTooLarge("1 GiB"))) and not big.retryable
    asyncio.run(transport.aclose())


def test_an_unknown_transport_is_named():
    with pytest.raises(ValueError, match="unknown transport 'carrier-pigeon'; use one of lean, aiohttp, sdk"):
        open_transport("carrier-pigeon", Endpoint(URL, URL, "k", None, 1.0))


def test_the_wire_format_of_the_http_transports():
    request = {"model": "m", "messages": [], "extra_body": {"grammar": "root ::= x"}}
    assert flat_body(request) == {"model": "m", "messages": [], "grammar": "root ::= x"}
    assert flat_body({"model": "m", "response_format": {"type": "json_object"}}) == {"model": "m", "response_format": {"type": "json_object"}}
    c = read_answer(200, {}, b'{"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 3, "prompt_tokens_details": {"cached_tokens": 2}}}')
    assert (c.text, c.prompt_tokens, c.cached_tokens, c.finish_reason) == ("hi", 3, 2, "stop")
    with pytest.raises(BackendError, match="rate limited: slow") as err:
        read_answer(429, {"Retry-After": "2"}, b'{"error": {"message": "slow"}}')
    assert err.value.retry_after == 2.0
    with pytest.raises(BackendError, match="cut off or malformed"):
        read_answer(200, {}, b"<html>")
