"""Forms from action types: the fields a person fills in for a decision, and the server-side
check that turns a submitted form into a valid action.

The form is derived from the action's pydantic fields, as the parsers and grammars are, so a new
game gets a screen without page code:

- a ``Literal`` field is a set of radio buttons;
- a whole number with both bounds at most ten apart (a 1-5 rating) is a row of radio buttons;
- other numbers are number inputs carrying their bounds (``min``/``max``);
- a boolean is a checkbox, or a second submit button when the action names it in
  ``button_fields`` (e.g. "Say this and end the meeting");
- a field the action names in ``select_fields`` is a drop-down list of its choices (e.g. the
  next speaker among the group's names);
- a free-text field (``text_fields``) is a text area; other strings a line.

The browser's bounds are only a convenience: :func:`parse_form` converts and validates every
value on the server with the action's own validators.
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Union

from pydantic import ValidationError

from ..core.actions import Action
from ..core.formats import read_fields

#: Longest free text accepted from a form field.
MAX_TEXT = 2000


@dataclass
class FormField:
    name: str
    label: str
    kind: str  # radio | select | number | checkbox | button | textarea | text
    options: list[str] = field(default_factory=list)
    minimum: float | None = None
    maximum: float | None = None
    step: str = "any"
    required: bool = True


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """The annotation without ``None`` and whether ``None`` was allowed."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _bounds(info: Any) -> tuple[float | None, float | None]:
    lo = hi = None
    for m in info.metadata:
        lo = getattr(m, "ge", None) if getattr(m, "ge", None) is not None else lo
        hi = getattr(m, "le", None) if getattr(m, "le", None) is not None else hi
        if getattr(m, "gt", None) is not None:
            lo = m.gt
        if getattr(m, "lt", None) is not None:
            hi = m.lt
    return lo, hi


def _label(name: str, description: str | None) -> str:
    words = name.replace("_", " ").capitalize()
    if description and not description.isupper() and any(c.isalpha() for c in description):
        return description[0].upper() + description[1:]
    return words


def _as_you(label: str, role: str | None) -> str:
    """A label that names the participant's own role says so: "Amount Alice (you) receives"."""
    if not role:
        return label
    who = role.replace("_", " ").title()
    return re.sub(rf"\b{re.escape(who)}\b", f"{who} (you)", label, count=1)


def form_fields(action_type: type[Action], role: str | None = None) -> list[FormField]:
    """The form of one decision type (see the module docstring for the mapping), its labels
    written for the person in ``role``."""
    out = []
    for name, info in action_type.model_fields.items():
        annotation, optional = _unwrap(info.annotation)
        required = info.is_required() and not optional
        label = _as_you(_label(name, info.description), role)
        if typing.get_origin(annotation) is Literal:
            kind = "select" if name in getattr(action_type, "select_fields", ()) else "radio"
            out.append(FormField(name, label, kind, [str(o) for o in typing.get_args(annotation)], required=required))
            continue
        if annotation is bool:
            out.append(FormField(name, label, "button" if name in getattr(action_type, "button_fields", ()) else "checkbox", required=False))
            continue
        if annotation in (int, float):
            lo, hi = _bounds(info)
            if annotation is int and lo is not None and hi is not None and hi - lo <= 10:
                out.append(FormField(name, label, "radio", [str(v) for v in range(int(lo), int(hi) + 1)], required=required))
            else:
                out.append(FormField(name, label, "number", minimum=lo, maximum=hi, step="1" if annotation is int else "any", required=required))
            continue
        kind = "textarea" if name in action_type.text_fields else "text"
        out.append(FormField(name, label, kind, required=required))
    return out


def parse_form(action_type: type[Action], form: dict[str, str], role: str | None = None) -> tuple[Action | None, list[str]]:
    """The action a submitted form describes, or None and the messages to show, in the form's
    own words (its labels, never the fields' internal names). Only the action's own fields are
    read; numbers are converted here and bounds checked by the action."""
    data: dict[str, Any] = {}
    errors: list[str] = []
    fields = form_fields(action_type, role)
    for f in fields:
        raw = form.get(f.name)
        if f.kind in ("checkbox", "button"):
            data[f.name] = raw is not None and raw not in ("", "false", "0")
            continue
        value = (raw or "").strip() if f.kind != "textarea" else (raw or "")
        if len(value) > MAX_TEXT:
            errors.append(f"{f.label}: at most {MAX_TEXT} characters.")
            continue
        if value == "":
            if f.required:
                errors.append(f"{f.label}: please fill this in.")
            elif f.kind in ("number", "radio"):
                data[f.name] = None
            continue
        if f.kind in ("radio", "select") and value not in f.options:
            errors.append(f"{f.label}: choose one of {', '.join(f.options)}.")
            continue
        if f.kind == "number" or (f.kind == "radio" and action_type.model_fields[f.name].annotation is int):
            try:
                number = float(value.replace(",", ""))
            except ValueError:
                errors.append(f"{f.label}: {value[:40]!r} is not a number.")
                continue
            if number != number or number in (float("inf"), float("-inf")):
                errors.append(f"{f.label}: not a finite number.")
                continue
            value = int(number) if f.step == "1" and number == int(number) else number
            if f.kind == "number" and ((f.minimum is not None and number < f.minimum) or (f.maximum is not None and number > f.maximum)):
                errors.append(f"{f.label}: {_show(number)} is outside the allowed range; {_range(f)}.")
                continue
        data[f.name] = value
    if errors:
        return None, errors
    try:
        return action_type.model_validate(data), []
    except ValidationError as exc:
        return None, [_message(e, fields) for e in exc.errors()]


def _range(f: FormField) -> str:
    """The allowed values of a number field, in words."""
    whole = "a whole number" if f.step == "1" else "a number"
    if f.minimum is not None and f.maximum is not None:
        return f"enter {whole} from {_show(f.minimum)} to {_show(f.maximum)}"
    if f.minimum is not None:
        return f"enter {whole} of at least {_show(f.minimum)}"
    return f"enter {whole} of at most {_show(f.maximum)}"


def answer_text(raw: str, fields: dict[str, FormField] | None = None) -> str:
    """A recorded answer as a person reads it back: one line per field instead of the JSON or
    XML the models write, "Your answer: 10" for ``Answer: 10`` (other text unchanged). With the
    form's ``fields`` (by name) each line says what the person filled in, in the form's words
    ("Amount Alice (you) receives: 60", "You chose: Say this and end the meeting"); a field the
    form does not name reads as its name; an answer of one value reads "Your answer: 7". A yes/no
    field that is off, or empty, is left out."""
    data = read_fields(raw)
    if not data:
        line = re.fullmatch(r"\s*Answer:\s*(.+?)\s*", raw)  # the one-line answer format: a number
        return f"Your answer: {line.group(1)}" if line else raw
    fields = fields or {}
    if len(data) == 1 and not (fields.get(next(iter(data))) or FormField("", "", "")).kind == "button":
        (value,) = data.values()  # one value: the answer itself, whatever its field is called
        return f"Your answer: {_show(value)}"
    lines = []
    for k, v in data.items():
        if v is None or v is False or (isinstance(v, str) and v in ("", "false", "False")):
            continue  # (0 is an answer: kept)
        f = fields.get(k)
        if f is not None and f.kind == "button":
            lines.append(f"You chose: {f.label}")
        else:
            lines.append(f"{f.label if f is not None else k.replace('_', ' ').capitalize()}: {_show(v)}")
    return "\n".join(lines)


def answer_lines(data: dict[str, Any], fields: dict[str, tuple[str, str]], amount: Callable[[float], str] | None = None) -> list[str]:
    """A person's answer as they filled in the form, one line per field: the form's label and
    the value ("Amount Alice (you) receives: $1,000.50", "Decision: reject"), "You chose: LABEL"
    for a button they pressed; ``fields`` maps a field to its (label, kind) (a field it does not
    name reads as its name); a number typed in (or of a field not named) reads through ``amount``
    when given (money, as the game's pages write it); a choice among numbers (a 1-5 rating) stays
    a number. A yes/no field that is
    off, or an empty one, is left out, as :func:`answer_text` does."""
    lines = []
    for name, value in data.items():
        if value is None or value is False or (isinstance(value, str) and value in ("", "false", "False")):
            continue
        label, kind = fields.get(name) or (name.replace("_", " ").capitalize(), "")
        if kind == "button":
            lines.append(f"You chose: {label}")
        elif amount is not None and kind in ("number", "") and isinstance(value, (int, float)) and not isinstance(value, bool):
            lines.append(f"{label}: {amount(value)}")
        else:
            lines.append(f"{label}: {_show(value)}")
    return lines


def person_answer(action: Action, fields: dict[str, FormField] | None = None) -> str:
    """What a person answered, as :func:`answer_text` reads it back (the waiting page echoes it)."""
    return answer_text(action.render(), fields)


def _show(value: Any) -> str:
    if value is True or value in ("true", "True"):
        return "yes"
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


def _message(err: dict[str, Any], fields: list[FormField]) -> str:
    """A validation error as the form's words: a field's internal name (``alice_gain``) becomes
    its label; a one-word name is left as the word it is (no "A the price you offer of ...")."""
    labels = {f.name: f.label for f in fields}
    loc = [str(x) for x in err["loc"]]
    where = labels.get(loc[0], " ".join(loc).replace("_", " ")) if loc else ""
    text = str(err["msg"]).removeprefix("Value error, ")
    for name, label in sorted(labels.items(), key=lambda kv: -len(kv[0])):
        if "_" not in name:  # a one-word name ("price") is a plain word of the message, not code
            continue
        text = re.sub(rf"\b{re.escape(name)}\b", label[0].lower() + label[1:] if text.find(name) > 0 else label, text)
    text = text[0].upper() + text[1:] if text else text
    return f"{where[0].upper() + where[1:]}: {text}" if where else text
