"""Embeddings backends (models/embeddings.py): an OpenAI-compatible ``/v1/embeddings`` server on
127.0.0.1 (batches, order, one-line errors), the embedded default (deterministic, similar texts
closer, no network) and the spec factory."""

from __future__ import annotations

import asyncio
import math
import socket

import pytest

from agorabench.models import embeddings as emb
from agorabench.models.base import BackendError
from agorabench.models.embeddings import EmbeddedEmbeddings, OpenAIEmbeddings, embeddings_from_spec
from agorabench.models.spec import SpecError
from support.embeddings import EmbeddingsServer, fake_vector


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


def test_the_embeddings_model_runs_on_the_chat_models_thread():
    """Every llama.cpp model of the process loads and runs on one worker thread: llama-cpp-python
    swaps file descriptors 1 and 2 around some calls, which two threads must not do at once."""
    from agorabench.models.embedded import EmbeddedBackend, llama_thread

    assert emb._executor() is llama_thread() is EmbeddedBackend()._executor
