"""A loopback OpenAI-compatible ``/v1/embeddings`` server for the tests (a thread of the test
process), and the deterministic vectors it answers with."""

from __future__ import annotations

import asyncio
import hashlib
import threading

from aiohttp import web


def fake_vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [digest[i] / 255 for i in range(4)]


class EmbeddingsServer:
    """``POST /v1/embeddings`` on 127.0.0.1 in a thread of its own. The model name picks the
    answer: ``ok`` (vectors in reverse index order), ``short`` (one vector too few), ``html``
    (200 with a web page), ``fail`` (500), ``nokey`` (401), ``ragged`` (vectors of two lengths),
    ``bad-index`` (indices that repeat)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.auth: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        assert self.ready.wait(10)
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        self.runner = web.AppRunner(app, access_log=None)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        self.auth.append(request.headers.get("Authorization", ""))
        model, texts = body["model"], body["input"]
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(texts)]
        if model == "short":
            data = data[:-1]
        elif model == "html":
            return web.Response(text="<html>login</html>", content_type="text/html")
        elif model == "fail":
            return web.json_response({"error": {"message": "model overloaded"}}, status=500)
        elif model == "nokey":
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        elif model == "ragged":
            data[-1]["embedding"] = data[-1]["embedding"][:2]
        elif model == "bad-index":
            for item in data:
                item["index"] = 0
        return web.json_response({"object": "list", "data": list(reversed(data)), "model": model})

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
