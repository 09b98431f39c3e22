"""The commons actions: a harvest, a chat remark (with or without a proposed limit), the agreed
limit, and the memory calls' note, rating and insights; and the variants a person's form asks
(:func:`person_harvest`, :func:`person_remark`). Models always get the plain types, so their
prompts, schemas and grammars never depend on who else plays."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from ...core.actions import Action


def _floor_number(v: Any) -> Any:
    """A fractional amount is rounded down, as the original's integer extraction does."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return v
    return math.floor(f) if math.isfinite(f) else v


class WholeAnswer(Action):
    """An ``Answer: N`` action whose one field is a whole number; fractions are rounded down."""

    response_format: ClassVar = "answer"

    @field_validator("*", mode="before")
    @classmethod
    def _whole(cls, v: Any) -> Any:
        return _floor_number(v)


class Harvest(WholeAnswer):
    """How much of the resource the agent takes (inverse scenario: removes) this month."""

    amount: int = Field(ge=0, description="amount")


class Remark(Action):
    """One remark in the group chat, as the original asks for it: what the speaker says, the
    next speaker it names, and whether it closes the chat."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("message", "next_speaker")

    message: str
    next_speaker: str = ""
    end_conversation: bool = False


class Utterance(Remark):
    """A remark that may also propose a per-person limit as a separate field (``ask_proposal``,
    the legacy protocol; scripted players always answer with it)."""

    proposed_limit: int | None = Field(default=None, ge=0)


class Rating(WholeAnswer):
    """How much a memory matters to the agent, from 1 (routine) to 10 (of great importance)."""

    rating: int = Field(ge=1, le=10, description="rating")


class Note(Action):
    """A note the agent writes to remember after the month's chat (one sentence)."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("note",)

    note: str


class Insights(Action):
    """The insights the agent draws at home from the memories it is shown, as one numbered
    text (``1. insight (because of 1, 3) 2. ...``), split as the original splits it."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("insights",)
    grammar_text_chars: ClassVar = 2000

    insights: str


class Limit(WholeAnswer):
    """The per-person limit the group agreed on, as the summariser reads the minutes (0 = none)."""

    limit: int = Field(ge=0, description="limit")


# What a person's form asks (a person in a seat; models always get the types above, so their
# prompts, schemas and grammars never change).


@lru_cache(maxsize=256)
def person_harvest(most: int) -> type[Harvest]:
    """The harvest a person may enter when ``most`` is what the question says they may take
    (0 to the stock): the bound is checked on the server, so 99,999 is refused with a message."""
    note = f"Enter a whole number from 0 to {int(most)}."
    return type(
        f"Harvest_upto_{most}",
        (Harvest,),
        {"__annotations__": {"amount": int}, "amount": Field(ge=0, le=int(most), description="amount"), "form_note": classmethod(lambda cls: note), "__module__": __name__},
    )


@lru_cache(maxsize=256)
def person_remark(kind: type[Remark], others: tuple[str, ...]) -> type[Remark]:
    """A remark as a person makes it: the next speaker chosen among the others' names (a
    select, never free text) and the meeting ended with a button of its own."""
    choice = Literal[others] if others else str  # type: ignore[valid-type]
    fields = {
        "__annotations__": {"next_speaker": choice, "end_conversation": bool, "select_fields": ClassVar[tuple[str, ...]], "button_fields": ClassVar[tuple[str, ...]]},
        "next_speaker": Field(others[0] if others else "", description="who speaks next"),
        "end_conversation": Field(False, description="Say this and end the meeting"),
        "select_fields": ("next_speaker",),
        "button_fields": ("end_conversation",),
        "form_note": classmethod(lambda cls: "Write what you say to the group and choose who speaks next. If you think the meeting can close, press “Say this and end the meeting” instead of Submit."),
        "__module__": __name__,
    }
    return type(f"Person{kind.__name__}", (kind,), fields)
