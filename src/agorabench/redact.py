"""Secrets never leave the process: API keys and credentials in URLs are replaced by
``[redacted]`` in everything stored, printed or exported.

Backends register the key values they use (:func:`register_secret`); :func:`redact` replaces
those values, the ``user:password@`` part of URLs and ``Bearer`` tokens in any text. The store
applies it to every string it writes; error messages and printed lines use it directly.
"""

from __future__ import annotations

import re
import threading

MARK = "[redacted]"
_SECRETS: set[str] = set()
#: Raised by one each time a secret is registered: what :func:`redact` does to a text depends
#: only on the text and the secrets, so a memo of its results holds while this is unchanged.
generation = 0
_LOCK = threading.Lock()
#: Shortest value registered: shorter "keys" (e.g. "x" for local servers) would mangle text.
MIN_SECRET_CHARS = 8

_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s:]*:[^/@\s]*@")
#: A bearer token: long and with a digit, so prose ("the bearer responsibility") is left alone.
_BEARER = re.compile(r"(?i)(bearer\s+)(?=[A-Za-z._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,}")


def register_secret(value: str | None) -> None:
    """Remember a secret value (an API key) so that :func:`redact` removes it."""
    global generation
    if value and len(value) >= MIN_SECRET_CHARS:
        with _LOCK:
            if value not in _SECRETS:
                _SECRETS.add(value)
                generation += 1


def redact(text: str) -> str:
    """The text without registered secrets, URL credentials or bearer tokens."""
    if not text:
        return text
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, MARK)
    if "://" in text and "@" in text:
        text = _URL_CREDENTIALS.sub(lambda m: m.group("scheme") + MARK + "@", text)
    if "earer" in text or "EARER" in text:
        text = _BEARER.sub(lambda m: m.group(1) + MARK, text)
    return text
