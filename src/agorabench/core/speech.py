"""Other players' words in prompts and on terminals.

Rule: text written by a player (a model, a script or a human) reaches another player's prompt
only through :func:`quote`: it is cleaned (:func:`clean`) and every line is prefixed with ``> ``,
so no line of it can pass for the game's own text (e.g. a line "SYSTEM (game master): ..."). The
prompt templates use it as the Jinja filter ``quote``. :func:`clean` removes ANSI escape sequences,
C0/C1 control characters (newline and tab kept), bidi embeddings/overrides/isolates and zero-width
characters. :func:`escape_terminal` makes any text safe to print: control characters are shown as
``\\xNN`` escapes instead of acting on the terminal.

Marks: a template says where the part that tells a model how to write its answer begins
(``{{ format_begins }}``, :data:`FORMAT_MARK`; it runs to the end of the template's text), and the Jinja filter ``quote`` wraps other players'
words in :data:`SPEECH_OPEN` / :data:`SPEECH_CLOSE`. The marks are private-use characters that
:func:`clean` removes from any player's text; the :class:`~agorabench.core.table.Table` takes them
out of every text it is given (:func:`split_marks`) and keeps each message's parts by kind, so no
mark ever reaches a player or the store.
"""

from __future__ import annotations

import re

#: ANSI/VT escape sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), and two-byte ESC X.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
#: C0 and C1 controls except tab and newline, and DEL.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Bidi marks, embeddings, overrides and isolates; zero-width spaces/joiners; word joiner; BOM.
_INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
#: Line separators that some renderers treat as new lines.
_LINE_SEPARATORS = re.compile("\r\n|[\r\u0085\u2028\u2029]")
#: Prefix of every line of quoted speech.
QUOTE_PREFIX = "> "
#: Where the answer-format part of a text begins (it runs to the end of the text).
FORMAT_MARK = "\ue000"
#: Around another player's words, as the template filter ``quote`` writes them.
SPEECH_OPEN, SPEECH_CLOSE = "\ue001", "\ue002"
_MARKS = re.compile("[\ue000-\ue002]")
#: Splits a text at its marks, keeping each mark between the texts around it.
_MARK_SPLIT = re.compile("([\ue000-\ue002])")


def clean(text: object) -> str:
    """``text`` without escape sequences, control, bidi or zero-width characters; line breaks of
    any kind become ``\\n``; tabs and newlines kept."""
    s = "" if text is None else str(text)
    s = _LINE_SEPARATORS.sub("\n", s)
    s = _ANSI.sub("", s)
    s = _CONTROL.sub("", s)
    return _MARKS.sub("", _INVISIBLE.sub("", s))


def quote(text: object) -> str:
    """Another player's words as quoted speech: cleaned, every line starting with ``> ``."""
    lines = clean(text).strip("\n").split("\n")
    return "\n".join(QUOTE_PREFIX + line for line in lines)


def quote_marked(text: object) -> str:
    """:func:`quote`, between speech marks: the template filter ``quote``."""
    return SPEECH_OPEN + quote(text) + SPEECH_CLOSE


def unmark(text: str) -> str:
    """``text`` without marks (each of the three removed by plain replacement, which returns
    ``text`` itself when it has none)."""
    return text.replace(FORMAT_MARK, "").replace(SPEECH_OPEN, "").replace(SPEECH_CLOSE, "")


def format_part(text: str) -> str:
    """The answer-format part of a template's text: from its format mark to the end, the mark
    kept (empty without one, e.g. a person's wording). A game passes it as a prompt's
    ``instructions`` when the rest of the text is the question (the table takes the mark out)."""
    at = text.find(FORMAT_MARK)
    return text[at:] if at >= 0 else ""


def split_marks(text: str, kind: str, fmt: str = "format", speech: str = "speech") -> list[tuple[str, str]]:
    """``text`` as (kind, text) parts without its marks: ``kind`` outside them, ``fmt`` from the
    first format mark on, ``speech`` between speech marks (inside the format part too). Joined,
    the parts are :func:`unmark` of ``text``; empty parts are left out."""
    if SPEECH_OPEN not in text and SPEECH_CLOSE not in text:  # format marks only (or none)
        pieces = text.split(FORMAT_MARK)
        head = [(kind, pieces[0])] if pieces[0] else []
        return head + [(fmt, piece) for piece in pieces[1:] if piece]
    pieces = _MARK_SPLIT.split(text)  # text, mark, text, mark, ..., text
    if len(pieces) == 1:
        return [(kind, text)] if text else []
    parts: list[tuple[str, str]] = []
    outer, in_speech = kind, False
    last = len(pieces) - 1
    for i in range(0, len(pieces), 2):
        if pieces[i]:
            parts.append((speech if in_speech else outer, pieces[i]))
        if i < last:
            mark = pieces[i + 1]
            if mark == FORMAT_MARK:
                outer = fmt
            else:
                in_speech = mark == SPEECH_OPEN
    return parts


_UNSAFE_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u2028\u2029]")


def escape_terminal(text: str) -> str:
    """``text`` safe to print: control, bidi and zero-width characters (not newline or tab)
    replaced by visible escapes (``\\x1b``, ``\\u202e``)."""

    def _show(m: re.Match[str]) -> str:
        c = ord(m.group())
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    return _UNSAFE_TERMINAL.sub(_show, text)
