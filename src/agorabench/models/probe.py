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


#: Most bytes a ``/models`` listing may take (a listing of 10,000 models is about 1 MB).
MAX_LISTING_BYTES = 8 * 1024 * 1024

#: Listings fetched at once (one per distinct server and key).
PROBE_CONCURRENCY = 4


async def list_models(base_url: str | None, api_key: str | None, timeout: float = 10.0) -> tuple[str | None, list[str] | None]:
    """(problem, model ids) of one ``GET <base_url>/models``: a one-line problem if the server
    is unreachable, rejects the key, answers with more than :data:`MAX_LISTING_BYTES` or with
    something that is not the OpenAI API; else the ids it lists (None when it has no such
    route or answered 5xx: the games' own calls will tell).

    Asked with our own HTTP/1.1 client (:mod:`.http11`; importing aiohttp alone costs a run
    about 0.1-0.25 s of CPU); a URL with credentials in it, or an answer that redirects, is
    asked again with aiohttp (which sends the credentials and follows redirects)."""
    from .http11 import BodyTooLarge, ConnectError, HTTP11Client

    base = (base_url or DEFAULT_BASE_URL).rstrip("/")
    url = f"{base}/models"
    shown = redact(base)
    if base.split("/")[2:3] and "@" in base.split("/")[2]:
        return await _list_models_aiohttp(url, shown, api_key, base, timeout)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        client = HTTP11Client(url, headers, timeout, max_body=MAX_LISTING_BYTES)
    except ValueError:  # not an http(s) URL: aiohttp names it as before
        return await _list_models_aiohttp(url, shown, api_key, base, timeout)
    try:
        status, resp_headers, raw = await client.get()
    except asyncio.TimeoutError:
        return f"unreachable: {shown} accepted no request or sent no answer within {timeout:g} s", None
    except ConnectError as exc:
        if exc.refused:
            return f"unreachable: connection refused at {shown} (is the server running on that port?)", None
        return f"unreachable: cannot connect to {shown} ({redact(str(exc.cause or exc))})", None
    except BodyTooLarge:
        return f"answer too large: {shown}/models sent more than {MAX_LISTING_BYTES // 2**20} MiB", None
    except (ConnectionError, ValueError) as exc:  # cut off, not HTTP
        return f"unreachable: {shown}: {type(exc).__name__}: {redact(str(exc))[:200]}", None
    finally:
        await client.aclose()
    if 300 <= status < 400:
        return await _list_models_aiohttp(url, shown, api_key, base, timeout)
    return _listing(status, resp_headers.get("content-type", ""), raw, shown)


def _listing(status: int, kind: str, raw: bytes, shown: str) -> tuple[str | None, list[str] | None]:
    """(problem, model ids) of a ``/models`` answer (see :func:`list_models`)."""
    if status in (401, 403):
        return f"unauthorised: {shown} rejected the API key (HTTP {status}); check the key's environment variable", None
    if status >= 400:
        return None, None  # 404: no listing route; 5xx: the game's own retries decide
    if len(raw) > MAX_LISTING_BYTES:
        return f"answer too large: {shown}/models sent more than {MAX_LISTING_BYTES // 2**20} MiB", None
    body = raw.decode("utf-8", errors="replace")
    try:
        data = json.loads(body)
    except ValueError:
        what = "an HTML page" if "html" in kind.lower() or body.lstrip()[:1] == "<" else "something that is not JSON"
        return f"not an OpenAI-compatible API: {shown}/models answered with {what} (does the base URL end in /v1?)", None
    ids = [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)] if isinstance(data, dict) else []
    return None, ids


async def _list_models_aiohttp(url: str, shown: str, api_key: str | None, base: str, timeout: float) -> tuple[str | None, list[str] | None]:
    """:func:`list_models` through aiohttp (credentials in the URL, redirects)."""
    import aiohttp

    # credentials in the URL are sent by aiohttp itself (and exclude an Authorization header)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key and "@" not in base.split("/")[2] else {}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout), auto_decompress=True) as session:
            async with session.get(url, headers=headers) as resp:
                status = resp.status
                kind = resp.headers.get("Content-Type", "")
                # to the end (``read(n)`` gives only what has arrived: a listing sent in two
                # pieces was once refused as not JSON), never more than the bound
                pieces, size = [], 0
                async for piece in resp.content.iter_chunked(64 * 1024):
                    pieces.append(piece)
                    size += len(piece)
                    if size > MAX_LISTING_BYTES:
                        break
                raw = b"".join(pieces)
    except asyncio.TimeoutError:
        return f"unreachable: {shown} accepted no request or sent no answer within {timeout:g} s", None
    except aiohttp.ClientConnectorError as exc:
        cause = exc.os_error
        if isinstance(cause, ConnectionRefusedError) or "refused" in str(exc).lower():
            return f"unreachable: connection refused at {shown} (is the server running on that port?)", None
        return f"unreachable: cannot connect to {shown} ({redact(str(cause or exc))})", None
    except aiohttp.ClientError as exc:
        return f"unreachable: {shown}: {type(exc).__name__}: {redact(str(exc))[:200]}", None
    return _listing(status, kind, raw, shown)


def model_problem(base_url: str | None, model: str, ids: list[str] | None) -> str | None:
    """The problem of ``model`` against a server's listing ``ids`` (None: it is served, or the
    server lists nothing to check against)."""
    # Ollama lists tags (``qwen3:8b``), Gemini lists ``models/NAME``
    if ids and model not in ids and not any(i.split(":")[0] == model or i.removeprefix("models/") == model.removeprefix("models/") for i in ids):
        listed = ", ".join(ids[:8]) + (", ..." if len(ids) > 8 else "")
        return f"wrong model name: {model!r} is not served by {redact((base_url or DEFAULT_BASE_URL).rstrip('/'))} (it serves: {listed})"
    return None


async def probe_openai(base_url: str | None, api_key: str | None, model: str, timeout: float = 10.0) -> str | None:
    """``None`` if the server answers and serves ``model``, else a one-line problem."""
    problem, ids = await list_models(base_url, api_key, timeout)
    return problem or model_problem(base_url, model, ids)


async def probe_many(targets: dict[str, tuple[str | None, str | None, str, float]]) -> dict[str, str | None]:
    """Problems by name for ``name -> (base_url, api_key, model, timeout)``: each distinct server
    and key is asked once (at most :data:`PROBE_CONCURRENCY` at a time) and every model name is
    checked against that one listing (10,000 entries on one server are one request). A problem
    of the server itself (unreachable, a rejected key, not the OpenAI API) is given once, under
    the first of its models' names, naming the others (which get None): one line per server,
    not a thousand copies of it."""
    gate = asyncio.Semaphore(PROBE_CONCURRENCY)
    endpoints = {(url, key): timeout for url, key, _, timeout in targets.values()}

    async def one(url: str | None, key: str | None, timeout: float) -> tuple[str | None, list[str] | None]:
        async with gate:
            return await list_models(url, key, timeout)

    keys = list(endpoints)
    listings = dict(zip(keys, await asyncio.gather(*(one(u, k, endpoints[(u, k)]) for u, k in keys))))
    out: dict[str, str | None] = {}
    sharing: dict[tuple[str | None, str | None], list[str]] = {}
    for name, (url, key, model, _) in targets.items():
        problem, ids = listings[(url, key)]
        if problem:
            sharing.setdefault((url, key), []).append(name)
            out[name] = None
        else:
            out[name] = model_problem(url, model, ids)
    for endpoint, names in sharing.items():
        others = names[1:]
        also = ""
        if others:
            shown = ", ".join(repr(n) for n in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            also = f" (the same for model{'s' if len(others) > 1 else ''} {shown} of this server)"
        out[names[0]] = listings[endpoint][0] + also
    return out
