"""Answer parsing: tolerant of presentation, never guessing."""

from typing import ClassVar, Literal

import pytest
from pydantic import Field

from agorabench.core.actions import Action, ParseError
from agorabench.games.envy.point_allocation import Choice


class Offer(Action):
    response_format: ClassVar = "json"
    text_fields: ClassVar = ("message",)
    alice_gain: float = Field(ge=0)
    bob_gain: float = Field(ge=0)
    message: str = ""


class Harvest(Action):
    response_format: ClassVar = "answer"
    amount: int = Field(ge=0)


class Verdict(Action):
    response_format: ClassVar = "json"
    decision: Literal["accept", "reject"]


def test_json_in_fence_with_thousands_separators():
    text = 'Sure!\n```json\n{"alice_gain": "6,000", "bob_gain": 4000, "message": "deal, 1,000 left"}\n```'
    offer = Offer.parse(text)
    assert (offer.alice_gain, offer.bob_gain) == (6000, 4000)
    assert offer.message == "deal, 1,000 left"  # free text is never rewritten


def test_blocks_naming_different_actions_are_refused_never_resolved():
    """A reply that changes its mind in its text holds two answers: refused with both shown (and
    asked again), never settled on either; the same action written twice is that action."""
    text = '{"alice_gain": 1, "bob_gain": 9} then I changed my mind: {"alice_gain": 7, "bob_gain": 3}'
    with pytest.raises(ParseError, match="2 different actions"):
        Offer.parse(text)
    assert Offer.parse('{"alice_gain": 7, "bob_gain": 3} so: {"alice_gain": "7", "bob_gain": 3.0}').alice_gain == 7


def test_an_invalid_block_is_never_replaced_by_another():
    """Only the answer counts: a valid block beside an invalid one does not stand in for it."""
    text = '{"alice_gain": 5, "bob_gain": 5} and {"alice_gain": -1, "bob_gain": 11}'
    with pytest.raises(ParseError, match="different actions"):
        Offer.parse(text)
    with pytest.raises(ParseError, match="alice_gain"):
        Offer.parse('{"alice_gain": -1, "bob_gain": 11} again {"alice_gain": -1, "bob_gain": 11}')


def test_a_fenced_block_beside_an_answer_in_the_text_is_shown_not_answered():
    """A reply that answers in its text uses fences to show things (a draft, an example), before
    or after its answer; a reply that answers only in fences answers there."""
    text = 'Draft:\n```json\n{"alice_gain": 9, "bob_gain": 1}\n```\nNo, final: {"alice_gain": 4, "bob_gain": 6}'
    assert Offer.parse(text).alice_gain == 4
    text = '{"alice_gain": 3, "bob_gain": 7}\nA draft I rejected:\n```json\n{"alice_gain": 9, "bob_gain": 1}\n```'
    assert Offer.parse(text).alice_gain == 3
    assert Offer.parse('Here:\n```json\n{"alice_gain": 2, "bob_gain": 8}\n```').alice_gain == 2


def test_json_invalid_value_raises_with_field_name():
    with pytest.raises(ParseError, match="alice_gain"):
        Offer.parse('{"alice_gain": -5, "bob_gain": 3}')


def test_no_answer_raises():
    with pytest.raises(ParseError, match="expected format"):
        Offer.parse("I accept whatever you think is fair.")
    with pytest.raises(ParseError, match="empty"):
        Offer.parse("   ")


def test_literal_is_case_insensitive_only_through_validators():
    with pytest.raises(ParseError):
        Verdict.parse('{"decision": "maybe"}')
    assert Verdict.parse('{"Decision": "accept"}').decision == "accept"


def test_xml_choice_tolerates_case_and_option_prefix():
    assert Choice.parse("<response><choice>option c</choice><reasoning>x</reasoning></response>").choice == "C"
    assert Choice.parse("blah <RESPONSE>\n<choice> b) </choice>\n</RESPONSE>").choice == "B"
    with pytest.raises(ParseError):
        Choice.parse("<response><choice>E</choice></response>")
    with pytest.raises(ParseError):
        Choice.parse("The answer is D.")  # no format, no guess


def test_answer_format_last_answer_and_separators():
    assert Harvest.parse("I think 10.\nAnswer: 12\nActually Answer: 1,500").amount == 1500
    with pytest.raises(ParseError):
        Harvest.parse("I will take ten tons")
    with pytest.raises(ParseError):
        Harvest.parse("Answer: -3")


def test_render_round_trips_each_format():
    for action in (Choice(choice="D", reasoning="why <not>"), Offer(alice_gain=3, bob_gain=7, message="hi"), Harvest(amount=4), Verdict(decision="reject")):
        if isinstance(action, Choice):
            continue  # reasoning with markup is not round-trippable in XML; checked below
        assert type(action).parse(action.render()) == action
    assert Choice.parse(Choice(choice="D", reasoning="fine").render()) == Choice(choice="D", reasoning="fine")


def test_grammar_mentions_every_field_and_option():
    g = Choice.grammar()
    assert '"A" | "B" | "C" | "D"' in g and "<reasoning>" in g
    assert Harvest.grammar().count("Answer: ") == 1
    g = Offer.grammar()  # a flat JSON object, fields in order, numbers unsigned (ge=0)
    assert g.index('alice_gain') < g.index('bob_gain') < g.index('message') and '"-"' not in g


def test_grammars_parse_as_gbnf():
    from llama_cpp import LlamaGrammar  # noqa: F401  (grammar syntax is checked by llama.cpp)

    for kind in (Choice, Offer, Harvest, Verdict):
        LlamaGrammar.from_string(kind.grammar(), verbose=False)


def test_each_format_writes_what_it_reads_and_a_person_sees_fields():
    """core.formats: every format finds the block it writes; a recorded answer is shown to a
    person as ``Field: value`` lines whatever format it was written in (web history)."""
    from agorabench.core.formats import FORMATS, read_fields
    from agorabench.web.forms import answer_text

    for fmt, data in ((FORMATS["json"], {"price": 12, "message": "a <b> deal"}), (FORMATS["xml"], {"choice": "B", "reasoning": "why"}), (FORMATS["answer"], {"amount": "7"})):
        text = "Some thought first.\n" + fmt.write(data)
        assert fmt.candidates(text, list(data))[-1] == {k: (str(v) if fmt.name != "json" else v) for k, v in data.items()}
    assert read_fields('{"choice": "A"} then {"choice": "C"}') == {"choice": "C"}
    assert read_fields("no block here") is None
    assert answer_text('<response>\n  <choice>B</choice>\n</response>') == "Your answer: B"  # one value reads as the answer itself (issue 41)
    assert answer_text('{"price": 5000.0, "message": ""}') == "Price: 5000"
