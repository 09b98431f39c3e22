"""The probe before a study (``GET <base>/models``) asks through our own HTTP/1.1 client, so an
``agora run`` never imports aiohttp for it (issue 44, item 10); what it says of each kind of
server is as before: a listing's ids, a rejected key, an HTML page, an answer too large, a
refused connection, a server that never answers; a redirect is followed and credentials in the
URL are sent (both through aiohttp, as before)."""

from __future__ import annotations

import asyncio
import base64
import socket
import subprocess
import sys
import textwrap

import orjson
from aiohttp import web

from agorabench.models import probe
from agorabench.models.probe import list_models


class Server:
    """A loopback server whose ``/v1/models`` answers with ``handler``; it keeps each request."""

    def __init__(self, handler) -> None:
        self.handler = handler
        self.seen: list[web.Request] = []
        self.bodies: list[bytes] = []

    async def __aenter__(self) -> "Server":
        async def models(request: web.Request) -> web.StreamResponse:
            self.seen.append(request)
            self.bodies.append(await request.read())
            return await self.handler(request)

        app = web.Application()
        app.router.add_route("*", "/v1/models", models)
        async def moved(request: web.Request) -> web.StreamResponse:
            return await self.handler(request)

        app.router.add_get("/v2/models", moved)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        return self

    async def __aexit__(self, *exc) -> None:
        await self.runner.cleanup()


def _listing(names):
    return web.Response(body=orjson.dumps({"object": "list", "data": [{"id": n, "object": "model"} for n in names]}), content_type="application/json")


def _ask(handler, key="sk-test", url_of=lambda s: s.url, timeout=5.0):
    async def go():
        async with Server(handler) as server:
            return await list_models(url_of(server), key, timeout=timeout), server

    return asyncio.run(go())


def test_a_listing_is_read_with_a_bodyless_get_carrying_the_key():
    async def handler(request):
        return _listing(["fake", "other"])

    (problem, ids), server = _ask(handler)
    assert problem is None and ids == ["fake", "other"]
    (request,) = server.seen
    assert request.method == "GET" and request.headers["Authorization"] == "Bearer sk-test"
    assert server.bodies == [b""] and "Content-Length" not in request.headers


def test_each_kind_of_answer_is_named_as_before():
    async def unauthorised(request):
        return web.json_response({"error": {"message": "bad key"}}, status=401)

    async def html(request):
        return web.Response(text="<html><body>welcome</body></html>", content_type="text/html")

    async def missing(request):
        return web.Response(status=404, text="no such route")

    async def huge(request):
        return web.Response(body=b" " * (probe.MAX_LISTING_BYTES + 10), content_type="application/json")

    assert "unauthorised" in _ask(unauthorised)[0][0] and "HTTP 401" in _ask(unauthorised)[0][0]
    assert "not an OpenAI-compatible API" in _ask(html)[0][0] and "an HTML page" in _ask(html)[0][0]
    assert _ask(missing)[0] == (None, None)
    assert "answer too large" in _ask(huge)[0][0]


def test_a_refused_and_a_silent_server_are_named():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    problem, _ = asyncio.run(list_models(f"http://127.0.0.1:{port}/v1", "k", timeout=2))
    assert problem.startswith("unreachable: connection refused at")

    async def never(request):
        await asyncio.sleep(1.5)

    (problem, _), _server = _ask(never, timeout=0.5)
    assert "accepted no request or sent no answer within 0.5 s" in problem


def test_a_redirect_is_followed_and_credentials_in_the_url_are_sent():
    async def moved(request):
        if request.path == "/v1/models":
            raise web.HTTPFound("/v2/models")
        return _listing(["moved-model"])

    (problem, ids), _ = _ask(moved)
    assert problem is None and ids == ["moved-model"]

    async def basic(request):
        return _listing(["b"]) if request.headers.get("Authorization") == "Basic " + base64.b64encode(b"user:pw").decode() else web.Response(status=401)

    (problem, ids), _ = _ask(basic, url_of=lambda s: f"http://user:pw@127.0.0.1:{s.port}/v1")
    assert problem is None and ids == ["b"]


def test_the_probe_imports_no_aiohttp():
    code = textwrap.dedent(
        """
        import asyncio, socket, sys
        from agorabench.models.probe import list_models
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
        asyncio.run(list_models(f"http://127.0.0.1:{port}/v1", "k", timeout=2))
        print("aiohttp" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr
