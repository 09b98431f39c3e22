"""A small HTTP/1.1 client for one endpoint: POST a body, get the status, headers and body back,
over keep-alive connections (plain or TLS) on asyncio protocols.

It exists for speed: against a fast backend the client's CPU per call sets how long every
response waits behind the others that arrive with it (benchmarks/README.md), and a general
client (aiohttp) spends two to three times what this one does per request. It does only what a
chat-completions call needs:

- request: ``POST`` with ``Content-Length``, fixed headers rendered once;
- response: ``Content-Length``, ``Transfer-Encoding: chunked`` or read-until-close bodies,
  interim ``1xx`` answers skipped, ``gzip`` / ``deflate`` bodies decoded (none is asked for);
- connections: kept alive and reused (most recently used first) unless the server says
  ``Connection: close`` or speaks HTTP/1.0; a request on a reused connection that the server
  had closed meanwhile is sent once more on a new one; a connection whose request timed out or
  was cancelled is closed, and so is one that receives bytes no request waits for (they are
  never buffered: a connection holds at most one answer's bytes); as many connections wait for
  reuse as were ever in use at once (at least ``max_idle``): a burst of C answers to C requests
  in flight leaves C connections for the C requests that follow (with a cap of 64, 192 of 256
  were closed and opened again per wave);
- errors: :class:`ConnectError` (no connection; ``refused`` when refused),
  :class:`ConnectionLost` (closed before the whole answer came), :class:`ProtocolError` (not
  HTTP), ``asyncio.TimeoutError`` (no whole answer within the timeout).

No redirects, proxies or cookies (the aiohttp transport did none of these either).
"""

from __future__ import annotations

import asyncio
import ssl as _ssl
import zlib
from urllib.parse import urlsplit

#: Longest status line plus headers accepted.
MAX_HEAD = 256 * 1024

#: Most bytes a response body may take, as sent and once decoded. A reply is cut at 20,000
#: characters anyway (``models.base.MAX_REPLY_CHARS``); 4 MiB leaves room for the JSON envelope,
#: escapes, log-probabilities and a long error page.
MAX_BODY = 4 * 1024 * 1024


class ConnectError(OSError):
    """The connection could not be opened."""

    def __init__(self, message: str, refused: bool = False, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.refused = refused
        #: The error of the socket or TLS layer behind it.
        self.cause = cause


class ConnectionLost(ConnectionError):
    """The connection closed before the whole response arrived."""


class ProtocolError(ValueError):
    """The bytes received are not an HTTP/1.x response."""


class BodyTooLarge(ProtocolError):
    """The response body (as sent, or decoded) is larger than the client's ``max_body``."""


class _Connection(asyncio.Protocol):
    """One connection; one request at a time. The response is parsed as its bytes arrive."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_body: int = MAX_BODY) -> None:
        self.loop = loop
        self.max_body = max_body
        self.transport: asyncio.Transport | None = None
        self.open = True
        self.buf = bytearray()
        self.waiter: asyncio.Future | None = None
        self.received = False  # any byte of the current response
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: dict[str, str] | None = None
        self.length = -1  # Content-Length; -1 unknown
        self.chunked = False
        self.chunk_left: int | None = None  # None: a size line comes next; -1: trailers
        self.body = bytearray()
        self.keep_alive = False

    # asyncio.Protocol ----------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.waiter is None or self.waiter.done():
            # bytes no request waits for (a server that answers and keeps sending once took a
            # run to 2 GB): the connection is unusable; it is dropped with its buffer
            self.buf.clear()
            self.close()
            return
        self.received = True
        self.buf += data
        if len(self.buf) > self.max_body + MAX_HEAD + 64:
            self._fail(BodyTooLarge(f"the server sent more than {self.max_body} bytes"))
            return
        try:
            self._parse()
        except ProtocolError as exc:
            self._fail(exc)

    def eof_received(self) -> bool:
        self._closed(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed(exc)

    # -----------------------------------------------------------------------------
    def request(self, data: bytes) -> asyncio.Future:
        self._reset()
        self.received = False
        self.buf.clear()
        self.waiter = self.loop.create_future()
        self.transport.write(data)
        return self.waiter

    def close(self) -> None:
        self.open = False
        if self.transport is not None:
            self.transport.close()

    def _closed(self, exc: Exception | None) -> None:
        self.open = False
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self.headers is not None and self.length < 0 and not self.chunked:
            self.body += self.buf  # the body is what came before the close
            self.buf.clear()
            self._finish()
            return
        detail = f" ({exc})" if exc else ""
        self._fail(ConnectionLost(("the server closed the connection before answering" if not self.received else "the server closed the connection in the middle of its answer") + detail))

    def _fail(self, exc: BaseException) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)
        self.close()

    def _finish(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            # bytes after the answer belong to no request: the connection is not reused
            self.waiter.set_result((self.status, self.headers, bytes(self.body), self.keep_alive and self.open and not self.buf))

    def _parse(self) -> None:
        buf = self.buf
        while self.headers is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise ProtocolError("the response headers are too long")
                return
            self._head(bytes(buf[:end]))
            del buf[: end + 4]
        if self.chunked:
            if self._chunks():
                self._finish()
        elif self.length >= 0:
            if self.length > self.max_body:
                raise BodyTooLarge(f"the server announced a body of {self.length} bytes (at most {self.max_body} are read)")
            if len(buf) >= self.length:
                self.body = buf[: self.length]
                del buf[: self.length]
                self._finish()
        elif len(buf) > self.max_body:  # the body ends when the server closes the connection (_closed)
            raise BodyTooLarge(f"the server sent more than {self.max_body} bytes of body")

    def _head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        parts = lines[0].split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError(f"not an HTTP response: {lines[0][:80]!r}")
        status = int(parts[1])
        if 100 <= status < 200:  # interim answer (100 Continue, ...): the real one follows
            return
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                continue
            key = name.strip().lower().decode("latin-1")
            value_text = value.strip().decode("latin-1")
            headers[key] = f"{headers[key]}, {value_text}" if key in headers else value_text
        self.status, self.headers = status, headers
        connection = headers.get("connection", "").lower()
        if parts[0] == b"HTTP/1.0":
            self.keep_alive = "keep-alive" in connection
        else:
            self.keep_alive = "close" not in connection
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self.chunked = True
        elif "content-length" in headers:
            try:
                self.length = int(headers["content-length"].split(",")[0])
            except ValueError:
                raise ProtocolError(f"bad Content-Length {headers['content-length'][:40]!r}") from None
        elif status in (204, 304):
            self.length = 0
        else:
            self.keep_alive = False  # read until the server closes

    def _chunks(self) -> bool:
        """Move whole chunks from the buffer to the body; True once the last one is read."""
        buf = self.buf
        while True:
            if self.chunk_left is None:
                end = buf.find(b"\r\n")
                if end < 0:
                    return False
                try:
                    size = int(bytes(buf[:end]).split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise ProtocolError(f"bad chunk size {bytes(buf[:end])[:40]!r}") from None
                del buf[: end + 2]
                self.chunk_left = size if size > 0 else -1
            if self.chunk_left == -1:  # trailer lines, then an empty line
                end = buf.find(b"\r\n")
                if end < 0:
                    return False
                del buf[: end + 2]
                if end == 0:
                    return True
                continue
            if len(self.body) + self.chunk_left > self.max_body:
                raise BodyTooLarge(f"the server sent more than {self.max_body} bytes of chunked body")
            if len(buf) < self.chunk_left + 2:
                return False
            self.body += buf[: self.chunk_left]
            del buf[: self.chunk_left + 2]
            self.chunk_left = None


#: Idle connections a client keeps for reuse at least; it keeps as many as it ever had in use
#: at once when that is more (more are closed as their answers arrive).
MAX_IDLE = 64


class HTTP11Client:
    """POSTs (or GETs) to one URL over a pool of keep-alive connections (no limit on those in use: the
    caller bounds the requests in flight). Idle connections are kept for reuse up to the most
    that were in use at once (:attr:`peak`), at least ``max_idle``: the pool never holds more
    connections than the caller once had requests in flight."""

    def __init__(self, url: str, headers: dict[str, str], timeout: float, user_agent: str = "agorabench", max_body: int = MAX_BODY, max_idle: int = MAX_IDLE) -> None:
        parts = urlsplit(url)
        self.max_body = max_body
        self.max_idle = max(1, max_idle)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {url}")
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.tls = parts.scheme == "https"
        self.timeout = timeout
        self._ssl: _ssl.SSLContext | None = None
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        netloc = parts.netloc.rsplit("@", 1)[-1]
        fixed = {"Host": netloc, "User-Agent": user_agent, "Accept": "application/json", **headers}
        lines = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._head = (f"POST {path} HTTP/1.1\r\n" + lines + "Content-Length: ").encode("latin-1")
        self._get = (f"GET {path} HTTP/1.1\r\n" + lines + "\r\n").encode("latin-1")
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()
        #: Connections in use now, and the most ever in use at once.
        self.busy = 0
        self.peak = 0

    async def post(self, body: bytes, timeout: float | None = None) -> tuple[int, dict[str, str], bytes]:
        """(status, headers with lower-case names, decoded body); ``timeout`` seconds for the
        whole answer (the client's own when None)."""
        return await self._send(b"%s%d\r\n\r\n%s" % (self._head, len(body), body), timeout)

    async def get(self, timeout: float | None = None) -> tuple[int, dict[str, str], bytes]:
        """As :meth:`post`, a GET of the URL (no body, no Content-Length)."""
        return await self._send(self._get, timeout)

    async def _send(self, data: bytes, timeout: float | None) -> tuple[int, dict[str, str], bytes]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.timeout if timeout is None else timeout)
        while True:
            conn = None
            while self._idle:
                candidate = self._idle.pop()
                if candidate.open:
                    conn = candidate
                    break
                self._all.discard(candidate)
            reused = conn is not None
            if conn is None:
                conn = await self._connect(loop, deadline)
            waiter = conn.request(data)
            timer = loop.call_at(deadline, _expire, waiter)
            self.busy += 1
            if self.busy > self.peak:
                self.peak = self.busy
            try:
                status, headers, raw, keep = await waiter
            except ConnectionLost:
                self._all.discard(conn)
                if reused and not conn.received:  # the server had closed it while idle
                    continue
                raise
            except BaseException:  # timeout, cancellation, protocol error: never reuse it
                conn.close()
                self._all.discard(conn)
                raise
            finally:
                timer.cancel()
                self.busy -= 1
            if keep and len(self._idle) < max(self.max_idle, self.peak):
                self._idle.append(conn)
            else:
                conn.close()
                self._all.discard(conn)
            encoding = headers.get("content-encoding", "identity").lower()
            if encoding in ("gzip", "x-gzip", "deflate"):
                raw = inflate(raw, encoding, self.max_body)
            elif encoding not in ("identity", ""):
                raise ProtocolError(f"a body in an encoding not asked for: {encoding}")
            return status, headers, raw

    async def _connect(self, loop: asyncio.AbstractEventLoop, deadline: float) -> _Connection:
        if self.tls and self._ssl is None:
            self._ssl = _ssl.create_default_context()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(lambda: _Connection(loop, self.max_body), self.host, self.port, ssl=self._ssl, server_hostname=self.host if self.tls else None),
                max(0.001, deadline - loop.time()),
            )
        except asyncio.TimeoutError:
            raise
        except ConnectionRefusedError as exc:
            raise ConnectError(f"connection refused ({exc})", refused=True) from None
        except (OSError, _ssl.SSLError) as exc:
            raise ConnectError(f"{type(exc).__name__}: {exc}", cause=exc) from None
        self._all.add(conn)
        return conn

    async def aclose(self) -> None:
        for conn in list(self._all):
            conn.close()
        self._all.clear()
        self._idle.clear()
        await asyncio.sleep(0)  # let the transports close


def _expire(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_exception(asyncio.TimeoutError())


def inflate(raw: bytes, encoding: str, max_body: int = MAX_BODY) -> bytes:
    """A gzip or deflate body decoded to at most ``max_body`` bytes (BodyTooLarge beyond: a
    small body that inflates to gigabytes is never inflated whole)."""
    inflater = zlib.decompressobj(47 if "gzip" in encoding else zlib.MAX_WBITS)
    try:
        out = inflater.decompress(raw, max_body + 1)
    except zlib.error as exc:
        raise ProtocolError(f"a {encoding} body that does not decode: {exc}") from None
    if len(out) > max_body or inflater.unconsumed_tail:
        raise BodyTooLarge(f"a {encoding} body that decodes to more than {max_body} bytes")
    return out
