"""What every model backend speaks: chat messages in, a completion out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class GenerationSettings:
    """Sampling settings; part of the cache key."""

    temperature: float = 0.0
    max_tokens: int = 256
    seed: int = 0
    #: Constrained decoding: a JSON schema (JSON answers) or a GBNF grammar (other formats).
    json_schema: dict[str, Any] | None = None
    grammar: str | None = None

    def key(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed, "json_schema": self.json_schema, "grammar": self.grammar}


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: Prompt tokens the server read from its prompt cache (0 when it does not say).
    cached_tokens: int = 0
    latency: float = 0.0
    finish_reason: str = "stop"
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class BackendError(RuntimeError):
    """A backend call failed. ``retryable`` says whether trying again may help;
    ``retry_after`` is the server's requested wait in seconds, if it gave one."""

    def __init__(self, message: str, retryable: bool = True, retry_after: float | None = None, rate_limited: bool = False):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.rate_limited = rate_limited


class Backend(Protocol):
    """A provider of chat completions. ``identity`` names backend and model for the cache key."""

    identity: str
    #: True when the backend runs one request at a time (the embedded model).
    serialized: bool

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion: ...

    async def aclose(self) -> None: ...
