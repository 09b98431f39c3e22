"""Text made safe to keep: the one sanitiser of characters that cannot be stored or sent on.

A lone surrogate (half of an emoji cut by a tokenizer, or decoded from a JSON escape) cannot be
encoded as UTF-8, and NUL ends strings in C libraries and PostgreSQL text; both become U+FFFD
wherever text enters agorabench (a model's reply, a parsed answer, a stored value).
"""

from __future__ import annotations

import re

#: Characters that cannot be stored or sent on: lone surrogates and NUL.
UNSTORABLE = re.compile("[\ud800-\udfff\x00]")


def storable(text: str) -> str:
    """``text`` with every lone surrogate and NUL replaced by U+FFFD."""
    # isascii only reads a flag, and pure ASCII cannot hold a surrogate: then NUL is all to find
    if text.isascii() and "\x00" not in text:
        return text
    return UNSTORABLE.sub("\ufffd", text)
