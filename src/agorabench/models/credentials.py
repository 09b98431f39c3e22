"""Keys and URL credentials of hosted models, registered as secrets as soon as they are read
(so :func:`agorabench.redact.redact` removes them from everything stored, printed or exported)."""

from __future__ import annotations

import base64
import os
from urllib.parse import unquote, urlsplit, urlunsplit

from ..redact import register_secret
from .base import BackendError


def api_key_from_env(model: str, base_url: str | None, api_key_env: str) -> str:
    """The key in the environment variable ``api_key_env``. A server of one's own (a
    ``base_url``) may go without one; a provider's default endpoint may not (BackendError)."""
    key = os.environ.get(api_key_env)
    if key:
        register_secret(key)
        return key
    if base_url is None:
        raise BackendError(f"model {model!r} needs an API key in the environment variable {api_key_env}", retryable=False)
    return "not-needed"  # self-hosted servers take any key


def split_credentials(url: str | None) -> tuple[str | None, str | None]:
    """(``url`` without its ``user:password@`` part, the matching HTTP basic-auth header or
    None). The password and the header's token become secrets."""
    if not url:
        return url, None
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.netloc.rsplit("@", 1)[1]
    token = base64.b64encode(f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()).decode()
    register_secret(parts.password)
    register_secret(token)
    return urlunsplit(parts._replace(netloc=host)), f"Basic {token}"
