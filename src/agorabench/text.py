"""Text made safe to keep: the one sanitiser of characters that cannot be stored or sent on.

A lone surrogate (half of an emoji cut by a tokenizer, or decoded from a JSON escape) cannot be
encoded as UTF-8, and NUL ends strings in C libraries and PostgreSQL text; both become U+FFFD
wherever text enters agorabench (a model's reply, a parsed answer, a stored value).
"""

from __future__ import annotations

import re
from typing import Any

#: Characters that cannot be stored or sent on: lone surrogates and NUL.
UNSTORABLE = re.compile("[\ud800-\udfff\x00]")


def storable(text: str) -> str:
    """``text`` with every lone surrogate and NUL replaced by U+FFFD."""
    # isascii only reads a flag, and pure ASCII cannot hold a surrogate: then NUL is all to find
    if text.isascii() and "\x00" not in text:
        return text
    return UNSTORABLE.sub("\ufffd", text)


def typed(value: Any) -> Any:
    """What a person or an outside program typed, with every NUL removed (in each string of a
    JSON-like value, keys included): NUL means nothing in text and ends strings in C libraries,
    spreadsheets and PostgreSQL, so it is dropped where such text enters, not stored."""
    if isinstance(value, str):
        return value.replace("\x00", "") if "\x00" in value else value
    if isinstance(value, dict):
        return {typed(k): typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return value
