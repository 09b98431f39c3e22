"""The ``lean`` transport: our keep-alive HTTP/1.1 client (:mod:`agorabench.models.http11`),
made on first use, inside the running event loop."""

from __future__ import annotations

import asyncio
from typing import Mapping

from ..base import BackendError
from ..errors import connection_problem, too_large
from ..http11 import BodyTooLarge, ConnectError, ConnectionLost, HTTP11Client, ProtocolError
from . import Endpoint
from .wire import HttpTransport


class LeanTransport(HttpTransport):
    name = "lean"

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(endpoint)
        self._client: HTTP11Client | None = None

    async def _post(self, body: bytes) -> tuple[int, Mapping[str, str], bytes]:
        if self._client is None:
            self._client = HTTP11Client(self.url, self.headers, self.timeout)
        return await self._client.post(body)

    def classify(self, exc: BaseException) -> BackendError | None:
        if isinstance(exc, asyncio.TimeoutError):
            return BackendError(f"timeout after {self.timeout:g}s", retryable=True, timed_out=True)
        if isinstance(exc, ConnectError):
            return BackendError(connection_problem(exc, self.endpoint.base_url), retryable=True)
        if isinstance(exc, BodyTooLarge):
            return too_large(exc)
        if isinstance(exc, (ConnectionLost, ProtocolError)):
            return BackendError(f"the server's answer was cut off or malformed ({exc})", retryable=True)
        return None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
