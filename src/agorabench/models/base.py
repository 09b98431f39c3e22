"""What every model backend speaks: chat messages in, a completion out."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..redact import redact
from ..text import storable

#: Longest reply kept from a model; longer ones are cut and marked (the turn is then judged on
#: what is left, typically as invalid). Bounds parsing time and storage per turn.
MAX_REPLY_CHARS = 20_000
CUT_MARK = "\n[agora: reply cut at {n} characters]"


def sanitize_text(text: Any, limit: int = MAX_REPLY_CHARS) -> tuple[str, bool]:
    """A model's reply made safe to parse, store and send back: lone surrogates (an emoji cut in
    half) and NUL characters become U+FFFD, non-strings become text, and a reply longer than
    ``limit`` is cut and marked. Returns the text and whether it was cut."""
    text = "" if text is None else text if isinstance(text, str) else str(text)
    text = storable(text)
    if len(text) > limit:
        return text[:limit] + CUT_MARK.format(n=limit), True
    return text, False


@dataclass(frozen=True)
class GenerationSettings:
    """Sampling settings; part of the cache key. ``temperature`` and ``seed`` None: not sent
    (the provider's default sampling)."""

    temperature: float | None = 0.0
    max_tokens: int = 256
    seed: int | None = 0
    #: Constrained decoding: a JSON schema (JSON answers) or a GBNF grammar (other formats).
    json_schema: dict[str, Any] | None = None
    grammar: str | None = None
    #: A reasoning model (see :mod:`agorabench.models.reasoning`): its request allows
    #: ``max_tokens + reasoning_budget`` output tokens and carries the provider's reasoning fields.
    reasoning: bool = False
    reasoning_effort: str | None = None
    #: ``on``, ``off``, ``adaptive`` or None (the model's default).
    thinking: str | None = None
    #: Output tokens for thoughts (None: the default budget of a reasoning model).
    reasoning_budget: int | None = None
    #: Request fields passed through as they are (JSON), merged last.
    extra_body: dict[str, Any] | None = None

    def sampling(self) -> dict[str, Any]:
        """The sampling fields a request carries: temperature and seed unless None."""
        return {k: v for k, v in (("temperature", self.temperature), ("seed", self.seed)) if v is not None}

    @property
    def sampled(self) -> bool:
        """Whether answers are drawn at random (a temperature above 0, or the provider's default
        sampling): then a cached answer stands only for the decision it was drawn for."""
        return self.temperature is None or self.temperature > 0 or self.reasoning

    def key(self) -> dict[str, Any]:
        """The settings as the response cache keys them (reasoning fields only when set, so the
        keys of models without them are those of earlier versions)."""
        key = {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed, "json_schema": self.json_schema, "grammar": self.grammar}
        if self.reasoning:
            key["reasoning"] = True
        for name in ("reasoning_effort", "thinking", "reasoning_budget", "extra_body"):
            value = getattr(self, name)
            if value is not None:
                key[name] = value
        return key


@dataclass
class Completion:
    text: str
    #: Prompt and output tokens as the server reports them (None: it did not say, or said
    #: something that is not a count; stored as NULL, priced as 0).
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    #: Prompt tokens the server read from its prompt cache (0 when it does not say).
    cached_tokens: int = 0
    latency: float = 0.0
    finish_reason: str = "stop"
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    #: The model's thoughts, kept apart from ``text`` (None: it gave none we could read; "" for
    #: thoughts it hid, e.g. Anthropic's redacted or omitted thinking).
    reasoning: str | None = None
    #: Output tokens spent thinking as the provider reports them (None: not reported).
    reasoning_tokens: int | None = None

    @property
    def cut(self) -> bool:
        """Whether the reply ended at the output token limit."""
        return self.finish_reason in ("length", "max_tokens", "max_output_tokens")


@dataclass(frozen=True)
class CallContext:
    """Which decision a model call is for: the game's id and the seat (role) asking. Backends
    read it for what a provider keys on a conversation (a prompt-cache key, a batch item's id);
    it is never part of the request's messages or of the response cache's key."""

    game: str
    role: str


#: The decision the current call is for (set by :class:`agorabench.core.agents.LLMAgent`).
CALL_CONTEXT: ContextVar[CallContext | None] = ContextVar("agora_call_context", default=None)


class BackendError(RuntimeError):
    """A backend call failed. ``retryable`` says whether trying again may help;
    ``retry_after`` is the server's requested wait in seconds, if it gave one. The message is
    redacted (no API keys or URL credentials)."""

    def __init__(self, message: str, retryable: bool = True, retry_after: float | None = None, rate_limited: bool = False, fatal: bool = False, timed_out: bool = False, unavailable: bool = False):
        super().__init__(redact(message))
        #: A service tier without capacity for the call (OpenAI flex's 429 "resource
        #: unavailable"): retried with back-off, or made again at the standard tier where the
        #: model entry says so; not a rate limit of the account (the in-flight cap is kept).
        self.unavailable = unavailable
        #: The server sent no (whole) answer within the timeout: counted by the endpoint's breaker.
        self.timed_out = timed_out
        #: Every later call would fail the same way (e.g. a rejected key): stop the model's games.
        self.fatal = fatal
        self.retryable = retryable
        self.retry_after = retry_after
        self.rate_limited = rate_limited
        #: A reply that was answered (and billed) but cannot count, e.g. one that arrived after
        #: its model was stopped: the game's record keeps its usage.
        self.completion: "Completion | None" = None


class Backend(Protocol):
    """A provider of chat completions. ``identity`` names backend and model for the cache key."""

    identity: str
    #: True when the backend runs one request at a time (the embedded model).
    serialized: bool

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion: ...

    def classify_error(self, exc: BaseException) -> BackendError | None:
        """The BackendError an exception of this backend's client amounts to (retryable, a rate
        limit, fatal, ...); None for one the backend does not know."""
        ...

    def probe_target(self) -> ProbeTarget | None:
        """(base URL, key, model name, timeout) of the model listing to check before a study
        (:func:`agorabench.models.probe.probe_many`); None for a backend with nothing to probe."""
        ...

    async def aclose(self) -> None: ...


#: What a backend's probe asks before a study: (base URL, key, model name, timeout) of a model
#: listing (:func:`agorabench.models.probe.probe_many`).
ProbeTarget = tuple[str | None, str | None, str, float]

#: The dialect of a backend that declares none (the embedded model, a test's stand-in).
NO_DIALECT = "embedded"


@runtime_checkable
class Probed(Protocol):
    """A backend that names what its probe asks (every backend of :mod:`agorabench.models`
    does; a stand-in may not, and then there is nothing to probe)."""

    def probe_target(self) -> ProbeTarget | None: ...


@runtime_checkable
class Dialected(Protocol):
    """A backend whose server speaks a provider's dialect (how constrained decoding and
    reasoning settings travel: :mod:`agorabench.models.reasoning`)."""

    dialect: str


def probe_target_of(backend: object) -> ProbeTarget | None:
    """What ``backend``'s probe asks (:class:`Probed`); None for one with nothing to probe."""
    return backend.probe_target() if isinstance(backend, Probed) else None


def dialect_of(backend: object) -> str:
    """The dialect ``backend`` speaks (:class:`Dialected`), else :data:`NO_DIALECT`."""
    return backend.dialect if isinstance(backend, Dialected) else NO_DIALECT


class ResponseCache(Protocol):
    """Where a model's answers are kept by key (:class:`agorabench.models.model.Model`'s cache):
    ``get`` a kept one or None, ``put`` a new one."""

    def get(self, key: str) -> Completion | None: ...

    def put(self, key: str, identity: str, completion: Completion) -> None: ...


@runtime_checkable
class BufferedCache(ResponseCache, Protocol):
    """A response cache that buffers new answers: ``flush()`` writes them (the runner calls it
    before a finished game is stored, so that no stored game needs an answer the cache lost)."""

    def flush(self) -> None: ...


@runtime_checkable
class WriterCache(BufferedCache, Protocol):
    """A buffered response cache whose writing a store's game writer can take over on its
    worker thread (:class:`agorabench.store.cache.SQLCache`): ``take()`` the buffered answers,
    ``write(rows)`` them on that thread, ``waiting()`` counts them, ``auto_flush`` off meanwhile;
    ``store`` is the store it writes to. The runner asks for this, not for a class."""

    store: Any
    auto_flush: bool

    def waiting(self) -> int: ...

    def take(self) -> list[dict[str, Any]]: ...

    def write(self, rows: list[dict[str, Any]]) -> None: ...


class NoCache:
    """A response cache that keeps nothing (``agora run --no-cache``): every decision is a call."""

    def get(self, key: str) -> None:
        return None

    def put(self, key: str, identity: str, completion: Completion) -> None:
        return None


class OnWorkerThread:
    """An in-process embedder (``__call__(texts)`` blocks) awaited on its worker thread, so the
    event loop runs meanwhile: a subclass names the thread in :meth:`worker`."""

    def worker(self) -> ThreadPoolExecutor:
        raise NotImplementedError

    async def aembed(self, texts: list[str]) -> list[list[float]]:
        """``self(texts)`` on :meth:`worker`; no texts, no call."""
        if not texts:
            return []
        return await asyncio.get_running_loop().run_in_executor(self.worker(), self, list(texts))  # type: ignore[arg-type]

    async def aclose(self) -> None:
        return None
