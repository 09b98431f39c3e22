"""Issue 40, items 1 and 2 (unit): a refused setting is read from the provider's error fields
(OpenAI's ``code`` / ``param``, Anthropic's ``type``, Google's list body and field violations),
not only from words; a 400 of one request's content (its length, a filter, a message) never is;
the same bad request three times in a row on the same settings stops the model in one line; the
Responses transport asks for the summary the entry names, and a refused summary is dropped once.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agorabench.models.base import BackendError, Completion, GenerationSettings
from agorabench.models.errors import StatusError, error_fields, refused_setting, sdk_error, status_error
from agorabench.models.model import STOP_AFTER_REFUSED, Model, RetryPolicy
from agorabench.models.transport import Endpoint
from agorabench.models.transport.responses import ResponsesTransport, responses_body
from agorabench.models.transport.wire import answer_object


def _raise(status: int, body: Any) -> StatusError:
    """The error a transport raises for ``status`` with JSON ``body``."""
    with pytest.raises(BackendError) as caught:
        answer_object(status, {}, json.dumps(body).encode())
    assert isinstance(caught.value, StatusError)
    return caught.value


def _openai(message: str, param: str | None, code: str | None, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


VERIFY = "Your organization must be verified to generate reasoning summaries. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization."

#: (status, body, the setting named or None when nothing is refused, words of the fix)
SHAPES: dict[str, tuple[int, Any, str | None, str]] = {
    "openai-unsupported-value": (400, _openai(VERIFY, "reasoning.summary", "unsupported_value"), "reasoning.summary", 'reasoning_summary = "none"'),
    "openai-unsupported-parameter": (400, _openai("Unsupported parameter: 'max_tokens' is not supported with this model.", "max_tokens", "unsupported_parameter"), "max_tokens", "reasoning = true"),
    "openai-invalid-value-setting": (400, _openai("Invalid value: 'ultra'. Supported values are: 'low' and 'high'.", "reasoning.effort", "invalid_value"), "reasoning.effort", "effort"),
    "openai-unknown-parameter": (400, _openai("Unknown parameter: 'verbosity_level'.", "verbosity_level", "unknown_parameter"), "verbosity_level", "remove 'verbosity_level'"),
    # an error code alone decides, whatever the words
    "openai-code-only": (400, _openai("Nope.", "temperature", "unsupported_value"), "temperature", 'temperature = "default"'),
    "anthropic-adaptive-only": (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "thinking.type: 'enabled' is not supported for this model. Use 'adaptive' instead."}}, "thinking", '"adaptive"'),
    "gemini-list-thinking-level": (400, [{"error": {"code": 400, "message": "Thinking level MEDIUM is not supported for this model.", "status": "INVALID_ARGUMENT"}}], "thinking level MEDIUM", '"low" or "high"'),
    "gemini-list-unknown-field": (400, [{"error": {"code": 400, "message": 'Invalid JSON payload received. Unknown name "google": Cannot find field.', "status": "INVALID_ARGUMENT"}}], "google", "remove 'google'"),
    # not refusals: one request's content, or not a bad request at all
    "openai-context-length": (400, _openai("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", "messages", "context_length_exceeded"), None, ""),
    "openai-invalid-value-message": (400, _openai("Invalid value for 'content': expected a string, got null.", "messages.[2].content", "invalid_value"), None, ""),
    "anthropic-prompt-too-long": (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}, None, ""),
    "gemini-context": (400, [{"error": {"code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}], None, ""),
    "openai-content-filter": (400, _openai("Invalid prompt: your prompt was flagged as potentially violating our usage policy.", None, "invalid_prompt"), None, ""),
    "openai-429-unsupported": (429, _openai("Rate limit reached.", "temperature", "unsupported_value", "requests"), None, ""),
    "openai-500-unsupported": (500, _openai("The server had an error. Unsupported value somewhere.", None, "unsupported_value", "server_error"), None, ""),
    "gemini-enum-unknown-wording": (400, [{"error": {"code": 400, "message": "Invalid value at 'generation_config.thinking_config.thinking_level' (ThinkingLevel), \"ultra\"", "status": "INVALID_ARGUMENT",
                                                     "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": "generation_config.thinking_config.thinking_level"}]}]}}], None, ""),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_error_body_is_read_as_a_refused_setting_or_not(shape: str) -> None:
    status, body, setting, fix = SHAPES[shape]
    error = _raise(status, body)
    assert error.status == status
    if setting is None:
        assert error.setting is None and not (error.fatal and status in (400, 422)), str(error)
        assert "refuses" not in str(error)
        return
    assert error.fatal and not error.retryable and error.setting == setting, (str(error), error.setting)
    line = str(error)
    assert "\n" not in line and line.startswith(f"the server refuses {setting}, ") and fix in line, line


def test_the_fields_of_every_body_shape_are_read() -> None:
    assert error_fields({"error": {"message": "m", "type": "t", "param": "p", "code": "c"}}) == error_fields([{"error": {"message": "m", "type": "t", "param": "p", "code": "c"}}])
    google = error_fields([{"error": {"code": 400, "message": "m", "status": "INVALID_ARGUMENT", "details": [{"fieldViolations": [{"field": "a.b"}]}]}}])
    assert (google.message, google.code, google.param, google.kind) == ("m", None, "a.b", "INVALID_ARGUMENT")  # the numeric code repeats the status
    anthropic = error_fields({"type": "error", "error": {"type": "invalid_request_error", "message": "m"}})
    assert (anthropic.message, anthropic.kind) == ("m", "invalid_request_error")
    vllm = error_fields({"object": "error", "message": "m", "type": "BadRequestError", "param": None, "code": 400})
    assert (vllm.message, vllm.kind, vllm.code) == ("m", "BadRequestError", None)
    assert error_fields(None, b"<html>gateway</html>").message == "<html>gateway</html>"


def test_the_words_alone_still_decide_where_a_server_gives_no_code() -> None:
    assert refused_setting(400, "Unsupported value: 'temperature' does not support 0.0 with this model.") == ("temperature", 'set temperature = "default" (no temperature or seed is sent)')
    assert refused_setting(422, "Extra inputs are not permitted: 'foo'") is not None
    assert refused_setting(400, "Invalid value for field") is None
    assert refused_setting(503, "Unsupported value") is None


def test_an_sdk_error_keeps_the_fields_of_its_body() -> None:
    import httpx
    import openai

    request = httpx.Request("POST", "http://127.0.0.1/v1/responses")
    body = {"message": VERIFY, "type": "invalid_request_error", "param": "reasoning.summary", "code": "unsupported_value"}
    exc = openai.BadRequestError(f"Error code: 400 - {body}", response=httpx.Response(400, request=request), body=body)
    error = sdk_error(exc, openai)
    assert isinstance(error, StatusError) and error.fatal and error.setting == "reasoning.summary" and error.code == "unsupported_value"


# ---------------------------------------------------------------------------------------------
# The same bad request on the same settings, three times in a row


class Refusing:
    """A backend whose calls are refused with ``error`` (a fresh one each call) until ``ok``."""

    identity = "test:refusing"
    serialized = False
    dialect = "openai"

    def __init__(self, message: str, code: str | None = None, param: str | None = None) -> None:
        self.message, self.code, self.param = message, code, param
        self.calls = 0
        self.ok = False

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        self.calls += 1
        if self.ok:
            return Completion(text="fine", prompt_tokens=3, completion_tokens=1)
        raise status_error(400, self.message.format(n=self.calls), {}, self.code, self.param)

    async def aclose(self) -> None:
        return None


def _model(backend: Refusing) -> Model:
    return Model(backend, GenerationSettings(), retry=RetryPolicy(max_attempts=2, base_delay=0.0))


def _play(model: Model, n: int, settings: GenerationSettings | None = None) -> list[BackendError]:
    async def go() -> list[BackendError]:
        out = []
        for i in range(n):
            try:
                await model.complete([{"role": "user", "content": f"game {i}"}], settings)
            except BackendError as exc:
                out.append(exc)
        return out

    return asyncio.run(go())


def test_the_same_unknown_bad_request_three_times_stops_the_model_once_naming_the_param() -> None:
    backend = Refusing('Invalid value at \'generation_config.thinking_config.thinking_level\' (ThinkingLevel), "ultra" (request {n})', param="generation_config.thinking_config.thinking_level")
    model = _model(backend)
    errors = _play(model, 6)
    assert backend.calls == STOP_AFTER_REFUSED  # a bad request is not retried; after the third none is sent
    assert [e.fatal for e in errors] == [False] * (STOP_AFTER_REFUSED - 1) + [True] * (6 - STOP_AFTER_REFUSED + 1)
    assert model.dead is not None and "\n" not in model.dead
    assert "refused 3 calls in a row with the same settings" in model.dead and "generation_config.thinking_config.thinking_level" in model.dead and '"low" or "high"' in model.dead
    assert all(model.dead in str(e) for e in errors[STOP_AFTER_REFUSED - 1:])


def test_context_length_and_content_400s_never_stop_the_model() -> None:
    for message, code, param in (
        ("This model's maximum context length is 8192 tokens. However, you requested {n}000 tokens.", "context_length_exceeded", "messages"),
        ("The input token count ({n}00000) exceeds the maximum number of tokens allowed (1048576).", None, None),
        ("Invalid prompt: your prompt was flagged.", "invalid_prompt", None),
    ):
        backend = Refusing(message, code, param)
        model = _model(backend)
        errors = _play(model, 5)
        assert backend.calls == 5 and model.dead is None and not any(e.fatal for e in errors), message


def test_a_reply_on_the_same_settings_or_other_settings_reset_the_count() -> None:
    backend = Refusing("Something odd about request {n}.")
    model = _model(backend)
    _play(model, STOP_AFTER_REFUSED - 1)
    backend.ok = True
    _play(model, 1)  # the settings are taken after all: the bad requests were the requests'
    backend.ok = False
    _play(model, STOP_AFTER_REFUSED - 1)
    assert model.dead is None
    other = GenerationSettings(temperature=0.5)  # other settings count apart
    _play(model, STOP_AFTER_REFUSED - 1, other)
    assert model.dead is None
    _play(model, 1)
    assert model.dead is not None and "a setting of the request" in model.dead


# ---------------------------------------------------------------------------------------------
# reasoning_summary on the Responses API


REQUEST = {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 100, "reasoning_effort": "low"}


def test_the_default_summary_sends_what_was_sent_before_and_the_others_as_named() -> None:
    assert json.dumps(responses_body(REQUEST)) == json.dumps(responses_body(REQUEST, "auto"))
    assert responses_body(REQUEST)["reasoning"] == {"effort": "low", "summary": "auto"}
    assert responses_body(REQUEST, "none")["reasoning"] == {"effort": "low"}
    assert responses_body(REQUEST, "detailed")["reasoning"] == {"effort": "low", "summary": "detailed"}
    plain = {k: v for k, v in REQUEST.items() if k != "reasoning_effort"}
    assert responses_body(plain, "concise")["reasoning"] == {"summary": "concise"} and "reasoning" not in responses_body(plain, "none")
    nonreasoning = {"model": "gpt-4o-mini", "messages": REQUEST["messages"], "max_tokens": 50, "temperature": 0.0}
    assert responses_body(nonreasoning, "none") == responses_body(nonreasoning) and "reasoning" not in responses_body(nonreasoning)
    with pytest.raises(ValueError, match="reasoning_summary must be one of"):
        ResponsesTransport(Endpoint(None, None, "k", None, 1.0), "short")


def test_a_refused_summary_is_dropped_once_and_never_asked_again() -> None:
    sent: list[dict[str, Any]] = []

    class Transport(ResponsesTransport):
        async def _post(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
            data = json.loads(body)
            sent.append(data)
            if "summary" in data.get("reasoning", {}):
                return 400, {}, json.dumps(_openai(VERIFY, "reasoning.summary", "unsupported_value")).encode()
            answer = {"status": "completed", "output": [{"type": "message", "content": [{"type": "output_text", "text": "B"}]}], "usage": {"input_tokens": 3, "output_tokens": 2}}
            return 200, {}, json.dumps(answer).encode()

    transport = Transport(Endpoint(None, None, "k", None, 1.0))
    first = asyncio.run(transport.send(dict(REQUEST)))
    assert first.text == "B" and "must be verified" in first.extra["reasoning_summary_refused"]
    second = asyncio.run(transport.send(dict(REQUEST)))
    assert second.text == "B" and "reasoning_summary_refused" not in second.extra
    assert ["summary" in b["reasoning"] for b in sent] == [True, False, False]
    assert transport.summary == "none"
