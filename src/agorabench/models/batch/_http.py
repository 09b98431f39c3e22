"""The HTTP side the batch clients share: one aiohttp session per client (made inside the running
event loop on first use), JSON calls, a multipart upload, a JSONL download read line by line
(a results file may hold hundreds of megabytes), and every failure as a BackendError classified
as live calls are (:func:`agorabench.models.errors.status_error`), with the provider's message
in one line."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

from ...redact import redact
from ..base import BackendError
from ..errors import connection_problem, error_fields, status_error
from ..transport.wire import dumps, loads

#: Longest a JSON answer (a batch or file object) may be, in bytes.
MAX_JSON = 16 * 2**20
#: Longest the provider's message is shown in an error, in characters.
MAX_MESSAGE = 300
#: Shortest wait for a file upload or download to make progress (seconds): a file of 200 MB
#: takes longer than one call's timeout.
TRANSFER_TIMEOUT = 600.0


def one_line(text: Any, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line, redacted, cut at ``limit`` characters."""
    line = " ".join(redact(str(text)).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def error_text(data: Any, raw: bytes = b"") -> str:
    """The provider's message in an error body: ``error.message`` of OpenAI's and Anthropic's
    bodies (``{"error": {...}}``, ``{"type": "error", "error": {...}}``), of the first entry of
    Gemini's list (``[{"error": {...}}]``), a batch's ``errors.data[].message``; else the body's
    start."""
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, Mapping):
        error = data.get("error")
        if isinstance(error, Mapping):
            inner = error.get("error")
            if isinstance(inner, Mapping) and inner.get("message"):
                return one_line(inner["message"])
            if error.get("message"):
                return one_line(error["message"])
        if isinstance(error, str) and error:
            return one_line(error)
        if data.get("message"):
            return one_line(data["message"])
    return one_line(raw[:200].decode("utf-8", "replace")) or "(no message)"


def http_error(status: int, message: str, headers: Mapping[str, str] | None, batch_id: str | None = None, body: Any = None) -> BackendError:
    """An HTTP error status of a batch call as a BackendError: a 404 naming a batch or file
    says so (not retryable, not fatal: the model's other batches may stand); any other status as
    a live call's (:func:`status_error`, with the error body's code and param), with the
    provider's message kept."""
    if status == 404 and batch_id is not None:
        return BackendError(f"the provider knows no {batch_id} (HTTP 404): {message}", retryable=False)
    fields = error_fields(body)
    error: BackendError = status_error(status, message, headers, fields.code, fields.param, fields.kind)
    if message and message not in str(error):
        error = BackendError(f"{error}: {message}", retryable=error.retryable, retry_after=error.retry_after, rate_limited=error.rate_limited, fatal=error.fatal)
    return error


async def jsonl_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The non-empty lines of a body arriving in ``chunks`` cut anywhere (a line may span
    many chunks, a chunk hold many lines)."""
    rest = b""
    async for piece in chunks:
        rest += piece
        if b"\n" not in piece:
            continue
        *whole, rest = rest.split(b"\n")
        for line in whole:
            if line.strip():
                yield line
    if rest.strip():
        yield rest


class BatchHttp:
    """Calls to one provider's batch routes below ``root`` (e.g. ``https://api.openai.com/v1``)
    with ``headers`` (the key) on every call."""

    def __init__(self, root: str, headers: Mapping[str, str], timeout: float, where: str | None) -> None:
        self.root = root.rstrip("/")
        self.headers = dict(headers)
        self.timeout = timeout
        #: The base URL as configured, named in connection errors.
        self.where = where
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def url(self, path: str) -> str:
        """An absolute URL as it is; a path below the root."""
        return path if "://" in path else self.root + path

    def session(self) -> aiohttp.ClientSession:
        """The session of the running event loop (a client used from a new loop, after the old
        one closed, gets a new session: the old one's connections died with its loop)."""
        loop = asyncio.get_running_loop()
        if self._session is not None and self._loop is not loop:
            self._session.detach()  # its loop is gone: nothing left to close there
            self._session = None
        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self.headers, connector=aiohttp.TCPConnector(limit=8))
            self._loop = loop
        return self._session

    def _failure(self, exc: BaseException, timeout: float) -> BackendError | None:
        """The BackendError of a client exception, None for one that is not the client's."""
        if isinstance(exc, BackendError):
            return exc
        if isinstance(exc, asyncio.TimeoutError):
            return BackendError(f"timeout after {timeout:g}s", retryable=True, timed_out=True)
        if isinstance(exc, aiohttp.ClientConnectorError):
            return BackendError(connection_problem(exc, self.where), retryable=True)
        if isinstance(exc, aiohttp.ClientError):
            return BackendError(f"{type(exc).__name__}: {one_line(exc)}", retryable=True)
        return None

    async def call(self, method: str, path: str, *, json: Any = None, body: bytes | None = None, form: aiohttp.FormData | None = None, batch_id: str | None = None, transfer: bool = False) -> dict[str, Any]:
        """One call answered by a JSON object; BackendError for an error status, a body that
        is not a JSON object, or a failed connection."""
        timeout = max(self.timeout, TRANSFER_TIMEOUT) if transfer else self.timeout
        data: Any = form if form is not None else body if body is not None else dumps(json) if json is not None else None
        headers = {"Content-Type": "application/json"} if form is None and data is not None else None
        try:
            async with self.session().request(method, self.url(path), data=data, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                raw = await self._read(resp)
                status, resp_headers = resp.status, resp.headers
        except Exception as exc:
            known = self._failure(exc, timeout)
            if known is None:
                raise
            raise known from None
        try:
            answer = loads(raw) if raw else None
        except ValueError:
            answer = None
        if status >= 400:
            raise http_error(status, error_text(answer, raw), resp_headers, batch_id, answer)
        if not isinstance(answer, dict):
            raise BackendError(f"the provider's answer to {method} {path} was not a JSON object (HTTP {status})", retryable=True)
        return answer

    async def _read(self, resp: aiohttp.ClientResponse) -> bytes:
        pieces, size = [], 0
        async for piece in resp.content.iter_chunked(64 * 1024):
            size += len(piece)
            if size > MAX_JSON:
                raise BackendError(f"the provider's answer exceeded {MAX_JSON} bytes", retryable=False)
            pieces.append(piece)
        return b"".join(pieces)

    async def lines(self, path: str, batch_id: str | None = None) -> AsyncIterator[bytes]:
        """The non-empty lines of a JSONL download, as they arrive (no line is held twice)."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.timeout, sock_read=max(self.timeout, TRANSFER_TIMEOUT))
        try:
            async with self.session().get(self.url(path), timeout=timeout) as resp:
                if resp.status >= 400:
                    raw = await self._read(resp)
                    try:
                        answer = loads(raw)
                    except ValueError:
                        answer = None
                    raise http_error(resp.status, error_text(answer, raw), resp.headers, batch_id, answer)
                async for line in jsonl_lines(resp.content.iter_chunked(1 << 20)):
                    yield line
        except Exception as exc:
            known = self._failure(exc, self.timeout)
            if known is None:
                raise
            raise known from None

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            if self._loop is asyncio.get_running_loop():
                await session.close()
            else:
                session.detach()
