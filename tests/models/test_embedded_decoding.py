"""The embedded model's decoding shortcuts pick the same tokens as llama-cpp-python's own:
greedy decoding under a grammar asks the grammar about the best token first (and runs the full
chain when it refuses), saved states keep one logits row. Checked against a plain ``Llama`` on
the same GGUF, answer by answer."""

from __future__ import annotations

import pytest

from agorabench.games.envy.point_allocation import Choice
from agorabench.models.base import GenerationSettings
from agorabench.models.embedded import EmbeddedBackend, embedded_model_path

pytestmark = pytest.mark.llm

SYSTEM = "You rate options for a study. " + Choice.format_instructions()
QUESTIONS = (
    "Option A gives you 5 points and the other model 7. Option B gives you 4 and the other model 2. Which do you pick?",
    "Pick C or D. C: you lose 1 point. D: the other model loses 5 points.",
    "Which letter comes after B in the alphabet? Answer with an option.",
)


def _messages(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


@pytest.fixture(scope="module")
def plain():
    """llama-cpp-python's Llama as it comes, on the embedded GGUF, one thread, no state cache."""
    from llama_cpp import Llama

    return Llama(model_path=str(embedded_model_path()), n_ctx=4096, n_threads=1, n_threads_batch=1, seed=0, verbose=False)


def _plain_answer(llama, messages: list[dict[str, str]], settings: GenerationSettings) -> str:
    from llama_cpp import LlamaGrammar

    kwargs = {"grammar": LlamaGrammar.from_string(settings.grammar, verbose=False)} if settings.grammar else {}
    out = llama.create_chat_completion(messages=messages, max_tokens=settings.max_tokens, **settings.sampling(), **kwargs)
    return out["choices"][0]["message"]["content"] or ""


def test_greedy_grammar_answers_are_llama_cpp_pythons_own(plain):
    """Both ways of picking a token happen (the grammar accepts the best token; it refuses it and
    the full chain picks), and every answer is the plain model's, character for character."""
    settings = GenerationSettings(temperature=0.0, max_tokens=64, seed=0, grammar=Choice.grammar())
    backend = EmbeddedBackend(n_threads=1, state_cache_bytes=32 << 20)
    for question in QUESTIONS:
        ours = backend._run(_messages(question), settings).text
        assert ours == _plain_answer(plain, _messages(question), settings)
        assert ours.startswith("<response>\n  <choice>")
    stats = backend.decode_stats()
    assert stats["calls"] == len(QUESTIONS)
    assert stats["grammar_one_token"] > 0 and stats["grammar_full"] > 0, stats
    # The three prompts share the system message: later calls evaluate only what differs.
    assert 0 < stats["prompt_tokens_evaluated"] < stats["prompt_tokens"]


def test_sampling_at_a_temperature_keeps_llama_cpp_pythons_chain(plain):
    """Above temperature 0 the shortcut does not apply: the full chain draws, with the seed."""
    settings = GenerationSettings(temperature=0.7, max_tokens=32, seed=7, grammar=Choice.grammar())
    backend = EmbeddedBackend(n_threads=1, state_cache_bytes=0)
    ours = backend._run(_messages(QUESTIONS[0]), settings).text
    assert ours == _plain_answer(plain, _messages(QUESTIONS[0]), settings)
    stats = backend.decode_stats()
    assert stats["grammar_one_token"] == stats["grammar_full"] == 0


def test_saved_states_hold_one_logits_row_and_restore_the_same_answers(plain):
    """A saved state keeps one row of the logits array (not up to 512 x 49,152 floats), and an
    answer computed from a restored state is the plain model's."""
    settings = GenerationSettings(temperature=0.0, max_tokens=24, seed=0)
    backend = EmbeddedBackend(n_threads=1, state_cache_bytes=64 << 20)
    first, second = _messages(QUESTIONS[0]), _messages(QUESTIONS[1])
    for messages in (first, second, first):  # the third call restores the state of the first
        assert backend._run(messages, settings).text == _plain_answer(plain, messages, settings)
    states = list(backend._llama.cache.cache_state.values())
    assert states and all(state.scores.shape[0] <= 1 for state in states)
    assert backend.decode_stats()["states_restored"] >= 1
