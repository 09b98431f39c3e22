"""Actions: the typed decisions a player returns, and how text answers become actions.

One pydantic model per decision type drives four things: the format instructions shown to
players, the parser for their answers, the JSON schema for constrained decoding, and the fields
of the human form. Its ``response_format`` names one of the answer formats of
:mod:`agorabench.core.formats` (``json``, ``xml``, ``answer``), which writes, describes and finds
answers; this module turns what the format found into a valid action.

Parsing is tolerant of presentation (code fences, surrounding prose, case, thousands
separators; the last well-formed block wins) but never guesses a missing or invalid value:
it raises :class:`ParseError` with a message that can be shown to the player.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..text import storable
from .formats import FORMATS, AnswerFormat, Format



class ParseError(ValueError):
    """An answer that is not a valid action; the message explains what is wrong."""


class Action(BaseModel):
    """Base class of every decision type. Subclasses set ``response_format``."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    response_format: ClassVar[Format] = "json"
    #: Fields whose values are free text and may contain markup (never coerced).
    text_fields: ClassVar[tuple[str, ...]] = ()
    #: Longest free-text value the decoding grammar allows (constrained models only).
    grammar_text_chars: ClassVar[int] = 600

    @classmethod
    def field_names(cls) -> list[str]:
        return list(cls.model_fields)

    @classmethod
    def format(cls) -> "AnswerFormat":
        """The answer format of this action type (:mod:`agorabench.core.formats`)."""
        return FORMATS[cls.response_format]

    @classmethod
    def form_note(cls) -> str:
        """A rule a person's form states beside its fields (e.g. that two amounts must add up);
        empty when the fields say it all."""
        return ""

    @classmethod
    def format_instructions(cls) -> str:
        """A short description of the expected answer format, ending the prompt."""
        return cls.format().instructions(cls.model_fields)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return cls.model_json_schema()

    @classmethod
    def grammar(cls) -> str:
        """A GBNF grammar of a well-formed answer in this action's format, for constrained
        decoding on backends that accept grammars."""
        return cls.format().grammar(cls.model_json_schema().get("properties", {}), cls.grammar_text_chars)

    def render(self) -> str:
        """This action written in its own answer format (how scripted players answer)."""
        return self.format().write(self.model_dump(mode="json"))

    @classmethod
    def parse(cls, text: str) -> "Action":
        """Turn a reply into an action of this type or raise ParseError."""
        if not text or not text.strip():
            raise ParseError("The answer was empty.")
        candidates = cls.format().candidates(text, cls.field_names())
        if not candidates:
            raise ParseError(f"No answer in the expected format was found. {cls.format_instructions()}")
        try:  # the last well-formed block is the answer; an earlier one is a draft, never a fallback
            action = cls.model_validate(_clean(candidates[-1], cls.text_fields))
            _check_numbers(dict(action))
            return action
        except ValidationError as exc:
            problem = _describe(exc)
        except ParseError as exc:
            problem = str(exc)
        raise ParseError(f"The answer is not a valid action: {problem}")


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "answer"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def _is_number_text(text: str) -> bool:
    """``[+-] digits[,/space digits...][.digits]`` (thousands separators allowed), checked
    without a backtracking pattern so that long inputs take linear time."""
    body = text[1:].lstrip() if text[:1] in "+-" else text
    body = body.replace(",", "").replace(" ", "")
    return bool(_PLAIN_NUMBER.fullmatch(body))


_PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")
#: Longest value of a field that is not free text (a choice with its explanation, a number);
#: below Python's 4,300-digit limit on converting text to int.
MAX_VALUE_CHARS = 2_000
#: Largest magnitude of any number in an answer; beyond it the answer is absurd, not a choice.
MAX_NUMBER = 1e12


def _check_numbers(data: dict[str, Any]) -> None:
    """Non-finite or absurdly large numbers are invalid answers, never values (they would
    overflow the metrics)."""
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ParseError(f"{key}: {value} is not a finite number.")
        if abs(value) > MAX_NUMBER:
            raise ParseError(f"{key}: the number is far outside any sensible range.")


def _clean(data: dict[str, Any], text_fields: tuple[str, ...]) -> dict[str, Any]:
    """Normalise presentation: strip strings, drop thousands separators and currency signs."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        key = key.strip().lower() if isinstance(key, str) else key
        if isinstance(value, str):  # a JSON escape can encode half an emoji: never store it
            value = storable(value)
        if isinstance(value, str) and key not in text_fields:
            value = value.strip()
            if len(value) > MAX_VALUE_CHARS:
                raise ParseError(f"{key}: the value is {len(value)} characters long; expected a short value.")
            candidate = value.replace("$", "").replace("€", "").replace("£", "").strip()
            if _is_number_text(candidate) and ("," in candidate or " " in candidate or candidate != value):
                candidate = candidate.replace(",", "").replace(" ", "")
                value = candidate
        out[key] = value
    return out


