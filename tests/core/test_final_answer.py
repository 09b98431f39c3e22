"""Only a model's final answer counts: thoughts never reach the transcript or the parser, a cut
reply is invalid with its reason, a reply that spent the whole budget thinking is not asked
again, a model that keeps doing so stops with one line, and under sampling the response cache
never answers one decision with another's reply."""

from __future__ import annotations

import asyncio
from typing import ClassVar, Literal

import pytest

from agorabench.core.actions import Action
from agorabench.core.agents import LLMAgent
from agorabench.core.table import BackendFailure, Prompt, Table
from agorabench.models.base import Completion, GenerationSettings
from agorabench.models.model import Model


class Pick(Action):
    response_format: ClassVar = "json"
    choice: Literal["left", "right"]


class Scripted:
    """A backend answering completions from a list (the last repeats); counts calls."""

    serialized = False
    identity = "scripted:test"

    def __init__(self, *completions: Completion) -> None:
        self.completions = list(completions)
        self.calls: list[list[dict]] = []

    async def complete(self, messages, settings):
        self.calls.append([dict(m) for m in messages])
        c = self.completions[min(len(self.calls) - 1, len(self.completions) - 1)]
        return Completion(c.text, c.prompt_tokens, c.completion_tokens, finish_reason=c.finish_reason, reasoning=c.reasoning, reasoning_tokens=c.reasoning_tokens)

    def classify_error(self, exc):
        return None

    def probe_target(self):
        return None

    async def aclose(self):
        return None


class MemoryCache:
    def __init__(self) -> None:
        self.data: dict[str, Completion] = {}

    def get(self, key):
        hit = self.data.get(key)
        return None if hit is None else Completion(hit.text, hit.prompt_tokens, hit.completion_tokens, finish_reason=hit.finish_reason, reasoning=hit.reasoning, reasoning_tokens=hit.reasoning_tokens)

    def put(self, key, identity, completion):
        self.data[key] = completion


DRAFT = '{"choice": "left"}'
FINAL = '{"choice": "right"}'


def table_with(backend, settings=None, cache=None, retries=2, sample="game1"):
    model = Model(backend, settings or GenerationSettings(), cache=cache)
    return Table({"a": LLMAgent(model, sample=sample), "b": LLMAgent(model, sample=sample)}, seed=1, max_retries=retries, system={"a": "Rules.", "b": "Rules."}), model


def test_thoughts_with_a_draft_never_count_and_never_reach_a_transcript():
    backend = Scripted(Completion(f"<think>I could say {DRAFT}. No.</think>\n{FINAL}", 5, 40, reasoning_tokens=None))
    table, _ = table_with(backend)
    action = asyncio.run(table.ask("a", Prompt("Pick a side."), Pick))
    assert action == Pick(choice="right")
    turn = table.turns[0]
    assert turn.raw == FINAL and DRAFT in turn.reasoning and turn.reasoning_tokens is None and turn.finish_reason == "stop"
    assert all(DRAFT not in m["content"] for m in table.transcripts["a"])


def test_a_cut_reply_is_invalid_and_asked_again_never_read_for_its_draft():
    cut = Completion(f"Let me think. {DRAFT} hmm, actually", 5, 256, finish_reason="length")
    backend = Scripted(cut, Completion(FINAL, 5, 3))
    table, _ = table_with(backend, GenerationSettings(temperature=None, seed=None, reasoning=True))
    action = asyncio.run(table.ask("a", Prompt("Pick a side."), Pick))
    assert action == Pick(choice="right")
    assert table.turns[0].retries == 1
    assert "cut off at the token limit" in backend.calls[1][-1]["content"]


def test_a_model_that_does_not_reason_is_judged_on_the_blocks_it_completed_as_before():
    """Its text is its answer: a reply cut after a complete answer counts, as it always did (so no
    prompt of such a model changes); the turn still records that it was cut."""
    cut = Completion(f'{FINAL} because the other side', 5, 128, finish_reason="length")
    backend = Scripted(cut)
    table, model = table_with(backend)
    assert asyncio.run(table.ask("a", Prompt("Pick a side."), Pick)) == Pick(choice="right")
    turn = table.turns[0]
    assert turn.valid and turn.retries == 0 and turn.finish_reason == "length" and turn.reasoning is None
    assert model.cut_off == 1 and model.dead is None


def test_a_reply_that_spent_its_budget_thinking_is_its_own_outcome_and_not_asked_again():
    spent = Completion("", 5, 16256, finish_reason="length", reasoning=f"thinking of {DRAFT}", reasoning_tokens=16256)
    backend = Scripted(spent, Completion(FINAL, 5, 3))
    settings = GenerationSettings(temperature=None, seed=None, reasoning=True)
    table, model = table_with(backend, settings)
    assert asyncio.run(table.ask("a", Prompt("Pick a side."), Pick, fallback=None)) is None
    turn = table.turns[0]
    assert not turn.valid and turn.retries == 0 and len(backend.calls) == 1
    assert turn.error.startswith("spent 16256 of 16256 output tokens reasoning") and turn.finish_reason == "length"
    assert turn.reasoning_tokens == 16256 and DRAFT in turn.reasoning and turn.action is None
    # said once, though the model never spent three in a row
    assert len(model.warnings) == 1 and "spent all 16256 output tokens reasoning" in model.warnings[0] and "raise reasoning_budget" in model.warnings[0]


def test_a_model_that_keeps_spending_its_budget_stops_with_one_line():
    spent = Completion("", 5, 1256, finish_reason="length", reasoning="...", reasoning_tokens=1256)
    backend = Scripted(spent)
    settings = GenerationSettings(temperature=None, seed=None, reasoning=True, reasoning_budget=1000)
    table, model = table_with(backend, settings)
    asyncio.run(table.ask("a", Prompt("1"), Pick))
    asyncio.run(table.ask("a", Prompt("2"), Pick))
    with pytest.raises(BackendFailure, match="raise reasoning_budget"):
        asyncio.run(table.ask("a", Prompt("3"), Pick))
    assert model.dead and "3 replies in a row spent all 1256 output tokens" in model.dead
    assert model.warnings == []  # the stop's one line says it all
    with pytest.raises(BackendFailure):  # no further call reaches the server
        asyncio.run(table.ask("b", Prompt("4"), Pick))
    assert len(backend.calls) == 3


def test_an_unclosed_thought_has_no_answer():
    backend = Scripted(Completion(f"<think>maybe {DRAFT}", 5, 30), Completion(FINAL, 5, 3))
    table, _ = table_with(backend)
    asyncio.run(table.ask("a", Prompt("Pick."), Pick))
    assert table.turns[0].retries == 1 and table.turns[0].raw == FINAL


def test_under_sampling_each_decision_is_its_own_call_and_a_replay_finds_each_again():
    cache = MemoryCache()
    sampled = GenerationSettings(temperature=None, seed=None)
    backend = Scripted(Completion('{"choice": "left"}', 5, 3), Completion('{"choice": "right"}', 5, 3))
    table, _ = table_with(backend, sampled, cache)
    first = asyncio.run(table.ask("a", Prompt("Same question."), Pick))
    table.restart("a", "Rules.")  # a fresh buyer asked the identical prompt later in the same game
    second = asyncio.run(table.ask("a", Prompt("Same question."), Pick))
    assert len(backend.calls) == 2 and (first.choice, second.choice) == ("left", "right")
    # a replay of the game draws nothing new: both decisions come back from the cache
    replay = Scripted(Completion('{"choice": "left"}', 5, 3))
    table, model = table_with(replay, sampled, cache)
    again = [asyncio.run(table.ask("a", Prompt("Same question."), Pick))]
    table.restart("a", "Rules.")
    again.append(asyncio.run(table.ask("a", Prompt("Same question."), Pick)))
    assert [a.choice for a in again] == ["left", "right"] and replay.calls == [] and model.cache_hits == 2


def test_at_temperature_zero_an_identical_prompt_is_answered_from_the_cache_as_before():
    cache = MemoryCache()
    backend = Scripted(Completion('{"choice": "left"}', 5, 3), Completion('{"choice": "right"}', 5, 3))
    table, _ = table_with(backend, GenerationSettings(), cache)
    asyncio.run(table.ask("a", Prompt("Same question."), Pick))
    table.restart("a", "Rules.")
    asyncio.run(table.ask("a", Prompt("Same question."), Pick))
    assert len(backend.calls) == 1

