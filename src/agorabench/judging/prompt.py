"""What the judge is asked and how its answer is read.

The request is two messages: the judge's instructions with the taxonomy (the template
``judge.j2``) as the system message, and the message to code with the answer format as the user
message. :data:`PROMPT_VERSION` is a SHA-256 of the template and of this module's user-message
wording, stored with every judgement (as games store their prompts' hash), so a changed prompt
codes again. The answer is read with the house parser (:meth:`agorabench.core.actions.Action.parse`:
only the final answer counts, never a reasoning draft) into :func:`label_type`'s action.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any, ClassVar

import jinja2
from pydantic import field_validator

from ..core.actions import Action
from ..core.speech import quote
from .taxonomy import HERE, Taxonomy

TEMPLATE = HERE / "judge.j2"
#: The user message: the kind of message, the message quoted, the answer format.
USER = "Kind of message: {kind}\n\nThe message:\n{text}\n\n{format}"
REASK = "Your answer could not be used: {error} Please answer again in the required format."


def _version() -> str:
    h = hashlib.sha256()
    for part in (TEMPLATE.read_bytes(), USER.encode(), REASK.encode()):
        h.update(part + b"\x00")
    return h.hexdigest()


#: SHA-256 (hex) of the judge's prompt: the template and the user and re-ask wording.
PROMPT_VERSION = _version()


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    return jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False).from_string(TEMPLATE.read_text(encoding="utf-8"))


def _canonical(taxonomy: Taxonomy) -> dict[str, str]:
    names = {n.casefold(): n for n in taxonomy.names}
    if taxonomy.none_label:
        names[taxonomy.none_label.casefold()] = taxonomy.none_label
    return names


def _pick(taxonomy: Taxonomy, value: Any) -> str:
    names = _canonical(taxonomy)
    text = str(value).strip().strip("\"'").strip()
    if text.casefold() not in names:
        raise ValueError(f"{text!r} is not a category; answer with one of: {', '.join(names.values())}")
    return names[text.casefold()]


@lru_cache(maxsize=64)
def label_type(taxonomy: Taxonomy) -> type[Action]:
    """The judge's answer: ``{"label": NAME}`` for a single-label taxonomy, ``{"labels": [NAME,
    ...]}`` for a multi-label one (a comma-separated text is read as a list). Names are matched
    without regard to case and returned as the taxonomy writes them; anything else is refused
    with a message naming the categories, which the judge is re-asked with."""
    if not taxonomy.multi_label:

        class Label(Action):
            """The one category the message belongs to."""

            response_format: ClassVar = "json"
            label: str

            @field_validator("label", mode="before")
            @classmethod
            def _known(cls, v: Any) -> str:
                return _pick(taxonomy, v)

        return Label

    class Labels(Action):
        """Every category the message belongs to."""

        response_format: ClassVar = "json"
        labels: list[str]

        @field_validator("labels", mode="before")
        @classmethod
        def _known(cls, v: Any) -> list[str]:
            items = [p for p in v.split(",")] if isinstance(v, str) else v
            if not isinstance(items, list):
                raise ValueError("labels must be a list of category names")
            picked = list(dict.fromkeys(_pick(taxonomy, x) for x in items if str(x).strip()))
            if not picked:
                raise ValueError("no category given" + (f"; answer [\"{taxonomy.none_label}\"] when none applies" if taxonomy.none_label else ""))
            if taxonomy.none_label and taxonomy.none_label in picked and len(picked) > 1:
                raise ValueError(f"{taxonomy.none_label!r} means that no other category applies; give it alone or leave it out")
            return picked

    return Labels


def labels_of(action: Action) -> list[str]:
    """The labels of a parsed answer, as a list."""
    return list(getattr(action, "labels", None) or [getattr(action, "label")])


def request(taxonomy: Taxonomy, kind: str, text: str) -> list[dict[str, str]]:
    """The judge's request for one message (the same values give byte-identical messages, so
    the response cache answers a rerun)."""
    system = _template().render(taxonomy=taxonomy).strip()
    user = USER.format(kind=kind, text=quote(text), format=label_type(taxonomy).format_instructions())
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def reask(error: str) -> dict[str, str]:
    """The user message that asks again after an answer that is not a label."""
    return {"role": "user", "content": REASK.format(error=error)}
