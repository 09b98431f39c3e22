"""Embeddings backends (models/embeddings.py): an OpenAI-compatible ``/v1/embeddings`` server on
127.0.0.1 (batches, order, one-line errors), the embedded default (deterministic, similar texts
closer, no network) and the spec factory."""

from __future__ import annotations

import asyncio
import hashlib
import math
import socket
import threading

import pytest
from aiohttp import web

from agorabench.models import embeddings as emb
from agorabench.models.base import BackendError
from agorabench.models.embeddings import EmbeddedEmbeddings, OpenAIEmbeddings, embeddings_from_spec
from agorabench.models.spec import SpecError


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


@pytest.fixture(scope="module")
def server():
    srv = EmbeddingsServer()
    yield srv
    srv.close()


def test_vectors_come_back_in_input_order_in_batches(server):
    texts = [f"text {i}" for i in range(5)]
    client = OpenAIEmbeddings(server.base_url, "ok", api_key="sk-test", batch_size=2)
    before = len(server.requests)
    assert client(texts) == [fake_vector(t) for t in texts]
    sent = server.requests[before:]
    assert [r["input"] for r in sent] == [texts[0:2], texts[2:4], texts[4:5]]
    assert all(r["model"] == "ok" for r in sent) and server.auth[-1] == "Bearer sk-test"
    assert client([]) == [] and client.requests == 3


def test_aembed_inside_a_loop_and_the_sync_call_refused_there(server):
    client = OpenAIEmbeddings(server.base_url, "ok")

    async def run():
        first = await client.aembed(["a", "b"])
        second = await client.aembed(["c"])
        with pytest.raises(RuntimeError, match="await aembed"):
            client(["d"])
        await client.aclose()
        return first + second

    assert asyncio.run(run()) == [fake_vector(t) for t in "abc"]


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("short", "asked for 2 vectors, got 1"),
        ("html", "not a JSON object"),
        ("fail", "HTTP 500: model overloaded"),
        ("nokey", "unauthorised (HTTP 401)"),
        ("ragged", "different lengths"),
        ("bad-index", "indices are not 0..1"),
    ],
)
def test_bad_answers_are_one_line_errors(server, model, words):
    with pytest.raises(BackendError) as err:
        OpenAIEmbeddings(server.base_url, model)(["a", "b"])
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_refused_connection_is_named():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendError, match="connection refused") as err:
        OpenAIEmbeddings(f"http://127.0.0.1:{port}/v1", "ok", timeout=5)(["a"])
    assert "\n" not in str(err.value)


def test_spec_factory(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert isinstance(embeddings_from_spec("embedded"), EmbeddedEmbeddings)
    for spec, model in ((f"openai/ok@{server.base_url}", "ok"), (f"ok@{server.base_url}", "ok"), (f"vllm/ok@{server.base_url}", "ok")):
        client = embeddings_from_spec(spec)
        assert isinstance(client, OpenAIEmbeddings) and client.model == model
        assert client(["x"]) == [fake_vector("x")]
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        embeddings_from_spec("openai/text-embedding-3-small")  # the provider's own URL needs a key
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    hosted = embeddings_from_spec("openai/text-embedding-3-small")
    assert hosted.url == "https://api.openai.com/v1/embeddings"
    for bad in ("", "local", "mystery", "strategy/x", "anthropic/claude@http://127.0.0.1:1/v1", "vllm/bge", "openai/x@ftp://host", "openai/@http://127.0.0.1:1/v1"):
        with pytest.raises(SpecError) as err:
            embeddings_from_spec(bad)
        assert "\n" not in str(err.value)


# -- the embedded default ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedded():
    return EmbeddedEmbeddings()


def cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.mark.llm
def test_embedded_vectors_are_deterministic_and_unit_length(embedded):
    texts = ["The lake holds 80 tons of fish.", "We agreed to catch at most 10 tons each."]
    first, second = embedded(texts), embedded(texts)
    assert first == second
    assert embedded(["something else", texts[1]])[1] == first[1]  # independent of its batch
    assert len(first[0]) == 576 and all(math.isclose(sum(x * x for x in v), 1.0) for v in first)
    assert embedded([""]) == [[0.0] * 576]
    assert asyncio.run(embedded.aembed(texts)) == first


@pytest.mark.llm
def test_embedded_similar_texts_are_closer(embedded):
    lake, lake2, cake = embedded([
        "The lake had 100 tons of fish before fishing.",
        "There were 80 tons of fish in the lake this month.",
        "I enjoy baking chocolate cake on Sundays.",
    ])
    assert cos(lake, lake2) > cos(lake, cake) + 0.05


@pytest.mark.llm
def test_embedded_needs_no_network(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the embedded embeddings opened a connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(emb, "_LLAMAS", {})  # load the model again, under the guard
    assert len(EmbeddedEmbeddings()(["offline"])[0]) == 576
