"""The Anthropic Messages API through the official ``anthropic`` SDK.

Our transcripts are chat messages with an optional leading system message; the Messages API
takes the system text apart and needs user and assistant turns to alternate (the table already
merges consecutive observations into one user message).

Prompt caching: a role's transcript only ever grows at the end, so each call's prompt starts with
the previous call's prompt. With ``prompt_caching`` the system block, the previous user turn and
the newest user turn carry ``cache_control`` breakpoints: the newest one writes this prefix to
the server's cache, the previous one reads what the last call wrote. The server reports
``cache_read_input_tokens``; they are counted as ``cached_tokens``, and ``prompt_tokens`` is the
whole prompt (uncached + cache reads + cache writes).

The SDK's own retries are off: :class:`agorabench.models.model.Model` retries.
"""

from __future__ import annotations

import os
import time
from typing import Any

from .base import BackendError, Completion, GenerationSettings

_EPHEMERAL = {"type": "ephemeral"}


def to_messages_api(messages: list[dict[str, str]], prompt_caching: bool) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """(system blocks, messages) in the Messages API's shape, with cache breakpoints."""
    system: list[dict[str, Any]] | None = None
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "system":
            system = [{"type": "text", "text": m["content"]}]
        elif turns and turns[-1]["role"] == m["role"]:  # keep the turns alternating
            turns[-1]["content"][0]["text"] += "\n\n" + m["content"]
        else:
            turns.append({"role": m["role"], "content": [{"type": "text", "text": m["content"]}]})
    if prompt_caching:
        if system:
            system[-1]["cache_control"] = _EPHEMERAL
        users = [t for t in turns if t["role"] == "user"]
        for t in users[-2:]:
            t["content"][-1]["cache_control"] = _EPHEMERAL
    return system, turns


class AnthropicBackend:
    serialized = False

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "ANTHROPIC_API_KEY", timeout: float = 120.0, prompt_caching: bool = True) -> None:
        import anthropic

        self.model = model
        self.prompt_caching = prompt_caching
        self.identity = f"anthropic:{base_url or 'default'}:{model}"
        api_key = os.environ.get(api_key_env)
        if not api_key:
            if base_url is None:
                raise BackendError(f"model {model!r} needs an API key in the environment variable {api_key_env}", retryable=False)
            api_key = "not-needed"
        self._sdk = anthropic
        self.client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)

    async def complete(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        sdk = self._sdk
        system, turns = to_messages_api(messages, self.prompt_caching)
        # temperature travels as a body field: recent SDK versions no longer take it as an argument
        kwargs: dict[str, Any] = {"model": self.model, "messages": turns, "max_tokens": settings.max_tokens, "extra_body": {"temperature": settings.temperature}}
        if system:
            kwargs["system"] = system
        started = time.perf_counter()
        try:
            resp = await self.client.messages.create(**kwargs)
        except sdk.RateLimitError as exc:
            raise BackendError(f"rate limited: {exc}", retryable=True, retry_after=_retry_after(exc), rate_limited=True) from None
        except (sdk.APITimeoutError, sdk.APIConnectionError) as exc:
            raise BackendError(f"{type(exc).__name__}: {exc}", retryable=True) from None
        except sdk.APIStatusError as exc:
            # 529 is Anthropic's "overloaded": transient, like any 5xx
            retryable = exc.status_code >= 500 or exc.status_code in (408, 409)
            raise BackendError(f"HTTP {exc.status_code}: {exc.message}", retryable=retryable, retry_after=_retry_after(exc)) from None
        latency = time.perf_counter() - started
        text = "".join(getattr(b, "text", "") for b in resp.content if getattr(b, "type", "") == "text")
        usage = resp.usage
        read = getattr(usage, "cache_read_input_tokens", 0) or 0
        written = getattr(usage, "cache_creation_input_tokens", 0) or 0
        return Completion(
            text=text,
            prompt_tokens=(usage.input_tokens or 0) + read + written,
            completion_tokens=usage.output_tokens or 0,
            cached_tokens=read,
            latency=latency,
            finish_reason=resp.stop_reason or "stop",
            extra={"cache_write_tokens": written} if written else {},
        )

    async def aclose(self) -> None:
        await self.client.close()


def _retry_after(exc: Any) -> float | None:
    from .openai_compat import _retry_after_headers

    return _retry_after_headers(getattr(getattr(exc, "response", None), "headers", None))
