"""Other players' words in prompts and on terminals.

Rule: text written by a player (a model, a script or a human) reaches another player's prompt
only through :func:`quote`: it is cleaned (:func:`clean`) and every line is prefixed with ``> ``,
so no line of it can pass for the game's own text (e.g. a line "SYSTEM (game master): ..."). The
prompt templates use it as the Jinja filter ``quote``. :func:`clean` removes ANSI escape sequences,
C0/C1 control characters (newline and tab kept), bidi embeddings/overrides/isolates and zero-width
characters. :func:`escape_terminal` makes any text safe to print: control characters are shown as
``\\xNN`` escapes instead of acting on the terminal.
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


def clean(text: object) -> str:
    """``text`` without escape sequences, control, bidi or zero-width characters; line breaks of
    any kind become ``\\n``; tabs and newlines kept."""
    s = "" if text is None else str(text)
    s = _LINE_SEPARATORS.sub("\n", s)
    s = _ANSI.sub("", s)
    s = _CONTROL.sub("", s)
    return _INVISIBLE.sub("", s)


def quote(text: object) -> str:
    """Another player's words as quoted speech: cleaned, every line starting with ``> ``."""
    lines = clean(text).strip("\n").split("\n")
    return "\n".join(QUOTE_PREFIX + line for line in lines)


_UNSAFE_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u2028\u2029]")


def escape_terminal(text: str) -> str:
    """``text`` safe to print: control, bidi and zero-width characters (not newline or tab)
    replaced by visible escapes (``\\x1b``, ``\\u202e``)."""

    def _show(m: re.Match[str]) -> str:
        c = ord(m.group())
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    return _UNSAFE_TERMINAL.sub(_show, text)
