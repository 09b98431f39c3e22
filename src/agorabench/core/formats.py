"""Answer formats: how a decision is written as text, one class per format as the papers use
them, so that nothing else switches on a format's name.

- :class:`JsonFormat` (``json``): a JSON object whose keys are the action's fields (GLEE);
- :class:`XmlFormat` (``xml``): ``<response><field>value</field>...</response>`` (envy);
- :class:`AnswerLineFormat` (``answer``): a final line ``Answer: N`` for one numeric field (GovSim);
- :class:`AnswerTextFormat` (``answer_text``): a final line ``Answer: WORDS`` for one text field.

Each says how to ask for it (:meth:`AnswerFormat.instructions`), how to decode it under
constraints (a GBNF :meth:`~AnswerFormat.grammar`, or the JSON schema where a backend takes
one: :attr:`~AnswerFormat.schema_decoding`), how to write values in it
(:meth:`~AnswerFormat.write`), where its well-formed blocks are in a reply
(:meth:`~AnswerFormat.candidates`, left to right) and which of them are the reply's answer
(:meth:`~AnswerFormat.answers`). Turning the answer into a valid action stays with
:meth:`agorabench.core.actions.Action.parse`. Every search is linear in the length of the
reply (replies are untrusted text).

Which blocks are the answer (thoughts already left out, :func:`agorabench.models.reasoning.answer_of`):

- a block in a Markdown quotation (its line starts with ``>``) is quoted, never answered;
- a reply that writes a block in its text (not in a code fence) answers there: its fenced
  blocks show something else (an example, a draft it rejected, the format), wherever they are;
- a reply whose blocks are all fenced answers in its fences.

What then counts is the format's own rule (:attr:`~AnswerFormat.ends_reply`): the answer-line
format's instruction puts the answer on the reply's last such line, so the last one counts;
the JSON and XML formats name no place, so every answer block counts and they must agree
(:meth:`~agorabench.core.actions.Action.parse` refuses blocks that name different actions).
"""

from __future__ import annotations

import bisect
import functools
import json
import re
from typing import Any, Literal, get_args

Format = Literal["json", "xml", "answer", "answer_text"]


class AnswerFormat:
    """How decisions are written in one format (see module doc)."""

    name: str = ""
    #: A backend that takes a JSON schema may decode this format with it (else: the grammar).
    schema_decoding: bool = False

    def instructions(self, fields: dict[str, Any], bare_numbers: bool = False) -> str:
        """What the end of a prompt says about the answer (``fields``: name -> pydantic FieldInfo).
        ``bare_numbers``: number fields' placeholders unquoted, where the format quotes values
        (JSON; see :attr:`agorabench.core.actions.Action.bare_numbers`)."""
        raise NotImplementedError

    def grammar(self, props: dict[str, Any], text_chars: int) -> str:
        """A GBNF grammar of a well-formed answer (``props``: JSON-schema properties)."""
        raise NotImplementedError

    def write(self, data: dict[str, Any]) -> str:
        """``data`` (field -> value) written in this format."""
        raise NotImplementedError

    #: Whether the format's instruction puts the answer at the end of the reply (so the last
    #: answer block counts); otherwise every answer block counts and they must agree.
    ends_reply: bool = False

    def candidates(self, text: str, fields: list[str]) -> list[dict[str, Any]]:
        """Every well-formed block of ``text`` as field -> raw value, in order."""
        raise NotImplementedError

    def answers(self, text: str, fields: list[str]) -> list[dict[str, Any]]:
        """The blocks of ``text`` that are its answer (module doc), in order: not quoted; those
        outside code fences when there are any, else the fenced ones."""
        text = _unquoted(text)
        if "```" in text:
            fences = _pairs(text, "```", "```")
            if fences:
                bare = self.candidates(_blanked(text, [(a - 3, b + 3) for a, b in fences]), fields)
                if bare:
                    return bare
        return self.candidates(text, fields)


class JsonFormat(AnswerFormat):
    name = "json"
    schema_decoding = True

    def instructions(self, fields: dict[str, Any], bare_numbers: bool = False) -> str:
        example = {n: _placeholder(n, f.description) for n, f in fields.items()}
        if not bare_numbers:
            return "Answer with a JSON object of this form:\n" + json.dumps(example, ensure_ascii=False)
        pairs = (f"{json.dumps(n, ensure_ascii=False)}: <{v}>" if _is_number(fields[n]) else f"{json.dumps(n, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}" for n, v in example.items())
        return "Answer with a JSON object of this form:\n{" + ", ".join(pairs) + "}"

    def grammar(self, props: dict[str, Any], text_chars: int) -> str:
        """A compact grammar of a flat object with the fields in order: llama.cpp samples it far
        faster than the general grammar it derives from a JSON schema."""
        pairs = ' "," " "? '.join(f"{json.dumps(json.dumps(k))} \":\" \" \"? {_gbnf_value(p, text_chars, quoted=True)}" for k, p in props.items())
        return f'root ::= "{{" " "? {pairs} " "? "}}"'

    def write(self, data: dict[str, Any]) -> str:
        return json.dumps(data, ensure_ascii=False)

    def candidates(self, text: str, fields: list[str]) -> list[dict[str, Any]]:
        return _json_candidates(text)


class XmlFormat(AnswerFormat):
    name = "xml"

    def instructions(self, fields: dict[str, Any], bare_numbers: bool = False) -> str:
        inner = "\n".join(f"  <{n}>{_placeholder(n, f.description)}</{n}>" for n, f in fields.items())
        return f"Answer in this XML format:\n<response>\n{inner}\n</response>"

    def grammar(self, props: dict[str, Any], text_chars: int) -> str:
        parts = " ".join(f'"  <{k}>" {_gbnf_value(p, text_chars)} "</{k}>\\n"' for k, p in props.items())
        return f'root ::= "<response>\\n" {parts} "</response>"'

    def write(self, data: dict[str, Any]) -> str:
        inner = "\n".join(f"  <{k}>{'' if v is None else v}</{k}>" for k, v in data.items())
        return f"<response>\n{inner}\n</response>"

    def candidates(self, text: str, fields: list[str]) -> list[dict[str, Any]]:
        return _xml_candidates(text, fields)


class AnswerLineFormat(AnswerFormat):
    name = "answer"
    ends_reply = True  # "End your answer with a line of the form 'Answer: N'"

    def instructions(self, fields: dict[str, Any], bare_numbers: bool = False) -> str:
        (name,) = fields
        return f"End your answer with a line of the form 'Answer: <{name}>'."

    def grammar(self, props: dict[str, Any], text_chars: int) -> str:
        (name,) = props
        return f'root ::= [^\\n]{{0,400}} "\\n" "Answer: " {_gbnf_value(props[name], text_chars)}'

    def write(self, data: dict[str, Any]) -> str:
        (value,) = data.values()
        return f"Answer: {value}"

    def candidates(self, text: str, fields: list[str]) -> list[dict[str, Any]]:
        return _answer_candidates(text, fields)


class AnswerTextFormat(AnswerLineFormat):
    """``Answer: WORDS`` for one text field (a commons vote): the rest of the last such line,
    without Markdown emphasis, quotes or a closing full stop."""

    name = "answer_text"

    def candidates(self, text: str, fields: list[str]) -> list[dict[str, Any]]:
        (name,) = fields
        out = []
        for m in _ANSWER_TEXT.finditer(text):
            value = m.group(1).strip(" \t\r*_\"'`.")
            if value:
                out.append({name: value})
        return out


#: Every answer format by its name (``Action.response_format``).
FORMATS: dict[str, AnswerFormat] = {f.name: f for f in (JsonFormat(), XmlFormat(), AnswerLineFormat(), AnswerTextFormat())}


def read_fields(text: str) -> dict[str, Any] | None:
    """The fields of the last JSON or XML answer block of ``text`` (:meth:`AnswerFormat.answers`:
    never a quoted block, nor a fenced one after an answer in the text), for showing a recorded
    answer to a person (None when there is none)."""
    for fmt, fields in ((FORMATS["json"], None), (FORMATS["xml"], None)):
        found = fmt.answers(text, fields or _tags(text))
        if found:
            return found[-1]
    return None


#: A line of a Markdown quotation: its first character other than a space is ``>`` (``^``
#: under MULTILINE is the start of the text or the place after a ``\n``, as ``split("\n")`` cuts).
_QUOTED_LINE = re.compile(r"^ *>", re.M)


def _unquoted(text: str) -> str:
    """``text`` with the lines of its Markdown quotations (a line whose first character other
    than a space is ``>``) blanked out; the same text when it has none."""
    if _QUOTED_LINE.search(text) is None:
        return text
    lines = text.split("\n")
    return "\n".join(" " * len(line) if line.lstrip(" ").startswith(">") else line for line in lines)


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each ``(start, end)`` span replaced by spaces (line breaks kept), so that
    nothing on either side of a span runs into the other."""
    out, pos = [], 0
    for start, end in spans:
        start, end = max(start, pos), max(min(end, len(text)), pos)
        out.append(text[pos:start])
        out.append("".join("\n" if ch == "\n" else " " for ch in text[start:end]))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _tags(text: str) -> list[str]:
    """Names of the XML-like tags in ``text`` (other than ``response``), in order, once each."""
    names = dict.fromkeys(m.group(1) for m in re.finditer(r"<(\w{1,50})>", text))
    names.pop("response", None)
    return list(names)


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


def _is_number(field: Any) -> bool:
    """Whether a pydantic field holds a number (``int`` or ``float``, optional or not; never ``bool``)."""
    kinds = get_args(field.annotation) or (field.annotation,)
    real = [k for k in kinds if k is not type(None)]
    return bool(real) and all(k in (int, float) for k in real)



@functools.lru_cache(maxsize=1024)
def _marker(marker: str) -> re.Pattern[str]:
    """The pattern of a literal marker, case-insensitive, compiled once (a reply is read with
    six of them)."""
    return re.compile(re.escape(marker), re.I)


def _pairs(text: str, opening: str, closing: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the text between each ``opening`` marker and the first ``closing``
    after it, left to right, case-insensitively; like ``opening(.*?)closing`` but linear in
    the length of the text (the lazy pattern rescans the rest of the text for every unclosed
    opening marker)."""
    return _spans(text, _lowered(text), opening, closing)


def _lowered(text: str) -> str | None:
    """``text`` lower-cased where that keeps every position (ASCII text), else None."""
    return text.lower() if text.isascii() else None


@functools.lru_cache(maxsize=1024)
def _unoverlapping(marker: str) -> bool:
    """Whether two occurrences of ``marker`` can never overlap: no proper end of it is also its
    beginning (true of a tag such as ``</choice>``, false of a fence such as three backticks)."""
    return not any(marker.endswith(marker[:k]) for k in range(1, len(marker)))


def _spans(text: str, low: str | None, opening: str, closing: str) -> list[tuple[int, int]]:
    """:func:`_pairs` of ``text``, given ``low`` (:func:`_lowered` of ``text``). Each marker's
    occurrences are found left to right without overlaps, case-insensitively: in ASCII text an
    ASCII marker by plain search in ``low`` (there, matching without regard to case is equality
    of lower case), any other (and an empty one) by its pattern."""
    if low is not None and opening and closing and opening.isascii() and closing.isascii():
        marker = opening.lower()
        at = low.find(marker)
        if at < 0:
            return []  # the common case of an absent tag
        step = len(marker)
        after = low.find(marker, at + step)
        if after < 0 and opening != closing and _unoverlapping(closing.lower()):
            # one opening marker: the first closing one after it (found from there: occurrences
            # of a marker that cannot overlap itself are the same whichever way they are found)
            end = low.find(closing.lower(), at + step)
            return [(at + step, end)] if end >= 0 else []
        opens = [at + step]
        at = after
        while at >= 0:
            opens.append(at + step)
            at = low.find(marker, at + step)
        if opening != closing:
            marker = closing.lower()
            step = len(marker)
            closes = []
            at = low.find(marker)
            while at >= 0:
                closes.append(at)
                at = low.find(marker, at + step)
        else:
            closes = opens
    else:
        opens = [m.end() for m in _marker(opening).finditer(text)]
        closes = [m.start() for m in _marker(closing).finditer(text)] if opening != closing else opens
    out: list[tuple[int, int]] = []
    j, n, pos = 0, len(closes), 0
    if opening == closing:  # the next marker closes; its own length must be skipped
        skip = len(closing)
        for start in opens:
            if start < pos:
                continue
            while j < n and closes[j] <= start:
                j += 1
            if j == n:
                break
            out.append((start, closes[j] - skip))
            pos = closes[j] + 1  # the closing marker opens nothing
            j += 1
        return out
    skip = len(closing)
    for start in opens:
        if start < pos:
            continue
        while j < n and closes[j] < start:
            j += 1
        if j == n:
            break
        out.append((start, closes[j]))
        pos = closes[j] + skip
    return out


def _json_candidates(text: str) -> list[dict[str, Any]]:
    """Every JSON object in the text, in order of position: fenced blocks and bare balanced
    braces outside them alike (which of them answer: :meth:`AnswerFormat.answers`)."""
    found: list[tuple[int, dict[str, Any]]] = []
    fences = _pairs(text, "```", "```")
    for start, end in fences:
        block = text[start:end]
        if block[:4].lower() == "json":
            block = block[4:]
        obj = _loads(block)
        if obj is not None:
            found.append((start, obj))
    starts = [a - 3 for a, _ in fences]  # fences do not overlap: sorted, searched by bisection
    for start, chunk in _balanced_objects(text):
        i = bisect.bisect_right(starts, start) - 1
        if i >= 0 and start < fences[i][1] + 3:  # inside a fenced block: already read
            continue
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
    low = _lowered(text)  # one lower-cased copy serves every search (ASCII text)
    spans = _spans(text, low, "<response>", "</response>") or [(0, len(text))]
    tags = [(name, f"<{name}>", f"</{name}>") for name in fields]
    out = []
    for start, end in spans:
        block = text[start:end]
        block_low = None if low is None else low[start:end]
        data: dict[str, Any] = {}
        for name, opening, closing in tags:
            values = _spans(block, block_low, opening, closing)
            if values:
                a, b = values[-1]
                data[name] = block[a:b].strip()
        if data:
            out.append(data)
    return out


#: ``Answer: N``; one character class between the colon and the number keeps it linear.
_ANSWER = re.compile(r"answer\s*[:：][\s*]*([-+]?\d[\d,]*(?:\.\d+)?)", re.I)


#: ``Answer: WORDS`` up to the end of its line.
_ANSWER_TEXT = re.compile(r"answer\s*[:：][ \t*]*([^\n]{1,200})", re.I)


def _answer_candidates(text: str, fields: list[str]) -> list[dict[str, Any]]:
    (name,) = fields
    return [{name: m.group(1).replace(",", "")} for m in _ANSWER.finditer(text)]
