"""Reasoning settings on each provider's wire, thoughts kept apart from answers, and honest
token accounting (issue: reasoning models)."""

from __future__ import annotations

import pytest

from agorabench.models.base import Completion, GenerationSettings
from agorabench.models.errors import status_error
from agorabench.models.model import keep_apart, replayable
from agorabench.models.reasoning import DEFAULT_REASONING_BUDGET, anthropic_fields, chat_fields, looks_like_reasoning, setting_problems, split_thoughts
from agorabench.models.transport.wire import completion_from_json


def test_thoughts_are_split_from_the_answer_with_and_without_the_opening_tag():
    assert split_thoughts("<think>\nOffer 60? No.\n</think>\n\nAnswer: 40") == ("Answer: 40", "Offer 60? No.", False)
    assert split_thoughts("Offer 60? No.\n</think>\nAnswer: 40") == ("Answer: 40", "Offer 60? No.", False)
    # several thought blocks: the answer is the text outside all of them (the parser judges it)
    answer, thoughts, unclosed = split_thoughts("<think>a</think>Answer: 1<think>b</think>Answer: 2")
    assert answer == "Answer: 1\n\nAnswer: 2" and thoughts == "a\n\nb" and not unclosed
    assert split_thoughts("<think>\nstill thinking, Answer: 7") == ("", "still thinking, Answer: 7", True)
    assert split_thoughts("Answer: 3") == ("Answer: 3", None, False)
    # envy's XML answers carry a <reasoning> field: that is an answer, not a thought
    xml = "<response>\n  <choice>B</choice>\n  <reasoning>fair</reasoning>\n</response>"
    assert split_thoughts(xml) == (xml, None, False)


def test_keep_apart_moves_thoughts_out_of_the_text_and_marks_an_unclosed_one():
    c = Completion(text="<think>draft {\"price\": 90}</think>{\"price\": 50}")
    keep_apart(c)
    assert c.text == '{"price": 50}' and c.reasoning == 'draft {"price": 90}'
    c = Completion(text="<think>never closed", finish_reason="length")
    keep_apart(c)
    assert c.text == "" and c.extra["unclosed_thought"] and c.reasoning == "never closed"
    assert not replayable(c)  # an empty answer is never cached


def settings(**kw) -> GenerationSettings:
    base = dict(temperature=0.0, seed=0, max_tokens=256)
    base.update(kw)
    return GenerationSettings(**base)


def test_openai_reasoning_models_get_max_completion_tokens_and_no_sampling_fields():
    s = settings(reasoning=True, reasoning_effort="low", temperature=None, seed=None)
    assert chat_fields("openai", s) == {"max_completion_tokens": 256 + DEFAULT_REASONING_BUDGET, "reasoning_effort": "low"}
    # a model that does not reason: exactly the fields of earlier versions
    assert chat_fields("openai", settings()) == {"max_tokens": 256, "temperature": 0.0, "seed": 0}
    assert chat_fields("openai", settings(reasoning=True, thinking="off", temperature=None, seed=None, reasoning_budget=100)) == {"max_completion_tokens": 356, "reasoning_effort": "none"}


@pytest.mark.parametrize(
    "dialect, kw, expected",
    [
        ("deepseek", dict(thinking="on"), {"thinking": {"type": "enabled"}}),
        ("deepseek", dict(thinking="off"), {"thinking": {"type": "disabled"}}),
        ("vllm", dict(thinking="off"), {"chat_template_kwargs": {"enable_thinking": False}}),
        ("vllm", dict(reasoning_effort="high"), {"reasoning_effort": "high"}),
        ("ollama", dict(reasoning_effort="medium"), {"reasoning_effort": "medium"}),
        ("ollama", dict(thinking="off"), {"reasoning_effort": "none"}),
        ("gemini", dict(reasoning_effort="low"), {"reasoning_effort": "low"}),
        ("gemini", dict(reasoning_budget=2048), {"extra_body": {"google": {"thinking_config": {"thinking_budget": 2048}}}}),
    ],
)
def test_each_dialect_carries_its_switch(dialect, kw, expected):
    fields = chat_fields(dialect, settings(reasoning=True, **kw))
    for key, value in expected.items():
        assert fields[key] == value
    assert "max_tokens" in fields and "max_completion_tokens" not in fields


def test_extra_body_is_merged_last():
    fields = chat_fields("vllm", settings(reasoning=True, thinking="on", extra_body={"chat_template_kwargs": {"enable_thinking": False}, "top_k": 20}))
    assert fields["chat_template_kwargs"] == {"enable_thinking": False} and fields["top_k"] == 20


def test_anthropic_thinking_budget_effort_and_temperature():
    on = anthropic_fields(settings(reasoning=True, thinking="on", reasoning_budget=2000, temperature=None))
    assert on == {"max_tokens": 2256, "thinking": {"type": "enabled", "budget_tokens": 2000}}
    adaptive = anthropic_fields(settings(reasoning=True, thinking="adaptive", reasoning_effort="high", temperature=None))
    assert adaptive["thinking"] == {"type": "adaptive"} and adaptive["output_config"] == {"effort": "high"} and "temperature" not in adaptive
    plain = anthropic_fields(settings(temperature=0.5))
    assert plain == {"max_tokens": 256, "temperature": 0.5}
    assert setting_problems("anthropic", settings(reasoning=True, thinking="on", reasoning_budget=500))
    assert setting_problems("deepseek", settings(reasoning=True, reasoning_effort="low"))
    assert not setting_problems("openai", settings(reasoning=True, reasoning_effort="low"))


def test_reasoning_models_are_recognised_by_name():
    for dialect, name in [("openai", "o3"), ("openai", "gpt-5-mini"), ("openai", "o4-mini"), ("deepseek", "deepseek-reasoner"), ("vllm", "Qwen/Qwen3-8B"), ("anthropic", "claude-opus-5"), ("gemini", "gemini-2.5-pro")]:
        assert looks_like_reasoning(dialect, name), name
    for dialect, name in [("openai", "gpt-4o-mini"), ("anthropic", "claude-3-5-haiku"), ("deepseek", "deepseek-chat"), ("vllm", "Qwen/Qwen2.5-7B-Instruct"), ("embedded", "")]:
        assert not looks_like_reasoning(dialect, name), name


def test_a_chat_answer_with_separated_reasoning_and_usage_details():
    data = {
        "choices": [{"message": {"content": "Answer: 4", "reasoning_content": "maybe 9? no"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 50, "total_tokens": 60, "completion_tokens_details": {"reasoning_tokens": 48}},
    }
    c = completion_from_json(data)
    assert (c.text, c.reasoning, c.reasoning_tokens, c.completion_tokens) == ("Answer: 4", "maybe 9? no", 48, 50)
    assert "completion_tokens_reported" not in c.extra
    # Ollama / newer vLLM: ``reasoning``; no details: reasoning tokens unknown (None, not 0)
    c = completion_from_json({"choices": [{"message": {"content": "x", "reasoning": "hm"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 2}})
    assert c.reasoning == "hm" and c.reasoning_tokens is None


def test_a_server_that_leaves_reasoning_out_of_completion_tokens_is_billed_by_its_totals():
    data = {"choices": [{"message": {"content": "A"}}], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 815}}
    c = completion_from_json(data)
    assert c.completion_tokens == 805 and c.reasoning_tokens == 800 and c.extra["completion_tokens_reported"] == 5


def test_content_sent_as_a_list_of_parts_is_read_as_text():
    c = completion_from_json({"choices": [{"message": {"content": [{"type": "text", "text": "Answer: "}, {"type": "text", "text": "5"}]}}]})
    assert c.text == "Answer: 5"


def test_refused_settings_stop_the_model_once_and_responses_only_models_say_what_to_do():
    refused = status_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", {})
    assert refused.fatal and not refused.retryable and "max_completion_tokens" in str(refused)
    assert status_error(400, "`temperature` is deprecated for this model.", {}).fatal
    assert not status_error(400, "This model's maximum context length is 8192 tokens.", {}).fatal  # this request only
    only = status_error(404, "This model is only supported in v1/responses and not in v1/chat/completions.", {})
    assert only.fatal and 'transport = "responses"' in str(only) and "base_url" not in str(only)
