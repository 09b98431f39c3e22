"""The ``aiohttp`` transport: the ``lean`` transport's requests over one aiohttp session (the
default before our own client; kept for comparison and for servers that client would not
understand). The body is read in pieces and given up past the bound, so neither an endless body
nor a gzip bomb is ever held whole."""

from __future__ import annotations

import asyncio
from typing import Any, Mapping

import aiohttp

from ..base import BackendError
from ..errors import connection_problem, too_large
from ..http11 import MAX_BODY
from . import Endpoint
from .wire import HttpTransport


class AiohttpTransport(HttpTransport):
    name = "aiohttp"

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(endpoint)
        self._session: Any = None

    async def _post(self, body: bytes) -> tuple[int, Mapping[str, str], bytes]:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout), headers=self.headers)
        async with self._session.post(self.url, data=body) as resp:
            pieces, size = [], 0
            async for piece in resp.content.iter_chunked(64 * 1024):  # decoded as they come
                size += len(piece)
                if size > MAX_BODY:
                    raise too_large(f"the server sent more than {MAX_BODY} bytes of body")
                pieces.append(piece)
            return resp.status, resp.headers, b"".join(pieces)

    def classify(self, exc: BaseException) -> BackendError | None:
        if isinstance(exc, asyncio.TimeoutError):
            return BackendError(f"timeout after {self.timeout:g}s", retryable=True, timed_out=True)
        if isinstance(exc, aiohttp.ClientConnectorError):
            return BackendError(connection_problem(exc, self.endpoint.base_url), retryable=True)
        if isinstance(exc, aiohttp.ClientError):
            return BackendError(f"{type(exc).__name__}: {exc}", retryable=True)
        return None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
