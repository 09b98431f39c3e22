"""Actions: the typed decisions a player returns, and how text answers become actions.

One pydantic model per decision type drives four things: the format instructions shown to
players, the parser for their answers, the JSON schema for constrained decoding, and the fields
of the human form. Its ``response_format`` names one of the answer formats of
:mod:`agorabench.core.formats` (``json``, ``xml``, ``answer``), which writes, describes and finds
answers; this module turns what the format found into a valid action.

Parsing is tolerant of presentation (code fences, surrounding prose, case, thousands
separators) but never guesses a missing or invalid value, nor which of several answers a reply
meant: it raises :class:`ParseError` with a message that can be shown to the player. The
answer is read from the reply's text outside its thoughts (a reply cut inside a ``<think>``
has none), from the blocks that are its answer (:meth:`~agorabench.core.formats.AnswerFormat.answers`:
never a quoted block, nor a fenced example or draft beside an answer written in the text).
In the answer-line format the last answer line counts (its instruction puts it at the end);
in JSON and XML every answer block counts: repeated blocks naming the same action are that
action, blocks naming different actions are refused with both shown, and asked again.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from ..models.reasoning import answer_of
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
    #: Write number fields' placeholders bare in the JSON format line (``{"send": <a whole
    #: number>}``), so a model is not led to answer a number as a string. Off by default: every
    #: shipped prompt stays byte for byte as it was; a new game opts in.
    bare_numbers: ClassVar[bool] = False
    #: Choice fields read without regard to case, surrounding spaces or a closing ``.`` / ``!``
    #: (``"Accept."`` is ``accept``): the one rule for accept/reject, yes/no and the like.
    lowered_fields: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _lowered(cls, data: Any) -> Any:
        """Each of :attr:`lowered_fields` given as text, stripped and lower-cased."""
        if not cls.lowered_fields or not isinstance(data, dict):
            return data
        return {k: v.strip().strip(".!").lower() if k in cls.lowered_fields and isinstance(v, str) else v for k, v in data.items()}

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
        return cls.format().instructions(cls.model_fields, bare_numbers=cls.bare_numbers)

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
        """Turn a reply into an action of this type or raise ParseError (module doc: which
        blocks are the answer, and that blocks naming different actions are refused)."""
        if not text or not text.strip():
            raise ParseError("The answer was empty.")
        text, unclosed = answer_of(text)
        if unclosed:
            raise ParseError("The reply ended inside its reasoning (an unclosed <think>), with no answer after it.")
        fmt, fields = cls.format(), cls.field_names()
        found = fmt.answers(text, fields)
        if not found:
            raise ParseError(f"No answer in the expected format was found. {cls.format_instructions()}")
        if fmt.ends_reply:
            found = found[-1:]
        elif len(found) > 1:  # blocks of other things (no field of the action) are not answers, unless all are (one block stays)
            names = set(fields)
            found = [c for c in found if any(isinstance(k, str) and k.strip().lower() in names for k in c)] or found[-1:]
        if len(found) == 1:  # one block: no other to compare it with (nothing rendered)
            action, problem = cls._read(found[0])
            if action is None:
                raise ParseError(f"The answer is not a valid action: {problem}")
            return action
        outcomes: dict[str, tuple["Action | None", str, dict[str, Any]]] = {}
        for block in found:
            action, problem = cls._read(block)
            key = action.render() if action is not None else "invalid: " + repr(sorted(block.items(), key=repr))
            outcomes.setdefault(key, (action, problem, block))
        if len(outcomes) > 1:
            shown = [_short(a.render() if a is not None else fmt.write(b)) for a, _, b in list(outcomes.values())[:3]]
            more = f" and {len(outcomes) - 3} more" if len(outcomes) > 3 else ""
            raise ParseError(f"The answer holds {len(outcomes)} different actions ({'; '.join(shown)}{more}); give exactly one.")
        ((action, problem, _),) = outcomes.values()
        if action is None:
            raise ParseError(f"The answer is not a valid action: {problem}")
        return action

    @classmethod
    def _read(cls, block: dict[str, Any]) -> tuple["Action | None", str]:
        """One answer block as an action of this type, or None and what is wrong with it."""
        try:
            action = cls.model_validate(_clean(block, cls.text_fields))
            _check_numbers(action.__dict__)  # the fields, then any extras: what dict(action) gives, without its slow lookups
            if action.__pydantic_extra__:
                _check_numbers(action.__pydantic_extra__)
            return action, ""
        except ValidationError as exc:
            return None, _describe(exc)
        except ParseError as exc:
            return None, str(exc)


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
        if type(value) is str or isinstance(value, bool) or not isinstance(value, (int, float)):  # text first: no call
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ParseError(f"{key}: {value} is not a finite number.")
        if abs(value) > MAX_NUMBER:
            raise ParseError(f"{key}: the number is far outside any sensible range.")


def _clean(data: dict[str, Any], text_fields: tuple[str, ...]) -> dict[str, Any]:
    """Normalise presentation: strip strings, drop thousands separators and currency signs."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        key = key.strip().lower() if type(key) is str or isinstance(key, str) else key
        text = type(value) is str or isinstance(value, str)  # still text after storable()
        if text:  # a JSON escape can encode half an emoji: never store it
            value = storable(value)
        if text and key not in text_fields:
            value = value.strip()
            if len(value) > MAX_VALUE_CHARS:
                raise ParseError(f"{key}: the value is {len(value)} characters long; expected a short value.")
            candidate = value.replace("$", "").replace("€", "").replace("£", "").strip()
            if ("," in candidate or " " in candidate or candidate != value) and _is_number_text(candidate):  # the cheap test first
                candidate = candidate.replace(",", "").replace(" ", "")
                value = candidate
        out[key] = value
    return out


def _short(text: str, limit: int = 120) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis where it is cut)."""
    line = storable(" ".join(text.split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"
