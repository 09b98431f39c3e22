"""Our HTTP/1.1 client (the lean transport's) against scripted servers: Content-Length, chunked
and read-until-close bodies, keep-alive reuse and its limits, a connection the server closed
while idle, cut-off answers, timeouts, gzip, interim 1xx answers, refused connections, TLS."""

import asyncio
import gzip
import shutil
import ssl
import subprocess

import pytest

from agorabench.models.base import BackendError, GenerationSettings
from agorabench.models.http11 import ConnectError, ConnectionLost, HTTP11Client, ProtocolError
from agorabench.models.openai_compat import LeanOpenAIBackend


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return await reader.readexactly(length)


class Scripted:
    """A server that answers each request with the next of ``answers``: bytes to write (a list
    of bytes is written piece by piece), or a callable taking the writer. Counts connections."""

    def __init__(self, answers, ssl_context=None):
        self.answers = list(answers)
        self.connections = 0
        self.bodies: list[bytes] = []
        self.ssl = ssl_context

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.ssl)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    async def _handle(self, reader, writer):
        self.connections += 1
        try:
            while self.answers:
                body = await _read_request(reader)
                if body is None:
                    break
                self.bodies.append(body)
                answer = self.answers.pop(0)
                if callable(answer):
                    if await answer(writer) == "close":
                        break
                    continue
                for piece in answer if isinstance(answer, list) else [answer]:
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.01)
        finally:
            writer.close()


def ok(body: bytes = b'{"ok": true}', extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request, monkeypatch):
    """Runs a coroutine on asyncio's loop and on uvloop (as ``agora run`` does where installed)."""
    from agorabench import loop

    if request.param == "uvloop":
        pytest.importorskip("uvloop")
    monkeypatch.setenv(loop.ENV, request.param)
    return loop.run


def test_keep_alive_reuses_one_connection_and_sends_the_body(run):
    async def go():
        async with Scripted([ok(b"one"), ok(b"two"), ok(b"three")]) as srv:
            client = HTTP11Client(f"http://127.0.0.1:{srv.port}/v1/chat/completions", {"Authorization": "Bearer k"}, timeout=5)
            got = [await client.post(b'{"n": %d}' % i) for i in range(3)]
            await client.aclose()
            return srv, got

    srv, got = run(go())
    assert [g[2] for g in got] == [b"one", b"two", b"three"] and all(g[0] == 200 for g in got)
    assert got[0][1]["content-type"] == "application/json"
    assert srv.connections == 1 and srv.bodies == [b'{"n": 0}', b'{"n": 1}', b'{"n": 2}']


def test_a_wave_of_requests_in_flight_keeps_its_connections_for_the_next_wave(run):
    """Issue 32 item 6: N requests answered together leave N idle connections (the most ever in
    use at once, beyond ``max_idle``) for the N that follow; a fixed cap once closed and reopened
    all but 64 of 256 connections per wave."""
    n, waves = 24, 3
    arrived = [0]
    all_in = [asyncio.Event() for _ in range(waves)]

    async def answer(writer):  # each wave is answered once all its n requests have arrived
        wave = arrived[0] // n
        arrived[0] += 1
        if arrived[0] % n == 0:
            all_in[wave].set()
        await all_in[wave].wait()
        writer.write(ok())
        await writer.drain()

    async def go():
        async with Scripted([answer] * (n * waves)) as srv:
            client = HTTP11Client(f"http://127.0.0.1:{srv.port}/v1/chat/completions", {}, timeout=10, max_idle=4)
            opened = []
            for _ in range(waves):
                got = await asyncio.gather(*(client.post(b"{}") for _ in range(n)))
                assert all(g[0] == 200 for g in got)
                opened.append(srv.connections)
            idle, peak = len(client._idle), client.peak
            await client.aclose()
            return opened, idle, peak

    opened, idle, peak = run(go())
    assert peak == n and opened == [n, n, n] and idle == n


def test_chunked_body_in_pieces_with_extensions_and_trailers(run):
    answer = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel", b"lo\r\n", b"6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n"]

    async def go():
        async with Scripted([answer, ok(b"next")]) as srv:
            client = HTTP11Client(f"http://127.0.0.1:{srv.port}/x", {}, timeout=5)
            first, second = await client.post(b"{}"), await client.post(b"{}")
            await client.aclose()
            return srv, first, second

    srv, first, second = run(go())
    assert first[2] == b"hello world" and second[2] == b"next" and srv.connections == 1


def test_read_until_close_and_http10_bodies_end_the_connection(run):
    until_close = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it"

    async def close_after(writer):
        writer.write(until_close)
        await writer.drain()
        return "close"

    async def http10(writer):
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        return "close"

    async def go():
        async with Scripted([close_after]) as a, Scripted([http10]) as b:
            out = []
            for srv in (a, b):
                client = HTTP11Client(f"http://127.0.0.1:{srv.port}/x", {}, timeout=5)
                out.append((await client.post(b"{}"))[2])
                assert not client._idle  # not kept for reuse
                await client.aclose()
            return out

    assert run(go()) == [b"all of it", b"ok"]


def test_a_connection_closed_while_idle_is_replaced(run):
    async def then_close(writer):
        writer.write(ok(b"first"))
        await writer.drain()
        return "close"  # without saying so: the client finds out on its next request

    async def go():
        async with Scripted([then_close, ok(b"second")]) as srv:
            client = HTTP11Client(f"http://127.0.0.1:{srv.port}/x", {}, timeout=5)
            first = await client.post(b"{}")
            await asyncio.sleep(0.05)
            second = await client.post(b"{}")
            await client.aclose()
            return srv, first, second

    srv, first, second = run(go())
    assert (first[2], second[2]) == (b"first", b"second") and srv.connections == 2


def test_cut_off_answers_timeouts_and_garbage_fail_cleanly(run):
    async def cut(writer):
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"choices\": [")
        await writer.drain()
        return "close"

    async def silent(writer):
        await asyncio.sleep(5)

    async def go():
        async with Scripted([cut]) as a, Scripted([silent]) as b, Scripted([b"SSH-2.0-OpenSSH\r\n\r\n"]) as c:
            with pytest.raises(ConnectionLost):
                await HTTP11Client(f"http://127.0.0.1:{a.port}/x", {}, timeout=5).post(b"{}")
            client = HTTP11Client(f"http://127.0.0.1:{b.port}/x", {}, timeout=0.3)
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(asyncio.TimeoutError):
                await client.post(b"{}")
            assert loop.time() - started < 2 and not client._idle and not client._all
            with pytest.raises(ProtocolError):
                await HTTP11Client(f"http://127.0.0.1:{c.port}/x", {}, timeout=5).post(b"{}")
            # the transport maps each to a retryable BackendError
            backend = LeanOpenAIBackend("fake", base_url=f"http://127.0.0.1:{a.port}/v1")
            a.answers.append(cut)
            with pytest.raises(BackendError) as err:
                await backend.complete([{"role": "user", "content": "hi"}], GenerationSettings())
            await backend.aclose()
            assert err.value.retryable and "cut off" in str(err.value)

    run(go())


def test_gzip_body_interim_answer_and_refused_connection(run):
    packed = gzip.compress(b'{"packed": 1}')
    answers = [b"HTTP/1.1 100 Continue\r\n\r\n" + ok(packed, b"Content-Encoding: gzip\r\n")]

    async def go():
        async with Scripted(answers) as srv:
            client = HTTP11Client(f"http://127.0.0.1:{srv.port}/x", {}, timeout=5)
            status, _, body = await client.post(b"{}")
            await client.aclose()
        with pytest.raises(ConnectError) as err:
            await HTTP11Client("http://127.0.0.1:9/x", {}, timeout=5).post(b"{}")  # nothing listens
        return status, body, err.value

    status, body, error = run(go())
    assert status == 200 and body == b'{"packed": 1}' and error.refused


def test_tls(tmp_path, run):
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)

    async def go():
        async with Scripted([ok(b"secure"), ok(b"again")], ssl_context=server_ctx) as srv:
            client = HTTP11Client(f"https://127.0.0.1:{srv.port}/x", {}, timeout=5)
            with pytest.raises(ConnectError):  # a certificate nobody vouches for is refused
                await client.post(b"{}")
            client._ssl = ssl.create_default_context(cafile=str(cert))
            first, second = await client.post(b"{}"), await client.post(b"{}")
            await client.aclose()
            return first[2], second[2]

    assert run(go()) == (b"secure", b"again")
