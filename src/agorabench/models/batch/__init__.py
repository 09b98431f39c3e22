"""Provider batch APIs: many requests sent as one job, answered within a day at half the price.

A model entry with ``batch = true`` has its calls gathered and sent as provider batches (the
lockstep that gathers them lives in ``core``); this package speaks to the providers:

- OpenAI's Batch API (``openai``), and Gemini's OpenAI-compatible one (``gemini``): a JSONL file
  of requests uploaded (``POST /files``, purpose ``batch``), a batch made of it
  (``POST /batches``), polled (``GET /batches/{id}``), its output and error files read
  (``GET /files/{id}/content``), cancelled (``POST /batches/{id}/cancel``)
  (:mod:`.openai`);
- Anthropic's Message Batches (``anthropic``): the requests posted inline
  (``POST /v1/messages/batches``), polled, their results read from the batch's ``results_url``,
  cancelled (:mod:`.anthropic`).

Every item's request is built by the code the live backend uses
(:func:`~agorabench.models.openai_compat.chat_request`,
:func:`~agorabench.models.anthropic.messages_params`) and every answer read by the live
backend's reader, so a batch answer is a :class:`~agorabench.models.base.Completion` like a
live one, marked ``extra["service_tier"] = "batch"`` and ``extra["batch_id"]``. A client's
``identity`` is its live backend's, so the response cache serves both alike.

Rules the clients keep:

- an item's ``custom_id`` is its response-cache key; items repeating an id are sent once (the
  same key is the same request);
- one provider batch holds at most ``max_requests`` requests and ``max_bytes`` bytes of them
  (:func:`split_items` splits a list so); one client serves one model, so an OpenAI file never
  mixes models;
- failures are :class:`~agorabench.models.base.BackendError` with the provider's own message in
  one line (redacted), classified as live calls are: a refused key (401/403) is fatal, rate limits
  and 5xx are retryable; an item that failed comes back as an :class:`ItemFailure` saying whether
  asking again may help.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import SpecError
from ..providers import PROVIDERS, BackendOptions, spec_dialect
from .base import ENVELOPE_BYTES, BatchClient, BatchItem, BatchState, ItemFailure, split_items, unique_items

if TYPE_CHECKING:  # pragma: no cover
    from ..spec import ModelSpec

__all__ = [
    "BATCH_PROVIDERS",
    "ENVELOPE_BYTES",
    "BatchClient",
    "BatchItem",
    "BatchState",
    "ItemFailure",
    "open_batch_client",
    "split_items",
    "unique_items",
]

#: Providers whose batch API a client here speaks.
BATCH_PROVIDERS = ("openai", "anthropic", "gemini")


def open_batch_client(spec: "ModelSpec", options: BackendOptions | None = None) -> BatchClient:
    """The batch client of a hosted ``openai/``, ``anthropic/`` or ``gemini/`` model (its key read
    as the live backend reads it: BackendError when it is missing); SpecError (one line) for any
    other spec, whose provider has no batch API spoken here."""
    options = options or BackendOptions()
    prefix = spec.text.partition("/")[0] if "/" in spec.text else None
    if spec.kind != "hosted" or spec.provider not in BATCH_PROVIDERS or prefix != spec.provider:
        if spec.kind != "hosted":
            why = f"a {spec.kind} player has no batch API"
        elif prefix == spec.provider:
            why = f"{spec.provider} has no batch API spoken here"
        else:
            why = "a server named only by its URL has no known batch API"
        raise SpecError(f"model {spec.text!r} cannot run in batch mode ({why}); batch = true works with openai/, anthropic/ and gemini/ models")
    provider = PROVIDERS[spec.provider]
    key_env = provider.key_variable(options)
    if spec.provider == "anthropic":
        from .anthropic import AnthropicBatchClient

        return AnthropicBatchClient(spec.name, base_url=spec.base_url, api_key_env=key_env, timeout=options.timeout, prompt_caching=options.prompt_caching, cache_ttl=options.cache_ttl)
    from .openai import OpenAIBatchClient

    return OpenAIBatchClient(
        spec.name,
        provider=spec.provider,
        base_url=spec.base_url or provider.base_url,
        api_key_env=key_env,
        timeout=options.timeout,
        dialect=spec_dialect(spec),
        transport=options.transport,
        key_required=spec.base_url is None,
        reasoning_summary=options.reasoning_summary,
    )
