"""One cheap request per model before a study starts (``GET <base_url>/models``), so that a dead
backend is named in one line instead of failing every game: unreachable (refused, no answer,
unknown host), unauthorised (the key is rejected), a wrong model name (the server lists its
models and this one is not among them), or not an OpenAI-compatible API at all (an HTML page).
Servers without a ``/models`` route (404) pass: their first call will tell."""

from __future__ import annotations

import asyncio
import json

from ..redact import redact

DEFAULT_BASE_URL = "https://api.openai.com/v1"


async def probe_openai(base_url: str | None, api_key: str | None, model: str, timeout: float = 10.0) -> str | None:
    """``None`` if the server answers and serves ``model``, else a one-line problem."""
    import aiohttp

    base = (base_url or DEFAULT_BASE_URL).rstrip("/")
    url = f"{base}/models"
    shown = redact(base)
    # credentials in the URL are sent by aiohttp itself (and exclude an Authorization header)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key and "@" not in base.split("/")[2] else {}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
            async with session.get(url, headers=headers) as resp:
                status = resp.status
                body = await resp.text(errors="replace")
                kind = resp.headers.get("Content-Type", "")
    except asyncio.TimeoutError:
        return f"unreachable: {shown} accepted no request or sent no answer within {timeout:g} s"
    except aiohttp.ClientConnectorError as exc:
        cause = exc.os_error
        if isinstance(cause, ConnectionRefusedError) or "refused" in str(exc).lower():
            return f"unreachable: connection refused at {shown} (is the server running on that port?)"
        return f"unreachable: cannot connect to {shown} ({redact(str(cause or exc))})"
    except aiohttp.ClientError as exc:
        return f"unreachable: {shown}: {type(exc).__name__}: {redact(str(exc))[:200]}"
    if status in (401, 403):
        return f"unauthorised: {shown} rejected the API key (HTTP {status}); check the key's environment variable"
    if status == 404:
        return None
    if status >= 400:
        return None  # e.g. a 5xx: the game's own retries decide
    try:
        data = json.loads(body)
    except ValueError:
        what = "an HTML page" if "html" in kind.lower() or body.lstrip()[:1] == "<" else "something that is not JSON"
        return f"not an OpenAI-compatible API: {shown}/models answered with {what} (does the base URL end in /v1?)"
    ids = [m.get("id") for m in data.get("data", []) if isinstance(m, dict)] if isinstance(data, dict) else []
    if ids and model not in ids and not any(str(i).split(":")[0] == model for i in ids):  # Ollama tags
        listed = ", ".join(str(i) for i in ids[:8]) + (", ..." if len(ids) > 8 else "")
        return f"wrong model name: {model!r} is not served by {shown} (it serves: {listed})"
    return None
