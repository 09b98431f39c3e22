"""Issue 40 items 3-5: each server gets its own wire form. A reasoning-looking model on a generic
OpenAI-compatible server gets ``max_tokens`` with its temperature and seed (OpenAI's reasoning
form is OpenAI's and Azure's only); Gemini's thinking budget travels in the documented
``extra_body.google.thinking_config`` (its server refuses unknown top-level fields); Claude Opus
4.7 and later refuse thinking ``enabled``, and settings a model cannot take are one line each at
study check. Checked against the loopback servers of tests/support/providers.py."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from agorabench.core.decoding import decoding
from agorabench.core.study import ModelEntry
from agorabench.models.base import BackendError, GenerationSettings
from agorabench.models.openai_compat import chat_request
from agorabench.models.providers import open_backend, spec_dialect
from agorabench.models.reasoning import chat_fields, setting_problems
from agorabench.models.spec import parse_spec
from support.providers import provider_server, server_stats

MESSAGES = [{"role": "user", "content": "Pick a number from 1 to 10. Finish with a last line of the form 'Answer: N'."}]


def _complete(spec_text: str, settings: GenerationSettings) -> Any:
    async def go() -> Any:
        backend = open_backend(parse_spec(spec_text))
        try:
            return await backend.complete(MESSAGES, settings)
        finally:
            await backend.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize(
    "spec, dialect",
    [
        ("qwen3@http://127.0.0.1:11434/v1", "generic"),
        ("gpt-oss-20b@http://localhost:1234/v1", "generic"),  # LM Studio
        ("o3@https://api.openai.com/v1", "openai"),
        ("o3@https://myres.openai.azure.com/openai/v1", "openai"),
        ("openai/o3", "openai"),
        ("openai/o3@http://127.0.0.1:9/v1", "openai"),  # said to be OpenAI: taken at its word
        ("openrouter/qwen/qwen3-235b", "generic"),
        ("vllm/qwen3@http://127.0.0.1:8000/v1", "vllm"),
        ("ollama/qwen3@http://127.0.0.1:11434/v1", "ollama"),
    ],
)
def test_only_openai_and_azure_speak_openais_dialect(spec: str, dialect: str) -> None:
    assert spec_dialect(parse_spec(spec)) == dialect


def test_a_reasoning_name_on_a_generic_server_keeps_max_tokens_temperature_and_seed() -> None:
    entry = ModelEntry(name="q", spec="qwen3@http://127.0.0.1:11434/v1", temperature=0.7, max_tokens=300)
    d = decoding(entry, seed=11)
    assert d.settings.reasoning and d.unsent is None
    fields = chat_fields("generic", d.settings)
    assert "max_completion_tokens" not in fields
    assert fields["max_tokens"] == 300 + 16_000 and fields["temperature"] == 0.7 and fields["seed"] == 11
    off = chat_fields("generic", GenerationSettings(temperature=0.7, seed=1, max_tokens=50, reasoning=True, thinking="off"))
    assert off["reasoning_effort"] == "none"  # the server's own thinking switch
    # OpenAI's own API keeps its reasoning form
    d = decoding(ModelEntry(name="o", spec="openai/o3", temperature=0.7), seed=11)
    assert chat_fields("openai", d.settings).keys() >= {"max_completion_tokens"} and d.unsent == "reasoning"


def test_a_non_reasoning_request_is_unchanged() -> None:
    settings = GenerationSettings(temperature=0.5, seed=3, max_tokens=64)
    for dialect in ("openai", "generic"):
        body = chat_request("llama3", dialect, MESSAGES, settings)
        assert json.dumps(body) == json.dumps({"model": "llama3", "messages": MESSAGES, "max_tokens": 64, "temperature": 0.5, "seed": 3})


def test_an_ollama_like_server_receives_qwen3_with_max_tokens_temperature_and_seed() -> None:
    with provider_server("ollama") as base:
        entry = ModelEntry(name="q", spec=f"qwen3@{base}", temperature=0.7, max_tokens=120)
        settings = decoding(entry, seed=5).settings
        completion = _complete(f"qwen3@{base}", settings)
        assert completion.text
        body = server_stats(base, bodies=True)["bodies"][-1]
    assert "max_completion_tokens" not in body
    assert body["max_tokens"] == 120 + 16_000 and body["temperature"] == 0.7 and body["seed"] == 5


def _post(base: str, body: dict[str, Any]) -> tuple[int, Any]:
    req = urllib.request.Request(base + "/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json", "Authorization": "Bearer k"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_gemini_takes_its_budget_in_extra_body_and_refuses_unknown_top_level_fields() -> None:
    settings = GenerationSettings(temperature=None, seed=None, max_tokens=100, reasoning=True, reasoning_budget=512)
    fields = chat_fields("gemini", settings)
    assert fields["extra_body"] == {"google": {"thinking_config": {"thinking_budget": 512}}} and "google" not in fields
    with provider_server("gemini") as base:
        status, reply = _post(base, {"model": "gemini-2.5-flash", "messages": MESSAGES, "google": {"thinking_config": {"thinking_budget": 512}}})
        assert status == 400
        assert reply[0]["error"]["status"] == "INVALID_ARGUMENT" and 'Unknown name "google"' in reply[0]["error"]["message"]
        completion = _complete(f"gemini/gemini-2.5-flash@{base}", settings)
        assert completion.text
        body = server_stats(base, bodies=True)["bodies"][-1]
    assert body["extra_body"] == {"google": {"thinking_config": {"thinking_budget": 512}}}


@pytest.mark.parametrize(
    "dialect, name, kw, words",
    [
        ("gemini", "gemini-2.5-pro", dict(thinking="off"), "cannot turn its thinking off"),
        ("gemini", "gemini-3-pro-preview", dict(reasoning_effort="none"), "cannot turn its thinking off"),
        ("gemini", "gemini-3-flash-preview", dict(thinking="off"), "cannot turn its thinking off"),
        ("gemini", "gemini-3-pro-preview", dict(reasoning_effort="medium"), "\"low\" or \"high\" only"),
        ("anthropic", "claude-opus-4-7", dict(thinking="on"), "thinking = \"adaptive\""),
        ("anthropic", "claude-opus-5", dict(thinking="on"), "thinking = \"adaptive\""),
    ],
)
def test_settings_a_model_refuses_are_one_line_at_study_check(dialect: str, name: str, kw: dict[str, Any], words: str) -> None:
    problems = setting_problems(dialect, GenerationSettings(reasoning=True, **kw), name)
    assert len(problems) == 1 and words in problems[0] and "\n" not in problems[0]


@pytest.mark.parametrize(
    "dialect, name, kw",
    [
        ("gemini", "gemini-2.5-flash", dict(thinking="off")),
        ("gemini", "gemini-3-pro-preview", dict(reasoning_effort="high")),
        ("gemini", "gemini-3.1-pro-preview", dict(reasoning_effort="medium")),
        ("gemini", "gemini-3-flash-preview", dict(reasoning_effort="medium")),
        ("anthropic", "claude-opus-4-5", dict(thinking="on")),
        ("anthropic", "claude-opus-4-20250514", dict(thinking="on")),
        ("anthropic", "claude-opus-5", dict(thinking="adaptive", reasoning_effort="high")),
    ],
)
def test_settings_a_model_takes_are_no_problem(dialect: str, name: str, kw: dict[str, Any]) -> None:
    assert setting_problems(dialect, GenerationSettings(reasoning=True, **kw), name) == []


def test_the_anthropic_server_refuses_enabled_thinking_for_opus_4_7_and_later() -> None:
    with provider_server("anthropic") as base:
        for model, refused in (("claude-opus-4-7", True), ("claude-opus-5", True), ("claude-sonnet-4-5", False)):
            body = {"model": model, "max_tokens": 4096, "messages": MESSAGES, "thinking": {"type": "enabled", "budget_tokens": 2048}}
            req = urllib.request.Request(base + "/messages", data=json.dumps(body).encode(), headers={"Content-Type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01"})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    status, reply = resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                status, reply = exc.code, json.loads(exc.read())
            if refused:
                assert status == 400 and reply["type"] == "error" and reply["error"]["type"] == "invalid_request_error"
                assert "adaptive" in reply["error"]["message"]
            else:
                assert status == 200, reply
        # adaptive thinking with an effort is what Opus 5 takes
        with pytest.raises(BackendError):
            _complete(f"anthropic/claude-opus-5@{base}", GenerationSettings(temperature=None, seed=None, max_tokens=200, reasoning=True, thinking="on"))
        done = _complete(f"anthropic/claude-opus-5@{base}", GenerationSettings(temperature=None, seed=None, max_tokens=200, reasoning=True, thinking="adaptive", reasoning_effort="high"))
        assert done.text
