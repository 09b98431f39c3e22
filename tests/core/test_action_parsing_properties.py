"""Every action type's parser, on any text: an action or a ParseError, never another exception,
and time linear in the length of the answer (issue 9, item 1).

Linearity is checked like a benchmark, not against a wall-clock limit: the CPU time of parsing
an adversarial answer of length 10·n is compared with that of length n (best of a few runs;
n = 5,000 characters).
A linear parser gives a ratio near 10, a quadratic one near 100; the test allows 35.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st

from agorabench.core.actions import Action, ParseError
from agorabench.families import game_names, load_game
from agorabench.games.glee.bargaining import offer_type
from agorabench.games.glee.negotiation import price_type


def _all_action_types() -> list[type[Action]]:
    for name in game_names():  # importing every game registers its action types
        load_game(name)
    extra = [offer_type(10_000.0, False), offer_type(10_000.0, True), price_type(False, 10_000.0), price_type(True, 10_000.0)]
    seen, todo = [], list(Action.__subclasses__()) + extra
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.append(cls)
        todo += cls.__subclasses__()
    # only concrete decision types (with fields), in a stable order
    return sorted((c for c in seen if c.model_fields and c.__module__.startswith("agorabench")), key=lambda c: (c.__module__, c.__name__))


ACTIONS = _all_action_types()

#: Pieces of answers that reach every branch of the three parsers when glued together.
FRAGMENTS = [
    "{", "}", "[", "]", '"', "\\", ":", ",", "```", "```json", "<response>", "</response>", "<choice>", "</choice>",
    "<reasoning>", "</reasoning>", "<self_esteem>", "</self_esteem>", "Answer:", "answer：", "**", " ", "\n",
    '"price"', '"alice_gain"', '"bob_gain"', '"decision"', '"message"', '"amount"', '"accept"', '"yes"', "reject",
    "0", "7", "1,000", "-3", "1e308", "Infinity", "NaN", "-Infinity", "9" * 50, ".5", "$", "€", "true", "null",
    "\\ud800", "\ud83d", "\x00", "A", "B", "D", "M3",
]
answers = st.one_of(st.text(max_size=300), st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=5), max_size=60).map("".join))


def test_every_game_s_action_types_are_covered():
    names = {c.__name__ for c in ACTIONS}
    assert {"Choice", "Ratings", "Harvest", "Limit", "Utterance", "Decision", "YesNo", "SellerMessage", "PriceOffer"} <= names
    assert len(ACTIONS) >= 12


@pytest.mark.parametrize("action_type", ACTIONS, ids=lambda c: c.__name__)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=answers)
def test_any_text_is_an_action_or_a_parse_error(action_type, text):
    try:
        action = action_type.parse(text)
    except ParseError as exc:
        assert str(exc)
        return
    assert isinstance(action, action_type)
    for value in action.model_dump().values():  # nothing unstorable or non-finite gets through
        if isinstance(value, str):
            value.encode("utf-8")
        if isinstance(value, float):
            assert value == value and abs(value) <= 1e12


@pytest.mark.parametrize("action_type", ACTIONS, ids=lambda c: c.__name__)
def test_a_valid_answer_survives_the_round_trip(action_type):
    """The property above must not pass by rejecting everything: each type's own rendering of
    a valid action parses back to it."""
    from agorabench.core.actions import Action as _A  # noqa: F401

    sample = _sample(action_type)
    if sample is None:
        pytest.skip("no simple sample for this type")
    assert action_type.parse(sample.render()) == sample


def _sample(action_type: type[Action]) -> Action | None:
    values = {}
    for name, field in action_type.model_fields.items():
        ann = field.annotation
        if ann is str:
            values[name] = "ok"
        elif ann is bool:
            values[name] = True
        elif ann in (int, float):
            values[name] = 1
        elif getattr(ann, "__args__", None):
            values[name] = ann.__args__[0] if isinstance(ann.__args__[0], str) else None
    total = getattr(action_type, "total", None)
    if total:
        values.update(alice_gain=total / 2, bob_gain=total / 2)
    try:
        return action_type(**{k: v for k, v in values.items() if v is not None})
    except Exception:
        return None


#: Answers that made the old patterns rescan the text (n ~ the answer's length).
ADVERSARIAL = {
    "unclosed xml": lambda n: "<response><choice>" * (n // 18),
    "unclosed fences": lambda n: "```json {" * (n // 9),
    "unclosed braces": lambda n: '{"a": "' * (n // 7),
    "number tail": lambda n: '{"price": "' + "1," * (n // 2) + 'x"}',
    "answer spaces": lambda n: ("Answer:" + " " * 50 + "*" * 50) * (n // 107),
    "deep nesting": lambda n: "[" * (n // 2) + "]" * (n // 2),
}


def _cpu(parse, text: str, repeats: int = 2) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        try:
            parse(text)
        except ParseError:
            pass
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.parametrize("shape", sorted(ADVERSARIAL))
def test_parsing_time_grows_linearly_with_the_answer(shape):
    make = ADVERSARIAL[shape]
    # 5,000 and 50,000 characters: a linear parser's ratio stays near 10 and a quadratic one's near
    # 100 at any length whose small time is above the timer's noise (here 1-6 ms per type); the
    # larger 10,000/100,000 cost twice the CPU and showed the same ratios.
    small, large = make(5_000), make(50_000)
    for action_type in ACTIONS:
        t_small = max(_cpu(action_type.parse, small), 1e-4)  # below timer noise, count as 0.1 ms
        t_large = _cpu(action_type.parse, large)
        assert t_large / t_small < 35, f"{action_type.__name__} on {shape}: {t_small:.4f}s -> {t_large:.4f}s for 10x the text"
