"""A rehearsal's form filler (:mod:`agorabench.web.rehearse`): values a person could give for
every field of a form read by :mod:`agorabench.web.rehearse_pages`, by a policy (``random``
draws, ``first`` takes the first option and the lowest bound), and the button of a consent form
that agrees.
"""

from __future__ import annotations

import random
import re

from .rehearse_pages import Form, Input, as_number

ADDS_UP = re.compile(r"add up to \$?([0-9][0-9,]*(?:\.[0-9]+)?)")


def _value(f: Input, rng: random.Random, policy: str) -> str:
    lo = f.minimum if f.minimum is not None else 0.0
    hi = f.maximum if f.maximum is not None else lo + 100.0
    whole = f.step == "1" or (f.step not in ("any", "") and float(as_number(f.step) or 1).is_integer() and lo.is_integer())
    if policy == "first":
        x = lo
    else:
        x = rng.uniform(lo, hi)
    if whole:
        return str(int(min(max(round(x), lo), hi)))
    return f"{min(max(round(x, 2), lo), hi):g}"


def fill(form: Form, rng: random.Random, policy: str = "random", note: str = "", text: str = "A rehearsal answer.") -> dict[str, str]:
    """Values for every field of ``form`` that a person could give: hidden values as they are,
    one option of each radio group and select, a number within its bounds (numbers the form's
    note says must add up to a total are split so that they do), short text; ``first`` takes the
    first option and the lowest bound, ``random`` draws."""
    data: dict[str, str] = {}
    numbers = [f for f in form.inputs.values() if f.kind == "number"]
    total = ADDS_UP.search(note)
    split: dict[str, str] = {}
    if total and len(numbers) >= 2:
        amount = float(total.group(1).replace(",", ""))
        share = amount * (0.5 if policy == "first" else rng.random())
        share = round(share) if amount.is_integer() else round(share, 2)
        split = {numbers[0].name: f"{share:g}", numbers[1].name: f"{round(amount - share, 2):g}"}
        split.update({f.name: "0" for f in numbers[2:]})
    for f in form.inputs.values():
        if f.kind == "hidden":
            data[f.name] = f.value
        elif f.kind in ("radio", "select"):
            if f.options:
                data[f.name] = f.options[0] if policy == "first" else rng.choice(f.options)
        elif f.kind == "checkbox":
            if policy != "first" and rng.random() < 0.5:
                data[f.name] = f.value or "on"
        elif f.kind == "number":
            data[f.name] = split.get(f.name) or _value(f, rng, policy)
        else:
            data[f.name] = text[: f.maxlength] if f.maxlength else text
    for name, value, _ in form.buttons[:1]:  # the first submit button that carries a value
        data.setdefault(name, value)
    return data


def agree(form: Form) -> dict[str, str]:
    """The button of a consent form that agrees (value ``yes`` or id ``agree``)."""
    for name, value, ident in form.buttons:
        if value.lower() in ("yes", "agree", "true") or ident == "agree":
            return {name: value}
    return dict((n, v) for n, v, _ in form.buttons[:1])
