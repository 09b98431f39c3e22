"""The ``lean`` transport: our keep-alive HTTP/1.1 client (:mod:`agorabench.models.http11`),
made on first use, inside the running event loop.

Model entries on one server share one client (one pool of connections) per event loop: the
pool is keyed by the URL and the headers (the key), counted by its users, and closed when the
last of them closes. A thousand model entries on one server once held a thousand idle
connections and ran out of open files."""

from __future__ import annotations

import asyncio
import weakref
from typing import Mapping

from ..base import BackendError
from ..errors import connection_problem, too_large
from ..http11 import BodyTooLarge, ConnectError, ConnectionLost, HTTP11Client, ProtocolError
from . import Endpoint
from .wire import HttpTransport

#: Shared clients per event loop: (URL, headers) -> [client, users].
_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple, list]] = weakref.WeakKeyDictionary()


def shared_client(url: str, headers: Mapping[str, str], timeout: float) -> HTTP11Client:
    """The running loop's client for ``url`` with ``headers``, made on first use; each call
    counts one more user (give it back with :func:`release_client`)."""
    pools = _POOLS.setdefault(asyncio.get_running_loop(), {})
    key = (url, tuple(sorted(headers.items())))
    entry = pools.get(key)
    if entry is None:
        entry = pools[key] = [HTTP11Client(url, dict(headers), timeout), 0]
    entry[1] += 1
    return entry[0]


async def release_client(client: HTTP11Client) -> None:
    """One user fewer of ``client``; the last one closes it (and its connections)."""
    for loop, pools in list(_POOLS.items()):
        for key, entry in list(pools.items()):
            if entry[0] is client:
                entry[1] -= 1
                if entry[1] > 0:
                    return
                del pools[key]
                if not pools:
                    _POOLS.pop(loop, None)
                await client.aclose()
                return
    await client.aclose()  # not shared (made before, or on another loop's registry)


class LeanTransport(HttpTransport):
    name = "lean"

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(endpoint)
        self._client: HTTP11Client | None = None

    async def _post(self, body: bytes) -> tuple[int, Mapping[str, str], bytes]:
        if self._client is None:
            self._client = shared_client(self.url, self.headers, self.timeout)
        return await self._client.post(body, self.timeout)

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
            client, self._client = self._client, None
            await release_client(client)
