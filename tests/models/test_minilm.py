"""The default sentence embedder (models/minilm.py): all-MiniLM-L6-v2 as int8 ONNX, loaded
offline, 384-dimensional unit vectors, a paraphrase above an unrelated memory, the same vector
whatever a text is batched with, the empty text; the spec names it and commons defaults to it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
from importlib import resources

import numpy as np
import pytest

from agorabench.models import minilm
from agorabench.models.base import BackendError
from agorabench.models.embeddings import DEFAULT_EMBEDDINGS, EmbeddedEmbeddings, embeddings_from_spec
from agorabench.models.minilm import DIMENSIONS, MiniLMEmbeddings, batches

AGREED = "We agreed each of us fishes at most 10 tons"
QUERY = "How much did the group say each should catch?"
WEATHER = "The weather was sunny on Tuesday"


@pytest.fixture(scope="module")
def offline_embedder():
    """The embedder, loaded (model file, tokenizer, onnxruntime session) with every socket
    refused."""

    def refuse(*args, **kwargs):
        raise AssertionError("the minilm embeddings opened a connection")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket.socket, "connect_ex", refuse)
        mp.setattr(socket, "create_connection", refuse)
        mp.setattr(minilm, "_MODELS", {})  # load again, under the guard
        embedder = MiniLMEmbeddings(n_threads=1)
        embedder.load()
        vectors = embedder([AGREED, QUERY, WEATHER])
        yield embedder, vectors


def test_loads_offline_and_gives_384_unit_vectors(offline_embedder):
    _, vectors = offline_embedder
    assert len(vectors) == 3
    for v in vectors:
        assert len(v) == DIMENSIONS and all(isinstance(x, float) for x in v)
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5


def test_a_paraphrase_ranks_above_an_unrelated_memory(offline_embedder):
    agreed, query, weather = (np.asarray(v) for v in offline_embedder[1])
    assert float(query @ agreed) > float(query @ weather) + 0.2


def test_deterministic_and_independent_of_the_batch(offline_embedder):
    embedder, first = offline_embedder
    assert embedder([AGREED, QUERY, WEATHER]) == first
    long = " ".join(["the lake holds fewer fish this month"] * 60)  # past 256 tokens: cut
    mixed = embedder([long, WEATHER, "", QUERY, "a", AGREED])
    assert mixed[5] == first[0] and mixed[3] == first[1] and mixed[1] == first[2]
    assert embedder([WEATHER]) == [first[2]]
    assert asyncio.run(embedder.aembed([AGREED, QUERY, WEATHER])) == first
    assert embedder([]) == []


def test_empty_text_and_odd_characters(offline_embedder):
    embedder, _ = offline_embedder
    empty, odd = embedder(["", "bad \ud800 half \x00 surrogate 🐟"])
    for v in (empty, odd):  # the empty text is [CLS] [SEP], as sentence-transformers has it
        assert len(v) == DIMENSIONS and abs(float(np.linalg.norm(v)) - 1.0) < 1e-5
    assert embedder([""]) == [empty]


def test_long_texts_are_cut_at_256_tokens(offline_embedder):
    embedder, _ = offline_embedder
    model = minilm._model(embedder.model_path, embedder.n_threads)
    ids = model.encode(["word " * 1000, "two words", ""])
    assert [len(r) for r in ids] == [minilm.MAX_TOKENS, 4, 2]
    assert ids[2] == [101, 102] and ids[0][0] == 101 and ids[0][-1] == 102
    base = "The fishers agreed on ten tons each. " * 40  # well past 256 tokens
    a, b = embedder([base, base + "And then something else entirely was said about the weather."])
    assert a == b


def test_batches_group_by_length_within_bounds():
    assert batches([5, 1, 3], size=2, cells=100) == [[1, 2], [0]]
    assert batches([10, 10, 10], size=32, cells=200) == [[0, 1], [2]]
    assert batches([30, 2], size=32, cells=200) == [[1], [0]]  # past the bound: alone
    assert batches([40] * 40) == [list(range(32)), list(range(32, 40))]
    assert batches([256] * 3) == [[0, 1], [2]]
    assert batches([]) == []


def test_the_shipped_tokenizer_matches_the_model():
    raw = resources.files("agorabench.models").joinpath("data", "minilm", "tokenizer.json").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == minilm.TOKENIZER_SHA256
    data = json.loads(raw)
    vocab = data["model"]["vocab"]
    assert len(vocab) == minilm.VOCAB_SIZE and max(vocab.values()) == minilm.VOCAB_SIZE - 1
    assert (vocab["[CLS]"], vocab["[SEP]"], vocab["[PAD]"]) == (101, 102, 0)
    notice = resources.files("agorabench.models").joinpath("data", "minilm", "NOTICE").read_text()
    licence = resources.files("agorabench.models").joinpath("data", "minilm", "LICENSE").read_text()
    assert "Apache License 2.0" in notice and "Apache License" in licence and "Version 2.0" in licence


def test_a_missing_or_changed_model_file_is_one_line(tmp_path):
    with pytest.raises(BackendError) as err:
        MiniLMEmbeddings(model_path=tmp_path / "model.onnx")(["x"])
    assert "\n" not in str(err.value)
    other = tmp_path / "model.onnx"
    other.write_bytes(b"not the model")
    with pytest.raises(BackendError, match="not the pinned") as err:
        MiniLMEmbeddings(model_path=other)(["x"])
    assert "\n" not in str(err.value)


def test_threads_follow_agora_threads(monkeypatch):
    monkeypatch.delenv("AGORA_THREADS", raising=False)
    assert MiniLMEmbeddings().n_threads == 1
    monkeypatch.setenv("AGORA_THREADS", "3")
    assert MiniLMEmbeddings().n_threads == 3
    monkeypatch.setenv("AGORA_THREADS", "many")
    with pytest.raises(BackendError, match="AGORA_THREADS"):
        MiniLMEmbeddings()


def test_the_spec_names_it_and_smollm2_stays_a_named_option():
    assert DEFAULT_EMBEDDINGS == "minilm"
    default = embeddings_from_spec("minilm")
    assert isinstance(default, MiniLMEmbeddings) and "all-MiniLM-L6-v2" in default.identity
    assert isinstance(embeddings_from_spec("smollm2"), EmbeddedEmbeddings)
    assert isinstance(embeddings_from_spec("embedded"), EmbeddedEmbeddings)  # games stored with it


def test_commons_defaults_to_it():
    from agorabench.families import load_game

    config = load_game("commons").Config()
    assert config.embeddings == DEFAULT_EMBEDDINGS
    assert isinstance(embeddings_from_spec(config.embeddings), MiniLMEmbeddings)


def test_the_runners_shared_hook_runs_it_off_the_event_loop(offline_embedder):
    from agorabench.models.embeddings import shared_embedder

    _, first = offline_embedder
    hook = shared_embedder(DEFAULT_EMBEDDINGS)

    async def run():
        return await asyncio.gather(hook([AGREED, QUERY]), hook([WEATHER, AGREED]))

    a, b = asyncio.run(run())
    assert a == first[:2] and b == [first[2], first[0]]
