"""Actions: the typed decisions a player returns, and how text answers become actions.

One pydantic model per decision type drives four things: the format instructions shown to
players, the parser for their answers, the JSON schema for constrained decoding, and the fields
of the human form. Three answer formats exist, as the papers use them:

- ``json``: a JSON object whose keys are the action's fields (GLEE);
- ``xml``: ``<response><field>value</field>...</response>`` (envy);
- ``answer``: a final line ``Answer: N`` for a single numeric field (GovSim).

Parsing is tolerant of presentation (code fences, surrounding prose, case, thousands
separators; the last well-formed block wins) but never guesses a missing or invalid value:
it raises :class:`ParseError` with a message that can be shown to the player.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

Format = Literal["json", "xml", "answer"]


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
    def format_instructions(cls) -> str:
        """A short description of the expected answer format, ending the prompt."""
        fields = cls.model_fields
        if cls.response_format == "answer":
            (name,) = fields
            return f"End your answer with a line of the form 'Answer: <{name}>'."
        if cls.response_format == "xml":
            inner = "\n".join(f"  <{n}>{_placeholder(n, f.description)}</{n}>" for n, f in fields.items())
            return f"Answer in this XML format:\n<response>\n{inner}\n</response>"
        example = {n: _placeholder(n, f.description) for n, f in fields.items()}
        return "Answer with a JSON object of this form:\n" + json.dumps(example, ensure_ascii=False)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return cls.model_json_schema()

    @classmethod
    def grammar(cls) -> str:
        """A GBNF grammar of a well-formed answer in this action's format, for constrained
        decoding on backends that accept grammars. JSON answers get a compact grammar of a flat
        object with the fields in order: llama.cpp samples it far faster than the general
        grammar it derives from a JSON schema."""
        props = cls.model_json_schema().get("properties", {})
        n = cls.grammar_text_chars
        if cls.response_format == "answer":
            (name,) = props
            return f'root ::= [^\\n]{{0,400}} "\\n" "Answer: " {_gbnf_value(props[name], n)}'
        if cls.response_format == "xml":
            parts = " ".join(f'"  <{k}>" {_gbnf_value(p, n)} "</{k}>\\n"' for k, p in props.items())
            return f'root ::= "<response>\\n" {parts} "</response>"'
        pairs = ' "," " "? '.join(f"{json.dumps(json.dumps(k))} \":\" \" \"? {_gbnf_value(p, n, quoted=True)}" for k, p in props.items())
        return f'root ::= "{{" " "? {pairs} " "? "}}"'

    def render(self) -> str:
        """This action written in its own answer format (how scripted players answer)."""
        data = self.model_dump(mode="json")
        if self.response_format == "answer":
            (value,) = data.values()
            return f"Answer: {value}"
        if self.response_format == "xml":
            inner = "\n".join(f"  <{k}>{'' if v is None else v}</{k}>" for k, v in data.items())
            return f"<response>\n{inner}\n</response>"
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def parse(cls, text: str) -> "Action":
        """Turn a reply into an action of this type or raise ParseError."""
        if not text or not text.strip():
            raise ParseError("The answer was empty.")
        if cls.response_format == "json":
            candidates = _json_candidates(text)
        elif cls.response_format == "xml":
            candidates = _xml_candidates(text, cls.field_names())
        else:
            candidates = _answer_candidates(text, cls.field_names())
        if not candidates:
            raise ParseError(f"No answer in the expected format was found. {cls.format_instructions()}")
        last_error: str = ""
        for data in reversed(candidates):  # last well-formed block wins
            try:
                action = cls.model_validate(_clean(data, cls.text_fields))
                _check_numbers(dict(action))
                return action
            except ValidationError as exc:
                last_error = _describe(exc)
            except ParseError as exc:
                last_error = str(exc)
        raise ParseError(f"The answer is not a valid action: {last_error}")


def _gbnf_value(prop: dict[str, Any], text_chars: int, quoted: bool = False) -> str:
    """GBNF for one field's value, from its JSON-schema property (``quoted``: as a JSON value)."""
    options = prop.get("enum") or ([prop["const"]] if "const" in prop else None)
    if options is None and "anyOf" in prop:
        options = [o["const"] for o in prop["anyOf"] if "const" in o] or None
    if options:
        return "(" + " | ".join(json.dumps(json.dumps(o) if quoted else str(o)) for o in options) + ")"
    kind = prop.get("type")
    sign = "" if min(prop.get("minimum", -1), prop.get("exclusiveMinimum", -1) + 1) >= 0 else '"-"? '
    if kind == "integer":
        lo, hi = prop.get("minimum"), prop.get("maximum")
        if lo is not None and hi is not None and 0 <= lo <= hi <= 9:
            return f"[{int(lo)}-{int(hi)}]"
        return sign + "[0-9]{1,9}"
    if kind == "number":
        return sign + '[0-9]{1,9} ("." [0-9]{1,4})?'
    if kind == "boolean":
        return '("true" | "false")'
    if quoted:
        return f'"\\"" [^"\\\\\\n]{{0,{text_chars}}} "\\""'
    return f"[^<]{{0,{text_chars}}}"


def _placeholder(name: str, description: str | None) -> str:
    return description or name.upper()


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


_LONE_SURROGATE = re.compile("[\ud800-\udfff\x00]")
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
            value = _LONE_SURROGATE.sub("\ufffd", value)
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


def _pairs(text: str, opening: str, closing: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the text between each ``opening`` marker and the first ``closing``
    after it, left to right, case-insensitively; like ``opening(.*?)closing`` but linear in
    the length of the text (the lazy pattern rescans the rest of the text for every unclosed
    opening marker)."""
    opens = [m.end() for m in re.finditer(re.escape(opening), text, re.I)]
    closes = [m.start() for m in re.finditer(re.escape(closing), text, re.I)] if opening != closing else opens
    out, j, pos = [], 0, 0
    for start in opens:
        if start < pos:
            continue
        while j < len(closes) and closes[j] < start:
            j += 1
        if opening == closing:  # the next marker closes; its own length must be skipped
            while j < len(closes) and closes[j] <= start:
                j += 1
            if j == len(closes):
                break
            out.append((start, closes[j] - len(closing)))
            pos = closes[j] + 1  # the closing marker opens nothing
            j += 1
            continue
        if j == len(closes):
            break
        out.append((start, closes[j]))
        pos = closes[j] + len(closing)
    return out


def _json_candidates(text: str) -> list[dict[str, Any]]:
    """Every JSON object in the text, in order: fenced blocks first, then balanced braces."""
    found: list[tuple[int, dict[str, Any]]] = []
    for start, end in _pairs(text, "```", "```"):
        block = text[start:end]
        if block[:4].lower() == "json":
            block = block[4:]
        obj = _loads(block)
        if obj is not None:
            found.append((start, obj))
    if not found:
        for start, chunk in _balanced_objects(text):
            obj = _loads(chunk)
            if obj is not None:
                found.append((start, obj))
    return [obj for _, obj in sorted(found, key=lambda p: p[0])]


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def _loads(chunk: str) -> dict[str, Any] | None:
    chunk = chunk.strip()
    for attempt in (chunk, re.sub(r"(?<=\d),(?=\d{3}\b)", "", chunk)):
        try:
            obj = json.loads(attempt, parse_constant=_no_constant)
        except (ValueError, RecursionError):  # malformed, NaN/Infinity, or nested too deeply
            continue
        if isinstance(obj, dict):
            return obj
    return None


def _balanced_objects(text: str) -> list[tuple[int, str]]:
    """Top-level ``{...}`` spans, respecting strings."""
    spans, depth, start, in_str, escape = [], 0, -1, False, False
    for i, ch in enumerate(text):
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth > 0:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append((start, text[start : i + 1]))
    return spans


def _xml_candidates(text: str, fields: list[str]) -> list[dict[str, Any]]:
    """``<response>`` blocks with their field tags; bare field tags if no block is found."""
    blocks = [text[a:b] for a, b in _pairs(text, "<response>", "</response>")] or [text]
    out = []
    for block in blocks:
        data: dict[str, Any] = {}
        for name in fields:
            values = _pairs(block, f"<{name}>", f"</{name}>")
            if values:
                a, b = values[-1]
                data[name] = block[a:b].strip()
        if data:
            out.append(data)
    return out


#: ``Answer: N``; one character class between the colon and the number keeps it linear.
_ANSWER = re.compile(r"answer\s*[:：][\s*]*([-+]?\d[\d,]*(?:\.\d+)?)", re.I)


def _answer_candidates(text: str, fields: list[str]) -> list[dict[str, Any]]:
    (name,) = fields
    return [{name: m.group(1).replace(",", "")} for m in _ANSWER.finditer(text)]
