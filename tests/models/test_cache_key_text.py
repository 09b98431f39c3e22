"""Issue 44 item 10: ``Model.cache_key`` builds its text from its parts (each message's JSON
remembered by role and content, the C encoder made once); the key is the SHA-256 of
``json.dumps({...}, sort_keys=True, ensure_ascii=False)`` as before, and a value that cannot be
encoded fails with the same error."""

import hashlib
import json

import pytest

from agorabench.models import model as model_module
from agorabench.models.base import GenerationSettings
from agorabench.models.model import Model


class _Backend:
    identity = 'openai:http://127.0.0.1:1/v1:m "é"'
    serialized = False


def _model() -> Model:
    m = Model.__new__(Model)
    m.backend = _Backend()
    return m


def _expected(messages, settings: GenerationSettings, sample) -> str:
    payload = json.dumps({"backend": _Backend.identity, "messages": messages, "settings": settings.key(), "sample": sample}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


PLAIN = GenerationSettings()
RICH = GenerationSettings(temperature=None, max_tokens=10, seed=None, json_schema={"type": "object", "b": [1, 2.5, None], "a": {"z": 1, "y": True}}, reasoning=True, reasoning_effort="low", extra_body={"x": 1})
CASES = [
    ([{"role": "system", "content": "Rules.\nAnswer: A or B."}, {"role": "user", "content": "Pick."}], PLAIN, 0),
    ([], RICH, 3),
    ([{"role": "user", "content": 'é\n"\\\u2028\x00\x1f'}], RICH, "seat:1"),
    ([{"content": "order of keys", "role": "user"}], PLAIN, 0.5),
    ([{"role": "user", "content": [{"type": "text", "text": "parts"}]}, {"role": "user", "content": "named", "name": "n"}], PLAIN, 0),
    ([{"role": "user", "content": "x" * (model_module._MESSAGE_CHARS + 1)}], PLAIN, 1),
    (({"role": "user", "content": "a tuple of messages"},), PLAIN, 2),
    ([{"role": 1, "content": "a role that is no string"}], PLAIN, 0),
]


@pytest.mark.parametrize("messages,settings,sample", CASES, ids=range(len(CASES)))
def test_key_is_the_sha256_of_the_sorted_json(messages, settings, sample):
    m = _model()
    first = m.cache_key(messages, settings, sample)
    assert first == _expected(messages, settings, sample)
    assert m.cache_key(messages, settings, sample) == first  # again, its messages' texts remembered


def test_remembered_texts_are_keyed_by_role_and_content_and_bounded(monkeypatch):
    monkeypatch.setattr(model_module, "_MESSAGE_JSON", {})
    monkeypatch.setattr(model_module, "_MESSAGE_TEXTS", 3)
    m = _model()
    keys = set()
    for i in range(10):
        for role in ("user", "assistant"):
            messages = [{"role": role, "content": f"turn {i}"}]
            key = m.cache_key(messages, PLAIN, 0)
            assert key == _expected(messages, PLAIN, 0)
            keys.add(key)
            assert len(model_module._MESSAGE_JSON) <= 3
    assert len(keys) == 20  # the same content under another role is another key


def test_remembered_texts_are_bounded_in_characters_whatever_the_language(monkeypatch):
    monkeypatch.setattr(model_module, "_MESSAGE_JSON", {})
    monkeypatch.setattr(model_module, "_message_chars", [0])
    monkeypatch.setattr(model_module, "_MESSAGE_BUDGET", 20_000)
    m = _model()
    for i in range(40):
        messages = [{"role": "user", "content": f"{i} " + "漁" * 1000}]  # each text about 7,000 characters of JSON
        assert m.cache_key(messages, PLAIN, 0) == _expected(messages, PLAIN, 0)
        held = sum(len(r) + len(c) + len(t) for (r, c), t in model_module._MESSAGE_JSON.items())
        assert held == model_module._message_chars[0] <= 20_000
        assert model_module._MESSAGE_JSON  # the latest is kept


@pytest.mark.parametrize(
    "messages",
    [[{"role": "user", "content": "\ud800"}], [{1: "a", "b": 2}], [{"role": "user", "content": "a", "extra": float("nan")}]],
    ids=["lone surrogate", "mixed keys", "nan"],
)
def test_the_same_outcome_for_odd_values(messages):
    try:
        expected = ("ok", _expected(messages, PLAIN, 0))
    except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
        expected = (type(exc), str(exc))
    try:
        got = ("ok", _model().cache_key(messages, PLAIN, 0))
    except Exception as exc:  # noqa: BLE001
        got = (type(exc), str(exc))
    assert got == expected


def test_a_message_that_holds_itself_fails_as_before():
    looped: dict = {"role": "user", "content": "a"}
    looped["self"] = looped
    with pytest.raises(ValueError, match="Circular reference"):
        _expected([looped], PLAIN, 0)
    with pytest.raises(ValueError, match="Circular reference"):
        _model().cache_key([looped], PLAIN, 0)
