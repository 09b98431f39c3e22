"""Which part of a reply is its answer (issue 40, items 6 and 7): the text outside every
complete thought; of that, the blocks that are not quoted and not a fenced example beside an
answer written in the text; blocks naming different actions are refused, never resolved to
one; a reply cut inside a thought has no answer, for the parser alone as for the runner."""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar, Literal

import pytest
from pydantic import Field

from agorabench.core.actions import Action, ParseError
from agorabench.core.agents import LLMAgent
from agorabench.core.formats import read_fields
from agorabench.core.table import Prompt, Table
from agorabench.games.envy.point_allocation import Choice
from agorabench.models.base import Completion, GenerationSettings
from agorabench.models.model import Model, keep_apart
from agorabench.models.reasoning import answer_of, split_thoughts


class Offer(Action):
    response_format: ClassVar = "json"
    text_fields: ClassVar = ("message",)
    alice_gain: float = Field(ge=0)
    bob_gain: float = Field(ge=0)
    message: str = ""


class Harvest(Action):
    response_format: ClassVar = "answer"
    amount: int = Field(ge=0)


class Pick(Action):
    response_format: ClassVar = "json"
    choice: Literal["left", "right"]


ANSWER = '{"alice_gain": 60, "bob_gain": 40, "message": "Sixty-forty is fair."}'
DRAFT = '{"alice_gain": 90, "bob_gain": 10, "message": "Take it or leave it."}'
XML_ANSWER = "<response>\n  <choice>B</choice>\n  <reasoning>fair to both</reasoning>\n</response>"
XML_DRAFT = "<response>\n  <choice>D</choice>\n  <reasoning>all for me</reasoning>\n</response>"


def reply(text: str) -> Completion:
    """A completion as the runner hands it to the parser: thoughts moved out of its text."""
    c = Completion(text=text)
    keep_apart(c)
    return c


# ---------------------------------------------------------------------------------------------
# Item 6: the answer is the text outside every complete thought


@pytest.mark.parametrize(
    "text",
    [
        f"<think>Weighing it.</think>\n{ANSWER}",  # as always
        f"Weighing it.\n</think>\n{ANSWER}",  # the server stripped the opening tag
        f"<think>Weighing it.</think>\n{ANSWER}\n<think>Second thoughts: {DRAFT}</think>",  # a second thought after the answer
        f"<think>First: {DRAFT}. No.</think>\n{ANSWER}\n(My notes ended at the </think> tag.)",  # a stray closing tag in the answer
        f"<thought>{DRAFT}? No.</thought>\n{ANSWER}",  # Gemma-style tags
        f"<think>a</think>{ANSWER}<think>b</think>\n{ANSWER}",  # the same answer twice around thoughts
    ],
    ids=["leading", "no-opener", "second-thought", "stray-close", "thought-tags", "repeated"],
)
def test_the_answer_outside_the_thoughts_is_the_move(text):
    c = reply(text)
    assert Offer.parse(c.text) == Offer.parse(ANSWER)
    assert "Take it" not in c.text and not c.extra.get("unclosed_thought")
    assert Offer.parse(text) == Offer.parse(ANSWER)  # the parser alone reads the same


def test_a_stray_closing_tag_after_a_thought_is_kept_literally_and_reads_the_same_again():
    text = "<think>Draft it.</think>\n" + '{"alice_gain": 50, "bob_gain": 50, "message": "I close my notes with </think> always"}'
    answer, thoughts, unclosed = split_thoughts(text)
    assert thoughts == "Draft it." and not unclosed and answer.startswith('{"alice_gain": 50')
    assert answer_of(answer) == (answer, False)  # the parser reads the split answer as it is
    assert Offer.parse(answer).message == "I close my notes with </think> always"


def test_the_split_keeps_every_earlier_reply_shape_byte_for_byte():
    """A reply with its thoughts before its answer splits as it always did (the model's own
    transcript holds the same text as before); a reply without tags is untouched."""
    assert split_thoughts("<think>\nOffer 60? No.\n</think>\n\n" + ANSWER + "\n") == (ANSWER + "\n", "Offer 60? No.", False)
    assert split_thoughts("<think>a</think>\n<think>b</think>\n" + ANSWER) == (ANSWER, "a\n\nb", False)
    assert split_thoughts("<think></think>" + ANSWER) == (ANSWER, "", False)
    for plain in (ANSWER, XML_ANSWER, "Answer: 3", "a table <th>cell</th>", ""):
        assert split_thoughts(plain) == (plain, None, False)


def test_conflicting_actions_outside_the_thoughts_are_refused_with_both_shown():
    text = f"<think>a</think>\n{ANSWER}\n<think>Hmm, rather:</think>\n{DRAFT}"
    c = reply(text)
    with pytest.raises(ParseError) as exc:
        Offer.parse(c.text)
    assert "2 different actions" in str(exc.value) and "Sixty-forty" in str(exc.value) and "Take it or leave it" in str(exc.value)


@pytest.mark.parametrize(
    "text",
    [f"<think>Considering {DRAFT}", f"<thought>Considering {DRAFT}", f"{ANSWER}\n<think>On second thought {DRAFT}", f"  \n<think>\n{ANSWER}"],
    ids=["cut", "cut-thought-tags", "answer-then-cut", "cut-leading-space"],
)
def test_a_reply_cut_inside_a_thought_has_no_answer_for_the_runner_and_the_parser_alone(text):
    c = reply(text)
    assert c.text == "" and c.extra["unclosed_thought"] and c.reasoning  # all of it kept as thought
    with pytest.raises(ParseError, match="unclosed <think>"):
        Offer.parse(text)


def test_the_parser_alone_never_plays_a_draft_in_a_thought_whose_opener_was_stripped():
    """Without the runner's split, a leading thought that lost its opening tag is not dropped by
    the parser (it cannot tell it from a stray tag), but its draft never wins: refused."""
    with pytest.raises(ParseError, match="different actions"):
        Offer.parse(f"I could say {DRAFT}. No.\n</think>\n{ANSWER}")
    assert Offer.parse(f"Thinking.\n</think>\n{ANSWER}") == Offer.parse(ANSWER)


# ---------------------------------------------------------------------------------------------
# Item 7: a draft shown beside the answer is never the move


@pytest.mark.parametrize(
    "text",
    [
        f"{ANSWER}\n\nFor comparison, a draft I rejected:\n```json\n{DRAFT}\n```",
        f"{ANSWER}\n\nAn example of a worse offer:\n```\n{DRAFT}\n```",
        f"My offer: {ANSWER}\n\n```json\n{DRAFT}\n```\n\n```json\n{DRAFT}\n```",
        f"Draft:\n```json\n{DRAFT}\n```\nFinal: {ANSWER}",
        f"An earlier draft read:\n> {DRAFT}\n\nMy answer: {ANSWER}",
        f"{ANSWER}\n\n  > {DRAFT}",
        f"Here it is:\n```json\n{ANSWER}\n```",  # a fenced answer alone
        f"After some thought, my answer is {ANSWER}",  # JSON after prose
        f'{ANSWER}\nThe format was {{"note": "any object"}}',  # an object of something else
        f"{ANSWER}\n\nTo repeat:\n```json\n{ANSWER}\n```",  # the same action twice
    ],
    ids=["fenced-draft-after", "fenced-example-after", "two-fences-after", "fenced-draft-before", "quoted-before", "quoted-after",
         "fenced-alone", "after-prose", "other-object", "repeated-in-fence"],
)
def test_the_answer_given_as_the_answer_wins_over_a_shown_draft(text):
    assert Offer.parse(text) == Offer.parse(ANSWER)
    if "note" not in text:  # a person reads the same answer back (read_fields knows no fields)
        assert read_fields(text)["message"] == "Sixty-forty is fair."


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{ANSWER}\n```\nOr, for example:\n```json\n{DRAFT}\n```",  # two fences, no answer in the text
        f"{ANSWER} or perhaps {DRAFT}",  # two answers in the text
        f"```json\n{DRAFT}\n```\n```json\n{ANSWER}\n```",
    ],
    ids=["two-fences", "two-in-text", "two-fences-answer-last"],
)
def test_blocks_that_conflict_are_refused_never_resolved_to_either(text):
    with pytest.raises(ParseError, match="2 different actions") as exc:
        Offer.parse(text)
    assert "give exactly one" in str(exc.value)


def test_each_format_sets_a_shown_draft_aside():
    assert Choice.parse(f"{XML_ANSWER}\n\nA draft I dropped:\n```xml\n{XML_DRAFT}\n```").choice == "B"
    assert Choice.parse("Earlier:\n" + "\n".join("> " + line for line in XML_DRAFT.splitlines()) + f"\n\n{XML_ANSWER}").choice == "B"
    with pytest.raises(ParseError, match="2 different actions"):
        Choice.parse(f"{XML_ANSWER}\n{XML_DRAFT}")
    assert Choice.parse(f"{XML_ANSWER}\n{XML_ANSWER}").choice == "B"
    # the answer line: its instruction puts it at the end, so the last line counts, as always;
    # one shown in a fence or a quotation never does
    assert Harvest.parse("Step by step... Answer: 12\nActually Answer: 1,500").amount == 1500
    assert Harvest.parse("Answer: 5\n\nAn example of a greedy answer:\n```\nAnswer: 90\n```").amount == 5
    assert Harvest.parse("Answer: 5\n> Answer: 90").amount == 5
    assert Harvest.parse("<think>Answer: 90? No.</think>\nAnswer: 5\n<think>Answer: 80?</think>").amount == 5


def test_reading_the_answer_stays_linear_in_the_reply():
    """Thought tags, quotations and fences added to the search keep it linear (replies are
    untrusted text): 10 times the text takes well under 35 times as long."""
    shapes = {
        "openers": lambda n: "<think>" * (n // 7),
        "closers": lambda n: "</think>" * (n // 8),
        "pairs": lambda n: ("<think>x</think>" + ANSWER) * (n // 90),
        "quotes": lambda n: ("> " + DRAFT + "\n") * (n // 75),
        "fences": lambda n: ("```json\n" + DRAFT + "\n```\n" + ANSWER + "\n") * (n // 150),
    }
    for name, make in shapes.items():
        small, large = make(20_000), make(200_000)
        times = []
        for text in (small, large):
            best = float("inf")
            for _ in range(2):
                started = time.process_time()
                try:
                    Offer.parse(text)
                except ParseError:
                    pass
                split_thoughts(text)
                best = min(best, time.process_time() - started)
            times.append(max(best, 1e-4))
        assert times[1] / times[0] < 35, (name, times)


# ---------------------------------------------------------------------------------------------
# Through the table: a conflicting reply is asked again with its reason


class Scripted:
    """A backend answering from a list of texts (the last repeats)."""

    serialized = False
    identity = "scripted:shapes"

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls: list[list[dict]] = []

    async def complete(self, messages, settings):
        self.calls.append([dict(m) for m in messages])
        return Completion(self.texts[min(len(self.calls) - 1, len(self.texts) - 1)], 5, 5)

    def classify_error(self, exc):
        return None

    def probe_target(self):
        return None

    async def aclose(self):
        return None


def test_a_conflicting_reply_is_asked_again_with_its_reason_and_the_answer_then_counts():
    backend = Scripted('{"choice": "left"} or rather {"choice": "right"}', '<think>left?</think>{"choice": "right"}\n\nNot:\n```json\n{"choice": "left"}\n```')
    model = Model(backend, GenerationSettings())
    table = Table({"a": LLMAgent(model, sample="g"), "b": LLMAgent(model, sample="g")}, seed=1, max_retries=2, system={"a": "Rules.", "b": "Rules."})
    assert asyncio.run(table.ask("a", Prompt("Pick a side."), Pick)) == Pick(choice="right")
    turn = table.turns[0]
    assert turn.valid and turn.retries == 1
    reask = backend.calls[1][-1]["content"]
    assert "2 different actions" in reask and "give exactly one" in reask
