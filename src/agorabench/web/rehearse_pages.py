"""A rehearsal's reader of pages (:mod:`agorabench.web.rehearse`): what a simulated participant
acts on in a served page's HTML, read without running its scripts: its forms (field names and
types, bounds, radio groups, select options, hidden CSRF fields, submit buttons that carry a
value), whether it polls or refreshes, its heading, the texts of the elements it names by id,
its errors, the ends of its scale questions and the questions that offer nothing to answer with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any


@dataclass
class Input:
    """One field of a form as the page offers it (a radio group is one input with its options)."""

    name: str
    kind: str  # hidden | radio | checkbox | number | text | textarea | select
    options: list[str] = field(default_factory=list)
    value: str = ""
    minimum: float | None = None
    maximum: float | None = None
    step: str = ""
    required: bool = False
    maxlength: int | None = None


@dataclass
class Form:
    action: str
    inputs: dict[str, Input] = field(default_factory=dict)
    #: Submit buttons that carry a value: (name, value, id).
    buttons: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def stage(self) -> str:
        """The last part of the form's address (``/p/TOKEN/quiz`` -> ``quiz``)."""
        return self.action.rstrip("/").rsplit("/", 1)[-1]


@dataclass
class Page:
    """What a simulated participant reads on a page."""

    status: int
    url: str
    heading: str = ""
    forms: list[Form] = field(default_factory=list)
    poll: bool = False
    refresh: bool = False
    stage: str = ""
    #: Texts of elements by id (``code``, ``bonus``, ``message``, ``form-note``, ...).
    texts: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    #: Scale questions: field name -> the texts at the scale's two ends.
    scale_ends: dict[str, list[str]] = field(default_factory=dict)
    #: Questions (fieldset legends) offering nothing to answer with.
    unanswerable: list[str] = field(default_factory=list)

    @property
    def form(self) -> Form | None:
        return self.forms[0] if self.forms else None

    @property
    def name(self) -> str:
        """The page's kind: its form's stage, ``done`` (a completion code), ``wait`` (a page
        that polls without a form), or ``message``."""
        if self.form is not None:
            return self.form.stage
        if "code" in self.texts:
            return "done"
        if self.poll or self.refresh:
            if "group-waiting" in self.texts:
                return "waiting room"
            return "wait" if self.stage in ("play", "") else f"wait ({self.stage})"
        return "message"


VOID = {"input", "meta", "link", "br", "img", "hr", "source", "area", "base", "col", "embed", "param", "track", "wbr"}
KEPT_IDS = {"code", "bonus", "message", "form-note", "prompt", "bonus-rule", "result", "quiz-error", "group-waiting"}


def as_number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


class _Reader(HTMLParser):
    """Reads the parts of a page a participant acts on (no scripts are run)."""

    def __init__(self, page: Page) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.stack: list[tuple[str, dict[str, str], list[str]]] = []
        self.form: Form | None = None
        self.scale: list[str] | None = None  # the texts of the current scale's ends
        self.scale_names: set[str] = set()
        self.fieldsets: list[list[Any]] = []  # [legend text, whether it has a field]
        self.select: Input | None = None

    def handle_starttag(self, tag: str, attrs_list: list[tuple[str, str | None]]) -> None:
        a = {k: (v if v is not None else "") for k, v in attrs_list}
        p = self.page
        if tag == "body":
            p.poll = a.get("data-poll") == "yes"
            p.stage = a.get("data-stage", "")
        elif tag == "meta" and a.get("http-equiv", "").lower() == "refresh":
            p.refresh = True
        elif tag == "form":
            self.form = Form(a.get("action", ""))
            p.forms.append(self.form)
        elif tag == "fieldset":
            self.fieldsets.append(["", False])
        elif tag == "div" and "scale" in a.get("class", "").split():
            self.scale, self.scale_names = [], set()
        elif tag in ("input", "textarea", "select") and self.form is not None:
            self._field(tag, a)
        elif tag == "option" and self.select is not None and "disabled" not in a:
            self.select.options.append(a.get("value", ""))  # a disabled "Choose one" is no choice
        elif tag == "button" and self.form is not None and a.get("name"):
            self.form.buttons.append((a["name"], a.get("value", ""), a.get("id", "")))
        if tag not in VOID:
            self.stack.append((tag, a, []))

    def _field(self, tag: str, a: dict[str, str]) -> None:
        name = a.get("name", "")
        if not name:
            return
        kind = a.get("type", "text").lower() if tag == "input" else tag
        if kind in ("submit", "button", "reset", "image"):
            return
        form = self.form
        assert form is not None
        if self.fieldsets:
            self.fieldsets[-1][1] = True
        if self.scale is not None:
            self.scale_names.add(name)
        required = "required" in a
        if kind == "radio":
            group = form.inputs.setdefault(name, Input(name, "radio"))
            group.options.append(a.get("value", "on"))
            group.required = group.required or required
            return
        field_ = Input(name, kind, value=a.get("value", ""), minimum=as_number(a.get("min")), maximum=as_number(a.get("max")), step=a.get("step", ""), required=required, maxlength=int(a["maxlength"]) if a.get("maxlength", "").isdigit() else None)
        form.inputs[name] = field_
        if kind == "select":
            self.select = field_

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        while self.stack:
            t, a, buf = self.stack.pop()
            text = " ".join("".join(buf).split())
            for outer in self.stack:  # text counts for every enclosing element
                outer[2].append(" " + text + " ")
            self._closed(t, a, text)
            if t == tag:
                break

    def _closed(self, tag: str, a: dict[str, str], text: str) -> None:
        p = self.page
        classes = a.get("class", "").split()
        if a.get("id") in KEPT_IDS:
            p.texts[a["id"]] = text
        if tag == "h2" and not p.heading:
            p.heading = text
        if "error" in classes and text:
            p.errors.append(text)
        if tag == "span" and "end" in classes and self.scale is not None:
            self.scale.append(text)
        if tag == "legend" and self.fieldsets:
            self.fieldsets[-1][0] = text
        if tag == "fieldset" and self.fieldsets:
            legend, has_field = self.fieldsets.pop()
            if not has_field and self.form is not None:
                p.unanswerable.append(legend)
        if tag == "div" and "scale" in classes and self.scale is not None:
            for name in self.scale_names:
                p.scale_ends[name] = list(self.scale)
            self.scale = None
        if tag == "select":
            self.select = None
        if tag == "form":
            self.form = None

    def handle_data(self, data: str) -> None:
        if self.stack:
            self.stack[-1][2].append(data)


def read_page(status: int, url: str, html: str) -> Page:
    """The page as a participant acts on it."""
    page = Page(status, url)
    reader = _Reader(page)
    reader.feed(html)
    reader.close()
    while reader.stack:  # unclosed elements at the end of the document
        reader.handle_endtag(reader.stack[-1][0])
    return page
