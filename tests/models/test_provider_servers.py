"""The loopback servers of tests/support/providers.py behave as each provider documents its API
for reasoning models: status codes and error bodies, where the reasoning goes, how it is
counted, what a budget that reasoning eats returns. Checked with plain HTTP requests (urllib),
never with our own client; and the answers they give are valid moves of our games, with a
draft in the reasoning that differs from them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from contextlib import ExitStack
from typing import Any

import pytest

from support.providers import EFFORT_TOKENS, REJECTION, draft_answer, final_answer, provider_server, reasoning_text, server_stats, words

SYSTEM = "You are Alice, one of two players in a game; the other player is Bob. Together you have $10,000 to share."
BARGAIN = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Round 1.\nIt is your turn to propose how to split $10,000 between you and Bob. The two amounts must add up to $10,000.\n"
     'Answer with a JSON object of this form:\n{"alice_gain": <amount Alice receives>, "bob_gain": <amount Bob receives>}'},
]
ENVY = [
    {"role": "system", "content": "You are rated by researchers.\n\nAnswer in this XML format:\n<response>\n  <choice>CHOICE</choice>\n  <reasoning>REASONING</reasoning>\n</response>"},
    {"role": "user", "content": "You may pick one of these options:\nA) You receive 5 points.\nB) You receive 4 points.\nC) You receive 2 points.\n\nWhich option do you pick (A, B or C), and why? Reply in the XML format described above."},
]
HARVEST = [
    {"role": "system", "content": "You are John, a fisher."},
    {"role": "user", "content": "How many tons of fish do you catch this month? Give a whole number from 0 to 100.\nFinish with a last line of the form 'Answer: N', where N is your number of tons."},
]
ANTHROPIC_HEADERS = {"x-api-key": "test-key", "anthropic-version": "2023-06-01"}

#: Every server the tests use, by name: (provider, options).
CONFIGS = {
    "openai": ("openai", {}),
    "openai-fixed": ("openai", {"reasoning_tokens": 7, "models": "o3,gpt-5"}),
    "anthropic": ("anthropic", {}),
    "anthropic-omitted": ("anthropic", {"display": "omitted"}),
    "anthropic-redacted": ("anthropic", {"redacted": True}),
    "deepseek": ("deepseek", {}),
    "vllm": ("vllm", {}),
    "vllm-reasoning": ("vllm", {"field": "reasoning"}),
    "vllm-raw": ("vllm", {"raw_think": True}),
    "vllm-no-opener": ("vllm", {"raw_think": True, "no_opener": True}),
    "ollama": ("ollama", {}),
    "gemini": ("gemini", {}),
}


@pytest.fixture(scope="module")
def servers():
    """Base URLs (``.../v1``) of the servers of :data:`CONFIGS`, started once for the module."""
    with ExitStack() as stack:
        yield {name: stack.enter_context(provider_server(provider, **opts)) for name, (provider, opts) in CONFIGS.items()}


def call(base: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """One request to the server at ``base`` (``path`` below ``/v1``): (status, JSON body)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json", "Authorization": "Bearer test-key", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def chat(base: str, **body: Any) -> tuple[int, Any]:
    return call(base, "/chat/completions", {"messages": BARGAIN, **body})


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(words(m["content"]) for m in messages)


# ---------------------------------------------------------------------------------------------
# The answer and the draft


def test_final_answer_reads_each_format_and_the_draft_differs():
    offer = json.loads(final_answer(BARGAIN))
    assert set(offer) == {"alice_gain", "bob_gain"} and offer["alice_gain"] + offer["bob_gain"] == 10_000
    draft = json.loads(draft_answer(BARGAIN))
    assert draft["alice_gain"] + draft["bob_gain"] == 10_000 and draft["alice_gain"] != offer["alice_gain"]
    xml, xml_draft = final_answer(ENVY), draft_answer(ENVY)
    choice = xml.split("<choice>")[1].split("</choice>")[0]
    other = xml_draft.split("<choice>")[1].split("</choice>")[0]
    assert choice in "ABC" and other in "ABC" and choice != other and xml.startswith("<response>")
    line, line_draft = final_answer(HARVEST).splitlines()[-1], draft_answer(HARVEST).splitlines()[-1]
    assert line.startswith("Answer: ") and 0 <= int(line.split()[-1]) <= 100 and line != line_draft
    options = [{"role": "user", "content": 'Do you accept this price? Answer with {"decision": "accept"} or {"decision": "reject"}, or {"decision": "quit"} to leave.'}]
    assert json.loads(final_answer(options))["decision"] in ("accept", "reject", "quit")
    assert json.loads(final_answer(options)) != json.loads(draft_answer(options))


def test_final_answer_is_a_function_of_the_conversation_alone():
    assert final_answer(BARGAIN) == final_answer(json.loads(json.dumps(BARGAIN)))
    # the Messages API form of the same conversation (system apart, content blocks) answers alike
    blocks = [{"role": "system", "content": [{"type": "text", "text": SYSTEM}]}, {"role": "user", "content": [{"type": "text", "text": BARGAIN[1]["content"]}]}]
    assert final_answer(blocks) == final_answer(BARGAIN)
    # ... and so does the conversation split into more messages of one role, or with other spacing
    split = [BARGAIN[0], {"role": "user", "content": BARGAIN[1]["content"][:9]}, {"role": "user", "content": BARGAIN[1]["content"][9:]}]
    assert final_answer(split) == final_answer(BARGAIN) and draft_answer(split) == draft_answer(BARGAIN)
    # other conversations get other values (a hash of the conversation picks them)
    rounds = [[BARGAIN[0], {**BARGAIN[1], "content": BARGAIN[1]["content"].replace("Round 1.", f"Round {i}.")}] for i in range(1, 9)]
    assert len({final_answer(r) for r in rounds}) > 1


def test_reasoning_has_the_draft_and_exactly_the_effort_length():
    for effort, n in EFFORT_TOKENS.items():
        text = reasoning_text(BARGAIN, n)
        assert words(text) == n, effort
        if n >= 50:
            assert draft_answer(BARGAIN) in text and REJECTION in text and final_answer(BARGAIN) not in text
    assert reasoning_text(BARGAIN, 0) == "" and words(reasoning_text(BARGAIN, 3)) == 3


def test_answers_are_valid_moves_of_every_game():
    """Played through every registered game: the final answer always parses to a valid action
    of the type asked for, and so does the draft, with a different action."""
    from agorabench import conformance, families
    from agorabench.core.table import Reply

    variants = {"glee.bargaining": [{"messages": True}], "glee.negotiation": [{"messages": True, "outside_option": True}],
                "glee.persuasion": [{"messages": True, "buyer_messages": True}], "commons": [{"protocol": "legacy"}, {"language": "ja"}]}
    problems: list[str] = []
    asked = 0

    class Server:
        async def act(self, request):
            nonlocal asked
            asked += 1
            final, draft = final_answer(request.messages), draft_answer(request.messages)
            try:
                if request.action_type.parse(final) == request.action_type.parse(draft):
                    problems.append(f"{request.action_type.__name__}: the draft equals the answer {final!r}")
            except ValueError as exc:
                problems.append(f"{request.action_type.__name__}: {exc} in {final!r} / {draft!r}")
            return Reply(text=final)

    for game, example in families.examples().items():
        for extra in [{}, *variants.get(game, [])]:
            config = families.load_game(game).Config(**{**example, **extra})
            played = conformance.play(game, {r: Server() for r in families.load_game(game).active_roles(config)}, config=config)
            problems += [f"{game}: turn {t.index} re-asked or invalid ({t.error})" for t in played.turns if not t.valid or t.retries]
    assert asked > 50 and not problems, problems[:5]


# ---------------------------------------------------------------------------------------------
# OpenAI


def test_openai_chat_counts_reasoning_and_never_returns_it(servers):
    base = servers["openai"]
    status, body = chat(base, model="gpt-5", max_completion_tokens=5000, seed=7)
    assert status == 200
    message, usage = body["choices"][0]["message"], body["usage"]
    assert message["content"] == final_answer(BARGAIN) and body["choices"][0]["finish_reason"] == "stop"
    answer = words(final_answer(BARGAIN))
    assert usage["completion_tokens_details"]["reasoning_tokens"] == 600 and usage["completion_tokens"] == 600 + answer
    assert usage["prompt_tokens"] == prompt_tokens(BARGAIN) and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert draft_answer(BARGAIN) not in json.dumps(body) and not any("reason" in k for k in message)
    for effort, n in EFFORT_TOKENS.items():
        if effort != "max":
            status, body = chat(base, model="o3", reasoning_effort=effort, temperature=1)
            assert status == 200 and body["usage"]["completion_tokens_details"]["reasoning_tokens"] == n, effort


def test_openai_chat_refuses_what_reasoning_models_refuse(servers):
    base = servers["openai"]
    assert chat(base, model="o4-mini", max_tokens=100) == (400, {"error": {
        "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}})
    assert chat(base, model="gpt-5", temperature=0) == (400, {"error": {
        "message": "Unsupported value: 'temperature' does not support 0.0 with this model. Only the default (1) value is supported.",
        "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}})
    status, body = chat(base, model="gpt-5", temperature=0.7)
    assert status == 400 and "does not support 0.7 with this model" in body["error"]["message"]
    status, body = chat(base, model="gpt-5", reasoning_effort="extreme")
    assert status == 400 and body["error"]["param"] == "reasoning_effort" and body["error"]["code"] == "unsupported_value"
    assert chat(base, model="gpt-5-pro") == (404, {"error": {
        "message": "This model is only supported in v1/responses and not in v1/chat/completions.",
        "type": "invalid_request_error", "param": "model", "code": None}})
    # a model that does not reason takes both, and reports no reasoning
    status, body = chat(base, model="gpt-4o-mini", max_tokens=100, temperature=0)
    assert status == 200 and body["usage"]["completion_tokens_details"]["reasoning_tokens"] == 0
    assert body["choices"][0]["message"]["content"] == final_answer(BARGAIN)


def test_openai_chat_budget_eaten_by_reasoning_gives_empty_content(servers):
    status, body = chat(servers["openai"], model="gpt-5", max_completion_tokens=100)
    assert status == 200 and body["choices"][0]["message"]["content"] == "" and body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 100 and body["usage"]["completion_tokens_details"]["reasoning_tokens"] == 100
    status, body = chat(servers["openai"], model="gpt-5", max_completion_tokens=601)  # reasoning fits, the answer does not
    assert body["choices"][0]["message"]["content"] == "" and body["choices"][0]["finish_reason"] == "length"


def test_openai_fixed_reasoning_length_and_model_list(servers):
    base = servers["openai-fixed"]
    for effort in ("low", "xhigh"):
        _, body = chat(base, model="gpt-5", reasoning_effort=effort)
        assert body["usage"]["completion_tokens_details"]["reasoning_tokens"] == 7
    assert call(base, "/models") == (200, {"object": "list", "data": [
        {"id": "o3", "object": "model", "created": 0, "owned_by": "openai"}, {"id": "gpt-5", "object": "model", "created": 0, "owned_by": "openai"}]})
    _, listed = call(servers["openai"], "/models")
    assert "gpt-5" in [m["id"] for m in listed["data"]]


def test_openai_responses_api(servers):
    base = servers["openai"]
    items = [{"role": "user", "content": [{"type": "input_text", "text": BARGAIN[1]["content"]}]}]
    status, body = call(base, "/responses", {"model": "gpt-5", "instructions": SYSTEM, "input": items, "max_output_tokens": 5000, "reasoning": {"effort": "low", "summary": "auto"}})
    assert status == 200 and body["object"] == "response" and body["status"] == "completed" and body["incomplete_details"] is None
    reasoning, message = body["output"]
    assert reasoning["type"] == "reasoning" and reasoning["summary"][0]["type"] == "summary_text"
    assert draft_answer(BARGAIN) in reasoning["summary"][0]["text"]
    assert message["type"] == "message" and message["role"] == "assistant" and message["status"] == "completed"
    assert message["content"] == [{"type": "output_text", "text": final_answer(BARGAIN), "annotations": []}]
    usage = body["usage"]
    assert usage["output_tokens_details"]["reasoning_tokens"] == 200 and usage["output_tokens"] == 200 + words(final_answer(BARGAIN))
    assert usage["input_tokens"] == prompt_tokens(BARGAIN) and usage["input_tokens_details"] == {"cached_tokens": 0}
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    # no summary asked: an empty summary list; a string input; a -pro model is served here
    status, body = call(base, "/responses", {"model": "gpt-5-pro", "input": HARVEST[1]["content"]})
    assert status == 200 and body["output"][0]["summary"] == [] and body["output"][1]["content"][0]["text"] == final_answer(HARVEST[1:])


def test_openai_responses_incomplete_and_refusals(servers):
    base = servers["openai"]
    status, body = call(base, "/responses", {"model": "o3", "input": BARGAIN[1]["content"], "max_output_tokens": 50, "reasoning": {"summary": "detailed"}})
    assert status == 200 and body["status"] == "incomplete" and body["incomplete_details"] == {"reason": "max_output_tokens"}
    assert [item["type"] for item in body["output"]] == ["reasoning"]
    assert body["usage"]["output_tokens"] == 50 and body["usage"]["output_tokens_details"]["reasoning_tokens"] == 50
    status, body = call(base, "/responses", {"model": "o3", "input": "hi", "max_tokens": 10})
    assert status == 400 and body["error"]["param"] == "max_tokens" and body["error"]["code"] == "unsupported_parameter"
    assert "Use 'max_output_tokens' instead." in body["error"]["message"]
    status, body = call(base, "/responses", {"model": "o3", "input": "hi", "temperature": 0.2})
    assert status == 400 and body["error"]["param"] == "temperature" and body["error"]["code"] == "unsupported_value"
    status, body = call(base, "/responses", {"model": "o3", "input": "hi", "reasoning": {"effort": "huge"}})
    assert status == 400 and body["error"]["param"] == "reasoning.effort"


# ---------------------------------------------------------------------------------------------
# Anthropic


def messages(base: str, headers: dict[str, str] | None = None, **body: Any) -> tuple[int, Any]:
    return call(base, "/messages", {"system": SYSTEM, "messages": BARGAIN[1:], "max_tokens": 4000, **body}, headers=ANTHROPIC_HEADERS if headers is None else headers)


def test_anthropic_thinking_blocks_and_usage(servers):
    base = servers["anthropic"]
    status, body = messages(base, model="claude-sonnet-4-5", thinking={"type": "enabled", "budget_tokens": 2000})
    assert status == 200 and body["stop_reason"] == "end_turn"
    thinking, text = body["content"]
    assert thinking["type"] == "thinking" and thinking["signature"].startswith("sig") and words(thinking["thinking"]) == 600
    assert draft_answer(BARGAIN) in thinking["thinking"] and REJECTION in thinking["thinking"]
    assert text == {"type": "text", "text": final_answer(BARGAIN)}
    assert body["usage"]["output_tokens"] == 600 + words(final_answer(BARGAIN)) and body["usage"]["input_tokens"] == prompt_tokens(BARGAIN)
    # the budget bounds the thinking; an effort sets its length; no thinking without the switch
    _, body = messages(base, model="claude-sonnet-4-5", thinking={"type": "enabled", "budget_tokens": 1024}, output_config={"effort": "high"})
    assert words(body["content"][0]["thinking"]) == 1024
    _, body = messages(base, model="claude-sonnet-4-5", thinking={"type": "adaptive"}, output_config={"effort": "low"})
    assert words(body["content"][0]["thinking"]) == 200
    status, body = messages(base, model="claude-sonnet-4-5", temperature=0)
    assert status == 200 and [b["type"] for b in body["content"]] == ["text"]
    # a model that thinks by default, and takes back its thinking blocks in later turns
    status, body = messages(base, model="claude-opus-5")
    assert status == 200 and [b["type"] for b in body["content"]] == ["thinking", "text"]
    history = BARGAIN[1:] + [{"role": "assistant", "content": body["content"]}, {"role": "user", "content": "Round 2. " + BARGAIN[1]["content"]}]
    status, body = messages(base, model="claude-opus-5", messages=history)
    assert status == 200 and body["content"][-1]["type"] == "text"


def test_anthropic_refusals(servers):
    base = servers["anthropic"]
    assert messages(base, model="claude-opus-5", temperature=1) == (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "`temperature` is deprecated for this model."}})
    status, body = messages(base, model="claude-sonnet-4-5", thinking={"type": "enabled", "budget_tokens": 2000}, temperature=0.5)
    assert status == 400 and body["error"]["message"].startswith("`temperature` may only be set to 1 when thinking is enabled")
    status, body = messages(base, model="claude-sonnet-4-5", thinking={"type": "enabled", "budget_tokens": 500})
    assert status == 400 and body["error"]["type"] == "invalid_request_error" and "greater than or equal to 1024" in body["error"]["message"]
    status, body = messages(base, model="claude-sonnet-4-5", thinking={"type": "enabled", "budget_tokens": 4000})
    assert status == 400 and body["error"]["message"].startswith("`max_tokens` must be greater than `thinking.budget_tokens`")
    status, body = messages(base, model="claude-opus-5", output_config={"effort": "xhigh"})
    assert status == 400 and body["type"] == "error" and "output_config.effort" in body["error"]["message"]
    empty = [{"role": "user", "content": [{"type": "text", "text": ""}]}]
    assert messages(base, model="claude-opus-5", messages=empty) == (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "messages: text content blocks must be non-empty"}})
    status, body = messages(base, headers={"anthropic-version": "2023-06-01", "Authorization": ""}, model="claude-opus-5")
    assert status == 401 and body["error"]["type"] == "authentication_error"
    status, body = messages(base, headers={"x-api-key": "k"}, model="claude-opus-5")
    assert status == 400 and body["type"] == "error"


def test_anthropic_max_tokens_cut_in_the_thinking(servers):
    status, body = messages(servers["anthropic"], model="claude-opus-5", max_tokens=100)
    assert status == 200 and body["stop_reason"] == "max_tokens"
    assert [b["type"] for b in body["content"]] == ["thinking"] and words(body["content"][0]["thinking"]) == 100
    assert body["usage"]["output_tokens"] == 100


def test_anthropic_omitted_and_redacted_thinking(servers):
    _, body = messages(servers["anthropic-omitted"], model="claude-opus-5")
    assert body["content"][0] == {"type": "thinking", "thinking": "", "signature": body["content"][0]["signature"]} and body["content"][0]["signature"]
    assert body["usage"]["output_tokens"] == 600 + words(final_answer(BARGAIN))
    _, body = messages(servers["anthropic-redacted"], model="claude-opus-5")
    assert body["content"][0]["type"] == "redacted_thinking" and body["content"][0]["data"] and "thinking" not in body["content"][0]
    assert draft_answer(BARGAIN) not in json.dumps(body) and body["content"][1]["text"] == final_answer(BARGAIN)
    _, listed = call(servers["anthropic"], "/models", headers=ANTHROPIC_HEADERS)
    assert "claude-opus-5" in [m["id"] for m in listed["data"]] and listed["has_more"] is False


# ---------------------------------------------------------------------------------------------
# DeepSeek


def test_deepseek_reasoning_content(servers):
    base = servers["deepseek"]
    status, body = chat(base, model="deepseek-reasoner", temperature=0, seed=3)
    message, usage = body["choices"][0]["message"], body["usage"]
    assert status == 200 and message["content"] == final_answer(BARGAIN) and draft_answer(BARGAIN) in message["reasoning_content"]
    assert usage["completion_tokens_details"]["reasoning_tokens"] == 600 and usage["completion_tokens"] == 600 + words(final_answer(BARGAIN))
    _, body = chat(base, model="deepseek-chat")
    assert "reasoning_content" not in body["choices"][0]["message"] and body["usage"]["completion_tokens"] == words(final_answer(BARGAIN))
    _, body = chat(base, model="deepseek-chat", thinking={"type": "enabled"})
    assert words(body["choices"][0]["message"]["reasoning_content"]) == 600
    _, body = chat(base, model="deepseek-chat", thinking={"type": "disabled"})
    assert "reasoning_content" not in body["choices"][0]["message"]


def test_deepseek_refuses_reasoning_sent_back_and_cuts(servers):
    base = servers["deepseek"]
    history = BARGAIN + [{"role": "assistant", "content": "{}", "reasoning_content": "thoughts"}, {"role": "user", "content": "again"}]
    assert call(base, "/chat/completions", {"model": "deepseek-reasoner", "messages": history}) == (400, {"error": {
        "message": "The reasoning_content is an intermediate result for display purposes only and will not be included in the context for inference. Please remove the reasoning_content from your API request.",
        "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}})
    _, body = chat(base, model="deepseek-reasoner", max_tokens=100)
    assert body["choices"][0]["finish_reason"] == "length" and body["choices"][0]["message"]["content"] == ""
    assert words(body["choices"][0]["message"]["reasoning_content"]) == 100 and body["usage"]["completion_tokens"] == 100
    _, body = chat(base, model="deepseek-reasoner", max_tokens=601)  # the answer is cut after one word
    assert body["choices"][0]["finish_reason"] == "length" and words(body["choices"][0]["message"]["content"]) == 1


# ---------------------------------------------------------------------------------------------
# vLLM


def test_vllm_reasoning_parser_fields(servers):
    status, body = chat(servers["vllm"], model="Qwen/Qwen3-8B")
    message, usage = body["choices"][0]["message"], body["usage"]
    assert status == 200 and message["content"] == final_answer(BARGAIN) and words(message["reasoning_content"]) == 600
    assert "completion_tokens_details" not in usage and usage["completion_tokens"] == 600 + words(final_answer(BARGAIN))
    _, body = chat(servers["vllm"], model="Qwen/Qwen3-8B", chat_template_kwargs={"enable_thinking": False})
    assert not body["choices"][0]["message"].get("reasoning_content") and body["usage"]["completion_tokens"] == words(final_answer(BARGAIN))
    _, body = chat(servers["vllm"], model="Qwen/Qwen3-8B", max_tokens=50)
    assert body["choices"][0]["finish_reason"] == "length" and body["choices"][0]["message"]["content"] == ""
    _, body = chat(servers["vllm-reasoning"], model="Qwen/Qwen3-8B")
    message = body["choices"][0]["message"]
    assert draft_answer(BARGAIN) in message["reasoning"] and "reasoning_content" not in message


def test_vllm_think_tags_in_the_content(servers):
    final = final_answer(BARGAIN)
    _, body = chat(servers["vllm-raw"], model="Qwen/Qwen3-8B")
    content = body["choices"][0]["message"]["content"]
    assert content.startswith("<think>\n") and content.endswith("\n</think>\n\n" + final) and draft_answer(BARGAIN) in content
    _, body = chat(servers["vllm-raw"], model="Qwen/Qwen3-8B", max_tokens=30)
    content = body["choices"][0]["message"]["content"]
    assert body["choices"][0]["finish_reason"] == "length" and content.startswith("<think>\n") and "</think>" not in content
    _, body = chat(servers["vllm-raw"], model="Qwen/Qwen3-8B", chat_template_kwargs={"enable_thinking": False})
    assert body["choices"][0]["message"]["content"] == final
    _, body = chat(servers["vllm-no-opener"], model="Qwen/Qwen3-8B")
    content = body["choices"][0]["message"]["content"]
    assert not content.startswith("<think>") and content.endswith("\n</think>\n\n" + final)


# ---------------------------------------------------------------------------------------------
# Ollama, Gemini


def test_ollama_reasoning_field_and_efforts(servers):
    base = servers["ollama"]
    _, body = chat(base, model="qwen3:8b")
    assert draft_answer(BARGAIN) in body["choices"][0]["message"]["reasoning"] and body["usage"]["completion_tokens"] == 600 + words(final_answer(BARGAIN))
    _, body = chat(base, model="qwen3:8b", reasoning_effort="low")
    assert words(body["choices"][0]["message"]["reasoning"]) == 200
    _, body = chat(base, model="qwen3:8b", reasoning_effort="none")
    assert "reasoning" not in body["choices"][0]["message"] and body["usage"]["completion_tokens"] == words(final_answer(BARGAIN))
    status, body = chat(base, model="qwen3:8b", reasoning_effort="xhigh")
    assert status == 400 and "error" in body
    _, body = chat(base, model="qwen3:8b", max_tokens=10)
    assert body["choices"][0]["finish_reason"] == "length" and body["choices"][0]["message"]["content"] == ""


def test_gemini_leaves_thinking_out_of_completion_tokens(servers):
    base = servers["gemini"]
    status, body = chat(base, model="gemini-2.5-flash", reasoning_effort="high", temperature=0)
    message, usage = body["choices"][0]["message"], body["usage"]
    assert status == 200 and message == {"role": "assistant", "content": final_answer(BARGAIN)}
    assert usage["completion_tokens"] == words(final_answer(BARGAIN)) and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] + 1500
    _, body = chat(base, model="gemini-2.5-flash", reasoning_effort="none")
    assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    status, body = chat(base, model="gemini-2.5-flash", reasoning_effort="xhigh")
    assert status == 400 and isinstance(body, list) and body[0]["error"]["code"] == 400 and body[0]["error"]["status"] == "INVALID_ARGUMENT"
    assert "reasoning_effort" in body[0]["error"]["message"]
    status, body = call(base.removesuffix("/v1") + "/v1beta/openai", "/chat/completions", {"model": "gemini-2.5-flash", "messages": HARVEST})
    assert status == 200 and body["choices"][0]["message"]["content"] == final_answer(HARVEST)
    _, listed = call(base, "/models")
    assert "models/gemini-2.5-flash" in [m["id"] for m in listed["data"]]


# ---------------------------------------------------------------------------------------------
# Statistics


def test_stats_count_requests_refusals_and_keep_bodies(servers):
    base = servers["openai-fixed"]
    before = server_stats(base)
    sent = {"model": "o3", "messages": ENVY, "max_completion_tokens": 900}
    call(base, "/chat/completions", sent)
    call(base, "/chat/completions", {**sent, "max_tokens": 10})
    after = server_stats(base, bodies=True)
    assert after["requests"] == before["requests"] + 2 and after["refused"] == before["refused"] + 1
    assert after["bodies"][-2:] == [sent, {**sent, "max_tokens": 10}]
    assert after["log"][-2:] == [{"path": "/v1/chat/completions", "status": 200}, {"path": "/v1/chat/completions", "status": 400}]
    assert "bodies" not in server_stats(base)
